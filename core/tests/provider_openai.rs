//! The OpenAI-compatible provider against mock-llm over loopback: what it sends, what it assembles
//! from the stream (including hostile framing), and how it handles every scripted fault.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mock_llm::MockLlm;
use robota::message::{ContentBlock, Message, MessageState, ProviderError, ProviderErrorKind};
use robota::provider::{
    HttpOptions, OpenAiConfig, OpenAiProvider, Provider, ProviderRequest, ProviderResponse,
    StopReason, StreamEvent, ToolDefinition,
};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

const MODEL: &str = "gpt-4o";

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

fn config(mock: &MockLlm) -> OpenAiConfig {
    OpenAiConfig {
        api_key: Some("sk-test".into()),
        base_url: Some(format!("{}/v1", mock.base_url())),
        http: fast_http(),
        ..OpenAiConfig::new(MODEL)
    }
}

fn provider_with(mock: &MockLlm, http: HttpOptions) -> OpenAiProvider {
    OpenAiProvider::new(OpenAiConfig {
        http,
        ..config(mock)
    })
    .expect("provider")
}

fn provider(mock: &MockLlm) -> OpenAiProvider {
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

async fn run(provider: &OpenAiProvider, request: &ProviderRequest) -> Outcome {
    run_with_cancel(provider, request, &CancellationToken::new()).await
}

async fn run_with_cancel(
    provider: &OpenAiProvider,
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
async fn plain_text_turn_with_usage() {
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
    // prompt_tokens = 42 with 30 cached: 12 uncached input.
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
}

#[tokio::test]
async fn request_headers_and_body_field_by_field() {
    let mock = mock(json!({"turns": [{"text": "ok"}]})).await;
    let provider = OpenAiProvider::new(OpenAiConfig {
        max_tokens: Some(512),
        http: HttpOptions {
            headers: vec![("x-gateway".into(), "g1".into())],
            ..fast_http()
        },
        ..config(&mock)
    })
    .expect("provider");
    let request = ProviderRequest {
        system: Some("You are terse.".into()),
        messages: vec![
            Message::user("read a and b"),
            Message::assistant(
                vec![
                    ContentBlock::Thinking {
                        thinking: "not sent back".into(),
                        signature: None,
                    },
                    ContentBlock::ToolUse {
                        id: "call_a".into(),
                        name: "Read".into(),
                        input: json!({"file_path": "a"}),
                    },
                    ContentBlock::ToolUse {
                        id: "call_b".into(),
                        name: "Read".into(),
                        input: json!("{bad json"),
                    },
                ],
                MessageState::Complete,
            ),
            Message::tool_result("call_a", "A", false),
            Message::tool_result("call_b", "invalid arguments", true),
            Message::assistant(vec![ContentBlock::text("Done.")], MessageState::Complete),
            Message::user("thanks"),
        ]
        .into_iter()
        .map(Into::into)
        .collect(),
        tools: vec![ToolDefinition {
            name: "Read".into(),
            description: "Read a file".into(),
            input_schema: json!({"type": "object", "properties": {"file_path": {"type": "string"}}}),
        }],
        max_tokens: None,
        temperature: Some(0.25),
        thinking: None,
        tool_choice: None,
        output_schema: None,
    };
    run(&provider, &request).await.0.expect("success");

    let requests = mock.requests();
    assert_eq!(requests.len(), 1);
    let sent = &requests[0];
    assert_eq!(sent.method, "POST");
    assert_eq!(sent.path, "/v1/chat/completions");
    assert_eq!(
        sent.headers.get("authorization").map(String::as_str),
        Some("Bearer sk-test")
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
    assert!(!sent.headers.contains_key("x-api-key"));

    let body = &sent.body;
    assert_eq!(body["model"], MODEL);
    assert_eq!(body["stream"], true);
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
    assert_eq!(body["max_tokens"], 512);
    assert_eq!(body["temperature"], 0.25);
    assert_eq!(
        body["tools"],
        json!([{"type": "function", "function": {
            "name": "Read",
            "description": "Read a file",
            "parameters": {"type": "object", "properties": {"file_path": {"type": "string"}}}
        }}])
    );
    assert_eq!(
        body["messages"],
        json!([
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": "read a and b"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_a", "type": "function", "function": {"name": "Read", "arguments": "{\"file_path\":\"a\"}"}},
                {"id": "call_b", "type": "function", "function": {"name": "Read", "arguments": "{bad json"}},
            ]},
            {"role": "tool", "tool_call_id": "call_a", "content": "A"},
            {"role": "tool", "tool_call_id": "call_b", "content": "invalid arguments"},
            {"role": "assistant", "content": "Done."},
            {"role": "user", "content": "thanks"},
        ])
    );
    let keys: Vec<&String> = body.as_object().expect("object").keys().collect();
    assert_eq!(keys.len(), 7, "no unexpected fields: {keys:?}");
    assert_eq!(body, &provider.request_body(&request));
}

