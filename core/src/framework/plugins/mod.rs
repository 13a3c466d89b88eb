//! Plugins in Claude Code's formats: folders with `.claude-plugin/plugin.json` bringing skills,
//! agents, commands, hooks and MCP servers, installed from marketplaces
//! (`.claude-plugin/marketplace.json` in a folder or a git repository) and turned on by the
//! settings' `enabledPlugins`.
//!
//! - [`manifest`]: the JSON formats (`plugin.json`, `marketplace.json`, sources) and
//!   [`PluginWarning`].
//! - [`loader`]: one installed plugin read from its folder ([`LoadedPlugin`]).
//! - [`manager`]: [`PluginManager`] — marketplaces, install, uninstall, enable, disable, update,
//!   list; the install state in `~/.robota/plugins`.
//! - [`command`]: the `plugin` and `reload-plugins` commands.
//!
//! A session loads its enabled plugins when it is assembled: their skills (`plugin:skill`) and
//! agents (`plugin:agent`) join the session's own, their hooks run like the settings' hooks
//! (with `CLAUDE_PLUGIN_ROOT` set), and a plugin that cannot be used is a session warning of
//! kind `plugin` naming its file.

pub mod command;
pub mod loader;
pub mod manager;
pub mod manifest;

pub use command::{
    plugin_command_module, PluginCommand, ReloadPluginsCommand, PLUGIN_COMMAND,
    RELOAD_PLUGINS_COMMAND,
};
pub use loader::{
    load_plugin, plugin_mcp_server_name, LoadedPlugin, PluginMcpServer, MCP_NOT_LOADED,
};
pub use manager::{
    MarketplaceInfo, PluginError, PluginInfo, PluginListing, PluginManager, PluginScope,
    PluginSettings,
};
pub use manifest::{
    MarketplaceEntry, MarketplaceManifest, MarketplaceSource, PluginAuthor, PluginManifest,
    PluginSource, PluginWarning,
};
