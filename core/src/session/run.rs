//! The [`Session`]: one conversation with its settings, permission enforcement and hooks, on top
//! of the execution engine.
//!
//! # Lifecycle
//!
//! - [`Session::new`] loads and checks the settings (a bad rule, mode, matcher or JSON is an
//!   error naming the file, key and problem; warnings become `settings_warning` events), builds
//!   the tools (bare-name deny rules remove tools from what the model sees) and the
//!   [`PermissionEnforcer`]. It does no async work and fires no hook.
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
//! - [`Session::shutdown`] aborts any run, waits for it, fires **SessionEnd** exactly once and
//!   stops background hooks; the session then refuses new runs.
//!
//! # Results
//!
//! A run that ends on a model error is not an `Err`: its [`RunOutcome`] has `stop_reason: error`
//! and the error (the history stays consistent and the session usable). An abort returns the
//! outcome with `interrupted: true`. `Err` means the session did not run the prompt at all
//! (busy, shut down, prompt rejected).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::OnceCell;
use tokio_util::sync::CancellationToken;

use super::assemble::{assemble, Assembly};
use super::enforcer::{EnforcerOptions, PermissionEnforcer};
use super::error::SessionError;
use super::events::{EventSink, SessionEvent, SessionWarning};
use super::hook_condition::PermissionRuleCondition;
use super::options::SessionOptions;
use super::permission_handler::SettingsTarget;
use crate::engine::{
    Engine, EngineConfig, ExecutionEvent, ExecutionEventCallback, RunOptions, RunOutcome,
    RunStopReason,
};
use crate::hooks::{
    HookEvent, HookEventInput, HookInput, HookRunner, HookRunnerOptions, SessionEndReason,
    SessionStartSource, StopFailureInput, StopInput, MAX_CONSECUTIVE_STOP_BLOCKS,
};
use crate::message::{
    Conversation, Message, ProviderError, ProviderErrorKind, Usage, MODEL_CONTEXT_METADATA,
};
use crate::permissions::{PermissionContext, PermissionMode, ToolClass};
use crate::tools::builtins::Builtins;
use crate::tools::ToolRegistry;

/// Metadata key on the user message a Stop hook's block added, so transcripts can tell it from
/// what the user typed.
pub const STOP_HOOK_MESSAGE_METADATA: &str = "stop_hook";

/// One conversation with permissions and hooks. `Send + Sync`: hosts (and bindings) share it
/// behind an `Arc` and call [`abort`](Self::abort) or read the history from other threads while a
/// run is in progress.
pub struct Session {
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
    started: OnceCell<()>,
    /// SessionStart context waiting for the first prompt.
    start_context: Mutex<Vec<String>>,
    shut_down: AtomicBool,
    ended: OnceCell<()>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("id", &self.id)
            .field("cwd", &self.cwd)
            .field("model", &self.model)
            .field("enforcer", &self.enforcer)
            .field("tools", self.engine.tools())
            .finish()
    }
}

