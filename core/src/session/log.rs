//! The append-only session log: `.robota/logs/{id}.jsonl`, one JSON object per line,
//! `{"ts": …, "seq": …, "type": …, …}`.
//!
//! It records what the session did ([`SessionLogEvent`]: `session_init`, `pre_run`, `text_delta`,
//! `assistant`, `turn_end`, `error`, `session_shutdown`, history appends and replacements,
//! `background_task_event` for every background task transition) and
//! every [`ExecutionEvent`] of the engine (provider requests and responses, tool batches, tool
//! requests and results, committed messages, `history_mutation`). Two consumers rely on it:
//!
//! - **Resume.** The log is the write-ahead record behind the JSON snapshot: [`replay_log`]
//!   rebuilds the history from `history_mutation` / `history_append` / `history_replace` lines,
//!   committing a turn's messages only when its `turn_end` line is there, so a crash mid-turn
//!   never yields a half turn (a `tool_use` without its result). A turn still open when the log
//!   ends, or when a later `session_init` shows the session was opened again, is reported with
//!   its prompt ([`LogReplay::incomplete_turn`]); unreadable lines and a torn last line are
//!   reported with their line numbers ([`LogReplay::skipped_lines`], [`LogReplay::torn_tail`]).
//!   One process writes a log at a time (the session's lock, see `lock`): two writers would
//!   interleave their lines and `seq` numbers.
//! - **Replay.** Execution events keep the engine's own JSON shape under the same `type` names, so
//!   [`ReplayProvider`](crate::provider::replay::ReplayProvider) plays a session log directly.
//!
//! Crash safety: each line is built in memory and written with one `write_all` on a file opened
//! with `O_APPEND`, so after a crash (the process is killed; the kernel keeps what was written) a
//! line is either complete or the torn last line, which readers ignore with a diagnostic. A line
//! that failed to write is followed by a newline before the next one, so a fragment never glues
//! onto a good line. Write errors are returned from every call and reported to an error callback;
//! nothing panics and nothing is swallowed.
//!
//! Cost: one mutex, one serialization into a reused buffer and one `write` system call per line;
//! the file stays open. `text_delta` lines are coalesced (up to [`LogOptions::coalesce_text_bytes`]
//! or [`LogOptions::coalesce_text_ms`]) and always written before the next other event.
//! Provider requests are logged without the message list by default (it is in the history
//! already; logging it every round makes the log quadratic in the conversation length).
//!
//! Secrets: values under keys such as `api_key`, `authorization`, `password` are replaced by
//! `[REDACTED]` in free-form payloads (custom events, `session_init` tool schemas, tool call
//! parameters in `tool_execution_request`). Messages are logged verbatim: resume must restore
//! exactly what the model said, and the snapshot holds the same messages.

use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::usage::UsageTotals;
use crate::engine::{ExecutionEvent, ExecutionEventCallback};
use crate::message::{now_rfc3339, HistoryEntry, Message, Usage};
use crate::provider::{ThinkingConfig, ToolChoice};

/// File extension of session logs.
pub const LOG_EXTENSION: &str = "jsonl";

/// The `type` of the lines recording background task transitions (the manager's
/// `state_changed` events, with the task snapshot).
pub const TASK_EVENT_LOG_TYPE: &str = "background_task_event";

/// The replacement for secret values.
pub const REDACTED: &str = "[REDACTED]";

/// Event types the log reader gives meaning to; custom events may not use these names.
const RESERVED_TYPES: &[&str] = &[
    "session_init",
    "pre_run",
    "history_mutation",
    "history_append",
    "history_replace",
    "turn_end",
    "session_renamed",
    "provider_request",
    "provider_response",
    "provider_error",
    "provider_stream_raw_delta",
];

/// How the log writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogOptions {
    /// Pending `text_delta` text is written once it reaches this many bytes (`0`: every delta
    /// is its own line).
    pub coalesce_text_bytes: usize,
    /// …or once the oldest pending delta is this old when the next one arrives.
    pub coalesce_text_ms: u64,
    /// Record `provider_stream_raw_delta` events (one line per streamed chunk). With them,
    /// replay reproduces the original chunking; without them it streams each response whole.
    pub stream_deltas: bool,
    /// Record provider requests with their full message list instead of a count and the last
    /// message id (the messages are in the history; the full form grows quadratically).
    pub full_provider_requests: bool,
}

impl Default for LogOptions {
    fn default() -> Self {
        LogOptions {
            coalesce_text_bytes: 4096,
            coalesce_text_ms: 50,
            stream_deltas: true,
            full_provider_requests: false,
        }
    }
}

/// Where the log stood after a line: its `seq` and the file length after it. A snapshot stores
/// this so that resume reads only the lines written after the snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct LogPosition {
    /// `seq` of the last line written (0: none).
    pub seq: u64,
    /// Byte length of the log after that line.
    pub offset: u64,
}

/// Counters of one open log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LogStats {
    /// Lines written by this handle.
    pub lines: u64,
    /// Bytes written by this handle.
    pub bytes: u64,
    /// Lines that could not be written.
    pub failed_lines: u64,
}

/// A session log that could not be written or read.
#[derive(Debug, Clone, thiserror::Error)]
pub enum LogError {
    /// A file operation failed.
    #[error("cannot {op} the session log {}: {source}", path.display())]
    Io {
        /// What was being done (`open`, `write`, `read`, …).
        op: &'static str,
        /// The log file.
        path: PathBuf,
        /// The system error.
        #[source]
        source: Arc<io::Error>,
    },
    /// An event could not be turned into JSON.
    #[error("cannot encode a {kind} event for the session log {}: {message}", path.display())]
    Encode {
        /// The event type.
        kind: String,
        /// The log file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// A custom event used a type name the log reader relies on.
    #[error("the event type {kind:?} is reserved for the session log itself; choose another name")]
    ReservedType {
        /// The rejected name.
        kind: String,
    },
}

impl LogError {
    fn io(op: &'static str, path: &Path, source: io::Error) -> Self {
        LogError::Io {
            op,
            path: path.to_path_buf(),
            source: Arc::new(source),
        }
    }
}

/// Receives log write errors (see [`SessionLog::set_error_callback`]).
pub type LogErrorCallback = Arc<dyn Fn(&LogError) + Send + Sync>;

/// What the session records, besides the engine's [`ExecutionEvent`]s. Serialized with `type` as
/// the snake_case tag.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum SessionLogEvent {
    /// The session was created or resumed.
    SessionInit {
        /// Session id.
        session_id: String,
        /// Working directory.
        cwd: String,
        /// Provider name.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        provider: Option<String>,
        /// Model id.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model: Option<String>,
        /// Permission mode.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        permission_mode: Option<String>,
        /// Session name.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        /// The session this one was forked from.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        parent_id: Option<String>,
        /// True when an existing session continues (the history comes from earlier lines or the
        /// snapshot).
        #[serde(default)]
        resumed: bool,
        /// The exact system prompt.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        system_prompt: Option<String>,
        /// Tool schemas registered for the session.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_schemas: Vec<Value>,
    },
    /// A turn starts (`run()`): opens the turn that `turn_end` commits.
    PreRun {
        /// The run's execution id, when known before the run.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        execution_id: Option<String>,
        /// The input as the model will see it (after prompt expansion).
        input: String,
        /// Provider name.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        provider: Option<String>,
        /// Model id.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model: Option<String>,
        /// Chat messages in the history before the turn.
        history_length: usize,
    },
    /// Streamed answer text (possibly several deltas coalesced).
    TextDelta {
        /// The text.
        text: String,
    },
    /// The run's final answer.
    Assistant {
        /// The run's execution id.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        execution_id: Option<String>,
        /// The answer text.
        text: String,
        /// Why the run ended.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        stop_reason: Option<String>,
        /// Chat messages in the history after the run.
        message_count: usize,
    },
    /// A turn finished (completed, interrupted or failed): its messages are committed.
    TurnEnd {
        /// The run's execution id.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        execution_id: Option<String>,
        /// Why the run ended (`completed`, `interrupted`, `error`, …).
        stop_reason: String,
        /// Model/tool rounds.
        #[serde(default)]
        rounds: u32,
        /// Chat messages in the history after the turn.
        message_count: usize,
        /// The turn's tokens and cost.
        usage: UsageTotals,
    },
    /// Something failed (a run, a hook, persistence).
    Error {
        /// What failed, for people.
        message: String,
        /// A machine-readable kind.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        kind: Option<String>,
        /// The run it belongs to.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        execution_id: Option<String>,
    },
    /// The session appended a history entry outside the engine (an injected message, an event
    /// entry). Committed at once outside a turn, with the turn inside one.
    HistoryAppend {
        /// The entry.
        entry: HistoryEntry,
    },
    /// The whole history was replaced (compaction, fork). Committed at once.
    HistoryReplace {
        /// Why (`compaction`, `fork`, …).
        reason: String,
        /// The new history.
        entries: Vec<HistoryEntry>,
        /// Replaces the usage totals as well (a fork carries its parent's).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage: Option<UsageTotals>,
    },
    /// The session was renamed.
    SessionRenamed {
        /// The new name (`None`: unnamed).
        name: Option<String>,
    },
    /// `shutdown()` began.
    SessionShutdown {
        /// The Claude-compatible reason.
        reason: String,
    },
}

