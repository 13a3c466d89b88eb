//! The processes a session starts, and how they are stopped with it.
//!
//! Every process a session starts — a Bash call, a background task (`run_in_background`), a
//! command hook, and whatever else joins later (MCP servers, a host's own helpers) — is started
//! in a **process group of its own** and registered in the session's [`ProcessGroups`] while it
//! runs. One signal to a group reaches the whole tree (`make test` and the compilers it starts),
//! so stopping a group never leaves grandchildren behind.
//!
//! # When processes are stopped
//!
//! Stopping a group means SIGTERM to the whole group, a grace period (the session's
//! `kill_grace`, 2 s by default) for it to exit, then SIGKILL to what is left.
//!
//! - **A call ends**: when a Bash call's shell exits, whatever it left running in its group
//!   (`server &`, `nohup cmd &`) is stopped before the result is returned, and the result says
//!   so. A command hook is treated the same way. Long-running processes belong in a background
//!   task (`run_in_background: true`).
//! - **A background task ends**: when its shell exits, or it is killed, the rest of its group is
//!   stopped too.
//! - **Abort and timeout** stop the running call's group.
//! - **Shutdown** ([`Session::shutdown`](crate::session::Session::shutdown)) stops every group
//!   still registered — background tasks, background (`async`) hooks, anything else — after the
//!   SessionEnd hooks ran; the registry is then closed, and a process registered later is
//!   stopped as soon as its owner sees the request.
//! - **Drop**: dropping the session (or the last handle on a group) sends SIGKILL at once, so a
//!   host that frees a session without shutting it down leaves nothing running either.
//!
//! # What a host must do
//!
//! The library never installs signal handlers in the host's process. A host that wants the
//! session's processes stopped when *it* is told to terminate (SIGTERM, SIGINT, SIGHUP) handles
//! the signal itself and calls the session's `shutdown` (or at least
//! [`ProcessGroups::stop_all`]) before exiting; the `robota` CLI does exactly this. From code
//! that cannot await (an exit hook, a `free` function), [`ProcessGroups::stop_all_blocking`]
//! does the same synchronously and [`ProcessGroups::kill_all_now`] sends SIGKILL without
//! waiting. A host process killed with SIGKILL gets no chance to do anything: its sessions'
//! processes keep running (see the limits below).
//!
//! # Limits
//!
//! - A descendant that leaves its group on purpose (`setsid`, `setpgid`, a daemon that
//!   double-forks into a new session) is out of reach of group signals. Under the OS sandbox's
//!   bubblewrap backend every sandboxed command runs in its own PID namespace, which the kernel
//!   ends with the command, so even those processes stop with it; without the sandbox (or with
//!   the Landlock and Seatbelt backends) they keep running.
//! - If the host process itself dies without running any code (SIGKILL, a crash in foreign
//!   code), nothing stops the groups.
//! - A group is addressed by its number only while its leader is alive or was just reaped by its
//!   owner, which stops the rest of the group at once; a number is therefore never signalled
//!   after the kernel could have given it to an unrelated process.
//!
//! # Layering
//!
//! This module sits at the bottom of the crate with [`message`](crate::message): hooks, tools
//! and sessions use it; it uses nothing else of the crate.

mod signal;

use std::collections::BTreeMap;
use std::process::ExitStatus;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, SystemTime};

use serde::Serialize;
use tokio::process::Child;
use tokio_util::sync::{CancellationToken, WaitForCancellationFuture};

pub(crate) use signal::{ignore_sigpipe_if_default, kill_group, terminate_group};

/// How much of a command line a group's label keeps.
const MAX_LABEL_CHARS: usize = 200;

/// What started a process group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ProcessKind {
    /// A tool call running in the foreground (Bash).
    ToolCall,
    /// A background task (Bash with `run_in_background: true`).
    BackgroundTask,
    /// A command hook (foreground or `async`).
    Hook,
    /// An MCP server started by the session.
    McpServer,
    /// A process the host registered itself.
    Host,
}

/// A registered process group, as hosts see it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProcessGroupInfo {
    /// The group id, which is also the pid of the group's first process (its leader).
    pub pgid: u32,
    /// What started it.
    pub kind: ProcessKind,
    /// What it runs (a command line, cut to 200 characters).
    pub label: String,
    /// When it was registered.
    pub started_at: SystemTime,
}

struct Entry {
    info: ProcessGroupInfo,
}

#[derive(Default)]
struct State {
    next_id: u64,
    groups: BTreeMap<u64, Entry>,
}

