//! Headless runs (`robota -p`): submit one prompt to an [`InteractiveSession`] and print it as
//! text, one JSON result, or a stream of JSON events ending in the result line (schema in
//! `cli/README.md`).

use std::io::Write;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use robota::engine::{RunOutcome, RunStopReason};
use robota::framework::interactive::{
    InteractiveEvent, InteractiveEventKind, InteractiveSession, Subscription,
};
use robota::message::ProviderErrorKind;
use robota::session::SessionEvent;

use crate::args::{Cli, OutputFormat, PermissionPrompt};
use crate::driver::{open_session, recovery_notice, resumed_notice, CliError};
use crate::prompt::{StdinLines, StdinPermissionHandler};
use crate::render::{settings_warning_line, Progress, Terminal};
use crate::signals::{exit_now, note, shut_down, Signals, Termination};
use crate::{EXIT_INTERRUPTED, EXIT_RUN_ERROR};

/// How a submitted prompt ended, from its terminal event.
pub enum Finished {
    /// `complete`: the run's outcome.
    Complete(RunOutcome),
    /// `interrupted`: what streamed until the abort (`None` if it came before the run).
    Interrupted(Option<RunOutcome>),
    /// `error`: the prompt could not run.
    Error(String),
}

/// Reads `subscription` until the prompt's terminal event (`complete`, `interrupted` or
/// `error`), passing every event (the terminal one included) to `on_event`.
pub async fn follow(
    session: &InteractiveSession,
    subscription: &Subscription,
    mut on_event: impl FnMut(&InteractiveEvent),
) -> Finished {
    loop {
        let Some(event) = subscription.next_event(Duration::from_secs(1)).await else {
            if session.is_executing() {
                continue;
            }
            // Idle: whatever the run emitted is queued already.
            match subscription.try_next_event() {
                Some(event) => {
                    if let Some(finished) = terminal(&event, &mut on_event) {
                        return finished;
                    }
                    continue;
                }
                None => return Finished::Error("the prompt ended without a result".into()),
            }
        };
        if let Some(finished) = terminal(&event, &mut on_event) {
            return finished;
        }
    }
}

fn terminal(
    event: &InteractiveEvent,
    on_event: &mut impl FnMut(&InteractiveEvent),
) -> Option<Finished> {
    on_event(event);
    match &event.kind {
        InteractiveEventKind::Complete { outcome } => Some(Finished::Complete(outcome.clone())),
        InteractiveEventKind::Interrupted { outcome } => {
            Some(Finished::Interrupted(outcome.clone()))
        }
        InteractiveEventKind::Error { message } => Some(Finished::Error(message.clone())),
        _ => None,
    }
}