impl SessionLogEvent {
    /// The snake_case event name (the `type` field of its JSON).
    pub fn kind(&self) -> &'static str {
        match self {
            SessionLogEvent::SessionInit { .. } => "session_init",
            SessionLogEvent::PreRun { .. } => "pre_run",
            SessionLogEvent::TextDelta { .. } => "text_delta",
            SessionLogEvent::Assistant { .. } => "assistant",
            SessionLogEvent::TurnEnd { .. } => "turn_end",
            SessionLogEvent::Error { .. } => "error",
            SessionLogEvent::HistoryAppend { .. } => "history_append",
            SessionLogEvent::HistoryReplace { .. } => "history_replace",
            SessionLogEvent::SessionRenamed { .. } => "session_renamed",
            SessionLogEvent::SessionShutdown { .. } => "session_shutdown",
        }
    }
}

/// An open session log. Cheap to clone (clones share the file); usable from any thread.
#[derive(Clone)]
pub struct SessionLog {
    shared: Arc<Shared>,
}

struct Shared {
    path: PathBuf,
    options: LogOptions,
    state: Mutex<State>,
    on_error: RwLock<Option<LogErrorCallback>>,
}

struct State {
    appender: Box<dyn LogAppender>,
    /// Lines accepted but not yet handed to a batched appender (see [`LogAppender::batched`]).
    batch: Vec<u8>,
    seq: u64,
    offset: u64,
    /// The last write may have left a fragment: start the next line on a new line.
    needs_newline: bool,
    /// Writing has been failing since the last success (the callback fired once).
    failing: bool,
    line: Vec<u8>,
    scratch: Vec<u8>,
    pending_text: String,
    pending_since: Option<Instant>,
    stats: LogStats,
}

impl std::fmt::Debug for SessionLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionLog")
            .field("path", &self.shared.path)
            .field("position", &self.position())
            .finish()
    }
}

impl SessionLog {
    /// Opens (creating it and its directory if needed) the log at `path` for appending.
    ///
    /// An existing log is continued: `seq` goes on from its last complete line, and a torn last
    /// line (a crash mid-write) is closed with a newline before the next line. New files are
    /// created with mode 0600 and new directories with 0700 on Unix.
    pub fn open(path: impl AsRef<Path>, options: LogOptions) -> Result<Self, LogError> {
        let path = path.as_ref().to_path_buf();
        let (appender, end) = FileLogAppender::open(&path)?;
        Ok(Self::with_appender(Box::new(appender), end, path, options))
    }

    /// A log writing through `appender` (a store's log, see
    /// [`SessionStore::open_log`](super::store::SessionStore::open_log)), continuing after
    /// `end`. `location` names the log in messages.
    pub fn with_appender(
        appender: Box<dyn LogAppender>,
        end: LogEnd,
        location: PathBuf,
        options: LogOptions,
    ) -> Self {
        SessionLog {
            shared: Arc::new(Shared {
                path: location,
                options,
                state: Mutex::new(State {
                    appender,
                    batch: Vec::new(),
                    seq: end.last_seq,
                    offset: end.offset,
                    needs_newline: end.torn,
                    failing: false,
                    line: Vec::with_capacity(4096),
                    scratch: Vec::with_capacity(4096),
                    pending_text: String::new(),
                    pending_since: None,
                    stats: LogStats::default(),
                }),
                on_error: RwLock::new(None),
            }),
        }
    }

    /// The log file (for a log kept in a store, the location that names it in messages).
    pub fn path(&self) -> &Path {
        &self.shared.path
    }

    /// The options it was opened with.
    pub fn options(&self) -> LogOptions {
        self.shared.options
    }

    /// Sends write errors to `callback` too (they are always returned as well). It fires when
    /// writing starts failing, not again for every line while it keeps failing; after a
    /// successful write the next failure fires it again. It is called without the log's lock
    /// held, so it may log.
    pub fn set_error_callback(&self, callback: impl Fn(&LogError) + Send + Sync + 'static) {
        let mut slot = self
            .shared
            .on_error
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        *slot = Some(Arc::new(callback));
    }

    /// Where the log stands (pending coalesced text not included: call [`SessionLog::flush`]
    /// first when that matters).
    pub fn position(&self) -> LogPosition {
        let state = self.lock();
        LogPosition {
            seq: state.seq,
            offset: state.offset,
        }
    }

    /// Counters of this handle.
    pub fn stats(&self) -> LogStats {
        self.lock().stats
    }

    /// Appends a session event.
    pub fn append(&self, event: &SessionLogEvent) -> Result<(), LogError> {
        let kind = event.kind();
        let written = self.append_event(kind, event);
        // A batched store gets the lines at the turn's boundaries: a crash loses at most the
        // turn in progress, and resume still sees which prompt it was.
        if matches!(
            event,
            SessionLogEvent::SessionInit { .. }
                | SessionLogEvent::PreRun { .. }
                | SessionLogEvent::TurnEnd { .. }
                | SessionLogEvent::SessionShutdown { .. }
        ) {
            let handed = self.flush();
            return written.and(handed);
        }
        written
    }

    fn append_event(&self, kind: &str, event: &SessionLogEvent) -> Result<(), LogError> {
        match event {
            SessionLogEvent::SessionInit { tool_schemas, .. }
                if tool_schemas.iter().any(contains_sensitive) =>
            {
                let mut event = event.clone();
                if let SessionLogEvent::SessionInit { tool_schemas, .. } = &mut event {
                    tool_schemas.iter_mut().for_each(scrub_sensitive);
                }
                self.write(kind, &event)
            }
            _ => self.write(kind, event),
        }
    }

