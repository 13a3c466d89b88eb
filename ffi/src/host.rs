//! Host-implemented work: `robota_completion` and the callback-backed
//! [`HostFunction`](engine::api::HostFunction) every host extension (permission handler, tools,
//! hooks, commands, providers) is made of.
//!
//! A call into the host creates a completion (`Box`, owned by the host from the moment the
//! callback receives it) whose shared state the engine side also holds (`Arc`). The host
//! consumes it exactly once with `robota_completion_resolve` or `robota_completion_reject`,
//! from any thread, at any time; the engine may have stopped waiting by then (the completion is
//! then "cancelled", the answer is ignored), but the object stays valid until consumed, so there
//! is no use-after-free whichever side finishes first.

use std::ffi::{c_char, c_void, CString};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use engine::api::{async_trait, CancellationToken, HostCall, HostFunction, HostStream};
use serde_json::Value;
use tokio::sync::oneshot;

use crate::boundary::ffi_boundary;
use crate::error::{
    robota_error, robota_status, FfiError, ROBOTA_STATUS_CANCELLED, ROBOTA_STATUS_INVALID_JSON,
    ROBOTA_STATUS_INVALID_STATE,
};
use crate::session::robota_free_callback;
use crate::strings::{json_arg, str_arg};

/// A call into the host, waiting for its answer. Opaque. Received by a `robota_host_callback`;
/// owned by the host from then on and consumed by exactly one call of
/// `robota_completion_resolve` or `robota_completion_reject` (from any thread, also from inside
/// the callback, also after the engine stopped waiting). Never free it any other way.
pub struct robota_completion {
    state: Arc<CompletionState>,
    /// The id of the command context (command calls only).
    context: Option<u64>,
}

/// A completion pointer handed to the callback's thread.
struct CompletionPtr(*mut robota_completion);
// SAFETY: the completion is owned by the host from the call on and usable from any thread.
unsafe impl Send for CompletionPtr {}

struct CompletionState {
    id: u64,
    sender: Mutex<Option<oneshot::Sender<Result<Value, String>>>>,
    /// Fired by the engine when it no longer needs the answer.
    cancel: CancellationToken,
    /// Set when the engine's wait ended (its future was dropped).
    abandoned: AtomicBool,
    stream: Option<HostStream>,
}

impl CompletionState {
    fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled() || self.abandoned.load(Ordering::SeqCst)
    }

    /// Delivers the answer; `false` when the engine stopped waiting. A late answer leaves the
    /// sender in place, so the engine (which is finishing its own cancellation path) never
    /// mistakes it for a missing answer.
    fn finish(&self, answer: Result<Value, String>) -> bool {
        let mut sender = self.sender.lock().unwrap_or_else(PoisonError::into_inner);
        if self.is_cancelled() {
            return false;
        }
        match sender.take() {
            Some(sender) => sender.send(answer).is_ok(),
            None => false,
        }
    }
}

/// Marks the completion abandoned when the engine's future goes away.
struct Abandon(Arc<CompletionState>);

impl Drop for Abandon {
    fn drop(&mut self) {
        // Not `cancel.cancel()`: that token belongs to the engine (e.g. the whole run's).
        self.0.abandoned.store(true, Ordering::SeqCst);
    }
}

/// Called by the engine when it needs the host: `request_json` (`request_len` bytes,
/// NUL-terminated, borrowed for the duration of the call) says what is asked; `completion`
/// (owned by the host from now on) receives the answer. Runs on an engine thread; should return
/// quickly and answer later (from any thread) when the work takes time. Must not unwind or
/// longjmp out.
pub type robota_host_callback = Option<
    unsafe extern "C" fn(
        user_data: *mut c_void,
        request_json: *const c_char,
        request_len: usize,
        completion: *mut robota_completion,
    ),
>;

/// The host's `user_data` pointer; the host promises it may be used from engine threads.
pub(crate) struct UserData(pub(crate) *mut c_void);
// SAFETY: documented contract: callbacks and finalizers run on engine threads.
unsafe impl Send for UserData {}
// SAFETY: as above.
unsafe impl Sync for UserData {}

/// A host callback with its user data; calls the finalizer exactly once, when dropped (after
/// its last call, since every call holds a reference).
pub(crate) struct ForeignCallback {
    callback: unsafe extern "C" fn(*mut c_void, *const c_char, usize, *mut robota_completion),
    user_data: UserData,
    finalizer: robota_free_callback,
}

