//! OAuth 2.1 authorization of remote MCP servers (authorization code + PKCE S256), built on
//! `rmcp`'s `auth` module: RFC 9728 / RFC 8414 metadata discovery from the server's 401
//! challenge, dynamic client registration (RFC 7591) unless the configuration names a
//! `clientId`, the code exchange and refresh-token rotation.
//!
//! What robota adds around it:
//!
//! - **Token file**: the tokens of one server live in `~/.robota/mcp-oauth/<server>-<hash>.json`
//!   (the user's folder, never the project; owner-only permissions), keyed by the server's name
//!   and URL, and are reused by the next session until they can no longer be refreshed.
//! - **Browser step**: the authorization URL goes to the host's [`McpAuthorizationHandler`]
//!   (a CLI prints it, a desktop host opens a browser); the redirect comes back to a one-shot
//!   listener on `127.0.0.1` (`oauth.callbackPort`, else a free port). Without a handler the
//!   server's status is `needs_auth` at once; with one, the wait is bounded by the start-up
//!   timeout.
//! - **Metadata checks**: discovered endpoints must be `https` (plain `http` only on loopback),
//!   and the token and registration endpoints must share the issuer's origin, so a forged
//!   metadata document cannot send the authorization code, PKCE verifier or refresh token to
//!   another host.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rmcp::transport::auth::{
    AuthError, AuthorizationManager, AuthorizationMetadata, AuthorizationRequest,
    AuthorizationSession, CredentialStore, StoredCredentials,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use url::Url;

use crate::files::FileKind;

/// The folder under the user's robota folder that keeps MCP tokens.
pub const TOKEN_FOLDER: &str = "mcp-oauth";

/// How long `/mcp auth <server>` waits for the user to finish the browser step.
pub const INTERACTIVE_AUTHORIZATION_TIMEOUT: std::time::Duration =
    std::time::Duration::from_secs(300);

/// The largest token file read back (a token response is a few kilobytes).
const MAX_TOKEN_FILE_BYTES: u64 = 256 * 1024;

/// The largest redirect request the loopback listener reads.
const MAX_REDIRECT_REQUEST_BYTES: usize = 16 * 1024;

/// How long one connection to the redirect listener may take to send its request.
const REDIRECT_READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// The client name robota registers under.
const CLIENT_NAME: &str = "robota";

/// The OAuth settings of one server (Claude Code's `"oauth": {"clientId": …, "callbackPort": …}`).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpOAuthConfig {
    /// A client registered in advance with the authorization server; dynamic registration when
    /// absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// The loopback port the redirect comes back to (registered redirect URIs often fix it); a
    /// free port when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub callback_port: Option<u16>,
}

/// Shows the user the URL where they authorize robota for a server (`(server, url)`): opens a
/// browser, prints it, or in tests follows it. It must not block; the redirect arrives on
/// robota's loopback listener.
#[derive(Clone)]
pub struct McpAuthorizationHandler(Arc<OpenAuthorizationUrlAsync>);

/// The function behind an [`McpAuthorizationHandler::new`]: `(server, url)`.
pub type OpenAuthorizationUrl = dyn Fn(&str, &str) + Send + Sync;

/// The function behind an [`McpAuthorizationHandler::new_async`]: `(server, url)` → whether the
/// host could show the URL.
pub type OpenAuthorizationUrlAsync =
    dyn Fn(&str, &str) -> futures::future::BoxFuture<'static, Result<(), String>> + Send + Sync;

impl McpAuthorizationHandler {
    /// Wraps a function of `(server, url)`.
    pub fn new(open: impl Fn(&str, &str) + Send + Sync + 'static) -> Self {
        McpAuthorizationHandler(Arc::new(move |server: &str, url: &str| {
            open(server, url);
            Box::pin(std::future::ready(Ok(())))
                as futures::future::BoxFuture<'static, Result<(), String>>
        }))
    }

    /// Wraps a function of `(server, url)` whose future says whether the host could show the
    /// URL (a host callback that threw is an `Err` with its message): a failure ends the
    /// authorization at once, the server `needs_auth` with the message, instead of waiting for
    /// a browser that never opened. Success only means the URL was shown; robota goes on
    /// waiting for the redirect.
    pub fn new_async(
        open: impl Fn(&str, &str) -> futures::future::BoxFuture<'static, Result<(), String>>
            + Send
            + Sync
            + 'static,
    ) -> Self {
        McpAuthorizationHandler(Arc::new(open))
    }

