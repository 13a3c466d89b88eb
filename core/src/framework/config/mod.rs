//! Settings: the six `settings.json` layers of spec 000 "Settings Configuration" plus overrides
//! from code, merged the way Claude Code merges them.
//!
//! # Layers (lowest precedence first)
//!
//! | # | kind | path |
//! |---|---|---|
//! | 1 | `user_robota` | `~/.robota/settings.json` |
//! | 2 | `user_claude` | `~/.claude/settings.json` |
//! | 3 | `project_robota` | `<project>/.robota/settings.json` |
//! | 4 | `project_robota_local` | `<project>/.robota/settings.local.json` |
//! | 5 | `project_claude` | `<project>/.claude/settings.json` |
//! | 6 | `project_claude_local` | `<project>/.claude/settings.local.json` |
//! | 7 | `override` | [`SettingsOptions::overrides`] (from code, no file) |
//!
//! This is the order spec 000 gives (and TypeScript Robota implements): `.claude/` project files
//! sit above `.robota/` ones so that a Claude Code user's existing project settings apply.
//!
//! # Merge rules
//!
//! - Objects deep-merge; for any other value the later layer wins per key.
//! - `permissions.allow`, `permissions.ask`, `permissions.deny` and
//!   `permissions.additionalDirectories` **concatenate** across layers (identical strings are kept
//!   once, at their first occurrence). Every rule keeps the layer it came from
//!   ([`SourcedRule::source`]). A deny at any level wins — that is the permission engine's job; this
//!   module only guarantees no entry is lost.
//! - `hooks` are never merged away: [`LoadedSettings::hooks_layers`] gives each layer's `hooks`
//!   object with its source, and in [`LoadedSettings::merged`] the per-event hook arrays
//!   concatenate. (TypeScript Robota let a project's hooks replace the user's wholesale; §9.10.)
//! - Any other array is replaced by the later layer.
//!
//! # `$ENV:NAME` references
//!
//! A string value that is exactly `$ENV:NAME` is replaced by the variable `NAME` from
//! [`SettingsOptions::env`] (never from the real process environment unless the caller passed it,
//! e.g. through [`SettingsOptions::from_env`]). References are resolved after merging, so an
//! overridden reference is never looked up. They are resolved in `env` values, `model`,
//! `language`, and the `model`, `apiKey` and `baseURL` of provider profiles and the legacy
//! `provider`; provider `options` are provider-owned data and are passed through untouched. An
//! unset variable is an error naming the file, JSON path and variable — except in a provider
//! profile that is not the active one, where it is a warning and the field stays unset (a missing
//! `OPENAI_API_KEY` must not stop an Anthropic session).
//!
//! # Files
//!
//! A missing file is skipped. An empty file counts as `{}`. A settings path must be a regular file
//! of at most 1 MiB ([`crate::files::SETTINGS_FILE`]): a FIFO, a device (or a link to one) or a
//! larger file is an error naming it, so start-up can neither hang nor read without bound. A UTF-8 byte-order mark is ignored.
//! Malformed JSON is an error with line and column. When two layers are the same file (the project
//! directory is the home directory) it is loaded once, at the lower layer.
//!
//! Unknown keys are reported as warnings ([`LoadedSettings::warnings`]), never dropped silently.

mod error;
mod json_path;
mod merge;
mod resolve;
mod sandbox;
mod validate;

pub use crate::session::compaction_policy::{CompactionPolicy, DEFAULT_COMPACTION_THRESHOLD};
pub use error::{SettingsError, SettingsWarning, SettingsWarningKind};

use std::collections::BTreeMap;
use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Provider `type` values that robota knows how to construct. Any other type is accepted with a
/// [`SettingsWarningKind::UnknownProviderType`] warning, because a host may register its own.
/// `deepseek`, `qwen` and `gemma` are OpenAI-compatible endpoints (spec 000 profile examples).
pub const KNOWN_PROVIDER_TYPES: &[&str] = &[
    "anthropic",
    "bedrock",
    "vertex",
    "openai",
    "gemini",
    "deepseek",
    "qwen",
    "gemma",
    "scripted",
    "replay",
];

/// Which settings layer a value came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SettingsSourceKind {
    /// `~/.robota/settings.json`.
    UserRobota,
    /// `~/.claude/settings.json`.
    UserClaude,
    /// `<project>/.robota/settings.json`.
    ProjectRobota,
    /// `<project>/.robota/settings.local.json`.
    ProjectRobotaLocal,
    /// `<project>/.claude/settings.json`.
    ProjectClaude,
    /// `<project>/.claude/settings.local.json`.
    ProjectClaudeLocal,
    /// Values passed in code ([`SettingsOptions::overrides`]).
    Override,
}

