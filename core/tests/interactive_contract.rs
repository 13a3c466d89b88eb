//! The `InteractiveSession` contract of spec 000 against mock-llm over loopback: per-tool
//! `tool-start` / `tool-end` history entries, what `complete` and `interrupted` carry (response,
//! the prompt's history entries, tool summaries, context state, usage), `submit`'s `raw_input`
//! reaching UserPromptSubmit hooks as `prompt`, and a failed model call leaving a readable
//! `error` entry in the history (spec 001 "Provider Error Recovery").
#![cfg(unix)]

mod session_common;

use std::sync::Arc;

use robota::framework::interactive::{
    InteractiveEventKind, InteractiveSession, InteractiveSessionOptions, PromptResult,
};
use robota::message::HistoryEntry;
use robota::session::PermissionResponse;
use serde_json::{json, Value};
use session_common::*;

fn interactive(options: robota::session::SessionOptions) -> Arc<InteractiveSession> {
    InteractiveSession::new(InteractiveSessionOptions::new(options))
        .unwrap_or_else(|e| panic!("session: {e}"))
}

/// The `type`s of the event entries, in history order.
fn event_types(history: &[HistoryEntry]) -> Vec<String> {
    history
        .iter()
        .filter_map(|e| match e {
            HistoryEntry::Event { event_type, .. } => Some(event_type.clone()),
            HistoryEntry::Chat { .. } => None,
        })
        .collect()
}

