//! `robota_provider`: a model, from a JSON configuration.

use std::ffi::c_char;
use std::sync::Arc;

use engine::api::{HostProvider, HostProviderInfo, ProviderConfig};
use engine::provider::Provider;

use crate::boundary::ffi_boundary;
use crate::error::{robota_error, robota_status, FfiError, ROBOTA_STATUS_INVALID_JSON};
use crate::host::{robota_host_callback, CHostFunction};
use crate::runtime::{robota_runtime, runtime_arg, RuntimeInner};
use crate::session::robota_free_callback;
use crate::strings::json_arg;
use std::ffi::c_void;

/// A model provider. Opaque; create with `robota_provider_new_json`, free with
/// `robota_provider_free`. Sessions created from it keep it alive.
pub struct robota_provider {
    pub(crate) provider: Arc<dyn Provider>,
    pub(crate) runtime: Arc<RuntimeInner>,
}

/// Creates a provider from a JSON configuration (`json`, `len` bytes of UTF-8):
///
/// - `{"type": "scripted", "turns": [...]}`: plays the scripted turns in order, one per model
///   call (each turn: `{"text": "..." | [chunks], "tool_calls": [...], ...}`); for tests.
/// - `{"type": "replay", "log_path": "..."}`: replays the model answers of a recorded session
///   log (JSONL), offline.
/// - `{"type": "anthropic", "model": "...", "api_key"?: "...", "base_url"?: "...",
///   "max_tokens"?: n, "max_retries"?: n, "idle_timeout_ms"?: n, "max_retry_wait_ms"?: n,
///   "headers"?: {...}, "prompt_caching"?: bool, "prompt_cache_ttl"?: "5m" | "1h"}`: the
///   Anthropic Messages API; `api_key`/`base_url` default to `ANTHROPIC_API_KEY` /
///   `ANTHROPIC_BASE_URL`. `max_retry_wait_ms` (default 60000) is the longest `retry-after`
///   waited out; a longer one fails the call at once. Prompt caching is on unless
///   `prompt_caching` is false (or, when it is absent, `DISABLE_PROMPT_CACHING=1`): breakpoints
///   on the tools, the system prompt and the conversation prefix; `prompt_cache_ttl` "1h" keeps
///   the cache an hour.
/// - `{"type": "openai", ...same fields}`: an OpenAI-compatible chat completions API
///   (`OPENAI_API_KEY` / `OPENAI_BASE_URL`).
///
/// The format is the one every robota binding accepts (`robota::api::ProviderConfig`);
/// unknown fields are rejected.
///
/// `runtime` may be NULL (the default runtime). Errors: `ROBOTA_STATUS_NULL_ARGUMENT`,
/// `ROBOTA_STATUS_INVALID_UTF8`, `ROBOTA_STATUS_INVALID_JSON`, `ROBOTA_STATUS_INVALID_ARGUMENT`
/// (unknown type, unreadable replay log), `ROBOTA_STATUS_PROVIDER`.
///
/// Ownership: `*out` is owned by the caller; free it with `robota_provider_free`.
/// Threading: callable from any thread.
///
/// # Safety
/// `json` is valid for `len` bytes; `out` is valid for writes; `out_err` is NULL or valid for
/// writes; `runtime` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn robota_provider_new_json(
    runtime: *const robota_runtime,
    json: *const c_char,
    len: usize,
    out: *mut *mut robota_provider,
    out_err: *mut *mut robota_error,
) -> robota_status {
    ffi_boundary!(out_err, {
        if out.is_null() {
            return Err(FfiError::null("out"));
        }
        if json.is_null() {
            return Err(FfiError::null("json"));
        }
        let config = json_arg(json, len, "json")?.ok_or_else(|| {
            FfiError::new(
                ROBOTA_STATUS_INVALID_JSON,
                "invalid provider config: the configuration is empty",
            )
        })?;
        let config = ProviderConfig::from_json_value(config)?;
        let runtime = runtime_arg(runtime)?;
        // HTTP clients may register with the runtime's reactor.
        let provider = {
            let _guard = runtime.handle().enter();
            config.build()?
        };
        *out = Box::into_raw(Box::new(robota_provider { provider, runtime }));
        Ok(())
    })
}

/// Creates a provider whose model calls the host answers (a model the library does not know,
/// a proxy, a test double).
///
/// `info_json` (may be empty) is `{"name"?: "host", "model"?: "host", "context_window"?: n,
/// "thinking"?: bool}`. For every model call `callback` gets the request as JSON (`{"system"?,
/// "messages": [...], "tools": [{"name", "description", "input_schema"}], "max_tokens"?,
/// ...}`) and a completion. Stream the answer with `robota_completion_emit` (text deltas, tool
/// calls, usage), then `robota_completion_resolve` with `{"stop_reason"?: "end_turn" |
/// "tool_use" | "max_tokens" | ..., "usage"?: {...}, "model"?: "...", "text"?: "...",
/// "tool_calls"?: [{"id", "name", "input"}], "error"?: {"kind", "message"}}` (every field
/// optional; `null` is fine) or `robota_completion_reject` (a provider error). On abort the
/// completion is cancelled and the call ends with what had streamed.
///
/// `free_user_data` (may be NULL) is called exactly once, after the last callback, when the
/// provider and every session using it are gone; not when this function fails.
/// `runtime` may be NULL (the default runtime).
///
/// Ownership: `*out` is owned by the caller; free it with `robota_provider_free`.
/// Threading: callable from any thread; the callback runs on engine threads.
///
/// # Safety
/// `info_json` is valid for `len` bytes (or NULL with 0); `user_data` is usable from engine
/// threads until finalized; `out` is valid for writes; `out_err` is NULL or valid for writes;
/// `runtime` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn robota_provider_new_host(
    runtime: *const robota_runtime,
    info_json: *const c_char,
    len: usize,
    callback: robota_host_callback,
    user_data: *mut c_void,
    free_user_data: robota_free_callback,
    out: *mut *mut robota_provider,
    out_err: *mut *mut robota_error,
) -> robota_status {
    ffi_boundary!(out_err, {
        if out.is_null() {
            return Err(FfiError::null("out"));
        }
        if callback.is_none() {
            return Err(FfiError::null("callback"));
        }
        let info = json_arg(info_json, len, "info_json")?.unwrap_or(serde_json::Value::Null);
        let info = HostProviderInfo::from_json_value(info)?;
        let runtime = runtime_arg(runtime)?;
        let function = CHostFunction::wrap(callback, user_data, free_user_data)?;
        let provider: Arc<dyn Provider> = Arc::new(HostProvider::new(info, function));
        *out = Box::into_raw(Box::new(robota_provider { provider, runtime }));
        Ok(())
    })
}

/// Frees a provider handle. NULL is ignored. Sessions created from it keep working.
///
/// # Safety
/// `provider` is NULL or a handle from `robota_provider_new_json`, freed at most once.
#[no_mangle]
pub unsafe extern "C" fn robota_provider_free(provider: *mut robota_provider) {
    ffi_boundary!(value(), {
        if !provider.is_null() {
            drop(Box::from_raw(provider));
        }
    })
}
