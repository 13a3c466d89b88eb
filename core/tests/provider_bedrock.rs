//! The Bedrock provider against mock-llm's Bedrock route over loopback (event-stream frames of
//! the Anthropic events, Bedrock exceptions and error responses): what it sends and signs, what
//! it assembles, how it handles faults; and its SigV4 signer against AWS's published test
//! vectors (`tests/fixtures/aws-sig-v4-test-suite`).

mod provider_common;

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use mock_llm::{MockLlm, RecordedRequest};
use provider_common::run;
use robota::message::{ContentBlock, Message, MessageState, ProviderError, ProviderErrorKind};
use robota::provider::bedrock::{AwsSigV4Signer, BEDROCK_SERVICE};
use robota::provider::{
    AwsCredentials, BedrockConfig, BedrockProvider, HttpOptions, Provider, ProviderRequest,
    StopReason, StreamEvent, ThinkingBlock, ThinkingConfig, ToolDefinition,
};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

const MODEL: &str = "anthropic.claude-sonnet-4-5-20250929-v1:0";
const PATH: &str = "/model/anthropic.claude-sonnet-4-5-20250929-v1%3A0/invoke-with-response-stream";
const REGION: &str = "us-west-2";

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

fn keys() -> AwsCredentials {
    AwsCredentials {
        access_key_id: "AKIDTEST".into(),
        secret_access_key: "secret/test+key".into(),
        session_token: Some("session-token-1".into()),
    }
}

/// A config that reads no variable of the real environment.
fn config(mock: &MockLlm, http: HttpOptions) -> BedrockConfig {
    BedrockConfig {
        region: Some(REGION.into()),
        credentials: Some(keys()),
        base_url: Some(mock.base_url()),
        http,
        ..BedrockConfig::new(MODEL)
    }
    .with_env(|_| None)
}

fn provider_with(mock: &MockLlm, http: HttpOptions) -> BedrockProvider {
    BedrockProvider::new(config(mock, http)).expect("provider")
}

fn provider(mock: &MockLlm) -> BedrockProvider {
    provider_with(mock, fast_http())
}

async fn mock(script: Value) -> MockLlm {
    MockLlm::start_json(script).await.expect("mock-llm starts")
}

fn hello() -> ProviderRequest {
    ProviderRequest {
        messages: vec![Arc::new(Message::user("hello"))],
        ..ProviderRequest::default()
    }
}

/// An environment for a provider built in a test.
type Env = Box<dyn Fn(&str) -> Option<String> + Send + Sync>;

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

fn header<'r>(request: &'r RecordedRequest, name: &str) -> &'r str {
    request
        .headers
        .get(name)
        .map(String::as_str)
        .unwrap_or_else(|| panic!("no {name} header in {:?}", request.headers))
}

/// `20260101T120000Z` as a time.
fn amz_date(text: &str) -> SystemTime {
    let format = time::macros::format_description!("[year][month][day]T[hour][minute][second]Z");
    time::PrimitiveDateTime::parse(text, &format)
        .expect("x-amz-date format")
        .assume_utc()
        .into()
}

