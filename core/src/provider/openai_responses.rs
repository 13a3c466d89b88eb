//! The OpenAI Responses API provider: request building, conversion of the history to `input`
//! items, and the assembler for the semantic event stream of `POST {base}/responses` with
//! `stream: true`.
//!
//! The wire format is OpenAI's (API reference "Responses" → "Create a model response" and
//! "Streaming events"): each SSE event's JSON carries its `type` (`response.created`,
//! `response.output_item.added`, `response.output_text.delta`,
//! `response.function_call_arguments.delta`, `response.reasoning_summary_text.delta`,
//! `response.completed`, …); the stream ends with `response.completed`, `response.incomplete` or
//! `response.failed` and has no `data: [DONE]`.
//!
//! # Stateless reasoning
//!
//! robota keeps the conversation itself, so requests set `store: false` and never use
//! `previous_response_id`. A reasoning model's reasoning then survives between requests only if
//! the client sends its reasoning items back: the request asks for
//! `include: ["reasoning.encrypted_content"]`, and every reasoning item that arrives (its `id`,
//! `summary` and `encrypted_content`) is kept **verbatim as JSON in the
//! [`ThinkingBlock::signature`]** of the thinking block that shows its summary, the way the
//! Anthropic provider keeps thinking signatures. The engine stores that block in the assistant
//! message's `ContentBlock::Thinking { signature, .. }`; on the next request this provider turns
//! each such block back into a `{"type": "reasoning", …}` input item placed before the
//! assistant's text and `function_call` items, as the API requires. Thinking blocks whose
//! signature is not a reasoning item (another provider's) are not sent.
//!
//! # Hosted tools
//!
//! Output items of tools the API runs itself — `web_search_call` and DashScope's
//! `web_extractor_call` (a page fetch: its `goal` and the extracted `output`) — are reported,
//! once the item is done, as [`StreamEvent::ServerToolUse`] (name `web_search` /
//! `web_extractor`; input the item's `action` or its own fields without the results:
//! `{"query": …}`, `{"goal": …}`) and [`StreamEvent::ServerToolResult`] (the item type; an
//! error when its `status` is `failed`). They are kept verbatim in
//! [`ProviderResponse::server_blocks`] with their place among the answer's message items
//! ([`ProviderResponse::server_block_positions`], [`ProviderResponse::text_blocks`]), so the
//! history shows what was searched and fetched where the model did it. They are not sent back:
//! the answer written from them stays in the history as text, which is what the next turn needs,
//! while DashScope documents no such input items and an extracted page sent back would be paid
//! for again as input on every later turn. DashScope's per-tool call counts (`usage.x_tools`)
//! have no place in [`Usage`], which counts tokens; the calls themselves are the events above.
//!
//! # DashScope (Qwen)
//!
//! With [`Flavor::Qwen`] the provider speaks DashScope's OpenAI-compatible Responses API
//! (`provider/openai_compat.rs` says how it differs) at the Responses path of the configured
//! DashScope host, and declares the flavor's built-in web tools.
//!
//! Transport concerns (retries, timeouts, cancellation, HTTP error mapping) live in the shared
//! HTTP transport (`provider/http.rs`).

use std::collections::{BTreeMap, HashMap};
use std::fmt;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{json, Map, Value};
use tokio_util::sync::CancellationToken;

use super::http::{
    classify_stream_error, malformed_event, Emitter, ErrorBody, HttpOptions, HttpTransport,
    Progress, StreamAssembler,
};
use super::openai::{Endpoint, OpenAiConfig};
use super::openai_compat::{dashscope_responses_base, Flavor, DASHSCOPE_RESPONSES_BASE_URL};
use super::sse::SseEvent;
use super::{
    CitedText, NativeWebTool, NativeWebTools, Provider, ProviderCapabilities, ProviderRequest,
    ProviderResponse, ProviderToolCall, Refusal, StopReason, StreamEvent, StreamSink,
    ThinkingBlock, ThinkingConfig, ToolChoice,
};
use crate::message::{ContentBlock, Message, ProviderError, ProviderErrorKind, Role, Usage};

/// A [`Provider`] for the OpenAI Responses API (streaming), configured like the Chat Completions
/// provider by an [`OpenAiConfig`] (`include_usage` does not apply: the terminal event always
/// carries usage). A [`Flavor::Qwen`] config speaks DashScope's dialect of it (see the module
/// docs); other flavors change nothing here.
pub struct OpenAiResponsesProvider {
    name: String,
    model: String,
    max_tokens: Option<u32>,
    structured_outputs: bool,
    flavor: Flavor,
    base_url: String,
    transport: HttpTransport,
}

