//! The C surface of a session's background tasks (Bash with `run_in_background`): list, get,
//! wait for, cancel and close tasks, and read their logs. Tasks are JSON objects `{"id", "kind":
//! "process", "origin": {"kind", "name"?, "tool_use_id"?}, "command", "description"?, "cwd",
//! "pid", "status": "queued" | "running" | "waiting_permission" | "completed" | "failed" |
//! "cancelled" | "lost", "exit_code", "signal", "error", "timeout_reason": null | "max_runtime" |
//! "idle", "current_action", "stdout_path", "stderr_path", "output_bytes", "created_at_ms",
//! "ended_at_ms"}`; their lifecycle also arrives as `background_task_event` events.

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
