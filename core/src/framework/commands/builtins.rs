//! The first built-in command modules: `help`, `clear`, `compact`, `context`, `cost`,
//! `permissions [mode]`, `model`, `rename`, `resume` and `exit`.
//!
//! Messages follow TypeScript Robota's command modules (reference §6) where it has the command.
//! Every value comes from [`CommandHostContext`]; host actions (exit, picker, model switch) are
//! returned as [`CommandEffect`]s for the host to apply.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::json;

use super::host::{CommandHostContext, CommandModule, SystemCommand};
use super::types::{
    CommandDescriptor, CommandEffect, CommandInteraction, CommandLifecycle, CommandResult,
    CommandSource, InteractionOption, InteractionPrompt, SubcommandDescriptor,
};
use crate::permissions::PermissionMode;

/// Longest session name `rename` accepts, so titles and picker rows stay readable.
pub const MAX_SESSION_NAME_CHARS: usize = 100;

/// Width the command name is padded to in `help`, as in TypeScript Robota.
const HELP_NAME_WIDTH: usize = 32;

/// What an `InteractiveSession` composes by default: [`builtin_command_modules`] plus the
/// `agent` command's module ([`agent_command_module`](super::agent_command_module)), which
/// requests the agent executor (agent definitions, subagents), and the `skills` command's
/// module ([`skills_command_module`](crate::framework::skills::skills_command_module)), which
/// requests skills (discovery, the `Skill` tool, the skills list in the system prompt), the
/// `plugin`/`reload-plugins` module
/// ([`plugin_command_module`](crate::framework::plugins::plugin_command_module)), the `mcp`
/// command's module ([`mcp_command_module`](super::mcp::mcp_command_module)), the `background`
/// command ([`background_command_module`](crate::framework::background::background_command_module)), plus `rewind`
/// (edit checkpoints), `memory` (project memory), `reset`/`language`/`statusline` (settings
/// effects for the host) and `provider` (provider profiles and their probe).
pub fn default_command_modules() -> Vec<CommandModule> {
    let mut modules = builtin_command_modules();
    modules.push(super::agent::agent_command_module());
    modules.push(crate::framework::skills::skills_command_module());
    modules.push(crate::framework::plugins::plugin_command_module());
    modules.push(crate::framework::checkpoints::rewind_command_module());
    modules.push(crate::framework::memory::memory_command_module());
    modules.push(super::mcp::mcp_command_module());
    modules.push(super::settings_commands::settings_command_module());
    modules.push(crate::framework::background::background_command_module());
    modules.push(super::provider::provider_command_module());
    modules
}

/// All built-in modules, in the order `help` should list their commands' sources.
pub fn builtin_command_modules() -> Vec<CommandModule> {
    let builtin = |name: &str| CommandModule::new(name, CommandSource::Builtin);
    vec![
        builtin("robota-command-help").with_command(Arc::new(HelpCommand::new())),
        builtin("robota-command-session")
            .with_command(Arc::new(ClearCommand::new()))
            .with_command(Arc::new(RenameCommand::new()))
            .with_command(Arc::new(ResumeCommand::new()))
            .with_command(Arc::new(CostCommand::new())),
        builtin("robota-command-compact").with_command(Arc::new(CompactCommand::new())),
        builtin("robota-command-context").with_command(Arc::new(ContextCommand::new())),
        builtin("robota-command-permissions").with_command(Arc::new(PermissionsCommand::new())),
        builtin("robota-command-model").with_command(Arc::new(ModelCommand::new())),
        builtin("robota-command-exit").with_command(Arc::new(ExitCommand::new())),
    ]
}

/// `help [command]`: lists the session's commands, or details one.
#[derive(Debug)]
pub struct HelpCommand {
    descriptor: CommandDescriptor,
}

impl HelpCommand {
    /// The command.
    pub fn new() -> Self {
        HelpCommand {
            descriptor: CommandDescriptor::new("help", "Show available commands")
                .with_argument_hint("[command]"),
        }
    }
}

impl Default for HelpCommand {
    fn default() -> Self {
        Self::new()
    }
}

fn usage_line(descriptor: &CommandDescriptor) -> String {
    match &descriptor.argument_hint {
        Some(hint) => format!("/{} {hint}", descriptor.name),
        None => format!("/{}", descriptor.name),
    }
}

#[async_trait]
impl SystemCommand for HelpCommand {
    fn descriptor(&self) -> &CommandDescriptor {
        &self.descriptor
    }

