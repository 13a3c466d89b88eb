//! Building a [`Provider`] from resolved settings, for hosts that want the CLI's behaviour: the
//! active profile (`providers[currentProvider]` or the legacy `provider`) when settings select
//! one, else the standard environment variables.
//!
//! Profile types: `anthropic`; `openai` and the OpenAI-compatible `deepseek`/`qwen`/`gemma`
//! (any of them at a `baseURL`, e.g. Ollama); `gemini` (the Gemini API; key from the profile,
//! `GOOGLE_API_KEY` or `GEMINI_API_KEY`, base URL from `baseURL` or `GOOGLE_GEMINI_BASE_URL`);
//! `scripted` (turns in `options.turns`, or a JSON
//! file named by `options.file`, relative to the project directory); `replay` (a recorded session
//! log named by `options.log`). Provider-owned `options` also accept `maxRetries`,
//! `maxRetryWaitMs` (the longest `retry-after` sat out, default 60 000) and `maxTokens` for the
//! HTTP providers, and for `anthropic` `promptCaching` (default `true`; the
//! `DISABLE_PROMPT_CACHING` environment variable turns it off where the profile does not say)
//! and `promptCacheTtl` (`"5m"`, the default, or `"1h"`), and `serverTools` (the Anthropic
//! tools the API runs itself: `["web_search", "web_fetch", "code_execution"]`, or objects with
//! their options such as `{"name": "web_search", "maxUses": 3}`; see
//! [`ServerTool::from_setting`]). An `openai` profile picks its wire
//! API with `options.api`: `"chat"` (Chat Completions, the default) or `"responses"` (the
//! Responses API, `POST {baseURL}/responses`).
//!
//! The OpenAI-compatible types bring their server's defaults and behaviour (see
//! `provider/openai_compat.rs`): `deepseek` (base URL `https://api.deepseek.com`, key
//! `DEEPSEEK_API_KEY`, model `deepseek-chat`; `options.thinking` true/false and
//! `options.reasoningEffort` `"low"`/`"high"`/`"max"`), `qwen` (DashScope's compatible mode at
//! `https://dashscope-intl.aliyuncs.com/compatible-mode/v1`, key `DASHSCOPE_API_KEY`, model
//! `qwen-plus`; `options.webSearch` true or a `search_options` object, which turns on
//! `enable_search`; `options.builtInWebTools` `{"webSearch": true, "webFetch": true}`, which
//! declares Qwen's built-in `web_search` and `web_extractor` tools on DashScope's Responses API
//! instead, at the same host's `/api/v2/apps/protocols/compatible-mode/v1`), `gemma` (a local server,
//! default `http://localhost:1234/v1` (LM Studio) with a placeholder key; the profile must name
//! the model).
//!
//! `bedrock` (Anthropic models on Amazon Bedrock; `options.region`, `options.profile`; `apiKey`
//! is a Bedrock API key) and `vertex` (Anthropic models on Vertex AI; `options.project`,
//! `options.region`) take the same token and caching options as `anthropic`; without a profile,
//! `CLAUDE_CODE_USE_BEDROCK=1` / `CLAUDE_CODE_USE_VERTEX=1` select them (Claude Code's
//! switches), with credentials from the AWS or Google environment.
//!
//! Errors say what to set: a missing key names the variable (or the profile key) to set.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use crate::framework::config::{ProviderProfile, Settings};
use crate::provider::anthropic::{
    AnthropicConfig, AnthropicProvider, CacheTtl, ServerTool, DEFAULT_BASE_URL as ANTHROPIC_URL,
};
use crate::provider::gemini::{
    GeminiConfig, GeminiProvider, DEFAULT_BASE_URL as GEMINI_URL, DEFAULT_MODEL as GEMINI_MODEL,
};
use crate::provider::openai::{OpenAiConfig, OpenAiProvider, DEFAULT_BASE_URL as OPENAI_URL};
use crate::provider::openai_responses::OpenAiResponsesProvider;
use crate::provider::replay::ReplayProvider;
use crate::provider::scripted::{ScriptedProvider, ScriptedTurn};
use crate::provider::{
    BedrockConfig, BedrockProvider, HttpOptions, Provider, VertexConfig, VertexProvider,
};
use crate::provider::{Flavor, QwenWebTools};

/// The model used with `ANTHROPIC_API_KEY` when neither settings nor the host name one.
pub const DEFAULT_ANTHROPIC_MODEL: &str = "claude-sonnet-4-5";
/// The model used with `OPENAI_API_KEY`/`OPENAI_BASE_URL` when neither settings nor the host
/// name one.
pub const DEFAULT_OPENAI_MODEL: &str = "gpt-4.1";

/// A provider built from settings, with what a host needs to explain failures.
pub struct BuiltProvider {
    /// The provider.
    pub provider: Arc<dyn Provider>,
    /// The profile it came from (`None`: built from environment variables).
    pub profile: Option<String>,
    /// The provider type (`anthropic`, `openai`, `scripted`, `replay`, …).
    pub kind: String,
    /// The model id asked for.
    pub model: String,
    /// The endpoint for HTTP providers, so a network failure can name the URL that did not answer.
    pub base_url: Option<String>,
}

impl std::fmt::Debug for BuiltProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BuiltProvider")
            .field("provider", &self.provider.name())
            .field("profile", &self.profile)
            .field("kind", &self.kind)
            .field("model", &self.model)
            .field("base_url", &self.base_url)
            .finish()
    }
}

