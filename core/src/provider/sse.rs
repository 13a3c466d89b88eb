//! A Server-Sent-Events decoder over a byte stream, as the WHATWG `EventSource` spec parses it.
//!
//! Bytes go in exactly as they come off the socket ([`SseDecoder::feed`]); whole events come out.
//! Chunk boundaries may fall anywhere — inside a field, inside a multi-byte UTF-8 character, or
//! between the `\r` and `\n` of a CRLF — because the decoder only interprets a line once it has
//! seen the line's end. It accepts LF, CR and CRLF line endings, `:` comment lines, multi-line
//! `data:` (joined with `"\n"`), `event:` / `id:` / `retry:`, an optional single space after the
//! colon and a UTF-8 byte-order mark at the very start.
//!
//! Memory is bounded: an event (its pending line plus the fields gathered so far) may not grow past
//! [`SseDecoder::max_event_bytes`] (default [`DEFAULT_MAX_EVENT_BYTES`], 16 MiB). A server that
//! streams a never-ending line gets an [`SseError::EventTooLarge`] instead of eating the heap.
//!
//! ```
//! use robota::provider::sse::SseDecoder;
//!
//! let mut decoder = SseDecoder::new();
//! let mut events = Vec::new();
//! decoder.feed(b"event: ping\r\ndata: {\"a\":", &mut events).unwrap();
//! decoder.feed(b"1}\r\n\r\n", &mut events).unwrap();
//! assert_eq!(events[0].event, "ping");
//! assert_eq!(events[0].data, "{\"a\":1}");
//! ```

use std::fmt;

/// Default cap on one event's size: 16 MiB. Far above any real model event (a large tool call's
/// arguments arrive as many small deltas), far below what would hurt a host process.
pub const DEFAULT_MAX_EVENT_BYTES: usize = 16 * 1024 * 1024;

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SseEvent {
    /// The `event:` field, or `"message"` when the event had none (the spec's default type).
    pub event: String,
    /// All `data:` lines of the event joined with `"\n"`.
    pub data: String,
    /// The last `id:` seen on the stream so far (it persists across events, as in the spec).
    pub id: Option<String>,
    /// The `retry:` reconnection time in milliseconds, when this event carried one.
    pub retry: Option<u64>,
}

/// Why decoding stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SseError {
    /// One event grew past the configured cap.
    EventTooLarge {
        /// The cap, in bytes.
        limit: usize,
    },
}

impl fmt::Display for SseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SseError::EventTooLarge { limit } => {
                write!(f, "a server-sent event exceeded the {limit}-byte limit")
            }
        }
    }
}

impl std::error::Error for SseError {}

/// Incremental SSE decoder. Feed it chunks; it hands back every event whose terminating blank line
/// has arrived. One decoder per stream.
#[derive(Debug, Clone)]
pub struct SseDecoder {
    /// Bytes of the line being received (its end has not arrived yet).
    line: Vec<u8>,
    /// The previous chunk ended with `\r`; a `\n` at the start of the next one belongs to it.
    after_cr: bool,
    /// Still at the start of the stream, where a BOM may appear.
    at_start: bool,
    /// `event:` of the event being gathered (empty: none yet).
    event_type: String,
    /// `data:` lines gathered so far, each followed by `\n` (the spec's data buffer).
    data: String,
    /// Whether any `data:` line was seen for the current event (an empty `data:` still counts).
    has_data: bool,
    /// Last event id, persisting across events.
    last_id: Option<String>,
    /// `retry:` of the current event.
    retry: Option<u64>,
    max_event_bytes: usize,
}

impl Default for SseDecoder {
    fn default() -> Self {
        Self::new()
    }
}

impl SseDecoder {
    /// A decoder with the default 16 MiB event cap.
    pub fn new() -> Self {
        Self::with_max_event_bytes(DEFAULT_MAX_EVENT_BYTES)
    }

    /// A decoder whose events may not exceed `max_event_bytes` (at least 1).
    pub fn with_max_event_bytes(max_event_bytes: usize) -> Self {
        SseDecoder {
            line: Vec::new(),
            after_cr: false,
            at_start: true,
            event_type: String::new(),
            data: String::new(),
            has_data: false,
            last_id: None,
            retry: None,
            max_event_bytes: max_event_bytes.max(1),
        }
    }

    /// The event size cap in bytes.
    pub fn max_event_bytes(&self) -> usize {
        self.max_event_bytes
    }

