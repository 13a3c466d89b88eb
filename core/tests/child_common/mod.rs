//! Shared harness of the tests that run a session in child processes and kill them: the child
//! is the test binary itself, re-run on one of its `#[ignore]`d helper tests; it reports
//! progress as `@@CHILD <event> <payload>` lines on stdout ([`say`]), which the parent reads
//! through a [`ChildRun`] (wait for an event, SIGKILL, collect what was said).
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use robota::engine::EngineConfig;
use robota::message::{ContentBlock, Message, Role};
use robota::provider::Provider;
use robota::session::{SessionOptions, SessionPersistence, SessionSettings};
use robota::tools::{Tool, ToolContext, ToolOutput, ToolRegistry};
use serde_json::{json, Value};

/// The prefix of the lines a child reports on.
pub const MARK: &str = "@@CHILD ";

/// Reports `event` (with `payload`) to the parent.
pub fn say(event: &str, payload: impl std::fmt::Display) {
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{MARK}{event} {payload}");
    let _ = stdout.flush();
}

/// Runs `future` to completion on a fresh single-threaded runtime (the children's `main`).
pub fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(future)
}

/// A read-only tool that echoes its `text`: every scripted turn calls it once, so each turn has
/// a tool call and its result to check.
pub struct EchoTool;

#[async_trait]
impl Tool for EchoTool {
    fn name(&self) -> &str {
        "echo"
    }
    fn description(&self) -> &str {
        "Echoes its text."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {"text": {"type": "string"}}})
    }
    fn is_read_only(&self) -> bool {
        true
    }
    async fn execute(&self, input: Value, _context: ToolContext) -> ToolOutput {
        ToolOutput::text(format!("echo {}", input["text"]))
    }
}

/// Hermetic options of a session saved in `project`: no settings files, no project context,
/// only the [`EchoTool`], no automatic compaction and no context-window guard (histories padded
/// to make saves slow are far over any window).
pub fn saved_options(project: &std::path::Path, provider: Arc<dyn Provider>) -> SessionOptions {
    let mut tools = ToolRegistry::new();
    tools.register(Arc::new(EchoTool));
    let mut options = SessionOptions::new(project, provider)
        .with_settings(SessionSettings::None)
        .with_project_context(false)
        .with_system_prompt("You are a test.")
        .with_tools(tools)
        .with_auto_compact(false)
        .with_persistence(SessionPersistence::Project);
    options.engine = EngineConfig {
        context_window: Some(0),
        ..EngineConfig::default()
    };
    options
}

/// Every tool call of the history has its result, in the next tool messages.
pub fn assert_calls_answered(what: &str, messages: &[&Message]) {
    let mut open: Vec<String> = Vec::new();
    for message in messages {
        for block in &message.content {
            if let ContentBlock::ToolResult { tool_use_id, .. } = block {
                open.retain(|id| id != tool_use_id);
            }
        }
        if message.role != Role::Tool {
            assert!(
                open.is_empty(),
                "{what}: tool calls {open:?} have no result"
            );
        }
        open.extend(message.tool_uses().map(|(id, _, _)| id.to_string()));
    }
    assert!(
        open.is_empty(),
        "{what}: tool calls {open:?} have no result"
    );
}

/// A child process: this test binary running the ignored test `helper`.
pub struct ChildRun {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<(String, String)>,
    /// Everything the child reported so far (what the waits consumed).
    pub seen: Vec<(String, String)>,
    stderr: Arc<Mutex<String>>,
}

impl ChildRun {
    /// Starts the helper test `helper` with the environment `env` (stdin piped, so that
    /// [`close_stdin`](Self::close_stdin) can tell it to go on).
    pub fn spawn(helper: &str, env: &[(&str, String)]) -> ChildRun {
        let mut command = Command::new(std::env::current_exe().unwrap());
        command
            .args([
                "--exact",
                helper,
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (key, value) in env {
            command.env(key, value);
        }
        let mut child = command.spawn().unwrap();
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().unwrap();
        let stderr_pipe = child.stderr.take().unwrap();
        let stderr: Arc<Mutex<String>> = Arc::default();
        let sink = stderr.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr_pipe).lines().map_while(Result::ok) {
                let mut text = sink.lock().unwrap();
                text.push_str(&line);
                text.push('\n');
            }
        });
        let (sender, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some((_, event)) = line.split_once(MARK) {
                    let (name, payload) = event.split_once(' ').unwrap_or((event, ""));
                    let _ = sender.send((name.to_string(), payload.to_string()));
                }
            }
        });
        ChildRun {
            child,
            stdin,
            lines,
            seen: Vec::new(),
            stderr,
        }
    }

    /// Fails the test, with everything the child said.
    pub fn fail(&mut self, what: &str) -> ! {
        let status = self.child.try_wait().ok().flatten();
        panic!(
            "{what} (status {status:?}); the child said {:?}\n{}",
            self.seen,
            self.stderr.lock().unwrap()
        );
    }

    /// Waits for `event` and returns its payload.
    pub fn wait_for(&mut self, event: &str) -> String {
        self.wait_for_any(&[event]).1
    }

    /// Waits for the first of `events`; returns it and its payload.
    pub fn wait_for_any(&mut self, events: &[&str]) -> (String, String) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok((name, payload)) => {
                    self.seen.push((name.clone(), payload.clone()));
                    if events.contains(&name.as_str()) {
                        return (name, payload);
                    }
                }
                Err(_) => self.fail(&format!("the child reported none of {events:?}")),
            }
        }
    }

    /// Closes the child's stdin (a child waiting for it goes on).
    pub fn close_stdin(&mut self) {
        self.stdin.take();
    }

    /// Waits for the child to exit; its exit code.
    pub fn exit_code(&mut self) -> Option<i32> {
        self.close_stdin();
        self.child.wait().unwrap().code()
    }

    /// SIGKILLs the child and returns everything it reported.
    pub fn kill(mut self) -> Vec<(String, String)> {
        if let Ok(Some(_)) = self.child.try_wait() {
            self.fail("the child exited on its own");
        }
        self.child.kill().unwrap();
        self.child.wait().unwrap();
        // The reader thread ends at EOF: drain what it read before the kill.
        let mut events = std::mem::take(&mut self.seen);
        events.extend(self.lines.iter());
        events
    }

    /// The child's pid.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}
