//! Shared harness of the session tests: a temporary project with a fake HOME, settings files
//! written by the test, a mock-llm server speaking Anthropic (or OpenAI), a recording permission
//! handler and an event recorder.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mock_llm::MockLlm;
use robota::provider::{
    AnthropicConfig, AnthropicProvider, HttpOptions, OpenAiConfig, OpenAiProvider, Provider,
};
use robota::session::{
    FnPermissionHandler, PermissionHandler, PermissionRequest, PermissionResponse, Session,
    SessionEvent, SessionOptions, SessionSettings,
};
use serde_json::{json, Value};

/// Which wire format the provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    Anthropic,
    OpenAi,
}

/// A project directory and a separate fake home directory.
pub struct Project {
    _dir: tempfile::TempDir,
    _home: tempfile::TempDir,
    /// The project root (canonical, so paths compare equal to what tools report).
    pub root: PathBuf,
    /// The fake home.
    pub home: PathBuf,
}

impl Project {
    pub fn new() -> Project {
        let dir = tempfile::tempdir().expect("temp dir");
        let home = tempfile::tempdir().expect("temp home");
        let root = std::fs::canonicalize(dir.path()).expect("canonical root");
        let home_path = std::fs::canonicalize(home.path()).expect("canonical home");
        Project {
            _dir: dir,
            _home: home,
            root,
            home: home_path,
        }
    }

    /// A path inside the project.
    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    /// Writes a file inside the project (creating directories).
    pub fn write(&self, rel: &str, text: &str) -> PathBuf {
        let path = self.path(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("mkdir");
        }
        std::fs::write(&path, text).expect("write");
        path
    }

    /// Writes `.claude/settings.json` (or another settings file) with `value`.
    pub fn settings(&self, rel: &str, value: Value) -> PathBuf {
        self.write(rel, &serde_json::to_string_pretty(&value).expect("json"))
    }

    /// Reads a file inside the project ("" when missing).
    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.path(rel)).unwrap_or_default()
    }

    /// Settings loaded from the project and the fake home (no process environment).
    pub fn session_settings(&self) -> SessionSettings {
        SessionSettings::with_home(&self.home)
    }

    /// A scratch directory for hook output.
    pub fn scratch(&self, name: &str) -> PathBuf {
        let dir = self.root.join(".scratch").join(name);
        std::fs::create_dir_all(&dir).expect("scratch");
        dir
    }
}

/// A fixture script, shell-quoted, with shell-quoted arguments.
pub fn fixture(name: &str, args: &[&str]) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/session")
        .join(name);
    let mut command = quote(&path.to_string_lossy());
    for arg in args {
        command.push(' ');
        command.push_str(&quote(arg));
    }
    command
}

pub fn quote(arg: &str) -> String {
    format!("'{}'", arg.replace('\'', r"'\''"))
}

/// A `command` hook handler.
pub fn command(command: String) -> Value {
    json!({"type": "command", "command": command})
}

/// A `command` hook handler with a timeout in seconds.
pub fn command_with_timeout(command: String, seconds: f64) -> Value {
    json!({"type": "command", "command": command, "timeout": seconds})
}

/// One matcher group.
pub fn group(matcher: Option<&str>, handlers: Vec<Value>) -> Value {
    let mut group = json!({"hooks": handlers});
    if let Some(m) = matcher {
        group["matcher"] = json!(m);
    }
    group
}

/// Short timeouts and no retries: a test's fault is reported at once.
pub fn fast_http() -> HttpOptions {
    HttpOptions {
        idle_timeout: Duration::from_secs(20),
        connect_timeout: Duration::from_secs(2),
        max_retries: 0,
        initial_backoff: Duration::from_millis(5),
        max_backoff: Duration::from_millis(20),
        ..HttpOptions::default()
    }
}

/// A running mock-llm and the provider pointed at it.
pub struct Mock {
    pub mock: MockLlm,
    pub wire: Wire,
}

impl Mock {
    pub async fn start(script: Value) -> Mock {
        Mock::start_wire(Wire::Anthropic, script).await
    }

    pub async fn start_wire(wire: Wire, script: Value) -> Mock {
        Mock {
            mock: MockLlm::start_json(script).await.expect("mock-llm starts"),
            wire,
        }
    }

