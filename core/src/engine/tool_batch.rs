//! Handling one round's tool calls: deciding what may run, scheduling, containing panics and
//! aborts, and producing exactly one result per call, in call order.
//!
//! Scheduling rule (kept simple on purpose): calls are taken in order; consecutive read-only calls
//! form a group that runs concurrently, bounded by `max_tool_concurrency`; a mutating call runs
//! alone, after everything before it finished and before anything after it starts. So a mutating
//! call never overlaps anything, and read-only calls never observe a half-done mutation that the
//! model asked for earlier in the same response.
//!
//! Calls that must not run (unregistered tool, unusable arguments) are answered without running
//! anything and never block the others. After an abort, calls not yet started are answered with
//! [`INTERRUPTED_RESULT`]; running tools see the cancellation through their
//! [`ToolContext::cancel`] and get [`EngineConfig::tool_abort_grace`](super::EngineConfig) to
//! return before the engine stops waiting for them.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::{FutureExt, StreamExt};
use serde_json::{Map, Value};

use super::events::{BatchMode, EngineEvent, ExecutionEvent};
use super::gate::{GateCall, GateDecision};
use super::round::ParsedCall;
use super::run::Run;
use crate::tools::{Tool, ToolContext, ToolOutput, ToolRegistry};

/// What the model gets for a call that was not run because the user aborted.
pub const INTERRUPTED_RESULT: &str = "Execution interrupted by user";

/// Error code: the requested tool is not registered.
pub(crate) const UNKNOWN_TOOL: &str = "unknown_tool";
/// Error code: the arguments were not a JSON object.
pub(crate) const INVALID_ARGUMENTS: &str = "invalid_arguments";
/// Error code of a call not run because the response holding it was cut off (max_tokens).
pub(crate) const TRUNCATED_RESPONSE: &str = "truncated_response";
/// Error code: the call was skipped or stopped by an abort.
pub(crate) const INTERRUPTED: &str = "interrupted";
/// Error code: the tool panicked.
pub(crate) const TOOL_PANICKED: &str = "tool_panicked";
/// Error code: the tool-call gate (permissions, hooks) refused the call.
pub(crate) const DENIED: &str = "denied";

/// One call's result, before it is committed.
#[derive(Debug, Clone)]
pub(crate) struct CallResult {
    /// What the model will see (unless the context budget replaces it).
    pub output: ToolOutput,
    /// `error_code` and details when the engine, not the tool, decided the outcome.
    pub metadata: Map<String, Value>,
    /// True when the tool's `execute` was started.
    pub executed: bool,
}

impl CallResult {
    fn not_executed(message: String, error_code: &str) -> Self {
        let mut metadata = Map::new();
        metadata.insert("error_code".into(), error_code.into());
        CallResult {
            output: ToolOutput::error(message),
            metadata,
            executed: false,
        }
    }

    fn interrupted() -> Self {
        Self::not_executed(INTERRUPTED_RESULT.to_string(), INTERRUPTED)
    }

    /// The engine's error code, if any.
    pub(crate) fn error_code(&self) -> Option<&str> {
        self.metadata.get("error_code").and_then(Value::as_str)
    }
}

/// What to do with one call.
enum Plan {
    /// Run this tool.
    Execute(Arc<dyn Tool>),
    /// Answer without running anything.
    Answer(CallResult),
}

impl Plan {
    /// True when the call may overlap other calls of its group.
    fn may_overlap(&self) -> bool {
        match self {
            Plan::Execute(tool) => tool.is_read_only(),
            Plan::Answer(_) => true,
        }
    }
}

fn plan(tools: &ToolRegistry, call: &ParsedCall) -> Plan {
    let Some(tool) = tools.get(&call.name) else {
        let names = tools.names();
        let available = if names.is_empty() {
            "no registered tools are available".to_string()
        } else {
            names.join(", ")
        };
        let mut result = CallResult::not_executed(
            format!(
                "Tool \"{}\" is not registered, so the tool call was not executed. Available tools: {available}.",
                call.name
            ),
            UNKNOWN_TOOL,
        );
        result
            .metadata
            .insert("requested_tool".into(), call.name.clone().into());
        result.metadata.insert(
            "available_tools".into(),
            Value::Array(names.into_iter().map(Value::from).collect()),
        );
        return Plan::Answer(result);
    };
    match &call.problem {
        Some(problem) => Plan::Answer(CallResult::not_executed(
            problem.clone(),
            call.problem_code.unwrap_or(INVALID_ARGUMENTS),
        )),
        None => Plan::Execute(Arc::clone(tool)),
    }
}

