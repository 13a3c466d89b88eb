//! The Gemini dialect on the wire: `streamGenerateContent?alt=sse` chunks for text, thinking,
//! function calls, signatures and usage; request checks; Google's error bodies for faults.

mod common;

use common::*;
use mock_llm::MockLlm;
use serde_json::{json, Value};

const PATH: &str = "/v1beta/models/gemini-test:streamGenerateContent?alt=sse";

fn gemini_request() -> Value {
    json!({"contents": [{"role": "user", "parts": [{"text": "hi"}]}]})
}

/// The parsed chunks (every event is a data-only JSON chunk).
fn chunks(events: &[SseEvent]) -> Vec<Value> {
    events
        .iter()
        .map(|e| {
            assert_eq!(e.event, None, "Gemini events have no event: line");
            e.json()
        })
        .collect()
}

/// All parts of all chunks, in order.
fn parts(chunks: &[Value]) -> Vec<Value> {
    chunks
        .iter()
        .flat_map(|c| {
            c["candidates"][0]["content"]["parts"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .collect()
}

#[tokio::test]
async fn text_turn_chunks_finish_reason_and_usage() {
    let mock = MockLlm::start_json(json!({"turns": [{
        "text": ["Hel", "lo"],
        "usage": {"input_tokens": 10, "output_tokens": 3, "cache_read_input_tokens": 5}
    }]}))
    .await
    .unwrap();
    let (_, events) = stream_ok(&mock.base_url(), PATH, &gemini_request()).await;
    let chunks = chunks(&events);
    assert_eq!(chunks.len(), 3);
    assert_eq!(
        chunks[0],
        json!({
            "candidates": [{"content": {"parts": [{"text": "Hel"}], "role": "model"}, "index": 0}],
            "modelVersion": "gemini-test",
            "responseId": "resp-mock-0",
        })
    );
    let last = &chunks[2];
    assert_eq!(last["candidates"][0]["finishReason"], "STOP");
    assert_eq!(
        last["usageMetadata"],
        json!({"promptTokenCount": 15, "candidatesTokenCount": 3, "totalTokenCount": 18,
               "cachedContentTokenCount": 5})
    );
    // Only the last chunk finishes.
    assert!(chunks[..2]
        .iter()
        .all(|c| c["candidates"][0].get("finishReason").is_none()));

    let requests = mock.requests();
    assert_eq!(
        requests[0].path,
        "/v1beta/models/gemini-test:streamGenerateContent"
    );
    assert_eq!(requests[0].query.as_deref(), Some("alt=sse"));
    assert_eq!(requests[0].turn, Some(0));
}

#[tokio::test]
async fn thinking_function_calls_and_signatures() {
    let mock = MockLlm::start_json(json!({"turns": [{
        "thinking": ["Let me ", "look"],
        "thinking_signature": "U0lH",
        "tool_calls": [
            {"id": "fc_a", "name": "Read", "input": {"file_path": "a.txt"}},
            {"name": "Grep", "arguments_chunks": ["{\"p\":", "1}"]}
        ]
    }]}))
    .await
    .unwrap();
    let (_, events) = stream_ok(&mock.base_url(), PATH, &gemini_request()).await;
    let chunks = chunks(&events);
    let parts = parts(&chunks);
    assert_eq!(
        parts[..2],
        [
            json!({"text": "Let me ", "thought": true}),
            json!({"text": "look", "thought": true}),
        ]
    );
    // Both calls whole, in one chunk; the signature on the first; no id unless the script has one.
    assert_eq!(
        chunks[2]["candidates"][0]["content"]["parts"],
        json!([
            {"functionCall": {"id": "fc_a", "name": "Read", "args": {"file_path": "a.txt"}},
             "thoughtSignature": "U0lH"},
            {"functionCall": {"name": "Grep", "args": {"p": 1}}},
        ])
    );
    // Gemini says STOP after function calls too.
    assert_eq!(
        chunks.last().unwrap()["candidates"][0]["finishReason"],
        "STOP"
    );
}

#[tokio::test]
async fn text_signature_and_stop_reasons() {
    let mock = MockLlm::start_json(json!({"turns": [
        {"thinking": "hmm", "text": "x"},
        {"text": "x", "stop_reason": "max_tokens"},
        {"refusal": "no"}
    ]}))
    .await
    .unwrap();
    let base = mock.base_url();
    let (_, events) = stream_ok(&base, PATH, &gemini_request()).await;
    let chunks = chunks(&events);
    let last = chunks.last().unwrap();
    // Without calls, the signature (by default `sig_mock` in base64 when the turn thinks) comes
    // on an empty text part in the finishing chunk.
    assert_eq!(
        last["candidates"][0]["content"]["parts"],
        json!([{"text": "", "thoughtSignature": "c2lnX21vY2s="}])
    );
    let finish = |events: &[SseEvent]| {
        let last = events.last().unwrap().json();
        last["candidates"][0]["finishReason"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let (_, events) = stream_ok(&base, PATH, &gemini_request()).await;
    assert_eq!(finish(&events), "MAX_TOKENS");
    let (_, events) = stream_ok(&base, PATH, &gemini_request()).await;
    assert_eq!(finish(&events), "SAFETY");
}

#[tokio::test]
async fn requests_that_are_not_sse_streams_are_rejected_without_a_turn() {
    let mock = MockLlm::start_json(json!({"turns": [{"text": "ok"}]}))
        .await
        .unwrap();
    let base = mock.base_url();
    for (path, needle) in [
        (
            "/v1beta/models/gemini-test:streamGenerateContent",
            "alt=sse",
        ),
        ("/v1beta/models/gemini-test:generateContent", "streaming"),
    ] {
        let resp = post(&base, path, &gemini_request()).await;
        assert_eq!(resp.status(), 400, "{path}");
        let body: Value = resp.json().await.unwrap();
        assert_eq!(body["error"]["status"], "INVALID_ARGUMENT");
        assert_eq!(body["error"]["code"], 400);
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.contains(needle), "{message}");
    }
    let resp = post(&base, PATH, &json!({"model": "x"})).await;
    assert_eq!(resp.status(), 400);
    assert!(mock.requests().iter().all(|r| r.turn.is_none()));
}

#[tokio::test]
async fn function_responses_must_answer_the_turn_before() {
    let mock = MockLlm::start_json(json!({"repeat": true, "turns": [{"text": "ok"}]}))
        .await
        .unwrap();
    let base = mock.base_url();
    let call = json!({"role": "model", "parts": [
        {"functionCall": {"name": "Read", "args": {}}},
        {"functionCall": {"name": "Glob", "args": {}}},
    ]});
    let response = |name: &str| json!({"functionResponse": {"name": name, "response": {}}});
    let user = json!({"role": "user", "parts": [{"text": "go"}]});
    // Answered in full: accepted.
    let good = json!({"contents": [user, call,
        {"role": "user", "parts": [response("Read"), response("Glob")]}]});
    stream_ok(&base, PATH, &good).await;
    for (contents, needle) in [
        (
            json!([user, call, {"role": "user", "parts": [response("Read")]}]),
            "number of function response parts",
        ),
        (
            json!([user, call, user]),
            "function response turn comes immediately after a function call turn",
        ),
        (
            json!([user, {"role": "user", "parts": [response("Read")]}]),
            "function response turn comes immediately after a function call turn",
        ),
        (json!([user, call]), "answered"),
        (
            json!([{"role": "assistant", "parts": [{"text": "x"}]}]),
            "valid role",
        ),
        (json!([{"role": "user", "parts": []}]), "must not be empty"),
    ] {
        let resp = post(&base, PATH, &json!({"contents": contents})).await;
        assert_eq!(resp.status(), 400, "{contents}");
        let body: Value = resp.json().await.unwrap();
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.contains(needle), "{needle}: {message}");
    }
}

#[tokio::test]
async fn status_faults_use_google_error_bodies() {
    let mock = MockLlm::start_json(json!({"turns": [
        {"fault": {"kind": "status", "status": 429, "retry_after": "2"}},
        {"fault": {"kind": "status", "status": 503, "message": "The model is overloaded."}},
        {"fault": {"kind": "status", "status": 400, "error_type": "FAILED_PRECONDITION"}}
    ]}))
    .await
    .unwrap();
    let base = mock.base_url();
    let resp = post(&base, PATH, &gemini_request()).await;
    assert_eq!(resp.status(), 429);
    assert_eq!(resp.headers()["retry-after"], "2");
    assert!(resp.headers().get("x-request-id").is_none());
    let body: Value = resp.json().await.unwrap();
    assert_eq!(
        body,
        json!({"error": {"code": 429, "message": "Rate limit exceeded",
                         "status": "RESOURCE_EXHAUSTED"}})
    );
    let body: Value = post(&base, PATH, &gemini_request())
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        body,
        json!({"error": {"code": 503, "message": "The model is overloaded.",
                         "status": "UNAVAILABLE"}})
    );
    let body: Value = post(&base, PATH, &gemini_request())
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(body["error"]["status"], "FAILED_PRECONDITION");
}

#[tokio::test]
async fn stream_faults_in_gemini_shape() {
    let mock = MockLlm::start_json(json!({"turns": [
        {"text": ["a", "b"], "fault": {"kind": "stream_error", "after_events": 1}},
        {"text": ["a", "b"], "fault": {"kind": "missing_terminal"}},
        {"text": "a", "fault": {"kind": "malformed", "after_events": 1}},
        {"text": "a", "fault": {"kind": "oversized", "bytes": 4096}}
    ]}))
    .await
    .unwrap();
    let base = mock.base_url();
    let (_, events) = stream_ok(&base, PATH, &gemini_request()).await;
    assert_eq!(events.len(), 2);
    assert_eq!(
        events[1].json(),
        json!({"error": {"code": 503,
                         "message": "The model is overloaded. Please try again later.",
                         "status": "UNAVAILABLE"}})
    );
    let (_, events) = stream_ok(&base, PATH, &gemini_request()).await;
    let chunks = chunks(&events);
    assert_eq!(chunks.len(), 2);
    assert!(chunks
        .iter()
        .all(|c| c["candidates"][0].get("finishReason").is_none()));
    let (_, events) = stream_ok(&base, PATH, &gemini_request()).await;
    assert_eq!(events.len(), 3);
    assert!(serde_json::from_str::<Value>(&events[1].data).is_err());
    let (_, events) = stream_ok(&base, PATH, &gemini_request()).await;
    assert_eq!(events[1].data.len(), 4096);
    assert_eq!(
        events[1].json()["candidates"][0]["content"]["parts"],
        json!([])
    );
}
