//! How a [`Session`](super::Session) is assembled: [`SessionOptions`] and where its settings come
//! from ([`SessionSettings`]).

use std::any::Any;
use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::events::SessionEventCallback;
use super::permission_handler::PermissionHandler;
use super::store::SessionStore;
use super::usage::PriceTable;
use crate::engine::{EngineConfig, ExecutionEventCallback};
use crate::hooks::{HookCallback, HookEvent, OnHookFailure};
use crate::permissions::PermissionMode;
use crate::provider::Provider;
use crate::tools::builtins::BuiltinToolsConfig;
use crate::tools::ToolRegistry;

/// Where the session's settings come from.
#[derive(Debug, Clone, Default)]
pub enum SessionSettings {
    /// The six settings layers for the session cwd, with the home directory from `HOME` and
    /// `$ENV:` references from the process environment.
    #[default]
    FromEnvironment,
    /// The six settings layers for the session cwd, with an explicit home directory (`None`
    /// skips the user layers), variables for `$ENV:` references and overrides from code.
    Load {
        /// The user's home directory.
        home: Option<PathBuf>,
        /// Variables for `$ENV:NAME` references.
        env: BTreeMap<String, String>,
        /// Settings from code, above every file (a JSON object).
        overrides: Option<Value>,
    },
    /// Settings the host already loaded (the framework's `LoadedSettings`, e.g. from
    /// `robota::framework::config::load_settings`; `Box::new(loaded)` converts). The home
    /// directory (for `~/` rules and the user settings file "allow always" can write to) is taken
    /// from the path of a loaded user layer; without one there is no user destination.
    Loaded(Box<dyn PreloadedSettings>),
    /// No settings at all: no rules, no hooks, default mode.
    None,
}

impl SessionSettings {
    /// Load the layers with this home directory and no environment.
    pub fn with_home(home: impl Into<PathBuf>) -> Self {
        SessionSettings::Load {
            home: Some(home.into()),
            env: BTreeMap::new(),
            overrides: None,
        }
    }
}

/// Settings loaded before the session is created, carried unread to the framework's assembly,
/// which interprets them. Sealed: the framework's `LoadedSettings` is the one implementation.
pub trait PreloadedSettings: fmt::Debug + Send + Sync + sealed::Sealed + 'static {
    /// A copy, so that session options can be cloned.
    fn clone_boxed(&self) -> Box<dyn PreloadedSettings>;
    /// The settings, for assembly to recover their type.
    fn as_any(&self) -> &dyn Any;
    /// The settings by value, for assembly to recover their type.
    fn into_any(self: Box<Self>) -> Box<dyn Any>;
}

impl Clone for Box<dyn PreloadedSettings> {
    fn clone(&self) -> Self {
        self.clone_boxed()
    }
}

/// Keeps [`PreloadedSettings`] implemented by the crate's own settings type only.
pub(crate) mod sealed {
    /// The seal.
    pub trait Sealed {}
}

/// Where a session is saved.
#[derive(Debug, Clone, Default)]
pub enum SessionPersistence {
    /// Not saved (the default): nothing is written to disk.
    #[default]
    None,
    /// Saved in the project: `<cwd>/.robota/sessions/{id}.json` and `<cwd>/.robota/logs/{id}.jsonl`.
    Project,
    /// Saved in this store (a [`FileSessionStore`](super::store::FileSessionStore) with other
    /// directories, a database store, a host's own store).
    Store(Arc<dyn SessionStore>),
}

/// A host hook callback and when it runs.
#[derive(Clone)]
pub struct HookCallbackRegistration {
    /// The event.
    pub event: HookEvent,
    /// Claude Code matcher syntax (`""`/`*` for all, `Edit|Write`, a regex).
    pub matcher: String,
    /// The callback.
    pub callback: Arc<dyn HookCallback>,
    /// Its timeout; the event's default when `None`.
    pub timeout: Option<Duration>,
    /// What its failure (throwing, timing out, an unreadable answer) does; the event's default
    /// when `None` (blocks on PreToolUse and PermissionRequest, see [`OnHookFailure`]).
    pub on_failure: Option<OnHookFailure>,
}

