//! Turning settings into what a session runs with ([`ResolvedSettings`]): permission rules
//! (every layer's rules keep their file), the permission mode, the merged hooks, the `env` for
//! tool and hook processes, the workspace directories and the paths that always need approval to
//! write.
//!
//! Every problem is reported: errors (a hook definition with an error, a deny or ask rule whose
//! tool cannot be read) stop the session from being created and name the file, JSON path and
//! problem; warnings (unknown keys, rules that may not do what their author expects, a rule
//! robota cannot parse — skipped when it is an allow rule, replaced by "ask for every call of
//! its tool" when it is a deny or ask rule) come back as [`SessionWarning`]s.

use std::any::Any;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::framework::config::{
    load_settings, settings_paths, CompactionPolicy, LoadedSettings, SettingsError,
    SettingsOptions, SettingsSource, SettingsSourceKind,
};
use crate::hooks::{HandlerKind, HookConfigError, HooksConfig, Severity};
use crate::permissions::{RuleList, RuleSet, RuleSource};
use crate::session::inputs::ResolvedSettings;
use crate::session::store_choice::StoreChoice;
use crate::session::{
    PreloadedSettings, RuleError, SessionError, SessionSettings, SessionWarning,
    SettingsDestination, SettingsProblem, SettingsTarget,
};

/// What the settings say about the system prompt the project folder supplies.
pub(crate) struct PromptSettings {
    /// The settings' `language` (neutral metadata in the system prompt).
    pub(crate) language: Option<String>,
    /// The settings' `taskContext.enabled`.
    pub(crate) task_context_enabled: bool,
}

