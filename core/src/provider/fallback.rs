//! [`FallbackProvider`]: a provider that answers with a second model when the first is
//! overloaded (the Claude Agent SDK's `fallbackModel`).
//!
//! The primary model is called first. When its call fails as
//! [`Overloaded`](crate::message::ProviderErrorKind::Overloaded) — after the primary's own
//! retries, and before anything streamed to the host (a failure after that cannot be replayed
//! without showing a second answer) — the same request goes to the fallback model, and the
//! host is told through the `on_switch` callback. The provider then stays on the fallback model
//! for [`FALLBACK_COOLDOWN`], so each round of an overloaded period does not first sit out the
//! primary's retries, and afterwards tries the primary again.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use super::{
    Provider, ProviderCapabilities, ProviderRequest, ProviderResponse, StreamEvent, StreamSink,
};
use crate::message::{ProviderError, ProviderErrorKind};

/// How long calls stay on the fallback model after the primary was overloaded.
pub const FALLBACK_COOLDOWN: Duration = Duration::from_secs(300);

/// Called when a call moves to the fallback model: `(primary model, fallback model, the
/// primary's error)`.
pub type FallbackCallback = Arc<dyn Fn(&str, &str, &ProviderError) + Send + Sync>;

/// A provider that calls `fallback` when `primary` is overloaded (see the module docs).
pub struct FallbackProvider {
    primary: Arc<dyn Provider>,
    fallback: Arc<dyn Provider>,
    /// When the primary was last found overloaded.
    overloaded_at: Mutex<Option<Instant>>,
    on_switch: Option<FallbackCallback>,
}

impl std::fmt::Debug for FallbackProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FallbackProvider")
            .field("primary", &self.primary.model())
            .field("fallback", &self.fallback.model())
            .finish()
    }
}

impl FallbackProvider {
    /// `primary` answering, with `fallback_model` (the same provider switched with
    /// [`Provider::with_model`]) when it is overloaded. Errors when the provider cannot switch
    /// models or the two models are the same.
    pub fn new(primary: Arc<dyn Provider>, fallback_model: &str) -> Result<Self, ProviderError> {
        let fallback_model = fallback_model.trim();
        if fallback_model.is_empty() || fallback_model == primary.model() {
            return Err(ProviderError::new(
                ProviderErrorKind::InvalidRequest,
                primary.name(),
                format!(
                    "the fallback model must differ from the main model \"{}\"",
                    primary.model()
                ),
            ));
        }
        let fallback = primary.with_model(fallback_model).ok_or_else(|| {
            ProviderError::new(
                ProviderErrorKind::InvalidRequest,
                primary.name(),
                format!(
                    "the {} provider cannot switch models, so the fallback model \
                     \"{fallback_model}\" cannot be used (remove fallback_model, or use a \
                     built-in HTTP provider)",
                    primary.name()
                ),
            )
        })?;
        Ok(FallbackProvider {
            primary,
            fallback,
            overloaded_at: Mutex::new(None),
            on_switch: None,
        })
    }

    /// Calls `callback` each time a call moves to the fallback model.
    pub fn on_switch(mut self, callback: FallbackCallback) -> Self {
        self.on_switch = Some(callback);
        self
    }

    /// The fallback model.
    pub fn fallback_model(&self) -> &str {
        self.fallback.model()
    }

    /// True while calls go to the fallback model.
    pub fn on_fallback(&self) -> bool {
        self.overloaded_at
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_some_and(|at| at.elapsed() < FALLBACK_COOLDOWN)
    }

    fn current(&self) -> &Arc<dyn Provider> {
        if self.on_fallback() {
            &self.fallback
        } else {
            &self.primary
        }
    }
}

#[async_trait]
impl Provider for FallbackProvider {
    fn name(&self) -> &str {
        self.primary.name()
    }

    /// The model calls currently go to.
    fn model(&self) -> &str {
        self.current().model()
    }

    fn with_model(&self, model: &str) -> Option<Arc<dyn Provider>> {
        self.primary.with_model(model)
    }

    fn capabilities(&self) -> ProviderCapabilities {
        // The primary's: context tracking and compaction plan for the model the session asked
        // for; a fallback with a smaller window surfaces as a context-length error.
        self.primary.capabilities()
    }

    async fn stream(
        &self,
        request: &ProviderRequest,
        on_event: &StreamSink<'_>,
        cancel: &CancellationToken,
    ) -> Result<ProviderResponse, ProviderError> {
        if self.on_fallback() {
            return self.fallback.stream(request, on_event, cancel).await;
        }
        let streamed = AtomicBool::new(false);
        let sink = |event: StreamEvent| {
            if !matches!(event, StreamEvent::Retry { .. }) {
                streamed.store(true, Ordering::Relaxed);
            }
            on_event(event);
        };
        let error = match self.primary.stream(request, &sink, cancel).await {
            Err(error)
                if error.kind == ProviderErrorKind::Overloaded
                    && !streamed.load(Ordering::Relaxed)
                    && !cancel.is_cancelled() =>
            {
                error
            }
            other => return other,
        };
        *self
            .overloaded_at
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(Instant::now());
        if let Some(callback) = &self.on_switch {
            callback(self.primary.model(), self.fallback.model(), &error);
        }
        self.fallback.stream(request, on_event, cancel).await
    }
}
