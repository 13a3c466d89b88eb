//! Permission enforcement: the [`ToolCallGate`] that decides every tool call of a session from
//! its rules, mode, hooks and the host's [`PermissionHandler`], and feeds tool results to the
//! post-tool hooks.
//!
//! # Order, per call (issue 4, Claude Code's documented order)
//!
//! 1. **Deny rules.** A matching deny rule refuses the call before any hook runs.
//! 2. **PreToolUse hooks.** A block (exit 2, `permissionDecision: deny`, `decision: block`)
//!    refuses the call with the hook's reason. `updatedInput` replaces the arguments, which are
//!    then evaluated by the rules again (a hook cannot rewrite a call into one a deny rule
//!    forbids). `allow` skips the mode and the "needs approval" default, but deny rules, ask rules
//!    and sensitive paths still apply. `ask` (and `defer`, which an embedded engine cannot honour)
//!    forces a prompt unless something denies.
//! 3. **Rules and mode** ([`evaluate_permission_with`], symlinks resolved on the real file system
//!    by [`FsPathResolver`]).
//! 4. When the answer is "ask": **PermissionRequest hooks** may answer allow or deny; otherwise a
//!    **Notification** hook (`permission_prompt`) is fired without waiting for it, and the
//!    **permission handler** is asked. No handler means the call is denied with a message that
//!    says how to allow it (headless-safe). `dontAsk` mode never gets here: it denies instead.
//!
//! After a call ran: **PostToolUse** hooks for results that are not errors, **PostToolUseFailure**
//! for error results. Their `additionalContext` and `decision: block` reason are appended to what
//! the model sees; PostToolUse `updatedToolOutput` replaces the result.
//!
//! A hook's `continue: false` stops the agent: the current run is cancelled (it ends as
//! interrupted), an `agent_stopped` event says why, and the call at hand is not run.
//!
//! # Decisions where the contract is silent
//!
//! - "Allow for the session" and "allow always" remember **rules** (the answer's, else the
//!   request's suggestions), never "this tool, whatever its input" as TypeScript Robota did; they
//!   are allow rules, so deny and ask rules keep winning. When no rule describes the call, the
//!   call is allowed once and the `permission_resolved` event says so.
//! - A rule saved by "allow always" applies at once in this session too. When saving fails the
//!   call is still allowed (the user said yes), the rule holds for the session, and a
//!   `settings_write_failed` event carries the error.
//! - A PermissionRequest hook's `updatedPermissions` entries of type `addRules` (allow rules, any
//!   destination) and `setMode` are applied; other entries are reported as `warning` events.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Instant;

use async_trait::async_trait;
use futures::FutureExt;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::events::{EventSink, SessionEvent, SessionEventCallback};
use super::fs_resolver::FsPathResolver;
use super::permission_handler::{
    AllowScope, PermissionHandler, PermissionRequest, PermissionResolution, PermissionResponse,
    ResolvedBy, SettingsDestination, SettingsTarget,
};
use super::settings_writer::add_permission_rules;
use crate::engine::{GateCall, GateDecision, ToolCallGate};
use crate::hooks::{
    HookCommon, HookEvent, HookEventInput, HookInput, HookOutcome, HookRunner, NotificationInput,
    PermissionBehavior, PermissionDecision as HookPermission, PermissionRequestInput,
    PostToolUseFailureInput, PostToolUseInput,
};
use crate::permissions::{
    evaluate_permission_with, Decision, DecisionBasis, PathResolver, PermissionContext,
    PermissionDecision, PermissionMode, RuleList, RuleParseError, RuleSet, RuleSource,
};
use crate::tools::ToolOutput;

/// What the model is told when a call was not run because the run was aborted.
const INTERRUPTED_MESSAGE: &str =
    "The call was not run: the user interrupted before permission was given.";

/// How a [`PermissionEnforcer`] is set up.
#[derive(Clone)]
pub struct EnforcerOptions {
    /// The session id (hook inputs carry it).
    pub session_id: String,
    /// Mode, rules, directories and sensitive paths.
    pub context: PermissionContext,
    /// The session's hooks, if any.
    pub hooks: Option<Arc<HookRunner>>,
    /// Who answers "ask"; `None` denies such calls with an explanation.
    pub permission_handler: Option<Arc<dyn PermissionHandler>>,
    /// The settings files "allow always" may write to.
    pub settings_targets: Vec<SettingsTarget>,
    /// Where events go.
    pub on_event: Option<SessionEventCallback>,
    /// How symbolic links are resolved; [`FsPathResolver`] (the real file system) when `None`.
    pub resolver: Option<Arc<dyn PathResolver + Send + Sync>>,
    /// `transcript_path` for hook inputs.
    pub transcript_path: Option<String>,
}

impl EnforcerOptions {
    /// Options for `session_id` with `context`, no hooks, no handler and no settings targets.
    pub fn new(session_id: impl Into<String>, context: PermissionContext) -> Self {
        EnforcerOptions {
            session_id: session_id.into(),
            context,
            hooks: None,
            permission_handler: None,
            settings_targets: Vec::new(),
            on_event: None,
            resolver: None,
            transcript_path: None,
        }
    }
}

impl std::fmt::Debug for EnforcerOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EnforcerOptions")
            .field("session_id", &self.session_id)
            .field("mode", &self.context.mode)
            .field("hooks", &self.hooks.is_some())
            .field("permission_handler", &self.permission_handler.is_some())
            .field("settings_targets", &self.settings_targets)
            .finish()
    }
}

/// The session's tool-call gate. Cheap to clone (shared state inside); `Send + Sync`.
#[derive(Clone)]
pub struct PermissionEnforcer {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for PermissionEnforcer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PermissionEnforcer")
            .field("session_id", &self.inner.session_id)
            .field("mode", &self.permission_mode())
            .field("session_allowed_rules", &self.session_allowed_rules())
            .finish()
    }
}

