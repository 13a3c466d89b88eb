//! The MCP client: connections to Model Context Protocol servers (stdio child processes and
//! streamable HTTP endpoints through the official `rmcp` SDK, legacy HTTP+SSE endpoints
//! through robota's own transport (the private `sse` module), and servers the host defines in code, run in-process
//! ([`InProcessMcpServer`])), their status, and the tools a
//! session gets from them — `mcp__<server>__<tool>` for every server tool, and
//! `ListMcpResourcesTool` / `ReadMcpResourceTool` for their resources.
//!
//! Configuration ([`config`]) arrives from the framework's assembly (`.mcp.json`, settings,
//! plugins, the host's own list); this module reads no settings. An [`McpHub`] owns every
//! connection of one session:
//!
//! - **Start-up**: [`McpHub::start`] returns at once; every server is `pending` and connects in
//!   the background, all in parallel, each bounded by [`McpOptions::startup_timeout`]. A server
//!   that cannot be started, exits, never answers or answers with garbage ends up `failed` with
//!   the reason (and the tail of its stderr); the session goes on without it. The session's
//!   prompts wait for servers still starting before their first model call (never past the
//!   start-up timeout, [`McpHub::wait_for_startup_deadline`]); hosts can wait too
//!   ([`McpHub::wait_for_startup`]). Shutting down while servers start stops those starts and
//!   the processes they spawned.
//! - **Calls**: each call has [`McpOptions::call_timeout`]; an abort drops the request, which
//!   makes the SDK send `notifications/cancelled`. A failure is a tool error naming the server.
//! - **Processes**: a stdio server runs in a process group of its own, registered in the
//!   session's [`ProcessGroups`] as [`ProcessKind::McpServer`]: shutting the session down (or
//!   dropping it) stops the whole tree (`npx` and the `node` it starts), so nothing is orphaned.
//!
//! - **Changes**: every status change reaches the listener of [`McpHub::on_status_change`] (the
//!   session turns it into `mcp_server_status` events); a server's `tools/list_changed`
//!   notification re-lists its tools and tells the listener of [`McpHub::on_tools_change`] (the
//!   session then refreshes the tools the model sees). [`McpHub::reconnect`],
//!   [`McpHub::enable`] and [`McpHub::disable`] restart, start or stop one server for this
//!   session.
//!
//! The hub runs its connections on a small runtime of its own, so a session can be created (and
//! its servers connected) from any thread, inside or outside the host's async runtime, and a
//! host callback the connection calls (the OAuth browser step) runs while the host's own thread
//! is free.

pub mod config;
mod hook;
mod http_client;
mod in_process;
pub mod oauth;
mod oauth_client;
mod resources;
mod sse;
mod tool;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, Weak};
use std::time::Duration;

use rmcp::model::{Prompt, Resource};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::auth::AuthClient;
use rmcp::transport::streamable_http_client::{
    StreamableHttpClient, StreamableHttpClientTransportConfig,
};
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{Peer, RoleClient, ServiceExt};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::io::AsyncBufReadExt;

use crate::process::{ProcessGroup, ProcessGroups, ProcessKind};
use crate::tools::builtins::Builtins;
use crate::tools::Tool;

pub use config::{
    expand, is_valid_server_name, parse_mcp_servers, McpConfigWarning, McpServerEntry,
    McpServerOrigin, McpTransport,
};
pub use in_process::{
    call_result_from_answer, InProcessMcpServer, InProcessMcpTool, McpToolFuture, McpToolHandler,
};
pub use oauth::{McpAuthorizationHandler, McpOAuthConfig};
pub use resources::{LIST_RESOURCES_TOOL, READ_RESOURCE_TOOL};
pub use tool::McpTool;

/// Default of [`McpOptions::startup_timeout`] (Claude Code's `MCP_TIMEOUT` default is similar).
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(30);
/// Default of [`McpOptions::call_timeout`].
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(600);
/// Default of [`McpOptions::max_output_bytes`]: about 25 000 tokens, Claude Code's MCP output
/// limit (`MAX_MCP_OUTPUT_TOKENS`).
pub const DEFAULT_MAX_OUTPUT_BYTES: usize = 100_000;
/// How much of a stdio server's stderr is kept for failure messages.
const STDERR_TAIL_BYTES: usize = 4_000;

/// Limits of a session's MCP connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct McpOptions {
    /// How long a server may take to start and complete the handshake (`MCP_TIMEOUT`, in ms).
    pub startup_timeout: Duration,
    /// How long one call (tool, resource read) may take (`MCP_TOOL_TIMEOUT`, in ms).
    pub call_timeout: Duration,
    /// Bytes of text one MCP result may show the model before it is cut to head + tail, with
    /// the whole text in a spill file (`MAX_MCP_OUTPUT_TOKENS` × 4).
    pub max_output_bytes: usize,
}

impl Default for McpOptions {
    fn default() -> Self {
        McpOptions {
            startup_timeout: DEFAULT_STARTUP_TIMEOUT,
            call_timeout: DEFAULT_CALL_TIMEOUT,
            max_output_bytes: DEFAULT_MAX_OUTPUT_BYTES,
        }
    }
}

impl McpOptions {
    /// The defaults, adjusted by `MCP_TIMEOUT`, `MCP_TOOL_TIMEOUT` (milliseconds) and
    /// `MAX_MCP_OUTPUT_TOKENS` as Claude Code reads them; values that are not numbers are ignored.
    pub fn from_env(env: &dyn Fn(&str) -> Option<String>) -> Self {
        let number = |name: &str| env(name).and_then(|v| v.trim().parse::<u64>().ok());
        let mut options = McpOptions::default();
        if let Some(ms) = number("MCP_TIMEOUT").filter(|ms| *ms > 0) {
            options.startup_timeout = Duration::from_millis(ms);
        }
        if let Some(ms) = number("MCP_TOOL_TIMEOUT").filter(|ms| *ms > 0) {
            options.call_timeout = Duration::from_millis(ms);
        }
        if let Some(tokens) = number("MAX_MCP_OUTPUT_TOKENS").filter(|t| *t > 0) {
            options.max_output_bytes =
                usize::try_from(tokens.saturating_mul(4)).unwrap_or(usize::MAX);
        }
        options
    }
}

/// Where a server is in its life.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum McpServerStatus {
    /// Connecting.
    Pending,
    /// Connected; its tools are available.
    Connected,
    /// Could not be started or reached, or went away.
    Failed {
        /// Why.
        reason: String,
    },
    /// Not started: disabled by settings or waiting for the user's approval.
    Disabled {
        /// Why.
        reason: String,
    },
    /// A remote server that requires OAuth authorization robota does not have yet (no stored
    /// tokens that still work, and the browser step did not complete).
    NeedsAuth {
        /// What happened and how to authorize.
        reason: String,
    },
}

/// One server as hosts see it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct McpServerInfo {
    /// The server's name.
    pub name: String,
    /// Where it was defined.
    pub origin: McpServerOrigin,
    /// `stdio`, `http`, `sse`, or `sdk` for a server the host runs in-process.
    pub transport: String,
    /// Its status.
    pub status: McpServerStatus,
    /// The session tool names of its tools (`mcp__<server>__<tool>`), when connected.
    pub tools: Vec<String>,
    /// Its prompts' names, when connected.
    pub prompts: Vec<String>,
}

