//! [`JsonlRecorder`]: writes a run's [`ExecutionEvent`]s as JSON Lines, one event per line,
//! flushed line by line so a crash loses at most the event being written. The result is what
//! [`ReplayProvider`](crate::provider::replay::ReplayProvider) plays back.

use std::fs::File;
use std::io::{self, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use super::config::ExecutionEventCallback;
use super::events::ExecutionEvent;

/// Records execution events to any writer (a file, a buffer, a pipe).
///
/// Cheap to clone (clones share the writer). Hand [`JsonlRecorder::callback`] to
/// [`RunOptions::on_execution_event`](super::RunOptions). Write failures do not disturb the run:
/// the first one is kept and reported by [`JsonlRecorder::finish`].
#[derive(Clone)]
pub struct JsonlRecorder {
    inner: Arc<Inner>,
}

struct Inner {
    state: Mutex<State>,
    stream_deltas: AtomicBool,
}

struct State {
    writer: Box<dyn Write + Send>,
    error: Option<io::Error>,
    lines: u64,
    line: Vec<u8>,
}

impl std::fmt::Debug for JsonlRecorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JsonlRecorder")
            .field("lines", &self.lines())
            .field(
                "stream_deltas",
                &self.inner.stream_deltas.load(Ordering::Relaxed),
            )
            .finish()
    }
}

impl JsonlRecorder {
    /// Records into `writer`, including `provider_stream_raw_delta` events.
    pub fn new(writer: impl Write + Send + 'static) -> Self {
        Self::build(Box::new(writer), true)
    }

    /// Creates (or truncates) the file at `path` and records into it.
    pub fn create(path: impl AsRef<Path>) -> io::Result<Self> {
        let path = path.as_ref();
        let file = File::create(path).map_err(|error| {
            io::Error::new(
                error.kind(),
                format!("cannot create the replay log {}: {error}", path.display()),
            )
        })?;
        Ok(Self::new(file))
    }

    /// Leaves out `provider_stream_raw_delta` events (one line per text delta). Replay does not
    /// need them: without them it streams each recorded response's text as one delta.
    pub fn without_stream_deltas(self) -> Self {
        self.inner.stream_deltas.store(false, Ordering::Relaxed);
        self
    }

    fn build(writer: Box<dyn Write + Send>, stream_deltas: bool) -> Self {
        JsonlRecorder {
            inner: Arc::new(Inner {
                state: Mutex::new(State {
                    writer,
                    error: None,
                    lines: 0,
                    line: Vec::with_capacity(1024),
                }),
                stream_deltas: AtomicBool::new(stream_deltas),
            }),
        }
    }

    /// A callback for [`RunOptions::on_execution_event`](super::RunOptions) that records into
    /// this recorder.
    pub fn callback(&self) -> ExecutionEventCallback {
        let recorder = self.clone();
        Arc::new(move |event| recorder.record(&event))
    }

    /// Writes one event as one line and flushes it.
    pub fn record(&self, event: &ExecutionEvent) {
        if !self.inner.stream_deltas.load(Ordering::Relaxed)
            && matches!(event, ExecutionEvent::ProviderStreamRawDelta { .. })
        {
            return;
        }
        let mut state = self
            .inner
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if state.error.is_some() {
            return;
        }
        let state = &mut *state;
        state.line.clear();
        let result = serde_json::to_writer(&mut state.line, event)
            .map_err(io::Error::from)
            .and_then(|()| {
                state.line.push(b'\n');
                state.writer.write_all(&state.line)?;
                state.writer.flush()
            });
        match result {
            Ok(()) => state.lines += 1,
            Err(error) => state.error = Some(error),
        }
    }

    /// Lines written so far.
    pub fn lines(&self) -> u64 {
        self.inner
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .lines
    }

    /// Flushes and reports the first write error, if any happened.
    pub fn finish(&self) -> io::Result<()> {
        let mut state = self
            .inner
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(error) = state.error.take() {
            return Err(io::Error::new(
                error.kind(),
                format!("writing the replay log failed: {error}"),
            ));
        }
        state.writer.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn delta(sequence: u64) -> ExecutionEvent {
        ExecutionEvent::ProviderStreamRawDelta {
            execution_id: "e".into(),
            round: 1,
            sequence,
            delta: "a\nb".into(),
        }
    }

    #[test]
    fn one_event_per_line() {
        let buffer = Shared::default();
        let recorder = JsonlRecorder::new(buffer.clone());
        let callback = recorder.callback();
        callback(delta(0));
        callback(delta(1));
        assert_eq!(recorder.lines(), 2);
        assert!(recorder.finish().is_ok());
        let text = String::from_utf8(buffer.0.lock().map(|b| b.clone()).unwrap_or_default())
            .unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2);
        let back: ExecutionEvent = serde_json::from_str(lines[1]).unwrap_or_else(|_| delta(9));
        assert_eq!(back, delta(1));
    }

    #[test]
    fn stream_deltas_can_be_left_out() {
        let buffer = Shared::default();
        let recorder = JsonlRecorder::new(buffer.clone()).without_stream_deltas();
        recorder.record(&delta(0));
        assert_eq!(recorder.lines(), 0);
    }

    #[test]
    fn write_errors_are_kept_for_finish() {
        struct Broken;
        impl Write for Broken {
            fn write(&mut self, _: &[u8]) -> io::Result<usize> {
                Err(io::Error::other("disk full"))
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let recorder = JsonlRecorder::new(Broken);
        recorder.record(&delta(0));
        let error = recorder
            .finish()
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(error.contains("disk full"), "{error}");
    }
}