/// Told `true` when a subagent's call starts waiting for the host's permission answer and
/// `false` when that wait ends; given as [`SubagentRun::on_permission_wait`](super::SubagentRun::on_permission_wait).
/// Called synchronously from the async task running the subagent's tool call: it must return
/// quickly and never block.
pub type PermissionWaitCallback = Arc<dyn Fn(bool) + Send + Sync>;

/// The host's handler with the waits around its answers reported.
struct WatchedHandler {
    inner: Arc<dyn PermissionHandler>,
    watch: PermissionWaitCallback,
}

/// Reports the end of a wait however it ends (answered, or abandoned after an abort).
struct WaitEnds<'a>(&'a PermissionWaitCallback);

impl Drop for WaitEnds<'_> {
    fn drop(&mut self) {
        (self.0)(false);
    }
}

#[async_trait]
impl PermissionHandler for WatchedHandler {
    async fn request_permission(
        &self,
        request: PermissionRequest,
        cancel: CancellationToken,
    ) -> PermissionResponse {
        (self.watch)(true);
        let _ends = WaitEnds(&self.watch);
        self.inner.request_permission(request, cancel).await
    }
}

struct Inner {
    session_id: String,
    state: RwLock<State>,
    hooks: Option<Arc<HookRunner>>,
    handler: Option<Arc<dyn PermissionHandler>>,
    targets: Vec<SettingsTarget>,
    events: EventSink,
    resolver: Arc<dyn PathResolver + Send + Sync>,
    transcript_path: Option<String>,
    run: Mutex<RunControl>,
    /// Calls allowed and not yet finished: the input they run with and when they were allowed.
    in_flight: Mutex<HashMap<String, (Value, Instant)>>,
    /// PreToolUse `additionalContext` per call, shown to the model next to the call's result.
    pre_context: Mutex<HashMap<String, String>>,
    /// Shared with the session's subagent gates, so request ids stay unique in the session.
    next_request: Arc<AtomicU64>,
    /// `(agent_id, agent_type)` when this gate decides a subagent's calls: hook inputs say so.
    agent: Option<(String, String)>,
}

struct State {
    /// What evaluations read; replaced (never mutated in place) so a check in progress keeps a
    /// consistent view.
    context: Arc<PermissionContext>,
    /// The rules the session started with.
    base_rules: RuleSet,
    /// Rules added while the session runs (allow for the session / allow always), as written.
    added: Vec<String>,
}

#[derive(Default)]
struct RunControl {
    cancel: Option<CancellationToken>,
    stopped: Option<StopRequest>,
}

/// A hook asked to stop the agent (`continue: false`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct StopRequest {
    pub(crate) event: HookEvent,
    pub(crate) reason: Option<String>,
}

/// What steps 1–3 concluded.
struct Verdict {
    decision: PermissionDecision,
}

impl PermissionEnforcer {
    /// An enforcer.
    pub fn new(options: EnforcerOptions) -> Self {
        let base_rules = options.context.rules.clone();
        PermissionEnforcer {
            inner: Arc::new(Inner {
                session_id: options.session_id,
                state: RwLock::new(State {
                    context: Arc::new(options.context),
                    base_rules,
                    added: Vec::new(),
                }),
                hooks: options.hooks,
                handler: options.permission_handler,
                targets: options.settings_targets,
                events: EventSink::new(options.on_event),
                resolver: options.resolver.unwrap_or_else(|| Arc::new(FsPathResolver)),
                transcript_path: options.transcript_path,
                run: Mutex::new(RunControl::default()),
                in_flight: Mutex::new(HashMap::new()),
                pre_context: Mutex::new(HashMap::new()),
                next_request: Arc::new(AtomicU64::new(1)),
                agent: None,
            }),
        }
    }

    /// A gate for a subagent of this session: the same hooks, permission handler, settings
    /// targets, event sink and request-id counter, a snapshot of the current rules and mode
    /// (including rules allowed for the session so far), and hook inputs that carry the
    /// subagent's `agent_id`/`agent_type`. With `isolated_cwd` (a worktree) the calls are
    /// decided for that directory, which is also marked as an isolated root (see
    /// [`PermissionContext::isolated_roots`]).
    ///
    /// Its run control is its own: a hook's `continue: false` inside the subagent stops the
    /// subagent, and "allow for the session" answers given to the subagent hold for that subagent
    /// only.
    ///
    /// `on_permission_wait`, when given, is told `true` when one of the subagent's calls starts
    /// waiting for the permission handler's answer and `false` once it is answered (or the wait
    /// is abandoned), so a background subagent's task can show `waiting_permission`.
    pub(crate) fn for_subagent(
        &self,
        agent_id: &str,
        agent_type: &str,
        isolated_cwd: Option<&std::path::Path>,
        on_permission_wait: Option<PermissionWaitCallback>,
    ) -> PermissionEnforcer {
        let mut context = self.context();
        if let Some(cwd) = isolated_cwd {
            // The parent's directory (and its canonical spelling) is not the subagent's
            // workspace: edits there are outside the isolation.
            context.cwd = cwd.to_path_buf();
            context.workspace_roots.clear();
            context.isolated_roots.push(cwd.to_path_buf());
            if let Ok(canonical) = std::fs::canonicalize(cwd) {
                if canonical != cwd {
                    context.workspace_roots.push(canonical.clone());
                    context.isolated_roots.push(canonical);
                }
            }
        }
        let base_rules = self.read_state().base_rules.clone();
        PermissionEnforcer {
            inner: Arc::new(Inner {
                session_id: self.inner.session_id.clone(),
                state: RwLock::new(State {
                    context: Arc::new(context),
                    base_rules,
                    added: Vec::new(),
                }),
                hooks: self.inner.hooks.clone(),
                handler: match (self.inner.handler.clone(), on_permission_wait) {
                    (Some(handler), Some(watch)) => Some(Arc::new(WatchedHandler {
                        inner: handler,
                        watch,
                    })
                        as Arc<dyn PermissionHandler>),
                    (handler, _) => handler,
                },
                targets: self.inner.targets.clone(),
                events: self.inner.events.clone(),
                resolver: Arc::clone(&self.inner.resolver),
                transcript_path: self.inner.transcript_path.clone(),
                run: Mutex::new(RunControl::default()),
                in_flight: Mutex::new(HashMap::new()),
                pre_context: Mutex::new(HashMap::new()),
                next_request: Arc::clone(&self.inner.next_request),
                agent: Some((agent_id.to_string(), agent_type.to_string())),
            }),
        }
    }

