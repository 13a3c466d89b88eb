//! The agent session the prompt-cache test and benchmark share: ten prompts, each answered with
//! a `Read` tool call and then text — twenty model requests — against mock-llm with its
//! prompt-cache simulation on, so every response's usage says what the request would cost.

#![allow(dead_code)] // each user takes what it needs

use std::sync::Arc;
use std::time::Duration;

use mock_llm::MockLlm;
use robota::framework::interactive::{InteractiveSession, InteractiveSessionOptions};
use robota::hooks::SessionEndReason;
use robota::message::{Role, Usage};
use robota::permissions::PermissionMode;
use robota::provider::{
    AnthropicConfig, AnthropicProvider, CacheTtl, HttpOptions, OpenAiConfig, OpenAiProvider,
    Provider,
};
use robota::session::{SessionOptions, SessionSettings};
use serde_json::{json, Value};

/// Prompts in the session; each makes two requests.
pub const PROMPTS: usize = 10;

/// The real APIs' smallest cacheable prefix (Anthropic Sonnet; OpenAI).
pub const MIN_CACHEABLE_TOKENS: u64 = 1024;

/// What one model request sent and what it cost.
pub struct Request {
    /// The request body as mock-llm recorded it.
    pub body: Value,
    /// The `anthropic-beta` header it carried, if any.
    pub beta: Option<String>,
    /// The usage the simulated provider reported for it.
    pub usage: Usage,
}

/// The mock-llm script: tool call and answer per prompt, input usage from the cache simulation.
pub fn script() -> Value {
    let mut turns = Vec::new();
    for i in 0..PROMPTS {
        turns.push(json!({
            "tool_calls": [{"id": format!("toolu_{i}"), "name": "Read", "input": {"file_path": format!("notes-{i}.md")}}],
            "usage": {"output_tokens": 40}
        }));
        turns.push(json!({
            "text": format!("notes-{i}.md lists the steps for part {i}: build, test, ship."),
            "usage": {"output_tokens": 60}
        }));
    }
    json!({"turns": turns, "prompt_cache": {"chars_per_token": 4, "min_tokens": MIN_CACHEABLE_TOKENS}})
}

/// Which wire the session speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wire {
    /// Anthropic Messages with this caching setting (`None`: off).
    Anthropic(Option<CacheTtl>),
    /// OpenAI Chat Completions (automatic caching).
    OpenAi,
}

fn provider(mock: &MockLlm, wire: Wire) -> Arc<dyn Provider> {
    let http = HttpOptions {
        max_retries: 0,
        idle_timeout: Duration::from_secs(10),
        ..HttpOptions::default()
    };
    match wire {
        Wire::Anthropic(caching) => Arc::new(
            AnthropicProvider::new(AnthropicConfig {
                api_key: Some("sk-ant-test".into()),
                base_url: Some(mock.base_url()),
                prompt_caching: caching,
                http,
                ..AnthropicConfig::new("claude-sonnet-4-5")
            })
            .expect("provider"),
        ),
        Wire::OpenAi => Arc::new(
            OpenAiProvider::new(OpenAiConfig {
                api_key: Some("sk-test".into()),
                base_url: Some(format!("{}/v1", mock.base_url())),
                http,
                ..OpenAiConfig::new("gpt-4o")
            })
            .expect("provider"),
        ),
    }
}

/// Runs the session against a fresh mock-llm and returns every request with its usage.
pub async fn run_session(wire: Wire) -> Vec<Request> {
    let mock = MockLlm::start_json(script()).await.expect("mock-llm");
    let dir = tempfile::tempdir().expect("tempdir");
    for i in 0..PROMPTS {
        let notes: String = (0..40)
            .map(|line| format!("{line}. step {line} of part {i}: check the inputs, run it, record the result\n"))
            .collect();
        std::fs::write(dir.path().join(format!("notes-{i}.md")), notes).expect("notes");
    }
    let options = SessionOptions::new(dir.path(), provider(&mock, wire))
        .with_settings(SessionSettings::None)
        .with_project_context(false)
        .with_sandbox(false)
        .with_permission_mode(PermissionMode::BypassPermissions)
        .with_auto_compact(false);
    let session =
        InteractiveSession::new(InteractiveSessionOptions::new(options)).expect("session");
    for i in 0..PROMPTS {
        let ticket = session
            .submit_tracked(&format!("Summarize notes-{i}.md"), None)
            .await
            .expect("submit");
        let result = tokio::time::timeout(Duration::from_secs(30), ticket.result())
            .await
            .expect("in time");
        assert!(
            result.outcome().is_some_and(|o| o.error.is_none()),
            "{result:?}"
        );
    }
    let usages: Vec<Usage> = session
        .get_messages()
        .into_iter()
        .filter(|m| m.role == Role::Assistant)
        .map(|m| m.usage.unwrap_or_default())
        .collect();
    let bodies: Vec<(Value, Option<String>)> = mock
        .requests()
        .into_iter()
        .map(|r| (r.body, r.headers.get("anthropic-beta").cloned()))
        .collect();
    assert_eq!(bodies.len(), 2 * PROMPTS);
    assert_eq!(usages.len(), bodies.len());
    session.shutdown(SessionEndReason::Other).await;
    mock.shutdown().await;
    bodies
        .into_iter()
        .zip(usages)
        .map(|((body, beta), usage)| Request { body, beta, usage })
        .collect()
}

/// Every input token of a request, however it was billed.
pub fn total_input(usage: &Usage) -> u64 {
    usage.input_tokens + usage.cache_read_input_tokens + usage.cache_creation_input_tokens
}
