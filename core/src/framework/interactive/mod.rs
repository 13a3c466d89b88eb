//! [`InteractiveSession`]: the client-facing session of spec 000 — a [`Session`] plus what an
//! interactive host needs around it: a prompt queue (at most one prompt waits while another
//! runs), abort orchestration, streaming text and tool state for rendering, the command registry
//! (user slash path and model-invocable commands projected as `robota_command_<name>` tools),
//! subagents for the `agent` command (agent definitions loaded when a command module requests the
//! agent executor, listed in the system prompt; progress as `background_task_event`s; aborted
//! with the prompt), and ordered event subscriptions (see [`events`]).
//!
//! Prompts run on a background task so `submit` returns as soon as the prompt is accepted; hosts
//! follow progress through events (`complete`, `refused`, `truncated`, `error` or `interrupted`
//! end every accepted prompt that ran: see [`crate::framework::outcome`]), await a
//! [`PromptTicket`], or wait with [`InteractiveSession::wait_idle`].

mod background;
mod checkpoints;
mod custom_commands;
pub mod events;
mod host;
mod job_groups;
mod skills;
mod subagents;
pub mod transport;

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use crate::engine::{EngineEvent, RunOutcome, CONTINUE_PROMPT};
use crate::framework::agents::{
    load_agent_definitions_with_plugins, AgentCatalog, AgentDefinition, AgentDefinitionError,
    AgentSource, AgentWarning, TaskTool,
};
use crate::framework::commands::custom::{CommandRegistration, CommandRoot};
use crate::framework::commands::{
    default_command_modules, project_command_tools, CommandEffect, CommandEntry, CommandError,
    CommandModule, CommandRegistry, CommandRegistryError, CommandResult, SessionRequirement,
};
use crate::framework::context::{resolve_file_references, FileRefOptions};
use crate::framework::outcome::{ErrorInfo, OutcomeStatus};
use crate::framework::skills::{
    load_skills_with_plugins, skills_prompt_section, SkillCatalog, SkillRegistration, SkillTool,
    SKILLS_COMMAND, SKILLS_PROMPT_BUDGET,
};
use crate::hooks::SessionEndReason;
use crate::message::{Conversation, HistoryEntry, Message};
use crate::session::structured_output::{OutputFormat, StructuredOutput};
use crate::session::{
    is_withheld_from_subagents, ContextState, RecoveryReport, Session, SessionError, SessionEvent,
    SessionOptions, SessionWarning,
};
use crate::tools::Tool;

use checkpoints::CheckpointRecorder;
use events::{spawn_delivery, translate, EventHub};
pub use events::{
    ExecutionReport, InteractiveEvent, InteractiveEventKind, Subscription, SubscriptionHandle,
    ToolResultKind, ToolState, UsageSnapshot, DEFAULT_EVENT_BUFFER, MAX_TOOL_RESULT_DATA,
};
use host::SessionHost;
pub use job_groups::{
    BackgroundJobGroup, JobGroupRequest, JobGroupStatus, JobGroupSummary, JobGroupWaitPolicy,
};
use skills::{ActiveSkill, SkillSetup};
pub use transport::{Transport, TransportError};

/// Everything an interactive session is made from.
#[derive(Clone)]
pub struct InteractiveSessionOptions {
    /// The underlying session (cwd, provider, tools, permissions, persistence, …). Its
    /// `on_event`, if set, still receives every raw session event.
    pub session: SessionOptions,
    /// The command modules; [`default_command_modules`] (the built-ins and `agent`) by default.
    /// A module requesting [`SessionRequirement::AgentExecutor`] makes the session load agent
    /// definitions and list them in the system prompt.
    pub command_modules: Vec<CommandModule>,
    /// Bound of each subscriber's queue before `text_delta`s are coalesced.
    pub event_buffer: usize,
    /// Skills the host adds (from a directory or as data), ahead of the project's and the
    /// user's; used when a module requests [`SessionRequirement::Skills`] (the default modules
    /// do).
    pub skills: Vec<SkillRegistration>,
    /// Custom slash commands the host adds (a folder or data), ahead of the project's
    /// `.claude/commands` and the user's `~/.claude/commands`; loaded with the skills (when a
    /// module requests [`SessionRequirement::Skills`]).
    pub commands: Vec<CommandRegistration>,
    /// More command folders, after the project's and the user's (a plugin's `commands/`, whose
    /// [`CommandSource::Plugin`](crate::framework::commands::CommandSource::Plugin) qualifies
    /// the names as `plugin:command`).
    pub command_roots: Vec<CommandRoot>,
    /// Keep edit checkpoints (on by default): every prompt is a turn checkpoint under
    /// `.robota/checkpoints/<session-id>/`, and files that Write, Edit, MultiEdit, NotebookEdit
    /// and host tools declaring their files change are saved first, so
    /// [`InteractiveSession::restore_edit_checkpoint`] can undo them.
    pub edit_checkpoints: bool,
    /// Agent definitions the host gives (the Claude Agent SDK's `agents`), above the built-ins
    /// and every definition file of the same name; used when a module requests
    /// [`SessionRequirement::AgentExecutor`] (the default modules do).
    pub agents: Vec<AgentDefinition>,
}

impl InteractiveSessionOptions {
    /// Options around these session options, with the built-in commands.
    pub fn new(session: SessionOptions) -> Self {
        InteractiveSessionOptions {
            session,
            command_modules: default_command_modules(),
            event_buffer: DEFAULT_EVENT_BUFFER,
            skills: Vec::new(),
            commands: Vec::new(),
            command_roots: Vec::new(),
            edit_checkpoints: true,
            agents: Vec::new(),
        }
    }
}

/// Why an interactive session could not be created or could not take a request.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InteractiveError {
    /// The session could not be created or refused the request.
    #[error(transparent)]
    Session(#[from] SessionError),
    /// The command modules do not compose (duplicate names, tool name collision).
    #[error(transparent)]
    Commands(#[from] CommandRegistryError),
    /// The command is unknown, ambiguous or not for users.
    #[error(transparent)]
    Command(#[from] CommandError),
    /// A prompt is already waiting; only one may be queued (spec 000). Cancel it or wait for it
    /// to start.
    #[error(
        "a prompt is already queued (only one may wait while another runs); wait for it to \
         start, or cancel the queued prompt first"
    )]
    QueueFull,
    /// The prompt is empty (or only whitespace): there is nothing to send.
    #[error("the prompt is empty; give the text to send to the model")]
    EmptyPrompt,
    /// A blocking command cannot run while a prompt is executing.
    #[error("`{0}` cannot run while a prompt is executing; wait or abort first")]
    Busy(String),
    /// An agent definition file is malformed (the error names the file and the problem).
    #[error(transparent)]
    Agents(#[from] AgentDefinitionError),
    /// An `@file` reference could not be attached; the message lists each problem.
    #[error("{0}")]
    FileReferences(String),
    /// The session was shut down: every method that acts (submit, execute_command, compact,
    /// set_name, list_commands) refuses; the getters still return the final state.
    #[error("the session was shut down; create a new session (or resume this one) to go on")]
    ShutDown,
    /// An edit checkpoint could not be listed, inspected or restored.
    #[error(transparent)]
    Checkpoint(#[from] crate::framework::checkpoints::CheckpointError),
    /// A background task request was refused: unknown id, a task not in a state that allows
    /// it (cancel an ended task, close a running one), or no task manager in this session.
    #[error("{message}")]
    BackgroundTask {
        /// The task asked for.
        task_id: String,
        /// What is wrong and what to do.
        message: String,
    },
    /// A subagent could not be started (unknown agent, empty prompt, a model the provider
    /// cannot serve, the background task limit, subagents not enabled).
    #[error("{0}")]
    Subagent(String),
}

/// What `submit` did with a prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubmitStatus {
    /// The prompt is running.
    Started,
    /// Another prompt is running; this one runs after it.
    Queued,
}

/// How [`InteractiveSession::continue_answer`]'s prompt ([`CONTINUE_PROMPT`]) is shown in the
/// history and to hosts.
pub const CONTINUE_DISPLAY_INPUT: &str = "(continue)";

/// How one submitted prompt ended: what a [`PromptTicket`] resolves to. Serialized with a
/// `status` tag from the one outcome vocabulary ([`OutcomeStatus`]): `complete`, `refused`,
/// `truncated`, `error`, `interrupted`, `cancelled`. Every status but `cancelled` is also the
/// `type` of the event that ended the prompt, with the same fields.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum PromptResult {
    /// The model answered (the same outcome as the `complete` event).
    Complete {
        /// The run's outcome.
        outcome: RunOutcome,
        /// What the prompt did (response, history entries, tool summaries, context, usage).
        #[serde(flatten)]
        report: ExecutionReport,
    },
    /// The model refused (the `refused` event): `outcome.refusal` has the refusal text and the
    /// provider's category and explanation. The prompt was not re-asked.
    Refused {
        /// The run's outcome.
        outcome: RunOutcome,
    },
    /// The answer was cut off at the output token limit (the `truncated` event); `outcome` has
    /// what was written. [`InteractiveSession::continue_answer`] asks the model to go on.
    Truncated {
        /// The run's outcome.
        outcome: RunOutcome,
    },
    /// The run was aborted (the same outcome as the `interrupted` event).
    Interrupted {
        /// What streamed until then; `None` when the abort came before the run started.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        outcome: Option<RunOutcome>,
        /// What the prompt did until the abort.
        #[serde(flatten)]
        report: ExecutionReport,
    },
    /// A model call failed (401, unreachable host, retries exhausted, …) or the prompt could not
    /// run (a hook rejected it, the budget is spent, …); the same as the `error` event.
    Error {
        /// What went wrong and how to fix it (`error.message`).
        message: String,
        /// The failure: kind, HTTP status, whether a retry may help, the wait asked for.
        error: ErrorInfo,
        /// The run's outcome when the run had started (usage, what streamed before the failure).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        outcome: Option<RunOutcome>,
    },
    /// The prompt never ran: it was dropped from the queue (`cancel_queue`, `abort`) or the
    /// session shut down first.
    Cancelled,
}

