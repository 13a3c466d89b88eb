//! The OAuth HTTP client used where the system has no CA certificates (slim containers), in place
//! of `rmcp`'s, which cannot be built there. It keeps `rmcp`'s rules: Mozilla's bundled roots, a
//! 30 s timeout, bodies capped at 1 MiB, at most 10 redirects, and the metadata address policy —
//! hosts named by discovered metadata may resolve to a loopback or private address only when the
//! server's own URL names one; link-local (cloud instance metadata), unspecified, multicast and
//! reserved addresses are never reached.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, ToSocketAddrs};
use std::sync::Arc;
use std::time::Duration;

use mcp_reqwest::dns::{Addrs, Name, Resolve, Resolving};
use rmcp::transport::auth::{
    OAuthHttpClient, OAuthHttpClientError, OAuthHttpClientFuture, OAuthHttpRedirectPolicy,
    OAuthHttpRequest,
};
use url::{Host, Url};

use super::http_client::{bundled_roots, MAX_REDIRECTS};

/// `rmcp`'s limits for one OAuth request.
const TIMEOUT: Duration = Duration::from_secs(30);
const MAX_BODY_BYTES: usize = 1024 * 1024;

/// Where an address may be reached from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AddressClass {
    Public,
    Loopback,
    Private,
    /// Link-local (cloud metadata), unspecified, broadcast, multicast, reserved: never reached.
    Blocked,
}

impl AddressClass {
    fn of(address: IpAddr) -> Self {
        match address {
            IpAddr::V4(v4) => Self::of_v4(v4),
            IpAddr::V6(v6) => match embedded_ipv4(v6) {
                Some(v4) => Self::of_v4(v4),
                None => Self::of_v6(v6),
            },
        }
    }

    fn of_v4(v4: Ipv4Addr) -> Self {
        let [a, b, ..] = v4.octets();
        if v4.is_loopback() {
            Self::Loopback
        } else if v4.is_private() || (a == 100 && (64..=127).contains(&b)) {
            Self::Private
        } else if v4.is_link_local()
            || v4.is_broadcast()
            || v4.is_unspecified()
            || v4.is_multicast()
            || a == 0
            || a >= 240
            || (a == 198 && matches!(b, 18 | 19))
        {
            Self::Blocked
        } else {
            Self::Public
        }
    }

    fn of_v6(v6: Ipv6Addr) -> Self {
        let segments = v6.segments();
        if v6.is_loopback() {
            Self::Loopback
        } else if segments[0] & 0xfe00 == 0xfc00 {
            Self::Private
        } else if v6.is_unspecified()
            || v6.is_multicast()
            || segments[0] & 0xffc0 == 0xfe80
            || segments[..2] == [0x2001, 0]
            || segments[..3] == [0x64, 0xff9b, 1]
        {
            Self::Blocked
        } else {
            Self::Public
        }
    }
}

/// The IPv4 address inside an IPv4-mapped, IPv4-compatible, NAT64 or 6to4 address.
fn embedded_ipv4(v6: Ipv6Addr) -> Option<Ipv4Addr> {
    let [a, b, c, d, e, f, g, h] = v6.segments();
    let low = Ipv4Addr::from((u32::from(g) << 16) | u32::from(h));
    match [a, b, c, d, e, f] {
        [0, 0, 0, 0, 0, 0xffff] | [0x64, 0xff9b, 0, 0, 0, 0] => Some(low),
        [0, 0, 0, 0, 0, 0] if !v6.is_loopback() && !v6.is_unspecified() => Some(low),
        [0x2002, ..] => Some(Ipv4Addr::from((u32::from(b) << 16) | u32::from(c))),
        _ => None,
    }
}

/// The address classes the server's URL allows besides public ones.
#[derive(Debug, Clone)]
struct AddressPolicy {
    base_ip: Option<IpAddr>,
    base_class: Option<AddressClass>,
}

impl AddressPolicy {
    fn for_server(url: &Url) -> Self {
        let base_ip = literal_ip(url);
        let base_class = match url.host() {
            Some(Host::Domain(domain)) => {
                let domain = domain.trim_end_matches('.').to_ascii_lowercase();
                (domain == "localhost" || domain.ends_with(".localhost"))
                    .then_some(AddressClass::Loopback)
            }
            _ => base_ip.map(AddressClass::of),
        };
        Self {
            base_ip,
            base_class,
        }
    }

    fn allows(&self, address: IpAddr) -> bool {
        match AddressClass::of(address) {
            AddressClass::Public => true,
            AddressClass::Blocked => false,
            class => self.base_class == Some(class) || self.base_ip == Some(address),
        }
    }

    /// An IP-literal URL is connected to without resolving, so it is checked here.
    fn allows_url(&self, url: &Url) -> bool {
        literal_ip(url).is_none_or(|ip| self.allows(ip))
    }
}

fn literal_ip(url: &Url) -> Option<IpAddr> {
    match url.host()? {
        Host::Ipv4(v4) => Some(IpAddr::V4(v4)),
        Host::Ipv6(v6) => Some(IpAddr::V6(v6)),
        Host::Domain(_) => None,
    }
}

/// The system resolver, keeping only the addresses the policy allows.
struct FilteringResolver(Arc<AddressPolicy>);

