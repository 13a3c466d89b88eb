//! The cloud routes: Bedrock's `invoke-with-response-stream` (event-stream frames carrying the
//! Anthropic events, exception frames, Bedrock error responses), Vertex AI's `streamRawPredict`
//! (the Anthropic SSE stream) and the OAuth token endpoint, decoded here the way a client would
//! (frames with `aws-smithy-eventstream`, whose CRC checks reject a malformed frame).

mod common;

use aws_smithy_eventstream::frame::{DecodedFrame, MessageFrameDecoder};
use aws_smithy_types::event_stream::{HeaderValue, Message};
use base64::Engine as _;
use bytes::BytesMut;
use common::*;
use mock_llm::MockLlm;
use serde_json::{json, Value};

const BEDROCK: &str = "/model/anthropic.claude-test-v1%3A0/invoke-with-response-stream";
const VERTEX: &str =
    "/v1/projects/p/locations/us-east5/publishers/anthropic/models/claude-test@1:streamRawPredict";

fn bedrock_request() -> Value {
    json!({
        "anthropic_version": "bedrock-2023-05-31",
        "max_tokens": 100,
        "messages": [{"role": "user", "content": "hi"}],
    })
}

fn vertex_request() -> Value {
    json!({
        "anthropic_version": "vertex-2023-10-16",
        "max_tokens": 100,
        "stream": true,
        "messages": [{"role": "user", "content": "hi"}],
    })
}

fn header(message: &Message, name: &str) -> String {
    message
        .headers()
        .iter()
        .find(|h| h.name().as_str() == name)
        .and_then(|h| match h.value() {
            HeaderValue::String(s) => Some(s.as_str().to_owned()),
            _ => None,
        })
        .unwrap_or_default()
}

/// Every frame of a body (the body must end on a frame boundary).
fn frames(body: &[u8]) -> Vec<Message> {
    let mut buffer = BytesMut::from(body);
    let mut decoder = MessageFrameDecoder::new();
    let mut out = Vec::new();
    while let DecodedFrame::Complete(message) =
        decoder.decode_frame(&mut buffer).expect("valid frame")
    {
        out.push(message);
    }
    assert!(buffer.is_empty(), "a partial frame at the end");
    out
}

/// The Anthropic event JSON inside a `chunk` frame.
fn chunk_event(message: &Message) -> Value {
    assert_eq!(header(message, ":message-type"), "event");
    assert_eq!(header(message, ":event-type"), "chunk");
    let payload: Value = serde_json::from_slice(message.payload()).expect("chunk JSON");
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(payload["bytes"].as_str().expect("bytes"))
        .expect("base64");
    serde_json::from_slice(&bytes).expect("event JSON")
}

#[tokio::test]
async fn bedrock_streams_anthropic_events_in_event_stream_frames() {
    let mock = MockLlm::start_json(json!({"turns": [{
        "text": ["Hel", "lo"],
        "tool_calls": [{"id": "toolu_1", "name": "Read", "input": {"path": "a"}}]
    }]}))
    .await
    .unwrap();
    let resp = post(&mock.base_url(), BEDROCK, &bedrock_request()).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(
        resp.headers()["content-type"],
        "application/vnd.amazon.eventstream"
    );
    assert!(resp.headers().contains_key("x-amzn-requestid"));
    let body = resp.bytes().await.unwrap();
    let events: Vec<Value> = frames(&body).iter().map(chunk_event).collect();
    let types: Vec<&str> = events.iter().filter_map(|e| e["type"].as_str()).collect();
    assert_eq!(types.first(), Some(&"message_start"));
    assert_eq!(types.last(), Some(&"message_stop"));
    assert_eq!(
        events[0]["message"]["model"], "anthropic.claude-test-v1:0",
        "the model from the (percent-decoded) path"
    );
    let text: String = events
        .iter()
        .filter(|e| e["delta"]["type"] == "text_delta")
        .filter_map(|e| e["delta"]["text"].as_str())
        .collect();
    assert_eq!(text, "Hello");
    assert!(
        events
            .iter()
            .any(|e| e["content_block"]["type"] == "tool_use"
                && e["content_block"]["id"] == "toolu_1")
    );
    // The signing headers are recorded for tests to check.
    let sent = &mock.requests()[0];
    assert_eq!(sent.path, BEDROCK);
    assert_eq!(sent.turn, Some(0));
}

