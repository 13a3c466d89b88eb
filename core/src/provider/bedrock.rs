//! Anthropic models on Amazon Bedrock: `InvokeModelWithResponseStream` with the Anthropic
//! Messages body, SigV4 request signing, AWS credential and region lookup, and the decoding of
//! Bedrock's binary event stream into the Anthropic stream events that
//! [`super::anthropic`] assembles.
//!
//! # Wire format
//!
//! `POST https://bedrock-runtime.{region}.amazonaws.com/model/{modelId}/invoke-with-response-stream`
//! (Bedrock API reference, `InvokeModelWithResponseStream`). The body is the Messages API body
//! without `model` (it is in the path) and `stream`, plus `"anthropic_version":
//! "bedrock-2023-05-31"` (Bedrock user guide, "Anthropic Claude Messages API"). The response is
//! `application/vnd.amazon.eventstream`: binary frames (prelude, headers, payload, CRCs) whose
//! `chunk` events carry `{"bytes": "<base64>"}`, each the JSON of one Anthropic stream event;
//! errors mid-stream arrive as exception frames (`throttlingException`,
//! `modelStreamErrorException`, `validationException`, … — the `ResponseStream` union in the API
//! reference).
//!
//! # Credentials
//!
//! In order: a Bedrock API key ([`BedrockConfig::bearer_token`], `AWS_BEARER_TOKEN_BEDROCK`) sent
//! as `Authorization: Bearer`; explicit keys ([`BedrockConfig::credentials`]); then, unless the
//! config names a profile ([`BedrockConfig::profile`]), `AWS_ACCESS_KEY_ID` /
//! `AWS_SECRET_ACCESS_KEY` / `AWS_SESSION_TOKEN`; then the AWS SDKs' own credential chain (the
//! `aws-config` crate): the profile ([`BedrockConfig::profile`], else `AWS_PROFILE`, else
//! `default`) of the shared `config` and `credentials` files with static keys,
//! `credential_process`, IAM Identity Center (SSO, with the token `aws sso login` caches),
//! `role_arn` with `source_profile` or `credential_source` (STS `AssumeRole`) or
//! `web_identity_token_file`; web identity from `AWS_WEB_IDENTITY_TOKEN_FILE` and `AWS_ROLE_ARN`;
//! ECS/EKS container credentials (`AWS_CONTAINER_CREDENTIALS_FULL_URI` / `_RELATIVE_URI`); EC2
//! instance metadata. A profile the config names is asked alone (it wins over keys in the
//! environment, as `aws --profile` does).
//!
//! The chain runs on the first signed request, not in [`BedrockProvider::new`] (it may start a
//! process or call STS); its keys are kept until five minutes before they expire, then fetched
//! again. A failure is a [`ProviderErrorKind::Auth`] error of that request saying what was tried
//! and how to fix it (`aws sso login`, the process's exit status and stderr, …).
//!
//! The environment: the variables of [`ENV_VARS`] are read through [`BedrockConfig::with_env`]
//! when a host gives a snapshot, and the snapshot wins for them (the keys, `AWS_PROFILE`, the
//! region, `AWS_CONFIG_FILE` / `AWS_SHARED_CREDENTIALS_FILE` and `HOME`, which place the shared
//! files). Everything else the chain reads — the web identity and container variables,
//! `AWS_ENDPOINT_URL_STS`, `AWS_EC2_METADATA_DISABLED`, the SSO token cache under the home
//! directory — comes from the process environment: `aws-config` takes no other (its
//! `ConfigLoader::env` exists only behind its `test-util` feature).
//!
//! The region: [`BedrockConfig::region`], `AWS_REGION`, `AWS_DEFAULT_REGION`, the profile's
//! `region` (read with `aws-config`'s profile parser when the provider is built). The instance
//! metadata's region is not asked for: the endpoint is needed before any request.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use aws_config::profile::{ProfileFileCredentialsProvider, ProfileSet};
use aws_config::provider_config::ProviderConfig;
use aws_config::{BehaviorVersion, Region};
use aws_credential_types::provider::error::CredentialsError;
use aws_credential_types::provider::{ProvideCredentials, SharedCredentialsProvider};
use aws_credential_types::Credentials;
use aws_runtime::env_config::file::{EnvConfigFileKind, EnvConfigFiles};
use aws_sigv4::http_request::{
    sign, PayloadChecksumKind, SignableBody, SignableRequest as AwsSignableRequest, SigningSettings,
};
use aws_sigv4::sign::v4;
use aws_smithy_eventstream::frame::{DecodedFrame, MessageFrameDecoder};
use aws_smithy_types::error::display::DisplayErrorContext;
use aws_smithy_types::event_stream::{HeaderValue as FrameHeaderValue, Message};
use aws_types::os_shim_internal::{Env, Fs};
use base64::Engine as _;
use bytes::BytesMut;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, ACCEPT, AUTHORIZATION, CONTENT_TYPE};
use serde_json::Value;
use tokio::sync::{Mutex, OnceCell};
use tokio_util::sync::CancellationToken;

