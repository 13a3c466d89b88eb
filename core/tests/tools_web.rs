//! WebFetch against a local HTTP server (HTML, redirects, 404/500/429, oversized and slow
//! responses, refused connections) and WebSearch against a local fake of the Brave Search API.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use robota::tools::builtins::{
    BraveSearch, BuiltinToolsConfig, Builtins, ReadTool, SearchProvider, WebFetchConfig,
    WebFetchTool, WebSearchTool,
};
use robota::tools::{Tool, ToolContext, ToolOutput};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// What the fake server sends for one request: after `delay`, the raw bytes.
struct Reply {
    delay: Duration,
    bytes: Vec<u8>,
}

fn reply(status: &str, headers: &[(&str, &str)], body: impl AsRef<[u8]>) -> Reply {
    let body = body.as_ref();
    let mut bytes = format!(
        "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    )
    .into_bytes();
    for (k, v) in headers {
        bytes.extend_from_slice(format!("{k}: {v}\r\n").as_bytes());
    }
    bytes.extend_from_slice(b"\r\n");
    bytes.extend_from_slice(body);
    Reply {
        delay: Duration::ZERO,
        bytes,
    }
}

type Handler = Arc<dyn Fn(&str, &str) -> Reply + Send + Sync>;

/// A one-connection-per-request HTTP/1.1 server on 127.0.0.1; returns its port. The handler gets
/// the request target and the whole request head.
async fn serve(handler: Handler) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            let handler = handler.clone();
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut buf = [0u8; 4096];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match socket.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let head = String::from_utf8_lossy(&head).into_owned();
                let target = head.split_whitespace().nth(1).unwrap_or("/").to_string();
                let reply = handler(&target, &head);
                tokio::time::sleep(reply.delay).await;
                let _ = socket.write_all(&reply.bytes).await;
                let _ = socket.shutdown().await;
            });
        }
    });
    port
}

const PAGE: &str = "<!doctype html><html><head><title>Robota docs</title>\
<style>body { color: red }</style><script>var tracking = 1;</script></head>\
<body><nav><a href=\"/\">Home</a></nav><h1>Getting started</h1>\
<p>Install with <code>cargo add robota</code> &amp; run it.</p>\
<ul><li>fast</li><li>embeddable</li></ul></body></html>";

fn site() -> Handler {
    Arc::new(|target, _head| match target {
        "/page.html" => reply(
            "200 OK",
            &[("Content-Type", "text/html; charset=utf-8")],
            PAGE,
        ),
        "/text" => reply("200 OK", &[("Content-Type", "text/plain")], "plain body\n"),
        "/json" => reply(
            "200 OK",
            &[("Content-Type", "application/json")],
            "{\"ok\":true}",
        ),
        "/image" => reply(
            "200 OK",
            &[("Content-Type", "image/png")],
            b"\x89PNG\r\n\x1a\n\0\0",
        ),
        "/redirect" => reply("302 Found", &[("Location", "/hop")], ""),
        "/hop" => reply("301 Moved Permanently", &[("Location", "/page.html")], ""),
        "/loop" => reply("302 Found", &[("Location", "/loop")], ""),
        "/missing" => reply(
            "404 Not Found",
            &[("Content-Type", "text/html")],
            "<h1>nope</h1>",
        ),
        "/error" => reply("500 Internal Server Error", &[], "boom"),
        "/busy" => reply("429 Too Many Requests", &[("Retry-After", "7")], ""),
        "/huge" => reply(
            "200 OK",
            &[("Content-Type", "text/plain")],
            "x".repeat(300_000),
        ),
        "/huge-chunked" => {
            // No Content-Length: the size cap must trip while streaming.
            let mut bytes =
                b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n"
                    .to_vec();
            bytes.extend(std::iter::repeat_n(b'y', 300_000));
            Reply {
                delay: Duration::ZERO,
                bytes,
            }
        }
        "/slow" => Reply {
            delay: Duration::from_secs(5),
            ..reply("200 OK", &[("Content-Type", "text/plain")], "late")
        },
        "/long.html" => {
            let body: String = (0..1500)
                .map(|i| format!("<p>Paragraph number {i} of the long page.</p>"))
                .collect();
            reply(
                "200 OK",
                &[("Content-Type", "text/html")],
                format!("<html><body>{body}</body></html>"),
            )
        }
        _ => reply("404 Not Found", &[], ""),
    })
}

struct Env {
    _dir: tempfile::TempDir,
    builtins: Builtins,
    cwd: std::path::PathBuf,
}

