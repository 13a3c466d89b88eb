//! Settings loading on temp project trees with a fake HOME: layer precedence, list concatenation
//! with sources, `$ENV:` references, provider profiles, and every validation error.

use std::fs;
use std::path::{Path, PathBuf};

use robota::framework::config::{
    load_settings, settings_paths, LoadedSettings, PermissionModeSetting, ProviderOrigin, RuleList,
    SettingsError, SettingsOptions, SettingsSourceKind, SettingsWarningKind,
    DEFAULT_COMPACTION_THRESHOLD,
};
use serde_json::json;
use tempfile::TempDir;

/// A fake home and a project directory side by side.
struct Tree {
    _dir: TempDir,
    home: PathBuf,
    project: PathBuf,
}

impl Tree {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let home = dir.path().join("home");
        let project = dir.path().join("project");
        fs::create_dir_all(&home).expect("home");
        fs::create_dir_all(&project).expect("project");
        Tree {
            _dir: dir,
            home,
            project,
        }
    }

    fn path(&self, kind: SettingsSourceKind) -> PathBuf {
        kind.path(Some(&self.home), &self.project)
            .expect("file layer")
    }

    fn write(&self, kind: SettingsSourceKind, value: serde_json::Value) -> PathBuf {
        let text = serde_json::to_string_pretty(&value).expect("json");
        self.write_raw(kind, &text)
    }

    fn write_raw(&self, kind: SettingsSourceKind, text: &str) -> PathBuf {
        let path = self.path(kind);
        fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        fs::write(&path, text).expect("write");
        path
    }

    fn options(&self) -> SettingsOptions {
        SettingsOptions::new(&self.project).with_home(&self.home)
    }

    fn load(&self) -> LoadedSettings {
        load_settings(&self.options()).expect("settings load")
    }

    fn load_err(&self) -> SettingsError {
        load_settings(&self.options()).expect_err("settings should fail")
    }
}

use SettingsSourceKind::*;

#[test]
fn six_layers_in_spec_order_and_the_highest_wins() {
    let tree = Tree::new();
    let kinds = SettingsSourceKind::FILE_LAYERS;
    assert_eq!(
        kinds,
        [
            UserRobota,
            UserClaude,
            ProjectRobota,
            ProjectRobotaLocal,
            ProjectClaude,
            ProjectClaudeLocal
        ]
    );
    let expected_paths = [
        tree.home.join(".robota/settings.json"),
        tree.home.join(".claude/settings.json"),
        tree.project.join(".robota/settings.json"),
        tree.project.join(".robota/settings.local.json"),
        tree.project.join(".claude/settings.json"),
        tree.project.join(".claude/settings.local.json"),
    ];
    let paths: Vec<PathBuf> = settings_paths(Some(&tree.home), &tree.project)
        .into_iter()
        .map(|(_, path)| path)
        .collect();
    assert_eq!(paths, expected_paths);

    for kind in kinds {
        tree.write(
            kind,
            json!({ "model": kind.as_str(), "language": kind.as_str() }),
        );
    }
    let loaded = tree.load();
    let loaded_kinds: Vec<_> = loaded
        .layers
        .iter()
        .map(|layer| layer.source.kind)
        .collect();
    assert_eq!(loaded_kinds, kinds.to_vec());
    assert_eq!(
        loaded.settings.model.as_deref(),
        Some("project_claude_local")
    );

    // Peel layers off from the top: each time the next one down wins.
    for (index, kind) in kinds.iter().enumerate().rev().skip(1) {
        fs::remove_file(tree.path(kinds[index + 1])).expect("remove");
        assert_eq!(tree.load().settings.model.as_deref(), Some(kind.as_str()));
    }

    // Overrides from code beat every file.
    let loaded = load_settings(
        &tree
            .options()
            .with_overrides(json!({ "model": "from-code" })),
    )
    .expect("load");
    assert_eq!(loaded.settings.model.as_deref(), Some("from-code"));
    let top = loaded.layers.last().expect("override layer");
    assert_eq!(top.source.kind, Override);
    assert_eq!(top.source.path, None);
    // The lower layer still provides what the override does not set.
    assert_eq!(loaded.settings.language.as_deref(), Some("user_robota"));
}

