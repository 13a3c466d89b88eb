//! The host store adapter (`robota::session::host_store`) over an in-memory backend written
//! the way a binding's host writes one: the store conformance suite (both the panicking
//! `run_all` and the reporting `run_each` hosts call), appends that cannot interleave, lease
//! takeover, and answers from the host that are refused.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use robota::session::conformance;
use robota::session::host_store::{HostSessionStore, HostStoreBackend, LogChunk};
use robota::session::lock::LockHolder;
use robota::session::store::{SessionStore, StoreError};
use serde_json::Value;

/// A host store in memory, as a binding's host would write one.
#[derive(Default)]
struct MemoryBackend {
    snapshots: Mutex<HashMap<String, (Value, Vec<u8>)>>,
    logs: Mutex<HashMap<String, Vec<LogChunk>>>,
    leases: Mutex<HashMap<String, Value>>,
}

fn guard<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

impl HostStoreBackend for MemoryBackend {
    fn name(&self) -> String {
        "memory".into()
    }
    fn put_snapshot(&self, id: &str, summary: &Value, snapshot: &[u8]) -> Result<(), String> {
        guard(&self.snapshots).insert(id.into(), (summary.clone(), snapshot.to_vec()));
        Ok(())
    }
    fn get_snapshot(&self, id: &str) -> Result<Option<Vec<u8>>, String> {
        Ok(guard(&self.snapshots).get(id).map(|(_, s)| s.clone()))
    }
    fn list_snapshots(&self) -> Result<Vec<Value>, String> {
        Ok(guard(&self.snapshots)
            .values()
            .map(|(s, _)| s.clone())
            .collect())
    }
    fn append_log(&self, id: &str, start: u64, lines: &[u8]) -> Result<(), String> {
        let mut logs = guard(&self.logs);
        let chunks = logs.entry(id.into()).or_default();
        let length = chunks.last().map_or(0, |c| c.start + c.bytes.len() as u64);
        if length != start {
            return Err(format!("the log is {length} bytes long, not {start}"));
        }
        chunks.push(LogChunk {
            start,
            bytes: lines.to_vec(),
        });
        Ok(())
    }
    fn read_log(&self, id: &str, _from: u64) -> Result<Option<Vec<LogChunk>>, String> {
        Ok(guard(&self.logs).get(id).cloned())
    }
    fn log_length(&self, id: &str) -> Result<Option<u64>, String> {
        Ok(guard(&self.logs)
            .get(id)
            .map(|c| c.last().map_or(0, |c| c.start + c.bytes.len() as u64)))
    }
    fn list_logs(&self) -> Result<Vec<Value>, String> {
        Ok(guard(&self.logs)
            .keys()
            .map(|id| serde_json::json!({ "id": id }))
            .collect())
    }
    fn delete_session(&self, id: &str) -> Result<bool, String> {
        let a = guard(&self.snapshots).remove(id).is_some();
        let b = guard(&self.logs).remove(id).is_some();
        guard(&self.leases).remove(id);
        Ok(a || b)
    }
    fn acquire_lease(
        &self,
        id: &str,
        lease: &Value,
        replace_token: Option<&str>,
    ) -> Result<Option<Value>, String> {
        let mut leases = guard(&self.leases);
        match leases.get(id) {
            Some(held) if held["token"].as_str() != replace_token.or(Some("\0")) => {
                Ok(Some(held.clone()))
            }
            _ => {
                leases.insert(id.into(), lease.clone());
                Ok(None)
            }
        }
    }
    fn release_lease(&self, id: &str, token: &str) -> Result<(), String> {
        let mut leases = guard(&self.leases);
        if leases.get(id).and_then(|l| l["token"].as_str()) == Some(token) {
            leases.remove(id);
        }
        Ok(())
    }
}

fn store() -> (Arc<MemoryBackend>, HostSessionStore) {
    let backend = Arc::new(MemoryBackend::default());
    (backend.clone(), HostSessionStore::new(backend))
}

#[test]
fn a_second_appender_cannot_interleave() {
    let (_, store) = store();
    let (mut first, _) = store
        .open_log_appender("s")
        .unwrap_or_else(|e| panic!("{e}"));
    let (mut second, _) = store
        .open_log_appender("s")
        .unwrap_or_else(|e| panic!("{e}"));
    first
        .append(b"{\"seq\":1}\n")
        .unwrap_or_else(|e| panic!("{e}"));
    let error = second
        .append(b"{\"seq\":1}\n")
        .err()
        .unwrap_or_else(|| panic!("the second appender appended over the first"));
    assert!(error.to_string().contains("not 0"), "{error}");
}

