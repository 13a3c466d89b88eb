//! Behaviour of the execution loop, driven by the scripted provider and small test tools.
//!
//! Every test asserts what a user (or the model) would see: the outcome, the committed history,
//! the events, and what was sent to the model. Concurrency is measured by counting calls in
//! flight, never by timing.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use robota::engine::{
    BatchMode, Engine, EngineConfig, EngineEvent, ExecutionEvent, JsonlRecorder, RunOptions,
    RunOutcome, RunStopReason, CONTEXT_OVERFLOW_TOOL_RESULT, INTERRUPTED_RESULT,
    MAX_TURNS_INSTRUCTION, SUMMARY_FALLBACK,
};
use robota::message::{
    ContentBlock, Conversation, Message, MessageState, ProviderErrorKind, Role,
    INTERRUPTED_ANNOTATION,
};
use robota::provider::replay::ReplayProvider;
use robota::provider::scripted::{ScriptedProvider, ScriptedTurn};
use robota::provider::StopReason;
use robota::tools::{Tool, ToolContext, ToolOutput, ToolRegistry};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

// ---------------------------------------------------------------------------------------------
// Test tools

/// Shared record of what the tools did: calls in flight (now and at most), and a start/end log.
#[derive(Default)]
struct Probe {
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
    /// Set when a mutating call saw another call in flight.
    overlap_with_mutation: AtomicBool,
    log: Mutex<Vec<String>>,
}

impl Probe {
    fn enter(&self, label: &str) -> usize {
        let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.max_in_flight.fetch_max(now, Ordering::SeqCst);
        self.log.lock().unwrap().push(format!("start {label}"));
        now
    }

    fn leave(&self, label: &str) -> usize {
        self.log.lock().unwrap().push(format!("end {label}"));
        self.in_flight.fetch_sub(1, Ordering::SeqCst)
    }

    fn max(&self) -> usize {
        self.max_in_flight.load(Ordering::SeqCst)
    }

    fn log(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }
}

/// Read-only: `{"label": "a", "sleep_ms": 20}` → "read a".
struct ReadTool(Arc<Probe>);

#[async_trait]
impl Tool for ReadTool {
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
        self.0.enter(&label);
        let sleep_ms = input["sleep_ms"].as_u64().unwrap_or(20);
        tokio::time::sleep(Duration::from_millis(sleep_ms)).await;
        self.0.leave(&label);
        ToolOutput::text(format!("read {label}"))
    }
}

/// Mutating: `{"label": "x"}` → "wrote x". Flags any overlap with another call.
struct WriteTool(Arc<Probe>);

#[async_trait]
impl Tool for WriteTool {
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
        if self.0.enter(&label) > 1 {
            self.0.overlap_with_mutation.store(true, Ordering::SeqCst);
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
        if self.0.leave(&label) > 1 {
            self.0.overlap_with_mutation.store(true, Ordering::SeqCst);
        }
        ToolOutput::text(format!("wrote {label}"))
    }
}

/// Always panics.
struct PanicTool;

#[async_trait]
impl Tool for PanicTool {
    fn name(&self) -> &str {
        "explode"
    }
    fn description(&self) -> &str {
        "Panics."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object"})
    }
    fn is_read_only(&self) -> bool {
        true
    }
    async fn execute(&self, _input: Value, _context: ToolContext) -> ToolOutput {
        panic!("tool bug")
    }
}

/// Mutating; waits for the abort (or 30 s) and records that it saw it.
#[derive(Default)]
struct SlowTool {
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
        tokio::select! {
            () = context.cancel.cancelled() => {
                self.saw_cancel.store(true, Ordering::SeqCst);
                ToolOutput::error("slow: cancelled")
            }
            () = tokio::time::sleep(Duration::from_secs(30)) => ToolOutput::text("slow: done"),
        }
    }
}

/// Ignores cancellation entirely.
struct StubbornTool;

#[async_trait]
impl Tool for StubbornTool {
    fn name(&self) -> &str {
        "stubborn"
    }
    fn description(&self) -> &str {
        "Never stops early."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object"})
    }
    async fn execute(&self, _input: Value, _context: ToolContext) -> ToolOutput {
        tokio::time::sleep(Duration::from_secs(30)).await;
        ToolOutput::text("stubborn: done")
    }
}

/// Read-only; returns `{"size": n}` characters.
struct BigTool;

#[async_trait]
impl Tool for BigTool {
    fn name(&self) -> &str {
        "big"
    }
    fn description(&self) -> &str {
        "Returns a lot of text."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object"})
    }
    fn is_read_only(&self) -> bool {
        true
    }
    async fn execute(&self, input: Value, _context: ToolContext) -> ToolOutput {
        let size = input["size"].as_u64().unwrap_or(10) as usize;
        ToolOutput::text("x".repeat(size))
    }
}

// ---------------------------------------------------------------------------------------------
// Helpers

struct Harness {
    engine: Engine,
    provider: Arc<ScriptedProvider>,
    probe: Arc<Probe>,
    slow: Arc<SlowTool>,
}

fn harness(turns: Vec<ScriptedTurn>, config: EngineConfig) -> Harness {
    let probe = Arc::new(Probe::default());
    let slow = Arc::new(SlowTool::default());
    let mut tools = ToolRegistry::new();
    tools.register(Arc::new(ReadTool(probe.clone())));
    tools.register(Arc::new(WriteTool(probe.clone())));
    tools.register(Arc::new(PanicTool));
    tools.register(slow.clone());
    tools.register(Arc::new(StubbornTool));
    tools.register(Arc::new(BigTool));
    let provider = Arc::new(ScriptedProvider::new(turns));
    Harness {
        engine: Engine::new(provider.clone(), tools, config),
        provider,
        probe,
        slow,
    }
}

/// Run options that collect both event streams.
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
}

fn messages(conversation: &Conversation) -> Vec<Message> {
    conversation.messages().cloned().collect()
}

/// The tool results in a conversation, in order: (tool_use_id, content, is_error).
fn tool_results(conversation: &Conversation) -> Vec<(String, String, bool)> {
    conversation
        .messages()
        .flat_map(|message| message.content.iter())
        .filter_map(|block| match block {
            ContentBlock::ToolResult {
                tool_use_id,
                content,
                is_error,
            } => Some((tool_use_id.clone(), content.clone(), *is_error)),
            _ => None,
        })
        .collect()
}

