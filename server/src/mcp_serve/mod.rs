//! `robota mcp-serve`: the agent as an MCP server (spec 004 "agent-transport/mcp"), over stdio
//! or streamable HTTP, as a transport over core's [`InteractiveSession`].
//!
//! Tools: `prompt` runs a prompt in a session (a new one, or one named by `session_id`: hosted
//! here already, or resumed from the store) and answers the model's answer, with the session id
//! in the structured content so the client can go on in the same session; and one tool per
//! session command ([`InteractiveSession::list_commands`], spec 000 "used by transport adapters
//! (e.g., MCP) to expose commands as tools"), named `command_<name>`, taking the command's
//! arguments as one `args` string. Nobody is there to answer permission requests: tools the
//! permission rules or mode do not allow are denied (the flags of `robota mcp-serve` set them).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use robota::framework::commands::CommandEntry;
use robota::framework::interactive::{InteractiveSession, PromptResult};
use robota::hooks::SessionEndReason;
use robota::session::{FnPermissionHandler, PermissionHandler, PermissionResponse};
use serde_json::{json, Map, Value};
use tokio_util::sync::CancellationToken;

use crate::error::ServeError;
use crate::hosted::MAX_PROMPT_BYTES;
use crate::roots::ProjectRoots;
use crate::state::{OpenRequest, SessionFactory};

/// The name of the tool that runs a prompt.
pub const PROMPT_TOOL: &str = "prompt";

/// The prefix of the tools that run a session command.
pub const COMMAND_TOOL_PREFIX: &str = "command_";

/// The path the streamable HTTP transport answers on.
pub const MCP_HTTP_PATH: &str = "/mcp";

/// How `robota mcp-serve` hosts sessions.
#[derive(Debug, Clone)]
pub struct McpServeOptions {
    /// The folders sessions may work in (`cwd` of the `prompt` tool resolves inside them; the
    /// first is the default).
    pub roots: ProjectRoots,
    /// Most sessions hosted at once.
    pub max_sessions: usize,
}

/// The agent as an MCP server. Cheap to clone: every clone (one per HTTP client session) shares
/// the hosted sessions.
#[derive(Clone)]
pub struct AgentMcpServer {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for AgentMcpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentMcpServer")
            .field("options", &self.inner.options)
            .finish_non_exhaustive()
    }
}

struct Inner {
    options: McpServeOptions,
    factory: Arc<dyn SessionFactory>,
    permissions: Arc<dyn PermissionHandler>,
    sessions: Mutex<Hosted>,
    /// Serializes opening sessions, so two calls resuming one id open it once.
    opening: tokio::sync::Mutex<()>,
}

#[derive(Default)]
struct Hosted {
    by_id: HashMap<String, Arc<InteractiveSession>>,
    /// The session a command runs in when the call names none: the last one used.
    last: Option<String>,
    /// A session opened only to list the commands, in the first root, that nothing ran in yet:
    /// the next `prompt` for a new session there takes it instead of opening (and saving)
    /// another.
    unused: Option<String>,
}

/// The `prompt` tool's arguments.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct PromptArgs {
    prompt: String,
    #[serde(default)]
    session_id: Option<String>,
    #[serde(default)]
    cwd: Option<String>,
}

/// A command tool's arguments.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct CommandArgs {
    #[serde(default)]
    args: String,
    #[serde(default)]
    session_id: Option<String>,
}

impl AgentMcpServer {
    /// A server opening its sessions through `factory`.
    pub fn new(options: McpServeOptions, factory: Arc<dyn SessionFactory>) -> Self {
        // Over MCP nobody answers a permission request: what the rules do not allow is denied,
        // with a message the model (and through it the client) can act on.
        let permissions: Arc<dyn PermissionHandler> = FnPermissionHandler::new(|request, _| {
            let tool = request.tool_name.clone();
            async move {
                PermissionResponse::deny(format!(
                    "`{tool}` needs approval and an MCP client cannot give it; start `robota \
                     mcp-serve` with --allowed-tools or --permission-mode to allow it"
                ))
            }
        });
        AgentMcpServer {
            inner: Arc::new(Inner {
                options,
                factory,
                permissions,
                sessions: Mutex::new(Hosted::default()),
                opening: tokio::sync::Mutex::new(()),
            }),
        }
    }

    fn hosted(&self) -> MutexGuard<'_, Hosted> {
        self.inner
            .sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The ids of the sessions hosted now.
    pub fn session_ids(&self) -> Vec<String> {
        self.hosted().by_id.keys().cloned().collect()
    }

