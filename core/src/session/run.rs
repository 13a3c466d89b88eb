//! The [`Session`]: one conversation with its settings, permission enforcement and hooks, on top
//! of the execution engine.
//!
//! # Lifecycle
//!
//! - [`Session::new`] (defined by the framework's assembly, which loads and checks the settings:
//!   a bad rule, mode, matcher or JSON is an error naming the file, key and problem) hands this
//!   layer the resolved settings; warnings become `settings_warning` events. The session builds
//!   the tools (bare-name deny rules remove tools from what the model sees) and the
//!   [`PermissionEnforcer`]. It does no async work and fires no hook.
//! - The system prompt: [`SessionOptions::system_prompt`] when given; otherwise, unless
//!   [`SessionOptions::load_project_context`] is off, built by the framework from the project
//!   folder (AGENTS.md/CLAUDE.md from the git root down to cwd and the user files under the
//!   settings' home, memory, tasks, then environment metadata) once the session knows its model
//!   and permission mode; [`SessionOptions::append_system_prompt`] follows either. The files
//!   read are reported in a `context_loaded` event at SessionStart, and the project's "Compact
//!   Instructions" focus compaction summaries unless [`SessionOptions::compact_instructions`] is
//!   set.
//! - **SessionStart** (source `startup`) fires once, on the first [`Session::run`] or an earlier
//!   explicit [`Session::start`]. It is not fired from `new` so that construction stays
//!   synchronous (the C ABI and constructors in every binding can call it) and so the hook's
//!   context can go with the first prompt. Its `additionalContext` (and plain stdout) is
//!   model-only context on the first prompt.
//! - [`Session::run`]: **UserPromptSubmit** (a block or `continue: false` rejects the prompt —
//!   nothing is sent and the history is unchanged; context goes to the model with this prompt
//!   only, the history keeps the prompt as typed), the engine run with the enforcer as its gate,
//!   then **Stop** (a block makes the agent continue with the reason as a new user message, at
//!   most [`MAX_CONSECUTIVE_STOP_BLOCKS`] times in a row, `stop_hook_active: true` on repeats) or
//!   **StopFailure** when the run ended on a model error.
//! - [`Session::shutdown`] aborts any run, waits for it, fires **SessionEnd** exactly once, then
//!   stops background hooks and every process the session started that is still running
//!   (background tasks included; see [`crate::process`]); the session then refuses new runs.
//!   Dropping a session kills its processes at once (SIGKILL).
//!
//! # Persistence, usage, context and compaction
//!
//! - With [`SessionOptions::persistence`], each turn follows the order the `store` module
//!   requires (`pre_run`, the engine run logged through the log's execution callback,
//!   `turn_end` with the turn's usage, flush, snapshot); shutdown logs `session_shutdown` and
//!   saves before SessionEnd. Write errors are `persistence_error` events and never fail a turn.
//!   `resume_session_id` restores history, usage, name and permission mode (not
//!   `bypassPermissions`, which must be asked for again); `fork_session` continues in a copy.
//! - [`Session::usage`] sums every model call (compaction calls included), priced with the
//!   options' price table. With `max_budget_usd`, a run that would start at or over the budget
//!   is refused with [`SessionError::BudgetExceeded`] (a typed error rather than an outcome stop
//!   reason: nothing is sent, so there is no outcome to report). The run that crosses the budget
//!   finishes; the limit is checked between runs.
//! - [`Session::context_state`]: estimated before each run, exact (the last call's input +
//!   cache + output tokens) after each turn; both reported as `context_update` events.
//! - Compaction: manual ([`Session::compact`]) or automatic before a run at the settings
//!   threshold; see [`super::compaction`] for the history it leaves.
//!
//! # Results
//!
//! A run that ends on a model error is not an `Err`: its [`RunOutcome`] has `stop_reason: error`
//! and the error (the history stays consistent and the session usable). An abort returns the
//! outcome with `interrupted: true`. `Err` means the session did not run the prompt at all
//! (busy, shut down, prompt rejected).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use serde::Serialize;

use tokio::sync::OnceCell;
use tokio_util::sync::CancellationToken;

use super::agent_hook::ReadOnlyInvestigator;
use super::compaction::{
    check_summary, compacted_history, summary_prompt, CompactionSummary, MAX_COMPACTION_ATTEMPTS,
};
use super::compaction_policy::CompactionPolicy;
use super::context::{estimated_tokens, exact_tokens, ContextState};
use super::enforcer::{EnforcerOptions, PermissionEnforcer};
use super::error::SessionError;
use super::events::{EventSink, SessionEvent, SessionWarning};
use super::hook_condition::PermissionRuleCondition;
use super::inputs::{ProjectPromptBuilder, PromptFacts, ResolvedSettings};
use super::log::SessionLogEvent as LogEvent;
use super::options::{SessionOptions, SessionPersistence};
use super::permission_handler::SettingsTarget;
use super::persist::{
    load_resumed, lock_for_writing, project_store, repair_files, Persistence, Restored,
    SnapshotWhen,
};
use super::recovery::RecoveryReport;
use super::store::SessionRecord;
use super::structured_output::{OutputFormat, StructuredOutput, StructuredOutputCheck};
use super::telemetry::SessionTelemetry;
use super::usage::{Budget, PriceTable, UsageTotals};
use crate::engine::{
    Engine, EngineConfig, ExecutionEvent, ExecutionEventCallback, ProviderSwitch, RunOptions,
    RunOutcome, RunStopReason,
};
use crate::hooks::{
    AsyncHookResult, CompactTrigger, HookEvent, HookEventInput, HookInput, HookRunner,
    HookRunnerOptions, OnHookFailure, PostCompactInput, PreCompactInput, SessionEndReason,
    SessionStartSource, StopFailureInput, StopInput, MAX_CONSECUTIVE_STOP_BLOCKS,
};
use crate::message::{
    Conversation, HistorySize, Message, MessageSize, ProviderError, ProviderErrorKind, Usage,
    MODEL_CONTEXT_METADATA,
};
use crate::permissions::{
    BashSandbox, PermissionContext, PermissionMode, RuleList, RuleSet, ToolClass,
};
use crate::process::ProcessGroups;
use crate::provider::catalog;
use crate::provider::fallback::FALLBACK_COOLDOWN;
use crate::provider::{FallbackProvider, Provider, ProviderRequest};
use crate::sandbox::{PolicyInputs, Sandbox, SandboxStatus};
use crate::tools::builtins::Builtins;
use crate::tools::ToolRegistry;

/// Metadata key on the user message a Stop hook's block added, so transcripts can tell it from
/// what the user typed.
pub const STOP_HOOK_MESSAGE_METADATA: &str = "stop_hook";

/// One conversation with permissions and hooks. `Send + Sync`: hosts (and bindings) share it
/// behind an `Arc` and call [`abort`](Self::abort) or read the history from other threads while a
/// run is in progress.
pub struct Session {
    /// The OS sandbox Bash (and, with `sandbox.hooks`, command hooks) run in.
    sandbox: Arc<Sandbox>,
    /// The built-in tools, when the session built them (not when the host gave its own): their
    /// environment takes what hooks export through `CLAUDE_ENV_FILE`.
    builtins: Option<Builtins>,
    /// The MCP connections, when any server is configured.
    mcp: Option<Arc<crate::mcp::McpHub>>,
    /// Counts the `CLAUDE_ENV_FILE`s handed out.
    env_files: std::sync::atomic::AtomicU32,
    /// The process groups of the session's tool calls, background tasks and command hooks.
    processes: ProcessGroups,
    /// How long a stopped process group gets between SIGTERM and SIGKILL.
    kill_grace: std::time::Duration,
    id: String,
    cwd: PathBuf,
    engine: Engine,
    enforcer: PermissionEnforcer,
    hooks: Arc<HookRunner>,
    events: EventSink,
    on_execution_event: Option<ExecutionEventCallback>,
    model: String,
    warnings: Vec<SessionWarning>,
    bypass_disabled: bool,
    /// The history. While a run is in progress the run owns the real one and this mirror gets
    /// every message as it is committed, so readers see the run's progress.
    conversation: Arc<Mutex<Conversation>>,
    /// Held for the duration of a run: one run at a time.
    run_lock: tokio::sync::Mutex<()>,
    current_run: Mutex<Option<CancellationToken>>,
    /// The provider of the current run when it asked for another model
    /// ([`run_on_model`](Session::run_on_model)); `None`: the session's.
    run_provider: Mutex<Option<Arc<dyn Provider>>>,
    /// Moves the engine run in progress to another provider ([`switch_running_model`]
    /// (Session::switch_running_model)); a fresh one per prompt.
    run_switch: Mutex<ProviderSwitch>,
    /// The session's provider on the model the user switched to ([`switch_model`]
    /// (Session::switch_model)); `None`: the model the session was created with.
    switched: Mutex<Option<Arc<dyn Provider>>>,
    started: OnceCell<()>,
    /// SessionStart context waiting for the first prompt.
    start_context: Mutex<Vec<String>>,
    /// Results of background (`async` / `asyncRewake`) command hooks, drained before each
    /// prompt: their context and rewake reasons go to the model with it.
    async_hook_results: Mutex<Option<tokio::sync::mpsc::UnboundedReceiver<AsyncHookResult>>>,
    /// The `context_loaded` event, held until SessionStart so that it reaches the host with the
    /// other start-up events rather than during construction.
    context_loaded: Mutex<Option<SessionEvent>>,
    /// What opening the saved session found (when worth a notice); reported as a
    /// `session_recovered` event at SessionStart.
    recovery: Option<RecoveryReport>,
    shut_down: AtomicBool,
    ended: OnceCell<()>,
    /// SessionStart's source: `startup`, or `resume`/`fork` for a restored session.
    start_source: SessionStartSource,
    /// The model, also called directly for compaction summaries.
    provider: Arc<dyn Provider>,
    system_prompt: Option<String>,
    max_tokens: Option<u32>,
    /// Snapshot + log, when the session is saved.
    persistence: Option<Persistence>,
    name: Mutex<Option<String>>,
    /// Cumulative tokens and cost (restored on resume).
    usage: Mutex<UsageTotals>,
    prices: PriceTable,
    budget: Option<Budget>,
    /// The session's `output_format`, compiled; `None`: answers are free text.
    structured_output: Option<StructuredOutput>,
    /// Follow-ups an invalid structured answer gets (for per-prompt formats too).
    max_structured_output_retries: u32,
    /// A per-prompt format ([`Session::run_with_output_format`]), taken by the next run.
    run_structured_output: Mutex<Option<StructuredOutput>>,
    /// The window context tracking measures against.
    context_window: u64,
    /// The last measured context state; `None` until the first measurement.
    context: Mutex<Option<ContextState>>,
    /// The automatic-compaction policy; the `context auto` command changes it live.
    compaction: Mutex<CompactionPolicy>,
    auto_compact: AtomicBool,
    compact_instructions: Option<String>,
    /// The instruction files' sections of the system prompt (for subagents).
    project_instructions: Option<String>,
    /// Traces and metrics, when the host configured telemetry.
    telemetry: Option<Arc<SessionTelemetry>>,
}

/// What the execution callback gathers during one turn: every call's usage, priced, and the
/// last call's usage (the exact context measure).
#[derive(Default)]
struct TurnAccounting {
    totals: UsageTotals,
    last_call: Option<Usage>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("id", &self.id)
            .field("cwd", &self.cwd)
            .field("model", &self.model)
            .field("enforcer", &self.enforcer)
            .field("tools", &self.engine.tools())
            .finish()
    }
}

/// `provider` with `fallback_model` behind it: each switch is a `warning` event.
fn with_fallback(
    provider: Arc<dyn Provider>,
    fallback_model: &str,
    events: EventSink,
) -> Result<Arc<dyn Provider>, SessionError> {
    let fallback = FallbackProvider::new(provider, fallback_model)
        .map_err(|error| SessionError::InvalidFallbackModel {
            message: error.message,
        })?
        .on_switch(Arc::new(move |primary, fallback, error| {
            events.emit(SessionEvent::Warning {
                source: "fallback_model".into(),
                message: format!(
                    "model {primary} is overloaded ({}); answering with the fallback model \
                     {fallback} for the next {} minutes",
                    error.message,
                    FALLBACK_COOLDOWN.as_secs() / 60
                ),
            })
        }));
    Ok(Arc::new(fallback))
}

