//! The HTTP plumbing of the remote client: [`RemoteEndpoint`] (where the server is and its
//! token), and one JSON call with the bearer token, a timeout, a size-capped answer and the
//! server's error body turned into a [`RemoteError`].

use std::time::Duration;

use reqwest::header::{HeaderValue, AUTHORIZATION};
use reqwest::{Method, Url};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::error::RemoteError;

/// The default timeout of one call (long-polls add their wait to it).
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// The largest answer body read (a long session's history is the biggest); a larger one is a
/// [`RemoteError::Protocol`] rather than unbounded memory.
pub const MAX_RESPONSE_BYTES: usize = 64 * 1024 * 1024;

/// Where a `robota serve` server is, and the token it wants.
#[derive(Clone)]
pub struct RemoteEndpoint {
    /// The server's URL (`http://127.0.0.1:7420`); a path prefix is kept (a server behind a
    /// reverse proxy at `https://host/robota`).
    pub base_url: String,
    /// The bearer token (`None` for a server that needs none; every `robota serve` does).
    pub token: Option<String>,
    /// The timeout of each call.
    pub request_timeout: Duration,
}

impl std::fmt::Debug for RemoteEndpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteEndpoint")
            .field("base_url", &self.base_url)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("request_timeout", &self.request_timeout)
            .finish()
    }
}

impl RemoteEndpoint {
    /// The server at `base_url`, with `token`, and the default timeout.
    pub fn new(base_url: impl Into<String>, token: Option<String>) -> Self {
        RemoteEndpoint {
            base_url: base_url.into(),
            token,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
        }
    }

    /// This endpoint with another per-call timeout.
    pub fn with_request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }
}

/// A checked endpoint and the HTTP client that calls it (shared by a session, its prompts and
/// its subscriptions).
#[derive(Debug)]
pub(crate) struct Client {
    pub(crate) http: reqwest::Client,
    base: Url,
    auth: Option<HeaderValue>,
    pub(crate) timeout: Duration,
}

impl Client {
    pub(crate) fn new(endpoint: &RemoteEndpoint) -> Result<Self, RemoteError> {
        let base =
            Url::parse(endpoint.base_url.trim()).map_err(|e| RemoteError::InvalidEndpoint {
                message: format!(
                "`{}` is not a URL ({e}); pass the server's address, e.g. http://127.0.0.1:7420",
                endpoint.base_url
            ),
            })?;
        if !matches!(base.scheme(), "http" | "https") || base.cannot_be_a_base() {
            return Err(RemoteError::InvalidEndpoint {
                message: format!(
                    "`{}` is not an http(s) URL; pass the server's address, e.g. http://127.0.0.1:7420",
                    endpoint.base_url
                ),
            });
        }
        let auth = match &endpoint.token {
            None => None,
            Some(token) => {
                let mut value =
                    HeaderValue::from_str(&format!("Bearer {token}")).map_err(|_| {
                        RemoteError::InvalidEndpoint {
                            message:
                                "the token holds characters an HTTP header cannot carry; pass \
                                  the token exactly as `robota serve` printed it"
                                    .to_string(),
                        }
                    })?;
                value.set_sensitive(true);
                Some(value)
            }
        };
        let http = reqwest::Client::builder()
            .connect_timeout(endpoint.request_timeout)
            .build()
            .map_err(|e| RemoteError::InvalidEndpoint {
                message: format!("the HTTP client could not start: {e}"),
            })?;
        Ok(Client {
            http,
            base,
            auth,
            timeout: endpoint.request_timeout,
        })
    }

    /// The URL of the route made of `segments` under `/v1` (each segment percent-encoded).
    pub(crate) fn url(&self, segments: &[&str]) -> Url {
        let mut url = self.base.clone();
        if let Ok(mut path) = url.path_segments_mut() {
            path.pop_if_empty().push("v1").extend(segments);
        }
        url
    }

    /// A request with the token.
    pub(crate) fn request(&self, method: Method, url: Url) -> reqwest::RequestBuilder {
        let builder = self.http.request(method, url);
        match &self.auth {
            Some(auth) => builder.header(AUTHORIZATION, auth.clone()),
            None => builder,
        }
    }

    /// One JSON call: `body` (if any) out, a `T` back, within `self.timeout + extra`.
    pub(crate) async fn call<T: DeserializeOwned>(
        &self,
        method: Method,
        url: Url,
        body: Option<&(impl Serialize + ?Sized)>,
        extra: Duration,
    ) -> Result<T, RemoteError> {
        let what = format!("{method} {}", url.path());
        let timeout = self.timeout + extra;
        let mut builder = self.request(method, url.clone());
        if let Some(body) = body {
            builder = builder.json(body);
        }
        let exchange = async {
            let mut response = builder
                .send()
                .await
                .map_err(|e| transport_error(&url, &e))?;
            let status = response.status();
            let mut bytes = Vec::new();
            while let Some(chunk) = response
                .chunk()
                .await
                .map_err(|e| transport_error(&url, &e))?
            {
                if bytes.len() + chunk.len() > MAX_RESPONSE_BYTES {
                    return Err(RemoteError::Protocol {
                        message: format!("the answer to {what} is over {MAX_RESPONSE_BYTES} bytes"),
                    });
                }
                bytes.extend_from_slice(&chunk);
            }
            if !status.is_success() {
                return Err(RemoteError::from_answer(status.as_u16(), &bytes));
            }
            serde_json::from_slice::<T>(&bytes).map_err(|e| RemoteError::Protocol {
                message: format!("the answer to {what} is not what protocol v1 says: {e}"),
            })
        };
        match tokio::time::timeout(timeout, exchange).await {
            Ok(result) => result,
            Err(_) => Err(RemoteError::Timeout {
                what,
                after: timeout,
            }),
        }
    }
}

/// A transport failure as a [`RemoteError`].
pub(crate) fn transport_error(url: &Url, error: &reqwest::Error) -> RemoteError {
    // The chain says what really failed (connection refused, reset, …).
    let mut message = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    let mut shown = url.clone();
    shown.set_query(None);
    RemoteError::Connection {
        url: shown.to_string(),
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_redacts_the_token() {
        let endpoint = RemoteEndpoint::new("http://127.0.0.1:1", Some("s3cret".into()));
        let shown = format!("{endpoint:?}");
        assert!(!shown.contains("s3cret"), "{shown}");
        assert!(shown.contains("redacted"));
    }

    #[test]
    fn urls_keep_a_path_prefix_and_encode_segments() {
        let client = Client::new(&RemoteEndpoint::new("https://host/robota/", None)).unwrap();
        let url = client.url(&["sessions", "a/b c"]);
        assert_eq!(url.as_str(), "https://host/robota/v1/sessions/a%2Fb%20c");
        let bare = Client::new(&RemoteEndpoint::new("http://127.0.0.1:9", None)).unwrap();
        assert_eq!(
            bare.url(&["health"]).as_str(),
            "http://127.0.0.1:9/v1/health"
        );
    }

    #[test]
    fn bad_endpoints_are_refused_with_a_fix() {
        let err = Client::new(&RemoteEndpoint::new("not a url", None)).unwrap_err();
        assert!(matches!(err, RemoteError::InvalidEndpoint { .. }));
        let err = Client::new(&RemoteEndpoint::new("ftp://x", None)).unwrap_err();
        assert!(err.to_string().contains("http(s)"));
        let err = Client::new(&RemoteEndpoint::new("http://x", Some("a\nb".into()))).unwrap_err();
        assert!(matches!(err, RemoteError::InvalidEndpoint { .. }));
    }
}
