//! The tool-call gate: the engine asks it before every registered call with usable arguments,
//! honours allow / rewritten input / deny, lets it amend results, and never waits on it past an
//! abort.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use robota::engine::{
    Engine, EngineConfig, EngineEvent, ExecutionEvent, GateCall, GateDecision, RunOptions,
    RunStopReason, ToolCallGate, INTERRUPTED_RESULT,
};
use robota::message::{ContentBlock, Conversation, Message, Role};
use robota::provider::scripted::{ScriptedProvider, ScriptedTurn};
use robota::tools::{Tool, ToolContext, ToolOutput, ToolRegistry};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

/// Echoes its input and records every input it ran with.
struct EchoTool {
    ran_with: Arc<Mutex<Vec<Value>>>,
}

#[async_trait]
impl Tool for EchoTool {
    fn name(&self) -> &str {
        "echo"
    }
    fn description(&self) -> &str {
        "Echoes its input."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {"text": {"type": "string"}}})
    }
    async fn execute(&self, input: Value, _context: ToolContext) -> ToolOutput {
        self.ran_with.lock().unwrap().push(input.clone());
        ToolOutput::text(format!("echo {}", input["text"].as_str().unwrap_or("")))
    }
}

/// A gate whose behaviour is chosen per test.
enum Behaviour {
    Deny,
    Rewrite,
    AmendResult,
    HangIgnoringAbort,
    Panic,
}

struct TestGate {
    behaviour: Behaviour,
    asked: Mutex<Vec<GateCall>>,
    after: Mutex<Vec<String>>,
}

#[async_trait]
impl ToolCallGate for TestGate {
    async fn before_call(&self, call: &GateCall, _cancel: &CancellationToken) -> GateDecision {
        self.asked.lock().unwrap().push(call.clone());
        match self.behaviour {
            Behaviour::Deny => GateDecision::Deny {
                message: "Permission to use echo was denied by the user.".into(),
            },
            Behaviour::Rewrite => GateDecision::AllowWithInput {
                input: json!({"text": "rewritten"}),
            },
            Behaviour::AmendResult => GateDecision::Allow,
            Behaviour::HangIgnoringAbort => {
                tokio::time::sleep(Duration::from_secs(3600)).await;
                GateDecision::Allow
            }
            Behaviour::Panic => panic!("gate bug"),
        }
    }

    async fn after_call(&self, call: &GateCall, mut output: ToolOutput) -> ToolOutput {
        self.after.lock().unwrap().push(call.tool_use_id.clone());
        if matches!(self.behaviour, Behaviour::AmendResult) {
            output.content.push_str("\n[hook context: checked]");
        }
        output
    }
}

struct Harness {
    engine: Engine,
    gate: Arc<TestGate>,
    ran_with: Arc<Mutex<Vec<Value>>>,
    provider: Arc<ScriptedProvider>,
}

fn harness(behaviour: Behaviour) -> Harness {
    let provider = Arc::new(ScriptedProvider::new(vec![
        ScriptedTurn::tool_call("call_1", "echo", json!({"text": "original"})),
        ScriptedTurn::text("done"),
    ]));
    let ran_with = Arc::new(Mutex::new(Vec::new()));
    let mut tools = ToolRegistry::new();
    tools.register(Arc::new(EchoTool {
        ran_with: ran_with.clone(),
    }));
    let gate = Arc::new(TestGate {
        behaviour,
        asked: Mutex::new(Vec::new()),
        after: Mutex::new(Vec::new()),
    });
    let config = EngineConfig {
        tool_abort_grace: Duration::from_millis(50),
        ..EngineConfig::default()
    };
    let engine = Engine::new(provider.clone(), tools, config).with_tool_gate(gate.clone());
    Harness {
        engine,
        gate,
        ran_with,
        provider,
    }
}

fn tool_result(conversation: &Conversation) -> (String, bool) {
    conversation
        .messages()
        .filter(|m| m.role == Role::Tool)
        .flat_map(|m| m.content.iter())
        .find_map(|block| match block {
            ContentBlock::ToolResult {
                content, is_error, ..
            } => Some((content.clone(), *is_error)),
            _ => None,
        })
        .expect("a tool result")
}

#[tokio::test]
async fn a_denied_call_is_not_run_and_the_model_gets_the_reason() {
    let h = harness(Behaviour::Deny);
    let events = Arc::new(Mutex::new(Vec::new()));
    let executions = Arc::new(Mutex::new(Vec::new()));
    let (sink, exec_sink) = (events.clone(), executions.clone());
    let options = RunOptions::new()
        .with_on_event(move |event| sink.lock().unwrap().push(event))
        .with_on_execution_event(move |event| exec_sink.lock().unwrap().push(event));
    let mut conversation = Conversation::new();
    let outcome = h
        .engine
        .run(&mut conversation, Message::user("go"), options)
        .await;

    assert_eq!(outcome.stop_reason, RunStopReason::Completed);
    assert_eq!(outcome.response, "done");
    assert!(h.ran_with.lock().unwrap().is_empty(), "the tool never ran");
    assert!(outcome.tools_executed.is_empty());
    assert_eq!(h.gate.asked.lock().unwrap().len(), 1);
    assert_eq!(
        h.gate.asked.lock().unwrap()[0].input,
        json!({"text": "original"})
    );
    assert!(
        h.gate.after.lock().unwrap().is_empty(),
        "no result to observe"
    );
    assert_eq!(
        tool_result(&conversation),
        (
            "Permission to use echo was denied by the user.".to_string(),
            true
        )
    );
    // The next model call carries the denial, so the model can adapt.
    let second = &h.provider.requests()[1];
    assert!(second.messages.iter().any(|m| m.content.iter().any(
        |b| matches!(b, ContentBlock::ToolResult { content, .. } if content.contains("denied"))
    )));
    // Hosts still see one start and one end for the call.
    let events = events.lock().unwrap();
    let starts = events
        .iter()
        .filter(|e| matches!(e, EngineEvent::ToolStart { .. }))
        .count();
    let ends: Vec<&ToolOutput> = events
        .iter()
        .filter_map(|e| match e {
            EngineEvent::ToolEnd { output, .. } => Some(output),
            _ => None,
        })
        .collect();
    assert_eq!((starts, ends.len()), (1, 1));
    assert!(ends[0].is_error);
    let code = executions.lock().unwrap().iter().find_map(|e| match e {
        ExecutionEvent::ToolExecutionResult { metadata, .. } => metadata.get("error_code").cloned(),
        _ => None,
    });
    assert_eq!(code, Some(json!("denied")));
}

