//! The hook runner: for one event, picks the matching handlers (settings-defined and host
//! callbacks), runs them all in parallel with their timeouts, and aggregates the results into one
//! [`HookOutcome`]. Failures never escape as panics or errors: each comes back in the outcome.
//!
//! Selection, per Claude Code: groups in configuration (layer) order; a group applies when its
//! matcher matches the event's matcher target (events without matcher support run every group);
//! a handler with an `if` rule runs only when the [`HookConditionEvaluator`] says the tool call
//! matches; identical handlers (same type and command/url/prompt, args, shell, timeout, `if` …)
//! run once per event even when several layers or groups define them.
//!
//! Reading answers, and failing closed: stdout (or an HTTP body) is kept up to
//! [`HookRunnerOptions::output_limit`] (1 MiB). A JSON answer cut at that limit is never parsed.
//! On the events whose hooks guard an action — PreToolUse (the tool call) and UserPromptSubmit
//! (the prompt) — an answer that cannot be read (cut at the limit, malformed JSON, an unknown
//! decision, a prompt hook's model not answering in JSON) **blocks**, with a reason naming the
//! hook and the problem: the unread answer may have been "block", and must never become an
//! allow. On other events it is a non-blocking [`HookFailure`] (`output_too_large`,
//! `malformed_output`). Exit code 2 blocks whatever stdout holds.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::{Duration, Instant};

use futures::FutureExt;
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::callback::{HookCallback, HookCallbackResult, OnHookFailure};
use super::command::{self, CommandContext};
use super::config::{split_rule, ConfiguredHook, HandlerKind, HookOrigin, HooksConfig};
use super::event::{BlockEffect, HookEvent, HookInput};
use super::http;
use super::matcher::{Matcher, MatcherError};
use super::mcp_tool::{self, McpToolHookCaller};
use super::outcome::{
    cap_chars, Aggregator, HandlerReport, HandlerStatus, HandlerSummary, HandlerType, HookFailure,
    HookOutcome,
};
use super::output::HookOutput;
use super::prompt::{self, AgentHookExecutor};
use crate::process::ProcessGroups;
use crate::provider::Provider;

/// Default timeout of command, http and callback handlers.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);
/// Default timeout of command, http and callback handlers on UserPromptSubmit.
pub const USER_PROMPT_SUBMIT_TIMEOUT: Duration = Duration::from_secs(30);
/// Default timeout of prompt handlers.
pub const PROMPT_TIMEOUT: Duration = Duration::from_secs(30);
/// Default timeout of agent handlers.
pub const AGENT_TIMEOUT: Duration = Duration::from_secs(60);
/// Default shared budget of all SessionEnd hooks (raised to the highest per-hook timeout).
pub const SESSION_END_BUDGET: Duration = Duration::from_millis(1_500);
/// The most a SessionEnd budget is raised to.
pub const SESSION_END_BUDGET_MAX: Duration = Duration::from_secs(60);

/// The timeout a handler gets when it configures none (Claude Code's defaults).
pub fn default_timeout(event: HookEvent, kind: HandlerType) -> Duration {
    match kind {
        HandlerType::Prompt => PROMPT_TIMEOUT,
        HandlerType::Agent => AGENT_TIMEOUT,
        HandlerType::Command | HandlerType::Http | HandlerType::McpTool | HandlerType::Callback => {
            if event == HookEvent::UserPromptSubmit {
                USER_PROMPT_SUBMIT_TIMEOUT
            } else {
                DEFAULT_TIMEOUT
            }
        }
    }
}

/// Decides a handler's `if` rule (`Bash(git *)`) for a tool call. The session plugs in the
/// permission engine's rule matcher so `if` means exactly what the same rule means in
/// `permissions.allow`.
pub trait HookConditionEvaluator: Send + Sync {
    /// True when the call in `input` matches `rule`. Claude Code fails open (runs the hook) when
    /// a Bash command cannot be parsed; implementations should too.
    fn matches(&self, rule: &str, input: &HookInput) -> bool;
}

/// The evaluator used when the host supplies none: compares the rule's tool name with the
/// call's (`*` matches any) and, failing open, does not check the specifier.
#[derive(Debug, Clone, Copy, Default)]
pub struct ToolNameCondition;

impl HookConditionEvaluator for ToolNameCondition {
    fn matches(&self, rule: &str, input: &HookInput) -> bool {
        let (tool, _specifier) = split_rule(rule);
        match input.tool_name() {
            Some(name) => tool == "*" || tool == name,
            None => true,
        }
    }
}

/// Picks the provider for a prompt/agent hook's `model`.
pub type ModelProviderResolver = Arc<dyn Fn(&str) -> Option<Arc<dyn Provider>> + Send + Sync>;

/// Told about every handler that ran, after its run (the session traces hooks this way).
pub trait HookObserver: Send + Sync {
    /// `report` is the handler's run for `event`; `matcher` is the matcher it was configured or
    /// registered under (empty when it had none).
    fn handler_ran(&self, event: HookEvent, matcher: &str, report: &HandlerReport);
}

