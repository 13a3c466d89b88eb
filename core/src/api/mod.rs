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
