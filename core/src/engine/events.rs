//! What the engine reports while it runs: [`EngineEvent`]s for user interfaces and
//! [`ExecutionEvent`]s, the provider-neutral replay boundary events a session log records (spec
//! 001 "Replay Boundary Events"). Both serialize with `type` as the snake_case tag.
//!
//! Also owns the small dispatcher the loop uses to deliver them, so that building an execution
//! event (which clones history) only happens when someone listens.

use std::panic::AssertUnwindSafe;

use serde::{Deserialize, Serialize};

use super::config::{EventCallback, ExecutionEventCallback};
use crate::message::{Message, ProviderError};
use crate::provider::{ProviderRequest, ProviderResponse};
use crate::tools::ToolOutput;

/// Progress of a run as a user interface shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EngineEvent {
    /// A piece of answer text. From round 2 on, a `"\n\n"` delta comes first so that the text of
    /// successive rounds does not run together.
    TextDelta {
        /// The text.
        text: String,
    },
    /// A piece of the model's thinking.
    Thinking {
        /// The thinking text.
        text: String,
    },
    /// A tool the provider runs itself (Anthropic web search, web fetch, code execution) was
    /// called, with its whole input. The engine runs nothing: the result follows as
    /// `server_tool_result` in the same model call.
    ServerToolUse {
        /// The provider's id of the call (`srvtoolu_…`).
        id: String,
        /// The server tool (`web_search`, `web_fetch`, `bash_code_execution`, …).
        name: String,
        /// The call's input (`{"query": …}` for web search, `{"url": …}` for web fetch).
        input: serde_json::Value,
    },
    /// A server tool's result arrived (its content is kept with the assistant message).
    ServerToolResult {
        /// The `server_tool_use` id it answers.
        tool_use_id: String,
        /// The result block's type (`web_search_tool_result`, `web_fetch_tool_result`, …).
        result_type: String,
        /// True when the tool failed (`max_uses_exceeded`, `url_not_accessible`, …).
        is_error: bool,
    },
    /// A tool call is about to be handled. Every tool call of a round gets exactly one
    /// `tool_start` and one `tool_end`, including calls that end up not executed.
    ToolStart {
        /// The provider's tool-call id.
        tool_use_id: String,
        /// The requested tool name.
        name: String,
        /// The call's arguments.
        input: serde_json::Value,
    },
    /// A tool call has its result.
    ToolEnd {
        /// The provider's tool-call id.
        tool_use_id: String,
        /// The requested tool name.
        name: String,
        /// The result (before any context-budget replacement; see `tool_message_committed`).
        output: ToolOutput,
    },
    /// The provider will retry a failed attempt after a delay.
    ProviderRetry {
        /// The attempt that failed (1-based).
        attempt: u32,
        /// The most attempts that will be made.
        max_attempts: u32,
        /// Milliseconds until the next attempt.
        delay_ms: u64,
        /// Why the attempt failed.
        error: ProviderError,
    },
    /// An assistant message was added to the conversation.
    AssistantMessage {
        /// The message as stored.
        message: Message,
    },
}

/// How the calls of a tool batch were scheduled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BatchMode {
    /// Every executable call is read-only: they ran concurrently (bounded by `max_concurrency`).
    Parallel,
    /// Every executable call changes something (or concurrency is 1): they ran one at a time.
    Sequential,
    /// Both kinds: consecutive read-only calls ran together, each mutating call ran alone, in call
    /// order.
    Mixed,
}

/// The kind of change made to the conversation history.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HistoryMutation {
    /// A message was appended (the only mutation the loop makes: history is append-only).
    AppendMessage,
}

