//! Session persistence: the JSON snapshot `.robota/sessions/{id}.json` ([`SessionStore`],
//! [`SessionRecord`]), the session's own directory `.robota/sessions/{id}/` (spilled tool
//! outputs and background-task output, deleted with the session), resume (from the snapshot, or from the log in `.robota/logs/{id}.jsonl`
//! when the snapshot is missing, corrupt or older than the log), fork and listing.
//!
//! **Snapshot writes are atomic.** The record goes to a temporary file in the same directory,
//! which is `fsync`ed, renamed over the snapshot, and the directory is `fsync`ed: a reader (or a
//! process that restarts after a crash) sees the old snapshot or the new one, never a mix. A
//! failed write leaves the old snapshot as it was and removes the temporary file.
//!
//! **Snapshot and log together.** The snapshot records the log position it was taken at
//! ([`SessionRecord::log_position`]). Resume loads the snapshot and applies the log lines written
//! after that position, so a turn that the log finished but the snapshot missed (a crash between
//! the two writes) is not lost. Without a usable snapshot the whole log is replayed.
//!
//! **Damage is reported, not hidden.** [`Resumed`] says what resume met: an unreadable snapshot
//! ([`Resumed::snapshot_error`]; the session then comes from the log), log lines it skipped with
//! their line numbers ([`Resumed::skipped_lines`]; the history is mended so every tool call
//! keeps a result), a torn last line, and the last prompt whose turn never finished
//! ([`SessionRecord::unfinished_turn`], kept in the snapshot until the next turn starts).
//! `resume` only reads; the writer that continues the session — holding its lock
//! ([`SessionStore::lock`], one writer per session) — moves a damaged snapshot aside
//! ([`SessionStore::set_snapshot_aside`]), keeps a copy of a damaged log
//! ([`SessionStore::copy_log_aside`]) and tells the user (see `recovery`).
//!
//! **Listing reads headers only.** A snapshot is written with its summary fields first
//! (`version`, `id`, `name`, `cwd`, `createdAt`, `updatedAt`, `provider`, `model`,
//! `permissionMode`, `parentId`, `messageCount`, `usage`, `logPosition`) and the history after
//! them. [`SessionStore::list`] parses each file only up to the first field that is not a
//! summary field, reading a few kilobytes however long the history is. (Files written by the
//! TypeScript SDK have no `version` and no fixed order; they are scanned whole, without building
//! their history.) Sessions that crashed before their first snapshot, or whose snapshot is
//! unreadable, are listed from the first line of their log.
//!
//! **File format.** Top-level keys follow the TypeScript SDK's session file (`createdAt`,
//! `history`, `systemPrompt`, `toolSchemas`, …); unknown top-level keys are kept and written
//! back. A file without `version` (written by the TypeScript SDK) is migrated on load: its
//! history entries and, for files that predate `history`, its `messages` are converted to this
//! crate's message shape (entries that cannot be converted are kept as `unconverted-entry`
//! event entries, so nothing is dropped). A `version` newer than this build understands is an
//! error rather than a silent downgrade.
//!
//! Session ids are validated before any path is built (`[A-Za-z0-9_-]`, 1 to 128 characters),
//! so an id can never name a file outside the store.
//!
//! **How a session uses it** (the order matters; it is what makes resume exact):
//!
//! 1. Start: [`SessionStore::resume`] (or a new [`SessionRecord`]), then
//!    [`SessionStore::open_log`] and a `session_init` event ([`SessionLogEvent::SessionInit`]).
//! 2. Each turn: `pre_run`; run the engine with [`SessionLog::execution_callback`] as
//!    `on_execution_event` (and text deltas to [`SessionLog::text_delta`]); then `turn_end` with
//!    the turn's [`UsageTotals`].
//! 3. After `turn_end` (never before it, or the turn's usage would be counted twice on
//!    resume): [`SessionLog::flush`], `record.log_position = Some(log.position())`,
//!    [`SessionRecord::touch`], [`SessionStore::save`].
//! 4. Outside turns, history changes go to the log as `history_append` (injected messages, event
//!    entries) or `history_replace` (compaction) before the snapshot is saved.
//!
//! The snapshot may also be saved less often than every turn without losing anything: resume
//! applies the log's tail. Saving every turn keeps resume fast and the snapshot readable by
//! other tools.

use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use super::lock::{held_message, LockError, LockHolder, SessionLock, LOCK_EXTENSION};
use super::log::{
    create_private_dir, read_first_init, replay_into, replay_log_counting, IncompleteTurn,
    LogError, LogOptions, LogPosition, LogReplay, SessionLog, SessionLogEvent, SkippedLine,
    TornTail, LOG_EXTENSION,
};
use super::recovery::{repair_tool_pairs, UnfinishedTurn};
use super::usage::UsageTotals;
use crate::message::{
    new_id, now_rfc3339, ContentBlock, Conversation, HistoryEntry, Message, MessageState, Role,
};

/// The snapshot format this build writes (and the newest it reads).
pub const SESSION_RECORD_VERSION: u32 = 1;

/// Longest accepted session id.
pub const MAX_SESSION_ID_LEN: usize = 128;

/// File extension of snapshots.
pub const SNAPSHOT_EXTENSION: &str = "json";

/// Event type of history entries a migration could not convert (kept, not dropped).
pub const UNCONVERTED_ENTRY: &str = "unconverted-entry";

/// Keys written before `history`: what [`SessionStore::list`] reads.
const HEADER_KEYS: &[&str] = &[
    "version",
    "id",
    "name",
    "cwd",
    "createdAt",
    "updatedAt",
    "provider",
    "model",
    "permissionMode",
    "parentId",
    "messageCount",
    "usage",
    "logPosition",
];

/// Every key the record owns (the rest go to [`SessionRecord::extra`]).
const RECORD_KEYS: &[&str] = &[
    "version",
    "id",
    "name",
    "cwd",
    "createdAt",
    "updatedAt",
    "provider",
    "model",
    "permissionMode",
    "parentId",
    "messageCount",
    "usage",
    "logPosition",
    "history",
    "systemPrompt",
    "toolSchemas",
    "unfinishedTurn",
];

/// A session as stored in its snapshot.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionRecord {
    /// Format version the record was read with (`0`: a TypeScript SDK file, migrated). Records
    /// are always written as [`SESSION_RECORD_VERSION`].
    pub version: u32,
    /// Session id (see [`validate_session_id`]).
    pub id: String,
    /// User-given name.
    pub name: Option<String>,
    /// Working directory the session runs in.
    pub cwd: String,
    /// Creation time, RFC 3339 UTC.
    pub created_at: String,
    /// Last update, RFC 3339 UTC (see [`SessionRecord::touch`]).
    pub updated_at: String,
    /// Provider name.
    pub provider: Option<String>,
    /// Model id.
    pub model: Option<String>,
    /// Permission mode.
    pub permission_mode: Option<String>,
    /// The session this one was forked from.
    pub parent_id: Option<String>,
    /// Cumulative tokens and cost.
    pub usage: UsageTotals,
    /// The session log's position when this record was taken (set it from
    /// [`SessionLog::position`] right before saving; resume applies the log lines after it).
    pub log_position: Option<LogPosition>,
    /// The full history: chat messages and event entries.
    pub history: Vec<HistoryEntry>,
    /// The exact system prompt the session was created with.
    pub system_prompt: Option<String>,
    /// Tool schemas registered for the session.
    pub tool_schemas: Vec<Value>,
    /// The last prompt, when its turn started and never finished (the process stopped
    /// mid-turn). Kept until the next turn starts, so every resume until then can say so.
    pub unfinished_turn: Option<UnfinishedTurn>,
    /// Top-level fields this version does not know, kept and written back unchanged.
    pub extra: Map<String, Value>,
}

