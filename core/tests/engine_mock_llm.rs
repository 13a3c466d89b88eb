//! The whole stack over loopback: the execution loop driving each real provider (Anthropic
//! Messages and OpenAI Chat Completions) against mock-llm.
//!
//! Every scenario runs once per wire format (`<scenario>::anthropic`, `<scenario>::openai`). Each
//! asserts what a user would see (the events in order, the outcome), what the conversation holds
//! afterwards (every `tool_use` answered exactly once, interrupted answers marked, no synthetic
//! prompt stored) and what reached the model (mock-llm's recorded request bodies, in each
//! provider's wire shape). Fault scenarios also check that a second run on the same conversation
//! works. Concurrency is measured by counting calls in flight, never by timing; the only clock
//! assertions are generous upper bounds on "promptly".

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use mock_llm::MockLlm;
use robota::engine::{
    BatchMode, Engine, EngineConfig, EngineEvent, ExecutionEvent, RunOptions, RunOutcome,
    RunStopReason, INTERRUPTED_RESULT, MAX_TURNS_INSTRUCTION,
};
use robota::message::{
    ContentBlock, Conversation, Message, MessageState, ProviderError, ProviderErrorKind, Role,
    Usage, INTERRUPTED_ANNOTATION, PROVIDER_ERROR_ANNOTATION,
};
use robota::provider::{
    AnthropicConfig, AnthropicProvider, HttpOptions, OpenAiConfig, OpenAiProvider, Provider,
    ProviderRequest, ProviderResponse, StreamEvent, StreamSink, ThinkingConfig,
};
use robota::tools::builtins::{BuiltinToolsConfig, Builtins, GlobTool, ReadTool};
use robota::tools::{Tool, ToolContext, ToolOutput, ToolRegistry};
use serde_json::{json, Value};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

const ANTHROPIC_MODEL: &str = "claude-sonnet-4-5";
const OPENAI_MODEL: &str = "gpt-4o";
const SYSTEM_PROMPT: &str = "You are a careful assistant.";
/// The registered tools' names as the model is told them (sorted, as the registry sends them).
const TOOL_NAMES: [&str; 5] = ["Glob", "Read", "read", "slow", "write"];

// ---------------------------------------------------------------------------------------------
// The two wire formats

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wire {
    Anthropic,
    OpenAi,
}

impl Wire {
    fn path(self) -> &'static str {
        match self {
            Wire::Anthropic => "/v1/messages",
            Wire::OpenAi => "/v1/chat/completions",
        }
    }

    fn model(self) -> &'static str {
        match self {
            Wire::Anthropic => ANTHROPIC_MODEL,
            Wire::OpenAi => OPENAI_MODEL,
        }
    }

    fn provider_name(self) -> &'static str {
        match self {
            Wire::Anthropic => "anthropic",
            Wire::OpenAi => "openai",
        }
    }

    /// How many SSE events of a text-only turn mock-llm sends up to and including the first text
    /// delta (a fault after that many events hits a stream whose first delta reached the host).
    ///
    /// Anthropic: `message_start`, `content_block_start`, `ping`, first `text_delta`.
    /// OpenAI: the role chunk (empty content), the first content chunk.
    fn events_through_first_text(self) -> u64 {
        match self {
            Wire::Anthropic => 4,
            Wire::OpenAi => 2,
        }
    }

    /// What mock-llm's default in-stream error maps to: Anthropic's `overloaded_error` event is
    /// an overload; OpenAI's `server_error` chunk is a (retryable) provider error.
    fn default_stream_error_kind(self) -> ProviderErrorKind {
        match self {
            Wire::Anthropic => ProviderErrorKind::Overloaded,
            Wire::OpenAi => ProviderErrorKind::Provider,
        }
    }

    /// `tool_choice: none` as the wire spells it.
    fn tool_choice_none(self) -> Value {
        match self {
            Wire::Anthropic => json!({"type": "none"}),
            Wire::OpenAi => json!("none"),
        }
    }

    /// A provider pointed at the mock's base URL (each provider appends its own endpoint path:
    /// Anthropic `/v1/messages`, OpenAI `/chat/completions` under a base ending in `/v1`).
    /// Anthropic prompt caching is off: these tests compare exact wire shapes, and the cache
    /// breakpoints have tests of their own (`tests/prompt_cache.rs`).
    fn provider(self, mock: &MockLlm, http: HttpOptions) -> Arc<dyn Provider> {
        match self {
            Wire::Anthropic => Arc::new(
                AnthropicProvider::new(AnthropicConfig {
                    api_key: Some("sk-ant-test".into()),
                    base_url: Some(mock.base_url()),
                    prompt_caching: None,
                    http,
                    ..AnthropicConfig::new(ANTHROPIC_MODEL)
                })
                .expect("anthropic provider"),
            ),
            Wire::OpenAi => Arc::new(
                OpenAiProvider::new(OpenAiConfig {
                    api_key: Some("sk-openai-test".into()),
                    base_url: Some(format!("{}/v1", mock.base_url())),
                    http,
                    ..OpenAiConfig::new(OPENAI_MODEL)
                })
                .expect("openai provider"),
            ),
        }
    }
}

/// Runs each named scenario `async fn name(wire: Wire)` once per wire format, as
/// `name::anthropic` and `name::openai`.
macro_rules! both_wires {
    ($($name:ident),* $(,)?) => {
        $(
            mod $name {
                use super::Wire;

                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn anthropic() {
                    super::$name(Wire::Anthropic).await;
                }

                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn openai() {
                    super::$name(Wire::OpenAi).await;
                }
            }
        )*
    };
}

both_wires!(
    plain_text,
    multi_tool_turn,
    streamed_tool_arguments_split_across_chunks,
    thinking,
    usage_is_summed_over_rounds,
    rate_limit_with_retry_after_then_success,
    overloaded_and_server_errors_then_success,
    transport_failures_before_any_output_are_retried,
    retries_run_out,
    retry_after_too_long_to_wait_is_returned,
    a_lowered_retry_budget_is_named_in_the_error,
    auth_error_is_not_retried,
    context_length_error_is_not_retried,
    reset_after_text,
    stall_after_text_is_an_idle_timeout,
    malformed_event,
    missing_terminal_event,
    oversized_event,
    in_stream_error_after_text,
    failure_in_a_later_round_keeps_the_tool_results,
    abort_mid_text_from_the_event_callback,
    abort_mid_text_from_another_task,
    abort_mid_tool,
    abort_while_tool_arguments_stream,
    abort_during_retry_backoff,
    max_turns_summary,
    unknown_tool,
    repeated_unknown_tools_end_with_one_tool_less_call,
    invalid_tool_arguments,
    reused_tool_ids,
    duplicate_tool_ids_in_one_response,
    parallel_read_only_tools,
);

// ---------------------------------------------------------------------------------------------
// Test tools

/// What the test tools did: calls in flight now and at most, and whether a mutating call ever
/// overlapped another call.
#[derive(Default)]
struct Probe {
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
    mutation_overlapped: AtomicBool,
    calls: AtomicUsize,
}

impl Probe {
    fn enter(&self) -> usize {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.max_in_flight.fetch_max(now, Ordering::SeqCst);
        now
    }

    fn leave(&self) -> usize {
        self.in_flight.fetch_sub(1, Ordering::SeqCst)
    }

    fn max(&self) -> usize {
        self.max_in_flight.load(Ordering::SeqCst)
    }

    fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}

/// Read-only: `{"label": "a", "wait_for": n, "sleep_ms": ms}` → `"read a"`.
///
/// With `wait_for`, the call waits (up to 5 s) until `n` calls are in flight at once, so a test
/// of parallelism does not depend on timing: if the engine ran the calls one at a time, the
/// maximum seen would stay 1.
struct ProbeRead(Arc<Probe>);

#[async_trait]
impl Tool for ProbeRead {
    fn name(&self) -> &str {
        "read"
    }
    fn description(&self) -> &str {
        "Reads something."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {"label": {"type": "string"}}})
    }
    fn is_read_only(&self) -> bool {
        true
    }
    async fn execute(&self, input: Value, _context: ToolContext) -> ToolOutput {
        let label = input["label"].as_str().unwrap_or("?").to_string();
        self.0.enter();
        if let Some(wait_for) = input["wait_for"].as_u64() {
            let deadline = Instant::now() + Duration::from_secs(5);
            // The high-water mark, not the current count: once all were in flight together, a
            // call that wakes after another already left must not wait on.
            while (self.0.max() as u64) < wait_for && Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        }
        let sleep_ms = input["sleep_ms"].as_u64().unwrap_or(0);
        tokio::time::sleep(Duration::from_millis(sleep_ms)).await;
        self.0.leave();
        ToolOutput::text(format!("read {label}"))
    }
}

/// Mutating: `{"label": "x"}` → `"wrote x"`. Flags any overlap with another call.
struct ProbeWrite(Arc<Probe>);

#[async_trait]
impl Tool for ProbeWrite {
    fn name(&self) -> &str {
        "write"
    }
    fn description(&self) -> &str {
        "Changes something."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {"label": {"type": "string"}}})
    }
    async fn execute(&self, input: Value, _context: ToolContext) -> ToolOutput {
        let label = input["label"].as_str().unwrap_or("?").to_string();
        if self.0.enter() > 1 {
            self.0.mutation_overlapped.store(true, Ordering::SeqCst);
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
        if self.0.leave() > 1 {
            self.0.mutation_overlapped.store(true, Ordering::SeqCst);
        }
        ToolOutput::text(format!("wrote {label}"))
    }
}

/// Mutating; announces that it started, then runs for 30 s unless the run is aborted, in which
/// case it stops at once (as a well-behaved long tool does).
#[derive(Default)]
struct SlowTool {
    started: Notify,
    saw_cancel: AtomicBool,
}

