//! The `memory` command module (spec 000 `agent-command-memory`): `list | show [topic] | add
//! <user|feedback|project|reference> <topic> <text> | pending | approve <id> | reject <id> |
//! used`. Model-invocable as `robota_command_memory`: what the model adds becomes a pending
//! candidate a person approves, and only a person approves or rejects. Each write, review,
//! refusal and topic read is a `memory-event` history entry, saved with the session (and kept on
//! resume); `used` reports the topics read in this session from those entries.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{json, Value};

use super::{MemoryError, MemoryType, ProjectMemory};
use crate::framework::commands::{
    CommandDescriptor, CommandHostContext, CommandModule, CommandResult, CommandSource,
    SubcommandDescriptor, SystemCommand,
};
use crate::framework::skills::command::split_word;

/// The command's name (and the projected tool's suffix).
pub const MEMORY_COMMAND: &str = "memory";
/// The history entry type of memory events.
pub const MEMORY_EVENT: &str = "memory-event";

const USAGE: &str = "Usage: memory list | memory show [topic] | memory add \
                     <user|feedback|project|reference> <topic> <text> | memory pending | \
                     memory approve <id> | memory reject <id> | memory used";

/// The module holding the `memory` command.
pub fn memory_command_module() -> CommandModule {
    CommandModule::new("robota-command-memory", CommandSource::Builtin)
        .with_command(Arc::new(MemoryCommand::new()))
}

/// `memory`: inspect, add to and review project memory.
#[derive(Debug)]
pub struct MemoryCommand {
    descriptor: CommandDescriptor,
}

impl MemoryCommand {
    /// The command.
    pub fn new() -> Self {
        MemoryCommand {
            descriptor: CommandDescriptor::new(
                MEMORY_COMMAND,
                "Project memory: read it when stored facts may help (`list`, `show [topic]`); \
                 add only durable, reusable facts, never secrets or personal data (`add`); \
                 `pending`, `approve`/`reject <id>`, `used`.",
            )
            .with_argument_hint(
                "[list | show [topic] | add <user|feedback|project|reference> <topic> <text> | \
                 pending | approve <id> | reject <id> | used]",
            )
            .model_invocable()
            .with_subcommands(vec![
                SubcommandDescriptor::new("list", "List memory topics and the index"),
                SubcommandDescriptor::new("show", "Show the index, or one topic's entries"),
                SubcommandDescriptor::new("add", "Save a durable fact under a topic"),
                SubcommandDescriptor::new("pending", "List candidates waiting for approval"),
                SubcommandDescriptor::new("approve", "Save a pending candidate"),
                SubcommandDescriptor::new("reject", "Drop a pending candidate"),
                SubcommandDescriptor::new("used", "Topics read in this session"),
            ]),
        }
    }
}

impl Default for MemoryCommand {
    fn default() -> Self {
        Self::new()
    }
}

/// Records a memory event; hosts without a history simply keep none.
fn record(ctx: &dyn CommandHostContext, data: Value) {
    let _ = ctx.record_history_event(MEMORY_EVENT, data);
}

fn failure(ctx: &dyn CommandHostContext, action: &str, error: MemoryError) -> CommandResult {
    if let MemoryError::Sensitive(refusal) = &error {
        // The refused text itself is never recorded.
        record(
            ctx,
            json!({"action": "refused", "attempted": action, "category": refusal.category}),
        );
        return CommandResult::error(error.to_string()).with_data(json!({
            "refused": true,
            "category": refusal.category,
            "reason": refusal.what,
        }));
    }
    CommandResult::error(error.to_string())
}

#[async_trait]
impl SystemCommand for MemoryCommand {
    fn descriptor(&self) -> &CommandDescriptor {
        &self.descriptor
    }

    async fn execute(&self, ctx: &dyn CommandHostContext, args: &str) -> CommandResult {
        let Some(project) = ctx.project_dir() else {
            return CommandResult::error(
                "project memory needs a project directory; this host has none",
            );
        };
        let memory = ProjectMemory::new(&project);
        let (sub, rest) = split_word(args);
        match sub {
            "" | "list" => list(&memory),
            "show" => show(ctx, &memory, rest),
            "add" => add(ctx, &memory, rest),
            "pending" => match memory.pending() {
                Ok(pending) => {
                    let mut text = if pending.is_empty() {
                        "No pending memory candidates.".to_string()
                    } else {
                        "Pending memory candidates (approve <id> or reject <id>):".to_string()
                    };
                    for c in &pending {
                        text.push_str(&format!(
                            "\n  {}  [{}] {}: {} (from {})",
                            c.id,
                            c.kind.as_str(),
                            c.topic,
                            c.text,
                            c.source
                        ));
                    }
                    CommandResult::ok(text).with_data(json!({ "pending": pending }))
                }
                Err(error) => failure(ctx, "pending", error),
            },
            "approve" | "reject" => review(ctx, &memory, sub, rest),
            "used" => used(ctx),
            other => CommandResult::error(format!("Unknown subcommand `{other}`.\n{USAGE}")),
        }
    }
}

fn list(memory: &ProjectMemory) -> CommandResult {
    let topics = match memory.topics() {
        Ok(topics) => topics,
        Err(error) => return CommandResult::error(error.to_string()),
    };
    let mut text = if topics.is_empty() {
        "Project memory is empty. Add a fact with `memory add <user|feedback|project|reference> \
         <topic> <text>`."
            .to_string()
    } else {
        format!("Project memory ({}):", memory.index_path().display())
    };
    for topic in &topics {
        text.push_str(&format!(
            "\n  {} — {} entr{}",
            topic.name,
            topic.entries.len(),
            if topic.entries.len() == 1 { "y" } else { "ies" }
        ));
    }
    let summary: Vec<Value> = topics
        .iter()
        .map(|t| json!({"name": t.name, "entries": t.entries.len()}))
        .collect();
    CommandResult::ok(text).with_data(json!({ "topics": summary }))
}

