//! Agent definitions: the built-in agents and the Claude Code compatible `.md` files
//! (`.robota/agents/`, `.agents/agents/`, `.claude/agents/` in the project, then `.robota/agents/`
//! and `.claude/agents/` in the home directory, then the `agents/` of enabled plugins, named
//! `plugin:agent`), parsed from their frontmatter.
//!
//! A definition file is YAML frontmatter between `---` lines (parsed by
//! [`crate::framework::frontmatter`]: real YAML, plus Claude Code's lenient one-line values), then
//! the system prompt:
//!
//! ```text
//! ---
//! name: reviewer
//! description: |
//!   Reviews a diff for bugs. Use after writing code.
//!   <example>user: "review my change" assistant: "I'll use the reviewer agent"</example>
//! tools: [Read, Grep, Glob]
//! model: inherit
//! ---
//! You review code. Report concrete problems with file and line.
//! ```
//!
//! Keys: `name` and `description` (required; a one-line description's `\n` become line breaks,
//! as in Claude Code), `tools` (allowlist: a comma list or a YAML list; `*` means all),
//! `disallowedTools` (denylist), `model`, `maxTurns`, `permissionMode` (`default`, `acceptEdits`,
//! `plan`, `bypassPermissions`, `dontAsk`: the mode the subagent runs in, never more permissive
//! than its parent session's mode — see [`PermissionMode::capped_by`]). Keys Claude Code knows
//! that robota does not use (`color`, …) and unknown keys are [`AgentWarning`]s on the
//! [`AgentCatalog`].
//!
//! **One bad file never stops the session.** A file that cannot be used — no frontmatter, YAML
//! that does not parse, a missing required key, a bad value, an empty body, a `*.md` entry that
//! is not a regular file (a FIFO, a device or a link to one) or is over 1 MiB
//! ([`crate::files::AGENT_DEFINITION_FILE`]), a directory that cannot be read — is an
//! [`AgentWarning`] naming the file, the line and the problem, and every other definition still
//! loads. Nothing is skipped silently; a dangling link alone is skipped without a word.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::files::{read_regular_text, FileError, AGENT_DEFINITION_FILE};
use crate::framework::frontmatter;
use crate::permissions::PermissionMode;

/// The agent used when a request names none.
pub const DEFAULT_AGENT_TYPE: &str = "general-purpose";

/// Where a definition came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum AgentSource {
    /// Shipped with robota.
    Builtin,
    /// A file in the project.
    Project {
        /// The file.
        path: PathBuf,
    },
    /// A file in the user's home directory.
    User {
        /// The file.
        path: PathBuf,
    },
    /// A file in an enabled plugin's `agents/`; the agent is named `plugin:agent`.
    Plugin {
        /// The plugin's name (the namespace).
        plugin: String,
        /// The file.
        path: PathBuf,
    },
    /// Given by the host in code (e.g. the Claude Agent SDK's `agents`); above every file's.
    Host,
}

impl AgentSource {
    /// The file a definition was read from (`None` for a built-in).
    pub fn path(&self) -> Option<&Path> {
        match self {
            AgentSource::Builtin | AgentSource::Host => None,
            AgentSource::Project { path }
            | AgentSource::User { path }
            | AgentSource::Plugin { path, .. } => Some(path),
        }
    }
}

/// One agent a subagent can be started as.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentDefinition {
    /// Unique name (the `agent_type` hooks see).
    pub name: String,
    /// What it is for (shown to the model choosing an agent).
    pub description: String,
    /// Its system prompt (the file's body).
    pub system_prompt: String,
    /// Allowlist of tool names; `None` inherits every tool of the session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    /// Denylist of tool names.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub disallowed_tools: Vec<String>,
    /// Requested model. robota runs subagents on the session's provider; a model other than the
    /// session's is reported as a note, not switched to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Most rounds per run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_turns: Option<u32>,
    /// The permission mode it asks to run in (`permissionMode`); `None` inherits the session's.
    /// It is capped by the session's mode when the subagent starts: a subagent may narrow what
    /// its parent may do, never widen it ([`PermissionMode::capped_by`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission_mode: Option<PermissionMode>,
    /// Where it came from.
    pub source: AgentSource,
}

