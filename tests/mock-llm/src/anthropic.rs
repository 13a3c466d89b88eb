//! The Anthropic Messages wire format: the SSE event sequence for a turn, in-stream errors and
//! HTTP error bodies, shaped like `POST /v1/messages` with `"stream": true`.
//!
//! JSON is built from `Serialize` structs (not `json!`) so keys come out in the API's order,
//! with `type` first, which keeps captured streams readable and diffable against the real API.

use serde::Serialize;
use serde_json::{Map, Value};

use crate::plan::{anthropic_stop_reason, to_json, Ctx};
use crate::script::{Turn, Usage};
use crate::sse::Event;

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Wire<'a> {
    MessageStart {
        message: StartMessage<'a>,
    },
    ContentBlockStart {
        index: usize,
        content_block: Block<'a>,
    },
    // A block given whole as JSON (server-tool blocks).
    #[serde(rename = "content_block_start")]
    RawBlockStart {
        index: usize,
        content_block: &'a Value,
    },
    ContentBlockDelta {
        index: usize,
        delta: Delta<'a>,
    },
    ContentBlockStop {
        index: usize,
    },
    Ping,
    // Same event as `Ping`, plus a field real clients ignore: used to make an event of exact size.
    #[serde(rename = "ping")]
    PaddedPing {
        padding: String,
    },
    MessageDelta {
        delta: StopDelta<'a>,
        usage: OutputUsage,
    },
    MessageStop,
    Error {
        error: ErrorDetail<'a>,
    },
}

impl Wire<'_> {
    /// The SSE `event:` name, which the API always sets equal to the data's `type`.
    fn name(&self) -> &'static str {
        match self {
            Wire::MessageStart { .. } => "message_start",
            Wire::ContentBlockStart { .. } | Wire::RawBlockStart { .. } => "content_block_start",
            Wire::ContentBlockDelta { .. } => "content_block_delta",
            Wire::ContentBlockStop { .. } => "content_block_stop",
            Wire::Ping | Wire::PaddedPing { .. } => "ping",
            Wire::MessageDelta { .. } => "message_delta",
            Wire::MessageStop => "message_stop",
            Wire::Error { .. } => "error",
        }
    }

    fn event(&self) -> Event {
        Event::named(self.name(), to_json(self))
    }
}

#[derive(Serialize)]
struct StartMessage<'a> {
    id: String,
    #[serde(rename = "type")]
    kind: &'static str,
    role: &'static str,
    content: Vec<Value>,
    model: &'a str,
    stop_reason: Option<&'a str>,
    stop_sequence: Option<&'a str>,
    usage: StartUsage,
}

#[derive(Serialize)]
struct StartUsage {
    input_tokens: u64,
    cache_creation_input_tokens: u64,
    cache_read_input_tokens: u64,
    output_tokens: u64,
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Block<'a> {
    Text {
        text: &'a str,
    },
    Thinking {
        thinking: &'a str,
    },
    ToolUse {
        id: &'a str,
        name: &'a str,
        input: Map<String, Value>,
    },
}

