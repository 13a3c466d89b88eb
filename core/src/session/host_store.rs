//! Sessions kept in the host application's own storage: [`HostSessionStore`] turns a
//! [`HostStoreBackend`] — ten callbacks over bytes and JSON that a binding maps to a Python,
//! Node, C or Swift object — into a [`SessionStore`], so resume, recovery, fork and listing work
//! over the host's storage exactly as over the built-in stores.
//!
//! **What the host keeps.** Per session: one snapshot (bytes, replaced whole) with its summary
//! (a JSON object the host may store as columns; listing reads only these), a log made of
//! chunks (each chunk is the bytes of one batch of complete JSONL lines and the byte offset it
//! starts at — offsets count from the log's first byte, so a position recorded in a snapshot
//! addresses the same bytes in every store), and at most one lease.
//!
//! **Nothing interleaves.** Every append names the offset it expects the log to end at; the
//! host appends only when its log ends exactly there and reports an error otherwise, so two
//! writers that both think they own a session cannot mix their lines — the second one fails.
//! Leases are taken with a compare-and-set on a random `token`, and a lease whose holder
//! process is gone (same host, [`LockHolder::is_alive`]) is taken over by replacing exactly the
//! record that was read.
//!
//! Everything the host hands back is checked (summaries parse, chunks are contiguous, sizes are
//! capped); a host error becomes a [`StoreError`] naming the store and the session.

use std::fmt;
use std::io::{self, Read};
use std::path::PathBuf;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::lock::LockHolder;
use super::log::{LogAppender, LogEnd};
use super::store::{
    validate_session_id, ListedLog, ListedSnapshot, SessionLease, SessionStore, SessionSummary,
    StoreError,
};

/// Largest snapshot accepted from a host (a session's whole history).
pub const MAX_HOST_SNAPSHOT_BYTES: usize = 512 * 1024 * 1024;

/// Largest log accepted from a host in one read.
pub const MAX_HOST_LOG_BYTES: u64 = 2 * 1024 * 1024 * 1024;

/// One batch of log lines as the host keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogChunk {
    /// Byte offset of the chunk's first byte in the session's log.
    pub start: u64,
    /// Complete JSONL lines.
    pub bytes: Vec<u8>,
}

/// A session's writer lease as the host stores it: the holder process and a random token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostLease {
    /// Who holds it.
    #[serde(flatten)]
    pub holder: LockHolder,
    /// Unique per acquisition: the host compares it to replace or release exactly this lease.
    pub token: String,
}

/// What a host implements to keep sessions (see the module documentation). Errors are the
/// host's own message; ids are validated before any method is called.
pub trait HostStoreBackend: Send + Sync {
    /// A name for messages (`"redis"`, `"MyStore"`).
    fn name(&self) -> String;
    /// Replaces the snapshot of `id` with `snapshot` (whole, atomically) and keeps `summary`
    /// (the [`SessionSummary`] as JSON) for [`list_snapshots`](Self::list_snapshots).
    fn put_snapshot(&self, id: &str, summary: &Value, snapshot: &[u8]) -> Result<(), String>;
    /// The snapshot of `id`, `None` when there is none.
    fn get_snapshot(&self, id: &str) -> Result<Option<Vec<u8>>, String>;
    /// The summaries kept with every snapshot (any order).
    fn list_snapshots(&self) -> Result<Vec<Value>, String>;
    /// Appends `lines` to the log of `id` as a chunk starting at `start` — only when the log
    /// is exactly `start` bytes long now (0: no log yet); otherwise an error (another writer
    /// appended).
    fn append_log(&self, id: &str, start: u64, lines: &[u8]) -> Result<(), String>;
    /// The chunks of the log of `id` in order, at least from the one holding byte `from` to
    /// the end (returning all of them is correct); `None` when there is no log.
    fn read_log(&self, id: &str, from: u64) -> Result<Option<Vec<LogChunk>>, String>;
    /// The length in bytes of the log of `id`, `None` when there is no log.
    fn log_length(&self, id: &str) -> Result<Option<u64>, String>;
    /// The sessions with a log: objects `{"id": …, "updated_at": <RFC 3339 or null>}`.
    fn list_logs(&self) -> Result<Vec<Value>, String>;
    /// Removes the snapshot, log and lease of `id`; false when there was nothing.
    fn delete_session(&self, id: &str) -> Result<bool, String>;
    /// Takes the lease of `id` for `lease` (a [`HostLease`] as JSON) when there is none, or when
    /// the held one's `token` equals `replace_token`: returns `None`. Otherwise returns the held
    /// lease unchanged.
    fn acquire_lease(
        &self,
        id: &str,
        lease: &Value,
        replace_token: Option<&str>,
    ) -> Result<Option<Value>, String>;
    /// Removes the lease of `id` when its `token` is `token` (a lease taken over stays).
    fn release_lease(&self, id: &str, token: &str) -> Result<(), String>;
}

