//! Reading the files robota reads on its own — settings, instruction files (AGENTS.md,
//! CLAUDE.md), `@file` references, agent definitions, scripted-turns and replay files, session
//! snapshots and logs — so that a hostile or broken path can neither hang nor exhaust the
//! process.
//!
//! Every such file must be a **regular file**, and each kind has a **size cap**. A settings path
//! that is a FIFO would block `open(2)` forever; one that is (or links to) `/dev/zero` would be
//! read until memory runs out. Here:
//!
//! 1. the path is checked with `stat(2)` first, so a device or FIFO is normally refused without
//!    being opened at all;
//! 2. it is opened with `O_NONBLOCK | O_NOCTTY`, so even a FIFO swapped in after that check cannot
//!    block the open, and no terminal becomes the process's controlling terminal;
//! 3. the *opened* descriptor is checked with `fstat(2)` (no race with the path changing again):
//!    anything but a regular file is refused, and so is a file already larger than its cap;
//! 4. at most cap + 1 bytes are read, so a file that grows while it is read is still refused
//!    instead of being read without bound.
//!
//! Errors ([`FileError`]) name the kind of file, the path and the problem, e.g. "settings file
//! /p/.claude/settings.json is 3.2 MiB; the limit is 1 MiB". Whether a problem stops start-up or
//! is a warning is the caller's decision, per kind:
//!
//! | kind | cap | refused file |
//! |---|---|---|
//! | [`SETTINGS_FILE`] (the six `settings.json` layers, `--settings`) | 1 MiB | error, as other settings errors |
//! | [`INSTRUCTION_FILE`] (AGENTS.md, CLAUDE.md, their local and user variants, MEMORY.md) | 1 MiB | warning; the file is skipped |
//! | `@file` references | [`FileRefOptions::max_file_bytes`](crate::framework::context::FileRefOptions) (64 KiB) | blocks the prompt when typed; warning when nested |
//! | task files (`.agents/tasks/*.md`) | first [`MAX_TASK_FILE_BYTES`](crate::framework::context::MAX_TASK_FILE_BYTES) read | skipped |
//! | [`AGENT_DEFINITION_FILE`] (`.claude/agents/*.md`, …) | 1 MiB | error, as other definition errors |
//! | [`SCRIPTED_TURNS_FILE`] (a scripted provider's `options.file`) | 16 MiB | error |
//! | [`REPLAY_LOG_FILE`] (a replay provider's log) | 256 MiB | error |
//! | [`SESSION_SNAPSHOT_FILE`] (`.robota/sessions/<id>.json`) | 256 MiB | error |
//! | session logs (`.robota/logs/<id>.jsonl`) | regular file only (read as a stream) | error |
//!
//! Hook output is not a file: it is read from pipes, capped by
//! [`HookRunnerOptions::output_limit`](crate::hooks::HookRunnerOptions) (see [`crate::hooks`]).
//!
//! This module sits below every other layer (it depends on nothing in the crate), so each layer
//! that reads a file uses the same rules.

use std::fmt;
use std::fs::{self, File};
use std::io::{self, Read};
use std::path::{Path, PathBuf};

const KIB: u64 = 1024;
const MIB: u64 = 1024 * KIB;

/// A kind of file robota reads, with its size cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileKind {
    /// How errors name the file (`settings file`, `agent definition file`, …).
    pub what: &'static str,
    /// The largest accepted size in bytes.
    pub max_bytes: u64,
}

impl FileKind {
    /// A kind named `what` whose files may hold at most `max_bytes`.
    pub const fn new(what: &'static str, max_bytes: u64) -> Self {
        FileKind { what, max_bytes }
    }
}

