//! The MCP servers of a session, from every place Claude Code reads them: the `mcpServers` of
//! each settings layer and the project's `.mcp.json` (plus, from the session options, the host's
//! own list). Project `.mcp.json` servers run only once the user approved them, recorded as
//! Claude Code records it: `enabledMcpjsonServers` / `disabledMcpjsonServers` in
//! `.claude/settings.local.json`, or `enableAllProjectMcpServers: true` in any settings layer.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::framework::config::{LoadedSettings, SettingsLayer};
use crate::mcp::{
    parse_mcp_servers, McpConfigWarning, McpServerEntry, McpServerOrigin, McpSkippedServer,
};
use crate::session::SessionWarning;

/// The project's MCP configuration file.
pub const PROJECT_MCP_FILE: &str = ".mcp.json";

/// The servers to start and the ones left out, in precedence order (a later entry of the same
/// name replaces an earlier one).
#[derive(Debug, Default)]
pub(crate) struct McpPlan {
    pub(crate) servers: Vec<McpServerEntry>,
    pub(crate) skipped: Vec<McpSkippedServer>,
}

/// Collects the servers of the settings layers and `.mcp.json` in `cwd`.
pub(crate) fn plan(
    loaded: Option<&LoadedSettings>,
    cwd: &Path,
    env: &BTreeMap<String, String>,
    warnings: &mut Vec<SessionWarning>,
) -> McpPlan {
    let lookup = |name: &str| env.get(name).cloned();
    let mut plan = McpPlan::default();
    let report = |warnings: &mut Vec<SessionWarning>,
                  found: Vec<McpConfigWarning>,
                  file: Option<PathBuf>| {
        for warning in found {
            warnings.push(SessionWarning {
                file: file.clone(),
                json_path: if warning.server.is_empty() {
                    "mcpServers".into()
                } else {
                    format!("mcpServers.{}", warning.server)
                },
                kind: "mcp_server".into(),
                message: warning.message,
            });
        }
    };
    let Some(loaded) = loaded else {
        return plan;
    };
    let merged = &loaded.merged;
    let list = |key: &str| -> Vec<String> {
        merged[key]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect()
    };
    let enable_all = merged["enableAllProjectMcpServers"].as_bool() == Some(true);
    let enabled = list("enabledMcpjsonServers");
    let disabled = list("disabledMcpjsonServers");

    let mut entries: Vec<McpServerEntry> = Vec::new();
    // User layers first, then the project file, then the project layers: a later definition of
    // the same name wins, so the closest scope decides.
    let (user_layers, project_layers): (Vec<_>, Vec<_>) = loaded
        .layers
        .iter()
        .filter(|layer| layer.value.get("mcpServers").is_some())
        .partition(|layer| {
            layer
                .source
                .path
                .as_deref()
                .is_some_and(|path| !path.starts_with(cwd))
        });
    let from_layers = |layers: Vec<&SettingsLayer>,
                       warnings: &mut Vec<SessionWarning>,
                       entries: &mut Vec<McpServerEntry>| {
        for layer in layers {
            let origin = McpServerOrigin::Settings {
                file: layer.source.path.clone(),
            };
            let (found, problems) = parse_mcp_servers(&layer.value["mcpServers"], &origin, &lookup);
            report(warnings, problems, layer.source.path.clone());
            entries.extend(found);
        }
    };
    from_layers(user_layers, warnings, &mut entries);
    let project_file = cwd.join(PROJECT_MCP_FILE);
    if let Some(value) = read_project_file(&project_file, warnings) {
        let origin = McpServerOrigin::Project {
            file: project_file.clone(),
        };
        let (found, problems) = parse_mcp_servers(&value, &origin, &lookup);
        report(warnings, problems, Some(project_file.clone()));
        entries.extend(found);
    }
    from_layers(project_layers, warnings, &mut entries);

    let mut by_name: BTreeMap<String, McpServerEntry> = BTreeMap::new();
    for entry in entries {
        by_name.insert(entry.name.clone(), entry);
    }
    for (name, entry) in by_name {
        if !matches!(entry.origin, McpServerOrigin::Project { .. }) {
            plan.servers.push(entry);
            continue;
        }
        let reason = if disabled.contains(&name) {
            Some("disabled in `disabledMcpjsonServers`".to_string())
        } else if enable_all || enabled.contains(&name) {
            None
        } else {
            Some(format!(
                "a project server from {PROJECT_MCP_FILE} that has not been approved yet; \
                 approve it (recorded in `enabledMcpjsonServers` of \
                 .claude/settings.local.json) or set `enableAllProjectMcpServers`"
            ))
        };
        match reason {
            None => plan.servers.push(entry),
            Some(reason) => plan.skipped.push(McpSkippedServer { entry, reason }),
        }
    }
    plan
}

