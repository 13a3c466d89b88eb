//! Project memory (spec 000 "Project Memory"): durable facts about a project under
//! `.robota/memory/` — `MEMORY.md`, the index loaded into the system prompt at startup (capped,
//! see [`crate::framework::context`]), and `topics/<topic>.md` with each topic's entries.
//!
//! [`ProjectMemory`] appends entries with de-duplication (the same normalized text is not stored
//! twice in a topic), keeps pending candidates (`pending.json`) a person approves or rejects,
//! and refuses sensitive content ([`check_sensitive`]) with a reason — never saving it, not even
//! as a candidate. Nothing here runs on its own after a turn: memory is written only through
//! explicit calls, such as the `memory` command ([`memory_command_module`]).

pub mod command;
pub mod policy;

use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::files::{read_regular_text, FileKind};
use crate::tools::builtins::fsutil::atomic_write;

pub use command::{memory_command_module, MemoryCommand, MEMORY_COMMAND, MEMORY_EVENT};
pub use policy::{check_sensitive, SensitiveContent};

/// Memory files (`MEMORY.md`, topics, `pending.json`): 1 MiB each.
pub const MEMORY_FILE: FileKind = FileKind::new("project memory file", 1024 * 1024);
/// The longest entry, in characters.
pub const MAX_ENTRY_CHARS: usize = 2000;
/// The most pending candidates kept.
pub const MAX_PENDING: usize = 100;
/// Where memory lives under the project directory.
pub const MEMORY_DIR: &str = ".robota/memory";
/// How many characters of an entry its index line shows.
const INDEX_LINE_CHARS: usize = 160;

/// The kind of a memory entry (spec 000: `user | feedback | project | reference`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemoryType {
    /// About the people working on the project (preferences, roles).
    User,
    /// Corrections and guidance given about the work.
    Feedback,
    /// Facts about the project itself (commands, layout, conventions).
    Project,
    /// Pointers to where something is (docs, dashboards, tickets).
    Reference,
}

impl MemoryType {
    /// The type's name as typed and stored.
    pub fn as_str(self) -> &'static str {
        match self {
            MemoryType::User => "user",
            MemoryType::Feedback => "feedback",
            MemoryType::Project => "project",
            MemoryType::Reference => "reference",
        }
    }

    /// Parses `user`, `feedback`, `project` or `reference`.
    pub fn parse(text: &str) -> Option<Self> {
        Some(match text.trim().to_ascii_lowercase().as_str() {
            "user" => MemoryType::User,
            "feedback" => MemoryType::Feedback,
            "project" => MemoryType::Project,
            "reference" => MemoryType::Reference,
            _ => return None,
        })
    }
}

/// Why a memory operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MemoryError {
    /// The text looks like a secret or personal data; it was not saved.
    #[error(transparent)]
    Sensitive(#[from] SensitiveContent),
    /// The topic name cannot be a file name.
    #[error("invalid memory topic `{0}`: use 1-64 lowercase letters, digits, '-' or '_', starting with a letter or digit")]
    InvalidTopic(String),
    /// The entry is empty or too long.
    #[error("{0}")]
    InvalidEntry(String),
    /// No topic has this name.
    #[error("no memory topic `{0}`; `memory list` shows the topics")]
    UnknownTopic(String),
    /// No pending candidate has this id.
    #[error("no pending memory candidate `{0}`; `memory pending` lists them")]
    UnknownCandidate(String),
    /// Too many candidates wait.
    #[error("{MAX_PENDING} memory candidates are already pending; approve or reject some first")]
    TooManyPending,
    /// Reading or writing a memory file failed.
    #[error("project memory {}: {message}", path.display())]
    Storage {
        /// The file.
        path: PathBuf,
        /// What failed.
        message: String,
    },
}

fn storage(path: &Path, error: impl std::fmt::Display) -> MemoryError {
    MemoryError::Storage {
        path: path.to_path_buf(),
        message: error.to_string(),
    }
}

/// One entry of a topic.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryEntry {
    /// Its kind.
    #[serde(rename = "type")]
    pub kind: MemoryType,
    /// The text (one line).
    pub text: String,
}

/// A topic with its entries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryTopic {
    /// The topic's name (its file is `topics/<name>.md`).
    pub name: String,
    /// Its entries, oldest first.
    pub entries: Vec<MemoryEntry>,
}

/// What [`ProjectMemory::append`] did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AppendOutcome {
    /// The topic.
    pub topic: String,
    /// True when the topic already had this entry (after normalizing case and spaces), so
    /// nothing was written.
    pub deduplicated: bool,
    /// The topic file.
    pub path: PathBuf,
}

