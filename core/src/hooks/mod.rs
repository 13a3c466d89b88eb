//! Hooks, compatible with Claude Code's settings.json `hooks`: typed config with located
//! diagnostics, Claude Code's matcher syntax, one typed input per event serialising to Claude
//! Code's stdin JSON, and a runner that executes `command`, `http`, `prompt`/`agent` handlers and
//! in-process [`HookCallback`]s in parallel and aggregates them into one [`HookOutcome`].
//!
//! This module decides nothing about *when* events fire; the session layer does:
//!
//! ```no_run
//! # use std::sync::Arc;
//! # use robota::hooks::*;
//! # async fn demo(settings_path: &std::path::Path, settings: &serde_json::Value) -> Result<(), HookConfigError> {
//! // Load: one parse per settings layer, then merge (lowest precedence first).
//! let (user, _warnings) = HooksConfig::from_settings(settings_path, settings).into_result()?;
//! let config = HooksConfig::merged([user]);
//! let runner = Arc::new(HookRunner::new(config, HookRunnerOptions::new("/project")));
//!
//! // Fire: build the event's input and run.
//! let common = HookCommon::new("session-1", "/project").with_permission_mode("default");
//! let input = HookInput::pre_tool_use(common, "Bash", serde_json::json!({"command": "ls"}), "toolu_1");
//! let outcome = runner.run(&input, &tokio_util::sync::CancellationToken::new()).await;
//! match outcome.permission_decision {
//!     Some(PermissionDecision::Deny) => { /* don't run; outcome.block has the reason */ }
//!     _ => { /* apply outcome.updated_input, then the permission rules */ }
//! }
//! # Ok(()) }
//! ```
//!
//! `CLAUDE_ENV_FILE` is the session's: it runs SessionStart and Setup hooks with
//! [`HookRunner::run_with_env`], then applies what they wrote to its Bash commands. A hook
//! input's `transcript_path` is the session's own JSONL log (robota's replay events, not Claude
//! Code's transcript records; see the README).
//!
//! What is not done here (yet), by design or for later:
//! - `agent` hooks get read-only tools (Read, Glob, Grep) only inside a session, which supplies
//!   the [`prompt::AgentHookExecutor`]; a bare [`HookRunner`] runs them as one model call.
//! - `mcp_tool` handlers call a tool of the session's MCP servers through the
//!   [`McpToolHookCaller`] the session supplies; a bare [`HookRunner`] reports them as failed.
//! - Strings over 10,000 characters are truncated in place rather than spilled to a file.
//! - `disableAllHooks` / `allowManagedHooksOnly` are settings-level switches: the framework
//!   applies them by not passing (some) layers to [`HooksConfig::merged`].
//! - `if` rules are decided by a [`HookConditionEvaluator`] the session supplies (the permission
//!   engine's matcher); without one only the rule's tool name is checked (failing open).
//! - `suppressOutput` and `terminalSequence` are accepted and kept in the report, not acted on
//!   (there is no terminal in an embedded engine).
//! - Inputs omit Claude Code's newest optional fields (`prompt_id`, `effort`, Stop's
//!   `session_crons`); `shell: "powershell"` is implemented but only tested where pwsh exists.

pub mod callback;
mod command;
pub mod compat;
pub mod config;
pub mod event;
mod http;
pub mod matcher;
pub mod mcp_tool;
pub mod outcome;
pub mod output;
pub mod prompt;
pub mod runner;

pub use callback::{FnHookCallback, HookCallback, HookCallbackResult, OnHookFailure};
pub use config::{
    CommandHook, ConfiguredHook, HandlerKind, HookConfigError, HookDiagnostic, HookHandlerConfig,
    HookOrigin, HookProblem, HookShell, HookSource, HooksConfig, HttpHook, MatcherGroup,
    McpToolHook, ParsedHooks, PromptHook, Severity,
};
pub use event::{
    BlockEffect, CompactTrigger, HookCommon, HookEvent, HookEventInput, HookInput,
    NotificationInput, PermissionRequestInput, PostCompactInput, PostToolUseFailureInput,
    PostToolUseInput, PreCompactInput, PreToolUseInput, SessionEndInput, SessionEndReason,
    SessionStartInput, SessionStartSource, SetupInput, SetupTrigger, StopFailureInput, StopInput,
    SubagentStartInput, SubagentStopInput, UnknownHookEvent, UserPromptSubmitInput,
    WorktreeCreateInput, WorktreeRemoveInput,
};
pub use matcher::{Matcher, MatcherError};
pub use mcp_tool::McpToolHookCaller;
pub use outcome::{
    HandlerReport, HandlerStatus, HandlerSummary, HandlerType, HookBlock, HookError, HookFailure,
    HookOutcome, HookStop, MAX_CONSECUTIVE_STOP_BLOCKS, OUTPUT_STRING_LIMIT,
};
pub use output::{
    HookOutput, HookSpecificOutput, PermissionBehavior, PermissionDecision,
    PermissionRequestDecision,
};
pub use prompt::AgentHookExecutor;
pub use runner::{
    default_timeout, AsyncHookResult, CallbackId, HookConditionEvaluator, HookObserver, HookRunner,
    HookRunnerOptions, ModelProviderResolver, ToolNameCondition, AGENT_TIMEOUT, DEFAULT_TIMEOUT,
    PROMPT_TIMEOUT, SESSION_END_BUDGET, SESSION_END_BUDGET_MAX, USER_PROMPT_SUBMIT_TIMEOUT,
};
