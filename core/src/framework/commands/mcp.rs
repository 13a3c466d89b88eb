//! The `mcp` command: the session's MCP servers with their status (connected, failed with the
//! reason, disabled or waiting for approval), where each was defined, and its tools and prompts.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::json;

use super::host::{CommandHostContext, CommandModule, SystemCommand};
use super::types::{CommandDescriptor, CommandResult, CommandSource};
use crate::mcp::McpServerStatus;

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
                "List MCP servers with their status, tools and prompts",
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
        if !matches!(args.trim(), "" | "list") {
            return CommandResult::error(format!(
                "Unknown argument: {}. Usage: /mcp [list]",
                args.trim()
            ));
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
            let state = match &server.status {
                McpServerStatus::Pending => "pending".to_string(),
                McpServerStatus::Connected => format!(
                    "connected, {} tool{}",
                    server.tools.len(),
                    if server.tools.len() == 1 { "" } else { "s" }
                ),
                McpServerStatus::Failed { reason } => format!("failed: {reason}"),
                McpServerStatus::Disabled { reason } => format!("disabled: {reason}"),
            };
            lines.push(format!(
                "  {} ({}, {}) — {state}",
                server.name,
                server.transport,
                server.origin.describe()
            ));
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
