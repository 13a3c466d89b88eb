//! One run of the loop: the state it carries ([`Run`]), the round loop itself, and the single
//! place where messages are committed to the conversation.
//!
//! Invariants kept here, whatever happens (abort, provider failure, bad tool calls, panicking
//! tools): every message goes through [`Run::commit`]; every `tool_use` committed gets exactly
//! one tool message, in call order, before anything else is appended; a model call whose
//! response is cut off by an abort is always committed (as `interrupted`, even when empty).

use std::collections::BTreeSet;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::budget::{self, ToolResultBudget, CONTEXT_OVERFLOW_TOOL_RESULT, HARD_LIMIT_RATIO};
use super::config::{ProviderSwitch, RunOptions, RunOutcome, RunStopReason};
use super::events::{Emitter, EngineEvent, ExecutionEvent, HistoryMutation};
use super::round::{assistant_message, ParsedCall};
use super::summary::{
    unknown_tools_instruction, EMPTY_REPLY_FALLBACK, EMPTY_REPLY_INSTRUCTION,
    MAX_TURNS_INSTRUCTION, SUMMARY_FALLBACK,
};
use super::tool_batch::{CallResult, TRUNCATED_RESPONSE, UNKNOWN_TOOL};
use super::Engine;
use crate::message::{
    new_id, ContentBlock, Conversation, Message, MessageState, ProviderError, Role, Usage,
    PROVIDER_ERROR_METADATA,
};
use crate::provider::{Provider, ProviderRequest, Refusal, StopReason, ToolChoice};

/// What a tool call of a refused or cut-off response is answered with (it is not run).
fn unrun_call_notice(stop: StopReason) -> &'static str {
    if stop == StopReason::Refusal {
        "The response ended in a refusal, so this tool call was not executed."
    } else {
        "The response was cut off at the output token limit (max_tokens) before it ended, so \
         this tool call was not executed: its arguments may be incomplete. Continue with a \
         shorter step, or split the work into smaller tool calls."
    }
}

/// Where a committed message came from (decides which execution events follow the append).
enum Commit<'b> {
    User,
    Assistant,
    Tool { batch_id: &'b str, index: usize },
}

/// How the round loop ended.
enum LoopEnd {
    /// A final text-only answer.
    Completed(String),
    /// Aborted; the text of the last (partial) assistant message.
    Interrupted(String),
    /// A model call failed.
    Failed(String, ProviderError),
    /// The model refused; the refusal's text and what the provider said.
    Refused(String, Refusal),
    /// The answer was cut off at the output token limit; the text written until then.
    Truncated(String),
    /// The hard context guard blocked the next call; the notice text.
    ContextLimit(String),
    /// Ask for a final answer without tools (this instruction; the fallback answer when none
    /// comes), then end with this reason.
    Summarize(RunStopReason, String, &'static str),
}

/// The state of one run.
pub(crate) struct Run<'a> {
    pub(crate) engine: &'a Engine,
    /// The provider this run calls: the engine's, or the run's override.
    pub(crate) provider: Arc<dyn Provider>,
    pub(crate) conversation: &'a mut Conversation,
    pub(crate) cancel: CancellationToken,
    pub(crate) emitter: Emitter,
    pub(crate) execution_id: String,
    /// Model/tool rounds that made a model call so far.
    pub(crate) rounds: u32,
    pub(crate) usage: Usage,
    tools_executed: Vec<String>,
    max_turns: u32,
    system: Option<String>,
    /// Serialized size of what every request carries besides messages (system prompt, tools).
    fixed_chars: u64,
    context_window: u64,
    /// Chat messages in the conversation (kept here: counting them is O(n)).
    message_count: usize,
    /// Where a new provider for the rest of the run may arrive.
    provider_switch: Option<ProviderSwitch>,
    output_schema: Option<crate::provider::OutputSchema>,
}

impl<'a> Run<'a> {
    pub(crate) fn new(
        engine: &'a Engine,
        conversation: &'a mut Conversation,
        options: RunOptions,
    ) -> Self {
        let config = &engine.config;
        let provider = options
            .provider
            .clone()
            .unwrap_or_else(|| Arc::clone(&engine.provider));
        let system = config.system_prompt.clone().or_else(|| {
            let parts: Vec<String> = conversation
                .messages()
                .filter(|message| message.role == Role::System)
                .map(Message::text)
                .filter(|text| !text.is_empty())
                .collect();
            (!parts.is_empty()).then(|| parts.join("\n\n"))
        });
        let tool_definitions = engine.tools().definitions();
        let fixed_chars = system.as_deref().map_or(0, budget::serialized_chars)
            + if tool_definitions.is_empty() {
                0
            } else {
                budget::serialized_chars(&tool_definitions)
            };
        let context_window = config
            .context_window
            .unwrap_or_else(|| provider.capabilities().context_window);
        let message_count = conversation.message_count();
        Run {
            engine,
            provider,
            conversation,
            cancel: options.cancel,
            emitter: Emitter::new(options.on_event, options.on_execution_event),
            execution_id: new_id(),
            rounds: 0,
            usage: Usage::default(),
            tools_executed: Vec::new(),
            max_turns: options.max_turns.unwrap_or(config.max_turns),
            system,
            fixed_chars,
            context_window,
            message_count,
            provider_switch: options.provider_switch,
            output_schema: options.output_schema,
        }
    }