/// A memory entry waiting for a person to approve or reject it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingMemory {
    /// Its id (`mem-…`).
    pub id: String,
    /// Its kind.
    #[serde(rename = "type")]
    pub kind: MemoryType,
    /// The topic it goes to.
    pub topic: String,
    /// The text.
    pub text: String,
    /// Who proposed it: `model` or `user`.
    pub source: String,
    /// RFC 3339 time it was proposed.
    pub created_at: String,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct PendingFile {
    #[serde(default)]
    candidates: Vec<PendingMemory>,
}

/// The memory of one project.
#[derive(Debug, Clone)]
pub struct ProjectMemory {
    dir: PathBuf,
}

impl ProjectMemory {
    /// The memory of the project at `project_dir` (nothing is read or written yet).
    pub fn new(project_dir: &Path) -> Self {
        ProjectMemory {
            dir: project_dir.join(MEMORY_DIR),
        }
    }

    /// `MEMORY.md`.
    pub fn index_path(&self) -> PathBuf {
        self.dir.join("MEMORY.md")
    }

    fn topic_path(&self, topic: &str) -> PathBuf {
        self.dir.join("topics").join(format!("{topic}.md"))
    }

    /// The index as stored (empty when there is none).
    pub fn index(&self) -> Result<String, MemoryError> {
        read_optional(&self.index_path())
    }

    /// Every topic with its entries, by name.
    pub fn topics(&self) -> Result<Vec<MemoryTopic>, MemoryError> {
        let dir = self.dir.join("topics");
        let entries = match fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(storage(&dir, e)),
        };
        let mut topics = Vec::new();
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(name) = name.to_str().and_then(|n| n.strip_suffix(".md")) else {
                continue;
            };
            if valid_topic(name) {
                topics.push(self.topic(name)?);
            }
        }
        topics.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(topics)
    }

    /// One topic; [`MemoryError::UnknownTopic`] when it has no file.
    pub fn topic(&self, name: &str) -> Result<MemoryTopic, MemoryError> {
        let name = topic_name(name)?;
        let path = self.topic_path(&name);
        if !path.exists() {
            return Err(MemoryError::UnknownTopic(name));
        }
        let text = read_optional(&path)?;
        Ok(MemoryTopic {
            entries: text.lines().filter_map(parse_entry).collect(),
            name,
        })
    }

    /// Adds an entry to `topic` (creating the topic) and a line to the index, unless the topic
    /// already holds the same text. Sensitive text is refused.
    pub fn append(
        &self,
        kind: MemoryType,
        topic: &str,
        text: &str,
    ) -> Result<AppendOutcome, MemoryError> {
        let topic = topic_name(topic)?;
        let text = entry_text(text)?;
        check_sensitive(&text)?;
        let path = self.topic_path(&topic);
        let mut content = read_optional(&path)?;
        let wanted = normalized(&text);
        if content
            .lines()
            .filter_map(parse_entry)
            .any(|e| normalized(&e.text) == wanted)
        {
            return Ok(AppendOutcome {
                topic,
                deduplicated: true,
                path,
            });
        }
        if content.is_empty() {
            content = format!("# {topic}\n\n");
        } else if !content.ends_with('\n') {
            content.push('\n');
        }
        content.push_str(&format!("- [{}] {text}\n", kind.as_str()));
        atomic_write(&path, content.as_bytes()).map_err(|e| storage(&path, e))?;

        let index_path = self.index_path();
        let mut index = read_optional(&index_path)?;
        if index.is_empty() {
            index = "# Project Memory\n\n".to_string();
        } else if !index.ends_with('\n') {
            index.push('\n');
        }
        let summary: String = text.chars().take(INDEX_LINE_CHARS).collect();
        let ellipsis = if summary.len() < text.len() {
            "…"
        } else {
            ""
        };
        index.push_str(&format!(
            "- [{}] {topic}: {summary}{ellipsis} (topics/{topic}.md)\n",
            kind.as_str()
        ));
        atomic_write(&index_path, index.as_bytes()).map_err(|e| storage(&index_path, e))?;
        Ok(AppendOutcome {
            topic,
            deduplicated: false,
            path,
        })
    }

    /// The pending candidates, oldest first.
    pub fn pending(&self) -> Result<Vec<PendingMemory>, MemoryError> {
        Ok(self.read_pending()?.candidates)
    }

    /// Adds a candidate for a person to approve. Sensitive text is refused here already.
    pub fn propose(
        &self,
        kind: MemoryType,
        topic: &str,
        text: &str,
        source: &str,
    ) -> Result<PendingMemory, MemoryError> {
        let topic = topic_name(topic)?;
        let text = entry_text(text)?;
        check_sensitive(&text)?;
        let mut file = self.read_pending()?;
        if let Some(existing) = file
            .candidates
            .iter()
            .find(|c| c.topic == topic && normalized(&c.text) == normalized(&text))
        {
            return Ok(existing.clone());
        }
        if file.candidates.len() >= MAX_PENDING {
            return Err(MemoryError::TooManyPending);
        }
        let candidate = PendingMemory {
            id: format!("mem-{}", &uuid::Uuid::new_v4().simple().to_string()[..8]),
            kind,
            topic,
            text,
            source: source.to_string(),
            created_at: crate::framework::skills::activation::now_rfc3339(),
        };
        file.candidates.push(candidate.clone());
        self.write_pending(&file)?;
        Ok(candidate)
    }

    /// Saves a pending candidate (checked again) and removes it from the pending list.
    pub fn approve(&self, id: &str) -> Result<(PendingMemory, AppendOutcome), MemoryError> {
        let mut file = self.read_pending()?;
        let index = file
            .candidates
            .iter()
            .position(|c| c.id == id.trim())
            .ok_or_else(|| MemoryError::UnknownCandidate(id.trim().to_string()))?;
        let candidate = file.candidates[index].clone();
        let outcome = self.append(candidate.kind, &candidate.topic, &candidate.text)?;
        file.candidates.remove(index);
        self.write_pending(&file)?;
        Ok((candidate, outcome))
    }

    /// Drops a pending candidate without saving it.
    pub fn reject(&self, id: &str) -> Result<PendingMemory, MemoryError> {
        let mut file = self.read_pending()?;
        let index = file
            .candidates
            .iter()
            .position(|c| c.id == id.trim())
            .ok_or_else(|| MemoryError::UnknownCandidate(id.trim().to_string()))?;
        let candidate = file.candidates.remove(index);
        self.write_pending(&file)?;
        Ok(candidate)
    }

    fn pending_path(&self) -> PathBuf {
        self.dir.join("pending.json")
    }

    fn read_pending(&self) -> Result<PendingFile, MemoryError> {
        let path = self.pending_path();
        let text = read_optional(&path)?;
        if text.trim().is_empty() {
            return Ok(PendingFile::default());
        }
        serde_json::from_str(&text).map_err(|e| {
            storage(
                &path,
                format!("is not a valid pending list ({e}); fix or delete the file"),
            )
        })
    }

    fn write_pending(&self, file: &PendingFile) -> Result<(), MemoryError> {
        let path = self.pending_path();
        let text = serde_json::to_vec_pretty(file).map_err(|e| storage(&path, e))?;
        atomic_write(&path, &text)
            .map(|_| ())
            .map_err(|e| storage(&path, e))
    }
}

