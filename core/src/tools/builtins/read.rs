//! `Read`: a window of a text file as `cat -n` numbered lines, with the range and total so the
//! model knows where it is and how to continue.

use std::fs::File;
use std::io::{BufRead, BufReader, Read as _};
use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{json, Value};

use super::fsutil::{self, SNIFF_BYTES};
use super::schema::{Field, Input, InputSchema, Kind};
use super::workspace::Access;
use super::{blocking, Builtins, Shared};
use crate::tools::{Tool, ToolContext, ToolOutput};

/// Lines returned when the call gives no `limit`.
pub const DEFAULT_READ_LIMIT: usize = 2000;
/// Characters kept of one line; longer lines are shortened with a note.
pub const MAX_LINE_CHARS: usize = 2000;

const SCHEMA: InputSchema = InputSchema {
    tool: "Read",
    fields: &[
        Field {
            name: "file_path",
            aliases: &["filePath", "path"],
            kind: Kind::String,
            required: true,
            description: "The absolute path to the file to read (relative paths resolve against \
                          the working directory)",
        },
        Field {
            name: "offset",
            aliases: &[],
            kind: Kind::Integer { min: 0 },
            required: false,
            description: "The line number to start reading from (1-based). Only provide if the \
                          file is too large to read at once",
        },
        Field {
            name: "limit",
            aliases: &[],
            kind: Kind::Integer { min: 1 },
            required: false,
            description: "The number of lines to read (default 2000). Only provide if the file is \
                          too large to read at once",
        },
    ],
};

const DESCRIPTION: &str = "Reads a text file from the workspace. Returns up to 2000 lines from \
the start by default, numbered like `cat -n` (line number, tab, text), under a header with the \
range and total line count.\n\
\n\
- `file_path` should be absolute; relative paths resolve against the working directory.\n\
- For large files pass `offset` (1-based line) and `limit`; the footer says which offset continues.\n\
- Lines longer than 2000 characters are shortened. Line numbers are not part of the file: do not \
include them in Edit's old_string.\n\
- Binary files are refused; images and PDFs are not supported yet. To list a directory use Glob \
or Bash `ls`.\n\
- Files named in a truncated tool output (the full output of a long command) can be read here.";

blocking_file_tool!(
    /// The `Read` tool.
    ReadTool, name = "Read", read_only = true, run = read
);

fn read(shared: &Shared, input: &Input, context: &ToolContext) -> ToolOutput {
    let raw = input.string("file_path");
    let resolved = match shared.workspace.resolve(&context.cwd, &raw, Access::Read) {
        Ok(resolved) => resolved,
        Err(message) => return ToolOutput::error(message),
    };
    let shown = resolved.display.display().to_string();
    let offset = input.int("offset").unwrap_or(1).max(1) as usize;
    let limit = input
        .int("limit")
        .map(|l| l as usize)
        .unwrap_or(DEFAULT_READ_LIMIT);
    match shared.host_text(&resolved.real) {
        Ok(Some(text)) => {
            // The host's (an editor's) copy, unsaved changes included.
            let size = text.len() as u64;
            let window = window_of(text.as_bytes(), offset, limit, shared.limit.read_max_bytes);
            return match window {
                Ok(window) => render(window, &shown, offset, size),
                Err(WindowError::Binary) => ToolOutput::error(format!(
                    "{shown} looks like binary data ({size} bytes), so Read will not show it."
                )),
                Err(WindowError::Io(err)) => {
                    ToolOutput::error(format!("Cannot read {shown}: {err}"))
                }
            };
        }
        Ok(None) => {}
        Err(message) => return ToolOutput::error(format!("Cannot read {shown}: {message}")),
    }
    let meta = match std::fs::metadata(&resolved.real) {
        Ok(meta) => meta,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            let mut message = missing_file_message(&resolved.real, &shown, context);
            let spilled = shared
                .workspace
                .session_dir()
                .existing_spill_dir()
                .is_some_and(|dir| resolved.real.starts_with(dir));
            if spilled {
                message.push_str(
                    " It was a saved tool output of this session: the oldest are removed when \
                     they exceed the session's limit. Run the command again to see its output.",
                );
            }
            return ToolOutput::error(message);
        }
        Err(err) => return ToolOutput::error(format!("Cannot read {shown}: {err}")),
    };
    if meta.is_dir() {
        return ToolOutput::error(format!(
            "{shown} is a directory, not a file. List it with Glob (pattern \"{}/*\") or Bash `ls`.",
            shown.trim_end_matches('/')
        ));
    }
    if !meta.is_file() {
        return ToolOutput::error(format!(
            "{shown} is not a regular file (a device, socket or pipe), so Read will not open it."
        ));
    }
    if let Some(kind) = unsupported_kind(&resolved.real) {
        return ToolOutput::error(format!(
            "{shown} is {kind} ({} bytes). Reading {kind_plural} is not supported yet by Read; \
             only text files can be read.",
            meta.len(),
            kind_plural = if kind == "a PDF document" {
                "PDF documents"
            } else {
                "images"
            }
        ));
    }
    match read_window(&resolved.real, offset, limit, shared.limit.read_max_bytes) {
        Ok(window) => render(window, &shown, offset, meta.len()),
        Err(WindowError::Binary) => ToolOutput::error(format!(
            "{shown} looks like a binary file ({} bytes), so Read will not show it. Use Bash \
             (e.g. `file`, `xxd | head`) to inspect binary data.",
            meta.len()
        )),
        Err(WindowError::Io(err)) => ToolOutput::error(format!("Cannot read {shown}: {err}")),
    }
}

