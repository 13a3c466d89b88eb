//! Stopping the sessions' processes when JavaScript is done with them.
//!
//! The engine's sessions are never dropped when Node exits (nor when a worker is terminated), so
//! the processes they still run — a Bash call, background tasks, background hooks — would keep
//! running. Every session and query registers here, per JavaScript environment (one per thread:
//! the main thread and each worker). Two paths stop them, SIGTERM then SIGKILL after the
//! session's kill grace:
//! - the environment's cleanup hook, which Node runs when the environment ends normally (the
//!   event loop ran dry, a worker ended or was terminated);
//! - [`stop_session_processes`], which the facade calls from `process.on('exit')`, because
//!   `process.exit()` on the main thread exits without running cleanup hooks.
//!
//! No signal handler is installed: on SIGTERM or SIGINT Node's default is to die at once. A host
//! that should clean up then handles the signal (`process.on('SIGTERM', …)`) and calls
//! `shutdown()` or `process.exit()`.

use std::cell::Cell;

use napi::Env;
use napi_derive::napi;

use robota::process::ProcessGroupsSet;
use robota::session::Session;

thread_local! {
    /// The process registries of the sessions created on this thread's environment.
    static SESSIONS: ProcessGroupsSet = const { ProcessGroupsSet::new() };
    /// Whether this environment's cleanup hook is registered.
    static HOOKED: Cell<bool> = const { Cell::new(false) };
}

/// Registers `session` so that its processes stop when `env` ends.
pub(crate) fn stop_with_env(env: &Env, session: &Session) {
    SESSIONS.with(|set| set.insert(session.processes(), session.kill_grace()));
    if !HOOKED.with(|hooked| hooked.replace(true)) {
        // On failure the `exit` listener of the facade still covers the main thread.
        let _ = env.add_env_cleanup_hook((), |()| stop_session_processes());
    }
}

/// Stops every process of every session created in this JavaScript environment (SIGTERM, the
/// kill grace, SIGKILL); blocks until they are gone. Called by the facade on `process.exit`.
#[napi]
pub fn stop_session_processes() {
    SESSIONS.with(ProcessGroupsSet::stop_all_blocking);
}
