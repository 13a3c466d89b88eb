//! The engine's knobs ([`EngineConfig`]), the per-run options ([`RunOptions`]) and what a run
//! returns ([`RunOutcome`]).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use super::events::{EngineEvent, ExecutionEvent};
use crate::message::{ProviderError, Usage};
use crate::provider::{Refusal, ThinkingConfig};

/// Round cap used when the configuration does not set one (the TypeScript core default).
pub const DEFAULT_MAX_TURNS: u32 = 10;

/// How many read-only tool calls run at the same time by default.
pub const DEFAULT_MAX_TOOL_CONCURRENCY: usize = 5;

/// How many consecutive rounds may request unregistered tools before the loop gives up on tools.
pub const DEFAULT_MAX_CONSECUTIVE_UNKNOWN_TOOL_ROUNDS: u32 = 2;

/// How long a running tool may keep going after an abort before the engine stops waiting for it.
pub const DEFAULT_TOOL_ABORT_GRACE: Duration = Duration::from_secs(5);

/// Settings that hold for every run of one [`Engine`](super::Engine).
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// System prompt sent with every model call. When `None`, the text of the conversation's
    /// system messages (if any) is used instead.
    pub system_prompt: Option<String>,
    /// Most model/tool rounds per run; `0` means no cap (abort, the context guard and the host's
    /// own controls are then what stop a runaway loop). [`RunOptions::max_turns`] overrides it.
    pub max_turns: u32,
    /// Most read-only tool calls running at once. Values below 1 are treated as 1.
    pub max_tool_concurrency: usize,
    /// Output token cap per model call; the provider's default when `None`.
    pub max_tokens: Option<u32>,
    /// Sampling temperature.
    pub temperature: Option<f32>,
    /// Extended thinking, for providers that support it.
    pub thinking: Option<ThinkingConfig>,
    /// Context window in tokens used by the context guards; `None` asks the provider's
    /// [`capabilities`](crate::provider::Provider::capabilities). `Some(0)` turns the guards off.
    pub context_window: Option<u64>,
    /// Working directory handed to tools.
    pub cwd: PathBuf,
    /// After this many consecutive rounds in which the model called unregistered tools, the loop
    /// stops offering tools and asks the model to answer. `0` turns the guard off.
    pub max_consecutive_unknown_tool_rounds: u32,
    /// After an abort, how long the engine waits for running tools to notice the cancellation
    /// before it stops waiting and records them as interrupted. Tools that honour
    /// [`ToolContext::cancel`](crate::tools::ToolContext) return well within this.
    pub tool_abort_grace: Duration,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            system_prompt: None,
            max_turns: DEFAULT_MAX_TURNS,
            max_tool_concurrency: DEFAULT_MAX_TOOL_CONCURRENCY,
            max_tokens: None,
            temperature: None,
            thinking: None,
            context_window: None,
            cwd: PathBuf::from("."),
            max_consecutive_unknown_tool_rounds: DEFAULT_MAX_CONSECUTIVE_UNKNOWN_TOOL_ROUNDS,
            tool_abort_grace: DEFAULT_TOOL_ABORT_GRACE,
        }
    }
}

/// Receives [`EngineEvent`]s (what a user interface shows) as they happen.
pub type EventCallback = Arc<dyn Fn(EngineEvent) + Send + Sync>;

/// Receives [`ExecutionEvent`]s (the replay boundary events a session log records).
pub type ExecutionEventCallback = Arc<dyn Fn(ExecutionEvent) + Send + Sync>;

/// Options for one [`Engine::run`](super::Engine::run).
///
/// Callbacks are called on the task that drives the run, in order, and must return quickly: the
/// engine waits for them. A callback that panics is ignored (the event is lost, the run goes on).
#[derive(Clone, Default)]
pub struct RunOptions {
    /// Fires to abort the run. The run then returns normally with `interrupted = true`.
    pub cancel: CancellationToken,
    /// Streaming and progress events.
    pub on_event: Option<EventCallback>,
    /// Replay boundary events (provider requests and responses, commits, tool batches).
    pub on_execution_event: Option<ExecutionEventCallback>,
    /// Overrides [`EngineConfig::max_turns`] for this run (`0` = no cap).
    pub max_turns: Option<u32>,
    /// Calls this provider instead of the engine's for this run (e.g. the same provider on
    /// another model, for a skill or custom command that names its `model`).
    pub provider: Option<Arc<dyn crate::provider::Provider>>,
    /// Lets something outside the run (a tool call of the run) send the rest of the run to
    /// another provider; see [`ProviderSwitch`].
    pub provider_switch: Option<ProviderSwitch>,
    /// The JSON Schema the final answer must match, sent to providers with native structured
    /// output (validation is the caller's: the session layer's `structured_output` module).
    pub output_schema: Option<crate::provider::OutputSchema>,
}

/// A handle through which the provider of a run in progress is replaced: every model call of the
/// run after [`set`](Self::set) goes to the new provider. It exists for a skill the model
/// activates that names its `model` (Claude Code runs the rest of that turn on it); the run's
/// context window follows the new provider unless the engine configuration fixes one.
#[derive(Clone, Default)]
pub struct ProviderSwitch(Arc<std::sync::Mutex<Option<Arc<dyn crate::provider::Provider>>>>);

impl ProviderSwitch {
    /// A switch nothing has been put in.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sends the run's next model calls to `provider`.
    pub fn set(&self, provider: Arc<dyn crate::provider::Provider>) {
        *self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(provider);
    }

    /// The provider put in since the last call, if any (the run takes it before a model call).
    pub(crate) fn take(&self) -> Option<Arc<dyn crate::provider::Provider>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
    }
}

