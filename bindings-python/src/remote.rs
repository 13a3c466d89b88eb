//! `NativeRemoteSession` and `NativeRemoteEvents`: `robota_remote::RemoteSession` (a session
//! hosted by `robota serve`) for Python. Every call goes to the server. The calls that are plain
//! (not awaitable) on a local session — abort, the command list, history, context, name, info —
//! are plain here too and wait for the server with the GIL released, so code written for a
//! local session runs unchanged; the rest are awaitables. The protocol lives in the Rust crate,
//! not here.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use pyo3::prelude::*;
use robota::framework::interactive::{InteractiveEvent, PromptResult};
use robota::session::PermissionResponse;
use robota_remote::wire::{CreateSessionRequest, SubmitRequest, SubmitState};
use robota_remote::{
    RemoteEndpoint, RemoteError, RemoteEventItem, RemoteSession, RemoteSubscription,
};
use serde_json::{json, Value};

use crate::convert::{from_py, Json};
use crate::errors::{invalid_argument, remote_error};

fn runtime() -> &'static tokio::runtime::Runtime {
    pyo3_async_runtimes::tokio::get_runtime()
}

fn endpoint(url: String, token: Option<String>, timeout: f64) -> PyResult<RemoteEndpoint> {
    if !timeout.is_finite() || timeout <= 0.0 {
        return Err(invalid_argument(
            "`timeout` must be a positive number of seconds",
        ));
    }
    Ok(RemoteEndpoint::new(url, token).with_request_timeout(Duration::from_secs_f64(timeout)))
}

/// Runs one call to the server to completion and returns its result, with the GIL released.
/// The call runs on robota's runtime and this thread waits on a channel, which works from any
/// thread (also one of the runtime's own, where `block_on` would panic); the endpoint's
/// per-call timeout bounds the wait.
fn blocking<T, F>(py: Python<'_>, call: F) -> PyResult<T>
where
    T: Send + 'static,
    F: std::future::Future<Output = PyResult<T>> + Send + 'static,
{
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    runtime().spawn(async move {
        // The receiver is gone only if the waiting thread itself was torn down.
        let _ = tx.send(call.await);
    });
    py.detach(move || rx.recv()).map_err(|_| {
        crate::errors::internal("the remote call ended without an answer (runtime shut down)")
    })?
}

fn to_json<T: serde::Serialize>(value: &T) -> PyResult<Json> {
    serde_json::to_value(value)
        .map(Json)
        .map_err(|e| crate::errors::internal(format!("cannot convert a remote answer: {e}")))
}

/// How a prompt ended, as the event that reported it (`{"type": "cancelled"}` when it never
/// ran); the same shape `NativeSession.submit` resolves with. The server's result carries no
/// `seq`: 0.
fn final_event(session_id: &str, result: PromptResult) -> Value {
    if result == PromptResult::Cancelled {
        return json!({"type": "cancelled"});
    }
    let event = InteractiveEvent {
        session_id: session_id.to_string(),
        seq: 0,
        kind: result.event(),
    };
    serde_json::to_value(&event).unwrap_or(Value::Null)
}

/// Cancels the remote prompt when its `submit` awaitable is dropped unfinished (cancelled).
struct CancelOnDrop(Option<(RemoteSession, u64)>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some((session, id)) = self.0.take() {
            runtime().spawn(async move {
                // Best effort: the prompt may have ended meanwhile.
                let _ = session.cancel_prompt(id).await;
            });
        }
    }
}

/// The native half of `robota.RemoteSession` (use that class; this one is internal).
#[pyclass(frozen, module = "robota._native")]
pub struct NativeRemoteSession {
    session: RemoteSession,
    /// The endpoint's per-call timeout (also how long a new stream waits for its connection).
    timeout: Duration,
}