    /// The current permission mode.
    pub fn permission_mode(&self) -> PermissionMode {
        self.context_arc().mode
    }

    /// Changes the mode for calls decided from now on.
    pub fn set_permission_mode(&self, mode: PermissionMode) {
        self.update_context(|context| context.mode = mode);
    }

    /// Updates what the rules know about the OS sandbox (after a mode change turned it on or
    /// off).
    pub fn set_bash_sandbox(&self, sandbox: crate::permissions::BashSandbox) {
        self.update_context(|context| context.sandbox = sandbox);
    }

    /// A snapshot of the evaluation context (mode, rules — including those added during the
    /// session — directories).
    pub fn context(&self) -> PermissionContext {
        (*self.context_arc()).clone()
    }

    /// The allow rules added during the session ("allow for the session" and "allow always"
    /// answers, [`allow_for_session`](Self::allow_for_session)), in the order they were added.
    pub fn session_allowed_rules(&self) -> Vec<String> {
        self.read_state().added.clone()
    }

    /// Allows calls matching `rules` for the rest of the session. All-or-nothing: when a rule
    /// does not parse, nothing is added.
    pub fn allow_for_session(&self, rules: &[String]) -> Result<(), Vec<RuleParseError>> {
        self.add_rules(rules, &RuleSource::new("session"))
    }

    /// Adds allow and deny rules that hold like settings rules for the whole session (they
    /// survive [`clear_session_rules`](Self::clear_session_rules) and are not listed as
    /// approvals). Used for a query's `allowed_tools`/`disallowed_tools`. All-or-nothing.
    pub fn add_override_rules(
        &self,
        allow: &[String],
        deny: &[String],
    ) -> Result<(), Vec<RuleParseError>> {
        let source = RuleSource::new("session");
        let mut parsed = RuleSet::new();
        parsed.add_list(RuleList::Allow, allow, &source)?;
        parsed.add_list(RuleList::Deny, deny, &source)?;
        let mut state = self.write_state();
        let mut context = (*state.context).clone();
        for rule in parsed.rules() {
            context.rules.push(rule.clone());
            state.base_rules.push(rule.clone());
        }
        state.context = Arc::new(context);
        Ok(())
    }

    /// Allows calls matching `rules` until [`revoke_scoped`](Self::revoke_scoped) is called with
    /// the same `label` (an activated skill's `allowed-tools`, for as long as the skill runs).
    /// Not listed as approvals. All-or-nothing: when a rule does not parse, nothing is added.
    pub fn grant_scoped(&self, label: &str, rules: &[String]) -> Result<(), Vec<RuleParseError>> {
        let mut parsed = RuleSet::new();
        parsed.add_list(RuleList::Allow, rules, &RuleSource::new(label))?;
        let mut state = self.write_state();
        let mut context = (*state.context).clone();
        for rule in parsed.rules() {
            context.rules.push(rule.clone());
        }
        state.context = Arc::new(context);
        Ok(())
    }

    /// Removes the rules [`grant_scoped`](Self::grant_scoped) added under `label`.
    pub fn revoke_scoped(&self, label: &str) {
        let mut state = self.write_state();
        let mut context = (*state.context).clone();
        context.rules.retain(|rule| rule.source().label != label);
        state.context = Arc::new(context);
    }

    /// Forgets the rules added during the session (rules saved to settings files come back with
    /// the next session that loads them).
    pub fn clear_session_rules(&self) {
        let mut state = self.write_state();
        let mut context = (*state.context).clone();
        context.rules = state.base_rules.clone();
        state.context = Arc::new(context);
        state.added.clear();
    }

    /// Where "allow always" may save rules.
    pub fn settings_targets(&self) -> &[SettingsTarget] {
        &self.inner.targets
    }

    /// What the rules and mode say about a call (no hooks, no handler), with symbolic links
    /// resolved.
    pub fn evaluate(&self, tool: &str, input: &Value) -> PermissionDecision {
        self.evaluate_in(&self.context_arc(), tool, input)
    }

    /// Called by the session when a run starts: a hook's `continue: false` cancels `cancel`.
    pub(crate) fn begin_run(&self, cancel: CancellationToken) {
        let mut run = self.lock_run();
        run.cancel = Some(cancel);
        run.stopped = None;
        drop(run);
        self.inner
            .in_flight
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
        self.inner
            .pre_context
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }

    /// Called by the session when a run ends; returns the stop request a hook made, if any.
    pub(crate) fn end_run(&self) -> Option<StopRequest> {
        let mut run = self.lock_run();
        run.cancel = None;
        run.stopped.take()
    }

    /// True when a hook asked to stop the agent during the current run.
    pub(crate) fn stop_requested(&self) -> bool {
        self.lock_run().stopped.is_some()
    }

    /// Records a hook's `continue: false`, reports it and cancels the current run.
    pub(crate) fn request_stop(&self, event: HookEvent, reason: Option<String>) {
        let mut run = self.lock_run();
        if run.stopped.is_none() {
            run.stopped = Some(StopRequest {
                event,
                reason: reason.clone(),
            });
            drop(run);
            self.inner
                .events
                .emit(SessionEvent::AgentStopped { event, reason });
            if let Some(cancel) = &self.lock_run().cancel {
                cancel.cancel();
            }
        }
    }

    /// The hook input fields every event carries, for this session now.
    pub(crate) fn hook_common(&self, cwd: &std::path::Path) -> HookCommon {
        let mut common = HookCommon::new(&self.inner.session_id, cwd.to_string_lossy())
            .with_permission_mode(self.permission_mode().as_str());
        common.transcript_path = self.inner.transcript_path.clone();
        match &self.inner.agent {
            Some((id, kind)) => common.with_agent(id, kind),
            None => common,
        }
    }