/// Splits the calls into groups that run one after another (see the module docs).
fn groups(plans: &[Plan]) -> Vec<std::ops::Range<usize>> {
    let mut groups: Vec<std::ops::Range<usize>> = Vec::new();
    let mut open_group_overlaps = false;
    for (index, plan) in plans.iter().enumerate() {
        let overlaps = plan.may_overlap();
        match groups.last_mut() {
            Some(group) if overlaps && open_group_overlaps => group.end = index + 1,
            _ => groups.push(index..index + 1),
        }
        open_group_overlaps = overlaps;
    }
    groups
}

fn batch_mode(plans: &[Plan], max_concurrency: usize) -> BatchMode {
    let (mut read_only, mut mutating) = (0usize, 0usize);
    for plan in plans {
        if let Plan::Execute(tool) = plan {
            if tool.is_read_only() {
                read_only += 1;
            } else {
                mutating += 1;
            }
        }
    }
    if max_concurrency <= 1 || (mutating > 0 && read_only <= 1) {
        BatchMode::Sequential
    } else if mutating == 0 {
        BatchMode::Parallel
    } else {
        BatchMode::Mixed
    }
}

/// The text of a panic's payload (`"no message"` when it carries none).
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(text) = payload.downcast_ref::<&str>() {
        (*text).to_string()
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text.clone()
    } else {
        "no message".to_string()
    }
}

