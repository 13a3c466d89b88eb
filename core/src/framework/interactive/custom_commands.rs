//! Running custom slash commands in an interactive session: loading them next to the skills,
//! filling in their arguments, running their `` !`command` `` snippets through the permission
//! layer exactly as a `Bash` call of the model is checked (the command's `allowed-tools`
//! pre-approve, and the grant lasts as long as its prompt runs), attaching `@file` references,
//! and sending the prompt — on the command's `model` when it names one.
//!
//! A command run by the user becomes the next prompt (shown as `/name args`); one run by the
//! model (through the `Skill` tool) returns its prompt as the tool result. Either way a
//! `skill_activation` event and a `skill-activation` history entry report the run, as for an
//! inline skill.

use std::sync::Arc;

use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::skills::ActiveSkill;
use super::{Inner, SubmitStatus};
use crate::engine::{GateCall, GateDecision, ToolCallGate};
use crate::framework::commands::custom::{
    custom_command_modules, default_command_roots, replace_snippets, shell_snippets,
    substitute_command_arguments, CommandRegistration, CommandRoot, CommandWarning,
    CustomCommandCatalog,
};
use crate::framework::commands::{CommandRegistry, CommandResult, CommandSource};
use crate::framework::skills::{SkillActivation, SkillCatalog, SkillInvocation};
use crate::session::SessionWarning;
use crate::tools::ToolContext;

/// Longest output of one `` !`command` `` snippet inlined into a prompt.
const MAX_SNIPPET_OUTPUT: usize = 30_000;

/// Loads the session's custom commands — the host's registrations, the project's and the
/// user's folders, then `extra_roots` — and adds them to `registry`, one module per source. A
/// name a command of `registry` or a skill already has is not loaded (a warning says so).
pub(crate) fn load_for_session(
    registry: &mut CommandRegistry,
    skills: Option<&SkillCatalog>,
    cwd: &std::path::Path,
    home: Option<&std::path::Path>,
    registrations: &[CommandRegistration],
    extra_roots: &[CommandRoot],
) -> CustomCommandCatalog {
    let mut catalog = CustomCommandCatalog::default();
    for registration in registrations {
        match registration {
            CommandRegistration::Data { name, content } => {
                catalog.add_data(name, content, CommandSource::Host)
            }
            CommandRegistration::Dir { dir } => {
                catalog.add_root(&CommandRoot::required(dir, CommandSource::Host))
            }
        }
    }
    for root in default_command_roots(cwd, home).iter().chain(extra_roots) {
        catalog.add_root(root);
    }
    let names: Vec<String> = catalog.commands().map(|c| c.name.clone()).collect();
    for name in names {
        let taken = if registry.get(&name).is_some() {
            Some("a command of that name (built in or added by the host) takes precedence")
        } else if skills.is_some_and(|s| s.get(&name).is_some()) {
            Some("a skill of that name takes precedence, as in Claude Code")
        } else {
            None
        };
        let Some(reason) = taken else { continue };
        if let Some(command) = catalog.remove(&name) {
            catalog.warnings.push(CommandWarning {
                file: command.file.clone(),
                line: None,
                message: format!("custom command `/{name}` is not loaded: {reason}"),
            });
        }
    }
    for module in custom_command_modules(&catalog) {
        let module_name = module.name.clone();
        if let Err(error) = registry.add_module(module) {
            catalog.warnings.push(CommandWarning {
                file: None,
                line: None,
                message: format!("custom commands of `{module_name}` are not loaded: {error}"),
            });
        }
    }
    catalog
}

/// A custom command warning as a session warning (kind `custom_command`).
pub(crate) fn session_warning(warning: &CommandWarning) -> SessionWarning {
    SessionWarning {
        file: warning.file.clone(),
        json_path: String::new(),
        kind: "custom_command".into(),
        message: match warning.line {
            Some(line) => format!("line {line}: {}", warning.message),
            None => warning.message.clone(),
        },
    }
}

