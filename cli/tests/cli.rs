//! End-to-end tests of the `robota` binary: each runs the real executable in a temporary project
//! folder with `HOME` pointed at a temporary directory, against mock-llm on loopback (or offline
//! providers), and checks what a user sees: stdout, stderr, exit codes and saved session files.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use std::io::Write;

use mock_llm::MockLlm;
use serde_json::{json, Value};
use tempfile::TempDir;

/// A project folder and a home directory, both temporary.
struct Project {
    dir: TempDir,
    home: TempDir,
}

impl Project {
    fn new() -> Project {
        Project {
            dir: tempfile::tempdir().expect("temp project dir"),
            home: tempfile::tempdir().expect("temp home dir"),
        }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Points the project's settings at mock-llm's Anthropic endpoint.
    fn use_mock(&self, mock: &MockLlm) {
        self.write_settings(json!({
            "currentProvider": "mock",
            "providers": {"mock": {
                "type": "anthropic", "model": "claude-sonnet-4-5", "apiKey": "test-key",
                "baseURL": mock.base_url(), "options": {"maxRetries": 0}
            }}
        }));
    }

    fn write_settings(&self, settings: Value) {
        let dir = self.path().join(".robota");
        std::fs::create_dir_all(&dir).expect("create .robota");
        std::fs::write(dir.join("settings.json"), settings.to_string()).expect("write settings");
    }

    /// The binary, in the project, with no provider variables from the outer environment.
    fn robota(&self) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_robota"));
        command
            .current_dir(self.path())
            .env("HOME", self.home.path())
            .env("USERPROFILE", self.home.path())
            .env_remove("ANTHROPIC_API_KEY")
            .env_remove("ANTHROPIC_BASE_URL")
            .env_remove("OPENAI_API_KEY")
            .env_remove("OPENAI_BASE_URL")
            .stdin(Stdio::null());
        command
    }

    fn run(&self, args: &[&str]) -> Output {
        self.robota().args(args).output().expect("run robota")
    }

    /// Runs the binary with `args`, `input` piped to its stdin (then closed).
    fn run_with_input(&self, args: &[&str], input: &[u8]) -> Output {
        let mut child = self
            .robota()
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn robota");
        if let Some(mut stdin) = child.stdin.take() {
            stdin.write_all(input).expect("write to robota's stdin");
        }
        child.wait_with_output().expect("wait for robota")
    }

