//! Sessions in the PostgreSQL store on a real, throw-away server (`postgres_common`), run by
//! real worker processes against mock-llm (the Anthropic wire format over loopback):
//!
//! - a session with tool calls, dropped and resumed, has the same history and usage as the same
//!   session in the file store, here and in another process that goes on with it;
//! - two workers: while one holds a session, the other's resume is refused with `Locked`
//!   naming the holder, and the log holds only the holder's lines, in order;
//! - a worker SIGKILLed mid-turn: another worker resumes with every finished turn, told that it
//!   took over the dead worker's lease and which prompt never finished;
//! - a stale appender (its lease connection terminated with `pg_terminate_backend`, the lease
//!   taken over) gets `LeaseLost` for its appends and snapshots; the same fencing for SQLite;
//! - the store's methods called from inside a tokio runtime (current-thread and multi-thread).
//!
//! Where PostgreSQL is not installed the tests print a loud message and pass without running.

mod child_common;
mod postgres_common;

use std::io::Read;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use child_common::{assert_calls_answered, block_on, saved_options, say, ChildRun, EchoTool};
use postgres_common::TestPostgres;
use robota::hooks::SessionEndReason;
use robota::message::{HistoryEntry, Message};
use robota::provider::{AnthropicConfig, AnthropicProvider, HttpOptions};
use robota::session::store::{
    LeaseLost, PostgresConfig, PostgresSessionStore, SessionRecord, SessionStore,
    SqliteSessionStore, StoreError,
};
use robota::session::usage::UsageTotals;
use robota::session::{Session, SessionError, SessionOptions, SessionPersistence};
use robota::tools::{Tool, ToolContext, ToolOutput, ToolRegistry};
use serde_json::{json, Value};

/// Turn `k` (from `first`): a call of `echo`, then the answer `answer {k}`.
fn script(first: usize, turns: usize) -> Vec<Value> {
    let mut script = Vec::new();
    for k in first..first + turns {
        script.push(json!({
            "tool_calls": [{"id": format!("call_{k}"), "name": "echo", "input": {"text": format!("{k}")}}],
            "usage": {"input_tokens": 100 + k, "output_tokens": 7}
        }));
        script.push(json!({
            "text": ["ans", format!("wer {k}")],
            "usage": {"input_tokens": 120 + k, "output_tokens": 3}
        }));
    }
    script
}

fn provider(base_url: String) -> Arc<AnthropicProvider> {
    let mut config = AnthropicConfig::new("claude-sonnet-4-6");
    config.api_key = Some("sk-test".into());
    config.base_url = Some(base_url);
    config.http = HttpOptions {
        idle_timeout: Duration::from_secs(5),
        connect_timeout: Duration::from_secs(2),
        max_retries: 0,
        ..HttpOptions::default()
    };
    Arc::new(AnthropicProvider::new(config).unwrap_or_else(|e| panic!("provider: {e}")))
}

fn postgres(url: &str, project: &str) -> Arc<dyn SessionStore> {
    Arc::new(
        PostgresSessionStore::connect(&PostgresConfig {
            url: url.to_string(),
            project: project.to_string(),
        })
        .unwrap_or_else(|e| panic!("connect: {e}")),
    )
}

/// A tool that tells the parent it runs, then blocks (the worker is killed while it waits).
struct BlockTool;

#[async_trait]
impl Tool for BlockTool {
    fn name(&self) -> &str {
        "block"
    }
    fn description(&self) -> &str {
        "Blocks."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object"})
    }
    fn is_read_only(&self) -> bool {
        true
    }
    async fn execute(&self, _input: Value, _context: ToolContext) -> ToolOutput {
        say("IN_TOOL", "");
        tokio::time::sleep(Duration::from_secs(120)).await;
        ToolOutput::text("never")
    }
}

