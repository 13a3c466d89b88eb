//! [`ScriptedProvider`]: a model that plays deterministic turns given as data, for tests, demos
//! and offline examples. Each model call consumes the next [`ScriptedTurn`] and streams it
//! (thinking, text chunks, tool calls) exactly as a real provider would, including cancellation,
//! retry notices and failures. It also records every request it received, so a test can assert
//! exactly what the model was sent.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use super::{
    Provider, ProviderCapabilities, ProviderRequest, ProviderResponse, ProviderToolCall, Refusal,
    StopReason, StreamEvent, StreamSink, ThinkingBlock,
};
use crate::message::{ProviderError, ProviderErrorKind, Usage};

/// The provider and model name the scripted provider reports.
pub const SCRIPTED_NAME: &str = "scripted";

/// The answer text of a turn: one string, or the chunks it streams as.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ScriptedText {
    /// The whole text, streamed as one delta.
    Whole(String),
    /// The text as separate deltas, in order.
    Chunks(Vec<String>),
}

impl Default for ScriptedText {
    fn default() -> Self {
        ScriptedText::Chunks(Vec::new())
    }
}

impl ScriptedText {
    /// The deltas to stream.
    pub fn chunks(&self) -> &[String] {
        match self {
            ScriptedText::Whole(text) => std::slice::from_ref(text),
            ScriptedText::Chunks(chunks) => chunks,
        }
    }
}

/// A tool call the scripted model makes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedToolCall {
    /// Tool-call id (sent verbatim; ids may repeat across turns, as some providers do).
    pub id: String,
    /// Tool name (need not be registered).
    pub name: String,
    /// Arguments as JSON; `{}` when neither this nor `raw_arguments` is given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<serde_json::Value>,
    /// Arguments as raw text, sent as-is (use it to send invalid JSON). Wins over `input`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_arguments: Option<String>,
}

impl ScriptedToolCall {
    fn arguments(&self) -> String {
        match (&self.raw_arguments, &self.input) {
            (Some(raw), _) => raw.clone(),
            (None, Some(input)) => input.to_string(),
            (None, None) => "{}".to_string(),
        }
    }
}

/// A failure the scripted provider reports.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedError {
    /// The failure class.
    pub kind: ProviderErrorKind,
    /// The message.
    pub message: String,
}

impl ScriptedError {
    fn to_provider_error(&self) -> ProviderError {
        ProviderError::new(self.kind, SCRIPTED_NAME, self.message.clone())
    }
}

/// A failed attempt the scripted provider reports (as [`StreamEvent::Retry`]) and then waits out
/// before streaming the turn, like a real provider's retry with backoff.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedRetry {
    /// The backoff to wait, in milliseconds (cancellation ends the wait).
    #[serde(default)]
    pub delay_ms: u64,
    /// Why the attempt failed.
    pub error: ScriptedError,
}

/// One model call's worth of output.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedTurn {
    /// Answer text: a string or an array of chunks.
    #[serde(default)]
    pub text: ScriptedText,
    /// Thinking text, streamed before the answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking: Option<String>,
    /// Tool calls, streamed after the text.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ScriptedToolCall>,
    /// Reported usage (zeros when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// Reported stop reason; `tool_use` when there are tool calls, else `end_turn`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<StopReason>,
    /// Wait before each text chunk and each tool call, in milliseconds.
    #[serde(default)]
    pub delay_ms_per_chunk: u64,
    /// Failed attempts reported (and waited out) before the turn streams.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub retries: Vec<ScriptedRetry>,
    /// When set, the call fails with this error after streaming the text (a mid-stream failure).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ScriptedError>,
    /// The model name reported in the response (`scripted` when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Makes the turn a refusal (stop reason `refusal` unless `stop_reason` says otherwise):
    /// `{"text"?, "category"?, "explanation"?}`; an empty `text` means the turn's text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refusal: Option<Refusal>,
}

