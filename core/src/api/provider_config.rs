//! [`ProviderConfig`]: a model provider described as data (`{"type": "anthropic", "model": …}`),
//! the one format every binding accepts.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::error::{ApiError, ApiErrorKind};
use crate::provider::replay::ReplayProvider;
use crate::provider::scripted::{ScriptedProvider, ScriptedTurn};
use crate::provider::{
    AnthropicConfig, AnthropicProvider, CacheTtl, HttpOptions, OpenAiConfig, OpenAiProvider,
    Provider,
};

/// The fields shared by the HTTP providers. Unset `api_key` / `base_url` fall back to the
/// official SDKs' environment variables (`ANTHROPIC_API_KEY`, `ANTHROPIC_BASE_URL`,
/// `OPENAI_API_KEY`, `OPENAI_BASE_URL`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpProviderConfig {
    /// The model id, e.g. `claude-sonnet-4-6` or `gpt-4.1`.
    pub model: String,
    /// The API key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key: Option<String>,
    /// The base URL (without the endpoint path), for compatible servers and proxies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// Output token cap per model call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// Retries of a failed call (429, 5xx, 529, transport) before the error is reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_retries: Option<u32>,
    /// How long a stream may stay silent before the call fails, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_timeout_ms: Option<u64>,
    /// The retry budget: the longest server-requested wait (`retry-after`) sat out before a
    /// retry, in milliseconds (default 60 000). A longer one ends the call at once with a
    /// rate-limit error carrying the wait.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_retry_wait_ms: Option<u64>,
    /// Extra HTTP headers sent with every request.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// Anthropic prompt caching: `cache_control` breakpoints on the tools, the system prompt and
    /// the conversation prefix (default `true`; `false` sends none). OpenAI-compatible servers
    /// cache a repeated prefix on their own: robota keeps the prefix byte-stable, and this field
    /// does not apply to them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_caching: Option<bool>,
    /// How long Anthropic keeps the cached prefix: `"5m"` (the default) or `"1h"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_cache_ttl: Option<String>,
    /// Native structured output for prompts with an `output_format`: OpenAI-compatible
    /// `response_format: {"type": "json_schema", …}` (default: on for OpenAI itself, off for
    /// other base URLs) or Anthropic `output_config.format` (default off). The answer is
    /// validated against the schema either way.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_outputs: Option<bool>,
}

