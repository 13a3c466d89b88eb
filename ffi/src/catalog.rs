//! `robota_model_info` and `robota_list_models`: the model catalog (context window, maximum
//! output, prices, thinking) as pure functions.

use std::ffi::c_char;

use crate::boundary::ffi_boundary;
use crate::error::{robota_error, robota_status, FfiError, ROBOTA_STATUS_INVALID_JSON};
use crate::strings::{str_arg, write_string};

/// `value` as JSON text, or an error saying it could not be encoded.
fn to_json(value: &impl serde::Serialize) -> Result<String, FfiError> {
    serde_json::to_string(value)
        .map_err(|e| FfiError::new(ROBOTA_STATUS_INVALID_JSON, format!("cannot encode: {e}")))
}

/// What robota knows about a model: its context window, maximum output, prices and thinking.
///
/// - `model` (`model_len` bytes of UTF-8): the model id, e.g. `"claude-sonnet-4-5-20250929"`
///   (snapshot suffixes and routing prefixes such as Bedrock's `us.anthropic.` are understood).
///
/// On success `*out_json` is an object: `model` (as asked), `known` (whether the catalog knows
/// it), `catalog_id` and `provider` (when known), `context_window` (tokens; robota's default
/// when unknown), `max_output` (when known), `thinking`, `price` (when known: USD per million
/// tokens as `input_per_mtok`, `output_per_mtok`, `cache_read_per_mtok`,
/// `cache_write_per_mtok`, and `long_prompt` `{above_tokens, …the same four}` for models that
/// charge more for long prompts), `defaults` (the figures filled with robota's defaults: any of
/// `"context_window"`, `"max_output"`, `"price"`), `sources` (URLs) and `checked` (`YYYY-MM`).
/// An unknown model is not an error: `known` is false and `defaults` lists all three.
///
/// Errors: `ROBOTA_STATUS_NULL_ARGUMENT` (`model` NULL with a length, or `out_json` NULL),
/// `ROBOTA_STATUS_INVALID_UTF8`, `ROBOTA_STATUS_INVALID_ARGUMENT` (an empty or blank id, or one
/// longer than 1024 bytes).
///
/// Ownership: `*out_json` is owned by the caller; free it with `robota_string_free`.
/// Threading: callable from any thread; does not touch a runtime.
///
/// # Safety
/// `model` is NULL (with `model_len` 0) or valid for `model_len` bytes; `out_json` is valid for
/// writes; `out_err` is NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn robota_model_info(
    model: *const c_char,
    model_len: usize,
    out_json: *mut *mut c_char,
    out_err: *mut *mut robota_error,
) -> robota_status {
    ffi_boundary!(out_err, {
        if out_json.is_null() {
            return Err(FfiError::null("out_json"));
        }
        let model = str_arg(model, model_len, "model")?;
        let info = engine::api::model_info(model)?;
        write_string(out_json, to_json(&info)?);
        Ok(())
    })
}

/// Every model in robota's catalog, or only those of one provider, in catalog order.
///
/// - `provider` (`provider_len` bytes of UTF-8): a provider type such as `"anthropic"`; empty
///   (or NULL with 0): every provider.
///
/// On success `*out_json` is a JSON array of objects as `robota_model_info` returns them.
///
/// Errors: `ROBOTA_STATUS_NULL_ARGUMENT`, `ROBOTA_STATUS_INVALID_UTF8`.
///
/// Ownership: `*out_json` is owned by the caller; free it with `robota_string_free`.
/// Threading: callable from any thread; does not touch a runtime.
///
/// # Safety
/// `provider` is NULL (with `provider_len` 0) or valid for `provider_len` bytes; `out_json` is
/// valid for writes; `out_err` is NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn robota_list_models(
    provider: *const c_char,
    provider_len: usize,
    out_json: *mut *mut c_char,
    out_err: *mut *mut robota_error,
) -> robota_status {
    ffi_boundary!(out_err, {
        if out_json.is_null() {
            return Err(FfiError::null("out_json"));
        }
        let provider = str_arg(provider, provider_len, "provider")?;
        let models = engine::api::list_models(Some(provider).filter(|p| !p.is_empty()));
        write_string(out_json, to_json(&models)?);
        Ok(())
    })
}