    async fn execute(&self, ctx: &dyn CommandHostContext, args: &str) -> CommandResult {
        let mut commands: Vec<CommandDescriptor> = ctx
            .commands()
            .into_iter()
            .filter(|c| c.user_invocable)
            .collect();
        commands.sort_by(|a, b| a.name.cmp(&b.name));
        let wanted = args.trim().trim_start_matches('/');
        if !wanted.is_empty() {
            let Some(command) = commands
                .iter()
                .find(|c| c.name == wanted || c.aliases.iter().any(|a| a == wanted))
            else {
                return CommandResult::error(format!(
                    "Unknown command: {wanted}. Run /help to list commands."
                ));
            };
            let mut text = format!("{}\n  {}", usage_line(command), command.description);
            if !command.aliases.is_empty() {
                text.push_str(&format!("\n  Aliases: {}", command.aliases.join(", ")));
            }
            for sub in &command.subcommands {
                text.push_str(&format!("\n    {} — {}", sub.name, sub.description));
            }
            return CommandResult::ok(text).with_data(json!({ "command": command }));
        }
        let mut text = String::from("Available commands:");
        for command in &commands {
            text.push_str(&format!(
                "\n  {:<width$} — {}",
                format!("/{}", command.name),
                command.description,
                width = HELP_NAME_WIDTH
            ));
        }
        let names: Vec<&str> = commands.iter().map(|c| c.name.as_str()).collect();
        CommandResult::ok(text).with_data(json!({ "commands": names }))
    }
}

/// Answers that confirm a yes/no interaction.
fn is_yes(answer: &str) -> bool {
    matches!(
        answer.trim().to_lowercase().as_str(),
        "y" | "yes" | "-y" | "--yes" | "confirm"
    )
}

fn yes_no_options() -> Vec<InteractionOption> {
    vec![InteractionOption::new("yes"), InteractionOption::new("no")]
}

/// `clear`: asks for confirmation, then clears the conversation.
#[derive(Debug)]
pub struct ClearCommand {
    descriptor: CommandDescriptor,
}

impl ClearCommand {
    /// The command.
    pub fn new() -> Self {
        ClearCommand {
            descriptor: CommandDescriptor::new("clear", "Clear conversation history")
                .with_argument_hint("[yes]"),
        }
    }
}

impl Default for ClearCommand {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait]
impl SystemCommand for ClearCommand {
    fn descriptor(&self) -> &CommandDescriptor {
        &self.descriptor
    }

    async fn execute(&self, ctx: &dyn CommandHostContext, args: &str) -> CommandResult {
        let args = args.trim();
        if args.is_empty() {
            // Clearing cannot be undone, so the user confirms first (as TypeScript Robota asks).
            return CommandResult::ok("Clear conversation history?").with_interaction(
                CommandInteraction {
                    prompt: InteractionPrompt::Choice {
                        prompt: "Clear conversation history?".into(),
                        options: yes_no_options(),
                        description: None,
                    },
                    command: "clear".into(),
                    args_prefix: String::new(),
                },
            );
        }
        if !is_yes(args) {
            return CommandResult::ok("Clear cancelled.");
        }
        match ctx.clear_conversation().await {
            Ok(()) => CommandResult::ok("Conversation cleared.")
                .with_effect(CommandEffect::ConversationHistoryCleared),
            Err(e) => CommandResult::error(format!("Could not clear the conversation: {e}")),
        }
    }
}

/// `compact [instructions]`: summarizes older messages to free context. Blocking and
/// model-invocable, as in TypeScript Robota.
#[derive(Debug)]
pub struct CompactCommand {
    descriptor: CommandDescriptor,
}

impl CompactCommand {
    /// The command.
    pub fn new() -> Self {
        CompactCommand {
            descriptor: CommandDescriptor::new(
                "compact",
                "Compress the context window (optional focus instructions)",
            )
            .with_argument_hint("[instructions]")
            .model_invocable()
            .with_lifecycle(CommandLifecycle::Blocking),
        }
    }
}

impl Default for CompactCommand {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait]
impl SystemCommand for CompactCommand {
    fn descriptor(&self) -> &CommandDescriptor {
        &self.descriptor
    }

