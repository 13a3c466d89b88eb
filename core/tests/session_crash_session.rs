//! Crash safety of the real [`Session`] (issue 5, "Done when"): a child process runs a
//! `robota::session::Session` with project persistence — a scripted provider whose every turn
//! calls a small read-only tool and then answers — turn after turn, and is killed with SIGKILL at
//! varying points: at a random moment, mid-turn (on the first text delta of a turn), mid-write
//! (as soon as a temporary snapshot file appears in `.robota/sessions/`) and between turns
//! (right after `run` returned). After every kill:
//!
//! - the snapshot, when there is one, parses (old or new, never a mix);
//! - every log line parses, except a torn last line (and earlier torn lines a restarted process
//!   closed off);
//! - `SessionStore::resume`, a rebuild from the log alone and a fresh `Session` resumed from the
//!   store all hold every turn whose `run` returned before the kill, in order, and every
//!   `tool_use` has its `tool_result`;
//! - no temporary file survives the resume.
//!
//! The next child resumes the same session (`with_resume(id, false)`) and goes on. Every 7th
//! round the parent damages the snapshot, so the next child must resume from the JSONL log.
//!
//! The child is this test binary re-run on the `#[ignore]`d `crash_child_real_session`.
//! `ROBOTA_CRASH_ITERATIONS` changes the number of kills (default 20).
#![cfg(unix)]

mod child_common;

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use child_common::{assert_calls_answered, block_on, saved_options, say, ChildRun};
use rand::Rng;
use robota::engine::EngineEvent;
use robota::message::{ContentBlock, HistoryEntry, Message, MessageState, Role};
use robota::provider::scripted::{ScriptedProvider, ScriptedTurn};
use robota::session::store::{FileSessionStore, ResumeSource, SessionStore, StoreError};
use robota::session::{Session, SessionEvent, SessionOptions};
use serde_json::{json, Value};

const SESSION: &str = "crash-real-session";
/// Filler messages injected by the first child (each `FILLER_BYTES` long), so that a snapshot is
/// about a megabyte and a save takes long enough to be hit.
const FILLER: usize = 12;
const FILLER_BYTES: usize = 90_000;

/// The turns recorded in a history: `(n, messages)` for every "turn n" user message.
fn turns_of<'a>(messages: impl IntoIterator<Item = &'a Message>) -> Vec<(usize, Vec<&'a Message>)> {
    let mut turns: Vec<(usize, Vec<&Message>)> = Vec::new();
    for message in messages {
        let turn = (message.role == Role::User)
            .then(|| message.text())
            .and_then(|text| text.strip_prefix("turn ").and_then(|n| n.parse().ok()));
        match (turn, turns.last_mut()) {
            (Some(n), _) => turns.push((n, vec![message])),
            (None, Some((_, messages))) => messages.push(message),
            (None, None) => {} // filler
        }
    }
    turns
}

fn messages_of(history: &[HistoryEntry]) -> Vec<&Message> {
    history.iter().filter_map(HistoryEntry::message).collect()
}

/// The options of the child's session (and of the parent's check): hermetic, only the echo
/// tool, persistence in the project.
fn options(project: &Path, provider: Arc<ScriptedProvider>) -> SessionOptions {
    saved_options(project, provider).with_session_id(SESSION)
}

/// The child: resume (or create) the session and run turns until killed.
#[test]
#[ignore = "helper: run in a child process by sigkill_a_real_session_never_loses_a_completed_turn"]
fn crash_child_real_session() {
    let Ok(project) = std::env::var("ROBOTA_CRASH_PROJECT") else {
        return;
    };
    block_on(child_loop(Path::new(&project)));
}

