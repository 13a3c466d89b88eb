//! The OpenAI-compatible Chat Completions provider: request building, message conversion and the
//! streamed-chunk assembler for `POST {base}/chat/completions` with `stream: true`.
//!
//! One implementation serves OpenAI and the servers that copy its wire format (DeepSeek, Qwen,
//! Ollama, LM Studio, vLLM, …) through `base_url`. Transport concerns (retries, timeouts,
//! cancellation, HTTP error mapping) live in the shared HTTP transport (`provider/http.rs`,
//! configured by [`HttpOptions`]).

use std::collections::HashMap;
use std::fmt;

use async_trait::async_trait;
use reqwest::header::{HeaderMap, HeaderValue, ACCEPT, AUTHORIZATION, CONTENT_TYPE};
use serde::Deserialize;
use serde_json::{json, Map, Value};
use tokio_util::sync::CancellationToken;

use super::catalog;
use super::http::{
    classify_stream_error, error_body_from_value, malformed_event, Emitter, ErrorContext,
    HttpOptions, HttpTransport, Progress, StreamAssembler,
};
use super::openai_compat::{Flavor, Projected, TextCalls};
use super::sse::SseEvent;
use super::{
    Provider, ProviderCapabilities, ProviderRequest, ProviderResponse, ProviderToolCall, Refusal,
    StopReason, StreamEvent, StreamSink, ThinkingBlock, ToolChoice,
};
use crate::message::{ContentBlock, Message, ProviderError, ProviderErrorKind, Role, Usage};

/// Base URL used when neither the config nor `OPENAI_BASE_URL` names one (the official SDK's).
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// Settings for [`OpenAiProvider`].
#[derive(Clone, PartialEq)]
pub struct OpenAiConfig {
    /// API key sent as `Authorization: Bearer …`. Required for the default base URL; optional for
    /// a custom `base_url` (local servers such as Ollama or LM Studio need none).
    pub api_key: Option<String>,
    /// Base URL up to (not including) `/chat/completions`, e.g. `http://localhost:11434/v1`;
    /// [`DEFAULT_BASE_URL`] when `None`.
    pub base_url: Option<String>,
    /// Model id.
    pub model: String,
    /// Output token cap when the request sets none; when both are `None` the field is not sent
    /// and the server's default applies.
    pub max_tokens: Option<u32>,
    /// Timeouts, retries, size caps, extra headers.
    pub http: HttpOptions,
    /// The name the provider reports (`openai` by default; e.g. `deepseek`, `ollama`), shown in
    /// errors and events.
    pub name: String,
    /// Sends `stream_options: {include_usage: true}` so the server reports token usage (default
    /// true). Turn it off for servers that reject the field.
    pub include_usage: bool,
    /// Whether the server accepts `response_format: {"type": "json_schema", …}` (native
    /// structured output), sent when a prompt has an output schema. `None`: yes for the default
    /// base URL (OpenAI itself), no for other servers (many compatible servers reject the field);
    /// set it for a server that supports it (vLLM, Ollama, LM Studio, …).
    pub structured_outputs: Option<bool>,
    /// What the server does beyond OpenAI's format (DeepSeek's thinking controls, Qwen's web
    /// search, Gemma's tool calls written as text); [`Flavor::Generic`] by default. Settings
    /// profiles of type `deepseek`, `qwen` and `gemma` choose theirs.
    pub flavor: Flavor,
}

impl OpenAiConfig {
    /// A config for `model` with no key and every other setting at its default.
    pub fn new(model: impl Into<String>) -> Self {
        OpenAiConfig {
            api_key: None,
            base_url: None,
            model: model.into(),
            max_tokens: None,
            http: HttpOptions::default(),
            name: "openai".to_string(),
            include_usage: true,
            structured_outputs: None,
            flavor: Flavor::Generic,
        }
    }

    /// A config for `model` from `OPENAI_API_KEY` and `OPENAI_BASE_URL` (empty values count as
    /// unset).
    pub fn from_env(model: impl Into<String>) -> Self {
        Self::from_vars(model, |name| std::env::var(name).ok())
    }

    fn from_vars(model: impl Into<String>, var: impl Fn(&str) -> Option<String>) -> Self {
        let non_empty = |name: &str| var(name).filter(|v| !v.trim().is_empty());
        OpenAiConfig {
            api_key: non_empty("OPENAI_API_KEY"),
            base_url: non_empty("OPENAI_BASE_URL"),
            ..Self::new(model)
        }
    }
}

impl fmt::Debug for OpenAiConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never print the key.
        f.debug_struct("OpenAiConfig")
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("max_tokens", &self.max_tokens)
            .field("http", &self.http)
            .field("name", &self.name)
            .field("include_usage", &self.include_usage)
            .field("flavor", &self.flavor)
            .finish()
    }
}

/// A [`Provider`] for OpenAI-compatible Chat Completions (streaming).
pub struct OpenAiProvider {
    name: String,
    model: String,
    max_tokens: Option<u32>,
    include_usage: bool,
    structured_outputs: bool,
    flavor: Flavor,
    base_url: String,
    transport: HttpTransport,
}

impl fmt::Debug for OpenAiProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiProvider")
            .field("name", &self.name)
            .field("model", &self.model)
            .field("base_url", &self.base_url)
            .finish_non_exhaustive()
    }
}