impl HookCallbackRegistration {
    /// A callback for `event` matching `matcher`, with the default timeout.
    pub fn new(
        event: HookEvent,
        matcher: impl Into<String>,
        callback: Arc<dyn HookCallback>,
    ) -> Self {
        HookCallbackRegistration {
            event,
            matcher: matcher.into(),
            callback,
            timeout: None,
            on_failure: None,
        }
    }
}

impl std::fmt::Debug for HookCallbackRegistration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HookCallbackRegistration")
            .field("event", &self.event)
            .field("matcher", &self.matcher)
            .field("callback", &self.callback.name())
            .field("timeout", &self.timeout)
            .field("on_failure", &self.on_failure)
            .finish()
    }
}

/// Everything a session is made from. Build with [`SessionOptions::new`] and the `with_*`
/// methods.
#[derive(Clone)]
pub struct SessionOptions {
    /// The working directory: tools run here, relative paths resolve here, and it is the project
    /// directory whose `.claude/` and `.robota/` settings are loaded. Made absolute (against the
    /// process's current directory) when relative.
    pub cwd: PathBuf,
    /// The model.
    pub provider: Arc<dyn Provider>,
    /// A second model of the same provider, called when `provider`'s model is overloaded
    /// (the Claude Agent SDK's `fallbackModel`; see
    /// [`FallbackProvider`](crate::provider::FallbackProvider)). Each switch is reported as a
    /// `warning` event with source `fallback_model`. `None`: no fallback.
    pub fallback_model: Option<String>,
    /// The tools the model may use. `None`: the built-ins over the cwd and the settings'
    /// `additionalDirectories`, with the settings' `env` for Bash. Tools a bare-name deny rule
    /// names are removed either way.
    pub tools: Option<ToolRegistry>,
    /// Tools added to whichever set `tools` gives (built-ins or the host's), e.g. the projected
    /// `robota_command_*` tools of an `InteractiveSession`. Added before deny rules hide tools.
    pub extra_tools: Vec<Arc<dyn crate::tools::Tool>>,
    /// The base configuration of the built-in tools when `tools` is `None` (`additional_roots`
    /// and `env` are extended from the settings).
    pub builtin_tools: BuiltinToolsConfig,
    /// Where settings come from.
    pub settings: SessionSettings,
    /// MCP servers the host adds (origin [`McpServerOrigin::Host`](crate::mcp::McpServerOrigin)
    /// for its own list, `Plugin` for a plugin's), above the settings' and `.mcp.json`'s: a
    /// server of the same name replaces theirs. Parse Claude Code's `mcpServers` object with
    /// [`parse_mcp_servers`](crate::mcp::parse_mcp_servers).
    pub mcp_servers: Vec<crate::mcp::McpServerEntry>,
    /// Only `mcp_servers` with origin `Host` are started: none from the settings, `.mcp.json`
    /// or plugins (Claude Code's `--strict-mcp-config`). Off by default.
    pub host_mcp_servers_only: bool,
    /// Timeouts and the output budget of MCP servers.
    pub mcp_options: crate::mcp::McpOptions,
    /// Shows the user the authorization URL of a remote MCP server that requires OAuth (opens
    /// a browser, prints it); `None`: such servers are `needs_auth` until authorized.
    pub mcp_authorization_handler: Option<crate::mcp::McpAuthorizationHandler>,
    /// The permission mode; when `None`, the settings' `permissions.defaultMode`, else `default`.
    pub permission_mode: Option<PermissionMode>,
    /// Who answers permission prompts; `None` denies calls that need approval (with a message
    /// that says how to allow them).
    pub permission_handler: Option<Arc<dyn PermissionHandler>>,
    /// In-process hooks, run like settings hooks.
    pub hook_callbacks: Vec<HookCallbackRegistration>,
    /// Hook definitions added after the settings' own (e.g. the `hooks/hooks.json` of enabled
    /// plugins); like them, off when the settings say `disableAllHooks`.
    pub extra_hooks: crate::hooks::HooksConfig,
    /// The system prompt. When set it replaces the prompt assembled from the project context
    /// (which is then not loaded at all).
    pub system_prompt: Option<String>,
    /// Text appended (after a blank line) to the system prompt, assembled or explicit: for hosts
    /// that add their own instructions without giving up the project's.
    pub append_system_prompt: Option<String>,
    /// Whether to build the system prompt from the project (AGENTS.md/CLAUDE.md, memory, tasks,
    /// environment) when `system_prompt` is not given. On by default; off gives a bare prompt
    /// (only `append_system_prompt`, if any) and no `context_loaded` event.
    pub load_project_context: bool,
    /// Most model/tool rounds per run; `0` (the default) means no cap, as in the TypeScript
    /// session.
    pub max_turns: u32,
    /// The session id; a fresh UUID when `None`. Must be a safe file name (it names the session's
    /// files).
    pub session_id: Option<String>,
    /// Receives every [`SessionEvent`](super::SessionEvent).
    pub on_event: Option<SessionEventCallback>,
    /// Receives the engine's replay boundary events (for session logs).
    pub on_execution_event: Option<ExecutionEventCallback>,
    /// Engine settings (`max_tokens`, `temperature`, `thinking`, `context_window`, …); its
    /// `system_prompt`, `max_turns` and `cwd` are replaced by the fields above. Its
    /// `context_window`, when set, is also the window the session's context tracking and
    /// automatic compaction measure against (else the provider's capabilities say).
    pub engine: EngineConfig,
    /// Where the session is saved (snapshot + log); not at all by default.
    pub persistence: SessionPersistence,
    /// Resume this saved session (needs `persistence`): its history, usage totals, name and
    /// permission mode are restored, and SessionStart fires with source `resume`.
    pub resume_session_id: Option<String>,
    /// With `resume_session_id`: continue in a copy with a new id (SessionStart source `fork`);
    /// the original's files are left untouched.
    pub fork_session: bool,
    /// Spending limit in USD: once the session's cumulative cost reaches it, further runs are
    /// refused with [`SessionError::BudgetExceeded`](super::SessionError::BudgetExceeded).
    pub max_budget_usd: Option<f64>,
    /// Prices used for the session's cost figures ([`PriceTable::builtin`] by default).
    pub prices: PriceTable,
    /// Per-session switch for automatic compaction (on by default; the settings'
    /// `autoCompactThreshold: false` also turns it off).
    pub auto_compact: bool,
    /// Focus instructions for compaction summaries when the caller gives none. When `None`, the
    /// "Compact Instructions" sections of the project's instruction files are used (if the
    /// project context was loaded).
    pub compact_instructions: Option<String>,
    /// Turns the OS sandbox for Bash on (`Some(true)`) or off (`Some(false)`), above the
    /// settings' `sandbox.enabled`. `None`: the settings decide; without a setting the sandbox is
    /// on in `bypassPermissions` sessions and off in the other modes.
    pub sandbox: Option<bool>,
    /// Warnings the caller found while assembling the session (e.g. agent definition files that
    /// could not be used), reported with the settings warnings: in [`Session::warnings`] and as
    /// `settings_warning` events.
    ///
    /// [`Session::warnings`]: super::Session::warnings
    pub warnings: Vec<super::SessionWarning>,
    /// Told before any tool changes a file it declares ([`Tool::mutated_paths`]): the edit
    /// checkpoints of an `InteractiveSession` save the file's content here. `None`: nothing is
    /// saved.
    ///
    /// [`Tool::mutated_paths`]: crate::tools::Tool::mutated_paths
    pub file_mutation_recorder: Option<Arc<dyn crate::tools::FileMutationRecorder>>,
    /// Structured output: every prompt's final answer must be one JSON value matching this
    /// schema (see [`structured_output`](super::structured_output)); checked when the session
    /// is created. `None`: free text.
    pub output_format: Option<super::structured_output::OutputFormat>,
    /// Follow-ups an answer that does not match `output_format` gets before the prompt fails
    /// with stop reason `max_structured_output_retries` (default
    /// [`DEFAULT_MAX_STRUCTURED_OUTPUT_RETRIES`](super::structured_output::DEFAULT_MAX_STRUCTURED_OUTPUT_RETRIES)).
    pub max_structured_output_retries: u32,
    /// Exports the session's traces and metrics (spans per prompt, model call, tool call, hook
    /// and compaction) through these exporters; build them once with
    /// [`Telemetry::start`](crate::telemetry::Telemetry::start) and share them between
    /// sessions. `None` (the default): nothing is traced and nothing is built.
    pub telemetry: Option<crate::telemetry::Telemetry>,
    /// The host's trace context (W3C `traceparent`/`tracestate`): the session's prompt spans
    /// become children of that span, in the host's trace. Only used with `telemetry`.
    pub trace_parent: Option<crate::telemetry::TraceParent>,
}

