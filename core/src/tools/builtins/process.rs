//! Shell processes for Bash and background tasks: which shell, and how it is spawned (own process
//! group, no stdin, non-interactive environment).
//!
//! Why a process group: `sh -c 'make test'` starts children and grandchildren; killing only the
//! shell would leave them running (and holding files and ports). Every command gets a new group
//! whose id is the shell's pid, registered with the session's
//! [`ProcessGroups`](crate::process::ProcessGroups), so one signal to the group reaches the whole
//! tree (see [`crate::process`] for when groups are stopped and what escapes them).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};

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

/// Starts `shell -c command` in `cwd`, in its own process group, with `stdio` as its stdin,
/// stdout and stderr (a Bash call: no input, output to files; a background task: pipes), and `env` (settings.json `env`) added to the
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
    stdio: [Stdio; 3],
    sandbox: Option<&Sandbox>,
) -> Result<Child, SpawnError> {
    let [stdin, stdout, stderr] = stdio;
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
        .stdin(stdin)
        .stdout(stdout)
        .stderr(stderr)
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
