//! One hosted session's event log: the last N events (serialized once, shared by every client)
//! for `Last-Event-ID` resume, and a bounded queue per connected client.
//!
//! Back-pressure follows the engine's rule for in-process subscribers: when a client's queue is
//! full, a new `text_delta` is appended to a `text_delta` still waiting at its back (the text
//! stays whole, only the chunking changes) and every other event is queued beyond the bound — a
//! client must never miss a `tool_end` or a `complete`. A client that falls
//! [`OVERFLOW_FACTOR`]× the bound behind is disconnected instead of holding unbounded memory; it
//! reconnects and resumes from the log (and is told when events it wants are gone).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use robota::framework::interactive::{InteractiveEvent, InteractiveEventKind};
use robota_remote::wire::Gap;
use tokio::sync::Notify;

/// A client this many times its bound behind is disconnected.
pub const OVERFLOW_FACTOR: usize = 16;

/// One event as sent: its `seq`, its `type` and its JSON.
#[derive(Debug)]
pub struct LoggedEvent {
    /// The event's `seq`.
    pub seq: u64,
    /// Its `type` (`text_delta`, `tool_start`, …).
    pub kind: &'static str,
    /// The serialized `InteractiveEvent`.
    pub json: String,
    /// The event itself, for coalescing `text_delta`s.
    event: InteractiveEvent,
}

impl LoggedEvent {
    /// Serializes `event` once.
    pub fn new(event: InteractiveEvent) -> Self {
        let json = serde_json::to_string(&event).unwrap_or_else(|error| {
            serde_json::json!({
                "session_id": event.session_id,
                "seq": event.seq,
                "type": "error",
                "message": format!("the server could not serialize this event: {error}"),
            })
            .to_string()
        });
        LoggedEvent {
            seq: event.seq,
            kind: event.kind.type_name(),
            json,
            event,
        }
    }

    /// The event as a JSON value (WebSocket messages embed it).
    pub fn value(&self) -> serde_json::Value {
        serde_json::from_str(&self.json).unwrap_or(serde_json::Value::Null)
    }

    fn text_delta(&self) -> Option<&str> {
        match &self.event.kind {
            InteractiveEventKind::TextDelta { text } => Some(text),
            _ => None,
        }
    }
}

/// What a client's stream yields.
#[derive(Debug, Clone)]
pub enum ClientItem {
    /// An event.
    Event(Arc<LoggedEvent>),
    /// The session was closed; the stream ends.
    Closed,
    /// The client fell too far behind and is disconnected (it resumes with `Last-Event-ID`).
    Overflowed,
}

/// One connected client's queue.
#[derive(Debug)]
pub struct ClientQueue {
    queue: Mutex<VecDeque<ClientItem>>,
    notify: Notify,
    done: AtomicBool,
    capacity: usize,
}

impl ClientQueue {
    fn new(capacity: usize, backlog: Vec<Arc<LoggedEvent>>) -> Arc<Self> {
        Arc::new(ClientQueue {
            queue: Mutex::new(backlog.into_iter().map(ClientItem::Event).collect()),
            notify: Notify::new(),
            done: AtomicBool::new(false),
            capacity: capacity.max(1),
        })
    }

