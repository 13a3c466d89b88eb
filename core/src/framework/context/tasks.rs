//! Active task context (spec 000 "Active Task Context"): the Markdown task files directly under
//! `.agents/tasks/`, summarised as neutral metadata for the system prompt.
//!
//! - Eligible: `*.md` files directly in `.agents/tasks/` except `README.md`; `completed/` and other
//!   subdirectories are not scanned.
//! - Parsed: title (first `# ` heading, else the file stem), `- **Status**:`, `- **Branch**:`,
//!   `- **Scope**:` metadata lines, the `## Objective` section, and unchecked `- [ ] ` items.
//! - Selected: completed tasks are dropped; a task whose branch is the current git branch comes
//!   first, then in-progress, todo, blocked, unknown; ties by path. At most `max_tasks` (default
//!   [`DEFAULT_MAX_TASKS`]).
//! - Bounded: an objective is cut to [`MAX_OBJECTIVE_BYTES`], open items to [`MAX_OPEN_ITEMS`] per
//!   task; files over [`MAX_TASK_FILE_BYTES`] are read only up to that size.
//! - Rendered as Markdown facts (path, status, branch, scope, objective, open items) with no
//!   behaviour instructions.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::instructions::display_path;
use super::text::{lines, truncate_to_bytes};
use crate::files::{open_regular, FileKind};

/// Tasks shown by default.
pub const DEFAULT_MAX_TASKS: usize = 3;
/// Bytes of a task's objective kept.
pub const MAX_OBJECTIVE_BYTES: usize = 2_000;
/// Open items kept per task.
pub const MAX_OPEN_ITEMS: usize = 20;
/// Bytes of a task file read.
pub const MAX_TASK_FILE_BYTES: u64 = 256 * 1024;

/// A task file's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TaskStatus {
    /// `in-progress`.
    InProgress,
    /// `todo`.
    Todo,
    /// `blocked`.
    Blocked,
    /// Missing or unrecognised status.
    Unknown,
    /// `completed` (never selected).
    Completed,
}

impl TaskStatus {
    fn parse(value: Option<&str>) -> Self {
        match value.map(|v| v.trim().to_ascii_lowercase()).as_deref() {
            Some("in-progress") => TaskStatus::InProgress,
            Some("todo") => TaskStatus::Todo,
            Some("blocked") => TaskStatus::Blocked,
            Some("completed") => TaskStatus::Completed,
            _ => TaskStatus::Unknown,
        }
    }

    /// The status as written in task files.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskStatus::InProgress => "in-progress",
            TaskStatus::Todo => "todo",
            TaskStatus::Blocked => "blocked",
            TaskStatus::Unknown => "unknown",
            TaskStatus::Completed => "completed",
        }
    }
}

/// One parsed task file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TaskSummary {
    /// The file.
    pub path: PathBuf,
    /// The file relative to the project directory.
    pub relative_path: String,
    /// Title.
    pub title: String,
    /// Status.
    pub status: TaskStatus,
    /// `- **Branch**:` value.
    pub branch: Option<String>,
    /// `- **Scope**:` value.
    pub scope: Option<String>,
    /// The `## Objective` section (bounded).
    pub objective: Option<String>,
    /// Unchecked `- [ ]` items (bounded).
    pub open_items: Vec<String>,
}

/// Loads, selects and returns the active tasks of `project_dir`.
pub(crate) fn load_tasks(
    project_dir: &Path,
    current_branch: Option<&str>,
    max_tasks: usize,
) -> Vec<TaskSummary> {
    let dir = project_dir.join(".agents").join("tasks");
    let Ok(entries) = fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut tasks: Vec<TaskSummary> = entries
        .filter_map(Result::ok)
        .filter(|entry| entry.file_type().is_ok_and(|kind| kind.is_file()))
        .map(|entry| entry.path())
        .filter(|path| {
            path.extension().is_some_and(|ext| ext == "md")
                && path.file_name().is_some_and(|name| name != "README.md")
        })
        .filter_map(|path| {
            let text = read_bounded(&path)?;
            Some(parse_task(&path, &display_path(&path, project_dir), &text))
        })
        .filter(|task| task.status != TaskStatus::Completed)
        .collect();
    let score = |task: &TaskSummary| {
        let on_branch = current_branch.is_some() && task.branch.as_deref() == current_branch;
        (!on_branch, task.status)
    };
    tasks.sort_by(|a, b| {
        score(a)
            .cmp(&score(b))
            .then_with(|| a.relative_path.cmp(&b.relative_path))
    });
    tasks.truncate(max_tasks);
    tasks
}

