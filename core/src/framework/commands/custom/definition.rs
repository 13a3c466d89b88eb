//! Custom slash command definitions and their discovery: Claude Code compatible Markdown files
//! under `commands/` folders (the project's, the user's, a host's, a plugin's) and commands a host
//! gives as data.
//!
//! A custom command is one Markdown file; its name is the file name without `.md`, and the text
//! (after optional YAML frontmatter) is the prompt it sends:
//!
//! ```text
//! .claude/commands/
//!   fix-issue.md        ---
//!                       description: Fix a GitHub issue
//!                       argument-hint: "[issue-number] [priority]"
//!                       allowed-tools: Bash(gh issue view *)
//!                       ---
//!                       Issue: !`gh issue view $1`
//!                       Fix issue #$1 with priority $2 following our coding standards.
//!   frontend/
//!     component.md      → `/component`, listed as "(project:frontend)"
//! ```
//!
//! **Names and namespaces** (as Claude Code): subfolders organise commands and are shown after the
//! description (`(project:frontend)`), but do not change the name: `frontend/component.md` is
//! `/component`. Commands of a plugin are qualified with the plugin's name: `commands/deploy.md`
//! of plugin `ops` is `/ops:deploy`.
//!
//! **Precedence** (highest first; a later command of a taken name is skipped with a warning
//! naming both files): the roots in the order given to [`load_custom_commands`] — a session passes
//! the host's registrations (in their order), then `<project>/.claude/commands`, then
//! `~/.claude/commands` ([`default_command_roots`]), then plugin roots (whose qualified names
//! never collide with the others).
//!
//! **Keys**: `description` (default: the first line of the prompt), `argument-hint`,
//! `allowed-tools`, `model`, `disable-model-invocation`. Every other key is kept in
//! [`CustomCommandDefinition::extra`] unchanged.
//!
//! **One bad file never stops the session.** Malformed frontmatter, a bad value, a file over
//! [`COMMAND_FILE`]'s cap, a symbolic-link loop, an unreadable file or folder, a file name that
//! cannot be typed as a command is a [`CommandWarning`] naming the file and the problem; the other
//! commands load. The prompt is read again from disk when the command runs
//! ([`CustomCommandDefinition::load_body`]), so an edit takes effect without a restart.

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::files::{read_regular_text, FileKind};
use crate::framework::commands::CommandSource;
use crate::framework::frontmatter::{self, Frontmatter};
use crate::framework::skills::definition::{
    body_of, describe_io, file_problem, name_problem, read_body,
};

/// A problem with a custom command that did not stop the session (same shape as a skill's: the
/// file, the line when known, and what robota did about it).
pub type CommandWarning = crate::framework::skills::SkillWarning;

/// Custom command files: at most 256 KiB (real ones are a few hundred bytes to a few KiB).
pub const COMMAND_FILE: FileKind = FileKind::new("command file", 256 * 1024);

/// Deepest folder nesting searched below a commands root.
const MAX_DEPTH: usize = 8;

/// Most command files read from one root; past it the rest is skipped with a warning.
const MAX_FILES_PER_ROOT: usize = 2000;

/// One folder of command files and where its commands come from. [`CommandSource::Plugin`] roots
/// give plugin-qualified names (`plugin:command`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommandRoot {
    /// The folder searched (`**/*.md`).
    pub dir: PathBuf,
    /// Where its commands come from.
    pub source: CommandSource,
    /// True when the folder was named on purpose (by a host or a plugin manifest), so a missing
    /// folder is a warning; the standard project and user folders are optional.
    #[serde(default)]
    pub required: bool,
}

impl CommandRoot {
    /// A root whose absence is not reported (the standard `.claude/commands` folders).
    pub fn optional(dir: impl Into<PathBuf>, source: CommandSource) -> Self {
        CommandRoot {
            dir: dir.into(),
            source,
            required: false,
        }
    }

    /// A root that must exist: a missing folder is a warning.
    pub fn required(dir: impl Into<PathBuf>, source: CommandSource) -> Self {
        CommandRoot {
            dir: dir.into(),
            source,
            required: true,
        }
    }
}

/// The standard roots of a session, in precedence order: `<cwd>/.claude/commands` (project), then
/// `<home>/.claude/commands` (user).
pub fn default_command_roots(cwd: &Path, home: Option<&Path>) -> Vec<CommandRoot> {
    let mut roots = vec![CommandRoot::optional(
        cwd.join(".claude/commands"),
        CommandSource::Project,
    )];
    if let Some(home) = home {
        roots.push(CommandRoot::optional(
            home.join(".claude/commands"),
            CommandSource::User,
        ));
    }
    roots
}

