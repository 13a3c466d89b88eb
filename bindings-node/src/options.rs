//! The options document the TypeScript facade hands to the native constructors: the engine's
//! shared [`SessionConfig`] and [`ProviderConfig`] (so defaults and validation are the same as in
//! every other binding) plus declarations of the host's JavaScript extensions. Those become the
//! engine's binding-neutral host adapters ([`robota::api`]); their functions stay in
//! JavaScript and are reached through the session's [`HostBridge`].

use std::sync::Arc;

use serde::Deserialize;
use serde_json::{json, Value};

use robota::api::{
    attach_host_store, host_mcp_authorization_handler, ApiError, HostCommand, HostHookSpec,
    HostMcpServerBuilder, HostPermissionHandler, HostProvider, HostProviderInfo, HostStoreFunction,
    HostTool, HostToolSpec, ProviderConfig, SessionConfig,
};
use robota::framework::commands::custom::CommandRegistration;
use robota::framework::commands::{default_command_modules, CommandModule, CommandSource};
use robota::framework::skills::SkillRegistration;
use robota::provider::Provider;
use robota::session::{SessionEvent, SessionOptions};
use robota::tools::Tool;

use crate::host::{BridgeFunction, HostBridge};

/// A JavaScript command module, as declared: its commands are the engine's command
/// descriptors; their `execute` functions stay in JavaScript.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct CommandModuleSpec {
    /// Module id (collision reports; routes `execute` calls back to the module).
    name: String,
    /// Its commands' descriptors.
    #[serde(default)]
    commands: Vec<Value>,
}

/// A JavaScript in-process MCP server, as declared: its tools' `execute` functions stay in
/// JavaScript (reached as `mcp_tool` calls carrying `{server, tool, input}`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct InProcessServerSpec {
    name: String,
    #[serde(default)]
    version: Option<String>,
    #[serde(default)]
    tools: Vec<Value>,
}

/// Everything a native session or query is made from, as JSON.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct NativeOptions {
    provider: Value,
    #[serde(default)]
    session: Value,
    #[serde(default)]
    tools: Vec<Value>,
    /// In-process MCP servers: `[{name, version, tools: [HostMcpToolSpec]}]`.
    #[serde(default)]
    mcp_in_process: Vec<InProcessServerSpec>,
    #[serde(default)]
    permission_handler: bool,
    /// True when the host gave `onMcpAuthorization` (the OAuth browser step).
    #[serde(default)]
    mcp_authorization: bool,
    #[serde(default)]
    hooks: Vec<Value>,
    #[serde(default)]
    command_modules: Vec<CommandModuleSpec>,
    #[serde(default = "yes")]
    builtin_commands: bool,
    #[serde(default)]
    event_buffer: Option<usize>,
    #[serde(default)]
    allowed_tools: Vec<String>,
    #[serde(default)]
    disallowed_tools: Vec<String>,
    /// The name of the host's `SessionStore` object, when the session is saved in it (its
    /// methods are reached as `store` calls).
    #[serde(default)]
    session_store: Option<String>,
}

fn yes() -> bool {
    true
}

/// The engine options built from a native options document.
pub(crate) struct BuiltOptions {
    pub session: SessionOptions,
    pub command_modules: Vec<CommandModule>,
    pub event_buffer: Option<usize>,
    pub allowed_tools: Vec<String>,
    pub disallowed_tools: Vec<String>,
    pub skills: Vec<SkillRegistration>,
    pub edit_checkpoints: bool,
    pub custom_commands: Vec<CommandRegistration>,
    /// The session is saved in a JavaScript store: opening, saving and renaming it call
    /// JavaScript, so they must not run on the JavaScript thread.
    pub host_store: bool,
}

