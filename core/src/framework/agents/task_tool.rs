//! `Task`: the model starts a subagent, with Claude Code's tool name and input (`description`,
//! `prompt`, `subagent_type`, optional `model` and `run_in_background`). In the foreground the
//! tool result is the subagent's report; in the background the subagent becomes a task of the
//! session's background task manager (kind `agent`) and the result is its task id at once, its
//! report readable with `BashOutput` and `/background log`, and `KillShell` or `/background
//! cancel` stopping it. Subagents never get this tool (no recursion), and it goes through the
//! permission layer like any tool (`Task(Explore)` rules match the agent type).

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{json, Value};

use super::runner::SubagentRequest;
use crate::framework::commands::CommandHostContext;
use crate::tools::builtins::TaskOrigin;
use crate::tools::{Tool, ToolContext, ToolOutput};

/// The tool's name (Claude Code's).
pub const TASK_TOOL_NAME: &str = "Task";

/// `Task`: runs a subagent for the model (see the module docs).
pub struct TaskTool {
    ctx: Arc<dyn CommandHostContext>,
}

impl std::fmt::Debug for TaskTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskTool").finish_non_exhaustive()
    }
}

impl TaskTool {
    /// The tool, running subagents through `ctx` (the model's command host).
    pub fn new(ctx: Arc<dyn CommandHostContext>) -> Self {
        TaskTool { ctx }
    }
}

/// A string field of `input`: absent or null is `None`, another type is an error.
fn optional_text<'a>(input: &'a Value, key: &str) -> Result<Option<&'a str>, String> {
    match input.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text.trim()).filter(|t| !t.is_empty())),
        Some(other) => Err(format!("`{key}` must be a string, got {other}")),
    }
}

/// The request `input` asks for, and whether it runs in the background.
fn parse_input(input: &Value) -> Result<(SubagentRequest, bool), String> {
    let prompt = optional_text(input, "prompt")?
        .ok_or("`prompt` must say what the subagent should do (a non-empty string)")?;
    let background = match input.get("run_in_background") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(flag)) => *flag,
        Some(other) => {
            return Err(format!(
                "`run_in_background` must be a boolean, got {other}"
            ))
        }
    };
    optional_text(input, "description")?;
    Ok((
        SubagentRequest {
            agent_type: optional_text(input, "subagent_type")?.map(str::to_string),
            prompt: prompt.to_string(),
            isolation: Default::default(),
            model: optional_text(input, "model")?.map(str::to_string),
            fork_worker: false,
            parent_tool_use_id: None,
        },
        background,
    ))
}

#[async_trait]
impl Tool for TaskTool {
    fn name(&self) -> &str {
        TASK_TOOL_NAME
    }

    fn description(&self) -> &str {
        "Launch a subagent to handle a complex, multi-step task on its own: it works with its own \
         context and tools and returns only its final report, which keeps your context small. \
         The agent types are listed under \"Subagents\" in the system prompt. Give it a \
         complete, specific prompt; it cannot ask you questions. Set `run_in_background` to \
         start it and go on working: you get a task id at once, read its report with \
         BashOutput (bash_id: the task id) once it finishes, stop it with KillShell. Several \
         background subagents started in one message run in parallel."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "description": {
                    "type": "string",
                    "description": "A short (3-5 word) description of the task."
                },
                "prompt": {
                    "type": "string",
                    "description": "The task for the subagent to perform."
                },
                "subagent_type": {
                    "type": "string",
                    "description": "The type of agent to use (default general-purpose)."
                },
                "model": {
                    "type": "string",
                    "description": "Optional model for this subagent: sonnet, opus, haiku, \
                                    inherit or a model id (default: the agent's own)."
                },
                "run_in_background": {
                    "type": "boolean",
                    "description": "Run the subagent in the background and return its task \
                                    id at once."
                }
            },
            "required": ["description", "prompt", "subagent_type"],
            "additionalProperties": false
        })
    }

    async fn execute(&self, input: Value, context: ToolContext) -> ToolOutput {
        let (mut request, background) = match parse_input(&input) {
            Ok(parsed) => parsed,
            Err(message) => return ToolOutput::error(message),
        };
        request.parent_tool_use_id = Some(context.tool_use_id.clone());
        let description = optional_text(&input, "description")
            .ok()
            .flatten()
            .map(str::to_string);
        if background {
            let origin = TaskOrigin::tool(TASK_TOOL_NAME, &context.tool_use_id);
            return match self
                .ctx
                .start_background_subagent(request, description, origin)
                .await
            {
                Ok(task) => ToolOutput {
                    content: format!(
                        "Started subagent task {id} in the background ({command}). It runs \
                         while you go on; read its report with BashOutput (bash_id: \"{id}\") \
                         once it has finished, or stop it with KillShell.",
                        id = task.id,
                        command = task.command
                    ),
                    is_error: false,
                    response: json!({ "task_id": task.id, "task": task }),
                },
                Err(error) => ToolOutput::error(error.message),
            };
        }
        match self.ctx.run_subagent(request).await {
            Ok(report) => {
                let failed = report.interrupted || report.error.is_some();
                ToolOutput {
                    content: report.message(),
                    is_error: failed,
                    response: serde_json::to_value(&report).unwrap_or(Value::Null),
                }
            }
            Err(error) => ToolOutput::error(error.message),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_is_checked() {
        let (request, background) = parse_input(&json!({
            "description": "find tests",
            "prompt": "find the tests",
            "subagent_type": "Explore",
            "model": "haiku",
            "run_in_background": true
        }))
        .expect("valid input");
        assert!(background);
        assert_eq!(request.agent_type.as_deref(), Some("Explore"));
        assert_eq!(request.model.as_deref(), Some("haiku"));
        assert!(parse_input(&json!({"prompt": "  "})).is_err());
        assert!(parse_input(&json!({"prompt": "x", "run_in_background": "yes"})).is_err());
        assert!(parse_input(&json!({"prompt": "x", "subagent_type": 3})).is_err());
    }
}