fn options(
    project: &Path,
    base_url: String,
    store: Option<Arc<dyn SessionStore>>,
) -> SessionOptions {
    let mut options = saved_options(project, provider(base_url));
    let mut tools = ToolRegistry::new();
    tools.register(Arc::new(EchoTool));
    tools.register(Arc::new(BlockTool));
    options = options.with_tools(tools);
    match store {
        Some(store) => options.with_persistence(SessionPersistence::Store(store)),
        None => options,
    }
}

/// Runs turns `first..first+turns` of session `id` (resuming it when `resume`) and shuts it
/// down.
async fn run_turns(
    project: &Path,
    store: Option<Arc<dyn SessionStore>>,
    id: &str,
    resume: bool,
    first: usize,
    turns: usize,
) {
    let mock = mock_llm::MockLlm::start_json(json!({"turns": script(first, turns)}))
        .await
        .unwrap_or_else(|e| panic!("mock-llm: {e}"));
    let options = options(project, mock.base_url(), store);
    let options = if resume {
        options.with_resume(id, false)
    } else {
        options.with_session_id(id)
    };
    let session = Session::new(options).unwrap_or_else(|e| panic!("session: {e}"));
    session.start().await;
    for k in first..first + turns {
        let outcome = session
            .run(&format!("turn {k}"))
            .await
            .unwrap_or_else(|e| panic!("turn {k}: {e}"));
        assert_eq!(outcome.response, format!("answer {k}"));
    }
    session.shutdown(SessionEndReason::Other).await;
}

/// Roles and content blocks of the history (what two runs of one script share).
fn shape(history: &[HistoryEntry]) -> Vec<Value> {
    history
        .iter()
        .filter_map(HistoryEntry::message)
        .map(|m| json!({"role": m.role, "content": m.content, "state": m.state}))
        .collect()
}

/// Resumes `id` and returns its messages, history shape and usage.
async fn resumed(
    project: &Path,
    store: Option<Arc<dyn SessionStore>>,
    id: &str,
) -> (Vec<Message>, Vec<Value>, UsageTotals) {
    let mock = mock_llm::MockLlm::start_json(json!({"turns": []}))
        .await
        .unwrap_or_else(|e| panic!("mock-llm: {e}"));
    let session = Session::new(options(project, mock.base_url(), store).with_resume(id, false))
        .unwrap_or_else(|e| panic!("resume: {e}"));
    let result = (
        session.messages(),
        shape(&session.history_after(None)),
        session.usage(),
    );
    session.shutdown(SessionEndReason::Other).await;
    result
}

