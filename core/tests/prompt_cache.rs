//! Anthropic prompt caching and OpenAI prefix stability over a 20-request agent session against
//! mock-llm (which records every request and simulates each provider's prompt cache): the
//! breakpoints sit on the tools, the system prompt and the moving end of the conversation, never
//! more than the API's four; every request starts with the previous one byte for byte; each
//! request reads the whole previous request from the cache; turning caching off sends no
//! `cache_control`; the one-hour TTL marks every breakpoint and sends its beta header.

mod prompt_cache_common;

use prompt_cache_common::{run_session, total_input, Request, Wire, PROMPTS};
use robota::provider::CacheTtl;
use serde_json::{json, Value};

/// `body` without any `cache_control` (and with a plain-string system prompt), as the provider
/// sees the content.
fn without_markers(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(key, _)| key.as_str() != "cache_control")
                .map(|(key, value)| (key.clone(), without_markers(value)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_markers).collect()),
        other => other.clone(),
    }
}

/// Where the `cache_control` markers of a body are: `tools[i]`, `system[i]`, `messages[m][b]`.
fn markers(body: &Value) -> Vec<(String, Value)> {
    let mut found = Vec::new();
    for (i, tool) in body["tools"].as_array().into_iter().flatten().enumerate() {
        if !tool["cache_control"].is_null() {
            found.push((format!("tools[{i}]"), tool["cache_control"].clone()));
        }
    }
    for (i, block) in body["system"].as_array().into_iter().flatten().enumerate() {
        if !block["cache_control"].is_null() {
            found.push((format!("system[{i}]"), block["cache_control"].clone()));
        }
    }
    for (m, message) in body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        for (b, block) in message["content"]
            .as_array()
            .into_iter()
            .flatten()
            .enumerate()
        {
            if !block["cache_control"].is_null() {
                found.push((
                    format!("messages[{m}][{b}]"),
                    block["cache_control"].clone(),
                ));
            }
        }
    }
    found
}

/// Each request's messages start with every message of the request before, unchanged.
fn assert_prefix_stable(requests: &[Request]) {
    for (n, pair) in requests.windows(2).enumerate() {
        let (before, after) = (
            without_markers(&pair[0].body),
            without_markers(&pair[1].body),
        );
        assert_eq!(
            before["tools"],
            after["tools"],
            "tools of request {}",
            n + 1
        );
        assert_eq!(
            before["system"],
            after["system"],
            "system of request {}",
            n + 1
        );
        let before = before["messages"].as_array().cloned().unwrap_or_default();
        let after = after["messages"].as_array().cloned().unwrap_or_default();
        assert!(after.len() > before.len(), "request {} grew", n + 1);
        assert_eq!(
            before[..],
            after[..before.len()],
            "request {} starts with request {}",
            n + 1,
            n
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_twenty_request_session_marks_the_moving_prefix_and_reads_it_back() {
    let requests = run_session(Wire::Anthropic(Some(CacheTtl::FiveMinutes))).await;
    assert_eq!(requests.len(), 2 * PROMPTS);
    let ephemeral = json!({"type": "ephemeral"});
    for (n, request) in requests.iter().enumerate() {
        let body = &request.body;
        let found = markers(body);
        assert!(found.len() <= 4, "request {n}: {found:?}");
        let places: Vec<&str> = found.iter().map(|(place, _)| place.as_str()).collect();
        let last_tool = body["tools"].as_array().map_or(0, Vec::len) - 1;
        assert_eq!(places[0], format!("tools[{last_tool}]"), "request {n}");
        assert_eq!(places[1], "system[0]", "request {n}");
        // The moving breakpoint: the last block of the last message.
        let messages = body["messages"].as_array().expect("messages");
        let last = messages.len() - 1;
        let last_block = messages[last]["content"].as_array().map_or(0, Vec::len) - 1;
        assert_eq!(
            *places.last().expect("a message breakpoint"),
            format!("messages[{last}][{last_block}]"),
            "request {n}"
        );
        if n > 0 {
            // Where the previous request ended (its last user message) is marked too, so the
            // read does not depend on the API's 20-block lookback.
            let previous_end = requests[n - 1].body["messages"]
                .as_array()
                .map_or(0, Vec::len)
                - 1;
            assert!(
                places
                    .iter()
                    .any(|p| p.starts_with(&format!("messages[{previous_end}]"))),
                "request {n}: {places:?}"
            );
        }
        assert!(
            found.iter().all(|(_, marker)| *marker == ephemeral),
            "{found:?}"
        );
    }
    assert_prefix_stable(&requests);

    // The cache: the first request writes everything; each later one reads all of the
    // previous request back and pays full price for nothing before its last breakpoint.
    let first = &requests[0].usage;
    assert_eq!(first.cache_read_input_tokens, 0);
    assert!(first.cache_creation_input_tokens >= 1024, "{first:?}");
    for n in 1..requests.len() {
        let usage = &requests[n].usage;
        assert_eq!(
            usage.cache_read_input_tokens,
            total_input(&requests[n - 1].usage),
            "request {n} reads the previous request: {usage:?}"
        );
        assert_eq!(usage.input_tokens, 0, "request {n}: {usage:?}");
        assert!(
            usage.cache_creation_input_tokens > 0,
            "request {n}: {usage:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn caching_off_sends_no_cache_control_and_pays_full_price() {
    let requests = run_session(Wire::Anthropic(None)).await;
    for (n, request) in requests.iter().enumerate() {
        assert!(
            !request.body.to_string().contains("cache_control"),
            "request {n}"
        );
        assert!(request.body["system"].is_string(), "request {n}");
        assert_eq!(request.beta, None);
        assert_eq!(request.usage.cache_read_input_tokens, 0, "request {n}");
        assert_eq!(request.usage.cache_creation_input_tokens, 0, "request {n}");
    }
    assert_prefix_stable(&requests);
    // Each request pays for everything it sends: more than the one before.
    for pair in requests.windows(2) {
        assert!(pair[1].usage.input_tokens > pair[0].usage.input_tokens);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_one_hour_ttl_marks_every_breakpoint() {
    let requests = run_session(Wire::Anthropic(Some(CacheTtl::OneHour))).await;
    for request in &requests {
        assert_eq!(
            request.beta.as_deref(),
            Some("extended-cache-ttl-2025-04-11")
        );
        let found = markers(&request.body);
        assert!((3..=4).contains(&found.len()), "{found:?}");
        for (_, marker) in found {
            assert_eq!(marker, json!({"type": "ephemeral", "ttl": "1h"}));
        }
    }
    assert!(requests[5].usage.cache_read_input_tokens > 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openai_requests_keep_the_prefix_byte_stable_and_report_cached_tokens() {
    let requests = run_session(Wire::OpenAi).await;
    assert!(!requests[0].body.to_string().contains("cache_control"));
    assert_prefix_stable(&requests);
    for n in 1..requests.len() {
        assert_eq!(
            requests[n].usage.cache_read_input_tokens,
            total_input(&requests[n - 1].usage),
            "request {n}: {:?}",
            requests[n].usage
        );
    }
}
