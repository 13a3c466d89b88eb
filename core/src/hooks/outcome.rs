//! What running an event's hooks produced: one [`HandlerReport`] per handler and their
//! aggregation into one [`HookOutcome`] the session acts on (block, stop, permission decision,
//! rewritten input, context, messages, non-blocking errors).
//!
//! Aggregation walks handlers in configuration order (not completion order), so the outcome of
//! parallel hooks is deterministic.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::config::HookSource;
use super::event::{BlockEffect, HookEvent};
use super::output::{HookOutput, PermissionDecision, PermissionRequestDecision};

/// Claude Code caps every string a hook returns at this many characters.
pub const OUTPUT_STRING_LIMIT: usize = 10_000;

/// Claude Code ends the turn anyway after this many consecutive Stop-hook blocks.
pub const MAX_CONSECUTIVE_STOP_BLOCKS: u32 = 8;

/// A handler's type: the settings `type` values plus host callbacks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HandlerType {
    /// A shell command or program.
    Command,
    /// An HTTP endpoint.
    Http,
    /// A single model call.
    Prompt,
    /// Claude Code's agent hook: the model investigates with read-only tools (see
    /// [`super::prompt`]).
    Agent,
    /// A tool of a connected MCP server (`mcp_tool`).
    McpTool,
    /// An in-process [`super::HookCallback`].
    Callback,
}

impl HandlerType {
    /// The name (`command`, `http`, `prompt`, `agent`, `mcp_tool`, `callback`).
    pub fn as_str(self) -> &'static str {
        match self {
            HandlerType::Command => "command",
            HandlerType::Http => "http",
            HandlerType::Prompt => "prompt",
            HandlerType::Agent => "agent",
            HandlerType::McpTool => "mcp_tool",
            HandlerType::Callback => "callback",
        }
    }
}

/// Which handler a report is about.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HandlerSummary {
    /// The handler type.
    pub kind: HandlerType,
    /// The command, URL, prompt (shortened) or callback name.
    pub label: String,
    /// Where it was configured (`None` for host callbacks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<HookSource>,
    /// The handler's `statusMessage`, for a UI spinner.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_message: Option<String>,
    /// The timeout applied.
    pub timeout_ms: u64,
}

impl fmt::Display for HandlerSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} hook `{}`", self.kind.as_str(), self.label)?;
        if let Some(source) = &self.source {
            write!(f, " ({source})")?;
        }
        Ok(())
    }
}