#[tokio::test]
async fn rewritten_input_is_what_the_tool_runs_with_while_history_keeps_the_request() {
    let h = harness(Behaviour::Rewrite);
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = events.clone();
    let mut conversation = Conversation::new();
    h.engine
        .run(
            &mut conversation,
            Message::user("go"),
            RunOptions::new().with_on_event(move |event| sink.lock().unwrap().push(event)),
        )
        .await;
    assert_eq!(
        *h.ran_with.lock().unwrap(),
        vec![json!({"text": "rewritten"})]
    );
    assert_eq!(
        tool_result(&conversation),
        ("echo rewritten".to_string(), false)
    );
    let requested = conversation
        .messages()
        .find_map(|m| m.tool_uses().next().map(|(_, _, input)| input.clone()));
    assert_eq!(requested, Some(json!({"text": "original"})));
    let started_with = events.lock().unwrap().iter().find_map(|e| match e {
        EngineEvent::ToolStart { input, .. } => Some(input.clone()),
        _ => None,
    });
    assert_eq!(started_with, Some(json!({"text": "rewritten"})));
}

#[tokio::test]
async fn the_gate_may_amend_a_result_after_the_tool_ran() {
    let h = harness(Behaviour::AmendResult);
    let mut conversation = Conversation::new();
    let outcome = h
        .engine
        .run(&mut conversation, Message::user("go"), RunOptions::new())
        .await;
    assert_eq!(outcome.tools_executed, vec!["echo".to_string()]);
    assert_eq!(*h.gate.after.lock().unwrap(), vec!["call_1".to_string()]);
    assert_eq!(
        tool_result(&conversation),
        ("echo original\n[hook context: checked]".to_string(), false)
    );
}

#[tokio::test]
async fn an_abort_does_not_wait_for_a_gate_that_ignores_it() {
    let h = harness(Behaviour::HangIgnoringAbort);
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        trigger.cancel();
    });
    let mut conversation = Conversation::new();
    let outcome = tokio::time::timeout(
        Duration::from_secs(10),
        h.engine.run(
            &mut conversation,
            Message::user("go"),
            RunOptions::new().with_cancel(cancel),
        ),
    )
    .await
    .expect("the run returns after the abort");
    assert!(outcome.interrupted);
    assert_eq!(outcome.stop_reason, RunStopReason::Interrupted);
    assert!(h.ran_with.lock().unwrap().is_empty());
    assert_eq!(
        tool_result(&conversation),
        (INTERRUPTED_RESULT.to_string(), true)
    );
}

#[tokio::test]
async fn a_gate_that_panics_fails_closed() {
    let h = harness(Behaviour::Panic);
    let mut conversation = Conversation::new();
    let outcome = h
        .engine
        .run(&mut conversation, Message::user("go"), RunOptions::new())
        .await;
    assert_eq!(outcome.stop_reason, RunStopReason::Completed);
    assert!(
        h.ran_with.lock().unwrap().is_empty(),
        "nothing runs unapproved"
    );
    let (content, is_error) = tool_result(&conversation);
    assert!(is_error);
    assert!(
        content.contains("permission check for \"echo\" failed"),
        "{content}"
    );
}

#[tokio::test]
async fn unknown_tools_and_bad_arguments_never_reach_the_gate() {
    let provider = Arc::new(ScriptedProvider::new(vec![
        ScriptedTurn::tool_call("call_1", "nope", json!({})).with_raw_tool_call(
            "call_2",
            "echo",
            "{not json",
        ),
        ScriptedTurn::text("done"),
    ]));
    let gate = Arc::new(TestGate {
        behaviour: Behaviour::Deny,
        asked: Mutex::new(Vec::new()),
        after: Mutex::new(Vec::new()),
    });
    let mut tools = ToolRegistry::new();
    tools.register(Arc::new(EchoTool {
        ran_with: Arc::new(Mutex::new(Vec::new())),
    }));
    let engine = Engine::new(provider, tools, EngineConfig::default()).with_tool_gate(gate.clone());
    let mut conversation = Conversation::new();
    engine
        .run(&mut conversation, Message::user("go"), RunOptions::new())
        .await;
    assert!(gate.asked.lock().unwrap().is_empty());
}
