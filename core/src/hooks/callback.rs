//! In-process hook callbacks: the host registers a [`HookCallback`] for an event and matcher and
//! the runner treats it exactly like a settings-defined handler (matched, run in parallel with
//! the others, timed out, aggregated). Bindings map their language's functions onto this trait.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use super::event::{HookEvent, HookInput};
use super::output::HookOutput;

/// What a host callback's failure does: it threw, panicked, timed out, or answered something
/// that is not a hook answer (the Claude Agent SDK's `on_failure`).
///
/// A callback that guards a tool call (`PreToolUse`, `PermissionRequest`) **blocks** by
/// default: it may have been about to say "block", and a bug in it must never let the call
/// through. Elsewhere a failure is reported and the action goes ahead. Either way the failure is
/// reported (a `hook_error` event naming the hook and what went wrong).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnHookFailure {
    /// The guarded action is refused: the tool call is denied (`PreToolUse`,
    /// `PermissionRequest`) or the prompt rejected (`UserPromptSubmit`), with the hook's name
    /// and its failure as the reason.
    Block,
    /// The action goes ahead as if the hook had said nothing (fail open).
    Allow,
}

impl OnHookFailure {
    /// The policy of a callback that sets none: `Block` where the hook guards a tool call
    /// (`PreToolUse`, `PermissionRequest`), `Allow` elsewhere.
    pub fn default_for(event: HookEvent) -> Self {
        match event {
            HookEvent::PreToolUse | HookEvent::PermissionRequest => OnHookFailure::Block,
            _ => OnHookFailure::Allow,
        }
    }

    /// The events whose action a failing hook can block: `PreToolUse`, `PermissionRequest`
    /// and `UserPromptSubmit`.
    pub fn can_block(event: HookEvent) -> bool {
        matches!(
            event,
            HookEvent::PreToolUse | HookEvent::PermissionRequest | HookEvent::UserPromptSubmit
        )
    }

    /// The policy for `event`: `requested`, or the event's default. `Block` on an event where
    /// nothing can be blocked is an error naming the events where it can.
    pub fn resolve(event: HookEvent, requested: Option<Self>) -> Result<Self, String> {
        match requested {
            Some(OnHookFailure::Block) if !Self::can_block(event) => Err(format!(
                "on-failure policy \"block\" applies to PreToolUse, PermissionRequest and \
                 UserPromptSubmit hooks only: a failing {event} hook has nothing to block"
            )),
            Some(policy) => Ok(policy),
            None => Ok(Self::default_for(event)),
        }
    }

    /// The wire name (`block`, `allow`).
    pub fn as_str(self) -> &'static str {
        match self {
            OnHookFailure::Block => "block",
            OnHookFailure::Allow => "allow",
        }
    }
}

/// What a callback answers; each form means what the same answer from a command hook means.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum HookCallbackResult {
    /// Nothing to say (exit 0, empty stdout).
    Continue,
    /// Structured output (exit 0 with this JSON on stdout).
    Output {
        /// The output (boxed: it is much larger than the other variants).
        output: Box<HookOutput>,
    },
    /// Plain text (exit 0 with this on stdout): context for UserPromptSubmit and SessionStart.
    Text {
        /// The text.
        text: String,
    },
    /// Block (exit 2 with `reason` on stderr); the effect depends on the event.
    Block {
        /// Why; shown to the model or user depending on the event.
        reason: String,
    },
    /// The callback failed: it threw, or answered something that is not a hook answer. What
    /// that does depends on the callback's [`OnHookFailure`] policy (on `PreToolUse` and
    /// `PermissionRequest` it blocks the call by default).
    Error {
        /// What went wrong.
        message: String,
    },
}

impl HookCallbackResult {
    /// Structured output.
    pub fn output(output: HookOutput) -> Self {
        HookCallbackResult::Output {
            output: Box::new(output),
        }
    }

    /// A block with this reason.
    pub fn block(reason: impl Into<String>) -> Self {
        HookCallbackResult::Block {
            reason: reason.into(),
        }
    }
}

/// A hook implemented by the host, in process.
///
/// The future is dropped when the hook times out or the run is cancelled, so implementations
/// should not hold resources that need explicit cleanup across an `.await`. A panic inside the
/// callback is caught and reported as a failed hook.
#[async_trait]
pub trait HookCallback: Send + Sync {
    /// A label for events and logs (`callback` when not overridden).
    fn name(&self) -> &str {
        "callback"
    }

    /// Handles one event.
    async fn call(&self, input: &HookInput) -> HookCallbackResult;
}

type BoxedCallbackFuture = Pin<Box<dyn Future<Output = HookCallbackResult> + Send>>;

/// A [`HookCallback`] made from a closure returning a future.
pub struct FnHookCallback {
    name: String,
    f: Box<dyn Fn(HookInput) -> BoxedCallbackFuture + Send + Sync>,
}

impl FnHookCallback {
    /// Wraps `f`; it gets an owned copy of the input.
    pub fn new<F, Fut>(name: impl Into<String>, f: F) -> Arc<Self>
    where
        F: Fn(HookInput) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = HookCallbackResult> + Send + 'static,
    {
        Arc::new(FnHookCallback {
            name: name.into(),
            f: Box::new(move |input| Box::pin(f(input))),
        })
    }
}

#[async_trait]
impl HookCallback for FnHookCallback {
    fn name(&self) -> &str {
        &self.name
    }

    async fn call(&self, input: &HookInput) -> HookCallbackResult {
        (self.f)(input.clone()).await
    }
}
