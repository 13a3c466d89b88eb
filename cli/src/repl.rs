//! Interactive mode: a line-based REPL over an [`InteractiveSession`]. Prompts stream their
//! answer; `/name args` lines run commands through `execute_command` (the session applies
//! clear, rename, permission mode and compact itself; the REPL asks a command's follow-up
//! question on stdin and applies the `exit` and `resume` effects); permission prompts are asked
//! inline; Ctrl-C aborts the running turn and a second one exits (after shutting the session
//! down, as SIGTERM and SIGHUP do; see [`crate::signals`]).

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use robota::framework::commands::{CommandEffect, CommandResult, InteractionPrompt};
use robota::framework::interactive::{InteractiveSession, PromptResult, Subscription};
use robota::hooks::SessionEndReason;
use robota::session::PermissionHandler;

use crate::args::Cli;
use crate::driver::{open_session, recovery_notice, resumed_notice, CliError};
use crate::output::follow;
use crate::prompt::{StdinLines, StdinPermissionHandler};
use crate::render::{session_notice_line, Progress, Terminal};
use crate::signals::{exit_now, note, shut_down, Signals, Termination};

/// What the REPL does after a command.
enum Next {
    /// Read the next line.
    Continue,
    /// Leave the REPL.
    Exit,
    /// Switch to this saved session.
    Resume(String),
    /// Reopen the current session, so what was saved in settings applies (plugins enabled now,
    /// another provider profile, a response language); its conversation is kept.
    Reload,
}

/// Runs the REPL until end of input, `/exit` or a second Ctrl-C, starting with `first_prompt`
/// when one was given on the command line; returns the exit code.
pub async fn run_repl(cli: &Cli, first_prompt: Option<String>) -> Result<u8, CliError> {
    let lines = StdinLines::spawn();
    let terminal = Terminal::new();
    let mut session = open(cli, &lines, &terminal)?;
    crate::output::run_setup_hooks(cli, &session).await?;
    // The session Ctrl-C acts on (replaced on `/resume`).
    let current = Arc::new(Mutex::new(session.clone()));

    // First Ctrl-C during a turn aborts it; a second one (or one at the prompt) exits, as do
    // SIGTERM and SIGHUP: the session is shut down first (its processes stopped), and a further
    // signal during that shutdown exits at once.
    let mut signals = Signals::listen()
        .map_err(|e| CliError::run(format!("cannot handle termination signals: {e}")))?;
    let abort_requested = Arc::new(AtomicBool::new(false));
    let watcher = {
        let current = current.clone();
        let abort_requested = abort_requested.clone();
        tokio::spawn(async move {
            let mut exiting: Option<u8> = None;
            while let Some(signal) = signals.next().await {
                let session = current
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .clone();
                if let Some(code) = exiting {
                    exit_now(&session, signal, code);
                }
                if signal == Termination::Interrupt
                    && session.is_executing()
                    && !abort_requested.swap(true, Ordering::SeqCst)
                {
                    session.abort();
                    note("interrupted — Ctrl-C again to exit");
                    continue;
                }
                let code = signal.exit_code();
                exiting = Some(code);
                tokio::spawn(async move {
                    shut_down(&session).await;
                    std::process::exit(i32::from(code));
                });
            }
        })
    };

    if let Some(prompt) = first_prompt.filter(|p| !p.trim().is_empty()) {
        eprintln!("> {prompt}");
        abort_requested.store(false, Ordering::SeqCst);
        run_prompt(&session, &terminal, prompt.trim()).await;
    }
    loop {
        eprint!("> ");
        let Some(line) = lines.next_line().await else {
            break;
        };
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        if let Some(command) = line.strip_prefix('/') {
            let (name, args) = command.split_once(' ').unwrap_or((command, ""));
            match run_command(&session, &terminal, &lines, name, args).await {
                Next::Continue => {}
                Next::Exit => break,
                Next::Reload => {
                    // The saved session is locked while open: close it, then resume it.
                    let mut reopened = cli.clone();
                    reopened.resume = Some(session.get_session_id());
                    reopened.continue_session = false;
                    reopened.fork = false;
                    session.shutdown(SessionEndReason::Other).await;
                    let next = open(&reopened, &lines, &terminal).or_else(|error| {
                        eprintln!("robota: {} (starting a new session)", error.message);
                        let mut fresh = cli.clone();
                        fresh.resume = None;
                        fresh.continue_session = false;
                        open(&fresh, &lines, &terminal)
                    })?;
                    session = next;
                    *current.lock().unwrap_or_else(PoisonError::into_inner) = session.clone();
                }
                Next::Resume(id) if id == session.get_session_id() => {
                    eprintln!("(already in session {id})");
                }
                Next::Resume(id) => {
                    let mut resumed = cli.clone();
                    resumed.resume = Some(id);
                    resumed.continue_session = false;
                    resumed.fork = false;
                    match open(&resumed, &lines, &terminal) {
                        Ok(next) => {
                            session.shutdown(SessionEndReason::Other).await;
                            session = next;
                            *current.lock().unwrap_or_else(PoisonError::into_inner) =
                                session.clone();
                        }
                        Err(error) => eprintln!("robota: {}", error.message),
                    }
                }
            }
            continue;
        }
        abort_requested.store(false, Ordering::SeqCst);
        run_prompt(&session, &terminal, line).await;
    }
    watcher.abort();
    shut_down(&session).await;
    Ok(0)
}

