//! The reverse direction: the engine calling JavaScript. Every host extension (tools, the
//! permission handler, hook callbacks, command modules, a JS provider) is one of the engine's
//! binding-neutral adapters from [`robota::api`], run by a [`BridgeFunction`]: the
//! [`HostFunction`] this binding implements once, on top of one [`HostBridge`] per session — a
//! single **weak** threadsafe function to the facade's dispatcher, which takes a JSON request and
//! returns a Promise of a JSON reply. Weak, so a session never keeps Node alive by itself; a
//! running prompt keeps it alive through a pending native Promise (`waitIdle`, `query`) instead.
//!
//! Requests are `{"call_id", "kind", "request", ...route}` where `request` is the adapter's JSON
//! request (see [`HostFunction`] and the adapters in [`robota::api`]) and the route (`index` of a hook, `module`
//! of a command) tells the dispatcher which callback answers. Replies are `{"ok": answer}`,
//! `{"error": message}` or, for provider calls, `{"events": [...]}`: provider events to stream,
//! after which the bridge asks for more with `{"kind": "next", "call_id"}`, or, for command calls,
//! `{"context_op": {"op": …}}`: an operation on the command's live context, whose result the
//! bridge sends as `{"kind": "context_result", "call_id", "ok" | "error": {kind, message}}`.
//! When the engine stops waiting for a call (abort, timeout, shutdown), the bridge sends
//! `{"kind": "cancel", "call_id"}`
//! so the JavaScript side can fire that call's `AbortSignal`. Nothing here blocks the JavaScript
//! thread: calls are queued non-blockingly and awaited on the tokio runtime, so a callback may
//! itself await session methods without deadlocking.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use napi::bindgen_prelude::Promise;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::Status;
use serde_json::{json, Value};

use robota::api::{async_trait, ApiError, HostCall, HostFunction, HostStream};

/// The JavaScript dispatcher: `(requestJson: string) => Promise<string>`, weak.
pub(crate) type JsDispatcher =
    ThreadsafeFunction<String, Promise<String>, String, Status, false, true>;

/// One session's route to its JavaScript callbacks.
pub(crate) struct HostBridge {
    function: JsDispatcher,
    next_call: AtomicU64,
}

/// A call in flight; dropping it before [`finish`](CallGuard::finish) tells JavaScript the
/// engine stopped waiting (the call's `AbortSignal` fires).
struct CallGuard<'a> {
    bridge: &'a HostBridge,
    call_id: u64,
    done: bool,
}

impl CallGuard<'_> {
    fn finish(mut self) {
        self.done = true;
    }
}

impl Drop for CallGuard<'_> {
    fn drop(&mut self) {
        if !self.done {
            self.bridge.notify_cancel(self.call_id);
        }
    }
}

/// What the dispatcher replied to one round trip.
enum Reply {
    /// The call's answer.
    Answer(Value),
    /// Provider events to stream before asking for more.
    Events(Vec<Value>),
    /// An operation a running command asks of its context (`{"op": …}`); its result goes back
    /// as `{"kind": "context_result", "call_id", "ok" | "error"}`.
    ContextOp(Value),
}

impl HostBridge {
    pub(crate) fn new(function: JsDispatcher) -> Arc<Self> {
        Arc::new(HostBridge {
            function,
            next_call: AtomicU64::new(1),
        })
    }

    /// Shows `message` to the developer as a process warning (fire and forget).
    pub(crate) fn warn(&self, message: &str) {
        let request = json!({"call_id": 0, "kind": "warning", "message": message}).to_string();
        let _ = self
            .function
            .call(request, ThreadsafeFunctionCallMode::NonBlocking);
    }

    fn notify_cancel(&self, call_id: u64) {
        let request = json!({"call_id": call_id, "kind": "cancel"}).to_string();
        // Fire and forget: the reply (if any) is ignored, and a closing environment is fine.
        let _ = self
            .function
            .call(request, ThreadsafeFunctionCallMode::NonBlocking);
    }

    async fn round_trip(&self, request: String) -> Result<Reply, String> {
        let promise = self
            .function
            .call_async_catch(request)
            .await
            .map_err(|e| format!("the JavaScript callback failed: {e}"))?;
        let reply = promise
            .await
            .map_err(|e| format!("the JavaScript callback failed: {e}"))?;
        parse_reply(&reply)
    }

