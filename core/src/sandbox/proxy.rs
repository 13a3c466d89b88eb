//! The network allow-list: an HTTP/HTTPS proxy on 127.0.0.1 that forwards only to allowed
//! domains. Sandboxed commands get `HTTP_PROXY`/`HTTPS_PROXY`/`ALL_PROXY` pointing at it, and
//! the backend lets them reach nothing else (Landlock allows TCP connections only to the
//! proxy's port; seccomp refuses UDP and raw sockets, so there is no DNS either — the proxy
//! resolves names itself).
//!
//! `CONNECT host:port` (HTTPS and any TLS) is tunnelled after the host is checked; plain HTTP
//! requests in absolute form (`GET http://host/path`) are forwarded in origin form. A refused
//! host gets `403` with a body naming the host and the setting to change.

use std::net::Ipv4Addr;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_util::sync::{CancellationToken, DropGuard};

/// Largest request head the proxy reads.
const MAX_HEAD: usize = 64 * 1024;
const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);
const HEAD_TIMEOUT: Duration = Duration::from_secs(30);

/// Allowed domain patterns: `example.com` (exactly), `*.example.com` (its subdomains), IPs.
#[derive(Debug, Clone, Default)]
pub struct DomainAllowList {
    patterns: Vec<String>,
}

impl DomainAllowList {
    /// The list for these patterns (case-insensitive, a trailing dot ignored).
    pub fn new(patterns: &[String]) -> Self {
        DomainAllowList {
            patterns: patterns.iter().map(|p| normalize_host(p)).collect(),
        }
    }

    /// Whether `host` (a name or an IP literal, `[::1]` brackets allowed) may be reached.
    pub fn allows(&self, host: &str) -> bool {
        let host = normalize_host(host);
        if host.is_empty() {
            return false;
        }
        self.patterns.iter().any(|pattern| {
            if let Some(suffix) = pattern.strip_prefix("*.") {
                host.len() > suffix.len() + 1
                    && host.ends_with(suffix)
                    && host[..host.len() - suffix.len()].ends_with('.')
            } else {
                host == *pattern
            }
        })
    }
}

fn normalize_host(host: &str) -> String {
    host.trim()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .trim_end_matches('.')
        .to_ascii_lowercase()
}

/// A running proxy; stops when dropped.
pub(crate) struct Proxy {
    port: u16,
    _stop: DropGuard,
}

impl Proxy {
    /// Starts the proxy on an ephemeral loopback port, on the current tokio runtime.
    pub(crate) fn start(domains: &[String]) -> Result<Proxy, String> {
        let handle = tokio::runtime::Handle::try_current().map_err(|_| {
            "the network allow-list proxy needs a tokio runtime (start sandboxed commands from \
             async code)"
                .to_string()
        })?;
        let listener = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .map_err(|e| format!("cannot open the sandbox proxy on 127.0.0.1: {e}"))?;
        listener
            .set_nonblocking(true)
            .map_err(|e| format!("cannot configure the sandbox proxy socket: {e}"))?;
        let port = listener
            .local_addr()
            .map_err(|e| format!("cannot read the sandbox proxy's port: {e}"))?
            .port();
        let stop = CancellationToken::new();
        let token = stop.clone();
        let allowed = Arc::new(DomainAllowList::new(domains));
        handle.spawn(async move {
            let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
                return;
            };
            loop {
                tokio::select! {
                    () = token.cancelled() => break,
                    accepted = listener.accept() => {
                        let Ok((stream, _)) = accepted else { continue };
                        let allowed = Arc::clone(&allowed);
                        let token = token.clone();
                        tokio::spawn(async move {
                            tokio::select! {
                                () = token.cancelled() => {}
                                () = serve(stream, &allowed) => {}
                            }
                        });
                    }
                }
            }
        });
        Ok(Proxy {
            port,
            _stop: stop.drop_guard(),
        })
    }

    /// The loopback port.
    pub(crate) fn port(&self) -> u16 {
        self.port
    }
}

/// The body of the refusal for `host`.
pub(crate) fn refusal_body(host: &str) -> String {
    format!(
        "robota sandbox: network access to {host} is blocked. Sandboxed commands may only reach \
         the domains listed in the `sandbox.network.allowedDomains` setting; add \"{host}\" there \
         (settings.json) to allow it.\n"
    )
}

async fn respond(client: &mut TcpStream, status: &str, body: &str) {
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\n\
         X-Robota-Sandbox: blocked\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = client.write_all(response.as_bytes()).await;
    let _ = client.shutdown().await;
}

async fn read_head(client: &mut TcpStream) -> Option<(Vec<u8>, usize)> {
    let mut buf = Vec::with_capacity(2048);
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            return Some((buf, end));
        }
        if buf.len() > MAX_HEAD {
            return None;
        }
        let n = tokio::time::timeout(HEAD_TIMEOUT, client.read(&mut chunk))
            .await
            .ok()?
            .ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

