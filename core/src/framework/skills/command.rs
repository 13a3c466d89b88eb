//! The `skills` command module (spec 000 `agent-command-skills`) and the model's `Skill` tool.
//!
//! `skills` lists the skills (`list`, the default) with their source and description, shows one
//! (`show NAME`: its metadata and instructions), or activates one (`NAME [ARGS]`). The user
//! reaches it as `/skills …` and, for a skill, simply as `/NAME ARGS` (the session routes an
//! unknown command that names a skill here). The model reaches it through the projected
//! `robota_command_skills` tool and through `Skill` — Claude Code's tool, with its input
//! `{"skill": "name", "args": "…"}`.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{json, Value};

use super::activation::{SkillActivationRequest, SkillInvocation};
use super::definition::{SkillCatalog, SkillContext};
use crate::framework::commands::{
    CommandDescriptor, CommandHostContext, CommandModule, CommandResult, CommandSource,
    SessionRequirement, SubcommandDescriptor, SystemCommand,
};
use crate::tools::{Tool, ToolContext, ToolOutput};

/// The command's name (and the projected tool's suffix).
pub const SKILLS_COMMAND: &str = "skills";

/// The model's tool for activating a skill (Claude Code's name).
pub const SKILL_TOOL_NAME: &str = "Skill";

const USAGE: &str = "Usage: skills [list] | skills show NAME | skills NAME [ARGS]";

/// The module holding the `skills` command; it makes the session discover skills, list them in
/// the system prompt and give the model the `Skill` tool.
pub fn skills_command_module() -> CommandModule {
    CommandModule::new("robota-command-skills", CommandSource::Builtin)
        .with_command(Arc::new(SkillsCommand::new()))
        .with_requirement(SessionRequirement::Skills)
}

/// `skills`: list, show or activate skills.
#[derive(Debug)]
pub struct SkillsCommand {
    descriptor: CommandDescriptor,
}

impl SkillsCommand {
    /// The command.
    pub fn new() -> Self {
        SkillsCommand {
            descriptor: CommandDescriptor::new(
                SKILLS_COMMAND,
                "List the skills (`list`), read one's description (`show NAME`), or activate \
                 one by name with its arguments (`NAME ARGS`): its instructions come back to \
                 follow (a forked skill runs on its own and returns its answer).",
            )
            .with_argument_hint("[list | show NAME | NAME [ARGS]]")
            .model_invocable()
            .with_subcommands(vec![
                SubcommandDescriptor::new("list", "List the skills with source and description"),
                SubcommandDescriptor::new("show", "Show one skill's metadata and instructions"),
            ]),
        }
    }
}

impl Default for SkillsCommand {
    fn default() -> Self {
        Self::new()
    }
}

/// The first word and the rest.
pub(crate) fn split_word(text: &str) -> (&str, &str) {
    let text = text.trim();
    match text.find(char::is_whitespace) {
        Some(end) => (&text[..end], text[end..].trim()),
        None => (text, ""),
    }
}

fn list(catalog: &SkillCatalog, for_model: bool) -> CommandResult {
    let visible: Vec<_> = catalog
        .skills()
        .filter(|s| s.invocable_by(for_model))
        .collect();
    let mut text = if visible.is_empty() {
        String::from(
            "No skills. Add one as .claude/skills/<name>/SKILL.md (project) or \
             ~/.claude/skills/<name>/SKILL.md (user).",
        )
    } else {
        String::from("Skills:")
    };
    for skill in &visible {
        text.push_str(&format!(
            "\n  {}{} [{}] — {}",
            skill.name,
            skill
                .argument_hint
                .as_ref()
                .map(|h| format!(" {h}"))
                .unwrap_or_default(),
            skill.source,
            skill
                .description
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
        ));
    }
    if !for_model {
        for warning in &catalog.warnings {
            text.push_str(&format!("\n  warning: {warning}"));
        }
    }
    let skills: Vec<Value> = visible
        .iter()
        .map(|s| serde_json::to_value(s).unwrap_or(Value::Null))
        .collect();
    CommandResult::ok(text).with_data(json!({
        "skills": skills,
        "warnings": catalog.warnings,
    }))
}

