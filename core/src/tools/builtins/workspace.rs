//! Path containment: turns a path the model gave into a real path inside the session's workspace
//! roots, or refuses it with a message the model can act on.
//!
//! Why canonicalise instead of comparing strings: `..` segments and symbolic links can make a path
//! that *looks* inside the workspace land outside it. The longest existing prefix of the path is
//! resolved by the operating system (following every link), and only the not-yet-existing tail is
//! normalised lexically — a path that does not exist cannot contain a link. A dangling link is
//! refused outright, because writing through it would create a file wherever it points.
//!
//! Limits: a check-then-use race (a directory swapped for a link between the check and the open)
//! is not defended against; the permission layer and OS sandboxing are the places for that.

use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::OnceLock;

/// Whether a path will be read or written; writes are limited to the workspace roots, reads may
/// also reach the session directory (where spilled outputs live).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Access {
    Read,
    Write,
}

/// A path that passed the containment check.
#[derive(Debug, Clone)]
pub(crate) struct Resolved {
    /// Absolute, lexically normalised path as the model would recognise it (cwd joined, `..`
    /// removed, links *not* resolved) — used in messages so they quote the model's own terms.
    pub display: PathBuf,
    /// The real path (links resolved) that the tool operates on.
    pub real: PathBuf,
}

/// The workspace of one set of tools: the session cwd (given per call) plus configured extra roots,
/// and the session directory for spilled outputs.
#[derive(Debug)]
pub(crate) struct Workspace {
    additional_roots: Vec<PathBuf>,
    session_dir: SessionDir,
}

impl Workspace {
    pub fn new(additional_roots: Vec<PathBuf>, session_dir: SessionDir) -> Self {
        Workspace {
            additional_roots,
            session_dir,
        }
    }

    pub fn session_dir(&self) -> &SessionDir {
        &self.session_dir
    }

    /// The canonical roots a call may touch with `access`. Roots that do not exist are skipped
    /// (they cannot contain anything yet); the cwd must exist.
    pub fn roots(&self, cwd: &Path, access: Access) -> Result<Vec<PathBuf>, String> {
        let mut roots = Vec::with_capacity(2 + self.additional_roots.len());
        match std::fs::canonicalize(cwd) {
            Ok(root) => roots.push(root),
            Err(err) => {
                return Err(format!(
                    "The session working directory {} is not usable ({err}); the tool cannot run \
                     until it exists.",
                    cwd.display()
                ))
            }
        }
        for root in &self.additional_roots {
            let root = if root.is_absolute() {
                root.clone()
            } else {
                cwd.join(root)
            };
            if let Ok(root) = std::fs::canonicalize(&root) {
                roots.push(root);
            }
        }
        if access == Access::Read {
            if let Some(dir) = self.session_dir.existing() {
                roots.push(dir);
            }
        }
        Ok(roots)
    }

    /// Resolves `raw` (absolute, relative to `cwd`, or `~/…`) and checks it lies inside a root.
    pub fn resolve(&self, cwd: &Path, raw: &str, access: Access) -> Result<Resolved, String> {
        if raw.trim().is_empty() {
            return Err(
                "The path is empty; give an absolute path or one relative to the \
                        working directory."
                    .into(),
            );
        }
        if raw.contains('\0') {
            return Err("The path contains a NUL byte, which no file name can contain.".into());
        }
        let roots = self.roots(cwd, access)?;
        let joined = join_path(cwd, raw);
        let display = normalize_lexically(&joined);
        let real = canonicalize_allowing_missing(&joined)
            .map_err(|problem| format!("Cannot use {}: {problem}", display.display()))?;
        if roots.iter().any(|root| real.starts_with(root)) {
            return Ok(Resolved { display, real });
        }
        // Lexically inside but really outside means a symbolic link led out of the workspace.
        let cwd_lexical = normalize_lexically(cwd);
        let via_link =
            display.starts_with(&cwd_lexical) || roots.iter().any(|root| display.starts_with(root));
        let reason = if via_link {
            format!(
                "{} resolves through a symbolic link to {}, which is outside the workspace",
                display.display(),
                real.display()
            )
        } else {
            format!("{} is outside the workspace", display.display())
        };
        Err(format!(
            "Access denied: {reason} (workspace roots: {}). Only paths inside the workspace can be \
             {}; use a path under one of these roots, or ask the user to add the directory as an \
             additional workspace root.",
            roots
                .iter()
                .map(|r| r.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
            if access == Access::Write {
                "written"
            } else {
                "read"
            }
        ))
    }

    /// The display form of a real path: relative to the cwd when inside it (shorter for the model,
    /// and the tools resolve relative paths against the cwd), absolute otherwise.
    pub fn display_relative(cwd_real: &Path, cwd_display: &Path, path: &Path) -> String {
        if let Ok(rel) = path.strip_prefix(cwd_real) {
            if !rel.as_os_str().is_empty() {
                return rel.display().to_string();
            }
        }
        if let Ok(rel) = path.strip_prefix(cwd_display) {
            if !rel.as_os_str().is_empty() {
                return rel.display().to_string();
            }
        }
        path.display().to_string()
    }
}

/// Joins a model-given path onto the cwd, expanding a leading `~` to `$HOME`.
fn join_path(cwd: &Path, raw: &str) -> PathBuf {
    if raw == "~" || raw.starts_with("~/") {
        if let Some(home) = std::env::var_os("HOME") {
            let rest = raw.trim_start_matches('~').trim_start_matches('/');
            return Path::new(&home).join(rest);
        }
    }
    let path = Path::new(raw);
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        cwd.join(path)
    }
}

