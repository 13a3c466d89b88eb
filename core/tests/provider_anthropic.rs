//! The Anthropic provider against mock-llm over loopback: what it sends, what it assembles from
//! the stream (including hostile framing), and how it handles every scripted fault.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mock_llm::MockLlm;
use robota::message::{ContentBlock, Message, MessageState, ProviderError, ProviderErrorKind};
use robota::provider::{
    AnthropicConfig, AnthropicProvider, HttpOptions, Provider, ProviderRequest, ProviderResponse,
    StopReason, StreamEvent, ThinkingBlock, ThinkingConfig, ToolDefinition,
};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

const MODEL: &str = "claude-sonnet-4-5";

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

fn provider_with(mock: &MockLlm, http: HttpOptions) -> AnthropicProvider {
    AnthropicProvider::new(AnthropicConfig {
        api_key: Some("sk-ant-test".into()),
        base_url: Some(mock.base_url()),
        http,
        ..AnthropicConfig::new(MODEL)
    })
    .expect("provider")
}

fn provider(mock: &MockLlm) -> AnthropicProvider {
    provider_with(mock, fast_http())
}

fn hello() -> ProviderRequest {
    ProviderRequest {
        messages: vec![Message::user("hello")]
            .into_iter()
            .map(Into::into)
            .collect(),
        ..ProviderRequest::default()
    }
}

type Outcome = (Result<ProviderResponse, ProviderError>, Vec<StreamEvent>);

async fn run(provider: &AnthropicProvider, request: &ProviderRequest) -> Outcome {
    run_with_cancel(provider, request, &CancellationToken::new()).await
}