/// The worker process of these tests: `ROBOTA_PG_TASK` says what it does with session
/// `ROBOTA_PG_SESSION` of project `ROBOTA_PG_PROJECT` in the database `ROBOTA_PG_URL`.
#[test]
#[ignore = "helper: run in worker processes by the tests of this file"]
fn postgres_worker() {
    let Ok(url) = std::env::var("ROBOTA_PG_URL") else {
        return;
    };
    let project = std::env::var("ROBOTA_PG_PROJECT").unwrap_or_default();
    let id = std::env::var("ROBOTA_PG_SESSION").unwrap_or_default();
    let task = std::env::var("ROBOTA_PG_TASK").unwrap_or_default();
    let dir = Path::new(&project);
    block_on(async {
        match task.as_str() {
            // Resume, report what was found, run turn 4.
            "continue" => {
                let (messages, history, usage) =
                    resumed(dir, Some(postgres(&url, &project)), &id).await;
                say("messages", messages.len());
                say(
                    "history",
                    serde_json::to_string(&history).unwrap_or_default(),
                );
                say("usage", serde_json::to_string(&usage).unwrap_or_default());
                run_turns(dir, Some(postgres(&url, &project)), &id, true, 4, 1).await;
            }
            // Hold the session open between turn 1 and turn 2 until stdin closes.
            "hold" => {
                let mock = mock_llm::MockLlm::start_json(json!({"turns": script(1, 2)}))
                    .await
                    .unwrap_or_else(|e| panic!("mock-llm: {e}"));
                let options = options(dir, mock.base_url(), Some(postgres(&url, &project)))
                    .with_session_id(&id);
                let session = Session::new(options).unwrap_or_else(|e| panic!("session: {e}"));
                session.start().await;
                let outcome = session
                    .run("turn 1")
                    .await
                    .unwrap_or_else(|e| panic!("{e}"));
                assert_eq!(outcome.response, "answer 1");
                say("READY", "");
                let mut line = String::new();
                let _ = std::io::stdin().read_line(&mut line);
                let outcome = session
                    .run("turn 2")
                    .await
                    .unwrap_or_else(|e| panic!("{e}"));
                assert_eq!(outcome.response, "answer 2");
                session.shutdown(SessionEndReason::Other).await;
                say("DONE", "");
            }
            // Two finished turns, then a third whose tool blocks until the worker is killed.
            "die-mid-turn" => {
                let mut turns = script(1, 2);
                turns.push(json!({
                    "tool_calls": [{"id": "call_3", "name": "block", "input": {}}],
                    "usage": {"input_tokens": 5, "output_tokens": 1}
                }));
                let mock = mock_llm::MockLlm::start_json(json!({"turns": turns}))
                    .await
                    .unwrap_or_else(|e| panic!("mock-llm: {e}"));
                let options = options(dir, mock.base_url(), Some(postgres(&url, &project)))
                    .with_session_id(&id);
                let session = Session::new(options).unwrap_or_else(|e| panic!("session: {e}"));
                session.start().await;
                for k in 1..=2 {
                    session
                        .run(&format!("turn {k}"))
                        .await
                        .unwrap_or_else(|e| panic!("{e}"));
                }
                let _ = session.run("turn 3").await;
                say("NOT_KILLED", "");
            }
            other => panic!("unknown task {other}"),
        }
    });
}

fn worker(server: &TestPostgres, project: &Path, id: &str, task: &str) -> ChildRun {
    ChildRun::spawn(
        "postgres_worker",
        &[
            ("ROBOTA_PG_URL", server.url()),
            ("ROBOTA_PG_PROJECT", project.display().to_string()),
            ("ROBOTA_PG_SESSION", id.to_string()),
            ("ROBOTA_PG_TASK", task.to_string()),
        ],
    )
}

/// The log of `id` as JSON lines; every line parses and `seq` counts up by one.
fn log_lines(store: &dyn SessionStore, id: &str) -> Vec<Value> {
    let mut text = String::new();
    store
        .read_log(id, 0)
        .unwrap_or_else(|e| panic!("read_log: {e}"))
        .unwrap_or_else(|| panic!("no log"))
        .read_to_string(&mut text)
        .unwrap_or_else(|e| panic!("{e}"));
    let lines: Vec<Value> = text
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect();
    for (n, line) in lines.iter().enumerate() {
        assert_eq!(
            line["seq"],
            json!(n + 1),
            "the log's lines are in order: {line}"
        );
    }
    lines
}