    /// Appends an engine event (`provider_stream_raw_delta` only when
    /// [`LogOptions::stream_deltas`] is on; `provider_request` compact unless
    /// [`LogOptions::full_provider_requests`]).
    pub fn append_execution(&self, event: &ExecutionEvent) -> Result<(), LogError> {
        let options = self.shared.options;
        match event {
            ExecutionEvent::ProviderStreamRawDelta { .. } if !options.stream_deltas => Ok(()),
            ExecutionEvent::ProviderRequest {
                execution_id,
                round,
                provider,
                model,
                request,
            } if !options.full_provider_requests => {
                let compact = CompactProviderRequest {
                    kind: "provider_request",
                    execution_id,
                    round: *round,
                    provider,
                    model,
                    messages_omitted: true,
                    message_count: request.messages.len(),
                    last_message_id: request.messages.last().map(|m| m.id.as_str()),
                    system_length: request.system.as_ref().map(String::len),
                    tool_names: request.tools.iter().map(|t| t.name.as_str()).collect(),
                    max_tokens: request.max_tokens,
                    temperature: request.temperature,
                    thinking: request.thinking.as_ref(),
                    tool_choice: request.tool_choice.as_ref(),
                };
                self.write("provider_request", &compact)
            }
            ExecutionEvent::ToolExecutionRequest { parameters, .. }
                if contains_sensitive(parameters) =>
            {
                let mut event = event.clone();
                if let ExecutionEvent::ToolExecutionRequest { parameters, .. } = &mut event {
                    scrub_sensitive(parameters);
                }
                self.write(event.kind(), &event)
            }
            _ => self.write(event.kind(), event),
        }
    }

    /// An [`ExecutionEventCallback`] for
    /// [`RunOptions::on_execution_event`](crate::engine::RunOptions) that appends every event.
    /// Errors go to the error callback (the engine callback has no return value).
    pub fn execution_callback(&self) -> ExecutionEventCallback {
        let log = self.clone();
        Arc::new(move |event: ExecutionEvent| {
            // The error was already reported to the error callback by `append_execution`.
            let _reported = log.append_execution(&event);
        })
    }

    /// Appends a custom event `{"type": kind, …data}` (hooks, compaction, context reports…).
    /// `ts`, `seq` and `type` keys in `data` are replaced; secret values are redacted.
    pub fn append_custom(&self, kind: &str, mut data: Map<String, Value>) -> Result<(), LogError> {
        if RESERVED_TYPES.contains(&kind) {
            return Err(LogError::ReservedType {
                kind: kind.to_string(),
            });
        }
        data.remove("ts");
        data.remove("seq");
        data.insert("type".into(), Value::String(kind.to_string()));
        let mut value = Value::Object(data);
        scrub_sensitive(&mut value);
        self.write(kind, &value)
    }

    /// Records streamed answer text, coalescing consecutive deltas (see [`LogOptions`]).
    pub fn text_delta(&self, text: &str) -> Result<(), LogError> {
        let options = self.shared.options;
        let result = {
            let mut state = self.lock();
            if state.pending_since.is_none() {
                state.pending_since = Some(Instant::now());
            }
            state.pending_text.push_str(text);
            let old = state.pending_since.is_some_and(|since| {
                since.elapsed() >= Duration::from_millis(options.coalesce_text_ms)
            });
            if state.pending_text.len() >= options.coalesce_text_bytes || old {
                state.flush_text(&self.shared.path)
            } else {
                Ok(())
            }
        };
        self.report(result)
    }

    /// Writes pending coalesced text, and hands the lines a batched store has been holding
    /// to the store.
    pub fn flush(&self) -> Result<(), LogError> {
        let result = {
            let mut state = self.lock();
            let text = state.flush_text(&self.shared.path);
            let handed = state.hand_over(&self.shared.path);
            text.and(handed)
        };
        self.report(result)
    }

    /// Writes pending text and asks the system to put the log on disk (`fsync`), for power-loss
    /// durability at points that matter (shutdown). Not needed for crash safety: once written, a
    /// line survives the process.
    pub fn sync(&self) -> Result<(), LogError> {
        let result = {
            let mut state = self.lock();
            state
                .flush_text(&self.shared.path)
                .and_then(|()| state.hand_over(&self.shared.path))
                .and_then(|()| match state.appender.sync() {
                    Ok(()) => Ok(()),
                    Err(e) => Err(state.failed(LogError::io("sync", &self.shared.path, e))),
                })
        };
        self.report(result)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.shared
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn write<T: Serialize + ?Sized>(&self, kind: &str, event: &T) -> Result<(), LogError> {
        let result = {
            let mut state = self.lock();
            let pending = state.flush_text(&self.shared.path);
            let written = state.write_line(&self.shared.path, kind, event);
            pending.and(written)
        };
        self.report(result)
    }

    /// Hands a failure to the error callback when writing has just started failing.
    fn report(&self, result: Result<(), (LogError, bool)>) -> Result<(), LogError> {
        match result {
            Ok(()) => Ok(()),
            Err((error, first)) => {
                if first {
                    let callback = self
                        .shared
                        .on_error
                        .read()
                        .unwrap_or_else(PoisonError::into_inner)
                        .clone();
                    if let Some(callback) = callback {
                        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                            callback(&error)
                        }));
                    }
                }
                Err(error)
            }
        }
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        // The last handle is gone: lines a batched store was holding are handed over now
        // rather than lost (an error here has no one left to tell).
        let state = self.state.get_mut().unwrap_or_else(PoisonError::into_inner);
        let _ = state.hand_over(&self.path);
    }
}

impl State {
    /// Hands the lines held for a batched appender to it. On failure they stay held (and
    /// are offered again at the next flush point), so nothing is dropped.
    fn hand_over(&mut self, path: &Path) -> Result<(), (LogError, bool)> {
        if self.batch.is_empty() {
            return Ok(());
        }
        match self.appender.append(&self.batch) {
            Ok(()) => {
                self.batch.clear();
                self.failing = false;
                Ok(())
            }
            Err(error) => Err(self.failed(LogError::io("write", path, error))),
        }
    }

    fn flush_text(&mut self, path: &Path) -> Result<(), (LogError, bool)> {
        if self.pending_text.is_empty() {
            self.pending_since = None;
            return Ok(());
        }
        let text = std::mem::take(&mut self.pending_text);
        self.pending_since = None;
        self.write_line(path, "text_delta", &SessionLogEvent::TextDelta { text })
    }

    /// Serializes `event` (a JSON object with a `type` field) into one line prefixed with `ts`
    /// and `seq`, and writes it with a single `write_all`.
    fn write_line<T: Serialize + ?Sized>(
        &mut self,
        path: &Path,
        kind: &str,
        event: &T,
    ) -> Result<(), (LogError, bool)> {
        self.scratch.clear();
        if let Err(error) = serde_json::to_writer(&mut self.scratch, event) {
            return Err(self.failed(LogError::Encode {
                kind: kind.to_string(),
                path: path.to_path_buf(),
                message: error.to_string(),
            }));
        }
        let body = match self.scratch.first() {
            Some(b'{') => &self.scratch[1..],
            _ => {
                return Err(self.failed(LogError::Encode {
                    kind: kind.to_string(),
                    path: path.to_path_buf(),
                    message: "the event is not a JSON object".into(),
                }))
            }
        };
        let seq = self.seq + 1;
        self.line.clear();
        if self.needs_newline {
            self.line.push(b'\n');
        }
        self.line.extend_from_slice(b"{\"ts\":\"");
        self.line.extend_from_slice(now_rfc3339().as_bytes());
        self.line.extend_from_slice(b"\",\"seq\":");
        self.line.extend_from_slice(seq.to_string().as_bytes());
        if body == b"}" {
            self.line.push(b'}');
        } else {
            self.line.push(b',');
            self.line.extend_from_slice(body);
        }
        self.line.push(b'\n');
        if self.appender.batched() {
            self.batch.extend_from_slice(&self.line);
            self.seq = seq;
            self.offset += self.line.len() as u64;
            self.needs_newline = false;
            self.stats.lines += 1;
            self.stats.bytes += self.line.len() as u64;
            if self.batch.len() >= MAX_BATCH_BYTES {
                return self.hand_over(path);
            }
            return Ok(());
        }
        match self.appender.append(&self.line) {
            Ok(()) => {
                self.seq = seq;
                self.offset += self.line.len() as u64;
                self.needs_newline = false;
                self.failing = false;
                self.stats.lines += 1;
                self.stats.bytes += self.line.len() as u64;
                Ok(())
            }
            Err(error) => {
                // Part of the line may be in the file: close it off before the next line, and
                // learn the real length again.
                self.needs_newline = true;
                if let Ok(end) = self.appender.end() {
                    self.offset = end;
                }
                Err(self.failed(LogError::io("write", path, error)))
            }
        }
    }

