//! `robota_session`: an interactive session, its events and subscriptions.

use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::{c_char, c_void};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use engine::api::{ApiError, HostCommand};
use engine::framework::interactive::{
    InteractiveError, InteractiveEvent, InteractiveSession, InteractiveSessionOptions,
    SubmitStatus, Subscription,
};
use engine::hooks::SessionEndReason;
use serde_json::Value;

use crate::boundary::ffi_boundary;
use crate::error::{
    robota_error, robota_status, FfiError, ROBOTA_STATUS_INVALID_JSON, ROBOTA_STATUS_INVALID_STATE,
    ROBOTA_STATUS_TIMEOUT,
};
use crate::host::{robota_result_callback, ResultCallback};
use crate::options::{robota_session_options, split_options, OptionsInner};
use crate::provider::robota_provider;
use crate::runtime::{on_engine_thread, RuntimeInner};
use crate::strings::{json_arg, str_arg, write_string};

/// One event, passed to a `robota_event_callback`. Every pointer is borrowed for the duration
/// of the callback only; copy what you keep.
#[repr(C)]
pub struct robota_event {
    /// Length in bytes of `kind` (without the terminating NUL).
    pub kind_len: u32,
    /// The event type, e.g. `"text_delta"`, `"complete"`, `"server_tool_use"` (`id`, `name`,
    /// `input`: a tool the provider runs itself, such as Anthropic web search, was called) or
    /// `"server_tool_result"` (`tool_use_id`, `result_type`, `is_error`); NUL-terminated UTF-8.
    pub kind: *const c_char,
    /// Strictly increasing within the session, starting at 1.
    pub seq: u64,
    /// The whole event as a JSON object (`{"session_id", "seq", "type", ...}`); NUL-terminated.
    pub json: *const c_char,
    /// Length in bytes of `json` (without the terminating NUL).
    pub json_len: usize,
}

/// Receives events of a subscription. Called on an engine thread, one event at a time and in
/// order for one subscription; `ev` and everything it points to is valid only during the call.
/// The callback may call any function of this library except blocking waits
/// (`robota_session_wait_idle`, `robota_session_next_event` with a timeout, which fail with
/// `ROBOTA_STATUS_INVALID_STATE` there) and `robota_session_free`.
pub type robota_event_callback =
    Option<unsafe extern "C" fn(user_data: *mut c_void, ev: *const robota_event)>;

/// Releases a callback's `user_data` (event subscriptions, host tools, permission handlers,
/// hooks, commands, host providers); called exactly once, after the last call of that
/// callback, possibly on an engine thread. Must not call back into a session it belongs to.
pub type robota_free_callback = Option<unsafe extern "C" fn(user_data: *mut c_void)>;

/// The host's `user_data` pointer; the host promises it may be used from engine threads.
struct UserData(*mut c_void);
// SAFETY: documented contract: callbacks and finalizers run on engine threads.
unsafe impl Send for UserData {}
// SAFETY: as above.
unsafe impl Sync for UserData {}

thread_local! {
    /// The callback subscriptions whose callback is running on this thread.
    static IN_CALLBACK: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
}

/// A callback subscription: gates calls so that none happens after `unsubscribe` returns, and
/// runs the finalizer exactly once.
struct CallbackSub {
    callback: unsafe extern "C" fn(*mut c_void, *const robota_event),
    user_data: UserData,
    finalizer: Mutex<Option<unsafe extern "C" fn(*mut c_void)>>,
    active: AtomicBool,
    /// Held while the callback runs; `unsubscribe` takes it to wait for a running call.
    calling: Mutex<()>,
    /// The events to deliver.
    events: Arc<Subscription>,
    /// Counts the times the delivery task found the queue empty (for `flush`).
    drained: AtomicU64,
    drained_notify: tokio::sync::Notify,
    /// Makes the delivery task look at its queue again.
    kick: tokio::sync::Notify,
}

impl CallbackSub {
    fn id(&self) -> usize {
        self as *const Self as usize
    }

    fn deliver(&self, event: InteractiveEvent) {
        if !self.active.load(Ordering::SeqCst) {
            return;
        }
        let Ok(json) = serde_json::to_string(&event) else {
            return;
        };
        let kind_c = std::ffi::CString::new(event.kind.type_name()).unwrap_or_default();
        // JSON text never holds a raw NUL (it would be escaped), so this only appends one.
        let json_c = std::ffi::CString::new(json).unwrap_or_default();
        {
            let _calling = self.calling.lock().unwrap_or_else(PoisonError::into_inner);
            if !self.active.load(Ordering::SeqCst) {
                return;
            }
            let ev = robota_event {
                kind_len: kind_c.as_bytes().len() as u32,
                kind: kind_c.as_ptr(),
                seq: event.seq,
                json: json_c.as_ptr(),
                json_len: json_c.as_bytes().len(),
            };
            IN_CALLBACK.with(|v| v.borrow_mut().push(self.id()));
            // SAFETY: the host's callback with its own user_data and a valid event.
            unsafe { (self.callback)(self.user_data.0, &ev) };
            IN_CALLBACK.with(|v| v.borrow_mut().retain(|&id| id != self.id()));
        }
        // Unsubscribed from inside its own callback: finalize now that the call returned.
        if !self.active.load(Ordering::SeqCst) {
            self.finalize();
        }
    }

    /// Stops calls; waits for a running call (unless called from inside it) and finalizes.
    fn unsubscribe(&self) {
        self.active.store(false, Ordering::SeqCst);
        self.events.unsubscribe();
        self.kick.notify_one();
        self.drained_notify.notify_waiters();
        let inside = IN_CALLBACK.with(|v| v.borrow().contains(&self.id()));
        if inside {
            // `deliver` finalizes when the callback returns.
            return;
        }
        drop(self.calling.lock().unwrap_or_else(PoisonError::into_inner));
        self.finalize();
    }

    /// The delivery task: calls the callback for every event, in order, until unsubscribed.
    async fn run(self: Arc<Self>) {
        loop {
            while let Some(event) = self.events.try_next_event() {
                let _ =
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.deliver(event)));
            }
            if !self.active.load(Ordering::SeqCst) {
                return;
            }
            self.drained.fetch_add(1, Ordering::SeqCst);
            self.drained_notify.notify_waiters();
            tokio::select! {
                event = self.events.next_event(Duration::from_secs(3600)) => {
                    if let Some(event) = event {
                        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                            self.deliver(event)
                        }));
                    }
                }
                _ = self.kick.notified() => {}
            }
        }
    }

    /// Waits until every event queued before the call has been delivered.
    async fn flush(&self) {
        let start = self.drained.load(Ordering::SeqCst);
        self.kick.notify_one();
        loop {
            let notified = self.drained_notify.notified();
            if self.drained.load(Ordering::SeqCst) > start || !self.active.load(Ordering::SeqCst) {
                return;
            }
            notified.await;
        }
    }

    fn finalize(&self) {
        let finalizer = self
            .finalizer
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(finalizer) = finalizer {
            // SAFETY: the host's finalizer, called once with its user_data.
            unsafe { finalizer(self.user_data.0) };
        }
    }
}

impl Drop for CallbackSub {
    fn drop(&mut self) {
        self.finalize();
    }
}

enum Sub {
    Callback(Arc<CallbackSub>),
    Pull(Arc<Subscription>),
}