/// A replay boundary event: the data needed to reconstruct and re-play a run.
///
/// Every variant carries the run's `execution_id` and the `round` it belongs to (the user input is
/// round 0; a forced summary call is the round after the last one). A recorded stream of these
/// (see [`JsonlRecorder`](super::JsonlRecorder)) is what [`ReplayProvider`](crate::provider::replay::ReplayProvider) plays back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ExecutionEvent {
    /// Immediately before a model call: the full request.
    ProviderRequest {
        /// Run id.
        execution_id: String,
        /// Round number.
        round: u32,
        /// Provider name.
        provider: String,
        /// Model name.
        model: String,
        /// What was sent: `system`, `messages`, `tools`, `max_tokens`, … (shared with the call,
        /// not copied).
        #[serde(flatten)]
        request: std::sync::Arc<ProviderRequest>,
    },
    /// A text delta reached the engine (in order; `sequence` counts from 0 per call).
    ProviderStreamRawDelta {
        /// Run id.
        execution_id: String,
        /// Round number.
        round: u32,
        /// Position of the delta within the call.
        sequence: u64,
        /// The text.
        delta: String,
    },
    /// A model call returned: the normalized response.
    ProviderResponse {
        /// Run id.
        execution_id: String,
        /// Round number.
        round: u32,
        /// Provider name.
        provider: String,
        /// Number of tool calls in the response.
        tool_calls_count: usize,
        /// The response as the provider assembled it.
        response: ProviderResponse,
    },
    /// A model call failed (after the provider's own retries).
    ProviderError {
        /// Run id.
        execution_id: String,
        /// Round number.
        round: u32,
        /// Provider name.
        provider: String,
        /// The error.
        error: ProviderError,
    },
    /// A server-managed tool (Anthropic web search, web fetch, code execution) ran during a
    /// model call (spec 002 `server_tool`): its name and input (the search query, the URL).
    ServerTool {
        /// Run id.
        execution_id: String,
        /// Round number.
        round: u32,
        /// The provider's id of the call.
        tool_use_id: String,
        /// The server tool's name.
        name: String,
        /// Its input.
        input: serde_json::Value,
    },
    /// An assistant message was committed to history.
    AssistantMessageCommitted {
        /// Run id.
        execution_id: String,
        /// Round number.
        round: u32,
        /// The message.
        message: Message,
    },
    /// A round's tool calls are about to be handled.
    ToolBatchStarted {
        /// Run id.
        execution_id: String,
        /// Round number.
        round: u32,
        /// Batch id (unique within the run).
        batch_id: String,
        /// How the calls are scheduled.
        mode: BatchMode,
        /// Most calls running at once.
        max_concurrency: usize,
        /// Number of calls.
        request_count: usize,
        /// Requested tool names, in call order.
        tools: Vec<String>,
    },
    /// One tool call of the batch, as requested.
    ToolExecutionRequest {
        /// Run id.
        execution_id: String,
        /// Round number.
        round: u32,
        /// Batch id.
        batch_id: String,
        /// Position of the call in the batch.
        index: usize,
        /// Requested tool name.
        tool_name: String,
        /// Provider tool-call id.
        tool_call_id: String,
        /// The call's arguments.
        parameters: serde_json::Value,
    },
    /// One tool call has its result (emitted as calls finish, so possibly out of call order).
    ToolExecutionResult {
        /// Run id.
        execution_id: String,
        /// Round number.
        round: u32,
        /// Batch id.
        batch_id: String,
        /// Position of the call in the batch.
        index: usize,
        /// Requested tool name.
        tool_name: String,
        /// Provider tool-call id.
        tool_call_id: String,
        /// False when the call failed or was not executed.
        success: bool,
        /// The result.
        output: ToolOutput,
        /// Why a call was not executed or failed inside the engine: `error_code` (`unknown_tool`,
        /// `invalid_arguments`, `interrupted`, `tool_panicked`) and details such as
        /// `requested_tool` and `available_tools`.
        #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
        metadata: serde_json::Map<String, serde_json::Value>,
    },
    /// A tool message was committed to history (in call order).
    ToolMessageCommitted {
        /// Run id.
        execution_id: String,
        /// Round number.
        round: u32,
        /// Batch id.
        batch_id: String,
        /// Position of the call in the batch.
        index: usize,
        /// The message.
        message: Message,
    },
    /// A chat message was appended to the conversation.
    HistoryMutation {
        /// Run id.
        execution_id: String,
        /// Round number.
        round: u32,
        /// What changed.
        mutation: HistoryMutation,
        /// Position of the message among the conversation's chat messages.
        index: usize,
        /// The message.
        message: Message,
    },
}

impl ExecutionEvent {
    /// The snake_case event name (the `type` field of its JSON).
    pub fn kind(&self) -> &'static str {
        match self {
            ExecutionEvent::ProviderRequest { .. } => "provider_request",
            ExecutionEvent::ProviderStreamRawDelta { .. } => "provider_stream_raw_delta",
            ExecutionEvent::ProviderResponse { .. } => "provider_response",
            ExecutionEvent::ProviderError { .. } => "provider_error",
            ExecutionEvent::ServerTool { .. } => "server_tool",
            ExecutionEvent::AssistantMessageCommitted { .. } => "assistant_message_committed",
            ExecutionEvent::ToolBatchStarted { .. } => "tool_batch_started",
            ExecutionEvent::ToolExecutionRequest { .. } => "tool_execution_request",
            ExecutionEvent::ToolExecutionResult { .. } => "tool_execution_result",
            ExecutionEvent::ToolMessageCommitted { .. } => "tool_message_committed",
            ExecutionEvent::HistoryMutation { .. } => "history_mutation",
        }
    }
}

/// Delivers events to the run's callbacks.
///
/// Events are built by a closure so that a run without a listener never clones messages for
/// them. A panicking callback is contained here: host code must not be able to tear
/// down the loop halfway through a commit.
pub(crate) struct Emitter {
    on_event: Option<EventCallback>,
    on_execution_event: Option<ExecutionEventCallback>,
}