impl Drop for ForeignCallback {
    fn drop(&mut self) {
        if let Some(finalizer) = self.finalizer.take() {
            let user_data = self.user_data.0;
            // SAFETY: the host's finalizer, called once with its user_data.
            let _ = std::panic::catch_unwind(|| unsafe { finalizer(user_data) });
        }
    }
}

static NEXT_COMPLETION_ID: AtomicU64 = AtomicU64::new(1);

/// A [`HostFunction`] that calls a C callback and waits for its completion.
pub(crate) struct CHostFunction {
    foreign: Arc<ForeignCallback>,
}

impl CHostFunction {
    /// Wraps a callback; fails (without finalizing) when it is NULL.
    pub(crate) fn wrap(
        callback: robota_host_callback,
        user_data: *mut c_void,
        finalizer: robota_free_callback,
    ) -> Result<Arc<dyn HostFunction>, FfiError> {
        let Some(callback) = callback else {
            return Err(FfiError::null("callback"));
        };
        Ok(Arc::new(CHostFunction {
            foreign: Arc::new(ForeignCallback {
                callback,
                user_data: UserData(user_data),
                finalizer,
            }),
        }))
    }
}

#[async_trait]
impl HostFunction for CHostFunction {
    async fn call(&self, call: HostCall) -> Result<Value, String> {
        let (sender, receiver) = oneshot::channel();
        let state = Arc::new(CompletionState {
            id: NEXT_COMPLETION_ID.fetch_add(1, Ordering::SeqCst),
            sender: Mutex::new(Some(sender)),
            cancel: call.cancel,
            abandoned: AtomicBool::new(false),
            stream: call.stream,
        });
        let _abandon = Abandon(Arc::clone(&state));
        // A command's context is reachable from C by a registered id while the call runs.
        let context = call.context.map(CommandContextEntry::register);
        let request = CString::new(call.request.to_string()).unwrap_or_default();
        let completion = CompletionPtr(Box::into_raw(Box::new(robota_completion {
            state: Arc::clone(&state),
            context: context.as_ref().map(|c| c.id),
        })));
        let foreign = Arc::clone(&self.foreign);
        let invoke = move || {
            let completion = completion;
            std::panic::catch_unwind(|| {
                // SAFETY: the host's callback with its user_data, a NUL-terminated request
                // that outlives the call and a completion it now owns.
                unsafe {
                    (foreign.callback)(
                        foreign.user_data.0,
                        request.as_ptr(),
                        request.as_bytes().len(),
                        completion.0,
                    )
                }
            })
        };
        // A command's callback may wait on its context (`robota_command_context_call`), which
        // this task serves, so it runs on a thread that may block; other callbacks run here.
        let called = if context.is_some() {
            tokio::task::spawn_blocking(invoke)
                .await
                .unwrap_or(Err(Box::new("the callback thread failed")))
        } else {
            invoke()
        };
        if called.is_err() {
            return Err("the host callback failed".into());
        }
        match receiver.await {
            Ok(answer) => answer,
            Err(_) => Err("the host consumed the completion without an answer".into()),
        }
    }
}

/// Takes ownership of a completion argument.
///
/// # Safety
/// `c` is NULL or a completion not yet consumed.
unsafe fn take_completion(c: *mut robota_completion) -> Result<Box<robota_completion>, FfiError> {
    if c.is_null() {
        return Err(FfiError::null("completion"));
    }
    Ok(Box::from_raw(c))
}

fn cancelled_error() -> FfiError {
    FfiError::new(
        ROBOTA_STATUS_CANCELLED,
        "the engine stopped waiting for this completion (abort, timeout or session end); the \
         answer was ignored",
    )
}

