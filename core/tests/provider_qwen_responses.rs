//! Qwen's built-in web tools (profile `options.builtInWebTools`) end to end against mock-llm's
//! DashScope Responses endpoint: the profile selects DashScope's Responses API at the same
//! host's Responses path, the request declares `web_search`/`web_extractor` in DashScope's
//! dialect (system prompt in `input`, `enable_thinking`, no `instructions`), the hosted calls
//! stream out as server-tool events, the history keeps them in the model's order, the next
//! turn's request leaves them (and the reasoning) out, failures are typed errors, and bad
//! profile values are refused with a message naming them.

mod provider_common;

use std::path::Path;
use std::sync::{Arc, Mutex};

use mock_llm::MockLlm;
use provider_common::{ask, run, selecting, server_tool_story};
use robota::engine::{Engine, EngineConfig, RunOptions, RunStopReason};
use robota::framework::assembly::provider::{provider_from_settings, BuiltProvider};
use robota::framework::config::ProviderProfile;
use robota::message::{ContentBlock, Conversation, Message, ProviderErrorKind, Role};
use robota::provider::{
    NativeWebTool, Provider, ProviderRequest, StreamEvent, ThinkingConfig, ToolDefinition,
};
use robota::tools::ToolRegistry;
use serde_json::{json, Value};

const DASHSCOPE_PATH: &str = "/api/v2/apps/protocols/compatible-mode/v1/responses";

async fn mock(script: Value) -> MockLlm {
    MockLlm::start_json(script).await.expect("mock-llm starts")
}

fn profile(base_url: Option<String>, options: Value) -> ProviderProfile {
    ProviderProfile {
        name: "qwen3-6-plus".into(),
        kind: "qwen".into(),
        model: Some("qwen3.6-plus".into()),
        api_key: Some("sk-test".into()),
        api_key_env: None,
        base_url,
        timeout_ms: None,
        options: Some(options),
    }
}

fn build(profile: ProviderProfile) -> Result<BuiltProvider, String> {
    provider_from_settings(&selecting(profile), Path::new("."), &|_| None)
        .map_err(|e| e.to_string())
}

/// The provider of a qwen profile whose `baseURL` is the mock's DashScope Chat Completions base
/// (`…/compatible-mode/v1`), as a Beijing or self-hosted profile would write it.
fn qwen(mock: &MockLlm, options: Value) -> Arc<dyn Provider> {
    let base = format!("{}/compatible-mode/v1", mock.base_url());
    match build(profile(Some(base), options)) {
        Ok(built) => built.provider,
        Err(error) => panic!("{error}"),
    }
}

fn web_tools() -> Value {
    json!({"maxRetries": 0, "builtInWebTools": {"webSearch": true, "webFetch": true}})
}

fn tool(name: &str) -> ToolDefinition {
    ToolDefinition {
        name: name.into(),
        description: format!("{name} tool"),
        input_schema: json!({"type": "object"}),
    }
}

/// A search, a page fetch, then the answer.
fn web_turn() -> Value {
    json!({
        "thinking": "I should look it up.",
        "hosted_items": [
            {"type": "web_search_call", "id": "ws_1",
             "action": {"type": "search", "query": "robota agent engine",
                        "sources": [{"type": "url", "url": "https://example.com/robota"}]}},
            {"type": "web_extractor_call", "id": "we_1",
             "goal": "Read https://example.com/robota for what robota is",
             "output": "robota is an agent engine written in Rust."},
        ],
        "text": ["robota is ", "an agent engine."],
        "usage": {"input_tokens": 40, "output_tokens": 9},
    })
}