#[tokio::test]
async fn text_turn_is_sent_and_signed_for_bedrock_in_its_region() {
    let mock = mock(json!({"turns": [{
        "text": ["Hel", "lo ", "wörld"],
        "usage": {"input_tokens": 12, "output_tokens": 5,
                  "cache_read_input_tokens": 3, "cache_creation_input_tokens": 4}
    }]}))
    .await;
    let provider = provider(&mock);
    let request = ProviderRequest {
        system: Some("Be brief.".into()),
        max_tokens: Some(1000),
        ..hello()
    };
    let (result, events) = run(&provider, &request).await;
    let response = result.expect("success");
    assert_eq!(response.text, "Hello wörld");
    assert_eq!(texts(&events), "Hello wörld");
    assert_eq!(response.stop_reason, StopReason::EndTurn);
    assert_eq!(response.model, MODEL, "the model from the path, echoed");
    assert_eq!(response.usage.input_tokens, 12);
    assert_eq!(response.usage.output_tokens, 5);
    assert_eq!(response.usage.cache_read_input_tokens, 3);
    assert_eq!(response.usage.cache_creation_input_tokens, 4);

    let sent = mock.requests();
    assert_eq!(sent.len(), 1);
    let sent = &sent[0];
    assert_eq!(sent.method, "POST");
    assert_eq!(sent.path, PATH, "model id percent-encoded in the path");
    // The body: the Messages API body without model and stream, with Bedrock's version.
    assert_eq!(sent.body["anthropic_version"], "bedrock-2023-05-31");
    assert!(sent.body.get("model").is_none(), "{}", sent.body);
    assert!(sent.body.get("stream").is_none(), "{}", sent.body);
    assert_eq!(sent.body["max_tokens"], 1000);
    assert_eq!(sent.body["system"][0]["text"], "Be brief.");
    assert_eq!(sent.body["messages"][0]["role"], "user");
    assert_eq!(sent.body, provider.request_body(&request));
    assert_eq!(header(sent, "accept"), "application/vnd.amazon.eventstream");
    assert_eq!(header(sent, "content-type"), "application/json");

    // Signed with SigV4 for service `bedrock` in the configured region, with the session token.
    let date = header(sent, "x-amz-date");
    assert_eq!(date.len(), 16, "{date}");
    let authorization = header(sent, "authorization");
    assert_eq!(
        authorization.split(", Signature=").next(),
        Some(
            format!(
                "AWS4-HMAC-SHA256 Credential=AKIDTEST/{}/{REGION}/bedrock/aws4_request, \
                 SignedHeaders=accept;content-type;host;x-amz-date;x-amz-security-token",
                &date[..8]
            )
            .as_str()
        )
    );
    assert_eq!(header(sent, "x-amz-security-token"), "session-token-1");
    // The signature is the one the published algorithm gives for the request the server saw
    // (host with the port, the exact body bytes).
    let body = serde_json::to_vec(&provider.request_body(&request)).expect("body");
    let expected = AwsSigV4Signer::new(&keys(), REGION, BEDROCK_SERVICE)
        .signing_headers(
            "POST",
            &format!("{}{PATH}", mock.base_url()),
            &[
                ("content-type", "application/json"),
                ("accept", "application/vnd.amazon.eventstream"),
            ],
            &body,
            amz_date(date),
        )
        .expect("sign");
    let expected_auth = expected
        .iter()
        .find(|(name, _)| name == "authorization")
        .map(|(_, value)| value.as_str());
    assert_eq!(expected_auth, Some(authorization));
    assert_eq!(header(sent, "host"), mock.addr().to_string());
}

#[tokio::test]
async fn tool_round_trip() {
    let mock = mock(json!({"turns": [
        {"text": "Reading.", "tool_calls": [
            {"id": "toolu_1", "name": "Read", "input": {"file_path": "a.txt"}}
        ]},
        {"text": "It says hi."}
    ]}))
    .await;
    let provider = provider(&mock);
    let tools = vec![ToolDefinition {
        name: "Read".into(),
        description: "Reads a file".into(),
        input_schema: json!({"type": "object", "properties": {"file_path": {"type": "string"}}}),
    }];
    let first = ProviderRequest {
        tools: tools.clone(),
        ..hello()
    };
    let (result, events) = run(&provider, &first).await;
    let response = result.expect("first turn");
    assert_eq!(response.stop_reason, StopReason::ToolUse);
    assert_eq!(response.tool_calls.len(), 1);
    let call = &response.tool_calls[0];
    assert_eq!((call.id.as_str(), call.name.as_str()), ("toolu_1", "Read"));
    let args: Value = serde_json::from_str(&call.arguments).expect("json arguments");
    assert_eq!(args, json!({"file_path": "a.txt"}));
    assert!(events.iter().any(|e| matches!(
        e,
        StreamEvent::ToolCallStart { index: 0, id, name } if id == "toolu_1" && name == "Read"
    )));

    let second = ProviderRequest {
        messages: vec![
            Arc::new(Message::user("hello")),
            Arc::new(Message::assistant(
                vec![
                    ContentBlock::text("Reading."),
                    ContentBlock::ToolUse {
                        id: call.id.clone(),
                        name: call.name.clone(),
                        input: args,
                    },
                ],
                MessageState::Complete,
            )),
            Arc::new(Message::tool_result("toolu_1", "hi", false)),
        ],
        tools,
        ..ProviderRequest::default()
    };
    let (result, _) = run(&provider, &second).await;
    assert_eq!(result.expect("second turn").text, "It says hi.");
    let sent = mock.requests();
    assert_eq!(sent.len(), 2);
    let messages = &sent[1].body["messages"];
    assert_eq!(messages[1]["content"][1]["type"], "tool_use");
    assert_eq!(messages[1]["content"][1]["id"], "toolu_1");
    assert_eq!(
        messages[1]["content"][1]["input"],
        json!({"file_path": "a.txt"})
    );
    assert_eq!(messages[2]["role"], "user");
    assert_eq!(messages[2]["content"][0]["type"], "tool_result");
    assert_eq!(messages[2]["content"][0]["tool_use_id"], "toolu_1");
    assert_eq!(messages[2]["content"][0]["content"], "hi");
    assert_eq!(sent[1].body["tools"][0]["name"], "Read");
}

