//! Running one subagent for a session: resolve the agent definition, set up worktree isolation
//! when asked, run the child through [`Session::run_subagent`], clean the worktree up, and report
//! progress ([`SubagentProgress`]) and the result ([`SubagentReport`]).

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::definition::{AgentCatalog, AgentDefinition, AgentDefinitionError, DEFAULT_AGENT_TYPE};
use super::worktree::{
    create_worktree, finish_worktree, Worktree, WorktreeDisposition, WorktreeError,
};
use crate::engine::{EngineEvent, RunStopReason};
use crate::framework::commands::models::{resolve_model_alias, MODEL_ALIASES};
use crate::session::{Session, SessionError, SubagentRun};

/// Where a subagent runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Isolation {
    /// In the session's directory.
    #[default]
    None,
    /// In a git worktree of its own.
    Worktree,
}

impl std::str::FromStr for Isolation {
    type Err = String;

    /// `none` or `worktree`.
    fn from_str(value: &str) -> Result<Self, String> {
        match value {
            "worktree" => Ok(Isolation::Worktree),
            "none" => Ok(Isolation::None),
            other => Err(format!(
                "unknown isolation `{other}`; use `worktree` (or `none`)"
            )),
        }
    }
}

/// A request to run a subagent.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct SubagentRequest {
    /// The agent definition's name; [`DEFAULT_AGENT_TYPE`] when `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_type: Option<String>,
    /// The task.
    pub prompt: String,
    /// Where it runs.
    #[serde(default)]
    pub isolation: Isolation,
    /// The model it runs on, overriding the agent definition's `model`: an alias (`sonnet`,
    /// `opus`, `haiku`) mapped through the provider's model table, `inherit` for the session's
    /// current model, or a full model id. `None`: the definition's, else the session's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// True for a fork worker (a skill with `context: fork`): its prompt ends with the fork-worker
    /// suffix (answer within 500 words) instead of the subagent suffix.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub fork_worker: bool,
    /// The model's tool call that started it (the `Task` call's `tool_use_id`), reported on
    /// the `started` progress so a host can hang the subagent under that call; `None` when
    /// host code or a command started it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_tool_use_id: Option<String>,
}

/// Why a subagent could not be run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SubagentError {
    /// No agent of that name.
    #[error("unknown agent type `{name}`; available: {}", available.join(", "))]
    UnknownAgent {
        /// The name asked for.
        name: String,
        /// The names there are.
        available: Vec<String>,
    },
    /// The prompt is empty.
    #[error("the subagent needs a prompt: say what it should do")]
    EmptyPrompt,
    /// A definition file is malformed.
    #[error(transparent)]
    Definitions(#[from] AgentDefinitionError),
    /// Worktree isolation was requested and the worktree could not be created; the subagent was
    /// not run.
    #[error(transparent)]
    Worktree(#[from] WorktreeError),
    /// The requested model is an alias the session's provider has no model for.
    #[error(
        "model `{model}` is an alias provider `{provider}` has no model for; use a full model id \
         or `inherit`"
    )]
    UnknownModel {
        /// The model asked for.
        model: String,
        /// The session's provider.
        provider: String,
    },
    /// The session's provider cannot call the requested model.
    #[error("provider `{provider}` cannot switch to model `{model}` (it runs only `{current}`)")]
    UnavailableModel {
        /// The model asked for.
        model: String,
        /// The session's provider.
        provider: String,
        /// The model the session runs on.
        current: String,
    },
    /// The session refused (shut down).
    #[error(transparent)]
    Session(#[from] SessionError),
}

/// What happened to the worktree of an isolated run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorktreeReport {
    /// The worktree.
    #[serde(flatten)]
    pub worktree: Worktree,
    /// Removed or kept.
    pub disposition: WorktreeDisposition,
}

