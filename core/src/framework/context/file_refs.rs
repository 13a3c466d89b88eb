//! `@file` references in prompts (spec 000 "Prompt file references"): `@AGENTS.md`,
//! `@./Makefile`, `@docs/spec.md`, `@"notes/meeting notes.md"`.
//!
//! Referenced files are read relative to the session cwd, confined to the workspace roots (symbolic
//! links resolved), bounded per file and in total, and appended to the text the *model* sees as
//! context blocks. The user's history keeps the prompt as typed; [`ResolvedPrompt::records`] says
//! what was attached, without file contents, for the history event.
//!
//! # When is `@…` a file reference? (the exact rule)
//!
//! 1. **Token.** `@` at the start of the text or after whitespace or one of `( [ {`, followed by
//!    either a double-quoted path (`@"a b.md"`, no line break inside) or a run of characters up to
//!    whitespace or one of `) ] } > , ; " ' `` ` ``. Trailing `. : ! ?` are dropped (sentence
//!    punctuation). So `a@b.com` (e-mail) is never a token, and neither is anything after a
//!    backtick, which gives the user a way to write a literal `@path`.
//! 2. **Not a path → plain text, silently.** A token with neither `.` nor `/` (`@user`,
//!    `@Makefile` — write `@./Makefile`), or one containing `://` (a URL).
//! 3. **Explicit path → reference; every failure blocks the prompt.** Quoted, or starting with
//!    `./`, `../`, `~/` or `/`, or containing a `..` segment.
//! 4. **Path-like (`.` or `/`) → reference if it exists.** If it exists (following links) it is a
//!    reference and every failure blocks (outside the workspace, directory, too large, binary,
//!    unreadable, denied). If it does not exist, it blocks as not-found only when it contains `/`
//!    and its first segment is an existing directory (`@src/mian.rs` with a `src/` directory — a
//!    typo). Otherwise it is plain text and gets a non-blocking `not_found` warning: `@v1.2`,
//!    `@types/node`, `@node.js`, `@foo.bar` never block a prompt (the TypeScript bug, §9.25).
//!
//! Blocking failures are collected (all of them, not just the first) into
//! [`FileRefDiagnostics`], and the prompt must not be sent.
//!
//! # Nested references
//!
//! A loaded file's own `@…` references (rules 1–4, relative to that file's directory) are followed
//! up to [`FileRefOptions::max_depth`] levels. The user did not type them, so their failures —
//! including exceeding the depth or the byte budget — are warnings, never blocking. A file already
//! attached (including a reference cycle) is attached once.
//!
//! # Limits (TypeScript Robota's defaults)
//!
//! 64 KiB per file, 256 KiB in total, 8 files, depth 2 — see [`FileRefOptions`]. Files whose first
//! 8 KiB contain a NUL byte are refused as binary. The workspace is the cwd plus
//! `workspace_roots`; `~/` needs [`FileRefOptions::home`] and is confined like any other path.
//!
//! # What the model sees
//!
//! `prompt + "\n\n<robota_file_references>\n\n" + blocks + "\n\n</robota_file_references>"`, each
//! block `<file path="<relative>" bytes="<n>" reason="<reason>">\n<content>\n</file>` with
//! `</file>` in the content escaped as `<\/file>` (TypeScript Robota's format).

use std::fmt;
use std::fs;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;

use super::instructions::display_path;

/// Decides whether a file may be attached (e.g. the session's `Read` deny rules). Returns the
/// reason when it may not.
pub type ReadGuard = Arc<dyn Fn(&Path) -> Option<String> + Send + Sync>;

/// Limits and environment for [`resolve_file_references`].
#[derive(Clone)]
pub struct FileRefOptions {
    /// Largest file attached, in bytes (default 64 KiB).
    pub max_file_bytes: u64,
    /// Largest total of attached files, in bytes (default 256 KiB).
    pub max_total_bytes: u64,
    /// Most files attached, nested ones included (default 8).
    pub max_references: usize,
    /// How deep nested references are followed; 0 = only the prompt's own (default 2).
    pub max_depth: usize,
    /// Home directory for `@~/…`; `None` makes such references fail.
    pub home: Option<PathBuf>,
    /// Optional veto on reading a (canonical) path.
    pub read_guard: Option<ReadGuard>,
}

