//! Host extensions as JSON calls: one [`HostFunction`] trait a binding implements once (a C
//! completion object, a Python coroutine, a JS Promise), and adapters that turn such a function
//! into each engine port a host can implement:
//!
//! | adapter | engine port | request (JSON) | answer (JSON) |
//! |---|---|---|---|
//! | [`HostTool`] | [`Tool`] | `{tool, input, tool_use_id, cwd}` | `{content, is_error?, response?}` or a string |
//! | [`HostPermissionHandler`] | [`PermissionHandler`] | [`PermissionRequest`] | [`PermissionResponse`] (`{"type": "allow_once"}`, …) |
//! | [`HostHookCallback`] | [`HookCallback`] | [`HookInput`] | [`HookCallbackResult`] (`{"type": "block", "reason"}`, …) |
//! | [`HostCommand`] | [`SystemCommand`] | `{command, args, session_id, session_name, permission_mode, model, context_state}` + the live [`HostCommandContext`](super::HostCommandContext) in [`HostCall::context`] | [`CommandResult`] (`success` defaults to true) or a string |
//! | [`HostProvider`] | [`Provider`] | [`ProviderRequest`] | streamed [`HostProviderEvent`]s, then `{stop_reason?, usage?, model?, text?, tool_calls?, error?}` |
//!
//! A rejected call (`Err(message)`) is a failed tool result, a denial, a failed hook, a failed
//! command or a provider error respectively. When the engine stops waiting (abort, timeout,
//! session end) the future returned by [`HostFunction::call`] is dropped and the call's
//! `cancel` token has fired; a host tool aborted that way reports the error result `"aborted"`,
//! whatever the host answers later. Answers that do not have the documented shape are treated
//! like rejections with a message naming the problem, so a buggy host never crashes the engine.

use std::sync::Arc;
use std::time::Duration;

pub use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use tokio::sync::mpsc;
pub use tokio_util::sync::CancellationToken;

use super::error::ApiError;
use crate::framework::commands::{
    CommandDescriptor, CommandHostContext, CommandModule, CommandResult, CommandSource,
    SystemCommand,
};
use crate::hooks::{
    HookCallback, HookCallbackResult, HookEvent, HookInput, HookOutput, OnHookFailure,
};
use crate::message::{ProviderError, ProviderErrorKind, Usage};
use crate::provider::{
    Provider, ProviderCapabilities, ProviderRequest, ProviderResponse, ProviderToolCall,
    StopReason, StreamEvent, StreamSink, DEFAULT_CONTEXT_WINDOW,
};
use crate::session::{
    HookCallbackRegistration, PermissionHandler, PermissionRequest, PermissionResponse,
};
use crate::tools::{Tool, ToolContext, ToolOutput};

/// One call into the host.
#[derive(Debug)]
pub struct HostCall {
    /// What the engine asks, as JSON (see the module table).
    pub request: Value,
    /// Fires when the engine no longer needs the answer (abort, timeout, session end).
    pub cancel: CancellationToken,
    /// For provider calls only: where the host streams [`HostProviderEvent`]s.
    pub stream: Option<HostStream>,
    /// For command calls only: the command's live context (see [`HostCommandContext`](super::HostCommandContext)), valid
    /// until the host answers.
    pub context: Option<super::HostCommandContext>,
}

/// Something the host implements once per binding: answers a JSON request with a JSON value
/// (or a rejection message), possibly after a long time, possibly from another thread.
#[async_trait]
pub trait HostFunction: Send + Sync {
    /// Answers one call. Dropping the returned future means the engine stopped waiting.
    async fn call(&self, call: HostCall) -> Result<Value, String>;
}

/// The sending side of a host provider's stream. Cheap to clone; usable from any thread.
#[derive(Debug, Clone)]
pub struct HostStream {
    sender: mpsc::UnboundedSender<HostProviderEvent>,
}

impl HostStream {
    /// Sends one event (a [`HostProviderEvent`] as JSON). Fails when the value does not have
    /// the shape of an event, or when the call is already over.
    pub fn send(&self, event: Value) -> Result<(), ApiError> {
        let event: HostProviderEvent = super::fields::from_value(event, "invalid provider event")?;
        self.sender.send(event).map_err(|_| {
            ApiError::new(
                super::ApiErrorKind::InvalidArgument,
                "the provider call is over (answered, aborted or dropped); the event was ignored",
            )
        })
    }
}

