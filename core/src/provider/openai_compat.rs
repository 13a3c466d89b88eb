//! What the OpenAI-compatible servers robota knows by name do differently from OpenAI's Chat
//! Completions: the [`Flavor`] a settings profile type picks (`deepseek`, `qwen`, `gemma`), the
//! request fields it adds, the history it needs, and (Gemma) the projection of tool calls the
//! model writes as text into real tool calls.
//!
//! - **DeepSeek** (API docs, "Thinking Mode"): thinking is switched with `thinking: {"type":
//!   "enabled" | "disabled"}` and its depth with `reasoning_effort` (`low`, `high`, `max`). The
//!   chain of thought comes back as `reasoning_content`; in the history it is needed only for
//!   assistant turns that called tools (between two user messages with tool calls, "the
//!   reasoning_content must be passed back"; otherwise it is ignored), so it is sent with those
//!   and left out elsewhere.
//! - **Qwen** (Alibaba Cloud Model Studio, OpenAI-compatible mode): hosted web search with
//!   `enable_search` and `search_options`, thinking with `enable_thinking` and `thinking_budget`.
//!   Its built-in web tools ([`QwenWebTools`]: `web_search`, and `web_extractor`, which fetches
//!   pages) exist only on DashScope's OpenAI-compatible Responses API
//!   (`POST {host}/api/v2/apps/protocols/compatible-mode/v1/responses`), which the Responses
//!   provider speaks for this flavor with DashScope's differences: no `instructions` (the system
//!   prompt goes first in `input` as a system message), thinking with `enable_thinking`, no
//!   stored or encrypted reasoning (`store`, `include` and reasoning items are not sent), and
//!   the hosted tools declared as `{"type": "web_search"}` / `{"type": "web_extractor"}` (the
//!   extractor only works alongside search, and needs thinking on).
//! - **Gemma** (Google's "Function calling with Gemma"): the model has no tool-call tokens and
//!   writes calls as text — the documented `[func(a=1), other(b="x")]` list, a fenced
//!   `tool_code` block, or the `<tool_call>{json}</tool_call>` tags some local chat templates
//!   teach it. [`TextCalls`] turns them into tool calls and keeps them out of the answer. Gemma's
//!   chat template has no system role (servers whose template enforces that reject a system
//!   message), so the system prompt is folded into the first user message instead.

use serde_json::{json, Map, Value};

use super::{NativeWebTool, NativeWebTools, ProviderRequest};
use crate::message::{ContentBlock, Message, Role};

/// The behaviour of a known OpenAI-compatible server, chosen by the settings profile type.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum Flavor {
    /// Plain Chat Completions (OpenAI, Ollama, LM Studio, vLLM, …).
    #[default]
    Generic,
    /// DeepSeek's API.
    DeepSeek {
        /// Thinking when the request asks for none (profile `options.thinking`); `None` leaves
        /// the model's default.
        thinking: Option<bool>,
        /// `reasoning_effort` sent with thinking (profile `options.reasoningEffort`: `low`,
        /// `high` or `max`).
        reasoning_effort: Option<String>,
    },
    /// Alibaba Cloud's DashScope (Qwen) in OpenAI-compatible mode.
    Qwen {
        /// Hosted web search (profile `options.webSearch`): `true` turns on `enable_search`; an
        /// object turns it on and is sent as `search_options` (e.g. `{"forced_search": true,
        /// "search_strategy": "max"}`).
        web_search: Option<Value>,
        /// The built-in web tools declared on DashScope's Responses API (profile
        /// `options.builtInWebTools`); a profile enabling any of them is served by the Responses
        /// provider.
        web_tools: QwenWebTools,
    },
    /// A local Gemma model: system prompt folded into the first user turn, tool calls written as
    /// text projected into tool calls.
    Gemma,
}

impl Flavor {
    /// Whether the request side can turn thinking on.
    pub(crate) fn thinking(&self) -> bool {
        matches!(self, Flavor::DeepSeek { .. } | Flavor::Qwen { .. })
    }

