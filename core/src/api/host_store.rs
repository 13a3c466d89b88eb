//! Host session stores for the bindings: a host's [`HostStoreBackend`] — or a host function
//! answering store operations as JSON ([`HostStoreFunction`], for C, Node and Swift) — as a
//! session's store, and
//! the store conformance suite run on it with its outcome as JSON — so a store written in
//! Python, Node, C or Swift is checked by the same suite as the built-in ones.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use serde_json::{json, Value};

use super::{ApiError, CancellationToken, HostCall, HostFunction};
use crate::session::host_store::{HostSessionStore, HostStoreBackend, LogChunk};
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

/// How long the engine waits for one answer of a host store before the operation fails.
pub const HOST_STORE_CALL_TIMEOUT: Duration = Duration::from_secs(120);

/// A session store whose methods are a host function (C, Node, Swift): each store operation is
/// one JSON call `{"op": …, …}` answered with JSON. Snapshots and log lines travel as UTF-8
/// strings (the engine writes only JSON); byte offsets are the engine's own — the host stores
/// the `end` it is given with each chunk, so it never measures strings.
///
/// | `op` | request fields | answer |
/// |---|---|---|
/// | `put_snapshot` | `session_id`, `summary` (object), `snapshot` (string) | anything |
/// | `get_snapshot` | `session_id` | the snapshot string, or `null` |
/// | `list_snapshots` | — | `[summary, …]` |
/// | `append_log` | `session_id`, `start`, `end`, `lines` (string) | anything; an error when the log does not end at `start` |
/// | `read_log` | `session_id`, `start` | `null` (no log) or `[{"start", "lines"}, …]` in order, at least from the chunk holding `start` |
/// | `log_length` | `session_id` | the `end` of the last chunk, or `null` |
/// | `list_logs` | — | `[id or {"id", "updated_at"}, …]` |
/// | `delete_session` | `session_id` | `true` when something was removed |
/// | `acquire_lease` | `session_id`, `lease` (object with `token`), `replace_token` (string or `null`) | `null` when taken, else the held lease |
/// | `release_lease` | `session_id`, `token` | anything |
///
/// Calls are made from the engine's threads, which wait for the answer (up to
/// [`HOST_STORE_CALL_TIMEOUT`]); the host may answer from any thread, at any later time.
pub struct HostStoreFunction {
    name: String,
    function: Arc<dyn HostFunction>,
    timeout: Duration,
}

impl HostStoreFunction {
    /// The store answered by `function`, called `name` in messages.
    pub fn new(name: impl Into<String>, function: Arc<dyn HostFunction>) -> Self {
        HostStoreFunction {
            name: name.into(),
            function,
            timeout: HOST_STORE_CALL_TIMEOUT,
        }
    }

    /// Waits at most `timeout` for each answer.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// One call, waited for on the calling thread. The call's future runs on a runtime of its
    /// own ([`driver`]), so this works from any thread, inside an async runtime or not.
    fn call(&self, request: Value) -> Result<Value, String> {
        let op = request
            .get("op")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let (sender, receiver) = std::sync::mpsc::sync_channel(1);
        let cancel = CancellationToken::new();
        let function = Arc::clone(&self.function);
        let call = HostCall {
            request,
            cancel: cancel.clone(),
            stream: None,
            context: None,
        };
        let task = driver().spawn(async move {
            let _ = sender.send(function.call(call).await);
        });
        match receiver.recv_timeout(self.timeout) {
            Ok(answer) => answer.map_err(|error| format!("{op}: {error}")),
            Err(_) => {
                cancel.cancel();
                task.abort();
                Err(format!(
                    "{op}: the store did not answer within {:?}",
                    self.timeout
                ))
            }
        }
    }

    fn text(value: Value, what: &str) -> Result<Option<Vec<u8>>, String> {
        match value {
            Value::Null => Ok(None),
            Value::String(text) => Ok(Some(text.into_bytes())),
            other => Err(format!("{what} must be a string or null, not {other}")),
        }
    }

    fn list(value: Value, what: &str) -> Result<Vec<Value>, String> {
        match value {
            Value::Array(items) => Ok(items),
            other => Err(format!("{what} must be a list, not {other}")),
        }
    }

    fn utf8<'a>(bytes: &'a [u8], what: &str) -> Result<&'a str, String> {
        std::str::from_utf8(bytes).map_err(|_| format!("{what} is not UTF-8"))
    }
}

/// The runtime host store calls run on: one thread, shared by every [`HostStoreFunction`], so a
/// store method can wait for its answer from any thread without starving the runtime that
/// delivers it.
fn driver() -> &'static tokio::runtime::Handle {
    static DRIVER: OnceLock<tokio::runtime::Handle> = OnceLock::new();
    DRIVER.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap_or_else(|error| panic!("cannot start the host store runtime: {error}"));
        let handle = runtime.handle().clone();
        let spawned = std::thread::Builder::new()
            .name("robota-host-store".into())
            .spawn(move || runtime.block_on(std::future::pending::<()>()));
        if let Err(error) = spawned {
            panic!("cannot start the host store thread: {error}");
        }
        handle
    })
}

