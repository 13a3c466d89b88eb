//! The two contracts a command touches: [`SystemCommand`] (what a command is) and
//! [`CommandHostContext`] (the narrow facade it may use), plus [`CommandModule`], the unit hosts
//! compose.
//!
//! The facade returns plain data, never session internals, so commands can be written and tested
//! without an `InteractiveSession`, and bindings can implement commands in their own language.

use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use super::types::{CommandDescriptor, CommandResult, CommandSource, SessionRequirement};
use crate::framework::agents::{AgentCatalog, SubagentReport, SubagentRequest};
use crate::framework::checkpoints::{CheckpointInspection, CheckpointSummary, RestoreReport};
use crate::framework::skills::{SkillActivationRequest, SkillCatalog};
use crate::message::HistoryEntry;
use crate::permissions::PermissionMode;

/// A facade operation that failed; the message is shown to the user as is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct CommandHostError {
    /// What failed and, where possible, how to fix it.
    pub message: String,
}

impl CommandHostError {
    /// An error with this message.
    pub fn new(message: impl Into<String>) -> Self {
        CommandHostError {
            message: message.into(),
        }
    }
}

/// How full the context window is, as the `context` command reports it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ContextStateSummary {
    /// Estimated tokens in the context now.
    pub used_tokens: u64,
    /// The model's context window.
    pub max_tokens: u64,
    /// `used_tokens / max_tokens` in percent (0–100+).
    pub used_percent: f64,
    /// Auto-compaction threshold in percent, or `None` when auto-compaction is off.
    pub auto_compact_percent: Option<f64>,
    /// Number of messages in the conversation.
    pub message_count: usize,
}

/// Token usage and estimated cost of the session so far.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct UsageSummary {
    /// Input tokens billed.
    pub input_tokens: u64,
    /// Output tokens billed.
    pub output_tokens: u64,
    /// Input tokens read from the prompt cache.
    pub cache_read_tokens: u64,
    /// Input tokens written to the prompt cache.
    pub cache_creation_tokens: u64,
    /// Estimated cost in USD, or `None` when the model has no known pricing.
    pub cost_usd: Option<f64>,
}

/// What a manual compaction did.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct CompactionSummary {
    /// Messages replaced by the summary.
    pub removed_messages: usize,
    /// Messages before compaction.
    pub messages_before: usize,
    /// Context use in percent before.
    pub context_before_percent: f64,
    /// Context use in percent after.
    pub context_after_percent: f64,
    /// The compaction was not run now but scheduled for when the current turn ends (the model
    /// asked for it mid-run); the other fields are then zero.
    #[serde(default)]
    pub scheduled: bool,
}

