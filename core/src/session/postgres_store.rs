//! The PostgreSQL store (feature `postgres`): the sessions of many projects in one database, so
//! any worker process on any host can list, resume and continue any session of its project.
//!
//! **Tables** (prefixed `robota_`, created on first use inside one transaction under an
//! advisory lock, so two processes starting at once do not race): `robota_schema` (the schema
//! version, so a later release can tell which migration a database needs), `robota_snapshots`
//! (the summary fields as columns — what listing reads — and the JSON record),
//! `robota_logs` (each log's length and last write), `robota_log_chunks` (the log's bytes, one
//! row per batch of lines handed over at a flush point, keyed by the byte offset it starts at,
//! as in the SQLite store), `robota_leases` (the writer of each session, with its fencing
//! token) and `robota_damaged` (copies kept by recovery). Every row is keyed by the project key
//! and the session id: many projects (or tenants) share one database without seeing each
//! other's sessions.
//!
//! **One writer per session across processes and hosts.** A lease is a session-level advisory
//! lock (`pg_try_advisory_lock`) held on a connection that belongs to the lease alone: when a
//! worker dies, PostgreSQL closes its connection and releases the lock, so another worker can
//! take over without any pid check (pids mean nothing across hosts). A second writer's attempt
//! fails at once with [`StoreError::Locked`] naming the holder (host, pid, since when) from the
//! lease row. Each acquisition increments the row's **fencing token**, and every log append
//! and snapshot write of the lease's holder runs in a transaction that first checks (`FOR
//! SHARE`) that the row still carries its token: a writer that lost its lease while it lived on
//! (its lease connection was dropped by the server or the network) gets
//! [`StoreError::LeaseLost`] and never interleaves lines with the new holder.
//!
//! **Driver.** The async client (`tokio-postgres`) runs on a small runtime the store owns (one
//! worker thread), so the store's synchronous methods may be called from any thread, including
//! one inside another tokio runtime: they wait on a channel, never enter a runtime. The
//! connection string (a `postgres://` URL or `key=value` pairs) is never printed: messages
//! name the database as `postgres://user@host:port/database`. TLS is not supported yet (use a
//! local socket, a private network or a TLS-terminating proxy).

use std::collections::HashMap;
use std::fmt;
use std::io::{self, Read};
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use futures::executor::block_on;
use tokio_postgres::config::Host;
use tokio_postgres::{Client, GenericClient, NoTls};

use super::lock::LockHolder;
use super::log::{LogAppender, LogEnd, PagedChunkReader};
use super::store::{
    validate_session_id, LeaseLost, ListedLog, ListedSnapshot, SessionLease, SessionStore,
    SessionSummary, StoreError,
};
use super::usage::UsageTotals;
use crate::message::now_rfc3339;

/// The schema this build creates and reads (`robota_schema.version`).
const SCHEMA_VERSION: i32 = 1;

/// How long connecting may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);

/// How long a statement waits for a row another transaction holds before failing.
const LOCK_TIMEOUT: &str = "15s";

/// Log chunks fetched per query while reading a log.
const CHUNKS_PER_PAGE: i64 = 32;

/// How long taking a lease waits for the server to notice that the holder (a process on this
/// host) is gone and drop its connection, and so its advisory lock.
const DEAD_HOLDER_GRACE: Duration = Duration::from_secs(10);