#[tokio::test]
async fn thinking_is_requested_and_assembled_with_its_signature() {
    let mock = mock(json!({"turns": [{
        "thinking": ["Let me ", "think."],
        "thinking_signature": "sig_abc",
        "text": "Answer."
    }]}))
    .await;
    let request = ProviderRequest {
        thinking: Some(ThinkingConfig {
            budget_tokens: 2048,
        }),
        ..hello()
    };
    let (result, events) = run(&provider(&mock), &request).await;
    let response = result.expect("success");
    assert_eq!(
        response.thinking,
        vec![ThinkingBlock {
            thinking: "Let me think.".into(),
            signature: Some("sig_abc".into()),
        }]
    );
    assert_eq!(
        events,
        vec![
            StreamEvent::ThinkingDelta("Let me ".into()),
            StreamEvent::ThinkingDelta("think.".into()),
            StreamEvent::TextDelta("Answer.".into()),
        ]
    );
    let body = &mock.requests()[0].body;
    assert_eq!(
        body["thinking"],
        json!({"type": "enabled", "budget_tokens": 2048})
    );
    assert!(body["max_tokens"].as_u64().expect("max_tokens") > 2048);
}

#[tokio::test]
async fn http_throttling_is_retried_and_every_attempt_is_signed_anew() {
    let mock = mock(json!({"turns": [
        {"fault": {"kind": "status", "status": 429, "retry_after": "1",
                   "message": "Too many requests, please wait before trying again."}},
        {"text": "finally"}
    ]}))
    .await;
    let (result, events) = run(&provider(&mock), &hello()).await;
    assert_eq!(result.expect("retried").text, "finally");
    let errors = retry_errors(&events);
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].kind, ProviderErrorKind::RateLimit);
    assert_eq!(errors[0].status, Some(429));
    assert!(
        errors[0].message.contains("Too many requests"),
        "{}",
        errors[0].message
    );
    let sent = mock.requests();
    assert_eq!(sent.len(), 2);
    // A second later: a new date, so a new signature (a replayed one would be stale).
    assert_ne!(
        header(&sent[0], "x-amz-date"),
        header(&sent[1], "x-amz-date")
    );
    assert_ne!(
        header(&sent[0], "authorization"),
        header(&sent[1], "authorization")
    );
}

#[tokio::test]
async fn throttling_exception_frame_before_output_is_retried() {
    let mock = mock(json!({"turns": [
        {"text": "never", "fault": {"kind": "stream_error", "after_events": 1,
                   "error_type": "throttlingException", "message": "Too many tokens"}},
        {"text": "recovered"}
    ]}))
    .await;
    let (result, events) = run(&provider(&mock), &hello()).await;
    assert_eq!(result.expect("retried").text, "recovered");
    let errors = retry_errors(&events);
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].kind, ProviderErrorKind::RateLimit);
    assert!(
        errors[0].message.contains("throttlingException")
            && errors[0].message.contains("Too many tokens"),
        "{}",
        errors[0].message
    );
}