/// What a host provider streams while a call runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum HostProviderEvent {
    /// A piece of answer text.
    TextDelta {
        /// The text.
        text: String,
    },
    /// A piece of thinking text.
    ThinkingDelta {
        /// The text.
        text: String,
    },
    /// One complete tool call.
    ToolCall(HostToolCall),
    /// Token usage so far (replaces earlier usage).
    Usage(Usage),
    /// A failed attempt the host retries itself after `delay_ms` (reported to the engine's
    /// listeners like an HTTP provider's retry); what was streamed before it is discarded, as
    /// the next attempt streams again.
    Retry {
        /// The attempt that failed (1-based).
        attempt: u32,
        /// The most attempts that will be made.
        max_attempts: u32,
        /// How long the host waits before the next attempt, in milliseconds.
        #[serde(default)]
        delay_ms: u64,
        /// Why the attempt failed.
        error: HostProviderError,
    },
}

/// A tool call from a host provider.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostToolCall {
    /// The call's id (unique within the conversation).
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments as JSON (default `{}`); ignored when `arguments` is given.
    #[serde(default)]
    pub input: Option<Value>,
    /// The arguments as raw JSON text.
    #[serde(default)]
    pub arguments: Option<String>,
}

/// The final answer of a host provider call; every field is optional.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HostProviderAnswer {
    /// Why the model stopped (default: `tool_use` when there are tool calls, else `end_turn`).
    pub stop_reason: Option<StopReason>,
    /// Token usage (default: the last streamed usage, else zeros).
    pub usage: Option<Usage>,
    /// The model that answered (default: the provider's model).
    pub model: Option<String>,
    /// More answer text, appended after the streamed text (and reported as one delta).
    pub text: Option<String>,
    /// More tool calls, after the streamed ones.
    pub tool_calls: Vec<HostToolCall>,
    /// The call failed: `{kind, message}` with a provider error kind (`rate_limit`, `network`,
    /// `provider`, …).
    pub error: Option<HostProviderError>,
}

/// A failure a host provider reports.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostProviderError {
    /// The failure class (default `provider`).
    #[serde(default = "default_error_kind")]
    pub kind: ProviderErrorKind,
    /// What failed.
    pub message: String,
}

fn default_error_kind() -> ProviderErrorKind {
    ProviderErrorKind::Provider
}

// ---- tools ----

/// The description of a host tool: `{name, description, input_schema, read_only?,
/// replaces_builtin?, mutates_files?}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostToolSpec {
    /// The name the model calls: 1–64 letters, digits, `_` or `-` (what the Anthropic and
    /// OpenAI APIs accept).
    pub name: String,
    /// What it does, for the model.
    #[serde(default)]
    pub description: String,
    /// JSON Schema of its input: an object schema (default: any object).
    #[serde(default = "default_schema")]
    pub input_schema: Value,
    /// Changes nothing (needs no approval, may run concurrently).
    #[serde(default)]
    pub read_only: bool,
    /// Takes the place of the built-in tool of the same name (without it, a host tool named
    /// like a built-in is refused when the session is created).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub replaces_builtin: bool,
    /// The input fields that hold paths of files a call creates, changes or deletes (e.g.
    /// `["path"]`): the session saves those files before the call runs, so the edit checkpoints
    /// can rewind the change. Changes a tool does not declare cannot be rewound.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mutates_files: Vec<String>,
}

pub(super) fn default_schema() -> Value {
    json!({"type": "object"})
}

impl HostToolSpec {
    /// Reads and checks a spec: a valid name (1–64 letters, digits, `_`, `-`) and an object
    /// schema (`"type": "object"`, `properties` an object, `required` a list of its names).
    pub fn from_json_value(value: Value) -> Result<Self, ApiError> {
        let label = match value.get("name").and_then(Value::as_str) {
            Some(name) => format!("invalid tool `{name}`"),
            None => "invalid tool".to_string(),
        };
        let spec: HostToolSpec = super::fields::from_value(value, &label)?;
        let name = &spec.name;
        if !is_valid_tool_name(name) {
            return Err(ApiError::invalid_argument(format!(
                "invalid tool name `{name}`: use 1-64 letters, digits, '_' or '-' (the model \
                 APIs accept no other names)"
            )));
        }
        check_input_schema(&spec.input_schema)
            .map_err(|problem| ApiError::invalid_argument(format!("{label}: {problem}")))?;
        Ok(spec)
    }
}