impl SettingsSourceKind {
    /// The six file layers, lowest precedence first.
    pub const FILE_LAYERS: [SettingsSourceKind; 6] = [
        SettingsSourceKind::UserRobota,
        SettingsSourceKind::UserClaude,
        SettingsSourceKind::ProjectRobota,
        SettingsSourceKind::ProjectRobotaLocal,
        SettingsSourceKind::ProjectClaude,
        SettingsSourceKind::ProjectClaudeLocal,
    ];

    /// The snake_case name used in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            SettingsSourceKind::UserRobota => "user_robota",
            SettingsSourceKind::UserClaude => "user_claude",
            SettingsSourceKind::ProjectRobota => "project_robota",
            SettingsSourceKind::ProjectRobotaLocal => "project_robota_local",
            SettingsSourceKind::ProjectClaude => "project_claude",
            SettingsSourceKind::ProjectClaudeLocal => "project_claude_local",
            SettingsSourceKind::Override => "override",
        }
    }

    /// True for the layers under the home directory.
    pub fn is_user(self) -> bool {
        matches!(
            self,
            SettingsSourceKind::UserRobota | SettingsSourceKind::UserClaude
        )
    }

    /// The file of this layer, or `None` for [`SettingsSourceKind::Override`] or a user layer when
    /// there is no home directory.
    pub fn path(self, home: Option<&Path>, project_dir: &Path) -> Option<PathBuf> {
        let (base, relative) = match self {
            SettingsSourceKind::UserRobota => (home?, ".robota/settings.json"),
            SettingsSourceKind::UserClaude => (home?, ".claude/settings.json"),
            SettingsSourceKind::ProjectRobota => (project_dir, ".robota/settings.json"),
            SettingsSourceKind::ProjectRobotaLocal => (project_dir, ".robota/settings.local.json"),
            SettingsSourceKind::ProjectClaude => (project_dir, ".claude/settings.json"),
            SettingsSourceKind::ProjectClaudeLocal => (project_dir, ".claude/settings.local.json"),
            SettingsSourceKind::Override => return None,
        };
        Some(base.join(relative))
    }
}

/// Where a settings value came from: the layer and, for file layers, the file.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SettingsSource {
    /// The layer.
    pub kind: SettingsSourceKind,
    /// The file, `None` for overrides passed in code.
    pub path: Option<PathBuf>,
}

impl SettingsSource {
    /// The source of values passed in code.
    pub fn overrides() -> Self {
        SettingsSource {
            kind: SettingsSourceKind::Override,
            path: None,
        }
    }
}

impl fmt::Display for SettingsSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.path {
            Some(path) => write!(f, "{}", path.display()),
            None => f.write_str("settings overrides (passed in code)"),
        }
    }
}

/// One loaded settings layer: its source and its JSON exactly as written (no `$ENV:` resolution,
/// no defaults). The permission and hook modules parse their own sections from these so that
/// every rule and hook keeps the file it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct SettingsLayer {
    /// Where the layer came from.
    pub source: SettingsSource,
    /// The layer's JSON object.
    pub value: Value,
}

/// One layer's `hooks` object, with its source.
#[derive(Debug, Clone, Copy)]
pub struct HooksLayer<'a> {
    /// Where these hooks are defined.
    pub source: &'a SettingsSource,
    /// The layer's `hooks` value (an object keyed by hook event name).
    pub hooks: &'a Value,
}

/// What to load settings from.
#[derive(Debug, Clone, Default)]
pub struct SettingsOptions {
    /// The user's home directory; `None` skips the two user layers.
    pub home: Option<PathBuf>,
    /// The project directory holding `.robota/` and `.claude/` (usually the session cwd).
    pub project_dir: PathBuf,
    /// Variables for `$ENV:NAME` references.
    pub env: BTreeMap<String, String>,
    /// Settings from code, applied above every file layer. Must be a JSON object.
    pub overrides: Option<Value>,
}

impl SettingsOptions {
    /// Options for `project_dir` with no home directory, no environment and no overrides.
    pub fn new(project_dir: impl Into<PathBuf>) -> Self {
        SettingsOptions {
            project_dir: project_dir.into(),
            ..SettingsOptions::default()
        }
    }

