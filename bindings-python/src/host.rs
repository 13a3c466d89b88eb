//! The engine's host extension points implemented by Python callables: tools, the permission
//! handler, hook callbacks, commands and providers. Each holds the `async def` adapter the
//! `robota` package built around the user's function and runs it through [`call_async`].

use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use pyo3::prelude::*;
use robota::framework::commands::{
    CommandDescriptor, CommandHostContext, CommandResult, SystemCommand,
};
use robota::hooks::{HookCallback, HookCallbackResult, HookInput};
use robota::message::{ProviderError, ProviderErrorKind};
use robota::provider::{
    Provider, ProviderCapabilities, ProviderRequest, ProviderResponse, StopReason, StreamEvent,
    StreamSink,
};
use robota::session::{PermissionHandler, PermissionRequest, PermissionResponse};
use robota::tools::{Tool, ToolContext, ToolOutput};
use serde_json::{json, Value};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::bridge::{call_async, call_async_args, Arg, LoopSlot};

/// A tool implemented in Python. The adapter is `async def (input: dict, context: dict) ->
/// {"content": str, "is_error": bool, "response": Any}`.
pub struct PyTool {
    /// The name the model calls.
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// JSON Schema of its input.
    pub input_schema: Value,
    /// True when it changes nothing (no approval needed, may run concurrently).
    pub read_only: bool,
    /// The adapter.
    pub func: Arc<Py<PyAny>>,
    /// Where it runs.
    pub slot: Arc<LoopSlot>,
}

#[async_trait]
impl Tool for PyTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn input_schema(&self) -> Value {
        self.input_schema.clone()
    }

    fn is_read_only(&self) -> bool {
        self.read_only
    }

    async fn execute(&self, input: Value, context: ToolContext) -> ToolOutput {
        let ctx = json!({
            "tool_use_id": context.tool_use_id,
            "cwd": context.cwd.to_string_lossy(),
        });
        let call = call_async(
            Arc::clone(&self.slot),
            Arc::clone(&self.func),
            vec![input, ctx],
        );
        let outcome = tokio::select! {
            outcome = call => outcome,
            // The Python task is cancelled when `call` is dropped.
            _ = context.cancel.cancelled() => return ToolOutput::error("aborted"),
        };
        match outcome {
            Ok(value) => tool_output(value),
            Err(message) => ToolOutput::error(format!("tool `{}` failed: {message}", self.name)),
        }
    }
}

fn tool_output(value: Value) -> ToolOutput {
    let content = value
        .get("content")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let is_error = value
        .get("is_error")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let response = value
        .get("response")
        .cloned()
        .filter(|r| !r.is_null())
        .unwrap_or_else(|| Value::String(content.clone()));
    ToolOutput {
        content,
        is_error,
        response,
    }
}

/// A permission handler implemented in Python. The adapter is `async def (request: dict) ->
/// PermissionResponse as JSON` (`{"type": "allow_once"}`, `{"type": "deny", "message": ...}`, …).
pub struct PyPermissionHandler {
    /// The adapter.
    pub func: Arc<Py<PyAny>>,
    /// Where it runs.
    pub slot: Arc<LoopSlot>,
}

#[async_trait]
impl PermissionHandler for PyPermissionHandler {
    async fn request_permission(
        &self,
        request: PermissionRequest,
        cancel: CancellationToken,
    ) -> PermissionResponse {
        let request = match serde_json::to_value(&request) {
            Ok(request) => request,
            Err(e) => return PermissionResponse::deny(format!("internal error: {e}")),
        };
        let call = call_async(
            Arc::clone(&self.slot),
            Arc::clone(&self.func),
            vec![request],
        );
        let outcome = tokio::select! {
            outcome = call => outcome,
            _ = cancel.cancelled() => return PermissionResponse::deny("the run was aborted"),
        };
        match outcome.and_then(|v| {
            serde_json::from_value::<PermissionResponse>(v)
                .map_err(|e| format!("the permission handler's answer is not valid: {e}"))
        }) {
            Ok(response) => response,
            Err(message) => PermissionResponse::deny(format!(
                "the permission handler failed, so the call was denied: {message}"
            )),
        }
    }
}

/// A hook callback implemented in Python. The adapter is `async def (input: dict) ->
/// HookCallbackResult as JSON`.
pub struct PyHook {
    /// A label for events and logs.
    pub name: String,
    /// The adapter.
    pub func: Arc<Py<PyAny>>,
    /// Where it runs.
    pub slot: Arc<LoopSlot>,
}

#[async_trait]
impl HookCallback for PyHook {
    fn name(&self) -> &str {
        &self.name
    }

    async fn call(&self, input: &HookInput) -> HookCallbackResult {
        let input = match serde_json::to_value(input) {
            Ok(input) => input,
            Err(e) => {
                return HookCallbackResult::Error {
                    message: format!("internal error: {e}"),
                }
            }
        };
        match call_async(Arc::clone(&self.slot), Arc::clone(&self.func), vec![input])
            .await
            .and_then(|v| {
                serde_json::from_value::<HookCallbackResult>(v)
                    .map_err(|e| format!("the hook's answer is not valid: {e}"))
            }) {
            Ok(result) => result,
            Err(message) => HookCallbackResult::Error { message },
        }
    }
}

