//! The resource tools of Claude Code: `ListMcpResourcesTool` (the resources of every server, or
//! of one) and `ReadMcpResourceTool` (one resource by server and URI).

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{json, Value};

use super::tool::{fit, resource_text};
use super::{answer_json, list_resources, McpHub};
use crate::tools::{Tool, ToolContext, ToolOutput};

/// Name of the tool that lists MCP resources.
pub const LIST_RESOURCES_TOOL: &str = "ListMcpResourcesTool";
/// Name of the tool that reads one MCP resource.
pub const READ_RESOURCE_TOOL: &str = "ReadMcpResourceTool";

/// Lists the resources of the connected servers.
pub(crate) struct ListResourcesTool {
    hub: Arc<McpHub>,
}

impl ListResourcesTool {
    pub(crate) fn new(hub: Arc<McpHub>) -> Self {
        ListResourcesTool { hub }
    }
}

#[async_trait]
impl Tool for ListResourcesTool {
    fn name(&self) -> &str {
        LIST_RESOURCES_TOOL
    }

    fn description(&self) -> &str {
        "Lists the resources the connected MCP servers offer (URI, name, type, description). \
         Give `server` to list one server's resources only."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "server": {"type": "string", "description": "Only this server's resources"}
            }
        })
    }

    fn is_read_only(&self) -> bool {
        true
    }

    async fn execute(&self, input: Value, context: ToolContext) -> ToolOutput {
        let only = input["server"].as_str();
        if let Some(name) = only {
            if self.hub.server(name).is_none() {
                return ToolOutput::error(format!("no MCP server is named `{name}`"));
            }
        }
        let resources = match list_resources(&self.hub, only, &context.cancel).await {
            Ok(resources) => resources,
            Err(message) => return ToolOutput::error(message),
        };
        if resources.is_empty() {
            return ToolOutput::with_response("No resources found.", json!([]));
        }
        let mut lines = Vec::new();
        let mut items = Vec::new();
        for (server, resource) in &resources {
            let mut line = format!("{server}: {} <{}>", resource.name, resource.uri);
            if let Some(mime) = &resource.mime_type {
                line.push_str(&format!(" ({mime})"));
            }
            if let Some(description) = &resource.description {
                line.push_str(&format!(" — {description}"));
            }
            lines.push(line);
            let mut item = serde_json::to_value(resource).unwrap_or(Value::Null);
            item["server"] = json!(server);
            items.push(item);
        }
        let stem = format!("mcp-resources-{}", context.tool_use_id.len());
        ToolOutput::with_response(
            fit(&self.hub, &lines.join("\n"), &stem),
            Value::Array(items),
        )
    }
}

/// Reads one resource of a server.
pub(crate) struct ReadResourceTool {
    hub: Arc<McpHub>,
}

impl ReadResourceTool {
    pub(crate) fn new(hub: Arc<McpHub>) -> Self {
        ReadResourceTool { hub }
    }
}

#[async_trait]
impl Tool for ReadResourceTool {
    fn name(&self) -> &str {
        READ_RESOURCE_TOOL
    }

    fn description(&self) -> &str {
        "Reads a resource of an MCP server by its URI (see ListMcpResourcesTool)."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "server": {"type": "string", "description": "The server's name"},
                "uri": {"type": "string", "description": "The resource's URI"}
            },
            "required": ["server", "uri"]
        })
    }

    fn is_read_only(&self) -> bool {
        true
    }

    async fn execute(&self, input: Value, context: ToolContext) -> ToolOutput {
        let (Some(server), Some(uri)) = (input["server"].as_str(), input["uri"].as_str()) else {
            return ToolOutput::error("give `server` (a server's name) and `uri`");
        };
        let Some(state) = self.hub.server(server) else {
            return ToolOutput::error(format!("no MCP server is named `{server}`"));
        };
        let peer = match self.hub.peer(state).await {
            Ok(peer) => peer,
            Err(message) => return ToolOutput::error(message),
        };
        let params = rmcp::model::ReadResourceRequestParams::new(uri.to_string());
        let result = self
            .hub
            .run_call(
                async move { answer_json(peer.read_resource(params).await) },
                &context.cancel,
            )
            .await;
        match result {
            Ok(result) => {
                let contents = result["contents"].as_array().cloned().unwrap_or_default();
                let text = contents
                    .iter()
                    .map(resource_text)
                    .collect::<Vec<_>>()
                    .join("\n");
                let stem = format!("mcp-resource-{}", contents.len());
                ToolOutput::with_response(
                    fit(&self.hub, &text, &stem),
                    json!({"contents": contents}),
                )
            }
            Err(message) => ToolOutput::error(format!(
                "reading `{uri}` from MCP server `{server}` failed: {message}"
            )),
        }
    }
}