/// The advisory lock held while the tables are created ("robotaSC").
const SCHEMA_LOCK_KEY: i64 = 0x726f_626f_7461_5343;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS robota_schema (
    singleton BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (singleton),
    version INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS robota_snapshots (
    project TEXT NOT NULL,
    id TEXT NOT NULL,
    version INTEGER NOT NULL,
    name TEXT,
    cwd TEXT,
    created_at TEXT,
    updated_at TEXT,
    provider TEXT,
    model TEXT,
    permission_mode TEXT,
    parent_id TEXT,
    message_count BIGINT,
    usage TEXT,
    body BYTEA NOT NULL,
    PRIMARY KEY (project, id)
);
CREATE TABLE IF NOT EXISTS robota_logs (
    project TEXT NOT NULL,
    id TEXT NOT NULL,
    length BIGINT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (project, id)
);
CREATE TABLE IF NOT EXISTS robota_log_chunks (
    project TEXT NOT NULL,
    id TEXT NOT NULL,
    start BIGINT NOT NULL,
    bytes BYTEA NOT NULL,
    PRIMARY KEY (project, id, start)
);
CREATE TABLE IF NOT EXISTS robota_leases (
    project TEXT NOT NULL,
    id TEXT NOT NULL,
    token BIGINT NOT NULL,
    holder TEXT,
    backend_pid INTEGER,
    acquired_at TEXT,
    PRIMARY KEY (project, id)
);
CREATE TABLE IF NOT EXISTS robota_damaged (
    project TEXT NOT NULL,
    name TEXT NOT NULL,
    id TEXT NOT NULL,
    kind TEXT NOT NULL,
    bytes BYTEA NOT NULL,
    PRIMARY KEY (project, name)
);
";

/// Where a [`PostgresSessionStore`] connects and whose sessions it holds.
#[derive(Clone, PartialEq, Eq)]
pub struct PostgresConfig {
    /// The connection string: `postgres://user:password@host:port/database` or libpq's
    /// `key=value` form. Never printed.
    pub url: String,
    /// The project key: sessions are kept apart by it, so many projects share one database.
    /// Workers that continue each other's sessions must use the same key.
    pub project: String,
}

impl fmt::Debug for PostgresConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PostgresConfig")
            .field("url", &"<redacted>")
            .field("project", &self.project)
            .finish()
    }
}

/// Sessions of one project in a PostgreSQL database (see the module documentation). Cheap to
/// clone (clones share the connection and the runtime).
#[derive(Clone)]
pub struct PostgresSessionStore {
    shared: Arc<Shared>,
}

impl fmt::Debug for PostgresSessionStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PostgresSessionStore")
            .field("database", &self.shared.place)
            .field("project", &self.shared.project)
            .finish()
    }
}

struct Shared {
    config: tokio_postgres::Config,
    /// The database as messages name it (no password).
    place: String,
    project: String,
    /// The store's connection for everything but leases; reconnected when it was closed.
    client: Mutex<Option<Client>>,
    /// The fencing token of each lease this store holds, by session id.
    fences: Mutex<HashMap<String, i64>>,
    /// Last, so that the connections above are closed before it stops.
    runtime: DriverRuntime,
}

/// The store's own runtime, where the connections' I/O runs.
struct DriverRuntime(Option<tokio::runtime::Runtime>);

impl Drop for DriverRuntime {
    fn drop(&mut self) {
        // `shutdown_background` never blocks, so the store may be dropped inside another
        // runtime too (a plain drop of a runtime there panics).
        if let Some(runtime) = self.0.take() {
            runtime.shutdown_background();
        }
    }
}

/// A failed database step: the database's error, or a fenced write refused.
enum Failure {
    Db(tokio_postgres::Error),
    Lost(LeaseLost),
}

impl From<tokio_postgres::Error> for Failure {
    fn from(error: tokio_postgres::Error) -> Self {
        Failure::Db(error)
    }
}

/// The connection string's target without its password: `postgres://user@host:port/db`.
fn describe(config: &tokio_postgres::Config) -> String {
    let user = config
        .get_user()
        .map(|u| format!("{u}@"))
        .unwrap_or_default();
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .enumerate()
        .map(|(n, host)| {
            let host = match host {
                Host::Tcp(name) => name.clone(),
                #[cfg(unix)]
                Host::Unix(path) => path.display().to_string(),
            };
            match config.get_ports().get(n).or(config.get_ports().first()) {
                Some(port) => format!("{host}:{port}"),
                None => host,
            }
        })
        .collect();
    format!(
        "postgres://{user}{}/{}",
        hosts.join(","),
        config.get_dbname().unwrap_or_default()
    )
}