#[test]
fn missing_files_are_not_errors_and_empty_files_count_as_empty() {
    let tree = Tree::new();
    let loaded = tree.load();
    assert!(loaded.layers.is_empty());
    assert_eq!(loaded.settings.model, None);
    assert!(loaded.settings.compaction.enabled);
    assert_eq!(
        loaded.settings.compaction.threshold,
        DEFAULT_COMPACTION_THRESHOLD
    );
    assert!(loaded.settings.task_context_enabled);

    tree.write_raw(ProjectRobota, "  \n");
    tree.write_raw(ProjectClaude, "\u{feff}{\"model\": \"bom\"}");
    let loaded = tree.load();
    assert_eq!(loaded.layers.len(), 2);
    assert_eq!(loaded.settings.model.as_deref(), Some("bom"));

    // No home: user layers are skipped, project layers still load.
    tree.write(UserRobota, json!({ "language": "ko" }));
    let loaded = load_settings(&SettingsOptions::new(&tree.project)).expect("load");
    assert_eq!(loaded.settings.language, None);
    assert_eq!(loaded.settings.model.as_deref(), Some("bom"));
}

#[test]
fn objects_deep_merge_per_key() {
    let tree = Tree::new();
    tree.write(
        UserClaude,
        json!({
            "env": { "A": "user", "B": "user" },
            "providers": { "main": { "type": "openai", "model": "gpt-4o", "timeout": 5000 } }
        }),
    );
    tree.write(
        ProjectRobota,
        json!({
            "env": { "B": "project", "C": 3, "D": true },
            "providers": { "main": { "baseURL": "http://localhost:1234/v1" } },
            "currentProvider": "main"
        }),
    );
    let loaded = tree.load();
    let env = &loaded.settings.env;
    assert_eq!(env["A"], "user");
    assert_eq!(env["B"], "project");
    assert_eq!(env["C"], "3");
    assert_eq!(env["D"], "true");
    let profile = &loaded.settings.providers["main"];
    assert_eq!(profile.kind, "openai");
    assert_eq!(profile.model.as_deref(), Some("gpt-4o"));
    assert_eq!(profile.timeout_ms, Some(5000));
    assert_eq!(
        profile.base_url.as_deref(),
        Some("http://localhost:1234/v1")
    );
}

#[test]
fn permission_lists_concatenate_with_their_sources() {
    let tree = Tree::new();
    let user = tree.write(
        UserClaude,
        json!({ "permissions": {
            "deny": ["Bash(rm -rf *)"],
            "allow": ["Read"],
            "additionalDirectories": ["~/shared", "../sibling"]
        }}),
    );
    let project = tree.write(
        ProjectClaude,
        json!({ "permissions": {
            "allow": ["Bash(npm run test *)", "Read"],
            "ask": ["Bash(git push *)"],
            "defaultMode": "acceptEdits",
            "additionalDirectories": ["/abs/dir", "~/shared"]
        }}),
    );
    let local = tree.write(
        ProjectClaudeLocal,
        json!({ "permissions": { "allow": ["Bash(rm -rf *)"], "defaultMode": "plan" }}),
    );
    let loaded = tree.load();
    let permissions = &loaded.settings.permissions;
    let summary: Vec<(RuleList, &str, Option<&Path>)> = permissions
        .rules
        .iter()
        .map(|rule| (rule.list, rule.text.as_str(), rule.source.path.as_deref()))
        .collect();
    assert_eq!(
        summary,
        vec![
            (RuleList::Allow, "Read", Some(user.as_path())),
            (RuleList::Deny, "Bash(rm -rf *)", Some(user.as_path())),
            (
                RuleList::Allow,
                "Bash(npm run test *)",
                Some(project.as_path())
            ),
            (RuleList::Ask, "Bash(git push *)", Some(project.as_path())),
            (RuleList::Allow, "Bash(rm -rf *)", Some(local.as_path())),
        ]
    );
    // The user-level deny survives the project-level allow of the same rule.
    assert_eq!(permissions.rules_in(RuleList::Deny).count(), 1);

    assert_eq!(permissions.default_mode, Some(PermissionModeSetting::Plan));
    assert_eq!(
        permissions
            .default_mode_source
            .as_ref()
            .and_then(|s| s.path.as_deref()),
        Some(local.as_path())
    );
    let dirs: Vec<(PathBuf, SettingsSourceKind)> = permissions
        .additional_directories
        .iter()
        .map(|dir| (dir.path.clone(), dir.source.kind))
        .collect();
    assert_eq!(
        dirs,
        vec![
            (tree.home.join("shared"), UserClaude),
            (tree.project.join("../sibling"), UserClaude),
            (PathBuf::from("/abs/dir"), ProjectClaude),
        ]
    );

    // The merged raw value concatenates the lists too, and keeps each string once.
    assert_eq!(
        loaded.merged["permissions"]["allow"],
        json!(["Read", "Bash(npm run test *)", "Bash(rm -rf *)"])
    );
    // The permission module can also read the layers itself.
    assert_eq!(loaded.permissions_layers().len(), 3);
}

