//! WebFetch domain rules (`domain:example.com`, `domain:*.example.com`) and the host of a URL.
//!
//! The host is taken with the `url` crate — the same WHATWG parser the HTTP client uses — so a
//! rule sees the host the request will actually go to (`http://a.com\@b.com` and similar tricks
//! resolve identically for the check and for the fetch).

use super::glob::wildcard_match;

/// A parsed `domain:` specifier.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DomainPattern {
    /// Lower-case ASCII (punycode) labels; a label may contain `*`, which stays inside the label.
    labels: Vec<String>,
    /// `*.example.com`: one or more extra labels in front, never the apex itself.
    any_subdomain: bool,
    /// `domain:*`: every host (Claude Code accepts it as a wildcard).
    every_host: bool,
}

impl DomainPattern {
    /// Parses the text after `domain:`.
    pub fn parse(text: &str) -> Result<DomainPattern, String> {
        let text = text.trim().trim_end_matches('.');
        if text.is_empty() {
            return Err("`domain:` needs a host name, e.g. `domain:example.com`".to_string());
        }
        if text.contains("://") || text.contains('/') {
            return Err(format!(
                "`domain:{text}` should be a bare host name such as `example.com`, not a URL"
            ));
        }
        if text.contains(':') {
            return Err(format!(
                "`domain:{text}`: ports are not part of domain rules; write the host only"
            ));
        }
        let (any_subdomain, rest) = match text.strip_prefix("*.") {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        let mut labels = Vec::new();
        for label in rest.split('.') {
            if label.is_empty() {
                return Err(format!("`domain:{text}` has an empty label"));
            }
            labels.push(ascii_label(label).ok_or_else(|| {
                format!("`domain:{text}`: `{label}` is not a valid host name label")
            })?);
        }
        let every_host = labels.iter().all(|l| l == "*");
        Ok(DomainPattern {
            labels,
            any_subdomain,
            every_host,
        })
    }

    /// Whether `host` (as returned by [`url_host`]) matches.
    pub fn matches(&self, host: &str) -> bool {
        if self.every_host {
            return !host.is_empty();
        }
        let host_labels: Vec<&str> = host.split('.').collect();
        let n = self.labels.len();
        let fits = if self.any_subdomain {
            host_labels.len() > n
        } else {
            host_labels.len() == n
        };
        fits && host_labels[host_labels.len() - n..]
            .iter()
            .zip(&self.labels)
            .all(|(h, p)| wildcard_match(p, h))
    }
}

/// Lower-cases an ASCII label, or converts a Unicode label to punycode, keeping `*` wildcards.
fn ascii_label(label: &str) -> Option<String> {
    if label.is_ascii() {
        let ok = label
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '*'));
        return ok.then(|| label.to_ascii_lowercase());
    }
    if label.contains('*') {
        return None;
    }
    match url::Host::parse(label) {
        Ok(url::Host::Domain(d)) => Some(d),
        _ => None,
    }
}

/// The host a URL points at: lower case, punycode, no trailing dot; IPv6 in brackets. `None` for
/// anything that is not an absolute URL with a host.
pub(crate) fn url_host(url: &str) -> Option<String> {
    let parsed = url::Url::parse(url.trim()).ok()?;
    let host = match parsed.host()? {
        url::Host::Domain(d) => d.trim_end_matches('.').to_ascii_lowercase(),
        url::Host::Ipv4(ip) => ip.to_string(),
        url::Host::Ipv6(ip) => format!("[{ip}]"),
    };
    (!host.is_empty()).then_some(host)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_and_subdomains() {
        let exact = DomainPattern::parse("Example.com").unwrap();
        assert!(exact.matches("example.com"));
        assert!(!exact.matches("www.example.com"));
        assert!(!exact.matches("evilexample.com"));
        let sub = DomainPattern::parse("*.example.com").unwrap();
        assert!(sub.matches("a.example.com"));
        assert!(sub.matches("a.b.example.com"));
        assert!(!sub.matches("example.com"));
        assert!(!sub.matches("example.com.evil.net"));
        let mid = DomainPattern::parse("api.*.example.com").unwrap();
        assert!(mid.matches("api.eu.example.com"));
        assert!(!mid.matches("api.a.b.example.com"));
    }

    #[test]
    fn bad_domains() {
        assert!(DomainPattern::parse("").is_err());
        assert!(DomainPattern::parse("https://x.com").is_err());
        assert!(DomainPattern::parse("x.com:443").is_err());
        assert!(DomainPattern::parse("a..b").is_err());
    }

    #[test]
    fn star_matches_every_host() {
        let every = DomainPattern::parse("*").unwrap();
        assert!(every.matches("example.com"));
        assert!(every.matches("a.b.example.com"));
        assert!(every.matches("localhost"));
    }

    #[test]
    fn hosts() {
        assert_eq!(url_host("https://Docs.RS/x").as_deref(), Some("docs.rs"));
        assert_eq!(
            url_host("https://example.com./").as_deref(),
            Some("example.com")
        );
        assert_eq!(
            url_host("https://user:pw@good.com@evil.com/").as_deref(),
            Some("evil.com")
        );
        assert_eq!(url_host("http://[::1]:8080/").as_deref(), Some("[::1]"));
        assert_eq!(url_host("not a url"), None);
        assert_eq!(
            url_host("https://bücher.de/").as_deref(),
            Some("xn--bcher-kva.de")
        );
        let p = DomainPattern::parse("bücher.de").unwrap();
        assert!(p.matches("xn--bcher-kva.de"));
    }
}