impl std::fmt::Debug for ProviderSwitch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let pending = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .as_ref()
            .map(|p| p.model().to_string());
        f.debug_struct("ProviderSwitch")
            .field("pending_model", &pending)
            .finish()
    }
}

impl RunOptions {
    /// Options with a fresh cancellation token and no callbacks.
    pub fn new() -> Self {
        Self::default()
    }

    /// Uses `cancel` to abort the run.
    pub fn with_cancel(mut self, cancel: CancellationToken) -> Self {
        self.cancel = cancel;
        self
    }

    /// Sends [`EngineEvent`]s to `callback`.
    pub fn with_on_event(mut self, callback: impl Fn(EngineEvent) + Send + Sync + 'static) -> Self {
        self.on_event = Some(Arc::new(callback));
        self
    }

    /// Sends [`ExecutionEvent`]s to `callback`.
    pub fn with_on_execution_event(
        mut self,
        callback: impl Fn(ExecutionEvent) + Send + Sync + 'static,
    ) -> Self {
        self.on_execution_event = Some(Arc::new(callback));
        self
    }

    /// Calls `provider` instead of the engine's provider for this run.
    pub fn with_provider(mut self, provider: Arc<dyn crate::provider::Provider>) -> Self {
        self.provider = Some(provider);
        self
    }

    /// Lets `switch` replace the provider while the run goes on.
    pub fn with_provider_switch(mut self, switch: ProviderSwitch) -> Self {
        self.provider_switch = Some(switch);
        self
    }

    /// Asks providers with native structured output to shape the answer by `schema`.
    pub fn with_output_schema(mut self, schema: Option<crate::provider::OutputSchema>) -> Self {
        self.output_schema = schema;
        self
    }

    /// Caps this run at `max_turns` rounds (`0` = no cap).
    pub fn with_max_turns(mut self, max_turns: u32) -> Self {
        self.max_turns = Some(max_turns);
        self
    }
}

impl std::fmt::Debug for RunOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunOptions")
            .field("cancelled", &self.cancel.is_cancelled())
            .field("on_event", &self.on_event.is_some())
            .field("on_execution_event", &self.on_execution_event.is_some())
            .field("max_turns", &self.max_turns)
            .field(
                "model",
                &self.provider.as_ref().map(|p| p.model().to_string()),
            )
            .finish()
    }
}

/// One way a structured answer does not match its JSON Schema (see
/// [`RunOutcome::structured_output_errors`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StructuredOutputError {
    /// Where in the answer (a JSON Pointer; empty for the whole answer).
    pub path: String,
    /// What is wrong there.
    pub message: String,
}

impl std::fmt::Display for StructuredOutputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let path = if self.path.is_empty() {
            "(root)"
        } else {
            &self.path
        };
        write!(f, "{path}: {}", self.message)
    }
}

/// Why a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStopReason {
    /// The model answered without calling tools.
    Completed,
    /// The run was aborted through its cancellation token.
    Interrupted,
    /// The round cap was reached; the response is the model's summary of where it got to.
    MaxTurns,
    /// The model kept calling unregistered tools; the response is its answer without tools.
    UnknownTools,
    /// The conversation no longer fits the context window; the response explains this.
    ContextLimit,
    /// A model call failed; see [`RunOutcome::error`].
    Error,
    /// The model refused to answer; see [`RunOutcome::refusal`]. Never retried or re-asked.
    Refused,
    /// The answer was cut off at the output token limit (`max_tokens` / `length`); the response
    /// is what was written until then. Tool calls of the cut-off response were not run. Send a
    /// continuation (for example [`CONTINUE_PROMPT`](crate::engine::CONTINUE_PROMPT)) to have
    /// the model go on, or raise the limit.
    Truncated,
    /// The answer still did not match the structured output schema after the allowed
    /// follow-ups; [`RunOutcome::structured_output_errors`] has the last validation errors.
    MaxStructuredOutputRetries,
}

impl RunStopReason {
    /// Stable snake_case name, as in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            RunStopReason::Completed => "completed",
            RunStopReason::Interrupted => "interrupted",
            RunStopReason::MaxTurns => "max_turns",
            RunStopReason::UnknownTools => "unknown_tools",
            RunStopReason::ContextLimit => "context_limit",
            RunStopReason::Error => "error",
            RunStopReason::Refused => "refused",
            RunStopReason::Truncated => "truncated",
            RunStopReason::MaxStructuredOutputRetries => "max_structured_output_retries",
        }
    }
}

/// What a run produced. Every message it created is already in the conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunOutcome {
    /// The final answer text: the last answer, the forced summary, the context-limit notice, or
    /// (when interrupted or failed) whatever text had streamed in the last model call.
    pub response: String,
    /// True when the run was aborted.
    pub interrupted: bool,
    /// Model calls made (every round, a forced summary and a `pause_turn` continuation
    /// included); the `num_turns` of results.
    pub rounds: u32,
    /// Tokens used by every model call of the run, summed.
    pub usage: Usage,
    /// Why the run ended.
    pub stop_reason: RunStopReason,
    /// The provider error that ended the run, when `stop_reason` is `error`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ProviderError>,
    /// What the provider said about the refusal, when `stop_reason` is `refused`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refusal: Option<Refusal>,
    /// Names of the tools that were executed, in call order (calls that were not executed, such as
    /// unknown tools or calls skipped by an abort, are not listed).
    pub tools_executed: Vec<String>,
    /// Id of this run; every [`ExecutionEvent`] of the run carries it.
    pub execution_id: String,
    /// The answer parsed and validated against the prompt's structured output schema (by the
    /// session layer's `structured_output` module); `None` without a schema or when it never
    /// matched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_output: Option<serde_json::Value>,
    /// The last validation errors, when the stop reason is `max_structured_output_retries`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub structured_output_errors: Vec<StructuredOutputError>,
}
