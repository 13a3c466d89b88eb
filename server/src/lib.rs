//! `robota-server`: network transports for robota sessions (spec 004 "Transport Layer").
//!
//! [`Server`] hosts many [`InteractiveSession`]s in one process and serves them over HTTP (JSON
//! routes and Server-Sent Events) and WebSocket on one port, with the web monitor page at `/`.
//! It implements the engine's [`Transport`] contract: [`attach`](Transport::attach) a session
//! (or let clients open sessions through a [`SessionFactory`]), [`start`](Transport::start),
//! [`stop`](Transport::stop) (graceful: running prompts get time to finish, every session is
//! saved). The routes are thin: each one calls the session's submit / abort / command / state
//! API. The protocol is `server/PROTOCOL.md`; its wire types are in
//! [`robota_remote::wire`].
//!
//! [`acp`] is `robota acp`: an Agent Client Protocol agent over stdio, for editors.
//! [`mcp_serve`] is `robota mcp-serve`: the agent as an MCP server over stdio and streamable
//! HTTP.
//!
//! Security defaults: loopback, a bearer token on every `/v1` route but health, CORS closed,
//! request bodies capped, sessions confined to the project roots.
#![deny(missing_docs)]

pub mod acp;
mod auth;
mod error;
mod event_log;
mod hosted;
mod http;
pub mod mcp_serve;
mod monitor;
mod openapi;
mod permissions;
mod roots;
mod sse;
mod state;
mod ws;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use async_trait::async_trait;
use robota::framework::interactive::{InteractiveSession, Transport, TransportError};
use tokio::task::JoinHandle;

pub use auth::{generate_token, validate_token, MIN_TOKEN_LEN};
pub use error::ServeError;
pub use event_log::OVERFLOW_FACTOR;
pub use hosted::MAX_PROMPT_BYTES;
pub use permissions::NetworkPermissions;
pub use roots::ProjectRoots;
pub use state::{OpenRequest, ServerOptions, SessionFactory};

use state::ServerState;

/// The name this transport reports.
pub const TRANSPORT_NAME: &str = "http";

struct Running {
    addr: SocketAddr,
    task: JoinHandle<()>,
}

/// The HTTP + SSE + WebSocket transport.
pub struct Server {
    state: Arc<ServerState>,
    running: Mutex<Option<Running>>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("options", &self.state.options)
            .field("addr", &self.local_addr())
            .finish_non_exhaustive()
    }
}

impl Server {
    /// A server with these options. With a `factory`, clients may open and resume sessions
    /// (`POST /v1/sessions`); without one it serves only the sessions attached to it.
    pub fn new(options: ServerOptions, factory: Option<Arc<dyn SessionFactory>>) -> Arc<Self> {
        Arc::new(Server {
            state: ServerState::new(options, factory),
            running: Mutex::new(None),
        })
    }

    fn running(&self) -> MutexGuard<'_, Option<Running>> {
        self.running.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The address it listens on, once started.
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.running().as_ref().map(|r| r.addr)
    }

    /// A permission handler whose requests are answered over the network: build a session with
    /// it ([`SessionOptions::with_permission_handler`](robota::session::SessionOptions)), then
    /// [`host`](Self::host) the session with the same handler.
    pub fn permission_handler(&self) -> Arc<NetworkPermissions> {
        NetworkPermissions::new(
            self.state.options.permission_timeout,
            self.state.options.permission_default.clone(),
        )
    }

    /// Hosts a session built by the application, in `cwd` (which must be inside a project
    /// root), answering its permission requests over the network when `permissions` is the
    /// handler it was built with.
    pub fn host(
        &self,
        session: Arc<InteractiveSession>,
        permissions: Option<Arc<NetworkPermissions>>,
    ) -> Result<(), ServeError> {
        let cwd = session.session().cwd().to_path_buf();
        let cwd = self
            .state
            .options
            .roots
            .resolve(Some(&cwd.display().to_string()))?;
        self.state.host(session, cwd, permissions).map(|_| ())
    }

    /// Starts serving; returns the address bound.
    pub async fn serve(&self) -> Result<SocketAddr, TransportError> {
        if let Some(addr) = self.local_addr() {
            return Ok(addr);
        }
        let listener = tokio::net::TcpListener::bind(self.state.options.bind)
            .await
            .map_err(|e| {
                TransportError::new(
                    TRANSPORT_NAME,
                    format!("cannot listen on {}: {e}", self.state.options.bind),
                )
            })?;
        let addr = listener
            .local_addr()
            .map_err(|e| TransportError::new(TRANSPORT_NAME, e.to_string()))?;
        let app = http::router(Arc::clone(&self.state));
        let shutdown = self.state.shutdown.clone();
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async move { shutdown.cancelled().await })
                .await;
        });
        *self.running() = Some(Running { addr, task });
        Ok(addr)
    }

    /// Graceful stop: refuses new work, lets running prompts finish (up to the grace period),
    /// shuts every session down (saving it), ends the streams and stops listening.
    pub async fn shutdown(&self) {
        self.state.shut_down_all().await;
        let running = self.running().take();
        if let Some(running) = running {
            let _ = tokio::time::timeout(std::time::Duration::from_secs(10), running.task).await;
        }
    }

    /// The sessions hosted now (ids, oldest first).
    pub fn session_ids(&self) -> Vec<String> {
        self.state.list().iter().map(|h| h.id()).collect()
    }
}

#[async_trait]
impl Transport for Server {
    fn name(&self) -> &str {
        TRANSPORT_NAME
    }

    fn attach(&self, session: Arc<InteractiveSession>) -> Result<(), TransportError> {
        self.host(session, None)
            .map_err(|e| TransportError::new(TRANSPORT_NAME, e.message))
    }

    fn detach(&self, session_id: &str) {
        self.state.remove(session_id);
    }

    async fn start(&self) -> Result<(), TransportError> {
        self.serve().await.map(|_| ())
    }

    async fn stop(&self) -> Result<(), TransportError> {
        self.shutdown().await;
        Ok(())
    }
}
