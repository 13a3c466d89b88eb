//! The output budget: long tool output keeps its head and tail around an exact
//! "N lines / M bytes omitted" marker, and the full output goes to a file the model can read.
//!
//! Why head *and* tail: the start of an output says what ran, the end says how it finished
//! (compiler errors, test summaries); the middle is usually repetition. Cuts fall on line boundaries
//! when a line boundary is near, and never inside a UTF-8 sequence. The counts in the marker are
//! exact so the model can page through the spill file with Read's `offset`/`limit`.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use super::workspace::SessionDir;

/// Limits on what a tool returns to the model, configurable per session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutputLimit {
    /// Bytes of text a tool result may hold before it is cut to head + tail (Bash, Grep, Glob,
    /// WebFetch, WebSearch). Default 30 000, the size Claude Code's tools use.
    pub max_bytes: usize,
    /// Bytes of numbered lines one Read call may return. Read pages instead of spilling (the file
    /// itself is the full output), stopping at this budget and saying which `offset` continues.
    /// Default 100 000 (about 25k tokens, Claude Code's Read budget).
    pub read_max_bytes: usize,
}

impl Default for OutputLimit {
    fn default() -> Self {
        OutputLimit {
            max_bytes: 30_000,
            read_max_bytes: 100_000,
        }
    }
}

/// The shown part of an output and what was left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Cut {
    /// Head, and when truncated the tail (without the marker; see [`Cut::render`]).
    pub head: String,
    /// Tail; empty when not truncated.
    pub tail: String,
    /// True when something was left out.
    pub truncated: bool,
    /// Size of the whole output.
    pub total_bytes: u64,
    /// Lines in the whole output (a final line without newline counts).
    pub total_lines: u64,
    /// Bytes left out.
    pub omitted_bytes: u64,
    /// Newline-terminated lines left out (exact when both cuts fell on line boundaries, which they
    /// do unless a single line is longer than half the budget).
    pub omitted_lines: u64,
}

impl Cut {
    /// The text for the model: head, marker, tail. `spill` is where the full output is.
    pub fn render(&self, spill: Option<&Path>) -> String {
        if !self.truncated {
            return self.head.clone();
        }
        let mut out = String::with_capacity(self.head.len() + self.tail.len() + 300);
        out.push_str(&self.head);
        if !out.ends_with('\n') {
            out.push('\n');
        }
        out.push_str(&format!(
            "[... {} lines / {} bytes omitted ...",
            self.omitted_lines, self.omitted_bytes
        ));
        match spill {
            Some(path) => out.push_str(&format!(
                " full output ({} lines, {} bytes) saved to {} — use Read with offset/limit or \
                 Grep on that file to see the rest]\n",
                self.total_lines,
                self.total_bytes,
                path.display()
            )),
            None => out.push_str("]\n"),
        }
        out.push_str(&self.tail);
        out
    }
}

/// Cuts in-memory output to `max_bytes` (head half, tail half).
pub(crate) fn cut_bytes(data: &[u8], max_bytes: usize) -> Cut {
    let total_bytes = data.len() as u64;
    let total_lines = count_lines(data);
    if data.len() <= max_bytes {
        return Cut {
            head: String::from_utf8_lossy(data).into_owned(),
            tail: String::new(),
            truncated: false,
            total_bytes,
            total_lines,
            omitted_bytes: 0,
            omitted_lines: 0,
        };
    }
    let (head_budget, tail_budget) = split_budget(max_bytes);
    let head_end = head_cut(&data[..head_budget]);
    let tail_region_start = data.len() - tail_budget;
    let tail_start = tail_region_start + tail_skip(&data[tail_region_start..]);
    let omitted = &data[head_end..tail_start];
    Cut {
        head: String::from_utf8_lossy(&data[..head_end]).into_owned(),
        tail: String::from_utf8_lossy(&data[tail_start..]).into_owned(),
        truncated: true,
        total_bytes,
        total_lines,
        omitted_bytes: omitted.len() as u64,
        omitted_lines: memchr::memchr_iter(b'\n', omitted).count() as u64,
    }
}

/// Cuts a file's content to `max_bytes` without loading the middle into memory.
pub(crate) fn cut_file(path: &Path, max_bytes: usize) -> io::Result<Cut> {
    let mut file = File::open(path)?;
    let len = file.metadata()?.len();
    if len <= max_bytes as u64 {
        let mut data = Vec::with_capacity(len as usize);
        file.read_to_end(&mut data)?;
        return Ok(cut_bytes(&data, max_bytes));
    }
    let (head_budget, tail_budget) = split_budget(max_bytes);
    let mut head = vec![0; head_budget];
    file.read_exact(&mut head)?;
    let head_end = head_cut(&head) as u64;
    let tail_region_start = len - tail_budget as u64;
    file.seek(SeekFrom::Start(tail_region_start))?;
    let mut tail = vec![0; tail_budget];
    file.read_exact(&mut tail)?;
    let skip = tail_skip(&tail);
    let tail_start = tail_region_start + skip as u64;

    // Count the newlines of the whole file and of the omitted middle in one streaming pass.
    file.seek(SeekFrom::Start(0))?;
    let mut buf = vec![0; 256 * 1024];
    let (mut pos, mut total_newlines, mut omitted_newlines) = (0u64, 0u64, 0u64);
    let mut last_byte = None;
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        let chunk = &buf[..n];
        for i in memchr::memchr_iter(b'\n', chunk) {
            let at = pos + i as u64;
            total_newlines += 1;
            if at >= head_end && at < tail_start {
                omitted_newlines += 1;
            }
        }
        last_byte = chunk.last().copied();
        pos += n as u64;
    }
    let total_lines = total_newlines + u64::from(last_byte.is_some_and(|b| b != b'\n'));
    Ok(Cut {
        head: String::from_utf8_lossy(&head[..head_end as usize]).into_owned(),
        tail: String::from_utf8_lossy(&tail[skip..]).into_owned(),
        truncated: true,
        total_bytes: pos,
        total_lines,
        omitted_bytes: tail_start.saturating_sub(head_end),
        omitted_lines: omitted_newlines,
    })
}