    fn failed(&mut self, error: LogError) -> (LogError, bool) {
        self.stats.failed_lines += 1;
        let first = !self.failing;
        self.failing = true;
        (error, first)
    }
}

/// Lines held for a batched appender are handed over once they reach this size, whatever the
/// flush points say (bounds the memory a long turn holds).
const MAX_BATCH_BYTES: usize = 1024 * 1024;

/// Where a log's lines go: a store's append-only log of one session (see
/// [`SessionStore::open_log_appender`](super::store::SessionStore::open_log_appender)).
///
/// [`SessionLog`] builds each line (JSON ending in `\n`) and calls [`append`](Self::append)
/// with one or more complete lines; positions ([`LogPosition::offset`]) count the bytes
/// appended so far, so a store must keep the bytes exactly as given.
pub trait LogAppender: Send {
    /// Appends complete lines at the end of the log (all of them or, on error, as few as the
    /// store can manage: a file may keep part of a line, which the next line closes off).
    fn append(&mut self, lines: &[u8]) -> io::Result<()>;
    /// Makes what was appended durable (`fsync` for a file; a database commits on append).
    fn sync(&mut self) -> io::Result<()>;
    /// The log's length in bytes as the store has it (after a failed append, to learn where
    /// it stands).
    fn end(&mut self) -> io::Result<u64>;
    /// `true`: hold lines and hand them over in batches at the flush points (turn start and
    /// end, before a snapshot, shutdown) — for stores where each call is a round trip. `false`
    /// (a file): every line is appended as it comes, so it survives a crash of the process the
    /// moment it is written.
    fn batched(&self) -> bool {
        false
    }
}

/// Reads a log that a database keeps as chunks (one row per appended batch, keyed by the byte
/// offset it starts at) from a byte offset, a page of chunks at a time: `fetch_page(next)`
/// returns chunks `(start, bytes)` in order, from the one holding byte `next` (an empty page:
/// the log ends). Bytes before `next` in the first chunk are skipped.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) struct PagedChunkReader<F> {
    fetch_page: F,
    /// The offset of the next byte to deliver.
    next: u64,
    buffer: Vec<u8>,
    at: usize,
    done: bool,
}

#[cfg(any(feature = "sqlite", feature = "postgres"))]
impl<F: FnMut(u64) -> io::Result<Vec<(u64, Vec<u8>)>>> PagedChunkReader<F> {
    /// A reader from byte `from`.
    pub(crate) fn new(from: u64, fetch_page: F) -> Self {
        PagedChunkReader {
            fetch_page,
            next: from,
            buffer: Vec::new(),
            at: 0,
            done: false,
        }
    }

    fn fetch(&mut self) -> io::Result<()> {
        let chunks = (self.fetch_page)(self.next)?;
        self.buffer.clear();
        self.at = 0;
        let mut any = false;
        for (start, bytes) in chunks {
            let end = start + bytes.len() as u64;
            if end <= self.next {
                continue;
            }
            any = true;
            let skip = usize::try_from(self.next.saturating_sub(start)).unwrap_or(usize::MAX);
            self.buffer
                .extend_from_slice(bytes.get(skip..).unwrap_or_default());
            self.next = end;
        }
        if !any {
            self.done = true;
        }
        Ok(())
    }
}

#[cfg(any(feature = "sqlite", feature = "postgres"))]
impl<F: FnMut(u64) -> io::Result<Vec<(u64, Vec<u8>)>>> Read for PagedChunkReader<F> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        while self.at >= self.buffer.len() {
            if self.done {
                return Ok(0);
            }
            self.fetch()?;
        }
        let available = &self.buffer[self.at..];
        let count = available.len().min(out.len());
        out[..count].copy_from_slice(&available[..count]);
        self.at += count;
        Ok(count)
    }
}

/// Where an existing log ends, for a writer continuing it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LogEnd {
    /// Length in bytes.
    pub offset: u64,
    /// `seq` of the last complete line (0: none).
    pub last_seq: u64,
    /// The log ends in a torn line (a crash mid-write): the next line starts with a newline.
    pub torn: bool,
}

impl LogEnd {
    /// Where the log in `bytes` (its last part, ending at `offset`) ends: the `seq` of its last
    /// complete line and whether a torn fragment follows it. For stores that keep the log's
    /// tail at hand; `bytes` must hold the last complete line whole.
    pub fn of_tail(bytes: &[u8], offset: u64) -> LogEnd {
        let torn = bytes.last().is_some_and(|b| *b != b'\n');
        let complete = match memchr::memrchr(b'\n', bytes) {
            Some(at) => &bytes[..at],
            None => &[][..],
        };
        let start = memchr::memrchr(b'\n', complete).map_or(0, |at| at + 1);
        let last_seq = line_head(&complete[start..])
            .ok()
            .and_then(|head| head.seq)
            .unwrap_or(0);
        LogEnd {
            offset,
            last_seq,
            torn,
        }
    }
}

/// The file behind a log in `.robota/logs`: opened with `O_APPEND`, each line written with one
/// `write_all`.
struct FileLogAppender {
    file: File,
}

impl FileLogAppender {
    /// Opens (creating it and its directory if needed) the log at `path`, and finds where it
    /// ends.
    fn open(path: &Path) -> Result<(FileLogAppender, LogEnd), LogError> {
        if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
            create_private_dir(dir)
                .map_err(|e| LogError::io("create the directory of", path, e))?;
        }
        let mut open = OpenOptions::new();
        open.read(true).append(true).create(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            open.mode(0o600);
        }
        let mut file = open.open(path).map_err(|e| LogError::io("open", path, e))?;
        let offset = file
            .metadata()
            .map_err(|e| LogError::io("inspect", path, e))?
            .len();
        let tail = read_tail(&mut file, offset).map_err(|e| LogError::io("read", path, e))?;
        let end = LogEnd {
            offset,
            last_seq: tail.last_seq,
            torn: tail.torn,
        };
        Ok((FileLogAppender { file }, end))
    }
}

impl LogAppender for FileLogAppender {
    fn append(&mut self, lines: &[u8]) -> io::Result<()> {
        self.file.write_all(lines)
    }

    fn sync(&mut self) -> io::Result<()> {
        self.file.sync_data()
    }

    fn end(&mut self) -> io::Result<u64> {
        Ok(self.file.metadata()?.len())
    }
}

/// Opens the log file at `path` for a store: the appender and where the log ends.
pub(crate) fn open_file_appender(path: &Path) -> Result<(Box<dyn LogAppender>, LogEnd), LogError> {
    let (appender, end) = FileLogAppender::open(path)?;
    Ok((Box::new(appender), end))
}

/// A provider request without its message list (see [`LogOptions::full_provider_requests`]).
#[derive(Serialize)]
struct CompactProviderRequest<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    execution_id: &'a str,
    round: u32,
    provider: &'a str,
    model: &'a str,
    messages_omitted: bool,
    message_count: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    last_message_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    system_length: Option<usize>,
    tool_names: Vec<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking: Option<&'a ThinkingConfig>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<&'a ToolChoice>,
}

