//! Shared helpers for the mock-llm integration tests: a spec-following SSE parser (so the tests
//! check the wire bytes the way a real client would) and small HTTP helpers over reqwest.

#![allow(dead_code)] // each test binary uses a different subset

use bytes::Bytes;
use serde_json::{json, Value};

/// One dispatched SSE event.
#[derive(Debug, Clone, PartialEq)]
pub struct SseEvent {
    pub event: Option<String>,
    pub data: String,
}

impl SseEvent {
    /// The data parsed as JSON (panics with the data if it is not: test helper only).
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.data)
            .unwrap_or_else(|e| panic!("event data is not JSON ({e}): {:?}", self.data))
    }
}

/// Incremental SSE parser following the WHATWG rules: lines end in CRLF, LF or CR; `:` starts a
/// comment; one space after the field colon is dropped; `data` lines join with `\n`; a blank
/// line dispatches (only if there was data).
#[derive(Default)]
pub struct SseParser {
    pending: Vec<u8>,
    event: Option<String>,
    data: Vec<String>,
    has_data: bool,
}

impl SseParser {
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<SseEvent> {
        self.pending.extend_from_slice(bytes);
        let mut out = Vec::new();
        let mut start = 0;
        let mut i = 0;
        while i < self.pending.len() {
            let b = self.pending[i];
            if b == b'\n' || b == b'\r' {
                // A CR at the very end might be the first half of CRLF: wait for more bytes.
                if b == b'\r' && i + 1 == self.pending.len() {
                    break;
                }
                let line = String::from_utf8_lossy(&self.pending[start..i]).into_owned();
                let next = if b == b'\r' && self.pending.get(i + 1) == Some(&b'\n') {
                    i + 2
                } else {
                    i + 1
                };
                self.line(&line, &mut out);
                start = next;
                i = next;
            } else {
                i += 1;
            }
        }
        self.pending.drain(..start);
        out
    }

    fn line(&mut self, line: &str, out: &mut Vec<SseEvent>) {
        if line.is_empty() {
            if self.has_data {
                out.push(SseEvent {
                    event: self.event.take(),
                    data: self.data.join("\n"),
                });
            }
            self.event = None;
            self.data.clear();
            self.has_data = false;
            return;
        }
        if line.starts_with(':') {
            return;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "event" => self.event = Some(value.to_owned()),
            "data" => {
                self.data.push(value.to_owned());
                self.has_data = true;
            }
            _ => {}
        }
    }

    /// Bytes received after the last complete line (non-empty means a cut-off stream).
    pub fn leftover(&self) -> &[u8] {
        &self.pending
    }
}

/// Parses a whole body.
pub fn parse_sse(bytes: &[u8]) -> Vec<SseEvent> {
    let mut p = SseParser::default();
    let events = p.feed(bytes);
    assert!(
        p.leftover().is_empty() && p.data.is_empty(),
        "stream ended inside an event: {:?}",
        String::from_utf8_lossy(p.leftover())
    );
    events
}

pub fn anthropic_request(model: &str) -> Value {
    json!({
        "model": model,
        "max_tokens": 1024,
        "stream": true,
        "messages": [{"role": "user", "content": "hi"}],
    })
}

pub fn openai_request(model: &str, include_usage: bool) -> Value {
    let mut body = json!({
        "model": model,
        "stream": true,
        "messages": [{"role": "user", "content": "hi"}],
    });
    if include_usage {
        body["stream_options"] = json!({"include_usage": true});
    }
    body
}

pub async fn post(base: &str, path: &str, body: &Value) -> reqwest::Response {
    reqwest::Client::new()
        .post(format!("{base}{path}"))
        .json(body)
        .send()
        .await
        .expect("request failed")
}

/// Reads a body chunk by chunk; returns the chunks and the transport error that ended it, if any.
pub async fn read_chunks(mut resp: reqwest::Response) -> (Vec<Bytes>, Option<reqwest::Error>) {
    let mut chunks = Vec::new();
    loop {
        match resp.chunk().await {
            Ok(Some(c)) => chunks.push(c),
            Ok(None) => return (chunks, None),
            Err(e) => return (chunks, Some(e)),
        }
    }
}

/// Posts, checks for a 200 SSE response that ends cleanly, and returns the raw body and events.
pub async fn stream_ok(base: &str, path: &str, body: &Value) -> (Vec<u8>, Vec<SseEvent>) {
    let resp = post(base, path, body).await;
    assert_eq!(resp.status(), 200);
    let ct = resp.headers()["content-type"].to_str().unwrap().to_owned();
    assert!(ct.starts_with("text/event-stream"), "content-type {ct}");
    let (chunks, err) = read_chunks(resp).await;
    assert!(err.is_none(), "stream ended with an error: {err:?}");
    let raw = chunks.concat();
    let events = parse_sse(&raw);
    (raw, events)
}

pub async fn anthropic_stream(base: &str) -> (Vec<u8>, Vec<SseEvent>) {
    stream_ok(base, "/v1/messages", &anthropic_request("claude-test")).await
}

pub async fn openai_stream(base: &str, include_usage: bool) -> (Vec<u8>, Vec<SseEvent>) {
    stream_ok(
        base,
        "/v1/chat/completions",
        &openai_request("gpt-test", include_usage),
    )
    .await
}

/// The `event:` names, in order.
pub fn names(events: &[SseEvent]) -> Vec<String> {
    events
        .iter()
        .map(|e| e.event.clone().unwrap_or_default())
        .collect()
}

/// Concatenated text of Anthropic `text_delta`s.
pub fn anthropic_text(events: &[SseEvent]) -> String {
    anthropic_deltas(events, "text_delta", "text")
}

/// Concatenated `field` of Anthropic deltas of `kind`.
pub fn anthropic_deltas(events: &[SseEvent], kind: &str, field: &str) -> String {
    events
        .iter()
        .filter(|e| e.event.as_deref() == Some("content_block_delta"))
        .map(|e| e.json())
        .filter(|v| v["delta"]["type"] == kind)
        .map(|v| v["delta"][field].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// OpenAI chunks as JSON (everything but `[DONE]`).
pub fn openai_chunks(events: &[SseEvent]) -> Vec<Value> {
    events
        .iter()
        .filter(|e| e.data != "[DONE]")
        .map(SseEvent::json)
        .collect()
}

/// Concatenated `delta.content` of OpenAI chunks.
pub fn openai_text(events: &[SseEvent]) -> String {
    openai_chunks(events)
        .iter()
        .filter_map(|c| {
            c["choices"][0]["delta"]["content"]
                .as_str()
                .map(str::to_owned)
        })
        .collect()
}

/// Events with per-request fields (ids, timestamps) blanked, to compare two streams.
pub fn normalized(events: &[SseEvent]) -> Vec<(Option<String>, Value)> {
    events
        .iter()
        .map(|e| {
            let mut v = serde_json::from_str(&e.data).unwrap_or(Value::String(e.data.clone()));
            if let Some(obj) = v.as_object_mut() {
                obj.remove("created");
                if obj.get("object") == Some(&json!("chat.completion.chunk")) {
                    obj.remove("id");
                }
                if let Some(m) = obj.get_mut("message").and_then(Value::as_object_mut) {
                    m.remove("id");
                }
            }
            (e.event.clone(), v)
        })
        .collect()
}
