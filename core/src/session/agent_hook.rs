//! The session's [`AgentHookExecutor`]: an `agent` hook's model investigates with the session's
//! read-only file tools (Read, Glob, Grep) before giving its verdict, as Claude Code's agent
//! hooks do. Its reads obey the session's permission rules: anything the rules would not allow
//! without asking (a deny or ask rule, a sensitive path) is refused, so a hook prompt built from
//! model input cannot read what the session itself may not.

use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use super::fs_resolver::FsPathResolver;
use crate::engine::{Engine, EngineConfig, GateCall, GateDecision, RunOptions, ToolCallGate};
use crate::hooks::AgentHookExecutor;
use crate::message::{Conversation, Message};
use crate::permissions::{evaluate_permission_with, Decision, PermissionContext};
use crate::provider::Provider;
use crate::tools::ToolRegistry;

/// The tools an agent hook may use.
pub(crate) const AGENT_HOOK_TOOLS: [&str; 3] = ["Read", "Glob", "Grep"];

/// Most model rounds of one investigation (Claude Code's limit).
const MAX_ROUNDS: u32 = 50;

/// Runs agent hooks with read-only tools under the session's rules.
pub(crate) struct ReadOnlyInvestigator {
    tools: ToolRegistry,
    permissions: Arc<PermissionContext>,
    cwd: PathBuf,
}

impl ReadOnlyInvestigator {
    /// An investigator using `session_tools`' Read, Glob and Grep (whichever exist), checked
    /// against `permissions`.
    pub(crate) fn new(
        session_tools: &ToolRegistry,
        permissions: PermissionContext,
        cwd: PathBuf,
    ) -> Self {
        let mut tools = ToolRegistry::new();
        for name in AGENT_HOOK_TOOLS {
            if let Some(tool) = session_tools.get(name) {
                tools.register(Arc::clone(tool));
            }
        }
        ReadOnlyInvestigator {
            tools,
            permissions: Arc::new(permissions),
            cwd,
        }
    }
}

#[async_trait]
impl AgentHookExecutor for ReadOnlyInvestigator {
    async fn investigate(
        &self,
        provider: Arc<dyn Provider>,
        system: String,
        prompt: String,
        cancel: CancellationToken,
    ) -> Result<String, String> {
        let config = EngineConfig {
            system_prompt: Some(system),
            max_turns: MAX_ROUNDS,
            cwd: self.cwd.clone(),
            ..EngineConfig::default()
        };
        let gate = RulesOnlyGate {
            permissions: Arc::clone(&self.permissions),
        };
        let engine =
            Engine::new(provider, self.tools.clone(), config).with_tool_gate(Arc::new(gate));
        let mut conversation = Conversation::new();
        let outcome = engine
            .run(
                &mut conversation,
                Message::user(prompt),
                RunOptions::new().with_cancel(cancel),
            )
            .await;
        match outcome.error {
            Some(error) => Err(error.to_string()),
            None => Ok(outcome.response),
        }
    }
}

/// Lets a call run only when the session's rules allow it without asking. No hooks run here: an
/// agent hook's own reads must not fire the hooks that may have started it.
struct RulesOnlyGate {
    permissions: Arc<PermissionContext>,
}

#[async_trait]
impl ToolCallGate for RulesOnlyGate {
    async fn before_call(&self, call: &GateCall, _cancel: &CancellationToken) -> GateDecision {
        let verdict =
            evaluate_permission_with(&call.name, &call.input, &self.permissions, &FsPathResolver);
        match verdict.decision {
            Decision::Allow => GateDecision::Allow,
            Decision::Ask | Decision::Deny => GateDecision::Deny {
                message: format!(
                    "An agent hook may only read what the session's permission rules allow \
                     without asking: {}",
                    verdict.reason
                ),
            },
        }
    }
}
