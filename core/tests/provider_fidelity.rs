//! Provider fidelity on recorded-shape streams, through the providers and through a session:
//! refusals (Anthropic `stop_reason: refusal` with `stop_details`, OpenAI `delta.refusal`),
//! cut-off answers (`max_tokens` / `length`), replies made only of server-tool blocks, OpenAI
//! `delta.content` as typed parts, a spliced Anthropic stream, content inside `message_start`,
//! and an OpenAI-compatible stream without `data: [DONE]` — each replayed from mock-llm at odd
//! byte boundaries, and each ending the prompt with the outcome a host can branch on.
#![cfg(unix)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mock_llm::MockLlm;
use robota::engine::RunStopReason;
use robota::framework::interactive::{InteractiveSession, InteractiveSessionOptions, PromptResult};
use robota::framework::outcome::OutcomeStatus;
use robota::message::{ProviderError, ProviderErrorKind};
use robota::permissions::PermissionMode;
use robota::provider::{
    AnthropicConfig, AnthropicProvider, HttpOptions, OpenAiConfig, OpenAiProvider, Provider,
    ProviderRequest, ProviderResponse, StopReason, StreamEvent,
};
use robota::session::{SessionOptions, SessionSettings};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

const WAIT: Duration = Duration::from_secs(20);

fn http() -> HttpOptions {
    HttpOptions {
        idle_timeout: Duration::from_secs(10),
        connect_timeout: Duration::from_secs(2),
        max_retries: 2,
        initial_backoff: Duration::from_millis(5),
        max_backoff: Duration::from_millis(20),
        ..HttpOptions::default()
    }
}

async fn mock(script: Value) -> MockLlm {
    MockLlm::start_json(script).await.expect("mock-llm starts")
}

fn anthropic(mock: &MockLlm) -> Arc<dyn Provider> {
    Arc::new(
        AnthropicProvider::new(AnthropicConfig {
            api_key: Some("sk-ant-test".into()),
            base_url: Some(mock.base_url()),
            http: http(),
            ..AnthropicConfig::new("claude-sonnet-4-5")
        })
        .expect("provider"),
    )
}

fn openai(mock: &MockLlm) -> Arc<dyn Provider> {
    Arc::new(
        OpenAiProvider::new(OpenAiConfig {
            api_key: Some("sk-test".into()),
            base_url: Some(format!("{}/v1", mock.base_url())),
            http: http(),
            ..OpenAiConfig::new("gpt-4o")
        })
        .expect("provider"),
    )
}

async fn stream(provider: &Arc<dyn Provider>) -> (Result<ProviderResponse, ProviderError>, String) {
    let events = Mutex::new(Vec::new());
    let sink = |event: StreamEvent| events.lock().expect("lock").push(event);
    let request = ProviderRequest {
        messages: vec![robota::message::Message::user("hello")]
            .into_iter()
            .map(Into::into)
            .collect(),
        ..ProviderRequest::default()
    };
    let result = provider
        .stream(&request, &sink, &CancellationToken::new())
        .await;
    let text = events
        .into_inner()
        .expect("lock")
        .into_iter()
        .filter_map(|e| match e {
            StreamEvent::TextDelta(t) => Some(t),
            _ => None,
        })
        .collect();
    (result, text)
}

/// One SSE body from `(event name, data)` pairs, as the API writes it.
fn anthropic_body(events: &[Value]) -> String {
    events
        .iter()
        .map(|data| {
            let name = data["type"].as_str().unwrap_or("message");
            format!("event: {name}\ndata: {data}\n\n")
        })
        .collect()
}

fn openai_body(chunks: &[Value], done: bool) -> String {
    let mut body: String = chunks
        .iter()
        .map(|chunk| format!("data: {chunk}\n\n"))
        .collect();
    if done {
        body.push_str("data: [DONE]\n\n");
    }
    body
}