impl SessionRecord {
    /// A new, empty record created now.
    pub fn new(id: impl Into<String>, cwd: impl Into<String>) -> Self {
        let now = now_rfc3339();
        SessionRecord {
            version: SESSION_RECORD_VERSION,
            id: id.into(),
            name: None,
            cwd: cwd.into(),
            created_at: now.clone(),
            updated_at: now,
            provider: None,
            model: None,
            permission_mode: None,
            parent_id: None,
            usage: UsageTotals::new(),
            log_position: None,
            history: Vec::new(),
            system_prompt: None,
            tool_schemas: Vec::new(),
            unfinished_turn: None,
            extra: Map::new(),
        }
    }

    /// Sets `updated_at` to now.
    pub fn touch(&mut self) {
        self.updated_at = now_rfc3339();
    }

    /// Number of chat messages in the history.
    pub fn message_count(&self) -> usize {
        self.history
            .iter()
            .filter(|e| e.message().is_some())
            .count()
    }

    /// The chat messages in order.
    pub fn messages(&self) -> impl Iterator<Item = &Message> + '_ {
        self.history.iter().filter_map(HistoryEntry::message)
    }

    /// The history as a [`Conversation`] the engine can continue.
    pub fn conversation(&self) -> Conversation {
        Conversation::from_entries(self.history.clone())
    }

    /// Replaces the history with the conversation's entries.
    pub fn set_conversation(&mut self, conversation: &Conversation) {
        self.history = conversation.to_entries();
    }
}

impl Serialize for SessionRecord {
    /// Summary fields first (what listing reads), then the history, then the rest.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("version", &SESSION_RECORD_VERSION)?;
        map.serialize_entry("id", &self.id)?;
        if let Some(name) = &self.name {
            map.serialize_entry("name", name)?;
        }
        map.serialize_entry("cwd", &self.cwd)?;
        map.serialize_entry("createdAt", &self.created_at)?;
        map.serialize_entry("updatedAt", &self.updated_at)?;
        if let Some(provider) = &self.provider {
            map.serialize_entry("provider", provider)?;
        }
        if let Some(model) = &self.model {
            map.serialize_entry("model", model)?;
        }
        if let Some(mode) = &self.permission_mode {
            map.serialize_entry("permissionMode", mode)?;
        }
        if let Some(parent) = &self.parent_id {
            map.serialize_entry("parentId", parent)?;
        }
        map.serialize_entry("messageCount", &self.message_count())?;
        map.serialize_entry("usage", &self.usage)?;
        if let Some(position) = &self.log_position {
            map.serialize_entry("logPosition", position)?;
        }
        map.serialize_entry("history", &self.history)?;
        if let Some(prompt) = &self.system_prompt {
            map.serialize_entry("systemPrompt", prompt)?;
        }
        if !self.tool_schemas.is_empty() {
            map.serialize_entry("toolSchemas", &self.tool_schemas)?;
        }
        if let Some(turn) = &self.unfinished_turn {
            map.serialize_entry("unfinishedTurn", turn)?;
        }
        for (key, value) in &self.extra {
            // A host may have put a known key here; the typed field wins.
            if !RECORD_KEYS.contains(&key.as_str()) {
                map.serialize_entry(key, value)?;
            }
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for SessionRecord {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(RecordVisitor)
    }
}

struct RecordVisitor;

impl<'de> Visitor<'de> for RecordVisitor {
    type Value = SessionRecord;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a session record object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<SessionRecord, A::Error> {
        let mut version = None;
        let mut id: Option<String> = None;
        let mut name = None;
        let mut cwd: Option<String> = None;
        let mut created_at = None;
        let mut updated_at = None;
        let mut provider = None;
        let mut model = None;
        let mut permission_mode = None;
        let mut parent_id = None;
        let mut usage = None;
        let mut log_position = None;
        let mut history = None;
        let mut system_prompt = None;
        let mut tool_schemas = None;
        let mut unfinished_turn = None;
        let mut extra = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "version" => version = Some(map.next_value::<u32>()?),
                "id" => id = Some(map.next_value()?),
                "name" => name = map.next_value()?,
                "cwd" => cwd = Some(map.next_value()?),
                "createdAt" => created_at = map.next_value()?,
                "updatedAt" => updated_at = map.next_value()?,
                "provider" => provider = map.next_value()?,
                "model" => model = map.next_value()?,
                "permissionMode" => permission_mode = map.next_value()?,
                "parentId" => parent_id = map.next_value()?,
                "messageCount" => {
                    // Derived from the history on write.
                    map.next_value::<IgnoredAny>()?;
                }
                "usage" => usage = map.next_value::<Option<UsageTotals>>()?,
                "logPosition" => log_position = map.next_value()?,
                "history" => history = Some(map.next_value::<Vec<HistoryEntry>>()?),
                "systemPrompt" => system_prompt = map.next_value()?,
                "toolSchemas" => tool_schemas = map.next_value::<Option<Vec<Value>>>()?,
                "unfinishedTurn" => unfinished_turn = map.next_value()?,
                _ => {
                    let value: Value = map.next_value()?;
                    extra.insert(key, value);
                }
            }
        }
        Ok(SessionRecord {
            version: version.unwrap_or(0),
            id: id.ok_or_else(|| de::Error::missing_field("id"))?,
            name,
            cwd: cwd.ok_or_else(|| de::Error::missing_field("cwd"))?,
            created_at: created_at.unwrap_or_default(),
            updated_at: updated_at.unwrap_or_default(),
            provider,
            model,
            permission_mode,
            parent_id,
            usage: usage.unwrap_or_else(UsageTotals::new),
            log_position,
            history: history.unwrap_or_default(),
            system_prompt,
            tool_schemas: tool_schemas.unwrap_or_default(),
            unfinished_turn,
            extra,
        })
    }
}

/// A session in a listing: the summary fields of its snapshot (or of its log's first line when
/// it has no snapshot yet).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SessionSummary {
    /// Session id.
    pub id: String,
    /// Name.
    pub name: Option<String>,
    /// Working directory.
    pub cwd: Option<String>,
    /// Creation time.
    pub created_at: Option<String>,
    /// Last update (the log file's modification time for a session without snapshot).
    pub updated_at: Option<String>,
    /// Provider name.
    pub provider: Option<String>,
    /// Model id.
    pub model: Option<String>,
    /// Permission mode.
    pub permission_mode: Option<String>,
    /// Parent session (fork).
    pub parent_id: Option<String>,
    /// Chat messages, when the snapshot says.
    pub message_count: Option<u64>,
    /// Usage totals, when the snapshot has them.
    pub usage: Option<UsageTotals>,
    /// False for a session known only from its log (it crashed before its first snapshot, or
    /// its snapshot cannot be read — [`SessionListing::problems`] says why;
    /// [`SessionStore::resume`] rebuilds it).
    pub has_snapshot: bool,
    /// Snapshot format version (0 for TypeScript SDK files and log-only sessions).
    pub version: u32,
}

/// What [`SessionStore::list`] found.
#[derive(Debug, Default)]
pub struct SessionListing {
    /// Sessions, newest `updated_at` first.
    pub sessions: Vec<SessionSummary>,
    /// Files that could not be read (each error names its file); the listing goes on without
    /// them.
    pub problems: Vec<StoreError>,
}

/// Where a resumed session came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResumeSource {
    /// The snapshot, which was up to date with the log.
    Snapshot,
    /// The snapshot, plus log lines written after it (a crash between log and snapshot).
    SnapshotAndLog {
        /// Turns the log added.
        turns_replayed: u64,
    },
    /// The log alone: the snapshot was missing or unreadable.
    LogReplay {
        /// Why the snapshot was not used.
        reason: String,
    },
}

