//! `WebFetch`: downloads a page (reqwest over rustls) and returns it as readable Markdown (HTML
//! converted with `htmd`) or plain text, with failures classified so the model knows whether a
//! retry can help.
//!
//! Redirects are followed only within the same host: a cross-host redirect is reported instead,
//! because permission rules are written per domain (`WebFetch(domain:example.com)`) and silently
//! landing on another host would bypass them.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use reqwest::header::{HeaderMap, CONTENT_TYPE, LOCATION, RETRY_AFTER};
use reqwest::{StatusCode, Url};
use serde_json::{json, Value};

use super::budget;
use super::fsutil;
use super::schema::{Field, Input, InputSchema, Kind};
use super::{Builtins, Shared};
use crate::tools::{Tool, ToolContext, ToolOutput};

/// Network settings of WebFetch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebFetchConfig {
    /// Deadline for the whole fetch, redirects and body included. Default 30 s.
    pub timeout: Duration,
    /// Largest body accepted, in bytes; bigger responses are refused. Default 10 MiB.
    pub max_bytes: usize,
    /// Same-host redirects followed before giving up. Default 10.
    pub max_redirects: usize,
    /// `User-Agent` header.
    pub user_agent: String,
}

impl Default for WebFetchConfig {
    fn default() -> Self {
        WebFetchConfig {
            timeout: Duration::from_secs(30),
            max_bytes: 10 * 1024 * 1024,
            max_redirects: 10,
            user_agent: concat!("robota/", env!("CARGO_PKG_VERSION"), " (WebFetch)").into(),
        }
    }
}

const SCHEMA: InputSchema = InputSchema {
    tool: "WebFetch",
    fields: &[
        Field {
            name: "url",
            aliases: &[],
            kind: Kind::String,
            required: true,
            description: "The URL to fetch content from (http or https)",
        },
        Field {
            name: "prompt",
            aliases: &[],
            kind: Kind::String,
            required: false,
            description: "What you want to learn from the page. Recorded with the result; the \
                          page text itself is returned for you to read",
        },
    ],
};

const DESCRIPTION: &str = "Fetches a URL and returns its content as readable text: HTML pages \
are converted to Markdown (scripts and styles dropped), text and JSON are returned as they are.\n\
\n\
- Unlike Claude Code's WebFetch, no model runs inside this tool: `prompt` is accepted and noted, \
but you get the page text and must extract the answer yourself.\n\
- Redirects within the same host are followed; a redirect to another host is reported with its \
URL so you can fetch it explicitly.\n\
- Long pages are cut to their head and tail; the full text is saved to a file you can Read.\n\
- Errors say whether retrying can help (timeouts and 5xx may; 404 and DNS failures will not).\n\
- Binary content (images, PDFs, archives) is not supported.";

/// The `WebFetch` tool.
pub struct WebFetchTool {
    shared: Arc<Shared>,
}

impl WebFetchTool {
    /// A WebFetch tool using the network settings and output budget of `builtins`.
    pub fn new(builtins: &Builtins) -> Self {
        WebFetchTool {
            shared: builtins.shared.clone(),
        }
    }
}

/// A classified failure: what the model is told, and whether a retry can help.
struct Failure {
    message: String,
    retryable: bool,
    status: Option<u16>,
}

impl Failure {
    fn new(message: impl Into<String>, retryable: bool) -> Self {
        Failure {
            message: message.into(),
            retryable,
            status: None,
        }
    }

    fn into_output(self) -> ToolOutput {
        ToolOutput {
            response: json!({
                "error": self.message,
                "retryable": self.retryable,
                "status_code": self.status,
            }),
            content: self.message,
            is_error: true,
        }
    }
}

/// What came back.
enum Fetched {
    Page {
        url: Url,
        status: StatusCode,
        content_type: String,
        body: Vec<u8>,
    },
    OtherHost {
        from: Url,
        to: Url,
        status: StatusCode,
    },
}

#[async_trait]
impl Tool for WebFetchTool {
    fn name(&self) -> &str {
        "WebFetch"
    }

    fn description(&self) -> &str {
        DESCRIPTION
    }

    fn input_schema(&self) -> Value {
        SCHEMA.json_schema()
    }

