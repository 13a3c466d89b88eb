//! `Grep`: content search with ripgrep's own crates — `grep-regex` (Rust regex syntax),
//! `grep-searcher` (line-oriented search, context, binary detection) and `ignore` (parallel,
//! `.gitignore`-aware walk, `--glob`/`--type` filters) — so results and speed match `rg`.
//!
//! Output order is deterministic: files are sorted by path after the parallel search.

use std::io;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use async_trait::async_trait;
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use ignore::overrides::OverrideBuilder;
use ignore::types::TypesBuilder;
use ignore::{WalkBuilder, WalkState};
use serde_json::{json, Value};

use super::budget;
use super::schema::{Field, Input, InputSchema, Kind};
use super::workspace::{normalize_lexically, Access, Workspace};
use super::{blocking, Builtins, Shared};
use crate::tools::{Tool, ToolContext, ToolOutput};

/// Characters kept of one matching line in content mode (ripgrep's `--max-columns` idea):
/// minified files would otherwise flood the output with one line.
const MAX_LINE_CHARS: usize = 1000;
/// Bytes of results collected before the search stops early, protecting memory on patterns that
/// match nearly everything. The model is told the results are incomplete.
const MAX_COLLECTED_BYTES: usize = 64 * 1024 * 1024;

const SCHEMA: InputSchema = InputSchema {
    tool: "Grep",
    fields: &[
        Field {
            name: "pattern",
            aliases: &[],
            kind: Kind::String,
            required: true,
            description: "The regular expression pattern to search for in file contents (Rust \
                          regex syntax, like ripgrep)",
        },
        Field {
            name: "path",
            aliases: &[],
            kind: Kind::String,
            required: false,
            description: "File or directory to search in (default: the working directory)",
        },
        Field {
            name: "glob",
            aliases: &[],
            kind: Kind::String,
            required: false,
            description: "Glob pattern to filter files (e.g. \"*.js\", \"*.{ts,tsx}\", \
                          \"src/**/*.rs\", \"!*.min.js\"); several separated by spaces - maps to \
                          rg --glob",
        },
        Field {
            name: "type",
            aliases: &[],
            kind: Kind::String,
            required: false,
            description: "File type to search (rg --type), e.g. js, py, rust, go, java. More \
                          efficient than glob for standard file types",
        },
        Field {
            name: "output_mode",
            aliases: &["outputMode"],
            kind: Kind::Enum(&["content", "files_with_matches", "count"]),
            required: false,
            description: "\"content\" shows matching lines (supports -A/-B/-C, -n, head_limit), \
                          \"files_with_matches\" shows file paths (default), \"count\" shows \
                          match counts per file",
        },
        Field {
            name: "-i",
            aliases: &["caseInsensitive", "ignoreCase"],
            kind: Kind::Boolean,
            required: false,
            description: "Case insensitive search (rg -i)",
        },
        Field {
            name: "-n",
            aliases: &["lineNumbers"],
            kind: Kind::Boolean,
            required: false,
            description: "Show line numbers in output (rg -n). Content mode only; default true",
        },
        Field {
            name: "-A",
            aliases: &["afterContext"],
            kind: Kind::Integer { min: 0 },
            required: false,
            description: "Number of lines to show after each match (rg -A). Content mode only",
        },
        Field {
            name: "-B",
            aliases: &["beforeContext"],
            kind: Kind::Integer { min: 0 },
            required: false,
            description: "Number of lines to show before each match (rg -B). Content mode only",
        },
        Field {
            name: "-C",
            aliases: &["contextLines", "context"],
            kind: Kind::Integer { min: 0 },
            required: false,
            description: "Number of lines to show before and after each match (rg -C). Content \
                          mode only",
        },
        Field {
            name: "head_limit",
            aliases: &["headLimit"],
            kind: Kind::Integer { min: 1 },
            required: false,
            description: "Limit output to the first N lines/entries, like \"| head -N\" (lines \
                          in content mode, files in files_with_matches mode, entries in count \
                          mode)",
        },
        Field {
            name: "multiline",
            aliases: &[],
            kind: Kind::Boolean,
            required: false,
            description: "Enable multiline mode where . matches newlines and patterns can span \
                          lines (rg -U --multiline-dotall). Default false",
        },
    ],
};

const DESCRIPTION: &str = "A powerful search tool built on ripgrep's engine.\n\
\n\
- Use Grep for content search instead of `grep`/`rg` in Bash.\n\
- Full regex syntax (Rust regex, like ripgrep): \"log.*Error\", \"fn\\s+\\w+\". Literal braces \
and parentheses need escaping (\"interface\\{\\}\").\n\
- Filter files with `glob` (\"*.js\", \"**/*.{ts,tsx}\") or `type` (\"js\", \"py\", \"rust\").\n\
- output_mode: \"files_with_matches\" (default) lists paths; \"content\" shows matching lines \
(with -n, -A/-B/-C); \"count\" shows matching lines per file.\n\
- Patterns match within single lines unless `multiline: true`.\n\
- .gitignore'd, hidden and binary files are skipped. Results are sorted by path.";

