//! Server-sent-events framing: turns logical events into the bytes written on the wire,
//! including the framing variations (`SseOptions`) a conforming client parser must accept.

use crate::script::SseOptions;

/// One logical SSE event: an optional `event:` name and its `data:` payload.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Event {
    /// The `event:` field; OpenAI streams have none.
    pub name: Option<&'static str>,
    /// The payload; usually JSON, but deliberately not for `[DONE]` and malformed events.
    pub data: String,
    /// `data` is the wire bytes themselves (a recorded body), written without framing.
    pub raw: bool,
}

impl Event {
    /// An event with an `event:` line.
    pub fn named(name: &'static str, data: String) -> Self {
        Event {
            name: Some(name),
            data,
            raw: false,
        }
    }

    /// A data-only event (OpenAI style).
    pub fn data(data: String) -> Self {
        Event {
            name: None,
            data,
            raw: false,
        }
    }

    /// Bytes written as they are, without SSE framing (a recorded response body).
    pub fn raw(bytes: String) -> Self {
        Event {
            name: None,
            data: bytes,
            raw: true,
        }
    }
}

/// Encodes `event` as SSE bytes under `opts`.
pub(crate) fn encode(event: &Event, opts: &SseOptions) -> Vec<u8> {
    if event.raw {
        return event.data.clone().into_bytes();
    }
    let eol = if opts.crlf { "\r\n" } else { "\n" };
    let sp = if opts.no_space { "" } else { " " };
    let mut out = String::with_capacity(event.data.len() + 64);
    if opts.comments {
        // A block holding only a comment dispatches nothing; parsers must skip it.
        out.push_str(": mock-llm comment block");
        out.push_str(eol);
        out.push_str(eol);
    }
    if let Some(name) = event.name {
        out.push_str("event:");
        out.push_str(sp);
        out.push_str(name);
        out.push_str(eol);
    }
    if opts.comments {
        // A comment line inside an event must not end or corrupt it.
        out.push_str(": mock-llm comment line");
        out.push_str(eol);
    }
    for line in data_lines(&event.data, opts.multiline_data) {
        out.push_str("data:");
        out.push_str(sp);
        out.push_str(&line);
        out.push_str(eol);
    }
    out.push_str(eol);
    out.into_bytes()
}

/// Splits the payload into `data:` lines. Multi-line mode pretty-prints JSON objects so the
/// lines, joined with `\n` as the SSE spec requires, are still the same JSON value. Anything
/// that is not a JSON object or array (`[DONE]`, deliberately malformed data) stays on one line.
fn data_lines(data: &str, multiline: bool) -> Vec<String> {
    if multiline {
        if let Ok(value @ (serde_json::Value::Object(_) | serde_json::Value::Array(_))) =
            serde_json::from_str::<serde_json::Value>(data)
        {
            if let Ok(pretty) = serde_json::to_string_pretty(&value) {
                return pretty.lines().map(str::to_owned).collect();
            }
        }
    }
    vec![data.to_owned()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_named_event() {
        let ev = Event::named("ping", r#"{"type":"ping"}"#.into());
        let bytes = encode(&ev, &SseOptions::default());
        assert_eq!(bytes, b"event: ping\ndata: {\"type\":\"ping\"}\n\n");
    }

    #[test]
    fn variations() {
        let ev = Event::data(r#"{"a":[1,2]}"#.into());
        let opts = SseOptions {
            crlf: true,
            comments: true,
            multiline_data: true,
            no_space: true,
        };
        let text = String::from_utf8(encode(&ev, &opts)).unwrap();
        assert_eq!(
            text,
            ": mock-llm comment block\r\n\r\n: mock-llm comment line\r\ndata:{\r\ndata:  \"a\": [\r\ndata:    1,\r\ndata:    2\r\ndata:  ]\r\ndata:}\r\n\r\n"
        );
    }

    #[test]
    fn done_stays_one_line() {
        let opts = SseOptions {
            multiline_data: true,
            ..SseOptions::default()
        };
        assert_eq!(
            encode(&Event::data("[DONE]".into()), &opts),
            b"data: [DONE]\n\n"
        );
    }
}