#[tokio::test]
async fn exception_after_output_is_returned_not_retried() {
    let mock = mock(json!({"turns": [
        {"text": ["shown", " lost"], "fault": {"kind": "stream_error", "after_events": 4,
                   "error_type": "modelStreamErrorException", "message": "stream broke"}},
        {"text": "must not be used"}
    ]}))
    .await;
    let (result, events) = run(&provider(&mock), &hello()).await;
    let error = result.expect_err("error");
    assert_eq!(error.kind, ProviderErrorKind::Provider);
    assert!(
        error.message.contains("modelStreamErrorException"),
        "{}",
        error.message
    );
    assert!(error.message.contains("not retried"), "{}", error.message);
    assert_eq!(texts(&events), "shown");
    assert_eq!(mock.requests().len(), 1);
}

#[tokio::test]
async fn validation_exception_mid_stream_is_a_request_error() {
    let mock = mock(json!({"turns": [
        {"fault": {"kind": "stream_error", "after_events": 0,
                   "error_type": "validationException", "message": "messages: bad"}}
    ]}))
    .await;
    let (result, _) = run(&provider(&mock), &hello()).await;
    let error = result.expect_err("error");
    assert_eq!(error.kind, ProviderErrorKind::InvalidRequest);
    assert!(!error.retryable);
    assert_eq!(mock.requests().len(), 1);
}

#[tokio::test]
async fn http_errors_are_typed() {
    let mock = mock(json!({"turns": [
        {"fault": {"kind": "status", "status": 403,
                   "message": "You don't have access to the model with the specified model ID."}},
        {"fault": {"kind": "status", "status": 400,
                   "message": "prompt is too long: 210000 tokens > 200000 maximum"}},
        {"fault": {"kind": "status", "status": 404, "message": "The provided model identifier is invalid."}}
    ]}))
    .await;
    let provider = provider(&mock);
    let (result, _) = run(&provider, &hello()).await;
    let auth = result.expect_err("403");
    assert_eq!(auth.kind, ProviderErrorKind::Auth);
    assert!(auth.message.contains("have access"), "{}", auth.message);
    assert!(
        auth.message.contains("AWS_ACCESS_KEY_ID"),
        "{}",
        auth.message
    );
    assert!(
        auth.message.contains("req"),
        "request id named: {}",
        auth.message
    );
    let (result, _) = run(&provider, &hello()).await;
    assert_eq!(
        result.expect_err("400").kind,
        ProviderErrorKind::ContextLength
    );
    let (result, _) = run(&provider, &hello()).await;
    assert_eq!(
        result.expect_err("404").kind,
        ProviderErrorKind::InvalidRequest
    );
    assert_eq!(mock.requests().len(), 3, "none retried");
}

#[tokio::test]
async fn overloaded_503_is_retried() {
    let mock = mock(json!({"turns": [
        {"fault": {"kind": "status", "status": 503}},
        {"text": "ok"}
    ]}))
    .await;
    let (result, events) = run(&provider(&mock), &hello()).await;
    assert_eq!(result.expect("retried").text, "ok");
    assert_eq!(retry_errors(&events).len(), 1);
}

#[tokio::test]
async fn a_stream_cut_before_message_stop_is_an_error() {
    let mock = mock(json!({"turns": [
        {"text": "partial", "fault": {"kind": "missing_terminal"}}
    ]}))
    .await;
    let provider = provider_with(
        &mock,
        HttpOptions {
            max_retries: 0,
            ..fast_http()
        },
    );
    let (result, _) = run(&provider, &hello()).await;
    let error = result.expect_err("cut stream");
    assert!(error.message.contains("message_stop"), "{}", error.message);

    let mock = self::mock(json!({"turns": [
        {"text": ["a", "b"], "fault": {"kind": "reset", "after_events": 4}}
    ]}))
    .await;
    let (result, events) = run(&provider_with(&mock, fast_http()), &hello()).await;
    assert_eq!(result.expect_err("reset").kind, ProviderErrorKind::Network);
    assert_eq!(texts(&events), "a");
}

