//! Session persistence over any store: the [`SessionStore`] trait (the storage primitives a
//! backend provides — atomic snapshots, an append-only log per session, listing, delete, a
//! writer lease), and what is built on them once for every store: [`SessionRecord`] and its
//! JSON snapshot format, resume (from the snapshot plus the log after it, or from the log alone
//! when the snapshot is missing, corrupt or older than the log), damage reports, migration of
//! TypeScript SDK files, fork and listing.
//!
//! Stores: [`FileSessionStore`] (the default: `.robota/sessions/{id}.json`, the log in
//! `.robota/logs/{id}.jsonl`, the session's own directory `.robota/sessions/{id}/` for spilled
//! tool outputs and background-task output), with the `sqlite` feature, `SqliteSessionStore`
//! (one database file for many sessions), with the `postgres` feature, `PostgresSessionStore`
//! (many projects and workers in one PostgreSQL database), and [`HostSessionStore`] over a host
//! application's own storage (a binding's callbacks).
//!
//! **Snapshot writes are atomic.** A reader (or a process that restarts after a crash) sees the
//! old snapshot or the new one, never a mix; a failed write leaves the old snapshot as it was.
//! (The file store writes a temporary file, `fsync`s it, renames it over the snapshot and
//! `fsync`s the directory.)
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
//! applies the log's tail. A session does that once its history is large (see `persist`): it
//! rewrites the snapshot when the log has grown by as much as the history holds, so a turn's
//! cost does not grow with the history and resume reads at most about twice the snapshot.

use std::fmt;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

pub use super::file_store::{FileSessionStore, IoStats};
pub use super::host_store::{HostSessionStore, HostStoreBackend};
use super::lock::{held_message, LockHolder, SessionLock};
use super::log::{
    read_first_init, replay_into, replay_log_counting, IncompleteTurn, LogAppender, LogEnd,
    LogError, LogOptions, LogPosition, LogReplay, LogSource, SessionLog, SessionLogEvent,
    SkippedLine, TornTail,
};
#[cfg(feature = "postgres")]
pub use super::postgres_store::{PostgresConfig, PostgresSessionStore};
use super::recovery::{repair_tool_pairs, UnfinishedTurn};
#[cfg(feature = "sqlite")]
pub use super::sqlite_store::SqliteSessionStore;
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
    /// This writer's lease was taken over by another writer: the write was refused (see
    /// [`LeaseLost`]).
    #[error(transparent)]
    LeaseLost(Box<LeaseLost>),
}

/// A write refused because the writer's lease of the session is no longer its own: another
/// writer took it over (this one was thought gone — its database connection was closed, its
/// process looked dead). Stores that fence writes (SQLite, PostgreSQL) check, in the same
/// transaction as each log append and snapshot write, that the lease the writer took is still
/// the session's lease; so a writer that lost it never interleaves lines with the new holder.
/// Log appends report it as an [`io::Error`] carrying this value (see [`LeaseLost::of_io`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("session {id:?} was taken over by another writer{}: this writer's lease is gone, so its write to {} was refused (nothing was written; the session continues in the other writer)", holder.as_ref().map(|h| format!(" ({h})")).unwrap_or_default(), location.display())]
pub struct LeaseLost {
    /// The session.
    pub id: String,
    /// Where the refused write would have gone.
    pub location: PathBuf,
    /// The writer that holds the lease now, when known.
    pub holder: Option<LockHolder>,
}

impl LeaseLost {
    /// The [`LeaseLost`] an I/O error (from a [`LogAppender`]) carries, if it is one.
    pub fn of_io(error: &io::Error) -> Option<&LeaseLost> {
        error.get_ref()?.downcast_ref::<LeaseLost>()
    }

    /// As an I/O error, for [`LogAppender::append`].
    pub fn into_io(self) -> io::Error {
        io::Error::other(self)
    }
}

impl StoreError {
    pub(crate) fn io(op: &'static str, path: &Path, source: io::Error) -> Self {
        StoreError::Io {
            op,
            path: path.to_path_buf(),
            source,
        }
    }

