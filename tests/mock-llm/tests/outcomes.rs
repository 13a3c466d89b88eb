//! The wire shapes behind the outcome and fidelity cases: refusals, stop details, server-tool
//! blocks, content parts, content inside `message_start`, spliced streams, a missing `[DONE]`,
//! raw bodies, and the prompt-cache simulation.

mod common;

use common::*;
use mock_llm::MockLlm;
use serde_json::{json, Value};

async fn mock(script: Value) -> MockLlm {
    MockLlm::start_json(script).await.unwrap()
}

#[tokio::test]
async fn anthropic_refusal_has_its_stop_reason_and_details() {
    let details = json!({"type": "refusal", "category": "cyber", "explanation": "Policy."});
    let mock =
        mock(json!({"turns": [{"refusal": ["I can", "not help."], "stop_details": details}]}))
            .await;
    let (_, events) = anthropic_stream(&mock.base_url()).await;
    assert_eq!(anthropic_text(&events), "I cannot help.");
    let delta = events
        .iter()
        .find(|e| e.event.as_deref() == Some("message_delta"))
        .unwrap()
        .json();
    assert_eq!(delta["delta"]["stop_reason"], "refusal");
    assert_eq!(delta["delta"]["stop_details"], details);
}

#[tokio::test]
async fn openai_refusal_streams_refusal_deltas() {
    let mock = mock(json!({"turns": [{"refusal": ["I'm sorry", ", no."]}]})).await;
    let (_, events) = openai_stream(&mock.base_url(), false).await;
    let chunks = openai_chunks(&events);
    assert_eq!(chunks[0]["choices"][0]["delta"]["refusal"], Value::Null);
    let refusal: String = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["refusal"].as_str())
        .collect();
    assert_eq!(refusal, "I'm sorry, no.");
    let last = chunks.last().unwrap();
    assert_eq!(last["choices"][0]["finish_reason"], "stop");
}

#[tokio::test]
async fn max_tokens_and_length_stops() {
    let mock =
        mock(json!({"repeat": true, "turns": [{"text": "cut", "stop_reason": "max_tokens"}]}))
            .await;
    let (_, events) = anthropic_stream(&mock.base_url()).await;
    let delta = events
        .iter()
        .find(|e| e.event.as_deref() == Some("message_delta"))
        .unwrap()
        .json();
    assert_eq!(delta["delta"]["stop_reason"], "max_tokens");
    let (_, events) = openai_stream(&mock.base_url(), false).await;
    assert_eq!(
        openai_chunks(&events).last().unwrap()["choices"][0]["finish_reason"],
        "length"
    );
}

#[tokio::test]
async fn openai_content_parts() {
    let mock = mock(
        json!({"turns": [{"thinking": "hmm", "text": ["Bon", "jour"], "content_parts": true}]}),
    )
    .await;
    let (_, events) = openai_stream(&mock.base_url(), false).await;
    let chunks = openai_chunks(&events);
    let contents: Vec<Value> = chunks
        .iter()
        .map(|c| c["choices"][0]["delta"]["content"].clone())
        .filter(|c| c.as_array().is_some_and(|a| !a.is_empty()))
        .collect();
    assert_eq!(
        contents,
        [
            json!([{"type": "thinking", "thinking": [{"type": "text", "text": "hmm"}]}]),
            json!([{"type": "text", "text": "Bon"}]),
            json!([{"type": "text", "text": "jour"}]),
        ]
    );
}