/// Removes `.` and resolves `..` textually. Only used for display and for the non-existing tail.
pub(crate) fn normalize_lexically(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push(component);
                }
            }
            other => out.push(other),
        }
    }
    out
}

/// Canonicalises the longest existing prefix of `path` and appends the rest lexically.
fn canonicalize_allowing_missing(path: &Path) -> Result<PathBuf, String> {
    let mut prefix = path.to_path_buf();
    let mut tail: Vec<std::ffi::OsString> = Vec::new();
    loop {
        match std::fs::canonicalize(&prefix) {
            Ok(real) => {
                let mut out = real;
                for part in tail.iter().rev() {
                    if part == ".." {
                        out.pop();
                    } else if part != "." {
                        out.push(part);
                    }
                }
                return Ok(out);
            }
            Err(err) => {
                if let Ok(meta) = std::fs::symlink_metadata(&prefix) {
                    if meta.file_type().is_symlink() {
                        return Err(format!(
                            "{} is a symbolic link whose target does not exist or cannot be \
                             resolved; refusing to follow it",
                            prefix.display()
                        ));
                    }
                    if err.kind() != io::ErrorKind::NotFound {
                        return Err(format!("{} cannot be resolved: {err}", prefix.display()));
                    }
                }
                match (prefix.file_name(), prefix.parent()) {
                    (Some(name), Some(parent)) => {
                        tail.push(name.to_os_string());
                        prefix = parent.to_path_buf();
                    }
                    _ => {
                        // `..` or `.` as the last component: keep it in the tail and step up.
                        let last = prefix.components().next_back();
                        match (last, prefix.parent()) {
                            (Some(Component::ParentDir), Some(parent)) => {
                                tail.push("..".into());
                                prefix = parent.to_path_buf();
                            }
                            (Some(Component::CurDir), Some(parent)) => {
                                prefix = parent.to_path_buf();
                            }
                            _ => return Err(format!("no part of {} exists", path.display())),
                        }
                    }
                }
            }
        }
    }
}

/// The per-session directory where tools spill full outputs and background tasks write theirs.
///
/// Layout (created on first use):
///
/// - `spill/` — full outputs too long to show (Bash, Grep, Glob, WebFetch, WebSearch), named in
///   the tool result so the model can Read them. Bounded: when the files together exceed
///   [`BuiltinToolsConfig::max_spill_bytes`](super::BuiltinToolsConfig::max_spill_bytes), the
///   oldest are removed (and the tool result that removed them says so).
/// - `tasks/` — the stdout and stderr files of background tasks (not bounded: they are live
///   logs the model reads while the task runs).
/// - `running/` — a Bash call's output while it runs; moved to `spill/` when too long to show,
///   removed otherwise.
///
/// A session saved in a store uses `.robota/sessions/<id>/` (see
/// the session layer's `SessionStore::session_dir`): the files
/// stay readable after a resume and are deleted with the session. Without a configured directory
/// a private one under the system temp dir is used, removed when the tools are dropped.
#[derive(Debug)]
pub(crate) struct SessionDir {
    configured: Option<PathBuf>,
    created: OnceLock<Result<PathBuf, String>>,
    max_spill_bytes: u64,
    /// One spill-limit pass at a time (two calls finishing together must not both delete).
    pruning: std::sync::Mutex<()>,
}

