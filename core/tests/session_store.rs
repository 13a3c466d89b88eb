//! Session persistence: atomic snapshots, id validation, unknown-field preservation, cheap
//! listing, fork, resume from the snapshot, from the log and from both, torn log lines, log write
//! errors, secret scrubbing, replaying a session log, prices and budgets.
//!
//! Sessions are driven the way the session layer drives them: a real `Engine` run with the
//! scripted provider, its execution events appended to the `SessionLog`, then `turn_end` and an
//! atomic snapshot.

use std::path::Path;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use robota::engine::{Engine, EngineConfig, EngineEvent, ExecutionEvent, RunOptions};
use robota::message::{ContentBlock, Conversation, HistoryEntry, Message, Role, Usage};
use robota::provider::replay::ReplayProvider;
use robota::provider::scripted::{ScriptedProvider, ScriptedTurn};
use robota::session::log::{
    replay_log, LogError, LogOptions, SessionLog, SessionLogEvent, REDACTED,
};
use robota::session::store::{
    validate_session_id, FileSessionStore, ResumeSource, SessionRecord, SessionStore, StoreError,
    MAX_SESSION_ID_LEN,
};
use robota::session::usage::{
    format_usd, Budget, BudgetStatus, CostStatus, Price, PriceMatch, PriceTable, UsageTotals,
};
use robota::tools::{Tool, ToolContext, ToolOutput, ToolRegistry};
use serde_json::{json, Value};

// ---------------------------------------------------------------------------------------------
// A small session driver.

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

/// Turn `n` of the script: a tool call round, then an answer.
fn script_turns(n: usize) -> Vec<ScriptedTurn> {
    vec![
        ScriptedTurn::tool_call(
            format!("call_{n}"),
            "echo",
            json!({"text": format!("t{n}")}),
        )
        .with_usage(100, 10),
        ScriptedTurn::chunks(["answer ".to_string(), n.to_string()]).with_usage(120, 5),
    ]
}

struct Driver {
    store: FileSessionStore,
    log: SessionLog,
    record: SessionRecord,
    conversation: Conversation,
    prices: PriceTable,
    /// `(execution id, rounds, usage)` of the run waiting for its `turn_end`.
    pending_turn: Option<(String, u32, UsageTotals)>,
}

impl Driver {
    fn new(store: &FileSessionStore, id: &str) -> Self {
        let log = store
            .open_log(id, LogOptions::default())
            .unwrap_or_else(|e| panic!("{e}"));
        let mut record = SessionRecord::new(id, "/project");
        record.model = Some("claude-sonnet-4-6".into());
        record.provider = Some("scripted".into());
        log.append(&SessionLogEvent::SessionInit {
            session_id: id.into(),
            cwd: "/project".into(),
            provider: record.provider.clone(),
            model: record.model.clone(),
            permission_mode: Some("default".into()),
            name: None,
            parent_id: None,
            resumed: false,
            system_prompt: Some("You are terse.".into()),
            tool_schemas: vec![json!({"name": "echo"})],
        })
        .unwrap_or_else(|e| panic!("{e}"));
        Driver {
            store: store.clone(),
            log,
            record,
            conversation: Conversation::new(),
            prices: PriceTable::builtin(),
            pending_turn: None,
        }
    }

    /// Runs turn `n` and logs it; `save` writes the snapshot afterwards.
    async fn turn(&mut self, n: usize, save: bool) {
        self.run_without_end(n).await;
        self.end_turn(save);
    }

    /// Logs `pre_run` and runs the engine, but does not log `turn_end` (a crash mid-turn).
    async fn run_without_end(&mut self, n: usize) {
        let provider = Arc::new(ScriptedProvider::new(script_turns(n)));
        let mut tools = ToolRegistry::new();
        tools.register(Arc::new(EchoTool));
        let engine = Engine::new(provider, tools, EngineConfig::default());
        self.log
            .append(&SessionLogEvent::PreRun {
                execution_id: None,
                input: format!("turn {n}"),
                provider: Some("scripted".into()),
                model: self.record.model.clone(),
                history_length: self.conversation.message_count(),
            })
            .unwrap_or_else(|e| panic!("{e}"));
        let delta_log = self.log.clone();
        let mut options = RunOptions::new().with_on_event(move |event| {
            if let EngineEvent::TextDelta { text } = event {
                delta_log
                    .text_delta(&text)
                    .unwrap_or_else(|e| panic!("{e}"));
            }
        });
        options.on_execution_event = Some(self.log.execution_callback());
        let outcome = engine
            .run(
                &mut self.conversation,
                Message::user(format!("turn {n}")),
                options,
            )
            .await;
        assert_eq!(outcome.response, format!("answer {n}"));
        let mut turn = UsageTotals::new();
        turn.record_call(&self.prices, "claude-sonnet-4-6", &outcome.usage);
        self.pending_turn = Some((outcome.execution_id, outcome.rounds, turn));
    }

    fn end_turn(&mut self, save: bool) {
        let (execution_id, rounds, turn) = self.pending_turn.take().expect("a run before end_turn");
        self.log
            .append(&SessionLogEvent::TurnEnd {
                execution_id: Some(execution_id),
                stop_reason: "completed".into(),
                rounds,
                message_count: self.conversation.message_count(),
                usage: turn.clone(),
            })
            .unwrap_or_else(|e| panic!("{e}"));
        self.record.usage.add_turn(&turn);
        self.record.set_conversation(&self.conversation);
        if save {
            self.save();
        }
    }