    fn sessions(&self) -> Vec<PathBuf> {
        let dir = self.path().join(".robota/sessions");
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
            .map(|entries| entries.filter_map(|e| e.ok().map(|e| e.path())).collect())
            .unwrap_or_default();
        files.retain(|p| p.extension().is_some_and(|e| e == "json"));
        files
    }
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn json_result(output: &Output) -> Value {
    serde_json::from_str(stdout(output).trim())
        .unwrap_or_else(|e| panic!("stdout is not one JSON object ({e}): {}", stdout(output)))
}

async fn mock(turns: Value) -> MockLlm {
    MockLlm::start_json(json!({ "turns": turns }))
        .await
        .expect("start mock-llm")
}

/// Every message text the model was sent in request `index`, joined.
fn sent_text(mock: &MockLlm, index: usize) -> String {
    mock.requests()
        .get(index)
        .map(|request| request.body["messages"].to_string())
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn text_output_prints_the_answer() {
    let mock = mock(json!([{"text": ["Hello ", "there."]}])).await;
    let project = Project::new();
    project.use_mock(&mock);
    let output = project.run(&["-p", "Say hello"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "Hello there.\n");
    assert!(sent_text(&mock, 0).contains("Say hello"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_output_is_one_result_object() {
    let mock =
        mock(json!([{"text": "Four.", "usage": {"input_tokens": 12, "output_tokens": 3}}])).await;
    let project = Project::new();
    project.use_mock(&mock);
    let output = project.run(&["-p", "2+2?", "--output-format", "json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let result = json_result(&output);
    assert_eq!(result["type"], "result");
    assert_eq!(result["response"], "Four.");
    assert_eq!(result["stop_reason"], "completed");
    assert_eq!(result["num_turns"], 1);
    assert_eq!(result["usage"]["output_tokens"], 3);
    assert!(
        result["cost_usd"].as_f64().is_some_and(|c| c > 0.0),
        "{result}"
    );
    assert!(result["session_id"].as_str().is_some_and(|s| !s.is_empty()));
    assert!(result["duration_ms"].is_u64());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stream_json_prints_every_event_then_the_result() {
    let mock = mock(json!([
        {"tool_calls": [{"id": "t1", "name": "Read", "input": {"file_path": "notes.txt"}}]},
        {"text": "The notes say hi."}
    ]))
    .await;
    let project = Project::new();
    project.use_mock(&mock);
    std::fs::write(project.path().join("notes.txt"), "hi").expect("write notes");
    let output = project.run(&["-p", "Read notes", "--output-format", "stream-json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let lines: Vec<Value> = stdout(&output)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect();
    let types: Vec<&str> = lines.iter().filter_map(|l| l["type"].as_str()).collect();
    assert!(types.contains(&"tool_start"), "{types:?}");
    assert!(types.contains(&"tool_end"), "{types:?}");
    assert!(types.contains(&"text_delta"), "{types:?}");
    let last = lines.last().expect("a result line");
    assert_eq!(last["type"], "result");
    assert_eq!(last["response"], "The notes say hi.");
    assert_eq!(last["num_turns"], 2);
    // The Read result went back to the model.
    assert!(sent_text(&mock, 1).contains("hi"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_continue_and_fork_use_the_saved_sessions() {
    let mock = mock(json!([
        {"text": "first answer"}, {"text": "second answer"},
        {"text": "third answer"}, {"text": "fourth answer"}
    ]))
    .await;
    let project = Project::new();
    project.use_mock(&mock);

    let first = json_result(&project.run(&["-p", "remember PINEAPPLE", "--output-format", "json"]));
    let id = first["session_id"].as_str().expect("session id").to_owned();
    assert_eq!(project.sessions().len(), 1);

    let resumed = json_result(&project.run(&[
        "-p",
        "what word?",
        "--resume",
        &id,
        "--output-format",
        "json",
    ]));
    assert_eq!(resumed["session_id"], id.as_str());
    assert!(
        sent_text(&mock, 1).contains("PINEAPPLE"),
        "resume sends the history"
    );

    let continued =
        json_result(&project.run(&["-p", "again?", "--continue", "--output-format", "json"]));
    assert_eq!(continued["session_id"], id.as_str());
    assert!(
        sent_text(&mock, 2).contains("what word?"),
        "continue picks the latest session"
    );

    let forked = json_result(&project.run(&[
        "-p",
        "fork",
        "--resume",
        &id,
        "--fork",
        "--output-format",
        "json",
    ]));
    assert_ne!(forked["session_id"], id.as_str());
    assert!(
        sent_text(&mock, 3).contains("PINEAPPLE"),
        "a fork keeps the history"
    );
    assert_eq!(
        project.sessions().len(),
        2,
        "the fork is saved beside the original"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_go_to_sqlite_from_the_settings_or_the_flag() {
    let mock = mock(json!([
        {"text": "first answer"}, {"text": "second answer"}, {"text": "third answer"}
    ]))
    .await;
    let project = Project::new();
    project.write_settings(json!({
        "currentProvider": "mock",
        "providers": {"mock": {
            "type": "anthropic", "model": "claude-sonnet-4-5", "apiKey": "test-key",
            "baseURL": mock.base_url(), "options": {"maxRetries": 0}
        }},
        "sessionStore": {"type": "sqlite", "path": ".robota/sessions.db"}
    }));

    let first = json_result(&project.run(&["-p", "remember MANGO", "--output-format", "json"]));
    let id = first["session_id"].as_str().expect("session id").to_owned();
    assert!(project.path().join(".robota/sessions.db").is_file());
    assert!(
        !project.path().join(".robota/sessions").exists(),
        "no snapshot files beside the database"
    );

    let continued =
        json_result(&project.run(&["-p", "what fruit?", "--continue", "--output-format", "json"]));
    assert_eq!(continued["session_id"], id.as_str());
    assert!(
        sent_text(&mock, 1).contains("MANGO"),
        "--continue finds the session in the database"
    );

    // The flag wins over the settings: the project's files know nothing of the session.
    let output = project.run(&["-p", "x", "--resume", &id, "--session-store", "file"]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let output = project.run(&["-p", "x", "--session-store", "mysql:x"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("--session-store"),
        "{}",
        stderr(&output)
    );
}

#[path = "../../core/tests/postgres_common/mod.rs"]
mod postgres_common;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_go_to_postgres_from_the_flag_or_the_settings() {
    let Some(server) = postgres_common::TestPostgres::start() else {
        return;
    };
    let mock = mock(json!([{"text": "first answer"}, {"text": "second answer"}])).await;
    let project = Project::new();
    project.use_mock(&mock);
    let url = server.url();

    let first = json_result(&project.run(&[
        "-p",
        "remember MANGO",
        "--session-store",
        &url,
        "--output-format",
        "json",
    ]));
    let id = first["session_id"].as_str().expect("session id").to_owned();
    assert!(
        !project.path().join(".robota/sessions").exists(),
        "no snapshot files: the session is in the database"
    );

    // The settings name the database by an environment variable; --continue finds the session
    // of this project there.
    project.write_settings(json!({
        "currentProvider": "mock",
        "providers": {"mock": {
            "type": "anthropic", "model": "claude-sonnet-4-5", "apiKey": "test-key",
            "baseURL": mock.base_url(), "options": {"maxRetries": 0}
        }},
        "sessionStore": {"type": "postgres", "urlEnv": "SESSIONS_DATABASE_URL"}
    }));
    let output = project
        .robota()
        .env("SESSIONS_DATABASE_URL", &url)
        .args(["-p", "what fruit?", "--continue", "--output-format", "json"])
        .output()
        .expect("run robota");
    let continued = json_result(&output);
    assert_eq!(continued["session_id"], id.as_str());
    assert!(
        sent_text(&mock, 1).contains("MANGO"),
        "--continue finds the session in the database"
    );

    // An unreachable database: a clear error that does not print the password.
    let output = project.run(&[
        "-p",
        "x",
        "--session-store",
        "postgres://robota:hunter2@127.0.0.1:1/none",
    ]);
    assert_ne!(output.status.code(), Some(0));
    assert!(!stderr(&output).contains("hunter2"), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("postgres://robota@127.0.0.1:1/none"),
        "{}",
        stderr(&output)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replay_reproduces_a_recorded_run_offline() {
    let mock = mock(json!([
        {"tool_calls": [{"id": "t1", "name": "Read", "input": {"file_path": "data.txt"}}]},
        {"text": "The data is 42."}
    ]))
    .await;
    let project = Project::new();
    project.use_mock(&mock);
    std::fs::write(project.path().join("data.txt"), "42").expect("write data");
    let recorded =
        json_result(&project.run(&["-p", "What is the data?", "--output-format", "json"]));
    let id = recorded["session_id"]
        .as_str()
        .expect("session id")
        .to_owned();
    mock.shutdown().await;

    // No mock, no key: the log is the model.
    let log = format!(".robota/logs/{id}.jsonl");
    let replayed = project.run(&[
        "-p",
        "What is the data?",
        "--replay",
        &log,
        "--output-format",
        "json",
    ]);
    assert_eq!(replayed.status.code(), Some(0), "{}", stderr(&replayed));
    let replayed = json_result(&replayed);
    assert_eq!(replayed["response"], recorded["response"]);
    assert_eq!(replayed["num_turns"], 2);
}

/// `robota --version` prints the one version of the release (the workspace's, which
/// scripts/check-versions.py keeps equal across every package) on stdout and exits 0; so do the
/// server subcommands, under their own names.
#[test]
fn version_flag_prints_the_release_version() {
    let project = Project::new();
    let version = env!("CARGO_PKG_VERSION");
    for (args, name) in [
        (&["--version"][..], "robota"),
        (&["-V"][..], "robota"),
        (&["serve", "--version"][..], "robota serve"),
        (&["acp", "--version"][..], "robota acp"),
    ] {
        let output = project.run(args);
        assert_eq!(
            output.status.code(),
            Some(0),
            "{args:?}: {}",
            stderr(&output)
        );
        assert_eq!(stdout(&output), format!("{name} {version}\n"), "{args:?}");
        assert_eq!(stderr(&output), "", "{args:?}");
    }
    // The workspace version, not some other crate's (Cargo.toml [workspace.package]).
    let manifest = include_str!("../../Cargo.toml");
    assert!(
        manifest.contains(&format!("\nversion = \"{version}\"\n")),
        "the CLI's version {version} is not the workspace version"
    );
}

#[test]
fn missing_api_key_names_the_variable_and_exits_2() {
    let project = Project::new();
    let output = project.run(&["-p", "hi"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("ANTHROPIC_API_KEY"),
        "{}",
        stderr(&output)
    );

    project.write_settings(json!({
        "currentProvider": "claude",
        "providers": {"claude": {"type": "anthropic", "model": "claude-sonnet-4-5"}}
    }));
    let output = project.run(&["-p", "hi"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("set the ANTHROPIC_API_KEY"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn unreachable_base_url_is_named_and_exits_1() {
    // A port that was just free: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port");
    let url = format!("http://127.0.0.1:{port}");
    let project = Project::new();
    project.write_settings(json!({
        "currentProvider": "local",
        "providers": {"local": {"type": "openai", "model": "llama3", "baseURL": url,
                                "options": {"maxRetries": 0}}}
    }));
    let output = project.run(&["-p", "hi"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr(&output).contains(&url), "{}", stderr(&output));
}

/// Runs the binary with `args`, killing it (and failing the test) if it has not exited in 20 s.
#[cfg(unix)]
fn run_within_seconds(project: &Project, args: &[&str]) -> Output {
    let mut child = project
        .robota()
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn robota");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while child.try_wait().expect("wait").is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("robota {args:?} hung");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.wait_with_output().expect("output")
}

#[cfg(unix)]
#[test]
fn a_settings_fifo_or_device_ends_start_up_with_an_error_naming_it() {
    let project = Project::new();
    let fifo = project.path().join("settings-fifo.json");
    let made = Command::new("mkfifo").arg(&fifo).status().expect("mkfifo");
    assert!(made.success());
    let output = run_within_seconds(&project, &["-p", "hi", "--settings", "settings-fifo.json"]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("settings-fifo.json is a FIFO (named pipe), not a regular file"),
        "{}",
        stderr(&output)
    );

    // The project's own settings file as a FIFO, then as a link to /dev/zero.
    std::fs::create_dir_all(project.path().join(".robota")).expect("mkdir");
    let settings = project.path().join(".robota/settings.json");
    std::fs::rename(&fifo, &settings).expect("move the fifo");
    let output = run_within_seconds(&project, &["-p", "hi"]);
    assert_ne!(output.status.code(), Some(0));
    assert!(stderr(&output).contains("FIFO"), "{}", stderr(&output));
    std::fs::remove_file(&settings).expect("rm");
    std::os::unix::fs::symlink("/dev/zero", &settings).expect("symlink");
    let output = run_within_seconds(&project, &["-p", "hi"]);
    assert_ne!(output.status.code(), Some(0));
    assert!(
        stderr(&output).contains("is a character device"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn usage_errors_exit_2() {
    let project = Project::new();
    assert_eq!(
        project
            .run(&["--output-format", "yaml", "-p", "x"])
            .status
            .code(),
        Some(2)
    );
    assert_eq!(project.run(&["--no-such-flag"]).status.code(), Some(2));
    let output = project.run(&["-p", "x", "--continue", "--replay", "missing.jsonl"]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn permission_prompt_on_stdin_allows_with_y() {
    let mock = mock(json!([
        {"tool_calls": [{"id": "w1", "name": "Write",
                         "input": {"file_path": "out.txt", "content": "written"}}]},
        {"text": "Saved."}
    ]))
    .await;
    let project = Project::new();
    project.use_mock(&mock);

    // Without a prompt the write is denied and nothing is written.
    let denied = project.run(&["-p", "save it"]);
    assert_eq!(denied.status.code(), Some(0), "{}", stderr(&denied));
    assert!(!project.path().join("out.txt").exists());

    mock.reset();
    let output = project.run_with_input(&["-p", "save it", "--permission-prompt", "stdin"], b"y\n");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("Allow Write"),
        "{}",
        stderr(&output)
    );
    let written = std::fs::read_to_string(project.path().join("out.txt")).unwrap_or_default();
    assert_eq!(written, "written");
    assert_eq!(stdout(&output), "Saved.\n");
}

#[test]
fn the_readme_demo_runs_offline() {
    // A copy, so the test does not write session files into the repository.
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/cli/demo");
    let project = Project::new();
    for file in [".robota/settings.json", "README.md", "src/main.rs"] {
        let target = project.path().join(file);
        std::fs::create_dir_all(target.parent().expect("parent")).expect("mkdir");
        std::fs::copy(source.join(file), &target).expect("copy demo file");
    }
    let output = project.run(&[
        "-p",
        "What is in this project?",
        "--output-format",
        "stream-json",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.contains("\"name\":\"Glob\""), "{text}");
    assert!(text.contains("\"name\":\"Read\""), "{text}");
    assert!(text.contains("greet"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interactive_mode_streams_answers_and_runs_commands() {
    let mock = mock(json!([{"text": ["Hi ", "from the REPL."]}])).await;
    let project = Project::new();
    project.use_mock(&mock);
    let output = project.run_with_input(&[], b"hello\n/cost\n/exit\n");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.contains("Hi from the REPL."), "{text}");
    assert!(text.contains("Estimated cost"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_project_skill_runs_as_a_slash_command_in_the_repl() {
    let mock = mock(json!([{"text": "Greeted Ada."}])).await;
    let project = Project::new();
    project.use_mock(&mock);
    let skill = project.path().join(".claude/skills/greet/SKILL.md");
    std::fs::create_dir_all(skill.parent().expect("parent")).expect("mkdir");
    std::fs::write(
        &skill,
        "---\ndescription: Greets someone.\n---\nGreet $0 in one line.\n",
    )
    .expect("write skill");
    let mut child = project
        .robota()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn robota");
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(b"/greet Ada\n/exit\n")
            .expect("type into the REPL");
    }
    let output = child.wait_with_output().expect("wait for robota");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.contains("Greeted Ada."), "{text}");
    assert!(sent_text(&mock, 0).contains("Greet Ada in one line."));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_installed_in_the_repl_loads_at_once_and_its_skill_runs() {
    let mock = mock(json!([{"text": "Said hi to Ada."}])).await;
    let project = Project::new();
    project.use_mock(&mock);
    let market = tempfile::tempdir().expect("marketplace dir");
    let write = |rel: &str, text: &str| {
        let path = market.path().join(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    };
    write(
        ".claude-plugin/marketplace.json",
        r#"{"name": "local", "plugins": [{"name": "hello", "source": "./hello"}]}"#,
    );
    write(
        "hello/skills/hi/SKILL.md",
        "---\ndescription: Say hi.\n---\nSay hi to $0.\n",
    );
    let input = format!(
        "/plugin marketplace add {}\n/plugin install hello@local\n/hello:hi Ada\n/exit\n",
        market.path().display()
    );
    let output = project.run_with_input(&[], input.as_bytes());
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.contains("Installed hello@local"), "{text}");
    assert!(
        text.contains("Said hi to Ada."),
        "{text}\n{}",
        stderr(&output)
    );
    assert!(sent_text(&mock, 0).contains("Say hi to Ada."));
    // The install state is in the user's robota folder, not in the project.
    assert!(project
        .home
        .path()
        .join(".robota/plugins/cache/local/hello/skills/hi/SKILL.md")
        .is_file());
    assert!(!project.path().join(".robota/plugins").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_custom_command_shows_in_help_and_runs_with_arguments_in_the_repl() {
    let mock = mock(json!([{"text": "Reviewed the file."}])).await;
    let project = Project::new();
    project.use_mock(&mock);
    let command = project.path().join(".claude/commands/git/review.md");
    std::fs::create_dir_all(command.parent().expect("parent")).expect("mkdir");
    std::fs::write(
        &command,
        "---\ndescription: Review a file\nargument-hint: <file> <focus>\n---\nReview $1 for $2.\n",
    )
    .expect("write command");
    let mut child = project
        .robota()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn robota");
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(b"/help\n/review main.rs speed\n/exit\n")
            .expect("type into the REPL");
    }
    let output = child.wait_with_output().expect("wait for robota");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.contains("Review a file (project:git)"), "{text}");
    assert!(text.contains("Reviewed the file."), "{text}");
    assert!(sent_text(&mock, 0).contains("Review main.rs for speed."));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stream_json_events_carry_one_session_id_and_increasing_seq() {
    let mock = mock(json!([
        {"tool_calls": [{"id": "t1", "name": "Read", "input": {"file_path": "notes.txt"}}]},
        {"text": ["The notes ", "say hi."]}
    ]))
    .await;
    let project = Project::new();
    project.use_mock(&mock);
    std::fs::write(project.path().join("notes.txt"), "hi").expect("write notes");
    let output = project.run(&["-p", "Read notes", "--output-format", "stream-json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let lines: Vec<Value> = stdout(&output)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect();
    let (result, events) = lines.split_last().expect("a result line");
    assert_eq!(result["type"], "result");
    // The first line is the `system`/`init` line (session facts, sandbox status), not an event.
    let (init, events) = events.split_first().expect("an init line");
    assert_eq!(init["type"], "system");
    assert_eq!(init["subtype"], "init");
    assert_eq!(init["session_id"], result["session_id"]);
    assert!(init["sandbox"]["enabled"].is_boolean(), "{init}");
    assert!(events.len() >= 4, "{lines:?}");
    let session_id = result["session_id"].as_str().expect("session id");
    let mut last_seq = 0;
    for event in events {
        assert_eq!(event["session_id"], session_id, "{event}");
        let seq = event["seq"]
            .as_u64()
            .unwrap_or_else(|| panic!("no seq: {event}"));
        assert!(seq > last_seq, "seq {seq} after {last_seq}: {event}");
        last_seq = seq;
    }
    assert_eq!(
        events.last().map(|e| e["type"].clone()),
        Some(json!("complete"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interactive_clear_asks_then_clears_the_conversation() {
    let mock = mock(json!([{"text": "first"}, {"text": "second"}])).await;
    let project = Project::new();
    project.use_mock(&mock);
    let output =
        project.run_with_input(&[], b"remember PINEAPPLE\n/clear\nyes\nwhat word?\n/exit\n");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("Clear conversation history?"),
        "{}",
        stderr(&output)
    );
    let text = stdout(&output);
    assert!(text.contains("Conversation cleared."), "{text}");
    assert!(text.contains("second"), "{text}");
    assert!(sent_text(&mock, 0).contains("PINEAPPLE"));
    let after = sent_text(&mock, 1);
    assert!(after.contains("what word?"), "{after}");
    assert!(
        !after.contains("PINEAPPLE"),
        "the history was cleared: {after}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn language_is_saved_and_the_repl_reopens_the_session_to_apply_it() {
    let mock = mock(json!([{"text": "first"}, {"text": "second"}])).await;
    let project = Project::new();
    project.use_mock(&mock);
    let output = project.run_with_input(
        &[],
        b"remember PINEAPPLE\n/language ko\nwhat word?\n/exit\n",
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("reopening the session to answer in `ko`"),
        "{}",
        stderr(&output)
    );
    let saved = project.home.path().join(".claude/settings.json");
    let settings: Value =
        serde_json::from_str(&std::fs::read_to_string(&saved).expect("user settings")).unwrap();
    assert_eq!(settings["language"], "ko");
    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    let system = |i: usize| requests[i].body["system"].to_string();
    assert!(!system(0).contains("Response Language"), "{}", system(0));
    assert!(system(1).contains("Response Language"), "{}", system(1));
    // The reopened session kept the conversation.
    let after = sent_text(&mock, 1);
    assert!(
        after.contains("PINEAPPLE") && after.contains("what word?"),
        "{after}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reset_moves_the_user_settings_aside_and_exits() {
    let mock = mock(json!([])).await;
    let project = Project::new();
    project.use_mock(&mock);
    let user = project.home.path().join(".robota/settings.json");
    std::fs::create_dir_all(user.parent().unwrap()).unwrap();
    std::fs::write(&user, r#"{"language": "de"}"#).unwrap();
    // `no` keeps them; `yes` moves them aside and ends the REPL (the line after is not read).
    let output = project.run_with_input(&[], b"/reset\nno\n/reset\nyes\n/cost\n");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(!user.exists(), "{}", stderr(&output));
    let kept: Vec<_> = std::fs::read_dir(user.parent().unwrap())
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("settings.json.reset-") && name.ends_with(".bak"))
        .collect();
    assert_eq!(kept.len(), 1, "{kept:?}");
    let backup = std::fs::read_to_string(user.parent().unwrap().join(&kept[0])).unwrap();
    assert_eq!(backup, r#"{"language": "de"}"#);
    assert!(
        stderr(&output).contains("User settings reset"),
        "{}",
        stderr(&output)
    );
    assert!(
        !stdout(&output).contains("Estimated cost"),
        "{}",
        stdout(&output)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg(target_os = "linux")]
async fn bypass_permissions_runs_bash_in_the_sandbox_unless_no_sandbox() {
    let outside = tempfile::tempdir().expect("temp dir");
    let target = outside.path().join("escaped.txt");
    for (flag, unsandboxed) in [(None, false), (Some("--no-sandbox"), true)] {
        let mock = mock(json!([
            {"tool_calls": [{"id": "t1", "name": "Bash", "input": {"command": format!("echo x > {}", target.display())}}]},
            {"text": "done"}
        ]))
        .await;
        let project = Project::new();
        project.use_mock(&mock);
        let mut args = vec![
            "-p",
            "write",
            "--permission-mode",
            "bypassPermissions",
            "--output-format",
            "stream-json",
            "--verbose",
        ];
        args.extend(flag);
        let output = project.run(&args);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        let first: Value = stdout(&output)
            .lines()
            .next()
            .and_then(|line| serde_json::from_str(line).ok())
            .expect("an init line");
        assert_eq!(first["subtype"], "init");
        assert_eq!(first["sandbox"]["active"], !unsandboxed, "{first}");
        assert_eq!(target.exists(), unsandboxed, "flag {flag:?}");
        let line = if unsandboxed {
            "sandbox: off"
        } else {
            "sandbox: active"
        };
        assert!(stderr(&output).contains(line), "{}", stderr(&output));
        let _ = std::fs::remove_file(&target);
    }
}

/// Pid checks shared with the engine's process tests.
#[cfg(unix)]
#[path = "../../core/tests/process_common/mod.rs"]
mod process_common;

/// A Bash command whose tree keeps running: a subshell with two sleepers, a sleeper the shell
/// backgrounds with `&`, and the shell waiting for all of them. Each writes its pid.
#[cfg(unix)]
const TREE: &str = "( sleep 300 & echo $! > gc1.pid; sleep 300 & echo $! > gc2.pid; wait ) & \
    sleep 300 & echo $! > amp.pid; echo $$ > shell.pid; wait";

/// The exit code of `child`, waiting at most 30 s.
#[cfg(unix)]
fn exit_code_within(child: &mut std::process::Child) -> Option<i32> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        if let Some(status) = child.try_wait().expect("wait for robota") {
            return status.code();
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("robota did not exit within 30 s of the signal");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// A CLI (headless, or the REPL) whose prompt's Bash call runs [`TREE`] against `mock` in
/// `project`, once the whole tree is up: the child and the tree's pids.
#[cfg(unix)]
fn start_bash_tree(
    project: &Project,
    mock: &MockLlm,
    interactive: bool,
) -> (std::process::Child, i32, Vec<i32>) {
    use process_common::{alive, read_pid};

    project.use_mock(mock);
    let mut command = project.robota();
    command.args(["--permission-mode", "bypassPermissions", "--no-sandbox"]);
    if interactive {
        command.stdin(Stdio::piped());
    } else {
        command.args(["-p", "run it", "--output-format", "json"]);
    }
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start robota");
    if interactive {
        let stdin = child.stdin.as_mut().expect("stdin");
        stdin.write_all(b"run it\n").expect("write the prompt");
        stdin.flush().expect("flush");
    }
    let pids: Vec<i32> = ["shell.pid", "gc1.pid", "gc2.pid", "amp.pid"]
        .iter()
        .map(|file| read_pid(&project.path().join(file)))
        .collect();
    for &pid in &pids {
        assert!(alive(pid), "process {pid} of the tree is not running");
    }
    let robota_pid = i32::try_from(child.id()).expect("pid");
    (child, robota_pid, pids)
}

/// The mock-llm script of those tests: the Bash call, then an answer.
#[cfg(unix)]
async fn tree_mock() -> MockLlm {
    mock(json!([
        {"tool_calls": [{"id": "t1", "name": "Bash", "input": {"command": TREE}}]},
        {"text": "done"}
    ]))
    .await
}

/// Runs a prompt whose Bash call starts [`TREE`] (headless, or in the REPL), sends `signal` to
/// the CLI once the tree is up, and checks the exit code, that every process of the tree is
/// gone when the CLI has exited, and that the session was saved with the turn interrupted.
#[cfg(unix)]
async fn signal_during_a_bash_call(signal: i32, expected_code: i32, interactive: bool) {
    use process_common::assert_all_dead;

    let mock = tree_mock().await;
    let project = Project::new();
    let (mut child, robota_pid, pids) = start_bash_tree(&project, &mock, interactive);
    // SAFETY: kill(2) has no memory-safety preconditions.
    assert_eq!(unsafe { libc::kill(robota_pid, signal) }, 0);
    let code = exit_code_within(&mut child);
    let mut err = String::new();
    if let Some(mut pipe) = child.stderr.take() {
        let _ = std::io::Read::read_to_string(&mut pipe, &mut err);
    }
    assert_eq!(code, Some(expected_code), "stderr: {err}");
    assert_all_dead(&pids, &format!("signal {signal} to the CLI"));

    // The session was saved, the interrupted turn included, and shut down.
    assert_eq!(project.sessions().len(), 1, "stderr: {err}");
    let logs: Vec<PathBuf> = std::fs::read_dir(project.path().join(".robota/logs"))
        .expect("logs")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    let log = std::fs::read_to_string(&logs[0]).expect("log");
    assert!(
        log.lines()
            .any(|l| l.contains("\"turn_end\"") && l.contains("\"interrupted\"")),
        "{log}"
    );
    assert!(log.contains("\"session_shutdown\""), "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg(unix)]
async fn sigterm_stops_the_running_bash_tree_and_saves_the_session() {
    signal_during_a_bash_call(libc::SIGTERM, 143, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg(unix)]
async fn sigint_stops_the_running_bash_tree_and_saves_the_session() {
    signal_during_a_bash_call(libc::SIGINT, 130, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg(unix)]
async fn sighup_stops_the_running_bash_tree_and_saves_the_session() {
    signal_during_a_bash_call(libc::SIGHUP, 129, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg(unix)]
async fn sigterm_in_interactive_mode_stops_the_running_bash_tree() {
    signal_during_a_bash_call(libc::SIGTERM, 143, true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg(unix)]
async fn sighup_in_interactive_mode_stops_the_running_bash_tree() {
    signal_during_a_bash_call(libc::SIGHUP, 129, true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg(unix)]
async fn a_spilled_output_is_kept_with_the_session_and_readable_after_continue() {
    let first = mock(json!([
        {"tool_calls": [{"id": "t1", "name": "Bash", "input": {"command": "seq 1 200000"}}]},
        {"text": "counted"}
    ]))
    .await;
    let project = Project::new();
    project.use_mock(&first);
    let output = project.run(&[
        "-p",
        "count",
        "--permission-mode",
        "bypassPermissions",
        "--no-sandbox",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let session = project.sessions()[0]
        .file_stem()
        .expect("snapshot name")
        .to_string_lossy()
        .into_owned();
    let spill_dir = project
        .path()
        .join(".robota/sessions")
        .join(&session)
        .join("spill");
    let spills: Vec<PathBuf> = std::fs::read_dir(&spill_dir)
        .expect("the spill directory is under .robota/sessions/<id>/")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    assert_eq!(spills.len(), 1, "{spills:?}");
    let spill = std::fs::canonicalize(&spills[0]).expect("spill path");
    assert!(sent_text(&first, 1).contains(&spill.display().to_string()));

    let second = mock(json!([
        {"tool_calls": [{"id": "t2", "name": "Read", "input": {
            "file_path": spill, "offset": 150000, "limit": 1}}]},
        {"text": "read"}
    ]))
    .await;
    project.use_mock(&second);
    let output = project.run(&["-p", "read the rest", "--continue"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let sent = sent_text(&second, 1);
    assert!(sent.contains("150000\\t150000"), "{sent}");
    assert!(!sent.contains("Access denied"), "{sent}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg(unix)]
async fn interactive_ctrl_c_aborts_the_turn_and_a_second_one_exits() {
    use process_common::wait_all_dead;

    let mock = tree_mock().await;
    let project = Project::new();
    let (mut child, robota_pid, pids) = start_bash_tree(&project, &mock, true);
    // SAFETY: kill(2) has no memory-safety preconditions.
    assert_eq!(unsafe { libc::kill(robota_pid, libc::SIGINT) }, 0);
    // The first Ctrl-C aborts the turn (the tree goes) and the REPL stays.
    wait_all_dead(&pids, "Ctrl-C during the turn");
    assert!(child.try_wait().expect("wait").is_none(), "the REPL exited");
    // SAFETY: as above.
    assert_eq!(unsafe { libc::kill(robota_pid, libc::SIGINT) }, 0);
    assert_eq!(exit_code_within(&mut child), Some(130));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn continue_repairs_a_damaged_session_and_says_what_it_did() {
    let mock = mock(json!([
        {"text": "first answer"}, {"text": "second answer"}, {"text": "third answer"}
    ]))
    .await;
    let project = Project::new();
    project.use_mock(&mock);
    let first = json_result(&project.run(&["-p", "remember PINEAPPLE", "--output-format", "json"]));
    let id = first["session_id"].as_str().expect("session id").to_owned();

    // A garbage snapshot: `--continue` still finds the session, rebuilds it from the log and
    // says so on stderr.
    let snapshot = project.path().join(format!(".robota/sessions/{id}.json"));
    std::fs::write(&snapshot, "not JSON {{{").expect("damage the snapshot");
    let output = project.run(&["-p", "what word?", "--continue"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "second answer\n");
    let notice = stderr(&output);
    for needle in [
        "robota: The snapshot of session",
        "could not be read",
        "rebuilt from its log",
        "moved to",
    ] {
        assert!(notice.contains(needle), "{needle:?} not in {notice}");
    }
    assert!(
        sent_text(&mock, 1).contains("PINEAPPLE"),
        "the history came back"
    );
    let kept: Vec<String> = std::fs::read_dir(project.path().join(".robota/sessions"))
        .expect("sessions")
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
        .filter(|name| name.starts_with(&format!("{id}.json.damaged-")))
        .collect();
    assert_eq!(kept.len(), 1, "the damaged snapshot is kept aside");

    // A process killed mid-turn leaves the turn's start in the log: the next resume names the
    // prompt, here as a stream-json event before the prompt's own events.
    let log = project.path().join(format!(".robota/logs/{id}.jsonl"));
    let text = std::fs::read_to_string(&log).expect("read the log");
    let last_seq = text
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter_map(|line| line["seq"].as_u64())
        .max()
        .expect("a seq");
    let pre_run = json!({"ts": "2026-05-01T10:00:00.000Z", "seq": last_seq + 1, "type": "pre_run",
                         "input": "count the files", "history_length": 4});
    std::fs::write(&log, format!("{text}{pre_run}\n")).expect("append to the log");
    let output = project.run(&["-p", "next", "--continue", "--output-format", "stream-json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let lines: Vec<Value> = stdout(&output)
        .lines()
        .map(|line| serde_json::from_str(line).expect("a JSON line"))
        .collect();
    let recovered = lines
        .iter()
        .position(|line| line["type"] == "session_recovered")
        .unwrap_or_else(|| panic!("no session_recovered event: {lines:?}"));
    let event = &lines[recovered];
    assert_eq!(event["session_id"], id.as_str());
    assert_eq!(
        event["report"]["unfinished_turn"]["prompt"],
        "count the files"
    );
    assert!(
        event["message"]
            .as_str()
            .unwrap_or("")
            .contains("did not finish"),
        "{event}"
    );
    let first_delta = lines
        .iter()
        .position(|line| line["type"] == "text_delta")
        .expect("a text delta");
    assert!(recovered < first_delta);
    assert!(!stderr(&output).contains("did not finish"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_open_in_another_process_is_refused_and_can_be_forked() {
    let mock = mock(json!([{"text": "one"}, {"text": "forked"}, {"text": "after"}])).await;
    let project = Project::new();
    project.use_mock(&mock);
    let first = json_result(&project.run(&["-p", "start", "--output-format", "json"]));
    let id = first["session_id"].as_str().expect("session id").to_owned();

    // The REPL holds the session open until its input ends.
    let mut repl = project
        .robota()
        .args(["--resume", &id])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn the REPL");
    let mut greeting = String::new();
    let mut repl_err = std::io::BufReader::new(repl.stderr.take().expect("stderr"));
    while !greeting.contains(&format!("session {id}")) {
        let mut line = String::new();
        let read = std::io::BufRead::read_line(&mut repl_err, &mut line).expect("read stderr");
        assert!(read > 0, "the REPL ended: {greeting}");
        greeting.push_str(&line);
    }

    let output = project.run(&["-p", "hello", "--resume", &id]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let message = stderr(&output);
    for needle in [
        format!(
            "session {id:?} is already open for writing by process {}",
            repl.id()
        ),
        "--fork".to_string(),
    ] {
        assert!(message.contains(&needle), "{needle:?} not in {message}");
    }
    let forked = json_result(&project.run(&[
        "-p",
        "fork",
        "--resume",
        &id,
        "--fork",
        "--output-format",
        "json",
    ]));
    assert_ne!(forked["session_id"], id.as_str());

    drop(repl.stdin.take());
    assert_eq!(repl.wait().expect("wait for the REPL").code(), Some(0));
    let after = project.run(&["-p", "again", "--resume", &id]);
    assert_eq!(after.status.code(), Some(0), "{}", stderr(&after));
}

/// The mock-llm turns of the progress tests: a Read, a Write (which needs approval), then the
/// answer (the model starts its next turn with text).
fn read_write_answer() -> Value {
    json!([
        {"text": ["Let me look. "],
         "tool_calls": [{"id": "r1", "name": "Read", "input": {"file_path": "notes.txt"}}]},
        {"tool_calls": [{"id": "w1", "name": "Write",
                         "input": {"file_path": "out.txt", "content": "written"}}]},
        {"text": ["The notes ", "say hi."]}
    ])
}

/// Adds a misspelt key to the project's settings (a settings warning as the session opens).
fn add_unknown_setting(project: &Project) {
    let path = project.path().join(".robota/settings.json");
    let text = std::fs::read_to_string(&path).expect("read settings");
    let mut settings: Value = serde_json::from_str(&text).expect("settings are JSON");
    settings["colour"] = json!("red");
    project.write_settings(settings);
}

const UNKNOWN_SETTING_WARNING: &str = "`colour`: unknown setting; it is ignored";

/// True when `text` shows an event or a request as JSON.
fn shows_json(text: &str) -> bool {
    text.contains("{\"") || text.contains("\"type\"")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn print_mode_shows_progress_on_stderr_and_only_the_answer_on_stdout() {
    let mock = mock(read_write_answer()).await;
    let project = Project::new();
    project.use_mock(&mock);
    std::fs::write(project.path().join("notes.txt"), "hi\n").expect("write notes");
    add_unknown_setting(&project);
    let output = project.run(&["-p", "read my notes"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "The notes say hi.\n");
    let progress = stderr(&output);
    let lines: Vec<&str> = progress.lines().collect();
    // Each call on its own line with a marker, then its end (with its duration, or why not).
    let read = lines
        .iter()
        .position(|l| *l == "● Read(notes.txt)")
        .unwrap_or_else(|| panic!("no Read line in {progress}"));
    assert!(
        lines[read + 1].starts_with("  ⎿ Read done in ") && lines[read + 1].ends_with(" ms"),
        "{progress}"
    );
    let write = lines
        .iter()
        .position(|l| *l == "● Write(out.txt)")
        .unwrap_or_else(|| panic!("no Write line in {progress}"));
    assert!(
        lines[write + 1].starts_with("  ⎿ Write denied: "),
        "{progress}"
    );
    assert!(!project.path().join("out.txt").exists());
    assert!(
        lines[0].starts_with("! settings: ") && lines[0].contains(UNKNOWN_SETTING_WARNING),
        "{progress}"
    );
    // Not a terminal: no spinner, no escape sequences, no JSON.
    assert!(
        !progress.contains('\x1b') && !progress.contains('\r'),
        "{progress:?}"
    );
    assert!(!shows_json(&progress), "{progress}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_permission_answer_is_followed_by_the_calls_end_not_json() {
    let mock = mock(read_write_answer()).await;
    let project = Project::new();
    project.use_mock(&mock);
    std::fs::write(project.path().join("notes.txt"), "hi\n").expect("write notes");
    let output = project.run_with_input(&["-p", "save it", "--permission-prompt", "stdin"], b"y\n");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let progress = stderr(&output);
    let after = progress
        .split_once("[a]lways: ")
        .map(|(_, after)| after)
        .unwrap_or_else(|| panic!("no permission question in {progress}"));
    assert!(progress.contains("Allow Write(out.txt)? "), "{progress}");
    assert!(
        after.starts_with("● Write(out.txt)\n  ⎿ Write done in "),
        "{progress}"
    );
    assert!(!shows_json(&progress), "{progress}");
    assert_eq!(stdout(&output), "The notes say hi.\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_prompt_comes_from_an_argument_or_from_stdin() {
    let mock = mock(json!([
        {"text": "one"}, {"text": "piped"}, {"text": "two"}, {"text": "three"}
    ]))
    .await;
    let project = Project::new();
    project.use_mock(&mock);

    // `-p -` reads the whole of stdin.
    let output = project.run_with_input(&["-p", "-"], b"summarise\nTODO-FROM-STDIN\n");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "one\n");
    assert!(sent_text(&mock, 0).contains("TODO-FROM-STDIN"));

    // So does `-p` without a prompt when stdin is not a terminal (`cat task.md | robota -p`).
    let output = project.run_with_input(&["-p"], b"PIPED-TASK");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "piped\n");
    assert!(sent_text(&mock, 1).contains("PIPED-TASK"));

    // An empty stdin is a usage error, not an empty prompt.
    let empty = project.run(&["-p", "-"]);
    assert_eq!(empty.status.code(), Some(2), "{}", stderr(&empty));
    assert!(stderr(&empty).contains("empty"), "{}", stderr(&empty));

    // A positional prompt without -p starts the REPL with it (after any settings warning).
    add_unknown_setting(&project);
    let output = project.run_with_input(&["FIRST-PROMPT"], b"next one\n/exit\n");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        stdout(&output).starts_with("two\nthree\n"),
        "{}",
        stdout(&output)
    );
    assert!(sent_text(&mock, 2).contains("FIRST-PROMPT"));
    let shown = stderr(&output);
    assert!(shown.contains(UNKNOWN_SETTING_WARNING), "{shown}");
    assert!(shown.contains("\n> FIRST-PROMPT\n"), "{shown}");
    assert!(sent_text(&mock, 3).contains("next one"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resuming_names_the_session_it_goes_on_with() {
    let mock = mock(json!([{"text": "a"}, {"text": "b"}, {"text": "c"}])).await;
    let project = Project::new();
    project.use_mock(&mock);
    let first = json_result(&project.run(&["-p", "hello", "--output-format", "json"]));
    let id = first["session_id"].as_str().expect("session id").to_owned();

    let resumed = project.run(&["-p", "again", "--resume", &id]);
    assert_eq!(resumed.status.code(), Some(0), "{}", stderr(&resumed));
    assert_eq!(stdout(&resumed), "b\n");
    assert!(
        stderr(&resumed).contains(&format!("resumed session {id} (2 messages)")),
        "{}",
        stderr(&resumed)
    );

    let output = project.run_with_input(&["--continue"], b"/exit\n");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        stderr(&output).contains(&format!("resumed session {id} (4 messages)")),
        "{}",
        stderr(&output)
    );
}

/// A tmux server of its own (its socket in a temporary directory) running one window.
#[cfg(unix)]
struct Tmux {
    socket: PathBuf,
    _dir: TempDir,
}

#[cfg(unix)]
impl Tmux {
    /// Runs `command` (a shell command) in a 200x40 terminal; it prints `EXITED <code>` when it
    /// ends and the window stays open to be read.
    fn start(command: &str) -> Tmux {
        let dir = tempfile::tempdir().expect("tmux dir");
        let tmux = Tmux {
            socket: dir.path().join("tmux.sock"),
            _dir: dir,
        };
        let script = format!("{command}; echo; echo EXITED $?; sleep 600");
        let status = tmux
            .command()
            .args([
                "new-session",
                "-d",
                "-x",
                "200",
                "-y",
                "40",
                "sh",
                "-c",
                &script,
            ])
            .status()
            .unwrap_or_else(|e| {
                panic!("cannot run tmux ({e}): these tests need it (apt-get install tmux)")
            });
        assert!(status.success(), "tmux new-session failed");
        tmux
    }

    fn command(&self) -> Command {
        let mut command = Command::new("tmux");
        command.arg("-S").arg(&self.socket).env_remove("TMUX");
        command
    }

    /// What the window shows.
    fn screen(&self) -> String {
        let output = self
            .command()
            .args(["capture-pane", "-p"])
            .output()
            .expect("tmux capture-pane");
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// Types `keys` and presses Enter.
    fn type_line(&self, keys: &str) {
        let status = self
            .command()
            .args(["send-keys", "-l", keys])
            .status()
            .expect("tmux send-keys");
        assert!(status.success());
        let status = self
            .command()
            .args(["send-keys", "Enter"])
            .status()
            .expect("tmux send-keys");
        assert!(status.success());
    }

    /// Polls the screen until `done` holds for it (within 30 s); every screen seen, in order.
    fn watch_until(&self, done: impl Fn(&str) -> bool) -> Vec<String> {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        let mut screens: Vec<String> = Vec::new();
        loop {
            let screen = self.screen();
            if screens.last() != Some(&screen) {
                screens.push(screen.clone());
            }
            if done(&screen) {
                return screens;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "timed out; the screen shows:\n{screen}"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
}

#[cfg(unix)]
impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.command().arg("kill-server").status();
    }
}

/// The shell command running the CLI with `args` in `project` (as [`Project::robota`] does).
#[cfg(unix)]
fn robota_in_shell(project: &Project, args: &str) -> String {
    format!(
        "cd '{}' && env -u ANTHROPIC_API_KEY -u ANTHROPIC_BASE_URL -u OPENAI_API_KEY \
         -u OPENAI_BASE_URL HOME='{}' '{}' {args}",
        project.path().display(),
        project.home.path().display(),
        env!("CARGO_BIN_EXE_robota"),
    )
}

/// The turns of the terminal tests: a Read, a Write, then an answer the model is slow to start
/// (so the spinner has time to show).
fn slow_answer_after_tools() -> Value {
    json!([
        {"text": ["Let me look. "],
         "tool_calls": [{"id": "r1", "name": "Read", "input": {"file_path": "notes.txt"}}]},
        {"tool_calls": [{"id": "w1", "name": "Write",
                         "input": {"file_path": "out.txt", "content": "written"}}]},
        {"text": ["The notes ", "say hi."], "chunk_delay_ms": 700}
    ])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg(unix)]
async fn in_a_terminal_the_repl_shows_tool_lines_a_spinner_and_a_plain_permission_prompt() {
    let mock = mock(slow_answer_after_tools()).await;
    let project = Project::new();
    project.use_mock(&mock);
    std::fs::write(project.path().join("notes.txt"), "hi\n").expect("write notes");
    let tmux = Tmux::start(&robota_in_shell(&project, "'read my notes'"));

    tmux.watch_until(|s| s.contains("[a]lways:"));
    tmux.type_line("y");
    // Done when the REPL asks for the next prompt under the answer.
    let screens = tmux.watch_until(|s| s.contains("The notes say hi.\n>\n"));
    assert!(
        screens
            .iter()
            .any(|s| s.contains("waiting for the model… (")),
        "no spinner while the model was slow:\n{}",
        screens.join("\n-----\n")
    );
    tmux.type_line("/exit");
    let screen = tmux
        .watch_until(|s| s.contains("EXITED 0"))
        .pop()
        .unwrap_or_default();
    let lines: Vec<&str> = screen.lines().map(str::trim_end).collect();
    let at = |line: &str| {
        lines
            .iter()
            .position(|l| *l == line)
            .unwrap_or_else(|| panic!("no line {line:?} on the screen:\n{screen}"))
    };
    assert_eq!(at("> read my notes") + 1, at("Let me look."), "{screen}");
    let read = at("● Read(notes.txt)");
    assert!(lines[read + 1].starts_with("  ⎿ Read done in "), "{screen}");
    let write = at("● Write(out.txt)");
    assert!(lines[write - 1].ends_with("[a]lways: y"), "{screen}");
    assert!(
        lines[write + 1].starts_with("  ⎿ Write done in "),
        "{screen}"
    );
    // The answer follows the tool lines directly, and the spinner is gone.
    assert_eq!(at("The notes say hi."), write + 2, "{screen}");
    assert!(!screen.contains("waiting for"), "{screen}");
    assert!(!shows_json(&screen), "{screen}");
    assert_eq!(
        std::fs::read_to_string(project.path().join("out.txt")).unwrap_or_default(),
        "written"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg(unix)]
async fn in_a_terminal_print_mode_keeps_stdout_the_answer_only() {
    let mock = mock(slow_answer_after_tools()).await;
    let project = Project::new();
    project.use_mock(&mock);
    std::fs::write(project.path().join("notes.txt"), "hi\n").expect("write notes");
    // stderr is the terminal, stdout a file.
    let tmux = Tmux::start(&robota_in_shell(
        &project,
        "-p 'read my notes' > answer.txt",
    ));
    let screens = tmux.watch_until(|s| s.contains("EXITED 0"));
    let screen = screens.last().cloned().unwrap_or_default();
    assert!(
        screens
            .iter()
            .any(|s| s.contains("waiting for the model… (")),
        "no spinner on the terminal:\n{}",
        screens.join("\n-----\n")
    );
    let lines: Vec<&str> = screen.lines().map(str::trim_end).collect();
    assert!(lines.contains(&"● Read(notes.txt)"), "{screen}");
    assert!(lines.contains(&"● Write(out.txt)"), "{screen}");
    assert!(
        lines.iter().any(|l| l.starts_with("  ⎿ Write denied: ")),
        "{screen}"
    );
    assert!(!screen.contains("waiting for"), "{screen}");
    assert_eq!(
        std::fs::read_to_string(project.path().join("answer.txt")).unwrap_or_default(),
        "The notes say hi.\n"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_is_reported_as_refused_with_exit_3() {
    let details = json!({"type": "refusal", "category": "cyber", "explanation": "Not that."});
    let mock = mock(json!([{"refusal": "I can't help with that.", "stop_details": details}])).await;
    let project = Project::new();
    project.use_mock(&mock);
    let output = project.run(&["-p", "do harm", "--output-format", "json"]);
    assert_eq!(output.status.code(), Some(3), "{}", stderr(&output));
    let result = json_result(&output);
    assert_eq!(result["subtype"], "refused", "{result}");
    assert_eq!(result["stop_reason"], "refused", "{result}");
    assert_eq!(result["is_error"], false, "{result}");
    assert_eq!(result["response"], "I can't help with that.");
    assert_eq!(result["refusal"]["category"], "cyber", "{result}");
    assert_eq!(result["refusal"]["explanation"], "Not that.", "{result}");
    assert!(
        !result["response"]
            .as_str()
            .unwrap_or("")
            .contains("Maximum rounds"),
        "{result}"
    );
    assert!(stderr(&output).contains("refused"), "{}", stderr(&output));
    assert!(stderr(&output).contains("Not that."), "{}", stderr(&output));
    assert_eq!(mock.requests().len(), 1, "a refusal is never re-asked");

    // Text mode: the refusal text on stdout, the same exit code.
    let mock = self::mock(json!([{"refusal": "No."}])).await;
    project.use_mock(&mock);
    let output = project.run(&["-p", "do harm"]);
    assert_eq!(output.status.code(), Some(3), "{}", stderr(&output));
    assert_eq!(stdout(&output), "No.\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_off_answer_is_truncated_with_exit_4_in_stream_json() {
    let mock =
        mock(json!([{"text": ["Half of ", "an answer"], "stop_reason": "max_tokens"}])).await;
    let project = Project::new();
    project.use_mock(&mock);
    let output = project.run(&["-p", "write a lot", "--output-format", "stream-json"]);
    assert_eq!(output.status.code(), Some(4), "{}", stderr(&output));
    let lines: Vec<Value> = stdout(&output)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect();
    let types: Vec<&str> = lines.iter().filter_map(|l| l["type"].as_str()).collect();
    assert!(types.contains(&"truncated"), "{types:?}");
    assert!(!types.contains(&"complete"), "{types:?}");
    let last = lines.last().expect("a result line");
    assert_eq!(last["type"], "result");
    assert_eq!(last["subtype"], "truncated", "{last}");
    assert_eq!(last["stop_reason"], "truncated", "{last}");
    assert_eq!(last["response"], "Half of an answer");
    assert!(
        stderr(&output).contains("max_tokens"),
        "{}",
        stderr(&output)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_model_call_is_an_error_result_with_exit_1() {
    let mock = mock(json!([{"fault": {"kind": "status", "status": 401}}])).await;
    let project = Project::new();
    project.use_mock(&mock);
    let output = project.run(&["-p", "hi", "--output-format", "stream-json"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let lines: Vec<Value> = stdout(&output)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect();
    let types: Vec<&str> = lines.iter().filter_map(|l| l["type"].as_str()).collect();
    assert!(types.contains(&"error"), "{types:?}");
    assert!(!types.contains(&"complete"), "{types:?}");
    let last = lines.last().expect("a result line");
    assert_eq!(last["subtype"], "error", "{last}");
    assert_eq!(last["is_error"], true, "{last}");
    assert_eq!(last["stop_reason"], "error", "{last}");
    assert_eq!(last["error"]["kind"], "auth", "{last}");
    assert_eq!(last["error"]["status"], 401, "{last}");
    assert_eq!(last["error"]["retryable"], false, "{last}");
    assert!(!stderr(&output).is_empty());

    // json: the same result object.
    let mock = self::mock(json!([{"fault": {"kind": "status", "status": 529}}])).await;
    project.use_mock(&mock);
    let output = project.run(&["-p", "hi", "--output-format", "json"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let result = json_result(&output);
    assert_eq!(result["subtype"], "error", "{result}");
    assert_eq!(result["error"]["kind"], "overloaded", "{result}");
    assert_eq!(result["error"]["retryable"], true, "{result}");
}

/// Claude Code's asynchronous Stop hooks: a headless run waits for an `async` one to finish
/// before it exits, and an `asyncRewake` one that exits 2 wakes the agent for one more turn with
/// its `rewakeMessage` and reason (its `rewakeSummary` is shown in stream-json).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_headless_run_waits_for_async_stop_hooks_and_runs_their_wake_up_turn() {
    let mock = mock(json!([{"text": "first answer"}, {"text": "fixed it"}])).await;
    let project = Project::new();
    let hooks = project.path().join("hooks");
    std::fs::create_dir_all(&hooks).expect("hooks dir");
    // Slow enough that an exit right after the answer would stop it unfinished.
    std::fs::write(
        hooks.join("record.sh"),
        "#!/bin/sh\ncat >/dev/null\nsleep 1\necho finished >> \"$CLAUDE_PROJECT_DIR/stop-ran.txt\"\n",
    )
    .expect("write hook");
    // Fails the first time only (a test run that a fix makes pass).
    std::fs::write(
        hooks.join("tests.sh"),
        "#!/bin/sh\ncat >/dev/null\nif [ -f \"$CLAUDE_PROJECT_DIR/woke\" ]; then exit 0; fi\n\
         touch \"$CLAUDE_PROJECT_DIR/woke\"\nsleep 1\necho '3 tests failed' >&2\nexit 2\n",
    )
    .expect("write hook");
    project.write_settings(json!({
        "currentProvider": "mock",
        "providers": {"mock": {
            "type": "anthropic", "model": "claude-sonnet-4-5", "apiKey": "test-key",
            "baseURL": mock.base_url(), "options": {"maxRetries": 0}
        }},
        "hooks": {"Stop": [{"hooks": [
            {"type": "command", "command": "sh \"$CLAUDE_PROJECT_DIR/hooks/record.sh\"", "async": true},
            {"type": "command", "command": "sh \"$CLAUDE_PROJECT_DIR/hooks/tests.sh\"",
             "asyncRewake": true, "rewakeMessage": "The test suite failed after your change.",
             "rewakeSummary": "Tests failed: waking the agent"}
        ]}]}
    }));
    let output = project.run(&["-p", "change it", "--output-format", "stream-json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let lines: Vec<Value> = stdout(&output)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect();
    let last = lines.last().expect("a result line");
    assert_eq!(last["type"], "result");
    assert_eq!(last["response"], "fixed it", "{last}");
    assert_eq!(mock.requests().len(), 2, "one wake-up turn");
    let woken = sent_text(&mock, 1);
    assert!(
        woken.contains("The test suite failed after your change."),
        "{woken}"
    );
    assert!(woken.contains("3 tests failed"), "{woken}");
    assert!(
        stdout(&output).contains("Tests failed: waking the agent"),
        "{}",
        stdout(&output)
    );
    // Both turns' async Stop hooks finished before the process exited.
    let ran = std::fs::read_to_string(project.path().join("stop-ran.txt")).unwrap_or_default();
    assert_eq!(ran.lines().count(), 2, "{ran:?}");
}

/// `--init-only` runs the Setup hooks (trigger `init`) and exits without a prompt; `--init`
/// runs them first, and their output is context for the prompt.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn init_flags_run_the_setup_hooks() {
    let mock = mock(json!([{"text": "ok"}, {"text": "ok again"}])).await;
    let project = Project::new();
    project.write_settings(json!({
        "currentProvider": "mock",
        "providers": {"mock": {
            "type": "anthropic", "model": "claude-sonnet-4-5", "apiKey": "test-key",
            "baseURL": mock.base_url(), "options": {"maxRetries": 0}
        }},
        "hooks": {"Setup": [{"matcher": "init", "hooks": [{"type": "command",
            "command": "cat > \"$CLAUDE_PROJECT_DIR/setup-input.json\"; echo 'dependencies installed'"}]}]}
    }));
    let output = project.run(&["--init-only"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let input: Value = serde_json::from_str(
        &std::fs::read_to_string(project.path().join("setup-input.json")).expect("hook ran"),
    )
    .expect("hook input is JSON");
    assert_eq!(input["hook_event_name"], "Setup");
    assert_eq!(input["trigger"], "init");
    assert!(mock.requests().is_empty(), "no prompt, no model call");

    let output = project.run(&["--init", "-p", "hello"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        sent_text(&mock, 0).contains("dependencies installed"),
        "{}",
        sent_text(&mock, 0)
    );
    // `--maintenance` fires trigger `maintenance`, which the `init` matcher does not match.
    std::fs::remove_file(project.path().join("setup-input.json")).expect("remove");
    let output = project.run(&["--maintenance", "-p", "again"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(!project.path().join("setup-input.json").exists());
    assert!(!sent_text(&mock, 1).contains("dependencies installed"));
    let output = project.run(&["--maintenance", "--init-only"]);
    assert_eq!(
        output.status.code(),
        Some(2),
        "flags conflict: {}",
        stderr(&output)
    );
}

/// Configuration problems robota works around are never silent in a headless run: each one on
/// stderr in text mode (and with `--verbose`), a count in `--output-format json`, all of them in
/// the stream-json init line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_headless_run_reports_configuration_warnings() {
    let mock = mock(json!([
        {"text": "one"}, {"text": "two"}, {"text": "three"}, {"text": "four"}
    ]))
    .await;
    let project = Project::new();
    project.use_mock(&mock);
    let claude = project.path().join(".claude");
    std::fs::create_dir_all(&claude).expect("mkdir .claude");
    std::fs::write(
        claude.join("settings.json"),
        json!({"permissions": {"allow": ["Bash(git status)", "Bash*"]}}).to_string(),
    )
    .expect("write settings");
    let agents = project.home.path().join(".claude/agents");
    std::fs::create_dir_all(&agents).expect("mkdir agents");
    std::fs::write(
        agents.join("broken.md"),
        "---\nname: broken\ndescription: x\ntools: [Read\n  - Grep\n---\nbody\n",
    )
    .expect("write agent");

    let output = project.run(&["-p", "hi"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "one\n");
    let err = stderr(&output);
    assert!(
        err.contains("! settings: ") && err.contains("invalid permission rule `Bash*`"),
        "{err}"
    );
    assert!(
        err.contains("broken.md: line 4: agent definition skipped"),
        "{err}"
    );

    let output = project.run(&["-p", "hi", "--output-format", "json"]);
    assert_eq!(json_result(&output)["response"], "two");
    assert!(
        stderr(&output).contains("robota: 2 configuration warnings (run with -v to see them)"),
        "{}",
        stderr(&output)
    );
    let output = project.run(&["-p", "hi", "--output-format", "json", "-v"]);
    let err = stderr(&output);
    assert!(err.contains("invalid permission rule `Bash*`"), "{err}");
    assert!(err.contains("broken.md"), "{err}");
    assert!(!err.contains("configuration warnings"), "{err}");

    let output = project.run(&["-p", "hi", "--output-format", "stream-json"]);
    let init: Value = serde_json::from_str(stdout(&output).lines().next().unwrap_or_default())
        .expect("init line");
    let warnings = init["warnings"].as_array().expect("warnings list");
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(
        warnings.iter().any(|w| w
            .as_str()
            .is_some_and(|w| w.contains("settings.json") && w.contains("permissions.allow[1]"))),
        "{warnings:?}"
    );
    assert!(
        warnings
            .iter()
            .any(|w| w.as_str().is_some_and(|w| w.contains("broken.md")
                && w.contains("line 4")
                && w.contains("agent definition skipped"))),
        "{warnings:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_config_adds_a_server_whose_tools_the_model_calls() {
    let servers = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/mcp-servers");
    assert!(
        servers.join(".venv/bin/python").is_file(),
        "the MCP test servers are not installed: run tests/mcp-servers/setup.sh"
    );
    let mock = mock(json!([
        {"tool_calls": [{"id": "m1", "name": "mcp__py__add", "input": {"a": 20, "b": 22}}]},
        {"text": "Added."}
    ]))
    .await;
    let project = Project::new();
    project.use_mock(&mock);
    let config = json!({"mcpServers": {
        "py": {
            "command": servers.join(".venv/bin/python"),
            "args": [servers.join("python_server.py")]
        },
        "gone": {"command": "/nonexistent/mcp-server"}
    }})
    .to_string();
    let output = project.run(&[
        "-p",
        "add",
        "--mcp-config",
        &config,
        "--allowed-tools",
        "mcp__py",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "Added.\n");
    // The servers connect in the background; the only prompt waited for them, and each status
    // change was printed as it came.
    let log = stderr(&output);
    assert!(log.contains("mcp: server `py` connected"), "{log}");
    assert!(
        log.contains("! mcp: server `gone` failed: cannot run"),
        "{log}"
    );
    assert!(
        sent_text(&mock, 1).contains("42"),
        "{}",
        sent_text(&mock, 1)
    );

    // A broken definition is a usage error naming the server.
    let bad = project.run(&[
        "-p",
        "x",
        "--mcp-config",
        r#"{"mcpServers": {"s": {"args": []}}}"#,
    ]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(stderr(&bad).contains("server `s`"), "{}", stderr(&bad));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_repl_rewinds_an_edit_and_keeps_project_memory() {
    let project = Project::new();
    let file = project.path().join("notes.txt");
    let mock = mock(json!([
        {"tool_calls": [{"id": "w", "name": "Write",
            "input": {"file_path": file.to_string_lossy(), "content": "draft\n"}}]},
        {"text": "Wrote it."}
    ]))
    .await;
    project.write_settings(json!({
        "currentProvider": "mock",
        "providers": {"mock": {
            "type": "anthropic", "model": "claude-sonnet-4-5", "apiKey": "test-key",
            "baseURL": mock.base_url(), "options": {"maxRetries": 0}
        }},
        "permissions": {"defaultMode": "acceptEdits"}
    }));
    let output = project.run_with_input(
        &[],
        b"write the notes\n/rewind list\n/rewind rollback turn-0001\n\
          /memory add project build Use make check\n/memory add user me password: hunter2x\n/exit\n",
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.contains("turn-0001"), "{text}");
    assert!(text.contains("not tracked"), "{text}");
    assert!(
        !file.exists(),
        "the rollback deleted the file the prompt created"
    );
    assert!(text.contains("Saved to memory topic build"), "{text}");
    assert!(text.contains("refused to store this"), "{text}");
    let memory = std::fs::read_to_string(project.path().join(".robota/memory/MEMORY.md"))
        .expect("memory index");
    assert!(memory.contains("Use make check") && !memory.contains("hunter2x"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn telemetry_flags_export_the_prompt_into_the_given_trace() {
    let receiver = otlp_receiver::OtlpReceiver::start()
        .await
        .expect("OTLP receiver");
    let mock =
        mock(json!([{"text": "Traced.", "usage": {"input_tokens": 7, "output_tokens": 2}}])).await;
    let project = Project::new();
    project.write_settings(json!({
        "currentProvider": "mock",
        "providers": {"mock": {
            "type": "anthropic", "model": "claude-sonnet-4-5", "apiKey": "test-key",
            "baseURL": mock.base_url(), "options": {"maxRetries": 0}
        }},
        "telemetry": {"serviceName": "cli-under-test"}
    }));
    let endpoint = receiver.http_endpoint();
    let output = project.run(&[
        "-p",
        "trace me",
        "--otel-endpoint",
        &endpoint,
        "--traceparent",
        "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "Traced.\n");
    // The CLI flushes at shutdown, before it exits.
    let spans = receiver.spans();
    let prompt = spans
        .iter()
        .find(|s| s.name == "invoke_agent robota")
        .unwrap_or_else(|| panic!("no prompt span: {spans:#?}"));
    assert_eq!(prompt.trace_id, "0af7651916cd43dd8448eb211c80319c");
    assert_eq!(prompt.parent_span_id, "b7ad6b7169203331");
    assert_eq!(prompt.service_name.as_deref(), Some("cli-under-test"));
    assert!(spans
        .iter()
        .any(|s| s.name == "chat claude-sonnet-4-5" && s.parent_span_id == prompt.span_id));

    let bad = project.run(&["-p", "x", "--otel-protocol", "carrier-pigeon"]);
    assert_eq!(bad.status.code(), Some(2), "{}", stderr(&bad));
    assert!(stderr(&bad).contains("--otel-protocol"), "{}", stderr(&bad));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn providers_lists_types_and_the_model_catalog() {
    let project = Project::new();
    let output = project.run(&["providers"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    for expected in [
        "anthropic — Anthropic",
        "gemini",
        "bedrock",
        "ANTHROPIC_API_KEY",
    ] {
        assert!(text.contains(expected), "{expected}: {text}");
    }
    let output = project.run(&["providers", "models", "gemini", "--json"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let models: Value = serde_json::from_str(&stdout(&output)).expect("JSON");
    let pro = models
        .as_array()
        .and_then(|m| m.iter().find(|m| m["model"] == "gemini-2.5-pro"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(pro["context_window"], 1_048_576);
    assert_eq!(pro["price"]["input_per_mtok"], 1.25);
    assert!(models
        .as_array()
        .is_some_and(|m| m.iter().all(|m| m["provider"] == "gemini")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn providers_probe_checks_the_active_profile_and_says_what_failed() {
    let project = Project::new();
    let mock = MockLlm::start_json(json!({
        "models": ["claude-sonnet-4-5"], "api_key": "test-key", "turns": []
    }))
    .await
    .expect("start mock-llm");
    project.use_mock(&mock);
    let output = project.run(&["providers", "probe"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        stdout(&output).starts_with("ok: ") && stdout(&output).contains("claude-sonnet-4-5"),
        "{}",
        stdout(&output)
    );

    // The same profile with a wrong key: exit 1, the step and the variable to fix.
    project.write_settings(json!({
        "currentProvider": "mock",
        "providers": {"mock": {
            "type": "anthropic", "model": "claude-sonnet-4-5", "apiKey": "wrong",
            "baseURL": mock.base_url()
        }}
    }));
    let output = project.run(&["providers", "probe", "--json"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let report = json_result(&output);
    assert_eq!(report["stage"], "auth");
    assert_eq!(report["status"], 401);
    assert!(
        report["message"]
            .as_str()
            .is_some_and(|m| m.contains("ANTHROPIC_API_KEY")),
        "{report}"
    );

    let output = project.run(&["providers", "probe", "--profile", "nope"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("profiles: mock"),
        "{}",
        stderr(&output)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fallback_model_answers_when_the_main_model_is_overloaded() {
    let project = Project::new();
    let mock = mock(json!([
        {"fault": {"kind": "status", "status": 529}},
        {"text": "answered by the fallback"}
    ]))
    .await;
    project.use_mock(&mock);
    let output = project.run(&[
        "-p",
        "hi",
        "--output-format",
        "json",
        "--fallback-model",
        "claude-haiku-4-5",
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(json_result(&output)["response"], "answered by the fallback");
    let models: Vec<Value> = mock
        .requests()
        .iter()
        .map(|r| r.body["model"].clone())
        .collect();
    assert_eq!(
        models,
        [json!("claude-sonnet-4-5"), json!("claude-haiku-4-5")]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn native_web_search_reaches_the_event_stream_and_the_text_output() {
    let turn = json!({"content_blocks": [
        {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search",
         "input": {"query": "rust 1.0 release"}},
        {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": [
            {"type": "web_search_result", "url": "https://blog.rust-lang.org/",
             "title": "Rust Blog", "encrypted_content": "EncA"}]},
        {"type": "text", "text": "May 2015.", "citations": [
            {"type": "web_search_result_location", "url": "https://blog.rust-lang.org/",
             "title": "Rust Blog", "encrypted_index": "EncIdx", "cited_text": "Rust 1.0"}]}
    ]});
    let mock = mock(json!([turn.clone(), turn])).await;
    let project = Project::new();
    project.write_settings(json!({
        "currentProvider": "mock",
        "providers": {"mock": {
            "type": "anthropic", "model": "claude-sonnet-4-5", "apiKey": "test-key",
            "baseURL": mock.base_url(),
            "options": {"maxRetries": 0, "serverTools": [{"name": "web_search", "maxUses": 2}]}
        }}
    }));
    let output = project.run(&["-p", "When?", "--output-format", "stream-json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let lines: Vec<Value> = stdout(&output)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect();
    let server: Vec<&Value> = lines
        .iter()
        .filter(|l| {
            l["type"]
                .as_str()
                .is_some_and(|t| t.starts_with("server_tool"))
        })
        .collect();
    assert_eq!(server.len(), 2, "{lines:?}");
    assert_eq!(server[0]["type"], "server_tool_use");
    assert_eq!(server[0]["id"], "srvtoolu_1");
    assert_eq!(server[0]["name"], "web_search");
    assert_eq!(server[0]["input"]["query"], "rust 1.0 release");
    assert_eq!(server[1]["type"], "server_tool_result");
    assert_eq!(server[1]["tool_use_id"], "srvtoolu_1");
    assert_eq!(server[1]["result_type"], "web_search_tool_result");
    assert_eq!(server[1]["is_error"], false);
    let tools = &mock.requests()[0].body["tools"];
    let declared = tools.as_array().and_then(|t| t.last()).cloned();
    assert_eq!(
        declared.map(|t| (t["type"].clone(), t["max_uses"].clone())),
        Some((json!("web_search_20250305"), json!(2))),
        "{tools}"
    );

    // Text mode shows the search as it happens.
    let output = project.run(&["-p", "When?"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let shown = format!("{}{}", stdout(&output), stderr(&output));
    assert!(shown.contains("Searching: rust 1.0 release"), "{shown}");
    assert!(shown.contains("May 2015."), "{shown}");
}

/// A Bedrock settings profile at mock-llm, credentials from the AWS chain in the child's
/// environment only: a `credential_process` profile, then a role assumed through STS (both
/// answered on loopback), each visible in how the model request was signed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bedrock_takes_credentials_from_the_aws_chain_of_its_environment() {
    let project = Project::new();
    let mock = mock(json!([{"text": "from a process"}, {"text": "from a role"}])).await;
    project.write_settings(json!({
        "currentProvider": "aws",
        "providers": {"aws": {
            "type": "bedrock", "model": "anthropic.claude-sonnet-4-5-20250929-v1:0",
            "baseURL": mock.base_url(), "options": {"region": "us-west-2", "maxRetries": 0}
        }}
    }));
    let aws = project.home.path().join(".aws");
    std::fs::create_dir_all(&aws).expect("mkdir ~/.aws");
    let script = project.home.path().join("creds.sh");
    std::fs::write(
        &script,
        "#!/bin/sh\necho '{\"Version\": 1, \"AccessKeyId\": \"ASIACLIPROCESS\", \
         \"SecretAccessKey\": \"s\", \"SessionToken\": \"cli-session\"}'\n",
    )
    .expect("script");
    std::fs::write(
        aws.join("config"),
        format!(
            "[profile proc]\ncredential_process = sh {}\n\n[profile role]\n\
             role_arn = arn:aws:iam::123456789012:role/bedrock\nsource_profile = base\n",
            script.display()
        ),
    )
    .expect("config");
    std::fs::write(
        aws.join("credentials"),
        "[base]\naws_access_key_id = AKIDCLIBASE\naws_secret_access_key = b\n",
    )
    .expect("credentials");
    let run_with_profile = |profile: &str| {
        let mut command = project.robota();
        for (name, _) in std::env::vars() {
            if name.starts_with("AWS_") || name.starts_with("CLAUDE_CODE_USE_") {
                command.env_remove(name);
            }
        }
        command
            .env("AWS_PROFILE", profile)
            .env("AWS_EC2_METADATA_DISABLED", "true")
            .env("AWS_ENDPOINT_URL_STS", mock.base_url())
            .args(["-p", "hi"])
            .output()
            .expect("run robota")
    };
    let scope_of = |request: &mock_llm::RecordedRequest| {
        request
            .headers
            .get("authorization")
            .and_then(|a| a.split("Credential=").nth(1))
            .and_then(|rest| rest.split('/').next())
            .unwrap_or_default()
            .to_string()
    };

    let output = run_with_profile("proc");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "from a process\n");
    let output = run_with_profile("role");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "from a role\n");

    let requests = mock.requests();
    let model: Vec<_> = requests
        .iter()
        .filter(|r| r.path.starts_with("/model/"))
        .collect();
    assert_eq!(scope_of(model[0]), "ASIACLIPROCESS");
    assert_eq!(
        model[0]
            .headers
            .get("x-amz-security-token")
            .map(String::as_str),
        Some("cli-session")
    );
    let sts = requests
        .iter()
        .find(|r| r.path == "/")
        .expect("the role was assumed through STS");
    assert_eq!(scope_of(sts), "AKIDCLIBASE");
    assert_eq!(scope_of(model[1]), mock_llm::ASSUME_ROLE_KEY_ID);
}
