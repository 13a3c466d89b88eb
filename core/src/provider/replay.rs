//! [`ReplayProvider`]: plays back the model side of a recorded run, offline.
//!
//! The input is a JSON Lines log of execution events, as written by
//! the engine's `JsonlRecorder`: one event object per line, tagged by `type`.
//! Each `provider_response` line becomes one model call, in order (its text streamed with the
//! recorded deltas when the log has them); a `provider_error` line replays that failure. Other
//! event types are skipped, so a full session log works too. A last line without its newline
//! that is not valid JSON is the torn write of a process that crashed, and is ignored. Tools are not replayed: they run
//! for real, which is what makes a replay a regression test of everything but the model.
//!
//! This module reads the log's JSON shape rather than the engine's event types, so the provider
//! layer does not depend on the engine above it.

use std::collections::HashMap;
use std::fmt;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::{
    Provider, ProviderCapabilities, ProviderRequest, ProviderResponse, StopReason, StreamEvent,
    StreamSink,
};
use crate::message::{ProviderError, ProviderErrorKind};

/// The provider name the replay provider reports.
pub const REPLAY_NAME: &str = "replay";

/// A replay log that could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplayError {
    /// The 1-based line the problem is on, when it is about one line.
    pub line: Option<usize>,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for ReplayError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "replay log line {line}: {}", self.message),
            None => write!(f, "replay log: {}", self.message),
        }
    }
}

impl std::error::Error for ReplayError {}

/// One recorded model call.
#[derive(Debug, Clone)]
enum RecordedCall {
    Response {
        // Boxed: a response is far larger than an error.
        response: Box<ProviderResponse>,
        /// The text deltas as they were streamed (empty: stream the text as one delta).
        deltas: Vec<String>,
    },
    Error(ProviderError),
}

/// A provider that answers with the model calls of a recorded run, in order.
#[derive(Debug)]
pub struct ReplayProvider {
    calls: Vec<RecordedCall>,
    next: AtomicUsize,
    model: String,
    context_window: Option<u64>,
}