/// Why a hook failed. Usually the action proceeds and the session reports it; a failing host
/// callback that guards a tool call blocks it instead (see
/// [`OnHookFailure`](super::OnHookFailure)).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, thiserror::Error)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum HookFailure {
    /// The process could not be started (missing shell or program, bad cwd, …).
    #[error("could not start: {message}")]
    Spawn {
        /// The OS error.
        message: String,
    },
    /// Exit code other than 0 and 2 (127 is "command not found").
    #[error("exited with code {code}{}", stderr_suffix(stderr))]
    ExitCode {
        /// The code.
        code: i32,
        /// What it wrote to stderr.
        stderr: String,
    },
    /// Killed by a signal.
    #[error("killed by signal {signal}{}", stderr_suffix(stderr))]
    Signal {
        /// The signal number.
        signal: i32,
        /// What it wrote to stderr.
        stderr: String,
    },
    /// Did not finish in time; a command hook's process group was killed.
    #[error("timed out after {timeout_ms} ms")]
    Timeout {
        /// The timeout.
        timeout_ms: u64,
    },
    /// Output started with `{` but is not a valid hook JSON object. On PreToolUse and
    /// UserPromptSubmit this blocks instead (hooks fail closed).
    #[error("returned malformed JSON output: {message}")]
    MalformedOutput {
        /// The parse error.
        message: String,
    },
    /// The output (stdout, or an HTTP body) was JSON longer than the output limit, so it could
    /// not be read. On PreToolUse and UserPromptSubmit this blocks instead (hooks fail closed).
    #[error(
        "printed {} of output, over the {} hook output limit; its JSON answer could not be read",
        bytes.map_or_else(|| format!("more than {}", crate::files::human_size(*limit)), crate::files::human_size),
        crate::files::human_size(*limit)
    )]
    OutputTooLarge {
        /// Bytes written, when known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        bytes: Option<u64>,
        /// The limit.
        limit: u64,
    },
    /// The HTTP endpoint answered with a non-2xx status.
    #[error("HTTP endpoint answered {status}{}", stderr_suffix(body))]
    HttpStatus {
        /// The status code.
        status: u16,
        /// The start of the body.
        body: String,
    },
    /// The HTTP request failed (connection, TLS, body).
    #[error("HTTP request failed: {message}")]
    Http {
        /// What failed.
        message: String,
    },
    /// The model call of a prompt/agent hook failed.
    #[error("model call failed: {message}")]
    Provider {
        /// The provider error.
        message: String,
    },
    /// A prompt/agent hook ran but no provider was configured for it.
    #[error("no model provider is configured for prompt/agent hooks{}", model.as_ref().map(|m| format!(" (model `{m}`)")).unwrap_or_default())]
    NoProvider {
        /// The model the hook asked for.
        model: Option<String>,
    },
    /// A host callback panicked.
    #[error("panicked: {message}")]
    Panicked {
        /// The panic message.
        message: String,
    },
    /// An `mcp_tool` hook's call failed: no such server, not connected, or the tool reported
    /// an error.
    #[error("MCP tool call failed: {message}")]
    McpTool {
        /// Why.
        message: String,
    },
    /// A host callback reported an error.
    #[error("failed: {message}")]
    Callback {
        /// Its message.
        message: String,
    },
}

fn stderr_suffix(text: &str) -> String {
    let text = text.trim();
    if text.is_empty() {
        String::new()
    } else {
        format!(": {}", cap_chars(text, 2_000))
    }
}

/// How one handler ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum HandlerStatus {
    /// Exit 0 (or 2xx, or a callback/prompt success).
    Success,
    /// Exit 2 (or `ok: false` from a prompt hook, or a callback block), or a guarding hook that
    /// failed and so blocks (fails closed).
    Blocked {
        /// The reason (stderr or the JSON reason; for a failure, the hook and what went wrong).
        reason: String,
        /// Set when the hook did not decide to block but failed (threw, timed out, answered
        /// something unreadable) on an event where a failure blocks.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        failure: Option<HookFailure>,
    },
    /// A non-blocking failure.
    Failed {
        /// What went wrong.
        failure: HookFailure,
    },
    /// The run was cancelled before the handler finished.
    Cancelled,
    /// Started in the background (`async`); its result arrives through
    /// [`super::HookRunner::take_async_results`].
    Background,
}

/// One handler's run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HandlerReport {
    /// Which handler.
    pub handler: HandlerSummary,
    /// How it ended.
    #[serde(flatten)]
    pub status: HandlerStatus,
    /// Process exit code (command hooks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// Stdout, or the HTTP body, or the model's answer (capped).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub stdout: String,
    /// Stderr (capped); on exit 0 Claude Code sends it to the debug log only.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub stderr: String,
    /// The parsed JSON output, when there was one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<HookOutput>,
    /// How long it ran.
    pub duration_ms: u64,
    /// Things in the output that had no effect (unknown fields, fields for another event, …).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// A hook failure, for the session to surface as an event: a non-blocking one (the action went
/// ahead), or one that blocked the action because the hook guards it (`blocked`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, thiserror::Error)]
#[error("{event} {handler} {failure}{}", if *blocked { blocked_suffix(*event) } else { "" })]
pub struct HookError {
    /// The event.
    pub event: HookEvent,
    /// The handler.
    pub handler: HandlerSummary,
    /// What went wrong.
    pub failure: HookFailure,
    /// True when the failure blocked the action (a guarding hook fails closed).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub blocked: bool,
}

