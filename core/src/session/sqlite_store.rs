//! The SQLite store (feature `sqlite`): every session of a project or a user in one database
//! file, in WAL mode, so any process that opens the file can list, resume and continue any
//! session in it.
//!
//! Tables: `snapshots` (the summary fields as columns — what listing reads — and the JSON
//! record), `logs` (each log's length and last write), `log_chunks` (the log's bytes, one row
//! per batch of lines the session hands over at its flush points, keyed by the byte offset the
//! batch starts at, so a position recorded in a snapshot addresses the same bytes as in a log
//! file), `leases` (the writer of each session) and `damaged` (copies kept by recovery).
//!
//! **One writer per session across processes.** A lease row holds its holder (pid, host,
//! process start, since when) and a random token; it is taken inside a `BEGIN IMMEDIATE`
//! transaction, so two processes cannot both take it. A lease whose holder process is gone
//! (checked with [`LockHolder::is_alive`]: same host, no such process, or a reused pid) is taken
//! over and reported; a holder on another host counts as alive (unknown means held). Release
//! deletes the row only while it still carries the holder's token.
//!
//! **Fenced writes.** The holder's log appends and snapshot writes check, inside their
//! `BEGIN IMMEDIATE` transaction, that the lease row still carries its token: a writer whose
//! lease was taken over (it was thought dead) gets [`StoreError::LeaseLost`] instead of
//! interleaving lines with the new holder.
//!
//! Every write is one transaction (an appended batch, a snapshot), committed with
//! `synchronous=FULL`: a crash of the process loses at most the lines a session had not yet
//! handed over (the turn in progress), never part of a batch or of a snapshot.

use std::collections::HashMap;
use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};

use super::lock::LockHolder;
use super::log::{create_private_dir, LogAppender, LogEnd, PagedChunkReader};
use super::store::{
    validate_session_id, LeaseLost, ListedLog, ListedSnapshot, SessionLease, SessionStore,
    SessionSummary, StoreError,
};
use super::usage::UsageTotals;
use crate::message::now_rfc3339;

/// The schema this build creates and reads (`PRAGMA user_version`).
const SCHEMA_VERSION: i64 = 1;

/// How long a statement waits for another process's transaction before failing.
const BUSY_TIMEOUT: Duration = Duration::from_secs(15);

