//! `robota acp`: an Agent Client Protocol agent over stdio (editors such as Zed drive agents
//! this way), built on the official `agent-client-protocol` SDK (protocol v1), as a transport
//! over core's [`InteractiveSession`].
//!
//! `initialize`; `session/new` and `session/load` (a saved session resumed, its conversation
//! replayed as updates); `session/prompt` with the session's events streamed as
//! `session/update`s (answer and thought chunks, tool calls with kind, status and content
//! including diffs, the todo list as a plan); permission requests sent to the client as
//! `session/request_permission`; `session/cancel` aborting the prompt (it ends `cancelled`);
//! modes, which are the permission modes (`session/set_mode`); the session's commands advertised
//! (`available_commands_update`) and run when a prompt is `/name args`. When the client offers
//! `fs/read_text_file` / `fs/write_text_file`, the session's Read, Write, Edit and MultiEdit go
//! through the editor (its unsaved buffers are what the model reads); the MCP servers the client
//! passes in `session/new` and `session/load` are added to the session.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use agent_client_protocol::v1::{schema, ConnectionTo, Responder};
use agent_client_protocol::{Agent, Client, Error, Stdio};
use async_trait::async_trait;
use robota::framework::interactive::{
    InteractiveEventKind, InteractiveSession, PromptResult, SubscriptionHandle, ToolResultKind,
    ToolState,
};
use robota::mcp::McpServerEntry;
use robota::message::Role;
use robota::permissions::PermissionMode;
use robota::session::{PermissionHandler, PermissionRequest, PermissionResponse};
use serde::de::DeserializeOwned;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use crate::error::ServeError;
use crate::hosted::MAX_PROMPT_BYTES;
use crate::state::{OpenRequest, SessionFactory};

/// The ACP protocol version spoken.
pub const ACP_PROTOCOL_VERSION: u16 = 1;

/// Permission option ids offered to the client.
const ALLOW_ONCE: &str = "allow_once";
const ALLOW_SESSION: &str = "allow_always";
const REJECT_ONCE: &str = "reject_once";

/// An ACP message built from its JSON form (the schema types are `#[non_exhaustive]`; their
/// wire form is the protocol's stable contract).
fn message<T: DeserializeOwned>(value: Value) -> Result<T, Error> {
    serde_json::from_value(value).map_err(|e| Error::internal_error().data(json!(e.to_string())))
}

fn invalid_params(message: impl Into<String>) -> Error {
    Error::invalid_params().data(json!(message.into()))
}

fn from_serve(error: ServeError) -> Error {
    Error::new(-32000, error.message).data(json!({"code": error.code}))
}

/// Where a session's requests to the client go once the session is known to the client.
#[derive(Default)]
struct ClientLink {
    connection: Option<ConnectionTo<Client>>,
    session_id: Option<String>,
}

/// The link shared by a session's permission handler and file access.
type SharedLink = Arc<Mutex<ClientLink>>;

fn lock_link(link: &SharedLink) -> MutexGuard<'_, ClientLink> {
    link.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The permission handler of an ACP session: asks the client with
/// `session/request_permission` and waits for its choice (a cancelled prompt denies).
struct ClientPermissions {
    link: SharedLink,
}

impl ClientPermissions {
    fn link(&self) -> MutexGuard<'_, ClientLink> {
        lock_link(&self.link)
    }
}

/// What the client said it can do with files in `initialize`.
#[derive(Debug, Clone, Copy, Default)]
struct ClientFs {
    read_text_file: bool,
    write_text_file: bool,
}

/// How long a file tool waits for the editor to answer `fs/read_text_file` or
/// `fs/write_text_file` before the call fails.
const CLIENT_FS_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// The text files of an ACP session, as the editor keeps them: the built-in file tools read
/// and write through `fs/read_text_file` and `fs/write_text_file` (the editor's unsaved
/// buffers included). The tools run on blocking threads: each call is sent from the runtime
/// and waited for here.
struct ClientFiles {
    link: SharedLink,
    can: ClientFs,
    runtime: tokio::runtime::Handle,
}

