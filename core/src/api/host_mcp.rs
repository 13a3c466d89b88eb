//! In-process MCP servers whose tools are host functions ([`HostMcpServerBuilder`]): the
//! binding-facing side of [`InProcessMcpServer`], shared by the C, Python, Node and Swift
//! bindings so that a server is described and answered the same way in every language.
//!
//! A tool call reaches the host's [`HostFunction`] as `{server, tool, input}`; the answer is read
//! by [`call_result_from_answer`] (a string, an MCP result `{content: [blocks], isError?,
//! structuredContent?}`, or any JSON value as structured content), and a rejection (a handler
//! that threw) is a tool error with its message.
//!
//! Also here: [`host_mcp_authorization_handler`], the browser step of a remote server's OAuth
//! handed to a host function as `{server, url}`.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::error::ApiError;
use super::host::{check_input_schema, default_schema, is_valid_tool_name, HostCall, HostFunction};
use crate::mcp::{
    InProcessMcpServer, InProcessMcpTool, McpAuthorizationHandler, McpServerEntry, McpToolHandler,
};
use tokio_util::sync::CancellationToken;

/// The description of an in-process server's tool: `{name, description?, input_schema?,
/// annotations?}` (`annotations` in MCP's wire form, e.g. `{"readOnlyHint": true}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostMcpToolSpec {
    /// The tool's name as the server lists it (the model sees `mcp__<server>__<name>`).
    pub name: String,
    /// What it does, for the model.
    #[serde(default)]
    pub description: String,
    /// JSON Schema of its input: an object schema (default: any object).
    #[serde(default = "default_schema")]
    pub input_schema: Value,
    /// MCP tool annotations (`readOnlyHint`, `destructiveHint`, `idempotentHint`,
    /// `openWorldHint`, `title`).
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub annotations: Value,
}

impl HostMcpToolSpec {
    /// Reads and checks a spec: a name of letters, digits, `_` or `-` and an object schema.
    pub fn from_json_value(value: Value) -> Result<Self, ApiError> {
        let label = match value.get("name").and_then(Value::as_str) {
            Some(name) => format!("invalid MCP tool `{name}`"),
            None => "invalid MCP tool".to_string(),
        };
        let spec: HostMcpToolSpec = super::fields::from_value(value, &label)?;
        if !is_valid_tool_name(&spec.name) {
            return Err(ApiError::invalid_argument(format!(
                "invalid MCP tool name `{}`: use 1-64 letters, digits, '_' or '-'",
                spec.name
            )));
        }
        check_input_schema(&spec.input_schema)
            .map_err(|problem| ApiError::invalid_argument(format!("{label}: {problem}")))?;
        if !spec.annotations.is_null() && !spec.annotations.is_object() {
            return Err(ApiError::invalid_argument(format!(
                "{label}: `annotations` must be an object such as {{\"readOnlyHint\": true}}, \
                 not {}",
                super::fields::shorten(&spec.annotations)
            )));
        }
        Ok(spec)
    }
}

/// Collects an in-process server's tools as the host adds them, then builds the server.
#[derive(Debug, Default)]
pub struct HostMcpServerBuilder {
    name: String,
    version: Option<String>,
    tools: Vec<InProcessMcpTool>,
}

impl HostMcpServerBuilder {
    /// A server named `name` reporting `version` (default `1.0.0`).
    pub fn new(name: impl Into<String>, version: Option<String>) -> Self {
        HostMcpServerBuilder {
            name: name.into(),
            version,
            tools: Vec::new(),
        }
    }

    /// Adds a tool described by `spec` (see [`HostMcpToolSpec`]) and answered by `function`.
    pub fn add_tool(
        &mut self,
        spec: Value,
        function: Arc<dyn HostFunction>,
    ) -> Result<(), ApiError> {
        let spec = HostMcpToolSpec::from_json_value(spec)?;
        if self.tools.iter().any(|t| t.name() == spec.name) {
            return Err(ApiError::invalid_argument(format!(
                "MCP server `{}` already has a tool named `{}`",
                self.name, spec.name
            )));
        }
        let handler = Arc::new(HostMcpToolHandler {
            server: self.name.clone(),
            tool: spec.name.clone(),
            function,
        });
        let tool = InProcessMcpTool::new(spec.name, spec.description, spec.input_schema, handler)
            .with_annotations(spec.annotations)
            .map_err(ApiError::invalid_argument)?;
        self.tools.push(tool);
        Ok(())
    }

    /// The server (its name checked), ready for a session.
    pub fn build(&self) -> Result<InProcessMcpServer, ApiError> {
        InProcessMcpServer::new(self.name.clone(), self.version.clone(), self.tools.clone())
            .map_err(ApiError::invalid_argument)
    }

    /// The session entry of the server (see [`InProcessMcpServer::into_entry`]).
    pub fn entry(&self) -> Result<McpServerEntry, ApiError> {
        Ok(self.build()?.into_entry())
    }
}

/// Runs an in-process tool's calls through the host.
struct HostMcpToolHandler {
    server: String,
    tool: String,
    function: Arc<dyn HostFunction>,
}

#[async_trait::async_trait]
impl McpToolHandler for HostMcpToolHandler {
    async fn call(&self, arguments: Value, cancel: CancellationToken) -> Result<Value, String> {
        let call = HostCall {
            request: json!({
                "server": self.server,
                "tool": self.tool,
                "input": arguments,
            }),
            cancel: cancel.clone(),
            stream: None,
            context: None,
        };
        tokio::select! {
            biased;
            answer = self.function.call(call) => answer,
            () = cancel.cancelled() => Err(super::host::ABORTED_TOOL_CONTENT.into()),
        }
    }
}

/// The browser step of a remote MCP server's OAuth as a host function: it is called with
/// `{"server": name, "url": authorization URL}` and should open the URL (or show it); the
/// authorization then completes through the session's loopback redirect listener, so the
/// answer's value is not used. A rejection (the host's callback threw) ends the authorization
/// at once: the server is `needs_auth`, the status naming the message.
pub fn host_mcp_authorization_handler(function: Arc<dyn HostFunction>) -> McpAuthorizationHandler {
    McpAuthorizationHandler::new_async(move |server, url| {
        let function = Arc::clone(&function);
        let call = HostCall {
            request: json!({ "server": server, "url": url }),
            cancel: CancellationToken::new(),
            stream: None,
            context: None,
        };
        Box::pin(async move { function.call(call).await.map(|_| ()) })
    })
}
