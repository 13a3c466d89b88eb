//! `robota serve`: hosts sessions over HTTP + Server-Sent Events and WebSocket (crate
//! `robota-server`), with the web monitor at `/`. This module only turns flags into the server's
//! options and a session factory (sessions open the way `robota -p` opens one, in the folder the
//! client asks for) and runs until SIGINT/SIGTERM, then shuts down gracefully.

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use robota::framework::interactive::InteractiveSession;
use robota::session::store_choice::StoreChoice;
use robota::session::PermissionResponse;
use robota_remote::wire::{SavedSession, SavedSessionList};
use robota_server::{
    generate_token, validate_token, OpenRequest, ProjectRoots, ServeError, Server, ServerOptions,
    SessionFactory,
};

use crate::args::Cli;
use crate::driver::{session_options, CliError};
use crate::session_flags::SessionFlags;

/// The environment variable the token is read from when `--token-env` names none.
pub const DEFAULT_TOKEN_ENV: &str = "ROBOTA_SERVE_TOKEN";

/// Serve robota sessions over HTTP (JSON + Server-Sent Events) and WebSocket, with a live web
/// monitor at `/`.
///
/// Clients open sessions (`POST /v1/sessions`) in a folder inside a project root, submit
/// prompts, follow events (resumable with Last-Event-ID), answer permission requests, run
/// commands, and close sessions. Every `/v1` route but `/v1/health` needs
/// `Authorization: Bearer <token>`; the token is read from the environment variable named by
/// --token-env (default ROBOTA_SERVE_TOKEN), else generated and printed. The protocol is
/// described at GET /v1/openapi.json. SIGINT/SIGTERM stop it gracefully: running prompts get
/// --shutdown-grace seconds to finish, then every session is saved.
#[derive(Debug, Clone, Parser)]
#[command(name = "robota serve", version)]
pub struct ServeArgs {
    /// The address to listen on. Loopback by default; anything else makes the sessions (and
    /// the tools they run) reachable from the network by whoever has the token.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: IpAddr,
    /// The port (0 picks a free one; the chosen port is printed).
    #[arg(long, default_value_t = 8787)]
    pub port: u16,
    /// A folder sessions may work in (repeatable; default the current directory). A session's
    /// folder must be a root or inside one, symlinks resolved.
    #[arg(long = "root", value_name = "DIR")]
    pub roots: Vec<PathBuf>,
    /// The environment variable holding the bearer token (at least 16 characters of
    /// letters, digits, - _ . ~). Without it a token is generated and printed.
    #[arg(long, value_name = "NAME")]
    pub token_env: Option<String>,
    /// An origin browsers may call the API from (repeatable). None by default: CORS closed.
    #[arg(long = "cors-origin", value_name = "ORIGIN")]
    pub cors_origins: Vec<String>,
    /// The largest request body or WebSocket message, in bytes.
    #[arg(long, default_value_t = 1024 * 1024)]
    pub max_request_bytes: usize,
    /// Events kept per session for clients that reconnect (Last-Event-ID).
    #[arg(long, default_value_t = 4096)]
    pub event_buffer: usize,
    /// Seconds a permission request waits for an answer before --permission-default applies.
    #[arg(long, default_value_t = 300)]
    pub permission_timeout: u64,
    /// The answer to a permission request nobody answered in time: `deny` or `allow` (once).
    #[arg(long, default_value = "deny", value_parser = ["deny", "allow"])]
    pub permission_default: String,
    /// Seconds running prompts get to finish on shutdown before they are aborted.
    #[arg(long, default_value_t = 30)]
    pub shutdown_grace: u64,
    /// Most sessions hosted at once.
    #[arg(long, default_value_t = 1000)]
    pub max_sessions: usize,
    /// The session flags (model, provider, settings, permissions, store, MCP, sandbox), for
    /// every session.
    #[command(flatten)]
    pub session: SessionFlags,
}

/// Opens sessions the way the CLI does, in the folder a client asked for (also used by
/// `robota mcp-serve` and `robota acp`).
pub(crate) struct CliSessionFactory {
    base: Cli,
}

impl CliSessionFactory {
    /// A factory opening sessions with `base`'s flags.
    pub(crate) fn new(base: Cli) -> Self {
        CliSessionFactory { base }
    }

    /// `base` in the folder `cwd`.
    pub(crate) fn cli_for(&self, cwd: &Path) -> Cli {
        let mut cli = self.base.clone();
        cli.cwd = Some(cwd.to_path_buf());
        cli
    }
}

fn usage_error(error: CliError) -> ServeError {
    ServeError::invalid(error.message)
}

