//! [`CommandRegistry`]: the composed set of commands of one session — lookup by name, alias or
//! plugin-qualified name, prefix filtering for completion, subcommands, and collision detection.
//!
//! Plugin commands live under `<plugin>:<command>` so two plugins can ship a command of the same
//! name; a bare name still finds a plugin command when exactly one plugin provides it (spec 000
//! `resolveQualifiedName`). Built-in, project and user commands share one flat namespace, and a
//! second command claiming a taken name or alias is an error rather than a silent override,
//! because which of two `deploy` commands runs should never depend on load order.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::host::{CommandHostContext, CommandModule, SystemCommand};
use super::tool::command_tool_name;
use super::types::{CommandDescriptor, CommandResult, CommandSource, SubcommandDescriptor};

/// A module could not be added.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CommandRegistryError {
    /// A command, alias or plugin name has characters that cannot be typed or qualified.
    #[error(
        "command module `{module}`: invalid name `{name}`: {reason}; names use letters, digits, \
         `-`, `_` and `.` (no slash, no spaces, no `:`)"
    )]
    InvalidName {
        /// The offending name.
        name: String,
        /// The module that declared it.
        module: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// Two commands claim the same name or alias.
    #[error(
        "command `{name}` from module `{new_module}` collides with `{existing_command}` from \
         module `{existing_module}`; rename one of them or remove one module"
    )]
    DuplicateCommand {
        /// The contested name or alias.
        name: String,
        /// The command already holding it.
        existing_command: String,
        /// The module already holding it.
        existing_module: String,
        /// The module being added.
        new_module: String,
    },
    /// A module with this name was already added.
    #[error("command module `{module}` is already registered")]
    DuplicateModule {
        /// The module name.
        module: String,
    },
    /// Two model-invocable commands project to the same tool name.
    #[error(
        "commands `{first}` and `{second}` both project to the tool name `{tool_name}`; rename \
         one of them or make it not model-invocable"
    )]
    ToolNameCollision {
        /// The shared tool name.
        tool_name: String,
        /// The first command.
        first: String,
        /// The second command.
        second: String,
    },
}

/// A command could not be found or run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CommandError {
    /// No command has this name or alias.
    #[error("unknown command `{name}`{}; run `help` to list commands", did_you_mean(.suggestions))]
    UnknownCommand {
        /// The name that was asked for.
        name: String,
        /// Similar command names.
        suggestions: Vec<String>,
    },
    /// A bare name matches commands of several plugins.
    #[error(
        "`{name}` is provided by several plugins ({}); use the qualified name",
        .candidates.join(", ")
    )]
    AmbiguousCommand {
        /// The bare name.
        name: String,
        /// The qualified names it could mean.
        candidates: Vec<String>,
    },
    /// The command exists but is only for the model.
    #[error("command `{name}` cannot be run by a user")]
    NotUserInvocable {
        /// The command.
        name: String,
    },
}

fn did_you_mean(suggestions: &[String]) -> String {
    if suggestions.is_empty() {
        String::new()
    } else {
        let quoted: Vec<String> = suggestions.iter().map(|s| format!("`{s}`")).collect();
        format!(" (did you mean {}?)", quoted.join(", "))
    }
}

/// One composed command: the handler and where it came from.
#[derive(Clone)]
pub struct RegisteredCommand {
    /// The name to invoke it by: the command name, or `<plugin>:<command>` for plugins.
    pub name: String,
    /// The module that contributed it.
    pub module: String,
    /// Where the module came from.
    pub source: CommandSource,
    /// The handler (shared with projected tools).
    pub command: Arc<dyn SystemCommand>,
}

impl std::fmt::Debug for RegisteredCommand {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegisteredCommand")
            .field("name", &self.name)
            .field("module", &self.module)
            .field("source", &self.source)
            .finish_non_exhaustive()
    }
}

impl RegisteredCommand {
    /// The command's metadata.
    pub fn descriptor(&self) -> &CommandDescriptor {
        self.command.descriptor()
    }

    /// A serializable listing entry.
    pub fn entry(&self) -> CommandEntry {
        CommandEntry {
            name: self.name.clone(),
            module: self.module.clone(),
            source: self.source.clone(),
            descriptor: self.descriptor().clone(),
        }
    }
}

/// What [`CommandRegistry::list`] returns for UIs and bindings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommandEntry {
    /// The name to invoke it by (qualified for plugin commands).
    pub name: String,
    /// The contributing module.
    pub module: String,
    /// Where the module came from.
    pub source: CommandSource,
    /// The command's metadata.
    pub descriptor: CommandDescriptor,
}