    /// Hands the URL to the host; the future ends when the host has shown it (or failed to).
    pub fn open(
        &self,
        server: &str,
        url: &str,
    ) -> futures::future::BoxFuture<'static, Result<(), String>> {
        (self.0)(server, url)
    }
}

impl std::fmt::Debug for McpAuthorizationHandler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("McpAuthorizationHandler")
    }
}

/// The token folder of a home directory (`<home>/.robota/mcp-oauth`).
pub fn token_folder(home: &Path) -> PathBuf {
    home.join(".robota").join(TOKEN_FOLDER)
}

/// The file holding one server's tokens: its name (for people looking at the folder) and a hash
/// of its URL (a server renamed or moved does not get another's tokens).
pub fn token_file(folder: &Path, server: &str, url: &str) -> PathBuf {
    // FNV-1a: stable across releases and platforms, unlike `DefaultHasher`.
    let hash = url.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    });
    folder.join(format!("{server}-{hash:016x}.json"))
}

/// Removes a server's stored tokens; true when there were any.
pub fn forget_tokens(folder: &Path, server: &str, url: &str) -> Result<bool, String> {
    let path = token_file(folder, server, url);
    match std::fs::remove_file(&path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(format!("cannot remove {}: {e}", path.display())),
    }
}

/// One server's token file, as `rmcp`'s credential store.
#[derive(Debug, Clone)]
pub(crate) struct TokenFile {
    path: PathBuf,
}

impl TokenFile {
    pub(crate) fn new(folder: &Path, server: &str, url: &str) -> Self {
        TokenFile {
            path: token_file(folder, server, url),
        }
    }

    /// Whether an earlier session stored tokens.
    pub(crate) fn exists(&self) -> bool {
        self.path.is_file()
    }

    fn read(&self) -> Result<Option<StoredCredentials>, AuthError> {
        if !self.path.exists() {
            return Ok(None);
        }
        let kind = FileKind {
            what: "MCP token file",
            max_bytes: MAX_TOKEN_FILE_BYTES,
        };
        let text = crate::files::read_regular_text(&self.path, &kind)
            .map_err(|e| AuthError::CredentialStoreError(e.to_string()))?;
        serde_json::from_str(&text).map(Some).map_err(|e| {
            AuthError::CredentialStoreError(format!("{} is not valid: {e}", self.path.display()))
        })
    }

    fn write(&self, credentials: &StoredCredentials) -> Result<(), AuthError> {
        let failed = |e: std::io::Error| {
            AuthError::CredentialStoreError(format!("{}: {e}", self.path.display()))
        };
        let json = serde_json::to_vec_pretty(credentials)
            .map_err(|e| AuthError::CredentialStoreError(e.to_string()))?;
        if let Some(folder) = self.path.parent() {
            let mut builder = std::fs::DirBuilder::new();
            builder.recursive(true);
            #[cfg(unix)]
            std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
            builder.create(folder).map_err(failed)?;
        }
        // Written beside and renamed: a crash never leaves half a token file, and the file is
        // owner-only from its first byte.
        let temporary = self.path.with_extension("json.tmp");
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let mut file = options.open(&temporary).map_err(failed)?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            file.set_permissions(std::fs::Permissions::from_mode(0o600))
                .map_err(failed)?;
        }
        std::io::Write::write_all(&mut file, &json).map_err(failed)?;
        file.sync_all().map_err(failed)?;
        std::fs::rename(&temporary, &self.path).map_err(failed)
    }
}

#[async_trait::async_trait]
impl CredentialStore for TokenFile {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        self.read()
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        self.write(&credentials)
    }

    async fn clear(&self) -> Result<(), AuthError> {
        match std::fs::remove_file(&self.path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(
                AuthError::CredentialStoreError(format!("{}: {e}", self.path.display())),
            ),
            _ => Ok(()),
        }
    }
}

/// The marker that starts the reason of a server waiting for authorization.
pub const NEEDS_AUTH: &str = "needs_auth";

