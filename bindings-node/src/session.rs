//! [`NativeSession`]: the engine's `InteractiveSession` as a JavaScript class, and event
//! delivery through one weak, bounded threadsafe function per session.
//!
//! Delivery: a tokio task reads the session's pull subscription, gathers whatever is queued into
//! one batch (a JSON array) and hands it to the weak threadsafe function without blocking. When
//! JavaScript falls behind and the function's queue (bounded) is full, the task waits and stops
//! reading; the subscription's own bounded queue then coalesces `text_delta`s (nothing else is
//! ever dropped), so the engine never waits for JavaScript.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use napi::bindgen_prelude::{block_on, within_runtime_if_available, AsyncTask, Unknown};
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::Task;
use napi::{Env, Status};
use napi_derive::napi;

use robota::api::ApiError;
use robota::framework::interactive::{
    InteractiveSession, InteractiveSessionOptions, PromptTicket, SubmitStatus, Subscription,
};
use robota::hooks::SessionEndReason;

use crate::host::{HostBridge, JsDispatcher};
use crate::options::build_options;
use crate::{api_error, to_json};

/// Most event batches waiting for the JavaScript thread per session.
const EVENT_QUEUE: usize = 64;
/// Most events in one batch.
const MAX_BATCH: usize = 1024;

/// The listener: `(batchJson: string) => void`, weak and bounded.
pub(crate) type EventFunction =
    ThreadsafeFunction<String, Unknown<'static>, String, Status, false, true, EVENT_QUEUE>;

/// Starts delivering `subscription`'s events to `function` until `stopped` is set or the
/// subscription is closed; sets `ended` once delivery has stopped for good.
pub(crate) fn spawn_event_delivery(
    subscription: Arc<Subscription>,
    function: EventFunction,
    stopped: Arc<AtomicBool>,
    ended: Arc<AtomicBool>,
) {
    napi::bindgen_prelude::spawn(async move {
        deliver_events(&subscription, &function, &stopped).await;
        ended.store(true, Ordering::Release);
    });
}

async fn deliver_events(
    subscription: &Subscription,
    function: &EventFunction,
    stopped: &AtomicBool,
) {
    // `aborted`: the JavaScript environment (a terminated worker, say) is gone.
    while !stopped.load(Ordering::Acquire) && !function.aborted() {
        let mut batch = Vec::new();
        batch.extend(subscription.next_event(Duration::from_secs(1)).await);
        while batch.len() < MAX_BATCH {
            match subscription.try_next_event() {
                Some(event) => batch.push(event),
                None => break,
            }
        }
        if batch.is_empty() {
            continue;
        }
        let Ok(json) = serde_json::to_string(&batch) else {
            continue;
        };
        loop {
            match function.call(json.clone(), ThreadsafeFunctionCallMode::NonBlocking) {
                Status::Ok => break,
                Status::QueueFull if !stopped.load(Ordering::Acquire) => {
                    tokio::time::sleep(Duration::from_micros(200)).await;
                }
                // Closing (environment teardown) or stopped: nobody is listening any more.
                _ => return,
            }
        }
    }
}

/// A submitted prompt (the engine's `PromptTicket`): whether it started or waits, and how it
/// ended.
#[napi]
pub struct NativePromptTicket {
    status: &'static str,
    id: u64,
    ticket: Mutex<Option<PromptTicket>>,
    /// Weak: a ticket kept by JavaScript does not keep the session alive.
    session: Weak<InteractiveSession>,
    /// Set once the session's event delivery has stopped.
    delivery_ended: Arc<AtomicBool>,
}

#[napi]
impl NativePromptTicket {
    /// `"started"` or `"queued"`.
    #[napi(getter, ts_return_type = "'started' | 'queued'")]
    pub fn status(&self) -> String {
        self.status.into()
    }

    /// Cancels exactly this prompt: dropped when it still waits (`cancelled`), aborted when it
    /// runs (`interrupted`; the prompt queued behind it is kept). False once it has ended.
    #[napi]
    pub fn cancel(&self) -> bool {
        self.session
            .upgrade()
            .is_some_and(|session| session.cancel_prompt(self.id))
    }