fn event_data<'a>(history: &'a [HistoryEntry], wanted: &str) -> Vec<&'a Value> {
    history
        .iter()
        .filter_map(|e| match e {
            HistoryEntry::Event {
                event_type, data, ..
            } if event_type == wanted => Some(data),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn complete_carries_the_prompts_history_tools_context_and_usage() {
    let project = Project::new();
    project.write("notes.txt", "alpha\n");
    let mock = Mock::start(json!({"turns": [
        {"tool_calls": [
            {"id": "toolu_read", "name": "Read", "input": {"file_path": "notes.txt"}},
            {"id": "toolu_bash", "name": "Bash", "input": {"command": "touch made.txt"}}
        ]},
        {"text": "read it", "usage": {"input_tokens": 120, "output_tokens": 9}},
        {"text": "second answer", "usage": {"input_tokens": 150, "output_tokens": 3}},
    ]}))
    .await;
    let events = Events::default();
    let handler = Handler::default();
    let session = interactive(options(&project, &mock, &events).with_permission_handler(
        handler.answering(vec![PermissionResponse::Deny {
            message: String::new(),
        }]),
    ));
    let sub = session.subscribe_pull();
    let first = session
        .submit_tracked("look at notes", None)
        .await
        .expect("submit")
        .result()
        .await;
    let seen = until(&sub, "complete").await;
    let InteractiveEventKind::Complete { outcome, report } = &seen.last().expect("event").kind
    else {
        panic!("{seen:#?}");
    };
    assert_eq!(Some(report), first.report(), "ticket and event agree");
    assert_eq!(outcome.response, "read it");
    assert_eq!(report.response, "read it");

    // The prompt's own entries, from its user message to the summaries.
    let first_entry = report.history.first().and_then(HistoryEntry::message);
    assert_eq!(
        first_entry.map(|m| m.text()).as_deref(),
        Some("look at notes")
    );
    let types = event_types(&report.history);
    assert_eq!(
        types,
        [
            "tool-start",
            "tool-end",
            "tool-start",
            "tool-end",
            "tool-summary",
            "usage-summary"
        ],
        "{:#?}",
        report.history
    );
    let ends = event_data(&report.history, "tool-end");
    assert_eq!(ends[0]["name"], "Read");
    assert_eq!(ends[0]["first_arg"], "notes.txt");
    assert_eq!(ends[0]["is_running"], false);
    assert_eq!(ends[0]["result"], "success");
    assert!(ends[0]["tool_result_data"]
        .as_str()
        .is_some_and(|d| d.contains("alpha")));
    assert_eq!(ends[1]["name"], "Bash");
    assert_eq!(ends[1]["result"], "denied", "the handler denied Bash");
    let starts = event_data(&report.history, "tool-start");
    assert_eq!(starts[1]["first_arg"], "touch made.txt");
    assert_eq!(starts[1]["is_running"], true);

    assert_eq!(report.tool_summaries.len(), 2);
    assert_eq!(report.tool_summaries[0].name, "Read");
    assert!(report.context_state.used_tokens > 0);
    assert_eq!(report.context_state, session.get_context_state());
    let usage = report.usage.as_ref().expect("mock-llm reports usage");
    assert_eq!(usage.kind, "exact");
    assert_eq!(usage.scope, "turn");
    assert_eq!(
        usage.total_tokens,
        usage.prompt_tokens + usage.completion_tokens
    );
    assert_eq!(
        usage.total_tokens,
        outcome.usage.input_tokens + outcome.usage.output_tokens
    );

    // Serialized for hosts: the spec's fields beside `outcome`.
    let json = serde_json::to_value(&seen.last().expect("event").kind).expect("json");
    for field in [
        "response",
        "history",
        "tool_summaries",
        "context_state",
        "usage",
    ] {
        assert!(json.get(field).is_some(), "{field} missing: {json}");
    }
    assert!(json.get("outcome").is_some());

    // The next prompt's report holds only its own entries.
    let second = session
        .submit_tracked("again", None)
        .await
        .expect("submit")
        .result()
        .await;
    let report = second.report().expect("complete");
    assert_eq!(report.response, "second answer");
    assert_eq!(
        report
            .history
            .first()
            .and_then(HistoryEntry::message)
            .map(|m| m.text())
            .as_deref(),
        Some("again")
    );
    assert!(report.tool_summaries.is_empty());
    assert_eq!(event_types(&report.history), ["usage-summary"]);
    // And the full history keeps every entry, in order.
    let full = session.get_full_history();
    assert_eq!(
        event_types(&full)
            .iter()
            .filter(|t| *t == "tool-end")
            .count(),
        2
    );
    mock.mock.shutdown().await;
}

#[tokio::test]
async fn interrupted_carries_what_streamed_and_the_tools_so_far() {
    let project = Project::new();
    let chunks: Vec<String> = (0..60).map(|i| format!("c{i} ")).collect();
    let mock = Mock::start(json!({"turns": [
        {"tool_calls": [{"id": "toolu_glob", "name": "Glob", "input": {"pattern": "*.md"}}]},
        {"text": chunks, "chunk_delay_ms": 40},
    ]}))
    .await;
    let events = Events::default();
    let session = interactive(options(&project, &mock, &events));
    let sub = session.subscribe_pull();
    let ticket = session.submit_tracked("go", None).await.expect("submit");
    until(&sub, "text_delta").await;
    for _ in 0..200 {
        if session.get_streaming_text().contains("c1 ") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    session.abort();
    let result = ticket.result().await;
    let PromptResult::Interrupted { outcome, report } = &result else {
        panic!("{result:?}");
    };
    assert!(outcome.is_some());
    assert!(report.response.contains("c0 c1 "), "{report:?}");
    assert_eq!(report.tool_summaries.len(), 1);
    assert_eq!(report.tool_summaries[0].name, "Glob");
    assert_eq!(
        event_types(&report.history),
        ["tool-start", "tool-end"],
        "{:#?}",
        report.history
    );
    let seen = until(&sub, "interrupted").await;
    let json = serde_json::to_value(&seen.last().expect("event").kind).expect("json");
    assert_eq!(json["tool_summaries"][0]["name"], "Glob");
    assert!(json["history"].as_array().is_some_and(|h| !h.is_empty()));
    mock.mock.shutdown().await;
}

#[tokio::test]
async fn raw_input_reaches_user_prompt_submit_hooks_as_prompt() {
    let project = Project::new();
    let log = project.scratch("log").join("events.jsonl");
    let log_s = log.to_string_lossy().to_string();
    project.settings(
        ".claude/settings.json",
        json!({"hooks": {"UserPromptSubmit": [group(None, vec![command(fixture("record.py", &[&log_s]))])]}}),
    );
    let mock = Mock::start(json!({"turns": [text_turn("one"), text_turn("two")]})).await;
    let events = Events::default();
    let session = interactive(options(&project, &mock, &events));
    session
        .submit(
            "Review the staged changes for bugs and style.",
            Some("/audit"),
            Some("/audit staged"),
        )
        .await
        .expect("submit");
    session.wait_idle().await;
    session
        .submit("plain prompt", None, None)
        .await
        .expect("submit");
    session.wait_idle().await;
    let prompts: Vec<Value> = records(&log)
        .into_iter()
        .filter(|r| r["hook_event_name"] == "UserPromptSubmit")
        .map(|r| r["prompt"].clone())
        .collect();
    assert_eq!(prompts, [json!("/audit staged"), json!("plain prompt")]);
    // The model and the history get the built prompt.
    assert_eq!(
        mock.user_texts(0).last().map(String::as_str),
        Some("Review the staged changes for bugs and style.")
    );
    let first_user = session
        .get_messages()
        .into_iter()
        .next()
        .expect("user message");
    assert_eq!(
        first_user.text(),
        "Review the staged changes for bugs and style."
    );
    mock.mock.shutdown().await;
}

#[tokio::test]
async fn a_failed_model_call_leaves_a_readable_error_entry_in_the_history() {
    let project = Project::new();
    let mock = Mock::start(json!({"turns": [
        {"fault": {"kind": "status", "status": 400,
                   "message": "prompt is too long: 210000 tokens > 200000 maximum"}},
        text_turn("recovered"),
    ]}))
    .await;
    let events = Events::default();
    let session = interactive(options(&project, &mock, &events));
    let result = session
        .submit_tracked("a very long prompt", None)
        .await
        .expect("submit")
        .result()
        .await;
    let PromptResult::Error { message, .. } = &result else {
        panic!("{result:?}");
    };
    let history = session.get_full_history();
    let errors = event_data(&history, "error");
    assert_eq!(errors.len(), 1, "{history:#?}");
    assert_eq!(errors[0]["message"], json!(message));
    assert!(
        errors[0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("prompt is too long")),
        "{errors:?}"
    );
    assert!(errors[0]["error"]["kind"].is_string(), "{errors:?}");
    // The entry is for people: the next request does not carry it.
    let next = session
        .submit_tracked("shorter", None)
        .await
        .expect("submit")
        .result()
        .await;
    assert!(matches!(next, PromptResult::Complete { .. }), "{next:?}");
    let bodies = mock.bodies();
    let last = bodies.last().expect("request").to_string();
    assert!(!last.contains("prompt is too long"), "{last}");
    mock.mock.shutdown().await;
}

#[tokio::test]
async fn the_model_command_switches_the_running_sessions_model() {
    let project = Project::new();
    let mock = Mock::start(json!({"turns": [
        text_turn("first"),
        text_turn("second"),
        text_turn("third"),
    ]}))
    .await;
    let events = Events::default();
    let session = interactive(options(&project, &mock, &events));
    let listing = session.execute_command("model", "").await.expect("model");
    assert!(listing.success);
    assert!(listing.message.contains("Current model: claude-sonnet-4-5"));
    assert!(
        listing
            .message
            .contains("claude-opus-4-6 (1000000 tokens; $5/$25)"),
        "{}",
        listing.message
    );
    let known = listing.data.as_ref().expect("data")["known"].clone();
    assert!(known
        .as_array()
        .is_some_and(|k| k.iter().any(|m| m["id"] == "claude-haiku-4-5")));
    // The listing is the model catalog's: prices and output limits come with it.
    let haiku = known
        .as_array()
        .and_then(|k| k.iter().find(|m| m["id"] == "claude-haiku-4-5").cloned())
        .unwrap_or_default();
    assert_eq!(haiku["max_output"], 64_000);
    assert_eq!(haiku["price"]["input_per_mtok"], 1.0);

    session.submit("one", None, None).await.expect("submit");
    session.wait_idle().await;
    let switched = session
        .execute_command("model", "claude-opus-4-6")
        .await
        .expect("switch");
    assert!(switched.success, "{}", switched.message);
    assert!(
        switched.message.contains("context window 1000000"),
        "{}",
        switched.message
    );
    assert_eq!(
        switched.effects,
        [
            robota::framework::commands::CommandEffect::ModelChangeRequested {
                model_id: "claude-opus-4-6".into()
            }
        ]
    );
    assert_eq!(session.session().current_model(), "claude-opus-4-6");
    assert_eq!(session.get_context_state().max_tokens, 1_000_000);
    session.submit("two", None, None).await.expect("submit");
    session.wait_idle().await;

    // An id robota does not list is used too, with a warning.
    let unlisted = session
        .execute_command("model", "claude-experimental-9")
        .await
        .expect("switch");
    assert!(unlisted.success, "{}", unlisted.message);
    assert!(unlisted.message.contains("Warning"), "{}", unlisted.message);
    session.submit("three", None, None).await.expect("submit");
    session.wait_idle().await;

    let models: Vec<Value> = mock.bodies().iter().map(|b| b["model"].clone()).collect();
    assert_eq!(
        models,
        [
            json!("claude-sonnet-4-5"),
            json!("claude-opus-4-6"),
            json!("claude-experimental-9")
        ]
    );
    mock.mock.shutdown().await;
}