#[tokio::test]
async fn local_server_without_key_and_without_usage() {
    let mock =
        mock(json!({"turns": [{"text": "hi", "usage": {"input_tokens": 9, "output_tokens": 9}}]}))
            .await;
    let provider = OpenAiProvider::new(OpenAiConfig {
        api_key: None,
        name: "ollama".into(),
        include_usage: false,
        ..config(&mock)
    })
    .expect("no key needed with a base_url");
    assert_eq!(provider.name(), "ollama");
    let response = run(&provider, &hello()).await.0.expect("success");
    assert_eq!(response.text, "hi");
    assert_eq!(
        response.usage.total_tokens(),
        0,
        "no usage chunk was asked for"
    );
    let sent = &mock.requests()[0];
    assert!(!sent.headers.contains_key("authorization"));
    assert!(sent.body.get("stream_options").is_none());
}

#[tokio::test]
async fn multi_tool_turn() {
    let mock = mock(json!({"turns": [{
        "text": "Reading both.",
        "tool_calls": [
            {"id": "call_1", "name": "Read", "input": {"file_path": "a.txt"}},
            {"name": "Grep", "input": {"pattern": "fn main", "path": "src"}}
        ]
    }]}))
    .await;
    let (result, events) = run(&provider(&mock), &hello()).await;
    let response = result.expect("success");
    assert_eq!(response.text, "Reading both.");
    assert_eq!(response.stop_reason, StopReason::ToolUse);
    assert_eq!(response.tool_calls.len(), 2);
    assert_eq!(response.tool_calls[0].id, "call_1");
    assert_eq!(
        response.tool_calls[1].id, "call_mock_0_1",
        "the server's id, verbatim"
    );
    assert_eq!(response.tool_calls[1].name, "Grep");
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
    assert_eq!(
        starts,
        vec![(0, "call_1", "Read"), (1, "call_mock_0_1", "Grep")]
    );
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
            {"id": "c1", "name": "Write", "arguments_chunks": ["{\"file_", "path\": \"x\", \"con", "tent\": \"é\"}"]},
            {"id": "c2", "name": "Bash", "raw_arguments": "{not json"},
            {"id": "c3", "name": "Ls", "arguments_chunks": []}
        ],
        "split_bytes": 5
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
        "empty arguments become {{}}"
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
async fn reasoning_content_is_thinking() {
    let mock =
        mock(json!({"turns": [{"thinking": ["Let me ", "think."], "text": "Answer."}]})).await;
    let (result, events) = run(&provider(&mock), &hello()).await;
    let response = result.expect("success");
    assert_eq!(response.thinking.len(), 1);
    assert_eq!(response.thinking[0].thinking, "Let me think.");
    assert_eq!(response.thinking[0].signature, None);
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
async fn finish_reasons_from_the_wire() {
    let mock = mock(json!({"turns": [
        {"text": "cut", "stop_reason": "length"},
        {"text": "no", "stop_reason": "content_filter"}
    ]}))
    .await;
    let provider = provider(&mock);
    for expected in [StopReason::MaxTokens, StopReason::Refusal] {
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
    ];
    for variant in variants {
        let mut turn = json!({
            "thinking": "hmm",
            "text": ["Hel", "lo ✓ ", "世界"],
            "tool_calls": [{"id": "c", "name": "Read", "input": {"file_path": "ü.txt"}}],
            "usage": {"input_tokens": 3, "output_tokens": 4}
        });
        for (key, value) in variant.as_object().expect("object") {
            turn[key] = value.clone();
        }
        let mock = mock(json!({"turns": [turn]})).await;
        let (result, events) = run(&provider(&mock), &hello()).await;
        let response = result.unwrap_or_else(|e| panic!("{variant}: {e}"));
        assert_eq!(response.text, "Hello ✓ 世界", "{variant}");
        assert_eq!(response.thinking[0].thinking, "hmm", "{variant}");
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
        {"fault": {"kind": "status", "status": 429, "retry_after": 1}},
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
    assert_eq!(*delay, Duration::from_secs(1));
    assert_eq!(error.kind, ProviderErrorKind::RateLimit);
    assert_eq!(error.provider, "openai");
    assert!(
        error.message.contains("Rate limit exceeded"),
        "{}",
        error.message
    );
    assert!(elapsed >= Duration::from_millis(950), "waited {elapsed:?}");
    assert_eq!(mock.requests().len(), 2);
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
    assert_eq!(result.expect("success").text, "made it");
    let seen: Vec<(u32, ProviderErrorKind, Option<u16>)> = retries(&events)
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
    assert_eq!(mock.requests().len(), 5);
}

#[tokio::test]
async fn auth_error_is_not_retried_and_says_what_to_set() {
    let mock = mock(json!({"turns": [
        {"fault": {"kind": "status", "status": 401}},
        {"text": "never"}
    ]}))
    .await;
    let (result, events) = run(&provider(&mock), &hello()).await;
    let error = result.expect_err("auth");
    assert_eq!(error.kind, ProviderErrorKind::Auth);
    assert!(!error.retryable);
    assert!(
        error.message.contains("Invalid API key"),
        "{}",
        error.message
    );
    assert!(
        error.message.contains("OPENAI_API_KEY"),
        "{}",
        error.message
    );
    assert!(events.is_empty());
    assert_eq!(mock.requests().len(), 1);
}

#[tokio::test]
async fn auth_hint_names_the_configured_provider() {
    let mock = mock(json!({"turns": [{"fault": {"kind": "status", "status": 403}}]})).await;
    let provider = OpenAiProvider::new(OpenAiConfig {
        name: "deepseek".into(),
        ..config(&mock)
    })
    .expect("provider");
    let error = run(&provider, &hello()).await.0.expect_err("auth");
    assert_eq!(error.kind, ProviderErrorKind::Auth);
    assert_eq!(error.provider, "deepseek");
    assert!(error.message.contains("deepseek"), "{}", error.message);
}

#[tokio::test]
async fn context_length_error() {
    let mock = mock(json!({"turns": [{"fault": {
        "kind": "status", "status": 400, "code": "context_length_exceeded",
        "message": "This model's maximum context length is 128000 tokens."
    }}]}))
    .await;
    let (result, _) = run(&provider(&mock), &hello()).await;
    let error = result.expect_err("context length");
    assert_eq!(error.kind, ProviderErrorKind::ContextLength);
    assert!(
        error.message.contains("maximum context length"),
        "{}",
        error.message
    );
    assert_eq!(mock.requests().len(), 1);
}

#[tokio::test]
async fn other_client_errors_are_invalid_request() {
    let mock = mock(json!({"turns": [
        {"fault": {"kind": "status", "status": 422, "message": "bad tools"}}
    ]}))
    .await;
    let error = run(&provider(&mock), &hello()).await.0.expect_err("422");
    assert_eq!(error.kind, ProviderErrorKind::InvalidRequest);
    assert!(error.message.contains("bad tools"));
}

#[tokio::test]
async fn reset_before_any_text_is_retried() {
    let mock = mock(json!({"turns": [
        // Only the role chunk (empty content) goes out before the reset.
        {"text": ["never ", "seen"], "fault": {"kind": "reset", "after_events": 1}},
        {"text": ["second ", "try"]}
    ]}))
    .await;
    let (result, events) = run(&provider(&mock), &hello()).await;
    assert_eq!(result.expect("retried").text, "second try");
    let retries = retries(&events);
    assert_eq!(retries.len(), 1);
    assert_eq!(retries[0].3.kind, ProviderErrorKind::Network);
    assert!(retries[0].3.message.contains(&mock.base_url()));
}

#[tokio::test]
async fn reset_after_text_was_delivered_is_an_error_not_a_retry() {
    let mock = mock(json!({"turns": [
        {"text": ["shown ", "to the host", " lost"], "fault": {"kind": "reset", "after_events": 3, "close": "fin"}},
        {"text": "must not be used"}
    ]}))
    .await;
    let (result, events) = run(&provider(&mock), &hello()).await;
    let error = result.expect_err("network error");
    assert_eq!(error.kind, ProviderErrorKind::Network);
    assert!(error.message.contains("not retried"), "{}", error.message);
    assert_eq!(texts(&events), "shown to the host");
    assert_eq!(mock.requests().len(), 1);
}

#[tokio::test]
async fn stall_hits_the_idle_timeout() {
    let mock = mock(json!({"turns": [
        {"text": ["before ", "stall"], "fault": {"kind": "stall", "after_events": 2, "ms": 5000}}
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
    assert_eq!(texts(&events), "before ");
    assert!(started.elapsed() < Duration::from_secs(4));
}

#[tokio::test]
async fn malformed_chunk_is_a_provider_error() {
    let mock = mock(json!({"turns": [
        {"text": ["a", "b"], "fault": {"kind": "malformed", "after_events": 1}}
    ]}))
    .await;
    let (result, events) = run(&provider(&mock), &hello()).await;
    let error = result.expect_err("malformed");
    assert_eq!(error.kind, ProviderErrorKind::Provider);
    assert!(error.message.contains("malformed"), "{}", error.message);
    assert!(events.is_empty());
    assert_eq!(mock.requests().len(), 1);
}

#[tokio::test]
async fn missing_done_is_a_provider_error() {
    let mock =
        mock(json!({"turns": [{"text": "almost", "fault": {"kind": "missing_terminal"}}]})).await;
    let (result, events) = run(&provider(&mock), &hello()).await;
    let error = result.expect_err("no [DONE]");
    assert_eq!(error.kind, ProviderErrorKind::Provider);
    assert!(error.message.contains("[DONE]"), "{}", error.message);
    assert_eq!(texts(&events), "almost");
}

#[tokio::test]
async fn oversized_event_is_a_provider_error() {
    let mock =
        mock(json!({"turns": [{"text": "x", "fault": {"kind": "oversized", "bytes": 300000}}]}))
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
    assert!(
        error.message.contains("max_event_bytes"),
        "{}",
        error.message
    );
}

#[tokio::test]
async fn in_stream_server_error_before_text_is_retried() {
    let mock = mock(json!({"turns": [
        {"text": "lost", "fault": {"kind": "stream_error", "after_events": 1}},
        {"text": "fine"}
    ]}))
    .await;
    let (result, events) = run(&provider(&mock), &hello()).await;
    assert_eq!(result.expect("retried").text, "fine");
    let retries = retries(&events);
    assert_eq!(retries[0].3.kind, ProviderErrorKind::Provider);
    assert!(
        retries[0].3.message.contains("Overloaded"),
        "{}",
        retries[0].3.message
    );
}

#[tokio::test]
async fn in_stream_overloaded_error_after_text_is_returned() {
    let mock = mock(json!({"turns": [
        {"text": ["partial", " more"], "fault": {"kind": "stream_error", "after_events": 2, "error_type": "overloaded_error"}},
        {"text": "unused"}
    ]}))
    .await;
    let (result, events) = run(&provider(&mock), &hello()).await;
    let error = result.expect_err("overloaded");
    assert_eq!(error.kind, ProviderErrorKind::Overloaded);
    assert_eq!(texts(&events), "partial");
    assert_eq!(mock.requests().len(), 1);
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
    assert!(response.text.len() < 400);
    assert_eq!(response.text, *seen.lock().expect("lock"));
    let cancelled_at = cancelled_at.lock().expect("lock").expect("cancelled");
    assert!(returned.duration_since(cancelled_at) < Duration::from_millis(500));
}

#[tokio::test]
async fn cancel_during_retry_backoff_returns_promptly() {
    let mock = mock(json!({"turns": [
        {"fault": {"kind": "status", "status": 503, "retry_after": "30"}},
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
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(mock.requests().len(), 1);
}