    fn context_arc(&self) -> Arc<PermissionContext> {
        Arc::clone(&self.read_state().context)
    }

    fn read_state(&self) -> std::sync::RwLockReadGuard<'_, State> {
        self.inner
            .state
            .read()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn write_state(&self) -> std::sync::RwLockWriteGuard<'_, State> {
        self.inner
            .state
            .write()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn lock_run(&self) -> std::sync::MutexGuard<'_, RunControl> {
        self.inner
            .run
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn run_cancel(&self) -> CancellationToken {
        self.lock_run().cancel.clone().unwrap_or_default()
    }

    fn update_context(&self, change: impl FnOnce(&mut PermissionContext)) {
        let mut state = self.write_state();
        let mut context = (*state.context).clone();
        change(&mut context);
        state.context = Arc::new(context);
    }

    fn add_rules(&self, rules: &[String], source: &RuleSource) -> Result<(), Vec<RuleParseError>> {
        let mut parsed = RuleSet::new();
        parsed.add_list(RuleList::Allow, rules, source)?;
        let mut state = self.write_state();
        let mut context = (*state.context).clone();
        for rule in parsed.rules() {
            context.rules.push(rule.clone());
        }
        state.context = Arc::new(context);
        for rule in rules {
            if !state.added.contains(rule) {
                state.added.push(rule.clone());
            }
        }
        Ok(())
    }

    fn evaluate_in(
        &self,
        context: &PermissionContext,
        tool: &str,
        input: &Value,
    ) -> PermissionDecision {
        evaluate_permission_with(tool, input, context, self.inner.resolver.as_ref())
    }

    fn cwd(&self) -> PathBuf {
        self.context_arc().cwd.clone()
    }

    fn common(&self) -> HookCommon {
        self.hook_common(&self.cwd())
    }

    /// The runner, when some hook is configured for `event`.
    fn hooks_for(&self, event: HookEvent) -> Option<&Arc<HookRunner>> {
        self.inner.hooks.as_ref().filter(|h| h.has_hooks(event))
    }

    async fn run_hooks(
        &self,
        runner: &HookRunner,
        input: &HookInput,
        cancel: &CancellationToken,
    ) -> HookOutcome {
        let outcome = runner.run(input, cancel).await;
        self.inner.events.hook_outcome(&outcome);
        if let Some(stop) = &outcome.stop {
            self.request_stop(outcome.event, stop.reason.clone());
        }
        outcome
    }

    /// Steps 1–4 for one call.
    async fn decide(&self, call: &GateCall, cancel: &CancellationToken) -> GateDecision {
        let context = self.context_arc();
        let mut input = call.input.clone();
        let mut rewritten = false;

        // 1. Deny rules, before any hook runs.
        let mut decision = self.evaluate_in(&context, &call.name, &input);
        if denied_by_rule(&decision) {
            return deny(&call.name, &decision.reason);
        }

        // 2. PreToolUse hooks.
        let mut hook_decision = None;
        let mut hook_reason = None;
        if let Some(runner) = self.hooks_for(HookEvent::PreToolUse) {
            let hook_input = HookInput::pre_tool_use(
                self.common(),
                &call.name,
                input.clone(),
                &call.tool_use_id,
            );
            let outcome = self.run_hooks(runner, &hook_input, cancel).await;
            if let Some(stop) = &outcome.stop {
                return stopped(HookEvent::PreToolUse, stop.reason.as_deref());
            }
            if cancel.is_cancelled() {
                return GateDecision::Deny {
                    message: INTERRUPTED_MESSAGE.into(),
                };
            }
            if outcome.permission_decision == Some(HookPermission::Deny) {
                let reason = outcome
                    .block
                    .as_ref()
                    .map(|b| b.reason.clone())
                    .or(outcome.permission_decision_reason.clone())
                    .filter(|r| !r.trim().is_empty())
                    .unwrap_or_else(|| "no reason given".into());
                return GateDecision::Deny {
                    message: format!(
                        "A PreToolUse hook blocked this {} call: {reason}",
                        call.name
                    ),
                };
            }
            if let Some(updated) = outcome.updated_input.clone() {
                if updated.is_object() {
                    input = updated;
                    rewritten = true;
                    decision = self.evaluate_in(&context, &call.name, &input);
                    if denied_by_rule(&decision) {
                        return deny(&call.name, &decision.reason);
                    }
                } else {
                    self.inner.events.emit(SessionEvent::Warning {
                        source: "PreToolUse hook".into(),
                        message: format!(
                            "updatedInput for {} is not a JSON object and was ignored",
                            call.name
                        ),
                    });
                }
            }
            if let Some(context) = outcome.context_text() {
                self.inner
                    .pre_context
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .insert(call.tool_use_id.clone(), context);
            }
            hook_decision = outcome.permission_decision;
            hook_reason = outcome.permission_decision_reason;
        }

        // 3. Rules and mode, adjusted by the hooks' decision.
        let verdict = match hook_decision {
            Some(HookPermission::Allow) => {
                self.after_hook_allow(&context, &call.name, &input, decision)
            }
            Some(HookPermission::Ask | HookPermission::Defer) => {
                after_hook_ask(&context, decision, hook_reason.as_deref())
            }
            Some(HookPermission::Deny) | None => Verdict { decision },
        };
        match verdict.decision.decision {
            Decision::Allow => allow(input, rewritten),
            Decision::Deny => deny(&call.name, &verdict.decision.reason),
            // 4. Ask.
            Decision::Ask => {
                self.ask(call, input, rewritten, verdict.decision, cancel)
                    .await
            }
        }
    }