impl Emitter {
    pub(crate) fn new(
        on_event: Option<EventCallback>,
        on_execution_event: Option<ExecutionEventCallback>,
    ) -> Self {
        Emitter {
            on_event,
            on_execution_event,
        }
    }

    /// Builds and sends a UI event, if anyone listens.
    pub(crate) fn event(&self, build: impl FnOnce() -> EngineEvent) {
        if let Some(callback) = &self.on_event {
            let event = build();
            let _ = std::panic::catch_unwind(AssertUnwindSafe(|| callback(event)));
        }
    }

    /// Builds and sends an execution event, if anyone listens.
    pub(crate) fn execution(&self, build: impl FnOnce() -> ExecutionEvent) {
        if let Some(callback) = &self.on_execution_event {
            let event = build();
            let _ = std::panic::catch_unwind(AssertUnwindSafe(|| callback(event)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{ContentBlock, MessageState, ProviderErrorKind, Usage};
    use crate::provider::{ProviderToolCall, StopReason, ToolDefinition};

    fn round_trip(event: &ExecutionEvent) -> ExecutionEvent {
        let line = serde_json::to_string(event).unwrap_or_default();
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"))
    }

    #[test]
    fn execution_events_round_trip_through_json() {
        let request = ExecutionEvent::ProviderRequest {
            execution_id: "e".into(),
            round: 1,
            provider: "scripted".into(),
            model: "m".into(),
            request: std::sync::Arc::new(ProviderRequest {
                system: Some("sys".into()),
                messages: vec![Message::user("hi").into()],
                tools: vec![ToolDefinition {
                    name: "t".into(),
                    description: "d".into(),
                    input_schema: serde_json::json!({"type": "object"}),
                }],
                max_tokens: Some(10),
                temperature: Some(0.5),
                thinking: None,
                tool_choice: Some(crate::provider::ToolChoice::None),
                output_schema: None,
            }),
        };
        assert_eq!(round_trip(&request), request);
        let json = serde_json::to_value(&request).unwrap_or_default();
        assert_eq!(json["type"], "provider_request");
        assert_eq!(json["messages"][0]["role"], "user");
        assert_eq!(json["tools"][0]["name"], "t");

        let response = ExecutionEvent::ProviderResponse {
            execution_id: "e".into(),
            round: 1,
            provider: "scripted".into(),
            tool_calls_count: 1,
            response: ProviderResponse {
                text: "x".into(),
                thinking: Vec::new(),
                tool_calls: vec![ProviderToolCall {
                    id: "call_0".into(),
                    name: "t".into(),
                    arguments: "{}".into(),
                }],
                stop_reason: StopReason::ToolUse,
                usage: Usage {
                    input_tokens: 3,
                    output_tokens: 4,
                    ..Usage::default()
                },
                model: "m".into(),
                ..ProviderResponse::default()
            },
        };
        assert_eq!(round_trip(&response), response);

        let error = ExecutionEvent::ProviderError {
            execution_id: "e".into(),
            round: 2,
            provider: "p".into(),
            error: ProviderError::new(ProviderErrorKind::RateLimit, "p", "slow down")
                .with_retry_after(Some(std::time::Duration::from_millis(1500))),
        };
        assert_eq!(round_trip(&error), error);

        let committed = ExecutionEvent::AssistantMessageCommitted {
            execution_id: "e".into(),
            round: 1,
            message: Message::assistant(vec![ContentBlock::text("a")], MessageState::Interrupted),
        };
        assert_eq!(round_trip(&committed), committed);
        assert_eq!(committed.kind(), "assistant_message_committed");
    }

    #[test]
    fn engine_events_are_tagged_snake_case() {
        let json =
            serde_json::to_value(EngineEvent::TextDelta { text: "a".into() }).unwrap_or_default();
        assert_eq!(json, serde_json::json!({"type": "text_delta", "text": "a"}));
        let json = serde_json::to_value(EngineEvent::ProviderRetry {
            attempt: 1,
            max_attempts: 3,
            delay_ms: 10,
            error: ProviderError::new(ProviderErrorKind::Overloaded, "p", "busy"),
        })
        .unwrap_or_default();
        assert_eq!(json["type"], "provider_retry");
        assert_eq!(json["error"]["kind"], "overloaded");
    }

    #[test]
    fn a_panicking_callback_does_not_escape() {
        let emitter = Emitter::new(
            Some(std::sync::Arc::new(|_| panic!("host bug"))),
            Some(std::sync::Arc::new(|_| panic!("host bug"))),
        );
        emitter.event(|| EngineEvent::TextDelta { text: "a".into() });
        emitter.execution(|| ExecutionEvent::ProviderStreamRawDelta {
            execution_id: "e".into(),
            round: 1,
            sequence: 0,
            delta: "a".into(),
        });
    }
}