/// Loads (unless already loaded) and interprets the settings of a session in `cwd`. Every bad
/// rule or hook definition is an error naming its file; the permission mode asked for in code
/// is applied by the session, which also knows a resumed session's mode.
pub(crate) fn assemble(
    cwd: &Path,
    settings: SessionSettings,
    extra_hooks: HooksConfig,
) -> Result<(ResolvedSettings, PromptSettings), SessionError> {
    // The variables `${VAR}` in MCP server definitions expand from: the same ones `$ENV:`
    // references in settings see.
    let mut expansion_env = BTreeMap::new();
    let (loaded, home) = match settings {
        SessionSettings::FromEnvironment => {
            let options = SettingsOptions::from_env(cwd);
            let home = options.home.clone();
            expansion_env = options.env.clone();
            (Some(load_settings(&options)?), home)
        }
        SessionSettings::Load {
            home,
            env,
            overrides,
        } => {
            expansion_env = env.clone();
            let options = SettingsOptions {
                home: home.clone(),
                project_dir: cwd.to_path_buf(),
                env,
                overrides,
            };
            (Some(load_settings(&options)?), home)
        }
        SessionSettings::Loaded(loaded) => {
            // Settings the host loaded itself: `${VAR}` in MCP definitions expands from the
            // process environment, as Claude Code expands it.
            expansion_env = std::env::vars().collect();
            let loaded = loaded_settings(loaded)?;
            let home = home_of(&loaded);
            (Some(loaded), home)
        }
        SessionSettings::None => (None, None),
    };

    let mut warnings = Vec::new();
    let mut rules = RuleSet::new();
    let mut hooks = HooksConfig::new();
    let mut env = BTreeMap::new();
    let mut additional_directories = Vec::new();
    let mut default_mode = None;
    let mut bypass_disabled = false;
    let mut compaction = CompactionPolicy::default();
    let language = loaded.as_ref().and_then(|l| l.settings.language.clone());
    let task_context_enabled = loaded
        .as_ref()
        .is_none_or(|l| l.settings.task_context_enabled);
    let sandbox = loaded
        .as_ref()
        .map(|l| l.settings.sandbox.clone())
        .unwrap_or_default();

    if let Some(loaded) = &loaded {
        for warning in &loaded.warnings {
            warnings.push(SessionWarning {
                file: warning.source.path.clone(),
                json_path: warning.json_path.clone(),
                kind: serde_json::to_value(warning.kind)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_else(|| "settings".into()),
                message: warning.message.clone(),
            });
        }
        rules = permission_rules(loaded, cwd, home.as_deref(), &mut warnings)?;
        for warning in rules.warnings() {
            warnings.push(SessionWarning {
                file: None,
                json_path: String::new(),
                kind: "permission_rule".into(),
                message: warning,
            });
        }
        if !loaded.settings.disable_all_hooks {
            hooks = hook_config(loaded, &mut warnings)?;
            hooks.merge(extra_hooks);
        }
        env = loaded.settings.env.clone();
        additional_directories = loaded
            .settings
            .permissions
            .additional_directories
            .iter()
            .map(|d| d.path.clone())
            .collect();
        if let Some(setting) = loaded.settings.permissions.default_mode {
            // The settings module only accepts Claude Code's names, which the permission module
            // parses too.
            default_mode = Some(setting.as_str().parse().unwrap_or_default());
        }
        bypass_disabled = loaded.settings.permissions.disable_bypass_permissions_mode;
        compaction = loaded.settings.compaction;
    }
    let mut sensitive_paths: Vec<PathBuf> = settings_paths(home.as_deref(), cwd)
        .into_iter()
        .map(|(_, path)| path)
        .collect();
    sensitive_paths.extend(hook_script_paths(&hooks, cwd));

    let settings_targets = SettingsDestination::ALL
        .into_iter()
        .filter_map(|destination| {
            let path = match destination {
                SettingsDestination::LocalSettings => cwd.join(".claude/settings.local.json"),
                SettingsDestination::ProjectSettings => cwd.join(".claude/settings.json"),
                SettingsDestination::UserSettings => home.as_ref()?.join(".claude/settings.json"),
            };
            Some(SettingsTarget { destination, path })
        })
        .collect();

    // Settings `env` values are visible to `${VAR}` too (as they are to the server processes).
    for (name, value) in &env {
        expansion_env
            .entry(name.clone())
            .or_insert_with(|| value.clone());
    }
    let mcp = super::mcp::plan(loaded.as_ref(), cwd, &expansion_env, &mut warnings);

    let session_store = loaded
        .as_ref()
        .and_then(|loaded| loaded.merged.get("sessionStore"))
        .and_then(|value| StoreChoice::from_settings(value).ok());
    let resolved = ResolvedSettings {
        session_store,
        mcp_servers: mcp.servers,
        mcp_skipped: mcp.skipped,
        home,
        warnings,
        rules,
        default_mode,
        bypass_disabled,
        hooks,
        env,
        additional_directories,
        sensitive_paths,
        settings_targets,
        compaction,
        sandbox,
    };
    Ok((
        resolved,
        PromptSettings {
            language,
            task_context_enabled,
        },
    ))
}

/// The framework's [`LoadedSettings`] behind [`SessionSettings::Loaded`] (the only type that
/// implements the sealed [`PreloadedSettings`]).
fn loaded_settings(loaded: Box<dyn PreloadedSettings>) -> Result<LoadedSettings, SessionError> {
    match loaded.into_any().downcast::<LoadedSettings>() {
        Ok(loaded) => Ok(*loaded),
        Err(_) => Err(SessionError::Settings(SettingsProblem::new(
            "SessionSettings::Loaded holds settings of an unknown kind; pass LoadedSettings \
             from robota::framework::config::load_settings",
        ))),
    }
}

/// The home directory a session with these settings uses for user-level files (the same one
/// [`assemble`] uses): `HOME` for settings from the environment, the explicit one for `Load`,
/// the user layer's for `Loaded`, none for `None`.
pub(crate) fn settings_home(settings: &SessionSettings, cwd: &Path) -> Option<PathBuf> {
    match settings {
        SessionSettings::FromEnvironment => SettingsOptions::from_env(cwd).home,
        SessionSettings::Load { home, .. } => home.clone(),
        SessionSettings::Loaded(loaded) => loaded
            .as_any()
            .downcast_ref::<LoadedSettings>()
            .and_then(home_of),
        SessionSettings::None => None,
    }
}

/// The home directory already-loaded settings were loaded for (user-level files are read from
/// it even when no user settings file exists).
fn home_of(loaded: &LoadedSettings) -> Option<PathBuf> {
    loaded.home.clone()
}