/// What a subagent run produced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SubagentReport {
    /// The run's id (`agent_id` in hook inputs).
    pub agent_id: String,
    /// The agent definition used.
    pub agent_type: String,
    /// The model the subagent ran on.
    #[serde(default)]
    pub model: String,
    /// The subagent's final answer.
    pub response: String,
    /// Why the child run ended.
    pub stop_reason: RunStopReason,
    /// True when it was aborted.
    pub interrupted: bool,
    /// Model/tool rounds.
    pub rounds: u32,
    /// Tools it ran, in order.
    pub tools_executed: Vec<String>,
    /// Times a SubagentStop hook made it continue.
    pub stop_hook_continuations: u32,
    /// Set when a hook's `continue: false` stopped it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_by_hook: Option<String>,
    /// Its transcript (JSONL of execution events), when the session keeps a log.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transcript_path: Option<std::path::PathBuf>,
    /// The worktree, for isolated runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worktree: Option<WorktreeReport>,
    /// The model error, when the run ended on one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Things worth knowing (ignored model override, unknown tools, …).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl SubagentReport {
    /// The text the caller (the parent model, or the user) is given: the answer, then what
    /// happened to the worktree when it was kept.
    pub fn message(&self) -> String {
        let mut text = if self.interrupted {
            format!(
                "Subagent {} ({}) was interrupted.{}",
                self.agent_id,
                self.agent_type,
                if self.response.is_empty() {
                    String::new()
                } else {
                    format!(" Partial answer:\n{}", self.response)
                }
            )
        } else if let Some(error) = &self.error {
            format!(
                "Subagent {} ({}) failed: {error}",
                self.agent_id, self.agent_type
            )
        } else if let (Some(reason), true) = (&self.stopped_by_hook, self.response.is_empty()) {
            format!(
                "Subagent {} ({}) was stopped by a hook: {reason}",
                self.agent_id, self.agent_type
            )
        } else {
            self.response.clone()
        };
        if let Some(report) = &self.worktree {
            match &report.disposition {
                WorktreeDisposition::Kept { reason } => {
                    text.push_str(&format!(
                        "\n\n[worktree kept: {reason}] path: {}",
                        report.worktree.path.display()
                    ));
                    if let Some(branch) = &report.worktree.branch {
                        text.push_str(&format!(", branch: {branch}"));
                    }
                }
                WorktreeDisposition::Removed => text.push_str("\n\n[worktree removed: no changes]"),
            }
        }
        text
    }
}

/// Progress of a subagent run, for hosts (an interactive session sends it as
/// `background_task_event` data with `task_kind: "subagent"`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum SubagentProgress {
    /// The subagent is starting (after its worktree, if any, was created).
    Started {
        /// The run's id.
        agent_id: String,
        /// The agent type.
        agent_type: String,
        /// Where it runs.
        isolation: Isolation,
        /// The worktree, for isolated runs.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        worktree_path: Option<std::path::PathBuf>,
        /// The parent's tool call that started it ([`SubagentRequest::parent_tool_use_id`]).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        parent_tool_use_id: Option<String>,
    },
    /// The subagent started a tool.
    ToolStart {
        /// The run's id.
        agent_id: String,
        /// The tool.
        tool_name: String,
        /// The call's id.
        tool_use_id: String,
    },
    /// A tool of the subagent ended.
    ToolEnd {
        /// The run's id.
        agent_id: String,
        /// The tool.
        tool_name: String,
        /// The call's id.
        tool_use_id: String,
        /// True when it failed.
        is_error: bool,
    },
    /// One of the subagent's tool calls waits for the host's permission answer.
    PermissionWaiting {
        /// The run's id.
        agent_id: String,
    },
    /// The permission wait ended (answered, or abandoned on abort).
    PermissionAnswered {
        /// The run's id.
        agent_id: String,
    },
    /// The subagent finished (also when interrupted or failed).
    Finished {
        /// The result.
        report: Box<SubagentReport>,
    },
}

impl SubagentProgress {
    /// The JSON a host gets: the progress with `task_kind: "subagent"` added.
    pub fn to_event_data(&self) -> Value {
        let mut value = serde_json::to_value(self).unwrap_or(Value::Null);
        if let Value::Object(map) = &mut value {
            map.insert("task_kind".into(), Value::String("subagent".into()));
        }
        value
    }
}

/// Receives [`SubagentProgress`].
pub type SubagentProgressCallback = Arc<dyn Fn(SubagentProgress) + Send + Sync>;