struct Inner {
    state: Mutex<State>,
    /// Woken whenever a group leaves the registry.
    left: tokio::sync::Notify,
    /// Cancelled when the registry closes; every group's stop request is a child of it.
    closed: CancellationToken,
}

/// The live process groups of one session (see the module documentation). Cheap to clone; all
/// clones share the groups.
#[derive(Clone)]
pub struct ProcessGroups {
    inner: Arc<Inner>,
}

impl Default for ProcessGroups {
    fn default() -> Self {
        ProcessGroups {
            inner: Arc::new(Inner {
                state: Mutex::new(State::default()),
                left: tokio::sync::Notify::new(),
                closed: CancellationToken::new(),
            }),
        }
    }
}

impl std::fmt::Debug for ProcessGroups {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProcessGroups")
            .field("groups", &self.list())
            .field("closed", &self.is_closed())
            .finish()
    }
}

impl ProcessGroups {
    /// An empty, open registry.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // Every critical section is a map insert or remove: a panic cannot leave it half done.
        self.inner
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers group `pgid` (a child started with its own process group, whose leader is still
    /// running or was not reaped yet). The returned handle is the owner's: the owner stops the
    /// group when [`ProcessGroup::stop_requested`] fires and ends it with
    /// [`ProcessGroup::finish`]; dropping the handle instead kills the group.
    ///
    /// After [`stop_all`](Self::stop_all) (the registry is closed), the handle's stop request has
    /// already fired.
    pub fn adopt(&self, pgid: u32, kind: ProcessKind, label: &str) -> ProcessGroup {
        // Its pipes must not be able to kill a host that left SIGPIPE at its default.
        signal::ignore_sigpipe_if_default();
        let id = {
            let mut state = self.lock();
            state.next_id += 1;
            let id = state.next_id;
            state.groups.insert(
                id,
                Entry {
                    info: ProcessGroupInfo {
                        pgid,
                        kind,
                        label: cut_label(label),
                        started_at: SystemTime::now(),
                    },
                },
            );
            id
        };
        ProcessGroup {
            groups: self.clone(),
            id,
            pgid,
            stop: self.inner.closed.child_token(),
            ended: false,
        }
    }

    /// The groups registered now, oldest first.
    pub fn list(&self) -> Vec<ProcessGroupInfo> {
        self.lock()
            .groups
            .values()
            .map(|entry| entry.info.clone())
            .collect()
    }

    /// True once [`stop_all`](Self::stop_all) (or one of its variants) was called.
    pub fn is_closed(&self) -> bool {
        self.inner.closed.is_cancelled()
    }

    fn pgids(&self) -> Vec<u32> {
        self.lock().groups.values().map(|e| e.info.pgid).collect()
    }

    fn remove(&self, id: u64) {
        let removed = self.lock().groups.remove(&id);
        if removed.is_some() {
            self.inner.left.notify_waiters();
        }
    }

    /// Closes the registry and stops every group: each owner is asked to stop its group (so it
    /// can report how its process ended), every group gets SIGTERM, and what is still running
    /// after `grace` gets SIGKILL. Returns once the owners have let go of their groups, or
    /// shortly after the SIGKILL when one does not.
    pub async fn stop_all(&self, grace: Duration) {
        self.inner.closed.cancel();
        #[cfg(unix)]
        for pgid in self.pgids() {
            signal::signal_group(pgid, libc::SIGTERM);
        }
        if !self.wait_empty(grace).await {
            for pgid in self.pgids() {
                kill_group(pgid);
            }
            // The owners see their leaders die and let go; do not wait forever for one that is
            // not being polled.
            self.wait_empty(Duration::from_secs(1)).await;
        }
    }

    /// Waits until no group is registered, at most `limit`; true when none is.
    async fn wait_empty(&self, limit: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let left = self.inner.left.notified();
            if self.lock().groups.is_empty() {
                return true;
            }
            if tokio::time::timeout_at(deadline, left).await.is_err() {
                return self.lock().groups.is_empty();
            }
        }
    }

    /// [`stop_all`](Self::stop_all) for code that cannot await: closes the registry, sends
    /// SIGTERM to every group, waits up to `grace` (blocking the thread) and sends SIGKILL to
    /// the groups still running. Does not wait for the owners.
    pub fn stop_all_blocking(&self, grace: Duration) {
        self.inner.closed.cancel();
        signal::terminate_groups_blocking(&self.pgids(), grace);
    }

