//! What a session reports while it lives: one [`SessionEvent`] enum (serde `type` tag,
//! snake_case), delivered in order to the host's [`SessionEventCallback`].
//!
//! The engine's own [`EngineEvent`]s (`text_delta`, `tool_start`, `tool_end`, …) pass through
//! unchanged, flattened into the same JSON shape, so a host reads one stream. Everything the
//! session layer adds — permission prompts and their answers, hook failures and messages,
//! settings warnings, rejected prompts — is a variant of its own. Nothing the session decides on
//! the user's behalf is silent: if a hook failed, a rule could not be saved or a prompt was
//! refused, there is an event saying so.

use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::context::ContextState;
use super::loaded_context::{ContextWarning, LoadedContextFile};
use super::permission_handler::{PermissionResolution, ResolvedBy, SettingsTarget};
use super::recovery::RecoveryReport;
use crate::engine::EngineEvent;
use crate::hooks::{CompactTrigger, HandlerSummary, HookEvent, HookFailure, HookOutcome};
use crate::permissions::{DecisionBasis, PermissionMode};
use crate::tools::builtins::TodoItem;

/// Receives [`SessionEvent`]s. Called on the task that produced the event, in order; it must
/// return quickly (the session waits for it). A panicking callback loses that event and nothing
/// else.
pub type SessionEventCallback = Arc<dyn Fn(SessionEvent) + Send + Sync>;

