//! The `plugin` and `reload-plugins` commands (spec 000 `agent-command-plugin`).
//!
//! ```text
//! plugin [list]
//! plugin install NAME[@MARKETPLACE] [--scope user|project|local]
//! plugin uninstall|enable|disable NAME[@MARKETPLACE] [--scope user|project|local]
//! plugin update NAME[@MARKETPLACE]
//! plugin marketplace add FOLDER|GIT-URL|OWNER/REPO
//! plugin marketplace list | remove NAME | update NAME
//! reload-plugins
//! ```
//!
//! Changes are written at once (install state in `~/.robota/plugins`, `enabledPlugins` in the
//! scope's settings file) and apply to sessions created afterwards; each change also returns the
//! `plugin-registry-reload-requested` effect so a host can rebuild its session.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{json, Value};

use super::manager::{PluginError, PluginListing, PluginManager, PluginScope};
use super::manifest::{MarketplaceSource, PluginWarning};
use crate::framework::commands::{
    CommandDescriptor, CommandEffect, CommandHostContext, CommandModule, CommandResult,
    CommandSource, SubcommandDescriptor, SystemCommand,
};

/// The `plugin` command's name.
pub const PLUGIN_COMMAND: &str = "plugin";
/// The `reload-plugins` command's name.
pub const RELOAD_PLUGINS_COMMAND: &str = "reload-plugins";

const USAGE: &str = "Usage: plugin [list] | plugin install|uninstall|enable|disable \
     NAME[@MARKETPLACE] [--scope user|project|local] | plugin update NAME | plugin marketplace \
     add SOURCE | plugin marketplace list|remove NAME|update NAME";

/// The module holding `plugin` and `reload-plugins`.
pub fn plugin_command_module() -> CommandModule {
    CommandModule::new("robota-command-plugin", CommandSource::Builtin)
        .with_command(Arc::new(PluginCommand::new()))
        .with_command(Arc::new(ReloadPluginsCommand::new()))
}

/// `plugin`: install and manage plugins and marketplaces.
#[derive(Debug)]
pub struct PluginCommand {
    descriptor: CommandDescriptor,
}

impl PluginCommand {
    /// The command.
    pub fn new() -> Self {
        PluginCommand {
            descriptor: CommandDescriptor::new(
                PLUGIN_COMMAND,
                "Install, enable, disable, update and list plugins and their marketplaces",
            )
            .with_argument_hint("[list | install NAME@MARKETPLACE | marketplace add SOURCE | …]")
            .with_subcommands(vec![
                SubcommandDescriptor::new("list", "List installed and enabled plugins"),
                SubcommandDescriptor::new("install", "Install a plugin from a marketplace"),
                SubcommandDescriptor::new("uninstall", "Remove an installed plugin"),
                SubcommandDescriptor::new("enable", "Turn an installed plugin on"),
                SubcommandDescriptor::new("disable", "Turn an installed plugin off"),
                SubcommandDescriptor::new("update", "Update a plugin from its marketplace"),
                SubcommandDescriptor::new(
                    "marketplace",
                    "Add, list, remove or update marketplaces",
                ),
            ]),
        }
    }
}

impl Default for PluginCommand {
    fn default() -> Self {
        Self::new()
    }
}

/// Arguments split into words, with `--scope X` taken out.
fn parse_args(args: &str) -> Result<(Vec<String>, PluginScope), String> {
    let mut words = Vec::new();
    let mut scope = PluginScope::User;
    let mut iter = args.split_whitespace();
    while let Some(word) = iter.next() {
        if let Some(value) = word.strip_prefix("--scope=") {
            scope = value.parse()?;
        } else if word == "--scope" || word == "-s" {
            scope = iter
                .next()
                .ok_or("--scope needs user, project or local")?
                .parse()?;
        } else {
            words.push(word.to_string());
        }
    }
    Ok((words, scope))
}

fn warnings_text(warnings: &[PluginWarning]) -> String {
    warnings
        .iter()
        .map(|w| format!("\n  warning: {w}"))
        .collect()
}

