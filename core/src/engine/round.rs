//! One model call: streaming its deltas out as events, and turning the assembled response into
//! the assistant message that is committed (including the tool-call argument checks).
//!
//! Per-delta work is kept O(1): a delta is appended to one buffer and handed to the callbacks; the
//! history is neither cloned nor serialized while a call streams.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

use serde_json::Value;

use super::events::{EngineEvent, ExecutionEvent};
use super::run::Run;
use crate::message::{
    ContentBlock, Message, MessageState, ProviderError, REFUSAL_METADATA, SERVER_BLOCKS_METADATA,
    SERVER_BLOCK_POSITIONS_METADATA,
};
use crate::provider::{ProviderRequest, ProviderResponse, ProviderToolCall, StreamEvent};

/// How many characters of unparsable tool arguments are quoted back to the model.
const ARGUMENT_PREFIX_CHARS: usize = 200;

/// The result of one model call, with the text that streamed before it ended (kept for the
/// error path, where the provider returns no response to take it from).
pub(crate) struct ModelCall {
    pub result: Result<ProviderResponse, ProviderError>,
    pub streamed_text: String,
}

/// A tool call from the model, with its arguments parsed.
#[derive(Debug, Clone)]
pub(crate) struct ParsedCall {
    /// Provider tool-call id, verbatim.
    pub id: String,
    /// Requested tool name.
    pub name: String,
    /// The arguments; the raw text as a JSON string when they were not valid JSON.
    pub input: Value,
    /// Why the call must not be executed (unusable arguments, a cut-off response), as told to
    /// the model.
    pub problem: Option<String>,
    /// The result's `error_code` for `problem` (`invalid_arguments` when `None`).
    pub problem_code: Option<&'static str>,
}

impl Run<'_> {
    /// Makes one streaming model call, forwarding deltas and retries as events and recording the
    /// request and its response (or error) as execution events.
    pub(crate) async fn call_model(&self, round: u32, request: ProviderRequest) -> ModelCall {
        let provider = &*self.provider;
        let emitter = &self.emitter;
        let execution_id = self.execution_id.as_str();
        let request = std::sync::Arc::new(request);
        emitter.execution(|| ExecutionEvent::ProviderRequest {
            execution_id: execution_id.to_string(),
            round,
            provider: provider.name().to_string(),
            model: provider.model().to_string(),
            request: std::sync::Arc::clone(&request),
        });

        let streamed = Mutex::new(String::new());
        let sequence = AtomicU64::new(0);
        let sink = |event: StreamEvent| match event {
            StreamEvent::TextDelta(text) => {
                if text.is_empty() {
                    return;
                }
                streamed
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push_str(&text);
                emitter.execution(|| ExecutionEvent::ProviderStreamRawDelta {
                    execution_id: execution_id.to_string(),
                    round,
                    sequence: sequence.fetch_add(1, Ordering::Relaxed),
                    delta: text.clone(),
                });
                emitter.event(|| EngineEvent::TextDelta { text });
            }
            StreamEvent::ThinkingDelta(text) => {
                if !text.is_empty() {
                    emitter.event(|| EngineEvent::Thinking { text });
                }
            }
            StreamEvent::Retry {
                attempt,
                max_attempts,
                delay,
                error,
            } => {
                // The failed attempt's text will be streamed again by the next attempt.
                streamed
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .clear();
                emitter.event(|| EngineEvent::ProviderRetry {
                    attempt,
                    max_attempts,
                    delay_ms: u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
                    error,
                });
            }
            StreamEvent::ServerToolUse { id, name, input } => {
                emitter.execution(|| ExecutionEvent::ServerTool {
                    execution_id: execution_id.to_string(),
                    round,
                    tool_use_id: id.clone(),
                    name: name.clone(),
                    input: input.clone(),
                });
                emitter.event(|| EngineEvent::ServerToolUse { id, name, input });
            }
            StreamEvent::ServerToolResult {
                tool_use_id,
                result_type,
                is_error,
            } => emitter.event(|| EngineEvent::ServerToolResult {
                tool_use_id,
                result_type,
                is_error,
            }),
            // Tool calls are reported when they are handled, with their final arguments.
            StreamEvent::ToolCallStart { .. } | StreamEvent::ToolCallDelta { .. } => {}
        };

        let result = provider.stream(&request, &sink, &self.cancel).await;
        let streamed_text = streamed
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner);

        match &result {
            Ok(response) => {
                // A provider that did not stream (all of) its text still owes the host the text.
                if response.text.len() > streamed_text.len()
                    && response.text.starts_with(&streamed_text)
                {
                    let tail = response.text[streamed_text.len()..].to_string();
                    emitter.event(|| EngineEvent::TextDelta { text: tail });
                }
                emitter.execution(|| ExecutionEvent::ProviderResponse {
                    execution_id: execution_id.to_string(),
                    round,
                    provider: provider.name().to_string(),
                    tool_calls_count: response.tool_calls.len(),
                    response: response.clone(),
                });
            }
            Err(error) => emitter.execution(|| ExecutionEvent::ProviderError {
                execution_id: execution_id.to_string(),
                round,
                provider: provider.name().to_string(),
                error: error.clone(),
            }),
        }
        ModelCall {
            result,
            streamed_text,
        }
    }
}

