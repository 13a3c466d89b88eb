//! `robota_session_options`: a session's options: data as JSON, host extensions
//! (permission handler, tools, hooks, commands) as callbacks.

use std::ffi::{c_char, c_void};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use engine::api::{
    HostCommand, HostFunction, HostHookSpec, HostPermissionHandler, HostTool, HostToolSpec,
    SessionConfig,
};
use engine::framework::commands::SystemCommand;
use engine::session::{HookCallbackRegistration, PermissionHandler};
use engine::tools::Tool;
use serde_json::Value;

use crate::boundary::ffi_boundary;
use crate::error::{
    robota_error, robota_status, FfiError, ROBOTA_STATUS_INVALID_ARGUMENT,
    ROBOTA_STATUS_INVALID_JSON,
};
use crate::host::{robota_host_callback, CHostFunction};
use crate::session::robota_free_callback;
use crate::strings::json_arg;

/// Everything a session is made of, before it is made.
#[derive(Clone, Default)]
pub(crate) struct OptionsInner {
    /// The data options (`SessionConfig` fields plus the C ABI's `pull_events`).
    pub(crate) json: Value,
    pub(crate) tools: Vec<Arc<dyn Tool>>,
    pub(crate) permission_handler: Option<Arc<dyn PermissionHandler>>,
    pub(crate) hooks: Vec<HookCallbackRegistration>,
    pub(crate) commands: Vec<Arc<dyn SystemCommand>>,
    /// In-process MCP servers (`robota_session_options_add_mcp_server`).
    pub(crate) mcp_servers: Vec<engine::mcp::McpServerEntry>,
    /// Opens remote MCP servers' OAuth authorization URLs
    /// (`robota_session_options_set_mcp_authorization_handler`).
    pub(crate) mcp_authorization_handler: Option<engine::mcp::McpAuthorizationHandler>,
    /// The host's own session store (`robota_session_options_set_session_store`).
    pub(crate) session_store: Option<Arc<dyn HostFunction>>,
}

/// Session options: JSON data plus host callbacks. Opaque; create with
/// `robota_session_options_new`, pass to `robota_session_new` (any number of times: sessions
/// share the callbacks), free with `robota_session_options_free`. Functions on one options
/// object may be called from any thread, one at a time.
pub struct robota_session_options {
    inner: Mutex<OptionsInner>,
}

impl robota_session_options {
    pub(crate) fn lock(&self) -> MutexGuard<'_, OptionsInner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Splits the C ABI's own `pull_events` out of the options and checks the rest.
pub(crate) fn split_options(mut options: Value) -> Result<(SessionConfig, bool), FfiError> {
    let pull_events = match options
        .as_object_mut()
        .and_then(|o| o.remove("pull_events"))
    {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => b,
        Some(other) => {
            return Err(FfiError::new(
                ROBOTA_STATUS_INVALID_JSON,
                format!("invalid session options: `pull_events` must be a boolean, not {other}"),
            ))
        }
    };
    Ok((SessionConfig::from_json_value(options)?, pull_events))
}

/// # Safety
/// `o` is NULL or live.
unsafe fn options_arg<'a>(
    o: *const robota_session_options,
) -> Result<&'a robota_session_options, FfiError> {
    if o.is_null() {
        return Err(FfiError::null("options"));
    }
    Ok(&*o)
}