    /// A hook said allow: only deny rules, ask rules and sensitive paths still count. The call is
    /// evaluated as in `default` mode so the mode's own verdict (plan's denial, the default
    /// "needs approval") does not hide an ask rule behind it.
    fn after_hook_allow(
        &self,
        context: &PermissionContext,
        tool: &str,
        input: &Value,
        decision: PermissionDecision,
    ) -> Verdict {
        let underlying = if context.mode == PermissionMode::Default {
            decision
        } else {
            let mut neutral = context.clone();
            neutral.mode = PermissionMode::Default;
            self.evaluate_in(&neutral, tool, input)
        };
        let still_asks = underlying.decision == Decision::Ask
            && (asked_by_rule(&underlying) || underlying.basis == DecisionBasis::SensitivePath);
        if denied_by_rule(&underlying) {
            Verdict {
                decision: underlying,
            }
        } else if still_asks && context.mode == PermissionMode::DontAsk {
            Verdict {
                decision: PermissionDecision {
                    decision: Decision::Deny,
                    basis: DecisionBasis::DontAsk,
                    reason: format!(
                        "dontAsk mode denies anything that is not pre-approved, and a PreToolUse \
                         hook's approval does not override this: {}",
                        underlying.reason
                    ),
                    ..underlying
                },
            }
        } else if still_asks {
            Verdict {
                decision: underlying,
            }
        } else {
            Verdict {
                decision: PermissionDecision {
                    decision: Decision::Allow,
                    reason: "a PreToolUse hook approved the call".into(),
                    suggested_rules: Vec::new(),
                    ..underlying
                },
            }
        }
    }

    /// Step 4: PermissionRequest hooks, the Notification hook, then the handler.
    async fn ask(
        &self,
        call: &GateCall,
        mut input: Value,
        mut rewritten: bool,
        decision: PermissionDecision,
        cancel: &CancellationToken,
    ) -> GateDecision {
        if cancel.is_cancelled() {
            return GateDecision::Deny {
                message: INTERRUPTED_MESSAGE.into(),
            };
        }
        if let Some(runner) = self.hooks_for(HookEvent::PermissionRequest) {
            let hook_input = HookInput::new(
                self.common(),
                HookEventInput::PermissionRequest(PermissionRequestInput {
                    tool_name: call.name.clone(),
                    tool_input: input.clone(),
                    tool_use_id: Some(call.tool_use_id.clone()),
                    permission_suggestions: permission_suggestions(&decision.suggested_rules),
                }),
            );
            let outcome = self.run_hooks(runner, &hook_input, cancel).await;
            if let Some(stop) = &outcome.stop {
                return stopped(HookEvent::PermissionRequest, stop.reason.as_deref());
            }
            if cancel.is_cancelled() {
                return GateDecision::Deny {
                    message: INTERRUPTED_MESSAGE.into(),
                };
            }
            if let Some(answer) = outcome.permission_request {
                match answer.behavior {
                    PermissionBehavior::Allow => {
                        if let Some(updated) = answer.updated_input.filter(Value::is_object) {
                            let context = self.context_arc();
                            let check = self.evaluate_in(&context, &call.name, &updated);
                            if denied_by_rule(&check) {
                                return deny(&call.name, &check.reason);
                            }
                            input = updated;
                            rewritten = true;
                        }
                        self.apply_permission_updates(&answer.updated_permissions)
                            .await;
                        return allow(input, rewritten);
                    }
                    PermissionBehavior::Deny => {
                        let message = answer
                            .message
                            .filter(|m| !m.trim().is_empty())
                            .unwrap_or_else(|| {
                                format!("A PermissionRequest hook denied this {} call.", call.name)
                            });
                        if answer.interrupt {
                            self.request_stop(HookEvent::PermissionRequest, Some(message.clone()));
                        }
                        return GateDecision::Deny { message };
                    }
                }
            }
        }
        self.ask_handler(call, input, rewritten, decision, cancel)
            .await
    }

    /// Fires the Notification hook for a permission prompt without waiting for it: a slow
    /// notifier must not delay the prompt.
    fn notify_permission_prompt(&self, tool: &str) {
        let Some(runner) = self.hooks_for(HookEvent::Notification).cloned() else {
            return;
        };
        let input = HookInput::new(
            self.common(),
            HookEventInput::Notification(NotificationInput {
                message: format!("robota needs your permission to use {tool}"),
                title: Some("Permission needed".into()),
                notification_type: "permission_prompt".into(),
            }),
        );
        let events = self.inner.events.clone();
        tokio::spawn(async move {
            // A notification is not part of the run: an abort does not cut it short (its own
            // timeout bounds it).
            let outcome = runner.run(&input, &CancellationToken::new()).await;
            events.hook_outcome(&outcome);
        });
    }

