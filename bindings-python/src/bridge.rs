//! Calling Python from the engine's tokio threads.
//!
//! Every host callback (tool, permission handler, hook, command, provider) is an `async def`
//! wrapper written in `robota` (Python) that adapts the user's sync or async function, called
//! through core's host adapters as a [`crate::host::PyHostFunction`]. The engine runs it on the asyncio event loop the session last saw (captured by every awaitable
//! method, e.g. `submit`), through `asyncio.run_coroutine_threadsafe`, and waits for the result
//! *without* holding the GIL:
//!
//! - the GIL is only taken briefly, on a blocking-pool thread (never on a tokio worker for long),
//!   to create the coroutine and schedule it (`aio::with_python`, so nothing happens once the
//!   interpreter is finalizing);
//! - the result comes back through a done-callback that converts it to JSON (or to an error
//!   message: no `PyErr` crosses threads);
//! - if the engine stops waiting (abort, timeout), the Python task is cancelled.

use std::sync::{Arc, Mutex, PoisonError};

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyTuple;
use robota::api::{HostCommandContext, HostStream};
use serde_json::Value;
use tokio::sync::oneshot;

use crate::convert::{from_py, to_py};
use crate::host::{NativeCommandContext, NativeStream};

/// The asyncio event loop host callbacks run on: the one the session was last used from.
#[derive(Default)]
pub struct LoopSlot {
    event_loop: Mutex<Option<Py<PyAny>>>,
}

impl LoopSlot {
    /// A shared empty slot.
    pub fn new() -> Arc<Self> {
        Arc::new(LoopSlot::default())
    }

    /// Remembers the running loop of this thread, if there is one.
    pub fn capture(&self, py: Python<'_>) {
        if let Ok(event_loop) = pyo3_async_runtimes::get_running_loop(py) {
            *self
                .event_loop
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = Some(event_loop.unbind());
        }
    }

    pub(crate) fn get(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        self.event_loop
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .map(|l| l.clone_ref(py))
    }
}

static BRIDGE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

fn schedule_fn(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    BRIDGE
        .get_or_try_init(py, || {
            Ok::<_, PyErr>(py.import("robota._bridge")?.getattr("schedule")?.unbind())
        })
        .map(|f| f.bind(py).clone())
}

/// Receives the outcome of a scheduled coroutine (a `concurrent.futures.Future` done-callback).
#[pyclass(frozen)]
struct Completion {
    tx: Mutex<Option<oneshot::Sender<Result<Value, String>>>>,
}

#[pymethods]
impl Completion {
    fn __call__(&self, future: &Bound<'_, PyAny>) {
        let outcome = completion_outcome(future);
        if let Some(tx) = self
            .tx
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        {
            let _ = tx.send(outcome);
        }
    }
}

fn completion_outcome(future: &Bound<'_, PyAny>) -> Result<Value, String> {
    let cancelled = future
        .call_method0("cancelled")
        .and_then(|c| c.is_truthy())
        .unwrap_or(false);
    if cancelled {
        return Err("the Python callback was cancelled".into());
    }
    match future.call_method0("exception") {
        Ok(exc) if !exc.is_none() => {
            let kind = exc
                .get_type()
                .name()
                .map(|n| n.to_string())
                .unwrap_or_else(|_| "Exception".into());
            let text = exc.str().map(|s| s.to_string()).unwrap_or_default();
            if text.is_empty() {
                Err(kind)
            } else {
                Err(format!("{kind}: {text}"))
            }
        }
        Ok(_) => match future.call_method0("result") {
            Ok(result) => from_py(&result).map_err(|e| {
                format!("the Python callback returned a value that is not JSON data: {e}")
            }),
            Err(e) => Err(e.to_string()),
        },
        Err(e) => Err(e.to_string()),
    }
}

/// The scheduled Python future, shared by the thread that schedules it and the task that waits
/// for it: a wait abandoned while the callback is still being scheduled cancels it too.
#[derive(Default)]
struct Scheduled {
    /// The future (once scheduled) and whether the engine stopped waiting.
    state: Mutex<(Option<Py<PyAny>>, bool)>,
}