fn to_i64(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

fn to_u64(value: i64) -> u64 {
    u64::try_from(value).unwrap_or(0)
}

/// The text whose hash is the advisory lock key of a session's lease (lengths first, so two
/// different (project, id) pairs never give the same text).
fn lease_key(project: &str, id: &str) -> String {
    format!("robota-session-lease:{}:{project}:{id}", project.len())
}

/// The lease row's holder, when it names one that can be read.
fn parse_holder(text: Option<String>) -> Option<LockHolder> {
    text.and_then(|text| serde_json::from_str(&text).ok())
}

impl Shared {
    fn location(&self, what: &str) -> PathBuf {
        PathBuf::from(format!("{}#{}/{what}", self.place, self.project))
    }

    fn error(&self, op: &'static str, error: impl fmt::Display) -> StoreError {
        StoreError::Io {
            op,
            path: PathBuf::from(&self.place),
            source: io::Error::other(error.to_string()),
        }
    }

    fn failure(&self, op: &'static str, failure: Failure) -> StoreError {
        match failure {
            Failure::Db(error) => self.error(op, error),
            Failure::Lost(lost) => StoreError::LeaseLost(Box::new(lost)),
        }
    }

    fn fence_of(&self, id: &str) -> Option<i64> {
        lock_unpoisoned(&self.fences).get(id).copied()
    }

    /// A new connection, its I/O running on the store's runtime.
    fn connect(&self) -> Result<Client, String> {
        let runtime = self
            .runtime
            .0
            .as_ref()
            .ok_or("the store's runtime stopped")?;
        let config = self.config.clone();
        let task = runtime.spawn(async move {
            let (client, connection) = config.connect(NoTls).await?;
            tokio::spawn(async move {
                // Ends when the client is dropped or the server closes the connection; the
                // next call on the client then fails (and the store reconnects).
                let _ = connection.await;
            });
            client
                .batch_execute(&format!("SET lock_timeout = '{LOCK_TIMEOUT}'"))
                .await?;
            Ok::<_, tokio_postgres::Error>(client)
        });
        match block_on(task) {
            Ok(Ok(client)) => Ok(client),
            Ok(Err(error)) => Err(error.to_string()),
            Err(error) => Err(format!("the connection task failed: {error}")),
        }
    }

    /// The store's connection, (re)connected if needed. Held for one operation.
    fn client(&self, op: &'static str) -> Result<ClientGuard<'_>, StoreError> {
        let mut guard = lock_unpoisoned(&self.client);
        if guard.as_ref().is_none_or(Client::is_closed) {
            *guard = None;
            *guard = Some(self.connect().map_err(|error| self.error(op, error))?);
        }
        Ok(ClientGuard(guard))
    }

    /// Fails with [`Failure::Lost`] unless the lease row of `id` still carries `token` (the
    /// row stays locked against a takeover until the transaction ends).
    async fn check_fence(
        &self,
        client: &impl GenericClient,
        id: &str,
        token: i64,
        location: PathBuf,
    ) -> Result<(), Failure> {
        let row = client
            .query_opt(
                "SELECT token, holder FROM robota_leases WHERE project = $1 AND id = $2 FOR SHARE",
                &[&self.project, &id],
            )
            .await?;
        match row {
            Some(row) if row.get::<_, i64>(0) == token => Ok(()),
            row => Err(Failure::Lost(LeaseLost {
                id: id.to_string(),
                location,
                holder: row.and_then(|row| parse_holder(row.get(1))),
            })),
        }
    }

    /// Keeps `bytes` in `robota_damaged` under a fresh name and returns its location.
    fn keep_damaged(&self, id: &str, kind: &str, bytes: &[u8]) -> Result<PathBuf, StoreError> {
        let op = "keep a copy of damaged data in";
        let name = format!(
            "{id}.{kind}.damaged-{}-{:08x}",
            now_rfc3339(),
            rand::random::<u32>()
        );
        let client = self.client(op)?;
        block_on(client.execute(
            "INSERT INTO robota_damaged (project, name, id, kind, bytes) VALUES ($1, $2, $3, $4, $5)",
            &[&self.project, &name, &id, &kind, &bytes],
        ))
        .map_err(|e| self.error(op, e))?;
        Ok(self.location(&format!("damaged/{name}")))
    }
}

/// The store's connection while one operation uses it.
struct ClientGuard<'a>(MutexGuard<'a, Option<Client>>);

impl std::ops::Deref for ClientGuard<'_> {
    type Target = Client;
    fn deref(&self) -> &Client {
        // `Shared::client` put a client there before handing out the guard.
        self.0.as_ref().unwrap_or_else(|| unreachable!())
    }
}