    /// Whether answer text must go through [`TextCalls`].
    pub(crate) fn projects_text_calls(&self) -> bool {
        matches!(self, Flavor::Gemma)
    }

    /// Adds and rewrites the fields of a Chat Completions `body` built for `request`.
    pub(crate) fn adjust_body(&self, body: &mut Map<String, Value>, request: &ProviderRequest) {
        match self {
            Flavor::Generic => {}
            Flavor::DeepSeek {
                thinking,
                reasoning_effort,
            } => {
                let enabled = request.thinking.is_some() || *thinking == Some(true);
                if request.thinking.is_some() || thinking.is_some() {
                    let kind = if enabled { "enabled" } else { "disabled" };
                    body.insert("thinking".into(), json!({ "type": kind }));
                }
                if let (true, Some(effort)) = (enabled, reasoning_effort) {
                    body.insert("reasoning_effort".into(), json!(effort));
                }
                if let Some(Value::Array(wire)) = body.get_mut("messages") {
                    add_reasoning_content(wire, &request.messages);
                }
            }
            Flavor::Qwen { web_search, .. } => {
                match web_search {
                    Some(Value::Bool(on)) => {
                        body.insert("enable_search".into(), json!(on));
                    }
                    Some(options @ Value::Object(_)) => {
                        body.insert("enable_search".into(), json!(true));
                        body.insert("search_options".into(), options.clone());
                    }
                    _ => {}
                }
                if let Some(thinking) = &request.thinking {
                    body.insert("enable_thinking".into(), json!(true));
                    body.insert("thinking_budget".into(), json!(thinking.budget_tokens));
                }
            }
            Flavor::Gemma => {
                if let Some(Value::Array(wire)) = body.get_mut("messages") {
                    fold_system_prompt(wire);
                }
            }
        }
    }
}

/// Qwen's built-in web tools on DashScope's Responses API (spec 000: "Qwen Responses web
/// search/fetch"; Alibaba Cloud Model Studio, "Web search" and "Web extractor").
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QwenWebTools {
    /// `{"type": "web_search"}`: the model searches the web.
    pub web_search: bool,
    /// `{"type": "web_extractor"}`: the model fetches and extracts pages. DashScope runs it only
    /// alongside web search, so declaring it declares web search too.
    pub web_fetch: bool,
}

impl QwenWebTools {
    /// Whether any tool is on.
    pub fn any(self) -> bool {
        self.web_search || self.web_fetch
    }

    /// The `tools` entries to declare.
    fn definitions(self) -> Vec<Value> {
        let mut tools = Vec::new();
        if self.any() {
            tools.push(json!({"type": "web_search"}));
        }
        if self.web_fetch {
            tools.push(json!({"type": "web_extractor"}));
        }
        tools
    }
}

/// DashScope's Responses base URL (Singapore), for a Qwen config that names none.
pub(crate) const DASHSCOPE_RESPONSES_BASE_URL: &str =
    "https://dashscope-intl.aliyuncs.com/api/v2/apps/protocols/compatible-mode/v1";

/// The path of DashScope's OpenAI-compatible Responses API under its host.
const DASHSCOPE_RESPONSES_PATH: &str = "/api/v2/apps/protocols/compatible-mode/v1";
/// The path of DashScope's Chat Completions compatible mode under its host.
const DASHSCOPE_CHAT_PATH: &str = "/compatible-mode/v1";

/// The Responses base URL for a Qwen profile's `base_url` (its Chat Completions one): DashScope
/// serves the Responses API on the same host under another path, so
/// `https://dashscope.aliyuncs.com/compatible-mode/v1` (Beijing) becomes
/// `https://dashscope.aliyuncs.com/api/v2/apps/protocols/compatible-mode/v1`. A URL already on
/// the Responses path, or any other (a proxy), is used as it is.
pub(crate) fn dashscope_responses_base(base_url: &str) -> String {
    let base = base_url.trim_end_matches('/');
    if base.ends_with(DASHSCOPE_RESPONSES_PATH) {
        return base.to_string();
    }
    match base.strip_suffix(DASHSCOPE_CHAT_PATH) {
        Some(host) => format!("{host}{DASHSCOPE_RESPONSES_PATH}"),
        None => base.to_string(),
    }
}

