//! The Claude Agent SDK's protocol at the process boundary (`--input-format stream-json
//! --output-format stream-json`): the flags the SDKs pass, the errors for flags robota does not
//! know, and a whole exchange written to stdin as the SDK writes it, against mock-llm. (The real
//! Python SDK drives the same binary in `tests/claude-agent-sdk/`.)

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use mock_llm::MockLlm;
use serde_json::{json, Value};
use tempfile::TempDir;

/// The flags the Python SDK passes for a plain `query()` (in its order).
const SDK_FLAGS: &[&str] = &[
    "--output-format",
    "stream-json",
    "--verbose",
    "--system-prompt",
    "",
    "--input-format",
    "stream-json",
];

/// Runs robota in `project` with `args`, `input` on stdin (then closed).
fn run(project: &Path, home: &Path, args: &[&str], input: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_robota"))
        .current_dir(project)
        .env("HOME", home)
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("ANTHROPIC_BASE_URL")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn robota");
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(input.as_bytes())
            .expect("write robota's stdin");
    }
    child.wait_with_output().expect("wait for robota")
}

/// A temp project whose settings point the Anthropic provider at `mock`, and a temp home.
fn project(mock: &MockLlm) -> (TempDir, TempDir) {
    let dir = tempfile::tempdir().expect("temp project");
    let home = tempfile::tempdir().expect("temp home");
    std::fs::create_dir_all(dir.path().join(".robota")).expect("create .robota");
    std::fs::write(
        dir.path().join(".robota/settings.json"),
        json!({
            "currentProvider": "mock",
            "providers": {"mock": {
                "type": "anthropic", "model": "claude-sonnet-4-5", "apiKey": "test-key",
                "baseURL": mock.base_url(), "options": {"maxRetries": 0}
            }}
        })
        .to_string(),
    )
    .expect("write settings");
    (dir, home)
}

/// Stdout's JSON lines.
fn lines(output: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}")))
        .collect()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn an_unknown_flag_is_an_error_naming_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut args = SDK_FLAGS.to_vec();
    args.push("--no-such-flag");
    let output = run(dir.path(), dir.path(), &args, "");
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("--no-such-flag"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn stream_json_input_needs_stream_json_output() {
    let dir = tempfile::tempdir().expect("temp dir");
    let output = run(
        dir.path(),
        dir.path(),
        &["--input-format", "stream-json"],
        "",
    );
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("--output-format stream-json"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn a_bad_setting_source_is_named() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut args = SDK_FLAGS.to_vec();
    args.push("--setting-sources=user,everywhere");
    let input = json!({"type": "user", "message": {"role": "user", "content": "hi"}}).to_string();
    let output = run(dir.path(), dir.path(), &args, &(input + "\n"));
    let lines = lines(&output);
    let result = lines.last().expect("a result line");
    assert_eq!(result["type"], "result");
    assert_eq!(result["is_error"], true);
    assert!(result["errors"][0]
        .as_str()
        .is_some_and(|e| e.contains("`everywhere`")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exchange_as_the_sdk_writes_it() {
    let mock = MockLlm::start_json(json!({"turns": [
        {"tool_calls": [{"id": "toolu_1", "name": "Bash", "input": {"command": "echo hi"}}]},
        {"text": "Done.", "usage": {"input_tokens": 7, "output_tokens": 2}},
    ]}))
    .await
    .expect("start mock-llm");
    let (dir, home) = project(&mock);
    let mut args = SDK_FLAGS.to_vec();
    // The SDK's camelCase spellings.
    args.extend(["--allowedTools", "Bash", "--disallowedTools", "Write"]);
    args.extend(["--permission-mode", "default", "--max-turns", "5"]);
    let input = [
        json!({"type": "control_request", "request_id": "req_1", "request": {
            "subtype": "initialize", "hooks": null}}),
        json!({"type": "control_request", "request_id": "req_2", "request": {
            "subtype": "rewind_files", "user_message_id": "x"}}),
        json!({"type": "user", "session_id": "", "parent_tool_use_id": null,
            "message": {"role": "user", "content": "Say hi in the shell"}}),
    ]
    .iter()
    .map(|line| format!("{line}\n"))
    .collect::<String>();
    let output = tokio::task::spawn_blocking(move || run(dir.path(), home.path(), &args, &input))
        .await
        .expect("robota ran");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let lines = lines(&output);
    let reply = |id: &str| {
        lines
            .iter()
            .find(|l| l["type"] == "control_response" && l["response"]["request_id"] == id)
            .cloned()
            .unwrap_or_else(|| panic!("no reply to {id}: {lines:?}"))
    };
    assert_eq!(reply("req_1")["response"]["subtype"], "success");
    let unsupported = reply("req_2");
    assert_eq!(unsupported["response"]["subtype"], "error");
    assert!(unsupported["response"]["error"]
        .as_str()
        .is_some_and(|e| e.contains("rewind_files")));

    let kinds: Vec<&str> = lines
        .iter()
        .filter(|l| l["type"] != "control_response")
        .map(|l| l["type"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(
        kinds,
        ["system", "assistant", "user", "assistant", "result"]
    );
    let body: Vec<&Value> = lines
        .iter()
        .filter(|l| l["type"] != "control_response")
        .collect();
    assert_eq!(body[0]["subtype"], "init");
    assert_eq!(body[1]["message"]["content"][0]["type"], "tool_use");
    assert_eq!(body[1]["message"]["content"][0]["name"], "Bash");
    let tool_result = &body[2]["message"]["content"][0];
    assert_eq!(tool_result["tool_use_id"], "toolu_1");
    assert_eq!(tool_result["is_error"], false);
    assert!(tool_result["content"]
        .as_str()
        .is_some_and(|c| c.contains("hi")));
    assert_eq!(body[3]["message"]["content"][0]["text"], "Done.");
    let result = body[4];
    assert_eq!(result["subtype"], "success");
    assert_eq!(result["result"], "Done.");
    assert_eq!(result["num_turns"], 2);
    assert_eq!(result["usage"]["output_tokens"], 2);
    assert_eq!(result["session_id"], body[0]["session_id"]);
}