    /// Serves MCP over this process's stdin and stdout until the client closes them.
    pub async fn serve_stdio(&self) -> Result<(), ServeError> {
        let running = self
            .clone()
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|e| ServeError::internal(format!("MCP initialization failed: {e}")))?;
        let _ = running.waiting().await;
        Ok(())
    }

    /// The streamable HTTP transport on [`MCP_HTTP_PATH`], behind the bearer `token`; stops
    /// taking requests when `shutdown` fires.
    pub fn http_router(&self, token: String, shutdown: CancellationToken) -> axum::Router {
        let server = self.clone();
        let config = StreamableHttpServerConfig::default()
            .with_cancellation_token(shutdown)
            .with_max_request_body_bytes(MAX_PROMPT_BYTES * 2);
        let service = StreamableHttpService::new(
            move || Ok(server.clone()),
            Arc::new(LocalSessionManager::default()),
            config,
        );
        axum::Router::new()
            .nest_service(MCP_HTTP_PATH, service)
            .layer(axum::middleware::from_fn_with_state(
                Arc::new(token),
                require_token,
            ))
    }

    /// Serves [`http_router`](Self::http_router) on `bind` until `shutdown` fires; returns the
    /// address bound and the serving task.
    pub async fn serve_http(
        &self,
        bind: SocketAddr,
        token: String,
        shutdown: CancellationToken,
    ) -> Result<(SocketAddr, tokio::task::JoinHandle<()>), ServeError> {
        let listener = tokio::net::TcpListener::bind(bind)
            .await
            .map_err(|e| ServeError::internal(format!("cannot listen on {bind}: {e}")))?;
        let addr = listener
            .local_addr()
            .map_err(|e| ServeError::internal(e.to_string()))?;
        let app = self.http_router(token, shutdown.clone());
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async move { shutdown.cancelled().await })
                .await;
        });
        Ok((addr, task))
    }

    /// Aborts running prompts and shuts every hosted session down (saving it).
    pub async fn shutdown(&self) {
        let sessions: Vec<_> = self.hosted().by_id.drain().map(|(_, s)| s).collect();
        for session in sessions {
            session.abort();
            session.shutdown(SessionEndReason::Other).await;
        }
    }

    /// The session `session_id` names (hosted, or resumed from the store), or a new one in
    /// `cwd`.
    async fn session_for(
        &self,
        session_id: Option<&str>,
        cwd: Option<&str>,
    ) -> Result<Arc<InteractiveSession>, ServeError> {
        if let Some(id) = session_id {
            if let Some(session) = self.hosted().by_id.get(id).cloned() {
                return Ok(session);
            }
        }
        let _opening = self.inner.opening.lock().await;
        if let Some(id) = session_id {
            if let Some(session) = self.hosted().by_id.get(id).cloned() {
                return Ok(session);
            }
        }
        if self.hosted().by_id.len() >= self.inner.options.max_sessions {
            return Err(ServeError::conflict(
                "too_many_sessions",
                format!(
                    "{} sessions are hosted, the most this server takes; restart it with a \
                     higher --max-sessions",
                    self.inner.options.max_sessions
                ),
            ));
        }
        let cwd = self.inner.options.roots.resolve(cwd)?;
        let factory = Arc::clone(&self.inner.factory);
        let request = OpenRequest {
            cwd,
            resume: session_id.map(str::to_string),
            fork: false,
            permission_handler: Arc::clone(&self.inner.permissions),
            host_files: None,
            mcp_servers: Vec::new(),
        };
        // Opening reads settings and the session store from disk.
        let session = tokio::task::spawn_blocking(move || factory.open(request))
            .await
            .map_err(|e| ServeError::internal(format!("opening the session failed: {e}")))??;
        self.hosted()
            .by_id
            .insert(session.get_session_id(), Arc::clone(&session));
        Ok(session)
    }

    /// The session a command runs in: the one named, else the last one used, else a new one.
    async fn command_session(
        &self,
        session_id: Option<&str>,
    ) -> Result<Arc<InteractiveSession>, ServeError> {
        let last = self.hosted().last.clone();
        self.session_for(session_id.or(last.as_deref()), None).await
    }

    fn remember(&self, session: &InteractiveSession) {
        let id = session.get_session_id();
        let mut hosted = self.hosted();
        if hosted.unused.as_deref() == Some(id.as_str()) {
            hosted.unused = None;
        }
        hosted.last = Some(id);
    }

    /// The session opened for listing, when a new session in `cwd` is asked for and it would
    /// be the same (the first root).
    fn take_unused(&self, cwd: Option<&str>) -> Option<Arc<InteractiveSession>> {
        let same_folder = match cwd {
            None => true,
            Some(cwd) => self
                .inner
                .options
                .roots
                .resolve(Some(cwd))
                .is_ok_and(|p| p == self.inner.options.roots.default_root()),
        };
        if !same_folder {
            return None;
        }
        let mut hosted = self.hosted();
        let id = hosted.unused.take()?;
        hosted.by_id.get(&id).cloned()
    }

    /// The `prompt` tool.
    async fn run_prompt(&self, arguments: Value, cancel: CancellationToken) -> CallToolResult {
        let args: PromptArgs = match serde_json::from_value(arguments) {
            Ok(args) => args,
            Err(e) => {
                return error_result(format!(
                    "bad arguments for `prompt` ({e}); expected {{\"prompt\": string, \
                     \"session_id\"?: string, \"cwd\"?: string}}"
                ))
            }
        };
        if args.prompt.trim().is_empty() {
            return error_result("`prompt` is empty".into());
        }
        if args.prompt.len() > MAX_PROMPT_BYTES {
            return error_result(format!(
                "the prompt has {} bytes; at most {MAX_PROMPT_BYTES} are accepted",
                args.prompt.len()
            ));
        }
        let unused = match args.session_id {
            None => self.take_unused(args.cwd.as_deref()),
            Some(_) => None,
        };
        let session = match unused {
            Some(session) => session,
            None => match self
                .session_for(args.session_id.as_deref(), args.cwd.as_deref())
                .await
            {
                Ok(session) => session,
                Err(e) => return error_result(e.message),
            },
        };
        self.remember(&session);
        let session_id = session.get_session_id();
        let ticket = match session.submit_tracked_as_typed(&args.prompt, None, None) {
            Ok(ticket) => ticket,
            Err(e) => return error_result(format!("the prompt was refused: {e}")),
        };
        let prompt_id = ticket.id();
        // The client cancelling the call (`notifications/cancelled`, or closing) aborts the
        // prompt; the ticket then resolves `interrupted`.
        let result = tokio::select! {
            result = ticket.result() => result,
            () = cancel.cancelled() => {
                session.cancel_prompt(prompt_id);
                return error_result("the prompt was cancelled".into());
            }
        };
        prompt_result(&session_id, result)
    }

    /// A command tool.
    async fn run_command(&self, entry_name: &str, arguments: Value) -> CallToolResult {
        let args: CommandArgs = match serde_json::from_value(arguments) {
            Ok(args) => args,
            Err(e) => {
                return error_result(format!(
                    "bad arguments for command `{entry_name}` ({e}); expected {{\"args\"?: \
                     string, \"session_id\"?: string}}"
                ))
            }
        };
        let session = match self.command_session(args.session_id.as_deref()).await {
            Ok(session) => session,
            Err(e) => return error_result(e.message),
        };
        self.remember(&session);
        match session.execute_command(entry_name, &args.args).await {
            Ok(result) => {
                let mut structured = json!({
                    "session_id": session.get_session_id(),
                    "success": result.success,
                });
                if let Some(data) = &result.data {
                    structured["data"] = data.clone();
                }
                let mut call = if result.success {
                    CallToolResult::success(vec![ContentBlock::text(result.message)])
                } else {
                    CallToolResult::error(vec![ContentBlock::text(result.message)])
                };
                call.structured_content = Some(structured);
                call
            }
            Err(e) => error_result(format!("/{entry_name}: {e}")),
        }
    }

    /// The commands of a session, as tools: any hosted session's (they share the CLI's
    /// configuration), else a new session's in the default folder.
    async fn command_entries(&self) -> Result<Vec<CommandEntry>, ServeError> {
        let session = self.command_session(None).await?;
        {
            let mut hosted = self.hosted();
            if hosted.last.is_none() {
                let id = session.get_session_id();
                hosted.last = Some(id.clone());
                hosted.unused = Some(id);
            }
        }
        Ok(session.list_commands()?)
    }
}

