//! [`RemoteSubscription`]: a session's events read from the server's SSE stream by a task of
//! its own, which reconnects with `Last-Event-ID` when the connection drops (bounded backoff), so
//! a reader sees every event once, in `seq` order, or a [`RemoteEventItem::Gap`] where the server
//! no longer had them.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use reqwest::header::ACCEPT;
use reqwest::Method;
use robota::framework::interactive::InteractiveEvent;
use serde_json::Value;
use tokio::sync::{mpsc, watch, Mutex};
use tokio::task::JoinHandle;

use crate::client::{transport_error, Client};
use crate::error::RemoteError;
use crate::sse::SseParser;
use crate::wire::Gap;

/// How many items wait for the reader before the stream task stops reading (the server then
/// buffers, and past its bound drops the connection; the task resumes where it was).
const QUEUE_CAPACITY: usize = 1024;

/// The largest single SSE message accepted.
const MAX_EVENT_BYTES: usize = 16 * 1024 * 1024;

/// The server sends a keep-alive comment every 15 s: a stream silent for this long is dead.
const IDLE_TIMEOUT: Duration = Duration::from_secs(45);

/// Reconnection: the first wait, the longest wait, and how many attempts in a row may fail
/// before the subscription gives up (about half a minute in all).
const FIRST_BACKOFF: Duration = Duration::from_millis(100);
const MAX_BACKOFF: Duration = Duration::from_secs(5);
/// How many reconnections in a row may fail before a subscription gives up and yields
/// [`RemoteEventItem::Disconnected`] as its last item. The waits between attempts start at
/// 100 ms and double up to 5 s (about half a minute in all); a connection that delivers an
/// event resets the count.
pub const MAX_RECONNECT_ATTEMPTS: u32 = 10;

/// What a [`RemoteSubscription`] delivers.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
// The large variant is the common one (every event): boxing it would allocate per event.
#[allow(clippy::large_enum_variant)]
pub enum RemoteEventItem {
    /// One session event, as the engine emitted it.
    Event(InteractiveEvent),
    /// Events after `missed_after` up to `resumed_at - 1` were no longer buffered by the server
    /// (the reader fell too far behind, or resumed too late): refresh state from
    /// `get_full_history`/`info` instead of trusting the stream for them.
    Gap(Gap),
    /// An event of a type this client's engine version does not know (a newer server); kept
    /// as JSON.
    Unrecognized {
        /// Its `seq`.
        seq: u64,
        /// Its `type`.
        event_type: String,
        /// The whole event.
        data: Value,
    },
    /// The session was closed on the server; nothing follows.
    SessionClosed,
    /// The stream could not be resumed (the server is gone, the token was refused, the stream
    /// was malformed); nothing follows.
    Disconnected(RemoteError),
}

/// A pull subscription to a remote session's events.
#[derive(Debug)]
pub struct RemoteSubscription {
    items: Mutex<mpsc::Receiver<RemoteEventItem>>,
    last_seq: Arc<AtomicU64>,
    subscribed_after: u64,
    /// True once the first connection was answered (the stream is live, or it failed).
    answered: watch::Receiver<bool>,
    task: JoinHandle<()>,
}

impl RemoteSubscription {
    /// Starts reading the events after `after` (on the current tokio runtime).
    pub(crate) fn start(client: Arc<Client>, session_id: String, after: u64) -> Self {
        let (sender, receiver) = mpsc::channel(QUEUE_CAPACITY);
        let last_seq = Arc::new(AtomicU64::new(after));
        let (answered_sender, answered) = watch::channel(false);
        let task = tokio::spawn(run_stream(
            client,
            session_id,
            Arc::clone(&last_seq),
            sender,
            answered_sender,
        ));
        RemoteSubscription {
            items: Mutex::new(receiver),
            last_seq,
            subscribed_after: after,
            answered,
            task,
        }
    }