    fn is_read_only(&self) -> bool {
        true
    }

    async fn execute(&self, input: Value, context: ToolContext) -> ToolOutput {
        let input = match SCHEMA.validate(input) {
            Ok(map) => Input(map),
            Err(message) => return ToolOutput::error(message),
        };
        let raw_url = input.string("url");
        let url = match Url::parse(raw_url.trim()) {
            Ok(url) if matches!(url.scheme(), "http" | "https") && url.host_str().is_some() => url,
            Ok(url) => {
                return ToolOutput::error(format!(
                    "Unsupported URL \"{raw_url}\": only http and https URLs with a host can be \
                     fetched (got scheme \"{}\").",
                    url.scheme()
                ))
            }
            Err(err) => {
                return ToolOutput::error(format!(
                    "Invalid URL \"{raw_url}\": {err}. Give a full URL such as \
                     https://example.com/page."
                ))
            }
        };
        let config = &self.shared.web_fetch;
        let fetched = tokio::select! {
            result = tokio::time::timeout(config.timeout, self.fetch(url.clone())) => match result {
                Ok(result) => result,
                Err(_) => Err(Failure::new(
                    format!(
                        "Timed out after {} s waiting for {url}. The server is slow or \
                         unreachable; retrying later may help, or try another source.",
                        config.timeout.as_secs_f64()
                    ),
                    true,
                )),
            },
            () = context.cancel.cancelled() => {
                return ToolOutput::error("WebFetch was aborted.");
            }
        };
        match fetched {
            Ok(Fetched::OtherHost { from, to, status }) => ToolOutput::with_response(
                format!(
                    "{from} redirected (HTTP {}) to a different host: {to}\nWebFetch does not \
                     follow redirects to other hosts. Call WebFetch again with that URL to \
                     fetch it.",
                    status.as_u16()
                ),
                json!({
                    "url": from.as_str(),
                    "redirect_url": to.as_str(),
                    "status_code": status.as_u16(),
                }),
            ),
            Ok(Fetched::Page {
                url,
                status,
                content_type,
                body,
            }) => {
                let prompt = input.str("prompt").map(str::to_string);
                let shared = self.shared.clone();
                let id = context.tool_use_id.clone();
                let rendered = tokio::task::spawn_blocking(move || {
                    render_page(&shared, &id, url, status, &content_type, &body, prompt)
                })
                .await;
                rendered.unwrap_or_else(|err| {
                    ToolOutput::error(format!("Converting the page failed internally: {err}"))
                })
            }
            Err(failure) => failure.into_output(),
        }
    }
}

