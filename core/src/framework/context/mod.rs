//! Project context: what a session knows about the folder it runs in before the first prompt —
//! instruction files (AGENTS.md, CLAUDE.md and their local variants, user-level files), the
//! project memory index, active task files, the kind of project, the "Compact Instructions" — and
//! the system prompt built from it. Also the `@file` prompt references ([`file_refs`]).
//!
//! [`load_project_context`] does all the file reading; [`build_system_prompt`] is a pure function
//! of its result and [`PromptMetadata`]. [`ProjectContext::loaded_files`] lists every file read
//! (path, size, bytes used, truncated) so the session can report it in an event.
//!
//! # Instruction files
//!
//! For every directory from the repository root (the nearest ancestor of cwd containing `.git`)
//! down to cwd — outside a repository, from the top-most ancestor below the filesystem root down to
//! cwd, as Claude Code walks — these are read: `AGENTS.md`, `AGENTS.local.md` (rendered under
//! "Agent Instructions") and `CLAUDE.md`, `.claude/CLAUDE.md`, `CLAUDE.local.md` ("Project
//! Notes"). The user-level `~/.robota/AGENTS.md` and `~/.claude/CLAUDE.md` come first in their
//! section; project files follow root-first, so the file nearest to cwd has the last word. A file
//! reachable under two names (`CLAUDE.md` symlinked to `AGENTS.md`) is loaded once.
//!
//! # Limits
//!
//! - Instruction files share [`DEFAULT_INSTRUCTIONS_BUDGET_BYTES`] (64 KiB) unless
//!   [`ContextOptions::instructions_budget_bytes`] says otherwise. The budget is handed out
//!   nearest-first (cwd's files, then each parent up to the root, then the user files), because
//!   the most specific instructions matter most. The file that crosses the budget is cut at a
//!   UTF-8 character boundary with a marker; files after it are listed as omitted, so the model
//!   knows they exist and can read them with a tool.
//! - MEMORY.md: the first [`MEMORY_MAX_LINES`] lines, at most [`MEMORY_MAX_BYTES`] bytes.
//! - Tasks: at most [`DEFAULT_MAX_TASKS`], each bounded (see [`TaskSummary`]).
//!
//! - Every file read here must be a regular file: instruction files and MEMORY.md of at most
//!   1 MiB ([`crate::files::INSTRUCTION_FILE`]); task files are read up to
//!   [`MAX_TASK_FILE_BYTES`]. A FIFO, a device (or a link to one) or a larger file is never read.
//!
//! Unreadable or refused files become [`ContextWarning`]s naming them; only an unusable cwd is an
//! error.

mod compact;
mod detect;
pub mod file_refs;
mod git;
mod instructions;
mod memory;
mod prompt;
mod tasks;
mod text;

pub use crate::session::loaded_context::{ContextFileKind, ContextWarning, LoadedContextFile};
pub use compact::extract_compact_instructions;
pub use detect::{detect_project, ProjectInfo, ProjectStack};
pub use file_refs::{
    resolve_file_references, FileContextBlock, FileRefDiagnostic, FileRefDiagnostics,
    FileRefErrorKind, FileRefOptions, FileRefReason, FileRefRecord, ResolvedPrompt,
};
pub use memory::{MemoryIndex, MEMORY_MAX_BYTES, MEMORY_MAX_LINES};
pub use prompt::{
    build_instruction_sections, build_system_prompt, PromptMetadata, PromptSection,
    SYSTEM_PROMPT_SECTIONS,
};
pub use tasks::{
    format_task_context, parse_task, TaskStatus, TaskSummary, DEFAULT_MAX_TASKS,
    MAX_OBJECTIVE_BYTES, MAX_OPEN_ITEMS, MAX_TASK_FILE_BYTES,
};

use std::io;
use std::path::PathBuf;

use serde::Serialize;

/// Bytes shared by all instruction files (AGENTS.md, CLAUDE.md, local and user variants): 64 KiB.
/// Enough for several substantial files; small next to a 200K-token context window, so project
/// instructions never crowd out the conversation. Truncation markers are not counted.
pub const DEFAULT_INSTRUCTIONS_BUDGET_BYTES: usize = 64 * 1024;

/// One instruction file as it goes into the prompt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InstructionFile {
    /// The file.
    pub path: PathBuf,
    /// How the prompt names it: relative to the repository root, or `~/…` for user files.
    pub display_path: String,
    /// Which file it is.
    pub kind: ContextFileKind,
    /// The part within the budget (the whole file unless [`Self::truncated`]).
    pub content: String,
    /// Size of the whole file in bytes (after UTF-8 repair).
    pub total_bytes: usize,
    /// True when the budget cut the file (possibly to nothing).
    pub truncated: bool,
}

/// Why the context could not be loaded at all.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ContextError {
    /// The working directory does not exist or cannot be resolved.
    #[error("the working directory {} is not usable: {source}", path.display())]
    Cwd {
        /// The directory.
        path: PathBuf,
        /// The operating-system error.
        #[source]
        source: io::Error,
    },
}