impl Session {
    /// Creates a session from resolved settings (and, when the project supplies the system
    /// prompt, its builder): builds its tools, permission enforcer and hooks. Fires no hook (see
    /// [`Session::start`]). [`Session::new`] resolves them.
    pub(crate) fn from_resolved(
        mut options: SessionOptions,
        resolved: ResolvedSettings,
        project_prompt: Option<ProjectPromptBuilder>,
    ) -> Result<Session, SessionError> {
        let cwd = absolute_cwd(&options.cwd)?;
        let store = match &options.persistence {
            SessionPersistence::None => None,
            SessionPersistence::Project => Some(project_store(&cwd, &resolved)?),
            SessionPersistence::Store(store) => Some(Arc::clone(store)),
        };
        // A saved session is locked for writing before anything is read or written.
        let (restored, lock) = match (&store, &options.resume_session_id) {
            (Some(store), Some(resume_id)) => {
                let (restored, lock) =
                    load_resumed(store.as_ref(), resume_id, options.fork_session)?;
                (Some(restored), Some(lock))
            }
            (None, Some(resume_id)) => {
                return Err(SessionError::Resume {
                    id: resume_id.clone(),
                    message: "no session store is configured (set SessionOptions.persistence)"
                        .into(),
                })
            }
            _ => (None, None),
        };
        let id = match (&restored, options.session_id) {
            (Some(restored), _) => restored.record.id.clone(),
            (None, Some(id)) => validate_session_id(id)?,
            (None, None) => uuid::Uuid::new_v4().to_string(),
        };
        let lock = match (&store, lock) {
            (Some(_), Some(lock)) => Some(lock),
            (Some(store), None) => Some(lock_for_writing(store.as_ref(), &id)?),
            (None, _) => None,
        };
        // A restored session keeps its mode, except bypassPermissions, which must be asked for
        // again explicitly (it may have been disabled since, and it is not a mode to inherit
        // silently from a file).
        let restored_mode = restored
            .as_ref()
            .and_then(|r| r.record.permission_mode.as_deref())
            .and_then(|m| m.parse::<PermissionMode>().ok())
            .filter(|m| *m != PermissionMode::BypassPermissions);
        let budget = match options.max_budget_usd {
            Some(max) => Some(Budget::new(max).map_err(|e| SessionError::InvalidBudget {
                message: e.to_string(),
            })?),
            None => None,
        };
        let structured_output = options
            .output_format
            .as_ref()
            .map(|format| StructuredOutput::new(format, options.max_structured_output_retries))
            .transpose()?;
        let events = EventSink::new(options.on_event.clone());
        if let Some(fallback_model) = options.fallback_model.take() {
            options.provider = with_fallback(options.provider, &fallback_model, events.clone())?;
        }
        let ResolvedSettings {
            home,
            warnings,
            rules,
            default_mode,
            bypass_disabled,
            hooks: hooks_config,
            env,
            additional_directories,
            sensitive_paths,
            settings_targets,
            compaction,
            sandbox: sandbox_settings,
            mcp_servers,
            mcp_skipped,
            session_store: _,
        } = resolved;
        let mode = options
            .permission_mode
            .or(restored_mode)
            .or(default_mode)
            .unwrap_or_default();
        if bypass_disabled && mode == PermissionMode::BypassPermissions {
            return Err(SessionError::BypassPermissionsDisabled);
        }

        let mut sandbox_settings = sandbox_settings;
        let home_dir = home.as_deref();
        sandbox_settings
            .filesystem
            .deny_read
            .extend(concrete_rule_paths(
                &rules,
                RuleList::Deny,
                "Read",
                &cwd,
                home_dir,
            ));
        sandbox_settings
            .filesystem
            .allow_write
            .extend(concrete_rule_paths(
                &rules,
                RuleList::Allow,
                "Edit",
                &cwd,
                home_dir,
            ));
        let sandbox = Arc::new(Sandbox::new(
            sandbox_settings,
            options.sandbox,
            mode == PermissionMode::BypassPermissions,
            PolicyInputs {
                cwd: cwd.clone(),
                extra_roots: additional_directories.clone(),
                temp_dir: None,
                sensitive_paths: sensitive_paths.clone(),
            },
        ));
        let mut warnings = warnings;
        warnings.extend(options.warnings);
        if catalog::is_catalog_provider(options.provider.name()) {
            if let Some(message) = catalog::unknown_model_warning(options.provider.model()) {
                warnings.push(SessionWarning {
                    file: None,
                    json_path: "model".into(),
                    kind: "unknown_model".into(),
                    message,
                });
            }
        }
        if let Some(warning) = sandbox_warning(&sandbox) {
            warnings.push(warning);
        }

        // Every process the session starts joins this registry; shutdown and drop stop them.
        let processes = options.builtin_tools.processes.clone().unwrap_or_default();
        let kill_grace = options.builtin_tools.kill_grace;
        let mut builtins = None;
        let mut tools = match options.tools {
            Some(tools) => tools,
            None => {
                let mut config = options.builtin_tools;
                if config.sandbox.is_none() {
                    config.sandbox = Some(Arc::clone(&sandbox));
                }
                config.processes = Some(processes.clone());
                if config.session_dir.is_none() {
                    // Spilled outputs stay with the saved session (readable after a resume,
                    // deleted with it); an unsaved session uses a private temp directory.
                    config.session_dir = store.as_ref().and_then(|s| s.session_dir(&id));
                }
                config
                    .additional_roots
                    .extend(additional_directories.iter().cloned());
                config.env.extend(env.clone());
                let mut registry = ToolRegistry::new();
                let built = Builtins::new(config);
                built.register(&mut registry);
                builtins = Some(built);
                registry
            }
        };
        // OAuth tokens of remote servers live in the user's folder, never the project's.
        let mcp_oauth_folder = home.as_deref().map(crate::mcp::oauth::token_folder);
        let (mcp_servers, mcp_skipped, host_mcp_servers) = if options.host_mcp_servers_only {
            let host_only = options
                .mcp_servers
                .into_iter()
                .filter(|entry| matches!(entry.origin, crate::mcp::McpServerOrigin::Host))
                .collect();
            (Vec::new(), Vec::new(), host_only)
        } else {
            (mcp_servers, mcp_skipped, options.mcp_servers)
        };
        let mcp = build_mcp_hub(
            mcp_servers,
            mcp_skipped,
            host_mcp_servers,
            options.mcp_options,
            crate::mcp::McpConnectContext {
                cwd: cwd.clone(),
                env: env.clone(),
                processes: processes.clone(),
                oauth_folder: mcp_oauth_folder,
                authorization_handler: options.mcp_authorization_handler.clone(),
            },
            &mut warnings,
        )?;
        let mut extra_tools = options.extra_tools;
        // The names the MCP hub contributed, replaced when its tools change.
        let mcp_tool_names: Arc<Mutex<BTreeSet<String>>> = Arc::default();
        if let Some(hub) = &mcp {
            if let Some(builtins) = &builtins {
                hub.set_builtins(builtins.clone());
            }
            let mut problems = Vec::new();
            for tool in hub.tools(&mut problems) {
                if tools.get(tool.name()).is_some()
                    || extra_tools.iter().any(|t| t.name() == tool.name())
                {
                    problems.push(format!(
                        "MCP tool `{}` is left out: another tool of the session has its name",
                        tool.name()
                    ));
                    continue;
                }
                lock_names(&mcp_tool_names).insert(tool.name().to_string());
                extra_tools.push(tool);
            }
            warnings.extend(problems.into_iter().map(mcp_warning));
        }
        let mut extra_names: Vec<String> = Vec::new();
        for tool in extra_tools {
            let name = tool.name().to_string();
            if extra_names.contains(&name) {
                return Err(SessionError::InvalidTool {
                    name,
                    message: "two tools have this name; tool names must be unique".into(),
                });
            }
            if tools.get(&name).is_some() && !tool.replaces_builtin() {
                return Err(SessionError::InvalidTool {
                    name,
                    message: "a built-in tool has this name; rename the tool, or mark it as \
                              replacing the built-in (`replaces_builtin`) if that is the intent"
                        .into(),
                });
            }
            extra_names.push(name);
            tools.register(tool);
        }
        if let Some(recorder) = &options.file_mutation_recorder {
            let changing: Vec<Arc<dyn crate::tools::Tool>> = tools
                .names()
                .into_iter()
                .filter_map(|name| tools.get(name).cloned())
                .filter(|tool| !tool.is_read_only())
                .collect();
            for tool in changing {
                tools.register(crate::tools::RecordedTool::wrap(tool, Arc::clone(recorder)));
            }
        }
        let hiding_rules = rules.clone();
        let hidden = rules.hidden_tools(tools.names());
        for name in &hidden {
            tools.unregister(name);
        }

        let mut context = PermissionContext::new(&cwd)
            .with_rules(rules)
            .with_mode(mode);
        context.home = home.clone();
        context.additional_directories = additional_directories;
        context.sensitive_paths = sensitive_paths;
        context.sandbox = bash_sandbox(&sandbox);
        // Paths the model gives may be spelled through the canonical cwd (`/private/tmp/…` for
        // `/tmp/…` on macOS); both spellings are the workspace.
        if let Ok(canonical) = std::fs::canonicalize(&cwd) {
            if canonical != cwd {
                context.workspace_roots.push(canonical);
            }
        }
        for name in tools.names() {
            if let Some(tool) = tools.get(name) {
                // An MCP server's `readOnlyHint` lets its calls run in parallel, but it is the
                // server's claim: it never stands in for the user's approval.
                if tool.is_read_only() && !name.starts_with("mcp__") {
                    context
                        .tool_classes
                        .insert(name.to_string(), ToolClass::ReadOnly);
                }
            }
        }
        if mcp.is_some() {
            // Robota's own resource tools arrive once a server offering resources has connected
            // (in the background); they only read, as the built-in read tools do.
            for name in [
                crate::mcp::LIST_RESOURCES_TOOL,
                crate::mcp::READ_RESOURCE_TOOL,
            ] {
                context
                    .tool_classes
                    .insert(name.to_string(), ToolClass::ReadOnly);
            }
        }

        let telemetry = match options.telemetry {
            Some(exporters) => Some(Arc::new(SessionTelemetry::new(
                exporters,
                id.clone(),
                options.prices.clone(),
                options.trace_parent.as_ref(),
            )?)),
            None => None,
        };
        let mut runner_options = HookRunnerOptions::new(&cwd)
            .with_env(env)
            .with_provider(Arc::clone(&options.provider))
            .with_condition_evaluator(Arc::new(PermissionRuleCondition::new(&cwd, home.clone())));
        runner_options.provider_for_model = None;
        runner_options.processes = processes.clone();
        runner_options.kill_grace = kill_grace;
        runner_options.observer = telemetry
            .clone()
            .map(|t| t as Arc<dyn crate::hooks::HookObserver>);
        if sandbox.settings().hooks {
            runner_options.sandbox = Some(Arc::clone(&sandbox));
        }
        runner_options.agent_executor = Some(Arc::new(ReadOnlyInvestigator::new(
            &tools,
            context.clone(),
            cwd.clone(),
        )));
        if let Some(hub) = &mcp {
            runner_options.mcp_tool_caller =
                Some(Arc::clone(hub) as Arc<dyn crate::hooks::McpToolHookCaller>);
        }
        let hooks = Arc::new(HookRunner::new(hooks_config, runner_options));
        let async_hook_results = hooks.take_async_results();
        for registration in options.hook_callbacks {
            let invalid = |message: String| SessionError::InvalidHookCallback {
                event: registration.event,
                matcher: registration.matcher.clone(),
                message,
            };
            OnHookFailure::resolve(registration.event, registration.on_failure).map_err(invalid)?;
            hooks
                .register_callback_with(
                    registration.event,
                    &registration.matcher,
                    registration.callback,
                    registration.timeout,
                    registration.on_failure,
                )
                .map_err(|e| SessionError::InvalidHookCallback {
                    event: registration.event,
                    matcher: registration.matcher.clone(),
                    message: e.to_string(),
                })?;
        }

        // Hooks get the session log as their transcript: it is the file that holds the whole
        // conversation as it happens (the snapshot is only rewritten between turns).
        let transcript_path = store
            .as_ref()
            .and_then(|store| store.log_file(&id))
            .map(|path| path.to_string_lossy().into_owned());
        let enforcer = PermissionEnforcer::new(EnforcerOptions {
            session_id: id.clone(),
            context,
            hooks: Some(Arc::clone(&hooks)),
            permission_handler: options.permission_handler,
            settings_targets,
            on_event: options.on_event,
            resolver: None,
            transcript_path,
        });

        let model = options.provider.model().to_string();
        let provider = Arc::clone(&options.provider);
        let context_window = options
            .engine
            .context_window
            .unwrap_or_else(|| options.provider.capabilities().context_window);
        let project = project_prompt.map(|build| {
            build(&PromptFacts {
                model: model.clone(),
                permission_mode: enforcer.permission_mode(),
            })
        });
        let mut project_instructions = None;
        let (assembled_prompt, context_loaded, project_compact_instructions) = match project {
            Some(project) => {
                project_instructions = project.instructions;
                (
                    Some(project.system_prompt),
                    Some(SessionEvent::ContextLoaded {
                        files: project.files,
                        warnings: project.warnings,
                    }),
                    project.compact_instructions,
                )
            }
            None => (options.system_prompt, None, None),
        };
        let system_prompt = append_prompt(assembled_prompt, options.append_system_prompt);
        let compact_instructions = options
            .compact_instructions
            .or(project_compact_instructions);
        let max_tokens = options.engine.max_tokens;
        let config = EngineConfig {
            system_prompt: system_prompt.clone(),
            max_turns: options.max_turns,
            cwd: cwd.clone(),
            ..options.engine
        };
        let engine =
            Engine::new(options.provider, tools, config).with_tool_gate(Arc::new(enforcer.clone()));
        if let Some(hub) = &mcp {
            let status_events = events.clone();
            hub.on_status_change(Arc::new(move |server, status| {
                status_events.emit(SessionEvent::McpServerStatus {
                    server: server.to_string(),
                    status: status.clone(),
                });
            }));
            hub.on_tools_change(mcp_tools_refresher(McpToolsRefresh {
                hub: Arc::downgrade(hub),
                tools: engine.shared_tools(),
                names: mcp_tool_names,
                hiding_rules,
                recorder: options.file_mutation_recorder.clone(),
                events: events.clone(),
            }));
            // In the background: the session is usable at once; prompts wait for servers still
            // starting (see `wait_for_mcp_startup`).
            hub.start();
        }

        for warning in &warnings {
            events.emit(SessionEvent::SettingsWarning {
                warning: warning.clone(),
            });
        }

        let (start_source, conversation, usage, name) = match &restored {
            Some(Restored { record, forked, .. }) => (
                if *forked {
                    SessionStartSource::Fork
                } else {
                    SessionStartSource::Resume
                },
                record.conversation(),
                record.usage.clone(),
                record.name.clone(),
            ),
            None => (
                SessionStartSource::Startup,
                Conversation::new(),
                UsageTotals::new(),
                None,
            ),
        };
        // Nothing fails from here on: the writer may repair the files it resumed.
        let mut recovery = None;
        let persistence = store.zip(lock).map(|(store, lock)| {
            let resumed = restored.is_some();
            let record = match restored {
                Some(mut restored) => {
                    repair_files(store.as_ref(), &mut restored);
                    recovery = Some(restored.report).filter(RecoveryReport::needs_notice);
                    restored.record
                }
                None => {
                    let mut record = SessionRecord::new(&id, cwd.to_string_lossy());
                    record.provider = Some(provider.name().to_string());
                    record.model = Some(model.clone());
                    record.system_prompt = system_prompt.clone();
                    record.permission_mode = Some(enforcer.permission_mode().as_str().into());
                    record.tool_schemas = engine
                        .tools()
                        .definitions()
                        .iter()
                        .filter_map(|d| serde_json::to_value(d).ok())
                        .collect();
                    record
                }
            };
            // Bring the files in agreement again at once after a repair.
            let save_now = recovery.is_some();
            Persistence::open(store, record, lock, resumed, save_now, events.clone())
        });
        if let (Some(builtins), Some(logger)) = (
            &builtins,
            persistence
                .as_ref()
                .and_then(Persistence::task_event_logger),
        ) {
            builtins.background_tasks().subscribe(logger);
        }

        Ok(Session {
            sandbox,
            builtins,
            mcp,
            env_files: std::sync::atomic::AtomicU32::new(0),
            processes,
            kill_grace,
            id,
            cwd,
            engine,
            enforcer,
            hooks,
            events,
            on_execution_event: options.on_execution_event,
            model,
            warnings,
            bypass_disabled,
            conversation: Arc::new(Mutex::new(conversation)),
            run_lock: tokio::sync::Mutex::new(()),
            current_run: Mutex::new(None),
            run_provider: Mutex::new(None),
            run_switch: Mutex::new(ProviderSwitch::new()),
            switched: Mutex::new(None),
            started: OnceCell::new(),
            start_context: Mutex::new(Vec::new()),
            async_hook_results: Mutex::new(async_hook_results),
            context_loaded: Mutex::new(context_loaded),
            recovery,
            shut_down: AtomicBool::new(false),
            ended: OnceCell::new(),
            start_source,
            provider,
            system_prompt,
            max_tokens,
            persistence,
            name: Mutex::new(name),
            usage: Mutex::new(usage),
            prices: options.prices,
            budget,
            structured_output,
            max_structured_output_retries: options.max_structured_output_retries,
            run_structured_output: Mutex::new(None),
            context_window,
            context: Mutex::new(None),
            compaction: Mutex::new(compaction),
            auto_compact: AtomicBool::new(options.auto_compact),
            compact_instructions,
            project_instructions,
            telemetry,
        })
    }