impl SessionOptions {
    /// Options for a session in `cwd` talking to `provider`, with everything else at its
    /// default.
    pub fn new(cwd: impl Into<PathBuf>, provider: Arc<dyn Provider>) -> Self {
        SessionOptions {
            cwd: cwd.into(),
            provider,
            fallback_model: None,
            tools: None,
            extra_tools: Vec::new(),
            builtin_tools: BuiltinToolsConfig::default(),
            settings: SessionSettings::default(),
            mcp_servers: Vec::new(),
            host_mcp_servers_only: false,
            mcp_options: crate::mcp::McpOptions::default(),
            mcp_authorization_handler: None,
            permission_mode: None,
            permission_handler: None,
            hook_callbacks: Vec::new(),
            extra_hooks: crate::hooks::HooksConfig::new(),
            system_prompt: None,
            append_system_prompt: None,
            load_project_context: true,
            max_turns: 0,
            session_id: None,
            on_event: None,
            on_execution_event: None,
            engine: EngineConfig::default(),
            persistence: SessionPersistence::None,
            resume_session_id: None,
            fork_session: false,
            max_budget_usd: None,
            prices: PriceTable::builtin(),
            auto_compact: true,
            compact_instructions: None,
            sandbox: None,
            warnings: Vec::new(),
            file_mutation_recorder: None,
            output_format: None,
            max_structured_output_retries:
                super::structured_output::DEFAULT_MAX_STRUCTURED_OUTPUT_RETRIES,
            telemetry: None,
            trace_parent: None,
        }
    }