/// A server left out before connecting (disabled, or waiting for approval).
#[derive(Debug, Clone)]
pub struct McpSkippedServer {
    /// The entry.
    pub entry: McpServerEntry,
    /// Why it is not started.
    pub reason: String,
}

/// What a connection needs from the session.
#[derive(Debug, Clone, Default)]
pub struct McpConnectContext {
    /// The session's working directory (stdio servers' default cwd).
    pub cwd: PathBuf,
    /// Variables added to every stdio server's environment (the settings' `env`).
    pub env: BTreeMap<String, String>,
    /// The session's process groups, which stdio servers join.
    pub processes: ProcessGroups,
    /// Where OAuth tokens of remote servers are kept (`~/.robota/mcp-oauth`, see
    /// [`oauth::token_folder`]); `None` (no home directory) turns OAuth off: such servers end up
    /// `needs_auth`.
    pub oauth_folder: Option<PathBuf>,
    /// Shows the user a server's authorization URL; `None`: servers that need authorization end
    /// up `needs_auth` at once.
    pub authorization_handler: Option<McpAuthorizationHandler>,
}

/// Called with a server's name and new status whenever the status changes.
pub type McpStatusListener = Arc<dyn Fn(&str, &McpServerStatus) + Send + Sync>;

/// Called when the tools the hub offers changed (a server's `tools/list_changed`, a reconnect,
/// enable or disable).
pub type McpToolsListener = Arc<dyn Fn() + Send + Sync>;

/// What `/mcp` can do to one server for this session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum McpServerAction {
    /// [`McpHub::reconnect`].
    Reconnect,
    /// [`McpHub::enable`].
    Enable,
    /// [`McpHub::disable`].
    Disable,
    /// [`McpHub::authorize`] (`/mcp auth <server>`).
    Authorize,
    /// [`McpHub::logout`].
    Logout,
}

impl McpServerAction {
    /// The `/mcp` subcommand's name (`reconnect`, `enable`, `disable`).
    pub fn as_str(self) -> &'static str {
        match self {
            McpServerAction::Reconnect => "reconnect",
            McpServerAction::Enable => "enable",
            McpServerAction::Disable => "disable",
            McpServerAction::Authorize => "auth",
            McpServerAction::Logout => "logout",
        }
    }

    /// The action named `name`.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "reconnect" => Some(McpServerAction::Reconnect),
            "enable" => Some(McpServerAction::Enable),
            "disable" => Some(McpServerAction::Disable),
            "auth" => Some(McpServerAction::Authorize),
            "logout" => Some(McpServerAction::Logout),
            _ => None,
        }
    }
}

/// Why [`McpHub::reconnect`], [`McpHub::enable`] or [`McpHub::disable`] did not do it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum McpControlError {
    /// No server has this name.
    #[error("no MCP server is named `{name}`")]
    UnknownServer {
        /// The name asked for.
        name: String,
    },
    /// The server is disabled (by settings, awaiting approval, or for this session); enable it
    /// instead of reconnecting.
    #[error("MCP server `{name}` is disabled ({reason}); enable it first")]
    Disabled {
        /// The server.
        name: String,
        /// Why it is disabled.
        reason: String,
    },
    /// Starting or reaching the server failed.
    #[error("MCP server `{name}` failed to connect: {reason}")]
    ConnectFailed {
        /// The server.
        name: String,
        /// Why.
        reason: String,
    },
    /// The session's MCP connections are closed (the session shut down).
    #[error("the session's MCP connections are closed")]
    Closed,
    /// The action applies to remote (HTTP, SSE) servers only.
    #[error("MCP server `{name}` is not a remote server; it has no authorization")]
    NotRemote {
        /// The server.
        name: String,
    },
}

/// The client side of a connection: tells the hub when the server's tools changed.
#[derive(Clone, Default)]
struct ClientEvents {
    tools_changed: Arc<tokio::sync::Notify>,
}

impl rmcp::ClientHandler for ClientEvents {
    fn on_tool_list_changed(
        &self,
        _context: NotificationContext<RoleClient>,
    ) -> impl std::future::Future<Output = ()> + Send + '_ {
        self.tools_changed.notify_one();
        std::future::ready(())
    }
}

/// A server's live connection.
struct Connection {
    service: RunningService<RoleClient, ClientEvents>,
    /// The stdio server's process group (dropping it kills the group).
    group: Option<ProcessGroup>,
}

/// What the hub knows about one server.
pub(crate) struct ServerState {
    pub(crate) entry: McpServerEntry,
    status: Mutex<McpServerStatus>,
    /// True once the server connected: only such a server is restarted after it went away.
    pub(crate) ever_connected: AtomicBool,
    peer: Mutex<Option<Peer<RoleClient>>>,
    connection: Mutex<Option<Connection>>,
    /// Restarts after a crash: how many failed in a row, and when the next may be tried.
    restart: Mutex<RestartState>,
    /// Its tools as last listed (at start-up, after `tools/list_changed` or a reconnect).
    tools: Mutex<Vec<rmcp::model::Tool>>,
    /// Its prompts, as listed when it first connected.
    prompts: Mutex<Vec<Prompt>>,
    /// True once a connection said the server offers resources.
    has_resources: AtomicBool,
    /// True while the server's first connection (the session's start-up) is in progress.
    starting: AtomicBool,
    /// The task of that first connection, until it ends (aborted by shutdown or by `/mcp`).
    startup_task: Mutex<Option<tokio::task::JoinHandle<()>>>,
    stderr_tail: Arc<Mutex<String>>,
    /// Woken by the connection when the server sends `tools/list_changed`.
    events: ClientEvents,
    /// The hub's status listener (shared by every server of the hub).
    listener: Arc<Mutex<Option<McpStatusListener>>>,
}

/// When a crashed server may be started again.
#[derive(Debug, Default)]
struct RestartState {
    failures: u32,
    next_attempt: Option<std::time::Instant>,
}

/// The first wait before restarting a crashed server again after a failed restart; it doubles
/// with each failure, up to [`MAX_RESTART_BACKOFF`].
const FIRST_RESTART_BACKOFF: Duration = Duration::from_secs(1);
/// The longest wait between restart attempts.
const MAX_RESTART_BACKOFF: Duration = Duration::from_secs(60);

impl ServerState {
    fn new(entry: McpServerEntry, status: McpServerStatus) -> Self {
        ServerState {
            entry,
            status: Mutex::new(status),
            ever_connected: AtomicBool::new(false),
            peer: Mutex::new(None),
            connection: Mutex::new(None),
            restart: Mutex::default(),
            tools: Mutex::default(),
            prompts: Mutex::default(),
            has_resources: AtomicBool::new(false),
            starting: AtomicBool::new(false),
            startup_task: Mutex::new(None),
            stderr_tail: Arc::default(),
            events: ClientEvents::default(),
            listener: Arc::default(),
        }
    }

    /// True once the server connected (in this session).
    pub(crate) fn ever_connected(&self) -> bool {
        self.ever_connected.load(Ordering::SeqCst)
    }