fn show(ctx: &dyn CommandHostContext, memory: &ProjectMemory, topic: &str) -> CommandResult {
    if topic.is_empty() {
        return match memory.index() {
            Ok(index) if index.trim().is_empty() => {
                CommandResult::ok("Project memory is empty.").with_data(json!({"index": ""}))
            }
            Ok(index) => {
                record(ctx, json!({"action": "show", "topic": null}));
                CommandResult::ok(index.clone()).with_data(json!({ "index": index }))
            }
            Err(error) => failure(ctx, "show", error),
        };
    }
    match memory.topic(topic) {
        Ok(topic) => {
            record(ctx, json!({"action": "show", "topic": topic.name}));
            let mut text = format!("Memory topic {}:", topic.name);
            for entry in &topic.entries {
                text.push_str(&format!("\n- [{}] {}", entry.kind.as_str(), entry.text));
            }
            CommandResult::ok(text).with_data(json!({ "topic": topic }))
        }
        Err(error) => failure(ctx, "show", error),
    }
}

fn add(ctx: &dyn CommandHostContext, memory: &ProjectMemory, rest: &str) -> CommandResult {
    let (kind, rest) = split_word(rest);
    let (topic, text) = split_word(rest);
    let Some(kind) = MemoryType::parse(kind) else {
        return CommandResult::error(format!(
            "`memory add` needs a type: user, feedback, project or reference.\n{USAGE}"
        ));
    };
    if topic.is_empty() || text.is_empty() {
        return CommandResult::error(format!(
            "`memory add` needs a topic and the text to remember.\n{USAGE}"
        ));
    }
    if ctx.invoked_by_model() {
        // What the model wants remembered waits for a person.
        return match memory.propose(kind, topic, text, "model") {
            Ok(candidate) => {
                record(
                    ctx,
                    json!({"action": "proposed", "id": candidate.id, "topic": candidate.topic,
                           "type": candidate.kind}),
                );
                CommandResult::ok(format!(
                    "Proposed memory {} for topic {}; it is saved once the user approves it \
                     (`memory approve {}`).",
                    candidate.id, candidate.topic, candidate.id
                ))
                .with_data(json!({ "pending": candidate }))
            }
            Err(error) => failure(ctx, "add", error),
        };
    }
    match memory.append(kind, topic, text) {
        Ok(outcome) => {
            record(
                ctx,
                json!({"action": "added", "topic": outcome.topic, "type": kind,
                       "deduplicated": outcome.deduplicated}),
            );
            let message = if outcome.deduplicated {
                format!(
                    "Memory topic {} already has this entry; nothing changed.",
                    outcome.topic
                )
            } else {
                format!("Saved to memory topic {}.", outcome.topic)
            };
            CommandResult::ok(message).with_data(json!({
                "topic": outcome.topic,
                "deduplicated": outcome.deduplicated,
                "path": outcome.path,
            }))
        }
        Err(error) => failure(ctx, "add", error),
    }
}

fn review(
    ctx: &dyn CommandHostContext,
    memory: &ProjectMemory,
    action: &str,
    id: &str,
) -> CommandResult {
    if ctx.invoked_by_model() {
        return CommandResult::error(format!(
            "only the user can {action} memory candidates; ask them to run `memory {action} <id>`"
        ));
    }
    if id.is_empty() {
        return CommandResult::error(format!("`memory {action}` needs a candidate id.\n{USAGE}"));
    }
    if action == "approve" {
        match memory.approve(id) {
            Ok((candidate, outcome)) => {
                record(
                    ctx,
                    json!({"action": "approved", "id": candidate.id, "topic": outcome.topic,
                           "type": candidate.kind, "deduplicated": outcome.deduplicated}),
                );
                CommandResult::ok(format!(
                    "Approved {}: saved to memory topic {}.",
                    candidate.id, outcome.topic
                ))
                .with_data(json!({ "approved": candidate, "deduplicated": outcome.deduplicated }))
            }
            Err(error) => failure(ctx, "approve", error),
        }
    } else {
        match memory.reject(id) {
            Ok(candidate) => {
                record(
                    ctx,
                    json!({"action": "rejected", "id": candidate.id, "topic": candidate.topic}),
                );
                CommandResult::ok(format!("Rejected {}; nothing was saved.", candidate.id))
                    .with_data(json!({ "rejected": candidate }))
            }
            Err(error) => failure(ctx, "reject", error),
        }
    }
}

fn used(ctx: &dyn CommandHostContext) -> CommandResult {
    let mut topics: Vec<String> = Vec::new();
    let mut index = false;
    for entry in ctx.history() {
        let value = serde_json::to_value(&entry).unwrap_or_default();
        if value["type"] != MEMORY_EVENT || value["data"]["action"] != "show" {
            continue;
        }
        match value["data"]["topic"].as_str() {
            Some(topic) if !topics.iter().any(|t| t == topic) => topics.push(topic.to_string()),
            Some(_) => {}
            None => index = true,
        }
    }
    let text = if topics.is_empty() && !index {
        "No project memory was read in this session (the MEMORY.md index, when present, is in \
         the system prompt)."
            .to_string()
    } else {
        let mut parts = Vec::new();
        if index {
            parts.push("MEMORY.md".to_string());
        }
        parts.extend(topics.iter().map(|t| format!("topics/{t}.md")));
        format!("Memory read in this session: {}", parts.join(", "))
    };
    CommandResult::ok(text).with_data(json!({ "topics": topics, "index": index }))
}
