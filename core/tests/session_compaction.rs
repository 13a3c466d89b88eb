//! Compaction in a real session against mock-llm over loopback: automatic compaction at the
//! threshold (small context windows and usage figures in the script), manual compaction with
//! instructions (the summary request as the model received it), a PreCompact hook blocking
//! (bash, exit 2), failed summaries (empty, truncated) with retries and an untouched history,
//! and the `compaction` / `context_update` event figures.
#![cfg(unix)]

mod session_common;

use robota::hooks::CompactTrigger;
use robota::message::Role;
use robota::session::{ContextState, SessionError, SessionEvent};
use robota::tools::ToolRegistry;
use serde_json::{json, Value};
use session_common::*;

const SUMMARY_MARKER: &str = "Summarize the following conversation";

/// The text of every message of request `body`, in order.
fn message_texts(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|m| match &m["content"] {
            Value::String(text) => text.clone(),
            Value::Array(blocks) => blocks
                .iter()
                .filter_map(|b| b["text"].as_str())
                .collect::<Vec<_>>()
                .join(""),
            _ => String::new(),
        })
        .collect()
}

fn is_summary_request(body: &Value) -> bool {
    message_texts(body)
        .first()
        .is_some_and(|t| t.starts_with(SUMMARY_MARKER))
}

fn block_pre_compact(project: &Project) {
    let script = project.write(
        "hooks/block.sh",
        "#!/bin/sh\ncat > /dev/null\necho 'not now: release freeze' >&2\nexit 2\n",
    );
    project.settings(
        ".claude/settings.json",
        json!({"hooks": {"PreCompact": [group(None, vec![command(format!("sh {}", quote(&script.to_string_lossy())))])]}}),
    );
}

#[tokio::test]
async fn auto_compaction_runs_before_the_prompt_at_the_threshold() {
    let project = Project::new();
    let mock = Mock::start(json!({"turns": [
        {"text": "first answer", "usage": {"input_tokens": 880, "output_tokens": 20}},
        {"text": "SUMMARY-ONE", "usage": {"input_tokens": 50, "output_tokens": 5}},
        {"text": "second answer", "usage": {"input_tokens": 120, "output_tokens": 10}}
    ]}))
    .await;
    let events = Events::default();
    let session = session(
        options(&project, &mock, &events)
            .with_tools(ToolRegistry::new())
            .with_context_window(1000),
    );

    session.run("hello there").await.expect("first run");
    let state = session.context_state();
    assert_eq!(
        state,
        ContextState::new(900, 1000, false),
        "exact usage after the turn"
    );

    let outcome = session.run("next question").await.expect("second run");
    assert_eq!(outcome.response, "second answer");

    let bodies = mock.bodies();
    assert_eq!(bodies.len(), 3);
    assert!(is_summary_request(&bodies[1]), "{:?}", bodies[1]);
    assert!(message_texts(&bodies[1])[0].contains("user: hello there"));
    assert!(message_texts(&bodies[1])[0].contains("assistant: first answer"));
    assert!(
        bodies[1]["tools"].as_array().is_none_or(|t| t.is_empty()),
        "no tools in the summary call"
    );
    // The real request carries the summary instead of the old turn.
    let texts = message_texts(&bodies[2]);
    assert!(
        texts.iter().any(|t| t == "[Context Summary]\nSUMMARY-ONE"),
        "{texts:?}"
    );
    assert!(!texts.iter().any(|t| t.contains("first answer")));
    assert_eq!(texts.last().map(String::as_str), Some("next question"));

    let compactions = events.of("compaction");
    assert_eq!(compactions.len(), 1);
    assert_eq!(compactions[0]["trigger"], "auto");
    assert_eq!(compactions[0]["tokens_before"], 900);
    let after = compactions[0]["tokens_after"].as_u64().unwrap();
    assert!(after > 0 && after < 900, "{after}");
    assert_eq!(compactions[0]["summary"], "SUMMARY-ONE");

    // context_update: estimate before each run, exact after each turn.
    let updates = events.of("context_update");
    assert!(updates.len() >= 4, "{updates:?}");
    assert_eq!(updates.last().unwrap()["used_tokens"], 130);
    assert_eq!(updates.last().unwrap()["estimated"], false);
    assert_eq!(updates.last().unwrap()["max_tokens"], 1000);
}

