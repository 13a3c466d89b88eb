//! The session's MCP connections as the caller of `mcp_tool` hooks: a hook's call goes to the
//! named server like a model's call (same restart on next use, call timeout and cancellation),
//! and its result is the text the model would see.

use async_trait::async_trait;
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use super::{answer_json, tool, McpHub, McpServerStatus};
use crate::hooks::McpToolHookCaller;

#[async_trait]
impl McpToolHookCaller for McpHub {
    async fn call_tool(
        &self,
        server: &str,
        tool_name: &str,
        arguments: Map<String, Value>,
        cancel: CancellationToken,
    ) -> Result<String, String> {
        let Some(state) = self.server(server) else {
            return Err(format!("no MCP server is named `{server}`"));
        };
        if state.status() == McpServerStatus::Connected
            && !state.tools().iter().any(|t| t.name == tool_name)
        {
            return Err(format!("MCP server `{server}` has no tool `{tool_name}`"));
        }
        let peer = self.peer(state).await?;
        let params = rmcp::model::CallToolRequestParams::new(tool_name.to_string())
            .with_arguments(arguments);
        let result = self
            .run_call(
                async move { answer_json(peer.call_tool(params).await) },
                &cancel,
            )
            .await
            .map_err(|e| format!("MCP server `{server}`, tool `{tool_name}`: {e}"))?;
        let text = tool::content_text(&result["content"]);
        let text = match result.get("structuredContent").filter(|v| !v.is_null()) {
            Some(structured) if text.is_empty() => structured.to_string(),
            _ => text,
        };
        if result["isError"].as_bool() == Some(true) {
            return Err(format!(
                "MCP server `{server}`, tool `{tool_name}` reported an error: {text}"
            ));
        }
        Ok(text)
    }
}
