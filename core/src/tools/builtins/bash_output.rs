//! `BashOutput` and `KillShell` (Claude Code's names and inputs): the model reads what a
//! background task wrote since its last look, with the task's status, and stops a task with its
//! whole process tree. Both act only on the session's own background tasks; the permission layer
//! treats them as session-internal, as Claude Code does.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{json, Value};

use super::background::{describe_end, TaskStatus};
use super::schema::{Field, Input, InputSchema, Kind};
use super::{Builtins, Shared};
use crate::tools::{Tool, ToolContext, ToolOutput};

const OUTPUT_SCHEMA: InputSchema = InputSchema {
    tool: "BashOutput",
    fields: &[
        Field {
            name: "bash_id",
            aliases: &["bashId", "shell_id", "task_id"],
            kind: Kind::String,
            required: true,
            description: "The ID of the background shell to retrieve output from",
        },
        Field {
            name: "filter",
            aliases: &[],
            kind: Kind::String,
            required: false,
            description: "Optional regular expression: only output lines matching it are \
                          shown; the other new lines are skipped (they stay in the task's \
                          output files)",
        },
    ],
};

const OUTPUT_DESCRIPTION: &str = "Retrieves the output of a running or finished background \
shell (started by Bash with `run_in_background: true`).\n\
- Returns only the output written since the last BashOutput call for that shell, with its status \
(running, completed, failed, cancelled) and exit code.\n\
- `filter` (a regular expression) keeps only the matching lines.\n\
- Shell IDs are the ones Bash returned (`bash_1`, …).";

const KILL_SCHEMA: InputSchema = InputSchema {
    tool: "KillShell",
    fields: &[Field {
        name: "shell_id",
        aliases: &["shellId", "bash_id", "task_id"],
        kind: Kind::String,
        required: true,
        description: "The ID of the background shell to kill",
    }],
};

const KILL_DESCRIPTION: &str = "Kills a running background shell by its ID, with every process \
it started (SIGTERM, then SIGKILL). Returns how it ended.";

/// The `BashOutput` tool.
pub struct BashOutputTool {
    shared: Arc<Shared>,
}

impl BashOutputTool {
    /// Reads the background tasks of `builtins`.
    pub fn new(builtins: &Builtins) -> Self {
        BashOutputTool {
            shared: builtins.shared.clone(),
        }
    }
}

#[async_trait]
impl Tool for BashOutputTool {
    fn name(&self) -> &str {
        "BashOutput"
    }

    fn description(&self) -> &str {
        OUTPUT_DESCRIPTION
    }

    fn input_schema(&self) -> Value {
        OUTPUT_SCHEMA.json_schema()
    }

    fn is_read_only(&self) -> bool {
        true
    }

    async fn execute(&self, input: Value, _context: ToolContext) -> ToolOutput {
        let input = match OUTPUT_SCHEMA.validate(input) {
            Ok(map) => Input(map),
            Err(message) => return ToolOutput::error(message),
        };
        let id = input.string("bash_id");
        let filter = match input.str("filter").filter(|f| !f.is_empty()) {
            Some(pattern) => match regex::Regex::new(pattern) {
                Ok(regex) => Some(regex),
                Err(err) => {
                    return ToolOutput::error(format!(
                        "Invalid `filter` for BashOutput: {err}. Give a regular expression \
                         such as `error|warning`."
                    ))
                }
            },
            None => None,
        };
        let new = match self.shared.background.read_new_output(&id) {
            Ok(new) => new,
            Err(message) => return ToolOutput::error(message),
        };
        let keep = |text: &str| match &filter {
            Some(regex) => text
                .lines()
                .filter(|line| regex.is_match(line))
                .map(|line| format!("{line}\n"))
                .collect(),
            None => text.to_string(),
        };
        let (stdout, stderr) = (keep(&new.stdout), keep(&new.stderr));
        let limit = self.shared.limit.max_bytes;
        let cut = |text: &str| super::cut_output(text, limit);
        let info = &new.info;
        let mut content = format!("<status>{}</status>\n", info.status);
        if let Some(code) = info.exit_code {
            content.push_str(&format!("<exit_code>{code}</exit_code>\n"));
        }
        if !stdout.is_empty() {
            content.push_str(&format!(
                "<stdout>\n{}</stdout>\n",
                ensure_newline(cut(&stdout))
            ));
        }
        if !stderr.is_empty() {
            content.push_str(&format!(
                "<stderr>\n{}</stderr>\n",
                ensure_newline(cut(&stderr))
            ));
        }
        if stdout.is_empty() && stderr.is_empty() {
            content.push_str("(no new output)\n");
        }
        if new.dropped_bytes > 0 {
            content.push_str(&format!(
                "{} bytes of new output no longer fit in memory; the full output is in {} and \
                 {}.\n",
                new.dropped_bytes,
                info.stdout_path.display(),
                info.stderr_path.display()
            ));
        }
        if info.status.is_terminal() && info.status != TaskStatus::Completed {
            content.push_str(&format!("The shell {}.\n", describe_end(info)));
        }
        ToolOutput::with_response(
            content.trim_end().to_string(),
            json!({
                "shellId": info.id,
                "command": info.command,
                "status": info.status,
                "exitCode": info.exit_code,
                "stdout": stdout,
                "stderr": stderr,
                "error": info.error,
                "timeout_reason": info.timeout_reason,
                "dropped_bytes": new.dropped_bytes,
            }),
        )
    }
}

fn ensure_newline(mut text: String) -> String {
    if !text.ends_with('\n') {
        text.push('\n');
    }
    text
}

/// The `KillShell` tool.
pub struct KillShellTool {
    shared: Arc<Shared>,
}

impl KillShellTool {
    /// Stops the background tasks of `builtins`.
    pub fn new(builtins: &Builtins) -> Self {
        KillShellTool {
            shared: builtins.shared.clone(),
        }
    }
}

#[async_trait]
impl Tool for KillShellTool {
    fn name(&self) -> &str {
        "KillShell"
    }

    fn description(&self) -> &str {
        KILL_DESCRIPTION
    }

    fn input_schema(&self) -> Value {
        KILL_SCHEMA.json_schema()
    }

    async fn execute(&self, input: Value, _context: ToolContext) -> ToolOutput {
        let input = match KILL_SCHEMA.validate(input) {
            Ok(map) => Input(map),
            Err(message) => return ToolOutput::error(message),
        };
        let id = input.string("shell_id");
        match self.shared.background.cancel(&id).await {
            Ok(info) => ToolOutput::with_response(
                format!("Successfully killed shell: {id} ({})", info.command),
                json!({
                    "message": format!("Successfully killed shell: {id} ({})", info.command),
                    "shell_id": id,
                    "status": info.status,
                }),
            ),
            Err(message) => ToolOutput::error(message),
        }
    }
}