/// True when `key` names a secret: `api_key`, `apiKey`, `x-api-key`, `authorization`,
/// `access_token`, `refresh_token`, `secret`, `password` (case and `-`/`_` insensitive).
pub fn is_sensitive_key(key: &str) -> bool {
    let normalized: String = key
        .chars()
        .filter(|c| *c != '-' && *c != '_')
        .map(|c| c.to_ascii_lowercase())
        .collect();
    matches!(
        normalized.as_str(),
        "apikey"
            | "xapikey"
            | "authorization"
            | "accesstoken"
            | "refreshtoken"
            | "secret"
            | "password"
    )
}

/// Replaces every value under a secret key (see [`is_sensitive_key`]), at any depth, with
/// [`REDACTED`].
pub fn scrub_sensitive(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (key, value) in map.iter_mut() {
                if is_sensitive_key(key) {
                    *value = Value::String(REDACTED.to_string());
                } else {
                    scrub_sensitive(value);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(scrub_sensitive),
        _ => {}
    }
}

/// True when [`scrub_sensitive`] would change `value` (checked first, so the common case clones
/// nothing).
pub fn contains_sensitive(value: &Value) -> bool {
    match value {
        Value::Object(map) => map
            .iter()
            .any(|(key, value)| is_sensitive_key(key) || contains_sensitive(value)),
        Value::Array(items) => items.iter().any(contains_sensitive),
        _ => false,
    }
}

/// Creates `dir` and its parents; new directories get mode 0700 on Unix.
pub(crate) fn create_private_dir(dir: &Path) -> io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir)
}

// ---------------------------------------------------------------------------------------------
// Reading.

/// The `ts`, `seq` and `type` of a line.
#[derive(Debug, Clone, PartialEq, Eq)]
struct LineHead<'a> {
    ts: Option<std::borrow::Cow<'a, str>>,
    seq: Option<u64>,
    kind: Option<std::borrow::Cow<'a, str>>,
}

/// Reads the head of a line written by [`SessionLog`] without parsing the rest:
/// `{"ts":"…","seq":N,"type":"…"`. `None` for other shapes.
fn fast_head(line: &[u8]) -> Option<LineHead<'_>> {
    let rest = line.strip_prefix(b"{\"ts\":\"")?;
    let end = memchr::memchr(b'"', rest)?;
    let ts = std::str::from_utf8(&rest[..end]).ok()?;
    let rest = rest[end..].strip_prefix(b"\",\"seq\":")?;
    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    let seq: u64 = std::str::from_utf8(&rest[..digits]).ok()?.parse().ok()?;
    let rest = &rest[digits..];
    let kind = match rest.strip_prefix(b",\"type\":\"") {
        Some(rest) => {
            let end = memchr::memchr(b'"', rest)?;
            // A kind with escapes is not one of ours; let the slow path decode it.
            if rest[..end].contains(&b'\\') {
                return None;
            }
            Some(std::borrow::Cow::Borrowed(
                std::str::from_utf8(&rest[..end]).ok()?,
            ))
        }
        None if rest.starts_with(b"}") => None,
        None => return None,
    };
    Some(LineHead {
        ts: Some(std::borrow::Cow::Borrowed(ts)),
        seq: Some(seq),
        kind,
    })
}

#[derive(Deserialize)]
struct SlowHead {
    #[serde(default)]
    ts: Option<String>,
    #[serde(default)]
    seq: Option<u64>,
    #[serde(default, rename = "type")]
    kind: Option<String>,
}

/// The head of any line: the fast path for our own lines, a full parse for others (for example a
/// [`JsonlRecorder`](crate::engine::JsonlRecorder) log). `Err` for a line that is not JSON.
fn line_head(line: &[u8]) -> Result<LineHead<'_>, serde_json::Error> {
    if let Some(head) = fast_head(line) {
        return Ok(head);
    }
    let slow: SlowHead = serde_json::from_slice(line)?;
    Ok(LineHead {
        ts: slow.ts.map(std::borrow::Cow::Owned),
        seq: slow.seq,
        kind: slow.kind.map(std::borrow::Cow::Owned),
    })
}

struct Tail {
    last_seq: u64,
    torn: bool,
}

/// Finds the `seq` of the last complete line and whether a torn fragment follows it, reading
/// backwards from the end (so opening a long log does not read it all).
fn read_tail(file: &mut File, len: u64) -> io::Result<Tail> {
    if len == 0 {
        return Ok(Tail {
            last_seq: 0,
            torn: false,
        });
    }
    let mut last = [0u8; 1];
    file.seek(SeekFrom::Start(len - 1))?;
    file.read_exact(&mut last)?;
    let torn = last[0] != b'\n';
    // End of the last complete line (the index of its newline).
    let end = if torn {
        rfind_newline(file, len - 1)?
    } else {
        Some(len - 1)
    };
    let Some(end) = end else {
        // No complete line at all: the whole file is one torn fragment.
        return Ok(Tail { last_seq: 0, torn });
    };
    let start = rfind_newline(file, end)?.map_or(0, |nl| nl + 1);
    let mut prefix = vec![0u8; (end - start).min(512) as usize];
    file.seek(SeekFrom::Start(start))?;
    file.read_exact(&mut prefix)?;
    if let Some(seq) = fast_head(&prefix).and_then(|head| head.seq) {
        return Ok(Tail {
            last_seq: seq,
            torn,
        });
    }
    // Not one of our lines (or not readable from its start): find the largest seq the slow way.
    file.seek(SeekFrom::Start(0))?;
    let mut reader = BufReader::new(&mut *file);
    let mut line = Vec::new();
    let mut last_seq = 0;
    loop {
        line.clear();
        if reader.read_until(b'\n', &mut line)? == 0 || line.last() != Some(&b'\n') {
            break;
        }
        if let Ok(head) = line_head(&line[..line.len() - 1]) {
            last_seq = last_seq.max(head.seq.unwrap_or(0));
        }
    }
    Ok(Tail { last_seq, torn })
}

/// The position of the last `\n` strictly before byte `before`, reading backwards in chunks.
fn rfind_newline(file: &mut File, before: u64) -> io::Result<Option<u64>> {
    const CHUNK: u64 = 64 * 1024;
    let mut end = before;
    let mut buffer = vec![0u8; CHUNK as usize];
    while end > 0 {
        let start = end.saturating_sub(CHUNK);
        let chunk = &mut buffer[..(end - start) as usize];
        file.seek(SeekFrom::Start(start))?;
        file.read_exact(chunk)?;
        if let Some(at) = memchr::memrchr(b'\n', chunk) {
            return Ok(Some(start + at as u64));
        }
        end = start;
    }
    Ok(None)
}

/// The history, usage and metadata a snapshot already holds, to continue from with the log
/// lines written after it.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayBase {
    /// The snapshot's history.
    pub history: Vec<HistoryEntry>,
    /// The snapshot's usage totals.
    pub usage: UsageTotals,
    /// The log position the snapshot was taken at.
    pub position: LogPosition,
}

/// The last `session_init` of a log.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
pub struct LoggedInit {
    /// Session id.
    #[serde(default)]
    pub session_id: Option<String>,
    /// Working directory.
    #[serde(default)]
    pub cwd: Option<String>,
    /// Provider name.
    #[serde(default)]
    pub provider: Option<String>,
    /// Model id.
    #[serde(default)]
    pub model: Option<String>,
    /// Permission mode.
    #[serde(default)]
    pub permission_mode: Option<String>,
    /// Session name.
    #[serde(default)]
    pub name: Option<String>,
    /// Parent session (fork).
    #[serde(default)]
    pub parent_id: Option<String>,
    /// The system prompt.
    #[serde(default)]
    pub system_prompt: Option<String>,
    /// Tool schemas.
    #[serde(default)]
    pub tool_schemas: Vec<Value>,
}

