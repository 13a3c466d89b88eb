//! The SDK side of the control protocol as robota sees it: writing lines to stdout, and asking
//! the SDK things (`can_use_tool`, `hook_callback`, `mcp_message`) with a `control_request`
//! whose `control_response` comes back on stdin. The SDK's hooks, permission callback and
//! in-process MCP servers are wrapped here as the engine's own ports.

use std::collections::HashMap;
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, Weak};

use async_trait::async_trait;
use serde_json::{json, Map, Value};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use robota::framework::interactive::InteractiveSession;
use robota::hooks::{HookCallback, HookCallbackResult, HookInput};
use robota::mcp::{InProcessMcpServer, InProcessMcpTool, McpToolHandler};
use robota::session::permission_handler::{
    PermissionHandler, PermissionRequest, PermissionResponse, SettingsDestination,
};

/// Writes one JSON object per line to stdout, flushed, in the order of the calls (stdout's lock
/// keeps lines from different tasks whole).
pub fn emit(line: &Value) {
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{line}");
    let _ = stdout.flush();
}

/// What the SDK answered to one request: the `response` object, or its error message.
type Answer = Result<Value, String>;

/// The SDK as a party robota asks: pending requests by id, answered from stdin.
pub struct Host {
    next_id: AtomicU64,
    pending: Mutex<HashMap<String, oneshot::Sender<Answer>>>,
    /// Set when stdin ended: nobody is left to answer.
    closed: AtomicBool,
}

impl Host {
    /// A host with nothing pending.
    pub fn new() -> Arc<Self> {
        Arc::new(Host {
            next_id: AtomicU64::new(1),
            pending: Mutex::new(HashMap::new()),
            closed: AtomicBool::new(false),
        })
    }

    /// Sends `request` (`{"subtype": …, …}`) as a `control_request` and waits for the answer.
    /// Dropping the future (an abort, a hook timeout) tells the SDK with a
    /// `control_cancel_request`, so its callback is cancelled too.
    pub async fn request(self: &Arc<Self>, request: Value) -> Answer {
        if self.closed.load(Ordering::SeqCst) {
            return Err("the SDK closed robota's input, so it cannot answer".into());
        }
        let id = format!("robota_req_{}", self.next_id.fetch_add(1, Ordering::SeqCst));
        let (tx, rx) = oneshot::channel();
        self.pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id.clone(), tx);
        let mut guard = CancelOnDrop {
            host: Arc::downgrade(self),
            id: id.clone(),
            answered: false,
        };
        emit(&json!({"type": "control_request", "request_id": id, "request": request}));
        let answer = rx
            .await
            .unwrap_or_else(|_| Err("the SDK closed robota's input before answering".into()));
        guard.answered = true;
        answer
    }

    /// Delivers a `control_response`'s `response` object to the request waiting for it; an
    /// answer to nothing pending (late, after a cancel) is dropped.
    pub fn resolve(&self, response: &Value) {
        let Some(id) = response.get("request_id").and_then(Value::as_str) else {
            eprintln!("robota: a control_response without request_id was ignored");
            return;
        };
        let Some(tx) = self
            .pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(id)
        else {
            return;
        };
        let answer = match response.get("subtype").and_then(Value::as_str) {
            Some("error") => Err(response
                .get("error")
                .and_then(Value::as_str)
                .unwrap_or("the SDK answered with an error")
                .to_string()),
            _ => Ok(response
                .get("response")
                .cloned()
                .unwrap_or_else(|| json!({}))),
        };
        let _ = tx.send(answer);
    }

    /// Stdin ended: every pending request fails, later ones fail at once.
    pub fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        self.pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }
}

/// Withdraws a request whose waiter went away before the answer.
struct CancelOnDrop {
    host: Weak<Host>,
    id: String,
    answered: bool,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if self.answered {
            return;
        }
        if let Some(host) = self.host.upgrade() {
            host.pending
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(&self.id);
            if !host.closed.load(Ordering::SeqCst) {
                emit(&json!({"type": "control_cancel_request", "request_id": self.id}));
            }
        }
    }
}

/// Permission prompts answered by the SDK's `can_use_tool` callback
/// (`--permission-prompt-tool stdio`).
pub struct SdkPermissions {
    /// Where the questions go.
    pub host: Arc<Host>,
    /// The session, to abort when a denial says `interrupt`.
    pub session: Arc<OnceLock<Weak<InteractiveSession>>>,
}