    /// The server's prompts (listed when it first connected).
    pub(crate) fn prompts(&self) -> Vec<Prompt> {
        self.prompts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// True when the server offers resources.
    pub(crate) fn has_resources(&self) -> bool {
        self.has_resources.load(Ordering::SeqCst)
    }

    /// Keeps a connection that just started, with what it listed.
    fn record(&self, started: Started) {
        *self.tools.lock().unwrap_or_else(PoisonError::into_inner) = started.tools;
        *self.prompts.lock().unwrap_or_else(PoisonError::into_inner) = started.prompts;
        self.has_resources
            .store(started.has_resources, Ordering::SeqCst);
        *self.peer.lock().unwrap_or_else(PoisonError::into_inner) =
            Some(started.connection.service.peer().clone());
        *self
            .connection
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(started.connection);
        self.ever_connected.store(true, Ordering::SeqCst);
    }

    /// True while the server's start-up connection is in progress.
    fn is_starting(&self) -> bool {
        self.starting.load(Ordering::SeqCst)
    }

    /// The server's tools as last listed.
    pub(crate) fn tools(&self) -> Vec<rmcp::model::Tool> {
        self.tools
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Sets the status and tells the hub's listener when it changed.
    pub(crate) fn set_status(&self, status: McpServerStatus) {
        let changed = {
            let mut current = self.status.lock().unwrap_or_else(PoisonError::into_inner);
            let changed = *current != status;
            *current = status.clone();
            changed
        };
        if changed {
            let listener = self
                .listener
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone();
            if let Some(listener) = listener {
                listener(&self.entry.name, &status);
            }
        }
    }

    /// Marks the server failed (its process or connection went away) and drops the connection,
    /// which stops a stdio server's process group.
    pub(crate) fn fail(&self, reason: String) {
        self.set_status(McpServerStatus::Failed { reason });
        *self.peer.lock().unwrap_or_else(PoisonError::into_inner) = None;
        if let Some(connection) = self.take_connection() {
            drop(connection.group);
        }
    }

    /// Takes the live connection out (the caller closes or drops it).
    fn take_connection(&self) -> Option<Connection> {
        self.connection
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }

    /// The connected peer, if any.
    fn current_peer(&self) -> Option<Peer<RoleClient>> {
        self.peer
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The server's status now.
    pub(crate) fn status(&self) -> McpServerStatus {
        self.status
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// `reason` followed by the last lines the server wrote to stderr, when it wrote any.
    fn with_stderr_tail(&self, reason: String) -> String {
        let tail = self.stderr_tail();
        if tail.is_empty() {
            reason
        } else {
            format!("{reason}; its stderr ends with: {tail}")
        }
    }

    /// The last lines the server wrote to stderr, for error messages.
    pub(crate) fn stderr_tail(&self) -> String {
        self.stderr_tail
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .trim()
            .to_string()
    }
}

/// The MCP connections of one session (see the module docs).
pub struct McpHub {
    runtime: Option<tokio::runtime::Runtime>,
    /// What restarting a crashed server needs.
    context: McpConnectContext,
    pub(crate) servers: Vec<Arc<ServerState>>,
    pub(crate) options: McpOptions,
    /// The session's built-in tools, for the shared spill directory of long outputs.
    pub(crate) builtins: OnceLock<Builtins>,
    /// Shared with every server (see [`ServerState::set_status`]).
    status_listener: Arc<Mutex<Option<McpStatusListener>>>,
    /// Shared with the start-up tasks, which announce the tools of a server that connected.
    tools_listener: Arc<Mutex<Option<McpToolsListener>>>,
    /// How many servers are still in their start-up connection; waiters watch it reach 0.
    starting: Arc<tokio::sync::watch::Sender<usize>>,
    /// When the start-up connections began plus the start-up timeout: prompts wait for
    /// pending servers until then, never longer.
    startup_deadline: OnceLock<std::time::Instant>,
    /// Set by [`McpHub::shutdown`]: no connection is started any more.
    closed: AtomicBool,
}

impl std::fmt::Debug for McpHub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpHub")
            .field("servers", &self.servers())
            .finish()
    }
}

impl McpHub {
    /// The hub of `entries` (each `pending`, not yet started) and of `skipped` ones (disabled).
    /// Returns at once: [`start`](Self::start) connects the servers in the background, so that
    /// the listeners ([`on_status_change`](Self::on_status_change),
    /// [`on_tools_change`](Self::on_tools_change)) can be attached first and miss nothing.
    pub fn new(
        entries: Vec<McpServerEntry>,
        skipped: Vec<McpSkippedServer>,
        context: McpConnectContext,
        options: McpOptions,
    ) -> Result<Arc<McpHub>, String> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("robota-mcp")
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start the MCP runtime: {e}"))?;
        let status_listener: Arc<Mutex<Option<McpStatusListener>>> = Arc::default();
        let mut states: Vec<ServerState> = entries
            .into_iter()
            .map(|entry| {
                let state = ServerState::new(entry, McpServerStatus::Pending);
                state.starting.store(true, Ordering::SeqCst);
                state
            })
            .collect();
        let starting = states.len();
        for skipped in skipped {
            states.push(ServerState::new(
                skipped.entry,
                McpServerStatus::Disabled {
                    reason: skipped.reason,
                },
            ));
        }
        let mut servers: Vec<Arc<ServerState>> = states
            .into_iter()
            .map(|mut state| {
                state.listener = Arc::clone(&status_listener);
                Arc::new(state)
            })
            .collect();
        servers.sort_by(|a, b| a.entry.name.cmp(&b.entry.name));
        let hub = Arc::new(McpHub {
            runtime: Some(runtime),
            context,
            servers,
            options,
            builtins: OnceLock::new(),
            status_listener,
            tools_listener: Arc::default(),
            starting: Arc::new(tokio::sync::watch::Sender::new(starting)),
            startup_deadline: OnceLock::new(),
            closed: AtomicBool::new(false),
        });
        hub.watch_tool_lists();
        Ok(hub)
    }

    /// Starts connecting every pending server, all in parallel on the hub's runtime, each
    /// bounded by the start-up timeout; returns at once. Each server's status changes (to
    /// `connected`, `failed` or `needs_auth`) reach the status listener as they happen, and the
    /// tools of a server that connected reach the tools listener. Only the first call starts.
    pub fn start(&self) {
        let Some(runtime) = &self.runtime else {
            return;
        };
        if self
            .startup_deadline
            .set(std::time::Instant::now() + self.options.startup_timeout)
            .is_err()
        {
            return;
        }
        for server in self.servers.iter().filter(|s| s.is_starting()) {
            let task = runtime.spawn(start_up(
                Arc::clone(server),
                self.context.clone(),
                self.options,
                Arc::clone(&self.tools_listener),
                Arc::clone(&self.starting),
            ));
            *server
                .startup_task
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = Some(task);
        }
    }

    /// True while any server's start-up connection is in progress.
    pub fn is_starting(&self) -> bool {
        *self.starting.borrow() > 0
    }

    /// Waits until no server is in its start-up connection any more (each is `connected`,
    /// `failed`, `needs_auth` or `disabled`), for at most `timeout` (`None`: as long as that
    /// takes, which the start-up timeout bounds). True when none is starting any more.
    pub async fn wait_for_startup(&self, timeout: Option<Duration>) -> bool {
        if self.startup_deadline.get().is_none() {
            // Not started: nothing is connecting, and waiting would never end.
            return !self.is_starting();
        }
        self.wait_until(timeout, |_| true).await
    }

    /// Waits as a prompt does before its first model call: until no server is starting, but
    /// never past the start-up deadline (the start-up timeout after the servers began to
    /// connect). True when none is starting any more.
    pub async fn wait_for_startup_deadline(&self) -> bool {
        self.wait_until(Some(self.until_deadline()), |_| true).await
    }

    /// The time left until the start-up deadline (none before [`start`](Self::start): nothing
    /// is connecting then, so there is nothing to wait for).
    fn until_deadline(&self) -> Duration {
        self.startup_deadline
            .get()
            .map(|deadline| deadline.saturating_duration_since(std::time::Instant::now()))
            .unwrap_or_default()
    }

    /// Waits, for at most `timeout`, until no server that `which` selects is starting.
    async fn wait_until(
        &self,
        timeout: Option<Duration>,
        which: impl Fn(&ServerState) -> bool + Send + Sync + 'static,
    ) -> bool {
        let Some(runtime) = &self.runtime else {
            return true;
        };
        let servers: Vec<Arc<ServerState>> =
            self.servers.iter().filter(|s| which(s)).cloned().collect();
        let settled = move || !servers.iter().any(|s| s.is_starting());
        if settled() {
            return true;
        }
        let mut changes = self.starting.subscribe();
        // On the hub's runtime: the caller's may have no timer.
        let wait = runtime.spawn(async move {
            let settle = changes.wait_for(|_| settled());
            match timeout {
                Some(timeout) => matches!(tokio::time::timeout(timeout, settle).await, Ok(Ok(_))),
                None => settle.await.is_ok(),
            }
        });
        wait.await.unwrap_or(false)
    }

    /// Stops `server`'s start-up connection if it is still in progress (before `/mcp` acts on
    /// the server, or at shutdown); its status is left to the caller.
    async fn cancel_startup(&self, server: &ServerState) {
        let task = server
            .startup_task
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(task) = task {
            task.abort();
            // Awaiting the aborted task means its future, with any process it spawned, is gone.
            let _ = task.await;
        }
        if server.starting.swap(false, Ordering::SeqCst) {
            self.starting.send_modify(|n| *n = n.saturating_sub(1));
        }
    }

    /// One task per server that re-lists its tools whenever it sends `tools/list_changed`.
    fn watch_tool_lists(self: &Arc<Self>) {
        let Some(runtime) = &self.runtime else {
            return;
        };
        for server in &self.servers {
            let hub: Weak<McpHub> = Arc::downgrade(self);
            let server = Arc::clone(server);
            runtime.spawn(async move {
                loop {
                    server.events.tools_changed.notified().await;
                    let Some(hub) = hub.upgrade() else {
                        return;
                    };
                    hub.refresh_tools(&server).await;
                }
            });
        }
    }

    /// Lists `server`'s tools again and tells the tools listener.
    async fn refresh_tools(&self, server: &Arc<ServerState>) {
        let Some(peer) = server.current_peer() else {
            return;
        };
        let listed =
            tokio::time::timeout(self.options.startup_timeout, peer.list_all_tools()).await;
        if let Ok(Ok(tools)) = listed {
            *server.tools.lock().unwrap_or_else(PoisonError::into_inner) = tools;
            self.tools_changed();
        }
    }

    /// Tells the tools listener that the hub's tools changed.
    fn tools_changed(&self) {
        let listener = self
            .tools_listener
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if let Some(listener) = listener {
            listener();
        }
    }

    /// Calls `listener` with each server's status now, then on every change.
    pub fn on_status_change(&self, listener: McpStatusListener) {
        *self
            .status_listener
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(Arc::clone(&listener));
        for server in &self.servers {
            listener(&server.entry.name, &server.status());
        }
    }

    /// Calls `listener` whenever the tools the hub offers ([`McpHub::tools`]) changed.
    pub fn on_tools_change(&self, listener: McpToolsListener) {
        *self
            .tools_listener
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(listener);
    }

    /// Does `action` to server `name`.
    pub async fn control(
        &self,
        action: McpServerAction,
        name: &str,
    ) -> Result<McpServerInfo, McpControlError> {
        match action {
            McpServerAction::Reconnect => self.reconnect(name).await,
            McpServerAction::Enable => self.enable(name).await,
            McpServerAction::Disable => self.disable(name).await,
            McpServerAction::Authorize => self.authorize(name).await,
            McpServerAction::Logout => self.logout(name).await,
        }
    }

    /// Connects remote server `name` again, running the OAuth authorization when the server asks
    /// for it, with up to [`oauth::INTERACTIVE_AUTHORIZATION_TIMEOUT`] for the user to finish the
    /// browser step (`/mcp auth <server>`).
    pub async fn authorize(&self, name: &str) -> Result<McpServerInfo, McpControlError> {
        let server = self.enabled_target(name)?;
        self.cancel_startup(&server).await;
        let timeout = self
            .options
            .startup_timeout
            .max(oauth::INTERACTIVE_AUTHORIZATION_TIMEOUT);
        self.restart_within(&server, timeout).await
    }

    /// Forgets remote server `name`'s stored OAuth tokens and disconnects it; it is `needs_auth`
    /// until authorized again.
    pub async fn logout(&self, name: &str) -> Result<McpServerInfo, McpControlError> {
        let server = self.control_target(name)?;
        let url = match &server.entry.transport {
            McpTransport::Http { url, .. } | McpTransport::Sse { url, .. } => url.clone(),
            McpTransport::Stdio { .. } | McpTransport::InProcess { .. } => {
                return Err(McpControlError::NotRemote {
                    name: name.to_string(),
                })
            }
        };
        self.cancel_startup(&server).await;
        if let Some(folder) = &self.context.oauth_folder {
            oauth::forget_tokens(folder, name, &url).map_err(|reason| {
                McpControlError::ConnectFailed {
                    name: name.to_string(),
                    reason,
                }
            })?;
        }
        let connection = server.take_connection();
        *server.peer.lock().unwrap_or_else(PoisonError::into_inner) = None;
        server.set_status(McpServerStatus::NeedsAuth {
            reason: format!("signed out (/mcp logout); run `/mcp auth {name}` to authorize again"),
        });
        if let (Some(connection), Some(runtime)) = (connection, &self.runtime) {
            let _ = runtime.spawn(close(connection)).await;
        }
        self.tools_changed();
        Ok(self.info(&server))
    }

    /// Stops server `name` and starts it again (re-listing its tools). A disabled server is
    /// refused: [`enable`](Self::enable) it.
    pub async fn reconnect(&self, name: &str) -> Result<McpServerInfo, McpControlError> {
        let server = self.enabled_target(name)?;
        self.cancel_startup(&server).await;
        self.restart(&server).await
    }

    /// Starts server `name` for this session when it is disabled (by settings, awaiting
    /// approval, or by [`disable`](Self::disable)); a server that is not disabled is left as
    /// it is.
    pub async fn enable(&self, name: &str) -> Result<McpServerInfo, McpControlError> {
        let server = self.control_target(name)?;
        if !matches!(server.status(), McpServerStatus::Disabled { .. }) {
            return Ok(self.info(&server));
        }
        self.restart(&server).await
    }

    /// Stops server `name` for this session: its tools leave the session and calls to it fail
    /// saying it is disabled, until it is enabled again.
    pub async fn disable(&self, name: &str) -> Result<McpServerInfo, McpControlError> {
        let server = self.control_target(name)?;
        self.cancel_startup(&server).await;
        let connection = server.take_connection();
        *server.peer.lock().unwrap_or_else(PoisonError::into_inner) = None;
        server.set_status(McpServerStatus::Disabled {
            reason: "disabled for this session (/mcp disable)".into(),
        });
        if let (Some(connection), Some(runtime)) = (connection, &self.runtime) {
            let _ = runtime.spawn(close(connection)).await;
        }
        self.tools_changed();
        Ok(self.info(&server))
    }

    /// The server `name` when it is not disabled (reconnecting a disabled one is refused).
    fn enabled_target(&self, name: &str) -> Result<Arc<ServerState>, McpControlError> {
        let server = self.control_target(name)?;
        match server.status() {
            McpServerStatus::Disabled { reason } => Err(McpControlError::Disabled {
                name: name.to_string(),
                reason,
            }),
            _ => Ok(server),
        }
    }

    fn control_target(&self, name: &str) -> Result<Arc<ServerState>, McpControlError> {
        if self.runtime.is_none() || self.closed.load(Ordering::SeqCst) {
            return Err(McpControlError::Closed);
        }
        self.server(name)
            .cloned()
            .ok_or_else(|| McpControlError::UnknownServer {
                name: name.to_string(),
            })
    }

    /// Closes `server`'s connection (if any) and connects it again, with the start-up timeout.
    async fn restart(&self, server: &Arc<ServerState>) -> Result<McpServerInfo, McpControlError> {
        self.restart_within(server, self.options.startup_timeout)
            .await
    }

    /// [`restart`](Self::restart) with `timeout` for the start.
    async fn restart_within(
        &self,
        server: &Arc<ServerState>,
        timeout: Duration,
    ) -> Result<McpServerInfo, McpControlError> {
        let Some(runtime) = &self.runtime else {
            return Err(McpControlError::Closed);
        };
        let old = server.take_connection();
        *server.peer.lock().unwrap_or_else(PoisonError::into_inner) = None;
        server.set_status(McpServerStatus::Pending);
        let context = self.context.clone();
        let restarting = Arc::clone(server);
        let options = McpOptions {
            startup_timeout: timeout,
            ..self.options
        };
        let started = runtime
            .spawn(async move {
                if let Some(old) = old {
                    close(old).await;
                }
                connect_one(&restarting, &context, options).await
            })
            .await
            .unwrap_or_else(|e| Err(format!("the restart failed: {e}")));
        match started {
            Ok(started) => {
                server.record(started);
                *server
                    .restart
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner) = RestartState::default();
                server.set_status(McpServerStatus::Connected);
                self.tools_changed();
                Ok(self.info(server))
            }
            Err(reason) => {
                let reason = server.with_stderr_tail(reason);
                server.set_status(failure_status(reason.clone()));
                self.tools_changed();
                Err(McpControlError::ConnectFailed {
                    name: server.entry.name.clone(),
                    reason,
                })
            }
        }
    }