/// True for a name the model APIs accept for a tool: 1–64 letters, digits, `_` or `-`.
pub(super) fn is_valid_tool_name(name: &str) -> bool {
    !name.is_empty()
        && name.chars().count() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// What the model APIs require of a tool's input schema (a JSON Schema describing an object).
pub(super) fn check_input_schema(schema: &Value) -> Result<(), String> {
    let Value::Object(schema) = schema else {
        return Err(format!(
            "`input_schema` must be a JSON Schema object, not {}",
            super::fields::shorten(schema)
        ));
    };
    match schema.get("type") {
        None => {}
        Some(Value::String(kind)) if kind == "object" => {}
        Some(other) => {
            return Err(format!(
                "`input_schema` must describe an object (`\"type\": \"object\"`), not `type` {}",
                super::fields::shorten(other)
            ))
        }
    }
    let properties = match schema.get("properties") {
        None => None,
        Some(Value::Object(properties)) => Some(properties),
        Some(other) => {
            return Err(format!(
                "`input_schema.properties` must be an object mapping names to schemas, not {}",
                super::fields::shorten(other)
            ))
        }
    };
    if let Some((name, property)) = properties
        .into_iter()
        .flatten()
        .find(|(_, property)| !property.is_object() && !property.is_boolean())
    {
        return Err(format!(
            "`input_schema.properties.{name}` must be a schema (an object), not {}",
            super::fields::shorten(property)
        ));
    }
    match schema.get("required") {
        None => Ok(()),
        Some(Value::Array(required)) => {
            for entry in required {
                let Some(field) = entry.as_str() else {
                    return Err(format!(
                        "`input_schema.required` must list property names, not {}",
                        super::fields::shorten(entry)
                    ));
                };
                if properties.is_some_and(|p| !p.contains_key(field)) {
                    return Err(format!(
                        "`input_schema.required` names `{field}`, which is not in \
                         `input_schema.properties`"
                    ));
                }
            }
            Ok(())
        }
        Some(other) => Err(format!(
            "`input_schema.required` must be a list of property names, not {}",
            super::fields::shorten(other)
        )),
    }
}

/// A [`Tool`] answered by the host.
pub struct HostTool {
    spec: HostToolSpec,
    function: Arc<dyn HostFunction>,
}

impl HostTool {
    /// A tool described by `spec`, run by `function`.
    pub fn new(spec: HostToolSpec, function: Arc<dyn HostFunction>) -> Self {
        HostTool { spec, function }
    }
}

/// The content of a host tool call aborted before the host answered.
pub const ABORTED_TOOL_CONTENT: &str = "aborted";

/// Turns a host tool's answer into the tool output; every binding's tools answer the same way:
///
/// - a string (or `null`, the empty string): the result text;
/// - a result object, `{"content", "is_error"?, "response"?}` (`isError` is accepted too, and
///   `content` may be a list of `{"type": "text", "text"}` blocks as MCP tools return): an
///   error result when `is_error` is true;
/// - any other JSON value (an object, a list, a number): its JSON text, with the value as the
///   structured `response` for hooks and hosts.
///
/// A rejection (`Err`, a tool that threw) is an error result with its message.
pub fn tool_output_from_answer(answer: Result<Value, String>) -> ToolOutput {
    match answer {
        Err(message) => ToolOutput::error(message),
        Ok(Value::Null) => ToolOutput::text(""),
        Ok(Value::String(text)) => ToolOutput::text(text),
        Ok(Value::Object(map)) if is_result_object(&map) => tool_result_object(map),
        Ok(value) => {
            let mut output = ToolOutput::text(value.to_string());
            output.response = value;
            output
        }
    }
}

/// The keys of a tool result object.
const TOOL_RESULT_KEYS: [&str; 4] = ["content", "is_error", "isError", "response"];

/// True when `map` is a result object rather than data: it has `content` and nothing but the
/// result keys.
fn is_result_object(map: &serde_json::Map<String, Value>) -> bool {
    map.contains_key("content") && map.keys().all(|k| TOOL_RESULT_KEYS.contains(&k.as_str()))
}

fn tool_result_object(map: serde_json::Map<String, Value>) -> ToolOutput {
    let flag = map.get("is_error").or_else(|| map.get("isError"));
    let is_error = match flag {
        None | Some(Value::Null) => false,
        Some(Value::Bool(flag)) => *flag,
        Some(other) => {
            return ToolOutput::error(format!(
                "the tool answered `is_error` {}; it must be true or false",
                super::fields::shorten(other)
            ))
        }
    };
    let content = match map.get("content") {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(blocks)) => {
            let mut texts = Vec::new();
            for block in blocks {
                match block.get("text").and_then(Value::as_str) {
                    Some(text) => texts.push(text),
                    None => {
                        return ToolOutput::error(format!(
                            "the tool answered a `content` block without text ({}); content is \
                             a string or a list of {{\"type\": \"text\", \"text\"}} blocks",
                            super::fields::shorten(block)
                        ))
                    }
                }
            }
            texts.join("\n")
        }
        Some(Value::Null) | None => String::new(),
        Some(other) => {
            return ToolOutput::error(format!(
                "the tool answered `content` {}; content is a string or a list of text blocks",
                super::fields::shorten(other)
            ))
        }
    };
    let mut output = if is_error {
        ToolOutput::error(content)
    } else {
        ToolOutput::text(content)
    };
    if let Some(response) = map.get("response").filter(|r| !r.is_null()) {
        output.response = response.clone();
    }
    output
}