pub(crate) struct SessionShared {
    pub(crate) session: Arc<InteractiveSession>,
    pub(crate) runtime: Arc<RuntimeInner>,
    subs: Mutex<HashMap<u64, Sub>>,
    next_id: AtomicU64,
    /// The subscription id 0 refers to, when the options asked for `pull_events`.
    default_pull: Option<Arc<Subscription>>,
}

impl SessionShared {
    fn subs(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Sub>> {
        self.subs.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// An interactive session. Opaque; create with `robota_session_new` or
/// `robota_session_new_json`, free with
/// `robota_session_free`. Every function on it is callable from any thread.
pub struct robota_session {
    shared: Arc<SessionShared>,
}

pub(crate) fn session_error(e: InteractiveError) -> FfiError {
    FfiError::from(ApiError::from(e))
}

/// # Safety
/// `s` is NULL or a live session.
pub(crate) unsafe fn session_arg<'a>(
    s: *const robota_session,
) -> Result<&'a SessionShared, FfiError> {
    if s.is_null() {
        return Err(FfiError::null("session"));
    }
    let shared = &(*s).shared;
    shared.runtime.check_fork()?;
    Ok(shared)
}

fn encode<T: serde::Serialize>(value: &T) -> Result<String, FfiError> {
    serde_json::to_string(value)
        .map_err(|e| FfiError::new(ROBOTA_STATUS_INVALID_JSON, format!("cannot encode: {e}")))
}

/// Writes an owned JSON string to a required out-pointer.
///
/// # Safety
/// `out` is NULL or valid for writes.
pub(crate) unsafe fn write_json<T: serde::Serialize>(
    out: *mut *mut c_char,
    name: &str,
    value: &T,
) -> Result<(), FfiError> {
    if out.is_null() {
        return Err(FfiError::null(name));
    }
    write_string(out, encode(value)?);
    Ok(())
}

pub(crate) fn refuse_on_engine_thread(what: &str) -> Result<(), FfiError> {
    if on_engine_thread() {
        return Err(FfiError::new(
            ROBOTA_STATUS_INVALID_STATE,
            format!("`{what}` blocks and cannot be called on an engine thread (from a callback)"),
        ));
    }
    Ok(())
}

/// Creates an interactive session on `provider` (and the provider's runtime) from JSON options
/// only (no host callbacks); see `robota_session_new` for callbacks.
///
/// `options_json` (may be empty for all defaults) is an object with the optional fields
/// `cwd` (default: the process's current directory), `permission_mode` (`"default"`,
/// `"acceptEdits"`, `"plan"`, `"bypassPermissions"`, `"dontAsk"`), `system_prompt`,
/// `append_system_prompt`, `max_turns` (0: no cap), `session_id`, `load_project_context`,
/// `home` (the user settings directory; without it no user settings are read), `settings`
/// (settings object applied above every file), `settings_from_environment` (`true`: real
/// `HOME` and environment, like the CLI), `env`, `builtin_tools` (`false`: no built-in
/// file/shell/web tools), `persistence` (`"none"`, `"project"`, `{"store": {"sessions_dir",
/// "logs_dir"}}`, `{"sqlite": {"path"}}`: one SQLite database for many sessions, or
/// `{"postgres": {"url" | "url_env", "project"}}`: a PostgreSQL database shared by many workers),
/// `resume_session_id`, `fork_session`, `max_budget_usd`, `fallback_model` (a second model
/// of the same provider, answering while the main one is overloaded — HTTP 529 or 503 after
/// the provider's retries; each switch is a `session` event `{"type": "warning", "source":
/// "fallback_model", "message"}`; the main model itself, or a provider that cannot switch
/// models, fails when the session is created, naming `fallback_model`), `auto_compact`,
/// `context_window`, `telemetry` (OpenTelemetry export over OTLP: `{"endpoint":
/// "http://collector:4318", "protocol": "http" | "grpc", "headers": {…}, "serviceName": …,
/// "timeoutMs": …}`; `{}` reads the `OTEL_EXPORTER_OTLP_*` variables), `traceparent` and
/// `tracestate` (the host's W3C trace context: the prompts' spans join that trace) and
/// `pull_events` (`true`: subscription id 0 of
/// `robota_session_next_event` receives every event from creation on). Unknown fields are
/// rejected. Without a permission handler, calls that need approval are denied.
///
/// Errors: `ROBOTA_STATUS_NULL_ARGUMENT`, `ROBOTA_STATUS_INVALID_UTF8`,
/// `ROBOTA_STATUS_INVALID_JSON`, `ROBOTA_STATUS_INVALID_ARGUMENT`, `ROBOTA_STATUS_SESSION`,
/// `ROBOTA_STATUS_SESSION_LOCKED` (the saved session to resume or create is open for writing
/// elsewhere), `ROBOTA_STATUS_RUNTIME` (after `fork()`).
///
/// Ownership: `*out` is owned by the caller; free it with `robota_session_free`. The
/// provider handle may be freed independently.
/// Threading: callable from any thread.
///
/// # Safety
/// `provider` is a live provider; `options_json` is valid for `len` bytes (or NULL with 0);
/// `out` is valid for writes; `out_err` is NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn robota_session_new_json(
    provider: *const robota_provider,
    options_json: *const c_char,
    len: usize,
    out: *mut *mut robota_session,
    out_err: *mut *mut robota_error,
) -> robota_status {
    ffi_boundary!(out_err, {
        if out.is_null() {
            return Err(FfiError::null("out"));
        }
        if provider.is_null() {
            return Err(FfiError::null("provider"));
        }
        let json = json_arg(options_json, len, "options_json")?.unwrap_or(Value::Null);
        let options = OptionsInner {
            json,
            ..OptionsInner::default()
        };
        *out = create_session(&*provider, options)?;
        Ok(())
    })
}

/// Creates an interactive session on `provider` with `options` (data and host callbacks; NULL:
/// all defaults). `options` is not consumed: free it with `robota_session_options_free`
/// whenever convenient (the session keeps what it needs).
///
/// Errors: as `robota_session_new_json`, plus `ROBOTA_STATUS_COMMAND` when a host command's
/// name or alias collides with another command.
/// Ownership: `*out` is owned by the caller; free it with `robota_session_free`.
/// Threading: callable from any thread.
///
/// # Safety
/// `provider` is a live provider; `options` is NULL or live; `out` is valid for writes;
/// `out_err` is NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn robota_session_new(
    provider: *const robota_provider,
    options: *const robota_session_options,
    out: *mut *mut robota_session,
    out_err: *mut *mut robota_error,
) -> robota_status {
    ffi_boundary!(out_err, {
        if out.is_null() {
            return Err(FfiError::null("out"));
        }
        if provider.is_null() {
            return Err(FfiError::null("provider"));
        }
        let options = if options.is_null() {
            OptionsInner::default()
        } else {
            (*options).lock().clone()
        };
        *out = create_session(&*provider, options)?;
        Ok(())
    })
}

