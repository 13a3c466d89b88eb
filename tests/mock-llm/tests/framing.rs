//! SSE framing variations: every option changes the bytes on the wire but not the logical
//! events a conforming parser sees.

mod common;

use common::*;
use mock_llm::MockLlm;
use serde_json::{json, Value};

/// A turn exercising every block kind, with `extra` fields merged in.
fn turn(extra: Value) -> Value {
    let mut t = json!({
        "thinking": ["Let me ", "think"],
        "text": ["Hel", "lo, ", "wörld ✓"],
        "tool_calls": [{"id": "toolu_1", "name": "Read", "input": {"file_path": "a b.txt"}}],
        "usage": {"input_tokens": 3, "output_tokens": 4}
    });
    if let (Some(t), Some(extra)) = (t.as_object_mut(), extra.as_object()) {
        t.extend(extra.clone());
    }
    t
}

fn variants() -> Vec<(&'static str, Value)> {
    vec![
        ("split_bytes", json!({"split_bytes": 7})),
        ("split_bytes_1", json!({"split_bytes": 1})),
        ("crlf", json!({"sse": {"crlf": true}})),
        ("comments", json!({"sse": {"comments": true}})),
        ("multiline_data", json!({"sse": {"multiline_data": true}})),
        ("no_space", json!({"sse": {"no_space": true}})),
        ("chunk_delay", json!({"chunk_delay_ms": 1})),
        (
            "everything",
            json!({"split_bytes": 5, "chunk_delay_ms": 1,
                   "sse": {"crlf": true, "comments": true, "multiline_data": true, "no_space": true}}),
        ),
    ]
}

async fn check_variants(path: &str, request: Value) {
    let mut turns = vec![turn(json!({}))];
    turns.extend(variants().into_iter().map(|(_, v)| turn(v)));
    let mock = MockLlm::start_json(json!({ "turns": turns }))
        .await
        .unwrap();
    let (plain_raw, plain) = stream_ok(&mock.base_url(), path, &request).await;
    let reference = normalized(&plain);
    assert!(reference.len() > 10);

    for (name, v) in variants() {
        let resp = post(&mock.base_url(), path, &request).await;
        assert_eq!(resp.status(), 200, "{name}");
        let (chunks, err) = read_chunks(resp).await;
        assert!(err.is_none(), "{name}: {err:?}");
        let raw = chunks.concat();
        assert_ne!(raw, plain_raw, "{name} must change the bytes");

        // Parse incrementally, chunk by chunk as received, like a client would.
        let mut parser = SseParser::default();
        let events: Vec<SseEvent> = chunks.iter().flat_map(|c| parser.feed(c)).collect();
        assert!(parser.leftover().is_empty(), "{name}: trailing bytes");
        assert_eq!(
            normalized(&events),
            reference,
            "{name}: logical events differ"
        );

        if let Some(split) = v["split_bytes"].as_u64() {
            let split = split as usize;
            assert!(
                chunks.iter().all(|c| c.len() <= split),
                "{name}: a received chunk is larger than split_bytes"
            );
            assert!(chunks.len() >= raw.len() / split, "{name}: too few chunks");
        }
        let text = String::from_utf8_lossy(&raw);
        match name {
            "crlf" => {
                assert!(text.contains("\r\n"));
                assert_eq!(text.matches('\n').count(), text.matches("\r\n").count());
            }
            "comments" => assert!(text.lines().any(|l| l.starts_with(": "))),
            "multiline_data" => assert!(text.contains("data: {\n")),
            "no_space" => {
                assert!(text.contains("data:{"));
                assert!(!text.contains("data: "));
            }
            _ => {}
        }
    }
}

#[tokio::test]
async fn anthropic_framing_variants_parse_to_the_same_events() {
    check_variants("/v1/messages", anthropic_request("claude-x")).await;
}

#[tokio::test]
async fn openai_framing_variants_parse_to_the_same_events() {
    check_variants("/v1/chat/completions", openai_request("gpt-x", true)).await;
}

#[tokio::test]
async fn split_bytes_cuts_across_event_boundaries() {
    let mock = MockLlm::start_json(json!({"turns": [{"text": ["a", "b"], "split_bytes": 10}]}))
        .await
        .unwrap();
    let resp = post(&mock.base_url(), "/v1/messages", &anthropic_request("m")).await;
    let (chunks, err) = read_chunks(resp).await;
    assert!(err.is_none());
    // Some chunk holds the end of one event and the start of the next.
    assert!(
        chunks.iter().any(|c| {
            let s = String::from_utf8_lossy(c);
            s.contains("\n\n") && !s.ends_with("\n\n")
        }),
        "no chunk straddles an event boundary"
    );
    let events = parse_sse(&chunks.concat());
    assert_eq!(anthropic_text(&events), "ab");
}