    /// Closes the registry and sends SIGKILL to every group at once, without waiting.
    pub fn kill_all_now(&self) {
        self.inner.closed.cancel();
        for pgid in self.pgids() {
            kill_group(pgid);
        }
    }
}

/// An owner's handle on one registered group. Dropping it without [`finish`](Self::finish)
/// kills the group (SIGKILL), so a call whose future is dropped mid-run leaves nothing behind.
pub struct ProcessGroup {
    groups: ProcessGroups,
    id: u64,
    pgid: u32,
    stop: CancellationToken,
    ended: bool,
}

impl std::fmt::Debug for ProcessGroup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProcessGroup")
            .field("pgid", &self.pgid)
            .field("stop_requested", &self.is_stop_requested())
            .finish()
    }
}

impl ProcessGroup {
    /// The group id.
    pub fn pgid(&self) -> u32 {
        self.pgid
    }

    /// Completes when the registry asks for the group to stop (the session is shutting down).
    pub fn stop_requested(&self) -> WaitForCancellationFuture<'_> {
        self.stop.cancelled()
    }

    /// True once the registry asked for the group to stop.
    pub fn is_stop_requested(&self) -> bool {
        self.stop.is_cancelled()
    }

    /// Stops the group whose leader is `child` (SIGTERM, up to `grace`, SIGKILL) and returns the
    /// leader's exit status. The group stays registered until [`finish`](Self::finish).
    pub async fn terminate(&self, child: &mut Child, grace: Duration) -> Option<ExitStatus> {
        terminate_group(Some(child), self.pgid, grace).await
    }

    /// Ends the group once its leader has exited (and was reaped): whatever the leader left
    /// running in it is stopped (SIGTERM, up to `grace`, SIGKILL), and the group leaves the
    /// registry. Returns true when something was left running.
    pub async fn finish(mut self, grace: Duration) -> bool {
        let leftovers = signal::group_alive(self.pgid);
        if leftovers {
            terminate_group(None, self.pgid, grace).await;
        }
        self.ended = true;
        self.groups.remove(self.id);
        leftovers
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        if !self.ended {
            kill_group(self.pgid);
        }
        self.groups.remove(self.id);
    }
}

/// The registries of several sessions, for a host's exit path: a binding adds every session it
/// creates, and stops whatever they still run when the host process exits (an `atexit` hook, a
/// Node environment's cleanup hook). Holds the registries weakly: a session that is gone is
/// skipped, and its entry is dropped when the next one is added.
#[derive(Debug, Default)]
pub struct ProcessGroupsSet {
    entries: Mutex<Vec<(std::sync::Weak<Inner>, Duration)>>,
}

impl std::fmt::Debug for Inner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProcessGroups").finish_non_exhaustive()
    }
}

