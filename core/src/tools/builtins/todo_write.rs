//! `TodoWrite`: the agent's task list, as in Claude Code. Each call replaces the whole list
//! (`todos: [{content, status, activeForm}]`); the session reports the new list to hosts as a
//! `todo_update` event so they can show progress. The list lives with the session's tools (a
//! subagent sharing them shares the list) and touches no file.

use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::schema::{Field, InputSchema, Kind};
use super::Builtins;
use crate::tools::{Tool, ToolContext, ToolOutput};

/// Where a task stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    /// Not started.
    Pending,
    /// Being worked on (Claude Code keeps one at a time).
    InProgress,
    /// Done.
    Completed,
}

/// One task of the list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TodoItem {
    /// What to do, in the imperative ("Run the tests").
    pub content: String,
    /// Where it stands.
    pub status: TodoStatus,
    /// The same in the present continuous, shown while it is in progress ("Running the tests").
    #[serde(default, alias = "activeForm")]
    pub active_form: String,
}

const ITEM_FIELDS: &[Field] = &[
    Field {
        name: "content",
        aliases: &[],
        kind: Kind::String,
        required: true,
        description: "The task, in the imperative (\"Run the tests\")",
    },
    Field {
        name: "status",
        aliases: &[],
        kind: Kind::Enum(&["pending", "in_progress", "completed"]),
        required: true,
        description: "pending, in_progress or completed",
    },
    Field {
        name: "activeForm",
        aliases: &["active_form"],
        kind: Kind::String,
        required: true,
        description: "The task in the present continuous, shown while it runs (\"Running the \
                      tests\")",
    },
    // Older Claude Code lists carried these; accepted and ignored.
    Field {
        name: "id",
        aliases: &[],
        kind: Kind::String,
        required: false,
        description: "An optional identifier",
    },
    Field {
        name: "priority",
        aliases: &[],
        kind: Kind::Enum(&["high", "medium", "low"]),
        required: false,
        description: "An optional priority",
    },
];

const SCHEMA: InputSchema = InputSchema {
    tool: "TodoWrite",
    fields: &[Field {
        name: "todos",
        aliases: &[],
        kind: Kind::ObjectArray(ITEM_FIELDS),
        required: true,
        description: "The updated todo list (the whole list, replacing the previous one)",
    }],
};

const DESCRIPTION: &str = "Creates and updates the task list for the current work, so you and \
the user can follow progress.\n\
\n\
- Use it for work of three or more steps, or when the user gives several tasks; skip it for a \
single trivial step.\n\
- Send the whole list each time. Keep exactly one task `in_progress` while working, mark a task \
`completed` as soon as it is done (not in batches), and add tasks you discover.\n\
- `content` is the imperative form (\"Run the tests\"), `activeForm` the present continuous \
(\"Running the tests\").";

/// The `TodoWrite` tool.
pub struct TodoWriteTool {
    todos: Arc<Mutex<Vec<TodoItem>>>,
}

impl TodoWriteTool {
    /// A TodoWrite tool sharing the task list of `builtins`.
    pub fn new(builtins: &Builtins) -> Self {
        TodoWriteTool {
            todos: Arc::clone(&builtins.shared.todos),
        }
    }
}

#[async_trait]
impl Tool for TodoWriteTool {
    fn name(&self) -> &str {
        "TodoWrite"
    }

    fn description(&self) -> &str {
        DESCRIPTION
    }

    fn input_schema(&self) -> Value {
        SCHEMA.json_schema()
    }

    async fn execute(&self, input: Value, _context: ToolContext) -> ToolOutput {
        let input = match SCHEMA.validate(input) {
            Ok(map) => map,
            Err(message) => return ToolOutput::error(message),
        };
        let new: Vec<TodoItem> =
            match serde_json::from_value(input.get("todos").cloned().unwrap_or_default()) {
                Ok(todos) => todos,
                Err(err) => return ToolOutput::error(format!("Invalid todo list: {err}")),
            };
        let old = std::mem::replace(
            &mut *self.todos.lock().unwrap_or_else(PoisonError::into_inner),
            new.clone(),
        );
        let done = new
            .iter()
            .filter(|t| t.status == TodoStatus::Completed)
            .count();
        ToolOutput::with_response(
            format!(
                "Todos have been modified successfully ({done} of {} completed). Ensure that you \
                 continue to use the todo list to track your progress. Please proceed with the \
                 current tasks if applicable.",
                new.len()
            ),
            json!({ "oldTodos": wire(&old), "newTodos": wire(&new) }),
        )
    }
}

/// Claude Code's field names in the structured result (`activeForm`).
fn wire(todos: &[TodoItem]) -> Value {
    Value::Array(
        todos
            .iter()
            .map(|t| json!({"content": t.content, "status": t.status, "activeForm": t.active_form}))
            .collect(),
    )
}

/// The new list a successful TodoWrite result carries (its `newTodos`), for the session's
/// `todo_update` event; `None` for any other result.
pub fn todos_from_response(response: &Value) -> Option<Vec<TodoItem>> {
    serde_json::from_value(response.get("newTodos")?.clone()).ok()
}