#[tokio::test]
async fn bedrock_faults_are_exception_frames_and_bedrock_errors() {
    let mock = MockLlm::start_json(json!({"turns": [
        {"text": "x", "fault": {"kind": "stream_error", "after_events": 1,
                                "error_type": "rate_limit_error", "message": "slow"}},
        {"fault": {"kind": "stream_error", "after_events": 0,
                   "error_type": "modelStreamErrorException", "message": "broke"}},
        {"fault": {"kind": "status", "status": 429, "retry_after": "2", "message": "Too many requests"}},
        {"fault": {"kind": "status", "status": 403}}
    ]}))
    .await
    .unwrap();
    let base = mock.base_url();
    let body = post(&base, BEDROCK, &bedrock_request())
        .await
        .bytes()
        .await
        .unwrap();
    let messages = frames(&body);
    assert_eq!(chunk_event(&messages[0])["type"], "message_start");
    let last = messages.last().unwrap();
    assert_eq!(header(last, ":message-type"), "exception");
    assert_eq!(header(last, ":exception-type"), "throttlingException");
    let payload: Value = serde_json::from_slice(last.payload()).unwrap();
    assert_eq!(payload, json!({"message": "slow"}));

    let body = post(&base, BEDROCK, &bedrock_request())
        .await
        .bytes()
        .await
        .unwrap();
    let messages = frames(&body);
    assert_eq!(messages.len(), 1);
    assert_eq!(
        header(&messages[0], ":exception-type"),
        "modelStreamErrorException"
    );

    let resp = post(&base, BEDROCK, &bedrock_request()).await;
    assert_eq!(resp.status(), 429);
    assert_eq!(resp.headers()["retry-after"], "2");
    assert!(resp.headers()["x-amzn-errortype"]
        .to_str()
        .unwrap()
        .starts_with("ThrottlingException:"));
    assert_eq!(
        resp.json::<Value>().await.unwrap(),
        json!({"message": "Too many requests"})
    );
    let resp = post(&base, BEDROCK, &bedrock_request()).await;
    assert_eq!(resp.status(), 403);
    assert!(resp.headers()["x-amzn-errortype"]
        .to_str()
        .unwrap()
        .starts_with("AccessDeniedException:"));
}

#[tokio::test]
async fn bedrock_rejects_bodies_bedrock_would_reject_without_using_a_turn() {
    let mock = MockLlm::start_json(json!({"turns": [{"text": "ok"}]}))
        .await
        .unwrap();
    let base = mock.base_url();
    for (body, wording) in [
        (
            json!({"max_tokens": 1, "messages": []}),
            "anthropic_version",
        ),
        (
            {
                let mut b = bedrock_request();
                b["stream"] = json!(true);
                b
            },
            "extraneous key [stream]",
        ),
        (
            {
                let mut b = bedrock_request();
                b["model"] = json!("m");
                b
            },
            "extraneous key [model]",
        ),
    ] {
        let resp = post(&base, BEDROCK, &body).await;
        assert_eq!(resp.status(), 400);
        assert!(resp.headers()["x-amzn-errortype"]
            .to_str()
            .unwrap()
            .starts_with("ValidationException"));
        let error: Value = resp.json().await.unwrap();
        assert!(
            error["message"].as_str().unwrap().contains(wording),
            "{error}"
        );
    }
    assert!(mock.requests().iter().all(|r| r.turn.is_none()));
    // The turn is still there for a good request.
    let resp = post(&base, BEDROCK, &bedrock_request()).await;
    assert_eq!(resp.status(), 200);
}

#[tokio::test]
async fn vertex_streams_the_anthropic_sse_dialect() {
    let mock = MockLlm::start_json(json!({"turns": [{"text": ["a", "b"]}]}))
        .await
        .unwrap();
    let (_, events) = stream_ok(&mock.base_url(), VERTEX, &vertex_request()).await;
    assert_eq!(anthropic_text(&events), "ab");
    assert_eq!(events[0].json()["message"]["model"], "claude-test@1");
    // Wrong version or a model in the body: 400 in Anthropic's shape.
    let mut bad = vertex_request();
    bad["anthropic_version"] = json!("2023-06-01");
    let resp = post(&mock.base_url(), VERTEX, &bad).await;
    assert_eq!(resp.status(), 400);
    let error: Value = resp.json().await.unwrap();
    assert_eq!(error["error"]["type"], "invalid_request_error");
    let mut bad = vertex_request();
    bad["model"] = json!("claude");
    assert_eq!(post(&mock.base_url(), VERTEX, &bad).await.status(), 400);
}

#[tokio::test]
async fn token_endpoint_issues_tokens_and_records_the_grant() {
    let mock = MockLlm::start_json(json!({"turns": []})).await.unwrap();
    let client = reqwest::Client::new();
    let form = "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=a.b.c";
    let token: Value = client
        .post(format!("{}/token?expires_in=30", mock.base_url()))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        token,
        json!({"access_token": "ya29.mock-token-0", "expires_in": 30, "token_type": "Bearer"})
    );
    let sent = &mock.requests()[0];
    assert_eq!(sent.path, "/token");
    assert_eq!(sent.query.as_deref(), Some("expires_in=30"));
    assert_eq!(sent.body, json!(form));
    assert_eq!(sent.turn, None);
}