#[test]
fn no_layer_loses_its_hooks() {
    let tree = Tree::new();
    let user_hook =
        json!({ "matcher": "Bash", "hooks": [{ "type": "command", "command": "audit.sh" }] });
    let project_hook =
        json!({ "matcher": "Edit", "hooks": [{ "type": "command", "command": "fmt.sh" }] });
    let user = tree.write(
        UserClaude,
        json!({ "hooks": { "PreToolUse": [user_hook] } }),
    );
    let project = tree.write(
        ProjectClaude,
        json!({ "hooks": {
            "PreToolUse": [project_hook],
            "Stop": [{ "hooks": [{ "type": "command", "command": "bye.sh" }] }]
        }}),
    );
    tree.write(ProjectRobota, json!({ "model": "x" }));
    let loaded = tree.load();
    let layers = loaded.hooks_layers();
    assert_eq!(layers.len(), 2);
    assert_eq!(layers[0].source.path.as_deref(), Some(user.as_path()));
    assert_eq!(layers[0].hooks["PreToolUse"][0]["matcher"], "Bash");
    assert_eq!(layers[1].source.path.as_deref(), Some(project.as_path()));
    assert_eq!(layers[1].hooks["PreToolUse"][0]["matcher"], "Edit");
    // In the merged value the per-event arrays concatenate instead of replacing.
    let merged = loaded.merged["hooks"]["PreToolUse"]
        .as_array()
        .expect("array");
    assert_eq!(merged.len(), 2);
    assert_eq!(
        loaded.merged["hooks"]["Stop"][0]["hooks"][0]["command"],
        "bye.sh"
    );
}

#[test]
fn env_references_resolve_from_the_given_map() {
    let tree = Tree::new();
    tree.write(
        UserRobota,
        json!({
            "currentProvider": "claude",
            "providers": {
                "claude": { "type": "anthropic", "apiKey": "$ENV:ANTHROPIC_API_KEY",
                            "baseURL": "$ENV:ANTHROPIC_BASE_URL", "model": "claude-sonnet-4-5" },
                "gpt": { "type": "openai", "apiKey": "$ENV:OPENAI_API_KEY" }
            },
            "env": { "TOKEN": "$ENV:SECRET_TOKEN", "PLAIN": "value" },
            "model": "$ENV:MODEL_OVERRIDE"
        }),
    );
    let options = tree.options().with_env([
        ("ANTHROPIC_API_KEY", "sk-ant"),
        ("ANTHROPIC_BASE_URL", "https://proxy.example/v1"),
        ("SECRET_TOKEN", "t0k"),
        ("MODEL_OVERRIDE", "claude-opus-4-5"),
    ]);
    let loaded = load_settings(&options).expect("load");
    let provider = loaded.settings.provider.as_ref().expect("provider");
    assert_eq!(provider.profile.api_key.as_deref(), Some("sk-ant"));
    assert_eq!(
        provider.profile.api_key_env.as_deref(),
        Some("ANTHROPIC_API_KEY")
    );
    assert_eq!(
        provider.profile.base_url.as_deref(),
        Some("https://proxy.example/v1")
    );
    assert_eq!(loaded.settings.env["TOKEN"], "t0k");
    assert_eq!(loaded.settings.env["PLAIN"], "value");
    assert_eq!(loaded.settings.effective_model(), Some("claude-opus-4-5"));
    // Secrets never show up in debug output or serialisation.
    let debug = format!("{:?}", loaded.settings);
    assert!(!debug.contains("sk-ant"), "{debug}");
    let serialized = serde_json::to_string(&loaded.settings).expect("serialize");
    assert!(!serialized.contains("sk-ant"), "{serialized}");

    // The inactive profile's missing key is a warning, not an error.
    let gpt = &loaded.settings.providers["gpt"];
    assert_eq!(gpt.api_key, None);
    assert_eq!(gpt.api_key_env.as_deref(), Some("OPENAI_API_KEY"));
    let warning = loaded
        .warnings
        .iter()
        .find(|w| w.kind == SettingsWarningKind::UnresolvedEnvReference)
        .expect("warning");
    assert_eq!(warning.json_path, "providers.gpt.apiKey");
    assert!(warning.message.contains("OPENAI_API_KEY"));
}