/// Everything a session reports. Serialized with `type` as the snake_case tag; engine events
/// keep their own tags (`text_delta`, `tool_start`, …).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum SessionEvent {
    /// A tool call needs approval and the permission handler is being asked (or, without a
    /// handler, is about to be denied). Exactly one `permission_resolved` with the same
    /// `request_id` follows, whatever happens (answer, abort, session shutdown).
    PermissionRequest {
        /// Unique within the session.
        request_id: String,
        /// The tool.
        tool_name: String,
        /// The arguments the tool would run with (after any PreToolUse `updatedInput`).
        input: Value,
        /// The provider's id of the call.
        tool_use_id: String,
        /// Why approval is needed, in words.
        reason: String,
        /// What the decision rests on.
        basis: DecisionBasis,
        /// Rules that "allow for the session" / "allow always" would add.
        suggested_rules: Vec<String>,
        /// The settings files "allow always" can write to.
        settings_targets: Vec<SettingsTarget>,
        /// The permission mode at the time.
        permission_mode: PermissionMode,
    },
    /// A permission request was answered.
    PermissionResolved {
        /// The request.
        request_id: String,
        /// The tool.
        tool_name: String,
        /// The provider's id of the call.
        tool_use_id: String,
        /// The answer.
        resolution: PermissionResolution,
        /// Who answered.
        resolved_by: ResolvedBy,
    },
    /// "Allow always" could not write its rule to the settings file. The call was still allowed
    /// and the rule holds for this session; it will not be there next time.
    SettingsWriteFailed {
        /// The settings file.
        file: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// A hook failed (crash, exit code other than 0 and 2, timeout, malformed output, a host
    /// callback that threw or answered something unreadable). Usually the action went ahead;
    /// `blocked` says when the hook guards it and so blocked it instead (a failing PreToolUse or
    /// PermissionRequest callback fails closed by default). Bindings also report it to the
    /// developer (stderr, logging): see [`SessionEvent::developer_warning`].
    HookError {
        /// The event the hook ran for.
        event: HookEvent,
        /// Which handler.
        handler: HandlerSummary,
        /// What went wrong.
        failure: HookFailure,
        /// True when the failure blocked the action (the tool call, the prompt).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        blocked: bool,
        /// One line for the user.
        message: String,
    },
    /// A hook's message for the user (`systemMessage`, or exit-2 stderr of events where that goes
    /// to the user only).
    HookSystemMessage {
        /// The event the hook ran for.
        event: HookEvent,
        /// The message.
        message: String,
    },
    /// A hook returned `continue: false`: the agent stops.
    AgentStopped {
        /// The event whose hook stopped the agent.
        event: HookEvent,
        /// The hook's `stopReason`, when it gave one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// A Stop hook blocked the end of the turn: the agent continues with `reason` as its next
    /// instruction.
    StopHookContinued {
        /// The hook's reason (sent to the model as a user message).
        reason: String,
        /// Consecutive blocks so far in this turn, this one included.
        consecutive_blocks: u32,
    },
    /// A Stop hook blocked again after [`MAX_CONSECUTIVE_STOP_BLOCKS`] continuations in a row; the
    /// turn ends anyway so a hook cannot keep the agent running forever.
    ///
    /// [`MAX_CONSECUTIVE_STOP_BLOCKS`]: crate::hooks::MAX_CONSECUTIVE_STOP_BLOCKS
    StopHookLimitReached {
        /// The reason of the block that was not honoured.
        reason: String,
        /// The continuations that were honoured.
        consecutive_blocks: u32,
    },
    /// A settings problem that did not stop the session (unknown key, ignored key, a rule that
    /// may not do what its author expects, …).
    SettingsWarning {
        /// The warning.
        warning: SessionWarning,
    },
    /// A UserPromptSubmit hook rejected the prompt; nothing was sent to the model and the history
    /// is unchanged.
    PromptRejected {
        /// The prompt as submitted.
        prompt: String,
        /// The hook's reason.
        reason: String,
    },
    /// Something the session ignored or could not do that is not a settings or hook failure
    /// (e.g. an unsupported `updatedPermissions` entry from a PermissionRequest hook).
    Warning {
        /// What produced it.
        source: String,
        /// The message.
        message: String,
    },
    /// An MCP server's status changed: reported for every server when the session starts
    /// (connected, failed with the reason, disabled), and again whenever it fails, reconnects,
    /// is enabled or disabled.
    McpServerStatus {
        /// The server's name.
        server: String,
        /// Its new status.
        status: crate::mcp::McpServerStatus,
    },
    /// Writing the session to disk failed (snapshot or log). The turn went on; what failed to
    /// be written may be missing on resume.
    PersistenceError {
        /// What was being written (`open_log`, `log`, `save`, …).
        operation: String,
        /// What went wrong.
        message: String,
    },
    /// Opening the saved session found damage it repaired, data it could not keep, or a prompt
    /// whose turn never finished (the process was killed mid-turn). Sent once, when the session
    /// starts (first `run` or `start`); [`Session::recovery_report`](super::Session::recovery_report)
    /// keeps the report.
    SessionRecovered {
        /// The notice for the user, one line per finding.
        message: String,
        /// What was found and done.
        report: RecoveryReport,
    },
    /// How full the context window is: before a run (estimated) and after each turn (exact
    /// when the provider reported usage).
    ContextUpdate {
        /// The state.
        #[serde(flatten)]
        state: ContextState,
    },
    /// The history was compacted into a summary.
    Compaction {
        /// `manual` or `auto`.
        trigger: CompactTrigger,
        /// Context tokens before (as measured for the trigger).
        tokens_before: u64,
        /// Estimated context tokens of the compacted history.
        tokens_after: u64,
        /// The summary that replaced the conversation.
        summary: String,
    },
    /// Compaction did not happen: a PreCompact hook blocked it, or no usable summary came back
    /// (automatic compaction then lets the run go on; manual compaction also returns an error).
    CompactionSkipped {
        /// `manual` or `auto`.
        trigger: CompactTrigger,
        /// Why.
        reason: String,
    },
    /// The project context (AGENTS.md, CLAUDE.md, memory, tasks) the system prompt was built
    /// from. Sent once, when the session starts (first `run` or `start`), so a host subscribed
    /// through `on_event` sees which files shape the agent. Not sent when the system prompt was
    /// given explicitly or project context loading is off.
    ContextLoaded {
        /// Every file read, in prompt order.
        files: Vec<LoadedContextFile>,
        /// Files that exist but could not be read (loading went on without them).
        warnings: Vec<ContextWarning>,
    },
    /// The agent's task list changed: a `TodoWrite` call succeeded. `todos` is the whole new
    /// list (sent right after that call's `tool_end`), so a host can show progress.
    TodoUpdate {
        /// The list, in order.
        todos: Vec<TodoItem>,
    },
    /// An engine event, passed through unchanged.
    #[serde(untagged)]
    Engine(EngineEvent),
}

impl SessionEvent {
    /// The line a binding reports to the developer (on stderr or through the language's
    /// logging) for events that mean the host's own code misbehaved — a hook that failed — so
    /// that a bug in a callback is seen even by a host that listens to no event. `None` for every
    /// other event.
    pub fn developer_warning(&self) -> Option<String> {
        match self {
            SessionEvent::HookError { message, .. } => {
                Some(format!("robota: hook failed: {message}"))
            }
            _ => None,
        }
    }
}

/// A non-fatal settings problem, with where it is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionWarning {
    /// The settings file, when the problem is in one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<PathBuf>,
    /// The JSON path of the value concerned (empty when it is about the whole file).
    pub json_path: String,
    /// What kind of problem (`unknown_key`, `ignored_key`, `hook_config`, `permission_rule`, …).
    pub kind: String,
    /// A sentence for the user.
    pub message: String,
}

