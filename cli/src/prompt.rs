//! Reading the user's answers: one stdin reader shared by the REPL and permission prompts (so
//! that a prompt during a turn gets the next line, not the REPL), and the permission handler that
//! asks on the terminal.

use std::io::BufRead;
use std::sync::Arc;

use async_trait::async_trait;
use tokio::sync::{mpsc, Mutex};

use robota::framework::interactive::first_arg;
use robota::session::{
    PermissionHandler, PermissionRequest, PermissionResponse, SettingsDestination,
};
use tokio_util::sync::CancellationToken;

use crate::render::Terminal;

/// Lines from stdin, read on a background thread (stdin reads block).
pub struct StdinLines {
    receiver: Mutex<mpsc::UnboundedReceiver<String>>,
}

impl StdinLines {
    /// Starts the reader thread.
    pub fn spawn() -> Arc<Self> {
        let (sender, receiver) = mpsc::unbounded_channel();
        std::thread::spawn(move || {
            let stdin = std::io::stdin();
            for line in stdin.lock().lines() {
                let Ok(line) = line else { break };
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        Arc::new(StdinLines {
            receiver: Mutex::new(receiver),
        })
    }

    /// The next line; `None` at end of input.
    pub async fn next_line(&self) -> Option<String> {
        self.receiver.lock().await.recv().await
    }
}

/// Asks on stderr and reads the answer from stdin: `y` once, `s` for the session, `a` always
/// (saved to `.robota/settings.local.json`), anything else (or end of input) denies. The call is
/// shown as the tool lines show it (`Bash(ls -la)`), not as JSON; the answer is shown by the
/// tool's own end line.
pub struct StdinPermissionHandler {
    lines: Arc<StdinLines>,
    terminal: Arc<Terminal>,
}

impl StdinPermissionHandler {
    /// A handler reading from `lines` and asking on `terminal`.
    pub fn new(lines: Arc<StdinLines>, terminal: Arc<Terminal>) -> Self {
        StdinPermissionHandler { lines, terminal }
    }
}

#[async_trait]
impl PermissionHandler for StdinPermissionHandler {
    async fn request_permission(
        &self,
        request: PermissionRequest,
        cancel: CancellationToken,
    ) -> PermissionResponse {
        // The events before the question (the answer so far, the previous call's end) first.
        tokio::select! {
            () = self.terminal.request_shown(&request.request_id) => {}
            () = cancel.cancelled() => {}
        }
        let arg = first_arg(&request.input);
        let call = if arg.is_empty() {
            request.tool_name.clone()
        } else {
            format!("{}({arg})", request.tool_name)
        };
        self.terminal.ask(&format!(
            "Allow {call}? {}\n[y]es / [n]o / [s]ession / [a]lways: ",
            request.reason
        ));
        let answer = tokio::select! {
            line = self.lines.next_line() => line,
            () = cancel.cancelled() => None,
        };
        match answer.as_deref().map(|a| a.trim().to_ascii_lowercase()) {
            Some(a) if a == "y" || a == "yes" => PermissionResponse::AllowOnce,
            Some(a) if a == "s" || a == "session" => PermissionResponse::allow_session(),
            Some(a) if a == "a" || a == "always" => PermissionResponse::AllowAlways {
                rules: Vec::new(),
                destination: SettingsDestination::LocalSettings,
            },
            _ => PermissionResponse::Deny {
                message: "The user denied this tool call at the prompt.".into(),
            },
        }
    }
}
