//! End-to-end tests of `RemoteSession` against a real `robota serve` process (the binary of
//! `robota-cli`, built first with `cargo build -p robota-cli`) whose sessions talk to mock-llm on
//! loopback, in temporary project and home folders.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mock_llm::MockLlm;
use robota::framework::interactive::{InteractiveEventKind, PromptResult};
use robota::session::PermissionResponse;
use robota_remote::wire::CreateSessionRequest;
use robota_remote::{
    RemoteEndpoint, RemoteError, RemoteEventItem, RemoteSession, RemoteSubscription,
};
use serde_json::{json, Value};
use tempfile::TempDir;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

const TOKEN_VARIABLE: &str = "ROBOTA_REMOTE_TEST_TOKEN";
const EVENT_WAIT: Duration = Duration::from_secs(20);

/// The `robota` binary next to this test's target folder.
fn robota_binary() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let name = format!("robota{}", std::env::consts::EXE_SUFFIX);
    exe.ancestors()
        .skip(1)
        .map(|dir| dir.join(&name))
        .find(|candidate| candidate.is_file())
        .unwrap_or_else(|| {
            panic!(
                "no `{name}` binary above {}: build it first with `cargo build -p robota-cli` \
                 (same CARGO_TARGET_DIR as this test)",
                exe.display()
            )
        })
}

/// A `robota serve` process with one project root whose settings point at mock-llm.
struct Serve {
    child: Child,
    url: String,
    token: String,
    project: TempDir,
    _home: TempDir,
    stderr: Arc<Mutex<String>>,
}

impl Serve {
    async fn start(mock: &MockLlm) -> Serve {
        Serve::start_with(mock, &[]).await
    }

    /// Starts with `extra` flags after the test's own.
    async fn start_with(mock: &MockLlm, extra: &[&str]) -> Serve {
        let project = tempfile::tempdir().expect("temp project");
        let home = tempfile::tempdir().expect("temp home");
        let settings_dir = project.path().join(".robota");
        std::fs::create_dir_all(&settings_dir).expect("create .robota");
        let settings = json!({
            "currentProvider": "mock",
            "providers": {"mock": {
                "type": "anthropic", "model": "claude-sonnet-4-5", "apiKey": "test-key",
                "baseURL": mock.base_url(), "options": {"maxRetries": 0}
            }}
        });
        std::fs::write(settings_dir.join("settings.json"), settings.to_string())
            .expect("write settings");
        let token = "remote-test-token-0123456789".to_string();
        let mut child = Command::new(robota_binary())
            .args([
                "serve",
                "--port",
                "0",
                "--token-env",
                TOKEN_VARIABLE,
                "--root",
            ])
            .arg(project.path())
            .args(extra)
            .current_dir(project.path())
            .env(TOKEN_VARIABLE, &token)
            .env("HOME", home.path())
            .env("USERPROFILE", home.path())
            .env_remove("ANTHROPIC_API_KEY")
            .env_remove("ANTHROPIC_BASE_URL")
            .env_remove("OPENAI_API_KEY")
            .env_remove("OPENAI_BASE_URL")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn robota serve");
        let stderr_pipe = child.stderr.take().expect("stderr pipe");
        let stderr = Arc::new(Mutex::new(String::new()));
        let (url_sender, url_receiver) = std::sync::mpsc::channel();
        let collected = Arc::clone(&stderr);
        std::thread::spawn(move || {
            for line in BufReader::new(stderr_pipe).lines() {
                let Ok(line) = line else { break };
                if let Some(url) = line.split("listening on ").nth(1) {
                    let _ = url_sender.send(url.trim().to_string());
                }
                let mut all = collected.lock().unwrap_or_else(|e| e.into_inner());
                all.push_str(&line);
                all.push('\n');
            }
        });
        let url =
            tokio::task::spawn_blocking(move || url_receiver.recv_timeout(Duration::from_secs(60)))
                .await
                .expect("join")
                .unwrap_or_else(|_| {
                    panic!(
                        "robota serve printed no `listening on` line within 60 s; stderr:\n{}",
                        stderr.lock().unwrap_or_else(|e| e.into_inner())
                    )
                });
        Serve {
            child,
            url,
            token,
            project,
            _home: home,
            stderr,
        }
    }

    fn endpoint(&self) -> RemoteEndpoint {
        RemoteEndpoint::new(self.url.clone(), Some(self.token.clone()))
    }

    fn project(&self) -> &Path {
        self.project.path()
    }

    fn create_request(&self) -> CreateSessionRequest {
        CreateSessionRequest {
            cwd: Some(self.project().display().to_string()),
            ..CreateSessionRequest::default()
        }
    }