impl ScriptedTurn {
    /// A turn answering `text` in one delta.
    pub fn text(text: impl Into<String>) -> Self {
        ScriptedTurn {
            text: ScriptedText::Whole(text.into()),
            ..Self::default()
        }
    }

    /// A turn answering with these deltas.
    pub fn chunks<S: Into<String>>(chunks: impl IntoIterator<Item = S>) -> Self {
        ScriptedTurn {
            text: ScriptedText::Chunks(chunks.into_iter().map(Into::into).collect()),
            ..Self::default()
        }
    }

    /// A turn that only calls one tool.
    pub fn tool_call(
        id: impl Into<String>,
        name: impl Into<String>,
        input: serde_json::Value,
    ) -> Self {
        Self::default().with_tool_call(id, name, input)
    }

    /// Adds a tool call with JSON arguments.
    pub fn with_tool_call(
        mut self,
        id: impl Into<String>,
        name: impl Into<String>,
        input: serde_json::Value,
    ) -> Self {
        self.tool_calls.push(ScriptedToolCall {
            id: id.into(),
            name: name.into(),
            input: Some(input),
            raw_arguments: None,
        });
        self
    }

    /// Adds a tool call whose arguments are sent as this raw text (may be invalid JSON).
    pub fn with_raw_tool_call(
        mut self,
        id: impl Into<String>,
        name: impl Into<String>,
        raw_arguments: impl Into<String>,
    ) -> Self {
        self.tool_calls.push(ScriptedToolCall {
            id: id.into(),
            name: name.into(),
            input: None,
            raw_arguments: Some(raw_arguments.into()),
        });
        self
    }

    /// Sets the thinking text.
    pub fn with_thinking(mut self, thinking: impl Into<String>) -> Self {
        self.thinking = Some(thinking.into());
        self
    }

    /// Sets the reported usage.
    pub fn with_usage(mut self, input_tokens: u64, output_tokens: u64) -> Self {
        self.usage = Some(Usage {
            input_tokens,
            output_tokens,
            ..Usage::default()
        });
        self
    }

    /// Sets the reported stop reason.
    pub fn with_stop_reason(mut self, stop_reason: StopReason) -> Self {
        self.stop_reason = Some(stop_reason);
        self
    }

    /// Waits `delay_ms` before each chunk and tool call.
    pub fn with_delay_ms(mut self, delay_ms: u64) -> Self {
        self.delay_ms_per_chunk = delay_ms;
        self
    }

    /// Reports a failed attempt and waits `delay_ms` before streaming.
    pub fn with_retry(
        mut self,
        delay_ms: u64,
        kind: ProviderErrorKind,
        message: impl Into<String>,
    ) -> Self {
        self.retries.push(ScriptedRetry {
            delay_ms,
            error: ScriptedError {
                kind,
                message: message.into(),
            },
        });
        self
    }

    /// Fails the call with this error after the text has streamed.
    pub fn with_error(mut self, kind: ProviderErrorKind, message: impl Into<String>) -> Self {
        self.error = Some(ScriptedError {
            kind,
            message: message.into(),
        });
        self
    }
}

/// The script as JSON: either an array of turns or `{"turns": [...]}`.
#[derive(Deserialize)]
#[serde(untagged)]
enum Script {
    Turns(Vec<ScriptedTurn>),
    Object { turns: Vec<ScriptedTurn> },
}

/// A provider that plays [`ScriptedTurn`]s in order, one per model call.
#[derive(Debug)]
pub struct ScriptedProvider {
    turns: Vec<ScriptedTurn>,
    next: AtomicUsize,
    requests: Mutex<Vec<ProviderRequest>>,
    capabilities: ProviderCapabilities,
}

impl ScriptedProvider {
    /// A provider that plays `turns`.
    pub fn new(turns: Vec<ScriptedTurn>) -> Self {
        ScriptedProvider {
            turns,
            next: AtomicUsize::new(0),
            requests: Mutex::new(Vec::new()),
            capabilities: ProviderCapabilities {
                thinking: true,
                ..ProviderCapabilities::default()
            },
        }
    }

