//! The store conformance suite (feature `store-conformance`): the checks every
//! [`SessionStore`] must pass, runnable against any implementation — the built-in stores in
//! this crate's tests, a database store, a host's store in a binding.
//!
//! [`run_all`] runs the checks that need one process, each on a fresh, empty store from the
//! factory. The two that need a second process take a way to start it: the child opens the same
//! storage and calls [`child_main`]; see [`lease_of_a_killed_process_is_taken_over`] and
//! [`a_session_written_by_another_process_resumes`].
//!
//! Every check panics with a message naming the check and what differed (it is a test suite).

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, ExitStatus};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;

use super::log::{LogOptions, SessionLogEvent};
use super::store::{ResumeSource, SessionRecord, SessionStore, StoreError};
use super::usage::UsageTotals;
use crate::message::{ContentBlock, HistoryEntry, Message, MessageState, Role};

/// The line a child prints once it holds a lease ([`ChildTask::HoldLease`]).
pub const LEASE_HELD: &str = "ROBOTA-CONFORMANCE-LEASE-HELD";

/// What a child process of the suite does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChildTask {
    /// Take the lease of the session, print [`LEASE_HELD`], and wait to be killed.
    HoldLease,
    /// Write the session: a snapshot and two finished turns after it in the log, then exit.
    WriteSession,
}

impl ChildTask {
    /// The task's name, for passing it to a child (environment variable, argument).
    pub fn name(self) -> &'static str {
        match self {
            ChildTask::HoldLease => "hold-lease",
            ChildTask::WriteSession => "write-session",
        }
    }

    /// The task named `name` ([`ChildTask::name`]).
    pub fn from_name(name: &str) -> Option<ChildTask> {
        match name {
            "hold-lease" => Some(ChildTask::HoldLease),
            "write-session" => Some(ChildTask::WriteSession),
            _ => None,
        }
    }
}

/// What a child process runs: `task` on session `id` of `store` (the same storage the parent
/// opened).
pub fn child_main(store: &dyn SessionStore, task: ChildTask, id: &str) {
    match task {
        ChildTask::HoldLease => {
            let _lease = store
                .lock(id)
                .unwrap_or_else(|e| panic!("the child could not take the lease: {e}"));
            println!("{LEASE_HELD}");
            loop {
                std::thread::sleep(Duration::from_secs(60));
            }
        }
        ChildTask::WriteSession => write_session(store, id, 2),
    }
}

/// The single-process checks, by name, each run against a fresh, empty store.
/// A check run on a fresh store.
type Check = fn(Arc<dyn SessionStore>);

const CHECKS: &[(&str, Check)] = &[
    ("snapshot_round_trip", |store| snapshot_round_trip(&*store)),
    ("snapshot_replace_is_atomic", snapshot_replace_is_atomic),
    ("log_append_and_read_from_a_position", |store| {
        log_append_and_read_from_a_position(&*store)
    }),
    ("resume_is_snapshot_plus_log_tail", |store| {
        resume_is_snapshot_plus_log_tail(&*store)
    }),
    ("resume_from_the_log_alone", |store| {
        resume_from_the_log_alone(&*store)
    }),
    ("listing_reads_headers_without_history", |store| {
        listing_reads_headers_without_history(&*store)
    }),
    ("fork_copies_to_a_new_id", |store| {
        fork_copies_to_a_new_id(&*store)
    }),
    ("delete_removes_everything", |store| {
        delete_removes_everything(&*store)
    }),
    ("a_second_writer_is_locked_out", |store| {
        a_second_writer_is_locked_out(&*store)
    }),
];

/// Runs every single-process check, each against a fresh, empty store from `fresh_store`;
/// panics at the first that fails.
pub fn run_all(fresh_store: &dyn Fn() -> Arc<dyn SessionStore>) {
    for (_, check) in CHECKS {
        check(fresh_store());
    }
}