#[async_trait]
impl Tool for SlowTool {
    fn name(&self) -> &str {
        "slow"
    }
    fn description(&self) -> &str {
        "Takes a long time unless cancelled."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object"})
    }
    async fn execute(&self, _input: Value, context: ToolContext) -> ToolOutput {
        self.started.notify_one();
        tokio::select! {
            () = context.cancel.cancelled() => {
                self.saw_cancel.store(true, Ordering::SeqCst);
                ToolOutput::error("slow: cancelled")
            }
            () = tokio::time::sleep(Duration::from_secs(30)) => ToolOutput::text("slow: done"),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Harness

/// Short backoffs so retries cost milliseconds; a generous idle timeout (tests of the idle
/// timeout shorten it themselves).
fn fast_http() -> HttpOptions {
    HttpOptions {
        idle_timeout: Duration::from_secs(10),
        connect_timeout: Duration::from_secs(2),
        max_retries: 4,
        initial_backoff: Duration::from_millis(5),
        max_backoff: Duration::from_millis(20),
        ..HttpOptions::default()
    }
}

struct Harness {
    wire: Wire,
    mock: MockLlm,
    engine: Engine,
    probe: Arc<Probe>,
    slow: Arc<SlowTool>,
    /// The working directory of the built-in tools (holds `a.txt` and `b.txt`).
    _dir: tempfile::TempDir,
}

async fn harness(wire: Wire, script: Value) -> Harness {
    harness_with(wire, script, fast_http(), |_| {}).await
}

async fn harness_with(
    wire: Wire,
    script: Value,
    http: HttpOptions,
    configure: impl FnOnce(&mut EngineConfig),
) -> Harness {
    let mock = MockLlm::start_json(script).await.expect("mock-llm starts");
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("a.txt"), "hello from a\n").expect("write a.txt");
    std::fs::write(dir.path().join("b.txt"), "hello from b\n").expect("write b.txt");

    let probe = Arc::new(Probe::default());
    let slow = Arc::new(SlowTool::default());
    let builtins = Builtins::new(BuiltinToolsConfig {
        session_dir: Some(dir.path().join(".session")),
        ..BuiltinToolsConfig::default()
    });
    let mut tools = ToolRegistry::new();
    tools.register(Arc::new(ReadTool::new(&builtins)));
    tools.register(Arc::new(GlobTool::new(&builtins)));
    tools.register(Arc::new(ProbeRead(probe.clone())));
    tools.register(Arc::new(ProbeWrite(probe.clone())));
    tools.register(slow.clone());

    let mut config = EngineConfig {
        system_prompt: Some(SYSTEM_PROMPT.into()),
        cwd: dir.path().to_path_buf(),
        ..EngineConfig::default()
    };
    configure(&mut config);
    let engine = Engine::new(wire.provider(&mock, http), tools, config);
    Harness {
        wire,
        mock,
        engine,
        probe,
        slow,
        _dir: dir,
    }
}

impl Harness {
    /// Runs `prompt` with event collection.
    async fn run(&self, conversation: &mut Conversation, prompt: &str) -> (RunOutcome, Events) {
        let events = Events::default();
        let outcome = self
            .engine
            .run(conversation, Message::user(prompt), events.options())
            .await;
        (outcome, events)
    }

    /// The JSON bodies of the model requests mock-llm received, in order (each checked to have
    /// gone to this wire's endpoint).
    fn bodies(&self) -> Vec<Value> {
        self.mock
            .requests()
            .into_iter()
            .map(|request| {
                assert_eq!(request.method, "POST");
                assert_eq!(request.path, self.wire.path(), "endpoint");
                request.body
            })
            .collect()
    }

    /// The transcript (see [`transcript`]) of request `index`.
    fn sent(&self, index: usize) -> Vec<String> {
        let bodies = self.bodies();
        let body = bodies
            .get(index)
            .unwrap_or_else(|| panic!("no request #{index}; {} were made", bodies.len()));
        transcript(self.wire, body)
    }
}

/// Collects both event streams of a run; optionally cancels after the n-th text delta (from
/// inside the callback, as a UI's "stop" handler would).
#[derive(Clone, Default)]
struct Events {
    engine: Arc<Mutex<Vec<EngineEvent>>>,
    execution: Arc<Mutex<Vec<ExecutionEvent>>>,
}

impl Events {
    fn options(&self) -> RunOptions {
        let engine = self.engine.clone();
        let execution = self.execution.clone();
        RunOptions::new()
            .with_on_event(move |event| engine.lock().unwrap().push(event))
            .with_on_execution_event(move |event| execution.lock().unwrap().push(event))
    }

    fn engine(&self) -> Vec<EngineEvent> {
        self.engine.lock().unwrap().clone()
    }

    fn execution(&self) -> Vec<ExecutionEvent> {
        self.execution.lock().unwrap().clone()
    }

    fn text_deltas(&self) -> Vec<String> {
        self.engine()
            .into_iter()
            .filter_map(|event| match event {
                EngineEvent::TextDelta { text } => Some(text),
                _ => None,
            })
            .collect()
    }

    /// The events as short lines, consecutive text (and thinking) deltas joined into one line.
    fn story(&self) -> Vec<String> {
        story(&self.engine())
    }

    /// `(attempt, max_attempts, delay_ms, error kind, status)` of every provider_retry event.
    fn retries(&self) -> Vec<(u32, u32, u64, ProviderErrorKind, Option<u16>)> {
        self.engine()
            .into_iter()
            .filter_map(|event| match event {
                EngineEvent::ProviderRetry {
                    attempt,
                    max_attempts,
                    delay_ms,
                    error,
                } => Some((attempt, max_attempts, delay_ms, error.kind, error.status)),
                _ => None,
            })
            .collect()
    }
}

/// One line per event: `text "…"`, `thinking "…"`, `tool_start <id> <name>`,
/// `tool_end <id> <name> ok|error`, `retry <attempt>/<max> <kind>`, `assistant complete|interrupted`.
/// Built from the events' JSON so that an event kind this file does not know still shows up.
fn story(events: &[EngineEvent]) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut open: Option<(&'static str, String)> = None;
    for event in events {
        let json = serde_json::to_value(event).expect("events serialize");
        let kind = json["type"].as_str().unwrap_or("?").to_string();
        let text_kind = match kind.as_str() {
            "text_delta" => Some("text"),
            "thinking" => Some("thinking"),
            _ => None,
        };
        if let Some(text_kind) = text_kind {
            let piece = json["text"].as_str().unwrap_or_default();
            match &mut open {
                Some((open_kind, buffer)) if *open_kind == text_kind => buffer.push_str(piece),
                _ => {
                    if let Some((k, buffer)) = open.take() {
                        lines.push(format!("{k} {buffer:?}"));
                    }
                    open = Some((text_kind, piece.to_string()));
                }
            }
            continue;
        }
        if let Some((k, buffer)) = open.take() {
            lines.push(format!("{k} {buffer:?}"));
        }
        let line = match kind.as_str() {
            "tool_start" => format!(
                "tool_start {} {}",
                json["tool_use_id"].as_str().unwrap_or("?"),
                json["name"].as_str().unwrap_or("?")
            ),
            "tool_end" => format!(
                "tool_end {} {} {}",
                json["tool_use_id"].as_str().unwrap_or("?"),
                json["name"].as_str().unwrap_or("?"),
                if json["output"]["is_error"] == true {
                    "error"
                } else {
                    "ok"
                }
            ),
            "provider_retry" => format!(
                "retry {}/{} {}",
                json["attempt"],
                json["max_attempts"],
                json["error"]["kind"].as_str().unwrap_or("?")
            ),
            "assistant_message" => format!(
                "assistant {}",
                json["message"]["state"].as_str().unwrap_or("?")
            ),
            other => format!("{other} {json}"),
        };
        lines.push(line);
    }
    if let Some((k, buffer)) = open.take() {
        lines.push(format!("{k} {buffer:?}"));
    }
    lines
}

fn lines(expected: &[&str]) -> Vec<String> {
    expected.iter().map(|line| line.to_string()).collect()
}

fn messages(conversation: &Conversation) -> Vec<Message> {
    conversation.messages().cloned().collect()
}

/// `role: text` per message of the stored conversation (tool blocks shown as in [`transcript`]).
fn stored(conversation: &Conversation) -> Vec<String> {
    let mut out = Vec::new();
    for message in conversation.messages() {
        let role = match message.role {
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::System => "system",
            Role::Tool => "tool",
        };
        let state = match message.state {
            MessageState::Complete => "",
            MessageState::Interrupted => " (interrupted)",
        };
        for block in &message.content {
            out.push(match block {
                ContentBlock::Text { text, .. } => format!("{role}{state}: {text}"),
                ContentBlock::Thinking { thinking, .. } => {
                    format!("{role}{state}: thinking {thinking}")
                }
                ContentBlock::ToolUse { id, name, input } => {
                    format!("{role}{state}: tool_use {id} {name} {input}")
                }
                ContentBlock::ToolResult {
                    tool_use_id,
                    content,
                    is_error,
                } => format!(
                    "{role}: result {tool_use_id}{}: {content}",
                    if *is_error { " (error)" } else { "" }
                ),
            });
        }
        if message.content.is_empty() {
            out.push(format!("{role}{state}: <empty>"));
        }
    }
    out
}

/// Every assistant `tool_use` is answered by exactly one tool message, in call order, right after
/// its assistant message; no tool message answers anything else.
fn assert_history_consistent(conversation: &Conversation) {
    let all = messages(conversation);
    let mut i = 0;
    while i < all.len() {
        let message = &all[i];
        i += 1;
        if message.role != Role::Assistant {
            assert_ne!(
                message.role,
                Role::Tool,
                "tool message without a tool_use before it: {all:#?}"
            );
            continue;
        }
        for (id, _, _) in message.tool_uses() {
            let answer = all
                .get(i)
                .unwrap_or_else(|| panic!("tool_use {id} has no result: {all:#?}"));
            assert_eq!(
                answer.role,
                Role::Tool,
                "tool_use {id} is not answered next"
            );
            match &answer.content[..] {
                [ContentBlock::ToolResult { tool_use_id, .. }] => assert_eq!(tool_use_id, id),
                other => panic!("unexpected tool message content {other:?}"),
            }
            i += 1;
        }
    }
}

/// Every tool_start has exactly one tool_end after it, and nothing else is started twice.
fn assert_tool_events_paired(events: &[EngineEvent]) {
    let mut open: Vec<(String, String)> = Vec::new();
    let mut ended = 0usize;
    for event in events {
        match event {
            EngineEvent::ToolStart {
                tool_use_id, name, ..
            } => open.push((tool_use_id.clone(), name.clone())),
            EngineEvent::ToolEnd {
                tool_use_id, name, ..
            } => {
                let position = open
                    .iter()
                    .position(|(id, n)| id == tool_use_id && n == name)
                    .unwrap_or_else(|| panic!("tool_end {tool_use_id} without tool_start"));
                open.remove(position);
                ended += 1;
            }
            _ => {}
        }
    }
    assert!(
        open.is_empty(),
        "tool calls started but never ended: {open:?}"
    );
    assert!(ended > 0, "no tool calls at all");
}

/// A provider-neutral view of a request body, one line per content item:
///
/// - `system: …`
/// - `user: …` / `assistant: …` (text)
/// - `assistant: thinking … [sig]`
/// - `assistant: tool_use <id> <name> <arguments as compact JSON, or the raw text>`
/// - `result <id>: <content>`
///
/// Anthropic's `tool_result` blocks inside user messages and OpenAI's `tool` messages both become
/// `result` lines, so both wires can be compared against one expectation. The exact wire shapes
/// are asserted separately where they matter.
fn transcript(wire: Wire, body: &Value) -> Vec<String> {
    let mut out = Vec::new();
    match wire {
        Wire::Anthropic => {
            if let Some(system) = anthropic_system(body) {
                out.push(format!("system: {system}"));
            }
            for message in body["messages"].as_array().expect("messages") {
                let role = message["role"].as_str().expect("role");
                for block in message["content"].as_array().expect("content blocks") {
                    out.push(match block["type"].as_str().expect("block type") {
                        "text" => format!("{role}: {}", block["text"].as_str().unwrap()),
                        "thinking" => format!(
                            "{role}: thinking {} [{}]",
                            block["thinking"].as_str().unwrap(),
                            block["signature"].as_str().unwrap_or("-")
                        ),
                        "tool_use" => format!(
                            "{role}: tool_use {} {} {}",
                            block["id"].as_str().unwrap(),
                            block["name"].as_str().unwrap(),
                            block["input"]
                        ),
                        "tool_result" => {
                            assert_eq!(role, "user", "tool results travel in user messages");
                            format!(
                                "result {}: {}",
                                block["tool_use_id"].as_str().unwrap(),
                                block["content"].as_str().unwrap_or("")
                            )
                        }
                        other => panic!("unexpected block type {other}"),
                    });
                }
            }
        }
        Wire::OpenAi => {
            for message in body["messages"].as_array().expect("messages") {
                let role = message["role"].as_str().expect("role");
                match role {
                    "tool" => out.push(format!(
                        "result {}: {}",
                        message["tool_call_id"].as_str().unwrap(),
                        message["content"].as_str().unwrap()
                    )),
                    _ => {
                        if let Some(text) = message["content"].as_str() {
                            out.push(format!("{role}: {text}"));
                        }
                        for call in message["tool_calls"].as_array().into_iter().flatten() {
                            assert_eq!(call["type"], "function");
                            let raw = call["function"]["arguments"].as_str().unwrap();
                            let arguments = serde_json::from_str::<Value>(raw)
                                .map(|v| v.to_string())
                                .unwrap_or_else(|_| raw.to_string());
                            out.push(format!(
                                "{role}: tool_use {} {} {arguments}",
                                call["id"].as_str().unwrap(),
                                call["function"]["name"].as_str().unwrap()
                            ));
                        }
                    }
                }
            }
        }
    }
    out
}

/// The tool names offered in a request body.
fn offered_tools(wire: Wire, body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|tool| {
                    let name = match wire {
                        Wire::Anthropic => &tool["name"],
                        Wire::OpenAi => {
                            assert_eq!(tool["type"], "function");
                            &tool["function"]["name"]
                        }
                    };
                    name.as_str().unwrap().to_string()
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Anthropic's `is_error` flags of the tool results in a body, by tool_use_id (OpenAI has no such
/// field; its tool messages are checked for carrying none).
fn result_error_flags(wire: Wire, body: &Value) -> Vec<(String, Option<bool>)> {
    let mut out = Vec::new();
    for message in body["messages"].as_array().expect("messages") {
        match wire {
            Wire::Anthropic => {
                for block in message["content"].as_array().into_iter().flatten() {
                    if block["type"] == "tool_result" {
                        out.push((
                            block["tool_use_id"].as_str().unwrap().to_string(),
                            block["is_error"].as_bool(),
                        ));
                    }
                }
            }
            Wire::OpenAi => {
                if message["role"] == "tool" {
                    out.push((
                        message["tool_call_id"].as_str().unwrap().to_string(),
                        message.get("is_error").and_then(Value::as_bool),
                    ));
                }
            }
        }
    }
    out
}

/// The system prompt of an Anthropic body: a string, or (with prompt caching) one text block.
fn anthropic_system(body: &Value) -> Option<String> {
    match &body["system"] {
        Value::String(text) => Some(text.clone()),
        Value::Array(blocks) => Some(
            blocks
                .iter()
                .filter_map(|b| b["text"].as_str())
                .collect::<Vec<_>>()
                .join(""),
        ),
        _ => None,
    }
}

/// The fields every request from these engines carries, whatever the round.
fn assert_common_request_fields(wire: Wire, body: &Value) {
    assert_eq!(body["model"], wire.model());
    assert_eq!(body["stream"], true);
    match wire {
        Wire::Anthropic => {
            assert!(body["max_tokens"].as_u64().unwrap_or(0) > 0, "max_tokens");
            assert_eq!(anthropic_system(body).as_deref(), Some(SYSTEM_PROMPT));
        }
        Wire::OpenAi => {
            assert_eq!(body["stream_options"], json!({"include_usage": true}));
            assert_eq!(
                body["messages"][0],
                json!({"role": "system", "content": SYSTEM_PROMPT})
            );
        }
    }
}

fn tool_call(id: &str, name: &str, input: Value) -> Value {
    json!({"id": id, "name": name, "input": input})
}

fn text_turn(text: &str) -> Value {
    json!({"text": text})
}

fn assert_completed(outcome: &RunOutcome, response: &str) {
    assert_eq!(
        outcome.stop_reason,
        RunStopReason::Completed,
        "{outcome:#?}"
    );
    assert_eq!(outcome.response, response);
    assert!(!outcome.interrupted);
    assert!(outcome.error.is_none());
}

// ---------------------------------------------------------------------------------------------
// Plain text, tools, thinking, usage

async fn plain_text(wire: Wire) {
    let h = harness(
        wire,
        json!({"turns": [{
            "text": ["Hel", "lo, ", "wörld ✓"],
            "usage": {"input_tokens": 12, "output_tokens": 5}
        }]}),
    )
    .await;
    let mut conversation = Conversation::new();
    let (outcome, events) = h.run(&mut conversation, "Hi").await;

    assert_completed(&outcome, "Hello, wörld ✓");
    assert_eq!(outcome.rounds, 1);
    assert!(outcome.tools_executed.is_empty());
    assert_eq!(outcome.usage.input_tokens, 12);
    assert_eq!(outcome.usage.output_tokens, 5);
    // Each delta reaches the host as it arrived, then the committed message.
    assert_eq!(events.text_deltas(), ["Hel", "lo, ", "wörld ✓"]);
    assert_eq!(
        events.story(),
        lines(&["text \"Hello, wörld ✓\"", "assistant complete"])
    );

    assert_eq!(
        stored(&conversation),
        lines(&["user: Hi", "assistant: Hello, wörld ✓"])
    );
    let answer = conversation.last_message().unwrap();
    assert_eq!(
        answer.metadata["model"],
        wire.model(),
        "model echoed by mock"
    );
    assert_eq!(answer.metadata["stop_reason"], "end_turn");
    assert_eq!(answer.usage.map(|u| u.output_tokens), Some(5));

    // What was sent, field by field.
    let bodies = h.bodies();
    assert_eq!(bodies.len(), 1);
    let body = &bodies[0];
    assert_common_request_fields(wire, body);
    assert_eq!(offered_tools(wire, body), TOOL_NAMES);
    assert!(body.get("tool_choice").is_none(), "auto by default");
    match wire {
        Wire::Anthropic => {
            assert_eq!(
                body["messages"],
                json!([{"role": "user", "content": [{"type": "text", "text": "Hi"}]}])
            );
            assert_eq!(body["tools"][1]["name"], "Read");
            assert!(body["tools"][1]["input_schema"]["properties"]["file_path"].is_object());
            let headers = &h.mock.requests()[0].headers;
            assert_eq!(headers["x-api-key"], "sk-ant-test");
            assert_eq!(headers["anthropic-version"], "2023-06-01");
        }
        Wire::OpenAi => {
            assert_eq!(
                body["messages"],
                json!([
                    {"role": "system", "content": SYSTEM_PROMPT},
                    {"role": "user", "content": "Hi"}
                ])
            );
            assert_eq!(body["tools"][1]["function"]["name"], "Read");
            assert!(
                body["tools"][1]["function"]["parameters"]["properties"]["file_path"].is_object()
            );
            let headers = &h.mock.requests()[0].headers;
            assert_eq!(headers["authorization"], "Bearer sk-openai-test");
        }
    }
}

/// One response calling the real Glob and Read on a temp dir plus a mutating tool; the results go
/// back in call order with the provider's ids, in the provider's wire shape.
async fn multi_tool_turn(wire: Wire) {
    let h = harness(
        wire,
        json!({"turns": [
            {
                "text": "Let me look.",
                "tool_calls": [
                    tool_call("call_glob", "Glob", json!({"pattern": "*.txt"})),
                    tool_call("call_read", "Read", json!({"file_path": "a.txt"})),
                    tool_call("call_write", "write", json!({"label": "notes"})),
                ],
                "usage": {"input_tokens": 100, "output_tokens": 20}
            },
            {"text": ["a.txt says ", "hello."], "usage": {"input_tokens": 150, "output_tokens": 8}}
        ]}),
    )
    .await;
    let mut conversation = Conversation::new();
    let (outcome, events) = h.run(&mut conversation, "What is in a.txt?").await;

    assert_completed(&outcome, "a.txt says hello.");
    assert_eq!(outcome.rounds, 2);
    assert_eq!(outcome.tools_executed, ["Glob", "Read", "write"]);
    assert!(!h.probe.mutation_overlapped.load(Ordering::SeqCst));

    // Glob and Read are read-only and run together; write runs after both.
    let story = events.story();
    assert_eq!(story[0], "text \"Let me look.\"");
    assert_eq!(story[1], "assistant complete");
    let mut tool_lines = story[2..6].to_vec();
    tool_lines.sort();
    assert_eq!(
        tool_lines,
        lines(&[
            "tool_end call_glob Glob ok",
            "tool_end call_read Read ok",
            "tool_start call_glob Glob",
            "tool_start call_read Read",
        ])
    );
    assert_eq!(
        story[6..],
        lines(&[
            "tool_start call_write write",
            "tool_end call_write write ok",
            "text \"\\n\\na.txt says hello.\"",
            "assistant complete",
        ])[..]
    );
    assert_tool_events_paired(&events.engine());
    let batch = events
        .execution()
        .into_iter()
        .find_map(|event| match event {
            ExecutionEvent::ToolBatchStarted { mode, tools, .. } => Some((mode, tools)),
            _ => None,
        })
        .expect("tool_batch_started");
    assert_eq!(batch.0, BatchMode::Mixed);
    assert_eq!(batch.1, ["Glob", "Read", "write"]);

    assert_history_consistent(&conversation);
    let all = messages(&conversation);
    assert_eq!(all.len(), 6, "{:#?}", stored(&conversation));
    let results: Vec<&str> = all[2..5]
        .iter()
        .map(|m| match &m.content[0] {
            ContentBlock::ToolResult { content, .. } => content.as_str(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert!(
        results[0].contains("a.txt") && results[0].contains("b.txt"),
        "{}",
        results[0]
    );
    assert!(results[1].contains("hello from a"), "{}", results[1]);
    assert_eq!(results[2], "wrote notes");

    // Round 2 carries the call and its three results, with the provider's ids, in its shape.
    let bodies = h.bodies();
    assert_eq!(bodies.len(), 2);
    assert_common_request_fields(wire, &bodies[1]);
    let (glob, read) = (results[0], results[1]);
    match wire {
        Wire::Anthropic => assert_eq!(
            bodies[1]["messages"],
            json!([
                {"role": "user", "content": [{"type": "text", "text": "What is in a.txt?"}]},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "Let me look."},
                    {"type": "tool_use", "id": "call_glob", "name": "Glob", "input": {"pattern": "*.txt"}},
                    {"type": "tool_use", "id": "call_read", "name": "Read", "input": {"file_path": "a.txt"}},
                    {"type": "tool_use", "id": "call_write", "name": "write", "input": {"label": "notes"}},
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "call_glob", "content": glob, "is_error": false},
                    {"type": "tool_result", "tool_use_id": "call_read", "content": read, "is_error": false},
                    {"type": "tool_result", "tool_use_id": "call_write", "content": "wrote notes", "is_error": false},
                ]},
            ])
        ),
        Wire::OpenAi => assert_eq!(
            bodies[1]["messages"],
            json!([
                {"role": "system", "content": SYSTEM_PROMPT},
                {"role": "user", "content": "What is in a.txt?"},
                {"role": "assistant", "content": "Let me look.", "tool_calls": [
                    {"id": "call_glob", "type": "function", "function": {"name": "Glob", "arguments": "{\"pattern\":\"*.txt\"}"}},
                    {"id": "call_read", "type": "function", "function": {"name": "Read", "arguments": "{\"file_path\":\"a.txt\"}"}},
                    {"id": "call_write", "type": "function", "function": {"name": "write", "arguments": "{\"label\":\"notes\"}"}},
                ]},
                {"role": "tool", "tool_call_id": "call_glob", "content": glob},
                {"role": "tool", "tool_call_id": "call_read", "content": read},
                {"role": "tool", "tool_call_id": "call_write", "content": "wrote notes"},
            ])
        ),
    }
}

/// Tool arguments arrive in pieces that cut keys, escapes and a multi-byte character's neighbours,
/// on a byte stream itself cut every 5 bytes with CRLF framing and comments; the tool gets the
/// exact object.
async fn streamed_tool_arguments_split_across_chunks(wire: Wire) {
    let chunks = [
        "{\"la",
        "bel\": \"",
        "mu\\\"lti ",
        "pièce ✓\", \"sl",
        "eep_ms\": 1}",
    ];
    let h = harness(
        wire,
        json!({"turns": [
            {
                "tool_calls": [{"id": "call_split", "name": "read", "arguments_chunks": chunks}],
                "split_bytes": 5,
                "sse": {"crlf": true, "comments": true}
            },
            {"text": "Done."}
        ]}),
    )
    .await;
    let mut conversation = Conversation::new();
    let (outcome, events) = h.run(&mut conversation, "read it").await;

    assert_completed(&outcome, "Done.");
    let expected_input = json!({"label": "mu\"lti pièce ✓", "sleep_ms": 1});
    let start = events
        .engine()
        .into_iter()
        .find_map(|event| match event {
            EngineEvent::ToolStart { input, .. } => Some(input),
            _ => None,
        })
        .expect("tool_start");
    assert_eq!(start, expected_input);
    assert_eq!(
        events.story(),
        lines(&[
            "assistant complete",
            "tool_start call_split read",
            "tool_end call_split read ok",
            "text \"\\n\\nDone.\"",
            "assistant complete",
        ])
    );
    assert_history_consistent(&conversation);
    assert_eq!(
        stored(&conversation),
        vec![
            "user: read it".to_string(),
            format!("assistant: tool_use call_split read {expected_input}"),
            "tool: result call_split: read mu\"lti pièce ✓".to_string(),
            "assistant: Done.".to_string(),
        ]
    );
    // The model gets back the arguments it sent, reassembled.
    assert_eq!(
        h.sent(1)[2..],
        vec![
            format!("assistant: tool_use call_split read {expected_input}"),
            "result call_split: read mu\"lti pièce ✓".to_string(),
        ][..]
    );
}

/// Thinking streams as thinking events, is stored with the answer and (Anthropic, signed) is sent
/// back with the tool round; OpenAI has no slot for it and sends none back.
async fn thinking(wire: Wire) {
    let h = harness_with(
        wire,
        json!({"turns": [
            {
                "thinking": ["Let me ", "think."],
                "text": "Checking.",
                "tool_calls": [tool_call("call_t", "read", json!({"label": "t"}))]
            },
            {"thinking": "Got it.", "text": "It is t."}
        ]}),
        fast_http(),
        |config| {
            config.thinking = Some(ThinkingConfig {
                budget_tokens: 2048,
            })
        },
    )
    .await;
    let mut conversation = Conversation::new();
    let (outcome, events) = h.run(&mut conversation, "Think first").await;

    assert_completed(&outcome, "It is t.");
    assert_eq!(
        events.story(),
        lines(&[
            "thinking \"Let me think.\"",
            "text \"Checking.\"",
            "assistant complete",
            "tool_start call_t read",
            "tool_end call_t read ok",
            "text \"\\n\\n\"",
            "thinking \"Got it.\"",
            "text \"It is t.\"",
            "assistant complete",
        ])
    );
    let first = &messages(&conversation)[1];
    let signature = match wire {
        Wire::Anthropic => Some("sig_mock".to_string()),
        Wire::OpenAi => None,
    };
    assert_eq!(
        first.content[0],
        ContentBlock::Thinking {
            thinking: "Let me think.".into(),
            signature
        }
    );
    assert_history_consistent(&conversation);

    let bodies = h.bodies();
    match wire {
        Wire::Anthropic => {
            assert_eq!(
                bodies[0]["thinking"],
                json!({"type": "enabled", "budget_tokens": 2048})
            );
            assert!(bodies[0]["max_tokens"].as_u64().unwrap() > 2048);
            // The signed thinking block goes back first in the assistant turn.
            assert_eq!(
                bodies[1]["messages"][1]["content"][0],
                json!({"type": "thinking", "thinking": "Let me think.", "signature": "sig_mock"})
            );
        }
        Wire::OpenAi => {
            assert!(bodies[0].get("thinking").is_none());
            assert_eq!(
                bodies[1]["messages"][2],
                json!({"role": "assistant", "content": "Checking.", "tool_calls": [
                    {"id": "call_t", "type": "function", "function": {"name": "read", "arguments": "{\"label\":\"t\"}"}}
                ]})
            );
        }
    }
}

/// Per-call usage lands on each assistant message; the outcome sums the calls. OpenAI reports
/// cache writes as plain prompt tokens, so they count as uncached input there.
async fn usage_is_summed_over_rounds(wire: Wire) {
    let h = harness(
        wire,
        json!({"turns": [
            {
                "tool_calls": [tool_call("call_u", "read", json!({"label": "u"}))],
                "usage": {"input_tokens": 100, "output_tokens": 20,
                          "cache_creation_input_tokens": 7, "cache_read_input_tokens": 30}
            },
            {
                "text": "Done.",
                "usage": {"input_tokens": 150, "output_tokens": 8,
                          "cache_creation_input_tokens": 0, "cache_read_input_tokens": 130}
            }
        ]}),
    )
    .await;
    let mut conversation = Conversation::new();
    let (outcome, _) = h.run(&mut conversation, "Use tools").await;
    assert_completed(&outcome, "Done.");

    let per_call = |input, output, creation, read| match wire {
        Wire::Anthropic => Usage {
            input_tokens: input,
            output_tokens: output,
            cache_creation_input_tokens: creation,
            cache_read_input_tokens: read,
        },
        Wire::OpenAi => Usage {
            input_tokens: input + creation,
            output_tokens: output,
            cache_creation_input_tokens: 0,
            cache_read_input_tokens: read,
        },
    };
    let first = per_call(100, 20, 7, 30);
    let second = per_call(150, 8, 0, 130);
    let all = messages(&conversation);
    assert_eq!(all[1].usage, Some(first));
    assert_eq!(all[3].usage, Some(second));
    let mut total = first;
    total.add(&second);
    assert_eq!(outcome.usage, total);
    assert_eq!(
        outcome.usage.total_tokens(),
        100 + 20 + 7 + 30 + 150 + 8 + 130
    );
}

// ---------------------------------------------------------------------------------------------
// Faults

/// After a failed (or retried) first run, a second run on the same conversation completes and
/// sends the whole history.
async fn second_run_works(h: &Harness, conversation: &mut Conversation) -> Vec<String> {
    let before = h.bodies().len();
    let (outcome, events) = h.run(conversation, "Try again").await;
    assert_completed(&outcome, "Recovered.");
    assert_eq!(
        events.story(),
        lines(&["text \"Recovered.\"", "assistant complete"])
    );
    assert_history_consistent(conversation);
    assert_eq!(
        h.bodies().len(),
        before + 1,
        "one request for the second run"
    );
    let sent = h.sent(before);
    assert_eq!(sent.last().map(String::as_str), Some("user: Try again"));
    sent
}

async fn rate_limit_with_retry_after_then_success(wire: Wire) {
    let h = harness(
        wire,
        json!({"turns": [
            {"fault": {"kind": "status", "status": 429, "retry_after": "1"}},
            {"text": ["Fine, ", "now."], "usage": {"input_tokens": 3, "output_tokens": 2}},
        ]}),
    )
    .await;
    let mut conversation = Conversation::new();
    let (outcome, events) = h.run(&mut conversation, "Hi").await;

    assert_completed(&outcome, "Fine, now.");
    assert_eq!(outcome.rounds, 1);
    assert_eq!(outcome.usage.output_tokens, 2);
    // The wait the server asked for is honoured (the backoff ceiling alone would be 5 ms).
    assert_eq!(
        events.retries(),
        [(1, 5, 1000, ProviderErrorKind::RateLimit, Some(429))]
    );
    assert_eq!(
        events.story(),
        lines(&[
            "retry 1/5 rate_limit",
            "text \"Fine, now.\"",
            "assistant complete"
        ])
    );
    assert_eq!(
        stored(&conversation),
        lines(&["user: Hi", "assistant: Fine, now."])
    );
    // The same request was sent twice.
    let bodies = h.bodies();
    assert_eq!(bodies.len(), 2);
    assert_eq!(bodies[0], bodies[1]);
}

async fn overloaded_and_server_errors_then_success(wire: Wire) {
    let h = harness(
        wire,
        json!({"turns": [
            {"fault": {"kind": "status", "status": 529}},
            {"fault": {"kind": "status", "status": 500}},
            {"fault": {"kind": "status", "status": 503}},
            {"fault": {"kind": "status", "status": 502}},
            {"text": "Recovered."},
            {"text": "Recovered."},
        ]}),
    )
    .await;
    let mut conversation = Conversation::new();
    let (outcome, events) = h.run(&mut conversation, "Hi").await;

    assert_completed(&outcome, "Recovered.");
    let retries: Vec<_> = events
        .retries()
        .into_iter()
        .map(|(attempt, max, _, kind, status)| (attempt, max, kind, status))
        .collect();
    assert_eq!(
        retries,
        [
            (1, 5, ProviderErrorKind::Overloaded, Some(529)),
            (2, 5, ProviderErrorKind::Provider, Some(500)),
            (3, 5, ProviderErrorKind::Provider, Some(503)),
            (4, 5, ProviderErrorKind::Provider, Some(502)),
        ]
    );
    assert_eq!(
        events.story()[4..],
        lines(&["text \"Recovered.\"", "assistant complete"])[..]
    );
    assert_eq!(h.bodies().len(), 5);
    assert_eq!(
        stored(&conversation),
        lines(&["user: Hi", "assistant: Recovered."])
    );
    second_run_works(&h, &mut conversation).await;
}

/// A connection reset, a stall and an in-stream overloaded error before anything reached the host
/// are retried; the answer then arrives once.
async fn transport_failures_before_any_output_are_retried(wire: Wire) {
    let http = HttpOptions {
        idle_timeout: Duration::from_millis(300),
        ..fast_http()
    };
    let h = harness_with(
        wire,
        json!({"turns": [
            {"text": "lost", "fault": {"kind": "reset", "after_events": 1}},
            {"text": "lost", "fault": {"kind": "reset", "after_events": 1, "close": "fin"}},
            {"text": "lost", "fault": {"kind": "stall", "after_events": 1, "ms": 10000}},
            {"text": "lost", "fault": {"kind": "stream_error", "after_events": 1}},
            {"text": ["Got ", "there."]},
        ]}),
        http,
        |_| {},
    )
    .await;
    let mut conversation = Conversation::new();
    let started = Instant::now();
    let (outcome, events) = h.run(&mut conversation, "Hi").await;

    assert_completed(&outcome, "Got there.");
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "the stall was cut by the idle timeout"
    );
    let kinds: Vec<_> = events
        .retries()
        .into_iter()
        .map(|(attempt, _, _, kind, _)| (attempt, kind))
        .collect();
    assert_eq!(
        kinds,
        [
            (1, ProviderErrorKind::Network),
            (2, ProviderErrorKind::Network),
            (3, ProviderErrorKind::Network),
            (4, wire.default_stream_error_kind()),
        ]
    );
    assert_eq!(
        events.story()[4..],
        lines(&["text \"Got there.\"", "assistant complete"])[..]
    );
    assert_eq!(
        stored(&conversation),
        lines(&["user: Hi", "assistant: Got there."])
    );
    assert_eq!(h.bodies().len(), 5);
}

/// The first run ends in a non-retryable `kind` error before any output: the typed error, no
/// events, nothing but the user message stored, one request; the next run sends both user
/// messages and completes. Returns the first run's outcome.
async fn assert_fails_before_output(
    h: &Harness,
    kind: ProviderErrorKind,
    status: Option<u16>,
) -> RunOutcome {
    let mut conversation = Conversation::new();
    let (outcome, events) = h.run(&mut conversation, "Hi").await;
    assert_eq!(outcome.stop_reason, RunStopReason::Error, "{outcome:#?}");
    assert!(!outcome.interrupted);
    assert_eq!(outcome.response, "");
    assert_eq!(outcome.rounds, 1);
    let error = outcome.error.clone().expect("error");
    assert_eq!(error.kind, kind, "{error}");
    assert_eq!(error.status, status, "{error}");
    assert_eq!(error.provider, h.wire.provider_name());
    assert!(events.engine().is_empty(), "{:?}", events.story());
    assert!(events.execution().iter().any(
        |event| matches!(event, ExecutionEvent::ProviderError { error, .. } if error.kind == kind)
    ));
    assert_eq!(stored(&conversation), lines(&["user: Hi"]));
    assert_eq!(h.bodies().len(), 1, "not retried");

    let sent = second_run_works(h, &mut conversation).await;
    assert_eq!(
        sent,
        vec![
            format!("system: {SYSTEM_PROMPT}"),
            "user: Hi".to_string(),
            "user: Try again".to_string()
        ]
    );
    if h.wire == Wire::Anthropic {
        // Consecutive user messages are merged: the API wants alternating roles.
        assert_eq!(
            h.bodies()[1]["messages"],
            json!([{"role": "user", "content": [
                {"type": "text", "text": "Hi"},
                {"type": "text", "text": "Try again"}
            ]}])
        );
    }
    assert_eq!(
        stored(&conversation),
        lines(&["user: Hi", "user: Try again", "assistant: Recovered."])
    );
    outcome
}

/// Five 503s: four retries, then the last error is the run's.
async fn retries_run_out(wire: Wire) {
    let mut turns = vec![json!({"fault": {"kind": "status", "status": 503}}); 5];
    turns.push(text_turn("Recovered."));
    let h = harness(wire, json!({ "turns": turns })).await;
    let mut conversation = Conversation::new();
    let (outcome, events) = h.run(&mut conversation, "Hi").await;

    assert_eq!(outcome.stop_reason, RunStopReason::Error);
    let error = outcome.error.expect("error");
    assert_eq!(
        (error.kind, error.status),
        (ProviderErrorKind::Provider, Some(503))
    );
    assert_eq!(
        events.story(),
        lines(&[
            "retry 1/5 provider",
            "retry 2/5 provider",
            "retry 3/5 provider",
            "retry 4/5 provider",
        ])
    );
    assert_eq!(h.bodies().len(), 5);
    assert_eq!(stored(&conversation), lines(&["user: Hi"]));
    second_run_works(&h, &mut conversation).await;
}

/// A `retry-after` longer than the retry budget (60 s) ends the call at once with the wait the
/// server asked for, so the host can schedule the retry, and a message that says when the limit
/// resets and why robota did not wait.
async fn retry_after_too_long_to_wait_is_returned(wire: Wire) {
    let h = harness(
        wire,
        json!({"turns": [
            {"fault": {"kind": "status", "status": 429, "retry_after": "120"}},
            text_turn("Recovered."),
        ]}),
    )
    .await;
    let started = Instant::now();
    let outcome = assert_fails_before_output(&h, ProviderErrorKind::RateLimit, Some(429)).await;
    assert!(started.elapsed() < Duration::from_secs(10), "did not wait");
    let error = outcome.error.expect("error");
    assert_eq!(error.retry_after, Some(Duration::from_secs(120)));
    assert!(error.retryable);
    let message = &error.message;
    assert!(message.contains("Rate limit exceeded"), "{message}");
    assert!(
        message.contains("The rate limit resets in 120 s (at 20"),
        "{message}"
    );
    assert!(
        message.contains(
            "robota did not wait, because that is longer than its retry budget of 60 s \
             (HttpOptions.max_retry_wait"
        ),
        "{message}"
    );
    // The typed error reaches hosts as JSON with the wait in milliseconds.
    let json = serde_json::to_value(&error).expect("json");
    assert_eq!(json["retry_after"], 120_000);
    assert_eq!(json["kind"], "rate_limit");
}

/// The retry budget is an option: lowered to 1 s, a 2 s `retry-after` is not waited out either,
/// and the message names the budget in force.
async fn a_lowered_retry_budget_is_named_in_the_error(wire: Wire) {
    let http = HttpOptions {
        max_retry_wait: Duration::from_secs(1),
        ..fast_http()
    };
    let h = harness_with(
        wire,
        json!({"turns": [
            {"fault": {"kind": "status", "status": 429, "retry_after": "2"}},
            text_turn("Recovered."),
        ]}),
        http,
        |_| {},
    )
    .await;
    let outcome = assert_fails_before_output(&h, ProviderErrorKind::RateLimit, Some(429)).await;
    let message = outcome.error.expect("error").message;
    assert!(
        message.contains("resets in 2 s") && message.contains("retry budget of 1 s"),
        "{message}"
    );
}

async fn auth_error_is_not_retried(wire: Wire) {
    let h = harness(
        wire,
        json!({"turns": [
            {"fault": {"kind": "status", "status": 401}},
            text_turn("Recovered."),
        ]}),
    )
    .await;
    assert_fails_before_output(&h, ProviderErrorKind::Auth, Some(401)).await;
}

async fn context_length_error_is_not_retried(wire: Wire) {
    let fault = match wire {
        Wire::Anthropic => json!({"kind": "status", "status": 400,
            "message": "prompt is too long: 210000 tokens > 200000 maximum"}),
        Wire::OpenAi => json!({"kind": "status", "status": 400,
            "message": "This model's maximum context length is 128000 tokens.",
            "code": "context_length_exceeded"}),
    };
    let h = harness(
        wire,
        json!({"turns": [{"fault": fault}, text_turn("Recovered.")]}),
    )
    .await;
    assert_fails_before_output(&h, ProviderErrorKind::ContextLength, Some(400)).await;
}

/// The first run ends in `kind` after "Hel" streamed: the partial answer is committed as
/// interrupted (with the error noted), the next request shows it annotated, and the next run
/// completes.
async fn assert_fails_after_text(
    h: &Harness,
    kind: ProviderErrorKind,
    partial: &str,
) -> RunOutcome {
    let mut conversation = Conversation::new();
    let (outcome, events) = h.run(&mut conversation, "Hi").await;
    assert_eq!(outcome.stop_reason, RunStopReason::Error, "{outcome:#?}");
    assert!(!outcome.interrupted);
    assert_eq!(outcome.response, partial);
    let error = outcome.error.clone().expect("error");
    assert_eq!(error.kind, kind, "{error}");
    assert!(
        error.message.contains("already streamed"),
        "not retried once output reached the host: {error}"
    );
    assert_eq!(
        events.story(),
        vec![
            format!("text {partial:?}"),
            "assistant interrupted".to_string()
        ]
    );
    assert!(events.retries().is_empty());
    assert_eq!(h.bodies().len(), 1, "not retried");

    assert_eq!(
        stored(&conversation),
        vec![
            "user: Hi".to_string(),
            format!("assistant (interrupted): {partial}")
        ]
    );
    let cut = &messages(&conversation)[1];
    assert_eq!(cut.metadata["provider_error"], true);
    assert_eq!(cut.metadata["error_kind"], kind.as_str());

    let sent = second_run_works(h, &mut conversation).await;
    assert_eq!(
        sent,
        vec![
            format!("system: {SYSTEM_PROMPT}"),
            "user: Hi".to_string(),
            format!("assistant: {partial}{PROVIDER_ERROR_ANNOTATION}"),
            "user: Try again".to_string(),
        ]
    );
    outcome
}

fn hello_with_fault(fault: Value) -> Value {
    json!({"turns": [
        {"text": ["Hel", "lo"], "fault": fault},
        text_turn("Recovered."),
    ]})
}

async fn reset_after_text(wire: Wire) {
    let after = wire.events_through_first_text();
    let h = harness(
        wire,
        hello_with_fault(json!({"kind": "reset", "after_events": after})),
    )
    .await;
    assert_fails_after_text(&h, ProviderErrorKind::Network, "Hel").await;
}

async fn stall_after_text_is_an_idle_timeout(wire: Wire) {
    let after = wire.events_through_first_text();
    let http = HttpOptions {
        idle_timeout: Duration::from_millis(300),
        ..fast_http()
    };
    let h = harness_with(
        wire,
        hello_with_fault(json!({"kind": "stall", "after_events": after, "ms": 20000})),
        http,
        |_| {},
    )
    .await;
    let started = Instant::now();
    let outcome = assert_fails_after_text(&h, ProviderErrorKind::Network, "Hel").await;
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "the idle timeout, not the 20 s stall, ended the call"
    );
    let message = outcome.error.map(|e| e.message).unwrap_or_default();
    assert!(message.contains("idle timeout"), "{message}");
}

/// A malformed event is a provider error, not retried (the stream cannot be trusted); before any
/// text, nothing is committed.
async fn malformed_event(wire: Wire) {
    let h = harness(
        wire,
        json!({"turns": [
            {"text": ["Hel", "lo"], "fault": {"kind": "malformed", "after_events": 1}},
            text_turn("Recovered."),
        ]}),
    )
    .await;
    let outcome = assert_fails_before_output(&h, ProviderErrorKind::Provider, None).await;
    let message = outcome.error.map(|e| e.message).unwrap_or_default();
    assert!(message.contains("malformed"), "{message}");
}

async fn missing_terminal_event(wire: Wire) {
    let h = harness(wire, hello_with_fault(json!({"kind": "missing_terminal"}))).await;
    let outcome = assert_fails_after_text(&h, ProviderErrorKind::Provider, "Hello").await;
    let message = outcome.error.map(|e| e.message).unwrap_or_default();
    let terminal = match wire {
        Wire::Anthropic => "message_stop",
        Wire::OpenAi => "[DONE]",
    };
    assert!(message.contains(terminal), "{message}");
}

async fn oversized_event(wire: Wire) {
    let http = HttpOptions {
        max_event_bytes: 64 * 1024,
        ..fast_http()
    };
    let h = harness_with(
        wire,
        json!({"turns": [
            {"text": ["Hel", "lo"], "fault": {"kind": "oversized", "bytes": 200000}},
            text_turn("Recovered."),
        ]}),
        http,
        |_| {},
    )
    .await;
    let outcome = assert_fails_before_output(&h, ProviderErrorKind::Provider, None).await;
    let message = outcome.error.map(|e| e.message).unwrap_or_default();
    assert!(message.contains("max_event_bytes"), "{message}");
}

async fn in_stream_error_after_text(wire: Wire) {
    let after = wire.events_through_first_text();
    let h = harness(
        wire,
        hello_with_fault(json!({"kind": "stream_error", "after_events": after})),
    )
    .await;
    assert_fails_after_text(&h, wire.default_stream_error_kind(), "Hel").await;
}

/// Round 1 runs a tool; round 2's stream breaks after its first delta. The tool round stays
/// paired, round 2's partial text is kept as interrupted, and the next run sends it all.
async fn failure_in_a_later_round_keeps_the_tool_results(wire: Wire) {
    let after = wire.events_through_first_text();
    let h = harness(
        wire,
        json!({"turns": [
            {"text": "Reading.", "tool_calls": [tool_call("call_r", "Read", json!({"file_path": "b.txt"}))],
             "usage": {"input_tokens": 10, "output_tokens": 4}},
            {"text": ["b.txt ", "says hello"], "fault": {"kind": "reset", "after_events": after}},
            text_turn("Recovered."),
        ]}),
    )
    .await;
    let mut conversation = Conversation::new();
    let (outcome, events) = h.run(&mut conversation, "Hi").await;

    assert_eq!(outcome.stop_reason, RunStopReason::Error);
    assert_eq!(
        outcome.error.as_ref().map(|e| e.kind),
        Some(ProviderErrorKind::Network)
    );
    assert_eq!(outcome.rounds, 2);
    assert_eq!(outcome.response, "b.txt ", "the text of the failed call");
    assert_eq!(
        outcome.usage.output_tokens, 4,
        "the completed call's usage is kept"
    );
    assert_eq!(outcome.tools_executed, ["Read"]);
    assert_eq!(
        events.story(),
        lines(&[
            "text \"Reading.\"",
            "assistant complete",
            "tool_start call_r Read",
            "tool_end call_r Read ok",
            "text \"\\n\\nb.txt \"",
            "assistant interrupted",
        ])
    );
    assert_history_consistent(&conversation);
    let all = messages(&conversation);
    assert_eq!(all.len(), 4);
    assert_eq!(all[3].state, MessageState::Interrupted);
    assert_eq!(all[3].text(), "b.txt ");

    let sent = second_run_works(&h, &mut conversation).await;
    assert_eq!(
        sent[3],
        "assistant: tool_use call_r Read {\"file_path\":\"b.txt\"}"
    );
    assert!(
        sent[4].starts_with("result call_r: ") && sent[4].contains("hello from b"),
        "{}",
        sent[4]
    );
    assert_eq!(
        sent[5..],
        vec![
            format!("assistant: b.txt {PROVIDER_ERROR_ANNOTATION}"),
            "user: Try again".to_string(),
        ][..]
    );
}

// ---------------------------------------------------------------------------------------------
// Abort

/// The partial answer is committed as interrupted; the next request shows it with the annotation.
async fn assert_abort_committed(
    h: &Harness,
    conversation: &mut Conversation,
    outcome: &RunOutcome,
    events: &Events,
) {
    let partial = events.text_deltas().concat();
    assert!(!partial.is_empty());
    assert_eq!(outcome.stop_reason, RunStopReason::Interrupted);
    assert!(outcome.interrupted);
    assert!(outcome.error.is_none());
    assert_eq!(outcome.response, partial);
    assert_eq!(
        events.story(),
        vec![
            format!("text {partial:?}"),
            "assistant interrupted".to_string()
        ]
    );
    assert_eq!(
        stored(conversation),
        vec![
            "user: Hi".to_string(),
            format!("assistant (interrupted): {partial}")
        ]
    );
    let cut = &messages(conversation)[1];
    assert_eq!(cut.metadata["stop_reason"], "aborted");
    assert!(cut.metadata.get("provider_error").is_none());
    assert_eq!(h.bodies().len(), 1);

    let sent = second_run_works(h, conversation).await;
    assert_eq!(
        sent[2..],
        vec![
            format!("assistant: {partial}{INTERRUPTED_ANNOTATION}"),
            "user: Try again".to_string(),
        ][..]
    );
    let body = &h.bodies()[1];
    match h.wire {
        Wire::Anthropic => assert_eq!(
            body["messages"][1],
            json!({"role": "assistant", "content": [
                {"type": "text", "text": format!("{partial}{INTERRUPTED_ANNOTATION}")}
            ]})
        ),
        Wire::OpenAi => assert_eq!(
            body["messages"][2],
            json!({"role": "assistant", "content": format!("{partial}{INTERRUPTED_ANNOTATION}")})
        ),
    }
}

/// The host cancels from inside its event callback after the third delta: no fourth delta is
/// delivered.
async fn abort_mid_text_from_the_event_callback(wire: Wire) {
    let h = harness(
        wire,
        json!({"turns": [
            {"text": {"repeat": "tok ", "count": 1000}, "chunk_delay_ms": 2},
            text_turn("Recovered."),
        ]}),
    )
    .await;
    let cancel = CancellationToken::new();
    let events = Events::default();
    let seen = Arc::new(AtomicUsize::new(0));
    let options = {
        let engine_events = events.engine.clone();
        let cancel = cancel.clone();
        let seen = seen.clone();
        RunOptions::new()
            .with_cancel(cancel.clone())
            .with_on_event(move |event| {
                if matches!(event, EngineEvent::TextDelta { .. })
                    && seen.fetch_add(1, Ordering::SeqCst) + 1 == 3
                {
                    cancel.cancel();
                }
                engine_events.lock().unwrap().push(event);
            })
    };
    let mut conversation = Conversation::new();
    let started = Instant::now();
    let outcome = h
        .engine
        .run(&mut conversation, Message::user("Hi"), options)
        .await;
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "stopped promptly"
    );
    assert_eq!(events.text_deltas(), ["tok ", "tok ", "tok "]);
    assert_abort_committed(&h, &mut conversation, &outcome, &events).await;
}