    /// Reads a script: a JSON array of turns, or an object with a `turns` array.
    pub fn from_json(json: &str) -> Result<Self, serde_json::Error> {
        let turns = match serde_json::from_str::<Script>(json) {
            Ok(Script::Turns(turns) | Script::Object { turns }) => turns,
            // Untagged errors say nothing useful; parse as a plain array to get the real cause.
            Err(_) => serde_json::from_str::<Vec<ScriptedTurn>>(json)?,
        };
        Ok(Self::new(turns))
    }

    /// Reports `context_window` tokens as the model's context window.
    pub fn with_context_window(mut self, context_window: u64) -> Self {
        self.capabilities.context_window = context_window;
        self
    }

    /// Every request received so far, in order (including one that found the script exhausted).
    pub fn requests(&self) -> Vec<ProviderRequest> {
        self.requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Turns not played yet.
    pub fn remaining(&self) -> usize {
        self.turns
            .len()
            .saturating_sub(self.next.load(Ordering::SeqCst))
    }
}

/// Waits `delay_ms`; false when cancelled first.
async fn wait(delay_ms: u64, cancel: &CancellationToken) -> bool {
    if cancel.is_cancelled() {
        return false;
    }
    if delay_ms == 0 {
        return true;
    }
    tokio::select! {
        () = cancel.cancelled() => false,
        () = tokio::time::sleep(Duration::from_millis(delay_ms)) => true,
    }
}

#[async_trait]
impl Provider for ScriptedProvider {
    fn name(&self) -> &str {
        SCRIPTED_NAME
    }

    fn model(&self) -> &str {
        SCRIPTED_NAME
    }

    fn capabilities(&self) -> ProviderCapabilities {
        self.capabilities
    }