/// A turn that started and never finished: the log ends inside it, or the session was opened
/// again (a new `session_init`) before its `turn_end` — the process running it stopped mid-turn.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct IncompleteTurn {
    /// `seq` of its `pre_run` line.
    pub started_seq: u64,
    /// The prompt that started it, as the model was to see it (the `pre_run` line's `input`).
    pub prompt: Option<String>,
    /// When it started (`ts` of its `pre_run` line).
    pub started_at: Option<String>,
    /// What the turn had committed; left out of the rebuilt history so that it stays
    /// consistent (a `tool_use` may be missing its result).
    pub entries: Vec<HistoryEntry>,
    /// `(model, usage)` of each model call the turn made: tokens that were spent (and billed)
    /// even though the turn is lost, for the session to count.
    pub calls: Vec<(String, Usage)>,
}

/// What [`replay_log`] rebuilt.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LogReplay {
    /// The committed history.
    pub history: Vec<HistoryEntry>,
    /// Usage totals: the base's plus every replayed `turn_end`.
    pub usage: UsageTotals,
    /// The last `session_init`, if any was read.
    pub init: Option<LoggedInit>,
    /// The name set by the last `session_renamed` read (`Some(None)`: cleared).
    pub renamed: Option<Option<String>>,
    /// `ts` of the first line read.
    pub first_ts: Option<String>,
    /// `ts` of the last complete line read.
    pub last_ts: Option<String>,
    /// Turns committed by the lines read.
    pub turns_replayed: u64,
    /// Lines read (complete ones).
    pub lines_read: u64,
    /// Where the log ends (after its last complete line).
    pub position: LogPosition,
    /// The last turn that started and never finished, unless a later turn started after it
    /// (then the user went on, and it is only a diagnostic).
    pub incomplete_turn: Option<IncompleteTurn>,
    /// `pre_run` lines read: turns started in the part of the log that was read.
    pub turns_started: u64,
    /// Complete lines that could not be read and were skipped (garbage, a line of another
    /// format, a fragment an earlier crash left and a restarted writer closed off).
    pub skipped_lines: Vec<SkippedLine>,
    /// The log ends in the middle of a line (the writer stopped while writing it).
    pub torn_tail: Option<TornTail>,
    /// Whether the base's position matched the log (when a base was given). When it did not,
    /// nothing was replayed and the base is returned unchanged.
    pub base_matched: bool,
    /// Everything unusual: a torn last line, unreadable lines, index gaps, a mismatched base.
    pub diagnostics: Vec<String>,
}

/// A complete log line that replay could not read and skipped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkippedLine {
    /// 1-based line number in the log file.
    pub line: u64,
    /// Byte offset of the line's start.
    pub offset: u64,
    /// The line's `type`, when at least its head could be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Why it could not be read.
    pub problem: String,
}

/// The end of a log cut off in the middle of a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TornTail {
    /// 1-based line number of the cut line.
    pub line: u64,
    /// Byte offset of its start.
    pub offset: u64,
    /// How many bytes of it were written.
    pub bytes: u64,
}

#[derive(Deserialize)]
struct PreRunLine {
    #[serde(default)]
    input: Option<String>,
}

#[derive(Deserialize)]
struct MutationLine {
    message: Message,
    #[serde(default)]
    index: Option<usize>,
}

#[derive(Deserialize)]
struct AppendLine {
    entry: HistoryEntry,
}

#[derive(Deserialize)]
struct ReplaceLine {
    entries: Vec<HistoryEntry>,
    #[serde(default)]
    usage: Option<UsageTotals>,
}

#[derive(Deserialize)]
struct TurnEndLine {
    #[serde(default)]
    usage: Option<UsageTotals>,
}

#[derive(Deserialize)]
struct RenamedLine {
    #[serde(default)]
    name: Option<String>,
}

#[derive(Deserialize)]
struct ResponseLine {
    response: ResponseUsage,
}

#[derive(Deserialize)]
struct ResponseUsage {
    #[serde(default)]
    usage: Usage,
    #[serde(default)]
    model: String,
}

/// Rebuilds a session's history from its log.
///
/// Without `base`, reads the whole log. With `base` (a snapshot), reads only the lines after
/// `base.position` and applies them on top of the snapshot — after checking that the line at
/// that offset is the one that followed the snapshot (`seq + 1`); otherwise the log is not the
/// one the snapshot was taken with and the base is returned unchanged, with a diagnostic.
///
/// Rules: `history_mutation` and `history_append` lines inside a turn (`pre_run` … `turn_end`)
/// are committed by the `turn_end`; outside a turn they are committed at once.
/// `history_replace` replaces everything committed so far. A turn with no `turn_end` before the
/// log ends is returned as [`LogReplay::incomplete_turn`], not in the history. Unreadable lines
/// are skipped with a diagnostic; so is a torn last line (no newline: a crash mid-write).
///
/// A missing log file is an `Io` error of kind `NotFound`.
pub fn replay_log(path: &Path, base: Option<ReplayBase>) -> Result<LogReplay, LogError> {
    replay_log_counting(&FileLogSource::new(path), base, &mut 0)
}

/// Read access to a session log's bytes by offset: what replay needs from a store (see
/// [`SessionStore::read_log`](super::store::SessionStore::read_log)).
pub trait LogSource {
    /// Names the log in messages (the file, or the store's location for it).
    fn location(&self) -> &Path;
    /// The log's length in bytes; an `Io` error of kind `NotFound` when there is no log.
    fn byte_len(&self) -> Result<u64, LogError>;
    /// The log's bytes from `offset` to its end; an `Io` error of kind `NotFound` when there is
    /// no log.
    fn read_from(&self, offset: u64) -> Result<Box<dyn Read + '_>, LogError>;
}

/// A log file read directly (regular files only: a FIFO or a device is refused, never read).
pub struct FileLogSource<'a> {
    path: &'a Path,
}

impl<'a> FileLogSource<'a> {
    /// The log at `path`.
    pub fn new(path: &'a Path) -> Self {
        FileLogSource { path }
    }
}

impl LogSource for FileLogSource<'_> {
    fn location(&self) -> &Path {
        self.path
    }

    fn byte_len(&self) -> Result<u64, LogError> {
        Ok(open_log(self.path)?.1)
    }

    fn read_from(&self, offset: u64) -> Result<Box<dyn Read + '_>, LogError> {
        let (mut file, _) = open_log(self.path)?;
        file.seek(SeekFrom::Start(offset))
            .map_err(|e| LogError::io("read", self.path, e))?;
        Ok(Box::new(file))
    }
}

/// [`replay_log`] over any [`LogSource`], adding the bytes read to `bytes_read`.
pub(crate) fn replay_log_counting(
    source: &dyn LogSource,
    base: Option<ReplayBase>,
    bytes_read: &mut u64,
) -> Result<LogReplay, LogError> {
    let (mut history, base) = match base {
        Some(base) => (base.history, Some((base.usage, base.position))),
        None => (Vec::new(), None),
    };
    let mut replay = replay_into(source, base, &mut history, bytes_read)?;
    replay.history = history;
    Ok(replay)
}

