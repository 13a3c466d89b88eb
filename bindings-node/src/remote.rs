//! [`NativeRemoteSession`] and [`NativeRemoteEvents`]: `robota_remote::RemoteSession` (a
//! session hosted by `robota serve`) as JavaScript classes. Every call goes to the server. The
//! calls that are plain (not Promises) on a local session — abort, the command list, history,
//! context, name, info — are plain here too and block until the server answers (bounded by the
//! endpoint's timeout), so code written for a local session runs unchanged; the rest return
//! Promises. Values cross as JSON text. The protocol lives in the Rust crate, not here.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use napi::bindgen_prelude::block_on;
use napi_derive::napi;
use robota::api::ApiError;
use robota::framework::interactive::{InteractiveEvent, PromptResult};
use robota::session::PermissionResponse;
use robota_remote::wire::{CreateSessionRequest, SubmitRequest, SubmitState};
use robota_remote::{
    RemoteEndpoint, RemoteError, RemoteEventItem, RemotePrompt, RemoteSession, RemoteSubscription,
};
use serde_json::{json, Value};

use crate::{api_error, output_format_arg, to_json};

/// The error JavaScript sees for a failed remote call: `[code] message`, with the engine's
/// codes where one fits (the facade's `RobotaError.code`).
fn remote_error(e: RemoteError) -> napi::Error {
    let code = match &e {
        RemoteError::QueueFull { .. } => "queue_full",
        RemoteError::Busy { .. } => "busy",
        RemoteError::SessionLocked { .. } => "session_locked",
        RemoteError::ShuttingDown { .. } => "shut_down",
        RemoteError::InvalidRequest { .. }
        | RemoteError::PayloadTooLarge { .. }
        | RemoteError::InvalidEndpoint { .. } => "invalid_argument",
        RemoteError::Unauthorized { .. } => "unauthorized",
        RemoteError::NotFound { .. } => "not_found",
        RemoteError::PathOutsideRoots { .. } => "path_outside_roots",
        RemoteError::Forbidden { .. } => "forbidden",
        RemoteError::Connection { .. } | RemoteError::Timeout { .. } => "connection",
        RemoteError::Protocol { .. } => "protocol",
        _ => "remote",
    };
    napi::Error::new(napi::Status::GenericFailure, format!("[{code}] {e}"))
}

fn endpoint(url: String, token: Option<String>, timeout_ms: f64) -> napi::Result<RemoteEndpoint> {
    if !timeout_ms.is_finite() || timeout_ms <= 0.0 {
        return Err(api_error(ApiError::invalid_argument(
            "`timeoutMs` must be a positive number of milliseconds",
        )));
    }
    Ok(RemoteEndpoint::new(url, token)
        .with_request_timeout(Duration::from_secs_f64(timeout_ms / 1000.0)))
}

fn parse<T: serde::de::DeserializeOwned>(json: &str, what: &str) -> napi::Result<T> {
    serde_json::from_str(json)
        .map_err(|e| api_error(ApiError::invalid_json(format!("invalid {what}: {e}"))))
}

/// Creates a session on the server at `url` (`requestJson`: `{cwd?, name?, resume?, fork?}`).
#[napi]
pub async fn remote_create(
    url: String,
    token: Option<String>,
    request_json: String,
    timeout_ms: f64,
) -> napi::Result<NativeRemoteSession> {
    let endpoint = endpoint(url, token, timeout_ms)?;
    let timeout = endpoint.request_timeout;
    let request: CreateSessionRequest = parse(&request_json, "session request")?;
    let session = RemoteSession::create(&endpoint, request)
        .await
        .map_err(remote_error)?;
    Ok(NativeRemoteSession { session, timeout })
}

/// Attaches to the session `sessionId` the server at `url` hosts.
#[napi]
pub async fn remote_connect(
    url: String,
    session_id: String,
    token: Option<String>,
    timeout_ms: f64,
) -> napi::Result<NativeRemoteSession> {
    let endpoint = endpoint(url, token, timeout_ms)?;
    let timeout = endpoint.request_timeout;
    let session = RemoteSession::connect(&endpoint, &session_id)
        .await
        .map_err(remote_error)?;
    Ok(NativeRemoteSession { session, timeout })
}

/// A session on a `robota serve` server. Use the `RemoteSession` class of `@robota/native`.
#[napi]
pub struct NativeRemoteSession {
    session: RemoteSession,
    /// The endpoint's per-call timeout (also how long a new stream waits for its connection).
    timeout: Duration,
}

