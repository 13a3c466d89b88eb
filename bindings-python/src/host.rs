//! Python callables as the engine's [`HostFunction`]: the one bridge every host extension
//! (tool, permission handler, hook, command, provider) goes through. The adapters themselves
//! (answer shapes, defaults, cancellation) are core's `robota::api::host`; this module only runs
//! the `async def` adapter the `robota` package built around the user's function, through
//! [`call_async`], and hands a Python provider its [`HostStream`] as a [`NativeStream`].

use std::sync::Arc;

use async_trait::async_trait;
use pyo3::prelude::*;
use robota::api::{ApiErrorKind, HostCall, HostCommandContext, HostFunction, HostStream};
use serde_json::Value;

use crate::bridge::{call_async, Arg, LoopSlot};
use crate::convert::{from_py, Json};
use crate::errors::api_error;

/// An `async def adapter(request: dict)` (providers: `adapter(request, stream: NativeStream)`)
/// run on the session's asyncio loop; its return value is the JSON answer, an exception (or a
/// value that is not JSON data) the rejection.
pub struct PyHostFunction {
    func: Arc<Py<PyAny>>,
    slot: Arc<LoopSlot>,
}

impl PyHostFunction {
    /// The host function running `func` on the loop `slot` holds.
    pub fn shared(func: Py<PyAny>, slot: &Arc<LoopSlot>) -> Arc<dyn HostFunction> {
        Arc::new(PyHostFunction {
            func: Arc::new(func),
            slot: Arc::clone(slot),
        })
    }
}

#[async_trait]
impl HostFunction for PyHostFunction {
    async fn call(&self, call: HostCall) -> Result<Value, String> {
        let HostCall {
            request,
            cancel,
            stream,
            context,
        } = call;
        let mut args = vec![Arg::Json(request)];
        if let Some(stream) = stream {
            args.push(Arg::Stream(stream));
        }
        if let Some(context) = context {
            args.push(Arg::Context(context));
        }
        let outcome = call_async(Arc::clone(&self.slot), Arc::clone(&self.func), args);
        tokio::select! {
            biased;
            // Dropping `outcome` cancels the Python task.
            () = cancel.cancelled() => Err("aborted".into()),
            outcome = outcome => outcome,
        }
    }
}

/// Where a Python provider streams events while a model call runs (core's [`HostStream`]).
#[pyclass(frozen, module = "robota._native")]
pub struct NativeStream {
    stream: HostStream,
}

impl NativeStream {
    /// Wraps the stream of one provider call.
    pub fn new(stream: HostStream) -> Self {
        NativeStream { stream }
    }
}

#[pymethods]
impl NativeStream {
    /// Sends one provider event (`{"type": "text_delta", "text": ...}`, `thinking_delta`,
    /// `tool_call`, `usage`). Raises `InvalidJsonError` for a malformed event; an event sent
    /// after the call is over is ignored.
    fn send(&self, event: &Bound<'_, PyAny>) -> PyResult<()> {
        match self.stream.send(from_py(event)?) {
            Ok(()) => Ok(()),
            Err(e) if e.kind == ApiErrorKind::InvalidJson => Err(api_error(e)),
            // The call was answered, aborted or dropped: nobody listens any more.
            Err(_) => Ok(()),
        }
    }
}

/// A Python command's live context (core's [`HostCommandContext`]): valid while the command
/// runs; afterwards every call raises `CommandError`.
#[pyclass(frozen, module = "robota._native")]
pub struct NativeCommandContext {
    context: HostCommandContext,
}

impl NativeCommandContext {
    /// Wraps the context of one command run.
    pub fn new(context: HostCommandContext) -> Self {
        NativeCommandContext { context }
    }
}

#[pymethods]
impl NativeCommandContext {
    /// Runs one operation (`{"op": "clear"}`, …); resolves with its JSON answer.
    fn call<'py>(&self, py: Python<'py>, op: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let op = from_py(op)?;
        let context = self.context.clone();
        crate::aio::awaitable(py, async move {
            context.call_json(op).await.map(Json).map_err(api_error)
        })
    }

    /// True while the command runs.
    #[getter]
    fn valid(&self) -> bool {
        self.context.is_valid()
    }
}
