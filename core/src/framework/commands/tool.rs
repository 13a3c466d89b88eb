//! Model-invocable commands projected as tools (`robota_command_<name>`), so the model can run
//! `compact` (or a plugin's command) through the ordinary tool path, with the same handler the
//! user's slash path runs.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{json, Value};

use super::host::{CommandHostContext, SystemCommand};
use super::registry::{CommandRegistry, CommandRegistryError};
use crate::tools::{Tool, ToolContext, ToolOutput};

pub use crate::session::COMMAND_TOOL_PREFIX;

/// Providers accept tool names of at most this many characters.
const MAX_TOOL_NAME_LEN: usize = 64;

/// Length the body is cut to when the full name would be too long, leaving room for the hash.
const TRUNCATED_BODY_LEN: usize = 40;

/// The provider-safe tool name of a command: `robota_command_` plus the name with a leading `/`
/// and anything after the first space dropped, characters outside `[A-Za-z0-9_-]` replaced by
/// `_`, runs of `_` collapsed and edge `_` trimmed (as TypeScript Robota does).
///
/// Names that would exceed 64 characters (or be empty) get the body cut to 40 characters plus
/// `_` and 8 hex digits of a hash of the full name, so distinct long names stay distinct. The hash
/// is FNV-1a rather than TypeScript's SHA-256 prefix (no hashing crate here); only very long
/// names are affected.
pub fn command_tool_name(name: &str) -> String {
    let first = name
        .trim()
        .trim_start_matches('/')
        .split_whitespace()
        .next()
        .unwrap_or("");
    let mut body = String::with_capacity(first.len());
    for c in first.chars() {
        let c = if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
            c
        } else {
            '_'
        };
        if c == '_' && body.ends_with('_') {
            continue;
        }
        body.push(c);
    }
    let body = body.trim_matches('_');
    let full = format!("{COMMAND_TOOL_PREFIX}{body}");
    if !body.is_empty() && full.len() <= MAX_TOOL_NAME_LEN {
        return full;
    }
    let cut: String = body.chars().take(TRUNCATED_BODY_LEN).collect();
    format!("{COMMAND_TOOL_PREFIX}{cut}_{:08x}", fnv1a(name))
}

fn fnv1a(text: &str) -> u32 {
    text.bytes().fold(0x811c_9dc5_u32, |hash, byte| {
        (hash ^ u32::from(byte)).wrapping_mul(0x0100_0193)
    })
}

/// A model-invocable command as a [`Tool`]. Input `{"args"?: string}`; output the command's
/// message, with `{success, command, message, data, effects, interaction}` as the structured
/// response so the session can apply effects the command requested.
pub struct CommandTool {
    tool_name: String,
    command_name: String,
    description: String,
    command: Arc<dyn SystemCommand>,
    ctx: Arc<dyn CommandHostContext>,
}

impl std::fmt::Debug for CommandTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CommandTool")
            .field("tool_name", &self.tool_name)
            .field("command_name", &self.command_name)
            .finish_non_exhaustive()
    }
}

impl CommandTool {
    /// Projects one command; `command_name` is the name it is invoked by (qualified for plugins).
    pub fn new(
        command_name: impl Into<String>,
        command: Arc<dyn SystemCommand>,
        ctx: Arc<dyn CommandHostContext>,
    ) -> Self {
        let command_name = command_name.into();
        let descriptor = command.descriptor();
        let mut description = format!(
            "{}\n\nRobota command id: {command_name}.",
            descriptor.description
        );
        if let Some(hint) = &descriptor.argument_hint {
            description.push_str(&format!("\n\nArgument grammar: {hint}"));
        }
        CommandTool {
            tool_name: command_tool_name(&command_name),
            command_name,
            description,
            command,
            ctx,
        }
    }

    /// The command this tool runs.
    pub fn command_name(&self) -> &str {
        &self.command_name
    }
}

#[async_trait]
impl Tool for CommandTool {
    fn name(&self) -> &str {
        &self.tool_name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "args": {
                    "type": "string",
                    "description": "Arguments after the command name, as a user would type them."
                }
            },
            "additionalProperties": false
        })
    }

    async fn execute(&self, input: Value, _context: ToolContext) -> ToolOutput {
        let args = match input.get("args") {
            None | Some(Value::Null) => "",
            Some(Value::String(args)) => args.as_str(),
            Some(other) => {
                return ToolOutput::error(format!(
                    "`args` must be a string of command arguments, got {other}"
                ))
            }
        };
        let result = self.command.execute(self.ctx.as_ref(), args.trim()).await;
        let response = json!({
            "success": result.success,
            "command": self.command_name,
            "message": result.message,
            "data": result.data,
            "effects": result.effects,
            "interaction": result.interaction,
        });
        ToolOutput {
            content: result.message,
            is_error: !result.success,
            response,
        }
    }
}

/// One [`CommandTool`] per model-invocable command of `registry`, all sharing `ctx`.
///
/// Fails when two commands would get the same tool name (possible after character replacement,
/// e.g. `a.b` and `a_b`), because the model could then not say which one it means.
pub fn project_command_tools(
    registry: &CommandRegistry,
    ctx: Arc<dyn CommandHostContext>,
) -> Result<Vec<CommandTool>, CommandRegistryError> {
    let mut seen: BTreeMap<String, String> = BTreeMap::new();
    let mut tools = Vec::new();
    for registered in registry.model_invocable() {
        let tool = CommandTool::new(
            registered.name.clone(),
            Arc::clone(&registered.command),
            Arc::clone(&ctx),
        );
        if let Some(first) = seen.insert(tool.tool_name.clone(), registered.name.clone()) {
            return Err(CommandRegistryError::ToolNameCollision {
                tool_name: tool.tool_name,
                first,
                second: registered.name.clone(),
            });
        }
        tools.push(tool);
    }
    Ok(tools)
}
