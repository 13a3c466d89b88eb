//! `NotebookEdit`: replaces, inserts or deletes one cell of a Jupyter notebook (`.ipynb`), with
//! Claude Code's input fields (`notebook_path`, `cell_id`, `new_source`, `cell_type`,
//! `edit_mode`).
//!
//! - `cell_id` is a cell's `id` (nbformat 4.5+); `cell-N` or `N` (0-based position) also work,
//!   for notebooks whose cells have no ids.
//! - `replace` (default) sets the cell's source (and its type, when `cell_type` is given); a code
//!   cell's outputs and execution count are cleared, since they belong to the old source.
//! - `insert` adds a cell of `cell_type` (required) after `cell_id`, or first when `cell_id` is
//!   omitted; it gets a fresh id when the notebook's format has ids.
//! - `delete` removes the cell.
//!
//! The notebook is written back atomically as nbformat writes it (sorted keys, one-space indent,
//! newline at the end); a source is stored as a list of lines when the notebook stores them so.

use std::sync::Arc;

use async_trait::async_trait;
use serde::Serialize;
use serde_json::{json, Map, Value};

use super::fsutil;
use super::schema::{Field, Input, InputSchema, Kind};
use super::workspace::Access;
use super::{blocking, Builtins, Shared};
use crate::tools::{Tool, ToolContext, ToolOutput};

const SCHEMA: InputSchema = InputSchema {
    tool: "NotebookEdit",
    fields: &[
        Field {
            name: "notebook_path",
            aliases: &["notebookPath", "file_path", "path"],
            kind: Kind::String,
            required: true,
            description: "The absolute path to the Jupyter notebook (.ipynb) to edit (relative \
                          paths resolve against the working directory)",
        },
        Field {
            name: "cell_id",
            aliases: &["cellId"],
            kind: Kind::String,
            required: false,
            description: "The ID of the cell to edit. When inserting, the new cell goes after \
                          this cell, or at the beginning if omitted",
        },
        Field {
            name: "new_source",
            aliases: &["newSource"],
            kind: Kind::String,
            required: true,
            description: "The new source for the cell",
        },
        Field {
            name: "cell_type",
            aliases: &["cellType"],
            kind: Kind::Enum(&["code", "markdown"]),
            required: false,
            description: "The type of the cell (code or markdown). Required for insert; for \
                          replace it changes the cell's type",
        },
        Field {
            name: "edit_mode",
            aliases: &["editMode"],
            kind: Kind::Enum(&["replace", "insert", "delete"]),
            required: false,
            description: "The type of edit to make (replace, insert, delete). Defaults to replace",
        },
    ],
};

const DESCRIPTION: &str = "Replaces the source of one cell of a Jupyter notebook (.ipynb), \
inserts a new cell, or deletes a cell.\n\
\n\
- `cell_id` is the cell's id as shown when reading the notebook (`cell-N`, the 0-based position, \
also works).\n\
- `edit_mode: \"insert\"` adds a cell of `cell_type` after `cell_id` (at the start without \
`cell_id`); `\"delete\"` removes the cell (`new_source` is then ignored).\n\
- Replacing a code cell clears its outputs and execution count.";

blocking_file_tool!(
    /// The `NotebookEdit` tool.
    NotebookEditTool, name = "NotebookEdit", read_only = false, run = notebook_edit
);

