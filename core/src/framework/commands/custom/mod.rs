//! Custom slash commands (Claude Code's `.claude/commands/**/*.md`): Markdown prompts a user,
//! project, host or plugin keeps, run as `/name args` and, unless they opt out, by the model.
//!
//! - [`definition`]: [`CustomCommandDefinition`], discovery from [`CommandRoot`]s
//!   ([`load_custom_commands`]) with its precedence and namespaces, the host's
//!   [`CommandRegistration`]s, and [`CommandWarning`]s for files that cannot be used.
//! - [`render`]: `$ARGUMENTS` / `$1…$n`, the `` !`command` `` snippets, and the system-prompt
//!   section listing the commands the model may run.
//! - [`command`]: [`CustomCommand`] and the per-source [`CommandModule`](super::CommandModule)s
//!   a session composes.
//!
//! Running a command needs the session (permission layer, prompt queue, model), so the
//! [`InteractiveSession`](crate::framework::interactive::InteractiveSession) carries it out behind
//! [`CommandHostContext::run_custom_command`](super::CommandHostContext::run_custom_command):
//! arguments are filled in, each snippet runs through the permission layer as a `Bash` call would
//! (the command's `allowed-tools` pre-approve) and its output is inlined, `@file` references are
//! attached as in typed prompts, and the result is sent as the next prompt — on the command's
//! `model` when it names one.

pub mod command;
pub mod definition;
pub mod render;

pub use command::{custom_command_modules, CustomCommand};
pub use definition::{
    default_command_roots, load_custom_commands, parse_custom_command, CommandRegistration,
    CommandRoot, CommandWarning, CustomCommandCatalog, CustomCommandDefinition, COMMAND_FILE,
};
pub use render::{
    commands_prompt_section, replace_snippets, shell_snippets, substitute_command_arguments,
    ShellSnippet,
};
