//! The OpenAI Responses dialect (`POST /v1/responses`): event sequence and payloads for text,
//! reasoning, tool calls and refusals, terminal events and usage, in-stream failures, and the
//! checks on the request's `input` items (tool pairing, encrypted reasoning sent back); and
//! DashScope's dialect at its own path: hosted-tool items, `x_tools` usage, what it refuses.

mod common;

use common::*;
use mock_llm::MockLlm;
use serde_json::{json, Value};

fn request(input: Value) -> Value {
    json!({"model": "gpt-5-test", "stream": true, "store": false, "input": input})
}

fn payloads(events: &[SseEvent]) -> Vec<Value> {
    events.iter().map(SseEvent::json).collect()
}

fn of_type<'a>(payloads: &'a [Value], kind: &str) -> Vec<&'a Value> {
    payloads.iter().filter(|p| p["type"] == kind).collect()
}

#[tokio::test]
async fn text_turn_event_sequence_and_usage() {
    let mock = MockLlm::start_json(json!({"turns": [{
        "text": ["Hel", "lo"],
        "usage": {"input_tokens": 10, "output_tokens": 5, "cache_read_input_tokens": 4}
    }]}))
    .await
    .unwrap();
    let (_, events) = stream_ok(&mock.base_url(), "/v1/responses", &request(json!("hi"))).await;
    assert_eq!(
        names(&events),
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.content_part.added",
            "response.output_text.delta",
            "response.output_text.delta",
            "response.output_text.done",
            "response.content_part.done",
            "response.output_item.done",
            "response.completed",
        ]
    );
    let payloads = payloads(&events);
    for (n, (event, payload)) in events.iter().zip(&payloads).enumerate() {
        assert_eq!(
            event.event.as_deref(),
            payload["type"].as_str(),
            "name = type"
        );
        assert_eq!(payload["sequence_number"], n, "numbered in order");
    }
    assert_eq!(payloads[0]["response"]["model"], "gpt-5-test");
    assert_eq!(payloads[0]["response"]["status"], "in_progress");
    let deltas: String = of_type(&payloads, "response.output_text.delta")
        .iter()
        .map(|p| p["delta"].as_str().unwrap())
        .collect();
    assert_eq!(deltas, "Hello");
    let done = &payloads[9]["response"];
    assert_eq!(done["status"], "completed");
    assert_eq!(
        done["usage"],
        json!({"input_tokens": 14, "input_tokens_details": {"cached_tokens": 4},
               "output_tokens": 5, "output_tokens_details": {"reasoning_tokens": 0},
               "total_tokens": 19})
    );
    assert_eq!(done["output"][0]["content"][0]["text"], "Hello");
}