impl Flavor {
    /// Whether this flavor speaks a dialect of the Responses API ([`Flavor::Qwen`]: DashScope's).
    pub(crate) fn responses_dialect(&self) -> bool {
        matches!(self, Flavor::Qwen { .. })
    }

    /// The hosted web tools of this flavor on Chat Completions: Qwen's `enable_search` is a web
    /// search (on when `web_search` is anything but `false`); its page fetching is on the
    /// Responses API only.
    pub(crate) fn chat_native_web_tools(&self) -> NativeWebTools {
        match self {
            Flavor::Qwen { web_search, .. } => NativeWebTools {
                web_search: NativeWebTool::supported(
                    web_search.is_some() && *web_search != Some(Value::Bool(false)),
                ),
                web_fetch: NativeWebTool::supported(false),
            },
            _ => NativeWebTools::default(),
        }
    }

    /// Whether this flavor declares hosted web tools, which need the Responses API.
    pub fn web_tools_declared(&self) -> bool {
        self.web_tools().any()
    }

    /// The hosted web tools this flavor declares on the Responses API.
    pub(crate) fn web_tools(&self) -> QwenWebTools {
        match self {
            Flavor::Qwen { web_tools, .. } => *web_tools,
            _ => QwenWebTools::default(),
        }
    }

    /// Rewrites a Responses `body` built for `request` into DashScope's dialect (see the module
    /// docs); other flavors leave it as OpenAI's.
    pub(crate) fn adjust_responses_body(
        &self,
        body: &mut Map<String, Value>,
        request: &ProviderRequest,
    ) {
        if !self.responses_dialect() {
            return;
        }
        // DashScope ignores `instructions`: the system prompt would be lost.
        if let Some(system) = body.remove("instructions") {
            if let Some(Value::Array(input)) = body.get_mut("input") {
                input.insert(0, json!({"role": "system", "content": system}));
            }
        }
        // Nothing is stored server-side there either, and there is no encrypted reasoning to
        // ask for; `reasoning` gives way to DashScope's own switch.
        for field in ["store", "include", "reasoning"] {
            body.remove(field);
        }
        let web_tools = self.web_tools();
        if web_tools.any() {
            let tools = body
                .entry("tools")
                .or_insert_with(|| Value::Array(Vec::new()));
            if let Value::Array(tools) = tools {
                // Every declaration includes web search (see `definitions`).
                super::server_tools::drop_local_web_search(tools, request);
                tools.extend(web_tools.definitions());
            }
        }
        // The web extractor runs only in thinking mode (qwen3-max-2026-01-23 refuses it
        // otherwise), so declaring it turns thinking on.
        if request.thinking.is_some() || web_tools.web_fetch {
            body.insert("enable_thinking".into(), json!(true));
        }
    }
}

/// DeepSeek: gives each assistant message with tool calls the thinking text of the history
/// message it came from, as `reasoning_content`.
fn add_reasoning_content<M: std::borrow::Borrow<Message>>(wire: &mut [Value], history: &[M]) {
    for message in wire.iter_mut() {
        let Some(first_call) = message
            .get("tool_calls")
            .and_then(|calls| calls.get(0))
            .and_then(|call| call.get("id"))
            .and_then(Value::as_str)
            .map(str::to_string)
        else {
            continue;
        };
        let source = history.iter().map(|m| m.borrow()).find(|m| {
            m.role == Role::Assistant && m.tool_uses().any(|(id, _, _)| id == first_call)
        });
        let thinking: String = source
            .map(|m| {
                m.content
                    .iter()
                    .filter_map(|block| match block {
                        ContentBlock::Thinking { thinking, .. } => Some(thinking.as_str()),
                        _ => None,
                    })
                    .collect()
            })
            .unwrap_or_default();
        // Without thinking (non-thinking mode) there is nothing to send back.
        if let (false, Some(object)) = (thinking.is_empty(), message.as_object_mut()) {
            object.insert("reasoning_content".into(), json!(thinking));
        }
    }
}

