//! The C surface of a session's background tasks (Bash with `run_in_background`, background
//! subagents) and of subagents started by host code: list, get, wait for, cancel and close
//! tasks, read their logs, run a subagent, start one in the background. Tasks are JSON objects
//! `{"id", "kind": "process" | "agent", "origin": {"kind", "name"?, "tool_use_id"?}, "command",
//! "description"?, "cwd", "pid", "status": "queued" | "running" | "waiting_permission" |
//! "completed" | "failed" | "cancelled" | "lost", "exit_code", "signal", "error",
//! "timeout_reason": null | "max_runtime" | "idle", "current_action", "stdout_path",
//! "stderr_path", "output_bytes", "created_at_ms", "ended_at_ms"}`; their lifecycle also arrives
//! as `background_task_event` events.

use std::ffi::c_char;
use std::sync::Arc;
use std::time::Duration;

use engine::tools::builtins::LogStream;

use crate::boundary::ffi_boundary;
use crate::error::{robota_error, robota_status, FfiError, ROBOTA_STATUS_INVALID_ARGUMENT};
use crate::session::{
    checkpoint_id, refuse_on_engine_thread, robota_session, session_arg, session_error, write_json,
};

/// Reads a task id argument.
///
/// # Safety
/// `id` is NULL or valid for `len` bytes.
unsafe fn task_id(id: *const c_char, len: usize) -> Result<String, FfiError> {
    checkpoint_id(id, len)
}

/// The session's background tasks, oldest first, as a JSON array of task objects (see the
/// module documentation). Tasks of an earlier run of a resumed session are included; those
/// that were running when that run's process ended are `"lost"`.
///
/// Ownership: `*out_json` is owned; free with `robota_string_free`. Threading: any thread.
///
/// # Safety
/// `s` is a live session; `out_json` is valid for writes; `out_err` is NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn robota_session_list_background_tasks(
    s: *const robota_session,
    out_json: *mut *mut c_char,
    out_err: *mut *mut robota_error,
) -> robota_status {
    ffi_boundary!(out_err, {
        let shared = session_arg(s)?;
        write_json(
            out_json,
            "out_json",
            &shared.session.list_background_tasks(),
        )
    })
}

/// One background task (`id`, `id_len` bytes of UTF-8) as a JSON task object. An unknown id is
/// `ROBOTA_STATUS_INVALID_ARGUMENT`, with the known ids in the message.
///
/// Ownership: `*out_json` is owned; free with `robota_string_free`. Threading: any thread.
///
/// # Safety
/// `s` is a live session; `id` is valid for `id_len` bytes; `out_json` is valid for writes;
/// `out_err` is NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn robota_session_get_background_task(
    s: *const robota_session,
    id: *const c_char,
    id_len: usize,
    out_json: *mut *mut c_char,
    out_err: *mut *mut robota_error,
) -> robota_status {
    ffi_boundary!(out_err, {
        let shared = session_arg(s)?;
        let id = task_id(id, id_len)?;
        let task = shared.session.get_background_task(&id).ok_or_else(|| {
            let known: Vec<String> = shared
                .session
                .list_background_tasks()
                .into_iter()
                .map(|t| t.id)
                .collect();
            FfiError::new(
                ROBOTA_STATUS_INVALID_ARGUMENT,
                format!(
                    "no background task `{id}` (known: {})",
                    if known.is_empty() {
                        "none".to_string()
                    } else {
                        known.join(", ")
                    }
                ),
            )
        })?;
        write_json(out_json, "out_json", &task)
    })
}

