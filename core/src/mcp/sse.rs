//! The legacy HTTP+SSE MCP transport (protocol revision 2024-11-05), client side, for servers
//! that still offer only it (`"type": "sse"` in `.mcp.json`).
//!
//! The client opens a `GET` event stream; the server's first event, `endpoint`, names the URL
//! the client `POST`s its JSON-RPC messages to; the server's messages arrive on the stream as
//! `message` events. `rmcp` dropped this transport, so robota carries it: a small
//! [`rmcp::transport::Transport`] over reqwest and the providers' SSE decoder.
//!
//! Safety: the endpoint must be on the stream's origin (scheme, host and port) — a server may not
//! send the configured headers (an API key) to another host. Events are size-capped by the
//! decoder; the queue of received messages is bounded, so a fast server waits for the session.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::time::Duration;

use futures::StreamExt;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, ACCEPT, CONTENT_TYPE};
use rmcp::service::{RoleClient, RxJsonRpcMessage, TxJsonRpcMessage};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::provider::sse::{SseDecoder, SseEvent};

/// Largest single event the server may send (a tool result included).
const MAX_EVENT_BYTES: usize = 32 * 1024 * 1024;
/// Messages received and not yet taken by the session.
const QUEUE: usize = 64;
/// How long opening a TCP connection to the server may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// What a connection failure says when the server wants authorization (HTTP 401).
pub(crate) const UNAUTHORIZED: &str = "answered HTTP 401 Unauthorized";

/// Why a message could not be sent.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SseTransportError {
    /// The `POST` failed or was refused.
    #[error("{0}")]
    Post(String),
    /// The message could not be serialized.
    #[error("cannot encode the message: {0}")]
    Encode(#[from] serde_json::Error),
}

/// A connected legacy SSE transport.
pub(crate) struct SseClientTransport {
    client: reqwest::Client,
    endpoint: url::Url,
    headers: HeaderMap,
    incoming: mpsc::Receiver<RxJsonRpcMessage<RoleClient>>,
    reader: JoinHandle<()>,
}

impl Drop for SseClientTransport {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

/// The configured headers as a header map, or the header that is not valid.
pub(crate) fn header_map(headers: &BTreeMap<String, String>) -> Result<HeaderMap, String> {
    let mut map = HeaderMap::new();
    for (name, value) in headers {
        let header = HeaderName::from_bytes(name.as_bytes())
            .map_err(|e| format!("header `{name}` is not a valid header name ({e})"))?;
        let value = HeaderValue::from_str(value)
            .map_err(|e| format!("header `{name}` has an invalid value ({e})"))?;
        map.insert(header, value);
    }
    Ok(map)
}

impl SseClientTransport {
    /// Opens the event stream at `url` and waits for the server's `endpoint` event (the caller
    /// bounds the wait with the server's start-up timeout).
    pub(crate) async fn connect(
        url: &str,
        headers: &BTreeMap<String, String>,
    ) -> Result<Self, String> {
        let stream_url =
            url::Url::parse(url).map_err(|e| format!("`{url}` is not a valid URL ({e})"))?;
        let headers = header_map(headers)?;
        let client = super::http_client::sse_http_client(CONNECT_TIMEOUT)?;
        let response = client
            .get(stream_url.clone())
            .headers(headers.clone())
            .header(ACCEPT, "text/event-stream")
            .send()
            .await
            .map_err(|e| format!("cannot reach {url} ({e})"))?;
        let status = response.status();
        if status == reqwest::StatusCode::UNAUTHORIZED {
            return Err(format!("{url} {UNAUTHORIZED} to the event stream request"));
        }
        if !status.is_success() {
            return Err(format!(
                "{url} answered HTTP {status} to the event stream request"
            ));
        }
        let is_event_stream = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        if !is_event_stream {
            return Err(format!(
                "{url} did not answer with an event stream (is it a streamable HTTP server? \
                 then use `\"type\": \"http\"`)"
            ));
        }
        let mut body = response.bytes_stream();
        let mut decoder = SseDecoder::with_max_event_bytes(MAX_EVENT_BYTES);
        let mut pending = Vec::new();
        let endpoint = async {
            loop {
                if let Some(index) = pending
                    .iter()
                    .position(|e: &SseEvent| e.event == "endpoint")
                {
                    let event = pending.remove(index);
                    return Ok(event.data);
                }
                match body.next().await {
                    Some(Ok(chunk)) => decoder
                        .feed(&chunk, &mut pending)
                        .map_err(|e| format!("the event stream is malformed ({e})"))?,
                    Some(Err(e)) => return Err(format!("the event stream broke ({e})")),
                    None => return Err("the event stream ended before the `endpoint` event".into()),
                }
            }
        }
        .await?;
        let endpoint = stream_url
            .join(endpoint.trim())
            .map_err(|e| format!("the server's endpoint `{endpoint}` is not a URL ({e})"))?;
        if endpoint.origin() != stream_url.origin() {
            return Err(format!(
                "the server asked for messages to be posted to {endpoint}, another origin than \
                 {url}; refused so the configured headers stay with that server"
            ));
        }
        let (sender, incoming) = mpsc::channel(QUEUE);
        let reader = tokio::spawn(async move {
            // Events that arrived with the endpoint come first.
            for event in pending {
                if !forward(event, &sender).await {
                    return;
                }
            }
            while let Some(Ok(chunk)) = body.next().await {
                let mut events = Vec::new();
                if decoder.feed(&chunk, &mut events).is_err() {
                    // An event over the cap: the stream cannot be trusted any further.
                    return;
                }
                for event in events {
                    if !forward(event, &sender).await {
                        return;
                    }
                }
            }
            // Dropping the sender ends `receive`: the session sees the connection close.
        });
        Ok(SseClientTransport {
            client,
            endpoint,
            headers,
            incoming,
            reader,
        })
    }
}

/// Passes a `message` event on; false once the session stopped listening.
async fn forward(event: SseEvent, sender: &mpsc::Sender<RxJsonRpcMessage<RoleClient>>) -> bool {
    if event.event != "message" {
        return true;
    }
    // A message that is not JSON-RPC is skipped; the call waiting for it times out.
    match serde_json::from_str(&event.data) {
        Ok(message) => sender.send(message).await.is_ok(),
        Err(_) => true,
    }
}

impl rmcp::transport::Transport<RoleClient> for SseClientTransport {
    type Error = SseTransportError;

    fn name() -> Cow<'static, str> {
        "legacy SSE".into()
    }

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send + 'static {
        let request = serde_json::to_vec(&item).map(|body| {
            self.client
                .post(self.endpoint.clone())
                .headers(self.headers.clone())
                .header(CONTENT_TYPE, "application/json")
                .body(body)
        });
        async move {
            let response = request?
                .send()
                .await
                .map_err(|e| SseTransportError::Post(format!("cannot post the message ({e})")))?;
            let status = response.status();
            if !status.is_success() {
                return Err(SseTransportError::Post(format!(
                    "the server answered HTTP {status} to a posted message"
                )));
            }
            Ok(())
        }
    }

    fn receive(
        &mut self,
    ) -> impl std::future::Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        self.incoming.recv()
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.reader.abort();
        self.incoming.close();
        Ok(())
    }
}
