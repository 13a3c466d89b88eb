//! Agent definitions: the built-in agents and the Claude Code compatible `.md` files
//! (`.robota/agents/`, `.agents/agents/`, `.claude/agents/` in the project, then `.robota/agents/`
//! and `.claude/agents/` in the home directory), parsed from their frontmatter.
//!
//! A definition file is YAML-style frontmatter between `---` lines, then the system prompt:
//!
//! ```text
//! ---
//! name: reviewer
//! description: Reviews a diff for bugs
//! tools: Read, Grep, Glob
//! model: inherit
//! ---
//! You review code. Report concrete problems with file and line.
//! ```
//!
//! Keys: `name` and `description` (required), `tools` (allowlist: a comma list or a YAML list),
//! `disallowedTools` (denylist), `model`, `maxTurns`. Keys Claude Code knows that robota does not
//! use (`color`, `permissionMode`, …) and unknown keys are kept as warnings on the
//! [`AgentCatalog`]. Anything malformed — no frontmatter, no closing `---`, a line that is not
//! `key: value`, a missing required key, a bad value, an empty body — is an
//! [`AgentDefinitionError`] naming the file, the line and the problem: a broken definition is never
//! skipped silently. So is a `*.md` entry that is not a regular file (a FIFO, a device or a link to
//! one) or is over 1 MiB ([`crate::files::AGENT_DEFINITION_FILE`]); a dangling link is skipped.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::files::{read_regular_text, FileError, AGENT_DEFINITION_FILE};

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

/// The agents available to a session: the built-ins overridden by files.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AgentCatalog {
    definitions: BTreeMap<String, AgentDefinition>,
    /// Non-fatal problems: unused or unknown keys, definitions shadowed by higher-priority ones.
    pub warnings: Vec<String>,
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
            "# Subagents\n\nDelegate a self-contained task to a subagent with the \
             `robota_command_agent` tool (args: `[--isolation worktree] [AGENT_TYPE] PROMPT`); \
             its final answer comes back as the tool result. Available agent types:",
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
            source: AgentSource::Builtin,
        },
    ]
}

