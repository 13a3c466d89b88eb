//! Shell processes for Bash and background tasks: which shell, how it is spawned (own process
//! group, no stdin, non-interactive environment), and how its whole tree is stopped.
//!
//! Why a process group: `sh -c 'make test'` starts children and grandchildren; killing only the
//! shell would leave them running (and holding files and ports). Every command gets a new group
//! whose id is the shell's pid, so one signal to the group reaches the whole tree. A descendant
//! that calls `setsid` leaves the group and is out of reach; only cgroups or a sandbox can track it.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use tokio::process::{Child, Command};

use crate::sandbox::{Sandbox, SandboxError};

/// Environment that keeps tools from waiting on a terminal that is not there.
pub(crate) const NON_INTERACTIVE_ENV: &[(&str, &str)] = &[
    ("GIT_TERMINAL_PROMPT", "0"),
    ("GIT_PAGER", "cat"),
    ("PAGER", "cat"),
    ("MANPAGER", "cat"),
    ("GIT_EDITOR", "true"),
    ("GCM_INTERACTIVE", "never"),
    ("DEBIAN_FRONTEND", "noninteractive"),
    ("TERM", "dumb"),
];

/// Shells whose `-c` takes POSIX-like syntax; `$SHELL` outside this list (fish, nu, …) is not used.
const KNOWN_SHELLS: &[&str] = &["bash", "zsh", "sh", "dash", "ksh", "mksh"];