    async fn execute(&self, ctx: &dyn CommandHostContext, args: &str) -> CommandResult {
        let instructions = Some(args.trim()).filter(|a| !a.is_empty());
        match ctx.compact(instructions).await {
            Ok(summary) if summary.scheduled => {
                CommandResult::ok("Compaction scheduled: it will run when this turn ends.")
                    .with_data(json!({"scheduled": true}))
            }
            Ok(summary) => {
                let share = if summary.messages_before == 0 {
                    0.0
                } else {
                    summary.removed_messages as f64 * 100.0 / summary.messages_before as f64
                };
                CommandResult::ok(format!(
                    "Context compacted.\n  Removed messages: {} ({share:.0}% of total)\n  \
                     Context: {:.0}% → {:.0}%",
                    summary.removed_messages,
                    summary.context_before_percent,
                    summary.context_after_percent
                ))
                .with_data(json!(summary))
            }
            Err(e) => CommandResult::error(format!("Compaction failed: {e}")),
        }
    }
}

/// `context`: context window usage and the auto-compact policy.
#[derive(Debug)]
pub struct ContextCommand {
    descriptor: CommandDescriptor,
}

impl ContextCommand {
    /// The command.
    pub fn new() -> Self {
        ContextCommand {
            descriptor: CommandDescriptor::new("context", "Token usage: used / max / percentage")
                .with_argument_hint("[auto [on | off | <percent>]]")
                .with_subcommands(vec![SubcommandDescriptor::new(
                    "auto",
                    "Show or change automatic compaction: on, off, or the percentage of the \
                     context window at which it runs (saved in the project's local settings)",
                )]),
        }
    }
}

impl Default for ContextCommand {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait]
impl SystemCommand for ContextCommand {
    fn descriptor(&self) -> &CommandDescriptor {
        &self.descriptor
    }

    async fn execute(&self, ctx: &dyn CommandHostContext, args: &str) -> CommandResult {
        let words: Vec<&str> = args.split_whitespace().collect();
        match words.as_slice() {
            [] => {}
            ["auto"] => return show_auto_compact(ctx),
            ["auto", setting] => return set_auto_compact(ctx, setting).await,
            _ => {
                return CommandResult::error(format!(
                    "Unknown argument: {}. Usage: /context [auto [on | off | <percent>]]",
                    args.trim()
                ))
            }
        }
        let state = ctx.context_state();
        let auto = match state.auto_compact_percent {
            Some(percent) => format!("{percent:.1}%"),
            None => "off".to_string(),
        };
        CommandResult::ok(format!(
            "Context: {} / {} tokens ({:.0}%)\nAuto compact: {auto}\nHistory: {} messages",
            state.used_tokens, state.max_tokens, state.used_percent, state.message_count
        ))
        .with_data(json!(state))
    }
}

/// `context auto`: the automatic-compaction policy.
fn show_auto_compact(ctx: &dyn CommandHostContext) -> CommandResult {
    let Some(policy) = ctx.compaction_policy() else {
        return CommandResult::error("This host has no automatic compaction.");
    };
    let state = ctx.context_state();
    let message = match state.auto_compact_percent {
        Some(percent) => format!(
            "Auto compact: on at {percent:.1}% of the context window (now {:.0}%).",
            state.used_percent
        ),
        None => format!(
            "Auto compact: off (it would run at {:.1}% of the context window).",
            policy.threshold * 100.0
        ),
    };
    CommandResult::ok(message).with_data(json!({
        "enabled": state.auto_compact_percent.is_some(),
        "threshold": policy.threshold,
    }))
}

/// The threshold a `context auto` setting names: `70`, `70%` or `0.7` all mean 70% of the
/// context window.
fn parse_threshold(setting: &str) -> Option<f64> {
    let (number, percent) = match setting.strip_suffix('%') {
        Some(number) => (number, true),
        None => (setting, false),
    };
    let value: f64 = number.trim().parse().ok().filter(|v: &f64| v.is_finite())?;
    let fraction = if percent || value > 1.0 {
        value / 100.0
    } else {
        value
    };
    (fraction > 0.0 && fraction <= 1.0).then_some(fraction)
}