impl Default for FileRefOptions {
    fn default() -> Self {
        FileRefOptions {
            max_file_bytes: 64 * 1024,
            max_total_bytes: 256 * 1024,
            max_references: 8,
            max_depth: 2,
            home: None,
            read_guard: None,
        }
    }
}

impl fmt::Debug for FileRefOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FileRefOptions")
            .field("max_file_bytes", &self.max_file_bytes)
            .field("max_total_bytes", &self.max_total_bytes)
            .field("max_references", &self.max_references)
            .field("max_depth", &self.max_depth)
            .field("home", &self.home)
            .field("read_guard", &self.read_guard.as_ref().map(|_| "<fn>"))
            .finish()
    }
}

/// Why a file was attached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FileRefReason {
    /// Named in the prompt.
    PromptReference,
    /// Named in an attached file.
    NestedReference,
}

impl FileRefReason {
    fn as_str(self) -> &'static str {
        match self {
            FileRefReason::PromptReference => "prompt-reference",
            FileRefReason::NestedReference => "nested-reference",
        }
    }
}

/// One attached file, without its content (for history and events).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileRefRecord {
    /// The real (canonical) path.
    pub source_path: PathBuf,
    /// The path relative to the workspace root that contains it, `/`-separated.
    pub relative_path: String,
    /// The reference as written, e.g. `@docs/spec.md`.
    pub original_reference: String,
    /// Prompt or nested.
    pub reason: FileRefReason,
    /// 0 for the prompt's own references.
    pub depth: usize,
    /// Bytes attached.
    pub byte_length: u64,
}

/// One attached file with its content: what goes to the model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileContextBlock {
    /// As in [`FileRefRecord::relative_path`].
    pub relative_path: String,
    /// As in [`FileRefRecord::source_path`].
    pub source_path: PathBuf,
    /// The file's text.
    pub content: String,
    /// Prompt or nested.
    pub reason: FileRefReason,
}

/// What went wrong with a reference.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum FileRefErrorKind {
    /// Nothing at that path.
    NotFound,
    /// The path (or the target of a link) is outside the workspace roots.
    OutsideWorkspace,
    /// The path is a directory.
    Directory,
    /// The file is over [`FileRefOptions::max_file_bytes`].
    FileTooLarge,
    /// Attaching it would pass [`FileRefOptions::max_total_bytes`].
    TotalTooLarge,
    /// More than [`FileRefOptions::max_references`] files.
    TooManyReferences,
    /// A nested reference deeper than [`FileRefOptions::max_depth`].
    MaxDepth,
    /// The file looks binary (NUL byte).
    Binary,
    /// The [`FileRefOptions::read_guard`] refused it.
    Denied,
    /// It exists but cannot be read, or is not a regular file.
    Unreadable,
}

/// One problem with one reference.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileRefDiagnostic {
    /// What went wrong.
    pub kind: FileRefErrorKind,
    /// The reference as written, e.g. `@docs/spec.md`.
    pub reference: String,
    /// The path it was resolved to (lexically, before following links).
    pub path: PathBuf,
    /// A sentence for the user.
    pub message: String,
    /// 0 for the prompt's own references.
    pub depth: usize,
}

/// The blocking problems of a prompt: the prompt must not be sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize)]
pub struct FileRefDiagnostics {
    /// Every blocking problem, in prompt order.
    pub diagnostics: Vec<FileRefDiagnostic>,
}

impl fmt::Display for FileRefDiagnostics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("File reference error:")?;
        for diagnostic in &self.diagnostics {
            write!(f, "\n- {}: {}", diagnostic.reference, diagnostic.message)?;
        }
        Ok(())
    }
}