/// Runs `prompt` once and prints the outcome; returns the exit code.
pub async fn run_headless(cli: &Cli, prompt: String) -> Result<u8, CliError> {
    let started = Instant::now();
    let format = cli.output_format;
    let verbose = cli.verbose;
    let terminal = Terminal::new();
    let handler = match cli.permission_prompt {
        PermissionPrompt::None => None,
        PermissionPrompt::Stdin => Some(Arc::new(StdinPermissionHandler::new(
            StdinLines::spawn(),
            terminal.clone(),
        )) as Arc<dyn robota::session::PermissionHandler>),
    };
    // Text mode shows progress (tool calls, denials, warnings) on stderr as it happens; the JSON
    // formats carry it in their output, and print a line on stderr only with --verbose.
    let text_mode = format == OutputFormat::Text;
    let shown = terminal.clone();
    let opened = open_session(cli, handler, move |event| {
        if verbose && !text_mode {
            if let Some(line) = describe(&event) {
                eprintln!("{line}");
            }
        } else if text_mode {
            // Reported as the session opens, before the prompt's progress is followed.
            if let Some(line) = settings_warning_line(&event) {
                shown.note(&line);
            }
        }
    })?;
    let session = opened.session.clone();
    let subscription = session.subscribe_pull();
    if let Some(line) = resumed_notice(cli, &session) {
        if format != OutputFormat::StreamJson {
            terminal.note(&format!("robota: {line}"));
        }
    }
    // What resuming repaired or found unfinished: on stderr here, and as the
    // `session_recovered` event in stream-json (it comes with the prompt's events).
    if format != OutputFormat::StreamJson {
        for line in recovery_notice(&session) {
            terminal.note(&line);
        }
    }
    let sandbox = session.sandbox_status();
    if verbose {
        eprintln!("{}", sandbox_line(&sandbox));
    }
    // Configuration problems robota worked around (a skipped rule, an agent file it could not
    // use, …) are never silent: text mode and `--verbose` show each one as it is found,
    // stream-json lists them in the init line, and `--output-format json` says on stderr how
    // many there are.
    let warnings: Vec<String> = session
        .session()
        .warnings()
        .iter()
        .map(ToString::to_string)
        .collect();
    if !verbose && format == OutputFormat::Json && !warnings.is_empty() {
        eprintln!(
            "robota: {} configuration warning{} (run with -v to see {})",
            warnings.len(),
            if warnings.len() == 1 { "" } else { "s" },
            if warnings.len() == 1 { "it" } else { "them" }
        );
    }
    if format == OutputFormat::StreamJson {
        let init = json!({
            "type": "system",
            "subtype": "init",
            "session_id": session.get_session_id(),
            "cwd": session.session().cwd(),
            "permission_mode": session.session().permission_mode(),
            "tools": session.session().tool_names(),
            "sandbox": sandbox,
            "warnings": warnings,
        });
        let mut stdout = std::io::stdout().lock();
        let _ = writeln!(stdout, "{init}");
        let _ = stdout.flush();
    }

    // A termination signal (Ctrl-C, SIGTERM, SIGHUP) aborts the turn, which then ends
    // interrupted; the session is shut down below and the exit code names the signal. A second
    // one exits at once.
    let mut signals = Signals::listen()
        .map_err(|e| CliError::run(format!("cannot handle termination signals: {e}")))?;
    let received: Arc<OnceLock<Termination>> = Arc::new(OnceLock::new());
    let watcher = {
        let session = session.clone();
        let received = received.clone();
        tokio::spawn(async move {
            while let Some(signal) = signals.next().await {
                match received.get() {
                    None => {
                        let _ = received.set(signal);
                        session.abort();
                    }
                    Some(first) => exit_now(&session, signal, first.exit_code()),
                }
            }
        })
    };
    run_setup_hooks(cli, &session).await?;
    let mut progress = text_mode.then(|| Progress::new(terminal.clone(), false));
    let mut finished =
        submit_and_follow(&session, &subscription, &prompt, format, progress.as_mut()).await;
    // Background hooks (asynchronous Stop hooks above all) finish before a headless run exits;
    // one that asks to wake the agent (`asyncRewake`, exit 2) gets its turn, as in Claude Code.
    let mut wakes = 0;
    while matches!(finished, Finished::Complete(_)) && received.get().is_none() {
        let Some(wake) = session
            .session()
            .finish_background_hooks(BACKGROUND_HOOK_WAIT)
            .await
        else {
            break;
        };
        wakes += 1;
        if wakes > robota::hooks::MAX_CONSECUTIVE_STOP_BLOCKS {
            note("background hooks kept waking the agent; stopping here");
            break;
        }
        finished =
            submit_and_follow(&session, &subscription, &wake, format, progress.as_mut()).await;
    }
    drop(progress);
    subscription.unsubscribe();
    shut_down(&session).await;
    watcher.abort();

    let outcome = match finished {
        Finished::Complete(outcome) => outcome,
        Finished::Interrupted(outcome) => outcome.unwrap_or_else(|| RunOutcome {
            interrupted: true,
            stop_reason: RunStopReason::Interrupted,
            ..empty_outcome()
        }),
        Finished::Error(message) => return Err(CliError::run(message)),
    };

    let stop_reason = serde_json::to_value(outcome.stop_reason).unwrap_or(Value::Null);
    let is_error = outcome.stop_reason == RunStopReason::Error;
    let session_id = session.get_session_id();
    let result_line = json!({
        "type": "result",
        "response": outcome.response,
        "usage": outcome.usage,
        "cost_usd": session.session().usage().cost_usd,
        "num_turns": outcome.rounds,
        "duration_ms": u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        "session_id": session_id,
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
        eprintln!("session: {session_id}");
    }

    if let Some(signal) = received.get() {
        note(&format!(
            "{} received: the run was stopped and the session saved",
            signal.name()
        ));
        return Ok(signal.exit_code());
    }
    if outcome.interrupted {
        note("interrupted");
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

/// How long a headless run waits for background hooks before it exits.
const BACKGROUND_HOOK_WAIT: Duration = Duration::from_secs(600);

/// Submits `prompt` and follows it to its terminal event, streaming events in stream-json and
/// showing them on `progress` (text mode).
async fn submit_and_follow(
    session: &InteractiveSession,
    subscription: &Subscription,
    prompt: &str,
    format: OutputFormat,
    mut progress: Option<&mut Progress>,
) -> Finished {
    match session.submit(prompt, None, None).await {
        Ok(_) => {
            follow(session, subscription, |event| {
                print_event(format, event);
                if let Some(progress) = progress.as_mut() {
                    progress.on_event(event);
                }
            })
            .await
        }
        Err(error) => {
            // The `error` event is already queued: stream it before failing.
            while let Some(event) = subscription.try_next_event() {
                print_event(format, &event);
            }
            Finished::Error(error.to_string())
        }
    }
}

/// Runs the Setup hooks `--init` / `--maintenance` ask for (their messages and errors arrive as
/// events with the prompt's).
pub(crate) async fn run_setup_hooks(
    cli: &Cli,
    session: &InteractiveSession,
) -> Result<(), CliError> {
    if let Some(trigger) = cli.setup_trigger() {
        session
            .session()
            .run_setup(trigger)
            .await
            .map_err(|error| CliError::run(format!("Setup hooks: {error}")))?;
    }
    Ok(())
}

/// `--init-only`: runs the Setup hooks (trigger `init`) and exits; hook messages and errors go
/// to stderr.
pub async fn run_setup_only(cli: &Cli) -> Result<u8, CliError> {
    let opened = open_session(cli, None, |event| {
        if let Some(line) = describe(&event) {
            eprintln!("{line}");
        }
    })?;
    let session = opened.session.clone();
    let result = run_setup_hooks(cli, &session).await;
    shut_down(&session).await;
    result.map(|()| 0)
}

/// One line about the OS sandbox for `--verbose`.
pub(crate) fn sandbox_line(status: &robota::sandbox::SandboxStatus) -> String {
    use robota::sandbox::NetworkPolicy;
    if !status.active {
        let state = if status.enabled { "unavailable" } else { "off" };
        return format!(
            "sandbox: {state} ({})",
            status.reason.as_deref().unwrap_or("no reason given")
        );
    }
    let roots: Vec<String> = status
        .writable_roots
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    let network = match &status.network {
        NetworkPolicy::None => "none".to_string(),
        NetworkPolicy::AllowList { domains } => format!("only {}", domains.join(", ")),
        NetworkPolicy::All => "all".to_string(),
    };
    format!(
        "sandbox: active ({}); writable: {}; network: {network}",
        status.backend.as_deref().unwrap_or("?"),
        roots.join(", ")
    )
}

/// An outcome with nothing in it (an abort before the run started).
fn empty_outcome() -> RunOutcome {
    RunOutcome {
        response: String::new(),
        interrupted: false,
        rounds: 0,
        usage: Default::default(),
        stop_reason: RunStopReason::Completed,
        error: None,
        tools_executed: Vec::new(),
        execution_id: String::new(),
    }
}

/// Streams one event as a JSON line in stream-json (`session_id`, `seq`, `type`, payload).
fn print_event(format: OutputFormat, event: &InteractiveEvent) {
    if format == OutputFormat::StreamJson {
        if let Ok(line) = serde_json::to_string(event) {
            let mut stdout = std::io::stdout().lock();
            let _ = writeln!(stdout, "{line}");
            let _ = stdout.flush();
        }
    }
}

/// A one-line description of the events `--verbose` shows on stderr in the JSON formats
/// (warnings and failures; never an event as JSON).
pub fn describe(event: &SessionEvent) -> Option<String> {
    use robota::engine::EngineEvent;
    if let Some(line) = event.developer_warning() {
        return Some(line);
    }
    match event {
        SessionEvent::Engine(EngineEvent::ToolStart { name, input, .. }) => Some(format!(
            "● {name}({})",
            robota::framework::interactive::first_arg(input)
        )),
        SessionEvent::Warning { source, message } => Some(format!("warning: {source}: {message}")),
        SessionEvent::SettingsWarning { warning } => Some(format!("warning: settings: {warning}")),
        SessionEvent::PersistenceError { operation, message } => Some(format!(
            "warning: could not save the session ({operation}): {message}"
        )),
        SessionEvent::HookSystemMessage { event, message } => {
            Some(format!("hook ({event}): {message}"))
        }
        _ => None,
    }
}