    async fn stream(
        &self,
        request: &ProviderRequest,
        on_event: &StreamSink<'_>,
        cancel: &CancellationToken,
    ) -> Result<ProviderResponse, ProviderError> {
        self.requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(request.clone());
        let index = self.next.fetch_add(1, Ordering::SeqCst);
        let Some(turn) = self.turns.get(index) else {
            return Err(ProviderError::new(
                ProviderErrorKind::Provider,
                SCRIPTED_NAME,
                format!(
                    "scripted provider has no more turns ({} were given); add a turn for every model call the run makes",
                    self.turns.len()
                ),
            ));
        };

        let mut response = ProviderResponse {
            model: turn.model.clone().unwrap_or_else(|| SCRIPTED_NAME.into()),
            usage: turn.usage.unwrap_or_default(),
            ..ProviderResponse::default()
        };
        let aborted = |mut response: ProviderResponse| {
            response.stop_reason = StopReason::Aborted;
            Ok(response)
        };

        let max_attempts = u32::try_from(turn.retries.len() + 1).unwrap_or(u32::MAX);
        for (attempt, retry) in (1..).zip(&turn.retries) {
            on_event(StreamEvent::Retry {
                attempt,
                max_attempts,
                delay: Duration::from_millis(retry.delay_ms),
                error: retry.error.to_provider_error(),
            });
            if !wait(retry.delay_ms, cancel).await {
                return aborted(response);
            }
        }

        if let Some(thinking) = &turn.thinking {
            if cancel.is_cancelled() {
                return aborted(response);
            }
            on_event(StreamEvent::ThinkingDelta(thinking.clone()));
            response.thinking.push(ThinkingBlock {
                thinking: thinking.clone(),
                signature: None,
            });
        }
        for chunk in turn.text.chunks() {
            if !wait(turn.delay_ms_per_chunk, cancel).await {
                return aborted(response);
            }
            on_event(StreamEvent::TextDelta(chunk.clone()));
            response.text.push_str(chunk);
        }
        if let Some(error) = &turn.error {
            return Err(error.to_provider_error());
        }
        for (index, call) in turn.tool_calls.iter().enumerate() {
            if !wait(turn.delay_ms_per_chunk, cancel).await {
                return aborted(response);
            }
            let arguments = call.arguments();
            on_event(StreamEvent::ToolCallStart {
                index,
                id: call.id.clone(),
                name: call.name.clone(),
            });
            on_event(StreamEvent::ToolCallDelta {
                index,
                partial_json: arguments.clone(),
            });
            response.tool_calls.push(ProviderToolCall {
                id: call.id.clone(),
                name: call.name.clone(),
                arguments,
            });
        }
        response.stop_reason = turn.stop_reason.unwrap_or(if turn.refusal.is_some() {
            StopReason::Refusal
        } else if response.tool_calls.is_empty() {
            StopReason::EndTurn
        } else {
            StopReason::ToolUse
        });
        if response.stop_reason == StopReason::Refusal {
            let mut refusal = turn.refusal.clone().unwrap_or_default();
            if refusal.text.is_empty() {
                refusal.text = response.text.clone();
            }
            response.refusal = Some(refusal);
        }
        Ok(response)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn plays_turns_in_order_and_records_requests() {
        let provider = ScriptedProvider::new(vec![
            ScriptedTurn::chunks(["Hel", "lo"]).with_usage(5, 2),
            ScriptedTurn::tool_call("call_0", "Read", serde_json::json!({"file_path": "a"})),
        ]);
        let events = Mutex::new(Vec::new());
        let sink = |event| {
            events
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(event)
        };
        let cancel = CancellationToken::new();
        let request = ProviderRequest::default();
        let first = provider.stream(&request, &sink, &cancel).await;
        let first = first.unwrap_or_default();
        assert_eq!(first.text, "Hello");
        assert_eq!(first.stop_reason, StopReason::EndTurn);
        assert_eq!(first.usage.input_tokens, 5);
        let second = provider
            .stream(&request, &sink, &cancel)
            .await
            .unwrap_or_default();
        assert_eq!(second.stop_reason, StopReason::ToolUse);
        assert_eq!(second.tool_calls[0].arguments, r#"{"file_path":"a"}"#);
        let third = provider.stream(&request, &sink, &cancel).await;
        let message = third.err().map(|e| e.message).unwrap_or_default();
        assert!(
            message.starts_with("scripted provider has no more turns (2 were given)"),
            "{message}"
        );
        assert_eq!(provider.requests().len(), 3);
        let events = events.into_inner().unwrap_or_default();
        assert_eq!(events[0], StreamEvent::TextDelta("Hel".into()));
    }

    #[tokio::test]
    async fn cancellation_returns_the_partial_text_as_aborted() {
        let provider = ScriptedProvider::new(vec![ScriptedTurn::chunks(["a", "b", "c"])]);
        let cancel = CancellationToken::new();
        let sink = |event: StreamEvent| {
            if event == StreamEvent::TextDelta("b".into()) {
                cancel.cancel();
            }
        };
        let response = provider
            .stream(&ProviderRequest::default(), &sink, &cancel)
            .await
            .unwrap_or_default();
        assert_eq!(response.text, "ab");
        assert_eq!(response.stop_reason, StopReason::Aborted);
    }

    #[test]
    fn scripts_parse_from_json() {
        let provider = ScriptedProvider::from_json(
            r#"{"turns": [
                {"text": ["a", "b"], "usage": {"input_tokens": 1, "output_tokens": 2}},
                {"text": "x", "tool_calls": [{"id": "c", "name": "t", "raw_arguments": "{oops"}],
                 "retries": [{"delay_ms": 5, "error": {"kind": "rate_limit", "message": "slow"}}]}
            ]}"#,
        );
        let provider = provider.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(provider.remaining(), 2);
        assert_eq!(provider.turns[0].text.chunks(), ["a", "b"]);
        assert_eq!(provider.turns[1].tool_calls[0].arguments(), "{oops");
        let bad = ScriptedProvider::from_json(r#"[{"text": 5}]"#);
        assert!(bad.is_err());
        assert!(ScriptedProvider::from_json(r#"[{"text": "ok"}]"#).is_ok());
    }
}
