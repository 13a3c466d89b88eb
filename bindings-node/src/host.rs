//! The reverse direction: the engine calling JavaScript. Every host extension (tools, the
//! permission handler, hook callbacks, command modules, a JS provider) goes through one
//! [`HostBridge`] per session: a single **weak** threadsafe function to the facade's dispatcher,
//! which takes a JSON request and returns a Promise of a JSON reply. Weak, so a session never
//! keeps Node alive by itself; a running prompt keeps it alive through a pending native Promise
//! (`waitIdle`, `query`) instead.
//!
//! Requests are `{"call_id", "kind", ...}`; replies are `{"ok": value}` or `{"error": message}`.
//! When the engine stops waiting for a call (abort, timeout, shutdown), the bridge sends
//! `{"kind": "cancel", "call_id"}` so the JavaScript side can fire that call's `AbortSignal`.
//! Nothing here blocks the JavaScript thread: calls are queued non-blockingly and awaited on the
//! tokio runtime, so a callback may itself await session methods without deadlocking.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use napi::bindgen_prelude::Promise;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::Status;
use serde::Deserialize;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use robota::framework::commands::{
    CommandDescriptor, CommandHostContext, CommandLifecycle, CommandModule, CommandResult,
    CommandSource, SystemCommand,
};
use robota::hooks::{HookCallback, HookCallbackResult, HookInput};
use robota::message::{ProviderError, ProviderErrorKind};
use robota::provider::scripted::{ScriptedProvider, ScriptedTurn};
use robota::provider::{
    Provider, ProviderCapabilities, ProviderRequest, ProviderResponse, StreamSink,
};
use robota::session::{PermissionHandler, PermissionRequest, PermissionResponse};
use robota::tools::{Tool, ToolContext, ToolOutput};

/// The JavaScript dispatcher: `(requestJson: string) => Promise<string>`, weak.
pub(crate) type HostFunction =
    ThreadsafeFunction<String, Promise<String>, String, Status, false, true>;

/// One session's route to its JavaScript callbacks.
pub(crate) struct HostBridge {
    function: HostFunction,
    next_call: AtomicU64,
}

/// A call in flight; dropping it before [`finish`](CallGuard::finish) tells JavaScript the
/// engine stopped waiting (the call's `AbortSignal` fires).
struct CallGuard<'a> {
    bridge: &'a HostBridge,
    call_id: u64,
    done: bool,
}

impl CallGuard<'_> {
    fn finish(mut self) {
        self.done = true;
    }
}

impl Drop for CallGuard<'_> {
    fn drop(&mut self) {
        if !self.done {
            self.bridge.notify_cancel(self.call_id);
        }
    }
}

impl HostBridge {
    pub(crate) fn new(function: HostFunction) -> Arc<Self> {
        Arc::new(HostBridge {
            function,
            next_call: AtomicU64::new(1),
        })
    }

    fn notify_cancel(&self, call_id: u64) {
        let request = json!({"call_id": call_id, "kind": "cancel"}).to_string();
        // Fire and forget: the reply (if any) is ignored, and a closing environment is fine.
        let _ = self
            .function
            .call(request, ThreadsafeFunctionCallMode::NonBlocking);
    }

    /// Sends `request` (an object; `call_id` is added) and waits for the reply, or for `cancel`.
    /// `Err` carries a message for the model or the log.
    pub(crate) async fn call(
        &self,
        mut request: Value,
        cancel: Option<&CancellationToken>,
    ) -> Result<Value, HostCallError> {
        let call_id = self.next_call.fetch_add(1, Ordering::Relaxed);
        if let Value::Object(map) = &mut request {
            map.insert("call_id".into(), json!(call_id));
        }
        let guard = CallGuard {
            bridge: self,
            call_id,
            done: false,
        };
        let exchange = async {
            let promise = self
                .function
                .call_async_catch(request.to_string())
                .await
                .map_err(|e| {
                    HostCallError::Failed(format!("the JavaScript callback failed: {e}"))
                })?;
            let reply = promise.await.map_err(|e| {
                HostCallError::Failed(format!("the JavaScript callback failed: {e}"))
            })?;
            parse_reply(&reply)
        };
        let result = match cancel {
            Some(cancel) => tokio::select! {
                result = exchange => result,
                () = cancel.cancelled() => Err(HostCallError::Cancelled),
            },
            None => exchange.await,
        };
        if !matches!(result, Err(HostCallError::Cancelled)) {
            guard.finish();
        }
        result
    }
}

/// Why a host call produced no value.
#[derive(Debug)]
pub(crate) enum HostCallError {
    /// The engine stopped waiting (abort).
    Cancelled,
    /// The callback threw or returned something unusable; the message says which.
    Failed(String),
}

impl std::fmt::Display for HostCallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HostCallError::Cancelled => f.write_str("aborted"),
            HostCallError::Failed(message) => f.write_str(message),
        }
    }
}

