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
//! as `Authorization: Bearer`; explicit keys ([`BedrockConfig::credentials`]); a named profile
//! ([`BedrockConfig::profile`]) from the shared files; `AWS_ACCESS_KEY_ID` /
//! `AWS_SECRET_ACCESS_KEY` / `AWS_SESSION_TOKEN`; `AWS_PROFILE` (or `default`) from
//! `~/.aws/credentials` and `~/.aws/config` (`AWS_SHARED_CREDENTIALS_FILE`, `AWS_CONFIG_FILE`
//! move them). The region: [`BedrockConfig::region`], `AWS_REGION`, `AWS_DEFAULT_REGION`, the
//! profile's `region`. This follows the AWS SDKs' documented order for static keys; profiles
//! that name `credential_process`, SSO or a role to assume are not resolved here (`aws-config`,
//! which would, builds a whole second HTTP stack and the STS SDK) and the error says how to
//! export their keys instead.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use async_trait::async_trait;
use aws_credential_types::Credentials;
use aws_sigv4::http_request::{
    sign, PayloadChecksumKind, SignableBody, SignableRequest as AwsSignableRequest, SigningSettings,
};
use aws_sigv4::sign::v4;
use aws_smithy_eventstream::frame::{DecodedFrame, MessageFrameDecoder};
use aws_smithy_types::event_stream::{HeaderValue as FrameHeaderValue, Message};
use base64::Engine as _;
use bytes::BytesMut;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, ACCEPT, AUTHORIZATION, CONTENT_TYPE};
use serde_json::Value;
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

/// The environment variables this provider reads (for hosts that pass a snapshot through
/// [`BedrockConfig::with_env`]).
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
    /// Shared-config profile to take keys (and the region) from.
    pub profile: Option<String>,
    /// Explicit keys; looked up as the module docs say when `None`.
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
    /// Environment variables (and through them the shared AWS files) are read through this;
    /// `None`: the process's. Set with [`BedrockConfig::with_env`].
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
    /// A config for `model`; credentials and region come from the process environment and the
    /// shared AWS files when the provider is built.
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

    /// The same config, reading environment variables through `var` instead of the process's
    /// (the AWS variables, `HOME`, `ANTHROPIC_BEDROCK_BASE_URL`).
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
    /// Builds the provider: resolves the region and credentials (see the module docs) and the
    /// HTTP client. Fails with [`ProviderErrorKind::Auth`] when no credentials are found, and
    /// with [`ProviderErrorKind::InvalidRequest`] when no region is set; the messages say what
    /// to set.
    pub fn new(config: BedrockConfig) -> Result<Self, ProviderError> {
        let shared = SharedFiles::load(&config)?;
        let profile_name = config
            .profile
            .clone()
            .or_else(|| config.var("AWS_PROFILE"))
            .unwrap_or_else(|| "default".to_string());
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
            None => {
                let credentials = resolve_credentials(&config, &shared, &profile_name)?;
                Auth::SigV4(Arc::new(AwsSigV4Signer::new(
                    &credentials,
                    &region,
                    BEDROCK_SERVICE,
                )))
            }
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

/// Keys from the config, the environment or the shared files, in the order the module docs give.
fn resolve_credentials(
    config: &BedrockConfig,
    shared: &SharedFiles,
    profile: &str,
) -> Result<AwsCredentials, ProviderError> {
    if let Some(credentials) = &config.credentials {
        return Ok(credentials.clone());
    }
    // An explicitly chosen profile wins over keys in the environment.
    if config.profile.is_none() {
        if let (Some(access_key_id), Some(secret_access_key)) = (
            config.var("AWS_ACCESS_KEY_ID"),
            config.var("AWS_SECRET_ACCESS_KEY"),
        ) {
            return Ok(AwsCredentials {
                access_key_id,
                secret_access_key,
                session_token: config.var("AWS_SESSION_TOKEN"),
            });
        }
    }
    if let (Some(access_key_id), Some(secret_access_key)) = (
        shared.value(profile, "aws_access_key_id"),
        shared.value(profile, "aws_secret_access_key"),
    ) {
        return Ok(AwsCredentials {
            access_key_id,
            secret_access_key,
            session_token: shared.value(profile, "aws_session_token"),
        });
    }
    let unsupported = [
        "credential_process",
        "sso_session",
        "sso_start_url",
        "role_arn",
        "web_identity_token_file",
    ]
    .into_iter()
    .find(|key| shared.value(profile, key).is_some());
    let message = match unsupported {
        Some(key) => format!(
            "the AWS profile \"{profile}\" gets its keys through `{key}`, which robota does not \
             run: export them with `aws configure export-credentials --profile {profile} \
             --format env` (sets AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN), \
             or set AWS_BEARER_TOKEN_BEDROCK"
        ),
        None => format!(
            "no AWS credentials for Bedrock: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY \
             (and AWS_SESSION_TOKEN for temporary keys), AWS_PROFILE naming a profile with keys \
             in {} or {}, or AWS_BEARER_TOKEN_BEDROCK (a Bedrock API key)",
            shared.credentials_path.display(),
            shared.config_path.display()
        ),
    };
    Err(ProviderError::new(
        ProviderErrorKind::Auth,
        PROVIDER_NAME,
        message,
    ))
}

/// The shared AWS `credentials` and `config` files (INI), parsed.
struct SharedFiles {
    credentials_path: PathBuf,
    config_path: PathBuf,
    /// `[name]` sections of the credentials file.
    credentials: HashMap<String, HashMap<String, String>>,
    /// `[default]` and `[profile name]` sections of the config file, by profile name.
    config: HashMap<String, HashMap<String, String>>,
}

impl SharedFiles {
    fn load(config: &BedrockConfig) -> Result<Self, ProviderError> {
        let home = config
            .var("HOME")
            .or_else(|| config.var("USERPROFILE"))
            .map(PathBuf::from)
            .unwrap_or_default();
        let credentials_path = config
            .var("AWS_SHARED_CREDENTIALS_FILE")
            .map(PathBuf::from)
            .unwrap_or_else(|| home.join(".aws").join("credentials"));
        let config_path = config
            .var("AWS_CONFIG_FILE")
            .map(PathBuf::from)
            .unwrap_or_else(|| home.join(".aws").join("config"));
        let credentials = parse_ini(&read_optional(&credentials_path)?, false);
        let config_sections = parse_ini(&read_optional(&config_path)?, true);
        Ok(SharedFiles {
            credentials_path,
            config_path,
            credentials,
            config: config_sections,
        })
    }

    /// `key` of `profile`: the credentials file wins over the config file (as in the SDKs).
    fn value(&self, profile: &str, key: &str) -> Option<String> {
        [&self.credentials, &self.config]
            .into_iter()
            .find_map(|sections| sections.get(profile)?.get(key).cloned())
            .filter(|v| !v.is_empty())
    }
}

/// The largest shared config file read (they are a few hundred bytes).
const MAX_SHARED_FILE_BYTES: u64 = 1024 * 1024;

fn read_optional(path: &Path) -> Result<String, ProviderError> {
    let unreadable = |error: &dyn fmt::Display| {
        ProviderError::new(
            ProviderErrorKind::InvalidRequest,
            PROVIDER_NAME,
            format!("cannot read the AWS file {}: {error}", path.display()),
        )
    };
    match std::fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(String::new()),
        Err(e) => return Err(unreadable(&e)),
        Ok(meta) if meta.len() > MAX_SHARED_FILE_BYTES => {
            return Err(unreadable(&"larger than 1 MiB, not an AWS config file"))
        }
        Ok(_) => {}
    }
    std::fs::read_to_string(path).map_err(|e| unreadable(&e))
}

