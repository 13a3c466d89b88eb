//! `robota_mcp_server`: an in-process MCP server whose tools are host callbacks (the Claude
//! Agent SDK's SDK server), attached to session options with
//! `robota_session_options_add_mcp_server`. Its tools reach the model as
//! `mcp__<server>__<tool>`, with the same permissions, hooks and status as a configured server.

use std::ffi::{c_char, c_void};
use std::sync::{Mutex, MutexGuard, PoisonError};

use engine::api::{HostFunction, HostMcpServerBuilder};
use serde_json::Value;

use crate::boundary::ffi_boundary;
use crate::error::{robota_error, robota_status, FfiError, ROBOTA_STATUS_INVALID_JSON};
use crate::host::{robota_host_callback, CHostFunction};
use crate::options::robota_session_options;
use crate::session::robota_free_callback;
use crate::strings::json_arg;

/// An in-process MCP server being defined.
pub struct robota_mcp_server {
    builder: Mutex<HostMcpServerBuilder>,
}

impl robota_mcp_server {
    fn lock(&self) -> MutexGuard<'_, HostMcpServerBuilder> {
        self.builder.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

unsafe fn server_arg<'a>(
    server: *const robota_mcp_server,
) -> Result<&'a robota_mcp_server, FfiError> {
    if server.is_null() {
        return Err(FfiError::null("server"));
    }
    Ok(&*server)
}

/// Creates an in-process MCP server: `spec_json` is `{"name": "calc", "version"?: "1.0.0"}`. The
/// name is the `<server>` of the tool names `mcp__<server>__<tool>` (letters, digits, `_`, `-`,
/// no `__`, at most 40 characters; checked when the server is added to session options). Free it
/// with `robota_mcp_server_free` (session options that it was added to keep their own copy).
///
/// Errors: `ROBOTA_STATUS_NULL_ARGUMENT`, `ROBOTA_STATUS_INVALID_UTF8`,
/// `ROBOTA_STATUS_INVALID_JSON` (not JSON, or no string `name`).
///
/// # Safety
/// `spec_json` is valid for `len` bytes; `out` is valid for writes; `out_err` is NULL or valid
/// for writes.
#[no_mangle]
pub unsafe extern "C" fn robota_mcp_server_new(
    spec_json: *const c_char,
    len: usize,
    out: *mut *mut robota_mcp_server,
    out_err: *mut *mut robota_error,
) -> robota_status {
    ffi_boundary!(out_err, {
        if out.is_null() {
            return Err(FfiError::null("out"));
        }
        if spec_json.is_null() {
            return Err(FfiError::null("spec_json"));
        }
        let spec = json_arg(spec_json, len, "spec_json")?.unwrap_or(Value::Null);
        let Some(name) = spec.get("name").and_then(Value::as_str) else {
            return Err(FfiError::new(
                ROBOTA_STATUS_INVALID_JSON,
                "`spec_json` must be an object with a string `name`",
            ));
        };
        let version = spec
            .get("version")
            .and_then(Value::as_str)
            .map(str::to_string);
        *out = Box::into_raw(Box::new(robota_mcp_server {
            builder: Mutex::new(HostMcpServerBuilder::new(name, version)),
        }));
        Ok(())
    })
}

/// Frees a server made by `robota_mcp_server_new` (NULL is ignored). Sessions and options it was
/// added to keep working.
///
/// # Safety
/// `server` is NULL or a live server, not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn robota_mcp_server_free(server: *mut robota_mcp_server) {
    ffi_boundary!(value(), {
        if !server.is_null() {
            drop(Box::from_raw(server));
        }
    })
}

/// Adds a tool: `spec_json` is `{"name", "description"?, "input_schema"?: {JSON Schema object},
/// "annotations"?: {"readOnlyHint": true, ...}}` (MCP's tool annotations; read-only tools may
/// run in parallel).
///
/// `callback` gets `{"server", "tool", "input"}`; resolve with a JSON string (text for the
/// model), an MCP result `{"content": [{"type": "text", "text"} | {"type": "image", "data",
/// "mimeType"}, ...], "isError"?: bool, "structuredContent"?: {...}}`, or any other JSON value
/// (the model sees its JSON text); a rejection is a tool error with the message. When the
/// call is aborted the completion is cancelled.
///
/// Errors: `ROBOTA_STATUS_NULL_ARGUMENT`, `ROBOTA_STATUS_INVALID_UTF8`,
/// `ROBOTA_STATUS_INVALID_JSON`, `ROBOTA_STATUS_INVALID_ARGUMENT` (bad or duplicate name, bad
/// schema or annotations). `free_user_data` and threading: as for
/// `robota_session_options_add_tool`.
///
/// # Safety
/// `server` is live; `spec_json` is valid for `len` bytes; `user_data` is usable from engine
/// threads until finalized; `out_err` is NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn robota_mcp_server_add_tool(
    server: *mut robota_mcp_server,
    spec_json: *const c_char,
    len: usize,
    callback: robota_host_callback,
    user_data: *mut c_void,
    free_user_data: robota_free_callback,
    out_err: *mut *mut robota_error,
) -> robota_status {
    ffi_boundary!(out_err, {
        let server = server_arg(server)?;
        if spec_json.is_null() {
            return Err(FfiError::null("spec_json"));
        }
        let spec = json_arg(spec_json, len, "spec_json")?
            .ok_or_else(|| FfiError::new(ROBOTA_STATUS_INVALID_JSON, "`spec_json` is empty"))?;
        if callback.is_none() {
            return Err(FfiError::null("callback"));
        }
        let function: std::sync::Arc<dyn HostFunction> =
            CHostFunction::wrap(callback, user_data, free_user_data)?;
        server.lock().add_tool(spec, function)?;
        Ok(())
    })
}

/// Adds `server` (with the tools added so far) to the session options; sessions created from
/// them serve it in-process. A server named like another one of the session (configured in
/// settings or `mcp_servers`, or added here) makes creating the session fail with
/// `ROBOTA_STATUS_INVALID_ARGUMENT`.
///
/// Errors: `ROBOTA_STATUS_NULL_ARGUMENT`, `ROBOTA_STATUS_INVALID_ARGUMENT` (a bad server name).
///
/// # Safety
/// `options` and `server` are live; `out_err` is NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn robota_session_options_add_mcp_server(
    options: *mut robota_session_options,
    server: *const robota_mcp_server,
    out_err: *mut *mut robota_error,
) -> robota_status {
    ffi_boundary!(out_err, {
        if options.is_null() {
            return Err(FfiError::null("options"));
        }
        let server = server_arg(server)?;
        let entry = server.lock().entry()?;
        (*options).lock().mcp_servers.push(entry);
        Ok(())
    })
}
