//! Anthropic models on Google Cloud Vertex AI: `streamRawPredict` with the Anthropic Messages
//! body and SSE stream (assembled by [`super::anthropic`]), OAuth access tokens from Google
//! credentials, and the project and region lookup.
//!
//! # Wire format
//!
//! `POST https://{region}-aiplatform.googleapis.com/v1/projects/{project}/locations/{region}/publishers/anthropic/models/{model}:streamRawPredict`
//! (`https://aiplatform.googleapis.com/v1/…` for the `global` region), as Google's "Use Claude
//! models" guide for Vertex AI gives it. The body is the Messages API body without `model` (it is
//! in the path), with `"anthropic_version": "vertex-2023-10-16"`; the response is the Messages
//! API's server-sent events. Model ids look like `claude-sonnet-4-5@20250929`.
//!
//! # Credentials
//!
//! An OAuth access token (scope `cloud-platform`) is sent as `Authorization: Bearer` and fetched
//! again shortly before it expires. It comes from a fixed token ([`VertexConfig::access_token`]),
//! else from Google's Application Default Credentials: a key file
//! ([`VertexConfig::credentials_file`], `GOOGLE_APPLICATION_CREDENTIALS`) holding a service-account
//! key or gcloud user credentials, else gcloud's `application_default_credentials.json`
//! (`gcloud auth application-default login`), else the metadata server on Google Cloud compute
//! (`GCE_METADATA_HOST` moves it). User credentials' `quota_project_id` is sent as
//! `x-goog-user-project`. Project: [`VertexConfig::project`], `ANTHROPIC_VERTEX_PROJECT_ID`,
//! `GOOGLE_CLOUD_PROJECT`, `GCLOUD_PROJECT`, the key file's `project_id`. Region:
//! [`VertexConfig::region`], `CLOUD_ML_REGION` (Claude Code's variable names).

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, ACCEPT, AUTHORIZATION, CONTENT_TYPE};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::anthropic::CacheTtl;
use super::cloud::AnthropicOnCloud;
pub use super::cloud::EnvLookup;
use super::google_auth::GoogleCredentials;
use super::http::{ErrorContext, HttpOptions, HttpTransport, RequestSigner, SignableRequest};
use super::{Provider, ProviderCapabilities, ProviderRequest, ProviderResponse, StreamSink};
use crate::message::{ProviderError, ProviderErrorKind};

/// The `anthropic_version` Vertex AI requires in the body.
pub const VERTEX_ANTHROPIC_VERSION: &str = "vertex-2023-10-16";

pub use super::google_auth::CLOUD_PLATFORM_SCOPE;

const PROVIDER_NAME: &str = "vertex";

/// The environment variables this provider reads (for hosts that pass a snapshot through
/// [`VertexConfig::with_env`]).
pub const ENV_VARS: &[&str] = &[
    "CLOUD_ML_REGION",
    "ANTHROPIC_VERTEX_PROJECT_ID",
    "GOOGLE_CLOUD_PROJECT",
    "GCLOUD_PROJECT",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "ANTHROPIC_VERTEX_BASE_URL",
    "CLOUDSDK_CONFIG",
    "GCE_METADATA_HOST",
    "HOME",
    "APPDATA",
];

/// Settings for [`VertexProvider`].
#[derive(Clone, PartialEq)]
pub struct VertexConfig {
    /// Model id, e.g. `claude-sonnet-4-5@20250929`.
    pub model: String,
    /// Google Cloud project id; looked up as the module docs say when `None`.
    pub project: Option<String>,
    /// Region (`us-east5`, `europe-west1`, `global`, …); `CLOUD_ML_REGION` when `None`.
    pub region: Option<String>,
    /// A credentials file (a service-account key or gcloud user credentials);
    /// `GOOGLE_APPLICATION_CREDENTIALS` when `None`.
    pub credentials_file: Option<PathBuf>,
    /// A fixed access token (e.g. from `gcloud auth print-access-token`), used as it is.
    pub access_token: Option<String>,
    /// Endpoint up to and including `/v1` (a gateway, a test server); the regional endpoint when
    /// `None` (or `ANTHROPIC_VERTEX_BASE_URL`).
    pub base_url: Option<String>,
    /// Output token cap when the request sets none (as [`super::AnthropicConfig::max_tokens`]).
    pub max_tokens: Option<u32>,
    /// Prompt caching (Vertex AI accepts the Messages API's `cache_control`); on by default.
    pub prompt_caching: Option<CacheTtl>,
    /// Timeouts, retries, size caps, extra headers.
    pub http: HttpOptions,
    /// Environment variables are read through this; `None`: the process's. Set with
    /// [`VertexConfig::with_env`].
    pub env: Option<EnvLookup>,
}

