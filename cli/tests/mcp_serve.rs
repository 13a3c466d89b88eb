//! End-to-end tests of `robota mcp-serve`: the official MCP Python client
//! (`tests/mcp-serve/client.py`, the `mcp` package installed by `tests/mcp-servers/setup.sh`)
//! lists and calls the tools of the real binary over stdio and over streamable HTTP, with
//! mock-llm as the model: a prompt whose tool call writes a file, a second prompt in the same
//! session, a command tool, bad arguments, an unknown session, the saved session resumed by a new
//! server process, and the bearer token over HTTP.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use mock_llm::MockLlm;
use serde_json::{json, Value};
use tempfile::TempDir;

const TOKEN: &str = "mcp-serve-test-token-0123456789";

/// The model's side: a Write call, the answer, a second answer, then (stdio) the answer in the
/// resumed session.
async fn mock_for(project: &Path) -> MockLlm {
    let file = project.join("hello.txt");
    MockLlm::start_json(json!({"turns": [
        {"tool_calls": [{"id": "w1", "name": "Write",
            "input": {"file_path": file.to_string_lossy(), "content": "hello\n"}}]},
        {"text": "Wrote it."},
        {"text": "Second answer."},
        {"text": "Resumed answer."}
    ]}))
    .await
    .expect("start mock-llm")
}

fn write_settings(dir: &Path, mock: &MockLlm) {
    let settings = json!({
        "currentProvider": "mock",
        "providers": {"mock": {
            "type": "anthropic", "model": "claude-sonnet-4-5", "apiKey": "test-key",
            "baseURL": mock.base_url(), "options": {"maxRetries": 0}
        }}
    });
    std::fs::create_dir_all(dir.join(".robota")).expect("create .robota");
    std::fs::write(dir.join(".robota/settings.json"), settings.to_string()).expect("settings");
}

/// The Python of the MCP test venv and the client script.
fn client() -> (PathBuf, PathBuf) {
    let tests = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests");
    let python = tests.join("mcp-servers/.venv/bin/python");
    assert!(
        python.is_file(),
        "the `mcp` Python package is not installed: run tests/mcp-servers/setup.sh"
    );
    (python, tests.join("mcp-serve/client.py"))
}

/// A project folder and a home folder, both temporary.
struct Project {
    dir: TempDir,
    home: TempDir,
}

impl Project {
    fn new() -> Project {
        Project {
            dir: tempfile::tempdir().expect("temp project"),
            home: tempfile::tempdir().expect("temp home"),
        }
    }

    fn path(&self) -> PathBuf {
        // Canonical: the server resolves its roots, and the file path the model writes must be
        // inside them.
        self.dir.path().canonicalize().expect("canonical project")
    }

    fn command(&self, program: &Path) -> Command {
        let mut command = Command::new(program);
        command
            .current_dir(self.path())
            .env("HOME", self.home.path())
            .env_remove("ANTHROPIC_API_KEY")
            .env_remove("ANTHROPIC_BASE_URL")
            .env_remove("OPENAI_API_KEY")
            .env_remove("OPENAI_BASE_URL");
        command
    }
}

/// Runs the client script to completion (at most two minutes) and returns its output.
fn run_client(mut command: Command) -> Output {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run the MCP client");
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    while child.try_wait().expect("wait for the client").is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().expect("client output")
}

