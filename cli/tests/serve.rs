//! End-to-end tests of `robota serve`: each starts the real binary on a loopback port in a
//! temporary project root, with mock-llm as the model, and drives it with plain HTTP, Server-Sent
//! Events and WebSocket clients: sessions, prompts with tool calls, event resume after a dropped
//! connection, permission answers over HTTP and WebSocket, auth failures, size limits, paths
//! outside the roots, 100 concurrent sessions, and graceful shutdown with no lost turn.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::{SinkExt, StreamExt};
use mock_llm::MockLlm;
use serde_json::{json, Value};
use tempfile::TempDir;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::Message;

const TOKEN: &str = "serve-test-token-0123456789abcdef";

/// A `robota serve` process over a temporary project root.
struct Served {
    root: TempDir,
    home: TempDir,
    child: Option<Child>,
    base: String,
    stderr: Arc<Mutex<String>>,
    http: reqwest::Client,
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

impl Served {
    /// Starts `robota serve` on a free port with `extra` flags, the project root set up for
    /// `mock`.
    fn start(mock: &MockLlm, extra: &[&str]) -> Served {
        let root = tempfile::tempdir().expect("temp root");
        let home = tempfile::tempdir().expect("temp home");
        write_settings(root.path(), mock);
        let mut served = Served {
            root,
            home,
            child: None,
            base: String::new(),
            stderr: Arc::new(Mutex::new(String::new())),
            http: reqwest::Client::new(),
        };
        served.spawn(extra);
        served
    }

