//! [`McpTool`]: one server tool as a session tool named `mcp__<server>__<tool>`, with the
//! server's schema, and the mapping of an MCP result (text, images, audio, resource links,
//! embedded resources, structured content) to what the model and hooks see.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{json, Value};

use super::{answer_json, McpHub, ServerState, CONNECTION_CLOSED};
use crate::tools::{Tool, ToolContext, ToolOutput};

/// The longest tool name the model providers accept.
pub(crate) const MAX_TOOL_NAME: usize = 64;

/// Each tool's session name with its index in `tools`: `mcp__<server>__<tool>`, characters other
/// than letters, digits, `_` and `-` replaced by `_` (as Claude Code does).
pub(crate) fn session_tool_names(
    server: &str,
    tools: &[rmcp::model::Tool],
) -> Vec<(String, usize)> {
    tools
        .iter()
        .enumerate()
        .map(|(index, tool)| {
            let clean: String = tool
                .name
                .chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                        c
                    } else {
                        '_'
                    }
                })
                .collect();
            (format!("mcp__{server}__{clean}"), index)
        })
        .collect()
}

/// A server tool the model can call.
pub struct McpTool {
    hub: Arc<McpHub>,
    server: Arc<ServerState>,
    name: String,
    description: String,
    schema: Value,
    read_only: bool,
    remote_name: String,
}

impl McpTool {
    pub(crate) fn new(
        hub: Arc<McpHub>,
        server: Arc<ServerState>,
        name: String,
        tool: rmcp::model::Tool,
    ) -> Self {
        let mut schema = Value::Object((*tool.input_schema).clone());
        if schema.get("type").is_none() {
            schema["type"] = json!("object");
        }
        McpTool {
            description: tool
                .description
                .as_deref()
                .map(str::to_string)
                .or_else(|| tool.title.clone())
                .unwrap_or_default(),
            read_only: tool
                .annotations
                .as_ref()
                .and_then(|a| a.read_only_hint)
                .unwrap_or(false),
            remote_name: tool.name.to_string(),
            hub,
            server,
            name,
            schema,
        }
    }

    /// The server's name.
    pub fn server_name(&self) -> &str {
        &self.server.entry.name
    }
}

#[async_trait]
impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn input_schema(&self) -> Value {
        self.schema.clone()
    }

    /// The server's `readOnlyHint`: such calls may run in parallel with other read-only calls.
    /// (It is a hint from the server, so it never counts as approval: the session asks for MCP
    /// tools like any other tool that is not known to be read-only.)
    fn is_read_only(&self) -> bool {
        self.read_only
    }

    async fn execute(&self, input: Value, context: ToolContext) -> ToolOutput {
        let peer = match self.hub.peer(&self.server).await {
            Ok(peer) => peer,
            Err(message) => return ToolOutput::error(message),
        };
        let arguments = match input {
            Value::Object(map) => map,
            Value::Null => serde_json::Map::new(),
            other => {
                return ToolOutput::error(format!(
                    "the input of `{}` must be a JSON object, not {other}",
                    self.name
                ))
            }
        };
        let params = rmcp::model::CallToolRequestParams::new(self.remote_name.clone())
            .with_arguments(arguments);
        let result = self
            .hub
            .run_call(
                async move { answer_json(peer.call_tool(params).await) },
                &context.cancel,
            )
            .await;
        match result {
            Ok(result) => self.map_result(result, &context),
            Err(message) => {
                if message == CONNECTION_CLOSED {
                    let tail = self.server.stderr_tail();
                    let mut reason = message.clone();
                    if !tail.is_empty() {
                        reason.push_str(&format!("; its stderr ends with: {tail}"));
                    }
                    self.server.fail(reason);
                }
                ToolOutput::error(format!("MCP tool `{}` failed: {message}", self.name))
            }
        }
    }
}