fn message_start() -> Value {
    json!({"type": "message_start", "message": {"id": "msg_01", "type": "message", "role": "assistant",
        "content": [], "model": "claude-sonnet-4-5", "stop_reason": null, "stop_sequence": null,
        "usage": {"input_tokens": 25, "output_tokens": 1}}})
}

/// An Anthropic refusal as the API streams it: the text written so far, then `stop_reason:
/// refusal` with `stop_details`.
fn anthropic_refusal_body() -> String {
    anthropic_body(&[
        message_start(),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "ping"}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "I can't help with "}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "that."}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "message_delta", "delta": {"stop_reason": "refusal", "stop_sequence": null,
            "stop_details": {"type": "refusal", "category": "cyber", "explanation": "The request asks for working malware."}},
            "usage": {"output_tokens": 9}}),
        json!({"type": "message_stop"}),
    ])
}

fn chunk(delta: Value, finish: Option<&str>) -> Value {
    json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o",
        "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}]})
}

/// An OpenAI refusal: `delta.refusal` pieces instead of content, `finish_reason: stop`.
fn openai_refusal_body() -> String {
    openai_body(
        &[
            chunk(
                json!({"role": "assistant", "content": null, "refusal": null}),
                None,
            ),
            chunk(json!({"refusal": "I'm sorry, "}), None),
            chunk(json!({"refusal": "I can't assist with that."}), None),
            chunk(json!({}), Some("stop")),
        ],
        true,
    )
}

/// Mistral's reasoning models on an OpenAI-compatible endpoint: `delta.content` as typed parts.
fn mistral_parts_body() -> String {
    openai_body(
        &[
            chunk(json!({"role": "assistant", "content": []}), None),
            chunk(
                json!({"content": [{"type": "thinking", "thinking": [{"type": "text", "text": "Two and two "}]}]}),
                None,
            ),
            chunk(
                json!({"content": [{"type": "thinking", "thinking": [{"type": "text", "text": "make four."}]}]}),
                None,
            ),
            chunk(
                json!({"content": [{"type": "text", "text": "The answer "}]}),
                None,
            ),
            chunk(
                json!({"content": [{"type": "text", "text": "is 4."}]}),
                None,
            ),
            chunk(json!({"content": ""}), Some("stop")),
        ],
        true,
    )
}

/// A raw-body turn cut into 7-byte pieces (inside events, lines and UTF-8 characters).
fn raw(body: String) -> Value {
    json!({"raw_body": body, "split_bytes": 7})
}

// ---- through the providers ---------------------------------------------------------------------

#[tokio::test]
async fn anthropic_refusal_keeps_its_stop_details() {
    let mock = mock(json!({"turns": [raw(anthropic_refusal_body())]})).await;
    let (result, text) = stream(&anthropic(&mock)).await;
    let response = result.expect("a refusal is a response");
    assert_eq!(response.stop_reason, StopReason::Refusal);
    assert_eq!(text, "I can't help with that.");
    let refusal = response.refusal.expect("refusal details");
    assert_eq!(refusal.text, "I can't help with that.");
    assert_eq!(refusal.category.as_deref(), Some("cyber"));
    assert_eq!(
        refusal.explanation.as_deref(),
        Some("The request asks for working malware.")
    );
}

#[tokio::test]
async fn openai_refusal_deltas_become_a_refusal() {
    let mock = mock(json!({"turns": [raw(openai_refusal_body())]})).await;
    let (result, text) = stream(&openai(&mock)).await;
    let response = result.expect("a refusal is a response");
    assert_eq!(response.stop_reason, StopReason::Refusal);
    assert_eq!(text, "I'm sorry, I can't assist with that.");
    assert_eq!(
        response.refusal.expect("refusal").text,
        "I'm sorry, I can't assist with that."
    );
}