#[tokio::test]
async fn the_request_speaks_dashscopes_dialect_and_declares_the_web_tools() {
    let mock = mock(json!({"repeat": true, "turns": [{"text": "ok"}]})).await;
    let provider = qwen(&mock, web_tools());
    assert_eq!(provider.name(), "qwen");
    let capabilities = provider.capabilities();
    assert_eq!(
        capabilities.native_web_tools.web_search,
        NativeWebTool::supported(true)
    );
    assert_eq!(
        capabilities.native_web_tools.web_fetch,
        NativeWebTool::supported(true)
    );
    assert!(capabilities.thinking);

    let request = ProviderRequest {
        system: Some("Be brief.".into()),
        messages: vec![Message::user("What is robota?").into()],
        tools: vec![tool("Read"), tool("WebSearch"), tool("WebFetch")],
        ..ProviderRequest::default()
    };
    let (result, _) = run(provider.as_ref(), &request).await;
    assert_eq!(result.expect("ok").text, "ok");
    let sent = &mock.requests()[0];
    assert_eq!(
        sent.path, DASHSCOPE_PATH,
        "the Responses path of the same host"
    );
    let body = &sent.body;
    assert_eq!(body["model"], "qwen3.6-plus");
    assert_eq!(body["stream"], true);
    for absent in [
        "instructions",
        "store",
        "include",
        "reasoning",
        "enable_search",
    ] {
        assert!(body.get(absent).is_none(), "{absent} sent: {body}");
    }
    // The system prompt is the first input message.
    assert_eq!(
        body["input"],
        json!([
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "What is robota?"},
        ])
    );
    // The hosted search replaces the local WebSearch; the local WebFetch (which reaches hosts
    // the hosted extractor cannot) stays.
    let tools: Vec<Value> = body["tools"].as_array().expect("tools").clone();
    let names: Vec<&str> = tools
        .iter()
        .map(|t| t["name"].as_str().or(t["type"].as_str()).unwrap_or(""))
        .collect();
    assert_eq!(
        names,
        ["Read", "WebFetch", "web_search", "web_extractor"],
        "{tools:?}"
    );
    assert_eq!(tools[2], json!({"type": "web_search"}));
    assert_eq!(tools[3], json!({"type": "web_extractor"}));
    // The extractor runs only in thinking mode.
    assert_eq!(body["enable_thinking"], true);

    // Search alone: thinking only when asked for.
    mock.reset();
    let search_only = qwen(&mock, json!({"builtInWebTools": {"webSearch": true}}));
    assert_eq!(
        search_only.capabilities().native_web_tools.web_fetch,
        NativeWebTool::supported(false)
    );
    let plain = ProviderRequest {
        messages: vec![Message::user("hi").into()],
        ..ProviderRequest::default()
    };
    run(search_only.as_ref(), &plain).await.0.expect("ok");
    let thinking = ProviderRequest {
        thinking: Some(ThinkingConfig {
            budget_tokens: 4_000,
        }),
        ..plain.clone()
    };
    run(search_only.as_ref(), &thinking).await.0.expect("ok");
    let requests = mock.requests();
    assert_eq!(requests[0].body["tools"], json!([{"type": "web_search"}]));
    assert!(requests[0].body.get("enable_thinking").is_none());
    assert_eq!(requests[1].body["enable_thinking"], true);
    assert!(requests[1].body.get("reasoning").is_none());
}

#[tokio::test]
async fn hosted_calls_stream_as_server_tool_events_and_stay_out_of_the_next_request() {
    let mock = mock(json!({"turns": [web_turn(), {"text": "You are welcome."}]})).await;
    let engine = Engine::new(
        qwen(&mock, web_tools()),
        ToolRegistry::new(),
        EngineConfig {
            system_prompt: Some("Be brief.".into()),
            ..EngineConfig::default()
        },
    );
    let events = Arc::new(Mutex::new(Vec::new()));
    let options = {
        let events = events.clone();
        RunOptions::new().with_on_event(move |event| events.lock().expect("lock").push(event))
    };
    let mut conversation = Conversation::new();
    let outcome = engine
        .run(&mut conversation, Message::user("What is robota?"), options)
        .await;
    assert_eq!(outcome.stop_reason, RunStopReason::Completed);
    assert_eq!(outcome.response, "robota is an agent engine.");

    // The calls are reported with what they were asked, then their results, before the text.
    let story = server_tool_story(&events.lock().expect("lock"));
    assert_eq!(
        story,
        [
            "server_tool_use ws_1 web_search {\"query\":\"robota agent engine\"}",
            "server_tool_result ws_1 web_search_call false",
            "server_tool_use we_1 web_extractor {\"goal\":\"Read https://example.com/robota for what robota is\"}",
            "server_tool_result we_1 web_extractor_call false",
            "text \"robota is \"",
            "text \"an agent engine.\"",
        ]
    );

    // The history keeps the items whole, before the text they led to.
    let assistant = conversation
        .messages()
        .find(|m| m.role == Role::Assistant)
        .expect("assistant message");
    let blocks = assistant.metadata["server_blocks"]
        .as_array()
        .expect("server blocks");
    assert_eq!(blocks.len(), 2);
    assert_eq!(blocks[0]["type"], "web_search_call");
    assert_eq!(
        blocks[0]["action"]["sources"][0]["url"],
        "https://example.com/robota"
    );
    assert_eq!(blocks[1]["type"], "web_extractor_call");
    assert_eq!(
        blocks[1]["output"],
        "robota is an agent engine written in Rust."
    );
    assert_eq!(assistant.metadata["server_block_positions"], json!([0, 0]));
    assert!(assistant
        .content
        .contains(&ContentBlock::text("robota is an agent engine.")));
    assert!(assistant.content.iter().any(|block| matches!(
        block,
        ContentBlock::Thinking {
            signature: None,
            ..
        }
    )));

    // The next turn sends the answer back, without the hosted items or the reasoning.
    ask(&engine, &mut conversation, "Thanks").await;
    let second = &mock.requests()[1];
    assert_eq!(second.path, DASHSCOPE_PATH);
    assert!(second.body.get("instructions").is_none());
    assert_eq!(
        second.body["input"],
        json!([
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "What is robota?"},
            {"role": "assistant", "content": "robota is an agent engine."},
            {"role": "user", "content": "Thanks"},
        ])
    );
}

