//! Loading one installed plugin: its manifest and the parts it brings — `skills/`, `agents/`,
//! `commands/`, `hooks/hooks.json` (with `${CLAUDE_PLUGIN_ROOT}` expanded and set for the hook
//! processes) and `.mcp.json` (its servers start with the sessions that load the plugin, named
//! `plugin_<plugin>_<server>`).
//!
//! A plugin without `.claude-plugin/plugin.json` is still a plugin (Claude Code's manifest is
//! optional): its name comes from the marketplace. Every bad file is a [`PluginWarning`]; only a
//! missing folder or an unusable name keeps the plugin from loading.

use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::manifest::{
    parse_manifest, read_json_object, type_name, PluginManifest, PluginWarning, PLUGIN_MANIFEST,
    PLUGIN_META_DIR,
};
use crate::hooks::{HookOrigin, HooksConfig, Severity};

/// The variable hook commands use for their plugin's folder.
pub const PLUGIN_ROOT_VARIABLE: &str = "CLAUDE_PLUGIN_ROOT";

/// The status of a plugin's MCP server outside a session that loaded the plugin: servers start
/// with the sessions created after the plugin is enabled.
pub const MCP_NOT_LOADED: &str = "not started: starts with sessions that load the plugin";

/// The session name of MCP server `server` of plugin `plugin`: `plugin_<plugin>_<server>`, so
/// its tools are `mcp__plugin_<plugin>_<server>__<tool>` (Claude Code's naming) and never clash
/// with the user's own servers.
pub fn plugin_mcp_server_name(plugin: &str, server: &str) -> String {
    format!("plugin_{plugin}_{server}")
}

/// One MCP server a plugin declares.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PluginMcpServer {
    /// The server's name.
    pub name: String,
    /// Whether it runs, and if not why.
    pub status: String,
    /// Its configuration as written (`${CLAUDE_PLUGIN_ROOT}` expanded).
    pub config: Value,
}

/// An installed plugin, read from its folder.
#[derive(Debug, Clone)]
pub struct LoadedPlugin {
    /// `name@marketplace`, as in the settings' `enabledPlugins`.
    pub id: String,
    /// The plugin's name: the namespace of its skills, agents and commands.
    pub name: String,
    /// The marketplace it was installed from.
    pub marketplace: String,
    /// Its folder.
    pub root: PathBuf,
    /// Its manifest (name, version, …; built from the marketplace entry when it has none).
    pub manifest: PluginManifest,
    /// `skills/`, when present.
    pub skills_dir: Option<PathBuf>,
    /// `agents/`, when present.
    pub agents_dir: Option<PathBuf>,
    /// `commands/`, when present.
    pub commands_dir: Option<PathBuf>,
    /// Its hooks, ready to run.
    pub hooks: HooksConfig,
    /// The files its hooks came from.
    pub hook_files: Vec<PathBuf>,
    /// Its MCP servers.
    pub mcp_servers: Vec<PluginMcpServer>,
}

/// Loads the plugin installed in `root` as `name@marketplace`.
pub fn load_plugin(
    root: &Path,
    name: &str,
    marketplace: &str,
) -> Result<(LoadedPlugin, Vec<PluginWarning>), PluginWarning> {
    if !root.is_dir() {
        return Err(PluginWarning::at(
            root,
            format!(
                "plugin `{name}@{marketplace}` is installed here but the folder is missing; \
                 reinstall it with `plugin install {name}@{marketplace}`"
            ),
        ));
    }
    let mut warnings = Vec::new();
    let manifest_file = root.join(PLUGIN_META_DIR).join(PLUGIN_MANIFEST);
    let manifest = match read_json_object(&manifest_file) {
        Ok(Some(map)) => {
            let (manifest, found) = parse_manifest(&manifest_file, map, name)?;
            warnings.extend(found);
            manifest
        }
        Ok(None) => PluginManifest {
            name: name.to_string(),
            ..PluginManifest::default()
        },
        Err(warning) => {
            warnings.push(PluginWarning {
                message: format!("{}; the plugin loads without its manifest", warning.message),
                ..warning
            });
            PluginManifest {
                name: name.to_string(),
                ..PluginManifest::default()
            }
        }
    };
    if manifest.name != name {
        warnings.push(PluginWarning::at(
            &manifest_file,
            format!(
                "the manifest names the plugin `{}` but it is installed as `{name}`; robota \
                 uses `{name}`",
                manifest.name
            ),
        ));
    }
    let folder = |sub: &str| Some(root.join(sub)).filter(|p| p.is_dir());
    let mut plugin = LoadedPlugin {
        id: format!("{name}@{marketplace}"),
        name: name.to_string(),
        marketplace: marketplace.to_string(),
        root: root.to_path_buf(),
        skills_dir: folder("skills"),
        agents_dir: folder("agents"),
        commands_dir: folder("commands"),
        hooks: HooksConfig::new(),
        hook_files: Vec::new(),
        mcp_servers: Vec::new(),
        manifest,
    };
    load_hooks(&mut plugin, &manifest_file, &mut warnings);
    load_mcp_servers(&mut plugin, &manifest_file, &mut warnings);
    Ok((plugin, warnings))
}

/// A path a manifest gives for one of its parts: relative, inside the plugin.
fn inside(root: &Path, path: &str) -> Option<PathBuf> {
    let relative = Path::new(path);
    let safe = relative
        .components()
        .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    (safe && !path.is_empty()).then(|| root.join(relative))
}

