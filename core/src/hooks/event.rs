//! Hook events and their inputs: the [`HookEvent`] names and, per event, the typed payload that
//! serialises to exactly the JSON Claude Code writes to a hook's stdin (and POSTs to HTTP hooks).
//!
//! A [`HookInput`] is the common fields ([`HookCommon`]) plus one event payload
//! ([`HookEventInput`]); serialised, both flatten into one object with `hook_event_name` between
//! them, which is the shape hook scripts written for Claude Code read.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Every hook event robota fires, named as in Claude Code's settings.json.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum HookEvent {
    /// A session started, resumed, was cleared, compacted or forked.
    SessionStart,
    /// Repository setup or maintenance was requested (Claude Code's `--init`, `--init-only`,
    /// `--maintenance`): runs once, before the session takes prompts; matcher target `trigger`
    /// (`init`, `maintenance`).
    Setup,
    /// A session ended.
    SessionEnd,
    /// The user submitted a prompt; hooks can add context or reject it.
    UserPromptSubmit,
    /// A tool call is about to run; hooks can allow, deny, ask or rewrite its input.
    PreToolUse,
    /// A tool call finished successfully.
    PostToolUse,
    /// A tool call failed.
    PostToolUseFailure,
    /// A permission prompt is about to be shown.
    PermissionRequest,
    /// The agent is about to end its turn; hooks can make it continue.
    Stop,
    /// The turn ended because of an error (rate limit, auth, server …).
    StopFailure,
    /// A subagent started.
    SubagentStart,
    /// A subagent is about to finish; hooks can make it continue.
    SubagentStop,
    /// The conversation is about to be compacted; hooks can block it.
    PreCompact,
    /// The conversation was compacted.
    PostCompact,
    /// The agent wants the user's attention.
    Notification,
    /// A worktree is to be created; the hook creates it and reports its path.
    WorktreeCreate,
    /// A worktree is being removed.
    WorktreeRemove,
}

impl HookEvent {
    /// All events, in the order above.
    pub const ALL: [HookEvent; 17] = [
        HookEvent::SessionStart,
        HookEvent::Setup,
        HookEvent::SessionEnd,
        HookEvent::UserPromptSubmit,
        HookEvent::PreToolUse,
        HookEvent::PostToolUse,
        HookEvent::PostToolUseFailure,
        HookEvent::PermissionRequest,
        HookEvent::Stop,
        HookEvent::StopFailure,
        HookEvent::SubagentStart,
        HookEvent::SubagentStop,
        HookEvent::PreCompact,
        HookEvent::PostCompact,
        HookEvent::Notification,
        HookEvent::WorktreeCreate,
        HookEvent::WorktreeRemove,
    ];