use super::anthropic::CacheTtl;
use super::cloud::AnthropicOnCloud;
pub use super::cloud::EnvLookup;
use super::http::{
    is_context_length, truncate, BodyDecoder, ErrorBody, ErrorContext, HttpOptions, HttpTransport,
    RequestSigner, SignableRequest,
};
use super::sse::SseEvent;
use super::{Provider, ProviderCapabilities, ProviderRequest, ProviderResponse, StreamSink};
use crate::message::{ProviderError, ProviderErrorKind};

/// The `anthropic_version` Bedrock requires in the body.
pub const BEDROCK_ANTHROPIC_VERSION: &str = "bedrock-2023-05-31";

/// The SigV4 service name of the Bedrock runtime.
pub const BEDROCK_SERVICE: &str = "bedrock";

const PROVIDER_NAME: &str = "bedrock";

/// The environment variables this provider reads itself (for hosts that pass a snapshot through
/// [`BedrockConfig::with_env`]); the rest of the credential chain reads the process environment
/// (see the module docs).
pub const ENV_VARS: &[&str] = &[
    "AWS_BEARER_TOKEN_BEDROCK",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_PROFILE",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_SHARED_CREDENTIALS_FILE",
    "AWS_CONFIG_FILE",
    "ANTHROPIC_BEDROCK_BASE_URL",
    "HOME",
    "USERPROFILE",
];

/// Largest event-stream data buffered beyond [`HttpOptions::max_event_bytes`] (frame headers,
/// the base64 expansion of the payload).
const FRAME_OVERHEAD_BYTES: usize = 64 * 1024;

/// AWS access keys.
#[derive(Clone, PartialEq, Eq)]
pub struct AwsCredentials {
    /// `AWS_ACCESS_KEY_ID`.
    pub access_key_id: String,
    /// `AWS_SECRET_ACCESS_KEY`.
    pub secret_access_key: String,
    /// `AWS_SESSION_TOKEN`, for temporary credentials.
    pub session_token: Option<String>,
}

impl fmt::Debug for AwsCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The key id identifies the account; the secret and token are never printed.
        f.debug_struct("AwsCredentials")
            .field("access_key_id", &self.access_key_id)
            .field("secret_access_key", &"<redacted>")
            .field(
                "session_token",
                &self.session_token.as_ref().map(|_| "<redacted>"),
            )
            .finish()
    }
}

/// Settings for [`BedrockProvider`].
#[derive(Clone, PartialEq)]
pub struct BedrockConfig {
    /// Bedrock model id or inference profile id/ARN, e.g.
    /// `anthropic.claude-sonnet-4-5-20250929-v1:0` or `us.anthropic.claude-sonnet-4-5-20250929-v1:0`.
    pub model: String,
    /// AWS region, e.g. `us-east-1`; looked up as the module docs say when `None`.
    pub region: Option<String>,
    /// Shared-config profile to take credentials (and the region) from; when set, the profile
    /// alone is used (keys in the environment do not override it).
    pub profile: Option<String>,
    /// Explicit keys; looked up through the credential chain (module docs) when `None`.
    pub credentials: Option<AwsCredentials>,
    /// A Bedrock API key (`AWS_BEARER_TOKEN_BEDROCK`): sent as `Authorization: Bearer` instead
    /// of signing.
    pub bearer_token: Option<String>,
    /// Endpoint without the `/model/…` path (a VPC endpoint, a gateway, a test server);
    /// `https://bedrock-runtime.{region}.amazonaws.com` when `None`.
    pub base_url: Option<String>,
    /// Output token cap when the request sets none (as [`super::AnthropicConfig::max_tokens`]).
    pub max_tokens: Option<u32>,
    /// Prompt caching (Bedrock accepts the Messages API's `cache_control`); on by default.
    pub prompt_caching: Option<CacheTtl>,
    /// Timeouts, retries, size caps, extra headers.
    pub http: HttpOptions,
    /// The variables of [`ENV_VARS`] (and through them the shared AWS files) are read through
    /// this; `None`: the process's. Set with [`BedrockConfig::with_env`].
    pub env: Option<EnvLookup>,
}

impl fmt::Debug for BedrockConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BedrockConfig")
            .field("model", &self.model)
            .field("region", &self.region)
            .field("profile", &self.profile)
            .field("credentials", &self.credentials)
            .field(
                "bearer_token",
                &self.bearer_token.as_ref().map(|_| "<redacted>"),
            )
            .field("base_url", &self.base_url)
            .field("max_tokens", &self.max_tokens)
            .field("prompt_caching", &self.prompt_caching)
            .field("http", &self.http)
            .finish()
    }
}