#[tokio::test]
async fn a_garbled_frame_is_a_provider_error() {
    let mock = mock(json!({"turns": [
        {"raw_body": "this is not an event stream frame at all, just text"}
    ]}))
    .await;
    let provider = provider_with(
        &mock,
        HttpOptions {
            max_retries: 0,
            ..fast_http()
        },
    );
    let (result, _) = run(&provider, &hello()).await;
    let error = result.expect_err("garbled");
    assert_eq!(error.kind, ProviderErrorKind::Provider);
}

#[tokio::test]
async fn idle_timeout_and_cancellation() {
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
    assert_eq!(texts(&events), "before ");
    assert!(started.elapsed() < Duration::from_secs(4));

    let mock = self::mock(json!({"turns": [{
        "text": {"repeat": "tok ", "count": 100},
        "chunk_delay_ms": 30
    }]}))
    .await;
    let provider = provider_with(&mock, fast_http());
    let cancel = CancellationToken::new();
    let sink = {
        let cancel = cancel.clone();
        let seen = Mutex::new(0usize);
        move |event: StreamEvent| {
            if let StreamEvent::TextDelta(_) = event {
                let mut seen = seen.lock().expect("lock");
                *seen += 1;
                if *seen == 3 {
                    cancel.cancel();
                }
            }
        }
    };
    let started = Instant::now();
    let response = provider
        .stream(&hello(), &sink, &cancel)
        .await
        .expect("cancellation is not an error");
    assert_eq!(response.stop_reason, StopReason::Aborted);
    assert_eq!(response.text, "tok tok tok ");
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[tokio::test]
async fn bedrock_api_key_is_sent_as_bearer_without_signing() {
    let mock = mock(json!({"turns": [{"text": "ok"}]})).await;
    let config = BedrockConfig {
        region: Some(REGION.into()),
        base_url: Some(mock.base_url()),
        http: fast_http(),
        ..BedrockConfig::new(MODEL)
    }
    .with_env(|name| (name == "AWS_BEARER_TOKEN_BEDROCK").then(|| "bedrock-api-key-1".into()));
    let provider = BedrockProvider::new(config).expect("provider");
    let (result, _) = run(&provider, &hello()).await;
    assert_eq!(result.expect("ok").text, "ok");
    let sent = &mock.requests()[0];
    assert_eq!(header(sent, "authorization"), "Bearer bedrock-api-key-1");
    assert!(!sent.headers.contains_key("x-amz-date"));
}

#[tokio::test]
async fn keys_and_region_come_from_the_environment_and_the_shared_files() {
    let mock = mock(json!({"turns": [{"text": "a"}, {"text": "b"}], "repeat": true})).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let credentials = dir.path().join("credentials");
    let config_file = dir.path().join("config");
    std::fs::write(
        &credentials,
        "[default]\naws_access_key_id = AKIDDEFAULT\naws_secret_access_key = s1\n\n\
         [work]\naws_access_key_id = AKIDWORK\naws_secret_access_key = s2\n",
    )
    .expect("write");
    std::fs::write(&config_file, "[profile work]\nregion = eu-central-1\n").expect("write");
    let files = |extra: &'static [(&'static str, &'static str)]| {
        let credentials = credentials.display().to_string();
        let config_file = config_file.display().to_string();
        move |name: &str| match name {
            "AWS_SHARED_CREDENTIALS_FILE" => Some(credentials.clone()),
            "AWS_CONFIG_FILE" => Some(config_file.clone()),
            _ => extra
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| (*v).to_string()),
        }
    };
    let build = |var: Env, profile: Option<&str>| {
        BedrockProvider::new(
            BedrockConfig {
                profile: profile.map(str::to_string),
                base_url: Some(mock.base_url()),
                http: fast_http(),
                ..BedrockConfig::new(MODEL)
            }
            .with_env(var),
        )
    };
    let credential_of = |request: &RecordedRequest| {
        header(request, "authorization")
            .split("Credential=")
            .nth(1)
            .and_then(|rest| rest.split(',').next())
            .expect("credential scope")
            .to_string()
    };

    // AWS_PROFILE names the profile; the region comes from its config section.
    let provider = build(Box::new(files(&[("AWS_PROFILE", "work")])), None).expect("profile");
    assert_eq!(provider.region(), "eu-central-1");
    run(&provider, &hello()).await.0.expect("ok");
    // Keys in the environment win over the default profile; AWS_REGION wins over the files.
    let provider = build(
        Box::new(files(&[
            ("AWS_ACCESS_KEY_ID", "AKIDENV"),
            ("AWS_SECRET_ACCESS_KEY", "s3"),
            ("AWS_REGION", "ap-south-1"),
        ])),
        None,
    )
    .expect("env keys");
    run(&provider, &hello()).await.0.expect("ok");
    // A profile chosen in settings wins over keys in the environment.
    let provider = build(
        Box::new(files(&[
            ("AWS_ACCESS_KEY_ID", "AKIDENV"),
            ("AWS_SECRET_ACCESS_KEY", "s3"),
        ])),
        Some("work"),
    )
    .expect("settings profile");
    run(&provider, &hello()).await.0.expect("ok");
    let sent = mock.requests();
    let scopes: Vec<String> = sent.iter().map(credential_of).collect();
    assert!(scopes[0].starts_with("AKIDWORK/"), "{}", scopes[0]);
    assert!(
        scopes[0].ends_with("/eu-central-1/bedrock/aws4_request"),
        "{}",
        scopes[0]
    );
    assert!(scopes[1].starts_with("AKIDENV/"), "{}", scopes[1]);
    assert!(
        scopes[1].ends_with("/ap-south-1/bedrock/aws4_request"),
        "{}",
        scopes[1]
    );
    assert!(scopes[2].starts_with("AKIDWORK/"), "{}", scopes[2]);

    // Nothing to sign with, nowhere to go: errors that say what to set.
    let error = build(Box::new(|_: &str| None), None).expect_err("no region");
    assert!(error.message.contains("AWS_REGION"), "{}", error.message);
    // A profile that does not exist: the chain runs on the first request, and fails it.
    let provider = build(
        Box::new(|name: &str| (name == "AWS_REGION").then(|| "us-east-1".to_string())),
        Some("missing"),
    )
    .expect("credentials are looked for on the first request");
    let error = run(&provider, &hello()).await.0.expect_err("no keys");
    assert_eq!(error.kind, ProviderErrorKind::Auth);
    assert!(error.message.contains("\"missing\""), "{}", error.message);
    assert_eq!(mock.requests().len(), 3, "nothing sent unsigned");
    assert!(
        error.message.contains("AWS_ACCESS_KEY_ID"),
        "{}",
        error.message
    );
    assert!(
        error.message.contains("AWS_BEARER_TOKEN_BEDROCK"),
        "{}",
        error.message
    );
}

