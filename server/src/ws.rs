//! The WebSocket transport: `GET /v1/sessions/{id}/ws`. One socket per client, many clients per
//! session (one controller, the others observers); the same operations as the HTTP routes and
//! the same events, with the event log's back-pressure (a slow socket gets `text_delta`s
//! coalesced; one far behind is closed and resumes with `?after=`).

use std::sync::Arc;
use std::time::Duration;

use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Path, Query, State};
use axum::response::Response;
use futures::{SinkExt, StreamExt};
use robota::session::PermissionResponse;
use robota_remote::wire::{
    SubmitRequest, WsClientMessage, WsOp, WsRole, WsServerMessage, MAX_PROMPT_WAIT_MS, WS_PROTOCOL,
};
use serde::Deserialize;
use serde_json::{json, Value};
use tokio::sync::mpsc;

use crate::error::ServeError;
use crate::event_log::ClientItem;
use crate::hosted::HostedSession;
use crate::state::ServerState;

/// Messages waiting to be written to one socket before producers wait.
const OUTBOX: usize = 64;

#[derive(Deserialize)]
pub(crate) struct WsQuery {
    after: Option<u64>,
    role: Option<WsRole>,
}

/// The upgrade route.
pub(crate) async fn upgrade(
    State(state): State<Arc<ServerState>>,
    Path(id): Path<String>,
    Query(query): Query<WsQuery>,
    ws: WebSocketUpgrade,
) -> Result<Response, ServeError> {
    let hosted = state.get(&id)?;
    let limit = state.options.max_request_bytes;
    Ok(ws
        .protocols([WS_PROTOCOL])
        .max_message_size(limit)
        .max_frame_size(limit)
        .on_upgrade(move |socket| serve(socket, state, hosted, query)))
}

fn text(message: &WsServerMessage) -> Message {
    Message::Text(
        serde_json::to_string(message)
            .unwrap_or_else(|_| "{}".into())
            .into(),
    )
}

async fn serve(
    socket: WebSocket,
    state: Arc<ServerState>,
    hosted: Arc<HostedSession>,
    query: WsQuery,
) {
    let wants_control = query.role.unwrap_or(WsRole::Controller) == WsRole::Controller;
    let role = if wants_control && hosted.claim_control() {
        WsRole::Controller
    } else {
        WsRole::Observer
    };
    let (mut sink, mut incoming) = socket.split();
    let (out, mut outbox) = mpsc::channel::<Message>(OUTBOX);
    let writer = tokio::spawn(async move {
        while let Some(message) = outbox.recv().await {
            let close = matches!(message, Message::Close(_));
            if sink.send(message).await.is_err() || close {
                break;
            }
        }
        let _ = sink.close().await;
    });

    let _ = out
        .send(text(&WsServerMessage::Hello {
            role,
            session: hosted.info(),
        }))
        .await;
    let client = hosted.log.connect(query.after);
    if let Some(gap) = &client.gap {
        let _ = out
            .send(text(&WsServerMessage::Gap {
                missed_after: gap.missed_after,
                resumed_at: gap.resumed_at,
            }))
            .await;
    }
    let events_out = out.clone();
    let shutdown = state.shutdown.clone();
    let forward = tokio::spawn(async move {
        loop {
            let item = tokio::select! {
                item = client.queue.next() => item,
                _ = shutdown.cancelled() => ClientItem::Closed,
            };
            match item {
                ClientItem::Event(event) => {
                    let message = text(&WsServerMessage::Event {
                        event: event.value(),
                    });
                    if events_out.send(message).await.is_err() {
                        break;
                    }
                }
                ClientItem::Closed => {
                    let _ = events_out.send(text(&WsServerMessage::SessionClosed)).await;
                    let _ = events_out.send(Message::Close(None)).await;
                    break;
                }
                ClientItem::Overflowed => {
                    let _ = events_out
                        .send(Message::Close(Some(CloseFrame {
                            code: 1013,
                            reason: "too far behind; reconnect with ?after=<last seq>".into(),
                        })))
                        .await;
                    break;
                }
            }
        }
    });

    while let Some(Ok(message)) = incoming.next().await {
        let bytes = match message {
            Message::Text(text) => text.as_bytes().to_vec(),
            Message::Binary(bytes) => bytes.to_vec(),
            Message::Close(_) => break,
            Message::Ping(_) | Message::Pong(_) => continue,
        };
        let request: WsClientMessage = match crate::http::parse_json(&bytes) {
            Ok(request) => request,
            Err(error) => {
                // No id to answer to: report it with id 0.
                let _ = out.send(response(0, Err(error))).await;
                continue;
            }
        };
        let hosted = Arc::clone(&hosted);
        let state = Arc::clone(&state);
        let out = out.clone();
        // Each request runs on its own, so a long one (a prompt's result) does not hold up the
        // others or the events.
        tokio::spawn(async move {
            let id = request.id;
            let result = run_op(&state, &hosted, role, request.op).await;
            let _ = out.send(response(id, result)).await;
        });
    }
    if role == WsRole::Controller {
        hosted.release_control();
    }
    forward.abort();
    drop(out);
    let _ = tokio::time::timeout(Duration::from_secs(5), writer).await;
}

