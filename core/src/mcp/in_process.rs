//! In-process MCP servers defined by the host: a named server whose tools are host functions
//! (what the Claude Agent SDK calls an SDK server, `create_sdk_mcp_server`).
//!
//! Such a server is a real MCP server (the `rmcp` SDK's server side) connected to the session's
//! MCP client over an in-memory duplex pipe, so its tools go through the same path as an
//! external server's: `mcp__<server>__<tool>` names, server status, permission rules, hooks,
//! the `mcp` command, the output budget and the result mapping all apply unchanged.
//!
//! A handler answers with JSON (see [`call_result_from_answer`]); a handler that fails, or
//! panics, gives the model a tool error (`isError`), never a crash of the session.

use std::fmt;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;

use futures::FutureExt;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde::{Serialize, Serializer};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::config::{is_valid_server_name, McpServerEntry, McpServerOrigin, McpTransport};

/// How many bytes the in-memory pipe between the session and an in-process server buffers
/// before a writer waits for the reader.
const PIPE_BUFFER_BYTES: usize = 256 * 1024;

/// Runs one call of an in-process server's tool.
#[async_trait::async_trait]
pub trait McpToolHandler: Send + Sync {
    /// Answers a call with `arguments` (the model's input object). `cancel` fires when the
    /// caller stops waiting (abort, call timeout, session end). The answer is read by
    /// [`call_result_from_answer`]; `Err(message)` is a tool error with that message.
    async fn call(&self, arguments: Value, cancel: CancellationToken) -> Result<Value, String>;
}

/// The future a closure handler returns.
pub type McpToolFuture = Pin<Box<dyn Future<Output = Result<Value, String>> + Send>>;

/// A [`McpToolHandler`] made of a closure.
struct FnHandler<F>(F);

#[async_trait::async_trait]
impl<F> McpToolHandler for FnHandler<F>
where
    F: Fn(Value) -> McpToolFuture + Send + Sync,
{
    async fn call(&self, arguments: Value, _cancel: CancellationToken) -> Result<Value, String> {
        (self.0)(arguments).await
    }
}

/// One tool of an in-process server: its MCP definition (name, description, input schema,
/// annotations such as `readOnlyHint`) and the handler that runs it.
#[derive(Clone)]
pub struct InProcessMcpTool {
    definition: rmcp::model::Tool,
    handler: Arc<dyn McpToolHandler>,
}

impl fmt::Debug for InProcessMcpTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InProcessMcpTool")
            .field("name", &self.definition.name)
            .finish()
    }
}

impl InProcessMcpTool {
    /// A tool named `name` (as the server lists it; the model sees `mcp__<server>__<name>`)
    /// whose input is described by the JSON Schema `input_schema` (an object schema; anything
    /// else is replaced by "any object").
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        input_schema: Value,
        handler: Arc<dyn McpToolHandler>,
    ) -> Self {
        let schema = match input_schema {
            Value::Object(schema) => schema,
            _ => json!({"type": "object"})
                .as_object()
                .cloned()
                .unwrap_or_default(),
        };
        InProcessMcpTool {
            definition: rmcp::model::Tool::new(name.into(), description.into(), Arc::new(schema)),
            handler,
        }
    }

    /// A tool run by the async closure `handler` (called with the arguments).
    pub fn from_fn<F, Fut>(
        name: impl Into<String>,
        description: impl Into<String>,
        input_schema: Value,
        handler: F,
    ) -> Self
    where
        F: Fn(Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, String>> + Send + 'static,
    {
        let boxed = move |arguments: Value| -> McpToolFuture { Box::pin(handler(arguments)) };
        Self::new(name, description, input_schema, Arc::new(FnHandler(boxed)))
    }

    /// Sets the tool's MCP annotations from their wire JSON (`{"readOnlyHint": true,
    /// "destructiveHint": false, "title": …}`); annotations that do not parse are an error
    /// naming the problem.
    pub fn with_annotations(mut self, annotations: Value) -> Result<Self, String> {
        if annotations.is_null() {
            return Ok(self);
        }
        let parsed: rmcp::model::ToolAnnotations =
            serde_json::from_value(annotations).map_err(|e| {
                format!(
                    "tool `{}`: invalid annotations ({e}); expected an object such as \
                     {{\"readOnlyHint\": true}}",
                    self.definition.name
                )
            })?;
        self.definition.annotations = Some(parsed);
        Ok(self)
    }

    /// Marks the tool read-only (`readOnlyHint`): its calls may run in parallel with other
    /// read-only calls. It is a hint: approval is still asked like for any MCP tool.
    pub fn read_only(mut self, read_only: bool) -> Self {
        let annotations = self.definition.annotations.take().unwrap_or_default();
        self.definition.annotations = Some(annotations.read_only(read_only));
        self
    }

    /// The tool's name as the server lists it.
    pub fn name(&self) -> &str {
        &self.definition.name
    }
}