#[test]
fn missing_env_variable_names_file_path_and_variable() {
    let tree = Tree::new();
    let file = tree.write(
        ProjectRobota,
        json!({
            "currentProvider": "claude",
            "providers": { "claude": { "type": "anthropic", "apiKey": "$ENV:ANTHROPIC_API_KEY" } }
        }),
    );
    let err = tree.load_err();
    match &err {
        SettingsError::MissingEnvVar {
            source_label,
            json_path,
            variable,
        } => {
            assert_eq!(source_label.path.as_deref(), Some(file.as_path()));
            assert_eq!(json_path, "providers.claude.apiKey");
            assert_eq!(variable, "ANTHROPIC_API_KEY");
        }
        other => panic!("unexpected error {other:?}"),
    }
    let message = err.to_string();
    assert!(message.contains(&file.display().to_string()), "{message}");
    assert!(message.contains("providers.claude.apiKey"), "{message}");
    assert!(message.contains("ANTHROPIC_API_KEY"), "{message}");

    // The reference is attributed to the layer whose value survived the merge.
    let local = tree.write(ProjectClaudeLocal, json!({ "env": { "X": "$ENV:NOPE" } }));
    tree.write(ProjectRobota, json!({ "env": { "X": "literal" } }));
    match tree.load_err() {
        SettingsError::MissingEnvVar {
            source_label,
            json_path,
            ..
        } => {
            assert_eq!(source_label.path.as_deref(), Some(local.as_path()));
            assert_eq!(json_path, "env.X");
        }
        other => panic!("unexpected error {other:?}"),
    }

    // An overridden reference is never looked up.
    tree.write(ProjectClaudeLocal, json!({ "env": { "X": "fine" } }));
    tree.write(ProjectRobota, json!({ "env": { "X": "$ENV:NOPE" } }));
    assert_eq!(tree.load().settings.env["X"], "fine");

    // A malformed reference is a validation error.
    fs::remove_file(tree.path(ProjectRobota)).expect("remove");
    tree.write(ProjectClaudeLocal, json!({ "model": "$ENV:not a name" }));
    match tree.load_err() {
        SettingsError::InvalidValue {
            json_path,
            expected,
            ..
        } => {
            assert_eq!(json_path, "model");
            assert!(expected.contains("$ENV:"), "{expected}");
        }
        other => panic!("unexpected error {other:?}"),
    }
}