fn notebook_edit(shared: &Shared, input: &Input, context: &ToolContext) -> ToolOutput {
    let raw = input.string("notebook_path");
    let resolved = match shared.workspace.resolve(&context.cwd, &raw, Access::Write) {
        Ok(resolved) => resolved,
        Err(message) => return ToolOutput::error(message),
    };
    let shown = resolved.display.display().to_string();
    if resolved
        .real
        .extension()
        .is_none_or(|ext| !ext.eq_ignore_ascii_case("ipynb"))
    {
        return ToolOutput::error(format!(
            "{shown} is not a Jupyter notebook (.ipynb); use Edit for other files."
        ));
    }
    let text = match std::fs::read_to_string(&resolved.real) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            return ToolOutput::error(format!(
                "Notebook does not exist: {shown}. Create it with Write first."
            ))
        }
        Err(err) => return ToolOutput::error(format!("Cannot read {shown}: {err}")),
    };
    let mut notebook: Value = match serde_json::from_str(&text) {
        Ok(value) => value,
        Err(err) => {
            return ToolOutput::error(format!(
                "{shown} is not valid notebook JSON ({err}); fix it with Edit or Write."
            ))
        }
    };
    let edit = CellEdit {
        cell_id: input.str("cell_id").map(str::to_string),
        new_source: input.string("new_source"),
        cell_type: input.str("cell_type").map(str::to_string),
        mode: input.str("edit_mode").unwrap_or("replace").to_string(),
    };
    let done = match apply(&mut notebook, &edit) {
        Ok(done) => done,
        Err(message) => return ToolOutput::error(format!("{shown}: {message}")),
    };
    let mut bytes = Vec::new();
    let formatter = serde_json::ser::PrettyFormatter::with_indent(b" ");
    let mut serializer = serde_json::Serializer::with_formatter(&mut bytes, formatter);
    if let Err(err) = notebook.serialize(&mut serializer) {
        return ToolOutput::error(format!("Cannot encode {shown}: {err}"));
    }
    bytes.push(b'\n');
    if let Err(err) = fsutil::atomic_write(&resolved.real, &bytes) {
        return ToolOutput::error(format!("Cannot write {shown}: {err}"));
    }
    let message = match edit.mode.as_str() {
        "insert" => format!(
            "Inserted {} cell {} at position {} of {shown}.",
            done.cell_type, done.cell_id, done.index
        ),
        "delete" => format!("Deleted cell {} from {shown}.", done.cell_id),
        _ => format!(
            "Updated cell {} ({}) of {shown}.",
            done.cell_id, done.cell_type
        ),
    };
    ToolOutput::with_response(
        message,
        json!({
            "notebook_path": shown,
            "cell_id": done.cell_id,
            "cell_type": done.cell_type,
            "edit_mode": edit.mode,
            "new_source": edit.new_source,
            "cell_index": done.index,
        }),
    )
}

/// What the model asked for.
struct CellEdit {
    cell_id: Option<String>,
    new_source: String,
    cell_type: Option<String>,
    mode: String,
}

/// The cell that was edited, inserted or deleted.
struct Done {
    cell_id: String,
    cell_type: String,
    index: usize,
}

/// Applies `edit` to a parsed notebook.
fn apply(notebook: &mut Value, edit: &CellEdit) -> Result<Done, String> {
    let has_ids = notebook_has_ids(notebook);
    let Some(cells) = notebook.get_mut("cells").and_then(Value::as_array_mut) else {
        return Err("the notebook has no `cells` list; it is not an nbformat 4 notebook".into());
    };
    let lines_style = cells
        .iter()
        .any(|cell| cell.get("source").is_some_and(Value::is_array));
    let source = if lines_style {
        Value::Array(
            edit.new_source
                .split_inclusive('\n')
                .map(|line| Value::String(line.to_string()))
                .collect(),
        )
    } else {
        Value::String(edit.new_source.clone())
    };
    let found = match &edit.cell_id {
        Some(id) => Some(find_cell(cells, id)?),
        None => None,
    };
    match edit.mode.as_str() {
        "insert" => {
            let cell_type = edit.cell_type.clone().ok_or(
                "`cell_type` (\"code\" or \"markdown\") is required when inserting a cell",
            )?;
            let index = found.map_or(0, |i| i + 1);
            let id = has_ids.then(|| new_cell_id(cells));
            let mut cell = Map::new();
            cell.insert("cell_type".into(), cell_type.clone().into());
            if let Some(id) = &id {
                cell.insert("id".into(), id.clone().into());
            }
            cell.insert("metadata".into(), json!({}));
            cell.insert("source".into(), source);
            if cell_type == "code" {
                cell.insert("execution_count".into(), Value::Null);
                cell.insert("outputs".into(), json!([]));
            }
            cells.insert(index, Value::Object(cell));
            Ok(Done {
                cell_id: id.unwrap_or_else(|| format!("cell-{index}")),
                cell_type,
                index,
            })
        }
        "delete" => {
            let index = found.ok_or("`cell_id` is required to delete a cell")?;
            let cell = cells.remove(index);
            Ok(Done {
                cell_id: shown_id(&cell, index),
                cell_type: cell_type_of(&cell),
                index,
            })
        }
        _ => {
            let index = found.ok_or(
                "`cell_id` is required to replace a cell (use edit_mode \"insert\" to add one)",
            )?;
            let cell = cells[index]
                .as_object_mut()
                .ok_or("that cell is not a JSON object")?;
            if let Some(cell_type) = &edit.cell_type {
                cell.insert("cell_type".into(), cell_type.clone().into());
            }
            cell.insert("source".into(), source);
            if cell.get("cell_type").and_then(Value::as_str) == Some("code") {
                // Outputs belong to the old source.
                cell.insert("execution_count".into(), Value::Null);
                cell.insert("outputs".into(), json!([]));
            } else {
                cell.remove("execution_count");
                cell.remove("outputs");
            }
            let cell = Value::Object(cell.clone());
            Ok(Done {
                cell_id: shown_id(&cell, index),
                cell_type: cell_type_of(&cell),
                index,
            })
        }
    }
}

