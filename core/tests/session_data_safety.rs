//! Data safety of saved sessions (issue 14, "Data loss and silent repair"), with real child
//! processes and real files in temporary projects:
//!
//! - **One writer per session.** A second process resuming a session another process has open
//!   gets the typed `Locked` error naming the holder; processes racing for one session take
//!   turns and lose nothing (no duplicate `seq`, every turn of every process kept); the lock
//!   of a SIGKILLed writer is taken over, by one taker at a time; a fork of a locked session
//!   works, and so do reading and listing.
//! - **Damage is repaired and reported, never silent.** A garbage, truncated or empty snapshot
//!   is rebuilt from the log and moved aside; an unreadable log line is skipped, reported with
//!   its line number and the history mended; a torn last line is reported; the report reaches
//!   the host as a `session_recovered` event and [`Session::recovery_report`].
//! - **A turn cut by SIGKILL is reported.** A kill loop (start turns, SIGKILL at random points,
//!   resume, again) checks that every resume after an unfinished turn names its prompt and that
//!   every finished turn is kept.
//!
//! The children are this test binary re-run on the `#[ignore]`d `safety_child`.
#![cfg(unix)]

mod child_common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use child_common::{assert_calls_answered, block_on, saved_options, say, ChildRun};
use rand::Rng;
use robota::api::{ApiError, ApiErrorKind};
use robota::engine::EngineEvent;
use robota::hooks::SessionEndReason;
use robota::message::{ContentBlock, HistoryEntry, Message, Role};
use robota::provider::scripted::{ScriptedProvider, ScriptedTurn};
use robota::session::recovery::LOST_TOOL_RESULT;
use robota::session::store::{FileSessionStore, SessionStore};
use robota::session::{RecoveryReport, Session, SessionError, SessionEvent, SessionOptions};
use serde_json::{json, Value};

/// Exit code of a child that found the session locked.
const EXIT_LOCKED: i32 = 3;

/// A provider whose turn `k` (from `first`) calls `echo` and then answers `answer {tag}{k}`.
fn provider(tag: &str, first: usize, turns: usize, delay_ms: u64) -> Arc<ScriptedProvider> {
    let mut script = Vec::new();
    for k in first..first + turns {
        script.push(
            ScriptedTurn::tool_call(format!("call_{tag}{k}"), "echo", json!({"text": k}))
                .with_usage(50, 5),
        );
        script.push(
            ScriptedTurn::chunks(["ans", "wer ", &format!("{tag}{k}")])
                .with_delay_ms(delay_ms)
                .with_usage(60, 3),
        );
    }
    Arc::new(ScriptedProvider::new(script))
}

fn options(project: &Path, provider: Arc<ScriptedProvider>) -> SessionOptions {
    saved_options(project, provider)
}

/// `(prompt, messages)` per turn: a user message starting a turn is `"{tag}turn {k}"`.
fn turns_of<'a>(
    messages: impl IntoIterator<Item = &'a Message>,
) -> Vec<(String, Vec<&'a Message>)> {
    let mut turns: Vec<(String, Vec<&Message>)> = Vec::new();
    for message in messages {
        let text = message.text();
        if message.role == Role::User && text.contains("turn ") {
            turns.push((text, vec![message]));
        } else if let Some((_, messages)) = turns.last_mut() {
            messages.push(message);
        }
    }
    turns
}

fn messages_of(history: &[HistoryEntry]) -> Vec<&Message> {
    history.iter().filter_map(HistoryEntry::message).collect()
}

/// The `seq` numbers of a log's readable lines: strictly increasing, no duplicates.
fn assert_log_seqs_increase(path: &Path) -> usize {
    let text = std::fs::read_to_string(path).unwrap();
    let mut last = 0;
    let mut count = 0;
    for line in text.lines() {
        let Ok(value) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let seq = value["seq"].as_u64().unwrap();
        assert!(seq > last, "seq {seq} follows {last} in {}", path.display());
        last = seq;
        count += 1;
    }
    count
}

// ---------------------------------------------------------------------------------------------
// The child process.