impl ProcessGroupsSet {
    /// An empty set (`const`: it can be a `static` of a binding).
    pub const fn new() -> Self {
        ProcessGroupsSet {
            entries: Mutex::new(Vec::new()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Vec<(std::sync::Weak<Inner>, Duration)>> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Adds `groups`, stopped with `grace` between SIGTERM and SIGKILL.
    pub fn insert(&self, groups: &ProcessGroups, grace: Duration) {
        let mut entries = self.lock();
        entries.retain(|(inner, _)| inner.upgrade().is_some_and(|i| !i.closed.is_cancelled()));
        entries.push((Arc::downgrade(&groups.inner), grace));
    }

    fn live(&self) -> Vec<(ProcessGroups, Duration)> {
        self.lock()
            .iter()
            .filter_map(|(inner, grace)| {
                inner
                    .upgrade()
                    .map(|inner| (ProcessGroups { inner }, *grace))
            })
            .collect()
    }

    /// Stops every group of every live registry (see [`ProcessGroups::stop_all_blocking`]),
    /// all at once: the wait is the longest grace, not their sum. Blocks the calling thread.
    pub fn stop_all_blocking(&self) {
        let live = self.live();
        let grace = live.iter().map(|(_, g)| *g).max().unwrap_or_default();
        let mut pgids = Vec::new();
        for (groups, _) in &live {
            groups.inner.closed.cancel();
            pgids.extend(groups.pgids());
        }
        signal::terminate_groups_blocking(&pgids, grace);
    }

    /// Sends SIGKILL to every group of every live registry, without waiting.
    pub fn kill_all_now(&self) {
        for (groups, _) in self.live() {
            groups.kill_all_now();
        }
    }
}

/// `label` on one line, cut to [`MAX_LABEL_CHARS`] characters.
fn cut_label(label: &str) -> String {
    let line: String = label
        .chars()
        .map(|c| if c == '\n' { ' ' } else { c })
        .collect();
    let mut chars = line.chars();
    let cut: String = chars.by_ref().take(MAX_LABEL_CHARS).collect();
    if chars.next().is_some() {
        format!("{cut}…")
    } else {
        cut
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    /// A shell in its own group running `script`.
    fn spawn_group(script: &str) -> Child {
        let mut cmd = tokio::process::Command::new("/bin/sh");
        cmd.arg("-c")
            .arg(script)
            .stdout(std::process::Stdio::null())
            .process_group(0)
            .kill_on_drop(true);
        cmd.spawn().expect("spawn /bin/sh")
    }

    #[tokio::test]
    async fn finish_stops_what_the_leader_left_running() {
        let groups = ProcessGroups::new();
        let mut child = spawn_group("sleep 300 & echo $!");
        let pgid = child.id().unwrap();
        let group = groups.adopt(pgid, ProcessKind::ToolCall, "sleep 300 &");
        assert_eq!(groups.list().len(), 1);
        child.wait().await.unwrap();
        assert!(
            signal::group_alive(pgid),
            "the sleeper is still in the group"
        );
        assert!(group.finish(Duration::from_millis(500)).await);
        assert!(!signal::group_alive(pgid));
        assert!(groups.list().is_empty());
    }

    #[tokio::test]
    async fn dropping_a_handle_kills_its_group() {
        let groups = ProcessGroups::new();
        let child = spawn_group("sleep 300");
        let pgid = child.id().unwrap();
        drop(groups.adopt(pgid, ProcessKind::Hook, "sleep"));
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while signal::group_alive(pgid) && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(!signal::group_alive(pgid));
        assert!(groups.list().is_empty());
        drop(child);
    }

    #[tokio::test]
    async fn stop_all_asks_owners_and_kills_what_ignores_sigterm() {
        let groups = ProcessGroups::new();
        let mut child = spawn_group("trap '' TERM; while :; do sleep 1; done");
        let pgid = child.id().unwrap();
        let group = groups.adopt(pgid, ProcessKind::BackgroundTask, "stubborn");
        let owner = tokio::spawn(async move {
            group.stop_requested().await;
            let status = group
                .terminate(&mut child, Duration::from_millis(200))
                .await;
            group.finish(Duration::from_millis(200)).await;
            status
        });
        groups.stop_all(Duration::from_millis(200)).await;
        assert!(groups.list().is_empty());
        assert!(!signal::group_alive(pgid));
        assert!(owner.await.unwrap().is_some());
        // Closed: a late registration is asked to stop at once.
        let late = groups.adopt(1_000_000, ProcessKind::Host, "late");
        assert!(late.is_stop_requested());
        std::mem::forget(late); // never signal a made-up group
    }

    #[test]
    fn stop_all_blocking_needs_no_runtime() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let (groups, pgid, handle) = runtime.block_on(async {
            let groups = ProcessGroups::new();
            let child = spawn_group("sleep 300");
            let pgid = child.id().unwrap();
            let handle = groups.adopt(pgid, ProcessKind::Host, "sleep");
            std::mem::forget(child);
            (groups, pgid, handle)
        });
        groups.stop_all_blocking(Duration::from_millis(500));
        assert!(!signal::group_alive(pgid));
        assert!(groups.is_closed());
        drop(handle);
    }

    #[test]
    fn a_set_stops_the_groups_of_its_live_registries() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let set = ProcessGroupsSet::new();
        let (kept, dropped, pgid, handle) = runtime.block_on(async {
            let kept = ProcessGroups::new();
            let dropped = ProcessGroups::new();
            let child = spawn_group("sleep 300");
            let pgid = child.id().unwrap();
            let handle = kept.adopt(pgid, ProcessKind::Host, "sleep");
            std::mem::forget(child);
            (kept, dropped, pgid, handle)
        });
        set.insert(&kept, Duration::from_millis(300));
        set.insert(&dropped, Duration::from_millis(300));
        drop(dropped);
        assert_eq!(set.live().len(), 1);
        set.stop_all_blocking();
        assert!(!signal::group_alive(pgid));
        assert!(kept.is_closed());
        drop(handle);
    }

    #[test]
    fn labels_are_one_line_and_cut() {
        assert_eq!(cut_label("a\nb"), "a b");
        let long = "x".repeat(500);
        assert_eq!(cut_label(&long).chars().count(), MAX_LABEL_CHARS + 1);
    }
}