/// A prompt with its file references resolved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ResolvedPrompt {
    /// The prompt as typed (what history keeps).
    pub original: String,
    /// What the model gets: the prompt plus the context blocks (equal to `original` when nothing
    /// was attached).
    pub model_text: String,
    /// The attached files with content.
    pub blocks: Vec<FileContextBlock>,
    /// The attached files without content.
    pub records: Vec<FileRefRecord>,
    /// Non-blocking notes (ambiguous tokens that are not files, nested failures).
    pub warnings: Vec<FileRefDiagnostic>,
}

impl ResolvedPrompt {
    /// `Loaded file references: a.ts (12 B), docs/b.md (3 KiB)`, or `None` when none.
    pub fn summary(&self) -> Option<String> {
        if self.records.is_empty() {
            return None;
        }
        let items: Vec<String> = self
            .records
            .iter()
            .map(|record| {
                format!(
                    "{} ({})",
                    record.relative_path,
                    human_bytes(record.byte_length)
                )
            })
            .collect();
        Some(format!("Loaded file references: {}", items.join(", ")))
    }
}

fn human_bytes(bytes: u64) -> String {
    if bytes < 1024 {
        format!("{bytes} B")
    } else {
        format!("{:.1} KiB", bytes as f64 / 1024.0)
    }
}

/// A `@…` token found in text.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Token {
    /// As written, e.g. `@docs/spec.md` or `@"a b.md"`.
    original: String,
    /// The path part.
    path: String,
    quoted: bool,
}

const TOKEN_STOP: &[char] = &[')', ']', '}', '>', ',', ';', '"', '\'', '`'];
const TRAILING_PUNCTUATION: &[char] = &['.', ':', '!', '?'];
const BINARY_SNIFF_BYTES: usize = 8 * 1024;

fn scan_tokens(text: &str) -> Vec<Token> {
    let mut tokens = Vec::new();
    for (index, _) in text.match_indices('@') {
        let before = text[..index].chars().next_back();
        if before.is_some_and(|c| !(c.is_whitespace() || matches!(c, '(' | '[' | '{'))) {
            continue;
        }
        let rest = &text[index + 1..];
        if let Some(quoted) = rest.strip_prefix('"') {
            let Some(end) = quoted.find(['"', '\n']) else {
                continue;
            };
            if quoted[end..].starts_with('"') && !quoted[..end].trim().is_empty() {
                tokens.push(Token {
                    original: format!("@\"{}\"", &quoted[..end]),
                    path: quoted[..end].to_owned(),
                    quoted: true,
                });
            }
            continue;
        }
        let end = rest
            .find(|c: char| c.is_whitespace() || TOKEN_STOP.contains(&c))
            .unwrap_or(rest.len());
        let path = rest[..end].trim_end_matches(TRAILING_PUNCTUATION);
        if path.is_empty() {
            continue;
        }
        tokens.push(Token {
            original: format!("@{path}"),
            path: path.to_owned(),
            quoted: false,
        });
    }
    tokens
}

fn is_explicit(token: &Token) -> bool {
    let path = token.path.as_str();
    token.quoted
        || path.starts_with("./")
        || path.starts_with("../")
        || path.starts_with("~/")
        || path.starts_with('/')
        || path.split('/').any(|segment| segment == "..")
}

fn is_path_like(token: &Token) -> bool {
    is_explicit(token)
        || ((token.path.contains('.') || token.path.contains('/')) && !token.path.contains("://"))
}

/// `..` and `.` removed without touching the file system.
fn normalize_lexically(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// A reference waiting to be resolved.
struct Pending {
    token: Token,
    base_dir: PathBuf,
    depth: usize,
}

struct Resolver<'a> {
    options: &'a FileRefOptions,
    /// Canonical roots (cwd first).
    roots: Vec<PathBuf>,
    /// Lexical roots, for telling "outside" from "missing" on paths that do not exist.
    lexical_roots: Vec<PathBuf>,
    blocks: Vec<FileContextBlock>,
    records: Vec<FileRefRecord>,
    errors: Vec<FileRefDiagnostic>,
    warnings: Vec<FileRefDiagnostic>,
    total_bytes: u64,
}

