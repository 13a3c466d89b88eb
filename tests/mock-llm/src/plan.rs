//! Turning one script turn into a response plan for one endpoint: the list of SSE events to send
//! (with any fault spliced in), how the stream ends, and how the bytes are paced and framed.
//! Provider-neutral parts (stop-reason translation, error message defaults) live here too.

use std::time::Duration;

use serde::Serialize;

use crate::cache::InputUsage;
use crate::script::{CloseMode, Fault, SseOptions, Turn, Usage};
use crate::sse::Event;
use crate::{anthropic, gemini, openai, responses};

/// Which wire format a request asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dialect {
    /// `POST /v1/messages`.
    Anthropic,
    /// `POST /v1/chat/completions` or `POST /chat/completions`.
    OpenAi,
    /// `POST /v1beta/models/{model}:streamGenerateContent?alt=sse`.
    Gemini,
    /// `POST /v1/responses` or `POST /responses` (the OpenAI Responses API), and DashScope's
    /// compatible Responses API (`POST /api/v2/apps/protocols/compatible-mode/v1/responses`).
    Responses,
}

/// Per-request facts the events depend on.
pub(crate) struct Ctx<'a> {
    /// The request's `model`, echoed back.
    pub model: &'a str,
    /// Request sequence number, used in response ids.
    pub seq: u64,
    /// Index of the turn being served, used in default tool-call ids.
    pub turn_index: usize,
    /// Input usage computed from the request (script `prompt_cache`), replacing the turn's.
    pub input_usage: Option<InputUsage>,
    /// OpenAI `stream_options.include_usage`.
    pub include_usage: bool,
    /// Unix time for OpenAI's `created`.
    pub created: u64,
    /// Responses: the types of the hosted tools the request declares (`web_search`, …).
    pub hosted_tools: Vec<String>,
    /// Responses at DashScope's path: usage reports `x_tools` call counts.
    pub dashscope: bool,
}

impl Ctx<'_> {
    /// The usage to report for `turn`: the script's, with the input side computed from the
    /// request when the script simulates the prompt cache.
    pub fn usage(&self, turn: &Turn) -> Usage {
        let mut usage = turn.usage.unwrap_or_default();
        if let Some(input) = self.input_usage {
            usage.input_tokens = input.input_tokens;
            usage.cache_read_input_tokens = input.cache_read_input_tokens;
            usage.cache_creation_input_tokens = input.cache_creation_input_tokens;
        }
        usage
    }
}

/// How the response body ends after the last planned event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum End {
    /// The terminating chunk is sent: a well-formed end of body.
    Clean,
    /// The connection is dropped without the terminating chunk, after an optional silence.
    Abort {
        /// Silence before dropping.
        stall: Option<Duration>,
        /// Drop with a TCP reset rather than an orderly close.
        rst: bool,
    },
}

/// Everything the streaming writer needs for one response.
pub(crate) struct Plan {
    pub events: Vec<Event>,
    pub end: End,
    pub delay: Duration,
    pub split_bytes: usize,
    pub sse: SseOptions,
    /// Frame events as AWS event-stream messages (Bedrock) instead of SSE.
    pub eventstream: bool,
}