/// A resumed session.
#[derive(Debug, Clone)]
pub struct Resumed {
    /// The record to continue from (save it to bring the snapshot up to date).
    pub record: SessionRecord,
    /// Where it came from.
    pub source: ResumeSource,
    /// A turn the log shows started but not finished (left out of the history). The record's
    /// [`SessionRecord::unfinished_turn`] says the same for people (and is kept in the
    /// snapshot until the next turn starts).
    pub incomplete_turn: Option<IncompleteTurn>,
    /// Why the snapshot could not be used, when there was one and it was unreadable (the
    /// session was then rebuilt from the log).
    pub snapshot_error: Option<String>,
    /// Log lines that could not be read and were skipped.
    pub skipped_lines: Vec<SkippedLine>,
    /// The log ended in the middle of a line (dropped).
    pub torn_tail: Option<TornTail>,
    /// How the history was mended after lines were skipped (see
    /// [`repair_tool_pairs`]).
    pub repairs: Vec<String>,
    /// Anything unusual met on the way (torn log line, unreadable lines, stale temp files…).
    pub diagnostics: Vec<String>,
}

impl Resumed {
    fn new(record: SessionRecord, source: ResumeSource, diagnostics: Vec<String>) -> Self {
        Resumed {
            record,
            source,
            incomplete_turn: None,
            snapshot_error: None,
            skipped_lines: Vec::new(),
            torn_tail: None,
            repairs: Vec::new(),
            diagnostics,
        }
    }

    /// Takes what a log replay found: damage (mending the history if lines were lost) and the
    /// unfinished turn, which replaces the record's when the replayed part started a turn.
    fn absorb(&mut self, replay: &mut LogReplay) {
        self.diagnostics.append(&mut replay.diagnostics);
        self.skipped_lines.append(&mut replay.skipped_lines);
        self.torn_tail = replay.torn_tail.take();
        if !self.skipped_lines.is_empty() {
            self.repairs = repair_tool_pairs(&mut self.record.history);
        }
        if replay.turns_started > 0 {
            self.record.unfinished_turn = replay
                .incomplete_turn
                .as_ref()
                .map(UnfinishedTurn::from_incomplete);
        }
        self.incomplete_turn = replay.incomplete_turn.take();
    }
}

/// A store operation that failed. Every variant says which file and what to do.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The id cannot be a session id.
    #[error("invalid session id {}: {reason}; a session id is 1 to {MAX_SESSION_ID_LEN} characters of A-Z, a-z, 0-9, '_' and '-'", shorten(id))]
    InvalidId {
        /// The rejected id.
        id: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A file operation failed.
    #[error("cannot {op} {}: {source}", path.display())]
    Io {
        /// What was being done.
        op: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The system error.
        #[source]
        source: io::Error,
    },
    /// The snapshot is not valid JSON or not a session record.
    #[error("the session snapshot {} is corrupt at line {line}, column {column}: {message}; resume rebuilds the session from its log in .robota/logs, or move the file away to drop it", path.display())]
    Corrupt {
        /// The snapshot.
        path: PathBuf,
        /// 1-based line of the problem (0 when unknown).
        line: usize,
        /// 1-based column of the problem (0 when unknown).
        column: usize,
        /// What is wrong.
        message: String,
    },
    /// The snapshot was written by a newer version.
    #[error("the session snapshot {} has format version {found}, newer than the {supported} this version of robota reads; upgrade robota to open it", path.display())]
    VersionTooNew {
        /// The snapshot.
        path: PathBuf,
        /// Its version.
        found: u32,
        /// The newest this build reads.
        supported: u32,
    },
    /// The snapshot holds another session than its file name says.
    #[error("the session snapshot {} holds session {found:?}, not {expected:?}; it was copied or renamed by hand", path.display())]
    IdMismatch {
        /// The snapshot.
        path: PathBuf,
        /// The id from the file name.
        expected: String,
        /// The id inside.
        found: String,
    },
    /// There is neither a snapshot nor a log with any line for the id.
    #[error("no session {id:?}: there is no snapshot at {} and no log lines in {}", snapshot.display(), log.display())]
    NotFound {
        /// The id.
        id: String,
        /// Where the snapshot would be.
        snapshot: PathBuf,
        /// Where the log would be.
        log: PathBuf,
    },
    /// The record could not be turned into JSON.
    #[error("cannot encode the session record for {}: {message}", path.display())]
    Encode {
        /// The snapshot.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// The session log failed.
    #[error(transparent)]
    Log(#[from] LogError),
    /// Another writer holds the session (see [`SessionStore::lock`]).
    #[error("{}", held_message(id, holder.as_ref(), path))]
    Locked {
        /// The session.
        id: String,
        /// The lock file.
        path: PathBuf,
        /// Who holds it, when its record could be read.
        holder: Option<LockHolder>,
    },
}

impl StoreError {
    fn io(op: &'static str, path: &Path, source: io::Error) -> Self {
        StoreError::Io {
            op,
            path: path.to_path_buf(),
            source,
        }
    }

    fn corrupt(path: &Path, error: &serde_json::Error) -> Self {
        StoreError::Corrupt {
            path: path.to_path_buf(),
            line: error.line(),
            column: error.column(),
            message: error.to_string(),
        }
    }
}

fn shorten(id: &str) -> String {
    if id.chars().count() > 40 {
        format!(
            "{:?}… ({} characters)",
            id.chars().take(40).collect::<String>(),
            id.chars().count()
        )
    } else {
        format!("{id:?}")
    }
}

/// Checks that `id` can name a session file: 1 to [`MAX_SESSION_ID_LEN`] characters of
/// `[A-Za-z0-9_-]`. Rejects `..`, `/`, `\`, empty and overlong ids before any path is built.
pub fn validate_session_id(id: &str) -> Result<(), StoreError> {
    let reason = if id.is_empty() {
        Some("it is empty")
    } else if id.len() > MAX_SESSION_ID_LEN {
        Some("it is too long")
    } else if !id
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        Some("it contains a character other than letters, digits, '_' and '-'")
    } else {
        None
    };
    match reason {
        Some(reason) => Err(StoreError::InvalidId {
            id: id.to_string(),
            reason,
        }),
        None => Ok(()),
    }
}

/// A fresh session id (a UUID v4).
pub fn new_session_id() -> String {
    new_id()
}

/// Bytes the store read and wrote, for tests and diagnostics (listing must stay cheap).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct IoStats {
    /// Bytes read from snapshot and log files.
    pub bytes_read: u64,
    /// Bytes written to snapshot files.
    pub bytes_written: u64,
}

#[derive(Debug, Default)]
struct Counters {
    bytes_read: AtomicU64,
    bytes_written: AtomicU64,
}

/// Project-local session storage: snapshots in `sessions/` and logs in `logs/` under
/// `<project>/.robota`. Cheap to clone (clones share the I/O counters).
#[derive(Debug, Clone)]
pub struct SessionStore {
    sessions_dir: PathBuf,
    logs_dir: PathBuf,
    project_dir: Option<PathBuf>,
    counters: Arc<Counters>,
}

impl SessionStore {
    /// The store of a project: `<project_dir>/.robota/sessions` and `<project_dir>/.robota/logs`.
    pub fn for_project(project_dir: impl AsRef<Path>) -> Self {
        let project_dir = project_dir.as_ref();
        let robota = project_dir.join(".robota");
        SessionStore {
            sessions_dir: robota.join("sessions"),
            logs_dir: robota.join("logs"),
            project_dir: Some(project_dir.to_path_buf()),
            counters: Arc::default(),
        }
    }

