//! `Glob`: files whose path matches a glob pattern, newest first, found with ripgrep's walker
//! (`ignore`: `.gitignore`/`.ignore` rules and hidden files handled like `rg --files`) and matched
//! with `globset` (`**`, `{a,b}`, `[a-z]`, `*` not crossing `/`).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime};

use async_trait::async_trait;
use ignore::{WalkBuilder, WalkState};
use serde_json::{json, Value};

use super::budget;
use super::schema::{Field, Input, InputSchema, Kind};
use super::workspace::{normalize_lexically, Access, Workspace};
use super::{blocking, Builtins, Shared};
use crate::tools::{Tool, ToolContext, ToolOutput};

/// Paths returned when the call gives no `limit` (Claude Code's cap).
pub const DEFAULT_GLOB_LIMIT: usize = 100;

const SCHEMA: InputSchema = InputSchema {
    tool: "Glob",
    fields: &[
        Field {
            name: "pattern",
            aliases: &[],
            kind: Kind::String,
            required: true,
            description: "The glob pattern to match files against, e.g. \"**/*.rs\" or \
                          \"src/**/*.{ts,tsx}\"",
        },
        Field {
            name: "path",
            aliases: &[],
            kind: Kind::String,
            required: false,
            description: "The directory to search in (default: the working directory). Omit it \
                          for the default; do not pass \"undefined\" or \"null\"",
        },
        Field {
            name: "limit",
            aliases: &[],
            kind: Kind::Integer { min: 1 },
            required: false,
            description: "Maximum number of paths to return (default 100)",
        },
    ],
};

const DESCRIPTION: &str = "Fast file pattern matching in the workspace.\n\
\n\
- Supports glob patterns like \"**/*.js\", \"src/**/*.ts\", \"*.{json,toml}\" and character \
classes; `*` stays within one directory level, `**` crosses any number.\n\
- Patterns are relative to `path` (default: the working directory); absolute patterns work too.\n\
- Files ignored by .gitignore/.ignore and hidden files are skipped (like ripgrep), unless the \
pattern names a hidden path such as \".github/**\".\n\
- Returns matching file paths sorted by modification time, newest first, at most 100 unless \
`limit` says otherwise.\n\
- To search file contents use Grep.";

blocking_file_tool!(
    /// The `Glob` tool.
    GlobTool, name = "Glob", read_only = true, run = glob
);

