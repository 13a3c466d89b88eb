//! One vocabulary for how a prompt ended, shared by the engine's tickets and events, queries, the
//! C ABI, the Python and Node bindings and the CLI: [`OutcomeStatus`] (`complete`, `refused`,
//! `truncated`, `error`, `interrupted`, `cancelled`) and, for failures, [`ErrorInfo`] (the
//! error's kind, message, HTTP status, whether a retry may help, and the wait the provider asked
//! for).
//!
//! The run's finer [`RunStopReason`] stays in the outcome (`max_turns`, `context_limit`, …); the
//! status is what a host branches on first:
//!
//! | status | when | what the host gets |
//! |---|---|---|
//! | `complete` | the model answered (also after the round cap, unknown tools or the context guard: see `stop_reason`) | the outcome |
//! | `refused` | the model refused (Anthropic `stop_reason: refusal`, OpenAI `refusal`/`content_filter`) | the outcome, with `refusal`: the refusal text, the provider's category and explanation |
//! | `truncated` | the answer was cut off at the output token limit (`max_tokens` / `length`) | the outcome with what was written; continue with [`CONTINUE_PROMPT`](crate::engine::CONTINUE_PROMPT) |
//! | `error` | a model call failed (auth, network, retries exhausted, …) or the prompt could not run (a hook rejected it, the budget is spent, …) | an [`ErrorInfo`], and the outcome when the run had started |
//! | `interrupted` | the prompt was aborted while it ran | what streamed until then |
//! | `cancelled` | the prompt was dropped from the queue before it ran | nothing |

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::engine::{RunOutcome, RunStopReason};
use crate::message::ProviderError;
use crate::session::SessionError;

/// How a prompt ended (see the [module docs](self)). Serialized as the snake_case name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutcomeStatus {
    /// The model answered.
    Complete,
    /// The model refused to answer.
    Refused,
    /// The answer was cut off at the output token limit.
    Truncated,
    /// A model call failed, or the prompt could not run.
    Error,
    /// The prompt was aborted while it ran.
    Interrupted,
    /// The prompt was dropped from the queue before it ran.
    Cancelled,
}

impl OutcomeStatus {
    /// Every status, in the order of the module docs.
    pub const ALL: [OutcomeStatus; 6] = [
        OutcomeStatus::Complete,
        OutcomeStatus::Refused,
        OutcomeStatus::Truncated,
        OutcomeStatus::Error,
        OutcomeStatus::Interrupted,
        OutcomeStatus::Cancelled,
    ];

    /// The status of a run's outcome.
    pub fn of(outcome: &RunOutcome) -> Self {
        if outcome.interrupted {
            return OutcomeStatus::Interrupted;
        }
        match outcome.stop_reason {
            RunStopReason::Completed
            | RunStopReason::MaxTurns
            | RunStopReason::UnknownTools
            | RunStopReason::ContextLimit => OutcomeStatus::Complete,
            RunStopReason::Refused => OutcomeStatus::Refused,
            RunStopReason::Truncated => OutcomeStatus::Truncated,
            RunStopReason::Error | RunStopReason::MaxStructuredOutputRetries => {
                OutcomeStatus::Error
            }
            RunStopReason::Interrupted => OutcomeStatus::Interrupted,
        }
    }

    /// The stable snake_case name (`complete`, `refused`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            OutcomeStatus::Complete => "complete",
            OutcomeStatus::Refused => "refused",
            OutcomeStatus::Truncated => "truncated",
            OutcomeStatus::Error => "error",
            OutcomeStatus::Interrupted => "interrupted",
            OutcomeStatus::Cancelled => "cancelled",
        }
    }
}

impl std::fmt::Display for OutcomeStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A failure as every binding reports it: what kind, what happened, and whether (and when)
/// trying again may help.
///
/// `kind` is, for a failed model call, the provider error kind: `auth`, `rate_limit`,
/// `overloaded`, `context_length`, `network`, `invalid_request` or `provider`
/// ([`ProviderErrorKind`](crate::message::ProviderErrorKind)); for a prompt that could not run:
/// `prompt_rejected` (a `UserPromptSubmit` hook), `budget_exceeded`, `busy`, `shut_down`,
/// `session_locked`, `invalid_argument` (an unresolvable `@file`) or `session` (anything else).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorInfo {
    /// The failure's kind (see the type docs).
    pub kind: String,
    /// What went wrong and, where known, how to fix it.
    pub message: String,
    /// The provider whose call failed (`anthropic`, `openai`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// The HTTP status of the failed call, when it was an HTTP error response.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// Whether sending the same prompt again may succeed (rate limits, overload, network).
    pub retryable: bool,
    /// How long the provider asked to wait before retrying (`retry-after`), in milliseconds,
    /// when it named a time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_ms: Option<u64>,
}

