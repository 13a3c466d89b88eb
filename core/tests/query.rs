//! `create_query` against the scripted provider: the result (response, usage, cost, turns, stop
//! reason, session id), reuse of one session across calls, streaming text, and
//! `allowed_tools`/`disallowed_tools` as permission rules.
#![cfg(unix)]

use std::sync::{Arc, Mutex};

use robota::engine::{EngineEvent, RunStopReason};
use robota::framework::query::{create_query, QueryError, QueryOptions};
use robota::provider::scripted::{ScriptedProvider, ScriptedTurn};
use robota::session::usage::{Price, PriceTable};
use robota::session::{SessionEvent, SessionOptions, SessionSettings};
use serde_json::json;

fn options(dir: &tempfile::TempDir, turns: Vec<ScriptedTurn>) -> QueryOptions {
    let provider = Arc::new(ScriptedProvider::new(turns));
    let mut options = QueryOptions::new(dir.path(), provider.clone());
    options.settings = SessionSettings::None;
    let mut session = SessionOptions::new(dir.path(), provider).with_project_context(false);
    session.prices = PriceTable::empty()
        .with_price(
            "scripted",
            Price {
                input_per_mtok: 1_000_000.0,
                output_per_mtok: 2_000_000.0,
                cache_read_per_mtok: 0.0,
                cache_write_per_mtok: 0.0,
                long_prompt: None,
            },
        )
        .expect("price");
    options.session = Some(session);
    options
}

/// Tool outputs seen by the session, as `(is_error, content)`.
fn record_tools(options: &mut QueryOptions) -> Arc<Mutex<Vec<(bool, String)>>> {
    let seen: Arc<Mutex<Vec<(bool, String)>>> = Arc::default();
    let s = Arc::clone(&seen);
    if let Some(session) = options.session.take() {
        options.session = Some(session.with_on_event(move |event| {
            if let SessionEvent::Engine(EngineEvent::ToolEnd { output, .. }) = event {
                s.lock()
                    .expect("lock")
                    .push((output.is_error, output.content));
            }
        }));
    }
    seen
}

#[tokio::test]
async fn a_query_reports_usage_cost_turns_and_stop_reason() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut options = options(
        &dir,
        vec![
            ScriptedTurn::tool_call("t1", "Read", json!({"file_path": "a.txt"})).with_usage(10, 1),
            ScriptedTurn::chunks(["the ", "answer"]).with_usage(20, 2),
            ScriptedTurn::text("again").with_usage(1, 1),
        ],
    );
    std::fs::write(dir.path().join("a.txt"), "hello").expect("write");
    let streamed: Arc<Mutex<String>> = Arc::default();
    let s = Arc::clone(&streamed);
    options.on_text_delta = Some(Arc::new(move |text: &str| {
        s.lock().expect("lock").push_str(text)
    }));
    let query = create_query(options).expect("query");
    let result = query.query("what is in a.txt?").await.expect("result");
    assert_eq!(result.response, "the answer");
    assert_eq!(result.num_turns, 2);
    assert_eq!(result.stop_reason, RunStopReason::Completed);
    assert_eq!(result.usage.input_tokens, 30);
    assert_eq!(result.usage.output_tokens, 3);
    // 30 input tokens at $1/token and 3 output tokens at $2/token.
    let cost = result.cost_usd.expect("priced");
    assert!((cost - 36.0).abs() < 1e-6, "{cost}");
    assert_eq!(result.session_id, query.session().session_id());
    // Rounds are separated by a blank line in the stream.
    assert_eq!(streamed.lock().expect("lock").trim(), "the answer");
    assert_eq!(result.messages.len(), 4);

    // Reusable: the second call continues the same session and costs only its own tokens.
    let second = query.query("and now?").await.expect("second");
    assert_eq!(second.response, "again");
    assert_eq!(second.session_id, result.session_id);
    assert_eq!(second.num_turns, 1);
    assert!((second.cost_usd.expect("priced") - 3.0).abs() < 1e-6);
    assert_eq!(second.messages.len(), 6);
}

#[tokio::test]
async fn max_turns_stops_the_query() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut options = options(
        &dir,
        vec![
            ScriptedTurn::tool_call("t1", "Glob", json!({"pattern": "*"})),
            ScriptedTurn::tool_call("t2", "Glob", json!({"pattern": "*"})),
            ScriptedTurn::text("summary"),
        ],
    );
    options.max_turns = 1;
    let query = create_query(options).expect("query");
    let result = query.query("loop").await.expect("result");
    assert_eq!(result.stop_reason, RunStopReason::MaxTurns);
}

#[tokio::test]
async fn disallowed_tools_are_denied() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut options = options(
        &dir,
        vec![
            ScriptedTurn::tool_call("t1", "Read", json!({"file_path": "a.txt"})),
            ScriptedTurn::text("done"),
        ],
    );
    std::fs::write(dir.path().join("a.txt"), "hello").expect("write");
    options.disallowed_tools = vec!["Read".into()];
    let tools = record_tools(&mut options);
    let query = create_query(options).expect("query");
    query.query("read it").await.expect("result");
    let tools = tools.lock().expect("lock").clone();
    assert_eq!(tools.len(), 1, "{tools:?}");
    assert!(tools[0].0, "denied: {tools:?}");
    assert!(!tools[0].1.contains("hello"));
}

#[tokio::test]
async fn allowed_tools_run_without_asking() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut options = options(
        &dir,
        vec![
            ScriptedTurn::tool_call("t1", "Bash", json!({"command": "seq 41 42"})),
            ScriptedTurn::text("done"),
        ],
    );
    options.allowed_tools = vec!["Bash(seq *)".into()];
    let tools = record_tools(&mut options);
    let query = create_query(options).expect("query");
    query.query("write").await.expect("result");
    let tools = tools.lock().expect("lock").clone();
    assert_eq!(tools.len(), 1);
    assert!(!tools[0].0, "allowed: {tools:?}");
    assert!(tools[0].1.contains("42"), "{tools:?}");
}

#[tokio::test]
async fn without_a_rule_a_call_needing_approval_is_denied() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut options = options(
        &dir,
        vec![
            ScriptedTurn::tool_call("t1", "Bash", json!({"command": "seq 41 42"})),
            ScriptedTurn::text("done"),
        ],
    );
    let tools = record_tools(&mut options);
    let query = create_query(options).expect("query");
    query.query("write").await.expect("result");
    // The same call as in `allowed_tools_run_without_asking`, without the rule.
    let tools = tools.lock().expect("lock").clone();
    assert!(tools[0].0, "{tools:?}");
    assert!(!tools[0].1.contains("41\n42"));
}

#[test]
fn a_bad_tool_rule_is_an_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut options = options(&dir, vec![]);
    options.allowed_tools = vec!["Bash(".into()];
    assert!(matches!(
        create_query(options),
        Err(QueryError::InvalidToolRule(_))
    ));
}