impl fmt::Debug for OpenAiResponsesProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiResponsesProvider")
            .field("name", &self.name)
            .field("model", &self.model)
            .field("base_url", &self.base_url)
            .finish_non_exhaustive()
    }
}

impl OpenAiResponsesProvider {
    /// Builds the provider and its HTTP client.
    ///
    /// Fails with a [`ProviderErrorKind::Auth`] error when there is neither an API key nor a
    /// custom base URL, and with [`ProviderErrorKind::InvalidRequest`] for a malformed key or
    /// extra header.
    ///
    /// With [`Flavor::Qwen`] the base URL is DashScope's Responses one: a DashScope Chat
    /// Completions base (`…/compatible-mode/v1`) is moved to the same host's Responses path
    /// (`…/api/v2/apps/protocols/compatible-mode/v1`), and none at all means Singapore's.
    pub fn new(mut config: OpenAiConfig) -> Result<Self, ProviderError> {
        if config.flavor.responses_dialect() {
            config.base_url = Some(match config.base_url.as_deref() {
                Some(base) => dashscope_responses_base(base),
                None => DASHSCOPE_RESPONSES_BASE_URL.to_string(),
            });
        }
        let endpoint = Endpoint::new(&config, "/responses")?;
        Ok(OpenAiResponsesProvider {
            name: endpoint.name,
            model: config.model,
            max_tokens: config.max_tokens,
            structured_outputs: endpoint.structured_outputs,
            flavor: config.flavor,
            base_url: endpoint.base_url,
            transport: endpoint.transport,
        })
    }

    /// The base URL requests go to (`{base_url}/responses`).
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// The network settings in force.
    pub fn http_options(&self) -> &HttpOptions {
        self.transport.options()
    }

    /// The JSON body sent for `request`.
    pub fn request_body(&self, request: &ProviderRequest) -> Value {
        let mut body = build_body(
            &self.model,
            self.max_tokens,
            self.structured_outputs,
            // DashScope issues no encrypted reasoning to send back.
            !self.flavor.responses_dialect(),
            request,
        );
        if let Some(map) = body.as_object_mut() {
            self.flavor.adjust_responses_body(map, request);
        }
        body
    }
}

#[async_trait]
impl Provider for OpenAiResponsesProvider {
    fn name(&self) -> &str {
        &self.name
    }

    fn model(&self) -> &str {
        &self.model
    }

    fn with_model(&self, model: &str) -> Option<std::sync::Arc<dyn Provider>> {
        Some(std::sync::Arc::new(OpenAiResponsesProvider {
            name: self.name.clone(),
            model: model.to_string(),
            max_tokens: self.max_tokens,
            structured_outputs: self.structured_outputs,
            flavor: self.flavor.clone(),
            base_url: self.base_url.clone(),
            transport: self.transport.clone(),
        }))
    }