/// Why no provider could be built. Each message says what to change.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FromSettingsError {
    /// No key for a provider that needs one.
    #[error("{message}")]
    MissingApiKey {
        /// The environment variable that would supply it.
        variable: String,
        /// The full explanation.
        message: String,
    },
    /// Neither settings nor the environment name a provider.
    #[error(
        "no model provider configured: set ANTHROPIC_API_KEY (or OPENAI_API_KEY / \
         OPENAI_BASE_URL, or GEMINI_API_KEY), or select a settings profile with `currentProvider` (see `providers`)"
    )]
    NoProvider,
    /// A profile field is missing or malformed.
    #[error("provider profile \"{profile}\": {message}")]
    Profile {
        /// The profile key.
        profile: String,
        /// What is wrong and how to fix it.
        message: String,
    },
    /// A type robota cannot construct (a host may register its own).
    #[error(
        "provider profile \"{profile}\" has type \"{kind}\", which robota cannot build \
         (built in: anthropic, bedrock, vertex, openai, gemini, deepseek, qwen, gemma, scripted, \
          replay)"
    )]
    UnsupportedType {
        /// The profile key.
        profile: String,
        /// Its `type`.
        kind: String,
    },
    /// The provider rejected its configuration (bad header characters, …).
    #[error("{0}")]
    Provider(String),
}