fn env(search: Option<Arc<dyn SearchProvider>>) -> Env {
    let dir = tempfile::tempdir().unwrap();
    let builtins = Builtins::new(BuiltinToolsConfig {
        session_dir: Some(dir.path().join("session")),
        web_fetch: WebFetchConfig {
            timeout: Duration::from_millis(800),
            max_bytes: 100_000,
            ..WebFetchConfig::default()
        },
        search_provider: search,
        ..BuiltinToolsConfig::default()
    });
    Env {
        cwd: dir.path().to_path_buf(),
        _dir: dir,
        builtins,
    }
}

impl Env {
    fn context(&self) -> ToolContext {
        ToolContext {
            tool_use_id: "toolu_web".into(),
            cwd: self.cwd.clone(),
            cancel: CancellationToken::new(),
        }
    }

    async fn fetch(&self, input: Value) -> ToolOutput {
        WebFetchTool::new(&self.builtins)
            .execute(input, self.context())
            .await
    }
}

// ---------------------------------------------------------------- WebFetch

#[tokio::test]
async fn fetches_html_as_markdown_and_notes_the_prompt() {
    let port = serve(site()).await;
    let env = env(None);
    let url = format!("http://127.0.0.1:{port}/page.html");
    let out = env
        .fetch(json!({"url": url, "prompt": "How do I install it?"}))
        .await;
    assert!(!out.is_error, "{}", out.content);
    assert!(
        out.content
            .starts_with(&format!("URL: {url}\nStatus: 200 · text/html")),
        "{}",
        out.content
    );
    assert!(
        out.content.contains("Prompt (not applied"),
        "{}",
        out.content
    );
    assert!(out.content.contains("How do I install it?"));
    assert!(out.content.contains("# Getting started"), "{}", out.content);
    assert!(
        out.content
            .contains("Install with `cargo add robota` & run it."),
        "{}",
        out.content
    );
    assert!(out.content.contains("fast") && out.content.contains("embeddable"));
    assert!(!out.content.contains("tracking") && !out.content.contains("color: red"));
    assert_eq!(out.response["status_code"], 200);

    let out = env
        .fetch(json!({"url": format!("http://127.0.0.1:{port}/text")}))
        .await;
    assert!(out.content.ends_with("\n\nplain body"), "{}", out.content);
    let out = env
        .fetch(json!({"url": format!("http://127.0.0.1:{port}/json")}))
        .await;
    assert!(out.content.ends_with("{\"ok\":true}"), "{}", out.content);
    let out = env
        .fetch(json!({"url": format!("http://127.0.0.1:{port}/image")}))
        .await;
    assert!(out.is_error);
    assert!(out.content.contains("image/png"), "{}", out.content);
}

#[tokio::test]
async fn follows_same_host_redirects_and_reports_cross_host_ones() {
    let port = serve(site()).await;
    let env = env(None);
    let out = env
        .fetch(json!({"url": format!("http://127.0.0.1:{port}/redirect")}))
        .await;
    assert!(!out.is_error, "{}", out.content);
    assert!(out
        .content
        .starts_with(&format!("URL: http://127.0.0.1:{port}/page.html\n")));
    assert!(out.content.contains("# Getting started"));

    let out = env
        .fetch(json!({"url": format!("http://127.0.0.1:{port}/loop")}))
        .await;
    assert!(out.is_error);
    assert!(
        out.content.contains("Too many redirects"),
        "{}",
        out.content
    );
    assert_eq!(out.response["retryable"], false);

    let other = Arc::new(move |target: &str, _: &str| {
        assert_eq!(target, "/away");
        reply(
            "301 Moved Permanently",
            &[("Location", &format!("http://localhost:{port}/page.html"))],
            "",
        )
    });
    let away = serve(other).await;
    let out = env
        .fetch(json!({"url": format!("http://127.0.0.1:{away}/away")}))
        .await;
    assert!(!out.is_error, "{}", out.content);
    assert!(
        out.content
            .contains("redirected (HTTP 301) to a different host"),
        "{}",
        out.content
    );
    assert_eq!(
        out.response["redirect_url"],
        format!("http://localhost:{port}/page.html")
    );
}

#[tokio::test]
async fn http_errors_say_whether_retrying_helps() {
    let port = serve(site()).await;
    let env = env(None);
    let out = env
        .fetch(json!({"url": format!("http://127.0.0.1:{port}/missing")}))
        .await;
    assert!(out.is_error);
    assert!(
        out.content.starts_with("HTTP 404 Not Found"),
        "{}",
        out.content
    );
    assert!(out.content.contains("will not help"));
    assert_eq!(out.response["retryable"], false);
    assert_eq!(out.response["status_code"], 404);

    let out = env
        .fetch(json!({"url": format!("http://127.0.0.1:{port}/error")}))
        .await;
    assert!(
        out.content.starts_with("HTTP 500 Internal Server Error"),
        "{}",
        out.content
    );
    assert!(out.content.contains("retrying later may help"));
    assert_eq!(out.response["retryable"], true);

    let out = env
        .fetch(json!({"url": format!("http://127.0.0.1:{port}/busy")}))
        .await;
    assert!(out.content.contains("Retry-After: 7"), "{}", out.content);
    assert_eq!(out.response["retryable"], true);
}

