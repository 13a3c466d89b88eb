//! Discovery of instruction files — AGENTS.md and CLAUDE.md and their local variants — from the
//! repository root down to the working directory, plus the user-level files, under one byte
//! budget.
//!
//! # Which files, in which order
//!
//! For every directory from the repository root (the nearest ancestor of cwd containing `.git`)
//! down to cwd — or, outside a repository, from the top-most ancestor below the filesystem root
//! down to cwd, as Claude Code walks — these files are read:
//!
//! - Agent Instructions: `AGENTS.md`, `AGENTS.local.md`
//! - Project Notes: `CLAUDE.md`, `.claude/CLAUDE.md`, `CLAUDE.local.md`
//!
//! The user-level files `~/.robota/AGENTS.md` (Agent Instructions) and `~/.claude/CLAUDE.md`
//! (Project Notes) come first in their section. Within a section the order is user file, then
//! root-first, so the file nearest to cwd comes last and has the last word. A file reachable under
//! two names (`CLAUDE.md` as a symlink to `AGENTS.md` is common) is loaded once, under the first
//! name in that order.
//!
//! # Budget
//!
//! All instruction files together get [`super::DEFAULT_INSTRUCTIONS_BUDGET_BYTES`] bytes unless the
//! caller sets another budget. The budget is handed out nearest-first — cwd's files, then each
//! parent up to the root, then the user-level files — because the most specific instructions
//! matter most. The file that crosses the budget is cut at a UTF-8 character boundary and marked
//! truncated; files after it get nothing and are listed as omitted, so the model knows they exist
//! and can read them with a tool.
//!
//! Each file must be a regular file of at most 1 MiB ([`crate::files::INSTRUCTION_FILE`]); a FIFO,
//! a device (or a link to one) or a larger file is skipped with a [`ContextWarning`] naming it.

use std::fs;
use std::path::{Path, PathBuf};

use super::text::{read_text, truncate_to_bytes};
use super::{ContextFileKind, ContextWarning, InstructionFile};

/// A file that exists and was read, before the budget is applied.
struct Candidate {
    path: PathBuf,
    display_path: String,
    kind: ContextFileKind,
    text: String,
    /// Position in the budget order (lower is served first).
    priority: usize,
}

/// Files of one directory, in display order within their section.
const AGENTS_FILES: &[(&str, ContextFileKind)] = &[
    ("AGENTS.md", ContextFileKind::AgentsMd),
    ("AGENTS.local.md", ContextFileKind::AgentsLocalMd),
];
const CLAUDE_FILES: &[(&str, ContextFileKind)] = &[
    ("CLAUDE.md", ContextFileKind::ClaudeMd),
    (".claude/CLAUDE.md", ContextFileKind::ClaudeMd),
    ("CLAUDE.local.md", ContextFileKind::ClaudeLocalMd),
];

/// The loaded instruction files (display order) and the full text of each, for compact
/// instruction extraction (which must see past the budget cut).
pub(crate) struct LoadedInstructions {
    pub files: Vec<InstructionFile>,
    pub full_texts: Vec<String>,
}

/// The directories whose files are read, root-first.
pub(crate) fn instruction_dirs(cwd: &Path, git_root: Option<&Path>) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    for dir in cwd.ancestors() {
        if git_root.is_none() && dir.parent().is_none() {
            // Outside a repository, stop below the filesystem root (Claude Code does the same).
            break;
        }
        dirs.push(dir.to_path_buf());
        if Some(dir) == git_root {
            break;
        }
    }
    dirs.reverse();
    dirs
}

pub(crate) fn load_instructions(
    cwd: &Path,
    git_root: Option<&Path>,
    home: Option<&Path>,
    budget: usize,
    warnings: &mut Vec<ContextWarning>,
) -> LoadedInstructions {
    let dirs = instruction_dirs(cwd, git_root);
    let display_base = git_root.unwrap_or(cwd);
    let dir_count = dirs.len();

    // Display order: section by section; user file first, then root-first.
    let mut slots: Vec<(PathBuf, String, ContextFileKind, usize)> = Vec::new();
    let user_priority_base = dir_count * (AGENTS_FILES.len() + CLAUDE_FILES.len());
    for (section_index, (section, user_file)) in [
        (
            AGENTS_FILES,
            (".robota/AGENTS.md", ContextFileKind::UserAgentsMd),
        ),
        (
            CLAUDE_FILES,
            (".claude/CLAUDE.md", ContextFileKind::UserClaudeMd),
        ),
    ]
    .into_iter()
    .enumerate()
    {
        if let Some(home) = home {
            let path = home.join(user_file.0);
            let display = format!("~/{}", user_file.0);
            slots.push((
                path,
                display,
                user_file.1,
                user_priority_base + section_index,
            ));
        }
        for (depth_from_root, dir) in dirs.iter().enumerate() {
            // Nearest directory first in the budget order.
            let distance = dir_count - 1 - depth_from_root;
            for (file_index, (name, kind)) in section.iter().enumerate() {
                let path = dir.join(name);
                let display = display_path(&path, display_base);
                let within_dir = section_index * AGENTS_FILES.len() + file_index;
                let priority = distance * (AGENTS_FILES.len() + CLAUDE_FILES.len()) + within_dir;
                slots.push((path, display, *kind, priority));
            }
        }
    }

    let mut seen: Vec<PathBuf> = Vec::new();
    let mut candidates = Vec::new();
    for (path, display_path, kind, priority) in slots {
        let Ok(metadata) = fs::metadata(&path) else {
            continue;
        };
        if metadata.is_dir() {
            continue;
        }
        let identity = fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
        if seen.contains(&identity) {
            continue;
        }
        seen.push(identity);
        match read_text(&path) {
            Ok(text) => candidates.push(Candidate {
                path,
                display_path,
                kind,
                text,
                priority,
            }),
            // A FIFO, a device, a file over the cap: skipped, with a warning naming it.
            Err(err) => warnings.push(ContextWarning {
                path: path.clone(),
                message: format!("{err}; it was skipped"),
            }),
        }
    }

    // Hand out the budget nearest-first.
    let mut order: Vec<usize> = (0..candidates.len()).collect();
    order.sort_by_key(|&index| candidates[index].priority);
    let mut allowance = vec![0usize; candidates.len()];
    let mut remaining = budget;
    for index in order {
        let wanted = candidates[index].text.len();
        allowance[index] = wanted.min(remaining);
        remaining -= allowance[index];
    }

    let mut files = Vec::with_capacity(candidates.len());
    let mut full_texts = Vec::with_capacity(candidates.len());
    for (candidate, allowed) in candidates.into_iter().zip(allowance) {
        let content = truncate_to_bytes(&candidate.text, allowed).to_owned();
        files.push(InstructionFile {
            path: candidate.path,
            display_path: candidate.display_path,
            kind: candidate.kind,
            total_bytes: candidate.text.len(),
            truncated: content.len() < candidate.text.len(),
            content,
        });
        full_texts.push(candidate.text);
    }
    LoadedInstructions { files, full_texts }
}

/// `path` relative to `base` with `/` separators, or the full path when it is not under `base`.
pub(crate) fn display_path(path: &Path, base: &Path) -> String {
    match path.strip_prefix(base) {
        Ok(relative) if !relative.as_os_str().is_empty() => relative
            .components()
            .map(|component| component.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join("/"),
        _ => path.display().to_string(),
    }
}