fn parse_reply(reply: &str) -> Result<Value, HostCallError> {
    let value: Value = serde_json::from_str(reply).map_err(|e| {
        HostCallError::Failed(format!(
            "the JavaScript dispatcher replied with invalid JSON: {e}"
        ))
    })?;
    if let Some(message) = value.get("error") {
        let message = message
            .as_str()
            .map(str::to_string)
            .unwrap_or_else(|| message.to_string());
        return Err(HostCallError::Failed(message));
    }
    Ok(value.get("ok").cloned().unwrap_or(Value::Null))
}

/// A tool declared by JavaScript (`tool({...})`): the metadata is here, `execute` runs in JS.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ToolSpec {
    /// The name the model uses.
    pub name: String,
    /// What it does, for the model.
    #[serde(default)]
    pub description: String,
    /// JSON Schema of the input.
    #[serde(default = "empty_object_schema")]
    pub input_schema: Value,
    /// Read-only tools need no approval and may run concurrently.
    #[serde(default)]
    pub read_only: bool,
}

fn empty_object_schema() -> Value {
    json!({"type": "object", "properties": {}})
}

/// [`Tool`] over a JavaScript `execute`.
pub(crate) struct JsTool {
    spec: ToolSpec,
    bridge: Arc<HostBridge>,
}

impl JsTool {
    pub(crate) fn new(spec: ToolSpec, bridge: Arc<HostBridge>) -> Self {
        JsTool { spec, bridge }
    }
}

#[async_trait]
impl Tool for JsTool {
    fn name(&self) -> &str {
        &self.spec.name
    }

    fn description(&self) -> &str {
        &self.spec.description
    }

    fn input_schema(&self) -> Value {
        self.spec.input_schema.clone()
    }

    fn is_read_only(&self) -> bool {
        self.spec.read_only
    }

    async fn execute(&self, input: Value, context: ToolContext) -> ToolOutput {
        let request = json!({
            "kind": "tool",
            "tool": self.spec.name,
            "input": input,
            "tool_use_id": context.tool_use_id,
            "cwd": context.cwd,
        });
        match self.bridge.call(request, Some(&context.cancel)).await {
            Ok(reply) => tool_output(reply),
            Err(HostCallError::Cancelled) => ToolOutput::error("aborted"),
            Err(HostCallError::Failed(message)) => ToolOutput::error(message),
        }
    }
}

/// What a JS tool returned: `{content, is_error?, response?}` (the facade normalizes strings and
/// other values to this shape).
fn tool_output(reply: Value) -> ToolOutput {
    let content = match reply.get("content") {
        Some(Value::String(text)) => text.clone(),
        Some(other) => other.to_string(),
        None => String::new(),
    };
    let is_error = reply
        .get("is_error")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let response = reply
        .get("response")
        .cloned()
        .unwrap_or_else(|| Value::String(content.clone()));
    ToolOutput {
        content,
        is_error,
        response,
    }
}

/// [`PermissionHandler`] over a JavaScript function. A throw or an unusable answer denies.
pub(crate) struct JsPermissionHandler {
    pub(crate) bridge: Arc<HostBridge>,
}

#[async_trait]
impl PermissionHandler for JsPermissionHandler {
    async fn request_permission(
        &self,
        request: PermissionRequest,
        cancel: CancellationToken,
    ) -> PermissionResponse {
        let payload = json!({"kind": "permission", "request": request});
        match self.bridge.call(payload, Some(&cancel)).await {
            Ok(answer) => serde_json::from_value(answer.clone()).unwrap_or_else(|e| {
                PermissionResponse::deny(format!(
                    "The permission handler returned an unusable answer ({answer}): {e}"
                ))
            }),
            Err(HostCallError::Cancelled) => PermissionResponse::deny("aborted"),
            Err(HostCallError::Failed(message)) => {
                PermissionResponse::deny(format!("The permission handler failed: {message}"))
            }
        }
    }
}

/// [`HookCallback`] over the JavaScript hook number `index`.
pub(crate) struct JsHookCallback {
    pub(crate) index: usize,
    pub(crate) bridge: Arc<HostBridge>,
}

#[async_trait]
impl HookCallback for JsHookCallback {
    fn name(&self) -> &str {
        "javascript"
    }

    async fn call(&self, input: &HookInput) -> HookCallbackResult {
        let payload = json!({"kind": "hook", "index": self.index, "input": input});
        match self.bridge.call(payload, None).await {
            Ok(Value::Null) => HookCallbackResult::Continue,
            Ok(answer) => serde_json::from_value(answer.clone()).unwrap_or_else(|e| {
                HookCallbackResult::Error {
                    message: format!(
                        "the hook callback returned an unusable result ({answer}): {e}"
                    ),
                }
            }),
            Err(error) => HookCallbackResult::Error {
                message: error.to_string(),
            },
        }
    }
}