fn create_session(
    provider: &robota_provider,
    options: OptionsInner,
) -> Result<*mut robota_session, FfiError> {
    provider.runtime.check_fork()?;
    let (config, pull_events) = split_options(options.json)?;
    let skills = config.skill_registrations();
    let edit_checkpoints = config.edit_checkpoints_enabled();
    let commands = config.command_registrations();
    let mut session = config.into_session_options(Arc::clone(&provider.provider))?;
    session.extra_tools.extend(options.tools);
    session.mcp_servers.extend(options.mcp_servers);
    if options.permission_handler.is_some() {
        session.permission_handler = options.permission_handler;
    }
    if options.mcp_authorization_handler.is_some() {
        session.mcp_authorization_handler = options.mcp_authorization_handler;
    }
    crate::store::attach_store(&mut session, options.session_store)?;
    session.hook_callbacks.extend(options.hooks);
    let mut interactive_options = InteractiveSessionOptions::new(session);
    interactive_options.skills = skills;
    interactive_options.edit_checkpoints = edit_checkpoints;
    interactive_options.commands = commands;
    if !options.commands.is_empty() {
        interactive_options
            .command_modules
            .push(HostCommand::module(options.commands));
    }
    let runtime = Arc::clone(&provider.runtime);
    let _guard = runtime.handle().enter();
    let interactive = InteractiveSession::new(interactive_options).map_err(session_error)?;
    let default_pull = pull_events.then(|| Arc::new(interactive.subscribe_pull()));
    let shared = Arc::new(SessionShared {
        session: interactive,
        runtime: Arc::clone(&runtime),
        subs: Mutex::new(HashMap::new()),
        next_id: AtomicU64::new(1),
        default_pull,
    });
    Ok(Box::into_raw(Box::new(robota_session { shared })))
}

/// Submits a prompt (`prompt`, `len` bytes of UTF-8). Returns as soon as the prompt is
/// accepted: it runs (or, while another runs, waits in the one-slot queue) on the engine;
/// follow it through events (`complete`, `refused`, `truncated`, `error` or `interrupted` end
/// every accepted prompt that ran) or `robota_session_wait_idle`.
///
/// Errors: `ROBOTA_STATUS_NULL_ARGUMENT`, `ROBOTA_STATUS_INVALID_UTF8`,
/// `ROBOTA_STATUS_QUEUE_FULL` (a prompt is already queued), `ROBOTA_STATUS_SESSION`.
/// Threading: callable from any thread, including from an event callback.
///
/// # Safety
/// `s` is a live session; `prompt` is valid for `len` bytes; `out_err` is NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn robota_session_submit(
    s: *const robota_session,
    prompt: *const c_char,
    len: usize,
    out_err: *mut *mut robota_error,
) -> robota_status {
    ffi_boundary!(out_err, {
        let shared = session_arg(s)?;
        if prompt.is_null() {
            return Err(FfiError::null("prompt"));
        }
        let prompt = str_arg(prompt, len, "prompt")?;
        let _guard = shared.runtime.handle().enter();
        // `submit` does not wait on other tasks, so it can be driven here, even on an engine
        // thread.
        futures::executor::block_on(shared.session.submit(prompt, None, None))
            .map_err(session_error)?;
        Ok(())
    })
}

/// Submits a prompt like `robota_session_submit` and reports how *this* prompt ended: returns
/// as soon as the prompt is accepted, then calls `callback` exactly once on an engine thread
/// with the result as JSON, `status` being one of the outcome vocabulary every binding shares:
/// `{"status": "complete", "outcome": {...}}` (the model answered), `{"status": "refused",
/// "outcome": {..., "refusal": {"text", "category"?, "explanation"?}}}` (the model refused),
/// `{"status": "truncated", "outcome": {...}}` (the answer was cut off at the output token
/// limit), `{"status": "error", "message": "...", "error": {"kind", "message", "provider"?,
/// "status"?, "retryable", "retry_after_ms"?}, "outcome"?: {...}}` (a model call failed — auth,
/// network, retries exhausted — or the prompt could not run), `{"status": "interrupted",
/// "outcome"?: {...}}` or `{"status": "cancelled"}` (dropped from the queue by
/// `robota_session_cancel_queue` / `abort`, or the session shut down before it ran) — or with `ROBOTA_STATUS_CANCELLED` when the runtime went
/// away first. `*out_queued` (may be NULL) is set to 1 when the prompt waits behind a running
/// one, else 0; `*out_prompt_id` (may be NULL) to the prompt's id for
/// `robota_session_cancel_prompt`. Errors are returned directly (and `callback` is then not
/// called):
/// `ROBOTA_STATUS_NULL_ARGUMENT`, `ROBOTA_STATUS_INVALID_UTF8`, `ROBOTA_STATUS_QUEUE_FULL`,
/// `ROBOTA_STATUS_INVALID_STATE` (shut down), `ROBOTA_STATUS_SESSION`.
///
/// Threading: any thread, including from an event callback.
///
/// # Safety
/// `s` is a live session; `prompt` is valid for `len` bytes; `user_data` stays valid until the
/// callback ran; `out_queued` and `out_prompt_id` are NULL or valid for writes; `out_err` is
/// NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn robota_session_submit_tracked(
    s: *const robota_session,
    prompt: *const c_char,
    len: usize,
    callback: robota_result_callback,
    user_data: *mut c_void,
    out_queued: *mut i32,
    out_prompt_id: *mut u64,
    out_err: *mut *mut robota_error,
) -> robota_status {
    robota_session_submit_as_typed(
        s,
        prompt,
        len,
        std::ptr::null(),
        0,
        callback,
        user_data,
        out_queued,
        out_prompt_id,
        out_err,
    )
}

/// What the user typed and what the host shows, beside the prompt the host built from it.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct TypedInput {
    /// Shown for the prompt in the history instead of the prompt itself.
    #[serde(default)]
    display_input: Option<String>,
    /// What the user typed; UserPromptSubmit hooks get it as `prompt`.
    #[serde(default)]
    raw_input: Option<String>,
}

/// The shared body of the tracked submits.
///
/// # Safety
/// As `robota_session_submit_tracked` for `out_queued` and `out_prompt_id`.
unsafe fn submit_tracked(
    shared: &SessionShared,
    prompt: &str,
    typed: &TypedInput,
    callback: robota_result_callback,
    user_data: *mut c_void,
    out_queued: *mut i32,
    out_prompt_id: *mut u64,
) -> Result<(), FfiError> {
    if callback.is_none() {
        return Err(FfiError::null("callback"));
    }
    let _guard = shared.runtime.handle().enter();
    // As in `robota_session_submit`: accepting a prompt does not wait on other tasks.
    let ticket = shared
        .session
        .submit_tracked_as_typed(
            prompt,
            typed.display_input.as_deref(),
            typed.raw_input.as_deref(),
        )
        .map_err(session_error)?;
    // Made only once the prompt is accepted: an unused callback reports itself cancelled
    // when dropped, and a refused prompt must not call it at all.
    let done = ResultCallback::new(callback, user_data)?;
    if !out_queued.is_null() {
        *out_queued = i32::from(ticket.status() == SubmitStatus::Queued);
    }
    if !out_prompt_id.is_null() {
        *out_prompt_id = ticket.id();
    }
    shared.runtime.handle().spawn(async move {
        let result = ticket.result().await;
        done.finish(encode(&result));
    });
    Ok(())
}

