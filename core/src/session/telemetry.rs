//! Which moments of a session become OpenTelemetry spans and metrics (when the host configured
//! telemetry; a session without it holds none of this and builds nothing).
//!
//! - a prompt: `invoke_agent robota`, the root of the turn, a child of the host's `traceparent`;
//! - each model call: `chat {model}` (GenAI semantic conventions), from the engine's
//!   `provider_request` / `provider_response` / `provider_error` execution events;
//! - each tool call: `execute_tool {tool}`, from `tool_execution_request` / `_result`, failed
//!   (and denied) calls with error status;
//! - each hook handler: `hook {event}`, reported by the hook runner after it ran;
//! - each compaction: `compaction`;
//! - a subagent: `invoke_agent {agent type}`, a child of the `Task` call's span, with its own
//!   model and tool calls under it.
//!
//! The spans hang on events the session already produces; the only state kept is the spans
//! still open, keyed by the ids those events carry.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use super::error::SessionError;
use super::usage::PriceTable;
use crate::engine::{ExecutionEvent, RunOutcome, RunStopReason};
use crate::hooks::{CompactTrigger, HandlerReport, HandlerStatus, HookEvent, HookObserver};
use crate::telemetry::{
    Attribute, ModelCallMetrics, SpanRole, Telemetry, TelemetryError, TraceParent, TraceSpan,
};

/// A span still open, with when it started (for the duration metrics).
struct OpenSpan {
    span: TraceSpan,
    started: Instant,
    /// The request's model (model calls) or the tool's name (tool calls).
    name: String,
}

/// One session's tracing state.
pub(crate) struct SessionTelemetry {
    telemetry: Telemetry,
    session_id: String,
    prices: PriceTable,
    /// The host's span (from `traceparent`), the parent of every prompt.
    host_parent: Mutex<Option<TraceSpan>>,
    /// The host's span for the next prompt only (a per-prompt `traceparent`).
    next_parent: Mutex<Option<TraceSpan>>,
    /// The prompt in progress: the parent of its model calls, tool calls, hooks and compaction.
    prompt: Mutex<Option<TraceSpan>>,
    /// Model and tool calls in progress, by `chat/{execution id}/{round}` and
    /// `tool/{tool call id}`.
    open: Mutex<HashMap<String, OpenSpan>>,
}

impl std::fmt::Debug for SessionTelemetry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionTelemetry")
            .field("session_id", &self.session_id)
            .finish_non_exhaustive()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

fn invalid(error: TelemetryError) -> SessionError {
    SessionError::InvalidTelemetry {
        message: error.to_string(),
    }
}

/// The first line of `text`, at most 200 characters (span status messages stay short).
fn first_line(text: &str) -> String {
    text.lines()
        .next()
        .unwrap_or("")
        .chars()
        .take(200)
        .collect()
}

fn wire<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

impl SessionTelemetry {
    pub(crate) fn new(
        telemetry: Telemetry,
        session_id: String,
        prices: PriceTable,
        parent: Option<&TraceParent>,
    ) -> Result<SessionTelemetry, SessionError> {
        let traced = SessionTelemetry {
            telemetry,
            session_id,
            prices,
            host_parent: Mutex::new(None),
            next_parent: Mutex::new(None),
            prompt: Mutex::new(None),
            open: Mutex::new(HashMap::new()),
        };
        traced.set_trace_parent(parent)?;
        Ok(traced)
    }

    /// Makes `parent` (the host's span) the parent of the following prompts; `None`: each
    /// prompt starts a trace of its own.
    pub(crate) fn set_trace_parent(
        &self,
        parent: Option<&TraceParent>,
    ) -> Result<(), SessionError> {
        let span = parent.map(|p| self.remote(p)).transpose()?;
        *lock(&self.host_parent) = span;
        Ok(())
    }

    /// Makes `parent` the parent of the next prompt only.
    pub(crate) fn set_next_trace_parent(&self, parent: &TraceParent) -> Result<(), SessionError> {
        let span = self.remote(parent)?;
        *lock(&self.next_parent) = Some(span);
        Ok(())
    }

