//! The options document the TypeScript facade hands to the native constructors: the engine's
//! shared [`SessionConfig`] and [`ProviderConfig`] (so defaults and validation are the same as in
//! every other binding) plus declarations of the host's JavaScript extensions, whose functions
//! stay in JavaScript and are reached through the session's [`HostBridge`].

use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

use robota::api::{ApiError, ProviderConfig, SessionConfig};
use robota::framework::commands::{builtin_command_modules, CommandModule};
use robota::hooks::HookEvent;
use robota::provider::Provider;
use robota::session::{HookCallbackRegistration, SessionOptions};
use robota::tools::Tool;

use crate::host::{
    command_module, CommandModuleSpec, HostBridge, JsHookCallback, JsPermissionHandler, JsProvider,
    JsTool, ToolSpec,
};

/// A provider implemented in JavaScript (`{"type": "host", "name", "model"}`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct HostProviderSpec {
    #[serde(default = "host_provider_name")]
    name: String,
    #[serde(default = "host_provider_name")]
    model: String,
    #[serde(default)]
    context_window: Option<u64>,
}

fn host_provider_name() -> String {
    "javascript".into()
}

/// A JavaScript hook callback's registration (`index` is its position in the list).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct HookSpec {
    event: String,
    #[serde(default)]
    matcher: String,
    #[serde(default)]
    timeout_ms: Option<u64>,
}

/// Everything a native session or query is made from, as JSON.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct NativeOptions {
    provider: Value,
    #[serde(default)]
    session: Value,
    #[serde(default)]
    tools: Vec<ToolSpec>,
    #[serde(default)]
    permission_handler: bool,
    #[serde(default)]
    hooks: Vec<HookSpec>,
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
            let mut spec = options.provider.clone();
            if let Value::Object(map) = &mut spec {
                map.remove("type");
            }
            let spec: HostProviderSpec = serde_json::from_value(spec)
                .map_err(|e| ApiError::invalid_json(format!("invalid JavaScript provider: {e}")))?;
            Arc::new(JsProvider {
                name: spec.name,
                model: spec.model,
                context_window: spec.context_window,
                bridge: Arc::clone(bridge),
            })
        } else {
            ProviderConfig::from_json_value(options.provider)?.build()?
        };
    let mut session =
        SessionConfig::from_json_value(options.session)?.into_session_options(provider)?;
    for spec in options.tools {
        if spec.name.trim().is_empty() {
            return Err(ApiError::invalid_argument(
                "a tool needs a non-empty `name`",
            ));
        }
        session
            .extra_tools
            .push(Arc::new(JsTool::new(spec, Arc::clone(bridge))) as Arc<dyn Tool>);
    }
    if options.permission_handler {
        session.permission_handler = Some(Arc::new(JsPermissionHandler {
            bridge: Arc::clone(bridge),
        }));
    }
    for (index, hook) in options.hooks.into_iter().enumerate() {
        let event: HookEvent = hook.event.parse().map_err(|_| {
            ApiError::invalid_argument(format!(
                "unknown hook event `{}` (expected one of {})",
                hook.event,
                HookEvent::ALL
                    .iter()
                    .map(|e| e.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })?;
        let mut registration = HookCallbackRegistration::new(
            event,
            hook.matcher,
            Arc::new(JsHookCallback {
                index,
                bridge: Arc::clone(bridge),
            }),
        );
        registration.timeout = hook.timeout_ms.map(Duration::from_millis);
        session.hook_callbacks.push(registration);
    }
    let mut command_modules = if options.builtin_commands {
        builtin_command_modules()
    } else {
        Vec::new()
    };
    command_modules.extend(
        options
            .command_modules
            .into_iter()
            .map(|spec| command_module(spec, bridge)),
    );
    Ok(BuiltOptions {
        session,
        command_modules,
        event_buffer: options.event_buffer,
        allowed_tools: options.allowed_tools,
        disallowed_tools: options.disallowed_tools,
    })
}
