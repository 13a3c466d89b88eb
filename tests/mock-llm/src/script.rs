//! The script format: the JSON document that decides what each model request gets back.
//!
//! Every type here is `serde`-(de)serializable and rejects unknown fields, so a typo in a test
//! script fails loudly with the field's name instead of being silently ignored. The format is
//! documented field by field in `tests/mock-llm/README.md`.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

/// Errors from loading a script or starting the server.
#[derive(Debug, thiserror::Error)]
pub enum MockError {
    /// The script is not valid JSON, has an unknown or mistyped field, or fails validation.
    #[error("invalid mock-llm script: {0}")]
    Script(String),
    /// Binding the listening socket (or another I/O step) failed.
    #[error("mock-llm I/O error: {0}")]
    Io(#[from] std::io::Error),
}

/// A whole script: an ordered list of turns, one consumed per model request.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    /// When true, the turns are served in a cycle forever instead of running out.
    #[serde(default)]
    pub repeat: bool,
    /// When false, requests are not recorded (keeps memory flat in long benchmarks).
    #[serde(default = "default_true")]
    pub record: bool,
    /// When set, input token counts are computed from each request (instead of taken from the
    /// turn's `usage`), with prompt-cache reads and writes accounted as the provider would:
    /// Anthropic from the request's `cache_control` breakpoints, OpenAI from the longest prefix
    /// shared with an earlier request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_cache: Option<PromptCacheSim>,
    /// The model ids the model-listing endpoints (`GET /v1/models`, `GET /models`,
    /// `GET /v1beta/models`) answer with; they consume no turn. Default: none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub models: Vec<String>,
    /// When set, the model-listing endpoints answer 401 (in the provider's error shape) to a
    /// request whose key (`x-api-key`, `Authorization: Bearer`, `x-goog-api-key`) differs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key: Option<String>,
    /// The turns, served in order.
    pub turns: Vec<Turn>,
}

/// How mock-llm counts input tokens and simulates the provider's prompt cache (script field
/// `prompt_cache`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PromptCacheSim {
    /// Characters of the request's canonical JSON per token. Default 4.
    #[serde(default = "default_chars_per_token")]
    pub chars_per_token: u64,
    /// The shortest prefix (in tokens) that is cached; shorter ones are silently not cached, as
    /// with the real APIs (Anthropic: 1024 or more by model; OpenAI: 1024). Default 0.
    #[serde(default)]
    pub min_tokens: u64,
}

fn default_chars_per_token() -> u64 {
    4
}

fn default_true() -> bool {
    true
}

/// One model response (or one fault), consumed by one request to either model endpoint.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Turn {
    /// Text output; each chunk is sent as one delta. Absent = no text block.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<Chunks>,
    /// Thinking/reasoning output; each chunk is one delta. Absent = no thinking block.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking: Option<Chunks>,
    /// Signature sent after the thinking deltas (Anthropic only). Default `"sig_mock"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_signature: Option<String>,
    /// Tool calls, in order, after any text.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// A refusal message: OpenAI `delta.refusal` deltas; Anthropic text deltas with stop reason
    /// `refusal` (unless `stop_reason` says otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refusal: Option<Chunks>,
    /// Anthropic `message_delta.delta.stop_details`, sent verbatim (e.g. `{"type": "refusal",
    /// "category": "cyber", "explanation": "…"}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_details: Option<Value>,
    /// Anthropic content blocks sent whole (`content_block_start` + `content_block_stop`) before
    /// the text, e.g. server-tool blocks (`server_tool_use`, `web_search_tool_result`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub server_blocks: Vec<Value>,
    /// Anthropic content blocks in order, streamed the way the API streams a server-tool turn
    /// (after the thinking and `server_blocks`, before `text`): a `server_tool_use` starts with
    /// an empty `input` and sends its input as `input_json_delta`; a `text` block sends each of
    /// its `citations` as a `citations_delta` before its text; any other block (a
    /// `web_search_tool_result`, …) comes whole. Not sent by OpenAI.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub content_blocks: Vec<Value>,
    /// Responses: output items of the API's hosted tools (`web_search_call`, DashScope's
    /// `web_extractor_call`), in order after the thinking and before the text, each streamed as
    /// `response.output_item.added` (without its results) and `response.output_item.done`
    /// (whole). An item of a tool the request does not declare in `tools` is not sent (the model
    /// cannot call it). Not sent by the other endpoints.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hosted_items: Vec<Value>,
    /// OpenAI: send text and thinking as lists of typed content parts (Mistral's reasoning
    /// models): `"content": [{"type": "text", "text": …}]`, `"content": [{"type": "thinking",
    /// "thinking": [{"type": "text", "text": …}]}]`.
    #[serde(default)]
    pub content_parts: bool,
    /// Anthropic: deliver the text and tool calls whole inside `message_start.message.content`
    /// instead of as streamed blocks.
    #[serde(default)]
    pub content_in_start: bool,
    /// Send these bytes verbatim as the response body instead of building events from the turn
    /// (a recorded stream); `split_bytes` still applies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_body: Option<String>,
    /// Token usage to report. Absent = all zeros.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// Stop reason; Anthropic and OpenAI spellings are translated for the other endpoint.
    /// Absent = `tool_use`/`tool_calls` when there are tool calls, else `end_turn`/`stop`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
    /// Delay before each SSE event after the first, in milliseconds.
    #[serde(default)]
    pub chunk_delay_ms: u64,
    /// When > 0, the SSE byte stream is written (and flushed) in pieces of this many bytes.
    #[serde(default)]
    pub split_bytes: usize,
    /// Variations of the SSE framing that a conforming parser must accept.
    #[serde(default)]
    pub sse: SseOptions,
    /// A fault to inject instead of (or into) the normal response.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault: Option<Fault>,
}