#[test]
fn a_lease_of_a_dead_process_is_taken_over_and_a_live_one_is_not() {
    let (backend, store) = store();
    let mut dead = LockHolder::current();
    dead.pid = u32::MAX - 7;
    dead.process_start = None;
    let stale =
        serde_json::json!({"pid": dead.pid, "host": dead.host, "since": "x", "token": "old"});
    guard(&backend.leases).insert("s".into(), stale);
    let lease = store.lock("s").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(lease.previous_holder().map(|h| h.pid), Some(dead.pid));
    assert!(matches!(store.lock("s"), Err(StoreError::Locked { .. })));
    drop(lease);
    assert!(store.lock("s").is_ok(), "released on drop");
}

#[test]
fn chunks_with_a_gap_are_refused() {
    let (backend, store) = store();
    guard(&backend.logs).insert(
        "s".into(),
        vec![
            LogChunk {
                start: 0,
                bytes: b"{}\n".to_vec(),
            },
            LogChunk {
                start: 10,
                bytes: b"{}\n".to_vec(),
            },
        ],
    );
    let error = store.read_log("s", 0).err().map(|e| e.to_string());
    assert!(
        error
            .as_deref()
            .is_some_and(|e| e.contains("starting at byte 10")),
        "{error:?}"
    );
}

#[test]
fn the_conformance_suite_passes() {
    conformance::run_all(&|| Arc::new(store().1) as Arc<dyn SessionStore>);
}

#[test]
fn run_each_reports_every_check_and_a_broken_store_fails_them() {
    let outcomes = conformance::run_each(&|| Ok(Arc::new(store().1) as Arc<dyn SessionStore>));
    assert_eq!(outcomes.len(), 9);
    assert!(outcomes.iter().all(|o| o.passed), "{outcomes:?}");

    /// Forgets every snapshot: a store that must fail the suite.
    struct Forgetful(MemoryBackend);
    impl HostStoreBackend for Forgetful {
        fn name(&self) -> String {
            "forgetful".into()
        }
        fn put_snapshot(&self, _: &str, _: &Value, _: &[u8]) -> Result<(), String> {
            Ok(())
        }
        fn get_snapshot(&self, id: &str) -> Result<Option<Vec<u8>>, String> {
            self.0.get_snapshot(id)
        }
        fn list_snapshots(&self) -> Result<Vec<Value>, String> {
            self.0.list_snapshots()
        }
        fn append_log(&self, id: &str, start: u64, lines: &[u8]) -> Result<(), String> {
            self.0.append_log(id, start, lines)
        }
        fn read_log(&self, id: &str, from: u64) -> Result<Option<Vec<LogChunk>>, String> {
            self.0.read_log(id, from)
        }
        fn log_length(&self, id: &str) -> Result<Option<u64>, String> {
            self.0.log_length(id)
        }
        fn list_logs(&self) -> Result<Vec<Value>, String> {
            self.0.list_logs()
        }
        fn delete_session(&self, id: &str) -> Result<bool, String> {
            self.0.delete_session(id)
        }
        fn acquire_lease(
            &self,
            id: &str,
            lease: &Value,
            r: Option<&str>,
        ) -> Result<Option<Value>, String> {
            self.0.acquire_lease(id, lease, r)
        }
        fn release_lease(&self, id: &str, token: &str) -> Result<(), String> {
            self.0.release_lease(id, token)
        }
    }
    let outcomes = conformance::run_each(&|| {
        Ok(Arc::new(HostSessionStore::new(Arc::new(Forgetful(
            MemoryBackend::default(),
        )))) as Arc<dyn SessionStore>)
    });
    let round_trip = outcomes
        .iter()
        .find(|o| o.check == "snapshot_round_trip")
        .unwrap_or_else(|| panic!("no round-trip check"));
    assert!(!round_trip.passed);
    assert!(
        round_trip
            .message
            .as_deref()
            .is_some_and(|m| m.contains("round trip")),
        "{round_trip:?}"
    );
    let failing = conformance::run_each(&|| Err("cannot connect".into()));
    assert!(failing
        .iter()
        .all(|o| !o.passed && o.message.as_deref() == Some("cannot connect")));
}

/// A host function answering the JSON store protocol of `api::HostStoreFunction`, as a C, Node
/// or Swift host does: chunks kept as strings with the `end` the engine gives.
#[derive(Default)]
struct JsonHost {
    state: Mutex<JsonState>,
}

#[derive(Default)]
struct JsonState {
    snapshots: HashMap<String, (Value, String)>,
    logs: HashMap<String, Vec<(u64, u64, String)>>,
    leases: HashMap<String, Value>,
}

