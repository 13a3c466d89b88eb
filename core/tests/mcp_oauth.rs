//! OAuth 2.1 (authorization code + PKCE) against a real OAuth-protected MCP server: the `mcp`
//! Python package's authorization server and resource server (`python_server.py --http PORT
//! --oauth`, installed by `tests/mcp-servers/setup.sh`), which approves every authorization
//! request at once. The "browser" is `curl` following the authorization URL's redirects to
//! robota's loopback listener, started by the session's authorization handler.
#![cfg(unix)]

mod session_common;

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use robota::mcp::{
    parse_mcp_servers, McpAuthorizationHandler, McpServerAction, McpServerOrigin, McpServerStatus,
};
use serde_json::{json, Value};
use session_common::*;

fn servers_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/mcp-servers");
    assert!(
        dir.join(".venv/bin/python").is_file(),
        "the MCP test servers are not installed: run tests/mcp-servers/setup.sh"
    );
    dir
}

/// The Python server on a free loopback port with `mode` (`--oauth`, `--evil-metadata URL`).
struct Server {
    port: u16,
    /// `http` or `sse`.
    transport: &'static str,
    _process: tokio::process::Child,
}

impl Server {
    async fn start(mode: &[&str]) -> Server {
        Server::start_over("http", mode).await
    }

