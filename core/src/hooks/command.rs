//! The `command` executor: runs a hook as a process with the event JSON on stdin and maps its
//! exit code and output to Claude Code's semantics.
//!
//! How the process is run, and why:
//! - Through the user's POSIX shell with `-c` (`$ROBOTA_SHELL`, else `$SHELL` when it is bash,
//!   zsh, sh, dash, ksh or mksh, else `/bin/bash`, else `/bin/sh`), or `pwsh`/`powershell` for
//!   `shell: "powershell"`, or directly (no shell) in exec form (`args`).
//! - In a new session (`setsid`): no controlling TTY, as Claude Code promises hooks, so nothing
//!   can prompt on the user's terminal; and its own process group, registered with the session's
//!   [`ProcessGroups`], so a timeout, cancellation or the session's shutdown stops the whole tree
//!   (SIGTERM to the group, a grace period, then SIGKILL), and what the hook leaves running
//!   (`cmd &`) is stopped when it exits. A descendant that calls `setsid` itself escapes the
//!   group (see [`crate::process`]).
//! - stdin is a pipe carrying the JSON, then closed; stdout and stderr are pipes read
//!   concurrently and capped, so a chatty hook cannot exhaust memory and a hook that does not
//!   read stdin cannot deadlock the write.
//! - After the hook exits, its output pipes are drained for a short grace period only: a
//!   grandchild that escaped the group and holds them open must not hold the session.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;
use tokio_util::sync::CancellationToken;

use super::config::{CommandHook, HookShell};
use super::outcome::HookFailure;
use super::runner::OutputOverflow;
use super::runner::{RawReply, RawResult};
use crate::process::{ProcessGroups, ProcessKind};

/// Shells whose `-c` takes POSIX syntax; any other `$SHELL` (fish, nu, …) is not used.
const POSIX_SHELLS: &[&str] = &["bash", "zsh", "sh", "dash", "ksh", "mksh"];

/// How long output pipes are drained after the hook's process exits.
const DRAIN_GRACE: Duration = Duration::from_millis(250);

/// Everything the executor needs besides the handler.
pub(crate) struct CommandContext<'a> {
    pub cwd: &'a Path,
    pub env: Vec<(String, String)>,
    pub shell: Option<&'a Path>,
    pub kill_grace: Duration,
    pub output_limit: usize,
    /// The OS sandbox to run the hook in (`sandbox.hooks`), when it is active.
    pub sandbox: Option<&'a crate::sandbox::Sandbox>,
    /// The session's process groups, which the hook's group joins while it runs.
    pub processes: &'a ProcessGroups,
}

/// The POSIX shell command hooks run with.
pub(crate) fn resolve_posix_shell(configured: Option<&Path>) -> PathBuf {
    if let Some(shell) = configured {
        return shell.to_path_buf();
    }
    for var in ["ROBOTA_SHELL", "SHELL"] {
        if let Some(shell) = std::env::var_os(var).map(PathBuf::from) {
            let posix = shell
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| POSIX_SHELLS.contains(&n));
            if shell.is_absolute() && posix && shell.exists() {
                return shell;
            }
        }
    }
    let bash = PathBuf::from("/bin/bash");
    if bash.exists() {
        bash
    } else {
        PathBuf::from("/bin/sh")
    }
}

fn find_in_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
}

/// Replaces the project-directory variables in an exec-form word (no shell will).
fn expand_project_dir(word: &str, project_dir: &str) -> String {
    let mut word = word.to_string();
    for name in ["CLAUDE_PROJECT_DIR", "ROBOTA_PROJECT_DIR"] {
        word = word
            .replace(&format!("${{{name}}}"), project_dir)
            .replace(&format!("${name}"), project_dir);
    }
    word
}