/// The outcome of one token.
enum Outcome {
    /// Attached; its text may hold nested references.
    Attached { content: String, dir: PathBuf },
    /// Plain text or already attached.
    Skipped,
    /// A problem (blocking at depth 0 unless `soft`).
    Failed {
        kind: FileRefErrorKind,
        path: PathBuf,
        message: String,
        soft: bool,
    },
}

/// Resolves the `@file` references of `prompt`.
///
/// `cwd` is the session directory (relative references start there and it is always a workspace
/// root); `workspace_roots` are further directories references may reach (e.g. the repository root
/// or `additionalDirectories`). Returns the prompt with context blocks for the model, or every
/// blocking problem. See the module docs for exactly which `@…` tokens count.
pub fn resolve_file_references(
    prompt: &str,
    cwd: &Path,
    workspace_roots: &[PathBuf],
    options: &FileRefOptions,
) -> Result<ResolvedPrompt, FileRefDiagnostics> {
    let mut lexical_roots = vec![normalize_lexically(cwd)];
    lexical_roots.extend(
        workspace_roots
            .iter()
            .map(|root| normalize_lexically(&cwd.join(root))),
    );
    let mut roots: Vec<PathBuf> = lexical_roots
        .iter()
        .filter_map(|root| fs::canonicalize(root).ok())
        .collect();
    roots.dedup();
    lexical_roots.extend(roots.iter().cloned());

    let mut resolver = Resolver {
        options,
        roots,
        lexical_roots,
        blocks: Vec::new(),
        records: Vec::new(),
        errors: Vec::new(),
        warnings: Vec::new(),
        total_bytes: 0,
    };

    // Breadth-first: the prompt's own references claim the budget before nested ones.
    let mut queue: Vec<Pending> = scan_tokens(prompt)
        .into_iter()
        .map(|token| Pending {
            token,
            base_dir: cwd.to_path_buf(),
            depth: 0,
        })
        .collect();
    while !queue.is_empty() {
        let mut next = Vec::new();
        for pending in queue {
            resolver.handle(pending, &mut next);
        }
        queue = next;
    }

    if !resolver.errors.is_empty() {
        return Err(FileRefDiagnostics {
            diagnostics: resolver.errors,
        });
    }
    let model_text = if resolver.blocks.is_empty() {
        prompt.to_owned()
    } else {
        let blocks: Vec<String> = resolver.blocks.iter().map(render_block).collect();
        format!(
            "{prompt}\n\n<robota_file_references>\n\n{}\n\n</robota_file_references>",
            blocks.join("\n\n")
        )
    };
    Ok(ResolvedPrompt {
        original: prompt.to_owned(),
        model_text,
        blocks: resolver.blocks,
        records: resolver.records,
        warnings: resolver.warnings,
    })
}

fn render_block(block: &FileContextBlock) -> String {
    let path = block
        .relative_path
        .replace('&', "&amp;")
        .replace('"', "&quot;")
        .replace('<', "&lt;");
    format!(
        "<file path=\"{path}\" bytes=\"{}\" reason=\"{}\">\n{}\n</file>",
        block.content.len(),
        block.reason.as_str(),
        block.content.replace("</file>", "<\\/file>")
    )
}

