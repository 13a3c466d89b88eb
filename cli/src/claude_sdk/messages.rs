//! robota's session events and prompt results as the Claude Agent SDK's stdout messages
//! (`system/init`, `assistant`, `user` tool results, `stream_event`, `result`), in the shapes
//! the SDKs' message parsers read.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock, PoisonError};

use serde_json::{json, Value};

use robota::engine::{EngineEvent, RunStopReason};
use robota::framework::interactive::{InteractiveSession, PromptResult};
use robota::message::{ContentBlock, Message, Usage};
use robota::session::{PermissionResolution, SessionEvent};

/// A fresh message id (`uuid` of every line).
fn uuid() -> String {
    robota::message::new_id()
}

/// Usage in the Anthropic Messages API's shape.
fn usage_json(usage: &Usage) -> Value {
    json!({
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cache_creation_input_tokens": usage.cache_creation_input_tokens,
        "cache_read_input_tokens": usage.cache_read_input_tokens,
    })
}

/// Turns session events into stdout lines while a session runs.
pub struct EventLines {
    /// The session's id, once it is open (events before that are the opening's warnings,
    /// which go to stderr).
    pub session_id: OnceLock<String>,
    /// The model named in assistant messages that do not say.
    pub model: Mutex<String>,
    /// `--include-partial-messages`: text and thinking deltas as `stream_event` lines.
    pub partial: bool,
    /// The tool calls asked about in the running prompt, by request id: their input.
    pub asked: Mutex<HashMap<String, Value>>,
    /// The calls denied in the running prompt (`permission_denials` of its result).
    pub denials: Mutex<Vec<Value>>,
    /// The model message being streamed (`--include-partial-messages`).
    pub stream: Mutex<Stream>,
}

/// Where the Anthropic-shaped event stream of the running prompt is: robota streams text and
/// thinking, so a message opens (`message_start`) at its first delta and its blocks open and
/// close as the delta kind changes; the committed message closes it, adding its tool calls
/// (whose input robota does not stream) as whole blocks.
#[derive(Debug, Default)]
pub struct Stream {
    /// A message is open (`message_start` sent, `message_stop` not yet).
    open: bool,
    /// The open block: its index and kind (`text` or `thinking`).
    block: Option<(usize, &'static str)>,
    /// Blocks started in the open message.
    blocks: usize,
    /// A model message of the running prompt was committed (the engine then starts the next
    /// round's text with a `"\n\n"` separator that is not part of the model's message).
    answered: bool,
}

impl EventLines {
    /// The line(s) for one session event.
    pub fn lines(&self, event: &SessionEvent) -> Vec<Value> {
        let Some(session_id) = self.session_id.get() else {
            return Vec::new();
        };
        let event = match event {
            SessionEvent::Engine(event) => event,
            SessionEvent::PermissionRequest {
                request_id, input, ..
            } => {
                self.asked
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .insert(request_id.clone(), input.clone());
                return Vec::new();
            }
            SessionEvent::PermissionResolved {
                request_id,
                tool_name,
                tool_use_id,
                resolution,
                ..
            } => {
                let input = self
                    .asked
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .remove(request_id);
                if matches!(resolution, PermissionResolution::Denied { .. }) {
                    self.denials
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .push(json!({
                            "tool_name": tool_name,
                            "tool_use_id": tool_use_id,
                            "tool_input": input.unwrap_or(Value::Null),
                        }));
                }
                return Vec::new();
            }
            _ => return Vec::new(),
        };
        match event {
            EngineEvent::AssistantMessage { message } => {
                let model = self
                    .model
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .clone();
                let mut lines = Vec::new();
                if self.partial {
                    let mut stream = self.stream.lock().unwrap_or_else(PoisonError::into_inner);
                    lines = stream.finish(message, &model);
                }
                let mut lines: Vec<Value> = lines
                    .into_iter()
                    .map(|event| stream_event(session_id, event))
                    .collect();
                lines.push(assistant_line(message, &model, session_id));
                lines
            }
            EngineEvent::ToolEnd {
                tool_use_id,
                output,
                ..
            } => vec![json!({
                "type": "user",
                "message": {"role": "user", "content": [{
                    "type": "tool_result",
                    "tool_use_id": tool_use_id,
                    "content": output.content,
                    "is_error": output.is_error,
                }]},
                "parent_tool_use_id": null,
                "session_id": session_id,
                "uuid": uuid(),
                "tool_use_result": output.response,
            })],
            EngineEvent::TextDelta { text } if self.partial => {
                self.streamed(session_id, "text", text)
            }
            EngineEvent::Thinking { text } if self.partial => {
                self.streamed(session_id, "thinking", text)
            }
            _ => Vec::new(),
        }
    }