fn build_command(hook: &CommandHook, ctx: &CommandContext<'_>) -> Result<Command, HookFailure> {
    let (program, args): (PathBuf, Vec<OsString>) = if let Some(args) = &hook.args {
        let project_dir = ctx
            .env
            .iter()
            .rev()
            .find(|(k, _)| k == "CLAUDE_PROJECT_DIR")
            .map_or("", |(_, v)| v.as_str());
        (
            PathBuf::from(expand_project_dir(&hook.command, project_dir)),
            args.iter()
                .map(|a| expand_project_dir(a, project_dir).into())
                .collect(),
        )
    } else {
        match hook.shell.unwrap_or(HookShell::Bash) {
            HookShell::Bash => (
                resolve_posix_shell(ctx.shell),
                vec!["-c".into(), hook.command.clone().into()],
            ),
            HookShell::Powershell => {
                let program = find_in_path("pwsh")
                    .or_else(|| find_in_path("powershell"))
                    .ok_or_else(|| HookFailure::Spawn {
                        message: "shell \"powershell\" requested but neither pwsh nor powershell is on PATH".into(),
                    })?;
                let args = ["-NoProfile", "-NonInteractive", "-Command", &hook.command];
                (program, args.iter().map(OsString::from).collect())
            }
        }
    };
    // A sandboxed hook starts in a new session set up by the sandbox itself.
    let sandboxed = ctx.sandbox.is_some();
    let mut cmd = match ctx.sandbox {
        Some(sandbox) => {
            sandbox
                .command(&program, &args, ctx.cwd)
                .map_err(|e| HookFailure::Spawn {
                    message: format!("{e} (the hook was not run; `sandbox.hooks` is on)"),
                })?
        }
        None => {
            let mut cmd = Command::new(&program);
            cmd.args(&args);
            cmd
        }
    };
    cmd.current_dir(ctx.cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    for (key, value) in &ctx.env {
        cmd.env(key, value);
    }
    if let Some(root) = &hook.plugin_root {
        cmd.env("CLAUDE_PLUGIN_ROOT", root);
    }
    #[cfg(unix)]
    if !sandboxed {
        // SAFETY: setsid(2) is async-signal-safe and touches no memory of the parent; it is the
        // only call made between fork and exec.
        unsafe {
            cmd.pre_exec(|| {
                if libc::setsid() == -1 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    Ok(cmd)
}

/// Reads `reader` to the end, keeping at most `limit` bytes in `buffer` (and counting the rest).
async fn read_capped<R: AsyncRead + Unpin>(mut reader: R, buffer: Arc<Mutex<CappedBuffer>>) {
    let mut chunk = [0u8; 8192];
    loop {
        match reader.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => buffer
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(&chunk[..n]),
        }
    }
}

/// Keeps the first `limit` bytes and counts the rest, which is read and dropped so the hook never
/// blocks on a full pipe. Output cut at the limit is reported as such ([`CappedBuffer::overflow`]):
/// JSON that was cut is never parsed, and on PreToolUse/UserPromptSubmit it blocks (see
/// [`super::runner`]).
pub(crate) struct CappedBuffer {
    bytes: Vec<u8>,
    limit: usize,
    dropped: usize,
}

impl CappedBuffer {
    fn new(limit: usize) -> Self {
        CappedBuffer {
            bytes: Vec::new(),
            limit,
            dropped: 0,
        }
    }

    fn push(&mut self, data: &[u8]) {
        let room = self.limit.saturating_sub(self.bytes.len());
        let take = room.min(data.len());
        self.bytes.extend_from_slice(&data[..take]);
        self.dropped += data.len() - take;
    }

    /// Everything the hook wrote, when it wrote more than the limit.
    fn overflow(&self) -> Option<OutputOverflow> {
        (self.dropped > 0).then(|| OutputOverflow {
            total_bytes: Some((self.bytes.len() + self.dropped) as u64),
            limit: self.limit,
        })
    }

    fn text(&self) -> String {
        let mut text = String::from_utf8_lossy(&self.bytes).into_owned();
        if self.dropped > 0 {
            text.push_str(&format!("\n… [{} more bytes not captured]", self.dropped));
        }
        text
    }
}

enum Ending {
    Exited(std::process::ExitStatus),
    WaitFailed(std::io::Error),
    TimedOut,
    Cancelled,
}

/// Runs a command hook.
pub(crate) async fn run(
    hook: &CommandHook,
    input_json: &str,
    ctx: &CommandContext<'_>,
    timeout: Duration,
    cancel: &CancellationToken,
) -> RawResult {
    let mut cmd = match build_command(hook, ctx) {
        Ok(cmd) => cmd,
        Err(failure) => return RawResult::reply(RawReply::Failed(failure)),
    };
    let mut child = match cmd.spawn() {
        Ok(child) => child,
        Err(e) => {
            let what = if hook.args.is_some() {
                format!("`{}`", hook.command)
            } else {
                "the shell".to_string()
            };
            return RawResult::reply(RawReply::Failed(HookFailure::Spawn {
                message: format!("{what}: {e} (cwd {})", ctx.cwd.display()),
            }));
        }
    };
    let Some(pgid) = child.id() else {
        return RawResult::reply(RawReply::Failed(HookFailure::Spawn {
            message: "the hook's process ended before it could be tracked".into(),
        }));
    };
    // Registered with the session (its shutdown stops the hook); dropping this future kills it.
    let group = ctx.processes.adopt(pgid, ProcessKind::Hook, &hook.command);

    // Write stdin concurrently: a hook that never reads it must not block us (EPIPE is fine).
    let stdin_task = child.stdin.take().map(|mut stdin| {
        let data = input_json.as_bytes().to_vec();
        tokio::spawn(async move {
            let _ = stdin.write_all(&data).await;
            let _ = stdin.shutdown().await;
        })
    });
    let stdout = Arc::new(Mutex::new(CappedBuffer::new(ctx.output_limit)));
    let stderr = Arc::new(Mutex::new(CappedBuffer::new(ctx.output_limit)));
    let stdout_task = child
        .stdout
        .take()
        .map(|pipe| tokio::spawn(read_capped(pipe, Arc::clone(&stdout))));
    let stderr_task = child
        .stderr
        .take()
        .map(|pipe| tokio::spawn(read_capped(pipe, Arc::clone(&stderr))));

    let ending = tokio::select! {
        status = child.wait() => match status {
            Ok(status) => Ending::Exited(status),
            Err(e) => Ending::WaitFailed(e),
        },
        () = tokio::time::sleep(timeout) => Ending::TimedOut,
        () = cancel.cancelled() => Ending::Cancelled,
        () = group.stop_requested() => Ending::Cancelled,
    };
    if matches!(ending, Ending::TimedOut | Ending::Cancelled) {
        group.terminate(&mut child, ctx.kill_grace).await;
    }
    // A hook's processes end with it: what it left running (`cmd &`) is stopped now, which also
    // closes the output pipes such a process held.
    group.finish(ctx.kill_grace).await;

    for task in [stdout_task, stderr_task].into_iter().flatten() {
        let abort = task.abort_handle();
        if tokio::time::timeout(DRAIN_GRACE, task).await.is_err() {
            abort.abort();
        }
    }
    if let Some(task) = stdin_task {
        task.abort();
    }
    let (stdout, stdout_overflow) = {
        let buffer = stdout.lock().unwrap_or_else(PoisonError::into_inner);
        (buffer.text(), buffer.overflow())
    };
    let stderr = stderr.lock().unwrap_or_else(PoisonError::into_inner).text();

    let (exit_code, reply) = match ending {
        Ending::TimedOut => (
            None,
            RawReply::Failed(HookFailure::Timeout {
                timeout_ms: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
            }),
        ),
        Ending::Cancelled => (None, RawReply::Cancelled),
        Ending::WaitFailed(e) => (
            None,
            RawReply::Failed(HookFailure::Spawn {
                message: format!("waiting for the hook failed: {e}"),
            }),
        ),
        Ending::Exited(status) => match status.code() {
            Some(0) => (Some(0), RawReply::Success),
            Some(2) => (Some(2), RawReply::Block(None)),
            Some(code) => (
                Some(code),
                RawReply::Failed(HookFailure::ExitCode {
                    code,
                    stderr: stderr.clone(),
                }),
            ),
            None => {
                #[cfg(unix)]
                let signal = {
                    use std::os::unix::process::ExitStatusExt;
                    status.signal().unwrap_or(0)
                };
                #[cfg(not(unix))]
                let signal = 0;
                (
                    None,
                    RawReply::Failed(HookFailure::Signal {
                        signal,
                        stderr: stderr.clone(),
                    }),
                )
            }
        },
    };
    RawResult {
        exit_code,
        stdout,
        stderr,
        reply,
        stdout_overflow,
    }
}
