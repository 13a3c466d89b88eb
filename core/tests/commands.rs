//! The command API against a fake `CommandHostContext`: every built-in command's message,
//! effects and interactions; registry lookup, aliases, prefixes, plugin-qualified names,
//! subcommands and collisions; and model-invocable commands projected as tools running the same
//! handler as the slash path.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use robota::framework::commands::{
    builtin_command_modules, command_tool_name, project_command_tools, CommandDescriptor,
    CommandEffect, CommandError, CommandHostContext, CommandHostError, CommandLifecycle,
    CommandModule, CommandRegistry, CommandRegistryError, CommandResult, CommandSource,
    CompactionSummary, ContextStateSummary, InteractionPrompt, SystemCommand, UsageSummary,
};
use robota::permissions::PermissionMode;
use robota::tools::{Tool, ToolContext};
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// Everything the fake session holds, observable by the tests.
#[derive(Default)]
struct FakeState {
    name: Option<String>,
    mode: PermissionMode,
    cleared: bool,
    compact_calls: Vec<Option<String>>,
    fail_compact: bool,
}

struct FakeHost {
    state: Mutex<FakeState>,
    commands: Vec<CommandDescriptor>,
    models: Vec<String>,
}

impl FakeHost {
    fn new(registry: &CommandRegistry) -> Self {
        FakeHost {
            state: Mutex::new(FakeState::default()),
            commands: registry.descriptors(),
            models: Vec::new(),
        }
    }
}

#[async_trait]
impl CommandHostContext for FakeHost {
    fn session_id(&self) -> String {
        "sess-1".into()
    }
    fn session_name(&self) -> Option<String> {
        self.state.lock().unwrap().name.clone()
    }
    async fn set_session_name(&self, name: &str) -> Result<(), CommandHostError> {
        self.state.lock().unwrap().name = Some(name.to_string());
        Ok(())
    }
    fn context_state(&self) -> ContextStateSummary {
        ContextStateSummary {
            used_tokens: 42_000,
            max_tokens: 200_000,
            used_percent: 21.0,
            auto_compact_percent: Some(83.5),
            message_count: 12,
        }
    }
    fn usage_summary(&self) -> UsageSummary {
        UsageSummary {
            input_tokens: 1000,
            output_tokens: 200,
            cache_read_tokens: 50,
            cache_creation_tokens: 10,
            cost_usd: Some(0.0123),
        }
    }
    fn permission_mode(&self) -> PermissionMode {
        self.state.lock().unwrap().mode
    }
    async fn set_permission_mode(&self, mode: PermissionMode) -> Result<(), CommandHostError> {
        self.state.lock().unwrap().mode = mode;
        Ok(())
    }
    fn session_approved_tools(&self) -> Vec<String> {
        vec!["Bash(git status)".into()]
    }
    fn model(&self) -> Option<String> {
        Some("claude-sonnet".into())
    }
    fn available_models(&self) -> Vec<String> {
        self.models.clone()
    }
    fn commands(&self) -> Vec<CommandDescriptor> {
        self.commands.clone()
    }
    async fn clear_conversation(&self) -> Result<(), CommandHostError> {
        self.state.lock().unwrap().cleared = true;
        Ok(())
    }
    async fn compact(
        &self,
        instructions: Option<&str>,
    ) -> Result<CompactionSummary, CommandHostError> {
        let mut state = self.state.lock().unwrap();
        state.compact_calls.push(instructions.map(str::to_string));
        if state.fail_compact {
            return Err(CommandHostError::new("nothing to compact yet"));
        }
        Ok(CompactionSummary {
            removed_messages: 8,
            messages_before: 10,
            context_before_percent: 85.0,
            context_after_percent: 20.0,
            scheduled: false,
        })
    }
}

fn builtins() -> CommandRegistry {
    CommandRegistry::with_modules(builtin_command_modules()).unwrap()
}

fn setup() -> (CommandRegistry, FakeHost) {
    let registry = builtins();
    let host = FakeHost::new(&registry);
    (registry, host)
}

