//! What an [`InteractiveSession`](super::InteractiveSession) reports and how it reaches hosts:
//! [`InteractiveEvent`] (one envelope with `session_id` and a strictly increasing `seq`, the
//! payload an [`InteractiveEventKind`] tagged by `type`), and [`Subscription`]s.
//!
//! Every subscriber has its own bounded queue, so the run that produces events never waits for a
//! host: when a subscriber falls behind and its queue is full, a new `text_delta` is appended to
//! a `text_delta` still waiting at the back of the queue (the text is intact, only the chunking
//! changes); every other event is queued even beyond the bound, because dropping a `tool_end` or
//! `complete` would leave a host in a wrong state.

use std::collections::VecDeque;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::Notify;

use crate::engine::RunOutcome;
use crate::framework::outcome::ErrorInfo;
use crate::hooks::CompactTrigger;
use crate::permissions::PermissionMode;
use crate::session::{ContextState, RecoveryReport, SessionEvent};

/// The default bound of a subscriber's queue.
pub const DEFAULT_EVENT_BUFFER: usize = 256;

/// One event: who it is from, its position, and what happened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InteractiveEvent {
    /// The session that produced it.
    pub session_id: String,
    /// Strictly increasing within the session, starting at 1. A coalesced `text_delta` keeps
    /// the `seq` of its first part.
    pub seq: u64,
    /// What happened.
    #[serde(flatten)]
    pub kind: InteractiveEventKind,
}

/// How a tool call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolResultKind {
    /// The tool ran and succeeded.
    Success,
    /// The tool ran and failed (or could not run).
    Error,
    /// A permission check refused the call.
    Denied,
}

/// One tool call as a UI shows it (spec 000 `IToolState`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolState {
    /// The provider's id of the call.
    pub tool_use_id: String,
    /// The tool.
    pub name: String,
    /// The most telling argument (a path, a command, a pattern), for one-line display.
    pub first_arg: String,
    /// True until the tool ends.
    pub is_running: bool,
    /// How it ended (`None` while running).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<ToolResultKind>,
    /// For Edit: the changed file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diff_file: Option<String>,
    /// For Edit: the unified diff lines (` `, `-`, `+` prefixed) from the tool's structured
    /// response.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub diff_lines: Vec<String>,
    /// The tool's text result, cut to [`MAX_TOOL_RESULT_DATA`] bytes so event streams stay
    /// small; the full result is in the history.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_result_data: Option<String>,
}

/// Largest `tool_result_data` carried in a [`ToolState`], in bytes.
pub const MAX_TOOL_RESULT_DATA: usize = 4096;

/// The provider-neutral usage of one prompt (spec 000 `IUsageSnapshot`), also kept in the
/// history as the `usage-summary` entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UsageSnapshot {
    /// `exact`: the provider counted the tokens.
    pub kind: String,
    /// `turn`: the figures cover this prompt.
    pub scope: String,
    /// Prompt and completion tokens together.
    pub total_tokens: u64,
    /// Tokens sent.
    pub prompt_tokens: u64,
    /// Tokens written.
    pub completion_tokens: u64,
    /// Tokens the conversation occupies after the prompt.
    pub context_used_tokens: u64,
    /// The model's context window (0 when unknown).
    pub context_max_tokens: u64,
    /// `context_used_tokens` as a percentage of the window.
    pub context_used_percentage: f64,
    /// Whether the session's cost figure covers every token.
    pub cost_status: crate::session::usage::CostStatus,
}

/// What a prompt did, as spec 000 `IExecutionResult` names it: carried (flattened) by the
/// `complete` and `interrupted` events and the matching [`PromptResult`](super::PromptResult)s,
/// next to the run's `outcome`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ExecutionReport {
    /// The answer (for `interrupted`, the text streamed until the abort).
    #[serde(default)]
    pub response: String,
    /// The history entries this prompt added: the user message, the answers and tool results,
    /// and the event entries (`tool-start`, `tool-end`, `tool-summary`, `usage-summary`,
    /// `error`, …).
    #[serde(default)]
    pub history: Vec<crate::message::HistoryEntry>,
    /// The prompt's tool calls as they ended.
    #[serde(default)]
    pub tool_summaries: Vec<ToolState>,
    /// How full the context window is after the prompt.
    #[serde(default)]
    pub context_state: ContextState,
    /// The prompt's token usage, when the provider reported any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<UsageSnapshot>,
}