/// A definition file that could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AgentDefinitionError {
    /// The file (or its directory) exists but could not be read.
    #[error("cannot read agent definition {}: {source}", path.display())]
    Read {
        /// The file or directory.
        path: PathBuf,
        /// The operating-system error.
        #[source]
        source: io::Error,
    },
    /// The file is not a regular file (a FIFO, a device, or a link to one), is over the 1 MiB cap
    /// ([`crate::files::AGENT_DEFINITION_FILE`]) or is not UTF-8.
    #[error(transparent)]
    File(crate::files::FileError),
    /// The file's frontmatter or body is malformed.
    #[error("{}{}: invalid agent definition: {problem}", path.display(), line.map(|l| format!(":{l}")).unwrap_or_default())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// 1-based line of the problem, when it is on one line.
        line: Option<usize>,
        /// What is wrong and how to fix it.
        problem: String,
    },
}

impl AgentDefinitionError {
    /// The file the problem is in.
    pub fn path(&self) -> &Path {
        match self {
            AgentDefinitionError::Read { path, .. }
            | AgentDefinitionError::Invalid { path, .. } => path,
            AgentDefinitionError::File(error) => error.path(),
        }
    }
}

/// A problem with an agent definition file that did not stop anything else from loading: a file
/// that could not be used (and was skipped), an ignored key, a definition shadowed by another.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentWarning {
    /// The file (or directory) concerned.
    pub file: PathBuf,
    /// 1-based line of the problem, when it is on one line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    /// What is wrong and what robota did about it.
    pub message: String,
}

impl AgentWarning {
    /// A warning about `file`.
    pub fn at(file: &Path, line: Option<usize>, message: impl Into<String>) -> Self {
        AgentWarning {
            file: file.to_path_buf(),
            line,
            message: message.into(),
        }
    }

    /// The warning for a definition that could not be used and was skipped.
    pub fn skipped(error: &AgentDefinitionError) -> Self {
        let (line, problem) = match error {
            AgentDefinitionError::Invalid { line, problem, .. } => (*line, problem.clone()),
            AgentDefinitionError::Read { source, .. } => {
                (None, format!("cannot be read: {source}"))
            }
            AgentDefinitionError::File(error) => (None, error.to_string()),
        };
        AgentWarning {
            file: error.path().to_path_buf(),
            line,
            message: format!("agent definition skipped: {problem}"),
        }
    }
}

impl std::fmt::Display for AgentWarning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{line}: {}", self.file.display(), self.message),
            None => write!(f, "{}: {}", self.file.display(), self.message),
        }
    }
}

/// The agents available to a session: the built-ins overridden by files.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AgentCatalog {
    definitions: BTreeMap<String, AgentDefinition>,
    /// Non-fatal problems: files skipped because they could not be used, unused or unknown keys,
    /// definitions shadowed by higher-priority ones.
    pub warnings: Vec<AgentWarning>,
}

impl AgentCatalog {
    /// The built-in agents only.
    pub fn builtin() -> Self {
        let mut catalog = AgentCatalog::default();
        for definition in builtin_agents() {
            catalog
                .definitions
                .insert(definition.name.clone(), definition);
        }
        catalog
    }

    /// The agent called `name` (exact, else case-insensitive).
    pub fn get(&self, name: &str) -> Option<&AgentDefinition> {
        self.definitions.get(name).or_else(|| {
            self.definitions
                .values()
                .find(|d| d.name.eq_ignore_ascii_case(name))
        })
    }