/// Builds the provider `settings` select. `project_dir` anchors relative script and log paths;
/// `env` supplies `ANTHROPIC_*`/`OPENAI_*` when neither the profile nor settings set them (pass
/// `|name| std::env::var(name).ok()` for the real process). `settings.model` (or the profile's
/// model) picks the model.
pub fn provider_from_settings(
    settings: &Settings,
    project_dir: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<BuiltProvider, FromSettingsError> {
    let var = |name: &str| env(name).filter(|value| !value.trim().is_empty());
    let model = settings.effective_model().map(str::to_owned);
    match &settings.provider {
        Some(resolved) => from_profile(&resolved.profile, model, project_dir, &var),
        None => from_environment(model, &var),
    }
}

fn from_environment(
    model: Option<String>,
    var: &dyn Fn(&str) -> Option<String>,
) -> Result<BuiltProvider, FromSettingsError> {
    // Claude Code's cloud switches first: they say which of the keys present to use.
    if var("CLAUDE_CODE_USE_BEDROCK").is_some_and(|v| switch_on(&v)) {
        return build_bedrock(&bare_profile("environment", "bedrock"), model, var, None);
    }
    if var("CLAUDE_CODE_USE_VERTEX").is_some_and(|v| switch_on(&v)) {
        return build_vertex(&bare_profile("environment", "vertex"), model, var, None);
    }
    // Anthropic first (the project's reference provider), then OpenAI-compatible.
    if var("ANTHROPIC_API_KEY").is_some() {
        return build_anthropic(&bare_profile("environment", "anthropic"), model, var, None);
    }
    if var("OPENAI_API_KEY").is_some() || var("OPENAI_BASE_URL").is_some() {
        return build_openai(&bare_profile("environment", "openai"), model, var, None);
    }
    if var("GOOGLE_API_KEY").is_some() || var("GEMINI_API_KEY").is_some() {
        return build_gemini(&bare_profile("environment", "gemini"), model, var, None);
    }
    Err(FromSettingsError::NoProvider)
}

/// A profile with only a name and type: everything else comes from the environment.
fn bare_profile(name: &str, kind: &str) -> ProviderProfile {
    ProviderProfile {
        name: name.into(),
        kind: kind.into(),
        model: None,
        api_key: None,
        api_key_env: None,
        base_url: None,
        timeout_ms: None,
        options: None,
    }
}

/// Builds the provider of one settings profile (what `currentProvider` naming it would select),
/// e.g. to probe it. The profile's own `model` (or its type's default) is used.
pub fn provider_from_profile(
    profile: &ProviderProfile,
    project_dir: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<BuiltProvider, FromSettingsError> {
    let var = |name: &str| env(name).filter(|value| !value.trim().is_empty());
    from_profile(profile, profile.model.clone(), project_dir, &var)
}

fn from_profile(
    profile: &ProviderProfile,
    model: Option<String>,
    project_dir: &Path,
    var: &dyn Fn(&str) -> Option<String>,
) -> Result<BuiltProvider, FromSettingsError> {
    let named = Some(profile.name.clone());
    match profile.kind.as_str() {
        "anthropic" => build_anthropic(profile, model, var, named),
        "bedrock" => build_bedrock(profile, model, var, named),
        "vertex" => build_vertex(profile, model, var, named),
        "openai" | "deepseek" | "qwen" | "gemma" => build_openai(profile, model, var, named),
        "gemini" => build_gemini(profile, model, var, named),
        "scripted" => {
            let turns = scripted_turns(profile, project_dir)?;
            let provider: Arc<dyn Provider> = Arc::new(ScriptedProvider::new(turns));
            Ok(BuiltProvider {
                provider,
                profile: named,
                kind: profile.kind.clone(),
                model: model.unwrap_or_else(|| "scripted".into()),
                base_url: None,
            })
        }
        "replay" => {
            let path = option_path(profile, "log", project_dir)?.ok_or_else(|| {
                FromSettingsError::Profile {
                    profile: profile.name.clone(),
                    message: "a replay profile needs `options.log`: the recorded session log \
                              (.robota/logs/<id>.jsonl) to play back"
                        .into(),
                }
            })?;
            Ok(BuiltProvider {
                provider: Arc::new(open_replay(&path)?),
                profile: named,
                kind: profile.kind.clone(),
                model: model.unwrap_or_else(|| "replay".into()),
                base_url: None,
            })
        }
        other => Err(FromSettingsError::UnsupportedType {
            profile: profile.name.clone(),
            kind: other.to_owned(),
        }),
    }
}

/// Opens a recorded session log for offline replay, with an error naming the file.
pub fn open_replay(path: &Path) -> Result<ReplayProvider, FromSettingsError> {
    ReplayProvider::open(path).map_err(|error| FromSettingsError::Profile {
        profile: "replay".into(),
        message: format!("cannot replay {}: {error}", path.display()),
    })
}

fn build_anthropic(
    profile: &ProviderProfile,
    model: Option<String>,
    var: &dyn Fn(&str) -> Option<String>,
    named: Option<String>,
) -> Result<BuiltProvider, FromSettingsError> {
    let model = model.unwrap_or_else(|| DEFAULT_ANTHROPIC_MODEL.into());
    let api_key = profile.api_key.clone().or_else(|| var("ANTHROPIC_API_KEY"));
    let Some(api_key) = api_key else {
        return Err(missing_key(profile, "ANTHROPIC_API_KEY", "Anthropic"));
    };
    let base_url = profile
        .base_url
        .clone()
        .or_else(|| var("ANTHROPIC_BASE_URL"));
    let mut config = AnthropicConfig::new(model.clone());
    config.api_key = Some(api_key);
    config.base_url = base_url.clone();
    config.max_tokens = option_u64(profile, "maxTokens")?.map(saturate_u32);
    config.http = http_options(profile)?;
    config.prompt_caching = prompt_caching(profile, var)?;
    if let Some(tools) = option(profile, "serverTools").filter(|v| !v.is_null()) {
        config.server_tools = ServerTool::list_from_setting(&tools).map_err(|message| {
            FromSettingsError::Profile {
                profile: profile.name.clone(),
                message,
            }
        })?;
    }
    let provider =
        AnthropicProvider::new(config).map_err(|e| FromSettingsError::Provider(e.to_string()))?;
    Ok(BuiltProvider {
        provider: Arc::new(provider),
        profile: named,
        kind: profile.kind.clone(),
        model,
        base_url: Some(base_url.unwrap_or_else(|| ANTHROPIC_URL.into())),
    })
}

fn build_openai(
    profile: &ProviderProfile,
    model: Option<String>,
    var: &dyn Fn(&str) -> Option<String>,
    named: Option<String>,
) -> Result<BuiltProvider, FromSettingsError> {
    let (model, api_key, base_url) = match compat_defaults(&profile.kind) {
        None => {
            let model = model.unwrap_or_else(|| DEFAULT_OPENAI_MODEL.into());
            let api_key = profile.api_key.clone().or_else(|| var("OPENAI_API_KEY"));
            let base_url = profile.base_url.clone().or_else(|| var("OPENAI_BASE_URL"));
            // A key is optional only at a custom endpoint (local servers such as Ollama need none).
            if api_key.is_none() && base_url.is_none() {
                return Err(missing_key(profile, "OPENAI_API_KEY", "OpenAI"));
            }
            (model, api_key, base_url)
        }
        Some(defaults) => {
            let model = model
                .or_else(|| defaults.model.map(str::to_owned))
                .ok_or_else(|| FromSettingsError::Profile {
                    profile: profile.name.clone(),
                    message: format!(
                        "a {} profile must name its model (`model`, e.g. the id the local \
                         server lists, such as \"google/gemma-3-12b\")",
                        profile.kind
                    ),
                })?;
            let base_url = profile.base_url.clone();
            let api_key = match (profile.api_key.clone(), defaults.key_var) {
                (Some(key), _) => Some(key),
                (None, Some(variable)) => match var(variable) {
                    Some(key) => Some(key),
                    // A local server at a custom URL may need no key.
                    None if base_url.is_some() => None,
                    None => return Err(missing_key(profile, variable, defaults.vendor)),
                },
                (None, None) => Some(LOCAL_PLACEHOLDER_KEY.to_owned()),
            };
            let base_url = Some(base_url.unwrap_or_else(|| defaults.base_url.to_owned()));
            (model, api_key, base_url)
        }
    };
    let mut config = OpenAiConfig::new(model.clone());
    config.api_key = api_key;
    config.base_url = base_url.clone();
    config.max_tokens = option_u64(profile, "maxTokens")?.map(saturate_u32);
    config.http = http_options(profile)?;
    if profile.kind != "openai" {
        config.name = profile.kind.clone();
    }
    config.flavor = flavor(profile)?;
    let (provider, base_url): (Arc<dyn Provider>, String) =
        if openai_api(profile, &config.flavor)? == OpenAiApi::Responses {
            let provider = OpenAiResponsesProvider::new(config)
                .map_err(|e| FromSettingsError::Provider(e.to_string()))?;
            // The provider may move the base (DashScope serves Responses on another path).
            let base_url = provider.base_url().to_owned();
            (Arc::new(provider), base_url)
        } else {
            let provider = OpenAiProvider::new(config)
                .map_err(|e| FromSettingsError::Provider(e.to_string()))?;
            (
                Arc::new(provider),
                base_url.unwrap_or_else(|| OPENAI_URL.into()),
            )
        };
    Ok(BuiltProvider {
        provider,
        profile: named,
        kind: profile.kind.clone(),
        model,
        base_url: Some(base_url),
    })
}

fn build_gemini(
    profile: &ProviderProfile,
    model: Option<String>,
    var: &dyn Fn(&str) -> Option<String>,
    named: Option<String>,
) -> Result<BuiltProvider, FromSettingsError> {
    let model = model.unwrap_or_else(|| GEMINI_MODEL.into());
    // The official SDK's order: GOOGLE_API_KEY wins when both are set.
    let api_key = profile
        .api_key
        .clone()
        .or_else(|| var("GOOGLE_API_KEY"))
        .or_else(|| var("GEMINI_API_KEY"));
    let base_url = profile
        .base_url
        .clone()
        .or_else(|| var("GOOGLE_GEMINI_BASE_URL"));
    if api_key.is_none() && base_url.is_none() {
        return Err(missing_key(profile, "GEMINI_API_KEY", "Gemini"));
    }
    let mut config = GeminiConfig::new(model.clone());
    config.api_key = api_key;
    config.base_url = base_url.clone();
    config.max_tokens = option_u64(profile, "maxTokens")?.map(saturate_u32);
    config.http = http_options(profile)?;
    let provider =
        GeminiProvider::new(config).map_err(|e| FromSettingsError::Provider(e.to_string()))?;
    Ok(BuiltProvider {
        provider: Arc::new(provider),
        profile: named,
        kind: profile.kind.clone(),
        model,
        base_url: Some(base_url.unwrap_or_else(|| GEMINI_URL.into())),
    })
}

/// Sent as the key to local servers that need none (LM Studio and Ollama ignore it).
const LOCAL_PLACEHOLDER_KEY: &str = "local";

/// The defaults of an OpenAI-compatible profile type.
struct CompatDefaults {
    /// The environment variable holding the key; `None`: a local server, no key needed.
    key_var: Option<&'static str>,
    base_url: &'static str,
    /// `None`: the profile must name one.
    model: Option<&'static str>,
    vendor: &'static str,
}

fn compat_defaults(kind: &str) -> Option<CompatDefaults> {
    match kind {
        "deepseek" => Some(CompatDefaults {
            key_var: Some("DEEPSEEK_API_KEY"),
            base_url: "https://api.deepseek.com",
            model: Some("deepseek-chat"),
            vendor: "DeepSeek",
        }),
        "qwen" => Some(CompatDefaults {
            key_var: Some("DASHSCOPE_API_KEY"),
            base_url: "https://dashscope-intl.aliyuncs.com/compatible-mode/v1",
            model: Some("qwen-plus"),
            vendor: "DashScope (Qwen)",
        }),
        "gemma" => Some(CompatDefaults {
            key_var: None,
            base_url: "http://localhost:1234/v1",
            model: None,
            vendor: "Gemma",
        }),
        _ => None,
    }
}

/// The server behaviour of an OpenAI-compatible profile, from its type and options.
fn flavor(profile: &ProviderProfile) -> Result<Flavor, FromSettingsError> {
    let invalid = |message: &str| FromSettingsError::Profile {
        profile: profile.name.clone(),
        message: message.to_owned(),
    };
    Ok(match profile.kind.as_str() {
        "deepseek" => Flavor::DeepSeek {
            thinking: match option(profile, "thinking") {
                None | Some(Value::Null) => None,
                Some(Value::Bool(on)) => Some(on),
                Some(_) => return Err(invalid("`options.thinking` must be true or false")),
            },
            reasoning_effort: match option(profile, "reasoningEffort") {
                None | Some(Value::Null) => None,
                Some(Value::String(effort))
                    if matches!(effort.as_str(), "low" | "high" | "max") =>
                {
                    Some(effort)
                }
                Some(_) => {
                    return Err(invalid(
                        "`options.reasoningEffort` must be \"low\", \"high\" or \"max\"",
                    ))
                }
            },
        },
        "qwen" => {
            let web_tools = qwen_web_tools(profile)?;
            let web_search =
                match option(profile, "webSearch") {
                    None | Some(Value::Null) => None,
                    Some(_) if web_tools.any() => return Err(invalid(
                        "`options.webSearch` (Chat Completions `enable_search`) cannot be used \
                         with `options.builtInWebTools` (the Responses API's built-in tools); \
                         remove it and use `builtInWebTools.webSearch`",
                    )),
                    Some(value @ (Value::Bool(_) | Value::Object(_))) => Some(value),
                    Some(_) => {
                        return Err(invalid(
                            "`options.webSearch` must be true, false or an object of DashScope \
                         `search_options`",
                        ))
                    }
                };
            Flavor::Qwen {
                web_search,
                web_tools,
            }
        }
        "gemma" => Flavor::Gemma,
        _ => Flavor::Generic,
    })
}

/// A Qwen profile's `options.builtInWebTools`: `{"webSearch": bool, "webFetch": bool}`, both
/// optional. Web fetch (DashScope's web extractor) runs only alongside web search, so it turns
/// search on unless the profile turns search off, which is refused.
fn qwen_web_tools(profile: &ProviderProfile) -> Result<QwenWebTools, FromSettingsError> {
    let invalid = |message: String| FromSettingsError::Profile {
        profile: profile.name.clone(),
        message,
    };
    let entries = match option(profile, "builtInWebTools") {
        None | Some(Value::Null) => return Ok(QwenWebTools::default()),
        Some(Value::Object(entries)) => entries,
        Some(_) => {
            return Err(invalid(
                "`options.builtInWebTools` must be an object such as {\"webSearch\": true, \
                 \"webFetch\": true}"
                    .into(),
            ))
        }
    };
    let mut search = None;
    let mut fetch = false;
    for (key, value) in &entries {
        let on = match value {
            Value::Bool(on) => *on,
            Value::Null => false,
            _ => {
                return Err(invalid(format!(
                    "`options.builtInWebTools.{key}` must be true or false"
                )))
            }
        };
        match key.as_str() {
            "webSearch" => search = Some(on),
            "webFetch" => fetch = on,
            _ => {
                return Err(invalid(format!(
                    "`options.builtInWebTools` has no tool \"{key}\" (known: webSearch, webFetch)"
                )))
            }
        }
    }
    if fetch && search == Some(false) {
        return Err(invalid(
            "`options.builtInWebTools`: webFetch needs webSearch (DashScope's web extractor \
             runs only alongside web search); set webSearch to true or leave it out"
                .into(),
        ));
    }
    Ok(QwenWebTools {
        web_search: search.unwrap_or(fetch),
        web_fetch: fetch,
    })
}

/// The wire API of an OpenAI-compatible profile (`options.api`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OpenAiApi {
    /// Chat Completions (`POST {base}/chat/completions`), the default.
    Chat,
    /// The Responses API (`POST {base}/responses`).
    Responses,
}

/// `options.api`, or for a flavor with built-in web tools on (which exist only there) the
/// Responses API; asking for Chat Completions with them is refused.
fn openai_api(profile: &ProviderProfile, flavor: &Flavor) -> Result<OpenAiApi, FromSettingsError> {
    let web_tools = flavor.web_tools_declared();
    match option(profile, "api") {
        None | Some(Value::Null) if web_tools => Ok(OpenAiApi::Responses),
        Some(Value::String(api)) if api == "chat" && web_tools => Err(FromSettingsError::Profile {
            profile: profile.name.clone(),
            message: "`options.builtInWebTools` needs the Responses API (DashScope has the \
                          built-in web tools only there); remove `options.api` or set it to \
                          \"responses\""
                .into(),
        }),
        None | Some(Value::Null) => Ok(OpenAiApi::Chat),
        Some(Value::String(api)) if api == "chat" => Ok(OpenAiApi::Chat),
        Some(Value::String(api)) if api == "responses" => Ok(OpenAiApi::Responses),
        Some(_) => Err(FromSettingsError::Profile {
            profile: profile.name.clone(),
            message: "`options.api` must be \"chat\" (Chat Completions, the default) or \
                      \"responses\" (the Responses API)"
                .into(),
        }),
    }
}

fn missing_key(profile: &ProviderProfile, default_var: &str, vendor: &str) -> FromSettingsError {
    // The profile's own `$ENV:NAME` reference wins: that is the variable the user chose.
    let variable = profile
        .api_key_env
        .clone()
        .unwrap_or_else(|| default_var.to_owned());
    let message = if profile.name == "environment" {
        format!("no {vendor} API key: set the {variable} environment variable")
    } else {
        format!(
            "no {vendor} API key for provider profile \"{}\": set the {variable} environment \
             variable or the profile's `apiKey`",
            profile.name
        )
    };
    FromSettingsError::MissingApiKey { variable, message }
}

fn http_options(profile: &ProviderProfile) -> Result<HttpOptions, FromSettingsError> {
    let mut http = HttpOptions::default();
    if let Some(ms) = profile.timeout_ms {
        http.idle_timeout = Duration::from_millis(ms);
    }
    if let Some(retries) = option_u64(profile, "maxRetries")? {
        http.max_retries = saturate_u32(retries);
    }
    if let Some(ms) = option_u64(profile, "maxRetryWaitMs")? {
        http.max_retry_wait = Duration::from_millis(ms);
    }
    Ok(http)
}

fn saturate_u32(value: u64) -> u32 {
    u32::try_from(value).unwrap_or(u32::MAX)
}

fn option(profile: &ProviderProfile, key: &str) -> Option<Value> {
    profile
        .options
        .as_ref()
        .and_then(|options| options.get(key))
        .cloned()
}

fn option_u64(profile: &ProviderProfile, key: &str) -> Result<Option<u64>, FromSettingsError> {
    match option(profile, key) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => value
            .as_u64()
            .map(Some)
            .ok_or_else(|| FromSettingsError::Profile {
                profile: profile.name.clone(),
                message: format!("`options.{key}` must be a non-negative integer"),
            }),
    }
}