/// `robota_session_submit_tracked` for a prompt the host built from what the user typed (a
/// `/audit staged` line expanded into instructions): `input_json` (`input_len` bytes; NULL or
/// empty for none) is `{"display_input"?: "...", "raw_input"?: "..."}` — `display_input` is
/// what the history shows for the prompt, `raw_input` what UserPromptSubmit hooks get as their
/// `prompt` (Claude Code's field); the model and the history get `prompt` itself. Everything
/// else, the callback and the errors included, is as `robota_session_submit_tracked`; an
/// unknown key or a value that is not a string is `ROBOTA_STATUS_INVALID_JSON`.
///
/// Threading: any thread, including from an event callback.
///
/// # Safety
/// As `robota_session_submit_tracked`; `input_json` is NULL or valid for `input_len` bytes.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn robota_session_submit_as_typed(
    s: *const robota_session,
    prompt: *const c_char,
    len: usize,
    input_json: *const c_char,
    input_len: usize,
    callback: robota_result_callback,
    user_data: *mut c_void,
    out_queued: *mut i32,
    out_prompt_id: *mut u64,
    out_err: *mut *mut robota_error,
) -> robota_status {
    ffi_boundary!(out_err, {
        let shared = session_arg(s)?;
        if prompt.is_null() {
            return Err(FfiError::null("prompt"));
        }
        let prompt = str_arg(prompt, len, "prompt")?;
        let typed: TypedInput = match json_arg(input_json, input_len, "input_json")? {
            None => TypedInput::default(),
            Some(value) => serde_json::from_value(value).map_err(|e| {
                FfiError::new(
                    ROBOTA_STATUS_INVALID_JSON,
                    format!("`input_json` must be {{\"display_input\"?, \"raw_input\"?}} with string values: {e}"),
                )
            })?,
        };
        submit_tracked(
            shared,
            prompt,
            &typed,
            callback,
            user_data,
            out_queued,
            out_prompt_id,
        )
    })
}

/// Cancels exactly one prompt, by the id `robota_session_submit_tracked` gave: a queued prompt
/// is dropped (its result is `cancelled`), the running one is aborted (`interrupted`) while
/// the queued prompt behind it is kept. `*out_cancelled` (may be NULL) is 1 when the prompt
/// was found, 0 when it had already ended. Does not wait.
///
/// Threading: any thread, including from a callback.
///
/// # Safety
/// `s` is a live session; `out_cancelled` is NULL or valid for writes; `out_err` is NULL or
/// valid.
#[no_mangle]
pub unsafe extern "C" fn robota_session_cancel_prompt(
    s: *const robota_session,
    prompt_id: u64,
    out_cancelled: *mut i32,
    out_err: *mut *mut robota_error,
) -> robota_status {
    ffi_boundary!(out_err, {
        let shared = session_arg(s)?;
        shared.runtime.check_fork()?;
        let cancelled = shared.session.cancel_prompt(prompt_id);
        if !out_cancelled.is_null() {
            *out_cancelled = i32::from(cancelled);
        }
        Ok(())
    })
}

/// Aborts the running prompt and drops the queued one; `interrupted` is emitted once the run
/// has stopped. Does not wait. Callable from any thread, including from an event callback.
///
/// # Safety
/// `s` is a live session; `out_err` is NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn robota_session_abort(
    s: *const robota_session,
    out_err: *mut *mut robota_error,
) -> robota_status {
    ffi_boundary!(out_err, {
        let shared = session_arg(s)?;
        shared.session.abort();
        Ok(())
    })
}

/// Waits until no prompt is running or queued and every callback subscription has been
/// called for every event emitted until then (so the prompt's `complete` has been seen), at
/// most `timeout_ms` milliseconds.
///
/// Returns `ROBOTA_STATUS_OK` when idle, `ROBOTA_STATUS_TIMEOUT` when the time ran out.
/// Blocks the calling thread: refused (`ROBOTA_STATUS_INVALID_STATE`) on engine threads,
/// i.e. inside callbacks.
///
/// # Safety
/// `s` is a live session; `out_err` is NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn robota_session_wait_idle(
    s: *const robota_session,
    timeout_ms: u64,
    out_err: *mut *mut robota_error,
) -> robota_status {
    ffi_boundary!(out_err, {
        let shared = session_arg(s)?;
        refuse_on_engine_thread("robota_session_wait_idle")?;
        let session = Arc::clone(&shared.session);
        let callbacks: Vec<Arc<CallbackSub>> = shared
            .subs()
            .values()
            .filter_map(|sub| match sub {
                Sub::Callback(sub) => Some(Arc::clone(sub)),
                Sub::Pull(_) => None,
            })
            .collect();
        let waited = shared.runtime.handle().block_on(async move {
            tokio::time::timeout(Duration::from_millis(timeout_ms), async move {
                session.wait_idle().await;
                for sub in callbacks {
                    sub.flush().await;
                }
            })
            .await
        });
        waited.map_err(|_| {
            FfiError::new(
                ROBOTA_STATUS_TIMEOUT,
                format!("the session is still busy after {timeout_ms} ms"),
            )
        })
    })
}

/// The conversation's chat messages as a JSON array.
///
/// Ownership: `*out_json` is owned by the caller; free it with `robota_string_free`.
/// Threading: callable from any thread, including from an event callback.
///
/// # Safety
/// `s` is a live session; `out_json` is valid for writes; `out_err` is NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn robota_session_get_messages(
    s: *const robota_session,
    out_json: *mut *mut c_char,
    out_err: *mut *mut robota_error,
) -> robota_status {
    ffi_boundary!(out_err, {
        let shared = session_arg(s)?;
        if out_json.is_null() {
            return Err(FfiError::null("out_json"));
        }
        let json = serde_json::to_string(&shared.session.get_messages()).map_err(|e| {
            FfiError::new(ROBOTA_STATUS_INVALID_JSON, format!("cannot encode: {e}"))
        })?;
        write_string(out_json, json);
        Ok(())
    })
}

/// Subscribes `callback` to the session's events from now on; `*out_id` (never 0) names the
/// subscription for `robota_session_unsubscribe`.
///
/// The callback runs on an engine thread, in order, one event at a time (see
/// `robota_event_callback`). `free_user_data` (may be NULL) is called exactly once with
/// `user_data`: by `robota_session_unsubscribe` or `robota_session_free`, after the last
/// callback has returned. If this function fails, `free_user_data` is not called.
///
/// # Safety
/// `s` is a live session; `callback` is a valid function; `user_data` is usable from engine
/// threads until finalized; `out_id` is valid for writes; `out_err` is NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn robota_session_subscribe(
    s: *const robota_session,
    callback: robota_event_callback,
    user_data: *mut c_void,
    free_user_data: robota_free_callback,
    out_id: *mut u64,
    out_err: *mut *mut robota_error,
) -> robota_status {
    ffi_boundary!(out_err, {
        let shared = session_arg(s)?;
        let Some(callback) = callback else {
            return Err(FfiError::null("callback"));
        };
        if out_id.is_null() {
            return Err(FfiError::null("out_id"));
        }
        let sub = Arc::new(CallbackSub {
            callback,
            user_data: UserData(user_data),
            finalizer: Mutex::new(free_user_data),
            active: AtomicBool::new(true),
            calling: Mutex::new(()),
            events: Arc::new(shared.session.subscribe_pull()),
            drained: AtomicU64::new(0),
            drained_notify: tokio::sync::Notify::new(),
            kick: tokio::sync::Notify::new(),
        });
        shared.runtime.handle().spawn(Arc::clone(&sub).run());
        let id = shared.next_id.fetch_add(1, Ordering::SeqCst);
        shared.subs().insert(id, Sub::Callback(sub));
        *out_id = id;
        Ok(())
    })
}

/// Creates a pull subscription: events from now on are queued for
/// `robota_session_next_event(s, *out_id, ...)`. Remove it with `robota_session_unsubscribe`
/// (or `robota_session_free`); `*out_id` is never 0. Threading: any thread.
///
/// # Safety
/// `s` is a live session; `out_id` is valid for writes; `out_err` is NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn robota_session_subscribe_pull(
    s: *const robota_session,
    out_id: *mut u64,
    out_err: *mut *mut robota_error,
) -> robota_status {
    ffi_boundary!(out_err, {
        let shared = session_arg(s)?;
        if out_id.is_null() {
            return Err(FfiError::null("out_id"));
        }
        let sub = Arc::new(shared.session.subscribe_pull());
        let id = shared.next_id.fetch_add(1, Ordering::SeqCst);
        shared.subs().insert(id, Sub::Pull(sub));
        *out_id = id;
        Ok(())
    })
}