/// Another task cancels once the first delta arrived, while the stream waits for the next chunk.
async fn abort_mid_text_from_another_task(wire: Wire) {
    let h = harness(
        wire,
        json!({"turns": [
            {"text": {"repeat": "tok ", "count": 500}, "chunk_delay_ms": 20},
            text_turn("Recovered."),
        ]}),
    )
    .await;
    let cancel = CancellationToken::new();
    let first_delta = Arc::new(Notify::new());
    let events = Events::default();
    let options = {
        let engine_events = events.engine.clone();
        let first_delta = first_delta.clone();
        RunOptions::new()
            .with_cancel(cancel.clone())
            .with_on_event(move |event| {
                if matches!(event, EngineEvent::TextDelta { .. }) {
                    first_delta.notify_one();
                }
                engine_events.lock().unwrap().push(event);
            })
    };
    let canceller = {
        let cancel = cancel.clone();
        tokio::spawn(async move {
            first_delta.notified().await;
            cancel.cancel();
        })
    };
    let mut conversation = Conversation::new();
    let started = Instant::now();
    let outcome = h
        .engine
        .run(&mut conversation, Message::user("Hi"), options)
        .await;
    // Unaborted, the stream would take 10 s.
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "stopped promptly"
    );
    canceller.await.expect("canceller");
    let deltas = events.text_deltas().len();
    assert!((1..500).contains(&deltas), "{deltas} deltas");
    assert_abort_committed(&h, &mut conversation, &outcome, &events).await;
}