impl Session {
    /// Creates a session: loads and checks its settings, builds its tools, permission enforcer
    /// and hooks. Fires no hook (see [`Session::start`]).
    pub fn new(options: SessionOptions) -> Result<Session, SessionError> {
        let cwd = absolute_cwd(&options.cwd)?;
        let id = match options.session_id {
            Some(id) => validate_session_id(id)?,
            None => uuid::Uuid::new_v4().to_string(),
        };
        let events = EventSink::new(options.on_event.clone());
        let Assembly {
            home,
            warnings,
            rules,
            mode,
            bypass_disabled,
            hooks: hooks_config,
            env,
            additional_directories,
            sensitive_paths,
            settings_targets,
        } = assemble(&cwd, options.settings, options.permission_mode)?;

        let mut tools = match options.tools {
            Some(tools) => tools,
            None => {
                let mut config = options.builtin_tools;
                config
                    .additional_roots
                    .extend(additional_directories.iter().cloned());
                config.env.extend(env.clone());
                let mut registry = ToolRegistry::new();
                Builtins::new(config).register(&mut registry);
                registry
            }
        };
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
        // Paths the model gives may be spelled through the canonical cwd (`/private/tmp/…` for
        // `/tmp/…` on macOS); both spellings are the workspace.
        if let Ok(canonical) = std::fs::canonicalize(&cwd) {
            if canonical != cwd {
                context.workspace_roots.push(canonical);
            }
        }
        for name in tools.names() {
            if let Some(tool) = tools.get(name) {
                if tool.is_read_only() {
                    context
                        .tool_classes
                        .insert(name.to_string(), ToolClass::ReadOnly);
                }
            }
        }

        let mut runner_options = HookRunnerOptions::new(&cwd)
            .with_env(env)
            .with_provider(Arc::clone(&options.provider))
            .with_condition_evaluator(Arc::new(PermissionRuleCondition::new(&cwd, home)));
        runner_options.provider_for_model = None;
        let hooks = Arc::new(HookRunner::new(hooks_config, runner_options));
        for registration in options.hook_callbacks {
            hooks
                .register_callback_with_timeout(
                    registration.event,
                    &registration.matcher,
                    registration.callback,
                    registration.timeout,
                )
                .map_err(|e| SessionError::InvalidHookCallback {
                    event: registration.event,
                    matcher: registration.matcher.clone(),
                    message: e.to_string(),
                })?;
        }

        let enforcer = PermissionEnforcer::new(EnforcerOptions {
            session_id: id.clone(),
            context,
            hooks: Some(Arc::clone(&hooks)),
            permission_handler: options.permission_handler,
            settings_targets,
            on_event: options.on_event,
            resolver: None,
            transcript_path: None,
        });

        let model = options.provider.model().to_string();
        let config = EngineConfig {
            system_prompt: options.system_prompt,
            max_turns: options.max_turns,
            cwd: cwd.clone(),
            ..options.engine
        };
        let engine =
            Engine::new(options.provider, tools, config).with_tool_gate(Arc::new(enforcer.clone()));

        for warning in &warnings {
            events.emit(SessionEvent::SettingsWarning {
                warning: warning.clone(),
            });
        }

        Ok(Session {
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
            conversation: Arc::new(Mutex::new(Conversation::new())),
            run_lock: tokio::sync::Mutex::new(()),
            current_run: Mutex::new(None),
            started: OnceCell::new(),
            start_context: Mutex::new(Vec::new()),
            shut_down: AtomicBool::new(false),
            ended: OnceCell::new(),
        })
    }

    /// The session id.
    pub fn session_id(&self) -> &str {
        &self.id
    }