/// Every assistant `tool_use` is answered by exactly one tool message, in order, right after it.
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
                "tool message without a tool_use before it"
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

async fn run(harness: &Harness, conversation: &mut Conversation, prompt: &str) -> RunOutcome {
    harness
        .engine
        .run(conversation, Message::user(prompt), RunOptions::new())
        .await
}

fn read_call(id: &str, label: &str, sleep_ms: u64) -> (String, String, Value) {
    (
        id.to_string(),
        "read".to_string(),
        json!({"label": label, "sleep_ms": sleep_ms}),
    )
}

fn turn_with_calls(text: &str, calls: Vec<(String, String, Value)>) -> ScriptedTurn {
    calls
        .into_iter()
        .fold(ScriptedTurn::text(text), |turn, (id, name, input)| {
            turn.with_tool_call(id, name, input)
        })
}

// ---------------------------------------------------------------------------------------------
// Tests

#[tokio::test]
async fn plain_text_answer() {
    let config = EngineConfig {
        system_prompt: Some("You are terse.".into()),
        ..EngineConfig::default()
    };
    let h = harness(
        vec![ScriptedTurn::chunks(["Hel", "lo!"]).with_usage(12, 3)],
        config,
    );
    let mut conversation = Conversation::new();
    let outcome = run(&h, &mut conversation, "Hi").await;

    assert_eq!(outcome.response, "Hello!");
    assert_eq!(outcome.stop_reason, RunStopReason::Completed);
    assert!(!outcome.interrupted);
    assert_eq!(outcome.rounds, 1);
    assert!(outcome.error.is_none());
    assert!(outcome.tools_executed.is_empty());

    let all = messages(&conversation);
    assert_eq!(all.len(), 2);
    assert_eq!(all[0].text(), "Hi");
    assert_eq!(all[1].role, Role::Assistant);
    assert_eq!(all[1].state, MessageState::Complete);
    assert_eq!(all[1].text(), "Hello!");
    assert_eq!(all[1].metadata["round"], 1);
    assert_eq!(all[1].metadata["model"], "scripted");
    assert_eq!(all[1].metadata["stop_reason"], "end_turn");
    assert_eq!(all[1].usage.map(|u| u.input_tokens), Some(12));

    let requests = h.provider.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].system.as_deref(), Some("You are terse."));
    assert_eq!(requests[0].messages.len(), 1);
    assert_eq!(
        requests[0].tools.len(),
        6,
        "all registered tools are offered"
    );
}

#[tokio::test]
async fn multi_tool_turn_feeds_results_back_to_the_model() {
    let h = harness(
        vec![
            turn_with_calls(
                "Let me look.",
                vec![read_call("call_a", "a", 1), read_call("call_b", "b", 1)],
            ),
            ScriptedTurn::text("Both read."),
        ],
        EngineConfig::default(),
    );
    let mut conversation = Conversation::new();
    let events = Events::default();
    let outcome = h
        .engine
        .run(
            &mut conversation,
            Message::user("Read a and b"),
            events.options(),
        )
        .await;

    assert_eq!(outcome.response, "Both read.");
    assert_eq!(outcome.rounds, 2);
    assert_eq!(outcome.tools_executed, ["read", "read"]);
    assert_history_consistent(&conversation);
    assert_eq!(
        tool_results(&conversation),
        [
            ("call_a".into(), "read a".into(), false),
            ("call_b".into(), "read b".into(), false)
        ]
    );
    let all = messages(&conversation);
    assert_eq!(
        all[1].text(),
        "Let me look.",
        "text is kept next to tool calls"
    );
    assert_eq!(all[2].metadata["tool_name"], "read");

    // The model's second call sees its calls and their results.
    let second = &h.provider.requests()[1];
    assert_eq!(second.messages.len(), 4);
    assert_eq!(second.messages[2].role, Role::Tool);

    // Each call has one tool_start and one tool_end.
    let starts = events
        .engine()
        .iter()
        .filter(|e| matches!(e, EngineEvent::ToolStart { .. }))
        .count();
    let ends = events
        .engine()
        .iter()
        .filter(|e| matches!(e, EngineEvent::ToolEnd { .. }))
        .count();
    assert_eq!((starts, ends), (2, 2));
}

#[tokio::test]
async fn read_only_tools_overlap_and_results_keep_call_order() {
    // The first call takes longest, so calls finish in reverse order.
    let calls = vec![
        read_call("c1", "a", 80),
        read_call("c2", "b", 40),
        read_call("c3", "c", 1),
    ];
    let h = harness(
        vec![turn_with_calls("", calls.clone()), ScriptedTurn::text("ok")],
        EngineConfig::default(),
    );
    let mut conversation = Conversation::new();
    let events = Events::default();
    h.engine
        .run(&mut conversation, Message::user("go"), events.options())
        .await;

    assert_eq!(
        h.probe.max(),
        3,
        "all three read-only calls were in flight together"
    );
    let results: Vec<String> = tool_results(&conversation)
        .into_iter()
        .map(|(id, content, _)| format!("{id}={content}"))
        .collect();
    assert_eq!(results, ["c1=read a", "c2=read b", "c3=read c"]);
    assert_history_consistent(&conversation);

    let batch = events
        .execution()
        .into_iter()
        .find_map(|event| match event {
            ExecutionEvent::ToolBatchStarted {
                mode,
                max_concurrency,
                request_count,
                tools,
                ..
            } => Some((mode, max_concurrency, request_count, tools)),
            _ => None,
        });
    assert_eq!(
        batch,
        Some((
            BatchMode::Parallel,
            5,
            3,
            vec!["read".into(), "read".into(), "read".into()]
        ))
    );

    // The concurrency bound holds.
    let bounded = harness(
        vec![turn_with_calls("", calls), ScriptedTurn::text("ok")],
        EngineConfig {
            max_tool_concurrency: 2,
            ..EngineConfig::default()
        },
    );
    let mut conversation = Conversation::new();
    run(&bounded, &mut conversation, "go").await;
    assert_eq!(bounded.probe.max(), 2);
    assert_history_consistent(&conversation);

    // Zero is treated as one.
    let serial = harness(
        vec![
            turn_with_calls("", vec![read_call("c1", "a", 5), read_call("c2", "b", 5)]),
            ScriptedTurn::text("ok"),
        ],
        EngineConfig {
            max_tool_concurrency: 0,
            ..EngineConfig::default()
        },
    );
    let mut conversation = Conversation::new();
    let outcome = run(&serial, &mut conversation, "go").await;
    assert_eq!(serial.probe.max(), 1);
    assert_eq!(outcome.response, "ok");
}

