//! How a [`Session`](super::Session) uses the store: opening (new, resumed or forked), the log
//! lines of each turn and the snapshot after it, in the order the `store` module documents.
//!
//! Writing never fails a turn: every write error becomes a `persistence_error`
//! [`SessionEvent`](super::SessionEvent). Log errors reach the event through the log's error
//! callback (which fires when writing starts failing, not for every line), snapshot errors
//! directly.

use std::sync::{Mutex, PoisonError};

use super::events::{EventSink, SessionEvent};
use super::log::{LogOptions, SessionLog, SessionLogEvent as LogEvent};
use super::store::{SessionRecord, SessionStore};
use super::usage::UsageTotals;
use crate::engine::ExecutionEventCallback;
use crate::message::Conversation;

/// What was restored from a saved session.
pub(crate) struct Restored {
    pub(crate) record: SessionRecord,
    pub(crate) forked: bool,
}

/// A session's store, log and record.
pub(crate) struct Persistence {
    store: SessionStore,
    log: Option<SessionLog>,
    record: Mutex<SessionRecord>,
    events: EventSink,
}

/// Loads the session to resume (or forks it first). A missing or unreadable session is an
/// error: the caller asked for that session by id.
pub(crate) fn load_resumed(
    store: &SessionStore,
    id: &str,
    fork: bool,
) -> Result<Restored, super::SessionError> {
    let resume_error = |e: &dyn std::fmt::Display| super::SessionError::Resume {
        id: id.to_string(),
        message: e.to_string(),
    };
    let target = if fork {
        store.fork(id).map_err(|e| resume_error(&e))?
    } else {
        id.to_string()
    };
    let resumed = store.resume(&target).map_err(|e| resume_error(&e))?;
    Ok(Restored {
        record: resumed.record,
        forked: fork,
    })
}

impl Persistence {
    /// Opens the log of `record` and writes its `session_init` line.
    pub(crate) fn open(
        store: SessionStore,
        record: SessionRecord,
        resumed: bool,
        events: EventSink,
    ) -> Persistence {
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
            events,
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
        persistence
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, SessionRecord> {
        self.record.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Appends a line (errors reach the host through the log's error callback).
    pub(crate) fn log(&self, event: &LogEvent) {
        if let Some(log) = &self.log {
            let _reported = log.append(event);
        }
    }

    /// The callback that logs the engine's execution events.
    pub(crate) fn execution_callback(&self) -> Option<ExecutionEventCallback> {
        self.log.as_ref().map(SessionLog::execution_callback)
    }

    /// Updates the record from the session and saves the snapshot (after flushing the log, so
    /// the recorded log position covers everything the snapshot holds).
    pub(crate) fn save(
        &self,
        conversation: &Conversation,
        usage: &UsageTotals,
        name: Option<String>,
        permission_mode: &str,
    ) {
        let mut record = self.lock();
        if let Some(log) = &self.log {
            let _reported = log.flush();
            record.log_position = Some(log.position());
        }
        record.set_conversation(conversation);
        record.usage = usage.clone();
        record.name = name;
        record.permission_mode = Some(permission_mode.to_string());
        record.touch();
        if let Err(e) = self.store.save(&record) {
            self.events.emit(SessionEvent::PersistenceError {
                operation: "save".into(),
                message: e.to_string(),
            });
        }
    }

    /// Writes pending log text and asks for it to reach the disk (shutdown).
    pub(crate) fn sync(&self) {
        if let Some(log) = &self.log {
            let _reported = log.sync();
        }
    }
}
