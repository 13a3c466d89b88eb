//! Commands that ask the host to change its settings (spec 000 "System Command System"): `reset`
//! (settings reset, after a confirmation), `language <code>` (the response language) and
//! `statusline on | off | reset | git on | git off` (status line patches). They change nothing
//! themselves: each returns a typed effect the host applies at its own boundary.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::json;

use super::host::{CommandHostContext, CommandModule, SystemCommand};
use super::types::{
    CommandDescriptor, CommandEffect, CommandInteraction, CommandResult, CommandSource,
    InteractionOption, InteractionPrompt, SubcommandDescriptor,
};

/// The module holding `reset`, `language` and `statusline`.
pub fn settings_command_module() -> CommandModule {
    CommandModule::new("robota-command-settings", CommandSource::Builtin)
        .with_command(Arc::new(ResetCommand::new()))
        .with_command(Arc::new(LanguageCommand::new()))
        .with_command(Arc::new(StatuslineCommand::new()))
}

/// `reset`: asks to confirm, then requests a settings reset (`settings_reset_requested`).
#[derive(Debug)]
pub struct ResetCommand {
    descriptor: CommandDescriptor,
}

impl ResetCommand {
    /// The command.
    pub fn new() -> Self {
        ResetCommand {
            descriptor: CommandDescriptor::new("reset", "Delete settings and start over")
                .with_argument_hint("[yes | no]"),
        }
    }
}

impl Default for ResetCommand {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait]
impl SystemCommand for ResetCommand {
    fn descriptor(&self) -> &CommandDescriptor {
        &self.descriptor
    }

    async fn execute(&self, _ctx: &dyn CommandHostContext, args: &str) -> CommandResult {
        match args.trim().to_ascii_lowercase().as_str() {
            "" => CommandResult::ok("Delete settings and start over?").with_interaction(
                CommandInteraction {
                    prompt: InteractionPrompt::Choice {
                        prompt: "Delete settings and start over?".into(),
                        options: vec![InteractionOption::new("yes"), InteractionOption::new("no")],
                        description: None,
                    },
                    command: "reset".into(),
                    args_prefix: String::new(),
                },
            ),
            "yes" | "y" => CommandResult::ok("Reset requested.")
                .with_effect(CommandEffect::SettingsResetRequested),
            "no" | "n" => CommandResult::ok("Reset cancelled; nothing changed."),
            other => CommandResult::error(format!(
                "`reset {other}`: answer yes or no (Usage: reset [yes | no])"
            )),
        }
    }
}

/// `language <code>`: saves `language` in the user settings (where the host keeps settings
/// files) and requests the change (`language_change_requested`): the system prompt renders the
/// language when a session is created, so a host applies it by reopening the session (the CLI
/// does).
#[derive(Debug)]
pub struct LanguageCommand {
    descriptor: CommandDescriptor,
}

impl LanguageCommand {
    /// The command.
    pub fn new() -> Self {
        LanguageCommand {
            descriptor: CommandDescriptor::new("language", "Set the response language")
                .with_argument_hint("<code, e.g. en, ko, pt-BR>"),
        }
    }
}

impl Default for LanguageCommand {
    fn default() -> Self {
        Self::new()
    }
}

/// True for a BCP 47-like tag: 2–3 letters, then `-` parts of 2–8 letters or digits.
fn valid_language(code: &str) -> bool {
    let mut parts = code.split('-');
    let first_ok = parts
        .next()
        .is_some_and(|p| (2..=3).contains(&p.len()) && p.chars().all(|c| c.is_ascii_alphabetic()));
    first_ok
        && parts.all(|p| (2..=8).contains(&p.len()) && p.chars().all(|c| c.is_ascii_alphanumeric()))
}

#[async_trait]
impl SystemCommand for LanguageCommand {
    fn descriptor(&self) -> &CommandDescriptor {
        &self.descriptor
    }

