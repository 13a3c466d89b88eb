//! Symbolic links from the real file system, for the permission engine.
//!
//! The permission module is pure and never touches the disk; it asks a [`PathResolver`] where a
//! path really leads. The session is allowed I/O, so it answers with [`FsPathResolver`]: the path
//! is walked component by component as the kernel would (each symbolic link replaced by its
//! target, `..` climbing from where the link led), so `link/../x`, links to links and dangling
//! links that a write would create through are all resolved. Components that do not exist yet
//! are kept as written.

use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

use crate::permissions::PathResolver;

/// Links followed before giving up on a path (Linux's own limit is 40).
const MAX_LINK_HOPS: usize = 40;

/// Resolves paths through the real file system.
#[derive(Debug, Clone, Copy, Default)]
pub struct FsPathResolver;

impl PathResolver for FsPathResolver {
    fn resolve(&self, path: &Path) -> Option<PathBuf> {
        let resolved = resolve_on_disk(path)?;
        (resolved != lexical(path)).then_some(resolved)
    }

    fn is_dir(&self, path: &Path) -> Option<bool> {
        // A missing path is not a directory (yet); unreadable metadata stays unknown.
        match std::fs::metadata(path) {
            Ok(meta) => Some(meta.is_dir()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Some(false),
            Err(_) => None,
        }
    }
}

#[derive(Debug, Clone)]
enum Part {
    Root,
    Parent,
    Name(OsString),
}

fn parts(path: &Path) -> Vec<Part> {
    path.components()
        .filter_map(|c| match c {
            Component::RootDir | Component::Prefix(_) => Some(Part::Root),
            Component::CurDir => None,
            Component::ParentDir => Some(Part::Parent),
            Component::Normal(name) => Some(Part::Name(name.to_os_string())),
        })
        .collect()
}

/// `path` with `.` and `..` removed without looking at the disk.
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    for part in parts(path) {
        match part {
            Part::Root => out = PathBuf::from("/"),
            Part::Parent => {
                out.pop();
            }
            Part::Name(name) => out.push(name),
        }
    }
    out
}

/// The path with every symbolic link on the way replaced by its target; `None` for a link loop.
fn resolve_on_disk(path: &Path) -> Option<PathBuf> {
    let mut pending: std::collections::VecDeque<Part> = parts(path).into();
    let mut current = PathBuf::from("/");
    let mut hops = 0usize;
    // Once a component is missing, nothing below it can be a link.
    let mut missing = false;
    while let Some(part) = pending.pop_front() {
        match part {
            Part::Root => current = PathBuf::from("/"),
            Part::Parent => {
                current.pop();
            }
            Part::Name(name) => {
                let candidate = current.join(&name);
                if !missing {
                    match std::fs::symlink_metadata(&candidate) {
                        Ok(meta) if meta.file_type().is_symlink() => {
                            hops += 1;
                            if hops > MAX_LINK_HOPS {
                                return None;
                            }
                            let target = std::fs::read_link(&candidate).ok()?;
                            // A relative target is relative to the link's directory, which is
                            // `current`; an absolute one starts with a root part.
                            for part in parts(&target).into_iter().rev() {
                                pending.push_front(part);
                            }
                            continue;
                        }
                        Ok(_) => {}
                        Err(_) => missing = true,
                    }
                }
                current = candidate;
            }
        }
    }
    Some(current)
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn follows_links_dangling_links_and_parent_steps() {
        let base =
            std::env::temp_dir().join(format!("robota-fs-resolver-{}", uuid::Uuid::new_v4()));
        let real = base.join("real");
        let _ = std::fs::create_dir_all(real.join("sub"));
        let base = std::fs::canonicalize(&base).unwrap_or(base);
        let real = base.join("real");
        let link = base.join("link");
        let _ = std::os::unix::fs::symlink(&real, &link);
        let dangling = base.join("dangling");
        let _ = std::os::unix::fs::symlink("/etc/robota-never-exists", &dangling);

        let r = FsPathResolver;
        assert_eq!(
            r.resolve(&link.join("sub/file")),
            Some(real.join("sub/file"))
        );
        assert_eq!(r.resolve(&link.join("sub/../x")), Some(real.join("x")));
        assert_eq!(
            r.resolve(&dangling),
            Some(PathBuf::from("/etc/robota-never-exists"))
        );
        assert_eq!(r.resolve(&real.join("sub/new")), None);

        let loop_a = base.join("a");
        let _ = std::os::unix::fs::symlink(base.join("b"), &loop_a);
        let _ = std::os::unix::fs::symlink(&loop_a, base.join("b"));
        assert_eq!(r.resolve(&loop_a.join("x")), None);
        let _ = std::fs::remove_dir_all(base);
    }
}
