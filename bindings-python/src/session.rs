//! `NativeSession`: an [`InteractiveSession`] for Python, with `submit` awaitables that resolve
//! when *that* prompt's run ends, and `NativeEvents`, a pull subscription read in batches.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use robota::api::{ApiError, SessionConfig};
use robota::framework::interactive::{
    InteractiveError, InteractiveEvent, InteractiveEventKind, InteractiveSession,
    InteractiveSessionOptions, PromptEnd, PromptResult, SubmitStatus, Subscription,
};
use robota::hooks::SessionEndReason;
use serde_json::{json, Value};

use crate::bridge::LoopSlot;
use crate::convert::{from_py, ser_to_py, to_py, Json};
use crate::errors::{api_error, invalid_argument};
use crate::extensions::{build_command_modules, build_extensions, build_provider};

fn runtime() -> &'static tokio::runtime::Runtime {
    pyo3_async_runtimes::tokio::get_runtime()
}

/// Cancels *its* prompt when a `submit` awaitable is cancelled (Ctrl-C, `task.cancel()`,
/// timeout): a queued prompt is dropped, a running one aborted; the other prompt is kept.
struct CancelOnDrop(Option<(Arc<InteractiveSession>, u64)>);

impl CancelOnDrop {
    /// The prompt ended: nothing to cancel any more.
    fn disarm(&mut self) {
        self.0 = None;
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some((session, id)) = self.0.take() {
            session.cancel_prompt(id);
        }
    }
}

/// The same, at once: a done-callback on the `submit` future, run on the event loop before the
/// cancelled task resumes, so the prompt is cancelled when `await` raises `CancelledError`
/// (dropping the Rust future, and with it [`CancelOnDrop`], happens later on a tokio thread).
#[pyclass(frozen)]
struct CancelPromptOnCancel {
    session: Arc<InteractiveSession>,
    /// The prompt's id once its ticket is known, until it ended.
    id: Arc<Mutex<Option<u64>>>,
}

#[pymethods]
impl CancelPromptOnCancel {
    fn __call__(&self, py: Python<'_>, future: &Bound<'_, PyAny>) {
        let cancelled = future
            .call_method0("cancelled")
            .and_then(|c| c.is_truthy())
            .unwrap_or(false);
        let id = self
            .id
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let (true, Some(id)) = (cancelled, id) {
            let session = Arc::clone(&self.session);
            py.detach(|| session.cancel_prompt(id));
        }
    }
}

/// How a prompt ended, as the event that reported it (`{"type": "cancelled"}` when it never ran).
/// `seq` is that event's ([`PromptEnd::event_seq`]).
fn final_event(session: &InteractiveSession, end: PromptEnd) -> Value {
    let PromptEnd { result, event_seq } = end;
    // Only a prompt that never ran has no event; 0 (no wait on the Python side) otherwise.
    let seq = event_seq.unwrap_or(0);
    if result == PromptResult::Cancelled {
        return json!({"type": "cancelled"});
    }
    let kind = result.event();
    let event = InteractiveEvent {
        session_id: session.get_session_id(),
        seq,
        kind,
    };
    serde_json::to_value(&event).unwrap_or(Value::Null)
}

/// The native half of `robota.InteractiveSession` (use that class; this one is internal).
#[pyclass(frozen, module = "robota._native")]
pub struct NativeSession {
    session: Arc<InteractiveSession>,
    slot: Arc<LoopSlot>,
}

fn interactive_error(e: InteractiveError) -> PyErr {
    api_error(ApiError::from(e))
}

/// The browser step of remote MCP servers' OAuth: `open(server, url)` (the `robota` package's
/// adapter, which also runs a coroutine the host's function returns) is called on a thread of
/// its own, not on the host's event loop: the URL is asked for while the servers connect in the
/// background, whatever the loop is doing then, and the engine must not wait for it.
fn authorization_handler(open: Py<PyAny>) -> robota::mcp::McpAuthorizationHandler {
    let open = Arc::new(open);
    robota::mcp::McpAuthorizationHandler::new(move |server, url| {
        let open = Arc::clone(&open);
        let (server, url) = (server.to_string(), url.to_string());
        std::thread::spawn(move || {
            crate::aio::with_python(|py| {
                if let Err(error) = open.call1(py, (server, url)) {
                    error.print(py);
                }
            });
        });
    })
}

