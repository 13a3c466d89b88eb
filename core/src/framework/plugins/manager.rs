//! Installing and managing plugins: known marketplaces, installed plugins and which are enabled.
//!
//! Everything robota keeps lives in the user's robota folder, `~/.robota/plugins/`:
//!
//! ```text
//! known_marketplaces.json     {"tools": {"source": {...}, "installLocation": "...", "lastUpdated": "..."}}
//! installed_plugins.json      {"version": 1, "plugins": {"fmt@tools": {"installPath": "...", ...}}}
//! marketplaces/<name>/        git marketplaces, cloned with the `git` binary
//! cache/<marketplace>/<name>/ installed plugins (copied from the marketplace, or cloned)
//! ```
//!
//! Whether a plugin is on is Claude Code's settings key `enabledPlugins` (`"name@marketplace":
//! true`), read from every settings layer (a later layer wins); marketplaces may also be named in
//! the settings' `extraKnownMarketplaces`. `install`, `enable` and `disable` write
//! `enabledPlugins` in the scope's file: `user` is `~/.robota/settings.json` (the default),
//! `project` is `<project>/.claude/settings.json`, `local` is `<project>/.claude/settings.local.json`
//! — robota writes into the project only when asked to.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use super::loader::{load_plugin, LoadedPlugin, PluginMcpServer};
use super::manifest::{
    name_problem, read_json_object, read_marketplace, MarketplaceManifest, MarketplaceSource,
    PluginSource, PluginWarning,
};
use crate::files::{read_regular_text, AGENT_DEFINITION_FILE};
use crate::framework::agents::{parse_agent_definition, AgentSource};
use crate::framework::config::settings_paths;
use crate::session::set_settings_flag;

/// The most files one plugin copy may hold.
const MAX_COPY_FILES: usize = 10_000;
/// The most bytes one plugin copy may hold.
const MAX_COPY_BYTES: u64 = 200 * 1024 * 1024;

/// A plugin operation that could not be done; the message says what failed and what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct PluginError {
    /// What failed.
    pub message: String,
}

impl PluginError {
    fn new(message: impl Into<String>) -> Self {
        PluginError {
            message: message.into(),
        }
    }
}

/// Which settings file `install`, `enable` and `disable` write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PluginScope {
    /// `~/.robota/settings.json`.
    #[default]
    User,
    /// `<project>/.claude/settings.json` (shared with the team).
    Project,
    /// `<project>/.claude/settings.local.json`.
    Local,
}

impl std::str::FromStr for PluginScope {
    type Err = String;
    fn from_str(text: &str) -> Result<Self, String> {
        match text {
            "user" => Ok(PluginScope::User),
            "project" => Ok(PluginScope::Project),
            "local" => Ok(PluginScope::Local),
            other => Err(format!(
                "unknown scope `{other}`: use user, project or local"
            )),
        }
    }
}

/// `enabledPlugins` and `extraKnownMarketplaces` of every settings layer, merged.
#[derive(Debug, Clone, Default)]
pub struct PluginSettings {
    /// `name@marketplace` → on or off, with the file that decided.
    pub enabled: BTreeMap<String, (bool, Option<PathBuf>)>,
    /// Marketplaces the settings name, with the file naming them.
    pub marketplaces: BTreeMap<String, (MarketplaceSource, Option<PathBuf>)>,
    /// Entries that could not be read.
    pub warnings: Vec<PluginWarning>,
}

impl PluginSettings {
    /// Reads the two keys from settings layers given lowest precedence first.
    pub fn from_layers<'a>(
        layers: impl IntoIterator<Item = (Option<&'a Path>, &'a Value)>,
    ) -> Self {
        let mut settings = PluginSettings::default();
        for (file, value) in layers {
            let warn = |settings: &mut PluginSettings, message: String| {
                settings.warnings.push(PluginWarning {
                    file: file.map(Path::to_path_buf),
                    message,
                })
            };
            match value.get("enabledPlugins") {
                None => {}
                Some(Value::Object(map)) => {
                    for (id, on) in map {
                        match on {
                            Value::Bool(on) => {
                                settings
                                    .enabled
                                    .insert(id.clone(), (*on, file.map(Path::to_path_buf)));
                            }
                            _ => warn(
                                &mut settings,
                                format!("enabledPlugins.{id} must be true or false; it is ignored"),
                            ),
                        }
                    }
                }
                Some(_) => warn(
                    &mut settings,
                    "enabledPlugins must be an object like {\"name@marketplace\": true}; it is \
                     ignored"
                        .into(),
                ),
            }
            match value.get("extraKnownMarketplaces") {
                None => {}
                Some(Value::Object(map)) => {
                    for (name, entry) in map {
                        let source = entry
                            .get("source")
                            .ok_or_else(|| "needs `source`".to_string());
                        match source.and_then(MarketplaceSource::from_value) {
                            Ok(source) if name_problem(name).is_none() => {
                                settings
                                    .marketplaces
                                    .insert(name.clone(), (source, file.map(Path::to_path_buf)));
                            }
                            Ok(_) => warn(
                                &mut settings,
                                format!("extraKnownMarketplaces.{name}: unusable name; ignored"),
                            ),
                            Err(problem) => warn(
                                &mut settings,
                                format!("extraKnownMarketplaces.{name}: {problem}; it is ignored"),
                            ),
                        }
                    }
                }
                Some(_) => warn(
                    &mut settings,
                    "extraKnownMarketplaces must be an object; it is ignored".into(),
                ),
            }
        }
        settings
    }
}

