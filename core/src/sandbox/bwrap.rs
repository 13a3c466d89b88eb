//! The bubblewrap backend: the `bwrap` command line for a policy, and finding and probing the
//! binary.
//!
//! The command sees the whole file system read-only (`--ro-bind / /`), the writable roots bound
//! read-write over it, the protected paths inside them bound read-only again, read-denied paths
//! masked (an empty read-only tmpfs over a directory, `/dev/null` over a file), a fresh `/dev`
//! and — in a new PID namespace — a fresh `/proc`, so `/proc/<pid>/root` or `/cwd` of a process
//! outside cannot be used to reach the host's writable mounts. Without network it gets a new,
//! empty network namespace. Mounts are applied from the shallowest path to the deepest, so a
//! path's most specific rule wins.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::policy::SandboxPolicy;

/// How a path is mounted inside the sandbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Mount {
    Writable,
    ReadOnly,
    MaskDir,
    MaskFile,
    Reveal,
}

/// Options of the command line besides the policy.
pub(crate) struct BwrapOptions<'a> {
    /// Working directory inside the sandbox.
    pub cwd: &'a Path,
    /// Give the command a new network namespace (no network at all).
    pub unshare_net: bool,
    /// Descriptor holding a seccomp program for `--seccomp`.
    pub seccomp_fd: Option<i32>,
}

/// The `bwrap` arguments (before the command and its arguments, which follow `--`).
pub(crate) fn bwrap_args(policy: &SandboxPolicy, options: &BwrapOptions<'_>) -> Vec<OsString> {
    let mut args: Vec<OsString> = [
        "--die-with-parent",
        "--unshare-pid",
        "--unshare-ipc",
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
    ]
    .iter()
    .map(OsString::from)
    .collect();
    let mut mounts: Vec<(&Path, Mount)> = Vec::new();
    for root in &policy.writable_roots {
        mounts.push((root, Mount::Writable));
    }
    for path in &policy.protected_paths {
        mounts.push((path, Mount::ReadOnly));
    }
    for path in &policy.read_denied {
        let kind = if path.is_dir() {
            Mount::MaskDir
        } else {
            Mount::MaskFile
        };
        mounts.push((path, kind));
    }
    for path in &policy.read_allowed {
        if policy.read_denied.iter().any(|d| path.starts_with(d)) {
            mounts.push((path, Mount::Reveal));
        }
    }
    mounts.sort_by_key(|(path, kind)| (path.components().count(), *kind));
    mounts.dedup();
    // Masks are made read-only only after everything below them (allowRead) is mounted.
    let mut remount_ro: Vec<&std::ffi::OsStr> = Vec::new();
    for (path, kind) in mounts {
        // `/dev` and `/proc` are fresh mounts; binding the host's over them would undo that.
        if path.starts_with("/dev") || path.starts_with("/proc") || path == Path::new("/") {
            continue;
        }
        let path = path.as_os_str();
        match kind {
            Mount::Writable => push(&mut args, &["--bind"], &[path, path]),
            Mount::ReadOnly => push(&mut args, &["--ro-bind"], &[path, path]),
            Mount::MaskDir => {
                push(&mut args, &["--tmpfs"], &[path]);
                remount_ro.push(path);
            }
            Mount::MaskFile => push(&mut args, &["--ro-bind", "/dev/null"], &[path]),
            Mount::Reveal => {
                let flag = if policy.is_writable(Path::new(path)) {
                    "--bind"
                } else {
                    "--ro-bind"
                };
                push(&mut args, &[flag], &[path, path]);
            }
        }
    }
    for path in remount_ro {
        push(&mut args, &["--remount-ro"], &[path]);
    }
    if options.unshare_net {
        args.push("--unshare-net".into());
    }
    args.push("--cap-drop".into());
    args.push("ALL".into());
    if let Some(fd) = options.seccomp_fd {
        args.push("--seccomp".into());
        args.push(fd.to_string().into());
    }
    args.push("--chdir".into());
    args.push(options.cwd.as_os_str().to_owned());
    args.push("--".into());
    args
}

fn push(args: &mut Vec<OsString>, flags: &[&str], paths: &[&std::ffi::OsStr]) {
    args.extend(flags.iter().map(OsString::from));
    args.extend(paths.iter().map(|p| p.to_os_string()));
}

/// The bubblewrap binary: the configured path, else `bwrap` on `PATH`.
pub(crate) fn locate(configured: Option<&Path>) -> Result<PathBuf, String> {
    if let Some(path) = configured {
        return if path.is_file() {
            Ok(path.to_path_buf())
        } else {
            Err(format!(
                "the configured bubblewrap binary {} does not exist (sandbox.bwrapPath)",
                path.display()
            ))
        };
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join("bwrap"))
        .find(|candidate| candidate.is_file())
        .ok_or_else(|| {
            "bubblewrap (`bwrap`) is not installed; install it (Debian/Ubuntu: `apt-get install \
             bubblewrap`, Fedora: `dnf install bubblewrap`)"
                .to_string()
        })
}

/// Runs `bwrap … -- true` with the same namespaces real commands get; `Err` says why bubblewrap
/// does not work here (e.g. user namespaces are disabled in this container).
pub(crate) fn probe(bwrap: &Path, unshare_net: bool) -> Result<(), String> {
    let policy = SandboxPolicy::default();
    let args = bwrap_args(
        &policy,
        &BwrapOptions {
            cwd: Path::new("/"),
            unshare_net,
            seccomp_fd: None,
        },
    );
    let mut child = std::process::Command::new(bwrap)
        .args(args)
        .arg("true")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", bwrap.display()))?;
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(2)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("{} did not finish its self-test", bwrap.display()));
            }
            Err(e) => return Err(format!("waiting for {}: {e}", bwrap.display())),
        }
    };
    if status.success() {
        return Ok(());
    }
    let mut stderr = String::new();
    if let Some(mut pipe) = child.stderr.take() {
        let _ = std::io::Read::read_to_string(&mut pipe, &mut stderr);
    }
    Err(format!(
        "bubblewrap does not work on this machine ({}): {} — user namespaces may be disabled \
         (e.g. inside a container); use `sandbox.backend: \"landlock\"`",
        status,
        stderr.trim()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deeper_mounts_come_later_and_protected_wins_a_tie() {
        let policy = SandboxPolicy {
            writable_roots: vec!["/w".into(), "/w/.robota/worktrees/a".into()],
            protected_paths: vec!["/w/.robota".into(), "/w/.git/hooks".into()],
            read_denied: vec!["/nonexistent-file".into()],
            ..SandboxPolicy::default()
        };
        let args = bwrap_args(
            &policy,
            &BwrapOptions {
                cwd: Path::new("/w"),
                unshare_net: true,
                seccomp_fd: Some(7),
            },
        );
        let text: Vec<String> = args
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let joined = text.join(" ");
        let at = |needle: &str| joined.find(needle).unwrap_or(usize::MAX);
        assert!(at("--bind /w /w") < at("--ro-bind /w/.robota /w/.robota"));
        assert!(
            at("--ro-bind /w/.robota /w/.robota")
                < at("--bind /w/.robota/worktrees/a /w/.robota/worktrees/a")
        );
        assert!(joined.contains("--ro-bind /dev/null /nonexistent-file"));
        assert!(joined.contains("--unshare-net"));
        assert!(joined.contains("--seccomp 7"));
        assert!(joined.ends_with("--chdir /w --"));
    }
}
