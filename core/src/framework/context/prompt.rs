//! The system prompt, assembled from a [`ProjectContext`] and [`PromptMetadata`] by a pure
//! function in a fixed order.
//!
//! # Section order
//!
//! 1. `## Agent Instructions` — AGENTS.md files (user file first, then root-first)
//! 2. `## Project Notes` — CLAUDE.md files (same order)
//! 3. `## Project Memory (recorded data)` — `.robota/memory/MEMORY.md`
//! 4. `## Active Task Context` — `.agents/tasks/*.md` summaries
//! 5. `## Environment` — working directory, platform, date, model, git branch
//! 6. `## Current Project` — name, languages, package managers
//! 7. `## Response Language` — the configured language code
//! 8. `## Permission Mode` — the session's permission mode
//! 9. [`PromptMetadata::extra_sections`], in the order given (commands, skills, … from the host)
//!
//! Empty sections are left out; sections are separated by a blank line. The content is neutral:
//! files are quoted with their path, metadata is stated as facts, and nothing here adds behaviour
//! instructions of its own (spec 000). Each instruction file is introduced by a `Source:` line so
//! the model can tell files apart and cite them; a truncated file ends with a marker saying how
//! much was shown.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::ProjectContext;
use super::{ContextFileKind, InstructionFile};

/// The titles of the built-in sections, in the order they appear.
pub const SYSTEM_PROMPT_SECTIONS: &[&str] = &[
    "Agent Instructions",
    "Project Notes",
    "Project Memory (recorded data)",
    "Active Task Context",
    "Environment",
    "Current Project",
    "Response Language",
    "Permission Mode",
];

/// A titled section a host adds after the built-in ones.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PromptSection {
    /// Rendered as `## <title>`.
    pub title: String,
    /// The section body (trimmed when rendered).
    pub content: String,
}

/// Facts about the run that are not read from the project: where, when, on what, with which model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PromptMetadata {
    /// The working directory.
    pub cwd: PathBuf,
    /// Operating system and architecture, e.g. `linux (x86_64)`.
    pub platform: String,
    /// Today's date, `YYYY-MM-DD`.
    pub date: String,
    /// The model id.
    pub model: Option<String>,
    /// The response language code (settings `language`).
    pub language: Option<String>,
    /// The permission mode name.
    pub permission_mode: Option<String>,
    /// Host sections appended after the built-in ones.
    pub extra_sections: Vec<PromptSection>,
}

impl PromptMetadata {
    /// Metadata for `cwd` with this machine's platform and today's date (UTC).
    pub fn new(cwd: impl Into<PathBuf>) -> Self {
        let today = time::OffsetDateTime::now_utc().date();
        PromptMetadata {
            cwd: cwd.into(),
            platform: format!("{} ({})", std::env::consts::OS, std::env::consts::ARCH),
            date: format!(
                "{:04}-{:02}-{:02}",
                today.year(),
                u8::from(today.month()),
                today.day()
            ),
            model: None,
            language: None,
            permission_mode: None,
            extra_sections: Vec::new(),
        }
    }
}

/// The instruction files' sections alone (`## Agent Instructions` with the AGENTS.md files,
/// `## Project Notes` with the CLAUDE.md files), as [`build_system_prompt`] renders them; `None`
/// when there are none. A subagent's prompt carries them after its agent body.
pub fn build_instruction_sections(context: &ProjectContext) -> Option<String> {
    let sections: Vec<String> = [
        (
            SYSTEM_PROMPT_SECTIONS[0],
            render_files(context, |kind| kind.is_agents()),
        ),
        (
            SYSTEM_PROMPT_SECTIONS[1],
            render_files(context, |kind| !kind.is_agents()),
        ),
    ]
    .into_iter()
    .filter(|(_, content)| !content.trim().is_empty())
    .map(|(title, content)| format!("## {title}\n\n{}", content.trim()))
    .collect();
    (!sections.is_empty()).then(|| sections.join("\n\n"))
}