/// Bytes of one line kept in memory; the rest of a longer line is skipped while reading, so a
/// multi-gigabyte single-line file costs no more memory than a short one.
const MAX_LINE_BYTES: usize = 4 * MAX_LINE_CHARS + 4;

/// Reads one line (with its `\n`) into `buf`, keeping at most `keep` bytes. Returns the bytes
/// consumed (0 at end of file) and how many bytes of line *content* were dropped; a dropped line
/// terminator (`\n` or `\r\n`) is not counted but re-appended to `buf`, so callers see the same
/// ending as for a short line.
fn read_line_bounded(
    reader: &mut impl BufRead,
    buf: &mut Vec<u8>,
    keep: usize,
) -> std::io::Result<(usize, usize)> {
    let (mut consumed, mut dropped) = (0, 0);
    let mut last_two = [0u8; 2];
    loop {
        let chunk = reader.fill_buf()?;
        if chunk.is_empty() {
            return Ok((consumed, dropped));
        }
        let (end, done) = match memchr::memchr(b'\n', chunk) {
            Some(nl) => (nl + 1, true),
            None => (chunk.len(), false),
        };
        let room = keep.saturating_sub(buf.len());
        let take = end.min(room);
        buf.extend_from_slice(&chunk[..take]);
        dropped += end - take;
        consumed += end;
        for &b in &chunk[..end] {
            last_two = [last_two[1], b];
        }
        reader.consume(end);
        if done {
            if dropped > 0 {
                // The terminator was among the dropped bytes: give it back.
                let ending: &[u8] = if last_two == *b"\r\n" { b"\r\n" } else { b"\n" };
                let ending = &ending[ending.len() - ending.len().min(dropped)..];
                dropped -= ending.len();
                buf.extend_from_slice(ending);
            }
            return Ok((consumed, dropped));
        }
    }
}

/// The lines of one Read call and facts about the file.
struct Window {
    /// `(line number, text)` of the returned lines, without line terminators, already shortened.
    lines: Vec<(usize, String)>,
    total_lines: usize,
    crlf: bool,
    invalid_utf8: bool,
    shortened: usize,
    budget_hit: bool,
}

enum WindowError {
    Binary,
    Io(std::io::Error),
}

impl From<std::io::Error> for WindowError {
    fn from(err: std::io::Error) -> Self {
        WindowError::Io(err)
    }
}

/// Streams the file once: skips to `offset`, keeps up to `limit` lines within `max_bytes` of
/// output, then only counts the remaining lines — so a multi-gigabyte log costs no memory.
fn read_window(
    path: &Path,
    offset: usize,
    limit: usize,
    max_bytes: usize,
) -> Result<Window, WindowError> {
    window_of(File::open(path)?, offset, limit, max_bytes)
}