impl PromptResult {
    /// How the prompt ended, as the shared status.
    pub fn status(&self) -> OutcomeStatus {
        match self {
            PromptResult::Complete { .. } => OutcomeStatus::Complete,
            PromptResult::Refused { .. } => OutcomeStatus::Refused,
            PromptResult::Truncated { .. } => OutcomeStatus::Truncated,
            PromptResult::Interrupted { .. } => OutcomeStatus::Interrupted,
            PromptResult::Error { .. } => OutcomeStatus::Error,
            PromptResult::Cancelled => OutcomeStatus::Cancelled,
        }
    }

    /// The run's outcome, when the run started.
    pub fn outcome(&self) -> Option<&RunOutcome> {
        match self {
            PromptResult::Complete { outcome, .. }
            | PromptResult::Refused { outcome }
            | PromptResult::Truncated { outcome } => Some(outcome),
            PromptResult::Interrupted { outcome, .. } | PromptResult::Error { outcome, .. } => {
                outcome.as_ref()
            }
            PromptResult::Cancelled => None,
        }
    }

    /// The result for a run that returned `outcome` (its status decides the variant).
    pub fn from_outcome(outcome: RunOutcome) -> Self {
        match OutcomeStatus::of(&outcome) {
            OutcomeStatus::Interrupted | OutcomeStatus::Cancelled => PromptResult::Interrupted {
                outcome: Some(outcome),
                report: ExecutionReport::default(),
            },
            OutcomeStatus::Refused => PromptResult::Refused { outcome },
            OutcomeStatus::Truncated => PromptResult::Truncated { outcome },
            OutcomeStatus::Error => {
                let error = ErrorInfo::from_outcome(&outcome);
                PromptResult::Error {
                    message: error.message.clone(),
                    error,
                    outcome: Some(outcome),
                }
            }
            OutcomeStatus::Complete => PromptResult::Complete {
                outcome,
                report: ExecutionReport::default(),
            },
        }
    }

    /// What the prompt did, for `complete` and `interrupted`.
    pub fn report(&self) -> Option<&ExecutionReport> {
        match self {
            PromptResult::Complete { report, .. } | PromptResult::Interrupted { report, .. } => {
                Some(report)
            }
            _ => None,
        }
    }

    /// This result with `report` attached (kept only by `complete` and `interrupted`).
    fn with_report(mut self, new: ExecutionReport) -> Self {
        if let PromptResult::Complete { report, .. } | PromptResult::Interrupted { report, .. } =
            &mut self
        {
            *report = new;
        }
        self
    }

    /// The result an event that ends a prompt reports (`None` for any other event); the inverse
    /// of [`event`](Self::event).
    pub fn from_event(event: &InteractiveEventKind) -> Option<Self> {
        Some(match event.clone() {
            InteractiveEventKind::Complete { outcome, report } => {
                PromptResult::Complete { outcome, report }
            }
            InteractiveEventKind::Refused { outcome } => PromptResult::Refused { outcome },
            InteractiveEventKind::Truncated { outcome } => PromptResult::Truncated { outcome },
            InteractiveEventKind::Interrupted { outcome, report } => {
                PromptResult::Interrupted { outcome, report }
            }
            InteractiveEventKind::Error {
                message,
                error,
                outcome,
            } => PromptResult::Error {
                message,
                error,
                outcome,
            },
            _ => return None,
        })
    }

    /// The event that reports this result (a prompt cancelled before it ran has none; it is
    /// reported as `interrupted` without an outcome when an event is needed).
    pub fn event(&self) -> InteractiveEventKind {
        match self.clone() {
            PromptResult::Complete { outcome, report } => {
                InteractiveEventKind::Complete { outcome, report }
            }
            PromptResult::Refused { outcome } => InteractiveEventKind::Refused { outcome },
            PromptResult::Truncated { outcome } => InteractiveEventKind::Truncated { outcome },
            PromptResult::Interrupted { outcome, report } => {
                InteractiveEventKind::Interrupted { outcome, report }
            }
            PromptResult::Error {
                message,
                error,
                outcome,
            } => InteractiveEventKind::Error {
                message,
                error,
                outcome,
            },
            PromptResult::Cancelled => InteractiveEventKind::Interrupted {
                outcome: None,
                report: ExecutionReport::default(),
            },
        }
    }
}

/// A submitted prompt: whether it started or waits, and (awaited with
/// [`result`](PromptTicket::result)) how it ended. Dropping the ticket changes nothing about the
/// prompt.
#[derive(Debug)]
pub struct PromptTicket {
    status: SubmitStatus,
    id: u64,
    done: tokio::sync::oneshot::Receiver<PromptEnd>,
}

/// How a prompt ended and which event said so.
#[derive(Debug, Clone, PartialEq)]
pub struct PromptEnd {
    /// How it ended.
    pub result: PromptResult,
    /// The `seq` of the `complete` / `interrupted` / `error` event that ended it (every
    /// subscriber gets that event before the ticket resolves); `None` for a prompt cancelled
    /// before it ran (no event is emitted for it).
    pub event_seq: Option<u64>,
}

impl PromptTicket {
    /// Whether the prompt started at once or was queued.
    pub fn status(&self) -> SubmitStatus {
        self.status
    }

    /// The prompt's id within its session, for
    /// [`InteractiveSession::cancel_prompt`].
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Waits until the prompt has ended and returns how. Resolves exactly once for every
    /// accepted prompt: `Cancelled` when it was dropped before it ran.
    pub async fn result(self) -> PromptResult {
        self.end().await.result
    }

    /// Like [`result`](Self::result), with the `seq` of the event that ended the prompt (so a
    /// host can tell when its listeners have seen it).
    pub async fn end(self) -> PromptEnd {
        self.done.await.unwrap_or(PromptEnd {
            result: PromptResult::Cancelled,
            event_seq: None,
        })
    }
}

/// A prompt waiting to run.
#[derive(Debug)]
struct Prompt {
    /// The prompt as typed (what the history keeps).
    text: String,
    /// The attached `@file` blocks, model-only.
    context: Option<String>,
    /// What the user typed / the host shows.
    display: String,
    /// Told how the prompt ended (tracked submits); dropping it unsent means `Cancelled`.
    done: Option<tokio::sync::oneshot::Sender<PromptEnd>>,
    /// Its id within the session (see [`PromptTicket::id`]).
    id: u64,
    /// The skill this prompt runs, for a skill the user activated.
    skill: Option<ActiveSkill>,
    /// What the user typed when `text` was built from it (`submit`'s `raw_input`): the
    /// `prompt` UserPromptSubmit hooks see.
    raw: Option<String>,
    /// This prompt's own structured output format (instead of the session's), checked when
    /// it was submitted.
    output_format: Option<OutputFormat>,
}

#[derive(Default)]
struct State {
    executing: bool,
    /// A prompt's result has reached the host and the session is tidying up after it (a
    /// compaction the model asked for); commands the host sends now wait for it to finish.
    settling: bool,
    pending: Option<Prompt>,
    /// Cancelled by `abort` for the prompt being run.
    cancel: Option<CancellationToken>,
    streaming_text: String,
    tools: Vec<ToolState>,
    denied: Vec<String>,
    shut_down: bool,
    /// A compaction the model asked for during a run (`Some(instructions)`); run when the run
    /// ends, before the queued prompt.
    pending_compaction: Option<Option<String>>,
    /// Cancellation tokens of the subagents running now, by id (`abort` cancels them).
    subagents: Vec<(u64, CancellationToken)>,
    next_subagent: u64,
    /// The id of the prompt being run (see [`PromptTicket::id`]).
    running_prompt: Option<u64>,
    /// The id the next accepted prompt gets.
    next_prompt: u64,
    /// Skills the model activated during the running prompt; they end with it.
    active_skills: Vec<ActiveSkill>,
    /// History entries made while a run held the session, appended when it ends.
    deferred_history: Vec<(String, Value)>,
    /// The transports this session is attached to (detached on shutdown).
    transports: Vec<Arc<dyn transport::Transport>>,
}