fn blocked_suffix(event: HookEvent) -> &'static str {
    match event {
        HookEvent::UserPromptSubmit => "; the prompt was rejected",
        _ => "; the tool call was blocked",
    }
}

/// A blocking result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HookBlock {
    /// What the block does for this event.
    pub effect: BlockEffect,
    /// The reasons of every blocking handler, joined by newlines.
    pub reason: String,
}

/// `continue: false`: stop the agent entirely.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HookStop {
    /// `stopReason`, shown to the user.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// Everything an event's hooks decided, aggregated across handlers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HookOutcome {
    /// The event.
    pub event: HookEvent,
    /// Every handler that ran, in configuration order.
    pub handlers: Vec<HandlerReport>,
    /// Set when a handler blocked and blocking means something for the event (see
    /// [`HookEvent::block_effect`]). For PreToolUse it is set exactly when
    /// `permission_decision` is `deny`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block: Option<HookBlock>,
    /// Set when a handler returned `continue: false`; takes precedence over everything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<HookStop>,
    /// PreToolUse: the winning decision (deny > defer > ask > allow). Exit 2 and the legacy
    /// `decision: "block"` count as deny, `decision: "approve"` as allow. A hook's allow does not
    /// bypass deny/ask rules: the session still evaluates them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission_decision: Option<PermissionDecision>,
    /// The reasons given with the winning decision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission_decision_reason: Option<String>,
    /// PreToolUse: the input to run the tool with. Taken from hooks whose decision won or that
    /// gave none (never from an overridden hook); the last such hook in configuration order wins.
    /// `None` when the decision is deny.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_input: Option<Value>,
    /// Context for the model, in configuration order (JSON `additionalContext`, and plain stdout
    /// for UserPromptSubmit/SessionStart).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub additional_context: Vec<String>,
    /// Messages for the user (`systemMessage`, and exit-2 stderr of events where that goes to the
    /// user only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub system_messages: Vec<String>,
    /// PermissionRequest: the decision (deny wins over allow).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission_request: Option<PermissionRequestDecision>,
    /// PostToolUse: replacement tool output (last in configuration order wins).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_tool_output: Option<Value>,
    /// SessionStart: a first user message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initial_user_message: Option<String>,
    /// SessionStart: a session title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_title: Option<String>,
    /// SessionStart: paths to watch.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub watch_paths: Vec<String>,
    /// SessionStart: reload skills.
    #[serde(default)]
    pub reload_skills: bool,
    /// WorktreeCreate: the created worktree's path (plain stdout's last line, or
    /// `hookSpecificOutput.worktreePath`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worktree_path: Option<String>,
    /// Failures, for the session to report: non-blocking ones, and those of guarding hooks that
    /// blocked the action (`blocked`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<HookError>,
    /// True when the run was cancelled before every handler finished.
    #[serde(default)]
    pub cancelled: bool,
}

impl HookOutcome {
    /// An outcome with no handlers.
    pub fn empty(event: HookEvent) -> Self {
        HookOutcome {
            event,
            handlers: Vec::new(),
            block: None,
            stop: None,
            permission_decision: None,
            permission_decision_reason: None,
            updated_input: None,
            additional_context: Vec::new(),
            system_messages: Vec::new(),
            permission_request: None,
            updated_tool_output: None,
            initial_user_message: None,
            session_title: None,
            watch_paths: Vec::new(),
            reload_skills: false,
            worktree_path: None,
            errors: Vec::new(),
            cancelled: false,
        }
    }

    /// True when a handler blocked (see [`HookOutcome::block`]).
    pub fn is_blocked(&self) -> bool {
        self.block.is_some()
    }

    /// True when a handler asked to stop the agent (`continue: false`).
    pub fn should_stop(&self) -> bool {
        self.stop.is_some()
    }

