//! `Write`: creates or replaces a file atomically inside the workspace.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{json, Value};

use super::diff;
use super::schema::{Field, Input, InputSchema, Kind};
use super::workspace::Access;
use super::{blocking, Builtins, Shared};
use crate::tools::{Tool, ToolContext, ToolOutput};

/// Old files up to this size get a structured diff in the response; bigger ones are not diffed
/// (the cost would be paid on every write of a large generated file).
const DIFF_MAX_BYTES: u64 = 1024 * 1024;

const SCHEMA: InputSchema = InputSchema {
    tool: "Write",
    fields: &[
        Field {
            name: "file_path",
            aliases: &["filePath", "path"],
            kind: Kind::String,
            required: true,
            description: "The absolute path to the file to write (relative paths resolve against \
                          the working directory)",
        },
        Field {
            name: "content",
            aliases: &[],
            kind: Kind::String,
            required: true,
            description: "The content to write to the file",
        },
    ],
};

const DESCRIPTION: &str = "Writes a file in the workspace, replacing it if it exists and creating \
missing parent directories. The write is atomic: readers see the old or the new file, never a \
partial one, and an existing file keeps its permissions.\n\
\n\
- Prefer Edit for changing part of an existing file; Write sends the whole content.\n\
- Read an existing file before overwriting it so nothing is lost by accident.\n\
- Paths outside the workspace are refused.";

blocking_file_tool!(
    /// The `Write` tool.
    WriteTool, name = "Write", read_only = false, run = write
);

fn write(shared: &Shared, input: &Input, context: &ToolContext) -> ToolOutput {
    let raw = input.string("file_path");
    let content = input.string("content");
    let resolved = match shared.workspace.resolve(&context.cwd, &raw, Access::Write) {
        Ok(resolved) => resolved,
        Err(message) => return ToolOutput::error(message),
    };
    let shown = resolved.display.display().to_string();
    if resolved.real.is_dir() {
        return ToolOutput::error(format!(
            "{shown} is a directory; give the path of a file inside it."
        ));
    }
    let old = match shared.host_text(&resolved.real) {
        Ok(Some(text)) => Some(text).filter(|t| t.len() as u64 <= DIFF_MAX_BYTES),
        _ => std::fs::metadata(&resolved.real)
            .ok()
            .filter(|m| m.len() <= DIFF_MAX_BYTES)
            .and_then(|_| std::fs::read(&resolved.real).ok())
            .and_then(|bytes| String::from_utf8(bytes).ok()),
    };
    let existed = match shared.write_text_file(&resolved.real, &content) {
        Ok(existed) => existed,
        Err(err) => return ToolOutput::error(format!("Cannot write {shown}: {err}")),
    };
    let lines = content.lines().count();
    let message = format!(
        "{} {shown} ({lines} line{}, {} bytes).",
        if existed { "Updated" } else { "Created" },
        if lines == 1 { "" } else { "s" },
        content.len()
    );
    let patch = match (&old, existed) {
        (Some(old), true) => diff::hunks_json(old, &content),
        (None, false) => diff::hunks_json("", &content),
        _ => Value::Null,
    };
    ToolOutput::with_response(
        message,
        json!({
            "type": if existed { "update" } else { "create" },
            "file_path": shown,
            "bytes": content.len(),
            "lines": lines,
            "structured_patch": patch,
        }),
    )
}
