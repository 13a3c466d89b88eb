//! `InteractiveSession` against the scripted provider: event order and `seq`, the one-prompt
//! queue, abort during text / a tool / a permission wait, several subscribers, text coalescing
//! for a slow subscriber, unsubscribing, commands and their effects, a projected command tool
//! called by the model (including `compact`, scheduled for the end of the turn), the history's
//! summary entries, and queueing / abort against `mock-llm` over loopback.
#![cfg(unix)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use robota::framework::commands::{
    CommandDescriptor, CommandEffect, CommandHostContext, CommandModule, CommandResult,
    CommandSource, SystemCommand,
};
use robota::framework::interactive::{
    InteractiveError, InteractiveEvent, InteractiveEventKind, InteractiveSession,
    InteractiveSessionOptions, PromptResult, SubmitStatus, Subscription, ToolResultKind,
};
use robota::permissions::PermissionMode;
use robota::provider::scripted::{ScriptedProvider, ScriptedTurn};
use robota::session::{FnPermissionHandler, PermissionResponse, SessionOptions, SessionSettings};
use serde_json::json;

const WAIT: Duration = Duration::from_secs(10);

fn options(dir: &tempfile::TempDir, turns: Vec<ScriptedTurn>) -> InteractiveSessionOptions {
    let session = SessionOptions::new(dir.path(), Arc::new(ScriptedProvider::new(turns)))
        .with_settings(SessionSettings::None)
        .with_project_context(false);
    InteractiveSessionOptions::new(session)
}

fn start(options: InteractiveSessionOptions) -> Arc<InteractiveSession> {
    InteractiveSession::new(options).expect("session")
}

/// The serialized `type` of `event`, checked against `InteractiveEventKind::type_name` (which
/// hosts such as the C ABI use instead of serializing).
fn type_of(event: &InteractiveEvent) -> String {
    let serialized = serde_json::to_value(event).expect("json")["type"]
        .as_str()
        .unwrap_or("")
        .to_string();
    assert_eq!(serialized, event.kind.type_name(), "{event:?}");
    serialized
}

/// Events until one of type `until` (inclusive).
async fn until(sub: &Subscription, until: &str) -> Vec<InteractiveEvent> {
    let mut events = Vec::new();
    loop {
        let event = sub.next_event(WAIT).await.expect("event before timeout");
        let done = type_of(&event) == until;
        events.push(event);
        if done {
            return events;
        }
    }
}