async fn run(registry: &CommandRegistry, host: &FakeHost, name: &str, args: &str) -> CommandResult {
    registry.execute(host, name, args).await.unwrap()
}

/// A minimal command for registry tests.
struct Echo {
    descriptor: CommandDescriptor,
}

impl Echo {
    fn arc(descriptor: CommandDescriptor) -> Arc<dyn SystemCommand> {
        Arc::new(Echo { descriptor })
    }
    fn named(name: &str) -> Arc<dyn SystemCommand> {
        Self::arc(CommandDescriptor::new(name, format!("echo {name}")))
    }
}

#[async_trait]
impl SystemCommand for Echo {
    fn descriptor(&self) -> &CommandDescriptor {
        &self.descriptor
    }
    async fn execute(&self, ctx: &dyn CommandHostContext, args: &str) -> CommandResult {
        CommandResult::ok(format!(
            "{} {args} in {}",
            self.descriptor.name,
            ctx.session_id()
        ))
    }
}

fn plugin(plugin: &str, commands: &[&str]) -> CommandModule {
    let mut module = CommandModule::new(
        format!("plugin-{plugin}"),
        CommandSource::Plugin {
            plugin: plugin.into(),
        },
    );
    for name in commands {
        module = module.with_command(Echo::named(name));
    }
    module
}

fn tool_context() -> ToolContext {
    ToolContext {
        tool_use_id: "toolu_1".into(),
        cwd: std::env::temp_dir(),
        cancel: CancellationToken::new(),
    }
}

// ---- built-in commands ----

#[tokio::test]
async fn help_lists_commands_and_details_one() {
    let (registry, host) = setup();
    let result = run(&registry, &host, "help", "").await;
    assert!(result.success);
    assert!(result.message.starts_with("Available commands:\n"));
    for name in [
        "clear",
        "compact",
        "context",
        "cost",
        "exit",
        "help",
        "model",
        "permissions",
        "rename",
        "resume",
    ] {
        assert!(
            result
                .message
                .contains(&format!("\n  {:<32} — ", format!("/{name}"))),
            "{name} missing in:\n{}",
            result.message
        );
    }
    let detail = run(&registry, &host, "help", "permissions").await;
    assert!(detail.success);
    assert!(detail.message.contains("/permissions [plan"));
    assert!(detail.message.contains("acceptEdits — "));
    let unknown = run(&registry, &host, "help", "nope").await;
    assert!(!unknown.success);
    assert!(unknown.message.contains("Unknown command: nope"));
}

#[tokio::test]
async fn clear_confirms_then_clears_with_effect() {
    let (registry, host) = setup();
    let ask = run(&registry, &host, "clear", "").await;
    assert!(ask.success && ask.effects.is_empty());
    let interaction = ask.interaction.expect("clear asks first");
    match &interaction.prompt {
        InteractionPrompt::Choice {
            prompt, options, ..
        } => {
            assert_eq!(prompt, "Clear conversation history?");
            let values: Vec<&str> = options.iter().map(|o| o.value.as_str()).collect();
            assert_eq!(values, ["yes", "no"]);
        }
        other => panic!("expected a choice, got {other:?}"),
    }
    assert!(!host.state.lock().unwrap().cleared);

    // The host answers by running the named command with the answer as arguments.
    let no = run(
        &registry,
        &host,
        &interaction.command,
        &interaction.answer_args("no"),
    )
    .await;
    assert_eq!(no.message, "Clear cancelled.");
    assert!(!host.state.lock().unwrap().cleared);

    let yes = run(
        &registry,
        &host,
        &interaction.command,
        &interaction.answer_args("yes"),
    )
    .await;
    assert_eq!(yes.message, "Conversation cleared.");
    assert_eq!(yes.effects, [CommandEffect::ConversationHistoryCleared]);
    assert!(host.state.lock().unwrap().cleared);
}

