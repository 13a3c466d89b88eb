//! The Gemini provider against mock-llm over loopback: what it sends (URL, key header, body),
//! what it assembles from the stream, the tool round trip through the engine (function calls,
//! function responses and thought signatures sent back), and how it handles every scripted fault.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use mock_llm::MockLlm;
use robota::engine::{Engine, EngineConfig, RunOptions};
use robota::message::{
    ContentBlock, Conversation, Message, ProviderError, ProviderErrorKind, Role,
};
use robota::provider::{
    GeminiConfig, GeminiProvider, HttpOptions, Provider, ProviderRequest, ProviderResponse,
    StopReason, StreamEvent, ThinkingConfig, ToolChoice, ToolDefinition,
};
use robota::tools::{Tool, ToolContext, ToolOutput, ToolRegistry};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

const MODEL: &str = "gemini-2.5-flash";
const PATH: &str = "/v1beta/models/gemini-2.5-flash:streamGenerateContent";

/// Short timeouts and backoffs so fault tests run fast.
fn fast_http() -> HttpOptions {
    HttpOptions {
        idle_timeout: Duration::from_secs(10),
        connect_timeout: Duration::from_secs(2),
        max_retries: 4,
        initial_backoff: Duration::from_millis(5),
        max_backoff: Duration::from_millis(20),
        ..HttpOptions::default()
    }
}

async fn mock(script: Value) -> MockLlm {
    MockLlm::start_json(script).await.expect("mock-llm starts")
}

fn config(mock: &MockLlm) -> GeminiConfig {
    GeminiConfig {
        api_key: Some("gm-test-key".into()),
        base_url: Some(mock.base_url()),
        http: fast_http(),
        ..GeminiConfig::new(MODEL)
    }
}

fn provider_with(mock: &MockLlm, http: HttpOptions) -> GeminiProvider {
    GeminiProvider::new(GeminiConfig {
        http,
        ..config(mock)
    })
    .expect("provider")
}

fn provider(mock: &MockLlm) -> GeminiProvider {
    provider_with(mock, fast_http())
}

fn hello() -> ProviderRequest {
    ProviderRequest {
        messages: vec![Arc::new(Message::user("hello"))],
        ..ProviderRequest::default()
    }
}

type Outcome = (Result<ProviderResponse, ProviderError>, Vec<StreamEvent>);

async fn run(provider: &dyn Provider, request: &ProviderRequest) -> Outcome {
    run_with_cancel(provider, request, &CancellationToken::new()).await
}

async fn run_with_cancel(
    provider: &dyn Provider,
    request: &ProviderRequest,
    cancel: &CancellationToken,
) -> Outcome {
    let events = Mutex::new(Vec::new());
    let sink = |event: StreamEvent| events.lock().expect("lock").push(event);
    let result = provider.stream(request, &sink, cancel).await;
    (result, events.into_inner().expect("lock"))
}

