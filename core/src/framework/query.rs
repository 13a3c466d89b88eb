//! [`create_query`]: the one-call API of spec 000 ("createQuery") — a reusable [`Query`] whose
//! every [`Query::query`] call runs one full agent turn on the same session and returns a
//! [`QueryResult`].
//!
//! `allowed_tools`/`disallowed_tools` become permission allow/deny rules that hold for the whole
//! session, above the mode (deny still wins over allow, as in settings). They do not remove tools
//! from what the model is offered; a denied call is answered with the denial message.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use serde::Serialize;

use crate::engine::{RunOutcome, RunStopReason, StructuredOutputError, CONTINUE_PROMPT};
use crate::framework::outcome::OutcomeStatus;
use crate::message::{Message, ProviderError, Usage};
use crate::permissions::PermissionMode;
use crate::provider::{Provider, Refusal};
use crate::session::structured_output::OutputFormat;
use crate::session::{
    PermissionHandler, Session, SessionError, SessionEvent, SessionOptions, SessionPersistence,
    SessionSettings,
};

/// Receives streamed answer text.
pub type TextDeltaCallback = Arc<dyn Fn(&str) + Send + Sync>;

/// Everything a query is made from. Build with [`QueryOptions::new`] and set fields.
#[derive(Clone)]
pub struct QueryOptions {
    /// The model.
    pub provider: Arc<dyn Provider>,
    /// The working directory (project settings and AGENTS.md are read from here).
    pub cwd: PathBuf,
    /// The permission mode (settings' default when `None`).
    pub permission_mode: Option<PermissionMode>,
    /// Most rounds per query (`0`: no cap).
    pub max_turns: u32,
    /// Permission rules allowed without asking (`"Read"`, `"Bash(git *)"`).
    pub allowed_tools: Vec<String>,
    /// Permission rules always denied.
    pub disallowed_tools: Vec<String>,
    /// Replaces the assembled system prompt.
    pub system_prompt: Option<String>,
    /// Appended to the system prompt.
    pub append_system_prompt: Option<String>,
    /// Receives each answer text chunk as it streams.
    pub on_text_delta: Option<TextDeltaCallback>,
    /// Answers permission prompts; without one, calls needing approval are denied.
    pub permission_handler: Option<Arc<dyn PermissionHandler>>,
    /// Spending limit for the session (later queries are refused once reached).
    pub max_budget_usd: Option<f64>,
    /// Where the session is saved.
    pub persistence: SessionPersistence,
    /// Where settings come from.
    pub settings: SessionSettings,
    /// Anything else, as full session options; the fields above override it. `None`: defaults.
    pub session: Option<SessionOptions>,
}

impl QueryOptions {
    /// Options for queries in `cwd` against `provider`.
    pub fn new(cwd: impl Into<PathBuf>, provider: Arc<dyn Provider>) -> Self {
        QueryOptions {
            provider,
            cwd: cwd.into(),
            permission_mode: None,
            max_turns: 0,
            allowed_tools: Vec::new(),
            disallowed_tools: Vec::new(),
            system_prompt: None,
            append_system_prompt: None,
            on_text_delta: None,
            permission_handler: None,
            max_budget_usd: None,
            persistence: SessionPersistence::None,
            settings: SessionSettings::default(),
            session: None,
        }
    }
}

impl std::fmt::Debug for QueryOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QueryOptions")
            .field("cwd", &self.cwd)
            .field("permission_mode", &self.permission_mode)
            .field("max_turns", &self.max_turns)
            .field("allowed_tools", &self.allowed_tools)
            .field("disallowed_tools", &self.disallowed_tools)
            .finish_non_exhaustive()
    }
}

/// What one query produced.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QueryResult {
    /// The final answer text.
    pub response: String,
    /// The session's chat messages after the query.
    pub messages: Vec<Message>,
    /// Tokens used by this query.
    pub usage: Usage,
    /// Cost of this query in USD (`None` when the model has no known price).
    pub cost_usd: Option<f64>,
    /// Model calls this query made (every round, a forced summary included).
    pub num_turns: u32,
    /// Wall time of the query.
    pub duration_ms: u64,
    /// The session id (the same for every query of one [`Query`]).
    pub session_id: String,
    /// Why the query ended: `completed`, `refused`, `truncated`, `interrupted`, `max_turns`,
    /// `unknown_tools` or `context_limit` (a failed model call is [`QueryError::Provider`]).
    pub stop_reason: RunStopReason,
    /// How the query ended, in the vocabulary every binding shares: `complete`, `refused`,
    /// `truncated` or `interrupted`.
    pub status: OutcomeStatus,
    /// What the provider said about the refusal, when `status` is `refused`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refusal: Option<Refusal>,
    /// The final answer parsed and validated against the `output_format` schema (`None`
    /// without one). The Claude Agent SDK's `structured_output`. An answer that never matched
    /// is [`QueryError::StructuredOutput`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub structured_output: Option<serde_json::Value>,
}

