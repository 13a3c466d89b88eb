//! The model-provider port: one streaming call per round, cancellable, with typed errors.
//!
//! The engine talks to every model through [`Provider`]. Built-in implementations speak the real
//! wire formats (Anthropic Messages, OpenAI-compatible Chat Completions) or play back data
//! (scripted turns, recorded sessions). Hosts can implement the trait for any other model.

pub mod anthropic;
pub mod bedrock;
pub mod catalog;
mod cloud;
pub mod definitions;
pub mod fallback;
pub mod gemini;
mod google_auth;
mod http;
pub mod openai;
mod openai_compat;
pub mod openai_responses;
pub mod replay;
pub mod scripted;
pub mod server_tools;
pub mod sse;
pub mod vertex;

pub use anthropic::{AnthropicConfig, AnthropicProvider, CacheTtl};
pub use bedrock::{AwsCredentials, BedrockConfig, BedrockProvider};
pub use fallback::FallbackProvider;
pub use gemini::{GeminiConfig, GeminiProvider};
pub use http::{HttpOptions, DEFAULT_MAX_RETRY_WAIT};
pub use openai::{OpenAiConfig, OpenAiProvider};
pub use openai_compat::{Flavor, QwenWebTools};
pub use openai_responses::OpenAiResponsesProvider;
pub use vertex::{VertexConfig, VertexProvider};

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::message::{Message, ProviderError, Usage};

/// A tool as the model is told about it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDefinition {
    /// Tool name the model calls.
    pub name: String,
    /// What the tool does, for the model.
    pub description: String,
    /// JSON Schema of the tool's input object.
    pub input_schema: serde_json::Value,
}

/// Extended-thinking request settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThinkingConfig {
    /// Token budget the model may spend thinking.
    pub budget_tokens: u32,
}

/// Everything one model call needs. Provider-neutral; each provider converts it to its wire format.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProviderRequest {
    /// System prompt, sent in the provider's system slot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
    /// The conversation as the model should see it (no system messages). The messages are
    /// shared with the session's history (a request copies pointers, not text).
    pub messages: Vec<Arc<Message>>,
    /// Tools the model may call this round (empty: no tools are sent).
    #[serde(default)]
    pub tools: Vec<ToolDefinition>,
    /// Output token cap for this call; the provider's default when `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// Sampling temperature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    /// Extended thinking, for providers that support it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking: Option<ThinkingConfig>,
    /// How the model may use `tools`; the provider's default (auto) when `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
    /// The JSON Schema the answer must match, for providers with native structured output
    /// (others ignore it; the session validates the answer either way).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<OutputSchema>,
}

/// A JSON Schema for the model's answer, as native structured output sends it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutputSchema {
    /// The schema's name (OpenAI's `json_schema.name`).
    pub name: String,
    /// The JSON Schema.
    pub schema: serde_json::Value,
}

/// Whether and how the model may call the tools it is given.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", content = "name", rename_all = "snake_case")]
pub enum ToolChoice {
    /// The model decides.
    Auto,
    /// The model must not call tools. The tools are still sent: providers reject a history that
    /// holds tool calls when no tool definitions come with it.
    None,
    /// The model must call some tool.
    Required,
    /// The model must call this tool.
    Tool(String),
}