    async fn ask_handler(
        &self,
        call: &GateCall,
        input: Value,
        rewritten: bool,
        decision: PermissionDecision,
        cancel: &CancellationToken,
    ) -> GateDecision {
        let request_id = format!(
            "perm_{}",
            self.inner.next_request.fetch_add(1, Ordering::Relaxed)
        );
        let request = PermissionRequest {
            request_id: request_id.clone(),
            tool_name: call.name.clone(),
            input: input.clone(),
            tool_use_id: call.tool_use_id.clone(),
            reason: decision.reason.clone(),
            basis: decision.basis,
            suggested_rules: decision.suggested_rules.clone(),
            settings_targets: self.inner.targets.clone(),
            permission_mode: self.permission_mode(),
        };
        self.inner.events.emit(SessionEvent::PermissionRequest {
            request_id: request.request_id.clone(),
            tool_name: request.tool_name.clone(),
            input: request.input.clone(),
            tool_use_id: request.tool_use_id.clone(),
            reason: request.reason.clone(),
            basis: request.basis,
            suggested_rules: request.suggested_rules.clone(),
            settings_targets: request.settings_targets.clone(),
            permission_mode: request.permission_mode,
        });
        // From here on the request is resolved exactly once: by `resolve`, or by the guard's
        // drop when this future is abandoned (the engine stops waiting after an abort).
        let pending = Pending {
            events: self.inner.events.clone(),
            request_id,
            tool_name: call.name.clone(),
            tool_use_id: call.tool_use_id.clone(),
            done: false,
        };
        let Some(handler) = self.inner.handler.clone() else {
            // Nobody is asked, so nobody is notified either.
            let message = no_handler_message(&call.name, &decision);
            pending.resolve(
                PermissionResolution::Denied {
                    message: message.clone(),
                },
                ResolvedBy::NoHandler,
            );
            return GateDecision::Deny { message };
        };
        self.notify_permission_prompt(&call.name);
        let answer = tokio::select! {
            biased;
            () = cancel.cancelled() => None,
            answer = AssertUnwindSafe(handler.request_permission(request.clone(), cancel.clone())).catch_unwind() => Some(answer),
        };
        let response = match answer {
            None => {
                pending.resolve(PermissionResolution::Cancelled, ResolvedBy::Abort);
                return GateDecision::Deny {
                    message: INTERRUPTED_MESSAGE.into(),
                };
            }
            Some(Err(_)) => {
                let message = format!(
                    "The permission handler failed while deciding this {} call, so it was not run.",
                    call.name
                );
                pending.resolve(
                    PermissionResolution::Denied {
                        message: message.clone(),
                    },
                    ResolvedBy::Handler,
                );
                return GateDecision::Deny { message };
            }
            Some(Ok(_)) if cancel.is_cancelled() => {
                // Answered as the user aborted: the engine will not start the call anyway.
                pending.resolve(PermissionResolution::Cancelled, ResolvedBy::Abort);
                return GateDecision::Deny {
                    message: INTERRUPTED_MESSAGE.into(),
                };
            }
            Some(Ok(response)) => response,
        };
        let suggested = &request.suggested_rules;
        let (mut input, mut rewritten) = (input, rewritten);
        let grant = match response {
            PermissionResponse::AllowOnce => Grant::Once,
            PermissionResponse::AllowSession { rules } => Grant::Session(rules),
            PermissionResponse::AllowAlways { rules, destination } => {
                Grant::Always(rules, destination)
            }
            PermissionResponse::AllowWithInput {
                input: updated,
                rules,
                destination,
            } => {
                // Checked against the deny rules like a hook's `updatedInput`.
                let refusal = if !updated.is_object() {
                    Some(format!(
                        "The permission handler allowed this {} call with an input that is not \
                         a JSON object, so it was not run.",
                        call.name
                    ))
                } else {
                    let check = self.evaluate_in(&self.context_arc(), &call.name, &updated);
                    denied_by_rule(&check).then(|| {
                        format!(
                            "Permission to use {} was denied: {}",
                            call.name, check.reason
                        )
                    })
                };
                if let Some(message) = refusal {
                    pending.resolve(
                        PermissionResolution::Denied {
                            message: message.clone(),
                        },
                        ResolvedBy::Handler,
                    );
                    return GateDecision::Deny { message };
                }
                input = updated;
                rewritten = true;
                match (rules.is_empty(), destination) {
                    (true, _) => Grant::Once,
                    (false, None) => Grant::Session(rules),
                    (false, Some(destination)) => Grant::Always(rules, destination),
                }
            }
            PermissionResponse::Deny { message } => {
                let message = if message.trim().is_empty() {
                    format!("The user denied permission to use {}.", call.name)
                } else {
                    format!("The user denied permission to use {}: {message}", call.name)
                };
                pending.resolve(
                    PermissionResolution::Denied {
                        message: message.clone(),
                    },
                    ResolvedBy::Handler,
                );
                return GateDecision::Deny { message };
            }
        };
        match grant {
            Grant::Once => {
                pending.resolve(
                    allowed(AllowScope::Once, Vec::new(), None, None),
                    ResolvedBy::Handler,
                );
                allow(input, rewritten)
            }
            Grant::Session(rules) => {
                let rules = if rules.is_empty() {
                    suggested.clone()
                } else {
                    rules
                };
                let resolution = if rules.is_empty() {
                    allowed(
                        AllowScope::Once,
                        Vec::new(),
                        None,
                        Some(no_rule_note(&call.name)),
                    )
                } else {
                    match self.allow_for_session(&rules) {
                        Ok(()) => allowed(AllowScope::Session, rules, None, None),
                        Err(errors) => allowed(
                            AllowScope::Once,
                            Vec::new(),
                            None,
                            Some(rule_errors(&errors)),
                        ),
                    }
                };
                pending.resolve(resolution, ResolvedBy::Handler);
                allow(input, rewritten)
            }
            Grant::Always(rules, destination) => {
                let rules = if rules.is_empty() {
                    suggested.clone()
                } else {
                    rules
                };
                let resolution = self.allow_always(&call.name, rules, destination).await;
                pending.resolve(resolution, ResolvedBy::Handler);
                allow(input, rewritten)
            }
        }
    }

    /// Saves `rules` to the destination's settings file and allows them in this session.
    async fn allow_always(
        &self,
        tool: &str,
        rules: Vec<String>,
        destination: SettingsDestination,
    ) -> PermissionResolution {
        if rules.is_empty() {
            return allowed(AllowScope::Once, Vec::new(), None, Some(no_rule_note(tool)));
        }
        // Check the rules before writing: a rule the next session cannot parse would make that
        // session refuse to start.
        let mut check = RuleSet::new();
        if let Err(errors) = check.add_list(RuleList::Allow, &rules, &RuleSource::new("check")) {
            return allowed(
                AllowScope::Once,
                Vec::new(),
                None,
                Some(rule_errors(&errors)),
            );
        }
        let Some(target) = self
            .inner
            .targets
            .iter()
            .find(|t| t.destination == destination)
            .cloned()
        else {
            let error = format!(
                "there is no {destination} file to save to (the session has no home directory), \
                 so the rules hold for this session only"
            );
            let _ = self.allow_for_session(&rules);
            return allowed(AllowScope::Session, rules, None, Some(error));
        };
        let path = target.path.clone();
        let to_write = rules.clone();
        let written = tokio::task::spawn_blocking(move || {
            add_permission_rules(&path, RuleList::Allow, &to_write).map_err(|e| e.to_string())
        })
        .await
        .unwrap_or_else(|e| Err(format!("the settings writer failed: {e}")));
        match written {
            Ok(_) => {
                let source = RuleSource::settings_file(
                    destination.as_str(),
                    &target.path,
                    settings_base_dir(&target.path),
                );
                let _ = self.add_rules(&rules, &source);
                allowed(AllowScope::Always, rules, Some(target.path), None)
            }
            Err(message) => {
                self.inner.events.emit(SessionEvent::SettingsWriteFailed {
                    file: target.path.clone(),
                    message: message.clone(),
                });
                let _ = self.allow_for_session(&rules);
                allowed(AllowScope::Session, rules, None, Some(message))
            }
        }
    }