/// Everything an interactive session reports. Serialized with `type` as the snake_case tag.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum InteractiveEventKind {
    /// A chunk of the answer.
    TextDelta {
        /// The text.
        text: String,
    },
    /// A chunk of the model's reasoning.
    Thinking {
        /// The text.
        text: String,
    },
    /// A tool the provider runs itself (Anthropic web search, web fetch, code execution) was
    /// called, with its whole input (`{"query": …}` for a search). Nothing runs locally and no
    /// permission is asked: the provider reports the result as `server_tool_result`.
    ServerToolUse {
        /// The provider's id of the call.
        id: String,
        /// The server tool (`web_search`, `web_fetch`, `bash_code_execution`, …).
        name: String,
        /// The call's input.
        input: Value,
    },
    /// A server tool's result arrived (the content stays with the assistant message).
    ServerToolResult {
        /// The `server_tool_use` id it answers.
        tool_use_id: String,
        /// The result block's type (`web_search_tool_result`, …).
        result_type: String,
        /// True when the tool failed.
        is_error: bool,
    },
    /// A tool began.
    ToolStart {
        /// Its state.
        tool: ToolState,
    },
    /// A tool ended.
    ToolEnd {
        /// Its state.
        tool: ToolState,
    },
    /// A tool call waits for the permission handler.
    PermissionRequest {
        /// The request (unique within the session).
        request_id: String,
        /// The tool.
        tool_name: String,
        /// Its arguments.
        input: Value,
        /// The provider's id of the call.
        tool_use_id: String,
        /// Why approval is needed.
        reason: String,
        /// The mode at the time.
        permission_mode: PermissionMode,
    },
    /// How full the context window is.
    ContextUpdate {
        /// The state.
        state: ContextState,
    },
    /// The history was compacted.
    Compaction {
        /// `manual` or `auto`.
        trigger: CompactTrigger,
        /// Tokens before.
        tokens_before: u64,
        /// Estimated tokens after.
        tokens_after: u64,
    },
    /// A prompt ended with the model's answer.
    Complete {
        /// The run's outcome (response, usage, stop reason, …).
        outcome: RunOutcome,
        /// What the prompt did: response, its history entries, tool summaries, context state,
        /// usage (serialized as fields of the event).
        #[serde(flatten)]
        report: ExecutionReport,
    },
    /// A prompt ended with the model refusing (never re-asked): `outcome.refusal` has the
    /// refusal text and the provider's category and explanation.
    Refused {
        /// The run's outcome.
        outcome: RunOutcome,
    },
    /// A prompt ended with its answer cut off at the output token limit; `outcome.response` is
    /// what was written (see `InteractiveSession::continue_answer`).
    Truncated {
        /// The run's outcome.
        outcome: RunOutcome,
    },
    /// A prompt failed or could not run: a model call failed (auth, network, retries
    /// exhausted, …), a hook rejected it, the budget is spent, an `@file` cannot be attached.
    /// Also sent (after the prompt's own end) when a compaction the model asked for fails.
    Error {
        /// What went wrong and how to fix it (the same as `error.message`).
        message: String,
        /// The failure: kind, HTTP status, whether a retry may help, the wait asked for.
        error: ErrorInfo,
        /// The run's outcome when the run had started (usage, text streamed before the failure).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        outcome: Option<RunOutcome>,
    },
    /// A prompt was aborted; the outcome holds what streamed until then.
    Interrupted {
        /// The partial outcome (`None` when the abort came before the run started).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        outcome: Option<RunOutcome>,
        /// What the prompt did until the abort (serialized as fields of the event).
        #[serde(flatten)]
        report: ExecutionReport,
    },
    /// A skill was activated, or ended (spec 000 `skill_activation`): name, source, arguments,
    /// who ran it, inline or forked, `started` / `completed` / `failed`.
    SkillActivation {
        /// The activation.
        data: crate::framework::skills::SkillActivation,
    },
    /// Progress of work running beside the conversation. Emitted for subagents (`data` is a
    /// [`SubagentProgress`](crate::framework::agents::SubagentProgress) with `task_kind:
    /// "subagent"`: `started`, `tool_start`, `tool_end`, `finished` with the report).
    BackgroundTaskEvent {
        /// The payload.
        data: Value,
    },
    /// A warning about the saved session this one resumed: damage that was repaired, data that
    /// could not be kept, a prompt whose turn never finished (so the host can offer to send it
    /// again). Sent once, when the session starts (first prompt, or an explicit start);
    /// [`InteractiveSession::get_recovery_report`](super::InteractiveSession::get_recovery_report)
    /// returns the same report at any time.
    SessionRecovered {
        /// The notice for the user, one line per finding.
        message: String,
        /// What was found and done.
        report: RecoveryReport,
    },
    /// The agent's task list changed (a `TodoWrite` call succeeded): the whole new list, right
    /// after that call's `tool_end`.
    TodoUpdate {
        /// The tasks, in order (`content`, `status`: pending / in_progress / completed,
        /// `active_form`).
        todos: Vec<crate::tools::builtins::TodoItem>,
    },
    /// An MCP server's status changed after the session started: it failed, reconnected, was
    /// enabled or disabled (`list_mcp_servers()` gives every server's status at any time).
    McpServerStatus {
        /// The server's name.
        server: String,
        /// Its new status (`state`: `pending`, `connected`, `failed` or `disabled`, with the
        /// `reason` when failed or disabled).
        status: crate::mcp::McpServerStatus,
    },
    /// Any other session event (permission answers, hook messages, warnings, …), unchanged.
    Session {
        /// The event.
        event: SessionEvent,
    },
}