impl OpenAiProvider {
    /// Builds the provider and its HTTP client.
    ///
    /// Fails with an [`ProviderErrorKind::Auth`] error when there is neither an API key nor a
    /// custom base URL, and with [`ProviderErrorKind::InvalidRequest`] for a malformed key or extra
    /// header.
    pub fn new(config: OpenAiConfig) -> Result<Self, ProviderError> {
        let endpoint = Endpoint::new(&config, "/chat/completions")?;
        Ok(OpenAiProvider {
            name: endpoint.name,
            model: config.model,
            max_tokens: config.max_tokens,
            include_usage: config.include_usage,
            structured_outputs: endpoint.structured_outputs,
            flavor: config.flavor,
            base_url: endpoint.base_url,
            transport: endpoint.transport,
        })
    }

    /// A provider for `model` configured from `OPENAI_API_KEY` / `OPENAI_BASE_URL`.
    pub fn from_env(model: impl Into<String>) -> Result<Self, ProviderError> {
        Self::new(OpenAiConfig::from_env(model))
    }

    /// The base URL requests go to.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// The network settings in force.
    pub fn http_options(&self) -> &HttpOptions {
        self.transport.options()
    }

    /// The JSON body sent for `request`.
    pub fn request_body(&self, request: &ProviderRequest) -> Value {
        let mut body = build_body(&self.model, self.max_tokens, self.include_usage, request);
        if let (true, Some(schema), Some(map)) = (
            self.structured_outputs,
            &request.output_schema,
            body.as_object_mut(),
        ) {
            // `strict` only when the schema meets OpenAI's strict subset; otherwise the server
            // would reject the request, and best-effort shaping plus our validation is better.
            map.insert(
                "response_format".into(),
                json!({
                    "type": "json_schema",
                    "json_schema": {
                        "name": schema.name,
                        "schema": schema.schema,
                        "strict": is_strict_compatible(&schema.schema),
                    },
                }),
            );
        }
        if let Some(map) = body.as_object_mut() {
            self.flavor.adjust_body(map, request);
        }
        body
    }
}

#[async_trait]
impl Provider for OpenAiProvider {
    fn name(&self) -> &str {
        &self.name
    }

    fn model(&self) -> &str {
        &self.model
    }

    fn with_model(&self, model: &str) -> Option<std::sync::Arc<dyn Provider>> {
        Some(std::sync::Arc::new(OpenAiProvider {
            name: self.name.clone(),
            model: model.to_string(),
            max_tokens: self.max_tokens,
            include_usage: self.include_usage,
            structured_outputs: self.structured_outputs,
            flavor: self.flavor.clone(),
            base_url: self.base_url.clone(),
            transport: self.transport.clone(),
        }))
    }

    fn capabilities(&self) -> ProviderCapabilities {
        ProviderCapabilities {
            streaming: true,
            tools: true,
            // Reasoning text is streamed when a server sends it; only the flavors with a
            // request-side switch (DeepSeek, Qwen) can turn thinking on.
            thinking: self.flavor.thinking(),
            context_window: catalog::context_window(&self.model),
            native_web_tools: self.flavor.chat_native_web_tools(),
        }
    }

    async fn stream(
        &self,
        request: &ProviderRequest,
        on_event: &StreamSink<'_>,
        cancel: &CancellationToken,
    ) -> Result<ProviderResponse, ProviderError> {
        let body = serde_json::to_vec(&self.request_body(request)).map_err(|e| {
            ProviderError::new(
                ProviderErrorKind::InvalidRequest,
                &self.name,
                format!("could not encode the request: {e}"),
            )
        })?;
        self.transport
            .stream(
                body.into(),
                || {
                    OpenAiAssembler::new(&self.name, &self.model).with_text_calls(
                        self.flavor.projects_text_calls() && !request.tools.is_empty(),
                    )
                },
                on_event,
                cancel,
            )
            .await
    }
}

/// What the OpenAI providers (Chat Completions and Responses) build alike from an
/// [`OpenAiConfig`]: the name they report, the base URL, whether native structured output is on,
/// and the HTTP transport for one endpoint path.
pub(crate) struct Endpoint {
    pub(crate) name: String,
    pub(crate) base_url: String,
    pub(crate) structured_outputs: bool,
    pub(crate) transport: HttpTransport,
}

impl Endpoint {
    /// Checks the key, builds the headers and the transport for `{base_url}{path}`.
    pub(crate) fn new(config: &OpenAiConfig, path: &str) -> Result<Self, ProviderError> {
        let name = if config.name.trim().is_empty() {
            "openai".to_string()
        } else {
            config.name.clone()
        };
        let api_key = config
            .api_key
            .as_deref()
            .map(str::trim)
            .filter(|key| !key.is_empty());
        let auth_hint = if name == "openai" {
            "Set OPENAI_API_KEY (or the provider's API key) to a valid key.".to_string()
        } else {
            format!("Give the {name} provider a valid API key.")
        };
        if api_key.is_none() && config.base_url.is_none() {
            return Err(ProviderError::new(
                ProviderErrorKind::Auth,
                &name,
                "no OpenAI API key: set OPENAI_API_KEY or give the provider an API key \
                 (a key is optional only with a custom base URL, e.g. a local server)",
            ));
        }
        let base_url = config
            .base_url
            .as_deref()
            .unwrap_or(DEFAULT_BASE_URL)
            .trim_end_matches('/')
            .to_string();
        let structured_outputs = config
            .structured_outputs
            .unwrap_or(base_url == DEFAULT_BASE_URL.trim_end_matches('/'));
        let mut headers = HeaderMap::new();
        if let Some(key) = api_key {
            let mut value = HeaderValue::from_str(&format!("Bearer {key}")).map_err(|_| {
                ProviderError::new(
                    ProviderErrorKind::InvalidRequest,
                    &name,
                    "the API key contains characters not allowed in an HTTP header",
                )
            })?;
            value.set_sensitive(true);
            headers.insert(AUTHORIZATION, value);
        }
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
        let transport = HttpTransport::new(
            format!("{base_url}{path}"),
            headers,
            config.http.clone(),
            ErrorContext {
                provider: name.clone(),
                base_url: base_url.clone(),
                auth_hint,
            },
        )?;
        Ok(Endpoint {
            name,
            base_url,
            structured_outputs,
            transport,
        })
    }
}