fn texts(events: &[StreamEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::TextDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

fn retry_count(events: &[StreamEvent]) -> usize {
    events
        .iter()
        .filter(|e| matches!(e, StreamEvent::Retry { .. }))
        .count()
}

#[tokio::test]
async fn plain_text_turn_with_usage_url_and_key_header() {
    let mock = mock(json!({"turns": [{
        "text": ["Hel", "lo, ", "wörld ✓"],
        "usage": {"input_tokens": 12, "output_tokens": 5, "cache_read_input_tokens": 30}
    }]}))
    .await;
    let (result, events) = run(&provider(&mock), &hello()).await;
    let response = result.expect("success");
    assert_eq!(response.text, "Hello, wörld ✓");
    assert_eq!(response.stop_reason, StopReason::EndTurn);
    assert_eq!(response.model, MODEL);
    // promptTokenCount = 42 with 30 cached: 12 uncached input.
    assert_eq!(response.usage.input_tokens, 12);
    assert_eq!(response.usage.cache_read_input_tokens, 30);
    assert_eq!(response.usage.output_tokens, 5);
    assert_eq!(
        events,
        vec![
            StreamEvent::TextDelta("Hel".into()),
            StreamEvent::TextDelta("lo, ".into()),
            StreamEvent::TextDelta("wörld ✓".into()),
        ]
    );

    let requests = mock.requests();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!(request.method, "POST");
    assert_eq!(request.path, PATH);
    assert_eq!(request.query.as_deref(), Some("alt=sse"));
    assert_eq!(request.headers["x-goog-api-key"], "gm-test-key");
    assert_eq!(request.headers["content-type"], "application/json");
    assert_eq!(request.headers["accept"], "text/event-stream");
    assert!(!request.headers.contains_key("authorization"));
    assert_eq!(
        request.body,
        json!({"contents": [{"role": "user", "parts": [{"text": "hello"}]}]})
    );
}

#[tokio::test]
async fn request_body_field_by_field() {
    let mock = mock(json!({"turns": [{"text": "ok"}]})).await;
    let provider = GeminiProvider::new(GeminiConfig {
        max_tokens: Some(512),
        http: HttpOptions {
            headers: vec![("x-gateway".into(), "g1".into())],
            ..fast_http()
        },
        ..config(&mock)
    })
    .expect("provider");
    let schema = json!({
        "type": "object",
        "properties": {"path": {"type": "string"}},
        "required": ["path"],
        "additionalProperties": false,
    });
    let request = ProviderRequest {
        system: Some("Be brief.".into()),
        messages: vec![Arc::new(Message::user("hi"))],
        tools: vec![ToolDefinition {
            name: "Read".into(),
            description: "Reads a file.".into(),
            input_schema: schema.clone(),
        }],
        temperature: Some(0.5),
        thinking: Some(ThinkingConfig {
            budget_tokens: 2048,
        }),
        tool_choice: Some(ToolChoice::Required),
        ..ProviderRequest::default()
    };
    let (result, _) = run(&provider, &request).await;
    result.expect("success");
    let requests = mock.requests();
    let body = &requests[0].body;
    assert_eq!(requests[0].headers["x-gateway"], "g1");
    assert_eq!(
        body,
        &json!({
            "systemInstruction": {"parts": [{"text": "Be brief."}]},
            "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
            "tools": [{"functionDeclarations": [{
                "name": "Read",
                "description": "Reads a file.",
                "parametersJsonSchema": schema,
            }]}],
            "toolConfig": {"functionCallingConfig": {"mode": "ANY"}},
            "generationConfig": {
                "maxOutputTokens": 512,
                "temperature": 0.5,
                "thinkingConfig": {"thinkingBudget": 2048, "includeThoughts": true},
            },
        })
    );
}

#[tokio::test]
async fn thinking_streams_as_thinking_deltas_and_keeps_the_signature() {
    let mock = mock(json!({"turns": [{
        "thinking": ["Let me ", "think."],
        "thinking_signature": "c2lnLXRleHQ=",
        "text": "Answer."
    }]}))
    .await;
    let (result, events) = run(&provider(&mock), &hello()).await;
    let response = result.expect("success");
    assert_eq!(
        events,
        vec![
            StreamEvent::ThinkingDelta("Let me ".into()),
            StreamEvent::ThinkingDelta("think.".into()),
            StreamEvent::TextDelta("Answer.".into()),
        ]
    );
    assert_eq!(response.text, "Answer.");
    // The thought summary, then the signature Gemini put on the (last) text part.
    assert_eq!(response.thinking.len(), 2);
    assert_eq!(response.thinking[0].thinking, "Let me think.");
    assert_eq!(response.thinking[0].signature, None);
    assert_eq!(response.thinking[1].thinking, "");
    assert_eq!(
        response.thinking[1].signature.as_deref(),
        Some("gemini:text:c2lnLXRleHQ=")
    );
    assert!(provider(&mock).capabilities().thinking);
}

/// A read-only tool answering `{"path": p}` with `"contents of p"`.
struct ReadTool;

#[async_trait]
impl Tool for ReadTool {
    fn name(&self) -> &str {
        "Read"
    }
    fn description(&self) -> &str {
        "Reads a file."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {"path": {"type": "string"}}})
    }
    fn is_read_only(&self) -> bool {
        true
    }
    async fn execute(&self, input: Value, _context: ToolContext) -> ToolOutput {
        ToolOutput::text(format!(
            "contents of {}",
            input["path"].as_str().unwrap_or("?")
        ))
    }
}