/// A command of a JavaScript command module, as declared (its `execute` stays in JS).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CommandSpec {
    /// Canonical, slash-free name.
    pub name: String,
    /// One line for help and palettes.
    #[serde(default)]
    pub description: String,
    /// Other names.
    #[serde(default)]
    pub aliases: Vec<String>,
    /// Argument grammar shown after the name.
    #[serde(default)]
    pub argument_hint: Option<String>,
    /// The model may run it through its projected tool.
    #[serde(default)]
    pub model_invocable: bool,
    /// Users may run it.
    #[serde(default = "yes")]
    pub user_invocable: bool,
    /// `true`: refused while a prompt runs.
    #[serde(default)]
    pub blocking: bool,
}

fn yes() -> bool {
    true
}

/// A JavaScript command module, as declared.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CommandModuleSpec {
    /// Module id (collision reports; routes `execute` calls back to the module).
    pub name: String,
    /// Its commands.
    #[serde(default)]
    pub commands: Vec<CommandSpec>,
}

/// [`SystemCommand`] whose `execute` runs in JavaScript.
struct JsCommand {
    module: String,
    descriptor: CommandDescriptor,
    bridge: Arc<HostBridge>,
}

#[async_trait]
impl SystemCommand for JsCommand {
    fn descriptor(&self) -> &CommandDescriptor {
        &self.descriptor
    }

    async fn execute(&self, ctx: &dyn CommandHostContext, args: &str) -> CommandResult {
        let payload = json!({
            "kind": "command",
            "module": self.module,
            "command": self.descriptor.name,
            "args": args,
            "session_id": ctx.session_id(),
        });
        match self.bridge.call(payload, None).await {
            Ok(reply) => serde_json::from_value(reply.clone()).unwrap_or_else(|e| {
                CommandResult::error(format!(
                    "the command `{}` returned an unusable result ({reply}): {e}; return \
                     {{message, success}} or a string",
                    self.descriptor.name
                ))
            }),
            Err(error) => CommandResult::error(format!(
                "the command `{}` failed: {error}",
                self.descriptor.name
            )),
        }
    }
}

/// The engine's [`CommandModule`] for a JavaScript module.
pub(crate) fn command_module(spec: CommandModuleSpec, bridge: &Arc<HostBridge>) -> CommandModule {
    let mut module = CommandModule::new(spec.name.clone(), CommandSource::Project);
    for command in spec.commands {
        let mut descriptor = CommandDescriptor::new(command.name, command.description);
        descriptor.aliases = command.aliases;
        descriptor.argument_hint = command.argument_hint;
        descriptor.model_invocable = command.model_invocable;
        descriptor.user_invocable = command.user_invocable;
        if command.blocking {
            descriptor.lifecycle = CommandLifecycle::Blocking;
        }
        module = module.with_command(Arc::new(JsCommand {
            module: spec.name.clone(),
            descriptor,
            bridge: Arc::clone(bridge),
        }));
    }
    module
}

/// [`Provider`] implemented in JavaScript: `respond(request)` returns one scripted-turn object
/// (`{text, thinking, tool_calls, usage, stop_reason}`), which is then streamed exactly like the
/// scripted provider streams a turn.
pub(crate) struct JsProvider {
    pub(crate) name: String,
    pub(crate) model: String,
    pub(crate) context_window: Option<u64>,
    pub(crate) bridge: Arc<HostBridge>,
}

#[async_trait]
impl Provider for JsProvider {
    fn name(&self) -> &str {
        &self.name
    }

    fn model(&self) -> &str {
        &self.model
    }

    fn capabilities(&self) -> ProviderCapabilities {
        let mut capabilities = ProviderCapabilities {
            thinking: true,
            ..ProviderCapabilities::default()
        };
        if let Some(window) = self.context_window {
            capabilities.context_window = window;
        }
        capabilities
    }

    async fn stream(
        &self,
        request: &ProviderRequest,
        on_event: &StreamSink<'_>,
        cancel: &CancellationToken,
    ) -> Result<ProviderResponse, ProviderError> {
        let failure = |message: String| {
            ProviderError::new(ProviderErrorKind::Provider, self.name.clone(), message)
        };
        let payload = json!({"kind": "provider", "request": request});
        let turn = match self.bridge.call(payload, Some(cancel)).await {
            Ok(reply) => serde_json::from_value::<ScriptedTurn>(reply).map_err(|e| {
                failure(format!(
                    "the JavaScript provider returned an unusable turn: {e} (expected \
                     {{text?, thinking?, tool_calls?, usage?, stop_reason?}})"
                ))
            })?,
            Err(HostCallError::Cancelled) => ScriptedTurn::default(),
            Err(HostCallError::Failed(message)) => {
                return Err(failure(format!(
                    "the JavaScript provider failed: {message}"
                )))
            }
        };
        let mut turn = turn;
        if turn.model.is_none() {
            turn.model = Some(self.model.clone());
        }
        ScriptedProvider::new(vec![turn])
            .stream(request, on_event, cancel)
            .await
    }
}