/// Builds the assistant message for a response: thinking, text, then one `tool_use` block per
/// tool call (ids verbatim unless two calls share one, see [`unique_call_ids`]; unusable
/// arguments kept as a JSON string so the transcript shows what the model sent), plus the parsed
/// calls the tool batch will handle.
pub(crate) fn assistant_message(
    response: &ProviderResponse,
    state: MessageState,
    round: u32,
    model: &str,
) -> (Message, Vec<ParsedCall>) {
    let mut content = Vec::with_capacity(
        response.thinking.len() + response.text_blocks.len() + 1 + response.tool_calls.len(),
    );
    for block in &response.thinking {
        content.push(ContentBlock::Thinking {
            thinking: block.thinking.clone(),
            signature: block.signature.clone(),
        });
    }
    if response.text_blocks.is_empty() {
        if !response.text.is_empty() {
            content.push(ContentBlock::text(response.text.clone()));
        }
    } else {
        // The model's own split, kept where it carries citations or places server-tool blocks
        // (empty blocks too: a server block's position counts them).
        content.extend(response.text_blocks.iter().map(|block| ContentBlock::Text {
            text: block.text.clone(),
            citations: block.citations.clone(),
        }));
    }
    let ids = unique_call_ids(&response.tool_calls);
    let mut renamed = serde_json::Map::new();
    let mut calls = Vec::with_capacity(response.tool_calls.len());
    for (call, id) in response.tool_calls.iter().zip(ids) {
        if id != call.id {
            renamed.insert(id.clone(), Value::String(call.id.clone()));
        }
        let (input, problem) = parse_arguments(&call.name, &call.arguments);
        content.push(ContentBlock::ToolUse {
            id: id.clone(),
            name: call.name.clone(),
            input: input.clone(),
        });
        calls.push(ParsedCall {
            id,
            name: call.name.clone(),
            input,
            problem,
            problem_code: None,
        });
    }
    let mut message = Message::assistant(content, state);
    if !renamed.is_empty() {
        message
            .metadata
            .insert(RENAMED_TOOL_CALL_IDS.into(), Value::Object(renamed));
    }
    message.usage = Some(response.usage);
    message.metadata.insert("round".into(), round.into());
    let model = if response.model.is_empty() {
        model
    } else {
        &response.model
    };
    message.metadata.insert("model".into(), model.into());
    message.metadata.insert(
        "stop_reason".into(),
        serde_json::to_value(response.stop_reason).unwrap_or(Value::Null),
    );
    if let Some(refusal) = &response.refusal {
        message.metadata.insert(
            REFUSAL_METADATA.into(),
            serde_json::to_value(refusal).unwrap_or(Value::Null),
        );
    }
    if !response.server_blocks.is_empty() {
        message.metadata.insert(
            SERVER_BLOCKS_METADATA.into(),
            Value::Array(response.server_blocks.clone()),
        );
        if response.server_block_positions.len() == response.server_blocks.len() {
            message.metadata.insert(
                SERVER_BLOCK_POSITIONS_METADATA.into(),
                response.server_block_positions.iter().copied().collect(),
            );
        }
    }
    (message, calls)
}