/// Whether the notebook's cells carry ids (nbformat 4.5 and later).
fn notebook_has_ids(notebook: &Value) -> bool {
    let major = notebook
        .get("nbformat")
        .and_then(Value::as_u64)
        .unwrap_or(4);
    let minor = notebook
        .get("nbformat_minor")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    let cells_have_ids = notebook
        .get("cells")
        .and_then(Value::as_array)
        .is_some_and(|cells| cells.iter().any(|c| c.get("id").is_some()));
    cells_have_ids || major > 4 || (major == 4 && minor >= 5)
}

/// The position of the cell `id` names: its `id`, else `cell-N` / `N`.
fn find_cell(cells: &[Value], id: &str) -> Result<usize, String> {
    if let Some(index) = cells
        .iter()
        .position(|cell| cell.get("id").and_then(Value::as_str) == Some(id))
    {
        return Ok(index);
    }
    let position = id.strip_prefix("cell-").unwrap_or(id).parse::<usize>().ok();
    match position {
        Some(index) if index < cells.len() => Ok(index),
        _ => {
            let known: Vec<String> = cells
                .iter()
                .enumerate()
                .take(20)
                .map(|(i, c)| shown_id(c, i))
                .collect();
            Err(format!(
                "no cell has the id `{id}` (the notebook has {} cells: {}{})",
                cells.len(),
                known.join(", "),
                if cells.len() > 20 { ", …" } else { "" }
            ))
        }
    }
}

fn shown_id(cell: &Value, index: usize) -> String {
    cell.get("id")
        .and_then(Value::as_str)
        .map_or_else(|| format!("cell-{index}"), str::to_string)
}

fn cell_type_of(cell: &Value) -> String {
    cell.get("cell_type")
        .and_then(Value::as_str)
        .unwrap_or("code")
        .to_string()
}

/// An 8-hex-digit id no cell has yet.
fn new_cell_id(cells: &[Value]) -> String {
    loop {
        let id = format!("{:08x}", rand::random::<u32>());
        if !cells
            .iter()
            .any(|c| c.get("id").and_then(Value::as_str) == Some(id.as_str()))
        {
            return id;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn notebook() -> Value {
        json!({
            "cells": [
                {"cell_type": "markdown", "id": "intro", "metadata": {}, "source": ["# Title\n", "text"]},
                {"cell_type": "code", "id": "c1", "metadata": {}, "execution_count": 3,
                 "outputs": [{"output_type": "stream", "name": "stdout", "text": ["1\n"]}],
                 "source": ["print(1)"]}
            ],
            "metadata": {}, "nbformat": 4, "nbformat_minor": 5
        })
    }

    fn edit(id: Option<&str>, source: &str, cell_type: Option<&str>, mode: &str) -> CellEdit {
        CellEdit {
            cell_id: id.map(str::to_string),
            new_source: source.into(),
            cell_type: cell_type.map(str::to_string),
            mode: mode.into(),
        }
    }

    #[test]
    fn replace_insert_delete() {
        let mut nb = notebook();
        let done = apply(
            &mut nb,
            &edit(Some("c1"), "print(2)\nx = 1", None, "replace"),
        )
        .expect("replace");
        assert_eq!((done.cell_id.as_str(), done.index), ("c1", 1));
        assert_eq!(nb["cells"][1]["source"], json!(["print(2)\n", "x = 1"]));
        assert_eq!(nb["cells"][1]["outputs"], json!([]));
        assert_eq!(nb["cells"][1]["execution_count"], Value::Null);

        let done =
            apply(&mut nb, &edit(Some("intro"), "y", Some("code"), "insert")).expect("insert");
        assert_eq!(done.index, 1);
        assert_eq!(nb["cells"].as_array().map(Vec::len), Some(3));
        assert_eq!(nb["cells"][1]["cell_type"], "code");
        assert_eq!(nb["cells"][1]["id"].as_str().map(str::len), Some(8));

        apply(&mut nb, &edit(None, "first", Some("markdown"), "insert")).expect("insert first");
        assert_eq!(nb["cells"][0]["source"], json!(["first"]));

        apply(&mut nb, &edit(Some("cell-0"), "", None, "delete")).expect("delete by position");
        assert_eq!(nb["cells"][0]["id"], "intro");

        let missing = apply(&mut nb, &edit(Some("nope"), "x", None, "replace"))
            .err()
            .unwrap_or_default();
        assert!(missing.contains("no cell has the id `nope`"), "{missing}");
        assert!(missing.contains("intro"), "{missing}");
        let no_type = apply(&mut nb, &edit(None, "x", None, "insert"))
            .err()
            .unwrap_or_default();
        assert!(no_type.contains("cell_type"), "{no_type}");
    }
}
