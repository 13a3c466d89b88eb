//! The termination signals the CLI handles — SIGINT (Ctrl-C), SIGTERM and SIGHUP — and what it
//! does before exiting on one: the running turn is aborted (its Bash call's whole process tree is
//! stopped), the session is shut down (the interrupted turn is saved, SessionEnd hooks run, every
//! process the session still has — background tasks, background hooks — is stopped), and the
//! process exits with 128 + the signal number (130, 143, 129), as shells report it.
//!
//! The library installs no signal handler; this module is the host side of that contract. A
//! second signal while the CLI is already shutting down kills the session's processes at once
//! (SIGKILL) and exits without waiting any longer.

use std::io::Write;
use std::time::Duration;

use robota::framework::interactive::InteractiveSession;
use robota::hooks::SessionEndReason;
use tokio::sync::mpsc;

/// Longest a shutdown after a signal may take (SessionEnd hooks, stopping processes) before the
/// CLI kills what is left and exits anyway.
pub const SHUTDOWN_LIMIT: Duration = Duration::from_secs(10);

/// A termination signal the CLI received.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Termination {
    /// SIGINT (Ctrl-C).
    Interrupt,
    /// SIGTERM.
    Terminate,
    /// SIGHUP (the terminal went away).
    Hangup,
}

impl Termination {
    /// The process exit code for it: 128 + the signal number.
    pub fn exit_code(self) -> u8 {
        match self {
            Termination::Interrupt => crate::EXIT_INTERRUPTED,
            Termination::Terminate => crate::EXIT_TERMINATED,
            Termination::Hangup => crate::EXIT_HANGUP,
        }
    }

    /// The signal's name.
    pub fn name(self) -> &'static str {
        match self {
            Termination::Interrupt => "SIGINT",
            Termination::Terminate => "SIGTERM",
            Termination::Hangup => "SIGHUP",
        }
    }
}

/// The termination signals received from now on, in order.
pub struct Signals {
    receiver: mpsc::UnboundedReceiver<Termination>,
}

impl Signals {
    /// Starts listening. From then on these signals no longer end the process by themselves.
    pub fn listen() -> std::io::Result<Signals> {
        let (sender, receiver) = mpsc::unbounded_channel();
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            for (kind, termination) in [
                (SignalKind::interrupt(), Termination::Interrupt),
                (SignalKind::terminate(), Termination::Terminate),
                (SignalKind::hangup(), Termination::Hangup),
            ] {
                let mut stream = signal(kind)?;
                let sender = sender.clone();
                tokio::spawn(async move {
                    while stream.recv().await.is_some() {
                        if sender.send(termination).is_err() {
                            break;
                        }
                    }
                });
            }
        }
        #[cfg(not(unix))]
        tokio::spawn(async move {
            while tokio::signal::ctrl_c().await.is_ok() {
                if sender.send(Termination::Interrupt).is_err() {
                    break;
                }
            }
        });
        Ok(Signals { receiver })
    }

    /// The next signal.
    pub async fn next(&mut self) -> Option<Termination> {
        self.receiver.recv().await
    }
}

/// Shuts `session` down (at most [`SHUTDOWN_LIMIT`]), making sure none of its processes is left
/// running when it returns.
pub async fn shut_down(session: &InteractiveSession) {
    if tokio::time::timeout(SHUTDOWN_LIMIT, session.shutdown(SessionEndReason::Other))
        .await
        .is_err()
    {
        note("the shutdown took too long; stopping the session's processes now");
    }
    session.session().processes().kill_all_now();
}

/// Exits at once after a second signal: the session's processes get SIGKILL first.
pub fn exit_now(session: &InteractiveSession, signal: Termination, code: u8) -> ! {
    note(&format!(
        "{}: stopping the session's processes and exiting now",
        signal.name()
    ));
    session.session().processes().kill_all_now();
    std::process::exit(i32::from(code));
}

/// A line on stderr that never panics (the terminal may be gone after SIGHUP).
pub fn note(message: &str) {
    let _ = writeln!(std::io::stderr(), "robota: {message}");
}
