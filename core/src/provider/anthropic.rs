//! The Anthropic Messages API provider: request building, message conversion and the SSE event
//! parser for `POST {base}/v1/messages` with `stream: true`.
//!
//! Transport concerns (retries, timeouts, cancellation, HTTP error mapping) live in the shared
//! HTTP transport (`provider/http.rs`, configured by [`HttpOptions`]); this module owns only what
//! is specific to Anthropic's wire format.
//!
//! # Prompt caching
//!
//! Unless [`AnthropicConfig::prompt_caching`] is `None`, every request carries `cache_control`
//! breakpoints: the API caches the request prefix up to each marked block (tools, then system
//! prompt, then messages) and allows at most [`MAX_CACHE_BREAKPOINTS`] of them. They go on
//!
//! 1. the last tool definition (the tools change least often);
//! 2. the system prompt;
//! 3. the last block of the last user message *before* the last assistant message — where the
//!    previous call's request ended, so this call reads everything up to there from the cache,
//!    however many blocks were added since (the API only looks back 20 blocks from a breakpoint);
//! 4. the last block of the last message — the moving breakpoint that writes this call's prefix
//!    for the next call.
//!
//! With a one-hour TTL every breakpoint gets it (the API wants longer TTLs before shorter ones).
//! Cache reads and writes come back in [`Usage`] (`cache_read_input_tokens`,
//! `cache_creation_input_tokens`) and are priced as such.
//!
//! # Stream fidelity
//!
//! Besides text, thinking and tool calls, the parser keeps: a refusal's `stop_details`
//! (category, explanation) in [`ProviderResponse::refusal`]; server-tool blocks (web search,
//! code execution, …) verbatim in [`ProviderResponse::server_blocks`], sent back with the
//! message; content delivered whole in `message_start.message.content`. A second
//! `message_start` before `message_stop` (two responses spliced into one stream) is a provider
//! error: nothing from such a stream is used, and no tool runs from it.
//!
//! # Server tools
//!
//! [`AnthropicConfig::server_tools`] (a profile's `options.serverTools`) declares tools the API
//! runs itself — web search, web fetch, code execution ([`ServerTool`]) — after the function
//! tools, with the `anthropic-beta` flags they need. A call is reported as
//! [`StreamEvent::ServerToolUse`] once its input is whole, its result as
//! [`StreamEvent::ServerToolResult`]. A response with server blocks or citations also keeps its
//! text split as the model produced it ([`ProviderResponse::text_blocks`], each with its
//! `citations`, from `citations_delta`) and where each server block stood among the text
//! ([`ProviderResponse::server_block_positions`]); the history keeps both (text blocks with
//! `citations`, the `server_block_positions` metadata), so the next request sends text, search,
//! results and cited text back in the model's order. With native web search declared the local
//! `WebSearch` tool is not offered, unless the conversation already called it.

use std::collections::HashMap;
use std::fmt;

use async_trait::async_trait;
use reqwest::header::{HeaderMap, HeaderValue, ACCEPT, CONTENT_TYPE};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use tokio_util::sync::CancellationToken;

use super::catalog;
use super::http::{
    classify_stream_error, error_body_from_value, malformed_event, Emitter, ErrorContext,
    HttpOptions, HttpTransport, Progress, StreamAssembler,
};
use super::server_tools::{drop_local_web_search, is_foreign_server_block, result_is_error};
use super::sse::SseEvent;
use super::{
    CitedText, NativeWebTool, NativeWebTools, Provider, ProviderCapabilities, ProviderRequest,
    ProviderResponse, ProviderToolCall, Refusal, StopReason, StreamEvent, StreamSink,
    ThinkingBlock, ToolChoice,
};
use crate::message::{
    ContentBlock, Message, ProviderError, ProviderErrorKind, Role, Usage, SERVER_BLOCKS_METADATA,
    SERVER_BLOCK_POSITIONS_METADATA,
};
pub use crate::provider::server_tools::{ServerTool, ServerToolKind};

/// Base URL used when neither the config nor `ANTHROPIC_BASE_URL` names one (the official SDK's).
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";

/// The `anthropic-version` header sent unless configured otherwise.
pub const DEFAULT_ANTHROPIC_VERSION: &str = "2023-06-01";

/// `max_tokens` for models missing from the built-in table (and no explicit setting). Every
/// current Claude model accepts at least this many output tokens.
pub const DEFAULT_MAX_TOKENS: u32 = 8192;

/// Upper bound on the default `max_tokens` for known models: large enough for a big file write in
/// one tool call, small enough that a runaway answer stops in reasonable time.
const MAX_DEFAULT_MAX_TOKENS: u32 = 32_000;

const PROVIDER_NAME: &str = "anthropic";

/// The `anthropic-beta` value that enables the one-hour cache TTL.
const EXTENDED_CACHE_TTL_BETA: &str = "extended-cache-ttl-2025-04-11";

/// Settings for [`AnthropicProvider`].
#[derive(Clone, PartialEq)]
pub struct AnthropicConfig {
    /// API key sent as `x-api-key`. Required.
    pub api_key: Option<String>,
    /// Base URL without the `/v1/messages` path; [`DEFAULT_BASE_URL`] when `None`.
    pub base_url: Option<String>,
    /// Model id, e.g. `claude-sonnet-4-6`.
    pub model: String,
    /// Output token cap when the request sets none. When this is `None` too, the model's table
    /// entry decides (its maximum output, capped at 32,000), or [`DEFAULT_MAX_TOKENS`] (8192) for
    /// models the table does not know.
    pub max_tokens: Option<u32>,
    /// The `anthropic-version` header; [`DEFAULT_ANTHROPIC_VERSION`] by default.
    pub anthropic_version: String,
    /// Prompt caching (on by default; `DISABLE_PROMPT_CACHING=1` turns it off in
    /// [`from_env`](Self::from_env)): `cache_control` breakpoints on the tool definitions, the
    /// system prompt and the conversation prefix, so each call pays full price only for what is
    /// new since the last one (see the module docs). `None` sends no `cache_control`.
    pub prompt_caching: Option<CacheTtl>,
    /// Timeouts, retries, size caps, extra headers.
    pub http: HttpOptions,
    /// Native structured output: when a prompt has an output schema, send it as
    /// `output_config: {"format": {"type": "json_schema", "schema": …}}`. Off by default (only
    /// some models accept it, and a model that does not rejects the whole request); the session
    /// validates and retries the answer either way.
    pub structured_outputs: bool,
    /// Tools the API runs itself (web search, web fetch, code execution), declared after the
    /// function tools of every request, with the `anthropic-beta` flags they need. Empty by
    /// default. With native web search declared, the local `WebSearch` tool is not offered (the
    /// model would see two search tools) unless the conversation already called it.
    pub server_tools: Vec<ServerTool>,
}

/// How long Anthropic keeps a cached prompt prefix after its last use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub enum CacheTtl {
    /// Five minutes, the API's default (cache writes cost 1.25× the input price).
    #[default]
    #[serde(rename = "5m")]
    FiveMinutes,
    /// One hour (cache writes cost 2× the input price): for sessions with pauses longer than five
    /// minutes between prompts.
    #[serde(rename = "1h")]
    OneHour,
}

impl CacheTtl {
    /// The wire value: `5m` or `1h`.
    pub fn as_str(self) -> &'static str {
        match self {
            CacheTtl::FiveMinutes => "5m",
            CacheTtl::OneHour => "1h",
        }
    }

    /// Reads `5m` or `1h`.
    pub fn parse(value: &str) -> Option<Self> {
        match value.trim() {
            "5m" => Some(CacheTtl::FiveMinutes),
            "1h" => Some(CacheTtl::OneHour),
            _ => None,
        }
    }
}

/// The most `cache_control` breakpoints the Messages API accepts in one request.
pub const MAX_CACHE_BREAKPOINTS: usize = 4;

impl AnthropicConfig {
    /// A config for `model` with no key and every other setting at its default.
    pub fn new(model: impl Into<String>) -> Self {
        AnthropicConfig {
            api_key: None,
            base_url: None,
            model: model.into(),
            max_tokens: None,
            anthropic_version: DEFAULT_ANTHROPIC_VERSION.to_string(),
            prompt_caching: Some(CacheTtl::FiveMinutes),
            http: HttpOptions::default(),
            structured_outputs: false,
            server_tools: Vec::new(),
        }
    }

