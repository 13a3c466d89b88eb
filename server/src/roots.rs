//! Project roots: the folders sessions may work in. A requested folder is resolved (symlinks
//! followed, `..` removed by the filesystem) and must be one of the roots or inside one, so no
//! route can open a session — or read or write a file through one of its routes — elsewhere.

use std::path::{Path, PathBuf};

use crate::error::ServeError;

/// The canonical project roots of a server.
#[derive(Debug, Clone)]
pub struct ProjectRoots {
    roots: Vec<PathBuf>,
}

impl ProjectRoots {
    /// Resolves `roots` (each must be an existing directory). At least one is needed.
    pub fn new(roots: &[PathBuf]) -> Result<Self, String> {
        if roots.is_empty() {
            return Err("at least one project root is needed (--root DIR)".into());
        }
        let mut resolved = Vec::new();
        for root in roots {
            let canonical = root
                .canonicalize()
                .map_err(|e| format!("project root {}: {e}", root.display()))?;
            if !canonical.is_dir() {
                return Err(format!("project root {}: not a directory", root.display()));
            }
            resolved.push(canonical);
        }
        Ok(ProjectRoots { roots: resolved })
    }

    /// The roots, resolved.
    pub fn roots(&self) -> &[PathBuf] {
        &self.roots
    }

    /// The first root (where sessions open when the request names no folder).
    pub fn default_root(&self) -> &Path {
        // `new` refuses an empty list.
        &self.roots[0]
    }

    /// Resolves a requested project folder: absolute, or relative to the first root; it must
    /// exist, be a directory, and resolve inside a root.
    pub fn resolve(&self, requested: Option<&str>) -> Result<PathBuf, ServeError> {
        let Some(requested) = requested else {
            return Ok(self.default_root().to_path_buf());
        };
        if requested.is_empty() || requested.contains('\0') {
            return Err(ServeError::invalid("`cwd` must be a folder path"));
        }
        let path = Path::new(requested);
        let joined = if path.is_absolute() {
            path.to_path_buf()
        } else {
            self.default_root().join(path)
        };
        let outside = || {
            ServeError::outside_roots(format!(
                "`{requested}` is not inside a project root of this server; sessions may work in: {}",
                self.roots
                    .iter()
                    .map(|r| r.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        };
        // A folder that does not exist is reported as outside when its parent lies outside, so
        // the answer does not reveal which paths exist elsewhere.
        let canonical = match joined.canonicalize() {
            Ok(canonical) => canonical,
            Err(_) => {
                let parent_inside = joined
                    .parent()
                    .and_then(|p| p.canonicalize().ok())
                    .is_some_and(|p| self.contains(&p));
                return Err(if parent_inside {
                    ServeError::invalid(format!("`{requested}`: no such folder"))
                } else {
                    outside()
                });
            }
        };
        if !self.contains(&canonical) {
            return Err(outside());
        }
        if !canonical.is_dir() {
            return Err(ServeError::invalid(format!("`{requested}`: not a folder")));
        }
        Ok(canonical)
    }

    /// True when the canonical `path` is a root or inside one.
    pub fn contains(&self, path: &Path) -> bool {
        self.roots.iter().any(|root| path.starts_with(root))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folders_outside_the_roots_and_symlink_escapes_are_refused(
    ) -> Result<(), Box<dyn std::error::Error>> {
        let base = tempfile::tempdir()?;
        let root = base.path().join("root");
        let outside = base.path().join("outside");
        std::fs::create_dir_all(root.join("project"))?;
        std::fs::create_dir_all(&outside)?;
        #[cfg(unix)]
        std::os::unix::fs::symlink(&outside, root.join("escape"))?;
        let roots = ProjectRoots::new(std::slice::from_ref(&root))?;
        assert!(roots.resolve(Some("project"))?.ends_with("project"));
        assert!(roots.resolve(None)?.ends_with("root"));
        let refused = |path: &str| roots.resolve(Some(path)).err().map(|e| e.code);
        assert_eq!(
            refused(&outside.display().to_string()),
            Some("path_outside_roots")
        );
        assert_eq!(refused("../outside"), Some("path_outside_roots"));
        assert_eq!(refused("project/../../outside"), Some("path_outside_roots"));
        #[cfg(unix)]
        assert_eq!(refused("escape"), Some("path_outside_roots"));
        assert_eq!(refused("/etc"), Some("path_outside_roots"));
        assert_eq!(refused("/nonexistent/x"), Some("path_outside_roots"));
        assert_eq!(refused("missing"), Some("invalid_request"));
        Ok(())
    }
}
