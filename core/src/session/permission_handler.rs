//! The permission handler: the host port that answers "may this tool call run?" when the rules
//! and hooks leave the answer at "ask".
//!
//! The port is one async method taking owned, serde-serializable data and returning one of four
//! answers, so every binding can implement it in its own language (a Python coroutine, a Node
//! Promise, a Swift async function, a C completion object resolved from any thread):
//!
//! - [`PermissionResponse::AllowOnce`] — run this call;
//! - [`PermissionResponse::AllowSession`] — run it and remember an allow rule for the rest of the
//!   session;
//! - [`PermissionResponse::AllowAlways`] — also write the rule into a settings file
//!   ([`SettingsDestination`]), so later sessions allow it too;
//! - [`PermissionResponse::Deny`] — do not run it; the message is what the model sees.
//!
//! The session resolves every request exactly once: with the handler's answer, or as cancelled
//! when the run is aborted while the handler is thinking (the handler's future is then dropped,
//! and its `cancel` token fires first so a UI can take its prompt down).

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::permissions::{DecisionBasis, PermissionMode};

/// A settings file "allow always" can write a rule to (Claude Code's `PermissionUpdate`
/// destinations).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum SettingsDestination {
    /// `<project>/.claude/settings.local.json` — this machine only (usually gitignored).
    LocalSettings,
    /// `<project>/.claude/settings.json` — shared with everyone working on the project.
    ProjectSettings,
    /// `~/.claude/settings.json` — every project of this user.
    UserSettings,
}

impl SettingsDestination {
    /// Every destination.
    pub const ALL: [SettingsDestination; 3] = [
        SettingsDestination::LocalSettings,
        SettingsDestination::ProjectSettings,
        SettingsDestination::UserSettings,
    ];

    /// Claude Code's name (`localSettings`, `projectSettings`, `userSettings`).
    pub fn as_str(self) -> &'static str {
        match self {
            SettingsDestination::LocalSettings => "localSettings",
            SettingsDestination::ProjectSettings => "projectSettings",
            SettingsDestination::UserSettings => "userSettings",
        }
    }
}

impl std::fmt::Display for SettingsDestination {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One settings file a rule can be saved to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SettingsTarget {
    /// Which layer.
    pub destination: SettingsDestination,
    /// The file (it may not exist yet; it is created on first write).
    pub path: PathBuf,
}

/// A tool call waiting for the host's decision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PermissionRequest {
    /// Unique within the session; the `permission_request` / `permission_resolved` events carry
    /// it too.
    pub request_id: String,
    /// The tool.
    pub tool_name: String,
    /// The arguments it would run with.
    pub input: Value,
    /// The provider's id of the call.
    pub tool_use_id: String,
    /// Why approval is needed, in words a person can act on.
    pub reason: String,
    /// What the "ask" rests on (an ask rule, a sensitive path, the mode's default, …).
    pub basis: DecisionBasis,
    /// Rules that would approve calls like this one. "Allow for the session" and "allow always"
    /// use these when the answer names no rules. Empty when no rule would help (sensitive paths,
    /// ask rules, commands that run arbitrary code).
    pub suggested_rules: Vec<String>,
    /// Where "allow always" can save a rule. The user file is missing when the session has no
    /// home directory.
    pub settings_targets: Vec<SettingsTarget>,
    /// The session's permission mode.
    pub permission_mode: PermissionMode,
}

/// The host's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum PermissionResponse {
    /// Run this call only.
    AllowOnce,
    /// Run it, and allow calls matching `rules` for the rest of the session.
    AllowSession {
        /// Allow rules (`Bash(npm test *)`); empty means the request's `suggested_rules`. When
        /// both are empty the call is allowed once.
        #[serde(default)]
        rules: Vec<String>,
    },
    /// Run it, allow `rules` for the session and save them to a settings file's
    /// `permissions.allow`.
    AllowAlways {
        /// Allow rules; empty means the request's `suggested_rules`.
        #[serde(default)]
        rules: Vec<String>,
        /// Which settings file.
        destination: SettingsDestination,
    },
    /// Run it with this input instead of the model's (the Claude Agent SDK's `updatedInput`),
    /// after the deny rules are checked against it; with `rules`, also allow calls matching them
    /// for the rest of the session, and with a `destination` save them there too.
    AllowWithInput {
        /// The arguments the tool receives (a JSON object).
        input: serde_json::Value,
        /// Allow rules to remember, like [`AllowSession`](Self::AllowSession)'s; empty: this
        /// call only.
        #[serde(default)]
        rules: Vec<String>,
        /// Where to save `rules`, like [`AllowAlways`](Self::AllowAlways)'s; `None`: the
        /// session only.
        #[serde(default)]
        destination: Option<SettingsDestination>,
    },
    /// Do not run it.
    Deny {
        /// What the model is told (empty: a standard "the user denied this" message).
        #[serde(default)]
        message: String,
    },
}