/// How hooks run: project directory, environment, model access, limits.
#[derive(Clone)]
pub struct HookRunnerOptions {
    /// The project root: `CLAUDE_PROJECT_DIR` and `ROBOTA_PROJECT_DIR` of command hooks, and
    /// their working directory when the event's `cwd` does not exist.
    pub project_dir: PathBuf,
    /// Extra environment for command hooks (settings.json `env`), also the variables HTTP
    /// header interpolation can read (before the process environment).
    pub env: BTreeMap<String, String>,
    /// The provider prompt/agent hooks use (normally the session's).
    pub provider: Option<Arc<dyn Provider>>,
    /// Resolves a hook's `model` to a provider; when it is absent or returns `None`, `provider`
    /// answers (so a `model` the host cannot serve falls back to the session's model).
    pub provider_for_model: Option<ModelProviderResolver>,
    /// Decides `if` rules; [`ToolNameCondition`] when `None`.
    pub condition_evaluator: Option<Arc<dyn HookConditionEvaluator>>,
    /// Runs `agent` hooks with tools; without it they are a single model call like `prompt`
    /// hooks.
    pub agent_executor: Option<Arc<dyn AgentHookExecutor>>,
    /// Calls MCP tools for `mcp_tool` hooks (the session's MCP connections); without it those
    /// hooks fail (non-blocking) saying so.
    pub mcp_tool_caller: Option<Arc<dyn McpToolHookCaller>>,
    /// HTTP client for http hooks; one is built on first use when `None`.
    pub http_client: Option<reqwest::Client>,
    /// POSIX shell for command hooks; resolved from `$ROBOTA_SHELL`/`$SHELL` when `None`.
    pub shell: Option<PathBuf>,
    /// How long a timed-out or cancelled command's process group gets between SIGTERM and
    /// SIGKILL.
    pub kill_grace: Duration,
    /// Bytes of stdout, stderr or HTTP body kept per handler.
    pub output_limit: usize,
    /// Base budget shared by all SessionEnd hooks. Defaults to
    /// `CLAUDE_CODE_SESSIONEND_HOOKS_TIMEOUT_MS` when set, else 1.5 s.
    pub session_end_budget: Duration,
    /// The OS sandbox command hooks run in (`sandbox.hooks`); `None`: unsandboxed. Used only
    /// while the sandbox is active.
    pub sandbox: Option<Arc<crate::sandbox::Sandbox>>,
    /// The process groups command hooks join while they run (a session passes its own, so
    /// that its shutdown stops them); a fresh registry by default.
    pub processes: ProcessGroups,
    /// Told about every handler run; `None` (the default) costs nothing.
    pub observer: Option<Arc<dyn HookObserver>>,
}

impl std::fmt::Debug for HookRunnerOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HookRunnerOptions")
            .field("project_dir", &self.project_dir)
            .field("env", &self.env.keys().collect::<Vec<_>>())
            .field(
                "provider",
                &self.provider.as_ref().map(|p| p.name().to_string()),
            )
            .field("provider_for_model", &self.provider_for_model.is_some())
            .field("condition_evaluator", &self.condition_evaluator.is_some())
            .field("agent_executor", &self.agent_executor.is_some())
            .field("mcp_tool_caller", &self.mcp_tool_caller.is_some())
            .field("shell", &self.shell)
            .field("kill_grace", &self.kill_grace)
            .field("output_limit", &self.output_limit)
            .field("session_end_budget", &self.session_end_budget)
            .field("sandbox", &self.sandbox.is_some())
            .field("processes", &self.processes)
            .field("observer", &self.observer.is_some())
            .finish()
    }
}

impl HookRunnerOptions {
    /// Defaults for a project.
    pub fn new(project_dir: impl Into<PathBuf>) -> Self {
        let session_end_budget = std::env::var("CLAUDE_CODE_SESSIONEND_HOOKS_TIMEOUT_MS")
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map_or(SESSION_END_BUDGET, Duration::from_millis);
        HookRunnerOptions {
            project_dir: project_dir.into(),
            env: BTreeMap::new(),
            provider: None,
            provider_for_model: None,
            condition_evaluator: None,
            agent_executor: None,
            mcp_tool_caller: None,
            http_client: None,
            shell: None,
            kill_grace: Duration::from_secs(2),
            output_limit: 1024 * 1024,
            session_end_budget,
            sandbox: None,
            processes: ProcessGroups::new(),
            observer: None,
        }
    }

    /// Sets the provider for prompt/agent hooks.
    pub fn with_provider(mut self, provider: Arc<dyn Provider>) -> Self {
        self.provider = Some(provider);
        self
    }

    /// Adds environment variables for command hooks.
    pub fn with_env(
        mut self,
        env: impl IntoIterator<Item = (impl Into<String>, impl Into<String>)>,
    ) -> Self {
        self.env
            .extend(env.into_iter().map(|(k, v)| (k.into(), v.into())));
        self
    }

    /// Sets the `if` evaluator.
    pub fn with_condition_evaluator(mut self, evaluator: Arc<dyn HookConditionEvaluator>) -> Self {
        self.condition_evaluator = Some(evaluator);
        self
    }
}

/// Identifies a registered callback, for [`HookRunner::unregister_callback`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct CallbackId(pub u64);

