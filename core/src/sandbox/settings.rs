//! The `sandbox` settings object (Claude Code's names, camelCase in settings.json) as plain data.
//!
//! Reading it from settings files (validation, merging of the layers, path expansion) is the
//! settings module's job; this type is what comes out of it and what a host may also build in
//! code.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// Which mechanism confines sandboxed commands.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BackendChoice {
    /// bubblewrap when it is installed and works on this machine, else Landlock (Linux);
    /// Seatbelt on macOS.
    #[default]
    Auto,
    /// Landlock + seccomp, applied to the command's process itself (Linux ≥ 5.13).
    Landlock,
    /// bubblewrap (`bwrap`): mount and network namespaces around the command.
    Bwrap,
}

impl BackendChoice {
    /// The settings name: `auto`, `landlock` or `bwrap`.
    pub fn as_str(self) -> &'static str {
        match self {
            BackendChoice::Auto => "auto",
            BackendChoice::Landlock => "landlock",
            BackendChoice::Bwrap => "bwrap",
        }
    }

    /// Parses a settings name.
    pub fn parse(name: &str) -> Option<BackendChoice> {
        match name {
            "auto" => Some(BackendChoice::Auto),
            "landlock" => Some(BackendChoice::Landlock),
            "bwrap" | "bubblewrap" => Some(BackendChoice::Bwrap),
            _ => None,
        }
    }
}

/// `sandbox.network`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
#[non_exhaustive]
pub struct SandboxNetworkSettings {
    /// Domains sandboxed commands may reach through robota's HTTP/HTTPS proxy (`example.com`,
    /// `*.example.com` for its subdomains, an IP address). Empty: no network. `*` alone: all
    /// network, unrestricted (a robota addition).
    pub allowed_domains: Vec<String>,
    /// Whether sandboxed commands may listen on local TCP ports.
    pub allow_local_binding: bool,
    /// Unix socket paths sandboxed commands may use. On Linux a socket cannot be allowed by path:
    /// any entry here allows every Unix socket (as `allowAllUnixSockets`).
    pub allow_unix_sockets: Vec<String>,
    /// Whether sandboxed commands may create Unix sockets at all (off: `socket(AF_UNIX)` fails;
    /// `socketpair` still works).
    pub allow_all_unix_sockets: bool,
}

/// `sandbox.filesystem`. Paths are absolute once the settings module has expanded them (`~/`
/// against the home directory, relative paths against the project directory).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
#[non_exhaustive]
pub struct SandboxFilesystemSettings {
    /// More writable directories or files.
    pub allow_write: Vec<PathBuf>,
    /// Paths that stay read-only even inside a writable directory.
    pub deny_write: Vec<PathBuf>,
    /// Paths sandboxed commands may not read (enforced by bubblewrap only).
    pub deny_read: Vec<PathBuf>,
    /// Paths inside a `denyRead` path that may be read after all.
    pub allow_read: Vec<PathBuf>,
}

/// The `sandbox` settings object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
#[non_exhaustive]
pub struct SandboxSettings {
    /// `enabled`. `None`: on in `bypassPermissions` sessions, off in the other modes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// `failIfUnavailable`: when the sandbox is enabled but cannot work on this machine, Bash
    /// refuses to run commands instead of running them unsandboxed.
    pub fail_if_unavailable: bool,
    /// `autoAllowBashIfSandboxed` (default true): a sandboxed command that no rule decides is
    /// approved without a prompt.
    pub auto_allow_bash_if_sandboxed: bool,
    /// `excludedCommands`: Bash rule patterns (`docker:*`, `git push *`) of commands that run
    /// outside the sandbox.
    pub excluded_commands: Vec<String>,
    /// `allowUnsandboxedCommands` (default true): a call may ask to run outside the sandbox with
    /// `dangerouslyDisableSandbox: true`; it then needs approval in every mode (`bypassPermissions`
    /// included). Off: the request is ignored and the command runs sandboxed.
    pub allow_unsandboxed_commands: bool,
    /// `network`.
    pub network: SandboxNetworkSettings,
    /// `filesystem`.
    pub filesystem: SandboxFilesystemSettings,
    /// `hooks` (robota): run `command` hooks in the sandbox too. Off by default.
    pub hooks: bool,
    /// `backend` (robota): `auto`, `landlock` or `bwrap`.
    pub backend: BackendChoice,
    /// `bwrapPath` (robota): the bubblewrap binary; default `bwrap` from `PATH`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bwrap_path: Option<PathBuf>,
}

impl Default for SandboxSettings {
    fn default() -> Self {
        SandboxSettings {
            enabled: None,
            fail_if_unavailable: false,
            auto_allow_bash_if_sandboxed: true,
            excluded_commands: Vec::new(),
            allow_unsandboxed_commands: true,
            network: SandboxNetworkSettings::default(),
            filesystem: SandboxFilesystemSettings::default(),
            hooks: false,
            backend: BackendChoice::Auto,
            bwrap_path: None,
        }
    }
}

impl SandboxSettings {
    /// Whether the sandbox is on for a session whose permission mode is or is not
    /// `bypassPermissions`, given an explicit session option (which wins over the setting).
    ///
    /// Default: on in `bypassPermissions` (nothing is approved one by one there, so the sandbox
    /// is the only fence), off elsewhere (commands are approved one by one, and common approved
    /// commands — package installs, builds writing caches under `~` — need the network or writes
    /// outside the workspace).
    pub fn enabled_for(&self, option: Option<bool>, bypass_permissions: bool) -> bool {
        option.or(self.enabled).unwrap_or(bypass_permissions)
    }

    /// Whether the on/off state follows the permission mode (neither the option nor the setting
    /// says).
    pub fn follows_mode(&self, option: Option<bool>) -> bool {
        option.or(self.enabled).is_none()
    }
}