    /// A config for `model` from `ANTHROPIC_API_KEY` and `ANTHROPIC_BASE_URL` (empty values count
    /// as unset).
    pub fn from_env(model: impl Into<String>) -> Self {
        Self::from_vars(model, |name| std::env::var(name).ok())
    }

    fn from_vars(model: impl Into<String>, var: impl Fn(&str) -> Option<String>) -> Self {
        let non_empty = |name: &str| var(name).filter(|v| !v.trim().is_empty());
        // Claude Code's switch: any value but "0"/"false" turns caching off.
        let caching_off = non_empty("DISABLE_PROMPT_CACHING")
            .is_some_and(|v| !matches!(v.trim(), "0" | "false" | "FALSE" | "False"));
        let defaults = Self::new(model);
        AnthropicConfig {
            api_key: non_empty("ANTHROPIC_API_KEY"),
            base_url: non_empty("ANTHROPIC_BASE_URL"),
            prompt_caching: if caching_off {
                None
            } else {
                defaults.prompt_caching
            },
            ..defaults
        }
    }
}

impl fmt::Debug for AnthropicConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never print the key.
        f.debug_struct("AnthropicConfig")
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("max_tokens", &self.max_tokens)
            .field("anthropic_version", &self.anthropic_version)
            .field("prompt_caching", &self.prompt_caching)
            .field("http", &self.http)
            .field("server_tools", &self.server_tools)
            .finish()
    }
}

/// A [`Provider`] for the Anthropic Messages API (streaming).
pub struct AnthropicProvider {
    model: String,
    max_tokens: Option<u32>,
    prompt_caching: Option<CacheTtl>,
    structured_outputs: bool,
    server_tools: Vec<ServerTool>,
    base_url: String,
    transport: HttpTransport,
}

impl fmt::Debug for AnthropicProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AnthropicProvider")
            .field("model", &self.model)
            .field("base_url", &self.base_url)
            .finish_non_exhaustive()
    }
}

impl AnthropicProvider {
    /// Builds the provider and its HTTP client.
    ///
    /// Fails with an [`ProviderErrorKind::Auth`] error when no API key is set, and with
    /// [`ProviderErrorKind::InvalidRequest`] for a malformed key, version or extra header.
    pub fn new(config: AnthropicConfig) -> Result<Self, ProviderError> {
        let api_key = config
            .api_key
            .as_deref()
            .filter(|key| !key.trim().is_empty())
            .ok_or_else(|| {
                ProviderError::new(
                    ProviderErrorKind::Auth,
                    PROVIDER_NAME,
                    "no Anthropic API key: set ANTHROPIC_API_KEY or give the provider an API key",
                )
            })?;
        let base_url = config
            .base_url
            .as_deref()
            .unwrap_or(DEFAULT_BASE_URL)
            .trim_end_matches('/')
            .to_string();
        let invalid = |what: &str| {
            ProviderError::new(
                ProviderErrorKind::InvalidRequest,
                PROVIDER_NAME,
                format!("the {what} contains characters not allowed in an HTTP header"),
            )
        };
        let mut key = HeaderValue::from_str(api_key.trim()).map_err(|_| invalid("API key"))?;
        key.set_sensitive(true);
        let mut headers = HeaderMap::new();
        headers.insert("x-api-key", key);
        headers.insert(
            "anthropic-version",
            HeaderValue::from_str(&config.anthropic_version)
                .map_err(|_| invalid("anthropic_version"))?,
        );
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
        let mut betas: Vec<String> = Vec::new();
        if config.prompt_caching == Some(CacheTtl::OneHour) {
            // The one-hour cache was introduced behind this beta flag; sending it is harmless
            // where the option is generally available.
            betas.push(EXTENDED_CACHE_TTL_BETA.to_string());
        }
        // Web fetch and code execution are beta tools: each needs its flag (comma-separated in
        // the one header, as the API takes several).
        for beta in config.server_tools.iter().filter_map(ServerTool::beta) {
            if !betas.contains(&beta) {
                betas.push(beta);
            }
        }
        if !betas.is_empty() {
            headers.insert(
                "anthropic-beta",
                HeaderValue::from_str(&betas.join(",")).map_err(|_| invalid("server tool type"))?,
            );
        }
        let transport = HttpTransport::new(
            format!("{base_url}/v1/messages"),
            headers,
            config.http,
            ErrorContext {
                provider: PROVIDER_NAME.to_string(),
                base_url: base_url.clone(),
                auth_hint: "Set ANTHROPIC_API_KEY (or the provider's API key) to a valid key."
                    .to_string(),
            },
        )?;
        Ok(AnthropicProvider {
            model: config.model,
            max_tokens: config.max_tokens,
            prompt_caching: config.prompt_caching,
            structured_outputs: config.structured_outputs,
            server_tools: config.server_tools,
            base_url,
            transport,
        })
    }

    /// A provider for `model` configured from `ANTHROPIC_API_KEY` / `ANTHROPIC_BASE_URL`.
    pub fn from_env(model: impl Into<String>) -> Result<Self, ProviderError> {
        Self::new(AnthropicConfig::from_env(model))
    }

    /// The base URL requests go to.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// The network settings in force.
    pub fn http_options(&self) -> &HttpOptions {
        self.transport.options()
    }

    /// The JSON body sent for `request`.
    pub fn request_body(&self, request: &ProviderRequest) -> Value {
        let mut body = build_body(&self.model, self.max_tokens, request);
        if let (true, Some(schema), Some(map)) = (
            self.structured_outputs,
            &request.output_schema,
            body.as_object_mut(),
        ) {
            map.insert(
                "output_config".into(),
                serde_json::json!({"format": {"type": "json_schema", "schema": schema.schema}}),
            );
        }
        if !self.server_tools.is_empty() {
            declare_server_tools(&mut body, &self.server_tools, request);
        }
        if let Some(ttl) = self.prompt_caching {
            mark_cache_breakpoints(&mut body, ttl);
        }
        body
    }

    /// Whether every request declares the server tool `kind`.
    fn declares(&self, kind: ServerToolKind) -> bool {
        self.server_tools.iter().any(|tool| tool.kind == kind)
    }

    /// The server tools every request declares.
    pub fn server_tools(&self) -> &[ServerTool] {
        &self.server_tools
    }

    /// The prompt-cache TTL in use; `None` when prompt caching is off.
    pub fn prompt_caching(&self) -> Option<CacheTtl> {
        self.prompt_caching
    }
}

#[async_trait]
impl Provider for AnthropicProvider {
    fn name(&self) -> &str {
        PROVIDER_NAME
    }

    fn model(&self) -> &str {
        &self.model
    }

    fn with_model(&self, model: &str) -> Option<std::sync::Arc<dyn Provider>> {
        Some(std::sync::Arc::new(AnthropicProvider {
            model: model.to_string(),
            max_tokens: self.max_tokens,
            prompt_caching: self.prompt_caching,
            structured_outputs: self.structured_outputs,
            server_tools: self.server_tools.clone(),
            base_url: self.base_url.clone(),
            transport: self.transport.clone(),
        }))
    }

    fn capabilities(&self) -> ProviderCapabilities {
        ProviderCapabilities {
            streaming: true,
            tools: true,
            thinking: true,
            context_window: catalog::context_window(&self.model),
            native_web_tools: NativeWebTools {
                web_search: NativeWebTool::supported(self.declares(ServerToolKind::WebSearch)),
                web_fetch: NativeWebTool::supported(self.declares(ServerToolKind::WebFetch)),
            },
        }
    }

    async fn stream(
        &self,
        request: &ProviderRequest,
        on_event: &StreamSink<'_>,
        cancel: &CancellationToken,
    ) -> Result<ProviderResponse, ProviderError> {
        let body = serde_json::to_vec(&self.request_body(request)).map_err(|e| {
            ProviderError::new(
                ProviderErrorKind::InvalidRequest,
                PROVIDER_NAME,
                format!("could not encode the request: {e}"),
            )
        })?;
        self.transport
            .stream(
                body.into(),
                || AnthropicAssembler::new(&self.model),
                on_event,
                cancel,
            )
            .await
    }
}