/// Log chunks fetched per query while reading a log.
const CHUNKS_PER_PAGE: i64 = 32;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS snapshots (
    id TEXT PRIMARY KEY,
    version INTEGER NOT NULL,
    name TEXT,
    cwd TEXT,
    created_at TEXT,
    updated_at TEXT,
    provider TEXT,
    model TEXT,
    permission_mode TEXT,
    parent_id TEXT,
    message_count INTEGER,
    usage TEXT,
    body BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS logs (
    id TEXT PRIMARY KEY,
    length INTEGER NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS log_chunks (
    id TEXT NOT NULL,
    start INTEGER NOT NULL,
    bytes BLOB NOT NULL,
    PRIMARY KEY (id, start)
);
CREATE TABLE IF NOT EXISTS leases (
    id TEXT PRIMARY KEY,
    holder TEXT NOT NULL,
    token TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS damaged (
    name TEXT PRIMARY KEY,
    id TEXT NOT NULL,
    kind TEXT NOT NULL,
    bytes BLOB NOT NULL
);
";

/// Sessions in one SQLite database file (see the module documentation). Cheap to clone
/// (clones share the connection).
#[derive(Clone)]
pub struct SqliteSessionStore {
    path: PathBuf,
    connection: Arc<Mutex<Connection>>,
    /// The token of each lease this store holds, by session id (what its writes are fenced by).
    fences: Arc<Mutex<HashMap<String, String>>>,
}

impl std::fmt::Debug for SqliteSessionStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteSessionStore")
            .field("path", &self.path)
            .finish()
    }
}

/// A database error as a store error naming the database file.
fn db_error(op: &'static str, path: &Path, error: rusqlite::Error) -> StoreError {
    StoreError::Io {
        op,
        path: path.to_path_buf(),
        source: io::Error::other(error),
    }
}

impl SqliteSessionStore {
    /// Opens (creating it, mode 0600, and its directory, mode 0700, if needed) the database at
    /// `path`, switches it to WAL mode and creates the tables on first use. A database written
    /// by a newer version of the schema is refused.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        let path = path.as_ref().to_path_buf();
        if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
            create_private_dir(dir)
                .map_err(|e| StoreError::io("create the directory of", &path, e))?;
        }
        create_private_file(&path)
            .map_err(|e| StoreError::io("create the session database", &path, e))?;
        let connection =
            Connection::open(&path).map_err(|e| db_error("open the session database", &path, e))?;
        let setup = |connection: &Connection| -> rusqlite::Result<i64> {
            connection.busy_timeout(BUSY_TIMEOUT)?;
            connection.pragma_update_and_check(None, "journal_mode", "WAL", |row| {
                row.get::<_, String>(0)
            })?;
            connection.pragma_update(None, "synchronous", "FULL")?;
            connection.query_row("PRAGMA user_version", [], |row| row.get(0))
        };
        let version =
            setup(&connection).map_err(|e| db_error("set up the session database", &path, e))?;
        if version > SCHEMA_VERSION {
            return Err(StoreError::Io {
                op: "open the session database",
                path,
                source: io::Error::other(format!(
                    "its schema version {version} is newer than the {SCHEMA_VERSION} this version of robota reads; upgrade robota to open it"
                )),
            });
        }
        if version < SCHEMA_VERSION {
            connection
                .execute_batch(&format!(
                    "BEGIN IMMEDIATE; {SCHEMA} PRAGMA user_version = {SCHEMA_VERSION}; COMMIT;"
                ))
                .map_err(|e| db_error("create the tables of the session database", &path, e))?;
        }
        Ok(SqliteSessionStore {
            path,
            connection: Arc::new(Mutex::new(connection)),
            fences: Arc::default(),
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn connection(&self) -> MutexGuard<'_, Connection> {
        lock_connection(&self.connection)
    }

    fn location(&self, what: &str) -> PathBuf {
        PathBuf::from(format!("{}#{what}", self.path.display()))
    }

    fn error(&self, op: &'static str) -> impl FnOnce(rusqlite::Error) -> StoreError + '_ {
        move |error| db_error(op, &self.path, error)
    }

    /// Keeps `bytes` in the `damaged` table under a fresh name and returns its location.
    fn keep_damaged(&self, id: &str, kind: &str, bytes: &[u8]) -> Result<PathBuf, StoreError> {
        let stamp = now_rfc3339();
        let name = format!("{id}.{kind}.damaged-{stamp}-{:08x}", rand::random::<u32>());
        self.connection()
            .execute(
                "INSERT INTO damaged (name, id, kind, bytes) VALUES (?1, ?2, ?3, ?4)",
                params![name, id, kind, bytes],
            )
            .map_err(self.error("keep a copy of damaged data in"))?;
        Ok(self.location(&format!("damaged/{name}")))
    }
}

fn lock_connection(connection: &Mutex<Connection>) -> MutexGuard<'_, Connection> {
    connection.lock().unwrap_or_else(PoisonError::into_inner)
}

fn fence_of(fences: &Mutex<HashMap<String, String>>, id: &str) -> Option<String> {
    fences
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get(id)
        .cloned()
}

/// A write step: the database's error, or a fenced write refused.
enum Failure {
    Db(rusqlite::Error),
    Lost(LeaseLost),
}

impl From<rusqlite::Error> for Failure {
    fn from(error: rusqlite::Error) -> Self {
        Failure::Db(error)
    }
}

/// Fails with [`Failure::Lost`] unless the lease row of `id` still carries `token` (inside the
/// writer's `BEGIN IMMEDIATE` transaction, so no takeover can come between).
fn check_fence(
    transaction: &rusqlite::Transaction<'_>,
    id: &str,
    token: &str,
    location: PathBuf,
) -> Result<(), Failure> {
    let row = transaction
        .query_row(
            "SELECT token, holder FROM leases WHERE id = ?1",
            params![id],
            |row| Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?)),
        )
        .optional()?;
    match row {
        Some((current, _)) if current == token => Ok(()),
        row => Err(Failure::Lost(LeaseLost {
            id: id.to_string(),
            location,
            holder: row.and_then(|(_, holder)| serde_json::from_str(&holder).ok()),
        })),
    }
}