/// A sequence of delta strings: `"one"`, `["a", "b"]` or `{"repeat": "tok ", "count": 1000}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Chunks {
    /// A single delta.
    One(String),
    /// One delta per element.
    Many(Vec<String>),
    /// The same delta `count` times (for long outputs in benchmarks).
    Repeat {
        /// The delta text.
        repeat: String,
        /// How many deltas.
        count: usize,
    },
}

impl Chunks {
    /// The deltas in order.
    pub fn pieces(&self) -> Vec<&str> {
        match self {
            Chunks::One(s) => vec![s.as_str()],
            Chunks::Many(v) => v.iter().map(String::as_str).collect(),
            Chunks::Repeat { repeat, count } => vec![repeat.as_str(); *count],
        }
    }

    /// All deltas concatenated.
    pub fn joined(&self) -> String {
        self.pieces().concat()
    }
}

impl From<&str> for Chunks {
    fn from(s: &str) -> Self {
        Chunks::One(s.to_owned())
    }
}

impl From<Vec<&str>> for Chunks {
    fn from(v: Vec<&str>) -> Self {
        Chunks::Many(v.into_iter().map(str::to_owned).collect())
    }
}

// Hand-written so the error says which shapes are accepted (an untagged derive only says
// "data did not match any variant").
impl<'de> Deserialize<'de> for Chunks {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct RepeatSpec {
            repeat: String,
            count: usize,
        }
        use serde::de::Error;
        match Value::deserialize(d)? {
            Value::String(s) => Ok(Chunks::One(s)),
            Value::Array(items) => items
                .into_iter()
                .map(|v| match v {
                    Value::String(s) => Ok(s),
                    other => Err(D::Error::custom(format!(
                        "chunk list elements must be strings, found {other}"
                    ))),
                })
                .collect::<Result<Vec<_>, _>>()
                .map(Chunks::Many),
            v @ Value::Object(_) => serde_json::from_value::<RepeatSpec>(v)
                .map(|r| Chunks::Repeat {
                    repeat: r.repeat,
                    count: r.count,
                })
                .map_err(|e| D::Error::custom(format!("in {{\"repeat\", \"count\"}} chunks: {e}"))),
            other => Err(D::Error::custom(format!(
                "expected a string, an array of strings or {{\"repeat\": STRING, \"count\": N}}, found {other}"
            ))),
        }
    }
}

/// One tool call in a turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolCall {
    /// Call id. Default `toolu_mock_<turn>_<i>` (Anthropic) / `call_mock_<turn>_<i>` (OpenAI).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Tool name.
    pub name: String,
    /// Tool input; its compact JSON is what is streamed unless overridden. Default `{}`.
    #[serde(default = "empty_object")]
    pub input: Value,
    /// Exact argument deltas to send (overrides `input` and `raw_arguments` on the wire).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments_chunks: Option<Vec<String>>,
    /// Argument text to send instead of `input`'s JSON, e.g. invalid JSON. Split like `input`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_arguments: Option<String>,
}

fn empty_object() -> Value {
    Value::Object(serde_json::Map::new())
}

impl ToolCall {
    /// A tool call with an explicit id and default argument chunking.
    pub fn new(id: &str, name: &str, input: Value) -> Self {
        ToolCall {
            id: Some(id.to_owned()),
            name: name.to_owned(),
            input,
            arguments_chunks: None,
            raw_arguments: None,
        }
    }