/// Refuses metadata whose endpoints could leak the code, verifier or tokens: every endpoint
/// `https` (or `http` on a loopback host), the token and registration endpoints on the issuer's
/// origin.
pub(crate) fn check_metadata(
    metadata: &AuthorizationMetadata,
    server_url: &str,
) -> Result<(), String> {
    let parse = |what: &str, url: &str| {
        Url::parse(url).map_err(|e| format!("its {what} `{url}` is not a valid URL ({e})"))
    };
    let issuer = match &metadata.issuer {
        Some(issuer) => parse("issuer", issuer)?,
        None => parse("server URL", server_url)?,
    };
    let mut endpoints = vec![
        (
            "authorization endpoint",
            &metadata.authorization_endpoint,
            false,
        ),
        ("token endpoint", &metadata.token_endpoint, true),
    ];
    if let Some(registration) = &metadata.registration_endpoint {
        endpoints.push(("registration endpoint", registration, true));
    }
    for (what, endpoint, same_origin) in endpoints {
        let url = parse(what, endpoint)?;
        let loopback = match url.host() {
            Some(url::Host::Domain(domain)) => domain.eq_ignore_ascii_case("localhost"),
            Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
            Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
            None => false,
        };
        if url.scheme() != "https" && !(url.scheme() == "http" && loopback) {
            return Err(format!(
                "its authorization server metadata names the {what} `{endpoint}`, which is \
                 neither https nor on this machine; refusing to send credentials there"
            ));
        }
        if same_origin && url.origin() != issuer.origin() {
            return Err(format!(
                "its authorization server metadata names the {what} `{endpoint}`, outside the \
                 issuer `{}`; refusing to send credentials there",
                issuer.origin().ascii_serialization()
            ));
        }
    }
    Ok(())
}

fn auth_error(what: &str, error: AuthError) -> String {
    format!("OAuth {what} failed: {error}")
}

/// Discovers and checks the authorization server of `url` (from the 401's `WWW-Authenticate`
/// when there is one); the manager keeps its tokens in `store`.
async fn discover(
    url: &str,
    challenge: Option<&str>,
    store: &TokenFile,
) -> Result<AuthorizationManager, String> {
    // rmcp's client needs the system's CA certificates; without them (slim containers) the same
    // requests go through a client on the bundled roots with the same limits and address policy.
    let mut manager = match AuthorizationManager::new(url).await {
        Ok(manager) => manager,
        Err(system_roots) => {
            let parsed = Url::parse(url).map_err(|e| format!("OAuth set-up failed: {e}"))?;
            let client = super::oauth_client::BundledRootsOAuthClient::new(&parsed)
                .map_err(|e| format!("OAuth set-up failed: {system_roots}; {e}"))?;
            AuthorizationManager::new_with_oauth_http_client(url, Arc::new(client))
                .await
                .map_err(|e| auth_error("set-up", e))?
        }
    };
    let resolution = manager
        .resolve_metadata_from_challenge(challenge)
        .await
        .map_err(|e| auth_error("metadata discovery", e))?;
    check_metadata(&resolution.metadata, url)?;
    manager.set_metadata(resolution.metadata);
    manager.set_credential_store(store.clone());
    Ok(manager)
}

/// A manager with the tokens an earlier session stored, or `None` when there are none (or they
/// belong to another authorization server).
pub(crate) async fn stored_authorization(
    url: &str,
    store: &TokenFile,
) -> Result<Option<AuthorizationManager>, String> {
    let mut manager = discover(url, None, store).await?;
    match manager.initialize_from_store().await {
        Ok(true) => Ok(Some(manager)),
        Ok(false) => Ok(None),
        Err(e) => Err(auth_error("reading the stored tokens", e)),
    }
}

/// What a server answers an unauthenticated request: `Some(challenge)` when it wants OAuth (a
/// 401, with its `WWW-Authenticate` header when it sends one).
pub(crate) async fn probe_challenge(
    client: &mcp_reqwest::Client,
    url: &str,
) -> Option<Option<String>> {
    let initialize = serde_json::json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": CLIENT_NAME, "version": env!("CARGO_PKG_VERSION")}}
    });
    let response = client
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(initialize.to_string())
        .send()
        .await
        .ok()?;
    (response.status() == mcp_reqwest::StatusCode::UNAUTHORIZED).then(|| {
        response
            .headers()
            .get("www-authenticate")
            .and_then(|value| value.to_str().ok())
            .map(str::to_string)
    })
}

