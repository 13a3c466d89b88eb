//! `WebSearch`: web search through a [`SearchProvider`] port, with Brave Search as the built-in
//! provider and allowed/blocked domain filtering applied to every provider's results.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use reqwest::Url;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::budget;
use super::schema::{Field, Input, InputSchema, Kind};
use super::{Builtins, Shared};
use crate::tools::{Tool, ToolContext, ToolOutput};

/// One search request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SearchQuery {
    /// What to search for.
    pub query: String,
    /// How many results to ask for.
    pub count: usize,
    /// Only results from these domains (and their subdomains) are wanted; empty = any.
    pub allowed_domains: Vec<String>,
    /// Results from these domains (and their subdomains) are not wanted.
    pub blocked_domains: Vec<String>,
}

/// One search hit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SearchResult {
    /// Page title.
    pub title: String,
    /// Page URL.
    pub url: String,
    /// Short excerpt, plain text.
    pub snippet: String,
}

/// A failed search, with whether retrying can help.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct SearchError {
    /// What went wrong and what to do, for the model.
    pub message: String,
    /// True when the same search may succeed later (rate limit, server error, timeout).
    pub retryable: bool,
}

/// A web search backend. Domain filters in the query are hints a provider may use to improve
/// results; the tool filters the returned results itself either way.
#[async_trait]
pub trait SearchProvider: Send + Sync {
    /// Name shown with the results ("Brave Search").
    fn name(&self) -> &str;
    /// Runs one search; must return promptly when `cancel` fires.
    async fn search(
        &self,
        query: &SearchQuery,
        cancel: &CancellationToken,
    ) -> Result<Vec<SearchResult>, SearchError>;
}

/// Brave Search API (`GET /res/v1/web/search`, key in `X-Subscription-Token`).
pub struct BraveSearch {
    api_key: String,
    base_url: String,
    client: reqwest::Client,
    timeout: Duration,
}

impl std::fmt::Debug for BraveSearch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The key is a secret: never print it.
        f.debug_struct("BraveSearch")
            .field("base_url", &self.base_url)
            .finish_non_exhaustive()
    }
}

impl BraveSearch {
    /// The public endpoint.
    pub const DEFAULT_BASE_URL: &'static str = "https://api.search.brave.com/res/v1/web/search";

    /// A provider using `api_key` against the public endpoint, with a 15 s timeout.
    pub fn new(api_key: impl Into<String>) -> Self {
        BraveSearch {
            api_key: api_key.into(),
            base_url: Self::DEFAULT_BASE_URL.into(),
            client: reqwest::Client::new(),
            timeout: Duration::from_secs(15),
        }
    }

    /// The provider configured by `BRAVE_API_KEY` (and `BRAVE_SEARCH_BASE_URL` if set), or `None`
    /// when no key is set.
    pub fn from_env() -> Option<Self> {
        let key = std::env::var("BRAVE_API_KEY")
            .ok()
            .filter(|k| !k.trim().is_empty())?;
        let provider = BraveSearch::new(key.trim());
        Some(match std::env::var("BRAVE_SEARCH_BASE_URL") {
            Ok(url) if !url.trim().is_empty() => provider.with_base_url(url.trim()),
            _ => provider,
        })
    }

    /// Uses another endpoint (a proxy, or a local fake in tests).
    pub fn with_base_url(mut self, base_url: impl Into<String>) -> Self {
        self.base_url = base_url.into();
        self
    }

    /// Changes the request timeout.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }
}

#[async_trait]
impl SearchProvider for BraveSearch {
    fn name(&self) -> &str {
        "Brave Search"
    }