fn show(catalog: &SkillCatalog, name: &str, for_model: bool) -> CommandResult {
    let Some(skill) = catalog
        .get(name)
        .filter(|s| !for_model || s.model_invocable())
    else {
        return CommandResult::error(format!("no skill `{name}`. {USAGE}"));
    };
    let mut text = format!(
        "{} — {}\nSource: {}",
        skill.name, skill.description, skill.source
    );
    if let Some(file) = &skill.file {
        text.push_str(&format!("\nFile: {}", file.display()));
    }
    if let Some(hint) = &skill.argument_hint {
        text.push_str(&format!("\nArguments: {hint}"));
    }
    if skill.context == SkillContext::Fork {
        text.push_str(&format!(
            "\nRuns in a subagent ({})",
            skill.agent.as_deref().unwrap_or("general-purpose")
        ));
    }
    if !skill.allowed_tools.is_empty() {
        text.push_str(&format!(
            "\nAllowed tools: {}",
            skill.allowed_tools.join(", ")
        ));
    }
    if let Some(model) = &skill.model {
        text.push_str(&format!("\nModel: {model}"));
    }
    if !for_model {
        match skill.load_body() {
            Ok(body) => text.push_str(&format!("\n\n{body}")),
            Err(warning) => {
                text.push_str(&format!("\n\nThe instructions cannot be read: {warning}"))
            }
        }
    }
    CommandResult::ok(text).with_data(serde_json::to_value(skill).unwrap_or(Value::Null))
}

#[async_trait]
impl SystemCommand for SkillsCommand {
    fn descriptor(&self) -> &CommandDescriptor {
        &self.descriptor
    }

    async fn execute(&self, ctx: &dyn CommandHostContext, args: &str) -> CommandResult {
        let catalog = match ctx.skill_catalog() {
            Ok(catalog) => catalog,
            Err(error) => return CommandResult::error(error.message),
        };
        let for_model = ctx.invoked_by_model();
        let (first, rest) = split_word(args);
        match first {
            "" | "list" => list(&catalog, for_model),
            "show" if !rest.is_empty() => show(&catalog, rest, for_model),
            "show" => CommandResult::error(format!("which skill? {USAGE}")),
            name => {
                let request = SkillActivationRequest {
                    name: name.to_string(),
                    args: rest.to_string(),
                    invocation: if for_model {
                        SkillInvocation::ModelTool
                    } else {
                        SkillInvocation::UserSlash
                    },
                };
                ctx.activate_skill(request)
                    .await
                    .unwrap_or_else(|error| CommandResult::error(error.message))
            }
        }
    }
}

/// `Skill`: the model activates a skill by name, as in Claude Code
/// (`{"skill": "name", "args": "optional arguments"}`).
pub struct SkillTool {
    ctx: Arc<dyn CommandHostContext>,
}

impl std::fmt::Debug for SkillTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SkillTool").finish_non_exhaustive()
    }
}

impl SkillTool {
    /// The tool, activating skills through `ctx` (the model's command host).
    pub fn new(ctx: Arc<dyn CommandHostContext>) -> Self {
        SkillTool { ctx }
    }
}

#[async_trait]
impl Tool for SkillTool {
    fn name(&self) -> &str {
        SKILL_TOOL_NAME
    }

    fn description(&self) -> &str {
        "Activate a skill listed under \"Skills\" in the system prompt: its instructions are \
         returned for you to follow (a forked skill runs on its own and returns its answer). \
         Use it when a skill matches the task, before starting the task; do not activate a \
         skill that is already running."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "skill": {
                    "type": "string",
                    "description": "The skill's name, e.g. \"release-notes\"."
                },
                "args": {
                    "type": "string",
                    "description": "Optional arguments for the skill."
                }
            },
            "required": ["skill"],
            "additionalProperties": false
        })
    }

    async fn execute(&self, input: Value, _context: ToolContext) -> ToolOutput {
        let Some(name) = input
            .get("skill")
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|n| !n.is_empty())
        else {
            return ToolOutput::error("`skill` must be the name of a skill (a non-empty string)");
        };
        let args = match input.get("args") {
            None | Some(Value::Null) => "",
            Some(Value::String(args)) => args.as_str(),
            Some(other) => {
                return ToolOutput::error(format!("`args` must be a string, got {other}"))
            }
        };
        let request = SkillActivationRequest {
            name: name.to_string(),
            args: args.to_string(),
            invocation: SkillInvocation::ModelTool,
        };
        let result = self
            .ctx
            .activate_skill(request)
            .await
            .unwrap_or_else(|error| CommandResult::error(error.message));
        ToolOutput {
            content: result.message.clone(),
            is_error: !result.success,
            response: json!({
                "success": result.success,
                "commandName": name,
                "data": result.data,
            }),
        }
    }
}