impl ErrorInfo {
    /// An error of `kind` saying `message`, not worth retrying.
    pub fn new(kind: impl Into<String>, message: impl Into<String>) -> Self {
        ErrorInfo {
            kind: kind.into(),
            message: message.into(),
            provider: None,
            status: None,
            retryable: false,
            retry_after_ms: None,
        }
    }

    /// A failed model call.
    pub fn from_provider(error: &ProviderError) -> Self {
        ErrorInfo {
            kind: error.kind.as_str().to_string(),
            message: error.to_string(),
            provider: Some(error.provider.clone()),
            status: error.status,
            retryable: error.retryable,
            retry_after_ms: error.retry_after.map(duration_ms),
        }
    }

    /// The error of a run that ended `error` on its own (not a failed model call): the answer
    /// never matched the structured output schema (kind `structured_output`, the last
    /// validation errors in the message and in the outcome's `structured_output_errors`).
    pub fn from_outcome(outcome: &RunOutcome) -> Self {
        if let Some(error) = &outcome.error {
            return Self::from_provider(error);
        }
        if outcome.stop_reason == RunStopReason::MaxStructuredOutputRetries {
            let errors: Vec<String> = outcome
                .structured_output_errors
                .iter()
                .map(ToString::to_string)
                .collect();
            return ErrorInfo::new(
                "structured_output",
                format!(
                    "the answer did not match the output schema after the allowed retries: {}",
                    errors.join("; ")
                ),
            );
        }
        ErrorInfo::new("provider", "the model call failed")
    }

    /// A prompt the session could not run.
    pub fn from_session(error: &SessionError) -> Self {
        let kind = match error {
            SessionError::PromptRejected { .. } => "prompt_rejected",
            SessionError::BudgetExceeded { .. } => "budget_exceeded",
            SessionError::Busy => "busy",
            SessionError::ShutDown => "shut_down",
            SessionError::Locked { .. } => "session_locked",
            _ => "session",
        };
        ErrorInfo {
            retryable: matches!(error, SessionError::Busy),
            ..ErrorInfo::new(kind, error.to_string())
        }
    }

    /// The wait the provider asked for, as a duration.
    pub fn retry_after(&self) -> Option<Duration> {
        self.retry_after_ms.map(Duration::from_millis)
    }
}

fn duration_ms(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::ProviderErrorKind;

    #[test]
    fn provider_errors_keep_kind_status_and_retry_advice() {
        let error = ProviderError::new(ProviderErrorKind::RateLimit, "anthropic", "slow down")
            .with_status(429)
            .with_retry_after(Some(Duration::from_secs(90)));
        let info = ErrorInfo::from_provider(&error);
        assert_eq!(info.kind, "rate_limit");
        assert_eq!(info.status, Some(429));
        assert!(info.retryable);
        assert_eq!(info.retry_after_ms, Some(90_000));
        assert_eq!(info.provider.as_deref(), Some("anthropic"));
        assert!(info.message.contains("slow down"), "{}", info.message);
        let json = serde_json::to_value(&info).unwrap_or_default();
        assert_eq!(json["retry_after_ms"], 90_000);
    }

    #[test]
    fn session_errors_have_kinds() {
        let info = ErrorInfo::from_session(&SessionError::PromptRejected {
            reason: "no".into(),
        });
        assert_eq!(info.kind, "prompt_rejected");
        assert!(!info.retryable);
        assert_eq!(
            ErrorInfo::from_session(&SessionError::ShutDown).kind,
            "shut_down"
        );
    }

    #[test]
    fn names_are_stable() {
        let names: Vec<String> = OutcomeStatus::ALL
            .iter()
            .map(|s| serde_json::to_value(s).unwrap_or_default().to_string())
            .collect();
        assert_eq!(
            names,
            [
                "\"complete\"",
                "\"refused\"",
                "\"truncated\"",
                "\"error\"",
                "\"interrupted\"",
                "\"cancelled\""
            ]
        );
        for status in OutcomeStatus::ALL {
            assert_eq!(
                format!("\"{status}\""),
                serde_json::to_string(&status).unwrap_or_default()
            );
        }
    }
}
