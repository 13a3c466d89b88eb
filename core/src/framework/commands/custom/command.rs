//! Custom commands as [`SystemCommand`]s: one [`CustomCommand`] per definition, grouped into a
//! [`CommandModule`] per source ([`custom_command_modules`]) so `list_commands()` reports each
//! command's source and plugin commands get their qualified names from the registry.
//!
//! Running one needs the session (its permission layer for `` !`command` `` snippets, its prompt
//! queue, its model), so the command asks the host through
//! [`CommandHostContext::run_custom_command`].

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;

use super::definition::{CustomCommandCatalog, CustomCommandDefinition};
use crate::framework::commands::{
    CommandDescriptor, CommandHostContext, CommandModule, CommandResult, CommandSource,
    SystemCommand,
};

/// One custom command: `/name args` sends its prompt.
#[derive(Debug)]
pub struct CustomCommand {
    descriptor: CommandDescriptor,
    /// The invocation name (qualified for a plugin's command).
    name: String,
}

impl CustomCommand {
    /// The command for `definition`. Its descriptor holds the unqualified name (the registry
    /// qualifies plugin commands) and the description with its origin (`… (project:frontend)`).
    pub fn new(definition: &CustomCommandDefinition) -> Self {
        let short = definition
            .name
            .rsplit_once(':')
            .map_or(definition.name.as_str(), |(_, short)| short);
        let mut descriptor = CommandDescriptor::new(short, definition.listed_description());
        descriptor.argument_hint = definition.argument_hint.clone();
        CustomCommand {
            descriptor,
            name: definition.name.clone(),
        }
    }
}

#[async_trait]
impl SystemCommand for CustomCommand {
    fn descriptor(&self) -> &CommandDescriptor {
        &self.descriptor
    }

    async fn execute(&self, ctx: &dyn CommandHostContext, args: &str) -> CommandResult {
        ctx.run_custom_command(&self.name, args)
            .await
            .unwrap_or_else(|error| CommandResult::error(error.message))
    }
}

/// One module per source holding the catalog's commands: `custom-commands-host`,
/// `custom-commands-project`, `custom-commands-user`, `custom-commands-plugin-<plugin>`.
pub fn custom_command_modules(catalog: &CustomCommandCatalog) -> Vec<CommandModule> {
    let mut modules: BTreeMap<String, CommandModule> = BTreeMap::new();
    for definition in catalog.commands() {
        let module_name = match &definition.source {
            CommandSource::Plugin { plugin } => format!("custom-commands-plugin-{plugin}"),
            other => format!("custom-commands-{}", other.kind()),
        };
        let module = modules
            .entry(module_name.clone())
            .or_insert_with(|| CommandModule::new(module_name, definition.source.clone()));
        module
            .commands
            .push(Arc::new(CustomCommand::new(definition)) as Arc<dyn SystemCommand>);
    }
    modules.into_values().collect()
}