/// Checks what the client saw and what the model was sent.
fn check_run(output: &Output, mock: &MockLlm, project: &Project) {
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        output.status.code(),
        Some(0),
        "client failed:\n{stderr}\n{stdout}"
    );
    let seen: Value = serde_json::from_str(stdout.trim()).expect("the client's JSON line");
    assert_eq!(seen["answers"], json!(["Wrote it.", "Second answer."]));
    let tools = seen["tools"].as_array().expect("tools");
    for name in [
        "prompt",
        "command_compact",
        "command_context",
        "command_cost",
    ] {
        assert!(tools.contains(&json!(name)), "{name} missing: {tools:?}");
    }
    // Listing the tools opened no session of its own that stays empty: the prompt took it.
    let saved = std::fs::read_dir(project.path().join(".robota/sessions"))
        .map(|dir| {
            dir.filter_map(Result::ok)
                .filter(|entry| entry.path().extension().is_some_and(|e| e == "json"))
                .count()
        })
        .unwrap_or(0);
    assert!(saved <= 1, "{saved} sessions saved for one conversation");
    // The tool call ran: the file is there.
    assert_eq!(
        std::fs::read_to_string(project.path().join("hello.txt")).expect("hello.txt"),
        "hello\n"
    );
    // The second prompt went on in the same conversation: the model saw the first exchange.
    let requests = mock.requests();
    assert_eq!(requests.len(), 3, "model requests");
    let last = requests[2].body.to_string();
    assert!(
        last.contains("write hello.txt") && last.contains("Wrote it."),
        "{last}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_client_lists_and_calls_the_tools_over_stdio() {
    let (python, script) = client();
    let project = Project::new();
    let mock = mock_for(&project.path()).await;
    write_settings(&project.path(), &mock);
    let mut command = project.command(&python);
    command
        .arg(&script)
        .arg("stdio")
        .arg(env!("CARGO_BIN_EXE_robota"))
        .arg(project.path())
        .args(["--allowed-tools", "Write"]);
    let output = run_client(command);
    check_run(&output, &mock, &project);

    // A new server process resumes the saved session by its id.
    let seen: Value = serde_json::from_slice(&output.stdout).expect("the first run's JSON line");
    let session_id = seen["session_id"].as_str().expect("session id");
    let mut command = project.command(&python);
    command
        .arg(&script)
        .arg("resume")
        .arg(env!("CARGO_BIN_EXE_robota"))
        .arg(project.path())
        .arg(session_id);
    let resumed = run_client(command);
    assert_eq!(
        resumed.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&resumed.stderr)
    );
    let answer: Value = serde_json::from_slice(&resumed.stdout).expect("the resume JSON line");
    assert_eq!(answer["answer"], "Resumed answer.");
    let requests = mock.requests();
    assert_eq!(requests.len(), 4, "model requests");
    let last = requests[3].body.to_string();
    assert!(
        last.contains("write hello.txt") && last.contains("Second answer."),
        "the resumed session lost its history: {last}"
    );
}

/// A `robota mcp-serve --http` process, killed when dropped.
struct HttpServer(Child);

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_client_lists_and_calls_the_tools_over_streamable_http() {
    let (python, script) = client();
    let project = Project::new();
    let mock = mock_for(&project.path()).await;
    write_settings(&project.path(), &mock);
    let mut child = project
        .command(Path::new(env!("CARGO_BIN_EXE_robota")))
        .args([
            "mcp-serve",
            "--http",
            "--port",
            "0",
            "--token-env",
            "MCP_TEST_TOKEN",
        ])
        .args(["--allowed-tools", "Write"])
        .env("MCP_TEST_TOKEN", TOKEN)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn robota mcp-serve --http");
    let stderr = child.stderr.take().expect("stderr");
    let server = HttpServer(child);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(addr) = line.strip_prefix("robota mcp-serve: listening on ") {
                let _ = tx.send(addr.to_string());
            }
            // The token came from the environment: it is never printed.
            assert!(!line.contains(TOKEN), "the token was printed: {line}");
        }
    });
    let base = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("robota mcp-serve --http did not start");

    // A wrong token is refused before MCP sees the request.
    let refused = reqwest::Client::new()
        .post(format!("{base}/mcp"))
        .bearer_auth("wrong-token-0123456789abcdef")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}))
        .send()
        .await
        .expect("request");
    assert_eq!(refused.status().as_u16(), 401);

    let mut command = project.command(&python);
    command
        .arg(&script)
        .arg("http")
        .arg(format!("{base}/mcp"))
        .arg(TOKEN);
    let output = run_client(command);
    check_run(&output, &mock, &project);
    drop(server);
}
