//! Anthropic server tools (web search, web fetch, code execution) end to end against mock-llm:
//! the request declares them (with their beta flags and the cache breakpoint on the last tool),
//! their calls and results stream out as events, the history keeps the blocks and the cited text
//! in the model's order and sends them back, a `pause_turn` continues, a session log records a
//! `server_tool` line, and a profile's `options.serverTools` is read (bad entries named).

mod provider_common;

use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mock_llm::MockLlm;
use provider_common::{ask, server_tool_story};
use robota::engine::{
    Engine, EngineConfig, ExecutionEvent, JsonlRecorder, RunOptions, RunStopReason,
};
use robota::framework::assembly::provider::provider_from_settings;
use robota::framework::config::{load_settings, SettingsOptions};
use robota::message::{ContentBlock, Conversation, Message, MessageState};
use robota::provider::anthropic::{ServerTool, ServerToolKind};
use robota::provider::{
    AnthropicConfig, AnthropicProvider, CacheTtl, CitedText, HttpOptions, Provider,
    ProviderRequest, StopReason, StreamEvent, ToolDefinition,
};
use robota::tools::ToolRegistry;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

const MODEL: &str = "claude-sonnet-4-5";

async fn mock(script: Value) -> MockLlm {
    MockLlm::start_json(script).await.expect("mock-llm starts")
}

fn provider(mock: &MockLlm, server_tools: Vec<ServerTool>) -> AnthropicProvider {
    AnthropicProvider::new(AnthropicConfig {
        api_key: Some("sk-ant-test".into()),
        base_url: Some(mock.base_url()),
        http: HttpOptions {
            idle_timeout: Duration::from_secs(10),
            max_retries: 0,
            ..HttpOptions::default()
        },
        server_tools,
        ..AnthropicConfig::new(MODEL)
    })
    .expect("provider")
}

fn web_search() -> ServerTool {
    ServerTool::new(ServerToolKind::WebSearch)
}

fn tool(name: &str) -> ToolDefinition {
    ToolDefinition {
        name: name.into(),
        description: format!("{name} tool"),
        input_schema: json!({"type": "object"}),
    }
}

fn request(messages: Vec<Message>, tools: Vec<ToolDefinition>) -> ProviderRequest {
    ProviderRequest {
        messages: messages.into_iter().map(Into::into).collect(),
        tools,
        ..ProviderRequest::default()
    }
}

fn search_call() -> Value {
    json!({"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search",
        "input": {"query": "rust release date"}})
}

fn search_result() -> Value {
    json!({"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": [
        {"type": "web_search_result", "url": "https://blog.rust-lang.org/", "title": "Rust Blog",
         "encrypted_content": "EncA", "page_age": "May 15, 2015"}
    ]})
}

fn citation() -> Value {
    json!({"type": "web_search_result_location", "url": "https://blog.rust-lang.org/",
        "title": "Rust Blog", "encrypted_index": "EncIdx", "cited_text": "Rust 1.0 is here."})
}

/// A web-search turn as the API streams it: text, the search, its results, the cited text.
fn search_turn(stop_reason: &str) -> Value {
    json!({
        "content_blocks": [
            {"type": "text", "text": "Let me search."},
            search_call(),
            search_result(),
            {"type": "text", "text": "Rust 1.0 came out in May 2015.", "citations": [citation()]},
        ],
        "stop_reason": stop_reason,
    })
}

/// What the model produced, as it must come back in the next request.
fn search_turn_on_the_wire() -> Vec<Value> {
    vec![
        json!({"type": "text", "text": "Let me search."}),
        search_call(),
        search_result(),
        json!({"type": "text", "text": "Rust 1.0 came out in May 2015.", "citations": [citation()]}),
    ]
}

async fn stream(
    provider: &AnthropicProvider,
    request: &ProviderRequest,
) -> (robota::provider::ProviderResponse, Vec<StreamEvent>) {
    let events = Mutex::new(Vec::new());
    let sink = |event: StreamEvent| events.lock().expect("lock").push(event);
    let response = provider
        .stream(request, &sink, &CancellationToken::new())
        .await
        .expect("success");
    (response, events.into_inner().expect("lock"))
}

