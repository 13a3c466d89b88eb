//! Checks on real processes shared by the process-lifetime tests: whether a pid is alive (by
//! `kill(pid, 0)` and `/proc`), waiting for a pid file, waiting for pids to die.
#![allow(dead_code)]

use std::path::Path;
use std::time::{Duration, Instant};

/// True when `pid` is a live process. A zombie counts as dead: it has exited and only waits for
/// its parent (or a non-reaping PID 1 in a container) to collect its status.
pub fn alive(pid: i32) -> bool {
    // SAFETY: kill with signal 0 only checks for existence.
    if unsafe { libc::kill(pid, 0) } != 0 {
        return false;
    }
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => match stat.rfind(')') {
            Some(close) => !stat[close + 1..].trim_start().starts_with(['Z', 'X']),
            None => false,
        },
        Err(_) => false,
    }
}

/// The pid written to `path`, waiting (up to 10 s) until it is there.
pub fn read_pid(path: &Path) -> i32 {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(text) = std::fs::read_to_string(path) {
            if let Ok(pid) = text.trim().parse() {
                return pid;
            }
        }
        assert!(
            Instant::now() < deadline,
            "{} never written",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Asserts that none of `pids` is alive now.
pub fn assert_all_dead(pids: &[i32], when: &str) {
    for &pid in pids {
        assert!(!alive(pid), "process {pid} survived {when}");
    }
}

/// For a SIGKILL the kernel delivers when each process next runs (or a signal sent by another
/// process): polls (up to 5 s) until none of `pids` is alive, then asserts it.
pub fn wait_all_dead(pids: &[i32], when: &str) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while pids.iter().any(|&p| alive(p)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_all_dead(pids, when);
}
