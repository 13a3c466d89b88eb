//! Persistence wired into the session, against mock-llm over loopback with temp projects and a
//! fake HOME: a turn is saved (snapshot + log), a NEW session resumes it and sends the old
//! history to the model, a fork leaves the original file byte-identical, usage and cost
//! accumulate (and survive resume), the budget stops further runs, and write errors surface as
//! `persistence_error` events without failing the turn.
#![cfg(unix)]

mod session_common;

use robota::hooks::SessionEndReason;
use robota::session::{SessionError, SessionPersistence, SessionStore};
use robota::tools::ToolRegistry;
use serde_json::{json, Value};
use session_common::*;

fn saved(project: &Project, mock: &Mock, events: &Events) -> robota::session::SessionOptions {
    options(project, mock, events)
        .with_tools(ToolRegistry::new())
        .with_persistence(SessionPersistence::Project)
}

fn log_types(project: &Project, id: &str) -> Vec<String> {
    project
        .read(&format!(".robota/logs/{id}.jsonl"))
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .map(|v| v["type"].as_str().unwrap_or("").to_string())
        .collect()
}

#[tokio::test]
async fn a_turn_is_saved_as_snapshot_and_log() {
    let project = Project::new();
    let mock = Mock::start(json!({"turns": [{"text": "saved answer"}]})).await;
    let events = Events::default();
    let session = session(saved(&project, &mock, &events));
    session.run("remember this").await.unwrap();

    let id = session.session_id().to_string();
    let snapshot: Value =
        serde_json::from_str(&project.read(&format!(".robota/sessions/{id}.json"))).unwrap();
    assert_eq!(snapshot["id"], id.as_str());
    assert_eq!(snapshot["messageCount"], 2);
    assert!(snapshot["logPosition"].is_object());
    let types = log_types(&project, &id);
    for expected in ["session_init", "pre_run", "provider_request", "turn_end"] {
        assert!(
            types.iter().any(|t| t == expected),
            "{expected} in {types:?}"
        );
    }
    let pre_run = types.iter().position(|t| t == "pre_run").unwrap();
    let turn_end = types.iter().position(|t| t == "turn_end").unwrap();
    assert!(pre_run < turn_end);

    session.shutdown(SessionEndReason::Other).await;
    assert!(log_types(&project, &id).contains(&"session_shutdown".to_string()));
    assert!(events.of("persistence_error").is_empty());
}

#[tokio::test]
async fn a_new_session_resumes_and_sends_the_old_history() {
    let project = Project::new();
    let first = Mock::start(json!({"turns": [{"text": "Hello Bob", "usage": {"input_tokens": 10, "output_tokens": 3}}]})).await;
    let events = Events::default();
    let original = session(saved(&project, &first, &events));
    original.set_name(Some("bob chat".into()));
    original.run("my name is Bob").await.unwrap();
    let id = original.session_id().to_string();
    original.shutdown(SessionEndReason::Other).await;
    drop(original);

    let second = Mock::start(json!({"turns": [{"text": "You are Bob"}]})).await;
    let events = Events::default();
    let resumed = session(saved(&project, &second, &events).with_resume(&id, false));
    assert_eq!(resumed.session_id(), id);
    assert_eq!(resumed.messages().len(), 2);
    assert_eq!(resumed.get_name().as_deref(), Some("bob chat"));
    assert_eq!(resumed.usage().usage.input_tokens, 10);

    resumed.run("what is my name?").await.unwrap();
    let users = second.user_texts(0);
    assert_eq!(users, vec!["my name is Bob", "what is my name?"]);
    let body = &second.bodies()[0];
    assert!(body["messages"].to_string().contains("Hello Bob"));
    assert_eq!(resumed.messages().len(), 4);
}

#[tokio::test]
async fn resuming_without_a_store_or_an_unknown_id_is_an_error() {
    let project = Project::new();
    let mock = Mock::start(json!({"turns": []})).await;
    let events = Events::default();
    let error = robota::session::Session::new(
        options(&project, &mock, &events).with_resume("no-such-session", false),
    )
    .expect_err("no store");
    assert!(matches!(error, SessionError::Resume { .. }));
    let error = robota::session::Session::new(
        saved(&project, &mock, &events).with_resume("no-such-session", false),
    )
    .expect_err("unknown id");
    assert!(matches!(error, SessionError::Resume { .. }), "{error}");
}