    /// A store with explicit directories (tests, user-level sessions).
    pub fn with_dirs(sessions_dir: impl Into<PathBuf>, logs_dir: impl Into<PathBuf>) -> Self {
        SessionStore {
            sessions_dir: sessions_dir.into(),
            logs_dir: logs_dir.into(),
            project_dir: None,
            counters: Arc::default(),
        }
    }

    /// The snapshot directory.
    pub fn sessions_dir(&self) -> &Path {
        &self.sessions_dir
    }

    /// The log directory.
    pub fn logs_dir(&self) -> &Path {
        &self.logs_dir
    }

    /// The snapshot file of `id`.
    pub fn snapshot_path(&self, id: &str) -> Result<PathBuf, StoreError> {
        validate_session_id(id)?;
        Ok(self.sessions_dir.join(format!("{id}.{SNAPSHOT_EXTENSION}")))
    }

    /// The log file of `id`.
    pub fn log_path(&self, id: &str) -> Result<PathBuf, StoreError> {
        validate_session_id(id)?;
        Ok(self.logs_dir.join(format!("{id}.{LOG_EXTENSION}")))
    }

    /// The directory of `id`'s own files: `<sessions dir>/<id>/`, where its spilled tool outputs
    /// (`spill/`) and background-task output (`tasks/`) are kept. Created by the tools when
    /// first needed; removed by [`delete`](Self::delete).
    pub fn session_dir(&self, id: &str) -> Result<PathBuf, StoreError> {
        validate_session_id(id)?;
        Ok(self.sessions_dir.join(id))
    }

    /// Opens the log of `id` for appending (see [`SessionLog::open`]).
    pub fn open_log(&self, id: &str, options: LogOptions) -> Result<SessionLog, StoreError> {
        Ok(SessionLog::open(self.log_path(id)?, options)?)
    }

    /// Bytes read and written so far by this store (and its clones).
    pub fn io_stats(&self) -> IoStats {
        IoStats {
            bytes_read: self.counters.bytes_read.load(Ordering::Relaxed),
            bytes_written: self.counters.bytes_written.load(Ordering::Relaxed),
        }
    }

    fn count_read(&self, bytes: u64) {
        self.counters.bytes_read.fetch_add(bytes, Ordering::Relaxed);
    }

    /// Writes the snapshot of `record` atomically (temp file, `fsync`, rename, `fsync` of the
    /// directory), creating the directory (mode 0700) if needed. The file gets mode 0600.
    ///
    /// `updated_at` is written as it is; call [`SessionRecord::touch`] first to mark the change.
    /// On error the previous snapshot is unchanged.
    pub fn save(&self, record: &SessionRecord) -> Result<(), StoreError> {
        let path = self.snapshot_path(&record.id)?;
        let bytes = serde_json::to_vec(record).map_err(|error| StoreError::Encode {
            path: path.clone(),
            message: error.to_string(),
        })?;
        create_private_dir(&self.sessions_dir)
            .map_err(|e| StoreError::io("create the session directory", &self.sessions_dir, e))?;
        write_atomic(&path, &bytes)?;
        self.counters
            .bytes_written
            .fetch_add(bytes.len() as u64, Ordering::Relaxed);
        Ok(())
    }

    /// Loads the snapshot of `id`: `Ok(None)` when there is none, an error when it cannot be
    /// read, is corrupt or is from a newer version (never a silent `None`).
    pub fn load(&self, id: &str) -> Result<Option<SessionRecord>, StoreError> {
        let path = self.snapshot_path(id)?;
        let bytes = match crate::files::read_regular(&path, &crate::files::SESSION_SNAPSHOT_FILE) {
            Ok(bytes) => bytes,
            Err(error) if error.is_not_found() => return Ok(None),
            Err(error) => return Err(StoreError::io("read", &path, error.into_io_error())),
        };
        self.count_read(bytes.len() as u64);
        parse_record(&path, &bytes, id).map(Some)
    }

    /// Deletes the snapshot, the log and the session directory (spilled outputs, background-task
    /// output; see [`session_dir`](Self::session_dir)) of `id`, so resume cannot bring it back
    /// and nothing of it is left. Returns false when there was nothing to delete.
    pub fn delete(&self, id: &str) -> Result<bool, StoreError> {
        let mut deleted = false;
        for path in [self.snapshot_path(id)?, self.log_path(id)?] {
            match fs::remove_file(&path) {
                Ok(()) => deleted = true,
                Err(error) if error.kind() == io::ErrorKind::NotFound => {}
                Err(error) => return Err(StoreError::io("delete", &path, error)),
            }
        }
        let dir = self.session_dir(id)?;
        match fs::remove_dir_all(&dir) {
            Ok(()) => deleted = true,
            Err(error) if error.kind() == io::ErrorKind::NotFound => {}
            Err(error) => return Err(StoreError::io("delete", &dir, error)),
        }
        Ok(deleted)
    }

    /// Lists the sessions, newest `updated_at` first, reading only each snapshot's summary
    /// fields (see the module documentation) and, for sessions without snapshot, the first line
    /// of their log. Unreadable files are reported in [`SessionListing::problems`].
    pub fn list(&self) -> Result<SessionListing, StoreError> {
        let mut listing = SessionListing::default();
        let mut seen = std::collections::HashSet::new();
        for (id, path) in self.files(&self.sessions_dir, SNAPSHOT_EXTENSION)? {
            match self.read_summary(&path) {
                Ok(summary) => {
                    if summary.id != id {
                        listing.problems.push(StoreError::IdMismatch {
                            path,
                            expected: id,
                            found: summary.id,
                        });
                        continue;
                    }
                    seen.insert(id);
                    listing.sessions.push(summary);
                }
                Err(error) => {
                    // Resume rebuilds it from its log: list it from there (so `--continue`
                    // finds it) and say what is wrong with the snapshot.
                    let log = self.logs_dir.join(format!("{id}.{LOG_EXTENSION}"));
                    if let Ok(Some(summary)) = self.read_log_summary(&id, &log) {
                        listing.sessions.push(summary);
                    }
                    seen.insert(id);
                    listing.problems.push(error);
                }
            }
        }
        for (id, path) in self.files(&self.logs_dir, LOG_EXTENSION)? {
            if seen.contains(&id) {
                continue;
            }
            match self.read_log_summary(&id, &path) {
                Ok(Some(summary)) => listing.sessions.push(summary),
                Ok(None) => {}
                Err(error) => listing.problems.push(error),
            }
        }
        listing.sessions.sort_by(|a, b| {
            sort_key(b.updated_at.as_deref())
                .cmp(&sort_key(a.updated_at.as_deref()))
                .then_with(|| a.id.cmp(&b.id))
        });
        Ok(listing)
    }