#[tokio::test]
async fn the_request_declares_server_tools_after_the_function_tools_with_their_beta_flags() {
    let mock = mock(json!({"turns": [{"text": "ok"}]})).await;
    let search = ServerTool::from_setting(&json!({
        "name": "web_search", "maxUses": 3, "allowedDomains": ["rust-lang.org"],
        "userLocation": {"type": "approximate", "city": "Berlin", "country": "DE"}
    }))
    .expect("search entry");
    let tools = vec![
        search,
        ServerTool::new(ServerToolKind::WebFetch),
        ServerTool::new(ServerToolKind::CodeExecution),
    ];
    let provider = AnthropicProvider::new(AnthropicConfig {
        prompt_caching: Some(CacheTtl::OneHour),
        ..AnthropicConfig {
            api_key: Some("k".into()),
            base_url: Some(mock.base_url()),
            server_tools: tools,
            ..AnthropicConfig::new(MODEL)
        }
    })
    .expect("provider");
    let request = request(
        vec![Message::user("When did Rust 1.0 come out?")],
        vec![tool("Read"), tool("WebSearch")],
    );
    stream(&provider, &request).await;

    let sent = &mock.requests()[0];
    let marker = json!({"type": "ephemeral", "ttl": "1h"});
    assert_eq!(
        sent.body["tools"],
        json!([
            {"name": "Read", "description": "Read tool", "input_schema": {"type": "object"}},
            {"type": "web_search_20250305", "name": "web_search", "max_uses": 3,
             "allowed_domains": ["rust-lang.org"],
             "user_location": {"type": "approximate", "city": "Berlin", "country": "DE"}},
            {"type": "web_fetch_20250910", "name": "web_fetch"},
            // The cache breakpoint stays on the last tool, which covers them all.
            {"type": "code_execution_20250825", "name": "code_execution", "cache_control": marker},
        ]),
        "the local WebSearch is left out when native search is declared"
    );
    assert_eq!(
        sent.headers.get("anthropic-beta").map(String::as_str),
        Some("extended-cache-ttl-2025-04-11,web-fetch-2025-09-10,code-execution-2025-08-25")
    );
}

