//! [`RemoteError`]: every way a call to a `robota serve` server can fail, typed from the server's
//! `{"error": {"code", "message"}}` body or from the transport, with messages that say what failed
//! and how to fix it.

use std::time::Duration;

use crate::wire::ErrorBody;

/// A failed call to a `robota serve` server.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum RemoteError {
    /// `401 unauthorized`: the token is missing or wrong.
    #[error("unauthorized: {message} (pass the token `robota serve` printed at start, or the one in its --token-env variable)")]
    Unauthorized {
        /// The server's message.
        message: String,
    },
    /// `403 forbidden`: this client may not do that (an observer asked to control).
    #[error("forbidden: {message}")]
    Forbidden {
        /// The server's message.
        message: String,
    },
    /// `404 not_found`: no such session, prompt or permission request.
    #[error("not found: {message}")]
    NotFound {
        /// The server's message.
        message: String,
    },
    /// `409 queue_full`: a prompt already waits behind the running one.
    #[error("queue full: {message} (wait for the running prompt, or abort it)")]
    QueueFull {
        /// The server's message.
        message: String,
    },
    /// `409 busy`: the command needs an idle session.
    #[error("session busy: {message} (wait for the running prompt to end, or abort it)")]
    Busy {
        /// The server's message.
        message: String,
    },
    /// `409 session_locked`: another process holds the saved session.
    #[error("session locked: {message}")]
    SessionLocked {
        /// The server's message.
        message: String,
    },
    /// `403 path_outside_roots`: the folder is outside the server's project roots.
    #[error("path outside the server's roots: {message} (start `robota serve` with --root for that folder, or use a folder inside a root)")]
    PathOutsideRoots {
        /// The server's message.
        message: String,
    },
    /// `503 shutting_down`: the server is stopping.
    #[error("server shutting down: {message}")]
    ShuttingDown {
        /// The server's message.
        message: String,
    },
    /// `413 payload_too_large`: the request body is over the server's limit.
    #[error("payload too large: {message} (send less, or raise the server's --max-request-bytes)")]
    PayloadTooLarge {
        /// The server's message.
        message: String,
    },
    /// `400 invalid_request`: a field is wrong (empty prompt, invalid output format, …).
    #[error("invalid request: {message}")]
    InvalidRequest {
        /// The server's message.
        message: String,
    },
    /// Any other error answer (`500 internal`, or a code this client does not know).
    #[error("server error {status} {code}: {message}")]
    Server {
        /// The HTTP status.
        status: u16,
        /// The server's error code.
        code: String,
        /// The server's message.
        message: String,
    },
    /// The endpoint cannot be used (a malformed URL, a token that is not a valid header value).
    #[error("invalid endpoint: {message}")]
    InvalidEndpoint {
        /// What is wrong with it.
        message: String,
    },
    /// The server could not be reached, or the connection broke.
    #[error("cannot reach the server at {url}: {message} (is `robota serve` running there?)")]
    Connection {
        /// The URL called.
        url: String,
        /// What the transport said.
        message: String,
    },
    /// The server did not answer in time.
    #[error("{what} got no answer within {after:?} (the server is slow or unreachable)")]
    Timeout {
        /// The call.
        what: String,
        /// How long it waited.
        after: Duration,
    },
    /// The server answered something this client does not understand (not the v1 protocol, a
    /// body over the size cap, a malformed event stream).
    #[error("protocol error: {message}")]
    Protocol {
        /// What was wrong.
        message: String,
    },
}

impl RemoteError {
    /// The error for an answer with `status` and `body` that is not a success.
    pub fn from_answer(status: u16, body: &[u8]) -> Self {
        match serde_json::from_slice::<ErrorBody>(body) {
            Ok(parsed) => Self::from_code(status, &parsed.error.code, parsed.error.message),
            Err(_) => {
                let snippet = String::from_utf8_lossy(&body[..body.len().min(200)]).into_owned();
                if status == 401 {
                    return RemoteError::Unauthorized { message: snippet };
                }
                RemoteError::Protocol {
                    message: format!(
                        "HTTP {status} without a robota error body (is this a `robota serve` server?): {snippet}"
                    ),
                }
            }
        }
    }

    /// The error for the server's error `code` (from `ErrorBody`).
    pub fn from_code(status: u16, code: &str, message: String) -> Self {
        match code {
            "unauthorized" => RemoteError::Unauthorized { message },
            "forbidden" => RemoteError::Forbidden { message },
            "not_found" => RemoteError::NotFound { message },
            "queue_full" => RemoteError::QueueFull { message },
            "busy" => RemoteError::Busy { message },
            "session_locked" => RemoteError::SessionLocked { message },
            "path_outside_roots" => RemoteError::PathOutsideRoots { message },
            "shutting_down" => RemoteError::ShuttingDown { message },
            "payload_too_large" => RemoteError::PayloadTooLarge { message },
            "invalid_request" => RemoteError::InvalidRequest { message },
            other => RemoteError::Server {
                status,
                code: other.to_string(),
                message,
            },
        }
    }

    /// The protocol's snake_case code of this error (the server's code for answers; `connection`,
    /// `timeout`, `protocol` or `invalid_endpoint` for the client's own failures).
    pub fn code(&self) -> &str {
        match self {
            RemoteError::Unauthorized { .. } => "unauthorized",
            RemoteError::Forbidden { .. } => "forbidden",
            RemoteError::NotFound { .. } => "not_found",
            RemoteError::QueueFull { .. } => "queue_full",
            RemoteError::Busy { .. } => "busy",
            RemoteError::SessionLocked { .. } => "session_locked",
            RemoteError::PathOutsideRoots { .. } => "path_outside_roots",
            RemoteError::ShuttingDown { .. } => "shutting_down",
            RemoteError::PayloadTooLarge { .. } => "payload_too_large",
            RemoteError::InvalidRequest { .. } => "invalid_request",
            RemoteError::Server { code, .. } => code,
            RemoteError::InvalidEndpoint { .. } => "invalid_endpoint",
            RemoteError::Connection { .. } => "connection",
            RemoteError::Timeout { .. } => "timeout",
            RemoteError::Protocol { .. } => "protocol",
        }
    }

    /// True for failures a retry may cure (the connection broke, the server was slow); an
    /// answer from the server is final.
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            RemoteError::Connection { .. } | RemoteError::Timeout { .. }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_bodies_map_to_their_variants() {
        let body = br#"{"error":{"code":"queue_full","message":"a prompt is queued"}}"#;
        assert_eq!(
            RemoteError::from_answer(409, body),
            RemoteError::QueueFull {
                message: "a prompt is queued".into()
            }
        );
        let unknown = br#"{"error":{"code":"teapot","message":"short and stout"}}"#;
        let err = RemoteError::from_answer(418, unknown);
        assert_eq!(err.code(), "teapot");
        assert!(matches!(err, RemoteError::Server { status: 418, .. }));
    }

    #[test]
    fn a_body_that_is_not_an_error_body_is_a_protocol_error_except_401() {
        assert!(matches!(
            RemoteError::from_answer(502, b"<html>bad gateway</html>"),
            RemoteError::Protocol { .. }
        ));
        assert!(matches!(
            RemoteError::from_answer(401, b""),
            RemoteError::Unauthorized { .. }
        ));
    }

    #[test]
    fn messages_say_how_to_fix_it() {
        let err = RemoteError::Unauthorized {
            message: "wrong token".into(),
        };
        assert!(err.to_string().contains("--token-env"));
    }
}