    async fn search(
        &self,
        query: &SearchQuery,
        cancel: &CancellationToken,
    ) -> Result<Vec<SearchResult>, SearchError> {
        // One allowed domain becomes a `site:` operator so Brave returns results from it; with
        // several, the tool's filter does the work.
        let q = match query.allowed_domains.as_slice() {
            [only] => format!("{} site:{only}", query.query),
            _ => query.query.clone(),
        };
        let count = query.count.clamp(1, 20).to_string();
        let request = self
            .client
            .get(&self.base_url)
            .query(&[("q", q.as_str()), ("count", count.as_str())])
            .header("Accept", "application/json")
            .header("X-Subscription-Token", &self.api_key)
            .timeout(self.timeout)
            .send();
        let response = tokio::select! {
            response = request => response,
            () = cancel.cancelled() => {
                return Err(SearchError { message: "The search was aborted.".into(), retryable: false })
            }
        };
        let response = response.map_err(|err| SearchError {
            message: if err.is_timeout() {
                format!(
                    "Brave Search did not answer within {} s; retrying later may help.",
                    self.timeout.as_secs()
                )
            } else {
                format!("Could not reach Brave Search: {err}; retrying later may help.")
            },
            retryable: true,
        })?;
        let status = response.status();
        if !status.is_success() {
            let (advice, retryable) = match status.as_u16() {
                401 | 403 => ("the API key (BRAVE_API_KEY) is missing, invalid or not allowed to search; retrying will not help", false),
                422 | 400 => ("Brave rejected the query; rephrase it", false),
                429 => ("the rate limit or quota was exceeded; retrying later may help", true),
                500..=599 => ("Brave Search had a server error; retrying later may help", true),
                _ => ("retrying will not help", false),
            };
            return Err(SearchError {
                message: format!("Brave Search answered HTTP {status}: {advice}."),
                retryable,
            });
        }
        let body: Value = response.json().await.map_err(|err| SearchError {
            message: format!(
                "Brave Search returned an unreadable response ({err}); retrying may help."
            ),
            retryable: true,
        })?;
        let results = body
            .pointer("/web/results")
            .and_then(Value::as_array)
            .map(|items| {
                items
                    .iter()
                    .filter_map(|item| {
                        let url = item.get("url")?.as_str()?.to_string();
                        let title = item.get("title").and_then(Value::as_str).unwrap_or(&url);
                        let snippet = item
                            .get("description")
                            .and_then(Value::as_str)
                            .unwrap_or("");
                        Some(SearchResult {
                            title: strip_tags(title),
                            url,
                            snippet: strip_tags(snippet),
                        })
                    })
                    .collect()
            })
            .unwrap_or_default();
        Ok(results)
    }
}

/// Removes the `<strong>` highlighting Brave puts in titles and snippets, and decodes entities.
fn strip_tags(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_tag = false;
    for c in text.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => in_tag = false,
            _ if !in_tag => out.push(c),
            _ => {}
        }
    }
    out.replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&#x27;", "'")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&nbsp;", " ")
        .replace("&amp;", "&")
}

const SCHEMA: InputSchema = InputSchema {
    tool: "WebSearch",
    fields: &[
        Field {
            name: "query",
            aliases: &[],
            kind: Kind::String,
            required: true,
            description: "The search query to use",
        },
        Field {
            name: "allowed_domains",
            aliases: &["allowedDomains"],
            kind: Kind::StringArray,
            required: false,
            description: "Only include search results from these domains",
        },
        Field {
            name: "blocked_domains",
            aliases: &["blockedDomains"],
            kind: Kind::StringArray,
            required: false,
            description: "Never include search results from these domains",
        },
        Field {
            name: "limit",
            aliases: &[],
            kind: Kind::Integer { min: 1 },
            required: false,
            description: "Maximum number of results (default 10, max 20)",
        },
    ],
};

const DESCRIPTION: &str = "Searches the web and returns result titles, URLs and snippets.\n\
\n\
- Use it for information beyond your training data: current events, recent releases, docs.\n\
- `allowed_domains` / `blocked_domains` restrict results to or away from sites (subdomains \
included), e.g. [\"docs.rs\"].\n\
- Fetch promising results with WebFetch to read them.";

/// The `WebSearch` tool.
pub struct WebSearchTool {
    provider: Option<Arc<dyn SearchProvider>>,
    shared: Arc<Shared>,
}

impl WebSearchTool {
    /// A WebSearch tool using the search provider of `builtins` (none: every call fails with a
    /// message saying how to configure one).
    pub fn new(builtins: &Builtins) -> Self {
        WebSearchTool {
            provider: builtins.shared.search.clone(),
            shared: builtins.shared.clone(),
        }
    }

    /// A WebSearch tool with an explicit provider (or none).
    pub fn with_provider(builtins: &Builtins, provider: Option<Arc<dyn SearchProvider>>) -> Self {
        WebSearchTool {
            provider,
            shared: builtins.shared.clone(),
        }
    }
}