/// OpenAI's reasoning models reject `max_tokens` and take `max_completion_tokens` instead; other
/// compatible servers generally know only `max_tokens`.
fn uses_max_completion_tokens(model: &str) -> bool {
    ["o1", "o3", "o4", "gpt-5"]
        .iter()
        .any(|prefix| model.starts_with(prefix))
}

/// Whether `schema` meets OpenAI's strict structured-output subset: every object lists all its
/// properties as required and closes itself with `additionalProperties: false`.
pub(crate) fn is_strict_compatible(schema: &Value) -> bool {
    match schema {
        Value::Object(map) => {
            if let Some(Value::Object(properties)) = map.get("properties") {
                let required: Vec<&str> = map
                    .get("required")
                    .and_then(Value::as_array)
                    .map(|r| r.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                if map.get("additionalProperties") != Some(&Value::Bool(false))
                    || properties.keys().any(|k| !required.contains(&k.as_str()))
                {
                    return false;
                }
            }
            map.values().all(is_strict_compatible)
        }
        Value::Array(items) => items.iter().all(is_strict_compatible),
        _ => true,
    }
}

/// Builds the Chat Completions request body.
fn build_body(
    model: &str,
    configured_max_tokens: Option<u32>,
    include_usage: bool,
    request: &ProviderRequest,
) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), json!(model));
    body.insert(
        "messages".into(),
        Value::Array(convert_messages(
            request.system.as_deref(),
            &request.messages,
        )),
    );
    body.insert("stream".into(), json!(true));
    if include_usage {
        body.insert("stream_options".into(), json!({"include_usage": true}));
    }
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|tool| {
                json!({
                    "type": "function",
                    "function": {
                        "name": tool.name,
                        "description": tool.description,
                        "parameters": tool.input_schema,
                    },
                })
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
        if let Some(choice) = &request.tool_choice {
            let choice = match choice {
                ToolChoice::Auto => json!("auto"),
                ToolChoice::None => json!("none"),
                ToolChoice::Required => json!("required"),
                ToolChoice::Tool(name) => json!({"type": "function", "function": {"name": name}}),
            };
            body.insert("tool_choice".into(), choice);
        }
    }
    if let Some(max_tokens) = request.max_tokens.or(configured_max_tokens) {
        let field = if uses_max_completion_tokens(model) {
            "max_completion_tokens"
        } else {
            "max_tokens"
        };
        body.insert(field.into(), json!(max_tokens));
    }
    if let Some(temperature) = request.temperature {
        body.insert("temperature".into(), json!(temperature));
    }
    Value::Object(body)
}

/// Joins a message's text blocks (a chat message has one content string).
fn joined_text(content: &[ContentBlock]) -> String {
    let texts: Vec<&str> = content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text { text, .. } if !text.is_empty() => Some(text.as_str()),
            _ => None,
        })
        .collect();
    texts.join("\n\n")
}

fn tool_message(tool_call_id: &str, content: &str) -> Value {
    json!({"role": "tool", "tool_call_id": tool_call_id, "content": content})
}

/// Converts the conversation to chat messages, the system prompt first.
fn convert_messages<M: std::borrow::Borrow<Message>>(
    system: Option<&str>,
    messages: &[M],
) -> Vec<Value> {
    let mut wire = Vec::with_capacity(messages.len() + 1);
    if let Some(system) = system.filter(|s| !s.trim().is_empty()) {
        wire.push(json!({"role": "system", "content": system}));
    }
    for message in messages {
        let message: &Message = message.borrow();
        match message.role {
            Role::System => {
                let text = joined_text(&message.content);
                if !text.is_empty() {
                    wire.push(json!({"role": "system", "content": text}));
                }
            }
            Role::User | Role::Tool => {
                // Tool results are their own `tool` messages; this format has no result blocks.
                for block in &message.content {
                    if let ContentBlock::ToolResult {
                        tool_use_id,
                        content,
                        ..
                    } = block
                    {
                        wire.push(tool_message(tool_use_id, content));
                    }
                }
                let text = joined_text(&message.content);
                if !text.is_empty() {
                    wire.push(json!({"role": "user", "content": text}));
                }
            }
            Role::Assistant => {
                let text = joined_text(&message.content);
                let tool_calls: Vec<Value> = message
                    .tool_uses()
                    .map(|(id, name, input)| {
                        let arguments = match input {
                            // Invalid arguments are stored as the raw text; send them back as-is
                            // so the model sees what it actually wrote.
                            Value::String(raw) => raw.clone(),
                            other => other.to_string(),
                        };
                        json!({
                            "id": id,
                            "type": "function",
                            "function": {"name": name, "arguments": arguments},
                        })
                    })
                    .collect();
                // Thinking is not sent back: the format has no slot for it.
                if tool_calls.is_empty() {
                    if !text.is_empty() {
                        wire.push(json!({"role": "assistant", "content": text}));
                    }
                } else {
                    let content = if text.is_empty() {
                        Value::Null
                    } else {
                        Value::String(text)
                    };
                    wire.push(json!({
                        "role": "assistant",
                        "content": content,
                        "tool_calls": tool_calls,
                    }));
                }
            }
        }
    }
    wire
}

// ---- stream assembly --------------------------------------------------------------------------