/// The commands of one session.
#[derive(Clone, Default, Debug)]
pub struct CommandRegistry {
    /// Invocation name → command.
    commands: BTreeMap<String, RegisteredCommand>,
    /// Alias (qualified for plugins) → invocation name.
    aliases: BTreeMap<String, String>,
    /// Names of added modules, in order.
    modules: Vec<String>,
}

fn validate_name(name: &str, module: &str) -> Result<(), CommandRegistryError> {
    let reason = if name.is_empty() {
        Some("it is empty")
    } else if name.starts_with('/') {
        Some("command ids are slash-free; the slash belongs to host input")
    } else if !name
        .chars()
        .all(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | '.'))
    {
        Some("it contains a character that is not allowed")
    } else {
        None
    };
    match reason {
        Some(reason) => Err(CommandRegistryError::InvalidName {
            name: name.to_string(),
            module: module.to_string(),
            reason,
        }),
        None => Ok(()),
    }
}

/// The part after `<plugin>:`, or the whole name.
fn short_name(name: &str) -> &str {
    name.rsplit_once(':').map_or(name, |(_, short)| short)
}

/// Edit distance, for "did you mean" suggestions on typos.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut previous = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitution = previous + usize::from(ca != *cb);
            previous = row[j + 1];
            row[j + 1] = substitution.min(row[j] + 1).min(previous + 1);
        }
    }
    row[b.len()]
}