    fn save(&mut self) {
        self.log.flush().unwrap_or_else(|e| panic!("{e}"));
        self.record.log_position = Some(self.log.position());
        self.record.touch();
        self.store
            .save(&self.record)
            .unwrap_or_else(|e| panic!("{e}"));
    }
}

fn message_ids(history: &[HistoryEntry]) -> Vec<String> {
    history
        .iter()
        .filter_map(HistoryEntry::message)
        .map(|m| m.id.clone())
        .collect()
}

/// Every `tool_use` is followed by its `tool_result` before the next assistant message.
fn assert_consistent(history: &[HistoryEntry]) {
    let mut open: Vec<String> = Vec::new();
    for message in history.iter().filter_map(HistoryEntry::message) {
        match message.role {
            Role::Assistant => {
                assert!(open.is_empty(), "tool calls without results: {open:?}");
                open.extend(message.tool_uses().map(|(id, _, _)| id.to_string()));
            }
            Role::Tool => {
                for block in &message.content {
                    if let ContentBlock::ToolResult { tool_use_id, .. } = block {
                        open.retain(|id| id != tool_use_id);
                    }
                }
            }
            _ => {}
        }
    }
    assert!(open.is_empty(), "tool calls without results: {open:?}");
}

fn store_in(dir: &Path) -> FileSessionStore {
    FileSessionStore::for_project(dir)
}

fn files_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

fn big_history(messages: usize) -> Vec<HistoryEntry> {
    let mut conversation = Conversation::new();
    for i in 0..messages {
        let text = format!("message {i}: {}", "lorem ipsum dolor sit amet ".repeat(8));
        if i % 2 == 0 {
            conversation.push(Message::user(text));
        } else {
            conversation.push(Message::assistant(
                vec![ContentBlock::text(text)],
                robota::message::MessageState::Complete,
            ));
        }
    }
    conversation.to_entries()
}

/// Re-runs this test binary to execute one `#[ignore]`d helper test in a child process.
fn run_child(test: &str, envs: &[(&str, String)]) -> std::process::Output {
    let exe = std::env::current_exe().unwrap_or_else(|e| panic!("{e}"));
    let mut command = std::process::Command::new(exe);
    command.args([
        "--exact",
        test,
        "--ignored",
        "--nocapture",
        "--test-threads=1",
    ]);
    for (key, value) in envs {
        command.env(key, value);
    }
    command.output().unwrap_or_else(|e| panic!("{e}"))
}

// ---------------------------------------------------------------------------------------------
// Snapshots.

#[test]
fn save_is_atomic_and_leaves_no_temporary_files() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());
    let mut record = SessionRecord::new("s1", "/p");
    record.history = big_history(10);
    store.save(&record).unwrap();
    record.name = Some("renamed".into());
    store.save(&record).unwrap();
    assert_eq!(files_in(store.sessions_dir()), ["s1.json"]);
    let loaded = store.load("s1").unwrap().unwrap();
    assert_eq!(loaded.name.as_deref(), Some("renamed"));
    assert_eq!(loaded.history, record.history);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&store.snapshot_path("s1").unwrap()), 0o600);
        assert_eq!(mode(store.sessions_dir()), 0o700);
    }
}

/// Child of `a_failed_write_leaves_the_previous_snapshot_intact`: saves a large record with
/// the file size limit set below its size, so the write fails for real (`EFBIG`).
#[cfg(unix)]
#[test]
#[ignore = "helper: run in a child process by a_failed_write_leaves_the_previous_snapshot_intact"]
fn child_save_with_file_size_limit() {
    let Ok(project) = std::env::var("ROBOTA_TEST_PROJECT") else {
        return;
    };
    let store = store_in(Path::new(&project));
    let mut record = store.load("s1").unwrap().unwrap();
    record.history = big_history(2_000);
    // SAFETY: plain libc calls on this process before any file is written.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
        let limit = libc::rlimit {
            rlim_cur: 64 * 1024,
            rlim_max: libc::RLIM_INFINITY,
        };
        assert_eq!(libc::setrlimit(libc::RLIMIT_FSIZE, &limit), 0);
    }
    match store.save(&record) {
        Err(error @ StoreError::Io { .. }) => println!("SAVE_ERROR: {error}"),
        other => panic!("expected an I/O error, got {other:?}"),
    }
}

#[cfg(unix)]
#[test]
fn a_failed_write_leaves_the_previous_snapshot_intact() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());
    let mut record = SessionRecord::new("s1", "/p");
    record.history = big_history(4);
    store.save(&record).unwrap();
    let before = std::fs::read(store.snapshot_path("s1").unwrap()).unwrap();

    let output = run_child(
        "child_save_with_file_size_limit",
        &[("ROBOTA_TEST_PROJECT", dir.path().display().to_string())],
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let line = stdout
        .lines()
        .find_map(|l| l.split_once("SAVE_ERROR: ").map(|(_, error)| error))
        .unwrap_or_else(|| panic!("no error reported: {stdout}"));
    assert!(line.contains("s1.json"), "{line}");
    assert!(
        line.contains("the previous snapshot is unchanged"),
        "{line}"
    );

    assert_eq!(
        std::fs::read(store.snapshot_path("s1").unwrap()).unwrap(),
        before
    );
    assert_eq!(store.load("s1").unwrap().unwrap().history, record.history);
    assert_eq!(
        files_in(store.sessions_dir()),
        ["s1.json"],
        "temporary file left behind"
    );
}

