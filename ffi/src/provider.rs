//! `robota_provider`: a model, from a JSON configuration.

use std::ffi::c_char;
use std::sync::Arc;

use engine::provider::scripted::ScriptedProvider;
use engine::provider::{
    AnthropicConfig, AnthropicProvider, OpenAiConfig, OpenAiProvider, Provider,
};
use serde::Deserialize;
use serde_json::Value;

use crate::boundary::ffi_boundary;
use crate::error::{
    robota_error, robota_status, FfiError, ROBOTA_STATUS_INVALID_ARGUMENT,
    ROBOTA_STATUS_INVALID_JSON, ROBOTA_STATUS_PROVIDER,
};
use crate::runtime::{robota_runtime, runtime_arg, RuntimeInner};
use crate::strings::json_arg;

/// A model provider. Opaque; create with `robota_provider_new_json`, free with
/// `robota_provider_free`. Sessions created from it keep it alive.
pub struct robota_provider {
    pub(crate) provider: Arc<dyn Provider>,
    pub(crate) runtime: Arc<RuntimeInner>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct HttpProviderConfig {
    #[serde(rename = "type")]
    _type: String,
    model: String,
    #[serde(default)]
    api_key: Option<String>,
    #[serde(default)]
    base_url: Option<String>,
    #[serde(default)]
    max_tokens: Option<u32>,
}

fn invalid_json(e: impl std::fmt::Display) -> FfiError {
    FfiError::new(
        ROBOTA_STATUS_INVALID_JSON,
        format!("invalid provider config: {e}"),
    )
}

fn build_provider(config: Value) -> Result<Arc<dyn Provider>, FfiError> {
    let kind = config
        .get("type")
        .and_then(Value::as_str)
        .ok_or_else(|| invalid_json("missing string field `type`"))?
        .to_string();
    match kind.as_str() {
        "scripted" => {
            let turns = config
                .get("turns")
                .ok_or_else(|| invalid_json("a scripted provider needs `turns`"))?;
            let provider = ScriptedProvider::from_json(&turns.to_string()).map_err(invalid_json)?;
            Ok(Arc::new(provider))
        }
        "anthropic" => {
            let c: HttpProviderConfig = serde_json::from_value(config).map_err(invalid_json)?;
            let mut cfg = AnthropicConfig::new(c.model);
            cfg.api_key = c.api_key;
            cfg.base_url = c.base_url;
            cfg.max_tokens = c.max_tokens;
            let provider = AnthropicProvider::new(cfg)
                .map_err(|e| FfiError::new(ROBOTA_STATUS_PROVIDER, e.to_string()))?;
            Ok(Arc::new(provider))
        }
        "openai" => {
            let c: HttpProviderConfig = serde_json::from_value(config).map_err(invalid_json)?;
            let mut cfg = OpenAiConfig::new(c.model);
            cfg.api_key = c.api_key;
            cfg.base_url = c.base_url;
            cfg.max_tokens = c.max_tokens;
            let provider = OpenAiProvider::new(cfg)
                .map_err(|e| FfiError::new(ROBOTA_STATUS_PROVIDER, e.to_string()))?;
            Ok(Arc::new(provider))
        }
        other => Err(FfiError::new(
            ROBOTA_STATUS_INVALID_ARGUMENT,
            format!("unknown provider type `{other}` (expected scripted, anthropic or openai)"),
        )),
    }
}

/// Creates a provider from a JSON configuration (`json`, `len` bytes of UTF-8):
///
/// - `{"type": "scripted", "turns": [...]}`: plays the scripted turns in order, one per model
///   call (each turn: `{"text": "..." | [chunks], "tool_calls": [...], ...}`); for tests.
/// - `{"type": "anthropic", "model": "...", "api_key"?: "...", "base_url"?: "...",
///   "max_tokens"?: n}`: the Anthropic Messages API.
/// - `{"type": "openai", ...same fields}`: an OpenAI-compatible chat completions API.
///
/// `runtime` may be NULL (the default runtime). Errors: `ROBOTA_STATUS_NULL_ARGUMENT`,
/// `ROBOTA_STATUS_INVALID_UTF8`, `ROBOTA_STATUS_INVALID_JSON`, `ROBOTA_STATUS_INVALID_ARGUMENT`
/// (unknown type), `ROBOTA_STATUS_PROVIDER`.
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
        let config = json_arg(json, len, "json")?
            .ok_or_else(|| invalid_json("the configuration is empty"))?;
        let runtime = runtime_arg(runtime)?;
        // HTTP clients may register with the runtime's reactor.
        let provider = {
            let _guard = runtime.handle().enter();
            build_provider(config)?
        };
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