    /// Every agent, by name.
    pub fn definitions(&self) -> impl Iterator<Item = &AgentDefinition> + '_ {
        self.definitions.values()
    }

    /// Adds (or replaces) a definition.
    pub fn insert(&mut self, definition: AgentDefinition) {
        self.definitions.insert(definition.name.clone(), definition);
    }

    /// The agents as a system-prompt section: names and descriptions only.
    pub fn prompt_section(&self) -> String {
        let mut text = String::from(
            "# Subagents\n\nDelegate a self-contained task to a subagent with the `Task` tool \
             (`subagent_type` is the agent type; `run_in_background: true` runs it beside you, \
             several at once in parallel) or the `robota_command_agent` tool (args: \
             `[--isolation worktree] [AGENT_TYPE] PROMPT`); its final answer comes back as the \
             tool result. Available agent types:",
        );
        for definition in self.definitions() {
            text.push_str(&format!(
                "\n- {}: {}",
                definition.name,
                one_line(&definition.description)
            ));
        }
        text
    }
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The built-in agents (spec 000: `general-purpose`, `Explore`, `Plan`).
pub fn builtin_agents() -> Vec<AgentDefinition> {
    let read_only = vec!["Write".to_string(), "Edit".to_string()];
    vec![
        AgentDefinition {
            name: DEFAULT_AGENT_TYPE.into(),
            description: "General-purpose agent for researching complex questions, searching for \
                          code and carrying out multi-step tasks."
                .into(),
            system_prompt: "You are an agent working on a task delegated by another agent. Use \
                            the tools available to complete it fully; do not stop halfway."
                .into(),
            tools: None,
            disallowed_tools: Vec::new(),
            model: None,
            max_turns: None,
            permission_mode: None,
            source: AgentSource::Builtin,
        },
        AgentDefinition {
            name: "Explore".into(),
            description: "Read-only agent for exploring a codebase: finding files, searching \
                          code and answering questions about it."
                .into(),
            system_prompt: "You explore a codebase to answer a question. You do not change \
                            files. Search broadly, read what matters and answer precisely, with \
                            file paths."
                .into(),
            tools: None,
            disallowed_tools: read_only.clone(),
            model: None,
            max_turns: None,
            permission_mode: None,
            source: AgentSource::Builtin,
        },
        AgentDefinition {
            name: "Plan".into(),
            description: "Read-only agent for researching a change and writing an \
                          implementation plan."
                .into(),
            system_prompt: "You research a codebase and write a step-by-step implementation \
                            plan. You do not change files."
                .into(),
            tools: None,
            disallowed_tools: read_only,
            model: None,
            max_turns: None,
            permission_mode: None,
            source: AgentSource::Builtin,
        },
    ]
}

/// Keys Claude Code's agent files may have that robota reads but does not act on.
const IGNORED_KEYS: &[&str] = &[
    "color",
    "skills",
    "hooks",
    "mcpServers",
    "memory",
    "effort",
    "isolation",
    "background",
];

/// Loads the built-in agents and every definition file for a project, highest priority first:
/// `<cwd>/.robota/agents`, `<cwd>/.agents/agents`, `<cwd>/.claude/agents`, then (with a home
/// directory) `<home>/.robota/agents`, `<home>/.claude/agents`. Files override built-ins of the
/// same name; among files the higher-priority directory wins (the other is a warning). A file or
/// directory that cannot be used is a warning on the catalog; every other definition loads.
pub fn load_agent_definitions(cwd: &Path, home: Option<&Path>) -> AgentCatalog {
    load_agent_definitions_with_plugins(cwd, home, &[])
}

/// [`load_agent_definitions`] plus the `agents/` folders of enabled plugins, given as
/// `(plugin name, folder)`: their agents are named `plugin:agent` and come last.
pub fn load_agent_definitions_with_plugins(
    cwd: &Path,
    home: Option<&Path>,
    plugins: &[(String, PathBuf)],
) -> AgentCatalog {
    // Each folder with the plugin whose namespace its agents get (`None`: the project's when
    // the flag is set, else the user's).
    let mut dirs: Vec<(PathBuf, bool, Option<&str>)> =
        [".robota/agents", ".agents/agents", ".claude/agents"]
            .iter()
            .map(|d| (cwd.join(d), true, None))
            .collect();
    if let Some(home) = home {
        dirs.extend(
            [".robota/agents", ".claude/agents"]
                .iter()
                .map(|d| (home.join(d), false, None)),
        );
    }
    dirs.extend(
        plugins
            .iter()
            .map(|(plugin, dir)| (dir.clone(), false, Some(plugin.as_str()))),
    );
    let mut catalog = AgentCatalog::builtin();
    let mut from_files: BTreeMap<String, PathBuf> = BTreeMap::new();
    for (dir, project, plugin) in dirs {
        let files = match definition_files(&dir) {
            Ok(files) => files,
            Err(error) => {
                catalog.warnings.push(AgentWarning::skipped(&error));
                continue;
            }
        };
        for path in files {
            match load_file(&path, project) {
                Ok(None) => {}
                Ok(Some((mut definition, warnings))) => {
                    catalog.warnings.extend(warnings);
                    if let Some(plugin) = plugin {
                        definition.name = format!("{plugin}:{}", definition.name);
                        definition.source = AgentSource::Plugin {
                            plugin: plugin.to_string(),
                            path: path.clone(),
                        };
                    }
                    if let Some(first) = from_files.get(&definition.name) {
                        catalog.warnings.push(AgentWarning::at(
                            &path,
                            None,
                            format!(
                                "agent `{}` is also defined in {}, which takes precedence",
                                definition.name,
                                first.display()
                            ),
                        ));
                        continue;
                    }
                    from_files.insert(definition.name.clone(), path);
                    catalog.insert(definition);
                }
                Err(error) => catalog.warnings.push(AgentWarning::skipped(&error)),
            }
        }
    }
    catalog
}