#[tokio::test]
async fn ids_that_could_escape_the_store_are_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("project");
    std::fs::create_dir(&project).unwrap();
    let store = store_in(&project);
    let too_long = "x".repeat(MAX_SESSION_ID_LEN + 1);
    for id in [
        "../x",
        "a/b",
        "",
        too_long.as_str(),
        "..",
        "a\\b",
        "/etc/passwd",
        "a.json",
        "ä",
    ] {
        let invalid = |result: Result<(), StoreError>| {
            assert!(
                matches!(result, Err(StoreError::InvalidId { .. })),
                "{id:?}: {result:?}"
            );
        };
        invalid(validate_session_id(id));
        invalid(store.save(&SessionRecord::new(id, "/p")));
        invalid(store.load(id).map(|_| ()));
        invalid(store.delete(id).map(|_| ()));
        invalid(store.resume(id).map(|_| ()));
        invalid(store.fork(id).map(|_| ()));
        invalid(store.open_log(id, LogOptions::default()).map(|_| ()));
        invalid(store.snapshot_path(id).map(|_| ()));
    }
    let message = validate_session_id(&too_long).unwrap_err().to_string();
    assert!(
        message.contains("too long") && message.len() < 300,
        "{message}"
    );
    // Nothing was created anywhere.
    assert_eq!(files_in(dir.path()), ["project"]);
    assert!(files_in(&project).is_empty());
}

#[test]
fn unknown_fields_survive_a_rewrite() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());
    std::fs::create_dir_all(store.sessions_dir()).unwrap();
    let path = store.snapshot_path("s1").unwrap();
    let original = json!({
        "version": 1, "id": "s1", "cwd": "/p",
        "createdAt": "2026-01-01T00:00:00.000Z", "updatedAt": "2026-01-02T00:00:00.000Z",
        "sandboxSnapshotId": "snap-7",
        "history": big_history(2),
        "goal": {"text": "ship it", "steps": [1, 2, 3]},
        "activeBranch": {"branchId": "b", "checkpointId": "c"},
        "memoryEvents": []
    });
    std::fs::write(&path, serde_json::to_vec_pretty(&original).unwrap()).unwrap();
    let mut record = store.load("s1").unwrap().unwrap();
    assert_eq!(record.extra.len(), 4);
    record.name = Some("named".into());
    store.save(&record).unwrap();
    let rewritten: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    for key in ["sandboxSnapshotId", "goal", "activeBranch", "memoryEvents"] {
        assert_eq!(rewritten[key], original[key], "{key}");
    }
    assert_eq!(rewritten["name"], "named");
    assert_eq!(rewritten["history"], original["history"]);
    assert_eq!(rewritten["messageCount"], 2);
}

#[test]
fn snapshot_errors_are_typed_and_say_where() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());
    assert!(store.load("missing").unwrap().is_none());
    assert!(matches!(
        store.resume("missing"),
        Err(StoreError::NotFound { .. })
    ));
    std::fs::create_dir_all(store.sessions_dir()).unwrap();

    let path = store.snapshot_path("bad").unwrap();
    std::fs::write(&path, "{\"version\":1,\"id\":\"bad\",\n\"cwd\": oops}").unwrap();
    match store.load("bad") {
        Err(StoreError::Corrupt {
            path: p,
            line,
            column,
            ..
        }) => {
            assert_eq!(p, path);
            assert_eq!(line, 2);
            assert!(column > 0);
        }
        other => panic!("{other:?}"),
    }
    // Truncated mid-history: also corrupt, not a silent partial record.
    let mut record = SessionRecord::new("cut", "/p");
    record.history = big_history(20);
    store.save(&record).unwrap();
    let cut = store.snapshot_path("cut").unwrap();
    let bytes = std::fs::read(&cut).unwrap();
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    assert!(matches!(store.load("cut"), Err(StoreError::Corrupt { .. })));

    let newer = store.snapshot_path("newer").unwrap();
    std::fs::write(
        &newer,
        r#"{"version":99,"id":"newer","cwd":"/p","history":[]}"#,
    )
    .unwrap();
    let error = store.load("newer").unwrap_err();
    assert!(
        matches!(error, StoreError::VersionTooNew { found: 99, .. }),
        "{error}"
    );
    assert!(error.to_string().contains("upgrade robota"), "{error}");
    // Resume does not fall back to the log for a newer format.
    assert!(matches!(
        store.resume("newer"),
        Err(StoreError::VersionTooNew { .. })
    ));

    let copied = store.snapshot_path("copy").unwrap();
    std::fs::copy(store.snapshot_path("cut").unwrap(), &copied).unwrap();
    store.save(&SessionRecord::new("orig", "/p")).unwrap();
    std::fs::copy(store.snapshot_path("orig").unwrap(), &copied).unwrap();
    assert!(matches!(
        store.load("copy"),
        Err(StoreError::IdMismatch { .. })
    ));
}

