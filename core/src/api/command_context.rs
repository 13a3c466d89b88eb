//! [`HostCommandContext`]: the live [`CommandHostContext`] a command written in a host language
//! (Python, Node, C, Swift) acts through while it runs — the same facade the built-in commands
//! use, as JSON operations a binding can forward from any thread.
//!
//! A command's `execute` borrows its context only for the length of the call, while a host's
//! code runs elsewhere (an asyncio loop, the JS thread, a C thread). So the host gets a cheap,
//! cloneable handle that sends each operation back to the running `execute`, which performs it
//! on the real context and replies. When the command has answered, `execute` stops listening and
//! every later use of the handle fails with [`ApiErrorKind::Command`] saying so: a handle kept
//! past its command can never act on the session.
//!
//! Operations (`{"op": …}` JSON, answered with JSON):
//!
//! | op | fields | answer |
//! |---|---|---|
//! | `state` | — | `{session_id, session_name, permission_mode, model, context_state, usage, invoked_by_model, project_dir}` |
//! | `history` | — | the session's history entries |
//! | `commands` | — | the user-invocable command descriptors |
//! | `clear` | — | `null` (the conversation is cleared) |
//! | `compact` | `instructions?` | the compaction summary |
//! | `set_permission_mode` | `mode` | `null` |
//! | `set_session_name` | `name` | `null` |
//! | `run_subagent` | `prompt`, `agent_type?`, `isolation?` | the subagent's report |
//! | `read_settings` | `scope` (`localSettings` \| `projectSettings` \| `userSettings`) | the file's JSON |
//! | `update_settings` | `scope`, `patch` (a JSON merge patch) | `{path}` |
//! | `switch_model` | `model` | `{model, context_window}` (`context_window` is `null` when the host applies model changes itself) |
//! | `set_auto_compact` | `enabled`, `threshold?` (a fraction in (0, 1]) | the policy `{enabled, threshold}` |
//!
//! Exits, pickers and other host actions are not operations: the command returns them as typed
//! effects in its result, as the built-in commands do.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::{json, Value};
use tokio::sync::{mpsc, oneshot};

use super::error::{ApiError, ApiErrorKind};
use crate::framework::agents::SubagentRequest;
use crate::framework::commands::CommandHostContext;
use crate::permissions::PermissionMode;
use crate::session::SettingsDestination;

/// One operation on a command's context; see the module table.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
#[non_exhaustive]
pub enum CommandContextOp {
    /// Session id, name, permission mode, model, context window and usage.
    State,
    /// The full history.
    History,
    /// The user-invocable commands.
    Commands,
    /// Clear the conversation.
    Clear,
    /// Compact the conversation now.
    Compact {
        /// What the summary should focus on.
        #[serde(default)]
        instructions: Option<String>,
    },
    /// Change the permission mode.
    SetPermissionMode {
        /// `default`, `plan`, `acceptEdits`, `bypassPermissions` or `dontAsk`.
        mode: String,
    },
    /// Rename the session.
    SetSessionName {
        /// The new name.
        name: String,
    },
    /// Run a subagent to its final answer.
    RunSubagent(SubagentRequest),
    /// Read one settings file.
    ReadSettings {
        /// Which file.
        scope: SettingsDestination,
    },
    /// Apply a JSON merge patch to one settings file.
    UpdateSettings {
        /// Which file.
        scope: SettingsDestination,
        /// The patch (an object; `null` removes a key).
        patch: Value,
    },
    /// Send the session's later prompts to another model on its provider.
    SwitchModel {
        /// The model id.
        model: String,
    },
    /// Change the live session's automatic compaction (not saved in settings: use
    /// `update_settings` with `autoCompactThreshold` for that).
    SetAutoCompact {
        /// On or off.
        enabled: bool,
        /// The fraction of the context window at which it runs; unchanged when absent.
        #[serde(default)]
        threshold: Option<f64>,
    },
}

struct ContextCall {
    op: CommandContextOp,
    reply: oneshot::Sender<Result<Value, ApiError>>,
}

/// A command's handle on its session, valid while the command runs (see the module docs).
/// Cheap to clone; usable from any thread.
#[derive(Clone)]
pub struct HostCommandContext {
    sender: mpsc::UnboundedSender<ContextCall>,
    command: Arc<str>,
}

impl std::fmt::Debug for HostCommandContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostCommandContext")
            .field("command", &self.command)
            .field("valid", &self.is_valid())
            .finish()
    }
}

impl HostCommandContext {
    /// True while the command this handle was made for is still running.
    pub fn is_valid(&self) -> bool {
        !self.sender.is_closed()
    }

    fn expired(&self) -> ApiError {
        ApiError::new(
            ApiErrorKind::Command,
            format!(
                "the context of command `{}` is no longer valid: the command has returned; use \
                 the context only while the command runs",
                self.command
            ),
        )
    }

    /// Runs one operation given as JSON (`{"op": "clear"}`, …; see the module table).
    pub async fn call_json(&self, op: Value) -> Result<Value, ApiError> {
        let op: CommandContextOp = super::fields::from_value(op, "invalid command context op")?;
        self.call(op).await
    }