    /// Options for `project_dir` using the real process: the home directory from `HOME` (or
    /// `USERPROFILE` on Windows) and every environment variable for `$ENV:` references. This is
    /// the only place the settings loader looks at the real environment.
    pub fn from_env(project_dir: impl Into<PathBuf>) -> Self {
        let home = std::env::var_os("HOME")
            .or_else(|| std::env::var_os("USERPROFILE"))
            .filter(|value| !value.is_empty())
            .map(PathBuf::from);
        SettingsOptions {
            home,
            project_dir: project_dir.into(),
            env: std::env::vars().collect(),
            overrides: None,
        }
    }

    /// Sets the home directory.
    pub fn with_home(mut self, home: impl Into<PathBuf>) -> Self {
        self.home = Some(home.into());
        self
    }

    /// Sets the variables used for `$ENV:` references.
    pub fn with_env<K: Into<String>, V: Into<String>>(
        mut self,
        env: impl IntoIterator<Item = (K, V)>,
    ) -> Self {
        self.env = env
            .into_iter()
            .map(|(key, value)| (key.into(), value.into()))
            .collect();
        self
    }

    /// Sets the overrides applied above every file.
    pub fn with_overrides(mut self, overrides: Value) -> Self {
        self.overrides = Some(overrides);
        self
    }
}

/// The permission modes a settings file may name in `permissions.defaultMode` (Claude Code's
/// names). `auto` (Claude Code's classifier mode) is recognised but not supported: it produces a
/// warning and no mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum PermissionModeSetting {
    /// Ask on first use of anything not allowed (`"default"`, alias `"manual"`).
    #[serde(rename = "default")]
    Default,
    /// Auto-accept file edits inside the working directories (`"acceptEdits"`).
    #[serde(rename = "acceptEdits")]
    AcceptEdits,
    /// Read-only exploration (`"plan"`).
    #[serde(rename = "plan")]
    Plan,
    /// Deny anything not pre-allowed, never ask (`"dontAsk"`).
    #[serde(rename = "dontAsk")]
    DontAsk,
    /// Skip prompts; deny rules still apply (`"bypassPermissions"`).
    #[serde(rename = "bypassPermissions")]
    BypassPermissions,
}

impl PermissionModeSetting {
    /// Every accepted spelling, for error messages.
    pub const VALID_NAMES: &'static [&'static str] = &[
        "default",
        "acceptEdits",
        "plan",
        "dontAsk",
        "bypassPermissions",
        "manual",
    ];

    /// Parses a settings value; `None` if it is not a supported mode.
    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "default" | "manual" => Some(PermissionModeSetting::Default),
            "acceptEdits" => Some(PermissionModeSetting::AcceptEdits),
            "plan" => Some(PermissionModeSetting::Plan),
            "dontAsk" => Some(PermissionModeSetting::DontAsk),
            "bypassPermissions" => Some(PermissionModeSetting::BypassPermissions),
            _ => None,
        }
    }

    /// The canonical settings spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            PermissionModeSetting::Default => "default",
            PermissionModeSetting::AcceptEdits => "acceptEdits",
            PermissionModeSetting::Plan => "plan",
            PermissionModeSetting::DontAsk => "dontAsk",
            PermissionModeSetting::BypassPermissions => "bypassPermissions",
        }
    }
}

/// Which permission list a rule is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RuleList {
    /// `permissions.allow`.
    Allow,
    /// `permissions.ask`.
    Ask,
    /// `permissions.deny`.
    Deny,
}

impl RuleList {
    /// The settings key of the list.
    pub fn key(self) -> &'static str {
        match self {
            RuleList::Allow => "allow",
            RuleList::Ask => "ask",
            RuleList::Deny => "deny",
        }
    }
}

/// One permission rule as written, with the layer that defines it. The rule text is not parsed
/// here; the permission engine owns the grammar.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SourcedRule {
    /// The rule, e.g. `Bash(npm run test *)`.
    pub text: String,
    /// The list it is in.
    pub list: RuleList,
    /// The layer that defines it (the first one, when several layers repeat it).
    pub source: SettingsSource,
}

/// One `permissions.additionalDirectories` entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SourcedDirectory {
    /// The path: `~/` expanded with the home directory, relative paths joined to the project
    /// directory. Not canonicalised (the directory may not exist yet).
    pub path: PathBuf,
    /// The entry as written.
    pub original: String,
    /// The layer that lists it.
    pub source: SettingsSource,
}

/// The `permissions` section, merged.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct PermissionSettings {
    /// `permissions.defaultMode` from the highest layer that sets a supported mode.
    pub default_mode: Option<PermissionModeSetting>,
    /// The layer that set [`Self::default_mode`].
    pub default_mode_source: Option<SettingsSource>,
    /// Every allow/ask/deny rule of every layer, in layer order (lowest first), duplicates removed.
    pub rules: Vec<SourcedRule>,
    /// Every additional directory of every layer, in layer order, duplicates removed.
    pub additional_directories: Vec<SourcedDirectory>,
    /// `permissions.disableBypassPermissionsMode: "disable"` in any layer.
    pub disable_bypass_permissions_mode: bool,
}