/// `context auto on | off | <percent>`: changes the live session's policy, then saves it as
/// `autoCompactThreshold` in the project's local settings, the file settings of this project
/// that outrank the shared project and user files (a session that cannot save still changes).
async fn set_auto_compact(ctx: &dyn CommandHostContext, setting: &str) -> CommandResult {
    let Some(mut policy) = ctx.compaction_policy() else {
        return CommandResult::error("This host has no automatic compaction.");
    };
    match setting.to_ascii_lowercase().as_str() {
        "on" => policy.enabled = true,
        "off" => policy.enabled = false,
        other => match parse_threshold(other) {
            Some(threshold) => {
                policy.enabled = true;
                policy.threshold = threshold;
            }
            None => {
                return CommandResult::error(format!(
                    "`{setting}` is not on, off or a percentage of the context window (1–100, \
                     e.g. 80 or 80%). Usage: /context auto [on | off | <percent>]"
                ))
            }
        },
    }
    if let Err(error) = ctx.set_compaction_policy(policy).await {
        return CommandResult::error(format!("Could not change automatic compaction: {error}"));
    }
    let now = if policy.enabled {
        format!(
            "Auto compact: on at {:.1}% of the context window.",
            policy.threshold * 100.0
        )
    } else {
        "Auto compact: off.".to_string()
    };
    let value = if policy.enabled {
        json!(policy.threshold)
    } else {
        json!(false)
    };
    let saved = ctx
        .update_settings(
            crate::session::SettingsDestination::LocalSettings,
            json!({ "autoCompactThreshold": value }),
        )
        .await;
    let (message, saved_to) = match saved {
        Ok(path) => (
            format!("{now} Saved in {}.", path.display()),
            Some(path.display().to_string()),
        ),
        Err(error) => (
            format!("{now} Applies to this session only (not saved: {error})."),
            None,
        ),
    };
    CommandResult::ok(message).with_data(json!({
        "enabled": policy.enabled,
        "threshold": policy.threshold,
        "saved_to": saved_to,
    }))
}

/// `cost`: session id, message count, tokens and estimated cost.
#[derive(Debug)]
pub struct CostCommand {
    descriptor: CommandDescriptor,
}

impl CostCommand {
    /// The command.
    pub fn new() -> Self {
        CostCommand {
            descriptor: CommandDescriptor::new("cost", "Show session tokens and estimated cost"),
        }
    }
}

impl Default for CostCommand {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait]
impl SystemCommand for CostCommand {
    fn descriptor(&self) -> &CommandDescriptor {
        &self.descriptor
    }

    async fn execute(&self, ctx: &dyn CommandHostContext, args: &str) -> CommandResult {
        if !args.trim().is_empty() {
            return CommandResult::error(format!(
                "Unknown argument: {}. Usage: /cost",
                args.trim()
            ));
        }
        let usage = ctx.usage_summary();
        let messages = ctx.context_state().message_count;
        let cost = match usage.cost_usd {
            Some(cost) => format!("${cost:.4}"),
            None => "unknown (no pricing for this model)".to_string(),
        };
        CommandResult::ok(format!(
            "Session: {}\nMessages: {messages}\nTokens: {} input, {} output ({} cache read, {} \
             cache write)\nEstimated cost: {cost}",
            ctx.session_id(),
            usage.input_tokens,
            usage.output_tokens,
            usage.cache_read_tokens,
            usage.cache_creation_tokens
        ))
        .with_data(json!({ "session_id": ctx.session_id(), "messages": messages, "usage": usage }))
    }
}

/// The modes `permissions` offers. `dontAsk` is left out on purpose: it is for headless runs,
/// where no one could type the command.
const SELECTABLE_MODES: [PermissionMode; 4] = [
    PermissionMode::Plan,
    PermissionMode::Default,
    PermissionMode::AcceptEdits,
    PermissionMode::BypassPermissions,
];

fn valid_modes() -> String {
    SELECTABLE_MODES
        .iter()
        .map(|m| m.as_str())
        .collect::<Vec<_>>()
        .join(" | ")
}

/// `permissions [mode]`: shows the permission state, or changes the mode. User-invocable only:
/// the model must never raise its own permissions.
#[derive(Debug)]
pub struct PermissionsCommand {
    descriptor: CommandDescriptor,
}

impl PermissionsCommand {
    /// The command.
    pub fn new() -> Self {
        let subcommands = SELECTABLE_MODES
            .iter()
            .map(|mode| {
                let what = match mode {
                    PermissionMode::Plan => "Read-only exploration; changes are denied",
                    PermissionMode::AcceptEdits => "Approve file edits in the workspace",
                    PermissionMode::BypassPermissions => "Approve everything not denied by a rule",
                    _ => "Ask before anything that is not read-only",
                };
                SubcommandDescriptor::new(mode.as_str(), what)
            })
            .collect();
        PermissionsCommand {
            descriptor: CommandDescriptor::new(
                "permissions",
                "Show the permission mode and session-approved tools, or change the mode",
            )
            .with_argument_hint("[plan | default | acceptEdits | bypassPermissions]")
            // `mode` is the legacy name of this command.
            .with_alias("mode")
            .with_subcommands(subcommands),
        }
    }
}

