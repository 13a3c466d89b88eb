//! Worktree isolation for subagents: creating a git worktree for one subagent run (or letting
//! WorktreeCreate hooks create it), and removing it afterwards when nothing changed in it.
//!
//! - **Default creation** runs the real `git` binary: `git worktree add -b robota-agent-<id>
//!   <repo>/.robota/worktrees/<id> HEAD`. `.robota/worktrees/` gets a `.gitignore` of `*` so the
//!   parent checkout does not list the worktrees as untracked.
//! - **WorktreeCreate hooks** with a `command` or `http` handler *replace* that: the hook creates
//!   the worktree and reports its path (last line of stdout, or `hookSpecificOutput.worktreePath`);
//!   any failure (non-zero exit, a block, no path, a path that is not a directory) fails creation
//!   and the subagent does not run. Other handler kinds (host callbacks, prompt hooks) are told
//!   after a default creation.
//! - **Finishing**: a worktree with uncommitted changes or new commits is kept and reported
//!   (path and branch). A clean one is removed — `git worktree remove` and the branch deleted
//!   for one robota created; a hook-created one is left to the WorktreeRemove hooks — and
//!   WorktreeRemove fires (notification only).
//!
//! Not being in a git repository (or having no commit yet) is a [`WorktreeError`]: isolation is
//! never silently dropped.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::hooks::{
    HandlerType, HookCommon, HookEvent, HookEventInput, HookInput, WorktreeCreateInput,
    WorktreeRemoveInput,
};
use crate::session::Session;

/// Where worktrees go, relative to the repository root.
pub const WORKTREES_DIR: &str = ".robota/worktrees";

/// Why a worktree could not be created.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WorktreeError {
    /// The session's directory is not inside a git repository.
    #[error(
        "worktree isolation needs a git repository, but {} is not inside one ({message}); run \
         `git init` and commit, or start the subagent without isolation",
        cwd.display()
    )]
    NotAGitRepository {
        /// The directory.
        cwd: PathBuf,
        /// What git said.
        message: String,
    },
    /// The repository has no commit to base the worktree on.
    #[error("worktree isolation needs a commit to start from, but the repository at {} has none yet; commit first", root.display())]
    NoCommit {
        /// The repository root.
        root: PathBuf,
    },
    /// `git` could not be run.
    #[error("could not run git ({message}); install git or start the subagent without isolation")]
    GitUnavailable {
        /// The OS error.
        message: String,
    },
    /// A git command failed.
    #[error("`git {command}` failed: {message}")]
    Git {
        /// The arguments.
        command: String,
        /// Its stderr.
        message: String,
    },
    /// A WorktreeCreate hook failed or blocked; the subagent was not started.
    #[error("a WorktreeCreate hook failed, so the worktree was not created: {reason}")]
    Hook {
        /// The hooks' reasons.
        reason: String,
    },
    /// The WorktreeCreate hooks succeeded but said no path.
    #[error(
        "the WorktreeCreate hook did not report a worktree path; it must print the path as the \
         last line of stdout (command hooks) or return hookSpecificOutput.worktreePath (HTTP hooks)"
    )]
    HookGaveNoPath,
    /// The path the hook reported is not a directory.
    #[error("the WorktreeCreate hook reported {}, which is not a directory", path.display())]
    HookPathMissing {
        /// The reported path.
        path: PathBuf,
    },
    /// Creation was aborted.
    #[error("worktree creation was aborted")]
    Aborted,
}

/// A worktree a subagent runs in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Worktree {
    /// The worktree's directory.
    pub path: PathBuf,
    /// The directory the subagent works in: the worktree's counterpart of the session's cwd.
    pub cwd: PathBuf,
    /// The branch robota created for it (`None` for hook-created worktrees).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// The commit it started from, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_revision: Option<String>,
    /// True when a WorktreeCreate hook created it.
    pub created_by_hook: bool,
    /// The repository it belongs to (for default worktrees).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repo_root: Option<PathBuf>,
}

/// What happened to a worktree when its subagent finished.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum WorktreeDisposition {
    /// Nothing changed in it; it was removed (or, hook-created, handed to WorktreeRemove hooks).
    Removed,
    /// It has changes (or could not be checked or removed) and was kept.
    Kept {
        /// Why.
        reason: String,
    },
}