/// The outcome of one check in [`run_each`].
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct CheckOutcome {
    /// The check's name (the name of its function in this module).
    pub check: &'static str,
    /// Whether the store passed it.
    pub passed: bool,
    /// What differed, when it failed.
    pub message: Option<String>,
}

/// Runs every single-process check, each against a fresh, empty store from `fresh_store`
/// (an error there fails that check), and reports each one — for hosts that run the suite on
/// their own store from a binding, where a panic must not cross into the host. The checks
/// that need a second process are not run (a host store in memory cannot be shared).
pub fn run_each(
    fresh_store: &dyn Fn() -> Result<Arc<dyn SessionStore>, String>,
) -> Vec<CheckOutcome> {
    CHECKS
        .iter()
        .map(|(name, check)| {
            let result = fresh_store().and_then(|store| {
                quiet_panics();
                IN_CHECK.with(|flag| flag.set(true));
                let outcome =
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check(store)))
                        .map_err(|payload| panic_message(payload.as_ref()));
                IN_CHECK.with(|flag| flag.set(false));
                outcome
            });
            CheckOutcome {
                check: name,
                passed: result.is_ok(),
                message: result.err(),
            }
        })
        .collect()
}

thread_local! {
    /// Set while [`run_each`] runs a check on this thread: its failure is reported as data.
    static IN_CHECK: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Keeps a failing check of [`run_each`] from printing a panic report on the host's stderr (the
/// outcome carries the message); panics anywhere else reach the previous hook as before.
fn quiet_panics() {
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    INSTALLED.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !IN_CHECK.with(std::cell::Cell::get) {
                previous(info);
            }
        }));
    });
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "the check panicked".to_string())
}

fn message(id: &str, role: Role, text: &str) -> Message {
    let mut message = match role {
        Role::User => Message::user(text),
        _ => Message::assistant(vec![ContentBlock::text(text)], MessageState::Complete),
    };
    message.id = id.to_string();
    message
}

fn chat(message: Message) -> HistoryEntry {
    HistoryEntry::chat(message)
}

fn record_with(id: &str, messages: usize, text: &str) -> SessionRecord {
    let mut record = SessionRecord::new(id, "/work/project");
    record.provider = Some("anthropic".into());
    record.model = Some("claude-sonnet-4-6".into());
    record.name = Some(format!("session {id}"));
    for k in 0..messages {
        let role = if k % 2 == 0 {
            Role::User
        } else {
            Role::Assistant
        };
        record
            .history
            .push(chat(message(&format!("{id}-m{k}"), role, text)));
    }
    record.usage.usage.input_tokens = 100;
    record.usage.usage.output_tokens = 20;
    record.usage.turns = 1;
    record
}

fn texts(history: &[HistoryEntry]) -> Vec<String> {
    history
        .iter()
        .filter_map(HistoryEntry::message)
        .map(Message::text)
        .collect()
}

/// One finished turn in the log: `pre_run`, the prompt and the answer, `turn_end`.
fn log_turn(log: &super::log::SessionLog, n: usize) {
    let append = |event: SessionLogEvent| {
        log.append(&event)
            .unwrap_or_else(|e| panic!("log append: {e}"))
    };
    append(SessionLogEvent::PreRun {
        execution_id: None,
        input: format!("turn {n}"),
        provider: None,
        model: None,
        history_length: 0,
    });
    for (suffix, role, text) in [
        ("q", Role::User, format!("turn {n}")),
        ("a", Role::Assistant, format!("answer {n}")),
    ] {
        append(SessionLogEvent::HistoryAppend {
            entry: chat(message(&format!("t{n}{suffix}"), role, &text)),
        });
    }
    let mut usage = UsageTotals::new();
    usage.usage.input_tokens = 10;
    usage.usage.output_tokens = 2;
    append(SessionLogEvent::TurnEnd {
        execution_id: None,
        stop_reason: "completed".into(),
        rounds: 1,
        message_count: 0,
        usage,
    });
}