    /// Resolves once the prompt has ended: `{"seq", "result"}` as JSON, `result` being how the
    /// prompt ended (`status`: `complete`, `refused`, `truncated`, `error`, `interrupted`,
    /// `cancelled`) and `seq` the
    /// `seq` of the event that ended it (already queued for the listener), 0 when there was
    /// none or event delivery has stopped. While pending it keeps Node alive, which is how a
    /// running prompt keeps a script from exiting early. Only the first call resolves; later
    /// ones reject.
    #[napi]
    pub async fn result(&self) -> napi::Result<String> {
        let ticket = self
            .ticket
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
            .ok_or_else(|| {
                api_error(ApiError::invalid_argument(
                    "the prompt's result was already taken",
                ))
            })?;
        let end = ticket.end().await;
        let seq = match end.event_seq {
            Some(seq) if !self.delivery_ended.load(Ordering::Acquire) => seq,
            _ => 0,
        };
        to_json(&serde_json::json!({ "seq": seq, "result": end.result }))
    }
}

/// An interactive session (the engine's `InteractiveSession`). Use the `InteractiveSession`
/// class of `@robota/native`, which wraps this one with typed options, an `EventEmitter` and
/// Promises that settle when a prompt ends.
#[napi]
pub struct NativeSession {
    session: SessionHandle,
    subscription: Arc<Subscription>,
    stopped: Arc<AtomicBool>,
    delivery_ended: Arc<AtomicBool>,
    bridge: Mutex<Option<Arc<HostBridge>>>,
}

/// The engine session of a [`NativeSession`]. With a JavaScript session store, its last
/// reference is dropped on a thread of its own: dropping a session that was not shut down
/// flushes its log and releases its lease through the store, which needs the JavaScript thread
/// free (a garbage-collected session is dropped on it).
struct SessionHandle {
    session: Option<Arc<InteractiveSession>>,
    host_store: bool,
}

impl std::ops::Deref for SessionHandle {
    type Target = Arc<InteractiveSession>;

    fn deref(&self) -> &Self::Target {
        match &self.session {
            Some(session) => session,
            // Taken only in `drop`, after which nothing dereferences it.
            None => unreachable!("the session handle is used after drop"),
        }
    }
}

impl Drop for SessionHandle {
    fn drop(&mut self) {
        if let Some(session) = self.session.take() {
            if self.host_store {
                let _ = std::thread::Builder::new()
                    .name("robota-session-drop".into())
                    .spawn(move || drop(session));
            }
        }
    }
}

/// The engine options of a session from the native options document, and whether the session
/// is saved in a JavaScript store.
fn session_options(
    options_json: &str,
    bridge: &Arc<HostBridge>,
) -> Result<(InteractiveSessionOptions, bool), ApiError> {
    let built = build_options(options_json, bridge)?;
    if !built.allowed_tools.is_empty() || !built.disallowed_tools.is_empty() {
        return Err(ApiError::invalid_argument(
            "`allowedTools`/`disallowedTools` are query options; give a session \
             `settings: {permissions: {allow, deny}}` instead",
        ));
    }
    let mut options = InteractiveSessionOptions::new(built.session);
    options.command_modules = built.command_modules;
    options.skills = built.skills;
    options.edit_checkpoints = built.edit_checkpoints;
    options.commands = built.custom_commands;
    if let Some(buffer) = built.event_buffer {
        options.event_buffer = buffer;
    }
    Ok((options, built.host_store))
}

/// Opens a session saved in a JavaScript store: the engine reads and writes the store while it
/// opens the session, so that runs off the JavaScript thread (see [`open_session`]).
pub struct OpenSession {
    options_json: String,
    bridge: Arc<HostBridge>,
    on_events: Option<EventFunction>,
}

impl Task for OpenSession {
    type Output = (Arc<InteractiveSession>, bool);
    type JsValue = NativeSession;

    fn compute(&mut self) -> napi::Result<Self::Output> {
        within_runtime_if_available(|| -> Result<_, ApiError> {
            let (options, host_store) = session_options(&self.options_json, &self.bridge)?;
            let session = InteractiveSession::new(options).map_err(ApiError::from)?;
            Ok((session, host_store))
        })
        .map_err(api_error)
    }