#[derive(Clone)]
struct CallbackRegistration {
    id: CallbackId,
    event: HookEvent,
    matcher: Matcher,
    callback: Arc<dyn HookCallback>,
    timeout: Option<Duration>,
    on_failure: OnHookFailure,
}

/// The result of a background (`async`) command hook.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AsyncHookResult {
    /// The event it ran for.
    pub event: HookEvent,
    /// Its report; aggregate it with [`HookOutcome`] semantics if needed via
    /// [`HookRunner::outcome_of`].
    pub report: HandlerReport,
    /// True when the hook was `asyncRewake` and blocked (exit 2): the session should wake the
    /// agent with the reason.
    pub rewake: bool,
    /// The hook's `rewakeMessage`: what the agent is woken with, before the reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rewake_message: Option<String>,
    /// The hook's `rewakeSummary`: one line for the user about the wake-up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rewake_summary: Option<String>,
}

/// One handler picked for a run.
#[derive(Clone)]
enum Planned {
    /// A configured handler and the matcher of its group.
    Configured(ConfiguredHook, String),
    Callback(CallbackRegistration),
}

/// What an executor produced, before interpretation.
pub(crate) struct RawResult {
    pub exit_code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub reply: RawReply,
    /// Set when stdout (or the HTTP body) was longer than the output limit and was cut.
    pub stdout_overflow: Option<OutputOverflow>,
}

/// Output cut at the limit: what was kept cannot be trusted to be the hook's whole answer.
#[derive(Debug, Clone, Copy)]
pub(crate) struct OutputOverflow {
    /// Bytes the hook wrote, when known (a command's pipe is drained to the end; an HTTP body is
    /// not read past the limit).
    pub total_bytes: Option<u64>,
    /// The limit ([`HookRunnerOptions::output_limit`]).
    pub limit: usize,
}

impl RawResult {
    pub(crate) fn reply(reply: RawReply) -> Self {
        RawResult {
            exit_code: None,
            stdout: String::new(),
            stderr: String::new(),
            reply,
            stdout_overflow: None,
        }
    }
}

pub(crate) enum RawReply {
    /// Exit 0 / 2xx: `stdout` is JSON output when it starts with `{`, else plain text.
    Success,
    /// Plain text that must not be parsed as JSON (a callback's text).
    Text,
    /// Already-structured output.
    Output(Box<HookOutput>),
    /// Blocking; the reason, or `None` to take it from stderr (or the JSON reason).
    Block(Option<String>),
    /// A non-blocking failure.
    Failed(HookFailure),
    /// A failure that blocks: the hook guards the action and fails closed.
    FailedClosed {
        /// The block's reason: the hook, what went wrong, what was blocked.
        reason: String,
        /// What went wrong.
        failure: HookFailure,
    },
    /// The run was cancelled.
    Cancelled,
}

/// Runs hooks for a session. Cheap to share (`Arc<HookRunner>`); config and callbacks can be
/// replaced while sessions use it.
pub struct HookRunner {
    config: RwLock<Arc<HooksConfig>>,
    callbacks: RwLock<Vec<CallbackRegistration>>,
    options: HookRunnerOptions,
    next_callback_id: AtomicU64,
    once_done: Mutex<HashSet<String>>,
    http_client: Mutex<Option<reqwest::Client>>,
    async_tx: mpsc::UnboundedSender<AsyncHookResult>,
    async_rx: Mutex<Option<mpsc::UnboundedReceiver<AsyncHookResult>>>,
    background: CancellationToken,
    /// How many background hooks are still running.
    pending: Arc<tokio::sync::watch::Sender<usize>>,
}

impl std::fmt::Debug for HookRunner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HookRunner")
            .field("config", &self.config())
            .field("callbacks", &self.read_callbacks().len())
            .field("options", &self.options)
            .finish()
    }
}

impl Drop for HookRunner {
    fn drop(&mut self) {
        // Background hooks die with their runner (their process groups are killed).
        self.background.cancel();
    }
}

impl HookRunner {
    /// A runner for `config`.
    pub fn new(config: HooksConfig, options: HookRunnerOptions) -> Self {
        let (async_tx, async_rx) = mpsc::unbounded_channel();
        HookRunner {
            config: RwLock::new(Arc::new(config)),
            callbacks: RwLock::new(Vec::new()),
            http_client: Mutex::new(options.http_client.clone()),
            options,
            next_callback_id: AtomicU64::new(1),
            once_done: Mutex::new(HashSet::new()),
            async_tx,
            async_rx: Mutex::new(Some(async_rx)),
            background: CancellationToken::new(),
            pending: Arc::new(tokio::sync::watch::Sender::new(0)),
        }
    }

    /// The options.
    pub fn options(&self) -> &HookRunnerOptions {
        &self.options
    }