impl HttpProviderConfig {
    fn apply_http(&self, http: &mut HttpOptions) {
        if let Some(retries) = self.max_retries {
            http.max_retries = retries;
        }
        if let Some(ms) = self.idle_timeout_ms {
            http.idle_timeout = Duration::from_millis(ms);
        }
        if let Some(ms) = self.max_retry_wait_ms {
            http.max_retry_wait = Duration::from_millis(ms);
        }
        http.headers
            .extend(self.headers.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
}

/// A model provider as data. JSON form: an object whose `type` picks the variant.
///
/// ```json
/// {"type": "scripted", "turns": [{"text": "Hello"}]}
/// {"type": "replay", "log_path": ".robota/logs/abc.jsonl"}
/// {"type": "anthropic", "model": "claude-sonnet-4-6"}
/// {"type": "openai", "model": "gpt-4.1", "base_url": "http://localhost:11434/v1"}
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum ProviderConfig {
    /// Plays the turns in order, one per model call (tests and demos; no network). Each turn is
    /// a [`ScriptedTurn`].
    Scripted {
        /// The turns.
        turns: Vec<ScriptedTurn>,
        /// The context window to report, in tokens (the default when absent).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        context_window: Option<u64>,
    },
    /// Replays the model answers recorded in a session log (JSONL), offline.
    Replay {
        /// The log file.
        log_path: PathBuf,
    },
    /// The Anthropic Messages API.
    Anthropic(HttpProviderConfig),
    /// An OpenAI-compatible Chat Completions API (OpenAI, DeepSeek, Qwen, Ollama, LM Studio,
    /// vLLM, … via `base_url`).
    Openai(HttpProviderConfig),
    /// Any other provider type robota builds from a settings profile — `gemini`, `bedrock`,
    /// `vertex`, `deepseek`, `qwen`, `gemma` — built exactly as the profile would be (see
    /// [`ProfileProviderConfig`]). Not serializable: read with [`ProviderConfig::from_json_value`].
    #[serde(skip)]
    Profile(ProfileProviderConfig),
}

/// A provider given as a settings profile's fields, for the types without a variant of their
/// own. JSON: `{"type": "gemini", "model": "gemini-2.5-pro", "api_key": "…", "options": {…}}`;
/// `options` are the profile's provider-owned options (Bedrock's `region`/`profile`, Vertex's
/// `project`/`region`, DeepSeek's `thinking`, Qwen's `webSearch`, …).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProfileProviderConfig {
    /// The profile type.
    #[serde(skip)]
    pub kind: String,
    /// The model id; the type's default when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The key (for Bedrock an API key, for Vertex an access token); else the type's
    /// environment variables.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key: Option<String>,
    /// The endpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// Output token cap per model call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// Retries of a failed call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_retries: Option<u32>,
    /// How long a stream may stay silent before the call fails, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_timeout_ms: Option<u64>,
    /// The longest server-requested wait sat out before a retry, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_retry_wait_ms: Option<u64>,
    /// The profile's provider-owned options.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub options: Option<Value>,
}

impl ProfileProviderConfig {
    /// The provider types read as a profile.
    pub const TYPES: [&'static str; 6] =
        ["gemini", "bedrock", "vertex", "deepseek", "qwen", "gemma"];

    fn build(&self) -> Result<Arc<dyn Provider>, ApiError> {
        let mut options = match &self.options {
            None | Some(Value::Null) => serde_json::Map::new(),
            Some(Value::Object(map)) => map.clone(),
            Some(_) => {
                return Err(ApiError::invalid_argument(
                    "invalid provider configuration: `options` must be an object",
                ))
            }
        };
        for (key, value) in [
            ("maxTokens", self.max_tokens.map(u64::from)),
            ("maxRetries", self.max_retries.map(u64::from)),
            ("maxRetryWaitMs", self.max_retry_wait_ms),
        ] {
            if let Some(value) = value {
                options.insert(key.into(), Value::from(value));
            }
        }
        let profile = crate::framework::config::ProviderProfile {
            name: self.kind.clone(),
            kind: self.kind.clone(),
            model: self.model.clone(),
            api_key: self.api_key.clone(),
            api_key_env: None,
            base_url: self.base_url.clone(),
            timeout_ms: self.idle_timeout_ms,
            options: Some(Value::Object(options)),
        };
        let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
        crate::framework::assembly::provider::provider_from_profile(&profile, &cwd, &|name| {
            std::env::var(name).ok()
        })
        .map(|built| built.provider)
        .map_err(|error| ApiError::invalid_argument(error.to_string()))
    }
}

impl ProviderConfig {
    /// The values of `type`.
    pub const TYPES: [&'static str; 4] = ["scripted", "replay", "anthropic", "openai"];

    /// Reads a configuration from a JSON value, with an error that names the problem.
    pub fn from_json_value(value: Value) -> Result<Self, ApiError> {
        if !value.is_object() {
            return Err(ApiError::invalid_json(
                "a provider configuration must be a JSON object with a `type` field \
                 (scripted, replay, anthropic or openai)",
            ));
        }
        if let Some(kind) = value.get("type").and_then(Value::as_str) {
            if !Self::TYPES.contains(&kind) && !ProfileProviderConfig::TYPES.contains(&kind) {
                return Err(ApiError::invalid_argument(format!(
                    "unknown provider type `{kind}` (expected {}, {})",
                    Self::TYPES.join(", "),
                    ProfileProviderConfig::TYPES.join(", ")
                )));
            }
        }
        // Each variant's fields are read on their own (without `type`), so that an error names
        // the field: serde cannot track the path inside an internally tagged enum.
        const WHAT: &str = "invalid provider configuration";
        let mut fields = value.clone();
        let kind = match &mut fields {
            Value::Object(map) => map.remove("type"),
            _ => None,
        };
        let config = match kind.as_ref().and_then(Value::as_str) {
            Some("anthropic") => {
                ProviderConfig::Anthropic(super::fields::from_value(fields, WHAT)?)
            }
            Some("openai") => ProviderConfig::Openai(super::fields::from_value(fields, WHAT)?),
            Some("scripted") => {
                let scripted: ScriptedFields = super::fields::from_value(fields, WHAT)?;
                ProviderConfig::Scripted {
                    turns: scripted.turns,
                    context_window: scripted.context_window,
                }
            }
            Some(kind) if ProfileProviderConfig::TYPES.contains(&kind) => {
                let mut profile: ProfileProviderConfig = super::fields::from_value(fields, WHAT)?;
                profile.kind = kind.to_owned();
                if let Some(base_url) = &profile.base_url {
                    check_base_url(base_url)?;
                }
                ProviderConfig::Profile(profile)
            }
            Some("replay") => {
                let replay: ReplayFields = super::fields::from_value(fields, WHAT)?;
                ProviderConfig::Replay {
                    log_path: replay.log_path,
                }
            }
            _ => super::fields::from_value(value, WHAT)?,
        };
        config.validate()?;
        Ok(config)
    }

    /// Checks what serde cannot: a base URL is an `http://` or `https://` URL with a host, a
    /// model is named.
    fn validate(&self) -> Result<(), ApiError> {
        let (ProviderConfig::Anthropic(http) | ProviderConfig::Openai(http)) = self else {
            return Ok(());
        };
        if http.model.trim().is_empty() {
            return Err(ApiError::invalid_argument(
                "invalid provider configuration: `model` must name a model (e.g. \
                 claude-sonnet-4-6, gpt-4.1)",
            ));
        }
        if let Some(base_url) = &http.base_url {
            check_base_url(base_url)?;
        }
        Ok(())
    }

    /// Reads a configuration from JSON text.
    pub fn from_json(text: &str) -> Result<Self, ApiError> {
        let value: Value = serde_json::from_str(text)
            .map_err(|e| ApiError::invalid_json(format!("invalid provider configuration: {e}")))?;
        Self::from_json_value(value)
    }

    /// Creates the provider. HTTP providers build their client here, so call this inside the
    /// tokio runtime the sessions will use.
    pub fn build(&self) -> Result<Arc<dyn Provider>, ApiError> {
        let provider_error =
            |e: &dyn std::fmt::Display| ApiError::new(ApiErrorKind::Provider, e.to_string());
        match self {
            ProviderConfig::Scripted {
                turns,
                context_window,
            } => {
                let mut provider = ScriptedProvider::new(turns.clone());
                if let Some(window) = context_window {
                    provider = provider.with_context_window(*window);
                }
                Ok(Arc::new(provider))
            }
            ProviderConfig::Replay { log_path } => {
                let provider = ReplayProvider::open(log_path).map_err(|e| {
                    ApiError::invalid_argument(format!(
                        "cannot replay `{}`: {e}",
                        log_path.display()
                    ))
                })?;
                Ok(Arc::new(provider))
            }
            ProviderConfig::Anthropic(c) => {
                let mut config = AnthropicConfig::from_env(c.model.clone());
                config.api_key = c.api_key.clone().or(config.api_key);
                config.base_url = c.base_url.clone().or(config.base_url);
                config.max_tokens = c.max_tokens;
                c.apply_http(&mut config.http);
                let ttl = match c.prompt_cache_ttl.as_deref() {
                    None => CacheTtl::default(),
                    Some(value) => CacheTtl::parse(value).ok_or_else(|| {
                        ApiError::invalid_argument(format!(
                            "invalid prompt_cache_ttl `{value}`: use \"5m\" (the default) or \"1h\""
                        ))
                    })?,
                };
                match c.prompt_caching {
                    Some(false) => config.prompt_caching = None,
                    Some(true) => config.prompt_caching = Some(ttl),
                    // Unset: on, unless DISABLE_PROMPT_CACHING turned it off.
                    None => config.prompt_caching = config.prompt_caching.map(|_| ttl),
                }
                config.structured_outputs = c.structured_outputs.unwrap_or(false);
                let provider = AnthropicProvider::new(config).map_err(|e| provider_error(&e))?;
                Ok(Arc::new(provider))
            }
            ProviderConfig::Profile(profile) => profile.build(),
            ProviderConfig::Openai(c) => {
                let mut config = OpenAiConfig::from_env(c.model.clone());
                config.api_key = c.api_key.clone().or(config.api_key);
                config.base_url = c.base_url.clone().or(config.base_url);
                config.max_tokens = c.max_tokens;
                config.structured_outputs = c.structured_outputs;
                c.apply_http(&mut config.http);
                let provider = OpenAiProvider::new(config).map_err(|e| provider_error(&e))?;
                Ok(Arc::new(provider))
            }
        }
    }
}

/// The fields of [`ProviderConfig::Scripted`], read on their own.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ScriptedFields {
    turns: Vec<ScriptedTurn>,
    #[serde(default)]
    context_window: Option<u64>,
}

/// The fields of [`ProviderConfig::Replay`], read on their own.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReplayFields {
    log_path: PathBuf,
}

/// A base URL must be absolute `http(s)://host[:port][/path]`: `localhost:11434/v1` (no scheme)
/// would otherwise fail only at the first model call, as a confusing network error.
fn check_base_url(base_url: &str) -> Result<(), ApiError> {
    let problem = match url::Url::parse(base_url.trim()) {
        // `localhost:8080/v1` parses with the scheme `localhost`.
        _ if !base_url.contains("://") => {
            Some("it has no scheme; start it with http:// or https://".into())
        }
        Ok(url) if !matches!(url.scheme(), "http" | "https") => Some(format!(
            "its scheme is `{}`; use http:// or https://",
            url.scheme()
        )),
        Ok(url) if url.host_str().is_none_or(str::is_empty) => Some("it has no host".into()),
        Ok(_) => None,
        Err(url::ParseError::RelativeUrlWithoutBase) => {
            Some("it has no scheme; start it with http:// or https://".into())
        }
        Err(e) => Some(e.to_string()),
    };
    match problem {
        None => Ok(()),
        Some(problem) => Err(ApiError::invalid_argument(format!(
            "invalid provider configuration: `base_url` `{base_url}` is not a usable URL: \
             {problem} (e.g. https://api.example.com)"
        ))),
    }
}