/// Anthropic prompt caching from `options.promptCaching` (default true) and
/// `options.promptCacheTtl` (`"5m"` default, or `"1h"`); `DISABLE_PROMPT_CACHING` (Claude Code's
/// variable) turns it off unless the profile turns it on explicitly.
fn prompt_caching(
    profile: &ProviderProfile,
    var: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<CacheTtl>, FromSettingsError> {
    let invalid = |message: &str| FromSettingsError::Profile {
        profile: profile.name.clone(),
        message: message.to_owned(),
    };
    let enabled = match option(profile, "promptCaching") {
        None | Some(Value::Null) => var("DISABLE_PROMPT_CACHING")
            .is_none_or(|v| matches!(v.trim(), "0" | "false" | "FALSE" | "False")),
        Some(Value::Bool(on)) => on,
        Some(_) => return Err(invalid("`options.promptCaching` must be true or false")),
    };
    let ttl = match option(profile, "promptCacheTtl") {
        None | Some(Value::Null) => CacheTtl::default(),
        Some(Value::String(ttl)) => CacheTtl::parse(&ttl).ok_or_else(|| {
            invalid("`options.promptCacheTtl` must be \"5m\" (the default) or \"1h\"")
        })?,
        Some(_) => {
            return Err(invalid(
                "`options.promptCacheTtl` must be \"5m\" (the default) or \"1h\"",
            ))
        }
    };
    Ok(enabled.then_some(ttl))
}

fn option_path(
    profile: &ProviderProfile,
    key: &str,
    project_dir: &Path,
) -> Result<Option<PathBuf>, FromSettingsError> {
    match option(profile, key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(path)) => Ok(Some(project_dir.join(path))),
        Some(_) => Err(FromSettingsError::Profile {
            profile: profile.name.clone(),
            message: format!("`options.{key}` must be a path (a string)"),
        }),
    }
}

