//! The session flags shared by `robota serve`, `robota mcp-serve` and `robota acp` (model, provider, settings,
//! permissions, store, MCP servers, sandbox), turned into the CLI's own arguments so sessions
//! open exactly as `robota -p` opens them.

use std::path::PathBuf;

use clap::Parser;

use crate::args::{Cli, PermissionPrompt};

/// How the sessions of a protocol host are configured.
#[derive(Debug, Clone, clap::Args)]
pub struct SessionFlags {
    /// The model id for every session (overrides settings).
    #[arg(long)]
    pub model: Option<String>,
    /// The settings provider profile to use.
    #[arg(long, value_name = "PROFILE")]
    pub provider: Option<String>,
    /// An extra settings file, applied above every settings layer of every session.
    #[arg(long, value_name = "FILE")]
    pub settings: Option<PathBuf>,
    /// Permission mode of new sessions: default, acceptEdits, plan, dontAsk, bypassPermissions.
    #[arg(long, value_name = "MODE")]
    pub permission_mode: Option<String>,
    /// Rules to allow without asking, comma or space separated.
    #[arg(long, value_name = "RULES", num_args = 1..)]
    pub allowed_tools: Vec<String>,
    /// Rules to deny, comma or space separated.
    #[arg(long, value_name = "RULES", num_args = 1..)]
    pub disallowed_tools: Vec<String>,
    /// Most model/tool rounds per prompt (0 = no cap).
    #[arg(long, value_name = "N")]
    pub max_turns: Option<u32>,
    /// Where sessions are saved (as `robota --session-store`): `file`, `sqlite:PATH`,
    /// `postgres://…` or `postgres-env:NAME`.
    #[arg(long, value_name = "STORE")]
    pub session_store: Option<String>,
    /// MCP servers every session gets (as `robota --mcp-config`); repeatable.
    #[arg(long = "mcp-config", value_name = "FILE_OR_JSON", num_args = 1..)]
    pub mcp_config: Vec<String>,
    /// Run Bash in the OS sandbox whatever the settings say.
    #[arg(long, conflicts_with = "no_sandbox")]
    pub sandbox: bool,
    /// Run Bash without the OS sandbox.
    #[arg(long)]
    pub no_sandbox: bool,
}

impl SessionFlags {
    /// These flags as the CLI's own arguments, with permission requests going to the host's
    /// handler (never a terminal prompt: stdio belongs to the protocol).
    pub fn to_cli(&self) -> Cli {
        let mut cli = Cli::parse_from(["robota"]);
        cli.model = self.model.clone();
        cli.provider = self.provider.clone();
        cli.settings = self.settings.clone();
        cli.permission_mode = self.permission_mode.clone();
        cli.allowed_tools = self.allowed_tools.clone();
        cli.disallowed_tools = self.disallowed_tools.clone();
        cli.max_turns = self.max_turns;
        cli.session_store = self.session_store.clone();
        cli.mcp_config = self.mcp_config.clone();
        cli.sandbox = self.sandbox;
        cli.no_sandbox = self.no_sandbox;
        cli.permission_prompt = PermissionPrompt::None;
        cli
    }
}
