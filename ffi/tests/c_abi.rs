//! Builds the C tests and examples against `include/robota.h` and the freshly built
//! `librobota` (the cdylib next to this test binary), and runs them.
//!
//! Needs a C and a C++ compiler (`cc`/`c++`, or `CC`/`CXX`), and cJSON (`libcjson-dev`) for
//! the conformance runner.
//!
//! Sanitizer modes (env `ROBOTA_C_SANITIZER`):
//! - `asan`: the C programs are built with `-fsanitize=address,undefined
//!   -fno-omit-frame-pointer` and run with `ASAN_OPTIONS=detect_leaks=1`;
//! - `valgrind`: each C program runs under `valgrind --leak-check=full
//!   --errors-for-leak-kinds=definite,indirect --error-exitcode=99 --child-silent-after-fork=yes`
//!   (a forked test child deliberately abandons the parent's objects; it reports its result
//!   through a pipe, so its leak-check exit status does not matter).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("ffi/ has a parent")
        .to_path_buf()
}

/// The directory holding `librobota.so`/`.dylib`.
///
/// `cargo test` builds this package's library only as a test harness, never as the cdylib (and the
/// crate has no rlib: its name would collide with the engine's `librobota.rlib`). So the cdylib
/// next to this test binary exists only if something built it (`cargo build -p robota-ffi`, as
/// `.ci/run` does first); when it is missing or older than the engine's or the C ABI's sources,
/// it is built here once, into a target dir of its own (the shared one is locked by the running
/// `cargo test`).
fn library_dir() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let exe = std::env::current_exe().expect("test binary path");
            let deps = exe.parent().expect("deps dir");
            let profile = deps.parent().expect("profile dir");
            // A cdylib older than the newest engine or C ABI source file is stale.
            let lib = std::fs::metadata(profile.join(LIBRARY)).and_then(|m| m.modified());
            if let Ok(lib) = lib {
                let root = workspace_root();
                let newest = ["core/src", "ffi/src", "Cargo.lock"]
                    .iter()
                    .filter_map(|p| newest_modification(&root.join(p)))
                    .max();
                if newest.is_some_and(|newest| lib >= newest) {
                    return profile.to_path_buf();
                }
            }
            let target = profile.parent().expect("target dir").join("ffi-c-tests");
            let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
            run(Command::new(cargo)
                .args(["build", "--locked", "-p", "robota-ffi", "--lib"])
                .env("CARGO_TARGET_DIR", &target)
                .current_dir(workspace_root()));
            let dir = target.join("debug");
            assert!(
                dir.join(LIBRARY).exists(),
                "{LIBRARY} not found in {} after building it",
                dir.display()
            );
            dir
        })
        .clone()
}

/// The newest modification time of `path` or any file below it.
fn newest_modification(path: &Path) -> Option<std::time::SystemTime> {
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_dir() {
        return meta.modified().ok();
    }
    std::fs::read_dir(path)
        .ok()?
        .filter_map(Result::ok)
        .filter_map(|entry| newest_modification(&entry.path()))
        .max()
}

const LIBRARY: &str = if cfg!(target_os = "macos") {
    "librobota.dylib"
} else {
    "librobota.so"
};

fn run(command: &mut Command) -> String {
    let output = command
        .output()
        .unwrap_or_else(|e| panic!("cannot run {command:?}: {e}"));
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{command:?} failed ({}):\n--- stdout\n{stdout}\n--- stderr\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// The sanitizer mode the C programs are built and run in.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Sanitizer {
    None,
    Asan,
    Valgrind,
}

fn sanitizer() -> Sanitizer {
    match std::env::var("ROBOTA_C_SANITIZER").as_deref() {
        Ok("asan") => Sanitizer::Asan,
        Ok("valgrind") => Sanitizer::Valgrind,
        Ok("") | Err(_) => Sanitizer::None,
        Ok(other) => panic!("unknown ROBOTA_C_SANITIZER `{other}` (expected asan or valgrind)"),
    }
}

/// Compiles one C11 source with the strict flags and links it to librobota (and `libs`).
fn build_c(source: &Path, name: &str) -> PathBuf {
    build_c_with(source, name, &[])
}