/// A custom command a host adds to a session: a folder of command files, or a command given as
/// data. In JSON: `{"dir": "/path"}` or `{"name": "greet", "content": "---\ndescription: …\n---\n
/// Say hello to $1"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged, deny_unknown_fields)]
pub enum CommandRegistration {
    /// A folder searched like `.claude/commands` (`**/*.md`, subfolders as namespaces).
    Dir {
        /// The folder.
        dir: PathBuf,
    },
    /// A command given as data: `content` is what a command file would hold (frontmatter
    /// optional).
    Data {
        /// The command's name (typed as `/name`).
        name: String,
        /// Frontmatter and prompt.
        content: String,
    },
}

/// One custom command: its metadata and where it lives.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CustomCommandDefinition {
    /// The name to invoke it by: the file name without `.md`, qualified as `plugin:name` for a
    /// plugin's command.
    pub name: String,
    /// The subfolders it sits in below its root, joined with `:` (`frontend`, `ci:nightly`);
    /// `None` at the root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// What it does (the frontmatter's, else the first line of the prompt).
    pub description: String,
    /// Where it came from.
    pub source: CommandSource,
    /// Its file; `None` for a command given as data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<PathBuf>,
    /// Tools pre-approved while its prompt runs and for its `` !`command` `` lines (permission
    /// rules, e.g. `Bash(git status:*)`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_tools: Vec<String>,
    /// The model its prompt runs on (the session's model is back afterwards).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Argument grammar shown after `/name`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub argument_hint: Option<String>,
    /// True: only the user may run it; the model is not shown it.
    #[serde(default)]
    pub disable_model_invocation: bool,
    /// Every frontmatter key robota does not act on, kept as written.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub extra: BTreeMap<String, Value>,
    /// The prompt of a command given as data (file commands are read when run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
}

impl CustomCommandDefinition {
    /// True when the model may run it.
    pub fn model_invocable(&self) -> bool {
        !self.disable_model_invocation
    }

    /// Where it came from, as Claude Code shows it after the description: `project`,
    /// `project:frontend`, `user`, `host`, `plugin:ops`.
    pub fn origin_label(&self) -> String {
        let base = match &self.source {
            CommandSource::Plugin { plugin } => format!("plugin:{plugin}"),
            other => other.kind().to_string(),
        };
        match &self.namespace {
            Some(namespace) => format!("{base}:{namespace}"),
            None => base,
        }
    }

    /// The description followed by its origin: `Review a PR (project:git)`.
    pub fn listed_description(&self) -> String {
        format!("{} ({})", self.description, self.origin_label())
    }

    /// The prompt: the file's text after its frontmatter, read now (so an edit since discovery
    /// counts), or the registered content's.
    pub fn load_body(&self) -> Result<String, CommandWarning> {
        if let Some(content) = &self.content {
            return Ok(content.clone());
        }
        match &self.file {
            Some(file) => read_body(file, &COMMAND_FILE),
            None => Ok(String::new()),
        }
    }
}

/// The custom commands of a session, by invocation name, with the problems found loading them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CustomCommandCatalog {
    commands: BTreeMap<String, CustomCommandDefinition>,
    /// Non-fatal problems (see [`CommandWarning`]).
    pub warnings: Vec<CommandWarning>,
}

impl CustomCommandCatalog {
    /// The command called `name` (a leading `/` is ignored), if any.
    pub fn get(&self, name: &str) -> Option<&CustomCommandDefinition> {
        self.commands.get(name.trim().trim_start_matches('/'))
    }

    /// Every command, by name.
    pub fn commands(&self) -> impl Iterator<Item = &CustomCommandDefinition> + '_ {
        self.commands.values()
    }

    /// True when there is no command.
    pub fn is_empty(&self) -> bool {
        self.commands.is_empty()
    }

    /// Removes the command called `name` (e.g. one a built-in command's name shadows), returning
    /// it.
    pub fn remove(&mut self, name: &str) -> Option<CustomCommandDefinition> {
        self.commands.remove(name)
    }

    /// Adds a command given as data, from `source`, unless its name is taken (a warning then
    /// names both).
    pub fn add_data(&mut self, name: &str, content: &str, source: CommandSource) {
        match parse_custom_command(None, name, None, content, source) {
            Ok((mut command, warnings)) => {
                self.warnings.extend(warnings);
                command.content = Some(body_of(content));
                self.offer(command);
            }
            Err(warning) => self.warnings.push(warning),
        }
    }

    /// Adds the commands under `root` (`**/*.md`), skipping taken names with a warning.
    pub fn add_root(&mut self, root: &CommandRoot) {
        let mut walk = Walk {
            root,
            files: 0,
            visited: BTreeSet::new(),
        };
        match std::fs::metadata(&root.dir) {
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => {
                self.warnings.push(CommandWarning::at(
                    &root.dir,
                    None,
                    "commands folder skipped: it is not a folder",
                ));
                return;
            }
            Err(error) if !root.required && error.kind() == io::ErrorKind::NotFound => return,
            Err(error) => {
                self.warnings.push(CommandWarning::at(
                    &root.dir,
                    None,
                    format!("commands folder cannot be read: {}", describe_io(&error)),
                ));
                return;
            }
        }
        walk.folder(self, &root.dir, &[]);
    }

    /// Adds `command` unless its name is taken, in which case a warning names both places.
    fn offer(&mut self, command: CustomCommandDefinition) {
        if let Some(first) = self.commands.get(&command.name) {
            let winner = first
                .file
                .as_ref()
                .map(|f| f.display().to_string())
                .unwrap_or_else(|| format!("the {} command given as data", first.source));
            self.warnings.push(CommandWarning {
                file: command.file.clone(),
                line: None,
                message: format!(
                    "command `/{}` is also defined by {winner}, which takes precedence; this one \
                     is not loaded",
                    command.name
                ),
            });
            return;
        }
        self.commands.insert(command.name.clone(), command);
    }
}