#[test]
fn typescript_session_files_are_migrated() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());
    std::fs::create_dir_all(store.sessions_dir()).unwrap();
    let ts = json!({
        "id": "ts1", "cwd": "/p", "name": "old",
        "createdAt": "2026-01-01T00:00:00.000Z", "updatedAt": "2026-01-01T00:00:00.000Z",
        "messages": [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"}],
        "history": [
            {"id": "h1", "timestamp": "2026-01-01T00:00:00.000Z", "category": "chat", "type": "user",
             "data": {"role": "user", "content": "hello"}},
            {"id": "h2", "timestamp": "2026-01-01T00:00:01.000Z", "category": "chat", "type": "assistant",
             "data": {"role": "assistant", "content": "hi", "toolCalls": []}},
            {"id": "h3", "timestamp": "2026-01-01T00:00:02.000Z", "category": "event", "type": "prompt-file-reference",
             "data": {"path": "a.txt"}}
        ],
        "systemPrompt": "sys"
    });
    std::fs::write(store.snapshot_path("ts1").unwrap(), ts.to_string()).unwrap();
    let record = store.load("ts1").unwrap().unwrap();
    assert_eq!(record.version, 0);
    let texts: Vec<String> = record.messages().map(Message::text).collect();
    assert_eq!(texts, ["hello", "hi"]);
    assert_eq!(record.history.len(), 3);
    assert_eq!(record.system_prompt.as_deref(), Some("sys"));
    // Listed (scanned whole, since the field order is not ours), and rewritten as version 1.
    let listing = store.list().unwrap();
    assert_eq!(listing.sessions.len(), 1, "{:?}", listing.problems);
    assert_eq!(listing.sessions[0].name.as_deref(), Some("old"));
    store.save(&record).unwrap();
    let again = store.load("ts1").unwrap().unwrap();
    assert_eq!(again.version, 1);
    assert_eq!(again.history, record.history);
}

#[test]
fn listing_reads_only_the_summary_and_is_newest_first() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());
    for (id, updated, messages) in [
        ("old", "2026-01-01T00:00:00.000Z", 2),
        ("huge", "2026-03-01T00:00:00.000Z", 20_000),
        ("middle", "2026-02-01T00:00:00.000Z", 4),
    ] {
        let mut record = SessionRecord::new(id, "/p");
        record.updated_at = updated.into();
        record.name = Some(format!("name of {id}"));
        record.history = big_history(messages);
        store.save(&record).unwrap();
    }
    let huge_size = std::fs::metadata(store.snapshot_path("huge").unwrap())
        .unwrap()
        .len();
    assert!(huge_size > 4_000_000, "{huge_size}");
    std::fs::write(store.snapshot_path("broken").unwrap(), "{\"version\":1,").unwrap();
    // A session that crashed before its first snapshot: only a log.
    let log = store.open_log("logonly", LogOptions::default()).unwrap();
    log.append(&SessionLogEvent::SessionInit {
        session_id: "logonly".into(),
        cwd: "/q".into(),
        provider: None,
        model: Some("gpt-5".into()),
        permission_mode: None,
        name: None,
        parent_id: None,
        resumed: false,
        system_prompt: None,
        tool_schemas: Vec::new(),
    })
    .unwrap();
    // Not sessions: temporary files and foreign names.
    std::fs::write(store.sessions_dir().join(".old.json.1.2.tmp"), "x").unwrap();
    std::fs::write(store.sessions_dir().join("notes.txt"), "x").unwrap();

    let before = store.io_stats().bytes_read;
    let listing = store.list().unwrap();
    let read = store.io_stats().bytes_read - before;
    let ids: Vec<&str> = listing.sessions.iter().map(|s| s.id.as_str()).collect();
    // The log-only session's time is its log's modification time: now, so newest.
    assert_eq!(ids, ["logonly", "huge", "middle", "old"]);
    let huge = &listing.sessions[1];
    assert_eq!(huge.message_count, Some(20_000));
    assert_eq!(huge.name.as_deref(), Some("name of huge"));
    assert!(huge.has_snapshot);
    assert!(!listing.sessions[0].has_snapshot);
    assert_eq!(listing.sessions[0].model.as_deref(), Some("gpt-5"));
    assert_eq!(listing.problems.len(), 1);
    assert!(
        listing.problems[0].to_string().contains("broken.json"),
        "{}",
        listing.problems[0]
    );
    // Four small reads, not the 4 MB history.
    assert!(read < 32 * 1024, "listing read {read} bytes");
}

// ---------------------------------------------------------------------------------------------
// Resume and fork.

#[tokio::test]
async fn a_corrupt_or_missing_snapshot_is_rebuilt_from_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());
    let mut driver = Driver::new(&store, "s1");
    for n in 0..3 {
        driver.turn(n, true).await;
    }
    let expected = driver.record.history.clone();
    assert_eq!(expected.len(), 3 * 4);
    assert_consistent(&expected);

    let resumed = store.resume("s1").unwrap();
    assert_eq!(
        resumed.source,
        ResumeSource::Snapshot,
        "{:?}",
        resumed.diagnostics
    );
    assert_eq!(resumed.record.history, expected);

    let path = store.snapshot_path("s1").unwrap();
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() / 3]).unwrap();
    let resumed = store.resume("s1").unwrap();
    match &resumed.source {
        ResumeSource::LogReplay { reason } => assert!(reason.contains("corrupt"), "{reason}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(message_ids(&resumed.record.history), message_ids(&expected));
    assert_eq!(resumed.record.history, expected);
    assert_eq!(resumed.record.usage.turns, 3);
    assert_eq!(resumed.record.usage, driver.record.usage);
    assert_eq!(resumed.record.cwd, "/project");
    assert_eq!(resumed.record.model.as_deref(), Some("claude-sonnet-4-6"));
    assert_eq!(
        resumed.record.system_prompt.as_deref(),
        Some("You are terse.")
    );

    std::fs::remove_file(&path).unwrap();
    let resumed = store.resume("s1").unwrap();
    assert!(matches!(resumed.source, ResumeSource::LogReplay { .. }));
    assert_eq!(resumed.record.history, expected);
    // Saving the rebuilt record brings the snapshot back.
    store.save(&resumed.record).unwrap();
    assert_eq!(store.resume("s1").unwrap().source, ResumeSource::Snapshot);
}

#[tokio::test]
async fn a_turn_the_snapshot_missed_comes_back_from_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());
    let mut driver = Driver::new(&store, "s1");
    driver.turn(0, true).await;
    driver.turn(1, true).await;
    // The process dies after logging turn 2's end, before its snapshot.
    driver.turn(2, false).await;
    let resumed = store.resume("s1").unwrap();
    assert_eq!(
        resumed.source,
        ResumeSource::SnapshotAndLog { turns_replayed: 1 },
        "{:?}",
        resumed.diagnostics
    );
    assert_eq!(resumed.record.history, driver.conversation.to_entries());
    assert_eq!(resumed.record.usage.turns, 3);
    assert_eq!(resumed.record.log_position, Some(driver.log.position()));
}