#[tokio::test]
async fn mutating_tools_never_overlap_anything() {
    let write =
        |id: &str, label: &str| (id.to_string(), "write".to_string(), json!({"label": label}));
    let calls = vec![
        read_call("1", "r1", 20),
        read_call("2", "r2", 20),
        write("3", "w1"),
        read_call("4", "r3", 20),
        write("5", "w2"),
        write("6", "w3"),
    ];
    let h = harness(
        vec![turn_with_calls("", calls), ScriptedTurn::text("done")],
        EngineConfig::default(),
    );
    let mut conversation = Conversation::new();
    let outcome = run(&h, &mut conversation, "go").await;

    assert!(!h.probe.overlap_with_mutation.load(Ordering::SeqCst));
    assert_eq!(h.probe.max(), 2, "the two leading reads still ran together");
    let log = h.probe.log();
    let position = |entry: &str| log.iter().position(|e| e == entry).unwrap();
    // w1 starts after both earlier reads ended and ends before the later read starts.
    assert!(position("start w1") > position("end r1"));
    assert!(position("start w1") > position("end r2"));
    assert!(position("end w1") < position("start r3"));
    assert!(position("end w2") < position("start w3"));
    assert_eq!(
        outcome.tools_executed,
        ["read", "read", "write", "read", "write", "write"]
    );
    let contents: Vec<String> = tool_results(&conversation)
        .into_iter()
        .map(|r| r.1)
        .collect();
    assert_eq!(
        contents,
        ["read r1", "read r2", "wrote w1", "read r3", "wrote w2", "wrote w3"]
    );
}

#[tokio::test]
async fn round_cap_forces_one_summary_without_tools() {
    let h = harness(
        vec![
            ScriptedTurn::tool_call("call_0", "read", json!({"label": "a", "sleep_ms": 1})),
            ScriptedTurn::tool_call("call_0", "read", json!({"label": "b", "sleep_ms": 1})),
            ScriptedTurn::text("I read a and b; c remains.").with_usage(7, 3),
        ],
        EngineConfig {
            max_turns: 2,
            ..EngineConfig::default()
        },
    );
    let mut conversation = Conversation::new();
    let outcome = run(&h, &mut conversation, "read a, b and c").await;

    assert_eq!(outcome.stop_reason, RunStopReason::MaxTurns);
    assert_eq!(outcome.response, "I read a and b; c remains.");
    // Every request counts, the forced summary included.
    assert_eq!(outcome.rounds, 3);
    assert!(!outcome.interrupted);

    let requests = h.provider.requests();
    assert_eq!(requests.len(), 3);
    let summary_request = &requests[2];
    assert!(
        summary_request.tool_choice == Some(robota::provider::ToolChoice::None),
        "the summary call forbids tools"
    );
    let synthetic = summary_request.messages.last().unwrap();
    assert_eq!(synthetic.role, Role::User);
    assert_eq!(synthetic.text(), MAX_TURNS_INSTRUCTION);

    // The synthetic prompt is not stored; the summary is.
    assert!(conversation
        .messages()
        .all(|message| message.text() != MAX_TURNS_INSTRUCTION));
    let last = conversation.last_message().unwrap();
    assert_eq!(last.text(), "I read a and b; c remains.");
    assert_eq!(last.metadata["forced_summary"], true);
    assert_history_consistent(&conversation);

    // A run option overrides the configured cap.
    let h = harness(
        vec![
            ScriptedTurn::tool_call("x", "read", json!({"label": "a", "sleep_ms": 1})),
            ScriptedTurn::text("summary"),
        ],
        EngineConfig::default(),
    );
    let mut conversation = Conversation::new();
    let outcome = h
        .engine
        .run(
            &mut conversation,
            Message::user("go"),
            RunOptions::new().with_max_turns(1),
        )
        .await;
    assert_eq!(outcome.stop_reason, RunStopReason::MaxTurns);
    assert_eq!(outcome.response, "summary");
}

#[tokio::test]
async fn failing_or_empty_summary_falls_back() {
    for summary_turn in [
        Some(ScriptedTurn::default().with_error(ProviderErrorKind::Overloaded, "busy")),
        Some(ScriptedTurn::text("   ")),
        None, // the script runs out: also a failed call
    ] {
        let mut turns = vec![ScriptedTurn::tool_call(
            "call_0",
            "read",
            json!({"label": "a", "sleep_ms": 1}),
        )];
        turns.extend(summary_turn);
        let h = harness(
            turns,
            EngineConfig {
                max_turns: 1,
                ..EngineConfig::default()
            },
        );
        let mut conversation = Conversation::new();
        let events = Events::default();
        let outcome = h
            .engine
            .run(&mut conversation, Message::user("go"), events.options())
            .await;
        assert_eq!(outcome.response, SUMMARY_FALLBACK);
        assert_eq!(outcome.stop_reason, RunStopReason::MaxTurns);
        assert!(
            outcome.error.is_none(),
            "a failed summary is not a run error"
        );
        let last = conversation.last_message().unwrap();
        assert_eq!(last.text(), SUMMARY_FALLBACK);
        assert_eq!(last.metadata["fallback"], true);
        assert_history_consistent(&conversation);
        assert!(events.text_deltas().contains(&SUMMARY_FALLBACK.to_string()));
    }
}