    /// `(id, path)` of the files in `dir` named `{valid id}.{extension}`.
    fn files(&self, dir: &Path, extension: &str) -> Result<Vec<(String, PathBuf)>, StoreError> {
        let entries = match fs::read_dir(dir) {
            Ok(entries) => entries,
            Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(error) => return Err(StoreError::io("list", dir, error)),
        };
        let mut files = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| StoreError::io("list", dir, e))?;
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            let Some(id) = name
                .strip_suffix(extension)
                .and_then(|stem| stem.strip_suffix('.'))
            else {
                continue;
            };
            if validate_session_id(id).is_ok() {
                files.push((id.to_string(), entry.path()));
            }
        }
        Ok(files)
    }

    fn read_summary(&self, path: &Path) -> Result<SessionSummary, StoreError> {
        let (file, _) = crate::files::open_regular(path, &crate::files::SESSION_SNAPSHOT_FILE)
            .map_err(|e| StoreError::io("open", path, e.into_io_error()))?;
        let counting = CountingReader {
            inner: file,
            count: 0,
        };
        // Small buffer: the header is a few hundred bytes, and the point is not to read more.
        let mut reader = BufReader::with_capacity(2048, counting);
        let mut slot = HeaderSlot::default();
        let result = {
            let mut deserializer = serde_json::Deserializer::from_reader(&mut reader);
            HeaderSeed(&mut slot).deserialize(&mut deserializer)
        };
        self.count_read(reader.get_ref().count);
        if let Err(error) = result {
            if !slot.stopped {
                return Err(StoreError::corrupt(path, &error));
            }
        }
        if let Some(found) = slot.version.filter(|v| *v > SESSION_RECORD_VERSION) {
            return Err(StoreError::VersionTooNew {
                path: path.to_path_buf(),
                found,
                supported: SESSION_RECORD_VERSION,
            });
        }
        let Some(id) = slot.id else {
            return Err(StoreError::Corrupt {
                path: path.to_path_buf(),
                line: 1,
                column: 1,
                message: "missing field `id`".into(),
            });
        };
        Ok(SessionSummary {
            id,
            name: slot.name,
            cwd: slot.cwd,
            created_at: slot.created_at,
            updated_at: slot.updated_at,
            provider: slot.provider,
            model: slot.model,
            permission_mode: slot.permission_mode,
            parent_id: slot.parent_id,
            message_count: slot.message_count,
            usage: slot.usage,
            has_snapshot: true,
            version: slot.version.unwrap_or(0),
        })
    }

    fn read_log_summary(
        &self,
        id: &str,
        path: &Path,
    ) -> Result<Option<SessionSummary>, StoreError> {
        let mut read = 0;
        let first = read_first_init(path, 4 * 1024 * 1024, &mut read);
        self.count_read(read);
        let Some((init, ts)) = first? else {
            return Ok(None);
        };
        let modified = fs::metadata(path)
            .and_then(|m| m.modified())
            .map_err(|e| StoreError::io("inspect", path, e))?;
        Ok(Some(SessionSummary {
            id: id.to_string(),
            name: init.name,
            cwd: init.cwd,
            created_at: ts,
            updated_at: Some(format_system_time(modified)),
            provider: init.provider,
            model: init.model,
            permission_mode: init.permission_mode,
            parent_id: init.parent_id,
            message_count: None,
            usage: None,
            has_snapshot: false,
            version: 0,
        }))
    }

    /// Resumes session `id`: the snapshot plus any log lines written after it, or — when the
    /// snapshot is missing or unreadable — the log alone. No turn that finished (`turn_end` in
    /// the log, or in the snapshot) is lost; a turn cut off by a crash is left out and returned
    /// in [`Resumed::incomplete_turn`].
    ///
    /// Also removes temporary snapshot files of `id` left by a process that died mid-save.
    pub fn resume(&self, id: &str) -> Result<Resumed, StoreError> {
        let snapshot_path = self.snapshot_path(id)?;
        let log_path = self.log_path(id)?;
        let mut diagnostics = Vec::new();
        match self.remove_stale_temp_files_of(id) {
            Ok(0) => {}
            Ok(removed) => diagnostics.push(format!(
                "removed {removed} temporary snapshot file(s) left by a process that stopped while saving"
            )),
            Err(error) => diagnostics.push(format!("could not clean up temporary files: {error}")),
        }
        let log_exists = log_path.exists();
        let record = match self.load(id) {
            Ok(Some(record)) => record,
            Ok(None) if log_exists => {
                let reason = format!("no snapshot at {}", snapshot_path.display());
                return self.resume_from_log(id, reason, None, diagnostics);
            }
            Ok(None) => {
                return Err(StoreError::NotFound {
                    id: id.to_string(),
                    snapshot: snapshot_path,
                    log: log_path,
                })
            }
            Err(error @ (StoreError::Corrupt { .. } | StoreError::Io { .. })) if log_exists => {
                let empty = fs::metadata(&snapshot_path).is_ok_and(|m| m.len() == 0);
                let problem = match &error {
                    StoreError::Corrupt { .. } if empty => "it is empty".to_string(),
                    StoreError::Corrupt { message, .. } => format!("it is corrupt: {message}"),
                    StoreError::Io { op, source, .. } => format!("cannot {op} it: {source}"),
                    other => other.to_string(),
                };
                let reason = error.to_string();
                return match self.resume_from_log(id, reason, Some(problem), diagnostics) {
                    // An empty log cannot stand in for the snapshot: report the snapshot's error.
                    Err(StoreError::NotFound { .. }) => Err(error),
                    other => other,
                };
            }
            Err(error) => return Err(error),
        };
        let (Some(position), true) = (record.log_position, log_exists) else {
            return Ok(Resumed::new(record, ResumeSource::Snapshot, diagnostics));
        };
        let mut record = record;
        let before_len = record.history.len();
        let before_last = record
            .history
            .last()
            .map(history_entry_id)
            .map(str::to_string);
        let mut history = std::mem::take(&mut record.history);
        let mut read = 0;
        let replay = replay_into(
            &log_path,
            Some((record.usage.clone(), position)),
            &mut history,
            &mut read,
        );
        self.count_read(read);
        let mut replay = match replay {
            Ok(replay) => replay,
            Err(error) => {
                // The history may hold part of the log's turns: start again from the snapshot.
                diagnostics.push(format!(
                    "the log could not be read, so only the snapshot is used: {error}"
                ));
                let record = self.load(id)?.ok_or_else(|| StoreError::NotFound {
                    id: id.to_string(),
                    snapshot: snapshot_path.clone(),
                    log: log_path.clone(),
                })?;
                return Ok(Resumed::new(record, ResumeSource::Snapshot, diagnostics));
            }
        };
        record.history = history;
        let changed = replay.base_matched
            && (replay.turns_replayed > 0
                || replay.renamed.is_some()
                || record.history.len() != before_len
                || record.history.last().map(history_entry_id) != before_last.as_deref());
        if !changed {
            let mut resumed = Resumed::new(record, ResumeSource::Snapshot, diagnostics);
            resumed.absorb(&mut replay);
            return Ok(resumed);
        }
        record.usage = replay.usage.clone();
        record.log_position = Some(replay.position);
        if let Some(name) = replay.renamed.take() {
            record.name = name;
        }
        if let Some(ts) = replay.last_ts.take() {
            record.updated_at = ts;
        }
        let source = ResumeSource::SnapshotAndLog {
            turns_replayed: replay.turns_replayed,
        };
        let mut resumed = Resumed::new(record, source, diagnostics);
        resumed.absorb(&mut replay);
        Ok(resumed)
    }

    /// Rebuilds session `id` from its log alone, ignoring the snapshot (what [`resume`] does
    /// when the snapshot is unusable; also useful to check a snapshot against its log).
    ///
    /// [`resume`]: SessionStore::resume
    pub fn rebuild_from_log(&self, id: &str) -> Result<Resumed, StoreError> {
        self.resume_from_log(
            id,
            "rebuilt from the log on request".into(),
            None,
            Vec::new(),
        )
    }

    fn resume_from_log(
        &self,
        id: &str,
        reason: String,
        snapshot_error: Option<String>,
        mut diagnostics: Vec<String>,
    ) -> Result<Resumed, StoreError> {
        let log_path = self.log_path(id)?;
        let mut read = 0;
        let replay = replay_log_counting(&log_path, None, &mut read);
        self.count_read(read);
        let mut replay = match replay {
            Ok(replay) => replay,
            Err(LogError::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound => {
                return Err(StoreError::NotFound {
                    id: id.to_string(),
                    snapshot: self.snapshot_path(id)?,
                    log: log_path,
                })
            }
            Err(error) => return Err(error.into()),
        };
        if replay.lines_read == 0 {
            // A log opened but never written (or only a torn first line): nothing to resume.
            return Err(StoreError::NotFound {
                id: id.to_string(),
                snapshot: self.snapshot_path(id)?,
                log: log_path,
            });
        }
        let init = replay.init.take().unwrap_or_default();
        if let Some(logged) = init.session_id.as_deref().filter(|logged| *logged != id) {
            diagnostics.push(format!(
                "the log's session_init names session {logged:?}, not {id:?}; it was copied or renamed by hand"
            ));
        }
        let cwd = match (init.cwd, &self.project_dir) {
            (Some(cwd), _) => cwd,
            (None, Some(project)) => {
                diagnostics.push(
                    "the log has no session_init; the project directory is used as cwd".into(),
                );
                project.to_string_lossy().into_owned()
            }
            (None, None) => {
                diagnostics.push("the log has no session_init; cwd is unknown".into());
                String::new()
            }
        };
        let now = now_rfc3339();
        let record = SessionRecord {
            version: SESSION_RECORD_VERSION,
            id: id.to_string(),
            name: replay.renamed.take().unwrap_or(init.name),
            cwd,
            created_at: replay.first_ts.take().unwrap_or_else(|| now.clone()),
            updated_at: replay.last_ts.take().unwrap_or(now),
            provider: init.provider,
            model: init.model,
            permission_mode: init.permission_mode,
            parent_id: init.parent_id,
            usage: replay.usage.clone(),
            log_position: Some(replay.position),
            history: std::mem::take(&mut replay.history),
            system_prompt: init.system_prompt,
            tool_schemas: init.tool_schemas,
            unfinished_turn: None,
            extra: Map::new(),
        };
        let mut resumed = Resumed::new(record, ResumeSource::LogReplay { reason }, diagnostics);
        resumed.snapshot_error = snapshot_error;
        resumed.absorb(&mut replay);
        Ok(resumed)
    }

    /// Forks session `id` (as [`resume`](SessionStore::resume) sees it) into a new session with
    /// a new id and `parent_id = id`, and returns the new id. The original's files are not
    /// touched. The fork gets its own log (a `session_init` and a `history_replace` with the
    /// copied history), so it can be rebuilt without its snapshot too.
    pub fn fork(&self, id: &str) -> Result<String, StoreError> {
        self.fork_resumed(id).map(|(new_id, _)| new_id)
    }

    /// [`fork`](SessionStore::fork), also returning the original as [`resume`] read it (what
    /// was found wrong with its files — they are only read, never repaired, by a fork).
    ///
    /// [`resume`]: SessionStore::resume
    pub fn fork_resumed(&self, id: &str) -> Result<(String, Resumed), StoreError> {
        let source = self.resume(id)?;
        let mut record = source.record.clone();
        let new_id = new_session_id();
        let now = now_rfc3339();
        record.id = new_id.clone();
        record.parent_id = Some(id.to_string());
        record.created_at = now.clone();
        record.updated_at = now;
        record.version = SESSION_RECORD_VERSION;
        let log = self.open_log(&new_id, LogOptions::default())?;
        log.append(&SessionLogEvent::SessionInit {
            session_id: new_id.clone(),
            cwd: record.cwd.clone(),
            provider: record.provider.clone(),
            model: record.model.clone(),
            permission_mode: record.permission_mode.clone(),
            name: record.name.clone(),
            parent_id: record.parent_id.clone(),
            resumed: false,
            system_prompt: record.system_prompt.clone(),
            tool_schemas: record.tool_schemas.clone(),
        })?;
        log.append(&SessionLogEvent::HistoryReplace {
            reason: "fork".into(),
            entries: record.history.clone(),
            usage: Some(record.usage.clone()),
        })?;
        record.log_position = Some(log.position());
        self.save(&record)?;
        Ok((new_id, source))
    }

    /// The write-lock file of `id` (next to its snapshot).
    pub fn lock_path(&self, id: &str) -> Result<PathBuf, StoreError> {
        validate_session_id(id)?;
        Ok(self.sessions_dir.join(format!("{id}.{LOCK_EXTENSION}")))
    }

    /// Locks session `id` for writing (see [`SessionLock`]): [`StoreError::Locked`], naming
    /// the holder, when another writer has it open. Reading, listing and forking need no lock.
    pub fn lock(&self, id: &str) -> Result<SessionLock, StoreError> {
        let path = self.lock_path(id)?;
        create_private_dir(&self.sessions_dir)
            .map_err(|e| StoreError::io("create the session directory", &self.sessions_dir, e))?;
        SessionLock::acquire(&path, id).map_err(|error| match error {
            LockError::Held {
                session_id,
                path,
                holder,
            } => StoreError::Locked {
                id: session_id,
                path,
                holder,
            },
            LockError::Io { op, path, source } => StoreError::Io { op, path, source },
        })
    }

    /// Moves the snapshot of `id` aside, to `{id}.json.damaged-{time}` in the same directory,
    /// and returns where it went (`None`: there is no snapshot). For a writer that rebuilt a
    /// session whose snapshot was unreadable: the damaged file is kept for inspection and no
    /// longer stands in the way. Hold the session's lock.
    pub fn set_snapshot_aside(&self, id: &str) -> Result<Option<PathBuf>, StoreError> {
        let path = self.snapshot_path(id)?;
        let aside = aside_path(&path);
        match fs::rename(&path, &aside) {
            Ok(()) => Ok(Some(aside)),
            Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(error) => Err(StoreError::io(
                "move aside the damaged snapshot",
                &path,
                error,
            )),
        }
    }

    /// Copies the log of `id` as it is to `{id}.jsonl.damaged-{time}` in the same directory and
    /// returns the copy's path: the damaged lines a resume skipped stay readable there whatever
    /// happens to the log later.
    pub fn copy_log_aside(&self, id: &str) -> Result<PathBuf, StoreError> {
        let path = self.log_path(id)?;
        let aside = aside_path(&path);
        fs::copy(&path, &aside).map_err(|e| StoreError::io("copy the damaged log", &path, e))?;
        Ok(aside)
    }

    /// Removes temporary snapshot files left by processes that are no longer running (they
    /// died mid-save). Returns how many were removed.
    pub fn remove_stale_temp_files(&self) -> Result<usize, StoreError> {
        self.remove_temp_files(None)
    }

    fn remove_stale_temp_files_of(&self, id: &str) -> Result<usize, StoreError> {
        self.remove_temp_files(Some(id))
    }

    fn remove_temp_files(&self, only: Option<&str>) -> Result<usize, StoreError> {
        let entries = match fs::read_dir(&self.sessions_dir) {
            Ok(entries) => entries,
            Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(0),
            Err(error) => return Err(StoreError::io("list", &self.sessions_dir, error)),
        };
        let mut removed = 0;
        for entry in entries {
            let entry = entry.map_err(|e| StoreError::io("list", &self.sessions_dir, e))?;
            let name = entry.file_name();
            let Some(temp) = name.to_str().and_then(TempName::parse) else {
                continue;
            };
            if only.is_some_and(|id| id != temp.id) || !writer_is_gone(temp.pid, &entry.path()) {
                continue;
            }
            match fs::remove_file(entry.path()) {
                Ok(()) => removed += 1,
                Err(error) if error.kind() == io::ErrorKind::NotFound => {}
                Err(error) => return Err(StoreError::io("remove", &entry.path(), error)),
            }
        }
        Ok(removed)
    }
}