    async fn execute(&self, ctx: &dyn CommandHostContext, args: &str) -> CommandResult {
        let code = args.trim();
        if code.is_empty() {
            return CommandResult::ok("Which language should answers be in?").with_interaction(
                CommandInteraction {
                    prompt: InteractionPrompt::Text {
                        prompt: "Language code (en, ko, ja, de, pt-BR, …)".into(),
                        default: None,
                        description: None,
                        masked: false,
                    },
                    command: "language".into(),
                    args_prefix: String::new(),
                },
            );
        }
        if !valid_language(code) {
            return CommandResult::error(format!(
                "`{code}` is not a language code; use a code such as en, ko, ja or pt-BR"
            ));
        }
        let saved = ctx
            .update_settings(
                crate::session::SettingsDestination::UserSettings,
                json!({ "language": code }),
            )
            .await;
        let (message, saved_to) = match saved {
            Ok(path) => (
                format!(
                    "Language set to \"{code}\" (saved in {}); it applies when the session is \
                     reopened.",
                    path.display()
                ),
                Some(path.display().to_string()),
            ),
            Err(error) => (
                format!("Language change to {code} requested (not saved: {error})."),
                None,
            ),
        };
        CommandResult::ok(message)
            .with_effect(CommandEffect::LanguageChangeRequested {
                language: code.to_string(),
            })
            .with_data(json!({ "language": code, "saved_to": saved_to }))
    }
}

/// `statusline on | off | reset | git on | git off`: status line settings patches.
#[derive(Debug)]
pub struct StatuslineCommand {
    descriptor: CommandDescriptor,
}

impl StatuslineCommand {
    /// The command.
    pub fn new() -> Self {
        StatuslineCommand {
            descriptor: CommandDescriptor::new("statusline", "Show or hide the status line")
                .with_argument_hint("[on | off | reset | git on | git off]")
                .with_subcommands(vec![
                    SubcommandDescriptor::new("on", "Show the status line"),
                    SubcommandDescriptor::new("off", "Hide the status line"),
                    SubcommandDescriptor::new("reset", "Back to the default status line"),
                    SubcommandDescriptor::new("git", "Show (on) or hide (off) the git branch"),
                ]),
        }
    }
}

impl Default for StatuslineCommand {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait]
impl SystemCommand for StatuslineCommand {
    fn descriptor(&self) -> &CommandDescriptor {
        &self.descriptor
    }

    async fn execute(&self, _ctx: &dyn CommandHostContext, args: &str) -> CommandResult {
        let words: Vec<String> = args
            .split_whitespace()
            .map(str::to_ascii_lowercase)
            .collect();
        let words: Vec<&str> = words.iter().map(String::as_str).collect();
        let (message, patch) = match words.as_slice() {
            ["on"] => ("Status line on.", json!({"statusLine": {"enabled": true}})),
            ["off"] => (
                "Status line off.",
                json!({"statusLine": {"enabled": false}}),
            ),
            ["reset"] => (
                "Status line reset to the default.",
                json!({"statusLine": null}),
            ),
            ["git", "on"] => (
                "Git branch shown in the status line.",
                json!({"statusLine": {"gitBranch": true}}),
            ),
            ["git", "off"] => (
                "Git branch hidden from the status line.",
                json!({"statusLine": {"gitBranch": false}}),
            ),
            [] => {
                return CommandResult::ok("Status line:").with_interaction(CommandInteraction {
                    prompt: InteractionPrompt::Choice {
                        prompt: "Status line".into(),
                        options: ["on", "off", "reset", "git on", "git off"]
                            .into_iter()
                            .map(InteractionOption::new)
                            .collect(),
                        description: None,
                    },
                    command: "statusline".into(),
                    args_prefix: String::new(),
                })
            }
            _ => {
                return CommandResult::error(format!(
                    "`statusline {}`: Usage: statusline [on | off | reset | git on | git off]",
                    args.trim()
                ))
            }
        };
        CommandResult::ok(message).with_effect(CommandEffect::StatuslineSettingsPatch { patch })
    }
}