#[tokio::test]
async fn unknown_tools_are_not_executed_and_repeats_stop_the_tool_rounds() {
    let h =
        harness(
            vec![
                ScriptedTurn::tool_call("call_0", "Bash", json!({"command": "ls"})),
                ScriptedTurn::tool_call("call_0", "Bash", json!({"command": "ls -la"}))
                    .with_tool_call("call_1", "read", json!({"label": "a", "sleep_ms": 1})),
                ScriptedTurn::text("I cannot run shell commands here."),
            ],
            EngineConfig::default(),
        );
    let mut conversation = Conversation::new();
    let events = Events::default();
    let outcome = h
        .engine
        .run(
            &mut conversation,
            Message::user("list files"),
            events.options(),
        )
        .await;

    assert_eq!(outcome.stop_reason, RunStopReason::UnknownTools);
    assert_eq!(outcome.response, "I cannot run shell commands here.");
    assert_eq!(
        outcome.tools_executed,
        ["read"],
        "unknown tools are not counted"
    );
    let results = tool_results(&conversation);
    let expected = "Tool \"Bash\" is not registered, so the tool call was not executed. Available tools: big, explode, read, slow, stubborn, write.";
    assert_eq!(results[0], ("call_0".into(), expected.into(), true));
    assert_eq!(results[1], ("call_0".into(), expected.into(), true));
    assert_eq!(results[2], ("call_1".into(), "read a".into(), false));
    assert_history_consistent(&conversation);

    let metadata = events
        .execution()
        .into_iter()
        .find_map(|event| match event {
            ExecutionEvent::ToolExecutionResult {
                metadata, success, ..
            } if !success => Some(metadata),
            _ => None,
        })
        .unwrap();
    assert_eq!(metadata["error_code"], "unknown_tool");
    assert_eq!(metadata["requested_tool"], "Bash");
    assert_eq!(metadata["available_tools"][0], "big");

    let requests = h.provider.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(
        requests[2].tool_choice,
        Some(robota::provider::ToolChoice::None)
    );
    let instruction = requests[2].messages.last().unwrap().text();
    assert!(
        instruction.starts_with("The model repeatedly requested unavailable tool(s): Bash."),
        "{instruction}"
    );
    assert!(conversation.messages().all(|m| m.text() != instruction));
}

#[tokio::test]
async fn one_unknown_tool_round_does_not_stop_the_loop() {
    let h = harness(
        vec![
            ScriptedTurn::tool_call("call_0", "Bash", json!({})),
            ScriptedTurn::tool_call("call_1", "read", json!({"label": "a", "sleep_ms": 1})),
            ScriptedTurn::tool_call("call_2", "Bash", json!({})),
            ScriptedTurn::text("done"),
        ],
        EngineConfig::default(),
    );
    let mut conversation = Conversation::new();
    let outcome = run(&h, &mut conversation, "go").await;
    assert_eq!(outcome.stop_reason, RunStopReason::Completed);
    assert_eq!(outcome.rounds, 4);
}

#[tokio::test]
async fn no_registered_tools_is_said_so() {
    let provider = Arc::new(ScriptedProvider::new(vec![
        ScriptedTurn::tool_call("call_0", "read", json!({})),
        ScriptedTurn::text("ok"),
    ]));
    let engine = Engine::new(
        provider.clone(),
        ToolRegistry::new(),
        EngineConfig::default(),
    );
    let mut conversation = Conversation::new();
    engine
        .run(&mut conversation, Message::user("go"), RunOptions::new())
        .await;
    assert!(tool_results(&conversation)[0]
        .1
        .ends_with("Available tools: no registered tools are available."));
    assert!(provider.requests()[0].tools.is_empty());
}

