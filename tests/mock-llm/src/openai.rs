//! The OpenAI Chat Completions wire format: `chat.completion.chunk` SSE chunks for a turn, the
//! optional usage chunk, `[DONE]`, in-stream errors and HTTP error bodies.
//!
//! Like `anthropic`, JSON comes from `Serialize` structs so keys keep the API's order.

use serde::Serialize;
use serde_json::{json, Value};

use crate::plan::{openai_finish_reason, padded, to_json, Ctx};
use crate::script::{Turn, Usage};
use crate::sse::Event;

#[derive(Serialize)]
struct Chunk<'a> {
    id: &'a str,
    object: &'static str,
    created: u64,
    model: &'a str,
    system_fingerprint: &'static str,
    choices: Vec<Choice<'a>>,
    // Absent unless the request asked for usage; then `null` on every chunk but the last,
    // which is what the real API does.
    #[serde(skip_serializing_if = "Option::is_none")]
    usage: Option<Option<OpenAiUsage>>,
    // Only set on the `oversized` fault's chunk; clients ignore unknown fields.
    #[serde(skip_serializing_if = "Option::is_none")]
    padding: Option<String>,
}

#[derive(Serialize)]
struct Choice<'a> {
    index: u32,
    delta: Delta<'a>,
    logprobs: Option<()>,
    finish_reason: Option<&'a str>,
}

#[derive(Serialize, Default)]
struct Delta<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    role: Option<&'static str>,
    // `Some(Value::Null)` serializes as `"content": null`, as in the role chunk of a tool-only
    // reply; a string, or a list of typed parts (`content_parts`).
    #[serde(skip_serializing_if = "Option::is_none")]
    content: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    refusal: Option<Option<&'a str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_content: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_calls: Option<[ToolCallDelta<'a>; 1]>,
}

#[derive(Serialize)]
struct ToolCallDelta<'a> {
    index: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a str>,
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    kind: Option<&'static str>,
    function: FunctionDelta<'a>,
}

#[derive(Serialize)]
struct FunctionDelta<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<&'a str>,
    arguments: &'a str,
}

#[derive(Serialize)]
struct OpenAiUsage {
    prompt_tokens: u64,
    completion_tokens: u64,
    total_tokens: u64,
    prompt_tokens_details: PromptDetails,
    completion_tokens_details: CompletionDetails,
}

#[derive(Serialize)]
struct PromptDetails {
    cached_tokens: u64,
}

#[derive(Serialize)]
struct CompletionDetails {
    reasoning_tokens: u64,
}

/// Maps the script's Anthropic-style usage: OpenAI's `prompt_tokens` includes cached tokens.
fn openai_usage(u: &Usage) -> OpenAiUsage {
    let prompt = u.input_tokens + u.cache_read_input_tokens + u.cache_creation_input_tokens;
    OpenAiUsage {
        prompt_tokens: prompt,
        completion_tokens: u.output_tokens,
        total_tokens: prompt + u.output_tokens,
        prompt_tokens_details: PromptDetails {
            cached_tokens: u.cache_read_input_tokens,
        },
        completion_tokens_details: CompletionDetails {
            reasoning_tokens: 0,
        },
    }
}

/// Builds chunks sharing the per-response fields.
struct Chunker<'c> {
    id: String,
    ctx: &'c Ctx<'c>,
}

impl Chunker<'_> {
    fn chunk(&self, delta: Delta<'_>, finish_reason: Option<&str>) -> Event {
        Event::data(to_json(&Chunk {
            id: &self.id,
            object: "chat.completion.chunk",
            created: self.ctx.created,
            model: self.ctx.model,
            system_fingerprint: "fp_mock",
            choices: vec![Choice {
                index: 0,
                delta,
                logprobs: None,
                finish_reason,
            }],
            usage: self.ctx.include_usage.then_some(None),
            padding: None,
        }))
    }

    fn usage_chunk(&self, usage: &Usage) -> Event {
        Event::data(to_json(&Chunk {
            id: &self.id,
            object: "chat.completion.chunk",
            created: self.ctx.created,
            model: self.ctx.model,
            system_fingerprint: "fp_mock",
            choices: Vec::new(),
            usage: Some(Some(openai_usage(usage))),
            padding: None,
        }))
    }
}