fn scripted_turns(
    profile: &ProviderProfile,
    project_dir: &Path,
) -> Result<Vec<ScriptedTurn>, FromSettingsError> {
    let invalid = |message: String| FromSettingsError::Profile {
        profile: profile.name.clone(),
        message,
    };
    let turns = match (
        option(profile, "turns"),
        option_path(profile, "file", project_dir)?,
    ) {
        (Some(turns), _) => turns,
        (None, Some(path)) => {
            let text = crate::files::read_regular_text(&path, &crate::files::SCRIPTED_TURNS_FILE)
                .map_err(|error| invalid(error.to_string()))?;
            let value: Value = serde_json::from_str(&text)
                .map_err(|error| invalid(format!("{} is not JSON: {error}", path.display())))?;
            // A script file is either the turns array or an object holding `turns`.
            match value {
                Value::Object(mut object) => object.remove("turns").unwrap_or(Value::Null),
                other => other,
            }
        }
        (None, None) => {
            return Err(invalid(
                "a scripted profile needs `options.turns` (an array of turns) or \
                 `options.file` (a JSON file of turns)"
                    .into(),
            ))
        }
    };
    serde_json::from_value(turns)
        .map_err(|error| invalid(format!("the scripted turns are not valid: {error}")))
}

/// The model used on Bedrock when neither settings nor the host name one (the global
/// cross-region inference profile).
pub const DEFAULT_BEDROCK_MODEL: &str = "global.anthropic.claude-sonnet-4-5-20250929-v1:0";
/// The model used on Vertex AI when neither settings nor the host name one.
pub const DEFAULT_VERTEX_MODEL: &str = "claude-sonnet-4-5@20250929";

