//! A Server-Sent Events parser (the WHATWG `text/event-stream` format): bytes in, whole messages
//! out, with a cap on how much one message may hold so a broken or hostile stream cannot grow
//! memory without bound.

/// One dispatched SSE message.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SseMessage {
    /// The `id:` field, when the message had one.
    pub id: Option<String>,
    /// The `event:` field (`message` when absent, as browsers do).
    pub event: String,
    /// The `data:` lines joined with `\n`.
    pub data: String,
}

/// The stream broke the format or a size limit.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("event stream: {0}")]
pub struct SseError(pub String);

/// An incremental parser: [`feed`](Self::feed) it the bytes as they arrive.
#[derive(Debug)]
pub struct SseParser {
    /// Bytes of the line not yet ended.
    line: Vec<u8>,
    /// A `\r` ended the last line: a `\n` right after it belongs to the same line end.
    after_cr: bool,
    /// The message being assembled.
    id: Option<String>,
    event: Option<String>,
    data: String,
    has_data: bool,
    /// The most bytes one message (its lines together) may hold.
    max_message_bytes: usize,
    pending_bytes: usize,
}

impl SseParser {
    /// A parser that refuses messages over `max_message_bytes`.
    pub fn new(max_message_bytes: usize) -> Self {
        SseParser {
            line: Vec::new(),
            after_cr: false,
            id: None,
            event: None,
            data: String::new(),
            has_data: false,
            max_message_bytes,
            pending_bytes: 0,
        }
    }

    /// Parses `bytes`, returning the messages they completed.
    pub fn feed(&mut self, bytes: &[u8]) -> Result<Vec<SseMessage>, SseError> {
        let mut out = Vec::new();
        for &byte in bytes {
            if self.after_cr {
                self.after_cr = false;
                if byte == b'\n' {
                    continue;
                }
            }
            match byte {
                b'\n' => self.end_line(&mut out)?,
                b'\r' => {
                    self.after_cr = true;
                    self.end_line(&mut out)?;
                }
                _ => {
                    self.pending_bytes += 1;
                    if self.pending_bytes > self.max_message_bytes {
                        return Err(SseError(format!(
                            "a message is over {} bytes",
                            self.max_message_bytes
                        )));
                    }
                    self.line.push(byte);
                }
            }
        }
        Ok(out)
    }

    fn end_line(&mut self, out: &mut Vec<SseMessage>) -> Result<(), SseError> {
        let line = std::mem::take(&mut self.line);
        if line.is_empty() {
            self.dispatch(out);
            return Ok(());
        }
        let line = String::from_utf8(line)
            .map_err(|_| SseError("a line is not valid UTF-8".to_string()))?;
        if line.starts_with(':') {
            // A comment (the server's keep-alive).
            return Ok(());
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line.as_str(), ""),
        };
        match field {
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            "event" => self.event = Some(value.to_string()),
            // An id with NUL is ignored, as the standard says.
            "id" if !value.contains('\0') => self.id = Some(value.to_string()),
            // `retry` and unknown fields: the reconnection policy is the client's own.
            _ => {}
        }
        Ok(())
    }

    fn dispatch(&mut self, out: &mut Vec<SseMessage>) {
        let id = self.id.take();
        let event = self.event.take();
        let data = std::mem::take(&mut self.data);
        let had_data = std::mem::replace(&mut self.has_data, false);
        self.pending_bytes = 0;
        if !had_data {
            return;
        }
        out.push(SseMessage {
            id,
            event: event
                .filter(|e| !e.is_empty())
                .unwrap_or_else(|| "message".to_string()),
            data,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_all(chunks: &[&[u8]]) -> Vec<SseMessage> {
        let mut parser = SseParser::new(1 << 20);
        let mut out = Vec::new();
        for chunk in chunks {
            out.extend(parser.feed(chunk).unwrap());
        }
        out
    }

    #[test]
    fn parses_id_event_and_data() {
        let messages = parse_all(&[b"id: 42\nevent: text_delta\ndata: {\"a\":1}\n\n"]);
        assert_eq!(
            messages,
            vec![SseMessage {
                id: Some("42".into()),
                event: "text_delta".into(),
                data: "{\"a\":1}".into()
            }]
        );
    }

    #[test]
    fn messages_split_across_chunks_at_any_byte_come_out_whole() {
        let stream: &[u8] =
            b": keep-alive\n\nid: 1\r\nevent: a\r\ndata: x\r\n\r\nevent: gap\ndata: {}\n\n";
        for split in 0..stream.len() {
            let messages = parse_all(&[&stream[..split], &stream[split..]]);
            assert_eq!(messages.len(), 2, "split at {split}");
            assert_eq!(messages[0].id.as_deref(), Some("1"));
            assert_eq!(messages[0].data, "x");
            assert_eq!(messages[1].event, "gap");
            assert_eq!(messages[1].id, None);
        }
    }

    #[test]
    fn multi_line_data_joins_with_newlines_and_comments_are_skipped() {
        let messages = parse_all(&[b"data: one\n: note\ndata:two\n\n"]);
        assert_eq!(messages[0].data, "one\ntwo");
        assert_eq!(messages[0].event, "message");
    }

    #[test]
    fn a_message_without_data_is_not_dispatched() {
        assert!(parse_all(&[b"event: x\nid: 3\n\n"]).is_empty());
    }

    #[test]
    fn an_oversized_message_is_refused_not_buffered() {
        let mut parser = SseParser::new(16);
        let err = parser.feed(&[b'a'; 64]).unwrap_err();
        assert!(err.0.contains("over 16 bytes"));
    }

    #[test]
    fn invalid_utf8_is_an_error() {
        let mut parser = SseParser::new(1024);
        assert!(parser.feed(b"data: \xff\xfe\n\n").is_err());
    }
}