/// Something that happened while a call streams. Delivered in order, as it happens.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEvent {
    /// A piece of answer text.
    TextDelta(String),
    /// A piece of thinking text.
    ThinkingDelta(String),
    /// The model started a tool call.
    ToolCallStart {
        /// Position of the call in the response.
        index: usize,
        /// Provider tool-call id.
        id: String,
        /// Tool name.
        name: String,
    },
    /// A piece of a tool call's JSON arguments.
    ToolCallDelta {
        /// Position of the call in the response.
        index: usize,
        /// The piece of JSON text.
        partial_json: String,
    },
    /// A tool the provider runs itself (Anthropic server tools: web search, web fetch, code
    /// execution; the Responses API's hosted tools: web search, DashScope's web extractor) was
    /// called; sent once the call's input is complete.
    ServerToolUse {
        /// The provider's id of the call (`srvtoolu_…`, `ws_…`).
        id: String,
        /// The server tool's name (`web_search`, `web_fetch`, `bash_code_execution`,
        /// `web_extractor`, …).
        name: String,
        /// The call's input (`{"query": …}` for web search, `{"url": …}` for web fetch,
        /// `{"goal": …}` for the web extractor).
        input: serde_json::Value,
    },
    /// The result of a server tool call arrived (its content stays in the response's
    /// [`ProviderResponse::server_blocks`]).
    ServerToolResult {
        /// The id of the `server_tool_use` this answers.
        tool_use_id: String,
        /// The result block's type (`web_search_tool_result`, `web_fetch_tool_result`, …; the
        /// item type for the Responses API: `web_search_call`, `web_extractor_call`).
        result_type: String,
        /// True when the result is an error (`max_uses_exceeded`, `url_not_accessible`, …).
        is_error: bool,
    },
    /// A failed attempt will be retried after `delay`.
    Retry {
        /// The attempt that failed (1-based).
        attempt: u32,
        /// The most attempts that will be made.
        max_attempts: u32,
        /// How long the provider waits before the next attempt.
        delay: Duration,
        /// Why the attempt failed.
        error: ProviderError,
    },
}

/// Receives [`StreamEvent`]s during a call.
pub type StreamSink<'a> = dyn Fn(StreamEvent) + Send + Sync + 'a;

/// Why the model stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The model finished its answer.
    #[default]
    EndTurn,
    /// The model wants tools run.
    ToolUse,
    /// The output token cap was hit.
    MaxTokens,
    /// A stop sequence matched.
    StopSequence,
    /// The model refused (Anthropic `refusal`, OpenAI `content_filter` or a `refusal` message);
    /// [`ProviderResponse::refusal`] has what the provider said about it.
    Refusal,
    /// The provider paused a long-running turn (Anthropic `pause_turn`, server tools): sending
    /// the response back as it is lets the model continue.
    PauseTurn,
    /// The call was cancelled; the response holds what had streamed.
    Aborted,
    /// A reason this version does not know.
    #[serde(other)]
    Other,
}

/// One tool call as the provider delivered it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProviderToolCall {
    /// Provider tool-call id, preserved verbatim.
    pub id: String,
    /// Tool name.
    pub name: String,
    /// The arguments as raw JSON text (may be invalid JSON; the engine decides what to do).
    pub arguments: String,
}

/// A thinking block with its signature.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThinkingBlock {
    /// The thinking text.
    pub thinking: String,
    /// Provider signature to send back with the block.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
}

/// What the provider said when the model refused to answer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Refusal {
    /// What the model said as it refused: the refusal message (OpenAI `refusal`) or the answer
    /// text that streamed before the refusal cut it off (Anthropic); empty when there was none.
    #[serde(default)]
    pub text: String,
    /// The provider's category for the refusal (Anthropic `stop_details.category`: `cyber`,
    /// `bio`, …), when it named one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    /// The provider's explanation (Anthropic `stop_details.explanation`), when it gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explanation: Option<String>,
}

/// The assembled result of one call.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProviderResponse {
    /// The answer text (all text deltas joined).
    pub text: String,
    /// Thinking blocks, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub thinking: Vec<ThinkingBlock>,
    /// Tool calls, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ProviderToolCall>,
    /// Why the model stopped.
    pub stop_reason: StopReason,
    /// Tokens used by this call.
    pub usage: Usage,
    /// The model that answered (as the provider reported it).
    pub model: String,
    /// Set when the model refused ([`StopReason::Refusal`]): the refusal text and the provider's
    /// explanation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refusal: Option<Refusal>,
    /// Content blocks of tools the provider ran itself (Anthropic server tools such as web
    /// search: `server_tool_use`, `web_search_tool_result`, …; the Responses API's hosted-tool
    /// items: `web_search_call`, `web_extractor_call`), verbatim in wire form and in order, so
    /// the history shows them and a provider that needs them can send them back (Anthropic: a
    /// `pause_turn` continues from them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub server_blocks: Vec<serde_json::Value>,
    /// For each of `server_blocks`, how many of `text_blocks` came before it: where the block
    /// goes back among the text (empty when `text_blocks` is).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub server_block_positions: Vec<usize>,
    /// The answer text as the separate blocks the model produced, each with its citations, when
    /// the split matters (a response with server-tool blocks or citations, Anthropic); empty
    /// otherwise, and `text` is the answer. Their texts joined are `text`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub text_blocks: Vec<CitedText>,
}