/// Loads the custom commands under `roots`, in precedence order (the first root holding a name
/// wins; see the module docs). Never fails: every problem is a warning on the catalog.
pub fn load_custom_commands(roots: &[CommandRoot]) -> CustomCommandCatalog {
    let mut catalog = CustomCommandCatalog::default();
    for root in roots {
        catalog.add_root(root);
    }
    catalog
}

/// The recursive search of one root.
struct Walk<'a> {
    root: &'a CommandRoot,
    files: usize,
    /// Canonical folders already searched, so a link back up the tree is searched once.
    visited: BTreeSet<PathBuf>,
}

impl Walk<'_> {
    fn folder(&mut self, catalog: &mut CustomCommandCatalog, dir: &Path, namespace: &[String]) {
        if let Ok(canonical) = dir.canonicalize() {
            if !self.visited.insert(canonical) {
                catalog.warnings.push(CommandWarning::at(
                    dir,
                    None,
                    "commands folder skipped: a symbolic link leads back to a folder already \
                     searched (a link loop)",
                ));
                return;
            }
        }
        let entries = match std::fs::read_dir(dir) {
            Ok(entries) => entries,
            Err(error) => {
                catalog.warnings.push(CommandWarning::at(
                    dir,
                    None,
                    format!("commands folder cannot be read: {}", describe_io(&error)),
                ));
                return;
            }
        };
        let mut paths = Vec::new();
        for entry in entries {
            match entry {
                Ok(entry) => paths.push(entry.path()),
                Err(error) => catalog.warnings.push(CommandWarning::at(
                    dir,
                    None,
                    format!("commands folder cannot be listed completely: {error}"),
                )),
            }
        }
        paths.sort();
        for path in paths {
            let file_name = path
                .file_name()
                .map(|n| n.to_string_lossy().to_string())
                .unwrap_or_default();
            if file_name.starts_with('.') {
                continue;
            }
            // `metadata` follows links, so a link loop or a link to an unreadable place shows up
            // here, by name, instead of being taken for "not a command".
            let meta = match std::fs::metadata(&path) {
                Ok(meta) => meta,
                // A dangling link: nothing there to load.
                Err(error) if error.kind() == io::ErrorKind::NotFound => continue,
                Err(error) => {
                    catalog.warnings.push(CommandWarning::at(
                        &path,
                        None,
                        format!("skipped: {}", describe_io(&error)),
                    ));
                    continue;
                }
            };
            if meta.is_dir() {
                if namespace.len() + 1 >= MAX_DEPTH {
                    catalog.warnings.push(CommandWarning::at(
                        &path,
                        None,
                        format!(
                            "commands folder skipped: deeper than {MAX_DEPTH} levels below {}",
                            self.root.dir.display()
                        ),
                    ));
                    continue;
                }
                let mut inner = namespace.to_vec();
                inner.push(file_name);
                self.folder(catalog, &path, &inner);
            } else if let Some(stem) = file_name.strip_suffix(".md") {
                self.files += 1;
                if self.files == MAX_FILES_PER_ROOT + 1 {
                    catalog.warnings.push(CommandWarning::at(
                        &self.root.dir,
                        None,
                        format!(
                            "more than {MAX_FILES_PER_ROOT} command files; the rest are not loaded"
                        ),
                    ));
                }
                if self.files > MAX_FILES_PER_ROOT {
                    continue;
                }
                self.file(catalog, &path, stem, namespace);
            }
        }
    }

    fn file(
        &self,
        catalog: &mut CustomCommandCatalog,
        file: &Path,
        stem: &str,
        namespace: &[String],
    ) {
        let text = match read_regular_text(file, &COMMAND_FILE) {
            Ok(text) => text,
            Err(error) => {
                catalog.warnings.push(CommandWarning::at(
                    file,
                    None,
                    format!("command skipped: {}", file_problem(&error)),
                ));
                return;
            }
        };
        let namespace = (!namespace.is_empty()).then(|| namespace.join(":"));
        match parse_custom_command(Some(file), stem, namespace, &text, self.root.source.clone()) {
            Ok((mut command, warnings)) => {
                catalog.warnings.extend(warnings);
                command.file = Some(file.to_path_buf());
                catalog.offer(command);
            }
            Err(warning) => catalog.warnings.push(warning),
        }
    }
}