    /// Moves the run to a provider put in its [`ProviderSwitch`] since the last model call.
    fn take_switched_provider(&mut self) {
        let Some(provider) = self.provider_switch.as_ref().and_then(ProviderSwitch::take) else {
            return;
        };
        if self.engine.config.context_window.is_none() {
            self.context_window = provider.capabilities().context_window;
        }
        self.provider = provider;
    }

    /// Runs the loop to its end and reports the outcome.
    pub(crate) async fn execute(mut self, mut input: Message) -> RunOutcome {
        input
            .metadata
            .insert("execution_id".into(), self.execution_id.clone().into());
        self.commit(input, 0, Commit::User);

        let end = self.round_loop().await;
        let mut refusal = None;
        let (response, stop_reason, error) = match end {
            LoopEnd::Completed(text) => (text, RunStopReason::Completed, None),
            LoopEnd::Interrupted(text) => (text, RunStopReason::Interrupted, None),
            LoopEnd::Failed(text, error) => (text, RunStopReason::Error, Some(error)),
            LoopEnd::Refused(text, details) => {
                refusal = Some(details);
                (text, RunStopReason::Refused, None)
            }
            LoopEnd::Truncated(text) => (text, RunStopReason::Truncated, None),
            LoopEnd::ContextLimit(text) => (text, RunStopReason::ContextLimit, None),
            LoopEnd::Summarize(reason, instruction, fallback) => {
                let summary = self.forced_summary(&instruction, fallback).await;
                let reason = if summary.interrupted {
                    RunStopReason::Interrupted
                } else if summary.refusal.is_some() {
                    RunStopReason::Refused
                } else if summary.truncated {
                    RunStopReason::Truncated
                } else {
                    reason
                };
                refusal = summary.refusal;
                (summary.text, reason, None)
            }
        };
        RunOutcome {
            response,
            interrupted: stop_reason == RunStopReason::Interrupted,
            rounds: self.rounds,
            usage: self.usage,
            stop_reason,
            error,
            refusal,
            tools_executed: self.tools_executed,
            execution_id: self.execution_id,
            structured_output: None,
            structured_output_errors: Vec::new(),
        }
    }