/// A prompt submitted to a remote session.
#[napi]
pub struct NativeRemotePrompt {
    prompt: RemotePrompt,
}

#[napi]
impl NativeRemotePrompt {
    /// The prompt's id within its session.
    #[napi(getter)]
    pub fn id(&self) -> f64 {
        self.prompt.id() as f64
    }

    /// `"started"` or `"queued"`.
    #[napi(getter, ts_return_type = "'started' | 'queued'")]
    pub fn status(&self) -> String {
        match self.prompt.status() {
            SubmitState::Started => "started".into(),
            SubmitState::Queued => "queued".into(),
        }
    }

    /// Resolves once the prompt has ended, with the engine's `PromptResult` as JSON.
    #[napi]
    pub async fn result(&self) -> napi::Result<String> {
        let result: PromptResult = self.prompt.result().await.map_err(remote_error)?;
        to_json(&result)
    }

    /// Cancels this prompt (dropped while queued, aborted while running); false once it ended.
    #[napi]
    pub async fn cancel(&self) -> napi::Result<bool> {
        self.prompt.cancel().await.map_err(remote_error)
    }
}

#[napi]
impl NativeRemoteSession {
    /// The session id.
    #[napi(getter)]
    pub fn session_id(&self) -> String {
        self.session.get_session_id()
    }

    /// Submits a prompt; resolves once the server accepted it (started or queued) with its
    /// `NativeRemotePrompt`.
    #[napi]
    pub async fn submit(
        &self,
        text: String,
        display: Option<String>,
        output_format_json: Option<String>,
    ) -> napi::Result<NativeRemotePrompt> {
        let request = SubmitRequest {
            text,
            display,
            output_format: output_format_arg(output_format_json)?,
        };
        let prompt = self
            .session
            .submit_request(request)
            .await
            .map_err(remote_error)?;
        Ok(NativeRemotePrompt { prompt })
    }

    /// Aborts the running prompt and drops the queued one.
    #[napi]
    pub fn abort(&self) -> napi::Result<()> {
        block_on(self.session.abort()).map_err(remote_error)
    }

    /// Cancels one prompt; false when it had already ended.
    #[napi]
    pub async fn cancel_prompt(&self, prompt_id: u32) -> napi::Result<bool> {
        self.session
            .cancel_prompt(u64::from(prompt_id))
            .await
            .map_err(remote_error)
    }

    /// Runs a slash command; resolves with the `CommandResult` as JSON.
    #[napi]
    pub async fn execute_command(&self, name: String, args: String) -> napi::Result<String> {
        let result = self
            .session
            .execute_command(&name, &args)
            .await
            .map_err(remote_error)?;
        to_json(&result)
    }

    /// The commands, as JSON.
    #[napi]
    pub fn list_commands(&self) -> napi::Result<String> {
        to_json(&block_on(self.session.list_commands()).map_err(remote_error)?)
    }

    /// The full history, as JSON.
    #[napi]
    pub fn get_full_history(&self) -> napi::Result<String> {
        to_json(&block_on(self.session.get_full_history()).map_err(remote_error)?)
    }

    /// The context state, as JSON.
    #[napi]
    pub fn get_context_state(&self) -> napi::Result<String> {
        to_json(&block_on(self.session.get_context_state()).map_err(remote_error)?)
    }

    /// The session as the server reports it (`SessionInfo`), as JSON.
    #[napi]
    pub fn info(&self) -> napi::Result<String> {
        to_json(&block_on(self.session.info()).map_err(remote_error)?)
    }

    /// The session's name.
    #[napi]
    pub fn get_name(&self) -> napi::Result<Option<String>> {
        block_on(self.session.get_name()).map_err(remote_error)
    }

    /// Names the session (`null` clears the name).
    #[napi]
    pub fn set_name(&self, name: Option<String>) -> napi::Result<()> {
        block_on(self.session.set_name(name)).map_err(remote_error)
    }

    /// Answers a permission request (`responseJson`: a `PermissionResponse`).
    #[napi]
    pub async fn answer_permission(
        &self,
        request_id: String,
        response_json: String,
    ) -> napi::Result<()> {
        let response: PermissionResponse = parse(&response_json, "permission answer")?;
        self.session
            .answer_permission(&request_id, &response)
            .await
            .map_err(remote_error)
    }

    /// The permission requests waiting for an answer, as JSON.
    #[napi]
    pub async fn pending_permissions(&self) -> napi::Result<String> {
        to_json(
            &self
                .session
                .pending_permissions()
                .await
                .map_err(remote_error)?,
        )
    }