#[test]
fn provider_profiles_resolve_in_spec_order() {
    let tree = Tree::new();
    // Legacy provider when no currentProvider.
    let legacy_file = tree.write(
        UserRobota,
        json!({ "provider": { "name": "openai", "model": "gpt-4o", "apiKey": "k" } }),
    );
    let loaded = tree.load();
    let provider = loaded.settings.provider.as_ref().expect("legacy provider");
    assert_eq!(provider.origin, ProviderOrigin::Legacy);
    assert_eq!(provider.profile.kind, "openai");
    assert_eq!(provider.source.path.as_deref(), Some(legacy_file.as_path()));
    assert_eq!(loaded.settings.effective_model(), Some("gpt-4o"));

    // A legacy provider without a name is an Anthropic one (TypeScript Robota's default).
    tree.write(UserRobota, json!({ "provider": { "model": "claude-x" } }));
    let loaded = tree.load();
    assert_eq!(
        loaded
            .settings
            .provider
            .as_ref()
            .map(|p| p.profile.kind.as_str()),
        Some("anthropic")
    );

    // currentProvider wins over the legacy provider, which is reported as ignored.
    tree.write(
        ProjectClaude,
        json!({
            "currentProvider": "local",
            "providers": {
                "local": { "type": "openai", "model": "qwen", "baseURL": "http://localhost:1234/v1",
                           "options": { "x": 1 } },
                "other": { "type": "anthropic", "model": "claude" }
            }
        }),
    );
    let loaded = tree.load();
    let provider = loaded.settings.provider.as_ref().expect("profile");
    assert_eq!(
        provider.origin,
        ProviderOrigin::Profile {
            name: "local".into()
        }
    );
    assert_eq!(provider.profile.model.as_deref(), Some("qwen"));
    assert_eq!(provider.profile.options, Some(json!({ "x": 1 })));
    assert_eq!(loaded.settings.current_provider.as_deref(), Some("local"));
    assert!(loaded
        .warnings
        .iter()
        .any(|w| w.json_path == "provider" && w.kind == SettingsWarningKind::IgnoredKey));
    // Top-level `model` overrides the profile's model.
    tree.write(ProjectClaudeLocal, json!({ "model": "override-model" }));
    assert_eq!(
        tree.load().settings.effective_model(),
        Some("override-model")
    );

    // No provider settings at all: nothing resolved (host defaults apply).
    let empty = Tree::new();
    assert!(empty.load().settings.provider.is_none());
}

#[test]
fn unknown_current_provider_lists_the_defined_profiles() {
    let tree = Tree::new();
    tree.write(
        UserRobota,
        json!({ "providers": { "b": { "type": "openai" }, "a": { "type": "anthropic" } } }),
    );
    let file = tree.write(ProjectRobota, json!({ "currentProvider": "missing" }));
    let err = tree.load_err();
    let message = err.to_string();
    match err {
        SettingsError::UnknownProfile {
            source_label,
            name,
            available,
        } => {
            assert_eq!(source_label.path.as_deref(), Some(file.as_path()));
            assert_eq!(name, "missing");
            assert_eq!(available, vec!["a", "b"]);
        }
        other => panic!("unexpected error {other:?}"),
    }
    assert!(message.contains("currentProvider"), "{message}");
    assert!(message.contains("a, b"), "{message}");
}

#[test]
fn profile_without_type_is_an_error() {
    let tree = Tree::new();
    let file = tree.write(
        ProjectRobota,
        json!({ "providers": { "local": { "model": "m" } } }),
    );
    let err = tree.load_err();
    let message = err.to_string();
    match err {
        SettingsError::MissingField {
            source_label,
            json_path,
            field,
            ..
        } => {
            assert_eq!(source_label.path.as_deref(), Some(file.as_path()));
            assert_eq!(json_path, "providers.local");
            assert_eq!(field, "type");
        }
        other => panic!("unexpected error {other:?}"),
    }
    assert!(message.contains("anthropic"), "{message}");
}

#[test]
fn malformed_json_reports_file_line_and_column() {
    let tree = Tree::new();
    let file = tree.write_raw(ProjectClaude, "{\n  \"model\": \"x\",\n  oops\n}\n");
    let err = tree.load_err();
    let message = err.to_string();
    match err {
        SettingsError::Parse {
            path, line, column, ..
        } => {
            assert_eq!(path, file);
            assert_eq!(line, 3);
            assert_eq!(column, 3);
        }
        other => panic!("unexpected error {other:?}"),
    }
    assert!(
        message.starts_with(&format!("{}:3:3:", file.display())),
        "{message}"
    );
}

/// Writes `value` as the project `.robota/settings.json` and returns the error and message.
fn invalid(value: serde_json::Value) -> (SettingsError, String, PathBuf) {
    let tree = Tree::new();
    let file = tree.write(ProjectRobota, value);
    let err = tree.load_err();
    let message = err.to_string();
    (err, message, file)
}

fn assert_invalid(value: serde_json::Value, path: &str, expected_fragment: &str) {
    let (err, message, file) = invalid(value);
    match &err {
        SettingsError::InvalidValue {
            source_label,
            json_path,
            expected,
            ..
        } => {
            assert_eq!(source_label.path.as_deref(), Some(file.as_path()));
            assert_eq!(json_path, path);
            assert!(
                expected.contains(expected_fragment),
                "expected `{expected}` to mention `{expected_fragment}`"
            );
        }
        other => panic!("unexpected error {other:?}"),
    }
    assert!(message.contains(&file.display().to_string()), "{message}");
    assert!(message.contains(&format!("`{path}`")), "{message}");
    assert!(message.contains("found"), "{message}");
}

