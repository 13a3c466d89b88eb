//! The `mock-llm` binary as other languages' tests use it: spawn, read the port line, talk HTTP,
//! and make sure it goes away when the parent closes its stdin.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use serde_json::{json, Value};

const BIN: &str = env!("CARGO_BIN_EXE_mock-llm");

fn write_script(name: &str, script: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("mock-llm-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::File::create(&path)
        .unwrap()
        .write_all(script.as_bytes())
        .unwrap();
    path
}

/// Reads the single startup line and returns (port, base_url).
fn port_line(child: &mut Child) -> (u16, String) {
    let stdout = child.stdout.take().unwrap();
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line).unwrap();
    let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"));
    let port = v["port"].as_u64().unwrap() as u16;
    let base = v["base_url"].as_str().unwrap().to_owned();
    assert_eq!(
        line,
        format!("{{\"port\": {port}, \"base_url\": \"{base}\"}}\n")
    );
    (port, base)
}

/// Waits for exit with a deadline, killing the child if it does not exit.
fn wait_exit(child: &mut Child, within: Duration) -> Option<std::process::ExitStatus> {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

#[tokio::test]
async fn serves_then_exits_when_stdin_closes() {
    let script = write_script(
        "ok.json",
        &json!({"turns": [{"text": ["Hel", "lo"]}]}).to_string(),
    );
    let mut child = Command::new(BIN)
        .arg("--script")
        .arg(&script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (port, base) = port_line(&mut child);
    assert_eq!(base, format!("http://127.0.0.1:{port}"));

    let (_, events) = anthropic_stream(&base).await;
    assert_eq!(anthropic_text(&events), "Hello");
    let recorded: Value = reqwest::get(format!("{base}/_mock/requests"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(recorded.as_array().unwrap().len(), 1);

    drop(child.stdin.take()); // EOF on the child's stdin
    let status = wait_exit(&mut child, Duration::from_secs(10)).expect("did not exit on stdin EOF");
    assert!(status.success(), "{status}");
}

#[tokio::test]
async fn stdin_from_dev_null_does_not_stop_it_by_default() {
    let mut child = Command::new(BIN)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let (_, base) = port_line(&mut child);
    // Still serving after it has certainly seen stdin's (immediate) EOF, had it watched it.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let health = reqwest::get(format!("{base}/_mock/health")).await;
    let alive = child.try_wait().unwrap().is_none();
    let _ = child.kill();
    let _ = child.wait();
    assert!(alive, "exited although stdin is not a pipe");
    assert_eq!(health.unwrap().status(), 200);
}

#[cfg(unix)]
#[tokio::test]
async fn exits_on_sigterm() {
    let mut child = Command::new(BIN)
        .args([
            "--no-exit-on-stdin-eof",
            "--port",
            "0",
            "--host",
            "127.0.0.1",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let (_, base) = port_line(&mut child);
    assert_eq!(
        reqwest::get(format!("{base}/_mock/health"))
            .await
            .unwrap()
            .status(),
        200
    );
    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = wait_exit(&mut child, Duration::from_secs(10)).expect("did not exit on SIGTERM");
    assert!(status.success(), "{status}");
}

#[test]
fn invalid_script_exits_2_naming_the_problem() {
    let script = write_script("bad.json", r#"{"turns": [{"text": "x", "tool_cals": []}]}"#);
    let out = Command::new(BIN)
        .arg("--script")
        .arg(&script)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty(), "no port line for a bad script");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("tool_cals"), "{stderr}");

    let out = Command::new(BIN)
        .args(["--script", "/nonexistent/x.json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/x.json"));

    let out = Command::new(BIN).arg("--frobnicate").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--frobnicate"));

    let out = Command::new(BIN)
        .args(["--port", "99999"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn help() {
    let out = Command::new(BIN).arg("--help").output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("--script") && text.contains("--exit-on-stdin-eof"));
}