#[tokio::test]
async fn reasoning_and_tool_calls() {
    let mock = MockLlm::start_json(json!({"turns": [{
        "thinking": ["Let me ", "look."],
        "tool_calls": [{"id": "call_1", "name": "Read", "input": {"path": "a.txt"}}]
    }]}))
    .await
    .unwrap();
    // The path without /v1 is served too.
    let (_, events) = stream_ok(&mock.base_url(), "/responses", &request(json!("hi"))).await;
    let payloads = payloads(&events);
    let summary: String = of_type(&payloads, "response.reasoning_summary_text.delta")
        .iter()
        .map(|p| p["delta"].as_str().unwrap())
        .collect();
    assert_eq!(summary, "Let me look.");
    let items = of_type(&payloads, "response.output_item.done");
    let reasoning = &items[0]["item"];
    assert_eq!(reasoning["type"], "reasoning");
    let id = reasoning["id"].as_str().unwrap();
    assert!(id.starts_with("rs_"), "{id}");
    assert_eq!(
        reasoning["encrypted_content"],
        format!("gAAAAA_mock_{id}"),
        "the encrypted content is derived from the id"
    );
    assert_eq!(reasoning["summary"][0]["text"], "Let me look.");
    let call = &items[1]["item"];
    assert_eq!(call["type"], "function_call");
    assert_eq!(call["call_id"], "call_1");
    assert_eq!(call["name"], "Read");
    assert_eq!(call["arguments"], r#"{"path":"a.txt"}"#);
    let args: String = of_type(&payloads, "response.function_call_arguments.delta")
        .iter()
        .map(|p| p["delta"].as_str().unwrap())
        .collect();
    assert_eq!(args, r#"{"path":"a.txt"}"#);
    let completed = payloads.last().unwrap();
    assert_eq!(completed["type"], "response.completed");
    assert_eq!(completed["response"]["output"].as_array().unwrap().len(), 2);
}

#[tokio::test]
async fn max_tokens_and_content_filter_end_incomplete() {
    for (stop, reason) in [
        ("max_tokens", "max_output_tokens"),
        ("content_filter", "content_filter"),
    ] {
        let mock = MockLlm::start_json(json!({"turns": [{"text": "cut", "stop_reason": stop}]}))
            .await
            .unwrap();
        let (_, events) = stream_ok(&mock.base_url(), "/v1/responses", &request(json!("hi"))).await;
        let last = events.last().unwrap().json();
        assert_eq!(last["type"], "response.incomplete");
        assert_eq!(last["response"]["status"], "incomplete");
        assert_eq!(last["response"]["incomplete_details"]["reason"], reason);
    }
}

#[tokio::test]
async fn refusal_streams_refusal_deltas() {
    let mock = MockLlm::start_json(json!({"turns": [{"refusal": ["I can't ", "help."]}]}))
        .await
        .unwrap();
    let (_, events) = stream_ok(&mock.base_url(), "/v1/responses", &request(json!("hi"))).await;
    let payloads = payloads(&events);
    let refusal: String = of_type(&payloads, "response.refusal.delta")
        .iter()
        .map(|p| p["delta"].as_str().unwrap())
        .collect();
    assert_eq!(refusal, "I can't help.");
}

#[tokio::test]
async fn in_stream_error_and_failed_response() {
    let mock = MockLlm::start_json(json!({"turns": [
        {"text": "x", "fault": {"kind": "stream_error", "after_events": 2,
                                "error_type": "rate_limit_exceeded", "message": "slow"}},
        {"text": "x", "fault": {"kind": "stream_error", "after_events": 1, "failed": true,
                                "error_type": "server_error", "message": "boom"}}
    ]}))
    .await
    .unwrap();
    let (_, events) = stream_ok(&mock.base_url(), "/v1/responses", &request(json!("hi"))).await;
    assert_eq!(events.len(), 3);
    let error = events[2].json();
    assert_eq!(events[2].event.as_deref(), Some("error"));
    assert_eq!(error["code"], "rate_limit_exceeded");
    assert_eq!(error["message"], "slow");
    let (_, events) = stream_ok(&mock.base_url(), "/v1/responses", &request(json!("hi"))).await;
    assert_eq!(events.len(), 2);
    let failed = events[1].json();
    assert_eq!(failed["type"], "response.failed");
    assert_eq!(failed["response"]["status"], "failed");
    assert_eq!(
        failed["response"]["error"],
        json!({"code": "server_error", "message": "boom"})
    );
}

#[tokio::test]
async fn http_errors_use_the_openai_error_shape() {
    let mock = MockLlm::start_json(json!({"turns": [
        {"fault": {"kind": "status", "status": 429, "retry_after": 2}}
    ]}))
    .await
    .unwrap();
    let resp = post(&mock.base_url(), "/v1/responses", &request(json!("hi"))).await;
    assert_eq!(resp.status(), 429);
    assert_eq!(resp.headers()["retry-after"], "2");
    assert!(resp.headers().contains_key("x-request-id"));
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["error"]["code"], "rate_limit_exceeded");
}

#[tokio::test]
async fn input_items_are_checked_like_the_real_api() {
    let mock = MockLlm::start_json(json!({"repeat": true, "turns": [{"text": "ok"}]}))
        .await
        .unwrap();
    let id = "rs_mock_0_0";
    let good = json!([
        {"role": "user", "content": "hi"},
        {"type": "reasoning", "id": id, "summary": [], "encrypted_content": format!("gAAAAA_mock_{id}")},
        {"type": "function_call", "call_id": "c1", "name": "Read", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "text"},
    ]);
    let resp = post(&mock.base_url(), "/v1/responses", &request(good.clone())).await;
    assert_eq!(resp.status(), 200);

    let cases = [
        // The reasoning item without its encrypted content cannot be found when nothing is stored.
        (
            json!([{"type": "reasoning", "id": id, "summary": []}]),
            "Items are not persisted when `store` is set to false",
        ),
        (
            json!([{"type": "reasoning", "id": id, "summary": [], "encrypted_content": "forged"}]),
            "could not be verified",
        ),
        (
            json!([{"type": "function_call", "call_id": "c1", "name": "Read", "arguments": "{}"}]),
            "No tool output found for function call c1",
        ),
        (
            json!([{"type": "function_call_output", "call_id": "c9", "output": "x"}]),
            "No tool call found for function call output with call_id c9",
        ),
    ];
    for (input, wording) in cases {
        let resp = post(&mock.base_url(), "/v1/responses", &request(input)).await;
        assert_eq!(resp.status(), 400);
        let body: Value = resp.json().await.unwrap();
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.contains(wording), "{message}");
    }
    let missing = json!({"model": "m", "stream": true});
    let resp = post(&mock.base_url(), "/v1/responses", &missing).await;
    assert_eq!(resp.status(), 400);
    // Rejected requests consume no turn; all are recorded.
    let recorded = mock.requests();
    assert_eq!(recorded.len(), 6);
    assert_eq!(recorded[0].turn, Some(0));
    assert!(recorded[1..].iter().all(|r| r.turn.is_none()));
}