/// The default `max_tokens`: the model's maximum output from the model catalog (capped), or
/// [`DEFAULT_MAX_TOKENS`] for models it does not know.
fn default_max_tokens(model: &str) -> u32 {
    catalog::max_output(model).map_or(DEFAULT_MAX_TOKENS, |max| max.min(MAX_DEFAULT_MAX_TOKENS))
}

/// Builds the Messages API request body (also the body of Anthropic models on Bedrock and
/// Vertex AI, which drop or move some fields).
pub(crate) fn build_body(
    model: &str,
    configured_max_tokens: Option<u32>,
    request: &ProviderRequest,
) -> Value {
    let explicit_max = request.max_tokens.or(configured_max_tokens);
    let max_tokens = match (explicit_max, request.thinking) {
        (Some(max), _) => max,
        // The API requires max_tokens > budget_tokens; a default must leave room for the answer.
        (None, Some(thinking)) => thinking
            .budget_tokens
            .saturating_add(default_max_tokens(model)),
        (None, None) => default_max_tokens(model),
    };
    let mut body = Map::new();
    body.insert("model".into(), json!(model));
    body.insert("max_tokens".into(), json!(max_tokens));
    body.insert("stream".into(), json!(true));

    // System messages that slipped into the conversation join the system prompt, in order.
    let mut system_parts: Vec<&str> = Vec::new();
    if let Some(system) = request.system.as_deref() {
        system_parts.push(system);
    }
    for message in &request.messages {
        if message.role == Role::System {
            for block in &message.content {
                if let ContentBlock::Text { text, .. } = block {
                    system_parts.push(text);
                }
            }
        }
    }
    system_parts.retain(|part| !part.trim().is_empty());
    if !system_parts.is_empty() {
        body.insert("system".into(), json!(system_parts.join("\n\n")));
    }

    body.insert(
        "messages".into(),
        Value::Array(convert_messages(&request.messages)),
    );

    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|tool| {
                json!({
                    "name": tool.name,
                    "description": tool.description,
                    "input_schema": tool.input_schema,
                })
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
        if let Some(choice) = &request.tool_choice {
            let choice = match choice {
                ToolChoice::Auto => json!({"type": "auto"}),
                ToolChoice::None => json!({"type": "none"}),
                ToolChoice::Required => json!({"type": "any"}),
                ToolChoice::Tool(name) => json!({"type": "tool", "name": name}),
            };
            body.insert("tool_choice".into(), choice);
        }
    }
    if let Some(temperature) = request.temperature {
        body.insert("temperature".into(), json!(temperature));
    }
    if let Some(thinking) = request.thinking {
        body.insert(
            "thinking".into(),
            json!({"type": "enabled", "budget_tokens": thinking.budget_tokens}),
        );
    }
    Value::Object(body)
}

/// Adds the server tools to a request body's `tools`, after the function tools (so the cache
/// breakpoint on the last tool covers them all). With native web search the local `WebSearch`
/// definition is dropped — two search tools would only make the model pick at random — unless
/// the conversation already holds a `WebSearch` call, whose history must keep its tool.
fn declare_server_tools(body: &mut Value, server_tools: &[ServerTool], request: &ProviderRequest) {
    let Some(body) = body.as_object_mut() else {
        return;
    };
    let native_search = server_tools
        .iter()
        .any(|tool| tool.kind == ServerToolKind::WebSearch);
    let tools = body
        .entry("tools")
        .or_insert_with(|| Value::Array(Vec::new()));
    if let Value::Array(tools) = tools {
        if native_search {
            drop_local_web_search(tools, request);
        }
        tools.extend(server_tools.iter().map(ServerTool::definition));
    }
}

/// Puts the prompt-cache breakpoints on a request body (see the module docs).
pub(crate) fn mark_cache_breakpoints(body: &mut Value, ttl: CacheTtl) {
    let marker = match ttl {
        CacheTtl::FiveMinutes => json!({"type": "ephemeral"}),
        CacheTtl::OneHour => json!({"type": "ephemeral", "ttl": "1h"}),
    };
    let Some(body) = body.as_object_mut() else {
        return;
    };
    let mut marked = 0usize;
    if let Some(Value::Array(tools)) = body.get_mut("tools") {
        if let Some(Value::Object(last)) = tools.last_mut() {
            last.insert("cache_control".into(), marker.clone());
            marked += 1;
        }
    }
    if let Some(Value::String(system)) = body.get("system") {
        let block = json!([{"type": "text", "text": system, "cache_control": marker}]);
        body.insert("system".into(), block);
        marked += 1;
    }
    let Some(Value::Array(messages)) = body.get_mut("messages") else {
        return;
    };
    let role = |m: &Value| m.get("role").and_then(Value::as_str).map(str::to_owned);
    let last_assistant = messages
        .iter()
        .rposition(|m| role(m).as_deref() == Some("assistant"));
    // Where the previous call's request ended: the last user message before the last assistant.
    let previous_tail = last_assistant.and_then(|end| {
        messages[..end]
            .iter()
            .rposition(|m| role(m).as_deref() == Some("user"))
    });
    let last = messages.len().checked_sub(1);
    let mut targets: Vec<usize> = [previous_tail, last].into_iter().flatten().collect();
    targets.dedup();
    for index in targets {
        if marked >= MAX_CACHE_BREAKPOINTS {
            break;
        }
        let block = messages[index]
            .get_mut("content")
            .and_then(Value::as_array_mut)
            .and_then(|blocks| blocks.last_mut())
            .and_then(Value::as_object_mut);
        // Thinking blocks cannot carry a breakpoint; a message never ends with one but the last.
        if let Some(block) =
            block.filter(|b| b.get("type").and_then(Value::as_str) != Some("thinking"))
        {
            block.insert("cache_control".into(), marker.clone());
            marked += 1;
        }
    }
}

/// Converts the conversation to Anthropic messages.
///
/// Tool messages become user messages of `tool_result` blocks, and consecutive messages of the same
/// wire role are merged: the API wants strictly alternating roles, and it wants every `tool_result`
/// answering an assistant turn in the one user message that follows it.
fn convert_messages<M: std::borrow::Borrow<Message>>(messages: &[M]) -> Vec<Value> {
    let mut wire: Vec<(&'static str, Vec<Value>)> = Vec::new();
    for message in messages {
        let message: &Message = message.borrow();
        let (role, blocks) = match message.role {
            Role::System => continue, // folded into `system`
            Role::Assistant => ("assistant", assistant_blocks(message)),
            Role::User | Role::Tool => ("user", user_blocks(&message.content)),
        };
        if blocks.is_empty() {
            // The API rejects empty content; dropping the message lets its neighbours merge.
            continue;
        }
        match wire.last_mut() {
            Some((last_role, last_blocks)) if *last_role == role => last_blocks.extend(blocks),
            _ => wire.push((role, blocks)),
        }
    }
    wire.into_iter()
        .map(|(role, mut blocks)| {
            if role == "user" {
                // Tool results answer the previous assistant turn; they go before any new text.
                blocks.sort_by_key(|block| block["type"] != "tool_result");
            }
            json!({"role": role, "content": blocks})
        })
        .collect()
}

fn user_blocks(content: &[ContentBlock]) -> Vec<Value> {
    content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text { text, .. } => text_block(text),
            ContentBlock::ToolResult {
                tool_use_id,
                content,
                is_error,
            } => {
                let mut result = Map::new();
                result.insert("type".into(), json!("tool_result"));
                result.insert("tool_use_id".into(), json!(tool_use_id));
                // An empty string is not a valid text block; the API accepts no content instead.
                if !content.is_empty() {
                    result.insert("content".into(), json!(content));
                }
                result.insert("is_error".into(), json!(is_error));
                Some(Value::Object(result))
            }
            // Thinking and tool calls are the assistant's; they have no place in a user turn.
            ContentBlock::Thinking { .. } | ContentBlock::ToolUse { .. } => None,
        })
        .collect()
}