/// Abort while a tool runs: the running tool sees the cancellation and stops, the queued call gets
/// the interrupted result, no further model call is made, and the next run sends every result.
async fn abort_mid_tool(wire: Wire) {
    let h = harness(
        wire,
        json!({"turns": [
            {
                "text": "Working on it.",
                "tool_calls": [
                    tool_call("call_slow", "slow", json!({})),
                    tool_call("call_queued", "read", json!({"label": "q"})),
                ]
            },
            text_turn("Recovered."),
        ]}),
    )
    .await;
    let cancel = CancellationToken::new();
    let events = Events::default();
    let canceller = {
        let cancel = cancel.clone();
        let slow = h.slow.clone();
        tokio::spawn(async move {
            slow.started.notified().await;
            cancel.cancel();
        })
    };
    let mut conversation = Conversation::new();
    let started = Instant::now();
    let outcome = h
        .engine
        .run(
            &mut conversation,
            Message::user("Hi"),
            events.options().with_cancel(cancel),
        )
        .await;
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "stopped promptly"
    );
    canceller.await.expect("canceller");

    assert!(h.slow.saw_cancel.load(Ordering::SeqCst));
    assert_eq!(h.probe.calls(), 0, "the queued tool never ran");
    assert_eq!(outcome.stop_reason, RunStopReason::Interrupted);
    assert!(outcome.interrupted);
    assert_eq!(outcome.response, "Working on it.");
    assert_eq!(outcome.rounds, 1);
    assert_eq!(outcome.tools_executed, ["slow"]);
    assert_eq!(
        events.story(),
        lines(&[
            "text \"Working on it.\"",
            "assistant complete",
            "tool_start call_slow slow",
            "tool_end call_slow slow error",
            "tool_start call_queued read",
            "tool_end call_queued read error",
        ])
    );
    assert_history_consistent(&conversation);
    assert_eq!(
        stored(&conversation),
        vec![
            "user: Hi".to_string(),
            "assistant: Working on it.".to_string(),
            "assistant: tool_use call_slow slow {}".to_string(),
            "assistant: tool_use call_queued read {\"label\":\"q\"}".to_string(),
            "tool: result call_slow (error): slow: cancelled".to_string(),
            format!("tool: result call_queued (error): {INTERRUPTED_RESULT}"),
        ]
    );
    assert_eq!(
        messages(&conversation)[3].metadata["error_code"],
        "interrupted"
    );
    assert_eq!(h.bodies().len(), 1, "no model call after the abort");

    let sent = second_run_works(&h, &mut conversation).await;
    assert_eq!(
        sent[1..],
        vec![
            "user: Hi".to_string(),
            "assistant: Working on it.".to_string(),
            "assistant: tool_use call_slow slow {}".to_string(),
            "assistant: tool_use call_queued read {\"label\":\"q\"}".to_string(),
            "result call_slow: slow: cancelled".to_string(),
            format!("result call_queued: {INTERRUPTED_RESULT}"),
            "user: Try again".to_string(),
        ][..]
    );
    if wire == Wire::Anthropic {
        assert_eq!(
            result_error_flags(wire, &h.bodies()[1]),
            [
                ("call_slow".to_string(), Some(true)),
                ("call_queued".to_string(), Some(true))
            ]
        );
    }
}