#[tokio::test]
async fn openai_content_as_typed_parts_is_text_and_thinking() {
    let mock = mock(json!({"turns": [raw(mistral_parts_body())]})).await;
    let (result, text) = stream(&openai(&mock)).await;
    let response = result.expect("typed parts are accepted");
    assert_eq!(text, "The answer is 4.");
    assert_eq!(response.text, "The answer is 4.");
    assert_eq!(response.thinking[0].thinking, "Two and two make four.");
    assert_eq!(response.stop_reason, StopReason::EndTurn);

    // The same shape as mock-llm writes it from a script.
    let mock = mock_parts().await;
    let response = stream(&openai(&mock)).await.0.expect("parts");
    assert_eq!(response.text, "Bonjour");
    assert_eq!(response.thinking[0].thinking, "hmm");
}

async fn mock_parts() -> MockLlm {
    mock(json!({"turns": [{"thinking": "hmm", "text": ["Bon", "jour"], "content_parts": true, "split_bytes": 5}]})).await
}

#[tokio::test]
async fn cut_off_answers_stop_with_max_tokens() {
    let mock = mock(json!({"repeat": true, "turns": [{"text": ["An answer that ", "stops mid"], "stop_reason": "max_tokens"}]})).await;
    for provider in [anthropic(&mock), openai(&mock)] {
        let response = stream(&provider)
            .await
            .0
            .expect("a cut-off answer is a response");
        assert_eq!(response.stop_reason, StopReason::MaxTokens);
        assert_eq!(response.text, "An answer that stops mid");
    }
}

#[tokio::test]
async fn a_spliced_anthropic_stream_is_a_provider_error() {
    let mock = mock(json!({"turns": [{
        "text": "Writing",
        "tool_calls": [{"name": "Write", "input": {"file_path": "a.txt", "content": "x"}}],
        "fault": {"kind": "splice", "after_events": 6},
        "split_bytes": 3
    }]}))
    .await;
    let error = stream(&anthropic(&mock)).await.0.expect_err("spliced");
    assert_eq!(error.kind, ProviderErrorKind::Provider);
    assert!(error.message.contains("message_start"), "{}", error.message);
    assert!(!error.retryable, "{error:?}");
}

#[tokio::test]
async fn content_inside_message_start_is_used() {
    let mock = mock(json!({"turns": [{
        "text": "Reading it.",
        "tool_calls": [{"id": "toolu_1", "name": "Read", "input": {"file_path": "a.txt"}}],
        "content_in_start": true
    }]}))
    .await;
    let response = stream(&anthropic(&mock)).await.0.expect("response");
    assert_eq!(response.text, "Reading it.");
    assert_eq!(response.tool_calls.len(), 1);
    assert_eq!(response.tool_calls[0].id, "toolu_1");
    let input: Value = serde_json::from_str(&response.tool_calls[0].arguments).expect("json");
    assert_eq!(input, json!({"file_path": "a.txt"}));
}

#[tokio::test]
async fn server_tool_blocks_are_kept_verbatim() {
    let mock =
        mock(json!({"turns": [{"server_blocks": server_blocks(), "stop_reason": "end_turn"}]}))
            .await;
    let response = stream(&anthropic(&mock)).await.0.expect("response");
    assert_eq!(response.text, "");
    assert_eq!(
        response.server_blocks,
        server_blocks().as_array().cloned().unwrap_or_default()
    );
}

fn server_blocks() -> Value {
    json!([
        {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "rust 2024 edition"}},
        {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": [
            {"type": "web_search_result", "url": "https://blog.rust-lang.org/", "title": "Rust Blog", "encrypted_content": "EqQB", "page_age": null}
        ]}
    ])
}

#[tokio::test]
async fn openai_stream_without_done_after_finish_reason_is_whole() {
    let mock = mock(json!({"turns": [{"text": ["Fine ", "answer"], "fault": {"kind": "no_done"}, "split_bytes": 4}]})).await;
    let (result, text) = stream(&openai(&mock)).await;
    let response = result.expect("a finish reason without [DONE] is a whole answer");
    assert_eq!(text, "Fine answer");
    assert_eq!(response.stop_reason, StopReason::EndTurn);
}

