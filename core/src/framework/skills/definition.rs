//! Skill definitions and their discovery: Claude Code compatible `SKILL.md` folders found in the
//! project and the home directory, plus skills a host registers from a directory or from data.
//!
//! A skill is a folder holding `SKILL.md` (YAML frontmatter, then the instructions) and any files
//! the instructions point at:
//!
//! ```text
//! .claude/skills/release-notes/
//!   SKILL.md          ---
//!                     description: Write release notes from the git log. Use when asked for a
//!                       changelog or release notes.
//!                     allowed-tools: Bash(git log *), Read
//!                     argument-hint: "[since-tag]"
//!                     ---
//!                     Read template.md in ${CLAUDE_SKILL_DIR}, then summarise `git log $0..HEAD`.
//!   template.md
//! ```
//!
//! **Precedence** (highest first; a later skill of a taken name is skipped with a warning naming
//! both files): skills the host registers (in the order given), `<project>/.claude/skills`,
//! `<project>/.agents/skills`, `~/.claude/skills`, `~/.robota/skills`, then the `skills/` of
//! enabled plugins ([`load_skills_with_plugins`]; named `plugin:skill`). The host comes first
//! because it composes the session on purpose; the project comes before the user, as for
//! settings and agents.
//!
//! **Keys**: `name` (default: the folder's name), `description` (what it does and when to use
//! it; when missing, the first line of the instructions stands in and a warning says so),
//! `allowed-tools`, `model`, `context: fork`, `agent`, `argument-hint`,
//! `disable-model-invocation`, `user-invocable`. Every other key is kept in
//! [`SkillDefinition::extra`] unchanged.
//!
//! **One bad skill never stops the session.** Malformed frontmatter, a bad value, a file over
//! [`SKILL_FILE`]'s cap, a symbolic-link loop or an unreadable folder is a [`SkillWarning`]
//! naming the file and the problem; the other skills load.
//!
//! Only names and descriptions are kept after discovery: the instructions are read again from
//! disk when the skill is activated ([`SkillDefinition::load_body`]), so the catalog stays small
//! and an edited skill takes effect without a restart.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::files::{read_regular_text, FileError, FileKind};
use crate::framework::frontmatter::{self, Frontmatter};

/// `SKILL.md` files: at most 1 MiB. Real skills are a few KiB (Claude Code advises under 500
/// lines and moving detail into files beside `SKILL.md`).
pub const SKILL_FILE: FileKind = FileKind::new("skill file", 1024 * 1024);

/// The file that makes a folder a skill.
pub const SKILL_FILE_NAME: &str = "SKILL.md";

/// Longest skill name (Claude Code's limit).
const MAX_NAME_LEN: usize = 64;

/// Where a skill came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SkillSource {
    /// `<project>/.claude/skills` or `<project>/.agents/skills`.
    Project {
        /// The skills folder it was found in.
        root: PathBuf,
    },
    /// `~/.claude/skills` or `~/.robota/skills`.
    User {
        /// The skills folder it was found in.
        root: PathBuf,
    },
    /// The `skills/` folder of an enabled plugin; the skill is named `plugin:skill`.
    Plugin {
        /// The plugin's name (the namespace).
        plugin: String,
        /// The plugin's skills folder.
        root: PathBuf,
    },
    /// Registered by the host, from a directory or from data.
    Host {
        /// The registered directory; `None` for a skill given as data.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        root: Option<PathBuf>,
    },
}

impl SkillSource {
    /// `project`, `user`, `plugin` or `host`.
    pub fn kind(&self) -> &'static str {
        match self {
            SkillSource::Project { .. } => "project",
            SkillSource::User { .. } => "user",
            SkillSource::Plugin { .. } => "plugin",
            SkillSource::Host { .. } => "host",
        }
    }
}

impl std::fmt::Display for SkillSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SkillSource::Project { root } | SkillSource::User { root } => {
                write!(f, "{} ({})", self.kind(), root.display())
            }
            SkillSource::Plugin { plugin, .. } => write!(f, "plugin {plugin}"),
            SkillSource::Host { root: Some(root) } => write!(f, "host ({})", root.display()),
            SkillSource::Host { root: None } => f.write_str("host"),
        }
    }
}