/// A marketplace robota knows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MarketplaceInfo {
    /// Its name.
    pub name: String,
    /// Where it comes from.
    pub source: MarketplaceSource,
    /// The folder holding its `.claude-plugin/marketplace.json` (`None`: a git marketplace named
    /// in settings and not cloned yet).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<PathBuf>,
    /// `added` (with `plugin marketplace add`) or the settings file naming it.
    pub known_from: String,
    /// The plugins it offers (empty when it cannot be read now).
    pub plugins: Vec<String>,
}

/// A plugin as `plugin list` and the bindings' `list_plugins()` show it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PluginInfo {
    /// `name@marketplace`.
    pub id: String,
    /// The plugin's name.
    pub name: String,
    /// Its marketplace.
    pub marketplace: String,
    /// Its version, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// What it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Installed in the user's robota folder.
    pub installed: bool,
    /// Turned on by the settings.
    pub enabled: bool,
    /// The settings file that turned it on or off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled_in: Option<PathBuf>,
    /// Its folder, when installed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<PathBuf>,
    /// Loaded into this session (set by the session).
    #[serde(default)]
    pub loaded: bool,
    /// Its skills (`name:skill`), commands (`name:command`) and agents (`name:agent`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skills: Vec<String>,
    /// Its commands (`name:command`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub commands: Vec<String>,
    /// Its agents (`name:agent`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agents: Vec<String>,
    /// The files its hooks come from.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hook_files: Vec<PathBuf>,
    /// Its MCP servers and their status.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mcp_servers: Vec<PluginMcpServer>,
}

/// `plugin list`: plugins, marketplaces and the problems found.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PluginListing {
    /// Installed or enabled plugins.
    pub plugins: Vec<PluginInfo>,
    /// Known marketplaces.
    pub marketplaces: Vec<MarketplaceInfo>,
    /// Problems found on the way.
    pub warnings: Vec<PluginWarning>,
}

impl PluginListing {
    /// Marks what a session has: the plugins it `loaded` (ids) and, for their MCP servers, how
    /// each is doing among the session's `servers`.
    pub fn mark_session(&mut self, loaded: &[String], servers: &[crate::mcp::McpServerInfo]) {
        use crate::mcp::McpServerStatus;
        for plugin in &mut self.plugins {
            plugin.loaded = loaded.contains(&plugin.id);
            if !plugin.loaded {
                continue;
            }
            for server in &mut plugin.mcp_servers {
                let name = super::plugin_mcp_server_name(&plugin.name, &server.name);
                let Some(info) = servers.iter().find(|info| info.name == name) else {
                    continue;
                };
                server.status = match &info.status {
                    McpServerStatus::Pending => format!("{name}: starting"),
                    McpServerStatus::Connected => format!("{name}: connected"),
                    McpServerStatus::Failed { reason } => format!("{name}: failed: {reason}"),
                    McpServerStatus::NeedsAuth { reason } => {
                        format!("{name}: needs authorization: {reason}")
                    }
                    McpServerStatus::Disabled { reason } => {
                        format!("{name}: not started: {reason}")
                    }
                };
            }
        }
    }
}

/// Plugin operations for one user (`home`) and project (`cwd`).
#[derive(Debug, Clone)]
pub struct PluginManager {
    home: PathBuf,
    cwd: PathBuf,
}

/// Parses `name@marketplace`.
fn split_id(id: &str) -> Result<(&str, &str), PluginError> {
    match id.trim().split_once('@') {
        Some((name, market)) if name_problem(name).is_none() && name_problem(market).is_none() => {
            Ok((name, market))
        }
        _ => Err(PluginError::new(format!(
            "`{id}` is not a plugin id: write it as name@marketplace"
        ))),
    }
}