blocking_file_tool!(
    /// The `Grep` tool.
    GrepTool, name = "Grep", read_only = true, run = grep
);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Content,
    FilesWithMatches,
    Count,
}

/// One output row of content mode.
enum Row {
    Match(u64, String),
    Context(u64, String),
    Break,
}

/// What one file contributed.
struct FileHits {
    path: PathBuf,
    count: u64,
    rows: Vec<Row>,
}

/// Collects one file's results; discarded when the file turns out to be binary.
struct Collect {
    mode: Mode,
    count: u64,
    rows: Vec<Row>,
    bytes: usize,
    binary: bool,
}

impl Collect {
    fn new(mode: Mode) -> Self {
        Collect {
            mode,
            count: 0,
            rows: Vec::new(),
            bytes: 0,
            binary: false,
        }
    }

    fn push_line(&mut self, bytes: &[u8], number: u64, is_match: bool) {
        let text = line_text(bytes);
        self.bytes += text.len() + 16;
        self.rows.push(if is_match {
            Row::Match(number, text)
        } else {
            Row::Context(number, text)
        });
    }
}

impl Sink for Collect {
    type Error = io::Error;

    fn matched(&mut self, _searcher: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, io::Error> {
        self.count += 1;
        match self.mode {
            // One match decides the file; stop reading it.
            Mode::FilesWithMatches => Ok(false),
            Mode::Count => Ok(true),
            Mode::Content => {
                let first = mat.line_number().unwrap_or(0);
                for (number, line) in (first..).zip(mat.lines()) {
                    self.push_line(line, number, true);
                }
                Ok(true)
            }
        }
    }

    fn context(&mut self, _searcher: &Searcher, ctx: &SinkContext<'_>) -> Result<bool, io::Error> {
        if self.mode == Mode::Content {
            self.push_line(ctx.bytes(), ctx.line_number().unwrap_or(0), false);
        }
        Ok(true)
    }

    fn context_break(&mut self, _searcher: &Searcher) -> Result<bool, io::Error> {
        if self.mode == Mode::Content {
            self.rows.push(Row::Break);
        }
        Ok(true)
    }

    fn binary_data(&mut self, _searcher: &Searcher, _offset: u64) -> Result<bool, io::Error> {
        self.binary = true;
        Ok(false)
    }
}

fn line_text(bytes: &[u8]) -> String {
    let mut bytes = bytes;
    if bytes.ends_with(b"\n") {
        bytes = &bytes[..bytes.len() - 1];
    }
    if bytes.ends_with(b"\r") {
        bytes = &bytes[..bytes.len() - 1];
    }
    let mut text = String::from_utf8_lossy(bytes).into_owned();
    if let Some((cut, _)) = text.char_indices().nth(MAX_LINE_CHARS) {
        let rest = text[cut..].chars().count();
        text.truncate(cut);
        text.push_str(&format!("… [{rest} more characters]"));
    }
    text
}

fn grep(shared: &Shared, input: &Input, context: &ToolContext) -> ToolOutput {
    let started = Instant::now();
    let pattern = input.string("pattern");
    let mode = match input.str("output_mode") {
        Some("content") => Mode::Content,
        Some("count") => Mode::Count,
        _ => Mode::FilesWithMatches,
    };
    let around = input.int("-C").unwrap_or(0) as usize;
    let before = input.int("-B").map(|n| n as usize).unwrap_or(around);
    let after = input.int("-A").map(|n| n as usize).unwrap_or(around);
    let line_numbers = input.bool("-n").unwrap_or(true);
    let multiline = input.bool("multiline").unwrap_or(false);
    let head_limit = input.int("head_limit").map(|n| n as usize);

    let root_raw = input
        .str("path")
        .filter(|p| !p.trim().is_empty() && *p != "undefined" && *p != "null")
        .unwrap_or(".");
    let root = match shared
        .workspace
        .resolve(&context.cwd, root_raw, Access::Read)
    {
        Ok(root) => root,
        Err(message) => return ToolOutput::error(message),
    };
    if !root.real.exists() {
        return ToolOutput::error(format!("Path does not exist: {}.", root.display.display()));
    }

    let matcher = match build_matcher(&pattern, input.bool("-i").unwrap_or(false), multiline) {
        Ok(matcher) => matcher,
        Err(message) => return ToolOutput::error(message),
    };
    let mut walker = WalkBuilder::new(&root.real);
    walker.follow_links(false).threads(0);
    if let Some(globs) = input.str("glob").filter(|g| !g.trim().is_empty()) {
        // Globs with a slash match relative to the session cwd, as `rg --glob` does relative to
        // the directory it runs in (Claude Code runs it in the project root); a search root
        // outside the cwd (an additional workspace root) is its own base.
        let cwd_real = std::fs::canonicalize(&context.cwd).unwrap_or_else(|_| context.cwd.clone());
        let override_root = if root.real.starts_with(&cwd_real) {
            cwd_real
        } else if root.real.is_dir() {
            root.real.clone()
        } else {
            root.real.parent().map(PathBuf::from).unwrap_or_default()
        };
        let mut overrides = OverrideBuilder::new(override_root);
        for glob in globs.split_whitespace() {
            if let Err(err) = overrides.add(glob) {
                return ToolOutput::error(format!(
                    "Invalid glob `{glob}`: {err}. Examples: \"*.rs\", \"*.{{ts,tsx}}\", \
                     \"src/**/*.go\", \"!**/vendor/**\"."
                ));
            }
        }
        match overrides.build() {
            Ok(overrides) => {
                walker.overrides(overrides);
            }
            Err(err) => return ToolOutput::error(format!("Invalid glob `{globs}`: {err}.")),
        }
    }
    if let Some(kind) = input.str("type").filter(|t| !t.trim().is_empty()) {
        let mut types = TypesBuilder::new();
        types.add_defaults();
        if !types.definitions().iter().any(|d| d.name() == kind) {
            return ToolOutput::error(format!(
                "Unknown file type `{kind}`. Use a ripgrep type name such as rust, py, js, ts, \
                 go, java, c, cpp, cs, rb, php, swift, kotlin, sh, md, json, yaml, toml, html, \
                 css — or use `glob` instead."
            ));
        }
        types.select(kind);
        match types.build() {
            Ok(types) => {
                walker.types(types);
            }
            Err(err) => return ToolOutput::error(format!("Invalid type `{kind}`: {err}.")),
        }
    }

    let mut searcher_builder = SearcherBuilder::new();
    searcher_builder
        .line_number(mode == Mode::Content)
        .multi_line(multiline)
        .binary_detection(BinaryDetection::quit(b'\x00'));
    if mode == Mode::Content {
        searcher_builder.before_context(before).after_context(after);
    }

    let results: Mutex<Vec<FileHits>> = Mutex::new(Vec::new());
    let collected = AtomicUsize::new(0);
    let overflow = AtomicBool::new(false);
    let cancel = context.cancel.clone();
    walker.build_parallel().run(|| {
        let mut searcher = searcher_builder.build();
        let matcher = matcher.clone();
        let (results, collected, overflow, cancel) = (&results, &collected, &overflow, &cancel);
        Box::new(move |entry| {
            if cancel.is_cancelled() {
                return WalkState::Quit;
            }
            let Ok(entry) = entry else {
                return WalkState::Continue;
            };
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                return WalkState::Continue;
            }
            let mut sink = Collect::new(mode);
            if searcher
                .search_path(&matcher, entry.path(), &mut sink)
                .is_err()
            {
                return WalkState::Continue; // unreadable file: skipped, like rg
            }
            if sink.binary || sink.count == 0 {
                return WalkState::Continue;
            }
            let total = collected.fetch_add(sink.bytes + 64, Ordering::Relaxed);
            let hits = FileHits {
                path: entry.into_path(),
                count: sink.count,
                rows: sink.rows,
            };
            results.lock().unwrap_or_else(|p| p.into_inner()).push(hits);
            if total > MAX_COLLECTED_BYTES {
                overflow.store(true, Ordering::Relaxed);
                return WalkState::Quit;
            }
            WalkState::Continue
        })
    });
    if context.cancel.is_cancelled() {
        return ToolOutput::error("Grep was aborted.");
    }
    let mut files = results.into_inner().unwrap_or_else(|p| p.into_inner());
    files.sort_by(|a, b| a.path.cmp(&b.path));