impl InteractiveEventKind {
    /// True for the events that end a prompt: `complete`, `refused`, `truncated`, `error` and
    /// `interrupted` (an `error` may also report a failed compaction after a prompt ended).
    pub fn ends_prompt(&self) -> bool {
        matches!(
            self,
            InteractiveEventKind::Complete { .. }
                | InteractiveEventKind::Refused { .. }
                | InteractiveEventKind::Truncated { .. }
                | InteractiveEventKind::Error { .. }
                | InteractiveEventKind::Interrupted { .. }
        )
    }

    /// The event's `type` as serialized (`text_delta`, `complete`, …), without serializing it.
    pub fn type_name(&self) -> &'static str {
        match self {
            InteractiveEventKind::TextDelta { .. } => "text_delta",
            InteractiveEventKind::Thinking { .. } => "thinking",
            InteractiveEventKind::ServerToolUse { .. } => "server_tool_use",
            InteractiveEventKind::ServerToolResult { .. } => "server_tool_result",
            InteractiveEventKind::ToolStart { .. } => "tool_start",
            InteractiveEventKind::ToolEnd { .. } => "tool_end",
            InteractiveEventKind::PermissionRequest { .. } => "permission_request",
            InteractiveEventKind::ContextUpdate { .. } => "context_update",
            InteractiveEventKind::Compaction { .. } => "compaction",
            InteractiveEventKind::Complete { .. } => "complete",
            InteractiveEventKind::Refused { .. } => "refused",
            InteractiveEventKind::Truncated { .. } => "truncated",
            InteractiveEventKind::Error { .. } => "error",
            InteractiveEventKind::Interrupted { .. } => "interrupted",
            InteractiveEventKind::SkillActivation { .. } => "skill_activation",
            InteractiveEventKind::BackgroundTaskEvent { .. } => "background_task_event",
            InteractiveEventKind::SessionRecovered { .. } => "session_recovered",
            InteractiveEventKind::TodoUpdate { .. } => "todo_update",
            InteractiveEventKind::McpServerStatus { .. } => "mcp_server_status",
            InteractiveEventKind::Session { .. } => "session",
        }
    }
}

