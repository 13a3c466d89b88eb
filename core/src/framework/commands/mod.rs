//! The command API (spec 000 "Command API Layer", "System Commands", "Slash Command Registry"):
//! what a command is ([`SystemCommand`]), the narrow facade it runs against
//! ([`CommandHostContext`]), what it returns ([`CommandResult`] with typed [`CommandEffect`]s and
//! [`CommandInteraction`]s), the [`CommandRegistry`] a session composes from [`CommandModule`]s,
//! model-invocable commands projected as tools ([`CommandTool`]), and the first built-in modules.
//!
//! Commands never see the session: they read and change state through [`CommandHostContext`]
//! and describe host actions (exit, pickers, model switches) as effects, so the same command runs
//! in the CLI, in a binding or in a test. Parsing `/name args` input belongs to hosts; here names
//! are slash-free and `args` is the rest of the line.
//!
//! Custom slash commands (`.claude/commands/**/*.md`, a host's, a plugin's) are in [`custom`].
//!
//! Lifecycle: [`CommandLifecycle::Blocking`] commands share the session's execution guard with
//! prompts; [`CommandLifecycle::Inline`] ones run at once and must not call the model.

pub mod agent;
pub mod builtins;
pub mod custom;
mod host;
pub mod mcp;
pub mod models;
pub mod provider;
mod registry;
pub mod settings_commands;
mod tool;
mod types;

pub use agent::{agent_command_module, parse_agent_args, AgentCommand, AGENT_COMMAND};
pub use builtins::{builtin_command_modules, default_command_modules};
pub use host::{
    CommandHostContext, CommandHostError, CommandModule, CompactionSummary, ContextStateSummary,
    SystemCommand, UsageSummary,
};
pub use mcp::{mcp_command_module, McpCommand, MCP_COMMAND};
pub use provider::{provider_command_module, ProviderCommand, PROVIDER_COMMAND};
pub use registry::{
    CommandEntry, CommandError, CommandRegistry, CommandRegistryError, RegisteredCommand,
};
pub use tool::{command_tool_name, project_command_tools, CommandTool, COMMAND_TOOL_PREFIX};
pub use types::{
    CommandDescriptor, CommandEffect, CommandInteraction, CommandLifecycle, CommandResult,
    CommandSource, InteractionOption, InteractionPrompt, SessionRequirement, SubcommandDescriptor,
};
