//! `robota_evaluate_permission`: the permission evaluator as a pure function.

use std::ffi::c_char;

use engine::permissions::{evaluate_permission, PermissionContext};
use serde_json::Value;

use crate::boundary::ffi_boundary;
use crate::error::{robota_error, robota_status, FfiError, ROBOTA_STATUS_INVALID_JSON};
use crate::strings::{json_arg, str_arg, write_string};

/// Evaluates whether a tool call is allowed, without a session.
///
/// - `tool` (`tool_len` bytes): the tool name, e.g. `"Bash"`.
/// - `input_json`: the tool input as a JSON value (empty: `{}`).
/// - `context_json`: the permission context, e.g.
///   `{"mode": "default", "cwd": "/abs/dir", "rules": {"allow": [...], "deny": [...], "ask": [...]}}`
///   (`cwd` is required).
///
/// On success `*out_json` is the decision as JSON (`{"decision": "allow"|"ask"|"deny", ...}`).
/// Errors: `ROBOTA_STATUS_NULL_ARGUMENT`, `ROBOTA_STATUS_INVALID_UTF8`,
/// `ROBOTA_STATUS_INVALID_JSON`.
///
/// Ownership: `*out_json` is owned by the caller; free it with `robota_string_free`.
/// Threading: callable from any thread; does not touch a runtime.
///
/// # Safety
/// Every `(pointer, length)` pair is valid for reads; `out_json` is valid for writes; `out_err`
/// is NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn robota_evaluate_permission(
    tool: *const c_char,
    tool_len: usize,
    input_json: *const c_char,
    input_len: usize,
    context_json: *const c_char,
    context_len: usize,
    out_json: *mut *mut c_char,
    out_err: *mut *mut robota_error,
) -> robota_status {
    ffi_boundary!(out_err, {
        if out_json.is_null() {
            return Err(FfiError::null("out_json"));
        }
        if tool.is_null() {
            return Err(FfiError::null("tool"));
        }
        if context_json.is_null() {
            return Err(FfiError::null("context_json"));
        }
        let tool = str_arg(tool, tool_len, "tool")?;
        let input = json_arg(input_json, input_len, "input_json")?
            .unwrap_or_else(|| Value::Object(Default::default()));
        let context = json_arg(context_json, context_len, "context_json")?
            .ok_or_else(|| FfiError::new(ROBOTA_STATUS_INVALID_JSON, "`context_json` is empty"))?;
        let context: PermissionContext = serde_json::from_value(context).map_err(|e| {
            FfiError::new(
                ROBOTA_STATUS_INVALID_JSON,
                format!("invalid permission context: {e}"),
            )
        })?;
        let decision = evaluate_permission(tool, &input, &context);
        let json = serde_json::to_string(&decision).map_err(|e| {
            FfiError::new(ROBOTA_STATUS_INVALID_JSON, format!("cannot encode: {e}"))
        })?;
        write_string(out_json, json);
        Ok(())
    })
}