/// Shared state between the hub and one subscriber.
struct Channel {
    queue: Mutex<VecDeque<InteractiveEvent>>,
    notify: Notify,
    closed: AtomicBool,
    capacity: usize,
}

impl Channel {
    fn push(&self, event: InteractiveEvent) {
        {
            let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
            if queue.len() >= self.capacity {
                if let InteractiveEventKind::TextDelta { text } = &event.kind {
                    if let Some(InteractiveEvent {
                        kind: InteractiveEventKind::TextDelta { text: queued },
                        seq,
                        ..
                    }) = queue.back_mut()
                    {
                        queued.push_str(text);
                        // The merged chunk holds the text up to this event: a host waiting
                        // until this `seq` is delivered must not wait for a seq that is gone.
                        *seq = event.seq;
                        return;
                    }
                }
            }
            queue.push_back(event);
        }
        self.notify.notify_one();
    }

    fn pop(&self) -> Option<InteractiveEvent> {
        self.queue
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop_front()
    }

    /// The next event, waiting as long as it takes; `None` once closed.
    async fn next(&self) -> Option<InteractiveEvent> {
        loop {
            // Registered before checking so a push between the check and the wait is not lost.
            let notified = self.notify.notified();
            if self.closed.load(Ordering::SeqCst) {
                return None;
            }
            if let Some(event) = self.pop() {
                return Some(event);
            }
            notified.await;
        }
    }
}

/// Assigns `seq` and fans events out to the subscribers, in one critical section so every
/// subscriber sees the same order.
pub(crate) struct EventHub {
    state: Mutex<HubState>,
    capacity: usize,
}

struct HubState {
    session_id: String,
    next_seq: u64,
    subscribers: Vec<Arc<Channel>>,
}

impl EventHub {
    pub(crate) fn new(session_id: String, capacity: usize) -> Arc<Self> {
        Arc::new(EventHub {
            state: Mutex::new(HubState {
                session_id,
                next_seq: 1,
                subscribers: Vec::new(),
            }),
            capacity: capacity.max(1),
        })
    }

    pub(crate) fn set_session_id(&self, id: &str) {
        self.lock().session_id = id.to_string();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HubState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Sends `kind` to every subscriber; returns the `seq` it got.
    pub(crate) fn emit(&self, kind: InteractiveEventKind) -> u64 {
        let mut state = self.lock();
        let seq = state.next_seq;
        let event = InteractiveEvent {
            session_id: state.session_id.clone(),
            seq,
            kind,
        };
        state.next_seq += 1;
        state
            .subscribers
            .retain(|channel| !channel.closed.load(Ordering::SeqCst));
        for channel in &state.subscribers {
            channel.push(event.clone());
        }
        seq
    }

    /// The `seq` of the last event emitted (0 before the first).
    pub(crate) fn last_seq(&self) -> u64 {
        self.lock().next_seq - 1
    }

    pub(crate) fn subscribe(self: &Arc<Self>) -> Subscription {
        let channel = Arc::new(Channel {
            queue: Mutex::new(VecDeque::new()),
            notify: Notify::new(),
            closed: AtomicBool::new(false),
            capacity: self.capacity,
        });
        let mut state = self.lock();
        state.subscribers.push(Arc::clone(&channel));
        Subscription {
            channel,
            hub: Arc::downgrade(self),
            subscribed_after: state.next_seq - 1,
        }
    }
}

/// A pull subscription: events are read with [`next_event`](Self::next_event). Dropping it (or
/// [`unsubscribe`](Self::unsubscribe)) stops delivery.
pub struct Subscription {
    channel: Arc<Channel>,
    hub: Weak<EventHub>,
    /// The `seq` of the last event emitted before this subscription began.
    subscribed_after: u64,
}

impl std::fmt::Debug for Subscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscription")
            .field("closed", &self.channel.closed.load(Ordering::SeqCst))
            .finish_non_exhaustive()
    }
}