/// The first [`MAX_TASK_FILE_BYTES`] of a task file; `None` when it is not a regular file.
fn read_bounded(path: &Path) -> Option<String> {
    let kind = FileKind::new("task file", u64::MAX);
    let (file, _) = open_regular(path, &kind).ok()?;
    let mut bytes = Vec::new();
    file.take(MAX_TASK_FILE_BYTES)
        .read_to_end(&mut bytes)
        .ok()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// Parses one task file's text.
pub fn parse_task(path: &Path, relative_path: &str, text: &str) -> TaskSummary {
    let title = lines(text)
        .find_map(|line| line.strip_prefix("# "))
        .map(str::trim)
        .filter(|title| !title.is_empty())
        .map(str::to_owned)
        .unwrap_or_else(|| {
            path.file_stem()
                .map(|stem| stem.to_string_lossy().into_owned())
                .unwrap_or_default()
        });
    let open_items = lines(text)
        .filter_map(|line| line.strip_prefix("- [ ]"))
        .map(str::trim)
        .filter(|item| !item.is_empty())
        .take(MAX_OPEN_ITEMS)
        .map(str::to_owned)
        .collect();
    TaskSummary {
        path: path.to_owned(),
        relative_path: relative_path.to_owned(),
        title,
        status: TaskStatus::parse(metadata(text, "Status").as_deref()),
        branch: metadata(text, "Branch"),
        scope: metadata(text, "Scope"),
        objective: section(text, "Objective")
            .map(|objective| truncate_to_bytes(&objective, MAX_OBJECTIVE_BYTES).to_owned()),
        open_items,
    }
}

/// `- **Key**: value` (case-insensitive key; the colon may be inside or outside the bold).
fn metadata(text: &str, key: &str) -> Option<String> {
    let prefix = format!("- **{}", key.to_ascii_lowercase());
    lines(text).find_map(|line| {
        let lower = line.to_ascii_lowercase();
        if !lower.starts_with(&prefix) {
            return None;
        }
        let rest = &line[prefix.len()..];
        let rest = rest
            .strip_prefix("**:")
            .or_else(|| rest.strip_prefix(":**"))?;
        let value = rest.trim();
        (!value.is_empty()).then(|| value.to_owned())
    })
}

/// The body of the `##`–`######` heading named `title`, up to the next `## ` heading.
fn section(text: &str, title: &str) -> Option<String> {
    let mut body: Option<Vec<&str>> = None;
    for line in lines(text) {
        if let Some(collected) = body.as_mut() {
            if line.starts_with("## ") {
                break;
            }
            collected.push(line);
            continue;
        }
        let hashes = line.chars().take_while(|c| *c == '#').count();
        if (2..=6).contains(&hashes) {
            let heading = line[hashes..].trim();
            let matches = heading
                .get(..title.len())
                .is_some_and(|start| start.eq_ignore_ascii_case(title))
                && heading[title.len()..]
                    .chars()
                    .next()
                    .is_none_or(|c| !c.is_alphanumeric());
            if matches {
                body = Some(Vec::new());
            }
        }
    }
    let text = body?.join("\n").trim().to_owned();
    (!text.is_empty()).then_some(text)
}

/// The tasks as neutral Markdown for the "Active Task Context" section.
pub fn format_task_context(tasks: &[TaskSummary]) -> String {
    tasks
        .iter()
        .map(|task| {
            let mut out = vec![
                format!("### {}", task.title),
                format!("- **Path:** `{}`", task.relative_path),
                format!("- **Status:** {}", task.status.as_str()),
            ];
            if let Some(branch) = &task.branch {
                out.push(format!("- **Branch:** {branch}"));
            }
            if let Some(scope) = &task.scope {
                out.push(format!("- **Scope:** {scope}"));
            }
            if let Some(objective) = &task.objective {
                out.push(format!("- **Objective:** {objective}"));
            }
            if !task.open_items.is_empty() {
                out.push("- **Open items:**".to_owned());
                out.extend(task.open_items.iter().map(|item| format!("  - {item}")));
            }
            out.join("\n")
        })
        .collect::<Vec<_>>()
        .join("\n\n")
}