/// The child. `ROBOTA_SAFETY_MODE`:
/// - `turns`: resume the session (`wait`: retrying while it is locked), run
///   `ROBOTA_SAFETY_TURNS` turns `"{tag}turn {k}"`, then (with `ROBOTA_SAFETY_HOLD`) keep it
///   open until a line arrives on stdin, shut down and exit. A locked session: `LOCKED` and
///   exit code 3.
/// - `loop`: resume (or create) the session, report what the resume found, then run turns
///   `"turn {n}"` until killed.
#[test]
#[ignore = "helper: run in child processes by the tests of this file"]
fn safety_child() {
    let Ok(project) = std::env::var("ROBOTA_SAFETY_PROJECT") else {
        return;
    };
    let mode = std::env::var("ROBOTA_SAFETY_MODE").unwrap_or_default();
    let id = std::env::var("ROBOTA_SAFETY_SESSION").unwrap();
    match mode.as_str() {
        "loop" => block_on(child_loop(Path::new(&project), &id)),
        _ => block_on(child_turns(Path::new(&project), &id, mode == "wait")),
    }
}

async fn child_turns(project: &Path, id: &str, wait: bool) {
    let tag = std::env::var("ROBOTA_SAFETY_TAG").unwrap_or_default();
    let turns: usize = std::env::var("ROBOTA_SAFETY_TURNS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    let mut retries = 0u64;
    let session = loop {
        let options = options(project, provider(&tag, 0, turns, 15)).with_resume(id, false);
        match Session::new(options) {
            Ok(session) => break session,
            Err(SessionError::Locked { holder, .. }) if wait => {
                assert!(holder.is_none_or(|h| h.pid != std::process::id()));
                retries += 1;
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            Err(error @ SessionError::Locked { .. }) => {
                say("LOCKED", serde_json::to_string(&error.to_string()).unwrap());
                std::process::exit(EXIT_LOCKED);
            }
            Err(error) => panic!("Session::new failed: {error}"),
        }
    };
    say("OPENED", retries);
    for k in 0..turns {
        let outcome = session.run(format!("{tag}turn {k}")).await.unwrap();
        assert_eq!(outcome.response, format!("answer {tag}{k}"));
        say("DONE", k);
    }
    if std::env::var("ROBOTA_SAFETY_HOLD").is_ok() {
        let mut line = String::new();
        let _ = std::io::stdin().read_line(&mut line);
    }
    session.shutdown(SessionEndReason::Other).await;
    drop(session);
    say("CLOSED", 0);
}

async fn child_loop(project: &Path, id: &str) {
    let store = FileSessionStore::for_project(project);
    let exists = store.log_path(id).unwrap().exists();
    let first = if exists {
        let resumed = store.resume(id).unwrap();
        turns_of(messages_of(&resumed.record.history)).len()
    } else {
        0
    };
    let current = Arc::new(AtomicUsize::new(first));
    let seen = current.clone();
    let recovered = Arc::new(Mutex::new(Vec::new()));
    let events = recovered.clone();
    let mut options =
        options(project, provider("", first, 10_000, 3)).with_on_event(move |event| match event {
            SessionEvent::Engine(EngineEvent::TextDelta { .. }) => {
                say("DELTA", seen.load(Ordering::SeqCst));
            }
            SessionEvent::SessionRecovered { report, .. } => {
                events.lock().unwrap().push(report);
            }
            _ => {}
        });
    options = if exists {
        options.with_resume(id, false)
    } else {
        options.with_session_id(id)
    };
    let session = Session::new(options).unwrap_or_else(|e| panic!("Session::new failed: {e}"));
    let report = session.recovery_report().cloned();
    session.start().await;
    // The report reaches the host as an event exactly when there is one.
    assert_eq!(
        recovered.lock().unwrap().first(),
        report.as_ref(),
        "the session_recovered event and recovery_report() disagree"
    );
    say("REPORT", serde_json::to_string(&report).unwrap());
    let resumed = turns_of(&session.messages()).len();
    assert_eq!(resumed, first, "the Session and the store disagree");
    say("READY", first);
    let mut n = first;
    loop {
        current.store(n, Ordering::SeqCst);
        say("START", n);
        let outcome = session.run(format!("turn {n}")).await.unwrap();
        assert_eq!(outcome.response, format!("answer {n}"));
        say("DONE", n);
        n += 1;
    }
}

// ---------------------------------------------------------------------------------------------
// The parent's side of a child.

/// A child running `safety_child` in `mode` on session `id` of `project`.
fn spawn(project: &Path, id: &str, mode: &str, env: &[(&str, String)]) -> ChildRun {
    let mut env = env.to_vec();
    env.push((
        "ROBOTA_SAFETY_PROJECT",
        project.to_string_lossy().into_owned(),
    ));
    env.push(("ROBOTA_SAFETY_SESSION", id.to_string()));
    env.push(("ROBOTA_SAFETY_MODE", mode.to_string()));
    ChildRun::spawn("safety_child", &env)
}

fn project() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = std::fs::canonicalize(dir.path()).unwrap();
    (dir, path)
}

/// A saved session `id` with `turns` turns `"{tag}turn {k}"`, closed.
async fn saved_session(project: &Path, id: &str, tag: &str, turns: usize) {
    let session =
        Session::new(options(project, provider(tag, 0, turns, 0)).with_session_id(id)).unwrap();
    for k in 0..turns {
        session.run(format!("{tag}turn {k}")).await.unwrap();
    }
    session.shutdown(SessionEndReason::Other).await;
}

fn turns_env(tag: &str, turns: usize) -> Vec<(&'static str, String)> {
    vec![
        ("ROBOTA_SAFETY_TAG", tag.to_string()),
        ("ROBOTA_SAFETY_TURNS", turns.to_string()),
    ]
}

// ---------------------------------------------------------------------------------------------
// One writer per session.

#[tokio::test]
async fn a_second_writer_process_is_refused_with_the_holder_named() {
    let (_dir, project) = project();
    let id = "shared";
    saved_session(&project, id, "p", 1).await;
    let store = FileSessionStore::for_project(&project);

    // A runs two turns and keeps the session open.
    let mut env = turns_env("a", 2);
    env.push(("ROBOTA_SAFETY_HOLD", "1".into()));
    let mut a = spawn(&project, id, "turns", &env);
    a.wait_for("OPENED");
    a.wait_for("DONE");
    let holder_pid = a.pid();

    // B, another process, is refused with the typed error naming A.
    let mut b = spawn(&project, id, "turns", &turns_env("b", 2));
    let message: String = serde_json::from_str(&b.wait_for("LOCKED")).unwrap();
    assert_eq!(b.exit_code(), Some(EXIT_LOCKED));
    for needle in [
        "\"shared\"".to_string(),
        format!("process {holder_pid}"),
        "since".into(),
        "fork".into(),
    ] {
        assert!(message.contains(&needle), "{needle:?} not in {message}");
    }

    // The same from this process: typed error, holder's pid, mapped for every binding.
    let refused = Session::new(options(&project, provider("c", 0, 1, 0)).with_resume(id, false));
    match refused {
        Err(SessionError::Locked {
            id: locked,
            holder,
            path,
        }) => {
            assert_eq!(locked, id);
            assert_eq!(holder.map(|h| h.pid), Some(holder_pid));
            assert_eq!(path, store.lock_path(id).unwrap());
        }
        other => panic!("expected Locked, got {other:?}"),
    }
    let refused = Session::new(options(&project, provider("c", 0, 1, 0)).with_session_id(id));
    let error = refused.expect_err("a new session with the id of an open one is refused too");
    assert_eq!(ApiError::from(error).kind, ApiErrorKind::SessionLocked);

    // Reading and listing need no lock; forking works and copies what A has saved.
    a.wait_for("DONE");
    assert_eq!(store.list().unwrap().sessions.len(), 1);
    let read = store.resume(id).unwrap();
    assert_eq!(turns_of(messages_of(&read.record.history)).len(), 3);
    let fork =
        Session::new(options(&project, provider("f", 0, 1, 0)).with_resume(id, true)).unwrap();
    assert_ne!(fork.session_id(), id);
    assert_eq!(turns_of(&fork.messages()).len(), 3);
    fork.run("fturn 0").await.unwrap();
    fork.shutdown(SessionEndReason::Other).await;

    // Once A closes the session, B gets it; nothing of anyone is lost.
    a.close_stdin();
    a.wait_for("CLOSED");
    assert_eq!(a.exit_code(), Some(0));
    assert!(
        !store.lock_path(id).unwrap().exists(),
        "shutdown removes the lock file"
    );
    let mut b = spawn(&project, id, "turns", &turns_env("b", 2));
    b.wait_for("CLOSED");
    assert_eq!(b.exit_code(), Some(0));
    let resumed = store.resume(id).unwrap();
    let prompts: Vec<String> = turns_of(messages_of(&resumed.record.history))
        .into_iter()
        .map(|(prompt, _)| prompt)
        .collect();
    assert_eq!(
        prompts,
        ["pturn 0", "aturn 0", "aturn 1", "bturn 0", "bturn 1"]
    );
    assert_calls_answered("resume", &messages_of(&resumed.record.history));
    assert_log_seqs_increase(&store.log_path(id).unwrap());
}

#[tokio::test]
async fn writers_racing_for_one_session_take_turns_and_lose_nothing() {
    let (_dir, project) = project();
    let id = "raced";
    saved_session(&project, id, "p", 1).await;
    let store = FileSessionStore::for_project(&project);
    let tags = ["a", "b", "c", "d"];
    let turns = 3;
    let mut writers: Vec<ChildRun> = tags
        .iter()
        .map(|tag| spawn(&project, id, "wait", &turns_env(tag, turns)))
        .collect();
    let mut retries = 0;
    for writer in &mut writers {
        retries += writer.wait_for("OPENED").parse::<u64>().unwrap();
        writer.wait_for("CLOSED");
        assert_eq!(writer.exit_code(), Some(0));
    }
    assert!(retries > 0, "the writers never met a locked session");

    let resumed = store.resume(id).unwrap();
    let turns_found = turns_of(messages_of(&resumed.record.history));
    assert_eq!(
        turns_found.len(),
        1 + tags.len() * turns,
        "{:?}",
        resumed.diagnostics
    );
    // Each writer's turns are whole and in its order, never interleaved with another's.
    for tag in tags {
        let mine: Vec<&String> = turns_found
            .iter()
            .map(|(prompt, _)| prompt)
            .filter(|prompt| prompt.starts_with(tag))
            .collect();
        let expected: Vec<String> = (0..turns).map(|k| format!("{tag}turn {k}")).collect();
        assert_eq!(mine, expected.iter().collect::<Vec<_>>());
        let first = turns_found
            .iter()
            .position(|(prompt, _)| prompt.starts_with(tag))
            .unwrap();
        assert!(turns_found[first..first + turns]
            .iter()
            .all(|(prompt, _)| prompt.starts_with(tag)));
    }
    for (prompt, messages) in &turns_found {
        assert_eq!(messages.len(), 4, "turn {prompt:?}");
    }
    assert_calls_answered("resume", &messages_of(&resumed.record.history));
    assert!(resumed.diagnostics.is_empty(), "{:?}", resumed.diagnostics);
    // The whole log, read alone, agrees; its seq numbers never repeat.
    let rebuilt = store.rebuild_from_log(id).unwrap();
    assert_eq!(
        messages_of(&rebuilt.record.history),
        messages_of(&resumed.record.history)
    );
    assert!(rebuilt.skipped_lines.is_empty() && rebuilt.incomplete_turn.is_none());
    assert_log_seqs_increase(&store.log_path(id).unwrap());
}

#[tokio::test]
async fn a_stale_lock_left_by_a_killed_writer_is_taken_over_once() {
    let (_dir, project) = project();
    let id = "stale";
    saved_session(&project, id, "p", 1).await;
    let store = FileSessionStore::for_project(&project);
    let lock_path = store.lock_path(id).unwrap();

    let mut env = turns_env("a", 1);
    env.push(("ROBOTA_SAFETY_HOLD", "1".into()));
    let mut a = spawn(&project, id, "turns", &env);
    a.wait_for("DONE");
    let killed_pid = a.pid();
    a.kill();
    // The killed writer's record is still there; its OS lock died with it.
    let record: Value =
        serde_json::from_str(&std::fs::read_to_string(&lock_path).unwrap()).unwrap();
    assert_eq!(record["pid"].as_u64(), Some(u64::from(killed_pid)));

    // Two processes race to take it over: one gets it, the other is told who has it now.
    let mut env = turns_env("b", 0);
    env.push(("ROBOTA_SAFETY_HOLD", "1".into()));
    let mut takers = [
        spawn(&project, id, "turns", &env),
        spawn(&project, id, "turns", &env),
    ];
    let outcomes: Vec<(String, String)> = takers
        .iter_mut()
        .map(|taker| taker.wait_for_any(&["OPENED", "LOCKED"]))
        .collect();
    let opened: Vec<usize> = (0..2).filter(|i| outcomes[*i].0 == "OPENED").collect();
    assert_eq!(
        opened.len(),
        1,
        "exactly one taker gets the lock: {outcomes:?}"
    );
    let winner = opened[0];
    let loser = 1 - winner;
    let message: String = serde_json::from_str(&outcomes[loser].1).unwrap();
    assert!(
        message.contains(&format!("process {}", takers[winner].pid())),
        "{message}"
    );
    assert_eq!(takers[loser].exit_code(), Some(EXIT_LOCKED));
    takers[winner].close_stdin();
    takers[winner].wait_for("CLOSED");
    assert_eq!(takers[winner].exit_code(), Some(0));

    // A stale record is also taken over in this process, and said so.
    std::fs::write(&lock_path, record.to_string()).unwrap();
    let lock = store.lock(id).unwrap();
    assert_eq!(lock.previous_holder().map(|h| h.pid), Some(killed_pid));
    drop(lock);
    let resumed = store.resume(id).unwrap();
    assert_eq!(turns_of(messages_of(&resumed.record.history)).len(), 2);
}

#[tokio::test]
async fn one_process_cannot_open_a_session_twice() {
    let (_dir, project) = project();
    let id = "twice";
    let first =
        Session::new(options(&project, provider("a", 0, 1, 0)).with_session_id(id)).unwrap();
    first.run("aturn 0").await.unwrap();
    let second = Session::new(options(&project, provider("b", 0, 1, 0)).with_resume(id, false));
    let message = second.expect_err("locked").to_string();
    assert!(message.contains("this process"), "{message}");
    // Dropping the holder releases it.
    drop(first);
    let second =
        Session::new(options(&project, provider("b", 0, 1, 0)).with_resume(id, false)).unwrap();
    assert_eq!(second.messages().len(), 4);
}

// ---------------------------------------------------------------------------------------------
// Damaged files.

/// A closed session with three turns, and its store.
async fn three_turns(project: &Path, id: &str) -> FileSessionStore {
    saved_session(project, id, "", 3).await;
    FileSessionStore::for_project(project)
}

/// Resumes `id`, starts it, and returns the session, its report and the `session_recovered`
/// events it sent.
async fn resume_and_start(
    project: &Path,
    id: &str,
) -> (Session, Option<RecoveryReport>, Vec<Value>) {
    let events: Arc<Mutex<Vec<Value>>> = Arc::default();
    let sink = events.clone();
    let options = options(project, provider("", 3, 1, 0))
        .with_resume(id, false)
        .with_on_event(move |event| {
            if matches!(event, SessionEvent::SessionRecovered { .. }) {
                sink.lock()
                    .unwrap()
                    .push(serde_json::to_value(&event).unwrap());
            }
        });
    let session = Session::new(options).unwrap();
    let report = session.recovery_report().cloned();
    session.start().await;
    let events = events.lock().unwrap().clone();
    (session, report, events)
}

/// The session goes on after a recovery, and the next resume has nothing more to say.
async fn goes_on_cleanly(project: &Path, id: &str, session: Session) {
    let outcome = session.run("turn 3").await.unwrap();
    assert_eq!(outcome.response, "answer 3");
    session.shutdown(SessionEndReason::Other).await;
    drop(session);
    let (session, report, events) = resume_and_start(project, id).await;
    assert_eq!(report, None, "the repair is done once");
    assert!(events.is_empty());
    assert_eq!(turns_of(&session.messages()).len(), 4);
}

#[tokio::test]
async fn a_garbage_truncated_or_empty_snapshot_is_rebuilt_from_the_log_and_kept_aside() {
    type Damage = fn(&[u8]) -> Vec<u8>;
    let cases: [(&str, Damage); 3] = [
        ("garbage", |_| {
            b"\x00\x13 this is not JSON at all {{{".to_vec()
        }),
        ("truncated", |bytes| bytes[..bytes.len() / 2].to_vec()),
        ("empty", |_| Vec::new()),
    ];
    for (case, damage) in cases {
        let (_dir, project) = project();
        let id = format!("snap-{case}");
        let store = three_turns(&project, &id).await;
        let path = store.snapshot_path(&id).unwrap();
        let damaged = damage(&std::fs::read(&path).unwrap());
        std::fs::write(&path, &damaged).unwrap();

        // Listing still finds it (what `--continue` picks). It reads only a snapshot's
        // summary, so it tells a garbage or empty file, not a cut-off history.
        let listing = store.list().unwrap();
        assert_eq!(listing.sessions.len(), 1, "{case}");
        assert_eq!(listing.sessions[0].id, id);
        assert_eq!(
            listing.problems.len(),
            usize::from(case != "truncated"),
            "{case}"
        );

        // A session that fails to open repairs nothing: the damage is still found next time.
        let failed = Session::new(
            options(&project, provider("", 3, 1, 0))
                .with_resume(&id, false)
                .with_max_budget_usd(-1.0),
        );
        assert!(
            matches!(failed, Err(SessionError::InvalidBudget { .. })),
            "{case}"
        );
        assert_eq!(std::fs::read(&path).unwrap(), damaged, "{case}");

        let (session, report, events) = resume_and_start(&project, &id).await;
        assert_eq!(
            turns_of(&session.messages()).len(),
            3,
            "{case}: every turn is kept"
        );
        assert_calls_answered(case, &session.messages().iter().collect::<Vec<_>>());
        let report = report.unwrap_or_else(|| panic!("{case}: no report"));
        let snapshot = report.snapshot.clone().unwrap();
        assert_eq!(snapshot.path, path);
        let problem = if case == "empty" {
            "it is empty"
        } else {
            "it is corrupt: "
        };
        assert!(
            snapshot.problem.starts_with(problem),
            "{case}: {}",
            snapshot.problem
        );
        let moved = snapshot.moved_to.clone().unwrap();
        assert_eq!(
            std::fs::read(&moved).unwrap(),
            damaged,
            "{case}: kept aside as it was"
        );
        assert!(moved
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with(&format!("{id}.json.damaged-")));
        // A good snapshot is back at once.
        assert_eq!(store.load(&id).unwrap().unwrap().message_count(), 12);
        assert!(report.lost.is_empty(), "{case}: {:?}", report.lost);
        let message = report.message();
        for needle in [
            "could not be read",
            "rebuilt from its log",
            "moved to",
            "No finished turn was lost",
        ] {
            assert!(
                message.contains(needle),
                "{case}: {needle:?} not in {message}"
            );
        }
        assert_eq!(events.len(), 1, "{case}: one session_recovered event");
        assert_eq!(events[0]["type"], "session_recovered");
        assert_eq!(events[0]["message"], message.as_str());
        assert_eq!(events[0]["report"], serde_json::to_value(&report).unwrap());
        goes_on_cleanly(&project, &id, session).await;
    }
}

/// The 1-based number of the first log line of `type` whose text contains `needle`.
fn log_line(path: &Path, kind: &str, needle: &str) -> usize {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .position(|line| {
            serde_json::from_str::<Value>(line).is_ok_and(|v| v["type"] == kind)
                && line.contains(needle)
        })
        .map(|i| i + 1)
        .unwrap_or_else(|| panic!("no {kind} line with {needle:?}"))
}

fn replace_log_line(path: &Path, number: usize, with: &str) {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines[number - 1] = with;
    std::fs::write(path, format!("{}\n", lines.join("\n"))).unwrap();
}

#[tokio::test]
async fn an_unreadable_log_line_is_skipped_reported_and_the_history_mended() {
    let (_dir, project) = project();
    let id = "log-garbage";
    let store = three_turns(&project, id).await;
    let log = store.log_path(id).unwrap();
    // Turn 1's tool result is lost in garbage, and the snapshot is gone: only the log is left.
    let number = log_line(&log, "history_mutation", "echo 1");
    replace_log_line(&log, number, "#$%^ garbage in the middle of the log");
    let damaged_log = std::fs::read(&log).unwrap();
    std::fs::remove_file(store.snapshot_path(id).unwrap()).unwrap();

    let (session, report, events) = resume_and_start(&project, id).await;
    let report = report.expect("a report");
    assert_eq!(report.skipped_lines.len(), 1, "{report:?}");
    assert_eq!(report.skipped_lines[0].line, number as u64);
    assert!(
        report.snapshot.is_none(),
        "a missing snapshot is not damage"
    );
    assert_eq!(
        std::fs::read(report.log_copy.as_ref().unwrap()).unwrap(),
        damaged_log,
        "the log as found is kept aside"
    );
    // The rest is kept: three turns, and the lost result is replaced by an error result.
    let messages = session.messages();
    assert_eq!(turns_of(&messages).len(), 3);
    assert_calls_answered("mended", &messages.iter().collect::<Vec<_>>());
    let stand_in = messages
        .iter()
        .flat_map(|m| m.content.iter())
        .find_map(|block| match block {
            ContentBlock::ToolResult {
                tool_use_id,
                content,
                is_error,
            } if content == LOST_TOOL_RESULT => Some((tool_use_id.clone(), *is_error)),
            _ => None,
        });
    assert_eq!(stand_in, Some(("call_1".to_string(), true)));
    assert_eq!(report.lost.len(), 2, "{:?}", report.lost);
    assert!(report.lost[1].contains("call_1"), "{:?}", report.lost);
    let message = report.message();
    assert!(message.contains(&format!("Log line {number}")), "{message}");
    assert!(message.contains("Lost:"), "{message}");
    assert_eq!(events.len(), 1);
    goes_on_cleanly(&project, id, session).await;
}

#[tokio::test]
async fn a_torn_last_line_and_an_unfinished_prompt_are_reported() {
    let (_dir, project) = project();
    let id = "torn";
    let store = three_turns(&project, id).await;
    let log = store.log_path(id).unwrap();
    // What a kill mid-turn leaves after the last snapshot: the turn's pre_run, and a line cut
    // off in the middle.
    let lines = std::fs::read_to_string(&log).unwrap().lines().count();
    let seq = assert_log_seqs_increase(&log) as u64;
    let mut file = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
    writeln!(
        file,
        "{}",
        json!({"ts": "2026-05-01T10:00:00.000Z", "seq": seq + 1, "type": "pre_run",
               "input": "please redo me", "history_length": 12})
    )
    .unwrap();
    let fragment = br#"{"ts":"2026-05-01T10:00:01.000Z","seq":"#;
    file.write_all(fragment).unwrap();
    drop(file);

    let (session, report, events) = resume_and_start(&project, id).await;
    let report = report.expect("a report");
    let torn = report.torn_tail.unwrap();
    assert_eq!(torn.line, lines as u64 + 2);
    assert_eq!(torn.bytes, fragment.len() as u64);
    let unfinished = report.unfinished_turn.clone().unwrap();
    assert_eq!(unfinished.prompt, "please redo me");
    assert_eq!(
        unfinished.started_at.as_deref(),
        Some("2026-05-01T10:00:00.000Z")
    );
    let message = report.message();
    for needle in [
        "middle of line",
        "did not finish",
        "please redo me",
        "send the prompt again",
    ] {
        assert!(message.contains(needle), "{needle:?} not in {message}");
    }
    assert_eq!(events.len(), 1);
    assert_eq!(turns_of(&session.messages()).len(), 3);
    // Until the next prompt starts, every resume says so.
    drop(session);
    let (session, report, _) = resume_and_start(&project, id).await;
    assert_eq!(
        report
            .and_then(|r| r.unfinished_turn)
            .map(|t| t.prompt)
            .as_deref(),
        Some("please redo me")
    );
    goes_on_cleanly(&project, id, session).await;
}

// ---------------------------------------------------------------------------------------------
// Kill loop.

/// The prompt of the last turn the log started and never ended, read from the log directly.
fn unfinished_in_log(path: &Path) -> Option<String> {
    let text = std::fs::read(path).unwrap();
    let mut pending = None;
    for line in text.split(|b| *b == b'\n') {
        let Ok(value) = serde_json::from_slice::<Value>(line) else {
            continue;
        };
        match value["type"].as_str() {
            Some("pre_run") => pending = value["input"].as_str().map(str::to_string),
            Some("turn_end") => pending = None,
            _ => {}
        }
    }
    pending
}

#[derive(Debug, Clone, Copy)]
enum Kill {
    /// On a text delta of a turn: it started and cannot have finished.
    MidTurn,
    /// At a random moment.
    Random,
    /// Right after a turn finished.
    BetweenTurns,
}

#[test]
fn a_kill_loop_reports_every_unfinished_prompt_and_keeps_every_finished_turn() {
    let iterations: usize = std::env::var("ROBOTA_KILL_ITERATIONS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(10);
    let (_dir, project) = project();
    let id = "killed";
    let store = FileSessionStore::for_project(&project);
    let mut rng = rand::rng();
    let mut finished: Option<usize> = None;
    let mut expected: Option<String> = None;
    let mut notices = 0;
    for iteration in 0..=iterations {
        let mut child = spawn(&project, id, "loop", &[]);
        let report: Option<RecoveryReport> =
            serde_json::from_str(&child.wait_for("REPORT")).unwrap();
        let resumed: usize = child.wait_for("READY").parse().unwrap();
        // Every finished turn is kept …
        if let Some(done) = finished {
            assert!(
                resumed > done,
                "turn {done} finished but the resume has {resumed} turns"
            );
        }
        // … and every unfinished one is named, until it is sent again.
        let named = report
            .as_ref()
            .and_then(|r| r.unfinished_turn.as_ref())
            .map(|t| t.prompt.clone());
        assert_eq!(named, expected, "iteration {iteration}: {report:?}");
        if named.is_some() {
            notices += 1;
            let message = report.as_ref().unwrap().message();
            assert!(message.contains("did not finish"), "{message}");
        }
        if iteration == iterations {
            child.kill();
            break;
        }
        let strategy = match iteration % 3 {
            0 => Kill::MidTurn,
            1 => Kill::Random,
            _ => Kill::BetweenTurns,
        };
        let mut mid_turn = None;
        match strategy {
            Kill::MidTurn => {
                for _ in 0..rng.random_range(0..2) {
                    child.wait_for("DONE");
                }
                mid_turn = child.wait_for("DELTA").parse::<usize>().ok();
            }
            Kill::Random => {
                std::thread::sleep(Duration::from_micros(rng.random_range(0..40_000)));
            }
            Kill::BetweenTurns => {
                child.wait_for("DONE");
            }
        }
        let events = child.kill();
        if let Some(n) = events
            .iter()
            .filter(|(name, _)| name == "DONE")
            .filter_map(|(_, n)| n.parse::<usize>().ok())
            .max()
        {
            finished = Some(finished.map_or(n, |f| f.max(n)));
        }
        expected = unfinished_in_log(&store.log_path(id).unwrap());
        if let Some(n) = mid_turn {
            assert_eq!(
                expected,
                Some(format!("turn {n}")),
                "a kill mid-turn leaves it unfinished"
            );
        }
        // What is on disk stays consistent whatever the kill hit.
        let on_disk = store.resume(id).unwrap();
        assert_calls_answered("after a kill", &messages_of(&on_disk.record.history));
    }
    eprintln!(
        "{iterations} kills: {notices} resumes named an unfinished prompt; {} turns finished",
        finished.map_or(0, |n| n + 1)
    );
    assert!(notices > 0, "no resume followed an unfinished turn");
}
