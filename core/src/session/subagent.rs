//! One subagent run inside a session ([`Session::run_subagent`]): a child conversation on the
//! session's provider with its own system prompt and a subset of the session's tools, gated by
//! the session's permission rules, handler and hooks (hook inputs carry `agent_id` and
//! `agent_type`), between the **SubagentStart** and **SubagentStop** hooks.
//!
//! - SubagentStart fires first. Its `additionalContext` goes to the subagent (model-only context
//!   on its first message); `continue: false` means the subagent does not run.
//! - SubagentStop fires when the subagent is about to finish. A block (exit 2, `decision:
//!   "block"`) makes it continue with the reason as its next user message, at most
//!   [`MAX_CONSECUTIVE_STOP_BLOCKS`] times in a row (`stop_hook_active: true` on repeats), as for
//!   Stop.
//! - The parent's abort reaches the subagent through the cancellation token the caller passes;
//!   the child history stays consistent (the engine gives every tool call a result).
//! - When the session keeps a log, the subagent's execution events are written to
//!   `<logs>/<session_id>/subagents/<agent_id>.jsonl` (its `agent_transcript_path`).
//!
//! Which agent, which prompt and where it runs (worktree isolation) is decided by the framework
//! (`framework::agents`); this module only runs it.

use std::path::PathBuf;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use super::enforcer::PermissionWaitCallback;
use super::error::SessionError;
use super::events::SessionEvent;
use super::run::{accumulate, interrupted_before_start, Session, STOP_HOOK_MESSAGE_METADATA};
use crate::engine::{
    Engine, EngineConfig, EventCallback, ExecutionEvent, JsonlRecorder, RunOptions, RunOutcome,
    RunStopReason,
};
use crate::hooks::{HookEvent, HookInput, SubagentStopInput, MAX_CONSECUTIVE_STOP_BLOCKS};
use crate::message::{Conversation, Message, MODEL_CONTEXT_METADATA};
use crate::permissions::PermissionMode;
use crate::tools::ToolRegistry;

/// Prefix of every tool that runs one of the session's commands (the framework projects its
/// commands as tools under this prefix); such tools act on the parent session, so subagents never
/// get them.
pub const COMMAND_TOOL_PREFIX: &str = "robota_command_";

/// Whether a subagent never gets tool `name`: agent-spawning tools (`Task`, `Agent`; subagents
/// cannot spawn subagents), `Skill` (a skill activates in the parent session, and a forked skill runs
/// as a subagent itself) and every projected `robota_command_*` tool, since commands act on the
/// parent session (a subagent must not compact or clear its parent's conversation, nor start
/// another subagent through `robota_command_agent`).
pub fn is_withheld_from_subagents(name: &str) -> bool {
    matches!(name, "Task" | "Agent" | "Skill") || name.starts_with(COMMAND_TOOL_PREFIX)
}

/// What one subagent run is made of.
#[derive(Clone)]
pub struct SubagentRun {
    /// Unique id of this run (hook inputs' `agent_id`, the transcript's file name). Must be a
    /// safe file name.
    pub agent_id: String,
    /// The agent definition's name (hook inputs' `agent_type`, the Subagent* matcher target).
    pub agent_type: String,
    /// The task.
    pub prompt: String,
    /// The subagent's system prompt.
    pub system_prompt: String,
    /// When set, only these of the session's tools (names; a `Bash(git *)`-style entry counts
    /// as its tool name).
    pub allowed_tools: Option<Vec<String>>,
    /// Tools removed from the session's set.
    pub disallowed_tools: Vec<String>,
    /// An isolated directory (a git worktree) to run in instead of the session's cwd: tools and
    /// permission decisions use it.
    pub isolated_cwd: Option<PathBuf>,
    /// Most rounds; `0` inherits the session's engine setting.
    pub max_turns: u32,
    /// The model it runs on (the session's provider calling it); `None`: the session's current
    /// model. One the provider cannot call is [`SessionError::ModelSwitch`].
    pub model: Option<String>,
    /// Receives the subagent's engine events (tool starts and ends, text), for progress display.
    pub on_event: Option<EventCallback>,
    /// The permission mode the subagent asks for (its agent definition's `permissionMode`),
    /// capped by the session's mode when it starts ([`PermissionMode::capped_by`]): a subagent
    /// never runs more permissively than its parent. `None`: the session's mode.
    pub permission_mode: Option<PermissionMode>,
    /// Told `true` when one of the subagent's calls starts waiting for the host's permission
    /// answer and `false` when the wait ends.
    pub on_permission_wait: Option<PermissionWaitCallback>,
    /// The model's tool call that started it (the `Task` call's id): with telemetry, the
    /// subagent's span is a child of that call's span.
    pub parent_tool_use_id: Option<String>,
}