    fn resolve(&mut self, env: Env, output: Self::Output) -> napi::Result<Self::JsValue> {
        let (session, host_store) = output;
        let on_events = self.on_events.take().ok_or_else(|| {
            api_error(ApiError::invalid_argument("the session was already opened"))
        })?;
        Ok(NativeSession::attach(
            &env,
            session,
            host_store,
            Arc::clone(&self.bridge),
            on_events,
        ))
    }
}

/// Creates a session like the `NativeSession` constructor, off the JavaScript thread; resolves
/// to the session. Needed when the session is saved in a JavaScript `SessionStore` (opening it
/// calls the store, which runs on the JavaScript thread); works for any session.
#[napi(ts_return_type = "Promise<NativeSession>")]
pub fn open_session(
    options_json: String,
    #[napi(ts_arg_type = "(request: string) => Promise<string>")] host: JsDispatcher,
    #[napi(ts_arg_type = "(batch: string) => void")] on_events: EventFunction,
) -> AsyncTask<OpenSession> {
    AsyncTask::new(OpenSession {
        options_json,
        bridge: HostBridge::new(host),
        on_events: Some(on_events),
    })
}

#[napi]
impl NativeSession {
    /// Creates a session from the options document (JSON, built by the facade), the host
    /// dispatcher `(requestJson) => Promise<replyJson>` and the event listener
    /// `(batchJson) => void`. Both functions are held weakly: they never keep Node alive. A
    /// session saved in a JavaScript store is opened with `openSession` instead.
    #[napi(constructor)]
    pub fn new(
        env: Env,
        options_json: String,
        #[napi(ts_arg_type = "(request: string) => Promise<string>")] host: JsDispatcher,
        #[napi(ts_arg_type = "(batch: string) => void")] on_events: EventFunction,
    ) -> napi::Result<Self> {
        let bridge = HostBridge::new(host);
        let session = within_runtime_if_available(|| -> Result<_, ApiError> {
            let (options, host_store) = session_options(&options_json, &bridge)?;
            if host_store {
                return Err(ApiError::invalid_argument(
                    "a session saved in a JavaScript `sessionStore` is opened with \
                     `await InteractiveSession.open(options)` (opening it calls the store)",
                ));
            }
            InteractiveSession::new(options).map_err(ApiError::from)
        })
        .map_err(api_error)?;
        Ok(NativeSession::attach(
            &env, session, false, bridge, on_events,
        ))
    }

    /// Wraps an engine session: process cleanup at environment exit, and event delivery.
    fn attach(
        env: &Env,
        session: Arc<InteractiveSession>,
        host_store: bool,
        bridge: Arc<HostBridge>,
        on_events: EventFunction,
    ) -> Self {
        crate::exit::stop_with_env(env, session.session());
        let subscription = Arc::new(session.subscribe_pull());
        let stopped = Arc::new(AtomicBool::new(false));
        let delivery_ended = Arc::new(AtomicBool::new(false));
        spawn_event_delivery(
            Arc::clone(&subscription),
            on_events,
            Arc::clone(&stopped),
            Arc::clone(&delivery_ended),
        );
        NativeSession {
            session: SessionHandle {
                session: Some(session),
                host_store,
            },
            subscription,
            stopped,
            delivery_ended,
            bridge: Mutex::new(Some(bridge)),
        }
    }

    /// Submits a prompt; its ticket tells whether it started or waits and resolves to how it
    /// ended. Synchronous, so prompts are accepted in call order (acceptance never waits: the
    /// prompt runs on a background task).
    #[napi]
    pub fn submit(
        &self,
        input: String,
        display_input: Option<String>,
        raw_input: Option<String>,
        traceparent: Option<String>,
        tracestate: Option<String>,
        output_format_json: Option<String>,
    ) -> napi::Result<NativePromptTicket> {
        let output_format = crate::output_format_arg(output_format_json)?;
        let session = Arc::clone(&self.session);
        robota::api::trace_next_prompt(session.session(), traceparent, tracestate)
            .map_err(api_error)?;
        let ticket = block_on(async move {
            robota::api::submit_prompt(
                &session,
                &input,
                display_input.as_deref(),
                raw_input.as_deref(),
                output_format,
            )
        })
        .map_err(api_error)?;
        Ok(NativePromptTicket {
            status: match ticket.status() {
                SubmitStatus::Started => "started",
                SubmitStatus::Queued => "queued",
            },
            id: ticket.id(),
            ticket: Mutex::new(Some(ticket)),
            session: Arc::downgrade(&self.session),
            delivery_ended: Arc::clone(&self.delivery_ended),
        })
    }

