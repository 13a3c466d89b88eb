//! Crash safety of session persistence (issue 5, "Done when"): a child process runs a real
//! session loop — an `Engine` with the scripted provider and a tool, every execution event
//! appended to the `SessionLog`, `turn_end`, then an atomic snapshot, turn after turn — and is
//! killed with SIGKILL at varying points: mid-turn, mid-save, between turns. After every kill:
//!
//! - the snapshot, when there is one, parses (it is the old one or the new one, never a mix);
//! - every log line parses, except a torn last line (and earlier torn lines a restarted process
//!   closed off);
//! - resume yields every turn whose `turn_end` was written before the kill, in order, with a
//!   consistent history (every tool call has its result), and the log alone yields the same;
//! - no temporary file survives the resume.
//!
//! The next child resumes the same session and goes on, so the session also survives repeated
//! crashes, including resumes from the log alone (the parent sometimes damages the snapshot).
//!
//! The child is this test binary re-run on the `#[ignore]`d `crash_child_session_loop`.
//! `ROBOTA_CRASH_ITERATIONS` changes the number of kills (default 60).
#![cfg(unix)]

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use rand::Rng;
use robota::engine::{Engine, EngineConfig, EngineEvent, RunOptions};
use robota::message::{ContentBlock, Conversation, HistoryEntry, Message, MessageState, Role};
use robota::provider::scripted::{ScriptedProvider, ScriptedTurn};
use robota::session::log::{LogOptions, SessionLogEvent};
use robota::session::store::{
    FileSessionStore, ResumeSource, SessionRecord, SessionStore, StoreError,
};
use robota::session::usage::{PriceTable, UsageTotals};
use robota::tools::{Tool, ToolContext, ToolOutput, ToolRegistry};
use serde_json::{json, Value};

const SESSION: &str = "crash-session";
/// Messages of filler history, so that each snapshot is about a megabyte and a save takes long
/// enough to be hit.
const PADDING: usize = 2_000;
const MARK: &str = "@@CRASH ";

struct EchoTool;

#[async_trait]
impl Tool for EchoTool {
    fn name(&self) -> &str {
        "echo"
    }
    fn description(&self) -> &str {
        "Echoes its text."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {"text": {"type": "string"}}})
    }
    fn is_read_only(&self) -> bool {
        true
    }
    async fn execute(&self, input: Value, _context: ToolContext) -> ToolOutput {
        ToolOutput::text(format!(
            "echo {}",
            input["text"].as_str().unwrap_or_default()
        ))
    }
}

fn say(event: &str, n: usize) {
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{MARK}{event} {n}");
    let _ = stdout.flush();
}

fn padding() -> Vec<HistoryEntry> {
    let mut conversation = Conversation::new();
    for i in 0..PADDING {
        let text = format!("filler {i} {}", "x".repeat(280));
        if i % 2 == 0 {
            conversation.push(Message::user(text));
        } else {
            conversation.push(Message::assistant(
                vec![ContentBlock::text(text)],
                MessageState::Complete,
            ));
        }
    }
    conversation.to_entries()
}

/// The turns recorded in a history: `(n, messages)` for every "turn n" user message.
fn turns_of(history: &[HistoryEntry]) -> Vec<(usize, Vec<&Message>)> {
    let mut turns: Vec<(usize, Vec<&Message>)> = Vec::new();
    for message in history.iter().filter_map(HistoryEntry::message) {
        let turn = (message.role == Role::User)
            .then(|| message.text())
            .and_then(|text| text.strip_prefix("turn ").and_then(|n| n.parse().ok()));
        match (turn, turns.last_mut()) {
            (Some(n), _) => turns.push((n, vec![message])),
            (None, Some((_, messages))) => messages.push(message),
            (None, None) => {} // padding
        }
    }
    turns
}

