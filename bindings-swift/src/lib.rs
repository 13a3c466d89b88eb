//! `robota_swift`: the uniffi library under the `Robota` Swift package. It maps `robota::api`
//! (sessions, queries, host extensions, errors) onto uniffi types and nothing more; the typed,
//! idiomatic Swift API is the hand-written layer in `Sources/Robota`.
//!
//! Rich data crosses as JSON text, exactly the JSON contracts of `robota::api` that the C,
//! Python and Node bindings use, so answers mean the same in every language. Every exported
//! function returns `Result`, so a Rust panic reaches Swift as a thrown error, never a crash.

mod error;
mod host;
mod query;
mod runtime;
mod session;

pub use error::{HostError, RobotaError};
pub use host::{HostCallback, NativeCommandContext, ProviderStream};
pub use query::{NativeQuery, NativeQueryOptions};
pub use session::{
    NativeCommand, NativeCommandModule, NativeEvent, NativeEvents, NativeExtensions, NativeHook,
    NativeMcpServer, NativeMcpTool, NativePrompt, NativeProvider, NativeSession,
    NativeSessionOptions, NativeTool,
};

uniffi::setup_scaffolding!();

/// Evaluates whether a tool call is allowed by the permission rules, without a session.
/// `input_json`: the tool input (empty: `{}`); `context_json`: the permission context
/// (`{"cwd", "mode"?, "rules"?: {"allow", "ask", "deny"}, "home"?, …}`). Returns the decision
/// as JSON (`decision`, `reason`, `matched_rule`, `suggested_rules`, `basis`).
#[uniffi::export]
pub fn evaluate_permission(
    tool: String,
    input_json: String,
    context_json: String,
) -> Result<String, RobotaError> {
    use robota::permissions::{evaluate_permission as evaluate, PermissionContext};
    let input: serde_json::Value = if input_json.trim().is_empty() {
        serde_json::Value::Object(Default::default())
    } else {
        serde_json::from_str(&input_json).map_err(|e| RobotaError::InvalidJson {
            message: format!("invalid tool input: {e}"),
        })?
    };
    let context: PermissionContext =
        serde_json::from_str(&context_json).map_err(|e| RobotaError::InvalidJson {
            message: format!(
                "invalid permission context: {e} (it needs at least `cwd`, an absolute path)"
            ),
        })?;
    serde_json::to_string(&evaluate(&tool, &input, &context))
        .map_err(|e| RobotaError::internal(format!("cannot encode the decision: {e}")))
}

/// What robota knows about `model` (the model catalog), as the JSON of `robota::api::model_info`
/// (`model`, `known`, `catalog_id`?, `provider`?, `context_window`, `max_output`?, `thinking`,
/// `price`?, `defaults`, `sources`, `checked`). An empty or overlong id throws
/// `RobotaError.InvalidArgument`; an unknown one answers `known: false`.
#[uniffi::export]
pub fn model_info(model: String) -> Result<String, RobotaError> {
    let info = robota::api::model_info(&model)?;
    serde_json::to_string(&info)
        .map_err(|e| RobotaError::internal(format!("cannot encode the model info: {e}")))
}

/// Every catalogued model, or only `provider`'s (a provider type such as `"anthropic"`), as a
/// JSON array of `model_info` answers.
#[uniffi::export]
pub fn list_models(provider: Option<String>) -> Result<String, RobotaError> {
    serde_json::to_string(&robota::api::list_models(provider.as_deref()))
        .map_err(|e| RobotaError::internal(format!("cannot encode the model list: {e}")))
}

/// The library's version (the workspace version), so the Swift package can check it was built
/// against the library it loads.
/// Runs the engine's store conformance suite on a session store written in Swift: `callback`
/// answers the store operations, each request with a `"store_index"` (keep one fresh, empty
/// store per index). Returns `[{"check", "passed", "message"}, …]` as JSON.
#[uniffi::export]
pub async fn run_store_conformance(
    callback: std::sync::Arc<dyn host::HostCallback>,
) -> Result<String, RobotaError> {
    let function = host::SwiftHostFunction::shared(callback);
    runtime::on_runtime(async move {
        // The suite blocks while the store answers on Swift's own threads.
        tokio::task::spawn_blocking(move || {
            robota::api::run_store_conformance_on("Swift", function)
        })
        .await
        .map(|outcomes| outcomes.to_string())
        .map_err(|e| RobotaError::internal(format!("the conformance suite failed: {e}")))
    })
    .await
}

#[uniffi::export]
pub fn library_version() -> Result<String, RobotaError> {
    Ok(env!("CARGO_PKG_VERSION").to_string())
}
