//! Telling the model (and the user) when a sandboxed command failed because of the sandbox:
//! what was blocked and which setting changes it. Detected from the command's error output,
//! since the kernel's refusals look like any other `EACCES`/`EPERM`/`EROFS`.

use super::policy::{NetworkPolicy, SandboxPolicy, PROTECTED_NAMES};

const FILE_PATTERNS: &[&str] = &[
    "read-only file system",
    "permission denied",
    "operation not permitted",
    "eacces",
    "eperm",
    "erofs",
];

const NETWORK_PATTERNS: &[&str] = &[
    "network is unreachable",
    "could not resolve",
    "temporary failure in name resolution",
    "name or service not known",
    "nodename nor servname",
    "address family not supported",
    "robota sandbox: network access",
    "x-robota-sandbox",
    "failed to connect",
    "could not connect",
    "connection refused",
    "couldn't connect",
];

/// A note to append to a sandboxed command's output when its error output shows a refusal the
/// sandbox likely caused; `None` when nothing points at the sandbox.
pub(crate) fn explain(
    policy: &SandboxPolicy,
    backend: &str,
    allow_unsandboxed: bool,
    output: &str,
) -> Option<String> {
    let lower = output.to_ascii_lowercase();
    let network_hit = policy.network != NetworkPolicy::All
        && NETWORK_PATTERNS.iter().any(|p| lower.contains(p))
        || (lower.contains("socket") || lower.contains("connect"))
            && (lower.contains("operation not permitted") || lower.contains("permission denied"))
            && policy.network != NetworkPolicy::All;
    let file_hit = FILE_PATTERNS.iter().any(|p| lower.contains(p));
    if !network_hit && !file_hit {
        return None;
    }
    let mut note = format!(
        "[sandbox] This command ran inside robota's OS sandbox ({backend}); the error above \
         looks like the sandbox blocked it."
    );
    if file_hit && !network_hit {
        let protected = policy
            .protected_paths
            .iter()
            .any(|p| output.contains(&*p.to_string_lossy()))
            || PROTECTED_NAMES
                .iter()
                .any(|name| output.contains(&format!("/{name}")) || output.contains(name));
        if protected {
            note.push_str(
                " It may not write to protected paths inside the workspace (.git/hooks, \
                 .git/config, .claude, .robota, .vscode, .idea, .husky, shell start-up files, \
                 settings files and hook scripts).",
            );
        }
        let roots: Vec<String> = policy
            .writable_roots
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        note.push_str(&format!(
            " Sandboxed commands may write only in: {}. To allow another directory, add it to \
             `sandbox.filesystem.allowWrite` in settings.json.",
            roots.join(", ")
        ));
    }
    if network_hit {
        match &policy.network {
            NetworkPolicy::None => note.push_str(
                " Network access is off for sandboxed commands. To allow a domain, add it to \
                 `sandbox.network.allowedDomains` in settings.json.",
            ),
            NetworkPolicy::AllowList { domains } => note.push_str(&format!(
                " Sandboxed commands may reach only these domains, through robota's HTTP proxy: \
                 {}. To allow another, add it to `sandbox.network.allowedDomains` in \
                 settings.json.",
                domains.join(", ")
            )),
            NetworkPolicy::All => {}
        }
    }
    if allow_unsandboxed {
        note.push_str(
            " If the command must run outside the sandbox, call Bash again with \
             `dangerouslyDisableSandbox: true` (it then needs approval), or add it to \
             `sandbox.excludedCommands`.",
        );
    } else {
        note.push_str(
            " Running outside the sandbox is disabled (`sandbox.allowUnsandboxedCommands: \
             false`); a command listed in `sandbox.excludedCommands` runs unsandboxed.",
        );
    }
    Some(note)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(network: NetworkPolicy) -> SandboxPolicy {
        SandboxPolicy {
            writable_roots: vec!["/w".into()],
            protected_paths: vec!["/w/.git/hooks".into()],
            network,
            ..SandboxPolicy::default()
        }
    }

    #[test]
    fn notes_say_what_and_how() {
        let p = policy(NetworkPolicy::None);
        assert_eq!(explain(&p, "bwrap", true, "hello\n"), None);
        let note = explain(
            &p,
            "bwrap",
            true,
            "sh: 1: cannot create /etc/x: Read-only file system",
        )
        .unwrap_or_default();
        assert!(note.contains("sandbox.filesystem.allowWrite"), "{note}");
        assert!(note.contains("/w"), "{note}");
        assert!(note.contains("dangerouslyDisableSandbox"), "{note}");
        let note = explain(
            &p,
            "landlock",
            false,
            "curl: (7) Failed to connect to x port 80",
        )
        .unwrap_or_default();
        assert!(note.contains("sandbox.network.allowedDomains"), "{note}");
        assert!(!note.contains("dangerouslyDisableSandbox: true`"), "{note}");
        let note = explain(
            &p,
            "bwrap",
            true,
            "cannot create /w/.git/hooks/pre-commit: Read-only file system",
        )
        .unwrap_or_default();
        assert!(note.contains("protected paths"), "{note}");
    }
}