fn assistant_blocks(message: &Message) -> Vec<Value> {
    let mut thinking = Vec::new();
    let mut rest = Vec::new();
    // Server-tool blocks (the provider's own tool calls and their results) go back verbatim,
    // after the thinking they followed and among the text where the model produced them (each
    // one's position counts the text blocks before it; without positions, before all text).
    let server: Vec<&Value> = match message.metadata.get(SERVER_BLOCKS_METADATA) {
        // Another API's hosted-tool items (a Responses `web_search_call`, …) mean nothing here.
        Some(Value::Array(server)) => server
            .iter()
            .filter(|b| b.is_object() && !is_foreign_server_block(b))
            .collect(),
        _ => Vec::new(),
    };
    let positions: Vec<u64> = match message.metadata.get(SERVER_BLOCK_POSITIONS_METADATA) {
        Some(Value::Array(positions)) if positions.len() == server.len() => {
            positions.iter().map(|p| p.as_u64().unwrap_or(0)).collect()
        }
        _ => vec![0; server.len()],
    };
    let mut pending = server.into_iter().zip(positions).peekable();
    let mut texts_seen = 0u64;
    for block in &message.content {
        if let ContentBlock::Text { .. } = block {
            while let Some((server_block, _)) = pending.next_if(|(_, at)| *at <= texts_seen) {
                rest.push(server_block.clone());
            }
            texts_seen += 1;
        }
        match block {
            // The API requires thinking blocks first, and only accepts them with the signature it
            // issued; unsigned thinking is dropped, and so is thinking another provider signed
            // (Anthropic signatures are base64; other providers' are stored with a `name:`
            // prefix, e.g. Gemini's `gemini:`), which the API would reject.
            ContentBlock::Thinking {
                thinking: text,
                signature: Some(signature),
            } if !signature.contains(':') => thinking.push(json!({
                "type": "thinking",
                "thinking": text,
                "signature": signature,
            })),
            ContentBlock::Thinking { .. } => {}
            ContentBlock::Text { text, citations } => {
                rest.extend(text_block(text).map(|mut block| {
                    // Cited text goes back with its citations, as it came.
                    if !citations.is_empty() {
                        block["citations"] = Value::Array(citations.clone());
                    }
                    block
                }))
            }
            ContentBlock::ToolUse { id, name, input } => {
                let input = if input.is_object() {
                    input.clone()
                } else {
                    // Invalid arguments are kept in the transcript as a string, but the API only
                    // takes an object here.
                    Value::Object(Map::new())
                };
                rest.push(json!({"type": "tool_use", "id": id, "name": name, "input": input}));
            }
            ContentBlock::ToolResult { .. } => {}
        }
    }
    // Server blocks after the last text (a search the model ran before its tool calls, say)
    // go before the first function tool call.
    let first_call = rest
        .iter()
        .position(|b| b["type"] == "tool_use")
        .unwrap_or(rest.len());
    let tail: Vec<Value> = pending.map(|(block, _)| block.clone()).collect();
    rest.splice(first_call..first_call, tail);
    thinking.extend(rest);
    thinking
}

/// A text block, or nothing for empty text (the API rejects empty text blocks).
fn text_block(text: &str) -> Option<Value> {
    (!text.is_empty()).then(|| json!({"type": "text", "text": text}))
}

// ---- stream parsing ---------------------------------------------------------------------------

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireEvent {
    MessageStart {
        message: WireMessage,
    },
    ContentBlockStart {
        index: usize,
        content_block: Value,
    },
    ContentBlockDelta {
        index: usize,
        delta: WireDelta,
    },
    ContentBlockStop {
        index: usize,
    },
    MessageDelta {
        #[serde(default)]
        delta: WireMessageDelta,
        #[serde(default)]
        usage: Option<WireUsage>,
    },
    MessageStop,
    Ping,
    Error {
        #[serde(default)]
        error: Value,
    },
    #[serde(other)]
    Unknown,
}

#[derive(Deserialize)]
struct WireMessage {
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    usage: Option<WireUsage>,
    /// Content the API delivered whole with the message (normally empty: blocks stream after).
    #[serde(default)]
    content: Vec<Value>,
}

#[derive(Deserialize, Default)]
struct WireMessageDelta {
    #[serde(default)]
    stop_reason: Option<String>,
    /// `{"type": "refusal", "category": …, "explanation": …}` with a refusal.
    #[serde(default)]
    stop_details: Option<WireStopDetails>,
}

#[derive(Deserialize, Default)]
struct WireStopDetails {
    #[serde(default)]
    category: Option<String>,
    #[serde(default)]
    explanation: Option<String>,
}

#[derive(Deserialize, Default)]
struct WireUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireBlock {
    Text {
        #[serde(default)]
        text: String,
        /// Citations given whole with the block (normally they stream as `citations_delta`).
        #[serde(default)]
        citations: Option<Vec<Value>>,
    },
    Thinking {
        #[serde(default)]
        thinking: String,
        #[serde(default)]
        signature: Option<String>,
    },
    ToolUse {
        id: String,
        name: String,
        #[serde(default)]
        input: Value,
    },
}

/// What a content block is, read from its JSON: one of the blocks robota interprets, a block of
/// a tool the provider runs itself (kept verbatim), or something to skip.
enum StartedBlock {
    Known(WireBlock),
    Server(Value),
    Other,
}

impl StartedBlock {
    fn classify(block: Value) -> Result<Self, serde_json::Error> {
        let kind = block.get("type").and_then(Value::as_str).unwrap_or("");
        Ok(match kind {
            "text" | "thinking" | "tool_use" => StartedBlock::Known(serde_json::from_value(block)?),
            // Server tools (web search, web fetch, code execution, MCP connectors): the call and
            // its result both come from the API, and the API wants them back verbatim.
            "server_tool_use" | "mcp_tool_use" => StartedBlock::Server(block),
            other if other.ends_with("_tool_result") => StartedBlock::Server(block),
            _ => StartedBlock::Other,
        })
    }
}
#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireDelta {
    TextDelta {
        text: String,
    },
    ThinkingDelta {
        thinking: String,
    },
    SignatureDelta {
        signature: String,
    },
    InputJsonDelta {
        partial_json: String,
    },
    /// One citation of the text block (web search results, documents), streamed before the
    /// text that cites it ("Streaming Messages" docs: `citations_delta`).
    CitationsDelta {
        citation: Value,
    },
    #[serde(other)]
    Other,
}

/// `content_block_delta`, the event that arrives once per streamed token, parsed without the
/// internally-tagged enum: serde buffers a tagged enum's whole content before it can pick the
/// variant, which doubled the parse cost of the hottest event.
#[derive(Deserialize)]
struct FastDeltaEvent<'a> {
    index: usize,
    #[serde(borrow)]
    delta: FastDelta<'a>,
}

#[derive(Deserialize)]
struct FastDelta<'a> {
    #[serde(rename = "type", borrow)]
    kind: &'a str,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    thinking: Option<String>,
    #[serde(default)]
    signature: Option<String>,
    #[serde(default)]
    partial_json: Option<String>,
}

impl FastDelta<'_> {
    /// The typed delta, or `None` when a field the variant needs is missing (the generic parse
    /// then reports the event as malformed).
    fn into_delta(self) -> Option<WireDelta> {
        Some(match self.kind {
            "text_delta" => WireDelta::TextDelta { text: self.text? },
            "thinking_delta" => WireDelta::ThinkingDelta {
                thinking: self.thinking?,
            },
            "signature_delta" => WireDelta::SignatureDelta {
                signature: self.signature?,
            },
            "input_json_delta" => WireDelta::InputJsonDelta {
                partial_json: self.partial_json?,
            },
            // Carries an object: left to the generic parse.
            "citations_delta" => return None,
            _ => WireDelta::Other,
        })
    }
}