/// Rejects requests without the bearer token (401, saying nothing about what exists).
async fn require_token(State(token): State<Arc<String>>, request: Request, next: Next) -> Response {
    if crate::auth::authorized(request.headers(), &token) {
        next.run(request).await
    } else {
        ServeError::unauthorized().into_response()
    }
}

fn error_result(message: String) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message)])
}

/// A prompt's end as the tool's result: the answer as text, and in the structured content the
/// session id (to resume), the status and the stop reason.
fn prompt_result(session_id: &str, result: PromptResult) -> CallToolResult {
    let status = serde_json::to_value(result.status()).unwrap_or(Value::Null);
    let stop_reason = result
        .outcome()
        .and_then(|o| serde_json::to_value(o.stop_reason).ok())
        .unwrap_or(Value::Null);
    let (text, failed) = match &result {
        PromptResult::Complete { outcome, .. } => (outcome.response.clone(), false),
        PromptResult::Truncated { outcome } => (outcome.response.clone(), false),
        PromptResult::Refused { outcome } => (
            outcome
                .refusal
                .as_ref()
                .map(|r| format!("the model refused: {r:?}"))
                .unwrap_or_else(|| format!("the model refused: {}", outcome.response)),
            true,
        ),
        PromptResult::Error { message, .. } => (message.clone(), true),
        PromptResult::Interrupted { .. } => ("the prompt was interrupted".to_string(), true),
        PromptResult::Cancelled => ("the prompt was cancelled before it ran".to_string(), true),
    };
    let structured = json!({
        "session_id": session_id,
        "status": status,
        "stop_reason": stop_reason,
        "response": text,
    });
    let mut call = if failed {
        CallToolResult::error(vec![ContentBlock::text(text)])
    } else {
        CallToolResult::success(vec![ContentBlock::text(text)])
    };
    call.structured_content = Some(structured);
    call
}

