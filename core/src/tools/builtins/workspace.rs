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
    pub fn new(additional_roots: Vec<PathBuf>, session_dir: Option<PathBuf>) -> Self {
        Workspace {
            additional_roots,
            session_dir: SessionDir::new(session_dir),
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
/// Created on first use. When the host configured none, a fresh directory under the system temp
/// dir is used (one per set of tools, never shared between sessions). It is not deleted
/// automatically: the model may read spilled files later in the session.
#[derive(Debug)]
pub(crate) struct SessionDir {
    configured: Option<PathBuf>,
    created: OnceLock<Result<PathBuf, String>>,
}

impl SessionDir {
    fn new(configured: Option<PathBuf>) -> Self {
        SessionDir {
            configured,
            created: OnceLock::new(),
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
                std::fs::create_dir_all(&dir)
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

    /// The directory if it has been created (reads of spilled files only make sense then).
    pub fn existing(&self) -> Option<PathBuf> {
        match self.created.get() {
            Some(Ok(dir)) => Some(dir.clone()),
            _ => self
                .configured
                .as_ref()
                .and_then(|d| std::fs::canonicalize(d).ok()),
        }
    }

    /// A fresh file path under `<session dir>/tool-output/` for `stem` (sanitised) and `ext`.
    pub fn new_output_path(&self, stem: &str, ext: &str) -> Result<PathBuf, String> {
        let dir = self.get()?.join("tool-output");
        std::fs::create_dir_all(&dir).map_err(|err| {
            format!(
                "cannot create the output directory {}: {err}",
                dir.display()
            )
        })?;
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
        Ok(dir.join(format!("{clean}-{}.{ext}", &unique[..8])))
    }
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