/// [`read_window`] over any source of the file's bytes (the disk, or a host's text).
fn window_of(
    mut source: impl std::io::Read,
    offset: usize,
    limit: usize,
    max_bytes: usize,
) -> Result<Window, WindowError> {
    let mut sniff = Vec::with_capacity(SNIFF_BYTES);
    (&mut source)
        .take(SNIFF_BYTES as u64)
        .read_to_end(&mut sniff)?;
    if fsutil::looks_binary(&sniff) {
        return Err(WindowError::Binary);
    }
    let mut reader = BufReader::with_capacity(64 * 1024, std::io::Cursor::new(sniff).chain(source));
    let mut window = Window {
        lines: Vec::new(),
        total_lines: 0,
        crlf: false,
        invalid_utf8: false,
        shortened: 0,
        budget_hit: false,
    };
    let mut used_bytes = 0usize;
    let mut buf = Vec::new();
    let mut line_no = 0usize;
    let mut stopped_early = false;
    loop {
        buf.clear();
        let (n, dropped) = read_line_bounded(&mut reader, &mut buf, MAX_LINE_BYTES)?;
        if n == 0 {
            break;
        }
        line_no += 1;
        if line_no < offset {
            continue;
        }
        if window.lines.len() >= limit {
            stopped_early = true;
            break;
        }
        let mut bytes = &buf[..];
        if bytes.ends_with(b"\n") {
            bytes = &bytes[..bytes.len() - 1];
        }
        if bytes.ends_with(b"\r") {
            bytes = &bytes[..bytes.len() - 1];
            window.crlf = true;
        }
        // A line cut while reading may end inside a UTF-8 sequence; that is not invalid text.
        let complete = if dropped > 0 {
            match std::str::from_utf8(bytes) {
                Err(err) if err.error_len().is_none() => &bytes[..err.valid_up_to()],
                _ => bytes,
            }
        } else {
            bytes
        };
        let dropped = dropped + (bytes.len() - complete.len());
        let bytes = complete;
        let mut text = match std::str::from_utf8(bytes) {
            Ok(text) => text.to_string(),
            Err(_) => {
                window.invalid_utf8 = true;
                String::from_utf8_lossy(bytes).into_owned()
            }
        };
        let cut = text
            .char_indices()
            .nth(MAX_LINE_CHARS)
            .map_or(text.len(), |(at, _)| at);
        if cut < text.len() || dropped > 0 {
            let rest = text.len() - cut + dropped;
            text.truncate(cut);
            text.push_str(&format!("… [line shortened: {rest} more bytes]"));
            window.shortened += 1;
        }
        let cost = text.len() + 8;
        if !window.lines.is_empty() && used_bytes + cost > max_bytes {
            window.budget_hit = true;
            stopped_early = true;
            break;
        }
        used_bytes += cost;
        window.lines.push((line_no, text));
    }
    if stopped_early {
        // The line in `buf` is counted; count the lines still unread without keeping them.
        let mut last = None;
        loop {
            let chunk = reader.fill_buf()?;
            if chunk.is_empty() {
                break;
            }
            line_no += memchr::memchr_iter(b'\n', chunk).count();
            last = chunk.last().copied();
            let len = chunk.len();
            reader.consume(len);
        }
        // An unterminated final line is a line too.
        line_no += usize::from(last.is_some_and(|b| b != b'\n'));
    }
    window.total_lines = line_no;
    Ok(window)
}