fn split_host_port(authority: &str, default_port: u16) -> Option<(String, u16)> {
    if let Some(rest) = authority.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        let port = match after.strip_prefix(':') {
            Some(port) => port.parse().ok()?,
            None => default_port,
        };
        return Some((host.to_string(), port));
    }
    match authority.rsplit_once(':') {
        Some((host, port)) => Some((host.to_string(), port.parse().ok()?)),
        None => Some((authority.to_string(), default_port)),
    }
}

async fn serve(mut client: TcpStream, allowed: &DomainAllowList) {
    let Some((buf, head_end)) = read_head(&mut client).await else {
        return;
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let rest = &buf[head_end + 4..];
    let mut lines = head.split("\r\n");
    let request_line = lines.next().unwrap_or_default();
    let mut parts = request_line.split_whitespace();
    let (Some(method), Some(target), Some(version)) = (parts.next(), parts.next(), parts.next())
    else {
        respond(
            &mut client,
            "400 Bad Request",
            "robota sandbox proxy: malformed request\n",
        )
        .await;
        return;
    };
    let connect = method.eq_ignore_ascii_case("CONNECT");
    let (host, port, origin_target) = if connect {
        match split_host_port(target, 443) {
            Some((host, port)) => (host, port, None),
            None => {
                respond(
                    &mut client,
                    "400 Bad Request",
                    "robota sandbox proxy: bad CONNECT target\n",
                )
                .await;
                return;
            }
        }
    } else {
        match url::Url::parse(target) {
            Ok(url) if url.scheme() == "http" && url.host_str().is_some() => {
                let host = url.host_str().unwrap_or_default().to_string();
                let port = url.port_or_known_default().unwrap_or(80);
                let mut path = url.path().to_string();
                if let Some(query) = url.query() {
                    path.push('?');
                    path.push_str(query);
                }
                (host, port, Some(path))
            }
            _ => {
                respond(
                    &mut client,
                    "400 Bad Request",
                    "robota sandbox proxy: only http:// URLs and CONNECT are proxied\n",
                )
                .await;
                return;
            }
        }
    };
    if !allowed.allows(&host) {
        respond(
            &mut client,
            "403 Forbidden",
            &refusal_body(&normalize_host(&host)),
        )
        .await;
        return;
    }
    let address = (normalize_host(&host), port);
    let upstream = tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(address)).await;
    let mut upstream = match upstream {
        Ok(Ok(stream)) => stream,
        Ok(Err(e)) => {
            let body = format!("robota sandbox proxy: cannot connect to {host}:{port}: {e}\n");
            respond(&mut client, "502 Bad Gateway", &body).await;
            return;
        }
        Err(_) => {
            let body = format!("robota sandbox proxy: connecting to {host}:{port} timed out\n");
            respond(&mut client, "504 Gateway Timeout", &body).await;
            return;
        }
    };
    let forwarded = match origin_target {
        None => {
            if client
                .write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n")
                .await
                .is_err()
            {
                return;
            }
            rest.to_vec()
        }
        Some(path) => {
            let mut out = format!("{method} {path} {version}\r\n");
            for line in lines {
                let name = line.split(':').next().unwrap_or_default().trim();
                if name.eq_ignore_ascii_case("proxy-connection")
                    || name.eq_ignore_ascii_case("proxy-authorization")
                {
                    continue;
                }
                out.push_str(line);
                out.push_str("\r\n");
            }
            out.push_str("\r\n");
            let mut bytes = out.into_bytes();
            bytes.extend_from_slice(rest);
            bytes
        }
    };
    if upstream.write_all(&forwarded).await.is_err() {
        return;
    }
    let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn domain_patterns() {
        let list = DomainAllowList::new(&[
            "Example.com".into(),
            "*.github.com".into(),
            "127.0.0.1".into(),
        ]);
        assert!(list.allows("example.com"));
        assert!(list.allows("EXAMPLE.com."));
        assert!(!list.allows("www.example.com"));
        assert!(list.allows("api.github.com"));
        assert!(!list.allows("github.com"));
        assert!(!list.allows("evilgithub.com"));
        assert!(list.allows("127.0.0.1"));
        assert!(!list.allows("localhost"));
        assert!(!list.allows(""));
    }

    #[test]
    fn authorities() {
        assert_eq!(
            split_host_port("a.com:8443", 443),
            Some(("a.com".into(), 8443))
        );
        assert_eq!(split_host_port("a.com", 443), Some(("a.com".into(), 443)));
        assert_eq!(split_host_port("[::1]:80", 443), Some(("::1".into(), 80)));
        assert_eq!(split_host_port("a.com:x", 443), None);
    }
}
