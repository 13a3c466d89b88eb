//! Request recording, control endpoints, request validation, script exhaustion, concurrency and
//! server lifetime.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use mock_llm::{MockError, MockLlm, Script, Turn};
use serde_json::{json, Value};

#[tokio::test]
async fn requests_are_recorded_with_headers_body_and_turn() {
    let mock = MockLlm::start_json(json!({"turns": [{"text": "a"}, {"text": "b"}]}))
        .await
        .unwrap();
    let body = anthropic_request("claude-x");
    let resp = reqwest::Client::new()
        .post(format!("{}/v1/messages?beta=true", mock.base_url()))
        .header("X-Api-Key", "sk-test")
        .header("Anthropic-Version", "2023-06-01")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let _ = resp.bytes().await.unwrap();
    let (_, _) = openai_stream(&mock.base_url(), true).await;

    let recorded = mock.requests();
    assert_eq!(recorded.len(), 2);
    let r = &recorded[0];
    assert_eq!(
        (r.seq, r.method.as_str(), r.path.as_str()),
        (0, "POST", "/v1/messages")
    );
    assert_eq!(r.query.as_deref(), Some("beta=true"));
    assert_eq!(r.headers["x-api-key"], "sk-test");
    assert_eq!(r.headers["anthropic-version"], "2023-06-01");
    assert_eq!(r.body, body);
    assert_eq!(r.turn, Some(0));
    assert_eq!(recorded[1].path, "/v1/chat/completions");
    assert_eq!(recorded[1].turn, Some(1));
    assert_eq!(recorded[1].body["stream_options"]["include_usage"], true);

    // The same list over HTTP, for tests in other languages.
    let over_http: Value = reqwest::get(format!("{}/_mock/requests", mock.base_url()))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(over_http, serde_json::to_value(&recorded).unwrap());
}

#[tokio::test]
async fn bad_requests_get_400_and_do_not_consume_turns() {
    let mock = MockLlm::start_json(json!({"turns": [{"text": "kept"}]}))
        .await
        .unwrap();
    let client = reqwest::Client::new();
    let url = format!("{}/v1/messages", mock.base_url());
    let cases: Vec<(String, &str)> = vec![
        ("{not json".into(), "not valid JSON"),
        ("[1]".into(), "JSON object"),
        (
            json!({"max_tokens": 5, "messages": [], "stream": true}).to_string(),
            "`model`",
        ),
        (
            json!({"model": "m", "max_tokens": 5, "stream": true}).to_string(),
            "`messages`",
        ),
        (
            json!({"model": "m", "messages": [], "stream": true}).to_string(),
            "`max_tokens`",
        ),
        (
            json!({"model": "m", "max_tokens": 5, "messages": []}).to_string(),
            "stream",
        ),
        // Two tool calls sharing one id, answered twice: the real API refuses this history.
        (
            json!({"model": "m", "max_tokens": 5, "stream": true, "messages": [
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": [
                    {"type": "tool_use", "id": "t1", "name": "Read", "input": {}},
                    {"type": "tool_use", "id": "t1", "name": "Read", "input": {}}]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "t1", "content": "a"},
                    {"type": "tool_result", "tool_use_id": "t1", "content": "b"}]},
            ]})
            .to_string(),
            "`tool_use` ids must be unique",
        ),
        // A tool call left unanswered.
        (
            json!({"model": "m", "max_tokens": 5, "stream": true, "messages": [
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": [
                    {"type": "tool_use", "id": "t1", "name": "Read", "input": {}}]},
                {"role": "user", "content": "go on"},
            ]})
            .to_string(),
            "without `tool_result` blocks immediately after: t1",
        ),
    ];
    for (body, expected) in &cases {
        let resp = client.post(&url).body(body.clone()).send().await.unwrap();
        assert_eq!(resp.status(), 400, "{body}");
        let err: Value = resp.json().await.unwrap();
        assert_eq!(err["error"]["type"], "invalid_request_error");
        let msg = err["error"]["message"].as_str().unwrap();
        assert!(msg.contains(expected), "{body}: {msg}");
    }
    // OpenAI errors use OpenAI's shape.
    let resp = client
        .post(format!("{}/v1/chat/completions", mock.base_url()))
        .body("nope")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400);
    let err: Value = resp.json().await.unwrap();
    assert!(err["error"]["message"]
        .as_str()
        .unwrap()
        .contains("not valid JSON"));
    assert!(err.get("type").is_none());

    let recorded = mock.requests();
    assert_eq!(recorded.len(), cases.len() + 1);
    assert!(recorded.iter().all(|r| r.turn.is_none()));
    assert_eq!(
        recorded[0].body,
        json!("{not json"),
        "non-JSON bodies are kept as text"
    );
    // The turn is still there.
    let (_, events) = anthropic_stream(&mock.base_url()).await;
    assert_eq!(anthropic_text(&events), "kept");
}