#[pymethods]
impl NativeSession {
    /// Creates a session. `config` is a dict of plain options (`robota::api::SessionConfig`);
    /// the other arguments are the host's extensions, already adapted by `robota`.
    #[new]
    #[pyo3(signature = (config, provider, tools, permission_handler, hooks, command_modules, builtin_commands, event_buffer, mcp_authorization=None, session_store=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        config: &Bound<'_, PyAny>,
        provider: &Bound<'_, PyAny>,
        tools: &Bound<'_, PyList>,
        permission_handler: Option<Py<PyAny>>,
        hooks: &Bound<'_, PyList>,
        command_modules: &Bound<'_, PyList>,
        builtin_commands: bool,
        event_buffer: Option<usize>,
        mcp_authorization: Option<Py<PyAny>>,
        session_store: Option<Py<PyAny>>,
    ) -> PyResult<Self> {
        let slot = LoopSlot::new();
        slot.capture(py);
        let config = SessionConfig::from_json_value(from_py(config)?).map_err(api_error)?;
        let skills = config.skill_registrations();
        let edit_checkpoints = config.edit_checkpoints_enabled();
        let commands = config.command_registrations();
        let _guard = runtime().enter();
        let provider = build_provider(provider, &slot)?;
        let mut options = config.into_session_options(provider).map_err(api_error)?;
        build_extensions(&mut options, tools, permission_handler, hooks, &slot)?;
        if let Some(open) = mcp_authorization {
            options.mcp_authorization_handler = Some(authorization_handler(open));
        }
        if let Some(store) = session_store {
            let store = Arc::new(crate::store::PyHostStore::new(py, store));
            robota::api::attach_host_store(&mut options, store).map_err(api_error)?;
        }
        let mut interactive = InteractiveSessionOptions::new(options);
        interactive.skills = skills;
        interactive.edit_checkpoints = edit_checkpoints;
        interactive.commands = commands;
        let mut modules = build_command_modules(command_modules, &slot)?;
        if builtin_commands {
            interactive.command_modules.append(&mut modules);
        } else {
            interactive.command_modules = modules;
        }
        if let Some(buffer) = event_buffer {
            if buffer == 0 {
                return Err(invalid_argument("`event_buffer` must be at least 1"));
            }
            interactive.event_buffer = buffer;
        }
        let session = py
            .detach(|| InteractiveSession::new(interactive))
            .map_err(interactive_error)?;
        crate::aio::stop_at_exit(session.session());
        Ok(NativeSession { session, slot })
    }

    /// Submits a prompt; the awaitable resolves with `{"status": "started"|"queued", "event":
    /// <the complete/interrupted/error event, with its `seq`, or {"type": "cancelled"}>}` when
    /// its run ends. Cancelling the awaitable cancels this prompt only.
    ///
    /// The prompt is accepted (started or queued) or refused *here*, before the awaitable is
    /// returned, so prompts submitted one after the other (`asyncio.gather(submit(a),
    /// submit(b))`) are accepted in that order; a refusal raises at once.
    #[pyo3(signature = (input, display_input=None, raw_input=None, traceparent=None, tracestate=None, output_format=None))]
    #[allow(clippy::too_many_arguments)]
    fn submit<'py>(
        &self,
        py: Python<'py>,
        input: String,
        display_input: Option<String>,
        raw_input: Option<String>,
        traceparent: Option<String>,
        tracestate: Option<String>,
        output_format: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.slot.capture(py);
        let output_format = output_format.map(from_py).transpose()?;
        let session = Arc::clone(&self.session);
        robota::api::trace_next_prompt(session.session(), traceparent, tracestate)
            .map_err(api_error)?;
        let ticket = py
            .detach(|| {
                let _guard = runtime().enter();
                robota::api::submit_prompt(
                    &session,
                    &input,
                    display_input.as_deref(),
                    raw_input.as_deref(),
                    output_format,
                )
            })
            .map_err(api_error)?;
        let status = match ticket.status() {
            SubmitStatus::Started => "started",
            SubmitStatus::Queued => "queued",
        };
        let id = Arc::new(Mutex::new(Some(ticket.id())));
        let on_cancel = CancelPromptOnCancel {
            session: Arc::clone(&session),
            id: Arc::clone(&id),
        };
        // Moved into the awaitable: dropping it unfinished (cancelled, or never scheduled)
        // cancels this prompt.
        let mut guard = CancelOnDrop(Some((Arc::clone(&session), ticket.id())));
        let future = crate::aio::awaitable(py, async move {
            let end = ticket.end().await;
            guard.disarm();
            id.lock().unwrap_or_else(PoisonError::into_inner).take();
            let event = final_event(&session, end);
            Ok(Json(json!({"status": status, "event": event})))
        })?;
        future.call_method1("add_done_callback", (on_cancel,))?;
        Ok(future)
    }

    /// Aborts the running prompt and drops the queued one.
    fn abort(&self, py: Python<'_>) {
        let session = Arc::clone(&self.session);
        py.detach(|| session.abort());
    }

    /// Drops the queued prompt; returns it (as displayed), or `None`.
    fn cancel_queue(&self, py: Python<'_>) -> Option<String> {
        let session = Arc::clone(&self.session);
        py.detach(|| session.cancel_queue())
    }

    /// Waits until no prompt is running or queued.
    fn wait_idle<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.slot.capture(py);
        let session = Arc::clone(&self.session);
        crate::aio::awaitable(py, async move {
            session.wait_idle().await;
            // The `seq` of the last event by then: the facade waits for it to be delivered.
            Ok(session.last_event_seq())
        })
    }

    /// Runs a slash command; resolves with the `CommandResult` as a dict.
    fn execute_command<'py>(
        &self,
        py: Python<'py>,
        name: String,
        args: String,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.slot.capture(py);
        let session = Arc::clone(&self.session);
        crate::aio::awaitable(py, async move {
            let result = session
                .execute_command(&name, &args)
                .await
                .map_err(interactive_error)?;
            let value = serde_json::to_value(&result)
                .map_err(|e| crate::errors::internal(e.to_string()))?;
            Ok(Json(value))
        })
    }

    /// The commands users can run (list of dicts).
    fn list_commands<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let commands = self.session.list_commands().map_err(interactive_error)?;
        ser_to_py(py, &commands)
    }

    /// The skills of the session (see `robota.InteractiveSession.list_skills`).
    fn list_skills<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        ser_to_py(py, &self.session.list_skills())
    }

    /// The plugins of the session's user and project (see
    /// `robota.InteractiveSession.list_plugins`).
    fn list_plugins<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        ser_to_py(py, &self.session.list_plugins())
    }

    /// The edit checkpoints (list of dicts, oldest first).
    fn list_edit_checkpoints<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let list = self
            .session
            .list_edit_checkpoints()
            .map_err(interactive_error)?;
        ser_to_py(py, &list)
    }

    /// One edit checkpoint with its files and restore/rollback ranges (dict).
    fn inspect_edit_checkpoint<'py>(
        &self,
        py: Python<'py>,
        checkpoint_id: &str,
    ) -> PyResult<Bound<'py, PyAny>> {
        let inspection = self
            .session
            .inspect_edit_checkpoint(checkpoint_id)
            .map_err(interactive_error)?;
        ser_to_py(py, &inspection)
    }

    /// Restores files to a checkpoint (`rollback`: through it); the report (dict).
    #[pyo3(signature = (checkpoint_id, rollback=false))]
    fn restore_edit_checkpoint<'py>(
        &self,
        py: Python<'py>,
        checkpoint_id: &str,
        rollback: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let report = if rollback {
            self.session.rollback_edit_checkpoint(checkpoint_id)
        } else {
            self.session.restore_edit_checkpoint(checkpoint_id)
        }
        .map_err(interactive_error)?;
        ser_to_py(py, &report)
    }

    /// The background tasks (list of dicts, oldest first).
    fn list_background_tasks<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        ser_to_py(py, &self.session.list_background_tasks())
    }

    /// One background task (dict), or `None` for an unknown id.
    fn get_background_task<'py>(
        &self,
        py: Python<'py>,
        task_id: &str,
    ) -> PyResult<Bound<'py, PyAny>> {
        ser_to_py(py, &self.session.get_background_task(task_id))
    }

    /// Stops a running task with its process tree; resolves with the task (dict).
    fn cancel_background_task<'py>(
        &self,
        py: Python<'py>,
        task_id: String,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.slot.capture(py);
        let session = Arc::clone(&self.session);
        crate::aio::awaitable(py, async move {
            let task = session
                .cancel_background_task(&task_id)
                .await
                .map_err(interactive_error)?;
            let value =
                serde_json::to_value(&task).map_err(|e| crate::errors::internal(e.to_string()))?;
            Ok(Json(value))
        })
    }

    /// Waits until a task has ended (at most `timeout_ms`); resolves with the task (dict).
    fn wait_background_task<'py>(
        &self,
        py: Python<'py>,
        task_id: String,
        timeout_ms: u64,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.slot.capture(py);
        let session = Arc::clone(&self.session);
        crate::aio::awaitable(py, async move {
            let task = session
                .wait_background_task(&task_id, Duration::from_millis(timeout_ms))
                .await
                .map_err(interactive_error)?;
            let value =
                serde_json::to_value(&task).map_err(|e| crate::errors::internal(e.to_string()))?;
            Ok(Json(value))
        })
    }

    /// Removes an ended task from the list; the task (dict).
    fn close_background_task<'py>(
        &self,
        py: Python<'py>,
        task_id: &str,
    ) -> PyResult<Bound<'py, PyAny>> {
        let task = self
            .session
            .close_background_task(task_id)
            .map_err(interactive_error)?;
        ser_to_py(py, &task)
    }

    /// A page of a task's output file (dict).
    fn read_background_task_log<'py>(
        &self,
        py: Python<'py>,
        task_id: &str,
        stream: &str,
        offset: u64,
        max_bytes: usize,
    ) -> PyResult<Bound<'py, PyAny>> {
        let stream = match stream {
            "stdout" => robota::tools::builtins::LogStream::Stdout,
            "stderr" => robota::tools::builtins::LogStream::Stderr,
            other => {
                return Err(invalid_argument(format!(
                    "stream must be \"stdout\" or \"stderr\", got {other:?}"
                )))
            }
        };
        let page = self
            .session
            .read_background_task_log(task_id, stream, offset, max_bytes)
            .map_err(interactive_error)?;
        ser_to_py(py, &page)
    }

    /// Runs a subagent from host code; resolves with its report (dict).
    #[pyo3(signature = (prompt, agent_type=None, model=None, isolation=None))]
    fn run_subagent<'py>(
        &self,
        py: Python<'py>,
        prompt: &str,
        agent_type: Option<&str>,
        model: Option<&str>,
        isolation: Option<&str>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let request = robota::api::subagent_request(prompt, agent_type, model, isolation)
            .map_err(api_error)?;
        self.slot.capture(py);
        let session = Arc::clone(&self.session);
        crate::aio::awaitable(py, async move {
            let report = session
                .run_subagent(request)
                .await
                .map_err(interactive_error)?;
            let value = serde_json::to_value(&report)
                .map_err(|e| crate::errors::internal(e.to_string()))?;
            Ok(Json(value))
        })
    }

    /// Starts a subagent from host code as a background task; the task (dict) at once.
    #[pyo3(signature = (prompt, agent_type=None, model=None, isolation=None))]
    fn start_background_subagent<'py>(
        &self,
        py: Python<'py>,
        prompt: &str,
        agent_type: Option<&str>,
        model: Option<&str>,
        isolation: Option<&str>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let request = robota::api::subagent_request(prompt, agent_type, model, isolation)
            .map_err(api_error)?;
        // The subagent runs on the binding's runtime.
        let _runtime = runtime().enter();
        let task = self
            .session
            .start_background_subagent(request)
            .map_err(interactive_error)?;
        ser_to_py(py, &task)
    }

    /// The MCP servers of the session (see `robota.InteractiveSession.list_mcp_servers`).
    fn list_mcp_servers<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        ser_to_py(py, &self.session.list_mcp_servers())
    }

    /// Waits until the MCP servers are done starting, for at most `timeout_ms` (`None`: until
    /// they are); resolves with whether none is still starting.
    #[pyo3(signature = (timeout_ms=None))]
    fn wait_for_mcp_servers<'py>(
        &self,
        py: Python<'py>,
        timeout_ms: Option<u64>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.slot.capture(py);
        let session = Arc::clone(&self.session);
        crate::aio::awaitable(py, async move {
            Ok(session
                .wait_for_mcp_servers(timeout_ms.map(std::time::Duration::from_millis))
                .await)
        })
    }

    /// Sends the recorded spans and metrics now (the export timeout at most); true when all
    /// went out in time.
    fn flush_telemetry<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.slot.capture(py);
        let session = Arc::clone(&self.session);
        crate::aio::awaitable(
            py,
            async move { Ok(session.session().flush_telemetry().await) },
        )
    }

    /// Shuts the session down (aborts any run; SessionEnd hooks fire once).
    #[pyo3(signature = (reason=None))]
    fn shutdown<'py>(
        &self,
        py: Python<'py>,
        reason: Option<String>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.slot.capture(py);
        let reason = match reason.as_deref() {
            None => SessionEndReason::Other,
            Some(text) => serde_json::from_value::<SessionEndReason>(Value::String(text.into()))
                .map_err(|e| invalid_argument(format!("unknown shutdown reason `{text}`: {e}")))?,
        };
        let session = Arc::clone(&self.session);
        crate::aio::awaitable(py, async move {
            session.shutdown(reason).await;
            Ok(())
        })
    }

    /// Compacts the conversation now; resolves with the summary as a dict.
    #[pyo3(signature = (instructions=None))]
    fn compact<'py>(
        &self,
        py: Python<'py>,
        instructions: Option<String>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.slot.capture(py);
        let session = Arc::clone(&self.session);
        crate::aio::awaitable(py, async move {
            let summary = session
                .compact(instructions)
                .await
                .map_err(interactive_error)?;
            let value = serde_json::to_value(&summary)
                .map_err(|e| crate::errors::internal(e.to_string()))?;
            Ok(Json(value))
        })
    }

    /// True while a prompt runs (or one is queued to run next).
    fn is_executing(&self) -> bool {
        self.session.is_executing()
    }

    /// The queued prompt as displayed, or `None`.
    fn get_pending_prompt(&self) -> Option<String> {
        self.session.get_pending_prompt()
    }

    /// The chat messages (list of dicts).
    fn get_messages<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        ser_to_py(py, &self.session.get_messages())
    }

    /// The full history: messages and event entries (list of dicts).
    fn get_full_history<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        ser_to_py(py, &self.session.get_full_history())
    }

    /// How full the context window is (dict).
    fn get_context_state<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        ser_to_py(py, &self.session.get_context_state())
    }

    /// The configuration problems the session worked around when it opened (list of dicts:
    /// `file`?, `json_path`, `kind`, `message`).
    fn get_warnings<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        ser_to_py(py, &self.session.get_warnings())
    }

    /// What opening the saved session found damaged, repaired or unfinished (dict or None).
    fn get_recovery_report<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        ser_to_py(py, &self.session.get_recovery_report())
    }

    /// The OS sandbox's status (dict).
    fn sandbox_status<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        ser_to_py(py, &self.session.sandbox_status())
    }

    /// The answer text of the current prompt so far.
    fn get_streaming_text(&self) -> String {
        self.session.get_streaming_text()
    }

    /// The tool calls of the current prompt (list of dicts).
    fn get_active_tools<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        ser_to_py(py, &self.session.get_active_tools())
    }

    /// The session's name.
    fn get_name(&self) -> Option<String> {
        self.session.get_name()
    }

    /// Names the session (`None` clears the name).
    #[pyo3(signature = (name))]
    fn set_name(&self, py: Python<'_>, name: Option<String>) -> PyResult<()> {
        // Detached: renaming saves the snapshot, which may call a store written in Python from
        // the session's thread.
        py.detach(|| self.session.set_name(name))
            .map_err(interactive_error)
    }

    /// The session id.
    fn get_session_id(&self) -> String {
        self.session.get_session_id()
    }

    /// True once the session was shut down.
    fn is_shut_down(&self) -> bool {
        self.session.is_shut_down()
    }

    /// The permission mode.
    fn get_permission_mode<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        ser_to_py(py, &self.session.session().permission_mode())
    }

    /// A new pull subscription; events emitted from now on are queued for it.
    fn subscribe(&self) -> NativeEvents {
        NativeEvents {
            subscription: Arc::new(self.session.subscribe_pull()),
        }
    }
}