/// The full chunk sequence for `turn`; `include_terminal: false` drops the finish-reason
/// chunk, the usage chunk and `[DONE]`.
pub(crate) fn events(turn: &Turn, ctx: &Ctx<'_>, include_terminal: bool) -> Vec<Event> {
    let c = Chunker {
        id: format!("chatcmpl-mock-{}", ctx.seq),
        ctx,
    };
    let mut out = Vec::new();
    out.push(c.chunk(
        Delta {
            role: Some("assistant"),
            content: Some(match (&turn.text, turn.content_parts) {
                (Some(_), false) => Value::from(""),
                (Some(_), true) => Value::Array(Vec::new()),
                (None, _) => Value::Null,
            }),
            // The API announces the refusal slot in the role chunk.
            refusal: turn.refusal.as_ref().map(|_| None),
            ..Delta::default()
        },
        None,
    ));
    if let Some(thinking) = &turn.thinking {
        for piece in thinking.pieces() {
            let delta = if turn.content_parts {
                Delta {
                    content: Some(
                        json!([{"type": "thinking", "thinking": [{"type": "text", "text": piece}]}]),
                    ),
                    ..Delta::default()
                }
            } else {
                Delta {
                    reasoning_content: Some(piece),
                    ..Delta::default()
                }
            };
            out.push(c.chunk(delta, None));
        }
    }
    if let Some(text) = &turn.text {
        for piece in text.pieces() {
            let content = if turn.content_parts {
                json!([{"type": "text", "text": piece}])
            } else {
                Value::from(piece)
            };
            out.push(c.chunk(
                Delta {
                    content: Some(content),
                    ..Delta::default()
                },
                None,
            ));
        }
    }
    if let Some(refusal) = &turn.refusal {
        for piece in refusal.pieces() {
            out.push(c.chunk(
                Delta {
                    refusal: Some(Some(piece)),
                    ..Delta::default()
                },
                None,
            ));
        }
    }
    for (index, call) in turn.tool_calls.iter().enumerate() {
        let default_id = format!("call_mock_{}_{index}", ctx.turn_index);
        out.push(c.chunk(
            Delta {
                tool_calls: Some([ToolCallDelta {
                    index,
                    id: Some(call.id.as_deref().unwrap_or(&default_id)),
                    kind: Some("function"),
                    function: FunctionDelta {
                        name: Some(&call.name),
                        arguments: "",
                    },
                }]),
                ..Delta::default()
            },
            None,
        ));
        for piece in call.argument_pieces() {
            out.push(c.chunk(
                Delta {
                    tool_calls: Some([ToolCallDelta {
                        index,
                        id: None,
                        kind: None,
                        function: FunctionDelta {
                            name: None,
                            arguments: &piece,
                        },
                    }]),
                    ..Delta::default()
                },
                None,
            ));
        }
    }
    if include_terminal {
        out.push(c.chunk(Delta::default(), Some(&openai_finish_reason(turn))));
        if ctx.include_usage {
            out.push(c.usage_chunk(&ctx.usage(turn)));
        }
        out.push(Event::data("[DONE]".to_owned()));
    }
    out
}

/// A chunk whose JSON is cut off mid-string.
pub(crate) fn malformed() -> Event {
    Event::data(
        r#"{"id":"chatcmpl-mock","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"cut of"#
            .to_owned(),
    )
}

/// An empty-delta chunk whose data payload is exactly `bytes` long (or minimal).
pub(crate) fn oversized(ctx: &Ctx<'_>, bytes: usize) -> Event {
    let data = padded(bytes, |padding| {
        to_json(&Chunk {
            id: &format!("chatcmpl-mock-{}", ctx.seq),
            object: "chat.completion.chunk",
            created: ctx.created,
            model: ctx.model,
            system_fingerprint: "fp_mock",
            choices: vec![Choice {
                index: 0,
                delta: Delta::default(),
                logprobs: None,
                finish_reason: None,
            }],
            usage: ctx.include_usage.then_some(None),
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
    message: &'a str,
    #[serde(rename = "type")]
    kind: &'a str,
    param: Option<&'a str>,
    code: Option<&'a str>,
}

/// The in-stream error chunk: `data: {"error": {...}}`.
pub(crate) fn stream_error(error_type: Option<&str>, message: Option<&str>) -> Event {
    Event::data(to_json(&ErrorEnvelope {
        error: ErrorDetail {
            message: message.unwrap_or("Overloaded"),
            kind: error_type.unwrap_or("server_error"),
            param: None,
            code: None,
        },
    }))
}

/// The JSON body of an HTTP error response.
pub(crate) fn error_body(
    status: u16,
    error_type: Option<&str>,
    message: Option<&str>,
    code: Option<&str>,
) -> String {
    let (default_type, default_code) = match status {
        401 => ("invalid_request_error", Some("invalid_api_key")),
        429 => ("requests", Some("rate_limit_exceeded")),
        500..=599 => ("server_error", None),
        _ => ("invalid_request_error", None),
    };
    to_json(&ErrorEnvelope {
        error: ErrorDetail {
            message: message.unwrap_or(crate::plan::default_error_message(status)),
            kind: error_type.unwrap_or(default_type),
            param: None,
            code: code.or(default_code),
        },
    })
}