impl std::fmt::Debug for SubagentRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SubagentRun")
            .field("agent_id", &self.agent_id)
            .field("agent_type", &self.agent_type)
            .field("allowed_tools", &self.allowed_tools)
            .field("disallowed_tools", &self.disallowed_tools)
            .field("isolated_cwd", &self.isolated_cwd)
            .field("max_turns", &self.max_turns)
            .field("model", &self.model)
            .field("permission_mode", &self.permission_mode)
            .finish_non_exhaustive()
    }
}

/// What a subagent run produced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SubagentOutcome {
    /// The run's id.
    pub agent_id: String,
    /// The agent type.
    pub agent_type: String,
    /// The subagent's final answer (what the caller gets back).
    pub response: String,
    /// The child run, summed over SubagentStop continuations.
    pub outcome: RunOutcome,
    /// The subagent's own transcript, when the session keeps a log.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transcript_path: Option<PathBuf>,
    /// Times a SubagentStop hook made the subagent continue.
    pub stop_hook_continuations: u32,
    /// Set when a hook's `continue: false` stopped the subagent (SubagentStart: it never ran).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_by_hook: Option<String>,
    /// The tools the subagent was offered.
    pub tools: Vec<String>,
    /// Things the caller should know (unknown names in the allow list, a transcript that could
    /// not be written, …).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// The subset of `tools` a subagent gets: denylist first, then the allowlist, then agent-spawning
/// and command tools always removed. Unknown allowlist names are returned as notes.
fn select_tools(tools: &ToolRegistry, run: &SubagentRun) -> (ToolRegistry, Vec<String>) {
    let base = |entry: &str| entry.split('(').next().unwrap_or("").trim().to_string();
    let mut selected = tools.clone();
    let mut notes = Vec::new();
    for name in &run.disallowed_tools {
        selected.unregister(&base(name));
    }
    if let Some(allowed) = &run.allowed_tools {
        let allowed: Vec<String> = allowed.iter().map(|a| base(a)).collect();
        for name in &allowed {
            if tools.get(name).is_none() {
                notes.push(format!(
                    "tool `{name}` in the agent's `tools` list is not available in this session"
                ));
            }
        }
        let names: Vec<String> = selected.names().into_iter().map(str::to_string).collect();
        for name in names {
            if !allowed.contains(&name) {
                selected.unregister(&name);
            }
        }
    }
    let names: Vec<String> = selected.names().into_iter().map(str::to_string).collect();
    for name in names {
        if is_withheld_from_subagents(&name) {
            selected.unregister(&name);
        }
    }
    (selected, notes)
}