    fn lock(&self) -> MutexGuard<'_, VecDeque<ClientItem>> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn push(&self, event: &Arc<LoggedEvent>) {
        if self.done.load(Ordering::SeqCst) {
            return;
        }
        let mut queue = self.lock();
        if queue.len() >= self.capacity {
            if let (Some(text), Some(ClientItem::Event(back))) = (event.text_delta(), queue.back())
            {
                if let Some(waiting) = back.text_delta() {
                    let mut merged = back.event.clone();
                    merged.kind = InteractiveEventKind::TextDelta {
                        text: format!("{waiting}{text}"),
                    };
                    if let Some(last) = queue.back_mut() {
                        *last = ClientItem::Event(Arc::new(LoggedEvent::new(merged)));
                    }
                    drop(queue);
                    self.notify.notify_one();
                    return;
                }
            }
            if queue.len() >= self.capacity.saturating_mul(OVERFLOW_FACTOR) {
                queue.clear();
                queue.push_back(ClientItem::Overflowed);
                self.done.store(true, Ordering::SeqCst);
                drop(queue);
                self.notify.notify_one();
                return;
            }
        }
        queue.push_back(ClientItem::Event(Arc::clone(event)));
        drop(queue);
        self.notify.notify_one();
    }

    fn close(&self) {
        if !self.done.swap(true, Ordering::SeqCst) {
            self.lock().push_back(ClientItem::Closed);
        }
        self.notify.notify_one();
    }

    /// The next item; waits for one. After `Closed` or `Overflowed` it returns `Closed`.
    pub async fn next(&self) -> ClientItem {
        loop {
            let notified = self.notify.notified();
            if let Some(item) = self.lock().pop_front() {
                return item;
            }
            if self.done.load(Ordering::SeqCst) {
                return ClientItem::Closed;
            }
            notified.await;
        }
    }

    /// Events waiting.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// True when nothing waits.
    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A client's place in the log: its queue, unregistered when dropped.
#[derive(Debug)]
pub struct ClientStream {
    /// The queue to read.
    pub queue: Arc<ClientQueue>,
    /// Set when events the client asked for were no longer buffered.
    pub gap: Option<Gap>,
    log: Arc<EventLog>,
}

impl Drop for ClientStream {
    fn drop(&mut self) {
        self.log
            .lock()
            .clients
            .retain(|c| !Arc::ptr_eq(c, &self.queue));
    }
}

struct LogState {
    buffer: VecDeque<Arc<LoggedEvent>>,
    /// The largest `seq` dropped from the buffer (0 when none was).
    evicted_through: u64,
    last_seq: u64,
    clients: Vec<Arc<ClientQueue>>,
    closed: bool,
}

/// A session's event log.
pub struct EventLog {
    state: Mutex<LogState>,
    capacity: usize,
    client_capacity: usize,
}

impl std::fmt::Debug for EventLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventLog")
            .field("capacity", &self.capacity)
            .finish_non_exhaustive()
    }
}

impl EventLog {
    /// A log keeping the last `capacity` events, each client queue bounded by `client_capacity`.
    pub fn new(capacity: usize, client_capacity: usize) -> Arc<Self> {
        Arc::new(EventLog {
            state: Mutex::new(LogState {
                buffer: VecDeque::new(),
                evicted_through: 0,
                last_seq: 0,
                clients: Vec::new(),
                closed: false,
            }),
            capacity: capacity.max(1),
            client_capacity: client_capacity.max(1),
        })
    }

    fn lock(&self) -> MutexGuard<'_, LogState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Records an event and hands it to every client.
    pub fn record(&self, event: InteractiveEvent) {
        let logged = Arc::new(LoggedEvent::new(event));
        let mut state = self.lock();
        if state.closed {
            return;
        }
        state.last_seq = state.last_seq.max(logged.seq);
        state.buffer.push_back(Arc::clone(&logged));
        while state.buffer.len() > self.capacity {
            if let Some(old) = state.buffer.pop_front() {
                state.evicted_through = old.seq;
            }
        }
        for client in &state.clients {
            client.push(&logged);
        }
    }

    /// Connects a client. `after: Some(n)` replays the buffered events after `n` first (with a
    /// [`Gap`] when some of them are gone); `None` starts with new events. On a closed log the
    /// stream yields the backlog, then `Closed`.
    pub fn connect(self: &Arc<Self>, after: Option<u64>) -> ClientStream {
        let mut state = self.lock();
        let (backlog, gap) = match after {
            None => (Vec::new(), None),
            Some(after) => {
                let backlog: Vec<_> = state
                    .buffer
                    .iter()
                    .filter(|e| e.seq > after)
                    .cloned()
                    .collect();
                let gap = (after < state.evicted_through).then(|| Gap {
                    missed_after: after,
                    resumed_at: backlog.first().map(|e| e.seq).unwrap_or(state.last_seq + 1),
                });
                (backlog, gap)
            }
        };
        let queue = ClientQueue::new(self.client_capacity, backlog);
        if state.closed {
            queue.close();
        } else {
            state.clients.push(Arc::clone(&queue));
        }
        ClientStream {
            queue,
            gap,
            log: Arc::clone(self),
        }
    }

