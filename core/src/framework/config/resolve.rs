//! From merged JSON to the typed [`Settings`]: `$ENV:` resolution, provider profile selection,
//! permission lists with their sources, compaction policy.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::error::{SettingsError, SettingsWarning, SettingsWarningKind};
use super::json_path::{describe, JsonPath};
use super::validate::check_url_shape;
use super::{
    CompactionPolicy, PermissionModeSetting, PermissionSettings, ProviderOrigin, ProviderProfile,
    ResolvedProvider, RuleList, Settings, SettingsLayer, SettingsOptions, SettingsSource,
    SourcedDirectory, SourcedRule, KNOWN_PROVIDER_TYPES,
};

const ENV_PREFIX: &str = "$ENV:";

/// Whether an unresolvable `$ENV:` reference is an error or a warning.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Strictness {
    Strict,
    Lenient,
}

struct Resolver<'a> {
    layers: &'a [SettingsLayer],
    options: &'a SettingsOptions,
    warnings: &'a mut Vec<SettingsWarning>,
}

pub(crate) fn resolve_settings(
    layers: &[SettingsLayer],
    merged: &Value,
    options: &SettingsOptions,
    warnings: &mut Vec<SettingsWarning>,
) -> Result<Settings, SettingsError> {
    let mut resolver = Resolver {
        layers,
        options,
        warnings,
    };
    let root = JsonPath::root();
    let empty = Map::new();
    let top = merged.as_object().unwrap_or(&empty);

    let mut env = BTreeMap::new();
    if let Some(Value::Object(vars)) = top.get("env") {
        for (name, value) in vars {
            let path = root.key("env").key(name);
            let text = match value {
                Value::String(text) => text.clone(),
                other => other.to_string(),
            };
            if let Some(text) = resolver.string(&text, &path, Strictness::Strict)? {
                env.insert(name.clone(), text);
            }
        }
    }

    let model = resolver.optional_string(top, &root, "model", Strictness::Strict)?;
    let language = resolver.optional_string(top, &root, "language", Strictness::Strict)?;
    let current_provider = top
        .get("currentProvider")
        .and_then(Value::as_str)
        .map(str::to_owned);

    let mut providers = BTreeMap::new();
    if let Some(Value::Object(profiles)) = top.get("providers") {
        for (name, profile) in profiles {
            let strictness = if current_provider.as_deref() == Some(name.as_str()) {
                Strictness::Strict
            } else {
                Strictness::Lenient
            };
            let path = root.key("providers").key(name);
            let profile = resolver.profile(name, profile, &path, strictness, None)?;
            providers.insert(name.clone(), profile);
        }
    }

    let provider = resolver.active_provider(top, current_provider.as_deref(), &providers)?;
    let compaction = compaction_policy(top);
    let permissions = resolver.permissions(top);
    let disable_all_hooks = top
        .get("disableAllHooks")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let task_context_enabled = top
        .get("taskContext")
        .and_then(|task| task.get("enabled"))
        .and_then(Value::as_bool)
        .unwrap_or(true);
    let sandbox = super::sandbox::sandbox_settings(
        top,
        resolver.options.home.as_deref(),
        &resolver.options.project_dir,
    );

    Ok(Settings {
        env,
        model,
        language,
        current_provider,
        providers,
        provider,
        compaction,
        permissions,
        disable_all_hooks,
        task_context_enabled,
        sandbox,
    })
}

fn compaction_policy(top: &Map<String, Value>) -> CompactionPolicy {
    match top.get("autoCompactThreshold") {
        Some(Value::Bool(false)) => CompactionPolicy {
            enabled: false,
            ..CompactionPolicy::default()
        },
        Some(Value::Number(number)) => CompactionPolicy {
            enabled: true,
            threshold: number
                .as_f64()
                .unwrap_or(super::DEFAULT_COMPACTION_THRESHOLD),
        },
        _ => CompactionPolicy::default(),
    }
}

/// The variable named by a `$ENV:NAME` value, or `None` when the value is a literal.
fn env_reference(text: &str) -> Option<&str> {
    text.strip_prefix(ENV_PREFIX)
}

fn is_variable_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|first| first.is_ascii_alphabetic() || first == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