/// Output of one git command.
struct GitOutput {
    success: bool,
    stdout: String,
    stderr: String,
}

async fn git(dir: &Path, args: &[&str]) -> Result<GitOutput, WorktreeError> {
    let output = tokio::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output()
        .await
        .map_err(|e| WorktreeError::GitUnavailable {
            message: e.to_string(),
        })?;
    Ok(GitOutput {
        success: output.status.success(),
        stdout: String::from_utf8_lossy(&output.stdout).trim().to_string(),
        stderr: String::from_utf8_lossy(&output.stderr).trim().to_string(),
    })
}

async fn git_ok(dir: &Path, args: &[&str]) -> Result<String, WorktreeError> {
    let output = git(dir, args).await?;
    if output.success {
        Ok(output.stdout)
    } else {
        Err(WorktreeError::Git {
            command: args.join(" "),
            message: output.stderr,
        })
    }
}

fn common_for(session: &Session, agent_id: &str, agent_type: &str) -> HookCommon {
    session
        .enforcer()
        .hook_common(session.cwd())
        .with_agent(agent_id, agent_type)
}

/// Creates the worktree for subagent run `agent_id` (see the module docs).
pub async fn create_worktree(
    session: &Session,
    agent_id: &str,
    agent_type: &str,
    cancel: &CancellationToken,
) -> Result<Worktree, WorktreeError> {
    let cwd = session.cwd();
    let hooks = session.hooks();
    let repo = git(cwd, &["rev-parse", "--show-toplevel"]).await?;
    let root = repo.success.then(|| PathBuf::from(&repo.stdout));
    let base_path = root.as_ref().map(|r| r.join(WORKTREES_DIR));
    let mut request = WorktreeCreateInput::new(agent_id);
    request.base_path = base_path.as_ref().map(|p| p.to_string_lossy().into_owned());
    request.source_ref = Some("HEAD".into());
    let input = HookInput::new(
        common_for(session, agent_id, agent_type),
        HookEventInput::WorktreeCreate(request),
    );
    let replacing = hooks
        .plan(&input)
        .iter()
        .any(|h| matches!(h.kind, HandlerType::Command | HandlerType::Http));
    if replacing {
        let outcome = hooks.run(&input, cancel).await;
        session.report_hook_outcome(&outcome);
        if cancel.is_cancelled() {
            return Err(WorktreeError::Aborted);
        }
        if let Some(block) = &outcome.block {
            return Err(WorktreeError::Hook {
                reason: block.reason.clone(),
            });
        }
        if let Some(stop) = &outcome.stop {
            return Err(WorktreeError::Hook {
                reason: stop
                    .reason
                    .clone()
                    .unwrap_or_else(|| "the hook returned `continue: false`".into()),
            });
        }
        let path = outcome
            .worktree_path
            .map(PathBuf::from)
            .ok_or(WorktreeError::HookGaveNoPath)?;
        let path = if path.is_absolute() {
            path
        } else {
            cwd.join(path)
        };
        if !path.is_dir() {
            return Err(WorktreeError::HookPathMissing { path });
        }
        return Ok(Worktree {
            cwd: path.clone(),
            path,
            branch: None,
            base_revision: None,
            created_by_hook: true,
            repo_root: root,
        });
    }

    let Some(root) = root else {
        return Err(WorktreeError::NotAGitRepository {
            cwd: cwd.to_path_buf(),
            message: repo.stderr,
        });
    };
    let head = git(&root, &["rev-parse", "--verify", "HEAD"]).await?;
    if !head.success {
        return Err(WorktreeError::NoCommit { root });
    }
    let base = root.join(WORKTREES_DIR);
    std::fs::create_dir_all(&base).map_err(|e| WorktreeError::Git {
        command: format!("(create {})", base.display()),
        message: e.to_string(),
    })?;
    let ignore = base.join(".gitignore");
    if !ignore.exists() {
        // Best effort: without it the parent checkout only lists `.robota/` as untracked.
        let _ = std::fs::write(&ignore, "*\n");
    }
    let path = base.join(agent_id);
    let branch = format!("robota-agent-{agent_id}");
    let path_text = path.to_string_lossy().into_owned();
    git_ok(
        &root,
        &["worktree", "add", "-b", &branch, &path_text, "HEAD"],
    )
    .await?;
    // The subagent works in the worktree's counterpart of the session's cwd.
    let canonical_root = std::fs::canonicalize(&root).unwrap_or_else(|_| root.clone());
    let canonical_cwd = std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_path_buf());
    let sub_cwd = match canonical_cwd.strip_prefix(&canonical_root) {
        Ok(rel) if !rel.as_os_str().is_empty() => path.join(rel),
        _ => path.clone(),
    };
    let worktree = Worktree {
        cwd: if sub_cwd.is_dir() {
            sub_cwd
        } else {
            path.clone()
        },
        path,
        branch: Some(branch),
        base_revision: Some(head.stdout),
        created_by_hook: false,
        repo_root: Some(root),
    };
    if hooks.has_hooks(HookEvent::WorktreeCreate) {
        // Hooks that cannot create a worktree (callbacks, prompt hooks) are told about it.
        let mut told = input.clone();
        if let HookEventInput::WorktreeCreate(payload) = &mut told.event {
            payload.base_path = Some(base.to_string_lossy().into_owned());
        }
        let outcome = hooks.run(&told, cancel).await;
        session.report_hook_outcome(&outcome);
        if let Some(block) = outcome.block.filter(|_| !cancel.is_cancelled()) {
            let _ = remove_default(&worktree).await;
            return Err(WorktreeError::Hook {
                reason: block.reason,
            });
        }
    }
    Ok(worktree)
}