/// Builds the plan for a streaming turn (a `status` fault never gets here).
pub(crate) fn plan(dialect: Dialect, turn: &Turn, ctx: &Ctx<'_>) -> Plan {
    let include_terminal = !matches!(turn.fault, Some(Fault::MissingTerminal {}));
    let build = |include_terminal| match dialect {
        Dialect::Anthropic => anthropic::events(turn, ctx, include_terminal),
        Dialect::OpenAi => openai::events(turn, ctx, include_terminal),
        Dialect::Gemini => gemini::events(turn, ctx, include_terminal),
        Dialect::Responses => responses::events(turn, ctx, include_terminal),
    };
    let mut events = match &turn.raw_body {
        Some(body) => vec![Event::raw(body.clone())],
        None => build(include_terminal),
    };
    let mut end = End::Clean;
    match &turn.fault {
        None | Some(Fault::MissingTerminal {}) | Some(Fault::Status { .. }) => {}
        Some(Fault::Splice { after_events }) => {
            events.truncate(*after_events);
            events.extend(build(true));
        }
        Some(Fault::NoDone {}) => {
            if dialect == Dialect::OpenAi {
                events.pop(); // `data: [DONE]` is always last
            }
        }
        Some(Fault::Reset {
            after_events,
            close,
        }) => {
            events.truncate(*after_events);
            end = End::Abort {
                stall: None,
                rst: *close == CloseMode::Rst,
            };
        }
        Some(Fault::Stall { after_events, ms }) => {
            events.truncate(*after_events);
            end = End::Abort {
                stall: Some(Duration::from_millis(*ms)),
                rst: false,
            };
        }
        Some(Fault::Malformed { after_events }) => {
            let bad = match dialect {
                Dialect::Anthropic => anthropic::malformed(),
                Dialect::OpenAi => openai::malformed(),
                Dialect::Gemini => gemini::malformed(),
                Dialect::Responses => responses::malformed(),
            };
            events.insert((*after_events).min(events.len()), bad);
        }
        Some(Fault::Oversized {
            bytes,
            after_events,
        }) => {
            let big = match dialect {
                Dialect::Anthropic => anthropic::oversized(*bytes),
                Dialect::OpenAi => openai::oversized(ctx, *bytes),
                Dialect::Gemini => gemini::oversized(ctx, *bytes),
                Dialect::Responses => responses::oversized(ctx, *bytes),
            };
            events.insert((*after_events).min(events.len()), big);
        }
        Some(Fault::StreamError {
            after_events,
            error_type,
            message,
            failed,
        }) => {
            events.truncate(*after_events);
            let (t, m) = (error_type.as_deref(), message.as_deref());
            events.push(match dialect {
                Dialect::Anthropic => anthropic::stream_error(t, m),
                Dialect::OpenAi => openai::stream_error(t, m),
                Dialect::Gemini => gemini::stream_error(t, m),
                Dialect::Responses => responses::stream_error(ctx, t, m, *failed),
            });
        }
    }
    Plan {
        events,
        end,
        delay: Duration::from_millis(turn.chunk_delay_ms),
        split_bytes: turn.split_bytes,
        sse: turn.sse,
        eventstream: false,
    }
}

/// The HTTP error body for `dialect`.
pub(crate) fn error_body(
    dialect: Dialect,
    status: u16,
    error_type: Option<&str>,
    message: Option<&str>,
    code: Option<&str>,
) -> String {
    match dialect {
        Dialect::Anthropic => anthropic::error_body(status, error_type, message),
        Dialect::OpenAi | Dialect::Responses => {
            openai::error_body(status, error_type, message, code)
        }
        Dialect::Gemini => gemini::error_body(status, error_type, message),
    }
}

/// The Anthropic `stop_reason`: the script's (OpenAI spellings translated) or the default.
pub(crate) fn anthropic_stop_reason(turn: &Turn) -> String {
    match turn.stop_reason.as_deref() {
        Some("stop") => "end_turn".into(),
        Some("tool_calls") => "tool_use".into(),
        Some("length") => "max_tokens".into(),
        Some("content_filter") => "refusal".into(),
        Some(other) => other.into(),
        None if turn.refusal.is_some() => "refusal".into(),
        None if turn.tool_calls.is_empty() => "end_turn".into(),
        None => "tool_use".into(),
    }
}

/// The OpenAI `finish_reason`: the script's (Anthropic spellings translated) or the default.
pub(crate) fn openai_finish_reason(turn: &Turn) -> String {
    match turn.stop_reason.as_deref() {
        Some("end_turn") | Some("stop_sequence") => "stop".into(),
        Some("tool_use") => "tool_calls".into(),
        Some("max_tokens") => "length".into(),
        Some("refusal") => "content_filter".into(),
        Some(other) => other.into(),
        None if turn.tool_calls.is_empty() => "stop".into(),
        None => "tool_calls".into(),
    }
}

/// Default error message for an HTTP status.
pub(crate) fn default_error_message(status: u16) -> &'static str {
    match status {
        400 => "Invalid request",
        401 => "Invalid API key",
        403 => "Permission denied",
        404 => "Not found",
        413 => "Request too large",
        429 => "Rate limit exceeded",
        500 => "Internal server error",
        502 => "Bad gateway",
        503 => "Service unavailable",
        529 => "Overloaded",
        _ => "Error",
    }
}

/// Serializes wire structs. They contain no maps with non-string keys, so this cannot fail in
/// practice; if it ever did, the client gets a JSON payload naming the problem, not a panic.
pub(crate) fn to_json<T: Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_else(|e| {
        let msg = serde_json::Value::String(format!("mock-llm serialization error: {e}"));
        format!("{{\"mock_llm_error\":{msg}}}")
    })
}

/// Builds a payload of exactly `bytes` bytes by sizing a run of `x` passed to `make`
/// (`make` must embed it verbatim in a JSON string). Smaller targets give the minimal payload.
pub(crate) fn padded(bytes: usize, make: impl Fn(String) -> String) -> String {
    let overhead = make(String::new()).len();
    make("x".repeat(bytes.saturating_sub(overhead)))
}