/// Removes a subscription. For a callback subscription, when this returns no further callback
/// will start, a running one has finished, and `free_user_data` has been called — except when
/// called from inside that subscription's own callback: then the finalizer runs right after
/// the callback returns. Unknown ids: `ROBOTA_STATUS_INVALID_STATE`.
///
/// # Safety
/// `s` is a live session; `out_err` is NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn robota_session_unsubscribe(
    s: *const robota_session,
    id: u64,
    out_err: *mut *mut robota_error,
) -> robota_status {
    ffi_boundary!(out_err, {
        let shared = session_arg(s)?;
        let removed = shared.subs().remove(&id);
        match removed {
            Some(Sub::Callback(sub)) => sub.unsubscribe(),
            Some(Sub::Pull(sub)) => sub.unsubscribe(),
            None => {
                return Err(FfiError::new(
                    ROBOTA_STATUS_INVALID_STATE,
                    format!("no subscription with id {id}"),
                ))
            }
        }
        Ok(())
    })
}

/// Pulls the next event of a pull subscription (`sub`: an id from
/// `robota_session_subscribe_pull`, or 0 for the session's own when created with
/// `"pull_events": true`), waiting at most `timeout_ms` milliseconds (0: do not wait).
///
/// On `ROBOTA_STATUS_OK`, `*out_json` is the event as a JSON object (`{"session_id", "seq",
/// "type", ...}`), owned by the caller (free with `robota_string_free`). On
/// `ROBOTA_STATUS_TIMEOUT` no event came and `*out_json` is NULL.
/// Threading: any thread; a non-zero timeout is refused (`ROBOTA_STATUS_INVALID_STATE`) on
/// engine threads.
///
/// # Safety
/// `s` is a live session; `out_json` is valid for writes; `out_err` is NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn robota_session_next_event(
    s: *const robota_session,
    sub: u64,
    timeout_ms: u64,
    out_json: *mut *mut c_char,
    out_err: *mut *mut robota_error,
) -> robota_status {
    ffi_boundary!(out_err, {
        let shared = session_arg(s)?;
        if out_json.is_null() {
            return Err(FfiError::null("out_json"));
        }
        *out_json = std::ptr::null_mut();
        let subscription = if sub == 0 {
            shared.default_pull.clone().ok_or_else(|| {
                FfiError::new(
                    ROBOTA_STATUS_INVALID_STATE,
                    "subscription 0 needs the session option \"pull_events\": true",
                )
            })?
        } else {
            match shared.subs().get(&sub) {
                Some(Sub::Pull(p)) => Arc::clone(p),
                _ => {
                    return Err(FfiError::new(
                        ROBOTA_STATUS_INVALID_STATE,
                        format!("no pull subscription with id {sub}"),
                    ))
                }
            }
        };
        let event = if timeout_ms == 0 {
            subscription.try_next_event()
        } else {
            refuse_on_engine_thread("robota_session_next_event")?;
            shared.runtime.handle().block_on(async move {
                subscription
                    .next_event(Duration::from_millis(timeout_ms))
                    .await
            })
        };
        let event = event
            .ok_or_else(|| FfiError::new(ROBOTA_STATUS_TIMEOUT, "no event within the timeout"))?;
        let json = serde_json::to_string(&event).map_err(|e| {
            FfiError::new(ROBOTA_STATUS_INVALID_JSON, format!("cannot encode: {e}"))
        })?;
        write_string(out_json, json);
        Ok(())
    })
}

/// Frees a session. NULL is ignored. Safe with work in flight: the running prompt is aborted,
/// every subscription is removed (each finalizer called once, no event callback runs after
/// this returns), and the engine's work is given up to 5 s to stop before the handle goes.
/// Every process the session started that is still running — the aborted Bash call's tree,
/// background tasks, background hooks — is stopped before this returns (SIGTERM, the kill
/// grace, then SIGKILL; from an engine thread, SIGKILL at once). `robota_session_shutdown`
/// first also runs the SessionEnd hooks and saves the session.
/// Completions the host still holds (tools, permission requests, hooks, provider calls) are
/// cancelled: `robota_completion_is_cancelled` turns 1 and answering them returns
/// `ROBOTA_STATUS_CANCELLED` (they must still be consumed). No host callback of the session
/// starts after this returns (unless the engine needed more than those 5 s); their finalizers run once the engine has dropped the session,
/// which can be just after this returns (on an engine thread; `robota_runtime_shutdown` waits
/// for it). Pending `robota_session_execute_command` callbacks still run exactly once.
///
/// In a `fork()`ed child the session is abandoned without touching the engine (its threads
/// exist only in the parent).
///
/// Threading: callable from any thread except from inside one of this session's callbacks.
///
/// # Safety
/// `s` is NULL or a session from `robota_session_new` / `robota_session_new_json`, freed at
/// most once and not used afterwards (also not from other threads).
#[no_mangle]
pub unsafe extern "C" fn robota_session_free(s: *mut robota_session) {
    ffi_boundary!(value(), {
        if s.is_null() {
            return;
        }
        let session = Box::from_raw(s);
        let shared = session.shared;
        if shared.runtime.forked() {
            // After fork() the engine's threads are gone: touching the session could hang.
            std::mem::forget(shared);
            return;
        }
        shared.session.abort();
        let subs: Vec<Sub> = shared.subs().drain().map(|(_, sub)| sub).collect();
        for sub in subs {
            match sub {
                Sub::Callback(sub) => sub.unsubscribe(),
                Sub::Pull(sub) => sub.unsubscribe(),
            }
        }
        if let Some(pull) = &shared.default_pull {
            pull.unsubscribe();
        }
        let processes = shared.session.session().processes().clone();
        if !on_engine_thread() {
            let interactive = Arc::clone(&shared.session);
            let grace = interactive.session().kill_grace();
            let stopping = processes.clone();
            shared.runtime.handle().block_on(async move {
                let _ = tokio::time::timeout(Duration::from_secs(5), interactive.wait_idle()).await;
                // Background tasks and hooks, which outlive prompts, end with the handle.
                let limit = grace + Duration::from_secs(2);
                let _ = tokio::time::timeout(limit, stopping.stop_all(grace)).await;
            });
        }
        processes.kill_all_now();
        drop(shared);
    })
}

/// Drops the queued prompt, if any, without touching the running one. `*out_prompt` (when
/// `out_prompt` is not NULL) is the dropped prompt (owned; free with `robota_string_free`), or
/// NULL when nothing was queued.
/// Threading: any thread, including from a callback.
///
/// # Safety
/// `s` is a live session; `out_prompt` is NULL or valid for writes; `out_err` is NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn robota_session_cancel_queue(
    s: *const robota_session,
    out_prompt: *mut *mut c_char,
    out_err: *mut *mut robota_error,
) -> robota_status {
    ffi_boundary!(out_err, {
        let shared = session_arg(s)?;
        let dropped = shared.session.cancel_queue();
        if !out_prompt.is_null() {
            *out_prompt = match dropped {
                Some(prompt) => crate::strings::owned_string(prompt),
                None => std::ptr::null_mut(),
            };
        }
        Ok(())
    })
}

