//! `robota_query`: the one-call API (`create_query`): each run is one full agent turn on the
//! same session, answered with a `QueryResult` as JSON.

use std::ffi::{c_char, c_void};
use std::sync::Arc;

use engine::framework::query::{create_query, Query, QueryError, QueryOptions};
use serde_json::Value;

use crate::boundary::ffi_boundary;
use crate::error::{robota_error, robota_status, FfiError, ROBOTA_STATUS_INVALID_JSON};
use crate::host::{robota_result_callback, ResultCallback};
use crate::provider::robota_provider;
use crate::runtime::RuntimeInner;
use crate::strings::{json_arg, str_arg};

/// A reusable query function over one session. Opaque; create with `robota_query_new`, free
/// with `robota_query_free`. Callable from any thread.
pub struct robota_query {
    query: Arc<Query>,
    runtime: Arc<RuntimeInner>,
}

fn query_error(e: QueryError) -> FfiError {
    engine::api::ApiError::from(e).into()
}

/// Reads a list of rule strings from the options.
fn take_rules(options: &mut Value, key: &str) -> Result<Vec<String>, FfiError> {
    let Some(value) = options.as_object_mut().and_then(|o| o.remove(key)) else {
        return Ok(Vec::new());
    };
    serde_json::from_value(value).map_err(|e| {
        FfiError::new(
            ROBOTA_STATUS_INVALID_JSON,
            format!("invalid query options: `{key}` must be an array of strings: {e}"),
        )
    })
}

/// Creates a query on `provider`. `options_json` (may be empty) takes the session options of
/// `robota_session_new_json` (except `pull_events`) plus `allowed_tools` / `disallowed_tools`:
/// permission rules (`"Read"`, `"Bash(git *)"`) allowed or denied for every run.
///
/// Errors: `ROBOTA_STATUS_NULL_ARGUMENT`, `ROBOTA_STATUS_INVALID_UTF8`,
/// `ROBOTA_STATUS_INVALID_JSON`, `ROBOTA_STATUS_INVALID_ARGUMENT` (a rule does not parse),
/// `ROBOTA_STATUS_SESSION`, `ROBOTA_STATUS_RUNTIME` (after `fork()`).
/// Ownership: `*out` is owned; free with `robota_query_free`. Threading: any thread.
///
/// # Safety
/// `provider` is live; `options_json` is valid for `len` bytes (or NULL with 0); `out` is valid
/// for writes; `out_err` is NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn robota_query_new(
    provider: *const robota_provider,
    options_json: *const c_char,
    len: usize,
    out: *mut *mut robota_query,
    out_err: *mut *mut robota_error,
) -> robota_status {
    ffi_boundary!(out_err, {
        if out.is_null() {
            return Err(FfiError::null("out"));
        }
        if provider.is_null() {
            return Err(FfiError::null("provider"));
        }
        let provider = &*provider;
        provider.runtime.check_fork()?;
        let mut options = json_arg(options_json, len, "options_json")?.unwrap_or(Value::Null);
        let allowed_tools = take_rules(&mut options, "allowed_tools")?;
        let disallowed_tools = take_rules(&mut options, "disallowed_tools")?;
        let session = engine::api::SessionConfig::from_json_value(options)?
            .into_session_options(Arc::clone(&provider.provider))?;
        let mut query_options =
            QueryOptions::new(session.cwd.clone(), Arc::clone(&provider.provider));
        query_options.settings = session.settings.clone();
        query_options.persistence = session.persistence.clone();
        query_options.max_turns = session.max_turns;
        query_options.permission_mode = session.permission_mode;
        query_options.allowed_tools = allowed_tools;
        query_options.disallowed_tools = disallowed_tools;
        query_options.session = Some(session);
        let runtime = Arc::clone(&provider.runtime);
        let query = {
            let _guard = runtime.handle().enter();
            create_query(query_options).map_err(query_error)?
        };
        *out = Box::into_raw(Box::new(robota_query {
            query: Arc::new(query),
            runtime,
        }));
        Ok(())
    })
}

/// Runs one query with `prompt` (`len` bytes of UTF-8) and returns at once; `callback` is
/// called exactly once on an engine thread with the result as JSON: `{"response", "messages":
/// [...], "usage": {...}, "cost_usd", "num_turns", "duration_ms", "session_id",
/// "stop_reason", "status", "refusal"?, "structured_output"?}` — `status` is `complete`,
/// `refused` (with `refusal`: `text`, `category`?, `explanation`?), `truncated` (the answer was
/// cut off at the output token limit) or `interrupted` (aborted; stop reason `"interrupted"`);
/// `structured_output` is the answer validated against the options' `output_format` — or an
/// error (`ROBOTA_STATUS_PROVIDER`: the model call failed; `ROBOTA_STATUS_STRUCTURED_OUTPUT`:
/// the answer never matched `output_format`, the message lists the last validation errors;
/// `ROBOTA_STATUS_SESSION`: refused, e.g. another run of this query is in progress;
/// `ROBOTA_STATUS_CANCELLED`: the runtime went away).
/// Argument errors are returned directly and `callback` is then not called.
///
/// Threading: any thread, including from a callback.
///
/// # Safety
/// `query` is live; `prompt` is valid for `len` bytes; `user_data` stays valid until the
/// callback ran; `out_err` is NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn robota_query_run(
    query: *const robota_query,
    prompt: *const c_char,
    len: usize,
    callback: robota_result_callback,
    user_data: *mut c_void,
    out_err: *mut *mut robota_error,
) -> robota_status {
    ffi_boundary!(out_err, {
        if query.is_null() {
            return Err(FfiError::null("query"));
        }
        let handle = &*query;
        handle.runtime.check_fork()?;
        if prompt.is_null() {
            return Err(FfiError::null("prompt"));
        }
        let prompt = str_arg(prompt, len, "prompt")?.to_string();
        let done = ResultCallback::new(callback, user_data)?;
        let query = Arc::clone(&handle.query);
        handle.runtime.handle().spawn(async move {
            let result = query.query(&prompt).await.map_err(query_error);
            done.finish(result.and_then(|r| {
                serde_json::to_string(&r).map_err(|e| {
                    FfiError::new(ROBOTA_STATUS_INVALID_JSON, format!("cannot encode: {e}"))
                })
            }));
        });
        Ok(())
    })
}

/// Aborts the query's running run (its callback then gets the partial result with stop
/// reason `"aborted"`). Does not wait. Threading: any thread.
///
/// # Safety
/// `query` is live; `out_err` is NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn robota_query_abort(
    query: *const robota_query,
    out_err: *mut *mut robota_error,
) -> robota_status {
    ffi_boundary!(out_err, {
        if query.is_null() {
            return Err(FfiError::null("query"));
        }
        let handle = &*query;
        handle.runtime.check_fork()?;
        handle.query.session().abort();
        Ok(())
    })
}

/// Frees a query. NULL is ignored. A running run is aborted; its callback is still called
/// exactly once (with the partial result or `ROBOTA_STATUS_CANCELLED`). Threading: any
/// thread, including from a callback.
///
/// # Safety
/// `query` is NULL or from `robota_query_new`, freed at most once.
#[no_mangle]
pub unsafe extern "C" fn robota_query_free(query: *mut robota_query) {
    ffi_boundary!(value(), {
        if query.is_null() {
            return;
        }
        let handle = Box::from_raw(query);
        if handle.runtime.forked() {
            std::mem::forget(handle);
            return;
        }
        handle.query.session().abort();
        drop(handle);
    })
}
