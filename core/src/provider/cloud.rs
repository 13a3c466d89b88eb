//! What the providers of Anthropic models on other clouds (Amazon Bedrock, Google Vertex AI)
//! share: the Messages API body with a cloud's adjustments, one streamed call through the
//! Anthropic stream assembler, and the lookup of environment variables.

use std::fmt;
use std::sync::Arc;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::anthropic::{build_body, mark_cache_breakpoints, AnthropicAssembler, CacheTtl};
use super::http::HttpTransport;
use super::{ProviderCapabilities, ProviderRequest, ProviderResponse, StreamSink};
use crate::message::{ProviderError, ProviderErrorKind};

/// A function from a variable's name to its value.
type VarFn = dyn Fn(&str) -> Option<String> + Send + Sync;

/// A lookup of environment variables, so tests and hosts can supply their own.
#[derive(Clone)]
pub struct EnvLookup(Arc<VarFn>);

impl fmt::Debug for EnvLookup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("EnvLookup")
    }
}

impl PartialEq for EnvLookup {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl EnvLookup {
    /// A lookup through `var`.
    pub fn new(var: impl Fn(&str) -> Option<String> + Send + Sync + 'static) -> Self {
        EnvLookup(Arc::new(var))
    }

    /// `name` from `source` (the process environment when `None`); blank values count as unset.
    pub(crate) fn lookup(source: Option<&EnvLookup>, name: &str) -> Option<String> {
        let value = match source {
            Some(env) => (env.0)(name),
            None => std::env::var(name).ok(),
        };
        value.filter(|v| !v.trim().is_empty())
    }
}

/// An Anthropic model behind a cloud endpoint: the model, the body's shape and the transport
/// (with the cloud's URL, headers, signer and body decoder).
pub(crate) struct AnthropicOnCloud {
    /// Provider name (`bedrock`, `vertex`), named in errors.
    pub provider: &'static str,
    /// The cloud's model id.
    pub model: String,
    /// Output token cap when the request sets none.
    pub max_tokens: Option<u32>,
    /// Prompt-cache breakpoints, when on.
    pub prompt_caching: Option<CacheTtl>,
    /// The body's `anthropic_version`.
    pub anthropic_version: &'static str,
    /// Body fields the cloud takes elsewhere (the URL) or not at all.
    pub drop_fields: &'static [&'static str],
    /// The HTTP transport.
    pub transport: HttpTransport,
}

impl AnthropicOnCloud {
    /// The JSON body for `request`.
    pub(crate) fn body(&self, request: &ProviderRequest) -> Value {
        let mut body = build_body(anthropic_model_id(&self.model), self.max_tokens, request);
        if let Some(ttl) = self.prompt_caching {
            mark_cache_breakpoints(&mut body, ttl);
        }
        if let Some(map) = body.as_object_mut() {
            for field in self.drop_fields {
                map.remove(*field);
            }
            map.insert(
                "anthropic_version".into(),
                Value::String(self.anthropic_version.into()),
            );
        }
        body
    }

    /// What the model supports.
    pub(crate) fn capabilities(&self) -> ProviderCapabilities {
        ProviderCapabilities {
            streaming: true,
            tools: true,
            thinking: true,
            // The catalog strips the clouds' prefixes and version suffixes itself.
            context_window: super::catalog::context_window(&self.model),
            ..ProviderCapabilities::default()
        }
    }

    /// One streamed call.
    pub(crate) async fn stream(
        &self,
        request: &ProviderRequest,
        on_event: &StreamSink<'_>,
        cancel: &CancellationToken,
    ) -> Result<ProviderResponse, ProviderError> {
        let body = serde_json::to_vec(&self.body(request)).map_err(|e| {
            ProviderError::new(
                ProviderErrorKind::InvalidRequest,
                self.provider,
                format!("could not encode the request: {e}"),
            )
        })?;
        self.transport
            .stream(
                body.into(),
                || AnthropicAssembler::for_provider(&self.model, self.provider),
                on_event,
                cancel,
            )
            .await
    }
}

/// The Anthropic model name inside a cloud's id (Bedrock's
/// `us.anthropic.claude-sonnet-4-5-…-v1:0` → `claude-sonnet-4-5-…-v1:0`), so default output caps
/// follow the model family.
fn anthropic_model_id(model: &str) -> &str {
    model
        .find("anthropic.")
        .map_or(model, |at| &model[at + "anthropic.".len()..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anthropic_model_names_inside_cloud_ids() {
        assert_eq!(
            anthropic_model_id("us.anthropic.claude-sonnet-4-5-20250929-v1:0"),
            "claude-sonnet-4-5-20250929-v1:0"
        );
        assert_eq!(
            anthropic_model_id("claude-sonnet-4-5@20250929"),
            "claude-sonnet-4-5@20250929"
        );
    }
}