    /// Every server with its status, tools and prompts, sorted by name.
    pub fn servers(&self) -> Vec<McpServerInfo> {
        self.servers
            .iter()
            .map(|server| self.info(server))
            .collect()
    }

    /// One server as hosts see it.
    fn info(&self, server: &ServerState) -> McpServerInfo {
        let status = server.status();
        let connected = status == McpServerStatus::Connected;
        McpServerInfo {
            name: server.entry.name.clone(),
            origin: server.entry.origin.clone(),
            transport: match server.entry.transport {
                McpTransport::Stdio { .. } => "stdio".into(),
                McpTransport::Http { .. } => "http".into(),
                McpTransport::Sse { .. } => "sse".into(),
                McpTransport::InProcess { .. } => "sdk".into(),
            },
            tools: if connected {
                tool::session_tool_names(&server.entry.name, &server.tools())
                    .into_iter()
                    .map(|(name, _)| name)
                    .collect()
            } else {
                Vec::new()
            },
            prompts: if connected {
                server
                    .prompts()
                    .iter()
                    .map(|p| p.name.to_string())
                    .collect()
            } else {
                Vec::new()
            },
            status,
        }
    }

    /// The tools the session gets: each connected server's tools, and the resource tools when a
    /// server offers resources. Tool names that collide, or are not valid model tool names, are
    /// left out with a warning in `warnings`.
    pub fn tools(self: &Arc<Self>, warnings: &mut Vec<String>) -> Vec<Arc<dyn Tool>> {
        let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
        for server in &self.servers {
            // A crashed server keeps its tools (it is restarted on next use); a disabled one
            // does not.
            if !server.ever_connected()
                || matches!(server.status(), McpServerStatus::Disabled { .. })
            {
                continue;
            }
            let server_tools = server.tools();
            let mut seen = std::collections::BTreeSet::new();
            for (name, index) in tool::session_tool_names(&server.entry.name, &server_tools) {
                let original = &server_tools[index].name;
                if !seen.insert(name.clone()) {
                    warnings.push(format!(
                        "MCP server `{}`: tool `{original}` is left out: its name `{name}` \
                         collides with another tool of the server",
                        server.entry.name
                    ));
                    continue;
                }
                if name.len() > tool::MAX_TOOL_NAME {
                    warnings.push(format!(
                        "MCP server `{}`: tool `{original}` is left out: `{name}` is longer \
                         than {} characters, the longest tool name models accept",
                        server.entry.name,
                        tool::MAX_TOOL_NAME
                    ));
                    continue;
                }
                tools.push(Arc::new(McpTool::new(
                    Arc::clone(self),
                    Arc::clone(server),
                    name,
                    server_tools[index].clone(),
                )));
            }
        }
        if self.servers.iter().any(|s| s.has_resources()) {
            tools.push(Arc::new(resources::ListResourcesTool::new(Arc::clone(
                self,
            ))));
            tools.push(Arc::new(resources::ReadResourceTool::new(Arc::clone(self))));
        }
        tools
    }