fn response(id: u64, result: Result<Value, ServeError>) -> Message {
    text(&match result {
        Ok(result) => WsServerMessage::Response {
            id,
            ok: true,
            result: Some(result),
            error: None,
        },
        Err(error) => WsServerMessage::Response {
            id,
            ok: false,
            result: None,
            error: Some(error.detail()),
        },
    })
}

fn value<T: serde::Serialize>(value: &T) -> Result<Value, ServeError> {
    serde_json::to_value(value).map_err(|e| ServeError::internal(format!("cannot serialize: {e}")))
}

async fn run_op(
    state: &ServerState,
    hosted: &HostedSession,
    role: WsRole,
    op: WsOp,
) -> Result<Value, ServeError> {
    let controls = matches!(
        op,
        WsOp::Submit { .. }
            | WsOp::Abort
            | WsOp::CancelPrompt { .. }
            | WsOp::ExecuteCommand { .. }
            | WsOp::SetName { .. }
            | WsOp::AnswerPermission { .. }
    );
    if controls && role != WsRole::Controller {
        return Err(ServeError::forbidden(
            "this socket is an observer; only the session's controller may do that (another \
             client holds control)",
        ));
    }
    match op {
        WsOp::Submit {
            text,
            display,
            output_format,
        } => {
            state.check_open()?;
            value(&hosted.submit(SubmitRequest {
                text,
                display,
                output_format,
            })?)
        }
        WsOp::PromptResult { prompt_id } => {
            let status = hosted
                .prompt_status(prompt_id, Duration::from_millis(MAX_PROMPT_WAIT_MS))
                .await?;
            match status.result {
                Some(result) => Ok(result),
                None => Err(ServeError::conflict(
                    "busy",
                    format!("prompt {prompt_id} has not ended yet; ask again"),
                )),
            }
        }
        WsOp::Abort => {
            hosted.session.abort();
            Ok(json!({"aborted": true}))
        }
        WsOp::CancelPrompt { prompt_id } => {
            Ok(json!({"cancelled": hosted.session.cancel_prompt(prompt_id)}))
        }
        WsOp::ExecuteCommand { name, args } => {
            state.check_open()?;
            value(&hosted.session.execute_command(&name, &args).await?)
        }
        WsOp::ListCommands => Ok(json!({"commands": value(&hosted.session.list_commands()?)?})),
        WsOp::History => Ok(json!({"entries": value(&hosted.session.get_full_history())?})),
        WsOp::Context => value(&hosted.session.get_context_state()),
        WsOp::SetName { name } => {
            hosted.session.set_name(name)?;
            Ok(json!({"name": hosted.session.get_name()}))
        }
        WsOp::AnswerPermission {
            request_id,
            response,
        } => {
            let response: PermissionResponse = serde_json::from_value(response)
                .map_err(|e| ServeError::invalid(format!("`response`: {e}")))?;
            hosted
                .network_permissions()?
                .answer(&request_id, response)?;
            Ok(json!({"resolved": true}))
        }
        WsOp::Info => value(&hosted.info()),
    }
}
