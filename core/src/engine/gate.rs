//! The tool-call gate: the port through which the layer above the engine (permissions and hooks,
//! in the session) approves, rewrites or refuses each tool call before it runs, and sees — and may
//! amend — each result after it ran.
//!
//! The engine stays ignorant of rules, modes and hook scripts: it only asks the gate. Without a
//! gate every registered tool call runs as the model asked.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::tools::ToolOutput;

/// A tool call as the gate sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GateCall {
    /// The provider's id of the call.
    pub tool_use_id: String,
    /// The tool name (always a registered tool: unknown tools never reach the gate).
    pub name: String,
    /// The arguments (always a JSON object: unusable arguments never reach the gate).
    pub input: serde_json::Value,
    /// Whether the tool declares itself read-only.
    pub read_only: bool,
}

/// What the gate decided for one call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum GateDecision {
    /// Run the call as the model asked.
    Allow,
    /// Run the call with these arguments instead (e.g. a hook's `updatedInput`).
    AllowWithInput {
        /// The arguments the tool receives.
        input: serde_json::Value,
    },
    /// Do not run the call; the model gets `message` as the call's error result.
    Deny {
        /// Why, in words the model can act on.
        message: String,
    },
}

/// Approves and observes tool calls on behalf of the layer above the engine.
///
/// `before_call` may take as long as it needs (e.g. waiting for a person to answer a permission
/// prompt), but must return promptly once `cancel` fires: the engine stops waiting
/// [`EngineConfig::tool_abort_grace`](super::EngineConfig::tool_abort_grace) after an abort and
/// answers the call as interrupted.
#[async_trait]
pub trait ToolCallGate: Send + Sync {
    /// Decides whether `call` may run.
    async fn before_call(&self, call: &GateCall, cancel: &CancellationToken) -> GateDecision;

    /// Sees the result of a call that ran (successfully or not) and returns what the model gets.
    /// The default passes the output through unchanged.
    async fn after_call(&self, call: &GateCall, output: ToolOutput) -> ToolOutput {
        let _ = call;
        output
    }
}
