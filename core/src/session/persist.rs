//! How a [`Session`](super::Session) uses the store: opening (new, resumed or forked), the log
//! lines of each turn and the snapshot after it, in the order the `store` module documents.
//!
//! A saved session has one writer: opening it for writing (new, resumed, continued) takes its
//! lock first ([`SessionStore::lock`]); a second writer gets [`SessionError::Locked`]. The lock is
//! released by shutdown (after the last save) or when the session is dropped. Resuming repairs
//! what needs the writer and reports it ([`RecoveryReport`]): see `recovery`.
//!
//! **The snapshot is rewritten when it is due, not after every turn.** Each turn's lines reach
//! the log at the turn's end; the snapshot (the whole history) is rewritten when the session is
//! still small ([`SNAPSHOT_EVERY_TURN_BELOW_CHARS`]), when the log has grown since the last
//! snapshot by as much as the history holds ([`SNAPSHOT_TAIL_RATIO`]), and always on shutdown,
//! compaction, clearing, renaming and a permission-mode change. Resume applies the log lines
//! written after the snapshot (see `store`), so nothing is lost between two snapshots (a turn
//! that does not rewrite the snapshot syncs the log to disk instead), and the
//! cost of a turn stays flat however long the session is: a snapshot of `n` bytes is written
//! once per `n` bytes of log, so each turn pays for about as many snapshot bytes as it logs,
//! and resume reads at most about twice the snapshot.
//!
//! Writing never fails a turn: every write error becomes a `persistence_error`
//! [`SessionEvent`](super::SessionEvent). Log errors reach the event through the log's error
//! callback (which fires when writing starts failing, not for every line), snapshot errors
//! directly.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use super::events::{EventSink, SessionEvent};
use super::inputs::ResolvedSettings;
use super::log::{LogOptions, SessionLog, SessionLogEvent as LogEvent, TASK_EVENT_LOG_TYPE};
use super::recovery::RecoveryReport;
use super::store::{FileSessionStore, SessionLease, SessionRecord, SessionStore, StoreError};
use super::usage::UsageTotals;
use super::{SessionError, SettingsProblem};
use crate::engine::ExecutionEventCallback;
use crate::message::Conversation;

/// The store of a session saved "in the project": the settings' `sessionStore`, else the
/// project's file store.
pub(crate) fn project_store(
    cwd: &Path,
    resolved: &ResolvedSettings,
) -> Result<Arc<dyn SessionStore>, SessionError> {
    match &resolved.session_store {
        Some(choice) => choice.open(cwd, resolved.home.as_deref()).map_err(|error| {
            SessionError::Settings(SettingsProblem::new(format!(
                "cannot open the session store of the settings' `sessionStore`: {error}"
            )))
        }),
        None => Ok(Arc::new(FileSessionStore::for_project(cwd))),
    }
}

/// What was restored from a saved session.
pub(crate) struct Restored {
    pub(crate) record: SessionRecord,
    pub(crate) forked: bool,
    /// What was found wrong, repaired or unfinished.
    pub(crate) report: RecoveryReport,
}

/// Below this many serialized history characters the snapshot is rewritten after every turn
/// (cheap at that size, and it keeps the snapshot current for other readers).
pub(crate) const SNAPSHOT_EVERY_TURN_BELOW_CHARS: u64 = 256 * 1024;

/// Above [`SNAPSHOT_EVERY_TURN_BELOW_CHARS`], the snapshot is rewritten once the log has grown
/// since the last snapshot by this many times the history's serialized size.
pub(crate) const SNAPSHOT_TAIL_RATIO: u64 = 1;

/// Whether a save must rewrite the snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SnapshotWhen {
    /// When it is due (the end of a turn, a message appended): see the module doc.
    Due,
    /// Now (shutdown, compaction, clearing, renaming): the snapshot must show it at once.
    Now,
}

/// What the last snapshot written by this session covered.
#[derive(Debug, Default)]
struct LastSnapshot {
    /// A snapshot was written since the session opened.
    written: bool,
    /// Log length when it was written.
    log_offset: u64,
}

/// A session's store, log and record, and its write lock.
pub(crate) struct Persistence {
    store: Arc<dyn SessionStore>,
    log: Option<SessionLog>,
    record: Mutex<SessionRecord>,
    last_snapshot: Mutex<LastSnapshot>,
    events: EventSink,
    lock: Mutex<Option<Box<dyn SessionLease>>>,
    /// Set once the lock is released (shutdown): nothing is written after that. Shared with the
    /// background task logger ([`task_event_logger`](Self::task_event_logger)).
    closed: Arc<AtomicBool>,
}

fn store_error(id: &str, error: StoreError) -> SessionError {
    match error {
        StoreError::Locked { id, path, holder } => SessionError::Locked { id, path, holder },
        other => SessionError::Resume {
            id: id.to_string(),
            message: other.to_string(),
        },
    }
}

/// A session's write lock, or why it could not be taken although nobody else holds it (the
/// lock file cannot be created: then neither can the session's other files, and the failed
/// writes are reported as `persistence_error` events like any other).
pub(crate) struct WriteLock {
    lock: Option<Box<dyn SessionLease>>,
    problem: Option<String>,
}

