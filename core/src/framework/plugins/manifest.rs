//! The JSON files of Claude Code's plugin formats, read leniently: `.claude-plugin/plugin.json`
//! (a plugin's manifest), `.claude-plugin/marketplace.json` (a marketplace's catalog), and the
//! sources they and the settings' `extraKnownMarketplaces` name. A value of the wrong type is a
//! [`PluginWarning`] naming the file and key; keys robota does not act on are kept.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::files::{read_regular_text, FileKind};

/// `plugin.json`, `marketplace.json`, `hooks.json`, `.mcp.json` and the install-state files:
/// at most 1 MiB each.
pub const PLUGIN_JSON_FILE: FileKind = FileKind::new("plugin file", 1024 * 1024);

/// The folder holding a plugin's or a marketplace's manifest.
pub const PLUGIN_META_DIR: &str = ".claude-plugin";

/// A plugin's manifest, inside [`PLUGIN_META_DIR`].
pub const PLUGIN_MANIFEST: &str = "plugin.json";

/// A marketplace's catalog, inside [`PLUGIN_META_DIR`].
pub const MARKETPLACE_MANIFEST: &str = "marketplace.json";

/// A problem with a plugin, a marketplace or their files that did not stop anything else: the
/// file (or entry) concerned is skipped or the bad value ignored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PluginWarning {
    /// The file concerned, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<PathBuf>,
    /// What is wrong and what robota did about it.
    pub message: String,
}

impl PluginWarning {
    /// A warning about `file`.
    pub fn at(file: &Path, message: impl Into<String>) -> Self {
        PluginWarning {
            file: Some(file.to_path_buf()),
            message: message.into(),
        }
    }

    /// A warning about no file in particular.
    pub fn new(message: impl Into<String>) -> Self {
        PluginWarning {
            file: None,
            message: message.into(),
        }
    }
}

impl std::fmt::Display for PluginWarning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.file {
            Some(file) => write!(f, "{}: {}", file.display(), self.message),
            None => f.write_str(&self.message),
        }
    }
}

/// Why a plugin or marketplace name cannot be used, if it cannot: names become folder names and
/// the parts of `plugin@marketplace` and `plugin:skill`, so they are kept to letters, digits,
/// `.`, `_` and `-`.
pub fn name_problem(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        Some("is empty")
    } else if name.len() > 64 {
        Some("is longer than 64 characters")
    } else if name.starts_with('.') {
        Some("starts with `.`")
    } else if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
    {
        Some("may only hold letters, digits, `.`, `_` and `-`")
    } else {
        None
    }
}

/// A plugin's author.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct PluginAuthor {
    /// The name.
    pub name: String,
    /// An e-mail address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
    /// A web page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

/// `.claude-plugin/plugin.json`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct PluginManifest {
    /// The plugin's name (its namespace: `name:skill`, `name:command`).
    pub name: String,
    /// Its version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// What it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Who made it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author: Option<PluginAuthor>,
    /// Search words.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub keywords: Vec<String>,
    /// Every other key (`homepage`, `license`, `hooks`, `mcpServers`, …) as written.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub extra: BTreeMap<String, Value>,
}

/// Reads a JSON file that must hold an object; `Ok(None)` when it does not exist.
pub(crate) fn read_json_object(path: &Path) -> Result<Option<Map<String, Value>>, PluginWarning> {
    let text = match read_regular_text(path, &PLUGIN_JSON_FILE) {
        Ok(text) => text,
        Err(error) if error.is_not_found() => return Ok(None),
        Err(error) => return Err(PluginWarning::at(path, error.to_string())),
    };
    match serde_json::from_str::<Value>(&text) {
        Ok(Value::Object(map)) => Ok(Some(map)),
        Ok(other) => Err(PluginWarning::at(
            path,
            format!("must hold a JSON object, found {}", type_name(&other)),
        )),
        Err(error) => Err(PluginWarning::at(path, format!("not valid JSON: {error}"))),
    }
}

/// `a string`, `an array`, … for messages.
pub(crate) fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Takes the optional string `key` out of `map`; another type is a warning.
fn take_string(
    map: &mut Map<String, Value>,
    key: &str,
    file: &Path,
    warnings: &mut Vec<PluginWarning>,
) -> Option<String> {
    match map.remove(key) {
        None | Some(Value::Null) => None,
        Some(Value::String(text)) => Some(text),
        Some(other) => {
            warnings.push(PluginWarning::at(
                file,
                format!(
                    "`{key}` must be a string, found {}; it is ignored",
                    type_name(&other)
                ),
            ));
            None
        }
    }
}