    fn addr(&self) -> SocketAddr {
        self.url
            .trim_start_matches("http://")
            .trim_end_matches('/')
            .parse()
            .unwrap_or_else(|e| panic!("`{}` is not http://IP:PORT: {e}", self.url))
    }

    fn stderr(&self) -> String {
        self.stderr
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A TCP proxy whose open connections the test can cut, to drop an event stream mid-way.
struct CutProxy {
    addr: SocketAddr,
    connections: Arc<Mutex<Vec<JoinHandle<()>>>>,
    accepted: Arc<AtomicUsize>,
    accept_task: JoinHandle<()>,
}

impl CutProxy {
    async fn start(upstream: SocketAddr) -> CutProxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind proxy");
        let addr = listener.local_addr().expect("proxy address");
        let connections: Arc<Mutex<Vec<JoinHandle<()>>>> = Arc::default();
        let accepted = Arc::new(AtomicUsize::new(0));
        let accept_task = tokio::spawn({
            let connections = Arc::clone(&connections);
            let accepted = Arc::clone(&accepted);
            async move {
                while let Ok((mut inbound, _)) = listener.accept().await {
                    accepted.fetch_add(1, Ordering::SeqCst);
                    let relay = tokio::spawn(async move {
                        if let Ok(mut outbound) = TcpStream::connect(upstream).await {
                            let _ =
                                tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                        }
                    });
                    connections.lock().unwrap().push(relay);
                }
            }
        });
        CutProxy {
            addr,
            connections,
            accepted,
            accept_task,
        }
    }

    /// Drops every open connection (both sides see the socket close).
    fn cut(&self) {
        for relay in self.connections.lock().unwrap().drain(..) {
            relay.abort();
        }
    }
}

impl Drop for CutProxy {
    fn drop(&mut self) {
        self.accept_task.abort();
        self.cut();
    }
}

async fn mock(turns: Value) -> MockLlm {
    MockLlm::start_json(json!({ "turns": turns }))
        .await
        .expect("start mock-llm")
}

async fn next_item(subscription: &RemoteSubscription, serve: &Serve) -> RemoteEventItem {
    match subscription.next_event(EVENT_WAIT).await {
        Some(item) => item,
        None => panic!(
            "no event within {EVENT_WAIT:?}; server stderr:\n{}",
            serve.stderr()
        ),
    }
}

/// Reads events until the one that ends a prompt; returns them all. Fails on anything but an
/// event.
async fn events_until_prompt_end(
    subscription: &RemoteSubscription,
    serve: &Serve,
) -> Vec<robota::framework::interactive::InteractiveEvent> {
    let mut events = Vec::new();
    loop {
        match next_item(subscription, serve).await {
            RemoteEventItem::Event(event) => {
                let ends = event.kind.ends_prompt();
                events.push(event);
                if ends {
                    return events;
                }
            }
            RemoteEventItem::Unrecognized { .. } => {}
            other => panic!("expected events, got {other:?}; events so far: {events:?}"),
        }
    }
}

fn assert_contiguous(events: &[robota::framework::interactive::InteractiveEvent], after: u64) {
    let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
    let expected: Vec<u64> = (after + 1..after + 1 + seqs.len() as u64).collect();
    assert_eq!(seqs, expected, "seqs are not contiguous after {after}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_with_a_tool_call_returns_its_result_and_streams_its_events() {
    let mock = mock(json!([
        {"tool_calls": [{"id": "t1", "name": "Read", "input": {"file_path": "notes.txt"}}]},
        {"text": ["All ", "read."], "chunk_delay_ms": 20}
    ]))
    .await;
    let serve = Serve::start(&mock).await;
    std::fs::write(serve.project().join("notes.txt"), "remote notes\n").expect("write notes");
    let session = RemoteSession::create(&serve.endpoint(), serve.create_request())
        .await
        .expect("create");
    let subscription = session.subscribe_pull().await.expect("subscribe");

    let result = session.submit("Read notes.txt").await.expect("submit");
    let PromptResult::Complete { report, .. } = &result else {
        panic!("expected complete, got {result:?}");
    };
    assert_eq!(report.response, "All read.");
    assert_eq!(report.tool_summaries.len(), 1);
    assert_eq!(report.tool_summaries[0].name, "Read");
    assert!(report.tool_summaries[0]
        .tool_result_data
        .as_deref()
        .unwrap_or_default()
        .contains("remote notes"));

    let events = events_until_prompt_end(&subscription, &serve).await;
    assert_contiguous(&events, subscription.subscribed_after());
    let types: Vec<&str> = events.iter().map(|e| e.kind.type_name()).collect();
    for wanted in ["tool_start", "tool_end", "text_delta", "complete"] {
        assert!(types.contains(&wanted), "no {wanted} in {types:?}");
    }
    let text: String = events
        .iter()
        .filter_map(|e| match &e.kind {
            InteractiveEventKind::TextDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    // The engine separates the rounds' texts with a blank line.
    assert_eq!(text.trim_start(), "All read.");
    // The model saw the file through the tool.
    assert!(mock.requests()[1].body["messages"]
        .to_string()
        .contains("remote notes"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_session_surface_works_over_http() {
    let mock = mock(json!([{"text": "hello"}])).await;
    let serve = Serve::start(&mock).await;
    let endpoint = serve.endpoint();
    let session = RemoteSession::create(&endpoint, serve.create_request())
        .await
        .expect("create");
    let subscription = session.subscribe_pull().await.expect("subscribe");
    assert!(matches!(
        session.submit("hi").await.expect("submit"),
        PromptResult::Complete { .. }
    ));

    // The same session, attached by id.
    let attached = RemoteSession::connect(&endpoint, session.id())
        .await
        .expect("connect");
    let history = attached.get_full_history().await.expect("history");
    assert!(history.len() >= 2, "history: {history:?}");
    let commands = attached.list_commands().await.expect("commands");
    assert!(commands.iter().any(|c| c.name == "rename"), "{commands:?}");
    let renamed = attached
        .execute_command("rename", "remote one")
        .await
        .expect("rename");
    assert!(renamed.success, "{renamed:?}");
    assert_eq!(
        session.get_name().await.expect("name").as_deref(),
        Some("remote one")
    );
    session
        .set_name(Some("second".into()))
        .await
        .expect("set name");
    assert_eq!(
        attached.get_name().await.expect("name").as_deref(),
        Some("second")
    );
    let _context = session.get_context_state().await.expect("context");
    assert!(session
        .pending_permissions()
        .await
        .expect("pending")
        .is_empty());
    assert!(!session.cancel_prompt(999).await.unwrap_or(false));

    let copy = session.fork(Some("copy".into())).await.expect("fork");
    assert_ne!(copy.id(), session.id());
    assert_eq!(
        copy.get_name().await.expect("name").as_deref(),
        Some("copy")
    );
    copy.close().await.expect("close copy");

    session.close().await.expect("close");
    // The stream ends with session_closed.
    loop {
        match next_item(&subscription, &serve).await {
            RemoteEventItem::SessionClosed => break,
            RemoteEventItem::Event(_) | RemoteEventItem::Unrecognized { .. } => {}
            other => panic!("expected session_closed, got {other:?}"),
        }
    }
    let err = session.info().await.expect_err("closed session");
    assert!(matches!(err, RemoteError::NotFound { .. }), "{err:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_resume_after_a_dropped_connection_without_loss() {
    let mock = mock(json!([
        {"text": {"repeat": "tok ", "count": 60}, "chunk_delay_ms": 25}
    ]))
    .await;
    let serve = Serve::start(&mock).await;
    let proxy = CutProxy::start(serve.addr()).await;
    let direct = RemoteSession::create(&serve.endpoint(), serve.create_request())
        .await
        .expect("create");
    let through_proxy = RemoteSession::connect(
        &RemoteEndpoint::new(format!("http://{}", proxy.addr), Some(serve.token.clone())),
        direct.id(),
    )
    .await
    .expect("connect through the proxy");
    let subscription = through_proxy.subscribe_pull().await.expect("subscribe");
    let prompt = direct.submit_tracked("count").await.expect("submit");

    let mut events = Vec::new();
    let mut cut = false;
    let mut connections_before_cut = 0;
    loop {
        match next_item(&subscription, &serve).await {
            RemoteEventItem::Event(event) => {
                let ends = event.kind.ends_prompt();
                events.push(event);
                if events.len() == 10 && !cut {
                    connections_before_cut = proxy.accepted.load(Ordering::SeqCst);
                    proxy.cut();
                    cut = true;
                }
                if ends {
                    break;
                }
            }
            RemoteEventItem::Unrecognized { .. } => {}
            other => panic!("expected events only, got {other:?}"),
        }
    }
    assert!(cut, "the prompt ended before the connection was cut");
    assert!(
        proxy.accepted.load(Ordering::SeqCst) > connections_before_cut,
        "the stream did not reconnect after the cut"
    );
    assert_contiguous(&events, subscription.subscribed_after());
    let text: String = events
        .iter()
        .filter_map(|e| match &e.kind {
            InteractiveEventKind::TextDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(text, "tok ".repeat(60));
    assert!(matches!(
        prompt.result().await.expect("result"),
        PromptResult::Complete { .. }
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_no_longer_buffered_are_reported_as_a_gap() {
    let mock = mock(json!([{"text": {"repeat": "x", "count": 20}}])).await;
    let serve = Serve::start_with(&mock, &["--event-buffer", "4"]).await;
    let session = RemoteSession::create(&serve.endpoint(), serve.create_request())
        .await
        .expect("create");
    assert!(matches!(
        session.submit("go").await.expect("submit"),
        PromptResult::Complete { .. }
    ));
    let last_seq = session.info().await.expect("info").last_seq;
    assert!(
        last_seq > 4,
        "too few events to overflow the buffer: {last_seq}"
    );

    // From the start: the server kept only the last 4.
    let subscription = session.subscribe_from(0);
    let RemoteEventItem::Gap(gap) = next_item(&subscription, &serve).await else {
        panic!("expected a gap first");
    };
    assert_eq!(gap.missed_after, 0);
    assert_eq!(gap.resumed_at, last_seq - 3);
    let mut seqs = Vec::new();
    while seqs.len() < 4 {
        match next_item(&subscription, &serve).await {
            RemoteEventItem::Event(event) => seqs.push(event.seq),
            RemoteEventItem::Unrecognized { seq, .. } => seqs.push(seq),
            other => panic!("expected the buffered events, got {other:?}"),
        }
    }
    assert_eq!(seqs, (gap.resumed_at..=last_seq).collect::<Vec<_>>());
    assert_eq!(subscription.last_seq(), last_seq);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_permission_request_is_answered_over_http() {
    let mock = mock(json!([
        {"tool_calls": [{"id": "w1", "name": "Write",
                         "input": {"file_path": "out.txt", "content": "written remotely"}}]},
        {"text": "Wrote it."}
    ]))
    .await;
    let serve = Serve::start(&mock).await;
    let session = RemoteSession::create(&serve.endpoint(), serve.create_request())
        .await
        .expect("create");
    let subscription = session.subscribe_pull().await.expect("subscribe");
    let prompt = session
        .submit_tracked("write out.txt")
        .await
        .expect("submit");

    let request_id = loop {
        match next_item(&subscription, &serve).await {
            RemoteEventItem::Event(event) => match event.kind {
                InteractiveEventKind::PermissionRequest {
                    request_id,
                    tool_name,
                    ..
                } => {
                    assert_eq!(tool_name, "Write");
                    break request_id;
                }
                other if other.ends_prompt() => {
                    panic!("the prompt ended without asking: {other:?}")
                }
                _ => {}
            },
            RemoteEventItem::Unrecognized { .. } => {}
            other => panic!("unexpected {other:?}"),
        }
    };
    let pending = session.pending_permissions().await.expect("pending");
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].request_id, request_id);
    let unknown = session
        .answer_permission("no-such-request", &PermissionResponse::AllowOnce)
        .await
        .expect_err("unknown request");
    assert!(
        matches!(unknown, RemoteError::NotFound { .. }),
        "{unknown:?}"
    );
    session
        .answer_permission(&request_id, &PermissionResponse::AllowOnce)
        .await
        .expect("answer");

    let result = prompt.result().await.expect("result");
    assert!(
        matches!(result, PromptResult::Complete { .. }),
        "{result:?}"
    );
    assert_eq!(
        std::fs::read_to_string(serve.project().join("out.txt")).expect("the file was written"),
        "written remotely"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_token_is_unauthorized_and_unknown_sessions_are_not_found() {
    let mock = mock(json!([])).await;
    let serve = Serve::start(&mock).await;
    let wrong = RemoteEndpoint::new(serve.url.clone(), Some("not-the-token".into()));
    let err = RemoteSession::create(&wrong, serve.create_request())
        .await
        .expect_err("wrong token");
    assert!(matches!(err, RemoteError::Unauthorized { .. }), "{err:?}");
    assert!(err.to_string().contains("token"), "{err}");
    let missing = RemoteEndpoint::new(serve.url.clone(), None);
    let err = RemoteSession::connect(&missing, "any")
        .await
        .expect_err("no token");
    assert!(matches!(err, RemoteError::Unauthorized { .. }), "{err:?}");

    let err = RemoteSession::connect(&serve.endpoint(), "no-such-session")
        .await
        .expect_err("unknown session");
    assert!(matches!(err, RemoteError::NotFound { .. }), "{err:?}");

    let outside = tempfile::tempdir().expect("temp dir");
    let err = RemoteSession::create(
        &serve.endpoint(),
        CreateSessionRequest {
            cwd: Some(outside.path().display().to_string()),
            ..CreateSessionRequest::default()
        },
    )
    .await
    .expect_err("cwd outside the roots");
    assert!(
        matches!(err, RemoteError::PathOutsideRoots { .. }),
        "{err:?}"
    );

    // Nothing listens there.
    let dead = RemoteEndpoint::new("http://127.0.0.1:9", Some("t".into()))
        .with_request_timeout(Duration::from_secs(5));
    let err = RemoteSession::connect(&dead, "any")
        .await
        .expect_err("no server");
    assert!(err.is_transient(), "{err:?}");
}