/// Spill files of a session: the directory's `spill/` subdirectory.
pub(crate) const SPILL_DIR: &str = "spill";
const TASKS_DIR: &str = "tasks";
const RUNNING_DIR: &str = "running";

/// What keeping the spill files under their limit did.
#[derive(Debug, Default)]
pub(crate) struct Pruned {
    /// Older spill files removed, oldest first.
    pub removed: Vec<PathBuf>,
    /// A file just kept that alone exceeded the limit, cut to this many bytes.
    pub cut: Option<(PathBuf, u64)>,
    /// The limit.
    pub limit: u64,
}

impl Pruned {
    /// A sentence for the tool result, or `None` when nothing was removed or cut.
    pub fn note(&self) -> Option<String> {
        let mut parts = Vec::new();
        if !self.removed.is_empty() {
            let names: Vec<String> = self
                .removed
                .iter()
                .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
                .collect();
            parts.push(format!(
                "{} older saved output file{} ({}) {} removed to keep this session's saved \
                 outputs under {} bytes.",
                names.len(),
                if names.len() == 1 { "" } else { "s" },
                names.join(", "),
                if names.len() == 1 { "was" } else { "were" },
                self.limit
            ));
        }
        if let Some((path, kept)) = &self.cut {
            parts.push(format!(
                "The saved output {} was cut to its first {kept} bytes (this session keeps at \
                 most {} bytes of saved outputs).",
                path.display(),
                self.limit
            ));
        }
        (!parts.is_empty()).then(|| parts.join(" "))
    }
}

impl SessionDir {
    pub(crate) fn new(configured: Option<PathBuf>, max_spill_bytes: u64) -> Self {
        SessionDir {
            configured,
            created: OnceLock::new(),
            max_spill_bytes,
            pruning: std::sync::Mutex::new(()),
        }
    }

    /// The directory, creating it if needed.
    pub fn get(&self) -> Result<PathBuf, String> {
        self.created
            .get_or_init(|| {
                let dir = match &self.configured {
                    Some(dir) => dir.clone(),
                    None => std::env::temp_dir().join(format!(
                        "robota-session-{}-{}",
                        std::process::id(),
                        uuid::Uuid::new_v4().simple()
                    )),
                };
                create_private_dir_all(&dir)
                    .and_then(|()| std::fs::canonicalize(&dir))
                    .map_err(|err| {
                        format!(
                            "cannot create the session directory {}: {err}",
                            dir.display()
                        )
                    })
            })
            .clone()
    }

    /// The directory if it exists (reads of spilled files only make sense then).
    pub fn existing(&self) -> Option<PathBuf> {
        match self.created.get() {
            Some(Ok(dir)) => Some(dir.clone()),
            _ => self
                .configured
                .as_ref()
                .and_then(|d| std::fs::canonicalize(d).ok()),
        }
    }

    /// The spill directory, when the session directory exists.
    pub fn existing_spill_dir(&self) -> Option<PathBuf> {
        self.existing().map(|dir| dir.join(SPILL_DIR))
    }

    fn subdir(&self, name: &str) -> Result<PathBuf, String> {
        let dir = self.get()?.join(name);
        create_private_dir_all(&dir).map_err(|err| {
            format!(
                "cannot create the output directory {}: {err}",
                dir.display()
            )
        })?;
        Ok(dir)
    }

    /// A fresh path under `spill/` for `stem` (sanitised) and `ext`.
    pub fn new_spill_path(&self, stem: &str, ext: &str) -> Result<PathBuf, String> {
        Ok(self.subdir(SPILL_DIR)?.join(unique_name(stem, ext)))
    }

    /// A fresh path under `tasks/` (background-task output).
    pub fn new_task_path(&self, stem: &str, ext: &str) -> Result<PathBuf, String> {
        Ok(self.subdir(TASKS_DIR)?.join(unique_name(stem, ext)))
    }