/// Message metadata key: the tool-call ids the engine gave calls whose provider id was taken by
/// an earlier call of the same response (or was empty), mapped to the provider's id.
pub const RENAMED_TOOL_CALL_IDS: &str = "renamed_tool_call_ids";

/// One id per call, unique within the response. A response that repeats an id (or sends none)
/// cannot be answered as it stands: both APIs refuse a history with two calls of one id, and a
/// result could not say which call it answers. The first call keeps its id verbatim; a later call
/// with a taken or empty id gets `<id>_2`, `<id>_3`, … (`call_<n>` for an empty id), skipping any
/// id another call of the response already has. The suffix keeps to the characters every
/// provider accepts in an id.
pub(crate) fn unique_call_ids(calls: &[ProviderToolCall]) -> Vec<String> {
    let taken: HashSet<&str> = calls.iter().map(|call| call.id.as_str()).collect();
    let mut assigned: HashSet<String> = HashSet::with_capacity(calls.len());
    let mut ids = Vec::with_capacity(calls.len());
    for (index, call) in calls.iter().enumerate() {
        let id = if !call.id.is_empty() && !assigned.contains(&call.id) {
            call.id.clone()
        } else {
            let base = if call.id.is_empty() {
                "call"
            } else {
                call.id.as_str()
            };
            let mut n = if call.id.is_empty() { index } else { 2 };
            loop {
                let candidate = format!("{base}_{n}");
                if !taken.contains(candidate.as_str()) && !assigned.contains(&candidate) {
                    break candidate;
                }
                n += 1;
            }
        };
        assigned.insert(id.clone());
        ids.push(id);
    }
    ids
}

/// Parses a tool call's raw argument text. Empty text means "no arguments" (`{}`), as several
/// OpenAI-compatible servers send for parameterless tools. Anything that is not a JSON object
/// comes back with the message the model will get instead of a result.
pub(crate) fn parse_arguments(tool: &str, raw: &str) -> (Value, Option<String>) {
    let trimmed = raw.trim();
    if trimmed.is_empty() {
        return (Value::Object(serde_json::Map::new()), None);
    }
    match serde_json::from_str::<Value>(trimmed) {
        Ok(Value::Object(map)) => (Value::Object(map), None),
        Ok(other) => {
            let kind = match &other {
                Value::Null => "null",
                Value::Bool(_) => "boolean",
                Value::Number(_) => "number",
                Value::String(_) => "string",
                Value::Array(_) => "array",
                Value::Object(_) => "object",
            };
            let problem = format!(
                "The arguments for tool \"{tool}\" must be a JSON object, but a JSON {kind} was received, so the tool was not executed. Call the tool again with a JSON object that matches its input schema."
            );
            (other, Some(problem))
        }
        Err(error) => {
            let problem = format!(
                "The arguments for tool \"{tool}\" were not valid JSON ({error}), so the tool was not executed. Received: {}. Call the tool again with a complete JSON object that matches its input schema.",
                quote_prefix(raw)
            );
            (Value::String(raw.to_string()), Some(problem))
        }
    }
}