impl Subscription {
    /// The `seq` of the last event emitted before this subscription began: every event it
    /// receives has a larger one. A host waiting for "delivered up to seq N" starts from here.
    pub fn subscribed_after(&self) -> u64 {
        self.subscribed_after
    }

    /// The next event, waiting at most `timeout`; `None` on timeout or after unsubscribing.
    pub async fn next_event(&self, timeout: Duration) -> Option<InteractiveEvent> {
        tokio::time::timeout(timeout, self.channel.next())
            .await
            .ok()
            .flatten()
    }

    /// The next event if one is queued, without waiting.
    pub fn try_next_event(&self) -> Option<InteractiveEvent> {
        if self.channel.closed.load(Ordering::SeqCst) {
            return None;
        }
        self.channel.pop()
    }

    /// Stops delivery; queued events are discarded.
    pub fn unsubscribe(&self) {
        self.channel.closed.store(true, Ordering::SeqCst);
        self.channel.notify.notify_one();
        if let Some(hub) = self.hub.upgrade() {
            hub.lock()
                .subscribers
                .retain(|c| !Arc::ptr_eq(c, &self.channel));
        }
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        self.unsubscribe();
    }
}

/// A callback subscription: a delivery task calls the callback for each event, in order.
/// Dropping the handle (or [`unsubscribe`](Self::unsubscribe)) stops delivery.
pub struct SubscriptionHandle {
    subscription: Arc<Subscription>,
}

impl std::fmt::Debug for SubscriptionHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SubscriptionHandle").finish_non_exhaustive()
    }
}

impl SubscriptionHandle {
    /// Stops delivery.
    pub fn unsubscribe(&self) {
        self.subscription.unsubscribe();
    }
}

impl Drop for SubscriptionHandle {
    fn drop(&mut self) {
        self.subscription.unsubscribe();
    }
}

/// Starts the delivery task of a callback subscription: on the current tokio runtime when there
/// is one, else on a thread of its own (hosts such as C callers may have no runtime).
pub(crate) fn spawn_delivery(
    subscription: Subscription,
    callback: Arc<dyn Fn(InteractiveEvent) + Send + Sync>,
) -> SubscriptionHandle {
    let subscription = Arc::new(subscription);
    let channel = Arc::clone(&subscription.channel);
    let deliver = async move {
        while let Some(event) = channel.next().await {
            // A panicking host callback loses that event, not the subscription.
            let _ = std::panic::catch_unwind(AssertUnwindSafe(|| callback(event)));
        }
    };
    match tokio::runtime::Handle::try_current() {
        Ok(handle) => {
            handle.spawn(deliver);
        }
        Err(_) => {
            std::thread::spawn(move || futures::executor::block_on(deliver));
        }
    }
    SubscriptionHandle { subscription }
}

/// Maps a session event to what an interactive host sees (tool events are built by the session,
/// which tracks tool state).
pub(crate) fn translate(event: SessionEvent) -> InteractiveEventKind {
    match event {
        SessionEvent::PermissionRequest {
            request_id,
            tool_name,
            input,
            tool_use_id,
            reason,
            permission_mode,
            ..
        } => InteractiveEventKind::PermissionRequest {
            request_id,
            tool_name,
            input,
            tool_use_id,
            reason,
            permission_mode,
        },
        SessionEvent::ContextUpdate { state } => InteractiveEventKind::ContextUpdate { state },
        SessionEvent::TodoUpdate { todos } => InteractiveEventKind::TodoUpdate { todos },
        SessionEvent::McpServerStatus { server, status } => {
            InteractiveEventKind::McpServerStatus { server, status }
        }
        SessionEvent::SessionRecovered { message, report } => {
            InteractiveEventKind::SessionRecovered { message, report }
        }
        SessionEvent::Compaction {
            trigger,
            tokens_before,
            tokens_after,
            ..
        } => InteractiveEventKind::Compaction {
            trigger,
            tokens_before,
            tokens_after,
        },
        other => InteractiveEventKind::Session { event: other },
    }
}