impl HostStoreBackend for HostStoreFunction {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn put_snapshot(&self, id: &str, summary: &Value, snapshot: &[u8]) -> Result<(), String> {
        let snapshot = Self::utf8(snapshot, "the snapshot")?;
        self.call(json!({"op": "put_snapshot", "session_id": id, "summary": summary, "snapshot": snapshot}))
            .map(drop)
    }

    fn get_snapshot(&self, id: &str) -> Result<Option<Vec<u8>>, String> {
        Self::text(
            self.call(json!({"op": "get_snapshot", "session_id": id}))?,
            "get_snapshot's answer",
        )
    }

    fn list_snapshots(&self) -> Result<Vec<Value>, String> {
        Self::list(
            self.call(json!({"op": "list_snapshots"}))?,
            "list_snapshots's answer",
        )
    }

    fn append_log(&self, id: &str, start: u64, lines: &[u8]) -> Result<(), String> {
        let end = start.saturating_add(lines.len() as u64);
        let lines = Self::utf8(lines, "a log chunk")?;
        self.call(json!({"op": "append_log", "session_id": id, "start": start, "end": end, "lines": lines}))
            .map(drop)
    }

    fn read_log(&self, id: &str, from: u64) -> Result<Option<Vec<LogChunk>>, String> {
        let answer = self.call(json!({"op": "read_log", "session_id": id, "start": from}))?;
        if answer.is_null() {
            return Ok(None);
        }
        Self::list(answer, "read_log's answer")?
            .into_iter()
            .map(|chunk| {
                let start = chunk.get("start").and_then(Value::as_u64);
                let lines = chunk.get("lines").and_then(Value::as_str);
                match (start, lines) {
                    (Some(start), Some(lines)) => Ok(LogChunk {
                        start,
                        bytes: lines.as_bytes().to_vec(),
                    }),
                    _ => Err(format!(
                        "read_log's chunks are {{\"start\": <offset>, \"lines\": <string>}}, not {chunk}"
                    )),
                }
            })
            .collect::<Result<_, _>>()
            .map(Some)
    }

    fn log_length(&self, id: &str) -> Result<Option<u64>, String> {
        match self.call(json!({"op": "log_length", "session_id": id}))? {
            Value::Null => Ok(None),
            value => value.as_u64().map(Some).ok_or_else(|| {
                format!("log_length's answer must be a number or null, not {value}")
            }),
        }
    }

    fn list_logs(&self) -> Result<Vec<Value>, String> {
        Self::list(self.call(json!({"op": "list_logs"}))?, "list_logs's answer")
    }

    fn delete_session(&self, id: &str) -> Result<bool, String> {
        Ok(self
            .call(json!({"op": "delete_session", "session_id": id}))?
            .as_bool()
            .unwrap_or(false))
    }

    fn acquire_lease(
        &self,
        id: &str,
        lease: &Value,
        replace_token: Option<&str>,
    ) -> Result<Option<Value>, String> {
        match self.call(json!({"op": "acquire_lease", "session_id": id, "lease": lease, "replace_token": replace_token}))? {
            Value::Null => Ok(None),
            held => Ok(Some(held)),
        }
    }

    fn release_lease(&self, id: &str, token: &str) -> Result<(), String> {
        self.call(json!({"op": "release_lease", "session_id": id, "token": token}))
            .map(drop)
    }
}

/// Runs the store conformance suite (feature `store-conformance`) on stores answered by one
/// host function: every request of [`HostStoreFunction`] gets a `"store_index"` field, and the
/// host keeps one fresh, empty store per index (a new index: a new store). Returns what
/// [`run_store_conformance`] returns.
#[cfg(feature = "store-conformance")]
pub fn run_store_conformance_on(name: &str, function: Arc<dyn HostFunction>) -> Value {
    use std::sync::atomic::{AtomicU64, Ordering};

    /// Adds the store's index to each request.
    struct Indexed {
        index: u64,
        function: Arc<dyn HostFunction>,
    }

    #[async_trait::async_trait]
    impl HostFunction for Indexed {
        async fn call(&self, mut call: HostCall) -> Result<Value, String> {
            if let Value::Object(map) = &mut call.request {
                map.insert("store_index".into(), Value::from(self.index));
            }
            self.function.call(call).await
        }
    }

    let next = AtomicU64::new(0);
    run_store_conformance(&|| {
        let indexed = Indexed {
            index: next.fetch_add(1, Ordering::Relaxed),
            function: Arc::clone(&function),
        };
        Ok(Arc::new(HostStoreFunction::new(name, Arc::new(indexed))) as Arc<dyn HostStoreBackend>)
    })
}
