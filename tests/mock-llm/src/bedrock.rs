//! The cloud routes of the Anthropic dialect: Amazon Bedrock's
//! `POST /model/{modelId}/invoke-with-response-stream` (the Anthropic events as
//! `application/vnd.amazon.eventstream` frames, faults as Bedrock exception frames and error
//! responses), Google Vertex AI's
//! `POST /v1/projects/{p}/locations/{r}/publishers/anthropic/models/{model}:streamRawPredict`
//! (the Anthropic SSE stream), and an OAuth token endpoint (`POST /token`) for service-account
//! key files whose `token_uri` points here.
//!
//! Both clouds take the model from the path and require their own `anthropic_version` in the
//! body (Bedrock: `bedrock-2023-05-31`, without `model` and `stream`; Vertex AI:
//! `vertex-2023-10-16`, without `model`).

use aws_smithy_eventstream::frame::write_message_to;
use aws_smithy_types::event_stream::{Header, HeaderValue, Message};
use base64::Engine as _;
use serde_json::Value;

use crate::sse::Event;

/// The body's `anthropic_version` Bedrock requires.
pub(crate) const BEDROCK_VERSION: &str = "bedrock-2023-05-31";
/// The body's `anthropic_version` Vertex AI requires.
pub(crate) const VERTEX_VERSION: &str = "vertex-2023-10-16";

/// A cloud route and the model its path names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Cloud {
    /// Amazon Bedrock `invoke-with-response-stream`.
    Bedrock {
        /// The model id, percent-decoded.
        model: String,
    },
    /// Google Vertex AI `streamRawPredict`.
    Vertex {
        /// The model id.
        model: String,
    },
}

/// The cloud route `path` names, if any.
pub(crate) fn route(path: &str) -> Option<Cloud> {
    if let Some(rest) = path.strip_prefix("/model/") {
        let id = rest.strip_suffix("/invoke-with-response-stream")?;
        if id.is_empty() || id.contains('/') {
            return None;
        }
        return Some(Cloud::Bedrock {
            model: percent_decode(id),
        });
    }
    let rest = path.strip_prefix("/v1/projects/")?;
    let model = rest.strip_suffix(":streamRawPredict")?;
    let parts: Vec<&str> = model.split('/').collect();
    match parts.as_slice() {
        [_project, "locations", _region, "publishers", "anthropic", "models", model]
            if !model.is_empty() =>
        {
            Some(Cloud::Vertex {
                model: (*model).to_owned(),
            })
        }
        _ => None,
    }
}

impl Cloud {
    /// The model named in the path.
    pub(crate) fn model(&self) -> &str {
        match self {
            Cloud::Bedrock { model } | Cloud::Vertex { model } => model,
        }
    }

    /// Whether the stream is event-stream framed (Bedrock) rather than SSE.
    pub(crate) fn eventstream(&self) -> bool {
        matches!(self, Cloud::Bedrock { .. })
    }

    /// Rejects bodies the cloud would reject for shape (the Messages API checks run as well).
    pub(crate) fn check(&self, body: &Value) -> Result<(), String> {
        let version = body.get("anthropic_version").and_then(Value::as_str);
        match self {
            Cloud::Bedrock { .. } => {
                if version != Some(BEDROCK_VERSION) {
                    return Err(format!(
                        "`anthropic_version` must be \"{BEDROCK_VERSION}\" (got {version:?})"
                    ));
                }
                // Bedrock's own wording for keys the model does not take.
                for key in ["model", "stream"] {
                    if body.get(key).is_some() {
                        return Err(format!("extraneous key [{key}] is not permitted"));
                    }
                }
            }
            Cloud::Vertex { .. } => {
                if version != Some(VERTEX_VERSION) {
                    return Err(format!(
                        "`anthropic_version` must be \"{VERTEX_VERSION}\" (got {version:?})"
                    ));
                }
                if body.get("model").is_some() {
                    return Err("`model` belongs in the URL, not the body".into());
                }
            }
        }
        Ok(())
    }
}

