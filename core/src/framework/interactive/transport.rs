//! The transport contract (spec 004 "Transport Layer"): a [`Transport`] exposes
//! [`InteractiveSession`]s over some protocol (HTTP, WebSocket, MCP, stdio) with one lifecycle —
//! [`attach`](Transport::attach) a session, [`start`](Transport::start) serving,
//! [`stop`](Transport::stop) — and holds no session logic: it only translates protocol messages
//! into the session's submit / abort / command calls and forwards the session's events.
//!
//! [`InteractiveSession::attach_transport`] binds a session to a transport and remembers it, so
//! that shutting the session down [`detach`](Transport::detach)es it from every transport it
//! was attached to (a transport serving many sessions keeps serving the others).

use std::sync::Arc;

use async_trait::async_trait;

use super::InteractiveSession;

/// Why a transport could not attach, start or stop.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("transport `{transport}`: {message}")]
pub struct TransportError {
    /// The transport's [`name`](Transport::name).
    pub transport: String,
    /// What failed and how to fix it.
    pub message: String,
}

impl TransportError {
    /// An error of the transport named `transport`.
    pub fn new(transport: impl Into<String>, message: impl Into<String>) -> Self {
        TransportError {
            transport: transport.into(),
            message: message.into(),
        }
    }
}

/// A protocol adapter over interactive sessions. Implementations are cheap handles (`Arc`) that
/// may serve one session or many.
#[async_trait]
pub trait Transport: Send + Sync {
    /// A short name for messages (`http`, `websocket`, `mcp`, …).
    fn name(&self) -> &str;

    /// Binds a session: from now on (or from [`start`](Self::start)) the transport serves it.
    /// Refusing is allowed (a single-session transport already bound, a stopped transport).
    fn attach(&self, session: Arc<InteractiveSession>) -> Result<(), TransportError>;

    /// Forgets a session (it is shutting down). The default does nothing.
    fn detach(&self, _session_id: &str) {}

    /// Begins serving (binds its listener, starts reading its input).
    async fn start(&self) -> Result<(), TransportError>;

    /// Stops serving and releases what `start` took. Idempotent.
    async fn stop(&self) -> Result<(), TransportError>;
}

impl InteractiveSession {
    /// Attaches this session to `transport` ([`Transport::attach`]) and remembers it: when the
    /// session shuts down it is detached from every transport it was attached to. Refused once
    /// the session is shut down.
    pub fn attach_transport(
        self: &Arc<Self>,
        transport: Arc<dyn Transport>,
    ) -> Result<(), TransportError> {
        if self.is_shut_down() {
            return Err(TransportError::new(
                transport.name(),
                "the session is shut down; create or resume a session to serve it",
            ));
        }
        transport.attach(Arc::clone(self))?;
        self.inner.lock().transports.push(transport);
        Ok(())
    }

    /// The names of the transports this session is attached to.
    pub fn attached_transports(&self) -> Vec<String> {
        self.inner
            .lock()
            .transports
            .iter()
            .map(|t| t.name().to_string())
            .collect()
    }

    /// Detaches the session from every transport (on shutdown). The transports are taken out
    /// first, so a transport holding the session does not keep it alive through this list.
    pub(super) fn detach_transports(&self) {
        let transports = std::mem::take(&mut self.inner.lock().transports);
        let id = self.get_session_id();
        for transport in transports {
            transport.detach(&id);
        }
    }
}