/// Parses a manifest's JSON object. `fallback_name` (the marketplace entry's or the folder's
/// name) stands in for a missing `name`. Bad values are warnings; a name that cannot be used is
/// an error (the plugin is skipped).
pub fn parse_manifest(
    file: &Path,
    mut map: Map<String, Value>,
    fallback_name: &str,
) -> Result<(PluginManifest, Vec<PluginWarning>), PluginWarning> {
    let mut warnings = Vec::new();
    let name = take_string(&mut map, "name", file, &mut warnings)
        .unwrap_or_else(|| fallback_name.to_string());
    if let Some(problem) = name_problem(&name) {
        return Err(PluginWarning::at(
            file,
            format!("plugin name `{name}` {problem}; the plugin is not loaded"),
        ));
    }
    let version = take_string(&mut map, "version", file, &mut warnings);
    let description = take_string(&mut map, "description", file, &mut warnings);
    let author = match map.remove("author") {
        None | Some(Value::Null) => None,
        Some(Value::String(name)) => Some(PluginAuthor {
            name,
            ..PluginAuthor::default()
        }),
        Some(value @ Value::Object(_)) => {
            match serde_json::from_value::<PluginAuthor>(value) {
                Ok(author) => Some(author),
                Err(error) => {
                    warnings.push(PluginWarning::at(
                    file,
                    format!("`author` is not {{\"name\", \"email\", \"url\"}} ({error}); it is ignored"),
                ));
                    None
                }
            }
        }
        Some(other) => {
            warnings.push(PluginWarning::at(
                file,
                format!(
                    "`author` must be an object, found {}; it is ignored",
                    type_name(&other)
                ),
            ));
            None
        }
    };
    let keywords = match map.remove("keywords") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) if items.iter().all(Value::is_string) => items
            .into_iter()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect(),
        Some(other) => {
            warnings.push(PluginWarning::at(
                file,
                format!(
                    "`keywords` must be a list of strings, found {}; it is ignored",
                    type_name(&other)
                ),
            ));
            Vec::new()
        }
    };
    Ok((
        PluginManifest {
            name,
            version,
            description,
            author,
            keywords,
            extra: map.into_iter().collect(),
        },
        warnings,
    ))
}

/// Where a marketplace lives (Claude Code's `extraKnownMarketplaces.<name>.source` shapes).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "source", rename_all = "snake_case")]
pub enum MarketplaceSource {
    /// A folder on this machine, used in place.
    Directory {
        /// The folder (holding `.claude-plugin/marketplace.json`).
        path: PathBuf,
    },
    /// A git repository, cloned into the user's robota folder.
    Git {
        /// What `git clone` is given.
        url: String,
        /// A branch or tag to check out.
        #[serde(default, rename = "ref", skip_serializing_if = "Option::is_none")]
        reference: Option<String>,
    },
    /// A GitHub repository (`owner/repo`), cloned over https.
    Github {
        /// `owner/repo`.
        repo: String,
        /// A branch or tag to check out.
        #[serde(default, rename = "ref", skip_serializing_if = "Option::is_none")]
        reference: Option<String>,
    },
}

impl MarketplaceSource {
    /// What `plugin marketplace add` was given: an existing folder, a git URL (`https://…`,
    /// `file://…`, `git@…`, `….git`) or GitHub's `owner/repo`. Relative folders resolve
    /// against `cwd`.
    pub fn from_argument(argument: &str, cwd: &Path) -> Result<Self, String> {
        let argument = argument.trim();
        if argument.is_empty() {
            return Err("give a folder, a git URL or owner/repo".into());
        }
        let local = cwd.join(argument);
        if local.is_dir() {
            let path = std::fs::canonicalize(&local).unwrap_or(local);
            return Ok(MarketplaceSource::Directory { path });
        }
        let lower = argument.to_ascii_lowercase();
        if lower.ends_with(".json") {
            return Err(format!(
                "`{argument}`: a marketplace.json reached by URL is not supported; give the \
                 folder or git repository that holds it"
            ));
        }
        if lower.starts_with("https://")
            || lower.starts_with("http://")
            || lower.starts_with("file://")
            || lower.starts_with("ssh://")
            || lower.starts_with("git@")
            || lower.ends_with(".git")
        {
            return Ok(MarketplaceSource::Git {
                url: argument.to_string(),
                reference: None,
            });
        }
        let parts: Vec<&str> = argument.split('/').collect();
        if parts.len() == 2 && parts.iter().all(|p| name_problem(p).is_none()) {
            return Ok(MarketplaceSource::Github {
                repo: argument.to_string(),
                reference: None,
            });
        }
        Err(format!(
            "`{argument}` is neither a folder, a git URL nor owner/repo (a GitHub repository)"
        ))
    }