/// `%XX` escapes decoded (invalid escapes are kept as they are).
pub(crate) fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| char::from(b).to_digit(16);
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                out.push(u8::try_from(h * 16 + l).unwrap_or(b'?'));
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// One planned Anthropic event as Bedrock frames it: a `chunk` event whose payload is
/// `{"bytes": "<base64 of the event JSON>"}`, or, for an in-stream `error` event, an exception
/// frame named after the error type. A raw event is written as it is.
pub(crate) fn encode(event: &Event) -> Vec<u8> {
    if event.raw {
        return event.data.clone().into_bytes();
    }
    let message = if event.name == Some("error") {
        let parsed: Value = serde_json::from_str(&event.data).unwrap_or_default();
        let error_type = parsed
            .pointer("/error/type")
            .and_then(Value::as_str)
            .unwrap_or("api_error");
        let text = parsed
            .pointer("/error/message")
            .and_then(Value::as_str)
            .unwrap_or("error");
        let payload = serde_json::json!({ "message": text }).to_string();
        Message::new_from_parts(
            vec![
                string_header(":message-type", "exception"),
                string_header(":exception-type", exception_name(error_type)),
                string_header(":content-type", "application/json"),
            ],
            payload.into_bytes(),
        )
    } else {
        let bytes = base64::engine::general_purpose::STANDARD.encode(event.data.as_bytes());
        let payload = serde_json::json!({ "bytes": bytes }).to_string();
        Message::new_from_parts(
            vec![
                string_header(":message-type", "event"),
                string_header(":event-type", "chunk"),
                string_header(":content-type", "application/json"),
            ],
            payload.into_bytes(),
        )
    };
    let mut out = Vec::new();
    // Writing to a Vec fails only for headers over the format's limits, which these are not.
    if write_message_to(&message, &mut out).is_err() {
        out.clear();
    }
    out
}

/// A string-valued frame header.
fn string_header(name: &'static str, value: impl Into<String>) -> Header {
    Header::new(name, HeaderValue::String(value.into().into()))
}

/// The stream exception for a script's error type: Bedrock names (`throttlingException`, …)
/// pass through; Anthropic error types map to the exception Bedrock raises for them.
fn exception_name(error_type: &str) -> String {
    if error_type.ends_with("Exception") {
        return error_type.to_owned();
    }
    match error_type {
        "rate_limit_error" => "throttlingException",
        "overloaded_error" => "serviceUnavailableException",
        "invalid_request_error" => "validationException",
        "api_error" => "internalServerException",
        _ => "modelStreamErrorException",
    }
    .to_owned()
}

/// A Bedrock HTTP error: the JSON body (`{"message": …}`) and the `x-amzn-ErrorType` value.
pub(crate) fn error_response(
    status: u16,
    error_type: Option<&str>,
    message: Option<&str>,
) -> (String, String) {
    let name = match error_type {
        Some(name) if name.ends_with("Exception") => name.to_owned(),
        _ => match status {
            400 => "ValidationException",
            403 => "AccessDeniedException",
            404 => "ResourceNotFoundException",
            408 => "ModelTimeoutException",
            424 => "ModelErrorException",
            429 => "ThrottlingException",
            503 => "ServiceUnavailableException",
            _ => "InternalServerException",
        }
        .to_owned(),
    };
    let text = message.unwrap_or(crate::plan::default_error_message(status));
    let body = serde_json::json!({ "message": text }).to_string();
    (
        body,
        format!("{name}:http://internal.amazon.com/coral/com.amazon.bedrock/"),
    )
}

/// The OAuth token response for `POST /token` request number `seq`; `expires_in` comes from the
/// query string (`?expires_in=N`, default 3600) so a test can make tokens expire early.
pub(crate) fn token_response(seq: u64, query: Option<&str>) -> String {
    let expires_in = query
        .into_iter()
        .flat_map(|q| q.split('&'))
        .find_map(|pair| pair.strip_prefix("expires_in="))
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(3600);
    serde_json::json!({
        "access_token": format!("ya29.mock-token-{seq}"),
        "expires_in": expires_in,
        "token_type": "Bearer",
    })
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes() {
        assert_eq!(
            route("/model/anthropic.claude-x-v1%3A0/invoke-with-response-stream"),
            Some(Cloud::Bedrock {
                model: "anthropic.claude-x-v1:0".into()
            })
        );
        assert_eq!(
            route(
                "/v1/projects/p/locations/global/publishers/anthropic/models/claude-x@1:streamRawPredict"
            ),
            Some(Cloud::Vertex {
                model: "claude-x@1".into()
            })
        );
        assert_eq!(route("/model//invoke-with-response-stream"), None);
        assert_eq!(route("/v1/messages"), None);
    }

    #[test]
    fn percent_decoding_keeps_bad_escapes() {
        assert_eq!(percent_decode("a%3Ab%2F%zz%4"), "a:b/%zz%4");
    }
}