/// The first characters of `raw`, quoted, with an ellipsis when cut.
fn quote_prefix(raw: &str) -> String {
    match raw.char_indices().nth(ARGUMENT_PREFIX_CHARS) {
        Some((cut, _)) => format!("{:?}…", &raw[..cut]),
        None => format!("{raw:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::{StopReason, ThinkingBlock};

    #[test]
    fn valid_objects_and_empty_arguments_are_accepted() {
        assert_eq!(
            parse_arguments("t", r#" {"a": 1} "#),
            (serde_json::json!({"a": 1}), None)
        );
        assert_eq!(parse_arguments("t", "  "), (serde_json::json!({}), None));
    }

    #[test]
    fn invalid_json_keeps_the_raw_text_and_explains() {
        let (input, problem) = parse_arguments("Read", r#"{"file_path": "/tmp/x"#);
        assert_eq!(input, Value::String(r#"{"file_path": "/tmp/x"#.into()));
        let problem = problem.unwrap_or_default();
        assert!(problem.contains("not valid JSON"), "{problem}");
        assert!(problem.contains(r#"\"file_path\""#), "{problem}");
        assert!(problem.contains("\"Read\""), "{problem}");
    }

    #[test]
    fn non_object_json_is_refused() {
        let (input, problem) = parse_arguments("t", "[1, 2]");
        assert_eq!(input, serde_json::json!([1, 2]));
        assert!(problem.unwrap_or_default().contains("JSON array"));
    }

    #[test]
    fn long_raw_arguments_are_quoted_short() {
        let raw = format!("{{\"x\": \"{}", "é".repeat(1000));
        let (_, problem) = parse_arguments("t", &raw);
        let problem = problem.unwrap_or_default();
        assert!(problem.len() < 1000, "{}", problem.len());
        assert!(problem.contains('…'));
    }

    fn calls(ids: &[&str]) -> Vec<ProviderToolCall> {
        ids.iter()
            .map(|id| ProviderToolCall {
                id: (*id).into(),
                name: "t".into(),
                arguments: "{}".into(),
            })
            .collect()
    }

    #[test]
    fn repeated_and_empty_ids_become_unique_and_distinct_ids_stay() {
        assert_eq!(unique_call_ids(&calls(&["a", "b"])), ["a", "b"]);
        assert_eq!(
            unique_call_ids(&calls(&["a", "a", "a"])),
            ["a", "a_2", "a_3"]
        );
        // A generated id never takes an id another call of the response has.
        assert_eq!(
            unique_call_ids(&calls(&["a", "a", "a_2"])),
            ["a", "a_3", "a_2"]
        );
        assert_eq!(unique_call_ids(&calls(&["", ""])), ["call_0", "call_1"]);
        assert_eq!(
            unique_call_ids(&calls(&["call_1", ""])),
            ["call_1", "call_2"]
        );
    }

    #[test]
    fn assistant_message_keeps_order_ids_and_metadata() {
        let response = ProviderResponse {
            text: "Let me look.".into(),
            thinking: vec![ThinkingBlock {
                thinking: "hmm".into(),
                signature: Some("sig".into()),
            }],
            tool_calls: vec![
                ProviderToolCall {
                    id: "call_0".into(),
                    name: "a".into(),
                    arguments: "{}".into(),
                },
                ProviderToolCall {
                    id: "call_0".into(),
                    name: "b".into(),
                    arguments: "{oops".into(),
                },
            ],
            stop_reason: StopReason::ToolUse,
            usage: Default::default(),
            model: String::new(),
            ..Default::default()
        };
        let (message, calls) =
            assistant_message(&response, MessageState::Complete, 3, "fallback-model");
        assert!(matches!(message.content[0], ContentBlock::Thinking { .. }));
        assert_eq!(message.text(), "Let me look.");
        // Two calls sharing one id: the second is renamed, so each result answers one call.
        let ids: Vec<&str> = message.tool_uses().map(|(id, _, _)| id).collect();
        assert_eq!(ids, ["call_0", "call_0_2"]);
        assert_eq!(calls[1].id, "call_0_2");
        assert_eq!(
            message.metadata[RENAMED_TOOL_CALL_IDS],
            serde_json::json!({"call_0_2": "call_0"})
        );
        assert_eq!(message.metadata["round"], 3);
        assert_eq!(message.metadata["model"], "fallback-model");
        assert_eq!(message.metadata["stop_reason"], "tool_use");
        assert!(calls[0].problem.is_none());
        assert!(calls[1].problem.is_some());
    }
}