async fn run_with_cancel(
    provider: &AnthropicProvider,
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

fn retries(events: &[StreamEvent]) -> Vec<(u32, u32, Duration, ProviderError)> {
    events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::Retry {
                attempt,
                max_attempts,
                delay,
                error,
            } => Some((*attempt, *max_attempts, *delay, error.clone())),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn plain_text_turn() {
    let mock = mock(json!({"turns": [{
        "text": ["Hel", "lo, ", "wörld ✓"],
        "usage": {"input_tokens": 12, "output_tokens": 5}
    }]}))
    .await;
    let (result, events) = run(&provider(&mock), &hello()).await;
    let response = result.expect("success");
    assert_eq!(response.text, "Hello, wörld ✓");
    assert_eq!(response.stop_reason, StopReason::EndTurn);
    assert_eq!(response.model, MODEL, "model echoed by the server");
    assert_eq!(response.usage.input_tokens, 12);
    assert_eq!(response.usage.output_tokens, 5);
    assert!(response.tool_calls.is_empty());
    assert_eq!(
        events,
        vec![
            StreamEvent::TextDelta("Hel".into()),
            StreamEvent::TextDelta("lo, ".into()),
            StreamEvent::TextDelta("wörld ✓".into()),
        ]
    );
    assert_eq!(mock.requests().len(), 1);
}

#[tokio::test]
async fn request_headers_and_body_field_by_field() {
    let mock = mock(json!({"turns": [{"text": "ok"}]})).await;
    let provider = AnthropicProvider::new(AnthropicConfig {
        api_key: Some("sk-ant-test".into()),
        base_url: Some(format!("{}/", mock.base_url())),
        max_tokens: Some(2048),
        http: HttpOptions {
            headers: vec![("x-gateway".into(), "g1".into())],
            ..fast_http()
        },
        // Compared field by field without cache breakpoints; they have tests of their own
        // (`tests/prompt_cache.rs`).
        prompt_caching: None,
        ..AnthropicConfig::new(MODEL)
    })
    .expect("provider");
    let request = ProviderRequest {
        system: Some("You are terse.".into()),
        messages: vec![
            Message::user("read a and b"),
            Message::assistant(
                vec![
                    ContentBlock::Thinking {
                        thinking: "plan".into(),
                        signature: Some("sig1".into()),
                    },
                    ContentBlock::text("reading"),
                    ContentBlock::ToolUse {
                        id: "toolu_a".into(),
                        name: "Read".into(),
                        input: json!({"file_path": "a"}),
                    },
                    ContentBlock::ToolUse {
                        id: "toolu_b".into(),
                        name: "Read".into(),
                        input: json!("{bad json"),
                    },
                ],
                MessageState::Complete,
            ),
            Message::tool_result("toolu_a", "A", false),
            Message::tool_result("toolu_b", "invalid arguments", true),
            Message::user(""),
        ]
        .into_iter()
        .map(Into::into)
        .collect(),
        tools: vec![ToolDefinition {
            name: "Read".into(),
            description: "Read a file".into(),
            input_schema: json!({"type": "object", "properties": {"file_path": {"type": "string"}}, "required": ["file_path"]}),
        }],
        max_tokens: None,
        temperature: Some(0.5),
        thinking: Some(ThinkingConfig {
            budget_tokens: 1024,
        }),
        tool_choice: None,
        output_schema: None,
    };
    let (result, _) = run(&provider, &request).await;
    result.expect("success");

    let requests = mock.requests();
    assert_eq!(requests.len(), 1);
    let sent = &requests[0];
    assert_eq!(sent.method, "POST");
    assert_eq!(sent.path, "/v1/messages");
    assert_eq!(
        sent.headers.get("x-api-key").map(String::as_str),
        Some("sk-ant-test")
    );
    assert_eq!(
        sent.headers.get("anthropic-version").map(String::as_str),
        Some("2023-06-01")
    );
    assert_eq!(
        sent.headers.get("content-type").map(String::as_str),
        Some("application/json")
    );
    assert_eq!(
        sent.headers.get("accept").map(String::as_str),
        Some("text/event-stream")
    );
    assert_eq!(
        sent.headers.get("x-gateway").map(String::as_str),
        Some("g1")
    );
    assert!(!sent.headers.contains_key("authorization"));

    let body = &sent.body;
    assert_eq!(body["model"], MODEL);
    assert_eq!(body["max_tokens"], 2048);
    assert_eq!(body["stream"], true);
    assert_eq!(body["system"], "You are terse.");
    assert_eq!(body["temperature"], 0.5);
    assert_eq!(
        body["thinking"],
        json!({"type": "enabled", "budget_tokens": 1024})
    );
    assert_eq!(
        body["tools"],
        json!([{
            "name": "Read",
            "description": "Read a file",
            "input_schema": {"type": "object", "properties": {"file_path": {"type": "string"}}, "required": ["file_path"]}
        }])
    );
    assert_eq!(
        body["messages"],
        json!([
            {"role": "user", "content": [{"type": "text", "text": "read a and b"}]},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "plan", "signature": "sig1"},
                {"type": "text", "text": "reading"},
                {"type": "tool_use", "id": "toolu_a", "name": "Read", "input": {"file_path": "a"}},
                {"type": "tool_use", "id": "toolu_b", "name": "Read", "input": {}},
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_a", "content": "A", "is_error": false},
                {"type": "tool_result", "tool_use_id": "toolu_b", "content": "invalid arguments", "is_error": true},
            ]},
        ])
    );
    let keys: Vec<&String> = body.as_object().expect("object").keys().collect();
    assert_eq!(keys.len(), 8, "no unexpected fields: {keys:?}");
    assert_eq!(body, &provider.request_body(&request));
}

