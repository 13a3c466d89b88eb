//! `MultiEdit`: several exact string replacements in one file, in one call, all or none.
//!
//! The edits apply in order, each to the text the previous one left, with `Edit`'s rules
//! (unique match unless `replace_all`, CRLF-aware). If any edit fails the file is not touched
//! and the error names the edit; otherwise the result is written once, atomically. A first edit
//! with an empty `old_string` creates a missing file (or fills an empty one) with its
//! `new_string`, as in Claude Code.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{json, Value};

use super::diff;
use super::edit::{read_text, replace};
use super::schema::{Field, Input, InputSchema, Kind};
use super::workspace::Access;
use super::{blocking, Builtins, Shared};
use crate::tools::{Tool, ToolContext, ToolOutput};

const EDIT_FIELDS: &[Field] = &[
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
        description: "The text to replace it with",
    },
    Field {
        name: "replace_all",
        aliases: &["replaceAll"],
        kind: Kind::Boolean,
        required: false,
        description: "Replace all occurrences of old_string (default false)",
    },
];

const SCHEMA: InputSchema = InputSchema {
    tool: "MultiEdit",
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
            name: "edits",
            aliases: &[],
            kind: Kind::ObjectArray(EDIT_FIELDS),
            required: true,
            description: "Edits to apply in order, each to the result of the previous one",
        },
    ],
};

const DESCRIPTION: &str = "Makes several exact string replacements in one file in one call.\n\
\n\
- Each edit works like Edit (`old_string` must match exactly and once, unless `replace_all`), \
applied in order to the text the previous edit produced.\n\
- All or nothing: if any edit fails, the file is left unchanged and the error says which edit.\n\
- To create a file, give a new path and a first edit with an empty `old_string`.\n\
- The write is atomic and keeps the file's permissions.";

blocking_file_tool!(
    /// The `MultiEdit` tool.
    MultiEditTool, name = "MultiEdit", read_only = false, run = multi_edit
);

fn multi_edit(shared: &Shared, input: &Input, context: &ToolContext) -> ToolOutput {
    let raw = input.string("file_path");
    let edits: Vec<Value> = input
        .0
        .get("edits")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let resolved = match shared.workspace.resolve(&context.cwd, &raw, Access::Write) {
        Ok(resolved) => resolved,
        Err(message) => return ToolOutput::error(message),
    };
    let shown = resolved.display.display().to_string();
    let existing = match read_text(shared, &resolved.real, &shown, "MultiEdit") {
        Ok(existing) => existing,
        Err(message) => return ToolOutput::error(message),
    };
    let original = existing.clone().unwrap_or_default();
    let total = edits.len();
    let mut content = original.clone();
    let mut replacements = 0;
    let mut first_line: Option<usize> = None;
    for (index, edit) in edits.iter().enumerate() {
        let old_string = edit["old_string"].as_str().unwrap_or_default();
        let new_string = edit["new_string"].as_str().unwrap_or_default();
        let replace_all = edit["replace_all"].as_bool().unwrap_or(false);
        let failed = |message: String| {
            ToolOutput::error(format!(
                "Edit {} of {total} failed, so no edit was applied and {shown} is unchanged: \
                 {message}",
                index + 1
            ))
        };
        if old_string.is_empty() {
            if index == 0 && content.is_empty() {
                content = new_string.to_string();
                replacements += 1;
                first_line.get_or_insert(1);
                continue;
            }
            return failed(
                "old_string is empty; only the first edit of a new or empty file may have an \
                 empty old_string"
                    .into(),
            );
        }
        if existing.is_none() && index == 0 {
            return failed(format!(
                "file does not exist: {shown}. To create it, make the first edit's old_string \
                 empty"
            ));
        }
        match replace(&content, old_string, new_string, replace_all, &shown) {
            Ok(replaced) => {
                content = replaced.content;
                replacements += replaced.count;
                first_line = Some(
                    first_line.map_or(replaced.first_line, |line| line.min(replaced.first_line)),
                );
            }
            Err(message) => return failed(message),
        }
    }
    if let Err(err) = shared.write_text_file(&resolved.real, &content) {
        return ToolOutput::error(format!("Cannot write {shown}: {err}"));
    }
    let created = existing.is_none();
    let message = if created {
        format!(
            "Created {shown} ({} bytes) with {total} edits.",
            content.len()
        )
    } else {
        format!(
            "Applied {total} edit{} to {shown} ({replacements} replacement{}).",
            if total == 1 { "" } else { "s" },
            if replacements == 1 { "" } else { "s" }
        )
    };
    ToolOutput::with_response(
        message,
        json!({
            "file_path": shown,
            "edits": edits,
            "replacements": replacements,
            "first_changed_line": first_line.unwrap_or(1),
            "created": created,
            "structured_patch": diff::hunks_json(&original, &content),
        }),
    )
}