    /// The argument deltas as they go on the wire.
    pub fn argument_pieces(&self) -> Vec<String> {
        if let Some(chunks) = &self.arguments_chunks {
            return chunks.clone();
        }
        let full = match &self.raw_arguments {
            Some(raw) => raw.clone(),
            None => self.input.to_string(),
        };
        split_in_three(&full)
    }
}

/// Splits `s` into three roughly equal pieces on char boundaries (fewer if it is very short), so
/// clients must reassemble arguments instead of parsing each delta.
fn split_in_three(s: &str) -> Vec<String> {
    let chars: Vec<char> = s.chars().collect();
    if chars.len() < 3 {
        return vec![s.to_owned()];
    }
    let third = chars.len() / 3;
    vec![
        chars[..third].iter().collect(),
        chars[third..2 * third].iter().collect(),
        chars[2 * third..].iter().collect(),
    ]
}

/// Token usage, in Anthropic's terms (mapped to OpenAI's for the OpenAI endpoint).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Usage {
    /// Uncached input tokens.
    #[serde(default)]
    pub input_tokens: u64,
    /// Output tokens.
    #[serde(default)]
    pub output_tokens: u64,
    /// Input tokens written to the prompt cache.
    #[serde(default)]
    pub cache_creation_input_tokens: u64,
    /// Input tokens read from the prompt cache.
    #[serde(default)]
    pub cache_read_input_tokens: u64,
}

/// SSE framing variations. All default to false (plain `\n`, `data: ` with a space, one line).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SseOptions {
    /// Use `\r\n` line endings.
    #[serde(default)]
    pub crlf: bool,
    /// Add `: ...` comment lines: a comment-only block before each event and one inside it.
    #[serde(default)]
    pub comments: bool,
    /// Pretty-print JSON data over several `data:` lines (joined by `\n` they are the same JSON).
    #[serde(default)]
    pub multiline_data: bool,
    /// Write `data:{...}` / `event:name` without the optional space after the colon.
    #[serde(default)]
    pub no_space: bool,
}

/// How a `reset` fault closes the connection.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CloseMode {
    /// TCP reset (`SO_LINGER` 0): the client sees "connection reset by peer".
    #[default]
    Rst,
    /// Orderly TCP close without the final empty chunk: the client sees an unexpected EOF.
    Fin,
}

/// A fault injected into one turn. The turn's other fields supply the events sent before it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Fault {
    /// An HTTP error response in the endpoint's error shape instead of a stream.
    Status {
        /// HTTP status, 400-599.
        status: u16,
        /// Value of the `retry-after` header (string or number); absent = no header.
        #[serde(
            default,
            deserialize_with = "string_or_number",
            skip_serializing_if = "Option::is_none"
        )]
        retry_after: Option<String>,
        /// Error `type`; default derived from the status and endpoint.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error_type: Option<String>,
        /// Error message; default derived from the status.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
        /// OpenAI error `code` (e.g. `context_length_exceeded`); default derived from the status.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        code: Option<String>,
        /// Extra response headers.
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        headers: BTreeMap<String, String>,
    },
    /// Send `after_events` events, then drop the connection with no terminating chunk.
    Reset {
        /// Events sent before the drop.
        #[serde(default)]
        after_events: usize,
        /// `rst` (default) or `fin`.
        #[serde(default)]
        close: CloseMode,
    },
    /// Send `after_events` events, go silent for `ms`, then drop the connection (FIN, no
    /// terminating chunk).
    Stall {
        /// Events sent before the silence.
        #[serde(default)]
        after_events: usize,
        /// Length of the silence in milliseconds.
        ms: u64,
    },
    /// Send `after_events` events, then one whose data is not valid JSON, then the rest.
    Malformed {
        /// Events sent before the bad one.
        #[serde(default)]
        after_events: usize,
    },
    /// Send the turn without its terminal events, then end the body cleanly.
    MissingTerminal {},
    /// Insert one semantically empty event whose `data:` payload is exactly `bytes` long.
    Oversized {
        /// Length of the data payload in bytes.
        bytes: usize,
        /// Events sent before the big one. Default 1.
        #[serde(default = "one")]
        after_events: usize,
    },
    /// Send `after_events` events, then the whole turn again from its first event (two responses
    /// spliced into one stream, as a broken proxy or reconnect produces).
    Splice {
        /// Events of the first copy sent before the second begins.
        #[serde(default)]
        after_events: usize,
    },
    /// OpenAI: send the turn whole (finish-reason and usage chunks included) but without the
    /// closing `data: [DONE]`. Anthropic streams have no such terminator: no effect there.
    NoDone {},
    /// Send `after_events` events, then an in-stream error event, then end the body.
    StreamError {
        /// Events sent before the error.
        #[serde(default)]
        after_events: usize,
        /// Error `type`. Default `overloaded_error` (Anthropic) / `server_error` (OpenAI).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error_type: Option<String>,
        /// Error message. Default `Overloaded`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
        /// Responses API: send a `response.failed` event (the error in `response.error`)
        /// instead of an `error` event. No effect on the other endpoints.
        #[serde(default)]
        failed: bool,
    },
}