/// How an activated skill runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SkillContext {
    /// Its instructions join the current conversation.
    #[default]
    Inline,
    /// `context: fork`: it runs in a subagent and only the subagent's answer comes back.
    Fork,
}

/// One skill: its metadata, where it lives and how it runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SkillDefinition {
    /// Its name: what `/name` and the `Skill` tool's `skill` use.
    pub name: String,
    /// What it does and when to use it (shown to the model).
    pub description: String,
    /// Where it came from.
    pub source: SkillSource,
    /// Its folder (files the instructions point at are resolved against it); `None` for a skill
    /// given as data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dir: Option<PathBuf>,
    /// Its `SKILL.md`; `None` for a skill given as data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<PathBuf>,
    /// Tools pre-approved while the skill runs (permission rules, e.g. `Bash(git log *)`); for
    /// a forked skill also the subagent's only tools.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_tools: Vec<String>,
    /// The model the skill asks for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Inline or forked.
    #[serde(default)]
    pub context: SkillContext,
    /// The agent type a forked skill runs as (default `general-purpose`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// Argument grammar shown after `/name`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub argument_hint: Option<String>,
    /// True: only the user may activate it; it is left out of what the model is shown.
    #[serde(default)]
    pub disable_model_invocation: bool,
    /// False: only the model may activate it; it is left out of slash menus.
    #[serde(default = "default_true")]
    pub user_invocable: bool,
    /// Every frontmatter key robota does not act on, kept as written.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub extra: BTreeMap<String, Value>,
    /// The instructions of a skill given as data (file skills are read on activation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
}

fn default_true() -> bool {
    true
}

impl SkillDefinition {
    /// True when the model may activate it.
    pub fn model_invocable(&self) -> bool {
        !self.disable_model_invocation
    }

    /// True when the model (`by_model`) or the user may activate it.
    pub fn invocable_by(&self, by_model: bool) -> bool {
        if by_model {
            self.model_invocable()
        } else {
            self.user_invocable
        }
    }

    /// The instructions: the body of `SKILL.md`, read now (so an edit since discovery counts),
    /// or the registered content.
    pub fn load_body(&self) -> Result<String, SkillWarning> {
        if let Some(content) = &self.content {
            return Ok(content.clone());
        }
        match &self.file {
            Some(file) => read_body(file, &SKILL_FILE),
            None => Ok(String::new()),
        }
    }
}

/// The body (after the frontmatter, trimmed) of the definition file `file`, read now.
pub(crate) fn read_body(file: &Path, kind: &FileKind) -> Result<String, SkillWarning> {
    let text = read_regular_text(file, kind)
        .map_err(|error| SkillWarning::at(file, None, file_problem(&error)))?;
    let parsed = frontmatter::parse(&text).map_err(|e| {
        SkillWarning::at(file, e.line, format!("invalid frontmatter: {}", e.problem))
    })?;
    Ok(parsed.body.trim().to_string())
}

/// The body of a definition given as data (the content without its frontmatter).
pub(crate) fn body_of(content: &str) -> String {
    frontmatter::parse(content)
        .map(|parsed| parsed.body.trim().to_string())
        .unwrap_or_else(|_| content.trim().to_string())
}

/// A problem with a skill that did not stop the session: a skill that could not be used (and was
/// skipped), a bad value that was ignored, a name taken by a higher-priority skill.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkillWarning {
    /// The file or folder concerned (`None` for a skill given as data).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<PathBuf>,
    /// 1-based line of the problem, when it is on one line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    /// What is wrong and what robota did about it.
    pub message: String,
}

impl SkillWarning {
    /// A warning about `file`.
    pub fn at(file: &Path, line: Option<usize>, message: impl Into<String>) -> Self {
        SkillWarning {
            file: Some(file.to_path_buf()),
            line,
            message: message.into(),
        }
    }
}

impl std::fmt::Display for SkillWarning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (&self.file, self.line) {
            (Some(file), Some(line)) => write!(f, "{}:{line}: {}", file.display(), self.message),
            (Some(file), None) => write!(f, "{}: {}", file.display(), self.message),
            (None, _) => f.write_str(&self.message),
        }
    }
}

