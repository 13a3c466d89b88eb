//! The OpenAI Responses provider against mock-llm's Responses dialect over loopback: what it
//! sends, what it assembles from the event stream (text, reasoning, tool calls, refusals,
//! incomplete answers, usage), the stateless-reasoning round trip, and every scripted fault.

mod provider_common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mock_llm::MockLlm;
use provider_common::run;
use robota::message::{ContentBlock, Message, MessageState, ProviderError, ProviderErrorKind};
use robota::provider::{
    HttpOptions, OpenAiConfig, OpenAiResponsesProvider, OutputSchema, Provider, ProviderRequest,
    ProviderResponse, StopReason, StreamEvent, ThinkingConfig, ToolChoice, ToolDefinition,
};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

const MODEL: &str = "gpt-4.1";
const REASONING_MODEL: &str = "o4-mini";

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

fn config(mock: &MockLlm, model: &str) -> OpenAiConfig {
    OpenAiConfig {
        api_key: Some("sk-test".into()),
        base_url: Some(format!("{}/v1", mock.base_url())),
        http: fast_http(),
        structured_outputs: Some(true),
        ..OpenAiConfig::new(model)
    }
}

fn provider_with(mock: &MockLlm, http: HttpOptions) -> OpenAiResponsesProvider {
    OpenAiResponsesProvider::new(OpenAiConfig {
        http,
        ..config(mock, MODEL)
    })
    .expect("provider")
}

fn provider(mock: &MockLlm) -> OpenAiResponsesProvider {
    provider_with(mock, fast_http())
}

fn request(messages: Vec<Message>) -> ProviderRequest {
    ProviderRequest {
        messages: messages.into_iter().map(Into::into).collect(),
        ..ProviderRequest::default()
    }
}

fn hello() -> ProviderRequest {
    request(vec![Message::user("hello")])
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

fn retry_errors(events: &[StreamEvent]) -> Vec<ProviderError> {
    events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::Retry { error, .. } => Some(error.clone()),
            _ => None,
        })
        .collect()
}

