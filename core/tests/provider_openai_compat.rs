//! The OpenAI-compatible profile types (`deepseek`, `qwen`, `gemma`) built from settings and run
//! against mock-llm's Chat Completions endpoint: the fields each adds to the request, the history
//! it sends back, and (Gemma) tool calls written as text projected into real tool calls.

mod provider_common;

use std::path::Path;
use std::sync::{Arc, Mutex};

use mock_llm::MockLlm;
use provider_common::selecting;
use robota::framework::assembly::provider::provider_from_settings;
use robota::framework::config::ProviderProfile;
use robota::message::{ContentBlock, Message, MessageState};
use robota::provider::{
    Provider, ProviderRequest, StopReason, StreamEvent, ThinkingConfig, ToolDefinition,
};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

async fn mock(script: Value) -> MockLlm {
    MockLlm::start_json(script).await.expect("mock-llm starts")
}

/// The provider a settings profile of `kind` builds, pointed at `mock`.
fn from_settings(
    mock: &MockLlm,
    kind: &str,
    model: Option<&str>,
    options: Value,
) -> Arc<dyn Provider> {
    let profile = ProviderProfile {
        name: "test".into(),
        kind: kind.into(),
        model: model.map(str::to_owned),
        api_key: Some("sk-test".into()),
        api_key_env: None,
        base_url: Some(format!("{}/v1", mock.base_url())),
        timeout_ms: None,
        options: Some(options),
    };
    match provider_from_settings(&selecting(profile), Path::new("."), &|_| None) {
        Ok(built) => built.provider,
        Err(error) => panic!("{error}"),
    }
}

fn read_tool() -> ToolDefinition {
    ToolDefinition {
        name: "Read".into(),
        description: "Read a file".into(),
        input_schema: json!({"type": "object"}),
    }
}