/// Runs the whole authorization: discovery, registration, the browser step through `handler`,
/// the redirect on a loopback listener, the code exchange. The tokens end up in `store`.
pub(crate) async fn authorize(
    server: &str,
    url: &str,
    challenge: Option<&str>,
    config: &McpOAuthConfig,
    store: &TokenFile,
    handler: Option<&McpAuthorizationHandler>,
) -> Result<AuthorizationManager, String> {
    let Some(handler) = handler else {
        return Err(format!(
            "{NEEDS_AUTH}: the server requires OAuth authorization and this host shows no \
             authorization page; run `/mcp auth {server}` in an interactive session (or give the \
             session an MCP authorization handler)"
        ));
    };
    let manager = discover(url, challenge, store).await?;
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", config.callback_port.unwrap_or(0)))
        .await
        .map_err(|e| format!("cannot listen for the OAuth redirect on 127.0.0.1: {e}"))?;
    let port = listener
        .local_addr()
        .map_err(|e| format!("cannot listen for the OAuth redirect: {e}"))?
        .port();
    let redirect_uri = format!("http://127.0.0.1:{port}/callback");
    let mut request = AuthorizationRequest::new(&redirect_uri).with_client_name(CLIENT_NAME);
    if let Some(client_id) = &config.client_id {
        request = request.with_preregistered_client(client_id);
    }
    let session = AuthorizationSession::new(manager, request)
        .await
        .map_err(|(_, e)| auth_error("client registration", e))?;
    // The host's browser step runs on a task of its own, to its end: once the redirect has
    // arrived it is no longer waited for, but never cancelled. Cancelling a host's future from
    // here (a Swift task inside URLSession, say) runs the host's cancellation on this thread,
    // which can wait for the very redirect answer this runtime is sending: a deadlock.
    let opened = handler.open(server, session.get_authorization_url());
    let (failed_tx, failed) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        if let Err(reason) = opened.await {
            let _ = failed_tx.send(reason);
        }
    });
    let expected_state = query_field(session.get_authorization_url(), "state");
    let redirect = tokio::select! {
        redirect = receive_redirect(&listener, &redirect_uri, expected_state.as_deref()) => redirect?,
        // A host that could not show the URL: no browser will come back. (A handler that ended
        // well closes the channel without a reason; the redirect is then waited for alone.)
        Ok(reason) = failed => {
            return Err(format!(
                "{NEEDS_AUTH}: the host's authorization handler failed ({reason}); authorize \
                 with `/mcp auth {server}`"
            ))
        }
    };
    session
        .handle_callback_url(&redirect)
        .await
        .map_err(|e| auth_error("code exchange", e))?;
    Ok(session.auth_manager)
}

/// The value of query parameter `name` of `url`.
fn query_field(url: &str, name: &str) -> Option<String> {
    let url = Url::parse(url).ok()?;
    url.query_pairs()
        .find(|(key, _)| key == name)
        .map(|(_, value)| value.into_owned())
}