    /// A fresh path under `running/` (a call's output while it runs).
    pub fn new_running_path(&self, stem: &str, ext: &str) -> Result<PathBuf, String> {
        Ok(self.subdir(RUNNING_DIR)?.join(unique_name(stem, ext)))
    }

    /// Moves a finished call's output file from `running/` to `spill/` (same name).
    pub fn keep_running_file(&self, running: &Path) -> Result<PathBuf, String> {
        let name = running
            .file_name()
            .ok_or_else(|| format!("{} has no file name", running.display()))?;
        let kept = self.subdir(SPILL_DIR)?.join(name);
        std::fs::rename(running, &kept).map_err(|err| {
            format!(
                "cannot move {} to {}: {err}",
                running.display(),
                kept.display()
            )
        })?;
        Ok(kept)
    }

    /// Keeps the spill files under the limit: removes the oldest (by modification time) until
    /// they fit, never one of `fresh` (the files the current call just saved and names in its
    /// result); when `fresh` alone does not fit, the largest of them is cut to what is left.
    pub fn enforce_spill_limit(&self, fresh: &[&Path]) -> Pruned {
        let mut pruned = Pruned {
            limit: self.max_spill_bytes,
            ..Pruned::default()
        };
        let Some(dir) = self.existing_spill_dir() else {
            return pruned;
        };
        let _one_pass = self.pruning.lock().unwrap_or_else(|p| p.into_inner());
        let Ok(entries) = std::fs::read_dir(&dir) else {
            return pruned;
        };
        let is_fresh = |path: &Path| fresh.iter().any(|f| f.file_name() == path.file_name());
        let mut older = Vec::new();
        let mut total: u64 = 0;
        let mut fresh_files = Vec::new();
        for entry in entries.flatten() {
            let Ok(meta) = entry.metadata() else { continue };
            if !meta.is_file() {
                continue;
            }
            total += meta.len();
            let path = entry.path();
            if is_fresh(&path) {
                fresh_files.push((meta.len(), path));
            } else {
                let modified = meta.modified().unwrap_or(std::time::UNIX_EPOCH);
                older.push((modified, path, meta.len()));
            }
        }
        if total <= self.max_spill_bytes {
            return pruned;
        }
        older.sort();
        for (_, path, len) in older {
            if total <= self.max_spill_bytes {
                break;
            }
            if std::fs::remove_file(&path).is_ok() {
                total -= len;
                pruned.removed.push(path);
            }
        }
        if total > self.max_spill_bytes {
            fresh_files.sort();
            if let Some((len, path)) = fresh_files.pop() {
                let over = total - self.max_spill_bytes;
                let keep = len.saturating_sub(over);
                let cut = std::fs::OpenOptions::new()
                    .write(true)
                    .open(&path)
                    .and_then(|file| file.set_len(keep));
                if cut.is_ok() {
                    pruned.cut = Some((path, keep));
                }
            }
        }
        pruned
    }
}

impl Drop for SessionDir {
    fn drop(&mut self) {
        // A private temp directory dies with the tools; a configured one belongs to the session.
        if self.configured.is_none() {
            if let Some(Ok(dir)) = self.created.get() {
                let _ = std::fs::remove_dir_all(dir);
            }
        }
    }
}

/// `<stem>-<8 random hex>.<ext>`, the stem reduced to `[A-Za-z0-9_-]` and 64 characters.
fn unique_name(stem: &str, ext: &str) -> String {
    let mut clean: String = stem
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    if clean.is_empty() {
        clean.push_str("output");
    }
    let unique = uuid::Uuid::new_v4().simple().to_string();
    format!("{clean}-{}.{ext}", &unique[..8])
}

/// Creates `dir` and its missing parents; on Unix the directories created get mode 0700 (tool
/// output can hold secrets).
fn create_private_dir_all(dir: &Path) -> io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lexical_normalisation() {
        assert_eq!(
            normalize_lexically(Path::new("/a/b/../c/./d")),
            PathBuf::from("/a/c/d")
        );
    }

    #[test]
    fn missing_tail_is_appended() {
        let dir = tempfile::tempdir().unwrap();
        let real = std::fs::canonicalize(dir.path()).unwrap();
        let out = canonicalize_allowing_missing(&dir.path().join("x/y/../z")).unwrap();
        assert_eq!(out, real.join("x/z"));
    }
}
