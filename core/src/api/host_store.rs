//! Host session stores for the bindings: a host's [`HostStoreBackend`] as a session's store, and
//! the store conformance suite run on it with its outcome as JSON — so a store written in
//! Python, Node, C or Swift is checked by the same suite as the built-in ones.

use std::sync::Arc;

use serde_json::Value;

use super::ApiError;
use crate::session::host_store::{HostSessionStore, HostStoreBackend};
use crate::session::{SessionOptions, SessionPersistence};

/// Saves the session of `options` in the host's store `backend`. Refused when the options
/// already name another place (`persistence` in the session config): one store per session.
pub fn attach_host_store(
    options: &mut SessionOptions,
    backend: Arc<dyn HostStoreBackend>,
) -> Result<(), ApiError> {
    if !matches!(options.persistence, SessionPersistence::None) {
        return Err(ApiError::invalid_argument(
            "a session store object and `persistence` were both given; pass one of them",
        ));
    }
    options.persistence = SessionPersistence::Store(Arc::new(HostSessionStore::new(backend)));
    Ok(())
}

/// Runs the store conformance suite's (feature `store-conformance`) single-process checks, each on a fresh, empty store from
/// `fresh_backend` (its error fails that check), and returns
/// `[{"check": name, "passed": bool, "message": null | what differed}, …]`.
#[cfg(feature = "store-conformance")]
pub fn run_store_conformance(
    fresh_backend: &dyn Fn() -> Result<Arc<dyn HostStoreBackend>, String>,
) -> Value {
    use crate::session::{conformance, SessionStore};
    let outcomes = conformance::run_each(&|| {
        fresh_backend()
            .map(|backend| Arc::new(HostSessionStore::new(backend)) as Arc<dyn SessionStore>)
    });
    serde_json::to_value(outcomes).unwrap_or(Value::Null)
}