/// `{path}.damaged-{time}`, with a counter when that name is taken.
fn aside_path(path: &Path) -> PathBuf {
    let now = time::OffsetDateTime::now_utc();
    let format = time::macros::format_description!(
        "[year][month][day]T[hour][minute][second][subsecond digits:3]Z"
    );
    let stamp = now
        .format(&format)
        .unwrap_or_else(|_| now.unix_timestamp().to_string());
    let name = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut aside = path.with_file_name(format!("{name}.damaged-{stamp}"));
    let mut n = 2;
    while aside.exists() {
        aside = path.with_file_name(format!("{name}.damaged-{stamp}-{n}"));
        n += 1;
    }
    aside
}

fn history_entry_id(entry: &HistoryEntry) -> &str {
    match entry {
        HistoryEntry::Chat { id, .. } | HistoryEntry::Event { id, .. } => id,
    }
}

/// A temporary snapshot name: `.{id}.json.{pid}.{random}.tmp`.
struct TempName<'a> {
    id: &'a str,
    pid: u32,
}

impl<'a> TempName<'a> {
    fn parse(name: &'a str) -> Option<Self> {
        let rest = name.strip_prefix('.')?.strip_suffix(".tmp")?;
        let mut parts = rest.rsplitn(3, '.');
        let _random = parts.next()?;
        let pid = parts.next()?.parse().ok()?;
        let file = parts.next()?;
        let id = file.strip_suffix(SNAPSHOT_EXTENSION)?.strip_suffix('.')?;
        validate_session_id(id).ok()?;
        Some(TempName { id, pid })
    }
}