/// The `session_init` line a writer starts its log with.
fn log_init(log: &super::log::SessionLog, id: &str) {
    log.append(&SessionLogEvent::SessionInit {
        session_id: id.into(),
        cwd: "/work/project".into(),
        provider: Some("anthropic".into()),
        model: Some("claude-sonnet-4-6".into()),
        permission_mode: None,
        name: Some(format!("session {id}")),
        parent_id: None,
        resumed: false,
        system_prompt: None,
        tool_schemas: Vec::new(),
    })
    .unwrap_or_else(|e| panic!("log append: {e}"));
}

/// A session as a writer leaves it: a `session_init`, a snapshot, then `turns` finished turns
/// in the log after the snapshot (as after a crash between log and snapshot).
fn write_session(store: &dyn SessionStore, id: &str, turns: usize) {
    let log = store
        .open_log(id, LogOptions::default())
        .unwrap_or_else(|e| panic!("open_log: {e}"));
    log_init(&log, id);
    let mut record = record_with(id, 2, "before");
    log.append(&SessionLogEvent::HistoryReplace {
        reason: "fork".into(),
        entries: record.history.clone(),
        usage: Some(record.usage.clone()),
    })
    .unwrap_or_else(|e| panic!("log append: {e}"));
    log.flush().unwrap_or_else(|e| panic!("log flush: {e}"));
    record.log_position = Some(log.position());
    store.save(&record).unwrap_or_else(|e| panic!("save: {e}"));
    for n in 1..=turns {
        log_turn(&log, n);
    }
    log.sync().unwrap_or_else(|e| panic!("log sync: {e}"));
}

/// A saved record loads back equal, and a missing one is `None`, not an error.
pub fn snapshot_round_trip(store: &dyn SessionStore) {
    let mut record = record_with("round-trip", 4, "hello");
    record
        .extra
        .insert("hostField".into(), json!({"kept": true}));
    record.system_prompt = Some("You are terse.".into());
    store.save(&record).unwrap_or_else(|e| panic!("save: {e}"));
    let loaded = store
        .load("round-trip")
        .unwrap_or_else(|e| panic!("load: {e}"));
    assert_eq!(loaded.as_ref(), Some(&record), "snapshot round trip");
    assert!(
        matches!(store.load("never-saved"), Ok(None)),
        "a missing snapshot loads as None"
    );
    assert!(
        matches!(store.load("../x"), Err(StoreError::InvalidId { .. })),
        "an invalid id is refused"
    );
}

/// While one thread replaces a snapshot again and again, readers see the old or the new one,
/// whole, never a mix.
pub fn snapshot_replace_is_atomic(store: Arc<dyn SessionStore>) {
    let small = record_with("atomic", 2, "small");
    let large = record_with("atomic", 400, &"large ".repeat(200));
    store.save(&small).unwrap_or_else(|e| panic!("save: {e}"));
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let store = Arc::clone(&store);
        let stop = Arc::clone(&stop);
        let (small, large) = (small.clone(), large.clone());
        std::thread::spawn(move || {
            for k in 0..40 {
                if stop.load(std::sync::atomic::Ordering::SeqCst) {
                    break;
                }
                let record = if k % 2 == 0 { &large } else { &small };
                store.save(record).unwrap_or_else(|e| panic!("save: {e}"));
            }
        })
    };
    // The writer is joined whatever the readers find: a store must not be used after the check.
    let readers = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut reads = 0;
        while !writer.is_finished() || reads < 5 {
            let loaded = store
                .load("atomic")
                .unwrap_or_else(|e| panic!("a reader met a partial snapshot: {e}"))
                .unwrap_or_else(|| panic!("a reader found no snapshot while it was replaced"));
            assert!(
                loaded == small || loaded == large,
                "a reader saw a snapshot that is neither the old nor the new one"
            );
            reads += 1;
        }
    }));
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    let written = writer.join();
    if let Err(payload) = readers {
        std::panic::resume_unwind(payload);
    }
    if written.is_err() {
        panic!("the writer thread panicked");
    }
}