    /// Gives long results the session's spill directory and the built-ins' budget.
    pub fn set_builtins(&self, builtins: Builtins) {
        let _ = self.builtins.set(builtins);
    }

    /// The server named `name`.
    pub(crate) fn server(&self, name: &str) -> Option<&Arc<ServerState>> {
        self.servers.iter().find(|s| s.entry.name == name)
    }

    /// The server's connection for a call. A server that connected once and then went away (its
    /// process crashed) is started again here, on next use, with a back-off between failed
    /// attempts (1 s, doubling up to 60 s); meanwhile calls fail at once with the reason.
    pub(crate) async fn peer(&self, server: &Arc<ServerState>) -> Result<Peer<RoleClient>, String> {
        let name = &server.entry.name;
        if server.is_starting() {
            // A call made while the session's servers are still starting (a hook, a prompt's
            // slash command) waits for this one, up to the start-up deadline.
            let starting = Arc::clone(server);
            self.wait_until(Some(self.until_deadline()), move |s| {
                std::ptr::eq(s, Arc::as_ptr(&starting))
            })
            .await;
        }
        if let Some(peer) = server.current_peer() {
            return Ok(peer);
        }
        let reason = match server.status() {
            McpServerStatus::Failed { reason } => reason,
            McpServerStatus::Disabled { reason } => {
                return Err(format!("MCP server `{name}` is disabled: {reason}"))
            }
            McpServerStatus::NeedsAuth { reason } => {
                return Err(format!("MCP server `{name}` needs authorization: {reason}"))
            }
            McpServerStatus::Pending => {
                return Err(format!(
                    "MCP server `{name}` is still starting (it has not connected within the \
                     start-up timeout)"
                ))
            }
            _ => return Err(format!("MCP server `{name}` is not connected")),
        };
        if !server.ever_connected() {
            return Err(format!("MCP server `{name}` is not available: {reason}"));
        }
        {
            let restart = server
                .restart
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if let Some(next) = restart.next_attempt {
                let now = std::time::Instant::now();
                if now < next {
                    return Err(format!(
                        "MCP server `{name}` is not available: {reason} (the next restart is \
                         tried in {} ms)",
                        (next - now).as_millis()
                    ));
                }
            }
        }
        let Some(runtime) = &self.runtime else {
            return Err("the session's MCP connections are closed".into());
        };
        let entry = server.entry.clone();
        let context = self.context.clone();
        let tail = Arc::clone(&server.stderr_tail);
        let events = server.events.clone();
        let timeout = self.options.startup_timeout;
        let started = runtime
            .spawn(async move {
                tokio::time::timeout(timeout, start(&entry, &context, tail, events, timeout))
                    .await
                    .unwrap_or_else(|_| Err("the restart timed out (MCP_TIMEOUT)".into()))
            })
            .await
            .unwrap_or_else(|e| Err(format!("the restart failed: {e}")));
        let mut restart = server
            .restart
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        match started {
            Ok(connection) => {
                let peer = connection.service.peer().clone();
                *server.peer.lock().unwrap_or_else(PoisonError::into_inner) = Some(peer.clone());
                *server
                    .connection
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner) = Some(connection);
                *restart = RestartState::default();
                drop(restart);
                server.set_status(McpServerStatus::Connected);
                Ok(peer)
            }
            Err(error) => {
                restart.failures += 1;
                let backoff = FIRST_RESTART_BACKOFF
                    .saturating_mul(1 << restart.failures.min(6).saturating_sub(1))
                    .min(MAX_RESTART_BACKOFF);
                restart.next_attempt = Some(std::time::Instant::now() + backoff);
                let message = format!("{reason}; restarting it failed: {error}");
                drop(restart);
                server.set_status(match failure_status(error) {
                    status @ McpServerStatus::NeedsAuth { .. } => status,
                    _ => McpServerStatus::Failed {
                        reason: message.clone(),
                    },
                });
                Err(format!("MCP server `{name}` is not available: {message}"))
            }
        }
    }

    /// Runs `work` on the hub's runtime with the call timeout, stopping it when `cancel` fires.
    pub(crate) async fn run_call<T: Send + 'static>(
        &self,
        work: impl std::future::Future<Output = Result<T, String>> + Send + 'static,
        cancel: &tokio_util::sync::CancellationToken,
    ) -> Result<T, String> {
        let Some(runtime) = &self.runtime else {
            return Err("the session's MCP connections are closed".into());
        };
        let timeout = self.options.call_timeout;
        let task = runtime.spawn(async move {
            match tokio::time::timeout(timeout, work).await {
                Ok(result) => result,
                Err(_) => Err(format!(
                    "no answer within {} ms (MCP_TOOL_TIMEOUT); the request was cancelled",
                    timeout.as_millis()
                )),
            }
        });
        let abort = task.abort_handle();
        tokio::select! {
            joined = task => joined.unwrap_or_else(|e| Err(format!("the call failed: {e}"))),
            () = cancel.cancelled() => {
                // Dropping the request makes the SDK send `notifications/cancelled`.
                abort.abort();
                Err("the call was aborted".into())
            }
        }
    }

    /// The argument names of prompt `prompt` of connected server `server`, in the server's
    /// order; `None` when the server has no such prompt.
    pub fn prompt_arguments(&self, server: &str, prompt: &str) -> Option<Vec<String>> {
        let state = self.server(server).filter(|s| s.ever_connected())?;
        let found = state.prompts().into_iter().find(|p| p.name == prompt)?;
        Some(
            found
                .arguments
                .iter()
                .flatten()
                .map(|a| a.name.clone())
                .collect(),
        )
    }

    /// Reads a prompt of `server` with `arguments`, as text for the model (the messages' text
    /// parts joined).
    pub async fn get_prompt(
        &self,
        server: &str,
        prompt: &str,
        arguments: serde_json::Map<String, Value>,
    ) -> Result<String, String> {
        let Some(state) = self.server(server) else {
            return Err(format!("no MCP server is named `{server}`"));
        };
        let peer = self.peer(state).await?;
        let mut params = rmcp::model::GetPromptRequestParams::new(prompt.to_string());
        if !arguments.is_empty() {
            params = params.with_arguments(arguments);
        }
        let result = self
            .run_call(
                async move {
                    match peer.get_prompt_once(params).await {
                        Ok(rmcp::model::GetPromptResponse::Complete(result)) => {
                            serde_json::to_value(&result).map_err(|e| e.to_string())
                        }
                        Ok(_) => Err("the server asked for input robota cannot give".into()),
                        Err(e) => Err(e.to_string()),
                    }
                },
                &tokio_util::sync::CancellationToken::new(),
            )
            .await?;
        let mut parts = Vec::new();
        for message in result["messages"].as_array().into_iter().flatten() {
            parts.push(tool::content_text(&message["content"]));
        }
        Ok(parts.join("\n\n"))
    }

    /// Stops the start-up connections still in progress (with the processes they started),
    /// closes every connection and stops the stdio servers' process groups.
    pub async fn shutdown(&self) {
        self.closed.store(true, Ordering::SeqCst);
        for server in &self.servers {
            if server.is_starting() {
                self.cancel_startup(server).await;
                // Unless the start finished just before it could be stopped.
                if server.status() == McpServerStatus::Pending {
                    server.set_status(McpServerStatus::Failed {
                        reason: "the session shut down before the server connected".into(),
                    });
                }
            }
        }
        let connections: Vec<Connection> = self
            .servers
            .iter()
            .filter_map(|s| s.take_connection())
            .collect();
        let Some(runtime) = &self.runtime else {
            return;
        };
        // All at once: each server gets up to 2 s to exit after its stdin closes; then its group
        // is killed (dropping the handle).
        let closing = runtime.spawn(futures::future::join_all(
            connections.into_iter().map(close),
        ));
        let _ = closing.await;
    }
}