    async fn round_loop(&mut self) -> LoopEnd {
        let unknown_guard = self.engine.config.max_consecutive_unknown_tool_rounds;
        let mut unknown_streak = 0u32;
        let mut unknown_names = BTreeSet::new();
        loop {
            if self.cancel.is_cancelled() {
                return LoopEnd::Interrupted(String::new());
            }
            if self.max_turns > 0 && self.rounds >= self.max_turns {
                return LoopEnd::Summarize(
                    RunStopReason::MaxTurns,
                    MAX_TURNS_INSTRUCTION.into(),
                    SUMMARY_FALLBACK,
                );
            }
            let round = self.rounds + 1;
            self.take_switched_provider();

            // Hard guard: a request that cannot fit is not sent.
            let estimate = budget::estimate(self.fixed_chars, self.conversation.model_size());
            if budget::exceeds(
                estimate.estimated_tokens,
                self.context_window,
                HARD_LIMIT_RATIO,
            ) {
                let text = budget::hard_limit_notice(&estimate, self.context_window);
                let mut message = Message::assistant(
                    vec![ContentBlock::text(text.clone())],
                    MessageState::Complete,
                );
                let metadata = &mut message.metadata;
                metadata.insert("round".into(), round.into());
                metadata.insert("context_limit".into(), true.into());
                metadata.insert("estimated_tokens".into(), estimate.estimated_tokens.into());
                metadata.insert("max_tokens".into(), self.context_window.into());
                metadata.insert(
                    "serialized_estimate".into(),
                    estimate.serialized_tokens.into(),
                );
                metadata.insert(
                    "provider_usage_floor".into(),
                    estimate.provider_usage_floor.into(),
                );
                metadata.insert("threshold".into(), HARD_LIMIT_RATIO.into());
                self.commit_assistant(round, message);
                return LoopEnd::ContextLimit(text);
            }

            if round > 1 {
                self.emitter.event(|| EngineEvent::TextDelta {
                    text: "\n\n".into(),
                });
            }
            self.rounds = round;
            let request = self.request(self.conversation.messages_for_model(), true);
            let call = self.call_model(round, request).await;
            let response = match call.result {
                Ok(response) => response,
                Err(error) => {
                    let text = call.streamed_text;
                    if self.cancel.is_cancelled() {
                        // A call that failed because of the abort is an interruption, not an error.
                        self.commit_partial(round, text.clone(), None);
                        return LoopEnd::Interrupted(text);
                    }
                    if !text.is_empty() {
                        self.commit_partial(round, text.clone(), Some(&error));
                    }
                    return LoopEnd::Failed(text, error);
                }
            };
            self.usage.add(&response.usage);
            let interrupted =
                response.stop_reason == StopReason::Aborted || self.cancel.is_cancelled();
            let stop = if interrupted {
                StopReason::Aborted
            } else {
                response.stop_reason
            };
            let holds_nothing = response.tool_calls.is_empty()
                && response.text.trim().is_empty()
                && response.server_blocks.is_empty();
            if holds_nothing && matches!(stop, StopReason::EndTurn | StopReason::StopSequence)
                || holds_nothing && stop == StopReason::PauseTurn && response.thinking.is_empty()
            {
                // Nothing to show and nothing to do: the reply is not stored (an empty assistant
                // message is rejected by providers later) and the model is asked once more.
                // (A refusal or a cut-off answer is an outcome of its own, even when empty.)
                return LoopEnd::Summarize(
                    RunStopReason::Completed,
                    EMPTY_REPLY_INSTRUCTION.into(),
                    EMPTY_REPLY_FALLBACK,
                );
            }

            let state = if interrupted {
                MessageState::Interrupted
            } else {
                MessageState::Complete
            };
            let (message, mut calls) =
                assistant_message(&response, state, round, self.provider.model());
            let text = message.text();
            let assistant_chars = budget::serialized_chars(&message);
            self.commit_assistant(round, message);
            if stop == StopReason::Refusal || stop == StopReason::MaxTokens {
                // Tool calls of a refused or cut-off response are not trusted to be whole: each
                // is answered as not executed, and the run ends with the outcome.
                for call in &mut calls {
                    call.problem = Some(unrun_call_notice(stop).to_string());
                    call.problem_code = Some(TRUNCATED_RESPONSE);
                }
            }
            if calls.is_empty() {
                return match stop {
                    StopReason::Aborted => LoopEnd::Interrupted(text),
                    StopReason::Refusal => {
                        LoopEnd::Refused(text, response.refusal.clone().unwrap_or_default())
                    }
                    StopReason::MaxTokens => LoopEnd::Truncated(text),
                    // The provider paused a long turn (server tools): sending the conversation
                    // back as it is lets the model continue in the next call.
                    StopReason::PauseTurn => continue,
                    _ => LoopEnd::Completed(text),
                };
            }

            let batch_id = format!("round-{round}");
            let results = self
                .run_tool_batch(round, &batch_id, &calls, interrupted)
                .await;
            let mut requested_unknown = false;
            for (call, result) in calls.iter().zip(&results) {
                if result.executed {
                    self.tools_executed.push(call.name.clone());
                }
                if result.error_code() == Some(UNKNOWN_TOOL) {
                    requested_unknown = true;
                    unknown_names.insert(call.name.clone());
                }
            }
            let mut tool_budget = ToolResultBudget::new(
                self.context_window,
                estimate.serialized_chars + assistant_chars,
                response.usage.total_tokens(),
            );
            self.commit_tool_results(round, &batch_id, &calls, results, &mut tool_budget);

            if interrupted || self.cancel.is_cancelled() {
                return LoopEnd::Interrupted(text);
            }
            match stop {
                StopReason::Refusal => {
                    return LoopEnd::Refused(text, response.refusal.clone().unwrap_or_default())
                }
                StopReason::MaxTokens => return LoopEnd::Truncated(text),
                _ => {}
            }
            if requested_unknown {
                unknown_streak += 1;
                if unknown_guard > 0 && unknown_streak >= unknown_guard {
                    return LoopEnd::Summarize(
                        RunStopReason::UnknownTools,
                        unknown_tools_instruction(&unknown_names),
                        SUMMARY_FALLBACK,
                    );
                }
            } else {
                unknown_streak = 0;
                unknown_names.clear();
            }
        }
    }