fn one() -> usize {
    1
}

fn string_or_number<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    use serde::de::Error;
    match Option::<Value>::deserialize(d)? {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(Value::Number(n)) => Ok(Some(n.to_string())),
        Some(other) => Err(D::Error::custom(format!(
            "retry_after must be a string or a number, found {other}"
        ))),
    }
}

/// Largest `oversized` payload accepted, so a typo cannot make the server allocate gigabytes.
const MAX_OVERSIZED_BYTES: usize = 1 << 30;

impl Script {
    /// A script serving `turns` once each, in order.
    pub fn new(turns: Vec<Turn>) -> Self {
        Script {
            repeat: false,
            record: true,
            prompt_cache: None,
            models: Vec::new(),
            api_key: None,
            turns,
        }
    }

    /// A script cycling through `turns` forever.
    pub fn repeating(turns: Vec<Turn>) -> Self {
        Script {
            repeat: true,
            ..Script::new(turns)
        }
    }

    /// Parses and validates a script from JSON text (errors carry line and column).
    pub fn from_json_str(text: &str) -> Result<Script, MockError> {
        let script: Script =
            serde_json::from_str(text).map_err(|e| MockError::Script(e.to_string()))?;
        script.validate()?;
        Ok(script)
    }

    /// Parses and validates a script from a JSON value.
    pub fn from_value(value: Value) -> Result<Script, MockError> {
        let script: Script =
            serde_json::from_value(value).map_err(|e| MockError::Script(e.to_string()))?;
        script.validate()?;
        Ok(script)
    }

    /// Checks what serde cannot: value ranges and combinations. Errors name the turn and field.
    pub fn validate(&self) -> Result<(), MockError> {
        for (i, turn) in self.turns.iter().enumerate() {
            turn.validate()
                .map_err(|msg| MockError::Script(format!("turns[{i}].{msg}")))?;
        }
        Ok(())
    }
}

impl Turn {
    /// A turn that streams `text` as one delta.
    pub fn text(text: &str) -> Self {
        Turn {
            text: Some(Chunks::from(text)),
            ..Turn::default()
        }
    }

    /// A turn that only injects `fault`.
    pub fn fault(fault: Fault) -> Self {
        Turn {
            fault: Some(fault),
            ..Turn::default()
        }
    }