impl ReplayProvider {
    /// Reads the log at `path`: a regular file of at most 256 MiB
    /// ([`crate::files::REPLAY_LOG_FILE`]); anything else is an error naming it.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, ReplayError> {
        let path = path.as_ref();
        let text = crate::files::read_regular_text(path, &crate::files::REPLAY_LOG_FILE).map_err(
            |error| ReplayError {
                line: None,
                message: error.to_string(),
            },
        )?;
        Self::from_jsonl_str(&text)
    }

    /// Reads a log held in memory.
    pub fn from_jsonl_str(text: &str) -> Result<Self, ReplayError> {
        let mut calls = Vec::new();
        // Deltas seen so far per (execution id, round), attached to that round's response.
        let mut deltas: HashMap<(String, u64), Vec<String>> = HashMap::new();
        let line_count = text.lines().count();
        let torn_tail = !text.is_empty() && !text.ends_with('\n');
        for (index, line) in text.lines().enumerate() {
            let line_number = index + 1;
            let line = line.trim();
            if line.is_empty() {
                continue;
            }
            let bad = |message: String| ReplayError {
                line: Some(line_number),
                message,
            };
            let event: Value = match serde_json::from_str(line) {
                Ok(event) => event,
                // A crash mid-write leaves the last line cut short: what it held is lost.
                Err(_) if torn_tail && line_number == line_count => break,
                Err(error) => return Err(bad(format!("not valid JSON ({error})"))),
            };
            let Some(kind) = event.get("type").and_then(Value::as_str) else {
                return Err(bad(
                    "not an execution event (no \"type\" field); is this a log written by JsonlRecorder?"
                        .into(),
                ));
            };
            let key = || {
                (
                    event
                        .get("execution_id")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string(),
                    event
                        .get("round")
                        .and_then(Value::as_u64)
                        .unwrap_or_default(),
                )
            };
            match kind {
                "provider_request" => {
                    deltas.remove(&key());
                }
                "provider_stream_raw_delta" => {
                    let delta = event.get("delta").and_then(Value::as_str).ok_or_else(|| {
                        bad("provider_stream_raw_delta has no \"delta\" text".into())
                    })?;
                    deltas.entry(key()).or_default().push(delta.to_string());
                }
                "provider_response" => {
                    let response = event.get("response").cloned().ok_or_else(|| {
                        bad("provider_response has no \"response\" object".into())
                    })?;
                    let response: ProviderResponse = serde_json::from_value(response)
                        .map_err(|error| bad(format!("unreadable provider_response ({error})")))?;
                    let streamed = deltas.remove(&key()).unwrap_or_default();
                    // Use the recorded deltas only when they add up to the recorded text.
                    let deltas = if streamed.concat() == response.text {
                        streamed
                    } else {
                        Vec::new()
                    };
                    calls.push(RecordedCall::Response {
                        response: Box::new(response),
                        deltas,
                    });
                }
                "provider_error" => {
                    let error = event
                        .get("error")
                        .cloned()
                        .ok_or_else(|| bad("provider_error has no \"error\" object".into()))?;
                    let error: ProviderError = serde_json::from_value(error)
                        .map_err(|error| bad(format!("unreadable provider_error ({error})")))?;
                    calls.push(RecordedCall::Error(error));
                }
                _ => {}
            }
        }
        if calls.is_empty() {
            return Err(ReplayError {
                line: None,
                message:
                    "no provider_response or provider_error events, so there is nothing to replay"
                        .into(),
            });
        }
        let model = calls
            .iter()
            .find_map(|call| match call {
                RecordedCall::Response { response, .. } if !response.model.is_empty() => {
                    Some(response.model.clone())
                }
                _ => None,
            })
            .unwrap_or_else(|| REPLAY_NAME.to_string());
        Ok(ReplayProvider {
            calls,
            next: AtomicUsize::new(0),
            model,
            context_window: None,
        })
    }

    /// Reports `context_window` tokens as the model's context window (match the recorded run's
    /// provider so the context guards behave the same).
    pub fn with_context_window(mut self, context_window: u64) -> Self {
        self.context_window = Some(context_window);
        self
    }

    /// Number of recorded model calls.
    pub fn recorded_calls(&self) -> usize {
        self.calls.len()
    }

    /// Recorded model calls not played yet.
    pub fn remaining(&self) -> usize {
        self.calls
            .len()
            .saturating_sub(self.next.load(Ordering::SeqCst))
    }
}

#[async_trait]
impl Provider for ReplayProvider {
    fn name(&self) -> &str {
        REPLAY_NAME
    }

    fn model(&self) -> &str {
        &self.model
    }

    fn capabilities(&self) -> ProviderCapabilities {
        let defaults = ProviderCapabilities::default();
        ProviderCapabilities {
            thinking: true,
            context_window: self.context_window.unwrap_or(defaults.context_window),
            ..defaults
        }
    }