/// The shell to run commands with: the configured one, else `$ROBOTA_SHELL`, else the user's
/// `$SHELL` when it is a POSIX-family shell, else `/bin/bash`, else `/bin/sh`.
pub(crate) fn resolve_shell(configured: Option<&Path>) -> PathBuf {
    if let Some(shell) = configured {
        return shell.to_path_buf();
    }
    for var in ["ROBOTA_SHELL", "SHELL"] {
        if let Some(shell) = std::env::var_os(var).map(PathBuf::from) {
            let known = shell
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| KNOWN_SHELLS.contains(&n));
            if shell.is_absolute() && known && shell.exists() {
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

/// Starts `shell -c command` in `cwd`, in its own process group, with stdin closed and
/// stdout/stderr going to the given files, and `env` (settings.json `env`) added to the
/// inherited environment after the non-interactive defaults, so an explicit setting wins.
///
/// With `sandbox`, the shell runs confined by the OS sandbox, which starts it in a new session
/// (its own process group, whose id is the shell's pid, as without the sandbox).
///
/// Output goes to files rather than pipes because a backgrounded grandchild (`server &`) would
/// keep a pipe open and make the call wait for it; files also hold arbitrarily large output
/// without memory, and already are the spill files when the output is too long to show.
pub(crate) fn spawn_shell(
    shell: &Path,
    command: &str,
    cwd: &Path,
    env: &BTreeMap<String, String>,
    stdout: File,
    stderr: File,
    sandbox: Option<&Sandbox>,
) -> Result<Child, SpawnError> {
    let mut cmd = match sandbox {
        Some(sandbox) => sandbox
            .command(shell, &["-c".into(), command.into()], cwd)
            .map_err(SpawnError::Sandbox)?,
        None => {
            let mut cmd = Command::new(shell);
            cmd.arg("-c").arg(command);
            #[cfg(unix)]
            cmd.process_group(0);
            cmd
        }
    };
    cmd.current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::from(stdout))
        .stderr(Stdio::from(stderr))
        .kill_on_drop(true);
    for (key, value) in NON_INTERACTIVE_ENV {
        cmd.env(key, value);
    }
    cmd.envs(env);
    // With `CDPATH` set, `cd src` may land anywhere on it; the permission engine resolves `cd`
    // without it, so the shell must too. (A command that sets it itself is analysed as such.)
    cmd.env_remove("CDPATH");
    if let Some(temp) = sandbox.and_then(|s| s.policy().temp_dir.clone()) {
        // The sandbox's private temp dir wins over an inherited or configured TMPDIR, which
        // would not be writable inside.
        cmd.env("TMPDIR", temp);
    }
    cmd.spawn().map_err(SpawnError::Io)
}

/// Why a shell could not be started.
#[derive(Debug)]
pub(crate) enum SpawnError {
    /// The OS sandbox could not be set up for it.
    Sandbox(SandboxError),
    /// The process could not be started.
    Io(std::io::Error),
}

impl SpawnError {
    /// A sentence for the model and the user, naming `shell`.
    pub(crate) fn describe(&self, shell: &Path) -> String {
        match self {
            SpawnError::Sandbox(err) => format!(
                "{err}. The command was not run; fix the sandbox or turn it off \
                 (`sandbox.enabled: false`)."
            ),
            SpawnError::Io(err) => format!(
                "Could not start {}: {err}. Configure another shell for the session.",
                shell.display()
            ),
        }
    }
}

/// Sends `signal` to every process of group `pgid`. Refuses pgid 0 and 1, which would address
/// the caller's own group or every process the user owns.
#[cfg(unix)]
pub(crate) fn signal_group(pgid: u32, signal: i32) -> bool {
    let Ok(pgid) = i32::try_from(pgid) else {
        return false;
    };
    if pgid <= 1 {
        return false;
    }
    // SAFETY: kill(2) has no memory-safety preconditions; a negative pid addresses a group.
    unsafe { libc::kill(-pgid, signal) == 0 }
}

/// True while group `pgid` has a process that is still running (not a zombie).
///
/// Zombies matter because grandchildren re-parented to an init that does not reap them (PID 1 in
/// many containers) stay in the group forever; they are dead, so waiting for them is pointless.
#[cfg(unix)]
pub(crate) fn group_alive(pgid: u32) -> bool {
    if !signal_group(pgid, 0) {
        // EPERM means the group exists but belongs to someone else (a setuid child).
        return std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
    }
    #[cfg(target_os = "linux")]
    if let Some(live) = linux_group_has_running_member(pgid) {
        return live;
    }
    true
}

/// Scans `/proc` for a non-zombie member of `pgid`; `None` when `/proc` is unreadable.
#[cfg(target_os = "linux")]
fn linux_group_has_running_member(pgid: u32) -> Option<bool> {
    let entries = std::fs::read_dir("/proc").ok()?;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if !name.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // "pid (comm) state ppid pgrp ..." — comm may contain spaces and parentheses.
        let Some(close) = stat.rfind(')') else {
            continue;
        };
        let mut fields = stat[close + 1..].split_whitespace();
        let state = fields.next();
        let _ppid = fields.next();
        let group = fields.next().and_then(|g| g.parse::<u32>().ok());
        if group == Some(pgid) && state != Some("Z") && state != Some("X") {
            return Some(true);
        }
    }
    Some(false)
}

/// Stops the tree of `child` (group `pgid`): SIGTERM to the group, up to `grace` for the shell to
/// exit and the group to empty, then SIGKILL to the group. Returns the shell's exit status.
pub(crate) async fn terminate_tree(
    child: &mut Child,
    pgid: Option<u32>,
    grace: Duration,
) -> Option<ExitStatus> {
    #[cfg(unix)]
    if let Some(pgid) = pgid {
        signal_group(pgid, libc::SIGTERM);
        let deadline = tokio::time::Instant::now() + grace;
        let mut status = None;
        loop {
            if status.is_none() {
                status = child.try_wait().ok().flatten();
            }
            if status.is_some() && !group_alive(pgid) {
                return status;
            }
            if tokio::time::Instant::now() >= deadline {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        signal_group(pgid, libc::SIGKILL);
        if status.is_some() {
            return status;
        }
    }
    #[cfg(not(unix))]
    let _ = (pgid, grace);
    let _ = child.start_kill();
    child.wait().await.ok()
}

/// Kills the group when dropped unless disarmed, so a call whose future is dropped mid-run (the
/// engine gave up on it) leaves no processes behind.
pub(crate) struct GroupGuard {
    pgid: Option<u32>,
}

impl GroupGuard {
    pub fn new(pgid: Option<u32>) -> Self {
        GroupGuard { pgid }
    }

    pub fn disarm(&mut self) {
        self.pgid = None;
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        #[cfg(unix)]
        if let Some(pgid) = self.pgid {
            signal_group(pgid, libc::SIGKILL);
        }
    }
}

/// Exit code and terminating signal of a status.
pub(crate) fn exit_parts(status: &ExitStatus) -> (Option<i32>, Option<i32>) {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        (status.code(), status.signal())
    }
    #[cfg(not(unix))]
    {
        (status.code(), None)
    }
}

/// Conventional name of a signal number.
pub(crate) fn signal_name(signal: i32) -> &'static str {
    match signal {
        1 => "SIGHUP",
        2 => "SIGINT",
        3 => "SIGQUIT",
        4 => "SIGILL",
        6 => "SIGABRT",
        8 => "SIGFPE",
        9 => "SIGKILL",
        11 => "SIGSEGV",
        13 => "SIGPIPE",
        14 => "SIGALRM",
        15 => "SIGTERM",
        _ => "signal",
    }
}