#[async_trait]
impl Tool for HostTool {
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
    fn replaces_builtin(&self) -> bool {
        self.spec.replaces_builtin
    }
    fn mutated_paths(&self, input: &Value) -> Vec<String> {
        self.spec
            .mutates_files
            .iter()
            .filter_map(|field| input.get(field).and_then(Value::as_str))
            .map(str::to_string)
            .collect()
    }
    async fn execute(&self, input: Value, context: ToolContext) -> ToolOutput {
        let call = HostCall {
            request: json!({
                "tool": self.spec.name,
                "input": input,
                "tool_use_id": context.tool_use_id,
                "cwd": context.cwd,
            }),
            cancel: context.cancel.clone(),
            stream: None,
            context: None,
        };
        tokio::select! {
            biased;
            answer = self.function.call(call) => tool_output_from_answer(answer),
            () = context.cancel.cancelled() => ToolOutput::error(ABORTED_TOOL_CONTENT),
        }
    }
}

// ---- permissions ----

/// A [`PermissionHandler`] answered by the host.
pub struct HostPermissionHandler {
    function: Arc<dyn HostFunction>,
}

impl HostPermissionHandler {
    /// A handler run by `function`.
    pub fn new(function: Arc<dyn HostFunction>) -> Arc<Self> {
        Arc::new(HostPermissionHandler { function })
    }
}

/// Turns a permission handler's answer into the response (a rejection or a malformed answer
/// denies, saying why).
pub fn permission_response_from_answer(answer: Result<Value, String>) -> PermissionResponse {
    match answer {
        Err(message) => PermissionResponse::deny(message),
        Ok(value) => serde_json::from_value(value).unwrap_or_else(|e| {
            PermissionResponse::deny(format!(
                "the host's permission answer was invalid ({e}); the call was denied"
            ))
        }),
    }
}

#[async_trait]
impl PermissionHandler for HostPermissionHandler {
    async fn request_permission(
        &self,
        request: PermissionRequest,
        cancel: CancellationToken,
    ) -> PermissionResponse {
        let request = match serde_json::to_value(&request) {
            Ok(request) => request,
            Err(e) => return PermissionResponse::deny(format!("cannot encode the request: {e}")),
        };
        let answer = self
            .function
            .call(HostCall {
                request,
                cancel,
                stream: None,
                context: None,
            })
            .await;
        permission_response_from_answer(answer)
    }
}

// ---- hooks ----