#[tokio::test(flavor = "multi_thread")]
async fn a_session_in_postgres_resumes_like_one_in_files_in_this_and_another_worker() {
    let Some(server) = TestPostgres::start() else {
        return;
    };
    let file_dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let pg_dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let (file_project, pg_project) = (file_dir.path(), pg_dir.path());
    let key = pg_project.display().to_string();
    let id = "pg-session";
    let store = || Some(postgres(&server.url(), &key));

    run_turns(file_project, None, id, false, 1, 3).await;
    run_turns(pg_project, store(), id, false, 1, 3).await;
    assert!(
        !pg_project.join(".robota/logs").exists(),
        "the PostgreSQL session writes no log files"
    );

    let (file_messages, file_history, file_usage) = resumed(file_project, None, id).await;
    let (messages, history, usage) = resumed(pg_project, store(), id).await;
    assert_eq!(
        messages.len(),
        3 * 4,
        "prompt, call, result, answer per turn"
    );
    let refs: Vec<&Message> = messages.iter().collect();
    assert_calls_answered("postgres resume", &refs);
    assert_eq!(
        history, file_history,
        "the same history as the file store's"
    );
    assert_eq!(usage, file_usage, "the same usage as the file store's");
    assert_eq!(file_messages.len(), messages.len());
    assert_eq!(usage.turns, 3);

    let listing = postgres(&server.url(), &key)
        .list()
        .unwrap_or_else(|e| panic!("list: {e}"));
    assert_eq!(listing.sessions.len(), 1);
    assert_eq!(listing.sessions[0].message_count, Some(12));
    let other_project = postgres(&server.url(), "another-project")
        .list()
        .unwrap_or_else(|e| panic!("list: {e}"));
    assert!(other_project.sessions.is_empty(), "projects are kept apart");

    // Another worker resumes the same session from the database and goes on.
    let mut child = worker(&server, pg_project, id, "continue");
    assert_eq!(child.wait_for("messages"), "12");
    let child_history: Value =
        serde_json::from_str(&child.wait_for("history")).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(child_history, json!(file_history));
    let child_usage: UsageTotals =
        serde_json::from_str(&child.wait_for("usage")).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(child_usage, file_usage);
    assert_eq!(child.exit_code(), Some(0), "the worker failed");

    let (messages, _, usage) = resumed(pg_project, store(), id).await;
    assert_eq!(messages.len(), 4 * 4);
    assert_eq!(
        messages.last().map(Message::text).as_deref(),
        Some("answer 4")
    );
    assert_eq!(usage.turns, 4);
    log_lines(&*postgres(&server.url(), &key), id);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_second_worker_is_refused_while_the_first_holds_the_session_and_nothing_interleaves() {
    let Some(server) = TestPostgres::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let project = dir.path();
    let key = project.display().to_string();
    let id = "shared";
    let mut holder = worker(&server, project, id, "hold");
    holder.wait_for("READY");

    let mock = mock_llm::MockLlm::start_json(json!({"turns": script(9, 1)}))
        .await
        .unwrap_or_else(|e| panic!("mock-llm: {e}"));
    let store = postgres(&server.url(), &key);
    let second = Session::new(
        options(project, mock.base_url(), Some(Arc::clone(&store))).with_resume(id, false),
    );
    match second {
        Err(SessionError::Locked {
            holder: Some(h), ..
        }) => {
            assert_eq!(h.pid, holder.pid(), "the holder is named");
            assert!(!h.host.is_empty() && !h.since.is_empty(), "{h:?}");
        }
        Err(other) => panic!("the second worker must get Locked, got {other}"),
        Ok(_) => panic!("the second worker must get Locked, got a session"),
    }
    match store.lock(id) {
        Err(StoreError::Locked {
            holder: Some(h), ..
        }) => assert_eq!(h.pid, holder.pid()),
        other => panic!("the lease is held: {other:?}"),
    }

    holder.close_stdin();
    holder.wait_for("DONE");
    assert_eq!(holder.exit_code(), Some(0));
    let (messages, _, usage) = resumed(project, Some(Arc::clone(&store)), id).await;
    let texts: Vec<String> = messages.iter().map(Message::text).collect();
    assert_eq!(texts.first().map(String::as_str), Some("turn 1"));
    assert_eq!(texts.last().map(String::as_str), Some("answer 2"));
    assert_eq!(messages.len(), 2 * 4);
    assert_eq!(usage.turns, 2);
    let lines = log_lines(&*store, id);
    let inits = lines.iter().filter(|l| l["type"] == "session_init").count();
    assert_eq!(
        inits, 2,
        "the holder's session_init and our resume's: {lines:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_worker_killed_mid_turn_is_taken_over_by_another_with_every_finished_turn() {
    let Some(server) = TestPostgres::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let project = dir.path();
    let key = project.display().to_string();
    let id = "killed-worker";
    let mut dying = worker(&server, project, id, "die-mid-turn");
    dying.wait_for("IN_TOOL");
    let pid = dying.pid();
    let said = dying.kill();
    assert!(
        !said.iter().any(|(event, _)| event == "NOT_KILLED"),
        "{said:?}"
    );

    // This worker resumes at once: the lease of the dead worker is taken over.
    let mock = mock_llm::MockLlm::start_json(json!({"turns": script(3, 1)}))
        .await
        .unwrap_or_else(|e| panic!("mock-llm: {e}"));
    let store = postgres(&server.url(), &key);
    let session = Session::new(
        options(project, mock.base_url(), Some(Arc::clone(&store))).with_resume(id, false),
    )
    .unwrap_or_else(|e| panic!("resume after the kill: {e}"));
    let report = session
        .recovery_report()
        .unwrap_or_else(|| panic!("the resume reports the takeover"))
        .clone();
    assert!(
        report
            .details
            .iter()
            .any(|d| d.contains("took over") && d.contains(&pid.to_string())),
        "{:?}",
        report.details
    );
    assert_eq!(
        report.unfinished_turn.as_ref().map(|t| t.prompt.as_str()),
        Some("turn 3"),
        "the prompt the killed worker never finished"
    );
    let messages = session.messages();
    assert_eq!(
        messages.len(),
        2 * 4,
        "both finished turns, nothing of turn 3"
    );
    let refs: Vec<&Message> = messages.iter().collect();
    assert_calls_answered("after the kill", &refs);
    let outcome = session
        .run("turn 3")
        .await
        .unwrap_or_else(|e| panic!("turn 3: {e}"));
    assert_eq!(outcome.response, "answer 3");
    session.shutdown(SessionEndReason::Other).await;
    let (messages, _, usage) = resumed(project, Some(store), id).await;
    assert_eq!(messages.len(), 3 * 4);
    assert_eq!(usage.turns, 3);
}

/// A record of session `id` with one message.
fn record(id: &str) -> SessionRecord {
    let mut record = SessionRecord::new(id, "/work/project");
    record
        .history
        .push(HistoryEntry::chat(Message::user("hello")));
    record
}

const LINE: &[u8] = b"{\"ts\":\"2026-01-01T00:00:00Z\",\"seq\":1,\"type\":\"marker\"}\n";

#[test]
fn a_stale_postgres_writer_whose_lease_was_taken_over_cannot_append_or_save() {
    let Some(server) = TestPostgres::start() else {
        return;
    };
    let id = "stale";
    let old = postgres(&server.url(), "fenced");
    let lease = old.lock(id).unwrap_or_else(|e| panic!("lock: {e}"));
    let (mut appender, _) = old
        .open_log_appender(id)
        .unwrap_or_else(|e| panic!("open: {e}"));
    appender
        .append(LINE)
        .unwrap_or_else(|e| panic!("append: {e}"));
    old.save(&record(id))
        .unwrap_or_else(|e| panic!("save: {e}"));

    // The server drops the old writer's lease connection (as a network failure or an
    // administrator would); the old process lives on, unaware.
    let backend = server.sql(&format!(
        "SELECT backend_pid FROM robota_leases WHERE project = 'fenced' AND id = '{id}'"
    ));
    assert_eq!(
        server.sql(&format!("SELECT pg_terminate_backend({backend})")),
        "t"
    );
    let new = postgres(&server.url(), "fenced");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let taken = loop {
        match new.lock(id) {
            Ok(lease) => break lease,
            Err(StoreError::Locked { .. }) if std::time::Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(50));
            }
            Err(error) => panic!("the new writer takes the lease over: {error}"),
        }
    };
    assert_eq!(
        taken.previous_holder().map(|h| h.pid),
        Some(std::process::id()),
        "the old holder never released it"
    );

    let error = appender
        .append(LINE)
        .expect_err("the stale writer's append must be refused");
    let lost = LeaseLost::of_io(&error).unwrap_or_else(|| panic!("not LeaseLost: {error}"));
    assert_eq!(lost.id, id);
    assert!(error.to_string().contains("taken over"), "{error}");
    match old.save(&record(id)) {
        Err(StoreError::LeaseLost(lost)) => assert_eq!(lost.id, id),
        other => panic!("the stale writer's snapshot must be refused, got {other:?}"),
    }
    // The new holder writes; the log has the old holder's line before the takeover and the
    // new holder's after it, nothing else.
    let (mut fresh, end) = new
        .open_log_appender(id)
        .unwrap_or_else(|e| panic!("open: {e}"));
    assert_eq!(end.offset, LINE.len() as u64);
    fresh.append(LINE).unwrap_or_else(|e| panic!("append: {e}"));
    new.save(&record(id))
        .unwrap_or_else(|e| panic!("save: {e}"));
    assert_eq!(new.log_len(id).ok().flatten(), Some(2 * LINE.len() as u64));
    drop(lease);
    drop(taken);
    assert!(new.lock(id).is_ok(), "released");
}

