//! Building a [`Provider`] from resolved settings, for hosts that want the CLI's behaviour: the
//! active profile (`providers[currentProvider]` or the legacy `provider`) when settings select
//! one, else the standard environment variables.
//!
//! Profile types: `anthropic`; `openai` and the OpenAI-compatible `deepseek`/`qwen`/`gemma`
//! (any of them at a `baseURL`, e.g. Ollama); `scripted` (turns in `options.turns`, or a JSON
//! file named by `options.file`, relative to the project directory); `replay` (a recorded session
//! log named by `options.log`). Provider-owned `options` also accept `maxRetries`,
//! `maxRetryWaitMs` (the longest `retry-after` sat out, default 60 000) and `maxTokens` for the
//! HTTP providers, and for `anthropic` `promptCaching` (default `true`; the
//! `DISABLE_PROMPT_CACHING` environment variable turns it off where the profile does not say)
//! and `promptCacheTtl` (`"5m"`, the default, or `"1h"`), and `serverTools` (the Anthropic
//! tools the API runs itself: `["web_search", "web_fetch", "code_execution"]`, or objects with
//! their options such as `{"name": "web_search", "maxUses": 3}`; see
//! [`ServerTool::from_setting`]).
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
use crate::provider::openai::{OpenAiConfig, OpenAiProvider, DEFAULT_BASE_URL as OPENAI_URL};
use crate::provider::replay::ReplayProvider;
use crate::provider::scripted::{ScriptedProvider, ScriptedTurn};
use crate::provider::{HttpOptions, Provider};

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
         OPENAI_BASE_URL), or select a settings profile with `currentProvider` (see `providers`)"
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
         (built in: anthropic, openai, deepseek, qwen, gemma, scripted, replay)"
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
    // Anthropic first (the project's reference provider), then OpenAI-compatible.
    if var("ANTHROPIC_API_KEY").is_some() {
        return build_anthropic(&bare_profile("environment", "anthropic"), model, var, None);
    }
    if var("OPENAI_API_KEY").is_some() || var("OPENAI_BASE_URL").is_some() {
        return build_openai(&bare_profile("environment", "openai"), model, var, None);
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

fn from_profile(
    profile: &ProviderProfile,
    model: Option<String>,
    project_dir: &Path,
    var: &dyn Fn(&str) -> Option<String>,
) -> Result<BuiltProvider, FromSettingsError> {
    let named = Some(profile.name.clone());
    match profile.kind.as_str() {
        "anthropic" => build_anthropic(profile, model, var, named),
        "openai" | "deepseek" | "qwen" | "gemma" => build_openai(profile, model, var, named),
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
    let model = model.unwrap_or_else(|| DEFAULT_OPENAI_MODEL.into());
    let api_key = profile.api_key.clone().or_else(|| var("OPENAI_API_KEY"));
    let base_url = profile.base_url.clone().or_else(|| var("OPENAI_BASE_URL"));
    // A key is optional only at a custom endpoint (local servers such as Ollama need none).
    if api_key.is_none() && base_url.is_none() {
        return Err(missing_key(profile, "OPENAI_API_KEY", "OpenAI"));
    }
    let mut config = OpenAiConfig::new(model.clone());
    config.api_key = api_key;
    config.base_url = base_url.clone();
    config.max_tokens = option_u64(profile, "maxTokens")?.map(saturate_u32);
    config.http = http_options(profile)?;
    if profile.kind != "openai" {
        config.name = profile.kind.clone();
    }
    let provider =
        OpenAiProvider::new(config).map_err(|e| FromSettingsError::Provider(e.to_string()))?;
    Ok(BuiltProvider {
        provider: Arc::new(provider),
        profile: named,
        kind: profile.kind.clone(),
        model,
        base_url: Some(base_url.unwrap_or_else(|| OPENAI_URL.into())),
    })
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

    #[test]
    fn openai_from_environment_with_only_a_base_url() {
        let env = |name: &str| (name == "OPENAI_BASE_URL").then(|| "http://127.0.0.1:9/v1".into());
        let built = provider_from_settings(&Settings::default(), Path::new("."), &env);
        match built {
            Ok(built) => assert_eq!(built.base_url.as_deref(), Some("http://127.0.0.1:9/v1")),
            Err(error) => panic!("{error}"),
        }
    }
}