impl crate::session::options::sealed::Sealed for LoadedSettings {}

impl PreloadedSettings for LoadedSettings {
    fn clone_boxed(&self) -> Box<dyn PreloadedSettings> {
        Box::new(self.clone())
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
}

impl From<SettingsError> for SessionError {
    /// The settings error as the session reports it, with the file and JSON path it names.
    fn from(error: SettingsError) -> Self {
        let file = match &error {
            SettingsError::Read { path, .. } | SettingsError::Parse { path, .. } => {
                Some(path.clone())
            }
            SettingsError::File(error) => Some(error.path().to_path_buf()),
            SettingsError::InvalidValue { source_label, .. }
            | SettingsError::MissingField { source_label, .. }
            | SettingsError::MissingEnvVar { source_label, .. }
            | SettingsError::UnknownProfile { source_label, .. }
            | SettingsError::InvalidPermissionMode { source_label, .. } => {
                source_label.path.clone()
            }
            // Variants added to the settings errors later carry no file until listed here.
            #[allow(unreachable_patterns)]
            _ => None,
        };
        let json_path = match &error {
            SettingsError::InvalidValue { json_path, .. }
            | SettingsError::MissingField { json_path, .. }
            | SettingsError::MissingEnvVar { json_path, .. }
            | SettingsError::InvalidPermissionMode { json_path, .. } => Some(json_path.clone()),
            SettingsError::UnknownProfile { .. } => Some("currentProvider".to_string()),
            _ => None,
        };
        SessionError::Settings(SettingsProblem::from_error(error, file, json_path))
    }
}

/// Claude Code's name for a layer, shown when a decision explains which rule decided.
fn layer_label(kind: SettingsSourceKind) -> &'static str {
    match kind {
        SettingsSourceKind::UserRobota | SettingsSourceKind::UserClaude => "userSettings",
        SettingsSourceKind::ProjectRobota | SettingsSourceKind::ProjectClaude => "projectSettings",
        SettingsSourceKind::ProjectRobotaLocal | SettingsSourceKind::ProjectClaudeLocal => {
            "localSettings"
        }
        SettingsSourceKind::Override => "overrides",
    }
}

/// The rule source of a layer: `/path` rules anchor at the directory holding its `.claude/` or
/// `.robota/` (the project for project files, the home directory for user files).
fn rule_source(source: &SettingsSource, cwd: &Path, home: Option<&Path>) -> RuleSource {
    let label = layer_label(source.kind);
    let base = if source.kind.is_user() {
        home.map(Path::to_path_buf)
    } else {
        Some(cwd.to_path_buf())
    };
    let mut rule_source = RuleSource::new(label);
    if let Some(path) = &source.path {
        rule_source = rule_source.with_file(path);
    }
    if let Some(base) = base {
        rule_source = rule_source.with_base_dir(base);
    }
    rule_source
}

/// Every layer's allow/ask/deny rules, parsed entry by entry ([`RuleSet::add_settings_list`]):
/// a rule robota cannot parse is a warning naming its file and JSON path (an allow rule is
/// skipped; a deny or ask rule makes every call of its tool need approval). Only deny or ask
/// rules whose tool cannot even be read are errors; all of those of all layers are reported.
fn permission_rules(
    loaded: &LoadedSettings,
    cwd: &Path,
    home: Option<&Path>,
    warnings: &mut Vec<SessionWarning>,
) -> Result<RuleSet, SessionError> {
    let mut rules = RuleSet::new();
    let mut errors = Vec::new();
    for (source, permissions) in loaded.permissions_layers() {
        let rule_source = rule_source(source, cwd, home);
        for list in [RuleList::Allow, RuleList::Ask, RuleList::Deny] {
            let Some(items) = permissions.get(list.as_str()).and_then(Value::as_array) else {
                continue;
            };
            // The settings loader already checked these are strings.
            let texts: Vec<&str> = items.iter().filter_map(Value::as_str).collect();
            match rules.add_settings_list(list, &texts, &rule_source) {
                Ok(issues) => warnings.extend(issues.iter().map(|issue| SessionWarning {
                    file: source.path.clone(),
                    json_path: format!("permissions.{}[{}]", list.as_str(), issue.error.index),
                    kind: "permission_rule".into(),
                    message: issue.message(),
                })),
                Err(problems) => errors.extend(problems.into_iter().map(|p| RuleError {
                    file: source.path.clone(),
                    json_path: format!("permissions.{}[{}]", list.as_str(), p.index),
                    rule: p.rule,
                    problem: format!(
                        "{}; robota cannot tell which tool this {} rule is meant to restrict, so \
                         it refuses to start rather than run without it",
                        p.problem,
                        list.as_str()
                    ),
                })),
            }
        }
    }
    if errors.is_empty() {
        Ok(rules)
    } else {
        Err(SessionError::InvalidPermissionRules { errors })
    }
}

