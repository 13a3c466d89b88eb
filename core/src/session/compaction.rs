//! Compaction: replacing a long conversation with a model-written summary so the session can go
//! on within the context window (spec 002 "Compaction Behavior", TypeScript
//! `compaction-orchestrator.ts`).
//!
//! The session drives the flow (PreCompact hooks, the summary call with bounded retries, the
//! history swap, logging, PostCompact hooks, the `compaction` event); this module owns the
//! pure parts: the prompt, the completeness check and the compacted history.
//!
//! **The compacted history** keeps every system message (project context must survive, spec 002
//! "System Message Preservation") followed by a user/assistant pair: a user message saying the
//! conversation was compacted and the assistant message `[Context Summary]\n<summary>` that the
//! spec prescribes. The user message is there because Anthropic's API (and several
//! OpenAI-compatible servers) reject a conversation whose first non-system message is the
//! assistant's; with it the next prompt keeps the roles alternating on every wire format.

use crate::message::{ContentBlock, Conversation, Message, MessageState, Role};
use crate::provider::{ProviderResponse, StopReason};

/// The summary request's instructions (the TypeScript SDK's `DEFAULT_COMPACTION_PROMPT`).
pub const COMPACTION_PROMPT: &str = "Summarize the following conversation concisely, preserving:
- User's original requests and goals
- Key decisions, conclusions, and important state
- Identifiers, names, and references needed to continue the work
- Current task status and next steps
Drop verbose intermediate outputs and exploratory work that didn't lead to results.";

/// Prefix of the assistant message that carries the summary.
pub const CONTEXT_SUMMARY_PREFIX: &str = "[Context Summary]\n";

/// The user message placed before the summary in a compacted history.
pub const COMPACTED_NOTICE: &str =
    "[The earlier conversation was compacted. Its summary follows; continue from it.]";

/// Metadata key (value `true`) on the two messages compaction adds, so transcripts can tell
/// them from what the user and model wrote.
pub const COMPACTION_METADATA: &str = "compaction";

/// Summary calls made before compaction gives up (one call and two retries).
pub const MAX_COMPACTION_ATTEMPTS: u32 = 3;

/// What a compaction did.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CompactionSummary {
    /// Context tokens before.
    pub tokens_before: u64,
    /// Estimated context tokens of the compacted history.
    pub tokens_after: u64,
    /// The summary that replaced the conversation.
    pub summary: String,
}

/// The single user message of the summary request: the instructions, the caller's focus
/// instructions ("Additional focus"), and the conversation as `role: text` lines. System
/// messages are left out — they are kept as they are, not summarized.
pub(crate) fn summary_prompt<'a>(
    messages: impl IntoIterator<Item = &'a Message>,
    instructions: Option<&str>,
) -> String {
    let mut prompt = String::from(COMPACTION_PROMPT);
    if let Some(instructions) = instructions.map(str::trim).filter(|i| !i.is_empty()) {
        prompt.push_str("\n\nAdditional focus:\n");
        prompt.push_str(instructions);
        prompt.push('\n');
    }
    prompt.push_str("\n\nConversation:");
    for message in messages {
        if message.role == Role::System {
            continue;
        }
        let text = message.text();
        let body = if text.trim().is_empty() {
            // Tool calls and results have no plain text; their JSON keeps names and ids.
            serde_json::to_string(&message.content).unwrap_or_default()
        } else {
            text
        };
        prompt.push('\n');
        prompt.push_str(role_name(message.role));
        prompt.push_str(": ");
        prompt.push_str(&body);
    }
    prompt
}

fn role_name(role: Role) -> &'static str {
    match role {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
    }
}

/// The summary, when the response is a complete one: the model ended its answer normally and
/// the text is not blank. A summary cut off by the output limit would silently drop the latest
/// state of the work, so it is refused like an empty one.
pub(crate) fn check_summary(response: &ProviderResponse) -> Result<String, String> {
    match response.stop_reason {
        StopReason::EndTurn | StopReason::StopSequence => {}
        StopReason::MaxTokens => {
            return Err("the summary was cut off by the output token limit".into())
        }
        other => {
            return Err(format!(
                "the summary call ended with stop reason `{}`",
                serde_json::to_value(other)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_else(|| "other".into())
            ))
        }
    }
    let summary = response.text.trim();
    if summary.is_empty() {
        return Err("the model returned an empty summary".into());
    }
    Ok(summary.to_string())
}

/// The history after compaction: the system messages of `old`, then the notice and the summary.
pub(crate) fn compacted_history(old: &Conversation, summary: &str) -> Conversation {
    let mut history = Conversation::new();
    for message in old.messages().filter(|m| m.role == Role::System) {
        history.push(message.clone());
    }
    let mut notice = Message::user(COMPACTED_NOTICE);
    notice
        .metadata
        .insert(COMPACTION_METADATA.into(), true.into());
    history.push(notice);
    let mut answer = Message::assistant(
        vec![ContentBlock::text(format!(
            "{CONTEXT_SUMMARY_PREFIX}{summary}"
        ))],
        MessageState::Complete,
    );
    answer
        .metadata
        .insert(COMPACTION_METADATA.into(), true.into());
    history.push(answer);
    history
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::Usage;

    fn response(text: &str, stop_reason: StopReason) -> ProviderResponse {
        ProviderResponse {
            text: text.into(),
            thinking: Vec::new(),
            tool_calls: Vec::new(),
            stop_reason,
            usage: Usage::default(),
            model: "m".into(),
            ..ProviderResponse::default()
        }
    }

    #[test]
    fn only_complete_non_blank_summaries_are_accepted() {
        assert_eq!(
            check_summary(&response(" s ", StopReason::EndTurn)),
            Ok("s".into())
        );
        assert!(check_summary(&response("  ", StopReason::EndTurn)).is_err());
        assert!(check_summary(&response("half", StopReason::MaxTokens)).is_err());
        assert!(check_summary(&response("half", StopReason::Aborted)).is_err());
    }

    #[test]
    fn system_messages_survive_and_are_not_summarized() {
        let mut old = Conversation::new();
        old.push(Message::system("project rules"));
        old.push(Message::user("hello"));
        let prompt = summary_prompt(old.messages(), Some("keep names"));
        assert!(prompt.contains("Additional focus:\nkeep names"));
        assert!(prompt.contains("user: hello"));
        assert!(!prompt.contains("project rules"));
        let new = compacted_history(&old, "sum");
        let roles: Vec<Role> = new.messages().map(|m| m.role).collect();
        assert_eq!(roles, vec![Role::System, Role::User, Role::Assistant]);
        assert_eq!(
            new.messages().last().map(Message::text),
            Some("[Context Summary]\nsum".into())
        );
    }
}