    /// Saves the session (snapshot after every turn and on shutdown, plus the JSONL log).
    pub fn with_persistence(mut self, persistence: SessionPersistence) -> Self {
        self.persistence = persistence;
        self
    }

    /// Resumes saved session `id` (with persistence configured); `fork` continues in a copy.
    pub fn with_resume(mut self, id: impl Into<String>, fork: bool) -> Self {
        self.resume_session_id = Some(id.into());
        self.fork_session = fork;
        self
    }

    /// Refuses further runs once the session has spent `max_usd`.
    pub fn with_max_budget_usd(mut self, max_usd: f64) -> Self {
        self.max_budget_usd = Some(max_usd);
        self
    }

    /// Overrides the context window the session measures against (and the engine's guards).
    pub fn with_context_window(mut self, tokens: u64) -> Self {
        self.engine.context_window = Some(tokens);
        self
    }

    /// Turns automatic compaction on or off for this session.
    pub fn with_auto_compact(mut self, enabled: bool) -> Self {
        self.auto_compact = enabled;
        self
    }

    /// Sets where settings come from.
    pub fn with_settings(mut self, settings: SessionSettings) -> Self {
        self.settings = settings;
        self
    }

    /// Uses these tools instead of the built-ins.
    pub fn with_tools(mut self, tools: ToolRegistry) -> Self {
        self.tools = Some(tools);
        self
    }

