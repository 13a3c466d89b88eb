//! The Rust runner of the cross-language conformance scenarios in `tests/conformance/` (DESIGN
//! §8): every `scenarios/*.json` is played against an [`InteractiveSession`] with the scripted
//! provider, host tools and a permission handler implemented here from the scenario, and the
//! normalized events, messages, command results, name and response are compared with the
//! scenario's `expected`. The format and the normalization rules are specified in
//! `tests/conformance/README.md`; this file implements them and nothing more, so that the C,
//! Python, Node and Swift runners can be checked against the same files.
//!
//! Set `CONFORMANCE_PRINT=1` to print the actual normalized result of every scenario (useful
//! when writing a new scenario).

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use robota::framework::commands::custom::CommandRegistration;
use robota::framework::interactive::{
    InteractiveEvent, InteractiveSession, InteractiveSessionOptions, Subscription,
};
use robota::framework::skills::SkillRegistration;
use robota::provider::scripted::{ScriptedProvider, ScriptedTurn};
use robota::session::{FnPermissionHandler, PermissionResponse, SessionOptions, SessionSettings};
use robota::tools::{Tool, ToolContext, ToolOutput, ToolRegistry};
use serde::Deserialize;
use serde_json::{json, Map, Value};

/// How long any single wait (an event, idle) may take before the scenario fails: generous, as
/// scripted runs take milliseconds and a hang should fail rather than block CI forever.
const WAIT: Duration = Duration::from_secs(20);