#[tokio::test]
async fn compact_reports_and_passes_instructions() {
    let (registry, host) = setup();
    let result = run(&registry, &host, "compact", "  focus on tests ").await;
    assert!(result.success);
    assert_eq!(
        result.message,
        "Context compacted.\n  Removed messages: 8 (80% of total)\n  Context: 85% → 20%"
    );
    assert_eq!(result.data.as_ref().unwrap()["removed_messages"], 8);
    run(&registry, &host, "compact", "").await;
    assert_eq!(
        host.state.lock().unwrap().compact_calls,
        [Some("focus on tests".to_string()), None]
    );
    host.state.lock().unwrap().fail_compact = true;
    let failed = run(&registry, &host, "compact", "").await;
    assert!(!failed.success);
    assert_eq!(failed.message, "Compaction failed: nothing to compact yet");
    // Blocking: the session runs it under its execution guard.
    assert_eq!(
        registry.get("compact").unwrap().descriptor().lifecycle,
        CommandLifecycle::Blocking
    );
    assert_eq!(
        registry.get("help").unwrap().descriptor().lifecycle,
        CommandLifecycle::Inline
    );
    assert!(CommandLifecycle::Blocking.needs_execution_guard());
    assert!(!CommandLifecycle::Inline.needs_execution_guard());
}

#[tokio::test]
async fn context_and_cost_read_the_facade() {
    let (registry, host) = setup();
    let context = run(&registry, &host, "context", "").await;
    assert_eq!(
        context.message,
        "Context: 42000 / 200000 tokens (21%)\nAuto compact: 83.5%\nHistory: 12 messages"
    );
    let bad = run(&registry, &host, "context", "bogus").await;
    assert!(!bad.success);
    assert!(bad.message.contains("Usage: /context"));

    let cost = run(&registry, &host, "cost", "").await;
    assert!(cost.success);
    assert_eq!(
        cost.message,
        "Session: sess-1\nMessages: 12\nTokens: 1000 input, 200 output (50 cache read, 10 cache \
         write)\nEstimated cost: $0.0123"
    );
    assert_eq!(cost.data.unwrap()["usage"]["output_tokens"], 200);
}

#[tokio::test]
async fn permissions_shows_sets_and_rejects() {
    let (registry, host) = setup();
    let show = run(&registry, &host, "permissions", "").await;
    assert_eq!(
        show.message,
        "Permission mode: default\nSession-approved tools: Bash(git status)"
    );
    let set = run(&registry, &host, "permissions", "plan").await;
    assert!(set.success);
    assert_eq!(set.message, "Permission mode set to: plan");
    assert_eq!(host.state.lock().unwrap().mode, PermissionMode::Plan);

    let bad = run(&registry, &host, "permissions", "yolo").await;
    assert!(!bad.success);
    assert!(bad
        .message
        .starts_with("Invalid mode: unknown permission mode `yolo`"));
    assert!(bad
        .message
        .ends_with("Valid: plan | default | acceptEdits | bypassPermissions"));
    assert_eq!(host.state.lock().unwrap().mode, PermissionMode::Plan);
    // The model must never change its own permissions.
    assert!(
        !registry
            .get("permissions")
            .unwrap()
            .descriptor()
            .model_invocable
    );
}