    /// [`call_json`](Self::call_json) for a thread that may block (a C host's callback or
    /// thread, not an async task): waits for the answer. Called from inside an async task of the
    /// engine it cannot wait, and fails with [`ApiErrorKind::Command`] (the operation may still
    /// be performed).
    pub fn call_json_blocking(&self, op: Value) -> Result<Value, ApiError> {
        let op: CommandContextOp = super::fields::from_value(op, "invalid command context op")?;
        if tokio::runtime::Handle::try_current()
            .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::CurrentThread)
        {
            return Err(ApiError::new(
                ApiErrorKind::Command,
                "the command context cannot be used from the engine's single-threaded runtime; \
                 call it from the command's callback or a thread of your own",
            ));
        }
        let (reply, answer) = oneshot::channel();
        self.sender
            .send(ContextCall { op, reply })
            .map_err(|_| self.expired())?;
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| answer.blocking_recv())) {
            Ok(Ok(result)) => result,
            Ok(Err(_)) => Err(self.expired()),
            Err(_) => Err(ApiError::new(
                ApiErrorKind::Command,
                "the command context was called from inside an async task of the engine, where \
                 it cannot wait for the answer (the operation may still run); call it from the \
                 command's callback or a thread of your own",
            )),
        }
    }

    /// Runs one operation.
    pub async fn call(&self, op: CommandContextOp) -> Result<Value, ApiError> {
        let (reply, answer) = oneshot::channel();
        self.sender
            .send(ContextCall { op, reply })
            .map_err(|_| self.expired())?;
        answer.await.map_err(|_| self.expired())?
    }
}

/// Makes the handle for one run of `command`, and the queue its operations arrive on.
pub(crate) fn open(command: &str) -> (HostCommandContext, ContextQueue) {
    let (sender, receiver) = mpsc::unbounded_channel();
    (
        HostCommandContext {
            sender,
            command: Arc::from(command),
        },
        ContextQueue { receiver },
    )
}

/// The receiving side: the running `execute` serves it while it waits for the host's answer.
pub(crate) struct ContextQueue {
    receiver: mpsc::UnboundedReceiver<ContextCall>,
}

impl ContextQueue {
    /// Runs `answer` to its end while performing every operation the host sends on `ctx`. When
    /// it returns, the queue is closed and later operations fail as expired.
    pub(crate) async fn serve<T>(
        mut self,
        ctx: &dyn CommandHostContext,
        answer: impl std::future::Future<Output = T>,
    ) -> T {
        tokio::pin!(answer);
        let result = loop {
            tokio::select! {
                biased;
                result = &mut answer => break result,
                Some(call) = self.receiver.recv() => {
                    // Performed inline: operations of one command run one at a time, in order.
                    let outcome = perform(ctx, call.op).await;
                    let _ = call.reply.send(outcome);
                }
            }
        };
        self.receiver.close();
        // Operations that raced the answer are refused rather than left hanging.
        while let Ok(call) = self.receiver.try_recv() {
            drop(call.reply);
        }
        result
    }
}

fn failed(error: impl std::fmt::Display) -> ApiError {
    ApiError::new(ApiErrorKind::Command, error.to_string())
}

/// Performs one operation on the real context.
async fn perform(ctx: &dyn CommandHostContext, op: CommandContextOp) -> Result<Value, ApiError> {
    let to_json = |value: Result<Value, serde_json::Error>| value.map_err(failed);
    match op {
        CommandContextOp::State => Ok(json!({
            "session_id": ctx.session_id(),
            "session_name": ctx.session_name(),
            "permission_mode": ctx.permission_mode(),
            "model": ctx.model(),
            "context_state": ctx.context_state(),
            "usage": ctx.usage_summary(),
            "invoked_by_model": ctx.invoked_by_model(),
            "project_dir": ctx.project_dir(),
        })),
        CommandContextOp::History => to_json(serde_json::to_value(ctx.history())),
        CommandContextOp::Commands => to_json(serde_json::to_value(ctx.commands())),
        CommandContextOp::Clear => ctx
            .clear_conversation()
            .await
            .map(|()| Value::Null)
            .map_err(failed),
        CommandContextOp::Compact { instructions } => {
            let summary = ctx.compact(instructions.as_deref()).await.map_err(failed)?;
            to_json(serde_json::to_value(summary))
        }
        CommandContextOp::SetPermissionMode { mode } => {
            let parsed: PermissionMode =
                mode.parse()
                    .map_err(|e: crate::permissions::UnknownModeError| {
                        ApiError::invalid_argument(e.to_string())
                    })?;
            ctx.set_permission_mode(parsed)
                .await
                .map(|()| Value::Null)
                .map_err(failed)
        }
        CommandContextOp::SetSessionName { name } => ctx
            .set_session_name(&name)
            .await
            .map(|()| Value::Null)
            .map_err(failed),
        CommandContextOp::RunSubagent(request) => {
            let report = ctx.run_subagent(request).await.map_err(failed)?;
            to_json(serde_json::to_value(report))
        }
        CommandContextOp::ReadSettings { scope } => ctx.read_settings(scope).map_err(failed),
        CommandContextOp::UpdateSettings { scope, patch } => {
            if !patch.is_object() {
                return Err(ApiError::invalid_argument(
                    "`patch` must be a JSON object (a merge patch: `null` removes a key)",
                ));
            }
            let path = ctx.update_settings(scope, patch).await.map_err(failed)?;
            Ok(json!({ "path": path }))
        }
        CommandContextOp::SwitchModel { model } => {
            let model = model.trim();
            if model.is_empty() {
                return Err(ApiError::invalid_argument("`model` must name a model"));
            }
            let window = ctx.switch_model(model).await.map_err(failed)?;
            Ok(json!({ "model": model, "context_window": window }))
        }
        CommandContextOp::SetAutoCompact { enabled, threshold } => {
            let mut policy = ctx.compaction_policy().ok_or_else(|| {
                ApiError::new(
                    ApiErrorKind::Command,
                    "this host has no automatic compaction to change",
                )
            })?;
            policy.enabled = enabled;
            if let Some(threshold) = threshold {
                policy.threshold = threshold;
            }
            ctx.set_compaction_policy(policy)
                .await
                .map_err(|e| ApiError::invalid_argument(e.to_string()))?;
            Ok(json!({ "enabled": policy.enabled, "threshold": policy.threshold }))
        }
    }
}
