//! What the project context a session was given is made of, as the session reports it: the files
//! read ([`LoadedContextFile`], of a [`ContextFileKind`]) and those that could not be read
//! ([`ContextWarning`]), carried in the `context_loaded` event. The framework's context loader
//! produces them; the session only passes them on.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// What a context file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ContextFileKind {
    /// `AGENTS.md` in a project directory.
    AgentsMd,
    /// `AGENTS.local.md` in a project directory.
    AgentsLocalMd,
    /// `CLAUDE.md` or `.claude/CLAUDE.md` in a project directory.
    ClaudeMd,
    /// `CLAUDE.local.md` in a project directory.
    ClaudeLocalMd,
    /// `~/.robota/AGENTS.md`.
    UserAgentsMd,
    /// `~/.claude/CLAUDE.md`.
    UserClaudeMd,
    /// `.robota/memory/MEMORY.md`.
    Memory,
    /// A task file under `.agents/tasks/`.
    Task,
}

impl ContextFileKind {
    /// True for the files rendered under "Agent Instructions".
    pub fn is_agents(self) -> bool {
        matches!(
            self,
            ContextFileKind::AgentsMd
                | ContextFileKind::AgentsLocalMd
                | ContextFileKind::UserAgentsMd
        )
    }
}

/// One file read while loading the context, for the session's "context loaded" event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoadedContextFile {
    /// The file.
    pub path: PathBuf,
    /// What it is.
    pub kind: ContextFileKind,
    /// Its size in bytes.
    pub bytes: usize,
    /// Bytes that went into the prompt.
    pub included_bytes: usize,
    /// True when it was cut.
    pub truncated: bool,
}

/// A file that exists but could not be read. Loading goes on without it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContextWarning {
    /// The file.
    pub path: PathBuf,
    /// What went wrong.
    pub message: String,
}