#[tokio::test]
async fn failed_calls_and_provider_errors_are_reported() {
    let mock = mock(json!({"turns": [
        {"hosted_items": [{"type": "web_extractor_call", "id": "we_9", "status": "failed",
                           "goal": "Read https://unreachable.invalid"}],
         "text": "I could not read that page."},
        {"fault": {"kind": "status", "status": 401, "message": "Invalid API-key provided."}},
        {"text": "cut", "fault": {"kind": "stream_error", "after_events": 3,
                                    "error_type": "InternalError", "message": "upstream failed"}},
    ]}))
    .await;
    let provider = qwen(&mock, web_tools());
    let request = ProviderRequest {
        messages: vec![Message::user("read it").into()],
        ..ProviderRequest::default()
    };
    let (result, events) = run(provider.as_ref(), &request).await;
    let response = result.expect("a failed call is part of an answer");
    assert!(events.contains(&StreamEvent::ServerToolResult {
        tool_use_id: "we_9".into(),
        result_type: "web_extractor_call".into(),
        is_error: true,
    }));
    assert_eq!(response.server_blocks[0]["status"], "failed");

    let (result, _) = run(provider.as_ref(), &request).await;
    let error = result.expect_err("401");
    assert_eq!(error.kind, ProviderErrorKind::Auth);
    assert_eq!(error.provider, "qwen");

    let (result, _) = run(provider.as_ref(), &request).await;
    let error = result.expect_err("in-stream error");
    assert!(
        error.message.contains("upstream failed"),
        "{}",
        error.message
    );
}

#[test]
fn the_profile_selects_the_responses_path_and_refuses_bad_values() {
    // DashScope's default host (Singapore) and a Beijing Chat base both move to the Responses
    // path; without builtInWebTools the profile keeps Chat Completions.
    let built = build(profile(None, web_tools())).expect("default host");
    assert_eq!(
        built.base_url.as_deref(),
        Some("https://dashscope-intl.aliyuncs.com/api/v2/apps/protocols/compatible-mode/v1")
    );
    let beijing = Some("https://dashscope.aliyuncs.com/compatible-mode/v1".to_string());
    let built = build(profile(beijing.clone(), web_tools())).expect("beijing");
    assert_eq!(
        built.base_url.as_deref(),
        Some("https://dashscope.aliyuncs.com/api/v2/apps/protocols/compatible-mode/v1")
    );
    let chat = build(profile(beijing, json!({"webSearch": true}))).expect("chat");
    assert_eq!(
        chat.base_url.as_deref(),
        Some("https://dashscope.aliyuncs.com/compatible-mode/v1")
    );
    assert_eq!(
        chat.provider.capabilities().native_web_tools.web_search,
        NativeWebTool::supported(true)
    );
    let off = build(profile(
        None,
        json!({"builtInWebTools": {"webSearch": false, "webFetch": false}}),
    ))
    .expect("both off");
    assert_eq!(
        off.base_url.as_deref(),
        Some("https://dashscope-intl.aliyuncs.com/compatible-mode/v1")
    );
    // webFetch alone brings web search with it.
    let fetch_only = build(profile(
        None,
        json!({"builtInWebTools": {"webFetch": true}}),
    ))
    .expect("fetch alone");
    assert!(
        fetch_only
            .provider
            .capabilities()
            .native_web_tools
            .web_search
            .enabled
    );

    for (options, expected) in [
        (
            json!({"builtInWebTools": {"webSearch": true, "webBrowse": true}}),
            "`options.builtInWebTools` has no tool \"webBrowse\" (known: webSearch, webFetch)",
        ),
        (
            json!({"builtInWebTools": {"webSearch": "yes"}}),
            "`options.builtInWebTools.webSearch` must be true or false",
        ),
        (
            json!({"builtInWebTools": true}),
            "`options.builtInWebTools` must be an object",
        ),
        (
            json!({"builtInWebTools": {"webSearch": false, "webFetch": true}}),
            "webFetch needs webSearch",
        ),
        (
            json!({"webSearch": true, "builtInWebTools": {"webSearch": true}}),
            "cannot be used with `options.builtInWebTools`",
        ),
        (
            json!({"api": "chat", "builtInWebTools": {"webFetch": true}}),
            "`options.builtInWebTools` needs the Responses API",
        ),
    ] {
        let error = match build(profile(None, options.clone())) {
            Ok(_) => panic!("{options} was accepted"),
            Err(error) => error,
        };
        assert!(
            error.contains(expected) && error.contains("qwen3-6-plus"),
            "{options}: {error}"
        );
    }
}