    /// Resolves when no prompt is running or queued, with the `seq` of the last event emitted by
    /// then (0 when event delivery has stopped): the facade waits for that event to reach the
    /// listeners, so idle also means every event of the finished work was heard.
    #[napi]
    pub async fn wait_idle(&self) -> napi::Result<f64> {
        self.session.wait_idle().await;
        if self.delivery_ended.load(Ordering::Acquire) {
            return Ok(0.0);
        }
        let last = self.session.last_event_seq();
        if last <= self.subscription.subscribed_after() {
            // Nothing emitted since the listeners subscribed: nothing to wait for.
            return Ok(0.0);
        }
        // Event seqs count events of one session; they stay far below 2^53.
        Ok(last as f64)
    }

    /// Aborts the running prompt and drops the queued one.
    #[napi]
    pub fn abort(&self) {
        self.session.abort();
    }

    /// Drops the queued prompt; returns it (as displayed) when there was one.
    #[napi]
    pub fn cancel_queue(&self) -> Option<String> {
        self.session.cancel_queue()
    }

    /// Runs a slash command; resolves to the command result as JSON.
    #[napi]
    pub async fn execute_command(&self, name: String, args: String) -> napi::Result<String> {
        let result = self
            .session
            .execute_command(&name, &args)
            .await
            .map_err(|e| api_error(e.into()))?;
        to_json(&result)
    }

    /// The user-invocable commands as JSON.
    #[napi]
    pub fn list_commands(&self) -> napi::Result<String> {
        let commands = self
            .session
            .list_commands()
            .map_err(|e| api_error(e.into()))?;
        to_json(&commands)
    }

    /// The skills of the session as JSON (see the facade's `listSkills`).
    #[napi]
    pub fn list_skills(&self) -> napi::Result<String> {
        to_json(&self.session.list_skills())
    }

    /// The plugins of the session's user and project as JSON (see the facade's `listPlugins`).
    #[napi]
    pub fn list_plugins(&self) -> napi::Result<String> {
        to_json(&self.session.list_plugins())
    }

    /// The edit checkpoints as JSON (see the facade's `listEditCheckpoints`).
    #[napi]
    pub fn list_edit_checkpoints(&self) -> napi::Result<String> {
        let list = self
            .session
            .list_edit_checkpoints()
            .map_err(|e| api_error(e.into()))?;
        to_json(&list)
    }

    /// One edit checkpoint as JSON (see the facade's `inspectEditCheckpoint`).
    #[napi]
    pub fn inspect_edit_checkpoint(&self, id: String) -> napi::Result<String> {
        let inspection = self
            .session
            .inspect_edit_checkpoint(&id)
            .map_err(|e| api_error(e.into()))?;
        to_json(&inspection)
    }

    /// Restores files to a checkpoint (`rollback`: through it); the report as JSON.
    #[napi]
    pub fn restore_edit_checkpoint(&self, id: String, rollback: bool) -> napi::Result<String> {
        let report = if rollback {
            self.session.rollback_edit_checkpoint(&id)
        } else {
            self.session.restore_edit_checkpoint(&id)
        }
        .map_err(|e| api_error(e.into()))?;
        to_json(&report)
    }

    /// The background tasks as JSON (see the facade's `listBackgroundTasks`).
    #[napi]
    pub fn list_background_tasks(&self) -> napi::Result<String> {
        to_json(&self.session.list_background_tasks())
    }

    /// One background task as JSON (`null` for an unknown id).
    #[napi]
    pub fn get_background_task(&self, id: String) -> napi::Result<String> {
        to_json(&self.session.get_background_task(&id))
    }

    /// Stops a running task with its process tree; resolves to the task as JSON.
    #[napi]
    pub async fn cancel_background_task(&self, id: String) -> napi::Result<String> {
        let task = self
            .session
            .cancel_background_task(&id)
            .await
            .map_err(|e| api_error(e.into()))?;
        to_json(&task)
    }

