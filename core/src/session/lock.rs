//! One writer per session: the lock file `.robota/sessions/{id}.lock`.
//!
//! Two processes appending to one session log interleave their lines (duplicate `seq`
//! numbers, turns that vanish on the next resume), so a session that is opened for writing —
//! new, resumed or continued — is locked first, and a second writer gets
//! [`LockError::Held`] naming the session and the holder instead of a corrupted log.
//!
//! **The lock is an OS advisory lock** (`flock` on Unix, `LockFileEx` on Windows, through
//! [`File::try_lock`]) held by the open lock file. The kernel drops it when the holder's process
//! ends however it ends (SIGKILL included), so a stale lock cannot block anyone and two
//! processes taking over a stale lock cannot both win: the kernel lets exactly one of them lock
//! the file. The file also holds a [`LockHolder`] record (pid, host, process start, since when)
//! — only for the error message; it is never what decides who holds the lock.
//!
//! **Release** removes the file while still holding the lock, then closes it. A process that
//! opened the old file just before it was removed and locks it afterwards notices that the
//! path no longer names the file it locked and starts again, so a removed file is never
//! mistaken for the lock. A lock file left behind by a process that was killed still holds the
//! dead holder's record: the next writer takes the lock over and says so
//! ([`SessionLock::previous_holder`]).
//!
//! File systems without advisory locks (some network file systems) fall back to the record
//! alone: the lock counts as held while the recorded process is alive on this host (same pid
//! and process start time, so a reused pid is not mistaken for the holder). That fallback
//! cannot rule out two writers racing to take over the same stale record.
//!
//! Reading, listing and forking never lock: a fork only reads the session it copies.

use std::fs::{self, File, OpenOptions, TryLockError};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::message::now_rfc3339;

/// File extension of session lock files.
pub const LOCK_EXTENSION: &str = "lock";

/// Largest lock record read (a record is well under a kilobyte).
const MAX_RECORD_BYTES: u64 = 16 * 1024;

/// Who holds (or held) a session's write lock.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LockHolder {
    /// The holder's process id.
    pub pid: u32,
    /// The host the holder runs on.
    #[serde(default)]
    pub host: String,
    /// When the lock was taken, RFC 3339 UTC.
    #[serde(default)]
    pub since: String,
    /// The holder process's start time where the system tells it (Linux: clock ticks since
    /// boot), so that a pid reused by a later process is not taken for the holder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process_start: Option<u64>,
}

impl LockHolder {
    /// This process, now.
    pub fn current() -> Self {
        let pid = std::process::id();
        LockHolder {
            pid,
            host: host_name(),
            since: now_rfc3339(),
            process_start: process_start_time(pid),
        }
    }

    /// True when this record names the calling process.
    pub fn is_current_process(&self) -> bool {
        self.pid == std::process::id()
            && self.host == host_name()
            && (self.process_start.is_none() || self.process_start == process_start_time(self.pid))
    }

    /// Whether the recorded process is still running: `Some(false)` when it is certainly gone
    /// (no such process on this host, or the pid now belongs to a process started later),
    /// `None` when that cannot be told (another host, or no way to check on this system).
    pub fn is_alive(&self) -> Option<bool> {
        if self.host != host_name() {
            return None;
        }
        let alive = process_exists(self.pid)?;
        if !alive {
            return Some(false);
        }
        match (self.process_start, process_start_time(self.pid)) {
            (Some(recorded), Some(now)) => Some(recorded == now),
            _ => Some(true),
        }
    }
}

impl std::fmt::Display for LockHolder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.is_current_process() {
            write!(f, "this process (pid {})", self.pid)?;
        } else {
            write!(f, "process {}", self.pid)?;
            if !self.host.is_empty() {
                write!(f, " on {}", self.host)?;
            }
        }
        if !self.since.is_empty() {
            write!(f, ", since {}", self.since)?;
        }
        Ok(())
    }
}

/// Why a session could not be locked for writing.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Another writer holds the lock.
    #[error("{}", held_message(session_id, holder.as_ref(), path))]
    Held {
        /// The session.
        session_id: String,
        /// The lock file.
        path: PathBuf,
        /// Who holds it, when its record could be read (it is written right after locking, so a
        /// writer that is just starting may not have written it yet).
        holder: Option<LockHolder>,
    },
    /// The lock file could not be created, opened or locked.
    #[error("cannot {op} the session lock file {}: {source}", path.display())]
    Io {
        /// What was being done.
        op: &'static str,
        /// The lock file.
        path: PathBuf,
        /// The system error.
        #[source]
        source: io::Error,
    },
}

