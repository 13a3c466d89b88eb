//! The HTTP clients of remote MCP servers: the streamable HTTP transport's (`rmcp` speaks reqwest
//! 0.13) and the legacy SSE transport's (the workspace's reqwest 0.12), built alike.
//!
//! - **Redirects**: only same-origin 307/308 redirects are followed (they keep the method and the
//!   JSON-RPC body); any other redirect is returned as the response, so the configured headers (an
//!   API key) never go to another host.
//! - **Roots**: the system's CA certificates when it has them; Mozilla's bundled roots when it has
//!   none (slim containers), where `rmcp`'s default client would panic.

/// Redirects one request may follow.
pub(super) const MAX_REDIRECTS: usize = 10;

/// The same-origin redirect policy of the given reqwest crate.
macro_rules! same_origin_redirects {
    ($reqwest:ident) => {
        $reqwest::redirect::Policy::custom(|attempt| {
            let keeps_body = matches!(
                attempt.status(),
                $reqwest::StatusCode::TEMPORARY_REDIRECT | $reqwest::StatusCode::PERMANENT_REDIRECT
            );
            let same_origin = attempt
                .previous()
                .first()
                .is_some_and(|first| first.origin() == attempt.url().origin());
            if !keeps_body || !same_origin {
                attempt.stop()
            } else if attempt.previous().len() > MAX_REDIRECTS {
                attempt.error(format!("more than {MAX_REDIRECTS} redirects"))
            } else {
                attempt.follow()
            }
        })
    };
}

/// The client of a streamable HTTP server.
pub(crate) fn streamable_http_client() -> Result<mcp_reqwest::Client, String> {
    crate::tls::ensure_crypto_provider();
    // No idle pooling: rmcp's own default, against delayed-ACK stalls on reused connections.
    let builder = || {
        mcp_reqwest::Client::builder()
            .pool_max_idle_per_host(0)
            .redirect(same_origin_redirects!(mcp_reqwest))
    };
    builder().build().or_else(|system_roots| {
        builder()
            .tls_certs_only(bundled_roots())
            .build()
            .map_err(|e| format!("cannot create the HTTP client ({system_roots}; {e})"))
    })
}

/// Mozilla's root certificates bundled with robota, for machines without system roots.
pub(super) fn bundled_roots() -> impl Iterator<Item = mcp_reqwest::Certificate> {
    webpki_root_certs::TLS_SERVER_ROOT_CERTS
        .iter()
        .filter_map(|der| mcp_reqwest::Certificate::from_der(der).ok())
}

/// The client of a legacy SSE server (the workspace's reqwest bundles its roots).
pub(crate) fn sse_http_client(
    connect_timeout: std::time::Duration,
) -> Result<reqwest::Client, String> {
    reqwest::Client::builder()
        .connect_timeout(connect_timeout)
        .redirect(same_origin_redirects!(reqwest))
        .build()
        .map_err(|e| format!("cannot create the HTTP client ({e})"))
}