    /// Waits until a task has ended (at most `timeout_ms`); resolves to the task as JSON.
    #[napi]
    pub async fn wait_background_task(&self, id: String, timeout_ms: f64) -> napi::Result<String> {
        let timeout = Duration::from_millis(timeout_ms.max(0.0) as u64);
        let task = self
            .session
            .wait_background_task(&id, timeout)
            .await
            .map_err(|e| api_error(e.into()))?;
        to_json(&task)
    }

    /// Removes an ended task from the list; the task as JSON.
    #[napi]
    pub fn close_background_task(&self, id: String) -> napi::Result<String> {
        let task = self
            .session
            .close_background_task(&id)
            .map_err(|e| api_error(e.into()))?;
        to_json(&task)
    }

    /// A page of a task's output file as JSON (`stream`: `stdout` or `stderr`).
    #[napi]
    pub fn read_background_task_log(
        &self,
        id: String,
        stream: String,
        offset: f64,
        max_bytes: f64,
    ) -> napi::Result<String> {
        let stream = match stream.as_str() {
            "stdout" => robota::tools::builtins::LogStream::Stdout,
            "stderr" => robota::tools::builtins::LogStream::Stderr,
            other => {
                return Err(api_error(ApiError::invalid_argument(format!(
                    "stream must be 'stdout' or 'stderr', got '{other}'"
                ))))
            }
        };
        let page = self
            .session
            .read_background_task_log(
                &id,
                stream,
                offset.max(0.0) as u64,
                max_bytes.max(1.0) as usize,
            )
            .map_err(|e| api_error(e.into()))?;
        to_json(&page)
    }

    /// Runs a subagent from host code; resolves to its report as JSON. `isolation`: `none`
    /// (default) or `worktree`.
    #[napi]
    pub async fn run_subagent(
        &self,
        prompt: String,
        agent_type: Option<String>,
        model: Option<String>,
        isolation: Option<String>,
    ) -> napi::Result<String> {
        let request = robota::api::subagent_request(
            &prompt,
            agent_type.as_deref(),
            model.as_deref(),
            isolation.as_deref(),
        )
        .map_err(api_error)?;
        let report = self
            .session
            .run_subagent(request)
            .await
            .map_err(|e| api_error(e.into()))?;
        to_json(&report)
    }

    /// Starts a subagent from host code as a background task; resolves to the task as JSON at
    /// once (arguments as for `run_subagent`).
    #[napi]
    pub async fn start_background_subagent(
        &self,
        prompt: String,
        agent_type: Option<String>,
        model: Option<String>,
        isolation: Option<String>,
    ) -> napi::Result<String> {
        let request = robota::api::subagent_request(
            &prompt,
            agent_type.as_deref(),
            model.as_deref(),
            isolation.as_deref(),
        )
        .map_err(api_error)?;
        let task = self
            .session
            .start_background_subagent(request)
            .map_err(|e| api_error(e.into()))?;
        to_json(&task)
    }

    /// The MCP servers of the session as JSON (see the facade's `listMcpServers`).
    #[napi]
    pub fn list_mcp_servers(&self) -> napi::Result<String> {
        to_json(&self.session.list_mcp_servers())
    }

    /// Resolves when the MCP servers are done starting, or after `timeout_ms` (none: when they
    /// are): true when no server is still starting.
    #[napi]
    pub async fn wait_for_mcp_servers(&self, timeout_ms: Option<f64>) -> napi::Result<bool> {
        let timeout = timeout_ms
            .filter(|ms| ms.is_finite())
            .map(|ms| Duration::from_millis(ms.max(0.0) as u64));
        Ok(self.session.wait_for_mcp_servers(timeout).await)
    }

    /// Sends the recorded spans and metrics now (the export timeout at most); true when all
    /// went out in time.
    #[napi]
    pub async fn flush_telemetry(&self) -> napi::Result<bool> {
        Ok(self.session.session().flush_telemetry().await)
    }