/// Parses the shared files' INI: `[section]` headers, `key = value` lines, `#`/`;` comments.
/// In the config file (`config_file`) profiles are `[profile name]`, except `[default]`.
/// Indented lines (nested `s3 =` settings) are skipped.
fn parse_ini(text: &str, config_file: bool) -> HashMap<String, HashMap<String, String>> {
    let mut sections: HashMap<String, HashMap<String, String>> = HashMap::new();
    let mut current: Option<String> = None;
    for raw in text.lines() {
        if raw.starts_with([' ', '\t']) {
            continue;
        }
        let line = raw.trim();
        if line.is_empty() || line.starts_with(['#', ';']) {
            continue;
        }
        if let Some(header) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            let header = header.trim();
            current = if !config_file || header == "default" {
                Some(header.to_string())
            } else {
                header
                    .strip_prefix("profile ")
                    .map(|name| name.trim().to_string())
            };
            continue;
        }
        let (Some(section), Some((key, value))) = (&current, line.split_once('=')) else {
            continue;
        };
        sections
            .entry(section.clone())
            .or_default()
            .insert(key.trim().to_ascii_lowercase(), value.trim().to_string());
    }
    sections
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
    fn shared_files_parse_profiles() {
        let credentials = parse_ini(
            "[default]\naws_access_key_id = A\naws_secret_access_key=S\n# c\n[work]\n\
             aws_access_key_id=W\n",
            false,
        );
        assert_eq!(credentials["default"]["aws_access_key_id"], "A");
        assert_eq!(credentials["default"]["aws_secret_access_key"], "S");
        assert_eq!(credentials["work"]["aws_access_key_id"], "W");
        let config = parse_ini(
            "[default]\nregion=us-west-2\n[profile work]\nregion = eu-west-1\ns3 =\n  x = y\n\
             [sso-session s]\nregion=zz\n",
            true,
        );
        assert_eq!(config["default"]["region"], "us-west-2");
        assert_eq!(config["work"]["region"], "eu-west-1");
        assert!(!config.contains_key("s"));
        assert!(!config["work"].contains_key("x"));
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