/// Passes everything through to the real provider, and cancels the run the moment the first
/// argument delta of tool call `index` arrives (so a test can abort mid-arguments without timing).
struct CancelOnToolArguments {
    inner: Arc<dyn Provider>,
    cancel: CancellationToken,
    index: usize,
}

#[async_trait]
impl Provider for CancelOnToolArguments {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn model(&self) -> &str {
        self.inner.model()
    }
    async fn stream(
        &self,
        request: &ProviderRequest,
        on_event: &StreamSink<'_>,
        cancel: &CancellationToken,
    ) -> Result<ProviderResponse, ProviderError> {
        let sink = |event: StreamEvent| {
            if matches!(&event, StreamEvent::ToolCallDelta { index, .. } if *index == self.index) {
                self.cancel.cancel();
            }
            on_event(event);
        };
        self.inner.stream(request, &sink, cancel).await
    }
}

/// Abort while the second tool call's arguments stream: the call whose arguments were complete is
/// kept and answered "interrupted" (nothing runs), the cut one is dropped, and the next request
/// shows the interrupted turn with its paired result.
async fn abort_while_tool_arguments_stream(wire: Wire) {
    let mut cut_chunks = vec!["{\"label\": \"".to_string()];
    cut_chunks.extend((0..50).map(|_| "x".to_string()));
    cut_chunks.push("\"}".to_string());
    let h = harness(
        wire,
        json!({"turns": [
            {
                "text": "Working.",
                "tool_calls": [
                    tool_call("call_done", "read", json!({"label": "a"})),
                    {"id": "call_cut", "name": "read", "arguments_chunks": cut_chunks},
                ],
                "chunk_delay_ms": 2
            },
            text_turn("Recovered."),
        ]}),
    )
    .await;
    let cancel = CancellationToken::new();
    let engine = Engine::new(
        Arc::new(CancelOnToolArguments {
            inner: h.engine.provider().clone(),
            cancel: cancel.clone(),
            index: 1,
        }),
        h.engine.tools().clone(),
        h.engine.config().clone(),
    );
    let events = Events::default();
    let mut conversation = Conversation::new();
    let outcome = engine
        .run(
            &mut conversation,
            Message::user("Hi"),
            events.options().with_cancel(cancel),
        )
        .await;

    assert_eq!(outcome.stop_reason, RunStopReason::Interrupted);
    assert!(outcome.interrupted);
    assert_eq!(outcome.response, "Working.");
    assert!(outcome.tools_executed.is_empty());
    assert_eq!(h.probe.calls(), 0, "nothing runs after an abort");
    assert_eq!(
        events.story(),
        lines(&[
            "text \"Working.\"",
            "assistant interrupted",
            "tool_start call_done read",
            "tool_end call_done read error",
        ])
    );
    assert_history_consistent(&conversation);
    assert_eq!(
        stored(&conversation),
        vec![
            "user: Hi".to_string(),
            "assistant (interrupted): Working.".to_string(),
            "assistant (interrupted): tool_use call_done read {\"label\":\"a\"}".to_string(),
            format!("tool: result call_done (error): {INTERRUPTED_RESULT}"),
        ]
    );
    assert_eq!(h.bodies().len(), 1);

    let sent = second_run_works(&h, &mut conversation).await;
    assert_eq!(
        sent[1..],
        vec![
            "user: Hi".to_string(),
            format!("assistant: Working.{INTERRUPTED_ANNOTATION}"),
            "assistant: tool_use call_done read {\"label\":\"a\"}".to_string(),
            format!("result call_done: {INTERRUPTED_RESULT}"),
            "user: Try again".to_string(),
        ][..]
    );
}