/// Parses one event's JSON, taking the fast path for token deltas.
fn parse_wire_event(event: &SseEvent) -> Result<WireEvent, serde_json::Error> {
    if event.event == "content_block_delta" {
        if let Ok(fast) = serde_json::from_str::<FastDeltaEvent>(&event.data) {
            if let Some(delta) = fast.delta.into_delta() {
                return Ok(WireEvent::ContentBlockDelta {
                    index: fast.index,
                    delta,
                });
            }
        }
    }
    serde_json::from_str(&event.data)
}

/// What a content block index refers to.
#[derive(Debug, Clone, Copy)]
enum BlockSlot {
    /// Index into `text_blocks`.
    Text(usize),
    /// Index into `thinking`.
    Thinking(usize),
    /// Index into `tools`.
    Tool(usize),
    /// Index into `server`: a server tool's block, kept verbatim.
    Server(usize),
    /// A block this version does not use (redacted thinking, …).
    Ignored,
}

struct ServerBlock {
    block: Value,
    /// How many text blocks came before it.
    position: usize,
    /// Streamed `input_json_delta`s of a `server_tool_use`, parsed into `input` at its stop.
    partial_input: String,
}

struct ToolState {
    call: ProviderToolCall,
    /// Input given whole in `content_block_start`, used when no deltas follow.
    start_input: Value,
    done: bool,
}

/// Assembles one streamed Messages API response (also the same events relayed by Bedrock and
/// Vertex AI).
pub(crate) struct AnthropicAssembler {
    /// The provider named in errors.
    provider: &'static str,
    model: String,
    text: String,
    /// The text split as the model produced it, with citations.
    text_blocks: Vec<CitedText>,
    thinking: Vec<ThinkingBlock>,
    tools: Vec<ToolState>,
    server: Vec<ServerBlock>,
    blocks: HashMap<usize, BlockSlot>,
    usage: Usage,
    stop_reason: Option<String>,
    stop_details: Option<WireStopDetails>,
    /// A `message_start` was seen: a second one before `message_stop` means two responses were
    /// spliced into one stream.
    started: bool,
}

impl AnthropicAssembler {
    fn new(model: &str) -> Self {
        Self::for_provider(model, PROVIDER_NAME)
    }

    /// An assembler whose errors name `provider` (Bedrock and Vertex AI relay these events).
    pub(crate) fn for_provider(model: &str, provider: &'static str) -> Self {
        AnthropicAssembler {
            provider,
            model: model.to_string(),
            text: String::new(),
            text_blocks: Vec::new(),
            thinking: Vec::new(),
            tools: Vec::new(),
            server: Vec::new(),
            blocks: HashMap::new(),
            usage: Usage::default(),
            stop_reason: None,
            stop_details: None,
            started: false,
        }
    }

    /// Handles one content block as it starts (from `content_block_start`, or whole from
    /// `message_start.message.content`).
    fn start_block(
        &mut self,
        index: usize,
        content_block: Value,
        emitter: &mut Emitter<'_, '_>,
    ) -> Result<(), serde_json::Error> {
        match StartedBlock::classify(content_block)? {
            StartedBlock::Known(WireBlock::Text { text, citations }) => {
                self.text_blocks.push(CitedText {
                    text: String::new(),
                    citations: citations.unwrap_or_default(),
                });
                let slot = self.text_blocks.len() - 1;
                self.blocks.insert(index, BlockSlot::Text(slot));
                self.push_text(Some(slot), text, emitter);
            }
            StartedBlock::Known(WireBlock::Thinking {
                thinking,
                signature,
            }) => {
                let slot = self.new_thinking_slot(index, signature.filter(|s| !s.is_empty()));
                self.push_thinking(slot, thinking, emitter);
            }
            StartedBlock::Known(WireBlock::ToolUse { id, name, input }) => {
                let position = self.tools.len();
                self.tools.push(ToolState {
                    call: ProviderToolCall {
                        id: id.clone(),
                        name: name.clone(),
                        arguments: String::new(),
                    },
                    start_input: input,
                    done: false,
                });
                self.blocks.insert(index, BlockSlot::Tool(position));
                emitter.emit(StreamEvent::ToolCallStart {
                    index: position,
                    id,
                    name,
                });
            }
            StartedBlock::Server(block) => {
                // A result arrives whole with its block start.
                let kind = block.get("type").and_then(Value::as_str).unwrap_or("");
                if kind.ends_with("_tool_result") {
                    emitter.emit(StreamEvent::ServerToolResult {
                        tool_use_id: block
                            .get("tool_use_id")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_string(),
                        result_type: kind.to_string(),
                        is_error: result_is_error(&block),
                    });
                }
                self.server.push(ServerBlock {
                    block,
                    position: self.text_blocks.len(),
                    partial_input: String::new(),
                });
                self.blocks
                    .insert(index, BlockSlot::Server(self.server.len() - 1));
            }
            StartedBlock::Other => {
                self.blocks.insert(index, BlockSlot::Ignored);
            }
        }
        Ok(())
    }

    /// Handles the end of a content block.
    fn stop_block(&mut self, index: usize, emitter: &mut Emitter<'_, '_>) {
        match self.blocks.get(&index).copied() {
            Some(BlockSlot::Tool(position)) => {
                if let Some(tool) = self.tools.get_mut(position) {
                    Self::finish_tool(tool);
                }
            }
            Some(BlockSlot::Server(position)) => {
                if let Some(server) = self.server.get_mut(position) {
                    let partial = std::mem::take(&mut server.partial_input);
                    if !partial.trim().is_empty() {
                        if let (Ok(input), Some(block)) = (
                            serde_json::from_str::<Value>(&partial),
                            server.block.as_object_mut(),
                        ) {
                            block.insert("input".into(), input);
                        }
                    }
                    // The call is reported once its input is whole.
                    let block = &server.block;
                    if block.get("type").and_then(Value::as_str) != Some("server_tool_use")
                        && block.get("type").and_then(Value::as_str) != Some("mcp_tool_use")
                    {
                        return;
                    }
                    let field = |key: &str| {
                        block
                            .get(key)
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_string()
                    };
                    emitter.emit(StreamEvent::ServerToolUse {
                        id: field("id"),
                        name: field("name"),
                        input: block.get("input").cloned().unwrap_or(Value::Null),
                    });
                }
            }
            _ => {}
        }
    }

    fn apply_usage(&mut self, usage: &WireUsage) {
        // Counts are cumulative, so later values replace earlier ones.
        if let Some(n) = usage.input_tokens {
            self.usage.input_tokens = n;
        }
        if let Some(n) = usage.output_tokens {
            self.usage.output_tokens = n;
        }
        if let Some(n) = usage.cache_creation_input_tokens {
            self.usage.cache_creation_input_tokens = n;
        }
        if let Some(n) = usage.cache_read_input_tokens {
            self.usage.cache_read_input_tokens = n;
        }
    }

    fn push_text(&mut self, slot: Option<usize>, text: String, emitter: &mut Emitter<'_, '_>) {
        if text.is_empty() {
            return;
        }
        // Text whose block start was never seen joins the last text block.
        let slot = slot.or(self.text_blocks.len().checked_sub(1));
        match slot.and_then(|slot| self.text_blocks.get_mut(slot)) {
            Some(block) => block.text.push_str(&text),
            None => self.text_blocks.push(CitedText {
                text: text.clone(),
                citations: Vec::new(),
            }),
        }
        self.text.push_str(&text);
        emitter.emit(StreamEvent::TextDelta(text));
    }

    fn push_thinking(&mut self, slot: usize, text: String, emitter: &mut Emitter<'_, '_>) {
        if text.is_empty() {
            return;
        }
        if let Some(block) = self.thinking.get_mut(slot) {
            block.thinking.push_str(&text);
        }
        emitter.emit(StreamEvent::ThinkingDelta(text));
    }

    fn new_thinking_slot(&mut self, index: usize, signature: Option<String>) -> usize {
        self.thinking.push(ThinkingBlock {
            thinking: String::new(),
            signature,
        });
        let slot = self.thinking.len() - 1;
        self.blocks.insert(index, BlockSlot::Thinking(slot));
        slot
    }

    fn finish_tool(tool: &mut ToolState) {
        if tool.done {
            return;
        }
        tool.done = true;
        if tool.call.arguments.trim().is_empty() {
            tool.call.arguments = match &tool.start_input {
                Value::Object(map) if !map.is_empty() => tool.start_input.to_string(),
                _ => "{}".to_string(),
            };
        }
    }

