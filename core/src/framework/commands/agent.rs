//! The `agent` command (spec 000 `agent-command-agent`): runs a subagent for the user (`/agent
//! …`) or the model (the projected `robota_command_agent` tool) and returns its final answer.
//!
//! Arguments: `list`, or `[--isolation worktree] [AGENT_TYPE] PROMPT` (the first word is the
//! agent type when it names an agent; `general-purpose` otherwise; `--model MODEL` overrides the
//! agent's model), or a JSON object `{"prompt", "subagent_type"?, "isolation"?: "worktree" |
//! "none", "model"?}` as Claude Code's Agent tool takes it. The module requests [`SessionRequirement::AgentExecutor`], which makes the session
//! load agent definitions and list them in the system prompt.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{json, Value};

use super::host::{CommandHostContext, CommandModule, SystemCommand};
use super::types::{
    CommandDescriptor, CommandLifecycle, CommandResult, CommandSource, SessionRequirement,
    SubcommandDescriptor,
};
use crate::framework::agents::{AgentCatalog, Isolation, SubagentRequest};

/// The command's name (and the projected tool's suffix).
pub const AGENT_COMMAND: &str = "agent";

const USAGE: &str =
    "Usage: agent [--isolation worktree] [--model MODEL] [AGENT_TYPE] PROMPT | agent list";

/// The module holding the `agent` command, requesting the agent executor.
pub fn agent_command_module() -> CommandModule {
    CommandModule::new("robota-command-agent", CommandSource::Builtin)
        .with_command(Arc::new(AgentCommand::new()))
        .with_requirement(SessionRequirement::AgentExecutor)
}

/// `agent`: runs a subagent and returns its answer.
#[derive(Debug)]
pub struct AgentCommand {
    descriptor: CommandDescriptor,
}

impl AgentCommand {
    /// The command.
    pub fn new() -> Self {
        AgentCommand {
            descriptor: CommandDescriptor::new(
                AGENT_COMMAND,
                "Delegate a self-contained task to a subagent: it works on its own with its own \
                 context and tools and returns only its final report, which keeps your context \
                 small. Give it a complete, specific prompt. Pass `--isolation worktree` to let \
                 it change files in a separate git worktree. `list` shows the agent types.",
            )
            .with_argument_hint("[--isolation worktree] [--model MODEL] [AGENT_TYPE] PROMPT | list")
            .model_invocable()
            .with_lifecycle(CommandLifecycle::Blocking)
            .with_subcommands(vec![SubcommandDescriptor::new(
                "list",
                "List the agent types",
            )]),
        }
    }
}

impl Default for AgentCommand {
    fn default() -> Self {
        Self::new()
    }
}

/// `args` as a request, given the agents there are.
pub fn parse_agent_args(args: &str, catalog: &AgentCatalog) -> Result<SubagentRequest, String> {
    let args = args.trim();
    if args.starts_with('{') {
        return parse_json_args(args);
    }
    let mut rest = args;
    let mut isolation = Isolation::None;
    let mut model = None;
    loop {
        let (word, after) = split_word(rest);
        match word {
            "--worktree" => isolation = Isolation::Worktree,
            "--model" => {
                let (value, after_value) = split_word(after);
                if value.is_empty() {
                    return Err(format!("`--model` needs a model. {USAGE}"));
                }
                model = Some(value.to_string());
                rest = after_value;
                continue;
            }
            w if w.starts_with("--model=") => {
                model = Some(w["--model=".len()..].to_string()).filter(|m| !m.is_empty());
            }
            "--isolation" => {
                let (value, after_value) = split_word(after);
                isolation = parse_isolation(value)?;
                rest = after_value;
                continue;
            }
            w if w.starts_with("--isolation=") => {
                isolation = parse_isolation(&w["--isolation=".len()..])?;
            }
            w if w.starts_with("--") => {
                return Err(format!("unknown option `{w}`. {USAGE}"));
            }
            _ => break,
        }
        rest = after;
    }
    let (first, after) = split_word(rest);
    let (agent_type, prompt) = match catalog.get(first) {
        Some(definition) if !after.trim().is_empty() => (Some(definition.name.clone()), after),
        _ => (None, rest),
    };
    let prompt = unquote(prompt.trim()).trim().to_string();
    if prompt.is_empty() {
        return Err(format!("the subagent needs a prompt. {USAGE}"));
    }
    Ok(SubagentRequest {
        agent_type,
        prompt,
        isolation,
        model,
        fork_worker: false,
        parent_tool_use_id: None,
    })
}