/// Settings files (`settings.json`, `settings.local.json`, the CLI's `--settings`): 1 MiB. Real
/// settings are a few KiB; this leaves room for long permission lists.
pub const SETTINGS_FILE: FileKind = FileKind::new("settings file", MIB);
/// MCP server files (`.mcp.json`, `--mcp-config`): 1 MiB.
pub const MCP_CONFIG_FILE: FileKind = FileKind::new("MCP server file", MIB);
/// Instruction files (AGENTS.md, CLAUDE.md and variants, MEMORY.md): 1 MiB. Only a budget of
/// them reaches the prompt; the cap bounds what is read to find it.
pub const INSTRUCTION_FILE: FileKind = FileKind::new("instruction file", MIB);
/// Agent definition files (`.claude/agents/*.md`, …): 1 MiB.
pub const AGENT_DEFINITION_FILE: FileKind = FileKind::new("agent definition file", MIB);
/// A scripted provider's turns file: 16 MiB.
pub const SCRIPTED_TURNS_FILE: FileKind = FileKind::new("scripted turns file", 16 * MIB);
/// A recorded session log replayed by the replay provider: 256 MiB.
pub const REPLAY_LOG_FILE: FileKind = FileKind::new("replay log", 256 * MIB);
/// A session snapshot (`.robota/sessions/<id>.json`): 256 MiB.
pub const SESSION_SNAPSHOT_FILE: FileKind = FileKind::new("session snapshot", 256 * MIB);
/// A session log (`.robota/logs/<id>.jsonl`): read as a stream, one line at a time, so only the
/// file type is checked here.
pub const SESSION_LOG_FILE: FileKind = FileKind::new("session log", u64::MAX);

/// Why a file was not read. Every variant names the kind of file and its path.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FileError {
    /// Opening or reading failed (including "not found"; see [`FileError::is_not_found`]).
    #[error("cannot read {what} {}: {source}", path.display())]
    Io {
        /// The kind of file.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// The operating-system error.
        #[source]
        source: io::Error,
    },
    /// The path names a FIFO, device, socket or directory.
    #[error(
        "{what} {} is {file_type}, not a regular file; robota reads only regular files here",
        path.display()
    )]
    NotRegular {
        /// The kind of file.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// What it is instead (`a FIFO (named pipe)`, `a character device`, …).
        file_type: &'static str,
    },
    /// The file is larger than its kind's cap.
    #[error(
        "{what} {} is {}; the limit is {}",
        path.display(),
        size.map_or_else(|| format!("larger than {}", human_size(*limit)), human_size),
        human_size(*limit)
    )]
    TooLarge {
        /// The kind of file.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// Its size, when known (`None`: it grew past the cap while it was read).
        size: Option<u64>,
        /// The cap.
        limit: u64,
    },
    /// The file should hold text but is not UTF-8.
    #[error(
        "{what} {} is not valid UTF-8 text (invalid bytes at offset {valid_up_to})",
        path.display()
    )]
    NotUtf8 {
        /// The kind of file.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// Length of the valid prefix.
        valid_up_to: usize,
    },
}

impl FileError {
    /// True when the file does not exist (callers usually skip missing optional files).
    pub fn is_not_found(&self) -> bool {
        matches!(self, FileError::Io { source, .. } if source.kind() == io::ErrorKind::NotFound)
    }

    /// The file concerned.
    pub fn path(&self) -> &Path {
        match self {
            FileError::Io { path, .. }
            | FileError::NotRegular { path, .. }
            | FileError::TooLarge { path, .. }
            | FileError::NotUtf8 { path, .. } => path,
        }
    }

    /// The error as an [`io::Error`] for callers whose errors wrap one next to the path: the
    /// message leaves the path out ("it is a FIFO (named pipe), not a regular file; …").
    pub fn into_io_error(self) -> io::Error {
        match self {
            FileError::Io { source, .. } => source,
            FileError::NotRegular {
                file_type, what, ..
            } => io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("it is {file_type}, not a regular file; a {what} must be a regular file"),
            ),
            FileError::TooLarge {
                what, size, limit, ..
            } => io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "it is {}; the limit for a {what} is {}",
                    size.map_or_else(|| format!("larger than {}", human_size(limit)), human_size),
                    human_size(limit)
                ),
            ),
            FileError::NotUtf8 { valid_up_to, .. } => io::Error::new(
                io::ErrorKind::InvalidData,
                format!("it is not valid UTF-8 text (invalid bytes at offset {valid_up_to})"),
            ),
        }
    }

    fn io(kind: &FileKind, path: &Path, source: io::Error) -> Self {
        FileError::Io {
            what: kind.what,
            path: path.to_path_buf(),
            source,
        }
    }
}