    /// Decodes `chunk`, appending every completed event to `out`.
    ///
    /// On error the decoder is left in an unspecified state; the stream should be abandoned.
    pub fn feed(&mut self, chunk: &[u8], out: &mut Vec<SseEvent>) -> Result<(), SseError> {
        let mut rest = chunk;
        if self.after_cr && !rest.is_empty() {
            // The CR that ended the last chunk already closed its line; this LF is its partner.
            // (An empty chunk leaves the question open for the next one.)
            self.after_cr = false;
            if let Some((&b'\n', tail)) = rest.split_first() {
                rest = tail;
            }
        }
        while !rest.is_empty() {
            match rest.iter().position(|&b| b == b'\n' || b == b'\r') {
                None => {
                    self.append_to_line(rest)?;
                    break;
                }
                Some(end) => {
                    self.append_to_line(&rest[..end])?;
                    let terminator = rest[end];
                    rest = &rest[end + 1..];
                    if terminator == b'\r' {
                        match rest.first() {
                            Some(b'\n') => rest = &rest[1..],
                            Some(_) => {}
                            // CRLF may be split across chunks: remember to swallow a leading LF.
                            None => self.after_cr = true,
                        }
                    }
                    self.end_line(out)?;
                }
            }
        }
        Ok(())
    }

    /// Ends the stream, returning the event still being gathered, if any.
    ///
    /// A browser `EventSource` drops an event whose blank line never came. This decoder is a little
    /// more forgiving, because some servers omit the final blank line: an event whose lines all
    /// arrived whole is returned. A line cut off mid-way (no line ending) is discarded — it is a
    /// truncation, and acting on half a line would be worse than acting on none.
    pub fn finish(&mut self) -> Option<SseEvent> {
        self.line.clear();
        self.after_cr = false;
        self.take_event()
    }

    fn append_to_line(&mut self, bytes: &[u8]) -> Result<(), SseError> {
        if bytes.is_empty() {
            return Ok(());
        }
        if self.line.len() + self.event_type.len() + self.data.len() + bytes.len()
            > self.max_event_bytes
        {
            return Err(SseError::EventTooLarge {
                limit: self.max_event_bytes,
            });
        }
        self.line.extend_from_slice(bytes);
        Ok(())
    }

    fn end_line(&mut self, out: &mut Vec<SseEvent>) -> Result<(), SseError> {
        let mut raw: &[u8] = &self.line;
        if self.at_start {
            // A BOM contains no line terminator, so it always lands whole in the first line.
            self.at_start = false;
            raw = raw.strip_prefix(BOM).unwrap_or(raw);
        }
        if raw.is_empty() {
            self.line.clear();
            if let Some(event) = self.take_event() {
                out.push(event);
            }
            return Ok(());
        }
        // Whole lines only, so a multi-byte character split across chunks is already reassembled.
        // The line buffer is moved out and back so the common (valid UTF-8) case allocates nothing.
        let offset = self.line.len() - raw.len();
        let line = std::mem::take(&mut self.line);
        let result = match std::str::from_utf8(&line[offset..]) {
            Ok(text) => self.process_field(text),
            Err(_) => self.process_field(&String::from_utf8_lossy(&line[offset..])),
        };
        self.line = line;
        self.line.clear();
        result
    }

