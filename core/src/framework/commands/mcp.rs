//! The `mcp` command: the session's MCP servers with their status (connected, failed with the
//! reason, disabled or waiting for approval), where each was defined, and its tools and prompts;
//! `reconnect <server>`, `enable <server>` and `disable <server>` for this session; `auth <server>`
//! (OAuth authorization of a remote server, the browser step through the host) and
//! `logout <server>` (forgets its stored tokens).

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::json;

use super::host::{CommandHostContext, CommandModule, SystemCommand};
use super::types::{CommandDescriptor, CommandResult, CommandSource};
use crate::mcp::{McpServerAction, McpServerInfo, McpServerStatus};

/// The command's name.
pub const MCP_COMMAND: &str = "mcp";

/// The module holding the `mcp` command (part of [`default_command_modules`](super::default_command_modules)).
pub fn mcp_command_module() -> CommandModule {
    CommandModule::new("robota-command-mcp", CommandSource::Builtin)
        .with_command(Arc::new(McpCommand::new()))
}

/// `mcp`: lists the MCP servers.
pub struct McpCommand {
    descriptor: CommandDescriptor,
}

impl McpCommand {
    /// The command.
    pub fn new() -> Self {
        McpCommand {
            descriptor: CommandDescriptor::new(
                MCP_COMMAND,
                "List MCP servers with their status, tools and prompts; reconnect, enable, \
                 disable, authorize (auth) or sign out of (logout) one",
            ),
        }
    }
}

impl Default for McpCommand {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait]
impl SystemCommand for McpCommand {
    fn descriptor(&self) -> &CommandDescriptor {
        &self.descriptor
    }

    async fn execute(&self, ctx: &dyn CommandHostContext, args: &str) -> CommandResult {
        let mut words = args.split_whitespace();
        let first = words.next().unwrap_or("");
        if let Some(action) = McpServerAction::parse(first) {
            let (Some(server), None) = (words.next(), words.next()) else {
                return CommandResult::error(format!("Usage: /mcp {first} <server>"));
            };
            return control(ctx, action, server).await;
        }
        if !matches!(first, "" | "list") || words.next().is_some() {
            return CommandResult::error(format!("Unknown argument: {}. {USAGE}", args.trim()));
        }
        let servers = ctx.mcp_servers();
        if servers.is_empty() {
            return CommandResult::ok(
                "No MCP servers are configured (add them to .mcp.json, `mcpServers` in \
                 settings, or the session options).",
            )
            .with_data(json!({ "servers": [] }));
        }
        let mut lines = vec![format!("MCP servers ({}):", servers.len())];
        for server in &servers {
            lines.push(format!("  {}", describe(server)));
            for tool in &server.tools {
                lines.push(format!("    {tool}"));
            }
            for prompt in &server.prompts {
                lines.push(format!("    /mcp__{}__{prompt} (prompt)", server.name));
            }
        }
        CommandResult::ok(lines.join("\n")).with_data(json!({ "servers": servers }))
    }
}

const USAGE: &str = "Usage: /mcp [list] | /mcp reconnect|enable|disable|auth|logout <server>";

/// `name (transport, origin) — state`.
fn describe(server: &McpServerInfo) -> String {
    let state = match &server.status {
        McpServerStatus::Pending => "pending".to_string(),
        McpServerStatus::Connected => format!(
            "connected, {} tool{}",
            server.tools.len(),
            if server.tools.len() == 1 { "" } else { "s" }
        ),
        McpServerStatus::Failed { reason } => format!("failed: {reason}"),
        McpServerStatus::NeedsAuth { reason } => format!("needs authorization: {reason}"),
        McpServerStatus::Disabled { reason } => format!("disabled: {reason}"),
    };
    format!(
        "{} ({}, {}) — {state}",
        server.name,
        server.transport,
        server.origin.describe()
    )
}

/// `/mcp reconnect|enable|disable <server>`: the server's new state, or the typed error in
/// `data.error`.
async fn control(
    ctx: &dyn CommandHostContext,
    action: McpServerAction,
    server: &str,
) -> CommandResult {
    match ctx.control_mcp_server(action, server).await {
        Ok(info) => CommandResult::ok(describe(&info))
            .with_data(json!({ "action": action, "server": info })),
        Err(error) => CommandResult::error(error.to_string())
            .with_data(json!({ "action": action, "error": error })),
    }
}
