//! The Google Gemini API provider: request building, conversation conversion and the streamed
//! chunk assembler for `POST {base}/v1beta/models/{model}:streamGenerateContent?alt=sse`.
//!
//! The wire format is documented at <https://ai.google.dev/api/generate-content> (request and
//! `GenerateContentResponse` chunks), <https://ai.google.dev/gemini-api/docs/function-calling>
//! (`functionDeclarations`, `functionCall`/`functionResponse` parts, `toolConfig`),
//! <https://ai.google.dev/gemini-api/docs/thinking> (`thinkingConfig`, `thought` parts) and
//! <https://ai.google.dev/gemini-api/docs/thought-signatures>. Errors follow Google's
//! `{"error": {"code", "message", "status"}}` shape. Transport concerns (retries, timeouts,
//! cancellation, HTTP error mapping) live in the shared HTTP transport (`provider/http.rs`).
//!
//! # Thought signatures in the history
//!
//! Gemini puts an opaque `thoughtSignature` on some parts of its answer (a thought, a text part,
//! the first `functionCall` of a step) and wants each one back *on the part it came with* in the
//! next request (Gemini 3 refuses a function-call turn without it). The provider-neutral history
//! has no per-part metadata, so the signatures travel the way Anthropic's thinking signatures do:
//! in [`ThinkingBlock::signature`] (stored as `ContentBlock::Thinking::signature` in the assistant
//! message). Each Gemini signature becomes one thinking block whose signature is
//! `gemini:<part>:<signature>`, where `<part>` names the part it belongs to: `thought` (the
//! block's own thinking text), `text` (the message's text) or `call:<tool call id>`. Blocks for
//! text and call signatures have empty thinking text. When the history is sent back, each
//! signature is put on the part it names; thinking from other providers (whose signatures lack
//! the `gemini:` prefix) and unsigned thought summaries are not sent.

use std::fmt;

use async_trait::async_trait;
use reqwest::header::{HeaderMap, HeaderValue, ACCEPT, CONTENT_TYPE};
use serde::Deserialize;
use serde_json::{json, Map, Value};
use tokio_util::sync::CancellationToken;

use super::http::{
    malformed_event, truncate, Emitter, ErrorContext, HttpOptions, HttpTransport, Progress,
    StreamAssembler,
};
use super::sse::SseEvent;
use super::{
    Provider, ProviderCapabilities, ProviderRequest, ProviderResponse, ProviderToolCall, Refusal,
    StopReason, StreamEvent, StreamSink, ThinkingBlock, ToolChoice,
};
use crate::message::{ContentBlock, Message, ProviderError, ProviderErrorKind, Role, Usage};

/// Base URL used when neither the config nor `GOOGLE_GEMINI_BASE_URL` names one (the official
/// SDK's).
pub const DEFAULT_BASE_URL: &str = "https://generativelanguage.googleapis.com";

/// The model used when settings and the host name none.
pub const DEFAULT_MODEL: &str = "gemini-2.5-flash";

/// The API version path segment the official SDK uses for the Gemini Developer API.
const API_VERSION: &str = "v1beta";

/// Prefix of the tool-call ids this provider makes up for calls Gemini sent without an `id`
/// (such ids are never sent back to Gemini).
const SYNTHETIC_CALL_ID_PREFIX: &str = "gemini-call-";

/// Prefix of the thinking-block signatures that hold a Gemini `thoughtSignature` (module docs).
const SIGNATURE_PREFIX: &str = "gemini:";

/// The auth hint in errors: the variables the key is read from, in the order they are read.
const AUTH_HINT: &str =
    "Set GEMINI_API_KEY (or GOOGLE_API_KEY, or the provider's API key) to a valid Gemini API key.";

/// Settings for [`GeminiProvider`].
#[derive(Clone, PartialEq)]
pub struct GeminiConfig {
    /// API key sent as `x-goog-api-key`. Required for the default base URL; optional for a custom
    /// `base_url` (a gateway that authenticates by its own headers).
    pub api_key: Option<String>,
    /// Base URL up to (not including) `/v1beta`, e.g. `https://generativelanguage.googleapis.com`;
    /// [`DEFAULT_BASE_URL`] when `None`.
    pub base_url: Option<String>,
    /// Model id, e.g. `gemini-2.5-flash` (a `models/` prefix is accepted).
    pub model: String,
    /// Output token cap when the request sets none; when both are `None` the field is not sent
    /// and the model's default applies.
    pub max_tokens: Option<u32>,
    /// Timeouts, retries, size caps, extra headers.
    pub http: HttpOptions,
}

impl GeminiConfig {
    /// A config for `model` with no key and every other setting at its default.
    pub fn new(model: impl Into<String>) -> Self {
        GeminiConfig {
            api_key: None,
            base_url: None,
            model: model.into(),
            max_tokens: None,
            http: HttpOptions::default(),
        }
    }

    /// A config for `model` from the environment: the key from `GOOGLE_API_KEY`, else
    /// `GEMINI_API_KEY` (the official google-genai SDK's order: it prefers `GOOGLE_API_KEY` when
    /// both are set), the base URL from `GOOGLE_GEMINI_BASE_URL` (the SDK's variable). Empty
    /// values count as unset.
    pub fn from_env(model: impl Into<String>) -> Self {
        Self::from_vars(model, |name| std::env::var(name).ok())
    }

    fn from_vars(model: impl Into<String>, var: impl Fn(&str) -> Option<String>) -> Self {
        let non_empty = |name: &str| var(name).filter(|v| !v.trim().is_empty());
        GeminiConfig {
            api_key: non_empty("GOOGLE_API_KEY").or_else(|| non_empty("GEMINI_API_KEY")),
            base_url: non_empty("GOOGLE_GEMINI_BASE_URL"),
            ..Self::new(model)
        }
    }
}