/// Locks session `id` for writing: [`SessionError::Locked`] when another writer holds it.
pub(crate) fn lock_for_writing(
    store: &dyn SessionStore,
    id: &str,
) -> Result<WriteLock, SessionError> {
    match store.lock(id) {
        Ok(lock) => Ok(WriteLock {
            lock: Some(lock),
            problem: None,
        }),
        Err(locked @ StoreError::Locked { .. }) => Err(store_error(id, locked)),
        Err(other) => Ok(WriteLock {
            lock: None,
            problem: Some(other.to_string()),
        }),
    }
}

/// Opens the session to resume for writing: locks it (so nobody else writes while it is read
/// and continued) and loads it, with what was found wrong ([`Restored::report`]; the writer's
/// repairs follow in [`repair_files`], once the session is sure to open). With `fork`, the
/// session is only read (no lock on it) and continued in a locked copy. A missing or
/// unreadable session is an error: the caller asked for that session by id.
pub(crate) fn load_resumed(
    store: &dyn SessionStore,
    id: &str,
    fork: bool,
) -> Result<(Restored, WriteLock), SessionError> {
    if fork {
        let (new_id, source) = store.fork_resumed(id).map_err(|e| store_error(id, e))?;
        let lock = lock_for_writing(store, &new_id)?;
        let resumed = store.resume(&new_id).map_err(|e| store_error(&new_id, e))?;
        let mut report = RecoveryReport::from_resumed(&new_id, store, &source);
        report.forked_from = Some(id.to_string());
        report.log_path = Some(store.log_location(id));
        if report.snapshot.is_some() {
            report.details.push(
                "a fork only reads the session it copies: its files were left as they are".into(),
            );
        }
        let restored = Restored {
            record: resumed.record,
            forked: true,
            report,
        };
        return Ok((restored, lock));
    }
    let lock = lock_for_writing(store, id)?;
    let resumed = store.resume(id).map_err(|e| store_error(id, e))?;
    let mut report = RecoveryReport::from_resumed(id, store, &resumed);
    if let Some(previous) = lock.lock.as_ref().and_then(|lock| lock.previous_holder()) {
        report.details.push(format!(
            "took over the session lock of {previous}, which ended without closing the session"
        ));
    }
    let restored = Restored {
        record: resumed.record,
        forked: false,
        report,
    };
    Ok((restored, lock))
}

/// The repairs only the writer of a resumed session makes (a fork leaves the files it copied
/// alone): a damaged snapshot is moved aside, a log with unreadable lines is copied aside; the
/// report says where they went (or why they could not be moved).
pub(crate) fn repair_files(store: &dyn SessionStore, restored: &mut Restored) {
    if restored.forked {
        return;
    }
    let id = restored.record.id.as_str();
    let report = &mut restored.report;
    if let Some(snapshot) = &mut report.snapshot {
        match store.set_snapshot_aside(id) {
            Ok(moved) => snapshot.moved_to = moved,
            Err(error) => report.details.push(error.to_string()),
        }
    }
    if !report.skipped_lines.is_empty() {
        match store.copy_log_aside(id) {
            Ok(copy) => report.log_copy = copy,
            Err(error) => report.details.push(error.to_string()),
        }
    }
}

