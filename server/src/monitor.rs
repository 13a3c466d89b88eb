//! The web monitor: a static page (HTML, JS, CSS embedded in the binary, no build step) that
//! lists sessions and follows one live through the `/v1` API with the token from the URL
//! fragment. These routes carry no data, so they need no token.

use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

const INDEX_HTML: &str = include_str!("../monitor/index.html");
const MONITOR_JS: &str = include_str!("../monitor/monitor.js");
const MONITOR_CSS: &str = include_str!("../monitor/monitor.css");

/// The page loads nothing but its own files and talks only to this server: a script injected
/// through some data the page failed to escape could still not load code or send data elsewhere.
const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; \
     frame-ancestors 'none'";

/// The monitor's routes: `/`, `/monitor.js` and `/monitor.css`.
pub fn routes<S: Clone + Send + Sync + 'static>() -> Router<S> {
    Router::new()
        .route(
            "/",
            get(|| async { static_file("text/html; charset=utf-8", INDEX_HTML) }),
        )
        .route(
            "/monitor.js",
            get(|| async { static_file("text/javascript; charset=utf-8", MONITOR_JS) }),
        )
        .route(
            "/monitor.css",
            get(|| async { static_file("text/css; charset=utf-8", MONITOR_CSS) }),
        )
}

fn static_file(content_type: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, content_type),
            // A new server version must not run against an old cached script.
            (header::CACHE_CONTROL, "no-cache"),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            // No request from the page needs to say where it came from.
            (header::REFERRER_POLICY, "no-referrer"),
            (header::CONTENT_SECURITY_POLICY, CONTENT_SECURITY_POLICY),
        ],
        body,
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_file_is_served_with_its_type_and_the_locked_down_policy() {
        for (content_type, body) in [
            ("text/html; charset=utf-8", INDEX_HTML),
            ("text/javascript; charset=utf-8", MONITOR_JS),
            ("text/css; charset=utf-8", MONITOR_CSS),
        ] {
            let response = static_file(content_type, body);
            let headers = response.headers();
            assert_eq!(headers[header::CONTENT_TYPE], content_type);
            assert_eq!(headers[header::X_CONTENT_TYPE_OPTIONS], "nosniff");
            let policy = headers[header::CONTENT_SECURITY_POLICY].to_str().unwrap();
            assert!(policy.starts_with("default-src 'none';"), "{policy}");
            assert!(policy.contains("connect-src 'self';"), "{policy}");
        }
    }

    #[test]
    fn the_page_loads_only_its_own_files() {
        assert!(INDEX_HTML.contains(r#"<script src="/monitor.js" defer></script>"#));
        assert!(INDEX_HTML.contains(r#"<link rel="stylesheet" href="/monitor.css">"#));
        for text in [INDEX_HTML, MONITOR_JS, MONITOR_CSS] {
            assert!(!text.contains("http://") && !text.contains("https://"));
            assert!(!text.contains("innerHTML") && !text.contains("insertAdjacentHTML"));
        }
    }
}