/// Where agent definitions are read from, when a command module requested the agent executor.
#[derive(Debug, Clone)]
pub(crate) struct AgentSetup {
    pub(crate) cwd: std::path::PathBuf,
    pub(crate) home: Option<std::path::PathBuf>,
    /// `(plugin, agents folder)` of the enabled plugins.
    pub(crate) plugin_agents: Vec<(String, std::path::PathBuf)>,
    /// The host's definitions, above the files'.
    pub(crate) host_agents: Vec<AgentDefinition>,
}

impl AgentSetup {
    /// The agents: the files' (read now) and the built-ins, then the host's over them.
    pub(crate) fn catalog(&self) -> AgentCatalog {
        let mut catalog = load_agent_definitions_with_plugins(
            &self.cwd,
            self.home.as_deref(),
            &self.plugin_agents,
        );
        for definition in &self.host_agents {
            catalog.insert(AgentDefinition {
                source: AgentSource::Host,
                ..definition.clone()
            });
        }
        catalog
    }
}

pub(crate) struct Inner {
    session: Session,
    hub: Arc<EventHub>,
    registry: CommandRegistry,
    state: Mutex<State>,
    idle: tokio::sync::Notify,
    agents: Option<AgentSetup>,
    skills: Option<SkillSetup>,
    plugins: crate::framework::assembly::plugins::SessionPlugins,
    /// The custom commands, when skills were requested.
    custom: Option<crate::framework::commands::custom::CustomCommandCatalog>,
    checkpoints: Option<Arc<CheckpointRecorder>>,
    /// Background job groups (see [`job_groups`]).
    job_groups: job_groups::JobGroups,
}

/// The client-facing session. Cheap to share: [`InteractiveSession::new`] returns an `Arc`.
pub struct InteractiveSession {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for InteractiveSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InteractiveSession")
            .field("session_id", &self.inner.session.session_id())
            .finish_non_exhaustive()
    }
}

impl InteractiveSession {
    /// Creates the session: composes the command registry, adds the model-invocable commands as
    /// tools and builds the [`Session`]. Synchronous, like [`Session::new`].
    pub fn new(options: InteractiveSessionOptions) -> Result<Arc<Self>, InteractiveError> {
        let InteractiveSessionOptions {
            mut session,
            command_modules,
            event_buffer,
            skills: skill_registrations,
            commands: command_registrations,
            mut command_roots,
            edit_checkpoints,
            agents: host_agents,
        } = options;
        let wants_agents = command_modules.iter().any(|m| {
            m.session_requirements
                .contains(&SessionRequirement::AgentExecutor)
        });
        let wants_skills = command_modules
            .iter()
            .any(|m| m.session_requirements.contains(&SessionRequirement::Skills));
        let mut registry = CommandRegistry::with_modules(command_modules)?;
        // Agent definitions are loaded (and listed in the system prompt) only when a module
        // asks for the agent executor. A file that cannot be used is a warning (with its file
        // and line) and the other agents load; so is a tool an agent lists that the session
        // does not have.
        let cwd = if session.cwd.is_absolute() {
            session.cwd.clone()
        } else {
            std::env::current_dir()
                .map(|d| d.join(&session.cwd))
                .unwrap_or_else(|_| session.cwd.clone())
        };
        let home = crate::framework::assembly::settings::settings_home(&session.settings, &cwd);
        // Enabled plugins: their hooks join the settings' hooks; their skills and agents join
        // the session's below. A plugin that cannot be used is a warning naming its file.
        let plugins = crate::framework::assembly::plugins::session_plugins(
            &session.settings,
            &cwd,
            home.as_deref(),
        );
        session.warnings.extend(plugins.warnings.iter().cloned());
        for plugin in &plugins.plugins {
            session.extra_hooks.merge(plugin.hooks.clone());
        }
        // Their MCP servers start with the session's own (their names carry the plugin's, so
        // they never replace a server of the user's).
        let plugin_servers = plugins.mcp_servers(&mut session.warnings);
        session.mcp_servers.extend(plugin_servers);
        let plugin_agents = plugins.agent_dirs();
        // A plugin's `commands/` come after the host's, the project's and the user's commands;
        // their names are qualified (`plugin:command`).
        command_roots.extend(plugins.command_roots());
        let agents = if wants_agents {
            let setup = AgentSetup {
                cwd: cwd.clone(),
                home: home.clone(),
                plugin_agents: plugin_agents.clone(),
                host_agents,
            };
            let catalog = setup.catalog();
            let mut warnings: Vec<SessionWarning> =
                catalog.warnings.iter().map(agent_warning).collect();
            warnings.extend(unknown_agent_tools(&catalog, &session));
            session.warnings.extend(warnings);
            let section = catalog.prompt_section();
            session.append_system_prompt = Some(match session.append_system_prompt.take() {
                Some(text) => format!("{text}\n\n{section}"),
                None => section,
            });
            Some(setup)
        } else {
            None
        };
        // Skills are discovered (and their names and descriptions listed in the system prompt)
        // only when a module asks for them. A skill that cannot be used is a warning naming its
        // file; the session goes on.
        let skills = if wants_skills {
            let catalog = load_skills_with_plugins(
                &cwd,
                home.as_deref(),
                &skill_registrations,
                &plugins.skill_roots(),
            );
            session
                .warnings
                .extend(catalog.warnings.iter().map(skill_warning));
            if let Some(section) = skills_prompt_section(&catalog, SKILLS_PROMPT_BUDGET) {
                session.append_system_prompt = Some(match session.append_system_prompt.take() {
                    Some(text) => format!("{text}\n\n{section}"),
                    None => section,
                });
            }
            Some(SkillSetup {
                catalog,
                cwd: cwd.clone(),
                home: home.clone(),
            })
        } else {
            None
        };
        // Custom commands load with the skills (the model runs both through `Skill`). One that
        // cannot be used, or whose name a command or skill already has, is a warning.
        let custom = if wants_skills {
            let catalog = custom_commands::load_for_session(
                &mut registry,
                skills.as_ref().map(|s| &s.catalog),
                &cwd,
                home.as_deref(),
                &command_registrations,
                &command_roots,
            );
            session.warnings.extend(
                catalog
                    .warnings
                    .iter()
                    .map(custom_commands::session_warning),
            );
            if let Some(section) = crate::framework::commands::custom::commands_prompt_section(
                &catalog,
                SKILLS_PROMPT_BUDGET,
            ) {
                session.append_system_prompt = Some(match session.append_system_prompt.take() {
                    Some(text) => format!("{text}\n\n{section}"),
                    None => section,
                });
            }
            Some(catalog)
        } else {
            None
        };
        // The projected tools need the session, which needs the tools: the host facade is
        // created empty and pointed at the session once it exists. It acts for the model.
        let host = Arc::new(SessionHost::for_model());
        let tools = project_command_tools(&registry, host.clone())?;
        session
            .extra_tools
            .extend(tools.into_iter().map(|t| Arc::new(t) as Arc<dyn Tool>));
        // The model starts subagents with Claude Code's `Task` tool where agents are enabled.
        if agents.is_some() {
            session
                .extra_tools
                .push(Arc::new(TaskTool::new(host.clone())) as Arc<dyn Tool>);
        }
        let model_runs_commands = custom
            .as_ref()
            .is_some_and(|c| c.commands().any(|command| command.model_invocable()));
        if model_runs_commands
            || skills
                .as_ref()
                .is_some_and(|s| s.catalog.skills().any(|skill| skill.model_invocable()))
        {
            session
                .extra_tools
                .push(Arc::new(SkillTool::new(host.clone())) as Arc<dyn Tool>);
        }

        let hub = EventHub::new(session.session_id.clone().unwrap_or_default(), event_buffer);
        let weak_inner: Arc<Mutex<std::sync::Weak<Inner>>> =
            Arc::new(Mutex::new(std::sync::Weak::new()));
        let forward = Arc::clone(&weak_inner);
        let host_callback = session.on_event.take();
        let early_hub = Arc::clone(&hub);
        session.on_event = Some(Arc::new(move |event: SessionEvent| {
            if let Some(callback) = &host_callback {
                callback(event.clone());
            }
            let inner = forward
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .upgrade();
            match inner {
                Some(inner) => inner.on_session_event(event),
                // Events from construction (settings warnings) reach early subscribers anyway.
                None => {
                    early_hub.emit(translate(event));
                }
            }
        }));

        // The model may read the files beside a skill's SKILL.md wherever the skill lives: the
        // folders of skills outside the project become workspace roots of the file tools, and
        // reading them needs no approval.
        let skill_dirs = skills
            .as_ref()
            .map(|s| outside_skill_dirs(&s.catalog, &cwd))
            .unwrap_or_default();
        session
            .builtin_tools
            .additional_roots
            .extend(skill_dirs.iter().cloned());
        // The checkpoint folder is named after the session id, known once the session exists.
        let checkpoints = edit_checkpoints.then(|| Arc::new(CheckpointRecorder::default()));
        if let Some(recorder) = &checkpoints {
            session.file_mutation_recorder =
                Some(Arc::clone(recorder) as Arc<dyn crate::tools::FileMutationRecorder>);
        }
        let built = Session::new(session)?;
        hub.set_session_id(built.session_id());
        background::forward_task_events(&built, &hub);
        if let Some(recorder) = &checkpoints {
            recorder.bind(&cwd, built.session_id());
        }
        let rules = skill_read_rules(&skill_dirs);
        if !rules.is_empty() {
            let _ = built.enforcer().add_override_rules(&rules, &[]);
        }
        let inner = Arc::new(Inner {
            session: built,
            hub,
            registry,
            state: Mutex::new(State::default()),
            idle: tokio::sync::Notify::new(),
            agents,
            skills,
            plugins,
            custom,
            checkpoints,
            job_groups: Default::default(),
        });
        *weak_inner.lock().unwrap_or_else(PoisonError::into_inner) = Arc::downgrade(&inner);
        host.attach(&inner);
        Ok(Arc::new(InteractiveSession { inner }))
    }