    /// Waits (at most `timeout`) until the server answered the stream's first connection: from
    /// then on the server delivers every new event to it. A failed connection counts as an
    /// answer (the failure is the stream's last item). False on timeout.
    pub async fn wait_connected(&self, timeout: Duration) -> bool {
        let mut answered = self.answered.clone();
        let connected = tokio::time::timeout(timeout, answered.wait_for(|done| *done))
            .await
            .is_ok();
        connected
    }

    /// The `seq` this subscription started after: every event it delivers has a larger one.
    pub fn subscribed_after(&self) -> u64 {
        self.subscribed_after
    }

    /// The `seq` of the last event received from the server (where a reconnection resumes).
    pub fn last_seq(&self) -> u64 {
        self.last_seq.load(Ordering::SeqCst)
    }

    /// The next item, waiting at most `timeout`; `None` on timeout, or once the stream ended
    /// and every item was read.
    pub async fn next_event(&self, timeout: Duration) -> Option<RemoteEventItem> {
        let mut items = self.items.lock().await;
        tokio::time::timeout(timeout, items.recv())
            .await
            .ok()
            .flatten()
    }

    /// The next item if one is queued, without waiting.
    pub fn try_next_event(&self) -> Option<RemoteEventItem> {
        self.items.try_lock().ok()?.try_recv().ok()
    }

    /// Stops reading; queued items are dropped.
    pub fn unsubscribe(&self) {
        self.task.abort();
    }
}