#[tokio::test]
async fn a_turn_cut_off_mid_way_is_left_out_whole() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());
    let mut driver = Driver::new(&store, "s1");
    driver.turn(0, true).await;
    let completed = driver.record.history.clone();
    driver.run_without_end(1).await;
    for resumed in [
        store.resume("s1").unwrap(),
        store.rebuild_from_log("s1").unwrap(),
    ] {
        assert_eq!(resumed.record.history, completed);
        let incomplete = resumed.incomplete_turn.unwrap();
        assert_eq!(incomplete.entries.len(), 4);
        assert_eq!(incomplete.calls.len(), 2);
        assert_eq!(incomplete.calls[0].1.input_tokens, 100);
    }
    let rebuilt = store.rebuild_from_log("s1").unwrap();
    assert_consistent(&rebuilt.record.history);
    assert!(
        rebuilt
            .diagnostics
            .iter()
            .any(|d| d.contains("did not finish")),
        "{:?}",
        rebuilt.diagnostics
    );
}

#[tokio::test]
async fn a_torn_last_log_line_is_ignored_and_the_log_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());
    let mut driver = Driver::new(&store, "s1");
    driver.turn(0, false).await;
    let log_path = store.log_path("s1").unwrap();
    let position = driver.log.position();
    assert_eq!(position.offset, std::fs::metadata(&log_path).unwrap().len());
    drop(driver.log);
    // A crash in the middle of writing a line.
    {
        use std::io::Write;
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&log_path)
            .unwrap();
        file.write_all(br#"{"ts":"2026-01-01T00:00:00.000Z","seq":999,"type":"history_mut"#)
            .unwrap();
    }
    let rebuilt = store.resume("s1").unwrap();
    assert!(matches!(rebuilt.source, ResumeSource::LogReplay { .. }));
    assert_eq!(rebuilt.record.history, driver.conversation.to_entries());
    assert!(
        rebuilt
            .diagnostics
            .iter()
            .any(|d| d.contains("torn last line")),
        "{:?}",
        rebuilt.diagnostics
    );

    // Reopening continues after the last complete line and closes the fragment off.
    let log = store.open_log("s1", LogOptions::default()).unwrap();
    assert_eq!(log.position().seq, position.seq);
    driver.log = log;
    driver.turn(1, true).await;
    let text = std::fs::read_to_string(&log_path).unwrap();
    let unreadable = text
        .lines()
        .filter(|line| serde_json::from_str::<Value>(line).is_err())
        .count();
    assert_eq!(unreadable, 1, "only the old fragment is unreadable");
    let mut last_seq = 0;
    for line in text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
    {
        let seq = line["seq"].as_u64().unwrap();
        assert!(seq > last_seq, "seq must increase: {seq} after {last_seq}");
        last_seq = seq;
    }
    let rebuilt = store.rebuild_from_log("s1").unwrap();
    assert_eq!(rebuilt.record.history, driver.conversation.to_entries());
    assert!(
        rebuilt.diagnostics.iter().any(|d| d.contains("unreadable")),
        "{:?}",
        rebuilt.diagnostics
    );
    assert_eq!(store.resume("s1").unwrap().source, ResumeSource::Snapshot);
}

#[tokio::test]
async fn fork_copies_the_session_and_leaves_the_original_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());
    let mut driver = Driver::new(&store, "orig");
    driver.turn(0, true).await;
    driver.turn(1, true).await;
    let snapshot = std::fs::read(store.snapshot_path("orig").unwrap()).unwrap();
    let log = std::fs::read(store.log_path("orig").unwrap()).unwrap();

    let fork = store.fork("orig").unwrap();
    assert_ne!(fork, "orig");
    assert_eq!(
        std::fs::read(store.snapshot_path("orig").unwrap()).unwrap(),
        snapshot
    );
    assert_eq!(std::fs::read(store.log_path("orig").unwrap()).unwrap(), log);

    let forked = store.resume(&fork).unwrap();
    assert_eq!(forked.source, ResumeSource::Snapshot);
    assert_eq!(forked.record.parent_id.as_deref(), Some("orig"));
    assert_eq!(forked.record.id, fork);
    assert_eq!(forked.record.history, driver.record.history);
    assert_eq!(forked.record.usage, driver.record.usage);
    // The fork stands on its own log too.
    std::fs::remove_file(store.snapshot_path(&fork).unwrap()).unwrap();
    let rebuilt = store.resume(&fork).unwrap();
    assert!(matches!(rebuilt.source, ResumeSource::LogReplay { .. }));
    assert_eq!(rebuilt.record.history, driver.record.history);
    assert_eq!(rebuilt.record.parent_id.as_deref(), Some("orig"));
    assert_eq!(rebuilt.record.usage, driver.record.usage);

    let listing = store.list().unwrap();
    assert_eq!(listing.sessions.len(), 2);
    assert!(store.delete(&fork).unwrap());
    assert!(matches!(
        store.resume(&fork),
        Err(StoreError::NotFound { .. })
    ));
    assert!(!store.delete(&fork).unwrap());
    assert!(store.resume("orig").is_ok());
}