    /// Shuts the session down (SessionEnd fires once), stops event delivery and releases the
    /// JavaScript functions. `reason`: `other` (default), `clear`, `logout`,
    /// `prompt_input_exit`.
    #[napi]
    pub async fn shutdown(&self, reason: Option<String>) -> napi::Result<()> {
        let reason = match reason.as_deref() {
            None | Some("other") => SessionEndReason::Other,
            Some(other) => serde_json::from_value(serde_json::Value::String(other.to_string()))
                .map_err(|_| {
                    api_error(ApiError::invalid_argument(format!(
                        "unknown shutdown reason `{other}` (expected other, clear, logout or \
                         prompt_input_exit)"
                    )))
                })?,
        };
        self.session.shutdown(reason).await;
        self.close();
        Ok(())
    }

    /// True while a prompt runs or waits.
    #[napi]
    pub fn is_executing(&self) -> bool {
        self.session.is_executing()
    }

    /// The queued prompt as displayed.
    #[napi]
    pub fn get_pending_prompt(&self) -> Option<String> {
        self.session.get_pending_prompt()
    }

    /// The chat messages as JSON.
    #[napi]
    pub fn get_messages(&self) -> napi::Result<String> {
        to_json(&self.session.get_messages())
    }

    /// The full history (messages and event entries) as JSON.
    #[napi]
    pub fn get_full_history(&self) -> napi::Result<String> {
        to_json(&self.session.get_full_history())
    }

    /// The context window state as JSON.
    #[napi]
    pub fn get_context_state(&self) -> napi::Result<String> {
        to_json(&self.session.get_context_state())
    }

    /// The configuration problems the session worked around when it opened, as a JSON array of
    /// `{file?, json_path, kind, message}`.
    #[napi]
    pub fn get_warnings(&self) -> napi::Result<String> {
        to_json(&self.session.get_warnings())
    }

    /// What opening the saved session found damaged, repaired or unfinished, as JSON (`null`:
    /// nothing to tell).
    #[napi]
    pub fn get_recovery_report(&self) -> napi::Result<String> {
        to_json(&self.session.get_recovery_report())
    }

    /// The OS sandbox's status as JSON.
    #[napi]
    pub fn sandbox_status(&self) -> napi::Result<String> {
        to_json(&self.session.sandbox_status())
    }

    /// The current prompt's answer so far.
    #[napi]
    pub fn get_streaming_text(&self) -> String {
        self.session.get_streaming_text()
    }

    /// The current prompt's tool calls as JSON.
    #[napi]
    pub fn get_active_tools(&self) -> napi::Result<String> {
        to_json(&self.session.get_active_tools())
    }

    /// The session's name.
    #[napi]
    pub fn get_name(&self) -> Option<String> {
        self.session.get_name()
    }

    /// Names the session (`null` clears the name). Renaming saves the session: with a
    /// JavaScript store use `renameSession`, which saves off the JavaScript thread.
    #[napi]
    pub fn set_name(&self, name: Option<String>) -> napi::Result<()> {
        if self.session.host_store {
            return Err(api_error(ApiError::invalid_argument(
                "this session is saved in a JavaScript `sessionStore`: rename it with \
                 `await session.rename(name)`",
            )));
        }
        self.session.set_name(name).map_err(|e| api_error(e.into()))
    }

    /// Names the session (`null` clears the name), saving it off the JavaScript thread.
    #[napi]
    pub async fn rename_session(&self, name: Option<String>) -> napi::Result<()> {
        let session = Arc::clone(&self.session);
        tokio::task::spawn_blocking(move || session.set_name(name))
            .await
            .map_err(|e| {
                api_error(ApiError::new(
                    robota::api::ApiErrorKind::Session,
                    format!("renaming failed: {e}"),
                ))
            })?
            .map_err(|e| api_error(e.into()))
    }

    /// The session id.
    #[napi]
    pub fn get_session_id(&self) -> String {
        self.session.get_session_id()
    }

    /// Compacts the conversation now; resolves to the summary as JSON.
    #[napi]
    pub async fn compact(&self, instructions: Option<String>) -> napi::Result<String> {
        let summary = self
            .session
            .compact(instructions)
            .await
            .map_err(|e| api_error(e.into()))?;
        to_json(&summary)
    }

    /// Stops event delivery and drops this object's hold on the JavaScript functions.
    fn close(&self) {
        self.stopped.store(true, Ordering::Release);
        self.subscription.unsubscribe();
        self.bridge
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
    }
}

impl Drop for NativeSession {
    fn drop(&mut self) {
        self.close();
    }
}
