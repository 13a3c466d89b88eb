//! The enabled plugins of a session being assembled: the settings' `enabledPlugins` (from the
//! settings the session is given, or its settings files) resolved against the install state in
//! the user's robota folder. Their hooks join the settings' hooks, their skills and agents the
//! session's; every problem is a session warning of kind `plugin`.

use std::path::{Path, PathBuf};

use crate::framework::commands::custom::CommandRoot;
use crate::framework::commands::CommandSource;
use crate::framework::config::LoadedSettings;
use crate::framework::plugins::{
    plugin_mcp_server_name, LoadedPlugin, PluginManager, PluginSettings, PluginWarning,
};
use crate::mcp::{parse_mcp_servers, McpServerEntry, McpServerOrigin};
use crate::session::{SessionSettings, SessionWarning};
use serde_json::Value;

/// What the enabled plugins bring to a session.
#[derive(Debug, Default)]
pub(crate) struct SessionPlugins {
    /// The plugins loaded.
    pub(crate) plugins: Vec<LoadedPlugin>,
    /// Problems found, as session warnings.
    pub(crate) warnings: Vec<SessionWarning>,
    /// The manager for the session's user and project (`None` without a home folder).
    pub(crate) manager: Option<PluginManager>,
}

impl SessionPlugins {
    /// `(plugin, skills folder)` of each plugin that has skills.
    pub(crate) fn skill_roots(&self) -> Vec<(String, PathBuf)> {
        self.plugins
            .iter()
            .filter_map(|p| Some((p.name.clone(), p.skills_dir.clone()?)))
            .collect()
    }

    /// `(plugin, agents folder)` of each plugin that has agents.
    pub(crate) fn agent_dirs(&self) -> Vec<(String, PathBuf)> {
        self.plugins
            .iter()
            .filter_map(|p| Some((p.name.clone(), p.agents_dir.clone()?)))
            .collect()
    }

    /// The `commands/` folder of each plugin that has one, as custom command roots whose
    /// commands are named `plugin:command`.
    pub(crate) fn command_roots(&self) -> Vec<CommandRoot> {
        self.plugins
            .iter()
            .filter_map(|p| {
                let dir = p.commands_dir.clone()?;
                Some(CommandRoot::optional(
                    dir,
                    CommandSource::Plugin {
                        plugin: p.name.clone(),
                    },
                ))
            })
            .collect()
    }

    /// The MCP servers of the plugins (named `plugin_<plugin>_<server>`, origin
    /// [`McpServerOrigin::Plugin`]); a definition that cannot be used is a warning of kind
    /// `plugin` naming the plugin's folder. `${VAR}` expands from the process environment.
    pub(crate) fn mcp_servers(&self, warnings: &mut Vec<SessionWarning>) -> Vec<McpServerEntry> {
        let env = |name: &str| std::env::var(name).ok();
        let mut entries = Vec::new();
        for plugin in &self.plugins {
            let servers: serde_json::Map<String, Value> = plugin
                .mcp_servers
                .iter()
                .map(|s| {
                    (
                        plugin_mcp_server_name(&plugin.name, &s.name),
                        s.config.clone(),
                    )
                })
                .collect();
            if servers.is_empty() {
                continue;
            }
            let origin = McpServerOrigin::Plugin {
                plugin: plugin.name.clone(),
            };
            let (found, problems) = parse_mcp_servers(&Value::Object(servers), &origin, &env);
            warnings.extend(problems.into_iter().map(|problem| SessionWarning {
                file: Some(plugin.root.clone()),
                json_path: format!("mcpServers.{}", problem.server),
                kind: "plugin".into(),
                message: format!("plugin `{}`: {}", plugin.name, problem.message),
            }));
            entries.extend(found);
        }
        entries
    }

    /// The ids of the plugins loaded.
    pub(crate) fn ids(&self) -> Vec<String> {
        self.plugins.iter().map(|p| p.id.clone()).collect()
    }
}

/// Loads the enabled plugins of a session in `cwd` whose user folder is `home`.
pub(crate) fn session_plugins(
    settings: &SessionSettings,
    cwd: &Path,
    home: Option<&Path>,
) -> SessionPlugins {
    let Some(home) = home else {
        return SessionPlugins::default();
    };
    let manager = PluginManager::new(home, cwd);
    let plugin_settings = match settings {
        SessionSettings::None => return SessionPlugins::default(),
        SessionSettings::Loaded(loaded) => match loaded.as_any().downcast_ref::<LoadedSettings>() {
            Some(loaded) => PluginSettings::from_layers(
                loaded
                    .layers
                    .iter()
                    .map(|layer| (layer.source.path.as_deref(), &layer.value)),
            ),
            None => manager.settings(),
        },
        SessionSettings::Load { overrides, .. } => {
            let mut found = manager.settings();
            // Overrides given in code are the highest layer.
            if let Some(overrides) = overrides {
                let extra = PluginSettings::from_layers([(None, overrides)]);
                found.enabled.extend(extra.enabled);
                found.marketplaces.extend(extra.marketplaces);
                found.warnings.extend(extra.warnings);
            }
            found
        }
        SessionSettings::FromEnvironment => manager.settings(),
    };
    let (plugins, warnings) = manager.enabled_plugins(&plugin_settings);
    SessionPlugins {
        plugins,
        warnings: warnings.iter().map(session_warning).collect(),
        manager: Some(manager),
    }
}

fn session_warning(warning: &PluginWarning) -> SessionWarning {
    SessionWarning {
        file: warning.file.clone(),
        json_path: String::new(),
        kind: "plugin".into(),
        message: warning.message.clone(),
    }
}