impl Persistence {
    /// Opens the log of `record` and writes its `session_init` line; with `save_now`, saves
    /// the snapshot at once (after a repair, so that the files agree again before any turn).
    /// `lock` is the session's write lock, released by [`close`](Self::close) or on drop (a
    /// lock that could not be taken is reported as a `persistence_error`).
    pub(crate) fn open(
        store: Arc<dyn SessionStore>,
        record: SessionRecord,
        lock: WriteLock,
        resumed: bool,
        save_now: bool,
        events: EventSink,
    ) -> Persistence {
        if let Some(problem) = lock.problem {
            events.emit(SessionEvent::PersistenceError {
                operation: "lock".into(),
                message: problem,
            });
        }
        let log = match store.open_log(&record.id, LogOptions::default()) {
            Ok(log) => {
                let sink = events.clone();
                log.set_error_callback(move |e| {
                    sink.emit(SessionEvent::PersistenceError {
                        operation: "log".into(),
                        message: e.to_string(),
                    })
                });
                Some(log)
            }
            Err(e) => {
                // The session still works; the snapshot may still be writable.
                events.emit(SessionEvent::PersistenceError {
                    operation: "open_log".into(),
                    message: e.to_string(),
                });
                None
            }
        };
        let persistence = Persistence {
            store,
            log,
            record: Mutex::new(record),
            last_snapshot: Mutex::new(LastSnapshot::default()),
            events,
            lock: Mutex::new(lock.lock),
            closed: Arc::new(AtomicBool::new(false)),
        };
        let init = {
            let record = persistence.lock();
            LogEvent::SessionInit {
                session_id: record.id.clone(),
                cwd: record.cwd.clone(),
                provider: record.provider.clone(),
                model: record.model.clone(),
                permission_mode: record.permission_mode.clone(),
                name: record.name.clone(),
                parent_id: record.parent_id.clone(),
                resumed,
                system_prompt: record.system_prompt.clone(),
                tool_schemas: record.tool_schemas.clone(),
            }
        };
        persistence.log(&init);
        if save_now {
            persistence.save_record();
        }
        persistence
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, SessionRecord> {
        self.record.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Appends a line (errors reach the host through the log's error callback).
    pub(crate) fn log(&self, event: &LogEvent) {
        if self.closed.load(Ordering::SeqCst) {
            return;
        }
        if let Some(log) = &self.log {
            let _reported = log.append(event);
        }
    }

    /// A listener writing every background task transition to the session log as a
    /// `background_task_event` line (spec 000: task events are part of the session's record),
    /// until the session is closed. `None` when the log could not be opened.
    pub(crate) fn task_event_logger(
        &self,
    ) -> Option<crate::tools::builtins::BackgroundTaskListener> {
        let log = self.log.clone()?;
        let closed = Arc::clone(&self.closed);
        Some(Arc::new(
            move |event: &crate::tools::builtins::BackgroundTaskEvent| {
                if closed.load(Ordering::SeqCst) {
                    return;
                }
                if let Ok(serde_json::Value::Object(data)) = serde_json::to_value(event) {
                    // A failed write is reported through the log's error callback.
                    let _reported = log.append_custom(TASK_EVENT_LOG_TYPE, data);
                }
            },
        ))
    }

    /// The callback that logs the engine's execution events.
    pub(crate) fn execution_callback(&self) -> Option<ExecutionEventCallback> {
        self.log.as_ref().map(SessionLog::execution_callback)
    }

    /// Updates the record from the session and rewrites the snapshot (after flushing the log,
    /// so the recorded log position covers everything the snapshot holds). At the end of a turn
    /// the session asks [`snapshot_due`](Self::snapshot_due) first and only syncs the log
    /// ([`sync`](Self::sync)) when the snapshot is not due.
    pub(crate) fn save(
        &self,
        conversation: &Conversation,
        usage: &UsageTotals,
        name: Option<String>,
        permission_mode: &str,
    ) {
        {
            let mut record = self.lock();
            record.set_conversation(conversation);
            record.usage = usage.clone();
            record.name = name;
            record.permission_mode = Some(permission_mode.to_string());
        }
        self.save_record();
    }

    /// Whether the snapshot must be rewritten at the end of a turn (see the module doc), for a
    /// history of `history_chars` serialized characters (the conversation keeps its size).
    pub(crate) fn snapshot_due(
        &self,
        history_chars: u64,
        name: &Option<String>,
        mode: &str,
    ) -> bool {
        if self.closed.load(Ordering::SeqCst) {
            return false;
        }
        {
            let record = self.lock();
            // Not in the log: only the snapshot keeps them.
            if record.name != *name || record.permission_mode.as_deref() != Some(mode) {
                return true;
            }
        }
        let last = self
            .last_snapshot
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if !last.written {
            return true;
        }
        if history_chars < SNAPSHOT_EVERY_TURN_BELOW_CHARS {
            return true;
        }
        let log_offset = self.log.as_ref().map_or(0, |log| log.position().offset);
        // Without a log the snapshot is the only record: always due.
        self.log.is_none()
            || log_offset.saturating_sub(last.log_offset)
                >= history_chars.saturating_mul(SNAPSHOT_TAIL_RATIO)
    }

    /// Saves the record as it is, at the log's current position.
    fn save_record(&self) {
        if self.closed.load(Ordering::SeqCst) {
            return;
        }
        let mut record = self.lock();
        if let Some(log) = &self.log {
            let _reported = log.flush();
            record.log_position = Some(log.position());
        }
        record.touch();
        match self.store.save(&record) {
            Ok(()) => {
                let mut last = self
                    .last_snapshot
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner);
                last.written = true;
                last.log_offset = record.log_position.map_or(0, |position| position.offset);
            }
            // Not recorded as written: the next save tries again.
            Err(e) => self.events.emit(SessionEvent::PersistenceError {
                operation: "save".into(),
                message: e.to_string(),
            }),
        }
    }

    /// A new turn starts: the unfinished one a resume reported is superseded (the user went
    /// on), so the next snapshot no longer carries it.
    pub(crate) fn turn_started(&self) {
        self.lock().unfinished_turn = None;
    }

    /// Releases the write lock; nothing is written after this (shutdown, after the last save).
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        if let Some(mut lock) = self
            .lock
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        {
            lock.release();
        }
    }

    /// Writes pending log text and asks for it to reach the disk: at shutdown, and at the end of
    /// a turn that does not rewrite the snapshot (so the turn survives power loss as it would
    /// with the snapshot).
    pub(crate) fn sync(&self) {
        if self.closed.load(Ordering::SeqCst) {
            return;
        }
        if let Some(log) = &self.log {
            let _reported = log.sync();
        }
    }
}