/// A skill the host adds to a session: a directory (a skill folder holding `SKILL.md`, or a
/// folder of skill folders) or a skill given as data. In JSON: `{"dir": "/path"}` or
/// `{"name": "greet", "content": "---\ndescription: …\n---\nInstructions"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged, deny_unknown_fields)]
pub enum SkillRegistration {
    /// A skill folder, or a folder of skill folders.
    Dir {
        /// The folder.
        dir: PathBuf,
    },
    /// A skill given as data: `content` is what a `SKILL.md` would hold (frontmatter optional).
    Data {
        /// The skill's name.
        name: String,
        /// Frontmatter and instructions.
        content: String,
    },
}

/// The skills of a session, by name, with the problems found while loading them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SkillCatalog {
    skills: BTreeMap<String, SkillDefinition>,
    /// Non-fatal problems (see [`SkillWarning`]).
    pub warnings: Vec<SkillWarning>,
}

impl SkillCatalog {
    /// The skill called `name`, if any.
    pub fn get(&self, name: &str) -> Option<&SkillDefinition> {
        self.skills.get(name.trim().trim_start_matches('/'))
    }

    /// Every skill, by name.
    pub fn skills(&self) -> impl Iterator<Item = &SkillDefinition> + '_ {
        self.skills.values()
    }

    /// True when there is no skill.
    pub fn is_empty(&self) -> bool {
        self.skills.is_empty()
    }

    /// Adds `skill` unless its name is taken, in which case a warning names both places. A
    /// plugin's skill is named `plugin:skill`.
    fn offer(&mut self, mut skill: SkillDefinition) {
        if let SkillSource::Plugin { plugin, .. } = &skill.source {
            skill.name = format!("{plugin}:{}", skill.name);
        }
        if let Some(first) = self.skills.get(&skill.name) {
            let winner = first
                .file
                .as_ref()
                .map(|f| f.display().to_string())
                .unwrap_or_else(|| format!("the {} skill", first.source));
            self.warnings.push(SkillWarning {
                file: skill.file.clone(),
                line: None,
                message: format!(
                    "skill `{}` is also defined by {winner}, which takes precedence; this one is \
                     not loaded",
                    skill.name
                ),
            });
            return;
        }
        self.skills.insert(skill.name.clone(), skill);
    }
}

/// Loads the skills of a session in precedence order (see the module docs): `registrations`
/// first, then the project's and the user's skill folders. Never fails: every problem is a
/// warning on the catalog.
pub fn load_skills(
    cwd: &Path,
    home: Option<&Path>,
    registrations: &[SkillRegistration],
) -> SkillCatalog {
    load_skills_with_plugins(cwd, home, registrations, &[])
}

/// [`load_skills`] plus the skills of enabled plugins, given as `(plugin name, skills
/// folder)`: each is named `plugin:skill` and comes after the user's skills.
pub fn load_skills_with_plugins(
    cwd: &Path,
    home: Option<&Path>,
    registrations: &[SkillRegistration],
    plugins: &[(String, PathBuf)],
) -> SkillCatalog {
    let mut catalog = SkillCatalog::default();
    for registration in registrations {
        match registration {
            SkillRegistration::Data { name, content } => {
                match parse_skill(None, name, content, SkillSource::Host { root: None }) {
                    Ok((mut skill, warnings)) => {
                        catalog.warnings.extend(warnings);
                        skill.content = Some(body_of(content));
                        catalog.offer(skill);
                    }
                    Err(warning) => catalog.warnings.push(warning),
                }
            }
            SkillRegistration::Dir { dir } => {
                let source = SkillSource::Host {
                    root: Some(dir.clone()),
                };
                if dir.join(SKILL_FILE_NAME).exists() {
                    load_folder(&mut catalog, dir, source);
                } else {
                    load_root(&mut catalog, dir, &source, true);
                }
            }
        }
    }
    for sub in [".claude/skills", ".agents/skills"] {
        let root = cwd.join(sub);
        load_root(
            &mut catalog,
            &root,
            &SkillSource::Project { root: root.clone() },
            false,
        );
    }
    if let Some(home) = home {
        for sub in [".claude/skills", ".robota/skills"] {
            let root = home.join(sub);
            load_root(
                &mut catalog,
                &root,
                &SkillSource::User { root: root.clone() },
                false,
            );
        }
    }
    for (plugin, root) in plugins {
        let source = SkillSource::Plugin {
            plugin: plugin.clone(),
            root: root.clone(),
        };
        load_root(&mut catalog, root, &source, false);
    }
    catalog
}