    /// The session's MCP servers with their status and tools (empty when none is configured).
    pub fn mcp_servers(&self) -> Vec<crate::mcp::McpServerInfo> {
        self.mcp
            .as_ref()
            .map(|hub| hub.servers())
            .unwrap_or_default()
    }

    /// Reconnects, enables or disables MCP server `server` for this session; the tools the model
    /// sees follow at its next request.
    pub async fn control_mcp_server(
        &self,
        action: crate::mcp::McpServerAction,
        server: &str,
    ) -> Result<crate::mcp::McpServerInfo, crate::mcp::McpControlError> {
        match &self.mcp {
            Some(hub) => hub.control(action, server).await,
            None => Err(crate::mcp::McpControlError::UnknownServer {
                name: server.to_string(),
            }),
        }
    }

    /// Waits until the session's MCP servers are done starting (each `connected`, `failed`,
    /// `needs_auth` or `disabled`; they connect in the background from the moment the session
    /// is created), for at most `timeout` (`None`: until they are, which the start-up timeout
    /// bounds). True when no server is still starting (also when the session has none).
    /// Prompts need not call this: each waits for servers still starting before its first
    /// model call.
    pub async fn wait_for_mcp_servers(&self, timeout: Option<std::time::Duration>) -> bool {
        match &self.mcp {
            Some(hub) => hub.wait_for_startup(timeout).await,
            None => true,
        }
    }

    /// Before a prompt's first model call: waits for MCP servers still starting, so that the
    /// prompt sees their tools, never past the start-up timeout; an abort ends the wait.
    async fn wait_for_mcp_startup(&self, cancel: &CancellationToken) {
        let Some(hub) = &self.mcp else {
            return;
        };
        if !hub.is_starting() {
            return;
        }
        tokio::select! {
            _ = hub.wait_for_startup_deadline() => {}
            () = cancel.cancelled() => {}
        }
    }

    /// The session's MCP connections, when any server is configured.
    pub fn mcp_hub(&self) -> Option<&Arc<crate::mcp::McpHub>> {
        self.mcp.as_ref()
    }

    /// The session id.
    pub fn session_id(&self) -> &str {
        &self.id
    }

    /// The working directory (absolute).
    pub fn cwd(&self) -> &Path {
        &self.cwd
    }

    /// What opening the saved session found damaged, repaired or unfinished — `None` when there
    /// is nothing to tell (a new session, or a clean resume). Sent once as a
    /// `session_recovered` event when the session starts; kept here for hosts that want to ask
    /// (e.g. to offer sending [`UnfinishedTurn::prompt`](super::UnfinishedTurn) again).
    pub fn recovery_report(&self) -> Option<&RecoveryReport> {
        self.recovery.as_ref()
    }

    /// Settings warnings found when the session was created (also sent as `settings_warning`
    /// events).
    pub fn warnings(&self) -> &[SessionWarning] {
        &self.warnings
    }

    /// The permission mode.
    pub fn permission_mode(&self) -> PermissionMode {
        self.enforcer.permission_mode()
    }

    /// Changes the permission mode for the calls decided from now on (also during a run).
    /// `bypassPermissions` is refused when a settings file disables it.
    pub fn set_permission_mode(&self, mode: PermissionMode) -> Result<(), SessionError> {
        if mode == PermissionMode::BypassPermissions && self.bypass_disabled {
            return Err(SessionError::BypassPermissionsDisabled);
        }
        self.enforcer.set_permission_mode(mode);
        // Without an explicit setting the sandbox follows the mode (on in bypassPermissions).
        self.sandbox
            .on_permission_mode(mode == PermissionMode::BypassPermissions);
        self.enforcer.set_bash_sandbox(bash_sandbox(&self.sandbox));
        Ok(())
    }

    /// The OS sandbox's state: on or off, working or why not, backend, writable roots, network
    /// policy and which guarantees hold.
    pub fn sandbox_status(&self) -> SandboxStatus {
        self.sandbox.status()
    }

    /// The session's OS sandbox.
    pub fn sandbox(&self) -> &Arc<Sandbox> {
        &self.sandbox
    }

    /// The allow rules added during this session (answers "allow for the session" and "allow
    /// always").
    pub fn session_allowed_rules(&self) -> Vec<String> {
        self.enforcer.session_allowed_rules()
    }

    /// Forgets the rules added during this session.
    pub fn clear_session_allowed_rules(&self) {
        self.enforcer.clear_session_rules();
    }

    /// The settings files "allow always" can write to.
    pub fn settings_targets(&self) -> &[SettingsTarget] {
        self.enforcer.settings_targets()
    }

    /// The permission enforcer (rules, mode, evaluation).
    pub fn enforcer(&self) -> &PermissionEnforcer {
        &self.enforcer
    }

    /// The hook runner (to register or remove callbacks while the session lives).
    pub fn hooks(&self) -> &Arc<HookRunner> {
        &self.hooks
    }

    /// The model this session's provider calls.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// The model the next prompt goes to: the one [`switch_model`](Self::switch_model) chose,
    /// else [`model`](Self::model).
    pub fn current_model(&self) -> String {
        self.switched_provider()
            .map_or_else(|| self.model.clone(), |p| p.model().to_string())
    }

    /// Sends every later prompt (and compaction) to `model` on the session's provider
    /// (endpoint, credentials and settings unchanged); the context window follows the model.
    /// Back to the session's own model when `model` is it. Returns the new context window.
    /// Refused with [`SessionError::ModelSwitch`] when
    /// the provider cannot call another model; a run in progress keeps its model.
    pub fn switch_model(&self, model: &str) -> Result<u64, SessionError> {
        let model = model.trim();
        let provider = self.provider_for_model(Some(model))?;
        *self.switched.lock().unwrap_or_else(PoisonError::into_inner) =
            (model != self.model).then_some(provider);
        let state = self.estimate(self.lock_conversation().size());
        self.update_context(state);
        Ok(self.active_context_window())
    }

    /// Sends the rest of the prompt in progress to `model` on the session's provider: its next
    /// model call and every later one until the prompt ends (Stop-hook continuations included);
    /// the prompt after it is back on the session's model. This is how a skill the model
    /// activates mid-prompt runs on the `model` it names. Returns the model now answering.
    /// Refused with [`SessionError::ModelSwitch`] when the provider cannot call `model`;
    /// without a prompt in progress it changes nothing.
    pub fn switch_running_model(&self, model: &str) -> Result<String, SessionError> {
        let model = model.trim();
        let provider = self.provider_for_model(Some(model))?;
        if self
            .current_run
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_none()
        {
            return Ok(self.current_model());
        }
        *self
            .run_provider
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(Arc::clone(&provider));
        self.run_switch
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .set(provider);
        Ok(model.to_string())
    }

    /// The name of the session's provider (`anthropic`, `openai`, …).
    pub fn provider_name(&self) -> &str {
        self.provider.name()
    }