/// [`replay_log`] working on `history` in place (so a caller holding a large snapshot history
/// neither copies it nor loses it when reading fails). `history` starts as the base's history
/// and ends as the rebuilt one; [`LogReplay::history`] is left empty.
pub(crate) fn replay_into(
    source: &dyn LogSource,
    base: Option<(UsageTotals, LogPosition)>,
    history: &mut Vec<HistoryEntry>,
    bytes_read: &mut u64,
) -> Result<LogReplay, LogError> {
    let path = source.location();
    let len = source.byte_len()?;
    let mut replay = LogReplay {
        base_matched: base.is_none(),
        usage: UsageTotals::new(),
        ..LogReplay::default()
    };
    let mut start = 0;
    let mut boundary_reader = None;
    if let Some((usage, position)) = base {
        replay.usage = usage;
        replay.position = position;
        if position.offset > len {
            replay.diagnostics.push(format!(
                "the log {} is shorter ({len} bytes) than when the snapshot was taken ({} bytes); it was truncated or replaced, so only the snapshot is used",
                path.display(),
                position.offset
            ));
            return Ok(replay);
        }
        if position.offset > 0 {
            // Read from the byte before the position: it must end a line, and the same reader
            // then goes on at the position.
            let mut before = [0u8; 1];
            let mut reader = source.read_from(position.offset - 1)?;
            let boundary = reader.read_exact(&mut before);
            if boundary.is_err() || before[0] != b'\n' {
                replay.diagnostics.push(format!(
                    "the snapshot's log position (byte {}) is not a line boundary of {}; only the snapshot is used",
                    position.offset,
                    path.display()
                ));
                return Ok(replay);
            }
            boundary_reader = Some(reader);
        }
        start = position.offset;
        replay.base_matched = true;
        // The first line after the offset must carry the next seq; checked in the loop.
    }
    let file = match boundary_reader {
        Some(reader) => reader,
        None => source.read_from(start)?,
    };
    let mut reader = BufReader::with_capacity(64 * 1024, file);
    let mut state = ReplayState {
        committed_chats: count_chats(history),
        committed: history,
        pending: None,
        pending_chats: 0,
        pending_responses: Vec::new(),
    };
    let expected_first_seq = if start > 0 {
        Some(replay.position.seq + 1)
    } else {
        None
    };
    let mut offset = start;
    let mut line = Vec::with_capacity(64 * 1024);
    let mut line_number = 0u64;
    let mut index_gap_reported = false;
    // The last turn closed without its `turn_end` (by a later `session_init`), until a later
    // turn starts.
    let mut unfinished: Option<IncompleteTurn> = None;
    loop {
        line.clear();
        let read = reader
            .read_until(b'\n', &mut line)
            .map_err(|e| LogError::io("read", path, e))?;
        if read == 0 {
            break;
        }
        *bytes_read += read as u64;
        if line.last() != Some(&b'\n') {
            replay.diagnostics.push(format!(
                "ignored a torn last line of {} bytes at byte {offset} of {} (the process stopped while writing it)",
                line.len(),
                path.display()
            ));
            replay.torn_tail = Some(TornTail {
                line: line_number + 1,
                offset,
                bytes: line.len() as u64,
            });
            break;
        }
        line_number += 1;
        let line_start = offset;
        offset += read as u64;
        let body = &line[..line.len() - 1];
        let body = body.strip_suffix(b"\r").unwrap_or(body);
        if body.iter().all(u8::is_ascii_whitespace) {
            replay.position.offset = offset;
            continue;
        }
        let head = match line_head(body) {
            Ok(head) => head,
            Err(error) => {
                replay.diagnostics.push(format!(
                    "skipped an unreadable line at byte {line_start} of {}: {error}",
                    path.display()
                ));
                replay.skipped_lines.push(SkippedLine {
                    line: line_number,
                    offset: line_start,
                    kind: None,
                    problem: line_problem(&error),
                });
                continue;
            }
        };
        if line_number == 1 {
            if let (Some(expected), Some(seq)) = (expected_first_seq, head.seq) {
                if seq != expected {
                    replay.diagnostics.push(format!(
                        "the log {} does not continue where the snapshot left it (expected seq {expected} at byte {start}, found {seq}); only the snapshot is used",
                        path.display()
                    ));
                    replay.base_matched = false;
                    return Ok(replay);
                }
            }
        }
        replay.lines_read += 1;
        if replay.first_ts.is_none() {
            replay.first_ts = head.ts.as_ref().map(|ts| ts.to_string());
        }
        if let Some(ts) = &head.ts {
            let last = replay.last_ts.get_or_insert_with(String::new);
            last.clear();
            last.push_str(ts);
        }
        replay.position = LogPosition {
            seq: head
                .seq
                .unwrap_or(replay.position.seq)
                .max(replay.position.seq),
            offset,
        };
        let kind = head.kind.as_deref().unwrap_or_default();
        let seq = head.seq.unwrap_or(0);
        let parse_error = |error: serde_json::Error, replay: &mut LogReplay| {
            replay.diagnostics.push(format!(
                "skipped an unreadable {kind} line (seq {seq}, byte {line_start}) of {}: {error}",
                path.display()
            ));
            replay.skipped_lines.push(SkippedLine {
                line: line_number,
                offset: line_start,
                kind: Some(kind.to_string()),
                problem: line_problem(&error),
            });
        };
        match kind {
            "session_init" => {
                // A new writer opened the session: whatever turn was open, its process stopped.
                if let Some(turn) = state.take_pending(path, &mut replay.diagnostics) {
                    report_incomplete(
                        &mut replay.diagnostics,
                        &turn,
                        "the session was opened again",
                    );
                    unfinished = Some(turn);
                }
                match serde_json::from_slice::<LoggedInit>(body) {
                    Ok(init) => replay.init = Some(init),
                    Err(error) => parse_error(error, &mut replay),
                }
            }
            "pre_run" => {
                if let Some(turn) = state.take_pending(path, &mut replay.diagnostics) {
                    report_incomplete(&mut replay.diagnostics, &turn, "a later turn started");
                }
                unfinished = None;
                replay.turns_started += 1;
                let prompt = match serde_json::from_slice::<PreRunLine>(body) {
                    Ok(pre_run) => pre_run.input,
                    Err(error) => {
                        parse_error(error, &mut replay);
                        None
                    }
                };
                state.pending = Some(IncompleteTurn {
                    started_seq: seq,
                    prompt,
                    started_at: head.ts.as_ref().map(|ts| ts.to_string()),
                    ..IncompleteTurn::default()
                });
            }
            "history_mutation" => match serde_json::from_slice::<MutationLine>(body) {
                Ok(mutation) => {
                    if let Some(index) = mutation.index {
                        let expected = state.committed_chats + state.pending_chats;
                        if index != expected && !index_gap_reported {
                            index_gap_reported = true;
                            replay.diagnostics.push(format!(
                                "history_mutation at seq {seq} has index {index} where {expected} was expected: some lines are missing or the log was written by two processes"
                            ));
                        }
                    }
                    state.push(HistoryEntry::chat(mutation.message));
                }
                Err(error) => parse_error(error, &mut replay),
            },
            "history_append" => match serde_json::from_slice::<AppendLine>(body) {
                Ok(append) => state.push(append.entry),
                Err(error) => parse_error(error, &mut replay),
            },
            "history_replace" => match serde_json::from_slice::<ReplaceLine>(body) {
                Ok(replace) => {
                    state.committed_chats = count_chats(&replace.entries);
                    *state.committed = replace.entries;
                    if let Some(turn) = &mut state.pending {
                        turn.entries.clear();
                    }
                    state.pending_chats = 0;
                    if let Some(usage) = replace.usage {
                        replay.usage = usage;
                    }
                }
                Err(error) => parse_error(error, &mut replay),
            },
            // Only needed if the turn never ends: keep the bytes, parse at the end.
            "provider_response" if state.pending.is_some() => {
                state.pending_responses.push(body.to_vec());
            }
            "turn_end" => match serde_json::from_slice::<TurnEndLine>(body) {
                Ok(end) => {
                    if let Some(turn) = state.pending.take() {
                        state.committed.extend(turn.entries);
                        state.committed_chats += state.pending_chats;
                    }
                    state.pending_chats = 0;
                    state.pending_responses.clear();
                    match end.usage {
                        Some(usage) => replay.usage.add_turn(&usage),
                        None => replay.usage.turns += 1,
                    }
                    replay.turns_replayed += 1;
                }
                Err(error) => parse_error(error, &mut replay),
            },
            "session_renamed" => match serde_json::from_slice::<RenamedLine>(body) {
                Ok(renamed) => replay.renamed = Some(renamed.name),
                Err(error) => parse_error(error, &mut replay),
            },
            _ => {}
        }
    }
    if let Some(turn) = state.take_pending(path, &mut replay.diagnostics) {
        report_incomplete(&mut replay.diagnostics, &turn, "the log ends");
        unfinished = Some(turn);
    }
    replay.incomplete_turn = unfinished;
    if start > 0 && (!replay.skipped_lines.is_empty() || replay.torn_tail.is_some()) {
        // Line numbers so far count from the snapshot's position: make them the file's.
        let before = count_lines_before(source, start, bytes_read)?;
        for skipped in &mut replay.skipped_lines {
            skipped.line += before;
        }
        if let Some(torn) = &mut replay.torn_tail {
            torn.line += before;
        }
    }
    Ok(replay)
}