    /// The name used in settings.json and in `hook_event_name`.
    pub fn as_str(self) -> &'static str {
        match self {
            HookEvent::SessionStart => "SessionStart",
            HookEvent::Setup => "Setup",
            HookEvent::SessionEnd => "SessionEnd",
            HookEvent::UserPromptSubmit => "UserPromptSubmit",
            HookEvent::PreToolUse => "PreToolUse",
            HookEvent::PostToolUse => "PostToolUse",
            HookEvent::PostToolUseFailure => "PostToolUseFailure",
            HookEvent::PermissionRequest => "PermissionRequest",
            HookEvent::Stop => "Stop",
            HookEvent::StopFailure => "StopFailure",
            HookEvent::SubagentStart => "SubagentStart",
            HookEvent::SubagentStop => "SubagentStop",
            HookEvent::PreCompact => "PreCompact",
            HookEvent::PostCompact => "PostCompact",
            HookEvent::Notification => "Notification",
            HookEvent::WorktreeCreate => "WorktreeCreate",
            HookEvent::WorktreeRemove => "WorktreeRemove",
        }
    }

    /// True for the events about one tool call (their matcher is tested against the tool name).
    pub fn is_tool_event(self) -> bool {
        matches!(
            self,
            HookEvent::PreToolUse
                | HookEvent::PostToolUse
                | HookEvent::PostToolUseFailure
                | HookEvent::PermissionRequest
        )
    }

    /// Whether a group's `matcher` means anything for this event. Claude Code ignores the matcher
    /// of the others (their hooks always run); robota does the same and warns at config time.
    pub fn supports_matcher(self) -> bool {
        !matches!(
            self,
            HookEvent::UserPromptSubmit
                | HookEvent::Stop
                | HookEvent::WorktreeCreate
                | HookEvent::WorktreeRemove
        )
    }

    /// What the matcher is tested against, for documentation and diagnostics.
    pub fn matcher_target_name(self) -> Option<&'static str> {
        match self {
            e if e.is_tool_event() => Some("tool name"),
            HookEvent::SessionStart => Some("source (startup, resume, clear, compact, fork)"),
            HookEvent::Setup => Some("trigger (init, maintenance)"),
            HookEvent::SessionEnd => Some("reason"),
            HookEvent::Notification => Some("notification_type"),
            HookEvent::SubagentStart | HookEvent::SubagentStop => Some("agent type"),
            HookEvent::PreCompact | HookEvent::PostCompact => Some("trigger (manual, auto)"),
            HookEvent::StopFailure => Some("error type"),
            _ => None,
        }
    }

    /// What a blocking result (exit code 2, `decision: "block"`, `ok: false`) does for this
    /// event, per Claude Code's contract.
    pub fn block_effect(self) -> BlockEffect {
        match self {
            HookEvent::PreToolUse => BlockEffect::DenyToolCall,
            HookEvent::UserPromptSubmit => BlockEffect::RejectPrompt,
            HookEvent::Stop | HookEvent::SubagentStop => BlockEffect::ContinueAgent,
            HookEvent::PreCompact => BlockEffect::BlockCompaction,
            HookEvent::PostToolUse | HookEvent::PostToolUseFailure => BlockEffect::FeedbackToModel,
            HookEvent::WorktreeCreate => BlockEffect::FailOperation,
            HookEvent::Notification | HookEvent::PermissionRequest => BlockEffect::Ignored,
            HookEvent::SessionStart
            | HookEvent::Setup
            | HookEvent::SessionEnd
            | HookEvent::StopFailure
            | HookEvent::SubagentStart
            | HookEvent::PostCompact
            | HookEvent::WorktreeRemove => BlockEffect::ShowUser,
        }
    }

    /// Whether the top-level `decision: "block"` form is honoured for this event.
    pub fn honours_decision_block(self) -> bool {
        matches!(
            self,
            HookEvent::UserPromptSubmit
                | HookEvent::PostToolUse
                | HookEvent::PostToolUseFailure
                | HookEvent::Stop
                | HookEvent::SubagentStop
                | HookEvent::PreCompact
                | HookEvent::PreToolUse
        )
    }

    /// Whether plain (non-JSON) stdout of a successful hook becomes context for the model.
    pub fn plain_stdout_is_context(self) -> bool {
        matches!(
            self,
            HookEvent::UserPromptSubmit | HookEvent::SessionStart | HookEvent::Setup
        )
    }
}