/// Lines appended to the log read back from any position a snapshot recorded, and the log
/// continues where it ended when opened again.
pub fn log_append_and_read_from_a_position(store: &dyn SessionStore) {
    let id = "log-tail";
    assert!(
        matches!(store.log_len(id), Ok(None)),
        "no log before the first line"
    );
    let log = store
        .open_log(id, LogOptions::default())
        .unwrap_or_else(|e| panic!("open_log: {e}"));
    log_turn(&log, 1);
    log.flush().unwrap_or_else(|e| panic!("flush: {e}"));
    let middle = log.position();
    log_turn(&log, 2);
    log.flush().unwrap_or_else(|e| panic!("flush: {e}"));
    let end = log.position();
    drop(log);
    assert_eq!(middle.seq, 4, "seq counts lines");
    assert_eq!(
        store.log_len(id).unwrap_or_else(|e| panic!("log_len: {e}")),
        Some(end.offset),
        "the log's length is the position after its last line"
    );
    let mut tail = String::new();
    store
        .read_log(id, middle.offset)
        .unwrap_or_else(|e| panic!("read_log: {e}"))
        .unwrap_or_else(|| panic!("read_log found no log"))
        .read_to_string(&mut tail)
        .unwrap_or_else(|e| panic!("read the log: {e}"));
    let seqs: Vec<u64> = tail
        .lines()
        .map(|line| {
            serde_json::from_str::<serde_json::Value>(line)
                .ok()
                .and_then(|value| value["seq"].as_u64())
                .unwrap_or_else(|| panic!("not a log line: {line}"))
        })
        .collect();
    assert_eq!(seqs, [5, 6, 7, 8], "the tail after the position");
    let reopened = store
        .open_log(id, LogOptions::default())
        .unwrap_or_else(|e| panic!("open_log again: {e}"));
    assert_eq!(reopened.position(), end, "a reopened log continues");
}

/// Resume = the snapshot plus the finished turns the log holds after the snapshot's position.
pub fn resume_is_snapshot_plus_log_tail(store: &dyn SessionStore) {
    let id = "snap-tail";
    write_session(store, id, 2);
    let resumed = store.resume(id).unwrap_or_else(|e| panic!("resume: {e}"));
    assert_eq!(
        resumed.source,
        ResumeSource::SnapshotAndLog { turns_replayed: 2 },
        "resume source"
    );
    assert_eq!(
        texts(&resumed.record.history),
        ["before", "before", "turn 1", "answer 1", "turn 2", "answer 2"]
    );
    assert_eq!(
        resumed.record.usage.usage.input_tokens, 120,
        "usage of the tail"
    );
    assert!(resumed.record.unfinished_turn.is_none());
}

/// Without a snapshot the session comes from its log, and an unfinished turn is reported.
pub fn resume_from_the_log_alone(store: &dyn SessionStore) {
    let id = "log-only";
    let log = store
        .open_log(id, LogOptions::default())
        .unwrap_or_else(|e| panic!("open_log: {e}"));
    log_init(&log, id);
    log_turn(&log, 1);
    log.append(&SessionLogEvent::PreRun {
        execution_id: None,
        input: "never finished".into(),
        provider: None,
        model: None,
        history_length: 2,
    })
    .unwrap_or_else(|e| panic!("append: {e}"));
    log.flush().unwrap_or_else(|e| panic!("flush: {e}"));
    let resumed = store.resume(id).unwrap_or_else(|e| panic!("resume: {e}"));
    assert!(matches!(resumed.source, ResumeSource::LogReplay { .. }));
    assert_eq!(texts(&resumed.record.history), ["turn 1", "answer 1"]);
    assert_eq!(
        resumed.record.unfinished_turn.map(|turn| turn.prompt),
        Some("never finished".to_string())
    );
    let listing = store.list().unwrap_or_else(|e| panic!("list: {e}"));
    assert!(
        listing
            .sessions
            .iter()
            .any(|s| s.id == id && !s.has_snapshot),
        "a log-only session is listed"
    );
}