/// Loads every `<root>/<name>/SKILL.md`. A missing root is nothing to report unless the host
/// named it (`required`).
fn load_root(catalog: &mut SkillCatalog, root: &Path, source: &SkillSource, required: bool) {
    let entries = match std::fs::read_dir(root) {
        Ok(entries) => entries,
        Err(error)
            if !required
                && matches!(
                    error.kind(),
                    io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
                ) =>
        {
            return
        }
        Err(error) => {
            catalog.warnings.push(SkillWarning::at(
                root,
                None,
                format!("skills folder cannot be read: {error}"),
            ));
            return;
        }
    };
    let mut folders = Vec::new();
    for entry in entries {
        match entry {
            Ok(entry) => folders.push(entry.path()),
            Err(error) => catalog.warnings.push(SkillWarning::at(
                root,
                None,
                format!("skills folder cannot be listed completely: {error}"),
            )),
        }
    }
    folders.sort();
    for folder in folders {
        // `metadata` follows links, so a link loop or a link to an unreadable place shows up
        // here, by name, instead of being taken for "not a skill".
        match std::fs::metadata(&folder) {
            Ok(meta) if meta.is_dir() => load_folder(catalog, &folder, source.clone()),
            Ok(_) => {}
            // A dangling link: nothing there to load.
            Err(error) if error.kind() == io::ErrorKind::NotFound => {}
            Err(error) => catalog.warnings.push(SkillWarning::at(
                &folder,
                None,
                format!("skill folder skipped: {}", describe_io(&error)),
            )),
        }
    }
}

/// Loads the skill in `folder` (a folder without `SKILL.md` is not a skill).
fn load_folder(catalog: &mut SkillCatalog, folder: &Path, source: SkillSource) {
    let file = folder.join(SKILL_FILE_NAME);
    let text = match read_regular_text(&file, &SKILL_FILE) {
        Ok(text) => text,
        Err(error) if error.is_not_found() => return,
        Err(error) => {
            catalog.warnings.push(SkillWarning::at(
                &file,
                None,
                format!("skill skipped: {}", file_problem(&error)),
            ));
            return;
        }
    };
    let folder_name = folder
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    match parse_skill(Some(&file), &folder_name, &text, source) {
        Ok((mut skill, warnings)) => {
            catalog.warnings.extend(warnings);
            skill.dir = Some(folder.to_path_buf());
            skill.file = Some(file);
            catalog.offer(skill);
        }
        Err(warning) => catalog.warnings.push(warning),
    }
}

/// A file error as a short problem, with link loops named as such.
pub(crate) fn file_problem(error: &FileError) -> String {
    match error {
        FileError::Io { source, .. } => format!("cannot be read: {}", describe_io(source)),
        other => other.to_string(),
    }
}

pub(crate) fn describe_io(error: &io::Error) -> String {
    // ELOOP has no stable `ErrorKind` on every toolchain; name it from the OS error.
    #[cfg(unix)]
    if error.raw_os_error() == Some(libc::ELOOP) {
        return "a symbolic link loop (too many levels of symbolic links)".to_string();
    }
    error.to_string()
}

/// Keys robota acts on (both spellings where Claude Code accepts two).
const KNOWN_KEYS: &[&str] = &[
    "name",
    "description",
    "allowed-tools",
    "allowed_tools",
    "allowedTools",
    "model",
    "context",
    "agent",
    "argument-hint",
    "argumentHint",
    "disable-model-invocation",
    "disableModelInvocation",
    "user-invocable",
    "userInvocable",
];