/// Reads the `(name, args)` arguments of the command functions.
///
/// # Safety
/// As `str_arg`.
unsafe fn command_args(
    name: *const c_char,
    name_len: usize,
    args: *const c_char,
    args_len: usize,
) -> Result<(String, String), FfiError> {
    if name.is_null() {
        return Err(FfiError::null("name"));
    }
    let name = str_arg(name, name_len, "name")?;
    let name = name.strip_prefix('/').unwrap_or(name).trim();
    if name.is_empty() {
        return Err(FfiError::new(
            crate::error::ROBOTA_STATUS_INVALID_ARGUMENT,
            "`name` is empty; pass a command name such as \"rename\"",
        ));
    }
    let args = str_arg(args, args_len, "args")?;
    Ok((name.to_string(), args.to_string()))
}

/// Runs a command (`name`: with or without the leading slash; `args`: the rest of the line,
/// may be NULL with 0) on the user's behalf, asynchronously: returns at once and calls
/// `callback` exactly once on an engine thread with the result as JSON (`{"message",
/// "success", "data"?, "effects"?: [...], "interaction"?}`), or an error:
/// `ROBOTA_STATUS_COMMAND` (unknown or ambiguous command), `ROBOTA_STATUS_INVALID_STATE` (a
/// blocking command while a prompt runs, or the session was shut down),
/// `ROBOTA_STATUS_CANCELLED` (the runtime went away first). Errors in the arguments are
/// returned directly and `callback` is then not called.
///
/// Threading: any thread, including from a callback.
///
/// # Safety
/// `s` is a live session; `name`/`args` are valid for their lengths; `user_data` stays valid
/// until the callback ran; `out_err` is NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn robota_session_execute_command(
    s: *const robota_session,
    name: *const c_char,
    name_len: usize,
    args: *const c_char,
    args_len: usize,
    callback: robota_result_callback,
    user_data: *mut c_void,
    out_err: *mut *mut robota_error,
) -> robota_status {
    ffi_boundary!(out_err, {
        let shared = session_arg(s)?;
        let (name, args) = command_args(name, name_len, args, args_len)?;
        let done = ResultCallback::new(callback, user_data)?;
        let session = Arc::clone(&shared.session);
        shared.runtime.handle().spawn(async move {
            let result = session.execute_command(&name, &args).await;
            done.finish(result.map_err(session_error).and_then(|r| encode(&r)));
        });
        Ok(())
    })
}

/// Runs a command like `robota_session_execute_command` but waits for it, at most
/// `timeout_ms` milliseconds; `*out_json` is the result (owned; free with
/// `robota_string_free`). Blocks: refused (`ROBOTA_STATUS_INVALID_STATE`) on engine threads.
/// Errors: those of `robota_session_execute_command`, plus `ROBOTA_STATUS_TIMEOUT` (the
/// command keeps running).
///
/// # Safety
/// As `robota_session_execute_command`; `out_json` is valid for writes.
#[no_mangle]
pub unsafe extern "C" fn robota_session_execute_command_blocking(
    s: *const robota_session,
    name: *const c_char,
    name_len: usize,
    args: *const c_char,
    args_len: usize,
    timeout_ms: u64,
    out_json: *mut *mut c_char,
    out_err: *mut *mut robota_error,
) -> robota_status {
    ffi_boundary!(out_err, {
        let shared = session_arg(s)?;
        if out_json.is_null() {
            return Err(FfiError::null("out_json"));
        }
        *out_json = std::ptr::null_mut();
        let (name, args) = command_args(name, name_len, args, args_len)?;
        refuse_on_engine_thread("robota_session_execute_command_blocking")?;
        let session = Arc::clone(&shared.session);
        let task = shared
            .runtime
            .handle()
            .spawn(async move { session.execute_command(&name, &args).await });
        let result = shared.runtime.handle().block_on(async move {
            tokio::time::timeout(Duration::from_millis(timeout_ms), task).await
        });
        let result = match result {
            Err(_) => {
                return Err(FfiError::new(
                    ROBOTA_STATUS_TIMEOUT,
                    format!("the command did not finish within {timeout_ms} ms"),
                ))
            }
            Ok(Err(join)) => {
                return Err(FfiError::new(
                    crate::error::ROBOTA_STATUS_CANCELLED,
                    format!("the command did not finish: {join}"),
                ))
            }
            Ok(Ok(result)) => result.map_err(session_error)?,
        };
        write_json(out_json, "out_json", &result)
    })
}

/// The commands users can run, as a JSON array of `{"name", "module", "source":
/// {"kind"}, "descriptor": {"name", "description", ...}}` in registry order.
///
/// Ownership: `*out_json` is owned; free with `robota_string_free`. Threading: any thread.
///
/// # Safety
/// `s` is a live session; `out_json` is valid for writes; `out_err` is NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn robota_session_list_commands(
    s: *const robota_session,
    out_json: *mut *mut c_char,
    out_err: *mut *mut robota_error,
) -> robota_status {
    ffi_boundary!(out_err, {
        let shared = session_arg(s)?;
        let commands = shared.session.list_commands().map_err(session_error)?;
        write_json(out_json, "out_json", &commands)
    })
}

/// The skills of the session as a JSON array of `{"name", "description", "source": {"kind":
/// "project" | "user" | "plugin" | "host", "root"?, "plugin"?}, "dir"?, "file"?, "allowed_tools"?, "model"?,
/// "context": "inline" | "fork", "agent"?, "argument_hint"?, "disable_model_invocation",
/// "user_invocable", "extra"?}`, by name. Activate one with `robota_session_execute_command`
/// (its name as the command); problems found while loading skills are session warnings of kind
/// `skill`.
///
/// Ownership: `*out_json` is owned; free with `robota_string_free`. Threading: any thread.
///
/// # Safety
/// `s` is a live session; `out_json` is valid for writes; `out_err` is NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn robota_session_list_skills(
    s: *const robota_session,
    out_json: *mut *mut c_char,
    out_err: *mut *mut robota_error,
) -> robota_status {
    ffi_boundary!(out_err, {
        let shared = session_arg(s)?;
        write_json(out_json, "out_json", &shared.session.list_skills())
    })
}

/// The plugins of the session's user and project as a JSON object `{"plugins": [{"id":
/// "name@marketplace", "name", "marketplace", "version"?, "description"?, "installed",
/// "enabled", "enabled_in"?, "path"?, "loaded", "skills"?, "commands"?, "agents"?,
/// "hook_files"?, "mcp_servers"?}], "marketplaces": [{"name", "source", "location"?,
/// "known_from", "plugins"}], "warnings": [{"file"?, "message"}]}`. Install and enable plugins
/// with `robota_session_execute_command` (`plugin`, `marketplace add DIR`, then `plugin`,
/// `install NAME@MARKETPLACE`); sessions created afterwards load them.
///
/// Ownership: `*out_json` is owned; free with `robota_string_free`. Threading: any thread.
///
/// # Safety
/// `s` is a live session; `out_json` is valid for writes; `out_err` is NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn robota_session_list_plugins(
    s: *const robota_session,
    out_json: *mut *mut c_char,
    out_err: *mut *mut robota_error,
) -> robota_status {
    ffi_boundary!(out_err, {
        let shared = session_arg(s)?;
        write_json(out_json, "out_json", &shared.session.list_plugins())
    })
}