/// Opens a session whose permission prompts read from `lines`, and greets, naming the session
/// (and, on resume, which one it is and how long).
fn open(
    cli: &Cli,
    lines: &Arc<StdinLines>,
    terminal: &Arc<Terminal>,
) -> Result<Arc<InteractiveSession>, CliError> {
    let handler: Arc<dyn PermissionHandler> =
        Arc::new(StdinPermissionHandler::new(lines.clone(), terminal.clone()));
    // Progress is shown from the interactive events (see `run_prompt`); settings warnings come
    // as the session opens.
    let shown = terminal.clone();
    let opened = open_session(cli, Some(handler), move |event| {
        if let Some(line) = session_notice_line(&event) {
            shown.note(&line);
        }
    })?;
    let session = opened.session;
    let which = resumed_notice(cli, &session)
        .unwrap_or_else(|| format!("session {}", session.get_session_id()));
    eprintln!(
        "robota {} — {which} (/help for commands, Ctrl-C aborts a turn)",
        env!("CARGO_PKG_VERSION"),
    );
    for line in recovery_notice(&session) {
        eprintln!("{line}");
    }
    Ok(session)
}

/// Submits one prompt, streams its answer to stdout and its progress (tool calls, denials, a
/// spinner) to stderr until it ends.
async fn run_prompt(session: &InteractiveSession, terminal: &Arc<Terminal>, line: &str) {
    let subscription = session.subscribe_pull();
    let progress = Progress::new(terminal.clone(), true);
    if let Err(error) = session.submit(line, None, None).await {
        drop(progress);
        subscription.unsubscribe();
        eprintln!("robota: {error}");
        return;
    }
    stream_answer(session, terminal, &subscription, progress).await;
}

/// Streams the answer of the prompt running now to stdout and its progress to stderr until it
/// ends, then unsubscribes and says how it ended when that was not an answer.
async fn stream_answer(
    session: &InteractiveSession,
    terminal: &Arc<Terminal>,
    subscription: &Subscription,
    mut progress: Progress,
) {
    let finished = follow(session, subscription, |event| progress.on_event(event)).await;
    drop(progress);
    subscription.unsubscribe();
    terminal.finish_answer();
    match finished {
        PromptResult::Error { message, .. } => eprintln!("robota: {message}"),
        PromptResult::Refused { outcome } => {
            let explanation = outcome.refusal.and_then(|r| r.explanation);
            match explanation {
                Some(why) => eprintln!("robota: the model refused to answer: {why}"),
                None => eprintln!("robota: the model refused to answer"),
            }
        }
        PromptResult::Truncated { .. } => eprintln!(
            "robota: the answer was cut off at the output token limit; say \"continue\" to have \
             the model go on"
        ),
        PromptResult::Complete { .. }
        | PromptResult::Interrupted { .. }
        | PromptResult::Cancelled => {}
    }
}

/// Runs a command, asking its follow-up questions on stdin, and applies the effects the CLI
/// owns (exit, resume).
async fn run_command(
    session: &InteractiveSession,
    terminal: &Arc<Terminal>,
    lines: &StdinLines,
    name: &str,
    args: &str,
) -> Next {
    let mut name = name.to_owned();
    let mut args = args.to_owned();
    loop {
        // Subscribed first: a command can start a prompt (`/skill-name args` runs the skill's
        // instructions), whose answer then streams like a typed prompt's.
        let subscription = session.subscribe_pull();
        let result = match session.execute_command(&name, &args).await {
            Ok(result) => result,
            Err(error) => {
                subscription.unsubscribe();
                eprintln!("{error}");
                return Next::Continue;
            }
        };
        let Some(interaction) = result.interaction.clone() else {
            let next = apply(session, &result);
            // A user-run inline skill reports `mode: inject`; its prompt may even be done by now
            // (its events wait in the subscription).
            let started_prompt = result
                .data
                .as_ref()
                .is_some_and(|d| d.get("mode").and_then(|m| m.as_str()) == Some("inject"));
            if session.is_executing() || (result.success && started_prompt) {
                let progress = Progress::new(terminal.clone(), true);
                stream_answer(session, terminal, &subscription, progress).await;
            } else {
                subscription.unsubscribe();
            }
            return next;
        };
        subscription.unsubscribe();
        ask(&interaction.prompt);
        let Some(answer) = lines.next_line().await else {
            // End of input: the question goes unanswered and the REPL ends.
            return Next::Exit;
        };
        args = interaction.answer_args(&answer);
        name = interaction.command;
    }
}