/// A host-defined MCP server run inside the session's process (see the module docs). Cheap to
/// clone; add it to a session with [`InProcessMcpServer::into_entry`].
#[derive(Clone)]
pub struct InProcessMcpServer {
    inner: Arc<ServerDefinition>,
}

/// What an [`InProcessMcpServer`] serves.
struct ServerDefinition {
    name: String,
    version: String,
    tools: Vec<InProcessMcpTool>,
}

impl fmt::Debug for InProcessMcpServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InProcessMcpServer")
            .field("name", &self.inner.name)
            .field("version", &self.inner.version)
            .field("tools", &self.tool_names())
            .finish()
    }
}

/// Two handles are equal when they are the same server.
impl PartialEq for InProcessMcpServer {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
}

/// Written as `{name, version, tools: [names]}` (the handlers are code, not data).
impl Serialize for InProcessMcpServer {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        json!({
            "name": self.inner.name,
            "version": self.inner.version,
            "tools": self.tool_names(),
        })
        .serialize(serializer)
    }
}

impl InProcessMcpServer {
    /// A server named `name` (the `<server>` of `mcp__<server>__<tool>`: letters, digits, `_`
    /// and `-`, no `__`, at most 40 characters), reporting `version` (default `1.0.0`), serving
    /// `tools`. A bad name, or two tools of the same name, is an error saying so.
    pub fn new(
        name: impl Into<String>,
        version: Option<String>,
        tools: Vec<InProcessMcpTool>,
    ) -> Result<Self, String> {
        let name = name.into();
        if !is_valid_server_name(&name) {
            return Err(format!(
                "invalid MCP server name `{name}`: use 1-40 letters, digits, '_' or '-' \
                 without '__' (it becomes part of the tool names mcp__{name}__<tool>)"
            ));
        }
        let mut seen = std::collections::BTreeSet::new();
        for tool in &tools {
            if tool.name().is_empty() {
                return Err(format!("MCP server `{name}`: a tool has an empty name"));
            }
            if !seen.insert(tool.name().to_string()) {
                return Err(format!(
                    "MCP server `{name}`: two tools are named `{}`; tool names must be unique",
                    tool.name()
                ));
            }
        }
        Ok(InProcessMcpServer {
            inner: Arc::new(ServerDefinition {
                name,
                version: version
                    .filter(|v| !v.trim().is_empty())
                    .unwrap_or_else(|| "1.0.0".into()),
                tools,
            }),
        })
    }

    /// The server's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The version the server reports.
    pub fn version(&self) -> &str {
        &self.inner.version
    }

    /// Its tools' names, in order.
    pub fn tool_names(&self) -> Vec<String> {
        self.inner
            .tools
            .iter()
            .map(|t| t.name().to_string())
            .collect()
    }

    /// The session entry for this server (origin: the host), for the session options'
    /// `mcp_servers`. A
    /// configured server of the same name (settings, `.mcp.json`, a plugin, the host's list)
    /// makes creating the session fail.
    pub fn into_entry(self) -> McpServerEntry {
        McpServerEntry {
            name: self.inner.name.clone(),
            transport: McpTransport::InProcess { server: self },
            origin: McpServerOrigin::Host,
            oauth: None,
        }
    }

    /// Starts serving on one end of a fresh in-memory pipe and returns the other end, for the
    /// client. The server runs on the caller's runtime until the client closes the pipe.
    pub(crate) fn spawn(&self) -> tokio::io::DuplexStream {
        let (client_end, server_end) = tokio::io::duplex(PIPE_BUFFER_BYTES);
        let handler = ServerHandlerImpl {
            definition: Arc::clone(&self.inner),
        };
        tokio::spawn(async move {
            if let Ok(running) = handler.serve(server_end).await {
                let _ = running.waiting().await;
            }
        });
        client_end
    }
}

/// The `rmcp` server side of an [`InProcessMcpServer`].
struct ServerHandlerImpl {
    definition: Arc<ServerDefinition>,
}