    /// The `stream_event` lines for one streamed piece of `kind` (`text` or `thinking`).
    fn streamed(&self, session_id: &str, kind: &'static str, text: &str) -> Vec<Value> {
        let model = self.model.lock().unwrap_or_else(PoisonError::into_inner);
        let mut stream = self.stream.lock().unwrap_or_else(PoisonError::into_inner);
        stream
            .delta(kind, text, &model)
            .into_iter()
            .map(|event| stream_event(session_id, event))
            .collect()
    }

    /// The prompt ended: a message still streaming (the prompt was interrupted or its model
    /// call failed) is closed, and the next prompt starts afresh.
    pub fn end_prompt(&self) -> Vec<Value> {
        let Some(session_id) = self.session_id.get() else {
            return Vec::new();
        };
        let mut stream = self.stream.lock().unwrap_or_else(PoisonError::into_inner);
        let mut events = Vec::new();
        if stream.open {
            events.extend(stream.stop_block());
            events.push(json!({"type": "message_stop"}));
        }
        *stream = Stream::default();
        events
            .into_iter()
            .map(|event| stream_event(session_id, event))
            .collect()
    }
}

impl Stream {
    /// The events for one streamed piece of `kind` (`text` or `thinking`).
    fn delta(&mut self, kind: &'static str, text: &str, model: &str) -> Vec<Value> {
        if !self.open && self.answered && text == "\n\n" {
            // The engine's separator between rounds, not the model's text.
            return Vec::new();
        }
        let mut events = self.start_message(model);
        if self.block.map(|(_, open)| open) != Some(kind) {
            events.extend(self.stop_block());
            let index = self.blocks;
            self.blocks += 1;
            self.block = Some((index, kind));
            let block = match kind {
                "thinking" => json!({"type": "thinking", "thinking": "", "signature": ""}),
                _ => json!({"type": "text", "text": ""}),
            };
            events.push(
                json!({"type": "content_block_start", "index": index, "content_block": block}),
            );
        }
        let index = self.blocks.saturating_sub(1);
        let delta = match kind {
            "thinking" => json!({"type": "thinking_delta", "thinking": text}),
            _ => json!({"type": "text_delta", "text": text}),
        };
        events.push(json!({"type": "content_block_delta", "index": index, "delta": delta}));
        events
    }

    /// `message_start` when no message is open yet.
    fn start_message(&mut self, model: &str) -> Vec<Value> {
        if self.open {
            return Vec::new();
        }
        self.open = true;
        self.blocks = 0;
        self.block = None;
        vec![json!({"type": "message_start", "message": {
            "id": format!("msg_{}", uuid().replace('-', "")),
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [],
            "stop_reason": null,
            "stop_sequence": null,
            "usage": usage_json(&Usage::default()),
        }})]
    }

    /// `content_block_stop` for the open block, if any.
    fn stop_block(&mut self) -> Vec<Value> {
        match self.block.take() {
            Some((index, _)) => vec![json!({"type": "content_block_stop", "index": index})],
            None => Vec::new(),
        }
    }

