//! Bounded in-memory output capture of one stream of a background task: the newest bytes up to a
//! limit, the count of everything seen, and a read cursor, so `BashOutput` can return "what is
//! new since the last read" in constant memory while the full output goes to the task's file.

use std::collections::VecDeque;

/// The newest `limit` bytes of a stream, with totals.
#[derive(Debug)]
pub(crate) struct Capture {
    kept: VecDeque<u8>,
    limit: usize,
    /// Bytes seen since the task started.
    total: u64,
    /// Bytes already handed out by [`Capture::take_new`] (a position in the whole stream).
    read: u64,
}

/// What [`Capture::take_new`] returns.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct NewOutput {
    /// The new text (UTF-8, invalid sequences replaced).
    pub text: String,
    /// Bytes that were new but had already left the in-memory window (still in the file).
    pub dropped: u64,
}

impl Capture {
    pub(crate) fn new(limit: usize) -> Self {
        Capture {
            kept: VecDeque::new(),
            limit: limit.max(1),
            total: 0,
            read: 0,
        }
    }

    /// Appends a chunk, forgetting the oldest bytes beyond the limit.
    pub(crate) fn push(&mut self, chunk: &[u8]) {
        self.total += chunk.len() as u64;
        let chunk = if chunk.len() > self.limit {
            &chunk[chunk.len() - self.limit..]
        } else {
            chunk
        };
        let overflow = (self.kept.len() + chunk.len()).saturating_sub(self.limit);
        self.kept.drain(..overflow);
        self.kept.extend(chunk);
    }

    /// Bytes seen so far.
    pub(crate) fn total(&self) -> u64 {
        self.total
    }

    /// Everything not yet handed out, and moves the cursor to the end. A multi-byte character
    /// cut by the window's start is skipped rather than shown broken.
    pub(crate) fn take_new(&mut self) -> NewOutput {
        let window_start = self.total - self.kept.len() as u64;
        let from = self.read.max(window_start);
        let dropped = from - self.read;
        let skip = (from - window_start) as usize;
        let bytes: Vec<u8> = self.kept.iter().skip(skip).copied().collect();
        let start = if dropped > 0 {
            bytes
                .iter()
                .position(|b| (*b & 0xC0) != 0x80)
                .unwrap_or(bytes.len())
        } else {
            0
        };
        self.read = self.total;
        NewOutput {
            text: String::from_utf8_lossy(&bytes[start..]).into_owned(),
            dropped,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_output_is_handed_out_once() {
        let mut capture = Capture::new(100);
        capture.push(b"one\n");
        assert_eq!(capture.take_new().text, "one\n");
        assert_eq!(capture.take_new().text, "");
        capture.push(b"two\n");
        assert_eq!(capture.take_new().text, "two\n");
        assert_eq!(capture.total(), 8);
    }

    #[test]
    fn the_window_is_bounded_and_says_what_it_dropped() {
        let mut capture = Capture::new(4);
        capture.push(b"abcdef");
        capture.push(b"gh");
        let new = capture.take_new();
        assert_eq!(new.text, "efgh");
        assert_eq!(new.dropped, 4);
        assert_eq!(capture.total(), 8);
    }

    #[test]
    fn a_character_cut_by_the_window_is_skipped() {
        let mut capture = Capture::new(3);
        capture.push("aé€".as_bytes()); // a(1) é(2) €(3)
        let new = capture.take_new();
        assert_eq!(new.text, "€");
        assert_eq!(new.dropped, 3);
    }
}