#[tokio::test]
async fn oversized_bodies_are_refused_with_or_without_content_length() {
    let port = serve(site()).await;
    let env = env(None);
    for path in ["/huge", "/huge-chunked"] {
        let out = env
            .fetch(json!({"url": format!("http://127.0.0.1:{port}{path}")}))
            .await;
        assert!(out.is_error, "{path}");
        assert!(
            out.content.contains("larger than 100000 bytes"),
            "{path}: {}",
            out.content
        );
        assert_eq!(out.response["retryable"], false);
    }
}

#[tokio::test]
async fn slow_servers_time_out_and_refused_connections_are_classified() {
    let port = serve(site()).await;
    let env = env(None);
    let started = std::time::Instant::now();
    let out = env
        .fetch(json!({"url": format!("http://127.0.0.1:{port}/slow")}))
        .await;
    assert!(started.elapsed() < Duration::from_secs(4));
    assert!(out.is_error);
    assert!(
        out.content.starts_with("Timed out after 0.8 s"),
        "{}",
        out.content
    );
    assert_eq!(out.response["retryable"], true);

    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let out = env
        .fetch(json!({"url": format!("http://127.0.0.1:{closed}/")}))
        .await;
    assert!(
        out.content.starts_with("Connection refused"),
        "{}",
        out.content
    );
    assert_eq!(out.response["retryable"], false);

    let out = env.fetch(json!({"url": "not a url"})).await;
    assert!(out.content.starts_with("Invalid URL"), "{}", out.content);
    let out = env.fetch(json!({"url": "file:///etc/passwd"})).await;
    assert!(
        out.content.starts_with("Unsupported URL"),
        "{}",
        out.content
    );
}

#[tokio::test]
async fn abort_stops_a_fetch() {
    let port = serve(site()).await;
    let env = env(None);
    let ctx = env.context();
    let cancel = ctx.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        cancel.cancel();
    });
    let out = WebFetchTool::new(&env.builtins)
        .execute(json!({"url": format!("http://127.0.0.1:{port}/slow")}), ctx)
        .await;
    assert!(out.content.contains("aborted"), "{}", out.content);
}

#[tokio::test]
async fn long_pages_are_cut_and_spilled() {
    let port = serve(site()).await;
    let env = env(None);
    let out = env
        .fetch(json!({"url": format!("http://127.0.0.1:{port}/long.html")}))
        .await;
    assert!(!out.is_error);
    assert!(out.content.len() < 31_000);
    assert!(out.content.contains("Paragraph number 0 of"));
    assert!(out
        .content
        .ends_with("Paragraph number 1499 of the long page."));
    let spill = out.response["output_file"].as_str().expect("spilled");
    let read = ReadTool::new(&env.builtins)
        .execute(
            json!({"file_path": spill, "offset": 1, "limit": 3}),
            env.context(),
        )
        .await;
    assert!(
        read.content.contains("URL: http://127.0.0.1"),
        "{}",
        read.content
    );
}

// ---------------------------------------------------------------- WebSearch

fn brave_fake(requests: Arc<Mutex<Vec<String>>>) -> Handler {
    Arc::new(move |target, head| {
        requests.lock().unwrap().push(target.to_string());
        if !head.contains("X-Subscription-Token: test-key")
            && !head.contains("x-subscription-token: test-key")
        {
            return reply("401 Unauthorized", &[], "{}");
        }
        if !target.starts_with("/res/v1/web/search?") {
            return reply("404 Not Found", &[], "");
        }
        if target.contains("q=overload") {
            return reply("503 Service Unavailable", &[], "");
        }
        let body = json!({
            "type": "search",
            "web": {"results": [
                {"title": "<strong>Rust</strong> docs", "url": "https://docs.rs/robota", "description": "API &amp; guides"},
                {"title": "Blog", "url": "https://blog.example.com/rust", "description": "A <strong>post</strong>"},
                {"title": "Spam", "url": "https://spam.test/x", "description": "buy"},
                {"title": "Sub", "url": "https://www.docs.rs/other", "description": ""}
            ]}
        });
        reply(
            "200 OK",
            &[("Content-Type", "application/json")],
            body.to_string(),
        )
    })
}