impl BedrockConfig {
    /// A config for `model`; the region comes from the process environment and the shared AWS
    /// files when the provider is built, credentials from the chain on the first request.
    pub fn new(model: impl Into<String>) -> Self {
        BedrockConfig {
            model: model.into(),
            region: None,
            profile: None,
            credentials: None,
            bearer_token: None,
            base_url: None,
            max_tokens: None,
            prompt_caching: Some(CacheTtl::FiveMinutes),
            http: HttpOptions::default(),
            env: None,
        }
    }

    /// The same config, reading the variables of [`ENV_VARS`] through `var` instead of the
    /// process's (the keys, `AWS_PROFILE`, the region, the shared files' paths, `HOME`,
    /// `ANTHROPIC_BEDROCK_BASE_URL`). The rest of the AWS credential chain still reads the process
    /// environment: `aws-config` takes no other outside its test utilities.
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

/// How requests are authenticated.
enum Auth {
    Bearer(String),
    SigV4(Arc<AwsSigV4Signer>),
    Chain(Arc<ChainSigner>),
}

/// Signs requests with AWS Signature Version 4 (the `aws-sigv4` crate), once per attempt.
#[derive(Clone)]
pub struct AwsSigV4Signer {
    credentials: Credentials,
    region: String,
    service: String,
    payload_checksum: bool,
}

impl fmt::Debug for AwsSigV4Signer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AwsSigV4Signer")
            .field("access_key_id", &self.credentials.access_key_id())
            .field("region", &self.region)
            .field("service", &self.service)
            .finish_non_exhaustive()
    }
}

impl AwsSigV4Signer {
    /// A signer for `service` (Bedrock: [`BEDROCK_SERVICE`]) in `region`.
    pub fn new(credentials: &AwsCredentials, region: &str, service: &str) -> Self {
        AwsSigV4Signer {
            credentials: Credentials::new(
                credentials.access_key_id.clone(),
                credentials.secret_access_key.clone(),
                credentials.session_token.clone(),
                None,
                "robota",
            ),
            region: region.to_string(),
            service: service.to_string(),
            payload_checksum: false,
        }
    }

    /// The same signer, also sending and signing `x-amz-content-sha256` (Bedrock does not need
    /// it; some services do).
    pub fn with_payload_checksum(mut self, on: bool) -> Self {
        self.payload_checksum = on;
        self
    }

    /// The headers that sign a request made at `time` (`x-amz-date`, `authorization`,
    /// `x-amz-security-token` with temporary credentials, `x-amz-content-sha256` when asked
    /// for). `url` is the request URL as sent (already percent-encoded); `headers` are the
    /// request's other headers, all of which are signed (as is `host`, taken from the URL).
    pub fn signing_headers(
        &self,
        method: &str,
        url: &str,
        headers: &[(&str, &str)],
        body: &[u8],
        time: SystemTime,
    ) -> Result<Vec<(String, String)>, ProviderError> {
        let failed = |what: &str, error: &dyn fmt::Display| {
            ProviderError::new(
                ProviderErrorKind::InvalidRequest,
                PROVIDER_NAME,
                format!("could not sign the request ({what}): {error}"),
            )
        };
        let identity = self.credentials.clone().into();
        let mut settings = SigningSettings::default();
        if self.payload_checksum {
            settings.payload_checksum_kind = PayloadChecksumKind::XAmzSha256;
        }
        let params = v4::SigningParams::builder()
            .identity(&identity)
            .region(&self.region)
            .name(&self.service)
            .time(time)
            .settings(settings)
            .build()
            .map_err(|e| failed("parameters", &e))?
            .into();
        let request = AwsSignableRequest::new(
            method,
            url,
            headers.iter().copied(),
            SignableBody::Bytes(body),
        )
        .map_err(|e| failed("URL", &e))?;
        let (instructions, _signature) = sign(request, &params)
            .map_err(|e| failed("signature", &e))?
            .into_parts();
        Ok(instructions
            .headers()
            .map(|(name, value)| (name.to_string(), value.to_string()))
            .collect())
    }
}

#[async_trait]
impl RequestSigner for AwsSigV4Signer {
    async fn sign(
        &self,
        request: &SignableRequest<'_>,
    ) -> Result<Vec<(HeaderName, HeaderValue)>, ProviderError> {
        let headers: Vec<(&str, &str)> = request
            .headers
            .iter()
            .filter_map(|(name, value)| Some((name.as_str(), value.to_str().ok()?)))
            .collect();
        let signed = self.signing_headers(
            request.method,
            request.url,
            &headers,
            request.body,
            SystemTime::now(),
        )?;
        signed
            .into_iter()
            .map(|(name, value)| {
                let name = HeaderName::from_bytes(name.as_bytes());
                let value = HeaderValue::from_str(&value);
                match (name, value) {
                    (Ok(name), Ok(mut value)) => {
                        value.set_sensitive(true);
                        Ok((name, value))
                    }
                    _ => Err(ProviderError::new(
                        ProviderErrorKind::InvalidRequest,
                        PROVIDER_NAME,
                        "the AWS credentials contain characters not allowed in an HTTP header",
                    )),
                }
            })
            .collect()
    }
}