/// Keys Claude Code's agent files may have that robota reads but does not act on.
const IGNORED_KEYS: &[&str] = &[
    "color",
    "permissionMode",
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
/// same name; among files the higher-priority directory wins (the other is a warning).
pub fn load_agent_definitions(
    cwd: &Path,
    home: Option<&Path>,
) -> Result<AgentCatalog, AgentDefinitionError> {
    let mut dirs: Vec<(PathBuf, bool)> = [".robota/agents", ".agents/agents", ".claude/agents"]
        .iter()
        .map(|d| (cwd.join(d), true))
        .collect();
    if let Some(home) = home {
        dirs.extend(
            [".robota/agents", ".claude/agents"]
                .iter()
                .map(|d| (home.join(d), false)),
        );
    }
    let mut catalog = AgentCatalog::builtin();
    let mut from_files: BTreeMap<String, PathBuf> = BTreeMap::new();
    for (dir, project) in dirs {
        for path in definition_files(&dir)? {
            let text = match read_regular_text(&path, &AGENT_DEFINITION_FILE) {
                Ok(text) => text,
                // A dangling link, or a file removed since the directory was listed.
                Err(error) if error.is_not_found() => continue,
                Err(FileError::Io { path, source, .. }) => {
                    return Err(AgentDefinitionError::Read { path, source })
                }
                Err(error) => return Err(AgentDefinitionError::File(error)),
            };
            let source = if project {
                AgentSource::Project { path: path.clone() }
            } else {
                AgentSource::User { path: path.clone() }
            };
            let (definition, warnings) = parse_agent_definition(&path, &text, source)?;
            catalog.warnings.extend(warnings);
            if let Some(first) = from_files.get(&definition.name) {
                catalog.warnings.push(format!(
                    "{}: agent `{}` is also defined in {}, which takes precedence",
                    path.display(),
                    definition.name,
                    first.display()
                ));
                continue;
            }
            from_files.insert(definition.name.clone(), path);
            catalog.insert(definition);
        }
    }
    Ok(catalog)
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

/// A frontmatter value: one string, or a list.
#[derive(Debug, Clone, PartialEq)]
enum Value {
    Text(String),
    List(Vec<String>),
}

/// Parses one definition file's text; returns the definition and warnings about keys it ignored.
pub fn parse_agent_definition(
    path: &Path,
    text: &str,
    source: AgentSource,
) -> Result<(AgentDefinition, Vec<String>), AgentDefinitionError> {
    let invalid = |line: Option<usize>, problem: String| AgentDefinitionError::Invalid {
        path: path.to_path_buf(),
        line,
        problem,
    };
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let lines: Vec<&str> = text.lines().collect();
    if lines.first().map(|l| l.trim_end()) != Some("---") {
        return Err(invalid(
            Some(1),
            "missing frontmatter: the file must start with a `---` line, then `name:` and \
             `description:` lines, then `---`, then the system prompt"
                .into(),
        ));
    }
    let Some(close) = lines
        .iter()
        .skip(1)
        .position(|l| l.trim_end() == "---")
        .map(|i| i + 1)
    else {
        return Err(invalid(
            None,
            "the frontmatter is not closed: add a `---` line after the last key".into(),
        ));
    };
    let fields =
        parse_frontmatter(&lines[1..close], 2).map_err(|(line, p)| invalid(Some(line), p))?;
    let body = lines[close + 1..].join("\n").trim().to_string();

    let mut warnings = Vec::new();
    let text_field = |key: &str| -> Result<Option<String>, AgentDefinitionError> {
        match fields.get(key) {
            None => Ok(None),
            Some((_, Value::Text(t))) => Ok(Some(t.clone())),
            Some((line, Value::List(_))) => Err(invalid(
                Some(*line),
                format!("`{key}` must be a single value, not a list"),
            )),
        }
    };
    let name = text_field("name")?
        .filter(|n| !n.is_empty())
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
        let line = fields.get("name").map(|(l, _)| *l);
        return Err(invalid(
            line,
            format!("agent name `{name}` may only contain letters, digits, `-`, `_`, `.` and `:`"),
        ));
    }
    let description = text_field("description")?
        .filter(|d| !d.is_empty())
        .ok_or_else(|| {
            invalid(
                None,
                "the required key `description` is missing or empty; say what the agent is for"
                    .into(),
            )
        })?;
    let model = text_field("model")?.filter(|m| !m.is_empty() && m != "inherit");
    let max_turns = match fields
        .get("maxTurns")
        .or_else(|| fields.get("max_turns"))
        .or_else(|| fields.get("max-turns"))
    {
        None => None,
        Some((line, Value::Text(t))) => match t.parse::<u32>() {
            Ok(n) if n > 0 => Some(n),
            _ => {
                return Err(invalid(
                    Some(*line),
                    format!("`maxTurns` must be a positive whole number, found `{t}`"),
                ))
            }
        },
        Some((line, Value::List(_))) => {
            return Err(invalid(
                Some(*line),
                "`maxTurns` must be a number, not a list".into(),
            ))
        }
    };
    let list = |key: &str| -> Option<Vec<String>> {
        fields.get(key).map(|(_, value)| match value {
            Value::Text(t) => t
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect(),
            Value::List(items) => items.clone(),
        })
    };
    let tools = list("tools");
    let disallowed_tools = list("disallowedTools")
        .or_else(|| list("disallowed-tools"))
        .unwrap_or_default();
    if body.is_empty() {
        return Err(invalid(
            Some(close + 2),
            "the system prompt is empty: write the agent's instructions after the closing `---`"
                .into(),
        ));
    }
    const KNOWN: &[&str] = &[
        "name",
        "description",
        "tools",
        "disallowedTools",
        "disallowed-tools",
        "model",
        "maxTurns",
        "max_turns",
        "max-turns",
    ];
    for (key, (line, _)) in &fields {
        if KNOWN.contains(&key.as_str()) {
            continue;
        }
        let what = if IGNORED_KEYS.contains(&key.as_str()) {
            "is not used by robota"
        } else {
            "is not a known agent key"
        };
        warnings.push(format!(
            "{}:{line}: `{key}` {what}; ignored",
            path.display()
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
            source,
        },
        warnings,
    ))
}

/// Parses `key: value` lines (with `- item` lists and `|`/`>` blocks under a key). `first_line`
/// is the 1-based number of `lines[0]` in the file. Errors are `(line, problem)`.
fn parse_frontmatter(
    lines: &[&str],
    first_line: usize,
) -> Result<BTreeMap<String, (usize, Value)>, (usize, String)> {
    let mut fields: BTreeMap<String, (usize, Value)> = BTreeMap::new();
    let mut i = 0;
    while i < lines.len() {
        let number = first_line + i;
        let line = lines[i];
        i += 1;
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        if line.starts_with(char::is_whitespace) || trimmed.starts_with("- ") {
            return Err((
                number,
                format!("unexpected indented line `{trimmed}`: expected `key: value`"),
            ));
        }
        let Some((key, value)) = line.split_once(':') else {
            return Err((number, format!("expected `key: value`, found `{trimmed}`")));
        };
        let key = key.trim();
        if key.is_empty()
            || !key
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            return Err((number, format!("`{key}` is not a valid key name")));
        }
        if fields.contains_key(key) {
            return Err((number, format!("the key `{key}` appears twice")));
        }
        let value = value.trim();
        // Indented lines that follow belong to this key.
        let mut nested = Vec::new();
        while i < lines.len()
            && (lines[i].starts_with(char::is_whitespace) || lines[i].trim().is_empty())
        {
            if !lines[i].trim().is_empty() {
                nested.push((first_line + i, lines[i].trim()));
            }
            i += 1;
        }
        let parsed = match value {
            "" if nested.is_empty() => Value::Text(String::new()),
            "" => {
                let mut items = Vec::new();
                for (line, item) in &nested {
                    let Some(item) = item.strip_prefix('-') else {
                        return Err((
                            *line,
                            format!("expected a `- item` line under `{key}`, found `{item}`"),
                        ));
                    };
                    items.push(unquote(item.trim()).to_string());
                }
                Value::List(items)
            }
            "|" | "|-" | "|+" => Value::Text(
                nested
                    .iter()
                    .map(|(_, l)| *l)
                    .collect::<Vec<_>>()
                    .join("\n"),
            ),
            ">" | ">-" | ">+" => {
                Value::Text(nested.iter().map(|(_, l)| *l).collect::<Vec<_>>().join(" "))
            }
            _ if !nested.is_empty() => {
                // A plain value continued on indented lines (YAML folds them with spaces).
                let mut text = unquote(value).to_string();
                for (_, l) in &nested {
                    text.push(' ');
                    text.push_str(l);
                }
                Value::Text(text)
            }
            _ if value.starts_with('[') => {
                let Some(inner) = value.strip_prefix('[').and_then(|v| v.strip_suffix(']')) else {
                    return Err((number, format!("the list for `{key}` is missing its `]`")));
                };
                Value::List(
                    inner
                        .split(',')
                        .map(|s| unquote(s.trim()).to_string())
                        .filter(|s| !s.is_empty())
                        .collect(),
                )
            }
            _ => Value::Text(unquote(value).to_string()),
        };
        fields.insert(key.to_string(), (number, parsed));
    }
    Ok(fields)
}