    /// The current config.
    pub fn config(&self) -> Arc<HooksConfig> {
        Arc::clone(&self.config.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// Replaces the config (e.g. after settings changed); runs in progress keep the old one.
    pub fn set_config(&self, config: HooksConfig) {
        *self.config.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(config);
    }

    fn read_callbacks(&self) -> std::sync::RwLockReadGuard<'_, Vec<CallbackRegistration>> {
        self.callbacks
            .read()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers an in-process callback for `event`, applying when `matcher` (Claude Code
    /// syntax) matches, with the event's default timeout.
    pub fn register_callback(
        &self,
        event: HookEvent,
        matcher: &str,
        callback: Arc<dyn HookCallback>,
    ) -> Result<CallbackId, MatcherError> {
        self.register_callback_with_timeout(event, matcher, callback, None)
    }

    /// As [`HookRunner::register_callback`], with a timeout. A callback that fails (times out,
    /// panics, reports an error) on PreToolUse or PermissionRequest blocks the tool call (as in
    /// the Claude Agent SDK); elsewhere a failure is non-blocking. See
    /// [`register_callback_with`](Self::register_callback_with) to choose.
    pub fn register_callback_with_timeout(
        &self,
        event: HookEvent,
        matcher: &str,
        callback: Arc<dyn HookCallback>,
        timeout: Option<Duration>,
    ) -> Result<CallbackId, MatcherError> {
        self.register_callback_with(event, matcher, callback, timeout, None)
    }

    /// As [`HookRunner::register_callback_with_timeout`], with the callback's failure policy
    /// ([`OnHookFailure`]; the event's default when `None`). `Block` on an event where nothing
    /// can be blocked (see [`OnHookFailure::can_block`]) behaves as `Allow`; sessions refuse it
    /// when they are created.
    pub fn register_callback_with(
        &self,
        event: HookEvent,
        matcher: &str,
        callback: Arc<dyn HookCallback>,
        timeout: Option<Duration>,
        on_failure: Option<OnHookFailure>,
    ) -> Result<CallbackId, MatcherError> {
        let on_failure = OnHookFailure::resolve(event, on_failure).unwrap_or(OnHookFailure::Allow);
        let matcher = if event == HookEvent::StopFailure {
            Matcher::exact_names(matcher)
        } else {
            Matcher::parse(matcher)?
        };
        let id = CallbackId(self.next_callback_id.fetch_add(1, Ordering::Relaxed));
        self.callbacks
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .push(CallbackRegistration {
                id,
                event,
                matcher,
                callback,
                timeout,
                on_failure,
            });
        Ok(id)
    }

    /// Removes a callback; false when it was not registered.
    pub fn unregister_callback(&self, id: CallbackId) -> bool {
        let mut callbacks = self
            .callbacks
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        let before = callbacks.len();
        callbacks.retain(|c| c.id != id);
        callbacks.len() != before
    }

    /// True when some handler or callback is configured for `event` (a cheap check before
    /// building the input).
    pub fn has_hooks(&self, event: HookEvent) -> bool {
        self.config()
            .groups(event)
            .iter()
            .any(|g| !g.hooks.is_empty())
            || self.read_callbacks().iter().any(|c| c.event == event)
    }

    /// The receiver of background (`async`) hook results. Returns `Some` once; the session
    /// drains it between turns.
    pub fn take_async_results(&self) -> Option<mpsc::UnboundedReceiver<AsyncHookResult>> {
        self.async_rx
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }

    /// How many background (`async` / `asyncRewake`) hooks are still running.
    pub fn pending_background(&self) -> usize {
        *self.pending.borrow()
    }

    /// Waits until every background hook started so far (and any they lead to) has finished and
    /// sent its result, or `timeout` passes; true when none is left. A headless run calls this
    /// before it exits so asynchronous Stop hooks can finish (and wake the agent).
    pub async fn wait_background(&self, timeout: Duration) -> bool {
        let mut rx = self.pending.subscribe();
        tokio::time::timeout(timeout, rx.wait_for(|n| *n == 0))
            .await
            .is_ok_and(|r| r.is_ok())
    }

    /// Cancels background hooks (their process groups are killed).
    pub fn shutdown(&self) {
        self.background.cancel();
    }

    /// Aggregates reports of `event` (e.g. an [`AsyncHookResult`]) as a run would.
    pub fn outcome_of(
        event: HookEvent,
        reports: impl IntoIterator<Item = HandlerReport>,
    ) -> HookOutcome {
        let mut aggregator = Aggregator::new(event);
        for report in reports {
            aggregator.add(report);
        }
        aggregator.finish()
    }

    /// The handlers that would run for `input`, in order, without running them (for a UI).
    pub fn plan(&self, input: &HookInput) -> Vec<HandlerSummary> {
        let plan = self.select(input, false);
        let timeouts = self.timeouts(input.event(), &plan);
        plan.iter()
            .zip(timeouts)
            .map(|(planned, timeout)| summarize(planned, timeout))
            .collect()
    }

    fn select(&self, input: &HookInput, consume_once: bool) -> Vec<Planned> {
        let event = input.event();
        let target = input.matcher_target();
        let config = self.config();
        let default_evaluator = ToolNameCondition;
        let evaluator: &dyn HookConditionEvaluator = self
            .options
            .condition_evaluator
            .as_deref()
            .unwrap_or(&default_evaluator);
        let mut seen: Vec<&super::config::HookHandlerConfig> = Vec::new();
        let mut plan = Vec::new();
        let mut once_done = self
            .once_done
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        for group in config.groups(event) {
            if event.supports_matcher() && !group.matcher.matches(target) {
                continue;
            }
            for hook in &group.hooks {
                let handler = &hook.handler;
                if let Some(rule) = &handler.condition {
                    if event.is_tool_event() && !evaluator.matches(rule, input) {
                        continue;
                    }
                }
                if seen.iter().any(|s| same_handler(s, handler)) {
                    continue;
                }
                seen.push(handler);
                if handler.once && hook.source.origin == HookOrigin::Skill {
                    let key = format!("{}#{}", hook.source, event);
                    if once_done.contains(&key) {
                        continue;
                    }
                    if consume_once {
                        once_done.insert(key);
                    }
                }
                plan.push(Planned::Configured(
                    hook.clone(),
                    group.matcher.as_str().to_string(),
                ));
            }
        }
        drop(once_done);
        let mut seen_callbacks: Vec<&Arc<dyn HookCallback>> = Vec::new();
        let callbacks = self.read_callbacks();
        for registration in callbacks.iter().filter(|c| c.event == event) {
            if event.supports_matcher() && !registration.matcher.matches(target) {
                continue;
            }
            if seen_callbacks
                .iter()
                .any(|c| Arc::ptr_eq(c, &registration.callback))
            {
                continue;
            }
            seen_callbacks.push(&registration.callback);
            plan.push(Planned::Callback(registration.clone()));
        }
        plan
    }

    /// Each planned handler's timeout; SessionEnd hooks share one budget.
    fn timeouts(&self, event: HookEvent, plan: &[Planned]) -> Vec<Duration> {
        let own: Vec<Option<Duration>> = plan.iter().map(configured_timeout).collect();
        if event != HookEvent::SessionEnd {
            return plan
                .iter()
                .zip(own)
                .map(|(p, t)| t.unwrap_or_else(|| default_timeout(event, handler_type(p))))
                .collect();
        }
        let highest = own.iter().flatten().max().copied().unwrap_or_default();
        let budget = self
            .options
            .session_end_budget
            .max(highest)
            .min(SESSION_END_BUDGET_MAX);
        own.into_iter()
            .map(|t| t.unwrap_or(budget).min(budget))
            .collect()
    }

    /// Runs every handler matching `input` in parallel and aggregates their results.
    /// Cancelling `cancel` stops them (command hooks' process groups are killed) and returns
    /// what finished, with `cancelled` set.
    pub async fn run(&self, input: &HookInput, cancel: &CancellationToken) -> HookOutcome {
        self.run_with_env(input, cancel, &[]).await
    }

    /// Like [`run`](Self::run), with extra environment variables for the command hooks of this
    /// run — the session passes `CLAUDE_ENV_FILE` to SessionStart and Setup hooks this way.
    pub async fn run_with_env(
        &self,
        input: &HookInput,
        cancel: &CancellationToken,
        extra_env: &[(String, String)],
    ) -> HookOutcome {
        let event = input.event();
        let plan = self.select(input, true);
        if plan.is_empty() {
            return HookOutcome::empty(event);
        }
        let timeouts = self.timeouts(event, &plan);
        let input_json = input.to_json();
        let runs = plan.iter().zip(timeouts).map(|(planned, timeout)| {
            self.run_one(planned, input, &input_json, timeout, cancel, extra_env)
        });
        let reports = futures::future::join_all(runs).await;
        if let Some(observer) = &self.options.observer {
            for (planned, report) in plan.iter().zip(&reports) {
                let matcher = match planned {
                    Planned::Configured(_, matcher) => matcher.as_str(),
                    Planned::Callback(registration) => registration.matcher.as_str(),
                };
                observer.handler_ran(event, matcher, report);
            }
        }
        Self::outcome_of(event, reports)
    }

    async fn run_one(
        &self,
        planned: &Planned,
        input: &HookInput,
        input_json: &str,
        timeout: Duration,
        cancel: &CancellationToken,
        extra_env: &[(String, String)],
    ) -> HandlerReport {
        let started = Instant::now();
        let summary = summarize(planned, timeout);
        if let Planned::Configured(hook, _) = planned {
            if let HandlerKind::Command(command) = &hook.handler.kind {
                if command.run_async || command.async_rewake {
                    self.spawn_background(hook.clone(), input, input_json, timeout, extra_env);
                    return report(
                        summary,
                        HandlerStatus::Background,
                        started,
                        RawResult::reply(RawReply::Success),
                    );
                }
            }
        }
        let execution =
            AssertUnwindSafe(self.execute(planned, input, input_json, timeout, cancel, extra_env))
                .catch_unwind()
                .await;
        let raw = execution.unwrap_or_else(|panic| {
            RawResult::reply(RawReply::Failed(HookFailure::Panicked {
                message: panic_message(panic.as_ref()),
            }))
        });
        interpret(input.event(), summary, raw, started)
    }

    async fn execute(
        &self,
        planned: &Planned,
        input: &HookInput,
        input_json: &str,
        timeout: Duration,
        cancel: &CancellationToken,
        extra_env: &[(String, String)],
    ) -> RawResult {
        match planned {
            Planned::Configured(hook, _) => match &hook.handler.kind {
                HandlerKind::Command(command) => {
                    let cwd = self.hook_cwd(input);
                    let mut ctx = self.command_context(&cwd);
                    ctx.env.extend(extra_env.iter().cloned());
                    command::run(command, input_json, &ctx, timeout, cancel).await
                }
                HandlerKind::Http(hook) => {
                    let client = match self.http_client() {
                        Ok(client) => client,
                        Err(failure) => return RawResult::reply(RawReply::Failed(failure)),
                    };
                    let env = self.interpolation_env();
                    http::run(
                        hook,
                        &client,
                        input_json,
                        &env,
                        timeout,
                        self.options.output_limit,
                        cancel,
                    )
                    .await
                }
                HandlerKind::Prompt(hook) => {
                    let provider = self.provider_for(hook.model.as_deref());
                    prompt::run(hook, provider, None, input_json, timeout, cancel).await
                }
                HandlerKind::Agent(hook) => {
                    let provider = self.provider_for(hook.model.as_deref());
                    let agent = self.options.agent_executor.as_ref();
                    prompt::run(hook, provider, agent, input_json, timeout, cancel).await
                }
                HandlerKind::McpTool(hook) => {
                    let caller = self.options.mcp_tool_caller.as_ref();
                    mcp_tool::run(hook, caller, input_json, timeout, cancel).await
                }
            },
            Planned::Callback(registration) => {
                run_callback(registration, input, timeout, cancel).await
            }
        }
    }

    fn provider_for(&self, model: Option<&str>) -> Option<Arc<dyn Provider>> {
        if let (Some(model), Some(resolve)) = (model, &self.options.provider_for_model) {
            if let Some(provider) = resolve(model) {
                return Some(provider);
            }
        }
        self.options.provider.clone()
    }

    fn http_client(&self) -> Result<reqwest::Client, HookFailure> {
        let mut slot = self
            .http_client
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(client) = slot.as_ref() {
            return Ok(client.clone());
        }
        let client = reqwest::Client::builder()
            .build()
            .map_err(|e| HookFailure::Http {
                message: format!("could not build the HTTP client: {e}"),
            })?;
        *slot = Some(client.clone());
        Ok(client)
    }

    fn interpolation_env(&self) -> HashMap<String, String> {
        let mut env: HashMap<String, String> = std::env::vars().collect();
        env.extend(self.options.env.iter().map(|(k, v)| (k.clone(), v.clone())));
        env
    }

    fn hook_cwd(&self, input: &HookInput) -> PathBuf {
        let cwd = Path::new(&input.common.cwd);
        if !input.common.cwd.is_empty() && cwd.is_dir() {
            cwd.to_path_buf()
        } else {
            self.options.project_dir.clone()
        }
    }

    fn command_env(&self) -> Vec<(String, String)> {
        let project = self.options.project_dir.to_string_lossy().into_owned();
        let mut env: Vec<(String, String)> = self
            .options
            .env
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        // The project directory is authoritative: settings `env` cannot point hooks elsewhere.
        env.push(("CLAUDE_PROJECT_DIR".into(), project.clone()));
        env.push(("ROBOTA_PROJECT_DIR".into(), project));
        env
    }

    fn command_context<'a>(&'a self, cwd: &'a Path) -> CommandContext<'a> {
        CommandContext {
            cwd,
            env: self.command_env(),
            shell: self.options.shell.as_deref(),
            kill_grace: self.options.kill_grace,
            output_limit: self.options.output_limit,
            sandbox: self.active_sandbox(),
            processes: &self.options.processes,
        }
    }

    /// The sandbox command hooks run in: while it is active, and also while it is enabled but
    /// unavailable with `failIfUnavailable` (starting the hook then fails with the reason
    /// instead of running it unsandboxed).
    fn active_sandbox(&self) -> Option<&crate::sandbox::Sandbox> {
        self.options.sandbox.as_deref().filter(|sandbox| {
            sandbox.is_active() || (sandbox.is_enabled() && sandbox.settings().fail_if_unavailable)
        })
    }

    fn spawn_background(
        &self,
        hook: ConfiguredHook,
        input: &HookInput,
        input_json: &str,
        timeout: Duration,
        extra_env: &[(String, String)],
    ) {
        let HandlerKind::Command(command) = hook.handler.kind.clone() else {
            return;
        };
        let event = input.event();
        let cwd = self.hook_cwd(input);
        let mut env = self.command_env();
        env.extend(extra_env.iter().cloned());
        let shell = self.options.shell.clone();
        let sandbox = self.active_sandbox().and(self.options.sandbox.clone());
        let kill_grace = self.options.kill_grace;
        let output_limit = self.options.output_limit;
        let processes = self.options.processes.clone();
        let input_json = input_json.to_string();
        let cancel = self.background.child_token();
        let tx = self.async_tx.clone();
        let summary = summarize(&Planned::Configured(hook, String::new()), timeout);
        let pending = Arc::clone(&self.pending);
        pending.send_modify(|n| *n += 1);
        tokio::spawn(async move {
            // Counted down however the task ends (even a panic), after the result is sent.
            struct Done(Arc<tokio::sync::watch::Sender<usize>>);
            impl Drop for Done {
                fn drop(&mut self) {
                    self.0.send_modify(|n| *n = n.saturating_sub(1));
                }
            }
            let _done = Done(pending);
            let started = Instant::now();
            let ctx = CommandContext {
                cwd: &cwd,
                env,
                shell: shell.as_deref(),
                kill_grace,
                output_limit,
                sandbox: sandbox.as_deref(),
                processes: &processes,
            };
            let raw = command::run(&command, &input_json, &ctx, timeout, &cancel).await;
            let report = interpret(event, summary, raw, started);
            let rewake =
                command.async_rewake && matches!(report.status, HandlerStatus::Blocked { .. });
            // The receiver may be gone (nobody listens); the result is then dropped on purpose.
            let _ = tx.send(AsyncHookResult {
                event,
                report,
                rewake,
                rewake_message: command.rewake_message.clone(),
                rewake_summary: command.rewake_summary.clone(),
            });
        });
    }
}

/// Whether two handlers are the same for de-duplication: everything but `statusMessage` and
/// `once` (which do not change what runs).
fn same_handler(
    a: &super::config::HookHandlerConfig,
    b: &super::config::HookHandlerConfig,
) -> bool {
    a.kind == b.kind && a.condition == b.condition && a.timeout == b.timeout
}

fn configured_timeout(planned: &Planned) -> Option<Duration> {
    match planned {
        Planned::Configured(hook, _) => hook.handler.timeout_duration(),
        Planned::Callback(registration) => registration.timeout,
    }
}

fn handler_type(planned: &Planned) -> HandlerType {
    match planned {
        Planned::Configured(hook, _) => match hook.handler.kind {
            HandlerKind::Command(_) => HandlerType::Command,
            HandlerKind::Http(_) => HandlerType::Http,
            HandlerKind::Prompt(_) => HandlerType::Prompt,
            HandlerKind::Agent(_) => HandlerType::Agent,
            HandlerKind::McpTool(_) => HandlerType::McpTool,
        },
        Planned::Callback(_) => HandlerType::Callback,
    }
}

fn summarize(planned: &Planned, timeout: Duration) -> HandlerSummary {
    let timeout_ms = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX);
    match planned {
        Planned::Configured(hook, _) => {
            let label = match &hook.handler.kind {
                HandlerKind::Command(c) => match &c.args {
                    Some(args) if !args.is_empty() => format!("{} {}", c.command, args.join(" ")),
                    _ => c.command.clone(),
                },
                HandlerKind::Http(h) => h.url.clone(),
                HandlerKind::Prompt(p) | HandlerKind::Agent(p) => cap_chars(p.prompt.trim(), 80),
                HandlerKind::McpTool(m) => format!("mcp__{}__{}", m.server, m.tool),
            };
            HandlerSummary {
                kind: handler_type(planned),
                label,
                source: Some(hook.source.clone()),
                status_message: hook.handler.status_message.clone(),
                timeout_ms,
            }
        }
        Planned::Callback(registration) => HandlerSummary {
            kind: HandlerType::Callback,
            label: registration.callback.name().to_string(),
            source: None,
            status_message: None,
            timeout_ms,
        },
    }
}

async fn run_callback(
    registration: &CallbackRegistration,
    input: &HookInput,
    timeout: Duration,
    cancel: &CancellationToken,
) -> RawResult {
    let call = AssertUnwindSafe(registration.callback.call(input)).catch_unwind();
    let result = tokio::select! {
        r = tokio::time::timeout(timeout, call) => r,
        () = cancel.cancelled() => return RawResult::reply(RawReply::Cancelled),
    };
    let timeout_ms = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX);
    let failure = match result {
        Err(_) => HookFailure::Timeout { timeout_ms },
        Ok(Err(panic)) => HookFailure::Panicked {
            message: panic_message(panic.as_ref()),
        },
        Ok(Ok(HookCallbackResult::Error { message })) => HookFailure::Callback { message },
        Ok(Ok(HookCallbackResult::Continue)) => return RawResult::reply(RawReply::Success),
        Ok(Ok(HookCallbackResult::Output { output })) => {
            return RawResult::reply(RawReply::Output(output))
        }
        Ok(Ok(HookCallbackResult::Text { text })) => {
            return RawResult {
                exit_code: None,
                stdout: text,
                stderr: String::new(),
                reply: RawReply::Text,
                stdout_overflow: None,
            }
        }
        Ok(Ok(HookCallbackResult::Block { reason })) => {
            return RawResult::reply(RawReply::Block(Some(reason)))
        }
    };
    let event = input.event();
    let reply =
        if registration.on_failure == OnHookFailure::Block && OnHookFailure::can_block(event) {
            let reason = format!(
                "hook callback `{}` {failure}; {} because a failing {event} hook blocks (its \
             on-failure policy is \"block\"{})",
                registration.callback.name(),
                blocked_action(event),
                if OnHookFailure::default_for(event) == OnHookFailure::Block {
                    ", the default; \"allow\" lets the action through instead"
                } else {
                    ""
                }
            );
            RawReply::FailedClosed { reason, failure }
        } else {
            RawReply::Failed(failure)
        };
    RawResult::reply(reply)
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a non-string panic payload".to_string())
}

fn elapsed_ms(started: Instant) -> u64 {
    u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX)
}