/// Listing reads the summary fields, not the history: a session with a 1 MB history lists far
/// faster than it loads.
pub fn listing_reads_headers_without_history(store: &dyn SessionStore) {
    let big = record_with("big", 1000, &"x".repeat(1000));
    store.save(&big).unwrap_or_else(|e| panic!("save: {e}"));
    store
        .save(&record_with("small", 2, "hi"))
        .unwrap_or_else(|e| panic!("save: {e}"));
    let listing = store.list().unwrap_or_else(|e| panic!("list: {e}"));
    assert!(listing.problems.is_empty(), "{:?}", listing.problems);
    let summary = listing
        .sessions
        .iter()
        .find(|s| s.id == "big")
        .unwrap_or_else(|| panic!("the big session is not listed"));
    assert_eq!(summary.message_count, Some(1000));
    assert_eq!(summary.name.as_deref(), Some("session big"));
    assert_eq!(
        summary.usage.as_ref().map(|u| u.usage.input_tokens),
        Some(100)
    );
    assert!(summary.has_snapshot);
    let fastest = |f: &dyn Fn()| {
        (0..5)
            .map(|_| {
                let started = Instant::now();
                f();
                started.elapsed()
            })
            .min()
            .unwrap_or_default()
    };
    let list = fastest(&|| {
        store.list().unwrap_or_else(|e| panic!("list: {e}"));
    });
    let load = fastest(&|| {
        store.load("big").unwrap_or_else(|e| panic!("load: {e}"));
    });
    assert!(
        list * 5 < load,
        "listing took {list:?}, loading the 1 MB session {load:?}: listing must not read the history"
    );
}

/// A fork is a new session with the original's history and `parent_id`; the original is not
/// changed, and the fork resumes from its own log alone too.
pub fn fork_copies_to_a_new_id(store: &dyn SessionStore) {
    let id = "fork-source";
    write_session(store, id, 1);
    let before = store.get_snapshot(id).unwrap_or_else(|e| panic!("{e}"));
    let before_log = store.log_len(id).unwrap_or_else(|e| panic!("{e}"));
    let fork = store.fork(id).unwrap_or_else(|e| panic!("fork: {e}"));
    assert_ne!(fork, id);
    let forked = store
        .load(&fork)
        .unwrap_or_else(|e| panic!("load the fork: {e}"))
        .unwrap_or_else(|| panic!("the fork has no snapshot"));
    assert_eq!(forked.parent_id.as_deref(), Some(id));
    assert_eq!(
        texts(&forked.history),
        ["before", "before", "turn 1", "answer 1"]
    );
    assert_eq!(
        store.get_snapshot(id).unwrap_or_else(|e| panic!("{e}")),
        before,
        "the original's snapshot is untouched"
    );
    assert_eq!(
        store.log_len(id).unwrap_or_else(|e| panic!("{e}")),
        before_log,
        "the original's log is untouched"
    );
    let rebuilt = store
        .rebuild_from_log(&fork)
        .unwrap_or_else(|e| panic!("rebuild the fork: {e}"));
    assert_eq!(texts(&rebuilt.record.history), texts(&forked.history));
    assert_eq!(rebuilt.record.usage, forked.usage);
}

/// Delete removes the snapshot, the log and the session's files: nothing can bring it back.
pub fn delete_removes_everything(store: &dyn SessionStore) {
    let id = "doomed";
    write_session(store, id, 1);
    if let Some(dir) = store.session_dir(id) {
        std::fs::create_dir_all(dir.join("spill"))
            .and_then(|()| std::fs::write(dir.join("spill/out.txt"), "spilled"))
            .unwrap_or_else(|e| panic!("write a session file: {e}"));
    }
    assert!(store.delete(id).unwrap_or_else(|e| panic!("delete: {e}")));
    assert!(matches!(store.load(id), Ok(None)), "the snapshot is gone");
    assert!(matches!(store.log_len(id), Ok(None)), "the log is gone");
    assert!(
        matches!(store.resume(id), Err(StoreError::NotFound { .. })),
        "resume cannot bring it back"
    );
    if let Some(dir) = store.session_dir(id) {
        assert!(!dir.exists(), "the session's files are gone");
    }
    let listing = store.list().unwrap_or_else(|e| panic!("list: {e}"));
    assert!(listing.sessions.iter().all(|s| s.id != id));
    assert!(
        !store
            .delete(id)
            .unwrap_or_else(|e| panic!("delete again: {e}")),
        "nothing left to delete"
    );
}

