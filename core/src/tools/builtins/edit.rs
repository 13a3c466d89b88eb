//! `Edit`: exact string replacement in a text file, unique unless `replace_all`, atomic, and
//! line-ending aware (a model's `\n` strings match a CRLF file, and the file stays CRLF).

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{json, Value};

use super::diff;
use super::fsutil::{self, LineEnding, SNIFF_BYTES};
use super::schema::{Field, Input, InputSchema, Kind};
use super::workspace::Access;
use super::{blocking, Builtins, Shared};
use crate::tools::{Tool, ToolContext, ToolOutput};

const SCHEMA: InputSchema = InputSchema {
    tool: "Edit",
    fields: &[
        Field {
            name: "file_path",
            aliases: &["filePath", "path"],
            kind: Kind::String,
            required: true,
            description: "The absolute path to the file to modify (relative paths resolve against \
                          the working directory)",
        },
        Field {
            name: "old_string",
            aliases: &["oldString"],
            kind: Kind::String,
            required: true,
            description: "The text to replace",
        },
        Field {
            name: "new_string",
            aliases: &["newString"],
            kind: Kind::String,
            required: true,
            description: "The text to replace it with (must be different from old_string)",
        },
        Field {
            name: "replace_all",
            aliases: &["replaceAll"],
            kind: Kind::Boolean,
            required: false,
            description: "Replace all occurrences of old_string (default false)",
        },
    ],
};

const DESCRIPTION: &str = "Performs an exact string replacement in a file.\n\
\n\
- `old_string` must match the file exactly, including indentation; copy it from Read's output \
without the line-number prefix (number + tab).\n\
- The edit fails if `old_string` occurs more than once, unless `replace_all` is true: add \
surrounding lines to make it unique, or set `replace_all` to change every occurrence (e.g. to \
rename a variable).\n\
- An empty `old_string` creates a new file, or fills an empty one, with `new_string`.\n\
- Files with CRLF line endings keep them; write `old_string`/`new_string` with plain newlines.\n\
- The write is atomic and keeps the file's permissions.";

blocking_file_tool!(
    /// The `Edit` tool.
    EditTool, name = "Edit", read_only = false, run = edit
);

fn edit(shared: &Shared, input: &Input, context: &ToolContext) -> ToolOutput {
    let raw = input.string("file_path");
    let old_string = input.string("old_string");
    let new_string = input.string("new_string");
    let replace_all = input.bool("replace_all").unwrap_or(false);
    let resolved = match shared.workspace.resolve(&context.cwd, &raw, Access::Write) {
        Ok(resolved) => resolved,
        Err(message) => return ToolOutput::error(message),
    };
    let shown = resolved.display.display().to_string();
    if old_string == new_string {
        return ToolOutput::error(
            "No changes to make: old_string and new_string are exactly the same.",
        );
    }
    let content = match read_text(shared, &resolved.real, &shown, "Edit") {
        Ok(content) => content,
        Err(message) => return ToolOutput::error(message),
    };
    let Some(content) = content else {
        if old_string.is_empty() {
            return save(
                shared,
                &shown,
                &resolved.real,
                "",
                new_string,
                0,
                1,
                replace_all,
                false,
            );
        }
        return ToolOutput::error(format!(
            "File does not exist: {shown}. Create it with Write, or with Edit and an empty \
             old_string."
        ));
    };
    if old_string.is_empty() {
        if content.is_empty() {
            return save(
                shared,
                &shown,
                &resolved.real,
                "",
                new_string,
                1,
                1,
                replace_all,
                true,
            );
        }
        return ToolOutput::error(format!(
            "old_string is empty, but {shown} is not empty. Give the exact text to replace, or \
             use Write to replace the whole file."
        ));
    }

    match replace(&content, &old_string, &new_string, replace_all, &shown) {
        Ok(replaced) => save(
            shared,
            &shown,
            &resolved.real,
            &content,
            replaced.content,
            replaced.count,
            replaced.first_line,
            replace_all,
            true,
        ),
        Err(message) => ToolOutput::error(message),
    }
}

/// The text of a file an editing tool (`tool`) is about to change: `Ok(None)` when it does not
/// exist; an error for a directory, an unreadable, binary or non-UTF-8 file.
pub(super) fn read_text(
    shared: &Shared,
    real: &std::path::Path,
    shown: &str,
    tool: &str,
) -> Result<Option<String>, String> {
    let bytes = match shared.read_file(real) {
        Ok(bytes) => bytes,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(_) if real.is_dir() => {
            return Err(format!("{shown} is a directory; {tool} changes files."))
        }
        Err(err) => return Err(format!("Cannot read {shown}: {err}")),
    };
    if fsutil::looks_binary(&bytes[..bytes.len().min(SNIFF_BYTES)]) {
        return Err(format!(
            "{shown} looks like a binary file; {tool} only changes text files."
        ));
    }
    String::from_utf8(bytes).map(Some).map_err(|_| {
        format!(
            "{shown} is not valid UTF-8 text, so {tool} cannot change it safely. Use Write to \
             replace it, or Bash for byte-level edits."
        )
    })
}