    fn response(self, stop_reason: StopReason, complete_tools_only: bool) -> ProviderResponse {
        let tool_calls = self
            .tools
            .into_iter()
            .filter(|tool| tool.done || !complete_tools_only)
            .map(|mut tool| {
                Self::finish_tool(&mut tool);
                tool.call
            })
            .collect();
        let refusal = (stop_reason == StopReason::Refusal).then(|| {
            let details = self.stop_details.unwrap_or_default();
            Refusal {
                text: self.text.clone(),
                category: details.category.filter(|c| !c.is_empty()),
                explanation: details.explanation.filter(|e| !e.is_empty()),
            }
        });
        // The text's split and citations matter only when there are citations to keep or server
        // blocks to place among the text; otherwise the joined text is the answer.
        let split_matters =
            !self.server.is_empty() || self.text_blocks.iter().any(|b| !b.citations.is_empty());
        let (server_blocks, server_block_positions) = if split_matters {
            self.server
                .into_iter()
                .map(|s| (s.block, s.position))
                .unzip()
        } else {
            (Vec::new(), Vec::new())
        };
        ProviderResponse {
            text: self.text,
            thinking: self.thinking,
            tool_calls,
            stop_reason,
            usage: self.usage,
            model: self.model,
            refusal,
            server_blocks,
            server_block_positions,
            text_blocks: if split_matters {
                self.text_blocks
            } else {
                Vec::new()
            },
        }
    }
}

impl StreamAssembler for AnthropicAssembler {
    const TERMINAL: &'static str = "message_stop";

    fn on_event(
        &mut self,
        event: SseEvent,
        emitter: &mut Emitter<'_, '_>,
    ) -> Result<Progress, ProviderError> {
        if event.data.trim().is_empty() {
            return Ok(Progress::Continue); // a keep-alive from some proxy
        }
        let wire = parse_wire_event(&event)
            .map_err(|e| malformed_event(self.provider, &event.data, &e))?;
        match wire {
            WireEvent::MessageStart { message } => {
                if self.started {
                    // Two responses spliced into one stream (a proxy or a reconnect gone wrong):
                    // nothing from it can be trusted, least of all a half-streamed tool call.
                    return Err(ProviderError::new(
                        ProviderErrorKind::Provider,
                        self.provider,
                        "the stream is corrupt: a second message_start arrived before the first \
                         message ended (message_stop), so two responses were spliced together; \
                         nothing from it was used",
                    ));
                }
                self.started = true;
                if let Some(model) = message.model.filter(|m| !m.is_empty()) {
                    self.model = model;
                }
                if let Some(usage) = message.usage {
                    self.apply_usage(&usage);
                }
                // Blocks delivered whole with the message come first; streamed blocks follow
                // with their own indexes.
                for (index, block) in message.content.into_iter().enumerate() {
                    self.start_block(index, block, emitter)
                        .map_err(|e| malformed_event(self.provider, &event.data, &e))?;
                    self.stop_block(index, emitter);
                }
            }
            WireEvent::ContentBlockStart {
                index,
                content_block,
            } => {
                self.start_block(index, content_block, emitter)
                    .map_err(|e| malformed_event(self.provider, &event.data, &e))?;
            }
            WireEvent::ContentBlockDelta { index, delta } => {
                let slot = self.blocks.get(&index).copied();
                match delta {
                    // Text is text even if its block start was never seen.
                    WireDelta::TextDelta { text } => {
                        let slot = match slot {
                            Some(BlockSlot::Text(slot)) => Some(slot),
                            _ => None,
                        };
                        self.push_text(slot, text, emitter);
                    }
                    WireDelta::CitationsDelta { citation } => {
                        if let Some(BlockSlot::Text(slot)) = slot {
                            if let Some(block) = self.text_blocks.get_mut(slot) {
                                block.citations.push(citation);
                            }
                        }
                    }
                    WireDelta::ThinkingDelta { thinking } => {
                        let slot = match slot {
                            Some(BlockSlot::Thinking(slot)) => slot,
                            _ => self.new_thinking_slot(index, None),
                        };
                        self.push_thinking(slot, thinking, emitter);
                    }
                    WireDelta::SignatureDelta { signature } => {
                        if let Some(BlockSlot::Thinking(slot)) = slot {
                            if let Some(block) = self.thinking.get_mut(slot) {
                                block
                                    .signature
                                    .get_or_insert_with(String::new)
                                    .push_str(&signature);
                            }
                        }
                    }
                    WireDelta::InputJsonDelta { partial_json } => {
                        if let Some(BlockSlot::Server(position)) = slot {
                            if let Some(server) = self.server.get_mut(position) {
                                server.partial_input.push_str(&partial_json);
                            }
                        }
                        if let Some(BlockSlot::Tool(position)) = slot {
                            if let Some(tool) = self.tools.get_mut(position) {
                                tool.call.arguments.push_str(&partial_json);
                                if !partial_json.is_empty() {
                                    emitter.emit(StreamEvent::ToolCallDelta {
                                        index: position,
                                        partial_json,
                                    });
                                }
                            }
                        }
                    }
                    WireDelta::Other => {}
                }
            }
            WireEvent::ContentBlockStop { index } => self.stop_block(index, emitter),
            WireEvent::MessageDelta { delta, usage } => {
                if delta.stop_reason.is_some() {
                    self.stop_reason = delta.stop_reason;
                }
                if delta.stop_details.is_some() {
                    self.stop_details = delta.stop_details;
                }
                if let Some(usage) = usage {
                    self.apply_usage(&usage);
                }
            }
            WireEvent::MessageStop => return Ok(Progress::Done),
            WireEvent::Ping | WireEvent::Unknown => {}
            WireEvent::Error { error } => {
                let body = error_body_from_value(&json!({ "error": error }));
                return Err(classify_stream_error(self.provider, &body));
            }
        }
        Ok(Progress::Continue)
    }

    fn finish(self) -> ProviderResponse {
        let stop_reason = match self.stop_reason.as_deref() {
            Some("end_turn") => StopReason::EndTurn,
            Some("tool_use") => StopReason::ToolUse,
            // The context window filled up mid-answer: cut off like a max_tokens stop.
            Some("max_tokens") | Some("model_context_window_exceeded") => StopReason::MaxTokens,
            Some("stop_sequence") => StopReason::StopSequence,
            Some("refusal") => StopReason::Refusal,
            Some("pause_turn") => StopReason::PauseTurn,
            Some(_) => StopReason::Other,
            None if !self.tools.is_empty() => StopReason::ToolUse,
            None => StopReason::EndTurn,
        };
        self.response(stop_reason, false)
    }