fn create_private_file(path: &Path) -> io::Result<()> {
    let mut open = fs::OpenOptions::new();
    open.write(true).create(true).truncate(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        open.mode(0o600);
    }
    open.open(path).map(drop)
}

fn to_i64(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

fn to_u64(value: i64) -> u64 {
    u64::try_from(value).unwrap_or(0)
}

impl SessionStore for SqliteSessionStore {
    fn put_snapshot(&self, summary: &SessionSummary, bytes: &[u8]) -> Result<(), StoreError> {
        validate_session_id(&summary.id)?;
        let usage = summary
            .usage
            .as_ref()
            .and_then(|usage| serde_json::to_string(usage).ok());
        let fence = fence_of(&self.fences, &summary.id);
        let mut connection = self.connection();
        let write = |connection: &mut Connection| -> Result<(), Failure> {
            let transaction =
                connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
            if let Some(token) = &fence {
                check_fence(
                    &transaction,
                    &summary.id,
                    token,
                    self.snapshot_location(&summary.id),
                )?;
            }
            transaction.execute(
                "INSERT INTO snapshots (id, version, name, cwd, created_at, updated_at, provider, \
                 model, permission_mode, parent_id, message_count, usage, body) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13) \
                 ON CONFLICT(id) DO UPDATE SET version = excluded.version, name = excluded.name, \
                 cwd = excluded.cwd, created_at = excluded.created_at, \
                 updated_at = excluded.updated_at, provider = excluded.provider, \
                 model = excluded.model, permission_mode = excluded.permission_mode, \
                 parent_id = excluded.parent_id, message_count = excluded.message_count, \
                 usage = excluded.usage, body = excluded.body",
                params![
                    summary.id,
                    summary.version,
                    summary.name,
                    summary.cwd,
                    summary.created_at,
                    summary.updated_at,
                    summary.provider,
                    summary.model,
                    summary.permission_mode,
                    summary.parent_id,
                    summary.message_count.map(to_i64),
                    usage,
                    bytes,
                ],
            )?;
            transaction.commit()?;
            Ok(())
        };
        write(&mut connection).map_err(|failure| match failure {
            Failure::Db(error) => db_error("write the session snapshot to", &self.path, error),
            Failure::Lost(lost) => StoreError::LeaseLost(Box::new(lost)),
        })
    }

    fn get_snapshot(&self, id: &str) -> Result<Option<Vec<u8>>, StoreError> {
        validate_session_id(id)?;
        self.connection()
            .query_row(
                "SELECT body FROM snapshots WHERE id = ?1",
                params![id],
                |row| row.get::<_, Vec<u8>>(0),
            )
            .optional()
            .map_err(self.error("read the session snapshot from"))
    }

    fn list_snapshots(&self) -> Result<Vec<ListedSnapshot>, StoreError> {
        let connection = self.connection();
        let mut statement = connection
            .prepare(
                "SELECT id, version, name, cwd, created_at, updated_at, provider, model, \
                 permission_mode, parent_id, message_count, usage FROM snapshots",
            )
            .map_err(self.error("list the sessions in"))?;
        let rows = statement
            .query_map([], |row| {
                Ok((
                    SessionSummary {
                        id: row.get(0)?,
                        version: row.get(1)?,
                        name: row.get(2)?,
                        cwd: row.get(3)?,
                        created_at: row.get(4)?,
                        updated_at: row.get(5)?,
                        provider: row.get(6)?,
                        model: row.get(7)?,
                        permission_mode: row.get(8)?,
                        parent_id: row.get(9)?,
                        message_count: row.get::<_, Option<i64>>(10)?.map(to_u64),
                        usage: None,
                        has_snapshot: true,
                    },
                    row.get::<_, Option<String>>(11)?,
                ))
            })
            .map_err(self.error("list the sessions in"))?;
        let mut listed = Vec::new();
        for row in rows {
            let (mut summary, usage) = row.map_err(self.error("list the sessions in"))?;
            let id = summary.id.clone();
            let usage = usage
                .map(|text| serde_json::from_str::<UsageTotals>(&text))
                .transpose();
            let summary = match usage {
                Ok(usage) => {
                    summary.usage = usage;
                    Ok(summary)
                }
                Err(error) => Err(StoreError::Corrupt {
                    path: self.snapshot_location(&id),
                    line: 0,
                    column: 0,
                    message: format!("the usage column is not usage totals: {error}"),
                }),
            };
            listed.push(ListedSnapshot { id, summary });
        }
        Ok(listed)
    }

    fn open_log_appender(&self, id: &str) -> Result<(Box<dyn LogAppender>, LogEnd), StoreError> {
        validate_session_id(id)?;
        let last = self
            .connection()
            .query_row(
                "SELECT start, bytes FROM log_chunks WHERE id = ?1 ORDER BY start DESC LIMIT 1",
                params![id],
                |row| Ok((row.get::<_, i64>(0)?, row.get::<_, Vec<u8>>(1)?)),
            )
            .optional()
            .map_err(self.error("open the session log in"))?;
        let end = match last {
            Some((start, bytes)) => LogEnd::of_tail(&bytes, to_u64(start) + bytes.len() as u64),
            None => LogEnd::default(),
        };
        let appender = SqliteLogAppender {
            connection: Arc::clone(&self.connection),
            path: self.path.clone(),
            id: id.to_string(),
            fence: fence_of(&self.fences, id),
            fences: Arc::clone(&self.fences),
        };
        Ok((Box::new(appender), end))
    }

    fn read_log(&self, id: &str, from: u64) -> Result<Option<Box<dyn Read + '_>>, StoreError> {
        if self.log_len(id)?.is_none() {
            return Ok(None);
        }
        let id = id.to_string();
        let connection = &self.connection;
        Ok(Some(Box::new(PagedChunkReader::new(from, move |next| {
            log_page(connection, &id, next)
        }))))
    }

    fn log_len(&self, id: &str) -> Result<Option<u64>, StoreError> {
        validate_session_id(id)?;
        self.connection()
            .query_row(
                "SELECT length FROM logs WHERE id = ?1",
                params![id],
                |row| row.get::<_, i64>(0),
            )
            .optional()
            .map(|length| length.map(to_u64))
            .map_err(self.error("read the session log from"))
    }

    fn list_logs(&self) -> Result<Vec<ListedLog>, StoreError> {
        let connection = self.connection();
        let mut statement = connection
            .prepare("SELECT id, updated_at FROM logs")
            .map_err(self.error("list the session logs in"))?;
        let rows = statement
            .query_map([], |row| {
                Ok(ListedLog {
                    id: row.get(0)?,
                    updated_at: row.get(1)?,
                })
            })
            .map_err(self.error("list the session logs in"))?;
        rows.collect::<Result<Vec<_>, _>>()
            .map_err(self.error("list the session logs in"))
    }

    fn delete_session(&self, id: &str) -> Result<bool, StoreError> {
        validate_session_id(id)?;
        let mut deleted = {
            let mut connection = self.connection();
            let transaction = connection
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(self.error("delete a session from"))?;
            let mut rows = 0;
            for table in ["snapshots", "logs", "log_chunks", "damaged"] {
                rows += transaction
                    .execute(&format!("DELETE FROM {table} WHERE id = ?1"), params![id])
                    .map_err(self.error("delete a session from"))?;
            }
            transaction
                .commit()
                .map_err(self.error("delete a session from"))?;
            rows > 0
        };
        if let Some(dir) = self.session_dir(id) {
            match fs::remove_dir_all(&dir) {
                Ok(()) => deleted = true,
                Err(error) if error.kind() == io::ErrorKind::NotFound => {}
                Err(error) => return Err(StoreError::io("delete", &dir, error)),
            }
        }
        Ok(deleted)
    }

    fn lock(&self, id: &str) -> Result<Box<dyn SessionLease>, StoreError> {
        validate_session_id(id)?;
        let holder = LockHolder::current();
        let token = format!("{:016x}", rand::random::<u64>());
        let record = serde_json::to_string(&holder).map_err(|error| StoreError::Encode {
            path: self.location(&format!("leases/{id}")),
            message: error.to_string(),
        })?;
        let mut connection = self.connection();
        let transaction = connection
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(self.error("take the session lease in"))?;
        let existing = transaction
            .query_row(
                "SELECT holder FROM leases WHERE id = ?1",
                params![id],
                |row| row.get::<_, String>(0),
            )
            .optional()
            .map_err(self.error("take the session lease in"))?;
        let previous = match existing {
            Some(text) => {
                let previous = serde_json::from_str::<LockHolder>(&text).ok();
                // An unreadable record names no process that could be alive; a holder that
                // may be alive (or cannot be checked, on another host) keeps the lease.
                if let Some(holder) = previous.as_ref().filter(|h| h.is_alive() != Some(false)) {
                    return Err(StoreError::Locked {
                        id: id.to_string(),
                        path: self.location(&format!("leases/{id}")),
                        holder: Some(holder.clone()),
                    });
                }
                previous
            }
            None => None,
        };
        transaction
            .execute(
                "INSERT INTO leases (id, holder, token) VALUES (?1, ?2, ?3) \
                 ON CONFLICT(id) DO UPDATE SET holder = excluded.holder, token = excluded.token",
                params![id, record, token],
            )
            .map_err(self.error("take the session lease in"))?;
        transaction
            .commit()
            .map_err(self.error("take the session lease in"))?;
        self.fences
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id.to_string(), token.clone());
        Ok(Box::new(SqliteLease {
            connection: Arc::clone(&self.connection),
            fences: Arc::clone(&self.fences),
            id: id.to_string(),
            token: Some(token),
            previous,
        }))
    }

    fn snapshot_location(&self, id: &str) -> PathBuf {
        self.location(&format!("snapshots/{id}"))
    }

    fn log_location(&self, id: &str) -> PathBuf {
        self.location(&format!("logs/{id}"))
    }

    /// `<database>.files/<id>/` next to the database file (deleted with the session).
    fn session_dir(&self, id: &str) -> Option<PathBuf> {
        validate_session_id(id).ok()?;
        let mut name = self.path.file_name()?.to_os_string();
        name.push(".files");
        Some(self.path.with_file_name(name).join(id))
    }

    /// Moves the damaged snapshot into the `damaged` table.
    fn set_snapshot_aside(&self, id: &str) -> Result<Option<PathBuf>, StoreError> {
        let Some(bytes) = self.get_snapshot(id)? else {
            return Ok(None);
        };
        let kept = self.keep_damaged(id, "json", &bytes)?;
        self.connection()
            .execute("DELETE FROM snapshots WHERE id = ?1", params![id])
            .map_err(self.error("move aside the damaged snapshot in"))?;
        Ok(Some(kept))
    }

    /// Copies the log into the `damaged` table.
    fn copy_log_aside(&self, id: &str) -> Result<Option<PathBuf>, StoreError> {
        let Some(mut reader) = self.read_log(id, 0)? else {
            return Ok(None);
        };
        let mut bytes = Vec::new();
        reader
            .read_to_end(&mut bytes)
            .map_err(|e| StoreError::io("copy the damaged log in", &self.path, e))?;
        drop(reader);
        self.keep_damaged(id, "jsonl", &bytes).map(Some)
    }
}