    pub(crate) fn corrupt(path: &Path, error: &serde_json::Error) -> Self {
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

/// A snapshot in a store's listing: its id and its summary fields, or why they could not be
/// read (see [`SessionStore::list_snapshots`]).
#[derive(Debug)]
pub struct ListedSnapshot {
    /// The id the store keeps the snapshot under.
    pub id: String,
    /// Its summary fields, read without the history.
    pub summary: Result<SessionSummary, StoreError>,
}

/// A log in a store's listing (see [`SessionStore::list_logs`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedLog {
    /// The session id.
    pub id: String,
    /// When the log was last written, RFC 3339 UTC, when the store knows.
    pub updated_at: Option<String>,
}

/// A held writer lease of one session (see [`SessionStore::lock`]): one writer per session,
/// released by [`release`](Self::release) or when dropped.
pub trait SessionLease: Send + fmt::Debug {
    /// The previous holder whose lease this one took over: a writer that ended without
    /// releasing it (killed or crashed).
    fn previous_holder(&self) -> Option<&LockHolder>;
    /// Releases the lease (also done on drop); calling it twice does nothing.
    fn release(&mut self);
}

impl SessionLease for SessionLock {
    fn previous_holder(&self) -> Option<&LockHolder> {
        SessionLock::previous_holder(self)
    }

    fn release(&mut self) {
        SessionLock::release(self);
    }
}

/// Where sessions are saved: the storage primitives a backend provides, and everything built
/// on them (resume, damage reports, TypeScript migration, fork, listing), written once here.
///
/// **Primitives** (what a store implements; ids are validated before they are called):
///
/// - Snapshots: [`put_snapshot`](Self::put_snapshot) replaces one atomically (a reader sees
///   the old or the new one, never a mix), [`get_snapshot`](Self::get_snapshot) returns its
///   bytes, [`list_snapshots`](Self::list_snapshots) the summary fields of every snapshot
///   without their history.
/// - The log, append-only per session: [`open_log_appender`](Self::open_log_appender)
///   appends batches of complete JSONL lines; [`read_log`](Self::read_log) reads from a byte
///   position and [`log_len`](Self::log_len) says where it ends. Positions are byte offsets
///   into the log's bytes as appended, and a snapshot records the one it was taken at
///   ([`SessionRecord::log_position`]), so resume = snapshot + the log after it.
///   [`list_logs`](Self::list_logs) names the sessions that have a log.
/// - [`delete_session`](Self::delete_session) removes everything of a session.
/// - [`lock`](Self::lock): one writer per session; a second writer gets
///   [`StoreError::Locked`], and a lease whose holder process is gone is taken over.
///
/// Fork needs no primitive of its own: it is a resume of the original and a new session
/// written with the primitives above.
///
/// **Provided** (not meant to be replaced): [`save`](Self::save), [`load`](Self::load),
/// [`resume`](Self::resume), [`rebuild_from_log`](Self::rebuild_from_log),
/// [`fork`](Self::fork), [`list`](Self::list), [`delete`](Self::delete),
/// [`open_log`](Self::open_log).
///
/// The trait is synchronous and its methods are called from blocking contexts (a session
/// saves from its own threads); a store over an async driver runs it on its own runtime.
pub trait SessionStore: Send + Sync + fmt::Debug {
    /// Replaces the snapshot of `summary.id` with `bytes` (the JSON record) atomically.
    /// `summary` holds the record's summary fields, for [`list_snapshots`](Self::list_snapshots).
    fn put_snapshot(&self, summary: &SessionSummary, bytes: &[u8]) -> Result<(), StoreError>;

    /// The bytes of the snapshot of `id`, `Ok(None)` when there is none.
    fn get_snapshot(&self, id: &str) -> Result<Option<Vec<u8>>, StoreError>;

    /// The summary fields of every snapshot, read without the history (order does not
    /// matter). A snapshot whose summary cannot be read is listed with the error.
    fn list_snapshots(&self) -> Result<Vec<ListedSnapshot>, StoreError>;

    /// Opens the log of `id` for appending (created on first append or here), with where it
    /// ends now.
    fn open_log_appender(&self, id: &str) -> Result<(Box<dyn LogAppender>, LogEnd), StoreError>;

    /// The log of `id` from byte `from` to its end; `Ok(None)` when the session has no log.
    fn read_log(&self, id: &str, from: u64) -> Result<Option<Box<dyn Read + '_>>, StoreError>;

    /// The length in bytes of the log of `id`; `Ok(None)` when the session has no log.
    fn log_len(&self, id: &str) -> Result<Option<u64>, StoreError>;