#[tokio::test]
async fn model_shows_picks_and_requests_switch() {
    let (registry, mut host) = setup();
    let show = run(&registry, &host, "model", "").await;
    assert_eq!(show.message, "Current model: claude-sonnet");
    assert!(show.interaction.is_none());

    let switch = run(&registry, &host, "model", "gpt-4o").await;
    assert_eq!(
        switch.effects,
        [CommandEffect::ModelChangeRequested {
            model_id: "gpt-4o".into()
        }]
    );

    host.models = vec!["claude-sonnet".into(), "claude-haiku".into()];
    let pick = run(&registry, &host, "model", "").await;
    let interaction = pick.interaction.expect("a picker when models are known");
    assert!(
        matches!(&interaction.prompt, InteractionPrompt::Choice { options, .. } if options.len() == 2)
    );
    let picked = run(
        &registry,
        &host,
        &interaction.command,
        &interaction.answer_args("claude-haiku"),
    )
    .await;
    assert_eq!(
        picked.effects,
        [CommandEffect::ModelChangeRequested {
            model_id: "claude-haiku".into()
        }]
    );
    // An unlisted id is accepted (providers add models), with a warning.
    let unknown = run(&registry, &host, "model", "gpt-9").await;
    assert!(unknown.success, "{}", unknown.message);
    assert!(
        unknown
            .message
            .contains("`gpt-9` is not a model robota knows"),
        "{}",
        unknown.message
    );
    assert_eq!(
        unknown.effects,
        [CommandEffect::ModelChangeRequested {
            model_id: "gpt-9".into()
        }]
    );
    let same = run(&registry, &host, "model", "claude-sonnet").await;
    assert!(same.success && same.effects.is_empty());
}

#[tokio::test]
async fn rename_normalizes_and_asks_when_empty() {
    let (registry, host) = setup();
    let renamed = run(&registry, &host, "rename", "\"  My   run \"").await;
    assert_eq!(renamed.message, "Session renamed to \"My run\".");
    assert_eq!(
        renamed.effects,
        [CommandEffect::SessionRenamed {
            name: "My run".into()
        }]
    );
    assert_eq!(host.state.lock().unwrap().name.as_deref(), Some("My run"));

    let ask = run(&registry, &host, "rename", "").await;
    match ask.interaction.map(|i| i.prompt) {
        Some(InteractionPrompt::Text { default, .. }) => {
            assert_eq!(default.as_deref(), Some("My run"));
        }
        other => panic!("expected a text prompt, got {other:?}"),
    }
    let long = run(&registry, &host, "rename", &"x".repeat(101)).await;
    assert!(!long.success);
    assert!(long.message.contains("at most 100"));
}

#[tokio::test]
async fn resume_and_exit_are_effects() {
    let (registry, host) = setup();
    let picker = run(&registry, &host, "resume", "").await;
    assert_eq!(picker.effects, [CommandEffect::SessionPickerRequested]);
    let one = run(&registry, &host, "resume", "abc-123").await;
    assert_eq!(
        one.effects,
        [CommandEffect::SessionResumeRequested {
            session_id: "abc-123".into()
        }]
    );
    let bad = run(&registry, &host, "resume", "a b").await;
    assert!(!bad.success);

    for name in ["exit", "quit"] {
        let exit = run(&registry, &host, name, "").await;
        assert_eq!(
            exit.effects,
            [CommandEffect::SessionExitRequested {
                reason: Some("user".into()),
                message: None
            }]
        );
    }
}

#[test]
fn results_and_effects_serialize_for_hosts() {
    let result = CommandResult::ok("Goodbye.").with_effect(CommandEffect::ModelChangeRequested {
        model_id: "m".into(),
    });
    let value = serde_json::to_value(&result).unwrap();
    assert_eq!(
        value,
        json!({"message": "Goodbye.", "success": true,
               "effects": [{"type": "model_change_requested", "model_id": "m"}]})
    );
    let back: CommandResult = serde_json::from_value(value).unwrap();
    assert_eq!(back, result);
}

// ---- registry ----

#[tokio::test]
async fn unknown_command_suggests_names() {
    let (registry, host) = setup();
    let err = registry.execute(&host, "compcat", "").await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "unknown command `compcat` (did you mean `compact`?); run `help` to list commands"
    );
    let err = registry.execute(&host, "zzzzzz", "").await.unwrap_err();
    assert!(
        matches!(err, CommandError::UnknownCommand { ref suggestions, .. } if suggestions.is_empty())
    );
}