async fn run(
    provider: &dyn Provider,
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

fn texts(events: &[StreamEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::TextDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn deepseek_thinking_controls_and_reasoning_content_in_the_history() {
    let mock =
        mock(json!({"turns": [{"thinking": ["Checking ", "more."], "text": "Done."}]})).await;
    let provider = from_settings(&mock, "deepseek", None, json!({"reasoningEffort": "max"}));
    assert_eq!(provider.name(), "deepseek");
    assert_eq!(provider.model(), "deepseek-chat");
    assert!(provider.capabilities().thinking);
    let request = ProviderRequest {
        messages: vec![
            Message::user("first"),
            Message::assistant(
                vec![
                    ContentBlock::Thinking {
                        thinking: "no tools here".into(),
                        signature: None,
                    },
                    ContentBlock::text("plain answer"),
                ],
                MessageState::Complete,
            ),
            Message::user("read a"),
            Message::assistant(
                vec![
                    ContentBlock::Thinking {
                        thinking: "I need the file.".into(),
                        signature: None,
                    },
                    ContentBlock::ToolUse {
                        id: "call_1".into(),
                        name: "Read".into(),
                        input: json!({"p": "a"}),
                    },
                ],
                MessageState::Complete,
            ),
            Message::tool_result("call_1", "A", false),
        ]
        .into_iter()
        .map(Into::into)
        .collect(),
        tools: vec![read_tool()],
        thinking: Some(ThinkingConfig {
            budget_tokens: 8_000,
        }),
        ..ProviderRequest::default()
    };
    let (response, _) = run(provider.as_ref(), &request).await;
    assert_eq!(response.thinking[0].thinking, "Checking more.");
    assert_eq!(response.text, "Done.");

    let body = &mock.requests()[0].body;
    assert_eq!(body["thinking"], json!({"type": "enabled"}));
    assert_eq!(body["reasoning_effort"], "max");
    let messages = body["messages"].as_array().expect("messages");
    // The turn without tool calls goes back without its reasoning; the one with them with it.
    assert_eq!(
        messages[1],
        json!({"role": "assistant", "content": "plain answer"})
    );
    assert_eq!(messages[3]["reasoning_content"], "I need the file.");
    assert_eq!(messages[3]["tool_calls"][0]["id"], "call_1");

    // Thinking off by profile, when the request asks for none.
    let mock = mock_text().await;
    let provider = from_settings(&mock, "deepseek", None, json!({"thinking": false}));
    run(provider.as_ref(), &hello()).await;
    let body = &mock.requests()[0].body;
    assert_eq!(body["thinking"], json!({"type": "disabled"}));
    assert!(body.get("reasoning_effort").is_none());
}

async fn mock_text() -> MockLlm {
    mock(json!({"turns": [{"text": "ok"}]})).await
}

fn hello() -> ProviderRequest {
    ProviderRequest {
        messages: vec![Message::user("hello").into()],
        ..ProviderRequest::default()
    }
}

#[tokio::test]
async fn qwen_web_search_and_thinking() {
    let mock = mock(json!({"turns": [{"thinking": "hmm", "text": "Found it."}]})).await;
    let provider = from_settings(
        &mock,
        "qwen",
        None,
        json!({"webSearch": {"forced_search": true, "search_strategy": "max"}}),
    );
    assert_eq!(provider.model(), "qwen-plus");
    let request = ProviderRequest {
        thinking: Some(ThinkingConfig {
            budget_tokens: 2_048,
        }),
        ..hello()
    };
    let (response, _) = run(provider.as_ref(), &request).await;
    assert_eq!(response.text, "Found it.");
    assert_eq!(response.thinking[0].thinking, "hmm");
    let body = &mock.requests()[0].body;
    assert_eq!(body["enable_search"], true);
    assert_eq!(
        body["search_options"],
        json!({"forced_search": true, "search_strategy": "max"})
    );
    assert_eq!(body["enable_thinking"], true);
    assert_eq!(body["thinking_budget"], 2_048);

    let mock = mock_text().await;
    let provider = from_settings(&mock, "qwen", Some("qwen-max"), json!({"webSearch": true}));
    run(provider.as_ref(), &hello()).await;
    let body = &mock.requests()[0].body;
    assert_eq!(body["model"], "qwen-max");
    assert_eq!(body["enable_search"], true);
    assert!(body.get("search_options").is_none());
    assert!(body.get("enable_thinking").is_none());
}

#[tokio::test]
async fn gemma_tool_calls_written_as_text_become_tool_calls() {
    let mock = mock(json!({"turns": [
        {"text": ["I'll read both.<tool", "_call>{\"name\": \"Read\", \"arguments\": {\"p\": \"a\"}}</tool_call>",
                  "\n```tool_code\nprint(Read(p=\"b\"))\n```"]},
        {"text": ["[Read(p=", "'c', lines=10)]"]},
        {"text": ["[1] is a ", "footnote."]}
    ]}))
    .await;
    let provider = from_settings(&mock, "gemma", Some("google/gemma-3-12b"), json!({}));
    let request = ProviderRequest {
        system: Some("Be brief.".into()),
        tools: vec![read_tool()],
        ..hello()
    };
    let (response, events) = run(provider.as_ref(), &request).await;
    assert_eq!(response.text, "I'll read both.\n");
    assert_eq!(
        texts(&events),
        "I'll read both.\n",
        "no markup reaches the host"
    );
    assert_eq!(response.stop_reason, StopReason::ToolUse);
    let calls: Vec<(&str, &str)> = response
        .tool_calls
        .iter()
        .map(|c| (c.name.as_str(), c.arguments.as_str()))
        .collect();
    assert_eq!(calls, [("Read", r#"{"p":"a"}"#), ("Read", r#"{"p":"b"}"#)]);
    assert_ne!(response.tool_calls[0].id, response.tool_calls[1].id);

    // Gemma's documented call list, as the whole answer.
    let (response, events) = run(provider.as_ref(), &request).await;
    assert_eq!(response.text, "");
    assert_eq!(texts(&events), "");
    let arguments: Value =
        serde_json::from_str(&response.tool_calls[0].arguments).expect("JSON arguments");
    assert_eq!(arguments, json!({"p": "c", "lines": 10}));

    // A bracket that is not a call list is text.
    let (response, _) = run(provider.as_ref(), &request).await;
    assert_eq!(response.text, "[1] is a footnote.");
    assert!(response.tool_calls.is_empty());
    assert_eq!(response.stop_reason, StopReason::EndTurn);

    // The system prompt travels in the first user message: Gemma's template has no system role.
    let body = &mock.requests()[0].body;
    assert_eq!(
        body["messages"],
        json!([{"role": "user", "content": "Be brief.\n\nhello"}])
    );
}