impl Drop for McpHub {
    fn drop(&mut self) {
        for server in &self.servers {
            // A start-up still in progress is dropped with the runtime below; aborting it first
            // lets its process group go as soon as possible.
            if let Some(task) = server
                .startup_task
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take()
            {
                task.abort();
            }
            // Dropping a process group handle kills the group at once.
            if let Some(connection) = server.take_connection() {
                drop(connection.group);
                if let Some(runtime) = &self.runtime {
                    // The service's transport must be dropped inside the runtime.
                    let _guard = runtime.enter();
                    drop(connection.service);
                }
            }
        }
        if let Some(runtime) = self.runtime.take() {
            // Never block or drop a runtime from inside another one.
            runtime.shutdown_background();
        }
    }
}

/// The status of a server that could not be started: `needs_auth` when the reason says the
/// server waits for OAuth authorization, `failed` otherwise.
fn failure_status(reason: String) -> McpServerStatus {
    match reason.strip_prefix(oauth::NEEDS_AUTH) {
        Some(rest) if rest.starts_with(':') => McpServerStatus::NeedsAuth {
            reason: rest[1..].trim_start().to_string(),
        },
        _ => McpServerStatus::Failed { reason },
    }
}

/// Closes a connection: the server gets up to 2 s to exit after its stdin closes; then its group
/// is killed (dropping the handle).
async fn close(connection: Connection) {
    let _ = tokio::time::timeout(Duration::from_secs(2), connection.service.cancel()).await;
    drop(connection.group);
}