#[test]
fn prefix_filter_alias_and_subcommands() {
    let registry = builtins();
    let names = |prefix: &str| -> Vec<String> {
        registry
            .filter(prefix)
            .into_iter()
            .map(|c| c.name.clone())
            .collect()
    };
    assert_eq!(names("co"), ["compact", "context", "cost"]);
    assert_eq!(names("CO"), ["compact", "context", "cost"]);
    assert_eq!(names("zz"), Vec::<String>::new());
    assert_eq!(names("").len(), 10);
    assert_eq!(registry.get("quit").unwrap().name, "exit");

    let subs: Vec<&str> = registry
        .filter_subcommands("permissions", "a")
        .unwrap()
        .into_iter()
        .map(|s| s.name.as_str())
        .collect();
    assert_eq!(subs, ["acceptEdits"]);
    assert_eq!(registry.subcommands("permissions").unwrap().len(), 4);
    assert!(registry.subcommands("nope").is_err());

    let list = registry.list();
    assert_eq!(list.len(), 10);
    let entry = serde_json::to_value(&list[0]).unwrap();
    assert_eq!(entry["name"], "clear");
    assert_eq!(entry["source"], json!({"kind": "builtin"}));
}

#[tokio::test]
async fn plugin_commands_are_qualified_and_resolve_when_unique() {
    let mut registry = builtins();
    registry
        .add_module(plugin("acme", &["audit", "help"]))
        .unwrap();
    let host = FakeHost::new(&registry);

    // A plugin's `help` does not shadow the built-in one.
    assert_eq!(registry.get("help").unwrap().module, "robota-command-help");
    assert_eq!(registry.get("acme:help").unwrap().module, "plugin-acme");
    // A bare name finds the only plugin command of that name.
    let result = run(&registry, &host, "audit", "x").await;
    assert_eq!(result.message, "audit x in sess-1");
    assert_eq!(registry.get("audit").unwrap().name, "acme:audit");
    assert_eq!(
        registry
            .filter("au")
            .into_iter()
            .map(|c| c.name.as_str())
            .collect::<Vec<_>>(),
        ["acme:audit"]
    );

    registry.add_module(plugin("other", &["audit"])).unwrap();
    let err = registry.resolve("audit").unwrap_err();
    assert_eq!(
        err.to_string(),
        "`audit` is provided by several plugins (acme:audit, other:audit); use the qualified name"
    );
    assert_eq!(registry.get("other:audit").unwrap().module, "plugin-other");

    assert!(registry.remove_module("plugin-other"));
    assert_eq!(registry.get("audit").unwrap().name, "acme:audit");
}

#[test]
fn collisions_are_reported_and_leave_registry_unchanged() {
    let mut registry = builtins();
    let clash = CommandModule::new("project-tools", CommandSource::Project)
        .with_command(Echo::named("deploy"))
        .with_command(Echo::named("cost"));
    let err = registry.add_module(clash).unwrap_err();
    assert_eq!(
        err.to_string(),
        "command `cost` from module `project-tools` collides with `cost` from module \
         `robota-command-session`; rename one of them or remove one module"
    );
    // All or nothing: `deploy` was not added either.
    assert!(registry.get("deploy").is_none());

    let alias_clash = CommandModule::new("user-tools", CommandSource::User).with_command(
        Echo::arc(CommandDescriptor::new("leave", "x").with_alias("quit")),
    );
    assert!(matches!(
        registry.add_module(alias_clash),
        Err(CommandRegistryError::DuplicateCommand { ref name, .. }) if name == "quit"
    ));

    let inner = CommandModule::new("twice", CommandSource::User)
        .with_command(Echo::named("dup"))
        .with_command(Echo::named("dup"));
    assert!(matches!(
        registry.add_module(inner),
        Err(CommandRegistryError::DuplicateCommand { .. })
    ));

    assert!(matches!(
        registry.add_module(CommandModule::new(
            "robota-command-help",
            CommandSource::Builtin
        )),
        Err(CommandRegistryError::DuplicateModule { .. })
    ));

    for bad in ["/slash", "two words", "a:b", ""] {
        let module = CommandModule::new(format!("bad-{bad}"), CommandSource::User)
            .with_command(Echo::named(bad));
        assert!(
            matches!(
                registry.add_module(module),
                Err(CommandRegistryError::InvalidName { .. })
            ),
            "{bad:?} accepted"
        );
    }
}