#[test]
fn every_validation_error_names_file_path_and_expectation() {
    assert_invalid(json!([1, 2]), "(top level)", "object");
    assert_invalid(json!({ "model": 3 }), "model", "string");
    assert_invalid(json!({ "language": "" }), "language", "non-empty string");
    assert_invalid(
        json!({ "env": { "A": { "nested": 1 } } }),
        "env.A",
        "string",
    );
    assert_invalid(json!({ "env": [] }), "env", "object");
    assert_invalid(
        json!({ "providers": { "anthropic": { "type": "anthropic", "baseURL": "localhost:1234" } } }),
        "providers.anthropic.baseURL",
        "http",
    );
    assert_invalid(
        json!({ "providers": { "gpt-4.1": { "type": "openai", "timeout": -5 } } }),
        "providers[\"gpt-4.1\"].timeout",
        "milliseconds",
    );
    assert_invalid(
        json!({ "providers": { "p": "openai" } }),
        "providers.p",
        "object",
    );
    assert_invalid(
        json!({ "providers": { "p": { "type": "openai", "options": [] } } }),
        "providers.p.options",
        "object",
    );
    assert_invalid(
        json!({ "provider": { "apiKey": 7 } }),
        "provider.apiKey",
        "string",
    );
    assert_invalid(
        json!({ "permissions": { "allow": ["Read", 3] } }),
        "permissions.allow[1]",
        "string",
    );
    assert_invalid(
        json!({ "permissions": { "deny": "Bash" } }),
        "permissions.deny",
        "array",
    );
    assert_invalid(
        json!({ "permissions": { "disableBypassPermissionsMode": true } }),
        "permissions.disableBypassPermissionsMode",
        "disable",
    );
    assert_invalid(json!({ "hooks": [] }), "hooks", "object");
    assert_invalid(
        json!({ "disableAllHooks": "yes" }),
        "disableAllHooks",
        "true or false",
    );
    assert_invalid(
        json!({ "autoCompactThreshold": 1.5 }),
        "autoCompactThreshold",
        "at most 1",
    );
    assert_invalid(
        json!({ "autoCompactThreshold": 0 }),
        "autoCompactThreshold",
        "greater than 0",
    );
    assert_invalid(
        json!({ "autoCompactThreshold": true }),
        "autoCompactThreshold",
        "false",
    );
    assert_invalid(
        json!({ "taskContext": { "enabled": 1 } }),
        "taskContext.enabled",
        "true or false",
    );
}

#[test]
fn baseurl_from_an_env_reference_is_checked_after_resolution() {
    let tree = Tree::new();
    let file = tree.write(
        ProjectRobota,
        json!({ "currentProvider": "p",
                "providers": { "p": { "type": "openai", "baseURL": "$ENV:BASE" } } }),
    );
    let err =
        load_settings(&tree.options().with_env([("BASE", "ftp://nope")])).expect_err("bad url");
    match err {
        SettingsError::InvalidValue {
            source_label,
            json_path,
            ..
        } => {
            assert_eq!(source_label.path.as_deref(), Some(file.as_path()));
            assert_eq!(json_path, "providers.p.baseURL");
        }
        other => panic!("unexpected error {other:?}"),
    }
}

#[test]
fn unknown_default_mode_lists_the_valid_modes() {
    let (err, message, file) = invalid(json!({ "permissions": { "defaultMode": "yolo" } }));
    match err {
        SettingsError::InvalidPermissionMode {
            source_label,
            json_path,
            value,
        } => {
            assert_eq!(source_label.path.as_deref(), Some(file.as_path()));
            assert_eq!(json_path, "permissions.defaultMode");
            assert_eq!(value, "yolo");
        }
        other => panic!("unexpected error {other:?}"),
    }
    for mode in [
        "default",
        "acceptEdits",
        "plan",
        "dontAsk",
        "bypassPermissions",
    ] {
        assert!(message.contains(mode), "{message}");
    }
}