    pub fn provider(&self) -> Arc<dyn Provider> {
        match self.wire {
            Wire::Anthropic => Arc::new(
                AnthropicProvider::new(AnthropicConfig {
                    api_key: Some("sk-ant-test".into()),
                    base_url: Some(self.mock.base_url()),
                    http: fast_http(),
                    ..AnthropicConfig::new("claude-sonnet-4-5")
                })
                .expect("anthropic provider"),
            ),
            Wire::OpenAi => Arc::new(
                OpenAiProvider::new(OpenAiConfig {
                    api_key: Some("sk-openai-test".into()),
                    base_url: Some(format!("{}/v1", self.mock.base_url())),
                    http: fast_http(),
                    ..OpenAiConfig::new("gpt-4o")
                })
                .expect("openai provider"),
            ),
        }
    }

    /// The request bodies the mock received.
    pub fn bodies(&self) -> Vec<Value> {
        self.mock.requests().into_iter().map(|r| r.body).collect()
    }

    /// Tool results (`tool_use_id`, content) in request `index`.
    pub fn tool_results(&self, index: usize) -> Vec<(String, String)> {
        let bodies = self.bodies();
        let body = bodies
            .get(index)
            .unwrap_or_else(|| panic!("no request #{index}"));
        let mut out = Vec::new();
        for message in body["messages"].as_array().into_iter().flatten() {
            match self.wire {
                Wire::Anthropic => {
                    for block in message["content"].as_array().into_iter().flatten() {
                        if block["type"] == "tool_result" {
                            out.push((
                                block["tool_use_id"].as_str().unwrap_or("").to_string(),
                                content_text(&block["content"]),
                            ));
                        }
                    }
                }
                Wire::OpenAi => {
                    if message["role"] == "tool" {
                        out.push((
                            message["tool_call_id"].as_str().unwrap_or("").to_string(),
                            content_text(&message["content"]),
                        ));
                    }
                }
            }
        }
        out
    }

    /// The tool result for `tool_use_id` in the last request.
    pub fn result_for(&self, tool_use_id: &str) -> String {
        let last = self
            .bodies()
            .len()
            .checked_sub(1)
            .expect("a request was made");
        self.tool_results(last)
            .into_iter()
            .find(|(id, _)| id == tool_use_id)
            .map(|(_, content)| content)
            .unwrap_or_else(|| panic!("no result for {tool_use_id} in the last request"))
    }

    /// The user texts (not tool results) of request `index`, in order.
    pub fn user_texts(&self, index: usize) -> Vec<String> {
        let bodies = self.bodies();
        let body = bodies
            .get(index)
            .unwrap_or_else(|| panic!("no request #{index}"));
        body["messages"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|m| m["role"] == "user")
            .map(|m| match &m["content"] {
                Value::String(text) => text.clone(),
                Value::Array(blocks) => blocks
                    .iter()
                    .filter(|b| b["type"] == "text")
                    .filter_map(|b| b["text"].as_str())
                    .collect::<Vec<_>>()
                    .join(""),
                _ => String::new(),
            })
            .filter(|t| !t.is_empty())
            .collect()
    }

    /// The system prompt of request `index` (Anthropic's `system`, as one text).
    pub fn system(&self, index: usize) -> String {
        let body = &self.bodies()[index];
        match &body["system"] {
            Value::String(text) => text.clone(),
            Value::Array(blocks) => blocks
                .iter()
                .filter_map(|b| b["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n"),
            _ => String::new(),
        }
    }

    /// The tool names offered in request `index`.
    pub fn tool_names(&self, index: usize) -> Vec<String> {
        let bodies = self.bodies();
        let body = bodies
            .get(index)
            .unwrap_or_else(|| panic!("no request #{index}"));
        body["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| {
                t["name"]
                    .as_str()
                    .or_else(|| t["function"]["name"].as_str())
                    .map(str::to_string)
            })
            .collect()
    }
}