impl ClientFiles {
    /// Sends one request to the client and waits for the answer (as JSON).
    fn call<Req>(&self, request: Value, what: &str) -> Result<Value, String>
    where
        Req: agent_client_protocol::JsonRpcRequest + DeserializeOwned + Send + 'static,
        Req::Response: serde::Serialize + Send,
    {
        let (connection, session_id) = {
            let link = lock_link(&self.link);
            match (&link.connection, &link.session_id) {
                (Some(c), Some(s)) => (c.clone(), s.clone()),
                _ => return Err(format!("no ACP client is connected to {what}")),
            }
        };
        let mut request = request;
        request["sessionId"] = json!(session_id);
        let request: Req = message(request).map_err(|e| e.to_string())?;
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        self.runtime.spawn(async move {
            let answer = connection
                .send_request(request)
                .block_task()
                .await
                .map(|a| serde_json::to_value(a).unwrap_or(Value::Null));
            let _ = tx.send(answer);
        });
        match rx.recv_timeout(CLIENT_FS_TIMEOUT) {
            Ok(Ok(answer)) => Ok(answer),
            Ok(Err(e)) => Err(format!("the editor could not {what}: {e}")),
            Err(_) => Err(format!(
                "the editor did not answer within {} s when asked to {what}",
                CLIENT_FS_TIMEOUT.as_secs()
            )),
        }
    }
}

