//! The normal (fault-free) wire output of both endpoints, checked event by event.

mod common;

use common::*;
use mock_llm::MockLlm;
use serde_json::{json, Value};

#[tokio::test]
async fn anthropic_text_turn_event_sequence() {
    let mock = MockLlm::start_json(json!({"turns": [{
        "text": ["Hel", "lo"],
        "usage": {"input_tokens": 12, "output_tokens": 7,
                  "cache_read_input_tokens": 3, "cache_creation_input_tokens": 4}
    }]}))
    .await
    .unwrap();
    let resp = post(
        &mock.base_url(),
        "/v1/messages",
        &anthropic_request("claude-x"),
    )
    .await;
    assert_eq!(resp.status(), 200);
    assert_eq!(
        resp.headers()["content-type"],
        "text/event-stream; charset=utf-8"
    );
    assert_eq!(resp.headers()["transfer-encoding"], "chunked");
    assert!(resp.headers().contains_key("request-id"));
    let (chunks, err) = read_chunks(resp).await;
    assert!(err.is_none());
    let events = parse_sse(&chunks.concat());

    assert_eq!(
        names(&events),
        [
            "message_start",
            "content_block_start",
            "ping",
            "content_block_delta",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop"
        ]
    );
    for e in &events {
        assert_eq!(
            e.json()["type"],
            e.event.clone().unwrap(),
            "type matches event name"
        );
    }
    let start = events[0].json();
    assert_eq!(
        start["message"],
        json!({
            "id": "msg_mock_0", "type": "message", "role": "assistant", "content": [],
            "model": "claude-x", "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": 12, "output_tokens": 0,
                      "cache_creation_input_tokens": 4, "cache_read_input_tokens": 3}
        })
    );
    assert_eq!(
        events[1].json(),
        json!({"type": "content_block_start", "index": 0,
               "content_block": {"type": "text", "text": ""}})
    );
    assert_eq!(
        events[3].json(),
        json!({"type": "content_block_delta", "index": 0,
               "delta": {"type": "text_delta", "text": "Hel"}})
    );
    assert_eq!(anthropic_text(&events), "Hello");
    assert_eq!(
        events[6].json(),
        json!({"type": "message_delta",
               "delta": {"stop_reason": "end_turn", "stop_sequence": null},
               "usage": {"output_tokens": 7}})
    );
    // `type` comes first on the wire, as in the real API.
    assert!(events[0].data.starts_with(r#"{"type":"message_start""#));
}

#[tokio::test]
async fn anthropic_tool_calls() {
    let mock = MockLlm::start_json(json!({"turns": [{
        "text": "Reading.",
        "tool_calls": [
            {"id": "toolu_1", "name": "Read", "input": {"file_path": "a.txt"}},
            {"id": "toolu_2", "name": "Grep", "input": {}, "arguments_chunks": ["{\"pat", "tern\":\"x\"}"]},
            {"name": "Bash", "raw_arguments": "{not json"}
        ]
    }]}))
    .await
    .unwrap();
    let (_, events) = anthropic_stream(&mock.base_url()).await;

    let starts: Vec<Value> = events
        .iter()
        .filter(|e| e.event.as_deref() == Some("content_block_start"))
        .map(|e| e.json()["content_block"].clone())
        .collect();
    assert_eq!(starts[0], json!({"type": "text", "text": ""}));
    assert_eq!(
        starts[1],
        json!({"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {}})
    );
    assert_eq!(starts[2]["id"], "toolu_2");
    assert_eq!(starts[3]["id"], "toolu_mock_0_2", "default id");

    let args_of = |index: u64| -> String {
        events
            .iter()
            .map(|e| e.json())
            .filter(|v| v["type"] == "content_block_delta" && v["index"] == index)
            .map(|v| {
                assert_eq!(v["delta"]["type"], "input_json_delta");
                v["delta"]["partial_json"].as_str().unwrap().to_owned()
            })
            .collect()
    };
    let first: Value = serde_json::from_str(&args_of(1)).unwrap();
    assert_eq!(first, json!({"file_path": "a.txt"}));
    let deltas_1 = events
        .iter()
        .filter(|e| e.event.as_deref() == Some("content_block_delta") && e.json()["index"] == 1)
        .count();
    assert!(deltas_1 >= 2, "default split sends the input in pieces");
    assert_eq!(args_of(2), r#"{"pattern":"x"}"#);
    assert_eq!(args_of(3), "{not json");

    let delta = events
        .iter()
        .find(|e| e.event.as_deref() == Some("message_delta"))
        .unwrap();
    assert_eq!(delta.json()["delta"]["stop_reason"], "tool_use");
    // Every started block is stopped, in order.
    let stops: Vec<u64> = events
        .iter()
        .filter(|e| e.event.as_deref() == Some("content_block_stop"))
        .map(|e| e.json()["index"].as_u64().unwrap())
        .collect();
    assert_eq!(stops, [0, 1, 2, 3]);
}

#[tokio::test]
async fn anthropic_thinking_block() {
    let mock = MockLlm::start_json(json!({"turns": [
        {"thinking": ["Let me ", "think"], "thinking_signature": "sig-abc", "text": "Done"},
        {"thinking": "hm"}
    ]}))
    .await
    .unwrap();
    let (_, events) = anthropic_stream(&mock.base_url()).await;
    assert_eq!(
        names(&events),
        [
            "message_start",
            "content_block_start",
            "ping",
            "content_block_delta",
            "content_block_delta",
            "content_block_delta",
            "content_block_stop",
            "content_block_start",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop"
        ]
    );
    assert_eq!(
        events[1].json()["content_block"],
        json!({"type": "thinking", "thinking": ""})
    );
    assert_eq!(
        anthropic_deltas(&events, "thinking_delta", "thinking"),
        "Let me think"
    );
    assert_eq!(
        events[5].json()["delta"],
        json!({"type": "signature_delta", "signature": "sig-abc"})
    );
    assert_eq!(events[7].json()["index"], 1);
    assert_eq!(anthropic_text(&events), "Done");

    let (_, events) = anthropic_stream(&mock.base_url()).await;
    assert_eq!(
        anthropic_deltas(&events, "signature_delta", "signature"),
        "sig_mock"
    );
}

#[tokio::test]
async fn anthropic_empty_turn_still_has_ping_and_terminal() {
    let mock = MockLlm::start_json(json!({"turns": [{}]})).await.unwrap();
    let (_, events) = anthropic_stream(&mock.base_url()).await;
    assert_eq!(
        names(&events),
        ["message_start", "ping", "message_delta", "message_stop"]
    );
}

#[tokio::test]
async fn openai_text_with_usage_and_done() {
    let mock = MockLlm::start_json(json!({"turns": [{
        "text": ["Hel", "lo"],
        "usage": {"input_tokens": 10, "output_tokens": 5, "cache_read_input_tokens": 4}
    }]}))
    .await
    .unwrap();
    let resp = post(
        &mock.base_url(),
        "/v1/chat/completions",
        &openai_request("gpt-x", true),
    )
    .await;
    assert_eq!(resp.status(), 200);
    assert_eq!(
        resp.headers()["content-type"],
        "text/event-stream; charset=utf-8"
    );
    assert_eq!(resp.headers()["transfer-encoding"], "chunked");
    let (chunks, err) = read_chunks(resp).await;
    assert!(err.is_none());
    let events = parse_sse(&chunks.concat());

    assert!(
        events.iter().all(|e| e.event.is_none()),
        "OpenAI sends no event names"
    );
    assert_eq!(events.last().unwrap().data, "[DONE]");
    let chunks = openai_chunks(&events);
    assert_eq!(chunks.len(), 5, "role, 2 content, finish, usage");
    let id = chunks[0]["id"].clone();
    for c in &chunks {
        assert_eq!(c["object"], "chat.completion.chunk");
        assert_eq!(c["model"], "gpt-x");
        assert_eq!(c["id"], id, "one id per completion");
        assert!(c["created"].is_u64());
    }
    assert_eq!(
        chunks[0]["choices"][0],
        json!({"index": 0, "delta": {"role": "assistant", "content": ""},
               "logprobs": null, "finish_reason": null})
    );
    assert_eq!(openai_text(&events), "Hello");
    assert_eq!(chunks[3]["choices"][0]["delta"], json!({}));
    assert_eq!(chunks[3]["choices"][0]["finish_reason"], "stop");
    assert_eq!(
        chunks[3]["usage"],
        Value::Null,
        "usage is null before the last chunk"
    );
    assert!(chunks[3].as_object().unwrap().contains_key("usage"));
    assert_eq!(chunks[4]["choices"], json!([]));
    assert_eq!(
        chunks[4]["usage"],
        json!({"prompt_tokens": 14, "completion_tokens": 5, "total_tokens": 19,
               "prompt_tokens_details": {"cached_tokens": 4},
               "completion_tokens_details": {"reasoning_tokens": 0}})
    );
}

#[tokio::test]
async fn openai_without_include_usage_has_no_usage() {
    let mock = MockLlm::start_json(json!({"turns": [{"text": "x"}]}))
        .await
        .unwrap();
    let (_, events) = openai_stream(&mock.base_url(), false).await;
    let chunks = openai_chunks(&events);
    assert_eq!(chunks.len(), 3, "role, content, finish");
    assert!(chunks.iter().all(|c| c.get("usage").is_none()));
    assert_eq!(events.last().unwrap().data, "[DONE]");
}

#[tokio::test]
async fn openai_tool_calls_and_reasoning() {
    let mock = MockLlm::start_json(json!({"turns": [{
        "thinking": ["Let me ", "look"],
        "tool_calls": [
            {"id": "call_a", "name": "Read", "input": {"file_path": "a.txt"}},
            {"name": "Grep", "arguments_chunks": ["{\"p\":", "1}"]}
        ]
    }]}))
    .await
    .unwrap();
    // The path without /v1 is served too (some OpenAI-compatible base URLs include /v1).
    let (_, events) = stream_ok(
        &mock.base_url(),
        "/chat/completions",
        &openai_request("gpt-x", false),
    )
    .await;
    let chunks = openai_chunks(&events);
    assert_eq!(
        chunks[0]["choices"][0]["delta"],
        json!({"role": "assistant", "content": null}),
        "tool-only reply has null content"
    );
    let reasoning: String = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["reasoning_content"].as_str())
        .collect();
    assert_eq!(reasoning, "Let me look");

    let mut calls: Vec<(String, String, String)> = Vec::new();
    for c in &chunks {
        let Some(tcs) = c["choices"][0]["delta"]["tool_calls"].as_array() else {
            continue;
        };
        for tc in tcs {
            let i = tc["index"].as_u64().unwrap() as usize;
            if let Some(id) = tc["id"].as_str() {
                assert_eq!(i, calls.len(), "a new call starts with the next index");
                assert_eq!(tc["type"], "function");
                calls.push((
                    id.into(),
                    tc["function"]["name"].as_str().unwrap().into(),
                    String::new(),
                ));
            }
            calls[i]
                .2
                .push_str(tc["function"]["arguments"].as_str().unwrap());
        }
    }
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].0, "call_a");
    assert_eq!(calls[0].1, "Read");
    assert_eq!(
        serde_json::from_str::<Value>(&calls[0].2).unwrap(),
        json!({"file_path": "a.txt"})
    );
    assert_eq!(
        calls[1],
        ("call_mock_0_1".into(), "Grep".into(), r#"{"p":1}"#.into())
    );

    let finish: Vec<&str> = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["finish_reason"].as_str())
        .collect();
    assert_eq!(finish, ["tool_calls"]);
    assert_eq!(events.last().unwrap().data, "[DONE]");
}

#[tokio::test]
async fn stop_reasons_translate_between_dialects() {
    let mock = MockLlm::start_json(json!({"repeat": true, "turns": [
        {"text": "x", "stop_reason": "max_tokens"}
    ]}))
    .await
    .unwrap();
    let (_, events) = anthropic_stream(&mock.base_url()).await;
    let delta = events
        .iter()
        .find(|e| e.event.as_deref() == Some("message_delta"))
        .unwrap();
    assert_eq!(delta.json()["delta"]["stop_reason"], "max_tokens");
    let (_, events) = openai_stream(&mock.base_url(), false).await;
    let finish: Vec<String> = openai_chunks(&events)
        .iter()
        .filter_map(|c| c["choices"][0]["finish_reason"].as_str().map(String::from))
        .collect();
    assert_eq!(finish, ["length"]);
}

#[tokio::test]
async fn repeat_chunks_make_long_outputs() {
    let mock = MockLlm::start_json(json!({"turns": [
        {"text": {"repeat": "tok ", "count": 1000}}
    ]}))
    .await
    .unwrap();
    let (_, events) = anthropic_stream(&mock.base_url()).await;
    let deltas = events
        .iter()
        .filter(|e| e.event.as_deref() == Some("content_block_delta"))
        .count();
    assert_eq!(deltas, 1000);
    assert_eq!(anthropic_text(&events), "tok ".repeat(1000));
}

#[tokio::test]
async fn the_same_script_serves_both_endpoints_in_turn_order() {
    let mock = MockLlm::start_json(json!({"turns": [{"text": "first"}, {"text": "second"}]}))
        .await
        .unwrap();
    let (_, a) = openai_stream(&mock.base_url(), false).await;
    let (_, b) = anthropic_stream(&mock.base_url()).await;
    assert_eq!(openai_text(&a), "first");
    assert_eq!(anthropic_text(&b), "second");
}