#[test]
fn a_stale_sqlite_writer_whose_lease_was_taken_over_cannot_append_or_save() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let path = dir.path().join("sessions.db");
    let open = || SqliteSessionStore::open(&path).unwrap_or_else(|e| panic!("open: {e}"));
    let id = "stale";
    let old = open();
    let _lease = old.lock(id).unwrap_or_else(|e| panic!("lock: {e}"));
    let (mut appender, _) = old
        .open_log_appender(id)
        .unwrap_or_else(|e| panic!("open: {e}"));
    appender
        .append(LINE)
        .unwrap_or_else(|e| panic!("append: {e}"));
    old.save(&record(id))
        .unwrap_or_else(|e| panic!("save: {e}"));

    // The lease row comes to name a process that is gone (as when the holder's pid namespace
    // differs, or it was thought dead): another writer takes it over.
    let gone = json!({"pid": u32::MAX - 7, "host": robota_host(), "since": "2026-01-01T00:00:00Z"});
    let raw = rusqlite::Connection::open(&path).unwrap_or_else(|e| panic!("{e}"));
    raw.execute(
        "UPDATE leases SET holder = ?1 WHERE id = ?2",
        rusqlite::params![gone.to_string(), id],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let new = open();
    let _taken = new
        .lock(id)
        .unwrap_or_else(|e| panic!("the new writer takes the lease over: {e}"));

    let error = appender
        .append(LINE)
        .expect_err("the stale writer's append must be refused");
    assert!(LeaseLost::of_io(&error).is_some(), "not LeaseLost: {error}");
    match old.save(&record(id)) {
        Err(StoreError::LeaseLost(lost)) => {
            assert_eq!(lost.id, id);
            assert_eq!(
                lost.holder.map(|h| h.pid),
                Some(std::process::id()),
                "names the new holder"
            );
        }
        other => panic!("the stale writer's snapshot must be refused, got {other:?}"),
    }
    let (mut fresh, _) = new
        .open_log_appender(id)
        .unwrap_or_else(|e| panic!("open: {e}"));
    fresh.append(LINE).unwrap_or_else(|e| panic!("append: {e}"));
    assert_eq!(new.log_len(id).ok().flatten(), Some(2 * LINE.len() as u64));
}

