//! The JSON a hook returns (command stdout on exit 0, an HTTP 2xx body, a callback's structured
//! result): Claude Code's universal fields, the decision forms and `hookSpecificOutput`.
//!
//! Unknown fields are kept in `extra` (and reported as notes by the runner) rather than rejected,
//! so a hook written for a newer Claude Code still has its known fields honoured.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// PreToolUse `permissionDecision`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PermissionDecision {
    /// Run the call without asking (deny and ask rules still apply afterwards).
    Allow,
    /// Ask the user.
    Ask,
    /// Pause the call for the host to resume later (headless/SDK mode only in Claude Code).
    Defer,
    /// Do not run the call; the reason is shown to the model.
    Deny,
}

impl PermissionDecision {
    /// Precedence across hooks: deny > defer > ask > allow.
    pub fn precedence(self) -> u8 {
        match self {
            PermissionDecision::Allow => 0,
            PermissionDecision::Ask => 1,
            PermissionDecision::Defer => 2,
            PermissionDecision::Deny => 3,
        }
    }

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            PermissionDecision::Allow => "allow",
            PermissionDecision::Ask => "ask",
            PermissionDecision::Defer => "defer",
            PermissionDecision::Deny => "deny",
        }
    }
}

/// PermissionRequest `hookSpecificOutput.decision.behavior`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PermissionBehavior {
    /// Grant the permission.
    Allow,
    /// Refuse it.
    Deny,
}

/// PermissionRequest `hookSpecificOutput.decision`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PermissionRequestDecision {
    /// Allow or deny.
    pub behavior: PermissionBehavior,
    /// Input to run the tool with instead (allow only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_input: Option<Value>,
    /// Permission rule updates to apply (Claude Code `PermissionUpdate` objects).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub updated_permissions: Vec<Value>,
    /// Message for the model (deny only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Stop the agent as well (deny only).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub interrupt: bool,
}

/// `hookSpecificOutput`: fields that only mean something for some events.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HookSpecificOutput {
    /// The event the output is for; must match the running event when present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hook_event_name: Option<String>,
    /// PreToolUse decision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission_decision: Option<PermissionDecision>,
    /// Why (shown to the model on deny, to the user on allow/ask).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission_decision_reason: Option<String>,
    /// PreToolUse: the input to run the tool with instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_input: Option<Value>,
    /// Context for the model (SessionStart, UserPromptSubmit, tool events, Stop, SubagentStart).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub additional_context: Option<String>,
    /// PermissionRequest decision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<PermissionRequestDecision>,
    /// PostToolUse: replaces the tool's output (must match the tool's output shape).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_tool_output: Option<Value>,
    /// PostToolUse: deprecated name of `updatedToolOutput` for MCP tools.
    #[serde(
        default,
        rename = "updatedMCPToolOutput",
        skip_serializing_if = "Option::is_none"
    )]
    pub updated_mcp_tool_output: Option<Value>,
    /// SessionStart: a first user message to submit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initial_user_message: Option<String>,
    /// SessionStart: a title for the session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_title: Option<String>,
    /// SessionStart: paths to watch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub watch_paths: Option<Vec<String>>,
    /// SessionStart: reload skills.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reload_skills: Option<bool>,
    /// WorktreeCreate (HTTP hooks): the created worktree's path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worktree_path: Option<String>,
    /// Fields robota does not know.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A hook's JSON output.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HookOutput {
    /// `false` stops the agent entirely (takes precedence over everything else).
    #[serde(default, rename = "continue", skip_serializing_if = "Option::is_none")]
    pub continue_: Option<bool>,
    /// Shown to the user when `continue` is false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
    /// Accepted for compatibility; has no effect (as in current Claude Code).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suppress_output: Option<bool>,
    /// A warning for the user.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_message: Option<String>,
    /// Terminal escape sequence; robota has no terminal, so hosts get it in the raw output only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub terminal_sequence: Option<String>,
    /// `"block"` (or, on PreToolUse, the deprecated `"approve"`/`"block"` = allow/deny).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<String>,
    /// Why, for `decision`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The prompt-hook verdict form `{ok, reason}` (also accepted from HTTP hooks and callbacks,
    /// as TypeScript Robota's HTTP protocol used it): `false` blocks with `reason`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ok: Option<bool>,
    /// Event-specific fields.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hook_specific_output: Option<HookSpecificOutput>,
    /// Fields robota does not know.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl HookOutput {
    /// Parses a JSON object; the message says what is wrong.
    pub fn from_json_text(text: &str) -> Result<Self, String> {
        let value: Value = serde_json::from_str(text.trim()).map_err(|e| e.to_string())?;
        Self::from_value(value)
    }

    /// Parses a JSON value that must be an object.
    pub fn from_value(value: Value) -> Result<Self, String> {
        if !value.is_object() {
            return Err("hook output JSON must be an object".to_string());
        }
        serde_json::from_value(value).map_err(|e| e.to_string())
    }
}