/// The text of `plugin list`.
pub fn listing_text(listing: &PluginListing) -> String {
    let mut text = if listing.plugins.is_empty() {
        String::from(
            "No plugins installed. Add a marketplace with `plugin marketplace add FOLDER|GIT-URL` \
             and install from it with `plugin install NAME@MARKETPLACE`.",
        )
    } else {
        String::from("Plugins:")
    };
    for plugin in &listing.plugins {
        let state = match (plugin.installed, plugin.enabled) {
            (true, true) => "enabled",
            (true, false) => "disabled",
            (false, true) => "enabled, not installed",
            (false, false) => "not installed",
        };
        text.push_str(&format!(
            "\n  {}{} [{state}{}]",
            plugin.id,
            plugin
                .version
                .as_ref()
                .map(|v| format!(" {v}"))
                .unwrap_or_default(),
            if plugin.loaded { ", loaded" } else { "" }
        ));
        if let Some(description) = &plugin.description {
            text.push_str(&format!(" — {description}"));
        }
        for (label, items) in [
            ("skills", &plugin.skills),
            ("commands", &plugin.commands),
            ("agents", &plugin.agents),
        ] {
            if !items.is_empty() {
                text.push_str(&format!("\n    {label}: {}", items.join(", ")));
            }
        }
        if !plugin.hook_files.is_empty() {
            text.push_str(&format!("\n    hooks: {} file(s)", plugin.hook_files.len()));
        }
        for server in &plugin.mcp_servers {
            text.push_str(&format!(
                "\n    MCP server {}: {}",
                server.name, server.status
            ));
        }
    }
    if !listing.marketplaces.is_empty() {
        text.push_str("\nMarketplaces:");
        for market in &listing.marketplaces {
            text.push_str(&format!(
                "\n  {} ({}) — {} plugin(s)",
                market.name,
                market.source,
                market.plugins.len()
            ));
        }
    }
    text.push_str(&warnings_text(&listing.warnings));
    text
}

fn changed(message: String, data: Value) -> CommandResult {
    CommandResult::ok(format!(
        "{message}\nThe change applies to new sessions (run `reload-plugins` to see what they \
         load)."
    ))
    .with_data(data)
    .with_effect(CommandEffect::PluginRegistryReloadRequested)
}

fn run(
    manager: &PluginManager,
    loaded: &[String],
    servers: &[crate::mcp::McpServerInfo],
    args: &str,
) -> Result<CommandResult, PluginError> {
    let (words, scope) = parse_args(args).map_err(|e| PluginError { message: e })?;
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    let need = |what: &str| PluginError {
        message: format!("which {what}? {USAGE}"),
    };
    Ok(match words.as_slice() {
        [] | ["list"] => {
            let mut listing = manager.list();
            listing.mark_session(loaded, servers);
            CommandResult::ok(listing_text(&listing))
                .with_data(serde_json::to_value(&listing).unwrap_or(Value::Null))
        }
        ["install", id] => {
            let (info, warnings) = manager.install(id, scope)?;
            changed(
                format!(
                    "Installed {} and enabled it in {}.{}",
                    info.id,
                    manager.scope_file(scope).display(),
                    warnings_text(&warnings)
                ),
                json!({"plugin": info, "warnings": warnings}),
            )
        }
        ["uninstall", id] => {
            manager.uninstall(id, scope)?;
            changed(format!("Uninstalled {id}."), json!({"plugin": id}))
        }
        [verb @ ("enable" | "disable"), id] => {
            let on = *verb == "enable";
            let id = manager.set_enabled(id, scope, on)?;
            changed(
                format!(
                    "{} {id} in {}.",
                    if on { "Enabled" } else { "Disabled" },
                    manager.scope_file(scope).display()
                ),
                json!({"plugin": id, "enabled": on}),
            )
        }
        ["update", id] => {
            let (info, warnings) = manager.update(id)?;
            changed(
                format!(
                    "Updated {}{}.{}",
                    info.id,
                    info.version
                        .as_ref()
                        .map(|v| format!(" to {v}"))
                        .unwrap_or_default(),
                    warnings_text(&warnings)
                ),
                json!({"plugin": info, "warnings": warnings}),
            )
        }
        ["marketplace", "add", source] => {
            let source = MarketplaceSource::from_argument(source, &manager_cwd(manager))
                .map_err(|message| PluginError { message })?;
            let (market, warnings) = manager.add_marketplace(source)?;
            CommandResult::ok(format!(
                "Added marketplace {} ({}) with {} plugin(s): {}{}",
                market.name,
                market.source,
                market.plugins.len(),
                market.plugins.join(", "),
                warnings_text(&warnings)
            ))
            .with_data(json!({"marketplace": market, "warnings": warnings}))
        }
        ["marketplace"] | ["marketplace", "list"] => {
            let (markets, warnings) = manager.marketplaces();
            let mut text = if markets.is_empty() {
                "No marketplaces. Add one with `plugin marketplace add FOLDER|GIT-URL|OWNER/REPO`."
                    .to_string()
            } else {
                "Marketplaces:".to_string()
            };
            for market in &markets {
                text.push_str(&format!(
                    "\n  {} ({}; {}) — {}",
                    market.name,
                    market.source,
                    market.known_from,
                    market.plugins.join(", ")
                ));
            }
            text.push_str(&warnings_text(&warnings));
            CommandResult::ok(text)
                .with_data(json!({"marketplaces": markets, "warnings": warnings}))
        }
        ["marketplace", "remove", name] => {
            manager.remove_marketplace(name)?;
            CommandResult::ok(format!(
                "Removed marketplace {name}; plugins installed from it stay installed."
            ))
        }
        ["marketplace", "update", name] => {
            let plugins = manager.update_marketplace(name)?;
            CommandResult::ok(format!(
                "Marketplace {name} is up to date: {}",
                plugins.join(", ")
            ))
            .with_data(json!({"marketplace": name, "plugins": plugins}))
        }
        ["install" | "uninstall" | "enable" | "disable" | "update"] => return Err(need("plugin")),
        ["marketplace", "add" | "remove" | "update"] => return Err(need("marketplace")),
        _ => {
            return Err(PluginError {
                message: USAGE.to_string(),
            })
        }
    })
}