/// A pull subscription to a session's events (internal; see `InteractiveSession.events()`).
#[pyclass(frozen, module = "robota._native")]
pub struct NativeEvents {
    subscription: Arc<Subscription>,
}

#[pymethods]
impl NativeEvents {
    /// The `seq` of the last event emitted before this subscription began.
    #[getter]
    fn subscribed_after(&self) -> u64 {
        self.subscription.subscribed_after()
    }

    /// Waits up to `timeout` seconds for at least one event, then returns up to `max` queued
    /// events as dicts (an empty list on timeout). Returns `None` once closed.
    #[pyo3(signature = (max=1024, timeout=3600.0))]
    fn next_batch<'py>(
        &self,
        py: Python<'py>,
        max: usize,
        timeout: f64,
    ) -> PyResult<Bound<'py, PyAny>> {
        if !timeout.is_finite() || timeout < 0.0 {
            return Err(invalid_argument(
                "`timeout` must be a non-negative number of seconds",
            ));
        }
        let subscription = Arc::clone(&self.subscription);
        let max = max.max(1);
        crate::aio::awaitable(py, async move {
            let mut events = Vec::new();
            if let Some(first) = subscription.try_next_event() {
                events.push(first);
            } else {
                match subscription
                    .next_event(Duration::from_secs_f64(timeout))
                    .await
                {
                    Some(first) => events.push(first),
                    None => return Ok(EventBatch(None)),
                }
            }
            while events.len() < max {
                match subscription.try_next_event() {
                    Some(event) => events.push(event),
                    None => break,
                }
            }
            Ok(EventBatch(Some(events)))
        })
    }

    /// The queued events (up to `max`) without waiting.
    #[pyo3(signature = (max=1024))]
    fn drain<'py>(&self, py: Python<'py>, max: usize) -> PyResult<Bound<'py, PyAny>> {
        let mut events = Vec::new();
        while events.len() < max.max(1) {
            match self.subscription.try_next_event() {
                Some(event) => events.push(event),
                None => break,
            }
        }
        events_to_list(py, &events).map(Bound::into_any)
    }

    /// Stops delivery; a waiting `next_batch` returns `None`.
    fn close(&self) {
        self.subscription.unsubscribe();
    }
}