impl ServerHandler for ServerHandlerImpl {
    fn get_info(&self) -> ServerConfig {
        let mut info = ServerConfig::new(ServerCapabilities::builder().enable_tools().build());
        info.server_info = Implementation::new(
            self.definition.name.clone(),
            self.definition.version.clone(),
        );
        info
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(
            self.definition
                .tools
                .iter()
                .map(|t| t.definition.clone())
                .collect(),
        ))
    }

    fn get_tool(&self, name: &str) -> Option<rmcp::model::Tool> {
        self.definition
            .tools
            .iter()
            .find(|t| t.name() == name)
            .map(|t| t.definition.clone())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let Some(tool) = self
            .definition
            .tools
            .iter()
            .find(|t| t.name() == request.name)
        else {
            return Ok(CallToolResult::error(vec![ContentBlock::text(format!(
                "MCP server `{}` has no tool named `{}`",
                self.definition.name, request.name
            ))])
            .into());
        };
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        let handler = Arc::clone(&tool.handler);
        // A panicking handler must answer the call (with an error), not leave it unanswered.
        let answer = AssertUnwindSafe(handler.call(arguments, context.ct.clone()))
            .catch_unwind()
            .await
            .unwrap_or_else(|panic| {
                Err(format!(
                    "the tool's handler panicked: {}",
                    crate::engine::tool_batch::panic_message(panic.as_ref())
                ))
            });
        Ok(call_result_from_answer(answer).into())
    }
}

/// The keys of a result object (anything else makes an object plain data).
const RESULT_KEYS: [&str; 7] = [
    "content",
    "isError",
    "is_error",
    "structuredContent",
    "structured_content",
    "response",
    "_meta",
];

/// Turns a handler's answer into the MCP result the model (through the client) sees:
///
/// - a string: one text block (`null`: no content);
/// - a result object, `{"content", "isError"?, "structuredContent"?}` as the Claude Agent SDK's
///   tools return (`is_error`, `structured_content` and `response` are accepted too, as robota's
///   host tools answer): `content` is a list of MCP blocks, so text, images (`{"type": "image",
///   "data", "mimeType"}`) and resource links reach the model, or a plain string;
/// - any other JSON value: its JSON text, with the value as the structured content.
///
/// `Err(message)` (a failed handler) is an error result with the message.
pub fn call_result_from_answer(answer: Result<Value, String>) -> CallToolResult {
    match answer {
        Err(message) => CallToolResult::error(vec![ContentBlock::text(message)]),
        Ok(Value::Null) => CallToolResult::success(Vec::new()),
        Ok(Value::String(text)) => CallToolResult::success(vec![ContentBlock::text(text)]),
        Ok(Value::Object(map))
            if map.contains_key("content")
                && map.keys().all(|k| RESULT_KEYS.contains(&k.as_str())) =>
        {
            result_object(map)
        }
        Ok(value) => {
            let mut result = CallToolResult::success(vec![ContentBlock::text(value.to_string())]);
            result.structured_content = Some(value);
            result
        }
    }
}

/// A result object (see [`call_result_from_answer`]) in MCP's wire form, then parsed.
fn result_object(mut map: serde_json::Map<String, Value>) -> CallToolResult {
    for (alias, key) in [
        ("is_error", "isError"),
        ("structured_content", "structuredContent"),
        ("response", "structuredContent"),
    ] {
        if let Some(value) = map.remove(alias) {
            map.entry(key).or_insert(value);
        }
    }
    match map.get("content") {
        Some(Value::String(text)) => {
            let block = json!([{"type": "text", "text": text}]);
            map.insert("content".into(), block);
        }
        Some(Value::Null) => {
            map.insert("content".into(), json!([]));
        }
        _ => {}
    }
    if map.get("structuredContent").is_some_and(Value::is_null) {
        map.remove("structuredContent");
    }
    let shown: String = Value::Object(map.clone())
        .to_string()
        .chars()
        .take(200)
        .collect();
    serde_json::from_value::<CallToolResult>(Value::Object(map)).unwrap_or_else(|e| {
        CallToolResult::error(vec![ContentBlock::text(format!(
            "the tool answered a result that is not a valid MCP tool result ({e}): {shown}"
        ))])
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wire(answer: Result<Value, String>) -> Value {
        serde_json::to_value(call_result_from_answer(answer)).expect("json")
    }

    #[test]
    fn answers_map_to_mcp_results() {
        assert_eq!(wire(Ok(json!("hi")))["content"][0]["text"], "hi");
        let failed = wire(Err("boom".into()));
        assert_eq!(failed["isError"], true);
        assert_eq!(failed["content"][0]["text"], "boom");
        let data = wire(Ok(json!({"a": 1})));
        assert_eq!(data["structuredContent"], json!({"a": 1}));
        assert_eq!(data["content"][0]["text"], "{\"a\":1}");
        let host_style = wire(Ok(json!({"content": "bad input", "is_error": true})));
        assert_eq!(host_style["isError"], true);
        assert_eq!(host_style["content"][0]["text"], "bad input");
        let image = wire(Ok(json!({"content": [
            {"type": "image", "data": "AAAA", "mimeType": "image/png"}
        ]})));
        assert_eq!(image["content"][0]["type"], "image");
        let broken = wire(Ok(json!({"content": [{"type": "nonsense"}]})));
        assert_eq!(broken["isError"], true);
        assert!(broken["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("not a valid MCP tool result")));
    }
}