fn build_c_with(source: &Path, name: &str, libs: &[&str]) -> PathBuf {
    let root = workspace_root();
    let lib = library_dir();
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let mut command = Command::new(cc);
    command
        .args([
            "-std=c11",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-pedantic",
            "-pthread",
            "-g",
        ])
        .arg("-I")
        .arg(root.join("include"));
    if sanitizer() == Sanitizer::Asan {
        command.args(["-fsanitize=address,undefined", "-fno-omit-frame-pointer"]);
    }
    command
        .arg(source)
        .arg("-L")
        .arg(&lib)
        .arg("-lrobota")
        .args(libs)
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .arg("-o")
        .arg(&out);
    run(&mut command);
    out
}

/// Runs a built C program in the sanitizer mode, in the test's temp dir, with `env`.
fn run_c(exe: &Path, args: &[&str], env: &[(&str, &str)]) -> String {
    let mut command = match sanitizer() {
        Sanitizer::Valgrind => {
            let mut command = Command::new("valgrind");
            command
                .args([
                    "--quiet",
                    "--leak-check=full",
                    "--errors-for-leak-kinds=definite,indirect",
                    "--error-exitcode=99",
                    "--child-silent-after-fork=yes",
                ])
                .arg(exe);
            command
        }
        _ => Command::new(exe),
    };
    if sanitizer() == Sanitizer::Asan {
        command.env("ASAN_OPTIONS", "detect_leaks=1");
    }
    command.args(args).envs(env.iter().copied());
    run(command.current_dir(env!("CARGO_TARGET_TMPDIR")))
}

#[test]
fn c_test_basic_passes() {
    let root = workspace_root();
    let exe = build_c(&root.join("ffi/tests/c/test_basic.c"), "test_basic");
    let stdout = run_c(&exe, &[], &[]);
    assert!(stdout.contains("all checks passed"), "{stdout}");
}

/// The processes a session starts end with `robota_session_free` and `robota_session_shutdown`
/// (checked by pid).
#[test]
#[cfg(target_os = "linux")]
fn c_test_processes_passes() {
    let root = workspace_root();
    let exe = build_c(&root.join("ffi/tests/c/test_processes.c"), "test_processes");
    let stdout = run_c(&exe, &[], &[]);
    assert!(stdout.contains("all checks passed"), "{stdout}");
}

#[test]
fn c_quickstart_runs() {
    let root = workspace_root();
    let exe = build_c(&root.join("examples/c/quickstart.c"), "quickstart");
    let stdout = run_c(&exe, &[], &[]);
    assert!(stdout.contains("Hello from C!"), "{stdout}");
}

