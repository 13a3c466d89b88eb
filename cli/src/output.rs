//! Headless runs (`robota -p`): run one prompt and print it as text, one JSON result, or a
//! stream of JSON events ending in the result line (schema in `cli/README.md`).

use std::io::Write;
use std::sync::Arc;
use std::time::Instant;

use serde_json::{json, Value};

use robota::engine::RunStopReason;
use robota::message::ProviderErrorKind;
use robota::session::SessionEvent;

use crate::args::{Cli, OutputFormat, PermissionPrompt};
use crate::driver::{open_session, CliError};
use crate::prompt::{StdinLines, StdinPermissionHandler};
use crate::{EXIT_INTERRUPTED, EXIT_RUN_ERROR};

/// Runs `prompt` once and prints the outcome; returns the exit code.
pub async fn run_headless(cli: &Cli, prompt: String) -> Result<u8, CliError> {
    let started = Instant::now();
    let format = cli.output_format;
    let verbose = cli.verbose;
    let handler = match cli.permission_prompt {
        PermissionPrompt::None => None,
        PermissionPrompt::Stdin => Some(Arc::new(StdinPermissionHandler::new(StdinLines::spawn()))
            as Arc<dyn robota::session::PermissionHandler>),
    };
    let opened = open_session(cli, handler, move |event| {
        print_event(format, verbose, &event);
    })?;
    let session = opened.session.clone();

    // Ctrl-C aborts the turn; the run then returns an interrupted outcome (exit 130).
    let aborter = session.clone();
    let ctrl_c = tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            aborter.abort();
        }
    });
    let result = session.run(prompt).await;
    ctrl_c.abort();
    let outcome = match result {
        Ok(outcome) => outcome,
        Err(error) => {
            session
                .shutdown(robota::hooks::SessionEndReason::Other)
                .await;
            return Err(CliError::run(error.to_string()));
        }
    };
    session
        .shutdown(robota::hooks::SessionEndReason::Other)
        .await;

    let stop_reason = serde_json::to_value(outcome.stop_reason).unwrap_or(Value::Null);
    let is_error = outcome.stop_reason == RunStopReason::Error;
    let result_line = json!({
        "type": "result",
        "response": outcome.response,
        "usage": outcome.usage,
        "cost_usd": session.usage().cost_usd,
        "num_turns": outcome.rounds,
        "duration_ms": u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        "session_id": session.session_id(),
        "stop_reason": stop_reason,
        "is_error": is_error,
    });
    let mut stdout = std::io::stdout().lock();
    match format {
        OutputFormat::Text => {
            let _ = writeln!(stdout, "{}", outcome.response);
        }
        OutputFormat::Json | OutputFormat::StreamJson => {
            let _ = writeln!(stdout, "{result_line}");
        }
    }
    let _ = stdout.flush();
    if verbose {
        eprintln!("session: {}", session.session_id());
    }

    if outcome.interrupted {
        eprintln!("robota: interrupted");
        return Ok(EXIT_INTERRUPTED);
    }
    if let Some(error) = &outcome.error {
        let message = match (error.kind, &opened.base_url) {
            (ProviderErrorKind::Network, Some(url)) => {
                format!("could not reach the model at {url}: {error}")
            }
            _ => error.to_string(),
        };
        eprintln!("robota: {message}");
        return Ok(EXIT_RUN_ERROR);
    }
    Ok(0)
}

/// Streams one event: every event as a JSON line in stream-json; tool calls and warnings on
/// stderr with `--verbose`.
fn print_event(format: OutputFormat, verbose: bool, event: &SessionEvent) {
    if format == OutputFormat::StreamJson {
        if let Ok(line) = serde_json::to_string(event) {
            let mut stdout = std::io::stdout().lock();
            let _ = writeln!(stdout, "{line}");
            let _ = stdout.flush();
        }
    }
    if verbose {
        if let Some(line) = describe(event) {
            eprintln!("{line}");
        }
    }
}

/// A one-line human description of the events worth showing on a terminal.
pub fn describe(event: &SessionEvent) -> Option<String> {
    use robota::engine::EngineEvent;
    match event {
        SessionEvent::Engine(EngineEvent::ToolStart { name, input, .. }) => {
            Some(format!("> {name} {input}"))
        }
        SessionEvent::PermissionResolved { .. } | SessionEvent::Warning { .. } => {
            serde_json::to_string(event).ok()
        }
        SessionEvent::SettingsWarning { .. } | SessionEvent::PersistenceError { .. } => {
            serde_json::to_string(event).ok()
        }
        _ => None,
    }
}
