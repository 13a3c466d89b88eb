//! The macOS backend: a Seatbelt profile (the language of `sandbox-exec -p`) generated from the
//! same [`SandboxPolicy`]. Deny by default; reads allowed except `denyRead`; writes only in the
//! writable roots (protected paths denied again); network per the policy.
//!
//! Written to the documented profile language but not run by robota's test suite (it needs a
//! Mac); the generated text is unit-tested. Later rules take precedence over earlier ones.

use std::fmt::Write as _;
use std::path::Path;

use super::policy::{NetworkPolicy, SandboxPolicy};

/// The `sandbox-exec` binary.
pub const SANDBOX_EXEC: &str = "/usr/bin/sandbox-exec";

/// A Seatbelt string literal.
fn quote(path: &Path) -> String {
    let text = path.to_string_lossy();
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

/// The profile for `policy`; `proxy_port` is robota's proxy with an allow-list.
pub fn seatbelt_profile(policy: &SandboxPolicy, proxy_port: Option<u16>) -> String {
    let mut p = String::from(
        "(version 1)\n\
         (deny default)\n\
         (allow process-exec)\n\
         (allow process-fork)\n\
         (allow signal (target same-sandbox))\n\
         (allow sysctl-read)\n\
         (allow mach-lookup)\n\
         (allow ipc-posix-shm)\n\
         (allow ipc-posix-sem)\n\
         (allow pseudo-tty)\n\
         (allow file-ioctl (literal \"/dev/tty\") (regex #\"^/dev/ttys[0-9]+$\"))\n\
         (allow file-read*)\n",
    );
    for path in &policy.read_denied {
        let _ = writeln!(p, "(deny file-read* (subpath {}))", quote(path));
    }
    for path in &policy.read_allowed {
        let _ = writeln!(p, "(allow file-read* (subpath {}))", quote(path));
    }
    p.push_str("(allow file-write*\n");
    for root in &policy.writable_roots {
        let _ = writeln!(p, "  (subpath {})", quote(root));
    }
    p.push_str(
        "  (literal \"/dev/null\") (literal \"/dev/zero\") (literal \"/dev/tty\")\n  \
         (regex #\"^/dev/ttys[0-9]+$\"))\n",
    );
    for path in &policy.protected_paths {
        let _ = writeln!(p, "(deny file-write* (subpath {}))", quote(path));
    }
    match &policy.network {
        NetworkPolicy::All => p.push_str("(allow network*)\n"),
        NetworkPolicy::AllowList { .. } => {
            if let Some(port) = proxy_port {
                let _ = writeln!(
                    p,
                    "(allow network-outbound (remote tcp \"localhost:{port}\"))"
                );
            }
        }
        NetworkPolicy::None => {}
    }
    if policy.allow_local_binding && policy.network != NetworkPolicy::All {
        p.push_str(
            "(allow network-bind (local ip \"localhost:*\"))\n\
             (allow network-inbound (local ip \"localhost:*\"))\n\
             (allow network-outbound (remote ip \"localhost:*\"))\n",
        );
    }
    if policy.allow_unix_sockets && policy.network != NetworkPolicy::All {
        p.push_str(
            "(allow network* (remote unix-socket))\n(allow network-bind (local unix-socket))\n",
        );
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profile_text() {
        let policy = SandboxPolicy {
            writable_roots: vec!["/Users/me/proj".into(), "/tmp/x\"y".into()],
            protected_paths: vec!["/Users/me/proj/.git/hooks".into()],
            read_denied: vec!["/Users/me/.ssh".into()],
            network: NetworkPolicy::AllowList {
                domains: vec!["example.com".into()],
            },
            ..SandboxPolicy::default()
        };
        let profile = seatbelt_profile(&policy, Some(4321));
        assert!(profile.starts_with("(version 1)\n(deny default)\n"));
        assert!(profile.contains("(deny file-read* (subpath \"/Users/me/.ssh\"))"));
        assert!(profile.contains("  (subpath \"/Users/me/proj\")\n"));
        assert!(profile.contains("  (subpath \"/tmp/x\\\"y\")\n"));
        assert!(profile.contains("(deny file-write* (subpath \"/Users/me/proj/.git/hooks\"))"));
        assert!(profile.contains("(allow network-outbound (remote tcp \"localhost:4321\"))"));
        assert!(!profile.contains("(allow network*)"));
        let deny_at = profile.find("(deny file-write*").unwrap_or(0);
        let allow_at = profile.find("(allow file-write*").unwrap_or(usize::MAX);
        assert!(
            allow_at < deny_at,
            "protected paths must come after the roots"
        );
    }
}