/// One vector of the published suite, parsed.
struct Vector {
    name: String,
    method: String,
    url: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    context: Value,
    string_to_sign: String,
    canonical_request: String,
    authorization: String,
}

fn load_vector(dir: &Path) -> Vector {
    let read = |file: &str| {
        std::fs::read_to_string(dir.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"))
    };
    let request = read("request.txt");
    let (head, body) = request.split_once("\n\n").unwrap_or((request.as_str(), ""));
    let mut lines = head.lines();
    let request_line = lines.next().expect("request line");
    let mut parts = request_line.split(' ');
    let method = parts.next().expect("method").to_string();
    let target = parts.next().expect("target").to_string();
    let headers: Vec<(String, String)> = lines
        .map(|line| {
            let (name, value) = line.split_once(':').expect("header line");
            (name.to_string(), value.to_string())
        })
        .collect();
    let host = headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("host"))
        .map(|(_, v)| v.clone())
        .expect("host");
    let signed = read("header-signed-request.txt");
    let authorization = signed
        .lines()
        .find_map(|line| line.strip_prefix("Authorization:"))
        .expect("Authorization line")
        .to_string();
    Vector {
        name: dir
            .file_name()
            .expect("name")
            .to_string_lossy()
            .into_owned(),
        method,
        url: format!("https://{host}{target}"),
        headers,
        body: body.as_bytes().to_vec(),
        context: serde_json::from_str(&read("context.json")).expect("context"),
        string_to_sign: read("header-string-to-sign.txt"),
        canonical_request: read("header-canonical-request.txt"),
        authorization,
    }
}

