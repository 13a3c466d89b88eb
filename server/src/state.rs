//! The server's shared state: its options, the hosted sessions, the factory that opens new ones,
//! and the shutdown signal every stream watches.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Duration;

use robota::framework::interactive::InteractiveSession;
use robota::hooks::SessionEndReason;
use robota::session::{PermissionHandler, PermissionResponse};
use robota_remote::wire::SavedSessionList;
use tokio_util::sync::CancellationToken;

use crate::error::ServeError;
use crate::hosted::HostedSession;
use crate::permissions::NetworkPermissions;
use crate::roots::ProjectRoots;

/// What a new session is opened with.
pub struct OpenRequest {
    /// The project folder (resolved, inside a root).
    pub cwd: PathBuf,
    /// Resume this saved session.
    pub resume: Option<String>,
    /// With `resume`: continue in a copy with a new id.
    pub fork: bool,
    /// The handler its permission requests go to (answered over the network).
    pub permission_handler: Arc<dyn PermissionHandler>,
    /// Text files the client keeps itself (an editor's buffers, unsaved changes included): the
    /// session's Read, Write, Edit and MultiEdit go through it. `None`: the disk.
    pub host_files: Option<Arc<dyn robota::tools::builtins::HostFileAccess>>,
    /// MCP servers the client adds to this session (a server of the same name as one in the
    /// settings replaces it).
    pub mcp_servers: Vec<robota::mcp::McpServerEntry>,
}

impl std::fmt::Debug for OpenRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenRequest")
            .field("cwd", &self.cwd)
            .field("resume", &self.resume)
            .field("fork", &self.fork)
            .field("host_files", &self.host_files.is_some())
            .field(
                "mcp_servers",
                &self.mcp_servers.iter().map(|s| &s.name).collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

/// How the server opens sessions: the host (the `robota` CLI, or an application) decides the
/// provider, settings and store; the server decides the folder and answers permissions.
pub trait SessionFactory: Send + Sync {
    /// Opens a session. Errors are [`ServeError`]s (`session_locked`, `not_found` for an unknown
    /// resume id, `invalid_request` for settings problems).
    fn open(&self, request: OpenRequest) -> Result<Arc<InteractiveSession>, ServeError>;

    /// The saved sessions of a project folder (resolved, inside a root).
    fn list_saved(&self, cwd: &std::path::Path) -> Result<SavedSessionList, ServeError>;
}

/// The server's settings.
#[derive(Clone)]
pub struct ServerOptions {
    /// The address to bind (`127.0.0.1:0` picks a free port on loopback).
    pub bind: std::net::SocketAddr,
    /// The bearer token every `/v1` route (but health) requires.
    pub token: String,
    /// The folders sessions may work in.
    pub roots: ProjectRoots,
    /// Origins allowed by CORS (none by default: CORS closed).
    pub cors_origins: Vec<String>,
    /// The largest request body (and WebSocket message), in bytes.
    pub max_request_bytes: usize,
    /// Events kept per session for resume.
    pub event_buffer: usize,
    /// Bound of each client's queue before `text_delta`s are coalesced.
    pub client_buffer: usize,
    /// How long a permission request waits for an answer.
    pub permission_timeout: Duration,
    /// The answer when it times out.
    pub permission_default: PermissionResponse,
    /// How long running prompts get to finish on shutdown.
    pub shutdown_grace: Duration,
    /// Most sessions hosted at once.
    pub max_sessions: usize,
}

impl std::fmt::Debug for ServerOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerOptions")
            .field("bind", &self.bind)
            .field("token", &"<redacted>")
            .field("roots", &self.roots)
            .field("cors_origins", &self.cors_origins)
            .field("max_request_bytes", &self.max_request_bytes)
            .finish_non_exhaustive()
    }
}

impl ServerOptions {
    /// Defaults around a token and roots: loopback on a free port, CORS closed, 1 MiB bodies,
    /// 4096 events kept, permission requests denied after 5 minutes, 30 s shutdown grace, 1000
    /// sessions.
    pub fn new(token: String, roots: ProjectRoots) -> Self {
        ServerOptions {
            bind: std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
            token,
            roots,
            cors_origins: Vec::new(),
            max_request_bytes: 1024 * 1024,
            event_buffer: 4096,
            client_buffer: 256,
            permission_timeout: Duration::from_secs(300),
            permission_default: PermissionResponse::deny(
                "nobody answered the permission request in time",
            ),
            shutdown_grace: Duration::from_secs(30),
            max_sessions: 1000,
        }
    }
}