    async fn stream(
        &self,
        _request: &ProviderRequest,
        on_event: &StreamSink<'_>,
        cancel: &CancellationToken,
    ) -> Result<ProviderResponse, ProviderError> {
        let index = self.next.fetch_add(1, Ordering::SeqCst);
        let Some(call) = self.calls.get(index) else {
            return Err(ProviderError::new(
                ProviderErrorKind::Provider,
                REPLAY_NAME,
                format!(
                    "the replay log has no more model calls ({} were recorded); the replayed run made more calls than the recorded one, so it has diverged from the recording",
                    self.calls.len()
                ),
            ));
        };
        let (recorded, deltas) = match call {
            RecordedCall::Error(error) => return Err(error.clone()),
            RecordedCall::Response { response, deltas } => (response, deltas),
        };
        let mut partial = ProviderResponse {
            model: recorded.model.clone(),
            usage: recorded.usage,
            stop_reason: StopReason::Aborted,
            ..ProviderResponse::default()
        };
        for block in &recorded.thinking {
            if cancel.is_cancelled() {
                return Ok(partial);
            }
            on_event(StreamEvent::ThinkingDelta(block.thinking.clone()));
            partial.thinking.push(block.clone());
        }
        let whole = [recorded.text.clone()];
        let deltas: &[String] = if deltas.is_empty() { &whole } else { deltas };
        for delta in deltas.iter().filter(|delta| !delta.is_empty()) {
            if cancel.is_cancelled() {
                return Ok(partial);
            }
            on_event(StreamEvent::TextDelta(delta.clone()));
            partial.text.push_str(delta);
        }
        for (index, call) in recorded.tool_calls.iter().enumerate() {
            if cancel.is_cancelled() {
                return Ok(partial);
            }
            on_event(StreamEvent::ToolCallStart {
                index,
                id: call.id.clone(),
                name: call.name.clone(),
            });
            on_event(StreamEvent::ToolCallDelta {
                index,
                partial_json: call.arguments.clone(),
            });
        }
        Ok((**recorded).clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOG: &str = r#"
{"type":"history_mutation","execution_id":"e","round":0,"mutation":"append_message","index":0,"message":{}}
{"type":"provider_request","execution_id":"e","round":1,"provider":"p","model":"m","messages":[],"tools":[]}
{"type":"provider_stream_raw_delta","execution_id":"e","round":1,"sequence":0,"delta":"Hel"}
{"type":"provider_stream_raw_delta","execution_id":"e","round":1,"sequence":1,"delta":"lo"}
{"type":"provider_response","execution_id":"e","round":1,"provider":"p","tool_calls_count":0,"response":{"text":"Hello","stop_reason":"end_turn","usage":{"input_tokens":3},"model":"m-1"}}
{"type":"provider_error","execution_id":"e","round":2,"provider":"p","error":{"kind":"overloaded","message":"busy","provider":"p","retryable":true}}
"#;

    #[tokio::test]
    async fn replays_responses_with_their_deltas_then_errors_then_runs_out() {
        let provider = ReplayProvider::from_jsonl_str(LOG).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(provider.recorded_calls(), 2);
        assert_eq!(provider.model(), "m-1");
        let deltas = std::sync::Mutex::new(Vec::new());
        let sink = |event: StreamEvent| {
            if let StreamEvent::TextDelta(text) = event {
                deltas.lock().map(|mut d| d.push(text)).unwrap_or_default();
            }
        };
        let cancel = CancellationToken::new();
        let request = ProviderRequest::default();
        let first = provider.stream(&request, &sink, &cancel).await;
        assert_eq!(first.map(|r| r.text).unwrap_or_default(), "Hello");
        assert_eq!(
            deltas.lock().map(|d| d.clone()).unwrap_or_default(),
            ["Hel", "lo"]
        );
        let second = provider.stream(&request, &sink, &cancel).await;
        assert_eq!(
            second.err().map(|e| e.kind),
            Some(ProviderErrorKind::Overloaded)
        );
        let third = provider.stream(&request, &sink, &cancel).await;
        assert!(third
            .err()
            .map(|e| e.message)
            .unwrap_or_default()
            .contains("no more model calls (2 were recorded)"));
    }

    #[test]
    fn a_torn_last_line_is_ignored() {
        let torn = format!("{}{{\"type\":\"provider_resp", LOG.trim_start());
        let provider = ReplayProvider::from_jsonl_str(&torn).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(provider.recorded_calls(), 2);
        // With its newline, the same line is damage in the middle of a log: an error.
        let error = ReplayProvider::from_jsonl_str(&format!("{torn}\n"))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(error.contains("not valid JSON"), "{error}");
    }

    #[test]
    fn bad_lines_are_named() {
        let error = ReplayProvider::from_jsonl_str("{\"type\":\"provider_request\"}\n{oops\n")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            error.starts_with("replay log line 2: not valid JSON"),
            "{error}"
        );
        let error = ReplayProvider::from_jsonl_str(
            "\n{\"type\":\"provider_response\",\"response\":{\"text\":5}}",
        )
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
        assert!(
            error.starts_with("replay log line 2: unreadable provider_response"),
            "{error}"
        );
        let error = ReplayProvider::from_jsonl_str("[1]")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(error.contains("line 1"), "{error}");
        let error = ReplayProvider::from_jsonl_str("")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(error.contains("nothing to replay"), "{error}");
    }
}