/// The session's edit checkpoints (one per prompt, oldest first) as a JSON array of `{"id",
/// "sequence", "prompt", "created_at", "finished", "file_count", "bytes"}`. Files changed by
/// Write, Edit, MultiEdit, NotebookEdit and host tools that declare `mutates_files` are saved
/// before each prompt first changes them; changes made by Bash are not tracked.
///
/// Ownership: `*out_json` is owned; free with `robota_string_free`. Threading: any thread.
///
/// # Safety
/// `s` is a live session; `out_json` is valid for writes; `out_err` is NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn robota_session_list_edit_checkpoints(
    s: *const robota_session,
    out_json: *mut *mut c_char,
    out_err: *mut *mut robota_error,
) -> robota_status {
    ffi_boundary!(out_err, {
        let shared = session_arg(s)?;
        let list = shared
            .session
            .list_edit_checkpoints()
            .map_err(session_error)?;
        write_json(out_json, "out_json", &list)
    })
}

/// One edit checkpoint (`id`, `id_len` bytes of UTF-8) as JSON: `{"checkpoint": {...},
/// "files": [{"display_path", "path", "existed", "snapshot_exists", "action"}],
/// "restore_range": [...], "rollback_range": [...]}`. An unknown id is
/// `ROBOTA_STATUS_INVALID_ARGUMENT`.
///
/// Ownership: `*out_json` is owned; free with `robota_string_free`. Threading: any thread.
///
/// # Safety
/// `s` is a live session; `id` is valid for `id_len` bytes; `out_json` is valid for writes;
/// `out_err` is NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn robota_session_inspect_edit_checkpoint(
    s: *const robota_session,
    id: *const c_char,
    id_len: usize,
    out_json: *mut *mut c_char,
    out_err: *mut *mut robota_error,
) -> robota_status {
    ffi_boundary!(out_err, {
        let shared = session_arg(s)?;
        let id = checkpoint_id(id, id_len)?;
        let inspection = shared
            .session
            .inspect_edit_checkpoint(&id)
            .map_err(session_error)?;
        write_json(out_json, "out_json", &inspection)
    })
}

/// Puts files back as checkpoint `id`'s prompt left them: the later prompts' changes are
/// undone newest first (saved contents written back, files they created deleted) and their
/// checkpoints removed; an `edit-checkpoint-restore` history entry records it. `*out_json` is
/// the report `{"checkpoint_id", "rolled_back", "restored", "deleted", "problems"?}`. Refused
/// with `ROBOTA_STATUS_INVALID_STATE` while a prompt runs. Changes made by Bash are not tracked.
///
/// Ownership: `*out_json` is owned; free with `robota_string_free`. Threading: any thread.
///
/// # Safety
/// As `robota_session_inspect_edit_checkpoint`.
#[no_mangle]
pub unsafe extern "C" fn robota_session_restore_edit_checkpoint(
    s: *const robota_session,
    id: *const c_char,
    id_len: usize,
    out_json: *mut *mut c_char,
    out_err: *mut *mut robota_error,
) -> robota_status {
    ffi_boundary!(out_err, {
        let shared = session_arg(s)?;
        let id = checkpoint_id(id, id_len)?;
        let report = shared
            .session
            .restore_edit_checkpoint(&id)
            .map_err(session_error)?;
        write_json(out_json, "out_json", &report)
    })
}

/// Like `robota_session_restore_edit_checkpoint`, and also undoes checkpoint `id`'s own
/// prompt: files are as they were before it.
///
/// Ownership: `*out_json` is owned; free with `robota_string_free`. Threading: any thread.
///
/// # Safety
/// As `robota_session_inspect_edit_checkpoint`.
#[no_mangle]
pub unsafe extern "C" fn robota_session_rollback_edit_checkpoint(
    s: *const robota_session,
    id: *const c_char,
    id_len: usize,
    out_json: *mut *mut c_char,
    out_err: *mut *mut robota_error,
) -> robota_status {
    ffi_boundary!(out_err, {
        let shared = session_arg(s)?;
        let id = checkpoint_id(id, id_len)?;
        let report = shared
            .session
            .rollback_edit_checkpoint(&id)
            .map_err(session_error)?;
        write_json(out_json, "out_json", &report)
    })
}

/// The checkpoint id argument.
///
/// # Safety
/// `id` is NULL or valid for `len` bytes.
pub(crate) unsafe fn checkpoint_id(id: *const c_char, len: usize) -> Result<String, FfiError> {
    if id.is_null() {
        return Err(FfiError::null("id"));
    }
    Ok(str_arg(id, len, "id")?.trim().to_string())
}

/// The MCP servers of the session (from the options' `mcp_servers`, `.mcp.json` and settings)
/// as a JSON array of `{"name", "origin": {"kind": "host" | "project" | "settings" | "plugin",
/// …}, "transport": "stdio" | "http" | "sse" | "sdk" (in-process), "status": {"state":
/// "connected" | "failed" | "disabled" | "needs_auth" | "pending", "reason"?}, "tools": ["mcp__<server>__<tool>", …], "prompts": [...]}`, by name.
/// Their tools are offered to the model; run a prompt with `robota_session_execute_command`
/// (`mcp__<server>__<prompt>` as the command). Servers connect in the background from the moment
/// the session is created, so right after it they are `pending`
/// (`robota_session_wait_for_mcp_servers`).
///
/// Ownership: `*out_json` is owned; free with `robota_string_free`. Threading: any thread.
///
/// # Safety
/// `s` is a live session; `out_json` is valid for writes; `out_err` is NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn robota_session_list_mcp_servers(
    s: *const robota_session,
    out_json: *mut *mut c_char,
    out_err: *mut *mut robota_error,
) -> robota_status {
    ffi_boundary!(out_err, {
        let shared = session_arg(s)?;
        write_json(out_json, "out_json", &shared.session.list_mcp_servers())
    })
}

/// Waits until the MCP servers are done starting (each `connected`, `failed`, `needs_auth` or
/// `disabled`), at most `timeout_ms` milliseconds. Prompts need not wait first: each waits for
/// servers still starting before its first model call.
///
/// Returns `ROBOTA_STATUS_OK` when no server is still starting (also when the session has
/// none), `ROBOTA_STATUS_TIMEOUT` when the time ran out. Blocks the calling thread: refused
/// (`ROBOTA_STATUS_INVALID_STATE`) on engine threads, i.e. inside callbacks.
///
/// # Safety
/// `s` is a live session; `out_err` is NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn robota_session_wait_for_mcp_servers(
    s: *const robota_session,
    timeout_ms: u64,
    out_err: *mut *mut robota_error,
) -> robota_status {
    ffi_boundary!(out_err, {
        let shared = session_arg(s)?;
        refuse_on_engine_thread("robota_session_wait_for_mcp_servers")?;
        let session = Arc::clone(&shared.session);
        let started = shared.runtime.handle().block_on(async move {
            session
                .wait_for_mcp_servers(Some(Duration::from_millis(timeout_ms)))
                .await
        });
        if started {
            Ok(())
        } else {
            Err(FfiError::new(
                ROBOTA_STATUS_TIMEOUT,
                format!("MCP servers are still starting after {timeout_ms} ms"),
            ))
        }
    })
}

/// The full history as a JSON array: chat messages and event entries (`{"id", "timestamp",
/// "category": "chat" | "event", "type", "data"}`).
///
/// Ownership: `*out_json` is owned; free with `robota_string_free`. Threading: any thread.
///
/// # Safety
/// `s` is a live session; `out_json` is valid for writes; `out_err` is NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn robota_session_get_full_history(
    s: *const robota_session,
    out_json: *mut *mut c_char,
    out_err: *mut *mut robota_error,
) -> robota_status {
    ffi_boundary!(out_err, {
        let shared = session_arg(s)?;
        write_json(out_json, "out_json", &shared.session.get_full_history())
    })
}