/// Builds the system prompt. Pure: the same inputs give the same text.
pub fn build_system_prompt(context: &ProjectContext, metadata: &PromptMetadata) -> String {
    let mut sections: Vec<(String, String)> = Vec::new();
    let mut push = |title: &str, content: String| {
        let content = content.trim().to_owned();
        if !content.is_empty() {
            sections.push((title.to_owned(), content));
        }
    };

    push(
        SYSTEM_PROMPT_SECTIONS[0],
        render_files(context, |kind| kind.is_agents()),
    );
    push(
        SYSTEM_PROMPT_SECTIONS[1],
        render_files(context, |kind| !kind.is_agents()),
    );
    if let Some(memory) = &context.memory {
        let mut text = format!(
            "Recorded in `.robota/memory/MEMORY.md`:\n\n{}",
            memory.content.trim_end()
        );
        if memory.truncated {
            text.push_str(&format!(
                "\n\n[truncated: the first {} bytes of {} ({} lines) are shown]",
                memory.content.len(),
                memory.total_bytes,
                memory.total_lines
            ));
        }
        push(SYSTEM_PROMPT_SECTIONS[2], text);
    }
    push(
        SYSTEM_PROMPT_SECTIONS[3],
        context.task_context.clone().unwrap_or_default(),
    );

    let mut environment = vec![format!("- Working directory: `{}`", metadata.cwd.display())];
    if let Some(root) = &context.git_root {
        environment.push(format!("- Git repository root: `{}`", root.display()));
    }
    if let Some(branch) = &context.git_branch {
        environment.push(format!("- Git branch: {branch}"));
    }
    environment.push(format!("- Platform: {}", metadata.platform));
    environment.push(format!("- Date: {}", metadata.date));
    if let Some(model) = &metadata.model {
        environment.push(format!("- Model: {model}"));
    }
    push(SYSTEM_PROMPT_SECTIONS[4], environment.join("\n"));

    let project = &context.project;
    let mut project_lines = Vec::new();
    if let Some(name) = &project.name {
        project_lines.push(format!("- Name: {name}"));
    }
    for stack in &project.stacks {
        let manager = stack
            .package_manager
            .as_deref()
            .map(|manager| format!(", package manager: {manager}"))
            .unwrap_or_default();
        project_lines.push(format!(
            "- Language: {}{manager} (from `{}`)",
            stack.language, stack.marker
        ));
    }
    push(SYSTEM_PROMPT_SECTIONS[5], project_lines.join("\n"));
    push(
        SYSTEM_PROMPT_SECTIONS[6],
        metadata.language.clone().unwrap_or_default(),
    );
    push(
        SYSTEM_PROMPT_SECTIONS[7],
        metadata
            .permission_mode
            .as_deref()
            .map(|mode| format!("- Permission mode: {mode}"))
            .unwrap_or_default(),
    );
    for extra in &metadata.extra_sections {
        push(&extra.title, extra.content.clone());
    }

    sections
        .iter()
        .map(|(title, content)| format!("## {title}\n\n{content}"))
        .collect::<Vec<_>>()
        .join("\n\n")
}

fn render_files(context: &ProjectContext, wanted: impl Fn(ContextFileKind) -> bool) -> String {
    context
        .instructions
        .iter()
        .filter(|file| wanted(file.kind))
        .filter_map(render_file)
        .collect::<Vec<_>>()
        .join("\n\n")
}

fn render_file(file: &InstructionFile) -> Option<String> {
    let body = file.content.trim();
    if body.is_empty() && !file.truncated {
        return None;
    }
    let mut text = format!("Source: `{}`", file.display_path);
    if body.is_empty() {
        text.push_str(&format!(
            "\n\n[omitted: {} bytes not shown because the instruction budget is used up]",
            file.total_bytes
        ));
        return Some(text);
    }
    text.push_str("\n\n");
    text.push_str(body);
    if file.truncated {
        text.push_str(&format!(
            "\n\n[truncated: the first {} of {} bytes are shown; the instruction budget is used up]",
            file.content.len(),
            file.total_bytes
        ));
    }
    Some(text)
}