/// Parses `json` and builds the engine options; host extensions call into `bridge`.
/// Must run inside the tokio runtime (HTTP providers build their client here).
pub(crate) fn build_options(
    json: &str,
    bridge: &Arc<HostBridge>,
) -> Result<BuiltOptions, ApiError> {
    let options: NativeOptions = serde_json::from_str(json)
        .map_err(|e| ApiError::invalid_json(format!("invalid options: {e}")))?;
    let provider: Arc<dyn Provider> =
        if options.provider.get("type").and_then(Value::as_str) == Some("host") {
            let mut info = options.provider;
            if let Value::Object(map) = &mut info {
                map.remove("type");
                for key in ["name", "model"] {
                    map.entry(key)
                        .or_insert_with(|| Value::String("javascript".into()));
                }
                map.entry("thinking").or_insert(Value::Bool(true));
            }
            let info = HostProviderInfo::from_json_value(info)?;
            let function = BridgeFunction::new(bridge, "provider", Value::Null);
            Arc::new(HostProvider::new(info, function))
        } else {
            ProviderConfig::from_json_value(options.provider)?.build()?
        };
    let config = SessionConfig::from_json_value(options.session)?;
    let skills = config.skill_registrations();
    let edit_checkpoints = config.edit_checkpoints_enabled();
    let commands = config.command_registrations();
    let mut session = config.into_session_options(provider)?;
    for spec in options.tools {
        let spec = HostToolSpec::from_json_value(spec)?;
        let function = BridgeFunction::new(bridge, "tool", Value::Null);
        session
            .extra_tools
            .push(Arc::new(HostTool::new(spec, function)) as Arc<dyn Tool>);
    }
    for server in options.mcp_in_process {
        let mut builder = HostMcpServerBuilder::new(server.name, server.version);
        for spec in server.tools {
            builder.add_tool(spec, BridgeFunction::new(bridge, "mcp_tool", Value::Null))?;
        }
        session.mcp_servers.push(builder.entry()?);
    }
    if options.permission_handler {
        let function = BridgeFunction::new(bridge, "permission", Value::Null);
        session.permission_handler = Some(HostPermissionHandler::new(function));
    }
    if options.mcp_authorization {
        // Called on the MCP runtime while the servers connect in the background; the JavaScript
        // thread is free then (the constructor returned), so the callback runs at once.
        let function = BridgeFunction::new(bridge, "mcp_authorization", Value::Null);
        session.mcp_authorization_handler = Some(host_mcp_authorization_handler(function));
    }
    for (index, hook) in options.hooks.into_iter().enumerate() {
        let spec = HostHookSpec::from_json_value(hook)?;
        let function = BridgeFunction::new(bridge, "hook", json!({ "index": index }));
        session.hook_callbacks.push(spec.registration(function));
    }
    let host_store = options.session_store.is_some();
    if let Some(name) = options.session_store {
        let function = BridgeFunction::new(bridge, "store", Value::Null);
        attach_host_store(
            &mut session,
            Arc::new(HostStoreFunction::new(name, function)),
        )?;
    }
    report_to_developer(&mut session, bridge);
    // The same modules as every other language: the built-ins, `agent` and `skills`.
    let mut command_modules = if options.builtin_commands {
        default_command_modules()
    } else {
        Vec::new()
    };
    for spec in options.command_modules {
        let mut module = CommandModule::new(spec.name.clone(), CommandSource::Project);
        for descriptor in spec.commands {
            let function = BridgeFunction::new(bridge, "command", json!({ "module": spec.name }));
            module = module.with_command(Arc::new(HostCommand::from_json_value(
                descriptor, function,
            )?));
        }
        command_modules.push(module);
    }
    Ok(BuiltOptions {
        session,
        command_modules,
        event_buffer: options.event_buffer,
        allowed_tools: options.allowed_tools,
        disallowed_tools: options.disallowed_tools,
        skills,
        edit_checkpoints,
        custom_commands: commands,
        host_store,
    })
}

/// Sends the events that mean the host's own code misbehaved (a hook that failed; see
/// [`SessionEvent::developer_warning`]) to JavaScript as a process warning, so they are seen even
/// by a script that listens to no event.
fn report_to_developer(session: &mut SessionOptions, bridge: &Arc<HostBridge>) {
    let previous = session.on_event.take();
    let bridge = Arc::downgrade(bridge);
    session.on_event = Some(Arc::new(move |event: SessionEvent| {
        if let (Some(line), Some(bridge)) = (event.developer_warning(), bridge.upgrade()) {
            bridge.warn(&line);
        }
        if let Some(previous) = &previous {
            previous(event);
        }
    }));
}