#[tokio::test]
async fn web_search_uses_brave_and_filters_domains() {
    let requests = Arc::new(Mutex::new(Vec::new()));
    let port = serve(brave_fake(requests.clone())).await;
    let brave = BraveSearch::new("test-key")
        .with_base_url(format!("http://127.0.0.1:{port}/res/v1/web/search"));
    let env = env(Some(Arc::new(brave)));
    let tool = WebSearchTool::new(&env.builtins);
    assert!(tool.is_read_only());

    let out = tool
        .execute(json!({"query": "rust agents"}), env.context())
        .await;
    assert!(!out.is_error, "{}", out.content);
    assert!(out
        .content
        .starts_with("Web search results for \"rust agents\" (Brave Search):"));
    assert!(
        out.content
            .contains("1. Rust docs\n   https://docs.rs/robota\n   API & guides"),
        "{}",
        out.content
    );
    assert_eq!(out.response["results"].as_array().unwrap().len(), 4);
    assert!(requests.lock().unwrap()[0].contains("q=rust+agents"));
    assert!(requests.lock().unwrap()[0].contains("count=10"));

    let out = tool
        .execute(
            json!({"query": "rust", "allowed_domains": ["docs.rs"]}),
            env.context(),
        )
        .await;
    let urls: Vec<&str> = out.response["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["url"].as_str().unwrap())
        .collect();
    assert_eq!(
        urls,
        ["https://docs.rs/robota", "https://www.docs.rs/other"]
    );
    assert!(
        out.content
            .contains("[2 results outside the domain filters not shown]"),
        "{}",
        out.content
    );
    assert!(
        requests.lock().unwrap()[1].contains("site%3Adocs.rs"),
        "{:?}",
        requests.lock().unwrap()
    );

    let out = tool
        .execute(
            json!({"query": "rust", "blockedDomains": ["spam.test", "https://blog.example.com"]}),
            env.context(),
        )
        .await;
    let urls: Vec<&str> = out.response["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["url"].as_str().unwrap())
        .collect();
    assert_eq!(
        urls,
        ["https://docs.rs/robota", "https://www.docs.rs/other"]
    );

    let out = tool
        .execute(json!({"query": "overload"}), env.context())
        .await;
    assert!(out.is_error);
    assert!(out.content.contains("HTTP 503"), "{}", out.content);
    assert_eq!(out.response["retryable"], true);
}

#[tokio::test]
async fn web_search_reports_a_bad_key_and_a_missing_provider() {
    let port = serve(brave_fake(Arc::new(Mutex::new(Vec::new())))).await;
    let brave = BraveSearch::new("wrong-key")
        .with_base_url(format!("http://127.0.0.1:{port}/res/v1/web/search"));
    let env = env(Some(Arc::new(brave)));
    let out = WebSearchTool::new(&env.builtins)
        .execute(json!({"query": "rust"}), env.context())
        .await;
    assert!(out.content.contains("HTTP 401"), "{}", out.content);
    assert!(out.content.contains("BRAVE_API_KEY"), "{}", out.content);
    assert_eq!(out.response["retryable"], false);

    let out = WebSearchTool::with_provider(&env.builtins, None)
        .execute(json!({"query": "rust"}), env.context())
        .await;
    assert!(out.is_error);
    assert!(
        out.content.starts_with("WebSearch is not configured"),
        "{}",
        out.content
    );
    assert!(out.content.contains("BRAVE_API_KEY"));

    let out = WebSearchTool::new(&env.builtins)
        .execute(
            json!({"query": "r", "allowed_domains": "docs.rs"}),
            env.context(),
        )
        .await;
    assert!(
        out.content
            .contains("`allowed_domains` must be an array of strings"),
        "{}",
        out.content
    );
}

#[tokio::test]
async fn default_set_has_the_claude_code_tools_with_their_names() {
    let env = env(None);
    let mut names: Vec<String> = env
        .builtins
        .tools()
        .iter()
        .map(|t| t.name().to_string())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "Bash",
            "BashOutput",
            "Edit",
            "Glob",
            "Grep",
            "KillShell",
            "MultiEdit",
            "NotebookEdit",
            "Read",
            "TodoWrite",
            "WebFetch",
            "WebSearch",
            "Write"
        ]
    );
    let read_only: Vec<String> = env
        .builtins
        .tools()
        .iter()
        .filter(|t| t.is_read_only())
        .map(|t| t.name().to_string())
        .collect();
    assert_eq!(read_only.len(), 6, "{read_only:?}");
    let mut registry = robota::tools::ToolRegistry::new();
    env.builtins.register(&mut registry);
    assert_eq!(registry.len(), 13);
    for def in registry.definitions() {
        assert_eq!(def.input_schema["type"], "object", "{}", def.name);
        assert!(!def.description.is_empty());
    }
}