#[test]
fn permission_modes_parse_and_auto_is_reported_not_applied() {
    let tree = Tree::new();
    for (written, expected) in [
        ("default", PermissionModeSetting::Default),
        ("manual", PermissionModeSetting::Default),
        ("acceptEdits", PermissionModeSetting::AcceptEdits),
        ("plan", PermissionModeSetting::Plan),
        ("dontAsk", PermissionModeSetting::DontAsk),
        (
            "bypassPermissions",
            PermissionModeSetting::BypassPermissions,
        ),
    ] {
        tree.write(
            ProjectClaude,
            json!({ "permissions": { "defaultMode": written } }),
        );
        assert_eq!(
            tree.load().settings.permissions.default_mode,
            Some(expected)
        );
    }
    tree.write(
        ProjectClaude,
        json!({ "permissions": { "defaultMode": "auto" } }),
    );
    let loaded = tree.load();
    assert_eq!(loaded.settings.permissions.default_mode, None);
    assert!(loaded
        .warnings
        .iter()
        .any(|w| w.json_path == "permissions.defaultMode"));
}

#[test]
fn unknown_keys_are_reported_not_silently_ignored() {
    let tree = Tree::new();
    let file = tree.write(
        ProjectClaude,
        json!({
            "$schema": "https://json.schemastore.org/claude-code-settings.json",
            "modle": "typo",
            "statusLine": { "type": "command", "command": "x" },
            "permissions": { "alow": [] },
            "providers": { "p": { "type": "openai", "apikey": "k" } },
            "taskContext": { "enabled": false }
        }),
    );
    let loaded = tree.load();
    let find = |path: &str| {
        loaded
            .warnings
            .iter()
            .find(|w| w.json_path == path)
            .unwrap_or_else(|| panic!("no warning for {path}: {:?}", loaded.warnings))
    };
    assert_eq!(find("modle").kind, SettingsWarningKind::UnknownKey);
    assert_eq!(find("modle").source.path.as_deref(), Some(file.as_path()));
    assert_eq!(find("statusLine").kind, SettingsWarningKind::IgnoredKey);
    assert_eq!(
        find("permissions.alow").kind,
        SettingsWarningKind::UnknownKey
    );
    assert_eq!(
        find("providers.p.apikey").kind,
        SettingsWarningKind::UnknownKey
    );
    assert!(!loaded.warnings.iter().any(|w| w.json_path == "$schema"));
    assert!(find("modle")
        .to_string()
        .contains(&file.display().to_string()));
    assert!(!loaded.settings.task_context_enabled);

    // An unknown provider type is a warning (a host may register it).
    tree.write(
        ProjectRobota,
        json!({ "providers": { "x": { "type": "mystery" } } }),
    );
    let loaded = tree.load();
    assert!(loaded
        .warnings
        .iter()
        .any(|w| w.kind == SettingsWarningKind::UnknownProviderType
            && w.json_path == "providers.x.type"));
}

#[test]
fn compaction_policy_from_auto_compact_threshold() {
    let tree = Tree::new();
    tree.write(UserRobota, json!({ "autoCompactThreshold": 0.5 }));
    let policy = tree.load().settings.compaction;
    assert!(policy.enabled);
    assert_eq!(policy.threshold, 0.5);
    tree.write(ProjectRobota, json!({ "autoCompactThreshold": false }));
    let policy = tree.load().settings.compaction;
    assert!(!policy.enabled);
}

#[test]
fn misc_flags_merge() {
    let tree = Tree::new();
    tree.write(
        UserClaude,
        json!({ "disableAllHooks": true,
        "permissions": { "disableBypassPermissionsMode": "disable" } }),
    );
    let settings = tree.load().settings;
    assert!(settings.disable_all_hooks);
    assert!(settings.permissions.disable_bypass_permissions_mode);
}

#[test]
fn a_file_that_is_both_user_and_project_layer_loads_once() {
    let tree = Tree::new();
    tree.write(
        UserClaude,
        json!({ "permissions": { "allow": ["Read"] },
        "hooks": { "Stop": [{ "hooks": [{ "type": "command", "command": "x" }] }] } }),
    );
    // Project directory == home directory.
    let options = SettingsOptions::new(&tree.home).with_home(&tree.home);
    let loaded = load_settings(&options).expect("load");
    assert_eq!(loaded.layers.len(), 1);
    assert_eq!(loaded.layers[0].source.kind, UserClaude);
    assert_eq!(loaded.hooks_layers().len(), 1);
}