impl CommandRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// A registry with these modules, in order.
    pub fn with_modules(
        modules: impl IntoIterator<Item = CommandModule>,
    ) -> Result<Self, CommandRegistryError> {
        let mut registry = Self::new();
        for module in modules {
            registry.add_module(module)?;
        }
        Ok(registry)
    }

    /// Adds every command of `module`. All-or-nothing: on a collision or invalid name nothing of
    /// the module is added, so a failed plugin load leaves the registry as it was.
    pub fn add_module(&mut self, module: CommandModule) -> Result<(), CommandRegistryError> {
        if self.modules.contains(&module.name) {
            return Err(CommandRegistryError::DuplicateModule {
                module: module.name,
            });
        }
        let prefix = match &module.source {
            CommandSource::Plugin { plugin } => {
                validate_name(plugin, &module.name)?;
                format!("{plugin}:")
            }
            _ => String::new(),
        };
        // Names claimed so far by this module, to catch collisions inside it too.
        let mut claimed: BTreeMap<String, String> = BTreeMap::new();
        let mut staged = Vec::new();
        for command in &module.commands {
            let descriptor = command.descriptor();
            validate_name(&descriptor.name, &module.name)?;
            let name = format!("{prefix}{}", descriptor.name);
            let mut keys = vec![name.clone()];
            for alias in &descriptor.aliases {
                validate_name(alias, &module.name)?;
                keys.push(format!("{prefix}{alias}"));
            }
            for key in &keys {
                if let Some(existing) = self.owner_of(key) {
                    return Err(CommandRegistryError::DuplicateCommand {
                        name: key.clone(),
                        existing_command: existing.name.clone(),
                        existing_module: existing.module.clone(),
                        new_module: module.name.clone(),
                    });
                }
                if let Some(existing) = claimed.insert(key.clone(), name.clone()) {
                    return Err(CommandRegistryError::DuplicateCommand {
                        name: key.clone(),
                        existing_command: existing,
                        existing_module: module.name.clone(),
                        new_module: module.name.clone(),
                    });
                }
            }
            staged.push((name, keys, Arc::clone(command)));
        }
        for (name, keys, command) in staged {
            for alias in keys.into_iter().skip(1) {
                self.aliases.insert(alias, name.clone());
            }
            self.commands.insert(
                name.clone(),
                RegisteredCommand {
                    name,
                    module: module.name.clone(),
                    source: module.source.clone(),
                    command,
                },
            );
        }
        self.modules.push(module.name);
        Ok(())
    }

    /// Removes a module and its commands (e.g. before reloading a plugin). Returns whether it
    /// was registered.
    pub fn remove_module(&mut self, module: &str) -> bool {
        let Some(index) = self.modules.iter().position(|m| m == module) else {
            return false;
        };
        self.modules.remove(index);
        self.commands.retain(|_, c| c.module != module);
        let commands = &self.commands;
        self.aliases
            .retain(|_, target| commands.contains_key(target));
        true
    }

    /// The command holding `key` as name or alias, exactly.
    fn owner_of(&self, key: &str) -> Option<&RegisteredCommand> {
        self.commands.get(key).or_else(|| {
            self.aliases
                .get(key)
                .and_then(|target| self.commands.get(target))
        })
    }

    /// Finds a command by name, alias or plugin-qualified name. A bare name that only plugins
    /// provide resolves when exactly one plugin has it.
    pub fn resolve(&self, name: &str) -> Result<&RegisteredCommand, CommandError> {
        let name = name.trim();
        if let Some(found) = self.owner_of(name) {
            return Ok(found);
        }
        if !name.contains(':') {
            let mut plugin_matches: Vec<&RegisteredCommand> = self
                .commands
                .values()
                .filter(|c| c.name.contains(':'))
                .filter(|c| {
                    short_name(&c.name) == name || c.descriptor().aliases.iter().any(|a| a == name)
                })
                .collect();
            match plugin_matches.len() {
                0 => {}
                1 => return Ok(plugin_matches.remove(0)),
                _ => {
                    return Err(CommandError::AmbiguousCommand {
                        name: name.to_string(),
                        candidates: plugin_matches.iter().map(|c| c.name.clone()).collect(),
                    })
                }
            }
        }
        Err(CommandError::UnknownCommand {
            name: name.to_string(),
            suggestions: self.suggestions(name),
        })
    }

    /// Names close to a mistyped one: those it is a prefix of, and those within two edits.
    fn suggestions(&self, name: &str) -> Vec<String> {
        let lowered = name.to_lowercase();
        if lowered.is_empty() {
            return Vec::new();
        }
        self.commands
            .values()
            .filter(|c| c.descriptor().user_invocable)
            .filter(|c| {
                let candidate = short_name(&c.name).to_lowercase();
                candidate.starts_with(&lowered) || edit_distance(&candidate, &lowered) <= 2
            })
            .map(|c| c.name.clone())
            .take(5)
            .collect()
    }

    /// The command with this name (see [`CommandRegistry::resolve`]), if any.
    pub fn get(&self, name: &str) -> Option<&RegisteredCommand> {
        self.resolve(name).ok()
    }

    /// User-invocable commands whose name (or a plugin command's bare name) starts with `prefix`,
    /// case-insensitively, sorted by name. For autocomplete; an empty prefix lists all.
    pub fn filter(&self, prefix: &str) -> Vec<&RegisteredCommand> {
        let prefix = prefix.to_lowercase();
        self.commands
            .values()
            .filter(|c| c.descriptor().user_invocable)
            .filter(|c| {
                c.name.to_lowercase().starts_with(&prefix)
                    || short_name(&c.name).to_lowercase().starts_with(&prefix)
            })
            .collect()
    }

    /// The subcommands of a command.
    pub fn subcommands(&self, name: &str) -> Result<&[SubcommandDescriptor], CommandError> {
        Ok(&self.resolve(name)?.descriptor().subcommands)
    }

    /// The subcommands of a command starting with `prefix`, case-insensitively (for completing
    /// `permissions pl…`).
    pub fn filter_subcommands(
        &self,
        name: &str,
        prefix: &str,
    ) -> Result<Vec<&SubcommandDescriptor>, CommandError> {
        let prefix = prefix.to_lowercase();
        Ok(self
            .subcommands(name)?
            .iter()
            .filter(|s| s.name.to_lowercase().starts_with(&prefix))
            .collect())
    }

    /// Every command, sorted by invocation name, for palettes, help and bindings.
    pub fn list(&self) -> Vec<CommandEntry> {
        self.commands
            .values()
            .map(RegisteredCommand::entry)
            .collect()
    }

    /// The descriptors of user-invocable commands (what `help` shows).
    pub fn descriptors(&self) -> Vec<CommandDescriptor> {
        self.commands
            .values()
            .filter(|c| c.descriptor().user_invocable)
            .map(|c| {
                let mut descriptor = c.descriptor().clone();
                // Plugin commands are shown under the name that invokes them.
                descriptor.name = c.name.clone();
                descriptor
            })
            .collect()
    }

    /// Commands the model may run through projected tools, sorted by name.
    pub fn model_invocable(&self) -> Vec<&RegisteredCommand> {
        self.commands
            .values()
            .filter(|c| c.descriptor().model_invocable)
            .collect()
    }

    /// The command a projected tool name (`robota_command_<name>`) stands for, so a session can
    /// map a model's tool call back to the command it runs.
    pub fn command_for_tool(&self, tool_name: &str) -> Option<&RegisteredCommand> {
        self.commands
            .values()
            .filter(|c| c.descriptor().model_invocable)
            .find(|c| command_tool_name(&c.name) == tool_name)
    }

    /// Names of the added modules, in order.
    pub fn module_names(&self) -> &[String] {
        &self.modules
    }

    /// Runs a command on the user's behalf (the slash path). `args` is everything after the name.
    pub async fn execute(
        &self,
        ctx: &dyn CommandHostContext,
        name: &str,
        args: &str,
    ) -> Result<CommandResult, CommandError> {
        let registered = self.resolve(name)?;
        if !registered.descriptor().user_invocable {
            return Err(CommandError::NotUserInvocable {
                name: registered.name.clone(),
            });
        }
        Ok(registered.command.execute(ctx, args.trim()).await)
    }
}