fn report(
    summary: HandlerSummary,
    status: HandlerStatus,
    started: Instant,
    raw: RawResult,
) -> HandlerReport {
    HandlerReport {
        handler: summary,
        status,
        exit_code: raw.exit_code,
        stdout: raw.stdout,
        stderr: raw.stderr,
        output: None,
        duration_ms: elapsed_ms(started),
        notes: Vec::new(),
    }
}

/// The reason of an exit-2 result: stderr, else the JSON reason on stdout, else a default.
fn block_reason(stdout: &str, stderr: &str) -> String {
    let stderr = stderr.trim();
    if !stderr.is_empty() {
        return stderr.to_string();
    }
    let from_json = HookOutput::from_json_text(stdout).ok().and_then(|output| {
        output
            .reason
            .or_else(|| {
                output
                    .hook_specific_output
                    .and_then(|s| s.permission_decision_reason)
            })
            .or(output.stop_reason)
    });
    from_json
        .filter(|r| !r.trim().is_empty())
        .unwrap_or_else(|| "blocked by hook (exit code 2, no reason given)".to_string())
}

/// Whether `event`'s hooks guard something (a tool call, a prompt), so that a hook whose answer
/// cannot be read must block rather than let the action through: its answer may have been
/// "block".
fn fails_closed(event: HookEvent) -> bool {
    matches!(
        event.block_effect(),
        BlockEffect::DenyToolCall | BlockEffect::RejectPrompt
    )
}