    /// Reads a source object (`{"source": "github", "repo": "…"}`, …).
    pub fn from_value(value: &Value) -> Result<Self, String> {
        serde_json::from_value::<MarketplaceSource>(value.clone()).map_err(|error| {
            format!(
                "not a marketplace source ({error}); expected {{\"source\": \"directory\", \
                 \"path\"}}, {{\"source\": \"git\", \"url\"}} or {{\"source\": \"github\", \
                 \"repo\"}}"
            )
        })
    }

    /// The git URL and reference to clone, for a repository source.
    pub fn git(&self) -> Option<(String, Option<String>)> {
        match self {
            MarketplaceSource::Directory { .. } => None,
            MarketplaceSource::Git { url, reference } => Some((url.clone(), reference.clone())),
            MarketplaceSource::Github { repo, reference } => {
                Some((format!("https://github.com/{repo}.git"), reference.clone()))
            }
        }
    }
}

impl std::fmt::Display for MarketplaceSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MarketplaceSource::Directory { path } => write!(f, "directory {}", path.display()),
            MarketplaceSource::Git { url, .. } => write!(f, "git {url}"),
            MarketplaceSource::Github { repo, .. } => write!(f, "github {repo}"),
        }
    }
}

/// Where a marketplace's plugin is fetched from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum PluginSource {
    /// A folder inside the marketplace (`"./plugins/name"`).
    Relative {
        /// The path as written, relative to the marketplace's plugin root.
        path: String,
    },
    /// A git repository of its own.
    Git {
        /// What `git clone` is given.
        url: String,
        /// A branch or tag.
        #[serde(default, rename = "ref", skip_serializing_if = "Option::is_none")]
        reference: Option<String>,
    },
}

impl PluginSource {
    /// Reads a marketplace entry's `source`: a relative path, or `{"source": "github", "repo"}`,
    /// `{"source": "url" | "git", "url"}` (each with an optional `ref`).
    pub fn from_value(value: &Value) -> Result<Self, String> {
        match value {
            Value::String(path) => Ok(PluginSource::Relative { path: path.clone() }),
            Value::Object(map) => {
                let text = |key: &str| map.get(key).and_then(Value::as_str).map(str::to_string);
                let reference = text("ref");
                match text("source").as_deref() {
                    Some("github") => match text("repo") {
                        Some(repo) => Ok(PluginSource::Git {
                            url: format!("https://github.com/{repo}.git"),
                            reference,
                        }),
                        None => Err("a github source needs `repo` (\"owner/repo\")".into()),
                    },
                    Some("url" | "git") => match text("url") {
                        Some(url) => Ok(PluginSource::Git { url, reference }),
                        None => Err("a git source needs `url`".into()),
                    },
                    Some(other) => Err(format!(
                        "source kind `{other}` is not supported (use a relative path, github, \
                         git or url)"
                    )),
                    None => Err("`source.source` must name the kind (github, git or url)".into()),
                }
            }
            other => Err(format!(
                "`source` must be a path or an object, found {}",
                type_name(other)
            )),
        }
    }
}

/// One plugin a marketplace offers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MarketplaceEntry {
    /// The plugin's name.
    pub name: String,
    /// Where it is fetched from.
    pub source: PluginSource,
    /// What it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Every other key as written.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub extra: BTreeMap<String, Value>,
}

/// `.claude-plugin/marketplace.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MarketplaceManifest {
    /// The marketplace's name (the part after `@` in `plugin@marketplace`).
    pub name: String,
    /// `metadata.pluginRoot`: the folder relative plugin paths start from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plugin_root: Option<String>,
    /// The plugins offered.
    pub plugins: Vec<MarketplaceEntry>,
}

impl MarketplaceManifest {
    /// The entry for `plugin`.
    pub fn entry(&self, plugin: &str) -> Option<&MarketplaceEntry> {
        self.plugins.iter().find(|entry| entry.name == plugin)
    }
}