    /// Sends `request` (an object; `call_id` is added), streams the provider events the
    /// dispatcher replies with into `stream`, and returns the answer. When `call.cancel` fires,
    /// JavaScript is told at once; the engine then drops this future (see [`HostFunction`]).
    async fn call(&self, mut request: Value, call: HostCall) -> Result<Value, String> {
        let call_id = self.next_call.fetch_add(1, Ordering::Relaxed);
        if let Value::Object(map) = &mut request {
            map.insert("call_id".into(), json!(call_id));
        }
        let mut guard = CallGuard {
            bridge: self,
            call_id,
            done: false,
        };
        let stream = call.stream;
        let context = call.context;
        let exchange = async {
            let mut message = request.to_string();
            loop {
                match self.round_trip(message).await? {
                    Reply::Answer(answer) => return Ok(answer),
                    Reply::Events(events) => {
                        send_events(stream.as_ref(), events)?;
                        message = json!({"call_id": call_id, "kind": "next"}).to_string();
                    }
                    Reply::ContextOp(op) => {
                        let result = match &context {
                            Some(context) => context.call_json(op).await,
                            None => Err(ApiError::invalid_argument(
                                "only a command's call has a command context",
                            )),
                        };
                        let reply = match result {
                            Ok(value) => json!({"ok": value}),
                            Err(e) => {
                                json!({"error": {"kind": e.kind.as_str(), "message": e.message}})
                            }
                        };
                        let mut reply = reply;
                        reply["call_id"] = json!(call_id);
                        reply["kind"] = json!("context_result");
                        message = reply.to_string();
                    }
                }
            }
        };
        tokio::pin!(exchange);
        let result = tokio::select! {
            biased;
            result = &mut exchange => result,
            () = call.cancel.cancelled() => {
                // Tell JavaScript now (once), not only when the engine drops this future.
                self.notify_cancel(call_id);
                guard.done = true;
                exchange.await
            }
        };
        guard.finish();
        result
    }
}

fn send_events(stream: Option<&HostStream>, events: Vec<Value>) -> Result<(), String> {
    let Some(stream) = stream else {
        return Err("the JavaScript callback streamed events, but only providers stream".into());
    };
    for event in events {
        stream.send(event).map_err(|e| e.message)?;
    }
    Ok(())
}

fn parse_reply(reply: &str) -> Result<Reply, String> {
    let value: Value = serde_json::from_str(reply)
        .map_err(|e| format!("the JavaScript dispatcher replied with invalid JSON: {e}"))?;
    if let Some(message) = value.get("error") {
        return Err(message
            .as_str()
            .map(str::to_string)
            .unwrap_or_else(|| message.to_string()));
    }
    if let Some(op) = value.get("context_op") {
        return Ok(Reply::ContextOp(op.clone()));
    }
    match value.get("events") {
        Some(Value::Array(events)) => Ok(Reply::Events(events.clone())),
        Some(other) => Err(format!(
            "the JavaScript dispatcher replied with events that are not an array: {other}"
        )),
        None => Ok(Reply::Answer(
            value.get("ok").cloned().unwrap_or(Value::Null),
        )),
    }
}

/// The [`HostFunction`] of one JavaScript extension: each call goes to the session's dispatcher
/// as `{kind, request, ...route}`.
pub(crate) struct BridgeFunction {
    bridge: Arc<HostBridge>,
    route: serde_json::Map<String, Value>,
}

impl BridgeFunction {
    /// Calls of `kind` (`tool`, `permission`, `hook`, `command`, `provider`), routed by the
    /// extra `route` fields (a JSON object; anything else adds nothing).
    pub(crate) fn new(bridge: &Arc<HostBridge>, kind: &str, route: Value) -> Arc<Self> {
        let mut map = match route {
            Value::Object(map) => map,
            _ => serde_json::Map::new(),
        };
        map.insert("kind".into(), Value::String(kind.into()));
        Arc::new(BridgeFunction {
            bridge: Arc::clone(bridge),
            route: map,
        })
    }
}

#[async_trait]
impl HostFunction for BridgeFunction {
    async fn call(&self, mut call: HostCall) -> Result<Value, String> {
        let mut request = self.route.clone();
        request.insert("request".into(), std::mem::take(&mut call.request));
        self.bridge.call(Value::Object(request), call).await
    }
}