fn manager_cwd(manager: &PluginManager) -> std::path::PathBuf {
    manager
        .scope_file(PluginScope::Project)
        .parent()
        .and_then(|p| p.parent())
        .map(|p| p.to_path_buf())
        .unwrap_or_default()
}

#[async_trait]
impl SystemCommand for PluginCommand {
    fn descriptor(&self) -> &CommandDescriptor {
        &self.descriptor
    }

    async fn execute(&self, ctx: &dyn CommandHostContext, args: &str) -> CommandResult {
        let manager = match ctx.plugin_manager() {
            Ok(manager) => manager,
            Err(error) => return CommandResult::error(error.message),
        };
        let loaded = ctx.loaded_plugins();
        let servers = ctx.mcp_servers();
        let args = args.to_string();
        // Installing runs git and copies files: off the async threads.
        match tokio::task::spawn_blocking(move || run(&manager, &loaded, &servers, &args)).await {
            Ok(Ok(result)) => result,
            Ok(Err(error)) => CommandResult::error(error.message),
            Err(error) => CommandResult::error(format!("the plugin command failed: {error}")),
        }
    }
}

/// `reload-plugins`: reads the plugin state again and says what a session loads now.
#[derive(Debug)]
pub struct ReloadPluginsCommand {
    descriptor: CommandDescriptor,
}

impl ReloadPluginsCommand {
    /// The command.
    pub fn new() -> Self {
        ReloadPluginsCommand {
            descriptor: CommandDescriptor::new(
                RELOAD_PLUGINS_COMMAND,
                "Read the installed and enabled plugins again and report what loads",
            ),
        }
    }
}

impl Default for ReloadPluginsCommand {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait]
impl SystemCommand for ReloadPluginsCommand {
    fn descriptor(&self) -> &CommandDescriptor {
        &self.descriptor
    }

    async fn execute(&self, ctx: &dyn CommandHostContext, _args: &str) -> CommandResult {
        let manager = match ctx.plugin_manager() {
            Ok(manager) => manager,
            Err(error) => return CommandResult::error(error.message),
        };
        let loaded = ctx.loaded_plugins();
        let result = tokio::task::spawn_blocking(move || {
            let settings = manager.settings();
            let (plugins, warnings) = manager.enabled_plugins(&settings);
            let ids: Vec<String> = plugins.iter().map(|p| p.id.clone()).collect();
            (ids, warnings)
        })
        .await;
        let (ids, warnings) = match result {
            Ok(found) => found,
            Err(error) => return CommandResult::error(format!("reload-plugins failed: {error}")),
        };
        let added: Vec<&String> = ids.iter().filter(|id| !loaded.contains(id)).collect();
        let removed: Vec<&String> = loaded.iter().filter(|id| !ids.contains(id)).collect();
        let mut text = format!(
            "Enabled plugins: {}.",
            if ids.is_empty() {
                "none".to_string()
            } else {
                ids.join(", ")
            }
        );
        if added.is_empty() && removed.is_empty() {
            text.push_str(" This session has loaded all of them.");
        } else {
            text.push_str(&format!(
                " Not yet in this session: {}; no longer enabled: {}. The host reloads the \
                 session to apply them.",
                if added.is_empty() {
                    "none".into()
                } else {
                    added
                        .iter()
                        .map(|s| s.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                },
                if removed.is_empty() {
                    "none".into()
                } else {
                    removed
                        .iter()
                        .map(|s| s.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                },
            ));
        }
        text.push_str(&warnings_text(&warnings));
        let changed = !added.is_empty() || !removed.is_empty();
        let result = CommandResult::ok(text)
            .with_data(json!({"enabled": ids, "loaded": loaded, "warnings": warnings}));
        if changed {
            result.with_effect(CommandEffect::PluginRegistryReloadRequested)
        } else {
            result
        }
    }
}