#[tokio::test]
async fn openai_stream_cut_before_any_finish_reason_is_an_error() {
    let mock =
        mock(json!({"turns": [{"text": "half", "fault": {"kind": "missing_terminal"}}]})).await;
    let error = stream(&openai(&mock)).await.0.expect_err("cut");
    assert_eq!(error.kind, ProviderErrorKind::Provider);
}

// ---- through a session -------------------------------------------------------------------------

fn session(dir: &tempfile::TempDir, provider: Arc<dyn Provider>) -> Arc<InteractiveSession> {
    let options = SessionOptions::new(dir.path(), provider)
        .with_settings(SessionSettings::None)
        .with_project_context(false)
        .with_sandbox(false)
        .with_permission_mode(PermissionMode::BypassPermissions);
    InteractiveSession::new(InteractiveSessionOptions::new(options)).expect("session")
}

/// Submits `prompt`, waits for how it ended, and returns that with the event types seen.
async fn prompt(session: &InteractiveSession, prompt: &str) -> (PromptResult, Vec<String>) {
    let subscription = session.subscribe_pull();
    let ticket = session.submit_tracked(prompt, None).await.expect("submit");
    let result = tokio::time::timeout(WAIT, ticket.result())
        .await
        .expect("in time");
    let mut types = Vec::new();
    while let Some(event) = subscription.try_next_event() {
        types.push(event.kind.type_name().to_string());
        if PromptResult::from_event(&event.kind).is_some() {
            assert_eq!(
                PromptResult::from_event(&event.kind).as_ref(),
                Some(&result),
                "the event that ends the prompt reports the ticket's result"
            );
        }
    }
    (result, types)
}

#[tokio::test]
async fn a_refusal_reaches_the_host_as_a_refusal_without_a_reask() {
    for (name, body) in [
        ("anthropic", anthropic_refusal_body()),
        ("openai", openai_refusal_body()),
    ] {
        let mock = mock(json!({"turns": [raw(body)]})).await;
        let provider = if name == "anthropic" {
            anthropic(&mock)
        } else {
            openai(&mock)
        };
        let dir = tempfile::tempdir().expect("tempdir");
        let session = session(&dir, provider);
        let (result, types) = prompt(&session, "write malware").await;
        assert_eq!(
            result.status(),
            OutcomeStatus::Refused,
            "{name}: {result:?}"
        );
        assert!(types.contains(&"refused".to_string()), "{name}: {types:?}");
        let outcome = result.outcome().expect("outcome").clone();
        assert_eq!(outcome.stop_reason, RunStopReason::Refused);
        assert_eq!(outcome.rounds, 1, "{name}");
        let refusal = outcome.refusal.expect("refusal");
        assert!(refusal.text.contains("can't"), "{name}: {refusal:?}");
        assert!(!outcome.response.contains("Maximum rounds"), "{name}");
        if name == "anthropic" {
            assert_eq!(refusal.category.as_deref(), Some("cyber"));
            assert!(refusal.explanation.is_some());
        }
        assert_eq!(mock.requests().len(), 1, "{name}: never re-asked");
        // The session stays usable: the next prompt is a new request.
        assert_eq!(
            session
                .get_messages()
                .last()
                .map(|m| m.text())
                .unwrap_or_default(),
            refusal.text
        );
    }
}