/// Abort while the provider sits out a 30 s `retry-after`: the run returns at once, interrupted,
/// with an empty interrupted answer that the model is told about next time.
async fn abort_during_retry_backoff(wire: Wire) {
    let h = harness(
        wire,
        json!({"turns": [
            {"fault": {"kind": "status", "status": 429, "retry_after": 30}},
            text_turn("Recovered."),
        ]}),
    )
    .await;
    let cancel = CancellationToken::new();
    let events = Events::default();
    let options = {
        let engine_events = events.engine.clone();
        let cancel = cancel.clone();
        RunOptions::new()
            .with_cancel(cancel.clone())
            .with_on_event(move |event| {
                if matches!(event, EngineEvent::ProviderRetry { .. }) {
                    cancel.cancel();
                }
                engine_events.lock().unwrap().push(event);
            })
    };
    let mut conversation = Conversation::new();
    let started = Instant::now();
    let outcome = h
        .engine
        .run(&mut conversation, Message::user("Hi"), options)
        .await;
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "did not sit out the wait"
    );

    assert_eq!(outcome.stop_reason, RunStopReason::Interrupted);
    assert!(outcome.error.is_none());
    assert_eq!(outcome.response, "");
    assert_eq!(
        events.retries(),
        [(1, 5, 30_000, ProviderErrorKind::RateLimit, Some(429))]
    );
    assert_eq!(
        events.story(),
        lines(&["retry 1/5 rate_limit", "assistant interrupted"])
    );
    assert_eq!(
        stored(&conversation),
        lines(&["user: Hi", "assistant (interrupted): <empty>"])
    );
    assert_eq!(h.bodies().len(), 1);

    let sent = second_run_works(&h, &mut conversation).await;
    assert_eq!(
        sent[1..],
        vec![
            "user: Hi".to_string(),
            format!("assistant: {}", INTERRUPTED_ANNOTATION.trim_start()),
            "user: Try again".to_string(),
        ][..]
    );
}