/// One writer per session: a second lease is refused with `Locked` until the first is released.
pub fn a_second_writer_is_locked_out(store: &dyn SessionStore) {
    let id = "leased";
    let mut first = store.lock(id).unwrap_or_else(|e| panic!("lock: {e}"));
    assert!(first.previous_holder().is_none());
    match store.lock(id) {
        Err(StoreError::Locked {
            id: locked, holder, ..
        }) => {
            assert_eq!(locked, id);
            assert_eq!(holder.map(|h| h.pid), Some(std::process::id()));
        }
        other => panic!("a second writer must get Locked, got {other:?}"),
    }
    assert!(
        store.lock("other-session").is_ok(),
        "leases are per session"
    );
    first.release();
    let again = store
        .lock(id)
        .unwrap_or_else(|e| panic!("lock after release: {e}"));
    assert!(
        again.previous_holder().is_none(),
        "a released lease leaves no holder"
    );
}

/// A lease held by a process that was killed is taken over, naming the dead holder.
/// `spawn_holder(id)` starts a child running [`child_main`] with [`ChildTask::HoldLease`] on
/// the same storage, its stdout piped.
pub fn lease_of_a_killed_process_is_taken_over(
    store: &dyn SessionStore,
    spawn_holder: &dyn Fn(&str) -> Child,
) {
    let id = "killed-holder";
    let mut child = spawn_holder(id);
    let pid = child.id();
    let stdout = child
        .stdout
        .take()
        .unwrap_or_else(|| panic!("the holder's stdout must be piped"));
    let mut held = false;
    for line in BufReader::new(stdout).lines() {
        let Ok(line) = line else { break };
        if line.trim() == LEASE_HELD {
            held = true;
            break;
        }
    }
    assert!(held, "the child never took the lease");
    match store.lock(id) {
        Err(StoreError::Locked { holder, .. }) => {
            assert_eq!(holder.map(|h| h.pid), Some(pid), "the holder is named");
        }
        other => panic!("the child's lease must lock us out, got {other:?}"),
    }
    child
        .kill()
        .unwrap_or_else(|e| panic!("kill the holder: {e}"));
    let _ = child.wait();
    let lease = store
        .lock(id)
        .unwrap_or_else(|e| panic!("the dead holder's lease must be taken over: {e}"));
    assert_eq!(
        lease.previous_holder().map(|h| h.pid),
        Some(pid),
        "the takeover names the dead holder"
    );
}

/// A session written by another process (snapshot plus log tail) resumes here exactly.
/// `run_writer(id)` runs a child with [`ChildTask::WriteSession`] on the same storage to its
/// end.
pub fn a_session_written_by_another_process_resumes(
    store: &dyn SessionStore,
    run_writer: &dyn Fn(&str) -> ExitStatus,
) {
    let id = "from-child";
    let status = run_writer(id);
    assert!(status.success(), "the writer failed: {status}");
    let resumed = store.resume(id).unwrap_or_else(|e| panic!("resume: {e}"));
    assert_eq!(
        resumed.source,
        ResumeSource::SnapshotAndLog { turns_replayed: 2 }
    );
    assert_eq!(
        texts(&resumed.record.history),
        ["before", "before", "turn 1", "answer 1", "turn 2", "answer 2"]
    );
    assert!(resumed.skipped_lines.is_empty() && resumed.torn_tail.is_none());
}
