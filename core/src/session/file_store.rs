//! The file store: snapshots in `<project>/.robota/sessions/{id}.json` (written atomically),
//! logs in `<project>/.robota/logs/{id}.jsonl` (appended line by line, `O_APPEND`), the
//! session's own files in `.robota/sessions/{id}/`, and one OS lock file per writer
//! (`.robota/sessions/{id}.lock`, see `lock`). What is built on these primitives (resume,
//! fork, listing) lives in `store`.

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use serde::de::DeserializeSeed;

use super::lock::{LockError, SessionLock, LOCK_EXTENSION};
use super::log::{create_private_dir, open_file_appender, LogAppender, LogEnd, LOG_EXTENSION};
use super::store::{
    validate_session_id, HeaderSeed, HeaderSlot, ListedLog, ListedSnapshot, SessionLease,
    SessionStore, SessionSummary, StoreError, SNAPSHOT_EXTENSION,
};

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
pub struct FileSessionStore {
    sessions_dir: PathBuf,
    logs_dir: PathBuf,
    project_dir: Option<PathBuf>,
    counters: Arc<Counters>,
}

impl FileSessionStore {
    /// The store of a project: `<project_dir>/.robota/sessions` and `<project_dir>/.robota/logs`.
    pub fn for_project(project_dir: impl AsRef<Path>) -> Self {
        let project_dir = project_dir.as_ref();
        let robota = project_dir.join(".robota");
        FileSessionStore {
            sessions_dir: robota.join("sessions"),
            logs_dir: robota.join("logs"),
            project_dir: Some(project_dir.to_path_buf()),
            counters: Arc::default(),
        }
    }