    /// Copies the session on the server; resolves with the copy.
    #[napi]
    pub async fn fork(&self, name: Option<String>) -> napi::Result<NativeRemoteSession> {
        let session = self.session.fork(name).await.map_err(remote_error)?;
        Ok(NativeRemoteSession {
            session,
            timeout: self.timeout,
        })
    }

    /// Closes the session on the server (aborted, saved, no longer hosted).
    #[napi]
    pub async fn close(&self) -> napi::Result<()> {
        self.session.close().await.map_err(remote_error)
    }

    /// Subscribes to the events after `after` (`null`: from now on).
    #[napi]
    pub async fn subscribe(&self, after: Option<f64>) -> napi::Result<NativeRemoteEvents> {
        let subscription = match after {
            Some(after) if after.is_finite() && after >= 0.0 => {
                let subscription = self.session.subscribe_from(after as u64);
                subscription.wait_connected(self.timeout).await;
                subscription
            }
            Some(_) => {
                return Err(api_error(ApiError::invalid_argument(
                    "`after` must be a non-negative event seq",
                )))
            }
            None => self.session.subscribe_pull().await.map_err(remote_error)?,
        };
        Ok(NativeRemoteEvents {
            subscription: Arc::new(subscription),
            session_id: self.session.get_session_id(),
            failure: Arc::new(Mutex::new(None)),
        })
    }
}

/// A remote session's event stream (use `RemoteSession.events()`).
#[napi]
pub struct NativeRemoteEvents {
    subscription: Arc<RemoteSubscription>,
    session_id: String,
    /// The error that ended the stream, rejected once the items before it were read.
    failure: Arc<Mutex<Option<RemoteError>>>,
}

/// One item as JSON: an event as the engine serializes it, `{"type": "gap", …}` or
/// `{"type": "session_closed"}`; `Err` for the error that ended the stream.
fn item_to_value(session_id: &str, item: RemoteEventItem) -> Result<Value, RemoteError> {
    match item {
        RemoteEventItem::Event(event) => Ok(event_value(&event)),
        RemoteEventItem::Gap(gap) => Ok(json!({
            "type": "gap", "session_id": session_id, "seq": gap.resumed_at.saturating_sub(1),
            "missed_after": gap.missed_after, "resumed_at": gap.resumed_at,
        })),
        RemoteEventItem::Unrecognized { data, .. } => Ok(data),
        RemoteEventItem::SessionClosed => {
            Ok(json!({"type": "session_closed", "session_id": session_id}))
        }
        RemoteEventItem::Disconnected(error) => Err(error),
        // A newer item kind: surfaced as an unknown event.
        _ => Ok(json!({"type": "unknown", "session_id": session_id, "seq": 0})),
    }
}

fn event_value(event: &InteractiveEvent) -> Value {
    serde_json::to_value(event).unwrap_or(Value::Null)
}

#[napi]
impl NativeRemoteEvents {
    /// The `seq` this stream started after.
    #[napi(getter)]
    pub fn subscribed_after(&self) -> f64 {
        self.subscription.subscribed_after() as f64
    }

    /// Waits up to `timeoutMs` for at least one item, then resolves with up to `max` queued
    /// items as a JSON array (`[]` on timeout). Rejects with the error that ended the stream
    /// (the server is gone, the token was refused) after the items before it.
    #[napi]
    pub async fn next_batch(&self, max: u32, timeout_ms: f64) -> napi::Result<String> {
        if !timeout_ms.is_finite() || timeout_ms < 0.0 {
            return Err(api_error(ApiError::invalid_argument(
                "`timeoutMs` must be a non-negative number",
            )));
        }
        if let Some(error) = self
            .failure
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        {
            return Err(remote_error(error));
        }
        let max = (max as usize).max(1);
        let mut items = Vec::new();
        let mut next = match self.subscription.try_next_event() {
            Some(first) => Some(first),
            None => {
                self.subscription
                    .next_event(Duration::from_secs_f64(timeout_ms / 1000.0))
                    .await
            }
        };
        while let Some(item) = next.take() {
            match item_to_value(&self.session_id, item) {
                Ok(value) => items.push(value),
                Err(error) if items.is_empty() => return Err(remote_error(error)),
                Err(error) => {
                    *self.failure.lock().unwrap_or_else(PoisonError::into_inner) = Some(error);
                    break;
                }
            }
            if items.len() < max {
                next = self.subscription.try_next_event();
            }
        }
        to_json(&items)
    }

    /// Stops the stream.
    #[napi]
    pub fn close(&self) {
        self.subscription.unsubscribe();
    }
}