/// Fits `text` to `max_bytes`; when it is too long, writes the whole text to a new file in the
/// session's spill directory and names it in the marker (with a note when older spill files had
/// to be removed to stay under the session's limit). Returns the text and the spill path.
pub(crate) fn fit_text(
    text: &str,
    max_bytes: usize,
    session_dir: &SessionDir,
    stem: &str,
) -> (String, Option<PathBuf>) {
    let cut = cut_bytes(text.as_bytes(), max_bytes);
    if !cut.truncated {
        return (cut.head, None);
    }
    let spill = session_dir
        .new_spill_path(stem, "txt")
        .ok()
        .filter(|path| std::fs::write(path, text.as_bytes()).is_ok());
    let mut shown = cut.render(spill.as_deref());
    if let Some(path) = &spill {
        if let Some(note) = session_dir.enforce_spill_limit(&[path]).note() {
            if !shown.ends_with('\n') {
                shown.push('\n');
            }
            shown.push_str(&note);
        }
    }
    (shown, spill)
}

fn split_budget(max_bytes: usize) -> (usize, usize) {
    let max_bytes = max_bytes.max(2);
    let head = max_bytes / 2;
    (head, max_bytes - head)
}

/// Where the head ends: after the last newline when it is in the second half of the region,
/// otherwise at the last UTF-8 boundary (a single very long line).
fn head_cut(region: &[u8]) -> usize {
    if let Some(nl) = memchr::memrchr(b'\n', region) {
        if nl + 1 >= region.len() / 2 {
            return nl + 1;
        }
    }
    utf8_floor(region)
}

/// The largest prefix length of `region` that does not end inside a UTF-8 sequence.
fn utf8_floor(region: &[u8]) -> usize {
    let len = region.len();
    for p in (len.saturating_sub(4)..len).rev() {
        if !is_continuation(region[p]) {
            return if sequence_len(region[p]) > len - p {
                p
            } else {
                len
            };
        }
    }
    len
}

/// How many bytes of the tail region to skip: up to the first newline when it is in the first half,
/// otherwise past any continuation bytes.
fn tail_skip(region: &[u8]) -> usize {
    if let Some(nl) = memchr::memchr(b'\n', region) {
        if nl < region.len() / 2 {
            return nl + 1;
        }
    }
    let mut start = 0;
    while start < region.len() && start < 4 && is_continuation(region[start]) {
        start += 1;
    }
    start
}

fn is_continuation(byte: u8) -> bool {
    byte & 0xC0 == 0x80
}

fn sequence_len(lead: u8) -> usize {
    match lead {
        0x00..=0x7F => 1,
        0xC0..=0xDF => 2,
        0xE0..=0xEF => 3,
        0xF0..=0xF7 => 4,
        _ => 1,
    }
}

fn count_lines(data: &[u8]) -> u64 {
    let newlines = memchr::memchr_iter(b'\n', data).count() as u64;
    newlines + u64::from(data.last().is_some_and(|b| *b != b'\n'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_output_is_untouched() {
        let cut = cut_bytes(b"a\nb\n", 100);
        assert!(!cut.truncated);
        assert_eq!(cut.head, "a\nb\n");
        assert_eq!(cut.total_lines, 2);
    }

    #[test]
    fn long_output_keeps_whole_lines_and_counts_exactly() {
        let text: String = (1..=1000).map(|i| format!("line {i:04}\n")).collect();
        let cut = cut_bytes(text.as_bytes(), 200);
        assert!(cut.truncated);
        assert!(cut.head.starts_with("line 0001\n") && cut.head.ends_with('\n'));
        assert!(cut.tail.ends_with("line 1000\n") && cut.tail.starts_with("line "));
        let shown = cut.head.lines().count() + cut.tail.lines().count();
        assert_eq!(shown as u64 + cut.omitted_lines, 1000);
        assert_eq!(
            cut.head.len() as u64 + cut.tail.len() as u64 + cut.omitted_bytes,
            text.len() as u64
        );
    }

    #[test]
    fn never_splits_utf8() {
        let text = "é".repeat(1000); // one long line of 2-byte characters
        for budget in [7, 8, 9, 10, 101] {
            let cut = cut_bytes(text.as_bytes(), budget);
            assert!(!cut.head.contains('\u{FFFD}'), "budget {budget}");
            assert!(!cut.tail.contains('\u{FFFD}'), "budget {budget}");
            assert_eq!(
                cut.head.len() as u64 + cut.tail.len() as u64 + cut.omitted_bytes,
                text.len() as u64
            );
        }
        let text = "😀".repeat(500);
        for budget in [7, 8, 9, 10, 11, 101] {
            let cut = cut_bytes(text.as_bytes(), budget);
            assert!(!cut.head.contains('\u{FFFD}'), "budget {budget}");
            assert!(!cut.tail.contains('\u{FFFD}'), "budget {budget}");
        }
    }

    #[test]
    fn file_cut_matches_memory_cut() {
        let text: String = (1..=5000)
            .map(|i| format!("row {i}: {}\n", "x".repeat(i % 50)))
            .collect();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.txt");
        std::fs::write(&path, &text).unwrap();
        assert_eq!(
            cut_file(&path, 3000).unwrap(),
            cut_bytes(text.as_bytes(), 3000)
        );
    }
}