/// What a server's start-up connection found.
struct Started {
    connection: Connection,
    tools: Vec<rmcp::model::Tool>,
    prompts: Vec<Prompt>,
    has_resources: bool,
}

/// A server's start-up connection, a task of its own on the hub's runtime: connects (bounded by
/// the start-up timeout), records the connection, tools and prompts, announces the tools (so
/// the session's model sees them) and then the status.
async fn start_up(
    server: Arc<ServerState>,
    context: McpConnectContext,
    options: McpOptions,
    tools_listener: Arc<Mutex<Option<McpToolsListener>>>,
    starting: Arc<tokio::sync::watch::Sender<usize>>,
) {
    let started = connect_one(&server, &context, options).await;
    // From here to the end nothing awaits: an abort (`/mcp`, shutdown) either comes before and
    // drops the attempt, or after, and finds the connection recorded.
    match started {
        Ok(started) => {
            server.record(started);
            let listener = tools_listener
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone();
            if let Some(listener) = listener {
                listener();
            }
            server.set_status(McpServerStatus::Connected);
        }
        Err(reason) => server.set_status(failure_status(server.with_stderr_tail(reason))),
    }
    *server
        .startup_task
        .lock()
        .unwrap_or_else(PoisonError::into_inner) = None;
    if server.starting.swap(false, Ordering::SeqCst) {
        starting.send_modify(|n| *n = n.saturating_sub(1));
    }
}

/// Connects one server and lists its tools and prompts, all within the start-up timeout.
async fn connect_one(
    server: &ServerState,
    context: &McpConnectContext,
    options: McpOptions,
) -> Result<Started, String> {
    let deadline = tokio::time::Instant::now() + options.startup_timeout;
    let connection = tokio::time::timeout_at(
        deadline,
        start(
            &server.entry,
            context,
            Arc::clone(&server.stderr_tail),
            server.events.clone(),
            options.startup_timeout,
        ),
    )
    .await
    .map_err(|_| {
        format!(
            "it did not complete the MCP handshake within {} ms (MCP_TIMEOUT)",
            options.startup_timeout.as_millis()
        )
    })??;
    let peer = connection.service.peer().clone();
    let capabilities = connection
        .service
        .peer_info()
        .and_then(|info| serde_json::to_value(&*info).ok())
        .map(|info| info["capabilities"].clone())
        .unwrap_or(Value::Null);
    let listing = tokio::time::timeout_at(deadline, async {
        let tools = if capabilities.get("tools").is_some() {
            peer.list_all_tools().await.map_err(|e| e.to_string())?
        } else {
            Vec::new()
        };
        let prompts = if capabilities.get("prompts").is_some() {
            peer.list_all_prompts().await.unwrap_or_default()
        } else {
            Vec::new()
        };
        Ok::<_, String>((tools, prompts))
    })
    .await;
    let (tools, prompts) = match listing {
        Ok(Ok(lists)) => lists,
        Ok(Err(reason)) => {
            close(connection).await;
            return Err(format!("listing its tools failed: {reason}"));
        }
        Err(_) => {
            close(connection).await;
            return Err("it did not list its tools within the start-up timeout".into());
        }
    };
    Ok(Started {
        connection,
        tools,
        prompts,
        has_resources: capabilities.get("resources").is_some(),
    })
}

/// Starts the transport and completes the MCP handshake.
async fn start(
    entry: &McpServerEntry,
    context: &McpConnectContext,
    stderr_tail: Arc<Mutex<String>>,
    events: ClientEvents,
    startup_timeout: Duration,
) -> Result<Connection, String> {
    match &entry.transport {
        McpTransport::Stdio {
            command,
            args,
            env,
            cwd,
        } => {
            let mut cmd = tokio::process::Command::new(command);
            cmd.args(args)
                .envs(&context.env)
                .envs(env)
                .current_dir(match cwd {
                    Some(dir) if dir.is_relative() => context.cwd.join(dir),
                    Some(dir) => dir.clone(),
                    None => context.cwd.clone(),
                })
                .kill_on_drop(true);
            // A group of its own: stopping the server stops what it started (`npx` → `node`).
            #[cfg(unix)]
            cmd.process_group(0);
            // A server that dies at once must not take a C or Swift host down with SIGPIPE.
            crate::process::ignore_sigpipe_if_default();
            let (process, stderr) = TokioChildProcess::builder(cmd)
                .stderr(std::process::Stdio::piped())
                .spawn()
                .map_err(|e| format!("cannot run `{command}`: {e}"))?;
            let group = process.id().map(|pid| {
                let label = std::iter::once(command.as_str())
                    .chain(args.iter().map(String::as_str))
                    .collect::<Vec<_>>()
                    .join(" ");
                context.processes.adopt(pid, ProcessKind::McpServer, &label)
            });
            if let Some(stderr) = stderr {
                tokio::spawn(keep_stderr_tail(stderr, stderr_tail));
            }
            let service = events
                .serve(process)
                .await
                .map_err(|e| format!("the MCP handshake failed ({e})"))?;
            Ok(Connection { service, group })
        }
        McpTransport::Http { url, headers } => {
            let config = http_transport_config(url, headers)?;
            let client = http_client::streamable_http_client()?;
            let store = context
                .oauth_folder
                .as_deref()
                .map(|folder| oauth::TokenFile::new(folder, &entry.name, url));
            // Tokens of an earlier session first; a server that still answers 401 (refresh
            // impossible, tokens revoked) is authorized again below.
            let attempt = match store.as_ref().filter(|store| store.exists()) {
                Some(store) => match oauth::stored_authorization(url, store).await? {
                    Some(manager) => {
                        let client = AuthClient::new(client.clone(), manager);
                        serve_http(&events, client, config.clone(), url).await
                    }
                    None => serve_http(&events, client.clone(), config.clone(), url).await,
                },
                None => serve_http(&events, client.clone(), config.clone(), url).await,
            };
            let failure = match attempt {
                Ok(connection) => return Ok(connection),
                Err(failure) => failure,
            };
            let Some(challenge) = oauth::probe_challenge(&client, url).await else {
                return Err(failure);
            };
            let manager = authorize_server(
                entry,
                url,
                challenge.as_deref(),
                store,
                context,
                startup_timeout,
            )
            .await?;
            serve_http(&events, AuthClient::new(client, manager), config, url).await
        }
        McpTransport::InProcess { server } => {
            let service = events.serve(server.spawn()).await.map_err(|e| {
                format!("the MCP handshake with the in-process server failed ({e})")
            })?;
            Ok(Connection {
                service,
                group: None,
            })
        }
        McpTransport::Sse { url, headers } => {
            // OAuth over the legacy transport: the access token goes in the `Authorization`
            // header of the stream and of every post (refreshed when a connection starts).
            let store = context
                .oauth_folder
                .as_deref()
                .map(|folder| oauth::TokenFile::new(folder, &entry.name, url));
            let mut headers = headers.clone();
            let stored = match store.as_ref().filter(|store| store.exists()) {
                Some(store) => oauth::stored_authorization(url, store).await?,
                None => None,
            };
            if let Some(manager) = &stored {
                if let Ok(token) = manager.get_access_token().await {
                    headers.insert("Authorization".into(), format!("Bearer {token}"));
                }
            }
            let mut attempt = sse::SseClientTransport::connect(url, &headers).await;
            // A stored token the server rejects (revoked before its time): refresh it once.
            if let (Err(reason), Some(manager)) = (&attempt, &stored) {
                if reason.contains(sse::UNAUTHORIZED) && manager.refresh_token().await.is_ok() {
                    if let Ok(token) = manager.get_access_token().await {
                        headers.insert("Authorization".into(), format!("Bearer {token}"));
                        attempt = sse::SseClientTransport::connect(url, &headers).await;
                    }
                }
            }
            let transport = match attempt {
                Ok(transport) => transport,
                Err(reason) if reason.contains(sse::UNAUTHORIZED) => {
                    let manager =
                        authorize_server(entry, url, None, store, context, startup_timeout).await?;
                    let token = manager
                        .get_access_token()
                        .await
                        .map_err(|e| format!("OAuth gave no access token: {e}"))?;
                    headers.insert("Authorization".into(), format!("Bearer {token}"));
                    sse::SseClientTransport::connect(url, &headers).await?
                }
                Err(reason) => return Err(reason),
            };
            let service = events
                .serve(transport)
                .await
                .map_err(|e| format!("the MCP handshake with {url} failed ({e})"))?;
            Ok(Connection {
                service,
                group: None,
            })
        }
    }
}

