//! Session stores written in C: a host callback answering the store operations of
//! `engine::api::HostStoreFunction` (JSON requests `{"op": …}`), set on session options or run
//! through the engine's store conformance suite.

use std::ffi::{c_char, c_void};

use engine::api::{attach_host_store, run_store_conformance_on, HostStoreFunction};
use engine::session::SessionOptions;

use crate::boundary::ffi_boundary;
use crate::error::{robota_error, robota_status, FfiError};
use crate::host::{robota_host_callback, CHostFunction};
use crate::options::robota_session_options;
use crate::session::robota_free_callback;

/// What C hosts are called in store messages.
const STORE_NAME: &str = "C host";

/// Saves sessions made from `options` in the host's own storage: `callback` answers every store
/// operation. Not together with `persistence` in the options' JSON (`robota_session_new` then
/// fails with `ROBOTA_STATUS_INVALID_ARGUMENT`). Setting it again replaces it.
///
/// Each call's request is `{"op": …, …}`; resolve its completion with the answer (JSON) or
/// reject it with a message (the operation fails with it):
///
/// | `op` | fields | answer |
/// |---|---|---|
/// | `put_snapshot` | `session_id`, `summary` (object), `snapshot` (string) | `null` |
/// | `get_snapshot` | `session_id` | the snapshot string or `null` |
/// | `list_snapshots` | — | `[summary, …]` |
/// | `append_log` | `session_id`, `start`, `end`, `lines` (string) | `null`; reject unless the log ends at `start` now |
/// | `read_log` | `session_id`, `start` | `null` (no log) or `[{"start", "lines"}, …]` in order, from the chunk holding `start` or earlier |
/// | `log_length` | `session_id` | the `end` of the last chunk, or `null` |
/// | `list_logs` | — | `["id", …]` or `[{"id", "updated_at"}, …]` |
/// | `delete_session` | `session_id` | `true` when something was removed |
/// | `acquire_lease` | `session_id`, `lease` (object with `token`), `replace_token` (string or null) | `null` when taken (no lease held, or the held one's `token` is `replace_token`), else the held lease |
/// | `release_lease` | `session_id`, `token` | `null`; remove the lease only if its `token` matches |
///
/// Byte offsets are the engine's: store each chunk's `end` and never measure strings. The engine
/// waits up to 120 s for each answer. `free_user_data` and threading: as for
/// `robota_session_options_set_permission_handler` (the callback runs on engine threads and may
/// answer from any thread).
///
/// # Safety
/// As `robota_session_options_set_permission_handler`.
#[no_mangle]
pub unsafe extern "C" fn robota_session_options_set_session_store(
    options: *mut robota_session_options,
    callback: robota_host_callback,
    user_data: *mut c_void,
    free_user_data: robota_free_callback,
    out_err: *mut *mut robota_error,
) -> robota_status {
    ffi_boundary!(out_err, {
        if options.is_null() {
            return Err(FfiError::null("options"));
        }
        let function = CHostFunction::wrap(callback, user_data, free_user_data)?;
        (*options).lock().session_store = Some(function);
        Ok(())
    })
}

/// Saves `session` in the host store `function`, when the options have one.
pub(crate) fn attach_store(
    session: &mut SessionOptions,
    function: Option<std::sync::Arc<dyn engine::api::HostFunction>>,
) -> Result<(), FfiError> {
    if let Some(function) = function {
        attach_host_store(
            session,
            std::sync::Arc::new(HostStoreFunction::new(STORE_NAME, function)),
        )?;
    }
    Ok(())
}

/// Runs the engine's store conformance suite on the store `callback` answers (the operations of
/// `robota_session_options_set_session_store`, each request with a `"store_index"`: keep one
/// fresh, empty store per index). Blocks until every check ran (a few seconds); `*out_json` is
/// `[{"check", "passed", "message"}, …]`, owned by the caller (free with
/// `robota_string_free`). The checks that need a second process run only on the built-in
/// stores. `free_user_data` (may be NULL) is called once with `user_data` when this returns.
/// Errors: `ROBOTA_STATUS_NULL_ARGUMENT`. Threading: any thread but the engine's.
///
/// # Safety
/// `user_data` is usable from engine threads until finalized; `out_json` is valid for writes;
/// `out_err` is NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn robota_run_store_conformance(
    callback: robota_host_callback,
    user_data: *mut c_void,
    free_user_data: robota_free_callback,
    out_json: *mut *mut c_char,
    out_err: *mut *mut robota_error,
) -> robota_status {
    ffi_boundary!(out_err, {
        if out_json.is_null() {
            return Err(FfiError::null("out_json"));
        }
        let function = CHostFunction::wrap(callback, user_data, free_user_data)?;
        let outcomes = run_store_conformance_on(STORE_NAME, function);
        *out_json = crate::strings::owned_string(outcomes.to_string());
        Ok(())
    })
}