    /// Applies a PermissionRequest hook's `updatedPermissions` (Claude Code `PermissionUpdate`
    /// objects): `addRules` with allow behaviour and `setMode`.
    async fn apply_permission_updates(&self, updates: &[Value]) {
        for update in updates {
            let kind = update.get("type").and_then(Value::as_str).unwrap_or("");
            match kind {
                "addRules" if update.get("behavior").and_then(Value::as_str) == Some("allow") => {
                    let rules = update
                        .get("rules")
                        .and_then(Value::as_array)
                        .map(|rules| {
                            rules
                                .iter()
                                .filter_map(rule_from_update)
                                .collect::<Vec<_>>()
                        })
                        .unwrap_or_default();
                    let destination = match update.get("destination").and_then(Value::as_str) {
                        Some("localSettings") => Some(SettingsDestination::LocalSettings),
                        Some("projectSettings") => Some(SettingsDestination::ProjectSettings),
                        Some("userSettings") => Some(SettingsDestination::UserSettings),
                        _ => None,
                    };
                    let outcome = match destination {
                        Some(destination) => {
                            match self.allow_always("the tool", rules, destination).await {
                                PermissionResolution::Allowed { error: Some(e), .. } => Err(e),
                                _ => Ok(()),
                            }
                        }
                        None => self.allow_for_session(&rules).map_err(|e| rule_errors(&e)),
                    };
                    if let Err(message) = outcome {
                        self.warn_update(update, &message);
                    }
                }
                "setMode" => match update
                    .get("mode")
                    .and_then(Value::as_str)
                    .map(str::parse::<PermissionMode>)
                {
                    Some(Ok(mode)) => self.set_permission_mode(mode),
                    Some(Err(e)) => self.warn_update(update, &e.to_string()),
                    None => self.warn_update(update, "`mode` is missing"),
                },
                _ => self.warn_update(update, "this kind of permission update is not supported"),
            }
        }
    }

    fn take_pre_context(&self, tool_use_id: &str) -> Option<String> {
        self.inner
            .pre_context
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(tool_use_id)
    }

    fn warn_update(&self, update: &Value, problem: &str) {
        self.inner.events.emit(SessionEvent::Warning {
            source: "PermissionRequest hook".into(),
            message: format!("updatedPermissions entry {update} was not applied: {problem}"),
        });
    }
}

#[async_trait]
impl ToolCallGate for PermissionEnforcer {
    async fn before_call(&self, call: &GateCall, cancel: &CancellationToken) -> GateDecision {
        let mut decision = self.decide(call, cancel).await;
        if let GateDecision::Deny { message } = &mut decision {
            if let Some(context) = self.take_pre_context(&call.tool_use_id) {
                message.push_str(&format!("\n\n[PreToolUse hook context]\n{context}"));
            }
        }
        let effective = match &decision {
            GateDecision::Allow => Some(call.input.clone()),
            GateDecision::AllowWithInput { input } => Some(input.clone()),
            GateDecision::Deny { .. } => None,
        };
        if let Some(input) = effective {
            self.inner
                .in_flight
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(call.tool_use_id.clone(), (input, Instant::now()));
        }
        decision
    }

    async fn after_call(&self, call: &GateCall, mut output: ToolOutput) -> ToolOutput {
        let (input, started) = self
            .inner
            .in_flight
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&call.tool_use_id)
            .map_or((call.input.clone(), None), |(input, at)| (input, Some(at)));
        let duration_ms =
            started.map(|at| u64::try_from(at.elapsed().as_millis()).unwrap_or(u64::MAX));
        let pre_context = self.take_pre_context(&call.tool_use_id);
        let cancel = self.run_cancel();
        let (event, payload) = if output.is_error {
            (
                HookEvent::PostToolUseFailure,
                HookEventInput::PostToolUseFailure(PostToolUseFailureInput {
                    tool_name: call.name.clone(),
                    tool_input: input,
                    tool_use_id: call.tool_use_id.clone(),
                    error: output.content.clone(),
                    is_interrupt: cancel.is_cancelled(),
                    duration_ms,
                }),
            )
        } else {
            let tool_input = input;
            (
                HookEvent::PostToolUse,
                HookEventInput::PostToolUse(PostToolUseInput {
                    tool_name: call.name.clone(),
                    tool_input: tool_input.clone(),
                    tool_use_id: call.tool_use_id.clone(),
                    tool_response: crate::hooks::compat::hook_tool_response(
                        &call.name,
                        &tool_input,
                        &output.response,
                    ),
                    duration_ms,
                }),
            )
        };
        let Some(runner) = self.hooks_for(event) else {
            return with_pre_context(output, pre_context);
        };
        let outcome = self
            .run_hooks(runner, &HookInput::new(self.common(), payload), &cancel)
            .await;
        if let Some(updated) = outcome.updated_tool_output.clone() {
            output.content = match &updated {
                Value::String(text) => text.clone(),
                other => serde_json::to_string_pretty(other).unwrap_or_default(),
            };
            output.response = updated;
        }
        if let Some(block) = &outcome.block {
            output
                .content
                .push_str(&format!("\n\n[{event} hook] {}", block.reason));
        }
        if let Some(context) = outcome.context_text() {
            output
                .content
                .push_str(&format!("\n\n[{event} hook context]\n{context}"));
        }
        with_pre_context(output, pre_context)
    }
}

/// Resolves a permission request exactly once: explicitly, or as cancelled when dropped
/// unresolved (the engine abandoned the check after an abort).
struct Pending {
    events: EventSink,
    request_id: String,
    tool_name: String,
    tool_use_id: String,
    done: bool,
}

impl Pending {
    fn resolve(mut self, resolution: PermissionResolution, resolved_by: ResolvedBy) {
        self.emit(resolution, resolved_by);
    }