/// Why a query did not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum QueryError {
    /// The session could not be created or refused the prompt (busy, budget, hook, …).
    #[error(transparent)]
    Session(#[from] SessionError),
    /// An allowed/disallowed tool rule does not parse.
    #[error("invalid tool rule in allowed_tools/disallowed_tools: {0}")]
    InvalidToolRule(String),
    /// The model call failed. The typed error says what kind of failure it was and, for a rate
    /// limit the provider did not wait out, when to retry ([`ProviderError::retry_after`]).
    #[error("the model call failed: {0}")]
    Provider(ProviderError),
    /// The answer did not match the `output_format` schema after the allowed follow-ups (stop
    /// reason `max_structured_output_retries`).
    #[error(
        "the answer did not match the output schema after the allowed follow-ups: {}",
        errors.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ")
    )]
    StructuredOutput {
        /// The last answer's validation errors.
        errors: Vec<StructuredOutputError>,
        /// The last answer, as the model wrote it.
        response: String,
    },
}

/// A reusable query function over one session.
pub struct Query {
    session: Session,
}

impl std::fmt::Debug for Query {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Query")
            .field("session_id", &self.session.session_id())
            .finish()
    }
}

/// Builds the session behind a [`Query`].
pub fn create_query(options: QueryOptions) -> Result<Query, QueryError> {
    let QueryOptions {
        provider,
        cwd,
        permission_mode,
        max_turns,
        allowed_tools,
        disallowed_tools,
        system_prompt,
        append_system_prompt,
        on_text_delta,
        permission_handler,
        max_budget_usd,
        persistence,
        settings,
        session,
    } = options;
    let mut session_options = match session {
        Some(mut base) => {
            base.cwd = cwd;
            base.provider = provider;
            base
        }
        None => SessionOptions::new(cwd, provider),
    };
    session_options.settings = settings;
    session_options.persistence = persistence;
    session_options.max_turns = max_turns;
    if permission_mode.is_some() {
        session_options.permission_mode = permission_mode;
    }
    if system_prompt.is_some() {
        session_options.system_prompt = system_prompt;
    }
    if append_system_prompt.is_some() {
        session_options.append_system_prompt = append_system_prompt;
    }
    if permission_handler.is_some() {
        session_options.permission_handler = permission_handler;
    }
    if max_budget_usd.is_some() {
        session_options.max_budget_usd = max_budget_usd;
    }
    if let Some(on_text_delta) = on_text_delta {
        let host = session_options.on_event.take();
        session_options.on_event = Some(Arc::new(move |event: SessionEvent| {
            if let SessionEvent::Engine(crate::engine::EngineEvent::TextDelta { text }) = &event {
                on_text_delta(text);
            }
            if let Some(host) = &host {
                host(event);
            }
        }));
    }
    let session = Session::new(session_options)?;
    session
        .enforcer()
        .add_override_rules(&allowed_tools, &disallowed_tools)
        .map_err(|errors| {
            QueryError::InvalidToolRule(
                errors
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("; "),
            )
        })?;
    Ok(Query { session })
}

impl Query {
    /// Runs one full agent turn with `prompt`. A run that ends on a model error is
    /// [`QueryError::Provider`], an answer that never matched the session's `output_format`
    /// [`QueryError::StructuredOutput`]; an aborted one returns its partial result with stop
    /// reason `interrupted`.
    pub async fn query(&self, prompt: &str) -> Result<QueryResult, QueryError> {
        let started = Instant::now();
        let before = self.session.usage();
        let outcome = self.session.run(prompt).await?;
        self.result(outcome, started, before)
    }

    /// Like [`query`](Self::query), with this query's final answer shaped by `format` (instead
    /// of the session's `output_format`): the result's `structured_output` holds the validated
    /// value; an answer that never matches is [`QueryError::StructuredOutput`] with the last
    /// validation errors. A schema that is not a valid JSON Schema is
    /// [`SessionError::InvalidOutputFormat`] and nothing is sent.
    pub async fn query_with_output_format(
        &self,
        prompt: &str,
        format: &OutputFormat,
    ) -> Result<QueryResult, QueryError> {
        let started = Instant::now();
        let before = self.session.usage();
        let outcome = self.session.run_with_output_format(prompt, format).await?;
        self.result(outcome, started, before)
    }

    fn result(
        &self,
        outcome: RunOutcome,
        started: Instant,
        before: crate::session::usage::UsageTotals,
    ) -> Result<QueryResult, QueryError> {
        if let Some(error) = &outcome.error {
            return Err(QueryError::Provider(error.clone()));
        }
        if outcome.stop_reason == RunStopReason::MaxStructuredOutputRetries {
            return Err(QueryError::StructuredOutput {
                errors: outcome.structured_output_errors,
                response: outcome.response,
            });
        }
        let after = self.session.usage();
        let cost_usd = match (after.cost_usd, before.cost_usd) {
            (Some(after), Some(before)) => Some(after - before),
            (Some(after), None) => Some(after),
            _ => None,
        };
        Ok(QueryResult {
            status: OutcomeStatus::of(&outcome),
            refusal: outcome.refusal,
            response: outcome.response,
            messages: self.session.messages(),
            usage: outcome.usage,
            cost_usd,
            num_turns: outcome.rounds,
            duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
            session_id: self.session.session_id().to_string(),
            stop_reason: outcome.stop_reason,
            structured_output: outcome.structured_output,
        })
    }

    /// Asks the model to go on with an answer that was cut off at the output token limit (a
    /// result with status `truncated`): runs [`CONTINUE_PROMPT`] as the next query.
    pub async fn continue_answer(&self) -> Result<QueryResult, QueryError> {
        self.query(CONTINUE_PROMPT).await
    }

    /// The session (abort, usage, history, shutdown).
    pub fn session(&self) -> &Session {
        &self.session
    }
}