#[async_trait]
impl Tool for WebSearchTool {
    fn name(&self) -> &str {
        "WebSearch"
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
        let query = input.string("query").trim().to_string();
        if query.chars().count() < 2 {
            return ToolOutput::error(
                "Invalid input for WebSearch: `query` must be at least 2 characters.",
            );
        }
        let Some(provider) = &self.provider else {
            return ToolOutput::error(
                "WebSearch is not configured: no search provider is available. Set the \
                 BRAVE_API_KEY environment variable (a Brave Search API key) or give the session \
                 a search provider. Until then, use WebFetch on known URLs.",
            );
        };
        let allowed: Vec<String> = input
            .strings("allowed_domains")
            .iter()
            .filter_map(|d| normalize_domain(d))
            .collect();
        let blocked: Vec<String> = input
            .strings("blocked_domains")
            .iter()
            .filter_map(|d| normalize_domain(d))
            .collect();
        let limit = input.int("limit").map(|l| l as usize).unwrap_or(10).min(20);
        let request = SearchQuery {
            query: query.clone(),
            // Ask for the maximum when filtering, so enough survive the filter.
            count: if allowed.is_empty() && blocked.is_empty() {
                limit
            } else {
                20
            },
            allowed_domains: allowed.clone(),
            blocked_domains: blocked.clone(),
        };
        let results = match provider.search(&request, &context.cancel).await {
            Ok(results) => results,
            Err(err) => {
                return ToolOutput {
                    content: format!("Web search failed: {}", err.message),
                    is_error: true,
                    response: json!({"error": err.message, "retryable": err.retryable}),
                }
            }
        };
        let received = results.len();
        let kept: Vec<SearchResult> = results
            .into_iter()
            .filter(|r| {
                let host = Url::parse(&r.url)
                    .ok()
                    .and_then(|u| u.host_str().map(str::to_ascii_lowercase))
                    .unwrap_or_default();
                (allowed.is_empty() || allowed.iter().any(|d| domain_matches(&host, d)))
                    && !blocked.iter().any(|d| domain_matches(&host, d))
            })
            .take(limit)
            .collect();
        let filtered = received - kept.len().min(received);
        let mut text = if kept.is_empty() {
            format!("No results for \"{query}\" ({}).", provider.name())
        } else {
            let mut text = format!(
                "Web search results for \"{query}\" ({}):\n",
                provider.name()
            );
            for (i, r) in kept.iter().enumerate() {
                text.push_str(&format!("\n{}. {}\n   {}\n", i + 1, r.title, r.url));
                if !r.snippet.is_empty() {
                    text.push_str(&format!("   {}\n", r.snippet));
                }
            }
            text
        };
        if filtered > 0 && !(allowed.is_empty() && blocked.is_empty()) {
            text.push_str(&format!(
                "\n[{filtered} result{} outside the domain filters not shown]",
                if filtered == 1 { "" } else { "s" }
            ));
        }
        let (text, _) = budget::fit_text(
            text.trim_end(),
            self.shared.limit.max_bytes,
            self.shared.workspace.session_dir(),
            &format!("websearch-{}", context.tool_use_id),
        );
        ToolOutput::with_response(
            text,
            json!({
                "query": query,
                "provider": provider.name(),
                "results": kept,
            }),
        )
    }
}

/// `"https://Docs.rs/foo"` → `"docs.rs"`; `"*.example.com"` → `"example.com"`.
fn normalize_domain(raw: &str) -> Option<String> {
    let raw = raw.trim().trim_start_matches("*.").trim_start_matches('.');
    if raw.is_empty() {
        return None;
    }
    let host = if raw.contains("://") {
        Url::parse(raw).ok()?.host_str()?.to_string()
    } else {
        raw.split(['/', ':']).next()?.to_string()
    };
    Some(host.to_ascii_lowercase())
}

/// True when `host` is `domain` or one of its subdomains.
fn domain_matches(host: &str, domain: &str) -> bool {
    host == domain
        || host
            .strip_suffix(domain)
            .is_some_and(|rest| rest.ends_with('.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn domains_match_with_subdomains_only() {
        assert!(domain_matches("docs.rs", "docs.rs"));
        assert!(domain_matches("www.docs.rs", "docs.rs"));
        assert!(!domain_matches("notdocs.rs", "docs.rs"));
        assert_eq!(
            normalize_domain("https://Docs.RS/x").as_deref(),
            Some("docs.rs")
        );
        assert_eq!(
            normalize_domain("*.example.com").as_deref(),
            Some("example.com")
        );
    }

    #[test]
    fn brave_highlighting_is_removed() {
        assert_eq!(strip_tags("<strong>Rust</strong> &amp; co"), "Rust & co");
    }
}