impl fmt::Debug for GeminiConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never print the key.
        f.debug_struct("GeminiConfig")
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("max_tokens", &self.max_tokens)
            .field("http", &self.http)
            .finish()
    }
}

/// A [`Provider`] for the Gemini API (`streamGenerateContent`, server-sent events).
pub struct GeminiProvider {
    config: GeminiConfig,
    model: String,
    base_url: String,
    transport: HttpTransport,
}

impl fmt::Debug for GeminiProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GeminiProvider")
            .field("model", &self.model)
            .field("base_url", &self.base_url)
            .finish_non_exhaustive()
    }
}

impl GeminiProvider {
    /// Builds the provider and its HTTP client.
    ///
    /// Fails with a [`ProviderErrorKind::Auth`] error when there is neither an API key nor a
    /// custom base URL, and with [`ProviderErrorKind::InvalidRequest`] for a malformed key, model
    /// id or extra header.
    pub fn new(config: GeminiConfig) -> Result<Self, ProviderError> {
        let api_key = config
            .api_key
            .as_deref()
            .map(str::trim)
            .filter(|key| !key.is_empty());
        if api_key.is_none() && config.base_url.is_none() {
            return Err(ProviderError::new(
                ProviderErrorKind::Auth,
                "gemini",
                "no Gemini API key: set GEMINI_API_KEY or GOOGLE_API_KEY, or give the provider \
                 an API key (create one at https://aistudio.google.com/apikey)",
            ));
        }
        let model = model_id(&config.model)?;
        let base_url = config
            .base_url
            .as_deref()
            .unwrap_or(DEFAULT_BASE_URL)
            .trim_end_matches('/')
            .to_string();
        let mut headers = HeaderMap::new();
        if let Some(key) = api_key {
            let mut value = HeaderValue::from_str(key).map_err(|_| {
                ProviderError::new(
                    ProviderErrorKind::InvalidRequest,
                    "gemini",
                    "the API key contains characters not allowed in an HTTP header",
                )
            })?;
            value.set_sensitive(true);
            headers.insert("x-goog-api-key", value);
        }
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
        let transport = HttpTransport::new(
            format!("{base_url}/{API_VERSION}/models/{model}:streamGenerateContent?alt=sse"),
            headers,
            config.http.clone(),
            ErrorContext {
                provider: "gemini".to_string(),
                base_url: base_url.clone(),
                auth_hint: AUTH_HINT.to_string(),
            },
        )?;
        Ok(GeminiProvider {
            config,
            model,
            base_url,
            transport,
        })
    }

    /// A provider for `model` configured from the environment (see [`GeminiConfig::from_env`]).
    pub fn from_env(model: impl Into<String>) -> Result<Self, ProviderError> {
        Self::new(GeminiConfig::from_env(model))
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
        build_body(self.config.max_tokens, request)
    }
}

/// The model id as it goes into the URL path: a `models/` prefix is dropped, and characters that
/// would change the URL's meaning are refused.
fn model_id(model: &str) -> Result<String, ProviderError> {
    let id = model.trim();
    let id = id.strip_prefix("models/").unwrap_or(id);
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.');
    if id.is_empty() || !id.chars().all(allowed) {
        return Err(ProviderError::new(
            ProviderErrorKind::InvalidRequest,
            "gemini",
            format!(
                "invalid Gemini model id {model:?}: use a model name such as \"{DEFAULT_MODEL}\" \
                 (letters, digits, '-', '_' and '.')"
            ),
        ));
    }
    Ok(id.to_string())
}

#[async_trait]
impl Provider for GeminiProvider {
    fn name(&self) -> &str {
        "gemini"
    }

    fn model(&self) -> &str {
        &self.model
    }

    fn with_model(&self, model: &str) -> Option<std::sync::Arc<dyn Provider>> {
        // The model is part of the URL, so the switched provider gets its own transport.
        let config = GeminiConfig {
            model: model.to_string(),
            ..self.config.clone()
        };
        GeminiProvider::new(config)
            .ok()
            .map(|provider| std::sync::Arc::new(provider) as std::sync::Arc<dyn Provider>)
    }

    fn capabilities(&self) -> ProviderCapabilities {
        ProviderCapabilities {
            streaming: true,
            tools: true,
            thinking: true,
            context_window: context_window(&self.model),
            ..ProviderCapabilities::default()
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
                "gemini",
                format!("could not encode the request: {e}"),
            )
        })?;
        self.transport
            .stream(
                body.into(),
                || GeminiAssembler::new(&self.model),
                on_event,
                cancel,
            )
            .await
    }
}

/// The model's context window.
fn context_window(model: &str) -> u64 {
    super::catalog::context_window(model)
}

// ---- request ----------------------------------------------------------------------------------

