//! The forced final answer: when the loop stops without a final text-only answer (round cap,
//! repeated unknown tools, an empty reply), one more model call is made with tools forbidden
//! (`tool_choice: none`; the definitions still go along because providers reject tool calls in
//! the history without them), with a
//! synthetic user instruction that is sent but never stored, so the user always gets an answer.
//! Its failure is never an error of the run: the fallback text is used instead.

use std::collections::BTreeSet;
use std::sync::Arc;

use super::events::EngineEvent;
use super::round::assistant_message;
use super::run::Run;
use crate::message::{Message, MessageState};
use crate::provider::StopReason;

/// The instruction sent when the round cap was reached (the TypeScript SDK's text).
pub const MAX_TURNS_INSTRUCTION: &str = "Tool round limit reached. Provide your response based on the information gathered so far. If results are incomplete, let the user know what was covered and what remains — the user can request additional analysis in a follow-up message.";

/// The answer used when the forced summary call fails or produces no text.
pub const SUMMARY_FALLBACK: &str =
    "Maximum rounds reached. Partial results available in conversation history.";

/// The prompt that asks the model to go on with an answer that was cut off at the output token
/// limit (a run that ended [`Truncated`](super::RunStopReason::Truncated)). The cut-off answer is
/// in the history, so the model sees where it stopped.
pub const CONTINUE_PROMPT: &str = "Your previous answer was cut off at the output token limit. Continue exactly where it stopped, without repeating what you already wrote.";

/// The instruction sent when the model's reply held nothing at all (no text, no tool call).
pub const EMPTY_REPLY_INSTRUCTION: &str =
    "Your last reply was empty. Respond to the user now, based on the conversation so far.";

/// The answer used when the model's reply was empty and asking again brought nothing either.
pub const EMPTY_REPLY_FALLBACK: &str = "The model returned an empty reply.";

/// The instruction sent when the model kept calling tools that are not registered.
pub(crate) fn unknown_tools_instruction(names: &BTreeSet<String>) -> String {
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    format!(
        "The model repeatedly requested unavailable tool(s): {}. Those tool calls were not executed because they are not registered tools. Respond to the user now with that reason and use the available tool results already in the conversation history.",
        names.join(", ")
    )
}

/// How the forced summary went.
pub(crate) struct Summary {
    /// The committed answer text.
    pub text: String,
    /// True when an abort cut the summary call short.
    pub interrupted: bool,
    /// Set when the model refused instead of answering.
    pub refusal: Option<crate::provider::Refusal>,
    /// True when the answer was cut off at the output token limit.
    pub truncated: bool,
}

impl Run<'_> {
    /// Makes the tool-less summary call and commits its answer (or `fallback`).
    pub(crate) async fn forced_summary(&mut self, instruction: &str, fallback: &str) -> Summary {
        let round = self.rounds + 1;
        // The summary is a request like any other: it counts in `rounds` (`num_turns`).
        self.rounds = round;
        if self.rounds > 0 {
            self.emitter.event(|| EngineEvent::TextDelta {
                text: "\n\n".into(),
            });
        }
        let mut messages = self.conversation.messages_for_model();
        let mut synthetic = Message::user(instruction);
        synthetic.metadata.insert("synthetic".into(), true.into());
        messages.push(Arc::new(synthetic));
        let request = self.request(messages, false);
        let call = self.call_model(round, request).await;

        let mut response = match call.result {
            Ok(response) => response,
            Err(error) => {
                if self.cancel.is_cancelled() {
                    let text = call.streamed_text;
                    self.commit_partial(round, text.clone(), None);
                    return Summary {
                        text,
                        interrupted: true,
                        refusal: None,
                        truncated: false,
                    };
                }
                let detail = error.to_string();
                return self.commit_fallback(round, fallback, Some(detail));
            }
        };
        self.usage.add(&response.usage);
        // No tools were offered; a tool call here could never get a result, so it is dropped
        // rather than left orphaned in the history.
        let dropped_tool_calls = std::mem::take(&mut response.tool_calls).len();
        let interrupted = response.stop_reason == StopReason::Aborted || self.cancel.is_cancelled();
        let refused = !interrupted && response.stop_reason == StopReason::Refusal;
        let truncated = !interrupted && response.stop_reason == StopReason::MaxTokens;
        if !interrupted && !refused && response.text.trim().is_empty() {
            return self.commit_fallback(round, fallback, None);
        }
        let state = if interrupted {
            MessageState::Interrupted
        } else {
            MessageState::Complete
        };
        let (mut message, _) =
            assistant_message(&response, state, round, self.engine.provider.model());
        message
            .metadata
            .insert("forced_summary".into(), true.into());
        if dropped_tool_calls > 0 {
            message
                .metadata
                .insert("dropped_tool_calls".into(), dropped_tool_calls.into());
        }
        let text = message.text();
        self.commit_assistant(round, message);
        Summary {
            text,
            interrupted,
            refusal: refused.then(|| response.refusal.unwrap_or_default()),
            truncated,
        }
    }

    /// Commits `fallback` as the answer (streamed too, so a UI shows it).
    fn commit_fallback(&mut self, round: u32, fallback: &str, error: Option<String>) -> Summary {
        self.emitter.event(|| EngineEvent::TextDelta {
            text: fallback.into(),
        });
        let mut message = Message::assistant(
            vec![crate::message::ContentBlock::text(fallback)],
            MessageState::Complete,
        );
        message.metadata.insert("round".into(), round.into());
        message
            .metadata
            .insert("forced_summary".into(), true.into());
        message.metadata.insert("fallback".into(), true.into());
        if let Some(error) = error {
            message
                .metadata
                .insert("summary_error".into(), error.into());
        }
        self.commit_assistant(round, message);
        Summary {
            text: fallback.to_string(),
            interrupted: false,
            refusal: None,
            truncated: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_tool_instruction_lists_sorted_names() {
        let names: BTreeSet<String> = ["Write", "Bash"].iter().map(|s| s.to_string()).collect();
        let text = unknown_tools_instruction(&names);
        assert!(text.starts_with(
            "The model repeatedly requested unavailable tool(s): Bash, Write. Those tool calls were not executed"
        ));
    }
}