impl Resolver<'_> {
    fn handle(&mut self, pending: Pending, next: &mut Vec<Pending>) {
        let Pending {
            token,
            base_dir,
            depth,
        } = pending;
        let nested = depth > 0;
        match self.resolve(&token, &base_dir, depth) {
            Outcome::Attached { content, dir } => {
                if depth < self.options.max_depth {
                    next.extend(scan_tokens(&content).into_iter().map(|token| Pending {
                        token,
                        base_dir: dir.clone(),
                        depth: depth + 1,
                    }));
                }
            }
            Outcome::Skipped => {}
            Outcome::Failed {
                kind,
                path,
                message,
                soft,
            } => {
                let diagnostic = FileRefDiagnostic {
                    kind,
                    reference: token.original,
                    path,
                    message,
                    depth,
                };
                if soft || nested {
                    self.warnings.push(diagnostic);
                } else {
                    self.errors.push(diagnostic);
                }
            }
        }
    }

    fn resolve(&mut self, token: &Token, base_dir: &Path, depth: usize) -> Outcome {
        if !is_path_like(token) {
            return Outcome::Skipped;
        }
        let explicit = is_explicit(token);
        let raw = token.path.as_str();
        let candidate = if let Some(rest) = raw.strip_prefix("~/") {
            match &self.options.home {
                Some(home) => home.join(rest),
                None => {
                    return fail(
                        FileRefErrorKind::NotFound,
                        PathBuf::from(raw),
                        format!("cannot resolve {raw}: no home directory is configured"),
                    )
                }
            }
        } else {
            base_dir.join(raw)
        };
        let lexical = normalize_lexically(&candidate);

        let metadata = match fs::metadata(&candidate) {
            Ok(metadata) => metadata,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                return self.missing(token, explicit, base_dir, lexical);
            }
            Err(err) => {
                return fail(
                    FileRefErrorKind::Unreadable,
                    lexical.clone(),
                    format!("cannot inspect {}: {err}", lexical.display()),
                )
            }
        };
        let real = match fs::canonicalize(&candidate) {
            Ok(real) => real,
            Err(err) => {
                return fail(
                    FileRefErrorKind::Unreadable,
                    lexical.clone(),
                    format!("cannot resolve {}: {err}", lexical.display()),
                )
            }
        };
        let Some(root) = self
            .roots
            .iter()
            .find(|root| real.starts_with(root))
            .cloned()
        else {
            let via_link = self.lexically_inside(&lexical);
            let message = if via_link {
                format!(
                    "{} is a link to {}, which is outside the workspace",
                    lexical.display(),
                    real.display()
                )
            } else {
                format!("{} is outside the workspace", lexical.display())
            };
            return fail(FileRefErrorKind::OutsideWorkspace, lexical, message);
        };
        if self.records.iter().any(|record| record.source_path == real) {
            return Outcome::Skipped;
        }
        if metadata.is_dir() {
            return fail(
                FileRefErrorKind::Directory,
                lexical.clone(),
                format!(
                    "{} is a directory; reference the files in it one by one",
                    lexical.display()
                ),
            );
        }
        if !metadata.is_file() {
            return fail(
                FileRefErrorKind::Unreadable,
                lexical.clone(),
                format!("{} is not a regular file", lexical.display()),
            );
        }
        if self.records.len() >= self.options.max_references {
            return fail(
                FileRefErrorKind::TooManyReferences,
                lexical,
                format!(
                    "too many file references; at most {} files can be attached to one prompt",
                    self.options.max_references
                ),
            );
        }
        if metadata.len() > self.options.max_file_bytes {
            return fail(
                FileRefErrorKind::FileTooLarge,
                lexical.clone(),
                format!(
                    "{} is {} bytes, over the {}-byte limit per file; ask for the parts you need \
                     instead",
                    lexical.display(),
                    metadata.len(),
                    self.options.max_file_bytes
                ),
            );
        }
        if let Some(guard) = &self.options.read_guard {
            if let Some(reason) = guard(&real) {
                return fail(
                    FileRefErrorKind::Denied,
                    lexical.clone(),
                    format!("{} may not be read: {reason}", lexical.display()),
                );
            }
        }
        let bytes = match read_at_most(&real, self.options.max_file_bytes) {
            Ok(bytes) => bytes,
            Err(err) => {
                let kind = match err {
                    crate::files::FileError::TooLarge { .. } => FileRefErrorKind::FileTooLarge,
                    _ => FileRefErrorKind::Unreadable,
                };
                return fail(kind, lexical.clone(), err.to_string());
            }
        };
        if bytes[..bytes.len().min(BINARY_SNIFF_BYTES)].contains(&0) {
            return fail(
                FileRefErrorKind::Binary,
                lexical.clone(),
                format!(
                    "{} is not a text file, so it cannot be attached",
                    lexical.display()
                ),
            );
        }
        let length = bytes.len() as u64;
        if self.total_bytes + length > self.options.max_total_bytes {
            return fail(
                FileRefErrorKind::TotalTooLarge,
                lexical,
                format!(
                    "attaching it would pass the {}-byte limit for all referenced files together",
                    self.options.max_total_bytes
                ),
            );
        }
        let content = String::from_utf8_lossy(&bytes).into_owned();
        self.total_bytes += length;
        let relative_path = display_path(&real, &root);
        let reason = if depth == 0 {
            FileRefReason::PromptReference
        } else {
            FileRefReason::NestedReference
        };
        self.records.push(FileRefRecord {
            source_path: real.clone(),
            relative_path: relative_path.clone(),
            original_reference: token.original.clone(),
            reason,
            depth,
            byte_length: length,
        });
        self.blocks.push(FileContextBlock {
            relative_path,
            source_path: real.clone(),
            content: content.clone(),
            reason,
        });
        let dir = real
            .parent()
            .map_or_else(|| root.clone(), Path::to_path_buf);
        Outcome::Attached { content, dir }
    }

    /// A path that does not exist: blocking only when it clearly names a file (module docs, rule
    /// 3 and 4).
    fn missing(&self, token: &Token, explicit: bool, base_dir: &Path, lexical: PathBuf) -> Outcome {
        if explicit && !self.lexically_inside(&lexical) {
            let message = format!("{} is outside the workspace", lexical.display());
            return fail(FileRefErrorKind::OutsideWorkspace, lexical, message);
        }
        let typo_in_existing_dir = token
            .path
            .split_once('/')
            .is_some_and(|(first, _)| !first.is_empty() && base_dir.join(first).is_dir());
        let message = format!("no file at {}", lexical.display());
        if explicit || typo_in_existing_dir {
            return fail(FileRefErrorKind::NotFound, lexical, message);
        }
        Outcome::Failed {
            kind: FileRefErrorKind::NotFound,
            path: lexical,
            message: format!("{message}; sent as plain text"),
            soft: true,
        }
    }

    fn lexically_inside(&self, lexical: &Path) -> bool {
        self.lexical_roots
            .iter()
            .any(|root| lexical.starts_with(root))
    }
}

