//! Events over Server-Sent Events: `GET /v1/sessions/{id}/events`, resumable with
//! `Last-Event-ID` (or `?after=`), a `gap` event when the events asked for are gone, a keep-alive
//! comment every 15 s, and `session_closed` when the session goes away.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use futures::stream::{self, Stream, StreamExt};
use serde::Deserialize;

use crate::error::ServeError;
use crate::event_log::{ClientItem, ClientStream};
use crate::state::ServerState;

#[derive(Deserialize)]
pub(crate) struct EventsQuery {
    after: Option<u64>,
}

enum Phase {
    Gap(ClientStream),
    Events(ClientStream),
    Done,
}

/// The SSE route.
pub(crate) async fn events(
    State(state): State<Arc<ServerState>>,
    Path(id): Path<String>,
    Query(query): Query<EventsQuery>,
    headers: HeaderMap,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ServeError> {
    let hosted = state.get(&id)?;
    let after = crate::http::resume_point(&headers, query.after)?;
    let client = hosted.log.connect(after);
    let shutdown = state.shutdown.clone();
    let session_id = id.clone();
    let first = if client.gap.is_some() {
        Phase::Gap(client)
    } else {
        Phase::Events(client)
    };
    let events = stream::unfold(first, move |phase| {
        let shutdown = shutdown.clone();
        let session_id = session_id.clone();
        async move {
            match phase {
                Phase::Gap(client) => {
                    let data = serde_json::to_string(&client.gap).unwrap_or_default();
                    Some((
                        Event::default().event("gap").data(data),
                        Phase::Events(client),
                    ))
                }
                Phase::Events(client) => {
                    let item = tokio::select! {
                        item = client.queue.next() => item,
                        _ = shutdown.cancelled() => ClientItem::Closed,
                    };
                    match item {
                        ClientItem::Event(event) => Some((
                            Event::default()
                                .id(event.seq.to_string())
                                .event(event.kind)
                                .data(&event.json),
                            Phase::Events(client),
                        )),
                        ClientItem::Closed => {
                            let data = serde_json::json!({"session_id": session_id}).to_string();
                            Some((
                                Event::default().event("session_closed").data(data),
                                Phase::Done,
                            ))
                        }
                        // The client falls too far behind: end the stream; it resumes with
                        // Last-Event-ID.
                        ClientItem::Overflowed => None,
                    }
                }
                Phase::Done => None,
            }
        }
    })
    .map(Ok::<_, Infallible>);
    Ok(Sse::new(events).keep_alive(
        KeepAlive::new()
            .interval(Duration::from_secs(15))
            .text("keep-alive"),
    ))
}