/// Reads and parses one file; `Ok(None)` for a dangling link or a file removed since the
/// directory was listed.
fn load_file(
    path: &Path,
    project: bool,
) -> Result<Option<(AgentDefinition, Vec<AgentWarning>)>, AgentDefinitionError> {
    let text = match read_regular_text(path, &AGENT_DEFINITION_FILE) {
        Ok(text) => text,
        Err(error) if error.is_not_found() => return Ok(None),
        Err(FileError::Io { path, source, .. }) => {
            return Err(AgentDefinitionError::Read { path, source })
        }
        Err(error) => return Err(AgentDefinitionError::File(error)),
    };
    let source = if project {
        AgentSource::Project {
            path: path.to_path_buf(),
        }
    } else {
        AgentSource::User {
            path: path.to_path_buf(),
        }
    };
    parse_agent_definition(path, &text, source).map(Some)
}

/// The `.md` files of `dir`, sorted; none when it does not exist.
fn definition_files(dir: &Path) -> Result<Vec<PathBuf>, AgentDefinitionError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) if error.kind() == io::ErrorKind::NotADirectory => return Ok(Vec::new()),
        Err(source) => {
            return Err(AgentDefinitionError::Read {
                path: dir.to_path_buf(),
                source,
            })
        }
    };
    let mut files = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|source| AgentDefinitionError::Read {
            path: dir.to_path_buf(),
            source,
        })?;
        let path = entry.path();
        // Everything named `*.md` but a directory is a definition: a FIFO or a link to a device
        // is refused by name when read, not skipped in silence.
        if path.extension().is_some_and(|e| e == "md") && !path.is_dir() {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

/// Keys an agent file may have that robota acts on.
const KNOWN_KEYS: &[&str] = &[
    "name",
    "description",
    "tools",
    "disallowedTools",
    "disallowed-tools",
    "model",
    "maxTurns",
    "max_turns",
    "max-turns",
    "permissionMode",
    "permission-mode",
];

/// Parses one definition file's text; returns the definition and warnings about keys it ignored.
pub fn parse_agent_definition(
    path: &Path,
    text: &str,
    source: AgentSource,
) -> Result<(AgentDefinition, Vec<AgentWarning>), AgentDefinitionError> {
    let invalid = |line: Option<usize>, problem: String| AgentDefinitionError::Invalid {
        path: path.to_path_buf(),
        line,
        problem,
    };
    let parsed = frontmatter::parse(text).map_err(|e| invalid(e.line, e.problem))?;
    if !parsed.present {
        return Err(invalid(
            Some(1),
            "missing frontmatter: the file must start with a `---` line, then `name:` and \
             `description:` lines, then `---`, then the system prompt"
                .into(),
        ));
    }
    let text_field = |keys: &[&str]| -> Result<Option<(String, usize)>, AgentDefinitionError> {
        match parsed.first_of(keys) {
            None => Ok(None),
            Some(field) => field
                .text()
                .map(|t| Some((t.trim().to_string(), field.line)))
                .map_err(|p| invalid(Some(field.line), p)),
        }
    };
    let (name, name_line) = text_field(&["name"])?
        .filter(|(n, _)| !n.is_empty())
        .ok_or_else(|| {
            invalid(
                None,
                "the required key `name` is missing or empty (e.g. `name: code-reviewer`)".into(),
            )
        })?;
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':'))
    {
        return Err(invalid(
            Some(name_line),
            format!("agent name `{name}` may only contain letters, digits, `-`, `_`, `.` and `:`"),
        ));
    }
    // Claude Code turns the two characters `\n` of a one-line description into line breaks.
    let description = text_field(&["description"])?
        .map(|(d, _)| d.replace("\\n", "\n").trim().to_string())
        .filter(|d| !d.is_empty())
        .ok_or_else(|| {
            invalid(
                None,
                "the required key `description` is missing or empty; say what the agent is for"
                    .into(),
            )
        })?;
    let model = text_field(&["model"])?
        .map(|(m, _)| m)
        .filter(|m| !m.is_empty() && m != "inherit");
    let max_turns = match text_field(&["maxTurns", "max_turns", "max-turns"])? {
        None => None,
        Some((t, _)) if t.is_empty() => None,
        Some((t, line)) => match t.parse::<u32>() {
            Ok(n) if n > 0 => Some(n),
            _ => {
                return Err(invalid(
                    Some(line),
                    format!("`maxTurns` must be a positive whole number, found `{t}`"),
                ))
            }
        },
    };
    let permission_mode = match text_field(&["permissionMode", "permission-mode"])? {
        None => None,
        Some((m, _)) if m.is_empty() => None,
        Some((m, line)) => Some(
            m.parse::<PermissionMode>()
                .map_err(|e| invalid(Some(line), format!("`permissionMode`: {e}")))?,
        ),
    };
    let list = |keys: &[&str]| -> Result<Option<Vec<String>>, AgentDefinitionError> {
        match parsed.first_of(keys) {
            None => Ok(None),
            Some(field) => field
                .list()
                .map(Some)
                .map_err(|p| invalid(Some(field.line), p)),
        }
    };
    // `tools: "*"` (or an empty value) means every tool, like leaving the key out.
    let tools = list(&["tools"])?.filter(|t| !t.is_empty() && !t.iter().any(|n| n == "*"));
    let disallowed_tools = list(&["disallowedTools", "disallowed-tools"])?.unwrap_or_default();
    let body = parsed.body.trim().to_string();
    if body.is_empty() {
        return Err(invalid(
            Some(parsed.body_line),
            "the system prompt is empty: write the agent's instructions after the closing `---`"
                .into(),
        ));
    }
    let mut warnings = Vec::new();
    for field in &parsed.fields {
        if KNOWN_KEYS.contains(&field.key.as_str()) {
            continue;
        }
        let what = if IGNORED_KEYS.contains(&field.key.as_str()) {
            "is not used by robota"
        } else {
            "is not a known agent key"
        };
        warnings.push(AgentWarning::at(
            path,
            Some(field.line),
            format!("`{}` {what}; ignored", field.key),
        ));
    }
    Ok((
        AgentDefinition {
            name,
            description,
            system_prompt: body,
            tools,
            disallowed_tools,
            model,
            max_turns,
            permission_mode,
            source,
        },
        warnings,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<AgentDefinition, AgentDefinitionError> {
        parse_agent_definition(Path::new("a.md"), text, AgentSource::Builtin).map(|(d, _)| d)
    }

    #[test]
    fn lists_blocks_and_quotes_parse() {
        let d = parse(
            "---\nname: \"rev\"\ndescription: >\n  Reviews\n  diffs\ntools:\n  - Read\n  - Grep\n\
             disallowedTools: [Write, 'Edit']\nmaxTurns: 3\nmodel: inherit\n\
             permissionMode: acceptEdits\n---\nBe careful.\n",
        )
        .map_err(|e| e.to_string());
        let Ok(d) = d else {
            panic!("{d:?}");
        };
        assert_eq!(d.name, "rev");
        assert_eq!(d.description, "Reviews diffs");
        assert_eq!(d.tools, Some(vec!["Read".into(), "Grep".into()]));
        assert_eq!(d.disallowed_tools, ["Write", "Edit"]);
        assert_eq!(d.max_turns, Some(3));
        assert_eq!(d.model, None);
        assert_eq!(d.permission_mode, Some(PermissionMode::AcceptEdits));
        assert_eq!(d.system_prompt, "Be careful.");
    }

    #[test]
    fn problems_name_the_line() {
        let cases = [
            ("name: x\n", "missing frontmatter"),
            ("---\nname: x\ndescription: y\n", "never closed"),
            (
                "---\nname x\n---\nbody",
                ":2: invalid agent definition: the frontmatter must be `key: value` lines",
            ),
            (
                "---\nname: x\ndescription: y\n  tools: [Read]\n---\nbody",
                "a.md:4: invalid agent definition: invalid YAML",
            ),
            ("---\ndescription: y\n---\nbody", "`name` is missing"),
            ("---\nname: x\n---\nbody", "`description` is missing"),
            ("---\nname: x\ndescription: y\nmaxTurns: -1\n---\nb", ":4:"),
            (
                "---\nname: x\ndescription: y\n---\n\n",
                "system prompt is empty",
            ),
            ("---\nname: a b\ndescription: y\n---\nb", "may only contain"),
            (
                "---\nname: x\ndescription: y\npermissionMode: yolo\n---\nb",
                "a.md:4: invalid agent definition: `permissionMode`: unknown permission mode `yolo`",
            ),
        ];
        for (text, expected) in cases {
            let message = parse(text)
                .map(|d| d.name)
                .unwrap_or_else(|e| e.to_string());
            assert!(message.contains(expected), "{text:?}: {message}");
        }
    }
}