impl robota::tools::builtins::HostFileAccess for ClientFiles {
    fn read_text(&self, path: &std::path::Path) -> Result<Option<String>, String> {
        if !self.can.read_text_file {
            return Ok(None);
        }
        let what = format!("read {}", path.display());
        match self.call::<schema::ReadTextFileRequest>(json!({"path": path}), &what) {
            Ok(answer) => Ok(Some(
                answer["content"].as_str().unwrap_or_default().to_string(),
            )),
            // A file neither the editor nor the disk has: the tool says so in its own words
            // (and Edit may create it).
            Err(_) if !path.exists() => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn write_text(&self, path: &std::path::Path, content: &str) -> Result<bool, String> {
        if !self.can.write_text_file {
            return Ok(false);
        }
        let what = format!("write {}", path.display());
        self.call::<schema::WriteTextFileRequest>(json!({"path": path, "content": content}), &what)
            .map(|_| true)
    }
}

/// The MCP servers of a `session/new` or `session/load` (ACP's `McpServer` list) as core's
/// entries: stdio servers and HTTP ones; SSE servers are left out (not offered in
/// `initialize`).
fn client_mcp_servers(servers: &[schema::McpServer]) -> Result<Vec<McpServerEntry>, Error> {
    let pairs = |list: &Value| -> Value {
        let mut map = serde_json::Map::new();
        for pair in list.as_array().into_iter().flatten() {
            if let (Some(name), Some(value)) = (pair["name"].as_str(), pair["value"].as_str()) {
                map.insert(name.to_string(), json!(value));
            }
        }
        Value::Object(map)
    };
    let mut config = serde_json::Map::new();
    for server in servers {
        let wire = serde_json::to_value(server).map_err(Error::into_internal_error)?;
        let Some(name) = wire["name"].as_str() else {
            return Err(invalid_params("an MCP server has no `name`"));
        };
        let entry = match wire["type"].as_str() {
            None | Some("stdio") => json!({
                "command": wire["command"],
                "args": wire["args"],
                "env": pairs(&wire["env"]),
            }),
            Some("http") => json!({
                "type": "http",
                "url": wire["url"],
                "headers": pairs(&wire["headers"]),
            }),
            Some(other) => {
                return Err(invalid_params(format!(
                    "MCP server `{name}`: the `{other}` transport is not supported (stdio and \
                     http are)"
                )))
            }
        };
        config.insert(name.to_string(), entry);
    }
    let (entries, problems) = robota::mcp::parse_mcp_servers(
        &Value::Object(config),
        &robota::mcp::McpServerOrigin::Host,
        &|_| None,
    );
    if let Some(problem) = problems.first() {
        return Err(invalid_params(format!("invalid MCP server: {problem:?}")));
    }
    Ok(entries)
}

#[async_trait]
impl PermissionHandler for ClientPermissions {
    async fn request_permission(
        &self,
        request: PermissionRequest,
        cancel: CancellationToken,
    ) -> PermissionResponse {
        let (connection, session_id) = {
            let link = self.link();
            match (&link.connection, &link.session_id) {
                (Some(c), Some(s)) => (c.clone(), s.clone()),
                _ => return PermissionResponse::deny("no ACP client is connected to ask"),
            }
        };
        let asked: Result<schema::RequestPermissionRequest, Error> = message(json!({
            "sessionId": session_id,
            "toolCall": {
                "toolCallId": request.tool_use_id,
                "title": permission_title(&request),
                "kind": tool_kind(&request.tool_name),
                "status": "pending",
                "rawInput": request.input,
            },
            "options": [
                {"optionId": ALLOW_ONCE, "name": "Allow", "kind": "allow_once"},
                {"optionId": ALLOW_SESSION, "name": "Allow for this session", "kind": "allow_always"},
                {"optionId": REJECT_ONCE, "name": "Reject", "kind": "reject_once"},
            ],
        }));
        let asked = match asked {
            Ok(asked) => asked,
            Err(e) => return PermissionResponse::deny(format!("cannot ask the client: {e}")),
        };
        let answer = tokio::select! {
            answer = connection.send_request(asked).block_task() => answer,
            () = cancel.cancelled() => return PermissionResponse::deny("the prompt was cancelled"),
        };
        let answer = match answer.map(|a| serde_json::to_value(a).unwrap_or(Value::Null)) {
            Ok(answer) => answer,
            Err(e) => return PermissionResponse::deny(format!("the client did not answer: {e}")),
        };
        let outcome = &answer["outcome"];
        match (outcome["outcome"].as_str(), outcome["optionId"].as_str()) {
            (Some("selected"), Some(ALLOW_ONCE)) => PermissionResponse::AllowOnce,
            (Some("selected"), Some(ALLOW_SESSION)) => PermissionResponse::AllowSession {
                rules: request.suggested_rules.clone(),
            },
            (Some("selected"), _) => PermissionResponse::deny("the user rejected this tool call"),
            _ => PermissionResponse::deny("the permission request was cancelled"),
        }
    }
}

fn permission_title(request: &PermissionRequest) -> String {
    let arg = ["file_path", "command", "path", "pattern", "url"]
        .iter()
        .find_map(|k| request.input.get(k).and_then(Value::as_str))
        .unwrap_or("");
    if arg.is_empty() {
        request.tool_name.clone()
    } else {
        format!("{} {arg}", request.tool_name)
    }
}

/// The ACP tool kind of a robota tool (how an editor shows it).
fn tool_kind(tool: &str) -> &'static str {
    match tool {
        "Read" | "NotebookRead" => "read",
        "Write" | "Edit" | "MultiEdit" | "NotebookEdit" => "edit",
        "Glob" | "Grep" | "LS" | "WebSearch" => "search",
        "Bash" | "BashOutput" | "KillShell" => "execute",
        "WebFetch" => "fetch",
        "TodoWrite" | "ExitPlanMode" => "think",
        _ => "other",
    }
}

/// One session the client opened.
struct AcpSession {
    session: Arc<InteractiveSession>,
    permissions: Arc<ClientPermissions>,
    /// The `seq` of the last event sent to the client (a prompt's answer waits for its end
    /// event to be sent first: the updates are delivered by a task of their own).
    delivered: tokio::sync::watch::Receiver<u64>,
    _updates: SubscriptionHandle,
}

/// The ACP agent: the sessions opened by the client, opened through a [`SessionFactory`].
pub struct AcpAgent {
    factory: Arc<dyn SessionFactory>,
    sessions: Mutex<HashMap<String, Arc<AcpSession>>>,
    /// The file methods the client offered in `initialize`.
    client_fs: Mutex<ClientFs>,
}

impl std::fmt::Debug for AcpAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AcpAgent").finish_non_exhaustive()
    }
}

/// The permission modes as ACP session modes.
fn modes(current: PermissionMode) -> Value {
    let describe = |mode: PermissionMode| match mode {
        PermissionMode::Default => ("Default", "Ask before tools that change things"),
        PermissionMode::AcceptEdits => ("Accept edits", "Allow file edits without asking"),
        PermissionMode::Plan => ("Plan", "Read-only: plan without changing anything"),
        PermissionMode::DontAsk => ("Don't ask", "Deny whatever would need asking"),
        PermissionMode::BypassPermissions => ("Bypass permissions", "Allow every tool"),
        _ => (mode.as_str(), ""),
    };
    let available: Vec<Value> = PermissionMode::ALL
        .iter()
        .map(|mode| {
            let (name, description) = describe(*mode);
            json!({"id": mode.as_str(), "name": name, "description": description})
        })
        .collect();
    json!({"currentModeId": current.as_str(), "availableModes": available})
}

