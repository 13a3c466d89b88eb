//! The data that crosses between commands and hosts: command descriptors, results, typed effects
//! and interactions. Everything here is plain serde data so bindings can mirror it one to one.
//!
//! Wire names follow DESIGN §3 (serde `tag = "type"`, snake_case) rather than the TypeScript
//! kebab-case spellings; the variant names keep the spec's meaning (`model-change-requested` is
//! [`CommandEffect::ModelChangeRequested`], and so on).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// How a command runs relative to the session's execution guard.
///
/// The `InteractiveSession` uses this to decide whether a command may run while a prompt is
/// executing: blocking commands take the same guard as prompts (and emit the same "thinking"
/// state); inline commands run at once and must not start model-backed long-running work.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CommandLifecycle {
    /// Runs immediately, even while a prompt executes; quick, no model calls.
    #[default]
    Inline,
    /// Runs in the foreground under the session's execution guard (e.g. `compact`).
    Blocking,
    /// Starts work that continues after the command returns.
    Background,
}

impl CommandLifecycle {
    /// True when the command must take the session's execution guard (wait for, and block,
    /// prompt execution) instead of running immediately.
    pub fn needs_execution_guard(self) -> bool {
        matches!(self, CommandLifecycle::Blocking)
    }
}

/// Where a command module came from. Used for collision reports and for plugin-qualified names.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum CommandSource {
    /// Shipped with robota or composed by the host product.
    Builtin,
    /// Defined by the project (e.g. `.robota/` in the working directory).
    Project,
    /// Defined in the user's home configuration.
    User,
    /// Registered by the host program (from a folder or as data), e.g. custom commands a
    /// binding's caller adds.
    Host,
    /// Contributed by an installed plugin; its commands are addressed as `<plugin>:<command>`.
    Plugin {
        /// The plugin's name, the part before `:` in qualified command names.
        plugin: String,
    },
}

impl CommandSource {
    /// `builtin`, `project`, `user`, `host` or `plugin`.
    pub fn kind(&self) -> &'static str {
        match self {
            CommandSource::Builtin => "builtin",
            CommandSource::Project => "project",
            CommandSource::User => "user",
            CommandSource::Host => "host",
            CommandSource::Plugin { .. } => "plugin",
        }
    }
}

impl std::fmt::Display for CommandSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CommandSource::Plugin { plugin } => write!(f, "plugin {plugin}"),
            other => f.write_str(other.kind()),
        }
    }
}

/// One subcommand shown for completion and help (`permissions plan`, `context auto`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubcommandDescriptor {
    /// The first argument word that selects this subcommand.
    pub name: String,
    /// One line for palettes and help.
    pub description: String,
}

impl SubcommandDescriptor {
    /// A subcommand with a name and a one-line description.
    pub fn new(name: impl Into<String>, description: impl Into<String>) -> Self {
        SubcommandDescriptor {
            name: name.into(),
            description: description.into(),
        }
    }
}

/// Metadata of one command: everything a host, palette or model needs except the handler.
///
/// Names are slash-free canonical ids (`help`, not `/help`); slash syntax belongs to host input
/// parsing and display (spec 000 "Command identity").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommandDescriptor {
    /// Canonical, slash-free name.
    pub name: String,
    /// One line for palettes, help and (when model-invocable) the projected tool.
    pub description: String,
    /// Other names that resolve to this command.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aliases: Vec<String>,
    /// Argument grammar shown after the name, e.g. `[mode]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub argument_hint: Option<String>,
    /// True when the model may run this command through its projected tool.
    #[serde(default)]
    pub model_invocable: bool,
    /// True when a user may run it (shown in palettes and help).
    #[serde(default = "default_true")]
    pub user_invocable: bool,
    /// Inline or blocking; see [`CommandLifecycle`].
    #[serde(default)]
    pub lifecycle: CommandLifecycle,
    /// First-argument subcommands for completion and help.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub subcommands: Vec<SubcommandDescriptor>,
}

fn default_true() -> bool {
    true
}

impl CommandDescriptor {
    /// A user-invocable, inline command with no aliases, hint or subcommands.
    pub fn new(name: impl Into<String>, description: impl Into<String>) -> Self {
        CommandDescriptor {
            name: name.into(),
            description: description.into(),
            aliases: Vec::new(),
            argument_hint: None,
            model_invocable: false,
            user_invocable: true,
            lifecycle: CommandLifecycle::Inline,
            subcommands: Vec::new(),
        }
    }

    /// Sets the argument hint.
    pub fn with_argument_hint(mut self, hint: impl Into<String>) -> Self {
        self.argument_hint = Some(hint.into());
        self
    }

    /// Adds an alias.
    pub fn with_alias(mut self, alias: impl Into<String>) -> Self {
        self.aliases.push(alias.into());
        self
    }

    /// Marks the command as runnable by the model through its projected tool.
    pub fn model_invocable(mut self) -> Self {
        self.model_invocable = true;
        self
    }

    /// Sets the lifecycle.
    pub fn with_lifecycle(mut self, lifecycle: CommandLifecycle) -> Self {
        self.lifecycle = lifecycle;
        self
    }

    /// Sets the subcommands.
    pub fn with_subcommands(mut self, subcommands: Vec<SubcommandDescriptor>) -> Self {
        self.subcommands = subcommands;
        self
    }
}

/// Optional SDK wiring a command module asks the session for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum SessionRequirement {
    /// Agent definitions and the shared background/subagent managers (spec 000 `agent-executor`).
    AgentExecutor,
    /// Skill discovery, the `Skill` tool and the skills list in the system prompt.
    Skills,
}