    async fn start_over(transport: &'static str, mode: &[&str]) -> Server {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("free port");
        let port = listener.local_addr().expect("port").port();
        drop(listener);
        let dir = servers_dir();
        let process = tokio::process::Command::new(dir.join(".venv/bin/python"))
            .arg(dir.join("python_server.py"))
            .args([format!("--{transport}"), port.to_string()])
            .args(mode)
            .kill_on_drop(true)
            .stderr(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("python starts");
        let deadline = Instant::now() + Duration::from_secs(30);
        while tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_err()
        {
            assert!(Instant::now() < deadline, "the OAuth server did not start");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Server {
            port,
            transport,
            _process: process,
        }
    }

    fn url(&self) -> String {
        let path = if self.transport == "sse" {
            "sse"
        } else {
            "mcp"
        };
        format!("http://127.0.0.1:{}/{path}", self.port)
    }

    /// Calls one of the server's test controls.
    fn control(&self, path: &str) -> Value {
        let output = std::process::Command::new("curl")
            .args([
                "-sf",
                "-X",
                if path.contains("forget") {
                    "POST"
                } else {
                    "GET"
                },
            ])
            .arg(format!("http://127.0.0.1:{}/test/{path}", self.port))
            .output()
            .expect("curl runs");
        assert!(output.status.success(), "{path}: {output:?}");
        serde_json::from_slice(&output.stdout).expect("JSON answer")
    }

    fn authorizations(&self) -> u64 {
        self.control("authorizations")["authorizations"]
            .as_u64()
            .expect("a count")
    }
}

/// A "browser" that follows the authorization URL (the server approves at once and redirects
/// to robota's listener), counting how often it was opened.
fn browser(opened: &Arc<AtomicUsize>) -> McpAuthorizationHandler {
    let opened = Arc::clone(opened);
    McpAuthorizationHandler::new(move |server, url| {
        assert_eq!(server, "secure");
        opened.fetch_add(1, Ordering::SeqCst);
        // The handler must not block: the redirect needs the session's listener.
        let url = url.to_string();
        std::thread::spawn(move || {
            std::process::Command::new("curl")
                .args(["-sL", "--max-time", "20", "-o", "/dev/null", &url])
                .status()
                .expect("curl runs");
        });
    })
}

fn options_for(
    project: &Project,
    mock: &Mock,
    events: &Events,
    server: &Server,
    handler: Option<McpAuthorizationHandler>,
) -> robota::session::SessionOptions {
    let mut options = options(project, mock, events);
    let (entries, warnings) = parse_mcp_servers(
        &json!({"secure": {"type": server.transport, "url": server.url()}}),
        &McpServerOrigin::Host,
        &|_| None,
    );
    assert!(warnings.is_empty(), "{warnings:?}");
    options.mcp_servers = entries;
    options.mcp_options.startup_timeout = Duration::from_secs(20);
    options.mcp_authorization_handler = handler;
    options
}

fn token_files(project: &Project) -> Vec<PathBuf> {
    let folder = project.home.join(".robota/mcp-oauth");
    std::fs::read_dir(&folder)
        .map(|entries| entries.map(|e| e.expect("entry").path()).collect())
        .unwrap_or_default()
}

/// A session whose model calls the server's `add`; `before_run` runs once it is connected.
async fn add_through_the_model(
    project: &Project,
    server: &Server,
    handler: &Arc<AtomicUsize>,
    before_run: impl FnOnce(),
) {
    let mock = Mock::start(json!({"turns": [
        tool_turn("toolu_1", "mcp__secure__add", json!({"a": 40, "b": 2})),
        text_turn("done"),
    ]}))
    .await;
    let events = Events::default();
    let session = session(options_for(
        project,
        &mock,
        &events,
        server,
        Some(browser(handler)),
    ));
    assert!(session.wait_for_mcp_servers(None).await);
    let info = &session.mcp_servers()[0];
    assert_eq!(info.status, McpServerStatus::Connected, "{info:?}");
    before_run();
    let outcome = session.run("add").await.expect("run");
    assert_eq!(outcome.response, "done");
    assert_eq!(mock.result_for("toolu_1"), "42");
    session
        .shutdown(robota::hooks::SessionEndReason::Other)
        .await;
}

/// An OAuth server and a project whose first session went through the whole authorization.
async fn authorized_once() -> (Server, Project, Arc<AtomicUsize>) {
    authorized_over("http").await
}

/// [`authorized_once`] over `transport` (`http` or `sse`).
async fn authorized_over(transport: &'static str) -> (Server, Project, Arc<AtomicUsize>) {
    let server = Server::start_over(transport, &["--oauth"]).await;
    let project = Project::new();
    project.settings(
        ".claude/settings.json",
        json!({"permissions": {"allow": ["mcp__secure"]}}),
    );
    let opened = Arc::new(AtomicUsize::new(0));
    add_through_the_model(&project, &server, &opened, || ()).await;
    (server, project, opened)
}

#[tokio::test(flavor = "multi_thread")]
async fn first_session_authorizes_and_the_next_reuses_the_stored_tokens() {
    let (server, project, opened) = authorized_once().await;
    assert_eq!(opened.load(Ordering::SeqCst), 1, "one browser step");
    assert_eq!(server.authorizations(), 1);

    // The tokens are in the user's folder, owner-only, and nowhere in the project.
    let files = token_files(&project);
    assert_eq!(files.len(), 1, "{files:?}");
    let file = &files[0];
    assert!(file
        .file_name()
        .is_some_and(|name| name.to_string_lossy().starts_with("secure-")));
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(file)
        .expect("token file")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600, "token file mode {mode:o}");
    let stored: Value =
        serde_json::from_str(&std::fs::read_to_string(file).expect("readable")).expect("JSON");
    assert!(
        stored["token_response"]["access_token"].is_string(),
        "{stored}"
    );
    assert!(
        stored["token_response"]["refresh_token"].is_string(),
        "{stored}"
    );
    let access_token = stored["token_response"]["access_token"]
        .as_str()
        .expect("a token");
    let leaked = std::process::Command::new("grep")
        .args(["-rl", access_token])
        .arg(&project.root)
        .output()
        .expect("grep runs");
    assert!(
        leaked.stdout.is_empty(),
        "a token leaked into the project: {}",
        String::from_utf8_lossy(&leaked.stdout)
    );

    // The next session connects with the stored tokens: no browser.
    add_through_the_model(&project, &server, &opened, || ()).await;
    assert_eq!(opened.load(Ordering::SeqCst), 1, "no second browser step");
    assert_eq!(server.authorizations(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn expired_tokens_are_refreshed_and_revoked_ones_authorized_again() {
    let (server, project, opened) = authorized_once().await;
    let first = std::fs::read_to_string(&token_files(&project)[0]).expect("tokens");

    // Access tokens rejected: the refresh token gets new ones, without the browser.
    server.control("forget-access-tokens");
    add_through_the_model(&project, &server, &opened, || ()).await;
    assert_eq!(
        opened.load(Ordering::SeqCst),
        1,
        "refreshed, not re-authorized"
    );
    let refreshed = std::fs::read_to_string(&token_files(&project)[0]).expect("tokens");
    assert_ne!(first, refreshed, "the refreshed tokens are stored");

    // Access tokens rejected in the middle of a session: the call refreshes and goes on.
    add_through_the_model(&project, &server, &opened, || {
        server.control("forget-access-tokens");
    })
    .await;
    assert_eq!(opened.load(Ordering::SeqCst), 1);

    // Every token revoked: the next session goes through the browser again.
    server.control("forget-all-tokens");
    add_through_the_model(&project, &server, &opened, || ()).await;
    assert_eq!(opened.load(Ordering::SeqCst), 2, "authorized again");
    assert_eq!(server.authorizations(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn without_a_handler_or_a_completed_browser_step_the_server_needs_auth() {
    let server = Server::start(&["--oauth"]).await;
    let project = Project::new();
    let mock = Mock::start(json!({"turns": [text_turn("done")]})).await;
    let events = Events::default();
    let started = Instant::now();
    let unattended = session(options_for(&project, &mock, &events, &server, None));
    assert!(unattended.wait_for_mcp_servers(None).await);
    let McpServerStatus::NeedsAuth { reason } = &unattended.mcp_servers()[0].status else {
        panic!("{:?}", unattended.mcp_servers())
    };
    assert!(reason.contains("/mcp auth secure"), "{reason}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "no waiting without a handler"
    );
    drop(unattended);

    // A handler whose user never finishes: `needs_auth` once the start-up timeout runs out.
    let opened = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&opened);
    let mut options = options_for(
        &project,
        &mock,
        &events,
        &server,
        Some(McpAuthorizationHandler::new(move |_, url| {
            assert!(url.contains("code_challenge_method=S256"), "{url}");
            counter.fetch_add(1, Ordering::SeqCst);
        })),
    );
    options.mcp_options.startup_timeout = Duration::from_secs(3);
    let started = Instant::now();
    let session = session(options);
    assert!(session.wait_for_mcp_servers(None).await);
    let McpServerStatus::NeedsAuth { reason } = &session.mcp_servers()[0].status else {
        panic!("{:?}", session.mcp_servers())
    };
    assert!(reason.contains("not completed"), "{reason}");
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(opened.load(Ordering::SeqCst), 1);
    assert!(token_files(&project).is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_handler_that_fails_to_show_the_url_leaves_the_server_needs_auth_at_once() {
    let server = Server::start(&["--oauth"]).await;
    let project = Project::new();
    let mock = Mock::start(json!({"turns": [text_turn("done")]})).await;
    let events = Events::default();
    let handler = McpAuthorizationHandler::new_async(|_, _| {
        Box::pin(std::future::ready(Err("no browser here".to_string())))
    });
    let started = Instant::now();
    let session = session(options_for(
        &project,
        &mock,
        &events,
        &server,
        Some(handler),
    ));
    assert!(session.wait_for_mcp_servers(None).await);
    // Not the 20 s the browser step may take: the failure ends it.
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    let McpServerStatus::NeedsAuth { reason } = &session.mcp_servers()[0].status else {
        panic!("{:?}", session.mcp_servers())
    };
    assert!(reason.contains("no browser here"), "{reason}");
    assert!(reason.contains("/mcp auth secure"), "{reason}");
    assert!(token_files(&project).is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn forged_metadata_sending_credentials_elsewhere_is_refused() {
    for (token_endpoint, expected) in [
        ("https://attacker.example/token", "outside the issuer"),
        (
            "http://attacker.example/token",
            "neither https nor on this machine",
        ),
    ] {
        let server = Server::start(&["--evil-metadata", token_endpoint]).await;
        let project = Project::new();
        let mock = Mock::start(json!({"turns": [text_turn("done")]})).await;
        let events = Events::default();
        let opened = Arc::new(AtomicUsize::new(0));
        let session = session(options_for(
            &project,
            &mock,
            &events,
            &server,
            Some(browser(&opened)),
        ));
        assert!(session.wait_for_mcp_servers(None).await);
        let McpServerStatus::Failed { reason } = &session.mcp_servers()[0].status else {
            panic!("{:?}", session.mcp_servers())
        };
        assert!(reason.contains(expected), "{reason}");
        assert!(reason.contains(token_endpoint), "{reason}");
        assert_eq!(
            opened.load(Ordering::SeqCst),
            0,
            "no browser for forged metadata"
        );
        assert!(token_files(&project).is_empty());
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn mcp_logout_forgets_the_tokens_and_mcp_auth_authorizes_again() {
    let (server, project, opened) = authorized_once().await;
    let mock = Mock::start(json!({"turns": [text_turn("done")]})).await;
    let events = Events::default();
    let session = session(options_for(
        &project,
        &mock,
        &events,
        &server,
        Some(browser(&opened)),
    ));
    assert!(session.wait_for_mcp_servers(None).await);
    assert_eq!(session.mcp_servers()[0].status, McpServerStatus::Connected);

    let info = session
        .control_mcp_server(McpServerAction::Logout, "secure")
        .await
        .expect("logout");
    let McpServerStatus::NeedsAuth { reason } = &info.status else {
        panic!("{info:?}")
    };
    assert!(reason.contains("/mcp auth secure"), "{reason}");
    assert!(token_files(&project).is_empty(), "the tokens are gone");

    let info = session
        .control_mcp_server(McpServerAction::Authorize, "secure")
        .await
        .expect("auth");
    assert_eq!(info.status, McpServerStatus::Connected, "{info:?}");
    assert_eq!(opened.load(Ordering::SeqCst), 2, "a second browser step");
    assert_eq!(token_files(&project).len(), 1);
    assert_eq!(server.authorizations(), 2);
    session
        .shutdown(robota::hooks::SessionEndReason::Other)
        .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn legacy_sse_servers_are_authorized_and_reuse_their_tokens() {
    let (server, project, opened) = authorized_over("sse").await;
    assert_eq!(opened.load(Ordering::SeqCst), 1, "one browser step");
    assert_eq!(token_files(&project).len(), 1);
    add_through_the_model(&project, &server, &opened, || ()).await;
    assert_eq!(
        opened.load(Ordering::SeqCst),
        1,
        "the stored tokens are reused"
    );
    // A stored access token the server no longer accepts is refreshed, not re-authorized.
    server.control("forget-access-tokens");
    add_through_the_model(&project, &server, &opened, || ()).await;
    assert_eq!(
        opened.load(Ordering::SeqCst),
        1,
        "refreshed, not re-authorized"
    );
    assert_eq!(server.authorizations(), 1);
}

/// Without system CA certificates (a slim container), `rmcp`'s OAuth client cannot be built;
/// robota's falls back to the bundled roots and the whole authorization still works. The
/// certificate locations are the process's environment, so the check runs in a child process
/// of this test binary with them pointing at nothing.
#[tokio::test(flavor = "multi_thread")]
async fn without_system_ca_certificates_the_authorization_uses_the_bundled_roots() {
    const CHILD: &str = "ROBOTA_TEST_WITHOUT_SYSTEM_ROOTS";
    if std::env::var_os(CHILD).is_none() {
        let empty = tempfile::tempdir().expect("temp dir");
        let no_file = empty.path().join("none.pem");
        std::fs::write(&no_file, "").expect("empty bundle");
        let output = std::process::Command::new(std::env::current_exe().expect("test binary"))
            .args([
                "--exact",
                "without_system_ca_certificates_the_authorization_uses_the_bundled_roots",
                "--nocapture",
            ])
            .env(CHILD, "1")
            .env("SSL_CERT_FILE", &no_file)
            .env("SSL_CERT_DIR", empty.path())
            .output()
            .expect("the test binary runs");
        let printed = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success() && printed.contains("1 passed"),
            "{printed}\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        return;
    }
    // The child: the system's roots are really gone (a default client cannot be built; reqwest
    // 0.13 is linked without a crypto provider, so ring is installed first, as robota does) ...
    let _ = rustls::crypto::ring::default_provider().install_default();
    assert!(
        mcp_reqwest::Client::builder().build().is_err(),
        "SSL_CERT_FILE/SSL_CERT_DIR did not hide the system's CA certificates"
    );
    // ... and the authorization, the token and the tool call all work.
    let (server, project, opened) = authorized_once().await;
    assert_eq!(opened.load(Ordering::SeqCst), 1);
    assert_eq!(server.authorizations(), 1);
    assert_eq!(token_files(&project).len(), 1);
}