/// Replaces `${CLAUDE_PLUGIN_ROOT}` in every string of `value`.
fn expand_root(value: &mut Value, root: &str) {
    match value {
        Value::String(text) if text.contains("${CLAUDE_PLUGIN_ROOT}") => {
            *text = text.replace("${CLAUDE_PLUGIN_ROOT}", root);
        }
        Value::Array(items) => items.iter_mut().for_each(|v| expand_root(v, root)),
        Value::Object(map) => map.values_mut().for_each(|v| expand_root(v, root)),
        _ => {}
    }
}

/// `hooks/hooks.json` and the manifest's `hooks` (a path or the same object inline).
fn load_hooks(plugin: &mut LoadedPlugin, manifest_file: &Path, warnings: &mut Vec<PluginWarning>) {
    let mut sources: Vec<(PathBuf, Option<Value>)> =
        vec![(plugin.root.join("hooks/hooks.json"), None)];
    match plugin.manifest.extra.get("hooks") {
        None => {}
        Some(Value::String(path)) => match inside(&plugin.root, path) {
            Some(file) if !sources.iter().any(|(f, _)| *f == file) => sources.push((file, None)),
            Some(_) => {}
            None => warnings.push(PluginWarning::at(
                manifest_file,
                format!("`hooks`: `{path}` is not a path inside the plugin; it is ignored"),
            )),
        },
        Some(value @ Value::Object(_)) => {
            sources.push((manifest_file.to_path_buf(), Some(value.clone())))
        }
        Some(other) => warnings.push(PluginWarning::at(
            manifest_file,
            format!(
                "`hooks` must be a path or an object, found {}; it is ignored",
                type_name(other)
            ),
        )),
    }
    let root = plugin.root.to_string_lossy().to_string();
    for (file, inline) in sources {
        let document = match inline {
            Some(value) => value,
            None => match read_json_object(&file) {
                Ok(Some(map)) => Value::Object(map),
                Ok(None) => continue,
                Err(warning) => {
                    warnings.push(PluginWarning {
                        message: format!(
                            "{}; the plugin's hooks from it are not loaded",
                            warning.message
                        ),
                        ..warning
                    });
                    continue;
                }
            },
        };
        let Some(mut hooks) = document.get("hooks").cloned() else {
            warnings.push(PluginWarning::at(
                &file,
                "no `hooks` object (expected {\"hooks\": {\"PostToolUse\": [...]}}); nothing \
                 loaded from it",
            ));
            continue;
        };
        expand_root(&mut hooks, &root);
        let parsed = HooksConfig::parse_with_origin(&file, &hooks, HookOrigin::Plugin);
        for diagnostic in &parsed.diagnostics {
            warnings.push(PluginWarning::at(
                &file,
                format!("{}: {}", diagnostic.json_path, diagnostic.problem),
            ));
        }
        if parsed
            .diagnostics
            .iter()
            .any(|d| d.severity == Severity::Error)
        {
            warnings.push(PluginWarning::at(
                &file,
                "the plugin's hooks from this file are not loaded because of the errors above",
            ));
            continue;
        }
        let mut config = parsed.config;
        config.set_plugin_root(&plugin.root);
        plugin.hooks.merge(config);
        plugin.hook_files.push(file);
    }
}

/// `.mcp.json` and the manifest's `mcpServers` (a path or the servers inline).
fn load_mcp_servers(
    plugin: &mut LoadedPlugin,
    manifest_file: &Path,
    warnings: &mut Vec<PluginWarning>,
) {
    let mut documents: Vec<(PathBuf, Value)> = Vec::new();
    let default_file = plugin.root.join(".mcp.json");
    let mut read = |file: &Path, warnings: &mut Vec<PluginWarning>| match read_json_object(file) {
        Ok(Some(map)) => {
            // `.mcp.json` holds {"mcpServers": {...}}; a file holding the servers directly is
            // read too.
            let servers = map.get("mcpServers").cloned().unwrap_or(Value::Object(map));
            documents.push((file.to_path_buf(), servers));
        }
        Ok(None) => {}
        Err(warning) => warnings.push(warning),
    };
    read(&default_file, warnings);
    match plugin.manifest.extra.get("mcpServers") {
        None => {}
        Some(Value::String(path)) => match inside(&plugin.root, path) {
            Some(file) if file != default_file => read(&file, warnings),
            Some(_) => {}
            None => warnings.push(PluginWarning::at(
                manifest_file,
                format!("`mcpServers`: `{path}` is not a path inside the plugin; it is ignored"),
            )),
        },
        Some(value @ Value::Object(_)) => {
            documents.push((manifest_file.to_path_buf(), value.clone()))
        }
        Some(other) => warnings.push(PluginWarning::at(
            manifest_file,
            format!(
                "`mcpServers` must be a path or an object, found {}; it is ignored",
                type_name(other)
            ),
        )),
    }
    let root = plugin.root.to_string_lossy().to_string();
    for (file, mut servers) in documents {
        expand_root(&mut servers, &root);
        let Value::Object(servers) = servers else {
            warnings.push(PluginWarning::at(
                &file,
                format!(
                    "`mcpServers` must be an object, found {}",
                    type_name(&servers)
                ),
            ));
            continue;
        };
        for (name, config) in servers {
            if !config.is_object() {
                warnings.push(PluginWarning::at(
                    &file,
                    format!(
                        "MCP server `{name}` must be an object, found {}",
                        type_name(&config)
                    ),
                ));
                continue;
            }
            plugin.mcp_servers.push(PluginMcpServer {
                name,
                status: MCP_NOT_LOADED.to_string(),
                config,
            });
        }
    }
}