impl PermissionResponse {
    /// Allow for the session with the suggested rules.
    pub fn allow_session() -> Self {
        PermissionResponse::AllowSession { rules: Vec::new() }
    }

    /// Allow always with the suggested rules, saved to `destination`.
    pub fn allow_always(destination: SettingsDestination) -> Self {
        PermissionResponse::AllowAlways {
            rules: Vec::new(),
            destination,
        }
    }

    /// Allow this call once, run with `input` instead of the model's.
    pub fn allow_with_input(input: serde_json::Value) -> Self {
        PermissionResponse::AllowWithInput {
            input,
            rules: Vec::new(),
            destination: None,
        }
    }

    /// Deny with a message for the model.
    pub fn deny(message: impl Into<String>) -> Self {
        PermissionResponse::Deny {
            message: message.into(),
        }
    }
}

/// How a permission request ended, as reported in `permission_resolved`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum PermissionResolution {
    /// The call ran (or will run).
    Allowed {
        /// `once`, `session` or `always`.
        scope: AllowScope,
        /// The allow rules remembered for the session (and saved, for `always`).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        rules: Vec<String>,
        /// The settings file written, for `always`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        settings_file: Option<PathBuf>,
        /// Why the rules could not be remembered or saved, if they could not.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// The call did not run; `message` is what the model was told.
    Denied {
        /// The message.
        message: String,
    },
    /// The run was aborted (or the session shut down) before an answer came; the call did not
    /// run.
    Cancelled,
}

/// How long an "allow" holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AllowScope {
    /// This call only.
    Once,
    /// The rest of the session.
    Session,
    /// Saved to a settings file.
    Always,
}

/// Who resolved a permission request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResolvedBy {
    /// The host's [`PermissionHandler`].
    Handler,
    /// Nobody: the session has no handler, so the call was denied.
    NoHandler,
    /// The run was aborted while waiting.
    Abort,
}

/// Answers permission requests on behalf of the user. Implemented by the host.
///
/// `request_permission` may take as long as a person needs. When the run is aborted, `cancel`
/// fires and the session stops waiting (the returned future is dropped), so implementations
/// should not hold resources that need explicit cleanup across an `.await` and should take any
/// prompt they showed down when `cancel` fires. A panic counts as a denial.
#[async_trait]
pub trait PermissionHandler: Send + Sync {
    /// Decides one request.
    async fn request_permission(
        &self,
        request: PermissionRequest,
        cancel: CancellationToken,
    ) -> PermissionResponse;
}

type BoxedResponse = Pin<Box<dyn Future<Output = PermissionResponse> + Send>>;

/// A [`PermissionHandler`] made from a closure returning a future.
pub struct FnPermissionHandler {
    f: Box<dyn Fn(PermissionRequest, CancellationToken) -> BoxedResponse + Send + Sync>,
}

impl FnPermissionHandler {
    /// Wraps `f`.
    pub fn new<F, Fut>(f: F) -> Arc<Self>
    where
        F: Fn(PermissionRequest, CancellationToken) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = PermissionResponse> + Send + 'static,
    {
        Arc::new(FnPermissionHandler {
            f: Box::new(move |request, cancel| Box::pin(f(request, cancel))),
        })
    }
}

impl std::fmt::Debug for FnPermissionHandler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FnPermissionHandler")
    }
}

#[async_trait]
impl PermissionHandler for FnPermissionHandler {
    async fn request_permission(
        &self,
        request: PermissionRequest,
        cancel: CancellationToken,
    ) -> PermissionResponse {
        (self.f)(request, cancel).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn responses_serialize_for_bindings() {
        let json = serde_json::to_value(PermissionResponse::allow_always(
            SettingsDestination::LocalSettings,
        ))
        .unwrap_or_default();
        assert_eq!(
            json,
            serde_json::json!({"type": "allow_always", "rules": [], "destination": "localSettings"})
        );
        let parsed: Result<PermissionResponse, _> =
            serde_json::from_value(serde_json::json!({"type": "allow_session"}));
        assert_eq!(parsed.ok(), Some(PermissionResponse::allow_session()));
    }
}