    /// A store with explicit directories (tests, user-level sessions).
    pub fn with_dirs(sessions_dir: impl Into<PathBuf>, logs_dir: impl Into<PathBuf>) -> Self {
        FileSessionStore {
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

    /// The write-lock file of `id` (next to its snapshot).
    pub fn lock_path(&self, id: &str) -> Result<PathBuf, StoreError> {
        validate_session_id(id)?;
        Ok(self.sessions_dir.join(format!("{id}.{LOCK_EXTENSION}")))
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

    /// Removes temporary snapshot files left by processes that are no longer running (they
    /// died mid-save). Returns how many were removed.
    pub fn remove_stale_temp_files(&self) -> Result<usize, StoreError> {
        self.remove_temp_files(None)
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

    /// The summary fields of a snapshot file, parsing it only up to the first field that is
    /// not one (a few kilobytes however long the history is).
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
        slot.into_summary(path)
    }
}

impl SessionStore for FileSessionStore {
    /// Writes the snapshot atomically (temp file, `fsync`, rename, `fsync` of the directory),
    /// creating the directory (mode 0700) if needed. The file gets mode 0600.
    fn put_snapshot(&self, summary: &SessionSummary, bytes: &[u8]) -> Result<(), StoreError> {
        let path = self.snapshot_path(&summary.id)?;
        create_private_dir(&self.sessions_dir)
            .map_err(|e| StoreError::io("create the session directory", &self.sessions_dir, e))?;
        write_atomic(&path, bytes)?;
        self.counters
            .bytes_written
            .fetch_add(bytes.len() as u64, Ordering::Relaxed);
        Ok(())
    }

    fn get_snapshot(&self, id: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let path = self.snapshot_path(id)?;
        let bytes = match crate::files::read_regular(&path, &crate::files::SESSION_SNAPSHOT_FILE) {
            Ok(bytes) => bytes,
            Err(error) if error.is_not_found() => return Ok(None),
            Err(error) => return Err(StoreError::io("read", &path, error.into_io_error())),
        };
        self.count_read(bytes.len() as u64);
        Ok(Some(bytes))
    }

    fn list_snapshots(&self) -> Result<Vec<ListedSnapshot>, StoreError> {
        Ok(self
            .files(&self.sessions_dir, SNAPSHOT_EXTENSION)?
            .into_iter()
            .map(|(id, path)| ListedSnapshot {
                summary: self.read_summary(&path),
                id,
            })
            .collect())
    }

    fn open_log_appender(&self, id: &str) -> Result<(Box<dyn LogAppender>, LogEnd), StoreError> {
        Ok(open_file_appender(&self.log_path(id)?)?)
    }

    fn read_log(&self, id: &str, from: u64) -> Result<Option<Box<dyn Read + '_>>, StoreError> {
        let path = self.log_path(id)?;
        let file = match crate::files::open_regular(&path, &crate::files::SESSION_LOG_FILE) {
            Ok((file, _)) => file,
            Err(error) if error.is_not_found() => return Ok(None),
            Err(error) => return Err(StoreError::io("open", &path, error.into_io_error())),
        };
        let mut file = file;
        io::Seek::seek(&mut file, io::SeekFrom::Start(from))
            .map_err(|e| StoreError::io("read", &path, e))?;
        Ok(Some(Box::new(CountedRead {
            inner: file,
            counters: &self.counters,
        })))
    }

    fn log_len(&self, id: &str) -> Result<Option<u64>, StoreError> {
        let path = self.log_path(id)?;
        match fs::metadata(&path) {
            Ok(metadata) => Ok(Some(metadata.len())),
            Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(error) => Err(StoreError::io("inspect", &path, error)),
        }
    }

    fn list_logs(&self) -> Result<Vec<ListedLog>, StoreError> {
        Ok(self
            .files(&self.logs_dir, LOG_EXTENSION)?
            .into_iter()
            .map(|(id, path)| ListedLog {
                id,
                updated_at: fs::metadata(&path)
                    .and_then(|m| m.modified())
                    .ok()
                    .map(format_system_time),
            })
            .collect())
    }

    /// Deletes the snapshot, the log and the session directory (spilled outputs,
    /// background-task output; see [`session_dir`](SessionStore::session_dir)).
    fn delete_session(&self, id: &str) -> Result<bool, StoreError> {
        let mut deleted = false;
        for path in [self.snapshot_path(id)?, self.log_path(id)?] {
            match fs::remove_file(&path) {
                Ok(()) => deleted = true,
                Err(error) if error.kind() == io::ErrorKind::NotFound => {}
                Err(error) => return Err(StoreError::io("delete", &path, error)),
            }
        }
        let dir = self.sessions_dir.join(id);
        match fs::remove_dir_all(&dir) {
            Ok(()) => deleted = true,
            Err(error) if error.kind() == io::ErrorKind::NotFound => {}
            Err(error) => return Err(StoreError::io("delete", &dir, error)),
        }
        Ok(deleted)
    }

    /// Locks session `id` through its lock file (see [`SessionLock`]).
    fn lock(&self, id: &str) -> Result<Box<dyn SessionLease>, StoreError> {
        let path = self.lock_path(id)?;
        create_private_dir(&self.sessions_dir)
            .map_err(|e| StoreError::io("create the session directory", &self.sessions_dir, e))?;
        match SessionLock::acquire(&path, id) {
            Ok(lock) => Ok(Box::new(lock)),
            Err(LockError::Held {
                session_id,
                path,
                holder,
            }) => Err(StoreError::Locked {
                id: session_id,
                path,
                holder,
            }),
            Err(LockError::Io { op, path, source }) => Err(StoreError::Io { op, path, source }),
        }
    }

    fn snapshot_location(&self, id: &str) -> PathBuf {
        self.sessions_dir.join(format!("{id}.{SNAPSHOT_EXTENSION}"))
    }

    fn log_location(&self, id: &str) -> PathBuf {
        self.logs_dir.join(format!("{id}.{LOG_EXTENSION}"))
    }

    fn log_file(&self, id: &str) -> Option<PathBuf> {
        self.log_path(id).ok()
    }

    /// `<sessions dir>/<id>/`, where its spilled tool outputs (`spill/`) and background-task
    /// output (`tasks/`) are kept; created by the tools when first needed.
    fn session_dir(&self, id: &str) -> Option<PathBuf> {
        validate_session_id(id).ok()?;
        Some(self.sessions_dir.join(id))
    }

    fn project_dir(&self) -> Option<&Path> {
        self.project_dir.as_deref()
    }

    /// Moves the snapshot to `{id}.json.damaged-{time}` in the same directory.
    fn set_snapshot_aside(&self, id: &str) -> Result<Option<PathBuf>, StoreError> {
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

    /// Copies the log to `{id}.jsonl.damaged-{time}` in the same directory.
    fn copy_log_aside(&self, id: &str) -> Result<Option<PathBuf>, StoreError> {
        let path = self.log_path(id)?;
        let aside = aside_path(&path);
        fs::copy(&path, &aside).map_err(|e| StoreError::io("copy the damaged log", &path, e))?;
        Ok(Some(aside))
    }

    /// Removes the temporary snapshot files of `id` left by a process that died mid-save.
    fn remove_leftovers(&self, id: &str) -> Result<usize, StoreError> {
        self.remove_temp_files(Some(id))
    }
}

/// A log file read through the store, counting what it reads.
struct CountedRead<'a> {
    inner: File,
    counters: &'a Counters,
}

impl Read for CountedRead<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let read = self.inner.read(buf)?;
        self.counters
            .bytes_read
            .fetch_add(read as u64, Ordering::Relaxed);
        Ok(read)
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
}