#[pymethods]
impl NativeRemoteSession {
    /// Creates a session on the server; resolves with a `NativeRemoteSession`.
    #[staticmethod]
    #[pyo3(signature = (url, token, request, timeout))]
    fn create<'py>(
        py: Python<'py>,
        url: String,
        token: Option<String>,
        request: &Bound<'py, PyAny>,
        timeout: f64,
    ) -> PyResult<Bound<'py, PyAny>> {
        let endpoint = endpoint(url, token, timeout)?;
        let endpoint_timeout = endpoint.request_timeout;
        let request: CreateSessionRequest = serde_json::from_value(from_py(request)?)
            .map_err(|e| invalid_argument(format!("invalid session request: {e}")))?;
        crate::aio::awaitable(py, async move {
            let session = RemoteSession::create(&endpoint, request)
                .await
                .map_err(remote_error)?;
            Ok(NativeRemoteSession {
                session,
                timeout: endpoint_timeout,
            })
        })
    }

    /// Attaches to a hosted session; resolves with a `NativeRemoteSession`.
    #[staticmethod]
    #[pyo3(signature = (url, session_id, token, timeout))]
    fn connect<'py>(
        py: Python<'py>,
        url: String,
        session_id: String,
        token: Option<String>,
        timeout: f64,
    ) -> PyResult<Bound<'py, PyAny>> {
        let endpoint = endpoint(url, token, timeout)?;
        let endpoint_timeout = endpoint.request_timeout;
        crate::aio::awaitable(py, async move {
            let session = RemoteSession::connect(&endpoint, &session_id)
                .await
                .map_err(remote_error)?;
            Ok(NativeRemoteSession {
                session,
                timeout: endpoint_timeout,
            })
        })
    }

    /// The session id.
    #[getter]
    fn session_id(&self) -> String {
        self.session.get_session_id()
    }

    /// Submits a prompt; resolves when it ends with `{"status": "started"|"queued", "event":
    /// the event that ended it}`. The prompt is accepted (or refused) before the awaitable
    /// resolves; cancelling the awaitable cancels the prompt on the server.
    #[pyo3(signature = (input, display_input=None, output_format=None))]
    fn submit<'py>(
        &self,
        py: Python<'py>,
        input: String,
        display_input: Option<String>,
        output_format: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let output_format = output_format.map(from_py).transpose()?;
        let session = self.session.clone();
        crate::aio::awaitable(py, async move {
            let prompt = session
                .submit_request(SubmitRequest {
                    text: input,
                    display: display_input,
                    output_format,
                })
                .await
                .map_err(remote_error)?;
            let mut guard = CancelOnDrop(Some((session.clone(), prompt.id())));
            let result = prompt.result().await;
            guard.0 = None;
            let result = result.map_err(remote_error)?;
            let status = match prompt.status() {
                SubmitState::Started => "started",
                SubmitState::Queued => "queued",
            };
            let event = final_event(session.id(), result);
            Ok(Json(json!({"status": status, "event": event})))
        })
    }

    /// Aborts the running prompt and drops the queued one.
    fn abort(&self, py: Python<'_>) -> PyResult<()> {
        let session = self.session.clone();
        blocking(
            py,
            async move { session.abort().await.map_err(remote_error) },
        )
    }

    /// Cancels one prompt; resolves with whether it was still pending or running.
    fn cancel_prompt<'py>(&self, py: Python<'py>, prompt_id: u64) -> PyResult<Bound<'py, PyAny>> {
        let session = self.session.clone();
        crate::aio::awaitable(py, async move {
            session.cancel_prompt(prompt_id).await.map_err(remote_error)
        })
    }

    /// Runs a slash command; resolves with the `CommandResult` as a dict.
    fn execute_command<'py>(
        &self,
        py: Python<'py>,
        name: String,
        args: String,
    ) -> PyResult<Bound<'py, PyAny>> {
        let session = self.session.clone();
        crate::aio::awaitable(py, async move {
            let result = session
                .execute_command(&name, &args)
                .await
                .map_err(remote_error)?;
            to_json(&result)
        })
    }

    /// The commands (list of dicts).
    fn list_commands(&self, py: Python<'_>) -> PyResult<Json> {
        let session = self.session.clone();
        blocking(py, async move {
            to_json(&session.list_commands().await.map_err(remote_error)?)
        })
    }

    /// The full history (list of dicts).
    fn get_full_history(&self, py: Python<'_>) -> PyResult<Json> {
        let session = self.session.clone();
        blocking(py, async move {
            to_json(&session.get_full_history().await.map_err(remote_error)?)
        })
    }

    /// The context state (dict).
    fn get_context_state(&self, py: Python<'_>) -> PyResult<Json> {
        let session = self.session.clone();
        blocking(py, async move {
            to_json(&session.get_context_state().await.map_err(remote_error)?)
        })
    }

    /// The session as the server reports it (dict).
    fn info(&self, py: Python<'_>) -> PyResult<Json> {
        let session = self.session.clone();
        blocking(py, async move {
            to_json(&session.info().await.map_err(remote_error)?)
        })
    }

    /// The session's name.
    fn get_name(&self, py: Python<'_>) -> PyResult<Option<String>> {
        let session = self.session.clone();
        blocking(
            py,
            async move { session.get_name().await.map_err(remote_error) },
        )
    }

    /// Names the session (`None` clears the name).
    fn set_name(&self, py: Python<'_>, name: Option<String>) -> PyResult<()> {
        let session = self.session.clone();
        blocking(py, async move {
            session.set_name(name).await.map_err(remote_error)
        })
    }

    /// Answers a permission request with a `PermissionResponse` dict (`{"type": "allow_once"}`,
    /// …).
    fn answer_permission<'py>(
        &self,
        py: Python<'py>,
        request_id: String,
        response: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let response: PermissionResponse =
            serde_json::from_value(from_py(response)?).map_err(|e| {
                invalid_argument(format!(
                    "invalid permission response: {e} (use {{\"type\": \"allow_once\"}}, \
                     {{\"type\": \"allow_session\"}}, {{\"type\": \"allow_always\", \
                     \"destination\": \"localSettings\"}} or {{\"type\": \"deny\"}})"
                ))
            })?;
        let session = self.session.clone();
        crate::aio::awaitable(py, async move {
            session
                .answer_permission(&request_id, &response)
                .await
                .map_err(remote_error)
        })
    }

    /// The permission requests waiting for an answer (list of dicts).
    fn pending_permissions<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let session = self.session.clone();
        crate::aio::awaitable(py, async move {
            to_json(&session.pending_permissions().await.map_err(remote_error)?)
        })
    }

    /// Copies the session on the server; resolves with the copy's `NativeRemoteSession`.
    #[pyo3(signature = (name=None))]
    fn fork<'py>(&self, py: Python<'py>, name: Option<String>) -> PyResult<Bound<'py, PyAny>> {
        let session = self.session.clone();
        let timeout = self.timeout;
        crate::aio::awaitable(py, async move {
            let copy = session.fork(name).await.map_err(remote_error)?;
            Ok(NativeRemoteSession {
                session: copy,
                timeout,
            })
        })
    }

    /// Closes the session on the server (aborted, saved, no longer hosted).
    fn close<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let session = self.session.clone();
        crate::aio::awaitable(
            py,
            async move { session.close().await.map_err(remote_error) },
        )
    }

    /// Subscribes to the events after `after` (`None`: from now on); resolves with a
    /// `NativeRemoteEvents`.
    #[pyo3(signature = (after=None))]
    fn subscribe<'py>(&self, py: Python<'py>, after: Option<u64>) -> PyResult<Bound<'py, PyAny>> {
        let session = self.session.clone();
        let timeout = self.timeout;
        crate::aio::awaitable(py, async move {
            let subscription = match after {
                Some(after) => {
                    let subscription = session.subscribe_from(after);
                    subscription.wait_connected(timeout).await;
                    subscription
                }
                None => session.subscribe_pull().await.map_err(remote_error)?,
            };
            Ok(NativeRemoteEvents {
                subscription: Arc::new(subscription),
                session_id: session.get_session_id(),
                failure: Arc::new(Mutex::new(None)),
            })
        })
    }
}