#[tokio::test]
async fn below_the_threshold_or_switched_off_nothing_is_compacted() {
    // 9,000 of 10,000 is over the threshold but leaves room under the engine's 95% hard guard
    // for the next prompt.
    for (usage, auto) in [(8_000, true), (9_000, false)] {
        let project = Project::new();
        let mock = Mock::start(json!({"turns": [
            {"text": "a", "usage": {"input_tokens": usage}},
            {"text": "b"}
        ]}))
        .await;
        let events = Events::default();
        let session = session(
            options(&project, &mock, &events)
                .with_tools(ToolRegistry::new())
                .with_context_window(10_000)
                .with_auto_compact(auto),
        );
        session.run("one").await.unwrap();
        let outcome = session.run("two").await.unwrap();
        assert_eq!(mock.bodies().len(), 2, "{usage}: {outcome:?}");
        assert!(!mock.bodies().iter().any(is_summary_request));
        assert!(events.of("compaction").is_empty());
    }
}

#[tokio::test]
async fn settings_can_turn_auto_compaction_off() {
    let project = Project::new();
    project.settings(
        ".claude/settings.json",
        json!({"autoCompactThreshold": false}),
    );
    let mock = Mock::start(json!({"turns": [
        {"text": "a", "usage": {"input_tokens": 9_000}},
        {"text": "b"}
    ]}))
    .await;
    let events = Events::default();
    let session = session(
        options(&project, &mock, &events)
            .with_tools(ToolRegistry::new())
            .with_context_window(10_000),
    );
    session.run("one").await.unwrap();
    assert_eq!(session.run("two").await.unwrap().response, "b");
    assert!(!mock.bodies().iter().any(is_summary_request));
}

#[tokio::test]
async fn manual_compaction_sends_the_instructions_and_keeps_system_messages() {
    let project = Project::new();
    let mock = Mock::start(json!({"turns": [
        {"text": "edited src/lib.rs", "usage": {"input_tokens": 100, "output_tokens": 10}},
        {"text": "SUMMARY-TWO"},
        {"text": "continuing"}
    ]}))
    .await;
    let events = Events::default();
    let session = session(
        options(&project, &mock, &events)
            .with_tools(ToolRegistry::new())
            .with_system_prompt("PROJECT RULES"),
    );
    session.run("please edit the lib").await.unwrap();

    let result = session
        .compact(Some("keep the file names".into()))
        .await
        .expect("compaction");
    assert_eq!(result.summary, "SUMMARY-TWO");
    assert_eq!(result.tokens_before, 110);

    let bodies = mock.bodies();
    let prompt = &message_texts(&bodies[1])[0];
    assert!(prompt.starts_with(SUMMARY_MARKER));
    assert!(
        prompt.contains("Additional focus:\nkeep the file names"),
        "{prompt}"
    );
    assert!(prompt.contains("user: please edit the lib"));
    assert!(prompt.contains("assistant: edited src/lib.rs"));
    assert!(
        bodies[1].get("system").is_none(),
        "no system prompt in the summary call"
    );

    let messages = session.messages();
    let roles: Vec<Role> = messages.iter().map(|m| m.role).collect();
    assert_eq!(roles, vec![Role::User, Role::Assistant]);
    assert_eq!(messages[1].text(), "[Context Summary]\nSUMMARY-TWO");

    // The system prompt still goes with the next request.
    session.run("go on").await.unwrap();
    let bodies = mock.bodies();
    assert!(bodies[2]["system"].to_string().contains("PROJECT RULES"));
    assert!(message_texts(&bodies[2]).contains(&"[Context Summary]\nSUMMARY-TWO".to_string()));

    let compaction = events.of("compaction");
    assert_eq!(compaction[0]["trigger"], "manual");
    assert_eq!(compaction[0]["tokens_before"], 110);
}

#[tokio::test]
async fn a_pre_compact_hook_exit_2_blocks_manual_compaction() {
    let project = Project::new();
    block_pre_compact(&project);
    let mock = Mock::start(json!({"turns": [{"text": "answer"}]})).await;
    let events = Events::default();
    let session = session(options(&project, &mock, &events).with_tools(ToolRegistry::new()));
    session.run("hi").await.unwrap();
    let before = session.messages();

    let error = session.compact(None).await.expect_err("blocked");
    match error {
        SessionError::CompactionBlocked { reason } => assert!(reason.contains("release freeze")),
        other => panic!("unexpected {other}"),
    }
    assert_eq!(session.messages(), before, "history untouched");
    assert_eq!(mock.bodies().len(), 1, "no summary call");
    let skipped = events.of("compaction_skipped");
    assert_eq!(skipped[0]["trigger"], "manual");
}