/// The result of `next_batch`: events, or `None` when the wait timed out or the subscription is
/// closed (the caller tells them apart with its own closed flag).
struct EventBatch(Option<Vec<InteractiveEvent>>);

impl<'py> IntoPyObject<'py> for EventBatch {
    type Target = PyAny;
    type Output = Bound<'py, PyAny>;
    type Error = PyErr;

    fn into_pyobject(self, py: Python<'py>) -> Result<Self::Output, Self::Error> {
        match self.0 {
            None => Ok(py.None().into_bound(py)),
            Some(events) => events_to_list(py, &events).map(Bound::into_any),
        }
    }
}

fn events_to_list<'py>(
    py: Python<'py>,
    events: &[InteractiveEvent],
) -> PyResult<Bound<'py, PyList>> {
    let list = PyList::empty(py);
    for event in events {
        list.append(event_to_py(py, event)?)?;
    }
    Ok(list)
}

/// One event as a dict, with a fast path for the most frequent kind.
fn event_to_py<'py>(py: Python<'py>, event: &InteractiveEvent) -> PyResult<Bound<'py, PyAny>> {
    if let InteractiveEventKind::TextDelta { text } = &event.kind {
        let dict = PyDict::new(py);
        dict.set_item(pyo3::intern!(py, "session_id"), &event.session_id)?;
        dict.set_item(pyo3::intern!(py, "seq"), event.seq)?;
        dict.set_item(pyo3::intern!(py, "type"), pyo3::intern!(py, "text_delta"))?;
        dict.set_item(pyo3::intern!(py, "text"), text)?;
        return Ok(dict.into_any());
    }
    let value = serde_json::to_value(event)
        .map_err(|e| crate::errors::internal(format!("cannot convert an event: {e}")))?;
    to_py(py, &value)
}
