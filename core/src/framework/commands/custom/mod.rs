//! Custom slash commands (Claude Code's `.claude/commands/**/*.md`): Markdown prompts a user,
//! project, host or plugin keeps, run as `/name args` and, unless they opt out, by the model.
//!
//! - [`definition`]: [`CustomCommandDefinition`], discovery from [`CommandRoot`]s
//!   ([`load_custom_commands`]) with its precedence and namespaces, the host's
//!   [`CommandRegistration`]s, and [`CommandWarning`]s for files that cannot be used.

pub mod definition;

pub use definition::{
    default_command_roots, load_custom_commands, parse_custom_command, CommandRegistration,
    CommandRoot, CommandWarning, CustomCommandCatalog, CustomCommandDefinition, COMMAND_FILE,
};
