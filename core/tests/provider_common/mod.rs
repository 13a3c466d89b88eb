//! What the provider tests share: one streamed call with its events collected, a settings that
//! select a profile, and the server-tool story an engine run tells.

#![allow(dead_code)] // each user takes what it needs

use robota::engine::{Engine, EngineEvent, RunOptions, RunStopReason};
use robota::framework::config::{
    ProviderOrigin, ProviderProfile, ResolvedProvider, Settings, SettingsSource,
};
use robota::message::{Conversation, Message, ProviderError};
use robota::provider::{Provider, ProviderRequest, ProviderResponse, StreamEvent};
use std::sync::Mutex;
use tokio_util::sync::CancellationToken;

/// A call's result and the events it streamed, in order.
pub type Outcome = (Result<ProviderResponse, ProviderError>, Vec<StreamEvent>);

/// Makes one call, collecting its events.
pub async fn run(provider: &dyn Provider, request: &ProviderRequest) -> Outcome {
    let events = Mutex::new(Vec::new());
    let sink = |event: StreamEvent| events.lock().expect("lock").push(event);
    let result = provider
        .stream(request, &sink, &CancellationToken::new())
        .await;
    (result, events.into_inner().expect("lock"))
}

/// Settings whose active provider is `profile` (as the legacy `provider` key selects one).
pub fn selecting(profile: ProviderProfile) -> Settings {
    Settings {
        provider: Some(ResolvedProvider {
            origin: ProviderOrigin::Legacy,
            source: SettingsSource::overrides(),
            profile,
        }),
        ..Settings::default()
    }
}

/// Sends `prompt` as the next user message of `conversation` and checks the run completed.
pub async fn ask(engine: &Engine, conversation: &mut Conversation, prompt: &str) {
    let outcome = engine
        .run(conversation, Message::user(prompt), RunOptions::new())
        .await;
    assert_eq!(outcome.stop_reason, RunStopReason::Completed, "{outcome:?}");
}

/// The text deltas and server-tool events of an engine run, one line each
/// (`server_tool_use <id> <name> <input>`, `server_tool_result <id> <type> <is_error>`,
/// `text "<delta>"`).
pub fn server_tool_story(events: &[EngineEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|event| match event {
            EngineEvent::TextDelta { text } => Some(format!("text {text:?}")),
            EngineEvent::ServerToolUse { id, name, input } => {
                Some(format!("server_tool_use {id} {name} {input}"))
            }
            EngineEvent::ServerToolResult {
                tool_use_id,
                result_type,
                is_error,
            } => Some(format!(
                "server_tool_result {tool_use_id} {result_type} {is_error}"
            )),
            _ => None,
        })
        .collect()
}
