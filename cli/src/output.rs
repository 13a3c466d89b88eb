//! Headless runs (`robota -p`): submit one prompt to an [`InteractiveSession`] and print it as
//! text, one JSON result, or a stream of JSON events ending in the result line (schema in
//! `cli/README.md`).

use std::io::Write;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use robota::engine::{RunOutcome, RunStopReason};
use robota::framework::interactive::{
    InteractiveEvent, InteractiveSession, PromptResult, Subscription,
};
use robota::framework::outcome::{ErrorInfo, OutcomeStatus};
use robota::message::ProviderErrorKind;
use robota::session::SessionEvent;

use crate::args::{Cli, OutputFormat, PermissionPrompt};
use crate::driver::{open_session, recovery_notice, resumed_notice, CliError};
use crate::prompt::{StdinLines, StdinPermissionHandler};
use crate::render::{session_notice_line, Progress, Terminal};
use crate::signals::{exit_now, note, shut_down, Signals, Termination};
use crate::{EXIT_INTERRUPTED, EXIT_REFUSED, EXIT_RUN_ERROR, EXIT_TRUNCATED};

/// Reads `subscription` until the event that ends the prompt (`complete`, `refused`,
/// `truncated`, `error` or `interrupted`), passing every event (that one included) to
/// `on_event`, and returns how the prompt ended.
pub async fn follow(
    session: &InteractiveSession,
    subscription: &Subscription,
    mut on_event: impl FnMut(&InteractiveEvent),
) -> PromptResult {
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
                None => return could_not_run("the prompt ended without a result".into()),
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
) -> Option<PromptResult> {
    on_event(event);
    PromptResult::from_event(&event.kind)
}

/// A prompt that could not run, with `message`.
fn could_not_run(message: String) -> PromptResult {
    PromptResult::Error {
        error: ErrorInfo::new("session", message.clone()),
        message,
        outcome: None,
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
            // Settings warnings as the session opens, MCP servers' status as it changes: apart
            // from the prompt's progress.
            if let Some(line) = session_notice_line(&event) {
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
        // The init line lists the tools: those of MCP servers still connecting in the background
        // belong in it (the prompt would wait for them anyway).
        session.wait_for_mcp_servers(None).await;
        let mcp_servers: Vec<Value> = session
            .list_mcp_servers()
            .iter()
            .map(|server| {
                let status = serde_json::to_value(&server.status).unwrap_or(Value::Null);
                json!({"name": server.name, "status": status["state"]})
            })
            .collect();
        let init = json!({
            "type": "system",
            "subtype": "init",
            "session_id": session.get_session_id(),
            "cwd": session.session().cwd(),
            "permission_mode": session.session().permission_mode(),
            "tools": session.session().tool_names(),
            "sandbox": sandbox,
            "mcp_servers": mcp_servers,
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
    while matches!(finished, PromptResult::Complete { .. }) && received.get().is_none() {
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

    let status = finished.status();
    let outcome = match &finished {
        // The prompt never ran: no result line, the message says why (exit 1).
        PromptResult::Error {
            message,
            outcome: None,
            ..
        } => return Err(CliError::run(message.clone())),
        PromptResult::Cancelled => return Err(CliError::run("the prompt was cancelled")),
        other => other.outcome().cloned().unwrap_or_else(|| RunOutcome {
            interrupted: true,
            stop_reason: RunStopReason::Interrupted,
            ..empty_outcome()
        }),
    };
    let error = match &finished {
        PromptResult::Error { error, .. } => Some(error.clone()),
        _ => None,
    };

    let stop_reason = serde_json::to_value(outcome.stop_reason).unwrap_or(Value::Null);
    let session_id = session.get_session_id();
    let mut result_line = json!({
        "type": "result",
        "subtype": status,
        "response": outcome.response,
        "usage": outcome.usage,
        "cost_usd": session.session().usage().cost_usd,
        "num_turns": outcome.rounds,
        "duration_ms": u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        "session_id": session_id,
        "stop_reason": stop_reason,
        "is_error": status == OutcomeStatus::Error,
    });
    if let Some(refusal) = &outcome.refusal {
        result_line["refusal"] = json!(refusal);
    }
    if let Some(value) = &outcome.structured_output {
        result_line["structured_output"] = value.clone();
    }
    if !outcome.structured_output_errors.is_empty() {
        result_line["structured_output_errors"] = json!(outcome.structured_output_errors);
    }
    if let Some(error) = &error {
        result_line["error"] = json!(error);
    }
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
    match status {
        OutcomeStatus::Interrupted | OutcomeStatus::Cancelled => {
            note("interrupted");
            Ok(EXIT_INTERRUPTED)
        }
        OutcomeStatus::Error => {
            let message = match (&outcome.error, &opened.base_url) {
                (Some(error), Some(url)) if error.kind == ProviderErrorKind::Network => {
                    format!("could not reach the model at {url}: {error}")
                }
                (Some(error), _) => error.to_string(),
                (None, _) => error.map(|e| e.message).unwrap_or_default(),
            };
            eprintln!("robota: {message}");
            Ok(EXIT_RUN_ERROR)
        }
        OutcomeStatus::Refused => {
            let refusal = outcome.refusal.unwrap_or_default();
            let why = match (&refusal.category, &refusal.explanation) {
                (_, Some(explanation)) => format!(": {explanation}"),
                (Some(category), None) => format!(" (category: {category})"),
                (None, None) => String::new(),
            };
            eprintln!("robota: the model refused to answer{why}");
            Ok(EXIT_REFUSED)
        }
        OutcomeStatus::Truncated => {
            eprintln!(
                "robota: the answer was cut off at the output token limit (max_tokens); raise \
                 it, or continue the answer in this session: robota --resume {session_id} -p \
                 \"Continue\""
            );
            Ok(EXIT_TRUNCATED)
        }
        OutcomeStatus::Complete => Ok(0),
    }
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
) -> PromptResult {
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
            could_not_run(error.to_string())
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
        refusal: None,
        tools_executed: Vec::new(),
        execution_id: String::new(),
        structured_output: None,
        structured_output_errors: Vec::new(),
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
        SessionEvent::McpServerStatus { .. } => {
            session_notice_line(event).map(|line| line.trim_start().to_string())
        }
        SessionEvent::PersistenceError { operation, message } => Some(format!(
            "warning: could not save the session ({operation}): {message}"
        )),
        SessionEvent::HookSystemMessage { event, message } => {
            Some(format!("hook ({event}): {message}"))
        }
        _ => None,
    }
}