    /// The committed `message` ends the streamed one: its tool calls as whole blocks, then
    /// `message_delta` (stop reason, usage) and `message_stop`.
    fn finish(&mut self, message: &Message, model: &str) -> Vec<Value> {
        let mut events = self.start_message(model);
        events.extend(self.stop_block());
        for block in &message.content {
            if let ContentBlock::ToolUse { id, name, input } = block {
                let index = self.blocks;
                self.blocks += 1;
                events.push(json!({"type": "content_block_start", "index": index,
                    "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}));
                events.push(json!({"type": "content_block_delta", "index": index,
                    "delta": {"type": "input_json_delta", "partial_json": input.to_string()}}));
                events.push(json!({"type": "content_block_stop", "index": index}));
            }
        }
        events.push(json!({"type": "message_delta",
            "delta": {
                "stop_reason": message.metadata.get("stop_reason").cloned().unwrap_or(Value::Null),
                "stop_sequence": null,
            },
            "usage": usage_json(&message.usage.unwrap_or_default()),
        }));
        events.push(json!({"type": "message_stop"}));
        *self = Stream {
            answered: true,
            ..Stream::default()
        };
        events
    }
}

/// A `stream_event` line carrying one event of the Anthropic Messages stream.
fn stream_event(session_id: &str, event: Value) -> Value {
    json!({
        "type": "stream_event",
        "uuid": uuid(),
        "session_id": session_id,
        "event": event,
        "parent_tool_use_id": null,
    })
}

/// An `assistant` line: the message's blocks in the Messages API's shape.
fn assistant_line(message: &Message, model: &str, session_id: &str) -> Value {
    let content: Vec<Value> = message
        .content
        .iter()
        .map(|block| match block {
            ContentBlock::Text { text, .. } => json!({"type": "text", "text": text}),
            ContentBlock::Thinking {
                thinking,
                signature,
            } => json!({
                "type": "thinking",
                "thinking": thinking,
                "signature": signature.clone().unwrap_or_default(),
            }),
            ContentBlock::ToolUse { id, name, input } => {
                json!({"type": "tool_use", "id": id, "name": name, "input": input})
            }
            ContentBlock::ToolResult {
                tool_use_id,
                content,
                is_error,
            } => json!({
                "type": "tool_result",
                "tool_use_id": tool_use_id,
                "content": content,
                "is_error": is_error,
            }),
        })
        .collect();
    let model = message
        .metadata
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or(model);
    json!({
        "type": "assistant",
        "message": {
            "id": message.id,
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": content,
            "stop_reason": message.metadata.get("stop_reason").cloned().unwrap_or(Value::Null),
            "stop_sequence": null,
            "usage": usage_json(&message.usage.unwrap_or_default()),
        },
        "parent_tool_use_id": null,
        "session_id": session_id,
        "uuid": uuid(),
    })
}

/// The `system/init` line that opens the output of a session's first prompt.
pub fn init_line(session: &InteractiveSession) -> Value {
    let mcp_servers: Vec<Value> = session
        .list_mcp_servers()
        .iter()
        .map(|server| {
            let status = serde_json::to_value(&server.status).unwrap_or(Value::Null);
            let state = match status.get("state").and_then(Value::as_str) {
                Some("ready") | Some("connected") => "connected",
                // The SDKs spell this one with a dash.
                Some("needs_auth") => "needs-auth",
                Some(other) => other,
                None => "unknown",
            }
            .to_string();
            json!({"name": server.name, "status": state})
        })
        .collect();
    json!({
        "type": "system",
        "subtype": "init",
        "cwd": session.session().cwd(),
        "session_id": session.get_session_id(),
        "tools": session.session().tool_names(),
        "mcp_servers": mcp_servers,
        "model": session.session().current_model(),
        "permissionMode": session.session().permission_mode(),
        "slash_commands": [],
        "apiKeySource": "none",
        "claude_code_version": env!("CARGO_PKG_VERSION"),
        "output_style": "default",
        "agents": [],
        "skills": [],
        "plugins": [],
        "uuid": uuid(),
    })
}

/// The `result` line for a prompt that ended with `result` after `duration_ms`, with the tool
/// calls denied while it ran.
pub fn result_line(
    session: &InteractiveSession,
    result: &PromptResult,
    duration_ms: u64,
    denials: Vec<Value>,
) -> Value {
    let outcome = result.outcome();
    let stop = outcome.map(|o| o.stop_reason);
    let subtype = match (result, stop) {
        (_, Some(RunStopReason::MaxTurns)) => "error_max_turns",
        (_, Some(RunStopReason::MaxStructuredOutputRetries)) => {
            "error_max_structured_output_retries"
        }
        (
            PromptResult::Complete { .. }
            | PromptResult::Refused { .. }
            | PromptResult::Truncated { .. },
            _,
        ) => "success",
        _ => "error_during_execution",
    };
    let mut errors = Vec::new();
    match result {
        PromptResult::Error { message, .. } => errors.push(message.clone()),
        PromptResult::Interrupted { .. } => errors.push("interrupted".to_string()),
        PromptResult::Cancelled => errors.push("cancelled before it ran".to_string()),
        _ => {}
    }
    let stop_reason = match stop {
        Some(RunStopReason::Completed) => json!("end_turn"),
        Some(RunStopReason::Truncated) => json!("max_tokens"),
        Some(RunStopReason::Refused) => json!("refusal"),
        _ => Value::Null,
    };
    let usage = outcome.map(|o| o.usage).unwrap_or_default();
    let mut line = json!({
        "type": "result",
        "subtype": subtype,
        "duration_ms": duration_ms,
        "duration_api_ms": duration_ms,
        "is_error": subtype != "success",
        "num_turns": outcome.map_or(0, |o| o.rounds),
        "result": outcome.map(|o| o.response.clone()).unwrap_or_default(),
        "stop_reason": stop_reason,
        "session_id": session.get_session_id(),
        "total_cost_usd": session.session().usage().cost_usd,
        "usage": usage_json(&usage),
        "permission_denials": denials,
        "uuid": uuid(),
    });
    if !errors.is_empty() {
        line["errors"] = json!(errors);
    }
    if let Some(value) = outcome.and_then(|o| o.structured_output.clone()) {
        line["structured_output"] = value;
    }
    line
}

/// A `result` line for a prompt that could not run at all (the session did not open).
pub fn failed_result_line(session_id: &str, message: &str) -> Value {
    json!({
        "type": "result",
        "subtype": "error_during_execution",
        "duration_ms": 0,
        "duration_api_ms": 0,
        "is_error": true,
        "num_turns": 0,
        "session_id": session_id,
        "errors": [message],
        "permission_denials": [],
        "uuid": uuid(),
    })
}

/// The answer to `get_context_usage`: how full the session's context window is, in the shape
/// of the SDKs' `ContextUsageResponse`. robota measures the whole request (system prompt, tools
/// and messages together), so the breakdown is that one figure and the free space; MCP tools
/// are listed with their definitions' estimated size (characters / 4, robota's estimate).
pub fn context_usage(session: &InteractiveSession) -> Value {
    let state = session.get_context_state();
    let inner = session.session();
    let threshold = inner.auto_compact_threshold();
    let free = state.max_tokens.saturating_sub(state.used_tokens);
    let mut categories = vec![json!({
        "name": "System prompt, tools and messages",
        "tokens": state.used_tokens,
        "color": "promptBorder",
        "kind": "used",
    })];
    if state.max_tokens > 0 {
        categories.push(json!({
            "id": "free_space",
            "name": "Free space",
            "tokens": free,
            "color": "inactive",
            "kind": "free",
        }));
    }
    let mcp_tools: Vec<Value> = session
        .list_mcp_servers()
        .iter()
        .flat_map(|server| {
            server.tools.iter().map(|name| {
                let tokens = inner.tool(name).map_or(0, |tool| {
                    let chars = name.chars().count()
                        + tool.description().chars().count()
                        + tool.input_schema().to_string().chars().count();
                    chars.div_ceil(4)
                });
                json!({"name": name, "serverName": server.name, "tokens": tokens,
                       "isLoaded": true})
            })
        })
        .collect();
    let mut usage = json!({
        "categories": categories,
        "totalTokens": state.used_tokens,
        "maxTokens": state.max_tokens,
        "rawMaxTokens": state.max_tokens,
        "percentage": state.ratio * 100.0,
        "model": inner.current_model(),
        "isAutoCompactEnabled": threshold.is_some(),
        "memoryFiles": [],
        "mcpTools": mcp_tools,
        "agents": [],
        "gridRows": [],
        "estimated": state.estimated,
    });
    if let Some(threshold) = threshold {
        // The threshold is a fraction of the window; the SDK wants tokens.
        usage["autoCompactThreshold"] = json!((threshold * state.max_tokens as f64).round() as u64);
    }
    usage
}

/// The echo of a prompt's user message (`--replay-user-messages`), carrying the `uuid` that
/// `rewind_files` takes.
pub fn replayed_user_line(session_id: &str, prompt: &str, uuid: &str) -> Value {
    json!({
        "type": "user",
        "message": {"role": "user", "content": prompt},
        "parent_tool_use_id": null,
        "session_id": session_id,
        "uuid": uuid,
        "isReplay": true,
    })
}

/// The SDK's task lifecycle message for one change of a background task (an interactive
/// session's `background_task_event` with `event: "state_changed"`): `system/task_started`
/// when the task appears, `system/task_notification` when it ends; `None` for other changes.
pub fn task_line(session_id: &str, data: &Value) -> Option<Value> {
    if data.get("event").and_then(Value::as_str) != Some("state_changed") {
        return None;
    }
    let task_id = data.get("task_id").and_then(Value::as_str)?;
    let task = data.get("task").unwrap_or(&Value::Null);
    let tool_use_id = task.pointer("/origin/tool_use_id").cloned();
    let agent = data.get("task_kind").and_then(Value::as_str) == Some("agent");
    let command = task
        .get("command")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let description = task
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or(command);
    if data.get("from").is_none_or(Value::is_null) {
        return Some(json!({
            "type": "system",
            "subtype": "task_started",
            "task_id": task_id,
            "tool_use_id": tool_use_id,
            "description": description,
            "task_type": if agent { "local_agent" } else { "local_bash" },
            "session_id": session_id,
            "uuid": uuid(),
        }));
    }
    let (status, ended) = match data.get("status").and_then(Value::as_str)? {
        "completed" => ("completed", "completed"),
        "failed" => ("failed", "failed"),
        "lost" => ("failed", "was lost when the session that ran it ended"),
        "cancelled" => ("stopped", "was stopped"),
        _ => return None,
    };
    let mut summary = format!("{description}: {ended}");
    if let Some(code) = task.get("exit_code").and_then(Value::as_i64) {
        summary.push_str(&format!(" (exit code {code})"));
    }
    if let Some(error) = task.get("error").and_then(Value::as_str) {
        summary.push_str(&format!(": {error}"));
    }
    Some(json!({
        "type": "system",
        "subtype": "task_notification",
        "task_id": task_id,
        "tool_use_id": tool_use_id,
        "status": status,
        "output_file": task.get("stdout_path").cloned().unwrap_or(Value::Null),
        "summary": summary,
        "session_id": session_id,
        "uuid": uuid(),
    }))
}