#[tokio::test]
async fn without_native_search_the_local_websearch_tool_is_offered_as_before() {
    let mock = mock(json!({"repeat": true, "turns": [{"text": "ok"}]})).await;
    let plain = provider(&mock, Vec::new());
    let tools = vec![tool("Read"), tool("WebSearch")];
    stream(&plain, &request(vec![Message::user("hi")], tools.clone())).await;
    let sent = &mock.requests()[0];
    let names: Vec<&str> = sent.body["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(names, ["Read", "WebSearch"]);
    assert!(!sent.headers.contains_key("anthropic-beta"), "no beta flag");

    // A conversation that already called the local tool keeps it even with native search: the
    // history's tool_use must keep its definition.
    let native = provider(&mock, vec![web_search()]);
    let history = vec![
        Message::user("search"),
        Message::assistant(
            vec![ContentBlock::ToolUse {
                id: "toolu_1".into(),
                name: "WebSearch".into(),
                input: json!({"query": "q"}),
            }],
            MessageState::Complete,
        ),
        Message::tool_result("toolu_1", "results", false),
    ];
    stream(&native, &request(history, tools)).await;
    let names: Vec<String> = mock.requests()[1].body["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(names, ["Read", "WebSearch", "web_search"]);
    // Web search is generally available: no beta flag.
    assert!(!mock.requests()[1].headers.contains_key("anthropic-beta"));
}

#[tokio::test]
async fn server_tool_events_stream_in_order_and_the_response_keeps_blocks_and_citations() {
    let error_result = json!({"type": "web_search_tool_result", "tool_use_id": "srvtoolu_2",
        "content": {"type": "web_search_tool_result_error", "error_code": "max_uses_exceeded"}});
    let mut turn = search_turn("end_turn");
    turn["content_blocks"]
        .as_array_mut()
        .expect("blocks")
        .extend([
            json!({"type": "server_tool_use", "id": "srvtoolu_2", "name": "web_search",
                "input": {"query": "more"}}),
            error_result.clone(),
        ]);
    let mock = mock(json!({"turns": [turn]})).await;
    let provider = provider(&mock, vec![web_search()]);
    let (response, events) = stream(&provider, &request(vec![Message::user("q")], vec![])).await;
    assert_eq!(
        events,
        vec![
            StreamEvent::TextDelta("Let me search.".into()),
            StreamEvent::ServerToolUse {
                id: "srvtoolu_1".into(),
                name: "web_search".into(),
                input: json!({"query": "rust release date"}),
            },
            StreamEvent::ServerToolResult {
                tool_use_id: "srvtoolu_1".into(),
                result_type: "web_search_tool_result".into(),
                is_error: false,
            },
            StreamEvent::TextDelta("Rust 1.0 came out in May 2015.".into()),
            StreamEvent::ServerToolUse {
                id: "srvtoolu_2".into(),
                name: "web_search".into(),
                input: json!({"query": "more"}),
            },
            StreamEvent::ServerToolResult {
                tool_use_id: "srvtoolu_2".into(),
                result_type: "web_search_tool_result".into(),
                is_error: true,
            },
        ]
    );
    assert_eq!(
        response.text,
        "Let me search.Rust 1.0 came out in May 2015."
    );
    assert_eq!(
        response.text_blocks,
        vec![
            CitedText {
                text: "Let me search.".into(),
                citations: vec![],
            },
            CitedText {
                text: "Rust 1.0 came out in May 2015.".into(),
                citations: vec![citation()],
            },
        ]
    );
    // The call's streamed input is parsed into the block that goes back.
    assert_eq!(
        response.server_blocks[..2],
        [search_call(), search_result()]
    );
    assert_eq!(response.server_blocks[3], error_result);
    assert_eq!(response.server_block_positions, [1, 1, 2, 2]);
    assert_eq!(response.stop_reason, StopReason::EndTurn);
}

/// A writer into a shared buffer, for the session log.
#[derive(Clone, Default)]
struct Buffer(Arc<Mutex<Vec<u8>>>);

impl Write for Buffer {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("lock").extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn history_sends_the_search_and_cited_text_back_in_order_and_pause_turn_continues() {
    let mock = mock(json!({"turns": [
        search_turn("pause_turn"),
        {"text": "That is all."},
        {"text": "You are welcome."},
    ]}))
    .await;
    let provider: Arc<dyn Provider> = Arc::new(provider(&mock, vec![web_search()]));
    let engine = Engine::new(provider, ToolRegistry::new(), EngineConfig::default());
    let events = Arc::new(Mutex::new(Vec::new()));
    let execution = Arc::new(Mutex::new(Vec::new()));
    let log = Buffer::default();
    let recorder = JsonlRecorder::new(log.clone()).without_stream_deltas();
    let options = {
        let events = events.clone();
        let execution = execution.clone();
        let recorder = recorder.clone();
        RunOptions::new()
            .with_on_event(move |event| events.lock().expect("lock").push(event))
            .with_on_execution_event(move |event: ExecutionEvent| {
                recorder.record(&event);
                execution.lock().expect("lock").push(event);
            })
    };
    let mut conversation = Conversation::new();
    let outcome = engine
        .run(
            &mut conversation,
            Message::user("When did Rust 1.0 come out?"),
            options,
        )
        .await;
    assert_eq!(outcome.stop_reason, RunStopReason::Completed);

    // pause_turn: the paused response goes back as it is and the model continues.
    let requests = mock.requests();
    assert_eq!(requests.len(), 2, "the paused turn was continued");
    let messages = requests[1].body["messages"].as_array().expect("messages");
    assert_eq!(messages.len(), 2);
    assert_eq!(messages[1]["role"], "assistant");
    let mut sent_back: Vec<Value> = messages[1]["content"].as_array().expect("content").clone();
    // (The moving cache breakpoint sits on the last block; it is not the model's.)
    if let Some(last) = sent_back.last_mut().and_then(Value::as_object_mut) {
        last.remove("cache_control");
    }
    assert_eq!(sent_back, search_turn_on_the_wire());

    // The history keeps the text blocks with their citations and the blocks' positions.
    let assistant = conversation
        .messages()
        .find(|m| m.role == robota::message::Role::Assistant)
        .expect("assistant message");
    assert_eq!(
        assistant.content,
        vec![
            ContentBlock::text("Let me search."),
            ContentBlock::Text {
                text: "Rust 1.0 came out in May 2015.".into(),
                citations: vec![citation()],
            },
        ]
    );
    assert_eq!(assistant.metadata["server_block_positions"], json!([1, 1]));

    // Events: the call (with its query) and its result, between the text deltas.
    let story = server_tool_story(&events.lock().expect("lock"));
    assert_eq!(
        story,
        [
            "text \"Let me search.\"",
            "server_tool_use srvtoolu_1 web_search {\"query\":\"rust release date\"}",
            "server_tool_result srvtoolu_1 web_search_tool_result false",
            "text \"Rust 1.0 came out in May 2015.\"",
            "text \"\\n\\n\"",
            "text \"That is all.\"",
        ]
    );

    // The session log has a server_tool line with the tool's name and query.
    recorder.finish().expect("log written");
    let text = String::from_utf8(log.0.lock().expect("lock").clone()).expect("utf-8");
    let lines: Vec<Value> = text
        .lines()
        .map(|line| serde_json::from_str(line).expect("json line"))
        .collect();
    let server_tool: Vec<&Value> = lines
        .iter()
        .filter(|line| line["type"] == "server_tool")
        .collect();
    assert_eq!(server_tool.len(), 1, "{text}");
    assert_eq!(server_tool[0]["name"], "web_search");
    assert_eq!(server_tool[0]["input"]["query"], "rust release date");
    assert_eq!(server_tool[0]["round"], 1);
    let kinds: Vec<&str> = lines.iter().filter_map(|l| l["type"].as_str()).collect();
    let position = |kind: &str| kinds.iter().position(|k| *k == kind);
    assert!(
        position("server_tool") > position("provider_request")
            && position("server_tool") < position("provider_response"),
        "recorded while the call streamed: {kinds:?}"
    );

    // A later prompt sends the same blocks back, in the same order.
    ask(&engine, &mut conversation, "Thanks").await;
    let third = &mock.requests()[2].body;
    let messages = third["messages"].as_array().expect("messages");
    let assistant_turn = messages[1]["content"].as_array().expect("content");
    // The paused response and its continuation merge into one assistant turn.
    assert_eq!(assistant_turn[..4], search_turn_on_the_wire()[..]);
    assert_eq!(
        assistant_turn[4],
        json!({"type": "text", "text": "That is all."})
    );
}

fn profile_settings(dir: &Path, server_tools: Value) -> robota::framework::config::Settings {
    std::fs::create_dir_all(dir.join(".claude")).expect("mkdir");
    std::fs::write(
        dir.join(".claude/settings.json"),
        json!({
            "currentProvider": "claude",
            "providers": {"claude": {"type": "anthropic", "apiKey": "sk-ant-test",
                "options": {"serverTools": server_tools}}}
        })
        .to_string(),
    )
    .expect("settings");
    let options = SettingsOptions::new(dir).with_home(dir.join("home"));
    load_settings(&options).expect("settings load").settings
}

fn profile_error(server_tools: Value) -> String {
    let dir = tempfile::tempdir().expect("temp dir");
    let settings = profile_settings(dir.path(), server_tools);
    match provider_from_settings(&settings, dir.path(), &|_| None) {
        Ok(_) => String::new(),
        Err(error) => error.to_string(),
    }
}

#[tokio::test]
async fn profile_server_tools_are_read_and_bad_entries_are_named() {
    let mock = mock(json!({"turns": [{"text": "ok"}]})).await;
    let dir = tempfile::tempdir().expect("temp dir");
    let settings = profile_settings(
        dir.path(),
        json!(["web_search", {"name": "web_fetch", "maxUses": 2, "citations": {"enabled": true}}]),
    );
    let built = provider_from_settings(&settings, dir.path(), &|name| {
        (name == "ANTHROPIC_BASE_URL").then(|| mock.base_url())
    })
    .expect("provider");
    let request = request(vec![Message::user("hi")], vec![]);
    let sink = |_: StreamEvent| {};
    built
        .provider
        .stream(&request, &sink, &CancellationToken::new())
        .await
        .expect("call");
    let sent = &mock.requests()[0];
    assert_eq!(
        sent.body["tools"],
        json!([
            {"type": "web_search_20250305", "name": "web_search"},
            {"type": "web_fetch_20250910", "name": "web_fetch", "max_uses": 2,
             "citations": {"enabled": true}, "cache_control": {"type": "ephemeral"}},
        ])
    );
    assert_eq!(
        sent.headers.get("anthropic-beta").map(String::as_str),
        Some("web-fetch-2025-09-10")
    );

    for (entry, expected) in [
        (json!("web_search"), "`options.serverTools` must be a list"),
        (json!(["web_serch"]), "unknown server tool \"web_serch\""),
        (json!([42]), "server tool entry 42"),
        (
            json!([{"name": "web_search", "maxUses": 0}]),
            "\"maxUses\" must be a positive integer",
        ),
        (
            json!([{"name": "web_search", "allowedDomains": ["a"], "blockedDomains": ["b"]}]),
            "cannot be used together",
        ),
        (
            json!([{"name": "code_execution", "maxUses": 1}]),
            "server tool \"code_execution\" has no option \"maxUses\"",
        ),
        (
            json!([{"name": "web_search", "userLocation": {"city": "Berlin"}}]),
            "\"userLocation\" must be",
        ),
        (
            json!([{"name": "web_search", "type": "web_fetch_20250910"}]),
            "is not a version of it",
        ),
        (json!(["web_search", "web_search"]), "listed twice"),
    ] {
        let error = profile_error(entry.clone());
        assert!(
            error.contains("provider profile \"claude\"") && error.contains(expected),
            "{entry}: {error}"
        );
    }
}