/// Appends batches of log lines to one session's log: one transaction per batch, fenced by
/// the lease the store held when the log was opened (or holds when the batch is written).
struct SqliteLogAppender {
    connection: Arc<Mutex<Connection>>,
    path: PathBuf,
    id: String,
    fence: Option<String>,
    fences: Arc<Mutex<HashMap<String, String>>>,
}

impl LogAppender for SqliteLogAppender {
    fn append(&mut self, lines: &[u8]) -> io::Result<()> {
        let fence = self
            .fence
            .clone()
            .or_else(|| fence_of(&self.fences, &self.id));
        let mut connection = lock_connection(&self.connection);
        let append = |connection: &mut Connection| -> Result<(), Failure> {
            let transaction =
                connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
            if let Some(token) = &fence {
                let location = PathBuf::from(format!("{}#logs/{}", self.path.display(), self.id));
                check_fence(&transaction, &self.id, token, location)?;
            }
            let start: i64 = transaction
                .query_row(
                    "SELECT length FROM logs WHERE id = ?1",
                    params![self.id],
                    |row| row.get(0),
                )
                .optional()?
                .unwrap_or(0);
            transaction.execute(
                "INSERT INTO log_chunks (id, start, bytes) VALUES (?1, ?2, ?3)",
                params![self.id, start, lines],
            )?;
            transaction.execute(
                "INSERT INTO logs (id, length, updated_at) VALUES (?1, ?2, ?3) \
                 ON CONFLICT(id) DO UPDATE SET length = excluded.length, \
                 updated_at = excluded.updated_at",
                params![
                    self.id,
                    start.saturating_add(to_i64(lines.len() as u64)),
                    now_rfc3339()
                ],
            )?;
            transaction.commit()?;
            Ok(())
        };
        append(&mut connection).map_err(|failure| match failure {
            Failure::Lost(lost) => lost.into_io(),
            Failure::Db(error) => {
                io::Error::other(format!("{} (database {})", error, self.path.display()))
            }
        })
    }