#[tokio::test]
async fn tool_round_trip_sends_calls_responses_and_signatures_back() {
    // Round 1: thinking, then two parallel calls (the first with Gemini's id, the second
    // without one), the signature on the first call. Round 2: the answer.
    let mock = mock(json!({"turns": [
        {
            "thinking": "I should read both.",
            "thinking_signature": "U0lHTkFUVVJF",
            "text": "Reading.",
            "tool_calls": [
                {"id": "fc-1", "name": "Read", "input": {"path": "a.txt"}},
                {"name": "Read", "input": {"path": "b.txt"}}
            ],
            "usage": {"input_tokens": 50, "output_tokens": 10}
        },
        {"text": "Both read.", "usage": {"input_tokens": 80, "output_tokens": 4}}
    ]}))
    .await;
    let mut tools = ToolRegistry::new();
    tools.register(Arc::new(ReadTool));
    let engine = Engine::new(
        Arc::new(provider(&mock)),
        tools,
        EngineConfig {
            system_prompt: Some("You read files.".into()),
            ..EngineConfig::default()
        },
    );
    let mut conversation = Conversation::new();
    let outcome = engine
        .run(
            &mut conversation,
            Message::user("read a and b"),
            RunOptions::new(),
        )
        .await;
    assert_eq!(outcome.response, "Both read.", "{outcome:?}");
    assert_eq!(outcome.rounds, 2);
    assert_eq!(outcome.usage.input_tokens, 130);

    // The history holds the calls; the id-less call got a made-up id.
    let assistant = conversation
        .messages()
        .find(|m| m.role == Role::Assistant)
        .expect("assistant message")
        .clone();
    let ids: Vec<String> = assistant
        .tool_uses()
        .map(|(id, _, _)| id.to_string())
        .collect();
    assert_eq!(ids[0], "fc-1");
    assert!(ids[1].starts_with("gemini-call-"), "{}", ids[1]);
    assert!(assistant.content.iter().any(|block| matches!(
        block,
        ContentBlock::Thinking { signature: Some(s), .. } if s == "gemini:call:fc-1:U0lHTkFUVVJF"
    )));

    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    let first = &requests[0].body;
    assert_eq!(
        first["tools"][0]["functionDeclarations"][0]["name"],
        json!("Read")
    );
    assert_eq!(
        first["systemInstruction"],
        json!({"parts": [{"text": "You read files."}]})
    );
    let second = &requests[1].body;
    let contents = second["contents"].as_array().expect("contents");
    assert_eq!(contents.len(), 3, "{second}");
    assert_eq!(contents[0]["role"], "user");
    // The model turn as Gemini sent it: the text, then both calls, the signature on the first
    // (the unsigned thought summary is not sent back).
    assert_eq!(
        contents[1],
        json!({"role": "model", "parts": [
            {"text": "Reading."},
            {"functionCall": {"id": "fc-1", "name": "Read", "args": {"path": "a.txt"}},
             "thoughtSignature": "U0lHTkFUVVJF"},
            {"functionCall": {"name": "Read", "args": {"path": "b.txt"}}},
        ]})
    );
    // One user turn with a functionResponse per call, same name, and the id where Gemini gave
    // one.
    assert_eq!(
        contents[2],
        json!({"role": "user", "parts": [
            {"functionResponse": {"id": "fc-1", "name": "Read",
                                  "response": {"output": "contents of a.txt"}}},
            {"functionResponse": {"name": "Read",
                                  "response": {"output": "contents of b.txt"}}},
        ]})
    );
}

#[tokio::test]
async fn refusal_and_max_tokens_stop_reasons() {
    let mock = mock(json!({"turns": [
        {"refusal": "I can't help with that."},
        {"text": "cut", "stop_reason": "max_tokens"}
    ]}))
    .await;
    let provider = provider(&mock);
    let (result, _) = run(&provider, &hello()).await;
    let response = result.expect("success");
    assert_eq!(response.stop_reason, StopReason::Refusal);
    let refusal = response.refusal.expect("refusal");
    assert_eq!(refusal.category.as_deref(), Some("SAFETY"));
    assert_eq!(refusal.text, "I can't help with that.");
    let (result, _) = run(&provider, &hello()).await;
    assert_eq!(result.expect("success").stop_reason, StopReason::MaxTokens);
}

#[tokio::test]
async fn rate_limit_with_retry_after_then_success() {
    let mock = mock(json!({"turns": [
        {"fault": {"kind": "status", "status": 429, "retry_after": "0"}},
        {"text": "ok"}
    ]}))
    .await;
    let (result, events) = run(&provider(&mock), &hello()).await;
    assert_eq!(result.expect("success").text, "ok");
    let retry = events
        .iter()
        .find_map(|e| match e {
            StreamEvent::Retry { error, delay, .. } => Some((error.clone(), *delay)),
            _ => None,
        })
        .expect("a retry");
    assert_eq!(retry.0.kind, ProviderErrorKind::RateLimit);
    assert_eq!(retry.1, Duration::ZERO, "retry-after 0 honoured");
    assert!(
        retry.0.message.contains("RESOURCE_EXHAUSTED"),
        "{}",
        retry.0.message
    );
    assert_eq!(mock.requests().len(), 2);
}