    /// The request for a model call; `with_tools: false` for the forced summary.
    pub(crate) fn request(&self, messages: Vec<Arc<Message>>, with_tools: bool) -> ProviderRequest {
        let config = &self.engine.config;
        // The tools of this moment: they may have changed since the run began.
        let tool_definitions = self.engine.tools().definitions();
        ProviderRequest {
            system: self.system.clone(),
            messages,
            // A tool-less call still sends the definitions when the history may hold tool
            // calls (providers reject tool_use blocks without them), forbidding their use instead.
            tools: tool_definitions.clone(),
            tool_choice: if with_tools || tool_definitions.is_empty() {
                None
            } else {
                Some(ToolChoice::None)
            },
            max_tokens: config.max_tokens,
            temperature: config.temperature,
            thinking: config.thinking,
            output_schema: self.output_schema.clone(),
        }
    }

    /// Commits one tool message per call, in call order. Once the context budget is exhausted,
    /// the remaining calls' results are replaced by a short notice (the loop goes on, so the model
    /// can answer from what it has or ask again).
    fn commit_tool_results(
        &mut self,
        round: u32,
        batch_id: &str,
        calls: &[ParsedCall],
        results: Vec<CallResult>,
        tool_budget: &mut ToolResultBudget,
    ) {
        let mut overflowed = false;
        for (index, (call, result)) in calls.iter().zip(results).enumerate() {
            let mut message = if overflowed {
                Message::tool_result(call.id.clone(), CONTEXT_OVERFLOW_TOOL_RESULT, true)
            } else {
                Message::tool_result(
                    call.id.clone(),
                    result.output.content,
                    result.output.is_error,
                )
            };
            message.metadata.insert("round".into(), round.into());
            message
                .metadata
                .insert("tool_name".into(), call.name.clone().into());
            if overflowed {
                message
                    .metadata
                    .insert("error_code".into(), "context_overflow".into());
            } else if let Some(code) = result.metadata.get("error_code") {
                message.metadata.insert("error_code".into(), code.clone());
            }
            if !overflowed && tool_budget.add(&message) {
                overflowed = true;
            }
            self.commit(message, round, Commit::Tool { batch_id, index });
        }
    }

    /// Commits an assistant message cut short by an abort or a provider failure.
    pub(crate) fn commit_partial(
        &mut self,
        round: u32,
        text: String,
        error: Option<&ProviderError>,
    ) {
        let content = if text.is_empty() {
            Vec::new()
        } else {
            vec![ContentBlock::text(text)]
        };
        let mut message = Message::assistant(content, MessageState::Interrupted);
        message.metadata.insert("round".into(), round.into());
        message
            .metadata
            .insert("model".into(), self.provider.model().into());
        match error {
            Some(error) => {
                message
                    .metadata
                    .insert(PROVIDER_ERROR_METADATA.into(), true.into());
                message
                    .metadata
                    .insert("error_kind".into(), error.kind.as_str().into());
                message
                    .metadata
                    .insert("error".into(), error.message.clone().into());
            }
            None => {
                message.metadata.insert(
                    "stop_reason".into(),
                    serde_json::to_value(StopReason::Aborted).unwrap_or_default(),
                );
            }
        }
        self.commit_assistant(round, message);
    }

    /// Commits an assistant message.
    pub(crate) fn commit_assistant(&mut self, round: u32, message: Message) {
        self.commit(message, round, Commit::Assistant);
    }

    /// The one place messages enter the conversation; reports the append.
    fn commit(&mut self, message: Message, round: u32, kind: Commit<'_>) {
        let index = self.message_count;
        self.message_count += 1;
        let stored = self.conversation.push(message);
        let emitter = &self.emitter;
        let execution_id = self.execution_id.as_str();
        emitter.execution(|| ExecutionEvent::HistoryMutation {
            execution_id: execution_id.to_string(),
            round,
            mutation: HistoryMutation::AppendMessage,
            index,
            message: stored.clone(),
        });
        match kind {
            Commit::User => {}
            Commit::Assistant => {
                emitter.execution(|| ExecutionEvent::AssistantMessageCommitted {
                    execution_id: execution_id.to_string(),
                    round,
                    message: stored.clone(),
                });
                emitter.event(|| EngineEvent::AssistantMessage {
                    message: stored.clone(),
                });
            }
            Commit::Tool {
                batch_id,
                index: call_index,
            } => emitter.execution(|| ExecutionEvent::ToolMessageCommitted {
                execution_id: execution_id.to_string(),
                round,
                batch_id: batch_id.to_string(),
                index: call_index,
                message: stored.clone(),
            }),
        }
    }
}