    /// The underlying session (for what this facade does not cover).
    pub fn session(&self) -> &Session {
        &self.inner.session
    }

    /// Subscribes a callback; a delivery task of its own calls it for every event in order.
    pub fn subscribe(
        &self,
        callback: impl Fn(InteractiveEvent) + Send + Sync + 'static,
    ) -> SubscriptionHandle {
        spawn_delivery(self.inner.hub.subscribe(), Arc::new(callback))
    }

    /// Subscribes for pulling events with [`Subscription::next_event`].
    pub fn subscribe_pull(&self) -> Subscription {
        self.inner.hub.subscribe()
    }

    /// Submits a prompt. `@file` references are resolved first: their contents go to the model
    /// with this prompt only, and a blocking problem rejects the prompt with an `error` event
    /// and [`InteractiveError::FileReferences`]. While a prompt runs, one prompt is queued and
    /// runs after it; a further one is refused with [`InteractiveError::QueueFull`] (spec 000:
    /// "only one prompt can be queued"). `display_input` is what [`get_pending_prompt`] shows;
    /// `raw_input` is what the user typed when `input` was built from it (a template, an
    /// expanded command): UserPromptSubmit hooks get it as their `prompt` (Claude Code's field
    /// for the user's own text), while the model and the history get `input`.
    ///
    /// [`get_pending_prompt`]: Self::get_pending_prompt
    ///
    /// Must be called within a tokio runtime: the prompt runs on a spawned task.
    pub async fn submit(
        &self,
        input: &str,
        display_input: Option<&str>,
        raw_input: Option<&str>,
    ) -> Result<SubmitStatus, InteractiveError> {
        self.enqueue(input, display_input, raw_input, None, None)
            .map(|(status, _)| status)
    }

    /// Like [`submit`](Self::submit), and returns a [`PromptTicket`] that resolves to how this
    /// prompt ended (complete, refused, truncated, error, interrupted, or cancelled before it ran)
    /// — so a host can
    /// await its own prompt without matching events to prompts. Must be called within a tokio
    /// runtime.
    pub async fn submit_tracked(
        &self,
        input: &str,
        display_input: Option<&str>,
    ) -> Result<PromptTicket, InteractiveError> {
        self.submit_tracked_now(input, display_input)
    }

    /// [`submit_tracked`](Self::submit_tracked) without the `async`: the prompt is accepted
    /// (started or queued) or refused before this returns, so prompts submitted one after the
    /// other from any thread are accepted in that order. Must be called within a tokio runtime
    /// context (the prompt runs on a spawned task).
    pub fn submit_tracked_now(
        &self,
        input: &str,
        display_input: Option<&str>,
    ) -> Result<PromptTicket, InteractiveError> {
        self.submit_tracked_as_typed(input, display_input, None)
    }

    /// [`submit_tracked_now`](Self::submit_tracked_now) with `raw_input`, what the user typed
    /// when `input` was built from it: UserPromptSubmit hooks get it as `prompt` (see
    /// [`submit`](Self::submit)).
    pub fn submit_tracked_as_typed(
        &self,
        input: &str,
        display_input: Option<&str>,
        raw_input: Option<&str>,
    ) -> Result<PromptTicket, InteractiveError> {
        let (tx, done) = tokio::sync::oneshot::channel();
        let (status, id) = self.enqueue(input, display_input, raw_input, Some(tx), None)?;
        Ok(PromptTicket { status, id, done })
    }

    /// [`submit_tracked_as_typed`](Self::submit_tracked_as_typed) with this prompt's final
    /// answer shaped by `format` instead of the session's `output_format` (see
    /// [`structured_output`](crate::session::structured_output)): the outcome's
    /// `structured_output` holds the validated value. A schema that is not a valid JSON Schema
    /// is refused here ([`SessionError::InvalidOutputFormat`]) and nothing is queued.
    pub fn submit_tracked_with_output_format(
        &self,
        input: &str,
        display_input: Option<&str>,
        raw_input: Option<&str>,
        format: &OutputFormat,
    ) -> Result<PromptTicket, InteractiveError> {
        StructuredOutput::new(format, 0).map_err(InteractiveError::Session)?;
        let (tx, done) = tokio::sync::oneshot::channel();
        let (status, id) = self.enqueue(
            input,
            display_input,
            raw_input,
            Some(tx),
            Some(format.clone()),
        )?;
        Ok(PromptTicket { status, id, done })
    }

    /// Asks the model to go on with an answer that was cut off at the output token limit (a
    /// prompt that ended [`PromptResult::Truncated`]): submits [`CONTINUE_PROMPT`] like
    /// [`submit_tracked`](Self::submit_tracked), shown as `(continue)`. The cut-off answer is in
    /// the history, so the model sees where it stopped. Works after any prompt; it is only
    /// useful after a truncated one.
    pub async fn continue_answer(&self) -> Result<PromptTicket, InteractiveError> {
        self.submit_tracked(CONTINUE_PROMPT, Some(CONTINUE_DISPLAY_INPUT))
            .await
    }

    /// Refuses calls once the session is shut down.
    fn check_open(&self) -> Result<(), InteractiveError> {
        if self.inner.lock().shut_down {
            Err(InteractiveError::ShutDown)
        } else {
            Ok(())
        }
    }

    /// True once [`shutdown`](Self::shutdown) has been called.
    pub fn is_shut_down(&self) -> bool {
        self.inner.lock().shut_down
    }

    /// Resolves `@file` references and starts or queues the prompt.
    fn enqueue(
        &self,
        input: &str,
        display_input: Option<&str>,
        raw_input: Option<&str>,
        done: Option<tokio::sync::oneshot::Sender<PromptEnd>>,
        output_format: Option<OutputFormat>,
    ) -> Result<(SubmitStatus, u64), InteractiveError> {
        self.check_open()?;
        if input.trim().is_empty() {
            return Err(InteractiveError::EmptyPrompt);
        }
        let (text, context) = self.inner.resolve_references(input)?;
        self.inner.enqueue_prompt_parts(Prompt {
            text,
            context,
            display: display_input.unwrap_or(input).to_string(),
            done,
            id: 0,
            skill: None,
            raw: raw_input.map(str::to_string),
            output_format,
        })
    }

    /// Aborts the running prompt (a pending permission request is cancelled, running tools are
    /// stopped) and drops the queued one and any compaction the model scheduled. `interrupted` is emitted when the run has stopped.
    pub fn abort(&self) {
        let mut state = self.inner.lock();
        let dropped = state.pending.take();
        state.pending_compaction = None;
        self.stop_running(state);
        self.inner.dropped(dropped);
    }

    /// Cancels one prompt by its [`PromptTicket::id`]: a queued one is dropped (its ticket
    /// resolves `Cancelled`), the running one is aborted like [`abort`](Self::abort) but the
    /// queued prompt behind it is kept. Returns false when the prompt already ended (or never
    /// existed). For hosts that cancel per prompt (an `AbortSignal` passed to one `submit`).
    pub fn cancel_prompt(&self, id: u64) -> bool {
        let mut state = self.inner.lock();
        if state.pending.as_ref().is_some_and(|p| p.id == id) {
            let dropped = state.pending.take();
            drop(state);
            self.inner.dropped(dropped);
            return true;
        }
        if state.running_prompt == Some(id) {
            state.pending_compaction = None;
            self.stop_running(state);
            return true;
        }
        false
    }

    /// Cancels the running prompt, its subagents and the session's run.
    fn stop_running(&self, state: std::sync::MutexGuard<'_, State>) {
        if let Some(cancel) = &state.cancel {
            cancel.cancel();
        }
        for (_, subagent) in &state.subagents {
            subagent.cancel();
        }
        drop(state);
        self.inner.session.abort();
    }

    /// Drops the queued prompt, if any, without touching the running one.
    pub fn cancel_queue(&self) -> Option<String> {
        let dropped = self.inner.lock().pending.take();
        let display = dropped.as_ref().map(|p| p.display.clone());
        self.inner.dropped(dropped);
        display
    }

