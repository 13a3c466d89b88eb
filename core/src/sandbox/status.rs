//! [`SandboxStatus`]: what a host shows about the sandbox — whether it is on and working, with
//! which backend, what it confines, and which guarantees hold on this machine.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::policy::NetworkPolicy;

/// Which protections hold for sandboxed commands with the active backend. Each is a promise the
/// backend keeps on this machine, not a setting.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SandboxGuarantees {
    /// Writes outside the writable roots fail, through symlinks, `/proc/<pid>/…` and in every
    /// child and grandchild process.
    pub writes_confined: bool,
    /// The protected paths inside the writable roots (`.git/hooks`, `.claude`, settings, hook
    /// scripts, `denyWrite`) cannot be written (those that exist when the command starts).
    pub protected_paths_read_only: bool,
    /// `denyRead` paths cannot be read.
    pub read_deny_enforced: bool,
    /// With network off: no TCP, UDP or raw connection leaves the sandbox.
    pub network_blocked: bool,
    /// With an allow-list: only the proxy is reachable, so only allowed domains are.
    pub network_allow_list_enforced: bool,
    /// Unix sockets cannot be created (unless allowed by the settings).
    pub unix_sockets_blocked: bool,
    /// Processes outside the sandbox cannot be signalled or traced.
    pub signals_confined: bool,
    /// The command sees only its own processes (a PID namespace).
    pub process_isolation: bool,
}

/// The sandbox of a session as a host sees it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SandboxStatus {
    /// The sandbox is switched on (settings, session option or the bypassPermissions default).
    pub enabled: bool,
    /// It is enabled and works here: Bash commands run inside it.
    pub active: bool,
    /// `landlock`, `bwrap` or `seatbelt`, when one works.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backend: Option<String>,
    /// The backend asked for: `auto`, `landlock` or `bwrap`.
    pub requested_backend: String,
    /// Why the sandbox is off or not working, when it is not active.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The operating system.
    pub platform: String,
    /// The Landlock ABI of the kernel (Linux), 0 when unsupported.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub landlock_abi: Option<u32>,
    /// `failIfUnavailable`.
    pub fail_if_unavailable: bool,
    /// `autoAllowBashIfSandboxed`.
    pub auto_allow_bash: bool,
    /// `allowUnsandboxedCommands`.
    pub allow_unsandboxed_commands: bool,
    /// `excludedCommands`.
    pub excluded_commands: Vec<String>,
    /// `hooks`: command hooks run sandboxed too.
    pub hooks: bool,
    /// Where sandboxed commands may write.
    pub writable_roots: Vec<PathBuf>,
    /// Paths kept read-only inside the writable roots.
    pub protected_paths: Vec<PathBuf>,
    /// Paths sandboxed commands may not read.
    pub read_denied: Vec<PathBuf>,
    /// `TMPDIR` of sandboxed commands.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temp_dir: Option<PathBuf>,
    /// Network access.
    pub network: NetworkPolicy,
    /// Listening on local ports is allowed.
    pub allow_local_binding: bool,
    /// Unix sockets are allowed.
    pub allow_unix_sockets: bool,
    /// The port of robota's HTTP proxy on 127.0.0.1, once started (allow-list only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub proxy_port: Option<u16>,
    /// What holds with the active backend.
    pub guarantees: SandboxGuarantees,
}