/// Runs the OAuth authorization of a remote server that answered 401, bounded so that the
/// status can say it was the authorization that did not complete.
async fn authorize_server(
    entry: &McpServerEntry,
    url: &str,
    challenge: Option<&str>,
    store: Option<oauth::TokenFile>,
    context: &McpConnectContext,
    startup_timeout: Duration,
) -> Result<rmcp::transport::auth::AuthorizationManager, String> {
    let Some(store) = store else {
        return Err(format!(
            "{}: the server requires OAuth authorization, and without a home directory robota \
             has nowhere to keep its tokens",
            oauth::NEEDS_AUTH
        ));
    };
    // The browser step must end before the start-up timeout does.
    let wait = startup_timeout.mul_f32(0.9);
    tokio::time::timeout(
        wait,
        oauth::authorize(
            &entry.name,
            url,
            challenge,
            &entry.oauth.clone().unwrap_or_default(),
            &store,
            context.authorization_handler.as_ref(),
        ),
    )
    .await
    .map_err(|_| {
        format!(
            "{}: the OAuth authorization was not completed within {} ms; authorize with `/mcp \
             auth {}`",
            oauth::NEEDS_AUTH,
            wait.as_millis(),
            entry.name
        )
    })?
}

/// The streamable HTTP transport's configuration: the URL and the configured headers (a bearer
/// `Authorization` header as the transport's token).
fn http_transport_config(
    url: &str,
    headers: &BTreeMap<String, String>,
) -> Result<StreamableHttpClientTransportConfig, String> {
    let mut config = StreamableHttpClientTransportConfig::with_uri(url);
    let mut custom = std::collections::HashMap::new();
    for (name, value) in headers {
        if name.eq_ignore_ascii_case("authorization") {
            if let Some(token) = value.strip_prefix("Bearer ") {
                config = config.auth_header(token.to_string());
                continue;
            }
        }
        let name = reqwest::header::HeaderName::from_bytes(name.as_bytes())
            .map_err(|e| format!("header `{name}` is not a valid header name ({e})"))?;
        let value = reqwest::header::HeaderValue::from_str(value)
            .map_err(|e| format!("header `{name}` has an invalid value ({e})"))?;
        custom.insert(name, value);
    }
    Ok(config.custom_headers(custom))
}

/// Completes the MCP handshake over streamable HTTP with `client` (plain, or OAuth-authorized).
async fn serve_http<C>(
    events: &ClientEvents,
    client: C,
    config: StreamableHttpClientTransportConfig,
    url: &str,
) -> Result<Connection, String>
where
    C: StreamableHttpClient + Send + Sync + 'static,
{
    let transport = StreamableHttpClientTransport::with_client(client, config);
    let service = events
        .clone()
        .serve(transport)
        .await
        .map_err(|e| format!("cannot reach {url} or the MCP handshake failed ({e})"))?;
    Ok(Connection {
        service,
        group: None,
    })
}

/// Keeps the last [`STDERR_TAIL_BYTES`] of a server's stderr.
async fn keep_stderr_tail(stderr: tokio::process::ChildStderr, tail: Arc<Mutex<String>>) {
    let mut lines = tokio::io::BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let mut tail = tail.lock().unwrap_or_else(PoisonError::into_inner);
        tail.push_str(&line);
        tail.push('\n');
        if tail.len() > STDERR_TAIL_BYTES {
            let mut cut = tail.len() - STDERR_TAIL_BYTES;
            while !tail.is_char_boundary(cut) {
                cut += 1;
            }
            tail.drain(..cut);
        }
    }
}

/// What a call's failure says when the server's connection is gone (its process exited).
pub(crate) const CONNECTION_CLOSED: &str = "the server closed the connection";

/// A server's answer as its wire JSON, or the failure as a sentence.
pub(crate) fn answer_json<T: Serialize>(
    answer: Result<T, rmcp::ServiceError>,
) -> Result<Value, String> {
    match answer {
        Ok(result) => serde_json::to_value(&result).map_err(|e| e.to_string()),
        Err(rmcp::ServiceError::TransportClosed) => Err(CONNECTION_CLOSED.into()),
        Err(rmcp::ServiceError::McpError(e)) => {
            Err(format!("the server answered with an error: {}", e.message))
        }
        Err(e) => Err(e.to_string()),
    }
}

/// The resources of every connected server that offers them, with the server's name.
pub(crate) async fn list_resources(
    hub: &McpHub,
    only: Option<&str>,
    cancel: &tokio_util::sync::CancellationToken,
) -> Result<Vec<(String, Resource)>, String> {
    let mut all = Vec::new();
    for server in &hub.servers {
        if only.is_some_and(|name| name != server.entry.name) || !server.has_resources() {
            continue;
        }
        if !server.ever_connected() {
            continue;
        }
        let peer = hub.peer(server).await?;
        let name = server.entry.name.clone();
        let resources = hub
            .run_call(
                async move { peer.list_all_resources().await.map_err(|e| e.to_string()) },
                cancel,
            )
            .await
            .map_err(|e| format!("MCP server `{name}`: {e}"))?;
        all.extend(resources.into_iter().map(|r| (name.clone(), r)));
    }
    Ok(all)
}