    /// The sessions that have a log.
    fn list_logs(&self) -> Result<Vec<ListedLog>, StoreError>;

    /// Removes everything of session `id` (snapshot, log, its own files). Returns false when
    /// there was nothing to remove.
    fn delete_session(&self, id: &str) -> Result<bool, StoreError>;

    /// Takes the writer lease of `id` without waiting: [`StoreError::Locked`], naming the
    /// holder, when another writer (in this or another process) has it. A lease whose holder
    /// process is gone is taken over ([`SessionLease::previous_holder`]). Reading, listing and
    /// forking need no lease. Stores that fence writes (SQLite, PostgreSQL) refuse the log
    /// appends and snapshot writes of a holder whose lease was taken over since
    /// ([`StoreError::LeaseLost`]).
    fn lock(&self, id: &str) -> Result<Box<dyn SessionLease>, StoreError>;

    /// Where the snapshot of `id` is, for messages and reports.
    fn snapshot_location(&self, id: &str) -> PathBuf;

    /// Where the log of `id` is, for messages and reports.
    fn log_location(&self, id: &str) -> PathBuf;

    /// The file holding the log of `id`, when the store keeps it in one (hooks receive it as
    /// `transcript_path`).
    fn log_file(&self, _id: &str) -> Option<PathBuf> {
        None
    }

    /// The directory for the session's own files (spilled tool outputs, background-task
    /// output), deleted with the session; `None`: a private temporary directory is used.
    fn session_dir(&self, _id: &str) -> Option<PathBuf> {
        None
    }

    /// The project the store belongs to (the working directory of a session whose log does
    /// not say).
    fn project_dir(&self) -> Option<&Path> {
        None
    }

    /// Keeps the damaged snapshot of `id` aside (a writer rebuilt the session from its log and
    /// is about to save a good one) and says where it went; `Ok(None)`: nothing was kept.
    fn set_snapshot_aside(&self, _id: &str) -> Result<Option<PathBuf>, StoreError> {
        Ok(None)
    }

    /// Keeps a copy of the log of `id` as it is (a resume skipped unreadable lines of it) and
    /// says where; `Ok(None)`: no copy was kept.
    fn copy_log_aside(&self, _id: &str) -> Result<Option<PathBuf>, StoreError> {
        Ok(None)
    }

    /// Removes what a writer of `id` that stopped mid-write left behind (temporary files);
    /// returns how many were removed. Called by resume.
    fn remove_leftovers(&self, _id: &str) -> Result<usize, StoreError> {
        Ok(0)
    }

    /// Saves the snapshot of `record` (provided). `updated_at` is written as it is; call
    /// [`SessionRecord::touch`] first to mark the change. On error the previous snapshot is
    /// unchanged.
    fn save(&self, record: &SessionRecord) -> Result<(), StoreError> {
        validate_session_id(&record.id)?;
        let bytes = serde_json::to_vec(record).map_err(|error| StoreError::Encode {
            path: self.snapshot_location(&record.id),
            message: error.to_string(),
        })?;
        self.put_snapshot(&SessionSummary::of_record(record), &bytes)
    }

    /// Loads the snapshot of `id` (provided): `Ok(None)` when there is none, an error when it
    /// cannot be read, is corrupt or is from a newer version (never a silent `None`). Files
    /// written by the TypeScript SDK are migrated.
    fn load(&self, id: &str) -> Result<Option<SessionRecord>, StoreError> {
        validate_session_id(id)?;
        match self.get_snapshot(id)? {
            Some(bytes) => parse_record(&self.snapshot_location(id), &bytes, id).map(Some),
            None => Ok(None),
        }
    }

    /// Deletes session `id` (provided; see [`delete_session`](Self::delete_session)), so
    /// resume cannot bring it back and nothing of it is left.
    fn delete(&self, id: &str) -> Result<bool, StoreError> {
        validate_session_id(id)?;
        self.delete_session(id)
    }

    /// Opens the log of `id` for appending (provided; see [`SessionLog`]).
    fn open_log(&self, id: &str, options: LogOptions) -> Result<SessionLog, StoreError> {
        validate_session_id(id)?;
        let (appender, end) = self.open_log_appender(id)?;
        Ok(SessionLog::with_appender(
            appender,
            end,
            self.log_location(id),
            options,
        ))
    }