/// Builds the `generateContent` request body.
fn build_body(configured_max_tokens: Option<u32>, request: &ProviderRequest) -> Value {
    let mut body = Map::new();
    let (system, contents) = convert_messages(request.system.as_deref(), &request.messages);
    if !system.is_empty() {
        let parts: Vec<Value> = system
            .into_iter()
            .map(|text| json!({"text": text}))
            .collect();
        body.insert("systemInstruction".into(), json!({"parts": parts}));
    }
    body.insert("contents".into(), Value::Array(contents));
    if !request.tools.is_empty() {
        // `parametersJsonSchema` takes a full JSON Schema (`parameters` takes only Google's
        // OpenAPI subset), so the tools' schemas go out unchanged.
        let declarations: Vec<Value> = request
            .tools
            .iter()
            .map(|tool| {
                json!({
                    "name": tool.name,
                    "description": tool.description,
                    "parametersJsonSchema": tool.input_schema,
                })
            })
            .collect();
        body.insert(
            "tools".into(),
            json!([{ "functionDeclarations": declarations }]),
        );
        if let Some(choice) = &request.tool_choice {
            let config = match choice {
                ToolChoice::Auto => json!({"mode": "AUTO"}),
                ToolChoice::None => json!({"mode": "NONE"}),
                ToolChoice::Required => json!({"mode": "ANY"}),
                ToolChoice::Tool(name) => json!({"mode": "ANY", "allowedFunctionNames": [name]}),
            };
            body.insert(
                "toolConfig".into(),
                json!({ "functionCallingConfig": config }),
            );
        }
    }
    let mut generation = Map::new();
    if let Some(max_tokens) = request.max_tokens.or(configured_max_tokens) {
        generation.insert("maxOutputTokens".into(), json!(max_tokens));
    }
    if let Some(temperature) = request.temperature {
        generation.insert("temperature".into(), json!(temperature));
    }
    if let Some(thinking) = request.thinking {
        generation.insert(
            "thinkingConfig".into(),
            json!({"thinkingBudget": thinking.budget_tokens, "includeThoughts": true}),
        );
    }
    if let Some(schema) = &request.output_schema {
        // `responseJsonSchema` takes a full JSON Schema, like `parametersJsonSchema`.
        generation.insert("responseMimeType".into(), json!("application/json"));
        generation.insert("responseJsonSchema".into(), schema.schema.clone());
    }
    if !generation.is_empty() {
        body.insert("generationConfig".into(), Value::Object(generation));
    }
    Value::Object(body)
}

/// Where a Gemini thought signature goes back (module docs).
#[derive(Debug, Clone, PartialEq)]
enum SignatureTarget {
    /// The thought part the thinking block holds.
    Thought,
    /// The message's text part.
    Text,
    /// The `functionCall` part of the tool call with this id.
    Call(String),
}

/// `gemini:<part>:<signature>` for a thinking block.
fn encode_signature(target: &SignatureTarget, signature: &str) -> String {
    match target {
        SignatureTarget::Thought => format!("{SIGNATURE_PREFIX}thought:{signature}"),
        SignatureTarget::Text => format!("{SIGNATURE_PREFIX}text:{signature}"),
        SignatureTarget::Call(id) => format!("{SIGNATURE_PREFIX}call:{id}:{signature}"),
    }
}

/// The target and signature of a thinking block's signature, when it holds a Gemini one.
fn decode_signature(stored: &str) -> Option<(SignatureTarget, &str)> {
    let rest = stored.strip_prefix(SIGNATURE_PREFIX)?;
    // Signatures are base64 (no ':'), call ids may hold anything: split at the last ':'.
    let (target, signature) = rest.rsplit_once(':')?;
    let target = match target {
        "thought" => SignatureTarget::Thought,
        "text" => SignatureTarget::Text,
        other => SignatureTarget::Call(other.strip_prefix("call:")?.to_string()),
    };
    Some((target, signature))
}

/// The text of a message's text blocks, joined.
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