    fn remote(&self, parent: &TraceParent) -> Result<TraceSpan, SessionError> {
        parent.validate().map_err(invalid)?;
        self.telemetry
            .remote_parent(parent)
            .ok_or_else(|| SessionError::InvalidTelemetry {
                message: format!("traceparent `{}` could not be read", parent.traceparent),
            })
    }

    /// The span new work outside a model or tool call hangs under: the prompt in progress, else
    /// the host's span.
    fn current_parent(&self) -> Option<TraceSpan> {
        lock(&self.prompt)
            .clone()
            .or_else(|| lock(&self.host_parent).clone())
    }

    /// Starts the span of a prompt on `model` (by `provider`).
    pub(crate) fn begin_prompt(&self, provider: &str, model: &str) -> TraceSpan {
        let parent = lock(&self.next_parent)
            .take()
            .or_else(|| lock(&self.host_parent).clone());
        let span = self.telemetry.start_span(
            "invoke_agent robota".into(),
            SpanRole::Internal,
            parent.as_ref(),
            None,
            vec![
                ("gen_ai.operation.name", "invoke_agent".into()),
                ("gen_ai.agent.name", "robota".into()),
                ("gen_ai.conversation.id", self.session_id.clone().into()),
                ("gen_ai.provider.name", provider.into()),
                ("gen_ai.request.model", model.into()),
            ],
        );
        *lock(&self.prompt) = Some(span.clone());
        span
    }

    /// Ends a prompt's span with what the run came to.
    pub(crate) fn end_prompt(&self, span: TraceSpan, result: &Result<RunOutcome, SessionError>) {
        *lock(&self.prompt) = None;
        match result {
            Ok(outcome) => {
                span.set_attributes(outcome_attributes(outcome));
                if outcome.stop_reason == RunStopReason::Error {
                    let message = outcome
                        .error
                        .as_ref()
                        .map_or_else(|| "the run failed".to_string(), |e| e.message.clone());
                    span.set_error(&first_line(&message));
                }
            }
            Err(error) => span.set_error(&first_line(&error.to_string())),
        }
        span.end(None);
    }

    /// Starts the span of a subagent run: a child of the span of the tool call that started it
    /// (`Task`), else of the prompt in progress.
    pub(crate) fn begin_subagent(
        &self,
        parent_tool_use_id: Option<&str>,
        agent_type: &str,
        agent_id: &str,
        model: &str,
    ) -> TraceSpan {
        let parent = parent_tool_use_id
            .and_then(|id| {
                lock(&self.open)
                    .get(&format!("tool/{id}"))
                    .map(|open| open.span.clone())
            })
            .or_else(|| self.current_parent());
        self.telemetry.start_span(
            format!("invoke_agent {agent_type}"),
            SpanRole::Internal,
            parent.as_ref(),
            None,
            vec![
                ("gen_ai.operation.name", "invoke_agent".into()),
                ("gen_ai.agent.name", agent_type.into()),
                ("gen_ai.agent.id", agent_id.into()),
                ("gen_ai.conversation.id", self.session_id.clone().into()),
                ("gen_ai.request.model", model.into()),
            ],
        )
    }

    /// Ends a subagent's span.
    pub(crate) fn end_subagent(&self, span: TraceSpan, outcome: &RunOutcome) {
        span.set_attributes(outcome_attributes(outcome));
        if let Some(error) = &outcome.error {
            span.set_error(&first_line(&error.message));
        }
        span.end(None);
    }

    /// Records a compaction that started at `started`.
    pub(crate) fn compaction<T>(
        &self,
        trigger: CompactTrigger,
        started: SystemTime,
        result: &Result<T, SessionError>,
        tokens: impl FnOnce(&T) -> (u64, u64),
    ) {
        let parent = self.current_parent();
        let span = self.telemetry.start_span(
            "compaction".into(),
            SpanRole::Internal,
            parent.as_ref(),
            Some(started),
            vec![
                ("robota.compaction.trigger", wire(&trigger).into()),
                ("gen_ai.conversation.id", self.session_id.clone().into()),
            ],
        );
        match result {
            Ok(summary) => {
                let (before, after) = tokens(summary);
                span.set_attributes(vec![
                    ("robota.compaction.tokens_before", before.into()),
                    ("robota.compaction.tokens_after", after.into()),
                ]);
            }
            Err(error) => span.set_error(&first_line(&error.to_string())),
        }
        span.end(None);
    }