    fn spawn(&mut self, extra: &[&str]) {
        let mut child = Command::new(env!("CARGO_BIN_EXE_robota"))
            .arg("serve")
            .args(["--port", "0", "--token-env", "SERVE_TEST_TOKEN", "--root"])
            .arg(self.root.path())
            .args(extra)
            .current_dir(self.root.path())
            .env("SERVE_TEST_TOKEN", TOKEN)
            .env("HOME", self.home.path())
            .env_remove("ANTHROPIC_API_KEY")
            .env_remove("ANTHROPIC_BASE_URL")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn robota serve");
        let stderr = child.stderr.take().expect("stderr");
        let (tx, rx) = std::sync::mpsc::channel();
        let log = Arc::clone(&self.stderr);
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(addr) = line.strip_prefix("robota serve: listening on ") {
                    let _ = tx.send(addr.to_string());
                }
                if let Ok(mut log) = log.lock() {
                    log.push_str(&line);
                    log.push('\n');
                }
            }
        });
        let addr = rx
            .recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|_| {
                let _ = child.kill();
                panic!("robota serve did not start: {}", self.stderr_text())
            });
        self.base = addr;
        self.child = Some(child);
    }

    fn stderr_text(&self) -> String {
        self.stderr.lock().map(|s| s.clone()).unwrap_or_default()
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    async fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> (u16, Value) {
        let mut request = self.http.request(method, self.url(path)).bearer_auth(TOKEN);
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.expect("request");
        let status = response.status().as_u16();
        let text = response.text().await.unwrap_or_default();
        (
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }

    async fn get(&self, path: &str) -> (u16, Value) {
        self.call(reqwest::Method::GET, path, None).await
    }

    async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        self.call(reqwest::Method::POST, path, Some(body)).await
    }

    /// Opens a session in the root and returns its id.
    async fn session(&self) -> String {
        let (status, info) = self.post("/v1/sessions", json!({})).await;
        assert_eq!(status, 201, "{info}");
        info["id"].as_str().expect("id").to_string()
    }

    /// Submits a prompt and returns its id (without waiting for it to end).
    async fn submit_prompt(&self, id: &str, text: &str) -> u64 {
        let (status, submitted) = self
            .post(&format!("/v1/sessions/{id}/prompts"), json!({"text": text}))
            .await;
        assert_eq!(status, 202, "{submitted}");
        submitted["prompt_id"].as_u64().expect("prompt id")
    }

    /// Submits a prompt and waits for its result.
    async fn run_prompt(&self, id: &str, text: &str) -> Value {
        let prompt = self.submit_prompt(id, text).await;
        self.wait_result(id, prompt).await
    }

    async fn wait_result(&self, id: &str, prompt: u64) -> Value {
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            let (status, state) = self
                .get(&format!("/v1/sessions/{id}/prompts/{prompt}?wait_ms=5000"))
                .await;
            assert_eq!(status, 200, "{state}");
            if state["done"] == json!(true) {
                return state["result"].clone();
            }
        }
        panic!("prompt {prompt} did not end: {}", self.stderr_text());
    }

    /// Opens the SSE stream of a session.
    async fn events(&self, id: &str, last_event_id: Option<u64>) -> SseReader {
        let mut request = self
            .http
            .get(self.url(&format!("/v1/sessions/{id}/events")))
            .bearer_auth(TOKEN);
        if let Some(seq) = last_event_id {
            request = request.header("Last-Event-ID", seq.to_string());
        }
        let response = request.send().await.expect("events");
        assert_eq!(response.status().as_u16(), 200);
        SseReader {
            stream: Box::pin(response.bytes_stream()),
            buffer: String::new(),
        }
    }

    fn signal(&self, signal: i32) {
        if let Some(child) = &self.child {
            // SAFETY: kill(2) on our own child's pid.
            unsafe {
                libc::kill(child.id() as i32, signal);
            }
        }
    }

    fn wait_exit(&mut self, within: Duration) -> Option<i32> {
        let child = self.child.as_mut()?;
        let deadline = Instant::now() + within;
        while Instant::now() < deadline {
            if let Ok(Some(status)) = child.try_wait() {
                self.child = None;
                return status.code();
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        None
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        if let Some(child) = &mut self.child {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// One SSE message.
#[derive(Debug, Clone)]
struct SseMessage {
    id: Option<u64>,
    event: String,
    data: Value,
}

struct SseReader {
    stream: std::pin::Pin<Box<dyn futures::Stream<Item = reqwest::Result<bytes::Bytes>> + Send>>,
    buffer: String,
}

impl SseReader {
    async fn next(&mut self, within: Duration) -> Option<SseMessage> {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                let mut message = SseMessage {
                    id: None,
                    event: "message".into(),
                    data: Value::Null,
                };
                let mut data = String::new();
                for line in block.lines() {
                    if let Some(v) = line.strip_prefix("id:") {
                        message.id = v.trim().parse().ok();
                    } else if let Some(v) = line.strip_prefix("event:") {
                        message.event = v.trim().to_string();
                    } else if let Some(v) = line.strip_prefix("data:") {
                        data.push_str(v.strip_prefix(' ').unwrap_or(v));
                    }
                }
                if data.is_empty() && message.id.is_none() {
                    continue; // a keep-alive comment
                }
                message.data = serde_json::from_str(&data).unwrap_or(Value::String(data));
                return Some(message);
            }
            let chunk = tokio::time::timeout_at(deadline, self.stream.next())
                .await
                .ok()??;
            self.buffer.push_str(&String::from_utf8_lossy(&chunk.ok()?));
        }
    }

    /// Reads until an event of type `kind`; returns every message read.
    async fn until(&mut self, kind: &str) -> Vec<SseMessage> {
        let mut seen = Vec::new();
        while let Some(message) = self.next(Duration::from_secs(30)).await {
            let done = message.event == kind;
            seen.push(message);
            if done {
                return seen;
            }
        }
        panic!(
            "no `{kind}` event; saw {:?}",
            seen.iter().map(|m| &m.event).collect::<Vec<_>>()
        );
    }
}

async fn mock(turns: Value) -> MockLlm {
    MockLlm::start_json(json!({"turns": turns}))
        .await
        .expect("start mock-llm")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_with_a_tool_call_streams_its_events_and_its_result() {
    let mock = mock(json!([
        {"text": ["Let me ", "look."], "tool_calls": [{"id": "g1", "name": "Glob", "input": {"pattern": "*.txt"}}]},
        {"text": ["Found ", "notes.txt."]}
    ]))
    .await;
    let served = Served::start(&mock, &[]);
    std::fs::write(served.root.path().join("notes.txt"), "hello").expect("write");
    let id = served.session().await;
    let mut events = served.events(&id, None).await;
    let result = served.run_prompt(&id, "what is here?").await;
    assert_eq!(result["status"], "complete", "{result}");
    assert_eq!(result["response"], "Found notes.txt.", "{result}");
    let seen = events.until("complete").await;
    let kinds: Vec<&str> = seen.iter().map(|m| m.event.as_str()).collect();
    assert!(kinds.contains(&"text_delta"), "{kinds:?}");
    let start = seen
        .iter()
        .find(|m| m.event == "tool_start")
        .expect("tool_start");
    assert_eq!(start.data["tool"]["name"], "Glob");
    let end = seen
        .iter()
        .find(|m| m.event == "tool_end")
        .expect("tool_end");
    assert!(end.data["tool"]["tool_result_data"]
        .as_str()
        .unwrap_or("")
        .contains("notes.txt"));
    // Every event carries its seq as the SSE id, increasing.
    let ids: Vec<u64> = seen.iter().filter_map(|m| m.id).collect();
    assert_eq!(ids.len(), seen.len());
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
    assert!(seen.iter().all(|m| m.data["session_id"] == json!(id)));

    // History, context, name and commands over HTTP.
    let (_, history) = served.get(&format!("/v1/sessions/{id}/history")).await;
    assert!(history["entries"].to_string().contains("Found notes.txt."));
    let (status, renamed) = served
        .call(
            reqwest::Method::PUT,
            &format!("/v1/sessions/{id}/name"),
            Some(json!({"name": "look around"})),
        )
        .await;
    assert_eq!(
        (status, renamed["name"].clone()),
        (200, json!("look around"))
    );
    let (_, list) = served.get("/v1/sessions").await;
    assert_eq!(list["sessions"][0]["name"], "look around");
    let (_, commands) = served.get(&format!("/v1/sessions/{id}/commands")).await;
    assert!(commands["commands"]
        .as_array()
        .is_some_and(|c| c.iter().any(|c| c["name"] == "rename")));
    let (status, context) = served.get(&format!("/v1/sessions/{id}/context")).await;
    assert_eq!(status, 200);
    assert!(context.get("used_tokens").is_some(), "{context}");
    let (status, openapi) = served.get("/v1/openapi.json").await;
    assert_eq!(status, 200);
    assert!(openapi["paths"]["/v1/sessions/{id}/prompts"]["post"].is_object());
    assert!(openapi["components"]["schemas"]["SubmitRequest"].is_object());
    assert!(!openapi.to_string().contains("#/$defs/"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reconnecting_client_resumes_after_its_last_event_and_is_told_of_a_gap() {
    let mock = mock(json!([
        {"text": ["one ", "two ", "three ", "four ", "five ", "six"]},
        {"text": ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j"]}
    ]))
    .await;
    let served = Served::start(&mock, &["--event-buffer", "8"]);
    let id = served.session().await;
    let mut first = served.events(&id, Some(0)).await;
    let result = served.run_prompt(&id, "count").await;
    assert_eq!(result["status"], "complete");
    // Read a few events, then drop the connection.
    let mut got = Vec::new();
    for _ in 0..3 {
        got.push(first.next(Duration::from_secs(10)).await.expect("event"));
    }
    drop(first);
    let last = got.last().and_then(|m| m.id).expect("id");
    let mut resumed = served.events(&id, Some(last)).await;
    let rest = resumed.until("complete").await;
    assert!(rest.iter().all(|m| m.id.is_some_and(|seq| seq > last)));
    got.extend(rest);
    let ids: Vec<u64> = got.iter().filter_map(|m| m.id).collect();
    assert_eq!(
        ids,
        (1..=ids.len() as u64).collect::<Vec<_>>(),
        "no event lost or repeated"
    );
    let text: String = got
        .iter()
        .filter(|m| m.event == "text_delta")
        .map(|m| m.data["text"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(text, "one two three four five six");

    // A second prompt pushes the first one's events out of the 8-event buffer: resuming
    // from the start is told what was missed.
    served.run_prompt(&id, "more").await;
    let mut late = served.events(&id, Some(0)).await;
    let gap = late.next(Duration::from_secs(10)).await.expect("gap");
    assert_eq!(gap.event, "gap", "{gap:?}");
    assert_eq!(gap.data["missed_after"], 0);
    let first_after = late.next(Duration::from_secs(10)).await.expect("event");
    assert_eq!(
        Some(gap.data["resumed_at"].as_u64().unwrap_or(0)),
        first_after.id
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn permission_requests_are_answered_over_http() {
    let mock = mock(json!([
        {"tool_calls": [{"id": "w1", "name": "Write", "input": {"file_path": "out.txt", "content": "written"}}]},
        {"text": "Saved."},
        {"tool_calls": [{"id": "w2", "name": "Write", "input": {"file_path": "no.txt", "content": "x"}}]},
        {"text": "Not saved."}
    ]))
    .await;
    let served = Served::start(&mock, &[]);
    let id = served.session().await;
    let mut events = served.events(&id, None).await;
    let prompt = served.submit_prompt(&id, "save it").await;
    let request = events
        .until("permission_request")
        .await
        .pop()
        .expect("request");
    let request_id = request.data["request_id"]
        .as_str()
        .expect("request id")
        .to_string();
    assert_eq!(request.data["tool_name"], "Write");
    let (_, pending) = served.get(&format!("/v1/sessions/{id}/permissions")).await;
    assert_eq!(pending["pending"][0]["request_id"], json!(request_id));
    // Writing the user's settings is outside the roots; the request stays pending.
    let (status, refused) = served
        .post(
            &format!("/v1/sessions/{id}/permissions/{request_id}"),
            json!({"type": "allow_always", "destination": "userSettings"}),
        )
        .await;
    assert_eq!(
        (status, refused["error"]["code"].clone()),
        (403, json!("path_outside_roots"))
    );
    // Nor through an "allow with this input" that saves its rules there.
    let (status, refused) = served
        .post(
            &format!("/v1/sessions/{id}/permissions/{request_id}"),
            json!({"type": "allow_with_input", "input": {"file_path": "out.txt", "content": "x"},
                   "rules": ["Write"], "destination": "userSettings"}),
        )
        .await;
    assert_eq!(
        (status, refused["error"]["code"].clone()),
        (403, json!("path_outside_roots"))
    );
    let (status, _) = served
        .post(
            &format!("/v1/sessions/{id}/permissions/{request_id}"),
            json!({"type": "allow_once"}),
        )
        .await;
    assert_eq!(status, 200);
    let result = served.wait_result(&id, prompt).await;
    assert_eq!(result["response"], "Saved.");
    assert_eq!(
        std::fs::read_to_string(served.root.path().join("out.txt")).unwrap_or_default(),
        "written"
    );
    // Answering twice: not found.
    let (status, _) = served
        .post(
            &format!("/v1/sessions/{id}/permissions/{request_id}"),
            json!({"type": "allow_once"}),
        )
        .await;
    assert_eq!(status, 404);

    let prompt = served.submit_prompt(&id, "save another").await;
    let request = events
        .until("permission_request")
        .await
        .pop()
        .expect("request");
    let request_id = request.data["request_id"]
        .as_str()
        .expect("request id")
        .to_string();
    let (status, _) = served
        .post(
            &format!("/v1/sessions/{id}/permissions/{request_id}"),
            json!({"type": "deny", "message": "not now"}),
        )
        .await;
    assert_eq!(status, 200);
    let result = served.wait_result(&id, prompt).await;
    assert_eq!(result["response"], "Not saved.");
    assert!(!served.root.path().join("no.txt").exists());
    assert!(mock.requests()[3].body.to_string().contains("not now"));
}

/// A request nobody answers gets `--permission-default` after `--permission-timeout`: deny
/// (the default; the model is told why) or allow once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unanswered_permission_requests_get_the_configured_default_after_the_timeout() {
    for (default, extra) in [
        ("deny", &["--permission-timeout", "1"][..]),
        (
            "allow",
            &["--permission-timeout", "1", "--permission-default", "allow"][..],
        ),
    ] {
        let mock = mock(json!([
            {"tool_calls": [{"id": "w1", "name": "Write", "input": {"file_path": "late.txt", "content": "unattended"}}]},
            {"text": "Done."}
        ]))
        .await;
        let served = Served::start(&mock, extra);
        let id = served.session().await;
        let mut events = served.events(&id, None).await;
        let prompt = served.submit_prompt(&id, "save it").await;
        let asked = events.until("permission_request").await;
        assert!(!asked.is_empty(), "{default}: no permission request");
        let asked_at = Instant::now();
        // Nobody answers: the prompt still ends, once the timeout has passed.
        let result = served.wait_result(&id, prompt).await;
        assert!(
            asked_at.elapsed() >= Duration::from_millis(900),
            "{default}: answered before the timeout"
        );
        assert_eq!(result["response"], "Done.", "{default}: {result}");
        let (_, pending) = served.get(&format!("/v1/sessions/{id}/permissions")).await;
        assert_eq!(pending["pending"], json!([]), "{default}");
        let written = served.root.path().join("late.txt");
        let tool_result = mock.requests()[1].body.to_string();
        if default == "deny" {
            assert!(!written.exists(), "denied, yet the file was written");
            assert!(
                tool_result.contains("nobody answered the permission request in time"),
                "the model is not told why: {tool_result}"
            );
        } else {
            assert_eq!(
                std::fs::read_to_string(&written).unwrap_or_default(),
                "unattended"
            );
        }
    }
}

async fn ws_connect(
    served: &Served,
    id: &str,
    role: &str,
) -> tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>> {
    let url = format!(
        "{}/v1/sessions/{id}/ws?role={role}",
        served.base.replacen("http", "ws", 1)
    );
    let mut request = url.into_client_request().expect("request");
    request.headers_mut().insert(
        "Sec-WebSocket-Protocol",
        format!("robota.v1, robota.bearer.{TOKEN}")
            .parse()
            .expect("header"),
    );
    let (socket, response) = tokio_tungstenite::connect_async(request)
        .await
        .expect("ws connect");
    assert_eq!(
        response
            .headers()
            .get("sec-websocket-protocol")
            .and_then(|v| v.to_str().ok()),
        Some("robota.v1")
    );
    socket
}

async fn ws_next(
    socket: &mut tokio_tungstenite::WebSocketStream<
        tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>,
    >,
) -> Value {
    loop {
        let message = tokio::time::timeout(Duration::from_secs(30), socket.next())
            .await
            .expect("a message in time")
            .expect("open socket")
            .expect("a message");
        if let Message::Text(text) = message {
            return serde_json::from_str(&text).expect("json");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn websocket_clients_control_observe_and_answer_permissions() {
    let mock = mock(json!([
        {"tool_calls": [{"id": "w1", "name": "Write", "input": {"file_path": "ws.txt", "content": "from ws"}}]},
        {"text": "Done over ws."}
    ]))
    .await;
    let served = Served::start(&mock, &[]);
    let id = served.session().await;
    let mut controller = ws_connect(&served, &id, "controller").await;
    let hello = ws_next(&mut controller).await;
    assert_eq!(
        (hello["kind"].clone(), hello["role"].clone()),
        (json!("hello"), json!("controller"))
    );
    let mut observer = ws_connect(&served, &id, "controller").await;
    let hello = ws_next(&mut observer).await;
    assert_eq!(
        hello["role"], "observer",
        "control is taken: the second client observes"
    );

    observer
        .send(Message::Text(
            json!({"id": 1, "op": "submit", "text": "nope"})
                .to_string()
                .into(),
        ))
        .await
        .expect("send");
    let refused = ws_next(&mut observer).await;
    assert_eq!(
        (refused["ok"].clone(), refused["error"]["code"].clone()),
        (json!(false), json!("forbidden"))
    );

    controller
        .send(Message::Text(
            json!({"id": 7, "op": "submit", "text": "write it"})
                .to_string()
                .into(),
        ))
        .await
        .expect("send");
    let mut prompt_id = None;
    let mut request_id = None;
    while request_id.is_none() || prompt_id.is_none() {
        let message = ws_next(&mut controller).await;
        if message["kind"] == "response" && message["id"] == 7 {
            prompt_id = message["result"]["prompt_id"].as_u64();
        }
        if message["kind"] == "event" && message["event"]["type"] == "permission_request" {
            request_id = message["event"]["request_id"].as_str().map(str::to_string);
        }
    }
    controller
        .send(Message::Text(
            json!({"id": 8, "op": "answer_permission", "request_id": request_id, "response": {"type": "allow_once"}})
                .to_string()
                .into(),
        ))
        .await
        .expect("send");
    let mut completed = false;
    while !completed {
        let message = ws_next(&mut controller).await;
        completed = message["kind"] == "event" && message["event"]["type"] == "complete";
    }
    // The observer saw the same events.
    let mut observed = Vec::new();
    loop {
        let message = ws_next(&mut observer).await;
        if message["kind"] == "event" {
            let kind = message["event"]["type"].as_str().unwrap_or("").to_string();
            let done = kind == "complete";
            observed.push(kind);
            if done {
                break;
            }
        }
    }
    assert!(
        observed.contains(&"permission_request".to_string()),
        "{observed:?}"
    );
    assert!(observed.contains(&"tool_end".to_string()), "{observed:?}");
    let prompt_id = prompt_id.expect("prompt id");
    controller
        .send(Message::Text(
            json!({"id": 9, "op": "prompt_result", "prompt_id": prompt_id})
                .to_string()
                .into(),
        ))
        .await
        .expect("send");
    loop {
        let message = ws_next(&mut controller).await;
        if message["kind"] == "response" && message["id"] == 9 {
            assert_eq!(message["result"]["response"], "Done over ws.", "{message}");
            break;
        }
    }
    assert_eq!(
        std::fs::read_to_string(served.root.path().join("ws.txt")).unwrap_or_default(),
        "from ws"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_token_nothing_is_served_and_nothing_leaks() {
    let mock = mock(json!([{"text": "hi"}])).await;
    let served = Served::start(&mock, &[]);
    let id = served.session().await;
    let client = reqwest::Client::new();
    for (token, path) in [
        (None, "/v1/sessions".to_string()),
        (
            Some("wrong-token-wrong-token-wrong"),
            "/v1/sessions".to_string(),
        ),
        (None, format!("/v1/sessions/{id}/events")),
        (Some("Bearer"), format!("/v1/sessions/{id}/history")),
        (None, "/v1/openapi.json".to_string()),
    ] {
        let mut request = client.get(served.url(&path));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        let response = request.send().await.expect("request");
        assert_eq!(response.status().as_u16(), 401, "{path}");
        assert_eq!(
            response
                .headers()
                .get("www-authenticate")
                .and_then(|v| v.to_str().ok()),
            Some("Bearer")
        );
        let body = response.text().await.unwrap_or_default();
        assert!(!body.contains(&id), "{body}");
        let body: Value = serde_json::from_str(&body).expect("json");
        assert_eq!(body["error"]["code"], "unauthorized");
    }
    // A WebSocket without the token is refused before the upgrade.
    let url = format!(
        "{}/v1/sessions/{id}/ws",
        served.base.replacen("http", "ws", 1)
    );
    assert!(tokio_tungstenite::connect_async(url).await.is_err());
    // Health needs no token; CORS is closed by default.
    let response = client
        .get(served.url("/v1/health"))
        .header("Origin", "https://evil.example")
        .send()
        .await
        .expect("health");
    assert_eq!(response.status().as_u16(), 200);
    assert!(response
        .headers()
        .get("access-control-allow-origin")
        .is_none());
    let preflight = client
        .request(reqwest::Method::OPTIONS, served.url("/v1/sessions"))
        .header("Origin", "https://evil.example")
        .header("Access-Control-Request-Method", "POST")
        .send()
        .await
        .expect("preflight");
    assert!(preflight
        .headers()
        .get("access-control-allow-origin")
        .is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_requests_and_folders_outside_the_roots_are_refused() {
    let mock = mock(json!([{"text": "hi"}])).await;
    let served = Served::start(&mock, &["--max-request-bytes", "4096"]);
    let id = served.session().await;
    let big = "x".repeat(10_000);
    let (status, body) = served
        .post(&format!("/v1/sessions/{id}/prompts"), json!({"text": big}))
        .await;
    assert_eq!(
        (status, body["error"]["code"].clone()),
        (413, json!("payload_too_large"))
    );
    let (status, body) = served
        .post(&format!("/v1/sessions/{id}/prompts"), json!({"text": ""}))
        .await;
    assert_eq!(
        (status, body["error"]["code"].clone()),
        (400, json!("invalid_request"))
    );
    let (status, body) = served
        .post(
            &format!("/v1/sessions/{id}/prompts"),
            json!({"txt": "typo"}),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("txt"),
        "{body}"
    );

    let outside = tempfile::tempdir().expect("outside");
    std::os::unix::fs::symlink(outside.path(), served.root.path().join("link")).expect("symlink");
    for cwd in [
        outside.path().display().to_string(),
        "../".into(),
        "link".into(),
        "/".into(),
    ] {
        let (status, body) = served.post("/v1/sessions", json!({"cwd": cwd})).await;
        assert_eq!(
            (status, body["error"]["code"].clone()),
            (403, json!("path_outside_roots")),
            "{cwd}"
        );
        let (status, _) = served
            .get(&format!(
                "/v1/saved-sessions?cwd={}",
                cwd.replace('/', "%2F")
            ))
            .await;
        assert_eq!(status, 403, "{cwd}");
    }
    // A project folder inside the root, with settings of its own.
    std::fs::create_dir(served.root.path().join("sub")).expect("sub");
    write_settings(&served.root.path().join("sub"), &mock);
    let (status, info) = served.post("/v1/sessions", json!({"cwd": "sub"})).await;
    assert_eq!(status, 201, "{info}");
    assert!(info["cwd"].as_str().unwrap_or("").ends_with("sub"));
    let (status, _) = served.get("/v1/sessions/not-a-session").await;
    assert_eq!(status, 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_sessions_run_prompts_concurrently() {
    let mock = MockLlm::start_json(
        json!({"repeat": true, "record": false, "turns": [{"text": ["Hello ", "there."]}]}),
    )
    .await
    .expect("mock");
    let served = Arc::new(Served::start(&mock, &[]));
    let mut tasks = Vec::new();
    for n in 0..100 {
        let served = Arc::clone(&served);
        tasks.push(tokio::spawn(async move {
            let id = served.session().await;
            let result = served.run_prompt(&id, &format!("hello {n}")).await;
            (id, result)
        }));
    }
    let mut ids = std::collections::HashSet::new();
    for task in tasks {
        let (id, result) = task.await.expect("task");
        assert_eq!(result["status"], "complete", "{result}");
        assert_eq!(result["response"], "Hello there.");
        ids.insert(id);
    }
    assert_eq!(ids.len(), 100);
    let (_, list) = served.get("/v1/sessions").await;
    assert_eq!(list["sessions"].as_array().map(Vec::len), Some(100));
    // Closing one saves it and stops hosting it.
    let first = ids.iter().next().cloned().expect("id");
    let (status, _) = served
        .call(
            reqwest::Method::DELETE,
            &format!("/v1/sessions/{first}"),
            None,
        )
        .await;
    assert_eq!(status, 200);
    let (status, _) = served.get(&format!("/v1/sessions/{first}")).await;
    assert_eq!(status, 404);
    let (_, saved) = served.get("/v1/saved-sessions").await;
    assert!(saved["sessions"]
        .as_array()
        .is_some_and(|s| s.iter().any(|s| s["id"] == json!(first))));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_lets_the_running_turn_finish_and_saves_it() {
    let mock = mock(json!([
        {"text": ["slow ", "answer ", "that ", "finishes"], "chunk_delay_ms": 300},
        {"text": "resumed fine"}
    ]))
    .await;
    let mut served = Served::start(&mock, &[]);
    let id = served.session().await;
    let mut events = served.events(&id, None).await;
    let (_, submitted) = served
        .post(
            &format!("/v1/sessions/{id}/prompts"),
            json!({"text": "take your time"}),
        )
        .await;
    assert!(submitted["prompt_id"].is_u64());
    events.until("text_delta").await;
    served.signal(libc::SIGTERM);
    // New work is refused while the turn finishes.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let (status, body) = served.post("/v1/sessions", json!({})).await;
    assert_eq!(
        (status, body["error"]["code"].clone()),
        (503, json!("shutting_down"))
    );
    let rest = events.until("complete").await;
    assert_eq!(
        rest.last().map(|m| m.data["response"].clone()),
        Some(json!("slow answer that finishes"))
    );
    let closed = events
        .next(Duration::from_secs(10))
        .await
        .expect("session_closed");
    assert_eq!(closed.event, "session_closed");
    assert_eq!(
        served.wait_exit(Duration::from_secs(20)),
        Some(0),
        "{}",
        served.stderr_text()
    );

    // A new server resumes the saved session with the finished turn in it.
    served.spawn(&[]);
    let (status, info) = served.post("/v1/sessions", json!({"resume": id})).await;
    assert_eq!(status, 201, "{info}");
    let (_, history) = served.get(&format!("/v1/sessions/{id}/history")).await;
    assert!(history["entries"]
        .to_string()
        .contains("slow answer that finishes"));
    let result = served.run_prompt(&id, "still there?").await;
    assert_eq!(result["response"], "resumed fine");
    // Resuming it twice is refused while it is hosted.
    let (status, body) = served.post("/v1/sessions", json!({"resume": id})).await;
    assert_eq!(
        (status, body["error"]["code"].clone()),
        (409, json!("session_locked"))
    );
    // Errors do not tell the network where the server keeps its files.
    let (status, unknown) = served
        .post("/v1/sessions", json!({"resume": "no-such-saved-session"}))
        .await;
    assert_eq!(status, 404, "{unknown}");
    let root = served.root.path().display().to_string();
    for body in [&body, &unknown] {
        assert!(
            !body.to_string().contains(&root),
            "an error names a server path: {body}"
        );
    }
}