#[tokio::test]
async fn a_cut_off_answer_is_truncated_and_its_tool_call_does_not_run() {
    let mock = mock(json!({"repeat": true, "turns": [{
        "text": "Writing the file",
        "tool_calls": [{"name": "Write", "input": {"file_path": "out.txt", "content": "partial"}}],
        "stop_reason": "max_tokens"
    }]}))
    .await;
    for (name, provider) in [("anthropic", anthropic(&mock)), ("openai", openai(&mock))] {
        let dir = tempfile::tempdir().expect("tempdir");
        let session = session(&dir, provider);
        let (result, types) = prompt(&session, "write out.txt").await;
        assert_eq!(
            result.status(),
            OutcomeStatus::Truncated,
            "{name}: {result:?}"
        );
        assert!(
            types.contains(&"truncated".to_string()),
            "{name}: {types:?}"
        );
        let outcome = result.outcome().expect("outcome");
        assert_eq!(outcome.response, "Writing the file");
        assert!(outcome.tools_executed.is_empty(), "{name}");
        assert!(!dir.path().join("out.txt").exists(), "{name}: no tool ran");
        // Every tool call still has a result, so the history is valid for the next request.
        let history = session.get_messages();
        let last = history.last().expect("tool result");
        let last = serde_json::to_string(last).unwrap_or_default();
        assert!(last.contains("tool_result"), "{name}: {last}");
        assert!(last.contains("max_tokens"), "{name}: {last}");
    }
}

#[tokio::test]
async fn a_plain_cut_off_answer_can_be_continued() {
    let mock = mock(json!({"turns": [
        {"text": "The first half", "stop_reason": "max_tokens"},
        {"text": " and the second half."}
    ]}))
    .await;
    let dir = tempfile::tempdir().expect("tempdir");
    let session = session(&dir, anthropic(&mock));
    let (result, _) = prompt(&session, "write a lot").await;
    assert_eq!(result.status(), OutcomeStatus::Truncated);
    let ticket = session.continue_answer().await.expect("continue");
    let result = tokio::time::timeout(WAIT, ticket.result())
        .await
        .expect("in time");
    assert_eq!(result.status(), OutcomeStatus::Complete);
    assert_eq!(
        result.outcome().map(|o| o.response.as_str()),
        Some(" and the second half.")
    );
    let sent = &mock.requests()[1].body["messages"];
    let texts = sent.to_string();
    assert!(texts.contains("The first half"), "{texts}");
    assert!(texts.contains("cut off"), "{texts}");
}

#[tokio::test]
async fn a_server_tool_only_reply_is_an_answer_and_every_request_counts() {
    let mock = mock(json!({"turns": [
        {"server_blocks": server_blocks(), "stop_reason": "pause_turn"},
        {"text": "Rust 2024 is out.", "stop_reason": "end_turn"}
    ]}))
    .await;
    let dir = tempfile::tempdir().expect("tempdir");
    let session = session(&dir, anthropic(&mock));
    let (result, _) = prompt(&session, "what's new in rust?").await;
    assert_eq!(result.status(), OutcomeStatus::Complete, "{result:?}");
    let outcome = result.outcome().expect("outcome");
    assert_eq!(outcome.response, "Rust 2024 is out.");
    assert_eq!(outcome.rounds, 2, "num_turns counts both requests");
    let requests = mock.requests();
    assert_eq!(requests.len(), 2, "no re-ask");
    // The paused turn goes back verbatim so the model continues from it.
    let second = requests[1].body.to_string();
    assert!(second.contains("srvtoolu_1"), "{second}");
    assert!(!second.contains("Tool round limit"), "{second}");
    assert!(!second.contains("reply was empty"), "{second}");

    // A reply of server blocks alone that ends the turn is the answer (no re-ask either).
    let mock = self::mock(
        json!({"turns": [{"server_blocks": server_blocks(), "stop_reason": "end_turn"}]}),
    )
    .await;
    let session = self::session(&dir, anthropic(&mock));
    let (result, _) = prompt(&session, "search").await;
    assert_eq!(result.status(), OutcomeStatus::Complete, "{result:?}");
    assert_eq!(result.outcome().map(|o| o.rounds), Some(1));
    assert_eq!(mock.requests().len(), 1);
}

