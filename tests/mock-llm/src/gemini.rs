//! The Gemini API wire format: the `GenerateContentResponse` chunks of
//! `POST /v1beta/models/{model}:streamGenerateContent?alt=sse` for a turn, in-stream errors and
//! Google's HTTP error bodies (`{"error": {"code", "message", "status"}}`).
//!
//! As documented at <https://ai.google.dev/api/generate-content>: every event is `data: <json>`
//! with no `event:` line, each chunk carries one candidate whose `content.parts` hold the new
//! text (`thought: true` for thinking), whole `functionCall`s and `thoughtSignature`s; the last
//! chunk has the `finishReason` and the `usageMetadata`. There is no terminator after it.

use serde::Serialize;
use serde_json::Value;

use crate::plan::{padded, to_json, Ctx};
use crate::script::{Turn, Usage};
use crate::sse::Event;

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Chunk<'a> {
    candidates: Vec<Candidate<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    usage_metadata: Option<UsageMetadata>,
    model_version: &'a str,
    response_id: &'a str,
    // Only set on the `oversized` fault's chunk; clients ignore unknown fields.
    #[serde(skip_serializing_if = "Option::is_none")]
    padding: Option<String>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Candidate<'a> {
    content: Content<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    finish_reason: Option<&'a str>,
    index: u32,
}

#[derive(Serialize)]
struct Content<'a> {
    parts: Vec<Part<'a>>,
    role: &'static str,
}

#[derive(Serialize, Default)]
#[serde(rename_all = "camelCase")]
struct Part<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thought: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    function_call: Option<FunctionCall<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thought_signature: Option<&'a str>,
}

#[derive(Serialize)]
struct FunctionCall<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a str>,
    name: &'a str,
    args: Value,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct UsageMetadata {
    prompt_token_count: u64,
    candidates_token_count: u64,
    total_token_count: u64,
    #[serde(skip_serializing_if = "is_zero")]
    cached_content_token_count: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Maps the script's Anthropic-style usage: Gemini's `promptTokenCount` includes cached tokens.
fn gemini_usage(u: &Usage) -> UsageMetadata {
    let prompt = u.input_tokens + u.cache_read_input_tokens + u.cache_creation_input_tokens;
    UsageMetadata {
        prompt_token_count: prompt,
        candidates_token_count: u.output_tokens,
        total_token_count: prompt + u.output_tokens,
        cached_content_token_count: u.cache_read_input_tokens,
    }
}

/// The Gemini `finishReason`: the script's (other APIs' spellings translated) or `STOP`
/// (Gemini says `STOP` after function calls too).
pub(crate) fn finish_reason(turn: &Turn) -> String {
    match turn.stop_reason.as_deref() {
        Some("max_tokens" | "length") => "MAX_TOKENS".into(),
        Some("refusal" | "content_filter") => "SAFETY".into(),
        None if turn.refusal.is_some() => "SAFETY".into(),
        Some("end_turn" | "stop" | "stop_sequence" | "tool_use" | "tool_calls") | None => {
            "STOP".into()
        }
        Some(other) => other.into(),
    }
}

/// The signature sent on the turn's first function call (or its last text part): the script's
/// `thinking_signature`, else `c2lnX21vY2s=` (`sig_mock` in base64, as the API's signatures are
/// base64) when the turn thinks, else none.
fn signature(turn: &Turn) -> Option<&str> {
    match (&turn.thinking_signature, &turn.thinking) {
        (Some(signature), _) => Some(signature.as_str()),
        (None, Some(_)) => Some("c2lnX21vY2s="),
        (None, None) => None,
    }
}

struct Chunker<'c> {
    id: String,
    ctx: &'c Ctx<'c>,
}

impl Chunker<'_> {
    fn chunk(
        &self,
        parts: Vec<Part<'_>>,
        finish_reason: Option<&str>,
        usage: Option<UsageMetadata>,
    ) -> Event {
        Event::data(to_json(&Chunk {
            candidates: vec![Candidate {
                content: Content {
                    parts,
                    role: "model",
                },
                finish_reason,
                index: 0,
            }],
            usage_metadata: usage,
            model_version: self.ctx.model,
            response_id: &self.id,
            padding: None,
        }))
    }
}