/// Where a host hook runs: `{event, matcher?, timeout_ms?, name?, on_failure?}` (`event` as in
/// settings, e.g. `PreToolUse`; `matcher` in Claude Code syntax, default all; `name` labels the
/// hook in hook events and messages, default `host`; `on_failure` is `"block"` or `"allow"`, see
/// [`OnHookFailure`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostHookSpec {
    /// The event.
    pub event: HookEvent,
    /// The matcher (`""` or `*`: everything).
    #[serde(default)]
    pub matcher: String,
    /// The timeout in milliseconds (the event's default when absent).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// The hook's label in hook events and messages (default `host`).
    #[serde(default)]
    pub name: Option<String>,
    /// What the hook's failure does (throwing, timing out, answering something that is not a
    /// hook answer): `block` (the default on PreToolUse and PermissionRequest) or `allow`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_failure: Option<OnHookFailure>,
}

impl HostHookSpec {
    /// Reads and checks a spec: a known event, a positive timeout, an on-failure policy the
    /// event can honour. Messages name the hook (by `name` when given).
    pub fn from_json_value(value: Value) -> Result<Self, ApiError> {
        let label = match value.get("name").and_then(Value::as_str) {
            Some(name) => format!("hook `{name}`"),
            None => match value.get("event").and_then(Value::as_str) {
                Some(event) => format!("the {event} hook"),
                None => "a hook".to_string(),
            },
        };
        if let Some(event) = value.get("event").and_then(Value::as_str) {
            if event.parse::<HookEvent>().is_err() {
                return Err(ApiError::invalid_argument(format!(
                    "{label}: unknown hook event `{event}` (expected one of {})",
                    HookEvent::ALL
                        .iter()
                        .map(|e| e.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )));
            }
        }
        let spec: HostHookSpec = super::fields::from_value(value, &label)?;
        if spec.timeout_ms == Some(0) {
            return Err(ApiError::invalid_argument(format!(
                "{label}: the timeout must be positive"
            )));
        }
        OnHookFailure::resolve(spec.event, spec.on_failure)
            .map_err(|e| ApiError::invalid_argument(format!("{label}: {e}")))?;
        Ok(spec)
    }

    /// The registration for a session, calling `function`.
    pub fn registration(&self, function: Arc<dyn HostFunction>) -> HookCallbackRegistration {
        let mut registration = HookCallbackRegistration::new(
            self.event,
            self.matcher.clone(),
            Arc::new(HostHookCallback {
                name: self.name.clone().unwrap_or_else(|| "host".into()),
                function,
            }),
        );
        registration.timeout = self.timeout_ms.map(Duration::from_millis);
        registration.on_failure = self.on_failure;
        registration
    }
}

/// A [`HookCallback`] answered by the host.
pub struct HostHookCallback {
    name: String,
    function: Arc<dyn HostFunction>,
}

/// Turns a hook's answer into its result. The same answers are accepted from every language:
///
/// - nothing (`null`) or `true`: carry on;
/// - a string: plain text (context for UserPromptSubmit and SessionStart);
/// - Claude Code's hook JSON output, an object without `type`: `{"decision": "block",
///   "reason"}`, `{"hookSpecificOutput": {"permissionDecision": "deny", …}}`, `{"continue":
///   false}`, `{"systemMessage"}`, …;
/// - robota's tagged form `{"type": "continue" | "text" | "block" | "output" | "error", …}`.
///
/// Anything else — another JSON type, an unknown field (a typo such as `decison`), a
/// `decision` other than `block`/`approve` — is an error saying what was wrong, so that a
/// guarding hook's unreadable answer blocks (see [`OnHookFailure`]) instead of being taken for
/// "carry on".
pub fn hook_result_from_answer(answer: Result<Value, String>) -> HookCallbackResult {
    let error = |message: String| HookCallbackResult::Error { message };
    match answer {
        Err(message) => error(message),
        Ok(Value::Null | Value::Bool(true)) => HookCallbackResult::Continue,
        Ok(Value::String(text)) => HookCallbackResult::Text { text },
        Ok(value @ Value::Object(_)) if value.get("type").is_some() => {
            match serde_json::from_value::<HookCallbackResult>(value.clone()) {
                Ok(HookCallbackResult::Output { output }) => match check_hook_output(&output) {
                    Ok(()) => HookCallbackResult::Output { output },
                    Err(problem) => error(problem),
                },
                Ok(result) => result,
                Err(e) => error(format!(
                    "returned {} ({e}); a tagged answer is {{\"type\": \"continue\" | \"text\" | \
                     \"block\" | \"output\" | \"error\", …}}",
                    super::fields::shorten(&value)
                )),
            }
        }
        Ok(value @ Value::Object(_)) => match HookOutput::from_value(value.clone()) {
            Ok(output) => match check_hook_output(&output) {
                Ok(()) => HookCallbackResult::output(output),
                Err(problem) => error(problem),
            },
            Err(e) => error(format!(
                "returned {} that is not Claude Code hook JSON ({e})",
                super::fields::shorten(&value)
            )),
        },
        Ok(other) => error(format!(
            "returned {}; a hook returns nothing, a string, or Claude Code hook JSON such as \
             {{\"decision\": \"block\", \"reason\": \"…\"}}",
            super::fields::shorten(&other)
        )),
    }
}

/// The fields of Claude Code hook JSON, for "did you mean" messages.
const HOOK_OUTPUT_FIELDS: &str = "continue, stopReason, suppressOutput, systemMessage, decision, \
     reason, hookSpecificOutput";

/// Rejects what a host callback cannot have meant: unknown fields and unknown decisions. (A
/// command hook's unknown fields are only noted, as Claude Code does; a callback is code the
/// developer is writing now, so a typo should be an error they see.)
fn check_hook_output(output: &HookOutput) -> Result<(), String> {
    if let Some(key) = output.extra.keys().next() {
        return Err(format!(
            "returned an unknown field `{key}` (Claude Code hook JSON has {HOOK_OUTPUT_FIELDS})"
        ));
    }
    if let Some(decision) = output.decision.as_deref() {
        if decision != "block" && decision != "approve" {
            return Err(format!(
                "returned `decision: \"{decision}\"`; the decision is \"block\" (or, on \
                 PreToolUse, the deprecated \"approve\"); to allow a tool call use \
                 hookSpecificOutput.permissionDecision"
            ));
        }
    }
    if let Some(specific) = &output.hook_specific_output {
        if let Some(key) = specific.extra.keys().next() {
            return Err(format!(
                "returned an unknown hookSpecificOutput field `{key}`"
            ));
        }
    }
    Ok(())
}

#[async_trait]
impl HookCallback for HostHookCallback {
    fn name(&self) -> &str {
        &self.name
    }

