//! The `prompt` and `agent` executors: one model call, through a [`Provider`] the host supplies,
//! that judges the event and answers `{"ok": true}` or `{"ok": false, "reason": "..."}`.
//!
//! The hook's `prompt` has `$ARGUMENTS` replaced with the event JSON; without the placeholder
//! the JSON is appended (Claude Code's rule). `ok: false` blocks with `reason` (the per-event
//! effect of a block applies); `ok: true` lets the action proceed. The model may instead answer
//! with full hook JSON output (`decision`, `hookSpecificOutput`, …), which is honoured as from a
//! command hook. An answer that is not JSON is a non-blocking error.
//!
//! An `agent` hook investigates before it answers, as in Claude Code: when the runner has an
//! [`AgentHookExecutor`] (a session supplies one that gives the model read-only tools: Read,
//! Glob, Grep, under the session's deny rules), the verdict comes from a multi-turn run; without
//! one it is the same single model call as a `prompt` hook. Either way the 60 s default timeout
//! covers the whole investigation.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::config::PromptHook;
use super::outcome::HookFailure;
use super::output::HookOutput;
use super::runner::{RawReply, RawResult};
use crate::message::Message;
use crate::provider::{Provider, ProviderRequest, StopReason};

/// System prompt for the verdict call: it must answer with JSON only.
const SYSTEM_PROMPT: &str = "You are a hook in an AI coding agent's session: you judge one event \
and decide whether the action may proceed. Answer with a single JSON object and nothing else: \
{\"ok\": true} to let it proceed, or {\"ok\": false, \"reason\": \"<why, addressed to the agent>\"} \
to block it.";

/// Extra instructions for an `agent` hook that can use tools.
const AGENT_TOOLS_PROMPT: &str = " Before you answer you may inspect the project with the \
read-only tools you are given (Read, Glob, Grep); your final message must be the JSON object alone.";

/// Runs the investigation of an `agent` hook: the model works with read-only tools and returns
/// its final text. Implemented by the session, which owns tools and the engine (hooks know
/// neither).
#[async_trait::async_trait]
pub trait AgentHookExecutor: Send + Sync {
    /// Runs `prompt` under `system` through `provider` until the model answers without tool
    /// calls (or `cancel` fires); returns the final text, or why the run failed.
    async fn investigate(
        &self,
        provider: Arc<dyn Provider>,
        system: String,
        prompt: String,
        cancel: CancellationToken,
    ) -> Result<String, String>;
}

/// The user message: the hook's prompt with the event JSON in place of `$ARGUMENTS`.
pub(crate) fn render_prompt(prompt: &str, input_json: &str) -> String {
    if prompt.contains("$ARGUMENTS") {
        prompt.replace("$ARGUMENTS", input_json)
    } else {
        format!("{prompt}\n\n{input_json}")
    }
}

/// Finds the JSON object in a model answer: the whole text, a fenced block, or the span from the
/// first `{` to the last `}`.
pub(crate) fn extract_json(text: &str) -> Option<&str> {
    let trimmed = text.trim();
    if trimmed.starts_with('{') && trimmed.ends_with('}') {
        return Some(trimmed);
    }
    let start = trimmed.find('{')?;
    let end = trimmed.rfind('}')?;
    (end > start).then(|| &trimmed[start..=end])
}

/// Runs a prompt hook, or an agent hook (through `agent` when given), with `provider`.
pub(crate) async fn run(
    hook: &PromptHook,
    provider: Option<Arc<dyn Provider>>,
    agent: Option<&Arc<dyn AgentHookExecutor>>,
    input_json: &str,
    timeout: Duration,
    cancel: &CancellationToken,
) -> RawResult {
    let Some(provider) = provider else {
        return RawResult::reply(RawReply::Failed(HookFailure::NoProvider {
            model: hook.model.clone(),
        }));
    };
    let prompt = render_prompt(&hook.prompt, input_json);
    // A child token so a timeout stops the model without cancelling the caller's run.
    let call_cancel = cancel.child_token();
    let timed_out = || {
        RawResult::reply(RawReply::Failed(HookFailure::Timeout {
            timeout_ms: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
        }))
    };
    let text = if let Some(agent) = agent {
        let system = format!("{SYSTEM_PROMPT}{AGENT_TOOLS_PROMPT}");
        let run = agent.investigate(provider, system, prompt, call_cancel.clone());
        match tokio::time::timeout(timeout, run).await {
            Err(_) => {
                call_cancel.cancel();
                return timed_out();
            }
            Ok(Err(message)) => {
                return RawResult::reply(RawReply::Failed(HookFailure::Provider { message }))
            }
            Ok(Ok(_)) if cancel.is_cancelled() => return RawResult::reply(RawReply::Cancelled),
            Ok(Ok(text)) => text,
        }
    } else {
        let request = ProviderRequest {
            system: Some(SYSTEM_PROMPT.to_string()),
            messages: vec![std::sync::Arc::new(Message::user(prompt))],
            ..ProviderRequest::default()
        };
        let sink = |_event| {};
        let call = provider.stream(&request, &sink, &call_cancel);
        let response = match tokio::time::timeout(timeout, call).await {
            Err(_) => {
                call_cancel.cancel();
                return timed_out();
            }
            Ok(Err(error)) => {
                return RawResult::reply(RawReply::Failed(HookFailure::Provider {
                    message: error.to_string(),
                }))
            }
            Ok(Ok(response)) => response,
        };
        if response.stop_reason == StopReason::Aborted || cancel.is_cancelled() {
            return RawResult::reply(RawReply::Cancelled);
        }
        response.text
    };
    let reply = match extract_json(&text).map(HookOutput::from_json_text) {
        None => RawReply::Failed(HookFailure::MalformedOutput {
            message: "the model did not answer with a JSON object such as {\"ok\": true}".into(),
        }),
        Some(Err(message)) => RawReply::Failed(HookFailure::MalformedOutput { message }),
        Some(Ok(output)) => match output.ok {
            Some(false) => RawReply::Block(Some(
                output
                    .reason
                    .clone()
                    .filter(|r| !r.trim().is_empty())
                    .unwrap_or_else(|| "blocked by prompt hook".to_string()),
            )),
            Some(true) => {
                // `reason` accompanies the verdict; it is not an unknown field.
                RawReply::Output(Box::new(HookOutput {
                    ok: None,
                    reason: None,
                    ..output
                }))
            }
            None => RawReply::Output(Box::new(output)),
        },
    };
    RawResult {
        exit_code: None,
        stdout: text,
        stderr: String::new(),
        reply,
        stdout_overflow: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_substituted_or_appended() {
        assert_eq!(render_prompt("check $ARGUMENTS now", "{}"), "check {} now");
        assert_eq!(render_prompt("check", "{\"a\":1}"), "check\n\n{\"a\":1}");
    }

    #[test]
    fn json_is_found_in_fences_and_prose() {
        assert_eq!(extract_json("{\"ok\":true}"), Some("{\"ok\":true}"));
        assert_eq!(
            extract_json("```json\n{\"ok\": false}\n```"),
            Some("{\"ok\": false}")
        );
        assert_eq!(
            extract_json("Sure: {\"ok\":true} done"),
            Some("{\"ok\":true}")
        );
        assert_eq!(extract_json("no json"), None);
    }
}