impl std::ops::DerefMut for ClientGuard<'_> {
    fn deref_mut(&mut self) -> &mut Client {
        self.0.as_mut().unwrap_or_else(|| unreachable!())
    }
}

fn lock_unpoisoned<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl PostgresSessionStore {
    /// Connects to the database of `config` and creates the tables on first use. A database
    /// whose schema is newer than this build reads is refused.
    pub fn connect(config: &PostgresConfig) -> Result<Self, StoreError> {
        let mut parsed =
            tokio_postgres::Config::from_str(&config.url).map_err(|error| StoreError::Io {
                op: "read the connection string of",
                path: PathBuf::from("the PostgreSQL session store"),
                source: io::Error::new(io::ErrorKind::InvalidInput, error.to_string()),
            })?;
        if parsed.get_connect_timeout().is_none() {
            parsed.connect_timeout(CONNECT_TIMEOUT);
        }
        if parsed.get_application_name().is_none() {
            parsed.application_name("robota");
        }
        let place = describe(&parsed);
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("robota-postgres")
            .enable_all()
            .build()
            .map_err(|error| {
                StoreError::io("start the driver of", &PathBuf::from(&place), error)
            })?;
        let shared = Shared {
            config: parsed,
            place,
            project: config.project.clone(),
            client: Mutex::new(None),
            fences: Mutex::new(HashMap::new()),
            runtime: DriverRuntime(Some(runtime)),
        };
        let op = "create the tables of the session database";
        let version = {
            let client = shared.client(op)?;
            block_on(async {
                client
                    .batch_execute(&format!(
                        "BEGIN; SELECT pg_advisory_xact_lock({SCHEMA_LOCK_KEY}); {SCHEMA} \
                         INSERT INTO robota_schema (singleton, version) VALUES (TRUE, {SCHEMA_VERSION}) \
                         ON CONFLICT (singleton) DO NOTHING; COMMIT;"
                    ))
                    .await?;
                let row = client
                    .query_one("SELECT version FROM robota_schema", &[])
                    .await?;
                Ok::<i32, tokio_postgres::Error>(row.get(0))
            })
            .map_err(|error| shared.error(op, error))?
        };
        if version > SCHEMA_VERSION {
            return Err(shared.error(
                "open the session database",
                format!(
                    "its schema version {version} is newer than the {SCHEMA_VERSION} this version of robota reads; upgrade robota to open it"
                ),
            ));
        }
        Ok(PostgresSessionStore {
            shared: Arc::new(shared),
        })
    }

    /// The database as messages name it: `postgres://user@host:port/database` (no password).
    pub fn database(&self) -> &str {
        &self.shared.place
    }

    /// The project key the store's sessions are kept under.
    pub fn project(&self) -> &str {
        &self.shared.project
    }
}

impl SessionStore for PostgresSessionStore {
    fn put_snapshot(&self, summary: &SessionSummary, bytes: &[u8]) -> Result<(), StoreError> {
        validate_session_id(&summary.id)?;
        let op = "write the session snapshot to";
        let shared = &*self.shared;
        let usage = summary
            .usage
            .as_ref()
            .and_then(|usage| serde_json::to_string(usage).ok());
        let version = i32::try_from(summary.version).unwrap_or(i32::MAX);
        let message_count = summary.message_count.map(to_i64);
        let fence = shared.fence_of(&summary.id);
        let mut client = shared.client(op)?;
        block_on(async {
            let transaction = client.transaction().await?;
            if let Some(token) = fence {
                let location = self.snapshot_location(&summary.id);
                shared
                    .check_fence(&transaction, &summary.id, token, location)
                    .await?;
            }
            transaction
                .execute(
                    "INSERT INTO robota_snapshots (project, id, version, name, cwd, created_at, \
                     updated_at, provider, model, permission_mode, parent_id, message_count, \
                     usage, body) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) \
                     ON CONFLICT (project, id) DO UPDATE SET version = excluded.version, \
                     name = excluded.name, cwd = excluded.cwd, created_at = excluded.created_at, \
                     updated_at = excluded.updated_at, provider = excluded.provider, \
                     model = excluded.model, permission_mode = excluded.permission_mode, \
                     parent_id = excluded.parent_id, message_count = excluded.message_count, \
                     usage = excluded.usage, body = excluded.body",
                    &[
                        &shared.project,
                        &summary.id,
                        &version,
                        &summary.name,
                        &summary.cwd,
                        &summary.created_at,
                        &summary.updated_at,
                        &summary.provider,
                        &summary.model,
                        &summary.permission_mode,
                        &summary.parent_id,
                        &message_count,
                        &usage,
                        &bytes,
                    ],
                )
                .await?;
            transaction.commit().await?;
            Ok(())
        })
        .map_err(|failure| shared.failure(op, failure))
    }