#[tokio::test]
async fn anthropic_content_in_message_start() {
    let mock = mock(json!({"turns": [{
        "text": "Reading.", "content_in_start": true,
        "tool_calls": [{"id": "t1", "name": "Read", "input": {"file_path": "a"}}]
    }]}))
    .await;
    let (_, events) = anthropic_stream(&mock.base_url()).await;
    assert_eq!(
        names(&events),
        ["message_start", "ping", "message_delta", "message_stop"]
    );
    assert_eq!(
        events[0].json()["message"]["content"],
        json!([
            {"type": "text", "text": "Reading."},
            {"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "a"}}
        ])
    );
}

#[tokio::test]
async fn anthropic_server_blocks_come_whole_before_the_text() {
    let search = json!({"type": "server_tool_use", "id": "srv_1", "name": "web_search", "input": {"query": "x"}});
    let result = json!({"type": "web_search_tool_result", "tool_use_id": "srv_1", "content": []});
    let mock = mock(json!({"turns": [{"server_blocks": [search, result]}]})).await;
    let (_, events) = anthropic_stream(&mock.base_url()).await;
    let starts: Vec<Value> = events
        .iter()
        .filter(|e| e.event.as_deref() == Some("content_block_start"))
        .map(|e| e.json()["content_block"].clone())
        .collect();
    assert_eq!(starts, [search, result]);
}

#[tokio::test]
async fn anthropic_content_blocks_stream_a_search_its_results_and_cited_text_in_order() {
    let search = json!({"type": "server_tool_use", "id": "srv_1", "name": "web_search", "input": {"query": "rust é"}});
    let result = json!({"type": "web_search_tool_result", "tool_use_id": "srv_1",
        "content": [{"type": "web_search_result", "url": "https://a.example", "title": "A", "encrypted_content": "e1"}]});
    let citation = json!({"type": "web_search_result_location", "url": "https://a.example",
        "title": "A", "encrypted_index": "i1", "cited_text": "Rust is fast."});
    let cited = json!({"type": "text", "text": "Rust is fast.", "citations": [citation]});
    let mock = mock(json!({"turns": [{
        "content_blocks": [{"type": "text", "text": "Let me look."}, search, result, cited],
        "stop_reason": "pause_turn"
    }]}))
    .await;
    let (_, events) = anthropic_stream(&mock.base_url()).await;
    let lines: Vec<String> = events
        .iter()
        .filter_map(|e| {
            let json = e.json();
            match e.event.as_deref()? {
                "content_block_start" => Some(format!(
                    "start {} {}",
                    json["index"], json["content_block"]["type"]
                )),
                "content_block_delta" => {
                    Some(format!("delta {} {}", json["index"], json["delta"]["type"]))
                }
                _ => None,
            }
        })
        .collect();
    assert_eq!(
        lines,
        [
            "start 0 \"text\"",
            "delta 0 \"text_delta\"",
            "start 1 \"server_tool_use\"",
            "delta 1 \"input_json_delta\"",
            "delta 1 \"input_json_delta\"",
            "start 2 \"web_search_tool_result\"",
            "start 3 \"text\"",
            "delta 3 \"citations_delta\"",
            "delta 3 \"text_delta\"",
        ]
    );
    let block = |index: usize| {
        events
            .iter()
            .map(|e| e.json())
            .filter(|j| j["index"] == index)
            .collect::<Vec<Value>>()
    };
    // The call starts with an empty input; its input streams as JSON text.
    assert_eq!(block(1)[0]["content_block"]["input"], json!({}));
    let input: String = block(1)
        .iter()
        .filter_map(|j| j["delta"]["partial_json"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(
        serde_json::from_str::<Value>(&input).unwrap(),
        search["input"]
    );
    assert_eq!(block(2)[0]["content_block"], result);
    assert_eq!(block(3)[1]["delta"]["citation"], citation);
    assert_eq!(block(3)[2]["delta"]["text"], "Rust is fast.");
    let delta = events
        .iter()
        .find(|e| e.event.as_deref() == Some("message_delta"))
        .unwrap()
        .json();
    assert_eq!(delta["delta"]["stop_reason"], "pause_turn");
}

#[tokio::test]
async fn content_blocks_need_a_type() {
    let error = MockLlm::start_json(json!({"turns": [{"content_blocks": [{"text": "x"}]}]}))
        .await
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(error.contains("content_blocks[0]"), "{error}");
}

#[tokio::test]
async fn splice_restarts_the_turn_mid_stream() {
    let mock =
        mock(json!({"turns": [{"text": "abc", "fault": {"kind": "splice", "after_events": 3}}]}))
            .await;
    let (_, events) = anthropic_stream(&mock.base_url()).await;
    let starts = names(&events)
        .iter()
        .filter(|n| *n == "message_start")
        .count();
    assert_eq!(starts, 2);
    assert_eq!(names(&events)[3], "message_start");
    assert_eq!(
        names(&events).last().map(String::as_str),
        Some("message_stop")
    );
}

#[tokio::test]
async fn no_done_drops_only_the_openai_terminator() {
    let mock =
        mock(json!({"repeat": true, "turns": [{"text": "done", "fault": {"kind": "no_done"}}]}))
            .await;
    let (raw, events) = openai_stream(&mock.base_url(), true).await;
    assert!(!String::from_utf8_lossy(&raw).contains("[DONE]"));
    let chunks = openai_chunks(&events);
    assert!(chunks
        .iter()
        .any(|c| c["choices"][0]["finish_reason"] == "stop"));
    assert!(
        chunks.last().unwrap()["usage"].is_object(),
        "usage chunk kept"
    );
    let (_, events) = anthropic_stream(&mock.base_url()).await;
    assert_eq!(
        names(&events).last().map(String::as_str),
        Some("message_stop")
    );
}

#[tokio::test]
async fn raw_body_is_sent_verbatim_in_pieces() {
    let body = "data: {\"x\":1}\n\ndata: [DONE]\n\n";
    let mock = mock(json!({"turns": [{"raw_body": body, "split_bytes": 3}]})).await;
    let resp = post(
        &mock.base_url(),
        "/v1/chat/completions",
        &openai_request("m", false),
    )
    .await;
    let (chunks, err) = read_chunks(resp).await;
    assert!(err.is_none());
    assert!(chunks.iter().all(|c| c.len() <= 3));
    assert_eq!(chunks.concat(), body.as_bytes());
    let error = MockLlm::start_json(json!({"turns": [{"raw_body": "x", "text": "y"}]}))
        .await
        .err()
        .unwrap();
    assert!(error.to_string().contains("raw_body"), "{error}");
}

fn usage_of(events: &[SseEvent]) -> Value {
    events[0].json()["message"]["usage"].clone()
}

#[tokio::test]
async fn prompt_cache_accounting_follows_the_breakpoints() {
    let mock = mock(json!({
        "repeat": true,
        "prompt_cache": {"chars_per_token": 1},
        "turns": [{"text": "ok"}]
    }))
    .await;
    let marker = json!({"type": "ephemeral"});
    let first = json!({
        "model": "m", "max_tokens": 10, "stream": true,
        "system": [{"type": "text", "text": "You are terse.", "cache_control": marker}],
        "messages": [{"role": "user", "content": [{"type": "text", "text": "one", "cache_control": marker}]}]
    });
    let (_, events) = stream_ok(&mock.base_url(), "/v1/messages", &first).await;
    let one = usage_of(&events);
    assert_eq!(one["cache_read_input_tokens"], 0);
    let written = one["cache_creation_input_tokens"].as_u64().unwrap();
    assert!(written > 0);
    assert_eq!(one["input_tokens"], 0);

    let second = json!({
        "model": "m", "max_tokens": 10, "stream": true,
        "system": [{"type": "text", "text": "You are terse.", "cache_control": marker}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "one", "cache_control": marker}]},
            {"role": "assistant", "content": [{"type": "text", "text": "ok"}]},
            {"role": "user", "content": [{"type": "text", "text": "two", "cache_control": marker}]}
        ]
    });
    let (_, events) = stream_ok(&mock.base_url(), "/v1/messages", &second).await;
    let two = usage_of(&events);
    assert_eq!(two["cache_read_input_tokens"].as_u64(), Some(written));
    assert!(two["cache_creation_input_tokens"].as_u64().unwrap() > 0);

    // The same request without breakpoints pays for everything.
    let mut plain = second.clone();
    plain["system"] = json!("You are terse.");
    for message in plain["messages"].as_array_mut().unwrap() {
        for block in message["content"].as_array_mut().unwrap() {
            block.as_object_mut().unwrap().remove("cache_control");
        }
    }
    let (_, events) = stream_ok(&mock.base_url(), "/v1/messages", &plain).await;
    let three = usage_of(&events);
    assert_eq!(three["cache_read_input_tokens"], 0);
    assert_eq!(three["cache_creation_input_tokens"], 0);
    assert!(three["input_tokens"].as_u64().unwrap() > 0);
}