/// A session update as the `session/update` notification.
fn update(session_id: &str, update: Value) -> Option<schema::SessionNotification> {
    message(json!({"sessionId": session_id, "update": update})).ok()
}

fn tool_title(tool: &ToolState) -> String {
    if tool.first_arg.is_empty() {
        tool.name.clone()
    } else {
        format!("{} {}", tool.name, tool.first_arg)
    }
}

/// A tool's end as content: its diff (old and new text of the changed lines) for an edit,
/// else its text result.
fn tool_content(tool: &ToolState) -> Vec<Value> {
    if let Some(path) = &tool.diff_file {
        let side = |keep: char| -> String {
            tool.diff_lines
                .iter()
                .filter_map(|line| {
                    let mut chars = line.chars();
                    match chars.next() {
                        Some(c) if c == ' ' || c == keep => Some(format!("{}\n", chars.as_str())),
                        _ => None,
                    }
                })
                .collect()
        };
        return vec![json!({
            "type": "diff", "path": path, "oldText": side('-'), "newText": side('+')
        })];
    }
    match &tool.tool_result_data {
        Some(text) if !text.is_empty() => vec![json!({
            "type": "content", "content": {"type": "text", "text": text}
        })],
        _ => Vec::new(),
    }
}

/// A session event as an ACP session update (`None`: nothing to show).
fn event_update(kind: &InteractiveEventKind) -> Option<Value> {
    Some(match kind {
        InteractiveEventKind::TextDelta { text } => json!({
            "sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}
        }),
        InteractiveEventKind::Thinking { text } => json!({
            "sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": text}
        }),
        InteractiveEventKind::ToolStart { tool } => {
            let mut call = json!({
                "sessionUpdate": "tool_call",
                "toolCallId": tool.tool_use_id,
                "title": tool_title(tool),
                "kind": tool_kind(&tool.name),
                "status": "in_progress",
            });
            if tool.first_arg.starts_with('/') && tool_kind(&tool.name) != "execute" {
                call["locations"] = json!([{"path": tool.first_arg}]);
            }
            call
        }
        InteractiveEventKind::ToolEnd { tool } => json!({
            "sessionUpdate": "tool_call_update",
            "toolCallId": tool.tool_use_id,
            "status": match tool.result {
                Some(ToolResultKind::Success) => "completed",
                _ => "failed",
            },
            "content": tool_content(tool),
        }),
        InteractiveEventKind::TodoUpdate { todos } => json!({
            "sessionUpdate": "plan",
            "entries": todos.iter().map(|todo| json!({
                "content": todo.content,
                "priority": "medium",
                "status": serde_json::to_value(todo.status).unwrap_or(json!("pending")),
            })).collect::<Vec<_>>(),
        }),
        _ => return None,
    })
}

/// The prompt's text: text blocks, embedded text resources and links, in order.
fn prompt_text(blocks: &[schema::ContentBlock]) -> String {
    let mut parts = Vec::new();
    for block in blocks {
        let value = serde_json::to_value(block).unwrap_or(Value::Null);
        match value["type"].as_str() {
            Some("text") => parts.push(value["text"].as_str().unwrap_or("").to_string()),
            Some("resource_link") => {
                parts.push(format!("@{}", value["uri"].as_str().unwrap_or("")));
            }
            Some("resource") => {
                let resource = &value["resource"];
                if let Some(text) = resource["text"].as_str() {
                    parts.push(format!(
                        "<context uri=\"{}\">\n{text}\n</context>",
                        resource["uri"].as_str().unwrap_or("")
                    ));
                }
            }
            _ => {}
        }
    }
    parts.join("\n")
}

impl AcpAgent {
    /// An agent opening its sessions through `factory`.
    pub fn new(factory: Arc<dyn SessionFactory>) -> Arc<Self> {
        Arc::new(AcpAgent {
            factory,
            sessions: Mutex::new(HashMap::new()),
            client_fs: Mutex::new(ClientFs::default()),
        })
    }