/// What to load.
#[derive(Debug, Clone)]
pub struct ContextOptions {
    /// The session's working directory.
    pub cwd: PathBuf,
    /// The user's home directory; `None` skips the user-level files.
    pub home: Option<PathBuf>,
    /// Where `.robota/memory/` and `.agents/tasks/` live; defaults to `cwd` (as TypeScript
    /// Robota's project paths do).
    pub project_dir: Option<PathBuf>,
    /// Total bytes for instruction files.
    pub instructions_budget_bytes: usize,
    /// Whether to load `.agents/tasks/*.md` (settings `taskContext.enabled`).
    pub load_task_context: bool,
    /// At most this many tasks.
    pub max_tasks: usize,
}

impl ContextOptions {
    /// Defaults for `cwd` and `home`.
    pub fn new(cwd: impl Into<PathBuf>, home: Option<PathBuf>) -> Self {
        ContextOptions {
            cwd: cwd.into(),
            home,
            project_dir: None,
            instructions_budget_bytes: DEFAULT_INSTRUCTIONS_BUDGET_BYTES,
            load_task_context: true,
            max_tasks: DEFAULT_MAX_TASKS,
        }
    }
}

/// Everything loaded from the project folder.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProjectContext {
    /// The working directory (canonical).
    pub cwd: PathBuf,
    /// Where memory and tasks were read from (canonical).
    pub project_dir: PathBuf,
    /// The repository root, if cwd is inside one.
    pub git_root: Option<PathBuf>,
    /// The checked-out branch, if known.
    pub git_branch: Option<String>,
    /// Instruction files in prompt order.
    pub instructions: Vec<InstructionFile>,
    /// The memory index.
    pub memory: Option<MemoryIndex>,
    /// The selected active tasks.
    pub tasks: Vec<TaskSummary>,
    /// The tasks rendered for the prompt (`None` when there are none).
    pub task_context: Option<String>,
    /// Detected languages and package managers.
    pub project: ProjectInfo,
    /// "Compact Instructions" sections from the instruction files (full files, not just the part
    /// within the budget), for the compaction summary prompt.
    pub compact_instructions: Option<String>,
    /// Every file read.
    pub loaded_files: Vec<LoadedContextFile>,
    /// Files that could not be read.
    pub warnings: Vec<ContextWarning>,
}

/// Loads the project context for `options.cwd`.
pub fn load_project_context(options: &ContextOptions) -> Result<ProjectContext, ContextError> {
    let cwd = std::fs::canonicalize(&options.cwd).map_err(|source| ContextError::Cwd {
        path: options.cwd.clone(),
        source,
    })?;
    let project_dir = match &options.project_dir {
        Some(dir) => std::fs::canonicalize(dir).unwrap_or_else(|_| dir.clone()),
        None => cwd.clone(),
    };
    let home = options
        .home
        .as_ref()
        .map(|home| std::fs::canonicalize(home).unwrap_or_else(|_| home.clone()));
    let git_root = git::find_git_root(&cwd);
    let git_branch = git_root.as_deref().and_then(git::current_branch);
    let mut warnings = Vec::new();

    let loaded = instructions::load_instructions(
        &cwd,
        git_root.as_deref(),
        home.as_deref(),
        options.instructions_budget_bytes,
        &mut warnings,
    );
    let compact_sections: Vec<String> = loaded
        .full_texts
        .iter()
        .filter_map(|text| extract_compact_instructions(text))
        .collect();
    let compact_instructions =
        (!compact_sections.is_empty()).then(|| compact_sections.join("\n\n"));

    let mut loaded_files: Vec<LoadedContextFile> = loaded
        .files
        .iter()
        .map(|file| LoadedContextFile {
            path: file.path.clone(),
            kind: file.kind,
            bytes: file.total_bytes,
            included_bytes: file.content.len(),
            truncated: file.truncated,
        })
        .collect();

    let memory = memory::load_memory(&project_dir, &mut warnings);
    if let Some(memory) = &memory {
        loaded_files.push(LoadedContextFile {
            path: memory.path.clone(),
            kind: ContextFileKind::Memory,
            bytes: memory.total_bytes,
            included_bytes: memory.content.len(),
            truncated: memory.truncated,
        });
    }

    let tasks = if options.load_task_context {
        tasks::load_tasks(&project_dir, git_branch.as_deref(), options.max_tasks)
    } else {
        Vec::new()
    };
    for task in &tasks {
        let bytes = std::fs::metadata(&task.path).map_or(0, |m| m.len() as usize);
        loaded_files.push(LoadedContextFile {
            path: task.path.clone(),
            kind: ContextFileKind::Task,
            bytes,
            included_bytes: bytes.min(MAX_TASK_FILE_BYTES as usize),
            truncated: bytes > MAX_TASK_FILE_BYTES as usize,
        });
    }
    let task_context = (!tasks.is_empty()).then(|| format_task_context(&tasks));
    let project = detect_project(&cwd, git_root.as_deref());

    Ok(ProjectContext {
        cwd,
        project_dir,
        git_root,
        git_branch,
        instructions: loaded.files,
        memory,
        tasks,
        task_context,
        project,
        compact_instructions,
        loaded_files,
        warnings,
    })
}