/// Answers a completion with a JSON value (`json`, `len` bytes of UTF-8; its shape depends on
/// what was asked, see the function that registered the callback).
///
/// Consumes `completion` whatever the result (unless `completion` itself is NULL): do not use
/// it afterwards. When `json` is NULL, empty, not valid UTF-8 or not JSON, the engine sees a
/// failed call (as if rejected with the problem) and the error is returned too.
/// Returns `ROBOTA_STATUS_CANCELLED` when the engine had stopped waiting (the answer is
/// ignored; not a failure of the host).
/// Threading: any thread, including inside the callback that received the completion.
///
/// # Safety
/// `completion` is a completion not yet consumed; `json` is valid for `len` bytes; `out_err`
/// is NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn robota_completion_resolve(
    completion: *mut robota_completion,
    json: *const c_char,
    len: usize,
    out_err: *mut *mut robota_error,
) -> robota_status {
    ffi_boundary!(out_err, {
        let completion = take_completion(completion)?;
        let answer = match json_arg(json, len, "json") {
            Ok(Some(value)) => Ok(value),
            Ok(None) => Err(FfiError::new(
                ROBOTA_STATUS_INVALID_JSON,
                "the answer is empty; pass a JSON value",
            )),
            Err(e) => Err(e),
        };
        match answer {
            Ok(value) => {
                if completion.state.finish(Ok(value)) {
                    Ok(())
                } else {
                    Err(cancelled_error())
                }
            }
            Err(e) => {
                completion.state.finish(Err(format!(
                    "the host answered invalid JSON: {}",
                    e.message
                )));
                Err(e)
            }
        }
    })
}

/// Rejects a completion: the host could not do what was asked; `message` (`len` bytes of
/// UTF-8; may be empty) says why. The engine turns it into a failed tool result, a denial, a
/// failed hook or command, or a provider error.
///
/// Consumes `completion` whatever the result (unless `completion` itself is NULL). A message
/// that is NULL (with a non-zero length) or invalid UTF-8 is replaced by a generic one and the
/// problem returned (`ROBOTA_STATUS_NULL_ARGUMENT`, `ROBOTA_STATUS_INVALID_UTF8`); the call is
/// rejected either way. `ROBOTA_STATUS_CANCELLED`: the engine had stopped waiting.
/// Threading: any thread.
///
/// # Safety
/// `completion` is a completion not yet consumed; `message` is valid for `len` bytes (or NULL
/// with 0); `out_err` is NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn robota_completion_reject(
    completion: *mut robota_completion,
    message: *const c_char,
    len: usize,
    out_err: *mut *mut robota_error,
) -> robota_status {
    ffi_boundary!(out_err, {
        let completion = take_completion(completion)?;
        let (text, problem) = match str_arg(message, len, "message") {
            Ok("") => ("the host rejected the call".to_string(), None),
            Ok(text) => (text.to_string(), None),
            Err(e) => ("the host rejected the call".to_string(), Some(e)),
        };
        let delivered = completion.state.finish(Err(text));
        if let Some(problem) = problem {
            return Err(problem);
        }
        if delivered {
            Ok(())
        } else {
            Err(cancelled_error())
        }
    })
}

/// Whether the engine has stopped waiting for this completion (the run was aborted, the hook
/// timed out, the session was freed). The host should then stop the work and still consume the
/// completion (resolve or reject; the answer is ignored). Returns 1 when cancelled, else 0
/// (also for NULL).
/// Threading: any thread.
///
/// # Safety
/// `completion` is NULL or a completion not yet consumed.
#[no_mangle]
pub unsafe extern "C" fn robota_completion_is_cancelled(
    completion: *const robota_completion,
) -> i32 {
    ffi_boundary!(value 0, {
        if completion.is_null() {
            return 0;
        }
        let completion = &*completion;
        i32::from(completion.state.is_cancelled())
    })
}

/// The completion's id: unique in the process, never 0 (0 for NULL). For hosts that track
/// pending work by number. Threading: any thread.
///
/// # Safety
/// `completion` is NULL or a completion not yet consumed.
#[no_mangle]
pub unsafe extern "C" fn robota_completion_id(completion: *const robota_completion) -> u64 {
    ffi_boundary!(value 0, {
        if completion.is_null() {
            0
        } else {
            let completion = &*completion;
            completion.state.id
        }
    })
}