#[async_trait]
impl PermissionHandler for SdkPermissions {
    async fn request_permission(
        &self,
        request: PermissionRequest,
        _cancel: CancellationToken,
    ) -> PermissionResponse {
        let ask = json!({
            "subtype": "can_use_tool",
            "tool_name": request.tool_name,
            "input": request.input,
            "tool_use_id": request.tool_use_id,
            "permission_suggestions": [],
            "blocked_path": null,
            "decision_reason": request.reason,
        });
        let answer = match self.host.request(ask).await {
            Ok(answer) => answer,
            Err(error) => return PermissionResponse::deny(format!("can_use_tool failed: {error}")),
        };
        match answer.get("behavior").and_then(Value::as_str) {
            Some("allow") => {
                let (rules, destination) = allow_rules(answer.get("updatedPermissions"));
                match answer.get("updatedInput") {
                    // The call runs with the SDK's input (checked against the deny rules).
                    Some(updated) if updated != &request.input => {
                        PermissionResponse::AllowWithInput {
                            input: updated.clone(),
                            rules,
                            destination,
                        }
                    }
                    _ => match (rules.is_empty(), destination) {
                        (true, _) => PermissionResponse::AllowOnce,
                        (false, None) => PermissionResponse::AllowSession { rules },
                        (false, Some(destination)) => {
                            PermissionResponse::AllowAlways { rules, destination }
                        }
                    },
                }
            }
            Some("deny") => {
                if answer.get("interrupt").and_then(Value::as_bool) == Some(true) {
                    if let Some(session) = self.session.get().and_then(Weak::upgrade) {
                        // After this answer is delivered: the abort ends the run.
                        tokio::spawn(async move { session.abort() });
                    }
                }
                let message = answer
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                PermissionResponse::deny(message)
            }
            _ => PermissionResponse::deny(format!(
                "can_use_tool answered {answer} without behavior \"allow\" or \"deny\""
            )),
        }
    }
}

/// The allow rules of the SDK's `updatedPermissions` (`addRules` with behavior `allow`), and the
/// settings file they are saved to (`None`: remembered for the session).
fn allow_rules(updates: Option<&Value>) -> (Vec<String>, Option<SettingsDestination>) {
    let mut rules = Vec::new();
    let mut destination = None;
    for update in updates.and_then(Value::as_array).into_iter().flatten() {
        if update.get("type").and_then(Value::as_str) != Some("addRules")
            || update.get("behavior").and_then(Value::as_str) != Some("allow")
        {
            continue;
        }
        for rule in update
            .get("rules")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let Some(tool) = rule.get("toolName").and_then(Value::as_str) else {
                continue;
            };
            rules.push(match rule.get("ruleContent").and_then(Value::as_str) {
                Some(content) => format!("{tool}({content})"),
                None => tool.to_string(),
            });
        }
        destination = match update.get("destination").and_then(Value::as_str) {
            Some("localSettings") => Some(SettingsDestination::LocalSettings),
            Some("projectSettings") => Some(SettingsDestination::ProjectSettings),
            Some("userSettings") => Some(SettingsDestination::UserSettings),
            _ => destination,
        };
    }
    (rules, destination)
}

/// One hook callback the SDK registered in `initialize`, run through `hook_callback`.
pub struct SdkHook {
    /// Where the calls go.
    pub host: Arc<Host>,
    /// The SDK's id of the callback (`hook_0`, …).
    pub callback_id: String,
}

#[async_trait]
impl HookCallback for SdkHook {
    fn name(&self) -> &str {
        &self.callback_id
    }

    async fn call(&self, input: &HookInput) -> HookCallbackResult {
        let input = match serde_json::to_value(input) {
            Ok(input) => input,
            Err(error) => {
                return HookCallbackResult::Error {
                    message: format!("cannot encode the hook input: {error}"),
                }
            }
        };
        let tool_use_id = input.get("tool_use_id").cloned().unwrap_or(Value::Null);
        let answer = self
            .host
            .request(json!({
                "subtype": "hook_callback",
                "callback_id": self.callback_id,
                "input": input,
                "tool_use_id": tool_use_id,
            }))
            .await;
        robota::api::hook_result_from_answer(answer)
    }
}

/// Builds the SDK's in-process MCP server `name` (`{"type": "sdk"}` in `--mcp-config`) as a
/// robota in-process server whose tools relay `tools/call` through `mcp_message`.
pub async fn sdk_mcp_server(host: &Arc<Host>, name: &str) -> Result<InProcessMcpServer, String> {
    let relay = McpRelay {
        host: host.clone(),
        server: name.to_string(),
        next_id: Arc::new(AtomicU64::new(1)),
    };
    let initialized = relay
        .call(
            "initialize",
            json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "robota", "version": env!("CARGO_PKG_VERSION")},
            }),
        )
        .await?;
    relay.notify("notifications/initialized").await;
    let listed = relay.call("tools/list", json!({})).await?;
    let version = initialized
        .pointer("/serverInfo/version")
        .and_then(Value::as_str)
        .map(str::to_string);
    let mut tools = Vec::new();
    for tool in listed
        .get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let Some(tool_name) = tool.get("name").and_then(Value::as_str) else {
            return Err(format!(
                "SDK MCP server `{name}` listed a tool without a name"
            ));
        };
        let handler = Arc::new(RelayedTool {
            relay: relay.clone(),
            tool: tool_name.to_string(),
        });
        let definition = InProcessMcpTool::new(
            tool_name,
            tool.get("description")
                .and_then(Value::as_str)
                .unwrap_or_default(),
            tool.get("inputSchema").cloned().unwrap_or(Value::Null),
            handler,
        )
        .with_annotations(tool.get("annotations").cloned().unwrap_or(Value::Null))?;
        tools.push(definition);
    }
    InProcessMcpServer::new(name, version, tools)
}