    /// Waits until no prompt is running or queued.
    pub async fn wait_idle(&self) {
        loop {
            let notified = self.inner.idle.notified();
            if !self.is_executing() {
                return;
            }
            notified.await;
        }
    }

    /// Waits while the prompt that just ended tidies up (its result already reached the host,
    /// which may act on it at once); returns at once otherwise, and never waits for a prompt
    /// that is running or queued.
    async fn wait_settled(&self) {
        loop {
            let notified = self.inner.idle.notified();
            if !self.inner.lock().settling {
                return;
            }
            notified.await;
        }
    }

    /// Runs a command on the user's behalf. Effects the session can apply itself are applied by
    /// the command through the host facade (clear, rename, permission mode, compact); the result
    /// still lists every effect so the host can update its own state (and apply exit, model
    /// switch, pickers, …).
    ///
    /// A name no command has but a skill has runs that skill (`/review src` is `skills review
    /// src`), as Claude Code's `/skill-name` does.
    pub async fn execute_command(
        &self,
        name: &str,
        args: &str,
    ) -> Result<CommandResult, InteractiveError> {
        self.check_open()?;
        let registered = match self.inner.registry.resolve(name) {
            Ok(registered) => registered,
            Err(CommandError::UnknownCommand { .. })
                if self.is_skill(name) && self.inner.registry.get(SKILLS_COMMAND).is_some() =>
            {
                let name = name.trim().trim_start_matches('/');
                let args = format!("{name} {}", args.trim());
                return Box::pin(self.execute_command(SKILLS_COMMAND, args.trim_end())).await;
            }
            Err(CommandError::UnknownCommand { .. }) if self.may_be_mcp_prompt(name).await => {
                return self.run_mcp_prompt(name, args).await;
            }
            Err(error) => return Err(error.into()),
        };
        if registered.descriptor().lifecycle.needs_execution_guard() {
            self.wait_settled().await;
            if self.is_executing() {
                return Err(InteractiveError::Busy(registered.name.clone()));
            }
        }
        let host = SessionHost::default();
        host.attach(&self.inner);
        let result = self.inner.registry.execute(&host, name, args).await?;
        if result
            .effects
            .iter()
            .any(|e| matches!(e, CommandEffect::ConversationHistoryCleared))
        {
            let mut state = self.inner.lock();
            state.streaming_text.clear();
            state.tools.clear();
        }
        Ok(result)
    }

    /// The commands users can run, in registry order (refused once shut down).
    pub fn list_commands(&self) -> Result<Vec<CommandEntry>, InteractiveError> {
        self.check_open()?;
        Ok(self.inner.registry.list())
    }

    /// The skills of this session (empty when no module requested skills), with where each
    /// came from; [`get_skill_warnings`](Self::get_skill_warnings) has the problems found.
    pub fn list_skills(&self) -> Vec<crate::framework::skills::SkillDefinition> {
        self.inner
            .skill_catalog()
            .map(|c| c.skills().cloned().collect())
            .unwrap_or_default()
    }

    /// Problems found while discovering skills (each names its file), also reported as
    /// session warnings of kind `skill`.
    pub fn get_skill_warnings(&self) -> Vec<crate::framework::skills::SkillWarning> {
        self.inner
            .skill_catalog()
            .map(|c| c.warnings.clone())
            .unwrap_or_default()
    }

    /// The plugins of this session's user and project: installed and enabled ones (each marked
    /// `loaded` when this session loaded it, with its skills, commands, agents, hooks and MCP
    /// servers), the known marketplaces, and every problem found. Empty without a home folder.
    pub fn list_plugins(&self) -> crate::framework::plugins::PluginListing {
        let Some(manager) = &self.inner.plugins.manager else {
            return Default::default();
        };
        let mut listing = manager.list();
        listing.mark_session(&self.inner.plugins.ids(), &self.inner.session.mcp_servers());
        listing
    }

    /// The custom slash commands of this session (empty when no module requested skills), with
    /// where each came from; [`list_commands`](Self::list_commands) lists them too.
    pub fn list_custom_commands(
        &self,
    ) -> Vec<crate::framework::commands::custom::CustomCommandDefinition> {
        self.inner
            .custom
            .as_ref()
            .map(|c| c.commands().cloned().collect())
            .unwrap_or_default()
    }

    /// Problems found while discovering custom commands (each names its file), also reported
    /// as session warnings of kind `custom_command`.
    pub fn get_custom_command_warnings(
        &self,
    ) -> Vec<crate::framework::commands::custom::CommandWarning> {
        self.inner
            .custom
            .as_ref()
            .map(|c| c.warnings.clone())
            .unwrap_or_default()
    }

    /// The server, prompt and argument names of `/mcp__<server>__<prompt>`, when a connected
    /// server has that prompt.
    fn mcp_prompt(&self, name: &str) -> Option<(String, String, Vec<String>)> {
        let rest = name.trim().trim_start_matches('/').strip_prefix("mcp__")?;
        let (server, prompt) = rest.split_once("__")?;
        let arguments = self
            .inner
            .session
            .mcp_hub()?
            .prompt_arguments(server, prompt)?;
        Some((server.to_string(), prompt.to_string(), arguments))
    }

    /// True when `name` is a server prompt (`/mcp__<server>__<prompt>`); while the servers are
    /// still starting, it waits for them first (up to the start-up deadline), so that a prompt
    /// command typed at once finds its server.
    async fn may_be_mcp_prompt(&self, name: &str) -> bool {
        if !name.trim().trim_start_matches('/').starts_with("mcp__") {
            return false;
        }
        if let Some(hub) = self.inner.session.mcp_hub() {
            if hub.is_starting() {
                hub.wait_for_startup_deadline().await;
            }
        }
        self.mcp_prompt(name).is_some()
    }

    /// Runs a server prompt as Claude Code does: the words of `args` fill the prompt's
    /// arguments in order (the last one takes the rest), the server renders the prompt, and its
    /// text is submitted as the user's prompt.
    async fn run_mcp_prompt(
        &self,
        name: &str,
        args: &str,
    ) -> Result<CommandResult, InteractiveError> {
        let Some((server, prompt, names)) = self.mcp_prompt(name) else {
            return Ok(CommandResult::error(format!(
                "no MCP prompt is named `{name}`"
            )));
        };
        let Some(hub) = self.inner.session.mcp_hub() else {
            return Ok(CommandResult::error("this session has no MCP servers"));
        };
        let mut values = serde_json::Map::new();
        let mut words = args.split_whitespace().peekable();
        for (index, argument) in names.iter().enumerate() {
            let value = if index + 1 == names.len() {
                words.by_ref().collect::<Vec<_>>().join(" ")
            } else {
                words.next().unwrap_or_default().to_string()
            };
            if !value.is_empty() {
                values.insert(argument.clone(), Value::String(value));
            }
        }
        let text = match hub.get_prompt(&server, &prompt, values).await {
            Ok(text) => text,
            Err(message) => {
                return Ok(CommandResult::error(format!(
                    "MCP prompt `{prompt}` of server `{server}` failed: {message}"
                )))
            }
        };
        let display = format!("/mcp__{server}__{prompt} {}", args.trim());
        self.enqueue(&text, Some(display.trim_end()), None, None, None)?;
        Ok(CommandResult::ok(format!(
            "Running MCP prompt `{prompt}` of server `{server}`"
        ))
        .with_data(json!({ "server": server, "prompt": prompt, "text": text })))
    }

    /// The session's MCP servers with their status, tools and prompts (what `/mcp` lists).
    /// Servers connect in the background from the moment the session is created: right after
    /// it they are `pending` (see [`wait_for_mcp_servers`](Self::wait_for_mcp_servers)).
    pub fn list_mcp_servers(&self) -> Vec<crate::mcp::McpServerInfo> {
        self.inner.session.mcp_servers()
    }

    /// Waits until the MCP servers are done starting (each `connected`, `failed`,
    /// `needs_auth` or `disabled`), for at most `timeout` (`None`: until they are, which the
    /// start-up timeout bounds). True when no server is still starting. Prompts need not wait
    /// first: each waits for servers still starting before its first model call.
    pub async fn wait_for_mcp_servers(&self, timeout: Option<std::time::Duration>) -> bool {
        self.inner.session.wait_for_mcp_servers(timeout).await
    }

    /// True when `name` (with or without a leading `/`) is a skill of this session.
    fn is_skill(&self, name: &str) -> bool {
        self.inner
            .skill_catalog()
            .is_some_and(|c| c.get(name).is_some())
    }

    /// Aborts any run, drops the queue and shuts the session down (SessionEnd fires once).
    pub async fn shutdown(&self, reason: SessionEndReason) {
        self.inner.lock().shut_down = true;
        self.abort();
        self.inner.session.shutdown(reason).await;
        self.detach_transports();
    }