impl Inner {
    /// Runs the custom command `name` with `args` for the user or the model (see the module
    /// docs). `Err` when it cannot run at all (unknown, refused for this caller, unreadable,
    /// a bad `@file` reference).
    pub(crate) async fn run_custom_command(
        self: &Arc<Self>,
        name: &str,
        args: &str,
        by_model: bool,
    ) -> Result<CommandResult, String> {
        let Some(catalog) = &self.custom else {
            return Err("custom commands are not enabled in this session".into());
        };
        let name = name.trim().trim_start_matches('/');
        let command = match catalog.get(name) {
            Some(command) if by_model && !command.model_invocable() => {
                return Err(format!(
                    "command `/{name}` has `disable-model-invocation: true`: only the user can \
                     run it"
                ))
            }
            Some(command) => command.clone(),
            None => return Err(format!("unknown custom command `/{name}`")),
        };
        let body = command
            .load_body()
            .map_err(|w| format!("command `/{name}`: {w}"))?;
        let text = substitute_command_arguments(&body, args);
        // `@file` references are resolved in the command's own text, before any snippet output
        // (which the user did not write) is inlined.
        let (text, context) = self
            .resolve_references(&text)
            .map_err(|error| format!("command `/{name}`: {error}"))?;
        let invocation = if by_model {
            SkillInvocation::ModelTool
        } else {
            SkillInvocation::UserSlash
        };
        let mut activation = SkillActivation::started_inline(
            &command.name,
            command.source.kind(),
            command.file.clone(),
            args,
            invocation,
        );
        let grant = self.grant_tools(
            &format!("command:{}", command.name),
            &command.allowed_tools,
            &mut activation,
        );
        let snippets = shell_snippets(&text);
        let mut outputs = Vec::with_capacity(snippets.len());
        for snippet in &snippets {
            outputs.push(self.run_snippet(&snippet.command).await);
        }
        let text = replace_snippets(&text, &snippets, &outputs);
        let model = self.run_model(command.model.as_deref(), true, &mut activation);
        if by_model {
            self.switch_running_model(model.as_deref(), &mut activation);
        }
        self.report_activation(&activation, true);
        let active = ActiveSkill {
            activation,
            grant,
            model,
        };
        if by_model {
            self.keep_for_run(active);
            let mut message = text;
            if let Some(context) = context {
                message.push_str(&format!("\n\n{context}"));
            }
            return Ok(CommandResult::ok(message).with_data(json!({
                "command": command.name,
                "mode": "inject",
            })));
        }
        let display = format!("/{} {}", command.name, args.trim())
            .trim_end()
            .to_string();
        let notes = active.activation.notes.clone();
        match self.enqueue_resolved(text, context, &display, None, Some(active.clone())) {
            Ok((status, _)) => Ok(CommandResult::ok(format!(
                "Command `/{}` {}.",
                command.name,
                if status == SubmitStatus::Queued {
                    "queued: it runs when the current prompt ends"
                } else {
                    "started"
                }
            ))
            .with_data(json!({
                "command": command.name,
                "mode": "inject",
                "source": command.source,
                "model": command.model,
                "notes": notes,
            }))),
            Err(error) => {
                let message = error.to_string();
                self.finish_skill(active, Some(message.clone()));
                Err(message)
            }
        }
    }

    /// Runs one `` !`command` `` snippet as the model's `Bash` call would run: checked by the
    /// session's permission layer (rules, mode, hooks, the host's permission handler), then run
    /// by the session's `Bash` tool. Returns what the prompt shows in its place: the output, or
    /// why the command did not run or failed.
    async fn run_snippet(&self, command: &str) -> String {
        let Some(bash) = self.session.tool("Bash") else {
            return format!("[`{command}` was not run: this session has no Bash tool]");
        };
        let input = json!({
            "command": command,
            "description": "Run for a custom command's prompt",
        });
        let call = GateCall {
            tool_use_id: format!("command_snippet_{}", uuid::Uuid::new_v4().simple()),
            name: "Bash".into(),
            input: input.clone(),
            read_only: false,
        };
        let cancel = self
            .lock()
            .cancel
            .as_ref()
            .map(CancellationToken::child_token)
            .unwrap_or_default();
        let enforcer = self.session.enforcer();
        let input = match enforcer.before_call(&call, &cancel).await {
            GateDecision::Allow => input,
            GateDecision::AllowWithInput { input } => input,
            GateDecision::Deny { message } => {
                return format!("[`{command}` was not run: {message}]");
            }
        };
        let context = ToolContext {
            tool_use_id: call.tool_use_id.clone(),
            cwd: self.session.cwd().to_path_buf(),
            cancel,
        };
        let output = bash.execute(input, context).await;
        let output = enforcer.after_call(&call, output).await;
        let mut text = output.content.trim_end().to_string();
        if text.len() > MAX_SNIPPET_OUTPUT {
            let mut end = MAX_SNIPPET_OUTPUT;
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            text.truncate(end);
            text.push_str("\n[output cut]");
        }
        if output.is_error {
            format!("[`{command}` failed: {text}]")
        } else {
            text
        }
    }
}