/// Delta kinds; the wire names are `<kind>_delta`.
#[derive(Serialize)]
#[serde(tag = "type")]
enum Delta<'a> {
    #[serde(rename = "text_delta")]
    Text { text: &'a str },
    #[serde(rename = "thinking_delta")]
    Thinking { thinking: &'a str },
    #[serde(rename = "signature_delta")]
    Signature { signature: &'a str },
    #[serde(rename = "input_json_delta")]
    InputJson { partial_json: &'a str },
    #[serde(rename = "citations_delta")]
    Citations { citation: &'a Value },
}

#[derive(Serialize)]
struct StopDelta<'a> {
    stop_reason: &'a str,
    stop_sequence: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stop_details: Option<&'a Value>,
}

#[derive(Serialize)]
struct OutputUsage {
    output_tokens: u64,
}

#[derive(Serialize)]
struct ErrorDetail<'a> {
    #[serde(rename = "type")]
    kind: &'a str,
    message: &'a str,
}

/// The full event sequence for `turn`; `include_terminal: false` drops `message_stop`.
pub(crate) fn events(turn: &Turn, ctx: &Ctx<'_>, include_terminal: bool) -> Vec<Event> {
    let usage = ctx.usage(turn);
    let default_id = |i: usize| format!("toolu_mock_{}_{i}", ctx.turn_index);
    let content = if turn.content_in_start {
        whole_content(turn, &default_id)
    } else {
        Vec::new()
    };
    let mut out = vec![Wire::MessageStart {
        message: StartMessage {
            id: format!("msg_mock_{}", ctx.seq),
            kind: "message",
            role: "assistant",
            content,
            model: ctx.model,
            stop_reason: None,
            stop_sequence: None,
            usage: start_usage(&usage),
        },
    }
    .event()];

    let mut blocks = Blocks {
        out: &mut out,
        next_index: 0,
    };
    if turn.content_in_start {
        blocks.next_index = whole_content(turn, &default_id).len();
        // The streamed part is empty: the ping still comes, right after message_start.
        blocks.out.push(Wire::Ping.event());
    } else {
        if let Some(thinking) = &turn.thinking {
            let index = blocks.start(Block::Thinking { thinking: "" });
            for piece in thinking.pieces() {
                blocks.delta(index, Delta::Thinking { thinking: piece });
            }
            let signature = turn.thinking_signature.as_deref().unwrap_or("sig_mock");
            blocks.delta(index, Delta::Signature { signature });
            blocks.stop(index);
        }
        for block in &turn.server_blocks {
            let index = blocks.start_raw(block);
            blocks.stop(index);
        }
        for block in &turn.content_blocks {
            blocks.streamed(block);
        }
        for text in [&turn.text, &turn.refusal].into_iter().flatten() {
            let index = blocks.start(Block::Text { text: "" });
            for piece in text.pieces() {
                blocks.delta(index, Delta::Text { text: piece });
            }
            blocks.stop(index);
        }
        for (i, call) in turn.tool_calls.iter().enumerate() {
            let id = default_id(i);
            let index = blocks.start(Block::ToolUse {
                id: call.id.as_deref().unwrap_or(&id),
                name: &call.name,
                input: Map::new(),
            });
            for piece in call.argument_pieces() {
                blocks.delta(
                    index,
                    Delta::InputJson {
                        partial_json: &piece,
                    },
                );
            }
            blocks.stop(index);
        }
        if blocks.next_index == 0 {
            // No content blocks: the ping still comes, right after message_start.
            out.push(Wire::Ping.event());
        }
    }

    out.push(
        Wire::MessageDelta {
            delta: StopDelta {
                stop_reason: &anthropic_stop_reason(turn),
                stop_sequence: None,
                stop_details: turn.stop_details.as_ref(),
            },
            usage: OutputUsage {
                output_tokens: usage.output_tokens,
            },
        }
        .event(),
    );
    if include_terminal {
        out.push(Wire::MessageStop.event());
    }
    out
}

/// The turn's content as whole blocks, for `message_start.message.content`.
fn whole_content(turn: &Turn, default_id: &dyn Fn(usize) -> String) -> Vec<Value> {
    let mut content = Vec::new();
    if let Some(thinking) = &turn.thinking {
        content.push(serde_json::json!({
            "type": "thinking",
            "thinking": thinking.joined(),
            "signature": turn.thinking_signature.as_deref().unwrap_or("sig_mock"),
        }));
    }
    content.extend(turn.server_blocks.iter().cloned());
    content.extend(turn.content_blocks.iter().cloned());
    for text in [&turn.text, &turn.refusal].into_iter().flatten() {
        content.push(serde_json::json!({"type": "text", "text": text.joined()}));
    }
    for (i, call) in turn.tool_calls.iter().enumerate() {
        let input = match (&call.arguments_chunks, &call.raw_arguments) {
            (None, None) => call.input.clone(),
            _ => serde_json::from_str(&call.argument_pieces().concat()).unwrap_or_default(),
        };
        content.push(serde_json::json!({
            "type": "tool_use",
            "id": call.id.clone().unwrap_or_else(|| default_id(i)),
            "name": call.name,
            "input": input,
        }));
    }
    content
}

fn start_usage(usage: &Usage) -> StartUsage {
    StartUsage {
        input_tokens: usage.input_tokens,
        cache_creation_input_tokens: usage.cache_creation_input_tokens,
        cache_read_input_tokens: usage.cache_read_input_tokens,
        // The real API reports a provisional count here and the final one in message_delta;
        // 0 keeps clients that add the two from double counting.
        output_tokens: 0,
    }
}

/// Appends content-block events, numbering blocks and placing the `ping` where the real API
/// sends it: right after the first `content_block_start`.
struct Blocks<'o> {
    out: &'o mut Vec<Event>,
    next_index: usize,
}

impl Blocks<'_> {
    fn start(&mut self, content_block: Block<'_>) -> usize {
        let index = self.next_index;
        self.next_index += 1;
        self.out.push(
            Wire::ContentBlockStart {
                index,
                content_block,
            }
            .event(),
        );
        if index == 0 {
            self.out.push(Wire::Ping.event());
        }
        index
    }

    fn start_raw(&mut self, content_block: &Value) -> usize {
        let index = self.next_index;
        self.next_index += 1;
        self.out.push(
            Wire::RawBlockStart {
                index,
                content_block,
            }
            .event(),
        );
        if index == 0 {
            self.out.push(Wire::Ping.event());
        }
        index
    }

    /// One of a turn's `content_blocks`, streamed as the API streams it: a server tool call's
    /// input as `input_json_delta`, a text block's citations as `citations_delta` (each before
    /// the text), anything else whole.
    fn streamed(&mut self, block: &Value) {
        match block.get("type").and_then(Value::as_str) {
            Some("server_tool_use") => {
                let mut start = block.clone();
                start["input"] = Value::Object(Map::new());
                let index = self.start_raw(&start);
                let input = block.get("input").map(to_json).unwrap_or_default();
                // Two pieces, cut at a character boundary, as the API splits long inputs.
                let mut cut = input.len() / 2;
                while !input.is_char_boundary(cut) {
                    cut -= 1;
                }
                for piece in [&input[..cut], &input[cut..]] {
                    if !piece.is_empty() {
                        self.delta(
                            index,
                            Delta::InputJson {
                                partial_json: piece,
                            },
                        );
                    }
                }
                self.stop(index);
            }
            Some("text") => {
                let index = self.start(Block::Text { text: "" });
                let citations = block.get("citations").and_then(Value::as_array);
                for citation in citations.into_iter().flatten() {
                    self.delta(index, Delta::Citations { citation });
                }
                let text = block.get("text").and_then(Value::as_str).unwrap_or("");
                if !text.is_empty() {
                    self.delta(index, Delta::Text { text });
                }
                self.stop(index);
            }
            _ => {
                let index = self.start_raw(block);
                self.stop(index);
            }
        }
    }

    fn delta(&mut self, index: usize, delta: Delta<'_>) {
        self.out
            .push(Wire::ContentBlockDelta { index, delta }.event());
    }

    fn stop(&mut self, index: usize) {
        self.out.push(Wire::ContentBlockStop { index }.event());
    }
}