/// Streams one event of a host provider's model call (only completions received by a
/// `robota_provider_new_host` callback; others: `ROBOTA_STATUS_INVALID_STATE`). `json` is one
/// of:
///
/// - `{"type": "text_delta", "text": "..."}`
/// - `{"type": "thinking_delta", "text": "..."}`
/// - `{"type": "tool_call", "id": "...", "name": "...", "input": {...}}` (or `"arguments":
///   "<raw JSON text>"`)
/// - `{"type": "usage", "input_tokens": n, "output_tokens": n, ...}`
///
/// Does not consume the completion; finish with `robota_completion_resolve`. Errors:
/// `ROBOTA_STATUS_NULL_ARGUMENT`, `ROBOTA_STATUS_INVALID_UTF8`, `ROBOTA_STATUS_INVALID_JSON`
/// (also for an unknown event shape), `ROBOTA_STATUS_CANCELLED` (the call is over).
/// Threading: any thread, but events of one call must come from one thread at a time (they are
/// delivered in the order of the calls).
///
/// # Safety
/// `completion` is a completion not yet consumed; `json` is valid for `len` bytes; `out_err` is
/// NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn robota_completion_emit(
    completion: *const robota_completion,
    json: *const c_char,
    len: usize,
    out_err: *mut *mut robota_error,
) -> robota_status {
    ffi_boundary!(out_err, {
        if completion.is_null() {
            return Err(FfiError::null("completion"));
        }
        let state = &(*completion).state;
        let Some(stream) = &state.stream else {
            return Err(FfiError::new(
                ROBOTA_STATUS_INVALID_STATE,
                "only provider completions take streamed events",
            ));
        };
        let event = json_arg(json, len, "json")?
            .ok_or_else(|| FfiError::new(ROBOTA_STATUS_INVALID_JSON, "the event is empty"))?;
        if state.is_cancelled() {
            return Err(cancelled_error());
        }
        stream.send(event).map_err(|e| {
            if e.kind == engine::api::ApiErrorKind::InvalidJson {
                FfiError::from(e)
            } else {
                cancelled_error()
            }
        })
    })
}

/// Receives the result of an asynchronous request (`robota_session_execute_command`,
/// `robota_query_run`): called exactly once, on an engine thread. On success `error` is NULL
/// and `json` (`json_len` bytes, NUL-terminated) is the result; on failure `error` says why
/// (`ROBOTA_STATUS_CANCELLED` when the session, query or runtime went away first) and `json`
/// is NULL. Both are borrowed for the duration of the call only. Must not unwind or longjmp.
pub type robota_result_callback = Option<
    unsafe extern "C" fn(
        user_data: *mut c_void,
        error: *const robota_error,
        json: *const c_char,
        json_len: usize,
    ),
>;

/// A one-shot result callback: called exactly once, with the result or, when dropped unused
/// (its task was dropped with the runtime), with `ROBOTA_STATUS_CANCELLED`.
pub(crate) struct ResultCallback {
    callback: Option<unsafe extern "C" fn(*mut c_void, *const robota_error, *const c_char, usize)>,
    user_data: UserData,
}

impl ResultCallback {
    pub(crate) fn new(
        callback: robota_result_callback,
        user_data: *mut c_void,
    ) -> Result<Self, FfiError> {
        if callback.is_none() {
            return Err(FfiError::null("callback"));
        }
        Ok(ResultCallback {
            callback,
            user_data: UserData(user_data),
        })
    }

    /// Calls the callback with the result.
    pub(crate) fn finish(mut self, result: Result<String, FfiError>) {
        self.call(result);
    }

    fn call(&mut self, result: Result<String, FfiError>) {
        let Some(callback) = self.callback.take() else {
            return;
        };
        let user_data = self.user_data.0;
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match result {
            Ok(json) => {
                let json = CString::new(json).unwrap_or_default();
                // SAFETY: the host's callback with its user_data and a valid string.
                unsafe {
                    callback(
                        user_data,
                        std::ptr::null(),
                        json.as_ptr(),
                        json.as_bytes().len(),
                    )
                }
            }
            Err(error) => {
                let error = error.into_error();
                // SAFETY: as above, with a valid error.
                unsafe { callback(user_data, &error, std::ptr::null(), 0) }
            }
        }));
    }
}

impl Drop for ResultCallback {
    fn drop(&mut self) {
        self.call(Err(FfiError::new(
            ROBOTA_STATUS_CANCELLED,
            "the request was dropped before it finished (its session, query or runtime went \
             away)",
        )));
    }
}

// ---- command contexts ----

/// A command's live context, as C sees it. Opaque; never dereferenced: the pointer's value is
/// an id the engine looks up, so a context used after its command returned (or a wrong
/// pointer) is refused with an error instead of touching freed memory.
pub struct robota_command_context {
    _private: [u8; 0],
}

