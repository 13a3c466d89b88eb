//! `robota mcp-serve`: the agent as an MCP server (crate `robota-server`'s
//! [`mcp_serve`](robota_server::mcp_serve)), over stdio (the default: an MCP client starts it as
//! a child process) or streamable HTTP (`--http`, loopback, bearer token). This module turns
//! flags into the server's options and runs it until stdin closes or a signal stops it.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;

use clap::Parser;
use robota_server::mcp_serve::{AgentMcpServer, McpServeOptions, MCP_HTTP_PATH};
use robota_server::{generate_token, validate_token, ProjectRoots};
use tokio_util::sync::CancellationToken;

use crate::driver::{session_options, CliError};
use crate::serve::CliSessionFactory;
use crate::session_flags::SessionFlags;

/// The environment variable the HTTP token is read from when `--token-env` names none.
pub const DEFAULT_MCP_TOKEN_ENV: &str = "ROBOTA_MCP_TOKEN";

/// Serve the robota agent as an MCP server.
///
/// Tools: `prompt` ({prompt, session_id?, cwd?}) runs a prompt in a new session, or goes on in
/// the session `session_id` names (the structured result carries it), and answers the model's
/// answer; `command_<name>` ({args?, session_id?}) runs a session command (compact, context,
/// cost, …). Over stdio by default; with --http, streamable HTTP on
/// http://HOST:PORT/mcp, every request needing `Authorization: Bearer <token>` (the token is
/// read from the variable --token-env names, default ROBOTA_MCP_TOKEN, else generated and
/// printed on stderr). Nobody answers permission requests over MCP: allow tools with
/// --allowed-tools or --permission-mode; anything else is denied.
#[derive(Debug, Clone, Parser)]
#[command(name = "robota mcp-serve", version)]
pub struct McpServeArgs {
    /// Serve streamable HTTP instead of stdio.
    #[arg(long)]
    pub http: bool,
    /// With --http: the address to listen on (loopback by default).
    #[arg(long, default_value = "127.0.0.1", requires = "http")]
    pub host: IpAddr,
    /// With --http: the port (0 picks a free one; the chosen port is printed).
    #[arg(long, default_value_t = 8788, requires = "http")]
    pub port: u16,
    /// With --http: the environment variable holding the bearer token (at least 16 letters,
    /// digits, - _ . ~). Without it a token is generated and printed.
    #[arg(long, value_name = "NAME", requires = "http")]
    pub token_env: Option<String>,
    /// A folder sessions may work in (repeatable; default the current directory).
    #[arg(long = "root", value_name = "DIR")]
    pub roots: Vec<PathBuf>,
    /// Most sessions hosted at once.
    #[arg(long, default_value_t = 100)]
    pub max_sessions: usize,
    /// How the sessions are configured.
    #[command(flatten)]
    pub session: SessionFlags,
}

fn token(args: &McpServeArgs) -> Result<(String, bool), CliError> {
    let name = args.token_env.as_deref().unwrap_or(DEFAULT_MCP_TOKEN_ENV);
    match std::env::var(name) {
        Ok(token) => {
            validate_token(&token).map_err(|e| CliError::usage(format!("${name}: {e}")))?;
            Ok((token, false))
        }
        Err(_) if args.token_env.is_some() => Err(CliError::usage(format!(
            "--token-env {name}: the variable is not set (or not UTF-8)"
        ))),
        Err(_) => Ok((generate_token(), true)),
    }
}

/// Runs `robota mcp-serve` until the client closes stdin (stdio) or a signal stops it (HTTP);
/// returns the exit code.
pub async fn run(args: McpServeArgs) -> Result<u8, CliError> {
    let roots = if args.roots.is_empty() {
        vec![std::env::current_dir()
            .map_err(|e| CliError::usage(format!("cannot read the current directory: {e}")))?]
    } else {
        args.roots.clone()
    };
    let roots = ProjectRoots::new(&roots).map_err(|e| CliError::usage(format!("--root: {e}")))?;
    let factory = Arc::new(CliSessionFactory::new(args.session.to_cli()));
    // A configuration problem (bad settings file, missing key) shows now, not at the first call.
    session_options(&factory.cli_for(roots.default_root()), None, |_| {})?;
    let server = AgentMcpServer::new(
        McpServeOptions {
            roots,
            max_sessions: args.max_sessions.max(1),
        },
        factory,
    );
    let mut signals = crate::signals::Signals::listen()
        .map_err(|e| CliError::run(format!("cannot listen for signals: {e}")))?;
    if !args.http {
        tokio::select! {
            served = server.serve_stdio() => served.map_err(|e| CliError::run(e.message))?,
            _ = signals.next() => {}
        }
        server.shutdown().await;
        return Ok(0);
    }
    let (token, generated) = token(&args)?;
    let shutdown = CancellationToken::new();
    let (addr, task) = server
        .serve_http(
            SocketAddr::new(args.host, args.port),
            token.clone(),
            shutdown.clone(),
        )
        .await
        .map_err(|e| CliError::usage(e.message))?;
    eprintln!("robota mcp-serve: listening on http://{addr}");
    eprintln!("robota mcp-serve: MCP endpoint: http://{addr}{MCP_HTTP_PATH}");
    if generated {
        eprintln!("robota mcp-serve: token: {token}");
    }
    if !args.host.is_loopback() {
        eprintln!(
            "robota mcp-serve: warning: listening on {} — reachable from the network; anyone \
             with the token can run tools in the project roots",
            args.host
        );
    }
    let signal = signals.next().await;
    eprintln!(
        "robota mcp-serve: {}: shutting down",
        signal.map_or("stop", |s| s.name())
    );
    shutdown.cancel();
    server.shutdown().await;
    let _ = tokio::time::timeout(std::time::Duration::from_secs(10), task).await;
    Ok(0)
}