#[tokio::test]
async fn a_fork_leaves_the_original_byte_identical() {
    let project = Project::new();
    let mock = Mock::start(json!({"turns": [{"text": "one"}, {"text": "two"}]})).await;
    let events = Events::default();
    let original = session(saved(&project, &mock, &events));
    original.run("first").await.unwrap();
    let id = original.session_id().to_string();
    original.shutdown(SessionEndReason::Other).await;
    let snapshot_path = format!(".robota/sessions/{id}.json");
    let log_path = format!(".robota/logs/{id}.jsonl");
    let snapshot_before = std::fs::read(project.path(&snapshot_path)).unwrap();
    let log_before = std::fs::read(project.path(&log_path)).unwrap();

    let fork = session(saved(&project, &mock, &events).with_resume(&id, true));
    assert_ne!(fork.session_id(), id);
    assert_eq!(fork.messages().len(), 2);
    fork.run("second").await.unwrap();
    fork.shutdown(SessionEndReason::Other).await;

    assert_eq!(
        std::fs::read(project.path(&snapshot_path)).unwrap(),
        snapshot_before
    );
    assert_eq!(std::fs::read(project.path(&log_path)).unwrap(), log_before);
    let fork_snapshot: Value = serde_json::from_str(
        &project.read(&format!(".robota/sessions/{}.json", fork.session_id())),
    )
    .unwrap();
    assert_eq!(fork_snapshot["parentId"], id.as_str());
    assert_eq!(fork_snapshot["messageCount"], 4);
}

