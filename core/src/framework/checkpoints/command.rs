//! The `rewind` command module (spec 000 `agent-command-rewind`): `list` the prompt-turn
//! checkpoints, `inspect <id>` one (files, restore and rollback ranges), `restore <id>` (or
//! `code <id>`) to put files back as that turn left them, `rollback <id>` to put them back as
//! they were before it. Changes made by Bash are not tracked, and every answer says so.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::json;

use super::{CheckpointInspection, RestoreReport};
use crate::framework::commands::{
    CommandDescriptor, CommandHostContext, CommandModule, CommandResult, CommandSource,
    SubcommandDescriptor, SystemCommand,
};
use crate::framework::skills::command::split_word;

/// The command's name.
pub const REWIND_COMMAND: &str = "rewind";

/// The note every answer carries: what a checkpoint cannot undo.
pub const BASH_NOT_TRACKED: &str =
    "Changes made by Bash (and tools that do not declare the files they change) are not tracked.";

const USAGE: &str = "Usage: rewind [list] | rewind inspect <id> | rewind restore <id> | \
                     rewind code <id> | rewind rollback <id>";

/// The module holding the `rewind` command.
pub fn rewind_command_module() -> CommandModule {
    CommandModule::new("robota-command-rewind", CommandSource::Builtin)
        .with_command(Arc::new(RewindCommand::new()))
}

/// `rewind`: list, inspect and restore edit checkpoints.
#[derive(Debug)]
pub struct RewindCommand {
    descriptor: CommandDescriptor,
}

impl RewindCommand {
    /// The command.
    pub fn new() -> Self {
        RewindCommand {
            descriptor: CommandDescriptor::new(
                REWIND_COMMAND,
                "List edit checkpoints, restore files to a prompt turn, or roll one back",
            )
            .with_argument_hint("[list | inspect <id> | restore <id> | code <id> | rollback <id>]")
            .with_subcommands(vec![
                SubcommandDescriptor::new("list", "List the prompt-turn checkpoints"),
                SubcommandDescriptor::new(
                    "inspect",
                    "Show a checkpoint's files and what restoring it undoes",
                ),
                SubcommandDescriptor::new(
                    "restore",
                    "Put files back as the checkpoint's turn left them (later turns are undone)",
                ),
                SubcommandDescriptor::new("code", "Same as restore: rewind code only"),
                SubcommandDescriptor::new(
                    "rollback",
                    "Put files back as they were before the checkpoint's turn",
                ),
            ]),
        }
    }
}

impl Default for RewindCommand {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait]
impl SystemCommand for RewindCommand {
    fn descriptor(&self) -> &CommandDescriptor {
        &self.descriptor
    }

    async fn execute(&self, ctx: &dyn CommandHostContext, args: &str) -> CommandResult {
        let (sub, rest) = split_word(args);
        let id = rest.trim();
        let needs_id = matches!(sub, "inspect" | "restore" | "code" | "rollback");
        if needs_id && (id.is_empty() || id.contains(char::is_whitespace)) {
            return CommandResult::error(format!(
                "`rewind {sub}` needs one checkpoint id (see `rewind list`).\n{USAGE}"
            ));
        }
        match sub {
            "" | "list" => list(ctx),
            "inspect" => match ctx.inspect_edit_checkpoint(id) {
                Ok(inspection) => inspect(&inspection),
                Err(error) => CommandResult::error(error.message),
            },
            "restore" | "code" | "rollback" => {
                let including = sub == "rollback";
                match ctx.restore_edit_checkpoint(id, including).await {
                    Ok(report) => restored(&report, including),
                    Err(error) => CommandResult::error(error.message),
                }
            }
            other => CommandResult::error(format!("Unknown subcommand `{other}`.\n{USAGE}")),
        }
    }
}

fn list(ctx: &dyn CommandHostContext) -> CommandResult {
    let checkpoints = match ctx.list_edit_checkpoints() {
        Ok(checkpoints) => checkpoints,
        Err(error) => return CommandResult::error(error.message),
    };
    let mut text = if checkpoints.is_empty() {
        "No edit checkpoints in this session yet.".to_string()
    } else {
        "Edit checkpoints (oldest first):".to_string()
    };
    for checkpoint in &checkpoints {
        let prompt: String = checkpoint
            .prompt
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .chars()
            .take(60)
            .collect();
        text.push_str(&format!(
            "\n  {}  {} file(s){}  \"{prompt}\"",
            checkpoint.id,
            checkpoint.file_count,
            if checkpoint.finished {
                ""
            } else {
                " (running)"
            },
        ));
    }
    text.push_str(&format!("\n{BASH_NOT_TRACKED}"));
    CommandResult::ok(text).with_data(json!({
        "checkpoints": checkpoints,
        "bash_tracked": false,
    }))
}

fn inspect(inspection: &CheckpointInspection) -> CommandResult {
    let checkpoint = &inspection.checkpoint;
    let mut text = format!(
        "Checkpoint {} (turn {}): \"{}\"\nFiles ({}):",
        checkpoint.id,
        checkpoint.sequence,
        checkpoint.prompt,
        inspection.files.len()
    );
    for file in &inspection.files {
        let state = match (file.existed, file.snapshot_exists) {
            (false, _) => "created by this turn (deleted on rollback)",
            (true, true) => "saved before this turn changed it",
            (true, false) => "saved content missing: cannot be rolled back",
        };
        text.push_str(&format!("\n  {} — {state}", file.display_path));
    }
    let range = |ids: &[String]| {
        if ids.is_empty() {
            "nothing".to_string()
        } else {
            ids.join(", ")
        }
    };
    text.push_str(&format!(
        "\nrestore undoes: {}\nrollback undoes: {}\n{BASH_NOT_TRACKED}",
        range(&inspection.restore_range),
        range(&inspection.rollback_range)
    ));
    CommandResult::ok(text).with_data(json!({
        "inspection": inspection,
        "bash_tracked": false,
    }))
}

fn restored(report: &RestoreReport, including: bool) -> CommandResult {
    let mut text = if including {
        format!(
            "Rolled back through checkpoint {}: files are as they were before that turn.",
            report.checkpoint_id
        )
    } else {
        format!(
            "Restored files to checkpoint {}: later turns are undone.",
            report.checkpoint_id
        )
    };
    if report.rolled_back.is_empty() {
        text.push_str("\nNothing to undo: no later turn.");
    } else {
        text.push_str(&format!(
            "\nUndone turns: {}",
            report.rolled_back.join(", ")
        ));
    }
    if !report.restored.is_empty() {
        text.push_str(&format!("\nRestored: {}", report.restored.join(", ")));
    }
    if !report.deleted.is_empty() {
        text.push_str(&format!(
            "\nDeleted (created since): {}",
            report.deleted.join(", ")
        ));
    }
    for problem in &report.problems {
        text.push_str(&format!("\nNot restored: {problem}"));
    }
    text.push_str(&format!("\n{BASH_NOT_TRACKED}"));
    let result = if report.problems.is_empty() {
        CommandResult::ok(text)
    } else {
        CommandResult::error(text)
    };
    result.with_data(json!({ "report": report, "bash_tracked": false }))
}