/// Event types that survive normalization; everything else is dropped (see README).
const KEPT_EVENTS: &[&str] = &[
    "text_delta",
    "thinking",
    "tool_start",
    "tool_end",
    "permission_request",
    "complete",
    "interrupted",
    "error",
    "skill_activation",
];

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Scenario {
    name: String,
    #[allow(dead_code)] // Documentation for readers of the scenario.
    description: String,
    provider: ProviderScript,
    #[serde(default)]
    host_tools: Vec<HostToolSpec>,
    #[serde(default)]
    permission_answers: Vec<PermissionAnswer>,
    #[serde(default)]
    settings: Option<ScenarioSettings>,
    /// Skills the host registers as data (`{name, content}`).
    #[serde(default)]
    skills: Vec<SkillRegistration>,
    /// Custom slash commands the host registers as data (`{name, content}`).
    #[serde(default)]
    commands: Vec<CommandRegistration>,
    /// Real MCP servers the host gives the session, by catalog name (tests/conformance/README.md).
    #[serde(default)]
    mcp_servers: Vec<String>,
    /// Commands the host implements in its own language: each performs its `operations` on
    /// the live command context, in order, then answers `result`.
    #[serde(default)]
    host_commands: Vec<HostCommandSpec>,
    /// The built-in tools (Bash, Read, …, and with them the background task manager) beside
    /// the host tools.
    #[serde(default)]
    builtin_tools: bool,
    /// Structured output: the session options' `output_format` (`{"type": "json_schema",
    /// "schema": …}`).
    #[serde(default)]
    output_format: Option<Value>,
    /// The session options' `max_structured_output_retries`.
    #[serde(default)]
    max_structured_output_retries: Option<u32>,
    actions: Vec<Action>,
    expected: Value,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct HostCommandSpec {
    name: String,
    description: String,
    operations: Vec<Value>,
    result: Value,
}

/// A host-implemented command: performs the scenario's context operations, then answers.
struct HostCommandFunction(HostCommandSpec);

#[async_trait]
impl robota::api::HostFunction for HostCommandFunction {
    async fn call(&self, call: robota::api::HostCall) -> Result<Value, String> {
        let context = call.context.ok_or("the command call has no context")?;
        for op in &self.0.operations {
            context
                .call_json(op.clone())
                .await
                .map_err(|e| format!("operation {op} failed: {e}"))?;
        }
        Ok(self.0.result.clone())
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ProviderScript {
    turns: Vec<ScriptedTurn>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct HostToolSpec {
    name: String,
    description: String,
    input_schema: Value,
    #[serde(default)]
    read_only: bool,
    /// Milliseconds the tool takes; an abort ends the wait early.
    #[serde(default)]
    delay_ms: u64,
    result: HostToolResult,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct HostToolResult {
    content: String,
    #[serde(default)]
    is_error: bool,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct PermissionAnswer {
    tool: String,
    answer: String,
    #[serde(default)]
    message: Option<String>,
    /// For `allow_with_input`: the input the tool runs with.
    #[serde(default)]
    input: Option<Value>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScenarioSettings {
    #[serde(default)]
    permission_mode: Option<String>,
    #[serde(default)]
    allow: Vec<String>,
    #[serde(default)]
    deny: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
enum Action {
    Submit(String),
    AbortAfterEvent(String),
    Command { name: String, args: String },
    WaitIdle(#[allow(dead_code)] Option<Value>),
    StartBackgroundSubagent(SubagentAction),
    ListBackgroundTasks(#[allow(dead_code)] Option<Value>),
    CancelBackgroundTask(String),
}

/// `{"prompt", "agent_type"?}`: a subagent the host starts in the background.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SubagentAction {
    prompt: String,
    #[serde(default)]
    agent_type: Option<String>,
}

/// `{id, kind, status, command}` of a listed background task.
fn normalize_task(task: &Value) -> Value {
    json!({
        "id": task["id"],
        "kind": task["kind"],
        "status": task["status"],
        "command": task["command"],
    })
}

/// A host-implemented tool: returns the scenario's canned result after its delay.
struct HostTool(HostToolSpec);

#[async_trait]
impl Tool for HostTool {
    fn name(&self) -> &str {
        &self.0.name
    }
    fn description(&self) -> &str {
        &self.0.description
    }
    fn input_schema(&self) -> Value {
        self.0.input_schema.clone()
    }
    fn is_read_only(&self) -> bool {
        self.0.read_only
    }
    async fn execute(&self, _input: Value, context: ToolContext) -> ToolOutput {
        if self.0.delay_ms > 0 {
            tokio::select! {
                () = context.cancel.cancelled() => return ToolOutput::error("aborted"),
                () = tokio::time::sleep(Duration::from_millis(self.0.delay_ms)) => {}
            }
        }
        let result = &self.0.result;
        if result.is_error {
            ToolOutput::error(result.content.clone())
        } else {
            ToolOutput::text(result.content.clone())
        }
    }
}

fn scenario_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/conformance/scenarios")
}

fn load_scenarios() -> Vec<(PathBuf, Scenario)> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(scenario_dir())
        .expect("tests/conformance/scenarios exists")
        .map(|entry| entry.expect("dir entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "json"))
        .collect();
    paths.sort();
    paths
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).expect("readable scenario");
            let scenario: Scenario = serde_json::from_str(&text)
                .unwrap_or_else(|e| panic!("{}: invalid scenario: {e}", path.display()));
            (path, scenario)
        })
        .collect()
}

/// The permission handler: answers requests from `permission_answers` in order, checking that
/// each request is for the tool the scenario expects.
fn permission_handler(
    answers: Vec<PermissionAnswer>,
    mismatches: Arc<Mutex<Vec<String>>>,
) -> Arc<FnPermissionHandler> {
    let queue = Arc::new(Mutex::new(VecDeque::from(answers)));
    FnPermissionHandler::new(move |request, _cancel| {
        let next = queue
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop_front();
        let mismatches = Arc::clone(&mismatches);
        async move {
            let record = |problem: String| {
                mismatches
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(problem);
            };
            let Some(answer) = next else {
                record(format!(
                    "unexpected permission request for `{}` (no answers left)",
                    request.tool_name
                ));
                return PermissionResponse::deny("no answer scripted");
            };
            if answer.tool != request.tool_name {
                record(format!(
                    "permission request for `{}`, but the next answer is for `{}`",
                    request.tool_name, answer.tool
                ));
            }
            match answer.answer.as_str() {
                "allow_once" => PermissionResponse::AllowOnce,
                "allow_session" => PermissionResponse::AllowSession { rules: Vec::new() },
                "allow_with_input" => {
                    PermissionResponse::allow_with_input(answer.input.unwrap_or_default())
                }
                "deny" => PermissionResponse::deny(answer.message.unwrap_or_default()),
                other => {
                    record(format!("unknown permission answer `{other}`"));
                    PermissionResponse::deny("unknown answer")
                }
            }
        }
    })
}

fn settings(scenario: &Scenario, home: &Path) -> SessionSettings {
    let Some(s) = &scenario.settings else {
        return SessionSettings::None;
    };
    let mut permissions = Map::new();
    if let Some(mode) = &s.permission_mode {
        permissions.insert("defaultMode".into(), json!(mode));
    }
    permissions.insert("allow".into(), json!(s.allow));
    permissions.insert("deny".into(), json!(s.deny));
    // A temp home with no files keeps the user's real settings out; the overrides are the only
    // layer with content.
    SessionSettings::Load {
        home: Some(home.to_path_buf()),
        env: Default::default(),
        overrides: Some(json!({ "permissions": permissions })),
    }
}

/// Reads events until one of type `until` arrives (included).
async fn read_until(sub: &Subscription, until: &str, into: &mut Vec<Value>, scenario: &str) {
    loop {
        let event = sub
            .next_event(WAIT)
            .await
            .unwrap_or_else(|| panic!("{scenario}: no `{until}` event within {WAIT:?}"));
        let value = event_json(&event);
        let done = value["type"] == until;
        into.push(value);
        if done {
            return;
        }
    }
}

fn event_json(event: &InteractiveEvent) -> Value {
    serde_json::to_value(event).expect("events serialize")
}

/// The scenario's MCP servers from the catalog in tests/conformance/README.md, given by the host.
fn mcp_servers(scenario: &Scenario) -> Vec<robota::mcp::McpServerEntry> {
    let servers_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/mcp-servers");
    let mut config = serde_json::Map::new();
    for name in &scenario.mcp_servers {
        let server = match name.as_str() {
            "pytools" => {
                let python = servers_dir.join(".venv/bin/python");
                assert!(
                    python.is_file(),
                    "{}: the MCP test servers are not installed: run tests/mcp-servers/setup.sh",
                    scenario.name
                );
                json!({
                    "command": python.display().to_string(),
                    "args": [servers_dir.join("python_server.py").display().to_string()],
                })
            }
            other => panic!("{}: unknown MCP server `{other}`", scenario.name),
        };
        config.insert(name.clone(), server);
    }
    let (entries, warnings) = robota::mcp::parse_mcp_servers(
        &Value::Object(config),
        &robota::mcp::McpServerOrigin::Host,
        &|_| None,
    );
    assert!(warnings.is_empty(), "{}: {warnings:?}", scenario.name);
    entries
}

/// Runs one scenario and returns the actual normalized result, in the shape of `expected`.
async fn run(scenario: &Scenario) -> Value {
    let cwd = tempfile::tempdir().expect("tempdir");
    let home = tempfile::tempdir().expect("tempdir");
    let provider = Arc::new(ScriptedProvider::new(scenario.provider.turns.clone()));
    let mut tools = ToolRegistry::new();
    for spec in &scenario.host_tools {
        tools.register(Arc::new(HostTool(spec.clone())));
    }
    let mismatches = Arc::new(Mutex::new(Vec::new()));
    let mut session_options = SessionOptions::new(cwd.path(), provider.clone())
        .with_settings(settings(scenario, home.path()))
        .with_project_context(false)
        .with_tools(tools.clone())
        .with_permission_handler(permission_handler(
            scenario.permission_answers.clone(),
            Arc::clone(&mismatches),
        ));
    if scenario.builtin_tools {
        session_options.tools = None;
        session_options.extra_tools = tools
            .names()
            .into_iter()
            .filter_map(|name| tools.get(name).cloned())
            .collect();
    }
    if let Some(format) = &scenario.output_format {
        session_options.output_format = Some(
            robota::session::structured_output::OutputFormat::from_json_value(format.clone())
                .unwrap_or_else(|e| panic!("{}: output_format: {e}", scenario.name)),
        );
    }
    if let Some(retries) = scenario.max_structured_output_retries {
        session_options.max_structured_output_retries = retries;
    }
    let mut interactive_options = InteractiveSessionOptions::new(session_options);
    interactive_options.skills = scenario.skills.clone();
    interactive_options.commands = scenario.commands.clone();
    interactive_options.session.mcp_servers = mcp_servers(scenario);
    if !scenario.host_commands.is_empty() {
        let commands = scenario
            .host_commands
            .iter()
            .map(|spec| {
                let command = robota::api::HostCommand::from_json_value(
                    json!({"name": spec.name, "description": spec.description}),
                    Arc::new(HostCommandFunction(spec.clone())),
                )
                .unwrap_or_else(|e| panic!("{}: host command: {e}", scenario.name));
                Arc::new(command) as Arc<dyn robota::framework::commands::SystemCommand>
            })
            .collect();
        interactive_options
            .command_modules
            .push(robota::api::HostCommand::module(commands));
    }
    let session = InteractiveSession::new(interactive_options)
        .unwrap_or_else(|e| panic!("{}: session: {e}", scenario.name));
    let sub = session.subscribe_pull();
    let mut events = Vec::new();
    let mut commands = Vec::new();
    let mut background_tasks = Vec::new();

    for action in &scenario.actions {
        match action {
            Action::Submit(prompt) => {
                session
                    .submit(prompt, None, None)
                    .await
                    .unwrap_or_else(|e| panic!("{}: submit: {e}", scenario.name));
            }
            Action::AbortAfterEvent(event_type) => {
                read_until(&sub, event_type, &mut events, &scenario.name).await;
                session.abort();
            }
            Action::Command { name, args } => {
                let result = session
                    .execute_command(name, args)
                    .await
                    .unwrap_or_else(|e| panic!("{}: command {name}: {e}", scenario.name));
                let result = serde_json::to_value(result).expect("results serialize");
                commands.push(json!({
                    "name": name,
                    "success": result["success"],
                    "effects": result.get("effects").cloned().unwrap_or_else(|| json!([])),
                }));
            }
            Action::WaitIdle(_) => {
                tokio::time::timeout(WAIT, session.wait_idle())
                    .await
                    .unwrap_or_else(|_| panic!("{}: not idle within {WAIT:?}", scenario.name));
            }
            Action::StartBackgroundSubagent(action) => {
                session
                    .start_background_subagent(robota::framework::agents::SubagentRequest {
                        agent_type: action.agent_type.clone(),
                        prompt: action.prompt.clone(),
                        ..Default::default()
                    })
                    .unwrap_or_else(|e| panic!("{}: start subagent: {e}", scenario.name));
            }
            Action::ListBackgroundTasks(_) => {
                let listed: Vec<Value> = session
                    .list_background_tasks()
                    .iter()
                    .map(|t| normalize_task(&serde_json::to_value(t).expect("tasks serialize")))
                    .collect();
                background_tasks.push(Value::Array(listed));
            }
            Action::CancelBackgroundTask(id) => {
                tokio::time::timeout(WAIT, session.cancel_background_task(id))
                    .await
                    .unwrap_or_else(|_| panic!("{}: cancel {id}: too slow", scenario.name))
                    .unwrap_or_else(|e| panic!("{}: cancel {id}: {e}", scenario.name));
            }
        }
    }
    // The implicit final wait_idle: every event of an accepted prompt is queued by then.
    tokio::time::timeout(WAIT, session.wait_idle())
        .await
        .unwrap_or_else(|_| panic!("{}: not idle within {WAIT:?}", scenario.name));
    while let Some(event) = sub.try_next_event() {
        events.push(event_json(&event));
    }

    let session_id = session.get_session_id();
    check_envelopes(&events, &session_id, &scenario.name);
    let messages: Vec<Value> = session
        .get_messages()
        .iter()
        .map(|m| normalize_message(&serde_json::to_value(m).expect("messages serialize")))
        .collect();
    let response = events
        .iter()
        .rev()
        .find(|e| e["type"] == "complete" || e["type"] == "interrupted")
        .and_then(|e| e["outcome"]["response"].as_str())
        .map(|s| json!(s));
    let mismatches = mismatches
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    assert!(
        mismatches.is_empty(),
        "{}: permission answers: {mismatches:?}",
        scenario.name
    );

    let mut actual = Map::new();
    // Optional parts are only compared when the scenario states them.
    if scenario.expected.get("events").is_some() {
        actual.insert("events".into(), Value::Array(normalize_events(&events)));
    }
    if scenario.expected.get("messages").is_some() {
        actual.insert("messages".into(), Value::Array(messages));
    }
    if scenario.expected.get("background_tasks").is_some() {
        actual.insert("background_tasks".into(), Value::Array(background_tasks));
    }
    if scenario.expected.get("response").is_some() {
        actual.insert("response".into(), response.unwrap_or(Value::Null));
    }
    if scenario.expected.get("commands").is_some() {
        actual.insert("commands".into(), Value::Array(commands));
    }
    if scenario.expected.get("name").is_some() {
        actual.insert("name".into(), json!(session.get_name()));
    }
    Value::Object(actual)
}

/// `seq` strictly increases and every event carries this session's id.
fn check_envelopes(events: &[Value], session_id: &str, scenario: &str) {
    let mut last = 0;
    for event in events {
        let seq = event["seq"].as_u64().unwrap_or(0);
        assert!(seq > last, "{scenario}: seq {seq} after {last} in {event}");
        last = seq;
        assert_eq!(
            event["session_id"], session_id,
            "{scenario}: wrong session_id in {event}"
        );
    }
}

/// Keeps the kept event types with their key fields and joins consecutive text (and thinking)
/// chunks, whose split depends on delivery speed (coalescing), not on behaviour.
fn normalize_events(events: &[Value]) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    for event in events {
        let kind = event["type"].as_str().unwrap_or_default();
        if !KEPT_EVENTS.contains(&kind) {
            continue;
        }
        let normalized = match kind {
            "text_delta" | "thinking" => {
                let text = event["text"].as_str().unwrap_or_default();
                if let Some(previous) = out.last_mut() {
                    if previous["type"] == kind {
                        let joined = format!("{}{text}", previous["text"].as_str().unwrap_or(""));
                        previous["text"] = json!(joined);
                        continue;
                    }
                }
                json!({"type": kind, "text": text})
            }
            "tool_start" => json!({
                "type": kind,
                "name": event["tool"]["name"],
                "first_arg": event["tool"]["first_arg"],
            }),
            "tool_end" => {
                let mut value = json!({
                    "type": kind,
                    "name": event["tool"]["name"],
                    "result": event["tool"]["result"],
                });
                if let Some(data) = event["tool"].get("tool_result_data") {
                    value["tool_result_data"] = data.clone();
                }
                value
            }
            "permission_request" => json!({
                "type": kind,
                "tool_name": event["tool_name"],
                "input": event["input"],
            }),
            "complete" => {
                let mut value = json!({
                    "type": kind,
                    "response": event["outcome"]["response"],
                    "stop_reason": event["outcome"]["stop_reason"],
                    "tools_executed": event["outcome"]["tools_executed"],
                });
                if let Some(output) = event["outcome"].get("structured_output") {
                    value["structured_output"] = output.clone();
                }
                value
            }
            "interrupted" => json!({"type": kind}),
            "skill_activation" => json!({
                "type": kind,
                "skill_name": event["data"]["skill_name"],
                "invocation": event["data"]["invocation"],
                "mode": event["data"]["mode"],
                "status": event["data"]["status"],
            }),
            _ => json!({"type": kind, "message": event["message"]}),
        };
        out.push(normalized);
    }
    out
}

/// `{role, text?, tool_uses?, tool_results?, state?}` from a message's JSON.
fn normalize_message(message: &Value) -> Value {
    let mut out = Map::new();
    out.insert("role".into(), message["role"].clone());
    let blocks = message["content"].as_array().cloned().unwrap_or_default();
    let text: String = blocks
        .iter()
        .filter(|b| b["type"] == "text")
        .filter_map(|b| b["text"].as_str())
        .collect();
    if !text.is_empty() {
        out.insert("text".into(), json!(text));
    }
    let tool_uses: Vec<Value> = blocks
        .iter()
        .filter(|b| b["type"] == "tool_use")
        .map(|b| json!({"name": b["name"], "input": b["input"]}))
        .collect();
    if !tool_uses.is_empty() {
        out.insert("tool_uses".into(), Value::Array(tool_uses));
    }
    let tool_results: Vec<Value> = blocks
        .iter()
        .filter(|b| b["type"] == "tool_result")
        .map(|b| {
            json!({
                "content": b["content"],
                "is_error": b.get("is_error").cloned().unwrap_or(json!(false)),
            })
        })
        .collect();
    if !tool_results.is_empty() {
        out.insert("tool_results".into(), Value::Array(tool_results));
    }
    if message["state"] == "interrupted" {
        out.insert("state".into(), json!("interrupted"));
    }
    Value::Object(out)
}

/// A line diff of the pretty-printed JSON, so a mismatch shows where it is.
fn diff(expected: &Value, actual: &Value) -> String {
    let expected = serde_json::to_string_pretty(expected).unwrap_or_default();
    let actual = serde_json::to_string_pretty(actual).unwrap_or_default();
    similar::TextDiff::from_lines(&expected, &actual)
        .unified_diff()
        .header("expected", "actual")
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conformance_scenarios() {
    let scenarios = load_scenarios();
    assert!(!scenarios.is_empty(), "no scenarios found");
    let print = std::env::var_os("CONFORMANCE_PRINT").is_some();
    let mut failures = Vec::new();
    for (path, scenario) in &scenarios {
        let actual = run(scenario).await;
        if print {
            println!(
                "== {}\n{}",
                scenario.name,
                serde_json::to_string_pretty(&actual).unwrap_or_default()
            );
        }
        if actual != scenario.expected {
            failures.push(format!(
                "scenario `{}` ({}):\n{}",
                scenario.name,
                path.display(),
                diff(&scenario.expected, &actual)
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} conformance scenarios failed:\n\n{}",
        failures.len(),
        scenarios.len(),
        failures.join("\n")
    );
}