    /// The context joined with blank lines, or `None` when there is none.
    pub fn context_text(&self) -> Option<String> {
        (!self.additional_context.is_empty()).then(|| self.additional_context.join("\n\n"))
    }
}

/// Cuts `text` to `limit` characters, saying how much was cut.
pub(crate) fn cap_chars(text: &str, limit: usize) -> String {
    match text.char_indices().nth(limit) {
        None => text.to_string(),
        Some((byte, _)) => {
            let cut = text[byte..].chars().count();
            format!("{}… [{cut} more characters truncated]", &text[..byte])
        }
    }
}

/// Collects handler reports into an outcome.
pub(crate) struct Aggregator {
    outcome: HookOutcome,
    blocks: Vec<String>,
    /// PreToolUse candidates: (decision, reason, updated_input), in configuration order.
    decisions: Vec<(Option<PermissionDecision>, Option<String>, Option<Value>)>,
}

impl Aggregator {
    pub(crate) fn new(event: HookEvent) -> Self {
        Aggregator {
            outcome: HookOutcome::empty(event),
            blocks: Vec::new(),
            decisions: Vec::new(),
        }
    }

    fn event(&self) -> HookEvent {
        self.outcome.event
    }

    pub(crate) fn add(&mut self, mut report: HandlerReport) {
        let event = self.event();
        match report.status.clone() {
            HandlerStatus::Success => {
                if let Some(output) = report.output.clone() {
                    self.apply_output(&output, &mut report.notes);
                } else {
                    self.apply_text(&report.stdout.clone(), &mut report.notes);
                }
            }
            HandlerStatus::Blocked {
                reason,
                failure: Some(failure),
            } => {
                // A guarding hook that failed: blocked, and reported as the failure it is.
                self.outcome.errors.push(HookError {
                    event,
                    handler: report.handler.clone(),
                    failure,
                    blocked: true,
                });
                if event == HookEvent::PermissionRequest {
                    self.deny_permission_request(reason);
                } else {
                    self.apply_block(reason, &mut report.notes);
                }
            }
            HandlerStatus::Blocked {
                reason,
                failure: None,
            } => self.apply_block(reason, &mut report.notes),
            HandlerStatus::Failed { failure } => {
                if event == HookEvent::WorktreeCreate {
                    // Any non-zero exit fails worktree creation.
                    self.blocks.push(format!("{} {failure}", report.handler));
                }
                self.outcome.errors.push(HookError {
                    event,
                    handler: report.handler.clone(),
                    failure,
                    blocked: false,
                });
            }
            HandlerStatus::Cancelled => self.outcome.cancelled = true,
            HandlerStatus::Background => {}
        }
        self.outcome.handlers.push(report);
    }

    /// A PermissionRequest hook failed closed: the request is denied (a deny wins over every
    /// allow), with the failure as the message.
    fn deny_permission_request(&mut self, reason: String) {
        let already_denied = self
            .outcome
            .permission_request
            .as_ref()
            .is_some_and(|d| d.behavior == super::output::PermissionBehavior::Deny);
        if !already_denied {
            self.outcome.permission_request = Some(PermissionRequestDecision {
                behavior: super::output::PermissionBehavior::Deny,
                updated_input: None,
                updated_permissions: Vec::new(),
                message: Some(cap_chars(reason.trim(), OUTPUT_STRING_LIMIT)),
                interrupt: false,
            });
        }
    }

    fn apply_text(&mut self, text: &str, notes: &mut Vec<String>) {
        let text = text.trim();
        if text.is_empty() {
            return;
        }
        let event = self.event();
        if event.plain_stdout_is_context() {
            self.outcome
                .additional_context
                .push(cap_chars(text, OUTPUT_STRING_LIMIT));
        } else if event == HookEvent::WorktreeCreate {
            let path = text.lines().rev().map(str::trim).find(|l| !l.is_empty());
            self.outcome.worktree_path = path.map(str::to_string);
        } else {
            notes.push(format!(
                "plain stdout is context only for UserPromptSubmit and SessionStart; on {event} it is kept in the report only"
            ));
        }
    }