/// One text block of an answer with the sources it cites.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CitedText {
    /// The text.
    pub text: String,
    /// The provider's citation objects, verbatim (Anthropic `web_search_result_location`,
    /// `char_location`, …); empty when the text cites nothing.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub citations: Vec<serde_json::Value>,
}

/// What a provider can do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProviderCapabilities {
    /// Streams deltas as they arrive.
    pub streaming: bool,
    /// Accepts tool definitions and returns tool calls.
    pub tools: bool,
    /// Supports extended thinking.
    pub thinking: bool,
    /// The model's context window, in tokens.
    pub context_window: u64,
    /// The web tools the provider runs itself (Anthropic server tools, Qwen's built-in tools):
    /// whether it has them and whether this instance declares them.
    #[serde(default)]
    pub native_web_tools: NativeWebTools,
}

impl Default for ProviderCapabilities {
    fn default() -> Self {
        ProviderCapabilities {
            streaming: true,
            tools: true,
            thinking: false,
            context_window: DEFAULT_CONTEXT_WINDOW,
            native_web_tools: NativeWebTools::default(),
        }
    }
}

/// The hosted web tools of a provider (spec 001 `nativeWebTools`). A provider that declares one
/// runs it on its side and reports its calls as [`StreamEvent::ServerToolUse`]; the local
/// `WebSearch`/`WebFetch` function tools are separate from them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NativeWebTools {
    /// Hosted web search.
    #[serde(default)]
    pub web_search: NativeWebTool,
    /// Hosted page fetching (Anthropic `web_fetch`, Qwen `web_extractor`).
    #[serde(default)]
    pub web_fetch: NativeWebTool,
}

/// Whether a provider has one hosted web tool and whether it is in use.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NativeWebTool {
    /// The provider has a documented hosted path for it.
    #[serde(default)]
    pub supported: bool,
    /// This provider instance declares it to the model.
    #[serde(default)]
    pub enabled: bool,
}

impl NativeWebTool {
    /// A tool the provider has, declared or not.
    pub fn supported(enabled: bool) -> Self {
        NativeWebTool {
            supported: true,
            enabled,
        }
    }
}

/// Context window assumed for models the engine knows nothing about.
pub const DEFAULT_CONTEXT_WINDOW: u64 = 200_000;

/// A model provider: one streaming call per round.
///
/// Implementations must honour `cancel` promptly (within milliseconds): on cancellation they
/// return `Ok` with what had streamed so far and [`StopReason::Aborted`]. They must not report
/// success for a stream that ended without its terminal event.
#[async_trait]
pub trait Provider: Send + Sync {
    /// Provider name (`anthropic`, `openai`, `scripted`, …).
    fn name(&self) -> &str;
    /// The model this provider calls.
    fn model(&self) -> &str;
    /// The same provider (endpoint, credentials, settings) calling `model` instead, for a run
    /// that asks for another model (a skill's or custom command's `model`); `None` when this
    /// provider cannot switch models (the default).
    fn with_model(&self, model: &str) -> Option<std::sync::Arc<dyn Provider>> {
        let _ = model;
        None
    }
    /// What the provider supports.
    fn capabilities(&self) -> ProviderCapabilities {
        ProviderCapabilities::default()
    }
    /// Makes one model call, reporting deltas through `on_event` as they arrive.
    async fn stream(
        &self,
        request: &ProviderRequest,
        on_event: &StreamSink<'_>,
        cancel: &CancellationToken,
    ) -> Result<ProviderResponse, ProviderError>;
}