    fn process_field(&mut self, line: &str) -> Result<(), SseError> {
        if line.starts_with(':') {
            return Ok(()); // comment (servers use these as keep-alives)
        }
        let (name, value) = match line.split_once(':') {
            Some((name, value)) => (name, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match name {
            "event" => {
                self.event_type.clear();
                self.event_type.push_str(value);
            }
            "data" => {
                if self.event_type.len() + self.data.len() + value.len() + 1 > self.max_event_bytes
                {
                    return Err(SseError::EventTooLarge {
                        limit: self.max_event_bytes,
                    });
                }
                self.data.push_str(value);
                self.data.push('\n');
                self.has_data = true;
            }
            // The spec ignores ids containing NUL.
            "id" if !value.contains('\0') => self.last_id = Some(value.to_string()),
            "retry" if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) => {
                self.retry = value.parse().ok();
            }
            _ => {} // unknown fields are ignored, as the spec requires
        }
        Ok(())
    }

    /// Dispatches the gathered event (if it had data) and resets the per-event buffers.
    fn take_event(&mut self) -> Option<SseEvent> {
        let retry = self.retry.take();
        let event_type = std::mem::take(&mut self.event_type);
        if !self.has_data {
            // The spec dispatches nothing for an event without data lines.
            self.data.clear();
            return None;
        }
        self.has_data = false;
        let mut data = std::mem::take(&mut self.data);
        data.pop(); // the trailing "\n" after the last data line
        Some(SseEvent {
            event: if event_type.is_empty() {
                "message".to_string()
            } else {
                event_type
            },
            data,
            id: self.last_id.clone(),
            retry,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_chunks(chunks: &[&[u8]]) -> Vec<SseEvent> {
        let mut decoder = SseDecoder::new();
        let mut out = Vec::new();
        for chunk in chunks {
            decoder.feed(chunk, &mut out).expect("decode");
        }
        out.extend(decoder.finish());
        out
    }

    fn decode(input: &[u8]) -> Vec<SseEvent> {
        decode_chunks(&[input])
    }

    /// Feeds `input` split at every possible pair of positions and checks the result never changes.
    fn assert_split_invariant(input: &[u8]) -> Vec<SseEvent> {
        let whole = decode(input);
        for i in 0..=input.len() {
            for j in i..=input.len() {
                let split = decode_chunks(&[&input[..i], &input[i..j], &input[j..]]);
                assert_eq!(
                    split,
                    whole,
                    "split at {i},{j} of {:?}",
                    String::from_utf8_lossy(input)
                );
            }
        }
        let one_by_one: Vec<&[u8]> = input.chunks(1).collect();
        assert_eq!(decode_chunks(&one_by_one), whole, "byte-at-a-time");
        whole
    }

    fn ev(event: &str, data: &str) -> SseEvent {
        SseEvent {
            event: event.to_string(),
            data: data.to_string(),
            id: None,
            retry: None,
        }
    }

    #[test]
    fn simple_event_with_type() {
        assert_eq!(
            decode(b"event: message_start\ndata: {\"x\":1}\n\n"),
            vec![ev("message_start", "{\"x\":1}")]
        );
    }

    #[test]
    fn default_event_type_is_message() {
        assert_eq!(decode(b"data: hi\n\n"), vec![ev("message", "hi")]);
    }

    #[test]
    fn lf_cr_and_crlf_line_endings_are_equivalent() {
        let lf = decode(b"event: a\ndata: 1\n\ndata: 2\n\n");
        let cr = decode(b"event: a\rdata: 1\r\rdata: 2\r\r");
        let crlf = decode(b"event: a\r\ndata: 1\r\n\r\ndata: 2\r\n\r\n");
        let mixed = decode(b"event: a\r\ndata: 1\r\n\ndata: 2\r\r\n");
        assert_eq!(lf, vec![ev("a", "1"), ev("message", "2")]);
        assert_eq!(cr, lf);
        assert_eq!(crlf, lf);
        assert_eq!(mixed, lf);
    }

    #[test]
    fn crlf_split_between_chunks_is_one_line_ending() {
        // If the LF after a chunk-final CR were taken as a second line ending, it would dispatch
        // early and the two data lines would become two events.
        let events = decode_chunks(&[b"data: a\r", b"", b"\ndata: b\r", b"\n\r", b"\n"]);
        assert_eq!(events, vec![ev("message", "a\nb")]);
    }

    #[test]
    fn cr_at_chunk_end_followed_by_other_bytes() {
        let events = decode_chunks(&[b"data: a\r", b"\r", b"data: b\r\r"]);
        assert_eq!(events, vec![ev("message", "a"), ev("message", "b")]);
    }

    #[test]
    fn comments_are_ignored() {
        assert_eq!(
            decode(b": keep-alive\n:\ndata: x\n: inside\n\n: trailing\n\n"),
            vec![ev("message", "x")]
        );
    }

    #[test]
    fn multi_line_data_is_joined_with_newline() {
        assert_eq!(
            decode(b"data: {\"a\":\ndata: 1}\ndata:\n\n"),
            vec![ev("message", "{\"a\":\n1}\n")]
        );
    }

    #[test]
    fn only_one_space_after_colon_is_stripped() {
        assert_eq!(decode(b"data:x\n\n"), vec![ev("message", "x")]);
        assert_eq!(decode(b"data:  x \n\n"), vec![ev("message", " x ")]);
        assert_eq!(decode(b"event:e\ndata: a:b\n\n"), vec![ev("e", "a:b")]);
    }

    #[test]
    fn field_without_colon_has_empty_value() {
        assert_eq!(decode(b"data\n\n"), vec![ev("message", "")]);
        assert_eq!(decode(b"data\ndata\n\n"), vec![ev("message", "\n")]);
    }

    #[test]
    fn event_without_data_is_not_dispatched() {
        assert_eq!(
            decode(b"event: ping\n\ndata: x\n\n"),
            vec![ev("message", "x")]
        );
        assert_eq!(decode(b"\n\n\n"), vec![]);
    }

    #[test]
    fn event_type_resets_after_dispatch() {
        assert_eq!(
            decode(b"event: a\ndata: 1\n\ndata: 2\n\n"),
            vec![ev("a", "1"), ev("message", "2")]
        );
    }

    #[test]
    fn id_persists_and_retry_is_per_event() {
        let events = decode(b"id: 7\nretry: 1500\ndata: a\n\ndata: b\n\nid\ndata: c\n\n");
        assert_eq!(events[0].id.as_deref(), Some("7"));
        assert_eq!(events[0].retry, Some(1500));
        assert_eq!(events[1].id.as_deref(), Some("7"));
        assert_eq!(events[1].retry, None);
        assert_eq!(events[2].id.as_deref(), Some(""));
    }

    #[test]
    fn invalid_retry_and_nul_id_are_ignored() {
        let events = decode(b"id: 1\ndata: a\n\nretry: 12x\nid: a\0b\ndata: b\n\n");
        assert_eq!(events[1].retry, None);
        assert_eq!(events[1].id.as_deref(), Some("1"));
    }

    #[test]
    fn unknown_fields_are_ignored() {
        assert_eq!(
            decode(b"foo: bar\ndata: x\nDATA: y\n\n"),
            vec![ev("message", "x")]
        );
    }

    #[test]
    fn bom_at_start_is_stripped_even_when_split() {
        let input = b"\xEF\xBB\xBFdata: x\n\n";
        assert_eq!(assert_split_invariant(input), vec![ev("message", "x")]);
    }

    #[test]
    fn bom_later_in_stream_is_not_stripped() {
        let events = decode(b"data: a\n\n\xEF\xBB\xBFdata: b\n\n");
        // The second line's field name is "\u{feff}data", an unknown field.
        assert_eq!(events, vec![ev("message", "a")]);
    }

    #[test]
    fn utf8_split_mid_character() {
        let input = "event: t\ndata: héllo 世界 🦀\n\n".as_bytes();
        assert_eq!(
            assert_split_invariant(input),
            vec![ev("t", "héllo 世界 🦀")]
        );
    }

    #[test]
    fn every_split_of_a_realistic_stream_gives_the_same_events() {
        let input = b": hi\r\nevent: message_start\r\ndata: {\"type\":\r\ndata: \"message_start\"}\r\n\r\nevent: ping\rdata: {}\r\r";
        let events = assert_split_invariant(input);
        assert_eq!(
            events,
            vec![
                ev("message_start", "{\"type\":\n\"message_start\"}"),
                ev("ping", "{}")
            ]
        );
    }

    #[test]
    fn invalid_utf8_is_replaced_not_fatal() {
        assert_eq!(
            decode(b"data: a\xFFb\n\n"),
            vec![ev("message", "a\u{FFFD}b")]
        );
    }

    #[test]
    fn finish_returns_complete_unterminated_event() {
        assert_eq!(decode(b"data: [DONE]\n"), vec![ev("message", "[DONE]")]);
    }

    #[test]
    fn finish_discards_a_truncated_line() {
        assert_eq!(
            decode(b"data: a\n\ndata: {\"trunc"),
            vec![ev("message", "a")]
        );
        // The complete first data line of a truncated event is kept; the cut line is not.
        assert_eq!(decode(b"data: x\ndata: {\"tr"), vec![ev("message", "x")]);
    }

    #[test]
    fn oversized_line_is_an_error_without_growing_unbounded() {
        let mut decoder = SseDecoder::with_max_event_bytes(64);
        let mut out = Vec::new();
        decoder.feed(b"data: ", &mut out).expect("small");
        let mut failed = false;
        for _ in 0..100 {
            if decoder.feed(&[b'x'; 10], &mut out).is_err() {
                failed = true;
                break;
            }
        }
        assert!(failed);
        assert!(decoder.line.len() <= 64);
    }

    #[test]
    fn oversized_multi_line_event_is_an_error() {
        let mut decoder = SseDecoder::with_max_event_bytes(32);
        let mut out = Vec::new();
        let result = (0..10).try_for_each(|_| decoder.feed(b"data: 0123456789\n", &mut out));
        assert_eq!(result, Err(SseError::EventTooLarge { limit: 32 }));
        assert!(out.is_empty());
    }

    #[test]
    fn events_up_to_the_limit_pass_and_the_limit_is_per_event() {
        let mut decoder = SseDecoder::with_max_event_bytes(32);
        let mut out = Vec::new();
        for _ in 0..100 {
            decoder
                .feed(b"data: 0123456789\n\n", &mut out)
                .expect("each event is small");
        }
        assert_eq!(out.len(), 100);
    }

    #[test]
    fn default_limit_is_16_mib() {
        assert_eq!(SseDecoder::new().max_event_bytes(), 16 * 1024 * 1024);
    }
}
