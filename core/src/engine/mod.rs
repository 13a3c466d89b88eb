//! The execution loop: rounds of "call the model, run the tools it asked for" until the model
//! answers, with streaming, abort, tool batches, context budgets and the forced final summary.
//!
//! The engine knows nothing of files, settings or sessions: it reads and appends to a
//! [`Conversation`] the caller owns, talks to one [`Provider`], and runs tools from one
//! [`ToolRegistry`]. Everything it does is reported as it happens, to user interfaces through
//! [`EngineEvent`]s and to session logs through [`ExecutionEvent`]s (the replay boundary events).
//!
//! ```no_run
//! # async fn demo() {
//! use std::sync::Arc;
//! use robota::engine::{Engine, EngineConfig, RunOptions};
//! use robota::message::{Conversation, Message};
//! use robota::provider::scripted::{ScriptedProvider, ScriptedTurn};
//! use robota::tools::ToolRegistry;
//!
//! let provider = Arc::new(ScriptedProvider::new(vec![ScriptedTurn::text("Hello!")]));
//! let engine = Engine::new(provider, ToolRegistry::new(), EngineConfig::default());
//! let mut conversation = Conversation::new();
//! let outcome = engine
//!     .run(&mut conversation, Message::user("Hi"), RunOptions::new())
//!     .await;
//! assert_eq!(outcome.response, "Hello!");
//! # }
//! ```
//!
//! Tool-call ids: every call of a response is answered by exactly one result, in call order. A
//! response in which two calls share an id (or a call has none) cannot be answered that way, and
//! both wire formats refuse such a history, so the engine gives the later calls unique ids
//! (`<id>_2`, …) before anything else sees them; the assistant message records the renaming under
//! [`RENAMED_TOOL_CALL_IDS`]. Distinct ids are kept verbatim.
//!
//! Modules: [`config`] (settings, options, outcome), [`events`] (what is reported), [`gate`]
//! (approving tool calls from the layer above), `run` (the
//! loop and the commit path), `round` (one model call), `tool_batch` (scheduling tool calls),
//! `budget` (context estimates), `summary` (the forced final answer), `recorder` (JSONL logs).

pub mod config;
pub mod events;
pub mod gate;

pub(crate) mod budget;
mod recorder;
mod round;
mod run;
mod summary;
pub(crate) mod tool_batch;

use std::sync::Arc;

pub use budget::{
    CHARS_PER_TOKEN, CONTEXT_OVERFLOW_TOOL_RESULT, HARD_LIMIT_RATIO, TOOL_RESULT_BUDGET_RATIO,
};
pub use config::{
    EngineConfig, EventCallback, ExecutionEventCallback, ProviderSwitch, RunOptions, RunOutcome,
    RunStopReason, StructuredOutputError, DEFAULT_MAX_CONSECUTIVE_UNKNOWN_TOOL_ROUNDS,
    DEFAULT_MAX_TOOL_CONCURRENCY, DEFAULT_MAX_TURNS, DEFAULT_TOOL_ABORT_GRACE,
};
pub use events::{BatchMode, EngineEvent, ExecutionEvent, HistoryMutation};
pub use gate::{GateCall, GateDecision, ToolCallGate};
pub use recorder::JsonlRecorder;
pub use round::RENAMED_TOOL_CALL_IDS;
pub use summary::{
    CONTINUE_PROMPT, EMPTY_REPLY_FALLBACK, EMPTY_REPLY_INSTRUCTION, MAX_TURNS_INSTRUCTION,
    SUMMARY_FALLBACK,
};
pub use tool_batch::INTERRUPTED_RESULT;

use crate::message::{Conversation, Message};
use crate::provider::Provider;
use crate::tools::ToolRegistry;

/// The execution loop bound to one provider, one set of tools and one configuration.
///
/// An `Engine` holds no per-conversation state, so one engine can serve many conversations, also
/// concurrently (each [`Engine::run`] borrows its own [`Conversation`]). Its tools can change
/// while it runs ([`Engine::update_tools`]; an MCP server's `tools/list_changed`): each model
/// request offers the tools of that moment. Clones share the tools.
#[derive(Clone)]
pub struct Engine {
    provider: Arc<dyn Provider>,
    tools: Arc<std::sync::RwLock<ToolRegistry>>,
    config: EngineConfig,
    gate: Option<Arc<dyn ToolCallGate>>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("provider", &self.provider.name())
            .field("model", &self.provider.model())
            .field("tools", &self.tools())
            .field("config", &self.config)
            .field("tool_gate", &self.gate.is_some())
            .finish()
    }
}

impl Engine {
    /// An engine that calls `provider` and may run `tools`.
    pub fn new(provider: Arc<dyn Provider>, tools: ToolRegistry, config: EngineConfig) -> Self {
        Engine {
            provider,
            tools: Arc::new(std::sync::RwLock::new(tools)),
            config,
            gate: None,
        }
    }

    /// Routes every tool call through `gate` before it runs (and its result after).
    pub fn with_tool_gate(mut self, gate: Arc<dyn ToolCallGate>) -> Self {
        self.gate = Some(gate);
        self
    }

    /// The tool-call gate, if one is set.
    pub fn tool_gate(&self) -> Option<&Arc<dyn ToolCallGate>> {
        self.gate.as_ref()
    }

    /// The provider.
    pub fn provider(&self) -> &Arc<dyn Provider> {
        &self.provider
    }

    /// The tools now (a snapshot; cheap: the tools are shared).
    pub fn tools(&self) -> ToolRegistry {
        self.tools
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// The engine's tools, held weakly, for a listener that changes them from outside.
    pub(crate) fn shared_tools(&self) -> std::sync::Weak<std::sync::RwLock<ToolRegistry>> {
        Arc::downgrade(&self.tools)
    }

    /// Changes the tools; the next model request of every run offers the new set.
    pub fn update_tools(&self, change: impl FnOnce(&mut ToolRegistry)) {
        change(
            &mut self
                .tools
                .write()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        );
    }

    /// The configuration.
    pub fn config(&self) -> &EngineConfig {
        &self.config
    }

    /// Appends `input` to `conversation` and runs rounds until the model answers without calling
    /// tools, the round cap is reached, the run is aborted or a model call fails.
    ///
    /// Never panics on anything from outside and never returns early with a half-written
    /// history: whatever ends the run, every tool call in the conversation has its result and
    /// the outcome says why the run stopped. An abort (through `options.cancel`) returns
    /// normally with `interrupted = true`.
    pub async fn run(
        &self,
        conversation: &mut Conversation,
        input: Message,
        options: RunOptions,
    ) -> RunOutcome {
        run::Run::new(self, conversation, options)
            .execute(input)
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send<T: Send>(_: T) {}

    #[test]
    fn the_run_future_can_be_spawned() {
        let provider = Arc::new(crate::provider::scripted::ScriptedProvider::new(Vec::new()));
        let engine = Engine::new(provider, ToolRegistry::new(), EngineConfig::default());
        let mut conversation = Conversation::new();
        // Only the type is checked: a run must be usable from `tokio::spawn`.
        assert_send(engine.run(&mut conversation, Message::user("hi"), RunOptions::new()));
    }
}