#[tokio::test]
async fn a_rate_limit_wait_over_the_budget_is_returned_at_once() {
    let mock = mock(json!({"turns": [
        {"fault": {"kind": "status", "status": 429, "retry_after": "120"}}
    ]}))
    .await;
    let started = Instant::now();
    let (result, events) = run(&provider(&mock), &hello()).await;
    let error = result.expect_err("error");
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(error.kind, ProviderErrorKind::RateLimit);
    assert_eq!(error.retry_after, Some(Duration::from_secs(120)));
    assert_eq!(retry_count(&events), 0);
}

#[tokio::test]
async fn unavailable_and_internal_errors_are_retried_until_success() {
    let mock = mock(json!({"turns": [
        {"fault": {"kind": "status", "status": 503,
                   "message": "The model is overloaded. Please try again later."}},
        {"fault": {"kind": "status", "status": 500}},
        {"text": "ok"}
    ]}))
    .await;
    let (result, events) = run(&provider(&mock), &hello()).await;
    assert_eq!(result.expect("success").text, "ok");
    assert_eq!(retry_count(&events), 2);
    let messages: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::Retry { error, .. } => Some(error.message.clone()),
            _ => None,
        })
        .collect();
    assert!(messages[0].contains("UNAVAILABLE"), "{}", messages[0]);
    assert!(messages[1].contains("INTERNAL"), "{}", messages[1]);
}

#[tokio::test]
async fn auth_errors_are_not_retried_and_say_what_to_set() {
    for (status, message) in [
        (401, "Request had invalid authentication credentials."),
        (403, "Permission denied on resource."),
        // Gemini answers a wrong key with 400 INVALID_ARGUMENT.
        (400, "API key not valid. Please pass a valid API key."),
    ] {
        let mock = mock(json!({"turns": [
            {"fault": {"kind": "status", "status": status, "message": message}}
        ]}))
        .await;
        let (result, events) = run(&provider(&mock), &hello()).await;
        let error = result.expect_err("error");
        assert_eq!(error.kind, ProviderErrorKind::Auth, "{status}");
        assert!(!error.retryable);
        assert_eq!(error.status, Some(status));
        assert!(error.message.contains(message), "{}", error.message);
        assert!(
            error.message.contains("GEMINI_API_KEY"),
            "{}",
            error.message
        );
        assert_eq!(retry_count(&events), 0);
        assert_eq!(mock.requests().len(), 1, "{status}");
    }
}

#[tokio::test]
async fn context_length_and_other_invalid_requests() {
    let mock = mock(json!({"turns": [
        {"fault": {"kind": "status", "status": 400,
                   "message": "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576)."}},
        {"fault": {"kind": "status", "status": 400, "message": "Invalid JSON payload received."}}
    ]}))
    .await;
    let provider = provider(&mock);
    let (result, _) = run(&provider, &hello()).await;
    let error = result.expect_err("error");
    assert_eq!(error.kind, ProviderErrorKind::ContextLength);
    assert!(error.message.contains("1048576"), "{}", error.message);
    assert!(!error.retryable);
    let (result, _) = run(&provider, &hello()).await;
    let error = result.expect_err("error");
    assert_eq!(error.kind, ProviderErrorKind::InvalidRequest);
    assert!(
        error.message.contains("INVALID_ARGUMENT"),
        "{}",
        error.message
    );
}

#[tokio::test]
async fn reset_before_any_text_is_retried() {
    retried_once_then_ok(json!({"fault": {"kind": "reset", "after_events": 0}})).await;
}

/// Serves `failing` then a good turn: the call succeeds after exactly one retry.
async fn retried_once_then_ok(failing: Value) {
    let mock = mock(json!({"turns": [failing, {"text": "ok"}]})).await;
    let (result, events) = run(&provider(&mock), &hello()).await;
    assert_eq!(result.expect("success").text, "ok");
    assert_eq!(retry_count(&events), 1);
    assert_eq!(mock.requests().len(), 2);
}

#[tokio::test]
async fn reset_after_text_was_delivered_is_an_error_not_a_retry() {
    let mock = mock(json!({"turns": [
        {"text": ["one ", "two"], "fault": {"kind": "reset", "after_events": 1}},
        {"text": "never"}
    ]}))
    .await;
    let (result, events) = run(&provider(&mock), &hello()).await;
    let error = result.expect_err("error");
    assert_eq!(error.kind, ProviderErrorKind::Network);
    assert!(
        error.message.contains("already streamed"),
        "{}",
        error.message
    );
    assert_eq!(texts(&events), "one ");
    assert_eq!(mock.requests().len(), 1);
}