/// A fresh id for a subagent run (a safe file name).
pub fn new_agent_id() -> String {
    let id = uuid::Uuid::new_v4().simple().to_string();
    format!("agent-{}", &id[..12])
}

/// The framework suffix of a subagent's system prompt (spec 000 "Framework System Prompt
/// Suffixes"): report concisely to the caller.
pub const SUBAGENT_PROMPT_SUFFIX: &str = "# Subagent\nYou were started by another agent to carry \
     out the task in the user message. Work on it on your own; nobody answers questions. When \
     you are done, reply with a concise report of what you found or did: that reply is all the \
     caller sees.";

/// The framework suffix of a fork worker's system prompt (a skill run with `context: fork`):
/// answer within 500 words.
pub const FORK_WORKER_PROMPT_SUFFIX: &str = "# Fork worker\nYou are a forked worker carrying out \
     the skill in the user message for another agent. Work on it on your own; nobody answers \
     questions. When you are done, reply with the result in at most 500 words: that reply is all \
     the caller sees.";

/// The subagent's system prompt (spec 000 `assembleSubagentPrompt`): the definition's body,
/// the project's instruction files, the framework suffix, then where it works.
fn system_prompt(
    definition: &AgentDefinition,
    session: &Session,
    worktree: Option<&Worktree>,
    fork_worker: bool,
) -> String {
    let mut prompt = definition.system_prompt.trim().to_string();
    // The project's instruction files (AGENTS.md, CLAUDE.md) bind the subagent as they bind
    // the session that started it.
    if let Some(instructions) = session.project_instructions() {
        prompt.push_str("\n\n");
        prompt.push_str(instructions.trim());
    }
    prompt.push_str("\n\n");
    prompt.push_str(if fork_worker {
        FORK_WORKER_PROMPT_SUFFIX
    } else {
        SUBAGENT_PROMPT_SUFFIX
    });
    match worktree {
        Some(worktree) => {
            prompt.push_str(&format!(
                "\nYou work in an isolated git worktree at {}{}; your changes stay there until \
                 the caller merges them.",
                worktree.cwd.display(),
                worktree
                    .branch
                    .as_ref()
                    .map(|b| format!(" (branch {b})"))
                    .unwrap_or_default()
            ));
        }
        None => prompt.push_str(&format!("\nWorking directory: {}", session.cwd().display())),
    }
    prompt
}

/// The model a subagent (or a skill or custom command) runs on: `requested` (an agent
/// definition's, a skill's or a caller's `model`) resolved against the session's provider. `None` and `inherit` are the session's current model
/// (the one a live model switch chose); `sonnet`/`opus`/`haiku` are the newest model of that
/// family in the provider's model table; anything else is a model id used as is. A model the
/// provider cannot serve is an error, never silently replaced.
pub fn resolve_subagent_model(
    session: &Session,
    requested: Option<&str>,
) -> Result<String, SubagentError> {
    let current = session.current_model();
    let requested = match requested.map(str::trim) {
        None | Some("") => return Ok(current),
        Some(model) if model.eq_ignore_ascii_case("inherit") => return Ok(current),
        Some(model) => model,
    };
    let provider = session.provider_name().to_string();
    let model = if MODEL_ALIASES.contains(&requested.to_ascii_lowercase().as_str()) {
        resolve_model_alias(&provider, requested).ok_or_else(|| SubagentError::UnknownModel {
            model: requested.to_string(),
            provider: provider.clone(),
        })?
    } else {
        requested
    };
    if model == current || session.can_run_on(model) {
        Ok(model.to_string())
    } else {
        Err(SubagentError::UnavailableModel {
            model: model.to_string(),
            provider,
            current,
        })
    }
}