/// Keys robota acts on (both spellings where Claude Code accepts two).
const KNOWN_KEYS: &[&str] = &[
    "description",
    "allowed-tools",
    "allowed_tools",
    "allowedTools",
    "model",
    "argument-hint",
    "argumentHint",
    "disable-model-invocation",
    "disableModelInvocation",
];

/// Parses one command's text. `file` is its file (for warnings), `name` its unqualified name (the
/// file name without `.md`, or the registered name), `namespace` its subfolders. Returns the
/// command and warnings about values it ignored; an unusable command is an `Err` warning.
pub fn parse_custom_command(
    file: Option<&Path>,
    name: &str,
    namespace: Option<String>,
    text: &str,
    source: CommandSource,
) -> Result<(CustomCommandDefinition, Vec<CommandWarning>), CommandWarning> {
    let warn = |line: Option<usize>, message: String| CommandWarning {
        file: file.map(Path::to_path_buf),
        line,
        message: match file {
            Some(_) => message,
            None => format!("command `{name}`: {message}"),
        },
    };
    if let Some(problem) = name_problem(name) {
        return Err(warn(
            None,
            format!("command skipped: the name `{name}` {problem} (rename it)"),
        ));
    }
    let parsed: Frontmatter = frontmatter::parse(text).map_err(|e| {
        warn(
            e.line,
            format!("command skipped: invalid frontmatter: {}", e.problem),
        )
    })?;
    let mut warnings = Vec::new();
    let text_of = |keys: &[&str], warnings: &mut Vec<CommandWarning>| -> Option<String> {
        let field = parsed.first_of(keys)?;
        match field.text() {
            Ok(text) if text.trim().is_empty() => None,
            Ok(text) => Some(text.trim().to_string()),
            Err(problem) => {
                warnings.push(warn(Some(field.line), format!("{problem}; ignored")));
                None
            }
        }
    };
    let body = parsed.body.trim();
    let description = match text_of(&["description"], &mut warnings) {
        Some(description) => description,
        None => match body
            .lines()
            .map(|l| l.trim().trim_start_matches('#').trim())
            .find(|l| !l.is_empty())
        {
            Some(first) => first.chars().take(120).collect(),
            None => {
                return Err(warn(
                    None,
                    "command skipped: it has no prompt (the file holds nothing after its \
                     frontmatter)"
                        .to_string(),
                ))
            }
        },
    };
    if body.is_empty() {
        return Err(warn(
            None,
            "command skipped: it has no prompt (the file holds nothing after its frontmatter)"
                .to_string(),
        ));
    }
    let allowed_tools = match parsed.first_of(&["allowed-tools", "allowed_tools", "allowedTools"]) {
        None => Vec::new(),
        Some(field) => field.list().unwrap_or_else(|problem| {
            warnings.push(warn(Some(field.line), format!("{problem}; ignored")));
            Vec::new()
        }),
    };
    let model = text_of(&["model"], &mut warnings).filter(|m| m != "inherit");
    let argument_hint = text_of(&["argument-hint", "argumentHint"], &mut warnings);
    let disable_model_invocation = match parsed
        .first_of(&["disable-model-invocation", "disableModelInvocation"])
        .map(|field| (field.line, field.flag()))
    {
        None | Some((_, Ok(None))) => false,
        Some((_, Ok(Some(value)))) => value,
        Some((line, Err(problem))) => {
            warnings.push(warn(Some(line), format!("{problem}; using false")));
            false
        }
    };
    let extra = parsed
        .fields
        .iter()
        .filter(|f| !KNOWN_KEYS.contains(&f.key.as_str()))
        .map(|f| (f.key.clone(), f.value.clone()))
        .collect();
    let name = match &source {
        CommandSource::Plugin { plugin } => format!("{plugin}:{name}"),
        _ => name.to_string(),
    };
    Ok((
        CustomCommandDefinition {
            name,
            namespace,
            description,
            source,
            file: None,
            allowed_tools,
            model,
            argument_hint,
            disable_model_invocation,
            extra,
            content: None,
        },
        warnings,
    ))
}