/// Creates session options from JSON data (`json`, `len` bytes; may be empty for defaults):
/// the fields `robota_session_new_json` documents (`cwd`, `permission_mode`, `system_prompt`,
/// `append_system_prompt`, `max_turns`, `session_id`, `load_project_context`, `home`,
/// `settings`, `settings_from_environment`, `env`, `builtin_tools` (false: only host tools),
/// `persistence`, `resume_session_id`, `fork_session`, `max_budget_usd`, `fallback_model`,
/// `auto_compact`,
/// `context_window`, `telemetry`, `traceparent`, `tracestate`, `pull_events`). Checked now:
/// errors `ROBOTA_STATUS_INVALID_UTF8`,
/// `ROBOTA_STATUS_INVALID_JSON`, `ROBOTA_STATUS_NULL_ARGUMENT`.
///
/// Ownership: `*out` is owned by the caller; free with `robota_session_options_free`.
/// Threading: any thread.
///
/// # Safety
/// `json` is valid for `len` bytes (or NULL with 0); `out` is valid for writes; `out_err` is
/// NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn robota_session_options_new(
    json: *const c_char,
    len: usize,
    out: *mut *mut robota_session_options,
    out_err: *mut *mut robota_error,
) -> robota_status {
    ffi_boundary!(out_err, {
        if out.is_null() {
            return Err(FfiError::null("out"));
        }
        let json = json_arg(json, len, "json")?.unwrap_or(Value::Null);
        split_options(json.clone())?;
        *out = Box::into_raw(Box::new(robota_session_options {
            inner: Mutex::new(OptionsInner {
                json,
                ..OptionsInner::default()
            }),
        }));
        Ok(())
    })
}

/// Frees session options. NULL is ignored. Sessions made from them keep their callbacks; each
/// callback's finalizer runs once the options and every session using it are gone.
/// Threading: any thread, not concurrently with other calls on the same options.
///
/// # Safety
/// `options` is NULL or from `robota_session_options_new`, freed at most once.
#[no_mangle]
pub unsafe extern "C" fn robota_session_options_free(options: *mut robota_session_options) {
    ffi_boundary!(value(), {
        if !options.is_null() {
            drop(Box::from_raw(options));
        }
    })
}

/// Sets the permission handler (replacing an earlier one, whose finalizer then runs unless a
/// session still uses it). Without one, calls that need approval are denied.
///
/// `callback` gets a permission request as JSON: `{"request_id", "tool_name", "input",
/// "tool_use_id", "reason", "basis", "suggested_rules": [...], "settings_targets":
/// [{"destination", "path"}], "permission_mode"}`. Resolve its completion with one of
/// `{"type": "allow_once"}`, `{"type": "allow_session", "rules"?: [...]}` (default rules: the
/// suggested ones), `{"type": "allow_always", "destination": "localSettings" |
/// "projectSettings" | "userSettings", "rules"?: [...]}`, `{"type": "allow_with_input",
/// "input": {...}, "rules"?: [...], "destination"?: ...}` (runs the call with `input` instead
/// of the model's arguments, checked against the deny rules first), `{"type": "deny",
/// "message"?: "..."}`. A rejection or malformed answer denies the call; on abort the completion is
/// cancelled and the call does not run.
///
/// `free_user_data` (may be NULL) is called exactly once with `user_data`, after the last
/// callback, once these options and every session made from them are gone (see
/// `robota_session_free` for when that is); not when this function fails. Threading: see
/// `robota_session_options`; the callback runs on engine threads, should return quickly and
/// may answer its completion later from any thread.
///
/// # Safety
/// `options` is live; `user_data` is usable from engine threads until finalized; `out_err` is
/// NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn robota_session_options_set_permission_handler(
    options: *mut robota_session_options,
    callback: robota_host_callback,
    user_data: *mut c_void,
    free_user_data: robota_free_callback,
    out_err: *mut *mut robota_error,
) -> robota_status {
    ffi_boundary!(out_err, {
        let options = options_arg(options)?;
        let function = CHostFunction::wrap(callback, user_data, free_user_data)?;
        let handler = HostPermissionHandler::new(function);
        options.lock().permission_handler = Some(handler);
        Ok(())
    })
}