impl fmt::Debug for VertexConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VertexConfig")
            .field("model", &self.model)
            .field("project", &self.project)
            .field("region", &self.region)
            .field("credentials_file", &self.credentials_file)
            .field(
                "access_token",
                &self.access_token.as_ref().map(|_| "<redacted>"),
            )
            .field("base_url", &self.base_url)
            .field("max_tokens", &self.max_tokens)
            .field("prompt_caching", &self.prompt_caching)
            .field("http", &self.http)
            .finish()
    }
}

impl VertexConfig {
    /// A config for `model`; project, region and credentials come from the environment when
    /// the provider is built.
    pub fn new(model: impl Into<String>) -> Self {
        VertexConfig {
            model: model.into(),
            project: None,
            region: None,
            credentials_file: None,
            access_token: None,
            base_url: None,
            max_tokens: None,
            prompt_caching: Some(CacheTtl::FiveMinutes),
            http: HttpOptions::default(),
            env: None,
        }
    }

    /// The same config, reading environment variables through `var` instead of the process's.
    pub fn with_env(
        mut self,
        var: impl Fn(&str) -> Option<String> + Send + Sync + 'static,
    ) -> Self {
        self.env = Some(EnvLookup::new(var));
        self
    }

    fn var(&self, name: &str) -> Option<String> {
        EnvLookup::lookup(self.env.as_ref(), name)
    }
}

/// Adds `Authorization: Bearer <token>` (and a user's quota project) to every attempt, with a
/// token that has not expired.
#[derive(Debug)]
struct GoogleTokenSigner {
    credentials: GoogleCredentials,
}

#[async_trait]
impl RequestSigner for GoogleTokenSigner {
    async fn sign(
        &self,
        _request: &SignableRequest<'_>,
    ) -> Result<Vec<(HeaderName, HeaderValue)>, ProviderError> {
        self.credentials.headers(PROVIDER_NAME).await
    }
}

/// A [`Provider`] for Anthropic models on Google Cloud Vertex AI (streaming).
pub struct VertexProvider {
    call: AnthropicOnCloud,
    project: String,
    region: String,
    base_url: String,
}

impl fmt::Debug for VertexProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VertexProvider")
            .field("model", &self.call.model)
            .field("project", &self.project)
            .field("region", &self.region)
            .field("base_url", &self.base_url)
            .finish_non_exhaustive()
    }
}