/// The result of one replacement in a file's text.
pub(super) struct Replaced {
    /// The text after the replacement.
    pub content: String,
    /// Occurrences replaced.
    pub count: usize,
    /// 1-based line of the first change.
    pub first_line: usize,
}

/// Replaces `old_string` (non-empty) in `content`: exactly once unless `replace_all`, matching a
/// model's `\n` text against a CRLF file and keeping the file's CRLF endings. Errors say why
/// nothing matched (or too much did) and how to fix the call; `shown` names the file in them.
pub(super) fn replace(
    content: &str,
    old_string: &str,
    new_string: &str,
    replace_all: bool,
    shown: &str,
) -> Result<Replaced, String> {
    if old_string == new_string {
        return Err("No changes to make: old_string and new_string are exactly the same.".into());
    }
    // Match as given first; for a CRLF file also try the model's LF text with CRLF endings.
    let ending = LineEnding::detect(content);
    let mut needle = old_string.to_string();
    let mut count = content.matches(needle.as_str()).count();
    if count == 0 && ending == LineEnding::CrLf && old_string.contains('\n') {
        let converted = fsutil::lf_to_crlf(old_string);
        let converted_count = content.matches(converted.as_str()).count();
        if converted_count > 0 {
            needle = converted;
            count = converted_count;
        }
    }
    if count == 0 {
        return Err(not_found_message(shown, content, old_string));
    }
    let replacement = if ending == LineEnding::CrLf {
        fsutil::lf_to_crlf(new_string)
    } else {
        new_string.to_string()
    };
    let positions: Vec<usize> = content
        .match_indices(needle.as_str())
        .map(|(i, _)| i)
        .collect();
    if count > 1 && !replace_all {
        let lines: Vec<String> = positions
            .iter()
            .take(10)
            .map(|&at| fsutil::line_of(content, at).to_string())
            .collect();
        return Err(format!(
            "Found {count} matches of old_string in {shown} (at lines {}{}). Add surrounding \
             lines to old_string so it matches exactly one place, or set replace_all to true to \
             replace every occurrence.",
            lines.join(", "),
            if count > 10 { ", …" } else { "" }
        ));
    }
    let first_line = positions
        .first()
        .map(|&at| fsutil::line_of(content, at))
        .unwrap_or(1);
    let content = if replace_all {
        content.replace(needle.as_str(), &replacement)
    } else {
        content.replacen(needle.as_str(), &replacement, 1)
    };
    Ok(Replaced {
        content,
        count,
        first_line,
    })
}

#[allow(clippy::too_many_arguments)]
fn save(
    shared: &Shared,
    shown: &str,
    real: &std::path::Path,
    old: &str,
    new: String,
    replacements: usize,
    first_line: usize,
    replace_all: bool,
    existed: bool,
) -> ToolOutput {
    if let Err(err) = shared.write_text_file(real, &new) {
        return ToolOutput::error(format!("Cannot write {shown}: {err}"));
    }
    let message = if !existed {
        format!("Created {shown} ({} bytes).", new.len())
    } else if old.is_empty() {
        format!("Wrote {} bytes into the empty file {shown}.", new.len())
    } else {
        format!(
            "Edited {shown}: replaced {replacements} occurrence{} (first change at line \
             {first_line}).",
            if replacements == 1 { "" } else { "s" }
        )
    };
    ToolOutput::with_response(
        message,
        json!({
            "file_path": shown,
            "replacements": replacements,
            "first_changed_line": first_line,
            "replace_all": replace_all,
            "created": !existed,
            "structured_patch": diff::hunks_json(old, &new),
        }),
    )
}

/// Why old_string did not match, with the most likely fix.
fn not_found_message(shown: &str, content: &str, old_string: &str) -> String {
    let mut message = format!("old_string was not found in {shown}.");
    let looks_numbered = old_string.lines().next().is_some_and(|line| {
        let trimmed = line.trim_start();
        let digits = trimmed.bytes().take_while(u8::is_ascii_digit).count();
        digits > 0 && trimmed[digits..].starts_with('\t')
    });
    if looks_numbered {
        message.push_str(
            " It seems to start with a line-number prefix from Read's output (number + tab); \
             remove the prefixes and keep only the file's text.",
        );
    } else if squash(content).contains(&squash(old_string)) {
        message.push_str(
            " The text exists when whitespace is ignored: check indentation (tabs versus \
             spaces), trailing spaces and line breaks, and copy the text exactly from a fresh \
             Read.",
        );
    } else {
        message.push_str(
            " The file may have changed since you read it: Read it again and copy the exact \
             current text (including indentation).",
        );
    }
    message
}

fn squash(text: &str) -> String {
    text.chars().filter(|c| !c.is_whitespace()).collect()
}