/// Sets the browser step of remote MCP servers' OAuth: when an HTTP or SSE server from the
/// session's configuration answers that it needs authorization, `callback` gets `{"server":
/// "name", "url": "https://…"}` and should open the URL in a browser (or show it to the user),
/// then resolve its completion (the answer is not used; a rejection ends the authorization at
/// once: the server is `needs_auth`, its status naming the message). Servers connect in the
/// background, so the callback runs while the host goes on after `robota_session_new`. The
/// authorization completes through the session's redirect listener on 127.0.0.1 and the tokens
/// are kept in `~/.robota/mcp-oauth` for later sessions. Without a handler such a server's
/// status is `needs_auth` (`robota_session_list_mcp_servers`). Setting it again replaces it.
///
/// `free_user_data` and threading: as for `robota_session_options_set_permission_handler`.
///
/// # Safety
/// As `robota_session_options_set_permission_handler`.
#[no_mangle]
pub unsafe extern "C" fn robota_session_options_set_mcp_authorization_handler(
    options: *mut robota_session_options,
    callback: robota_host_callback,
    user_data: *mut c_void,
    free_user_data: robota_free_callback,
    out_err: *mut *mut robota_error,
) -> robota_status {
    ffi_boundary!(out_err, {
        let options = options_arg(options)?;
        let function = CHostFunction::wrap(callback, user_data, free_user_data)?;
        options.lock().mcp_authorization_handler =
            Some(engine::api::host_mcp_authorization_handler(function));
        Ok(())
    })
}

/// Adds a host tool: `spec_json` is `{"name", "description", "input_schema"?: {JSON Schema
/// object}, "read_only"?: bool}` (read-only tools need no approval). A tool of the same name
/// as a built-in replaces it.
///
/// `callback` gets `{"tool", "input", "tool_use_id", "cwd"}`; resolve with `{"content":
/// "text for the model", "is_error"?: bool, "response"?: any}` or a JSON string; a rejection
/// is an error result with the message. When the run is aborted the completion is cancelled
/// and the model sees the error result `"aborted"`.
///
/// Errors: `ROBOTA_STATUS_NULL_ARGUMENT`, `ROBOTA_STATUS_INVALID_UTF8`,
/// `ROBOTA_STATUS_INVALID_JSON`, `ROBOTA_STATUS_INVALID_ARGUMENT` (empty or duplicate name).
/// `free_user_data` and threading: as for `robota_session_options_set_permission_handler`.
///
/// # Safety
/// As `robota_session_options_set_permission_handler`; `spec_json` is valid for `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn robota_session_options_add_tool(
    options: *mut robota_session_options,
    spec_json: *const c_char,
    len: usize,
    callback: robota_host_callback,
    user_data: *mut c_void,
    free_user_data: robota_free_callback,
    out_err: *mut *mut robota_error,
) -> robota_status {
    ffi_boundary!(out_err, {
        let options = options_arg(options)?;
        if spec_json.is_null() {
            return Err(FfiError::null("spec_json"));
        }
        let spec = json_arg(spec_json, len, "spec_json")?
            .ok_or_else(|| FfiError::new(ROBOTA_STATUS_INVALID_JSON, "`spec_json` is empty"))?;
        let spec = HostToolSpec::from_json_value(spec)?;
        if callback.is_none() {
            return Err(FfiError::null("callback"));
        }
        let mut inner = options.lock();
        if inner.tools.iter().any(|t| t.name() == spec.name) {
            return Err(FfiError::new(
                ROBOTA_STATUS_INVALID_ARGUMENT,
                format!("a host tool named `{}` was already added", spec.name),
            ));
        }
        let function: Arc<dyn HostFunction> =
            CHostFunction::wrap(callback, user_data, free_user_data)?;
        inner.tools.push(Arc::new(HostTool::new(spec, function)));
        Ok(())
    })
}