#[tokio::test]
async fn usage_and_cost_accumulate_and_the_budget_stops_further_runs() {
    let project = Project::new();
    let usage = json!({"input_tokens": 100_000, "output_tokens": 0});
    let mock = Mock::start(json!({"turns": [
        {"text": "a", "usage": usage},
        {"text": "b", "usage": usage},
        {"text": "never sent"}
    ]}))
    .await;
    let events = Events::default();
    // claude-sonnet-4-5 input is priced per million tokens: each turn costs cents, two pass $0.50.
    let session = session(saved(&project, &mock, &events).with_max_budget_usd(0.5));
    session.run("one").await.unwrap();
    let after_one = session.usage();
    let one_turn = after_one.cost_usd.expect("priced");
    assert!(one_turn > 0.0 && one_turn < 0.5, "{one_turn}");
    session.run("two").await.unwrap();
    let totals = session.usage();
    assert_eq!(totals.usage.input_tokens, 200_000);
    assert_eq!(totals.turns, 2);
    assert_eq!(totals.calls, 2);
    let spent = totals.cost_usd.expect("priced");
    assert!((spent - 2.0 * one_turn).abs() < 1e-9);
    assert!(spent >= 0.5, "{spent}");

    match session.run("three").await {
        Err(SessionError::BudgetExceeded { reason }) => {
            assert!(
                reason.contains("budget of $0.5000 reached: spent $0.6000"),
                "{reason}"
            )
        }
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!(
        mock.bodies().len(),
        2,
        "nothing sent after the budget was reached"
    );

    // The snapshot carries the totals, so a resumed session keeps counting (and stays stopped).
    let id = session.session_id().to_string();
    session.shutdown(SessionEndReason::Other).await;
    let resumed = session_common::session(
        saved(&project, &mock, &events)
            .with_resume(&id, false)
            .with_max_budget_usd(0.5),
    );
    assert_eq!(resumed.usage().usage.input_tokens, 200_000);
    assert!(matches!(
        resumed.run("four").await,
        Err(SessionError::BudgetExceeded { .. })
    ));
}

#[tokio::test]
async fn write_errors_surface_as_events_and_the_turn_still_runs() {
    let project = Project::new();
    // The sessions and logs directories are files: neither the log nor the snapshot can be
    // written.
    project.write(".robota/sessions", "not a directory");
    project.write(".robota/logs", "not a directory");
    let mock = Mock::start(json!({"turns": [{"text": "still answered"}]})).await;
    let events = Events::default();
    let session = session(saved(&project, &mock, &events));
    let outcome = session.run("hello").await.expect("the turn is not failed");
    assert_eq!(outcome.response, "still answered");
    let errors = events.of("persistence_error");
    let operations: Vec<&str> = errors
        .iter()
        .filter_map(|e| e["operation"].as_str())
        .collect();
    assert!(operations.contains(&"open_log"), "{errors:?}");
    assert!(operations.contains(&"save"), "{errors:?}");
    assert!(errors
        .iter()
        .all(|e| !e["message"].as_str().unwrap_or("").is_empty()));
}

#[tokio::test]
async fn session_start_fires_with_source_resume_or_fork() {
    let project = Project::new();
    let record = project.scratch("start").join("start.jsonl");
    let hook = format!("cat >> {0}; echo >> {0}", quote(&record.to_string_lossy()));
    project.settings(
        ".claude/settings.json",
        json!({"hooks": {"SessionStart": [group(None, vec![command(hook)])]}}),
    );
    let mock = Mock::start(json!({"turns": [{"text": "a"}, {"text": "b"}, {"text": "c"}]})).await;
    let events = Events::default();
    let original = session(saved(&project, &mock, &events));
    original.run("one").await.unwrap();
    let id = original.session_id().to_string();
    original.shutdown(SessionEndReason::Other).await;

    let resumed = session(saved(&project, &mock, &events).with_resume(&id, false));
    resumed.run("two").await.unwrap();
    resumed.shutdown(SessionEndReason::Other).await;
    let forked = session(saved(&project, &mock, &events).with_resume(&id, true));
    forked.run("three").await.unwrap();

    let sources: Vec<String> = records(&record)
        .iter()
        .map(|r| r["source"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(sources, vec!["startup", "resume", "fork"]);
}

/// The `messageCount` the snapshot of session `id` holds now.
fn snapshot_message_count(project: &Project, id: &str) -> u64 {
    let snapshot: Value =
        serde_json::from_str(&project.read(&format!(".robota/sessions/{id}.json"))).unwrap();
    snapshot["messageCount"].as_u64().unwrap()
}

/// A long session does not rewrite its whole snapshot after every turn (that made each turn's
/// cost grow with the history): once the history is large, the turns go to the log and the
/// snapshot follows when it is due. Nothing is lost in between: a resume (also after the session
/// was dropped without shutdown) applies the log written after the snapshot, and shutdown
/// leaves the snapshot current.
#[tokio::test]
async fn a_long_session_snapshot_follows_when_due_and_resume_applies_the_log() {
    let project = Project::new();
    let mock = Mock::start(json!({
        "repeat": true,
        "turns": [{"text": "short answer", "usage": {"input_tokens": 7, "output_tokens": 2}}]
    }))
    .await;
    let events = Events::default();
    let original = session(saved(&project, &mock, &events));
    let id = original.session_id().to_string();
    // 300 KB of history: above the size below which every turn rewrites the snapshot. The first
    // save of a session always writes one.
    original
        .inject_message(robota::message::Message::user("x".repeat(300_000)))
        .unwrap();
    let before_turns = snapshot_message_count(&project, &id);
    assert_eq!(before_turns, 1);
    for n in 0..5 {
        original.run(format!("turn {n}")).await.unwrap();
    }
    assert_eq!(original.messages().len(), 11);
    assert_eq!(
        snapshot_message_count(&project, &id),
        before_turns,
        "five short turns on a large history are not worth a snapshot rewrite each"
    );
    let stored = robota::session::store::FileSessionStore::for_project(&project.root)
        .resume(&id)
        .unwrap();
    assert_eq!(stored.record.message_count(), 11);
    assert!(
        matches!(
            stored.source,
            robota::session::store::ResumeSource::SnapshotAndLog { turns_replayed: 5 }
        ),
        "{:?}",
        stored.source
    );
    let usage = original.usage();
    drop(original);

    let events = Events::default();
    let resumed = session(saved(&project, &mock, &events).with_resume(&id, false));
    assert_eq!(resumed.messages().len(), 11);
    assert_eq!(resumed.usage().usage, usage.usage);
    resumed.run("turn 5").await.unwrap();
    resumed.shutdown(SessionEndReason::Other).await;
    assert_eq!(snapshot_message_count(&project, &id), 13);
    assert!(events.of("persistence_error").is_empty());
}
