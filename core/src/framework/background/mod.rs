//! The `background` command module (spec 000 "/background"): list the session's background
//! tasks, read a task's log, cancel a running task, close an ended one. The task manager itself
//! lives with the built-in tools ([`BackgroundTasks`]), which hand their processes to it; this
//! module is its user-facing face. The subagent manager will join it here.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::json;

use crate::framework::commands::{
    CommandDescriptor, CommandHostContext, CommandModule, CommandResult, CommandSource,
    SubcommandDescriptor, SystemCommand,
};
use crate::tools::builtins::background::describe_end;
use crate::tools::builtins::{BackgroundTaskInfo, BackgroundTasks, LogStream, TaskStatus};

/// The command's name.
pub const BACKGROUND_COMMAND: &str = "background";

/// How much of a log one `/background log` shows.
const LOG_PAGE_BYTES: usize = 16 * 1024;

const USAGE: &str = "Usage: /background [list] | /background log <task-id> [offset] | \
                     /background cancel <task-id> | /background close <task-id>";

/// The module holding the `background` command (part of
/// [`default_command_modules`](crate::framework::commands::default_command_modules)).
pub fn background_command_module() -> CommandModule {
    CommandModule::new("robota-command-background", CommandSource::Builtin)
        .with_command(Arc::new(BackgroundCommand::new()))
}

/// `background`: the session's background tasks.
pub struct BackgroundCommand {
    descriptor: CommandDescriptor,
}

impl BackgroundCommand {
    /// The command.
    pub fn new() -> Self {
        BackgroundCommand {
            descriptor: CommandDescriptor::new(
                BACKGROUND_COMMAND,
                "List background tasks; read a task's log, cancel or close one",
            )
            .with_argument_hint("[list | log <id> [offset] | cancel <id> | close <id>]")
            .with_subcommands(vec![
                SubcommandDescriptor::new("list", "List the background tasks"),
                SubcommandDescriptor::new("log", "Read a task's output from an offset"),
                SubcommandDescriptor::new("cancel", "Stop a running task and its processes"),
                SubcommandDescriptor::new("close", "Remove an ended task from the list"),
            ]),
        }
    }
}

impl Default for BackgroundCommand {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait]
impl SystemCommand for BackgroundCommand {
    fn descriptor(&self) -> &CommandDescriptor {
        &self.descriptor
    }

    async fn execute(&self, ctx: &dyn CommandHostContext, args: &str) -> CommandResult {
        let Some(tasks) = ctx.background_tasks() else {
            return CommandResult::error(
                "This session has no background tasks (it runs without the built-in tools).",
            );
        };
        let words: Vec<&str> = args.split_whitespace().collect();
        match words.as_slice() {
            [] | ["list"] => list(&tasks),
            ["log" | "read", id] => log(&tasks, id, "0"),
            ["log" | "read", id, offset] => log(&tasks, id, offset),
            ["cancel", id] => match tasks.cancel(id).await {
                Ok(info) => CommandResult::ok(format!("{}: {}", info.id, describe_end(&info)))
                    .with_data(json!({ "task": info })),
                Err(message) => CommandResult::error(message),
            },
            ["close", id] => match tasks.close(id) {
                Ok(info) => CommandResult::ok(format!("Closed {}.", info.id))
                    .with_data(json!({ "task": info })),
                Err(message) => CommandResult::error(message),
            },
            _ => CommandResult::error(format!("Unknown arguments: {}. {USAGE}", args.trim())),
        }
    }
}

fn list(tasks: &BackgroundTasks) -> CommandResult {
    let all = tasks.list();
    let warnings = tasks.warnings();
    let mut lines = Vec::new();
    if all.is_empty() {
        lines.push("No background tasks.".to_string());
    } else {
        lines.push(format!("Background tasks ({}):", all.len()));
        lines.extend(all.iter().map(|task| format!("  {}", line(task))));
    }
    lines.extend(warnings.iter().map(|w| format!("Warning: {w}")));
    CommandResult::ok(lines.join("\n")).with_data(json!({ "tasks": all, "warnings": warnings }))
}

/// `bash_1 running — npm run dev (pid 123)`.
fn line(task: &BackgroundTaskInfo) -> String {
    let state = match task.status {
        TaskStatus::Running | TaskStatus::Queued | TaskStatus::WaitingPermission => {
            task.status.to_string()
        }
        _ => describe_end(task),
    };
    let pid = task
        .pid
        .map(|pid| format!(" (pid {pid})"))
        .unwrap_or_default();
    format!("{} {state} — {}{pid}", task.id, task.command)
}

fn log(tasks: &BackgroundTasks, id: &str, offset: &str) -> CommandResult {
    let Ok(offset) = offset.parse::<u64>() else {
        return CommandResult::error(format!(
            "The offset must be a byte count such as 0 or 4096, got `{offset}`. {USAGE}"
        ));
    };
    match tasks.read_log(id, LogStream::Stdout, offset, LOG_PAGE_BYTES) {
        Ok(page) => {
            let mut text = page.text.clone();
            if page.next_offset < page.total_bytes {
                text.push_str(&format!(
                    "\n[{} of {} bytes shown; more with /background log {id} {}]",
                    page.next_offset - page.offset,
                    page.total_bytes,
                    page.next_offset
                ));
            }
            if text.is_empty() {
                text = format!("({id} has written nothing to stdout yet)");
            }
            CommandResult::ok(text).with_data(json!({ "page": page }))
        }
        Err(message) => CommandResult::error(message),
    }
}
