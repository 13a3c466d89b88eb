//! The tokio runtime the library's async exports run on. uniffi polls futures from Swift's
//! executor, which has no tokio context; HTTP providers, timers and the session loop need one,
//! so every async export is spawned here and aborted when Swift drops it.

use std::future::Future;
use std::sync::OnceLock;

use crate::error::RobotaError;

/// The process-wide runtime (created on first use, never dropped: dropping a tokio runtime from
/// one of its own threads would panic).
pub fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .thread_name("robota-swift")
            .build()
            // Without threads or timers nothing can run; there is no error to return from here.
            .unwrap_or_else(|e| panic!("cannot start the tokio runtime: {e}"))
    })
}

/// Aborts the spawned task when the awaiting future is dropped (Swift cancelled the call).
struct AbortOnDrop(tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Runs `future` on [`runtime`] and waits for it; a panic inside becomes
/// [`RobotaError::Internal`].
pub async fn on_runtime<T, F>(future: F) -> Result<T, RobotaError>
where
    F: Future<Output = Result<T, RobotaError>> + Send + 'static,
    T: Send + 'static,
{
    let handle = runtime().spawn(future);
    let _abort = AbortOnDrop(handle.abort_handle());
    match handle.await {
        Ok(result) => result,
        Err(e) if e.is_panic() => Err(RobotaError::internal(
            "the engine panicked while handling this call (please report it)",
        )),
        Err(_) => Err(RobotaError::internal("the call was cancelled")),
    }
}