/// A [`Provider`] for Anthropic models on Amazon Bedrock (streaming).
pub struct BedrockProvider {
    call: AnthropicOnCloud,
    region: String,
    base_url: String,
}

impl fmt::Debug for BedrockProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BedrockProvider")
            .field("model", &self.call.model)
            .field("region", &self.region)
            .field("base_url", &self.base_url)
            .finish_non_exhaustive()
    }
}

impl BedrockProvider {
    /// Builds the provider: resolves the region and where credentials come from (see the module
    /// docs) and the HTTP client. Fails with [`ProviderErrorKind::InvalidRequest`] when no region
    /// is set or a shared AWS file is unreadable; the messages say what to set. Credentials from
    /// the chain are fetched on the first request, and a failure then is a
    /// [`ProviderErrorKind::Auth`] error of that request.
    pub fn new(config: BedrockConfig) -> Result<Self, ProviderError> {
        let profile_name = config
            .profile
            .clone()
            .or_else(|| config.var("AWS_PROFILE"))
            .unwrap_or_else(|| "default".to_string());
        let shared = SharedProfiles::load(&config, &profile_name)?;
        let region = config
            .region
            .clone()
            .or_else(|| config.var("AWS_REGION"))
            .or_else(|| config.var("AWS_DEFAULT_REGION"))
            .or_else(|| shared.value(&profile_name, "region"))
            .ok_or_else(|| {
                ProviderError::new(
                    ProviderErrorKind::InvalidRequest,
                    PROVIDER_NAME,
                    "no AWS region for Bedrock: set AWS_REGION (e.g. us-east-1), the settings \
                     profile's `options.region`, or `region` in the AWS profile",
                )
            })?;
        let auth = match config
            .bearer_token
            .clone()
            .or_else(|| config.var("AWS_BEARER_TOKEN_BEDROCK"))
        {
            Some(token) => Auth::Bearer(token),
            None => match static_credentials(&config) {
                Some(credentials) => Auth::SigV4(Arc::new(AwsSigV4Signer::new(
                    &credentials,
                    &region,
                    BEDROCK_SERVICE,
                ))),
                None => Auth::Chain(Arc::new(ChainSigner::new(
                    &config,
                    profile_name,
                    shared,
                    region.clone(),
                ))),
            },
        };
        let base_url = config
            .base_url
            .clone()
            .or_else(|| config.var("ANTHROPIC_BEDROCK_BASE_URL"))
            .unwrap_or_else(|| format!("https://bedrock-runtime.{region}.amazonaws.com"))
            .trim_end_matches('/')
            .to_string();
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(
            ACCEPT,
            HeaderValue::from_static("application/vnd.amazon.eventstream"),
        );
        if let Auth::Bearer(token) = &auth {
            let mut value =
                HeaderValue::from_str(&format!("Bearer {}", token.trim())).map_err(|_| {
                    ProviderError::new(
                        ProviderErrorKind::InvalidRequest,
                        PROVIDER_NAME,
                        "AWS_BEARER_TOKEN_BEDROCK contains characters not allowed in an HTTP \
                         header",
                    )
                })?;
            value.set_sensitive(true);
            headers.insert(AUTHORIZATION, value);
        }
        let url = format!(
            "{base_url}/model/{}/invoke-with-response-stream",
            encode_path_segment(&config.model)
        );
        let transport = HttpTransport::new(
            url,
            headers,
            config.http.clone(),
            ErrorContext {
                provider: PROVIDER_NAME.to_string(),
                base_url: base_url.clone(),
                auth_hint: format!(
                    "Check the AWS credentials (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY/\
                     AWS_SESSION_TOKEN, AWS_PROFILE, or AWS_BEARER_TOKEN_BEDROCK) and that the \
                     account has been granted access to {} in {region}.",
                    config.model
                ),
            },
        )?
        .with_decoder(Arc::new(|options: &HttpOptions| {
            Box::new(EventStreamDecoder::new(options.max_event_bytes)) as Box<dyn BodyDecoder>
        }));
        let transport = match auth {
            Auth::SigV4(signer) => transport.with_signer(signer),
            Auth::Chain(signer) => transport.with_signer(signer),
            Auth::Bearer(_) => transport,
        };
        Ok(BedrockProvider {
            call: AnthropicOnCloud {
                provider: PROVIDER_NAME,
                model: config.model,
                max_tokens: config.max_tokens,
                prompt_caching: config.prompt_caching,
                anthropic_version: BEDROCK_ANTHROPIC_VERSION,
                drop_fields: &["model", "stream"],
                transport,
            },
            region,
            base_url,
        })
    }

    /// The endpoint requests go to (without the `/model/…` path).
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// The AWS region in use.
    pub fn region(&self) -> &str {
        &self.region
    }