/// The message of [`LockError::Held`]: which session, who holds it, and what to do.
pub fn held_message(session_id: &str, holder: Option<&LockHolder>, path: &Path) -> String {
    let who = match holder {
        Some(holder) => holder.to_string(),
        None => "another process".to_string(),
    };
    format!(
        "session {session_id:?} is already open for writing by {who}; a session has one writer \
         at a time. Wait until that session is closed, or fork it to continue in a copy \
         (robota --resume {session_id} --fork, or fork_session: true). Lock file: {}",
        path.display()
    )
}

/// A held session write lock. Dropping it releases the lock (see [`SessionLock::release`]).
#[derive(Debug)]
pub struct SessionLock {
    file: Option<File>,
    path: PathBuf,
    session_id: String,
    holder: LockHolder,
    previous: Option<LockHolder>,
}

impl SessionLock {
    /// Locks session `session_id` through the lock file at `path` (its directory must exist),
    /// without waiting: [`LockError::Held`] when another writer — in this or another process —
    /// holds it.
    pub fn acquire(path: &Path, session_id: &str) -> Result<SessionLock, LockError> {
        let io_error = |op: &'static str| {
            let path = path.to_path_buf();
            move |source: io::Error| LockError::Io { op, path, source }
        };
        // A few rounds at most: each retry means a holder released the lock between our open
        // and our lock, which does not keep happening.
        for _ in 0..16 {
            let mut file = open_lock_file(path).map_err(io_error("open"))?;
            match file.try_lock() {
                Ok(()) => {}
                Err(TryLockError::WouldBlock) => {
                    return Err(LockError::Held {
                        session_id: session_id.to_string(),
                        path: path.to_path_buf(),
                        holder: read_live_record(&mut file),
                    });
                }
                Err(TryLockError::Error(error)) if error.kind() == io::ErrorKind::Unsupported => {
                    return acquire_by_record(file, path, session_id);
                }
                Err(TryLockError::Error(error)) => return Err(io_error("lock")(error)),
            }
            if !still_names(&file, path) {
                // Released (and removed) by its holder after we opened it: try again.
                continue;
            }
            let previous = read_record(&mut file);
            let holder = LockHolder::current();
            write_record(&mut file, &holder).map_err(io_error("write"))?;
            return Ok(SessionLock {
                file: Some(file),
                path: path.to_path_buf(),
                session_id: session_id.to_string(),
                holder,
                previous,
            });
        }
        Err(LockError::Io {
            op: "lock",
            path: path.to_path_buf(),
            source: io::Error::other("the lock file kept being replaced while locking it"),
        })
    }

    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The session it locks.
    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    /// This process's record, as written into the lock file.
    pub fn holder(&self) -> &LockHolder {
        &self.holder
    }

    /// The record of a previous writer found in the lock file: a writer that ended without
    /// releasing the lock (it was killed or crashed), whose stale lock this one took over.
    pub fn previous_holder(&self) -> Option<&LockHolder> {
        self.previous.as_ref()
    }

    /// Releases the lock: removes the lock file while still holding it, then closes it (which
    /// drops the OS lock). Called by `drop`; calling it twice does nothing.
    pub fn release(&mut self) {
        let Some(file) = self.file.take() else {
            return;
        };
        #[cfg(unix)]
        {
            // Only while the path still names our file (it always should).
            if still_names(&file, &self.path) {
                let _ = fs::remove_file(&self.path);
            }
        }
        #[cfg(not(unix))]
        {
            // The file stays (Windows refuses to remove an open file in some setups); an empty
            // record reads as "no previous writer".
            let _ = file.set_len(0);
        }
        drop(file);
    }
}

impl Drop for SessionLock {
    fn drop(&mut self) {
        self.release();
    }
}

fn open_lock_file(path: &Path) -> io::Result<File> {
    let mut open = OpenOptions::new();
    open.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        open.mode(0o600);
    }
    open.open(path)
}

/// True when `path` still names the file `file` has open (it was not removed or replaced).
fn still_names(file: &File, path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        match (file.metadata(), fs::metadata(path)) {
            (Ok(open), Ok(named)) => open.dev() == named.dev() && open.ino() == named.ino(),
            _ => false,
        }
    }
    #[cfg(not(unix))]
    {
        // The file is never removed on release there.
        let _ = (file, path);
        true
    }
}

fn read_record(file: &mut File) -> Option<LockHolder> {
    let mut text = String::new();
    file.seek(SeekFrom::Start(0)).ok()?;
    file.take(MAX_RECORD_BYTES).read_to_string(&mut text).ok()?;
    serde_json::from_str(text.trim()).ok()
}