/// A remote session's event stream (internal; see `RemoteSession.events()`).
#[pyclass(frozen, module = "robota._native")]
pub struct NativeRemoteEvents {
    subscription: Arc<RemoteSubscription>,
    session_id: String,
    /// The error that ended the stream, raised once the items before it were read.
    failure: Arc<Mutex<Option<RemoteError>>>,
}

/// One item as a dict: an event as the engine serializes it, `{"type": "gap", …}`, or
/// `{"type": "session_closed"}`. `Err` for the error that ended the stream.
fn item_to_value(session_id: &str, item: RemoteEventItem) -> Result<Value, RemoteError> {
    match item {
        RemoteEventItem::Event(event) => Ok(serde_json::to_value(&event).unwrap_or(Value::Null)),
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

#[pymethods]
impl NativeRemoteEvents {
    /// The `seq` this stream started after.
    #[getter]
    fn subscribed_after(&self) -> u64 {
        self.subscription.subscribed_after()
    }

    /// Waits up to `timeout` seconds for at least one item, then returns up to `max` queued
    /// items as dicts (an empty list on timeout). Raises the
    /// error that ended the stream (the server is gone, the token was refused) after the items
    /// before it.
    #[pyo3(signature = (max=1024, timeout=3600.0))]
    fn next_batch<'py>(
        &self,
        py: Python<'py>,
        max: usize,
        timeout: f64,
    ) -> PyResult<Bound<'py, PyAny>> {
        if !timeout.is_finite() || timeout < 0.0 {
            return Err(invalid_argument(
                "`timeout` must be a non-negative number of seconds",
            ));
        }
        let subscription = Arc::clone(&self.subscription);
        let failure = Arc::clone(&self.failure);
        let session_id = self.session_id.clone();
        let max = max.max(1);
        crate::aio::awaitable(py, async move {
            if let Some(error) = failure
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take()
            {
                return Err(remote_error(error));
            }
            let mut items = Vec::new();
            let first = match subscription.try_next_event() {
                Some(first) => first,
                None => match subscription
                    .next_event(Duration::from_secs_f64(timeout))
                    .await
                {
                    Some(first) => first,
                    None => return Ok(Json(Value::Array(items))),
                },
            };
            let mut next = Some(first);
            while let Some(item) = next.take() {
                match item_to_value(&session_id, item) {
                    Ok(value) => items.push(value),
                    Err(error) if items.is_empty() => return Err(remote_error(error)),
                    Err(error) => {
                        *failure.lock().unwrap_or_else(PoisonError::into_inner) = Some(error);
                        break;
                    }
                }
                if items.len() < max {
                    next = subscription.try_next_event();
                }
            }
            Ok(Json(Value::Array(items)))
        })
    }

    /// Stops the stream.
    fn close(&self) {
        self.subscription.unsubscribe();
    }
}