    /// What turns the engine's execution events of one run into spans: model and tool calls
    /// hang under `parent` (the prompt's span, or a subagent's).
    pub(crate) fn execution_observer(
        self: &Arc<Self>,
        parent: Option<TraceSpan>,
    ) -> ExecutionTracer {
        ExecutionTracer {
            session: Arc::clone(self),
            parent: parent.or_else(|| self.current_parent()),
        }
    }

    /// Sends what has ended so far, waiting the configured timeout at most (on a blocking
    /// thread when called from async code). True when the exporters finished in time.
    pub(crate) async fn flush(&self) -> bool {
        let telemetry = self.telemetry.clone();
        match tokio::runtime::Handle::try_current() {
            Ok(_) => tokio::task::spawn_blocking(move || telemetry.flush())
                .await
                .unwrap_or(false),
            Err(_) => telemetry.flush(),
        }
    }
}

fn outcome_attributes(outcome: &RunOutcome) -> Vec<Attribute> {
    vec![
        ("robota.stop_reason", wire(&outcome.stop_reason).into()),
        ("robota.rounds", outcome.rounds.into()),
        ("robota.interrupted", outcome.interrupted.into()),
        (
            "gen_ai.usage.input_tokens",
            (outcome.usage.input_tokens
                + outcome.usage.cache_read_input_tokens
                + outcome.usage.cache_creation_input_tokens)
                .into(),
        ),
        (
            "gen_ai.usage.output_tokens",
            outcome.usage.output_tokens.into(),
        ),
    ]
}

/// Spans for one run's model and tool calls (see [`SessionTelemetry::execution_observer`]).
#[derive(Clone)]
pub(crate) struct ExecutionTracer {
    session: Arc<SessionTelemetry>,
    parent: Option<TraceSpan>,
}

