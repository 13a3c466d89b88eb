//! Signals to process groups, and how a group is stopped: SIGTERM to the whole group, a grace
//! period for it to exit, then SIGKILL.
//!
//! Why zombies are treated as gone: a grandchild re-parented to an init that does not reap (PID 1
//! in many containers) stays in its group as a zombie forever; it is dead, so waiting for it would
//! only turn every stop into a full grace period.

use std::process::ExitStatus;
use std::time::{Duration, Instant};

use tokio::process::Child;

/// How often a stop checks whether the group is empty yet.
const POLL: Duration = Duration::from_millis(20);
/// Longest wait for SIGKILL to take effect (a process in uninterruptible sleep takes longer).
const KILL_SETTLE: Duration = Duration::from_secs(1);

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

#[cfg(not(unix))]
pub(crate) fn group_alive(_pgid: u32) -> bool {
    false
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

/// Makes a write to a pipe whose reader is gone (a hook that exited without reading its input, an
/// MCP server that died) fail with `EPIPE` instead of raising SIGPIPE, whose default action ends
/// the whole process. Rust, Python and Node programs already ignore SIGPIPE; a C or Swift host
/// usually does not, and one dead child would kill it. Only a default disposition is changed: a
/// handler the host installed is kept. Runs once per process.
pub(crate) fn ignore_sigpipe_if_default() {
    #[cfg(unix)]
    {
        static ONCE: std::sync::Once = std::sync::Once::new();
        ONCE.call_once(|| {
            // SAFETY: sigaction(2) with a null new action only reads the current disposition into
            // `current`, a zeroed (valid) struct; signal(2) installs SIG_IGN, which has no
            // memory-safety preconditions.
            unsafe {
                let mut current: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(libc::SIGPIPE, std::ptr::null(), &mut current) == 0
                    && current.sa_sigaction == libc::SIG_DFL
                {
                    libc::signal(libc::SIGPIPE, libc::SIG_IGN);
                }
            }
        });
    }
}

/// SIGKILL to group `pgid`, at once.
pub(crate) fn kill_group(pgid: u32) {
    #[cfg(unix)]
    signal_group(pgid, libc::SIGKILL);
    #[cfg(not(unix))]
    let _ = pgid;
}

/// Stops group `pgid` and, when given, waits for its leader `child`: SIGTERM to the group, up to
/// `grace` for the leader to exit and the group to empty, then SIGKILL to the group. Returns the
/// leader's exit status (`None` without a leader, or when it could not be read).
pub(crate) async fn terminate_group(
    mut child: Option<&mut Child>,
    pgid: u32,
    grace: Duration,
) -> Option<ExitStatus> {
    let mut status = None;
    #[cfg(unix)]
    {
        signal_group(pgid, libc::SIGTERM);
        let deadline = tokio::time::Instant::now() + grace;
        loop {
            if status.is_none() {
                status = child
                    .as_deref_mut()
                    .and_then(|c| c.try_wait().ok().flatten());
            }
            let leader_done = child.is_none() || status.is_some();
            if leader_done && !group_alive(pgid) {
                return status;
            }
            if tokio::time::Instant::now() >= deadline {
                break;
            }
            tokio::time::sleep(POLL).await;
        }
        signal_group(pgid, libc::SIGKILL);
        // SIGKILL is delivered when each process next runs: wait (briefly) until it has, so the
        // caller can say the tree is gone when it returns.
        let deadline = tokio::time::Instant::now() + KILL_SETTLE;
        while group_alive(pgid) && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        if status.is_some() {
            return status;
        }
    }
    #[cfg(not(unix))]
    let _ = (pgid, grace);
    match child {
        Some(child) => {
            let _ = child.start_kill();
            child.wait().await.ok()
        }
        None => status,
    }
}

/// Stops several groups from synchronous code (exit hooks, `free` functions): SIGTERM to each,
/// up to `grace` for all of them to empty, then SIGKILL to those left. Blocks the calling thread.
pub(crate) fn terminate_groups_blocking(pgids: &[u32], grace: Duration) {
    #[cfg(unix)]
    {
        for &pgid in pgids {
            signal_group(pgid, libc::SIGTERM);
        }
        let deadline = Instant::now() + grace;
        let mut left: Vec<u32> = pgids.to_vec();
        loop {
            left.retain(|&pgid| group_alive(pgid));
            if left.is_empty() || Instant::now() >= deadline {
                break;
            }
            std::thread::sleep(POLL);
        }
        for &pgid in &left {
            signal_group(pgid, libc::SIGKILL);
        }
        let deadline = Instant::now() + KILL_SETTLE;
        while left.iter().any(|&pgid| group_alive(pgid)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    #[cfg(not(unix))]
    let _ = (pgids, grace, Instant::now());
}