    fn apply_block(&mut self, reason: String, notes: &mut Vec<String>) {
        let event = self.event();
        let reason = cap_chars(reason.trim(), OUTPUT_STRING_LIMIT);
        match event.block_effect() {
            BlockEffect::DenyToolCall => {
                self.decisions
                    .push((Some(PermissionDecision::Deny), Some(reason), None))
            }
            BlockEffect::ShowUser => self.outcome.system_messages.push(reason),
            BlockEffect::Ignored => notes.push(format!(
                "blocking is not honoured for {event}; the reason `{reason}` has no effect"
            )),
            BlockEffect::RejectPrompt
            | BlockEffect::ContinueAgent
            | BlockEffect::BlockCompaction
            | BlockEffect::FeedbackToModel
            | BlockEffect::FailOperation => self.blocks.push(reason),
        }
    }

    fn apply_output(&mut self, output: &HookOutput, notes: &mut Vec<String>) {
        let event = self.event();
        if output.continue_ == Some(false) && self.outcome.stop.is_none() {
            self.outcome.stop = Some(HookStop {
                reason: output
                    .stop_reason
                    .as_deref()
                    .map(|r| cap_chars(r, OUTPUT_STRING_LIMIT)),
            });
        }
        if let Some(message) = &output.system_message {
            self.outcome
                .system_messages
                .push(cap_chars(message, OUTPUT_STRING_LIMIT));
        }
        let reason_or = |default: &str| {
            output
                .reason
                .clone()
                .filter(|r| !r.trim().is_empty())
                .unwrap_or_else(|| default.to_string())
        };
        match output.decision.as_deref() {
            None => {}
            Some("block") if event == HookEvent::PreToolUse => self.decisions.push((
                Some(PermissionDecision::Deny),
                Some(reason_or("blocked by hook (decision: block)")),
                None,
            )),
            Some("approve") if event == HookEvent::PreToolUse => {
                self.decisions
                    .push((Some(PermissionDecision::Allow), output.reason.clone(), None))
            }
            Some("block") if event.honours_decision_block() => {
                self.apply_block(reason_or("blocked by hook (decision: block)"), notes)
            }
            Some(other) => notes.push(format!("`decision: \"{other}\"` has no effect on {event}")),
        }
        if output.ok == Some(false) {
            self.apply_block(reason_or("blocked by hook (ok: false)"), notes);
        }
        if let Some(specific) = &output.hook_specific_output {
            self.apply_specific(specific, notes);
        }
        for key in output.extra.keys() {
            notes.push(format!("unknown output field `{key}` ignored"));
        }
    }

