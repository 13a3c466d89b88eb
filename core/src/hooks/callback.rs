//! In-process hook callbacks: the host registers a [`HookCallback`] for an event and matcher and
//! the runner treats it exactly like a settings-defined handler (matched, run in parallel with
//! the others, timed out, aggregated). Bindings map their language's functions onto this trait.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use super::event::HookInput;
use super::output::HookOutput;

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
    /// The callback failed (a non-blocking error, like an exit code other than 0 and 2).
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
