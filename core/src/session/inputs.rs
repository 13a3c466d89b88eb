//! What a [`Session`](super::Session) is built from once its settings and project are resolved:
//! [`ResolvedSettings`] (permission rules with their sources, hooks, environment, workspace
//! directories, compaction policy, sandbox) and, when the project supplies the system prompt, a
//! [`ProjectPromptBuilder`]. The framework's assembly produces them from settings files and the
//! project folder; the session layer reads no settings and walks no directories itself.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::compaction_policy::CompactionPolicy;
use super::events::SessionWarning;
use super::loaded_context::{ContextWarning, LoadedContextFile};
use super::permission_handler::SettingsTarget;
use crate::hooks::HooksConfig;
use crate::permissions::{PermissionMode, RuleSet};
use crate::sandbox::SandboxSettings;

/// The settings of a session, interpreted: plain values the session applies as they are.
pub(crate) struct ResolvedSettings {
    /// The home directory for user-level files (`~/` rules, the user settings file).
    pub(crate) home: Option<PathBuf>,
    /// Settings, rule and hook warnings, reported as `settings_warning` events.
    pub(crate) warnings: Vec<SessionWarning>,
    /// Every layer's permission rules, each with its source.
    pub(crate) rules: RuleSet,
    /// The settings' `permissions.defaultMode`, when set.
    pub(crate) default_mode: Option<PermissionMode>,
    /// `permissions.disableBypassPermissionsMode`.
    pub(crate) bypass_disabled: bool,
    /// The merged hooks (empty with `disableAllHooks`).
    pub(crate) hooks: HooksConfig,
    /// The settings' `env` for tool and hook processes.
    pub(crate) env: BTreeMap<String, String>,
    /// `permissions.additionalDirectories`.
    pub(crate) additional_directories: Vec<PathBuf>,
    /// Paths that always need approval to write (settings files, hook scripts).
    pub(crate) sensitive_paths: Vec<PathBuf>,
    /// The settings files "allow always" can write to.
    pub(crate) settings_targets: Vec<SettingsTarget>,
    /// The automatic-compaction policy (`autoCompactThreshold`).
    pub(crate) compaction: CompactionPolicy,
    /// The settings' `sandbox` object.
    pub(crate) sandbox: SandboxSettings,
    /// MCP servers from settings and the project's `.mcp.json`, to start.
    pub(crate) mcp_servers: Vec<crate::mcp::McpServerEntry>,
    /// MCP servers left out (disabled, or waiting for approval).
    pub(crate) mcp_skipped: Vec<crate::mcp::McpSkippedServer>,
    /// The settings' `sessionStore`: where a session saved "in the project" goes.
    pub(crate) session_store: Option<super::store_choice::StoreChoice>,
}

/// What the system prompt's environment section states that only the session knows once it is
/// built: the model and the permission mode it starts in.
pub(crate) struct PromptFacts {
    /// The provider's model.
    pub(crate) model: String,
    /// The session's permission mode.
    pub(crate) permission_mode: PermissionMode,
}

/// The system prompt built from the project folder, with what the session reports about it.
pub(crate) struct ProjectPrompt {
    /// The system prompt.
    pub(crate) system_prompt: String,
    /// The context files read (reported in the `context_loaded` event).
    pub(crate) files: Vec<LoadedContextFile>,
    /// Context files that could not be read.
    pub(crate) warnings: Vec<ContextWarning>,
    /// The project's "Compact Instructions", which focus compaction summaries.
    pub(crate) compact_instructions: Option<String>,
    /// The instruction files' sections of the prompt (AGENTS.md, CLAUDE.md), for subagents.
    pub(crate) instructions: Option<String>,
}

/// Builds the project's system prompt once the session knows its [`PromptFacts`].
pub(crate) type ProjectPromptBuilder = Box<dyn FnOnce(&PromptFacts) -> ProjectPrompt + Send>;