/// Adds a hook callback: `spec_json` is `{"event": "PreToolUse" | "PostToolUse" |
/// "UserPromptSubmit" | "Stop" | ... (the settings.json event names), "matcher"?: "Bash|Edit"
/// (Claude Code syntax; default all), "timeout_ms"?: n, "name"?: "guard" (the hook's name in
/// messages and events), "on_failure"?: "block" | "allow"}`.
///
/// `callback` gets the hook input as JSON (what a command hook reads on stdin:
/// `{"session_id", "cwd", "hook_event_name", "tool_name", "tool_input", ...}`); resolve with
/// `null` (carry on), a JSON string (added context), Claude Code's hook JSON output
/// (`{"decision": "block", "reason": "..."}`, `{"hookSpecificOutput": {"permissionDecision":
/// "deny", ...}}`, ...) or the tagged forms `{"type": "continue"}`, `{"type": "block", "reason":
/// "..."}` (for PreToolUse: the call is denied with the reason), `{"type": "text", "text":
/// "..."}`, `{"type": "output", "output": {hook JSON output}}`, `{"type": "error", "message":
/// "..."}`. A rejection, a timeout (the completion is then cancelled) or an answer that is none
/// of these is a failed hook: on PreToolUse and PermissionRequest it blocks the call, the reason
/// naming the hook and the failure, unless `"on_failure": "allow"`; elsewhere the action goes
/// ahead. Either way a `hook_error` session event reports it.
///
/// Errors, `free_user_data` and threading: as for `robota_session_options_add_tool`; an unknown
/// event or an `on_failure` the event cannot honour is `ROBOTA_STATUS_INVALID_ARGUMENT`.
///
/// # Safety
/// As `robota_session_options_add_tool`.
#[no_mangle]
pub unsafe extern "C" fn robota_session_options_add_hook(
    options: *mut robota_session_options,
    spec_json: *const c_char,
    len: usize,
    callback: robota_host_callback,
    user_data: *mut c_void,
    free_user_data: robota_free_callback,
    out_err: *mut *mut robota_error,
) -> robota_status {
    ffi_boundary!(out_err, {
        let options = options_arg(options)?;
        if spec_json.is_null() {
            return Err(FfiError::null("spec_json"));
        }
        let spec = json_arg(spec_json, len, "spec_json")?
            .ok_or_else(|| FfiError::new(ROBOTA_STATUS_INVALID_JSON, "`spec_json` is empty"))?;
        let spec = HostHookSpec::from_json_value(spec)?;
        let function = CHostFunction::wrap(callback, user_data, free_user_data)?;
        options.lock().hooks.push(spec.registration(function));
        Ok(())
    })
}

/// Adds a command (run with `robota_session_execute_command`, listed by
/// `robota_session_list_commands`): `descriptor_json` is `{"name": "deploy", "description":
/// "...", "aliases"?: [...], "argument_hint"?: "...", "model_invocable"?: bool (the model may
/// run it as tool `robota_command_<name>`), "user_invocable"?: bool, "lifecycle"?: "inline" |
/// "blocking", "subcommands"?: [{"name", "description"}]}`.
///
/// `callback` gets `{"command", "args", "session_id", "session_name", "permission_mode",
/// "model", "context_state"}`; resolve with `{"message": "...", "success"?: bool (default
/// true), "data"?: any, "effects"?: [...]}` or a JSON string; a rejection is a failed result
/// with the message. A name that collides with another command fails at `robota_session_new`.
///
/// Errors, `free_user_data` and threading: as for `robota_session_options_add_tool`.
///
/// # Safety
/// As `robota_session_options_add_tool`.
#[no_mangle]
pub unsafe extern "C" fn robota_session_options_add_command(
    options: *mut robota_session_options,
    descriptor_json: *const c_char,
    len: usize,
    callback: robota_host_callback,
    user_data: *mut c_void,
    free_user_data: robota_free_callback,
    out_err: *mut *mut robota_error,
) -> robota_status {
    ffi_boundary!(out_err, {
        let options = options_arg(options)?;
        if descriptor_json.is_null() {
            return Err(FfiError::null("descriptor_json"));
        }
        let descriptor = json_arg(descriptor_json, len, "descriptor_json")?.ok_or_else(|| {
            FfiError::new(ROBOTA_STATUS_INVALID_JSON, "`descriptor_json` is empty")
        })?;
        if callback.is_none() {
            return Err(FfiError::null("callback"));
        }
        // Checked before the callback is wrapped, so a failure never runs the finalizer.
        let checked = HostCommand::from_json_value(descriptor.clone(), Arc::new(NoHost))?;
        drop(checked);
        let function = CHostFunction::wrap(callback, user_data, free_user_data)?;
        let command = HostCommand::from_json_value(descriptor, function)?;
        options.lock().commands.push(Arc::new(command));
        Ok(())
    })
}

/// Stands in for a host function while a descriptor is validated.
struct NoHost;

#[engine::api::async_trait]
impl HostFunction for NoHost {
    async fn call(&self, _call: engine::api::HostCall) -> Result<Value, String> {
        Err("no host".into())
    }
}