/// A `content_block_delta` whose JSON is cut off mid-string.
pub(crate) fn malformed() -> Event {
    Event::named(
        "content_block_delta",
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"cut of"#
            .to_owned(),
    )
}

/// A `ping` whose data payload is exactly `bytes` long (or minimal, if `bytes` is smaller).
pub(crate) fn oversized(bytes: usize) -> Event {
    let data = crate::plan::padded(bytes, |padding| to_json(&Wire::PaddedPing { padding }));
    Event::named("ping", data)
}

/// The in-stream `event: error`.
pub(crate) fn stream_error(error_type: Option<&str>, message: Option<&str>) -> Event {
    Wire::Error {
        error: ErrorDetail {
            kind: error_type.unwrap_or("overloaded_error"),
            message: message.unwrap_or("Overloaded"),
        },
    }
    .event()
}

#[derive(Serialize)]
struct ErrorEnvelope<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    error: ErrorDetail<'a>,
}

/// The JSON body of an HTTP error response.
pub(crate) fn error_body(status: u16, error_type: Option<&str>, message: Option<&str>) -> String {
    let default_type = match status {
        400 => "invalid_request_error",
        401 => "authentication_error",
        403 => "permission_error",
        404 => "not_found_error",
        413 => "request_too_large",
        429 => "rate_limit_error",
        529 => "overloaded_error",
        500..=599 => "api_error",
        _ => "invalid_request_error",
    };
    to_json(&ErrorEnvelope {
        kind: "error",
        error: ErrorDetail {
            kind: error_type.unwrap_or(default_type),
            message: message.unwrap_or(crate::plan::default_error_message(status)),
        },
    })
}