#[tokio::test]
async fn invalid_tool_arguments_become_error_results_the_model_can_fix() {
    let h = harness(
        vec![
            ScriptedTurn::default()
                .with_raw_tool_call("call_0", "read", r#"{"label": "a", "sleep_ms": "#)
                .with_raw_tool_call("call_1", "read", "[1, 2]")
                .with_raw_tool_call("call_2", "read", ""),
            ScriptedTurn::tool_call("call_3", "read", json!({"label": "fixed", "sleep_ms": 1})),
            ScriptedTurn::text("Now it worked."),
        ],
        EngineConfig::default(),
    );
    let mut conversation = Conversation::new();
    let outcome = run(&h, &mut conversation, "go").await;

    assert_eq!(outcome.response, "Now it worked.");
    assert_history_consistent(&conversation);
    // The transcript keeps what the model sent.
    let first_assistant = &messages(&conversation)[1];
    let inputs: Vec<Value> = first_assistant
        .tool_uses()
        .map(|(_, _, input)| input.clone())
        .collect();
    assert_eq!(
        inputs[0],
        Value::String(r#"{"label": "a", "sleep_ms": "#.into())
    );
    assert_eq!(inputs[1], json!([1, 2]));
    assert_eq!(inputs[2], json!({}), "empty arguments mean no arguments");

    let results = tool_results(&conversation);
    assert!(
        results[0].2 && results[0].1.contains("not valid JSON"),
        "{:?}",
        results[0]
    );
    assert!(
        results[0].1.contains(r#"{\"label\": \"a\""#),
        "quotes the arguments"
    );
    assert!(results[1].2 && results[1].1.contains("must be a JSON object"));
    assert_eq!(results[2], ("call_2".into(), "read ?".into(), false));
    assert_eq!(results[3].1, "read fixed");
    // Only the valid calls ran.
    assert_eq!(
        h.probe.log(),
        ["start ?", "end ?", "start fixed", "end fixed"]
    );
}

#[tokio::test]
async fn provider_tool_call_ids_are_kept_when_reused_across_rounds() {
    let h = harness(
        vec![
            ScriptedTurn::tool_call("call_0", "read", json!({"label": "a", "sleep_ms": 1})),
            ScriptedTurn::tool_call("call_0", "read", json!({"label": "b", "sleep_ms": 1})),
            ScriptedTurn::text("done"),
        ],
        EngineConfig::default(),
    );
    let mut conversation = Conversation::new();
    let outcome = run(&h, &mut conversation, "go").await;
    assert_eq!(outcome.stop_reason, RunStopReason::Completed);
    let ids: Vec<String> = messages(&conversation)
        .iter()
        .flat_map(|m| {
            m.tool_uses()
                .map(|(id, _, _)| id.to_string())
                .collect::<Vec<_>>()
        })
        .collect();
    assert_eq!(ids, ["call_0", "call_0"]);
    let results = tool_results(&conversation);
    assert_eq!(
        results,
        [
            ("call_0".into(), "read a".into(), false),
            ("call_0".into(), "read b".into(), false)
        ]
    );
    assert_history_consistent(&conversation);
}

#[tokio::test]
async fn calls_sharing_an_id_in_one_response_get_unique_ids_answered_in_order() {
    let h = harness(
        vec![
            turn_with_calls(
                "",
                vec![
                    read_call("dup", "a", 1),
                    read_call("dup", "b", 1),
                    read_call("", "c", 1),
                ],
            ),
            ScriptedTurn::text("done"),
        ],
        EngineConfig::default(),
    );
    let mut conversation = Conversation::new();
    let outcome = run(&h, &mut conversation, "go").await;
    assert_eq!(outcome.stop_reason, RunStopReason::Completed);
    assert_history_consistent(&conversation);
    assert_eq!(
        tool_results(&conversation),
        [
            ("dup".into(), "read a".into(), false),
            ("dup_2".into(), "read b".into(), false),
            ("call_2".into(), "read c".into(), false),
        ]
    );
    // What the model is sent back pairs each call with one result, by unique ids.
    let sent = &h.provider.requests()[1].messages;
    let calls: Vec<&str> = sent
        .iter()
        .flat_map(|m| m.tool_uses().map(|(id, _, _)| id))
        .collect();
    assert_eq!(calls, ["dup", "dup_2", "call_2"]);
    let answered: Vec<&str> = sent
        .iter()
        .flat_map(|m| m.content.iter())
        .filter_map(|block| match block {
            ContentBlock::ToolResult { tool_use_id, .. } => Some(tool_use_id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(answered, calls);
}

#[tokio::test]
async fn abort_mid_text_commits_the_partial_answer_and_the_model_sees_it_was_cut() {
    let h = harness(
        vec![
            ScriptedTurn::chunks(["Hel", "lo ", "wor", "ld"]),
            ScriptedTurn::text("Sure, continuing."),
        ],
        EngineConfig::default(),
    );
    let mut conversation = Conversation::new();
    let cancel = CancellationToken::new();
    let seen = Arc::new(AtomicUsize::new(0));
    let options = {
        let cancel = cancel.clone();
        let seen = seen.clone();
        RunOptions::new()
            .with_cancel(cancel.clone())
            .with_on_event(move |event| {
                if matches!(event, EngineEvent::TextDelta { .. })
                    && seen.fetch_add(1, Ordering::SeqCst) == 1
                {
                    cancel.cancel();
                }
            })
    };
    let outcome = h
        .engine
        .run(&mut conversation, Message::user("Say hello world"), options)
        .await;

    assert!(outcome.interrupted);
    assert_eq!(outcome.stop_reason, RunStopReason::Interrupted);
    assert_eq!(outcome.response, "Hello ");
    assert_eq!(
        h.provider.requests().len(),
        1,
        "no summary call after an abort"
    );
    let last = conversation.last_message().unwrap();
    assert_eq!(last.state, MessageState::Interrupted);
    assert_eq!(last.text(), "Hello ", "history keeps what was really said");
    assert_eq!(last.metadata["stop_reason"], "aborted");

    // The next run tells the model its previous answer was cut short.
    let outcome = run(&h, &mut conversation, "go on").await;
    assert_eq!(outcome.response, "Sure, continuing.");
    let sent = &h.provider.requests()[1].messages;
    assert_eq!(sent[1].text(), format!("Hello {INTERRUPTED_ANNOTATION}"));
    assert_eq!(sent[2].text(), "go on");
}

#[tokio::test]
async fn abort_mid_tool_cancels_running_tools_and_answers_queued_ones() {
    let h = harness(
        vec![ScriptedTurn::text("Working.")
            .with_tool_call("call_0", "slow", json!({}))
            .with_tool_call("call_1", "write", json!({"label": "never"}))
            .with_tool_call("call_2", "read", json!({"label": "never"}))],
        EngineConfig::default(),
    );
    let mut conversation = Conversation::new();
    let cancel = CancellationToken::new();
    let options = {
        let cancel = cancel.clone();
        RunOptions::new()
            .with_cancel(cancel.clone())
            .with_on_event(move |event| {
                if matches!(&event, EngineEvent::ToolStart { name, .. } if name == "slow") {
                    cancel.cancel();
                }
            })
    };
    let outcome = tokio::time::timeout(
        Duration::from_secs(10),
        h.engine
            .run(&mut conversation, Message::user("go"), options),
    )
    .await
    .expect("the abort reached the running tool");

    assert!(outcome.interrupted);
    assert_eq!(outcome.stop_reason, RunStopReason::Interrupted);
    assert_eq!(outcome.response, "Working.");
    assert!(h.slow.saw_cancel.load(Ordering::SeqCst));
    assert_eq!(outcome.tools_executed, ["slow"]);
    assert!(h.probe.log().is_empty(), "queued tools never started");
    assert_history_consistent(&conversation);
    assert_eq!(
        tool_results(&conversation),
        [
            ("call_0".into(), "slow: cancelled".into(), true),
            ("call_1".into(), INTERRUPTED_RESULT.into(), true),
            ("call_2".into(), INTERRUPTED_RESULT.into(), true),
        ]
    );
    assert_eq!(h.provider.requests().len(), 1, "no further model call");
}

#[tokio::test]
async fn a_tool_that_ignores_the_abort_is_given_up_on_after_the_grace_period() {
    let h = harness(
        vec![ScriptedTurn::tool_call("call_0", "stubborn", json!({}))],
        EngineConfig {
            tool_abort_grace: Duration::from_millis(50),
            ..EngineConfig::default()
        },
    );
    let mut conversation = Conversation::new();
    let cancel = CancellationToken::new();
    let options = {
        let cancel = cancel.clone();
        RunOptions::new()
            .with_cancel(cancel.clone())
            .with_on_event(move |event| {
                if matches!(event, EngineEvent::ToolStart { .. }) {
                    cancel.cancel();
                }
            })
    };
    let outcome = tokio::time::timeout(
        Duration::from_secs(10),
        h.engine
            .run(&mut conversation, Message::user("go"), options),
    )
    .await
    .expect("the engine stopped waiting");
    assert!(outcome.interrupted);
    let results = tool_results(&conversation);
    assert!(
        results[0].1.starts_with(INTERRUPTED_RESULT),
        "{:?}",
        results[0]
    );
    assert_history_consistent(&conversation);
}

#[tokio::test]
async fn abort_while_the_response_with_tool_calls_streams_runs_no_tool() {
    // The provider reports the cut-off response (with the tool calls streamed so far) as aborted.
    let h = harness(
        vec![ScriptedTurn::text("Let me")
            .with_tool_call("call_0", "write", json!({"label": "x"}))
            .with_stop_reason(StopReason::Aborted)],
        EngineConfig::default(),
    );
    let mut conversation = Conversation::new();
    let outcome = run(&h, &mut conversation, "go").await;
    assert!(outcome.interrupted);
    assert!(outcome.tools_executed.is_empty());
    assert!(h.probe.log().is_empty());
    assert_eq!(messages(&conversation)[1].state, MessageState::Interrupted);
    assert_eq!(
        tool_results(&conversation),
        [("call_0".into(), INTERRUPTED_RESULT.into(), true)]
    );
    assert_history_consistent(&conversation);
}

#[tokio::test]
async fn abort_during_retry_backoff_commits_an_empty_interrupted_answer() {
    let h = harness(
        vec![ScriptedTurn::text("never").with_retry(
            60_000,
            ProviderErrorKind::RateLimit,
            "slow down",
        )],
        EngineConfig::default(),
    );
    let mut conversation = Conversation::new();
    let cancel = CancellationToken::new();
    let events = Events::default();
    let options = {
        let cancel = cancel.clone();
        let engine_events = events.engine.clone();
        RunOptions::new()
            .with_cancel(cancel.clone())
            .with_on_event(move |event| {
                if matches!(event, EngineEvent::ProviderRetry { .. }) {
                    cancel.cancel();
                }
                engine_events.lock().unwrap().push(event);
            })
    };
    let outcome = tokio::time::timeout(
        Duration::from_secs(10),
        h.engine
            .run(&mut conversation, Message::user("go"), options),
    )
    .await
    .expect("the backoff honoured the abort");

    assert!(outcome.interrupted);
    assert_eq!(outcome.response, "");
    let retry = events.engine().into_iter().find_map(|event| match event {
        EngineEvent::ProviderRetry {
            attempt,
            max_attempts,
            delay_ms,
            error,
        } => Some((attempt, max_attempts, delay_ms, error.kind)),
        _ => None,
    });
    assert_eq!(retry, Some((1, 2, 60_000, ProviderErrorKind::RateLimit)));
    let last = conversation.last_message().unwrap();
    assert_eq!(last.role, Role::Assistant);
    assert_eq!(last.state, MessageState::Interrupted);
    assert!(last.content.is_empty(), "always committed, even empty");
}

#[tokio::test]
async fn abort_before_the_first_delta() {
    let h = harness(
        vec![ScriptedTurn::text("late").with_delay_ms(60_000)],
        EngineConfig::default(),
    );
    let mut conversation = Conversation::new();
    let cancel = CancellationToken::new();
    let canceller = {
        let cancel = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            cancel.cancel();
        })
    };
    let outcome = tokio::time::timeout(
        Duration::from_secs(10),
        h.engine.run(
            &mut conversation,
            Message::user("go"),
            RunOptions::new().with_cancel(cancel),
        ),
    )
    .await
    .expect("the abort ended the call");
    canceller.await.unwrap();
    assert!(outcome.interrupted);
    assert_eq!(outcome.rounds, 1);
    let last = conversation.last_message().unwrap();
    assert_eq!(
        (last.role, last.state),
        (Role::Assistant, MessageState::Interrupted)
    );

    // Aborted before the run even starts: nothing is sent to the model.
    let h = harness(vec![ScriptedTurn::text("never")], EngineConfig::default());
    let cancel = CancellationToken::new();
    cancel.cancel();
    let mut conversation = Conversation::new();
    let outcome = h
        .engine
        .run(
            &mut conversation,
            Message::user("go"),
            RunOptions::new().with_cancel(cancel),
        )
        .await;
    assert!(outcome.interrupted);
    assert_eq!(outcome.rounds, 0);
    assert!(h.provider.requests().is_empty());
    assert_eq!(conversation.message_count(), 1);
}

#[tokio::test]
async fn provider_error_mid_run_leaves_a_consistent_usable_history() {
    let h = harness(
        vec![
            ScriptedTurn::tool_call("call_0", "read", json!({"label": "a", "sleep_ms": 1})),
            ScriptedTurn::chunks(["Part", "ial"])
                .with_error(ProviderErrorKind::Overloaded, "overloaded, try later"),
            ScriptedTurn::text("Recovered."),
        ],
        EngineConfig::default(),
    );
    let mut conversation = Conversation::new();
    let outcome = run(&h, &mut conversation, "go").await;

    assert_eq!(outcome.stop_reason, RunStopReason::Error);
    assert!(!outcome.interrupted);
    let error = outcome.error.clone().unwrap();
    assert_eq!(error.kind, ProviderErrorKind::Overloaded);
    assert_eq!(outcome.response, "Partial");
    assert_history_consistent(&conversation);
    let last = conversation.last_message().unwrap();
    assert_eq!(last.text(), "Partial");
    assert_eq!(last.state, MessageState::Interrupted);
    assert_eq!(last.metadata["provider_error"], true);
    assert_eq!(last.metadata["error_kind"], "overloaded");

    // The conversation goes on.
    let outcome = run(&h, &mut conversation, "try again").await;
    assert_eq!(outcome.response, "Recovered.");
    assert_history_consistent(&conversation);

    // A failure before any text commits nothing.
    let h = harness(
        vec![ScriptedTurn::default().with_error(ProviderErrorKind::Auth, "bad key")],
        EngineConfig::default(),
    );
    let mut conversation = Conversation::new();
    let outcome = run(&h, &mut conversation, "go").await;
    assert_eq!(outcome.error.map(|e| e.kind), Some(ProviderErrorKind::Auth));
    assert_eq!(conversation.message_count(), 1);
}

#[tokio::test]
async fn tool_results_beyond_the_context_budget_are_skipped_and_the_loop_goes_on() {
    let h = harness(
        vec![
            ScriptedTurn::default()
                .with_tool_call("call_0", "big", json!({"size": 33_000}))
                .with_tool_call("call_1", "read", json!({"label": "a", "sleep_ms": 1}))
                .with_tool_call("call_2", "read", json!({"label": "b", "sleep_ms": 1})),
            ScriptedTurn::text("Answering from what I have."),
        ],
        EngineConfig {
            context_window: Some(10_000),
            ..EngineConfig::default()
        },
    );
    let mut conversation = Conversation::new();
    let outcome = run(&h, &mut conversation, "go").await;

    assert_eq!(outcome.stop_reason, RunStopReason::Completed);
    assert_eq!(outcome.response, "Answering from what I have.");
    let results = tool_results(&conversation);
    assert_eq!(results[0].1.len(), 33_000);
    assert_eq!(
        results[1],
        ("call_1".into(), CONTEXT_OVERFLOW_TOOL_RESULT.into(), true)
    );
    assert_eq!(
        results[2],
        ("call_2".into(), CONTEXT_OVERFLOW_TOOL_RESULT.into(), true)
    );
    let skipped = &messages(&conversation)[3];
    assert_eq!(skipped.metadata["error_code"], "context_overflow");
    assert_history_consistent(&conversation);
}

#[tokio::test]
async fn a_request_that_cannot_fit_is_not_sent() {
    let provider =
        Arc::new(ScriptedProvider::new(vec![ScriptedTurn::text("never")]).with_context_window(100));
    let engine = Engine::new(
        provider.clone(),
        ToolRegistry::new(),
        EngineConfig::default(),
    );
    let mut conversation = Conversation::new();
    let outcome = engine
        .run(
            &mut conversation,
            Message::user("y".repeat(1000)),
            RunOptions::new(),
        )
        .await;

    assert_eq!(outcome.stop_reason, RunStopReason::ContextLimit);
    assert!(provider.requests().is_empty());
    assert!(
        outcome.response.starts_with(
            "Context window is near capacity. Cannot process further in this round. Estimated "
        ),
        "{}",
        outcome.response
    );
    assert!(outcome.response.contains("/ 100 tokens"));
    let last = conversation.last_message().unwrap();
    assert_eq!(last.text(), outcome.response);
    assert_eq!(last.metadata["context_limit"], true);
    assert_eq!(last.metadata["max_tokens"], 100);
    assert!(last.metadata["estimated_tokens"].as_u64().unwrap() > 95);
}

#[tokio::test]
async fn rounds_are_separated_in_the_text_stream() {
    let h = harness(
        vec![
            ScriptedTurn::text("Looking.").with_tool_call(
                "c",
                "read",
                json!({"label": "a", "sleep_ms": 1}),
            ),
            ScriptedTurn::text("Found it."),
        ],
        EngineConfig::default(),
    );
    let mut conversation = Conversation::new();
    let events = Events::default();
    h.engine
        .run(&mut conversation, Message::user("go"), events.options())
        .await;
    assert_eq!(events.text_deltas(), ["Looking.", "\n\n", "Found it."]);
    // The separator is presentation only.
    assert_eq!(conversation.last_message().unwrap().text(), "Found it.");
}

#[tokio::test]
async fn usage_is_summed_and_kept_per_message() {
    let h = harness(
        vec![
            ScriptedTurn::tool_call("c", "read", json!({"label": "a", "sleep_ms": 1}))
                .with_usage(100, 20),
            ScriptedTurn::text("done").with_usage(150, 5),
        ],
        EngineConfig::default(),
    );
    let mut conversation = Conversation::new();
    let outcome = run(&h, &mut conversation, "go").await;
    assert_eq!(outcome.usage.input_tokens, 250);
    assert_eq!(outcome.usage.output_tokens, 25);
    let per_message: Vec<(u64, u64)> = conversation
        .messages()
        .filter_map(|m| m.usage.map(|u| (u.input_tokens, u.output_tokens)))
        .collect();
    assert_eq!(per_message, [(100, 20), (150, 5)]);
}

#[tokio::test]
async fn a_panicking_tool_becomes_an_error_result() {
    let h = harness(
        vec![
            ScriptedTurn::tool_call("c0", "explode", json!({})).with_tool_call(
                "c1",
                "read",
                json!({"label": "a", "sleep_ms": 1}),
            ),
            ScriptedTurn::text("That tool is broken."),
        ],
        EngineConfig::default(),
    );
    let mut conversation = Conversation::new();
    let events = Events::default();
    let outcome = h
        .engine
        .run(&mut conversation, Message::user("go"), events.options())
        .await;
    assert_eq!(outcome.response, "That tool is broken.");
    let results = tool_results(&conversation);
    assert!(results[0].2);
    assert!(
        results[0].1.contains("panicked: tool bug"),
        "{}",
        results[0].1
    );
    assert_eq!(results[1].1, "read a");
    let codes: Vec<Value> = events
        .execution()
        .into_iter()
        .filter_map(|event| match event {
            ExecutionEvent::ToolExecutionResult { metadata, .. } => {
                Some(metadata.get("error_code").cloned().unwrap_or(Value::Null))
            }
            _ => None,
        })
        .collect();
    assert!(codes.contains(&json!("tool_panicked")));
    assert_history_consistent(&conversation);
}

#[tokio::test]
async fn an_empty_reply_is_not_stored_and_the_model_is_asked_once_more() {
    let h = harness(
        vec![ScriptedTurn::default(), ScriptedTurn::text("Here you go.")],
        EngineConfig::default(),
    );
    let mut conversation = Conversation::new();
    let outcome = run(&h, &mut conversation, "go").await;
    assert_eq!(outcome.response, "Here you go.");
    assert_eq!(outcome.stop_reason, RunStopReason::Completed);
    let all = messages(&conversation);
    assert_eq!(all.len(), 2);
    assert_eq!(all[1].text(), "Here you go.");
}

#[tokio::test]
async fn execution_events_follow_the_replay_boundaries_in_order() {
    let h = harness(
        vec![
            ScriptedTurn::text("Checking.").with_tool_call(
                "call_0",
                "read",
                json!({"label": "a", "sleep_ms": 1}),
            ),
            ScriptedTurn::text("Done."),
        ],
        EngineConfig::default(),
    );
    let mut conversation = Conversation::new();
    let events = Events::default();
    let outcome = h
        .engine
        .run(&mut conversation, Message::user("go"), events.options())
        .await;
    let recorded = events.execution();
    let kinds: Vec<&str> = recorded.iter().map(ExecutionEvent::kind).collect();
    assert_eq!(
        kinds,
        [
            "history_mutation",
            "provider_request",
            "provider_stream_raw_delta",
            "provider_response",
            "history_mutation",
            "assistant_message_committed",
            "tool_batch_started",
            "tool_execution_request",
            "tool_execution_result",
            "history_mutation",
            "tool_message_committed",
            "provider_request",
            "provider_stream_raw_delta",
            "provider_response",
            "history_mutation",
            "assistant_message_committed",
        ]
    );
    for event in &recorded {
        let json = serde_json::to_value(event).unwrap();
        assert_eq!(json["execution_id"], outcome.execution_id.as_str());
        assert_eq!(json["type"], event.kind());
    }
    let rounds: Vec<u64> = recorded
        .iter()
        .map(|e| serde_json::to_value(e).unwrap()["round"].as_u64().unwrap())
        .collect();
    assert_eq!(rounds, [0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2]);
    match &recorded[1] {
        ExecutionEvent::ProviderRequest {
            provider, request, ..
        } => {
            assert_eq!(provider, "scripted");
            assert_eq!(request.messages.len(), 1);
            assert!(!request.tools.is_empty());
        }
        other => panic!("{other:?}"),
    }
    match &recorded[8] {
        ExecutionEvent::ToolExecutionResult {
            tool_name,
            tool_call_id,
            success,
            output,
            ..
        } => {
            assert_eq!(
                (tool_name.as_str(), tool_call_id.as_str(), *success),
                ("read", "call_0", true)
            );
            assert_eq!(output.content, "read a");
        }
        other => panic!("{other:?}"),
    }
    // History mutation indexes are the positions in the conversation.
    let indexes: Vec<usize> = recorded
        .iter()
        .filter_map(|e| match e {
            ExecutionEvent::HistoryMutation { index, .. } => Some(*index),
            _ => None,
        })
        .collect();
    assert_eq!(indexes, [0, 1, 2, 3]);
}

/// Messages without their per-run identity (ids, timestamps, execution id).
fn normalized(conversation: &Conversation) -> Vec<Value> {
    conversation
        .messages()
        .map(|message| {
            let mut json = serde_json::to_value(message).unwrap();
            let object = json.as_object_mut().unwrap();
            object.remove("id");
            object.remove("timestamp");
            if let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) {
                metadata.remove("execution_id");
            }
            json
        })
        .collect()
}

#[tokio::test]
async fn a_recorded_run_replays_to_the_same_history_and_outcome() {
    let turns = vec![
        ScriptedTurn::chunks(["Let me ", "check."])
            .with_thinking("Two reads, then answer.")
            .with_tool_call("call_0", "read", json!({"label": "a", "sleep_ms": 1}))
            .with_tool_call("call_1", "read", json!({"label": "b", "sleep_ms": 1}))
            .with_usage(40, 12),
        ScriptedTurn::tool_call("call_0", "Bash", json!({"command": "ls"})).with_usage(60, 4),
        ScriptedTurn::chunks(["Both ", "are ", "fine."]).with_usage(70, 5),
    ];
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("run.jsonl");

    let h = harness(turns, EngineConfig::default());
    let recorder = JsonlRecorder::create(&log).unwrap();
    let mut recorded_conversation = Conversation::new();
    let recorded_deltas = Events::default();
    let options = {
        let engine = recorded_deltas.engine.clone();
        RunOptions {
            on_execution_event: Some(recorder.callback()),
            ..RunOptions::new().with_on_event(move |e| engine.lock().unwrap().push(e))
        }
    };
    let recorded = h
        .engine
        .run(
            &mut recorded_conversation,
            Message::user("check a and b"),
            options,
        )
        .await;
    recorder.finish().unwrap();
    assert!(recorder.lines() > 10);

    let replay = Arc::new(ReplayProvider::open(&log).unwrap());
    assert_eq!(replay.recorded_calls(), 3);
    let probe = Arc::new(Probe::default());
    let mut tools = ToolRegistry::new();
    for tool in h.engine.tools().names() {
        if tool == "read" {
            tools.register(Arc::new(ReadTool(probe.clone())));
        } else if let Some(tool) = h.engine.tools().get(tool) {
            tools.register(tool.clone());
        }
    }
    let engine = Engine::new(replay.clone(), tools, EngineConfig::default());
    let mut replayed_conversation = Conversation::new();
    let replayed_deltas = Events::default();
    let replayed = engine
        .run(
            &mut replayed_conversation,
            Message::user("check a and b"),
            replayed_deltas.options(),
        )
        .await;

    assert_eq!(
        normalized(&replayed_conversation),
        normalized(&recorded_conversation)
    );
    assert_eq!(replayed.response, recorded.response);
    assert_eq!(replayed.response, "Both are fine.");
    assert_eq!(replayed.stop_reason, recorded.stop_reason);
    assert_eq!(replayed.rounds, recorded.rounds);
    assert_eq!(replayed.usage, recorded.usage);
    assert_eq!(replayed.tools_executed, recorded.tools_executed);
    assert_eq!(replayed_deltas.text_deltas(), recorded_deltas.text_deltas());
    assert_eq!(replay.remaining(), 0);
    assert_eq!(probe.log().len(), 4, "tools run for real during a replay");
}

#[tokio::test]
async fn an_exhausted_script_is_a_clear_provider_error() {
    let h = harness(Vec::new(), EngineConfig::default());
    let mut conversation = Conversation::new();
    let outcome = run(&h, &mut conversation, "go").await;
    assert_eq!(outcome.stop_reason, RunStopReason::Error);
    let error = outcome.error.unwrap();
    assert_eq!(error.kind, ProviderErrorKind::Provider);
    assert!(error
        .message
        .starts_with("scripted provider has no more turns (0 were given)"));
}

#[tokio::test]
async fn one_engine_serves_concurrent_conversations() {
    let provider = Arc::new(ScriptedProvider::new(vec![
        ScriptedTurn::text("one").with_delay_ms(5),
        ScriptedTurn::text("two").with_delay_ms(5),
    ]));
    let engine = Arc::new(Engine::new(
        provider,
        ToolRegistry::new(),
        EngineConfig::default(),
    ));
    let tasks: Vec<_> = (0..2)
        .map(|_| {
            let engine = engine.clone();
            tokio::spawn(async move {
                let mut conversation = Conversation::new();
                let outcome = engine
                    .run(&mut conversation, Message::user("hi"), RunOptions::new())
                    .await;
                (outcome.response, conversation.message_count())
            })
        })
        .collect();
    let mut answers = Vec::new();
    for task in tasks {
        let (response, count) = task.await.unwrap();
        assert_eq!(count, 2);
        answers.push(response);
    }
    answers.sort();
    assert_eq!(answers, ["one", "two"]);
}
