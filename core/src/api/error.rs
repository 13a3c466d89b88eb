//! [`ApiError`]: the one error type of the binding-facing facade, with a stable kind each
//! binding maps to its own error type (C status code, Python exception class, JS error code).

use crate::framework::checkpoints::CheckpointError;
use crate::framework::interactive::InteractiveError;
use crate::framework::query::QueryError;
use crate::session::SessionError;

/// What kind of failure an [`ApiError`] is. The names (see [`ApiErrorKind::as_str`]) are part of
/// the public contract of every binding; new kinds are only ever added.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ApiErrorKind {
    /// An argument is out of range, names something unknown, or is missing.
    InvalidArgument,
    /// A JSON document (configuration, options, tool input) is malformed or has the wrong shape.
    InvalidJson,
    /// The provider could not be created or a model call failed.
    Provider,
    /// The session refused or failed the request.
    Session,
    /// A prompt is already queued; only one may wait.
    QueueFull,
    /// The request cannot run while a prompt is executing.
    Busy,
    /// The session was shut down.
    ShutDown,
    /// A slash command is unknown, ambiguous or failed.
    Command,
    /// The saved session is open for writing elsewhere (a session has one writer at a time);
    /// the message names the holder (pid, host, since when). Wait until it is closed, or fork
    /// it (`fork_session`) to continue in a copy.
    SessionLocked,
    /// The answer did not match the `output_format` JSON Schema after the allowed follow-ups;
    /// the message lists the last validation errors.
    StructuredOutput,
}

impl ApiErrorKind {
    /// The kind's stable snake_case name (`invalid_argument`, `queue_full`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            ApiErrorKind::InvalidArgument => "invalid_argument",
            ApiErrorKind::InvalidJson => "invalid_json",
            ApiErrorKind::Provider => "provider",
            ApiErrorKind::Session => "session",
            ApiErrorKind::QueueFull => "queue_full",
            ApiErrorKind::Busy => "busy",
            ApiErrorKind::ShutDown => "shut_down",
            ApiErrorKind::Command => "command",
            ApiErrorKind::SessionLocked => "session_locked",
            ApiErrorKind::StructuredOutput => "structured_output",
        }
    }
}

impl std::fmt::Display for ApiErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A failure of a facade call: its [`kind`](ApiError::kind) and a message that says what went
/// wrong and, where possible, how to fix it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ApiError {
    /// The failure's kind.
    pub kind: ApiErrorKind,
    /// The human-readable explanation.
    pub message: String,
}

impl ApiError {
    /// An error of `kind` saying `message`.
    pub fn new(kind: ApiErrorKind, message: impl Into<String>) -> Self {
        ApiError {
            kind,
            message: message.into(),
        }
    }

    /// An [`ApiErrorKind::InvalidArgument`] error.
    pub fn invalid_argument(message: impl Into<String>) -> Self {
        ApiError::new(ApiErrorKind::InvalidArgument, message)
    }

    /// An [`ApiErrorKind::InvalidJson`] error.
    pub fn invalid_json(message: impl Into<String>) -> Self {
        ApiError::new(ApiErrorKind::InvalidJson, message)
    }
}

impl From<InteractiveError> for ApiError {
    fn from(e: InteractiveError) -> Self {
        let kind = match &e {
            InteractiveError::QueueFull => ApiErrorKind::QueueFull,
            InteractiveError::Busy(_) => ApiErrorKind::Busy,
            InteractiveError::ShutDown => ApiErrorKind::ShutDown,
            InteractiveError::Command(_) | InteractiveError::Commands(_) => ApiErrorKind::Command,
            InteractiveError::FileReferences(_) => ApiErrorKind::InvalidArgument,
            InteractiveError::Session(SessionError::Locked { .. }) => ApiErrorKind::SessionLocked,
            InteractiveError::Session(
                SessionError::InvalidTool { .. }
                | SessionError::InvalidHookCallback { .. }
                | SessionError::InvalidMcpServer { .. }
                | SessionError::InvalidOutputFormat { .. }
                | SessionError::InvalidFallbackModel { .. },
            ) => ApiErrorKind::InvalidArgument,
            InteractiveError::EmptyPrompt => ApiErrorKind::InvalidArgument,
            InteractiveError::BackgroundTask { .. } | InteractiveError::Subagent(_) => {
                ApiErrorKind::InvalidArgument
            }
            InteractiveError::Checkpoint(CheckpointError::Busy) => ApiErrorKind::Busy,
            InteractiveError::Checkpoint(CheckpointError::NotFound { .. }) => {
                ApiErrorKind::InvalidArgument
            }
            _ => ApiErrorKind::Session,
        };
        ApiError::new(kind, e.to_string())
    }
}

impl From<SessionError> for ApiError {
    fn from(e: SessionError) -> Self {
        let kind = match &e {
            SessionError::Locked { .. } => ApiErrorKind::SessionLocked,
            SessionError::InvalidTool { .. }
            | SessionError::InvalidHookCallback { .. }
            | SessionError::InvalidMcpServer { .. }
            | SessionError::InvalidOutputFormat { .. }
            | SessionError::InvalidFallbackModel { .. } => ApiErrorKind::InvalidArgument,
            _ => ApiErrorKind::Session,
        };
        ApiError::new(kind, e.to_string())
    }
}

impl From<QueryError> for ApiError {
    fn from(e: QueryError) -> Self {
        match e {
            QueryError::Session(e) => e.into(),
            QueryError::InvalidToolRule(_) => {
                ApiError::new(ApiErrorKind::InvalidArgument, e.to_string())
            }
            QueryError::Provider(_) => ApiError::new(ApiErrorKind::Provider, e.to_string()),
            QueryError::StructuredOutput { .. } => {
                ApiError::new(ApiErrorKind::StructuredOutput, e.to_string())
            }
        }
    }
}