/// Gemma: removes the system messages and puts their text at the start of the first user
/// message (or, with no user message, sends it as one).
fn fold_system_prompt(wire: &mut Vec<Value>) {
    let mut system = Vec::new();
    wire.retain(|message| {
        if message.get("role").and_then(Value::as_str) != Some("system") {
            return true;
        }
        if let Some(text) = message.get("content").and_then(Value::as_str) {
            system.push(text.to_string());
        }
        false
    });
    if system.is_empty() {
        return;
    }
    let system = system.join("\n\n");
    let first_user = wire.iter_mut().find(|m| {
        m.get("role").and_then(Value::as_str) == Some("user")
            && m.get("content").is_some_and(Value::is_string)
    });
    match first_user {
        Some(user) => {
            let text = user["content"].as_str().unwrap_or_default();
            user["content"] = json!(format!("{system}\n\n{text}"));
        }
        None => wire.insert(0, json!({"role": "user", "content": system})),
    }
}

// ---- Gemma: tool calls written as text ----------------------------------------------------------

/// A piece of the answer after projection.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Projected {
    /// Answer text to show.
    Text(String),
    /// A tool call the model wrote as text: its name and JSON arguments.
    Call {
        /// Tool name.
        name: String,
        /// The arguments as a JSON object text.
        arguments: String,
    },
}

const TAG_OPEN: &str = "<tool_call>";
const TAG_CLOSE: &str = "</tool_call>";
const FENCE_OPEN: &str = "```tool_code";
const FENCE_CLOSE: &str = "```";

/// The longest text held back while waiting to see whether a call closes; past it the text is
/// shown as it is (a model that opened a tag and never closed it).
const MAX_HELD: usize = 64 * 1024;

/// Splits streamed answer text into text and tool calls. Text that might start a call marker is
/// held back until it is clear; an answer that starts with `[` (Gemma's documented call list) is
/// held until it ends.
#[derive(Debug, Default)]
pub(crate) struct TextCalls {
    pending: String,
    /// Inside `<tool_call>` or a `tool_code` fence: its opening and the closing marker awaited.
    inside: Option<(&'static str, &'static str)>,
    /// Nothing but whitespace has been shown yet.
    at_start: bool,
    /// The answer began with `[`: held whole to see if it is a call list.
    call_list: bool,
}

impl TextCalls {
    /// A projector for one answer.
    pub(crate) fn new() -> Self {
        TextCalls {
            at_start: true,
            ..TextCalls::default()
        }
    }

    /// Takes the next piece of streamed text.
    pub(crate) fn push(&mut self, text: &str) -> Vec<Projected> {
        self.pending.push_str(text);
        let mut out = Vec::new();
        self.drain(&mut out, false);
        out
    }

    /// The end of the answer: whatever is held is resolved.
    pub(crate) fn finish(&mut self) -> Vec<Projected> {
        let mut out = Vec::new();
        self.drain(&mut out, true);
        if !self.pending.is_empty() {
            let rest = std::mem::take(&mut self.pending);
            match self.inside.take() {
                // An unclosed block that still parses is a call cut off at its closing marker.
                Some((open, _)) => match parse_calls(&rest) {
                    Some(calls) => out.extend(calls),
                    None => out.push(Projected::Text(format!("{open}{rest}"))),
                },
                None => out.push(Projected::Text(rest)),
            }
        }
        out
    }