/// Opens `path` for reading after checking that it is a regular file within `kind`'s cap (see
/// the module docs for how). Returns the file and its size. Use it for files read as a stream;
/// the caller bounds what it reads.
pub fn open_regular(path: &Path, kind: &FileKind) -> Result<(File, u64), FileError> {
    // A cheap first look: devices and FIFOs are refused without being opened at all.
    let metadata = fs::metadata(path).map_err(|e| FileError::io(kind, path, e))?;
    check_metadata(path, kind, &metadata)?;
    let file = open_nonblocking(path).map_err(|e| FileError::io(kind, path, e))?;
    // The authoritative check, on the descriptor: the path may have changed since.
    let metadata = file.metadata().map_err(|e| FileError::io(kind, path, e))?;
    check_metadata(path, kind, &metadata)?;
    Ok((file, metadata.len()))
}

/// Reads a whole regular file of at most `kind.max_bytes` bytes.
pub fn read_regular(path: &Path, kind: &FileKind) -> Result<Vec<u8>, FileError> {
    let (file, size) = open_regular(path, kind)?;
    let mut bytes = Vec::with_capacity(usize::try_from(size.min(kind.max_bytes)).unwrap_or(0));
    file.take(kind.max_bytes.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| FileError::io(kind, path, e))?;
    if bytes.len() as u64 > kind.max_bytes {
        return Err(FileError::TooLarge {
            what: kind.what,
            path: path.to_path_buf(),
            size: None,
            limit: kind.max_bytes,
        });
    }
    Ok(bytes)
}

/// Reads a whole regular file of at most `kind.max_bytes` bytes as UTF-8 text.
pub fn read_regular_text(path: &Path, kind: &FileKind) -> Result<String, FileError> {
    let bytes = read_regular(path, kind)?;
    String::from_utf8(bytes).map_err(|error| FileError::NotUtf8 {
        what: kind.what,
        path: path.to_path_buf(),
        valid_up_to: error.utf8_error().valid_up_to(),
    })
}

fn check_metadata(path: &Path, kind: &FileKind, metadata: &fs::Metadata) -> Result<(), FileError> {
    if !metadata.is_file() {
        return Err(FileError::NotRegular {
            what: kind.what,
            path: path.to_path_buf(),
            file_type: describe_type(&metadata.file_type()),
        });
    }
    if metadata.len() > kind.max_bytes {
        return Err(FileError::TooLarge {
            what: kind.what,
            path: path.to_path_buf(),
            size: Some(metadata.len()),
            limit: kind.max_bytes,
        });
    }
    Ok(())
}

#[cfg(unix)]
fn open_nonblocking(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    use std::os::unix::io::AsRawFd;
    let file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)?;
    // Back to blocking reads for the regular file the caller gets (a no-op for regular files
    // on Linux, but the descriptor should not surprise anyone who hands it on).
    let fd = file.as_raw_fd();
    // SAFETY: fcntl(2) on a descriptor this function owns; no memory is passed.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags != -1 {
            libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK);
        }
    }
    Ok(file)
}

#[cfg(not(unix))]
fn open_nonblocking(path: &Path) -> io::Result<File> {
    File::open(path)
}

fn describe_type(file_type: &fs::FileType) -> &'static str {
    if file_type.is_dir() {
        return "a directory";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if file_type.is_fifo() {
            return "a FIFO (named pipe)";
        }
        if file_type.is_char_device() {
            return "a character device";
        }
        if file_type.is_block_device() {
            return "a block device";
        }
        if file_type.is_socket() {
            return "a socket";
        }
    }
    "not a regular file"
}