impl fmt::Display for HookEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The name is not one of [`HookEvent::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown hook event `{0}`")]
pub struct UnknownHookEvent(pub String);

impl FromStr for HookEvent {
    type Err = UnknownHookEvent;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        HookEvent::ALL
            .into_iter()
            .find(|e| e.as_str() == s)
            .ok_or_else(|| UnknownHookEvent(s.to_string()))
    }
}

/// What a blocking hook result does, by event. The session acts on it; hooks only report it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BlockEffect {
    /// PreToolUse: the tool call does not run; the reason is the tool result the model sees.
    DenyToolCall,
    /// UserPromptSubmit: the prompt is rejected and erased; the reason is shown to the user.
    RejectPrompt,
    /// Stop/SubagentStop: the agent keeps going with the reason as its next instruction.
    ContinueAgent,
    /// PreCompact: compaction does not happen.
    BlockCompaction,
    /// PostToolUse/PostToolUseFailure: the tool already ran; the reason is shown to the model.
    FeedbackToModel,
    /// WorktreeCreate: creation fails (any non-zero exit does this for this event).
    FailOperation,
    /// The reason is shown to the user only; nothing is blocked.
    ShowUser,
    /// Claude Code ignores blocking for this event (Notification, PermissionRequest).
    Ignored,
}

/// Fields every hook input carries.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HookCommon {
    /// The session's id.
    pub session_id: String,
    /// Path of the session's transcript (JSONL); `null` when the session keeps none.
    #[serde(default)]
    pub transcript_path: Option<String>,
    /// The session's working directory.
    pub cwd: String,
    /// The permission mode (`default`, `plan`, `acceptEdits`, `dontAsk`, `bypassPermissions`),
    /// on the events where Claude Code sends it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission_mode: Option<String>,
    /// The subagent's id, when the event fires inside a subagent and for SubagentStart/Stop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// The subagent's type, when the event fires inside a subagent (or under `--agent`) and for
    /// SubagentStart/Stop, where it is what the matcher is tested against.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_type: Option<String>,
}

impl HookCommon {
    /// Common fields for a session.
    pub fn new(session_id: impl Into<String>, cwd: impl Into<String>) -> Self {
        HookCommon {
            session_id: session_id.into(),
            cwd: cwd.into(),
            ..Self::default()
        }
    }

    /// Sets the transcript path.
    pub fn with_transcript_path(mut self, path: impl Into<String>) -> Self {
        self.transcript_path = Some(path.into());
        self
    }

    /// Sets the permission mode.
    pub fn with_permission_mode(mut self, mode: impl Into<String>) -> Self {
        self.permission_mode = Some(mode.into());
        self
    }

    /// Marks the event as happening inside a subagent.
    pub fn with_agent(
        mut self,
        agent_id: impl Into<String>,
        agent_type: impl Into<String>,
    ) -> Self {
        self.agent_id = Some(agent_id.into());
        self.agent_type = Some(agent_type.into());
        self
    }
}

/// How a session started (SessionStart `source`, also its matcher target).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionStartSource {
    /// A new session.
    Startup,
    /// A resumed session.
    Resume,
    /// After `/clear`.
    Clear,
    /// After compaction.
    Compact,
    /// A forked session.
    Fork,
}

impl SessionStartSource {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            SessionStartSource::Startup => "startup",
            SessionStartSource::Resume => "resume",
            SessionStartSource::Clear => "clear",
            SessionStartSource::Compact => "compact",
            SessionStartSource::Fork => "fork",
        }
    }
}

/// Why a session ended (SessionEnd `reason`, also its matcher target).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionEndReason {
    /// `/clear`.
    Clear,
    /// Switched to another session.
    Resume,
    /// The user logged out.
    Logout,
    /// The user exited at the prompt.
    PromptInputExit,
    /// Bypass mode was disabled.
    BypassPermissionsDisabled,
    /// Anything else (host shutdown, process exit).
    Other,
}

impl SessionEndReason {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            SessionEndReason::Clear => "clear",
            SessionEndReason::Resume => "resume",
            SessionEndReason::Logout => "logout",
            SessionEndReason::PromptInputExit => "prompt_input_exit",
            SessionEndReason::BypassPermissionsDisabled => "bypass_permissions_disabled",
            SessionEndReason::Other => "other",
        }
    }
}

/// What started a compaction (PreCompact/PostCompact `trigger`, also their matcher target).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CompactTrigger {
    /// The user asked (`/compact`).
    Manual,
    /// The context window filled up.
    Auto,
}

impl CompactTrigger {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            CompactTrigger::Manual => "manual",
            CompactTrigger::Auto => "auto",
        }
    }
}

/// SessionStart payload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionStartInput {
    /// How the session started.
    pub source: SessionStartSource,
    /// The model the session uses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The session's title, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_title: Option<String>,
}

/// Why Setup hooks run (their `trigger`, also the matcher target).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SetupTrigger {
    /// First-time repository setup (`--init`, `--init-only`).
    Init,
    /// Periodic maintenance (`--maintenance`).
    Maintenance,
}

impl SetupTrigger {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            SetupTrigger::Init => "init",
            SetupTrigger::Maintenance => "maintenance",
        }
    }
}

/// Setup payload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SetupInput {
    /// Why the hooks run.
    pub trigger: SetupTrigger,
}

/// SessionEnd payload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionEndInput {
    /// Why the session ended.
    pub reason: SessionEndReason,
}

/// UserPromptSubmit payload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UserPromptSubmitInput {
    /// The prompt as the user typed it.
    pub prompt: String,
}

/// PreToolUse payload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PreToolUseInput {
    /// Tool name (`Bash`, `Edit`, `mcp__server__tool`, …).
    pub tool_name: String,
    /// The tool's input as the model gave it (Claude Code field names; absolute paths).
    pub tool_input: Value,
    /// The model's tool-call id.
    pub tool_use_id: String,
}

/// PostToolUse payload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PostToolUseInput {
    /// Tool name.
    pub tool_name: String,
    /// The input the tool ran with.
    pub tool_input: Value,
    /// The model's tool-call id.
    pub tool_use_id: String,
    /// The tool's structured result.
    pub tool_response: Value,
    /// How long the tool ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
}

/// PostToolUseFailure payload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PostToolUseFailureInput {
    /// Tool name.
    pub tool_name: String,
    /// The input the tool ran with.
    pub tool_input: Value,
    /// The model's tool-call id.
    pub tool_use_id: String,
    /// What went wrong.
    pub error: String,
    /// True when the call failed because the user interrupted it.
    #[serde(default)]
    pub is_interrupt: bool,
    /// How long the tool ran before failing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
}

/// PermissionRequest payload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PermissionRequestInput {
    /// Tool name.
    pub tool_name: String,
    /// The tool's input.
    pub tool_input: Value,
    /// The model's tool-call id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_use_id: Option<String>,
    /// Rules the permission prompt would offer (Claude Code `PermissionUpdate` objects).
    #[serde(default)]
    pub permission_suggestions: Vec<Value>,
}

/// Stop payload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StopInput {
    /// True when the agent is already continuing because a Stop hook blocked; hooks check it to
    /// avoid forcing the agent on forever.
    pub stop_hook_active: bool,
    /// The text of the agent's last message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_assistant_message: Option<String>,
    /// Background tasks still running.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub background_tasks: Option<Vec<Value>>,
}

/// StopFailure payload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StopFailureInput {
    /// Error type, also the matcher target: `rate_limit`, `authentication_failed`,
    /// `billing_error`, `invalid_request`, `server_error`, `max_output_tokens`, `unknown`.
    pub error: String,
    /// The error message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_details: Option<String>,
    /// The text of the agent's last message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_assistant_message: Option<String>,
}

/// SubagentStart payload. The subagent's `agent_id` and `agent_type` are in [`HookCommon`]
/// (so they are never serialised twice); [`HookInput::subagent_start`] sets them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SubagentStartInput {}

/// SubagentStop payload; `agent_id`/`agent_type` are in [`HookCommon`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SubagentStopInput {
    /// As for Stop.
    pub stop_hook_active: bool,
    /// The subagent's own transcript.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_transcript_path: Option<String>,
    /// The text of the subagent's last message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_assistant_message: Option<String>,
}

/// PreCompact payload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PreCompactInput {
    /// Manual or automatic.
    pub trigger: CompactTrigger,
    /// The user's `/compact` instructions (empty for automatic compaction).
    #[serde(default)]
    pub custom_instructions: String,
}

/// PostCompact payload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PostCompactInput {
    /// Manual or automatic.
    pub trigger: CompactTrigger,
    /// The summary that replaced the conversation.
    pub compact_summary: String,
}

/// Notification payload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NotificationInput {
    /// The notification text.
    pub message: String,
    /// A title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Kind, also the matcher target: `permission_prompt`, `idle_prompt`, `auth_success`,
    /// `elicitation_dialog`, ….
    pub notification_type: String,
}

/// WorktreeCreate payload. Claude Code's documentation names the field `worktree_name` while its
/// runtime sends `name`; robota sends both (same value) so hooks written either way work.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorktreeCreateInput {
    /// The worktree's slug.
    pub name: String,
    /// The same slug, under the documented name.
    pub worktree_name: String,
    /// Directory under which worktrees are normally created.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_path: Option<String>,
    /// Git ref to base the worktree on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_ref: Option<String>,
}

impl WorktreeCreateInput {
    /// A request for a worktree named `name`.
    pub fn new(name: impl Into<String>) -> Self {
        let name = name.into();
        WorktreeCreateInput {
            worktree_name: name.clone(),
            name,
            base_path: None,
            source_ref: None,
        }
    }
}

/// WorktreeRemove payload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorktreeRemoveInput {
    /// Absolute path of the worktree being removed.
    pub worktree_path: String,
}

/// The event-specific part of a hook input, tagged by `hook_event_name`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "hook_event_name")]
#[allow(missing_docs)] // Each variant is its event; the payload types are documented.
pub enum HookEventInput {
    SessionStart(SessionStartInput),
    Setup(SetupInput),
    SessionEnd(SessionEndInput),
    UserPromptSubmit(UserPromptSubmitInput),
    PreToolUse(PreToolUseInput),
    PostToolUse(PostToolUseInput),
    PostToolUseFailure(PostToolUseFailureInput),
    PermissionRequest(PermissionRequestInput),
    Stop(StopInput),
    StopFailure(StopFailureInput),
    SubagentStart(SubagentStartInput),
    SubagentStop(SubagentStopInput),
    PreCompact(PreCompactInput),
    PostCompact(PostCompactInput),
    Notification(NotificationInput),
    WorktreeCreate(WorktreeCreateInput),
    WorktreeRemove(WorktreeRemoveInput),
}

impl HookEventInput {
    /// The event this payload belongs to.
    pub fn event(&self) -> HookEvent {
        match self {
            HookEventInput::SessionStart(_) => HookEvent::SessionStart,
            HookEventInput::Setup(_) => HookEvent::Setup,
            HookEventInput::SessionEnd(_) => HookEvent::SessionEnd,
            HookEventInput::UserPromptSubmit(_) => HookEvent::UserPromptSubmit,
            HookEventInput::PreToolUse(_) => HookEvent::PreToolUse,
            HookEventInput::PostToolUse(_) => HookEvent::PostToolUse,
            HookEventInput::PostToolUseFailure(_) => HookEvent::PostToolUseFailure,
            HookEventInput::PermissionRequest(_) => HookEvent::PermissionRequest,
            HookEventInput::Stop(_) => HookEvent::Stop,
            HookEventInput::StopFailure(_) => HookEvent::StopFailure,
            HookEventInput::SubagentStart(_) => HookEvent::SubagentStart,
            HookEventInput::SubagentStop(_) => HookEvent::SubagentStop,
            HookEventInput::PreCompact(_) => HookEvent::PreCompact,
            HookEventInput::PostCompact(_) => HookEvent::PostCompact,
            HookEventInput::Notification(_) => HookEvent::Notification,
            HookEventInput::WorktreeCreate(_) => HookEvent::WorktreeCreate,
            HookEventInput::WorktreeRemove(_) => HookEvent::WorktreeRemove,
        }
    }
}

/// One event's input: what a command hook reads on stdin, what an HTTP hook receives as its
/// body, what a prompt hook's `$ARGUMENTS` becomes, and what a [`HookCallback`] gets.
///
/// [`HookCallback`]: super::HookCallback
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HookInput {
    /// Fields every event carries.
    #[serde(flatten)]
    pub common: HookCommon,
    /// The event and its fields.
    #[serde(flatten)]
    pub event: HookEventInput,
}

impl HookInput {
    /// An input from its parts.
    pub fn new(common: HookCommon, event: HookEventInput) -> Self {
        HookInput { common, event }
    }

    /// SessionStart.
    pub fn session_start(common: HookCommon, source: SessionStartSource) -> Self {
        Self::new(
            common,
            HookEventInput::SessionStart(SessionStartInput {
                source,
                model: None,
                session_title: None,
            }),
        )
    }

    /// Setup.
    pub fn setup(common: HookCommon, trigger: SetupTrigger) -> Self {
        Self::new(common, HookEventInput::Setup(SetupInput { trigger }))
    }

    /// SessionEnd.
    pub fn session_end(common: HookCommon, reason: SessionEndReason) -> Self {
        Self::new(
            common,
            HookEventInput::SessionEnd(SessionEndInput { reason }),
        )
    }

    /// UserPromptSubmit.
    pub fn user_prompt_submit(common: HookCommon, prompt: impl Into<String>) -> Self {
        Self::new(
            common,
            HookEventInput::UserPromptSubmit(UserPromptSubmitInput {
                prompt: prompt.into(),
            }),
        )
    }

    /// PreToolUse.
    pub fn pre_tool_use(
        common: HookCommon,
        tool_name: impl Into<String>,
        tool_input: Value,
        tool_use_id: impl Into<String>,
    ) -> Self {
        Self::new(
            common,
            HookEventInput::PreToolUse(PreToolUseInput {
                tool_name: tool_name.into(),
                tool_input,
                tool_use_id: tool_use_id.into(),
            }),
        )
    }

    /// PostToolUse.
    pub fn post_tool_use(
        common: HookCommon,
        tool_name: impl Into<String>,
        tool_input: Value,
        tool_use_id: impl Into<String>,
        tool_response: Value,
    ) -> Self {
        Self::new(
            common,
            HookEventInput::PostToolUse(PostToolUseInput {
                tool_name: tool_name.into(),
                tool_input,
                tool_use_id: tool_use_id.into(),
                tool_response,
                duration_ms: None,
            }),
        )
    }

    /// SubagentStart; sets `agent_id`/`agent_type` in the common fields.
    pub fn subagent_start(
        common: HookCommon,
        agent_id: impl Into<String>,
        agent_type: impl Into<String>,
    ) -> Self {
        Self::new(
            common.with_agent(agent_id, agent_type),
            HookEventInput::SubagentStart(SubagentStartInput {}),
        )
    }

    /// SubagentStop; sets `agent_id`/`agent_type` in the common fields.
    pub fn subagent_stop(
        common: HookCommon,
        agent_id: impl Into<String>,
        agent_type: impl Into<String>,
        payload: SubagentStopInput,
    ) -> Self {
        Self::new(
            common.with_agent(agent_id, agent_type),
            HookEventInput::SubagentStop(payload),
        )
    }

    /// The event.
    pub fn event(&self) -> HookEvent {
        self.event.event()
    }

    /// The tool name, for tool events.
    pub fn tool_name(&self) -> Option<&str> {
        match &self.event {
            HookEventInput::PreToolUse(i) => Some(&i.tool_name),
            HookEventInput::PostToolUse(i) => Some(&i.tool_name),
            HookEventInput::PostToolUseFailure(i) => Some(&i.tool_name),
            HookEventInput::PermissionRequest(i) => Some(&i.tool_name),
            _ => None,
        }
    }

    /// The tool input, for tool events.
    pub fn tool_input(&self) -> Option<&Value> {
        match &self.event {
            HookEventInput::PreToolUse(i) => Some(&i.tool_input),
            HookEventInput::PostToolUse(i) => Some(&i.tool_input),
            HookEventInput::PostToolUseFailure(i) => Some(&i.tool_input),
            HookEventInput::PermissionRequest(i) => Some(&i.tool_input),
            _ => None,
        }
    }

    /// The value a group's matcher is tested against (Claude Code's table): the tool name for
    /// tool events, `source` for SessionStart, `reason` for SessionEnd, `notification_type` for
    /// Notification, the agent type for Subagent events, `trigger` for compaction, the error type
    /// for StopFailure. `None` for events without matcher support.
    pub fn matcher_target(&self) -> Option<&str> {
        match &self.event {
            HookEventInput::PreToolUse(i) => Some(&i.tool_name),
            HookEventInput::PostToolUse(i) => Some(&i.tool_name),
            HookEventInput::PostToolUseFailure(i) => Some(&i.tool_name),
            HookEventInput::PermissionRequest(i) => Some(&i.tool_name),
            HookEventInput::SessionStart(i) => Some(i.source.as_str()),
            HookEventInput::Setup(i) => Some(i.trigger.as_str()),
            HookEventInput::SessionEnd(i) => Some(i.reason.as_str()),
            HookEventInput::Notification(i) => Some(&i.notification_type),
            HookEventInput::SubagentStart(_) | HookEventInput::SubagentStop(_) => self
                .common
                .agent_type
                .as_deref()
                .or(self.common.agent_id.as_deref()),
            HookEventInput::PreCompact(i) => Some(i.trigger.as_str()),
            HookEventInput::PostCompact(i) => Some(i.trigger.as_str()),
            HookEventInput::StopFailure(i) => Some(&i.error),
            HookEventInput::UserPromptSubmit(_)
            | HookEventInput::Stop(_)
            | HookEventInput::WorktreeCreate(_)
            | HookEventInput::WorktreeRemove(_) => None,
        }
    }

    /// The input as a JSON value.
    pub fn to_value(&self) -> Value {
        // Serialising these types cannot fail: every map key is a string and no custom
        // serialiser returns an error.
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// The input as compact JSON text (what goes to stdin).
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|_| "{}".to_string())
    }
}