#[tokio::test]
async fn a_blocked_auto_compaction_lets_the_run_go_on() {
    let project = Project::new();
    block_pre_compact(&project);
    // A low settings threshold against a large window: compaction is due, the engine's own
    // 95% guard is far away.
    project.settings(
        ".claude/settings.json",
        json!({
            "autoCompactThreshold": 0.005,
            "hooks": {"PreCompact": [group(None, vec![command(format!("sh {}", quote(&project.path("hooks/block.sh").to_string_lossy())))])]}
        }),
    );
    let mock = Mock::start(json!({"turns": [
        {"text": "a", "usage": {"input_tokens": 950}},
        {"text": "b"}
    ]}))
    .await;
    let events = Events::default();
    let session = session(
        options(&project, &mock, &events)
            .with_tools(ToolRegistry::new())
            .with_context_window(100_000),
    );
    session.run("one").await.unwrap();
    let outcome = session.run("two").await.expect("the run goes on");
    assert_eq!(outcome.response, "b");
    assert_eq!(mock.bodies().len(), 2);
    let skipped = events.of("compaction_skipped");
    assert_eq!(skipped.len(), 1);
    assert_eq!(skipped[0]["trigger"], "auto");
    assert_eq!(session.messages().len(), 4);
}

#[tokio::test]
async fn an_incomplete_summary_is_retried_then_fails_with_the_history_untouched() {
    let project = Project::new();
    let mock = Mock::start(json!({"turns": [
        {"text": "answer"},
        {"usage": {"input_tokens": 5}},
        {"text": "half a summ", "stop_reason": "max_tokens"},
        {"text": "   "}
    ]}))
    .await;
    let events = Events::default();
    let session = session(options(&project, &mock, &events).with_tools(ToolRegistry::new()));
    session.run("hi").await.unwrap();
    let before = session.conversation();

    match session.compact(None).await {
        Err(SessionError::CompactionFailed { attempts, message }) => {
            assert_eq!(attempts, 3);
            assert!(message.contains("empty"), "{message}");
        }
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!(session.conversation(), before);
    let bodies = mock.bodies();
    assert_eq!(bodies.len(), 4);
    assert!(bodies[1..].iter().all(is_summary_request));
    assert!(events.of("compaction").is_empty());
    assert_eq!(events.of("compaction_skipped").len(), 1);
    // The session is still usable.
    assert!(matches!(
        session.compact(None).await,
        Err(SessionError::CompactionFailed { .. })
    ));
}

#[tokio::test]
async fn compaction_events_are_typed() {
    let event = SessionEvent::Compaction {
        trigger: CompactTrigger::Auto,
        tokens_before: 10,
        tokens_after: 2,
        summary: "s".into(),
    };
    let json = serde_json::to_value(&event).unwrap();
    assert_eq!(json["type"], "compaction");
    assert_eq!(json["trigger"], "auto");
}

#[tokio::test]
async fn an_abort_during_compaction_leaves_the_history_untouched() {
    let project = Project::new();
    let mock = Mock::start(json!({"turns": [
        {"text": "answer"},
        {"text": ["slow ", "summary ", "that ", "never ", "ends"], "chunk_delay_ms": 400}
    ]}))
    .await;
    let events = Events::default();
    let session = session(options(&project, &mock, &events).with_tools(ToolRegistry::new()));
    session.run("hi").await.unwrap();
    let before = session.conversation();

    let (result, ()) = tokio::join!(session.compact(None), async {
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        session.abort();
    });
    assert!(
        matches!(result, Err(SessionError::CompactionAborted)),
        "{result:?}"
    );
    assert_eq!(session.conversation(), before);
    assert!(events.of("compaction").is_empty());
    assert!(!session.is_running());
}

/// PreCompact and PostCompact hooks (a real Python script) get Claude Code's fields: the trigger,
/// the `/compact` instructions, and afterwards the summary.
#[tokio::test]
async fn pre_and_post_compact_hooks_get_their_fields() {
    let project = Project::new();
    let log = project.scratch("log").join("compact.jsonl");
    let log_s = log.to_string_lossy().to_string();
    let record = || command(fixture("record.py", &[&log_s]));
    project.settings(
        ".claude/settings.json",
        json!({"hooks": {
            "PreCompact": [group(Some("manual"), vec![record()])],
            "PostCompact": [group(None, vec![record()])],
        }}),
    );
    let mock = Mock::start(json!({"turns": [
        {"text": "an answer"},
        {"text": "THE-SUMMARY"}
    ]}))
    .await;
    let session =
        session(options(&project, &mock, &Events::default()).with_tools(ToolRegistry::new()));
    session.run("hello").await.expect("run");
    session
        .compact(Some("keep the API names".into()))
        .await
        .expect("compaction");
    let records = records(&log);
    let pre: Vec<&Value> = records
        .iter()
        .filter(|r| r["hook_event_name"] == "PreCompact")
        .collect();
    let post: Vec<&Value> = records
        .iter()
        .filter(|r| r["hook_event_name"] == "PostCompact")
        .collect();
    assert_eq!((pre.len(), post.len()), (1, 1), "{records:#?}");
    assert_eq!(pre[0]["trigger"], "manual");
    assert_eq!(pre[0]["custom_instructions"], "keep the API names");
    assert_eq!(post[0]["trigger"], "manual");
    assert_eq!(post[0]["compact_summary"], "THE-SUMMARY");
    assert_eq!(post[0]["session_id"], session.session_id());
}

#[tokio::test]
async fn context_auto_changes_the_live_policy_and_saves_it_in_local_settings() {
    use robota::framework::interactive::{InteractiveSession, InteractiveSessionOptions};
    let project = Project::new();
    project.settings(
        ".claude/settings.json",
        json!({"autoCompactThreshold": false}),
    );
    let mock = Mock::start(json!({"turns": [
        {"text": "a", "usage": {"input_tokens": 8_500}},
        {"text": "SUMMARY-TWO", "usage": {"input_tokens": 50, "output_tokens": 5}},
        {"text": "b"}
    ]}))
    .await;
    let events = Events::default();
    let open = || {
        InteractiveSession::new(InteractiveSessionOptions::new(
            options(&project, &mock, &events)
                .with_tools(ToolRegistry::new())
                .with_context_window(10_000),
        ))
        .expect("session")
    };
    let session = open();
    let shown = session.execute_command("context", "auto").await.unwrap();
    assert!(shown.message.contains("off"), "{}", shown.message);
    assert_eq!(shown.data.as_ref().unwrap()["enabled"], false);
    for bad in ["0", "150", "-5", "x", "NaN", "inf", "on off"] {
        let result = session
            .execute_command("context", &format!("auto {bad}"))
            .await
            .unwrap();
        assert!(!result.success, "{bad}: {result:?}");
    }
    assert_eq!(session.session().auto_compact_threshold(), None);

    let set = session
        .execute_command("context", "auto 80%")
        .await
        .unwrap();
    assert!(set.success, "{set:?}");
    let data = set.data.unwrap();
    assert_eq!(data["threshold"], 0.8);
    let saved = std::path::PathBuf::from(data["saved_to"].as_str().expect("saved"));
    assert!(saved.starts_with(&project.root), "{}", saved.display());
    let file: Value = serde_json::from_str(&std::fs::read_to_string(&saved).unwrap()).unwrap();
    assert_eq!(file["autoCompactThreshold"], 0.8);
    assert_eq!(session.session().auto_compact_threshold(), Some(0.8));

    // Live: 85% after the first prompt is over the new 80% threshold, so the second compacts.
    let sub = session.subscribe_pull();
    session.submit("one", None, None).await.unwrap();
    until(&sub, "complete").await;
    session.submit("two", None, None).await.unwrap();
    until(&sub, "complete").await;
    let bodies = mock.bodies();
    assert_eq!(bodies.len(), 3, "{bodies:#?}");
    assert!(is_summary_request(&bodies[1]), "{:?}", bodies[1]);
    assert_eq!(events.of("compaction").len(), 1);

    // Saved: a new session of the project starts with it (local settings outrank the project's
    // `false`); `off` is saved as `false`.
    session
        .shutdown(robota::hooks::SessionEndReason::Other)
        .await;
    let again = open();
    assert_eq!(again.session().auto_compact_threshold(), Some(0.8));
    let off = again.execute_command("context", "auto off").await.unwrap();
    assert!(off.success, "{off:?}");
    assert_eq!(again.session().auto_compact_threshold(), None);
    let file: Value = serde_json::from_str(&std::fs::read_to_string(&saved).unwrap()).unwrap();
    assert_eq!(file["autoCompactThreshold"], false);
    let on = again.execute_command("context", "auto on").await.unwrap();
    assert!(on.message.contains("80.0%"), "{}", on.message);
}