impl WebFetchTool {
    async fn fetch(&self, start: Url) -> Result<Fetched, Failure> {
        let client = self
            .shared
            .http_client()
            .map_err(|message| Failure::new(message, false))?;
        let config = &self.shared.web_fetch;
        let mut url = start;
        let mut redirects = 0usize;
        loop {
            let response = client
                .get(url.clone())
                .header(
                    reqwest::header::ACCEPT,
                    "text/html,application/xhtml+xml,text/plain;q=0.9,application/json;q=0.9,*/*;q=0.5",
                )
                .send()
                .await
                .map_err(|err| classify_transport(&err, &url))?;
            let status = response.status();
            if status.is_redirection() {
                let Some(next) = location(response.headers(), &url) else {
                    return Err(Failure {
                        message: format!(
                            "HTTP {status} from {url} without a usable Location header; the \
                             server's redirect is broken, so retrying will not help."
                        ),
                        retryable: false,
                        status: Some(status.as_u16()),
                    });
                };
                if next.host_str() != url.host_str() {
                    return Ok(Fetched::OtherHost {
                        from: url,
                        to: next,
                        status,
                    });
                }
                redirects += 1;
                if redirects > config.max_redirects {
                    return Err(Failure::new(
                        format!(
                            "Too many redirects (more than {}) starting from {url}; the site \
                             redirects in a loop, so retrying will not help.",
                            config.max_redirects
                        ),
                        false,
                    ));
                }
                url = next;
                continue;
            }
            if !status.is_success() {
                return Err(classify_status(status, response.headers(), &url));
            }
            let content_type = response
                .headers()
                .get(CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_ascii_lowercase();
            let too_large = || {
                Failure::new(
                    format!(
                        "The response from {url} is larger than {} bytes, the most WebFetch \
                         accepts. Fetch a more specific page or a paginated endpoint; retrying \
                         the same URL will not help.",
                        config.max_bytes
                    ),
                    false,
                )
            };
            if response
                .content_length()
                .is_some_and(|len| len > config.max_bytes as u64)
            {
                return Err(too_large());
            }
            let mut response = response;
            let mut body = Vec::new();
            loop {
                match response.chunk().await {
                    Ok(Some(chunk)) => {
                        if body.len() + chunk.len() > config.max_bytes {
                            return Err(too_large());
                        }
                        body.extend_from_slice(&chunk);
                    }
                    Ok(None) => break,
                    Err(err) => return Err(classify_transport(&err, &url)),
                }
            }
            return Ok(Fetched::Page {
                url,
                status,
                content_type,
                body,
            });
        }
    }
}

fn location(headers: &HeaderMap, base: &Url) -> Option<Url> {
    let value = headers.get(LOCATION)?.to_str().ok()?;
    let next = base.join(value).ok()?;
    matches!(next.scheme(), "http" | "https").then_some(next)
}

fn classify_status(status: StatusCode, headers: &HeaderMap, url: &Url) -> Failure {
    let code = status.as_u16();
    let reason = status.canonical_reason().unwrap_or("");
    let (advice, retryable) = match code {
        401 | 403 => (
            "The page requires authentication or is forbidden; retrying will not help.".to_string(),
            false,
        ),
        404 | 410 => (
            "The page does not exist; retrying the same URL will not help — check the URL or \
             search for the right page."
                .to_string(),
            false,
        ),
        408 => (
            "The server timed out the request; retrying may help.".to_string(),
            true,
        ),
        429 => {
            let after = headers
                .get(RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .map(|v| format!(" (Retry-After: {v})"))
                .unwrap_or_default();
            (
                format!("The server is rate limiting requests{after}; retrying later may help."),
                true,
            )
        }
        500..=599 => (
            "The server failed; retrying later may help.".to_string(),
            true,
        ),
        _ => (
            "Retrying the same request will not help.".to_string(),
            false,
        ),
    };
    Failure {
        message: format!("HTTP {code} {reason} from {url}. {advice}"),
        retryable,
        status: Some(code),
    }
}

/// Turns a transport error into advice by walking its cause chain (reqwest → hyper → io).
fn classify_transport(err: &reqwest::Error, url: &Url) -> Failure {
    let host = url.host_str().unwrap_or("the host");
    let mut chain = String::new();
    let mut io_kind = None;
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(cause) = source {
        chain.push_str(&cause.to_string().to_ascii_lowercase());
        chain.push(' ');
        if let Some(io) = cause.downcast_ref::<std::io::Error>() {
            io_kind = Some(io.kind());
        }
        source = cause.source();
    }
    if err.is_timeout() {
        return Failure::new(
            format!("Timed out talking to {host}. The server is slow or unreachable; retrying later may help."),
            true,
        );
    }
    if chain.contains("dns error")
        || chain.contains("failed to lookup")
        || chain.contains("name or service not known")
    {
        return Failure::new(
            format!("Could not resolve the host name {host}. Check the URL for typos; retrying will not help."),
            false,
        );
    }
    if io_kind == Some(std::io::ErrorKind::ConnectionRefused)
        || chain.contains("connection refused")
    {
        return Failure::new(
            format!(
                "Connection refused by {host}:{}. Nothing is accepting connections there; \
                 retrying will not help unless the server is started.",
                url.port_or_known_default().unwrap_or(0)
            ),
            false,
        );
    }
    if chain.contains("certificate") || chain.contains("tls") || chain.contains("handshake") {
        return Failure::new(
            format!("TLS/certificate error talking to {host}: {err}. Retrying will not help."),
            false,
        );
    }
    if matches!(
        io_kind,
        Some(
            std::io::ErrorKind::ConnectionReset
                | std::io::ErrorKind::ConnectionAborted
                | std::io::ErrorKind::UnexpectedEof
        )
    ) || chain.contains("reset")
        || chain.contains("closed")
        || err.is_body()
    {
        return Failure::new(
            format!("The connection to {host} was interrupted ({err}); retrying may help."),
            true,
        );
    }
    Failure::new(
        format!("Network error fetching {url}: {err}. Check the URL; retrying may help if the network is unstable."),
        true,
    )
}

fn render_page(
    shared: &Shared,
    tool_use_id: &str,
    url: Url,
    status: StatusCode,
    content_type: &str,
    body: &[u8],
    prompt: Option<String>,
) -> ToolOutput {
    let is_html = content_type.contains("html");
    let is_text = content_type.starts_with("text/")
        || content_type.contains("json")
        || content_type.contains("xml")
        || content_type.contains("javascript")
        || content_type.contains("yaml")
        || content_type.contains("toml");
    let sniffed_text = content_type.is_empty()
        && !fsutil::looks_binary(&body[..body.len().min(fsutil::SNIFF_BYTES)]);
    if !(is_html || is_text || sniffed_text) {
        return Failure {
            message: format!(
                "{url} returned {} content ({} bytes), which WebFetch cannot turn into text. \
                 Only HTML and text content is supported.",
                if content_type.is_empty() {
                    "binary"
                } else {
                    content_type
                },
                body.len()
            ),
            retryable: false,
            status: Some(status.as_u16()),
        }
        .into_output();
    }
    let raw = String::from_utf8_lossy(body);
    let text = if is_html || (sniffed_text && looks_like_html(&raw)) {
        html_to_markdown(&raw)
    } else {
        raw.into_owned()
    };
    let mut header = format!(
        "URL: {url}\nStatus: {} · {} · {} bytes\n",
        status.as_u16(),
        if content_type.is_empty() {
            "unknown type"
        } else {
            content_type
        },
        body.len()
    );
    if let Some(prompt) = prompt.as_deref().filter(|p| !p.trim().is_empty()) {
        header.push_str(&format!(
            "Prompt (not applied — no model runs inside WebFetch; read the content below to \
             answer it): {prompt}\n"
        ));
    }
    header.push('\n');
    let full = format!("{header}{}", text.trim());
    let (content, spill) = budget::fit_text(
        &full,
        shared.limit.max_bytes,
        shared.workspace.session_dir(),
        &format!("webfetch-{tool_use_id}"),
    );
    ToolOutput::with_response(
        content,
        json!({
            "url": url.as_str(),
            "status_code": status.as_u16(),
            "content_type": content_type,
            "bytes": body.len(),
            "text_bytes": text.len(),
            "prompt": prompt,
            "output_file": spill,
        }),
    )
}

fn looks_like_html(text: &str) -> bool {
    let start = text.trim_start();
    let head: String = start
        .chars()
        .take(200)
        .collect::<String>()
        .to_ascii_lowercase();
    head.starts_with("<!doctype html") || head.starts_with("<html") || head.contains("<body")
}

/// HTML → Markdown without scripts, styles and other non-content elements.
fn html_to_markdown(html: &str) -> String {
    let converter = htmd::HtmlToMarkdown::builder()
        .skip_tags(vec![
            "script", "style", "noscript", "template", "svg", "canvas", "iframe", "head",
        ])
        .build();
    match converter.convert(html) {
        Ok(markdown) => collapse_blank_lines(&markdown),
        // html5ever accepts any input, so this is unexpected; fall back to the raw text.
        Err(_) => html.to_string(),
    }
}

fn collapse_blank_lines(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut blank_run = 0;
    for line in text.lines() {
        let line = line.trim_end();
        if line.is_empty() {
            blank_run += 1;
            if blank_run > 1 {
                continue;
            }
        } else {
            blank_run = 0;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_becomes_markdown_without_scripts() {
        let md = html_to_markdown(
            "<html><head><title>T</title><style>p{}</style></head><body><h1>Title</h1>\
             <script>alert(1)</script><p>Hello <a href=\"/x\">link</a> &amp; more</p></body></html>",
        );
        assert!(md.contains("# Title"), "{md}");
        assert!(md.contains("Hello [link](/x) & more"), "{md}");
        assert!(!md.contains("alert") && !md.contains("p{}"), "{md}");
    }
}