    /// Lists the sessions, newest `updated_at` first (provided): the summary fields of each
    /// snapshot and, for sessions without a usable snapshot, the first line of their log.
    /// What could not be read is reported in [`SessionListing::problems`].
    fn list(&self) -> Result<SessionListing, StoreError> {
        list_sessions(self)
    }

    /// Resumes session `id` (provided): the snapshot plus any log lines written after it, or —
    /// when the snapshot is missing or unreadable — the log alone. No turn that finished
    /// (`turn_end` in the log, or in the snapshot) is lost; a turn cut off by a crash is left
    /// out and returned in [`Resumed::incomplete_turn`].
    fn resume(&self, id: &str) -> Result<Resumed, StoreError> {
        resume_session(self, id)
    }

    /// Rebuilds session `id` from its log alone, ignoring the snapshot (provided; what
    /// [`resume`](Self::resume) does when the snapshot is unusable).
    fn rebuild_from_log(&self, id: &str) -> Result<Resumed, StoreError> {
        validate_session_id(id)?;
        resume_from_log(
            self,
            id,
            "rebuilt from the log on request".into(),
            None,
            Vec::new(),
        )
    }

    /// Forks session `id` (as [`resume`](Self::resume) sees it) into a new session with a new
    /// id and `parent_id = id`, and returns the new id (provided). The original is not
    /// touched. The fork gets its own log (a `session_init` and a `history_replace` with the
    /// copied history), so it can be rebuilt without its snapshot too.
    fn fork(&self, id: &str) -> Result<String, StoreError> {
        self.fork_resumed(id).map(|(new_id, _)| new_id)
    }

    /// [`fork`](Self::fork), also returning the original as [`resume`](Self::resume) read it
    /// (what was found wrong with it — a fork only reads it, never repairs it).
    fn fork_resumed(&self, id: &str) -> Result<(String, Resumed), StoreError> {
        fork_session(self, id)
    }
}

impl SessionSummary {
    /// The summary fields of `record`, as its snapshot lists them.
    pub fn of_record(record: &SessionRecord) -> Self {
        SessionSummary {
            id: record.id.clone(),
            name: record.name.clone(),
            cwd: Some(record.cwd.clone()),
            created_at: Some(record.created_at.clone()),
            updated_at: Some(record.updated_at.clone()),
            provider: record.provider.clone(),
            model: record.model.clone(),
            permission_mode: record.permission_mode.clone(),
            parent_id: record.parent_id.clone(),
            message_count: Some(record.message_count() as u64),
            usage: Some(record.usage.clone()),
            has_snapshot: true,
            version: SESSION_RECORD_VERSION,
        }
    }
}

/// A store's log of one session, read through [`SessionStore::read_log`].
struct StoreLogSource<'a, S: SessionStore + ?Sized> {
    store: &'a S,
    id: &'a str,
    location: PathBuf,
}

impl<'a, S: SessionStore + ?Sized> StoreLogSource<'a, S> {
    fn new(store: &'a S, id: &'a str) -> Self {
        StoreLogSource {
            store,
            id,
            location: store.log_location(id),
        }
    }

    fn not_found(&self) -> LogError {
        LogError::Io {
            op: "open",
            path: self.location.clone(),
            source: Arc::new(io::Error::new(
                io::ErrorKind::NotFound,
                "the session has no log",
            )),
        }
    }

    fn store_error(&self, error: StoreError) -> LogError {
        match error {
            StoreError::Log(error) => error,
            StoreError::Io { op, source, .. } => LogError::Io {
                op,
                path: self.location.clone(),
                source: Arc::new(source),
            },
            other => LogError::Io {
                op: "read",
                path: self.location.clone(),
                source: Arc::new(io::Error::other(other.to_string())),
            },
        }
    }
}

impl<S: SessionStore + ?Sized> LogSource for StoreLogSource<'_, S> {
    fn location(&self) -> &Path {
        &self.location
    }

    fn byte_len(&self) -> Result<u64, LogError> {
        match self.store.log_len(self.id) {
            Ok(Some(len)) => Ok(len),
            Ok(None) => Err(self.not_found()),
            Err(error) => Err(self.store_error(error)),
        }
    }

    fn read_from(&self, offset: u64) -> Result<Box<dyn Read + '_>, LogError> {
        match self.store.read_log(self.id, offset) {
            Ok(Some(reader)) => Ok(reader),
            Ok(None) => Err(self.not_found()),
            Err(error) => Err(self.store_error(error)),
        }
    }
}

