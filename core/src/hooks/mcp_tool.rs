//! `mcp_tool` hook handlers (Claude Code's `"type": "mcp_tool"`): the event's fields are put
//! into the tool's arguments, the tool of a connected MCP server is called through the
//! [`McpToolHookCaller`] the session supplies, and its text answer is read like a command hook's
//! stdout (a JSON decision when it starts with `{`, plain text otherwise).

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use super::config::McpToolHook;
use super::outcome::HookFailure;
use super::runner::{RawReply, RawResult};

/// Calls a tool of one of the session's MCP servers for an `mcp_tool` hook. Implemented by the
/// session's MCP connections (hooks know no MCP client).
#[async_trait::async_trait]
pub trait McpToolHookCaller: Send + Sync {
    /// Calls `tool` of `server` with `arguments` and returns the text of its result; `Err` says
    /// why there is none (no such server, not connected, the tool reported an error).
    async fn call_tool(
        &self,
        server: &str,
        tool: &str,
        arguments: Map<String, Value>,
        cancel: CancellationToken,
    ) -> Result<String, String>;
}

/// Runs one `mcp_tool` handler; a failure is non-blocking, as a command hook's crash is.
pub(crate) async fn run(
    hook: &McpToolHook,
    caller: Option<&Arc<dyn McpToolHookCaller>>,
    input_json: &str,
    timeout: Duration,
    cancel: &CancellationToken,
) -> RawResult {
    let failed =
        |message: String| RawResult::reply(RawReply::Failed(HookFailure::McpTool { message }));
    let Some(caller) = caller else {
        return failed(format!(
            "MCP server `{}` is not available: this hook runner has no MCP connections",
            hook.server
        ));
    };
    let event: Value = serde_json::from_str(input_json).unwrap_or(Value::Null);
    let arguments = hook
        .input
        .iter()
        .flatten()
        .map(|(name, value)| (name.clone(), substitute(value, &event)))
        .collect();
    // A child token: a timeout cancels the call without cancelling the caller's run.
    let call_cancel = cancel.child_token();
    let call = caller.call_tool(&hook.server, &hook.tool, arguments, call_cancel.clone());
    match tokio::time::timeout(timeout, call).await {
        Err(_) => {
            call_cancel.cancel();
            RawResult::reply(RawReply::Failed(HookFailure::Timeout {
                timeout_ms: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
            }))
        }
        Ok(_) if cancel.is_cancelled() => RawResult::reply(RawReply::Cancelled),
        Ok(Err(message)) => failed(message),
        Ok(Ok(text)) => RawResult {
            exit_code: Some(0),
            stdout: text,
            ..RawResult::reply(RawReply::Success)
        },
    }
}

/// `value` with every `${path}` in its strings replaced by the event's field at that dotted
/// path: a string field as it is, any other as JSON, a missing one as empty text. A string
/// that is exactly one `${path}` of a non-string field becomes that JSON value.
fn substitute(value: &Value, event: &Value) -> Value {
    match value {
        Value::String(text) => {
            if let Some(path) = text
                .strip_prefix("${")
                .and_then(|rest| rest.strip_suffix('}'))
                .filter(|path| !path.contains('}'))
            {
                if let Some(found) = lookup(event, path).filter(|v| !v.is_string()) {
                    return found.clone();
                }
            }
            Value::String(substitute_text(text, event))
        }
        Value::Array(items) => Value::Array(items.iter().map(|v| substitute(v, event)).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), substitute(v, event)))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn substitute_text(text: &str, event: &Value) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        let Some(len) = rest[start + 2..].find('}') else {
            break;
        };
        out.push_str(&rest[..start]);
        let path = &rest[start + 2..start + 2 + len];
        match lookup(event, path) {
            Some(Value::String(s)) => out.push_str(s),
            Some(Value::Null) | None => {}
            Some(other) => out.push_str(&other.to_string()),
        }
        rest = &rest[start + 3 + len..];
    }
    out.push_str(rest);
    out
}

/// The field at a dotted path (`tool_input.file_path`; array items by index).
fn lookup<'a>(event: &'a Value, path: &str) -> Option<&'a Value> {
    path.trim()
        .split('.')
        .try_fold(event, |node, key| match node {
            Value::Object(map) => map.get(key),
            Value::Array(items) => key.parse::<usize>().ok().and_then(|i| items.get(i)),
            _ => None,
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn substitutes_event_fields_by_dotted_path() {
        let event = json!({"session_id": "s1", "tool_input": {"file_path": "/a b.txt", "n": 3}});
        let input = json!({
            "path": "${tool_input.file_path}",
            "label": "${session_id}: ${tool_input.n} ${missing}!",
            "count": "${tool_input.n}",
            "nested": ["${tool_input.file_path}"],
            "kept": 7
        });
        assert_eq!(
            substitute(&input, &event),
            json!({
                "path": "/a b.txt",
                "label": "s1: 3 !",
                "count": 3,
                "nested": ["/a b.txt"],
                "kept": 7
            })
        );
        // An unterminated placeholder stays as written.
        assert_eq!(substitute_text("x ${oops", &event), "x ${oops");
    }
}