/// A command implemented in Python. The adapter is `async def (args: str, context: dict) ->
/// CommandResult as JSON`.
pub struct PyCommand {
    /// Name, description, aliases, lifecycle, …
    pub descriptor: CommandDescriptor,
    /// The adapter.
    pub func: Arc<Py<PyAny>>,
    /// Where it runs.
    pub slot: Arc<LoopSlot>,
}

#[async_trait]
impl SystemCommand for PyCommand {
    fn descriptor(&self) -> &CommandDescriptor {
        &self.descriptor
    }

    async fn execute(&self, ctx: &dyn CommandHostContext, args: &str) -> CommandResult {
        let context = json!({
            "session_id": ctx.session_id(),
            "session_name": ctx.session_name(),
            "permission_mode": ctx.permission_mode(),
            "model": ctx.model(),
        });
        match call_async(
            Arc::clone(&self.slot),
            Arc::clone(&self.func),
            vec![Value::String(args.to_string()), context],
        )
        .await
        .and_then(|v| {
            serde_json::from_value::<CommandResult>(v)
                .map_err(|e| format!("the command's result is not valid: {e}"))
        }) {
            Ok(result) => result,
            Err(message) => CommandResult::error(format!(
                "command `{}` failed: {message}",
                self.descriptor.name
            )),
        }
    }
}

/// Receives stream events from a Python provider (passed to its `stream` as `emit`).
#[pyclass(frozen)]
pub struct StreamEmitter {
    tx: Arc<Mutex<Option<mpsc::UnboundedSender<StreamEvent>>>>,
}

impl StreamEmitter {
    fn send(&self, event: StreamEvent) {
        if let Some(tx) = self
            .tx
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
        {
            let _ = tx.send(event);
        }
    }
}

#[pymethods]
impl StreamEmitter {
    /// Streams a piece of answer text.
    fn text(&self, text: String) {
        self.send(StreamEvent::TextDelta(text));
    }

    /// Streams a piece of reasoning.
    fn thinking(&self, text: String) {
        self.send(StreamEvent::ThinkingDelta(text));
    }

    /// Announces the tool call at `index`.
    fn tool_call_start(&self, index: usize, id: String, name: String) {
        self.send(StreamEvent::ToolCallStart { index, id, name });
    }

    /// Streams a piece of the JSON arguments of the tool call at `index`.
    fn tool_call_delta(&self, index: usize, partial_json: String) {
        self.send(StreamEvent::ToolCallDelta {
            index,
            partial_json,
        });
    }
}

/// A model implemented in Python (a `robota.Provider` subclass). The adapter is `async def
/// (request: dict, emit: StreamEmitter) -> ProviderResponse as JSON`.
pub struct PyProvider {
    /// Provider name.
    pub name: String,
    /// Model name.
    pub model: String,
    /// Context window in tokens.
    pub context_window: Option<u64>,
    /// The adapter.
    pub func: Arc<Py<PyAny>>,
    /// Where it runs.
    pub slot: Arc<LoopSlot>,
}

#[async_trait]
impl Provider for PyProvider {
    fn name(&self) -> &str {
        &self.name
    }

    fn model(&self) -> &str {
        &self.model
    }

    fn capabilities(&self) -> ProviderCapabilities {
        let mut caps = ProviderCapabilities::default();
        if let Some(window) = self.context_window {
            caps.context_window = window;
        }
        caps
    }

    async fn stream(
        &self,
        request: &ProviderRequest,
        on_event: &StreamSink<'_>,
        cancel: &CancellationToken,
    ) -> Result<ProviderResponse, ProviderError> {
        let error =
            |m: String| ProviderError::new(ProviderErrorKind::Provider, self.name.clone(), m);
        let request = serde_json::to_value(request).map_err(|e| error(e.to_string()))?;
        let (tx, mut rx) = mpsc::unbounded_channel();
        let sender = Arc::new(Mutex::new(Some(tx)));
        let emitter = crate::aio::with_python(|py| {
            Py::new(
                py,
                StreamEmitter {
                    tx: Arc::clone(&sender),
                },
            )
            .map(Py::into_any)
        })
        .ok_or_else(|| error("the Python interpreter is shutting down".into()))?
        .map_err(|e| error(e.to_string()))?;
        let call = call_async_args(
            Arc::clone(&self.slot),
            Arc::clone(&self.func),
            vec![Arg::Json(request), Arg::Object(Arc::new(emitter))],
        );
        tokio::pin!(call);
        let mut text = String::new();
        let outcome = loop {
            tokio::select! {
                biased;
                Some(event) = rx.recv() => {
                    if let StreamEvent::TextDelta(t) = &event { text.push_str(t); }
                    on_event(event);
                }
                outcome = &mut call => break Some(outcome),
                _ = cancel.cancelled() => break None,
            }
        };
        // Close the channel and deliver what was emitted before the call returned.
        sender.lock().unwrap_or_else(PoisonError::into_inner).take();
        while let Ok(event) = rx.try_recv() {
            on_event(event);
        }
        match outcome {
            None => Ok(ProviderResponse {
                text,
                stop_reason: StopReason::Aborted,
                model: self.model.clone(),
                ..ProviderResponse::default()
            }),
            Some(Err(message)) => Err(error(message)),
            Some(Ok(value)) => serde_json::from_value::<ProviderResponse>(value)
                .map_err(|e| error(format!("the provider's response is not valid: {e}"))),
        }
    }
}