/// The full chunk sequence for `turn`; `include_terminal: false` drops the last chunk (the one
/// with `finishReason` and `usageMetadata`).
pub(crate) fn events(turn: &Turn, ctx: &Ctx<'_>, include_terminal: bool) -> Vec<Event> {
    let c = Chunker {
        id: format!("resp-mock-{}", ctx.seq),
        ctx,
    };
    let signature = signature(turn);
    let mut out = Vec::new();
    if let Some(thinking) = &turn.thinking {
        for piece in thinking.pieces() {
            let part = Part {
                text: Some(piece),
                thought: Some(true),
                ..Part::default()
            };
            out.push(c.chunk(vec![part], None, None));
        }
    }
    for chunks in [&turn.text, &turn.refusal].into_iter().flatten() {
        for piece in chunks.pieces() {
            let part = Part {
                text: Some(piece),
                ..Part::default()
            };
            out.push(c.chunk(vec![part], None, None));
        }
    }
    // Function calls come whole, in one chunk; the first carries the signature. The API
    // leaves `id` out unless the model set one, so only a script's explicit id is sent.
    let calls: Vec<Part<'_>> = turn
        .tool_calls
        .iter()
        .enumerate()
        .map(|(index, call)| {
            let raw = call.argument_pieces().concat();
            // Arguments that are not JSON (a script testing invalid arguments) go as a string;
            // the real API always sends an object.
            let args = serde_json::from_str(&raw).unwrap_or(Value::String(raw));
            Part {
                function_call: Some(FunctionCall {
                    id: call.id.as_deref(),
                    name: &call.name,
                    args,
                }),
                thought_signature: if index == 0 { signature } else { None },
                ..Part::default()
            }
        })
        .collect();
    let has_calls = !calls.is_empty();
    if has_calls {
        out.push(c.chunk(calls, None, None));
    }
    if include_terminal {
        let reason = finish_reason(turn);
        // Without function calls the signature comes on a last, empty text part.
        let parts = match (has_calls, signature) {
            (false, Some(signature)) => vec![Part {
                text: Some(""),
                thought_signature: Some(signature),
                ..Part::default()
            }],
            _ => vec![Part {
                text: Some(""),
                ..Part::default()
            }],
        };
        out.push(c.chunk(parts, Some(&reason), Some(gemini_usage(&ctx.usage(turn)))));
    }
    out
}

/// A chunk whose JSON is cut off mid-string.
pub(crate) fn malformed() -> Event {
    Event::data(r#"{"candidates":[{"content":{"parts":[{"text":"cut of"#.to_owned())
}

/// A chunk with no parts whose data payload is exactly `bytes` long (or minimal).
pub(crate) fn oversized(ctx: &Ctx<'_>, bytes: usize) -> Event {
    let id = format!("resp-mock-{}", ctx.seq);
    let data = padded(bytes, |padding| {
        to_json(&Chunk {
            candidates: vec![Candidate {
                content: Content {
                    parts: Vec::new(),
                    role: "model",
                },
                finish_reason: None,
                index: 0,
            }],
            usage_metadata: None,
            model_version: ctx.model,
            response_id: &id,
            padding: Some(padding),
        })
    });
    Event::data(data)
}

#[derive(Serialize)]
struct ErrorEnvelope<'a> {
    error: ErrorDetail<'a>,
}

#[derive(Serialize)]
struct ErrorDetail<'a> {
    code: u16,
    message: &'a str,
    status: &'a str,
}

/// Google's canonical status name for an HTTP status.
fn status_name(status: u16) -> &'static str {
    match status {
        400 => "INVALID_ARGUMENT",
        401 => "UNAUTHENTICATED",
        403 => "PERMISSION_DENIED",
        404 => "NOT_FOUND",
        409 => "ABORTED",
        429 => "RESOURCE_EXHAUSTED",
        499 => "CANCELLED",
        501 => "UNIMPLEMENTED",
        503 => "UNAVAILABLE",
        504 => "DEADLINE_EXCEEDED",
        500..=599 => "INTERNAL",
        _ => "FAILED_PRECONDITION",
    }
}

/// The in-stream error chunk: `data: {"error": {...}}`; `error_type` is the `status` name.
pub(crate) fn stream_error(error_type: Option<&str>, message: Option<&str>) -> Event {
    Event::data(to_json(&ErrorEnvelope {
        error: ErrorDetail {
            code: 503,
            message: message.unwrap_or("The model is overloaded. Please try again later."),
            status: error_type.unwrap_or("UNAVAILABLE"),
        },
    }))
}

/// The JSON body of an HTTP error response; `error_type` replaces the `status` name.
pub(crate) fn error_body(status: u16, error_type: Option<&str>, message: Option<&str>) -> String {
    to_json(&ErrorEnvelope {
        error: ErrorDetail {
            code: status,
            message: message.unwrap_or(crate::plan::default_error_message(status)),
            status: error_type.unwrap_or(status_name(status)),
        },
    })
}