    /// The JSON body sent for `request`: the Messages API body without `model` and `stream`,
    /// with Bedrock's `anthropic_version`.
    pub fn request_body(&self, request: &ProviderRequest) -> Value {
        self.call.body(request)
    }
}

#[async_trait]
impl Provider for BedrockProvider {
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

/// Percent-encodes one path segment: everything but RFC 3986's unreserved characters (a model
/// id's `:`, an inference profile ARN's `:` and `/`).
fn encode_path_segment(segment: &str) -> String {
    let mut out = String::with_capacity(segment.len());
    for byte in segment.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// The HTTPS client of the AWS credential chain (SSO, STS, the instance metadata service): hyper
/// on rustls with ring, the crypto library robota's other clients use, so only one is linked.
fn https_client() -> aws_smithy_runtime_api::client::http::SharedHttpClient {
    use aws_smithy_http_client::tls::{rustls_provider::CryptoMode, Provider};
    aws_smithy_http_client::Builder::new()
        .tls_provider(Provider::Rustls(CryptoMode::Ring))
        .build_https()
}

/// Keys given in the config or, unless the config names a profile (which then wins), in the
/// environment.
fn static_credentials(config: &BedrockConfig) -> Option<AwsCredentials> {
    if let Some(credentials) = &config.credentials {
        return Some(credentials.clone());
    }
    if config.profile.is_some() {
        return None;
    }
    Some(AwsCredentials {
        access_key_id: config.var("AWS_ACCESS_KEY_ID")?,
        secret_access_key: config.var("AWS_SECRET_ACCESS_KEY")?,
        session_token: config.var("AWS_SESSION_TOKEN"),
    })
}

/// Keys from the chain are fetched again this long before they expire (a request signed just
/// before expiry could still be refused, and a long stream outlives its signature's check).
const REFRESH_BEFORE_EXPIRY: Duration = Duration::from_secs(5 * 60);

/// The shared AWS `config` and `credentials` files, parsed with `aws-config`'s profile parser.
struct SharedProfiles {
    /// The files as the credential chain is given them (the ones that exist).
    files: EnvConfigFiles,
    /// Where they were looked for, for messages.
    paths: String,
    profiles: ProfileSet,
}

impl SharedProfiles {
    /// The files at `AWS_CONFIG_FILE` / `AWS_SHARED_CREDENTIALS_FILE`, else under `~/.aws`, as
    /// the config's variables place them; `profile` is the one selected.
    fn load(config: &BedrockConfig, profile: &str) -> Result<Self, ProviderError> {
        let home = config.var("HOME").or_else(|| config.var("USERPROFILE"));
        let located = |variable: &str, file: &str| match config.var(variable) {
            Some(path) => Some(match (path.strip_prefix("~/"), &home) {
                (Some(rest), Some(home)) => PathBuf::from(home).join(rest),
                _ => PathBuf::from(path),
            }),
            None => home
                .as_ref()
                .map(|home| PathBuf::from(home).join(".aws").join(file)),
        };
        let mut builder = EnvConfigFiles::builder();
        let mut paths = Vec::new();
        let mut found = false;
        for (kind, variable, file) in [
            (EnvConfigFileKind::Config, "AWS_CONFIG_FILE", "config"),
            (
                EnvConfigFileKind::Credentials,
                "AWS_SHARED_CREDENTIALS_FILE",
                "credentials",
            ),
        ] {
            let Some(path) = located(variable, file) else {
                continue;
            };
            paths.push(path.display().to_string());
            // A missing file counts as empty, as in the SDKs (`aws-config` fails on a missing
            // file it is given by path).
            if path.is_file() {
                builder = builder.with_file(kind, path);
                found = true;
            }
        }
        if !found {
            // The set may not be empty; an empty config file is the same as none.
            builder = builder.with_contents(EnvConfigFileKind::Config, "");
        }
        let files = builder.build();
        let paths = if paths.is_empty() {
            "no shared AWS files (HOME is not set)".to_string()
        } else {
            paths.join(" and ")
        };
        let env = Env::from(
            home.map(|home| HashMap::from([("HOME".to_string(), home)]))
                .unwrap_or_default(),
        );
        // `load` only reads files (`std::fs` behind `Fs::real`): it is ready on its first poll
        // and needs no runtime, so `new` can stay synchronous.
        let profiles = futures::executor::block_on(aws_config::profile::load(
            &Fs::real(),
            &env,
            &files,
            Some(Cow::Owned(profile.to_string())),
        ))
        .map_err(|error| {
            ProviderError::new(
                ProviderErrorKind::InvalidRequest,
                PROVIDER_NAME,
                format!(
                    "cannot read the shared AWS files ({paths}): {}",
                    DisplayErrorContext(&error)
                ),
            )
        })?;
        Ok(SharedProfiles {
            files,
            paths,
            profiles,
        })
    }

    /// `key` of `profile` (the credentials file wins over the config file, as in the SDKs).
    fn value(&self, profile: &str, key: &str) -> Option<String> {
        self.profiles
            .get_profile(profile)?
            .get(key)
            .filter(|value| !value.trim().is_empty())
            .map(str::to_string)
    }
}

/// How a profile gets its keys, for the advice of an error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ProfileKind {
    Sso,
    Process,
    AssumeRole,
    WebIdentity,
    /// Static keys, or no such profile.
    Plain,
}

impl ProfileKind {
    fn of(shared: &SharedProfiles, profile: &str) -> Self {
        let has = |key: &str| shared.value(profile, key).is_some();
        if has("sso_session") || has("sso_start_url") {
            ProfileKind::Sso
        } else if has("web_identity_token_file") {
            ProfileKind::WebIdentity
        } else if has("role_arn") {
            ProfileKind::AssumeRole
        } else if has("credential_process") {
            ProfileKind::Process
        } else {
            ProfileKind::Plain
        }
    }
}

/// Signs with SigV4 keys from the AWS credential chain (`aws-config`): built and asked on the
/// first request, its keys kept until [`REFRESH_BEFORE_EXPIRY`] before they expire.
struct ChainSigner {
    profile: String,
    /// The profile was named in the config: it alone is asked, not the whole chain.
    explicit: bool,
    files: EnvConfigFiles,
    paths: String,
    kind: ProfileKind,
    region: String,
    provider: OnceCell<SharedCredentialsProvider>,
    /// Held while keys are fetched, so concurrent requests wait for one fetch.
    cached: Mutex<Option<Credentials>>,
}

impl fmt::Debug for ChainSigner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChainSigner")
            .field("profile", &self.profile)
            .field("explicit", &self.explicit)
            .field("region", &self.region)
            .finish_non_exhaustive()
    }
}