/// A [`SessionStore`] over a host's [`HostStoreBackend`] (see the module documentation).
#[derive(Clone)]
pub struct HostSessionStore {
    backend: Arc<dyn HostStoreBackend>,
    name: String,
}

impl fmt::Debug for HostSessionStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HostSessionStore")
            .field("name", &self.name)
            .finish()
    }
}

impl HostSessionStore {
    /// The store over `backend`.
    pub fn new(backend: Arc<dyn HostStoreBackend>) -> Self {
        let name = backend.name();
        HostSessionStore { backend, name }
    }

    fn location(&self, what: &str, id: &str) -> PathBuf {
        PathBuf::from(format!("host store {}: {what} {id}", self.name))
    }

    fn failed(&self, op: &'static str, what: &str, id: &str, message: String) -> StoreError {
        StoreError::Io {
            op,
            path: self.location(what, id),
            source: io::Error::other(message),
        }
    }

    fn bad_answer(&self, what: &str, id: &str, message: String) -> StoreError {
        StoreError::Corrupt {
            path: self.location(what, id),
            line: 0,
            column: 0,
            message,
        }
    }

    /// The log of `id` from `from`, checked: chunks contiguous, the first holding `from`.
    fn log_bytes(&self, id: &str, from: u64) -> Result<Option<Vec<u8>>, StoreError> {
        let Some(chunks) = self
            .backend
            .read_log(id, from)
            .map_err(|e| self.failed("read", "log", id, e))?
        else {
            return Ok(None);
        };
        let mut bytes = Vec::new();
        let mut expected: Option<u64> = None;
        for chunk in chunks {
            if let Some(end) = expected {
                if chunk.start != end {
                    return Err(self.bad_answer(
                        "log",
                        id,
                        format!(
                            "the host returned a chunk starting at byte {} after one ending at byte {end}",
                            chunk.start
                        ),
                    ));
                }
            } else if chunk.start > from {
                return Err(self.bad_answer(
                    "log",
                    id,
                    format!(
                        "the host's first chunk starts at byte {}, after the requested byte {from}",
                        chunk.start
                    ),
                ));
            }
            let end = chunk.start.saturating_add(chunk.bytes.len() as u64);
            expected = Some(end);
            if end <= from {
                continue;
            }
            let skip = usize::try_from(from.saturating_sub(chunk.start)).unwrap_or(usize::MAX);
            bytes.extend_from_slice(chunk.bytes.get(skip..).unwrap_or_default());
            if bytes.len() as u64 > MAX_HOST_LOG_BYTES {
                return Err(self.bad_answer(
                    "log",
                    id,
                    format!("the log is larger than {MAX_HOST_LOG_BYTES} bytes"),
                ));
            }
        }
        Ok(Some(bytes))
    }
}

impl SessionStore for HostSessionStore {
    fn put_snapshot(&self, summary: &SessionSummary, bytes: &[u8]) -> Result<(), StoreError> {
        validate_session_id(&summary.id)?;
        let header = serde_json::to_value(summary).map_err(|error| StoreError::Encode {
            path: self.location("snapshot", &summary.id),
            message: error.to_string(),
        })?;
        self.backend
            .put_snapshot(&summary.id, &header, bytes)
            .map_err(|e| self.failed("write", "snapshot", &summary.id, e))
    }