impl PermissionSettings {
    /// The rules of one list, in layer order.
    pub fn rules_in(&self, list: RuleList) -> impl Iterator<Item = &SourcedRule> {
        self.rules.iter().filter(move |rule| rule.list == list)
    }
}

/// One entry of `providers`. The key is the profile's identity (two profiles may share a type and
/// model).
#[derive(Clone, PartialEq, Serialize)]
pub struct ProviderProfile {
    /// The profile key.
    pub name: String,
    /// The provider implementation (`type`), e.g. `anthropic`, `openai`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Default model id.
    pub model: Option<String>,
    /// The API key after `$ENV:` resolution. Never serialised or debug-printed.
    #[serde(skip_serializing)]
    pub api_key: Option<String>,
    /// The variable named by an `apiKey: "$ENV:NAME"` reference.
    pub api_key_env: Option<String>,
    /// Endpoint override (`baseURL`).
    pub base_url: Option<String>,
    /// Provider idle timeout in milliseconds (`timeout`).
    pub timeout_ms: Option<u64>,
    /// Provider-owned options, passed through as written.
    pub options: Option<Value>,
}

impl fmt::Debug for ProviderProfile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProviderProfile")
            .field("name", &self.name)
            .field("kind", &self.kind)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("api_key_env", &self.api_key_env)
            .field("base_url", &self.base_url)
            .field("timeout_ms", &self.timeout_ms)
            .field("options", &self.options)
            .finish()
    }
}

/// Where the active provider settings came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "origin", rename_all = "snake_case")]
pub enum ProviderOrigin {
    /// `currentProvider` selected this profile.
    Profile {
        /// The profile key.
        name: String,
    },
    /// The legacy flat `provider` object (used only when no `currentProvider` is set).
    Legacy,
}

/// The provider the session should use, resolved per spec 000: `providers[currentProvider]`,
/// else the legacy `provider`, else nothing (the host's defaults apply).
#[derive(Clone, PartialEq, Serialize)]
pub struct ResolvedProvider {
    /// Profile or legacy.
    pub origin: ProviderOrigin,
    /// The layer that made the selection (`currentProvider` or `provider`).
    pub source: SettingsSource,
    /// The resolved fields; for a legacy provider the name is `"provider"`.
    pub profile: ProviderProfile,
}

impl fmt::Debug for ResolvedProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResolvedProvider")
            .field("origin", &self.origin)
            .field("source", &self.source)
            .field("profile", &self.profile)
            .finish()
    }
}

/// The typed, merged view of the keys this module owns.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Settings {
    /// `env`: variables for tool and hook processes, after `$ENV:` resolution.
    pub env: BTreeMap<String, String>,
    /// `model`: overrides the active provider's model when set.
    pub model: Option<String>,
    /// `language`: the response language (rendered as neutral metadata in the system prompt).
    pub language: Option<String>,
    /// `currentProvider`.
    pub current_provider: Option<String>,
    /// `providers`, by profile key.
    pub providers: BTreeMap<String, ProviderProfile>,
    /// The active provider, if settings select one.
    pub provider: Option<ResolvedProvider>,
    /// `autoCompactThreshold`.
    pub compaction: CompactionPolicy,
    /// `permissions`.
    pub permissions: PermissionSettings,
    /// `disableAllHooks`.
    pub disable_all_hooks: bool,
    /// `taskContext.enabled` (default true): whether `.agents/tasks/*.md` is loaded.
    pub task_context_enabled: bool,
    /// `sandbox`: the OS sandbox for Bash (lists concatenated across layers, paths expanded).
    pub sandbox: crate::sandbox::SandboxSettings,
}

impl Settings {
    /// The model to use: `model` if set, else the active provider's model.
    pub fn effective_model(&self) -> Option<&str> {
        self.model.as_deref().or_else(|| {
            self.provider
                .as_ref()
                .and_then(|provider| provider.profile.model.as_deref())
        })
    }
}