/// Whether a `CLAUDE_CODE_USE_*` switch is on (`1`, `true`, …; not `0`/`false`).
fn switch_on(value: &str) -> bool {
    !matches!(
        value.trim().to_ascii_lowercase().as_str(),
        "" | "0" | "false" | "no" | "off"
    )
}

/// A string option of the profile (`options.<key>`).
fn option_string(
    profile: &ProviderProfile,
    key: &str,
) -> Result<Option<String>, FromSettingsError> {
    match option(profile, key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) if !text.trim().is_empty() => Ok(Some(text)),
        Some(_) => Err(FromSettingsError::Profile {
            profile: profile.name.clone(),
            message: format!("`options.{key}` must be a non-empty string"),
        }),
    }
}

/// The variables `names` read once through `var`, as an owned lookup a provider can keep.
fn env_snapshot(
    var: &dyn Fn(&str) -> Option<String>,
    names: &[&str],
) -> impl Fn(&str) -> Option<String> + Send + Sync + 'static {
    let values: std::collections::HashMap<String, String> = names
        .iter()
        .filter_map(|name| Some((name.to_string(), var(name)?)))
        .collect();
    move |name| values.get(name).cloned()
}

/// What the `bedrock` and `vertex` profiles share with `anthropic`: output cap, network
/// settings and prompt caching.
struct CloudOptions {
    max_tokens: Option<u32>,
    http: HttpOptions,
    prompt_caching: Option<CacheTtl>,
}

impl CloudOptions {
    fn of(
        profile: &ProviderProfile,
        var: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, FromSettingsError> {
        Ok(CloudOptions {
            max_tokens: option_u64(profile, "maxTokens")?.map(saturate_u32),
            http: http_options(profile)?,
            prompt_caching: prompt_caching(profile, var)?,
        })
    }
}

/// The [`BuiltProvider`] for a cloud provider that was (or was not) built.
fn built_cloud<P: Provider + 'static>(
    profile: &ProviderProfile,
    named: Option<String>,
    model: String,
    provider: Result<P, crate::message::ProviderError>,
    base_url: impl Fn(&P) -> &str,
) -> Result<BuiltProvider, FromSettingsError> {
    let provider = provider.map_err(|e| cloud_error(profile, e))?;
    let base_url = base_url(&provider).to_string();
    Ok(BuiltProvider {
        provider: Arc::new(provider),
        profile: named,
        kind: profile.kind.clone(),
        model,
        base_url: Some(base_url),
    })
}

fn build_bedrock(
    profile: &ProviderProfile,
    model: Option<String>,
    var: &dyn Fn(&str) -> Option<String>,
    named: Option<String>,
) -> Result<BuiltProvider, FromSettingsError> {
    let model = model.unwrap_or_else(|| DEFAULT_BEDROCK_MODEL.into());
    let options = CloudOptions::of(profile, var)?;
    let config = BedrockConfig {
        region: option_string(profile, "region")?,
        profile: option_string(profile, "profile")?,
        bearer_token: profile.api_key.clone(),
        base_url: profile.base_url.clone(),
        max_tokens: options.max_tokens,
        http: options.http,
        prompt_caching: options.prompt_caching,
        ..BedrockConfig::new(model.clone())
    }
    .with_env(env_snapshot(var, crate::provider::bedrock::ENV_VARS));
    let provider = BedrockProvider::new(config);
    built_cloud(profile, named, model, provider, BedrockProvider::base_url)
}