    /// The `seq` of the last event this session has emitted (0 before the first). A host whose
    /// listeners receive events through a queue of its own waits for this `seq` to arrive after
    /// [`wait_idle`](Self::wait_idle), so "idle" also means "every event delivered".
    pub fn last_event_seq(&self) -> u64 {
        self.inner.hub.last_seq()
    }

    /// True while a prompt runs (or one is queued to run next).
    pub fn is_executing(&self) -> bool {
        self.inner.lock().executing
    }

    /// The queued prompt as the host shows it.
    pub fn get_pending_prompt(&self) -> Option<String> {
        self.inner
            .lock()
            .pending
            .as_ref()
            .map(|p| p.display.clone())
    }

    /// The chat messages.
    pub fn get_messages(&self) -> Vec<Message> {
        self.inner.session.messages()
    }

    /// The full history: chat messages and event entries (`tool-summary`, `usage-summary`).
    pub fn get_full_history(&self) -> Vec<HistoryEntry> {
        let conversation: Conversation = self.inner.session.conversation();
        conversation.to_entries()
    }

    /// How full the context window is.
    pub fn get_context_state(&self) -> ContextState {
        self.inner.session.context_state()
    }

    /// The OS sandbox Bash runs in: enabled, active, backend, why not when unavailable,
    /// writable roots, network policy, and which guarantees hold.
    pub fn sandbox_status(&self) -> crate::sandbox::SandboxStatus {
        self.inner.session.sandbox_status()
    }

    /// The answer text of the current prompt so far.
    pub fn get_streaming_text(&self) -> String {
        self.inner.lock().streaming_text.clone()
    }

    /// The tool calls of the current prompt.
    pub fn get_active_tools(&self) -> Vec<ToolState> {
        self.inner.lock().tools.clone()
    }

    /// The session's name.
    pub fn get_name(&self) -> Option<String> {
        self.inner.session.get_name()
    }

    /// Names the session (refused once shut down: the name would not be saved).
    pub fn set_name(&self, name: Option<String>) -> Result<(), InteractiveError> {
        self.check_open()?;
        self.inner.session.set_name(name);
        Ok(())
    }

    /// The session id.
    pub fn get_session_id(&self) -> String {
        self.inner.session.session_id().to_string()
    }

    /// What opening the saved session found damaged, repaired or unfinished (`None`: nothing to
    /// tell). Its `unfinished_turn.prompt` is the prompt a killed process never finished, for a
    /// host that offers to send it again. The same report is sent once as a `session_recovered`
    /// event when the session starts.
    pub fn get_recovery_report(&self) -> Option<RecoveryReport> {
        self.inner.session.recovery_report().cloned()
    }

    /// The configuration problems the session worked around when it opened: settings entries it
    /// skipped or made ask (an unparsable permission rule, an unknown key, a hook entry), agent
    /// definition files it could not use and tools agents list that it does not have. Each names
    /// its file and JSON path. They are also sent as `settings_warning` events while the session
    /// opens, before a host can subscribe; this is where a host reads them.
    pub fn get_warnings(&self) -> Vec<SessionWarning> {
        self.inner.session.warnings().to_vec()
    }

    /// The session's edit checkpoints (one per prompt), oldest first.
    pub fn list_edit_checkpoints(
        &self,
    ) -> Result<Vec<crate::framework::checkpoints::CheckpointSummary>, InteractiveError> {
        Ok(self.inner.checkpoint_store()?.list()?)
    }

    /// One edit checkpoint: the files its turn changed (display paths, whether the saved
    /// content exists) and which checkpoints restoring or rolling back would undo.
    pub fn inspect_edit_checkpoint(
        &self,
        id: &str,
    ) -> Result<crate::framework::checkpoints::CheckpointInspection, InteractiveError> {
        Ok(self.inner.checkpoint_store()?.inspect(id)?)
    }

    /// Puts files back as checkpoint `id`'s turn left them: later turns are undone newest
    /// first (saved contents written back, files they created deleted) and their checkpoints
    /// removed; a `edit-checkpoint-restore` history entry records it. Refused while a prompt
    /// runs. Changes made by Bash are not tracked.
    pub fn restore_edit_checkpoint(
        &self,
        id: &str,
    ) -> Result<crate::framework::checkpoints::RestoreReport, InteractiveError> {
        self.check_open()?;
        self.inner.restore_checkpoint(id, false)
    }

    /// Like [`restore_edit_checkpoint`](Self::restore_edit_checkpoint), and also undoes
    /// checkpoint `id`'s own turn: files are as they were before that prompt.
    pub fn rollback_edit_checkpoint(
        &self,
        id: &str,
    ) -> Result<crate::framework::checkpoints::RestoreReport, InteractiveError> {
        self.check_open()?;
        self.inner.restore_checkpoint(id, true)
    }

    /// Compacts the conversation now (refused while a prompt runs).
    pub async fn compact(
        &self,
        instructions: Option<String>,
    ) -> Result<crate::session::compaction::CompactionSummary, InteractiveError> {
        self.check_open()?;
        self.wait_settled().await;
        if self.is_executing() {
            return Err(InteractiveError::Busy("compact".into()));
        }
        Ok(self.inner.session.compact(instructions).await?)
    }
}

/// A skill warning as a session warning (kind `skill`).
fn skill_warning(warning: &crate::framework::skills::SkillWarning) -> SessionWarning {
    SessionWarning {
        file: warning.file.clone(),
        json_path: String::new(),
        kind: "skill".into(),
        message: match warning.line {
            Some(line) => format!("line {line}: {}", warning.message),
            None => warning.message.clone(),
        },
    }
}

/// The folders of skills that live outside the project (canonical, without repeats).
fn outside_skill_dirs(catalog: &SkillCatalog, cwd: &std::path::Path) -> Vec<std::path::PathBuf> {
    let cwd = cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf());
    let mut dirs: Vec<std::path::PathBuf> = Vec::new();
    for dir in catalog.skills().filter_map(|s| s.dir.as_ref()) {
        let dir = dir.canonicalize().unwrap_or_else(|_| dir.clone());
        if !dir.starts_with(&cwd) && !dirs.contains(&dir) {
            dirs.push(dir);
        }
    }
    dirs
}

/// Allow rules letting the model read (Read, Glob, Grep) `dirs` without a prompt.
fn skill_read_rules(dirs: &[std::path::PathBuf]) -> Vec<String> {
    let mut rules = Vec::new();
    for dir in dirs {
        let Some(text) = dir.to_str() else { continue };
        // `//` anchors a rule path at the filesystem root.
        let pattern = format!("/{}/**", text.trim_end_matches('/'));
        for tool in ["Read", "Glob", "Grep"] {
            rules.push(format!("{tool}({pattern})"));
        }
    }
    rules
}

/// An agent catalog warning as a session warning (kind `agent_definition`).
fn agent_warning(warning: &AgentWarning) -> SessionWarning {
    SessionWarning {
        file: Some(warning.file.clone()),
        json_path: String::new(),
        kind: "agent_definition".into(),
        message: match warning.line {
            Some(line) => format!("line {line}: {}", warning.message),
            None => warning.message.clone(),
        },
    }
}

/// A warning for every tool a file-defined agent lists in `tools` that its subagents will not
/// have: not a tool of this session (the built-ins or the host's, plus extra tools), or one
/// robota never gives a subagent (the agent tool, commands). The agent still loads and runs with
/// the tools that exist.
fn unknown_agent_tools(catalog: &AgentCatalog, session: &SessionOptions) -> Vec<SessionWarning> {
    let mut available: Vec<String> = match &session.tools {
        Some(tools) => tools.names().into_iter().map(str::to_string).collect(),
        None => crate::tools::builtins::BUILTIN_TOOL_NAMES
            .iter()
            .map(|n| n.to_string())
            .collect(),
    };
    available.extend(session.extra_tools.iter().map(|t| t.name().to_string()));
    let mut warnings = Vec::new();
    for definition in catalog.definitions() {
        let Some(path) = definition.source.path() else {
            continue;
        };
        for entry in definition.tools.iter().flatten() {
            // `Bash(git *)`-style entries name the tool before the parenthesis.
            let name = entry.split('(').next().unwrap_or("").trim();
            let problem = if is_withheld_from_subagents(name) {
                format!(
                    "agent `{}` lists the tool `{name}`, which robota does not give subagents \
                     (a subagent cannot start subagents or run commands); it runs without it",
                    definition.name
                )
            } else if !available.iter().any(|a| a == name) {
                format!(
                    "agent `{}` lists the tool `{name}`, which this session does not have; the \
                     agent runs without it",
                    definition.name
                )
            } else {
                continue;
            };
            warnings.push(SessionWarning {
                file: Some(path.to_path_buf()),
                json_path: "tools".into(),
                kind: "agent_definition".into(),
                message: problem,
            });
        }
    }
    warnings
}

impl Inner {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn session(&self) -> &Session {
        &self.session
    }

    /// The agents, read fresh from disk; `None` when no module requested the agent executor.
    /// The plugin manager of the session's user and project, if it has a home folder.
    pub(crate) fn plugin_manager(&self) -> Option<crate::framework::plugins::PluginManager> {
        self.plugins.manager.clone()
    }