/// This host's name as lease records write it.
fn robota_host() -> String {
    robota::session::lock::LockHolder::current().host
}

/// The store's own runtime: its methods work from inside a current-thread runtime, and the
/// store can be dropped there.
#[tokio::test]
async fn the_store_works_inside_a_current_thread_runtime() {
    let Some(server) = TestPostgres::start() else {
        return;
    };
    exercise_inside_a_runtime(&server.url());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_store_works_inside_a_multi_thread_runtime() {
    let Some(server) = TestPostgres::start() else {
        return;
    };
    let url = server.url();
    tokio::spawn(async move { exercise_inside_a_runtime(&url) })
        .await
        .unwrap_or_else(|e| panic!("{e}"));
}

fn exercise_inside_a_runtime(url: &str) {
    let store = postgres(url, "in-runtime");
    let lease = store.lock("r").unwrap_or_else(|e| panic!("lock: {e}"));
    store
        .save(&record("r"))
        .unwrap_or_else(|e| panic!("save: {e}"));
    let (mut appender, _) = store
        .open_log_appender("r")
        .unwrap_or_else(|e| panic!("open: {e}"));
    appender
        .append(LINE)
        .unwrap_or_else(|e| panic!("append: {e}"));
    assert_eq!(
        store
            .list()
            .unwrap_or_else(|e| panic!("list: {e}"))
            .sessions
            .len(),
        1
    );
    drop(appender);
    drop(lease);
    drop(store);
}

#[test]
fn a_session_config_picks_the_postgres_store_by_json() {
    use robota::api::SessionConfig;
    use robota::provider::scripted::ScriptedProvider;
    let Some(server) = TestPostgres::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let config = SessionConfig::from_json_value(json!({
        "cwd": dir.path(),
        "persistence": {"postgres": {"url": server.url(), "project": "by-json"}}
    }))
    .unwrap_or_else(|e| panic!("config: {e}"));
    let options = config
        .into_session_options(Arc::new(ScriptedProvider::new(Vec::new())))
        .unwrap_or_else(|e| panic!("options: {e}"));
    let SessionPersistence::Store(store) = &options.persistence else {
        panic!("not a store");
    };
    store
        .save(&record("j"))
        .unwrap_or_else(|e| panic!("save: {e}"));
    assert_eq!(
        postgres(&server.url(), "by-json")
            .list()
            .unwrap_or_else(|e| panic!("{e}"))
            .sessions
            .len(),
        1
    );
    let unreachable = SessionConfig::from_json_value(json!({
        "cwd": dir.path(),
        "persistence": {"postgres": {"url": "postgres://nobody:pw-secret@127.0.0.1:1/none"}}
    }))
    .unwrap_or_else(|e| panic!("config: {e}"));
    let debug = format!("{unreachable:?}");
    assert!(!debug.contains("pw-secret"), "{debug}");
    let unreachable = unreachable.into_session_options(Arc::new(ScriptedProvider::new(Vec::new())));
    match unreachable {
        Err(error) => {
            let text = error.to_string();
            assert!(
                !text.contains("pw-secret"),
                "the password is never printed: {text}"
            );
            assert!(
                text.contains("postgres://nobody@127.0.0.1:1/none"),
                "{text}"
            );
        }
        Ok(_) => panic!("an unreachable database is an error"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_settings_session_store_puts_a_project_session_in_postgres() {
    use robota::api::SessionConfig;
    use robota::provider::scripted::{ScriptedProvider, ScriptedTurn};
    let Some(server) = TestPostgres::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let variable = format!("ROBOTA_TEST_PG_URL_{}", std::process::id());
    std::env::set_var(&variable, server.url());
    let config = SessionConfig::from_json_value(json!({
        "cwd": dir.path(),
        "session_id": "from-settings",
        "load_project_context": false,
        "persistence": "project",
        "settings": {"sessionStore": {"type": "postgres", "urlEnv": variable, "project": "settings-key"}}
    }))
    .unwrap_or_else(|e| panic!("config: {e}"));
    let provider = Arc::new(ScriptedProvider::new(vec![ScriptedTurn::text("saved")]));
    let options = config
        .into_session_options(provider)
        .unwrap_or_else(|e| panic!("options: {e}"));
    let session = Session::new(options).unwrap_or_else(|e| panic!("session: {e}"));
    let outcome = session
        .run("hello")
        .await
        .unwrap_or_else(|e| panic!("turn: {e}"));
    assert_eq!(outcome.response, "saved");
    session.shutdown(SessionEndReason::Other).await;
    assert!(
        !dir.path().join(".robota/sessions").exists(),
        "nothing in the project's files"
    );
    let resumed = postgres(&server.url(), "settings-key")
        .resume("from-settings")
        .unwrap_or_else(|e| panic!("resume from the database: {e}"));
    let texts: Vec<String> = resumed.record.messages().map(Message::text).collect();
    assert_eq!(texts, ["hello", "saved"]);
}