fn fail(kind: FileRefErrorKind, path: PathBuf, message: String) -> Outcome {
    Outcome::Failed {
        kind,
        path,
        message,
        soft: false,
    }
}

/// Reads a referenced file: a regular file (checked on the opened descriptor, so a FIFO swapped
/// in after the checks above cannot block) of at most `limit` bytes, even if it grows meanwhile.
fn read_at_most(path: &Path, limit: u64) -> Result<Vec<u8>, crate::files::FileError> {
    crate::files::read_regular(path, &crate::files::FileKind::new("referenced file", limit))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(text: &str) -> Vec<String> {
        scan_tokens(text).into_iter().map(|t| t.path).collect()
    }

    #[test]
    fn tokens_follow_the_documented_grammar() {
        assert_eq!(paths("see @README.md."), vec!["README.md"]);
        assert_eq!(paths("mail a@b.com now"), Vec::<String>::new());
        assert_eq!(paths("(@docs/a.md) and [@b.rs]"), vec!["docs/a.md", "b.rs"]);
        assert_eq!(paths("@\"a b.md\" x"), vec!["a b.md"]);
        assert_eq!(paths("`@literal.md`"), Vec::<String>::new());
        assert_eq!(paths("@ alone and @... dots"), Vec::<String>::new());
        assert_eq!(paths("é@x.md @ü.md"), vec!["ü.md"]);
    }
}