    fn get_snapshot(&self, id: &str) -> Result<Option<Vec<u8>>, StoreError> {
        validate_session_id(id)?;
        let op = "read the session snapshot from";
        let shared = &*self.shared;
        let client = shared.client(op)?;
        block_on(client.query_opt(
            "SELECT body FROM robota_snapshots WHERE project = $1 AND id = $2",
            &[&shared.project, &id],
        ))
        .map(|row| row.map(|row| row.get::<_, Vec<u8>>(0)))
        .map_err(|e| shared.error(op, e))
    }

    fn list_snapshots(&self) -> Result<Vec<ListedSnapshot>, StoreError> {
        let op = "list the sessions in";
        let shared = &*self.shared;
        let rows = {
            let client = shared.client(op)?;
            block_on(client.query(
                "SELECT id, version, name, cwd, created_at, updated_at, provider, model, \
                 permission_mode, parent_id, message_count, usage FROM robota_snapshots \
                 WHERE project = $1",
                &[&shared.project],
            ))
            .map_err(|e| shared.error(op, e))?
        };
        let mut listed = Vec::with_capacity(rows.len());
        for row in rows {
            let id: String = row.get(0);
            let usage = row
                .get::<_, Option<String>>(11)
                .map(|text| serde_json::from_str::<UsageTotals>(&text))
                .transpose();
            let summary = match usage {
                Ok(usage) => Ok(SessionSummary {
                    id: id.clone(),
                    version: u32::try_from(row.get::<_, i32>(1)).unwrap_or(0),
                    name: row.get(2),
                    cwd: row.get(3),
                    created_at: row.get(4),
                    updated_at: row.get(5),
                    provider: row.get(6),
                    model: row.get(7),
                    permission_mode: row.get(8),
                    parent_id: row.get(9),
                    message_count: row.get::<_, Option<i64>>(10).map(to_u64),
                    usage,
                    has_snapshot: true,
                }),
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
        let op = "open the session log in";
        let shared = &*self.shared;
        let last = {
            let client = shared.client(op)?;
            block_on(client.query_opt(
                "SELECT start, bytes FROM robota_log_chunks WHERE project = $1 AND id = $2 \
                 ORDER BY start DESC LIMIT 1",
                &[&shared.project, &id],
            ))
            .map_err(|e| shared.error(op, e))?
        };
        let end = match last {
            Some(row) => {
                let bytes: Vec<u8> = row.get(1);
                LogEnd::of_tail(&bytes, to_u64(row.get(0)) + bytes.len() as u64)
            }
            None => LogEnd::default(),
        };
        let appender = PostgresLogAppender {
            shared: Arc::clone(&self.shared),
            id: id.to_string(),
            fence: shared.fence_of(id),
        };
        Ok((Box::new(appender), end))
    }

    fn read_log(&self, id: &str, from: u64) -> Result<Option<Box<dyn Read + '_>>, StoreError> {
        if self.log_len(id)?.is_none() {
            return Ok(None);
        }
        let id = id.to_string();
        let shared = &self.shared;
        Ok(Some(Box::new(PagedChunkReader::new(from, move |next| {
            log_page(shared, &id, next)
        }))))
    }

    fn log_len(&self, id: &str) -> Result<Option<u64>, StoreError> {
        validate_session_id(id)?;
        let op = "read the session log from";
        let shared = &*self.shared;
        let client = shared.client(op)?;
        block_on(client.query_opt(
            "SELECT length FROM robota_logs WHERE project = $1 AND id = $2",
            &[&shared.project, &id],
        ))
        .map(|row| row.map(|row| to_u64(row.get(0))))
        .map_err(|e| shared.error(op, e))
    }

    fn list_logs(&self) -> Result<Vec<ListedLog>, StoreError> {
        let op = "list the session logs in";
        let shared = &*self.shared;
        let client = shared.client(op)?;
        let rows = block_on(client.query(
            "SELECT id, updated_at FROM robota_logs WHERE project = $1",
            &[&shared.project],
        ))
        .map_err(|e| shared.error(op, e))?;
        Ok(rows
            .into_iter()
            .map(|row| ListedLog {
                id: row.get(0),
                updated_at: row.get(1),
            })
            .collect())
    }

    fn delete_session(&self, id: &str) -> Result<bool, StoreError> {
        validate_session_id(id)?;
        let op = "delete a session from";
        let shared = &*self.shared;
        let mut client = shared.client(op)?;
        block_on(async {
            let transaction = client.transaction().await?;
            let mut rows = 0;
            // The lease row stays: its token must keep counting up.
            for table in [
                "robota_snapshots",
                "robota_logs",
                "robota_log_chunks",
                "robota_damaged",
            ] {
                rows += transaction
                    .execute(
                        &format!("DELETE FROM {table} WHERE project = $1 AND id = $2"),
                        &[&shared.project, &id],
                    )
                    .await?;
            }
            transaction.commit().await?;
            Ok::<_, tokio_postgres::Error>(rows > 0)
        })
        .map_err(|e| shared.error(op, e))
    }

    fn lock(&self, id: &str) -> Result<Box<dyn SessionLease>, StoreError> {
        validate_session_id(id)?;
        let op = "take the session lease in";
        let shared = &*self.shared;
        let location = shared.location(&format!("leases/{id}"));
        let holder = LockHolder::current();
        let record = serde_json::to_string(&holder).map_err(|error| StoreError::Encode {
            path: location.clone(),
            message: error.to_string(),
        })?;
        let key = lease_key(&shared.project, id);
        let mut client = shared.connect().map_err(|e| shared.error(op, e))?;
        let deadline = Instant::now() + DEAD_HOLDER_GRACE;
        loop {
            let taken: bool = block_on(client.query_one(
                "SELECT pg_try_advisory_lock(hashtextextended($1, 0))",
                &[&key],
            ))
            .map_err(|e| shared.error(op, e))?
            .get(0);
            if taken {
                break;
            }
            let current = block_on(client.query_opt(
                "SELECT holder FROM robota_leases WHERE project = $1 AND id = $2",
                &[&shared.project, &id],
            ))
            .map_err(|e| shared.error(op, e))?
            .and_then(|row| parse_holder(row.get(0)));
            // A holder on this host that is gone: the server is closing its connection (and
            // releasing its lock) right now. Anything else holds the lease.
            let gone = current
                .as_ref()
                .is_some_and(|holder| holder.is_alive() == Some(false));
            if !gone || Instant::now() >= deadline {
                return Err(StoreError::Locked {
                    id: id.to_string(),
                    path: location,
                    holder: current,
                });
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let taken = block_on(async {
            let transaction = client.transaction().await?;
            let previous = transaction
                .query_opt(
                    "SELECT holder FROM robota_leases WHERE project = $1 AND id = $2 FOR UPDATE",
                    &[&shared.project, &id],
                )
                .await?
                .and_then(|row| parse_holder(row.get(0)));
            let since = now_rfc3339();
            let row = transaction
                .query_one(
                    "INSERT INTO robota_leases (project, id, token, holder, backend_pid, acquired_at) \
                     VALUES ($1, $2, 1, $3, pg_backend_pid(), $4) \
                     ON CONFLICT (project, id) DO UPDATE SET token = robota_leases.token + 1, \
                     holder = excluded.holder, backend_pid = excluded.backend_pid, \
                     acquired_at = excluded.acquired_at RETURNING token",
                    &[&shared.project, &id, &record, &since],
                )
                .await?;
            transaction.commit().await?;
            Ok::<_, tokio_postgres::Error>((previous, row.get::<_, i64>(0)))
        });
        let (previous, token) = match taken {
            Ok(taken) => taken,
            Err(error) => {
                // Dropping the connection releases the advisory lock.
                return Err(shared.error(op, error));
            }
        };
        lock_unpoisoned(&shared.fences).insert(id.to_string(), token);
        Ok(Box::new(PostgresLease {
            shared: Arc::clone(&self.shared),
            client: Some(client),
            id: id.to_string(),
            key,
            token,
            previous,
        }))
    }

    fn snapshot_location(&self, id: &str) -> PathBuf {
        self.shared.location(&format!("snapshots/{id}"))
    }

    fn log_location(&self, id: &str) -> PathBuf {
        self.shared.location(&format!("logs/{id}"))
    }

    /// Moves the damaged snapshot into `robota_damaged`.
    fn set_snapshot_aside(&self, id: &str) -> Result<Option<PathBuf>, StoreError> {
        let Some(bytes) = self.get_snapshot(id)? else {
            return Ok(None);
        };
        let kept = self.shared.keep_damaged(id, "json", &bytes)?;
        let op = "move aside the damaged snapshot in";
        let shared = &*self.shared;
        let client = shared.client(op)?;
        block_on(client.execute(
            "DELETE FROM robota_snapshots WHERE project = $1 AND id = $2",
            &[&shared.project, &id],
        ))
        .map_err(|e| shared.error(op, e))?;
        Ok(Some(kept))
    }

    /// Copies the log into `robota_damaged`.
    fn copy_log_aside(&self, id: &str) -> Result<Option<PathBuf>, StoreError> {
        let Some(mut reader) = self.read_log(id, 0)? else {
            return Ok(None);
        };
        let mut bytes = Vec::new();
        reader.read_to_end(&mut bytes).map_err(|e| {
            StoreError::io(
                "copy the damaged log in",
                &PathBuf::from(&self.shared.place),
                e,
            )
        })?;
        drop(reader);
        self.shared.keep_damaged(id, "jsonl", &bytes).map(Some)
    }
}

/// Appends batches of log lines to one session's log: one transaction per batch, fenced by
/// the lease the store held when the log was opened (or holds when the batch is written).
struct PostgresLogAppender {
    shared: Arc<Shared>,
    id: String,
    fence: Option<i64>,
}

impl LogAppender for PostgresLogAppender {
    fn append(&mut self, lines: &[u8]) -> io::Result<()> {
        let shared = &*self.shared;
        let fence = self.fence.or_else(|| shared.fence_of(&self.id));
        let id = self.id.as_str();
        let mut client = shared
            .client("append to the session log in")
            .map_err(io::Error::other)?;
        let result = block_on(async {
            let transaction = client.transaction().await?;
            if let Some(token) = fence {
                let location = shared.location(&format!("logs/{id}"));
                shared
                    .check_fence(&transaction, id, token, location)
                    .await?;
            }
            transaction
                .execute(
                    "INSERT INTO robota_logs (project, id, length, updated_at) \
                     VALUES ($1, $2, 0, $3) ON CONFLICT (project, id) DO NOTHING",
                    &[&shared.project, &id, &now_rfc3339()],
                )
                .await?;
            let start: i64 = transaction
                .query_one(
                    "SELECT length FROM robota_logs WHERE project = $1 AND id = $2 FOR UPDATE",
                    &[&shared.project, &id],
                )
                .await?
                .get(0);
            transaction
                .execute(
                    "INSERT INTO robota_log_chunks (project, id, start, bytes) \
                     VALUES ($1, $2, $3, $4)",
                    &[&shared.project, &id, &start, &lines],
                )
                .await?;
            let length = start.saturating_add(to_i64(lines.len() as u64));
            transaction
                .execute(
                    "UPDATE robota_logs SET length = $3, updated_at = $4 \
                     WHERE project = $1 AND id = $2",
                    &[&shared.project, &id, &length, &now_rfc3339()],
                )
                .await?;
            transaction.commit().await?;
            Ok(())
        });
        result.map_err(|failure| match failure {
            Failure::Lost(lost) => lost.into_io(),
            Failure::Db(error) => io::Error::other(format!("{error} (database {})", shared.place)),
        })
    }

    fn sync(&mut self) -> io::Result<()> {
        // Every batch was committed.
        Ok(())
    }

    fn end(&mut self) -> io::Result<u64> {
        let shared = &*self.shared;
        let client = shared
            .client("read the session log from")
            .map_err(io::Error::other)?;
        block_on(client.query_opt(
            "SELECT length FROM robota_logs WHERE project = $1 AND id = $2",
            &[&shared.project, &self.id],
        ))
        .map(|row| row.map_or(0, |row| to_u64(row.get(0))))
        .map_err(io::Error::other)
    }

    fn batched(&self) -> bool {
        true
    }
}

/// One page of the log of `id` for [`PagedChunkReader`]: the chunks from the one holding byte
/// `next`.
fn log_page(shared: &Shared, id: &str, next: u64) -> io::Result<Vec<(u64, Vec<u8>)>> {
    let client = shared
        .client("read the session log from")
        .map_err(io::Error::other)?;
    let rows = block_on(client.query(
        "SELECT start, bytes FROM robota_log_chunks WHERE project = $1 AND id = $2 \
         AND start >= (SELECT COALESCE(MAX(start), 0) FROM robota_log_chunks \
         WHERE project = $1 AND id = $2 AND start <= $3) ORDER BY start LIMIT $4",
        &[&shared.project, &id, &to_i64(next), &CHUNKS_PER_PAGE],
    ))
    .map_err(io::Error::other)?;
    Ok(rows
        .iter()
        .map(|row| (to_u64(row.get(0)), row.get::<_, Vec<u8>>(1)))
        .collect())
}

/// A held lease: the advisory lock on its own connection, and the token it was given.
struct PostgresLease {
    shared: Arc<Shared>,
    /// The connection holding the advisory lock; `None` once released.
    client: Option<Client>,
    id: String,
    key: String,
    token: i64,
    previous: Option<LockHolder>,
}

impl fmt::Debug for PostgresLease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PostgresLease")
            .field("id", &self.id)
            .field("token", &self.token)
            .field("held", &self.client.is_some())
            .finish()
    }
}

impl SessionLease for PostgresLease {
    fn previous_holder(&self) -> Option<&LockHolder> {
        self.previous.as_ref()
    }