/// What a guarding hook's unreadable answer (or failure) blocks, for the reason.
fn blocked_action(event: HookEvent) -> &'static str {
    match event {
        HookEvent::UserPromptSubmit => "the prompt was blocked",
        HookEvent::PermissionRequest => "the tool call was denied",
        _ => "the tool call was blocked",
    }
}

/// The status of a successful run (exit 0, 2xx) whose stdout is JSON that could not be used:
/// cut at the output limit, or malformed. On a guarding event this blocks (hooks fail closed):
/// the unread answer may have been "block", and it must never turn into an allow.
fn unreadable_json(
    event: HookEvent,
    summary: &HandlerSummary,
    overflow: Option<OutputOverflow>,
    parse_error: String,
) -> HandlerStatus {
    let (failure, what) = match overflow {
        Some(overflow) => {
            let size = overflow.total_bytes.map_or_else(
                || {
                    format!(
                        "more than {}",
                        crate::files::human_size(overflow.limit as u64)
                    )
                },
                crate::files::human_size,
            );
            let what = format!(
                "printed {size} of output, over the {} hook output limit, so its JSON answer \
                 could not be read",
                crate::files::human_size(overflow.limit as u64)
            );
            let failure = HookFailure::OutputTooLarge {
                bytes: overflow.total_bytes,
                limit: overflow.limit as u64,
            };
            (failure, what)
        }
        None => {
            let what = format!("returned output that is not valid hook JSON ({parse_error})");
            (
                HookFailure::MalformedOutput {
                    message: parse_error,
                },
                what,
            )
        }
    };
    if fails_closed(event) {
        HandlerStatus::Blocked {
            reason: format!(
                "{summary} {what}; {} because a {event} hook that cannot be read fails closed",
                blocked_action(event)
            ),
            failure: Some(failure),
        }
    } else {
        HandlerStatus::Failed { failure }
    }
}