/// True when the process that wrote a temporary file is gone (so the file is garbage).
fn writer_is_gone(pid: u32, path: &Path) -> bool {
    if pid == std::process::id() {
        // Possibly a save in progress on another thread of this process.
        return false;
    }
    #[cfg(unix)]
    {
        let _ = path;
        let Ok(pid) = libc::pid_t::try_from(pid) else {
            return true;
        };
        // SAFETY: kill with signal 0 sends nothing; it only checks whether the process exists.
        let alive = unsafe { libc::kill(pid, 0) } == 0
            || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
        !alive
    }
    #[cfg(not(unix))]
    {
        // No cheap liveness check: treat temp files older than an hour as abandoned.
        fs::metadata(path)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|modified| modified.elapsed().ok())
            .is_some_and(|age| age > std::time::Duration::from_secs(3600))
    }
}

/// Writes `bytes` to `path` atomically: a temporary file in the same directory, `fsync`, rename,
/// `fsync` of the directory.
fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
    let dir = path.parent().unwrap_or_else(|| Path::new("."));
    let file_name = path
        .file_name()
        .and_then(|name| name.to_str())
        .unwrap_or("session.json");
    let temp = dir.join(format!(
        ".{file_name}.{}.{:016x}.tmp",
        std::process::id(),
        rand::random::<u64>()
    ));
    let mut open = OpenOptions::new();
    open.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        open.mode(0o600);
    }
    let written = open.open(&temp).and_then(|mut file| {
        file.write_all(bytes)?;
        file.sync_all()
    });
    let renamed = written.and_then(|()| fs::rename(&temp, path));
    if let Err(error) = renamed {
        let cleanup = match fs::remove_file(&temp) {
            Ok(()) => String::new(),
            Err(e) if e.kind() == io::ErrorKind::NotFound => String::new(),
            Err(e) => format!(
                " (the temporary file {} could not be removed: {e})",
                temp.display()
            ),
        };
        return Err(StoreError::Io {
            op: "write the session snapshot",
            path: path.to_path_buf(),
            source: io::Error::new(
                error.kind(),
                format!("{error}; the previous snapshot is unchanged{cleanup}"),
            ),
        });
    }
    sync_dir(dir).map_err(|e| StoreError::io("sync the session directory", dir, e))
}

/// Makes a rename in `dir` durable.
fn sync_dir(dir: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        File::open(dir)?.sync_all()
    }
    #[cfg(not(unix))]
    {
        // Windows cannot open a directory as a file; NTFS journals the rename.
        let _ = dir;
        Ok(())
    }
}

/// Parses a snapshot, migrating TypeScript SDK files and refusing newer versions.
fn parse_record(path: &Path, bytes: &[u8], id: &str) -> Result<SessionRecord, StoreError> {
    // The header first: cheap for our files (it stops before the history), and it tells the
    // version before the full parse can fail on a newer format.
    let mut slot = HeaderSlot::default();
    let header = {
        let mut deserializer = serde_json::Deserializer::from_slice(bytes);
        HeaderSeed(&mut slot).deserialize(&mut deserializer)
    };
    if let Err(error) = header {
        if !slot.stopped {
            return Err(StoreError::corrupt(path, &error));
        }
    }
    if let Some(found) = slot.version.filter(|v| *v > SESSION_RECORD_VERSION) {
        return Err(StoreError::VersionTooNew {
            path: path.to_path_buf(),
            found,
            supported: SESSION_RECORD_VERSION,
        });
    }
    let record = match serde_json::from_slice::<SessionRecord>(bytes) {
        Ok(mut record) => {
            if record.version == 0 {
                migrate_messages(&mut record);
            }
            record
        }
        Err(error)
            if slot.version.is_none() && error.classify() == serde_json::error::Category::Data =>
        {
            // A TypeScript SDK file: valid JSON in the other message shape.
            let value: Value =
                serde_json::from_slice(bytes).map_err(|e| StoreError::corrupt(path, &e))?;
            migrate_v0(path, value)?
        }
        Err(error) => return Err(StoreError::corrupt(path, &error)),
    };
    if record.id != id {
        return Err(StoreError::IdMismatch {
            path: path.to_path_buf(),
            expected: id.to_string(),
            found: record.id,
        });
    }
    Ok(record)
}

/// Converts a TypeScript SDK record (no `version`) whose history is in the TypeScript message
/// shape.
fn migrate_v0(path: &Path, value: Value) -> Result<SessionRecord, StoreError> {
    let Value::Object(mut map) = value else {
        return Err(StoreError::Corrupt {
            path: path.to_path_buf(),
            line: 1,
            column: 1,
            message: "the file is not a JSON object".into(),
        });
    };
    let history = match map.remove("history") {
        Some(Value::Array(entries)) => entries.into_iter().map(convert_ts_entry).collect(),
        _ => Vec::new(),
    };
    map.insert("history".into(), Value::Array(Vec::new()));
    let mut record: SessionRecord =
        serde_json::from_value(Value::Object(map)).map_err(|error| StoreError::Corrupt {
            path: path.to_path_buf(),
            line: 0,
            column: 0,
            message: format!("not a session record: {error}"),
        })?;
    record.history = history;
    migrate_messages(&mut record);
    Ok(record)
}

/// Builds the history from the TypeScript `messages` array for files that predate `history`
/// (the spec's "Session Data Migration"), and drops `messages` (it duplicates the history and
/// would go stale on the next write).
fn migrate_messages(record: &mut SessionRecord) {
    let messages = record.extra.remove("messages");
    if !record.history.is_empty() {
        return;
    }
    if let Some(Value::Array(messages)) = messages {
        record.history = messages
            .into_iter()
            .map(|message| match ts_message(&message, None, None) {
                Some(message) => chat_entry(message),
                None => unconverted(message),
            })
            .collect();
    }
}

fn convert_ts_entry(entry: Value) -> HistoryEntry {
    if let Ok(entry) = serde_json::from_value::<HistoryEntry>(entry.clone()) {
        return entry;
    }
    let text = |key: &str| entry.get(key).and_then(Value::as_str).map(str::to_string);
    match entry.get("category").and_then(Value::as_str) {
        Some("chat") => {
            let id = text("id");
            let timestamp = text("timestamp");
            match entry
                .get("data")
                .and_then(|data| ts_message(data, id.as_deref(), timestamp.as_deref()))
            {
                Some(message) => chat_entry(message),
                None => unconverted(entry),
            }
        }
        Some(_) => match (text("type"), entry.get("data")) {
            (Some(event_type), data) => HistoryEntry::Event {
                id: text("id").unwrap_or_else(new_id),
                timestamp: text("timestamp").unwrap_or_else(now_rfc3339),
                event_type,
                data: data.cloned().unwrap_or(Value::Null),
            },
            (None, _) => unconverted(entry),
        },
        None => unconverted(entry),
    }
}