    fn drain(&mut self, out: &mut Vec<Projected>, end: bool) {
        loop {
            if self.call_list {
                if !end && self.pending.len() < MAX_HELD {
                    return;
                }
                self.call_list = false;
                let text = std::mem::take(&mut self.pending);
                match parse_call_list(text.trim()) {
                    Some(calls) => out.extend(calls),
                    None => out.push(Projected::Text(text)),
                }
                return;
            }
            if let Some((open, close)) = self.inside {
                let Some(at) = self.pending.find(close) else {
                    if self.pending.len() >= MAX_HELD {
                        self.inside = None;
                        let held = std::mem::take(&mut self.pending);
                        out.push(Projected::Text(format!("{open}{held}")));
                    }
                    return;
                };
                let body: String = self.pending[..at].to_string();
                self.pending.drain(..at + close.len());
                self.inside = None;
                match parse_calls(&body) {
                    Some(calls) => out.extend(calls),
                    None => out.push(Projected::Text(format!("{open}{body}{close}"))),
                }
                continue;
            }
            if self.at_start {
                let trimmed = self.pending.trim_start();
                if trimmed.is_empty() {
                    return;
                }
                self.at_start = false;
                if trimmed.starts_with('[') {
                    self.call_list = true;
                    continue;
                }
            }
            let found = [(TAG_OPEN, TAG_CLOSE), (FENCE_OPEN, FENCE_CLOSE)]
                .iter()
                .filter_map(|(open, close)| self.pending.find(open).map(|at| (at, *open, *close)))
                .min_by_key(|(at, _, _)| *at);
            if let Some((at, open, close)) = found {
                if at > 0 {
                    out.push(Projected::Text(self.pending[..at].to_string()));
                }
                self.pending.drain(..at + open.len());
                self.inside = Some((open, close));
                continue;
            }
            // Hold back a tail that could be the start of a marker.
            let keep = if end {
                0
            } else {
                marker_prefix_len(&self.pending)
            };
            let cut = self.pending.len() - keep;
            if cut > 0 {
                out.push(Projected::Text(self.pending[..cut].to_string()));
                self.pending.drain(..cut);
            }
            return;
        }
    }
}

/// The length of the longest suffix of `text` that is a proper prefix of a marker.
fn marker_prefix_len(text: &str) -> usize {
    let mut best = 0;
    for marker in [TAG_OPEN, FENCE_OPEN] {
        for len in 1..marker.len() {
            if len > text.len() || !text.is_char_boundary(text.len() - len) {
                continue;
            }
            if marker.starts_with(&text[text.len() - len..]) {
                best = best.max(len);
            }
        }
    }
    best
}

/// The calls in a tag or fence body: JSON objects (`{"name", "arguments" | "parameters"}`, one
/// or a list) or Python-style calls (`name(a=1)`, `print(name(a=1))`, `[a(), b()]`).
fn parse_calls(body: &str) -> Option<Vec<Projected>> {
    let body = body.trim();
    if body.is_empty() {
        return None;
    }
    if let Ok(value) = serde_json::from_str::<Value>(body) {
        let items = match value {
            Value::Array(items) => items,
            other => vec![other],
        };
        return items.iter().map(json_call).collect();
    }
    let mut calls = Vec::new();
    for line in body.lines().map(str::trim).filter(|l| !l.is_empty()) {
        calls.extend(parse_call_list(line)?);
    }
    (!calls.is_empty()).then_some(calls)
}

fn json_call(value: &Value) -> Option<Projected> {
    let name = value.get("name")?.as_str()?.to_string();
    let arguments = match value.get("arguments").or_else(|| value.get("parameters")) {
        None | Some(Value::Null) => "{}".to_string(),
        // Some templates put the arguments in as a JSON string.
        Some(Value::String(text)) => text.clone(),
        Some(other) => other.to_string(),
    };
    Some(Projected::Call { name, arguments })
}