/// What is wrong with one log line, for people: the JSON error without its "line 1" (a log
/// line is one JSON line; the log's own line number is reported beside it).
fn line_problem(error: &serde_json::Error) -> String {
    let text = error.to_string();
    let location = format!(" at line {} column {}", error.line(), error.column());
    let what = if error.is_syntax() || error.is_eof() {
        "not valid JSON"
    } else {
        "not a log record"
    };
    match text.strip_suffix(&location) {
        Some(message) => format!("{what}: {message} at column {}", error.column()),
        None => format!("{what}: {text}"),
    }
}

/// The number of newlines in the first `end` bytes of the log.
fn count_lines_before(
    source: &dyn LogSource,
    end: u64,
    bytes_read: &mut u64,
) -> Result<u64, LogError> {
    let path = source.location();
    let file = source.read_from(0)?;
    let mut reader = BufReader::with_capacity(64 * 1024, file.take(end));
    let mut count = 0u64;
    loop {
        let buffer = reader
            .fill_buf()
            .map_err(|e| LogError::io("read", path, e))?;
        if buffer.is_empty() {
            return Ok(count);
        }
        count += memchr::memchr_iter(b'\n', buffer).count() as u64;
        let used = buffer.len();
        *bytes_read += used as u64;
        reader.consume(used);
    }
}

fn report_incomplete(diagnostics: &mut Vec<String>, turn: &IncompleteTurn, why: &str) {
    diagnostics.push(format!(
        "the turn started at seq {} did not finish before {why}: its {} history entries are left out (the session stopped mid-turn)",
        turn.started_seq,
        turn.entries.len()
    ));
}

struct ReplayState<'a> {
    committed: &'a mut Vec<HistoryEntry>,
    /// Chat messages in `committed` (kept as a count: recounting per line is quadratic).
    committed_chats: usize,
    pending: Option<IncompleteTurn>,
    pending_chats: usize,
    /// Raw `provider_response` lines of the open turn.
    pending_responses: Vec<Vec<u8>>,
}

impl ReplayState<'_> {
    fn push(&mut self, entry: HistoryEntry) {
        let chat = usize::from(entry.message().is_some());
        match &mut self.pending {
            Some(turn) => {
                turn.entries.push(entry);
                self.pending_chats += chat;
            }
            None => {
                self.committed.push(entry);
                self.committed_chats += chat;
            }
        }
    }

    /// Closes the open turn without committing it, with the usage of the model calls it made
    /// (from its `provider_response` lines).
    fn take_pending(
        &mut self,
        path: &Path,
        diagnostics: &mut Vec<String>,
    ) -> Option<IncompleteTurn> {
        let mut turn = self.pending.take()?;
        for body in self.pending_responses.drain(..) {
            match serde_json::from_slice::<ResponseLine>(&body) {
                Ok(line) => turn.calls.push((line.response.model, line.response.usage)),
                Err(error) => diagnostics.push(format!(
                    "skipped an unreadable provider_response line of {}: {error}",
                    path.display()
                )),
            }
        }
        self.pending_chats = 0;
        Some(turn)
    }
}

fn count_chats(entries: &[HistoryEntry]) -> usize {
    entries.iter().filter(|e| e.message().is_some()).count()
}

/// Opens a log for reading: a regular file only (a FIFO or a link to a device is refused, never
/// read).
fn open_log(path: &Path) -> Result<(File, u64), LogError> {
    crate::files::open_regular(path, &crate::files::SESSION_LOG_FILE)
        .map_err(|e| LogError::io("open", path, e.into_io_error()))
}

/// Reads the first line of a log (at most `limit` bytes) as a `session_init`, for listing a
/// session that has a log but no snapshot. Adds the bytes read to `bytes_read`.
pub(crate) fn read_first_init(
    source: &dyn LogSource,
    limit: u64,
    bytes_read: &mut u64,
) -> Result<Option<(LoggedInit, Option<String>)>, LogError> {
    let path = source.location();
    let file = source.read_from(0)?;
    let mut reader = BufReader::with_capacity(8 * 1024, file.take(limit));
    let mut line = Vec::new();
    let read = reader
        .read_until(b'\n', &mut line)
        .map_err(|e| LogError::io("read", path, e))?;
    *bytes_read += read as u64;
    if line.last() != Some(&b'\n') {
        return Ok(None);
    }
    let body = &line[..line.len() - 1];
    let Ok(head) = line_head(body) else {
        return Ok(None);
    };
    if head.kind.as_deref() != Some("session_init") {
        return Ok(None);
    }
    let ts = head.ts.map(|ts| ts.to_string());
    Ok(serde_json::from_slice::<LoggedInit>(body)
        .ok()
        .map(|init| (init, ts)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fast_head_reads_our_lines_and_refuses_others() {
        let head =
            fast_head(br#"{"ts":"2026-01-01T00:00:00.000Z","seq":42,"type":"turn_end","x":1}"#);
        assert_eq!(head.as_ref().and_then(|h| h.seq), Some(42));
        assert_eq!(head.and_then(|h| h.kind).as_deref(), Some("turn_end"));
        assert!(fast_head(br#"{"type":"provider_response"}"#).is_none());
        let slow = line_head(br#"{"type":"provider_response","seq":3}"#).ok();
        assert_eq!(slow.as_ref().and_then(|h| h.seq), Some(3));
        assert!(line_head(b"{oops").is_err());
    }

    #[test]
    fn sensitive_keys() {
        for key in [
            "api_key",
            "apiKey",
            "API-KEY",
            "x-api-key",
            "Authorization",
            "access_token",
            "refreshToken",
            "secret",
            "password",
        ] {
            assert!(is_sensitive_key(key), "{key}");
        }
        for key in ["key", "token", "author", "passwords", "command"] {
            assert!(!is_sensitive_key(key), "{key}");
        }
        let mut value = serde_json::json!({"a": [{"Authorization": "Bearer x"}], "command": "ls", "password": {"deep": 1}});
        assert!(contains_sensitive(&value));
        scrub_sensitive(&mut value);
        assert_eq!(value["a"][0]["Authorization"], REDACTED);
        assert_eq!(value["password"], REDACTED);
        assert_eq!(value["command"], "ls");
        assert!(!contains_sensitive(&serde_json::json!({"command": "ls"})));
    }
}
