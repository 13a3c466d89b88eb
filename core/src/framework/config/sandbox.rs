//! The typed `sandbox` settings from the merged JSON (already validated, lists already
//! concatenated across layers): paths expanded (`~/` against the home directory, relative paths
//! against the project directory, `//abs` as `/abs`).

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::sandbox::{BackendChoice, SandboxSettings};

pub(crate) fn sandbox_settings(
    top: &Map<String, Value>,
    home: Option<&Path>,
    project_dir: &Path,
) -> SandboxSettings {
    let mut settings = SandboxSettings::default();
    let Some(sandbox) = top.get("sandbox").and_then(Value::as_object) else {
        return settings;
    };
    let flag = |map: &Map<String, Value>, key: &str| map.get(key).and_then(Value::as_bool);
    settings.enabled = flag(sandbox, "enabled");
    if let Some(value) = flag(sandbox, "failIfUnavailable") {
        settings.fail_if_unavailable = value;
    }
    if let Some(value) = flag(sandbox, "autoAllowBashIfSandboxed") {
        settings.auto_allow_bash_if_sandboxed = value;
    }
    if let Some(value) = flag(sandbox, "allowUnsandboxedCommands") {
        settings.allow_unsandboxed_commands = value;
    }
    if let Some(value) = flag(sandbox, "hooks") {
        settings.hooks = value;
    }
    settings.excluded_commands = strings(sandbox.get("excludedCommands"));
    if let Some(choice) = sandbox
        .get("backend")
        .and_then(Value::as_str)
        .and_then(BackendChoice::parse)
    {
        settings.backend = choice;
    }
    settings.bwrap_path = sandbox
        .get("bwrapPath")
        .and_then(Value::as_str)
        .map(|p| expand(p, home, project_dir));
    if let Some(network) = sandbox.get("network").and_then(Value::as_object) {
        settings.network.allowed_domains = strings(network.get("allowedDomains"));
        settings.network.allow_unix_sockets = strings(network.get("allowUnixSockets"));
        settings.network.allow_local_binding = flag(network, "allowLocalBinding").unwrap_or(false);
        settings.network.allow_all_unix_sockets =
            flag(network, "allowAllUnixSockets").unwrap_or(false);
    }
    if let Some(fs) = sandbox.get("filesystem").and_then(Value::as_object) {
        let paths = |key: &str| -> Vec<PathBuf> {
            strings(fs.get(key))
                .iter()
                .map(|p| expand(p, home, project_dir))
                .collect()
        };
        settings.filesystem.allow_write = paths("allowWrite");
        settings.filesystem.deny_write = paths("denyWrite");
        settings.filesystem.deny_read = paths("denyRead");
        settings.filesystem.allow_read = paths("allowRead");
    }
    settings
}

fn strings(value: Option<&Value>) -> Vec<String> {
    value
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect()
}

fn expand(original: &str, home: Option<&Path>, project_dir: &Path) -> PathBuf {
    if let Some(rest) = original.strip_prefix("//") {
        return PathBuf::from(format!("/{rest}"));
    }
    super::resolve::expand_directory(original, home, project_dir)
}