#[robota::api::async_trait]
impl robota::api::HostFunction for JsonHost {
    async fn call(&self, call: robota::api::HostCall) -> Result<Value, String> {
        let r = call.request;
        let id = r["session_id"].as_str().unwrap_or_default().to_string();
        let mut s = guard(&self.state);
        let length = |s: &JsonState, id: &str| s.logs.get(id).map(|c| c.last().map_or(0, |c| c.1));
        Ok(match r["op"].as_str().unwrap_or_default() {
            "put_snapshot" => {
                let text = r["snapshot"].as_str().unwrap_or_default().to_string();
                s.snapshots.insert(id, (r["summary"].clone(), text));
                Value::Null
            }
            "get_snapshot" => s
                .snapshots
                .get(&id)
                .map_or(Value::Null, |(_, t)| Value::from(t.clone())),
            "list_snapshots" => Value::from(
                s.snapshots
                    .values()
                    .map(|(v, _)| v.clone())
                    .collect::<Vec<_>>(),
            ),
            "append_log" => {
                let start = r["start"].as_u64().unwrap_or(u64::MAX);
                let now = length(&s, &id).unwrap_or(0);
                if now != start {
                    return Err(format!("the log ends at {now}, not {start}"));
                }
                let lines = r["lines"].as_str().unwrap_or_default().to_string();
                let end = r["end"].as_u64().unwrap_or_default();
                s.logs.entry(id).or_default().push((start, end, lines));
                Value::Null
            }
            "read_log" => match s.logs.get(&id) {
                None => Value::Null,
                Some(chunks) => Value::from(
                    chunks
                        .iter()
                        .map(
                            |(start, _, lines)| serde_json::json!({"start": start, "lines": lines}),
                        )
                        .collect::<Vec<_>>(),
                ),
            },
            "log_length" => length(&s, &id).map_or(Value::Null, Value::from),
            "list_logs" => Value::from(s.logs.keys().cloned().collect::<Vec<_>>()),
            "delete_session" => {
                let a = s.snapshots.remove(&id).is_some();
                let b = s.logs.remove(&id).is_some();
                s.leases.remove(&id);
                Value::from(a || b)
            }
            "acquire_lease" => match s.leases.get(&id) {
                Some(held) if held["token"] != r["replace_token"] => held.clone(),
                _ => {
                    s.leases.insert(id, r["lease"].clone());
                    Value::Null
                }
            },
            "release_lease" => {
                if s.leases.get(&id).map(|l| &l["token"]) == Some(&r["token"]) {
                    s.leases.remove(&id);
                }
                Value::Null
            }
            other => return Err(format!("unknown op {other}")),
        })
    }
}

fn json_store() -> Arc<dyn SessionStore> {
    let function = robota::api::HostStoreFunction::new("json", Arc::new(JsonHost::default()));
    Arc::new(HostSessionStore::new(Arc::new(function)))
}

#[test]
fn a_store_answered_by_a_host_function_passes_the_suite() {
    conformance::run_all(&json_store);
    // Non-ASCII text: offsets are bytes, and the host never measured a string.
    let store = json_store();
    let (mut appender, _) = store
        .open_log_appender("u")
        .unwrap_or_else(|e| panic!("{e}"));
    appender
        .append("{\"seq\":1,\"t\":\"héllo ✓\"}\n".as_bytes())
        .unwrap_or_else(|e| panic!("{e}"));
    let length = "{\"seq\":1,\"t\":\"héllo ✓\"}\n".len() as u64;
    assert_eq!(store.log_len("u").ok().flatten(), Some(length));
    let (_, end) = store
        .open_log_appender("u")
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((end.offset, end.last_seq), (length, 1));
}

#[test]
fn the_host_function_store_works_from_inside_async_runtimes() {
    for flavor in ["current_thread", "multi_thread"] {
        let runtime = match flavor {
            "current_thread" => tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build(),
            _ => tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build(),
        }
        .unwrap_or_else(|e| panic!("{e}"));
        runtime.block_on(async {
            let store = json_store();
            let mut record = robota::session::store::SessionRecord::new("in-async", "/p");
            record.name = Some(flavor.into());
            store
                .save(&record)
                .unwrap_or_else(|e| panic!("{flavor}: {e}"));
            let loaded = store
                .load("in-async")
                .unwrap_or_else(|e| panic!("{flavor}: {e}"));
            assert_eq!(loaded.and_then(|r| r.name).as_deref(), Some(flavor));
        });
    }
}

/// Never answers; keeps the call's cancellation token to show the engine gave up on the call.
struct Silent(Arc<Mutex<Option<robota::api::CancellationToken>>>);

#[robota::api::async_trait]
impl robota::api::HostFunction for Silent {
    async fn call(&self, call: robota::api::HostCall) -> Result<Value, String> {
        *guard(&self.0) = Some(call.cancel.clone());
        std::future::pending::<()>().await;
        Err("unreachable".into())
    }
}

#[test]
fn a_host_that_never_answers_fails_the_call_after_the_timeout() {
    let token = Arc::new(Mutex::new(None));
    let function = robota::api::HostStoreFunction::new("silent", Arc::new(Silent(token.clone())))
        .with_timeout(std::time::Duration::from_millis(200));
    let store = HostSessionStore::new(Arc::new(function));
    let error = store
        .load("s")
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(error.contains("did not answer within"), "{error}");
    assert!(error.contains("host store silent"), "{error}");
    let token = guard(&token)
        .clone()
        .unwrap_or_else(|| panic!("the host was never called"));
    assert!(
        token.is_cancelled(),
        "the host was told the call was cancelled"
    );
}