    fn sessions(&self) -> MutexGuard<'_, HashMap<String, Arc<AcpSession>>> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn get(&self, session_id: &str) -> Result<Arc<AcpSession>, Error> {
        self.sessions().get(session_id).cloned().ok_or_else(|| {
            invalid_params(format!(
                "no open session `{}` (session/new or session/load opens one)",
                session_id.chars().take(80).collect::<String>()
            ))
        })
    }

    /// Opens a session (new, or `resume`d) in `cwd` and streams its events to the client.
    async fn open(
        &self,
        cwd: PathBuf,
        resume: Option<String>,
        mcp_servers: &[schema::McpServer],
        connection: &ConnectionTo<Client>,
    ) -> Result<Arc<AcpSession>, Error> {
        let mcp_servers = client_mcp_servers(mcp_servers)?;
        if !cwd.is_absolute() {
            return Err(invalid_params("`cwd` must be an absolute path"));
        }
        let cwd = cwd
            .canonicalize()
            .ok()
            .filter(|p| p.is_dir())
            .ok_or_else(|| invalid_params(format!("`{}` is not a folder", cwd.display())))?;
        let link: SharedLink = Arc::default();
        let permissions = Arc::new(ClientPermissions {
            link: Arc::clone(&link),
        });
        let can = *self
            .client_fs
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let host_files = (can.read_text_file || can.write_text_file).then(|| {
            Arc::new(ClientFiles {
                link: Arc::clone(&link),
                can,
                runtime: tokio::runtime::Handle::current(),
            }) as Arc<dyn robota::tools::builtins::HostFileAccess>
        });
        let request = OpenRequest {
            cwd,
            resume,
            fork: false,
            permission_handler: Arc::clone(&permissions) as Arc<dyn PermissionHandler>,
            host_files,
            mcp_servers,
        };
        let factory = Arc::clone(&self.factory);
        let session = tokio::task::spawn_blocking(move || factory.open(request))
            .await
            .map_err(Error::into_internal_error)?
            .map_err(from_serve)?;
        let session_id = session.get_session_id();
        {
            let mut link = lock_link(&link);
            link.connection = Some(connection.clone());
            link.session_id = Some(session_id.clone());
        }
        let events = connection.clone();
        let id = session_id.clone();
        let (delivered_tx, delivered) = tokio::sync::watch::channel(0u64);
        let updates = session.subscribe(move |event| {
            if let Some(notification) = event_update(&event.kind).and_then(|u| update(&id, u)) {
                let _ = events.send_notification(notification);
            }
            delivered_tx.send_replace(event.seq);
        });
        let opened = Arc::new(AcpSession {
            session,
            permissions,
            delivered,
            _updates: updates,
        });
        self.sessions().insert(session_id, Arc::clone(&opened));
        Ok(opened)
    }

    /// Tells the client the session's commands (editors offer them as `/name` in the prompt).
    fn advertise_commands(&self, opened: &AcpSession, connection: &ConnectionTo<Client>) {
        let Ok(entries) = opened.session.list_commands() else {
            return;
        };
        let commands: Vec<Value> = entries
            .iter()
            .filter(|e| e.descriptor.user_invocable)
            .map(|e| {
                let mut command = json!({
                    "name": e.name,
                    "description": e.descriptor.description,
                });
                if let Some(hint) = &e.descriptor.argument_hint {
                    command["input"] = json!({"hint": hint});
                }
                command
            })
            .collect();
        if let Some(n) = update(
            &opened.session.get_session_id(),
            json!({"sessionUpdate": "available_commands_update", "availableCommands": commands}),
        ) {
            let _ = connection.send_notification(n);
        }
    }

    /// Runs `/name args` when `name` is one of the session's commands: its message is the
    /// answer. `None` when the text is not a command.
    async fn run_command(
        &self,
        opened: &AcpSession,
        text: &str,
        connection: &ConnectionTo<Client>,
    ) -> Option<Result<schema::PromptResponse, Error>> {
        let rest = text.trim().strip_prefix('/')?;
        let (name, args) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
        let known = opened
            .session
            .list_commands()
            .ok()?
            .iter()
            .any(|e| e.descriptor.user_invocable && e.name == name);
        if !known {
            return None;
        }
        let message_text = match opened.session.execute_command(name, args.trim()).await {
            Ok(result) => result.message,
            Err(e) => format!("/{name}: {e}"),
        };
        if let Some(n) = update(
            &opened.session.get_session_id(),
            json!({"sessionUpdate": "agent_message_chunk",
                   "content": {"type": "text", "text": message_text}}),
        ) {
            let _ = connection.send_notification(n);
        }
        Some(message(json!({"stopReason": "end_turn"})))
    }

    /// Replays a resumed session's conversation to the client.
    fn replay(&self, opened: &AcpSession, connection: &ConnectionTo<Client>) {
        let session_id = opened.session.get_session_id();
        for message in opened.session.get_messages() {
            let kind = match message.role {
                Role::User => "user_message_chunk",
                Role::Assistant => "agent_message_chunk",
                _ => continue,
            };
            let text = message.text();
            if text.is_empty() {
                continue;
            }
            if let Some(n) = update(
                &session_id,
                json!({"sessionUpdate": kind, "content": {"type": "text", "text": text}}),
            ) {
                let _ = connection.send_notification(n);
            }
        }
    }

    /// Runs a prompt to its end and answers the stop reason.
    async fn prompt(
        &self,
        request: schema::PromptRequest,
        connection: &ConnectionTo<Client>,
    ) -> Result<schema::PromptResponse, Error> {
        let opened = self.get(&request.session_id.to_string())?;
        let text = prompt_text(&request.prompt);
        if text.trim().is_empty() {
            return Err(invalid_params("the prompt has no text"));
        }
        if let Some(answered) = self.run_command(&opened, &text, connection).await {
            return answered;
        }
        if text.len() > MAX_PROMPT_BYTES {
            return Err(invalid_params(format!(
                "the prompt has {} bytes; at most {MAX_PROMPT_BYTES} are accepted",
                text.len()
            )));
        }
        let ticket = opened
            .session
            .submit_tracked_as_typed(&text, None, None)
            .map_err(|e| Error::new(-32000, format!("the prompt was refused: {e}")))?;
        let end = ticket.end().await;
        if let Some(seq) = end.event_seq {
            // Every update of the prompt reaches the client before its answer.
            let mut delivered = opened.delivered.clone();
            let _ = tokio::time::timeout(
                std::time::Duration::from_secs(10),
                delivered.wait_for(|sent| *sent >= seq),
            )
            .await;
        }
        let stop_reason = match end.result {
            PromptResult::Complete { outcome, .. } => match outcome.stop_reason {
                robota::engine::RunStopReason::MaxTurns => "max_turn_requests",
                _ => "end_turn",
            },
            PromptResult::Truncated { .. } => "max_tokens",
            PromptResult::Refused { .. } => "refusal",
            PromptResult::Interrupted { .. } | PromptResult::Cancelled => "cancelled",
            PromptResult::Error { message, .. } => {
                return Err(Error::new(-32000, message));
            }
        };
        message(json!({"stopReason": stop_reason}))
    }

    fn set_mode(&self, request: &schema::SetSessionModeRequest) -> Result<(), Error> {
        let opened = self.get(&request.session_id.to_string())?;
        let mode = PermissionMode::try_from(request.mode_id.to_string())
            .map_err(|e| invalid_params(format!("unknown mode: {e}")))?;
        opened
            .session
            .session()
            .set_permission_mode(mode)
            .map_err(|e| invalid_params(e.to_string()))
    }

    fn cancel(&self, session_id: &str) {
        if let Ok(opened) = self.get(session_id) {
            opened.session.abort();
        }
    }

    /// Shuts every session down (saving it).
    pub async fn shutdown(&self) {
        let sessions: Vec<_> = self.sessions().drain().map(|(_, s)| s).collect();
        for opened in sessions {
            opened.permissions.link().connection = None;
            opened.session.abort();
            opened
                .session
                .shutdown(robota::hooks::SessionEndReason::Other)
                .await;
        }
    }

    /// Serves ACP over this process's stdin and stdout until the client closes them.
    pub async fn serve_stdio(self: &Arc<Self>) -> Result<(), ServeError> {
        let agent = Arc::clone(self);
        let result = Agent
            .v1()
            .name("robota")
            .on_receive_request(
                {
                    let agent = Arc::clone(&agent);
                    async move |request: schema::InitializeRequest,
                                responder: Responder<schema::InitializeResponse>,
                                _connection: ConnectionTo<Client>| {
                        let offered = serde_json::to_value(&request).unwrap_or(Value::Null);
                        let fs = &offered["clientCapabilities"]["fs"];
                        *agent
                            .client_fs
                            .lock()
                            .unwrap_or_else(PoisonError::into_inner) = ClientFs {
                            read_text_file: fs["readTextFile"].as_bool().unwrap_or(false),
                            write_text_file: fs["writeTextFile"].as_bool().unwrap_or(false),
                        };
                        responder.respond(message(json!({
                            "protocolVersion": ACP_PROTOCOL_VERSION,
                            "agentCapabilities": {
                                "loadSession": true,
                                "promptCapabilities": {"embeddedContext": true},
                                "mcpCapabilities": {"http": true, "sse": false},
                            },
                            "agentInfo": {"name": "robota", "version": env!("CARGO_PKG_VERSION")},
                            "authMethods": [],
                        }))?)
                    }
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                {
                    let agent = Arc::clone(&agent);
                    async move |request: schema::NewSessionRequest,
                                responder: Responder<schema::NewSessionResponse>,
                                connection: ConnectionTo<Client>| {
                        let agent = Arc::clone(&agent);
                        // Opening reads settings and starts MCP servers: off the dispatch loop.
                        connection.clone().spawn(async move {
                            match agent
                                .open(request.cwd.clone(), None, &request.mcp_servers, &connection)
                                .await
                            {
                                Ok(opened) => {
                                    responder.respond(message(json!({
                                        "sessionId": opened.session.get_session_id(),
                                        "modes": modes(opened.session.session().permission_mode()),
                                    }))?)?;
                                    agent.advertise_commands(&opened, &connection);
                                    Ok(())
                                }
                                Err(e) => responder.respond_with_error(e),
                            }
                        })
                    }
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                {
                    let agent = Arc::clone(&agent);
                    async move |request: schema::LoadSessionRequest,
                                responder: Responder<schema::LoadSessionResponse>,
                                connection: ConnectionTo<Client>| {
                        let agent = Arc::clone(&agent);
                        connection.clone().spawn(async move {
                            let id = request.session_id.to_string();
                            if agent.get(&id).is_ok() {
                                return responder.respond_with_error(invalid_params(
                                    "the session is open already",
                                ));
                            }
                            match agent
                                .open(
                                    request.cwd.clone(),
                                    Some(id),
                                    &request.mcp_servers,
                                    &connection,
                                )
                                .await
                            {
                                Ok(opened) => {
                                    agent.replay(&opened, &connection);
                                    responder.respond(message(json!({
                                        "modes": modes(opened.session.session().permission_mode()),
                                    }))?)?;
                                    agent.advertise_commands(&opened, &connection);
                                    Ok(())
                                }
                                Err(e) => responder.respond_with_error(e),
                            }
                        })
                    }
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                {
                    let agent = Arc::clone(&agent);
                    async move |request: schema::PromptRequest,
                                responder: Responder<schema::PromptResponse>,
                                connection: ConnectionTo<Client>| {
                        let agent = Arc::clone(&agent);
                        // The prompt runs while the loop goes on: cancel and permission answers
                        // must get through.
                        connection.clone().spawn(async move {
                            match agent.prompt(request, &connection).await {
                                Ok(response) => responder.respond(response),
                                Err(e) => responder.respond_with_error(e),
                            }
                        })
                    }
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                {
                    let agent = Arc::clone(&agent);
                    async move |request: schema::SetSessionModeRequest,
                                responder: Responder<schema::SetSessionModeResponse>,
                                _connection: ConnectionTo<Client>| {
                        match agent.set_mode(&request) {
                            Ok(()) => responder.respond(message(json!({}))?),
                            Err(e) => responder.respond_with_error(e),
                        }
                    }
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_notification(
                {
                    let agent = Arc::clone(&agent);
                    async move |notification: schema::CancelNotification,
                                _connection: ConnectionTo<Client>| {
                        agent.cancel(&notification.session_id.to_string());
                        Ok(())
                    }
                },
                agent_client_protocol::on_receive_notification!(),
            )
            .connect_to(Stdio::new())
            .await;
        self.shutdown().await;
        result.map_err(|e| ServeError::internal(format!("ACP connection failed: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diffs_become_old_and_new_text() {
        let tool = ToolState {
            tool_use_id: "t".into(),
            name: "Edit".into(),
            first_arg: "/p/a.txt".into(),
            is_running: false,
            result: Some(ToolResultKind::Success),
            diff_file: Some("/p/a.txt".into()),
            diff_lines: vec![" keep".into(), "-old".into(), "+new".into()],
            tool_result_data: None,
        };
        let content = tool_content(&tool);
        assert_eq!(content[0]["oldText"], "keep\nold\n");
        assert_eq!(content[0]["newText"], "keep\nnew\n");
        assert_eq!(tool_kind("Bash"), "execute");
    }
}