impl ChainSigner {
    fn new(
        config: &BedrockConfig,
        profile: String,
        shared: SharedProfiles,
        region: String,
    ) -> Self {
        ChainSigner {
            kind: ProfileKind::of(&shared, &profile),
            explicit: config.profile.is_some(),
            profile,
            files: shared.files,
            paths: shared.paths,
            region,
            provider: OnceCell::new(),
            cached: Mutex::new(None),
        }
    }

    /// The credential provider: the named profile's, or the SDKs' default chain.
    async fn provider(&self) -> &SharedCredentialsProvider {
        self.provider
            .get_or_init(|| async {
                let region = Region::new(self.region.clone());
                if self.explicit {
                    let conf = ProviderConfig::without_region()
                        .with_region(Some(region))
                        .with_http_client(https_client());
                    return SharedCredentialsProvider::new(
                        ProfileFileCredentialsProvider::builder()
                            .configure(&conf)
                            .profile_name(&self.profile)
                            .profile_files(self.files.clone())
                            .build(),
                    );
                }
                let loaded = aws_config::defaults(BehaviorVersion::latest())
                    .http_client(https_client())
                    .region(region.clone())
                    .profile_name(&self.profile)
                    .profile_files(self.files.clone())
                    .load()
                    .await;
                match loaded.credentials_provider() {
                    Some(provider) => provider,
                    // The loader always builds the default chain when none is given; this is
                    // the same chain built directly.
                    None => SharedCredentialsProvider::new(
                        aws_config::default_provider::credentials::DefaultCredentialsChain::builder()
                            .configure(
                                ProviderConfig::without_region()
                                    .with_region(Some(region.clone()))
                                    .with_http_client(https_client()),
                            )
                            .region(region)
                            .profile_name(&self.profile)
                            .build()
                            .await,
                    ),
                }
            })
            .await
    }

    /// Keys that are not about to expire: the cached ones, or fresh ones from the chain.
    async fn credentials(&self) -> Result<Credentials, ProviderError> {
        let mut cached = self.cached.lock().await;
        let fresh_until = SystemTime::now() + REFRESH_BEFORE_EXPIRY;
        if let Some(credentials) = cached.as_ref() {
            if credentials
                .expiry()
                .is_none_or(|expiry| expiry > fresh_until)
            {
                return Ok(credentials.clone());
            }
        }
        let credentials = self
            .provider()
            .await
            .provide_credentials()
            .await
            .map_err(|error| self.error(&error))?;
        *cached = Some(credentials.clone());
        Ok(credentials)
    }

