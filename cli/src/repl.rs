//! Interactive mode: a line-based REPL. Prompts stream their answer; `/name args` lines run
//! commands from the core command registry over a minimal [`CommandHostContext`]; permission
//! prompts are asked inline; Ctrl-C aborts the running turn and a second one exits.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use async_trait::async_trait;

use robota::engine::EngineEvent;
use robota::framework::commands::{
    builtin_command_modules, CommandDescriptor, CommandEffect, CommandHostContext,
    CommandHostError, CommandRegistry, CompactionSummary, ContextStateSummary, UsageSummary,
};
use robota::hooks::SessionEndReason;
use robota::permissions::PermissionMode;
use robota::session::{PermissionHandler, Session, SessionEvent};

use crate::args::Cli;
use crate::driver::{open_session, CliError};
use crate::prompt::{StdinLines, StdinPermissionHandler};
use crate::EXIT_INTERRUPTED;

/// Runs the REPL until end of input, `/exit` or a second Ctrl-C; returns the exit code.
pub async fn run_repl(cli: &Cli) -> Result<u8, CliError> {
    let lines = StdinLines::spawn();
    let handler: Arc<dyn PermissionHandler> = Arc::new(StdinPermissionHandler::new(lines.clone()));
    let opened = open_session(cli, Some(handler), |event| match event {
        SessionEvent::Engine(EngineEvent::TextDelta { text }) => {
            let mut stdout = std::io::stdout().lock();
            let _ = write!(stdout, "{text}");
            let _ = stdout.flush();
        }
        other => {
            if let Some(line) = crate::output::describe(&other) {
                eprintln!("{line}");
            }
        }
    })?;
    let session = opened.session;
    let registry = CommandRegistry::with_modules(builtin_command_modules())
        .map_err(|error| CliError::run(format!("cannot load the commands: {error}")))?;
    let host = SessionHost {
        session: session.clone(),
        commands: registry.descriptors(),
    };
    eprintln!(
        "robota {} — session {} (/help for commands, Ctrl-C aborts a turn)",
        env!("CARGO_PKG_VERSION"),
        session.session_id()
    );

    // First Ctrl-C during a turn aborts it; a second one (or one at the prompt) exits.
    let abort_requested = Arc::new(AtomicBool::new(false));
    let watcher = {
        let session = session.clone();
        let abort_requested = abort_requested.clone();
        tokio::spawn(async move {
            while tokio::signal::ctrl_c().await.is_ok() {
                if session.is_running() && !abort_requested.swap(true, Ordering::SeqCst) {
                    session.abort();
                    eprintln!("\n(interrupted — Ctrl-C again to exit)");
                } else {
                    eprintln!();
                    std::process::exit(i32::from(EXIT_INTERRUPTED));
                }
            }
        })
    };

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
            match registry.execute(&host, name, args).await {
                Ok(result) => {
                    if !result.message.is_empty() {
                        println!("{}", result.message);
                    }
                    if result
                        .effects
                        .iter()
                        .any(|e| matches!(e, CommandEffect::SessionExitRequested { .. }))
                    {
                        break;
                    }
                }
                Err(error) => eprintln!("{error}"),
            }
            continue;
        }
        abort_requested.store(false, Ordering::SeqCst);
        match session.run(line.to_owned()).await {
            Ok(outcome) => {
                println!();
                if let Some(error) = outcome.error {
                    eprintln!("robota: {error}");
                }
            }
            Err(error) => eprintln!("robota: {error}"),
        }
    }
    watcher.abort();
    session.shutdown(SessionEndReason::Other).await;
    Ok(0)
}

/// The narrow view of the session that commands get.
struct SessionHost {
    session: Arc<Session>,
    commands: Vec<CommandDescriptor>,
}

#[async_trait]
impl CommandHostContext for SessionHost {
    fn session_id(&self) -> String {
        self.session.session_id().to_owned()
    }

    fn session_name(&self) -> Option<String> {
        self.session.get_name()
    }

    async fn set_session_name(&self, name: &str) -> Result<(), CommandHostError> {
        self.session.set_name(Some(name.to_owned()));
        Ok(())
    }

    fn context_state(&self) -> ContextStateSummary {
        let state = self.session.context_state();
        ContextStateSummary {
            used_tokens: state.used_tokens,
            max_tokens: state.max_tokens,
            used_percent: state.ratio * 100.0,
            auto_compact_percent: None,
            message_count: self.session.messages().len(),
        }
    }

    fn usage_summary(&self) -> UsageSummary {
        let totals = self.session.usage();
        UsageSummary {
            input_tokens: totals.usage.input_tokens,
            output_tokens: totals.usage.output_tokens,
            cache_read_tokens: totals.usage.cache_read_input_tokens,
            cache_creation_tokens: totals.usage.cache_creation_input_tokens,
            cost_usd: totals.cost_usd,
        }
    }

    fn permission_mode(&self) -> PermissionMode {
        self.session.permission_mode()
    }

    async fn set_permission_mode(&self, mode: PermissionMode) -> Result<(), CommandHostError> {
        self.session
            .set_permission_mode(mode)
            .map_err(|error| CommandHostError::new(error.to_string()))
    }

    fn session_approved_tools(&self) -> Vec<String> {
        self.session.session_allowed_rules()
    }

    fn model(&self) -> Option<String> {
        None
    }

    fn commands(&self) -> Vec<CommandDescriptor> {
        self.commands.clone()
    }

    async fn clear_conversation(&self) -> Result<(), CommandHostError> {
        // The plain Session has no history reset; the InteractiveSession switch brings one.
        Err(CommandHostError::new(
            "/clear is not available in this CLI yet: start a new `robota` instead",
        ))
    }

    async fn compact(
        &self,
        _instructions: Option<&str>,
    ) -> Result<CompactionSummary, CommandHostError> {
        Err(CommandHostError::new(
            "/compact is not available in this CLI yet (automatic compaction still runs)",
        ))
    }
}