    fn validate(&self) -> Result<(), String> {
        if self.raw_body.is_some()
            && (self.text.is_some()
                || self.thinking.is_some()
                || !self.tool_calls.is_empty()
                || self.refusal.is_some()
                || !self.server_blocks.is_empty()
                || !self.content_blocks.is_empty()
                || !self.hosted_items.is_empty()
                || self.fault.is_some())
        {
            return Err(
                "raw_body: a raw body replaces the turn's content and faults; give \
                        either raw_body or content"
                    .into(),
            );
        }
        for (j, block) in self.server_blocks.iter().enumerate() {
            if !block.get("type").is_some_and(Value::is_string) {
                return Err(format!(
                    "server_blocks[{j}]: a content block is a JSON object with a \"type\""
                ));
            }
        }
        for (j, block) in self.content_blocks.iter().enumerate() {
            let kind = block.get("type").and_then(Value::as_str);
            if kind.is_none() {
                return Err(format!(
                    "content_blocks[{j}]: a content block is a JSON object with a \"type\""
                ));
            }
            if kind == Some("text") && !block.get("text").is_some_and(Value::is_string) {
                return Err(format!(
                    "content_blocks[{j}]: a text block needs a \"text\" string"
                ));
            }
        }
        for (j, item) in self.hosted_items.iter().enumerate() {
            if !item
                .get("type")
                .and_then(Value::as_str)
                .is_some_and(|kind| kind.ends_with("_call") && kind != "function_call")
            {
                return Err(format!(
                    "hosted_items[{j}]: a hosted-tool item is a JSON object whose \"type\" is \
                     the tool's item type (\"web_search_call\", \"web_extractor_call\", …)"
                ));
            }
        }
        for (j, call) in self.tool_calls.iter().enumerate() {
            if call.arguments_chunks.is_some() && call.raw_arguments.is_some() {
                return Err(format!(
                    "tool_calls[{j}]: give either arguments_chunks or raw_arguments, not both"
                ));
            }
        }
        match &self.fault {
            Some(Fault::Status {
                status, headers, ..
            }) => {
                if !(400..=599).contains(status) {
                    return Err(format!(
                        "fault.status: {status} is not an HTTP error status (400-599)"
                    ));
                }
                for (name, value) in headers {
                    if hyper::header::HeaderName::from_bytes(name.as_bytes()).is_err() {
                        return Err(format!(
                            "fault.headers: {name:?} is not a valid header name"
                        ));
                    }
                    if hyper::header::HeaderValue::from_str(value).is_err() {
                        return Err(format!(
                            "fault.headers.{name}: {value:?} is not a valid header value"
                        ));
                    }
                }
            }
            Some(Fault::Oversized { bytes, .. }) if *bytes > MAX_OVERSIZED_BYTES => {
                return Err(format!(
                    "fault.bytes: {bytes} exceeds the limit of {MAX_OVERSIZED_BYTES}"
                ));
            }
            _ => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn typo_names_the_field() {
        let err = Script::from_json_str(r#"{"turns": [{"txet": "hi"}]}"#).unwrap_err();
        assert!(err.to_string().contains("txet"), "{err}");
    }

    #[test]
    fn fault_typo_names_the_field() {
        let err =
            Script::from_value(json!({"turns": [{"fault": {"kind": "reset", "after_evnts": 2}}]}))
                .unwrap_err();
        assert!(err.to_string().contains("after_evnts"), "{err}");
        let err =
            Script::from_value(json!({"turns": [{"fault": {"kind": "explode"}}]})).unwrap_err();
        assert!(err.to_string().contains("explode"), "{err}");
        let err = Script::from_value(
            json!({"turns": [{"fault": {"kind": "missing_terminal", "after_events": 1}}]}),
        )
        .unwrap_err();
        assert!(err.to_string().contains("after_events"), "{err}");
    }

    #[test]
    fn chunk_shapes() {
        let s = Script::from_value(json!({"turns": [
            {"text": "a"}, {"text": ["b", "c"]}, {"text": {"repeat": "x", "count": 3}}
        ]}))
        .unwrap();
        let joined: Vec<String> = s
            .turns
            .iter()
            .map(|t| t.text.as_ref().map(Chunks::joined).unwrap_or_default())
            .collect();
        assert_eq!(joined, ["a", "bc", "xxx"]);
        let err = Script::from_value(json!({"turns": [{"text": [1]}]})).unwrap_err();
        assert!(err.to_string().contains("strings"), "{err}");
        let err = Script::from_value(json!({"turns": [{"text": {"repeat": "x", "cnt": 1}}]}))
            .unwrap_err();
        assert!(err.to_string().contains("cnt"), "{err}");
    }

    #[test]
    fn validation_names_turn() {
        let err = Script::from_value(
            json!({"turns": [{}, {"fault": {"kind": "status", "status": 200}}]}),
        )
        .unwrap_err();
        assert!(err.to_string().contains("turns[1].fault.status"), "{err}");
    }

    #[test]
    fn retry_after_accepts_number() {
        let s = Script::from_value(
            json!({"turns": [{"fault": {"kind": "status", "status": 429, "retry_after": 2}}]}),
        )
        .unwrap();
        assert!(matches!(
            &s.turns[0].fault,
            Some(Fault::Status { retry_after: Some(r), .. }) if r == "2"
        ));
    }

    #[test]
    fn default_argument_split_reassembles() {
        let call = ToolCall::new("t", "Read", json!({"file_path": "a.txt"}));
        let pieces = call.argument_pieces();
        assert_eq!(pieces.len(), 3);
        assert_eq!(pieces.concat(), r#"{"file_path":"a.txt"}"#);
    }

    #[test]
    fn round_trips_through_serde() {
        let v = json!({"repeat": true, "record": false, "turns": [
            {"text": ["a"], "tool_calls": [{"id": "x", "name": "n", "input": {}}],
             "fault": {"kind": "missing_terminal"}}
        ]});
        let s = Script::from_value(v).unwrap();
        let again = Script::from_value(serde_json::to_value(&s).unwrap()).unwrap();
        assert_eq!(s, again);
    }
}