/// Parses one skill's text. `file` is its `SKILL.md` (for warnings), `default_name` the folder's
/// name (or the registered name). Returns the skill and warnings about values it ignored; an
/// unusable skill is an `Err` warning.
pub fn parse_skill(
    file: Option<&Path>,
    default_name: &str,
    text: &str,
    source: SkillSource,
) -> Result<(SkillDefinition, Vec<SkillWarning>), SkillWarning> {
    let warn = |line: Option<usize>, message: String| SkillWarning {
        file: file.map(Path::to_path_buf),
        line,
        message: match file {
            Some(_) => message,
            None => format!("skill `{default_name}`: {message}"),
        },
    };
    let parsed: Frontmatter = frontmatter::parse(text).map_err(|e| {
        warn(
            e.line,
            format!("skill skipped: invalid frontmatter: {}", e.problem),
        )
    })?;
    let mut warnings = Vec::new();
    let text_of = |keys: &[&str], warnings: &mut Vec<SkillWarning>| -> Option<String> {
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
    let flag = |keys: &[&str], default: bool, warnings: &mut Vec<SkillWarning>| -> bool {
        let Some(field) = parsed.first_of(keys) else {
            return default;
        };
        match field.flag() {
            Ok(value) => value.unwrap_or(default),
            Err(problem) => {
                warnings.push(warn(
                    Some(field.line),
                    format!("{problem}; using {default}"),
                ));
                default
            }
        }
    };

    let name = match text_of(&["name"], &mut warnings) {
        Some(name) => name,
        None => default_name.to_string(),
    };
    if let Some(problem) = name_problem(&name) {
        let line = parsed.get("name").map(|f| f.line);
        return Err(warn(
            line,
            format!("skill skipped: the name `{name}` {problem}"),
        ));
    }
    let body = parsed.body.trim();
    let description = match text_of(&["description"], &mut warnings) {
        Some(description) => description,
        None => match body
            .lines()
            .map(|l| l.trim().trim_start_matches('#').trim())
            .find(|l| !l.is_empty())
        {
            Some(first) => {
                warnings.push(warn(
                    None,
                    "has no `description`, so the model cannot tell when to use it; its first \
                     line stands in. Add `description:` to the frontmatter"
                        .to_string(),
                ));
                first.to_string()
            }
            None => {
                return Err(warn(
                    None,
                    "skill skipped: it has neither a `description` nor instructions".to_string(),
                ))
            }
        },
    };
    let allowed_tools = match parsed.first_of(&["allowed-tools", "allowed_tools", "allowedTools"]) {
        None => Vec::new(),
        Some(field) => field.list().unwrap_or_else(|problem| {
            warnings.push(warn(Some(field.line), format!("{problem}; ignored")));
            Vec::new()
        }),
    };
    let context = match parsed.get("context") {
        None => SkillContext::Inline,
        Some(field) => match field.text().as_deref().map(str::trim) {
            Ok("fork") => SkillContext::Fork,
            Ok("") | Ok("inline") => SkillContext::Inline,
            Ok(other) => {
                warnings.push(warn(
                    Some(field.line),
                    format!("`context: {other}` is not known (only `fork` is); it runs inline"),
                ));
                SkillContext::Inline
            }
            Err(problem) => {
                warnings.push(warn(Some(field.line), format!("{problem}; it runs inline")));
                SkillContext::Inline
            }
        },
    };
    let model = text_of(&["model"], &mut warnings).filter(|m| m != "inherit");
    let agent = text_of(&["agent"], &mut warnings);
    let argument_hint = text_of(&["argument-hint", "argumentHint"], &mut warnings);
    let disable_model_invocation = flag(
        &["disable-model-invocation", "disableModelInvocation"],
        false,
        &mut warnings,
    );
    let user_invocable = flag(&["user-invocable", "userInvocable"], true, &mut warnings);
    let extra = parsed
        .fields
        .iter()
        .filter(|f| !KNOWN_KEYS.contains(&f.key.as_str()))
        .map(|f| (f.key.clone(), f.value.clone()))
        .collect();
    Ok((
        SkillDefinition {
            name,
            description,
            source,
            dir: None,
            file: None,
            allowed_tools,
            model,
            context,
            agent,
            argument_hint,
            disable_model_invocation,
            user_invocable,
            extra,
            content: None,
        },
        warnings,
    ))
}

/// Why `name` cannot name a skill (it is typed as `/name` and used as a command id), if it cannot.
pub(crate) fn name_problem(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        Some("is empty")
    } else if name.chars().count() > MAX_NAME_LEN {
        Some("is longer than 64 characters")
    } else if !name
        .chars()
        .all(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | '.'))
    {
        Some("may only hold letters, digits, `-`, `_` and `.`")
    } else {
        None
    }
}
