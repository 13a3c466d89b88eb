//! `BackgroundProcess` (TypeScript Robota's tool, spec 000): the model starts a command as a
//! background process task of the session's manager and lists, reads and stops such tasks, in
//! one tool. Starting goes through `Bash` itself (same shell, environment, sandbox placement and
//! watchdogs), and the permission layer checks a call carrying a `command` exactly as a `Bash`
//! call with that command (`Bash(...)` rules, read-only classification, modes): a second tool
//! must never be a way around the shell's rules. Listing, reading and stopping act only on the
//! session's own tasks and need no approval, like `BashOutput` and `KillShell`.
//!
//! Registered only when [`BuiltinToolsConfig::background_process_tool`] is set (spec 000: the
//! tool exists when a host composes a process runner); `Bash` with `run_in_background` is
//! unchanged either way.
//!
//! [`BuiltinToolsConfig::background_process_tool`]: super::BuiltinToolsConfig::background_process_tool

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{json, Value};

use super::background::TaskKind;
use super::bash::BashTool;
use super::bash_output::{BashOutputTool, KillShellTool};
use super::schema::{Field, Input, InputSchema, Kind};
use super::{Builtins, Shared};
use crate::tools::{Tool, ToolContext, ToolOutput};

/// The tool's name.
pub const BACKGROUND_PROCESS_TOOL_NAME: &str = "BackgroundProcess";

const ACTIONS: &[&str] = &["start", "list", "read", "stop"];

const SCHEMA: InputSchema = InputSchema {
    tool: BACKGROUND_PROCESS_TOOL_NAME,
    fields: &[
        Field {
            name: "action",
            aliases: &[],
            kind: Kind::Enum(ACTIONS),
            required: false,
            description: "start (default when `command` is given), list, read (new output of \
                          `task_id`) or stop (`task_id`)",
        },
        Field {
            name: "command",
            aliases: &[],
            kind: Kind::String,
            required: false,
            description: "The command to start in the background (for start)",
        },
        Field {
            name: "description",
            aliases: &[],
            kind: Kind::String,
            required: false,
            description: "What the command does, in a few words",
        },
        Field {
            name: "timeout",
            aliases: &[],
            kind: Kind::Integer { min: 1 },
            required: false,
            description: "Optional limit of the whole run in milliseconds",
        },
        Field {
            name: "stdin",
            aliases: &[],
            kind: Kind::String,
            required: false,
            description: "Text written to the process's standard input once started",
        },
        Field {
            name: "task_id",
            aliases: &["taskId", "bash_id", "shell_id"],
            kind: Kind::String,
            required: false,
            description: "The task to read or stop",
        },
    ],
};

const DESCRIPTION: &str = "Starts and manages long-running commands (servers, watchers, long \
builds) as background processes of this session.\n\
- start: `command` (and optional `description`, `timeout` in ms for the whole run, `stdin`) \
starts it and returns its task id at once; the command is checked like a Bash command.\n\
- list: every background process of the session with its status.\n\
- read: the output `task_id` wrote since the last read, with its status.\n\
- stop: stops `task_id` with every process it started.";

/// The `BackgroundProcess` tool (see the module docs).
pub struct BackgroundProcessTool {
    shared: Arc<Shared>,
    bash: BashTool,
    output: BashOutputTool,
    kill: KillShellTool,
}

impl BackgroundProcessTool {
    /// The tool over the shell, sandbox and background tasks of `builtins`.
    pub fn new(builtins: &Builtins) -> Self {
        BackgroundProcessTool {
            shared: builtins.shared.clone(),
            bash: BashTool::new(builtins).with_origin(BACKGROUND_PROCESS_TOOL_NAME),
            output: BashOutputTool::new(builtins),
            kill: KillShellTool::new(builtins),
        }
    }

    async fn start(&self, input: &Input, context: ToolContext) -> ToolOutput {
        let command = input.string("command");
        let mut bash_input = json!({"command": command, "run_in_background": true});
        if let Some(description) = input.str("description") {
            bash_input["description"] = json!(description);
        }
        if let Some(timeout) = input.int("timeout") {
            bash_input["timeout"] = json!(timeout);
        }
        let started = self.bash.execute(bash_input, context).await;
        if started.is_error {
            return started;
        }
        let Some(id) = started
            .response
            .get("background_task_id")
            .and_then(Value::as_str)
            .map(str::to_string)
        else {
            return started;
        };
        let mut content = started.content;
        if let Some(stdin) = input.str("stdin") {
            if let Err(message) = self.shared.background.send(&id, stdin).await {
                content.push_str(&format!("\nIts input could not be written: {message}"));
            }
        }
        let status = self
            .shared
            .background
            .get(&id)
            .map(|t| t.status)
            .unwrap_or(super::background::TaskStatus::Running);
        ToolOutput::with_response(
            content,
            json!({
                "success": true,
                "background": true,
                "output": "",
                "taskId": id,
                "status": status,
                "command": command,
            }),
        )
    }

    fn list(&self) -> ToolOutput {
        let tasks: Vec<_> = self
            .shared
            .background
            .list()
            .into_iter()
            .filter(|t| t.kind == TaskKind::Process)
            .collect();
        let content = if tasks.is_empty() {
            "No background processes in this session.".to_string()
        } else {
            tasks
                .iter()
                .map(|t| format!("{} [{}] {}", t.id, t.status, t.command))
                .collect::<Vec<_>>()
                .join("\n")
        };
        ToolOutput::with_response(content, json!({ "tasks": tasks }))
    }
}

#[async_trait]
impl Tool for BackgroundProcessTool {
    fn name(&self) -> &str {
        BACKGROUND_PROCESS_TOOL_NAME
    }

    fn description(&self) -> &str {
        DESCRIPTION
    }

    fn input_schema(&self) -> Value {
        SCHEMA.json_schema()
    }

    async fn execute(&self, input: Value, context: ToolContext) -> ToolOutput {
        let input = match SCHEMA.validate(input) {
            Ok(map) => Input(map),
            Err(message) => return ToolOutput::error(message),
        };
        let has_command = input.str("command").is_some_and(|c| !c.trim().is_empty());
        let action = input
            .str("action")
            .unwrap_or(if has_command { "start" } else { "list" });
        let task_id = || input.str("task_id").filter(|id| !id.is_empty());
        match action {
            "start" if has_command => self.start(&input, context).await,
            "start" => ToolOutput::error(
                "BackgroundProcess start needs a `command` (the command to run in the background).",
            ),
            "list" => self.list(),
            "read" | "stop" => {
                let Some(id) = task_id() else {
                    return ToolOutput::error(format!(
                        "BackgroundProcess {action} needs a `task_id` (see action list)."
                    ));
                };
                if action == "read" {
                    self.output.execute(json!({"bash_id": id}), context).await
                } else {
                    self.kill.execute(json!({"shell_id": id}), context).await
                }
            }
            other => ToolOutput::error(format!(
                "Unknown BackgroundProcess action `{other}`; use start, list, read or stop."
            )),
        }
    }
}