#[test]
fn a_settings_path_that_is_a_directory_is_refused_by_name() {
    let tree = Tree::new();
    fs::create_dir_all(tree.path(ProjectRobota)).expect("mkdir");
    match tree.load_err() {
        SettingsError::File(error) => {
            assert_eq!(error.path(), tree.path(ProjectRobota));
            assert!(error.to_string().contains("is a directory"), "{error}");
        }
        other => panic!("unexpected error {other:?}"),
    }
}

#[test]
fn override_layer_errors_name_the_overrides() {
    let tree = Tree::new();
    let err = load_settings(&tree.options().with_overrides(json!({ "model": false })))
        .expect_err("invalid override");
    let message = err.to_string();
    assert!(
        message.contains("settings overrides (passed in code)"),
        "{message}"
    );
    assert!(message.contains("`model`"), "{message}");
}

#[test]
fn sandbox_settings_merge_across_layers_and_warn_on_unknown_keys() {
    let tree = Tree::new();
    let user = tree.write(
        UserClaude,
        json!({"sandbox": {
            "enabled": true,
            "excludedCommands": ["docker:*"],
            "network": {"allowedDomains": ["github.com"], "allowLocalBinding": true},
            "filesystem": {"allowWrite": ["~/.cache/x"], "denyRead": ["~/.ssh"]},
        }}),
    );
    let project = tree.write(
        ProjectClaude,
        json!({"sandbox": {
            "failIfUnavailable": true,
            "excludedCommands": ["git push *"],
            "backend": "landlock",
            "hooks": true,
            "network": {"allowedDomains": ["*.npmjs.org"], "httpProxyPort": 8080},
            "filesystem": {"allowWrite": ["build", "//opt/out"], "madeUp": 1},
            "typoKey": 1,
        }}),
    );
    let loaded = tree.load();
    let sandbox = &loaded.settings.sandbox;
    assert_eq!(sandbox.enabled, Some(true));
    assert!(sandbox.fail_if_unavailable);
    assert!(sandbox.auto_allow_bash_if_sandboxed, "default true");
    assert!(sandbox.allow_unsandboxed_commands, "default true");
    assert!(sandbox.hooks);
    assert_eq!(sandbox.backend, robota::sandbox::BackendChoice::Landlock);
    assert_eq!(sandbox.excluded_commands, vec!["docker:*", "git push *"]);
    assert_eq!(
        sandbox.network.allowed_domains,
        vec!["github.com", "*.npmjs.org"]
    );
    assert!(sandbox.network.allow_local_binding);
    assert_eq!(
        sandbox.filesystem.allow_write,
        vec![
            tree.home.join(".cache/x"),
            tree.project.join("build"),
            PathBuf::from("/opt/out")
        ]
    );
    assert_eq!(sandbox.filesystem.deny_read, vec![tree.home.join(".ssh")]);
    let warned: Vec<(String, Option<PathBuf>, SettingsWarningKind)> = loaded
        .warnings
        .iter()
        .map(|w| (w.json_path.clone(), w.source.path.clone(), w.kind))
        .collect();
    for key in ["sandbox.typoKey", "sandbox.filesystem.madeUp"] {
        assert!(
            warned.contains(&(
                key.into(),
                Some(project.clone()),
                SettingsWarningKind::UnknownKey
            )),
            "{key}: {warned:?}"
        );
    }
    assert!(warned.contains(&(
        "sandbox.network.httpProxyPort".into(),
        Some(project.clone()),
        SettingsWarningKind::IgnoredKey
    )));
    assert!(!warned
        .iter()
        .any(|(_, path, _)| path.as_ref() == Some(&user)));

    // Wrong types are errors naming the file.
    tree.write(ProjectClaude, json!({"sandbox": {"enabled": "yes"}}));
    let err = tree.load_err().to_string();
    assert!(
        err.contains("sandbox.enabled") && err.contains("settings.json"),
        "{err}"
    );
    tree.write(ProjectClaude, json!({"sandbox": {"backend": "docker"}}));
    let err = tree.load_err().to_string();
    assert!(err.contains("sandbox.backend"), "{err}");
}