    /// Turns the OS sandbox for Bash on or off, above the settings (see
    /// [`SessionOptions::sandbox`]).
    pub fn with_sandbox(mut self, enabled: bool) -> Self {
        self.sandbox = Some(enabled);
        self
    }

    /// Sets the permission mode.
    pub fn with_permission_mode(mut self, mode: PermissionMode) -> Self {
        self.permission_mode = Some(mode);
        self
    }

    /// Sets the permission handler.
    pub fn with_permission_handler(mut self, handler: Arc<dyn PermissionHandler>) -> Self {
        self.permission_handler = Some(handler);
        self
    }

    /// Sets who shows the user the authorization URL of a remote MCP server that requires
    /// OAuth (see [`SessionOptions::mcp_authorization_handler`]).
    pub fn with_mcp_authorization_handler(
        mut self,
        handler: crate::mcp::McpAuthorizationHandler,
    ) -> Self {
        self.mcp_authorization_handler = Some(handler);
        self
    }

    /// Adds an in-process hook.
    pub fn with_hook_callback(
        mut self,
        event: HookEvent,
        matcher: impl Into<String>,
        callback: Arc<dyn HookCallback>,
    ) -> Self {
        self.hook_callbacks
            .push(HookCallbackRegistration::new(event, matcher, callback));
        self
    }

    /// Sets the system prompt.
    pub fn with_system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.system_prompt = Some(prompt.into());
        self
    }

    /// Appends `text` to the system prompt (assembled or explicit).
    pub fn with_append_system_prompt(mut self, text: impl Into<String>) -> Self {
        self.append_system_prompt = Some(text.into());
        self
    }

    /// Turns loading the project context into the system prompt on or off.
    pub fn with_project_context(mut self, enabled: bool) -> Self {
        self.load_project_context = enabled;
        self
    }

    /// Caps each run at `max_turns` rounds (`0` = no cap).
    pub fn with_max_turns(mut self, max_turns: u32) -> Self {
        self.max_turns = max_turns;
        self
    }

    /// Sets the session id.
    pub fn with_session_id(mut self, id: impl Into<String>) -> Self {
        self.session_id = Some(id.into());
        self
    }

    /// Sends events to `callback`.
    pub fn with_on_event(
        mut self,
        callback: impl Fn(super::SessionEvent) + Send + Sync + 'static,
    ) -> Self {
        self.on_event = Some(Arc::new(callback));
        self
    }
}

impl std::fmt::Debug for SessionOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionOptions")
            .field("cwd", &self.cwd)
            .field("provider", &self.provider.name())
            .field("tools", &self.tools)
            .field("settings", &self.settings)
            .field("permission_mode", &self.permission_mode)
            .field("permission_handler", &self.permission_handler.is_some())
            .field("hook_callbacks", &self.hook_callbacks)
            .field(
                "system_prompt",
                &self.system_prompt.as_ref().map(String::len),
            )
            .field(
                "append_system_prompt",
                &self.append_system_prompt.as_ref().map(String::len),
            )
            .field("load_project_context", &self.load_project_context)
            .field("max_turns", &self.max_turns)
            .field("session_id", &self.session_id)
            .field("on_event", &self.on_event.is_some())
            .field("persistence", &self.persistence)
            .field("resume_session_id", &self.resume_session_id)
            .field("fork_session", &self.fork_session)
            .field("max_budget_usd", &self.max_budget_usd)
            .field("auto_compact", &self.auto_compact)
            .field("telemetry", &self.telemetry.is_some())
            .field("trace_parent", &self.trace_parent)
            .finish()
    }
}