impl Default for PermissionsCommand {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait]
impl SystemCommand for PermissionsCommand {
    fn descriptor(&self) -> &CommandDescriptor {
        &self.descriptor
    }

    async fn execute(&self, ctx: &dyn CommandHostContext, args: &str) -> CommandResult {
        let args = args.trim();
        if args.is_empty() {
            let mode = ctx.permission_mode();
            let tools = ctx.session_approved_tools();
            let approved = if tools.is_empty() {
                "No session-approved tools.".to_string()
            } else {
                format!("Session-approved tools: {}", tools.join(", "))
            };
            return CommandResult::ok(format!("Permission mode: {mode}\n{approved}"))
                .with_data(json!({ "mode": mode, "session_approved_tools": tools }));
        }
        let mode = match args.parse::<PermissionMode>() {
            Ok(mode) => mode,
            Err(e) => {
                return CommandResult::error(format!("Invalid mode: {e}. Valid: {}", valid_modes()))
            }
        };
        match ctx.set_permission_mode(mode).await {
            Ok(()) => CommandResult::ok(format!("Permission mode set to: {mode}"))
                .with_data(json!({ "mode": mode })),
            Err(e) => CommandResult::error(format!("Could not change the permission mode: {e}")),
        }
    }
}

/// `model [id]`: shows the model, or asks the host to switch it.
#[derive(Debug)]
pub struct ModelCommand {
    descriptor: CommandDescriptor,
}

impl ModelCommand {
    /// The command.
    pub fn new() -> Self {
        ModelCommand {
            descriptor: CommandDescriptor::new("model", "Show the current model or switch models")
                .with_argument_hint("[model-id]"),
        }
    }
}

impl Default for ModelCommand {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait]
impl SystemCommand for ModelCommand {
    fn descriptor(&self) -> &CommandDescriptor {
        &self.descriptor
    }

    async fn execute(&self, ctx: &dyn CommandHostContext, args: &str) -> CommandResult {
        let requested = args.trim();
        let available = ctx.available_models();
        let known = ctx.known_models();
        let current = ctx.model();
        let shown = current.clone().unwrap_or_else(|| "unknown".to_string());
        if requested.is_empty() {
            let mut message = format!("Current model: {shown}");
            if !known.is_empty() {
                message.push_str(
                    "\nKnown models (context window; USD per million input/output tokens):",
                );
                for model in &known {
                    let marker = if Some(&model.id) == current.as_ref() {
                        "*"
                    } else {
                        " "
                    };
                    let price = model.price.map_or_else(
                        || "price unknown".to_string(),
                        |p| format!("${}/${}", p.input_per_mtok, p.output_per_mtok),
                    );
                    message.push_str(&format!(
                        "\n {marker} {} ({} tokens; {price})",
                        model.id, model.context_window
                    ));
                }
                message.push_str("\nOther model ids are accepted too: `model <id>`.");
            }
            let result = CommandResult::ok(message)
                .with_data(json!({ "model": current, "available": available, "known": known }));
            let choices: Vec<String> = if available.is_empty() {
                known.iter().map(|m| m.id.clone()).collect()
            } else {
                available.clone()
            };
            if choices.is_empty() {
                return result;
            }
            return result.with_interaction(CommandInteraction {
                prompt: InteractionPrompt::Choice {
                    prompt: "Select a model".into(),
                    options: choices.into_iter().map(InteractionOption::new).collect(),
                    description: Some(format!("Current model: {shown}")),
                },
                command: "model".into(),
                args_prefix: String::new(),
            });
        }
        if current.as_deref() == Some(requested) {
            return CommandResult::ok(format!("Already using {requested}."));
        }
        // Providers add models faster than any list: an unlisted id is used, with a warning.
        let listed =
            available.iter().any(|m| m == requested) || known.iter().any(|m| m.id == requested);
        let has_list = !available.is_empty() || !known.is_empty();
        let warning = (has_list && !listed).then(|| {
            format!(
                "Warning: `{requested}` is not a model robota knows for this provider; using it \
                 anyway (a wrong id fails at the next prompt)."
            )
        });
        let effect = CommandEffect::ModelChangeRequested {
            model_id: requested.to_string(),
        };
        let mut message = match ctx.switch_model(requested).await {
            Ok(Some(window)) => {
                format!("Switched to {requested} (context window {window} tokens).")
            }
            Ok(None) => format!("Model change requested: {requested}"),
            Err(error) => return CommandResult::error(error.to_string()),
        };
        if let Some(warning) = &warning {
            message = format!("{message}\n{warning}");
        }
        CommandResult::ok(message)
            .with_data(json!({ "model": requested, "previous": current, "warning": warning }))
            .with_effect(effect)
    }
}

