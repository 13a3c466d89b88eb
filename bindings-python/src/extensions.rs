//! Turns what `robota` (Python) passes for providers, tools, the permission handler, hooks and
//! command modules into the engine's types.

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use robota::api::ProviderConfig;
use robota::framework::commands::{CommandDescriptor, CommandModule, CommandSource, SystemCommand};
use robota::hooks::HookEvent;
use robota::provider::Provider;
use robota::session::{HookCallbackRegistration, SessionOptions};
use robota::tools::Tool;

use crate::bridge::LoopSlot;
use crate::convert::from_py;
use crate::errors::{api_error, invalid_argument};
use crate::host::{PyCommand, PyHook, PyPermissionHandler, PyProvider, PyTool};

/// A provider from a configuration dict (`{"type": "scripted", …}`) or a `robota.Provider`
/// instance implemented in Python.
pub fn build_provider(
    provider: &Bound<'_, PyAny>,
    slot: &Arc<LoopSlot>,
) -> PyResult<Arc<dyn Provider>> {
    if provider.is_instance_of::<PyDict>() {
        let config = ProviderConfig::from_json_value(from_py(provider)?).map_err(api_error)?;
        return config.build().map_err(api_error);
    }
    let stream = provider.getattr("_robota_stream").map_err(|_| {
        invalid_argument(
            "`provider` must be a robota provider (AnthropicProvider, OpenAIProvider, \
             ScriptedProvider, ReplayProvider or a Provider subclass) or a configuration dict",
        )
    })?;
    let name: String = provider
        .getattr("name")?
        .extract()
        .map_err(|_| invalid_argument("a Provider subclass must have a string `name` attribute"))?;
    let model: String = provider.getattr("model")?.extract().map_err(|_| {
        invalid_argument("a Provider subclass must have a string `model` attribute")
    })?;
    let context_window: Option<u64> = provider
        .getattr("context_window")
        .ok()
        .map(|w| w.extract())
        .transpose()
        .map_err(|_| invalid_argument("`context_window` must be a positive integer or None"))?
        .flatten();
    Ok(Arc::new(PyProvider {
        name,
        model,
        context_window,
        func: Arc::new(stream.unbind()),
        slot: Arc::clone(slot),
    }))
}

/// Adds the host's tools, permission handler and hooks to `options`.
pub fn build_extensions(
    options: &mut SessionOptions,
    tools: &Bound<'_, PyList>,
    permission_handler: Option<Py<PyAny>>,
    hooks: &Bound<'_, PyList>,
    slot: &Arc<LoopSlot>,
) -> PyResult<()> {
    for tool in tools.iter() {
        options.extra_tools.push(build_tool(&tool, slot)?);
    }
    if let Some(func) = permission_handler {
        options.permission_handler = Some(Arc::new(PyPermissionHandler {
            func: Arc::new(func),
            slot: Arc::clone(slot),
        }));
    }
    for hook in hooks.iter() {
        let (event, matcher, func, timeout, name): (
            String,
            String,
            Py<PyAny>,
            Option<f64>,
            String,
        ) = hook.extract().map_err(|_| {
            invalid_argument("internal: a hook must be (event, matcher, callback, timeout, name)")
        })?;
        let event = HookEvent::from_str(&event).map_err(|_| {
            invalid_argument(format!(
                "unknown hook event `{event}` (expected e.g. PreToolUse, PostToolUse, \
                 UserPromptSubmit, SessionStart, SessionEnd, Stop)"
            ))
        })?;
        let timeout = match timeout {
            None => None,
            Some(t) if t.is_finite() && t > 0.0 => Some(Duration::from_secs_f64(t)),
            Some(t) => {
                return Err(invalid_argument(format!(
                    "a hook timeout must be a positive number of seconds, not {t}"
                )))
            }
        };
        let mut registration = HookCallbackRegistration::new(
            event,
            matcher,
            Arc::new(PyHook {
                name,
                func: Arc::new(func),
                slot: Arc::clone(slot),
            }),
        );
        registration.timeout = timeout;
        options.hook_callbacks.push(registration);
    }
    Ok(())
}

fn build_tool(tool: &Bound<'_, PyAny>, slot: &Arc<LoopSlot>) -> PyResult<Arc<dyn Tool>> {
    let call = tool.getattr("_robota_call").map_err(|_| {
        invalid_argument(
            "each entry of `tools` must be a function decorated with @robota.tool (or a \
             robota.Tool)",
        )
    })?;
    let name: String = tool.getattr("name")?.extract()?;
    if name.is_empty() {
        return Err(invalid_argument("a tool name cannot be empty"));
    }
    let description: String = tool.getattr("description")?.extract()?;
    let input_schema = from_py(&tool.getattr("input_schema")?)?;
    if !input_schema.is_object() {
        return Err(invalid_argument(format!(
            "tool `{name}`: `input_schema` must be a JSON Schema object"
        )));
    }
    let read_only: bool = tool.getattr("read_only")?.extract()?;
    Ok(Arc::new(PyTool {
        name,
        description,
        input_schema,
        read_only,
        func: Arc::new(call.unbind()),
        slot: Arc::clone(slot),
    }))
}

/// Command modules from `(name, source, [(descriptor, adapter), …])` tuples.
pub fn build_command_modules(
    modules: &Bound<'_, PyList>,
    slot: &Arc<LoopSlot>,
) -> PyResult<Vec<CommandModule>> {
    let mut out = Vec::new();
    for module in modules.iter() {
        let (name, source, commands): (String, Bound<'_, PyAny>, Bound<'_, PyList>) =
            module.extract().map_err(|_| {
                invalid_argument("each entry of `command_modules` must be a robota.CommandModule")
            })?;
        let source = if source.is_none() {
            CommandSource::Project
        } else {
            serde_json::from_value::<CommandSource>(from_py(&source)?).map_err(|e| {
                invalid_argument(format!("command module `{name}`: bad source: {e}"))
            })?
        };
        let mut built: Vec<Arc<dyn SystemCommand>> = Vec::new();
        for command in commands.iter() {
            let (descriptor, func): (Bound<'_, PyAny>, Py<PyAny>) = command.extract()?;
            let descriptor = serde_json::from_value::<CommandDescriptor>(from_py(&descriptor)?)
                .map_err(|e| {
                    invalid_argument(format!("command module `{name}`: bad command: {e}"))
                })?;
            built.push(Arc::new(PyCommand {
                descriptor,
                func: Arc::new(func),
                slot: Arc::clone(slot),
            }));
        }
        out.push(CommandModule {
            name,
            source,
            commands: built,
            session_requirements: Vec::new(),
        });
    }
    Ok(out)
}