    fn capabilities(&self) -> ProviderCapabilities {
        let native_web_tools = if self.flavor.responses_dialect() {
            let declared = self.flavor.web_tools();
            NativeWebTools {
                // The extractor is only declared with search (see `QwenWebTools`).
                web_search: NativeWebTool::supported(declared.any()),
                web_fetch: NativeWebTool::supported(declared.web_fetch),
            }
        } else {
            NativeWebTools::default()
        };
        ProviderCapabilities {
            streaming: true,
            tools: true,
            thinking: is_reasoning_model(&self.model) || self.flavor.thinking(),
            context_window: context_window(&self.model),
            native_web_tools,
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
                    let keep_reasoning_items = !self.flavor.responses_dialect();
                    ResponsesAssembler::new(&self.name, &self.model, keep_reasoning_items)
                },
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

/// OpenAI's reasoning models (o-series, gpt-5): they reason whether or not `reasoning` is sent,
/// reject `temperature`, and return reasoning items.
fn is_reasoning_model(model: &str) -> bool {
    let model = model.rsplit('/').next().unwrap_or(model);
    ["o1", "o3", "o4", "gpt-5", "codex-"]
        .iter()
        .any(|prefix| model.starts_with(prefix))
}

/// Maps a thinking budget to a Responses `reasoning.effort`: under 4 000 tokens `low`, under
/// 16 000 `medium`, otherwise `high`. (The API takes an effort level, not a token budget; these
/// bands put the usual Anthropic-style budgets — 1 024 minimum, 10 000 typical, 32 000 large —
/// on the three levels every reasoning model accepts.)
pub fn reasoning_effort(thinking: &ThinkingConfig) -> &'static str {
    match thinking.budget_tokens {
        0..=3_999 => "low",
        4_000..=15_999 => "medium",
        _ => "high",
    }
}

/// Builds the Responses request body.
fn build_body(
    model: &str,
    configured_max_tokens: Option<u32>,
    structured_outputs: bool,
    send_reasoning: bool,
    request: &ProviderRequest,
) -> Value {
    let reasoning_model = is_reasoning_model(model);
    let mut body = Map::new();
    body.insert("model".into(), json!(model));
    if let Some(system) = request.system.as_deref().filter(|s| !s.trim().is_empty()) {
        body.insert("instructions".into(), json!(system));
    }
    body.insert(
        "input".into(),
        Value::Array(convert_messages(&request.messages, send_reasoning)),
    );
    body.insert("stream".into(), json!(true));
    // robota keeps the history: nothing is stored server-side, and reasoning travels back
    // encrypted in the input instead (see the module docs).
    body.insert("store".into(), json!(false));
    if reasoning_model || request.thinking.is_some() {
        // Only reasoning models have reasoning to encrypt; other models reject the include.
        body.insert("include".into(), json!(["reasoning.encrypted_content"]));
    }
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|tool| {
                json!({
                    "type": "function",
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": tool.input_schema,
                })
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
        if let Some(choice) = &request.tool_choice {
            let choice = match choice {
                ToolChoice::Auto => json!("auto"),
                ToolChoice::None => json!("none"),
                ToolChoice::Required => json!("required"),
                ToolChoice::Tool(name) => json!({"type": "function", "name": name}),
            };
            body.insert("tool_choice".into(), choice);
        }
    }
    if let Some(max_tokens) = request.max_tokens.or(configured_max_tokens) {
        body.insert("max_output_tokens".into(), json!(max_tokens));
    }
    if let Some(temperature) = request.temperature {
        // Reasoning models reject `temperature` ("Unsupported parameter").
        if !reasoning_model {
            body.insert("temperature".into(), json!(temperature));
        }
    }
    if let Some(thinking) = &request.thinking {
        body.insert(
            "reasoning".into(),
            json!({"effort": reasoning_effort(thinking), "summary": "auto"}),
        );
    }
    if let (true, Some(schema)) = (structured_outputs, &request.output_schema) {
        body.insert(
            "text".into(),
            json!({"format": {
                "type": "json_schema",
                "name": schema.name,
                "schema": schema.schema,
                "strict": super::openai::is_strict_compatible(&schema.schema),
            }}),
        );
    }
    Value::Object(body)
}

/// Joins a message's text blocks.
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

/// The reasoning item a thinking block's signature holds, when it holds one (see the module
/// docs); `status` is dropped, as it is output-only.
fn reasoning_item(signature: &str) -> Option<Value> {
    let mut item: Map<String, Value> = serde_json::from_str(signature).ok()?;
    if item.get("type").and_then(Value::as_str) != Some("reasoning") {
        return None;
    }
    item.get("id").and_then(Value::as_str)?;
    item.remove("status");
    if !item.get("summary").is_some_and(Value::is_array) {
        // `summary` is required in an input reasoning item.
        item.insert("summary".into(), json!([]));
    }
    Some(Value::Object(item))
}

/// Converts the conversation to Responses `input` items; `send_reasoning: false` leaves the
/// reasoning items out (a server that issues none to send back). Hosted-tool items kept in an
/// assistant message's metadata are not sent (see the module docs).
fn convert_messages<M: std::borrow::Borrow<Message>>(
    messages: &[M],
    send_reasoning: bool,
) -> Vec<Value> {
    let mut wire = Vec::with_capacity(messages.len());
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
                for block in &message.content {
                    if let ContentBlock::ToolResult {
                        tool_use_id,
                        content,
                        ..
                    } = block
                    {
                        wire.push(json!({
                            "type": "function_call_output",
                            "call_id": tool_use_id,
                            "output": content,
                        }));
                    }
                }
                let text = joined_text(&message.content);
                if !text.is_empty() {
                    wire.push(json!({"role": "user", "content": text}));
                }
            }
            Role::Assistant => {
                // Reasoning first: a reasoning item must come right before the output it led to.
                for block in message.content.iter().filter(|_| send_reasoning) {
                    if let ContentBlock::Thinking {
                        signature: Some(signature),
                        ..
                    } = block
                    {
                        wire.extend(reasoning_item(signature));
                    }
                }
                let text = joined_text(&message.content);
                if !text.is_empty() {
                    wire.push(json!({"role": "assistant", "content": text}));
                }
                for (id, name, input) in message.tool_uses() {
                    let arguments = match input {
                        // Invalid arguments are stored as the raw text; send them back as-is.
                        Value::String(raw) => raw.clone(),
                        other => other.to_string(),
                    };
                    wire.push(json!({
                        "type": "function_call",
                        "call_id": id,
                        "name": name,
                        "arguments": arguments,
                    }));
                }
            }
        }
    }
    wire
}

