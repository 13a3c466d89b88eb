//! The web monitor: a static page (HTML, JS, CSS embedded in the binary, no build step) that
//! lists sessions and follows one live through the `/v1` API with the token from the URL
//! fragment. These routes carry no data, so they need no token.

use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;

const INDEX_HTML: &str = include_str!("../monitor/index.html");

/// The monitor's routes.
pub fn routes<S: Clone + Send + Sync + 'static>() -> Router<S> {
    Router::new().route(
        "/",
        get(|| async {
            (
                [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
                INDEX_HTML,
            )
                .into_response()
        }),
    )
}
