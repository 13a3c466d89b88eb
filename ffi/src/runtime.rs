//! `robota_runtime`: the tokio runtime the engine's work runs on.

use std::sync::{Arc, OnceLock};

use crate::boundary::ffi_boundary;
use crate::error::{robota_error, robota_status, FfiError, ROBOTA_STATUS_RUNTIME};

/// The runtime behind a handle. Dropping it never happens on one of its own threads: when the
/// last reference goes away on an engine thread, the runtime is shut down from a new thread.
pub(crate) struct RuntimeInner {
    runtime: Option<tokio::runtime::Runtime>,
    /// The process that created the runtime: its threads do not exist in a `fork()`ed child.
    pid: u32,
}

impl RuntimeInner {
    fn new(worker_threads: u32) -> Result<Self, FfiError> {
        let mut builder = tokio::runtime::Builder::new_multi_thread();
        builder.enable_all().thread_name("robota-engine");
        if worker_threads > 0 {
            builder.worker_threads(worker_threads as usize);
        }
        let runtime = builder.build().map_err(|e| {
            FfiError::new(
                ROBOTA_STATUS_RUNTIME,
                format!("cannot start the runtime: {e}"),
            )
        })?;
        Ok(RuntimeInner {
            runtime: Some(runtime),
            pid: std::process::id(),
        })
    }

    /// True when this process is a `fork()`ed child of the one that created the runtime.
    pub(crate) fn forked(&self) -> bool {
        self.pid != std::process::id()
    }

    /// Refuses use from a `fork()`ed child: the runtime's threads were not copied, so any wait
    /// on them would hang forever.
    pub(crate) fn check_fork(&self) -> Result<(), FfiError> {
        if self.forked() {
            return Err(FfiError::new(
                ROBOTA_STATUS_RUNTIME,
                format!(
                    "this runtime was created in process {} and cannot be used after fork() \
                     (process {}): its threads do not exist here. Create new runtimes, providers \
                     and sessions in the child (pass an explicit robota_runtime; the default \
                     runtime is unusable in the child as well)",
                    self.pid,
                    std::process::id()
                ),
            ));
        }
        Ok(())
    }

    pub(crate) fn handle(&self) -> &tokio::runtime::Handle {
        self.runtime
            .as_ref()
            .expect("runtime present until drop")
            .handle()
    }
}

impl Drop for RuntimeInner {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            if self.forked() {
                // The threads belong to the parent; shutting down would wait for them forever.
                std::mem::forget(runtime);
            } else if tokio::runtime::Handle::try_current().is_ok() {
                // Dropping a runtime inside a runtime context panics; do it elsewhere.
                std::thread::spawn(move || drop(runtime));
            } else {
                drop(runtime);
            }
        }
    }
}

/// Whether the current thread is an engine (tokio) thread, where blocking waits are refused.
pub(crate) fn on_engine_thread() -> bool {
    tokio::runtime::Handle::try_current().is_ok()
}

/// A runtime: the threads the engine's work (model calls, tools, event delivery) runs on.
/// Opaque; create with `robota_runtime_new`, free with `robota_runtime_free`.
pub struct robota_runtime {
    pub(crate) inner: Arc<RuntimeInner>,
}

static DEFAULT_RUNTIME: OnceLock<Arc<RuntimeInner>> = OnceLock::new();

/// The runtime for a handle argument: the given one, or the lazily created default.
///
/// # Safety
/// `runtime` is NULL or a live `robota_runtime`.
pub(crate) unsafe fn runtime_arg(
    runtime: *const robota_runtime,
) -> Result<Arc<RuntimeInner>, FfiError> {
    if !runtime.is_null() {
        let inner = &(*runtime).inner;
        inner.check_fork()?;
        return Ok(Arc::clone(inner));
    }
    if let Some(default) = DEFAULT_RUNTIME.get() {
        default.check_fork()?;
        return Ok(Arc::clone(default));
    }
    let created = Arc::new(RuntimeInner::new(0)?);
    // A racing thread may have won; either way one default exists (the loser is dropped here,
    // on a host thread).
    Ok(Arc::clone(DEFAULT_RUNTIME.get_or_init(|| created)))
}

/// Creates a runtime with `worker_threads` engine threads (0: one per CPU core).
///
/// Every function that takes a `robota_runtime *` also accepts NULL, meaning the library's
/// default runtime (created on first use, never freed). An explicit runtime lets a host
/// control the threads and shut them down.
///
/// Ownership: `*out` is owned by the caller; free it with `robota_runtime_free`. Objects
/// created on it keep it alive, so freeing the handle early is safe.
/// Threading: callable from any thread.
///
/// # Safety
/// `out` is valid for writes; `out_err` is NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn robota_runtime_new(
    worker_threads: u32,
    out: *mut *mut robota_runtime,
    out_err: *mut *mut robota_error,
) -> robota_status {
    ffi_boundary!(out_err, {
        if out.is_null() {
            return Err(FfiError::null("out"));
        }
        let inner = Arc::new(RuntimeInner::new(worker_threads)?);
        *out = Box::into_raw(Box::new(robota_runtime { inner }));
        Ok(())
    })
}

/// Frees a runtime handle. NULL is ignored. The threads stop once nothing created on the
/// runtime (providers, sessions) is alive any more. Safe to call from any thread, including an
/// engine thread (the shutdown then happens on a helper thread).
///
/// # Safety
/// `runtime` is NULL or a handle from `robota_runtime_new`, freed at most once.
#[no_mangle]
pub unsafe extern "C" fn robota_runtime_free(runtime: *mut robota_runtime) {
    ffi_boundary!(value(), {
        if !runtime.is_null() {
            drop(Box::from_raw(runtime));
        }
    })
}

/// Frees a runtime handle and waits up to `timeout_ms` milliseconds for its threads to stop,
/// when nothing else (provider, session, query) still uses the runtime; otherwise the same as
/// `robota_runtime_free`. Useful before process exit so that leak checkers see every thread
/// gone. Sessions still alive keep their processes (background tasks, hooks): free them first
/// (`robota_session_free` stops what they started). NULL is ignored. Must not be called from an engine thread (it then behaves like
/// `robota_runtime_free`).
///
/// # Safety
/// `runtime` is NULL or a handle from `robota_runtime_new`, freed at most once.
#[no_mangle]
pub unsafe extern "C" fn robota_runtime_shutdown(runtime: *mut robota_runtime, timeout_ms: u64) {
    ffi_boundary!(value(), {
        if runtime.is_null() {
            return;
        }
        let handle = Box::from_raw(runtime);
        match Arc::try_unwrap(handle.inner) {
            Ok(mut inner) if !on_engine_thread() && !inner.forked() => {
                if let Some(rt) = inner.runtime.take() {
                    rt.shutdown_timeout(std::time::Duration::from_millis(timeout_ms));
                }
            }
            Ok(inner) => drop(inner),
            Err(shared) => drop(shared),
        }
    })
}
