//! File helpers shared by Read, Write and Edit: atomic replacement, binary sniffing, line endings.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::Path;

/// How many leading bytes decide whether a file is binary (the same window git and ripgrep use).
pub(crate) const SNIFF_BYTES: usize = 8192;

/// Replaces `path` with `data` so that readers see either the old or the new content, never a
/// half-written file: the data goes to a temporary file in the same directory (same filesystem,
/// so the rename is atomic), is flushed to disk, takes over the old file's permission bits, and is
/// renamed over the target. Missing parent directories are created.
///
/// Returns true when the file already existed.
pub(crate) fn atomic_write(path: &Path, data: &[u8]) -> io::Result<bool> {
    let parent = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    fs::create_dir_all(parent)?;
    let existing = match fs::metadata(path) {
        Ok(meta) if meta.is_dir() => {
            return Err(io::Error::new(
                io::ErrorKind::IsADirectory,
                "the path is a directory",
            ))
        }
        Ok(meta) => Some(meta.permissions()),
        Err(err) if err.kind() == io::ErrorKind::NotFound => None,
        Err(err) => return Err(err),
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "file".into());
    let temp = parent.join(format!(
        ".{name}.robota-tmp-{}",
        &uuid::Uuid::new_v4().simple().to_string()[..12]
    ));
    let result = (|| {
        let mut options = OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        {
            // New files get the usual 0666 & !umask; existing modes are copied below.
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o666);
        }
        let mut file = options.open(&temp)?;
        file.write_all(data)?;
        if let Some(permissions) = &existing {
            file.set_permissions(permissions.clone())?;
        }
        file.sync_all()?;
        drop(file);
        fs::rename(&temp, path)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&temp);
    }
    result.map(|()| existing.is_some())
}

/// True when `sample` (the first bytes of a file) looks like binary data: it has a NUL byte, or
/// more than 10% of it is control characters or invalid UTF-8. Latin-1 text with a few accented
/// letters stays text.
pub(crate) fn looks_binary(sample: &[u8]) -> bool {
    if sample.is_empty() {
        return false;
    }
    if memchr::memchr(0, sample).is_some() {
        return true;
    }
    let controls = sample
        .iter()
        .filter(|&&b| (b < 0x20 && !matches!(b, b'\t' | b'\n' | b'\r' | 0x0c | 0x1b)) || b == 0x7f)
        .count();
    let invalid = invalid_utf8_bytes(sample);
    (controls + invalid) * 10 > sample.len()
}

/// Number of bytes in invalid UTF-8 sequences (an incomplete sequence cut off at the end of the
/// sample does not count: the sample boundary may split a character).
pub(crate) fn invalid_utf8_bytes(mut data: &[u8]) -> usize {
    let mut invalid = 0;
    loop {
        match std::str::from_utf8(data) {
            Ok(_) => return invalid,
            Err(err) => match err.error_len() {
                Some(len) => {
                    invalid += len;
                    data = &data[err.valid_up_to() + len..];
                }
                None => return invalid,
            },
        }
    }
}

/// The line-ending convention of a text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LineEnding {
    Lf,
    CrLf,
}

impl LineEnding {
    /// CRLF when most line breaks are CRLF (a file with mixed endings keeps its majority).
    pub fn detect(text: &str) -> LineEnding {
        let crlf = text.matches("\r\n").count();
        let lf = memchr::memchr_iter(b'\n', text.as_bytes()).count();
        if crlf > 0 && crlf * 2 >= lf {
            LineEnding::CrLf
        } else {
            LineEnding::Lf
        }
    }
}

/// Turns every lone `\n` into `\r\n` (existing `\r\n` pairs are left alone).
pub(crate) fn lf_to_crlf(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 16);
    let mut prev = '\0';
    for c in text.chars() {
        if c == '\n' && prev != '\r' {
            out.push('\r');
        }
        out.push(c);
        prev = c;
    }
    out
}

/// 1-based line number of byte offset `at` in `text`.
pub(crate) fn line_of(text: &str, at: usize) -> usize {
    memchr::memchr_iter(b'\n', &text.as_bytes()[..at.min(text.len())]).count() + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_sniffing() {
        assert!(looks_binary(b"abc\0def"));
        assert!(!looks_binary("plain text\nwith é\n".as_bytes()));
        assert!(!looks_binary(b"caf\xe9 latin-1 text is mostly ascii"));
        assert!(looks_binary(&[
            0xff, 0xfe, 0x01, 0x02, 0x80, 0x90, 0xa0, 0x03
        ]));
    }

    #[test]
    fn crlf_conversion_keeps_existing_pairs() {
        assert_eq!(lf_to_crlf("a\nb\r\nc"), "a\r\nb\r\nc");
        assert_eq!(LineEnding::detect("a\r\nb\r\n"), LineEnding::CrLf);
        assert_eq!(LineEnding::detect("a\nb\n"), LineEnding::Lf);
    }

    #[test]
    fn atomic_write_preserves_mode() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a/b/file.sh");
        assert!(!atomic_write(&path, b"one").unwrap());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            fs::set_permissions(&path, fs::Permissions::from_mode(0o751)).unwrap();
            assert!(atomic_write(&path, b"two").unwrap());
            let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o751);
        }
        assert_eq!(fs::read_to_string(&path).unwrap(), "two");
        let leftovers: Vec<_> = fs::read_dir(path.parent().unwrap())
            .unwrap()
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().contains("robota-tmp"))
            .collect();
        assert!(leftovers.is_empty());
    }
}