    fn abort(self) -> ProviderResponse {
        // A tool call whose arguments were still streaming is not a call anyone should run.
        self.response(StopReason::Aborted, true)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use crate::message::MessageState;
    use crate::provider::sse::SseDecoder;
    use crate::provider::{ThinkingConfig, ToolDefinition};

    fn request(messages: Vec<Message>) -> ProviderRequest {
        ProviderRequest {
            messages: messages.into_iter().map(Into::into).collect(),
            ..ProviderRequest::default()
        }
    }

    fn assistant(content: Vec<ContentBlock>) -> Message {
        Message::assistant(content, MessageState::Complete)
    }

    #[test]
    fn minimal_body() {
        let body = build_body(
            "claude-sonnet-4-5",
            None,
            &request(vec![Message::user("hi")]),
        );
        assert_eq!(
            body,
            json!({
                "model": "claude-sonnet-4-5",
                "max_tokens": 32000,
                "stream": true,
                "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
            })
        );
    }

    #[test]
    fn body_fields_system_tools_temperature_thinking() {
        let req = ProviderRequest {
            system: Some("be brief".into()),
            messages: vec![Message::user("hi").into()],
            tools: vec![ToolDefinition {
                name: "Read".into(),
                description: "reads".into(),
                input_schema: json!({"type": "object", "properties": {"file_path": {"type": "string"}}}),
            }],
            max_tokens: Some(1000),
            temperature: Some(0.5),
            thinking: Some(ThinkingConfig { budget_tokens: 500 }),
            tool_choice: None,
            output_schema: None,
        };
        let body = build_body("m", Some(7), &req);
        assert_eq!(body["model"], "m");
        assert_eq!(body["max_tokens"], 1000, "request wins over config");
        assert_eq!(body["stream"], true);
        assert_eq!(body["system"], "be brief");
        assert_eq!(
            body["tools"],
            json!([{"name": "Read", "description": "reads", "input_schema": {"type": "object", "properties": {"file_path": {"type": "string"}}}}])
        );
        assert_eq!(body["temperature"], 0.5);
        assert_eq!(
            body["thinking"],
            json!({"type": "enabled", "budget_tokens": 500})
        );
        assert!(body.get("tool_choice").is_none(), "auto is the API default");
    }

    #[test]
    fn tool_choice_maps_to_anthropic_shapes() {
        let mut req = ProviderRequest {
            messages: vec![Message::user("hi").into()],
            tools: vec![ToolDefinition {
                name: "Read".into(),
                description: "reads".into(),
                input_schema: json!({"type": "object"}),
            }],
            ..ProviderRequest::default()
        };
        for (choice, expected) in [
            (ToolChoice::Auto, json!({"type": "auto"})),
            (ToolChoice::None, json!({"type": "none"})),
            (ToolChoice::Required, json!({"type": "any"})),
            (
                ToolChoice::Tool("Read".into()),
                json!({"type": "tool", "name": "Read"}),
            ),
        ] {
            req.tool_choice = Some(choice);
            assert_eq!(build_body("m", None, &req)["tool_choice"], expected);
        }
    }

    #[test]
    fn max_tokens_defaults() {
        let req = request(vec![Message::user("hi")]);
        assert_eq!(build_body("m", Some(77), &req)["max_tokens"], 77);
        assert_eq!(
            build_body("unknown-model", None, &req)["max_tokens"],
            DEFAULT_MAX_TOKENS
        );
        assert_eq!(
            build_body("claude-3-haiku-20240307", None, &req)["max_tokens"],
            4096
        );
        assert_eq!(
            build_body("claude-opus-4-6", None, &req)["max_tokens"],
            32000
        );
        let thinking = ProviderRequest {
            thinking: Some(ThinkingConfig {
                budget_tokens: 10_000,
            }),
            ..req
        };
        assert_eq!(
            build_body("unknown-model", None, &thinking)["max_tokens"],
            10_000 + DEFAULT_MAX_TOKENS
        );
    }

    #[test]
    fn system_messages_join_the_system_prompt() {
        let req = ProviderRequest {
            system: Some("a".into()),
            messages: vec![Message::system("b").into(), Message::user("hi").into()],
            ..ProviderRequest::default()
        };
        let body = build_body("m", None, &req);
        assert_eq!(body["system"], "a\n\nb");
        assert_eq!(body["messages"].as_array().map(Vec::len), Some(1));
    }

    #[test]
    fn assistant_blocks_order_and_shapes() {
        let messages = vec![
            Message::user("go"),
            assistant(vec![
                ContentBlock::text("let me look"),
                ContentBlock::Thinking {
                    thinking: "hmm".into(),
                    signature: Some("sig".into()),
                },
                ContentBlock::Thinking {
                    thinking: "unsigned".into(),
                    signature: None,
                },
                ContentBlock::Thinking {
                    thinking: "from gemini".into(),
                    signature: Some("gemini:thought:c2ln".into()),
                },
                ContentBlock::ToolUse {
                    id: "toolu_1".into(),
                    name: "Read".into(),
                    input: json!({"file_path": "a"}),
                },
                ContentBlock::ToolUse {
                    id: "toolu_2".into(),
                    name: "Bash".into(),
                    input: json!("{not json"),
                },
            ]),
        ];
        let wire = convert_messages(&messages);
        assert_eq!(
            wire[1],
            json!({"role": "assistant", "content": [
                {"type": "thinking", "thinking": "hmm", "signature": "sig"},
                {"type": "text", "text": "let me look"},
                {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"file_path": "a"}},
                {"type": "tool_use", "id": "toolu_2", "name": "Bash", "input": {}},
            ]})
        );
    }

