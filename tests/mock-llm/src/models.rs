//! The model-listing endpoints (`GET /v1/models`, `GET /models`, `GET /v1beta/models`) in the
//! shapes of Anthropic, OpenAI and Gemini, answered from the script's `models` and checked against
//! its `api_key`; what a provider probe talks to. They consume no turn.

use hyper::header::HeaderMap;
use hyper::StatusCode;
use serde_json::{json, Value};

use crate::script::Script;

/// Which API's listing a request asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Listing {
    /// `GET /v1/models` with an `anthropic-version` header.
    Anthropic,
    /// `GET /v1/models` or `GET /models` otherwise.
    OpenAi,
    /// `GET /v1beta/models`.
    Gemini,
}

impl Listing {
    /// The listing `path` asks for, if it is one.
    pub(crate) fn of(path: &str, headers: &HeaderMap) -> Option<Listing> {
        match path {
            "/v1beta/models" => Some(Listing::Gemini),
            "/v1/models" | "/models" if headers.contains_key("anthropic-version") => {
                Some(Listing::Anthropic)
            }
            "/v1/models" | "/models" => Some(Listing::OpenAi),
            _ => None,
        }
    }
}

/// The status and JSON body answering a listing request.
pub(crate) fn answer(
    listing: Listing,
    script: &Script,
    headers: &HeaderMap,
) -> (StatusCode, String) {
    if let Some(expected) = &script.api_key {
        if presented_key(listing, headers).as_deref() != Some(expected.as_str()) {
            return (StatusCode::UNAUTHORIZED, unauthorized(listing).to_string());
        }
    }
    let ids = &script.models;
    let body = match listing {
        Listing::Anthropic => json!({
            "data": ids.iter().map(|id| json!({
                "type": "model", "id": id, "display_name": id,
                "created_at": "2025-01-01T00:00:00Z"
            })).collect::<Vec<_>>(),
            "has_more": false,
            "first_id": ids.first(),
            "last_id": ids.last(),
        }),
        Listing::OpenAi => json!({
            "object": "list",
            "data": ids.iter().map(|id| json!({
                "id": id, "object": "model", "created": 1_735_689_600, "owned_by": "mock-llm"
            })).collect::<Vec<_>>(),
        }),
        Listing::Gemini => json!({
            "models": ids.iter().map(|id| json!({
                "name": format!("models/{id}"), "displayName": id,
                "supportedGenerationMethods": ["generateContent", "streamGenerateContent"]
            })).collect::<Vec<_>>(),
        }),
    };
    (StatusCode::OK, body.to_string())
}

/// The key the request carries in the place its API expects it.
fn presented_key(listing: Listing, headers: &HeaderMap) -> Option<String> {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    match listing {
        Listing::Anthropic => header("x-api-key"),
        Listing::OpenAi => {
            header("authorization").and_then(|v| v.strip_prefix("Bearer ").map(str::to_owned))
        }
        Listing::Gemini => header("x-goog-api-key"),
    }
}

/// A 401 body in the API's own error shape.
fn unauthorized(listing: Listing) -> Value {
    match listing {
        Listing::Anthropic => json!({
            "type": "error",
            "error": {"type": "authentication_error", "message": "invalid x-api-key"}
        }),
        Listing::OpenAi => json!({
            "error": {"message": "Incorrect API key provided.", "type": "invalid_request_error",
                      "param": null, "code": "invalid_api_key"}
        }),
        Listing::Gemini => json!({
            "error": {"code": 401, "message": "API key not valid. Please pass a valid API key.",
                      "status": "UNAUTHENTICATED"}
        }),
    }
}