/// Waits until the task has ended, at most `timeout_ms`, and writes the task as it is then
/// (check its `"status"`: still `"running"` when the time ran out). Blocks the calling thread:
/// refused (`ROBOTA_STATUS_INVALID_STATE`) inside callbacks.
///
/// Ownership: `*out_json` is owned; free with `robota_string_free`.
///
/// # Safety
/// As `robota_session_get_background_task`.
#[no_mangle]
pub unsafe extern "C" fn robota_session_wait_background_task(
    s: *const robota_session,
    id: *const c_char,
    id_len: usize,
    timeout_ms: u64,
    out_json: *mut *mut c_char,
    out_err: *mut *mut robota_error,
) -> robota_status {
    ffi_boundary!(out_err, {
        let shared = session_arg(s)?;
        let id = task_id(id, id_len)?;
        refuse_on_engine_thread("robota_session_wait_background_task")?;
        let session = Arc::clone(&shared.session);
        let task = shared.runtime.handle().block_on(async move {
            session
                .wait_background_task(&id, Duration::from_millis(timeout_ms))
                .await
        });
        write_json(out_json, "out_json", &task.map_err(session_error)?)
    })
}

/// Stops a running task with its whole process tree (SIGTERM, grace, SIGKILL) and writes it
/// once stopped (`"status": "cancelled"`). A task that already ended, or an unknown id, is
/// `ROBOTA_STATUS_INVALID_ARGUMENT`. Blocks the calling thread: refused inside callbacks.
///
/// Ownership: `*out_json` is owned; free with `robota_string_free`.
///
/// # Safety
/// As `robota_session_get_background_task`.
#[no_mangle]
pub unsafe extern "C" fn robota_session_cancel_background_task(
    s: *const robota_session,
    id: *const c_char,
    id_len: usize,
    out_json: *mut *mut c_char,
    out_err: *mut *mut robota_error,
) -> robota_status {
    ffi_boundary!(out_err, {
        let shared = session_arg(s)?;
        let id = task_id(id, id_len)?;
        refuse_on_engine_thread("robota_session_cancel_background_task")?;
        let session = Arc::clone(&shared.session);
        let task = shared
            .runtime
            .handle()
            .block_on(async move { session.cancel_background_task(&id).await });
        write_json(out_json, "out_json", &task.map_err(session_error)?)
    })
}

/// Removes an ended task from the list (its log files stay) and writes it. A running task, or
/// an unknown id, is `ROBOTA_STATUS_INVALID_ARGUMENT`.
///
/// Ownership: `*out_json` is owned; free with `robota_string_free`. Threading: any thread.
///
/// # Safety
/// As `robota_session_get_background_task`.
#[no_mangle]
pub unsafe extern "C" fn robota_session_close_background_task(
    s: *const robota_session,
    id: *const c_char,
    id_len: usize,
    out_json: *mut *mut c_char,
    out_err: *mut *mut robota_error,
) -> robota_status {
    ffi_boundary!(out_err, {
        let shared = session_arg(s)?;
        let id = task_id(id, id_len)?;
        let task = shared
            .session
            .close_background_task(&id)
            .map_err(session_error)?;
        write_json(out_json, "out_json", &task)
    })
}

/// A page of a task's output file: `stream` 0 is stdout, 1 stderr; up to `max_bytes` (at most
/// 1 MiB) from byte `offset`. Writes `{"task_id", "stream", "path", "offset", "next_offset",
/// "total_bytes", "text"}`; read on from `next_offset` until it equals `total_bytes`.
///
/// Ownership: `*out_json` is owned; free with `robota_string_free`. Threading: any thread.
///
/// # Safety
/// As `robota_session_get_background_task`.
#[no_mangle]
pub unsafe extern "C" fn robota_session_read_background_task_log(
    s: *const robota_session,
    id: *const c_char,
    id_len: usize,
    stream: i32,
    offset: u64,
    max_bytes: usize,
    out_json: *mut *mut c_char,
    out_err: *mut *mut robota_error,
) -> robota_status {
    ffi_boundary!(out_err, {
        let shared = session_arg(s)?;
        let id = task_id(id, id_len)?;
        let stream = match stream {
            0 => LogStream::Stdout,
            1 => LogStream::Stderr,
            other => {
                return Err(FfiError::new(
                    ROBOTA_STATUS_INVALID_ARGUMENT,
                    format!("stream must be 0 (stdout) or 1 (stderr), got {other}"),
                ))
            }
        };
        let page = shared
            .session
            .read_background_task_log(&id, stream, offset, max_bytes)
            .map_err(session_error)?;
        write_json(out_json, "out_json", &page)
    })
}