/// Converts the conversation to the system instruction's texts and `contents` (roles `user` and
/// `model`). Consecutive messages of one role share a content: Gemini wants all the
/// `functionResponse` parts answering one turn's calls in the one content after it.
fn convert_messages<M: std::borrow::Borrow<Message>>(
    system: Option<&str>,
    messages: &[M],
) -> (Vec<String>, Vec<Value>) {
    let mut system_texts: Vec<String> = system
        .filter(|s| !s.trim().is_empty())
        .map(str::to_string)
        .into_iter()
        .collect();
    let mut contents: Vec<(&'static str, Vec<Value>)> = Vec::new();
    // Tool-call id → name: a `functionResponse` names the function it answers.
    let mut call_names: std::collections::HashMap<String, String> =
        std::collections::HashMap::new();
    for message in messages {
        let message: &Message = message.borrow();
        let (role, parts) = match message.role {
            Role::System => {
                // Gemini has one system slot; system messages of the history join it in order.
                let text = joined_text(&message.content);
                if !text.is_empty() {
                    system_texts.push(text);
                }
                continue;
            }
            Role::User | Role::Tool => ("user", user_parts(message, &call_names)),
            Role::Assistant => {
                for (id, name, _) in message.tool_uses() {
                    call_names.insert(id.to_string(), name.to_string());
                }
                ("model", model_parts(message))
            }
        };
        if parts.is_empty() {
            continue;
        }
        match contents.last_mut() {
            Some((last_role, last_parts)) if *last_role == role => last_parts.extend(parts),
            _ => contents.push((role, parts)),
        }
    }
    let contents = contents
        .into_iter()
        .map(|(role, parts)| json!({"role": role, "parts": parts}))
        .collect();
    (system_texts, contents)
}

/// A user (or tool) message's parts: tool results first as `functionResponse` parts, then text.
fn user_parts(
    message: &Message,
    call_names: &std::collections::HashMap<String, String>,
) -> Vec<Value> {
    let mut parts = Vec::new();
    for block in &message.content {
        if let ContentBlock::ToolResult {
            tool_use_id,
            content,
            is_error,
        } = block
        {
            // `response` is a JSON object; Google's convention is `output` for a result and
            // `error` for a failure.
            let response = if *is_error {
                json!({"error": content})
            } else {
                json!({"output": content})
            };
            let mut function_response = Map::new();
            if let Some(id) = wire_call_id(tool_use_id) {
                function_response.insert("id".into(), json!(id));
            }
            let name = call_names.get(tool_use_id).map_or("", String::as_str);
            function_response.insert("name".into(), json!(name));
            function_response.insert("response".into(), response);
            parts.push(json!({ "functionResponse": function_response }));
        }
    }
    let text = joined_text(&message.content);
    if !text.is_empty() {
        parts.push(json!({"text": text}));
    }
    parts
}

/// The id Gemini gave a call, or `None` for an id this provider made up.
fn wire_call_id(id: &str) -> Option<&str> {
    (!id.is_empty() && !id.starts_with(SYNTHETIC_CALL_ID_PREFIX)).then_some(id)
}

/// A model message's parts: signed thoughts, the text, then the function calls, each with the
/// thought signature Gemini sent on it.
fn model_parts(message: &Message) -> Vec<Value> {
    let mut parts = Vec::new();
    let mut text_signature = None;
    let mut call_signatures: Vec<(String, &str)> = Vec::new();
    for block in &message.content {
        let ContentBlock::Thinking {
            thinking,
            signature: Some(stored),
        } = block
        else {
            continue;
        };
        match decode_signature(stored) {
            Some((SignatureTarget::Thought, signature)) => parts.push(json!({
                "text": thinking,
                "thought": true,
                "thoughtSignature": signature,
            })),
            Some((SignatureTarget::Text, signature)) => text_signature = Some(signature),
            Some((SignatureTarget::Call(id), signature)) => call_signatures.push((id, signature)),
            // Another provider's signature means nothing to Gemini.
            None => {}
        }
    }
    let text = joined_text(&message.content);
    if !text.is_empty() || text_signature.is_some() {
        let mut part = json!({ "text": text });
        if let (Some(signature), Some(map)) = (text_signature, part.as_object_mut()) {
            map.insert("thoughtSignature".into(), json!(signature));
        }
        parts.push(part);
    }
    for (id, name, input) in message.tool_uses() {
        let args = if input.is_object() {
            input.clone()
        } else {
            // Invalid arguments are kept in the transcript as a string; `args` must be an object.
            Value::Object(Map::new())
        };
        let mut call = Map::new();
        if let Some(id) = wire_call_id(id) {
            call.insert("id".into(), json!(id));
        }
        call.insert("name".into(), json!(name));
        call.insert("args".into(), args);
        let mut part = Map::new();
        part.insert("functionCall".into(), Value::Object(call));
        if let Some((_, signature)) = call_signatures.iter().find(|(call_id, _)| call_id == id) {
            part.insert("thoughtSignature".into(), json!(signature));
        }
        parts.push(Value::Object(part));
    }
    parts
}

// ---- stream assembly --------------------------------------------------------------------------

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireChunk {
    #[serde(default)]
    candidates: Option<Vec<WireCandidate>>,
    #[serde(default)]
    usage_metadata: Option<WireUsage>,
    #[serde(default)]
    model_version: Option<String>,
    #[serde(default)]
    prompt_feedback: Option<WirePromptFeedback>,
    #[serde(default)]
    error: Option<WireError>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireCandidate {
    #[serde(default)]
    index: Option<u64>,
    #[serde(default)]
    content: Option<WireContent>,
    #[serde(default)]
    finish_reason: Option<String>,
    #[serde(default)]
    finish_message: Option<String>,
}

#[derive(Deserialize)]
struct WireContent {
    #[serde(default)]
    parts: Option<Vec<WirePart>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WirePart {
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    thought: Option<bool>,
    #[serde(default)]
    thought_signature: Option<String>,
    #[serde(default)]
    function_call: Option<WireFunctionCall>,
}

#[derive(Deserialize)]
struct WireFunctionCall {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    args: Option<Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireUsage {
    /// Includes the cached tokens.
    #[serde(default)]
    prompt_token_count: u64,
    #[serde(default)]
    cached_content_token_count: u64,
    #[serde(default)]
    candidates_token_count: u64,
    #[serde(default)]
    thoughts_token_count: u64,
    /// The results of tools Gemini ran itself (search, code execution), read as input.
    #[serde(default)]
    tool_use_prompt_token_count: u64,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WirePromptFeedback {
    #[serde(default)]
    block_reason: Option<String>,
}

#[derive(Deserialize)]
struct WireError {
    #[serde(default)]
    code: Option<Value>,
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    status: Option<String>,
}

/// Assembles one streamed `streamGenerateContent` response.
struct GeminiAssembler {
    model: String,
    text: String,
    thinking: Vec<ThinkingBlock>,
    /// Whether the last thinking block is still receiving thought text (no signature yet).
    thought_open: bool,
    calls: Vec<ProviderToolCall>,
    finish_reason: Option<String>,
    finish_message: Option<String>,
    /// The prompt was blocked (`promptFeedback.blockReason`): no candidate will come.
    blocked: Option<String>,
    usage: Usage,
}

impl GeminiAssembler {
    fn new(model: &str) -> Self {
        GeminiAssembler {
            model: model.to_string(),
            text: String::new(),
            thinking: Vec::new(),
            thought_open: false,
            calls: Vec::new(),
            finish_reason: None,
            finish_message: None,
            blocked: None,
            usage: Usage::default(),
        }
    }

    fn on_part(&mut self, part: WirePart, emitter: &mut Emitter<'_, '_>) {
        let signature = part.thought_signature.filter(|s| !s.is_empty());
        if let Some(call) = part.function_call {
            self.thought_open = false;
            let index = self.calls.len();
            let id = call.id.filter(|id| !id.is_empty()).unwrap_or_else(|| {
                format!("{SYNTHETIC_CALL_ID_PREFIX}{}", crate::message::new_id())
            });
            let name = call.name.unwrap_or_default();
            let arguments = match call.args {
                Some(Value::Null) | None => "{}".to_string(),
                Some(args) => args.to_string(),
            };
            emitter.emit(StreamEvent::ToolCallStart {
                index,
                id: id.clone(),
                name: name.clone(),
            });
            emitter.emit(StreamEvent::ToolCallDelta {
                index,
                partial_json: arguments.clone(),
            });
            if let Some(signature) = signature {
                self.push_signature(&SignatureTarget::Call(id.clone()), &signature);
            }
            self.calls.push(ProviderToolCall {
                id,
                name,
                arguments,
            });
            return;
        }
        let text = part.text.unwrap_or_default();
        if part.thought == Some(true) {
            if !text.is_empty() {
                match self.thinking.last_mut() {
                    Some(block) if self.thought_open => block.thinking.push_str(&text),
                    _ => self.thinking.push(ThinkingBlock {
                        thinking: text.clone(),
                        signature: None,
                    }),
                }
                self.thought_open = true;
                emitter.emit(StreamEvent::ThinkingDelta(text));
            }
            if let Some(signature) = signature {
                match self.thinking.last_mut() {
                    Some(block) if self.thought_open => {
                        block.signature =
                            Some(encode_signature(&SignatureTarget::Thought, &signature));
                    }
                    _ => self.thinking.push(ThinkingBlock {
                        thinking: String::new(),
                        signature: Some(encode_signature(&SignatureTarget::Thought, &signature)),
                    }),
                }
                // A signed thought is whole; more thought text starts a new part.
                self.thought_open = false;
            }
            return;
        }
        self.thought_open = false;
        if !text.is_empty() {
            self.text.push_str(&text);
            emitter.emit(StreamEvent::TextDelta(text));
        }
        if let Some(signature) = signature {
            self.push_signature(&SignatureTarget::Text, &signature);
        }
    }

    /// Keeps a signature of a non-thought part as a thinking block with no text.
    fn push_signature(&mut self, target: &SignatureTarget, signature: &str) {
        self.thinking.push(ThinkingBlock {
            thinking: String::new(),
            signature: Some(encode_signature(target, signature)),
        });
    }

    fn response(self, stop_reason: StopReason) -> ProviderResponse {
        let refusal = (stop_reason == StopReason::Refusal).then(|| Refusal {
            text: self.text.clone(),
            category: self.blocked.clone().or_else(|| self.finish_reason.clone()),
            explanation: self.finish_message.clone(),
        });
        ProviderResponse {
            text: self.text,
            thinking: self.thinking,
            tool_calls: self.calls,
            stop_reason,
            usage: self.usage,
            model: self.model,
            refusal,
            ..ProviderResponse::default()
        }
    }
}

/// A typed error from an error object inside the stream (Google's `status` names).
fn stream_error(error: WireError) -> ProviderError {
    let status = error.status.unwrap_or_default();
    let code = match &error.code {
        Some(Value::Number(n)) => n.to_string(),
        Some(Value::String(s)) => s.clone(),
        _ => String::new(),
    };
    let message = error.message.unwrap_or_else(|| "(no message)".to_string());
    let detail = match (status.as_str(), code.as_str()) {
        ("", "") => message,
        ("", code) => format!("{message} [{code}]"),
        (status, _) => format!("{message} [{status}]"),
    };
    let (kind, retryable) = match status.as_str() {
        "RESOURCE_EXHAUSTED" => (ProviderErrorKind::RateLimit, true),
        "UNAVAILABLE" | "INTERNAL" | "DEADLINE_EXCEEDED" => (ProviderErrorKind::Provider, true),
        "UNAUTHENTICATED" | "PERMISSION_DENIED" => (ProviderErrorKind::Auth, false),
        "INVALID_ARGUMENT" | "FAILED_PRECONDITION" | "NOT_FOUND" => {
            (ProviderErrorKind::InvalidRequest, false)
        }
        _ => (ProviderErrorKind::Provider, false),
    };
    let mut text = format!("gemini reported an error mid-stream: {detail}");
    if kind == ProviderErrorKind::Auth {
        text = format!("{text}. {AUTH_HINT}");
    }
    ProviderError::new(kind, "gemini", text).with_retryable(retryable)
}

impl StreamAssembler for GeminiAssembler {
    const TERMINAL: &'static str = "a chunk with finishReason";

    fn on_event(
        &mut self,
        event: SseEvent,
        emitter: &mut Emitter<'_, '_>,
    ) -> Result<Progress, ProviderError> {
        let data = event.data.trim();
        if data.is_empty() {
            return Ok(Progress::Continue);
        }
        let chunk: WireChunk =
            serde_json::from_str(data).map_err(|e| malformed_event("gemini", data, &e))?;
        if let Some(error) = chunk.error {
            return Err(stream_error(error));
        }
        if let Some(model) = chunk.model_version.filter(|m| !m.is_empty()) {
            self.model = model;
        }
        if let Some(usage) = chunk.usage_metadata {
            // Each chunk's usage is the running total; the last one counts.
            let cached = usage
                .cached_content_token_count
                .min(usage.prompt_token_count);
            self.usage = Usage {
                input_tokens: usage.prompt_token_count - cached + usage.tool_use_prompt_token_count,
                output_tokens: usage.candidates_token_count + usage.thoughts_token_count,
                cache_read_input_tokens: cached,
                cache_creation_input_tokens: 0,
            };
        }
        if let Some(reason) = chunk
            .prompt_feedback
            .and_then(|f| f.block_reason)
            .filter(|r| !r.is_empty())
        {
            self.blocked = Some(reason);
        }
        // Only the first candidate is used (the request never asks for more).
        let candidate = chunk
            .candidates
            .unwrap_or_default()
            .into_iter()
            .find(|c| c.index.unwrap_or(0) == 0);
        if let Some(candidate) = candidate {
            let parts = candidate.content.and_then(|c| c.parts).unwrap_or_default();
            for part in parts {
                self.on_part(part, emitter);
            }
            if let Some(reason) = candidate.finish_reason.filter(|r| !r.is_empty()) {
                self.finish_reason = Some(reason);
            }
            if let Some(message) = candidate.finish_message.filter(|m| !m.is_empty()) {
                self.finish_message = Some(truncate(&message, 2000));
            }
        }
        // The stream has no terminal event: the body ends after the chunk with the finish reason
        // (which usually carries the final usage too), so reading goes on to the end of the body.
        Ok(Progress::Continue)
    }

    fn complete_without_terminal(&self) -> bool {
        self.finish_reason.is_some() || self.blocked.is_some()
    }

    fn finish(self) -> ProviderResponse {
        let stop_reason = if self.blocked.is_some() {
            StopReason::Refusal
        } else {
            match self.finish_reason.as_deref() {
                // Gemini says STOP when it calls functions too.
                _ if !self.calls.is_empty() => StopReason::ToolUse,
                Some("STOP") | None => StopReason::EndTurn,
                Some("MAX_TOKENS") => StopReason::MaxTokens,
                Some(
                    "SAFETY"
                    | "RECITATION"
                    | "PROHIBITED_CONTENT"
                    | "BLOCKLIST"
                    | "SPII"
                    | "IMAGE_SAFETY"
                    | "IMAGE_PROHIBITED_CONTENT"
                    | "IMAGE_RECITATION",
                ) => StopReason::Refusal,
                Some(_) => StopReason::Other,
            }
        };
        self.response(stop_reason)
    }

    fn abort(self) -> ProviderResponse {
        // Function calls arrive whole, so every call seen so far is complete.
        self.response(StopReason::Aborted)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use crate::message::MessageState;
    use crate::provider::sse::SseDecoder;
    use crate::provider::{OutputSchema, ThinkingConfig, ToolDefinition};

    fn request(messages: Vec<Message>) -> ProviderRequest {
        ProviderRequest {
            messages: messages.into_iter().map(Into::into).collect(),
            ..ProviderRequest::default()
        }
    }

    #[test]
    fn minimal_body() {
        let body = build_body(None, &request(vec![Message::user("hi")]));
        assert_eq!(
            body,
            json!({"contents": [{"role": "user", "parts": [{"text": "hi"}]}]})
        );
    }

    #[test]
    fn body_fields_system_tools_choice_generation_config() {
        let req = ProviderRequest {
            system: Some("be brief".into()),
            messages: vec![
                Message::system("and kind").into(),
                Message::user("hi").into(),
            ],
            tools: vec![ToolDefinition {
                name: "Read".into(),
                description: "reads".into(),
                input_schema: json!({"type": "object", "additionalProperties": false}),
            }],
            max_tokens: None,
            temperature: Some(0.25),
            thinking: Some(ThinkingConfig {
                budget_tokens: 1024,
            }),
            tool_choice: Some(ToolChoice::Tool("Read".into())),
            output_schema: Some(OutputSchema {
                name: "answer".into(),
                schema: json!({"type": "object"}),
            }),
        };
        let body = build_body(Some(300), &req);
        assert_eq!(
            body["systemInstruction"],
            json!({"parts": [{"text": "be brief"}, {"text": "and kind"}]})
        );
        assert_eq!(
            body["contents"],
            json!([{"role": "user", "parts": [{"text": "hi"}]}])
        );
        assert_eq!(
            body["tools"],
            json!([{"functionDeclarations": [{
                "name": "Read",
                "description": "reads",
                "parametersJsonSchema": {"type": "object", "additionalProperties": false},
            }]}])
        );
        assert_eq!(
            body["toolConfig"],
            json!({"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["Read"]}})
        );
        assert_eq!(
            body["generationConfig"],
            json!({
                "maxOutputTokens": 300,
                "temperature": 0.25,
                "thinkingConfig": {"thinkingBudget": 1024, "includeThoughts": true},
                "responseMimeType": "application/json",
                "responseJsonSchema": {"type": "object"},
            })
        );
        for (choice, mode) in [
            (ToolChoice::Auto, "AUTO"),
            (ToolChoice::None, "NONE"),
            (ToolChoice::Required, "ANY"),
        ] {
            let body = build_body(
                None,
                &ProviderRequest {
                    tool_choice: Some(choice),
                    ..req.clone()
                },
            );
            assert_eq!(
                body["toolConfig"]["functionCallingConfig"],
                json!({"mode": mode})
            );
        }
    }

    #[test]
    fn signatures_round_trip_through_the_thinking_block_encoding() {
        for (target, signature) in [
            (SignatureTarget::Thought, "c2lnMQ=="),
            (SignatureTarget::Text, "c2ln"),
            (SignatureTarget::Call("a:b".into()), "c2lnMw=="),
        ] {
            let stored = encode_signature(&target, signature);
            assert!(stored.starts_with("gemini:"), "{stored}");
            assert_eq!(decode_signature(&stored), Some((target, signature)));
        }
        assert_eq!(decode_signature("EqQBCkgIARABGAIiQH"), None);
        assert_eq!(decode_signature("gemini:bogus:sig"), None);
    }

    #[test]
    fn tool_round_trip_history_with_signatures() {
        let assistant = Message::assistant(
            vec![
                ContentBlock::Thinking {
                    thinking: "plan".into(),
                    signature: Some(encode_signature(&SignatureTarget::Thought, "T")),
                },
                ContentBlock::Thinking {
                    thinking: "unsigned summary".into(),
                    signature: None,
                },
                ContentBlock::Thinking {
                    thinking: "from another provider".into(),
                    signature: Some("anthropic-sig".into()),
                },
                ContentBlock::Thinking {
                    thinking: String::new(),
                    signature: Some(encode_signature(&SignatureTarget::Call("fc_1".into()), "S")),
                },
                ContentBlock::text("Looking."),
                ContentBlock::ToolUse {
                    id: "fc_1".into(),
                    name: "Read".into(),
                    input: json!({"path": "a"}),
                },
                ContentBlock::ToolUse {
                    id: "gemini-call-x".into(),
                    name: "Glob".into(),
                    input: json!("not json"),
                },
            ],
            MessageState::Complete,
        );
        let messages = vec![
            Message::user("go"),
            assistant,
            Message::tool_result("fc_1", "contents", false),
            Message::tool_result("gemini-call-x", "no such file", true),
            Message::user("thanks"),
        ];
        let (_, contents) = convert_messages(None, &messages);
        assert_eq!(
            Value::Array(contents),
            json!([
                {"role": "user", "parts": [{"text": "go"}]},
                {"role": "model", "parts": [
                    {"text": "plan", "thought": true, "thoughtSignature": "T"},
                    {"text": "Looking."},
                    {"functionCall": {"id": "fc_1", "name": "Read", "args": {"path": "a"}},
                     "thoughtSignature": "S"},
                    {"functionCall": {"name": "Glob", "args": {}}},
                ]},
                {"role": "user", "parts": [
                    {"functionResponse": {"id": "fc_1", "name": "Read",
                                          "response": {"output": "contents"}}},
                    {"functionResponse": {"name": "Glob",
                                          "response": {"error": "no such file"}}},
                    {"text": "thanks"},
                ]},
            ])
        );
    }

    #[test]
    fn text_signature_goes_back_on_the_text_part() {
        let assistant = Message::assistant(
            vec![
                ContentBlock::Thinking {
                    thinking: String::new(),
                    signature: Some(encode_signature(&SignatureTarget::Text, "X")),
                },
                ContentBlock::text("Done."),
            ],
            MessageState::Complete,
        );
        let (_, contents) = convert_messages(None, &[assistant]);
        assert_eq!(
            contents[0]["parts"],
            json!([{"text": "Done.", "thoughtSignature": "X"}])
        );
    }

    #[test]
    fn config_from_vars_prefers_google_api_key_like_the_sdk() {
        let vars = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == name)
                    .map(|(_, v)| v.to_string())
            }
        };
        let both = GeminiConfig::from_vars(
            "m",
            vars(&[("GOOGLE_API_KEY", "g"), ("GEMINI_API_KEY", "k")]),
        );
        assert_eq!(both.api_key.as_deref(), Some("g"));
        let gemini = GeminiConfig::from_vars(
            "m",
            vars(&[
                ("GOOGLE_API_KEY", " "),
                ("GEMINI_API_KEY", "k"),
                ("GOOGLE_GEMINI_BASE_URL", "http://gw"),
            ]),
        );
        assert_eq!(gemini.api_key.as_deref(), Some("k"));
        assert_eq!(gemini.base_url.as_deref(), Some("http://gw"));
        assert!(!format!("{gemini:?}").contains("\"k\""));
    }

    #[test]
    fn key_is_required_for_the_default_endpoint_and_model_ids_are_checked() {
        let error = GeminiProvider::new(GeminiConfig::new("gemini-2.5-flash")).unwrap_err();
        assert_eq!(error.kind, ProviderErrorKind::Auth);
        assert!(
            error.message.contains("GEMINI_API_KEY"),
            "{}",
            error.message
        );
        let keyed = |model: &str| {
            GeminiProvider::new(GeminiConfig {
                api_key: Some("k".into()),
                ..GeminiConfig::new(model)
            })
        };
        assert_eq!(
            keyed("models/gemini-2.5-pro").expect("provider").model(),
            "gemini-2.5-pro"
        );
        let error = keyed("gemini?alt=json").unwrap_err();
        assert_eq!(error.kind, ProviderErrorKind::InvalidRequest);
        let provider = keyed("gemini-2.5-flash").expect("provider");
        let switched = provider.with_model("gemini-2.5-pro").expect("switch");
        assert_eq!(switched.model(), "gemini-2.5-pro");
        assert!(provider.with_model("bad/model").is_none());
    }

    fn run(sse: &str) -> (Result<ProviderResponse, ProviderError>, Vec<StreamEvent>) {
        let events = Mutex::new(Vec::new());
        let sink = |event: StreamEvent| events.lock().expect("lock").push(event);
        let mut emitter = Emitter::new(&sink);
        let mut assembler = GeminiAssembler::new("gemini-2.5-flash");
        let mut decoder = SseDecoder::new();
        let mut decoded = Vec::new();
        let result = decoder
            .feed(sse.as_bytes(), &mut decoded)
            .map_err(|e| ProviderError::new(ProviderErrorKind::Provider, "gemini", e.to_string()))
            .and_then(|()| {
                for event in decoded {
                    assembler.on_event(event, &mut emitter)?;
                }
                Ok(())
            });
        let result = result.and_then(|()| {
            if assembler.complete_without_terminal() {
                Ok(assembler.finish())
            } else {
                Err(ProviderError::new(
                    ProviderErrorKind::Provider,
                    "gemini",
                    "incomplete",
                ))
            }
        });
        (result, events.into_inner().expect("lock"))
    }

    fn sse(chunks: &[Value]) -> String {
        chunks
            .iter()
            .map(|c| format!("data: {c}\r\n\r\n"))
            .collect()
    }

    fn parts(parts: Value) -> Value {
        json!({"candidates": [{"content": {"role": "model", "parts": parts}, "index": 0}]})
    }

    #[test]
    fn assembles_thoughts_text_calls_signatures_and_usage() {
        let stream = sse(&[
            parts(json!([{"text": "Let me ", "thought": true}])),
            parts(json!([{"text": "think.", "thought": true}])),
            parts(json!([{"text": "Reading."}])),
            parts(json!([
                {"functionCall": {"name": "Read", "args": {"path": "a"}}, "thoughtSignature": "SIG1"},
                {"functionCall": {"id": "c2", "name": "Glob", "args": {}}},
            ])),
            json!({
                "candidates": [{"content": {"role": "model", "parts": [{"text": ""}]},
                                "finishReason": "STOP", "index": 0}],
                "usageMetadata": {"promptTokenCount": 100, "cachedContentTokenCount": 60,
                                  "candidatesTokenCount": 20, "thoughtsTokenCount": 7,
                                  "totalTokenCount": 127},
                "modelVersion": "gemini-2.5-flash-001",
            }),
        ]);
        let (result, events) = run(&stream);
        let response = result.expect("complete");
        assert_eq!(response.text, "Reading.");
        assert_eq!(response.stop_reason, StopReason::ToolUse);
        assert_eq!(response.model, "gemini-2.5-flash-001");
        assert_eq!(
            response.usage,
            Usage {
                input_tokens: 40,
                output_tokens: 27,
                cache_read_input_tokens: 60,
                cache_creation_input_tokens: 0,
            }
        );
        assert_eq!(response.tool_calls.len(), 2);
        let first = &response.tool_calls[0];
        assert!(
            first.id.starts_with(SYNTHETIC_CALL_ID_PREFIX),
            "{}",
            first.id
        );
        assert_eq!(first.arguments, r#"{"path":"a"}"#);
        assert_eq!(response.tool_calls[1].id, "c2");
        assert_eq!(
            response.thinking,
            vec![
                ThinkingBlock {
                    thinking: "Let me think.".into(),
                    signature: None,
                },
                ThinkingBlock {
                    thinking: String::new(),
                    signature: Some(encode_signature(
                        &SignatureTarget::Call(first.id.clone()),
                        "SIG1"
                    )),
                },
            ]
        );
        assert_eq!(
            &events[..3],
            &[
                StreamEvent::ThinkingDelta("Let me ".into()),
                StreamEvent::ThinkingDelta("think.".into()),
                StreamEvent::TextDelta("Reading.".into()),
            ]
        );
        assert_eq!(
            events[3],
            StreamEvent::ToolCallStart {
                index: 0,
                id: first.id.clone(),
                name: "Read".into()
            }
        );
    }

    #[test]
    fn finish_reasons_and_blocked_prompts() {
        let finished = |reason: &str| {
            let stream = sse(&[json!({"candidates": [{
                "content": {"parts": [{"text": "x"}]}, "finishReason": reason, "index": 0,
                "finishMessage": "why"}]})]);
            run(&stream).0.expect("complete")
        };
        assert_eq!(finished("STOP").stop_reason, StopReason::EndTurn);
        assert_eq!(finished("MAX_TOKENS").stop_reason, StopReason::MaxTokens);
        assert_eq!(
            finished("MALFORMED_FUNCTION_CALL").stop_reason,
            StopReason::Other
        );
        for reason in ["SAFETY", "RECITATION", "PROHIBITED_CONTENT"] {
            let response = finished(reason);
            assert_eq!(response.stop_reason, StopReason::Refusal, "{reason}");
            let refusal = response.refusal.expect("refusal");
            assert_eq!(refusal.category.as_deref(), Some(reason));
            assert_eq!(refusal.explanation.as_deref(), Some("why"));
        }
        let blocked = sse(&[json!({"promptFeedback": {"blockReason": "SAFETY"},
                                   "usageMetadata": {"promptTokenCount": 5}})]);
        let response = run(&blocked).0.expect("complete");
        assert_eq!(response.stop_reason, StopReason::Refusal);
        assert_eq!(response.usage.input_tokens, 5);
        // No finish reason and no block: the stream is not whole.
        assert!(run(&sse(&[parts(json!([{"text": "x"}]))])).0.is_err());
    }

    #[test]
    fn in_stream_errors_are_typed() {
        let of = |status: &str| {
            let stream = sse(&[json!({"error": {"code": 429, "message": "m", "status": status}})]);
            run(&stream).0.expect_err("error")
        };
        let rate = of("RESOURCE_EXHAUSTED");
        assert_eq!(rate.kind, ProviderErrorKind::RateLimit);
        assert!(rate.retryable);
        assert!(
            rate.message.contains("RESOURCE_EXHAUSTED"),
            "{}",
            rate.message
        );
        let unavailable = of("UNAVAILABLE");
        assert_eq!(unavailable.kind, ProviderErrorKind::Provider);
        assert!(unavailable.retryable);
        let auth = of("PERMISSION_DENIED");
        assert_eq!(auth.kind, ProviderErrorKind::Auth);
        assert!(auth.message.contains("GEMINI_API_KEY"));
        assert!(!of("INVALID_ARGUMENT").retryable);
    }

    #[test]
    fn malformed_chunk_is_a_provider_error() {
        let error = run("data: {\"candidates\": [\n\n").0.expect_err("error");
        assert_eq!(error.kind, ProviderErrorKind::Provider);
        assert!(error.message.contains("malformed"), "{}", error.message);
    }

    #[test]
    fn abort_keeps_whole_calls() {
        let events = Mutex::new(Vec::new());
        let sink = |event: StreamEvent| events.lock().expect("lock").push(event);
        let mut emitter = Emitter::new(&sink);
        let mut assembler = GeminiAssembler::new("m");
        let event = SseEvent {
            data: parts(json!([{"text": "a"}, {"functionCall": {"name": "Read", "args": {}}}]))
                .to_string(),
            ..SseEvent::default()
        };
        assembler.on_event(event, &mut emitter).expect("event");
        let response = assembler.abort();
        assert_eq!(response.stop_reason, StopReason::Aborted);
        assert_eq!(response.text, "a");
        assert_eq!(response.tool_calls.len(), 1);
    }
}