    /// The ids of the plugins this session loaded.
    pub(crate) fn loaded_plugin_ids(&self) -> Vec<String> {
        self.plugins.ids()
    }

    pub(crate) fn agent_catalog(&self) -> Option<AgentCatalog> {
        self.agents.as_ref().map(AgentSetup::catalog)
    }

    /// A cancellation token for a subagent starting now: a child of the running prompt's (so
    /// aborting the prompt aborts the subagent), registered so `abort` reaches it also when the
    /// user started the subagent outside a prompt. Release it with
    /// [`end_subagent`](Self::end_subagent) and the returned id.
    pub(crate) fn begin_subagent(&self) -> (u64, CancellationToken) {
        let mut state = self.lock();
        let token = match &state.cancel {
            Some(parent) => parent.child_token(),
            None => CancellationToken::new(),
        };
        state.next_subagent += 1;
        let id = state.next_subagent;
        state.subagents.push((id, token.clone()));
        (id, token)
    }

    /// Forgets the token [`begin_subagent`](Self::begin_subagent) returned with `id`.
    pub(crate) fn end_subagent(&self, id: u64) {
        self.lock().subagents.retain(|(other, _)| *other != id);
    }

    /// Emits subagent progress as a `background_task_event`.
    pub(crate) fn emit_background(&self, data: Value) {
        self.hub
            .emit(InteractiveEventKind::BackgroundTaskEvent { data });
    }

    /// While a prompt runs, schedules a compaction for when it ends (a later request replaces
    /// the instructions) and returns `true`; returns `false` when idle (compact now).
    pub(crate) fn schedule_compaction(&self, instructions: Option<&str>) -> bool {
        let mut state = self.lock();
        if !state.executing {
            return false;
        }
        state.pending_compaction = Some(instructions.map(str::to_string));
        true
    }

    /// Resolves `@file` references (not in a skill's instructions, which are not typed by the
    /// user) and starts or queues the prompt.
    pub(crate) fn enqueue_prompt(
        self: &Arc<Self>,
        input: &str,
        display: &str,
        done: Option<tokio::sync::oneshot::Sender<PromptEnd>>,
        skill: Option<ActiveSkill>,
    ) -> Result<(SubmitStatus, u64), InteractiveError> {
        let (text, context) = if skill.is_some() {
            (input.to_string(), None)
        } else {
            self.resolve_references(input)?
        };
        self.enqueue_resolved(text, context, display, done, skill)
    }

    /// `input` with its `@file` references resolved: the text as typed and the attached file
    /// contents (model-only context). A blocking problem is an `error` event and an error.
    pub(crate) fn resolve_references(
        &self,
        input: &str,
    ) -> Result<(String, Option<String>), InteractiveError> {
        {
            let options = FileRefOptions::default();
            let resolved = match resolve_file_references(input, self.session.cwd(), &[], &options) {
                Ok(resolved) => resolved,
                Err(diagnostics) => {
                    let message = diagnostics.to_string();
                    self.hub.emit(InteractiveEventKind::Error {
                        error: ErrorInfo::new("invalid_argument", message.clone()),
                        message,
                        outcome: None,
                    });
                    return Err(InteractiveError::FileReferences(diagnostics.to_string()));
                }
            };
            // The file contents go to the model as context of this prompt only; the history
            // keeps the prompt as typed.
            let context = resolved
                .model_text
                .strip_prefix(resolved.original.as_str())
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .map(str::to_string);
            Ok((resolved.original, context))
        }
    }

    /// Starts or queues a prompt whose `@file` references are resolved (`context`).
    pub(crate) fn enqueue_resolved(
        self: &Arc<Self>,
        text: String,
        context: Option<String>,
        display: &str,
        done: Option<tokio::sync::oneshot::Sender<PromptEnd>>,
        skill: Option<ActiveSkill>,
    ) -> Result<(SubmitStatus, u64), InteractiveError> {
        self.enqueue_prompt_parts(Prompt {
            text,
            context,
            display: display.to_string(),
            done,
            id: 0,
            skill,
            raw: None,
            output_format: None,
        })
    }

    fn enqueue_prompt_parts(
        self: &Arc<Self>,
        mut prompt: Prompt,
    ) -> Result<(SubmitStatus, u64), InteractiveError> {
        {
            let mut state = self.lock();
            if state.shut_down {
                return Err(InteractiveError::ShutDown);
            }
            if state.executing && state.pending.is_some() {
                return Err(InteractiveError::QueueFull);
            }
            state.next_prompt += 1;
            prompt.id = state.next_prompt;
            let id = prompt.id;
            if state.executing {
                state.pending = Some(prompt);
                return Ok((SubmitStatus::Queued, id));
            }
            state.executing = true;
        }
        let id = prompt.id;
        let inner = Arc::clone(self);
        tokio::spawn(async move { inner.drive(prompt).await });
        Ok((SubmitStatus::Started, id))
    }

    /// Ends the skill of a queued prompt that was dropped before it ran.
    fn dropped(&self, prompt: Option<Prompt>) {
        if let Some(active) = prompt.and_then(|p| p.skill) {
            self.finish_skill(
                active,
                Some("the prompt was cancelled before it ran".into()),
            );
        }
    }

    /// Runs `prompt`, then the queued prompt, until the queue is empty.
    async fn drive(self: Arc<Self>, first: Prompt) {
        let mut next = Some(first);
        while let Some(mut prompt) = next {
            let cancel = CancellationToken::new();
            {
                let mut state = self.lock();
                state.cancel = Some(cancel.clone());
                state.running_prompt = Some(prompt.id);
                state.streaming_text.clear();
                state.tools.clear();
                state.denied.clear();
            }
            let history_mark = self.last_history_id();
            self.begin_checkpoint(&prompt.display);
            let result = self.run_one(&prompt, &cancel).await;
            self.finish_checkpoint();
            // The per-tool entries recorded during the run go before the summaries.
            self.flush_history();
            let compaction = self.lock().pending_compaction.take();
            let ended = match result {
                Ok(outcome) if outcome.interrupted || cancel.is_cancelled() => {
                    PromptResult::Interrupted {
                        outcome: Some(outcome),
                        report: ExecutionReport::default(),
                    }
                }
                Ok(outcome) => {
                    self.append_summaries(&outcome);
                    // Complete, refused, truncated, or error when a model call failed.
                    let ended = PromptResult::from_outcome(outcome);
                    if let PromptResult::Error { message, error, .. } = &ended {
                        // Spec 001 "Provider Error Recovery": the user reads what failed in
                        // the history too, not only in the event (never sent to the model).
                        self.record_history("error", json!({ "message": message, "error": error }));
                    }
                    ended
                }
                // Aborted before the run started: there is no outcome to report.
                Err(_) if cancel.is_cancelled() => PromptResult::Interrupted {
                    outcome: None,
                    report: ExecutionReport::default(),
                },
                Err(error) => {
                    let error = ErrorInfo::from_session(&error);
                    PromptResult::Error {
                        message: error.message.clone(),
                        error,
                        outcome: None,
                    }
                }
            };
            // The skill this prompt ran, and those the model activated in it, end with it.
            let skill_error = match &ended {
                PromptResult::Complete { outcome, .. } => {
                    outcome.error.as_ref().map(|e| e.message.clone())
                }
                PromptResult::Refused { .. } => Some("the model refused".into()),
                PromptResult::Truncated { .. } => {
                    Some("the answer was cut off at the output token limit".into())
                }
                PromptResult::Interrupted { .. } => Some("the prompt was interrupted".into()),
                PromptResult::Error { message, .. } => Some(message.clone()),
                PromptResult::Cancelled => Some("the prompt was cancelled".into()),
            };
            if let Some(active) = prompt.skill.take() {
                self.finish_skill(active, skill_error.clone());
            }
            self.finish_run_skills(skill_error);
            self.flush_history();
            let ended = match ended.report() {
                Some(_) => ended
                    .clone()
                    .with_report(self.report(&ended, history_mark.as_deref())),
                None => ended,
            };
            // The prompt is over before anyone hears that it ended: a host that acts on the
            // result at once (restores a checkpoint, runs a command) must not find it still
            // running.
            {
                let mut state = self.lock();
                state.running_prompt = None;
                state.settling = true;
            }
            let event_seq = self.hub.emit(ended.event());
            if let Some(done) = prompt.done.take() {
                // The host may have dropped its ticket; nothing then waits for the result.
                let _ = done.send(PromptEnd {
                    result: ended,
                    event_seq: Some(event_seq),
                });
            }
            if let Some(instructions) = compaction {
                // The session emits the `compaction` event itself on success.
                if let Err(error) = self.session.compact(instructions).await {
                    let mut info = ErrorInfo::from_session(&error);
                    info.message = format!("Compaction failed: {error}");
                    self.hub.emit(InteractiveEventKind::Error {
                        message: info.message.clone(),
                        error: info,
                        outcome: None,
                    });
                }
            }
            {
                let mut state = self.lock();
                state.cancel = None;
                state.running_prompt = None;
                state.settling = false;
                next = state.pending.take();
                if next.is_none() {
                    state.executing = false;
                }
            }
            // Wakes `wait_idle` after the last prompt, and `wait_settled` after each.
            self.idle.notify_waiters();
        }
    }