fn sha256_hex(data: &[u8]) -> String {
    aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, data)
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[test]
fn sigv4_matches_the_published_test_vectors() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/aws-sig-v4-test-suite");
    let mut dirs: Vec<_> = std::fs::read_dir(&root)
        .expect("fixtures")
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.is_dir())
        .collect();
    dirs.sort();
    assert_eq!(dirs.len(), 5, "vendored vectors");
    for dir in dirs {
        let vector = load_vector(&dir);
        let context = &vector.context;
        let text = |pointer: &str| {
            context
                .pointer(pointer)
                .and_then(Value::as_str)
                .map(str::to_string)
        };
        let credentials = AwsCredentials {
            access_key_id: text("/credentials/access_key_id").expect("key id"),
            secret_access_key: text("/credentials/secret_access_key").expect("secret"),
            session_token: text("/credentials/token"),
        };
        let region = text("/region").expect("region");
        let service = text("/service").expect("service");
        let time: SystemTime = time::OffsetDateTime::parse(
            &text("/timestamp").expect("timestamp"),
            &time::format_description::well_known::Rfc3339,
        )
        .expect("timestamp")
        .into();
        let sign_body = context["sign_body"].as_bool().unwrap_or(false);
        // As the transport calls the hook: the request's headers except `host` (taken from
        // the URL, as the server will see it).
        let headers: Vec<(&str, &str)> = vector
            .headers
            .iter()
            .filter(|(name, _)| !name.eq_ignore_ascii_case("host"))
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .collect();
        let signed = AwsSigV4Signer::new(&credentials, &region, &service)
            .with_payload_checksum(sign_body)
            .signing_headers(&vector.method, &vector.url, &headers, &vector.body, time)
            .unwrap_or_else(|e| panic!("{}: {e}", vector.name));
        let get = |name: &str| {
            signed
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(
            get("authorization"),
            Some(vector.authorization.as_str()),
            "{}: Authorization",
            vector.name
        );
        assert_eq!(
            get("x-amz-date"),
            Some("20150830T123600Z"),
            "{}",
            vector.name
        );
        assert_eq!(
            get("x-amz-security-token"),
            credentials.session_token.as_deref(),
            "{}",
            vector.name
        );
        // The published canonical request hashes into the published string to sign, and the
        // signature we produced is the HMAC of exactly that string: so our canonical request and
        // string to sign are the published ones.
        let string_to_sign = vector.string_to_sign.trim_end();
        assert_eq!(
            string_to_sign.lines().last(),
            Some(sha256_hex(vector.canonical_request.as_bytes()).as_str()),
            "{}: canonical request hash",
            vector.name
        );
        let key = aws_sigv4::sign::v4::generate_signing_key(
            &credentials.secret_access_key,
            time,
            &region,
            &service,
        );
        let signature = aws_sigv4::sign::v4::calculate_signature(key, string_to_sign.as_bytes());
        assert!(
            vector
                .authorization
                .ends_with(&format!("Signature={signature}")),
            "{}: string to sign",
            vector.name
        );
    }
}

/// Settings for a project whose `.claude/settings.json` is `settings`, with an empty home.
fn load_project_settings(
    dir: &Path,
    settings: Option<Value>,
) -> robota::framework::config::LoadedSettings {
    use robota::framework::config::{load_settings, SettingsOptions};
    let project = dir.join("project");
    let home = dir.join("home");
    std::fs::create_dir_all(project.join(".claude")).expect("mkdir");
    std::fs::create_dir_all(&home).expect("mkdir");
    if let Some(settings) = settings {
        std::fs::write(project.join(".claude/settings.json"), settings.to_string())
            .expect("settings");
    }
    load_settings(&SettingsOptions::new(&project).with_home(&home)).expect("settings load")
}