fn render(window: Window, shown: &str, offset: usize, size: u64) -> ToolOutput {
    let total = window.total_lines;
    if total == 0 {
        return ToolOutput::with_response(
            format!("[{shown}: empty file ({size} bytes)]"),
            json!({"type": "text", "file_path": shown, "content": "", "start_line": 1,
                   "num_lines": 0, "total_lines": 0}),
        );
    }
    if offset > total {
        return ToolOutput::error(format!(
            "offset {offset} is past the end of {shown}, which has {total} line{}. Use an offset \
             between 1 and {total}.",
            if total == 1 { "" } else { "s" }
        ));
    }
    let first = window.lines.first().map(|l| l.0).unwrap_or(offset);
    let last = window.lines.last().map(|l| l.0).unwrap_or(offset);
    let mut notes = Vec::new();
    if window.crlf {
        notes.push("CRLF line endings".to_string());
    }
    if window.invalid_utf8 {
        notes.push("not valid UTF-8: invalid bytes shown as \u{FFFD}".to_string());
    }
    let mut out = String::new();
    out.push_str(&format!(
        "[{shown}: lines {first}-{last} of {total}{}]\n",
        if notes.is_empty() {
            String::new()
        } else {
            format!("; {}", notes.join("; "))
        }
    ));
    let mut raw = String::new();
    for (n, text) in &window.lines {
        out.push_str(&format!("{n:>6}\t{text}\n"));
        raw.push_str(text);
        raw.push('\n');
    }
    if window.shortened > 0 {
        out.push_str(&format!(
            "[{} line{} longer than {MAX_LINE_CHARS} characters {} shortened]\n",
            window.shortened,
            if window.shortened == 1 { "" } else { "s" },
            if window.shortened == 1 { "was" } else { "were" }
        ));
    }
    if last < total {
        out.push_str(&format!(
            "[{} more line{} not shown{}. Continue with offset={}.]\n",
            total - last,
            if total - last == 1 { "" } else { "s" },
            if window.budget_hit {
                " (the output budget for one Read was reached)"
            } else {
                ""
            },
            last + 1
        ));
    }
    out.pop();
    let response = json!({
        "type": "text",
        "file_path": shown,
        "content": raw,
        "start_line": first,
        "num_lines": window.lines.len(),
        "total_lines": total,
        "truncated": last < total,
    });
    ToolOutput::with_response(out, response)
}

fn unsupported_kind(path: &Path) -> Option<&'static str> {
    let ext = path.extension()?.to_str()?.to_ascii_lowercase();
    match ext.as_str() {
        "png" | "jpg" | "jpeg" | "gif" | "webp" | "bmp" | "ico" | "tif" | "tiff" | "heic"
        | "avif" => Some("an image"),
        "pdf" => Some("a PDF document"),
        _ => None,
    }
}

/// "File does not exist" plus up to three similarly named files next to it.
fn missing_file_message(real: &Path, shown: &str, context: &ToolContext) -> String {
    let mut message = format!("File does not exist: {shown}.");
    let (Some(parent), Some(name)) = (real.parent(), real.file_name().and_then(|n| n.to_str()))
    else {
        return message;
    };
    let Ok(entries) = std::fs::read_dir(parent) else {
        message.push_str(&format!(
            " Its directory {} does not exist either.",
            Path::new(shown).parent().unwrap_or(parent).display()
        ));
        return message;
    };
    let wanted = name.to_lowercase();
    let wanted_stem = Path::new(&wanted)
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or(&wanted)
        .to_string();
    let mut candidates: Vec<(usize, String)> = entries
        .take(2000)
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str().map(str::to_string))
        .filter_map(|candidate| {
            let lower = candidate.to_lowercase();
            let stem = Path::new(&lower)
                .file_stem()
                .and_then(|s| s.to_str())
                .unwrap_or(&lower)
                .to_string();
            let score = if lower == wanted {
                0
            } else if stem == wanted_stem {
                1
            } else {
                let distance = edit_distance(&lower, &wanted);
                if distance <= 2 && wanted.len() > 3 {
                    1 + distance
                } else {
                    return None;
                }
            };
            Some((score, candidate))
        })
        .collect();
    candidates.sort();
    if !candidates.is_empty() {
        let shown_parent = Path::new(shown).parent().unwrap_or(parent);
        let names: Vec<String> = candidates
            .iter()
            .take(3)
            .map(|(_, c)| shown_parent.join(c).display().to_string())
            .collect();
        message.push_str(&format!(" Did you mean {}?", names.join(" or ")));
    } else if !Path::new(&context.cwd).join(name).exists() {
        message.push_str(&format!(
            " (Relative paths resolve against {}.)",
            context.cwd.display()
        ));
    }
    message
}

/// Levenshtein distance over characters; names are short, so the quadratic cost is negligible.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut current = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let substitute = prev[j] + usize::from(ca != *cb);
            current[j + 1] = substitute.min(prev[j + 1] + 1).min(current[j] + 1);
        }
        prev = current;
    }
    prev[b.len()]
}