    /// An [`ProviderErrorKind::Auth`] error: what was tried, what failed, how to fix it.
    fn error(&self, error: &CredentialsError) -> ProviderError {
        let profile = &self.profile;
        let tried = if self.explicit {
            format!("the AWS profile \"{profile}\" ({})", self.paths)
        } else {
            format!(
                "the AWS credential chain (keys in the environment, the profile \"{profile}\" \
                 in {}, web identity, container credentials, EC2 instance metadata)",
                self.paths
            )
        };
        let fix = match (self.kind, error) {
            (ProfileKind::Sso, _) => format!(
                "if the SSO session has expired or was never started, run `aws sso login \
                 --profile {profile}`"
            ),
            (ProfileKind::Process, _) => format!(
                "the profile's `credential_process` failed: run it by hand to see why, or \
                 export keys with `aws configure export-credentials --profile {profile} \
                 --format env`"
            ),
            (ProfileKind::AssumeRole, _) => "check the profile's `source_profile` (or \
                 `credential_source`) credentials and that they may call sts:AssumeRole on its \
                 `role_arn`"
                .to_string(),
            (ProfileKind::WebIdentity, _) => "check the profile's `web_identity_token_file` and \
                 that its `role_arn` trusts the token's issuer"
                .to_string(),
            (ProfileKind::Plain, CredentialsError::CredentialsNotLoaded(_)) => {
                "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN for \
                 temporary keys), AWS_PROFILE naming a profile of the shared files, or \
                 AWS_BEARER_TOKEN_BEDROCK (a Bedrock API key)"
                    .to_string()
            }
            (ProfileKind::Plain, _) => "fix what the message names, or set \
                 AWS_BEARER_TOKEN_BEDROCK (a Bedrock API key)"
                .to_string(),
        };
        ProviderError::new(
            ProviderErrorKind::Auth,
            PROVIDER_NAME,
            format!(
                "could not get AWS credentials for Bedrock from {tried}: {}; {fix}",
                one_line(&DisplayErrorContext(error).to_string())
            ),
        )
        // A source that did not answer in time may answer the next attempt.
        .with_retryable(matches!(error, CredentialsError::ProviderTimedOut(_)))
    }
}

/// `aws-config`'s error chain on one line: its lines (a process's stderr, the list of sources
/// tried) joined, and a cause repeated by nested providers said once.
fn one_line(detail: &str) -> String {
    let joined = detail
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    let mut parts: Vec<&str> = joined.split(": ").collect();
    parts.dedup();
    parts.join(": ")
}

#[async_trait]
impl RequestSigner for ChainSigner {
    async fn sign(
        &self,
        request: &SignableRequest<'_>,
    ) -> Result<Vec<(HeaderName, HeaderValue)>, ProviderError> {
        let signer = AwsSigV4Signer {
            credentials: self.credentials().await?,
            region: self.region.clone(),
            service: BEDROCK_SERVICE.to_string(),
            payload_checksum: false,
        };
        signer.sign(request).await
    }
}

/// Decodes `application/vnd.amazon.eventstream` frames (with `aws-smithy-eventstream`) into the
/// Anthropic stream events their `chunk`s carry.
struct EventStreamDecoder {
    buffer: BytesMut,
    frames: MessageFrameDecoder,
    max_buffer: usize,
}

impl EventStreamDecoder {
    fn new(max_event_bytes: usize) -> Self {
        EventStreamDecoder {
            buffer: BytesMut::new(),
            frames: MessageFrameDecoder::new(),
            max_buffer: max_event_bytes.saturating_mul(4).div_ceil(3) + FRAME_OVERHEAD_BYTES,
        }
    }

    fn handle(&self, message: &Message, out: &mut Vec<SseEvent>) -> Result<(), ProviderError> {
        let header = |name: &str| {
            message
                .headers()
                .iter()
                .find(|h| h.name().as_str() == name)
                .and_then(|h| match h.value() {
                    FrameHeaderValue::String(s) => Some(s.as_str().to_string()),
                    _ => None,
                })
        };
        match header(":message-type").as_deref() {
            Some("event") => {
                if header(":event-type").as_deref() != Some("chunk") {
                    return Ok(()); // an event type this version does not know
                }
                out.push(decode_chunk(message.payload())?);
                Ok(())
            }
            Some("exception") => {
                let name = header(":exception-type").unwrap_or_else(|| "exception".into());
                Err(exception_error(&name, message.payload()))
            }
            Some("error") => {
                let code = header(":error-code").unwrap_or_else(|| "error".into());
                let text = header(":error-message").unwrap_or_default();
                Err(ProviderError::new(
                    ProviderErrorKind::Provider,
                    PROVIDER_NAME,
                    format!("Bedrock reported an error mid-stream: {code}: {text}"),
                ))
            }
            other => Err(ProviderError::new(
                ProviderErrorKind::Provider,
                PROVIDER_NAME,
                format!("Bedrock sent an event-stream frame of unknown message type {other:?}"),
            )),
        }
    }
}