impl Session {
    /// Runs a subagent to its final answer (see the module docs). Cancelling `cancel` aborts it;
    /// the outcome then has `interrupted: true`. Refused only after shutdown. Runs concurrently
    /// with the session's own run (a subagent is usually started by a tool call of that run).
    pub async fn run_subagent(
        &self,
        run: SubagentRun,
        cancel: &CancellationToken,
    ) -> Result<SubagentOutcome, SessionError> {
        let (engine, events, shut_down) = self.subagent_parts();
        if shut_down {
            return Err(SessionError::ShutDown);
        }
        let provider = self.provider_for_model(run.model.as_deref())?;
        let parent_mode = self.enforcer().permission_mode();
        let gate = self.enforcer().for_subagent(
            &run.agent_id,
            &run.agent_type,
            run.isolated_cwd.as_deref(),
            run.on_permission_wait.clone(),
        );
        let cwd = run
            .isolated_cwd
            .clone()
            .unwrap_or_else(|| self.cwd().to_path_buf());
        let common = gate.hook_common(&cwd);
        let (tools, mut notes) = select_tools(&engine.tools(), &run);
        if let Some(requested) = run.permission_mode {
            let mode = requested.capped_by(parent_mode);
            if mode != requested {
                notes.push(format!(
                    "the agent asks for permission mode `{requested}`, which would allow more \
                     than the session's `{parent_mode}`; it runs in `{mode}`"
                ));
            }
            gate.set_permission_mode(mode);
        }
        let tool_names: Vec<String> = tools.names().into_iter().map(str::to_string).collect();
        let transcript_path = common.transcript_path.as_deref().and_then(|log| {
            let logs = std::path::Path::new(log).parent()?;
            Some(
                logs.join(self.session_id())
                    .join("subagents")
                    .join(format!("{}.jsonl", run.agent_id)),
            )
        });
        let recorder = transcript_path.as_ref().and_then(|path| {
            let created = path
                .parent()
                .map_or(Ok(()), std::fs::create_dir_all)
                .and_then(|()| JsonlRecorder::create(path));
            match created {
                Ok(recorder) => Some(recorder),
                Err(error) => {
                    notes.push(format!("the subagent transcript was not written: {error}"));
                    events.emit(SessionEvent::PersistenceError {
                        operation: "subagent_transcript".into(),
                        message: error.to_string(),
                    });
                    None
                }
            }
        });
        let transcript_path = recorder.as_ref().and(transcript_path);
        let mut result = SubagentOutcome {
            agent_id: run.agent_id.clone(),
            agent_type: run.agent_type.clone(),
            response: String::new(),
            outcome: interrupted_before_start(),
            transcript_path: transcript_path.clone(),
            stop_hook_continuations: 0,
            stopped_by_hook: None,
            tools: tool_names,
            notes,
        };

        // SubagentStart: context for the subagent; `continue: false` keeps it from running.
        let mut context = Vec::new();
        let hooks = self.hooks();
        if hooks.has_hooks(HookEvent::SubagentStart) {
            let input = HookInput::subagent_start(
                common.clone(),
                run.agent_id.clone(),
                run.agent_type.clone(),
            );
            let outcome = hooks.run(&input, cancel).await;
            events.hook_outcome(&outcome);
            if let Some(stop) = &outcome.stop {
                let reason = stop
                    .reason
                    .clone()
                    .unwrap_or_else(|| "a SubagentStart hook stopped the subagent".into());
                events.emit(SessionEvent::AgentStopped {
                    event: HookEvent::SubagentStart,
                    reason: Some(reason.clone()),
                });
                result.stopped_by_hook = Some(reason);
                return Ok(result);
            }
            context = outcome.additional_context;
        }
        if cancel.is_cancelled() {
            return Ok(result);
        }

        let parent = engine.config();
        let config = EngineConfig {
            system_prompt: Some(run.system_prompt.clone()),
            max_turns: if run.max_turns == 0 {
                parent.max_turns
            } else {
                run.max_turns
            },
            cwd: cwd.clone(),
            ..parent.clone()
        };
        let traced = self.telemetry().map(|telemetry| {
            let span = telemetry.begin_subagent(
                run.parent_tool_use_id.as_deref(),
                &run.agent_type,
                &run.agent_id,
                provider.model(),
            );
            let observer = telemetry.execution_observer(Some(span.clone()));
            (Arc::clone(telemetry), span, observer)
        });
        let child = Engine::new(provider, tools, config).with_tool_gate(Arc::new(gate.clone()));
        let mut options = RunOptions::new().with_cancel(cancel.clone());
        options.on_event = run.on_event.clone();
        // Model calls of the subagent count in the session's usage; the transcript gets every
        // execution event. Callbacks must be `'static`, so usage is gathered here and recorded
        // in the session after each run.
        let calls: Arc<std::sync::Mutex<Vec<(String, crate::message::Usage)>>> = Arc::default();
        let gathered = Arc::clone(&calls);
        let record = recorder.clone();
        let observer = traced.as_ref().map(|(_, _, observer)| observer.clone());
        options = options.with_on_execution_event(move |event| {
            if let Some(observer) = &observer {
                observer.observe(&event);
            }
            if let ExecutionEvent::ProviderResponse { response, .. } = &event {
                gathered
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .push((response.model.clone(), response.usage));
            }
            if let Some(recorder) = &record {
                recorder.record(&event);
            }
        });

        let mut message = Message::user(run.prompt.clone());
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
        gate.begin_run(cancel.clone());
        let mut conversation = Conversation::new();
        let mut total: Option<RunOutcome> = None;
        let mut blocks = 0u32;
        loop {
            let outcome = child.run(&mut conversation, message, options.clone()).await;
            let outcome = accumulate(&mut total, outcome);
            let made: Vec<_> = std::mem::take(
                &mut *calls
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner),
            );
            for (model, usage) in &made {
                self.record_subagent_call(model, usage);
            }
            if gate.stop_requested() || outcome.interrupted {
                break;
            }
            if outcome.stop_reason == RunStopReason::Error
                || !hooks.has_hooks(HookEvent::SubagentStop)
            {
                break;
            }
            let input = HookInput::subagent_stop(
                gate.hook_common(&cwd),
                run.agent_id.clone(),
                run.agent_type.clone(),
                SubagentStopInput {
                    stop_hook_active: blocks > 0,
                    agent_transcript_path: transcript_path
                        .as_ref()
                        .map(|p| p.to_string_lossy().into_owned()),
                    last_assistant_message: Some(outcome.response.clone()),
                },
            );
            let stop = hooks.run(&input, cancel).await;
            events.hook_outcome(&stop);
            if let Some(request) = &stop.stop {
                gate.request_stop(HookEvent::SubagentStop, request.reason.clone());
                break;
            }
            let Some(block) = stop.block.filter(|_| !cancel.is_cancelled()) else {
                break;
            };
            if blocks >= MAX_CONSECUTIVE_STOP_BLOCKS {
                events.emit(SessionEvent::Warning {
                    source: "SubagentStop hook".into(),
                    message: format!(
                        "subagent {} ({}) finished anyway after {blocks} consecutive SubagentStop \
                         blocks; the last reason was: {}",
                        run.agent_id, run.agent_type, block.reason
                    ),
                });
                break;
            }
            blocks += 1;
            message = Message::user(block.reason);
            message
                .metadata
                .insert(STOP_HOOK_MESSAGE_METADATA.into(), true.into());
        }
        if let Some(stop) = gate.end_run() {
            result.stopped_by_hook = Some(
                stop.reason
                    .unwrap_or_else(|| format!("a {} hook stopped the subagent", stop.event)),
            );
        }
        if let Some(Err(error)) = recorder.as_ref().map(JsonlRecorder::finish) {
            result
                .notes
                .push(format!("the subagent transcript is incomplete: {error}"));
            events.emit(SessionEvent::PersistenceError {
                operation: "subagent_transcript".into(),
                message: error.to_string(),
            });
        }
        let outcome = total.unwrap_or_else(interrupted_before_start);
        if let Some((telemetry, span, _)) = traced {
            telemetry.end_subagent(span, &outcome);
        }
        result.response = outcome.response.clone();
        result.outcome = outcome;
        result.stop_hook_continuations = blocks;
        Ok(result)
    }
}