/// Every layer's hooks, parsed and merged (lowest precedence first); all errors of all layers
/// are reported together, warnings are collected.
fn hook_config(
    loaded: &LoadedSettings,
    warnings: &mut Vec<SessionWarning>,
) -> Result<HooksConfig, SessionError> {
    let mut layers = Vec::new();
    let mut diagnostics = Vec::new();
    for layer in loaded.hooks_layers() {
        let file = layer
            .source
            .path
            .clone()
            .unwrap_or_else(|| PathBuf::from("<settings overrides>"));
        let parsed = HooksConfig::parse(&file, layer.hooks);
        for diagnostic in &parsed.diagnostics {
            if diagnostic.severity == Severity::Warning {
                warnings.push(SessionWarning {
                    file: Some(diagnostic.file.clone()),
                    json_path: diagnostic.json_path.clone(),
                    kind: "hook_config".into(),
                    message: diagnostic.problem.to_string(),
                });
            }
        }
        if parsed.has_errors() {
            diagnostics.extend(parsed.diagnostics);
        } else {
            layers.push(parsed.config);
        }
    }
    if diagnostics.iter().any(|d| d.severity == Severity::Error) {
        return Err(SessionError::InvalidHooks(HookConfigError { diagnostics }));
    }
    Ok(HooksConfig::merged(layers))
}

/// Script files command hooks run, so writing them needs approval like the settings themselves:
/// the first word of each command when it is a path (`$CLAUDE_PROJECT_DIR` expanded).
fn hook_script_paths(hooks: &HooksConfig, project_dir: &Path) -> Vec<PathBuf> {
    let project = project_dir.to_string_lossy();
    let mut paths = Vec::new();
    for event in hooks.events() {
        for group in hooks.groups(event) {
            for hook in &group.hooks {
                let HandlerKind::Command(command) = &hook.handler.kind else {
                    continue;
                };
                let Some(first) = first_word(&command.command) else {
                    continue;
                };
                let expanded = first
                    .replace("${CLAUDE_PROJECT_DIR}", &project)
                    .replace("$CLAUDE_PROJECT_DIR", &project)
                    .replace("${ROBOTA_PROJECT_DIR}", &project)
                    .replace("$ROBOTA_PROJECT_DIR", &project);
                if !expanded.contains('/') || expanded.contains('$') {
                    continue;
                }
                let path = project_dir.join(&expanded);
                if !paths.contains(&path) {
                    paths.push(path);
                }
            }
        }
    }
    paths
}

/// The first shell word of `command`, with quotes removed (`"$CLAUDE_PROJECT_DIR"/x.sh` →
/// `$CLAUDE_PROJECT_DIR/x.sh`).
fn first_word(command: &str) -> Option<String> {
    let mut word = String::new();
    let mut quote = None;
    for c in command.trim_start().chars() {
        match (quote, c) {
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, c) if c.is_whitespace() => break,
            (_, c) => word.push(c),
        }
    }
    (!word.is_empty()).then_some(word)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_words() {
        assert_eq!(first_word("'/a b/c.sh' x").as_deref(), Some("/a b/c.sh"));
        assert_eq!(
            first_word("\"$CLAUDE_PROJECT_DIR\"/hooks/x.sh arg").as_deref(),
            Some("$CLAUDE_PROJECT_DIR/hooks/x.sh")
        );
        assert_eq!(first_word("./x.sh").as_deref(), Some("./x.sh"));
        assert_eq!(first_word("   ").as_deref(), None);
    }
}