#[tokio::test]
async fn stale_temporary_files_of_dead_writers_are_cleaned_up_on_resume() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());
    store.save(&SessionRecord::new("s1", "/p")).unwrap();
    // A pid that cannot be running (above the kernel's pid_max).
    let stale = store
        .sessions_dir()
        .join(".s1.json.2147483646.00000000000000aa.tmp");
    std::fs::write(&stale, "{\"half").unwrap();
    let ours = store.sessions_dir().join(format!(
        ".s1.json.{}.00000000000000bb.tmp",
        std::process::id()
    ));
    std::fs::write(&ours, "in flight").unwrap();
    let resumed = store.resume("s1").unwrap();
    assert!(!stale.exists());
    assert!(ours.exists(), "a live writer's file must stay");
    assert!(
        resumed.diagnostics.iter().any(|d| d.contains("temporary")),
        "{:?}",
        resumed.diagnostics
    );
}

// ---------------------------------------------------------------------------------------------
// The log.

#[test]
fn log_lines_have_ts_seq_and_type_and_deltas_are_coalesced() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("logs").join("s.jsonl");
    let log = SessionLog::open(
        &path,
        LogOptions {
            coalesce_text_bytes: 10,
            coalesce_text_ms: 60_000,
            ..LogOptions::default()
        },
    )
    .unwrap();
    log.text_delta("Hel").unwrap();
    log.text_delta("lo ").unwrap();
    log.text_delta("world!").unwrap(); // 12 bytes: written
    log.text_delta("tail").unwrap();
    log.append(&SessionLogEvent::SessionShutdown {
        reason: "other".into(),
    })
    .unwrap();
    let lines: Vec<Value> = std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let kinds: Vec<&str> = lines.iter().map(|l| l["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["text_delta", "text_delta", "session_shutdown"]);
    assert_eq!(lines[0]["text"], "Hello world!");
    assert_eq!(
        lines[1]["text"], "tail",
        "pending text goes out before the next event"
    );
    for (i, line) in lines.iter().enumerate() {
        assert_eq!(line["seq"], i as u64 + 1);
        assert!(line["ts"].as_str().unwrap().ends_with('Z'));
    }
    assert_eq!(log.stats().lines, 3);
    // Reopened: seq continues.
    drop(log);
    let log = SessionLog::open(&path, LogOptions::default()).unwrap();
    assert_eq!(log.position().seq, 3);
    log.append(&SessionLogEvent::Error {
        message: "x".into(),
        kind: None,
        execution_id: None,
    })
    .unwrap();
    assert_eq!(log.position().seq, 4);
    assert_eq!(
        log.position().offset,
        std::fs::metadata(&path).unwrap().len()
    );
}

#[cfg(target_os = "linux")]
#[test]
fn log_write_errors_are_returned_and_reported_once_per_outage() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("full.jsonl");
    std::os::unix::fs::symlink("/dev/full", &path).unwrap();
    let log = SessionLog::open(&path, LogOptions::default()).unwrap();
    let reported: Arc<Mutex<Vec<String>>> = Arc::default();
    let sink = reported.clone();
    log.set_error_callback(move |error: &LogError| sink.lock().unwrap().push(error.to_string()));
    for _ in 0..3 {
        let error = log
            .append(&SessionLogEvent::SessionShutdown {
                reason: "other".into(),
            })
            .unwrap_err();
        assert!(matches!(error, LogError::Io { op: "write", .. }), "{error}");
        assert!(error.to_string().contains("full.jsonl"), "{error}");
    }
    // The engine callback has no return value: its errors reach the callback.
    let callback = log.execution_callback();
    callback(ExecutionEvent::ProviderStreamRawDelta {
        execution_id: "e".into(),
        round: 1,
        sequence: 0,
        delta: "x".into(),
    });
    assert_eq!(log.stats().failed_lines, 4);
    let reported = reported.lock().unwrap();
    assert_eq!(reported.len(), 1, "one report per outage: {reported:?}");
    assert!(reported[0].contains("No space left"), "{reported:?}");
}

#[test]
fn secrets_are_redacted_in_free_form_payloads() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let log = SessionLog::open(&path, LogOptions::default()).unwrap();
    log.append_execution(&ExecutionEvent::ToolExecutionRequest {
        execution_id: "e".into(),
        round: 1,
        batch_id: "b".into(),
        index: 0,
        tool_name: "WebFetch".into(),
        tool_call_id: "c".into(),
        parameters: json!({"url": "https://x", "headers": {"Authorization": "Bearer sk-live-1"}}),
    })
    .unwrap();
    let mut data = serde_json::Map::new();
    data.insert(
        "env".into(),
        json!({"ANTHROPIC_API_KEY": "sk-ant-2", "API_KEY": "sk-3", "PATH": "/bin"}),
    );
    data.insert("password".into(), json!("hunter2"));
    log.append_custom("hook_run", data).unwrap();
    assert!(matches!(
        log.append_custom("history_mutation", serde_json::Map::new()),
        Err(LogError::ReservedType { .. })
    ));
    let text = std::fs::read_to_string(&path).unwrap();
    for secret in ["sk-live-1", "sk-3", "hunter2"] {
        assert!(!text.contains(secret), "{secret} leaked: {text}");
    }
    assert!(text.contains(REDACTED));
    assert!(text.contains("/bin") && text.contains("https://x"));
}