fn content_text(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

/// A model turn calling one tool.
pub fn tool_turn(id: &str, name: &str, input: Value) -> Value {
    json!({"tool_calls": [{"id": id, "name": name, "input": input}]})
}

/// A model turn answering with text.
pub fn text_turn(text: &str) -> Value {
    json!({"text": text})
}

/// Collects session events.
#[derive(Clone, Default)]
pub struct Events(pub Arc<Mutex<Vec<SessionEvent>>>);

impl Events {
    pub fn all(&self) -> Vec<SessionEvent> {
        self.0.lock().unwrap().clone()
    }

    /// The `type` tags, in order.
    pub fn kinds(&self) -> Vec<String> {
        self.all()
            .iter()
            .map(|e| {
                serde_json::to_value(e).unwrap()["type"]
                    .as_str()
                    .unwrap_or("")
                    .to_string()
            })
            .collect()
    }

    /// Events of one `type`, as JSON.
    pub fn of(&self, kind: &str) -> Vec<Value> {
        self.all()
            .iter()
            .map(|e| serde_json::to_value(e).unwrap())
            .filter(|v| v["type"] == kind)
            .collect()
    }
}

/// Answers permission requests from a fixed list (the last answer repeats) and records them.
#[derive(Clone, Default)]
pub struct Handler {
    pub requests: Arc<Mutex<Vec<PermissionRequest>>>,
}

impl Handler {
    pub fn answering(&self, answers: Vec<PermissionResponse>) -> Arc<dyn PermissionHandler> {
        let requests = self.requests.clone();
        let answers = Arc::new(Mutex::new(answers));
        FnPermissionHandler::new(move |request, _cancel| {
            requests.lock().unwrap().push(request);
            let mut answers = answers.lock().unwrap();
            let answer = if answers.len() > 1 {
                answers.remove(0)
            } else {
                answers
                    .first()
                    .cloned()
                    .unwrap_or(PermissionResponse::AllowOnce)
            };
            async move { answer }
        })
    }

    pub fn count(&self) -> usize {
        self.requests.lock().unwrap().len()
    }

    pub fn tools(&self) -> Vec<String> {
        self.requests
            .lock()
            .unwrap()
            .iter()
            .map(|r| r.tool_name.clone())
            .collect()
    }
}

/// Options for a session in `project` talking to `mock`, loading the project's settings with the
/// fake home and recording events into `events`.
pub fn options(project: &Project, mock: &Mock, events: &Events) -> SessionOptions {
    let sink = events.0.clone();
    SessionOptions::new(&project.root, mock.provider())
        .with_settings(project.session_settings())
        .with_on_event(move |event| sink.lock().unwrap().push(event))
}

/// A session from `options`, panicking with the error's message on failure.
pub fn session(options: SessionOptions) -> Session {
    Session::new(options).unwrap_or_else(|e| panic!("session: {e}"))
}

/// The JSON lines a recording hook wrote to `path`.
pub fn records(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// Waits (up to 10 s) until `path` has at least `n` records (hooks that are not awaited).
pub async fn wait_for_records(path: &Path, n: usize) -> Vec<Value> {
    for _ in 0..200 {
        let found = records(path);
        if found.len() >= n {
            return found;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    records(path)
}

/// Events of `sub` until one of type `until` (inclusive); panics after 30 s without it.
pub async fn until(
    sub: &robota::framework::interactive::Subscription,
    until: &str,
) -> Vec<robota::framework::interactive::InteractiveEvent> {
    let mut events = Vec::new();
    loop {
        let event = sub
            .next_event(Duration::from_secs(30))
            .await
            .unwrap_or_else(|| panic!("no `{until}` event; got {events:#?}"));
        let done = event.kind.type_name() == until;
        events.push(event);
        if done {
            return events;
        }
    }
}

/// The `skill_activation` records among `events`, in order.
pub fn skill_activations(
    events: &[robota::framework::interactive::InteractiveEvent],
) -> Vec<robota::framework::skills::SkillActivation> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            robota::framework::interactive::InteractiveEventKind::SkillActivation { data } => {
                Some(data.clone())
            }
            _ => None,
        })
        .collect()
}

/// The data of the session's `skill-activation` history entries, in order.
pub fn skill_activation_history(
    session: &robota::framework::interactive::InteractiveSession,
) -> Vec<Value> {
    session
        .get_full_history()
        .into_iter()
        .filter_map(|entry| match entry {
            robota::message::HistoryEntry::Event {
                event_type, data, ..
            } if event_type == "skill-activation" => Some(data),
            _ => None,
        })
        .collect()
}