#[tokio::test]
async fn settings_profile_and_the_claude_code_switch_build_bedrock() {
    use robota::framework::assembly::provider::{provider_from_settings, DEFAULT_BEDROCK_MODEL};
    let mock = mock(json!({"turns": [{"text": "from settings"}]})).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let credentials = dir.path().join("credentials");
    std::fs::write(
        &credentials,
        "[team]\naws_access_key_id = AKIDTEAM\naws_secret_access_key = s\n",
    )
    .expect("write");
    let loaded = load_project_settings(
        dir.path(),
        Some(json!({
            "currentProvider": "aws",
            "providers": {"aws": {
                "type": "bedrock",
                "model": MODEL,
                "baseURL": mock.base_url(),
                "options": {"region": "eu-west-3", "profile": "team", "maxRetries": 0}
            }}
        })),
    );
    assert!(
        loaded.warnings.is_empty(),
        "bedrock is a known type: {:?}",
        loaded.warnings
    );
    let credentials_path = credentials.display().to_string();
    let env =
        move |name: &str| (name == "AWS_SHARED_CREDENTIALS_FILE").then(|| credentials_path.clone());
    let built = provider_from_settings(&loaded.settings, dir.path(), &env).expect("built");
    assert_eq!(built.kind, "bedrock");
    assert_eq!(built.provider.name(), "bedrock");
    assert_eq!(built.provider.model(), MODEL);
    let (result, _) = {
        let events = Mutex::new(Vec::new());
        let sink = |event: StreamEvent| events.lock().expect("lock").push(event);
        let result = built
            .provider
            .stream(&hello(), &sink, &CancellationToken::new())
            .await;
        (result, events.into_inner().expect("lock"))
    };
    assert_eq!(result.expect("ok").text, "from settings");
    let sent = &mock.requests()[0];
    assert!(
        header(sent, "authorization").contains("Credential=AKIDTEAM/")
            && header(sent, "authorization").contains("/eu-west-3/bedrock/aws4_request"),
        "{}",
        header(sent, "authorization")
    );

    // No profile: CLAUDE_CODE_USE_BEDROCK=1 picks Bedrock over an Anthropic key.
    let empty = tempfile::tempdir().expect("tempdir");
    let loaded = load_project_settings(empty.path(), None);
    let env = |name: &str| {
        match name {
            "CLAUDE_CODE_USE_BEDROCK" => Some("1"),
            "ANTHROPIC_API_KEY" => Some("sk-ant-unused"),
            "AWS_REGION" => Some("us-east-1"),
            "AWS_ACCESS_KEY_ID" => Some("AKIDENV"),
            "AWS_SECRET_ACCESS_KEY" => Some("s"),
            _ => None,
        }
        .map(str::to_string)
    };
    let built = provider_from_settings(&loaded.settings, empty.path(), &env).expect("built");
    assert_eq!(built.kind, "bedrock");
    assert_eq!(built.model, DEFAULT_BEDROCK_MODEL);
    assert_eq!(
        built.base_url.as_deref(),
        Some("https://bedrock-runtime.us-east-1.amazonaws.com")
    );
    // The switch off: Anthropic as before.
    let off = |name: &str| match name {
        "CLAUDE_CODE_USE_BEDROCK" => Some("0".to_string()),
        other => env(other),
    };
    let built = provider_from_settings(&loaded.settings, empty.path(), &off).expect("built");
    assert_eq!(built.kind, "anthropic");
    // The switch without credentials: the error says what to set.
    let bare = |name: &str| (name == "CLAUDE_CODE_USE_BEDROCK").then(|| "1".to_string());
    let error = provider_from_settings(&loaded.settings, empty.path(), &bare)
        .expect_err("no region")
        .to_string();
    assert!(error.contains("AWS_REGION"), "{error}");
}