impl VertexProvider {
    /// Builds the provider: resolves project, region and the token source (see the module
    /// docs). Fails with [`ProviderErrorKind::InvalidRequest`] when the project or region is
    /// missing and [`ProviderErrorKind::Auth`] for an unusable key file; the messages say what to
    /// set. Application default credentials are looked for on the first call.
    pub fn new(config: VertexConfig) -> Result<Self, ProviderError> {
        let missing = |message: &str| {
            ProviderError::new(ProviderErrorKind::InvalidRequest, PROVIDER_NAME, message)
        };
        let region = config
            .region
            .clone()
            .or_else(|| config.var("CLOUD_ML_REGION"))
            .ok_or_else(|| {
                missing(
                    "no Vertex AI region: set CLOUD_ML_REGION (e.g. `global` or `us-east5`) or \
                     the settings profile's `options.region`",
                )
            })?;
        let signer = match &config.access_token {
            Some(_) => None,
            None => Some(GoogleTokenSigner {
                credentials: GoogleCredentials::find(
                    PROVIDER_NAME,
                    config.credentials_file.clone(),
                    &|name| config.var(name),
                )?,
            }),
        };
        let key_project = signer
            .as_ref()
            .and_then(|signer| signer.credentials.key_project());
        let project = config
            .project
            .clone()
            .or_else(|| config.var("ANTHROPIC_VERTEX_PROJECT_ID"))
            .or_else(|| config.var("GOOGLE_CLOUD_PROJECT"))
            .or_else(|| config.var("GCLOUD_PROJECT"))
            .or(key_project)
            .ok_or_else(|| {
                missing(
                    "no Google Cloud project for Vertex AI: set ANTHROPIC_VERTEX_PROJECT_ID (or \
                     GOOGLE_CLOUD_PROJECT) or the settings profile's `options.project`",
                )
            })?;
        let base_url = config
            .base_url
            .clone()
            .or_else(|| config.var("ANTHROPIC_VERTEX_BASE_URL"))
            .unwrap_or_else(|| default_base_url(&region))
            .trim_end_matches('/')
            .to_string();
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
        if let Some(token) = &config.access_token {
            let mut value =
                HeaderValue::from_str(&format!("Bearer {}", token.trim())).map_err(|_| {
                    missing("the access token contains characters not allowed in an HTTP header")
                })?;
            value.set_sensitive(true);
            headers.insert(AUTHORIZATION, value);
        }
        let url = format!(
            "{base_url}/projects/{project}/locations/{region}/publishers/anthropic/models/{}:streamRawPredict",
            config.model
        );
        let transport = HttpTransport::new(
            url,
            headers,
            config.http.clone(),
            ErrorContext {
                provider: PROVIDER_NAME.to_string(),
                base_url: base_url.clone(),
                auth_hint: format!(
                    "Check the Google Cloud credentials (GOOGLE_APPLICATION_CREDENTIALS or \
                     `gcloud auth application-default login`) and that project {project} has \
                     Vertex AI enabled and access to {} in {region}.",
                    config.model
                ),
            },
        )?;
        let transport = match signer {
            Some(signer) => transport.with_signer(Arc::new(signer)),
            None => transport,
        };
        Ok(VertexProvider {
            call: AnthropicOnCloud {
                provider: PROVIDER_NAME,
                model: config.model,
                max_tokens: config.max_tokens,
                prompt_caching: config.prompt_caching,
                anthropic_version: VERTEX_ANTHROPIC_VERSION,
                drop_fields: &["model"],
                transport,
            },
            project,
            region,
            base_url,
        })
    }

    /// The endpoint requests go to (up to `/v1`).
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// The Google Cloud project in use.
    pub fn project(&self) -> &str {
        &self.project
    }

    /// The region in use.
    pub fn region(&self) -> &str {
        &self.region
    }

    /// The JSON body sent for `request`: the Messages API body without `model`, with Vertex
    /// AI's `anthropic_version`.
    pub fn request_body(&self, request: &ProviderRequest) -> Value {
        self.call.body(request)
    }
}

/// `https://{region}-aiplatform.googleapis.com/v1`, or the global endpoint.
fn default_base_url(region: &str) -> String {
    if region == "global" {
        "https://aiplatform.googleapis.com/v1".to_string()
    } else {
        format!("https://{region}-aiplatform.googleapis.com/v1")
    }
}

#[async_trait]
impl Provider for VertexProvider {
    fn name(&self) -> &str {
        PROVIDER_NAME
    }

    fn model(&self) -> &str {
        &self.call.model
    }

    fn capabilities(&self) -> ProviderCapabilities {
        self.call.capabilities()
    }

    async fn stream(
        &self,
        request: &ProviderRequest,
        on_event: &StreamSink<'_>,
        cancel: &CancellationToken,
    ) -> Result<ProviderResponse, ProviderError> {
        self.call.stream(request, on_event, cancel).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_by_region() {
        assert_eq!(
            default_base_url("us-east5"),
            "https://us-east5-aiplatform.googleapis.com/v1"
        );
        assert_eq!(
            default_base_url("global"),
            "https://aiplatform.googleapis.com/v1"
        );
    }
}
