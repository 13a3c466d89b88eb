//! Turns what `robota` (Python) passes for providers, tools, the permission handler, hooks and
//! command modules into the engine's types.

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use robota::api::{
    HostCommand, HostHookSpec, HostMcpServerBuilder, HostPermissionHandler, HostProvider,
    HostProviderInfo, HostTool, HostToolSpec, ProviderConfig,
};
use robota::framework::commands::{CommandModule, CommandSource, SystemCommand};
use robota::mcp::McpServerEntry;
use robota::provider::Provider;
use robota::session::{SessionEvent, SessionOptions};
use robota::tools::Tool;
use serde_json::json;

use crate::bridge::LoopSlot;
use crate::convert::from_py;
use crate::errors::{api_error, invalid_argument};
use crate::host::PyHostFunction;

/// A provider from a configuration dict (`{"type": "scripted", …}`) or a `robota.Provider`
/// instance implemented in Python (its `_robota_info()` is the [`HostProviderInfo`], its
/// `_robota_stream` the host function).
pub fn build_provider(
    provider: &Bound<'_, PyAny>,
    slot: &Arc<LoopSlot>,
) -> PyResult<Arc<dyn Provider>> {
    if provider.is_instance_of::<PyDict>() {
        let config = ProviderConfig::from_json_value(from_py(provider)?).map_err(api_error)?;
        return config.build().map_err(api_error);
    }
    let (Ok(stream), Ok(info)) = (
        provider.getattr("_robota_stream"),
        provider.getattr("_robota_info"),
    ) else {
        return Err(invalid_argument(
            "`provider` must be a robota provider (AnthropicProvider, OpenAIProvider, \
             ScriptedProvider, ReplayProvider or a Provider subclass) or a configuration dict",
        ));
    };
    let info = HostProviderInfo::from_json_value(from_py(&info.call0()?)?).map_err(api_error)?;
    Ok(Arc::new(HostProvider::new(
        info,
        PyHostFunction::shared(stream.unbind(), slot),
    )))
}

/// Adds the host's tools, permission handler and hooks to `options`. Each hook is a
/// `(spec, adapter)` pair (`spec` a [`HostHookSpec`] as a dict).
pub fn build_extensions(
    options: &mut SessionOptions,
    tools: &Bound<'_, PyList>,
    permission_handler: Option<Py<PyAny>>,
    hooks: &Bound<'_, PyList>,
    slot: &Arc<LoopSlot>,
) -> PyResult<()> {
    for tool in tools.iter() {
        // An in-process MCP server travels with the tools: its handlers are Python functions.
        if let Ok(server) = tool.getattr("_robota_mcp_server") {
            options.mcp_servers.push(build_mcp_server(&server, slot)?);
            continue;
        }
        options.extra_tools.push(build_tool(&tool, slot)?);
    }
    if let Some(func) = permission_handler {
        options.permission_handler = Some(HostPermissionHandler::new(PyHostFunction::shared(
            func, slot,
        )));
    }
    for hook in hooks.iter() {
        let (spec, func): (Bound<'_, PyAny>, Py<PyAny>) = hook
            .extract()
            .map_err(|_| invalid_argument("internal: a hook must be (spec, callback)"))?;
        let spec = HostHookSpec::from_json_value(from_py(&spec)?).map_err(api_error)?;
        options
            .hook_callbacks
            .push(spec.registration(PyHostFunction::shared(func, slot)));
    }
    report_to_developer(options);
    Ok(())
}

/// Sends the events that mean the host's own code misbehaved (a hook that failed; see
/// [`SessionEvent::developer_warning`]) to the `robota` logger as warnings, so they are seen
/// (on stderr unless logging is configured) even by a script that listens to no event.
fn report_to_developer(options: &mut SessionOptions) {
    let previous = options.on_event.take();
    options.on_event = Some(Arc::new(move |event: SessionEvent| {
        if let Some(line) = event.developer_warning() {
            crate::aio::with_python(|py| {
                let logged = py
                    .import("logging")
                    .and_then(|logging| logging.call_method1("getLogger", ("robota",)))
                    .and_then(|logger| logger.call_method1("warning", ("%s", line)));
                if let Err(error) = logged {
                    error.print(py);
                }
            });
        }
        if let Some(previous) = &previous {
            previous(event);
        }
    }));
}

fn build_tool(tool: &Bound<'_, PyAny>, slot: &Arc<LoopSlot>) -> PyResult<Arc<dyn Tool>> {
    let call = tool.getattr("_robota_call").map_err(|_| {
        invalid_argument(
            "each entry of `tools` must be a function decorated with @robota.tool (or a \
             robota.Tool)",
        )
    })?;
    let spec = json!({
        "name": from_py(&tool.getattr("name")?)?,
        "description": from_py(&tool.getattr("description")?)?,
        "input_schema": from_py(&tool.getattr("input_schema")?)?,
        "read_only": from_py(&tool.getattr("read_only")?)?,
        "replaces_builtin": tool
            .getattr("replaces_builtin")
            .map(|v| v.is_truthy().unwrap_or(false))
            .unwrap_or(false),
        "mutates_files": match tool.getattr("mutates_files") {
            Ok(value) => from_py(&value)?,
            Err(_) => json!([]),
        },
    });
    let spec = HostToolSpec::from_json_value(spec).map_err(api_error)?;
    Ok(Arc::new(HostTool::new(
        spec,
        PyHostFunction::shared(call.unbind(), slot),
    )))
}

/// An in-process MCP server from `(name, version, [(spec, call), …])` (what
/// `robota.create_sdk_mcp_server` gives the native session).
fn build_mcp_server(server: &Bound<'_, PyAny>, slot: &Arc<LoopSlot>) -> PyResult<McpServerEntry> {
    let (name, version, tools): (String, Option<String>, Bound<'_, PyList>) = server
        .extract()
        .map_err(|_| invalid_argument("internal: an MCP server must be (name, version, tools)"))?;
    let mut builder = HostMcpServerBuilder::new(name, version);
    for tool in tools.iter() {
        let (spec, call): (Bound<'_, PyAny>, Py<PyAny>) = tool
            .extract()
            .map_err(|_| invalid_argument("internal: an MCP tool must be (spec, call)"))?;
        builder
            .add_tool(from_py(&spec)?, PyHostFunction::shared(call, slot))
            .map_err(api_error)?;
    }
    builder.entry().map_err(api_error)
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
            let command = HostCommand::from_json_value(
                from_py(&descriptor)?,
                PyHostFunction::shared(func, slot),
            )
            .map_err(|e| {
                invalid_argument(format!(
                    "command module `{name}`: bad command: {}",
                    e.message
                ))
            })?;
            built.push(Arc::new(command));
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