const DASHSCOPE: &str = "/api/v2/apps/protocols/compatible-mode/v1/responses";

/// A scripted DashScope turn: a search, a page fetch, then the answer.
fn dashscope_turn() -> Value {
    json!({"turns": [{
        "hosted_items": [
            {"type": "web_search_call", "action": {"type": "search", "query": "robota",
             "sources": [{"type": "url", "url": "https://example.com"}]}},
            {"type": "web_extractor_call", "goal": "read https://example.com",
             "output": "Example Domain"},
        ],
        "text": "It is an example.",
    }]})
}

#[tokio::test]
async fn dashscope_streams_declared_hosted_tool_items_and_counts_them() {
    let mock = MockLlm::start_json(dashscope_turn()).await.unwrap();
    let mut body = request(json!("what is example.com?"));
    body["tools"] = json!([{"type": "web_search"}, {"type": "web_extractor"}]);
    let (_, events) = stream_ok(&mock.base_url(), DASHSCOPE, &body).await;
    let payloads = payloads(&events);
    let added = of_type(&payloads, "response.output_item.added");
    let done = of_type(&payloads, "response.output_item.done");
    assert_eq!(added.len(), 3);
    // Started without results, finished whole; then the message.
    assert_eq!(added[0]["item"]["type"], "web_search_call");
    assert_eq!(added[0]["item"]["status"], "in_progress");
    assert!(added[0]["item"]["action"].get("sources").is_none());
    assert_eq!(
        done[0]["item"]["action"]["sources"][0]["url"],
        "https://example.com"
    );
    assert_eq!(added[1]["item"]["type"], "web_extractor_call");
    assert!(added[1]["item"].get("output").is_none());
    assert_eq!(done[1]["item"]["output"], "Example Domain");
    assert_eq!(done[1]["item"]["status"], "completed");
    assert_eq!(done[1]["output_index"], 1);
    assert_eq!(done[2]["item"]["type"], "message");
    let completed = &of_type(&payloads, "response.completed")[0]["response"];
    assert_eq!(
        completed["usage"]["x_tools"],
        json!({"web_search": {"count": 1}, "web_extractor": {"count": 1}})
    );
    assert_eq!(completed["output"].as_array().map(Vec::len), Some(3));
}

#[tokio::test]
async fn hosted_items_of_undeclared_tools_are_not_sent() {
    let mock = MockLlm::start_json(dashscope_turn()).await.unwrap();
    let mut body = request(json!("hi"));
    body["tools"] = json!([{"type": "web_search"}]);
    let (_, events) = stream_ok(&mock.base_url(), DASHSCOPE, &body).await;
    let dashscope = payloads(&events);
    let done = of_type(&dashscope, "response.output_item.done");
    let kinds: Vec<&str> = done
        .iter()
        .filter_map(|p| p["item"]["type"].as_str())
        .collect();
    assert_eq!(kinds, ["web_search_call", "message"]);
    let usage = &of_type(&dashscope, "response.completed")[0]["response"]["usage"];
    assert_eq!(usage["x_tools"], json!({"web_search": {"count": 1}}));
    // OpenAI's path reports no `x_tools`.
    mock.reset();
    let (_, events) = stream_ok(&mock.base_url(), "/v1/responses", &body).await;
    let openai = payloads(&events);
    let usage = &of_type(&openai, "response.completed")[0]["response"]["usage"];
    assert!(usage.get("x_tools").is_none(), "{usage}");
}

#[tokio::test]
async fn dashscope_refuses_what_it_does_not_support() {
    let mock = MockLlm::start_json(dashscope_turn()).await.unwrap();
    let mut instructions = request(json!("hi"));
    instructions["instructions"] = json!("be brief");
    let mut background = request(json!("hi"));
    background["background"] = json!(true);
    let mut extractor_alone = request(json!("hi"));
    extractor_alone["tools"] = json!([{"type": "web_extractor"}]);
    for (body, wording) in [
        (instructions, "`instructions` is not supported"),
        (background, "`background` is not supported"),
        (extractor_alone, "needs the web_search tool"),
    ] {
        let resp = post(&mock.base_url(), DASHSCOPE, &body).await;
        assert_eq!(resp.status(), 400);
        let error: Value = resp.json().await.unwrap();
        let message = error["error"]["message"].as_str().unwrap();
        assert!(message.contains(wording), "{message}");
    }
    // OpenAI's own path takes `instructions`.
    let mut openai = request(json!("hi"));
    openai["instructions"] = json!("be brief");
    let resp = post(&mock.base_url(), "/v1/responses", &openai).await;
    assert_eq!(resp.status(), 200);
}