/// `value` without one pair of matching surrounding quotes.
fn unquote(value: &str) -> &str {
    for quote in ['"', '\''] {
        if value.len() >= 2 && value.starts_with(quote) && value.ends_with(quote) {
            return &value[1..value.len() - 1];
        }
    }
    value
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
             disallowedTools: [Write, 'Edit']\nmaxTurns: 3\nmodel: inherit\n---\nBe careful.\n",
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
        assert_eq!(d.system_prompt, "Be careful.");
    }

    #[test]
    fn problems_name_the_line() {
        let cases = [
            ("name: x\n", "missing frontmatter"),
            ("---\nname: x\ndescription: y\n", "not closed"),
            (
                "---\nname x\n---\nbody",
                ":2: invalid agent definition: expected `key: value`",
            ),
            ("---\ndescription: y\n---\nbody", "`name` is missing"),
            ("---\nname: x\n---\nbody", "`description` is missing"),
            ("---\nname: x\ndescription: y\nmaxTurns: -1\n---\nb", ":4:"),
            (
                "---\nname: x\ndescription: y\n---\n\n",
                "system prompt is empty",
            ),
            ("---\nname: a b\ndescription: y\n---\nb", "may only contain"),
        ];
        for (text, expected) in cases {
            let message = parse(text)
                .map(|d| d.name)
                .unwrap_or_else(|e| e.to_string());
            assert!(message.contains(expected), "{text:?}: {message}");
        }
    }
}