impl SessionFactory for CliSessionFactory {
    fn open(&self, request: OpenRequest) -> Result<Arc<InteractiveSession>, ServeError> {
        let mut cli = self.cli_for(&request.cwd);
        cli.resume = request.resume;
        cli.fork = request.fork;
        let (mut options, _) =
            session_options(&cli, Some(request.permission_handler), |_| {}).map_err(usage_error)?;
        options.session.builtin_tools.host_files = request.host_files;
        options.session.mcp_servers.extend(request.mcp_servers);
        Ok(InteractiveSession::new(options)?)
    }

    fn list_saved(&self, cwd: &Path) -> Result<SavedSessionList, ServeError> {
        let cli = self.cli_for(cwd);
        let choice = match &cli.session_store {
            Some(argument) => StoreChoice::from_argument(argument)
                .map_err(|e| ServeError::invalid(format!("--session-store: {e}")))?,
            None => StoreChoice::File,
        };
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let store = choice
            .open(cwd, home.as_deref())
            .map_err(|e| ServeError::internal(format!("cannot open the session store: {e}")))?;
        let listing = store
            .list()
            .map_err(|e| ServeError::internal(format!("cannot list saved sessions: {e}")))?;
        Ok(SavedSessionList {
            cwd: cwd.display().to_string(),
            sessions: listing
                .sessions
                .into_iter()
                .map(|summary| SavedSession {
                    id: summary.id.clone(),
                    name: summary.name.clone(),
                    summary: serde_json::to_value(&summary).unwrap_or_default(),
                })
                .collect(),
            problems: listing.problems.iter().map(|p| p.to_string()).collect(),
        })
    }
}

fn token(args: &ServeArgs) -> Result<(String, bool), CliError> {
    let name = args.token_env.as_deref().unwrap_or(DEFAULT_TOKEN_ENV);
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

/// Runs `robota serve` until a signal stops it; returns the exit code.
pub async fn run(args: ServeArgs) -> Result<u8, CliError> {
    let (token, generated) = token(&args)?;
    let roots = if args.roots.is_empty() {
        vec![std::env::current_dir()
            .map_err(|e| CliError::usage(format!("cannot read the current directory: {e}")))?]
    } else {
        args.roots.clone()
    };
    let roots = ProjectRoots::new(&roots).map_err(|e| CliError::usage(format!("--root: {e}")))?;
    let mut options = ServerOptions::new(token.clone(), roots);
    options.bind = SocketAddr::new(args.host, args.port);
    options.cors_origins = args.cors_origins.clone();
    options.max_request_bytes = args.max_request_bytes.max(1024);
    options.event_buffer = args.event_buffer.max(1);
    options.permission_timeout = Duration::from_secs(args.permission_timeout);
    options.permission_default = if args.permission_default == "allow" {
        PermissionResponse::AllowOnce
    } else {
        PermissionResponse::deny("nobody answered the permission request in time")
    };
    options.shutdown_grace = Duration::from_secs(args.shutdown_grace);
    options.max_sessions = args.max_sessions.max(1);
    let root_list = options
        .roots
        .roots()
        .iter()
        .map(|r| r.display().to_string())
        .collect::<Vec<_>>()
        .join(", ");
    let factory = Arc::new(CliSessionFactory {
        base: args.session.to_cli(),
    });
    // A configuration problem (bad settings file, missing key) shows now, not at the first
    // client's request.
    session_options(&factory.cli_for(options.roots.default_root()), None, |_| {})?;
    let server = Server::new(options, Some(factory));
    let addr = server
        .serve()
        .await
        .map_err(|e| CliError::usage(e.to_string()))?;
    eprintln!("robota serve: listening on http://{addr}");
    eprintln!("robota serve: project roots: {root_list}");
    if generated {
        eprintln!("robota serve: token: {token}");
        eprintln!("robota serve: web monitor: http://{addr}/#token={token}");
    } else {
        eprintln!("robota serve: web monitor: http://{addr}/#token=<your token>");
    }
    if !args.host.is_loopback() {
        eprintln!(
            "robota serve: warning: listening on {} — reachable from the network; anyone with \
             the token can run tools in the project roots",
            args.host
        );
    }
    let mut signals = crate::signals::Signals::listen()
        .map_err(|e| CliError::run(format!("cannot listen for signals: {e}")))?;
    let signal = signals.next().await;
    eprintln!(
        "robota serve: {}: shutting down (running prompts get {} s to finish)",
        signal.map_or("stop", |s| s.name()),
        args.shutdown_grace
    );
    server.shutdown().await;
    eprintln!("robota serve: stopped; every session was saved");
    Ok(0)
}