    fn sync(&mut self) -> io::Result<()> {
        // Every batch was committed with synchronous=FULL.
        Ok(())
    }

    fn end(&mut self) -> io::Result<u64> {
        lock_connection(&self.connection)
            .query_row(
                "SELECT length FROM logs WHERE id = ?1",
                params![self.id],
                |row| row.get::<_, i64>(0),
            )
            .optional()
            .map(|length| length.map_or(0, to_u64))
            .map_err(io::Error::other)
    }

    fn batched(&self) -> bool {
        true
    }
}

/// One page of the log of `id` for [`PagedChunkReader`]: the chunks from the one holding byte
/// `next` (the connection is held only while a page is fetched).
fn log_page(
    connection: &Mutex<Connection>,
    id: &str,
    next: u64,
) -> io::Result<Vec<(u64, Vec<u8>)>> {
    let connection = lock_connection(connection);
    let mut statement = connection
        .prepare_cached(
            "SELECT start, bytes FROM log_chunks WHERE id = ?1 AND start >= \
             (SELECT COALESCE(MAX(start), 0) FROM log_chunks WHERE id = ?1 AND start <= ?2) \
             ORDER BY start LIMIT ?3",
        )
        .map_err(io::Error::other)?;
    let rows = statement
        .query_map(params![id, to_i64(next), CHUNKS_PER_PAGE], |row| {
            Ok((to_u64(row.get::<_, i64>(0)?), row.get::<_, Vec<u8>>(1)?))
        })
        .map_err(io::Error::other)?;
    rows.map(|row| row.map_err(io::Error::other)).collect()
}

/// A held lease row (see the module documentation).
struct SqliteLease {
    connection: Arc<Mutex<Connection>>,
    fences: Arc<Mutex<HashMap<String, String>>>,
    id: String,
    token: Option<String>,
    previous: Option<LockHolder>,
}

impl std::fmt::Debug for SqliteLease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteLease")
            .field("id", &self.id)
            .field("held", &self.token.is_some())
            .finish()
    }
}

impl SessionLease for SqliteLease {
    fn previous_holder(&self) -> Option<&LockHolder> {
        self.previous.as_ref()
    }

    fn release(&mut self) {
        let Some(token) = self.token.take() else {
            return;
        };
        // Only our own row: a lease taken over from us (we were thought dead) stays.
        let _ = lock_connection(&self.connection).execute(
            "DELETE FROM leases WHERE id = ?1 AND token = ?2",
            params![self.id, token],
        );
        let mut fences = self.fences.lock().unwrap_or_else(PoisonError::into_inner);
        if fences.get(&self.id) == Some(&token) {
            fences.remove(&self.id);
        }
    }
}

impl Drop for SqliteLease {
    fn drop(&mut self) {
        self.release();
    }
}