/// The command-facing facade over a session (spec 000 `ICommandHostContext`).
///
/// Implemented by the `InteractiveSession` (and by fakes in tests). Commands depend only on this,
/// never on the session, CLI state or UI, so the same command runs in every host.
#[async_trait]
pub trait CommandHostContext: Send + Sync {
    /// The session's id.
    fn session_id(&self) -> String;
    /// The session's display name, if it has one.
    fn session_name(&self) -> Option<String>;
    /// Renames the session (the session persists the name).
    async fn set_session_name(&self, name: &str) -> Result<(), CommandHostError>;
    /// Context window usage.
    fn context_state(&self) -> ContextStateSummary;
    /// Tokens and cost so far.
    fn usage_summary(&self) -> UsageSummary;
    /// The current permission mode.
    fn permission_mode(&self) -> PermissionMode;
    /// Changes the permission mode for the rest of the session.
    async fn set_permission_mode(&self, mode: PermissionMode) -> Result<(), CommandHostError>;
    /// Tools the user approved "for this session" at a permission prompt.
    fn session_approved_tools(&self) -> Vec<String> {
        Vec::new()
    }
    /// The model the session uses, if known.
    fn model(&self) -> Option<String>;
    /// Models the host offers for switching; empty means "any id is accepted".
    fn available_models(&self) -> Vec<String> {
        Vec::new()
    }
    /// Models known to work with the session's provider, with their context windows (the
    /// `model` command lists them). Empty by default.
    fn known_models(&self) -> Vec<super::models::KnownModel> {
        Vec::new()
    }
    /// Sends the next prompts to `model` and returns its context window (`Some`). Hosts that
    /// do not switch models themselves keep this default, `None`: the `model` command's
    /// `model-change-requested` effect is then theirs to apply.
    async fn switch_model(&self, model: &str) -> Result<Option<u64>, CommandHostError> {
        let _ = model;
        Ok(None)
    }
    /// The automatic-compaction policy of the live session; `None` for hosts without one.
    fn compaction_policy(&self) -> Option<crate::session::compaction_policy::CompactionPolicy> {
        None
    }
    /// Changes the automatic-compaction policy of the live session from its next prompt on
    /// (the `context auto` command). Hosts without one keep this default, which refuses.
    async fn set_compaction_policy(
        &self,
        policy: crate::session::compaction_policy::CompactionPolicy,
    ) -> Result<(), CommandHostError> {
        let _ = policy;
        Err(CommandHostError::new(
            "this host has no automatic compaction to change",
        ))
    }
    /// Commands available in this session, for `help`.
    fn commands(&self) -> Vec<CommandDescriptor>;
    /// Clears the conversation history held by the session.
    async fn clear_conversation(&self) -> Result<(), CommandHostError>;
    /// Compacts the conversation now, optionally focusing the summary on `instructions`.
    async fn compact(
        &self,
        instructions: Option<&str>,
    ) -> Result<CompactionSummary, CommandHostError>;
    /// The agents [`run_subagent`](Self::run_subagent) can start (read fresh, so a malformed
    /// definition file is reported here). The built-ins by default.
    fn agent_catalog(&self) -> Result<AgentCatalog, CommandHostError> {
        Ok(AgentCatalog::builtin())
    }
    /// Runs a subagent to its final answer. Hosts that cannot run subagents keep this default,
    /// which refuses with a message saying so.
    async fn run_subagent(
        &self,
        request: SubagentRequest,
    ) -> Result<SubagentReport, CommandHostError> {
        let _ = request;
        Err(CommandHostError::new(
            "this host does not run subagents (the agent command needs an InteractiveSession)",
        ))
    }
    /// Starts a subagent as a background task (the `Task` tool with `run_in_background`) and
    /// returns the task at once; its report becomes the task's output. Hosts that cannot run
    /// subagents keep this default, which refuses.
    async fn start_background_subagent(
        &self,
        request: SubagentRequest,
        description: Option<String>,
        origin: crate::tools::builtins::TaskOrigin,
    ) -> Result<crate::tools::builtins::BackgroundTaskInfo, CommandHostError> {
        let _ = (request, description, origin);
        Err(CommandHostError::new(
            "this host does not run background subagents (they need an InteractiveSession)",
        ))
    }
    /// True when the model runs the command (through its projected tool or the `Skill` tool),
    /// false when the user does. Commands that treat the two differently (skills) ask this.
    fn invoked_by_model(&self) -> bool {
        false
    }
    /// The session's background task manager (`/background`); hosts without one keep this
    /// default.
    fn background_tasks(&self) -> Option<crate::tools::builtins::BackgroundTasks> {
        None
    }
    /// The session's MCP servers with their status, tools and prompts (none by default).
    fn mcp_servers(&self) -> Vec<crate::mcp::McpServerInfo> {
        Vec::new()
    }
    /// Reconnects, enables or disables one MCP server of the session (`/mcp reconnect <server>`).
    /// Hosts without MCP servers keep this default: no server has that name.
    async fn control_mcp_server(
        &self,
        action: crate::mcp::McpServerAction,
        server: &str,
    ) -> Result<crate::mcp::McpServerInfo, crate::mcp::McpControlError> {
        let _ = action;
        Err(crate::mcp::McpControlError::UnknownServer {
            name: server.to_string(),
        })
    }
    /// The skills of this session. Hosts without skills keep this default, which says so.
    fn skill_catalog(&self) -> Result<SkillCatalog, CommandHostError> {
        Err(CommandHostError::new(
            crate::framework::skills::SKILLS_NOT_ENABLED,
        ))
    }
    /// The plugin manager of the session's user and project. Hosts without a home folder keep
    /// this default, which says so.
    fn plugin_manager(&self) -> Result<crate::framework::plugins::PluginManager, CommandHostError> {
        Err(CommandHostError::new(
            "plugins are not available: the session has no home folder (settings are off)",
        ))
    }
    /// The `name@marketplace` ids of the plugins loaded into this session.
    fn loaded_plugins(&self) -> Vec<String> {
        Vec::new()
    }
    /// Activates a skill: checks who may run it, loads its instructions and runs it inline or
    /// in a subagent, reporting a `skill_activation` event. The result's message is what the
    /// caller sees (for the model: the instructions, or the forked skill's answer).
    async fn activate_skill(
        &self,
        request: SkillActivationRequest,
    ) -> Result<CommandResult, CommandHostError> {
        let _ = request;
        Err(CommandHostError::new(
            "this host does not run skills (skills need an InteractiveSession)",
        ))
    }
    /// Runs the custom command `name` (its invocation name) with `args`: fills in the
    /// arguments, runs its `` !`command` `` snippets through the permission layer, and sends the
    /// prompt (the user's) or returns it (the model's; see
    /// [`invoked_by_model`](Self::invoked_by_model)).
    async fn run_custom_command(
        &self,
        name: &str,
        args: &str,
    ) -> Result<CommandResult, CommandHostError> {
        let _ = (name, args);
        Err(CommandHostError::new(
            "this host does not run custom commands (they need an InteractiveSession)",
        ))
    }
    /// The project directory (the session's cwd), where `.robota/` project data lives; `None`
    /// for hosts without one.
    fn project_dir(&self) -> Option<std::path::PathBuf> {
        None
    }
    /// The session's full history: chat messages and event entries.
    fn history(&self) -> Vec<HistoryEntry> {
        Vec::new()
    }
    /// Appends an event entry (never sent to the model) to the session's history, which is
    /// saved with the session and kept on resume.
    fn record_history_event(
        &self,
        event_type: &str,
        data: serde_json::Value,
    ) -> Result<(), CommandHostError> {
        let _ = (event_type, data);
        Err(CommandHostError::new(
            "this host keeps no session history (history events need an InteractiveSession)",
        ))
    }
    /// The session's edit checkpoints, oldest first.
    fn list_edit_checkpoints(&self) -> Result<Vec<CheckpointSummary>, CommandHostError> {
        Err(CommandHostError::new(NO_CHECKPOINTS))
    }
    /// One edit checkpoint with its files and restore/rollback ranges.
    fn inspect_edit_checkpoint(&self, id: &str) -> Result<CheckpointInspection, CommandHostError> {
        let _ = id;
        Err(CommandHostError::new(NO_CHECKPOINTS))
    }
    /// Restores files to how checkpoint `id`'s turn left them (later turns are undone);
    /// `including` also undoes that turn (rollback). Refused while a prompt runs.
    async fn restore_edit_checkpoint(
        &self,
        id: &str,
        including: bool,
    ) -> Result<RestoreReport, CommandHostError> {
        let _ = (id, including);
        Err(CommandHostError::new(NO_CHECKPOINTS))
    }
    /// The settings file `destination` (`localSettings`, `projectSettings`, `userSettings`) as
    /// JSON, `{}` when it does not exist yet. Hosts without settings files keep this default.
    fn read_settings(
        &self,
        destination: crate::session::SettingsDestination,
    ) -> Result<serde_json::Value, CommandHostError> {
        let _ = destination;
        Err(CommandHostError::new(NO_SETTINGS))
    }
    /// Applies a JSON merge patch (`null` removes a key) to the settings file `destination`,
    /// atomically, keeping its other keys; returns the file written. Takes effect for sessions
    /// created afterwards (and for whatever the host re-reads).
    async fn update_settings(
        &self,
        destination: crate::session::SettingsDestination,
        patch: serde_json::Value,
    ) -> Result<std::path::PathBuf, CommandHostError> {
        let _ = (destination, patch);
        Err(CommandHostError::new(NO_SETTINGS))
    }
}