/// Shared by every route.
pub struct ServerState {
    /// The settings.
    pub options: ServerOptions,
    /// Opens sessions (`None`: only attached sessions are served; creating one is refused).
    pub factory: Option<Arc<dyn SessionFactory>>,
    sessions: RwLock<HashMap<String, Arc<HostedSession>>>,
    next_order: AtomicU64,
    shutting_down: AtomicBool,
    /// Fires when the server stops: streams end, sockets close.
    pub shutdown: CancellationToken,
}

impl ServerState {
    /// A state with no sessions.
    pub fn new(options: ServerOptions, factory: Option<Arc<dyn SessionFactory>>) -> Arc<Self> {
        Arc::new(ServerState {
            options,
            factory,
            sessions: RwLock::new(HashMap::new()),
            next_order: AtomicU64::new(0),
            shutting_down: AtomicBool::new(false),
            shutdown: CancellationToken::new(),
        })
    }

    fn read(&self) -> RwLockReadGuard<'_, HashMap<String, Arc<HostedSession>>> {
        self.sessions.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> RwLockWriteGuard<'_, HashMap<String, Arc<HostedSession>>> {
        self.sessions
            .write()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// True once shutdown began.
    pub fn is_shutting_down(&self) -> bool {
        self.shutting_down.load(Ordering::SeqCst)
    }

    /// Refuses new work during shutdown.
    pub fn check_open(&self) -> Result<(), ServeError> {
        if self.is_shutting_down() {
            Err(ServeError::shutting_down())
        } else {
            Ok(())
        }
    }

    /// A hosted session by id.
    pub fn get(&self, id: &str) -> Result<Arc<HostedSession>, ServeError> {
        self.read().get(id).cloned().ok_or_else(|| {
            ServeError::not_found(format!(
                "no hosted session `{id}` (GET /v1/sessions lists them; a saved one is resumed \
                 with POST /v1/sessions {{\"resume\": \"{id}\"}})",
                id = id.chars().take(80).collect::<String>()
            ))
        })
    }

    /// The hosted sessions, oldest first.
    pub fn list(&self) -> Vec<Arc<HostedSession>> {
        let mut sessions: Vec<_> = self.read().values().cloned().collect();
        sessions.sort_by_key(|s| s.order);
        sessions
    }

    /// Hosts a session (refused when it is already hosted or the server is full).
    pub fn host(
        &self,
        session: Arc<InteractiveSession>,
        cwd: PathBuf,
        permissions: Option<Arc<NetworkPermissions>>,
    ) -> Result<Arc<HostedSession>, ServeError> {
        let id = session.get_session_id();
        let mut sessions = self.write();
        if sessions.contains_key(&id) {
            return Err(ServeError::conflict(
                "session_locked",
                format!("session `{id}` is already hosted here"),
            ));
        }
        if sessions.len() >= self.options.max_sessions {
            return Err(ServeError::conflict(
                "busy",
                format!(
                    "the server hosts its maximum of {} sessions; close one first",
                    self.options.max_sessions
                ),
            ));
        }
        let hosted = HostedSession::new(
            session,
            cwd,
            permissions,
            self.options.event_buffer,
            self.options.client_buffer,
            self.next_order.fetch_add(1, Ordering::SeqCst),
        );
        sessions.insert(id, Arc::clone(&hosted));
        Ok(hosted)
    }

    /// Stops hosting a session: its streams end. Returns it, when it was hosted.
    pub fn remove(&self, id: &str) -> Option<Arc<HostedSession>> {
        let hosted = self.write().remove(id);
        if let Some(hosted) = &hosted {
            hosted.log.close();
        }
        hosted
    }

    /// Aborts a session's work, shuts it down (saving it) and stops hosting it.
    pub async fn close(&self, id: &str) -> Result<(), ServeError> {
        let hosted = self.get(id)?;
        hosted.session.shutdown(SessionEndReason::Other).await;
        self.remove(id);
        Ok(())
    }

    /// Graceful shutdown: refuses new work, gives running prompts `shutdown_grace` to finish,
    /// then aborts what is left and shuts every session down (saving it); streams end.
    pub async fn shut_down_all(&self) {
        self.shutting_down.store(true, Ordering::SeqCst);
        let sessions = self.list();
        let grace = self.options.shutdown_grace;
        let waits = sessions.iter().map(|hosted| {
            let session = Arc::clone(&hosted.session);
            async move {
                let _ = tokio::time::timeout(grace, session.wait_idle()).await;
            }
        });
        futures::future::join_all(waits).await;
        let ends = sessions.iter().map(|hosted| {
            let session = Arc::clone(&hosted.session);
            async move { session.shutdown(SessionEndReason::Other).await }
        });
        futures::future::join_all(ends).await;
        for hosted in sessions {
            self.remove(&hosted.id());
        }
        self.shutdown.cancel();
    }
}