/// `bytes` for people: `512 bytes`, `64 KiB`, `3.2 MiB`.
pub fn human_size(bytes: u64) -> String {
    HumanSize(bytes).to_string()
}

struct HumanSize(u64);

impl fmt::Display for HumanSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let bytes = self.0;
        let (unit, name) = match bytes {
            b if b >= 1024 * MIB => (1024 * MIB, "GiB"),
            b if b >= MIB => (MIB, "MiB"),
            b if b >= KIB => (KIB, "KiB"),
            _ => return write!(f, "{bytes} bytes"),
        };
        let tenths = (u128::from(bytes) * 10 + u128::from(unit) / 2) / u128::from(unit);
        if tenths % 10 == 0 {
            write!(f, "{} {name}", tenths / 10)
        } else {
            write!(f, "{}.{} {name}", tenths / 10, tenths % 10)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(human_size(0), "0 bytes");
        assert_eq!(human_size(1023), "1023 bytes");
        assert_eq!(human_size(1024), "1 KiB");
        assert_eq!(human_size(64 * 1024), "64 KiB");
        assert_eq!(human_size(MIB), "1 MiB");
        assert_eq!(human_size(3 * MIB + MIB / 5), "3.2 MiB");
        assert_eq!(human_size(5 * 1024 * MIB), "5 GiB");
    }

    #[test]
    fn a_regular_file_within_its_cap_is_read() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("a.json");
        fs::write(&path, "{}").expect("write");
        let kind = FileKind::new("test file", 2);
        assert_eq!(read_regular_text(&path, &kind).expect("read"), "{}");
    }

    #[test]
    fn missing_files_are_recognisable() {
        let error = read_regular(Path::new("/nonexistent/x"), &SETTINGS_FILE).expect_err("gone");
        assert!(error.is_not_found(), "{error}");
        assert_eq!(error.path(), Path::new("/nonexistent/x"));
    }

    #[test]
    fn invalid_utf8_is_named() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("latin1.md");
        fs::write(&path, b"ab\xff").expect("write");
        let error = read_regular_text(&path, &INSTRUCTION_FILE).expect_err("not utf-8");
        assert!(error.to_string().contains("offset 2"), "{error}");
    }

    #[cfg(unix)]
    #[test]
    fn devices_directories_and_fifos_are_refused_without_blocking() {
        let dir = tempfile::tempdir().expect("tempdir");
        let error = read_regular(Path::new("/dev/zero"), &SETTINGS_FILE).expect_err("device");
        assert!(
            error.to_string().contains("is a character device"),
            "{error}"
        );
        let link = dir.path().join("zero.json");
        std::os::unix::fs::symlink("/dev/zero", &link).expect("symlink");
        let error = read_regular(&link, &SETTINGS_FILE).expect_err("link to a device");
        assert!(matches!(error, FileError::NotRegular { .. }), "{error}");
        let error = read_regular(dir.path(), &SETTINGS_FILE).expect_err("directory");
        assert!(error.to_string().contains("is a directory"), "{error}");

        let fifo = dir.path().join("fifo.json");
        let c_path = std::ffi::CString::new(fifo.to_string_lossy().as_bytes()).expect("path");
        // SAFETY: mkfifo(3) with a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
        let error = read_regular(&fifo, &SETTINGS_FILE).expect_err("fifo");
        assert!(error.to_string().contains("FIFO"), "{error}");
        // The descriptor check alone (as when the path is swapped after the first look) also
        // refuses a FIFO without blocking on open.
        let file = open_nonblocking(&fifo).expect("non-blocking open of a FIFO");
        let metadata = file.metadata().expect("fstat");
        assert!(check_metadata(&fifo, &SETTINGS_FILE, &metadata).is_err());
    }
}