/// The assistant message the engine stores for `response` (thinking with its signature, text,
/// tool calls), as the engine's round builds it.
fn assistant_message(response: &ProviderResponse) -> Message {
    let mut content: Vec<ContentBlock> = response
        .thinking
        .iter()
        .map(|block| ContentBlock::Thinking {
            thinking: block.thinking.clone(),
            signature: block.signature.clone(),
        })
        .collect();
    if !response.text.is_empty() {
        content.push(ContentBlock::text(response.text.clone()));
    }
    for call in &response.tool_calls {
        content.push(ContentBlock::ToolUse {
            id: call.id.clone(),
            name: call.name.clone(),
            input: serde_json::from_str(&call.arguments).expect("arguments are JSON"),
        });
    }
    Message::assistant(content, MessageState::Complete)
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
    // input_tokens = 42 with 30 cached: 12 uncached input.
    assert_eq!(response.usage.input_tokens, 12);
    assert_eq!(response.usage.cache_read_input_tokens, 30);
    assert_eq!(response.usage.output_tokens, 5);
    assert!(response.thinking.is_empty());
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
    let provider = OpenAiResponsesProvider::new(OpenAiConfig {
        max_tokens: Some(512),
        http: HttpOptions {
            headers: vec![("x-gateway".into(), "g1".into())],
            ..fast_http()
        },
        ..config(&mock, MODEL)
    })
    .expect("provider");
    let schema = json!({"type": "object", "properties": {"a": {"type": "string"}},
                        "required": ["a"], "additionalProperties": false});
    let request = ProviderRequest {
        system: Some("You are terse.".into()),
        messages: vec![
            Message::system("mid-conversation note"),
            Message::user("read a"),
            Message::assistant(
                vec![
                    ContentBlock::text("Reading."),
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
            Message::user("thanks"),
        ]
        .into_iter()
        .map(Into::into)
        .collect(),
        tools: vec![ToolDefinition {
            name: "Read".into(),
            description: "Read a file".into(),
            input_schema: json!({"type": "object"}),
        }],
        max_tokens: None,
        temperature: Some(0.25),
        thinking: None,
        tool_choice: Some(ToolChoice::Tool("Read".into())),
        output_schema: Some(OutputSchema {
            name: "answer".into(),
            schema: schema.clone(),
        }),
    };
    run(&provider, &request).await.0.expect("success");

    let requests = mock.requests();
    assert_eq!(requests.len(), 1);
    let sent = &requests[0];
    assert_eq!(sent.method, "POST");
    assert_eq!(sent.path, "/v1/responses");
    assert_eq!(sent.headers["authorization"], "Bearer sk-test");
    assert_eq!(sent.headers["content-type"], "application/json");
    assert_eq!(sent.headers["accept"], "text/event-stream");
    assert_eq!(sent.headers["x-gateway"], "g1");
    assert_eq!(
        sent.body,
        json!({
            "model": MODEL,
            "instructions": "You are terse.",
            "input": [
                {"role": "system", "content": "mid-conversation note"},
                {"role": "user", "content": "read a"},
                {"role": "assistant", "content": "Reading."},
                {"type": "function_call", "call_id": "call_a", "name": "Read", "arguments": "{\"file_path\":\"a\"}"},
                {"type": "function_call", "call_id": "call_b", "name": "Read", "arguments": "{bad json"},
                {"type": "function_call_output", "call_id": "call_a", "output": "A"},
                {"type": "function_call_output", "call_id": "call_b", "output": "invalid arguments"},
                {"role": "user", "content": "thanks"},
            ],
            "stream": true,
            "store": false,
            "tools": [{"type": "function", "name": "Read", "description": "Read a file",
                       "parameters": {"type": "object"}}],
            "tool_choice": {"type": "function", "name": "Read"},
            "max_output_tokens": 512,
            "temperature": 0.25,
            "text": {"format": {"type": "json_schema", "name": "answer", "schema": schema,
                                "strict": true}},
        })
    );
}

#[tokio::test]
async fn thinking_sets_reasoning_effort_and_streams_the_summary() {
    let mock =
        mock(json!({"turns": [{"thinking": ["Let me ", "think."], "text": "Answer."}]})).await;
    let provider = OpenAiResponsesProvider::new(config(&mock, REASONING_MODEL)).expect("provider");
    assert!(provider.capabilities().thinking);
    let request = ProviderRequest {
        thinking: Some(ThinkingConfig {
            budget_tokens: 10_000,
        }),
        temperature: Some(0.7),
        ..hello()
    };
    let (result, events) = run(&provider, &request).await;
    let response = result.expect("success");
    let body = &mock.requests()[0].body;
    assert_eq!(
        body["reasoning"],
        json!({"effort": "medium", "summary": "auto"})
    );
    assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
    assert!(
        body.get("temperature").is_none(),
        "reasoning models reject it"
    );
    assert_eq!(response.thinking.len(), 1);
    assert_eq!(response.thinking[0].thinking, "Let me think.");
    let item: Value = serde_json::from_str(
        response.thinking[0]
            .signature
            .as_deref()
            .expect("item kept"),
    )
    .expect("the signature is the reasoning item");
    assert_eq!(item["type"], "reasoning");
    assert!(item["encrypted_content"]
        .as_str()
        .is_some_and(|c| !c.is_empty()));
    assert_eq!(
        events,
        vec![
            StreamEvent::ThinkingDelta("Let me ".into()),
            StreamEvent::ThinkingDelta("think.".into()),
            StreamEvent::TextDelta("Answer.".into()),
        ]
    );
    let plain = OpenAiResponsesProvider::new(config(&mock, MODEL)).expect("provider");
    assert!(!plain.capabilities().thinking);
}

#[tokio::test]
async fn tool_round_trip_sends_reasoning_call_and_output_in_order() {
    let mock = mock(json!({"turns": [
        {"thinking": "I should read it.", "tool_calls": [
            {"id": "call_1", "name": "Read", "input": {"file_path": "a.txt"}},
            {"id": "call_2", "name": "Glob", "input": {"pattern": "*"}, "arguments_chunks": ["{\"pat", "tern\":\"*\"}"]}
        ], "usage": {"input_tokens": 50, "output_tokens": 20}},
        {"text": "The file says hi."}
    ]}))
    .await;
    let provider = OpenAiResponsesProvider::new(config(&mock, REASONING_MODEL)).expect("provider");
    let tools = vec![
        ToolDefinition {
            name: "Read".into(),
            description: "Read a file".into(),
            input_schema: json!({"type": "object"}),
        },
        ToolDefinition {
            name: "Glob".into(),
            description: "List files".into(),
            input_schema: json!({"type": "object"}),
        },
    ];
    let first = ProviderRequest {
        tools: tools.clone(),
        ..request(vec![Message::user("what is in a.txt?")])
    };
    let (result, events) = run(&provider, &first).await;
    let response = result.expect("first call");
    assert_eq!(response.stop_reason, StopReason::ToolUse);
    assert_eq!(response.tool_calls.len(), 2);
    assert_eq!(response.tool_calls[0].id, "call_1");
    assert_eq!(response.tool_calls[0].arguments, r#"{"file_path":"a.txt"}"#);
    assert_eq!(response.tool_calls[1].arguments, r#"{"pattern":"*"}"#);
    assert!(events.contains(&StreamEvent::ToolCallStart {
        index: 1,
        id: "call_2".into(),
        name: "Glob".into()
    }));
    assert!(events.contains(&StreamEvent::ToolCallDelta {
        index: 1,
        partial_json: "{\"pat".into()
    }));

    let second = ProviderRequest {
        tools,
        ..request(vec![
            Message::user("what is in a.txt?"),
            assistant_message(&response),
            Message::tool_result("call_1", "hi", false),
            Message::tool_result("call_2", "a.txt", false),
        ])
    };
    let (result, _) = run(&provider, &second).await;
    // mock-llm refuses the request unless the reasoning item comes back with its encrypted
    // content and every call has its output.
    assert_eq!(result.expect("second call").text, "The file says hi.");

    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    let first_output = &requests[0].body["input"];
    assert_eq!(first_output.as_array().map(Vec::len), Some(1));
    let input = requests[1].body["input"].as_array().expect("input").clone();
    let kinds: Vec<&str> = input
        .iter()
        .map(|item| item["type"].as_str().unwrap_or("message"))
        .collect();
    assert_eq!(
        kinds,
        [
            "message",
            "reasoning",
            "function_call",
            "function_call",
            "function_call_output",
            "function_call_output"
        ]
    );
    let reasoning = &input[1];
    let id = reasoning["id"].as_str().expect("id");
    assert!(id.starts_with("rs_"), "{id}");
    assert_eq!(
        reasoning["encrypted_content"],
        format!("gAAAAA_mock_{id}"),
        "the encrypted content goes back verbatim"
    );
    assert_eq!(
        reasoning["summary"],
        json!([{"type": "summary_text", "text": "I should read it."}])
    );
    assert!(reasoning.get("status").is_none());
    assert_eq!(
        input[2],
        json!({"type": "function_call", "call_id": "call_1", "name": "Read",
               "arguments": "{\"file_path\":\"a.txt\"}"})
    );
    assert_eq!(
        input[4],
        json!({"type": "function_call_output", "call_id": "call_1", "output": "hi"})
    );
}

#[tokio::test]
async fn a_reasoning_item_without_its_encrypted_content_is_refused() {
    // What the real API answers when a stored-nothing reasoning item comes back bare: this is the
    // failure the signature round trip above prevents.
    let mock = mock(json!({"turns": [{"text": "unused"}]})).await;
    let bare = Message::assistant(
        vec![
            ContentBlock::Thinking {
                thinking: "x".into(),
                signature: Some(r#"{"type":"reasoning","id":"rs_1","summary":[]}"#.into()),
            },
            ContentBlock::text("done"),
        ],
        MessageState::Complete,
    );
    let (result, _) = run(
        &provider(&mock),
        &request(vec![Message::user("a"), bare, Message::user("b")]),
    )
    .await;
    let error = result.expect_err("refused");
    assert_eq!(error.kind, ProviderErrorKind::InvalidRequest);
    assert!(error.message.contains("not persisted"), "{}", error.message);
}

#[tokio::test]
async fn incomplete_answers_and_refusals() {
    let mock = mock(json!({"turns": [
        {"text": "cut", "stop_reason": "max_tokens"},
        {"text": "blocked", "stop_reason": "content_filter"},
        {"refusal": ["I can't ", "help with that."]}
    ]}))
    .await;
    let provider = provider(&mock);
    let response = run(&provider, &hello()).await.0.expect("max tokens");
    assert_eq!(response.stop_reason, StopReason::MaxTokens);
    assert_eq!(response.text, "cut");
    let response = run(&provider, &hello()).await.0.expect("filtered");
    assert_eq!(response.stop_reason, StopReason::Refusal);
    assert_eq!(response.refusal.expect("refusal").text, "blocked");
    let (result, events) = run(&provider, &hello()).await;
    let response = result.expect("refused");
    assert_eq!(response.stop_reason, StopReason::Refusal);
    assert_eq!(
        response.refusal.expect("refusal").text,
        "I can't help with that."
    );
    assert_eq!(texts(&events), "I can't help with that.");
}

#[tokio::test]
async fn hostile_wire_framing_gives_the_same_result() {
    let mock = mock(json!({"repeat": true, "turns": [{
        "text": ["a", "b"], "split_bytes": 7,
        "sse": {"crlf": true, "comments": true, "multiline_data": true, "no_space": true}
    }]}))
    .await;
    let response = run(&provider(&mock), &hello()).await.0.expect("ok");
    assert_eq!(response.text, "ab");
}

#[tokio::test]
async fn with_model_keeps_the_endpoint() {
    let mock = mock(json!({"turns": [{"text": "ok"}]})).await;
    let other = provider(&mock).with_model("gpt-5-mini").expect("switches");
    assert_eq!(other.model(), "gpt-5-mini");
    assert!(other.capabilities().thinking);
    run(other.as_ref(), &hello()).await.0.expect("ok");
    let sent = &mock.requests()[0];
    assert_eq!(sent.path, "/v1/responses");
    assert_eq!(sent.body["model"], "gpt-5-mini");
}

// ---- errors ------------------------------------------------------------------------------------

#[tokio::test]
async fn rate_limit_with_retry_after_then_success() {
    let mock = mock(json!({"turns": [
        {"fault": {"kind": "status", "status": 429, "retry_after": 1}},
        {"text": "finally"}
    ]}))
    .await;
    let started = Instant::now();
    let (result, events) = run(&provider(&mock), &hello()).await;
    assert_eq!(result.expect("retried").text, "finally");
    let errors = retry_errors(&events);
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].kind, ProviderErrorKind::RateLimit);
    assert_eq!(errors[0].retry_after, Some(Duration::from_secs(1)));
    assert!(started.elapsed() >= Duration::from_millis(950));
    assert_eq!(mock.requests().len(), 2);
}

#[tokio::test]
async fn server_errors_and_overload_are_retried() {
    let mock = mock(json!({"turns": [
        {"fault": {"kind": "status", "status": 500}},
        {"fault": {"kind": "status", "status": 503}},
        {"text": "made it"}
    ]}))
    .await;
    let (result, events) = run(&provider(&mock), &hello()).await;
    assert_eq!(result.expect("success").text, "made it");
    let statuses: Vec<Option<u16>> = retry_errors(&events).iter().map(|e| e.status).collect();
    assert_eq!(statuses, vec![Some(500), Some(503)]);
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
    assert!(
        error.message.contains("OPENAI_API_KEY"),
        "{}",
        error.message
    );
    assert!(events.is_empty());
    assert_eq!(mock.requests().len(), 1);
}

#[tokio::test]
async fn context_length_error() {
    let mock = mock(json!({"turns": [{"fault": {
        "kind": "status", "status": 400, "code": "context_length_exceeded",
        "message": "Your input exceeds the context window of this model."
    }}]}))
    .await;
    let error = run(&provider(&mock), &hello())
        .await
        .0
        .expect_err("too long");
    assert_eq!(error.kind, ProviderErrorKind::ContextLength);
    assert_eq!(mock.requests().len(), 1);
}

#[tokio::test]
async fn in_stream_rate_limit_error_event_is_retried() {
    let mock = mock(json!({"turns": [
        {"text": "lost", "fault": {"kind": "stream_error", "after_events": 2,
                                   "error_type": "rate_limit_exceeded", "message": "Slow down"}},
        {"text": "fine"}
    ]}))
    .await;
    let (result, events) = run(&provider(&mock), &hello()).await;
    assert_eq!(result.expect("retried").text, "fine");
    let errors = retry_errors(&events);
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].kind, ProviderErrorKind::RateLimit);
    assert!(
        errors[0].message.contains("Slow down"),
        "{}",
        errors[0].message
    );
}

#[tokio::test]
async fn failed_response_is_typed_and_server_errors_retried() {
    let mock = mock(json!({"turns": [
        {"text": "lost", "fault": {"kind": "stream_error", "after_events": 1, "failed": true,
                                   "error_type": "server_error", "message": "The server had an error"}},
        {"text": "x", "fault": {"kind": "stream_error", "after_events": 1, "failed": true,
                                "error_type": "invalid_prompt", "message": "Invalid prompt"}}
    ]}))
    .await;
    let (result, events) = run(&provider(&mock), &hello()).await;
    let errors = retry_errors(&events);
    assert_eq!(errors.len(), 1, "the server error is retried");
    assert_eq!(errors[0].kind, ProviderErrorKind::Provider);
    assert!(errors[0].message.contains("The server had an error"));
    let error = result.expect_err("invalid prompt is final");
    assert!(
        error.message.contains("Invalid prompt"),
        "{}",
        error.message
    );
    assert!(!error.retryable);
    assert_eq!(mock.requests().len(), 2);
}

#[tokio::test]
async fn in_stream_error_after_text_is_returned() {
    let mock = mock(json!({"turns": [
        {"text": ["partial", " more"], "fault": {"kind": "stream_error", "after_events": 5}},
        {"text": "unused"}
    ]}))
    .await;
    let (result, events) = run(&provider(&mock), &hello()).await;
    let error = result.expect_err("error");
    assert!(error.message.contains("not retried"), "{}", error.message);
    assert_eq!(texts(&events), "partial");
    assert_eq!(mock.requests().len(), 1);
}

#[tokio::test]
async fn reset_after_text_is_an_error_and_before_text_a_retry() {
    let mock = mock(json!({"turns": [
        {"text": ["never"], "fault": {"kind": "reset", "after_events": 1}},
        {"text": ["shown ", "lost"], "fault": {"kind": "reset", "after_events": 5, "close": "fin"}},
        {"text": "must not be used"}
    ]}))
    .await;
    let (result, events) = run(&provider(&mock), &hello()).await;
    let error = result.expect_err("network error");
    assert_eq!(error.kind, ProviderErrorKind::Network);
    assert_eq!(retry_errors(&events).len(), 1);
    assert_eq!(texts(&events), "shown ");
    assert_eq!(mock.requests().len(), 2);
}

#[tokio::test]
async fn stall_hits_the_idle_timeout() {
    let mock = mock(json!({"turns": [
        {"text": ["before ", "stall"], "fault": {"kind": "stall", "after_events": 5, "ms": 5000}}
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
async fn a_stream_without_its_terminal_event_is_an_error() {
    let mock =
        mock(json!({"turns": [{"text": "almost", "fault": {"kind": "missing_terminal"}}]})).await;
    let (result, events) = run(&provider(&mock), &hello()).await;
    let error = result.expect_err("no response.completed");
    assert_eq!(error.kind, ProviderErrorKind::Provider);
    assert!(
        error.message.contains("response.completed"),
        "{}",
        error.message
    );
    assert_eq!(texts(&events), "almost");
}

#[tokio::test]
async fn malformed_and_oversized_events_are_provider_errors() {
    let mock = mock(json!({"turns": [
        {"text": ["a", "b"], "fault": {"kind": "malformed", "after_events": 1}},
        {"text": "x", "fault": {"kind": "oversized", "bytes": 300000}}
    ]}))
    .await;
    let provider = provider_with(
        &mock,
        HttpOptions {
            max_event_bytes: 256 * 1024,
            ..fast_http()
        },
    );
    let error = run(&provider, &hello()).await.0.expect_err("malformed");
    assert_eq!(error.kind, ProviderErrorKind::Provider);
    assert!(error.message.contains("malformed"), "{}", error.message);
    let error = run(&provider, &hello()).await.0.expect_err("oversized");
    assert!(
        error.message.contains("max_event_bytes"),
        "{}",
        error.message
    );
}

// ---- cancellation ------------------------------------------------------------------------------

#[tokio::test]
async fn cancel_mid_stream_returns_partial_output_promptly() {
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
                    *cancelled_at.lock().expect("lock") = Some(Instant::now());
                    cancel.cancel();
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
    assert_eq!(response.text, "tok tok tok ");
    let cancelled_at = cancelled_at.lock().expect("lock").expect("cancelled");
    assert!(returned.duration_since(cancelled_at) < Duration::from_millis(500));
}

#[tokio::test]
async fn cancel_mid_arguments_keeps_only_whole_calls() {
    let mock = mock(json!({"turns": [{
        "tool_calls": [
            {"id": "whole", "name": "A", "input": {"x": 1}},
            {"id": "cut", "name": "B", "input": {"y": "a long value"}}
        ],
        "chunk_delay_ms": 20
    }]}))
    .await;
    let provider = provider(&mock);
    let cancel = CancellationToken::new();
    let sink = |event: StreamEvent| {
        if let StreamEvent::ToolCallDelta { index: 1, .. } = event {
            cancel.cancel();
        }
    };
    let response = provider.stream(&hello(), &sink, &cancel).await.expect("ok");
    assert_eq!(response.stop_reason, StopReason::Aborted);
    let ids: Vec<&str> = response.tool_calls.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["whole"]);
}