impl McpTool {
    /// The model's text (cut to the MCP output budget, the whole text spilled to a file) and
    /// the structured response for hooks: `{content, structuredContent?, isError}`.
    fn map_result(&self, result: Value, context: &ToolContext) -> ToolOutput {
        let is_error = result["isError"].as_bool().unwrap_or(false);
        let mut text = content_text(&result["content"]);
        if text.is_empty() {
            if let Some(structured) = result.get("structuredContent").filter(|v| !v.is_null()) {
                text = serde_json::to_string_pretty(structured).unwrap_or_default();
            }
        }
        if text.is_empty() {
            text = "(the tool returned no content)".into();
        }
        let stem = format!("mcp-{}", sanitize_stem(&context.tool_use_id));
        let content = fit(&self.hub, &text, &stem);
        let mut response = json!({
            "content": result.get("content").cloned().unwrap_or(json!([])),
            "isError": is_error,
        });
        if let Some(structured) = result.get("structuredContent").filter(|v| !v.is_null()) {
            response["structuredContent"] = structured.clone();
        }
        ToolOutput {
            content,
            is_error,
            response,
        }
    }
}

/// Fits `text` to the MCP output budget, spilling the whole text to the session's spill
/// directory (when the session has built-in tools) as the built-ins do.
pub(crate) fn fit(hub: &McpHub, text: &str, stem: &str) -> String {
    let max = hub.options.max_output_bytes;
    match hub.builtins.get() {
        Some(builtins) => builtins.fit_output(text, max, stem).0,
        None => crate::tools::builtins::cut_output(text, max),
    }
}

fn sanitize_stem(id: &str) -> String {
    id.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .take(40)
        .collect()
}

/// The text a model sees for MCP content blocks (a list, or one block): text as it is, other
/// blocks as a one-line description (an image's type and size, a resource link's URI).
pub(crate) fn content_text(content: &Value) -> String {
    let blocks: Vec<&Value> = match content {
        Value::Array(items) => items.iter().collect(),
        Value::Object(_) => vec![content],
        _ => Vec::new(),
    };
    let mut parts = Vec::new();
    for block in blocks {
        let kind = block["type"].as_str().unwrap_or("");
        let part = match kind {
            "text" => block["text"].as_str().unwrap_or("").to_string(),
            "image" | "audio" => format!(
                "[{kind}: {}, {} bytes]",
                block["mimeType"].as_str().unwrap_or("unknown type"),
                block["data"].as_str().map_or(0, |d| d.len() / 4 * 3)
            ),
            "resource_link" => {
                let mut line = format!(
                    "[resource link: {} <{}>",
                    block["name"].as_str().unwrap_or(""),
                    block["uri"].as_str().unwrap_or("")
                );
                if let Some(mime) = block["mimeType"].as_str() {
                    line.push_str(&format!(" ({mime})"));
                }
                if let Some(description) = block["description"].as_str() {
                    line.push_str(&format!(": {description}"));
                }
                line.push(']');
                line
            }
            "resource" => resource_text(&block["resource"]),
            _ => continue,
        };
        parts.push(part);
    }
    parts.join("\n")
}

/// The text of one resource's contents: its text, or a description of a binary one.
pub(crate) fn resource_text(resource: &Value) -> String {
    let uri = resource["uri"].as_str().unwrap_or("");
    match resource["text"].as_str() {
        Some(text) => text.to_string(),
        None => format!(
            "[binary resource <{uri}>: {}, {} bytes]",
            resource["mimeType"].as_str().unwrap_or("unknown type"),
            resource["blob"].as_str().map_or(0, |d| d.len() / 4 * 3)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_every_content_kind_to_text() {
        let content = json!([
            {"type": "text", "text": "hello"},
            {"type": "image", "data": "AAAA", "mimeType": "image/png"},
            {"type": "resource_link", "uri": "test://a", "name": "a", "mimeType": "text/plain"},
            {"type": "resource", "resource": {"uri": "test://b", "text": "inside"}},
            {"type": "resource", "resource": {"uri": "test://c", "blob": "AAAAAAAA", "mimeType": "application/octet-stream"}},
        ]);
        assert_eq!(
            content_text(&content),
            "hello\n[image: image/png, 3 bytes]\n[resource link: a <test://a> (text/plain)]\n\
             inside\n[binary resource <test://c>: application/octet-stream, 6 bytes]"
        );
    }
}
