//! Every fault kind, on both endpoints where the behaviour differs.

mod common;

use std::time::Duration;

use common::*;
use mock_llm::MockLlm;
use serde_json::{json, Value};

const A: &str = "/v1/messages";
const O: &str = "/v1/chat/completions";

fn request_for(path: &str) -> Value {
    if path == A {
        anthropic_request("m")
    } else {
        openai_request("m", true)
    }
}

async fn error_json(resp: reqwest::Response) -> Value {
    assert_eq!(resp.headers()["content-type"], "application/json");
    resp.json().await.unwrap()
}

#[tokio::test]
async fn status_429_with_retry_after_then_success() {
    for path in [A, O] {
        let mock = MockLlm::start_json(json!({"turns": [
            {"fault": {"kind": "status", "status": 429, "retry_after": "1", "message": "slow down"}},
            {"text": "ok"}
        ]}))
        .await
        .unwrap();
        let resp = post(&mock.base_url(), path, &request_for(path)).await;
        assert_eq!(resp.status(), 429);
        assert_eq!(resp.headers()["retry-after"], "1");
        let body = error_json(resp).await;
        if path == A {
            assert_eq!(
                body,
                json!({"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}})
            );
        } else {
            assert_eq!(
                body,
                json!({"error": {"message": "slow down", "type": "requests", "param": null,
                                 "code": "rate_limit_exceeded"}})
            );
        }
        // The retry gets the next turn.
        let (_, events) = stream_ok(&mock.base_url(), path, &request_for(path)).await;
        let text = if path == A {
            anthropic_text(&events)
        } else {
            openai_text(&events)
        };
        assert_eq!(text, "ok");
        let turns: Vec<Option<usize>> = mock.requests().iter().map(|r| r.turn).collect();
        assert_eq!(turns, [Some(0), Some(1)]);
    }
}

#[tokio::test]
async fn status_defaults_per_code() {
    let codes = [
        (400, "invalid_request_error", "invalid_request_error"),
        (401, "authentication_error", "invalid_request_error"),
        (500, "api_error", "server_error"),
        (502, "api_error", "server_error"),
        (503, "api_error", "server_error"),
        (529, "overloaded_error", "server_error"),
    ];
    let turns: Vec<Value> = codes
        .iter()
        .map(|(s, _, _)| json!({"fault": {"kind": "status", "status": s}}))
        .collect();
    let mock = MockLlm::start_json(json!({"repeat": true, "turns": turns}))
        .await
        .unwrap();
    for path in [A, O] {
        for (status, anthropic_type, openai_type) in codes {
            let resp = post(&mock.base_url(), path, &request_for(path)).await;
            assert_eq!(resp.status(), status);
            assert!(resp.headers().get("retry-after").is_none());
            let body = error_json(resp).await;
            if path == A {
                assert_eq!(body["type"], "error");
                assert_eq!(body["error"]["type"], anthropic_type, "{status}");
                assert!(body["error"]["message"].is_string());
            } else {
                assert_eq!(body["error"]["type"], openai_type, "{status}");
                assert!(body["error"]["message"].is_string());
            }
        }
    }
}

#[tokio::test]
async fn status_context_length_and_extra_headers() {
    let mock = MockLlm::start_json(json!({"turns": [
        {"fault": {"kind": "status", "status": 400,
                   "message": "prompt is too long: 210000 tokens > 200000 maximum"}},
        {"fault": {"kind": "status", "status": 400, "code": "context_length_exceeded",
                   "message": "This model's maximum context length is 128000 tokens."}},
        {"fault": {"kind": "status", "status": 529, "error_type": "overloaded_error",
                   "headers": {"x-should-retry": "true", "retry-after-ms": "250"}}}
    ]}))
    .await
    .unwrap();
    let body = error_json(post(&mock.base_url(), A, &request_for(A)).await).await;
    assert_eq!(body["error"]["type"], "invalid_request_error");
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .starts_with("prompt is too long"));

    let body = error_json(post(&mock.base_url(), O, &request_for(O)).await).await;
    assert_eq!(body["error"]["code"], "context_length_exceeded");
    assert_eq!(body["error"]["type"], "invalid_request_error");

    let resp = post(&mock.base_url(), A, &request_for(A)).await;
    assert_eq!(resp.status(), 529);
    assert_eq!(resp.headers()["x-should-retry"], "true");
    assert_eq!(resp.headers()["retry-after-ms"], "250");
}

/// Events fully received before a transport error ended the body.
async fn events_until_error(path: &str, mock: &MockLlm) -> (Vec<SseEvent>, Option<reqwest::Error>) {
    let resp = post(&mock.base_url(), path, &request_for(path)).await;
    assert_eq!(resp.status(), 200);
    let (chunks, err) = read_chunks(resp).await;
    let mut parser = SseParser::default();
    let events = chunks.iter().flat_map(|c| parser.feed(c)).collect();
    (events, err)
}

#[tokio::test]
async fn reset_drops_the_connection_mid_stream() {
    for close in ["rst", "fin"] {
        for path in [A, O] {
            let mock = MockLlm::start_json(json!({"turns": [
                {"text": ["a", "b", "c"], "fault": {"kind": "reset", "after_events": 3, "close": close}},
                {"text": "after"}
            ]}))
            .await
            .unwrap();
            let (events, err) = events_until_error(path, &mock).await;
            assert!(
                err.is_some(),
                "{close} {path}: the client must see a transport error"
            );
            assert_eq!(
                events.len(),
                3,
                "{close} {path}: exactly the first 3 events arrive"
            );
            // The server keeps serving new connections.
            let (_, events) = stream_ok(&mock.base_url(), path, &request_for(path)).await;
            let text = if path == A {
                anthropic_text(&events)
            } else {
                openai_text(&events)
            };
            assert_eq!(text, "after");
        }
    }
}

#[tokio::test]
async fn stall_goes_silent_then_drops() {
    let mock = MockLlm::start_json(json!({"turns": [
        {"text": ["a", "b"], "fault": {"kind": "stall", "after_events": 2, "ms": 1500}}
    ]}))
    .await
    .unwrap();
    let mut resp = post(&mock.base_url(), A, &request_for(A)).await;
    let mut parser = SseParser::default();
    let mut events = Vec::new();
    while events.len() < 2 {
        let chunk = resp
            .chunk()
            .await
            .unwrap()
            .expect("stream ended before 2 events");
        events.extend(parser.feed(&chunk));
    }
    assert_eq!(names(&events), ["message_start", "content_block_start"]);
    // Nothing more arrives for a while...
    let next = tokio::time::timeout(Duration::from_millis(300), resp.chunk()).await;
    assert!(next.is_err(), "expected silence, got {next:?}");
    // ...then the connection is dropped without a clean end.
    let rest = tokio::time::timeout(Duration::from_secs(10), resp.chunk())
        .await
        .expect("stall never ended");
    assert!(rest.is_err(), "expected a transport error, got {rest:?}");
}

#[tokio::test]
async fn malformed_event_is_inserted_and_the_stream_continues() {
    for path in [A, O] {
        let mock = MockLlm::start_json(json!({"turns": [
            {"text": ["a", "b"]},
            {"text": ["a", "b"], "fault": {"kind": "malformed", "after_events": 2}}
        ]}))
        .await
        .unwrap();
        let (_, normal) = stream_ok(&mock.base_url(), path, &request_for(path)).await;
        let (_, faulty) = stream_ok(&mock.base_url(), path, &request_for(path)).await;
        assert_eq!(faulty.len(), normal.len() + 1);
        assert!(
            serde_json::from_str::<Value>(&faulty[2].data).is_err(),
            "event 3 is not JSON"
        );
        let mut without = faulty.clone();
        without.remove(2);
        assert_eq!(normalized(&without), normalized(&normal), "{path}");
    }
}

#[tokio::test]
async fn missing_terminal_ends_cleanly_without_the_last_events() {
    let mock = MockLlm::start_json(json!({"repeat": true, "turns": [
        {"text": "hi", "fault": {"kind": "missing_terminal"}}
    ]}))
    .await
    .unwrap();
    let (_, events) = stream_ok(&mock.base_url(), A, &request_for(A)).await;
    assert_eq!(names(&events).last().unwrap(), "message_delta");
    assert!(!names(&events).contains(&"message_stop".to_owned()));
    assert_eq!(anthropic_text(&events), "hi");

    let (_, events) = stream_ok(&mock.base_url(), O, &request_for(O)).await;
    assert!(events.iter().all(|e| e.data != "[DONE]"));
    let chunks = openai_chunks(&events);
    assert!(chunks
        .iter()
        .all(|c| c["choices"][0]["finish_reason"].is_null()));
    assert!(
        chunks.iter().all(|c| c["usage"].is_null()),
        "no usage chunk"
    );
    assert_eq!(openai_text(&events), "hi");
}

#[tokio::test]
async fn oversized_event_has_exactly_the_requested_size() {
    let mock = MockLlm::start_json(json!({"turns": [
        {"text": "hi", "fault": {"kind": "oversized", "bytes": 20_000_000}},
        {"text": "hi", "fault": {"kind": "oversized", "bytes": 100_000, "after_events": 2}}
    ]}))
    .await
    .unwrap();
    let (_, events) = stream_ok(&mock.base_url(), A, &request_for(A)).await;
    assert_eq!(events[1].event.as_deref(), Some("ping"));
    assert_eq!(events[1].data.len(), 20_000_000);
    assert_eq!(events[1].json()["type"], "ping");
    assert_eq!(
        anthropic_text(&events),
        "hi",
        "the padding carries no content"
    );
    assert_eq!(names(&events).last().unwrap(), "message_stop");

    let (_, events) = stream_ok(&mock.base_url(), O, &request_for(O)).await;
    assert_eq!(events[2].data.len(), 100_000);
    assert_eq!(events[2].json()["choices"][0]["delta"], json!({}));
    assert_eq!(openai_text(&events), "hi");
    assert_eq!(events.last().unwrap().data, "[DONE]");
}

#[tokio::test]
async fn stream_error_event() {
    let mock = MockLlm::start_json(json!({"repeat": true, "turns": [
        {"text": ["a", "b"], "fault": {"kind": "stream_error", "after_events": 2,
                                       "error_type": "overloaded_error", "message": "Overloaded"}}
    ]}))
    .await
    .unwrap();
    let (_, events) = stream_ok(&mock.base_url(), A, &request_for(A)).await;
    assert_eq!(
        names(&events),
        ["message_start", "content_block_start", "error"]
    );
    assert_eq!(
        events[2].json(),
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
    );

    let (_, events) = stream_ok(&mock.base_url(), O, &request_for(O)).await;
    assert_eq!(events.len(), 3);
    assert_eq!(
        events[2].json(),
        json!({"error": {"message": "Overloaded", "type": "overloaded_error", "param": null, "code": null}})
    );
}

#[tokio::test]
async fn fault_after_events_beyond_the_stream_is_clamped() {
    let mock = MockLlm::start_json(json!({"turns": [
        {"text": "x", "fault": {"kind": "reset", "after_events": 1000}}
    ]}))
    .await
    .unwrap();
    let (events, err) = events_until_error(A, &mock).await;
    assert!(err.is_some());
    assert_eq!(
        names(&events).last().unwrap(),
        "message_stop",
        "all events, then the drop"
    );
}