#[tokio::test]
async fn the_replay_provider_plays_a_session_log() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());
    let mut driver = Driver::new(&store, "s1");
    driver.turn(0, true).await;
    driver.turn(1, true).await;
    let log_path = store.log_path("s1").unwrap();
    // A torn line at the end must not stop the replay.
    {
        use std::io::Write;
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&log_path)
            .unwrap();
        file.write_all(b"{\"ts\":\"x\",\"seq\":").unwrap();
    }
    let replay = ReplayProvider::open(&log_path).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(replay.recorded_calls(), 4);
    let mut tools = ToolRegistry::new();
    tools.register(Arc::new(EchoTool));
    let engine = Engine::new(Arc::new(replay), tools, EngineConfig::default());
    let mut conversation = Conversation::new();
    for n in 0..2 {
        let outcome = engine
            .run(
                &mut conversation,
                Message::user(format!("turn {n}")),
                RunOptions::new(),
            )
            .await;
        assert_eq!(outcome.response, format!("answer {n}"));
        assert_eq!(outcome.tools_executed, ["echo"]);
    }
    let replayed: Vec<String> = conversation.messages().map(Message::text).collect();
    let recorded: Vec<String> = driver.conversation.messages().map(Message::text).collect();
    assert_eq!(replayed, recorded);
}

#[tokio::test]
async fn provider_requests_are_logged_compactly_unless_asked() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());
    let mut driver = Driver::new(&store, "s1");
    driver.turn(0, true).await;
    driver.turn(1, true).await;
    let text = std::fs::read_to_string(store.log_path("s1").unwrap()).unwrap();
    let requests: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|l| l["type"] == "provider_request")
        .collect();
    assert_eq!(requests.len(), 4);
    let last = requests.last().unwrap();
    assert_eq!(last["messages_omitted"], true);
    assert_eq!(last["message_count"], 7);
    assert_eq!(last["tool_names"], json!(["echo"]));
    assert!(last.get("messages").is_none());

    let full = SessionLog::open(
        dir.path().join("full.jsonl"),
        LogOptions {
            full_provider_requests: true,
            ..LogOptions::default()
        },
    )
    .unwrap();
    let provider = ScriptedProvider::new(vec![ScriptedTurn::text("ok")]);
    let engine = Engine::new(
        Arc::new(provider),
        ToolRegistry::new(),
        EngineConfig::default(),
    );
    let mut options = RunOptions::new();
    options.on_execution_event = Some(full.execution_callback());
    engine
        .run(&mut Conversation::new(), Message::user("hi"), options)
        .await;
    let text = std::fs::read_to_string(dir.path().join("full.jsonl")).unwrap();
    let request: Value = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|l| l["type"] == "provider_request")
        .unwrap();
    assert_eq!(request["messages"][0]["content"][0]["text"], "hi");
}

#[test]
fn replay_log_reads_a_plain_engine_recording_too() {
    // A JsonlRecorder log (no ts/seq, no turns): history mutations commit as they come.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rec.jsonl");
    let message = Message::user("hi");
    let line = serde_json::to_string(&ExecutionEvent::HistoryMutation {
        execution_id: "e".into(),
        round: 0,
        mutation: robota::engine::HistoryMutation::AppendMessage,
        index: 0,
        message: message.clone(),
    })
    .unwrap();
    std::fs::write(&path, format!("{line}\n")).unwrap();
    let replay = replay_log(&path, None).unwrap();
    assert_eq!(replay.history.len(), 1);
    assert_eq!(replay.history[0].message(), Some(&message));
}

// ---------------------------------------------------------------------------------------------
// Prices and budgets.

fn tokens(input: u64, output: u64, read: u64, write: u64) -> Usage {
    Usage {
        input_tokens: input,
        output_tokens: output,
        cache_read_input_tokens: read,
        cache_creation_input_tokens: write,
    }
}

#[test]
fn prices_match_exact_ids_and_snapshots_but_never_guess() {
    let table = PriceTable::builtin();
    let price = |model: &str| table.lookup(model);
    assert_eq!(
        price("claude-sonnet-4-6").map(|p| p.1),
        Some(PriceMatch::Exact)
    );
    for snapshot in [
        "claude-sonnet-4-5-20250929",
        "claude-haiku-4-5@20251001",
        "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
        "anthropic/claude-sonnet-4-5",
        "claude-sonnet-4-5[1m]",
        "gpt-4o-2024-08-06",
        "openai/gpt-4o-mini",
        "CLAUDE-OPUS-4-5-20251101",
    ] {
        assert!(price(snapshot).is_some(), "{snapshot}");
    }
    // Longest id wins: the mini model is not priced as gpt-4o.
    assert_eq!(
        table
            .price("gpt-4o-mini-2024-07-18")
            .map(|p| p.input_per_mtok),
        Some(0.15)
    );
    // A different version is a different model: unknown, not the family's price.
    for unknown in [
        "claude-opus-4-9",
        "claude-sonnet-4-7",
        "gpt-4o-turbo",
        "llama3:70b",
        "",
    ] {
        assert!(price(unknown).is_none(), "{unknown}");
        assert_eq!(
            table.cost(unknown, &tokens(1, 1, 0, 0)).status,
            CostStatus::UnknownModel
        );
    }
    // Every kind of token is priced.
    let cost = table.cost(
        "claude-sonnet-4-6",
        &tokens(1_000_000, 1_000_000, 1_000_000, 1_000_000),
    );
    assert_eq!(cost.status, CostStatus::Known);
    assert!((cost.usd.unwrap() - (3.0 + 15.0 + 0.30 + 3.75)).abs() < 1e-9);
    // OpenAI has no cache-write surcharge.
    let price = table.price("gpt-5").unwrap();
    assert_eq!(price.cache_write_per_mtok, price.input_per_mtok);
    // Long prompts switch rates for the whole call.
    let sonnet = table.price("claude-sonnet-4-5").unwrap();
    assert!((sonnet.cost_usd(&tokens(200_000, 0, 0, 0)) - 0.6).abs() < 1e-9);
    assert!((sonnet.cost_usd(&tokens(150_000, 0, 60_000, 0)) - (0.9 + 0.036)).abs() < 1e-9);
}