fn unconverted(original: Value) -> HistoryEntry {
    HistoryEntry::Event {
        id: new_id(),
        timestamp: now_rfc3339(),
        event_type: UNCONVERTED_ENTRY.into(),
        data: original,
    }
}

/// A TypeScript `TUniversalMessage` (`{role, content: string|null, toolCalls?, toolCallId?,
/// state?, metadata?}`) as a [`Message`].
fn ts_message(value: &Value, entry_id: Option<&str>, entry_ts: Option<&str>) -> Option<Message> {
    let role = match value.get("role")?.as_str()? {
        "user" => Role::User,
        "assistant" => Role::Assistant,
        "system" => Role::System,
        "tool" => Role::Tool,
        _ => return None,
    };
    let content = match value.get("content") {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Null) | None => String::new(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|part| part.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(""),
        Some(_) => return None,
    };
    let mut blocks = Vec::new();
    if role == Role::Tool {
        blocks.push(ContentBlock::ToolResult {
            tool_use_id: value
                .get("toolCallId")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            is_error: content.starts_with("Error:"),
            content,
        });
    } else {
        if !content.is_empty() {
            blocks.push(ContentBlock::text(content));
        }
        for call in value
            .get("toolCalls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let function = call.get("function");
            let arguments = function
                .and_then(|f| f.get("arguments"))
                .and_then(Value::as_str)
                .unwrap_or("{}");
            blocks.push(ContentBlock::ToolUse {
                id: call
                    .get("id")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
                name: function
                    .and_then(|f| f.get("name"))
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
                input: serde_json::from_str(arguments)
                    .unwrap_or_else(|_| Value::String(arguments.to_string())),
            });
        }
    }
    let string = |key: &str| value.get(key).and_then(Value::as_str).map(str::to_string);
    Some(Message {
        id: string("id")
            .or_else(|| entry_id.map(str::to_string))
            .unwrap_or_else(new_id),
        role,
        content: blocks,
        state: if value.get("state").and_then(Value::as_str) == Some("interrupted") {
            MessageState::Interrupted
        } else {
            MessageState::Complete
        },
        timestamp: string("timestamp")
            .or_else(|| entry_ts.map(str::to_string))
            .unwrap_or_else(now_rfc3339),
        usage: None,
        metadata: value
            .get("metadata")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default(),
    })
}

fn chat_entry(message: Message) -> HistoryEntry {
    HistoryEntry::chat(message)
}

/// `updated_at` as a sortable instant (unparsable values sort last).
fn sort_key(updated_at: Option<&str>) -> Option<time::OffsetDateTime> {
    updated_at.and_then(|text| {
        time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339).ok()
    })
}

fn format_system_time(time: std::time::SystemTime) -> String {
    let time = time::OffsetDateTime::from(time);
    let format = time::macros::format_description!(
        "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z"
    );
    time.format(&format)
        .unwrap_or_else(|_| time.unix_timestamp().to_string())
}

/// Counts the bytes read through it.
struct CountingReader<R> {
    inner: R,
    count: u64,
}

impl<R: Read> Read for CountingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let read = self.inner.read(buf)?;
        self.count += read as u64;
        Ok(read)
    }
}

/// The summary fields of a snapshot, filled while parsing its start.
#[derive(Default)]
struct HeaderSlot {
    version: Option<u32>,
    id: Option<String>,
    name: Option<String>,
    cwd: Option<String>,
    created_at: Option<String>,
    updated_at: Option<String>,
    provider: Option<String>,
    model: Option<String>,
    permission_mode: Option<String>,
    parent_id: Option<String>,
    message_count: Option<u64>,
    usage: Option<UsageTotals>,
    /// Parsing stopped on purpose at the first non-summary field.
    stopped: bool,
}

/// The error used to stop parsing once the summary fields are read.
const HEADER_DONE: &str = "robota: session header complete";

struct HeaderSeed<'a>(&'a mut HeaderSlot);

impl<'de> DeserializeSeed<'de> for HeaderSeed<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for HeaderSeed<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a session record object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let slot = self.0;
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "version" => slot.version = Some(map.next_value()?),
                "id" => slot.id = Some(map.next_value()?),
                "name" => slot.name = map.next_value()?,
                "cwd" => slot.cwd = map.next_value()?,
                "createdAt" => slot.created_at = map.next_value()?,
                "updatedAt" => slot.updated_at = map.next_value()?,
                "provider" => slot.provider = map.next_value()?,
                "model" => slot.model = map.next_value()?,
                "permissionMode" => slot.permission_mode = map.next_value()?,
                "parentId" => slot.parent_id = map.next_value()?,
                "messageCount" => slot.message_count = map.next_value()?,
                "usage" => slot.usage = map.next_value()?,
                _ if slot.version.is_some() && !HEADER_KEYS.contains(&key.as_str()) => {
                    // Our writer puts every summary field before the others: stop reading here.
                    slot.stopped = true;
                    return Err(de::Error::custom(HEADER_DONE));
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temp_names_round_trip() {
        let name = format!(".abc-1.json.{}.{:016x}.tmp", 42, 7u64);
        let parsed = TempName::parse(&name);
        assert_eq!(parsed.as_ref().map(|t| (t.id, t.pid)), Some(("abc-1", 42)));
        assert!(TempName::parse("abc.json").is_none());
        assert!(TempName::parse(".x.json.notapid.1.tmp").is_none());
    }

    #[test]
    fn ids() {
        assert!(validate_session_id("abc_DEF-123").is_ok());
        for bad in ["", "../x", "a/b", "a\\b", ".", "..", "a b", "é"] {
            assert!(validate_session_id(bad).is_err(), "{bad}");
        }
        assert!(validate_session_id(&"x".repeat(MAX_SESSION_ID_LEN)).is_ok());
        assert!(validate_session_id(&"x".repeat(MAX_SESSION_ID_LEN + 1)).is_err());
    }

    #[test]
    fn ts_records_migrate() {
        let ts = serde_json::json!({
            "id": "s1", "cwd": "/p", "createdAt": "2026-01-01T00:00:00.000Z", "updatedAt": "2026-01-01T00:00:00.000Z",
            "messages": [
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": null, "toolCalls": [{"id": "c1", "type": "function", "function": {"name": "Read", "arguments": "{\"filePath\":\"a\"}"}}]},
                {"role": "tool", "content": "{\"success\":true}", "toolCallId": "c1"},
                {"role": "assistant", "content": "done", "state": "interrupted"}
            ],
            "goal": {"text": "x"}
        });
        let bytes = serde_json::to_vec(&ts).unwrap_or_default();
        let record = parse_record(Path::new("s1.json"), &bytes, "s1");
        let record = record.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(record.version, 0);
        assert_eq!(record.message_count(), 4);
        let messages: Vec<&Message> = record.messages().collect();
        assert_eq!(messages[0].text(), "hi");
        assert_eq!(
            messages[1]
                .tool_uses()
                .next()
                .map(|(id, name, _)| (id, name)),
            Some(("c1", "Read"))
        );
        assert!(
            matches!(&messages[2].content[0], ContentBlock::ToolResult { tool_use_id, .. } if tool_use_id == "c1")
        );
        assert_eq!(messages[3].state, MessageState::Interrupted);
        assert!(record.extra.contains_key("goal"));
        assert!(!record.extra.contains_key("messages"));
    }
}