    /// The context window `model` has on the session's provider (`None` when the provider
    /// cannot call it).
    pub fn model_context_window(&self, model: &str) -> Option<u64> {
        if model == self.model {
            return Some(self.context_window);
        }
        self.provider
            .with_model(model)
            .map(|p| p.capabilities().context_window)
    }

    fn switched_provider(&self) -> Option<Arc<dyn Provider>> {
        self.switched
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The context window of the model prompts go to now.
    fn active_context_window(&self) -> u64 {
        match self.switched_provider() {
            Some(provider) => provider.capabilities().context_window,
            None => self.context_window,
        }
    }

    /// The provider calling `model` (`None`: the current model, after a live switch the
    /// switched one); [`SessionError::ModelSwitch`] when the provider cannot call it.
    pub(super) fn provider_for_model(
        &self,
        model: Option<&str>,
    ) -> Result<Arc<dyn Provider>, SessionError> {
        let switched = self.switched_provider();
        let current = switched
            .clone()
            .unwrap_or_else(|| Arc::clone(&self.provider));
        match model {
            None => Ok(current),
            Some(model) if model == current.model() => Ok(current),
            Some(model) if model == self.model => Ok(Arc::clone(&self.provider)),
            Some(model) => {
                self.provider
                    .with_model(model)
                    .ok_or_else(|| SessionError::ModelSwitch {
                        model: model.to_string(),
                        provider: self.provider.name().to_string(),
                    })
            }
        }
    }

    /// The project's instruction files (AGENTS.md and CLAUDE.md sections) as they are in the
    /// session's system prompt; `None` when the session loaded no project context or found none.
    /// Subagents get them too.
    pub fn project_instructions(&self) -> Option<&str> {
        self.project_instructions.as_deref()
    }

    /// True when a run can go to `model` ([`run_on_model`](Self::run_on_model)): it is the
    /// session's model, or the provider can call another model with the same settings.
    pub fn can_run_on(&self, model: &str) -> bool {
        model == self.model || self.provider.with_model(model).is_some()
    }

    /// The context ratio (0–1) at which automatic compaction runs, or `None` when automatic
    /// compaction is off for this session (by settings or [`Session::set_auto_compact`]).
    pub fn auto_compact_threshold(&self) -> Option<f64> {
        let policy = self.compaction_policy();
        (policy.enabled && self.auto_compact.load(Ordering::SeqCst)).then_some(policy.threshold)
    }

    /// The automatic-compaction policy (from the settings' `autoCompactThreshold`, or the last
    /// [`set_compaction_policy`](Self::set_compaction_policy)).
    pub fn compaction_policy(&self) -> CompactionPolicy {
        *self
            .compaction
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Replaces the automatic-compaction policy from the next prompt on (the `context auto`
    /// command; saving it in settings is the caller's business). Turning it on also undoes
    /// [`set_auto_compact(false)`](Self::set_auto_compact). A threshold outside (0, 1] is
    /// refused with [`SessionError::InvalidCompactionThreshold`].
    pub fn set_compaction_policy(&self, policy: CompactionPolicy) -> Result<(), SessionError> {
        if !(policy.threshold > 0.0 && policy.threshold <= 1.0) {
            return Err(SessionError::InvalidCompactionThreshold {
                threshold: policy.threshold,
            });
        }
        *self
            .compaction
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = policy;
        if policy.enabled {
            self.auto_compact.store(true, Ordering::SeqCst);
        }
        let state = self.estimate(self.lock_conversation().size());
        self.update_context(state);
        Ok(())
    }

    /// The tool called `name` that this session's model is offered, if any (for running a call
    /// on the model's behalf, e.g. a custom command's `` !`command` `` snippet as `Bash`).
    pub fn tool(&self, name: &str) -> Option<Arc<dyn crate::tools::Tool>> {
        self.engine.tools().get(name).cloned()
    }

    /// The names of the tools the model is offered.
    pub fn tool_names(&self) -> Vec<String> {
        self.engine
            .tools()
            .names()
            .into_iter()
            .map(str::to_string)
            .collect()
    }

    /// The full history (chat messages and event entries). During a run: everything committed
    /// so far.
    pub fn conversation(&self) -> Conversation {
        self.lock_conversation().clone()
    }

    /// The id of the newest history entry, read without copying the history.
    pub fn last_history_entry_id(&self) -> Option<String> {
        self.lock_conversation()
            .entries()
            .last()
            .map(|e| e.id().to_string())
    }

    /// The history entries after the entry `mark` (all of them when `mark` is `None`), copied
    /// without copying the rest. When `mark` is gone (a compaction replaced the entries
    /// before), from the last user message. Searches from the end: the cost follows what is
    /// returned, not the history's length.
    pub fn history_after(&self, mark: Option<&str>) -> Vec<crate::message::HistoryEntry> {
        let conversation = self.lock_conversation();
        let entries = conversation.entries();
        let start = match mark.and_then(|m| entries.iter().rposition(|e| e.id() == m)) {
            Some(index) => index + 1,
            None if mark.is_none() => 0,
            None => entries
                .iter()
                .rposition(|e| {
                    e.message()
                        .is_some_and(|m| m.role == crate::message::Role::User)
                })
                .unwrap_or(0),
        };
        entries[start..].iter().map(|e| (**e).clone()).collect()
    }

    /// The chat messages of the history, in order (copies: prefer
    /// [`message_count`](Self::message_count) when only the number matters).
    pub fn messages(&self) -> Vec<Message> {
        self.lock_conversation().messages().cloned().collect()
    }

    /// The number of chat messages in the history (without copying them).
    pub fn message_count(&self) -> usize {
        self.lock_conversation().message_count()
    }

    /// True while a run is in progress.
    pub fn is_running(&self) -> bool {
        self.run_lock.try_lock().is_err()
    }

    /// Aborts the run in progress, if any: a pending permission request is resolved as
    /// cancelled, running tools are stopped, and the run returns with `interrupted: true`.
    pub fn abort(&self) {
        if let Some(cancel) = self
            .current_run
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
        {
            cancel.cancel();
        }
    }

    /// Sends the `session_recovered` event (after a resume that found something to report) and
    /// the `context_loaded` event, and fires SessionStart (source `startup`, or `resume`/`fork`
    /// for a restored session) if that has not happened yet. [`Session::run`] calls this; call
    /// it earlier to run the hooks (and get these events) before the first prompt.
    pub async fn start(&self) {
        self.started
            .get_or_init(|| async {
                let loaded = self
                    .context_loaded
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .take();
                if let Some(report) = &self.recovery {
                    self.events.emit(SessionEvent::SessionRecovered {
                        message: report.message(),
                        report: report.clone(),
                    });
                }
                if let Some(event) = loaded {
                    self.events.emit(event);
                }
                if !self.hooks.has_hooks(HookEvent::SessionStart) {
                    return;
                }
                let mut input = HookInput::session_start(
                    self.enforcer.hook_common(&self.cwd),
                    self.start_source,
                );
                if let HookEventInput::SessionStart(payload) = &mut input.event {
                    payload.model = Some(self.model.clone());
                }
                let outcome = self.run_hooks_with_env_file(&input).await;
                self.events.hook_outcome(&outcome);
                // `sessionTitle` names the session unless the host or a resume already did.
                if let Some(title) = outcome
                    .session_title
                    .clone()
                    .filter(|t| !t.trim().is_empty())
                {
                    if self.get_name().is_none() {
                        self.set_name(Some(title));
                    }
                }
                if !outcome.additional_context.is_empty() {
                    self.start_context
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .extend(outcome.additional_context);
                }
            })
            .await;
    }

    /// Fires the **Setup** hooks (Claude Code's `--init` / `--maintenance`: repository setup or
    /// maintenance, once, before the session takes prompts; matcher target `trigger`). Their
    /// `additionalContext` and plain stdout go to the model with the next prompt, as
    /// SessionStart's do; variables they export through `CLAUDE_ENV_FILE` reach later Bash
    /// commands; a blocking exit (2) is shown to the user and blocks nothing. Refused while a
    /// run is in progress and after shutdown.
    pub async fn run_setup(
        &self,
        trigger: crate::hooks::SetupTrigger,
    ) -> Result<crate::hooks::HookOutcome, SessionError> {
        if self.shut_down.load(Ordering::SeqCst) {
            return Err(SessionError::ShutDown);
        }
        let _exclusive = self.run_lock.try_lock().map_err(|_| SessionError::Busy)?;
        let input = HookInput::setup(self.enforcer.hook_common(&self.cwd), trigger);
        if !self.hooks.has_hooks(HookEvent::Setup) {
            return Ok(crate::hooks::HookOutcome::empty(HookEvent::Setup));
        }
        let outcome = self.run_hooks_with_env_file(&input).await;
        self.events.hook_outcome(&outcome);
        if !outcome.additional_context.is_empty() {
            self.start_context
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .extend(outcome.additional_context.iter().cloned());
        }
        Ok(outcome)
    }

    /// Runs the hooks of `input` with `CLAUDE_ENV_FILE` set to a fresh, empty file (Claude
    /// Code gives it to SessionStart and Setup hooks), then applies what they wrote there to
    /// the session's Bash commands (see [`Builtins::apply_env_file`]).
    async fn run_hooks_with_env_file(&self, input: &HookInput) -> crate::hooks::HookOutcome {
        let file = self.new_env_file(input.event());
        let extra: Vec<(String, String)> = file
            .iter()
            .map(|f| {
                (
                    "CLAUDE_ENV_FILE".to_string(),
                    f.to_string_lossy().into_owned(),
                )
            })
            .collect();
        let outcome = self
            .hooks
            .run_with_env(input, &CancellationToken::new(), &extra)
            .await;
        if let Some(file) = file {
            self.apply_env_file(&file, input.event()).await;
            let _ = std::fs::remove_file(&file);
            if let Some(dir) = file.parent() {
                // Only removed once empty (another event's file may still be in use).
                let _ = std::fs::remove_dir(dir);
            }
        }
        outcome
    }

    /// A new empty `CLAUDE_ENV_FILE` in a private directory of the session under the system
    /// temp dir; `None` (with a warning event) when it cannot be created.
    fn new_env_file(&self, event: HookEvent) -> Option<PathBuf> {
        let dir = std::env::temp_dir().join(format!("robota-env-{}", self.id));
        let number = self.env_files.fetch_add(1, Ordering::SeqCst);
        let file = dir.join(format!("{}-{number}.sh", event.as_str().to_lowercase()));
        let created = std::fs::create_dir_all(&dir)
            .and_then(|()| {
                #[cfg(unix)]
                {
                    use std::os::unix::fs::PermissionsExt;
                    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))?;
                }
                Ok(())
            })
            .and_then(|()| std::fs::File::create(&file).map(drop));
        match created {
            Ok(()) => Some(file),
            Err(err) => {
                self.events.emit(SessionEvent::Warning {
                    source: "CLAUDE_ENV_FILE".into(),
                    message: format!(
                        "cannot create {} for the {event} hooks ({err}); variables they export \
                         will not reach Bash commands",
                        file.display()
                    ),
                });
                None
            }
        }
    }

    /// Applies a `CLAUDE_ENV_FILE` hooks wrote to the built-in tools' environment. Problems are
    /// `warning` events (source `CLAUDE_ENV_FILE`).
    async fn apply_env_file(&self, file: &Path, event: HookEvent) {
        let written = std::fs::metadata(file).is_ok_and(|m| m.len() > 0);
        if !written {
            return;
        }
        let Some(builtins) = &self.builtins else {
            self.events.emit(SessionEvent::Warning {
                source: "CLAUDE_ENV_FILE".into(),
                message: format!(
                    "the {event} hooks exported variables, but this session runs the host's \
                     tools, which robota cannot give them to"
                ),
            });
            return;
        };
        if let Err(problem) = builtins.apply_env_file(file).await {
            self.events.emit(SessionEvent::Warning {
                source: "CLAUDE_ENV_FILE".into(),
                message: format!(
                    "the variables the {event} hooks wrote to CLAUDE_ENV_FILE could not be read \
                     ({problem}); later Bash commands run without them"
                ),
            });
        }
    }

    /// Sends `prompt` to the agent and runs until it answers (see the module docs for the hooks
    /// around it).
    pub async fn run(&self, prompt: impl Into<String>) -> Result<RunOutcome, SessionError> {
        self.run_with_context(prompt, Vec::new()).await
    }

    /// Like [`run`](Self::run), with this prompt's final answer shaped by `format` instead of the
    /// session's `output_format` (see [`structured_output`](super::structured_output)): the
    /// outcome's `structured_output` holds the validated value. A schema that is not a valid
    /// JSON Schema is [`SessionError::InvalidOutputFormat`] and nothing is sent.
    pub async fn run_with_output_format(
        &self,
        prompt: impl Into<String>,
        format: &OutputFormat,
    ) -> Result<RunOutcome, SessionError> {
        self.run_as_typed_with_output_format(prompt, None, Vec::new(), None, format)
            .await
    }

    /// [`run_as_typed`](Self::run_as_typed) with this run's final answer shaped by `format`
    /// instead of the session's `output_format` (a queued interactive prompt's own format). A
    /// schema that is not a valid JSON Schema is [`SessionError::InvalidOutputFormat`] and
    /// nothing is sent.
    pub async fn run_as_typed_with_output_format(
        &self,
        prompt: impl Into<String>,
        typed: Option<&str>,
        context: Vec<String>,
        model: Option<&str>,
        format: &OutputFormat,
    ) -> Result<RunOutcome, SessionError> {
        let output = StructuredOutput::new(format, self.max_structured_output_retries)?;
        *self
            .run_structured_output
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(output);
        let result = self.run_as_typed(prompt, typed, context, model).await;
        // Not taken when the run could not start (busy, shut down, over budget).
        self.run_structured_output
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        result
    }

    /// Like [`run`](Self::run), with `context` (e.g. the contents of `@file` references) sent to
    /// the model with this prompt only, as model-only context like a hook's
    /// `additionalContext`; the history keeps `prompt` as typed.
    pub async fn run_with_context(
        &self,
        prompt: impl Into<String>,
        context: Vec<String>,
    ) -> Result<RunOutcome, SessionError> {
        self.run_on_model(prompt, context, None).await
    }

    /// Like [`run_with_context`](Self::run_with_context), with this run's model calls going to
    /// `model` on the session's provider (endpoint, credentials and settings unchanged); the
    /// session's model is back for the next run. `None`, the session's own model, or a provider
    /// that cannot switch models ([`can_run_on`](Self::can_run_on) is false) is a normal run.
    pub async fn run_on_model(
        &self,
        prompt: impl Into<String>,
        context: Vec<String>,
        model: Option<&str>,
    ) -> Result<RunOutcome, SessionError> {
        self.run_as_typed(prompt, None, context, model).await
    }

    /// Like [`run_on_model`](Self::run_on_model), for a prompt the host built from what the
    /// user typed (`typed`, e.g. `/audit` expanded into instructions): UserPromptSubmit hooks
    /// see `typed` as their `prompt`, the model and the history see `prompt`. `None` is
    /// `run_on_model`.
    pub async fn run_as_typed(
        &self,
        prompt: impl Into<String>,
        typed: Option<&str>,
        context: Vec<String>,
        model: Option<&str>,
    ) -> Result<RunOutcome, SessionError> {
        let prompt = prompt.into();
        let current = self.current_model();
        let provider = match model.filter(|m| *m != current) {
            Some(m) => self.provider.with_model(m),
            None => self.switched_provider(),
        };
        if self.shut_down.load(Ordering::SeqCst) {
            return Err(SessionError::ShutDown);
        }
        let _running = self.run_lock.try_lock().map_err(|_| SessionError::Busy)?;
        if let Some(budget) = &self.budget {
            let status = budget.check(&self.usage());
            if let Some(reason) = status.stop_reason().filter(|_| status.is_reached()) {
                return Err(SessionError::BudgetExceeded { reason });
            }
        }
        let cancel = self.begin_exclusive();
        // Cleans up also when the host drops this future halfway (prefer `abort`, which lets
        // the run finish the history properly).
        let _cleanup = RunCleanup {
            session: self,
            cancel: cancel.clone(),
        };
        if !context.is_empty() {
            self.start_context
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .extend(context);
        }
        *self
            .run_provider
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = provider;
        *self
            .run_switch
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = ProviderSwitch::new();
        let Some(telemetry) = &self.telemetry else {
            return self.run_turn(prompt, typed, &cancel).await;
        };
        let span = telemetry.begin_prompt(self.provider.name(), model.unwrap_or(&current));
        let result = self.run_turn(prompt, typed, &cancel).await;
        telemetry.end_prompt(span, &result);
        result
    }

    /// The structured output checks of the run starting now: its per-prompt format, else the
    /// session's.
    fn structured_output_check(&self) -> Option<StructuredOutputCheck> {
        self.run_structured_output
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
            .or_else(|| self.structured_output.clone())
            .map(StructuredOutputCheck::new)
    }

    /// Registers a new cancellation token as the current run's (so [`abort`](Self::abort)
    /// reaches it). The caller holds the run lock.
    fn begin_exclusive(&self) -> CancellationToken {
        let cancel = CancellationToken::new();
        *self
            .current_run
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(cancel.clone());
        self.enforcer.begin_run(cancel.clone());
        cancel
    }

    async fn run_turn(
        &self,
        prompt: String,
        typed: Option<&str>,
        cancel: &CancellationToken,
    ) -> Result<RunOutcome, SessionError> {
        // First, so SessionStart hooks (an `mcp_tool` one) and the model find the servers'
        // tools, as when the session had connected them before it was returned.
        self.wait_for_mcp_startup(cancel).await;
        if cancel.is_cancelled() {
            return Ok(interrupted_before_start());
        }
        self.start().await;
        // Before the prompt is processed, so compaction never interrupts a response stream
        // (spec 002 "Auto-Compaction").
        self.maybe_auto_compact(cancel).await;
        if cancel.is_cancelled() {
            return Ok(interrupted_before_start());
        }
        self.drain_async_hook_results();
        let mut structured = self.structured_output_check();
        let mut context: Vec<String> = std::mem::take(
            &mut *self
                .start_context
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        );

        if self.hooks.has_hooks(HookEvent::UserPromptSubmit) {
            let hook_prompt = typed.map_or_else(|| prompt.clone(), str::to_string);
            let input =
                HookInput::user_prompt_submit(self.enforcer.hook_common(&self.cwd), hook_prompt);
            let outcome = self.hooks.run(&input, cancel).await;
            self.events.hook_outcome(&outcome);
            if cancel.is_cancelled() {
                // Nothing was sent; the SessionStart context waits for the next prompt.
                self.start_context
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .splice(0..0, context);
                return Ok(interrupted_before_start());
            }
            let rejection = outcome
                .block
                .as_ref()
                .map(|b| b.reason.clone())
                .or_else(|| {
                    outcome.stop.as_ref().map(|s| {
                        s.reason
                            .clone()
                            .unwrap_or_else(|| "a UserPromptSubmit hook stopped the agent".into())
                    })
                });
            if let Some(reason) = rejection {
                self.events.emit(SessionEvent::PromptRejected {
                    prompt,
                    reason: reason.clone(),
                });
                self.start_context
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .splice(0..0, context);
                return Err(SessionError::PromptRejected { reason });
            }
            context.extend(outcome.additional_context);
        }

        if let Some(check) = &structured {
            context.push(check.instructions());
        }
        let mut message = Message::user(prompt);
        if !context.is_empty() {
            message.metadata.insert(
                MODEL_CONTEXT_METADATA.into(),
                format!(
                    "<system-reminder>\n{}\n</system-reminder>",
                    context.join("\n\n")
                )
                .into(),
            );
        }

        let mut conversation = self.lock_conversation().clone();
        // Pre-send estimate (spec 002 "Usage And Context Refresh").
        let estimate = self.estimate(conversation.size().plus(MessageSize::of(&message)));
        self.update_context(estimate);
        if let Some(persistence) = &self.persistence {
            persistence.turn_started();
            persistence.log(&LogEvent::PreRun {
                execution_id: None,
                input: message.text(),
                provider: Some(self.provider.name().to_string()),
                model: Some(
                    self.run_provider
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .as_ref()
                        .map_or_else(|| self.model.clone(), |p| p.model().to_string()),
                ),
                history_length: conversation.message_count(),
            });
        }
        let accounting = Arc::new(Mutex::new(TurnAccounting::default()));
        let mut total: Option<RunOutcome> = None;
        let mut stop_blocks = 0u32;
        loop {
            let outcome = self
                .engine
                .run(
                    &mut conversation,
                    message,
                    self.run_options(cancel, &accounting)
                        .with_output_schema(structured.as_ref().map(|c| c.native_schema())),
                )
                .await;
            let outcome = accumulate(&mut total, outcome);
            if self.enforcer.stop_requested() || outcome.interrupted {
                break;
            }
            if outcome.stop_reason == RunStopReason::Error {
                self.stop_failure(&outcome, cancel).await;
                break;
            }
            let Some(reason) = self.stop_hooks(&outcome, stop_blocks > 0, cancel).await else {
                // The model is done: an answer that does not match the output schema gets a
                // follow-up with the validation errors (up to the retry limit).
                if let Some(follow_up) = structured.as_mut().and_then(|c| c.review(&mut total)) {
                    message = follow_up;
                    continue;
                }
                break;
            };
            if stop_blocks >= MAX_CONSECUTIVE_STOP_BLOCKS {
                self.events.emit(SessionEvent::StopHookLimitReached {
                    reason,
                    consecutive_blocks: stop_blocks,
                });
                break;
            }
            stop_blocks += 1;
            self.events.emit(SessionEvent::StopHookContinued {
                reason: reason.clone(),
                consecutive_blocks: stop_blocks,
            });
            message = Message::user(reason);
            message
                .metadata
                .insert(STOP_HOOK_MESSAGE_METADATA.into(), true.into());
        }
        let outcome = total.unwrap_or_else(interrupted_before_start);
        let TurnAccounting { totals, last_call } =
            std::mem::take(&mut *accounting.lock().unwrap_or_else(PoisonError::into_inner));
        self.lock_usage().add_turn(&totals);
        // Post-response reconciliation: the provider's count when it gave one.
        let state = match last_call.as_ref().and_then(exact_tokens) {
            Some(tokens) => ContextState::new(tokens, self.active_context_window(), false),
            None => self.estimate(conversation.size()),
        };
        if let Some(persistence) = &self.persistence {
            persistence.log(&LogEvent::TurnEnd {
                execution_id: Some(outcome.execution_id.clone()),
                stop_reason: wire_name(&outcome.stop_reason),
                rounds: outcome.rounds,
                message_count: conversation.message_count(),
                usage: totals,
            });
        }
        *self.lock_conversation() = conversation;
        self.save(SnapshotWhen::Due);
        self.update_context(state);
        Ok(outcome)
    }

    /// Appends `message` to the history outside a turn, e.g. a notice from the host ("the user
    /// switched branches") that the model should see with the next prompt. With persistence it
    /// is logged as `history_append` and the snapshot is saved, so it survives a resume.
    ///
    /// Refused with [`SessionError::Busy`] while a run is in progress (the run owns the history
    /// then, and a message slipped between a tool call and its result would break the
    /// conversation) and with [`SessionError::ShutDown`] after shutdown.
    pub fn inject_message(&self, message: Message) -> Result<(), SessionError> {
        if self.shut_down.load(Ordering::SeqCst) {
            return Err(SessionError::ShutDown);
        }
        // Held while appending so a run cannot start halfway.
        let _exclusive = self.run_lock.try_lock().map_err(|_| SessionError::Busy)?;
        let entry = {
            let mut conversation = self.lock_conversation();
            conversation.push(message);
            conversation.entries().last().map(|e| (**e).clone())
        };
        if let (Some(persistence), Some(entry)) = (&self.persistence, entry) {
            persistence.log(&LogEvent::HistoryAppend { entry });
        }
        self.save(SnapshotWhen::Due);
        Ok(())
    }

    /// Appends an event entry (category `event`, e.g. `tool-summary`) to the history. Refused
    /// like [`inject_message`](Self::inject_message) while a run is in progress or after
    /// shutdown. Event entries are never sent to the model.
    pub fn append_history_event(
        &self,
        event_type: &str,
        data: serde_json::Value,
    ) -> Result<(), SessionError> {
        if self.shut_down.load(Ordering::SeqCst) {
            return Err(SessionError::ShutDown);
        }
        let _exclusive = self.run_lock.try_lock().map_err(|_| SessionError::Busy)?;
        let entry = {
            let mut conversation = self.lock_conversation();
            conversation.push_event(event_type, data);
            conversation.entries().last().map(|e| (**e).clone())
        };
        if let (Some(persistence), Some(entry)) = (&self.persistence, entry) {
            persistence.log(&LogEvent::HistoryAppend { entry });
        }
        self.save(SnapshotWhen::Due);
        Ok(())
    }

    /// Empties the conversation (the `clear` command). Refused while a run is in progress and
    /// after shutdown. Usage totals are kept: the money was spent.
    pub fn clear_conversation(&self) -> Result<(), SessionError> {
        if self.shut_down.load(Ordering::SeqCst) {
            return Err(SessionError::ShutDown);
        }
        let _exclusive = self.run_lock.try_lock().map_err(|_| SessionError::Busy)?;
        let cleared = Conversation::new();
        if let Some(persistence) = &self.persistence {
            persistence.log(&LogEvent::HistoryReplace {
                reason: "clear".into(),
                entries: Vec::new(),
                usage: None,
            });
        }
        let state = self.estimate(cleared.size());
        *self.lock_conversation() = cleared;
        self.save(SnapshotWhen::Now);
        self.update_context(state);
        Ok(())
    }

    /// Saves the session (when it is saved): the snapshot now, or with [`SnapshotWhen::Due`]
    /// only when it is due and else the log synced to disk. Errors become `persistence_error`
    /// events.
    fn save(&self, when: SnapshotWhen) {
        let Some(persistence) = &self.persistence else {
            return;
        };
        let name = self.get_name();
        let mode = self.permission_mode();
        if when == SnapshotWhen::Due {
            let history_chars = self.lock_conversation().size().chars;
            if !persistence.snapshot_due(history_chars, &name, mode.as_str()) {
                persistence.sync();
                return;
            }
        }
        let conversation = self.conversation();
        persistence.save(&conversation, &self.usage(), name, mode.as_str());
    }

    /// The estimated context state of a request with these messages.
    fn estimate(&self, messages: HistorySize) -> ContextState {
        let tokens = estimated_tokens(
            self.system_prompt.as_deref(),
            &self.engine.tools().definitions(),
            messages,
        );
        ContextState::new(tokens, self.active_context_window(), true)
    }

    fn update_context(&self, state: ContextState) {
        *self.context.lock().unwrap_or_else(PoisonError::into_inner) = Some(state);
        self.events.emit(SessionEvent::ContextUpdate { state });
    }

    /// How full the context window is: the last measurement (exact after a turn whose provider
    /// reported usage, estimated before a run or after compaction), or an estimate of the
    /// current history when nothing was measured yet (a new or resumed session).
    pub fn context_state(&self) -> ContextState {
        let known = *self.context.lock().unwrap_or_else(PoisonError::into_inner);
        match known {
            Some(state) => state,
            None => {
                let conversation = self.conversation();
                self.estimate(conversation.size())
            }
        }
    }

    /// Cumulative tokens and cost of the session (including compaction calls; restored on
    /// resume). Costs come from the options' price table.
    pub fn usage(&self) -> UsageTotals {
        self.lock_usage().clone()
    }

    fn lock_usage(&self) -> std::sync::MutexGuard<'_, UsageTotals> {
        self.usage.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The session's name, if it has one.
    pub fn get_name(&self) -> Option<String> {
        self.name
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Names (or, with `None`, unnames) the session. Logged at once; the snapshot is saved now
    /// when no run is in progress, else after the run.
    pub fn set_name(&self, name: Option<String>) {
        *self.name.lock().unwrap_or_else(PoisonError::into_inner) = name.clone();
        if let Some(persistence) = &self.persistence {
            persistence.log(&LogEvent::SessionRenamed { name });
            // Saving mid-run would record a log position inside an unfinished turn.
            if let Ok(_idle) = self.run_lock.try_lock() {
                self.save(SnapshotWhen::Now);
            }
        }
    }

    /// Turns automatic compaction on or off for this session (the settings'
    /// `autoCompactThreshold: false` keeps it off regardless).
    pub fn set_auto_compact(&self, enabled: bool) {
        self.auto_compact.store(enabled, Ordering::SeqCst);
    }

    /// Compacts the conversation now: PreCompact hooks (trigger `manual`), one summary call
    /// (with `instructions`, else the session's compact instructions, as "Additional focus"),
    /// then the history becomes the system messages plus the summary (see
    /// [`compaction`](super::compaction)). On any error the history is unchanged:
    /// [`SessionError::CompactionBlocked`], [`SessionError::CompactionFailed`] (after
    /// [`MAX_COMPACTION_ATTEMPTS`] calls), [`SessionError::CompactionAborted`] (see
    /// [`abort`](Self::abort)), [`SessionError::NothingToCompact`], or `Busy`/`ShutDown`.
    pub async fn compact(
        &self,
        instructions: Option<String>,
    ) -> Result<CompactionSummary, SessionError> {
        if self.shut_down.load(Ordering::SeqCst) {
            return Err(SessionError::ShutDown);
        }
        let _running = self.run_lock.try_lock().map_err(|_| SessionError::Busy)?;
        let cancel = self.begin_exclusive();
        let _cleanup = RunCleanup {
            session: self,
            cancel: cancel.clone(),
        };
        self.compact_locked(CompactTrigger::Manual, instructions, &cancel)
            .await
    }

    /// Compacts before a run when the context is at the threshold. Failures were reported as
    /// events; the run goes on with the history as it was.
    async fn maybe_auto_compact(&self, cancel: &CancellationToken) {
        let Some(threshold) = self.auto_compact_threshold() else {
            return;
        };
        if !self.context_state().should_compact(threshold) {
            return;
        }
        let _reported = self
            .compact_locked(CompactTrigger::Auto, None, cancel)
            .await;
    }

    /// The compaction flow (traced when telemetry is on); the caller holds the run lock.
    async fn compact_locked(
        &self,
        trigger: CompactTrigger,
        instructions: Option<String>,
        cancel: &CancellationToken,
    ) -> Result<CompactionSummary, SessionError> {
        let started = std::time::SystemTime::now();
        let result = self.compact_untraced(trigger, instructions, cancel).await;
        if let Some(telemetry) = &self.telemetry {
            telemetry.compaction(trigger, started, &result, |s| {
                (s.tokens_before, s.tokens_after)
            });
        }
        result
    }

    async fn compact_untraced(
        &self,
        trigger: CompactTrigger,
        instructions: Option<String>,
        cancel: &CancellationToken,
    ) -> Result<CompactionSummary, SessionError> {
        let conversation = self.conversation();
        if conversation
            .messages()
            .all(|m| m.role == crate::message::Role::System)
        {
            return Err(SessionError::NothingToCompact);
        }
        let tokens_before = self.context_state().used_tokens;
        let instructions = instructions
            .filter(|i| !i.trim().is_empty())
            .or_else(|| self.compact_instructions.clone());

        if self.hooks.has_hooks(HookEvent::PreCompact) {
            let input = HookInput::new(
                self.enforcer.hook_common(&self.cwd),
                HookEventInput::PreCompact(PreCompactInput {
                    trigger,
                    custom_instructions: instructions.clone().unwrap_or_default(),
                }),
            );
            let outcome = self.hooks.run(&input, cancel).await;
            self.events.hook_outcome(&outcome);
            if cancel.is_cancelled() {
                return Err(SessionError::CompactionAborted);
            }
            let blocked = outcome.block.map(|b| b.reason).or_else(|| {
                outcome.stop.map(|s| {
                    s.reason
                        .unwrap_or_else(|| "a PreCompact hook stopped the agent".into())
                })
            });
            if let Some(reason) = blocked {
                self.events.emit(SessionEvent::CompactionSkipped {
                    trigger,
                    reason: format!("blocked by a PreCompact hook: {reason}"),
                });
                return Err(SessionError::CompactionBlocked { reason });
            }
        }

        // No system prompt and no tools: the model is only asked to write the summary, and
        // without tool definitions it cannot answer with a tool call instead.
        let request = ProviderRequest {
            messages: vec![Arc::new(Message::user(summary_prompt(
                conversation.messages(),
                instructions.as_deref(),
            )))],
            max_tokens: self.max_tokens,
            ..ProviderRequest::default()
        };
        let mut last_problem = String::new();
        let mut summary = None;
        for _attempt in 0..MAX_COMPACTION_ATTEMPTS {
            let provider = self
                .switched_provider()
                .unwrap_or_else(|| Arc::clone(&self.provider));
            let result = provider.stream(&request, &|_| {}, cancel).await;
            if cancel.is_cancelled() {
                return Err(SessionError::CompactionAborted);
            }
            match result {
                Ok(response) => {
                    let model = if response.model.is_empty() {
                        self.model.as_str()
                    } else {
                        response.model.as_str()
                    };
                    // The summary call costs money like any other.
                    self.lock_usage()
                        .record_call(&self.prices, model, &response.usage);
                    match check_summary(&response) {
                        Ok(text) => {
                            summary = Some(text);
                            break;
                        }
                        Err(problem) => last_problem = problem,
                    }
                }
                Err(error) => last_problem = error.to_string(),
            }
        }
        let Some(summary) = summary else {
            self.events.emit(SessionEvent::CompactionSkipped {
                trigger,
                reason: last_problem.clone(),
            });
            return Err(SessionError::CompactionFailed {
                attempts: MAX_COMPACTION_ATTEMPTS,
                message: last_problem,
            });
        };

        let compacted = compacted_history(&conversation, &summary);
        let after = self.estimate(compacted.size());
        if let Some(persistence) = &self.persistence {
            persistence.log(&LogEvent::HistoryReplace {
                reason: "compaction".into(),
                entries: compacted.to_entries(),
                usage: None,
            });
        }
        *self.lock_conversation() = compacted;
        self.save(SnapshotWhen::Now);
        self.update_context(after);

        if self.hooks.has_hooks(HookEvent::PostCompact) {
            let input = HookInput::new(
                self.enforcer.hook_common(&self.cwd),
                HookEventInput::PostCompact(PostCompactInput {
                    trigger,
                    compact_summary: summary.clone(),
                }),
            );
            let outcome = self.hooks.run(&input, cancel).await;
            self.events.hook_outcome(&outcome);
        }
        self.events.emit(SessionEvent::Compaction {
            trigger,
            tokens_before,
            tokens_after: after.used_tokens,
            summary: summary.clone(),
        });
        Ok(CompactionSummary {
            tokens_before,
            tokens_after: after.used_tokens,
            summary,
        })
    }

    /// Runs the Stop hooks; `Some(reason)` when they block (the agent should continue).
    async fn stop_hooks(
        &self,
        outcome: &RunOutcome,
        stop_hook_active: bool,
        cancel: &CancellationToken,
    ) -> Option<String> {
        if !self.hooks.has_hooks(HookEvent::Stop) {
            return None;
        }
        let input = HookInput::new(
            self.enforcer.hook_common(&self.cwd),
            HookEventInput::Stop(StopInput {
                stop_hook_active,
                last_assistant_message: Some(outcome.response.clone()),
                background_tasks: None,
            }),
        );
        let result = self.hooks.run(&input, cancel).await;
        self.events.hook_outcome(&result);
        if result.block.is_none() && !result.additional_context.is_empty() {
            // Claude Code places a Stop hook's context at the end of the turn: the model sees
            // it with the next prompt (a blocking hook's context goes with its reason instead).
            self.start_context
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .extend(result.additional_context.iter().cloned());
        }
        if let Some(stop) = &result.stop {
            self.enforcer
                .request_stop(HookEvent::Stop, stop.reason.clone());
            return None;
        }
        if cancel.is_cancelled() {
            return None;
        }
        let context = result.additional_context.join("\n\n");
        result.block.map(|b| {
            if context.is_empty() {
                b.reason
            } else {
                format!("{}\n\n{context}", b.reason)
            }
        })
    }

    async fn stop_failure(&self, outcome: &RunOutcome, cancel: &CancellationToken) {
        if !self.hooks.has_hooks(HookEvent::StopFailure) {
            return;
        }
        let (error, details) = match &outcome.error {
            Some(e) => (stop_failure_type(e), Some(e.message.clone())),
            None => ("unknown", None),
        };
        let input = HookInput::new(
            self.enforcer.hook_common(&self.cwd),
            HookEventInput::StopFailure(StopFailureInput {
                error: error.to_string(),
                error_details: details,
                last_assistant_message: Some(outcome.response.clone()).filter(|r| !r.is_empty()),
            }),
        );
        let result = self.hooks.run(&input, cancel).await;
        self.events.hook_outcome(&result);
    }

    fn run_options(
        &self,
        cancel: &CancellationToken,
        accounting: &Arc<Mutex<TurnAccounting>>,
    ) -> RunOptions {
        let events = self.events.clone();
        let mirror = Arc::clone(&self.conversation);
        let forward = self.on_execution_event.clone();
        let log = self
            .persistence
            .as_ref()
            .and_then(Persistence::execution_callback);
        let accounting = Arc::clone(accounting);
        let traced = self.telemetry.as_ref().map(|t| t.execution_observer(None));
        let prices = self.prices.clone();
        let run_provider = self
            .run_provider
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let default_model = run_provider
            .as_ref()
            .map_or_else(|| self.model.clone(), |p| p.model().to_string());
        let options = RunOptions::new();
        let options = match run_provider {
            Some(provider) => options.with_provider(provider),
            None => options,
        }
        .with_provider_switch(
            self.run_switch
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone(),
        );
        options
            .with_cancel(cancel.clone())
            .with_on_event(move |event| {
                let todos = todo_update(&event);
                events.emit(SessionEvent::Engine(event));
                if let Some(todos) = todos {
                    events.emit(SessionEvent::TodoUpdate { todos });
                }
            })
            .with_on_execution_event(move |event| {
                if let ExecutionEvent::HistoryMutation { message, .. } = &event {
                    mirror
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .push(message.clone());
                }
                if let ExecutionEvent::ProviderResponse { response, .. } = &event {
                    let model = if response.model.is_empty() {
                        default_model.as_str()
                    } else {
                        response.model.as_str()
                    };
                    let mut turn = accounting.lock().unwrap_or_else(PoisonError::into_inner);
                    turn.totals.record_call(&prices, model, &response.usage);
                    turn.last_call = Some(response.usage);
                }
                if let Some(traced) = &traced {
                    traced.observe(&event);
                }
                if let Some(log) = &log {
                    log(event.clone());
                }
                if let Some(forward) = &forward {
                    forward(event);
                }
            })
    }

    /// Ends the session: aborts any run and waits for it to finish, fires SessionEnd (exactly
    /// once, however often this is called), stops background hooks, then stops every process
    /// group the session still has (SIGTERM, the kill grace, SIGKILL). Later runs are refused.
    pub async fn shutdown(&self, reason: SessionEndReason) {
        self.shut_down.store(true, Ordering::SeqCst);
        self.abort();
        self.ended
            .get_or_init(|| async {
                // Wait for a run that was in progress to wind down, so SessionEnd comes last.
                let _idle = self.run_lock.lock().await;
                // Persisted before SessionEnd, as in the TypeScript session.
                if let Some(persistence) = &self.persistence {
                    persistence.log(&LogEvent::SessionShutdown {
                        reason: reason.as_str().to_string(),
                    });
                    self.save(SnapshotWhen::Now);
                    persistence.sync();
                    // The session writes nothing more: another process may open it now.
                    persistence.close();
                }
                if self.hooks.has_hooks(HookEvent::SessionEnd) {
                    let input =
                        HookInput::session_end(self.enforcer.hook_common(&self.cwd), reason);
                    let outcome = self.hooks.run(&input, &CancellationToken::new()).await;
                    self.events.hook_outcome(&outcome);
                }
                self.hooks.shutdown();
                if let Some(mcp) = &self.mcp {
                    mcp.shutdown().await;
                }
                // Last: background tasks, background hooks and anything else still running.
                if let Some(builtins) = &self.builtins {
                    builtins.background_tasks().stop_external();
                }
                self.processes.stop_all(self.kill_grace).await;
                // Each stopped background task records how it ended before shutdown returns.
                if let Some(builtins) = &self.builtins {
                    builtins
                        .background_tasks()
                        .settle(std::time::Duration::from_secs(5))
                        .await;
                }
                // Last, so the SessionEnd hooks' spans go too; bounded by the export timeout.
                self.flush_telemetry().await;
            })
            .await;
    }

    /// Sends the spans and metrics recorded so far to the collector now, waiting the export
    /// timeout at most (an unreachable collector does not hold the caller longer). True when
    /// everything was handed over in time, and when the session has no telemetry.
    /// [`shutdown`](Self::shutdown) does this too.
    pub async fn flush_telemetry(&self) -> bool {
        match &self.telemetry {
            Some(telemetry) => telemetry.flush().await,
            None => true,
        }
    }

    /// Makes `parent` (the host's W3C trace context) the parent of the following prompts'
    /// spans, e.g. the host's request span of each prompt; `None`: each prompt starts a trace of
    /// its own. Without telemetry it is checked and otherwise ignored.
    pub fn set_trace_parent(
        &self,
        parent: Option<&crate::telemetry::TraceParent>,
    ) -> Result<(), SessionError> {
        match &self.telemetry {
            Some(telemetry) => telemetry.set_trace_parent(parent),
            None => parent.map_or(Ok(()), |p| {
                p.validate().map_err(|e| SessionError::InvalidTelemetry {
                    message: e.to_string(),
                })
            }),
        }
    }

    /// Makes `parent` (the host's W3C trace context) the parent of the next prompt's span only,
    /// e.g. the host's request that submits it; later prompts go back to the session's parent.
    /// Without telemetry it is checked and otherwise ignored.
    pub fn set_next_prompt_trace_parent(
        &self,
        parent: &crate::telemetry::TraceParent,
    ) -> Result<(), SessionError> {
        match &self.telemetry {
            Some(telemetry) => telemetry.set_next_trace_parent(parent),
            None => parent
                .validate()
                .map_err(|e| SessionError::InvalidTelemetry {
                    message: e.to_string(),
                }),
        }
    }

    /// The session's tracing, for its subagents.
    pub(super) fn telemetry(&self) -> Option<&Arc<SessionTelemetry>> {
        self.telemetry.as_ref()
    }

    /// The live process groups of the session (tool calls, background tasks, command hooks):
    /// for a host's process view, and to stop them from code that cannot await
    /// ([`ProcessGroups::stop_all_blocking`], [`ProcessGroups::kill_all_now`]).
    pub fn processes(&self) -> &ProcessGroups {
        &self.processes
    }

    /// The session's background task manager (`None` when the session runs without the
    /// built-in tools).
    pub fn background_tasks(&self) -> Option<&crate::tools::builtins::BackgroundTasks> {
        self.builtins.as_ref().map(Builtins::background_tasks)
    }

    /// Registers a background task whose work the caller runs (a background subagent) with the
    /// session's task manager ([`Builtins::start_external_task`]). Refused without the built-in
    /// tools, after shutdown, or at the concurrency limit.
    pub fn start_external_task(
        &self,
        request: crate::tools::builtins::ExternalTaskRequest<'_>,
    ) -> Result<crate::tools::builtins::ExternalTask, String> {
        if self.shut_down.load(Ordering::SeqCst) {
            return Err("the session has shut down".into());
        }
        self.builtins
            .as_ref()
            .ok_or_else(|| {
                "this session has no background tasks (it runs without the built-in tools)"
                    .to_string()
            })?
            .start_external_task(request)
    }

    /// How long a stopped process group of the session gets between SIGTERM and SIGKILL.
    pub fn kill_grace(&self) -> std::time::Duration {
        self.kill_grace
    }

    /// True once [`shutdown`](Self::shutdown) was called.
    pub fn is_shut_down(&self) -> bool {
        self.shut_down.load(Ordering::SeqCst)
    }

    /// Adds `text` as model-only context of the next prompt (beside SessionStart and background
    /// hook context): what the model should read with the user's next message but the user did
    /// not write, such as the summary of a finished group of background subagents.
    pub fn add_context_for_next_prompt(&self, text: impl Into<String>) {
        self.start_context
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(text.into());
    }

    /// Takes the results of background hooks that finished since the last prompt: failures and
    /// messages are reported as events; their `additionalContext` and, for an `asyncRewake`
    /// hook that blocked (exit 2), its `rewakeMessage` and reason become model-only context of
    /// the next prompt (as Claude Code delivers them on the next turn). A `rewakeSummary` is a
    /// `hook_system_message` event for the user.
    fn drain_async_hook_results(&self) {
        let (mut context, rewakes) = self.take_async_hook_results();
        context.extend(rewakes);
        if !context.is_empty() {
            self.start_context
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .extend(context);
        }
    }

    /// The finished background hooks' context and their wake-up messages (reporting their
    /// events on the way).
    fn take_async_hook_results(&self) -> (Vec<String>, Vec<String>) {
        let mut results = Vec::new();
        if let Some(rx) = self
            .async_hook_results
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_mut()
        {
            while let Ok(result) = rx.try_recv() {
                results.push(result);
            }
        }
        let mut context = Vec::new();
        let mut rewakes = Vec::new();
        for result in results {
            let reason = match &result.report.status {
                crate::hooks::HandlerStatus::Blocked { reason, .. } => Some(reason.clone()),
                _ => None,
            };
            let outcome = HookRunner::outcome_of(result.event, [result.report]);
            self.events.hook_outcome(&outcome);
            context.extend(outcome.additional_context);
            if let (true, Some(reason)) = (result.rewake, reason) {
                if let Some(summary) = result.rewake_summary.filter(|s| !s.trim().is_empty()) {
                    self.events.emit(SessionEvent::HookSystemMessage {
                        event: result.event,
                        message: summary,
                    });
                }
                rewakes.push(
                    match result.rewake_message.filter(|m| !m.trim().is_empty()) {
                        Some(message) => format!("{message}\n\n{reason}"),
                        None => format!(
                            "A background {} hook reported: {reason}",
                            result.event.as_str()
                        ),
                    },
                );
            }
        }
        (context, rewakes)
    }

    /// Waits (at most `timeout`) for the background (`async` / `asyncRewake`) hooks still
    /// running — asynchronous Stop hooks above all — so that a headless run does not exit (and
    /// stop them) before they finish. Their results are reported as after any prompt; when an
    /// `asyncRewake` hook blocked, the text to wake the agent with is returned (its
    /// `rewakeMessage` and reason), for the caller to run as the next prompt the way Claude
    /// Code wakes the model. `None` when nothing asks for a wake-up (their context then waits
    /// for the next prompt).
    pub async fn finish_background_hooks(&self, timeout: std::time::Duration) -> Option<String> {
        if !self.hooks.wait_background(timeout).await {
            self.events.emit(SessionEvent::Warning {
                source: "hooks".into(),
                message: format!(
                    "{} background hook(s) still running after {} s are stopped",
                    self.hooks.pending_background(),
                    timeout.as_secs()
                ),
            });
        }
        let (context, rewakes) = self.take_async_hook_results();
        if !context.is_empty() {
            self.start_context
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .extend(context);
        }
        (!rewakes.is_empty()).then(|| rewakes.join("\n\n"))
    }

    /// Reports what a hook run produced that the user should see (failures, messages), for hook
    /// events fired outside this module (worktree hooks).
    pub(crate) fn report_hook_outcome(&self, outcome: &crate::hooks::HookOutcome) {
        self.events.hook_outcome(outcome);
    }

    /// Records one model call a subagent made in the session's usage and cost totals (so
    /// budgets and `cost` include subagents).
    pub(super) fn record_subagent_call(&self, model: &str, usage: &Usage) {
        let model = if model.is_empty() { &self.model } else { model };
        let mut call = UsageTotals::new();
        call.record_call(&self.prices, model, usage);
        self.lock_usage().merge(&call);
    }

    /// What a subagent of this session is built from: the engine (provider, tools, settings),
    /// the event sink and the shut-down flag.
    pub(super) fn subagent_parts(&self) -> (&Engine, &EventSink, bool) {
        (
            &self.engine,
            &self.events,
            self.shut_down.load(Ordering::SeqCst),
        )
    }

    fn lock_conversation(&self) -> std::sync::MutexGuard<'_, Conversation> {
        self.conversation
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// The new task list of a successful `TodoWrite` call's `tool_end`.
fn todo_update(
    event: &crate::engine::EngineEvent,
) -> Option<Vec<crate::tools::builtins::TodoItem>> {
    match event {
        crate::engine::EngineEvent::ToolEnd { name, output, .. }
            if name == "TodoWrite" && !output.is_error =>
        {
            crate::tools::builtins::todos_from_response(&output.response)
        }
        _ => None,
    }
}

/// The serde name of a unit enum value (`completed`, `interrupted`, …).
/// What putting the MCP hub's current tools into a running session needs. Holds the hub and the
/// tools weakly: the hub's listener must not keep the session's tools (which hold the hub) alive.
struct McpToolsRefresh {
    hub: std::sync::Weak<crate::mcp::McpHub>,
    tools: std::sync::Weak<std::sync::RwLock<ToolRegistry>>,
    names: Arc<Mutex<BTreeSet<String>>>,
    hiding_rules: RuleSet,
    recorder: Option<Arc<dyn crate::tools::FileMutationRecorder>>,
    events: EventSink,
}

/// The listener that replaces the session's MCP tools with the hub's current ones (after a
/// server's `tools/list_changed`, a reconnect, enable or disable), with the checks of start-up:
/// a name another session tool has, or one a deny rule hides, stays out.
fn mcp_tools_refresher(refresh: McpToolsRefresh) -> crate::mcp::McpToolsListener {
    Arc::new(move || {
        let (Some(hub), Some(tools)) = (refresh.hub.upgrade(), refresh.tools.upgrade()) else {
            return;
        };
        let mut problems = Vec::new();
        let fresh = hub.tools(&mut problems);
        {
            let mut registry = tools.write().unwrap_or_else(PoisonError::into_inner);
            let mut names = lock_names(&refresh.names);
            for name in names.iter() {
                registry.unregister(name);
            }
            names.clear();
            for tool in fresh {
                let name = tool.name().to_string();
                if registry.get(&name).is_some() {
                    problems.push(format!(
                        "MCP tool `{name}` is left out: another tool of the session has its name"
                    ));
                    continue;
                }
                if !refresh
                    .hiding_rules
                    .hidden_tools([name.as_str()])
                    .is_empty()
                {
                    continue;
                }
                let tool = match &refresh.recorder {
                    Some(recorder) if !tool.is_read_only() => {
                        crate::tools::RecordedTool::wrap(tool, Arc::clone(recorder))
                    }
                    _ => tool,
                };
                registry.register(tool);
                names.insert(name);
            }
        }
        for message in problems {
            refresh.events.emit(SessionEvent::Warning {
                source: "mcp".into(),
                message,
            });
        }
    })
}

fn lock_names(names: &Mutex<BTreeSet<String>>) -> std::sync::MutexGuard<'_, BTreeSet<String>> {
    names.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Concrete paths of the `tool(...)` rules in `list`: `//abs`, `~/…`, `/…` (from the settings
/// file's directory) and `./…` (from the cwd), with a trailing `/**` meaning the directory;
/// patterns with other wildcards, and relative ones (which match at any depth), are left to the
/// permission rules. The sandbox uses them as Claude Code does: `Edit(...)` allow rules are
/// writable, `Read(...)` deny rules unreadable (where the backend can mask them).
fn concrete_rule_paths(
    rules: &RuleSet,
    list: RuleList,
    tool: &str,
    cwd: &Path,
    home: Option<&Path>,
) -> Vec<PathBuf> {
    rules
        .list(list)
        .filter_map(|rule| {
            let inner = rule
                .text()
                .strip_prefix(tool)?
                .strip_prefix('(')?
                .strip_suffix(')')?
                .trim();
            let inner = inner.strip_suffix("/**").unwrap_or(inner);
            if inner.is_empty() || inner.contains(['*', '?', '[', '{']) {
                return None;
            }
            let base = rule.source().base_dir.as_deref().unwrap_or(cwd);
            if let Some(rest) = inner.strip_prefix("//") {
                Some(PathBuf::from(format!("/{rest}")))
            } else if let Some(rest) = inner.strip_prefix("~/") {
                home.map(|h| h.join(rest))
            } else if let Some(rest) = inner.strip_prefix('/') {
                Some(base.join(rest))
            } else {
                inner.strip_prefix("./").map(|rest| cwd.join(rest))
            }
        })
        .collect()
}

/// What the permission rules need to know about the sandbox's current state.
fn bash_sandbox(sandbox: &Sandbox) -> BashSandbox {
    let settings = sandbox.settings();
    BashSandbox {
        active: sandbox.is_active(),
        auto_allow: settings.auto_allow_bash_if_sandboxed,
        excluded_commands: settings.excluded_commands.clone(),
        allow_unsandboxed: settings.allow_unsandboxed_commands,
    }
}

/// A warning when the sandbox is enabled but cannot work here (commands then run unsandboxed,
/// or are refused with `failIfUnavailable`).
fn sandbox_warning(sandbox: &Sandbox) -> Option<SessionWarning> {
    if !sandbox.is_enabled() || sandbox.is_active() {
        return None;
    }
    let status = sandbox.status();
    let consequence = if status.fail_if_unavailable {
        "Bash commands will be refused (`sandbox.failIfUnavailable` is true)"
    } else {
        "Bash commands will run unsandboxed (set `sandbox.failIfUnavailable: true` to refuse them \
         instead)"
    };
    Some(SessionWarning {
        file: None,
        json_path: "sandbox".into(),
        kind: "sandbox".into(),
        message: format!(
            "the OS sandbox is enabled but unavailable: {}; {consequence}",
            status.reason.unwrap_or_default()
        ),
    })
}

fn wire_name<T: Serialize>(value: &T) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

impl Drop for Session {
    fn drop(&mut self) {
        // A session dropped without `shutdown` leaves nothing running either.
        self.processes.kill_all_now();
    }
}

/// Ends a run's bookkeeping when the run finishes or its future is dropped.
struct RunCleanup<'a> {
    session: &'a Session,
    cancel: CancellationToken,
}

impl Drop for RunCleanup<'_> {
    fn drop(&mut self) {
        // Anything still tied to this run (a hook, a permission prompt) stops with it.
        self.cancel.cancel();
        self.session.enforcer.end_run();
        *self
            .session
            .current_run
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = None;
        *self
            .session
            .run_provider
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = None;
    }
}

/// Adds `next` (a continuation after a Stop hook block) to the turn's outcome so far.
pub(super) fn accumulate(total: &mut Option<RunOutcome>, next: RunOutcome) -> RunOutcome {
    let merged = match total.take() {
        None => next,
        Some(mut sum) => {
            sum.usage.add(&next.usage);
            sum.rounds += next.rounds;
            sum.tools_executed.extend(next.tools_executed);
            RunOutcome {
                response: next.response,
                interrupted: next.interrupted,
                rounds: sum.rounds,
                usage: sum.usage,
                stop_reason: next.stop_reason,
                error: next.error,
                refusal: next.refusal,
                tools_executed: sum.tools_executed,
                execution_id: next.execution_id,
                structured_output: next.structured_output,
                structured_output_errors: next.structured_output_errors,
            }
        }
    };
    *total = Some(merged.clone());
    merged
}

pub(super) fn interrupted_before_start() -> RunOutcome {
    RunOutcome {
        response: String::new(),
        interrupted: true,
        rounds: 0,
        usage: Usage::default(),
        stop_reason: RunStopReason::Interrupted,
        error: None,
        refusal: None,
        tools_executed: Vec::new(),
        execution_id: uuid::Uuid::new_v4().to_string(),
        structured_output: None,
        structured_output_errors: Vec::new(),
    }
}

/// Claude Code's StopFailure error types (also the hook matcher target).
fn stop_failure_type(error: &ProviderError) -> &'static str {
    match error.kind {
        ProviderErrorKind::Auth => "authentication_failed",
        ProviderErrorKind::RateLimit => "rate_limit",
        ProviderErrorKind::InvalidRequest | ProviderErrorKind::ContextLength => "invalid_request",
        ProviderErrorKind::Overloaded | ProviderErrorKind::Provider => "server_error",
        ProviderErrorKind::Network => "unknown",
    }
}

/// `prompt` followed by `append` (separated by a blank line); either alone when the other is
/// missing or empty.
fn append_prompt(prompt: Option<String>, append: Option<String>) -> Option<String> {
    let append = append.filter(|a| !a.trim().is_empty());
    match (prompt.filter(|p| !p.trim().is_empty()), append) {
        (Some(prompt), Some(append)) => Some(format!("{}\n\n{}", prompt.trim_end(), append)),
        (prompt, None) => prompt,
        (None, append) => append,
    }
}

/// `cwd` made absolute against the current directory.
pub(crate) fn absolute_cwd(cwd: &Path) -> Result<PathBuf, SessionError> {
    let cwd = if cwd.is_absolute() {
        cwd.to_path_buf()
    } else {
        std::env::current_dir()
            .map_err(|e| SessionError::InvalidCwd {
                cwd: cwd.to_path_buf(),
                message: format!("it is relative and the current directory is unknown: {e}"),
            })?
            .join(cwd)
    };
    if !cwd.is_dir() {
        return Err(SessionError::InvalidCwd {
            cwd,
            message: "it is not an existing directory".into(),
        });
    }
    Ok(cwd)
}

/// Session ids name files (`.robota/sessions/<id>.json`), so only safe names are accepted.
fn validate_session_id(id: String) -> Result<String, SessionError> {
    let valid = (1..=128).contains(&id.len())
        && id.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if valid {
        Ok(id)
    } else {
        Err(SessionError::InvalidSessionId { id })
    }
}

/// The MCP hub of the servers of the settings, `.mcp.json` and the host (the host's replace
/// same-named ones), not connected yet (the session starts it once its listeners are attached);
/// `None` when no server is configured.
/// An in-process server sharing its name with any other server is an error: replacing either
/// silently would hide tools the host or the user relies on.
fn build_mcp_hub(
    from_settings: Vec<crate::mcp::McpServerEntry>,
    skipped: Vec<crate::mcp::McpSkippedServer>,
    from_host: Vec<crate::mcp::McpServerEntry>,
    options: crate::mcp::McpOptions,
    context: crate::mcp::McpConnectContext,
    warnings: &mut Vec<SessionWarning>,
) -> Result<Option<Arc<crate::mcp::McpHub>>, SessionError> {
    let mut by_name: std::collections::BTreeMap<String, crate::mcp::McpServerEntry> =
        std::collections::BTreeMap::new();
    for entry in from_settings.into_iter().chain(from_host) {
        let in_process = |e: &crate::mcp::McpServerEntry| {
            matches!(e.transport, crate::mcp::McpTransport::InProcess { .. })
        };
        let clash = by_name
            .get(&entry.name)
            .filter(|earlier| in_process(&entry) || in_process(earlier));
        let clash = clash.map(|earlier| earlier.origin.describe()).or_else(|| {
            skipped
                .iter()
                .find(|s| in_process(&entry) && s.entry.name == entry.name)
                .map(|s| s.entry.origin.describe())
        });
        if let Some(other) = clash {
            return Err(SessionError::InvalidMcpServer {
                name: entry.name.clone(),
                message: format!(
                    "an in-process server and a server from {other} have this name; rename \
                     one of them"
                ),
            });
        }
        by_name.insert(entry.name.clone(), entry);
    }
    let skipped: Vec<_> = skipped
        .into_iter()
        .filter(|s| !by_name.contains_key(&s.entry.name))
        .collect();
    if by_name.is_empty() && skipped.is_empty() {
        return Ok(None);
    }
    for server in &skipped {
        warnings.push(mcp_warning(format!(
            "MCP server `{}` is not started: {}",
            server.entry.name, server.reason
        )));
    }
    match crate::mcp::McpHub::new(by_name.into_values().collect(), skipped, context, options) {
        Ok(hub) => Ok(Some(hub)),
        Err(message) => {
            warnings.push(mcp_warning(message));
            Ok(None)
        }
    }
}

fn mcp_warning(message: String) -> SessionWarning {
    SessionWarning {
        file: None,
        json_path: String::new(),
        kind: "mcp_server".into(),
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send_sync<T: Send + Sync>() {}

    #[test]
    fn the_session_can_be_shared_across_threads() {
        assert_send_sync::<Session>();
        assert_send_sync::<PermissionEnforcer>();
    }

    #[test]
    fn session_ids_must_be_safe_file_names() {
        assert!(validate_session_id("session_1.a-b".into()).is_ok());
        for bad in ["", "../x", ".hidden", "a/b", "a b"] {
            assert!(validate_session_id(bad.into()).is_err(), "{bad}");
        }
        assert!(validate_session_id("a".repeat(129)).is_err());
    }
}