    fn emit(&mut self, resolution: PermissionResolution, resolved_by: ResolvedBy) {
        if self.done {
            return;
        }
        self.done = true;
        self.events.emit(SessionEvent::PermissionResolved {
            request_id: self.request_id.clone(),
            tool_name: self.tool_name.clone(),
            tool_use_id: self.tool_use_id.clone(),
            resolution,
            resolved_by,
        });
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        self.emit(PermissionResolution::Cancelled, ResolvedBy::Abort);
    }
}

/// Appends a PreToolUse hook's `additionalContext` to what the model sees of the result.
fn with_pre_context(mut output: ToolOutput, context: Option<String>) -> ToolOutput {
    if let Some(context) = context {
        output
            .content
            .push_str(&format!("\n\n[PreToolUse hook context]\n{context}"));
    }
    output
}

fn allowed(
    scope: AllowScope,
    rules: Vec<String>,
    settings_file: Option<PathBuf>,
    error: Option<String>,
) -> PermissionResolution {
    PermissionResolution::Allowed {
        scope,
        rules,
        settings_file,
        error,
    }
}

/// What an allowing permission answer grants: this call, or also its rules for the session
/// (empty: the request's suggested rules), or also saved to a settings file.
enum Grant {
    Once,
    Session(Vec<String>),
    Always(Vec<String>, SettingsDestination),
}

fn allow(input: Value, rewritten: bool) -> GateDecision {
    if rewritten {
        GateDecision::AllowWithInput { input }
    } else {
        GateDecision::Allow
    }
}

fn deny(tool: &str, reason: &str) -> GateDecision {
    GateDecision::Deny {
        message: format!("Permission to use {tool} was denied: {reason}"),
    }
}

fn stopped(event: HookEvent, reason: Option<&str>) -> GateDecision {
    GateDecision::Deny {
        message: match reason {
            Some(reason) if !reason.trim().is_empty() => {
                format!("The call was not run: a {event} hook stopped the agent: {reason}")
            }
            _ => format!("The call was not run: a {event} hook stopped the agent."),
        },
    }
}

fn denied_by_rule(decision: &PermissionDecision) -> bool {
    decision.decision == Decision::Deny
        && decision.basis == DecisionBasis::Rule
        && decision
            .matched_rule
            .as_ref()
            .is_some_and(|rule| rule.list == RuleList::Deny)
}

fn asked_by_rule(decision: &PermissionDecision) -> bool {
    decision.basis == DecisionBasis::Rule
        && decision
            .matched_rule
            .as_ref()
            .is_some_and(|rule| rule.list == RuleList::Ask)
}

/// A hook said ask: anything that denies still denies; `dontAsk` turns the ask into a denial;
/// otherwise the user is asked, with the hook's reason.
fn after_hook_ask(
    context: &PermissionContext,
    decision: PermissionDecision,
    hook_reason: Option<&str>,
) -> Verdict {
    if decision.decision == Decision::Deny {
        return Verdict { decision };
    }
    let why = match hook_reason {
        Some(reason) if !reason.trim().is_empty() => {
            format!("a PreToolUse hook asked for approval: {reason}")
        }
        _ => "a PreToolUse hook asked for approval".to_string(),
    };
    if context.mode == PermissionMode::DontAsk {
        return Verdict {
            decision: PermissionDecision {
                decision: Decision::Deny,
                basis: DecisionBasis::DontAsk,
                reason: format!("dontAsk mode denies anything that needs approval, and {why}"),
                suggested_rules: Vec::new(),
                ..decision
            },
        };
    }
    Verdict {
        decision: PermissionDecision {
            decision: Decision::Ask,
            reason: why,
            ..decision
        },
    }
}

/// What the model is told when a call needs approval and nobody can give it.
fn no_handler_message(tool: &str, decision: &PermissionDecision) -> String {
    let how = match decision.suggested_rules.first() {
        Some(rule) => format!(
            "add an allow rule such as `{rule}` to `permissions.allow` in .claude/settings.json \
             or .claude/settings.local.json"
        ),
        None => format!(
            "add an allow rule for {tool} to `permissions.allow` in .claude/settings.json or \
             .claude/settings.local.json"
        ),
    };
    format!(
        "Permission to use {tool} was denied: it needs approval ({}) and this session has no \
         permission handler to ask. To allow it, {how}, give the session a permission handler, \
         or use a permission mode that allows it (acceptEdits for file edits, bypassPermissions).",
        decision.reason
    )
}

fn no_rule_note(tool: &str) -> String {
    format!(
        "no permission rule describes this {tool} call (nothing was suggested), so it was allowed \
         once and nothing was remembered"
    )
}

fn rule_errors(errors: &[RuleParseError]) -> String {
    errors
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// The suggested rules as Claude Code `PermissionUpdate` objects, for PermissionRequest hooks.
fn permission_suggestions(rules: &[String]) -> Vec<Value> {
    if rules.is_empty() {
        return Vec::new();
    }
    let rules: Vec<Value> = rules
        .iter()
        .map(|rule| match rule.split_once('(') {
            Some((tool, rest)) if rest.ends_with(')') => {
                json!({"toolName": tool, "ruleContent": &rest[..rest.len() - 1]})
            }
            _ => json!({"toolName": rule}),
        })
        .collect();
    vec![json!({
        "type": "addRules",
        "rules": rules,
        "behavior": "allow",
        "destination": "localSettings",
    })]
}

/// `{toolName, ruleContent?}` → `Tool(content)`.
fn rule_from_update(value: &Value) -> Option<String> {
    let tool = value.get("toolName").and_then(Value::as_str)?;
    Some(match value.get("ruleContent").and_then(Value::as_str) {
        Some(content) => format!("{tool}({content})"),
        None => tool.to_string(),
    })
}

/// The anchor of `/path` rules saved to a settings file: the directory holding `.claude/`.
fn settings_base_dir(file: &std::path::Path) -> PathBuf {
    file.parent()
        .and_then(std::path::Path::parent)
        .map(std::path::Path::to_path_buf)
        .unwrap_or_default()
}