/// JSON-RPC to one SDK MCP server, each message carried by an `mcp_message` request.
#[derive(Clone)]
struct McpRelay {
    host: Arc<Host>,
    server: String,
    next_id: Arc<AtomicU64>,
}

impl McpRelay {
    /// A JSON-RPC request; its `result`, or the JSON-RPC error's message.
    async fn call(&self, method: &str, params: Value) -> Result<Value, String> {
        let id = self.next_id.fetch_add(1, Ordering::SeqCst);
        let answer = self
            .host
            .request(json!({
                "subtype": "mcp_message",
                "server_name": self.server,
                "message": {"jsonrpc": "2.0", "id": id, "method": method, "params": params},
            }))
            .await
            .map_err(|error| format!("SDK MCP server `{}`: {error}", self.server))?;
        let response = answer.get("mcp_response").cloned().unwrap_or(Value::Null);
        if let Some(error) = response.get("error") {
            let message = error
                .get("message")
                .and_then(Value::as_str)
                .map_or_else(|| error.to_string(), str::to_string);
            return Err(format!(
                "SDK MCP server `{}`: {method}: {message}",
                self.server
            ));
        }
        response.get("result").cloned().ok_or_else(|| {
            format!(
                "SDK MCP server `{}`: {method}: the answer {response} has no result",
                self.server
            )
        })
    }

    /// A JSON-RPC notification (its answer carries nothing).
    async fn notify(&self, method: &str) {
        let _ = self
            .host
            .request(json!({
                "subtype": "mcp_message",
                "server_name": self.server,
                "message": {"jsonrpc": "2.0", "method": method},
            }))
            .await;
    }
}

/// A tool of an SDK MCP server: each call is a relayed `tools/call`.
struct RelayedTool {
    relay: McpRelay,
    tool: String,
}

/// The fields of an MCP tool result robota passes on.
const RESULT_FIELDS: [&str; 3] = ["content", "isError", "structuredContent"];

#[async_trait]
impl McpToolHandler for RelayedTool {
    async fn call(&self, arguments: Value, cancel: CancellationToken) -> Result<Value, String> {
        let call = self.relay.call(
            "tools/call",
            json!({"name": self.tool, "arguments": arguments}),
        );
        let result = tokio::select! {
            result = call => result?,
            () = cancel.cancelled() => return Err("the call was cancelled".into()),
        };
        let Value::Object(fields) = result else {
            return Err(format!(
                "the tool answered {result}, not an MCP tool result"
            ));
        };
        let kept: Map<String, Value> = fields
            .into_iter()
            .filter(|(key, _)| RESULT_FIELDS.contains(&key.as_str()))
            .collect();
        if !kept.contains_key("content") {
            return Ok(Value::Object(
                [("content".to_string(), json!([]))]
                    .into_iter()
                    .chain(kept)
                    .collect(),
            ));
        }
        Ok(Value::Object(kept))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allow_updates_become_session_or_saved_rules() {
        assert_eq!(allow_rules(None), (Vec::new(), None));
        let session = json!([{"type": "addRules", "behavior": "allow", "destination": "session",
            "rules": [{"toolName": "Bash", "ruleContent": "npm test"}, {"toolName": "Read"}]}]);
        assert_eq!(
            allow_rules(Some(&session)),
            (vec!["Bash(npm test)".into(), "Read".into()], None)
        );
        let saved = json!([{"type": "addRules", "behavior": "allow",
            "destination": "projectSettings", "rules": [{"toolName": "Edit"}]}]);
        assert_eq!(
            allow_rules(Some(&saved)),
            (
                vec!["Edit".into()],
                Some(SettingsDestination::ProjectSettings)
            )
        );
        // Other updates (a mode change, deny rules) are not allow rules.
        let other = json!([{"type": "setMode", "mode": "acceptEdits", "destination": "session"}]);
        assert_eq!(allow_rules(Some(&other)), (Vec::new(), None));
    }

    #[tokio::test]
    async fn a_closed_host_answers_with_an_error_at_once() {
        let host = Host::new();
        host.close();
        let answer = host.request(json!({"subtype": "can_use_tool"})).await;
        assert!(answer.is_err_and(|e| e.contains("closed")));
    }
}