/// Turns an executor's result into a report: parses JSON output, finds block reasons.
fn interpret(
    event: HookEvent,
    summary: HandlerSummary,
    raw: RawResult,
    started: Instant,
) -> HandlerReport {
    let mut output = None;
    let status = match &raw.reply {
        RawReply::Success => {
            let trimmed = raw.stdout.trim_start();
            if trimmed.starts_with('{') {
                match raw.stdout_overflow {
                    Some(overflow) => unreadable_json(
                        event,
                        &summary,
                        Some(overflow),
                        "cut at the output limit".to_string(),
                    ),
                    None => match HookOutput::from_json_text(trimmed) {
                        Ok(parsed) => {
                            output = Some(parsed);
                            HandlerStatus::Success
                        }
                        Err(message) => unreadable_json(event, &summary, None, message),
                    },
                }
            } else {
                HandlerStatus::Success
            }
        }
        RawReply::Text => HandlerStatus::Success,
        RawReply::Output(parsed) => {
            output = Some(parsed.as_ref().clone());
            HandlerStatus::Success
        }
        RawReply::Block(reason) => HandlerStatus::Blocked {
            reason: reason
                .clone()
                .unwrap_or_else(|| block_reason(&raw.stdout, &raw.stderr)),
            failure: None,
        },
        RawReply::FailedClosed { reason, failure } => HandlerStatus::Blocked {
            reason: reason.clone(),
            failure: Some(failure.clone()),
        },
        // A prompt/agent hook whose model answer is not the expected JSON.
        RawReply::Failed(HookFailure::MalformedOutput { message }) => {
            unreadable_json(event, &summary, None, message.clone())
        }
        RawReply::Failed(failure) => HandlerStatus::Failed {
            failure: failure.clone(),
        },
        RawReply::Cancelled => HandlerStatus::Cancelled,
    };
    let mut report = report(summary, status, started, raw);
    report.output = output;
    report
}