/// examples/c/query.c: offline (scripted) by default, and against mock-llm over HTTP with
/// `ROBOTA_BASE_URL`.
#[test]
fn c_query_example_runs() {
    let root = workspace_root();
    let exe = build_c(&root.join("examples/c/query.c"), "query");
    let stdout = run_c(&exe, &[], &[]);
    assert!(
        stdout.contains(r#""response":"robota is an embeddable agent engine.""#),
        "{stdout}"
    );
    assert!(stdout.contains(r#""num_turns":1"#), "{stdout}");

    let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");
    let mock = runtime
        .block_on(mock_llm::MockLlm::start_json(serde_json::json!({
            "turns": [{"text": ["Answered ", "over HTTP."]}]
        })))
        .expect("mock-llm starts");
    let url = mock.base_url();
    let stdout = run_c(
        &exe,
        &["hello?"],
        &[
            ("ROBOTA_BASE_URL", url.as_str()),
            ("ANTHROPIC_API_KEY", "test-key"),
        ],
    );
    assert!(
        stdout.contains(r#""response":"Answered over HTTP.""#),
        "{stdout}"
    );
    runtime.block_on(mock.shutdown());
}

/// Host extensions, session functions, queries, abort/free with work in flight, fork
/// detection and invalid inputs, plus one HTTP turn against an in-process mock-llm.
#[test]
fn c_test_host_passes() {
    let root = workspace_root();
    let exe = build_c(&root.join("ffi/tests/c/test_host.c"), "test_host");
    let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");
    let mock = runtime
        .block_on(mock_llm::MockLlm::start_json(serde_json::json!({
            "turns": [
                {"tool_calls": [{"id": "toolu_1", "name": "lookup", "input": {"city": "Berlin"}}]},
                {"text": ["Rainy in Berlin ", "over HTTP."]}
            ]
        })))
        .expect("mock-llm starts");
    let url = mock.base_url();
    // The MCP test servers (tests/mcp-servers/setup.sh) for the MCP part of the test.
    let mcp_servers = root.join("tests/mcp-servers").display().to_string();
    let stdout = run_c(
        &exe,
        &[],
        &[
            ("ROBOTA_MOCK_URL", url.as_str()),
            ("ROBOTA_MCP_SERVERS", mcp_servers.as_str()),
        ],
    );
    assert!(stdout.contains("all checks passed"), "{stdout}");
    let requests = mock.requests();
    assert_eq!(requests.len(), 2, "two model calls over HTTP");
    runtime.block_on(mock.shutdown());
}

/// An in-process MCP server whose tools are C callbacks: the model behind mock-llm calls its
/// tools and the callbacks' answers reach it; a name shared with a configured server and bad
/// input are typed errors.
#[test]
fn c_test_mcp_server_passes() {
    let root = workspace_root();
    let exe = build_c(
        &root.join("ffi/tests/c/test_mcp_server.c"),
        "test_mcp_server",
    );
    let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");
    let mock = runtime
        .block_on(mock_llm::MockLlm::start_json(serde_json::json!({
            "turns": [
                {"tool_calls": [{"id": "toolu_1", "name": "mcp__calc__add", "input": {"a": 40, "b": 2}}]},
                {"tool_calls": [{"id": "toolu_2", "name": "mcp__calc__divide", "input": {"a": 1, "b": 0}}]},
                {"text": ["Computed over MCP."]}
            ]
        })))
        .expect("mock-llm starts");
    let url = mock.base_url();
    let stdout = run_c(&exe, &[], &[("ROBOTA_MOCK_URL", url.as_str())]);
    assert!(stdout.contains("all checks passed"), "{stdout}");
    let requests = mock.requests();
    assert_eq!(requests.len(), 3, "three model calls over HTTP");
    let body = requests[0].body.to_string();
    assert!(body.contains("mcp__calc__add"), "{body}");
    let last = requests[2].body.to_string();
    assert!(
        last.contains("sum = 42") && last.contains("division by zero"),
        "{last}"
    );
    runtime.block_on(mock.shutdown());
}

/// A command written in C acts on its session through the live command context over mock-llm
/// (state, settings write, plan mode, compact, clear); a context kept past its command and bad
/// operations are typed errors.
#[test]
fn c_command_context_passes() {
    let root = workspace_root();
    let exe = build_c(
        &root.join("ffi/tests/c/test_command_context.c"),
        "test_command_context",
    );
    let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");
    let mock = runtime
        .block_on(mock_llm::MockLlm::start_json(serde_json::json!({
            "turns": [
                {"text": ["first answer"]},
                {"text": ["second answer"]},
                {"text": ["SUMMARY: two answers"]}
            ]
        })))
        .expect("mock-llm starts");
    let dir = TempDir::new("command-context");
    std::fs::create_dir_all(dir.path().join("project")).expect("project");
    std::fs::create_dir_all(dir.path().join("home")).expect("home");
    let url = mock.base_url();
    let test_dir = dir.path().display().to_string();
    let stdout = run_c(
        &exe,
        &[],
        &[
            ("ROBOTA_MOCK_URL", url.as_str()),
            ("ROBOTA_TEST_DIR", test_dir.as_str()),
        ],
    );
    assert!(stdout.contains("all checks passed"), "{stdout}");
    let requests = mock.requests();
    assert_eq!(requests.len(), 3, "two prompts and the compaction summary");
    assert!(requests[2].body.to_string().contains("keep names"));
    let local = dir.path().join("project/.claude/settings.local.json");
    let text = std::fs::read_to_string(&local).expect("settings written");
    assert!(text.contains("\"language\": \"ko\""), "{text}");
    runtime.block_on(mock.shutdown());
}

/// Claude Code's tools from C: a model call to TodoWrite over HTTP brings a `todo_update` event,
/// MultiEdit edits a file in the session's directory, a settings PreToolUse command hook sees
/// both, and an `Edit(...)` deny rule stops MultiEdit on the file it names.
#[test]
fn c_test_claude_tools_passes() {
    let root = workspace_root();
    let exe = build_c(
        &root.join("ffi/tests/c/test_claude_tools.c"),
        "test_claude_tools",
    );
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("claude-tools-project");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("project dir");
    let dir = std::fs::canonicalize(&dir).expect("canonical");
    std::fs::write(dir.join("notes.txt"), "one\ntwo\n").expect("write");
    std::fs::write(dir.join("locked.txt"), "keep\n").expect("write");
    let notes = dir.join("notes.txt").display().to_string();
    let locked = dir.join("locked.txt").display().to_string();
    let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");
    let mock = runtime
        .block_on(mock_llm::MockLlm::start_json(serde_json::json!({
            "turns": [
                {"tool_calls": [{"id": "toolu_todo", "name": "TodoWrite", "input": {"todos": [
                    {"content": "Write the test", "status": "in_progress", "activeForm": "Writing the test"},
                    {"content": "Run it", "status": "pending", "activeForm": "Running it"}
                ]}}]},
                {"tool_calls": [{"id": "toolu_multi", "name": "MultiEdit", "input": {
                    "file_path": notes,
                    "edits": [
                        {"old_string": "one", "new_string": "one 1"},
                        {"old_string": "two", "new_string": "two 2"}
                    ]}}]},
                {"tool_calls": [{"id": "toolu_locked", "name": "MultiEdit", "input": {
                    "file_path": locked,
                    "edits": [{"old_string": "keep", "new_string": "lost"}]}}]},
                {"text": "done"}
            ]
        })))
        .expect("mock-llm starts");
    let url = mock.base_url();
    let dir_text = dir.display().to_string();
    let stdout = run_c(
        &exe,
        &[],
        &[
            ("ROBOTA_MOCK_URL", url.as_str()),
            ("ROBOTA_TEST_DIR", dir_text.as_str()),
        ],
    );
    assert!(stdout.contains("all checks passed"), "{stdout}");
    assert_eq!(mock.requests().len(), 4, "four model calls over HTTP");
    runtime.block_on(mock.shutdown());
}

/// Background tasks from C: the model starts `sleep 300` with Bash `run_in_background`; the host
/// lists, gets, waits for, cancels (its process gone) and closes it.
#[test]
fn c_test_background_passes() {
    let root = workspace_root();
    let exe = build_c(
        &root.join("ffi/tests/c/test_background.c"),
        "test_background",
    );
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("background-project");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("project dir");
    let dir = std::fs::canonicalize(&dir).expect("canonical");
    let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");
    let mock = runtime
        .block_on(mock_llm::MockLlm::start_json(serde_json::json!({
            "turns": [
                {"tool_calls": [{"id": "toolu_bg", "name": "Bash", "input": {
                    "command": "sleep 300", "run_in_background": true}}]},
                {"text": "started"}
            ]
        })))
        .expect("mock-llm starts");
    let url = mock.base_url();
    let dir_text = dir.display().to_string();
    let stdout = run_c(
        &exe,
        &[],
        &[
            ("ROBOTA_MOCK_URL", url.as_str()),
            ("ROBOTA_TEST_DIR", dir_text.as_str()),
        ],
    );
    assert!(stdout.contains("all checks passed"), "{stdout}");
    runtime.block_on(mock.shutdown());
}

/// Subagents started from C against mock-llm: one in the foreground on a model alias, one in the
/// background waited for and read, a slow one cancelled; bad requests are typed errors.
#[test]
fn c_test_subagents_passes() {
    let root = workspace_root();
    let exe = build_c(&root.join("ffi/tests/c/test_subagents.c"), "test_subagents");
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("subagents-project");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("project dir");
    let dir = std::fs::canonicalize(&dir).expect("canonical");
    let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");
    let slow: Vec<String> = (0..100).map(|_| "slow ".to_string()).collect();
    let mock = runtime
        .block_on(mock_llm::MockLlm::start_json(serde_json::json!({
            "turns": [
                {"text": "FOREGROUND-REPORT"},
                {"text": "BACKGROUND-REPORT"},
                {"text": slow, "chunk_delay_ms": 200}
            ]
        })))
        .expect("mock-llm starts");
    let url = mock.base_url();
    let dir_text = dir.display().to_string();
    let stdout = run_c(
        &exe,
        &[],
        &[
            ("ROBOTA_MOCK_URL", url.as_str()),
            ("ROBOTA_TEST_DIR", dir_text.as_str()),
        ],
    );
    assert!(stdout.contains("all checks passed"), "{stdout}");
    let models: Vec<String> = mock
        .requests()
        .iter()
        .map(|r| r.body["model"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(
        models,
        ["claude-haiku-4-5", "claude-sonnet-4-5", "claude-sonnet-4-5"],
        "the override reached the model call"
    );
    runtime.block_on(mock.shutdown());
}

/// Structured output from C against mock-llm: a valid answer, one fixed after the follow-up
/// (which names the failing path), and one that never matches (`ROBOTA_STATUS_STRUCTURED_OUTPUT`
/// after exactly 1 + 2 requests).
#[test]
fn c_test_structured_output_passes() {
    let root = workspace_root();
    let exe = build_c(
        &root.join("ffi/tests/c/test_structured_output.c"),
        "test_structured_output",
    );
    let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");
    let mock = runtime
        .block_on(mock_llm::MockLlm::start_json(serde_json::json!({
            "turns": [
                {"text": "{\"city\": \"Lisbon\", \"population\": 545000}"},
                {"text": "{\"city\": \"Porto\", \"population\": \"many\"}"},
                {"text": "```json\n{\"city\": \"Porto\", \"population\": 230000}\n```"},
                {"text": "Faro, I think."},
                {"text": "Still Faro."},
                {"text": "{\"city\": \"Faro\"}"}
            ]
        })))
        .expect("mock-llm starts");
    let url = mock.base_url();
    let stdout = run_c(&exe, &[], &[("ROBOTA_MOCK_URL", url.as_str())]);
    assert!(stdout.contains("all checks passed"), "{stdout}");
    let requests = mock.requests();
    assert_eq!(requests.len(), 6, "1 + 2 + (1 + 2 follow-ups)");
    let follow_up = requests[2].body["messages"]
        .as_array()
        .and_then(|m| m.last())
        .map(|m| m["content"].to_string())
        .unwrap_or_default();
    assert!(
        follow_up.contains("/population"),
        "the follow-up names the failing path: {follow_up}"
    );
    runtime.block_on(mock.shutdown());
}

/// The model catalog from C (a snapshot id, a Bedrock id, an unknown model, bad input, the list)
/// and `fallback_model` against mock-llm: the main model answers 529, the fallback answers, and
/// the C host sees one `warning` event with source `fallback_model`.
#[test]
fn c_test_models_passes() {
    let root = workspace_root();
    let exe = build_c(&root.join("ffi/tests/c/test_models.c"), "test_models");
    let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");
    let mock = runtime
        .block_on(mock_llm::MockLlm::start_json(serde_json::json!({
            "turns": [
                {"fault": {"kind": "status", "status": 529}},
                {"text": "from the fallback"}
            ]
        })))
        .expect("mock-llm starts");
    let url = mock.base_url();
    let stdout = run_c(&exe, &[], &[("ROBOTA_MOCK_URL", url.as_str())]);
    assert!(stdout.contains("all checks passed"), "{stdout}");
    let models: Vec<String> = mock
        .requests()
        .iter()
        .map(|request| {
            request.body["model"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    assert_eq!(models, ["claude-opus-4-6", "claude-haiku-4-5"]);
    runtime.block_on(mock.shutdown());
}

/// The browser step of a remote MCP server's OAuth through a C callback, against the real
/// OAuth-protected test server (`tests/mcp-servers/python_server.py --http PORT --oauth`, which
/// approves at once): the session connects, the tool works, the next session reuses the tokens.
#[test]
fn c_test_mcp_oauth_passes() {
    let root = workspace_root();
    let servers = root.join("tests/mcp-servers");
    let python = servers.join(".venv/bin/python");
    assert!(
        python.is_file(),
        "the MCP test servers are not installed: run tests/mcp-servers/setup.sh"
    );
    let exe = build_c(&root.join("ffi/tests/c/test_mcp_oauth.c"), "test_mcp_oauth");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let mut server = Command::new(&python)
        .arg(servers.join("python_server.py"))
        .args(["--http", &port.to_string(), "--oauth"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("the OAuth test server starts");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "the OAuth test server did not start"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");
    let turn = |id: &str| serde_json::json!({"tool_calls": [{"id": id, "name": "mcp__secure__add", "input": {"a": 40, "b": 2}}]});
    let mock = runtime
        .block_on(mock_llm::MockLlm::start_json(serde_json::json!({
            "turns": [turn("toolu_1"), {"text": ["Added."]}, turn("toolu_2"), {"text": ["Again."]}]
        })))
        .expect("mock-llm starts");
    let home =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("oauth-home-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&home);
    std::fs::create_dir_all(&home).expect("the home folder");
    let home_text = home.display().to_string();
    let url = mock.base_url();
    let server_url = format!("http://127.0.0.1:{port}/mcp");
    let stdout = run_c(
        &exe,
        &[],
        &[
            ("ROBOTA_MOCK_URL", url.as_str()),
            ("ROBOTA_OAUTH_MCP_URL", server_url.as_str()),
            ("ROBOTA_TEST_HOME", home_text.as_str()),
        ],
    );
    let _ = server.kill();
    let _ = server.wait();
    assert!(stdout.contains("all checks passed"), "{stdout}");
    let tokens: Vec<_> = std::fs::read_dir(home.join(".robota/mcp-oauth"))
        .expect("the token folder")
        .filter_map(Result::ok)
        .collect();
    assert_eq!(tokens.len(), 1, "{tokens:?}");
    let _ = std::fs::remove_dir_all(&home);
    runtime.block_on(mock.shutdown());
}

/// A session store written in C passes the store conformance suite, and a session saved in it
/// resumes with its history, one writer at a time.
#[test]
fn c_test_session_store_passes() {
    let root = workspace_root();
    let exe = build_c_with(
        &root.join("ffi/tests/c/test_session_store.c"),
        "test_session_store",
        &["-lcjson", "-lpthread"],
    );
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("session-store-project");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("project dir");
    let dir = std::fs::canonicalize(&dir).expect("canonical");
    let dir_text = dir.display().to_string();
    let stdout = run_c(&exe, &[], &[("ROBOTA_TEST_DIR", dir_text.as_str())]);
    assert!(stdout.contains("all checks passed"), "{stdout}");
    assert!(
        !dir.join(".robota/sessions").exists(),
        "nothing was saved in the project's files"
    );
}

/// The conformance scenarios (tests/conformance/scenarios/*.json), played by the C runner.
#[test]
fn c_conformance_scenarios_pass() {
    let root = workspace_root();
    let exe = build_c_with(
        &root.join("ffi/tests/c/conformance.c"),
        "conformance",
        &["-lcjson"],
    );
    let mut scenarios: Vec<String> = std::fs::read_dir(root.join("tests/conformance/scenarios"))
        .expect("tests/conformance/scenarios exists")
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|e| e == "json"))
        .map(|path| path.display().to_string())
        .collect();
    scenarios.sort();
    assert!(!scenarios.is_empty(), "no scenarios found");
    let args: Vec<&str> = scenarios.iter().map(String::as_str).collect();
    // The MCP server catalog of tests/conformance/README.md lives here.
    let servers_dir = root.join("tests/mcp-servers").display().to_string();
    let stdout = run_c(
        &exe,
        &args,
        &[("ROBOTA_MCP_SERVERS_DIR", servers_dir.as_str())],
    );
    let expected = format!("all {} scenarios passed", scenarios.len());
    assert!(stdout.contains(&expected), "{stdout}");
}

#[test]
fn header_compiles_as_cpp17() {
    let root = workspace_root();
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
    run(Command::new(cxx)
        .args([
            "-std=c++17",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-pedantic",
            "-fsyntax-only",
        ])
        .arg("-I")
        .arg(root.join("include"))
        .arg(root.join("ffi/tests/c/header_cpp.cpp")));
}

/// A fresh directory under the system's temp folder, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(label: &str) -> Self {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        let path =
            std::env::temp_dir().join(format!("robota-c-{label}-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&path).expect("temp dir");
        TempDir(path)
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
