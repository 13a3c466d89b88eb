//! The typed error a model provider call can end in.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// What kind of failure a provider call met. Hosts branch on this, not on message text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProviderErrorKind {
    /// The API key is missing, wrong or lacks permission (HTTP 401/403). Not retried.
    Auth,
    /// Too many requests (HTTP 429). Retried, honouring `retry-after`.
    RateLimit,
    /// The provider is overloaded (HTTP 529, or an `overloaded_error` event). Retried.
    Overloaded,
    /// The prompt does not fit the model's context window. Not retried; compact or trim first.
    ContextLength,
    /// Connection failed, was reset, or went silent past the idle timeout. Retried.
    Network,
    /// The request was rejected as malformed (HTTP 400/404/413/422). Not retried.
    InvalidRequest,
    /// The provider failed on its side (HTTP 5xx) or sent a stream that could not be understood
    /// (malformed event, oversized event, stream ended without its terminal event).
    Provider,
}

impl ProviderErrorKind {
    /// Stable snake_case name, as in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            ProviderErrorKind::Auth => "auth",
            ProviderErrorKind::RateLimit => "rate_limit",
            ProviderErrorKind::Overloaded => "overloaded",
            ProviderErrorKind::ContextLength => "context_length",
            ProviderErrorKind::Network => "network",
            ProviderErrorKind::InvalidRequest => "invalid_request",
            ProviderErrorKind::Provider => "provider",
        }
    }
}

/// A failed provider call: what kind, what the provider said, and whether trying again can help.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProviderError {
    /// The failure class.
    pub kind: ProviderErrorKind,
    /// A message for people: what failed and, where known, what to do about it.
    pub message: String,
    /// The provider name (`anthropic`, `openai`, …).
    pub provider: String,
    /// HTTP status, when the failure was an HTTP error response.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// The delay the provider asked for (`retry-after`), when it gave one.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "duration_ms")]
    pub retry_after: Option<Duration>,
    /// Whether retrying the same request may succeed.
    pub retryable: bool,
}

impl ProviderError {
    /// A new error; `retryable` follows from the kind (and the status for provider-side errors).
    pub fn new(
        kind: ProviderErrorKind,
        provider: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        let retryable = matches!(
            kind,
            ProviderErrorKind::RateLimit
                | ProviderErrorKind::Overloaded
                | ProviderErrorKind::Network
        );
        ProviderError {
            kind,
            message: message.into(),
            provider: provider.into(),
            status: None,
            retry_after: None,
            retryable,
        }
    }

    /// Sets the HTTP status; 500/502/503/504 make a provider-side error retryable.
    pub fn with_status(mut self, status: u16) -> Self {
        self.status = Some(status);
        if self.kind == ProviderErrorKind::Provider && matches!(status, 500 | 502 | 503 | 504) {
            self.retryable = true;
        }
        self
    }

    /// Sets the delay the provider asked for.
    pub fn with_retry_after(mut self, retry_after: Option<Duration>) -> Self {
        self.retry_after = retry_after;
        self
    }

    /// Overrides whether the error is worth retrying.
    pub fn with_retryable(mut self, retryable: bool) -> Self {
        self.retryable = retryable;
        self
    }
}

impl fmt::Display for ProviderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} error", self.provider, self.kind.as_str())?;
        if let Some(status) = self.status {
            write!(f, " (HTTP {status})")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for ProviderError {}

mod duration_ms {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(value: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match value {
            Some(d) => s.serialize_u64(d.as_millis().min(u128::from(u64::MAX)) as u64),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        Ok(Option::<u64>::deserialize(d)?.map(Duration::from_millis))
    }
}