#[derive(Deserialize)]
struct WireChunk {
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    choices: Option<Vec<WireChoice>>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct WireChoice {
    #[serde(default)]
    index: Option<u64>,
    #[serde(default)]
    delta: Option<WireDelta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct WireDelta {
    #[serde(default)]
    content: Option<WireContent>,
    /// The model's refusal message (OpenAI), streamed instead of `content`.
    #[serde(default)]
    refusal: Option<String>,
    /// DeepSeek's (and vLLM's) reasoning text.
    #[serde(default)]
    reasoning_content: Option<String>,
    /// OpenRouter's and Ollama's name for the same thing.
    #[serde(default)]
    reasoning: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<WireToolCall>>,
}

/// `delta.content`: a string, or (Mistral's reasoning models) a list of typed parts.
#[derive(Deserialize)]
#[serde(untagged)]
enum WireContent {
    Text(String),
    Parts(Vec<WirePart>),
}

/// One typed content part: `{"type": "text", "text": …}` or `{"type": "thinking", "thinking":
/// [{"type": "text", "text": …}]}` (the thinking may also be a plain string). Other part types
/// (images, references) carry no text to stream and are skipped.
#[derive(Deserialize)]
struct WirePart {
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    thinking: Option<WireThinking>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum WireThinking {
    Text(String),
    Parts(Vec<WirePart>),
}

impl WireThinking {
    fn text(self) -> String {
        match self {
            WireThinking::Text(text) => text,
            WireThinking::Parts(parts) => parts
                .into_iter()
                .filter(|p| p.kind == "text" || p.kind.is_empty())
                .filter_map(|p| p.text)
                .collect(),
        }
    }
}

impl WireContent {
    /// The answer text and the thinking text the content carries, in that order of streaming.
    fn split(self) -> (String, String) {
        match self {
            WireContent::Text(text) => (text, String::new()),
            WireContent::Parts(parts) => {
                let mut text = String::new();
                let mut thinking = String::new();
                for part in parts {
                    match part.kind.as_str() {
                        "text" => text.push_str(part.text.as_deref().unwrap_or("")),
                        "thinking" | "reasoning" => {
                            if let Some(t) = part.thinking {
                                thinking.push_str(&t.text());
                            } else if let Some(t) = part.text {
                                thinking.push_str(&t);
                            }
                        }
                        _ => {}
                    }
                }
                (text, thinking)
            }
        }
    }
}

#[derive(Deserialize)]
struct WireToolCall {
    #[serde(default)]
    index: Option<u64>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<WireFunction>,
}

#[derive(Deserialize)]
struct WireFunction {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
}

#[derive(Deserialize)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
    #[serde(default)]
    prompt_tokens_details: Option<WirePromptDetails>,
    /// DeepSeek reports cache hits here instead.
    #[serde(default)]
    prompt_cache_hit_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct WirePromptDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

struct CallState {
    wire_index: u64,
    id: Option<String>,
    name: String,
    arguments: String,
    /// Whether `ToolCallStart` has been emitted (it waits for the name).
    started: bool,
}

impl CallState {
    fn id(&self) -> String {
        self.id
            .clone()
            .unwrap_or_else(|| format!("call_{}", self.wire_index))
    }

    fn into_call(self) -> ProviderToolCall {
        let id = self.id();
        ProviderToolCall {
            id,
            name: self.name,
            arguments: if self.arguments.trim().is_empty() {
                "{}".to_string()
            } else {
                self.arguments
            },
        }
    }
}

/// Assembles one streamed Chat Completions response.
struct OpenAiAssembler {
    provider: String,
    model: String,
    text: String,
    reasoning: String,
    /// The refusal message, when the model refused (`delta.refusal`).
    refusal: String,
    /// Tool calls in order of first appearance.
    calls: Vec<CallState>,
    /// Wire `index` → position in `calls`.
    positions: HashMap<u64, usize>,
    finish_reason: Option<String>,
    usage: Usage,
    /// Projects tool calls the model writes as text (Gemma), when on.
    text_calls: Option<TextCalls>,
}

/// Wire indexes given to tool calls written as text, past any real ones.
const TEXT_CALL_INDEX: u64 = 1 << 32;

impl OpenAiAssembler {
    fn new(provider: &str, model: &str) -> Self {
        OpenAiAssembler {
            provider: provider.to_string(),
            model: model.to_string(),
            text: String::new(),
            reasoning: String::new(),
            refusal: String::new(),
            calls: Vec::new(),
            positions: HashMap::new(),
            finish_reason: None,
            usage: Usage::default(),
            text_calls: None,
        }
    }

    /// Turns on the projection of tool calls written as text.
    fn with_text_calls(mut self, on: bool) -> Self {
        if on {
            self.text_calls = Some(TextCalls::new());
        }
        self
    }

    fn on_text(&mut self, text: String, emitter: &mut Emitter<'_, '_>) {
        let pieces = match self.text_calls.as_mut() {
            Some(calls) => calls.push(&text),
            None => vec![Projected::Text(text)],
        };
        self.on_projected(pieces, emitter);
    }

    /// The end of the answer: text held back by the projection is resolved.
    fn flush_text_calls(&mut self, emitter: &mut Emitter<'_, '_>) {
        if let Some(mut calls) = self.text_calls.take() {
            let pieces = calls.finish();
            self.on_projected(pieces, emitter);
        }
    }

    fn on_projected(&mut self, pieces: Vec<Projected>, emitter: &mut Emitter<'_, '_>) {
        for piece in pieces {
            match piece {
                Projected::Text(text) if text.is_empty() => {}
                Projected::Text(text) => {
                    self.text.push_str(&text);
                    emitter.emit(StreamEvent::TextDelta(text));
                }
                Projected::Call { name, arguments } => {
                    let n = self.calls.len();
                    self.on_tool_call(
                        WireToolCall {
                            index: Some(TEXT_CALL_INDEX + n as u64),
                            id: Some(format!("call_text_{n}")),
                            function: Some(WireFunction {
                                name: Some(name),
                                arguments: Some(arguments),
                            }),
                        },
                        emitter,
                    );
                }
            }
        }
    }

    fn on_tool_call(&mut self, delta: WireToolCall, emitter: &mut Emitter<'_, '_>) {
        let id = delta.id.filter(|id| !id.is_empty());
        // Servers that omit `index` send each call whole, or continue the latest one.
        let wire_index = match delta.index {
            Some(index) => index,
            None => match (&id, self.calls.last()) {
                (Some(id), Some(last)) if last.id.as_ref() != Some(id) => self.calls.len() as u64,
                (_, Some(last)) => last.wire_index,
                (_, None) => 0,
            },
        };
        let position = match self.positions.get(&wire_index) {
            Some(&position) => position,
            None => {
                self.calls.push(CallState {
                    wire_index,
                    id: None,
                    name: String::new(),
                    arguments: String::new(),
                    started: false,
                });
                let position = self.calls.len() - 1;
                self.positions.insert(wire_index, position);
                position
            }
        };
        let Some(call) = self.calls.get_mut(position) else {
            return;
        };
        if id.is_some() {
            call.id = id;
        }
        let mut piece = String::new();
        if let Some(function) = delta.function {
            if let Some(name) = function.name.filter(|n| !n.is_empty()) {
                call.name = name;
            }
            if let Some(arguments) = function.arguments {
                call.arguments.push_str(&arguments);
                piece = arguments;
            }
        }
        if !call.started {
            if call.name.is_empty() {
                return; // announce the call once its name is known
            }
            call.started = true;
            emitter.emit(StreamEvent::ToolCallStart {
                index: position,
                id: call.id(),
                name: call.name.clone(),
            });
            // Arguments that arrived before the name go out in one piece.
            piece = call.arguments.clone();
        }
        if !piece.is_empty() {
            emitter.emit(StreamEvent::ToolCallDelta {
                index: position,
                partial_json: piece,
            });
        }
    }

    fn response(self, stop_reason: StopReason, complete_calls: usize) -> ProviderResponse {
        let thinking = if self.reasoning.is_empty() {
            Vec::new()
        } else {
            vec![ThinkingBlock {
                thinking: self.reasoning,
                signature: None,
            }]
        };
        let refusal = (stop_reason == StopReason::Refusal).then(|| Refusal {
            text: if self.refusal.is_empty() {
                self.text.clone()
            } else {
                self.refusal
            },
            category: None,
            explanation: None,
        });
        ProviderResponse {
            text: self.text,
            thinking,
            refusal,
            server_blocks: Vec::new(),
            tool_calls: self
                .calls
                .into_iter()
                .take(complete_calls)
                .map(CallState::into_call)
                .collect(),
            stop_reason,
            usage: self.usage,
            model: self.model,
            ..ProviderResponse::default()
        }
    }
}

impl StreamAssembler for OpenAiAssembler {
    const TERMINAL: &'static str = "data: [DONE]";

    fn on_event(
        &mut self,
        event: SseEvent,
        emitter: &mut Emitter<'_, '_>,
    ) -> Result<Progress, ProviderError> {
        let data = event.data.trim();
        if data.is_empty() {
            return Ok(Progress::Continue);
        }
        if data == "[DONE]" {
            self.flush_text_calls(emitter);
            return Ok(Progress::Done);
        }
        let chunk: WireChunk =
            serde_json::from_str(data).map_err(|e| malformed_event(&self.provider, data, &e))?;
        if let Some(error) = chunk.error.filter(|e| !e.is_null()) {
            let body = error_body_from_value(&json!({ "error": error }));
            return Err(classify_stream_error(&self.provider, &body));
        }
        if let Some(model) = chunk.model.filter(|m| !m.is_empty()) {
            self.model = model;
        }
        if let Some(usage) = chunk.usage {
            let cached = usage
                .prompt_tokens_details
                .and_then(|d| d.cached_tokens)
                .or(usage.prompt_cache_hit_tokens)
                .unwrap_or(0);
            self.usage = Usage {
                input_tokens: usage.prompt_tokens.saturating_sub(cached),
                output_tokens: usage.completion_tokens,
                cache_read_input_tokens: cached,
                cache_creation_input_tokens: 0,
            };
        }
        // Only the first choice is used (the request never asks for more).
        let choice = chunk
            .choices
            .unwrap_or_default()
            .into_iter()
            .find(|c| c.index.unwrap_or(0) == 0);
        if let Some(choice) = choice {
            if let Some(delta) = choice.delta {
                let (content, part_thinking) = delta.content.map(WireContent::split).unzip();
                for reasoning in [delta.reasoning_content, delta.reasoning, part_thinking]
                    .into_iter()
                    .flatten()
                    .filter(|r| !r.is_empty())
                {
                    self.reasoning.push_str(&reasoning);
                    emitter.emit(StreamEvent::ThinkingDelta(reasoning));
                }
                if let Some(text) = content.filter(|t| !t.is_empty()) {
                    self.on_text(text, emitter);
                }
                if let Some(refusal) = delta.refusal.filter(|r| !r.is_empty()) {
                    // The refusal is what the model says to the user: it streams as answer text
                    // too, and is kept apart so the outcome can say it was a refusal.
                    self.refusal.push_str(&refusal);
                    self.text.push_str(&refusal);
                    emitter.emit(StreamEvent::TextDelta(refusal));
                }
                for tool_call in delta.tool_calls.unwrap_or_default() {
                    self.on_tool_call(tool_call, emitter);
                }
            }
            if let Some(reason) = choice.finish_reason.filter(|r| !r.is_empty()) {
                self.finish_reason = Some(reason);
                self.flush_text_calls(emitter);
            }
        }
        Ok(Progress::Continue)
    }

    fn complete_without_terminal(&self) -> bool {
        // Some servers end the body after the finish-reason chunk without `data: [DONE]`; the
        // official SDKs accept that, and the answer is whole.
        self.finish_reason.is_some()
    }

    fn finish(self) -> ProviderResponse {
        let has_calls = !self.calls.is_empty();
        let stop_reason = match self.finish_reason.as_deref() {
            _ if !self.refusal.is_empty() => StopReason::Refusal,
            // Some servers say "stop" even when they return tool calls.
            Some("tool_calls") | Some("function_call") => StopReason::ToolUse,
            Some("stop") | None if has_calls => StopReason::ToolUse,
            Some("stop") | None => StopReason::EndTurn,
            Some("length") => StopReason::MaxTokens,
            Some("content_filter") => StopReason::Refusal,
            Some(_) => StopReason::Other,
        };
        let count = self.calls.len();
        self.response(stop_reason, count)
    }

    fn abort(mut self) -> ProviderResponse {
        // Text held back by the projection was said; a call it held is dropped like a cut one.
        if let Some(mut calls) = self.text_calls.take() {
            for piece in calls.finish() {
                if let Projected::Text(text) = piece {
                    self.text.push_str(&text);
                }
            }
        }
        // Calls stream one after another: once a later call (or the finish reason) has begun, the
        // earlier ones are whole. The last one may still be mid-arguments, so it is left out.
        let complete = if self.finish_reason.is_some() {
            self.calls.len()
        } else {
            self.calls.len().saturating_sub(1)
        };
        self.response(StopReason::Aborted, complete)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use crate::message::MessageState;
    use crate::provider::sse::SseDecoder;
    use crate::provider::ToolDefinition;

    fn request(messages: Vec<Message>) -> ProviderRequest {
        ProviderRequest {
            messages: messages.into_iter().map(Into::into).collect(),
            ..ProviderRequest::default()
        }
    }

    #[test]
    fn minimal_body() {
        let body = build_body("gpt-4o", None, true, &request(vec![Message::user("hi")]));
        assert_eq!(
            body,
            json!({
                "model": "gpt-4o",
                "messages": [{"role": "user", "content": "hi"}],
                "stream": true,
                "stream_options": {"include_usage": true},
            })
        );
        let body = build_body("gpt-4o", None, false, &request(vec![Message::user("hi")]));
        assert!(body.get("stream_options").is_none());
    }

    #[test]
    fn body_fields_system_tools_max_tokens_temperature() {
        let req = ProviderRequest {
            system: Some("be brief".into()),
            messages: vec![Message::user("hi").into()],
            tools: vec![ToolDefinition {
                name: "Read".into(),
                description: "reads".into(),
                input_schema: json!({"type": "object"}),
            }],
            max_tokens: None,
            temperature: Some(0.25),
            thinking: None,
            tool_choice: Some(ToolChoice::None),
            output_schema: None,
        };
        let body = build_body("gpt-4o", Some(123), true, &req);
        assert_eq!(
            body["messages"][0],
            json!({"role": "system", "content": "be brief"})
        );
        assert_eq!(
            body["messages"][1],
            json!({"role": "user", "content": "hi"})
        );
        assert_eq!(
            body["tools"],
            json!([{"type": "function", "function": {"name": "Read", "description": "reads", "parameters": {"type": "object"}}}])
        );
        assert_eq!(body["max_tokens"], 123);
        assert_eq!(body["temperature"], 0.25);
        assert_eq!(body["tool_choice"], "none");
        assert!(body.get("thinking").is_none());

        let req = ProviderRequest {
            max_tokens: Some(50),
            ..req
        };
        let body = build_body("o3-mini", Some(123), true, &req);
        assert_eq!(body["max_completion_tokens"], 50);
        assert!(body.get("max_tokens").is_none());
    }

    #[test]
    fn assistant_tool_calls_and_tool_results() {
        let messages = vec![
            Message::user("go"),
            Message::assistant(
                vec![
                    ContentBlock::Thinking {
                        thinking: "hmm".into(),
                        signature: None,
                    },
                    ContentBlock::ToolUse {
                        id: "call_1".into(),
                        name: "Read".into(),
                        input: json!({"file_path": "a"}),
                    },
                    ContentBlock::ToolUse {
                        id: "call_2".into(),
                        name: "Bash".into(),
                        input: json!("{broken"),
                    },
                ],
                MessageState::Complete,
            ),
            Message::tool_result("call_1", "contents", false),
            Message::tool_result("call_2", "bad args", true),
            Message::assistant(vec![ContentBlock::text("done")], MessageState::Complete),
        ];
        let wire = convert_messages(None, &messages);
        assert_eq!(
            wire,
            vec![
                json!({"role": "user", "content": "go"}),
                json!({"role": "assistant", "content": null, "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "Read", "arguments": "{\"file_path\":\"a\"}"}},
                    {"id": "call_2", "type": "function", "function": {"name": "Bash", "arguments": "{broken"}},
                ]}),
                json!({"role": "tool", "tool_call_id": "call_1", "content": "contents"}),
                json!({"role": "tool", "tool_call_id": "call_2", "content": "bad args"}),
                json!({"role": "assistant", "content": "done"}),
            ]
        );
    }

    #[test]
    fn assistant_text_with_tool_calls_keeps_text() {
        let wire = convert_messages(
            None,
            &[Message::assistant(
                vec![
                    ContentBlock::text("checking"),
                    ContentBlock::ToolUse {
                        id: "x".into(),
                        name: "A".into(),
                        input: json!({}),
                    },
                ],
                MessageState::Complete,
            )],
        );
        assert_eq!(wire[0]["content"], "checking");
        assert_eq!(wire[0]["tool_calls"][0]["function"]["arguments"], "{}");
    }

    #[test]
    fn empty_messages_are_skipped_and_system_messages_kept_in_place() {
        let wire = convert_messages(
            Some(""),
            &[
                Message::user(""),
                Message::system("note"),
                Message::assistant(vec![], MessageState::Interrupted),
                Message::user("hi"),
            ],
        );
        assert_eq!(
            wire,
            vec![
                json!({"role": "system", "content": "note"}),
                json!({"role": "user", "content": "hi"}),
            ]
        );
    }

    #[test]
    fn key_is_optional_only_with_a_base_url() {
        let error = OpenAiProvider::new(OpenAiConfig::new("m")).expect_err("no key");
        assert_eq!(error.kind, ProviderErrorKind::Auth);
        assert!(error.message.contains("OPENAI_API_KEY"));
        let local = OpenAiProvider::new(OpenAiConfig {
            base_url: Some("http://localhost:11434/v1/".into()),
            name: "ollama".into(),
            ..OpenAiConfig::new("llama3")
        })
        .expect("local server needs no key");
        assert_eq!(local.base_url(), "http://localhost:11434/v1");
        assert_eq!(local.name(), "ollama");
    }

    #[test]
    fn config_from_vars_and_debug_redaction() {
        let config = OpenAiConfig::from_vars("gpt-4o", |name| match name {
            "OPENAI_API_KEY" => Some("sk-secret".into()),
            _ => None,
        });
        assert_eq!(config.api_key.as_deref(), Some("sk-secret"));
        assert_eq!(config.name, "openai");
        assert!(config.include_usage);
        assert!(!format!("{config:?}").contains("sk-secret"));
        let provider = OpenAiProvider::new(config).expect("provider");
        assert_eq!(provider.base_url(), DEFAULT_BASE_URL);
        assert_eq!(provider.capabilities().context_window, 128_000);
        assert!(!format!("{provider:?}").contains("sk-secret"));
    }

    #[test]
    fn context_windows_come_from_the_catalog() {
        let window = |model: &str| {
            OpenAiProvider::new(OpenAiConfig {
                api_key: Some("k".into()),
                ..OpenAiConfig::new(model)
            })
            .map(|provider| provider.capabilities().context_window)
            .ok()
        };
        assert_eq!(window("gpt-4.1-mini"), Some(1_047_576));
        assert_eq!(window("deepseek-chat"), Some(128_000));
        assert_eq!(
            window("some-local-model"),
            Some(crate::provider::DEFAULT_CONTEXT_WINDOW)
        );
    }

    fn run(sse: &str) -> (Result<ProviderResponse, ProviderError>, Vec<StreamEvent>) {
        let events = Mutex::new(Vec::new());
        let sink = |event: StreamEvent| events.lock().expect("lock").push(event);
        let mut emitter = Emitter::new(&sink);
        let mut assembler = OpenAiAssembler::new("openai", "configured");
        let mut decoded = Vec::new();
        SseDecoder::new()
            .feed(sse.as_bytes(), &mut decoded)
            .expect("decode");
        let mut result = Err(ProviderError::new(
            ProviderErrorKind::Provider,
            "t",
            "no terminal",
        ));
        for event in decoded {
            match assembler.on_event(event, &mut emitter) {
                Ok(Progress::Continue) => {}
                Ok(Progress::Done) => {
                    result = Ok(assembler.finish());
                    break;
                }
                Err(error) => {
                    result = Err(error);
                    break;
                }
            }
        }
        (result, events.into_inner().expect("lock"))
    }

    fn sse(chunks: &[Value]) -> String {
        let mut out: String = chunks.iter().map(|c| format!("data: {c}\n\n")).collect();
        out.push_str("data: [DONE]\n\n");
        out
    }

    fn delta(delta: Value) -> Value {
        json!({"model": "gpt-real", "choices": [{"index": 0, "delta": delta, "finish_reason": null}]})
    }

    #[test]
    fn assembles_text_reasoning_tools_and_usage() {
        let stream = sse(&[
            delta(json!({"role": "assistant", "content": ""})),
            delta(json!({"reasoning_content": "think"})),
            delta(json!({"content": "Hel"})),
            delta(json!({"content": "lo"})),
            delta(
                json!({"tool_calls": [{"index": 0, "id": "call_a", "type": "function", "function": {"name": "Read", "arguments": ""}}]}),
            ),
            delta(
                json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"file_path\":"}}]}),
            ),
            delta(
                json!({"tool_calls": [{"index": 1, "id": "call_b", "function": {"name": "Glob", "arguments": "{}"}}]}),
            ),
            delta(json!({"tool_calls": [{"index": 0, "function": {"arguments": "\"a\"}"}}]})),
            delta(json!({"tool_calls": [{"index": 2, "function": {"name": "Ls"}}]})),
            json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
            json!({"choices": [], "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120, "prompt_tokens_details": {"cached_tokens": 30}}}),
        ]);
        let (result, events) = run(&stream);
        let response = result.expect("ok");
        assert_eq!(response.text, "Hello");
        assert_eq!(response.thinking[0].thinking, "think");
        assert_eq!(response.model, "gpt-real");
        assert_eq!(response.stop_reason, StopReason::ToolUse);
        assert_eq!(
            response.tool_calls,
            vec![
                ProviderToolCall {
                    id: "call_a".into(),
                    name: "Read".into(),
                    arguments: "{\"file_path\":\"a\"}".into()
                },
                ProviderToolCall {
                    id: "call_b".into(),
                    name: "Glob".into(),
                    arguments: "{}".into()
                },
                ProviderToolCall {
                    id: "call_2".into(),
                    name: "Ls".into(),
                    arguments: "{}".into()
                },
            ]
        );
        assert_eq!(
            response.usage,
            Usage {
                input_tokens: 70,
                output_tokens: 20,
                cache_read_input_tokens: 30,
                cache_creation_input_tokens: 0
            }
        );
        assert_eq!(
            events,
            vec![
                StreamEvent::ThinkingDelta("think".into()),
                StreamEvent::TextDelta("Hel".into()),
                StreamEvent::TextDelta("lo".into()),
                StreamEvent::ToolCallStart {
                    index: 0,
                    id: "call_a".into(),
                    name: "Read".into()
                },
                StreamEvent::ToolCallDelta {
                    index: 0,
                    partial_json: "{\"file_path\":".into()
                },
                StreamEvent::ToolCallStart {
                    index: 1,
                    id: "call_b".into(),
                    name: "Glob".into()
                },
                StreamEvent::ToolCallDelta {
                    index: 1,
                    partial_json: "{}".into()
                },
                StreamEvent::ToolCallDelta {
                    index: 0,
                    partial_json: "\"a\"}".into()
                },
                StreamEvent::ToolCallStart {
                    index: 2,
                    id: "call_2".into(),
                    name: "Ls".into()
                },
            ]
        );
    }

    #[test]
    fn arguments_before_name_are_emitted_after_start() {
        let stream = sse(&[
            delta(
                json!({"tool_calls": [{"index": 0, "id": "c", "function": {"arguments": "{\"a\""}}]}),
            ),
            delta(
                json!({"tool_calls": [{"index": 0, "function": {"name": "X", "arguments": ":1}"}}]}),
            ),
        ]);
        let (result, events) = run(&stream);
        assert_eq!(result.expect("ok").tool_calls[0].arguments, "{\"a\":1}");
        assert_eq!(
            events,
            vec![
                StreamEvent::ToolCallStart {
                    index: 0,
                    id: "c".into(),
                    name: "X".into()
                },
                StreamEvent::ToolCallDelta {
                    index: 0,
                    partial_json: "{\"a\":1}".into()
                },
            ]
        );
    }

    #[test]
    fn finish_reasons() {
        for (wire, expected) in [
            ("stop", StopReason::EndTurn),
            ("length", StopReason::MaxTokens),
            ("content_filter", StopReason::Refusal),
            ("tool_calls", StopReason::ToolUse),
            ("weird", StopReason::Other),
        ] {
            let stream =
                sse(&[json!({"choices": [{"index": 0, "delta": {}, "finish_reason": wire}]})]);
            assert_eq!(run(&stream).0.expect("ok").stop_reason, expected, "{wire}");
        }
        // "stop" with tool calls still means the model wants tools run.
        let stream = sse(&[
            delta(
                json!({"tool_calls": [{"index": 0, "id": "c", "function": {"name": "X", "arguments": "{}"}}]}),
            ),
            json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
        ]);
        assert_eq!(run(&stream).0.expect("ok").stop_reason, StopReason::ToolUse);
    }

    #[test]
    fn in_stream_error_is_typed() {
        let error =
            run("data: {\"error\":{\"message\":\"busy\",\"type\":\"overloaded_error\"}}\n\n")
                .0
                .expect_err("error");
        assert_eq!(error.kind, ProviderErrorKind::Overloaded);
        assert!(error.message.contains("busy"));
        let error = run(
            "data: {\"error\":{\"message\":\"too long\",\"code\":\"context_length_exceeded\"}}\n\n",
        )
        .0
        .expect_err("error");
        assert_eq!(error.kind, ProviderErrorKind::ContextLength);
    }

    #[test]
    fn malformed_chunk_is_a_provider_error() {
        let error = run("data: {\"choices\":[\n\n").0.expect_err("error");
        assert_eq!(error.kind, ProviderErrorKind::Provider);
        assert!(error.message.contains("malformed"));
    }

    #[test]
    fn deepseek_cache_hit_tokens() {
        let stream = sse(&[
            json!({"choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 2, "prompt_cache_hit_tokens": 4}}),
        ]);
        let usage = run(&stream).0.expect("ok").usage;
        assert_eq!(usage.input_tokens, 6);
        assert_eq!(usage.cache_read_input_tokens, 4);
    }

    #[test]
    fn abort_drops_the_call_still_streaming() {
        let sink = |_: StreamEvent| {};
        let mut emitter = Emitter::new(&sink);
        let mut assembler = OpenAiAssembler::new("openai", "m");
        let mut decoded = Vec::new();
        let stream = [
            delta(json!({"content": "part"})),
            delta(json!({"tool_calls": [{"index": 0, "id": "a", "function": {"name": "X", "arguments": "{}"}}]})),
            delta(json!({"tool_calls": [{"index": 1, "id": "b", "function": {"name": "Y", "arguments": "{\"q"}}]})),
        ]
        .iter()
        .map(|c| format!("data: {c}\n\n"))
        .collect::<String>();
        SseDecoder::new()
            .feed(stream.as_bytes(), &mut decoded)
            .expect("decode");
        for event in decoded {
            assembler.on_event(event, &mut emitter).expect("event");
        }
        let response = assembler.abort();
        assert_eq!(response.text, "part");
        assert_eq!(response.stop_reason, StopReason::Aborted);
        assert_eq!(response.tool_calls.len(), 1);
        assert_eq!(response.tool_calls[0].id, "a");
    }
}