#[tokio::test]
async fn multi_tool_turn() {
    let mock = mock(json!({"turns": [{
        "text": "Reading both.",
        "tool_calls": [
            {"id": "toolu_1", "name": "Read", "input": {"file_path": "a.txt"}},
            {"id": "toolu_2", "name": "Grep", "input": {"pattern": "fn main", "path": "src"}}
        ]
    }]}))
    .await;
    let (result, events) = run(&provider(&mock), &hello()).await;
    let response = result.expect("success");
    assert_eq!(response.text, "Reading both.");
    assert_eq!(response.stop_reason, StopReason::ToolUse);
    assert_eq!(response.tool_calls.len(), 2);
    assert_eq!(response.tool_calls[0].id, "toolu_1");
    assert_eq!(response.tool_calls[0].name, "Read");
    let args: Value = serde_json::from_str(&response.tool_calls[0].arguments).expect("json");
    assert_eq!(args, json!({"file_path": "a.txt"}));
    assert_eq!(response.tool_calls[1].id, "toolu_2");
    let args: Value = serde_json::from_str(&response.tool_calls[1].arguments).expect("json");
    assert_eq!(args, json!({"pattern": "fn main", "path": "src"}));

    let starts: Vec<(usize, &str, &str)> = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::ToolCallStart { index, id, name } => {
                Some((*index, id.as_str(), name.as_str()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(starts, vec![(0, "toolu_1", "Read"), (1, "toolu_2", "Grep")]);
    for (index, call) in response.tool_calls.iter().enumerate() {
        let streamed: String = events
            .iter()
            .filter_map(|e| match e {
                StreamEvent::ToolCallDelta {
                    index: i,
                    partial_json,
                } if *i == index => Some(partial_json.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(streamed, call.arguments, "deltas of call {index} add up");
    }
}

#[tokio::test]
async fn tool_arguments_split_across_chunks_and_invalid_arguments() {
    let mock = mock(json!({"turns": [{
        "tool_calls": [
            {"id": "t1", "name": "Write", "arguments_chunks": ["{\"file_", "path\": \"x\", \"con", "tent\": \"é\"}"]},
            {"id": "t2", "name": "Bash", "raw_arguments": "{not json"},
            {"id": "t3", "name": "Ls", "arguments_chunks": []}
        ],
        "split_bytes": 7
    }]}))
    .await;
    let (result, events) = run(&provider(&mock), &hello()).await;
    let response = result.expect("success");
    assert_eq!(
        response.tool_calls[0].arguments,
        "{\"file_path\": \"x\", \"content\": \"é\"}"
    );
    assert_eq!(response.tool_calls[1].arguments, "{not json");
    assert_eq!(
        response.tool_calls[2].arguments, "{}",
        "no deltas means {{}}"
    );
    let deltas: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::ToolCallDelta {
                index: 0,
                partial_json,
            } => Some(partial_json.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(
        deltas,
        vec!["{\"file_", "path\": \"x\", \"con", "tent\": \"é\"}"]
    );
}

#[tokio::test]
async fn thinking_with_signature() {
    let mock = mock(json!({"turns": [{
        "thinking": ["Let me ", "think."],
        "thinking_signature": "sig_abc",
        "text": "Answer."
    }]}))
    .await;
    let (result, events) = run(&provider(&mock), &hello()).await;
    let response = result.expect("success");
    assert_eq!(
        response.thinking,
        vec![ThinkingBlock {
            thinking: "Let me think.".into(),
            signature: Some("sig_abc".into()),
        }]
    );
    assert_eq!(response.text, "Answer.");
    assert_eq!(
        events,
        vec![
            StreamEvent::ThinkingDelta("Let me ".into()),
            StreamEvent::ThinkingDelta("think.".into()),
            StreamEvent::TextDelta("Answer.".into()),
        ]
    );
}

#[tokio::test]
async fn usage_including_cache_fields() {
    let mock = mock(json!({"turns": [{
        "text": "x",
        "usage": {"input_tokens": 100, "output_tokens": 42, "cache_creation_input_tokens": 7, "cache_read_input_tokens": 900}
    }]}))
    .await;
    let response = run(&provider(&mock), &hello()).await.0.expect("success");
    assert_eq!(response.usage.input_tokens, 100);
    assert_eq!(response.usage.output_tokens, 42);
    assert_eq!(response.usage.cache_creation_input_tokens, 7);
    assert_eq!(response.usage.cache_read_input_tokens, 900);
}

#[tokio::test]
async fn stop_reasons_from_the_wire() {
    let mock = mock(json!({"turns": [
        {"text": "cut", "stop_reason": "max_tokens"},
        {"text": "no", "stop_reason": "refusal"},
        {"text": "s", "stop_reason": "stop_sequence"}
    ]}))
    .await;
    let provider = provider(&mock);
    for expected in [
        StopReason::MaxTokens,
        StopReason::Refusal,
        StopReason::StopSequence,
    ] {
        assert_eq!(
            run(&provider, &hello()).await.0.expect("ok").stop_reason,
            expected
        );
    }
}

#[tokio::test]
async fn hostile_wire_framing_gives_the_same_result() {
    let variants = [
        json!({"split_bytes": 1}),
        json!({"split_bytes": 3, "sse": {"crlf": true}}),
        json!({"sse": {"comments": true}}),
        json!({"sse": {"multiline_data": true}}),
        json!({"sse": {"no_space": true}}),
        json!({"split_bytes": 1, "sse": {"crlf": true, "comments": true, "multiline_data": true, "no_space": true}}),
        json!({"split_bytes": 2, "sse": {"crlf": true, "multiline_data": true}}),
    ];
    for variant in variants {
        let mut turn = json!({
            "thinking": ["th", "ink"],
            "text": ["Hel", "lo ✓ ", "世界"],
            "tool_calls": [{"id": "t", "name": "Read", "input": {"file_path": "ü.txt"}}],
            "usage": {"input_tokens": 3, "output_tokens": 4}
        });
        for (key, value) in variant.as_object().expect("object") {
            turn[key] = value.clone();
        }
        let mock = mock(json!({"turns": [turn]})).await;
        let (result, events) = run(&provider(&mock), &hello()).await;
        let response = result.unwrap_or_else(|e| panic!("{variant}: {e}"));
        assert_eq!(response.text, "Hello ✓ 世界", "{variant}");
        assert_eq!(response.thinking[0].thinking, "think", "{variant}");
        assert_eq!(response.thinking[0].signature.as_deref(), Some("sig_mock"));
        assert_eq!(response.tool_calls.len(), 1, "{variant}");
        let args: Value = serde_json::from_str(&response.tool_calls[0].arguments).expect("json");
        assert_eq!(args, json!({"file_path": "ü.txt"}), "{variant}");
        assert_eq!(response.usage.output_tokens, 4, "{variant}");
        assert_eq!(texts(&events), "Hello ✓ 世界", "{variant}");
    }
}

// ---- faults ------------------------------------------------------------------------------------

#[tokio::test]
async fn rate_limit_with_retry_after_then_success() {
    let mock = mock(json!({"turns": [
        {"fault": {"kind": "status", "status": 429, "retry_after": "1"}},
        {"text": "finally"}
    ]}))
    .await;
    let started = Instant::now();
    let (result, events) = run(&provider(&mock), &hello()).await;
    let elapsed = started.elapsed();
    assert_eq!(result.expect("retried to success").text, "finally");
    let retries = retries(&events);
    assert_eq!(retries.len(), 1);
    let (attempt, max_attempts, delay, error) = &retries[0];
    assert_eq!((*attempt, *max_attempts), (1, 5));
    assert_eq!(
        *delay,
        Duration::from_secs(1),
        "retry-after honoured exactly"
    );
    assert_eq!(error.kind, ProviderErrorKind::RateLimit);
    assert_eq!(error.status, Some(429));
    assert_eq!(error.retry_after, Some(Duration::from_secs(1)));
    assert!(
        error.message.contains("Rate limit exceeded"),
        "{}",
        error.message
    );
    assert!(elapsed >= Duration::from_millis(950), "waited {elapsed:?}");
    assert_eq!(mock.requests().len(), 2);
}

#[tokio::test]
async fn retry_after_ms_header_is_honoured() {
    let mock = mock(json!({"turns": [
        {"fault": {"kind": "status", "status": 529, "headers": {"retry-after-ms": "150"}}},
        {"text": "ok"}
    ]}))
    .await;
    let (result, events) = run(&provider(&mock), &hello()).await;
    result.expect("success");
    let retries = retries(&events);
    assert_eq!(retries[0].2, Duration::from_millis(150));
    assert_eq!(retries[0].3.kind, ProviderErrorKind::Overloaded);
}

#[tokio::test]
async fn server_errors_are_retried_until_success() {
    let mock = mock(json!({"turns": [
        {"fault": {"kind": "status", "status": 500}},
        {"fault": {"kind": "status", "status": 502}},
        {"fault": {"kind": "status", "status": 503}},
        {"fault": {"kind": "status", "status": 529}},
        {"text": "made it"}
    ]}))
    .await;
    let (result, events) = run(&provider(&mock), &hello()).await;
    assert_eq!(result.expect("success on the 5th attempt").text, "made it");
    let retries = retries(&events);
    let seen: Vec<(u32, ProviderErrorKind, Option<u16>)> = retries
        .iter()
        .map(|(attempt, _, _, error)| (*attempt, error.kind, error.status))
        .collect();
    assert_eq!(
        seen,
        vec![
            (1, ProviderErrorKind::Provider, Some(500)),
            (2, ProviderErrorKind::Provider, Some(502)),
            (3, ProviderErrorKind::Provider, Some(503)),
            (4, ProviderErrorKind::Overloaded, Some(529)),
        ]
    );
    for (attempt, _, delay, _) in &retries {
        // Full jitter: anywhere from 0 to the capped exponential ceiling (20 ms here).
        assert!(
            *delay <= Duration::from_millis(20),
            "attempt {attempt}: {delay:?}"
        );
    }
    assert_eq!(mock.requests().len(), 5);
}

#[tokio::test]
async fn retries_give_up_after_max_attempts() {
    let mock =
        mock(json!({"repeat": true, "turns": [{"fault": {"kind": "status", "status": 503}}]}))
            .await;
    let provider = provider_with(
        &mock,
        HttpOptions {
            max_retries: 2,
            ..fast_http()
        },
    );
    let (result, events) = run(&provider, &hello()).await;
    let error = result.expect_err("gives up");
    assert_eq!(error.kind, ProviderErrorKind::Provider);
    assert_eq!(error.status, Some(503));
    assert!(error.retryable);
    assert!(
        error.message.contains("Service unavailable"),
        "{}",
        error.message
    );
    assert_eq!(retries(&events).len(), 2);
    assert_eq!(mock.requests().len(), 3);
}

#[tokio::test]
async fn auth_error_is_not_retried_and_says_what_to_set() {
    let mock = mock(json!({"turns": [
        {"fault": {"kind": "status", "status": 401, "message": "invalid x-api-key"}},
        {"text": "never"}
    ]}))
    .await;
    let (result, events) = run(&provider(&mock), &hello()).await;
    let error = result.expect_err("auth");
    assert_eq!(error.kind, ProviderErrorKind::Auth);
    assert_eq!(error.status, Some(401));
    assert!(!error.retryable);
    assert!(
        error.message.contains("invalid x-api-key"),
        "{}",
        error.message
    );
    assert!(
        error.message.contains("ANTHROPIC_API_KEY"),
        "{}",
        error.message
    );
    assert!(
        error.message.contains("req_mock_0"),
        "request id: {}",
        error.message
    );
    assert!(events.is_empty());
    assert_eq!(mock.requests().len(), 1);
}

#[tokio::test]
async fn context_length_error() {
    let mock = mock(json!({"turns": [{"fault": {
        "kind": "status", "status": 400,
        "message": "prompt is too long: 210000 tokens > 200000 maximum"
    }}]}))
    .await;
    let (result, events) = run(&provider(&mock), &hello()).await;
    let error = result.expect_err("context length");
    assert_eq!(error.kind, ProviderErrorKind::ContextLength);
    assert!(
        error.message.contains("prompt is too long"),
        "{}",
        error.message
    );
    assert!(!error.retryable);
    assert!(events.is_empty());
}

#[tokio::test]
async fn other_client_errors_are_invalid_request() {
    let mock = mock(json!({"turns": [
        {"fault": {"kind": "status", "status": 400, "message": "messages.0.content: bad"}},
        {"fault": {"kind": "status", "status": 404, "message": "model: nope"}}
    ]}))
    .await;
    let provider = provider(&mock);
    let error = run(&provider, &hello()).await.0.expect_err("400");
    assert_eq!(error.kind, ProviderErrorKind::InvalidRequest);
    assert!(error.message.contains("messages.0.content: bad"));
    let error = run(&provider, &hello()).await.0.expect_err("404");
    assert_eq!(error.kind, ProviderErrorKind::InvalidRequest);
    assert_eq!(mock.requests().len(), 2, "neither was retried");
}

#[tokio::test]
async fn reset_before_any_text_is_retried() {
    for close in ["rst", "fin"] {
        let mock = mock(json!({"turns": [
            // message_start, content_block_start, ping: no delta reached the host yet.
            {"text": ["never ", "seen"], "fault": {"kind": "reset", "after_events": 3, "close": close}},
            {"text": ["second ", "try"]}
        ]}))
        .await;
        let (result, events) = run(&provider(&mock), &hello()).await;
        assert_eq!(result.expect("retried").text, "second try", "{close}");
        let retries = retries(&events);
        assert_eq!(retries.len(), 1, "{close}");
        assert_eq!(retries[0].3.kind, ProviderErrorKind::Network, "{close}");
        assert!(
            retries[0].3.message.contains(&mock.base_url()),
            "names the base URL: {}",
            retries[0].3.message
        );
        assert_eq!(texts(&events), "second try", "{close}");
    }
}

#[tokio::test]
async fn reset_after_text_was_delivered_is_an_error_not_a_retry() {
    let mock = mock(json!({"turns": [
        {"text": ["shown ", "to the host", " lost"], "fault": {"kind": "reset", "after_events": 5}},
        {"text": "must not be used"}
    ]}))
    .await;
    let (result, events) = run(&provider(&mock), &hello()).await;
    let error = result.expect_err("network error");
    assert_eq!(error.kind, ProviderErrorKind::Network);
    assert!(error.message.contains("not retried"), "{}", error.message);
    assert_eq!(texts(&events), "shown to the host");
    assert!(retries(&events).is_empty());
    assert_eq!(mock.requests().len(), 1);
}

#[tokio::test]
async fn stall_hits_the_idle_timeout() {
    let mock = mock(json!({"turns": [
        {"text": ["before ", "stall"], "fault": {"kind": "stall", "after_events": 4, "ms": 5000}}
    ]}))
    .await;
    let provider = provider_with(
        &mock,
        HttpOptions {
            idle_timeout: Duration::from_millis(300),
            ..fast_http()
        },
    );
    let started = Instant::now();
    let (result, events) = run(&provider, &hello()).await;
    let error = result.expect_err("idle timeout");
    assert_eq!(error.kind, ProviderErrorKind::Network);
    assert!(error.message.contains("idle timeout"), "{}", error.message);
    assert!(error.message.contains("300 ms"), "{}", error.message);
    assert_eq!(texts(&events), "before ");
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "did not wait for the stall to end"
    );
}

#[tokio::test]
async fn stall_before_any_output_is_retried() {
    let mock = mock(json!({"turns": [
        {"fault": {"kind": "stall", "after_events": 1, "ms": 5000}},
        {"text": "recovered"}
    ]}))
    .await;
    let provider = provider_with(
        &mock,
        HttpOptions {
            idle_timeout: Duration::from_millis(300),
            ..fast_http()
        },
    );
    let (result, events) = run(&provider, &hello()).await;
    assert_eq!(result.expect("retried").text, "recovered");
    assert_eq!(retries(&events)[0].3.kind, ProviderErrorKind::Network);
}

#[tokio::test]
async fn malformed_event_is_a_provider_error() {
    let mock = mock(json!({"turns": [
        {"text": ["a", "b"], "fault": {"kind": "malformed", "after_events": 2}},
        {"text": "not retried"}
    ]}))
    .await;
    let (result, events) = run(&provider(&mock), &hello()).await;
    let error = result.expect_err("malformed");
    assert_eq!(error.kind, ProviderErrorKind::Provider);
    assert!(error.message.contains("malformed"), "{}", error.message);
    assert!(!error.retryable);
    assert!(events.is_empty());
    assert_eq!(mock.requests().len(), 1);
}

#[tokio::test]
async fn missing_terminal_event_is_a_provider_error() {
    let mock =
        mock(json!({"turns": [{"text": "almost", "fault": {"kind": "missing_terminal"}}]})).await;
    let (result, events) = run(&provider(&mock), &hello()).await;
    let error = result.expect_err("no message_stop");
    assert_eq!(error.kind, ProviderErrorKind::Provider);
    assert!(
        error.message.contains("stream ended before message_stop"),
        "{}",
        error.message
    );
    assert_eq!(texts(&events), "almost");
}

#[tokio::test]
async fn oversized_event_is_a_provider_error() {
    let mock = mock(json!({"turns": [
        {"text": "x", "fault": {"kind": "oversized", "bytes": 300000}},
        {"text": "big but allowed", "fault": {"kind": "oversized", "bytes": 200000}}
    ]}))
    .await;
    let provider = provider_with(
        &mock,
        HttpOptions {
            max_event_bytes: 256 * 1024,
            ..fast_http()
        },
    );
    let error = run(&provider, &hello()).await.0.expect_err("oversized");
    assert_eq!(error.kind, ProviderErrorKind::Provider);
    assert!(error.message.contains("262144"), "{}", error.message);
    assert!(
        error.message.contains("max_event_bytes"),
        "{}",
        error.message
    );
    let response = run(&provider, &hello()).await.0.expect("under the cap");
    assert_eq!(response.text, "big but allowed");
}

#[tokio::test]
async fn in_stream_overloaded_error_before_text_is_retried() {
    let mock = mock(json!({"turns": [
        {"text": "lost", "fault": {"kind": "stream_error", "after_events": 1}},
        {"text": "fine"}
    ]}))
    .await;
    let (result, events) = run(&provider(&mock), &hello()).await;
    assert_eq!(result.expect("retried").text, "fine");
    let retries = retries(&events);
    assert_eq!(retries[0].3.kind, ProviderErrorKind::Overloaded);
    assert!(retries[0].3.message.contains("Overloaded"));
}

#[tokio::test]
async fn in_stream_overloaded_error_after_text_is_returned() {
    let mock = mock(json!({"turns": [
        {"text": ["partial", " more"], "fault": {"kind": "stream_error", "after_events": 4}},
        {"text": "unused"}
    ]}))
    .await;
    let (result, events) = run(&provider(&mock), &hello()).await;
    let error = result.expect_err("overloaded");
    assert_eq!(error.kind, ProviderErrorKind::Overloaded);
    assert_eq!(texts(&events), "partial");
    assert_eq!(mock.requests().len(), 1);
}

#[tokio::test]
async fn connection_refused_is_a_network_error_naming_the_url() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    drop(listener); // nothing listens there now
    let provider = AnthropicProvider::new(AnthropicConfig {
        api_key: Some("k".into()),
        base_url: Some(format!("http://{addr}")),
        http: HttpOptions {
            max_retries: 1,
            ..fast_http()
        },
        ..AnthropicConfig::new(MODEL)
    })
    .expect("provider");
    let (result, events) = run(&provider, &hello()).await;
    let error = result.expect_err("refused");
    assert_eq!(error.kind, ProviderErrorKind::Network);
    assert!(
        error.message.contains(&format!("http://{addr}")),
        "{}",
        error.message
    );
    assert_eq!(retries(&events).len(), 1);
}

// ---- cancellation ------------------------------------------------------------------------------

#[tokio::test]
async fn cancel_mid_stream_returns_partial_text_promptly() {
    let mock = mock(json!({"turns": [{
        "text": {"repeat": "tok ", "count": 100},
        "chunk_delay_ms": 50
    }]}))
    .await;
    let provider = provider(&mock);
    let cancel = CancellationToken::new();
    let seen = Arc::new(Mutex::new(String::new()));
    let cancelled_at = Arc::new(Mutex::new(None::<Instant>));
    let sink = {
        let seen = Arc::clone(&seen);
        let cancel = cancel.clone();
        let cancelled_at = Arc::clone(&cancelled_at);
        move |event: StreamEvent| {
            if let StreamEvent::TextDelta(text) = event {
                let mut seen = seen.lock().expect("lock");
                seen.push_str(&text);
                if seen.len() >= 12 && !cancel.is_cancelled() {
                    // Cancel from another task, as a host's "stop" button would.
                    let cancel = cancel.clone();
                    let cancelled_at = Arc::clone(&cancelled_at);
                    tokio::spawn(async move {
                        *cancelled_at.lock().expect("lock") = Some(Instant::now());
                        cancel.cancel();
                    });
                }
            }
        }
    };
    let response = provider
        .stream(&hello(), &sink, &cancel)
        .await
        .expect("cancellation is not an error");
    let returned = Instant::now();
    assert_eq!(response.stop_reason, StopReason::Aborted);
    assert!(
        response.text.starts_with("tok tok tok "),
        "{:?}",
        response.text
    );
    assert!(
        response.text.len() < 400,
        "stopped early: {}",
        response.text.len()
    );
    assert_eq!(response.text, *seen.lock().expect("lock"));
    let cancelled_at = cancelled_at.lock().expect("lock").expect("cancelled");
    assert!(
        returned.duration_since(cancelled_at) < Duration::from_millis(500),
        "returned {:?} after cancel",
        returned.duration_since(cancelled_at)
    );
}

#[tokio::test]
async fn cancel_from_inside_the_sink_stops_before_the_next_delta() {
    let mock = mock(json!({"turns": [{"text": ["one", "two", "three"]}]})).await;
    let provider = provider(&mock);
    let cancel = CancellationToken::new();
    let events = Mutex::new(Vec::new());
    let sink = |event: StreamEvent| {
        events.lock().expect("lock").push(event);
        cancel.cancel();
    };
    let response = provider.stream(&hello(), &sink, &cancel).await.expect("ok");
    assert_eq!(response.stop_reason, StopReason::Aborted);
    assert_eq!(response.text, "one");
    assert_eq!(events.into_inner().expect("lock").len(), 1);
}

#[tokio::test]
async fn cancel_during_retry_backoff_returns_promptly() {
    let mock = mock(json!({"turns": [
        {"fault": {"kind": "status", "status": 429, "retry_after": "30"}},
        {"text": "too late"}
    ]}))
    .await;
    let provider = provider(&mock);
    let cancel = CancellationToken::new();
    let sink = |event: StreamEvent| {
        if matches!(event, StreamEvent::Retry { .. }) {
            cancel.cancel();
        }
    };
    let started = Instant::now();
    let response = provider.stream(&hello(), &sink, &cancel).await.expect("ok");
    assert_eq!(response.stop_reason, StopReason::Aborted);
    assert_eq!(response.text, "");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(mock.requests().len(), 1);
}

#[tokio::test]
async fn cancel_while_waiting_for_the_first_byte() {
    let mock =
        mock(json!({"turns": [{"fault": {"kind": "stall", "after_events": 0, "ms": 10000}}]}))
            .await;
    let provider = provider(&mock);
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        trigger.cancel();
    });
    let started = Instant::now();
    let (result, _) = run_with_cancel(&provider, &hello(), &cancel).await;
    assert_eq!(result.expect("ok").stop_reason, StopReason::Aborted);
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn already_cancelled_sends_nothing() {
    let mock = mock(json!({"turns": [{"text": "x"}]})).await;
    let cancel = CancellationToken::new();
    cancel.cancel();
    let (result, events) = run_with_cancel(&provider(&mock), &hello(), &cancel).await;
    assert_eq!(result.expect("ok").stop_reason, StopReason::Aborted);
    assert!(events.is_empty());
    assert!(mock.requests().is_empty());
}