async fn child_loop(project: &Path) {
    let store = FileSessionStore::for_project(project);
    let exists =
        store.snapshot_path(SESSION).unwrap().exists() || store.log_path(SESSION).unwrap().exists();
    // The first turn this child runs (the scripted provider needs it up front).
    let first = if exists {
        let resumed = store
            .resume(SESSION)
            .unwrap_or_else(|e| panic!("resume failed: {e}"));
        turns_of(messages_of(&resumed.record.history))
            .last()
            .map_or(0, |(n, _)| n + 1)
    } else {
        0
    };
    let mut script = Vec::new();
    for n in first..first + 10_000 {
        script.push(
            ScriptedTurn::tool_call(format!("call_{n}"), "echo", json!({"text": n}))
                .with_usage(50, 5),
        );
        script.push(
            ScriptedTurn::chunks(["ans", "wer ", &n.to_string()])
                .with_delay_ms(1)
                .with_usage(60, 3),
        );
    }
    let provider = Arc::new(ScriptedProvider::new(script));
    let current = Arc::new(AtomicUsize::new(first));
    let seen = current.clone();
    let mut options = options(project, provider).with_on_event(move |event| match event {
        SessionEvent::Engine(EngineEvent::TextDelta { .. }) => {
            say("DELTA", seen.load(Ordering::SeqCst));
        }
        SessionEvent::PersistenceError { operation, message } => {
            eprintln!("child: persistence error ({operation}): {message}");
        }
        _ => {}
    });
    if exists {
        options = options.with_resume(SESSION, false);
    }
    let session = Session::new(options).unwrap_or_else(|e| panic!("Session::new failed: {e}"));
    let resumed_turns = turns_of(&session.messages())
        .last()
        .map_or(0, |(n, _)| n + 1);
    assert_eq!(
        resumed_turns, first,
        "the Session resumed a different history than the store"
    );
    if !exists {
        for i in 0..FILLER {
            let text = format!("filler {i} {}", "x".repeat(FILLER_BYTES));
            let message = if i % 2 == 0 {
                Message::user(text)
            } else {
                Message::assistant(vec![ContentBlock::text(text)], MessageState::Complete)
            };
            session.inject_message(message).unwrap();
        }
    }
    eprintln!("child: resumed {exists}, next turn {first}");
    say("READY", first);
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut n = first;
    while Instant::now() < deadline {
        current.store(n, Ordering::SeqCst);
        say("START", n);
        let outcome = session.run(format!("turn {n}")).await.unwrap();
        assert_eq!(outcome.response, format!("answer {n}"));
        say("DONE", n);
        n += 1;
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Strategy {
    /// Kill at a random moment after the child is ready.
    RandomDelay,
    /// Kill on the first text delta of a turn.
    MidTurn,
    /// Kill as soon as the temporary snapshot file appears (while it is written, synced and
    /// renamed).
    MidWrite,
    /// Kill right after `run` returned.
    BetweenTurns,
}

/// A child resuming the session of `project` and running turns until killed.
fn spawn(project: &Path) -> ChildRun {
    ChildRun::spawn(
        "crash_child_real_session",
        &[(
            "ROBOTA_CRASH_PROJECT",
            project.to_string_lossy().into_owned(),
        )],
    )
}

/// The last turn the child reported done.
fn last_done(events: &[(String, String)]) -> Option<usize> {
    events
        .iter()
        .filter(|(name, _)| name == "DONE")
        .filter_map(|(_, n)| n.parse().ok())
        .max()
}

/// Checks one history: contiguous turns from 0, each `turn n` → tool call `call_n` → its result
/// → `answer n`, every tool_use answered; returns the number of turns.
fn check_history(what: &str, messages: &[&Message], must_have: Option<usize>) -> usize {
    let turns = turns_of(messages.iter().copied());
    for (i, (n, turn)) in turns.iter().enumerate() {
        assert_eq!(*n, i, "{what}: turns must be contiguous");
        let roles: Vec<Role> = turn.iter().map(|m| m.role).collect();
        assert_eq!(
            roles,
            [Role::User, Role::Assistant, Role::Tool, Role::Assistant],
            "{what}: turn {n}"
        );
        assert_eq!(
            turn[1].tool_uses().next().map(|(id, _, _)| id.to_string()),
            Some(format!("call_{n}")),
            "{what}: turn {n}"
        );
        match &turn[2].content[0] {
            ContentBlock::ToolResult { tool_use_id, .. } => {
                assert_eq!(*tool_use_id, format!("call_{n}"), "{what}: turn {n}");
            }
            other => panic!("{what}: turn {n}: expected a tool result, got {other:?}"),
        }
        assert!(
            serde_json::to_string(&turn[2].content[0])
                .unwrap()
                .contains(&format!("echo {n}")),
            "{what}: turn {n}: the tool did not run: {:?}",
            turn[2].content[0]
        );
        assert_eq!(turn[3].text(), format!("answer {n}"), "{what}");
    }
    // Every tool_use in the whole history has its tool_result.
    assert_calls_answered(what, messages);
    if let Some(last_done) = must_have {
        assert!(
            turns.len() > last_done,
            "{what} lost completed turn {last_done}: it has {} turns",
            turns.len()
        );
    }
    turns.len()
}

/// Checks the files after a kill; returns whether the log ended in a torn line and how many
/// complete turns resume found.
fn check_files(
    project: &Path,
    store: &FileSessionStore,
    must_have: Option<usize>,
    closed_fragments: usize,
    damaged_by_test: bool,
) -> (bool, usize) {
    // The snapshot: old or new, never corrupt (unless this test damaged it and no save has
    // replaced it since).
    let snapshot_turns = match store.load(SESSION) {
        Ok(Some(record)) => Some(turns_of(messages_of(&record.history)).len()),
        Ok(None) => None,
        Err(StoreError::Corrupt { .. }) if damaged_by_test => None,
        Err(error) => panic!("the snapshot is damaged: {error}"),
    };
    // The log: every line parses, except a torn last line and fragments closed off earlier.
    let log = std::fs::read(store.log_path(SESSION).unwrap()).unwrap();
    let torn = !log.is_empty() && log.last() != Some(&b'\n');
    let text = String::from_utf8_lossy(&log);
    let mut lines: Vec<&str> = text.split('\n').collect();
    lines.pop(); // after the last newline: empty, or the torn fragment
    let unreadable = lines
        .iter()
        .filter(|line| serde_json::from_str::<Value>(line).is_err())
        .count();
    assert!(
        unreadable <= closed_fragments,
        "{unreadable} unreadable log lines, but only {closed_fragments} torn tails were ever seen"
    );

    let resumed = store
        .resume(SESSION)
        .unwrap_or_else(|e| panic!("resume failed: {e}"));
    let from_log = store.rebuild_from_log(SESSION).unwrap();
    let mut found = 0;
    for (what, history) in [
        ("resume", &resumed.record.history),
        ("log replay", &from_log.record.history),
    ] {
        found = check_history(what, &messages_of(history), must_have);
        assert!(
            found >= snapshot_turns.unwrap_or(0),
            "{what} has fewer turns than the snapshot ({:?})",
            resumed.diagnostics
        );
    }
    assert_eq!(
        messages_of(&resumed.record.history),
        messages_of(&from_log.record.history),
        "snapshot + log and log alone disagree"
    );
    let leftovers = temp_files(store);
    assert_eq!(leftovers, 0, "temporary files survived resume");

    // A fresh Session resumed from the store sees the same.
    let session = Session::new(
        options(project, Arc::new(ScriptedProvider::new(Vec::new()))).with_resume(SESSION, false),
    )
    .unwrap_or_else(|e| panic!("a fresh Session could not resume: {e}"));
    let messages = session.messages();
    let in_session = check_history("Session", &messages.iter().collect::<Vec<_>>(), must_have);
    assert_eq!(in_session, found, "the Session and the store disagree");
    drop(session);
    (torn, found)
}

fn temp_files(store: &FileSessionStore) -> usize {
    std::fs::read_dir(store.sessions_dir())
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
                .count()
        })
        .unwrap_or(0)
}