/// The child: resume (or create) the session and run turns until killed.
#[test]
#[ignore = "helper: run in a child process by sigkill_mid_turn_and_mid_save_never_loses_a_completed_turn"]
fn crash_child_session_loop() {
    let Ok(project) = std::env::var("ROBOTA_CRASH_PROJECT") else {
        return;
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(child_loop(Path::new(&project)));
}

async fn child_loop(project: &Path) {
    let store = FileSessionStore::for_project(project);
    let log = store.open_log(SESSION, LogOptions::default()).unwrap();
    let (mut record, source) = match store.resume(SESSION) {
        Ok(resumed) => (resumed.record, format!("{:?}", resumed.source)),
        Err(StoreError::NotFound { .. }) => {
            let mut record = SessionRecord::new(SESSION, project.display().to_string());
            record.model = Some("claude-haiku-4-5".into());
            record.history = padding();
            (record, "new".to_string())
        }
        Err(error) => panic!("resume failed: {error}"),
    };
    log.append(&SessionLogEvent::SessionInit {
        session_id: SESSION.into(),
        cwd: record.cwd.clone(),
        provider: Some("scripted".into()),
        model: record.model.clone(),
        permission_mode: None,
        name: None,
        parent_id: None,
        resumed: source != "new",
        system_prompt: None,
        tool_schemas: Vec::new(),
    })
    .unwrap();
    if source == "new" {
        log.append(&SessionLogEvent::HistoryReplace {
            reason: "seed".into(),
            entries: record.history.clone(),
            usage: None,
        })
        .unwrap();
    }
    let mut conversation = record.conversation();
    let mut next = turns_of(&record.history).last().map_or(0, |(n, _)| n + 1);
    eprintln!("child: resumed from {source}, next turn {next}");
    let prices = PriceTable::builtin();
    say("READY", next);
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        let n = next;
        say("START", n);
        let provider = Arc::new(ScriptedProvider::new(vec![
            ScriptedTurn::tool_call(format!("call_{n}"), "echo", json!({"text": n}))
                .with_usage(50, 5),
            ScriptedTurn::chunks(["ans", "wer ", &n.to_string()])
                .with_delay_ms(1)
                .with_usage(60, 3),
        ]));
        let mut tools = ToolRegistry::new();
        tools.register(Arc::new(EchoTool));
        // The filler history is far over any context window: turn the context guards off.
        let config = EngineConfig {
            context_window: Some(0),
            ..EngineConfig::default()
        };
        let engine = Engine::new(provider, tools, config);
        log.append(&SessionLogEvent::PreRun {
            execution_id: None,
            input: format!("turn {n}"),
            provider: Some("scripted".into()),
            model: record.model.clone(),
            history_length: conversation.message_count(),
        })
        .unwrap();
        let delta_log = log.clone();
        let mut options = RunOptions::new().with_on_event(move |event| {
            if let EngineEvent::TextDelta { text } = event {
                delta_log.text_delta(&text).unwrap();
            }
        });
        options.on_execution_event = Some(log.execution_callback());
        let outcome = engine
            .run(
                &mut conversation,
                Message::user(format!("turn {n}")),
                options,
            )
            .await;
        assert_eq!(outcome.response, format!("answer {n}"));
        let mut turn = UsageTotals::new();
        turn.record_call(&prices, "claude-haiku-4-5", &outcome.usage);
        log.append(&SessionLogEvent::TurnEnd {
            execution_id: Some(outcome.execution_id),
            stop_reason: outcome.stop_reason.as_str().into(),
            rounds: outcome.rounds,
            message_count: conversation.message_count(),
            usage: turn.clone(),
        })
        .unwrap();
        say("LOGGED", n);
        record.usage.add_turn(&turn);
        record.set_conversation(&conversation);
        record.log_position = Some(log.position());
        record.touch();
        say("SAVING", n);
        store.save(&record).unwrap();
        say("SAVED", n);
        next += 1;
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Strategy {
    /// Kill at a random moment after the child is ready.
    RandomDelay,
    /// Kill as soon as the child says it is saving.
    MidSave,
    /// Kill shortly after a turn starts.
    MidTurn,
    /// Kill as soon as the temporary snapshot file appears (while it is written, synced and
    /// renamed).
    MidWrite,
}

struct Run {
    lines: mpsc::Receiver<(String, usize, Instant)>,
    child: std::process::Child,
    output: Vec<String>,
    stderr: Arc<std::sync::Mutex<String>>,
}

impl Run {
    fn spawn(project: &Path) -> Run {
        let exe = std::env::current_exe().unwrap();
        let mut child = Command::new(exe)
            .args([
                "--exact",
                "crash_child_session_loop",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("ROBOTA_CRASH_PROJECT", project)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let stderr_pipe = child.stderr.take().unwrap();
        let stderr: Arc<std::sync::Mutex<String>> = Arc::default();
        let sink = stderr.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr_pipe).lines().map_while(Result::ok) {
                let mut text = sink.lock().unwrap();
                text.push_str(&line);
                text.push('\n');
            }
        });
        let (sender, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some((_, event)) = line.split_once(MARK) {
                    if let Some((name, n)) = event.split_once(' ') {
                        if let Ok(n) = n.trim().parse() {
                            let _ = sender.send((name.to_string(), n, Instant::now()));
                        }
                    }
                }
            }
        });
        Run {
            lines,
            child,
            output: Vec::new(),
            stderr,
        }
    }

    /// Waits for the child to report `event`; returns when it was reported.
    fn wait_for(&mut self, event: &str) -> Instant {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok((name, n, at)) => {
                    self.output.push(format!("{name} {n}"));
                    if name == event {
                        return at;
                    }
                }
                Err(_) => {
                    let status = self.child.try_wait().ok().flatten();
                    panic!(
                        "the child did not report {event} (status {status:?}); it said {:?}\n{}",
                        self.output,
                        self.stderr.lock().unwrap()
                    );
                }
            }
        }
    }

    /// SIGKILLs the child and returns everything it reported.
    fn kill(mut self) -> Vec<(String, usize)> {
        if let Ok(Some(status)) = self.child.try_wait() {
            panic!(
                "the child exited on its own ({status}); it said {:?}\n{}",
                self.output,
                self.stderr.lock().unwrap()
            );
        }
        self.child.kill().unwrap();
        self.child.wait().unwrap();
        let mut events: Vec<(String, usize)> = self
            .output
            .iter()
            .filter_map(|line| {
                line.split_once(' ')
                    .map(|(e, n)| (e.to_string(), n.parse().unwrap()))
            })
            .collect();
        // The reader thread ends at EOF: drain what it read before the kill.
        events.extend(self.lines.iter().map(|(name, n, _)| (name, n)));
        events
    }
}