impl Resolve for FilteringResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let policy = self.0.clone();
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let lookup = host.clone();
            let resolved: Vec<SocketAddr> =
                tokio::task::spawn_blocking(move || (lookup.as_str(), 0).to_socket_addrs())
                    .await??
                    .collect();
            let allowed: Vec<SocketAddr> = resolved
                .into_iter()
                .filter(|address| policy.allows(address.ip()))
                .collect();
            if allowed.is_empty() {
                return Err(format!(
                    "OAuth request to `{host}` refused: it resolves only to addresses this \
                     server's authorization may not reach"
                )
                .into());
            }
            Ok(Box::new(allowed.into_iter()) as Addrs)
        })
    }
}

/// [`OAuthHttpClient`] on the bundled roots (see the module documentation).
pub(crate) struct BundledRootsOAuthClient {
    follow_redirects: mcp_reqwest::Client,
    stop_redirects: mcp_reqwest::Client,
    policy: Arc<AddressPolicy>,
}

impl BundledRootsOAuthClient {
    /// The client for the OAuth of the server at `server_url`.
    pub(crate) fn new(server_url: &Url) -> Result<Self, String> {
        crate::tls::ensure_crypto_provider();
        let policy = Arc::new(AddressPolicy::for_server(server_url));
        let build = |redirect: mcp_reqwest::redirect::Policy| {
            mcp_reqwest::Client::builder()
                .timeout(TIMEOUT)
                .redirect(redirect)
                .dns_resolver(Arc::new(FilteringResolver(policy.clone())))
                .tls_certs_only(bundled_roots())
                .build()
                .map_err(|e| format!("cannot create the OAuth HTTP client ({e})"))
        };
        let redirect_policy = policy.clone();
        let follow = mcp_reqwest::redirect::Policy::custom(move |attempt| {
            if !redirect_policy.allows_url(attempt.url()) {
                let refused = format!("OAuth redirect to `{}` refused", attempt.url());
                attempt.error(refused)
            } else if attempt.previous().len() > MAX_REDIRECTS {
                attempt.error(format!("more than {MAX_REDIRECTS} OAuth redirects"))
            } else {
                attempt.follow()
            }
        });
        Ok(Self {
            follow_redirects: build(follow)?,
            stop_redirects: build(mcp_reqwest::redirect::Policy::none())?,
            policy,
        })
    }
}

impl OAuthHttpClient for BundledRootsOAuthClient {
    fn execute(&self, request: OAuthHttpRequest) -> OAuthHttpClientFuture<'_> {
        Box::pin(async move {
            let client = match request.redirect_policy {
                OAuthHttpRedirectPolicy::Stop => &self.stop_redirects,
                _ => &self.follow_redirects,
            };
            let request = mcp_reqwest::Request::try_from(request.request)
                .map_err(|e| Box::new(e) as OAuthHttpClientError)?;
            if !self.policy.allows_url(request.url()) {
                return Err(format!("OAuth request to `{}` refused", request.url()).into());
            }
            let mut response = client
                .execute(request)
                .await
                .map_err(|e| Box::new(e) as OAuthHttpClientError)?;
            let mut builder = http::Response::builder()
                .status(response.status())
                .version(response.version());
            for (name, value) in response.headers() {
                builder = builder.header(name, value);
            }
            let mut body = Vec::new();
            while let Some(chunk) = response
                .chunk()
                .await
                .map_err(|e| Box::new(e) as OAuthHttpClientError)?
            {
                if chunk.len() > MAX_BODY_BYTES - body.len() {
                    return Err(
                        format!("OAuth HTTP response body exceeds {MAX_BODY_BYTES} bytes").into(),
                    );
                }
                body.extend_from_slice(&chunk);
            }
            builder
                .body(body)
                .map_err(|e| Box::new(e) as OAuthHttpClientError)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(url: &str) -> AddressPolicy {
        AddressPolicy::for_server(&Url::parse(url).expect("url"))
    }

    fn ip(text: &str) -> IpAddr {
        text.parse().expect("ip")
    }

    #[test]
    fn a_public_server_reaches_only_public_addresses() {
        let policy = policy("https://mcp.example.com/mcp");
        assert!(policy.allows(ip("93.184.216.34")));
        for internal in [
            "127.0.0.1",
            "10.0.0.9",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "::1",
            "fe80::1",
            "fd00::1",
            "::ffff:169.254.169.254",
            "::ffff:127.0.0.1",
            "2002:a9fe:a9fe::1",
        ] {
            assert!(!policy.allows(ip(internal)), "{internal} must be refused");
        }
        assert!(!policy.allows_url(&Url::parse("http://169.254.169.254/latest").expect("url")));
    }

    #[test]
    fn a_loopback_or_private_server_also_reaches_its_own_class_but_never_link_local() {
        let local = policy("http://localhost:8080/mcp");
        assert!(local.allows(ip("127.0.0.1")) && local.allows(ip("::1")));
        assert!(!local.allows(ip("10.0.0.9")) && !local.allows(ip("169.254.169.254")));
        let private = policy("https://10.1.2.3/mcp");
        assert!(private.allows(ip("10.9.9.9")) && private.allows(ip("93.184.216.34")));
        assert!(!private.allows(ip("127.0.0.1")) && !private.allows(ip("169.254.169.254")));
    }
}