/// The contexts of the command calls running now, by id.
static COMMAND_CONTEXTS: Mutex<Vec<(u64, engine::api::HostCommandContext)>> =
    Mutex::new(Vec::new());
static NEXT_CONTEXT_ID: AtomicU64 = AtomicU64::new(1);

/// One registered context; unregistered when the call ends.
struct CommandContextEntry {
    id: u64,
}

impl CommandContextEntry {
    fn register(context: engine::api::HostCommandContext) -> Self {
        let id = NEXT_CONTEXT_ID.fetch_add(1, Ordering::SeqCst);
        COMMAND_CONTEXTS
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((id, context));
        CommandContextEntry { id }
    }
}

impl Drop for CommandContextEntry {
    fn drop(&mut self) {
        COMMAND_CONTEXTS
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|(id, _)| *id != self.id);
    }
}

/// The live context of the command whose call gave `completion`, or NULL when the completion
/// is not a command's (or is NULL). Valid until the command answers (the completion is
/// resolved or rejected) or the engine stops waiting; later use is refused with
/// `ROBOTA_STATUS_COMMAND`. Threading: any thread.
///
/// # Safety
/// `completion` is NULL or a completion not yet consumed.
#[no_mangle]
pub unsafe extern "C" fn robota_completion_command_context(
    completion: *const robota_completion,
) -> *const robota_command_context {
    ffi_boundary!(value std::ptr::null(), {
        if completion.is_null() {
            return std::ptr::null();
        }
        let completion = &*completion;
        match completion.context {
            Some(id) => id as usize as *const robota_command_context,
            None => std::ptr::null(),
        }
    })
}

/// Runs one operation on a command's live session, the same facade the built-in commands use,
/// and waits for it: `op_json` (`len` bytes of UTF-8) is `{"op": "state" | "history" |
/// "commands" | "clear" | "compact" (+ "instructions"?) | "set_permission_mode" (+ "mode") |
/// "set_session_name" (+ "name") | "run_subagent" (+ "prompt", "agent_type"?, "isolation"?) |
/// "read_settings" (+ "scope") | "update_settings" (+ "scope", "patch") | "switch_model" (+
/// "model") | "set_auto_compact" (+ "enabled", "threshold"?)}`, where `scope` is
/// `"localSettings"`, `"projectSettings"` or `"userSettings"`, `patch` a JSON merge patch and
/// `threshold` a fraction of the context window in (0, 1].
/// `*out_json` receives the answer as JSON (`null` for actions).
///
/// Errors: `ROBOTA_STATUS_COMMAND` when the context is no longer valid (its command answered)
/// or the operation failed; `ROBOTA_STATUS_INVALID_JSON` / `ROBOTA_STATUS_INVALID_ARGUMENT`
/// for a malformed operation, an unknown scope or mode.
/// Ownership: `*out_json` is owned by the caller; free it with `robota_string_free`.
/// Threading: blocks until done; call it from the command's callback or a thread of the host,
/// never from another callback that must return first.
///
/// # Safety
/// `ctx` is a value from `robota_completion_command_context` (or NULL); `op_json` is valid for
/// `len` bytes; `out_json` is valid for writes; `out_err` is NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn robota_command_context_call(
    ctx: *const robota_command_context,
    op_json: *const c_char,
    len: usize,
    out_json: *mut *mut c_char,
    out_err: *mut *mut robota_error,
) -> robota_status {
    ffi_boundary!(out_err, {
        if ctx.is_null() {
            return Err(FfiError::null("ctx"));
        }
        if out_json.is_null() {
            return Err(FfiError::null("out_json"));
        }
        let Some(op) = json_arg(op_json, len, "op_json")? else {
            return Err(FfiError::new(
                ROBOTA_STATUS_INVALID_JSON,
                "`op_json` is empty; pass an operation such as {\"op\": \"state\"}",
            ));
        };
        let id = ctx as usize as u64;
        let context = COMMAND_CONTEXTS
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .find(|(known, _)| *known == id)
            .map(|(_, context)| context.clone());
        let Some(context) = context else {
            return Err(FfiError::new(
                crate::error::ROBOTA_STATUS_COMMAND,
                "the command context is no longer valid: its command has answered (or it never \
                 was a context); use it only until the command's completion is resolved",
            ));
        };
        let answer = context.call_json_blocking(op)?;
        crate::strings::write_string(out_json, answer.to_string());
        Ok(())
    })
}