/// A host-applied side effect a command requests. Commands never perform host actions (exit the
/// process, open a picker, rewrite settings) themselves; they describe them and the host applies
/// them at its own boundary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum CommandEffect {
    /// Switch the session's model (spec `model-change-requested`).
    ModelChangeRequested {
        /// The requested model id.
        model_id: String,
    },
    /// Change the response language (spec `language-change-requested`).
    LanguageChangeRequested {
        /// Language code such as `en`.
        language: String,
    },
    /// Delete settings and shut down (spec `settings-reset-requested`).
    SettingsResetRequested,
    /// End the session (spec `session-exit-requested`).
    SessionExitRequested {
        /// Why the session ends, e.g. `user`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
        /// Text to show while exiting.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
    /// Restart the session (spec `session-restart-requested`).
    SessionRestartRequested {
        /// Why the session restarts.
        reason: String,
        /// Text to show.
        message: String,
    },
    /// Open the plugin UI (spec `plugin-tui-requested`).
    PluginTuiRequested,
    /// Reload plugin-provided command sources (spec `plugin-registry-reload-requested`).
    PluginRegistryReloadRequested,
    /// Show the saved-session picker (spec `session-picker-requested`).
    SessionPickerRequested,
    /// Resume a specific saved session. Not in spec 000, which only has the picker; added so a
    /// host can honour `resume <id>` without showing a picker.
    SessionResumeRequested {
        /// The saved session's id.
        session_id: String,
    },
    /// The session was renamed; update titles and persistence (spec `session-renamed`).
    SessionRenamed {
        /// The new, normalized name.
        name: String,
    },
    /// The conversation was cleared; clear rendered history too (spec
    /// `conversation-history-cleared`).
    ConversationHistoryCleared,
    /// A provider profile became the current one (`provider use`); the settings are saved, and
    /// a host restarts the session with it to use it now. Not in spec 000, whose provider
    /// command applies profiles on the next start only.
    ProviderChangeRequested {
        /// The profile's name (a key of `providers`).
        profile: String,
    },
    /// Patch the status line settings (spec `statusline-settings-patch`).
    StatuslineSettingsPatch {
        /// The settings patch, owned by the statusline command.
        patch: Value,
    },
}

/// One selectable option of a choice prompt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InteractionOption {
    /// The value submitted when chosen.
    pub value: String,
    /// Text shown for it.
    pub label: String,
    /// Optional help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

impl InteractionOption {
    /// An option whose label is its value.
    pub fn new(value: impl Into<String>) -> Self {
        let value = value.into();
        InteractionOption {
            label: value.clone(),
            value,
            description: None,
        }
    }
}

/// What a host renders to ask the user a follow-up question.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum InteractionPrompt {
    /// Pick one of several options.
    Choice {
        /// The question.
        prompt: String,
        /// The options, in display order.
        options: Vec<InteractionOption>,
        /// Optional help text under the question.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        description: Option<String>,
    },
    /// Type free text.
    Text {
        /// The question.
        prompt: String,
        /// Pre-filled value.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        default: Option<String>,
        /// Optional help text under the question.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        description: Option<String>,
        /// True for secrets: hosts should not echo the input.
        #[serde(default)]
        masked: bool,
    },
}

/// A follow-up question owned by a command and answered by the host.
///
/// TypeScript Robota stores a `submit` closure here; a closure cannot cross to Python, Node,
/// Swift or C, so the answer is routed back as data instead: the host runs `command` with
/// [`CommandInteraction::answer_args`] as arguments (through `execute_command`), which keeps the
/// command stateless and the interaction serializable.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommandInteraction {
    /// What to show.
    pub prompt: InteractionPrompt,
    /// The command that receives the answer.
    pub command: String,
    /// Arguments placed before the answer (may be empty).
    #[serde(default)]
    pub args_prefix: String,
}

impl CommandInteraction {
    /// The argument string to run [`CommandInteraction::command`] with, given the user's answer.
    pub fn answer_args(&self, answer: &str) -> String {
        let answer = answer.trim();
        if self.args_prefix.is_empty() {
            answer.to_string()
        } else if answer.is_empty() {
            self.args_prefix.clone()
        } else {
            format!("{} {answer}", self.args_prefix)
        }
    }
}

/// What running a command produced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommandResult {
    /// Human-readable text for the user (or the model, through a projected tool).
    pub message: String,
    /// False when the command failed or its arguments were wrong; `message` says how to fix it.
    pub success: bool,
    /// Command-specific structured payload for hosts (never used to smuggle side effects).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
    /// Host actions to apply, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub effects: Vec<CommandEffect>,
    /// A follow-up question the host should ask.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interaction: Option<CommandInteraction>,
}

impl CommandResult {
    /// A successful result with a message.
    pub fn ok(message: impl Into<String>) -> Self {
        CommandResult {
            message: message.into(),
            success: true,
            data: None,
            effects: Vec::new(),
            interaction: None,
        }
    }

    /// A failed result; `message` should say what went wrong and how to fix it.
    pub fn error(message: impl Into<String>) -> Self {
        CommandResult {
            success: false,
            ..CommandResult::ok(message)
        }
    }

    /// Attaches structured data.
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    /// Appends a host effect.
    pub fn with_effect(mut self, effect: CommandEffect) -> Self {
        self.effects.push(effect);
        self
    }

    /// Attaches a follow-up question.
    pub fn with_interaction(mut self, interaction: CommandInteraction) -> Self {
        self.interaction = Some(interaction);
        self
    }
}