    /// The working directory (absolute).
    pub fn cwd(&self) -> &Path {
        &self.cwd
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
        Ok(())
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

    /// The chat messages of the history, in order.
    pub fn messages(&self) -> Vec<Message> {
        self.lock_conversation().messages().cloned().collect()
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

    /// Fires SessionStart (source `startup`) if it has not fired yet. [`Session::run`] calls
    /// this; call it earlier to run the hooks before the first prompt.
    pub async fn start(&self) {
        self.started
            .get_or_init(|| async {
                if !self.hooks.has_hooks(HookEvent::SessionStart) {
                    return;
                }
                let mut input = HookInput::session_start(
                    self.enforcer.hook_common(&self.cwd),
                    SessionStartSource::Startup,
                );
                if let HookEventInput::SessionStart(payload) = &mut input.event {
                    payload.model = Some(self.model.clone());
                }
                let outcome = self.hooks.run(&input, &CancellationToken::new()).await;
                self.events.hook_outcome(&outcome);
                if !outcome.additional_context.is_empty() {
                    self.start_context
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .extend(outcome.additional_context);
                }
            })
            .await;
    }

    /// Sends `prompt` to the agent and runs until it answers (see the module docs for the hooks
    /// around it).
    pub async fn run(&self, prompt: impl Into<String>) -> Result<RunOutcome, SessionError> {
        let prompt = prompt.into();
        if self.shut_down.load(Ordering::SeqCst) {
            return Err(SessionError::ShutDown);
        }
        let _running = self.run_lock.try_lock().map_err(|_| SessionError::Busy)?;
        let cancel = CancellationToken::new();
        *self
            .current_run
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(cancel.clone());
        self.enforcer.begin_run(cancel.clone());
        // Cleans up also when the host drops this future halfway (prefer `abort`, which lets
        // the run finish the history properly).
        let _cleanup = RunCleanup {
            session: self,
            cancel: cancel.clone(),
        };
        self.run_turn(prompt, &cancel).await
    }

    async fn run_turn(
        &self,
        prompt: String,
        cancel: &CancellationToken,
    ) -> Result<RunOutcome, SessionError> {
        self.start().await;
        let mut context: Vec<String> = std::mem::take(
            &mut *self
                .start_context
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        );

        if self.hooks.has_hooks(HookEvent::UserPromptSubmit) {
            let input =
                HookInput::user_prompt_submit(self.enforcer.hook_common(&self.cwd), prompt.clone());
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
        let mut total: Option<RunOutcome> = None;
        let mut stop_blocks = 0u32;
        loop {
            let outcome = self
                .engine
                .run(&mut conversation, message, self.run_options(cancel))
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
        *self.lock_conversation() = conversation;
        Ok(total.unwrap_or_else(interrupted_before_start))
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
        if let Some(stop) = &result.stop {
            self.enforcer
                .request_stop(HookEvent::Stop, stop.reason.clone());
            return None;
        }
        if cancel.is_cancelled() {
            return None;
        }
        result.block.map(|b| b.reason)
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

    fn run_options(&self, cancel: &CancellationToken) -> RunOptions {
        let events = self.events.clone();
        let mirror = Arc::clone(&self.conversation);
        let forward = self.on_execution_event.clone();
        RunOptions::new()
            .with_cancel(cancel.clone())
            .with_on_event(move |event| events.emit(SessionEvent::Engine(event)))
            .with_on_execution_event(move |event| {
                if let ExecutionEvent::HistoryMutation { message, .. } = &event {
                    mirror
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .push(message.clone());
                }
                if let Some(forward) = &forward {
                    forward(event);
                }
            })
    }

    /// Ends the session: aborts any run and waits for it to finish, fires SessionEnd (exactly
    /// once, however often this is called) and stops background hooks. Later runs are refused.
    pub async fn shutdown(&self, reason: SessionEndReason) {
        self.shut_down.store(true, Ordering::SeqCst);
        self.abort();
        self.ended
            .get_or_init(|| async {
                // Wait for a run that was in progress to wind down, so SessionEnd comes last.
                let _idle = self.run_lock.lock().await;
                if self.hooks.has_hooks(HookEvent::SessionEnd) {
                    let input =
                        HookInput::session_end(self.enforcer.hook_common(&self.cwd), reason);
                    let outcome = self.hooks.run(&input, &CancellationToken::new()).await;
                    self.events.hook_outcome(&outcome);
                }
                self.hooks.shutdown();
            })
            .await;
    }

    /// True once [`shutdown`](Self::shutdown) was called.
    pub fn is_shut_down(&self) -> bool {
        self.shut_down.load(Ordering::SeqCst)
    }

    fn lock_conversation(&self) -> std::sync::MutexGuard<'_, Conversation> {
        self.conversation
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
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
    }
}

/// Adds `next` (a continuation after a Stop hook block) to the turn's outcome so far.
fn accumulate(total: &mut Option<RunOutcome>, next: RunOutcome) -> RunOutcome {
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
                tools_executed: sum.tools_executed,
                execution_id: next.execution_id,
            }
        }
    };
    *total = Some(merged.clone());
    merged
}

fn interrupted_before_start() -> RunOutcome {
    RunOutcome {
        response: String::new(),
        interrupted: true,
        rounds: 0,
        usage: Usage::default(),
        stop_reason: RunStopReason::Interrupted,
        error: None,
        tools_executed: Vec::new(),
        execution_id: uuid::Uuid::new_v4().to_string(),
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

fn absolute_cwd(cwd: &Path) -> Result<PathBuf, SessionError> {
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