/// Runs a subagent for `session` (see the module docs). `cancel` aborts it (pass a child token
/// of the parent's run). Errors mean the subagent did not run; an interrupted or failed run is a
/// report.
pub async fn run_subagent(
    session: &Session,
    catalog: &AgentCatalog,
    request: SubagentRequest,
    cancel: &CancellationToken,
    on_progress: Option<SubagentProgressCallback>,
) -> Result<SubagentReport, SubagentError> {
    let prompt = request.prompt.trim();
    if prompt.is_empty() {
        return Err(SubagentError::EmptyPrompt);
    }
    let wanted = request.agent_type.as_deref().unwrap_or(DEFAULT_AGENT_TYPE);
    let definition = catalog
        .get(wanted)
        .ok_or_else(|| SubagentError::UnknownAgent {
            name: wanted.to_string(),
            available: catalog.definitions().map(|d| d.name.clone()).collect(),
        })?
        .clone();
    let requested_model = request.model.as_deref().or(definition.model.as_deref());
    let model = resolve_subagent_model(session, requested_model)?;
    let agent_id = new_agent_id();
    let worktree = match request.isolation {
        Isolation::None => None,
        Isolation::Worktree => {
            Some(create_worktree(session, &agent_id, &definition.name, cancel).await?)
        }
    };
    let mut notes = Vec::new();
    let emit = |progress: SubagentProgress| {
        if let Some(callback) = &on_progress {
            callback(progress);
        }
    };
    emit(SubagentProgress::Started {
        agent_id: agent_id.clone(),
        agent_type: definition.name.clone(),
        isolation: request.isolation,
        worktree_path: worktree.as_ref().map(|w| w.path.clone()),
        parent_tool_use_id: request.parent_tool_use_id.clone(),
    });
    let forward = on_progress.clone().map(|callback| {
        let agent_id = agent_id.clone();
        Arc::new(move |event: EngineEvent| match event {
            EngineEvent::ToolStart {
                tool_use_id, name, ..
            } => callback(SubagentProgress::ToolStart {
                agent_id: agent_id.clone(),
                tool_name: name,
                tool_use_id,
            }),
            EngineEvent::ToolEnd {
                tool_use_id,
                name,
                output,
            } => callback(SubagentProgress::ToolEnd {
                agent_id: agent_id.clone(),
                tool_name: name,
                tool_use_id,
                is_error: output.is_error,
            }),
            _ => {}
        }) as crate::engine::EventCallback
    });
    let on_permission_wait = on_progress.clone().map(|callback| {
        let agent_id = agent_id.clone();
        Arc::new(move |waiting: bool| {
            let agent_id = agent_id.clone();
            callback(if waiting {
                SubagentProgress::PermissionWaiting { agent_id }
            } else {
                SubagentProgress::PermissionAnswered { agent_id }
            })
        }) as crate::session::PermissionWaitCallback
    });
    let run = SubagentRun {
        agent_id: agent_id.clone(),
        agent_type: definition.name.clone(),
        prompt: prompt.to_string(),
        system_prompt: system_prompt(&definition, session, worktree.as_ref(), request.fork_worker),
        allowed_tools: definition.tools.clone(),
        disallowed_tools: definition.disallowed_tools.clone(),
        isolated_cwd: worktree.as_ref().map(|w| w.cwd.clone()),
        max_turns: definition.max_turns.unwrap_or(0),
        model: Some(model.clone()),
        on_event: forward,
        permission_mode: definition.permission_mode,
        on_permission_wait,
        parent_tool_use_id: request.parent_tool_use_id.clone(),
    };
    let result = session.run_subagent(run, cancel).await;
    // The worktree is cleaned up whatever happened to the run.
    let worktree = match worktree {
        Some(worktree) => {
            let disposition =
                finish_worktree(session, &worktree, &agent_id, &definition.name).await;
            Some(WorktreeReport {
                worktree,
                disposition,
            })
        }
        None => None,
    };
    let outcome = result?;
    notes.extend(outcome.notes);
    let report = SubagentReport {
        agent_id,
        agent_type: definition.name,
        model,
        response: outcome.response,
        stop_reason: outcome.outcome.stop_reason,
        interrupted: outcome.outcome.interrupted,
        rounds: outcome.outcome.rounds,
        tools_executed: outcome.outcome.tools_executed,
        stop_hook_continuations: outcome.stop_hook_continuations,
        stopped_by_hook: outcome.stopped_by_hook,
        transcript_path: outcome.transcript_path,
        worktree,
        error: outcome.outcome.error.map(|e| e.message),
        notes,
    };
    emit(SubagentProgress::Finished {
        report: Box::new(report.clone()),
    });
    Ok(report)
}