/// Reads a subagent request argument (see `robota_session_run_subagent`).
///
/// # Safety
/// `request` is NULL or valid for `len` bytes.
unsafe fn subagent_request(
    request: *const c_char,
    len: usize,
) -> Result<engine::framework::agents::SubagentRequest, FfiError> {
    let text = crate::strings::str_arg(request, len, "request_json")?;
    Ok(engine::api::subagent_request_from_json(text)?)
}

/// Runs a subagent from host code to its final report and writes the report: `request_json`
/// (`len` bytes of UTF-8) is `{"prompt", "agent_type"?, "model"?, "isolation"?: "none" |
/// "worktree"}` — the agent definition (the default agent when absent), a model overriding the
/// definition's (`sonnet`, `opus`, `haiku`, `inherit` or a model id) and worktree isolation. The
/// report is `{"agent_id", "agent_type", "model", "response", "stop_reason", "interrupted",
/// "rounds", "tools_executed", "error"?, "notes"?, "worktree"?, "transcript_path"?, …}`; its
/// progress arrives as `background_task_event` events (`"task_kind": "subagent"`), and
/// `robota_session_abort` stops it.
///
/// Errors: `ROBOTA_STATUS_INVALID_JSON` for text that is not JSON,
/// `ROBOTA_STATUS_INVALID_ARGUMENT` for a missing prompt, an unknown key, agent or isolation, or
/// a model the provider cannot serve. A subagent that ran and failed is a report with `"error"`.
/// Blocks the calling thread: refused (`ROBOTA_STATUS_INVALID_STATE`) inside callbacks.
///
/// Ownership: `*out_json` is owned; free with `robota_string_free`.
///
/// # Safety
/// `s` is a live session; `request_json` is valid for `len` bytes; `out_json` is valid for
/// writes; `out_err` is NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn robota_session_run_subagent(
    s: *const robota_session,
    request_json: *const c_char,
    len: usize,
    out_json: *mut *mut c_char,
    out_err: *mut *mut robota_error,
) -> robota_status {
    ffi_boundary!(out_err, {
        let shared = session_arg(s)?;
        let request = subagent_request(request_json, len)?;
        refuse_on_engine_thread("robota_session_run_subagent")?;
        let session = Arc::clone(&shared.session);
        let report = shared
            .runtime
            .handle()
            .block_on(async move { session.run_subagent(request).await });
        write_json(out_json, "out_json", &report.map_err(session_error)?)
    })
}

/// Starts a subagent from host code as a background task (kind `"agent"`) and writes the task
/// at once (a task object, see the module documentation); the request is as for
/// `robota_session_run_subagent`. Wait for it with `robota_session_wait_background_task`, read
/// its report with `robota_session_read_background_task_log`, stop it with
/// `robota_session_cancel_background_task`; its transitions arrive as `background_task_event`
/// events. The concurrency limit refuses one task too many (`ROBOTA_STATUS_INVALID_ARGUMENT`,
/// naming the running tasks). Threading: any thread.
///
/// Ownership: `*out_json` is owned; free with `robota_string_free`.
///
/// # Safety
/// As `robota_session_run_subagent`.
#[no_mangle]
pub unsafe extern "C" fn robota_session_start_background_subagent(
    s: *const robota_session,
    request_json: *const c_char,
    len: usize,
    out_json: *mut *mut c_char,
    out_err: *mut *mut robota_error,
) -> robota_status {
    ffi_boundary!(out_err, {
        let shared = session_arg(s)?;
        let request = subagent_request(request_json, len)?;
        // The subagent runs on the session's runtime.
        let runtime = shared.runtime.handle().clone();
        let _entered = runtime.enter();
        let task = shared
            .session
            .start_background_subagent(request)
            .map_err(session_error)?;
        write_json(out_json, "out_json", &task)
    })
}