/// `[a(x=1), b()]`, `a(x=1)` or `print(a(x=1))` as calls; `None` when the text is anything else.
fn parse_call_list(text: &str) -> Option<Vec<Projected>> {
    let mut parser = PyParser {
        text: text.as_bytes(),
        at: 0,
    };
    let bracketed = parser.eat(b'[');
    let mut calls = Vec::new();
    loop {
        parser.skip_space();
        if bracketed && parser.eat(b']') {
            break;
        }
        calls.push(parser.call()?);
        parser.skip_space();
        if parser.eat(b',') {
            continue;
        }
        if bracketed {
            parser.skip_space();
            if !parser.eat(b']') {
                return None;
            }
        }
        break;
    }
    parser.skip_space();
    (parser.at == parser.text.len() && !calls.is_empty()).then_some(calls)
}

/// A small parser for the Python call syntax Gemma writes: identifiers, keyword arguments, and
/// literal values (strings, numbers, `True`/`False`/`None`, lists, dicts).
struct PyParser<'a> {
    text: &'a [u8],
    at: usize,
}

impl PyParser<'_> {
    fn peek(&self) -> Option<u8> {
        self.text.get(self.at).copied()
    }

    fn skip_space(&mut self) {
        while self.peek().is_some_and(|b| b.is_ascii_whitespace()) {
            self.at += 1;
        }
    }

    fn eat(&mut self, byte: u8) -> bool {
        self.skip_space();
        if self.peek() == Some(byte) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    fn ident(&mut self) -> Option<String> {
        self.skip_space();
        let start = self.at;
        while self
            .peek()
            .is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.' || b == b'-')
        {
            self.at += 1;
        }
        (self.at > start).then(|| String::from_utf8_lossy(&self.text[start..self.at]).into_owned())
    }

    /// Comma-separated items up to `close` (a trailing comma allowed), the opening bracket
    /// already read.
    fn sequence(&mut self, close: u8, mut item: impl FnMut(&mut Self) -> Option<()>) -> Option<()> {
        if self.eat(close) {
            return Some(());
        }
        loop {
            item(self)?;
            if self.eat(b',') {
                if self.eat(close) {
                    return Some(());
                }
                continue;
            }
            return self.eat(close).then_some(());
        }
    }

    /// `name(k=v, …)`, unwrapping `print(…)`.
    fn call(&mut self) -> Option<Projected> {
        let name = self.ident()?;
        if !self.eat(b'(') {
            return None;
        }
        if name == "print" {
            let inner = self.call()?;
            return self.eat(b')').then_some(inner);
        }
        let mut arguments = Map::new();
        self.sequence(b')', |parser| {
            let key = parser.ident()?;
            if !parser.eat(b'=') {
                return None;
            }
            arguments.insert(key, parser.value()?);
            Some(())
        })?;
        Some(Projected::Call {
            name,
            arguments: Value::Object(arguments).to_string(),
        })
    }

    fn value(&mut self) -> Option<Value> {
        self.skip_space();
        match self.peek()? {
            quote @ (b'"' | b'\'') => self.string(quote).map(Value::String),
            b'[' => {
                self.at += 1;
                let mut items = Vec::new();
                self.sequence(b']', |parser| {
                    items.push(parser.value()?);
                    Some(())
                })?;
                Some(Value::Array(items))
            }
            b'{' => {
                self.at += 1;
                let mut map = Map::new();
                self.sequence(b'}', |parser| {
                    let key = match parser.value()? {
                        Value::String(key) => key,
                        other => other.to_string(),
                    };
                    if !parser.eat(b':') {
                        return None;
                    }
                    map.insert(key, parser.value()?);
                    Some(())
                })?;
                Some(Value::Object(map))
            }
            _ => {
                let word = self.ident()?;
                match word.as_str() {
                    "True" | "true" => Some(Value::Bool(true)),
                    "False" | "false" => Some(Value::Bool(false)),
                    "None" | "null" => Some(Value::Null),
                    number => serde_json::from_str::<serde_json::Number>(number)
                        .ok()
                        .map(Value::Number),
                }
            }
        }
    }

    fn string(&mut self, quote: u8) -> Option<String> {
        self.at += 1;
        let mut bytes = Vec::new();
        loop {
            let byte = self.peek()?;
            self.at += 1;
            match byte {
                b'\\' => {
                    let escaped = self.peek()?;
                    self.at += 1;
                    bytes.push(match escaped {
                        b'n' => b'\n',
                        b't' => b'\t',
                        other => other,
                    });
                }
                b if b == quote => break,
                b => bytes.push(b),
            }
        }
        String::from_utf8(bytes).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(name: &str, arguments: Value) -> Projected {
        Projected::Call {
            name: name.into(),
            arguments: arguments.to_string(),
        }
    }

    fn project(pieces: &[&str]) -> Vec<Projected> {
        let mut calls = TextCalls::new();
        let mut out: Vec<Projected> = pieces.iter().flat_map(|p| calls.push(p)).collect();
        out.extend(calls.finish());
        // Adjacent text pieces are one text for comparison.
        let mut merged: Vec<Projected> = Vec::new();
        for piece in out {
            match (merged.last_mut(), piece) {
                (Some(Projected::Text(last)), Projected::Text(text)) => last.push_str(&text),
                (_, piece) => merged.push(piece),
            }
        }
        merged
    }

    #[test]
    fn documented_call_list_is_projected() {
        assert_eq!(
            project(&[
                "[get_product_name_by_PID(PID=",
                "\"807ZPKBL9V\"), ls(path='.', all=True, n=2)]"
            ]),
            vec![
                call("get_product_name_by_PID", json!({"PID": "807ZPKBL9V"})),
                call("ls", json!({"path": ".", "all": true, "n": 2})),
            ]
        );
        // Text that only starts with a bracket stays text.
        assert_eq!(
            project(&["[1] is a footnote"]),
            vec![Projected::Text("[1] is a footnote".into())]
        );
    }

    #[test]
    fn tags_and_fences_are_cut_out_of_the_text() {
        assert_eq!(
            project(&[
                "Let me check.<tool",
                "_call>{\"name\": \"Read\", \"arguments\": {\"p\": 1}}</tool_call> done"
            ]),
            vec![
                Projected::Text("Let me check.".into()),
                call("Read", json!({"p": 1})),
                Projected::Text(" done".into()),
            ]
        );
        assert_eq!(
            project(&[
                "Sure.\n```tool_",
                "code\nprint(get_weather(city=\"Paris\", days=[1, 2]))\n```"
            ]),
            vec![
                Projected::Text("Sure.\n".into()),
                call("get_weather", json!({"city": "Paris", "days": [1, 2]})),
            ]
        );
        // Code that is not a call is given back as it was.
        assert_eq!(
            project(&["```tool_code\nx = 1\n```"]),
            vec![Projected::Text("```tool_code\nx = 1\n```".into())]
        );
    }

    #[test]
    fn dashscope_chat_bases_move_to_the_responses_path() {
        assert_eq!(
            dashscope_responses_base("https://dashscope.aliyuncs.com/compatible-mode/v1/"),
            "https://dashscope.aliyuncs.com/api/v2/apps/protocols/compatible-mode/v1"
        );
        let responses =
            "https://dashscope-us.aliyuncs.com/api/v2/apps/protocols/compatible-mode/v1";
        assert_eq!(dashscope_responses_base(responses), responses);
        // Anything else (a proxy) is taken as it is.
        assert_eq!(
            dashscope_responses_base("http://localhost:8080/v1"),
            "http://localhost:8080/v1"
        );
    }

    #[test]
    fn system_prompt_is_folded_into_the_first_user_message() {
        let mut wire = vec![
            json!({"role": "system", "content": "be brief"}),
            json!({"role": "user", "content": "hi"}),
        ];
        fold_system_prompt(&mut wire);
        assert_eq!(
            wire,
            vec![json!({"role": "user", "content": "be brief\n\nhi"})]
        );
    }
}
