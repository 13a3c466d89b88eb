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

/// `message` with every absolute path shortened to `…/<file name>`. Engine errors name the
/// files they are about (the session store's snapshot, a lock file), which helps a local user;
/// a network client must not learn where the server keeps its files (home folders, stores).
pub fn without_paths(message: &str) -> String {
    let mut shortened = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(at) = rest.find('/') {
        let (before, from) = rest.split_at(at);
        let starts_word = before.is_empty()
            || before.ends_with(|c: char| {
                c.is_whitespace() || matches!(c, '`' | '"' | '\'' | '(' | '=')
            });
        // `from` starts with `/`, so the word is never empty and the loop moves on.
        let end = from
            .find(|c: char| c.is_whitespace() || matches!(c, '`' | '"' | '\'' | ')'))
            .unwrap_or(from.len());
        let word = &from[..end];
        shortened.push_str(before);
        if starts_word && word[1..].contains('/') {
            shortened.push_str("…/");
            shortened.push_str(word.rsplit('/').find(|part| !part.is_empty()).unwrap_or(""));
        } else {
            shortened.push_str(word);
        }
        rest = &from[end..];
    }
    shortened.push_str(rest);
    shortened
}

impl From<InteractiveError> for ServeError {
    fn from(error: InteractiveError) -> Self {
        let message = without_paths(&error.to_string());
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

#[cfg(test)]
mod tests {
    use super::without_paths;

    #[test]
    fn absolute_paths_are_shortened_to_their_file_names() {
        assert_eq!(
            without_paths("no snapshot at /home/ann/p/.robota/sessions/s1.json, sorry"),
            "no snapshot at …/s1.json, sorry"
        );
        assert_eq!(
            without_paths("Lock file: `/tmp/x/s1.lock` (held)"),
            "Lock file: `…/s1.lock` (held)"
        );
        // Not paths: a URL, a ratio, a lone slash, a relative path.
        for kept in [
            "see http://127.0.0.1:7420/v1/sessions",
            "1/2 done",
            "a / b",
            "src/main.rs changed",
        ] {
            assert_eq!(without_paths(kept), kept);
        }
        assert_eq!(without_paths("/etc/passwd"), "…/passwd");
        assert_eq!(without_paths(""), "");
    }
}