/// Waits for the browser's redirect to `/callback` carrying `state` (the one robota sent) and
/// answers it; other requests (a favicon, another local program's guess) are answered and
/// ignored, and a client that sends nothing is dropped after a few seconds. The caller bounds
/// the whole wait.
async fn receive_redirect(
    listener: &tokio::net::TcpListener,
    redirect_uri: &str,
    state: Option<&str>,
) -> Result<String, String> {
    loop {
        let (mut stream, _) = listener
            .accept()
            .await
            .map_err(|e| format!("the OAuth redirect listener failed: {e}"))?;
        let mut request = Vec::new();
        let mut chunk = [0_u8; 2048];
        let read = async {
            while !request.windows(4).any(|w| w == b"\r\n\r\n")
                && request.len() < MAX_REDIRECT_REQUEST_BYTES
            {
                match stream.read(&mut chunk).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => request.extend_from_slice(&chunk[..n]),
                }
            }
        };
        if tokio::time::timeout(REDIRECT_READ_TIMEOUT, read)
            .await
            .is_err()
        {
            continue;
        }
        let head = String::from_utf8_lossy(&request);
        let target = head
            .lines()
            .next()
            .and_then(|line| line.strip_prefix("GET "))
            .and_then(|rest| rest.split(' ').next())
            .unwrap_or("");
        if target != "/callback" && !target.starts_with("/callback?") {
            let _ = stream
                .write_all(
                    b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                )
                .await;
            continue;
        }
        let redirect = format!("{redirect_uri}{}", &target["/callback".len()..]);
        if state.is_some() && query_field(&redirect, "state").as_deref() != state {
            let _ = stream
                .write_all(
                    b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                )
                .await;
            continue;
        }
        let error = query_field(&redirect, "error").map(|error| {
            match query_field(&redirect, "error_description") {
                Some(description) => format!("{error}: {description}"),
                None => error,
            }
        });
        let page = match &error {
            Some(_) => "Authorization failed; robota shows why. You can close this window.",
            None => "robota is authorized. You can close this window.",
        };
        let _ = stream
            .write_all(
                format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/plain; charset=utf-8\r\n\
                     content-length: {}\r\nconnection: close\r\n\r\n{page}",
                    page.len()
                )
                .as_bytes(),
            )
            .await;
        return match error {
            Some(error) => Err(format!("the authorization server refused: {error}")),
            None => Ok(redirect),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metadata(token: &str, authorize: &str) -> AuthorizationMetadata {
        let mut metadata = AuthorizationMetadata::default();
        metadata.issuer = Some("https://auth.example.com".into());
        metadata.authorization_endpoint = authorize.into();
        metadata.token_endpoint = token.into();
        metadata
    }

    #[test]
    fn refuses_endpoints_that_leave_the_issuer_or_https() {
        let good = metadata(
            "https://auth.example.com/token",
            "https://login.example.org/a",
        );
        assert!(check_metadata(&good, "https://mcp.example.com/mcp").is_ok());
        let elsewhere = metadata("https://evil.example/token", "https://auth.example.com/a");
        let error = check_metadata(&elsewhere, "https://mcp.example.com/mcp").unwrap_err();
        assert!(error.contains("outside the issuer"), "{error}");
        let plain = metadata(
            "https://auth.example.com/token",
            "http://auth.example.com/a",
        );
        let error = check_metadata(&plain, "https://mcp.example.com/mcp").unwrap_err();
        assert!(error.contains("neither https"), "{error}");
        let mut loopback = metadata("http://127.0.0.1:9/token", "http://localhost:9/a");
        loopback.issuer = Some("http://127.0.0.1:9".into());
        assert!(check_metadata(&loopback, "http://127.0.0.1:9/mcp").is_ok());
    }

    async fn get(port: u16, path: &str) -> String {
        let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .expect("connects");
        stream
            .write_all(format!("GET {path} HTTP/1.1\r\nhost: x\r\n\r\n").as_bytes())
            .await
            .expect("sends");
        let mut answer = String::new();
        stream.read_to_string(&mut answer).await.expect("answer");
        answer
    }

    #[tokio::test]
    async fn the_redirect_listener_waits_for_the_state_it_sent() {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
            .await
            .expect("listens");
        let port = listener.local_addr().expect("port").port();
        let redirect_uri = format!("http://127.0.0.1:{port}/callback");
        let waiting =
            tokio::spawn(
                async move { receive_redirect(&listener, &redirect_uri, Some("s1")).await },
            );
        // A client that never sends its request does not hold the listener up for long.
        let _silent = tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .expect("connects");
        assert!(get(port, "/favicon.ico").await.starts_with("HTTP/1.1 404"));
        let guess = get(port, "/callback?code=evil&state=guess").await;
        assert!(guess.starts_with("HTTP/1.1 400"), "{guess}");
        assert!(get(port, "/callback?code=c1&state=s1")
            .await
            .contains("authorized"));
        let redirect = waiting.await.expect("joins").expect("the redirect");
        assert!(
            redirect.ends_with("/callback?code=c1&state=s1"),
            "{redirect}"
        );
    }

    #[test]
    fn token_files_are_keyed_by_name_and_url() {
        let folder = Path::new("/h/.robota/mcp-oauth");
        let a = token_file(folder, "web", "https://a.test/mcp");
        assert_eq!(a, token_file(folder, "web", "https://a.test/mcp"));
        assert_ne!(a, token_file(folder, "web", "https://b.test/mcp"));
        assert!(a.file_name().unwrap().to_string_lossy().starts_with("web-"));
    }
}