// ---- stream assembly --------------------------------------------------------------------------

/// One streamed event: its `type` and the fields this provider reads.
#[derive(Deserialize)]
struct WireEvent {
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    output_index: Option<u64>,
    #[serde(default)]
    summary_index: Option<u64>,
    #[serde(default)]
    delta: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
    #[serde(default)]
    item: Option<Value>,
    #[serde(default)]
    response: Option<WireResponse>,
    /// `error` events carry `code` and `message` at the top level.
    #[serde(default)]
    code: Option<Value>,
    #[serde(default)]
    message: Option<String>,
}

#[derive(Deserialize, Default)]
struct WireResponse {
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    incomplete_details: Option<WireIncomplete>,
    #[serde(default)]
    error: Option<WireError>,
}

#[derive(Deserialize)]
struct WireIncomplete {
    #[serde(default)]
    reason: Option<String>,
}

#[derive(Deserialize)]
struct WireError {
    #[serde(default)]
    code: Option<Value>,
    #[serde(default)]
    message: Option<String>,
}

#[derive(Deserialize)]
struct WireUsage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
    #[serde(default)]
    input_tokens_details: Option<WireInputDetails>,
}

#[derive(Deserialize)]
struct WireInputDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

fn text_of(value: Option<&Value>) -> Option<String> {
    match value? {
        Value::String(s) => Some(s.clone()),
        Value::Null => None,
        other => Some(other.to_string()),
    }
}