impl ExecutionTracer {
    /// Opens or closes the span `event` marks (other events pass).
    pub(crate) fn observe(&self, event: &ExecutionEvent) {
        let session = &self.session;
        match event {
            ExecutionEvent::ProviderRequest {
                execution_id,
                round,
                provider,
                model,
                request,
            } => {
                let mut attributes: Vec<Attribute> = vec![
                    ("gen_ai.operation.name", "chat".into()),
                    ("gen_ai.provider.name", provider.clone().into()),
                    ("gen_ai.system", provider.clone().into()),
                    ("gen_ai.request.model", model.clone().into()),
                    ("robota.round", (*round).into()),
                ];
                if let Some(max_tokens) = request.max_tokens {
                    attributes.push(("gen_ai.request.max_tokens", max_tokens.into()));
                }
                let span = session.telemetry.start_span(
                    format!("chat {model}"),
                    SpanRole::Client,
                    self.parent.as_ref(),
                    None,
                    attributes,
                );
                lock(&session.open).insert(
                    format!("chat/{execution_id}/{round}"),
                    OpenSpan {
                        span,
                        started: Instant::now(),
                        name: model.clone(),
                    },
                );
            }
            ExecutionEvent::ProviderResponse {
                execution_id,
                round,
                provider,
                response,
                ..
            } => {
                let Some(open) =
                    lock(&session.open).remove(&format!("chat/{execution_id}/{round}"))
                else {
                    return;
                };
                let model = if response.model.is_empty() {
                    open.name.as_str()
                } else {
                    response.model.as_str()
                };
                let usage = &response.usage;
                let input = usage.input_tokens
                    + usage.cache_read_input_tokens
                    + usage.cache_creation_input_tokens;
                open.span.set_attributes(vec![
                    ("gen_ai.response.model", model.into()),
                    ("gen_ai.usage.input_tokens", input.into()),
                    ("gen_ai.usage.output_tokens", usage.output_tokens.into()),
                    (
                        "gen_ai.usage.cache_read.input_tokens",
                        usage.cache_read_input_tokens.into(),
                    ),
                    (
                        "gen_ai.response.finish_reasons",
                        vec![wire(&response.stop_reason)].into(),
                    ),
                    (
                        "robota.tool_calls",
                        (response.tool_calls.len() as u64).into(),
                    ),
                ]);
                open.span.end(None);
                session.telemetry.record_model_call(&ModelCallMetrics {
                    provider,
                    request_model: &open.name,
                    response_model: model,
                    input_tokens: input,
                    output_tokens: usage.output_tokens,
                    duration: open.started.elapsed(),
                    cost_usd: session.prices.cost(model, usage).usd,
                    error_type: None,
                });
            }
            ExecutionEvent::ProviderError {
                execution_id,
                round,
                provider,
                error,
            } => {
                let Some(open) =
                    lock(&session.open).remove(&format!("chat/{execution_id}/{round}"))
                else {
                    return;
                };
                let kind = wire(&error.kind);
                open.span
                    .set_attributes(vec![("error.type", kind.clone().into())]);
                open.span.set_error(&first_line(&error.message));
                open.span.end(None);
                session.telemetry.record_model_call(&ModelCallMetrics {
                    provider,
                    request_model: &open.name,
                    response_model: &open.name,
                    input_tokens: 0,
                    output_tokens: 0,
                    duration: open.started.elapsed(),
                    cost_usd: None,
                    error_type: Some(&kind),
                });
            }
            ExecutionEvent::ToolExecutionRequest {
                tool_name,
                tool_call_id,
                ..
            } => {
                let span = session.telemetry.start_span(
                    format!("execute_tool {tool_name}"),
                    SpanRole::Internal,
                    self.parent.as_ref(),
                    None,
                    vec![
                        ("gen_ai.operation.name", "execute_tool".into()),
                        ("gen_ai.tool.name", tool_name.clone().into()),
                        ("gen_ai.tool.call.id", tool_call_id.clone().into()),
                        ("gen_ai.tool.type", "function".into()),
                    ],
                );
                lock(&session.open).insert(
                    format!("tool/{tool_call_id}"),
                    OpenSpan {
                        span,
                        started: Instant::now(),
                        name: tool_name.clone(),
                    },
                );
            }
            ExecutionEvent::ToolExecutionResult {
                tool_call_id,
                success,
                output,
                metadata,
                ..
            } => {
                let Some(open) = lock(&session.open).remove(&format!("tool/{tool_call_id}")) else {
                    return;
                };
                if !success {
                    let kind = metadata
                        .get("error_code")
                        .and_then(|v| v.as_str())
                        .unwrap_or("tool_error")
                        .to_string();
                    open.span.set_attributes(vec![("error.type", kind.into())]);
                    open.span.set_error(&first_line(&output.content));
                }
                open.span.end(None);
                session
                    .telemetry
                    .record_tool_call(&open.name, open.started.elapsed(), !success);
            }
            _ => {}
        }
    }
}

impl HookObserver for SessionTelemetry {
    fn handler_ran(&self, event: HookEvent, matcher: &str, report: &HandlerReport) {
        let ran_for = Duration::from_millis(report.duration_ms);
        let ended = SystemTime::now();
        let started = ended.checked_sub(ran_for).unwrap_or(ended);
        let (outcome, error) = match &report.status {
            HandlerStatus::Success => ("success", None),
            HandlerStatus::Blocked { reason, failure } => {
                ("blocked", failure.as_ref().map(|_| first_line(reason)))
            }
            HandlerStatus::Failed { failure } => ("failed", Some(first_line(&failure.to_string()))),
            HandlerStatus::Cancelled => ("cancelled", None),
            HandlerStatus::Background => ("background", None),
        };
        let mut attributes: Vec<Attribute> = vec![
            ("robota.hook.event", event.to_string().into()),
            ("robota.hook.matcher", matcher.into()),
            ("robota.hook.type", report.handler.kind.as_str().into()),
            ("robota.hook.command", report.handler.label.clone().into()),
            ("robota.hook.outcome", outcome.into()),
            ("gen_ai.conversation.id", self.session_id.clone().into()),
        ];
        if let Some(code) = report.exit_code {
            attributes.push(("robota.hook.exit_code", code.into()));
        }
        let parent = self.current_parent();
        let span = self.telemetry.start_span(
            format!("hook {event}"),
            SpanRole::Internal,
            parent.as_ref(),
            Some(started),
            attributes,
        );
        if let Some(message) = error {
            span.set_error(&message);
        }
        span.end(Some(ended));
    }
}
