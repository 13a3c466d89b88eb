//! Just enough of git to find the repository root and the current branch, from the files alone
//! (no `git` process: context loading must be cheap and must not depend on a git install).

use std::path::{Path, PathBuf};

use super::text::read_text;

/// The nearest ancestor of `dir` (inclusive) that contains a `.git` entry — a directory in a normal
/// checkout, a file in a worktree or submodule.
pub(crate) fn find_git_root(dir: &Path) -> Option<PathBuf> {
    dir.ancestors()
        .find(|candidate| candidate.join(".git").symlink_metadata().is_ok())
        .map(Path::to_path_buf)
}

/// The branch checked out in the repository rooted at `root`, or `None` (detached HEAD, unreadable).
pub(crate) fn current_branch(root: &Path) -> Option<String> {
    let dot_git = root.join(".git");
    let git_dir = if dot_git.is_dir() {
        dot_git
    } else {
        // Worktrees and submodules: `.git` is a file saying `gitdir: <path>`.
        let pointer = read_text(&dot_git).ok()?;
        let target = pointer.trim().strip_prefix("gitdir:")?.trim().to_owned();
        let target = PathBuf::from(target);
        if target.is_absolute() {
            target
        } else {
            root.join(target)
        }
    };
    let head = read_text(&git_dir.join("HEAD")).ok()?;
    let branch = head.trim().strip_prefix("ref:")?.trim();
    branch
        .strip_prefix("refs/heads/")
        .filter(|name| !name.is_empty())
        .map(str::to_owned)
}