fn glob(shared: &Shared, input: &Input, context: &ToolContext) -> ToolOutput {
    let started = Instant::now();
    let pattern = input.string("pattern");
    let limit = input
        .int("limit")
        .map(|l| l as usize)
        .unwrap_or(DEFAULT_GLOB_LIMIT);
    if pattern.trim().is_empty() {
        return ToolOutput::error("Invalid input for Glob: `pattern` is empty.");
    }
    let search_root = input
        .str("path")
        .filter(|p| !p.trim().is_empty() && *p != "undefined" && *p != "null")
        .unwrap_or(".");
    let (prefix, rest) = split_literal_prefix(&pattern);
    // The walk starts at the pattern's literal prefix ("src/app" of "src/app/**/*.ts"), so only
    // that subtree is read; an absolute pattern ignores `path`.
    let base_raw = if Path::new(&prefix).is_absolute() {
        prefix.clone()
    } else {
        Path::new(search_root)
            .join(&prefix)
            .to_string_lossy()
            .into_owned()
    };
    let base_raw = if base_raw.is_empty() {
        ".".into()
    } else {
        base_raw
    };
    let base = match shared
        .workspace
        .resolve(&context.cwd, &base_raw, Access::Read)
    {
        Ok(base) => base,
        Err(message) => return ToolOutput::error(message),
    };
    let matcher = match globset::GlobBuilder::new(&rest)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
    {
        Ok(glob) => glob.compile_matcher(),
        Err(err) => {
            return ToolOutput::error(format!(
                "Invalid glob pattern `{pattern}`: {err}. Examples: \"**/*.rs\", \
                 \"src/**/*.{{ts,tsx}}\", \"[a-c]*.md\"."
            ))
        }
    };
    let cwd_real = std::fs::canonicalize(&context.cwd).unwrap_or_else(|_| context.cwd.clone());
    let cwd_lexical = normalize_lexically(&context.cwd);
    if !base.real.exists() {
        let text = format!("No files found: {} does not exist.", base.display.display());
        return ToolOutput::with_response(
            text,
            json!({"filenames": [], "num_files": 0, "truncated": false}),
        );
    }

    let show_hidden = rest
        .split('/')
        .any(|c| c.starts_with('.') && c != "." && c != "..");
    let mut builder = WalkBuilder::new(&base.real);
    builder
        .hidden(!show_hidden)
        .follow_links(false)
        .threads(0)
        .filter_entry(|entry| entry.file_name() != ".git");
    if !rest.contains("**") {
        builder.max_depth(Some(rest.split('/').count()));
    }
    let found: Mutex<Vec<(SystemTime, PathBuf)>> = Mutex::new(Vec::new());
    let base_real = base.real.clone();
    let cancel = context.cancel.clone();
    builder.build_parallel().run(|| {
        let matcher = &matcher;
        let found = &found;
        let base_real = &base_real;
        let cancel = &cancel;
        Box::new(move |entry| {
            if cancel.is_cancelled() {
                return WalkState::Quit;
            }
            let Ok(entry) = entry else {
                return WalkState::Continue;
            };
            if entry.file_type().is_some_and(|t| t.is_dir()) {
                return WalkState::Continue;
            }
            let Ok(relative) = entry.path().strip_prefix(base_real) else {
                return WalkState::Continue;
            };
            if matcher.is_match(relative) {
                let modified = entry
                    .metadata()
                    .ok()
                    .and_then(|m| m.modified().ok())
                    .unwrap_or(SystemTime::UNIX_EPOCH);
                let mut found = found.lock().unwrap_or_else(|p| p.into_inner());
                found.push((modified, entry.into_path()));
            }
            WalkState::Continue
        })
    });
    if context.cancel.is_cancelled() {
        return ToolOutput::error("Glob was aborted.");
    }
    let mut found = found.into_inner().unwrap_or_else(|p| p.into_inner());
    // Newest first; equal times by path so the order is deterministic.
    found.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    let total = found.len();
    let shown: Vec<String> = found
        .iter()
        .take(limit)
        .map(|(_, path)| Workspace::display_relative(&cwd_real, &cwd_lexical, path))
        .collect();
    let truncated = total > shown.len();
    let mut text = if total == 0 {
        format!(
            "No files found matching `{pattern}` in {}.",
            base.display.display()
        )
    } else {
        shown.join("\n")
    };
    if truncated {
        text.push_str(&format!(
            "\n[Showing {} of {total} matches, newest first. Use a more specific pattern or path \
             (or a larger limit) to see the others.]",
            shown.len()
        ));
    }
    let (text, spill) = budget::fit_text(
        &text,
        shared.limit.max_bytes,
        shared.workspace.session_dir(),
        &format!("glob-{}", context.tool_use_id),
    );
    ToolOutput::with_response(
        text,
        json!({
            "filenames": shown,
            "num_files": total,
            "truncated": truncated,
            "duration_ms": started.elapsed().as_millis() as u64,
            "output_file": spill,
        }),
    )
}

/// Splits a pattern into its leading literal directories and the glob part: `src/app/**/*.ts` →
/// (`src/app`, `**/*.ts`). A pattern without glob characters becomes (parent, file name).
fn split_literal_prefix(pattern: &str) -> (String, String) {
    let is_glob = |c: &str| c.contains(['*', '?', '[', '{', '\\']);
    let absolute = pattern.starts_with('/');
    let parts: Vec<&str> = pattern.split('/').filter(|p| !p.is_empty()).collect();
    let literal = parts.iter().take_while(|p| !is_glob(p)).count();
    let literal = if literal == parts.len() {
        literal.saturating_sub(1)
    } else {
        literal
    };
    let mut prefix = parts[..literal].join("/");
    if absolute {
        prefix.insert(0, '/');
    }
    (prefix, parts[literal..].join("/"))
}

#[cfg(test)]
mod tests {
    use super::split_literal_prefix;

    #[test]
    fn literal_prefix() {
        assert_eq!(
            split_literal_prefix("src/app/**/*.ts"),
            ("src/app".into(), "**/*.ts".into())
        );
        assert_eq!(
            split_literal_prefix("**/*.rs"),
            ("".into(), "**/*.rs".into())
        );
        assert_eq!(
            split_literal_prefix("/abs/dir/*.md"),
            ("/abs/dir".into(), "*.md".into())
        );
        assert_eq!(
            split_literal_prefix("docs/README.md"),
            ("docs".into(), "README.md".into())
        );
    }
}