/// Trims, drops one pair of surrounding quotes and collapses whitespace, so `rename "My  run"`
/// and `rename My run` give the same name.
fn normalize_session_name(raw: &str) -> String {
    let trimmed = raw.trim();
    let unquoted = ['"', '\'']
        .iter()
        .find_map(|q| {
            trimmed
                .strip_prefix(*q)
                .and_then(|rest| rest.strip_suffix(*q))
        })
        .unwrap_or(trimmed);
    unquoted.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `rename <name>`: renames the session.
#[derive(Debug)]
pub struct RenameCommand {
    descriptor: CommandDescriptor,
}

impl RenameCommand {
    /// The command.
    pub fn new() -> Self {
        RenameCommand {
            descriptor: CommandDescriptor::new("rename", "Rename the current session")
                .with_argument_hint("<name>"),
        }
    }
}

impl Default for RenameCommand {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait]
impl SystemCommand for RenameCommand {
    fn descriptor(&self) -> &CommandDescriptor {
        &self.descriptor
    }

    async fn execute(&self, ctx: &dyn CommandHostContext, args: &str) -> CommandResult {
        let name = normalize_session_name(args);
        if name.is_empty() {
            return CommandResult::ok("Enter a new session name.").with_interaction(
                CommandInteraction {
                    prompt: InteractionPrompt::Text {
                        prompt: "New session name".into(),
                        default: ctx.session_name(),
                        description: None,
                        masked: false,
                    },
                    command: "rename".into(),
                    args_prefix: String::new(),
                },
            );
        }
        if name.chars().count() > MAX_SESSION_NAME_CHARS {
            return CommandResult::error(format!(
                "Session name is too long ({} characters); use at most {MAX_SESSION_NAME_CHARS}.",
                name.chars().count()
            ));
        }
        match ctx.set_session_name(&name).await {
            Ok(()) => CommandResult::ok(format!("Session renamed to \"{name}\"."))
                .with_effect(CommandEffect::SessionRenamed { name }),
            Err(e) => CommandResult::error(format!("Could not rename the session: {e}")),
        }
    }
}

/// `resume [session-id]`: asks the host to show its session picker, or to resume one session.
#[derive(Debug)]
pub struct ResumeCommand {
    descriptor: CommandDescriptor,
}

impl ResumeCommand {
    /// The command.
    pub fn new() -> Self {
        ResumeCommand {
            descriptor: CommandDescriptor::new("resume", "Resume a saved session")
                .with_argument_hint("[session-id]"),
        }
    }
}

impl Default for ResumeCommand {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait]
impl SystemCommand for ResumeCommand {
    fn descriptor(&self) -> &CommandDescriptor {
        &self.descriptor
    }

    async fn execute(&self, ctx: &dyn CommandHostContext, args: &str) -> CommandResult {
        let id = args.trim();
        if id.is_empty() {
            return CommandResult::ok("Choose a session to resume.")
                .with_effect(CommandEffect::SessionPickerRequested);
        }
        if id.split_whitespace().count() > 1 {
            return CommandResult::error("Usage: /resume [session-id] (one id, no spaces)");
        }
        if id == ctx.session_id() {
            return CommandResult::ok("That is the current session.");
        }
        CommandResult::ok(format!("Resuming session {id}.")).with_effect(
            CommandEffect::SessionResumeRequested {
                session_id: id.to_string(),
            },
        )
    }
}

/// `exit`: asks the host to end the session. The host does the shutdown and process exit.
#[derive(Debug)]
pub struct ExitCommand {
    descriptor: CommandDescriptor,
}

impl ExitCommand {
    /// The command.
    pub fn new() -> Self {
        ExitCommand {
            descriptor: CommandDescriptor::new("exit", "Exit the session").with_alias("quit"),
        }
    }
}

impl Default for ExitCommand {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait]
impl SystemCommand for ExitCommand {
    fn descriptor(&self) -> &CommandDescriptor {
        &self.descriptor
    }

    async fn execute(&self, _ctx: &dyn CommandHostContext, _args: &str) -> CommandResult {
        CommandResult::ok("Goodbye.").with_effect(CommandEffect::SessionExitRequested {
            reason: Some("user".into()),
            message: None,
        })
    }
}
