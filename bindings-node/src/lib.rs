//! `@robota/native`: the Node.js binding of the robota engine (napi-rs).
//!
//! This crate is deliberately thin: it maps the engine's binding-facing facade
//! ([`robota::api`]) and its `InteractiveSession` / `create_query` onto JavaScript classes. Values
//! cross the boundary as JSON text (the engine's serde shapes, the same in every binding); the
//! TypeScript facade in `lib/` turns them into typed objects, an `EventEmitter` and Promises.
//!
//! Errors reach JavaScript as `Error`s whose message starts with `[<kind>] ` where `<kind>` is
//! an [`ApiErrorKind`](robota::api::ApiErrorKind) name; the facade turns them into `RobotaError`
//! with a `code`.

mod exit;
mod host;
mod options;
mod query;
mod remote;
mod session;
mod store;

use napi_derive::napi;
use serde::Serialize;
use serde_json::Value;

use robota::api::ApiError;
use robota::permissions::{evaluate_permission as evaluate, PermissionContext};

pub use exit::stop_session_processes;
pub use query::NativeQuery;
pub use remote::{
    remote_connect, remote_create, NativeRemoteEvents, NativeRemotePrompt, NativeRemoteSession,
};
pub use session::{open_session, NativeSession, OpenSession};
pub use store::{run_store_conformance, StoreConformance};

/// The error JavaScript sees for `e`: `[kind] message`.
pub(crate) fn api_error(e: ApiError) -> napi::Error {
    napi::Error::new(
        napi::Status::GenericFailure,
        format!("[{}] {}", e.kind.as_str(), e.message),
    )
}

/// `value` as JSON text.
pub(crate) fn to_json(value: &impl Serialize) -> napi::Result<String> {
    serde_json::to_string(value).map_err(|e| {
        api_error(ApiError::invalid_json(format!(
            "cannot encode a result as JSON: {e}"
        )))
    })
}

/// A per-call `output_format` option as JSON text (`None`: the session's own), read.
pub(crate) fn output_format_arg(json: Option<String>) -> napi::Result<Option<Value>> {
    json.map(|json| serde_json::from_str::<Value>(&json))
        .transpose()
        .map_err(|e| {
            api_error(ApiError::invalid_json(format!(
                "`output_format` is not JSON: {e}"
            )))
        })
}

/// Evaluates whether a tool call is allowed by the permission rules, without a session.
/// `input_json`: the tool input (empty: `{}`); `context_json`: the permission context
/// (`{"mode", "cwd", "rules": {"allow", "deny", "ask"}}`). Returns the decision as JSON.
#[napi]
pub fn evaluate_permission(
    tool: String,
    input_json: String,
    context_json: String,
) -> napi::Result<String> {
    let input: Value = if input_json.trim().is_empty() {
        Value::Object(Default::default())
    } else {
        serde_json::from_str(&input_json)
            .map_err(|e| api_error(ApiError::invalid_json(format!("invalid tool input: {e}"))))?
    };
    let context: PermissionContext = serde_json::from_str(&context_json).map_err(|e| {
        api_error(ApiError::invalid_json(format!(
            "invalid permission context: {e} (expected {{\"mode\", \"cwd\", \"rules\": \
             {{\"allow\", \"deny\", \"ask\"}}}})"
        )))
    })?;
    to_json(&evaluate(&tool, &input, &context))
}

/// What robota knows about `model` (the model catalog), as JSON (`robota::api::model_info`): an
/// empty or overlong id is an `invalid_argument` error, an unknown one answers `known: false`.
#[napi]
pub fn model_info(model: String) -> napi::Result<String> {
    to_json(&robota::api::model_info(&model).map_err(api_error)?)
}

/// Every catalogued model, or only `provider`'s (a provider type such as `"anthropic"`), as a
/// JSON array of `modelInfo` results.
#[napi]
pub fn list_models(provider: Option<String>) -> napi::Result<String> {
    to_json(&robota::api::list_models(provider.as_deref()))
}

/// The prompt that asks the model to go on with an answer cut off at the output token limit,
/// and how it is shown in the history: `[prompt, displayInput]`.
#[napi]
pub fn continue_prompt() -> Vec<String> {
    vec![
        robota::engine::CONTINUE_PROMPT.to_string(),
        robota::framework::interactive::CONTINUE_DISPLAY_INPUT.to_string(),
    ]
}

/// The engine version this addon was built from.
#[napi]
pub fn engine_version() -> String {
    env!("CARGO_PKG_VERSION").to_string()
}