fn text_of(events: &[InteractiveEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            InteractiveEventKind::TextDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn events_are_ordered_with_session_id_and_increasing_seq() {
    let dir = tempfile::tempdir().expect("tempdir");
    let session = start(options(
        &dir,
        vec![ScriptedTurn::chunks(["Hel", "lo"]).with_usage(10, 2)],
    ));
    let sub = session.subscribe_pull();
    assert_eq!(
        session.submit("hi", None, None).await.expect("submit"),
        SubmitStatus::Started
    );
    let events = until(&sub, "complete").await;
    let id = session.get_session_id();
    assert!(events.iter().all(|e| e.session_id == id));
    assert!(events.windows(2).all(|w| w[0].seq < w[1].seq), "{events:?}");
    assert_eq!(text_of(&events), "Hello");
    let types: Vec<String> = events.iter().map(type_of).collect();
    let first_text = types.iter().position(|t| t == "text_delta").expect("text");
    assert!(first_text < types.len() - 1);
    assert_eq!(types.last().map(String::as_str), Some("complete"));
    match &events.last().expect("complete").kind {
        InteractiveEventKind::Complete { outcome, .. } => assert_eq!(outcome.response, "Hello"),
        other => panic!("{other:?}"),
    }
    session.wait_idle().await;
    assert_eq!(session.get_streaming_text(), "Hello");
    let json = serde_json::to_value(&events[0]).expect("json");
    assert!(json.get("seq").is_some() && json.get("session_id").is_some());
    // usage-summary lands in the full history after the turn.
    let history = serde_json::to_value(session.get_full_history()).expect("json");
    assert!(history.to_string().contains("usage-summary"), "{history}");
    assert_eq!(session.get_messages().len(), 2);
}

#[tokio::test]
async fn second_prompt_is_queued_and_third_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let session = start(options(
        &dir,
        vec![
            ScriptedTurn::chunks(["one", " more"]).with_delay_ms(100),
            ScriptedTurn::text("two"),
        ],
    ));
    let sub = session.subscribe_pull();
    assert_eq!(
        session.submit("first", None, None).await.expect("first"),
        SubmitStatus::Started
    );
    assert_eq!(
        session
            .submit("second", Some("/second"), None)
            .await
            .expect("second"),
        SubmitStatus::Queued
    );
    assert_eq!(session.get_pending_prompt().as_deref(), Some("/second"));
    assert!(matches!(
        session.submit("third", None, None).await,
        Err(InteractiveError::QueueFull)
    ));
    let first = until(&sub, "complete").await;
    assert_eq!(text_of(&first), "one more");
    let second = until(&sub, "complete").await;
    assert_eq!(text_of(&second), "two");
    session.wait_idle().await;
    assert!(!session.is_executing());
    assert_eq!(session.get_messages().len(), 4);
}

#[tokio::test]
async fn cancel_queue_drops_the_waiting_prompt_only() {
    let dir = tempfile::tempdir().expect("tempdir");
    let session = start(options(
        &dir,
        vec![
            ScriptedTurn::chunks(["a", "b"]).with_delay_ms(100),
            ScriptedTurn::text("never"),
        ],
    ));
    let sub = session.subscribe_pull();
    session.submit("first", None, None).await.expect("first");
    session.submit("second", None, None).await.expect("second");
    assert_eq!(session.cancel_queue().as_deref(), Some("second"));
    assert_eq!(session.get_pending_prompt(), None);
    let events = until(&sub, "complete").await;
    assert_eq!(text_of(&events), "ab");
    session.wait_idle().await;
    assert_eq!(session.get_messages().len(), 2);
    assert!(sub.try_next_event().is_none());
}

#[tokio::test]
async fn abort_during_text_interrupts_and_clears_the_queue() {
    let dir = tempfile::tempdir().expect("tempdir");
    let chunks: Vec<String> = (0..50).map(|i| format!("c{i} ")).collect();
    let session = start(options(
        &dir,
        vec![
            ScriptedTurn::chunks(chunks).with_delay_ms(50),
            ScriptedTurn::text("never"),
        ],
    ));
    let sub = session.subscribe_pull();
    session.submit("first", None, None).await.expect("first");
    session.submit("second", None, None).await.expect("second");
    until(&sub, "text_delta").await;
    session.abort();
    assert_eq!(session.get_pending_prompt(), None);
    let events = until(&sub, "interrupted").await;
    assert!(!events.iter().any(|e| type_of(e) == "complete"));
    session.wait_idle().await;
    assert!(!session.is_executing());
}

#[tokio::test]
async fn abort_during_a_tool_interrupts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut options = options(
        &dir,
        vec![
            ScriptedTurn::tool_call("t1", "Bash", json!({"command": "sleep 5"})),
            ScriptedTurn::text("never"),
        ],
    );
    options.session = options
        .session
        .with_permission_mode(PermissionMode::BypassPermissions);
    let session = start(options);
    let sub = session.subscribe_pull();
    session.submit("run it", None, None).await.expect("submit");
    let started = until(&sub, "tool_start").await;
    match &started.last().expect("tool_start").kind {
        InteractiveEventKind::ToolStart { tool } => {
            assert_eq!(tool.name, "Bash");
            assert_eq!(tool.first_arg, "sleep 5");
            assert!(tool.is_running);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(session.get_active_tools().len(), 1);
    let begun = std::time::Instant::now();
    session.abort();
    until(&sub, "interrupted").await;
    assert!(begun.elapsed() < Duration::from_secs(4));
    session.wait_idle().await;
}

#[tokio::test]
async fn abort_during_a_permission_wait_interrupts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut options = options(
        &dir,
        vec![
            ScriptedTurn::tool_call("t1", "Bash", json!({"command": "touch x"})),
            ScriptedTurn::text("never"),
        ],
    );
    // A host that never answers; only the abort can end the wait.
    options.session = options
        .session
        .with_permission_handler(FnPermissionHandler::new(|_request, cancel| async move {
            cancel.cancelled().await;
            PermissionResponse::deny("cancelled")
        }));
    let session = start(options);
    let sub = session.subscribe_pull();
    session.submit("touch", None, None).await.expect("submit");
    until(&sub, "permission_request").await;
    session.abort();
    until(&sub, "interrupted").await;
    session.wait_idle().await;
    assert!(!dir.path().join("x").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_subscriber_gets_every_event() {
    let dir = tempfile::tempdir().expect("tempdir");
    let session = start(options(
        &dir,
        vec![ScriptedTurn::chunks(["a", "b", "c"]).with_usage(3, 3)],
    ));
    let first: Arc<Mutex<Vec<InteractiveEvent>>> = Arc::default();
    let second: Arc<Mutex<Vec<InteractiveEvent>>> = Arc::default();
    let (f, s) = (Arc::clone(&first), Arc::clone(&second));
    let _h1 = session.subscribe(move |e| f.lock().expect("lock").push(e));
    let _h2 = session.subscribe(move |e| s.lock().expect("lock").push(e));
    let sub = session.subscribe_pull();
    session.submit("go", None, None).await.expect("submit");
    until(&sub, "complete").await;
    session.wait_idle().await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let first = first.lock().expect("lock").clone();
    let second = second.lock().expect("lock").clone();
    assert!(!first.is_empty());
    assert_eq!(first, second);
    assert_eq!(text_of(&first), "abc");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_subscriber_gets_coalesced_text_but_every_other_event() {
    let dir = tempfile::tempdir().expect("tempdir");
    let chunks: Vec<String> = (0..60).map(|i| format!("{i},")).collect();
    let expected: String = chunks.concat();
    let mut options = options(&dir, vec![ScriptedTurn::chunks(chunks).with_usage(5, 5)]);
    options.event_buffer = 2;
    let session = start(options);
    let slow: Arc<Mutex<Vec<InteractiveEvent>>> = Arc::default();
    let s = Arc::clone(&slow);
    let _handle = session.subscribe(move |e| {
        // A host that takes its time with every event.
        std::thread::sleep(Duration::from_millis(20));
        s.lock().expect("lock").push(e);
    });
    let fast = session.subscribe_pull();
    session.submit("go", None, None).await.expect("submit");
    let fast_events = until(&fast, "complete").await;
    session.wait_idle().await;
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let done = slow
            .lock()
            .expect("lock")
            .iter()
            .any(|e| type_of(e) == "complete");
        if done || std::time::Instant::now() > deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let slow = slow.lock().expect("lock").clone();
    assert_eq!(text_of(&slow), expected);
    let deltas = slow.iter().filter(|e| type_of(e) == "text_delta").count();
    assert!(deltas < 60, "text deltas were coalesced: {deltas}");
    let others = |events: &[InteractiveEvent]| -> Vec<u64> {
        events
            .iter()
            .filter(|e| type_of(e) != "text_delta")
            .map(|e| e.seq)
            .collect()
    };
    assert_eq!(others(&slow), others(&fast_events));
    assert!(slow.windows(2).all(|w| w[0].seq < w[1].seq));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unsubscribed_callbacks_get_nothing_more() {
    let dir = tempfile::tempdir().expect("tempdir");
    let session = start(options(
        &dir,
        vec![ScriptedTurn::text("one"), ScriptedTurn::text("two")],
    ));
    let seen: Arc<Mutex<usize>> = Arc::default();
    let s = Arc::clone(&seen);
    let handle = session.subscribe(move |_| *s.lock().expect("lock") += 1);
    let sub = session.subscribe_pull();
    session.submit("1", None, None).await.expect("submit");
    until(&sub, "complete").await;
    session.wait_idle().await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let before = *seen.lock().expect("lock");
    assert!(before > 0);
    handle.unsubscribe();
    session.submit("2", None, None).await.expect("submit");
    until(&sub, "complete").await;
    session.wait_idle().await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(*seen.lock().expect("lock"), before);
    drop(handle);
    sub.unsubscribe();
    assert!(sub.next_event(Duration::from_millis(10)).await.is_none());
}

#[tokio::test]
async fn commands_apply_their_effects() {
    let dir = tempfile::tempdir().expect("tempdir");
    let session = start(options(&dir, vec![ScriptedTurn::text("hello")]));
    let sub = session.subscribe_pull();
    session.submit("hi", None, None).await.expect("submit");
    until(&sub, "complete").await;
    session.wait_idle().await;
    assert_eq!(session.get_messages().len(), 2);

    let names: Vec<String> = session
        .list_commands()
        .expect("commands")
        .into_iter()
        .map(|c| c.name)
        .collect();
    for name in ["help", "clear", "compact", "permissions", "rename"] {
        assert!(names.iter().any(|n| n == name), "{name} in {names:?}");
    }

    // The command facade reports the session's real model and compaction threshold.
    let model = session.execute_command("model", "").await.expect("model");
    assert_eq!(model.message, "Current model: scripted", "{model:?}");
    let context = session
        .execute_command("context", "")
        .await
        .expect("context");
    assert!(context.success, "{context:?}");
    assert!(
        context.message.contains("Auto compact: 83.5%"),
        "the default 83.5% auto-compact threshold is shown: {}",
        context.message
    );

    let renamed = session
        .execute_command("rename", "my work")
        .await
        .expect("rename");
    assert!(renamed.success, "{renamed:?}");
    assert!(session.get_name().is_some());

    let plan = session
        .execute_command("permissions", "plan")
        .await
        .expect("permissions");
    assert!(plan.success, "{plan:?}");
    assert_eq!(session.session().permission_mode(), PermissionMode::Plan);

    let ask = session.execute_command("clear", "").await.expect("clear");
    let interaction = ask.interaction.expect("clear asks first");
    let cleared = session
        .execute_command(&interaction.command, &interaction.answer_args("yes"))
        .await
        .expect("clear yes");
    assert!(cleared
        .effects
        .contains(&CommandEffect::ConversationHistoryCleared));
    let left = serde_json::to_string(&session.get_messages()).expect("json");
    assert!(session.get_messages().is_empty(), "{left}");

    match session.execute_command("nope", "").await {
        Err(InteractiveError::Command(e)) => assert!(e.to_string().contains("nope")),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn file_references_go_to_the_model_and_the_history_keeps_the_prompt() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("notes.md"), "secret plan").expect("write");
    let provider = Arc::new(ScriptedProvider::new(vec![ScriptedTurn::text("ok")]));
    let session = SessionOptions::new(dir.path(), provider.clone())
        .with_settings(SessionSettings::None)
        .with_project_context(false);
    let session = start(InteractiveSessionOptions::new(session));
    let sub = session.subscribe_pull();
    session
        .submit("read @notes.md", None, None)
        .await
        .expect("submit");
    until(&sub, "complete").await;
    session.wait_idle().await;
    let sent = serde_json::to_string(&provider.requests()).expect("json");
    assert!(sent.contains("secret plan"), "{sent}");
    assert_eq!(session.get_messages()[0].text(), "read @notes.md");
}

#[tokio::test]
async fn file_reference_errors_reject_the_prompt() {
    let dir = tempfile::tempdir().expect("tempdir");
    let session = start(options(&dir, vec![ScriptedTurn::text("never")]));
    let sub = session.subscribe_pull();
    let result = session.submit("look at @./missing.txt", None, None).await;
    assert!(
        matches!(result, Err(InteractiveError::FileReferences(_))),
        "{result:?}"
    );
    let events = until(&sub, "error").await;
    assert_eq!(events.len(), 1);
    assert!(!session.is_executing());
}

/// A model-invocable command for the projection test.
struct Ping {
    descriptor: CommandDescriptor,
}

#[async_trait]
impl SystemCommand for Ping {
    fn descriptor(&self) -> &CommandDescriptor {
        &self.descriptor
    }

    async fn execute(&self, ctx: &dyn CommandHostContext, args: &str) -> CommandResult {
        CommandResult::ok(format!("pong {args} from {}", ctx.session_id()))
    }
}

#[tokio::test]
async fn the_model_can_call_a_projected_command_tool() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut options = options(
        &dir,
        vec![
            ScriptedTurn::tool_call("t1", "robota_command_ping", json!({"args": "x"})),
            ScriptedTurn::text("done"),
        ],
    );
    options.command_modules.push(
        CommandModule::new("test-ping", CommandSource::Builtin).with_command(Arc::new(Ping {
            descriptor: CommandDescriptor::new("ping", "Answers pong").model_invocable(),
        })),
    );
    options.session = options
        .session
        .with_permission_mode(PermissionMode::BypassPermissions);
    let session = start(options);
    let tools = session.session().tool_names();
    assert!(
        tools.iter().any(|t| t == "robota_command_ping"),
        "{tools:?}"
    );
    assert!(tools.iter().any(|t| t == "robota_command_compact"));
    let sub = session.subscribe_pull();
    session.submit("ping it", None, None).await.expect("submit");
    let events = until(&sub, "complete").await;
    let end = events
        .iter()
        .find_map(|e| match &e.kind {
            InteractiveEventKind::ToolEnd { tool } => Some(tool.clone()),
            _ => None,
        })
        .expect("tool_end");
    assert_eq!(end.result, Some(ToolResultKind::Success));
    let expected = format!("pong x from {}", session.get_session_id());
    assert_eq!(end.tool_result_data.as_deref(), Some(expected.as_str()));
    session.wait_idle().await;
    let history = serde_json::to_value(session.get_full_history()).expect("json");
    assert!(history.to_string().contains("tool-summary"), "{history}");
}

#[tokio::test]
async fn the_model_can_schedule_a_compaction_for_the_end_of_its_turn() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut options = options(
        &dir,
        vec![
            ScriptedTurn::tool_call("t1", "robota_command_compact", json!({"args": ""})),
            ScriptedTurn::text("answered"),
            ScriptedTurn::text("SUMMARY OF THE TURN"),
        ],
    );
    options.session = options
        .session
        .with_permission_mode(PermissionMode::BypassPermissions);
    let session = start(options);
    let sub = session.subscribe_pull();
    session
        .submit("compact please", None, None)
        .await
        .expect("submit");
    let turn = until(&sub, "complete").await;
    let end = turn
        .iter()
        .find_map(|e| match &e.kind {
            InteractiveEventKind::ToolEnd { tool } => Some(tool.clone()),
            _ => None,
        })
        .expect("tool_end");
    assert_eq!(end.result, Some(ToolResultKind::Success));
    let result = end.tool_result_data.unwrap_or_default();
    assert!(
        result.contains("Compaction scheduled: it will run when this turn ends."),
        "{result}"
    );
    assert_eq!(text_of(&turn).trim(), "answered");
    let after = until(&sub, "compaction").await;
    assert!(!after.iter().any(|e| type_of(e) == "error"), "{after:?}");
    session.wait_idle().await;
    let messages = serde_json::to_value(session.get_messages()).expect("json");
    assert!(
        messages.to_string().contains("SUMMARY OF THE TURN"),
        "{messages}"
    );
}

/// A host acts on a prompt's result at once: a command sent while the session still tidies up
/// after it (here a slow compaction the model scheduled) waits for that instead of failing Busy.
#[tokio::test]
async fn a_command_sent_right_after_a_result_waits_for_the_tidy_up_instead_of_failing_busy() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut first = options(
        &dir,
        vec![
            ScriptedTurn::tool_call("t1", "robota_command_compact", json!({"args": ""})),
            ScriptedTurn::text("answered"),
            ScriptedTurn::chunks(["SUMMARY ", "OF THE TURN"]).with_delay_ms(400),
            ScriptedTurn::text("SECOND SUMMARY"),
        ],
    );
    first.session = first
        .session
        .with_permission_mode(PermissionMode::BypassPermissions);
    let session = start(first);
    let ticket = session
        .submit_tracked("compact please", None)
        .await
        .expect("submit");
    assert!(matches!(
        ticket.result().await,
        PromptResult::Complete { .. }
    ));
    // The compaction is still running: a blocking command waits for it, then runs.
    let result = session
        .execute_command("compact", "")
        .await
        .expect("not busy after the result");
    assert!(result.success, "{result:?}");
    let messages = serde_json::to_string(&session.get_messages()).expect("json");
    assert!(messages.contains("SECOND SUMMARY"), "{messages}");
    // A command sent while a prompt really runs is still refused.
    let other = tempfile::tempdir().expect("tempdir");
    let busy = start(options(
        &other,
        vec![ScriptedTurn::chunks(["slowly"]).with_delay_ms(2000)],
    ));
    let running = busy.submit_tracked("slow", None).await.expect("submit");
    let refused = busy.execute_command("compact", "").await;
    assert!(
        matches!(refused, Err(InteractiveError::Busy(_))),
        "{refused:?}"
    );
    drop(running);
}

mod over_mock_llm {
    use super::*;
    use robota::provider::{AnthropicConfig, AnthropicProvider, HttpOptions};

    fn mock_options(dir: &tempfile::TempDir, base_url: String) -> InteractiveSessionOptions {
        let mut config = AnthropicConfig::new("claude-sonnet-4-6");
        config.api_key = Some("sk-test".into());
        config.base_url = Some(base_url);
        config.http = HttpOptions {
            idle_timeout: Duration::from_secs(5),
            connect_timeout: Duration::from_secs(2),
            max_retries: 0,
            ..HttpOptions::default()
        };
        let provider = AnthropicProvider::new(config).expect("provider");
        let session = SessionOptions::new(dir.path(), Arc::new(provider))
            .with_settings(SessionSettings::None)
            .with_project_context(false);
        InteractiveSessionOptions::new(session)
    }

    #[tokio::test]
    async fn a_prompt_submitted_while_streaming_is_queued_and_sees_the_first_answer() {
        let mock = mock_llm::MockLlm::start_json(json!({
            "turns": [
                {"text": ["first ", "answer ", "slowly"], "chunk_delay_ms": 60},
                {"text": ["second answer"]}
            ]
        }))
        .await
        .expect("mock-llm");
        let dir = tempfile::tempdir().expect("tempdir");
        let session = start(mock_options(&dir, mock.base_url()));
        let sub = session.subscribe_pull();
        assert_eq!(
            session.submit("one", None, None).await.expect("one"),
            SubmitStatus::Started
        );
        let mut events = until(&sub, "text_delta").await;
        assert_eq!(
            session.submit("two", None, None).await.expect("two"),
            SubmitStatus::Queued
        );
        events.extend(until(&sub, "complete").await);
        assert_eq!(text_of(&events), "first answer slowly");
        let second = until(&sub, "complete").await;
        assert_eq!(text_of(&second), "second answer");
        events.extend(second);
        assert!(
            events.windows(2).all(|w| w[0].seq < w[1].seq),
            "seq must increase"
        );
        session.wait_idle().await;
        let requests = mock.requests();
        assert_eq!(requests.len(), 2, "{requests:?}");
        let body = requests[1].body.to_string();
        assert!(body.contains("first answer slowly"), "{body}");
        assert!(body.contains("two"), "{body}");
        mock.shutdown().await;
    }

    #[tokio::test]
    async fn abort_while_streaming_clears_the_queue_and_the_next_prompt_sees_the_interruption() {
        let chunks: Vec<String> = (0..40).map(|i| format!("c{i} ")).collect();
        let mock = mock_llm::MockLlm::start_json(json!({
            "turns": [
                {"text": chunks, "chunk_delay_ms": 50},
                {"text": ["never"]},
            ]
        }))
        .await
        .expect("mock-llm");
        let dir = tempfile::tempdir().expect("tempdir");
        let session = start(mock_options(&dir, mock.base_url()));
        let sub = session.subscribe_pull();
        session.submit("first", None, None).await.expect("first");
        assert_eq!(
            session.submit("queued", None, None).await.expect("queued"),
            SubmitStatus::Queued
        );
        until(&sub, "text_delta").await;
        session.abort();
        assert_eq!(session.get_pending_prompt(), None);
        let events = until(&sub, "interrupted").await;
        assert!(!events.iter().any(|e| type_of(e) == "complete"));
        session.wait_idle().await;
        assert!(!session.is_executing());
        assert_eq!(mock.requests().len(), 1, "the queued prompt must not run");

        assert_eq!(
            session.submit("again", None, None).await.expect("again"),
            SubmitStatus::Started
        );
        let next = until(&sub, "complete").await;
        assert_eq!(text_of(&next), "never");
        session.wait_idle().await;
        let requests = mock.requests();
        assert_eq!(requests.len(), 2, "{requests:?}");
        let body = requests[1].body.to_string();
        assert!(body.contains("interrupted by the user"), "{body}");
        assert!(!body.contains("queued"), "{body}");
        assert!(body.contains("again"), "{body}");
        mock.shutdown().await;
    }
}

/// Tracked submits resolve to how their own prompt ended: complete, interrupted, cancelled while
/// queued (by `cancel_queue`, by `abort`, by shutdown), or an error the session reported.
#[tokio::test]
async fn tracked_prompts_resolve_to_their_own_result() {
    let dir = tempfile::tempdir().expect("tempdir");
    let chunks: Vec<String> = (0..50).map(|i| format!("c{i} ")).collect();
    let session = start(options(
        &dir,
        vec![
            ScriptedTurn::chunks(["one", " done"]).with_delay_ms(50),
            ScriptedTurn::text("two"),
            ScriptedTurn::chunks(chunks).with_delay_ms(50),
        ],
    ));
    let sub = session.subscribe_pull();

    // complete, then a queued prompt that completes after it
    let first = session.submit_tracked("first", None).await.expect("first");
    assert_eq!(first.status(), SubmitStatus::Started);
    let second = session
        .submit_tracked("second", None)
        .await
        .expect("second");
    assert_eq!(second.status(), SubmitStatus::Queued);
    match tokio::time::timeout(WAIT, first.result())
        .await
        .expect("in time")
    {
        PromptResult::Complete { outcome, .. } => assert_eq!(outcome.response, "one done"),
        other => panic!("first: {other:?}"),
    }
    match tokio::time::timeout(WAIT, second.result())
        .await
        .expect("in time")
    {
        PromptResult::Complete { outcome, .. } => assert_eq!(outcome.response, "two"),
        other => panic!("second: {other:?}"),
    }

    // (the events of those two runs)
    until(&sub, "complete").await;
    until(&sub, "complete").await;

    // interrupted by abort; the queued one is cancelled; cancel_queue cancels too
    let running = session.submit_tracked("third", None).await.expect("third");
    let queued = session
        .submit_tracked("fourth", None)
        .await
        .expect("fourth");
    assert_eq!(session.cancel_queue().as_deref(), Some("fourth"));
    assert_eq!(
        tokio::time::timeout(WAIT, queued.result())
            .await
            .expect("in time"),
        PromptResult::Cancelled
    );
    let queued = session.submit_tracked("fifth", None).await.expect("fifth");
    until(&sub, "text_delta").await;
    session.abort();
    match tokio::time::timeout(WAIT, running.result())
        .await
        .expect("in time")
    {
        PromptResult::Interrupted { outcome, .. } => {
            assert!(outcome.is_some_and(|o| o.interrupted && o.response.starts_with("c0")))
        }
        other => panic!("third: {other:?}"),
    }
    assert_eq!(
        tokio::time::timeout(WAIT, queued.result())
            .await
            .expect("in time"),
        PromptResult::Cancelled
    );

    // a failed model call (the script has no more turns) ends the prompt as an error, with
    // the provider's kind and the run's outcome
    session.wait_idle().await;
    let failing = session.submit_tracked("sixth", None).await.expect("sixth");
    match tokio::time::timeout(WAIT, failing.result())
        .await
        .expect("in time")
    {
        PromptResult::Error {
            message,
            error,
            outcome,
        } => {
            assert!(message.contains("no more turns"), "{message}");
            assert_eq!(error.kind, "provider");
            assert!(!error.retryable);
            assert!(outcome.is_some_and(|o| o.error.is_some()));
        }
        other => panic!("sixth: {other:?}"),
    }

    // the serialized form carries a `status` tag
    let value = serde_json::to_value(PromptResult::Cancelled).expect("json");
    assert_eq!(value, json!({"status": "cancelled"}));
}

/// `cancel_prompt` cancels exactly one prompt: a queued one without touching the running one,
/// the running one without dropping the queued one, and nothing once it ended.
#[tokio::test]
async fn cancel_prompt_cancels_only_that_prompt() {
    let dir = tempfile::tempdir().expect("tempdir");
    let slow: Vec<String> = (0..40).map(|i| format!("s{i} ")).collect();
    let session = start(options(
        &dir,
        vec![
            ScriptedTurn::chunks(["a", "b", "c"]).with_delay_ms(60),
            ScriptedTurn::chunks(slow).with_delay_ms(50),
            ScriptedTurn::text("after"),
        ],
    ));
    let sub = session.subscribe_pull();
    let running = session.submit_tracked("one", None).await.expect("one");
    let queued = session.submit_tracked("two", None).await.expect("two");
    assert_ne!(running.id(), queued.id());
    assert!(session.cancel_prompt(queued.id()));
    assert_eq!(session.get_pending_prompt(), None);
    let queued_id = queued.id();
    assert_eq!(queued.result().await, PromptResult::Cancelled);
    let running_id = running.id();
    match tokio::time::timeout(WAIT, running.result())
        .await
        .expect("in time")
    {
        PromptResult::Complete { outcome, .. } => assert_eq!(outcome.response, "abc"),
        other => panic!("one: {other:?}"),
    }
    assert!(!session.cancel_prompt(running_id), "already ended");
    assert!(!session.cancel_prompt(queued_id), "already cancelled");
    until(&sub, "complete").await;

    let running = session.submit_tracked("three", None).await.expect("three");
    let queued = session.submit_tracked("four", None).await.expect("four");
    until(&sub, "text_delta").await;
    assert!(session.cancel_prompt(running.id()));
    let end = tokio::time::timeout(WAIT, running.end())
        .await
        .expect("in time");
    assert!(
        matches!(end.result, PromptResult::Interrupted { .. }),
        "{end:?}"
    );
    assert!(end.event_seq.is_some());
    match tokio::time::timeout(WAIT, queued.result())
        .await
        .expect("in time")
    {
        PromptResult::Complete { outcome, .. } => assert_eq!(outcome.response, "after"),
        other => panic!("four: {other:?}"),
    }
    // The ending event's seq is the one subscribers saw.
    let events = until(&sub, "interrupted").await;
    let interrupted = events.last().expect("interrupted event");
    assert_eq!(Some(interrupted.seq), end.event_seq);
}

#[tokio::test]
async fn an_empty_prompt_is_refused_and_a_shut_down_session_refuses_every_action() {
    let dir = tempfile::tempdir().expect("tempdir");
    let session = start(options(&dir, vec![ScriptedTurn::text("hi")]));
    for empty in ["", "  \n\t"] {
        let refused = session.submit(empty, None, None).await;
        assert!(
            matches!(refused, Err(InteractiveError::EmptyPrompt)),
            "{refused:?}"
        );
    }
    assert!(!session.is_executing());

    session
        .shutdown(robota::hooks::SessionEndReason::Other)
        .await;
    assert!(session.is_shut_down());
    assert!(matches!(
        session.submit("hi", None, None).await,
        Err(InteractiveError::ShutDown)
    ));
    assert!(matches!(
        session.execute_command("help", "").await,
        Err(InteractiveError::ShutDown)
    ));
    assert!(matches!(
        session.compact(None).await,
        Err(InteractiveError::ShutDown)
    ));
    assert!(matches!(
        session.list_commands(),
        Err(InteractiveError::ShutDown)
    ));
    assert!(matches!(
        session.set_name(Some("x".into())),
        Err(InteractiveError::ShutDown)
    ));
    // The final state can still be read; abort and cancel_queue are harmless.
    session.abort();
    assert_eq!(session.cancel_queue(), None);
    let left = serde_json::to_string(&session.get_messages()).expect("json");
    assert!(session.get_messages().is_empty(), "{left}");
    let error = robota::api::ApiError::from(InteractiveError::ShutDown);
    assert_eq!(error.kind, robota::api::ApiErrorKind::ShutDown);
}

#[tokio::test]
async fn prompts_submitted_one_after_another_are_accepted_in_that_order() {
    let dir = tempfile::tempdir().expect("tempdir");
    let session = start(options(
        &dir,
        vec![
            ScriptedTurn::chunks(["a"; 20]).with_delay_ms(5),
            ScriptedTurn::text("b"),
        ],
    ));
    let first = session.submit_tracked_now("one", None).expect("first");
    let second = session.submit_tracked_now("two", None).expect("second");
    let third = session.submit_tracked_now("three", None);
    assert_eq!(first.status(), SubmitStatus::Started);
    assert_eq!(second.status(), SubmitStatus::Queued);
    assert!(matches!(third, Err(InteractiveError::QueueFull)));
    assert!(matches!(
        first.result().await,
        PromptResult::Complete { .. }
    ));
    assert!(matches!(
        second.result().await,
        PromptResult::Complete { .. }
    ));
}