    fn get_snapshot(&self, id: &str) -> Result<Option<Vec<u8>>, StoreError> {
        validate_session_id(id)?;
        let snapshot = self
            .backend
            .get_snapshot(id)
            .map_err(|e| self.failed("read", "snapshot", id, e))?;
        if snapshot
            .as_ref()
            .is_some_and(|bytes| bytes.len() > MAX_HOST_SNAPSHOT_BYTES)
        {
            return Err(self.bad_answer(
                "snapshot",
                id,
                format!("the snapshot is larger than {MAX_HOST_SNAPSHOT_BYTES} bytes"),
            ));
        }
        Ok(snapshot)
    }

    fn list_snapshots(&self) -> Result<Vec<ListedSnapshot>, StoreError> {
        let summaries = self
            .backend
            .list_snapshots()
            .map_err(|e| self.failed("list", "snapshots", "", e))?;
        Ok(summaries
            .into_iter()
            .map(|value| {
                let id = value
                    .get("id")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string();
                let summary = serde_json::from_value::<SessionSummary>(value)
                    .map_err(|e| {
                        self.bad_answer("snapshot", &id, format!("the summary is unreadable: {e}"))
                    })
                    .and_then(|summary| {
                        validate_session_id(&summary.id)?;
                        Ok(summary)
                    });
                ListedSnapshot { id, summary }
            })
            .collect())
    }

    fn open_log_appender(&self, id: &str) -> Result<(Box<dyn LogAppender>, LogEnd), StoreError> {
        validate_session_id(id)?;
        let length = self.log_len(id)?.unwrap_or(0);
        let end = match length {
            0 => LogEnd::default(),
            _ => {
                // The last complete line must be whole in what is read: read from a little
                // before the end and widen until a line start is inside (lines are short
                // compared with the window; the whole log at worst).
                let mut window = 64 * 1024u64;
                loop {
                    let from = length.saturating_sub(window);
                    let tail = self.log_bytes(id, from)?.unwrap_or_default();
                    let whole = from == 0 || tail[..tail.len().saturating_sub(1)].contains(&b'\n');
                    if whole {
                        let tail = if from == 0 {
                            &tail[..]
                        } else {
                            // Drop the partial line the window starts in.
                            let cut = tail.iter().position(|b| *b == b'\n').map_or(0, |i| i + 1);
                            &tail[cut..]
                        };
                        break LogEnd::of_tail(tail, length);
                    }
                    window = window.saturating_mul(4);
                }
            }
        };
        let appender = HostLogAppender {
            backend: Arc::clone(&self.backend),
            store: self.clone(),
            id: id.to_string(),
            end: end.offset,
        };
        Ok((Box::new(appender), end))
    }