fn str_field(item: &Value, key: &str) -> String {
    item.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

struct CallState {
    call_id: String,
    name: String,
    arguments: String,
    /// `.done` arrived for it: the arguments are whole.
    done: bool,
}

struct ReasoningState {
    /// The summary text shown as thinking.
    text: String,
    /// The summary part the last delta belonged to, to separate parts.
    last_part: Option<u64>,
    /// The whole item (with `encrypted_content`), from `response.output_item.done`.
    item: Option<Value>,
}

/// What sits at one `output_index`.
enum Slot {
    Reasoning(usize),
    Call(usize),
    Other,
}

/// The hosted-tool output items this provider reports, and the server tool each is a call of.
const HOSTED_ITEMS: [(&str, &str); 2] = [
    ("web_search_call", "web_search"),
    ("web_extractor_call", "web_extractor"),
];

/// What a hosted-tool item was asked to do, for [`StreamEvent::ServerToolUse`]: its `action`
/// (OpenAI's web search: `{"type": "search", "query": …}`) or else the item's own fields
/// (DashScope's extractor: `goal`, …), without the kind and the results (`sources`, `output`):
/// `{"query": …}`, `{"goal": …}`.
fn hosted_input(item: &Value) -> Value {
    let mut input = match item.get("action") {
        Some(Value::Object(action)) => action.clone(),
        _ => item.as_object().cloned().unwrap_or_default(),
    };
    for key in ["id", "type", "status", "output", "sources", "results"] {
        input.remove(key);
    }
    Value::Object(input)
}

/// Assembles one streamed Responses answer.
struct ResponsesAssembler {
    provider: String,
    model: String,
    text: String,
    refusal: String,
    reasoning: Vec<ReasoningState>,
    calls: Vec<CallState>,
    slots: HashMap<u64, Slot>,
    /// The answer text of each message item, by `output_index`: where hosted-tool items stand
    /// among it.
    message_texts: BTreeMap<u64, String>,
    /// Hosted-tool items, whole, with their `output_index`.
    hosted: Vec<(u64, Value)>,
    /// `response.incomplete`'s reason, once it arrived.
    incomplete: Option<String>,
    usage: Usage,
    /// Reasoning items are kept to be sent back (OpenAI); without it (DashScope, which issues
    /// none to send back) only their text is kept, and an item needs no id.
    keep_reasoning_items: bool,
}

impl ResponsesAssembler {
    fn new(provider: &str, model: &str, keep_reasoning_items: bool) -> Self {
        ResponsesAssembler {
            provider: provider.to_string(),
            model: model.to_string(),
            text: String::new(),
            refusal: String::new(),
            reasoning: Vec::new(),
            calls: Vec::new(),
            slots: HashMap::new(),
            message_texts: BTreeMap::new(),
            hosted: Vec::new(),
            incomplete: None,
            usage: Usage::default(),
            keep_reasoning_items,
        }
    }

    /// A piece of answer text from the message item at `output_index`.
    fn push_text(&mut self, output_index: u64, delta: &str) {
        self.text.push_str(delta);
        self.message_texts
            .entry(output_index)
            .or_default()
            .push_str(delta);
    }

    /// Reports a finished hosted-tool item and keeps it.
    fn on_hosted_done(
        &mut self,
        output_index: u64,
        item: Value,
        name: &str,
        emitter: &mut Emitter<'_, '_>,
    ) {
        let id = str_field(&item, "id");
        emitter.emit(StreamEvent::ServerToolUse {
            id: id.clone(),
            name: name.to_string(),
            input: hosted_input(&item),
        });
        emitter.emit(StreamEvent::ServerToolResult {
            tool_use_id: id,
            result_type: str_field(&item, "type"),
            is_error: item.get("status").and_then(Value::as_str) == Some("failed"),
        });
        self.hosted.push((output_index, item));
    }

    fn malformed(&self, what: &str) -> ProviderError {
        ProviderError::new(
            ProviderErrorKind::Provider,
            &self.provider,
            format!("{} sent a malformed stream event: {what}", self.provider),
        )
    }

    /// The reasoning state at `output_index`, created when a delta comes before its item.
    fn reasoning_at(&mut self, output_index: u64) -> Option<&mut ReasoningState> {
        let position = match self.slots.get(&output_index) {
            Some(Slot::Reasoning(position)) => *position,
            Some(_) => return None,
            None => {
                self.reasoning.push(ReasoningState {
                    text: String::new(),
                    last_part: None,
                    item: None,
                });
                let position = self.reasoning.len() - 1;
                self.slots.insert(output_index, Slot::Reasoning(position));
                position
            }
        };
        self.reasoning.get_mut(position)
    }

    fn call_at(&mut self, output_index: u64) -> Option<(usize, &mut CallState)> {
        match self.slots.get(&output_index) {
            Some(Slot::Call(position)) => {
                let position = *position;
                self.calls.get_mut(position).map(|call| (position, call))
            }
            _ => None,
        }
    }

    fn on_item_added(&mut self, output_index: u64, item: &Value, emitter: &mut Emitter<'_, '_>) {
        match item.get("type").and_then(Value::as_str) {
            Some("function_call") => {
                let call_id = match str_field(item, "call_id") {
                    id if id.is_empty() => str_field(item, "id"),
                    id => id,
                };
                let arguments = str_field(item, "arguments");
                let call = CallState {
                    call_id: call_id.clone(),
                    name: str_field(item, "name"),
                    arguments: arguments.clone(),
                    done: false,
                };
                emitter.emit(StreamEvent::ToolCallStart {
                    index: self.calls.len(),
                    id: call_id,
                    name: call.name.clone(),
                });
                if !arguments.is_empty() {
                    emitter.emit(StreamEvent::ToolCallDelta {
                        index: self.calls.len(),
                        partial_json: arguments,
                    });
                }
                self.calls.push(call);
                self.slots
                    .insert(output_index, Slot::Call(self.calls.len() - 1));
            }
            Some("reasoning") => {
                self.reasoning_at(output_index);
            }
            _ => {
                self.slots.entry(output_index).or_insert(Slot::Other);
            }
        }
    }

    fn on_item_done(
        &mut self,
        output_index: u64,
        item: Value,
        emitter: &mut Emitter<'_, '_>,
    ) -> Result<(), ProviderError> {
        match item.get("type").and_then(Value::as_str) {
            Some("function_call") => {
                if !self.slots.contains_key(&output_index) {
                    // The item arrived whole, without an `added` event.
                    self.on_item_added(output_index, &item, emitter);
                }
                let arguments = str_field(&item, "arguments");
                self.finish_call(output_index, Some(arguments), emitter);
            }
            Some("reasoning") => {
                let summary: Vec<String> = item
                    .get("summary")
                    .and_then(Value::as_array)
                    .map(|parts| {
                        parts
                            .iter()
                            .filter_map(|p| p.get("text").and_then(Value::as_str))
                            .map(str::to_string)
                            .collect()
                    })
                    .unwrap_or_default();
                let keep = self.keep_reasoning_items;
                if keep && item.get("id").and_then(Value::as_str).is_none() {
                    return Err(self.malformed("a reasoning item without an id"));
                }
                let Some(state) = self.reasoning_at(output_index) else {
                    return Ok(());
                };
                if state.text.is_empty() && !summary.is_empty() {
                    // The summary came whole, without deltas.
                    let text = summary.join("\n\n");
                    state.text.push_str(&text);
                    emitter.emit(StreamEvent::ThinkingDelta(text));
                }
                state.item = keep.then_some(item);
            }
            Some(kind) => {
                if let Some((_, name)) = HOSTED_ITEMS.iter().find(|(item, _)| *item == kind) {
                    self.on_hosted_done(output_index, item.clone(), name, emitter);
                }
            }
            None => {}
        }
        Ok(())
    }

    /// Marks the call at `output_index` whole; `arguments` (from a `.done` event) are the
    /// authoritative full text and fill in anything the deltas did not bring.
    fn finish_call(
        &mut self,
        output_index: u64,
        arguments: Option<String>,
        emitter: &mut Emitter<'_, '_>,
    ) {
        let Some((position, call)) = self.call_at(output_index) else {
            return;
        };
        if let Some(full) = arguments.filter(|a| !a.is_empty()) {
            if let Some(rest) = full.strip_prefix(call.arguments.as_str()) {
                if !rest.is_empty() {
                    emitter.emit(StreamEvent::ToolCallDelta {
                        index: position,
                        partial_json: rest.to_string(),
                    });
                }
            }
            call.arguments = full;
        }
        call.done = true;
    }

    fn on_terminal(&mut self, response: Option<WireResponse>) {
        let response = response.unwrap_or_default();
        if let Some(model) = response.model.filter(|m| !m.is_empty()) {
            self.model = model;
        }
        if let Some(usage) = response.usage {
            let cached = usage
                .input_tokens_details
                .and_then(|d| d.cached_tokens)
                .unwrap_or(0);
            // `input_tokens` counts the cached ones too; `output_tokens` includes reasoning.
            self.usage = Usage {
                input_tokens: usage.input_tokens.saturating_sub(cached),
                output_tokens: usage.output_tokens,
                cache_read_input_tokens: cached,
                cache_creation_input_tokens: 0,
            };
        }
        if let Some(details) = response.incomplete_details {
            self.incomplete = Some(details.reason.unwrap_or_default());
        }
    }

    fn response(self, stop_reason: StopReason, only_done_calls: bool) -> ProviderResponse {
        let thinking = self
            .reasoning
            .into_iter()
            .filter(|r| !r.text.is_empty() || r.item.is_some())
            .map(|r| ThinkingBlock {
                thinking: r.text,
                signature: r.item.map(|item| item.to_string()),
            })
            .collect();
        let refusal = (stop_reason == StopReason::Refusal).then(|| Refusal {
            text: if self.refusal.is_empty() {
                self.text.clone()
            } else {
                self.refusal
            },
            category: None,
            explanation: None,
        });
        // With hosted-tool items the answer keeps its split into message items, and each item
        // the number of message items before it.
        let (text_blocks, server_block_positions, server_blocks) = if self.hosted.is_empty() {
            (Vec::new(), Vec::new(), Vec::new())
        } else {
            let positions = self
                .hosted
                .iter()
                .map(|(at, _)| self.message_texts.range(..*at).count())
                .collect();
            let blocks = self
                .message_texts
                .into_values()
                .map(|text| CitedText {
                    text,
                    citations: Vec::new(),
                })
                .collect();
            let items = self.hosted.into_iter().map(|(_, item)| item).collect();
            (blocks, positions, items)
        };
        ProviderResponse {
            text: self.text,
            thinking,
            tool_calls: self
                .calls
                .into_iter()
                .filter(|call| call.done || !only_done_calls)
                .map(|call| ProviderToolCall {
                    id: call.call_id,
                    name: call.name,
                    arguments: if call.arguments.trim().is_empty() {
                        "{}".to_string()
                    } else {
                        call.arguments
                    },
                })
                .collect(),
            stop_reason,
            usage: self.usage,
            model: self.model,
            refusal,
            server_blocks,
            server_block_positions,
            text_blocks,
        }
    }
}

impl StreamAssembler for ResponsesAssembler {
    const TERMINAL: &'static str = "response.completed";

    fn on_event(
        &mut self,
        event: SseEvent,
        emitter: &mut Emitter<'_, '_>,
    ) -> Result<Progress, ProviderError> {
        let data = event.data.trim();
        if data.is_empty() {
            return Ok(Progress::Continue);
        }
        let wire: WireEvent =
            serde_json::from_str(data).map_err(|e| malformed_event(&self.provider, data, &e))?;
        let output_index = wire.output_index.unwrap_or(0);
        match wire.kind.as_str() {
            "response.created" | "response.in_progress" => {
                if let Some(model) = wire.response.and_then(|r| r.model) {
                    if !model.is_empty() {
                        self.model = model;
                    }
                }
            }
            "response.output_item.added" => {
                let item = wire
                    .item
                    .ok_or_else(|| self.malformed("response.output_item.added without an item"))?;
                self.on_item_added(output_index, &item, emitter);
            }
            "response.output_item.done" => {
                let item = wire
                    .item
                    .ok_or_else(|| self.malformed("response.output_item.done without an item"))?;
                self.on_item_done(output_index, item, emitter)?;
            }
            "response.output_text.delta" => {
                if let Some(delta) = wire.delta.filter(|d| !d.is_empty()) {
                    self.push_text(output_index, &delta);
                    emitter.emit(StreamEvent::TextDelta(delta));
                }
            }
            "response.refusal.delta" => {
                if let Some(delta) = wire.delta.filter(|d| !d.is_empty()) {
                    // The refusal is what the model says to the user: it streams as answer text
                    // too, and is kept apart so the outcome can say it was a refusal.
                    self.refusal.push_str(&delta);
                    self.push_text(output_index, &delta);
                    emitter.emit(StreamEvent::TextDelta(delta));
                }
            }
            // Summaries of the reasoning (OpenAI) and raw reasoning text (open-weight models
            // served with this API) both stream as thinking.
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                let part = wire.summary_index;
                if let Some(delta) = wire.delta.filter(|d| !d.is_empty()) {
                    if let Some(state) = self.reasoning_at(output_index) {
                        let mut piece = String::new();
                        if !state.text.is_empty() && part.is_some() && state.last_part != part {
                            piece.push_str("\n\n");
                        }
                        state.last_part = part;
                        piece.push_str(&delta);
                        state.text.push_str(&piece);
                        emitter.emit(StreamEvent::ThinkingDelta(piece));
                    }
                }
            }
            "response.function_call_arguments.delta" => {
                if let Some(delta) = wire.delta.filter(|d| !d.is_empty()) {
                    let Some((position, call)) = self.call_at(output_index) else {
                        return Err(
                            self.malformed("function call arguments for an unknown output item")
                        );
                    };
                    call.arguments.push_str(&delta);
                    emitter.emit(StreamEvent::ToolCallDelta {
                        index: position,
                        partial_json: delta,
                    });
                }
            }
            "response.function_call_arguments.done" => {
                self.finish_call(output_index, wire.arguments, emitter);
            }
            "response.completed" => {
                self.on_terminal(wire.response);
                return Ok(Progress::Done);
            }
            "response.incomplete" => {
                self.on_terminal(wire.response);
                self.incomplete.get_or_insert_with(String::new);
                return Ok(Progress::Done);
            }
            "response.failed" => {
                let error = wire.response.and_then(|r| r.error);
                let body = ErrorBody {
                    error_type: None,
                    code: error.as_ref().and_then(|e| text_of(e.code.as_ref())),
                    message: error.and_then(|e| e.message),
                };
                return Err(classify_stream_error(&self.provider, &body));
            }
            "error" => {
                let body = ErrorBody {
                    error_type: None,
                    code: text_of(wire.code.as_ref()),
                    message: wire.message,
                };
                return Err(classify_stream_error(&self.provider, &body));
            }
            // Part boundaries, `.done` events of text, annotations, server tools' progress: the
            // deltas and items above carry everything kept.
            _ => {}
        }
        Ok(Progress::Continue)
    }

    fn finish(self) -> ProviderResponse {
        let stop_reason = match self.incomplete.as_deref() {
            Some("max_output_tokens") => StopReason::MaxTokens,
            Some("content_filter") => StopReason::Refusal,
            Some(_) => StopReason::Other,
            None if !self.refusal.is_empty() => StopReason::Refusal,
            None if !self.calls.is_empty() => StopReason::ToolUse,
            None => StopReason::EndTurn,
        };
        self.response(stop_reason, false)
    }

    fn abort(self) -> ProviderResponse {
        // A call whose arguments had not finished streaming cannot be run: only whole ones stay.
        self.response(StopReason::Aborted, true)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use crate::message::MessageState;
    use crate::provider::sse::SseDecoder;

    fn run(events: &[Value]) -> (Result<ProviderResponse, ProviderError>, Vec<StreamEvent>) {
        let seen = Mutex::new(Vec::new());
        let sink = |event: StreamEvent| seen.lock().expect("lock").push(event);
        let mut emitter = Emitter::new(&sink);
        let mut assembler = ResponsesAssembler::new("openai", "configured", true);
        let sse: String = events
            .iter()
            .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap_or("")))
            .collect();
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
        (result, seen.into_inner().expect("lock"))
    }

    #[test]
    fn effort_bands() {
        let effort = |budget_tokens| reasoning_effort(&ThinkingConfig { budget_tokens });
        assert_eq!(effort(1_024), "low");
        assert_eq!(effort(3_999), "low");
        assert_eq!(effort(4_000), "medium");
        assert_eq!(effort(10_000), "medium");
        assert_eq!(effort(16_000), "high");
    }

    #[test]
    fn reasoning_models_drop_temperature_and_ask_for_encrypted_reasoning() {
        let request = ProviderRequest {
            messages: vec![Message::user("hi").into()],
            temperature: Some(0.5),
            ..ProviderRequest::default()
        };
        let body = build_body("o4-mini", None, false, true, &request);
        assert!(body.get("temperature").is_none());
        assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
        let body = build_body("gpt-4.1", None, false, true, &request);
        assert_eq!(body["temperature"], 0.5);
        assert!(body.get("include").is_none());
        assert_eq!(body["store"], false);
    }

    #[test]
    fn foreign_signatures_are_not_reasoning_items() {
        assert!(reasoning_item("EqQBCkYIARgC").is_none());
        assert!(reasoning_item(r#"{"type":"message","id":"m"}"#).is_none());
        assert!(reasoning_item(r#"{"type":"reasoning"}"#).is_none());
        assert_eq!(
            reasoning_item(r#"{"type":"reasoning","id":"rs_1","status":"completed"}"#),
            Some(json!({"type": "reasoning", "id": "rs_1", "summary": []}))
        );
        let wire = convert_messages(
            &[Message::assistant(
                vec![
                    ContentBlock::Thinking {
                        thinking: "anthropic".into(),
                        signature: Some("sig".into()),
                    },
                    ContentBlock::text("hi"),
                ],
                MessageState::Complete,
            )],
            true,
        );
        assert_eq!(wire, vec![json!({"role": "assistant", "content": "hi"})]);
    }

    #[test]
    fn whole_items_without_deltas_are_assembled() {
        let (result, events) = run(&[
            json!({"type": "response.output_item.done", "output_index": 0, "item": {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "a"}, {"type": "summary_text", "text": "b"}], "encrypted_content": "E"}}),
            json!({"type": "response.output_item.done", "output_index": 1, "item": {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "Read", "arguments": "{\"p\":1}"}}),
            json!({"type": "response.completed", "response": {"model": "o4-mini-real", "usage": {"input_tokens": 10, "output_tokens": 3, "input_tokens_details": {"cached_tokens": 4}}}}),
        ]);
        let response = result.expect("ok");
        assert_eq!(response.thinking[0].thinking, "a\n\nb");
        assert_eq!(response.tool_calls[0].arguments, "{\"p\":1}");
        assert_eq!(response.stop_reason, StopReason::ToolUse);
        assert_eq!(response.model, "o4-mini-real");
        assert_eq!(response.usage.input_tokens, 6);
        assert_eq!(response.usage.cache_read_input_tokens, 4);
        assert_eq!(events.len(), 3, "{events:?}");
    }

    #[test]
    fn summary_parts_are_separated() {
        let (result, _) = run(&[
            json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "reasoning", "id": "rs_1", "summary": []}}),
            json!({"type": "response.reasoning_summary_text.delta", "output_index": 0, "summary_index": 0, "delta": "one"}),
            json!({"type": "response.reasoning_summary_text.delta", "output_index": 0, "summary_index": 1, "delta": "two"}),
            json!({"type": "response.completed", "response": {}}),
        ]);
        let response = result.expect("ok");
        assert_eq!(response.thinking[0].thinking, "one\n\ntwo");
        // No `output_item.done`: no item to send back.
        assert_eq!(response.thinking[0].signature, None);
    }

    #[test]
    fn error_event_without_type_uses_its_code() {
        let (result, _) = run(&[
            json!({"type": "error", "code": "rate_limit_exceeded", "message": "slow down", "param": null}),
        ]);
        let error = result.expect_err("error");
        assert_eq!(error.kind, ProviderErrorKind::RateLimit);
        assert!(error.message.contains("slow down"), "{}", error.message);
    }

    #[test]
    fn arguments_for_an_unknown_item_are_malformed() {
        let (result, _) = run(&[
            json!({"type": "response.function_call_arguments.delta", "output_index": 3, "delta": "{"}),
        ]);
        assert_eq!(result.expect_err("error").kind, ProviderErrorKind::Provider);
    }
}