    async fn call(&self, input: &HookInput) -> HookCallbackResult {
        let request = match serde_json::to_value(input) {
            Ok(request) => request,
            Err(e) => {
                return HookCallbackResult::Error {
                    message: format!("cannot encode the hook input: {e}"),
                }
            }
        };
        // Dropped on timeout or cancellation; the guard tells the host.
        let cancel = CancellationToken::new();
        let _guard = cancel.clone().drop_guard();
        let answer = self
            .function
            .call(HostCall {
                request,
                cancel,
                stream: None,
                context: None,
            })
            .await;
        hook_result_from_answer(answer)
    }
}

// ---- commands ----

/// A [`SystemCommand`] answered by the host.
pub struct HostCommand {
    descriptor: CommandDescriptor,
    function: Arc<dyn HostFunction>,
}

impl HostCommand {
    /// A command described by `descriptor` (a [`CommandDescriptor`] as JSON: `name`,
    /// `description`, optional `aliases`, `argument_hint`, `model_invocable`,
    /// `user_invocable`, `lifecycle`, `subcommands`), run by `function`.
    pub fn from_json_value(
        descriptor: Value,
        function: Arc<dyn HostFunction>,
    ) -> Result<Self, ApiError> {
        let label = match descriptor.get("name").and_then(Value::as_str) {
            Some(name) => format!("invalid command `{name}`"),
            None => "invalid command".to_string(),
        };
        let descriptor: CommandDescriptor = super::fields::from_value(descriptor, &label)?;
        if descriptor.name.trim().is_empty() || descriptor.name.starts_with('/') {
            return Err(ApiError::invalid_argument(format!(
                "invalid command name `{}`: use a non-empty name without a leading slash",
                descriptor.name
            )));
        }
        Ok(HostCommand {
            descriptor,
            function,
        })
    }