/// Why `worktree` must be kept, if it must: uncommitted changes, or commits beyond its base.
async fn changes(worktree: &Worktree) -> Option<String> {
    let status = match git(&worktree.path, &["status", "--porcelain"]).await {
        Ok(output) if output.success => output.stdout,
        Ok(output) => return Some(format!("its status could not be read: {}", output.stderr)),
        Err(error) => return Some(format!("its status could not be read: {error}")),
    };
    if !status.is_empty() {
        let count = status.lines().count();
        return Some(format!("it has {count} uncommitted change(s)"));
    }
    if let Some(base) = &worktree.base_revision {
        let range = format!("{base}..HEAD");
        if let Ok(output) = git(&worktree.path, &["rev-list", "--count", &range]).await {
            let commits = output.stdout.parse::<u64>().unwrap_or(0);
            if output.success && commits > 0 {
                return Some(format!("it has {commits} new commit(s)"));
            }
        }
    }
    None
}

async fn remove_default(worktree: &Worktree) -> Result<(), WorktreeError> {
    let root = worktree.repo_root.as_deref().unwrap_or(&worktree.path);
    let path = worktree.path.to_string_lossy().into_owned();
    git_ok(root, &["worktree", "remove", &path]).await?;
    if let Some(branch) = &worktree.branch {
        git_ok(root, &["branch", "-D", branch]).await?;
    }
    Ok(())
}

/// Removes `worktree` when nothing changed in it and fires WorktreeRemove; otherwise keeps it.
/// Runs to the end even after an abort (it is quick, and leaving a clean worktree behind is what
/// an abort should not do).
pub async fn finish_worktree(
    session: &Session,
    worktree: &Worktree,
    agent_id: &str,
    agent_type: &str,
) -> WorktreeDisposition {
    if let Some(reason) = changes(worktree).await {
        return WorktreeDisposition::Kept { reason };
    }
    if !worktree.created_by_hook {
        if let Err(error) = remove_default(worktree).await {
            return WorktreeDisposition::Kept {
                reason: format!("removing it failed: {error}"),
            };
        }
    }
    let hooks = session.hooks();
    if hooks.has_hooks(HookEvent::WorktreeRemove) {
        let input = HookInput::new(
            common_for(session, agent_id, agent_type),
            HookEventInput::WorktreeRemove(WorktreeRemoveInput {
                worktree_path: worktree.path.to_string_lossy().into_owned(),
            }),
        );
        // Notification only: failures are reported, nothing is blocked.
        let outcome = hooks.run(&input, &CancellationToken::new()).await;
        session.report_hook_outcome(&outcome);
    }
    WorktreeDisposition::Removed
}