// ---------------------------------------------------------------------------------------------
// Round cap, unknown tools, invalid arguments, reused ids, parallel tools

async fn max_turns_summary(wire: Wire) {
    let h = harness(
        wire,
        json!({"turns": [
            {"tool_calls": [tool_call("call_1", "read", json!({"label": "a"}))],
             "usage": {"input_tokens": 10, "output_tokens": 1}},
            {"tool_calls": [tool_call("call_2", "read", json!({"label": "b"}))],
             "usage": {"input_tokens": 20, "output_tokens": 2}},
            {"text": ["Read a and b; ", "c remains."],
             "usage": {"input_tokens": 30, "output_tokens": 3}},
            text_turn("Recovered."),
        ]}),
    )
    .await;
    let mut conversation = Conversation::new();
    let events = Events::default();
    let outcome = h
        .engine
        .run(
            &mut conversation,
            Message::user("Read a, b and c"),
            events.options().with_max_turns(2),
        )
        .await;

    assert_eq!(outcome.stop_reason, RunStopReason::MaxTurns);
    assert!(!outcome.interrupted);
    assert_eq!(outcome.response, "Read a and b; c remains.");
    assert_eq!(outcome.rounds, 3, "the summary call counts as a request");
    assert_eq!(
        outcome.usage.input_tokens, 60,
        "the summary call's usage counts"
    );
    assert_eq!(outcome.usage.output_tokens, 6);
    assert_eq!(outcome.tools_executed, ["read", "read"]);
    assert_eq!(
        events.story(),
        lines(&[
            "assistant complete",
            "tool_start call_1 read",
            "tool_end call_1 read ok",
            "text \"\\n\\n\"",
            "assistant complete",
            "tool_start call_2 read",
            "tool_end call_2 read ok",
            "text \"\\n\\nRead a and b; c remains.\"",
            "assistant complete",
        ])
    );

    // History: the summary is stored, the synthetic instruction is not.
    assert_history_consistent(&conversation);
    let all = messages(&conversation);
    assert!(all
        .iter()
        .all(|m| !m.text().contains(MAX_TURNS_INSTRUCTION)));
    assert_eq!(all.len(), 6);
    assert_eq!(all[5].text(), "Read a and b; c remains.");
    assert_eq!(all[5].metadata["forced_summary"], true);

    // The summary request: tools still listed (the history holds tool calls) but forbidden, and
    // the instruction last.
    let bodies = h.bodies();
    assert_eq!(bodies.len(), 3);
    for body in &bodies[..2] {
        assert!(body.get("tool_choice").is_none());
    }
    let summary = &bodies[2];
    assert_common_request_fields(wire, summary);
    assert_eq!(summary["tool_choice"], wire.tool_choice_none());
    assert_eq!(offered_tools(wire, summary), TOOL_NAMES);
    assert_eq!(
        transcript(wire, summary)[1..],
        vec![
            "user: Read a, b and c".to_string(),
            "assistant: tool_use call_1 read {\"label\":\"a\"}".to_string(),
            "result call_1: read a".to_string(),
            "assistant: tool_use call_2 read {\"label\":\"b\"}".to_string(),
            "result call_2: read b".to_string(),
            format!("user: {MAX_TURNS_INSTRUCTION}"),
        ][..]
    );
    match wire {
        // The instruction shares the user turn with the last results, after them.
        Wire::Anthropic => assert_eq!(
            summary["messages"][4],
            json!({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "call_2", "content": "read b", "is_error": false},
                {"type": "text", "text": MAX_TURNS_INSTRUCTION},
            ]})
        ),
        Wire::OpenAi => assert_eq!(
            summary["messages"][6],
            json!({"role": "user", "content": MAX_TURNS_INSTRUCTION})
        ),
    }

    // A later run starts from the clean history.
    let sent = second_run_works(&h, &mut conversation).await;
    assert!(sent
        .iter()
        .all(|line| !line.contains(MAX_TURNS_INSTRUCTION)));
}

async fn unknown_tool(wire: Wire) {
    let h = harness(
        wire,
        json!({"turns": [
            {"tool_calls": [
                tool_call("call_bash", "Bash", json!({"command": "ls"})),
                tool_call("call_read", "read", json!({"label": "a"})),
            ]},
            text_turn("No Bash here; read a."),
        ]}),
    )
    .await;
    let mut conversation = Conversation::new();
    let (outcome, events) = h.run(&mut conversation, "List files").await;

    assert_completed(&outcome, "No Bash here; read a.");
    assert_eq!(outcome.rounds, 2);
    assert_eq!(
        outcome.tools_executed,
        ["read"],
        "the unknown tool was not run"
    );
    assert_eq!(
        events.story(),
        lines(&[
            "assistant complete",
            "tool_start call_bash Bash",
            "tool_end call_bash Bash error",
            "tool_start call_read read",
            "tool_end call_read read ok",
            "text \"\\n\\nNo Bash here; read a.\"",
            "assistant complete",
        ])
    );
    assert_history_consistent(&conversation);
    let refusal = format!(
        "Tool \"Bash\" is not registered, so the tool call was not executed. Available tools: {}.",
        TOOL_NAMES.join(", ")
    );
    assert_eq!(
        h.sent(1)[4..],
        vec![
            format!("result call_bash: {refusal}"),
            "result call_read: read a".to_string(),
        ][..]
    );
    let flags = result_error_flags(wire, &h.bodies()[1]);
    let expected = match wire {
        Wire::Anthropic => [Some(true), Some(false)],
        Wire::OpenAi => [None, None],
    };
    assert_eq!(
        flags,
        [
            ("call_bash".to_string(), expected[0]),
            ("call_read".to_string(), expected[1])
        ]
    );
    assert_eq!(
        messages(&conversation)[2].metadata["error_code"],
        "unknown_tool"
    );
}