#[test]
fn hosts_extend_and_override_prices() {
    let table = PriceTable::builtin()
        .with_price("my-local-model", Price::new(0.0, 0.0, 0.0, 0.0))
        .unwrap()
        .with_price("claude-sonnet-4-6", Price::new(1.0, 2.0, 0.1, 1.25))
        .unwrap();
    assert_eq!(
        table.cost("my-local-model", &tokens(5, 5, 0, 0)).usd,
        Some(0.0)
    );
    assert_eq!(
        table
            .price("claude-sonnet-4-6-20260301")
            .map(|p| p.output_per_mtok),
        Some(2.0)
    );
    let error = PriceTable::empty()
        .with_price("x", Price::new(-1.0, 0.0, 0.0, 0.0))
        .unwrap_err();
    assert!(error.to_string().contains("x input"), "{error}");
    assert!(PriceTable::empty()
        .with_price("y", Price::new(f64::NAN, 0.0, 0.0, 0.0))
        .is_err());
    assert!(PriceTable::empty().price("claude-sonnet-4-6").is_none());
}

#[test]
fn totals_know_when_the_cost_is_partial() {
    let table = PriceTable::builtin();
    let mut session = UsageTotals::new();
    assert_eq!(
        (session.cost_usd, session.cost_status),
        (Some(0.0), CostStatus::Known)
    );
    let mut turn = UsageTotals::new();
    turn.record_call(&table, "claude-haiku-4-5", &tokens(1_000_000, 0, 0, 0));
    session.add_turn(&turn);
    assert_eq!(session.cost_status, CostStatus::Known);
    assert_eq!(session.cost_usd, Some(1.0));
    let mut turn = UsageTotals::new();
    turn.record_call(&table, "home-made", &tokens(10, 10, 0, 0));
    assert_eq!(
        (turn.cost_usd, turn.cost_status),
        (None, CostStatus::UnknownModel)
    );
    session.add_turn(&turn);
    assert_eq!(session.cost_status, CostStatus::Partial);
    assert_eq!(session.cost_usd, Some(1.0));
    assert_eq!(session.unpriced_models, ["home-made"]);
    assert_eq!(session.turns, 2);
    assert_eq!(session.calls, 2);
    assert_eq!(session.usage.input_tokens, 1_000_010);
    let json = serde_json::to_value(&session).unwrap();
    assert_eq!(json["cost_status"], "partial");
    assert_eq!(
        serde_json::from_value::<UsageTotals>(json).unwrap(),
        session
    );
}

#[test]
fn a_budget_stops_the_session_with_a_clear_reason() {
    let table = PriceTable::builtin();
    let budget = Budget::new(0.5).unwrap();
    let mut spent = UsageTotals::new();
    spent.record_call(&table, "claude-sonnet-4-6", &tokens(100_000, 0, 0, 0));
    let status = budget.check(&spent);
    assert!(!status.is_reached());
    assert!(
        matches!(status, BudgetStatus::Within { remaining_usd, .. } if (remaining_usd - 0.2).abs() < 1e-9)
    );
    spent.record_call(&table, "claude-sonnet-4-6", &tokens(70_000, 0, 0, 0));
    let status = budget.check(&spent);
    assert!(status.is_reached());
    assert_eq!(
        status.stop_reason().unwrap(),
        "budget of $0.5000 reached: spent $0.5100"
    );
    let budget = Budget::new(5.0).unwrap();
    let mut spent = UsageTotals::new();
    spent.record_call(&table, "claude-opus-4-1", &tokens(0, 70_000, 0, 0));
    spent.record_call(&table, "mystery", &tokens(1, 1, 0, 0));
    assert_eq!(
        budget.check(&spent).stop_reason().unwrap(),
        "budget of $5.00 reached: spent at least $5.25"
    );
    // Nothing priced: the budget cannot be enforced, and the session is told so.
    let mut unpriced = UsageTotals::new();
    unpriced.record_call(&table, "mystery", &tokens(1, 1, 0, 0));
    let status = budget.check(&unpriced);
    assert!(!status.is_reached());
    assert!(status.warning().unwrap().contains("mystery"), "{status}");
    assert!(Budget::new(-1.0).is_err());
    assert!(Budget::new(f64::INFINITY).is_err());
    assert_eq!(format_usd(12.345), "$12.35");
    assert_eq!(format_usd(0.0042), "$0.0042");
}

#[test]
fn saved_records_keep_usage_and_log_position() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());
    let mut record = SessionRecord::new("s1", "/p");
    record
        .usage
        .record_call(&PriceTable::builtin(), "gpt-5", &tokens(1000, 100, 0, 0));
    record.log_position = Some(robota::session::log::LogPosition {
        seq: 7,
        offset: 700,
    });
    record.parent_id = Some("p0".into());
    record.permission_mode = Some("acceptEdits".into());
    store.save(&record).unwrap();
    assert_eq!(store.load("s1").unwrap().unwrap(), record);
    let summary = &store.list().unwrap().sessions[0];
    assert_eq!(summary.usage.as_ref(), Some(&record.usage));
    assert_eq!(summary.parent_id.as_deref(), Some("p0"));
}
