//! The binding-facing facade: owned, serde-friendly configuration types and one error type that
//! the C ABI and the Python, Node and Swift bindings all map, so that a provider or session
//! described the same way behaves the same in every language.
//!
//! Everything here is a thin layer over the engine's own API ([`crate::provider`],
//! [`crate::session`], [`crate::framework`]); it exists so that no binding re-implements
//! option parsing, defaults or error classification.

mod command_context;
mod error;
mod fields;
mod host;
mod host_mcp;
mod host_store;
mod provider_config;
mod query_call;
mod session_config;
mod subagents;
mod submit_call;

pub use crate::session::host_store::HostStoreBackend;
pub use command_context::{CommandContextOp, HostCommandContext};
pub use error::{ApiError, ApiErrorKind};
pub use host::{
    async_trait, command_result_from_answer, hook_result_from_answer,
    permission_response_from_answer, tool_output_from_answer, CancellationToken, HostCall,
    HostCommand, HostFunction, HostHookCallback, HostHookSpec, HostPermissionHandler, HostProvider,
    HostProviderAnswer, HostProviderError, HostProviderEvent, HostProviderInfo, HostStream,
    HostTool, HostToolCall, HostToolSpec, ABORTED_TOOL_CONTENT,
};
pub use host_mcp::{host_mcp_authorization_handler, HostMcpServerBuilder, HostMcpToolSpec};
pub use host_store::{attach_host_store, HostStoreFunction, HOST_STORE_CALL_TIMEOUT};
#[cfg(feature = "store-conformance")]
pub use host_store::{run_store_conformance, run_store_conformance_on};
pub use provider_config::{HttpProviderConfig, ProfileProviderConfig, ProviderConfig};
pub use query_call::run_query;
pub use session_config::{
    output_format, trace_next_prompt, trace_parent, PersistenceConfig, SessionConfig,
};
pub use subagents::{subagent_request, subagent_request_from_json};
pub use submit_call::submit_prompt;

/// The sandbox status every binding returns (as JSON in C and Node, a dict/dataclass in
/// Python): see [`crate::sandbox::SandboxStatus`].
pub use crate::sandbox::{NetworkPolicy, SandboxGuarantees, SandboxStatus};

/// The longest model id [`model_info`] accepts, in bytes (real ids are well under 200).
pub const MAX_MODEL_ID_LEN: usize = 1024;

/// What robota knows about `model` ([`crate::provider::catalog::model_info`]): the
/// `get_model_info` of every binding, so that they all validate the same way. An empty or blank id,
/// or one longer than [`MAX_MODEL_ID_LEN`], is an `invalid_argument` error; any other id answers
/// (an unknown one with `known: false` and robota's defaults).
pub fn model_info(model: &str) -> Result<crate::provider::catalog::ModelInfo, ApiError> {
    if model.trim().is_empty() {
        return Err(ApiError::invalid_argument(
            "the model id is empty: pass a model id such as \"claude-sonnet-4-5\"",
        ));
    }
    if model.len() > MAX_MODEL_ID_LEN {
        return Err(ApiError::invalid_argument(format!(
            "the model id is {} bytes long; model ids are at most {MAX_MODEL_ID_LEN} bytes",
            model.len()
        )));
    }
    Ok(crate::provider::catalog::model_info(model))
}

/// What robota knows about every model in its catalog, or only those of `provider` (a provider
/// type such as `"anthropic"`), in catalog order: the `list_models` of the bindings.
pub fn list_models(provider: Option<&str>) -> Vec<crate::provider::catalog::ModelInfo> {
    crate::provider::catalog::entries()
        .iter()
        .filter(|entry| provider.is_none_or(|p| entry.provider == p))
        .map(|entry| crate::provider::catalog::model_info(&entry.id))
        .collect()
}