    /// The module holding the host's commands (`host`, source builtin: composed by the host
    /// product).
    pub fn module(commands: Vec<Arc<dyn SystemCommand>>) -> CommandModule {
        let mut module = CommandModule::new("host", CommandSource::Builtin);
        module.commands = commands;
        module
    }
}

/// Turns a command's answer into its result (`success` defaults to `true`; a string is a
/// successful message).
pub fn command_result_from_answer(answer: Result<Value, String>) -> CommandResult {
    match answer {
        Err(message) => CommandResult::error(message),
        Ok(Value::String(message)) => CommandResult::ok(message),
        Ok(Value::Object(mut map)) => {
            map.entry("success").or_insert(Value::Bool(true));
            map.entry("message").or_insert(Value::String(String::new()));
            serde_json::from_value(Value::Object(map)).unwrap_or_else(|e| {
                CommandResult::error(format!("the host command answered an invalid result: {e}"))
            })
        }
        Ok(other) => CommandResult::error(format!(
            "the host command answered {other}; expected {{\"message\": ..., \"success\": ...}}"
        )),
    }
}

#[async_trait]
impl SystemCommand for HostCommand {
    fn descriptor(&self) -> &CommandDescriptor {
        &self.descriptor
    }

    async fn execute(&self, ctx: &dyn CommandHostContext, args: &str) -> CommandResult {
        let request = json!({
            "command": self.descriptor.name,
            "args": args,
            "session_id": ctx.session_id(),
            "session_name": ctx.session_name(),
            "permission_mode": ctx.permission_mode(),
            "model": ctx.model(),
            "context_state": ctx.context_state(),
        });
        let cancel = CancellationToken::new();
        let _guard = cancel.clone().drop_guard();
        // The host acts on the session through `context` while the call runs; the queue is
        // served until the answer arrives, then closed.
        let (context, queue) = super::command_context::open(&self.descriptor.name);
        let call = self.function.call(HostCall {
            request,
            cancel,
            stream: None,
            context: Some(context),
        });
        let answer = queue.serve(ctx, call).await;
        command_result_from_answer(answer)
    }
}

// ---- providers ----

/// What a host provider says about itself: `{name?, model?, context_window?, thinking?}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HostProviderInfo {
    /// The provider name (default `host`).
    pub name: String,
    /// The model (default `host`).
    pub model: String,
    /// The context window in tokens.
    pub context_window: u64,
    /// Whether it supports extended thinking.
    pub thinking: bool,
}

impl Default for HostProviderInfo {
    fn default() -> Self {
        HostProviderInfo {
            name: "host".into(),
            model: "host".into(),
            context_window: DEFAULT_CONTEXT_WINDOW,
            thinking: false,
        }
    }
}

impl HostProviderInfo {
    /// Reads the info (`null`: all defaults).
    pub fn from_json_value(value: Value) -> Result<Self, ApiError> {
        if value.is_null() {
            return Ok(HostProviderInfo::default());
        }
        super::fields::from_value(value, "invalid provider info")
    }
}

/// A [`Provider`] whose model calls the host answers.
pub struct HostProvider {
    info: HostProviderInfo,
    function: Arc<dyn HostFunction>,
}

impl HostProvider {
    /// A provider described by `info`, run by `function`.
    pub fn new(info: HostProviderInfo, function: Arc<dyn HostFunction>) -> Self {
        HostProvider { info, function }
    }

    fn error(&self, kind: ProviderErrorKind, message: impl Into<String>) -> ProviderError {
        ProviderError::new(kind, self.info.name.clone(), message)
    }
}

/// The response being assembled from streamed events.
#[derive(Default)]
struct Assembly {
    response: ProviderResponse,
    /// The provider's name, for retried errors.
    provider: String,
}

impl Assembly {
    fn apply(&mut self, event: HostProviderEvent, on_event: &StreamSink<'_>) {
        match event {
            HostProviderEvent::TextDelta { text } => {
                self.response.text.push_str(&text);
                on_event(StreamEvent::TextDelta(text));
            }
            HostProviderEvent::ThinkingDelta { text } => {
                match self.response.thinking.last_mut() {
                    Some(block) => block.thinking.push_str(&text),
                    None => self.response.thinking.push(crate::provider::ThinkingBlock {
                        thinking: text.clone(),
                        signature: None,
                    }),
                }
                on_event(StreamEvent::ThinkingDelta(text));
            }
            HostProviderEvent::ToolCall(call) => self.tool_call(call, on_event),
            HostProviderEvent::Usage(usage) => self.response.usage = usage,
            HostProviderEvent::Retry {
                attempt,
                max_attempts,
                delay_ms,
                error,
            } => {
                self.response = ProviderResponse::default();
                on_event(StreamEvent::Retry {
                    attempt,
                    max_attempts,
                    delay: Duration::from_millis(delay_ms),
                    error: ProviderError::new(error.kind, self.provider.clone(), error.message),
                });
            }
        }
    }