impl Run<'_> {
    /// Handles every call of a round and returns one result per call, in call order.
    ///
    /// `interrupted` is true when the model's response itself was cut off by an abort: then no
    /// tool is started at all.
    pub(crate) async fn run_tool_batch(
        &self,
        round: u32,
        batch_id: &str,
        calls: &[ParsedCall],
        interrupted: bool,
    ) -> Vec<CallResult> {
        let tools = self.engine.tools();
        let plans: Vec<Plan> = calls.iter().map(|call| plan(&tools, call)).collect();
        let limit = self.engine.config.max_tool_concurrency.max(1);
        let execution_id = self.execution_id.as_str();
        self.emitter.execution(|| ExecutionEvent::ToolBatchStarted {
            execution_id: execution_id.to_string(),
            round,
            batch_id: batch_id.to_string(),
            mode: batch_mode(&plans, limit),
            max_concurrency: limit,
            request_count: calls.len(),
            tools: calls.iter().map(|call| call.name.clone()).collect(),
        });
        for (index, call) in calls.iter().enumerate() {
            self.emitter
                .execution(|| ExecutionEvent::ToolExecutionRequest {
                    execution_id: execution_id.to_string(),
                    round,
                    batch_id: batch_id.to_string(),
                    index,
                    tool_name: call.name.clone(),
                    tool_call_id: call.id.clone(),
                    parameters: call.input.clone(),
                });
        }

        let mut results: Vec<Option<CallResult>> = calls.iter().map(|_| None).collect();
        for group in groups(&plans) {
            if group.len() == 1 || limit == 1 {
                for index in group {
                    let result = self
                        .handle_call(
                            round,
                            batch_id,
                            index,
                            &calls[index],
                            &plans[index],
                            interrupted,
                        )
                        .await;
                    results[index] = Some(result);
                }
            } else {
                let mut running = futures::stream::iter(group)
                    .map(|index| {
                        self.handle_call(
                            round,
                            batch_id,
                            index,
                            &calls[index],
                            &plans[index],
                            interrupted,
                        )
                        .map(move |result| (index, result))
                    })
                    .buffer_unordered(limit);
                while let Some((index, result)) = running.next().await {
                    results[index] = Some(result);
                }
            }
        }
        results
            .into_iter()
            .map(|result| result.unwrap_or_else(CallResult::interrupted))
            .collect()
    }

    /// Handles one call: reports its start, runs it (or not), reports its end and result.
    async fn handle_call(
        &self,
        round: u32,
        batch_id: &str,
        index: usize,
        call: &ParsedCall,
        plan: &Plan,
        interrupted: bool,
    ) -> CallResult {
        // Decided before `tool_start` is reported: once a call is announced as started, it runs
        // (an abort from then on reaches it through its cancellation token).
        let mut input = None;
        let mut decided = match plan {
            Plan::Answer(result) => Some(result.clone()),
            Plan::Execute(_) if interrupted || self.cancel.is_cancelled() => {
                Some(CallResult::interrupted())
            }
            Plan::Execute(_) => None,
        };
        let gate_call = match (plan, &self.engine.gate) {
            (Plan::Execute(tool), Some(_)) if decided.is_none() => Some(GateCall {
                tool_use_id: call.id.clone(),
                name: call.name.clone(),
                input: call.input.clone(),
                read_only: tool.is_read_only(),
            }),
            _ => None,
        };
        if let (Some(gate_call), Some(gate)) = (&gate_call, &self.engine.gate) {
            match self.ask_gate(gate.as_ref(), gate_call).await {
                Some(GateDecision::Allow) => {}
                Some(GateDecision::AllowWithInput { input: updated }) => input = Some(updated),
                Some(GateDecision::Deny { message }) => {
                    decided = Some(CallResult::not_executed(message, DENIED));
                }
                None => decided = Some(CallResult::interrupted()),
            }
        }
        let input = input.unwrap_or_else(|| call.input.clone());
        self.emitter.event(|| EngineEvent::ToolStart {
            tool_use_id: call.id.clone(),
            name: call.name.clone(),
            input: input.clone(),
        });
        let result = match (decided, plan) {
            (Some(result), _) => result,
            (None, Plan::Execute(tool)) => {
                let mut result = self.execute_tool(tool.as_ref(), call, input).await;
                if let (Some(gate_call), Some(gate)) = (&gate_call, &self.engine.gate) {
                    let output = std::mem::replace(&mut result.output, ToolOutput::text(""));
                    result.output = gate.after_call(gate_call, output).await;
                }
                result
            }
            (None, Plan::Answer(result)) => result.clone(),
        };
        self.emitter.event(|| EngineEvent::ToolEnd {
            tool_use_id: call.id.clone(),
            name: call.name.clone(),
            output: result.output.clone(),
        });
        self.emitter
            .execution(|| ExecutionEvent::ToolExecutionResult {
                execution_id: self.execution_id.clone(),
                round,
                batch_id: batch_id.to_string(),
                index,
                tool_name: call.name.clone(),
                tool_call_id: call.id.clone(),
                success: !result.output.is_error,
                output: result.output.clone(),
                metadata: result.metadata.clone(),
            });
        result
    }

    /// Asks the gate about a call; `None` when an abort ended the wait (the gate got the grace
    /// period to answer after the abort, like a running tool).
    async fn ask_gate(
        &self,
        gate: &dyn super::gate::ToolCallGate,
        call: &GateCall,
    ) -> Option<GateDecision> {
        let grace = self.engine.config.tool_abort_grace;
        let abandon = async {
            self.cancel.cancelled().await;
            tokio::time::sleep(grace).await;
        };
        let decision = tokio::select! {
            biased;
            decision = AssertUnwindSafe(gate.before_call(call, &self.cancel)).catch_unwind() => decision,
            () = abandon => return None,
        };
        match decision {
            // A call approved after the user aborted does not start.
            Ok(_) if self.cancel.is_cancelled() => None,
            Ok(decision) => Some(decision),
            // A gate that panics has not approved anything: fail closed.
            Err(payload) => Some(GateDecision::Deny {
                message: format!(
                    "The permission check for \"{}\" failed unexpectedly ({}), so the call was not run.",
                    call.name,
                    panic_message(payload.as_ref())
                ),
            }),
        }
    }

    /// Runs a tool, turning a panic into an error result and giving up on a tool that ignores an
    /// abort for longer than the grace period.
    async fn execute_tool(&self, tool: &dyn Tool, call: &ParsedCall, input: Value) -> CallResult {
        let context = ToolContext {
            tool_use_id: call.id.clone(),
            cwd: self.engine.config.cwd.clone(),
            // A child token: the tool sees the run's abort, but cancelling it cannot abort the run.
            cancel: self.cancel.child_token(),
        };
        let execution = AssertUnwindSafe(tool.execute(input, context)).catch_unwind();
        let grace = self.engine.config.tool_abort_grace;
        let abandon = async {
            self.cancel.cancelled().await;
            tokio::time::sleep(grace).await;
        };
        tokio::select! {
            biased;
            outcome = execution => match outcome {
                Ok(output) => CallResult { output, metadata: Map::new(), executed: true },
                Err(payload) => {
                    let mut result = CallResult::not_executed(
                        format!(
                            "Tool \"{}\" failed unexpectedly and produced no result (it panicked: {}). Try a different approach.",
                            call.name,
                            panic_message(payload.as_ref())
                        ),
                        TOOL_PANICKED,
                    );
                    result.executed = true;
                    result
                }
            },
            () = abandon => {
                let mut result = CallResult::not_executed(
                    format!(
                        "{INTERRUPTED_RESULT} (the tool did not stop within {} ms of the abort)",
                        grace.as_millis()
                    ),
                    INTERRUPTED,
                );
                result.executed = true;
                result
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use async_trait::async_trait;

    struct Fake {
        name: &'static str,
        read_only: bool,
    }

    #[async_trait]
    impl Tool for Fake {
        fn name(&self) -> &str {
            self.name
        }
        fn description(&self) -> &str {
            "fake"
        }
        fn input_schema(&self) -> Value {
            serde_json::json!({"type": "object"})
        }
        fn is_read_only(&self) -> bool {
            self.read_only
        }
        async fn execute(&self, _input: Value, _context: ToolContext) -> ToolOutput {
            ToolOutput::text("ok")
        }
    }

    fn registry() -> ToolRegistry {
        let mut tools = ToolRegistry::new();
        tools.register(Arc::new(Fake {
            name: "read",
            read_only: true,
        }));
        tools.register(Arc::new(Fake {
            name: "write",
            read_only: false,
        }));
        tools
    }

    fn call(name: &str) -> ParsedCall {
        ParsedCall {
            id: format!("id-{name}"),
            name: name.to_string(),
            input: serde_json::json!({}),
            problem: None,
            problem_code: None,
        }
    }

    #[test]
    fn read_only_runs_group_and_mutating_calls_stand_alone() {
        let tools = registry();
        let plans: Vec<Plan> = ["read", "read", "write", "read", "nope", "write", "write"]
            .iter()
            .map(|name| plan(&tools, &call(name)))
            .collect();
        assert_eq!(groups(&plans), vec![0..2, 2..3, 3..5, 5..6, 6..7]);
        assert_eq!(batch_mode(&plans, 5), BatchMode::Mixed);
        assert_eq!(batch_mode(&plans, 1), BatchMode::Sequential);
        let reads: Vec<Plan> = ["read", "read"]
            .iter()
            .map(|n| plan(&tools, &call(n)))
            .collect();
        assert_eq!(batch_mode(&reads, 5), BatchMode::Parallel);
    }

    #[test]
    fn unknown_tools_are_answered_with_the_available_names() {
        let Plan::Answer(result) = plan(&registry(), &call("Bash")) else {
            panic!("an unknown tool must not be executed");
        };
        assert_eq!(
            result.output.content,
            "Tool \"Bash\" is not registered, so the tool call was not executed. Available tools: read, write."
        );
        assert!(result.output.is_error);
        assert_eq!(result.error_code(), Some(UNKNOWN_TOOL));
        assert_eq!(
            result.metadata["available_tools"],
            serde_json::json!(["read", "write"])
        );
        let Plan::Answer(result) = plan(&ToolRegistry::new(), &call("Bash")) else {
            panic!("an unknown tool must not be executed");
        };
        assert!(result
            .output
            .content
            .ends_with("Available tools: no registered tools are available."));
    }
}