#[tokio::test]
async fn model_only_commands_are_not_user_invocable() {
    let mut descriptor = CommandDescriptor::new("secret", "model only").model_invocable();
    descriptor.user_invocable = false;
    let registry = CommandRegistry::with_modules([
        CommandModule::new("m", CommandSource::User).with_command(Echo::arc(descriptor))
    ])
    .unwrap();
    let host = FakeHost::new(&registry);
    assert!(matches!(
        registry.execute(&host, "secret", "").await,
        Err(CommandError::NotUserInvocable { .. })
    ));
    assert!(registry.filter("").is_empty());
}

// ---- projected tools ----

#[test]
fn tool_names_are_provider_safe() {
    assert_eq!(command_tool_name("compact"), "robota_command_compact");
    assert_eq!(command_tool_name("/skills list"), "robota_command_skills");
    assert_eq!(command_tool_name("acme:audit"), "robota_command_acme_audit");
    assert_eq!(command_tool_name("a..b__c!"), "robota_command_a_b_c");
    let long = command_tool_name(&"x".repeat(80));
    assert_eq!(long.len(), "robota_command_".len() + 40 + 9);
    assert_ne!(long, command_tool_name(&"x".repeat(81)));
    for name in [long.as_str(), &command_tool_name("???")] {
        assert!(name.len() <= 64);
        assert!(name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'));
    }
}

#[tokio::test]
async fn projected_tool_runs_the_same_handler() {
    let registry = builtins();
    let host = Arc::new(FakeHost::new(&registry));
    let tools = project_command_tools(&registry, host.clone()).unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name()).collect();
    assert_eq!(names, ["robota_command_compact"]);
    let tool = &tools[0];
    assert_eq!(tool.command_name(), "compact");
    let reverse = registry.command_for_tool("robota_command_compact").unwrap();
    assert_eq!(reverse.name, "compact");
    assert!(registry.command_for_tool("robota_command_help").is_none());
    assert!(tool.description().contains("Robota command id: compact."));
    assert!(tool
        .description()
        .contains("Argument grammar: [instructions]"));
    assert_eq!(tool.input_schema()["properties"]["args"]["type"], "string");

    let output = tool
        .execute(json!({"args": "keep the API notes"}), tool_context())
        .await;
    assert!(!output.is_error);
    assert!(output.content.starts_with("Context compacted."));
    assert_eq!(output.response["command"], "compact");
    assert_eq!(output.response["success"], true);
    assert_eq!(
        host.state.lock().unwrap().compact_calls,
        [Some("keep the API notes".to_string())]
    );

    // A failing command is a tool error; a non-string `args` is rejected with a fix.
    host.state.lock().unwrap().fail_compact = true;
    let failed = tool.execute(json!({}), tool_context()).await;
    assert!(failed.is_error);
    assert_eq!(failed.content, "Compaction failed: nothing to compact yet");
    let bad = tool.execute(json!({"args": 3}), tool_context()).await;
    assert!(bad.is_error);
    assert!(bad.content.contains("`args` must be a string"));
}

#[test]
fn projected_tool_name_collisions_are_errors() {
    let model = |name: &str| Echo::arc(CommandDescriptor::new(name, "x").model_invocable());
    let registry = CommandRegistry::with_modules([CommandModule::new("m", CommandSource::User)
        .with_command(model("a.b"))
        .with_command(model("a_b"))])
    .unwrap();
    let host: Arc<dyn CommandHostContext> = Arc::new(FakeHost::new(&registry));
    let err = project_command_tools(&registry, host).unwrap_err();
    assert_eq!(
        err,
        CommandRegistryError::ToolNameCollision {
            tool_name: "robota_command_a_b".into(),
            first: "a.b".into(),
            second: "a_b".into(),
        }
    );
}