fn parse_json_args(args: &str) -> Result<SubagentRequest, String> {
    let value: Value = serde_json::from_str(args)
        .map_err(|e| format!("the arguments look like JSON but do not parse: {e}"))?;
    let text = |key: &str| value.get(key).and_then(Value::as_str).map(str::to_string);
    let prompt = text("prompt")
        .filter(|p| !p.trim().is_empty())
        .ok_or_else(|| "the JSON arguments need a non-empty `prompt` string".to_string())?;
    let isolation = match text("isolation") {
        None => Isolation::None,
        Some(value) => parse_isolation(&value)?,
    };
    Ok(SubagentRequest {
        agent_type: text("subagent_type").or_else(|| text("agent_type")),
        prompt,
        isolation,
        model: text("model"),
        fork_worker: false,
        parent_tool_use_id: None,
    })
}

fn parse_isolation(value: &str) -> Result<Isolation, String> {
    value.parse()
}

/// The first whitespace-separated word and the rest.
fn split_word(text: &str) -> (&str, &str) {
    let text = text.trim_start();
    match text.find(char::is_whitespace) {
        Some(end) => (&text[..end], &text[end..]),
        None => (text, ""),
    }
}

fn unquote(text: &str) -> &str {
    for quote in ['"', '\''] {
        if text.len() >= 2 && text.starts_with(quote) && text.ends_with(quote) {
            return &text[1..text.len() - 1];
        }
    }
    text
}

fn list(catalog: &AgentCatalog) -> CommandResult {
    let mut text = String::from("Agent types:");
    for definition in catalog.definitions() {
        text.push_str(&format!(
            "\n  {} — {}",
            definition.name,
            definition
                .description
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
        ));
    }
    for warning in &catalog.warnings {
        text.push_str(&format!("\n  warning: {warning}"));
    }
    let names: Vec<&str> = catalog.definitions().map(|d| d.name.as_str()).collect();
    CommandResult::ok(text).with_data(json!({
        "agents": names,
        "warnings": catalog.warnings,
    }))
}

#[async_trait]
impl SystemCommand for AgentCommand {
    fn descriptor(&self) -> &CommandDescriptor {
        &self.descriptor
    }

    async fn execute(&self, ctx: &dyn CommandHostContext, args: &str) -> CommandResult {
        let catalog = match ctx.agent_catalog() {
            Ok(catalog) => catalog,
            Err(error) => return CommandResult::error(error.message),
        };
        if args.trim() == "list" {
            return list(&catalog);
        }
        let request = match parse_agent_args(args, &catalog) {
            Ok(request) => request,
            Err(message) => return CommandResult::error(message),
        };
        match ctx.run_subagent(request).await {
            Ok(report) => {
                let data = serde_json::to_value(&report).unwrap_or(Value::Null);
                let failed = report.interrupted || report.error.is_some();
                let result = if failed {
                    CommandResult::error(report.message())
                } else {
                    CommandResult::ok(report.message())
                };
                result.with_data(data)
            }
            Err(error) => CommandResult::error(error.message),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_parse() {
        let catalog = AgentCatalog::builtin();
        let parsed = parse_agent_args("--isolation worktree Explore find the tests", &catalog);
        assert_eq!(
            parsed,
            Ok(SubagentRequest {
                agent_type: Some("Explore".into()),
                prompt: "find the tests".into(),
                isolation: Isolation::Worktree,
                model: None,
                fork_worker: false,
                parent_tool_use_id: None,
            })
        );
        let parsed = parse_agent_args("explain \"this\"", &catalog);
        assert_eq!(
            parsed.map(|r| (r.agent_type, r.prompt)),
            Ok((None, "explain \"this\"".to_string()))
        );
        let parsed = parse_agent_args(
            r#"{"prompt": "p", "subagent_type": "Plan", "isolation": "worktree"}"#,
            &catalog,
        );
        assert_eq!(
            parsed.map(|r| (r.agent_type, r.isolation)),
            Ok((Some("Plan".into()), Isolation::Worktree))
        );
        assert!(parse_agent_args("--isolation elsewhere x", &catalog).is_err());
        assert!(parse_agent_args("Explore", &catalog).is_ok());
        assert!(parse_agent_args("   ", &catalog).is_err());
        let parsed = parse_agent_args("--model haiku Plan outline it", &catalog);
        assert_eq!(
            parsed.map(|r| (r.model, r.agent_type)),
            Ok((Some("haiku".into()), Some("Plan".into())))
        );
        assert!(parse_agent_args("--model", &catalog).is_err());
    }
}