    fn apply_specific(
        &mut self,
        specific: &super::output::HookSpecificOutput,
        notes: &mut Vec<String>,
    ) {
        let event = self.event();
        if let Some(name) = &specific.hook_event_name {
            if name != event.as_str() {
                notes.push(format!(
                    "hookSpecificOutput.hookEventName is `{name}` but the event is {event}"
                ));
            }
        }
        let mut not_for = |field: &str, for_event: &str| {
            notes.push(format!(
                "hookSpecificOutput.{field} applies to {for_event} only; ignored on {event}"
            ))
        };
        if event == HookEvent::PreToolUse {
            if specific.permission_decision.is_some() || specific.updated_input.is_some() {
                let reason = specific
                    .permission_decision_reason
                    .as_deref()
                    .map(|r| cap_chars(r, OUTPUT_STRING_LIMIT));
                self.decisions.push((
                    specific.permission_decision,
                    reason,
                    specific.updated_input.clone(),
                ));
            }
        } else {
            if specific.permission_decision.is_some() {
                not_for("permissionDecision", "PreToolUse");
            }
            if specific.updated_input.is_some() {
                not_for("updatedInput", "PreToolUse");
            }
        }
        if let Some(context) = &specific.additional_context {
            self.outcome
                .additional_context
                .push(cap_chars(context, OUTPUT_STRING_LIMIT));
        }
        if let Some(decision) = &specific.decision {
            if event == HookEvent::PermissionRequest {
                let replace = match &self.outcome.permission_request {
                    None => true,
                    // Deny wins; among equals the first in configuration order stays.
                    Some(current) => {
                        current.behavior != super::output::PermissionBehavior::Deny
                            && decision.behavior == super::output::PermissionBehavior::Deny
                    }
                };
                if replace {
                    self.outcome.permission_request = Some(decision.clone());
                }
            } else {
                not_for("decision", "PermissionRequest");
            }
        }
        let tool_output = specific
            .updated_tool_output
            .as_ref()
            .or(specific.updated_mcp_tool_output.as_ref());
        if let Some(tool_output) = tool_output {
            if event == HookEvent::PostToolUse {
                self.outcome.updated_tool_output = Some(tool_output.clone());
            } else {
                not_for("updatedToolOutput", "PostToolUse");
            }
        }
        let session_start_fields = specific.initial_user_message.is_some()
            || specific.session_title.is_some()
            || specific.watch_paths.is_some()
            || specific.reload_skills.is_some();
        if event == HookEvent::SessionStart {
            if let Some(message) = &specific.initial_user_message {
                self.outcome.initial_user_message = Some(message.clone());
            }
            if let Some(title) = &specific.session_title {
                self.outcome.session_title = Some(title.clone());
            }
            if let Some(paths) = &specific.watch_paths {
                self.outcome.watch_paths.extend(paths.iter().cloned());
            }
            if specific.reload_skills == Some(true) {
                self.outcome.reload_skills = true;
            }
        } else if session_start_fields {
            not_for(
                "initialUserMessage/sessionTitle/watchPaths/reloadSkills",
                "SessionStart",
            );
        }
        if let Some(path) = &specific.worktree_path {
            if event == HookEvent::WorktreeCreate {
                self.outcome.worktree_path = Some(path.clone());
            } else {
                not_for("worktreePath", "WorktreeCreate");
            }
        }
        for key in specific.extra.keys() {
            notes.push(format!("unknown hookSpecificOutput field `{key}` ignored"));
        }
    }

    pub(crate) fn finish(mut self) -> HookOutcome {
        let event = self.event();
        if event == HookEvent::PreToolUse {
            let winning = self
                .decisions
                .iter()
                .filter_map(|(decision, _, _)| *decision)
                .max_by_key(|d| d.precedence());
            self.outcome.permission_decision = winning;
            let reasons: Vec<String> = self
                .decisions
                .iter()
                .filter(|(decision, _, _)| decision.is_some() && *decision == winning)
                .filter_map(|(_, reason, _)| reason.clone())
                .filter(|r| !r.trim().is_empty())
                .collect();
            if !reasons.is_empty() {
                self.outcome.permission_decision_reason = Some(reasons.join("\n"));
            }
            if winning == Some(PermissionDecision::Deny) {
                self.outcome.block = Some(HookBlock {
                    effect: BlockEffect::DenyToolCall,
                    reason: self
                        .outcome
                        .permission_decision_reason
                        .clone()
                        .unwrap_or_else(|| "blocked by PreToolUse hook".to_string()),
                });
            } else {
                self.outcome.updated_input = self
                    .decisions
                    .iter()
                    .filter(|(decision, _, _)| decision.is_none() || *decision == winning)
                    .filter_map(|(_, _, input)| input.clone())
                    .next_back();
            }
        } else if !self.blocks.is_empty() {
            self.outcome.block = Some(HookBlock {
                effect: event.block_effect(),
                reason: self.blocks.join("\n"),
            });
        }
        self.outcome
    }
}