#[tokio::test]
async fn a_tool_call_delivered_in_message_start_runs() {
    let mock = mock(json!({"turns": [
        {"text": "Reading it.", "tool_calls": [{"id": "toolu_1", "name": "Read", "input": {"file_path": "a.txt"}}],
         "content_in_start": true, "split_bytes": 5},
        {"text": "It says hello.", "content_in_start": true}
    ]}))
    .await;
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("a.txt"), "hello from a.txt").expect("write");
    let session = session(&dir, anthropic(&mock));
    let (result, types) = prompt(&session, "read a.txt").await;
    assert_eq!(result.status(), OutcomeStatus::Complete, "{result:?}");
    let outcome = result.outcome().expect("outcome");
    assert_eq!(outcome.response, "It says hello.");
    assert_eq!(outcome.tools_executed, ["Read"]);
    assert!(types.contains(&"tool_end".to_string()), "{types:?}");
    // The Read result went back to the model.
    let second = mock.requests()[1].body["messages"].to_string();
    assert!(second.contains("hello from a.txt"), "{second}");
}

#[tokio::test]
async fn a_spliced_stream_dispatches_no_tool_and_ends_as_an_error() {
    let mock = mock(json!({"turns": [{
        "tool_calls": [{"name": "Write", "input": {"file_path": "spliced.txt", "content": "no"}}],
        "fault": {"kind": "splice", "after_events": 4}
    }]}))
    .await;
    let dir = tempfile::tempdir().expect("tempdir");
    let session = session(&dir, anthropic(&mock));
    let (result, types) = prompt(&session, "write").await;
    let PromptResult::Error { error, .. } = &result else {
        panic!("{result:?}");
    };
    assert_eq!(error.kind, "provider");
    assert!(error.message.contains("message_start"), "{}", error.message);
    assert!(!types.contains(&"tool_start".to_string()), "{types:?}");
    assert!(!dir.path().join("spliced.txt").exists());
}

#[tokio::test]
async fn a_failed_model_call_ends_the_prompt_as_an_error() {
    let mock = mock(json!({"turns": [{"fault": {"kind": "status", "status": 401}}]})).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let session = session(&dir, anthropic(&mock));
    let (result, types) = prompt(&session, "hi").await;
    assert!(types.contains(&"error".to_string()), "{types:?}");
    assert!(!types.contains(&"complete".to_string()), "{types:?}");
    let PromptResult::Error { error, .. } = &result else {
        panic!("{result:?}");
    };
    assert_eq!(error.kind, "auth");
    assert_eq!(error.status, Some(401));
    assert!(!error.retryable);
    assert_eq!(error.provider.as_deref(), Some("anthropic"));

    // Retries exhausted: retryable, with the status of the last attempt.
    let mock = self::mock(
        json!({"repeat": true, "turns": [{"fault": {"kind": "status", "status": 529}}]}),
    )
    .await;
    let session = self::session(&dir, anthropic(&mock));
    let (result, _) = prompt(&session, "hi").await;
    let PromptResult::Error { error, .. } = &result else {
        panic!("{result:?}");
    };
    assert_eq!(error.kind, "overloaded");
    assert_eq!(error.status, Some(529));
    assert!(error.retryable);
    assert_eq!(
        mock.requests().len(),
        3,
        "the first attempt and two retries"
    );
}

#[tokio::test]
async fn content_parts_and_a_missing_done_end_complete_through_a_session() {
    let mock = mock(json!({"turns": [
        raw(mistral_parts_body()),
        {"text": "second", "fault": {"kind": "no_done"}}
    ]}))
    .await;
    let dir = tempfile::tempdir().expect("tempdir");
    let session = session(&dir, openai(&mock));
    let (result, _) = prompt(&session, "2+2?").await;
    assert_eq!(result.status(), OutcomeStatus::Complete, "{result:?}");
    assert_eq!(
        result.outcome().map(|o| o.response.as_str()),
        Some("The answer is 4.")
    );
    let (result, _) = prompt(&session, "again").await;
    assert_eq!(result.status(), OutcomeStatus::Complete, "{result:?}");
    assert_eq!(
        result.outcome().map(|o| o.response.as_str()),
        Some("second")
    );
    assert!(matches!(
        session.get_messages().last().map(|m| m.role),
        Some(robota::message::Role::Assistant)
    ));
}