impl Drop for RemoteSubscription {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Why one connection ended.
enum StreamEnd {
    /// The subscription is over (the reader is gone, the session closed, a final error sent).
    Finished,
    /// The connection dropped: resume.
    Dropped(RemoteError),
}

async fn run_stream(
    client: Arc<Client>,
    session_id: String,
    last_seq: Arc<AtomicU64>,
    sender: mpsc::Sender<RemoteEventItem>,
    answered: watch::Sender<bool>,
) {
    let mut failures: u32 = 0;
    loop {
        let end = read_connection(
            &client,
            &session_id,
            &last_seq,
            &sender,
            &mut failures,
            &answered,
        )
        .await;
        // Whatever happened, the first attempt is over.
        answered.send_replace(true);
        match end {
            StreamEnd::Finished => return,
            StreamEnd::Dropped(error) => {
                failures += 1;
                if failures > MAX_RECONNECT_ATTEMPTS {
                    let _ = sender.send(RemoteEventItem::Disconnected(error)).await;
                    return;
                }
                let exponent = (failures - 1).min(16);
                let backoff = FIRST_BACKOFF.saturating_mul(1 << exponent).min(MAX_BACKOFF);
                tokio::time::sleep(backoff).await;
            }
        }
    }
}

/// One connection: connects after `last_seq`, forwards what arrives, says how it ended.
/// `failures` is reset once the connection delivers something.
async fn read_connection(
    client: &Client,
    session_id: &str,
    last_seq: &AtomicU64,
    sender: &mpsc::Sender<RemoteEventItem>,
    failures: &mut u32,
    answered: &watch::Sender<bool>,
) -> StreamEnd {
    let after = last_seq.load(Ordering::SeqCst);
    let mut url = client.url(&["sessions", session_id, "events"]);
    url.query_pairs_mut()
        .append_pair("after", &after.to_string());
    let request = client
        .request(Method::GET, url.clone())
        .header(ACCEPT, "text/event-stream")
        .header("Last-Event-ID", after.to_string());
    let mut response = match tokio::time::timeout(client.timeout, request.send()).await {
        Err(_) => {
            return StreamEnd::Dropped(RemoteError::Timeout {
                what: format!("GET {}", url.path()),
                after: client.timeout,
            })
        }
        Ok(Err(error)) => return StreamEnd::Dropped(transport_error(&url, &error)),
        Ok(Ok(response)) => response,
    };
    let status = response.status();
    if !status.is_success() {
        // An error answer is final (wrong token, no such session, shutting down); read a
        // bounded part of its body for the message.
        let mut body = Vec::new();
        while let Ok(Ok(Some(chunk))) = tokio::time::timeout(client.timeout, response.chunk()).await
        {
            body.extend_from_slice(&chunk);
            if body.len() > 64 * 1024 {
                break;
            }
        }
        let error = RemoteError::from_answer(status.as_u16(), &body);
        let _ = sender.send(RemoteEventItem::Disconnected(error)).await;
        return StreamEnd::Finished;
    }
    // The server subscribed this stream before answering.
    answered.send_replace(true);
    let mut parser = SseParser::new(MAX_EVENT_BYTES);
    loop {
        let chunk = match tokio::time::timeout(IDLE_TIMEOUT, response.chunk()).await {
            Err(_) => {
                return StreamEnd::Dropped(RemoteError::Timeout {
                    what: "the event stream".to_string(),
                    after: IDLE_TIMEOUT,
                })
            }
            Ok(Err(error)) => return StreamEnd::Dropped(transport_error(&url, &error)),
            Ok(Ok(None)) => {
                return StreamEnd::Dropped(RemoteError::Connection {
                    url: url.to_string(),
                    message: "the event stream ended without `session_closed`".to_string(),
                })
            }
            Ok(Ok(Some(chunk))) => chunk,
        };
        let messages = match parser.feed(&chunk) {
            Ok(messages) => messages,
            Err(error) => {
                let error = RemoteError::Protocol {
                    message: error.to_string(),
                };
                let _ = sender.send(RemoteEventItem::Disconnected(error)).await;
                return StreamEnd::Finished;
            }
        };
        for message in messages {
            *failures = 0;
            let item = match message.event.as_str() {
                "gap" => match serde_json::from_str::<Gap>(&message.data) {
                    Ok(gap) => {
                        // Events before `resumed_at` are gone: resume after them next time.
                        last_seq.fetch_max(gap.resumed_at.saturating_sub(1), Ordering::SeqCst);
                        RemoteEventItem::Gap(gap)
                    }
                    Err(error) => {
                        return finish_malformed(sender, "gap", &error).await;
                    }
                },
                "session_closed" => {
                    let _ = sender.send(RemoteEventItem::SessionClosed).await;
                    return StreamEnd::Finished;
                }
                _ => {
                    let value: Value = match serde_json::from_str(&message.data) {
                        Ok(value) => value,
                        Err(error) => {
                            return finish_malformed(sender, &message.event, &error).await;
                        }
                    };
                    let Some(seq) = value.get("seq").and_then(Value::as_u64) else {
                        let error = RemoteError::Protocol {
                            message: format!("a `{}` event has no `seq`", message.event),
                        };
                        let _ = sender.send(RemoteEventItem::Disconnected(error)).await;
                        return StreamEnd::Finished;
                    };
                    if seq <= last_seq.load(Ordering::SeqCst) {
                        // Already delivered before a reconnection.
                        continue;
                    }
                    last_seq.store(seq, Ordering::SeqCst);
                    match serde_json::from_value::<InteractiveEvent>(value.clone()) {
                        Ok(event) => RemoteEventItem::Event(event),
                        Err(_) => RemoteEventItem::Unrecognized {
                            seq,
                            event_type: value
                                .get("type")
                                .and_then(Value::as_str)
                                .unwrap_or(message.event.as_str())
                                .to_string(),
                            data: value,
                        },
                    }
                }
            };
            if sender.send(item).await.is_err() {
                return StreamEnd::Finished;
            }
        }
    }
}

async fn finish_malformed(
    sender: &mpsc::Sender<RemoteEventItem>,
    event: &str,
    error: &serde_json::Error,
) -> StreamEnd {
    let error = RemoteError::Protocol {
        message: format!("a `{event}` event's data is not JSON of protocol v1: {error}"),
    };
    let _ = sender.send(RemoteEventItem::Disconnected(error)).await;
    StreamEnd::Finished
}