impl Resolver<'_> {
    /// The layer that supplied the merged value at `path`: the highest layer in which the path
    /// exists (deep merge means the highest definition of a leaf is the one that survives).
    fn source_of(&self, path: &JsonPath) -> SettingsSource {
        let path = path.without_trailing_indexes();
        self.layers
            .iter()
            .rev()
            .find(|layer| path.lookup(&layer.value).is_some())
            .or_else(|| self.layers.last())
            .map(|layer| layer.source.clone())
            .unwrap_or_else(SettingsSource::overrides)
    }

    /// Resolves `$ENV:` in one string. `Ok(None)` only for a lenient unresolved reference.
    fn string(
        &mut self,
        text: &str,
        path: &JsonPath,
        strictness: Strictness,
    ) -> Result<Option<String>, SettingsError> {
        let Some(variable) = env_reference(text) else {
            return Ok(Some(text.to_owned()));
        };
        if !is_variable_name(variable) {
            return Err(SettingsError::InvalidValue {
                source_label: self.source_of(path),
                json_path: path.to_string(),
                expected: "`$ENV:` followed by an environment variable name such as \
                           $ENV:ANTHROPIC_API_KEY"
                    .to_owned(),
                found: describe(&Value::String(text.to_owned())),
            });
        }
        if let Some(value) = self.options.env.get(variable) {
            return Ok(Some(value.clone()));
        }
        let source = self.source_of(path);
        match strictness {
            Strictness::Strict => Err(SettingsError::MissingEnvVar {
                source_label: source,
                json_path: path.to_string(),
                variable: variable.to_owned(),
            }),
            Strictness::Lenient => {
                self.warnings.push(SettingsWarning {
                    kind: SettingsWarningKind::UnresolvedEnvReference,
                    source,
                    json_path: path.to_string(),
                    message: format!(
                        "the environment variable `{variable}` is not set; the field is left \
                         unset (this profile is not active)"
                    ),
                });
                Ok(None)
            }
        }
    }

    fn optional_string(
        &mut self,
        map: &Map<String, Value>,
        path: &JsonPath,
        key: &str,
        strictness: Strictness,
    ) -> Result<Option<String>, SettingsError> {
        match map.get(key).and_then(Value::as_str) {
            Some(text) => self.string(text, &path.key(key), strictness),
            None => Ok(None),
        }
    }

    /// Builds one profile. `default_kind` is used when the object has no `type` (legacy only).
    fn profile(
        &mut self,
        name: &str,
        value: &Value,
        path: &JsonPath,
        strictness: Strictness,
        default_kind: Option<&str>,
    ) -> Result<ProviderProfile, SettingsError> {
        let empty = Map::new();
        let map = value.as_object().unwrap_or(&empty);
        // Only the legacy `provider` object names its type with `name`; in a profile the key is
        // the profile's identity and `name` is an unknown field.
        let legacy_name = default_kind.and(map.get("name"));
        let kind = map
            .get("type")
            .or(legacy_name)
            .and_then(Value::as_str)
            .or(default_kind);
        let Some(kind) = kind else {
            return Err(SettingsError::MissingField {
                source_label: self.source_of(path),
                json_path: path.to_string(),
                field: "type".to_owned(),
                expected: format!(
                    "the provider implementation, one of {} or a host-registered type",
                    KNOWN_PROVIDER_TYPES.join(", ")
                ),
            });
        };
        if !KNOWN_PROVIDER_TYPES.contains(&kind) {
            self.warnings.push(SettingsWarning {
                kind: SettingsWarningKind::UnknownProviderType,
                source: self.source_of(&path.key("type")),
                json_path: path.key("type").to_string(),
                message: format!(
                    "robota has no built-in provider of type \"{kind}\" (built in: {}); a host \
                     must register it",
                    KNOWN_PROVIDER_TYPES.join(", ")
                ),
            });
        }
        let model = self.optional_string(map, path, "model", strictness)?;
        let api_key_env = map
            .get("apiKey")
            .and_then(Value::as_str)
            .and_then(env_reference)
            .map(str::to_owned);
        let api_key = self.optional_string(map, path, "apiKey", strictness)?;
        let base_url = self.optional_string(map, path, "baseURL", strictness)?;
        if let Some(url) = &base_url {
            let field = path.key("baseURL");
            check_url_shape(&self.source_of(&field), &Value::String(url.clone()), &field)?;
        }
        Ok(ProviderProfile {
            name: name.to_owned(),
            kind: kind.to_owned(),
            model,
            api_key,
            api_key_env,
            base_url,
            timeout_ms: map.get("timeout").and_then(Value::as_u64),
            options: map.get("options").cloned(),
        })
    }

    /// Spec 000 "Provider resolution order": `providers[currentProvider]`, then the legacy
    /// `provider`, then nothing. A legacy `provider` never overrides an explicit profile.
    fn active_provider(
        &mut self,
        top: &Map<String, Value>,
        current: Option<&str>,
        providers: &BTreeMap<String, ProviderProfile>,
    ) -> Result<Option<ResolvedProvider>, SettingsError> {
        let root = JsonPath::root();
        if let Some(name) = current {
            let source = self.source_of(&root.key("currentProvider"));
            let Some(profile) = providers.get(name) else {
                return Err(SettingsError::UnknownProfile {
                    source_label: source,
                    name: name.to_owned(),
                    available: providers.keys().cloned().collect(),
                });
            };
            if top.contains_key("provider") {
                self.warnings.push(SettingsWarning {
                    kind: SettingsWarningKind::IgnoredKey,
                    source: self.source_of(&root.key("provider")),
                    json_path: "provider".to_owned(),
                    message: format!(
                        "the legacy `provider` object is ignored because `currentProvider` \
                         selects the profile \"{name}\""
                    ),
                });
            }
            return Ok(Some(ResolvedProvider {
                origin: ProviderOrigin::Profile {
                    name: name.to_owned(),
                },
                source,
                profile: profile.clone(),
            }));
        }
        let Some(legacy) = top.get("provider") else {
            return Ok(None);
        };
        let path = root.key("provider");
        // TypeScript Robota's defaults made a legacy provider without a name an Anthropic one.
        let profile = self.profile(
            "provider",
            legacy,
            &path,
            Strictness::Strict,
            Some("anthropic"),
        )?;
        Ok(Some(ResolvedProvider {
            origin: ProviderOrigin::Legacy,
            source: self.source_of(&path),
            profile,
        }))
    }

    /// Permission lists straight from the layers so every entry keeps its own source.
    fn permissions(&mut self, top: &Map<String, Value>) -> PermissionSettings {
        let mut settings = PermissionSettings::default();
        for layer in self.layers {
            let Some(permissions) = layer.value.get("permissions") else {
                continue;
            };
            for list in [RuleList::Allow, RuleList::Ask, RuleList::Deny] {
                for text in string_items(permissions.get(list.key())) {
                    let duplicate = settings
                        .rules
                        .iter()
                        .any(|rule| rule.list == list && rule.text == text);
                    if !duplicate {
                        settings.rules.push(SourcedRule {
                            text: text.to_owned(),
                            list,
                            source: layer.source.clone(),
                        });
                    }
                }
            }
            for original in string_items(permissions.get("additionalDirectories")) {
                let path = expand_directory(
                    original,
                    self.options.home.as_deref(),
                    &self.options.project_dir,
                );
                if !settings
                    .additional_directories
                    .iter()
                    .any(|dir| dir.path == path)
                {
                    settings.additional_directories.push(SourcedDirectory {
                        path,
                        original: original.to_owned(),
                        source: layer.source.clone(),
                    });
                }
            }
            if permissions
                .get("disableBypassPermissionsMode")
                .and_then(Value::as_str)
                == Some("disable")
            {
                settings.disable_bypass_permissions_mode = true;
            }
        }
        let mode_path = JsonPath::root().key("permissions").key("defaultMode");
        if let Some(mode) = top
            .get("permissions")
            .and_then(|permissions| permissions.get("defaultMode"))
            .and_then(Value::as_str)
            .and_then(PermissionModeSetting::parse)
        {
            settings.default_mode = Some(mode);
            settings.default_mode_source = Some(self.source_of(&mode_path));
        }
        settings
    }
}

fn string_items(value: Option<&Value>) -> impl Iterator<Item = &str> {
    value
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
}

/// `~` and `~/…` use the home directory; relative paths are taken from the project directory
/// (the directory the session works in), whichever layer lists them.
pub(super) fn expand_directory(original: &str, home: Option<&Path>, project_dir: &Path) -> PathBuf {
    if let Some(home) = home {
        if original == "~" {
            return home.to_owned();
        }
        if let Some(rest) = original.strip_prefix("~/") {
            return home.join(rest);
        }
    }
    let path = Path::new(original);
    if path.is_absolute() {
        path.to_owned()
    } else {
        project_dir.join(path)
    }
}