#[tokio::test]
async fn exhausted_script_answers_500_with_a_clear_message() {
    let mock = MockLlm::start_json(json!({"turns": [{"text": "only"}]}))
        .await
        .unwrap();
    let _ = anthropic_stream(&mock.base_url()).await;
    let resp = post(&mock.base_url(), "/v1/messages", &anthropic_request("m")).await;
    assert_eq!(resp.status(), 500);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["type"], "error");
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("script exhausted"));
    let resp = post(
        &mock.base_url(),
        "/v1/chat/completions",
        &openai_request("m", false),
    )
    .await;
    assert_eq!(resp.status(), 500);
    let body: Value = resp.json().await.unwrap();
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("script exhausted"));
    let turns: Vec<Option<usize>> = mock.requests().iter().map(|r| r.turn).collect();
    assert_eq!(turns, [Some(0), None, None]);
}

#[tokio::test]
async fn control_endpoints() {
    let mock = MockLlm::start_json(json!({"turns": []})).await.unwrap();
    let base = mock.base_url();
    let client = reqwest::Client::new();

    let health = client
        .get(format!("{base}/_mock/health"))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), 200);

    // Empty script: exhausted at once.
    let resp = post(&base, "/v1/messages", &anthropic_request("m")).await;
    assert_eq!(resp.status(), 500);

    // Replace the script over HTTP.
    let resp = client
        .post(format!("{base}/_mock/script"))
        .body(json!({"turns": [{"text": "one"}, {"text": "two"}]}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(
        resp.json::<Value>().await.unwrap(),
        json!({"ok": true, "turns": 2})
    );
    let (_, events) = anthropic_stream(&base).await;
    assert_eq!(anthropic_text(&events), "one");

    // A bad script is rejected with the field named, and the old one stays.
    let resp = client
        .post(format!("{base}/_mock/script"))
        .body(r#"{"turns": [{"txet": "x"}]}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400);
    let msg = resp.json::<Value>().await.unwrap()["error"]["message"].clone();
    assert!(msg.as_str().unwrap().contains("txet"), "{msg}");
    let (_, events) = anthropic_stream(&base).await;
    assert_eq!(anthropic_text(&events), "two");
    assert_eq!(mock.requests().len(), 3);

    // Reset clears recordings and rewinds.
    let resp = client
        .post(format!("{base}/_mock/reset"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert!(mock.requests().is_empty());
    let (_, events) = anthropic_stream(&base).await;
    assert_eq!(anthropic_text(&events), "one");
    assert_eq!(mock.requests()[0].seq, 0);

    // Unknown routes and wrong methods are JSON errors (and recorded).
    let resp = client
        .get(format!("{base}/v2/whatever"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 404);
    assert_eq!(
        resp.json::<Value>().await.unwrap()["error"]["type"],
        "not_found_error"
    );
    let resp = client
        .get(format!("{base}/v1/messages"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 405);
    let resp = client
        .post(format!("{base}/_mock/requests"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 405);
    let paths: Vec<String> = mock.requests().iter().map(|r| r.path.clone()).collect();
    assert_eq!(paths, ["/v1/messages", "/v2/whatever", "/v1/messages"]);
}

#[tokio::test]
async fn rust_api_script_management() {
    let err = MockLlm::start_json(json!({"turns": [{"fault": {"kind": "status", "status": 99}}]}))
        .await
        .unwrap_err();
    assert!(
        matches!(err, MockError::Script(ref m) if m.contains("turns[0].fault.status")),
        "{err}"
    );

    let mock = MockLlm::start(Script::new(vec![Turn::text("first")]))
        .await
        .unwrap();
    assert!(mock.base_url().starts_with("http://127.0.0.1:"));
    assert_eq!(mock.addr().ip().to_string(), "127.0.0.1");
    mock.set_script(Script::repeating(vec![Turn::text("again")]))
        .unwrap();
    for _ in 0..3 {
        let (_, events) = anthropic_stream(&mock.base_url()).await;
        assert_eq!(anthropic_text(&events), "again");
    }
    mock.reset();
    assert!(mock.requests().is_empty());

    let no_record = Script {
        record: false,
        ..Script::repeating(vec![Turn::text("x")])
    };
    mock.set_script(no_record).unwrap();
    let _ = anthropic_stream(&mock.base_url()).await;
    assert!(mock.requests().is_empty(), "record: false keeps nothing");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_thousand_concurrent_streams_with_repeat() {
    let mock = MockLlm::start_json(json!({"repeat": true, "turns": [
        {"text": ["a", "b", "c", "d"], "chunk_delay_ms": 5},
        {"text": ["w", "x", "y", "z"], "chunk_delay_ms": 5}
    ]}))
    .await
    .unwrap();
    let base = Arc::new(mock.base_url());
    let client = reqwest::Client::new();
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..1000 {
        let (base, client) = (Arc::clone(&base), client.clone());
        tasks.spawn(async move {
            let (path, body) = if i % 2 == 0 {
                ("/v1/messages", anthropic_request("m"))
            } else {
                ("/v1/chat/completions", openai_request("m", false))
            };
            let resp = client
                .post(format!("{base}{path}"))
                .json(&body)
                .send()
                .await
                .unwrap();
            assert_eq!(resp.status(), 200);
            let events = parse_sse(&resp.bytes().await.unwrap());
            if path == "/v1/messages" {
                anthropic_text(&events)
            } else {
                openai_text(&events)
            }
        });
    }
    let mut texts = Vec::new();
    while let Some(text) = tasks.join_next().await {
        texts.push(text.unwrap());
    }
    assert_eq!(texts.len(), 1000);
    assert_eq!(texts.iter().filter(|t| *t == "abcd").count(), 500);
    assert_eq!(texts.iter().filter(|t| *t == "wxyz").count(), 500);
    let recorded = mock.requests();
    assert_eq!(recorded.len(), 1000);
    assert_eq!(recorded.iter().filter(|r| r.turn == Some(0)).count(), 500);
}

#[tokio::test]
async fn shutdown_stops_the_server_and_drop_aborts_open_streams() {
    let mock = MockLlm::start_json(json!({"repeat": true, "turns": [
        {"text": "x", "fault": {"kind": "stall", "after_events": 1, "ms": 60000}}
    ]}))
    .await
    .unwrap();
    let base = mock.base_url();
    let mut resp = post(&base, "/v1/messages", &anthropic_request("m")).await;
    let first = resp.chunk().await.unwrap();
    assert!(first.is_some());
    drop(mock);
    let rest = tokio::time::timeout(Duration::from_secs(10), resp.chunk())
        .await
        .expect("dropping the server must end open streams");
    assert!(rest.is_err(), "the open stream ends with a transport error");
    assert!(reqwest::get(format!("{base}/_mock/health")).await.is_err());

    let mock = MockLlm::start(Script::new(vec![])).await.unwrap();
    let base = mock.base_url();
    assert!(reqwest::get(format!("{base}/_mock/health")).await.is_ok());
    mock.shutdown().await;
    assert!(reqwest::get(format!("{base}/_mock/health")).await.is_err());
}