fn now() -> String {
    time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

impl PluginManager {
    /// The manager for the user whose home folder is `home`, in project `cwd`.
    pub fn new(home: impl Into<PathBuf>, cwd: impl Into<PathBuf>) -> Self {
        PluginManager {
            home: home.into(),
            cwd: cwd.into(),
        }
    }

    /// `~/.robota/plugins`.
    pub fn plugins_dir(&self) -> PathBuf {
        self.home.join(".robota").join("plugins")
    }

    /// The settings file a scope writes.
    pub fn scope_file(&self, scope: PluginScope) -> PathBuf {
        match scope {
            PluginScope::User => self.home.join(".robota/settings.json"),
            PluginScope::Project => self.cwd.join(".claude/settings.json"),
            PluginScope::Local => self.cwd.join(".claude/settings.local.json"),
        }
    }

    /// Reads `enabledPlugins` and `extraKnownMarketplaces` from the settings files (a file that
    /// cannot be read is a warning).
    pub fn settings(&self) -> PluginSettings {
        let mut layers: Vec<(PathBuf, Value)> = Vec::new();
        let mut warnings = Vec::new();
        for (_, path) in settings_paths(Some(&self.home), &self.cwd) {
            if layers.iter().any(|(p, _)| *p == path) {
                continue;
            }
            match read_json_object(&path) {
                Ok(Some(map)) => layers.push((path, Value::Object(map))),
                Ok(None) => {}
                Err(warning) => warnings.push(warning),
            }
        }
        let mut settings =
            PluginSettings::from_layers(layers.iter().map(|(p, v)| (Some(p.as_path()), v)));
        settings.warnings.splice(0..0, warnings);
        settings
    }

    // ----- state files -----

    fn read_state(&self, file: &str) -> Result<Map<String, Value>, PluginError> {
        let path = self.plugins_dir().join(file);
        match read_json_object(&path) {
            Ok(map) => Ok(map.unwrap_or_default()),
            Err(warning) => Err(PluginError::new(format!(
                "{warning}; fix or delete the file (robota will not overwrite it)"
            ))),
        }
    }

    fn write_state(&self, file: &str, value: &Value) -> Result<(), PluginError> {
        let dir = self.plugins_dir();
        let path = dir.join(file);
        let text = serde_json::to_string_pretty(value).unwrap_or_default() + "\n";
        let temp = dir.join(format!(".{file}.{}.tmp", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir)
            .and_then(|()| std::fs::write(&temp, text))
            .and_then(|()| std::fs::rename(&temp, &path))
            .map_err(|e| {
                let _ = std::fs::remove_file(&temp);
                PluginError::new(format!("cannot write {}: {e}", path.display()))
            })
    }

    fn known(&self) -> Result<Map<String, Value>, PluginError> {
        self.read_state("known_marketplaces.json")
    }

    fn installed(&self) -> Result<Map<String, Value>, PluginError> {
        Ok(
            match self.read_state("installed_plugins.json")?.remove("plugins") {
                Some(Value::Object(map)) => map,
                _ => Map::new(),
            },
        )
    }

    fn write_installed(&self, plugins: Map<String, Value>) -> Result<(), PluginError> {
        self.write_state(
            "installed_plugins.json",
            &json!({"version": 1, "plugins": plugins}),
        )
    }

    // ----- marketplaces -----

    /// Adds a marketplace: a folder is used in place, a git repository is cloned into
    /// `~/.robota/plugins/marketplaces/<name>`. Its name comes from its `marketplace.json`.
    pub fn add_marketplace(
        &self,
        source: MarketplaceSource,
    ) -> Result<(MarketplaceInfo, Vec<PluginWarning>), PluginError> {
        let (location, manifest, warnings) = match (&source, source.git()) {
            (MarketplaceSource::Directory { path }, _) => {
                let (manifest, warnings) =
                    read_marketplace(path).map_err(|w| PluginError::new(w.to_string()))?;
                (path.clone(), manifest, warnings)
            }
            (_, None) => return Err(PluginError::new(format!("{source} cannot be fetched"))),
            (_, Some((url, reference))) => {
                let dir = self.plugins_dir().join("marketplaces");
                let temp = dir.join(format!(".clone-{}", uuid::Uuid::new_v4().simple()));
                git_clone(&url, reference.as_deref(), &temp)?;
                let (manifest, warnings) = match read_marketplace(&temp) {
                    Ok(found) => found,
                    Err(warning) => {
                        let _ = std::fs::remove_dir_all(&temp);
                        return Err(PluginError::new(format!(
                            "{url} is not a marketplace: {}",
                            warning.message
                        )));
                    }
                };
                let target = dir.join(&manifest.name);
                let _ = std::fs::remove_dir_all(&target);
                std::fs::rename(&temp, &target).map_err(|e| {
                    let _ = std::fs::remove_dir_all(&temp);
                    PluginError::new(format!(
                        "cannot move the clone to {}: {e}",
                        target.display()
                    ))
                })?;
                (target, manifest, warnings)
            }
        };
        let mut known = self.known()?;
        known.insert(
            manifest.name.clone(),
            json!({
                "source": source,
                "installLocation": location,
                "lastUpdated": now(),
            }),
        );
        self.write_state("known_marketplaces.json", &Value::Object(known))?;
        Ok((
            MarketplaceInfo {
                name: manifest.name.clone(),
                source,
                location: Some(location),
                known_from: "added".into(),
                plugins: manifest.plugins.iter().map(|p| p.name.clone()).collect(),
            },
            warnings,
        ))
    }

    /// Every marketplace: those added, then those only the settings name.
    pub fn marketplaces(&self) -> (Vec<MarketplaceInfo>, Vec<PluginWarning>) {
        let mut warnings = Vec::new();
        let mut list = Vec::new();
        let known = self.known().unwrap_or_else(|e| {
            warnings.push(PluginWarning::new(e.message));
            Map::new()
        });
        for (name, entry) in &known {
            let source = entry
                .get("source")
                .ok_or_else(|| "no source".to_string())
                .and_then(MarketplaceSource::from_value);
            let location = entry
                .get("installLocation")
                .and_then(Value::as_str)
                .map(PathBuf::from);
            match source {
                Ok(source) => list.push(MarketplaceInfo {
                    name: name.clone(),
                    source,
                    location,
                    known_from: "added".into(),
                    plugins: Vec::new(),
                }),
                Err(problem) => warnings.push(PluginWarning::at(
                    &self.plugins_dir().join("known_marketplaces.json"),
                    format!("marketplace `{name}`: {problem}"),
                )),
            }
        }
        let settings = self.settings();
        for (name, (source, file)) in settings.marketplaces {
            if list.iter().any(|m| m.name == name) {
                continue;
            }
            let location = match &source {
                MarketplaceSource::Directory { path } => Some(path.clone()),
                _ => {
                    Some(self.plugins_dir().join("marketplaces").join(&name)).filter(|p| p.is_dir())
                }
            };
            list.push(MarketplaceInfo {
                name,
                source,
                location,
                known_from: file
                    .map(|f| f.display().to_string())
                    .unwrap_or_else(|| "settings".into()),
                plugins: Vec::new(),
            });
        }
        for market in &mut list {
            if let Some(location) = &market.location {
                match read_marketplace(location) {
                    Ok((manifest, found)) => {
                        market.plugins = manifest.plugins.iter().map(|p| p.name.clone()).collect();
                        warnings.extend(found);
                    }
                    Err(warning) => warnings.push(warning),
                }
            }
        }
        (list, warnings)
    }

    /// Forgets a marketplace added with [`add_marketplace`](Self::add_marketplace) (and deletes
    /// its clone). Plugins installed from it stay installed.
    pub fn remove_marketplace(&self, name: &str) -> Result<(), PluginError> {
        let mut known = self.known()?;
        if known.remove(name).is_none() {
            return Err(PluginError::new(format!(
                "no marketplace `{name}` was added (see `plugin marketplace list`)"
            )));
        }
        self.write_state("known_marketplaces.json", &Value::Object(known))?;
        let clone = self.plugins_dir().join("marketplaces").join(name);
        if clone.is_dir() {
            std::fs::remove_dir_all(&clone)
                .map_err(|e| PluginError::new(format!("cannot delete {}: {e}", clone.display())))?;
        }
        Ok(())
    }

    /// The folder and catalog of marketplace `name`; a git marketplace named only in settings is
    /// cloned now, and with `pull` a cloned one is brought up to date (`git pull`).
    fn open_marketplace(
        &self,
        name: &str,
        pull: bool,
    ) -> Result<(PathBuf, MarketplaceManifest, Vec<PluginWarning>), PluginError> {
        let (markets, _) = self.marketplaces();
        let Some(market) = markets.into_iter().find(|m| m.name == name) else {
            return Err(PluginError::new(format!(
                "unknown marketplace `{name}`: add it with `plugin marketplace add <folder | git \
                 URL | owner/repo>`"
            )));
        };
        let location = match (market.location, market.source.git()) {
            (Some(location), Some(_)) if pull => {
                git(&["pull", "--quiet", "--ff-only"], Some(&location))?;
                location
            }
            (Some(location), _) => location,
            (None, Some((url, reference))) => {
                let target = self.plugins_dir().join("marketplaces").join(name);
                git_clone(&url, reference.as_deref(), &target)?;
                target
            }
            (None, None) => {
                return Err(PluginError::new(format!(
                    "marketplace `{name}` has no folder"
                )))
            }
        };
        let (manifest, warnings) =
            read_marketplace(&location).map_err(|w| PluginError::new(w.to_string()))?;
        Ok((location, manifest, warnings))
    }

    /// Brings a marketplace up to date (`git pull` for a repository; a folder is read as it is).
    pub fn update_marketplace(&self, name: &str) -> Result<Vec<String>, PluginError> {
        let (_, manifest, _) = self.open_marketplace(name, true)?;
        Ok(manifest.plugins.iter().map(|p| p.name.clone()).collect())
    }

    // ----- plugins -----

    /// `name@marketplace`, or `name` when exactly one known marketplace offers it.
    pub fn resolve_id(&self, id: &str) -> Result<String, PluginError> {
        if id.contains('@') {
            let (name, market) = split_id(id)?;
            return Ok(format!("{name}@{market}"));
        }
        let (markets, _) = self.marketplaces();
        let offering: Vec<&MarketplaceInfo> = markets
            .iter()
            .filter(|m| m.plugins.iter().any(|p| p == id))
            .collect();
        match offering.as_slice() {
            [one] => Ok(format!("{id}@{}", one.name)),
            [] => Err(PluginError::new(format!(
                "no known marketplace offers `{id}` (see `plugin marketplace list`)"
            ))),
            many => Err(PluginError::new(format!(
                "`{id}` is offered by {}: name one as {id}@marketplace",
                many.iter()
                    .map(|m| m.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))),
        }
    }

    /// Installs (or reinstalls) a plugin into `~/.robota/plugins/cache/<marketplace>/<name>`
    /// and enables it in `scope`'s settings file.
    pub fn install(
        &self,
        id: &str,
        scope: PluginScope,
    ) -> Result<(PluginInfo, Vec<PluginWarning>), PluginError> {
        let id = self.resolve_id(id)?;
        let (name, market) = split_id(&id)?;
        let (location, manifest, mut warnings) = self.open_marketplace(market, false)?;
        let Some(entry) = manifest.entry(name) else {
            return Err(PluginError::new(format!(
                "marketplace `{market}` has no plugin `{name}`; it offers: {}",
                manifest
                    .plugins
                    .iter()
                    .map(|p| p.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        };
        let target = self.plugins_dir().join("cache").join(market).join(name);
        let temp = target.with_file_name(format!(".{name}.{}.tmp", uuid::Uuid::new_v4().simple()));
        let mut sha = None;
        let fetched = match &entry.source {
            PluginSource::Relative { path } => {
                let base = match &manifest.plugin_root {
                    Some(root) => location.join(root),
                    None => location.clone(),
                };
                let source = base.join(path);
                let inside = std::fs::canonicalize(&source)
                    .ok()
                    .zip(std::fs::canonicalize(&location).ok())
                    .is_some_and(|(s, l)| s.starts_with(l));
                if !inside {
                    return Err(PluginError::new(format!(
                        "marketplace `{market}`: the source of `{name}` ({path}) is not a folder \
                         inside the marketplace"
                    )));
                }
                copy_tree(&source, &temp, &mut warnings)
            }
            PluginSource::Git { url, reference } => git_clone(url, reference.as_deref(), &temp)
                .map(|()| {
                    sha = git(&["rev-parse", "HEAD"], Some(&temp)).ok();
                }),
        };
        if let Err(error) = fetched {
            let _ = std::fs::remove_dir_all(&temp);
            return Err(error);
        }
        // The copy must be a plugin robota can load before it replaces anything.
        let loaded = match load_plugin(&temp, name, market) {
            Ok((plugin, found)) => {
                warnings.extend(found);
                plugin
            }
            Err(warning) => {
                let _ = std::fs::remove_dir_all(&temp);
                return Err(PluginError::new(warning.to_string()));
            }
        };
        let _ = std::fs::remove_dir_all(&target);
        std::fs::rename(&temp, &target).map_err(|e| {
            let _ = std::fs::remove_dir_all(&temp);
            PluginError::new(format!("cannot install into {}: {e}", target.display()))
        })?;
        let version = loaded
            .manifest
            .version
            .clone()
            .or_else(|| entry.version.clone());
        let mut installed = self.installed()?;
        let installed_at = installed
            .get(&id)
            .and_then(|e| e.get("installedAt"))
            .cloned()
            .unwrap_or_else(|| Value::String(now()));
        let mut record = json!({
            "installPath": target,
            "installedAt": installed_at,
            "lastUpdated": now(),
            "source": entry.source,
        });
        if let Some(version) = &version {
            record["version"] = Value::String(version.clone());
        }
        if let Some(sha) = sha {
            record["gitCommitSha"] = Value::String(sha.trim().to_string());
        }
        installed.insert(id.clone(), record);
        self.write_installed(installed)?;
        self.set_enabled(&id, scope, true)?;
        let info = self
            .list()
            .plugins
            .into_iter()
            .find(|p| p.id == id)
            .ok_or_else(|| {
                PluginError::new(format!("`{id}` was installed but cannot be listed"))
            })?;
        Ok((info, warnings))
    }

    /// Removes an installed plugin and its `enabledPlugins` entry in `scope`'s file.
    pub fn uninstall(&self, id: &str, scope: PluginScope) -> Result<(), PluginError> {
        let id = self.resolve_installed(id)?;
        let mut installed = self.installed()?;
        if let Some(path) = installed.remove(&id).and_then(|e| {
            e.get("installPath")
                .and_then(Value::as_str)
                .map(PathBuf::from)
        }) {
            // Only ever delete inside robota's own cache.
            if path.starts_with(self.plugins_dir().join("cache")) && path.is_dir() {
                std::fs::remove_dir_all(&path).map_err(|e| {
                    PluginError::new(format!("cannot delete {}: {e}", path.display()))
                })?;
            }
        }
        self.write_installed(installed)?;
        set_settings_flag(&self.scope_file(scope), "enabledPlugins", &id, None)
            .map_err(|e| PluginError::new(e.to_string()))?;
        Ok(())
    }

    /// The id of an installed plugin named `id` (`name` or `name@marketplace`).
    fn resolve_installed(&self, id: &str) -> Result<String, PluginError> {
        let installed = self.installed()?;
        if installed.contains_key(id) {
            return Ok(id.to_string());
        }
        let matches: Vec<&String> = installed
            .keys()
            .filter(|k| k.split('@').next() == Some(id))
            .collect();
        match matches.as_slice() {
            [one] => Ok((*one).clone()),
            [] => Err(PluginError::new(format!(
                "plugin `{id}` is not installed (see `plugin list`)"
            ))),
            _ => Err(PluginError::new(format!(
                "more than one installed plugin is called `{id}`: name it as {id}@marketplace"
            ))),
        }
    }

    /// Turns an installed plugin on or off in `scope`'s settings file.
    pub fn set_enabled(
        &self,
        id: &str,
        scope: PluginScope,
        on: bool,
    ) -> Result<String, PluginError> {
        let id = self.resolve_installed(id)?;
        set_settings_flag(&self.scope_file(scope), "enabledPlugins", &id, Some(on))
            .map_err(|e| PluginError::new(e.to_string()))?;
        Ok(id)
    }

    /// Updates an installed plugin from its marketplace (pulled first when it is a repository).
    /// Its enabled state is left as it is.
    pub fn update(&self, id: &str) -> Result<(PluginInfo, Vec<PluginWarning>), PluginError> {
        let id = self.resolve_installed(id)?;
        let (_, market) = split_id(&id)?;
        self.open_marketplace(market, true)?;
        // `install` enables in the user file; what that file said is put back afterwards.
        let user_file = self.scope_file(PluginScope::User);
        let restore = read_json_object(&user_file)
            .ok()
            .flatten()
            .and_then(|settings| settings.get("enabledPlugins")?.get(&id)?.as_bool());
        let result = self.install(&id, PluginScope::User);
        let _ = set_settings_flag(&user_file, "enabledPlugins", &id, restore);
        result.map(|(mut info, warnings)| {
            let settings = self.settings();
            let state = settings.enabled.get(&id);
            info.enabled = state.is_some_and(|(on, _)| *on);
            info.enabled_in = state.and_then(|(_, f)| f.clone());
            (info, warnings)
        })
    }

    /// Installed and enabled plugins, with the marketplaces and every problem found.
    pub fn list(&self) -> PluginListing {
        let settings = self.settings();
        let mut warnings = settings.warnings.clone();
        let installed = self.installed().unwrap_or_else(|e| {
            warnings.push(PluginWarning::new(e.message));
            Map::new()
        });
        let mut ids: Vec<String> = installed.keys().cloned().collect();
        ids.extend(
            settings
                .enabled
                .keys()
                .filter(|k| !installed.contains_key(*k))
                .cloned(),
        );
        let mut plugins = Vec::new();
        for id in ids {
            let Ok((name, market)) = split_id(&id) else {
                warnings.push(PluginWarning::new(format!(
                    "enabledPlugins: `{id}` is not name@marketplace; it is ignored"
                )));
                continue;
            };
            let path = installed
                .get(&id)
                .and_then(|e| e.get("installPath"))
                .and_then(Value::as_str)
                .map(PathBuf::from);
            let state = settings.enabled.get(&id);
            let mut info = PluginInfo {
                id: id.clone(),
                name: name.to_string(),
                marketplace: market.to_string(),
                version: installed
                    .get(&id)
                    .and_then(|e| e.get("version"))
                    .and_then(Value::as_str)
                    .map(str::to_string),
                description: None,
                installed: path.is_some(),
                enabled: state.is_some_and(|(on, _)| *on),
                enabled_in: state.and_then(|(_, f)| f.clone()),
                path: path.clone(),
                loaded: false,
                skills: Vec::new(),
                commands: Vec::new(),
                agents: Vec::new(),
                hook_files: Vec::new(),
                mcp_servers: Vec::new(),
            };
            if let Some(path) = &path {
                match load_plugin(path, name, market) {
                    Ok((plugin, found)) => {
                        warnings.extend(found);
                        describe(&mut info, &plugin);
                    }
                    Err(warning) => warnings.push(warning),
                }
            }
            plugins.push(info);
        }
        let (marketplaces, found) = self.marketplaces();
        warnings.extend(found);
        PluginListing {
            plugins,
            marketplaces,
            warnings,
        }
    }

    /// The plugins a session loads: every `enabledPlugins` entry that is on and installed.
    /// Anything else (not installed, a missing folder, a bad id) is a warning.
    pub fn enabled_plugins(
        &self,
        settings: &PluginSettings,
    ) -> (Vec<LoadedPlugin>, Vec<PluginWarning>) {
        let mut warnings = settings.warnings.clone();
        let installed = match self.installed() {
            Ok(installed) => installed,
            Err(error) => {
                warnings.push(PluginWarning::new(error.message));
                return (Vec::new(), warnings);
            }
        };
        let mut plugins: Vec<LoadedPlugin> = Vec::new();
        for (id, (on, file)) in &settings.enabled {
            if !on {
                continue;
            }
            let warn = |message: String| PluginWarning {
                file: file.clone(),
                message,
            };
            let Ok((name, market)) = split_id(id) else {
                warnings.push(warn(format!(
                    "enabledPlugins: `{id}` is not name@marketplace; it is ignored"
                )));
                continue;
            };
            let Some(path) = installed
                .get(id)
                .and_then(|e| e.get("installPath"))
                .and_then(Value::as_str)
            else {
                warnings.push(warn(format!(
                    "plugin `{id}` is enabled but not installed; install it with `plugin \
                     install {id}`"
                )));
                continue;
            };
            if let Some(other) = plugins.iter().find(|p| p.name == name) {
                warnings.push(warn(format!(
                    "plugin `{id}` is not loaded: `{}` is also enabled and has the same name \
                     (the namespace of their skills and commands)",
                    other.id
                )));
                continue;
            }
            match load_plugin(Path::new(path), name, market) {
                Ok((plugin, found)) => {
                    warnings.extend(found);
                    plugins.push(plugin);
                }
                Err(warning) => warnings.push(warning),
            }
        }
        (plugins, warnings)
    }
}

/// Fills in what a loaded plugin brings.
pub(crate) fn describe(info: &mut PluginInfo, plugin: &LoadedPlugin) {
    info.description = plugin.manifest.description.clone();
    if plugin.manifest.version.is_some() {
        info.version = plugin.manifest.version.clone();
    }
    let names = |dir: &Option<PathBuf>, folders: bool| -> Vec<String> {
        let Some(dir) = dir else { return Vec::new() };
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|entry| {
                let path = entry.path();
                let name = if folders {
                    path.join("SKILL.md").is_file().then(|| entry.file_name())
                } else {
                    (path.extension().is_some_and(|e| e == "md"))
                        .then(|| path.file_stem().map(|s| s.to_os_string()))
                        .flatten()
                }?;
                Some(format!("{}:{}", plugin.name, name.to_string_lossy()))
            })
            .collect();
        names.sort();
        names
    };
    info.skills = names(&plugin.skills_dir, true);
    info.commands = names(&plugin.commands_dir, false);
    // Agents are named by their frontmatter's `name`, not their file's.
    info.agents = names(&plugin.agents_dir, false)
        .into_iter()
        .map(|qualified| {
            let stem = qualified.split_once(':').map_or("", |(_, s)| s).to_string();
            plugin
                .agents_dir
                .as_ref()
                .map(|dir| dir.join(format!("{stem}.md")))
                .and_then(|file| {
                    let text = read_regular_text(&file, &AGENT_DEFINITION_FILE).ok()?;
                    let source = AgentSource::Plugin {
                        plugin: plugin.name.clone(),
                        path: file.clone(),
                    };
                    parse_agent_definition(&file, &text, source).ok()
                })
                .map(|(definition, _)| format!("{}:{}", plugin.name, definition.name))
                .unwrap_or(qualified)
        })
        .collect();
    info.agents.sort();
    info.hook_files = plugin.hook_files.clone();
    info.mcp_servers = plugin.mcp_servers.clone();
}

/// Runs `git` (no prompts; the `ext::` transport refused) and returns its output.
fn git(args: &[&str], dir: Option<&Path>) -> Result<String, PluginError> {
    let mut command = Command::new("git");
    command
        .args(["-c", "protocol.ext.allow=never"])
        .args(args)
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdin(Stdio::null());
    if let Some(dir) = dir {
        command.current_dir(dir);
    }
    let output = command.output().map_err(|e| {
        PluginError::new(format!(
            "cannot run git ({e}): git marketplaces and plugins need the `git` program on PATH"
        ))
    })?;
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    } else {
        Err(PluginError::new(format!(
            "git {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr).trim()
        )))
    }
}

/// `git clone` of `url` (at `reference`) into `target`, which must not exist yet.
fn git_clone(url: &str, reference: Option<&str>, target: &Path) -> Result<(), PluginError> {
    if let Some(parent) = target.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|e| PluginError::new(format!("cannot create {}: {e}", parent.display())))?;
    }
    let target_text = target.to_string_lossy().to_string();
    let mut args = vec!["clone", "--quiet", "--depth", "1"];
    if let Some(reference) = reference {
        args.extend(["--branch", reference]);
    }
    args.extend(["--", url, &target_text]);
    git(&args, None).map(|_| ())
}

/// Copies a plugin folder (without `.git`; symbolic links are skipped with a warning so a copy
/// never reaches outside the plugin), within [`MAX_COPY_FILES`] and [`MAX_COPY_BYTES`].
fn copy_tree(from: &Path, to: &Path, warnings: &mut Vec<PluginWarning>) -> Result<(), PluginError> {
    let mut files = 0usize;
    let mut bytes = 0u64;
    let mut stack = vec![(from.to_path_buf(), to.to_path_buf())];
    let fail = |path: &Path, e: std::io::Error| {
        PluginError::new(format!("cannot copy {}: {e}", path.display()))
    };
    while let Some((source, target)) = stack.pop() {
        std::fs::create_dir_all(&target).map_err(|e| fail(&target, e))?;
        for entry in std::fs::read_dir(&source).map_err(|e| fail(&source, e))? {
            let entry = entry.map_err(|e| fail(&source, e))?;
            let path = entry.path();
            let kind = entry.file_type().map_err(|e| fail(&path, e))?;
            if entry.file_name() == ".git" {
                continue;
            }
            let destination = target.join(entry.file_name());
            if kind.is_symlink() {
                warnings.push(PluginWarning::at(
                    &path,
                    "symbolic link not copied (a plugin is installed without links)",
                ));
            } else if kind.is_dir() {
                stack.push((path, destination));
            } else if kind.is_file() {
                files += 1;
                bytes += entry.metadata().map(|m| m.len()).unwrap_or(0);
                if files > MAX_COPY_FILES || bytes > MAX_COPY_BYTES {
                    return Err(PluginError::new(format!(
                        "{} is too large to install (over {MAX_COPY_FILES} files or {} MiB)",
                        from.display(),
                        MAX_COPY_BYTES / (1024 * 1024)
                    )));
                }
                std::fs::copy(&path, &destination).map_err(|e| fail(&path, e))?;
            }
        }
    }
    Ok(())
}