impl BodyDecoder for EventStreamDecoder {
    fn feed(&mut self, chunk: &[u8], out: &mut Vec<SseEvent>) -> Result<(), ProviderError> {
        self.buffer.extend_from_slice(chunk);
        loop {
            match self.frames.decode_frame(&mut self.buffer) {
                Ok(DecodedFrame::Complete(message)) => self.handle(&message, out)?,
                Ok(DecodedFrame::Incomplete) => break,
                Err(e) => {
                    return Err(ProviderError::new(
                        ProviderErrorKind::Provider,
                        PROVIDER_NAME,
                        format!("Bedrock sent a malformed event-stream frame: {e}"),
                    ))
                }
            }
        }
        if self.buffer.len() > self.max_buffer {
            return Err(ProviderError::new(
                ProviderErrorKind::Provider,
                PROVIDER_NAME,
                format!(
                    "an event-stream frame exceeded {} bytes (raise HttpOptions.max_event_bytes \
                     if this is expected)",
                    self.max_buffer
                ),
            ));
        }
        Ok(())
    }
}

/// A `chunk` payload (`{"bytes": "<base64>"}`) as the Anthropic event it carries.
fn decode_chunk(payload: &[u8]) -> Result<SseEvent, ProviderError> {
    let malformed = |what: String| {
        ProviderError::new(
            ProviderErrorKind::Provider,
            PROVIDER_NAME,
            format!(
                "Bedrock sent a malformed chunk ({what}): {}",
                truncate(&String::from_utf8_lossy(payload), 200)
            ),
        )
    };
    #[derive(serde::Deserialize)]
    struct Chunk {
        bytes: String,
    }
    #[derive(serde::Deserialize)]
    struct Typed {
        #[serde(rename = "type")]
        kind: String,
    }
    let chunk: Chunk = serde_json::from_slice(payload).map_err(|e| malformed(e.to_string()))?;
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(chunk.bytes.as_bytes())
        .map_err(|e| malformed(format!("bad base64: {e}")))?;
    let data = String::from_utf8(decoded).map_err(|e| malformed(format!("not UTF-8: {e}")))?;
    // The event name is the payload's `type`, as the Messages API's SSE `event:` line would be
    // (an unparsable payload is left to the assembler, which reports it as malformed).
    let event = serde_json::from_str::<Typed>(&data)
        .map(|t| t.kind)
        .unwrap_or_default();
    Ok(SseEvent {
        event,
        data,
        id: None,
        retry: None,
    })
}

/// A typed error for an exception frame (`:exception-type` names it; the payload is
/// `{"message": …}`).
fn exception_error(name: &str, payload: &[u8]) -> ProviderError {
    let text = String::from_utf8_lossy(payload);
    let body = super::http::parse_error_body(&text);
    let message = body.message.clone().unwrap_or_else(|| truncate(&text, 500));
    let (kind, retryable) = match name {
        "throttlingException" => (ProviderErrorKind::RateLimit, true),
        "serviceUnavailableException" => (ProviderErrorKind::Overloaded, true),
        "internalServerException" | "modelStreamErrorException" => {
            (ProviderErrorKind::Provider, true)
        }
        "modelTimeoutException" => (ProviderErrorKind::Network, true),
        "validationException" => {
            let body = ErrorBody {
                message: Some(message.clone()),
                ..ErrorBody::default()
            };
            if is_context_length(&body) {
                (ProviderErrorKind::ContextLength, false)
            } else {
                (ProviderErrorKind::InvalidRequest, false)
            }
        }
        "accessDeniedException" => (ProviderErrorKind::Auth, false),
        _ => (ProviderErrorKind::Provider, false),
    };
    ProviderError::new(
        kind,
        PROVIDER_NAME,
        format!("Bedrock reported {name} mid-stream: {message}"),
    )
    .with_retryable(retryable)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_segments_are_percent_encoded() {
        assert_eq!(
            encode_path_segment("anthropic.claude-sonnet-4-5-20250929-v1:0"),
            "anthropic.claude-sonnet-4-5-20250929-v1%3A0"
        );
        assert_eq!(
            encode_path_segment("arn:aws:bedrock:us-east-1:1:inference-profile/x"),
            "arn%3Aaws%3Abedrock%3Aus-east-1%3A1%3Ainference-profile%2Fx"
        );
    }

    #[test]
    fn chain_errors_are_one_line_without_repeats() {
        assert_eq!(
            one_line(
                "an error occurred while loading credentials: an error occurred while loading \
                 credentials: external process exited with code 3. Stderr: expired\nlog in\n"
            ),
            "an error occurred while loading credentials: external process exited with code 3. \
             Stderr: expired log in"
        );
    }

    #[test]
    fn exceptions_are_typed() {
        let throttled = exception_error("throttlingException", br#"{"message":"slow"}"#);
        assert_eq!(throttled.kind, ProviderErrorKind::RateLimit);
        assert!(throttled.retryable);
        assert!(throttled.message.contains("slow"), "{}", throttled.message);
        let long = exception_error(
            "validationException",
            br#"{"message":"prompt is too long: 300000 tokens > 200000 maximum"}"#,
        );
        assert_eq!(long.kind, ProviderErrorKind::ContextLength);
        assert!(!long.retryable);
        let stream = exception_error("modelStreamErrorException", b"{}");
        assert!(stream.retryable);
    }
}