/// How full the context window is, as a JSON object (`{"used_tokens", "max_tokens",
/// "used_percentage", ...}`).
///
/// Ownership: `*out_json` is owned; free with `robota_string_free`. Threading: any thread.
///
/// # Safety
/// `s` is a live session; `out_json` is valid for writes; `out_err` is NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn robota_session_get_context_state(
    s: *const robota_session,
    out_json: *mut *mut c_char,
    out_err: *mut *mut robota_error,
) -> robota_status {
    ffi_boundary!(out_err, {
        let shared = session_arg(s)?;
        write_json(out_json, "out_json", &shared.session.get_context_state())
    })
}

/// What opening the saved session found damaged, repaired or unfinished, as JSON: `null` when
/// there is nothing to tell, else `{"session_id", "forked_from"?, "log_path"?, "snapshot"?:
/// {"path", "problem", "moved_to"?}, "skipped_lines"?: [{"line", "offset", "kind"?,
/// "problem"}], "torn_tail"?: {"line", "offset", "bytes"}, "log_copy"?, "unfinished_turn"?:
/// {"prompt", "started_at"?, "messages_dropped", "tools_run"?}, "lost"?, "details"?}`.
/// `unfinished_turn.prompt` is the prompt a killed process never finished (offer to send it
/// again). The same report comes once as a `session_recovered` event when the session starts.
///
/// Ownership: `*out_json` is owned; free with `robota_string_free`. Threading: any thread.
///
/// # Safety
/// `s` is a live session; `out_json` is valid for writes; `out_err` is NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn robota_session_get_recovery_report(
    s: *const robota_session,
    out_json: *mut *mut c_char,
    out_err: *mut *mut robota_error,
) -> robota_status {
    ffi_boundary!(out_err, {
        let shared = session_arg(s)?;
        write_json(out_json, "out_json", &shared.session.get_recovery_report())
    })
}

/// The configuration problems the session worked around when it opened, as a JSON array of
/// `{"file"?, "json_path", "kind", "message"}`: settings entries it skipped or made ask (an
/// unparsable permission rule, an unknown key, …), agent definition files it could not use
/// (`kind` `agent_definition`) and tools agents list that the session does not have. Empty when
/// there are none.
///
/// Ownership: `*out_json` is owned; free with `robota_string_free`. Threading: any thread.
///
/// # Safety
/// `s` is a live session; `out_json` is valid for writes; `out_err` is NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn robota_session_get_warnings(
    s: *const robota_session,
    out_json: *mut *mut c_char,
    out_err: *mut *mut robota_error,
) -> robota_status {
    ffi_boundary!(out_err, {
        let shared = session_arg(s)?;
        write_json(out_json, "out_json", &shared.session.get_warnings())
    })
}

/// The OS sandbox Bash commands run in, as a JSON object: `{"enabled", "active", "backend"?,
/// "requested_backend", "reason"?, "platform", "landlock_abi"?, "writable_roots",
/// "protected_paths", "read_denied", "network": {"mode": "none"|"allow_list"|"all",
/// "domains"?}, "guarantees": {"writes_confined", "protected_paths_read_only",
/// "read_deny_enforced", "network_blocked", "network_allow_list_enforced",
/// "unix_sockets_blocked", "signals_confined", "process_isolation"}, ...}`. `active` is true only
/// when the sandbox is enabled *and* works on this machine; `reason` says why not otherwise.
///
/// Ownership: `*out_json` is owned; free with `robota_string_free`. Threading: any thread.
///
/// # Safety
/// `s` is a live session; `out_json` is valid for writes; `out_err` is NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn robota_session_sandbox_status(
    s: *const robota_session,
    out_json: *mut *mut c_char,
    out_err: *mut *mut robota_error,
) -> robota_status {
    ffi_boundary!(out_err, {
        let shared = session_arg(s)?;
        write_json(out_json, "out_json", &shared.session.sandbox_status())
    })
}

/// The session's id. Ownership: `*out` is owned; free with `robota_string_free`.
/// Threading: any thread.
///
/// # Safety
/// `s` is a live session; `out` is valid for writes; `out_err` is NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn robota_session_get_id(
    s: *const robota_session,
    out: *mut *mut c_char,
    out_err: *mut *mut robota_error,
) -> robota_status {
    ffi_boundary!(out_err, {
        let shared = session_arg(s)?;
        if out.is_null() {
            return Err(FfiError::null("out"));
        }
        write_string(out, shared.session.get_session_id());
        Ok(())
    })
}

/// The session's display name: `*out` is the name (owned; free with `robota_string_free`),
/// or NULL when the session is unnamed. Threading: any thread.
///
/// # Safety
/// `s` is a live session; `out` is valid for writes; `out_err` is NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn robota_session_get_name(
    s: *const robota_session,
    out: *mut *mut c_char,
    out_err: *mut *mut robota_error,
) -> robota_status {
    ffi_boundary!(out_err, {
        let shared = session_arg(s)?;
        if out.is_null() {
            return Err(FfiError::null("out"));
        }
        *out = match shared.session.get_name() {
            Some(name) => crate::strings::owned_string(name),
            None => std::ptr::null_mut(),
        };
        Ok(())
    })
}

/// Names the session (`name`, `len` bytes of UTF-8); NULL clears the name. Threading: any
/// thread.
///
/// # Safety
/// `s` is a live session; `name` is NULL or valid for `len` bytes; `out_err` is NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn robota_session_set_name(
    s: *const robota_session,
    name: *const c_char,
    len: usize,
    out_err: *mut *mut robota_error,
) -> robota_status {
    ffi_boundary!(out_err, {
        let shared = session_arg(s)?;
        let name = if name.is_null() {
            None
        } else {
            Some(str_arg(name, len, "name")?.to_string())
        };
        shared.session.set_name(name).map_err(session_error)
    })
}

/// Shuts the session down: aborts any run, drops the queue, fires SessionEnd once, saves it
/// (with persistence) and stops every process the session started that still runs
/// (background tasks, background hooks); later prompts are refused. Waits at most `timeout_ms` milliseconds
/// (`ROBOTA_STATUS_TIMEOUT`: the shutdown continues in the background). The handle still
/// needs `robota_session_free`. Blocks: refused (`ROBOTA_STATUS_INVALID_STATE`) on engine
/// threads.
///
/// # Safety
/// `s` is a live session; `out_err` is NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn robota_session_shutdown(
    s: *const robota_session,
    timeout_ms: u64,
    out_err: *mut *mut robota_error,
) -> robota_status {
    ffi_boundary!(out_err, {
        let shared = session_arg(s)?;
        refuse_on_engine_thread("robota_session_shutdown")?;
        let session = Arc::clone(&shared.session);
        let task = shared
            .runtime
            .handle()
            .spawn(async move { session.shutdown(SessionEndReason::Other).await });
        let waited = shared.runtime.handle().block_on(async move {
            tokio::time::timeout(Duration::from_millis(timeout_ms), task).await
        });
        match waited {
            Ok(_) => Ok(()),
            Err(_) => Err(FfiError::new(
                ROBOTA_STATUS_TIMEOUT,
                format!("the shutdown did not finish within {timeout_ms} ms"),
            )),
        }
    })
}