fn read_optional(path: &Path) -> Result<String, MemoryError> {
    match read_regular_text(path, &MEMORY_FILE) {
        Ok(text) => Ok(text),
        Err(e) if e.is_not_found() => Ok(String::new()),
        Err(e) => Err(storage(path, e.into_io_error())),
    }
}

fn valid_topic(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
}

/// The topic name, lowercased; refused unless it is a safe file name.
fn topic_name(name: &str) -> Result<String, MemoryError> {
    let name = name.trim().to_ascii_lowercase();
    if valid_topic(&name) {
        Ok(name)
    } else {
        Err(MemoryError::InvalidTopic(name))
    }
}

/// The entry as one line of text within [`MAX_ENTRY_CHARS`].
fn entry_text(text: &str) -> Result<String, MemoryError> {
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if text.is_empty() {
        return Err(MemoryError::InvalidEntry(
            "the memory entry is empty; give the text to remember".into(),
        ));
    }
    if text.chars().count() > MAX_ENTRY_CHARS {
        return Err(MemoryError::InvalidEntry(format!(
            "the memory entry has {} characters; the limit is {MAX_ENTRY_CHARS}: store a shorter, durable fact",
            text.chars().count()
        )));
    }
    Ok(text)
}

/// Lowercase, single spaces, no trailing punctuation: what de-duplication compares.
fn normalized(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
        .trim_end_matches(['.', '!', ';'])
        .to_string()
}

/// A `- [type] text` line of a topic file.
fn parse_entry(line: &str) -> Option<MemoryEntry> {
    let rest = line.trim().strip_prefix("- [")?;
    let (kind, text) = rest.split_once(']')?;
    Some(MemoryEntry {
        kind: MemoryType::parse(kind)?,
        text: text.trim().to_string(),
    })
}