    fn tool_call(&mut self, call: HostToolCall, on_event: &StreamSink<'_>) {
        let arguments = call
            .arguments
            .unwrap_or_else(|| call.input.unwrap_or_else(|| json!({})).to_string());
        let index = self.response.tool_calls.len();
        on_event(StreamEvent::ToolCallStart {
            index,
            id: call.id.clone(),
            name: call.name.clone(),
        });
        on_event(StreamEvent::ToolCallDelta {
            index,
            partial_json: arguments.clone(),
        });
        self.response.tool_calls.push(ProviderToolCall {
            id: call.id,
            name: call.name,
            arguments,
        });
    }
}

#[async_trait]
impl Provider for HostProvider {
    fn name(&self) -> &str {
        &self.info.name
    }

    fn model(&self) -> &str {
        &self.info.model
    }

    fn capabilities(&self) -> ProviderCapabilities {
        ProviderCapabilities {
            streaming: true,
            tools: true,
            thinking: self.info.thinking,
            context_window: self.info.context_window,
            ..ProviderCapabilities::default()
        }
    }

    async fn stream(
        &self,
        request: &ProviderRequest,
        on_event: &StreamSink<'_>,
        cancel: &CancellationToken,
    ) -> Result<ProviderResponse, ProviderError> {
        let request = serde_json::to_value(request).map_err(|e| {
            self.error(
                ProviderErrorKind::InvalidRequest,
                format!("cannot encode: {e}"),
            )
        })?;
        let (sender, mut events) = mpsc::unbounded_channel();
        // The call's own token: fired on abort (child of `cancel`) and when this future is
        // dropped.
        let call_cancel = cancel.child_token();
        let _guard = call_cancel.clone().drop_guard();
        let call = self.function.call(HostCall {
            request,
            cancel: call_cancel,
            stream: Some(HostStream { sender }),
            context: None,
        });
        tokio::pin!(call);
        let mut assembly = Assembly {
            provider: self.info.name.clone(),
            ..Assembly::default()
        };
        let answer = loop {
            tokio::select! {
                biased;
                Some(event) = events.recv() => assembly.apply(event, on_event),
                answer = &mut call => break answer,
                () = cancel.cancelled() => {
                    while let Ok(event) = events.try_recv() {
                        assembly.apply(event, on_event);
                    }
                    let mut response = assembly.response;
                    response.stop_reason = StopReason::Aborted;
                    response.model = self.info.model.clone();
                    return Ok(response);
                }
            }
        };
        while let Ok(event) = events.try_recv() {
            assembly.apply(event, on_event);
        }
        let value = answer.map_err(|message| self.error(ProviderErrorKind::Provider, message))?;
        let answer: HostProviderAnswer = if value.is_null() {
            HostProviderAnswer::default()
        } else {
            serde_json::from_value(value).map_err(|e| {
                self.error(
                    ProviderErrorKind::Provider,
                    format!("the host provider answered an invalid result: {e}"),
                )
            })?
        };
        if let Some(error) = answer.error {
            return Err(self.error(error.kind, error.message));
        }
        if let Some(text) = answer.text.filter(|t| !t.is_empty()) {
            assembly.apply(HostProviderEvent::TextDelta { text }, on_event);
        }
        for call in answer.tool_calls {
            assembly.tool_call(call, on_event);
        }
        let mut response = assembly.response;
        if let Some(usage) = answer.usage {
            response.usage = usage;
        }
        response.model = answer.model.unwrap_or_else(|| self.info.model.clone());
        response.stop_reason = answer
            .stop_reason
            .unwrap_or(if response.tool_calls.is_empty() {
                StopReason::EndTurn
            } else {
                StopReason::ToolUse
            });
        Ok(response)
    }
}