/// Shows a command's follow-up question on stderr.
fn ask(prompt: &InteractionPrompt) {
    let mut stderr = std::io::stderr();
    match prompt {
        InteractionPrompt::Choice {
            prompt,
            options,
            description,
        } => {
            let _ = writeln!(stderr, "{prompt}");
            if let Some(description) = description {
                let _ = writeln!(stderr, "{description}");
            }
            let values: Vec<&str> = options.iter().map(|o| o.value.as_str()).collect();
            let _ = write!(stderr, "[{}]: ", values.join(" / "));
        }
        InteractionPrompt::Text {
            prompt,
            default,
            description,
            ..
        } => {
            let _ = writeln!(stderr, "{prompt}");
            if let Some(description) = description {
                let _ = writeln!(stderr, "{description}");
            }
            match default {
                Some(default) => {
                    let _ = write!(stderr, "[{default}]: ");
                }
                None => {
                    let _ = write!(stderr, ": ");
                }
            }
        }
    }
    let _ = stderr.flush();
}

/// Prints a command's message and applies the effects the CLI owns.
fn apply(session: &InteractiveSession, result: &CommandResult) -> Next {
    if !result.message.is_empty() {
        println!("{}", result.message);
    }
    let mut next = Next::Continue;
    for effect in &result.effects {
        match effect {
            CommandEffect::SessionExitRequested { .. } => return Next::Exit,
            CommandEffect::SessionResumeRequested { session_id } => {
                next = Next::Resume(session_id.clone());
            }
            CommandEffect::SessionPickerRequested => {
                eprintln!(
                    "(no session picker in this CLI: use /resume ID, or `robota --resume ID`)"
                );
            }
            // `plugin install|enable|…` and `reload-plugins`: plugins load when a session opens.
            CommandEffect::PluginRegistryReloadRequested => next = Next::Reload,
            // The session switched the model itself; the command's message says so.
            CommandEffect::ModelChangeRequested { .. } => {}
            // `provider use` and `language` saved the change in settings; the provider and the
            // system prompt are built when a session opens, so the session is reopened (its
            // conversation kept) to apply them now.
            CommandEffect::ProviderChangeRequested { profile } => {
                eprintln!("(reopening the session on provider profile `{profile}`)");
                next = Next::Reload;
            }
            // `reset` (confirmed): robota's user settings are moved aside, never deleted, and
            // the REPL ends so the next start uses the defaults.
            CommandEffect::SettingsResetRequested => {
                match reset_user_settings(session) {
                    Ok(Some(backup)) => eprintln!(
                        "User settings reset (the old file is kept as {}). Exiting.",
                        backup.display()
                    ),
                    Ok(None) => eprintln!("There were no user settings to reset. Exiting."),
                    Err(error) => {
                        eprintln!("robota: the user settings were not reset: {error}");
                        continue;
                    }
                }
                return Next::Exit;
            }
            CommandEffect::LanguageChangeRequested { language } => {
                eprintln!("(reopening the session to answer in `{language}`)");
                next = Next::Reload;
            }
            // Applied by the session itself (clear, rename) or nothing to do in a line REPL.
            _ => {}
        }
    }
    next
}

/// Moves robota's own user settings file (`~/.robota/settings.json`) aside, as
/// `settings.json.reset-<unix seconds>.bak` next to it; the backup's path, or `None` when there
/// was no file. `~/.claude/settings.json` belongs to Claude Code as well and is left alone.
fn reset_user_settings(
    session: &InteractiveSession,
) -> std::io::Result<Option<std::path::PathBuf>> {
    let cwd = session.session().cwd().to_path_buf();
    let Some(home) = robota::framework::config::SettingsOptions::from_env(cwd).home else {
        return Ok(None);
    };
    let file = home.join(".robota").join("settings.json");
    if !file.exists() {
        return Ok(None);
    }
    let seconds = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let backup = file.with_file_name(format!("settings.json.reset-{seconds}.bak"));
    std::fs::rename(&file, &backup)?;
    Ok(Some(backup))
}