/// The record of the process holding the lock. A holder that has just taken the lock over
/// writes its record right after locking, so a record missing or naming a process that is gone
/// is read again for a moment; after that the holder is unknown rather than misnamed.
fn read_live_record(file: &mut File) -> Option<LockHolder> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_millis(200);
    loop {
        let record = read_record(file).filter(|holder| holder.is_alive() != Some(false));
        if record.is_some() || std::time::Instant::now() >= deadline {
            return record;
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
}

fn write_record(file: &mut File, holder: &LockHolder) -> io::Result<()> {
    let mut text = serde_json::to_string(holder).map_err(io::Error::other)?;
    text.push('\n');
    file.set_len(0)?;
    file.seek(SeekFrom::Start(0))?;
    file.write_all(text.as_bytes())
}

/// The fallback for file systems without advisory locks: the record alone decides.
fn acquire_by_record(
    mut file: File,
    path: &Path,
    session_id: &str,
) -> Result<SessionLock, LockError> {
    let previous = read_record(&mut file);
    if let Some(holder) = &previous {
        if !holder.is_current_process() && holder.is_alive() != Some(false) {
            return Err(LockError::Held {
                session_id: session_id.to_string(),
                path: path.to_path_buf(),
                holder: previous,
            });
        }
    }
    let holder = LockHolder::current();
    write_record(&mut file, &holder).map_err(|source| LockError::Io {
        op: "write",
        path: path.to_path_buf(),
        source,
    })?;
    Ok(SessionLock {
        file: Some(file),
        path: path.to_path_buf(),
        session_id: session_id.to_string(),
        holder,
        previous,
    })
}

/// The host name, or an empty string when the system does not say.
fn host_name() -> String {
    #[cfg(unix)]
    {
        let mut buffer = [0u8; 256];
        // SAFETY: the buffer is valid for its length; gethostname NUL-terminates what fits.
        let result = unsafe { libc::gethostname(buffer.as_mut_ptr().cast(), buffer.len()) };
        if result != 0 {
            return String::new();
        }
        let end = buffer.iter().position(|b| *b == 0).unwrap_or(buffer.len());
        String::from_utf8_lossy(&buffer[..end]).into_owned()
    }
    #[cfg(not(unix))]
    {
        std::env::var("COMPUTERNAME").unwrap_or_default()
    }
}

/// Whether a process with this pid exists (`None`: cannot tell on this system).
fn process_exists(pid: u32) -> Option<bool> {
    #[cfg(unix)]
    {
        let Ok(pid) = libc::pid_t::try_from(pid) else {
            return Some(false);
        };
        // SAFETY: signal 0 sends nothing; it only checks whether the process exists.
        let exists = unsafe { libc::kill(pid, 0) } == 0
            || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
        Some(exists)
    }
    #[cfg(not(unix))]
    {
        let _ = pid;
        None
    }
}

/// When process `pid` started, in clock ticks since boot (Linux), or `None`.
fn process_start_time(pid: u32) -> Option<u64> {
    #[cfg(target_os = "linux")]
    {
        let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // The command name (field 2) may hold spaces and parentheses: count from its end.
        let after_name = &stat[stat.rfind(')')? + 1..];
        // Field 22 (starttime) is the 20th after the name.
        after_name.split_whitespace().nth(19)?.parse().ok()
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = pid;
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_in_the_same_process_is_refused_and_release_frees_it() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("s.lock");
        let mut first = SessionLock::acquire(&path, "s").unwrap_or_else(|e| panic!("{e}"));
        assert!(first.previous_holder().is_none());
        match SessionLock::acquire(&path, "s") {
            Err(LockError::Held { holder, .. }) => {
                let holder = holder.unwrap_or_else(|| panic!("no holder record"));
                assert_eq!(holder.pid, std::process::id());
                assert!(holder.is_current_process());
            }
            other => panic!("expected Held, got {other:?}"),
        }
        first.release();
        assert!(!path.exists(), "release removes the lock file");
        let second = SessionLock::acquire(&path, "s").unwrap_or_else(|e| panic!("{e}"));
        assert!(second.previous_holder().is_none());
    }

    #[test]
    fn a_stale_record_is_taken_over_and_reported() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("s.lock");
        let stale = LockHolder {
            pid: u32::MAX - 7,
            host: host_name(),
            since: "2026-01-01T00:00:00.000Z".into(),
            process_start: None,
        };
        fs::write(&path, serde_json::to_string(&stale).unwrap_or_default())
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(stale.is_alive(), Some(false));
        let lock = SessionLock::acquire(&path, "s").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(lock.previous_holder(), Some(&stale));
        let written: LockHolder =
            serde_json::from_str(&fs::read_to_string(&path).unwrap_or_default())
                .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(written.pid, std::process::id());
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn this_process_has_a_start_time() {
        assert!(process_start_time(std::process::id()).is_some());
        assert_eq!(LockHolder::current().is_alive(), Some(true));
    }
}