/// A command's tool name: `command_` and the command's name with characters MCP tool names do
/// not allow replaced by `_`.
pub fn command_tool_name(command: &str) -> String {
    let cleaned: String = command
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{COMMAND_TOOL_PREFIX}{cleaned}")
}

fn schema(value: Value) -> Arc<Map<String, Value>> {
    match value {
        Value::Object(map) => Arc::new(map),
        _ => Arc::new(Map::new()),
    }
}

fn prompt_tool() -> Tool {
    Tool::new(
        PROMPT_TOOL,
        "Runs a prompt in a robota agent session and returns the answer. Without `session_id` a \
         new session starts; pass the `session_id` of the structured result to go on in the \
         same session (a saved session is resumed).",
        schema(json!({
            "type": "object",
            "properties": {
                "prompt": {"type": "string", "description": "What to ask the agent."},
                "session_id": {"type": "string", "description": "Go on in this session (from an earlier result)."},
                "cwd": {"type": "string", "description": "The project folder of a new session (inside the server's roots; default: the first root)."}
            },
            "required": ["prompt"],
            "additionalProperties": false
        })),
    )
}

fn command_tool(entry: &CommandEntry) -> Tool {
    let descriptor = &entry.descriptor;
    let hint = descriptor
        .argument_hint
        .as_deref()
        .map(|h| format!(" Arguments: {h}."))
        .unwrap_or_default();
    Tool::new(
        command_tool_name(&entry.name),
        format!(
            "The robota session command /{}: {}{hint} Runs in the session `session_id` names, \
             else the last session used.",
            entry.name, descriptor.description
        ),
        schema(json!({
            "type": "object",
            "properties": {
                "args": {"type": "string", "description": "The command's arguments, as typed after its name."},
                "session_id": {"type": "string", "description": "The session to run it in."}
            },
            "additionalProperties": false
        })),
    )
}

impl ServerHandler for AgentMcpServer {
    fn get_info(&self) -> ServerConfig {
        let mut info = ServerConfig::new(ServerCapabilities::builder().enable_tools().build());
        info.server_info = Implementation::new("robota", env!("CARGO_PKG_VERSION"));
        info
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let entries = self
            .command_entries()
            .await
            .map_err(|e| ErrorData::internal_error(e.message, None))?;
        let mut tools = vec![prompt_tool()];
        tools.extend(
            entries
                .iter()
                .filter(|e| e.descriptor.user_invocable)
                .map(command_tool),
        );
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let arguments = Value::Object(request.arguments.clone().unwrap_or_default());
        if request.name == PROMPT_TOOL {
            return Ok(self.run_prompt(arguments, context.ct.clone()).await.into());
        }
        let entries = self
            .command_entries()
            .await
            .map_err(|e| ErrorData::internal_error(e.message, None))?;
        let Some(entry) = entries
            .iter()
            .filter(|e| e.descriptor.user_invocable)
            .find(|e| command_tool_name(&e.name) == request.name)
        else {
            return Ok(error_result(format!(
                "no tool named `{}` (tools/list lists them)",
                request.name.chars().take(80).collect::<String>()
            ))
            .into());
        };
        Ok(self.run_command(&entry.name, arguments).await.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_tool_names_use_only_allowed_characters() {
        assert_eq!(command_tool_name("compact"), "command_compact");
        assert_eq!(command_tool_name("plugin:do it"), "command_plugin_do_it");
    }
}