/// Reads `.mcp.json` (size-capped, a regular file); a broken file is a warning naming it.
fn read_project_file(path: &Path, warnings: &mut Vec<SessionWarning>) -> Option<Value> {
    if !path.exists() {
        return None;
    }
    let problem = |message: String| SessionWarning {
        file: Some(path.to_path_buf()),
        json_path: String::new(),
        kind: "mcp_server".into(),
        message,
    };
    let text = match crate::files::read_regular_text(path, &crate::files::MCP_CONFIG_FILE) {
        Ok(text) => text,
        Err(e) => {
            warnings.push(problem(format!("cannot read the MCP server file: {e}")));
            return None;
        }
    };
    match serde_json::from_str::<Value>(&text) {
        Ok(value) => Some(value),
        Err(e) => {
            warnings.push(problem(format!(
                "the MCP server file is not valid JSON ({e}); its servers are not started"
            )));
            None
        }
    }
}

/// Records the user's answer about project (`.mcp.json`) servers as Claude Code does: adds
/// their names to `enabledMcpjsonServers` (approved) or `disabledMcpjsonServers` (refused) of
/// `<cwd>/.claude/settings.local.json`, and removes them from the other list. Takes effect for
/// sessions created afterwards.
pub fn record_project_mcp_approval(
    cwd: &Path,
    servers: &[String],
    approved: bool,
) -> Result<PathBuf, String> {
    let path = cwd.join(".claude").join("settings.local.json");
    let mut root = if path.exists() {
        let text = crate::files::read_regular_text(&path, &crate::files::MCP_CONFIG_FILE)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        if text.trim().is_empty() {
            Value::Object(Default::default())
        } else {
            serde_json::from_str::<Value>(&text)
                .map_err(|e| format!("{} is not valid JSON ({e}); fix it first", path.display()))?
        }
    } else {
        Value::Object(Default::default())
    };
    let Some(object) = root.as_object_mut() else {
        return Err(format!("{} does not hold a JSON object", path.display()));
    };
    let (add, remove) = if approved {
        ("enabledMcpjsonServers", "disabledMcpjsonServers")
    } else {
        ("disabledMcpjsonServers", "enabledMcpjsonServers")
    };
    let mut names: Vec<Value> = object
        .get(add)
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for server in servers {
        if !names.iter().any(|n| n.as_str() == Some(server)) {
            names.push(Value::String(server.clone()));
        }
    }
    object.insert(add.into(), Value::Array(names));
    if let Some(Value::Array(other)) = object.get_mut(remove) {
        other.retain(|n| !n.as_str().is_some_and(|n| servers.iter().any(|s| s == n)));
    }
    let text = serde_json::to_string_pretty(&root).map_err(|e| e.to_string())? + "\n";
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    let temp = path.with_extension("json.tmp");
    std::fs::write(&temp, text).map_err(|e| format!("cannot write {}: {e}", temp.display()))?;
    std::fs::rename(&temp, &path).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok(path)
}

/// Reads a `--mcp-config` argument: inline JSON (text starting with `{`) or the path of a file
/// (relative to `cwd`) holding `{"mcpServers": {…}}` or the servers object itself. `${VAR}`
/// expands through `env`. Any bad server definition is an error naming it.
pub fn load_mcp_config(
    argument: &str,
    cwd: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<McpServerEntry>, String> {
    let (text, what) = if argument.trim_start().starts_with('{') {
        (
            argument.to_string(),
            "the inline MCP configuration".to_string(),
        )
    } else {
        let path = cwd.join(argument);
        let text = crate::files::read_regular_text(&path, &crate::files::MCP_CONFIG_FILE)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        (text, path.display().to_string())
    };
    let value: Value =
        serde_json::from_str(&text).map_err(|e| format!("{what} is not valid JSON: {e}"))?;
    let (entries, problems) = parse_mcp_servers(&value, &McpServerOrigin::Host, env);
    if let Some(problem) = problems.first() {
        return Err(format!(
            "{what}: server `{}`: {}",
            problem.server, problem.message
        ));
    }
    Ok(entries)
}