impl std::fmt::Display for SessionWarning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.file {
            Some(file) if self.json_path.is_empty() => {
                write!(f, "{}: {}", file.display(), self.message)
            }
            Some(file) => write!(
                f,
                "{}: `{}`: {}",
                file.display(),
                self.json_path,
                self.message
            ),
            None if self.json_path.is_empty() => f.write_str(&self.message),
            None => write!(f, "`{}`: {}", self.json_path, self.message),
        }
    }
}

/// Delivers events to the host's callback, containing a panicking callback.
#[derive(Clone, Default)]
pub(crate) struct EventSink {
    callback: Option<SessionEventCallback>,
}

impl EventSink {
    pub(crate) fn new(callback: Option<SessionEventCallback>) -> Self {
        EventSink { callback }
    }

    pub(crate) fn emit(&self, event: SessionEvent) {
        if let Some(callback) = &self.callback {
            // Host code must not be able to tear down a permission check or a run halfway.
            let _ = std::panic::catch_unwind(AssertUnwindSafe(|| callback(event)));
        }
    }

    /// Reports what a hook run produced that the user should see: every non-blocking failure
    /// and every message for the user.
    pub(crate) fn hook_outcome(&self, outcome: &HookOutcome) {
        if self.callback.is_none() {
            return;
        }
        for error in &outcome.errors {
            self.emit(SessionEvent::HookError {
                event: error.event,
                handler: error.handler.clone(),
                failure: error.failure.clone(),
                blocked: error.blocked,
                message: error.to_string(),
            });
        }
        for message in &outcome.system_messages {
            self.emit(SessionEvent::HookSystemMessage {
                event: outcome.event,
                message: message.clone(),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engine_events_pass_through_with_their_own_tag() {
        let event = SessionEvent::Engine(EngineEvent::TextDelta { text: "hi".into() });
        let json = serde_json::to_value(&event).unwrap_or_default();
        assert_eq!(
            json,
            serde_json::json!({"type": "text_delta", "text": "hi"})
        );
        let back: SessionEvent = serde_json::from_value(json).unwrap_or(SessionEvent::Warning {
            source: "test".into(),
            message: "did not parse".into(),
        });
        assert_eq!(back, event);
    }

    #[test]
    fn session_events_are_tagged_snake_case() {
        let event = SessionEvent::PromptRejected {
            prompt: "p".into(),
            reason: "r".into(),
        };
        let json = serde_json::to_value(&event).unwrap_or_default();
        assert_eq!(json["type"], "prompt_rejected");
        let back: SessionEvent = serde_json::from_value(json).unwrap_or(SessionEvent::Warning {
            source: "test".into(),
            message: "did not parse".into(),
        });
        assert_eq!(back, event);
    }
}
