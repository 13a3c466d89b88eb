//! The errors Swift sees: [`RobotaError`], one case per `robota::api::ApiErrorKind` (plus
//! `Internal`), and [`HostError`], what a Swift host callback throws.

use robota::api::{ApiError, ApiErrorKind};

/// A failed call into the engine. The case names the `ApiErrorKind`; the message says what went
/// wrong and, where possible, how to fix it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, uniffi::Error)]
pub enum RobotaError {
    /// An argument is out of range, names something unknown, or is missing.
    #[error("{message}")]
    InvalidArgument {
        /// What is wrong.
        message: String,
    },
    /// A JSON document (configuration, options, tool input) is malformed or has the wrong shape.
    #[error("{message}")]
    InvalidJson {
        /// What is wrong.
        message: String,
    },
    /// The provider could not be created or a model call failed.
    #[error("{message}")]
    Provider {
        /// What failed.
        message: String,
    },
    /// The session refused or failed the request.
    #[error("{message}")]
    Session {
        /// What failed.
        message: String,
    },
    /// A prompt is already queued; only one may wait.
    #[error("{message}")]
    QueueFull {
        /// The explanation.
        message: String,
    },
    /// The request cannot run while a prompt is executing.
    #[error("{message}")]
    Busy {
        /// The explanation.
        message: String,
    },
    /// The session was shut down.
    #[error("{message}")]
    ShutDown {
        /// The explanation.
        message: String,
    },
    /// A slash command is unknown, ambiguous or failed.
    #[error("{message}")]
    Command {
        /// What failed.
        message: String,
    },
    /// The saved session is open for writing elsewhere; the message names the holder.
    #[error("{message}")]
    SessionLocked {
        /// Who holds it.
        message: String,
    },
    /// The answer did not match the `outputFormat` JSON Schema after the allowed follow-ups;
    /// the message lists the last validation errors.
    #[error("{message}")]
    StructuredOutput {
        /// The last validation errors.
        message: String,
    },
    /// A bug in the library (please report it); the session may still be usable.
    #[error("{message}")]
    Internal {
        /// What happened.
        message: String,
    },
}

impl RobotaError {
    /// An [`RobotaError::InvalidArgument`].
    pub fn invalid_argument(message: impl Into<String>) -> Self {
        RobotaError::InvalidArgument {
            message: message.into(),
        }
    }

    /// An [`RobotaError::Internal`].
    pub fn internal(message: impl Into<String>) -> Self {
        RobotaError::Internal {
            message: message.into(),
        }
    }
}

impl From<ApiError> for RobotaError {
    fn from(e: ApiError) -> Self {
        let message = e.message;
        match e.kind {
            ApiErrorKind::InvalidArgument => RobotaError::InvalidArgument { message },
            ApiErrorKind::InvalidJson => RobotaError::InvalidJson { message },
            ApiErrorKind::Provider => RobotaError::Provider { message },
            ApiErrorKind::QueueFull => RobotaError::QueueFull { message },
            ApiErrorKind::Busy => RobotaError::Busy { message },
            ApiErrorKind::ShutDown => RobotaError::ShutDown { message },
            ApiErrorKind::Command => RobotaError::Command { message },
            ApiErrorKind::SessionLocked => RobotaError::SessionLocked { message },
            ApiErrorKind::StructuredOutput => RobotaError::StructuredOutput { message },
            _ => RobotaError::Session { message },
        }
    }
}

impl From<robota::framework::interactive::InteractiveError> for RobotaError {
    fn from(e: robota::framework::interactive::InteractiveError) -> Self {
        RobotaError::from(ApiError::from(e))
    }
}

/// What a Swift host callback (tool, permission handler, hook, command, provider) throws: the
/// call is rejected with this message (a failed tool result, a denial, a failed hook, …).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, uniffi::Error)]
pub enum HostError {
    /// The host rejected the call.
    #[error("{message}")]
    Rejected {
        /// Why, for the model or the user.
        message: String,
    },
}

/// A Swift error uniffi could not map (a callback threw something other than [`HostError`]) is
/// a rejection too, so a throwing callback never brings the engine down.
impl From<uniffi::UnexpectedUniFFICallbackError> for HostError {
    fn from(e: uniffi::UnexpectedUniFFICallbackError) -> Self {
        HostError::Rejected { message: e.reason }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_api_error_kind_keeps_its_own_case_and_message() {
        let cases = [
            (ApiErrorKind::InvalidArgument, "InvalidArgument"),
            (ApiErrorKind::InvalidJson, "InvalidJson"),
            (ApiErrorKind::Provider, "Provider"),
            (ApiErrorKind::Session, "Session"),
            (ApiErrorKind::QueueFull, "QueueFull"),
            (ApiErrorKind::Busy, "Busy"),
            (ApiErrorKind::ShutDown, "ShutDown"),
            (ApiErrorKind::Command, "Command"),
            (ApiErrorKind::SessionLocked, "SessionLocked"),
            (ApiErrorKind::StructuredOutput, "StructuredOutput"),
        ];
        for (kind, case) in cases {
            let error = RobotaError::from(ApiError::new(kind, format!("{kind} happened")));
            let debug = format!("{error:?}");
            assert!(debug.starts_with(case), "{kind} became {debug}");
            assert_eq!(error.to_string(), format!("{kind} happened"));
        }
    }

    #[test]
    fn an_unmappable_callback_error_is_a_rejection_with_its_reason() {
        let error = HostError::from(uniffi::UnexpectedUniFFICallbackError::new("boom"));
        assert_eq!(
            error,
            HostError::Rejected {
                message: "boom".into()
            }
        );
    }
}
