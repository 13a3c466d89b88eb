//! The server's one error type: an HTTP status, a stable code and a message that says what
//! failed and how to fix it, answered as the protocol's `ErrorBody`.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use robota::framework::interactive::InteractiveError;
use robota_remote::wire::{ErrorBody, ErrorDetail};

/// A request the server could not serve.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code}: {message}")]
pub struct ServeError {
    /// The HTTP status.
    pub status: u16,
    /// The protocol's error code (`not_found`, `queue_full`, …).
    pub code: &'static str,
    /// What failed and how to fix it.
    pub message: String,
}

impl ServeError {
    fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        ServeError {
            status: status.as_u16(),
            code,
            message: message.into(),
        }
    }

    /// 400 `invalid_request`.
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "invalid_request", message)
    }

    /// 401 `unauthorized`: says nothing about what exists.
    pub fn unauthorized() -> Self {
        Self::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "missing or wrong bearer token: send `Authorization: Bearer <token>` with the token \
             `robota serve` printed (or the one in its --token-env variable)",
        )
    }

    /// 403 `path_outside_roots`.
    pub fn outside_roots(message: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, "path_outside_roots", message)
    }

    /// 403 `forbidden`.
    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, "forbidden", message)
    }

    /// 404 `not_found`.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, "not_found", message)
    }

    /// 409 with a conflict code (`queue_full`, `busy`, `session_locked`).
    pub fn conflict(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, code, message)
    }

    /// 413 `payload_too_large`.
    pub fn too_large(message: impl Into<String>) -> Self {
        Self::new(StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large", message)
    }

    /// 503 `shutting_down`.
    pub fn shutting_down() -> Self {
        Self::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "shutting_down",
            "the server is shutting down and takes no new work",
        )
    }

    /// 500 `internal`.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", message)
    }

    /// The protocol body of this error.
    pub fn body(&self) -> ErrorBody {
        ErrorBody {
            error: self.detail(),
        }
    }

    /// The protocol detail of this error (WebSocket responses carry it).
    pub fn detail(&self) -> ErrorDetail {
        ErrorDetail {
            code: self.code.to_string(),
            message: self.message.clone(),
        }
    }
}

impl From<InteractiveError> for ServeError {
    fn from(error: InteractiveError) -> Self {
        let message = error.to_string();
        match error {
            InteractiveError::QueueFull => ServeError::conflict("queue_full", message),
            InteractiveError::Busy(_) => ServeError::conflict("busy", message),
            InteractiveError::ShutDown => ServeError::not_found(format!(
                "{message}; the session was closed (resume it with POST /v1/sessions)"
            )),
            InteractiveError::Session(robota::session::SessionError::Locked { .. }) => {
                ServeError::conflict("session_locked", message)
            }
            InteractiveError::Session(robota::session::SessionError::Resume { .. }) => {
                ServeError::not_found(message)
            }
            InteractiveError::EmptyPrompt
            | InteractiveError::FileReferences(_)
            | InteractiveError::Commands(_)
            | InteractiveError::Command(_)
            | InteractiveError::Session(_) => ServeError::invalid(message),
            _ => ServeError::internal(message),
        }
    }
}

impl IntoResponse for ServeError {
    fn into_response(self) -> Response {
        let status = StatusCode::from_u16(self.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let unauthorized = status == StatusCode::UNAUTHORIZED;
        let mut response = (status, axum::Json(self.body())).into_response();
        if unauthorized {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        response
    }
}