    #[test]
    fn tool_results_merge_into_one_user_message() {
        let messages = vec![
            Message::user("go"),
            assistant(vec![
                ContentBlock::ToolUse {
                    id: "a".into(),
                    name: "X".into(),
                    input: json!({}),
                },
                ContentBlock::ToolUse {
                    id: "b".into(),
                    name: "Y".into(),
                    input: json!({}),
                },
            ]),
            Message::tool_result("a", "one", false),
            Message::tool_result("b", "failed", true),
            Message::user("and then?"),
        ];
        let wire = convert_messages(&messages);
        assert_eq!(wire.len(), 3);
        assert_eq!(
            wire[2],
            json!({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "a", "content": "one", "is_error": false},
                {"type": "tool_result", "tool_use_id": "b", "content": "failed", "is_error": true},
                {"type": "text", "text": "and then?"},
            ]})
        );
    }

    #[test]
    fn consecutive_same_role_and_empty_messages_merge() {
        let messages = vec![
            Message::user("a"),
            Message::user(""),
            Message::user("b"),
            assistant(vec![ContentBlock::text("")]),
            Message::user("c"),
            assistant(vec![ContentBlock::text("x")]),
            assistant(vec![ContentBlock::text("y")]),
        ];
        let wire = convert_messages(&messages);
        assert_eq!(
            wire,
            vec![
                json!({"role": "user", "content": [
                    {"type": "text", "text": "a"}, {"type": "text", "text": "b"}, {"type": "text", "text": "c"}
                ]}),
                json!({"role": "assistant", "content": [
                    {"type": "text", "text": "x"}, {"type": "text", "text": "y"}
                ]}),
            ]
        );
    }

    #[test]
    fn empty_tool_result_omits_content() {
        let wire = convert_messages(&[Message::tool_result("a", "", false)]);
        assert_eq!(
            wire[0]["content"][0],
            json!({"type": "tool_result", "tool_use_id": "a", "is_error": false})
        );
    }

    #[test]
    fn context_windows_come_from_the_catalog() {
        let window = |model: &str| {
            AnthropicProvider::new(AnthropicConfig {
                api_key: Some("k".into()),
                ..AnthropicConfig::new(model)
            })
            .map(|provider| provider.capabilities().context_window)
            .ok()
        };
        assert_eq!(window("claude-opus-4-6"), Some(1_000_000));
        assert_eq!(window("claude-sonnet-4-20250514"), Some(200_000));
        assert_eq!(
            window("some-proxy-model"),
            Some(crate::provider::DEFAULT_CONTEXT_WINDOW)
        );
    }

    #[test]
    fn missing_key_is_an_auth_error_naming_the_variable() {
        let error = AnthropicProvider::new(AnthropicConfig::new("m")).expect_err("no key");
        assert_eq!(error.kind, ProviderErrorKind::Auth);
        assert!(error.message.contains("ANTHROPIC_API_KEY"));
    }

    #[test]
    fn config_from_vars() {
        let config = AnthropicConfig::from_vars("m", |name| match name {
            "ANTHROPIC_API_KEY" => Some("k".into()),
            "ANTHROPIC_BASE_URL" => Some("".into()),
            _ => None,
        });
        assert_eq!(config.api_key.as_deref(), Some("k"));
        assert_eq!(config.base_url, None, "empty counts as unset");
        let provider = AnthropicProvider::new(config).expect("provider");
        assert_eq!(provider.base_url(), DEFAULT_BASE_URL);
        assert_eq!(
            provider.capabilities().context_window,
            crate::provider::DEFAULT_CONTEXT_WINDOW
        );
        assert!(provider.capabilities().thinking);
    }

    #[test]
    fn debug_does_not_leak_the_key() {
        let config = AnthropicConfig {
            api_key: Some("sk-secret".into()),
            ..AnthropicConfig::new("m")
        };
        assert!(!format!("{config:?}").contains("sk-secret"));
        let provider = AnthropicProvider::new(config).expect("provider");
        assert!(!format!("{provider:?}").contains("sk-secret"));
    }

    /// Runs canned SSE bytes through the decoder and assembler like the transport does.
    fn run(sse: &str) -> (Result<ProviderResponse, ProviderError>, Vec<StreamEvent>) {
        let events = Mutex::new(Vec::new());
        let sink = |event: StreamEvent| events.lock().expect("lock").push(event);
        let mut emitter = Emitter::new(&sink);
        let mut assembler = AnthropicAssembler::new("configured");
        let mut decoder = SseDecoder::new();
        let mut decoded = Vec::new();
        decoder.feed(sse.as_bytes(), &mut decoded).expect("decode");
        let mut result = Err(ProviderError::new(
            ProviderErrorKind::Provider,
            "t",
            "no terminal",
        ));
        for event in decoded {
            match assembler.on_event(event, &mut emitter) {
                Ok(Progress::Continue) => {}
                Ok(Progress::Done) => {
                    result = Ok(assembler.finish());
                    break;
                }
                Err(error) => {
                    result = Err(error);
                    break;
                }
            }
        }
        (result, events.into_inner().expect("lock"))
    }

    fn sse(events: &[Value]) -> String {
        events
            .iter()
            .map(|e| {
                format!(
                    "event: {}\ndata: {}\n\n",
                    e["type"].as_str().unwrap_or(""),
                    e
                )
            })
            .collect()
    }

    #[test]
    fn parses_a_full_stream_with_thinking_text_and_tools() {
        let stream = sse(&[
            json!({"type": "message_start", "message": {"id": "msg_1", "model": "claude-real", "usage": {"input_tokens": 10, "output_tokens": 1, "cache_read_input_tokens": 5, "cache_creation_input_tokens": 3}}}),
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "let me "}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "think"}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "SIG"}}),
            json!({"type": "content_block_stop", "index": 0}),
            json!({"type": "ping"}),
            json!({"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}}),
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "Hello"}}),
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": " world"}}),
            json!({"type": "content_block_stop", "index": 1}),
            json!({"type": "content_block_start", "index": 2, "content_block": {"type": "tool_use", "id": "toolu_A", "name": "Read", "input": {}}}),
            json!({"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": "{\"file_"}}),
            json!({"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": "path\":\"a\"}"}}),
            json!({"type": "content_block_stop", "index": 2}),
            json!({"type": "content_block_start", "index": 3, "content_block": {"type": "tool_use", "id": "toolu_B", "name": "Glob", "input": {}}}),
            json!({"type": "content_block_stop", "index": 3}),
            json!({"type": "content_block_start", "index": 4, "content_block": {"type": "server_tool_use", "id": "srv", "name": "web_search"}}),
            json!({"type": "content_block_delta", "index": 4, "delta": {"type": "input_json_delta", "partial_json": "{}"}}),
            json!({"type": "content_block_stop", "index": 4}),
            json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 42}}),
            json!({"type": "some_future_event"}),
            json!({"type": "message_stop"}),
        ]);
        let (result, events) = run(&stream);
        let response = result.expect("ok");
        assert_eq!(response.text, "Hello world");
        assert_eq!(
            response.thinking,
            vec![ThinkingBlock {
                thinking: "let me think".into(),
                signature: Some("SIG".into())
            }]
        );
        assert_eq!(
            response.tool_calls,
            vec![
                ProviderToolCall {
                    id: "toolu_A".into(),
                    name: "Read".into(),
                    arguments: "{\"file_path\":\"a\"}".into()
                },
                ProviderToolCall {
                    id: "toolu_B".into(),
                    name: "Glob".into(),
                    arguments: "{}".into()
                },
            ]
        );
        assert_eq!(response.stop_reason, StopReason::ToolUse);
        assert_eq!(response.model, "claude-real");
        assert_eq!(
            response.usage,
            Usage {
                input_tokens: 10,
                output_tokens: 42,
                cache_read_input_tokens: 5,
                cache_creation_input_tokens: 3
            }
        );
        assert_eq!(
            events,
            vec![
                StreamEvent::ThinkingDelta("let me ".into()),
                StreamEvent::ThinkingDelta("think".into()),
                StreamEvent::TextDelta("Hello".into()),
                StreamEvent::TextDelta(" world".into()),
                StreamEvent::ToolCallStart {
                    index: 0,
                    id: "toolu_A".into(),
                    name: "Read".into()
                },
                StreamEvent::ToolCallDelta {
                    index: 0,
                    partial_json: "{\"file_".into()
                },
                StreamEvent::ToolCallDelta {
                    index: 0,
                    partial_json: "path\":\"a\"}".into()
                },
                StreamEvent::ToolCallStart {
                    index: 1,
                    id: "toolu_B".into(),
                    name: "Glob".into()
                },
                // The server tool's call, once its input is whole.
                StreamEvent::ServerToolUse {
                    id: "srv".into(),
                    name: "web_search".into(),
                    input: json!({}),
                },
            ]
        );
    }

    #[test]
    fn stop_reasons() {
        for (wire, expected) in [
            ("end_turn", StopReason::EndTurn),
            ("max_tokens", StopReason::MaxTokens),
            ("stop_sequence", StopReason::StopSequence),
            ("refusal", StopReason::Refusal),
            ("pause_turn", StopReason::PauseTurn),
            ("model_context_window_exceeded", StopReason::MaxTokens),
            ("compaction", StopReason::Other),
        ] {
            let stream = sse(&[
                json!({"type": "message_delta", "delta": {"stop_reason": wire}}),
                json!({"type": "message_stop"}),
            ]);
            assert_eq!(run(&stream).0.expect("ok").stop_reason, expected, "{wire}");
        }
    }

    #[test]
    fn error_event_is_typed() {
        let stream = sse(&[
            json!({"type": "message_start", "message": {"model": "m"}}),
            json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
        ]);
        let error = run(&stream).0.expect_err("error");
        assert_eq!(error.kind, ProviderErrorKind::Overloaded);
        assert!(error.retryable);
        assert!(error.message.contains("Overloaded"));
    }

    #[test]
    fn malformed_event_is_a_provider_error() {
        let error = run("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\n\n")
            .0
            .expect_err("error");
        assert_eq!(error.kind, ProviderErrorKind::Provider);
        assert!(error.message.contains("malformed"));
        // A known event missing a required field is malformed too.
        let error = run("data: {\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"x\"}}\n\n")
            .0
            .expect_err("error");
        assert_eq!(error.kind, ProviderErrorKind::Provider);
    }

    #[test]
    fn abort_keeps_text_and_only_finished_tool_calls() {
        let mut assembler = AnthropicAssembler::new("m");
        let sink = |_: StreamEvent| {};
        let mut emitter = Emitter::new(&sink);
        let stream = sse(&[
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": "par"}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "tial"}}),
            json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "t1", "name": "A", "input": {}}}),
            json!({"type": "content_block_stop", "index": 1}),
            json!({"type": "content_block_start", "index": 2, "content_block": {"type": "tool_use", "id": "t2", "name": "B", "input": {}}}),
            json!({"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": "{\"x"}}),
        ]);
        let mut decoded = Vec::new();
        SseDecoder::new()
            .feed(stream.as_bytes(), &mut decoded)
            .expect("decode");
        for event in decoded {
            assembler.on_event(event, &mut emitter).expect("event");
        }
        assert!(emitter.emitted());
        let response = assembler.abort();
        assert_eq!(response.text, "partial");
        assert_eq!(response.stop_reason, StopReason::Aborted);
        assert_eq!(response.tool_calls.len(), 1);
        assert_eq!(response.tool_calls[0].id, "t1");
    }

    #[test]
    fn tool_input_given_whole_at_block_start_is_kept() {
        let stream = sse(&[
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "t", "name": "A", "input": {"q": 1}}}),
            json!({"type": "content_block_stop", "index": 0}),
            json!({"type": "message_stop"}),
        ]);
        let response = run(&stream).0.expect("ok");
        assert_eq!(response.tool_calls[0].arguments, "{\"q\":1}");
        assert_eq!(response.stop_reason, StopReason::ToolUse);
    }
}