fn build_vertex(
    profile: &ProviderProfile,
    model: Option<String>,
    var: &dyn Fn(&str) -> Option<String>,
    named: Option<String>,
) -> Result<BuiltProvider, FromSettingsError> {
    let model = model.unwrap_or_else(|| DEFAULT_VERTEX_MODEL.into());
    let options = CloudOptions::of(profile, var)?;
    let config = VertexConfig {
        project: option_string(profile, "project")?,
        region: option_string(profile, "region")?,
        access_token: profile.api_key.clone(),
        base_url: profile.base_url.clone(),
        max_tokens: options.max_tokens,
        http: options.http,
        prompt_caching: options.prompt_caching,
        ..VertexConfig::new(model.clone())
    }
    .with_env(env_snapshot(var, crate::provider::vertex::ENV_VARS));
    let provider = VertexProvider::new(config);
    built_cloud(profile, named, model, provider, VertexProvider::base_url)
}

/// A cloud provider's refusal to build (no region, no credentials, …): its message already
/// says what to set.
fn cloud_error(
    profile: &ProviderProfile,
    error: crate::message::ProviderError,
) -> FromSettingsError {
    if profile.name == "environment" {
        FromSettingsError::Provider(error.message)
    } else {
        FromSettingsError::Profile {
            profile: profile.name.clone(),
            message: error.message,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::config::{ProviderOrigin, ResolvedProvider, SettingsSource};
    use serde_json::json;

    fn with_profile(profile: ProviderProfile) -> Settings {
        Settings {
            provider: Some(ResolvedProvider {
                origin: ProviderOrigin::Legacy,
                source: SettingsSource::overrides(),
                profile,
            }),
            ..Settings::default()
        }
    }

    #[test]
    fn no_provider_and_no_environment_says_which_variables_to_set() {
        let error = provider_from_settings(&Settings::default(), Path::new("."), &|_| None)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(error.contains("ANTHROPIC_API_KEY"), "{error}");
    }

    #[test]
    fn anthropic_profile_without_key_names_the_variable() {
        let settings = with_profile(bare_profile("claude", "anthropic"));
        match provider_from_settings(&settings, Path::new("."), &|_| None) {
            Err(FromSettingsError::MissingApiKey { variable, .. }) => {
                assert_eq!(variable, "ANTHROPIC_API_KEY")
            }
            other => panic!("expected a missing key error, got {other:?}"),
        }
    }

    #[test]
    fn http_options_come_from_profile_options() {
        let profile = ProviderProfile {
            timeout_ms: Some(5_000),
            options: Some(serde_json::json!({"maxRetries": 1, "maxRetryWaitMs": 300_000})),
            ..bare_profile("claude", "anthropic")
        };
        let http = http_options(&profile).expect("options");
        assert_eq!(http.idle_timeout, Duration::from_secs(5));
        assert_eq!(http.max_retries, 1);
        assert_eq!(http.max_retry_wait, Duration::from_secs(300));
        let bad = ProviderProfile {
            options: Some(serde_json::json!({"maxRetryWaitMs": "soon"})),
            ..bare_profile("claude", "anthropic")
        };
        let error = http_options(&bad).expect_err("not a number").to_string();
        assert!(error.contains("`options.maxRetryWaitMs`"), "{error}");
    }

    #[test]
    fn prompt_caching_comes_from_profile_options_then_the_environment() {
        let with = |options: serde_json::Value| ProviderProfile {
            options: Some(options),
            ..bare_profile("claude", "anthropic")
        };
        let no_env = |_: &str| None;
        let disabled = |name: &str| (name == "DISABLE_PROMPT_CACHING").then(|| "1".to_string());
        let cases = [
            (
                json!({}),
                &no_env as &dyn Fn(&str) -> Option<String>,
                Some(CacheTtl::FiveMinutes),
            ),
            (
                json!({"promptCacheTtl": "1h"}),
                &no_env,
                Some(CacheTtl::OneHour),
            ),
            (json!({"promptCaching": false}), &no_env, None),
            (json!({}), &disabled, None),
            // The profile's explicit choice wins over the environment.
            (
                json!({"promptCaching": true}),
                &disabled,
                Some(CacheTtl::FiveMinutes),
            ),
        ];
        for (options, var, expected) in cases {
            let got = prompt_caching(&with(options.clone()), var).expect("valid");
            assert_eq!(got, expected, "{options}");
        }
        for bad in [
            json!({"promptCacheTtl": "2h"}),
            json!({"promptCaching": "no"}),
        ] {
            let error = prompt_caching(&with(bad.clone()), &no_env)
                .expect_err("invalid")
                .to_string();
            assert!(error.contains("options.promptCach"), "{bad}: {error}");
        }
    }

    #[test]
    fn scripted_profile_reads_turns_from_options() {
        let settings = with_profile(ProviderProfile {
            options: Some(serde_json::json!({"turns": [{"text": "hello"}]})),
            ..bare_profile("demo", "scripted")
        });
        let built = provider_from_settings(&settings, Path::new("."), &|_| None);
        assert!(
            matches!(built, Ok(ref b) if b.kind == "scripted"),
            "{built:?}"
        );
    }

    #[tokio::test]
    async fn openai_profile_chooses_the_api_with_options_api() {
        let mock =
            mock_llm::MockLlm::start_json(json!({"repeat": true, "turns": [{"text": "ok"}]}))
                .await
                .expect("mock-llm");
        let base_url = format!("{}/v1", mock.base_url());
        let build = |options: serde_json::Value| {
            let profile = ProviderProfile {
                api_key: Some("sk-test".into()),
                base_url: Some(base_url.clone()),
                options: Some(options),
                ..bare_profile("gpt", "openai")
            };
            provider_from_settings(&with_profile(profile), Path::new("."), &|_| None)
        };
        let request = crate::provider::ProviderRequest {
            messages: vec![crate::message::Message::user("hi").into()],
            ..Default::default()
        };
        let cancel = tokio_util::sync::CancellationToken::new();
        for (options, path) in [
            (json!({}), "/v1/chat/completions"),
            (json!({"api": "chat"}), "/v1/chat/completions"),
            (json!({"api": "responses"}), "/v1/responses"),
        ] {
            mock.reset();
            let built = build(options.clone()).expect("builds");
            assert_eq!(built.base_url.as_deref(), Some(base_url.as_str()));
            let response = built
                .provider
                .stream(&request, &|_| {}, &cancel)
                .await
                .expect("answers");
            assert_eq!(response.text, "ok");
            assert_eq!(mock.requests()[0].path, path, "{options}");
        }
        let error = build(json!({"api": "completions"}))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(error.contains("`options.api`"), "{error}");
    }

    #[test]
    fn compatible_types_bring_their_defaults() {
        let build = |kind: &str, model: Option<&str>, env: &dyn Fn(&str) -> Option<String>| {
            let profile = ProviderProfile {
                model: model.map(str::to_owned),
                ..bare_profile("p", kind)
            };
            provider_from_settings(&with_profile(profile), Path::new("."), env)
        };
        let keys = |name: &str| match name {
            "DEEPSEEK_API_KEY" => Some("sk-ds".to_string()),
            "DASHSCOPE_API_KEY" => Some("sk-qw".to_string()),
            // A DeepSeek or Qwen profile must not pick up OpenAI's variables.
            _ => Some("wrong".to_string()),
        };
        for (kind, model, url) in [
            ("deepseek", "deepseek-chat", "https://api.deepseek.com"),
            (
                "qwen",
                "qwen-plus",
                "https://dashscope-intl.aliyuncs.com/compatible-mode/v1",
            ),
        ] {
            let built = build(kind, None, &keys).expect("builds");
            assert_eq!(built.model, model);
            assert_eq!(built.base_url.as_deref(), Some(url));
            assert_eq!(built.provider.name(), kind);
        }
        for (kind, variable) in [
            ("deepseek", "DEEPSEEK_API_KEY"),
            ("qwen", "DASHSCOPE_API_KEY"),
        ] {
            match build(kind, None, &|_| None) {
                Err(FromSettingsError::MissingApiKey {
                    variable: named, ..
                }) => {
                    assert_eq!(named, variable)
                }
                other => panic!("expected a missing key error, got {other:?}"),
            }
        }
        let error = build("gemma", None, &|_| None)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(error.contains("must name its model"), "{error}");
        let gemma = build("gemma", Some("gemma-3-12b-it"), &|_| None).expect("local");
        assert_eq!(gemma.base_url.as_deref(), Some("http://localhost:1234/v1"));
        let bad = ProviderProfile {
            options: Some(json!({"reasoningEffort": "medium"})),
            ..bare_profile("p", "deepseek")
        };
        let error = flavor(&bad).expect_err("bad effort").to_string();
        assert!(error.contains("`options.reasoningEffort`"), "{error}");
    }

    #[test]
    fn openai_from_environment_with_only_a_base_url() {
        let env = |name: &str| (name == "OPENAI_BASE_URL").then(|| "http://127.0.0.1:9/v1".into());
        let built = provider_from_settings(&Settings::default(), Path::new("."), &env);
        match built {
            Ok(built) => assert_eq!(built.base_url.as_deref(), Some("http://127.0.0.1:9/v1")),
            Err(error) => panic!("{error}"),
        }
    }

    #[test]
    fn gemini_profile_and_environment_fallback() {
        // A profile without a key names the variable to set.
        let settings = with_profile(bare_profile("g", "gemini"));
        match provider_from_settings(&settings, Path::new("."), &|_| None) {
            Err(FromSettingsError::MissingApiKey { variable, message }) => {
                assert_eq!(variable, "GEMINI_API_KEY");
                assert!(message.contains("\"g\""), "{message}");
            }
            other => panic!("{other:?}"),
        }
        // The profile's key and base URL, the default model, options.
        let settings = with_profile(ProviderProfile {
            api_key: Some("key".into()),
            base_url: Some("http://127.0.0.1:9".into()),
            options: Some(json!({"maxRetries": 1})),
            ..bare_profile("g", "gemini")
        });
        let built = provider_from_settings(&settings, Path::new("."), &|_| None).expect("built");
        assert_eq!(built.kind, "gemini");
        assert_eq!(built.model, "gemini-2.5-flash");
        assert_eq!(built.provider.name(), "gemini");
        assert_eq!(built.provider.model(), "gemini-2.5-flash");
        assert_eq!(built.base_url.as_deref(), Some("http://127.0.0.1:9"));
        // From the environment, after Anthropic and OpenAI, with either variable.
        for variable in ["GEMINI_API_KEY", "GOOGLE_API_KEY"] {
            let env = move |name: &str| (name == variable).then(|| "key".to_string());
            let built =
                provider_from_settings(&Settings::default(), Path::new("."), &env).expect("built");
            assert_eq!(built.kind, "gemini", "{variable}");
            assert_eq!(
                built.base_url.as_deref(),
                Some("https://generativelanguage.googleapis.com")
            );
        }
        let both = |name: &str| {
            matches!(name, "GEMINI_API_KEY" | "OPENAI_API_KEY").then(|| "key".to_string())
        };
        let built =
            provider_from_settings(&Settings::default(), Path::new("."), &both).expect("built");
        assert_eq!(built.kind, "openai");
    }
}