#[tokio::test]
async fn a_stream_cut_before_its_finish_reason_is_an_error() {
    let mock = mock(json!({"turns": [
        {"text": ["one ", "two"], "fault": {"kind": "missing_terminal"}}
    ]}))
    .await;
    let (result, events) = run(&provider(&mock), &hello()).await;
    let error = result.expect_err("error");
    assert_eq!(error.kind, ProviderErrorKind::Provider);
    assert!(error.message.contains("finishReason"), "{}", error.message);
    assert_eq!(texts(&events), "one two");
}

#[tokio::test]
async fn stall_hits_the_idle_timeout() {
    let mock = mock(json!({"turns": [
        {"text": "x", "fault": {"kind": "stall", "after_events": 0, "ms": 5000}}
    ]}))
    .await;
    let provider = provider_with(
        &mock,
        HttpOptions {
            idle_timeout: Duration::from_millis(200),
            max_retries: 0,
            ..fast_http()
        },
    );
    let started = Instant::now();
    let (result, _) = run(&provider, &hello()).await;
    let error = result.expect_err("error");
    assert_eq!(error.kind, ProviderErrorKind::Network);
    assert!(error.message.contains("idle timeout"), "{}", error.message);
    assert!(started.elapsed() < Duration::from_secs(4));
}

#[tokio::test]
async fn malformed_chunk_is_a_provider_error() {
    let mock = mock(json!({"turns": [
        {"text": "x", "fault": {"kind": "malformed", "after_events": 0}}
    ]}))
    .await;
    let (result, _) = run(&provider(&mock), &hello()).await;
    let error = result.expect_err("error");
    assert_eq!(error.kind, ProviderErrorKind::Provider);
    assert!(error.message.contains("malformed"), "{}", error.message);
}

#[tokio::test]
async fn in_stream_unavailable_before_text_is_retried() {
    retried_once_then_ok(
        json!({"text": "x", "fault": {"kind": "stream_error", "after_events": 0}}),
    )
    .await;
}

#[tokio::test]
async fn in_stream_resource_exhausted_after_text_is_returned() {
    let mock = mock(json!({"turns": [
        {"text": ["a", "b"], "fault": {"kind": "stream_error", "after_events": 1,
                                        "error_type": "RESOURCE_EXHAUSTED",
                                        "message": "Quota exceeded"}}
    ]}))
    .await;
    let (result, events) = run(&provider(&mock), &hello()).await;
    let error = result.expect_err("error");
    assert_eq!(error.kind, ProviderErrorKind::RateLimit);
    assert!(
        error.message.contains("Quota exceeded"),
        "{}",
        error.message
    );
    assert_eq!(texts(&events), "a");
}

#[tokio::test]
async fn cancel_mid_stream_returns_partial_text_promptly() {
    let mock = mock(json!({"turns": [
        {"text": ["one ", "two ", "three"], "chunk_delay_ms": 2000}
    ]}))
    .await;
    let provider = provider(&mock);
    let cancel = CancellationToken::new();
    let events = Mutex::new(Vec::new());
    let sink = |event: StreamEvent| {
        if matches!(event, StreamEvent::TextDelta(_)) {
            cancel.cancel();
        }
        events.lock().expect("lock").push(event);
    };
    let started = Instant::now();
    let response = provider
        .stream(&hello(), &sink, &cancel)
        .await
        .expect("cancelled call returns Ok");
    assert!(started.elapsed() < Duration::from_secs(1));
    assert_eq!(response.stop_reason, StopReason::Aborted);
    assert_eq!(response.text, "one ");
}

#[tokio::test]
async fn with_model_calls_the_other_model() {
    let mock = mock(json!({"turns": [{"text": "ok"}]})).await;
    let switched = provider(&mock)
        .with_model("gemini-2.5-pro")
        .expect("can switch");
    assert_eq!(switched.model(), "gemini-2.5-pro");
    let (result, _) = run(switched.as_ref(), &hello()).await;
    assert_eq!(result.expect("success").model, "gemini-2.5-pro");
    let requests = mock.requests();
    assert_eq!(
        requests[0].path,
        "/v1beta/models/gemini-2.5-pro:streamGenerateContent"
    );
    assert_eq!(requests[0].headers["x-goog-api-key"], "gm-test-key");
}

#[tokio::test]
async fn hostile_framing_gives_the_same_result() {
    let mock = mock(json!({"turns": [{
        "text": ["Hel", "lo ✓"], "split_bytes": 1,
        "sse": {"crlf": true, "comments": true, "multiline_data": true, "no_space": true}
    }]}))
    .await;
    let (result, _) = run(&provider(&mock), &hello()).await;
    assert_eq!(result.expect("success").text, "Hello ✓");
}