#[test]
fn sigkill_a_real_session_never_loses_a_completed_turn() {
    let iterations: usize = std::env::var("ROBOTA_CRASH_ITERATIONS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(20);
    let dir = tempfile::tempdir().unwrap();
    let project = std::fs::canonicalize(dir.path()).unwrap();
    let store = FileSessionStore::for_project(&project);
    let mut rng = rand::rng();
    let mut must_have: Option<usize> = None;
    let mut torn_tails = 0;
    let mut killed_while_writing = 0;
    let mut killed_mid_turn = 0;
    let mut killed_between_turns = 0;
    let mut log_only_resumes = 0;
    let mut turns = 0;
    let mut damaged = false;
    for iteration in 0..iterations {
        let strategy = match iteration % 4 {
            0 => Strategy::MidWrite,
            1 => Strategy::MidTurn,
            2 => Strategy::BetweenTurns,
            _ => Strategy::RandomDelay,
        };
        // Sometimes the snapshot is lost between runs: the child must resume from the log.
        let path = store.snapshot_path(SESSION).unwrap();
        if iteration % 7 == 6 && path.exists() {
            let bytes = std::fs::read(&path).unwrap();
            std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
            assert!(matches!(
                store.resume(SESSION).unwrap().source,
                ResumeSource::LogReplay { .. }
            ));
            log_only_resumes += 1;
            damaged = true;
        }
        let mut run = spawn(&project);
        run.wait_for("READY");
        match strategy {
            Strategy::MidWrite => {
                // Skip a turn or two, then catch a save of the snapshot.
                for _ in 0..rng.random_range(0..3) {
                    run.wait_for("DONE");
                }
                run.wait_for("DELTA");
                let deadline = Instant::now() + Duration::from_secs(10);
                while temp_files(&store) == 0 && Instant::now() < deadline {
                    std::hint::spin_loop();
                }
                std::thread::sleep(Duration::from_micros(rng.random_range(0..300)));
            }
            Strategy::MidTurn => {
                for _ in 0..rng.random_range(0..3) {
                    run.wait_for("DONE");
                }
                run.wait_for("DELTA");
            }
            Strategy::BetweenTurns => {
                for _ in 0..rng.random_range(1..4) {
                    run.wait_for("DONE");
                }
            }
            Strategy::RandomDelay => {
                std::thread::sleep(Duration::from_micros(rng.random_range(0..60_000)));
            }
        }
        let events = run.kill();
        if events.iter().any(|(name, _)| name == "DONE") {
            damaged = false;
        }
        if temp_files(&store) > 0 {
            killed_while_writing += 1;
        }
        match events.last() {
            Some((name, _)) if name == "DELTA" => killed_mid_turn += 1,
            Some((name, _)) if name == "DONE" || name == "START" => killed_between_turns += 1,
            _ => {}
        }
        if let Some(n) = last_done(&events) {
            must_have = Some(must_have.map_or(n, |m| m.max(n)));
        }
        let (torn, found) = check_files(&project, &store, must_have, torn_tails, damaged);
        if torn {
            torn_tails += 1;
        }
        turns = found;
    }
    eprintln!(
        "{iterations} kills: {killed_while_writing} with a temporary snapshot on disk, {killed_mid_turn} mid-turn (after a text delta), {killed_between_turns} between turns, {torn_tails} torn log lines, {log_only_resumes} resumes from the log alone; the session reached {turns} turns"
    );
    assert!(
        turns >= iterations / 2,
        "the session made too little progress ({turns} turns)"
    );
    assert!(killed_mid_turn > 0, "no kill landed mid-turn");
}