/// Checks the files after a kill; returns whether the log ended in a torn line and how many
/// complete turns resume found.
fn check_files(
    store: &FileSessionStore,
    must_have: Option<usize>,
    closed_fragments: usize,
    damaged_by_test: bool,
) -> (bool, usize) {
    // The snapshot: old or new, never corrupt (unless this test damaged it and no save has
    // replaced it since).
    let snapshot_turns = match store.load(SESSION) {
        Ok(Some(record)) => Some(turns_of(&record.history).len()),
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
    for (what, history) in [
        ("resume", &resumed.record.history),
        ("log replay", &from_log.record.history),
    ] {
        let turns = turns_of(history);
        for (i, (n, messages)) in turns.iter().enumerate() {
            assert_eq!(*n, i, "{what}: turns must be contiguous");
            let roles: Vec<Role> = messages.iter().map(|m| m.role).collect();
            assert_eq!(
                roles,
                [Role::User, Role::Assistant, Role::Tool, Role::Assistant],
                "{what}: turn {n}"
            );
            assert_eq!(
                messages[1]
                    .tool_uses()
                    .next()
                    .map(|(id, _, _)| id.to_string()),
                Some(format!("call_{n}"))
            );
            assert!(
                matches!(&messages[2].content[0], ContentBlock::ToolResult { tool_use_id, .. } if *tool_use_id == format!("call_{n}"))
            );
            assert_eq!(messages[3].text(), format!("answer {n}"), "{what}");
        }
        if let Some(last_logged) = must_have {
            assert!(
                turns.len() > last_logged,
                "{what} lost completed turn {last_logged}: it has {} turns ({:?})",
                turns.len(),
                resumed.diagnostics
            );
        }
        assert!(
            turns.len() >= snapshot_turns.unwrap_or(0),
            "{what} has fewer turns than the snapshot"
        );
    }
    assert_eq!(
        resumed.record.history, from_log.record.history,
        "snapshot + log and log alone disagree"
    );
    assert_eq!(resumed.record.usage.turns, from_log.record.usage.turns);
    let leftovers: Vec<String> = std::fs::read_dir(store.sessions_dir())
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".tmp"))
        .collect();
    assert!(
        leftovers.is_empty(),
        "temporary files survived resume: {leftovers:?}"
    );
    (torn, turns_of(&resumed.record.history).len())
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
fn sigkill_mid_turn_and_mid_save_never_loses_a_completed_turn() {
    let iterations: usize = std::env::var("ROBOTA_CRASH_ITERATIONS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(60);
    let dir = tempfile::tempdir().unwrap();
    let store = FileSessionStore::for_project(dir.path());
    let mut rng = rand::rng();
    let mut must_have: Option<usize> = None;
    let mut torn_tails = 0;
    let mut killed_while_saving = 0;
    let mut killed_while_writing = 0;
    // How long a save takes (SAVING to SAVED), so mid-save kills spread over the whole save.
    let mut save_time = Duration::from_millis(5);
    let mut killed_mid_turn = 0;
    let mut log_only_resumes = 0;
    let mut turns = 0;
    let mut damaged = false;
    for iteration in 0..iterations {
        let strategy = match iteration % 4 {
            0 => Strategy::MidSave,
            1 => Strategy::MidTurn,
            2 => Strategy::MidWrite,
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
        let mut run = Run::spawn(dir.path());
        run.wait_for("READY");
        match strategy {
            Strategy::MidSave => {
                // Let it finish a turn first, timing its save.
                let saving = run.wait_for("SAVING");
                save_time = run.wait_for("SAVED").duration_since(saving);
                for _ in 0..rng.random_range(0..2) {
                    run.wait_for("SAVED");
                }
                run.wait_for("SAVING");
                let micros = save_time.as_micros().max(1) as u64;
                std::thread::sleep(Duration::from_micros(rng.random_range(0..micros)));
            }
            Strategy::MidWrite => {
                run.wait_for("SAVING");
                let deadline = Instant::now() + Duration::from_secs(10);
                while temp_files(&store) == 0 && Instant::now() < deadline {
                    std::hint::spin_loop();
                }
                std::thread::sleep(Duration::from_micros(rng.random_range(0..300)));
            }
            Strategy::MidTurn => {
                run.wait_for("START");
                std::thread::sleep(Duration::from_micros(rng.random_range(0..8_000)));
            }
            Strategy::RandomDelay => {
                std::thread::sleep(Duration::from_micros(rng.random_range(0..40_000)));
            }
        }
        let events = run.kill();
        if events.iter().any(|(name, _)| name == "SAVED") {
            damaged = false;
        }
        if temp_files(&store) > 0 {
            killed_while_writing += 1;
        }
        match events.iter().rev().find(|(name, _)| name != "READY") {
            Some((name, _)) if name == "START" => killed_mid_turn += 1,
            Some((name, _)) if name == "SAVING" => killed_while_saving += 1,
            _ => {}
        }
        if let Some(n) = events
            .iter()
            .filter(|(name, _)| name == "LOGGED")
            .map(|(_, n)| *n)
            .max()
        {
            must_have = Some(must_have.map_or(n, |m| m.max(n)));
        }
        let (torn, found) = check_files(&store, must_have, torn_tails, damaged);
        if torn {
            torn_tails += 1;
        }
        turns = found;
    }
    eprintln!(
        "{iterations} kills: {killed_while_saving} during a save ({killed_while_writing} of them with the temporary file written, save time ~{save_time:?}), {killed_mid_turn} mid-turn, {torn_tails} torn log lines, {log_only_resumes} resumes from the log alone; the session reached {turns} turns"
    );
    assert!(
        turns > iterations / 2,
        "the session made too little progress ({turns} turns)"
    );
    assert!(killed_while_saving > 0, "no kill landed during a save");
    assert!(killed_mid_turn > 0, "no kill landed mid-turn");
}