/// The result of [`load_settings`].
#[derive(Debug, Clone)]
pub struct LoadedSettings {
    /// The home directory the settings were loaded for ([`SettingsOptions::home`]). User-level
    /// files (`~/.claude/CLAUDE.md`, `~/.claude/agents/`, …) are read from it whether or not a
    /// user settings file exists, as Claude Code does.
    pub home: Option<PathBuf>,
    /// Every layer that exists, lowest precedence first.
    pub layers: Vec<SettingsLayer>,
    /// All layers deep-merged (see the module docs for list handling), `$ENV:` not resolved.
    pub merged: Value,
    /// The typed view.
    pub settings: Settings,
    /// Non-fatal problems (unknown keys, ignored keys, …).
    pub warnings: Vec<SettingsWarning>,
}

impl LoadedSettings {
    /// Each layer's `hooks` object with its source, lowest precedence first. Hooks from every
    /// layer run; none is dropped because a later layer also defines hooks.
    pub fn hooks_layers(&self) -> Vec<HooksLayer<'_>> {
        self.layers
            .iter()
            .filter_map(|layer| {
                layer.value.get("hooks").map(|hooks| HooksLayer {
                    source: &layer.source,
                    hooks,
                })
            })
            .collect()
    }

    /// Each layer's `permissions` object with its source, lowest precedence first.
    pub fn permissions_layers(&self) -> Vec<(&SettingsSource, &Value)> {
        self.layers
            .iter()
            .filter_map(|layer| {
                layer
                    .value
                    .get("permissions")
                    .map(|value| (&layer.source, value))
            })
            .collect()
    }
}

/// The six settings files for a home and project directory, lowest precedence first (user files
/// are left out when `home` is `None`). Hosts use this to show or edit the files.
pub fn settings_paths(
    home: Option<&Path>,
    project_dir: &Path,
) -> Vec<(SettingsSourceKind, PathBuf)> {
    SettingsSourceKind::FILE_LAYERS
        .iter()
        .filter_map(|kind| kind.path(home, project_dir).map(|path| (*kind, path)))
        .collect()
}

/// Loads, validates and merges every settings layer.
///
/// Missing files are skipped. The first problem that makes the settings unusable is returned as
/// an error; everything merely suspicious is in [`LoadedSettings::warnings`].
pub fn load_settings(options: &SettingsOptions) -> Result<LoadedSettings, SettingsError> {
    let mut layers = Vec::new();
    let mut warnings = Vec::new();
    let mut loaded_files: Vec<PathBuf> = Vec::new();

    for (kind, path) in settings_paths(options.home.as_deref(), &options.project_dir) {
        let Some(value) = read_layer_file(&path)? else {
            continue;
        };
        // When the project directory is the home directory, `.claude/settings.json` is both the
        // user and the project file; loading it twice would double every rule and hook.
        let identity = fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
        if loaded_files.contains(&identity) {
            continue;
        }
        loaded_files.push(identity);
        let source = SettingsSource {
            kind,
            path: Some(path),
        };
        validate::validate_layer(&source, &value, &mut warnings)?;
        layers.push(SettingsLayer { source, value });
    }

    if let Some(overrides) = &options.overrides {
        let source = SettingsSource::overrides();
        validate::validate_layer(&source, overrides, &mut warnings)?;
        layers.push(SettingsLayer {
            source,
            value: overrides.clone(),
        });
    }

    let merged = merge::merge_layers(&layers);
    let settings = resolve::resolve_settings(&layers, &merged, options, &mut warnings)?;
    Ok(LoadedSettings {
        home: options.home.clone(),
        layers,
        merged,
        settings,
        warnings,
    })
}

/// Reads one settings file: `Ok(None)` when it does not exist.
fn read_layer_file(path: &Path) -> Result<Option<Value>, SettingsError> {
    let bytes = match crate::files::read_regular(path, &crate::files::SETTINGS_FILE) {
        Ok(bytes) => bytes,
        Err(err) if err.is_not_found() => return Ok(None),
        Err(crate::files::FileError::Io { path, source, .. }) => {
            return Err(SettingsError::Read { path, source })
        }
        Err(err) => return Err(SettingsError::File(err)),
    };
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&bytes);
    if bytes.iter().all(u8::is_ascii_whitespace) {
        // An empty file is what `touch` or a fresh editor buffer leaves; treat it as no settings.
        return Ok(Some(Value::Object(serde_json::Map::new())));
    }
    serde_json::from_slice(bytes)
        .map(Some)
        .map_err(|err| SettingsError::Parse {
            path: path.to_owned(),
            line: err.line(),
            column: err.column(),
            message: parse_message(&err),
        })
}

/// serde_json appends " at line L column C" to its messages; the error already carries both.
fn parse_message(err: &serde_json::Error) -> String {
    let text = err.to_string();
    match text.rfind(" at line ") {
        Some(index) => text[..index].to_owned(),
        None => text,
    }
}
