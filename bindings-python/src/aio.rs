//! Awaitables and safe re-entry into Python from the engine's threads.
//!
//! `pyo3-async-runtimes`' `future_into_py` completes a future by attaching on a tokio thread and
//! calling `loop.call_soon_threadsafe`; that call releases the GIL while it writes to the loop's
//! self-pipe, so the loop thread can finish the program and start interpreter finalization
//! while the tokio thread still has to re-acquire the GIL: a crash at exit
//! (python/cpython#124619). So every attach from a thread of ours goes through [`with_python`],
//! and an `atexit` hook ([`at_exit`]) first forbids new ones and then waits, detached, for the
//! ones in progress: finalization never starts while one of our threads is inside Python.
//!
//! The same hook first stops every process the live sessions still run ([`stop_at_exit`]): the
//! engine's threads and the sessions are never dropped at interpreter exit, so without it a
//! session the script did not shut down would leave its background tasks running.

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::IntoPyObjectExt;
use robota::process::ProcessGroupsSet;
use robota::session::Session;
use tokio::sync::oneshot;

static EXITING: AtomicBool = AtomicBool::new(false);
static ATTACHED: AtomicUsize = AtomicUsize::new(0);

/// Runs `f` attached to the interpreter, from any thread; `None` once the process is exiting
/// (after `atexit`) or the interpreter is finalizing.
pub fn with_python<R>(f: impl FnOnce(Python<'_>) -> R) -> Option<R> {
    ATTACHED.fetch_add(1, Ordering::SeqCst);
    let out = if EXITING.load(Ordering::SeqCst) {
        None
    } else {
        Python::try_attach(f)
    };
    ATTACHED.fetch_sub(1, Ordering::SeqCst);
    out
}

/// The sessions whose processes the `atexit` hook stops.
static SESSIONS: ProcessGroupsSet = ProcessGroupsSet::new();

/// Registers `session` so that the processes it still runs (a Bash call, background tasks,
/// background hooks) are stopped when the interpreter exits without `shutdown()`.
pub fn stop_at_exit(session: &Session) {
    SESSIONS.insert(session.processes(), session.kill_grace());
}

/// The `atexit` hook: stops the processes of every session still alive (SIGTERM, the kill
/// grace, SIGKILL), then stops all re-entry into Python and waits (up to 2 s, detached) until
/// no thread of ours is inside Python.
#[pyfunction]
pub fn at_exit(py: Python<'_>) {
    py.detach(|| SESSIONS.stop_all_blocking());
    EXITING.store(true, Ordering::SeqCst);
    py.detach(|| {
        let deadline = Instant::now() + Duration::from_secs(2);
        while ATTACHED.load(Ordering::SeqCst) > 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
    });
}

static SET_RESULT: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

fn set_result_fn(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    SET_RESULT
        .get_or_try_init(py, || {
            Ok::<_, PyErr>(py.import("robota._bridge")?.getattr("set_result")?.unbind())
        })
        .map(|f| f.bind(py).clone())
}

/// Cancels the Rust side when the asyncio future is cancelled (a done-callback; runs on the loop).
#[pyclass(frozen)]
struct OnDone {
    tx: Mutex<Option<oneshot::Sender<()>>>,
}

#[pymethods]
impl OnDone {
    fn __call__(&self, future: &Bound<'_, PyAny>) {
        let cancelled = future
            .call_method0("cancelled")
            .and_then(|c| c.is_truthy())
            .unwrap_or(false);
        let tx = self
            .tx
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if cancelled {
            if let Some(tx) = tx {
                let _ = tx.send(());
            }
        }
    }
}

/// An asyncio future on the running loop that resolves with `fut`'s output. Cancelling the
/// asyncio future drops `fut` (so drop guards inside it run).
pub fn awaitable<'py, F, T>(py: Python<'py>, fut: F) -> PyResult<Bound<'py, PyAny>>
where
    F: Future<Output = PyResult<T>> + Send + 'static,
    T: for<'a> IntoPyObject<'a> + Send + 'static,
{
    let event_loop = pyo3_async_runtimes::get_running_loop(py).map_err(|_| {
        pyo3::exceptions::PyRuntimeError::new_err(
            "robota's async methods must be awaited inside a running asyncio event loop \
             (e.g. in `async def main()` run by `asyncio.run(main())`)",
        )
    })?;
    let future = event_loop.call_method0("create_future")?;
    let (cancel_tx, cancel_rx) = oneshot::channel();
    future.call_method1(
        "add_done_callback",
        (OnDone {
            tx: Mutex::new(Some(cancel_tx)),
        },),
    )?;
    let loop_ref = event_loop.unbind();
    let future_ref = future.clone().unbind();
    pyo3_async_runtimes::tokio::get_runtime().spawn(async move {
        let outcome = tokio::select! {
            outcome = fut => outcome,
            _ = cancel_rx => return,
        };
        with_python(move |py| {
            let (ok, value) = match outcome.and_then(|v| v.into_py_any(py)) {
                Ok(value) => (true, value),
                Err(err) => (false, err.into_value(py).into_any()),
            };
            if let Ok(set_result) = set_result_fn(py) {
                // Fails only when the loop is closed: then nobody waits for the result.
                let _ = loop_ref.bind(py).call_method1(
                    "call_soon_threadsafe",
                    (set_result, future_ref.bind(py), ok, value),
                );
            }
        });
    });
    Ok(future)
}