    fn read_log(&self, id: &str, from: u64) -> Result<Option<Box<dyn Read + '_>>, StoreError> {
        validate_session_id(id)?;
        Ok(self
            .log_bytes(id, from)?
            .map(|bytes| Box::new(io::Cursor::new(bytes)) as Box<dyn Read>))
    }

    fn log_len(&self, id: &str) -> Result<Option<u64>, StoreError> {
        validate_session_id(id)?;
        self.backend
            .log_length(id)
            .map_err(|e| self.failed("read", "log", id, e))
    }

    fn list_logs(&self) -> Result<Vec<ListedLog>, StoreError> {
        let logs = self
            .backend
            .list_logs()
            .map_err(|e| self.failed("list", "logs", "", e))?;
        let mut listed = Vec::with_capacity(logs.len());
        for value in logs {
            let id = match &value {
                Value::String(id) => id.clone(),
                other => other
                    .get("id")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
            };
            // An id that cannot name a session is not listed (it could not be resumed either).
            if validate_session_id(&id).is_err() {
                continue;
            }
            let updated_at = value
                .get("updated_at")
                .and_then(Value::as_str)
                .map(str::to_string);
            listed.push(ListedLog { id, updated_at });
        }
        Ok(listed)
    }

    fn delete_session(&self, id: &str) -> Result<bool, StoreError> {
        validate_session_id(id)?;
        self.backend
            .delete_session(id)
            .map_err(|e| self.failed("delete", "session", id, e))
    }

    fn lock(&self, id: &str) -> Result<Box<dyn SessionLease>, StoreError> {
        validate_session_id(id)?;
        let lease = HostLease {
            holder: LockHolder::current(),
            token: format!(
                "{:016x}{:016x}",
                rand::random::<u64>(),
                rand::random::<u64>()
            ),
        };
        let record = serde_json::to_value(&lease).map_err(|error| StoreError::Encode {
            path: self.location("lease", id),
            message: error.to_string(),
        })?;
        let take = |replace: Option<&str>| {
            self.backend
                .acquire_lease(id, &record, replace)
                .map_err(|e| self.failed("take", "lease", id, e))
        };
        let mut previous = None;
        if let Some(held) = take(None)? {
            let held = serde_json::from_value::<HostLease>(held).ok();
            match held {
                // A holder that is gone (checked on this host) leaves its lease to be taken
                // over — exactly that lease: if another writer took it first, it is held.
                Some(held) if held.holder.is_alive() == Some(false) => {
                    if let Some(now) = take(Some(&held.token))? {
                        return Err(StoreError::Locked {
                            id: id.to_string(),
                            path: self.location("lease", id),
                            holder: serde_json::from_value::<HostLease>(now)
                                .ok()
                                .map(|lease| lease.holder),
                        });
                    }
                    previous = Some(held.holder);
                }
                held => {
                    return Err(StoreError::Locked {
                        id: id.to_string(),
                        path: self.location("lease", id),
                        holder: held.map(|lease| lease.holder),
                    })
                }
            }
        }
        Ok(Box::new(HostSessionLease {
            backend: Arc::clone(&self.backend),
            id: id.to_string(),
            token: Some(lease.token),
            previous,
        }))
    }

    fn snapshot_location(&self, id: &str) -> PathBuf {
        self.location("snapshot", id)
    }

    fn log_location(&self, id: &str) -> PathBuf {
        self.location("log", id)
    }
}

/// Appends batches to one session's log at the offset it expects the log to end at.
struct HostLogAppender {
    backend: Arc<dyn HostStoreBackend>,
    store: HostSessionStore,
    id: String,
    end: u64,
}

impl LogAppender for HostLogAppender {
    fn append(&mut self, lines: &[u8]) -> io::Result<()> {
        self.backend
            .append_log(&self.id, self.end, lines)
            .map_err(|message| {
                io::Error::other(format!(
                    "{message} (appending at byte {} of {})",
                    self.end,
                    self.store.location("log", &self.id).display()
                ))
            })?;
        self.end = self.end.saturating_add(lines.len() as u64);
        Ok(())
    }

    fn sync(&mut self) -> io::Result<()> {
        // A host's append returns once the chunk is stored.
        Ok(())
    }

    fn end(&mut self) -> io::Result<u64> {
        let length = self
            .backend
            .log_length(&self.id)
            .map_err(io::Error::other)?
            .unwrap_or(0);
        self.end = length;
        Ok(length)
    }

    fn batched(&self) -> bool {
        true
    }
}

/// A lease held in the host's storage.
struct HostSessionLease {
    backend: Arc<dyn HostStoreBackend>,
    id: String,
    token: Option<String>,
    previous: Option<LockHolder>,
}

impl fmt::Debug for HostSessionLease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HostSessionLease")
            .field("id", &self.id)
            .field("held", &self.token.is_some())
            .finish()
    }
}

impl SessionLease for HostSessionLease {
    fn previous_holder(&self) -> Option<&LockHolder> {
        self.previous.as_ref()
    }

    fn release(&mut self) {
        if let Some(token) = self.token.take() {
            // A failed release leaves a lease of a process that is going away, which the next
            // writer takes over; nothing to report it to here.
            let _ = self.backend.release_lease(&self.id, &token);
        }
    }
}

impl Drop for HostSessionLease {
    fn drop(&mut self) {
        self.release();
    }
}