fn not_found<S: SessionStore + ?Sized>(store: &S, id: &str) -> StoreError {
    StoreError::NotFound {
        id: id.to_string(),
        snapshot: store.snapshot_location(id),
        log: store.log_location(id),
    }
}

fn list_sessions<S: SessionStore + ?Sized>(store: &S) -> Result<SessionListing, StoreError> {
    let mut listing = SessionListing::default();
    let logs: std::collections::HashMap<String, Option<String>> = store
        .list_logs()?
        .into_iter()
        .filter(|log| validate_session_id(&log.id).is_ok())
        .map(|log| (log.id, log.updated_at))
        .collect();
    let mut seen = std::collections::HashSet::new();
    for ListedSnapshot { id, summary } in store.list_snapshots()? {
        if validate_session_id(&id).is_err() {
            continue;
        }
        let summary = summary.and_then(|summary| match summary.version {
            found if found > SESSION_RECORD_VERSION => Err(StoreError::VersionTooNew {
                path: store.snapshot_location(&id),
                found,
                supported: SESSION_RECORD_VERSION,
            }),
            _ => Ok(summary),
        });
        match summary {
            Ok(summary) => {
                if summary.id != id {
                    listing.problems.push(StoreError::IdMismatch {
                        path: store.snapshot_location(&id),
                        expected: id,
                        found: summary.id,
                    });
                    continue;
                }
                seen.insert(id);
                listing.sessions.push(summary);
            }
            Err(error) => {
                // Resume rebuilds it from its log: list it from there (so `--continue` finds
                // it) and say what is wrong with the snapshot.
                if let Some(updated_at) = logs.get(&id) {
                    if let Ok(Some(summary)) = log_summary(store, &id, updated_at.clone()) {
                        listing.sessions.push(summary);
                    }
                }
                seen.insert(id);
                listing.problems.push(error);
            }
        }
    }
    for (id, updated_at) in logs {
        if seen.contains(&id) {
            continue;
        }
        match log_summary(store, &id, updated_at) {
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

/// A session listed from the first line of its log (no usable snapshot).
fn log_summary<S: SessionStore + ?Sized>(
    store: &S,
    id: &str,
    updated_at: Option<String>,
) -> Result<Option<SessionSummary>, StoreError> {
    let source = StoreLogSource::new(store, id);
    let Some((init, ts)) = read_first_init(&source, 4 * 1024 * 1024, &mut 0)? else {
        return Ok(None);
    };
    Ok(Some(SessionSummary {
        id: id.to_string(),
        name: init.name,
        cwd: init.cwd,
        created_at: ts,
        updated_at,
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

fn resume_session<S: SessionStore + ?Sized>(store: &S, id: &str) -> Result<Resumed, StoreError> {
    validate_session_id(id)?;
    let mut diagnostics = Vec::new();
    match store.remove_leftovers(id) {
        Ok(0) => {}
        Ok(removed) => diagnostics.push(format!(
            "removed {removed} temporary snapshot file(s) left by a process that stopped while saving"
        )),
        Err(error) => diagnostics.push(format!("could not clean up temporary files: {error}")),
    }
    let log_exists = matches!(store.log_len(id), Ok(Some(_)));
    let (loaded, empty) = match store.get_snapshot(id) {
        Ok(Some(bytes)) => (
            parse_record(&store.snapshot_location(id), &bytes, id).map(Some),
            bytes.is_empty(),
        ),
        Ok(None) => (Ok(None), false),
        Err(error) => (Err(error), false),
    };
    let record = match loaded {
        Ok(Some(record)) => record,
        Ok(None) if log_exists => {
            let reason = format!("no snapshot at {}", store.snapshot_location(id).display());
            return resume_from_log(store, id, reason, None, diagnostics);
        }
        Ok(None) => return Err(not_found(store, id)),
        Err(error @ (StoreError::Corrupt { .. } | StoreError::Io { .. })) if log_exists => {
            let problem = match &error {
                StoreError::Corrupt { .. } if empty => "it is empty".to_string(),
                StoreError::Corrupt { message, .. } => format!("it is corrupt: {message}"),
                StoreError::Io { op, source, .. } => format!("cannot {op} it: {source}"),
                other => other.to_string(),
            };
            let reason = error.to_string();
            return match resume_from_log(store, id, reason, Some(problem), diagnostics) {
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
    let source = StoreLogSource::new(store, id);
    let replay = replay_into(
        &source,
        Some((record.usage.clone(), position)),
        &mut history,
        &mut 0,
    );
    let mut replay = match replay {
        Ok(replay) => replay,
        Err(error) => {
            // The history may hold part of the log's turns: start again from the snapshot.
            diagnostics.push(format!(
                "the log could not be read, so only the snapshot is used: {error}"
            ));
            let record = store.load(id)?.ok_or_else(|| not_found(store, id))?;
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

fn resume_from_log<S: SessionStore + ?Sized>(
    store: &S,
    id: &str,
    reason: String,
    snapshot_error: Option<String>,
    mut diagnostics: Vec<String>,
) -> Result<Resumed, StoreError> {
    let source = StoreLogSource::new(store, id);
    let mut replay = match replay_log_counting(&source, None, &mut 0) {
        Ok(replay) => replay,
        Err(LogError::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound => {
            return Err(not_found(store, id))
        }
        Err(error) => return Err(error.into()),
    };
    if replay.lines_read == 0 {
        // A log opened but never written (or only a torn first line): nothing to resume.
        return Err(not_found(store, id));
    }
    let init = replay.init.take().unwrap_or_default();
    if let Some(logged) = init.session_id.as_deref().filter(|logged| *logged != id) {
        diagnostics.push(format!(
            "the log's session_init names session {logged:?}, not {id:?}; it was copied or renamed by hand"
        ));
    }
    let cwd = match (init.cwd, store.project_dir()) {
        (Some(cwd), _) => cwd,
        (None, Some(project)) => {
            diagnostics
                .push("the log has no session_init; the project directory is used as cwd".into());
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

fn fork_session<S: SessionStore + ?Sized>(
    store: &S,
    id: &str,
) -> Result<(String, Resumed), StoreError> {
    let source = store.resume(id)?;
    let mut record = source.record.clone();
    let new_id = new_session_id();
    let now = now_rfc3339();
    record.id = new_id.clone();
    record.parent_id = Some(id.to_string());
    record.created_at = now.clone();
    record.updated_at = now;
    record.version = SESSION_RECORD_VERSION;
    let log = store.open_log(&new_id, LogOptions::default())?;
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
    log.flush()?;
    record.log_position = Some(log.position());
    store.save(&record)?;
    Ok((new_id, source))
}

fn history_entry_id(entry: &HistoryEntry) -> &str {
    match entry {
        HistoryEntry::Chat { id, .. } | HistoryEntry::Event { id, .. } => id,
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
                Some(message) => HistoryEntry::chat(message),
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
                Some(message) => HistoryEntry::chat(message),
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

/// `updated_at` as a sortable instant (unparsable values sort last).
fn sort_key(updated_at: Option<&str>) -> Option<time::OffsetDateTime> {
    updated_at.and_then(|text| {
        time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339).ok()
    })
}

/// The summary fields of a snapshot, filled while parsing its start.
#[derive(Default)]
pub(crate) struct HeaderSlot {
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
    pub(crate) stopped: bool,
}

impl HeaderSlot {
    /// The summary read from the snapshot at `path` (named in errors).
    pub(crate) fn into_summary(self, path: &Path) -> Result<SessionSummary, StoreError> {
        let Some(id) = self.id else {
            return Err(StoreError::Corrupt {
                path: path.to_path_buf(),
                line: 1,
                column: 1,
                message: "missing field `id`".into(),
            });
        };
        Ok(SessionSummary {
            id,
            name: self.name,
            cwd: self.cwd,
            created_at: self.created_at,
            updated_at: self.updated_at,
            provider: self.provider,
            model: self.model,
            permission_mode: self.permission_mode,
            parent_id: self.parent_id,
            message_count: self.message_count,
            usage: self.usage,
            has_snapshot: true,
            version: self.version.unwrap_or(0),
        })
    }
}

/// The error used to stop parsing once the summary fields are read.
const HEADER_DONE: &str = "robota: session header complete";

pub(crate) struct HeaderSeed<'a>(pub(crate) &'a mut HeaderSlot);

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
