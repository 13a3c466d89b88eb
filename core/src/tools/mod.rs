//! The tool port: the [`Tool`] trait every tool implements (built-in, host-provided or projected
//! command), the result shape, and the [`ToolRegistry`] the engine looks tools up in.

pub mod builtins;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::provider::ToolDefinition;

/// What a tool call produced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolOutput {
    /// Concise plain text for the model.
    pub content: String,
    /// True when the call failed; the model sees the content as an error.
    pub is_error: bool,
    /// Structured result for hooks and hosts (e.g. Bash `{stdout, stderr, exit_code}`).
    pub response: serde_json::Value,
}

impl ToolOutput {
    /// A successful result with no structured part beyond the text.
    pub fn text(content: impl Into<String>) -> Self {
        let content = content.into();
        ToolOutput {
            response: serde_json::Value::String(content.clone()),
            content,
            is_error: false,
        }
    }

    /// A successful result with a structured part.
    pub fn with_response(content: impl Into<String>, response: serde_json::Value) -> Self {
        ToolOutput {
            content: content.into(),
            is_error: false,
            response,
        }
    }

    /// A failed result; `message` tells the model what went wrong and how to fix the call.
    pub fn error(message: impl Into<String>) -> Self {
        let content = message.into();
        ToolOutput {
            response: serde_json::json!({ "error": content }),
            content,
            is_error: true,
        }
    }
}

/// What a tool gets besides its input.
#[derive(Debug, Clone)]
pub struct ToolContext {
    /// The provider's id of this call.
    pub tool_use_id: String,
    /// Working directory of the session the call belongs to.
    pub cwd: PathBuf,
    /// Fires when the run is aborted; long-running tools must stop promptly and return.
    pub cancel: CancellationToken,
}

/// A tool the model can call.
#[async_trait]
pub trait Tool: Send + Sync {
    /// Name the model uses.
    fn name(&self) -> &str;
    /// What the tool does, for the model.
    fn description(&self) -> &str;
    /// JSON Schema of the input object.
    fn input_schema(&self) -> serde_json::Value;
    /// True when the tool changes nothing, so calls may run concurrently with other read-only calls.
    fn is_read_only(&self) -> bool {
        false
    }
    /// True when this tool is meant to take the place of a built-in tool of the same name
    /// (a host's own `Read`, say). A session refuses an extra tool that has a built-in's name
    /// without saying so: the clash is far more often an accident than a wish.
    fn replaces_builtin(&self) -> bool {
        false
    }
    /// The files this call will create, change or delete, as the input names them (absolute,
    /// or relative to the session's cwd). A session keeping edit checkpoints saves each file's
    /// content before the call runs, so the change can be rewound; a tool that changes files
    /// without declaring them here cannot be rewound (like Bash). Empty by default.
    fn mutated_paths(&self, input: &serde_json::Value) -> Vec<String> {
        let _ = input;
        Vec::new()
    }
    /// Runs the call. Failures are reported as [`ToolOutput::error`], never by panicking.
    async fn execute(&self, input: serde_json::Value, context: ToolContext) -> ToolOutput;
}

/// Told before a tool changes a file (see [`Tool::mutated_paths`]), so the file's content can be
/// saved first (edit checkpoints). Implemented above the tools layer.
pub trait FileMutationRecorder: Send + Sync {
    /// Called with the absolute path of a file about to change. An error stops the call before
    /// it changes anything; the message reaches the model as the call's error.
    fn before_mutation(&self, tool: &str, path: &std::path::Path) -> Result<(), String>;
}

/// A tool whose declared file changes are reported to a [`FileMutationRecorder`] before it runs.
pub struct RecordedTool {
    inner: Arc<dyn Tool>,
    recorder: Arc<dyn FileMutationRecorder>,
}

impl RecordedTool {
    /// Wraps `inner` so `recorder` sees each file it is about to change.
    pub fn wrap(inner: Arc<dyn Tool>, recorder: Arc<dyn FileMutationRecorder>) -> Arc<dyn Tool> {
        Arc::new(RecordedTool { inner, recorder })
    }
}

#[async_trait]
impl Tool for RecordedTool {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn description(&self) -> &str {
        self.inner.description()
    }
    fn input_schema(&self) -> serde_json::Value {
        self.inner.input_schema()
    }
    fn is_read_only(&self) -> bool {
        self.inner.is_read_only()
    }
    fn replaces_builtin(&self) -> bool {
        self.inner.replaces_builtin()
    }
    fn mutated_paths(&self, input: &serde_json::Value) -> Vec<String> {
        self.inner.mutated_paths(input)
    }
    async fn execute(&self, input: serde_json::Value, context: ToolContext) -> ToolOutput {
        for raw in self.inner.mutated_paths(&input) {
            if raw.trim().is_empty() {
                continue;
            }
            let path = context.cwd.join(raw.trim());
            if let Err(message) = self.recorder.before_mutation(self.inner.name(), &path) {
                return ToolOutput::error(message);
            }
        }
        self.inner.execute(input, context).await
    }
}

/// The set of tools a run may use, looked up by name.
#[derive(Clone, Default)]
pub struct ToolRegistry {
    tools: BTreeMap<String, Arc<dyn Tool>>,
}

impl std::fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolRegistry")
            .field("tools", &self.names())
            .finish()
    }
}

impl ToolRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a tool, replacing any tool of the same name (returned).
    pub fn register(&mut self, tool: Arc<dyn Tool>) -> Option<Arc<dyn Tool>> {
        self.tools.insert(tool.name().to_string(), tool)
    }

    /// Removes a tool by name.
    pub fn unregister(&mut self, name: &str) -> Option<Arc<dyn Tool>> {
        self.tools.remove(name)
    }

    /// The tool with this name.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.get(name)
    }

    /// Registered names, sorted.
    pub fn names(&self) -> Vec<&str> {
        self.tools.keys().map(String::as_str).collect()
    }

    /// True when no tool is registered.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// Number of tools.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// The definitions sent to the model, sorted by name (stable across rounds, cache-friendly).
    pub fn definitions(&self) -> Vec<ToolDefinition> {
        self.tools
            .values()
            .map(|tool| ToolDefinition {
                name: tool.name().to_string(),
                description: tool.description().to_string(),
                input_schema: tool.input_schema(),
            })
            .collect()
    }
}