    /// One run, re-sending the abort until the run stops: an abort that lands before the run
    /// has registered its cancellation token would otherwise be lost.
    async fn run_one(
        &self,
        prompt: &Prompt,
        cancel: &CancellationToken,
    ) -> Result<RunOutcome, SessionError> {
        if cancel.is_cancelled() {
            return Err(SessionError::Busy);
        }
        // A skill or custom command the user started runs on its `model`.
        let model = prompt.skill.as_ref().and_then(|s| s.model.as_deref());
        let context: Vec<String> = prompt.context.iter().cloned().collect();
        let run = async {
            match &prompt.output_format {
                Some(format) => {
                    self.session
                        .run_as_typed_with_output_format(
                            prompt.text.clone(),
                            prompt.raw.as_deref(),
                            context,
                            model,
                            format,
                        )
                        .await
                }
                None => {
                    self.session
                        .run_as_typed(prompt.text.clone(), prompt.raw.as_deref(), context, model)
                        .await
                }
            }
        };
        tokio::pin!(run);
        tokio::select! {
            result = &mut run => return result,
            _ = cancel.cancelled() => {}
        }
        loop {
            self.session.abort();
            tokio::select! {
                result = &mut run => return result,
                _ = tokio::time::sleep(Duration::from_millis(10)) => {}
            }
        }
    }

    /// The id of the newest history entry (where the next prompt's entries begin).
    fn last_history_id(&self) -> Option<String> {
        self.session.last_history_entry_id()
    }

    /// What a prompt that ended as `ended` did: its answer, the history entries after `mark`
    /// (from its user message when a compaction replaced the entries before), its tools, the
    /// context state and its usage.
    fn report(&self, ended: &PromptResult, mark: Option<&str>) -> ExecutionReport {
        let outcome = ended.outcome();
        // An abort can leave the outcome without the text that had streamed.
        let response = match outcome {
            Some(outcome) if !outcome.response.is_empty() => outcome.response.clone(),
            _ => self.lock().streaming_text.clone(),
        };
        let context_state = self.session.context_state();
        ExecutionReport {
            response,
            history: self.session.history_after(mark),
            tool_summaries: self.lock().tools.clone(),
            usage: outcome.and_then(|o| self.usage_snapshot(o, &context_state)),
            context_state,
        }
    }

    /// The prompt's usage as spec 000 `IUsageSnapshot` (`None` when no tokens were counted).
    fn usage_snapshot(
        &self,
        outcome: &RunOutcome,
        context: &crate::session::ContextState,
    ) -> Option<UsageSnapshot> {
        let usage = &outcome.usage;
        if usage.input_tokens + usage.output_tokens == 0 {
            return None;
        }
        Some(UsageSnapshot {
            kind: "exact".into(),
            scope: "turn".into(),
            total_tokens: usage.input_tokens + usage.output_tokens,
            prompt_tokens: usage.input_tokens,
            completion_tokens: usage.output_tokens,
            context_used_tokens: context.used_tokens,
            context_max_tokens: context.max_tokens,
            context_used_percentage: context.ratio * 100.0,
            cost_status: self.session.usage().cost_status,
        })
    }

    /// Appends the `tool-summary` and `usage-summary` history entries of spec 000.
    fn append_summaries(&self, outcome: &RunOutcome) {
        let tools = self.lock().tools.clone();
        if !tools.is_empty() {
            let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
            let data = json!({
                "summary": format!("{} tool call(s): {}", tools.len(), names.join(", ")),
                "tools": tools,
            });
            let _ = self.session.append_history_event("tool-summary", data);
        }
        if let Some(snapshot) = self.usage_snapshot(outcome, &self.session.context_state()) {
            let data = serde_json::to_value(snapshot).unwrap_or_default();
            let _ = self.session.append_history_event("usage-summary", data);
        }
    }

    /// Records a `tool-start` / `tool-end` history entry (spec 000 "Tool execution history"):
    /// the tool's state as the event carries it. The run holds the session, so the entries are
    /// appended, in the order the events came, when the prompt ends.
    fn record_tool_entry(&self, entry_type: &str, tool: &ToolState) {
        if let Ok(data) = serde_json::to_value(tool) {
            self.record_history(entry_type, data);
        }
    }

    /// Keeps streaming text and tool state, then forwards the event.
    fn on_session_event(&self, event: SessionEvent) {
        let kind = match event {
            SessionEvent::Engine(EngineEvent::TextDelta { text }) => {
                self.lock().streaming_text.push_str(&text);
                InteractiveEventKind::TextDelta { text }
            }
            SessionEvent::Engine(EngineEvent::Thinking { text }) => {
                InteractiveEventKind::Thinking { text }
            }
            SessionEvent::Engine(EngineEvent::ServerToolUse { id, name, input }) => {
                InteractiveEventKind::ServerToolUse { id, name, input }
            }
            SessionEvent::Engine(EngineEvent::ServerToolResult {
                tool_use_id,
                result_type,
                is_error,
            }) => InteractiveEventKind::ServerToolResult {
                tool_use_id,
                result_type,
                is_error,
            },
            SessionEvent::Engine(EngineEvent::ToolStart {
                tool_use_id,
                name,
                input,
            }) => {
                let tool = ToolState {
                    tool_use_id,
                    first_arg: first_arg(&input),
                    name,
                    is_running: true,
                    result: None,
                    diff_file: None,
                    diff_lines: Vec::new(),
                    tool_result_data: None,
                };
                self.lock().tools.push(tool.clone());
                self.record_tool_entry("tool-start", &tool);
                InteractiveEventKind::ToolStart { tool }
            }
            SessionEvent::Engine(EngineEvent::ToolEnd {
                tool_use_id,
                name,
                output,
            }) => {
                let mut state = self.lock();
                let denied = state.denied.contains(&tool_use_id);
                let index = state
                    .tools
                    .iter()
                    .position(|t| t.tool_use_id == tool_use_id);
                let mut tool = match index {
                    Some(i) => state.tools[i].clone(),
                    None => ToolState {
                        tool_use_id: tool_use_id.clone(),
                        name: name.clone(),
                        first_arg: String::new(),
                        is_running: true,
                        result: None,
                        diff_file: None,
                        diff_lines: Vec::new(),
                        tool_result_data: None,
                    },
                };
                tool.is_running = false;
                tool.result = Some(if denied {
                    ToolResultKind::Denied
                } else if output.is_error {
                    ToolResultKind::Error
                } else {
                    ToolResultKind::Success
                });
                if matches!(name.as_str(), "Edit" | "MultiEdit") && !output.is_error {
                    tool.diff_file = output
                        .response
                        .get("file_path")
                        .and_then(Value::as_str)
                        .map(str::to_string);
                    tool.diff_lines = diff_lines(&output.response);
                }
                tool.tool_result_data = Some(truncate(&output.content, MAX_TOOL_RESULT_DATA));
                match index {
                    Some(i) => state.tools[i] = tool.clone(),
                    None => state.tools.push(tool.clone()),
                }
                drop(state);
                self.record_tool_entry("tool-end", &tool);
                InteractiveEventKind::ToolEnd { tool }
            }
            SessionEvent::PermissionResolved {
                ref tool_use_id,
                ref resolution,
                ..
            } => {
                if matches!(
                    resolution,
                    crate::session::PermissionResolution::Denied { .. }
                ) {
                    self.lock().denied.push(tool_use_id.clone());
                }
                translate(event)
            }
            other => translate(other),
        };
        self.hub.emit(kind);
    }
}

/// The argument a one-line display shows: a path, command, pattern, URL or skill name, else
/// the first string argument (what [`ToolState::first_arg`] holds), so a host can show a call as
/// `Bash(ls -la)` — in a permission prompt, say — the way the tool events do.
pub fn first_arg(input: &Value) -> String {
    const KEYS: [&str; 8] = [
        "file_path",
        "notebook_path",
        "path",
        "command",
        "pattern",
        "url",
        "query",
        "skill",
    ];
    let found = KEYS
        .iter()
        .find_map(|k| input.get(*k).and_then(Value::as_str))
        .or_else(|| {
            input
                .as_object()
                .and_then(|o| o.values().find_map(Value::as_str))
        });
    truncate(found.unwrap_or(""), 200)
}

/// The diff lines of an Edit response's `structured_patch` hunks.
fn diff_lines(response: &Value) -> Vec<String> {
    response
        .get("structured_patch")
        .and_then(Value::as_array)
        .map(|hunks| {
            hunks
                .iter()
                .filter_map(|h| h.get("lines").and_then(Value::as_array))
                .flatten()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// `text` cut to at most `max` bytes at a character boundary.
fn truncate(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_string()
}