    fn release(&mut self) {
        let Some(client) = self.client.take() else {
            return;
        };
        let shared = &*self.shared;
        // Only our own row (a lease taken over from us stays), then the lock; closing the
        // connection would release it too, a moment later.
        let _ = block_on(async {
            client
                .execute(
                    "UPDATE robota_leases SET holder = NULL, backend_pid = NULL \
                     WHERE project = $1 AND id = $2 AND token = $3",
                    &[&shared.project, &self.id, &self.token],
                )
                .await?;
            client
                .execute(
                    "SELECT pg_advisory_unlock(hashtextextended($1, 0))",
                    &[&self.key],
                )
                .await
        });
        drop(client);
        let mut fences = lock_unpoisoned(&shared.fences);
        if fences.get(&self.id) == Some(&self.token) {
            fences.remove(&self.id);
        }
    }
}

impl Drop for PostgresLease {
    fn drop(&mut self) {
        self.release();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_database_without_its_password() {
        let config =
            tokio_postgres::Config::from_str("postgres://app:s3cret@db.internal:5433/sessions")
                .unwrap_or_else(|e| panic!("{e}"));
        let place = describe(&config);
        assert_eq!(place, "postgres://app@db.internal:5433/sessions");
        let debug = format!(
            "{:?}",
            PostgresConfig {
                url: "postgres://app:s3cret@db/x".into(),
                project: "p".into()
            }
        );
        assert!(!debug.contains("s3cret"), "{debug}");
    }

    #[test]
    fn lease_keys_of_different_sessions_differ() {
        assert_ne!(lease_key("a:b", "c"), lease_key("a", "b:c"));
    }
}
