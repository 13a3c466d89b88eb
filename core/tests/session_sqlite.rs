//! A real session saved in the SQLite store: turns with tool calls against mock-llm (the
//! Anthropic wire format over loopback), dropped, resumed in a new `Session` and in a child
//! process — with the same history and usage as the same session saved in the file store.

mod child_common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use child_common::{assert_calls_answered, block_on, saved_options, say, MARK};
use robota::hooks::SessionEndReason;
use robota::message::{HistoryEntry, Message};
use robota::provider::{AnthropicConfig, AnthropicProvider, HttpOptions};
use robota::session::store::{SessionStore, SqliteSessionStore};
use robota::session::usage::UsageTotals;
use robota::session::{Session, SessionOptions, SessionPersistence};
use serde_json::{json, Value};

/// Turn `k` (from `first`): a call of `echo`, then the answer `answer {k}`.
fn script(first: usize, turns: usize) -> Value {
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
    json!({"turns": script})
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

fn database(project: &Path) -> std::path::PathBuf {
    project.join(".robota/sessions.db")
}

fn sqlite(project: &Path) -> Arc<dyn SessionStore> {
    Arc::new(SqliteSessionStore::open(database(project)).unwrap_or_else(|e| panic!("{e}")))
}

fn options(
    project: &Path,
    base_url: String,
    store: Option<Arc<dyn SessionStore>>,
) -> SessionOptions {
    let options = saved_options(project, provider(base_url));
    match store {
        Some(store) => options.with_persistence(SessionPersistence::Store(store)),
        None => options,
    }
}

/// Runs turns `first..first+turns` in the session `id` (resuming it when `resume`), then shuts
/// it down.
async fn run_turns(
    project: &Path,
    store: Option<Arc<dyn SessionStore>>,
    id: &str,
    resume: bool,
    first: usize,
    turns: usize,
) {
    let mock = mock_llm::MockLlm::start_json(script(first, turns))
        .await
        .unwrap_or_else(|e| panic!("mock-llm: {e}"));
    let mut options = options(project, mock.base_url(), store);
    options = if resume {
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

/// The history without what differs between two runs of the same script (message ids and
/// timestamps): roles and content blocks.
fn shape(history: &[HistoryEntry]) -> Vec<Value> {
    history
        .iter()
        .filter_map(HistoryEntry::message)
        .map(|m| json!({"role": m.role, "content": m.content, "state": m.state}))
        .collect()
}

/// Resumes `id` in a new session and returns its messages, history shape and usage.
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
    let messages = session.messages();
    let history = session.history_after(None);
    let usage = session.usage();
    (messages, shape(&history), usage)
}

/// The child: resumes the SQLite session, reports what it found, runs one more turn.
#[test]
#[ignore = "helper: run in a child process by the tests of this file"]
fn sqlite_child() {
    let Ok(project) = std::env::var("ROBOTA_SQLITE_PROJECT") else {
        return;
    };
    let project = Path::new(&project);
    let id = std::env::var("ROBOTA_SQLITE_SESSION").unwrap_or_default();
    block_on(async {
        let (messages, history, usage) = resumed(project, Some(sqlite(project)), &id).await;
        say("messages", messages.len());
        say(
            "history",
            serde_json::to_string(&history).unwrap_or_default(),
        );
        say("usage", serde_json::to_string(&usage).unwrap_or_default());
        run_turns(project, Some(sqlite(project)), &id, true, 4, 1).await;
    });
}

/// What a child said: the payloads of its `@@CHILD {event} …` lines.
fn child_said(output: &str, event: &str) -> String {
    let prefix = format!("{MARK}{event} ");
    output
        .lines()
        .find_map(|line| line.strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("the child did not report {event}: {output}"))
        .to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_session_in_sqlite_resumes_like_one_in_files_in_this_and_another_process() {
    let file_dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let sqlite_dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let (file_project, sqlite_project) = (file_dir.path(), sqlite_dir.path());
    let id = "sqlite-session";

    run_turns(file_project, None, id, false, 1, 3).await;
    run_turns(
        sqlite_project,
        Some(sqlite(sqlite_project)),
        id,
        false,
        1,
        3,
    )
    .await;
    assert!(database(sqlite_project).exists());
    assert!(
        !sqlite_project.join(".robota/logs").exists(),
        "the SQLite session writes no log files"
    );

    let (file_messages, file_history, file_usage) = resumed(file_project, None, id).await;
    let (messages, history, usage) =
        resumed(sqlite_project, Some(sqlite(sqlite_project)), id).await;
    assert_eq!(
        messages.len(),
        3 * 4,
        "three turns of prompt, call, result, answer"
    );
    let refs: Vec<&Message> = messages.iter().collect();
    assert_calls_answered("sqlite resume", &refs);
    assert_eq!(
        history, file_history,
        "the same history as the file store's"
    );
    assert_eq!(usage, file_usage, "the same usage as the file store's");
    assert_eq!(usage.turns, 3);
    assert_eq!(
        usage.usage.input_tokens,
        (101 + 121) + (102 + 122) + (103 + 123)
    );
    assert_eq!(file_messages.len(), messages.len());

    let listing = sqlite(sqlite_project)
        .list()
        .unwrap_or_else(|e| panic!("list: {e}"));
    assert_eq!(listing.sessions.len(), 1);
    assert_eq!(listing.sessions[0].message_count, Some(12));

    // Another process resumes the same database and goes on.
    let exe = std::env::current_exe().unwrap_or_else(|e| panic!("{e}"));
    let output = Command::new(exe)
        .args(["--exact", "sqlite_child", "--ignored", "--nocapture"])
        .env("ROBOTA_SQLITE_PROJECT", sqlite_project)
        .env("ROBOTA_SQLITE_SESSION", id)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("run the child: {e}"));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the child failed: {stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(child_said(&stdout, "messages"), "12");
    let child_history: Value =
        serde_json::from_str(&child_said(&stdout, "history")).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(child_history, json!(file_history));
    let child_usage: UsageTotals =
        serde_json::from_str(&child_said(&stdout, "usage")).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(child_usage, file_usage);

    // The child's turn is there for the next writer.
    let (messages, _, usage) = resumed(sqlite_project, Some(sqlite(sqlite_project)), id).await;
    assert_eq!(messages.len(), 4 * 4);
    assert_eq!(
        messages.last().map(Message::text).as_deref(),
        Some("answer 4")
    );
    assert_eq!(usage.turns, 4);
}

#[test]
fn a_session_config_picks_the_sqlite_store_by_json() {
    use robota::api::SessionConfig;
    use robota::provider::scripted::ScriptedProvider;
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let config = SessionConfig::from_json_value(json!({
        "cwd": dir.path(),
        "persistence": {"sqlite": {"path": "db/sessions.db"}}
    }))
    .unwrap_or_else(|e| panic!("config: {e}"));
    let options = config
        .into_session_options(Arc::new(ScriptedProvider::new(Vec::new())))
        .unwrap_or_else(|e| panic!("options: {e}"));
    let SessionPersistence::Store(store) = &options.persistence else {
        panic!("not a store: {:?}", options.persistence);
    };
    assert!(
        dir.path().join("db/sessions.db").is_file(),
        "relative to cwd"
    );
    assert!(store
        .list()
        .unwrap_or_else(|e| panic!("{e}"))
        .sessions
        .is_empty());
    assert!(SessionConfig::from_json_value(json!({"persistence": {"sqlite": {}}})).is_err());
}