/// What hosts without settings files answer.
const NO_SETTINGS: &str =
    "this host has no settings files (settings need an InteractiveSession with settings on)";

/// What hosts without edit checkpoints answer.
const NO_CHECKPOINTS: &str =
    "this host keeps no edit checkpoints (they need an InteractiveSession with a cwd)";

/// One executable command (spec 000 `ISystemCommand`): metadata plus a handler.
///
/// Implement this to add a command from a host or binding. `execute` receives everything after
/// the command name as `args` (already without the name and without a slash) and reports bad
/// arguments as a failed [`CommandResult`] with usage, never by panicking.
#[async_trait]
pub trait SystemCommand: Send + Sync {
    /// Name, description, aliases, lifecycle and so on.
    fn descriptor(&self) -> &CommandDescriptor;
    /// Runs the command.
    async fn execute(&self, ctx: &dyn CommandHostContext, args: &str) -> CommandResult;
}

/// A composition unit of commands (spec 000 `ICommandModule`).
#[derive(Clone)]
pub struct CommandModule {
    /// Module id, used in collision reports (e.g. `robota-command-session`).
    pub name: String,
    /// Where the module comes from; plugin modules get `<plugin>:<command>` names.
    pub source: CommandSource,
    /// The executable commands.
    pub commands: Vec<Arc<dyn SystemCommand>>,
    /// Optional SDK wiring the module needs.
    pub session_requirements: Vec<SessionRequirement>,
}

impl std::fmt::Debug for CommandModule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CommandModule")
            .field("name", &self.name)
            .field("source", &self.source)
            .field(
                "commands",
                &self
                    .commands
                    .iter()
                    .map(|c| c.descriptor().name.as_str())
                    .collect::<Vec<_>>(),
            )
            .field("session_requirements", &self.session_requirements)
            .finish()
    }
}

impl CommandModule {
    /// An empty module.
    pub fn new(name: impl Into<String>, source: CommandSource) -> Self {
        CommandModule {
            name: name.into(),
            source,
            commands: Vec::new(),
            session_requirements: Vec::new(),
        }
    }

    /// Adds a command.
    pub fn with_command(mut self, command: Arc<dyn SystemCommand>) -> Self {
        self.commands.push(command);
        self
    }

    /// Adds a session requirement.
    pub fn with_requirement(mut self, requirement: SessionRequirement) -> Self {
        self.session_requirements.push(requirement);
        self
    }

    /// The descriptors of its commands, derived from the executable commands so metadata never
    /// exists without a handler (spec 000 "Single owner rule").
    pub fn descriptors(&self) -> Vec<CommandDescriptor> {
        self.commands
            .iter()
            .map(|c| c.descriptor().clone())
            .collect()
    }
}