    let cwd_real = std::fs::canonicalize(&context.cwd).unwrap_or_else(|_| context.cwd.clone());
    let cwd_lexical = normalize_lexically(&context.cwd);
    let show = |path: &PathBuf| Workspace::display_relative(&cwd_real, &cwd_lexical, path);
    let rendered = render(
        &files,
        mode,
        line_numbers,
        before + after > 0,
        head_limit,
        show,
    );
    let mut text = rendered.text;
    if overflow.load(Ordering::Relaxed) {
        text.push_str(&format!(
            "\n[The search stopped early after collecting {} MB of results; they are incomplete. \
             Use a more specific pattern, path, glob or type.]",
            MAX_COLLECTED_BYTES / (1024 * 1024)
        ));
    }
    let (text, spill) = budget::fit_text(
        &text,
        shared.limit.max_bytes,
        shared.workspace.session_dir(),
        &format!("grep-{}", context.tool_use_id),
    );
    let total_matches: u64 = files.iter().map(|f| f.count).sum();
    ToolOutput::with_response(
        text,
        json!({
            "mode": match mode {
                Mode::Content => "content",
                Mode::FilesWithMatches => "files_with_matches",
                Mode::Count => "count",
            },
            "num_files": files.len(),
            "num_matches": total_matches,
            "filenames": files.iter().map(|f| show(&f.path)).collect::<Vec<_>>(),
            "num_lines": rendered.rows,
            "applied_head_limit": rendered.limited.then_some(head_limit).flatten(),
            "incomplete": overflow.load(Ordering::Relaxed),
            "duration_ms": started.elapsed().as_millis() as u64,
            "output_file": spill,
        }),
    )
}