/// Reads `<dir>/.claude-plugin/marketplace.json`. A missing or unusable file is an error; a bad
/// plugin entry is a warning and the entry is skipped.
pub fn read_marketplace(
    dir: &Path,
) -> Result<(MarketplaceManifest, Vec<PluginWarning>), PluginWarning> {
    let file = dir.join(PLUGIN_META_DIR).join(MARKETPLACE_MANIFEST);
    let Some(mut map) = read_json_object(&file)? else {
        return Err(PluginWarning::at(
            &file,
            "not found: a marketplace holds .claude-plugin/marketplace.json",
        ));
    };
    let mut warnings = Vec::new();
    let name = match map.remove("name") {
        Some(Value::String(name)) => name,
        _ => return Err(PluginWarning::at(&file, "`name` (a string) is required")),
    };
    if let Some(problem) = name_problem(&name) {
        return Err(PluginWarning::at(
            &file,
            format!("marketplace name `{name}` {problem}"),
        ));
    }
    let plugin_root = map
        .get("metadata")
        .and_then(|m| m.get("pluginRoot"))
        .and_then(Value::as_str)
        .map(str::to_string);
    let items = match map.remove("plugins") {
        Some(Value::Array(items)) => items,
        None => Vec::new(),
        Some(other) => {
            warnings.push(PluginWarning::at(
                &file,
                format!("`plugins` must be a list, found {}", type_name(&other)),
            ));
            Vec::new()
        }
    };
    let mut plugins: Vec<MarketplaceEntry> = Vec::new();
    for (index, item) in items.into_iter().enumerate() {
        match marketplace_entry(item) {
            Ok(entry) if plugins.iter().any(|p| p.name == entry.name) => {
                warnings.push(PluginWarning::at(
                    &file,
                    format!(
                        "plugins[{index}]: plugin `{}` is listed twice; the first entry is used",
                        entry.name
                    ),
                ));
            }
            Ok(entry) => plugins.push(entry),
            Err(problem) => warnings.push(PluginWarning::at(
                &file,
                format!("plugins[{index}] skipped: {problem}"),
            )),
        }
    }
    Ok((
        MarketplaceManifest {
            name,
            plugin_root,
            plugins,
        },
        warnings,
    ))
}

fn marketplace_entry(item: Value) -> Result<MarketplaceEntry, String> {
    let Value::Object(mut map) = item else {
        return Err(format!("must be an object, found {}", type_name(&item)));
    };
    let name = match map.remove("name") {
        Some(Value::String(name)) => name,
        _ => return Err("`name` (a string) is required".into()),
    };
    if let Some(problem) = name_problem(&name) {
        return Err(format!("plugin name `{name}` {problem}"));
    }
    let source = match map.remove("source") {
        Some(value) => PluginSource::from_value(&value).map_err(|e| format!("`{name}`: {e}"))?,
        None => return Err(format!("`{name}`: `source` is required")),
    };
    let string = |map: &mut Map<String, Value>, key: &str| match map.remove(key) {
        Some(Value::String(text)) => Some(text),
        _ => None,
    };
    Ok(MarketplaceEntry {
        description: string(&mut map, "description"),
        version: string(&mut map, "version"),
        name,
        source,
        extra: map.into_iter().collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names() {
        assert!(name_problem("code-review_2.0").is_none());
        for bad in ["", ".hidden", "a b", "a:b", "a@b", "../x", "a/b"] {
            assert!(name_problem(bad).is_some(), "{bad}");
        }
    }

    #[test]
    fn plugin_sources() {
        assert_eq!(
            PluginSource::from_value(&json!({"source": "github", "repo": "o/r"})),
            Ok(PluginSource::Git {
                url: "https://github.com/o/r.git".into(),
                reference: None
            })
        );
        assert!(PluginSource::from_value(&json!({"source": "npm", "package": "x"})).is_err());
        assert!(PluginSource::from_value(&json!(3)).is_err());
    }

    #[test]
    fn marketplace_arguments() {
        let cwd = Path::new("/nonexistent-robota-test");
        assert!(matches!(
            MarketplaceSource::from_argument("owner/repo", cwd),
            Ok(MarketplaceSource::Github { .. })
        ));
        assert!(matches!(
            MarketplaceSource::from_argument("file:///tmp/m", cwd),
            Ok(MarketplaceSource::Git { .. })
        ));
        assert!(MarketplaceSource::from_argument("https://x/marketplace.json", cwd).is_err());
        assert!(MarketplaceSource::from_argument("a b c", cwd).is_err());
    }
}