async fn repeated_unknown_tools_end_with_one_tool_less_call(wire: Wire) {
    let h = harness(
        wire,
        json!({"turns": [
            {"tool_calls": [tool_call("call_1", "Bash", json!({"command": "ls"}))]},
            {"tool_calls": [tool_call("call_2", "Bash", json!({"command": "ls -a"}))]},
            text_turn("I cannot run commands here."),
        ]}),
    )
    .await;
    let mut conversation = Conversation::new();
    let (outcome, _) = h.run(&mut conversation, "List files").await;

    assert_eq!(outcome.stop_reason, RunStopReason::UnknownTools);
    assert_eq!(outcome.response, "I cannot run commands here.");
    assert!(outcome.tools_executed.is_empty());
    assert_history_consistent(&conversation);
    let bodies = h.bodies();
    assert_eq!(bodies.len(), 3);
    assert_eq!(bodies[2]["tool_choice"], wire.tool_choice_none());
    let last = h.sent(2).pop().unwrap_or_default();
    assert!(
        last.starts_with("user: The model repeatedly requested unavailable tool(s): Bash."),
        "{last}"
    );
    assert!(messages(&conversation)
        .iter()
        .all(|m| !m.text().contains("repeatedly requested")));
}

/// Arguments that are not JSON are never executed; the model gets an error result it can act on,
/// and the call stays paired with its result (Anthropic gets `{}` as the input, since it only
/// takes objects; OpenAI gets back the raw text it wrote).
async fn invalid_tool_arguments(wire: Wire) {
    let h = harness(
        wire,
        json!({"turns": [
            {"tool_calls": [{"id": "call_bad", "name": "read", "raw_arguments": "{\"label\": \"a"}]},
            text_turn("Let me fix that."),
        ]}),
    )
    .await;
    let mut conversation = Conversation::new();
    let (outcome, events) = h.run(&mut conversation, "Read a").await;

    assert_completed(&outcome, "Let me fix that.");
    assert!(outcome.tools_executed.is_empty());
    assert_eq!(h.probe.calls(), 0);
    assert_eq!(
        events.story()[..3],
        lines(&[
            "assistant complete",
            "tool_start call_bad read",
            "tool_end call_bad read error",
        ])[..]
    );
    assert_history_consistent(&conversation);
    let all = messages(&conversation);
    assert_eq!(
        all[1].tool_uses().next().map(|(_, _, input)| input.clone()),
        Some(Value::String("{\"label\": \"a".into())),
        "the transcript keeps what the model sent"
    );
    assert_eq!(all[2].metadata["error_code"], "invalid_arguments");
    let problem = match &all[2].content[0] {
        ContentBlock::ToolResult {
            content, is_error, ..
        } => {
            assert!(is_error);
            content.clone()
        }
        other => panic!("{other:?}"),
    };
    assert!(problem.contains("not valid JSON"), "{problem}");

    let body = &h.bodies()[1];
    match wire {
        Wire::Anthropic => {
            assert_eq!(
                body["messages"][1],
                json!({"role": "assistant", "content": [
                    {"type": "tool_use", "id": "call_bad", "name": "read", "input": {}}
                ]})
            );
            assert_eq!(
                body["messages"][2],
                json!({"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "call_bad", "content": problem, "is_error": true}
                ]})
            );
        }
        Wire::OpenAi => {
            assert_eq!(
                body["messages"][2],
                json!({"role": "assistant", "content": null, "tool_calls": [
                    {"id": "call_bad", "type": "function",
                     "function": {"name": "read", "arguments": "{\"label\": \"a"}}
                ]})
            );
            assert_eq!(
                body["messages"][3],
                json!({"role": "tool", "tool_call_id": "call_bad", "content": problem})
            );
        }
    }
}

/// A provider that numbers calls per response reuses `call_0` in every round; each use stays
/// paired with its own result.
async fn reused_tool_ids(wire: Wire) {
    let h = harness(
        wire,
        json!({"turns": [
            {"tool_calls": [tool_call("call_0", "read", json!({"label": "a"}))]},
            {"tool_calls": [tool_call("call_0", "read", json!({"label": "b"}))]},
            text_turn("Read both."),
        ]}),
    )
    .await;
    let mut conversation = Conversation::new();
    let (outcome, events) = h.run(&mut conversation, "Read a then b").await;

    assert_completed(&outcome, "Read both.");
    assert_eq!(outcome.rounds, 3);
    assert_tool_events_paired(&events.engine());
    assert_history_consistent(&conversation);
    assert_eq!(
        stored(&conversation),
        lines(&[
            "user: Read a then b",
            "assistant: tool_use call_0 read {\"label\":\"a\"}",
            "tool: result call_0: read a",
            "assistant: tool_use call_0 read {\"label\":\"b\"}",
            "tool: result call_0: read b",
            "assistant: Read both.",
        ])
    );
    let body = &h.bodies()[2];
    match wire {
        Wire::Anthropic => assert_eq!(
            body["messages"],
            json!([
                {"role": "user", "content": [{"type": "text", "text": "Read a then b"}]},
                {"role": "assistant", "content": [
                    {"type": "tool_use", "id": "call_0", "name": "read", "input": {"label": "a"}}]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "call_0", "content": "read a", "is_error": false}]},
                {"role": "assistant", "content": [
                    {"type": "tool_use", "id": "call_0", "name": "read", "input": {"label": "b"}}]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "call_0", "content": "read b", "is_error": false}]},
            ])
        ),
        Wire::OpenAi => assert_eq!(
            body["messages"],
            json!([
                {"role": "system", "content": SYSTEM_PROMPT},
                {"role": "user", "content": "Read a then b"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "call_0", "type": "function", "function": {"name": "read", "arguments": "{\"label\":\"a\"}"}}]},
                {"role": "tool", "tool_call_id": "call_0", "content": "read a"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "call_0", "type": "function", "function": {"name": "read", "arguments": "{\"label\":\"b\"}"}}]},
                {"role": "tool", "tool_call_id": "call_0", "content": "read b"},
            ])
        ),
    }
}

/// Two calls of one response sharing an id: both run, each answered once, and the history sent
/// back gives the second a unique id, which mock-llm (checking the pairing rules the real APIs
/// enforce) accepts. Sent verbatim, either API would refuse the next request.
async fn duplicate_tool_ids_in_one_response(wire: Wire) {
    let h = harness(
        wire,
        json!({"turns": [
            {"tool_calls": [
                tool_call("call_dup", "read", json!({"label": "a"})),
                tool_call("call_dup", "read", json!({"label": "b"})),
            ]},
            text_turn("Read both."),
            text_turn("Recovered."),
        ]}),
    )
    .await;
    let mut conversation = Conversation::new();
    let (outcome, events) = h.run(&mut conversation, "Read a and b").await;

    assert_completed(&outcome, "Read both.");
    assert_tool_events_paired(&events.engine());
    assert_history_consistent(&conversation);
    assert_eq!(
        stored(&conversation),
        lines(&[
            "user: Read a and b",
            "assistant: tool_use call_dup read {\"label\":\"a\"}",
            "assistant: tool_use call_dup_2 read {\"label\":\"b\"}",
            "tool: result call_dup: read a",
            "tool: result call_dup_2: read b",
            "assistant: Read both.",
        ])
    );
    let starts: Vec<String> = events
        .engine()
        .iter()
        .filter_map(|event| match event {
            EngineEvent::ToolStart { tool_use_id, .. } => Some(tool_use_id.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(starts, ["call_dup", "call_dup_2"]);
    let assistant = &messages(&conversation)[1];
    assert_eq!(
        assistant.metadata[robota::engine::RENAMED_TOOL_CALL_IDS],
        json!({"call_dup_2": "call_dup"})
    );
    let body = &h.bodies()[1];
    match wire {
        Wire::Anthropic => assert_eq!(
            body["messages"].as_array().expect("array")[1..],
            json!([
                {"role": "assistant", "content": [
                    {"type": "tool_use", "id": "call_dup", "name": "read", "input": {"label": "a"}},
                    {"type": "tool_use", "id": "call_dup_2", "name": "read", "input": {"label": "b"}}]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "call_dup", "content": "read a", "is_error": false},
                    {"type": "tool_result", "tool_use_id": "call_dup_2", "content": "read b", "is_error": false}]},
            ])
            .as_array()
            .expect("array")[..]
        ),
        Wire::OpenAi => assert_eq!(
            body["messages"].as_array().expect("array")[2..],
            json!([
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "call_dup", "type": "function", "function": {"name": "read", "arguments": "{\"label\":\"a\"}"}},
                    {"id": "call_dup_2", "type": "function", "function": {"name": "read", "arguments": "{\"label\":\"b\"}"}}]},
                {"role": "tool", "tool_call_id": "call_dup", "content": "read a"},
                {"role": "tool", "tool_call_id": "call_dup_2", "content": "read b"},
            ])
            .as_array()
            .expect("array")[..]
        ),
    }
    second_run_works(&h, &mut conversation).await;
}

/// Four read-only calls in one response run at the same time (each waits until all four are in
/// flight) and finish in reverse order; the results still go back in call order.
async fn parallel_read_only_tools(wire: Wire) {
    let calls: Vec<Value> = (0..4)
        .map(|i| {
            tool_call(
                &format!("call_{i}"),
                "read",
                json!({"label": format!("p{i}"), "wait_for": 4, "sleep_ms": (3 - i) * 30}),
            )
        })
        .collect();
    let h = harness(
        wire,
        json!({"turns": [{"tool_calls": calls}, text_turn("All four read.")]}),
    )
    .await;
    let mut conversation = Conversation::new();
    let (outcome, events) = h.run(&mut conversation, "Read four").await;

    assert_completed(&outcome, "All four read.");
    assert_eq!(h.probe.max(), 4, "all four calls were in flight at once");
    assert_tool_events_paired(&events.engine());
    let batch = events
        .execution()
        .into_iter()
        .find_map(|event| match event {
            ExecutionEvent::ToolBatchStarted {
                mode,
                max_concurrency,
                request_count,
                ..
            } => Some((mode, max_concurrency, request_count)),
            _ => None,
        })
        .expect("tool_batch_started");
    assert_eq!(batch, (BatchMode::Parallel, 5, 4));
    // All four started before any ended.
    let story = events.story();
    assert!(
        story[1..5]
            .iter()
            .all(|line| line.starts_with("tool_start")),
        "{story:#?}"
    );
    assert!(
        story[5..9].iter().all(|line| line.starts_with("tool_end")),
        "{story:#?}"
    );

    assert_history_consistent(&conversation);
    let expected: Vec<String> = (0..4)
        .map(|i| format!("result call_{i}: read p{i}"))
        .collect();
    assert_eq!(h.sent(1)[6..10], expected[..], "results in call order");
}