fn build_matcher(
    pattern: &str,
    case_insensitive: bool,
    multiline: bool,
) -> Result<RegexMatcher, String> {
    let mut builder = RegexMatcherBuilder::new();
    // `^`/`$` match at line boundaries, as in ripgrep.
    builder.case_insensitive(case_insensitive).multi_line(true);
    if multiline {
        builder.dot_matches_new_line(true);
    } else {
        // Lets the searcher work line by line (ripgrep's fast path); rejects `\n` in the pattern.
        builder.line_terminator(Some(b'\n'));
    }
    builder.build(pattern).map_err(|err| {
        let err = err.to_string();
        let hint = if !multiline && (err.contains("\\n") || err.contains("line terminator")) {
            " The pattern can match a line break: set `multiline: true` to search across lines."
        } else {
            " Grep uses Rust regex syntax (like ripgrep): escape literal characters such as \
             `{`, `}`, `(`, `)`, `[`, `.` and `*` with a backslash; look-around and \
             backreferences are not supported."
        };
        format!("Invalid regex `{pattern}`: {err}.{hint}")
    })
}

struct Rendered {
    text: String,
    rows: usize,
    limited: bool,
}

fn render(
    files: &[FileHits],
    mode: Mode,
    line_numbers: bool,
    with_context: bool,
    head_limit: Option<usize>,
    show: impl Fn(&PathBuf) -> String,
) -> Rendered {
    let limit = head_limit.unwrap_or(usize::MAX);
    let mut text = String::new();
    let mut rows = 0usize;
    let mut omitted = 0usize;
    match mode {
        Mode::FilesWithMatches => {
            if files.is_empty() {
                text.push_str("No files found");
            } else {
                text.push_str(&format!(
                    "Found {} file{}\n",
                    files.len(),
                    if files.len() == 1 { "" } else { "s" }
                ));
                for file in files {
                    if rows >= limit {
                        omitted += 1;
                        continue;
                    }
                    text.push_str(&show(&file.path));
                    text.push('\n');
                    rows += 1;
                }
            }
        }
        Mode::Count => {
            for file in files {
                if rows >= limit {
                    omitted += 1;
                    continue;
                }
                text.push_str(&format!("{}:{}\n", show(&file.path), file.count));
                rows += 1;
            }
            let total: u64 = files.iter().map(|f| f.count).sum();
            if files.is_empty() {
                text.push_str("No matches found");
            } else {
                text.push_str(&format!(
                    "\nFound {total} matching line{} in {} file{}",
                    if total == 1 { "" } else { "s" },
                    files.len(),
                    if files.len() == 1 { "" } else { "s" }
                ));
            }
        }
        Mode::Content => {
            for (index, file) in files.iter().enumerate() {
                let path = show(&file.path);
                if with_context && index > 0 && rows < limit {
                    text.push_str("--\n");
                }
                for row in &file.rows {
                    if rows >= limit {
                        if !matches!(row, Row::Break) {
                            omitted += 1;
                        }
                        continue;
                    }
                    match row {
                        Row::Match(n, line) if line_numbers => {
                            text.push_str(&format!("{path}:{n}:{line}\n"));
                        }
                        Row::Match(_, line) => text.push_str(&format!("{path}:{line}\n")),
                        Row::Context(n, line) if line_numbers => {
                            text.push_str(&format!("{path}-{n}-{line}\n"));
                        }
                        Row::Context(_, line) => text.push_str(&format!("{path}-{line}\n")),
                        Row::Break => {
                            text.push_str("--\n");
                            continue;
                        }
                    }
                    rows += 1;
                }
            }
            if files.is_empty() {
                text.push_str("No matches found");
            }
        }
    }
    while text.ends_with('\n') {
        text.pop();
    }
    if omitted > 0 {
        let unit = match mode {
            Mode::Content => "lines",
            Mode::FilesWithMatches => "files",
            Mode::Count => "entries",
        };
        text.push_str(&format!(
            "\n[head_limit {} reached: {omitted} more {unit} not shown]",
            limit
        ));
    }
    Rendered {
        text,
        rows,
        limited: omitted > 0,
    }
}