impl Scheduled {
    /// Whether the engine already stopped waiting.
    fn abandoned(&self) -> bool {
        self.state.lock().unwrap_or_else(PoisonError::into_inner).1
    }

    /// Keeps the just-scheduled `future`, or cancels it when the wait was abandoned meanwhile.
    fn keep(&self, py: Python<'_>, future: Py<PyAny>) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if state.1 {
            drop(state);
            let _ = future.bind(py).call_method0("cancel");
        } else {
            state.0 = Some(future);
        }
    }

    /// Forgets the future (it finished).
    fn finish(&self) {
        let future = self
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .0
            .take();
        // Dropping the handle unattached defers the decref to pyo3's reference pool.
        drop(future);
    }
}

/// Cancels the Python task when the engine stops waiting before it finished (also while it is
/// still being scheduled).
struct CancelOnDrop(Arc<Scheduled>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let future = {
            let mut state = self.0.state.lock().unwrap_or_else(PoisonError::into_inner);
            state.1 = true;
            state.0.take()
        };
        if let Some(future) = future {
            crate::aio::with_python(|py| {
                let _ = future.bind(py).call_method0("cancel");
            });
        }
    }
}

/// An argument of a Python callback.
pub enum Arg {
    /// Data, converted to `dict`/`list`/… when the call is made.
    Json(Value),
    /// A provider call's event stream, passed as a [`NativeStream`].
    Stream(HostStream),
    /// A command's live context, passed as a [`NativeCommandContext`].
    Context(HostCommandContext),
}

/// Runs the `async def` `func(*args)` on the session's event loop and returns its result as
/// JSON, or a message saying what went wrong (an exception is `"TypeName: message"`).
pub async fn call_async(
    slot: Arc<LoopSlot>,
    func: Arc<Py<PyAny>>,
    args: Vec<Arg>,
) -> Result<Value, String> {
    let (tx, rx) = oneshot::channel();
    let scheduled = Arc::new(Scheduled::default());
    let guard = CancelOnDrop(Arc::clone(&scheduled));
    tokio::task::spawn_blocking(move || {
        crate::aio::with_python(|py| -> Result<(), String> {
            if scheduled.abandoned() {
                return Err("the engine stopped waiting".into());
            }
            let event_loop = slot.get(py).ok_or_else(|| {
                "no asyncio event loop is known to this session; use the session from async code \
                 (e.g. `await session.submit(...)`) so callbacks have a loop to run on"
                    .to_string()
            })?;
            let args = args
                .iter()
                .map(|a| match a {
                    Arg::Json(v) => to_py(py, v),
                    Arg::Stream(s) => Py::new(py, NativeStream::new(s.clone()))
                        .map(|o| o.into_bound(py).into_any()),
                    Arg::Context(c) => Py::new(py, NativeCommandContext::new(c.clone()))
                        .map(|o| o.into_bound(py).into_any()),
                })
                .collect::<PyResult<Vec<_>>>()
                .map_err(|e| e.to_string())?;
            let args = PyTuple::new(py, args).map_err(|e| e.to_string())?;
            let completion = Py::new(
                py,
                Completion {
                    tx: Mutex::new(Some(tx)),
                },
            )
            .map_err(|e| e.to_string())?;
            let future = schedule_fn(py)
                .and_then(|schedule| {
                    schedule.call1((event_loop, func.bind(py).clone(), args, completion))
                })
                .map_err(|e| format!("cannot run the Python callback: {e}"))?;
            scheduled.keep(py, future.unbind());
            Ok(())
        })
        .unwrap_or_else(|| Err("the Python interpreter is shutting down".into()))
    })
    .await
    .map_err(|e| format!("the Python callback could not be scheduled: {e}"))??;
    let outcome = rx.await.unwrap_or_else(|_| {
        Err("the Python callback never finished (its event loop closed)".into())
    });
    // Finished: nothing to cancel.
    guard.0.finish();
    drop(guard);
    outcome
}
