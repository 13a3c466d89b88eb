//! `robota acp`: an Agent Client Protocol agent over stdio (crate `robota-server`'s
//! [`acp`](robota_server::acp)), for editors that drive agents this way (Zed's
//! `agent_servers`). This module turns flags into a session factory and runs the agent until the
//! editor closes stdin or a signal stops it.

use std::sync::Arc;

use clap::Parser;
use robota_server::acp::AcpAgent;

use crate::driver::{session_options, CliError};
use crate::serve::CliSessionFactory;
use crate::session_flags::SessionFlags;

/// Run robota as an Agent Client Protocol agent over stdio, for editors (Zed and others).
///
/// The editor starts `robota acp` and speaks ACP (JSON-RPC) on its stdin and stdout: it opens
/// sessions in its project folder (new, or a saved one loaded), sends prompts and gets the
/// answer, thoughts, tool calls (with diffs) and the todo plan as they happen, answers the
/// permission requests, cancels, and switches the mode (the permission modes: default,
/// acceptEdits, plan, dontAsk, bypassPermissions). Logs go to stderr.
#[derive(Debug, Clone, Parser)]
#[command(name = "robota acp", version)]
pub struct AcpArgs {
    /// How the sessions are configured.
    #[command(flatten)]
    pub session: SessionFlags,
}

/// Runs `robota acp` until the editor closes stdin or a signal stops it; returns the exit code.
pub async fn run(args: AcpArgs) -> Result<u8, CliError> {
    let factory = Arc::new(CliSessionFactory::new(args.session.to_cli()));
    // A configuration problem (bad settings file, missing key) shows now, on stderr, not as a
    // failed `session/new` in the editor.
    let cwd = std::env::current_dir()
        .map_err(|e| CliError::usage(format!("cannot read the current directory: {e}")))?;
    session_options(&factory.cli_for(&cwd), None, |_| {})?;
    let agent = AcpAgent::new(factory);
    let mut signals = crate::signals::Signals::listen()
        .map_err(|e| CliError::run(format!("cannot listen for signals: {e}")))?;
    tokio::select! {
        served = agent.serve_stdio() => served.map_err(|e| CliError::run(e.message))?,
        _ = signals.next() => agent.shutdown().await,
    }
    Ok(0)
}