    /// Closes the log: every client gets `Closed` after what is queued for it.
    pub fn close(&self) {
        let mut state = self.lock();
        state.closed = true;
        for client in state.clients.drain(..) {
            client.close();
        }
    }

    /// Clients connected now.
    #[cfg(test)]
    pub fn client_count(&self) -> usize {
        self.lock().clients.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(seq: u64, kind: InteractiveEventKind) -> InteractiveEvent {
        InteractiveEvent {
            session_id: "s".into(),
            seq,
            kind,
        }
    }

    fn text(seq: u64, t: &str) -> InteractiveEvent {
        event(seq, InteractiveEventKind::TextDelta { text: t.into() })
    }

    async fn drain(queue: &ClientQueue) -> Vec<(u64, String)> {
        let mut out = Vec::new();
        while !queue.is_empty() {
            if let ClientItem::Event(e) = queue.next().await {
                out.push((e.seq, e.text_delta().unwrap_or(e.kind).to_string()));
            }
        }
        out
    }

    #[tokio::test]
    async fn resume_replays_buffered_events_and_reports_a_gap() {
        let log = EventLog::new(3, 100);
        for seq in 1..=5 {
            log.record(text(seq, &seq.to_string()));
        }
        let stream = log.connect(Some(3));
        assert_eq!(stream.gap, None);
        assert_eq!(
            drain(&stream.queue).await,
            vec![(4, "4".into()), (5, "5".into())]
        );
        let stream = log.connect(Some(1));
        assert_eq!(
            stream.gap,
            Some(Gap {
                missed_after: 1,
                resumed_at: 3
            })
        );
        assert_eq!(drain(&stream.queue).await.len(), 3);
        let live = log.connect(None);
        assert!(live.queue.is_empty());
        log.record(text(6, "6"));
        assert_eq!(drain(&live.queue).await, vec![(6, "6".into())]);
        drop(live);
        assert_eq!(log.client_count(), 2);
    }

    #[tokio::test]
    async fn a_slow_client_gets_text_coalesced_and_every_other_event() {
        let log = EventLog::new(100, 2);
        let stream = log.connect(None);
        log.record(text(1, "a"));
        log.record(text(2, "b"));
        log.record(text(3, "c"));
        log.record(text(4, "d"));
        log.record(event(
            5,
            InteractiveEventKind::Thinking { text: "hm".into() },
        ));
        let got = drain(&stream.queue).await;
        assert_eq!(
            got,
            vec![(1, "a".into()), (2, "bcd".into()), (5, "thinking".into())]
        );
    }

    #[tokio::test]
    async fn a_client_far_behind_is_disconnected_and_close_ends_streams() {
        let log = EventLog::new(1000, 1);
        let slow = log.connect(None);
        for seq in 1..=(OVERFLOW_FACTOR as u64 + 2) {
            log.record(event(
                seq,
                InteractiveEventKind::Thinking { text: "x".into() },
            ));
        }
        assert!(matches!(slow.queue.next().await, ClientItem::Overflowed));
        let other = log.connect(Some(0));
        log.close();
        let mut events = 0;
        loop {
            match other.queue.next().await {
                ClientItem::Event(_) => events += 1,
                ClientItem::Closed => break,
                ClientItem::Overflowed => panic!("not overflowed"),
            }
        }
        assert_eq!(events, OVERFLOW_FACTOR + 2);
    }
}
