//! The OS sandbox Bash commands (and, when configured, hook commands) run in: pure policy in,
//! process setup out.
//!
//! A permission-classification mistake must not be able to write outside the workspace or reach
//! the network. The permission engine decides *whether* a command runs; the sandbox limits what
//! it can do once it runs, enforced by the kernel for the command and every process it starts.
//!
//! - [`SandboxSettings`] — Claude Code's `sandbox` settings object (plus robota's `hooks`,
//!   `backend`, `bwrapPath`), plain data.
//! - [`SandboxPolicy`] — what a sandboxed command may do: writable roots, protected paths inside
//!   them, read-denied paths, network (none / allow-list through a proxy / all), local binding,
//!   Unix sockets.
//! - [`runs_sandboxed`] — the pure decision whether one call runs sandboxed (`excludedCommands`,
//!   `dangerouslyDisableSandbox`, `allowUnsandboxedCommands`), shared with the permission engine.
//! - [`Sandbox`] — a session's sandbox: the resolved state, the backend (probed once), the
//!   per-session temp dir, the allow-list proxy, and [`Sandbox::command`], which turns a program
//!   and its arguments into a ready-to-spawn process under the policy.
//! - [`SandboxStatus`] — what hosts show, including which guarantees hold.
//!
//! # Backends and what each guarantees
//!
//! | | Landlock (+ seccomp) | bubblewrap (+ seccomp) | Seatbelt (macOS) |
//! |---|---|---|---|
//! | writes only in the writable roots (symlinks, `/proc`, children included) | yes | yes | yes (untested here) |
//! | protected paths inside the roots read-only | **no** (Landlock cannot carve exceptions out of a granted directory) | yes, for paths that exist when the command starts | yes |
//! | `denyRead` | **no** | yes, for paths that exist | yes |
//! | network off | yes: TCP by Landlock (ABI ≥ 4), UDP/raw/other families by seccomp; on ABI < 4 seccomp refuses internet sockets | yes: the same Landlock + seccomp rules (ABI ≥ 4), else an empty network namespace | yes |
//! | allow-list (proxy only) | yes on ABI ≥ 4 (TCP connect only to the proxy's port) | yes on ABI ≥ 4 (same, Landlock inside bwrap's setup) | yes |
//! | Unix sockets refused unless allowed | yes (seccomp `socket(AF_UNIX)`; abstract sockets also scoped on ABI ≥ 6) | yes (seccomp) | yes |
//! | signals/ptrace to outside processes | refused on ABI ≥ 6 (Landlock scopes; ptrace always) | refused (PID namespace) | refused |
//! | own PID namespace (even processes that left the command's group, `setsid`, end with it) | no | yes | no |
//!
//! With `auto`, bubblewrap is used when it is installed and its self-test passes (it needs user
//! namespaces, which some containers disable); otherwise Landlock. Every sandboxed command also
//! starts in a new session (no controlling terminal to inject keystrokes into), with
//! `no_new_privs` (setuid binaries do not gain privileges), and cannot use io_uring.
//!
//! # Layering
//!
//! This module sits below `hooks` (command hooks run in it) and above `message`; it depends on
//! no other module of the crate.

mod decision;
mod explain;
mod policy;
mod proxy;
mod seatbelt;
mod settings;
mod status;

#[cfg(unix)]
mod bwrap;
#[cfg(target_os = "linux")]
mod linux;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};

pub use decision::{is_excluded, runs_sandboxed, SandboxRules};
pub use policy::{NetworkPolicy, PolicyInputs, SandboxPolicy, PROTECTED_NAMES};
pub use proxy::DomainAllowList;
pub use seatbelt::{seatbelt_profile, SANDBOX_EXEC};
pub use settings::{
    BackendChoice, SandboxFilesystemSettings, SandboxNetworkSettings, SandboxSettings,
};
pub use status::{SandboxGuarantees, SandboxStatus};

/// Why a command could not be put in the sandbox.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SandboxError {
    /// No backend works on this machine.
    #[error("the OS sandbox is unavailable: {reason}")]
    Unavailable {
        /// Why, and what to do about it.
        reason: String,
    },
    /// The backend works but preparing this command failed.
    #[error("setting up the OS sandbox failed: {message}")]
    Setup {
        /// What failed.
        message: String,
    },
}

/// Where one command runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Placement {
    /// Inside the sandbox.
    Sandboxed,
    /// Outside: the sandbox is off, the command is excluded, the call asked for it, or the
    /// sandbox is unavailable and `failIfUnavailable` is off.
    Unsandboxed,
    /// Not at all: the sandbox is enabled, unavailable, and `failIfUnavailable` is on.
    Refused {
        /// What to tell the model and the user.
        message: String,
    },
}

/// The mechanism that works on this machine.
#[derive(Debug, Clone)]
enum Backend {
    #[cfg(target_os = "linux")]
    Landlock { abi: u32 },
    #[cfg(target_os = "linux")]
    Bwrap { path: PathBuf, abi: u32 },
    #[cfg(target_os = "macos")]
    Seatbelt,
}

impl Backend {
    fn name(&self) -> &'static str {
        match *self {
            #[cfg(target_os = "linux")]
            Backend::Landlock { .. } => "landlock",
            #[cfg(target_os = "linux")]
            Backend::Bwrap { .. } => "bwrap",
            #[cfg(target_os = "macos")]
            Backend::Seatbelt => "seatbelt",
        }
    }
}

/// A directory removed when the sandbox is dropped.
#[derive(Debug)]
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// What is prepared the first time the sandbox is needed.
struct Prepared {
    policy: SandboxPolicy,
    _temp: Option<TempDir>,
    backend: Result<Backend, String>,
}

/// A session's OS sandbox. Cheap to query; the backend is probed and the temp dir created the
/// first time the sandbox is enabled and needed.
pub struct Sandbox {
    settings: SandboxSettings,
    option: Option<bool>,
    enabled: AtomicBool,
    inputs: PolicyInputs,
    prepared: OnceLock<Prepared>,
    proxy: Mutex<Option<proxy::Proxy>>,
}

impl std::fmt::Debug for Sandbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sandbox")
            .field("enabled", &self.is_enabled())
            .field("settings", &self.settings)
            .finish()
    }
}

impl Sandbox {
    /// The sandbox for a session: `option` is the session's explicit on/off (wins over the
    /// setting), `bypass_permissions` whether the session starts in that mode (the default turns
    /// the sandbox on there), `inputs` the session's directories.
    pub fn new(
        settings: SandboxSettings,
        option: Option<bool>,
        bypass_permissions: bool,
        inputs: PolicyInputs,
    ) -> Sandbox {
        let enabled = settings.enabled_for(option, bypass_permissions);
        Sandbox {
            settings,
            option,
            enabled: AtomicBool::new(enabled),
            inputs,
            prepared: OnceLock::new(),
            proxy: Mutex::new(None),
        }
    }

    /// A sandbox that is off.
    pub fn disabled() -> Sandbox {
        let settings = SandboxSettings {
            enabled: Some(false),
            ..SandboxSettings::default()
        };
        Sandbox::new(settings, Some(false), false, PolicyInputs::default())
    }

    /// The settings it was made from.
    pub fn settings(&self) -> &SandboxSettings {
        &self.settings
    }

    /// Whether the sandbox is switched on (it may still be unavailable).
    pub fn is_enabled(&self) -> bool {
        self.enabled.load(Ordering::Acquire)
    }

    /// Whether commands run inside it: enabled and a backend works here.
    pub fn is_active(&self) -> bool {
        self.is_enabled() && self.prepared().backend.is_ok()
    }

    /// Follows a permission-mode change when neither the option nor the settings fixed the
    /// on/off state (on in `bypassPermissions`, off otherwise). Returns whether it is enabled.
    pub fn on_permission_mode(&self, bypass_permissions: bool) -> bool {
        if self.settings.follows_mode(self.option) {
            self.enabled.store(bypass_permissions, Ordering::Release);
        }
        self.is_enabled()
    }

    /// The rules [`runs_sandboxed`] needs, for this sandbox's current state.
    pub fn rules(&self) -> SandboxRules<'_> {
        SandboxRules {
            active: self.is_active(),
            excluded_commands: &self.settings.excluded_commands,
            allow_unsandboxed: self.settings.allow_unsandboxed_commands,
        }
    }

    /// Where `command` runs, given the call's `dangerouslyDisableSandbox`.
    pub fn placement(&self, command: &str, disable_requested: bool) -> Placement {
        if !self.is_enabled() {
            return Placement::Unsandboxed;
        }
        let rules = SandboxRules {
            active: true,
            ..self.rules()
        };
        if !runs_sandboxed(command, disable_requested, rules) {
            return Placement::Unsandboxed;
        }
        match &self.prepared().backend {
            Ok(_) => Placement::Sandboxed,
            Err(reason) if self.settings.fail_if_unavailable => Placement::Refused {
                message: format!(
                    "The command was not run: the OS sandbox is enabled but unavailable ({reason}) \
                     and `sandbox.failIfUnavailable` is true. Fix the sandbox, or set \
                     `sandbox.failIfUnavailable: false` to run commands unsandboxed when it is \
                     unavailable."
                ),
            },
            Err(_) => Placement::Unsandboxed,
        }
    }

    /// The policy (preparing the sandbox if needed).
    pub fn policy(&self) -> &SandboxPolicy {
        &self.prepared().policy
    }

    /// The temp dir, policy and probed backend, made on first use. Callers on hot paths only
    /// get here while the sandbox is enabled.
    fn prepared(&self) -> &Prepared {
        // Prepared in full even while the sandbox is off (a host asked for the policy), so that
        // turning it on later (a switch to bypassPermissions) finds a working backend.
        self.prepared.get_or_init(|| {
            let temp = create_temp_dir();
            let mut inputs = self.inputs.clone();
            inputs.temp_dir = temp.as_ref().ok().map(|t| t.0.clone());
            let policy = SandboxPolicy::build(&inputs, &self.settings);
            let backend = match &temp {
                Ok(_) => probe_backend(&self.settings, &policy),
                Err(e) => Err(e.clone()),
            };
            Prepared {
                policy,
                _temp: temp.ok(),
                backend,
            }
        })
    }

    /// The port of the allow-list proxy, started on first use.
    fn proxy_port(&self) -> Result<Option<u16>, SandboxError> {
        let NetworkPolicy::AllowList { domains } = &self.policy().network else {
            return Ok(None);
        };
        let mut proxy = self.proxy.lock().unwrap_or_else(PoisonError::into_inner);
        if proxy.is_none() {
            *proxy = Some(
                proxy::Proxy::start(domains).map_err(|message| SandboxError::Setup { message })?,
            );
        }
        Ok(proxy.as_ref().map(proxy::Proxy::port))
    }

    /// The environment sandboxed commands get: `TMPDIR`, and the proxy variables with an
    /// allow-list.
    fn environment(&self, proxy_port: Option<u16>) -> Vec<(String, String)> {
        let mut env = Vec::new();
        if let Some(temp) = &self.policy().temp_dir {
            env.push(("TMPDIR".to_string(), temp.display().to_string()));
        }
        if let Some(port) = proxy_port {
            let url = format!("http://127.0.0.1:{port}");
            for name in ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"] {
                env.push((name.to_string(), url.clone()));
                env.push((name.to_ascii_lowercase(), url.clone()));
            }
            env.push(("NO_PROXY".into(), String::new()));
            env.push(("no_proxy".into(), String::new()));
        }
        env
    }

    /// `program args…` as a process confined by the sandbox, with `cwd` as its working
    /// directory. The caller adds stdio and its own environment, and must not put the child in a
    /// process group itself: the sandbox starts it in a new session, whose id is the child's
    /// pid, so signalling that group reaches the whole tree.
    pub fn command(
        &self,
        program: &Path,
        args: &[OsString],
        cwd: &Path,
    ) -> Result<tokio::process::Command, SandboxError> {
        let backend = self
            .prepared()
            .backend
            .clone()
            .map_err(|reason| SandboxError::Unavailable { reason })?;
        let proxy_port = self.proxy_port()?;
        let adjusted = self.policy().for_cwd(cwd);
        let policy = adjusted.as_ref().unwrap_or(self.policy());
        let mut cmd = platform_command(&backend, policy, program, args, cwd, proxy_port)?;
        cmd.current_dir(cwd);
        for (key, value) in self.environment(proxy_port) {
            cmd.env(key, value);
        }
        Ok(cmd)
    }

    /// A note for a sandboxed command's output when its error output looks like the sandbox
    /// refused something: what was blocked and which setting changes it.
    pub fn explain_failure(&self, output: &str) -> Option<String> {
        let backend = self.prepared().backend.as_ref().ok()?;
        explain::explain(
            self.policy(),
            backend.name(),
            self.settings.allow_unsandboxed_commands,
            output,
        )
    }

    /// What the model should know about the sandbox, for the Bash tool's description; `None`
    /// when commands do not run sandboxed.
    pub fn tool_note(&self) -> Option<String> {
        if !self.is_active() {
            return None;
        }
        let policy = self.policy();
        let roots: Vec<String> = policy
            .writable_roots
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        let network = match &policy.network {
            NetworkPolicy::None => "no network access".to_string(),
            NetworkPolicy::AllowList { domains } => format!(
                "network only to {} (through an HTTP proxy set in HTTP_PROXY/HTTPS_PROXY)",
                domains.join(", ")
            ),
            NetworkPolicy::All => "unrestricted network".to_string(),
        };
        let mut note = format!(
            "- Commands run in an OS sandbox: they may write only in {} (TMPDIR is a private \
             temp directory); .git/hooks, .git/config, .claude, .robota, editor and shell \
             configuration stay read-only; {network}.",
            roots.join(", ")
        );
        if self.settings.allow_unsandboxed_commands {
            note.push_str(
                " If a command fails because of the sandbox and must run outside it, pass \
                 `dangerouslyDisableSandbox: true` (the user will be asked).",
            );
        }
        Some(note)
    }

    /// The status a host shows.
    pub fn status(&self) -> SandboxStatus {
        let enabled = self.is_enabled();
        let mut status = SandboxStatus {
            enabled,
            requested_backend: self.settings.backend.as_str().to_string(),
            platform: std::env::consts::OS.to_string(),
            fail_if_unavailable: self.settings.fail_if_unavailable,
            auto_allow_bash: self.settings.auto_allow_bash_if_sandboxed,
            allow_unsandboxed_commands: self.settings.allow_unsandboxed_commands,
            excluded_commands: self.settings.excluded_commands.clone(),
            hooks: self.settings.hooks,
            ..SandboxStatus::default()
        };
        #[cfg(target_os = "linux")]
        {
            status.landlock_abi = Some(linux::landlock_abi());
        }
        if !enabled {
            status.reason = Some(if self.settings.follows_mode(self.option) {
                "the sandbox is off: by default it is on only in bypassPermissions sessions; set \
                 `sandbox.enabled: true` to turn it on"
                    .to_string()
            } else {
                "the sandbox is turned off (`sandbox.enabled: false` or the session option)"
                    .to_string()
            });
            return status;
        }
        let prepared = self.prepared();
        let policy = &prepared.policy;
        status.writable_roots = policy.writable_roots.clone();
        status.protected_paths = policy.protected_paths.clone();
        status.read_denied = policy.read_denied.clone();
        status.temp_dir = policy.temp_dir.clone();
        status.network = policy.network.clone();
        status.allow_local_binding = policy.allow_local_binding;
        status.allow_unix_sockets = policy.allow_unix_sockets;
        status.proxy_port = self
            .proxy
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .map(proxy::Proxy::port);
        match &prepared.backend {
            Ok(backend) => {
                status.active = true;
                status.backend = Some(backend.name().to_string());
                status.guarantees = guarantees(backend, policy);
            }
            Err(reason) => status.reason = Some(reason.clone()),
        }
        status
    }
}

fn create_temp_dir() -> Result<TempDir, String> {
    let path = std::env::temp_dir().join(format!("robota-sandbox-{}", uuid::Uuid::new_v4()));
    let mut builder = std::fs::DirBuilder::new();
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(&path).map_err(|e| {
        format!(
            "cannot create the sandbox's temp directory {}: {e}",
            path.display()
        )
    })?;
    Ok(TempDir(path))
}

/// Which backend works here for `settings`, or why none does.
#[allow(unused_variables)]
fn probe_backend(settings: &SandboxSettings, policy: &SandboxPolicy) -> Result<Backend, String> {
    #[cfg(target_os = "linux")]
    {
        let abi = linux::landlock_abi();
        let bwrap = || -> Result<Backend, String> {
            let path = bwrap::locate(settings.bwrap_path.as_deref())?;
            bwrap::probe(&path, policy.network == NetworkPolicy::None && abi < 4)?;
            Ok(Backend::Bwrap { path, abi })
        };
        let landlock = || -> Result<Backend, String> {
            if abi == 0 {
                return Err(
                    "the kernel does not support Landlock (Linux 5.13 or later with \
                            Landlock enabled is needed); install bubblewrap instead"
                        .into(),
                );
            }
            if !linux::seccomp_supported() {
                return Err("seccomp filters are not built for this CPU architecture".into());
            }
            let backend = Backend::Landlock { abi };
            probe_spawn(&backend, policy)?;
            Ok(backend)
        };
        match settings.backend {
            BackendChoice::Bwrap => bwrap(),
            BackendChoice::Landlock => landlock(),
            BackendChoice::Auto => bwrap().or_else(|bwrap_err| {
                landlock().map_err(|landlock_err| {
                    format!("bubblewrap: {bwrap_err}; Landlock: {landlock_err}")
                })
            }),
        }
    }
    #[cfg(target_os = "macos")]
    {
        if Path::new(seatbelt::SANDBOX_EXEC).exists() {
            Ok(Backend::Seatbelt)
        } else {
            Err(format!("{} is missing", seatbelt::SANDBOX_EXEC))
        }
    }
    #[cfg(not(any(target_os = "linux", target_os = "macos")))]
    {
        Err(format!(
            "no OS sandbox is implemented for {} (Linux: Landlock or bubblewrap; macOS: Seatbelt)",
            std::env::consts::OS
        ))
    }
}

/// Runs `true` under the Landlock backend to check the kernel accepts the setup.
#[cfg(target_os = "linux")]
fn probe_spawn(backend: &Backend, policy: &SandboxPolicy) -> Result<(), String> {
    let mut cmd = platform_command(
        backend,
        policy,
        Path::new("/bin/sh"),
        &["-c".into(), "true".into()],
        Path::new("/"),
        None,
    )
    .map_err(|e| e.to_string())?;
    let mut std_cmd = cmd.as_std_mut();
    std_cmd = std_cmd
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let status = std_cmd
        .status()
        .map_err(|e| format!("the Landlock self-test could not start: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("the Landlock self-test failed ({status})"))
    }
}

/// Builds the confined process for the backend.
#[allow(unused_variables)]
fn platform_command(
    backend: &Backend,
    policy: &SandboxPolicy,
    program: &Path,
    args: &[OsString],
    cwd: &Path,
    proxy_port: Option<u16>,
) -> Result<tokio::process::Command, SandboxError> {
    #[cfg(target_os = "linux")]
    {
        let network_off = policy.network == NetworkPolicy::None;
        let restrict_network = policy.network != NetworkPolicy::All;
        let (mut cmd, setup) = match backend {
            Backend::Landlock { abi } => {
                let landlock = linux::landlock_ruleset(&linux::LandlockRequest {
                    policy,
                    filesystem: true,
                    proxy_port,
                    scopes: true,
                })?;
                let seccomp = linux::seccomp_program(linux::SeccompRequest {
                    block_non_tcp: restrict_network,
                    block_inet: network_off && *abi < 4,
                    block_unix: !policy.allow_unix_sockets,
                })?;
                let mut cmd = tokio::process::Command::new(program);
                cmd.args(args);
                let setup = linux::ChildSetup {
                    landlock,
                    seccomp: Some(seccomp),
                    inherit: None,
                };
                (cmd, setup)
            }
            Backend::Bwrap { path, abi } => {
                // Network limits come from Landlock when the kernel has TCP rules (a new network
                // namespace costs several milliseconds per command); an empty network namespace
                // on older kernels.
                let landlock_network = restrict_network && *abi >= 4;
                let landlock = if landlock_network {
                    linux::landlock_ruleset(&linux::LandlockRequest {
                        policy,
                        filesystem: false,
                        proxy_port,
                        scopes: false,
                    })?
                } else {
                    None
                };
                let program_bpf = linux::seccomp_program(linux::SeccompRequest {
                    block_non_tcp: restrict_network,
                    block_inet: false,
                    block_unix: !policy.allow_unix_sockets,
                })?;
                let memfd = linux::seccomp_memfd(&program_bpf)?;
                let bwrap_args = bwrap::bwrap_args(
                    policy,
                    &bwrap::BwrapOptions {
                        cwd,
                        unshare_net: network_off && !landlock_network,
                        seccomp_fd: Some(std::os::fd::AsRawFd::as_raw_fd(&memfd)),
                    },
                );
                let mut cmd = tokio::process::Command::new(path);
                cmd.args(bwrap_args).arg(program).args(args);
                let setup = linux::ChildSetup {
                    landlock,
                    seccomp: None,
                    inherit: Some(memfd),
                };
                (cmd, setup)
            }
        };
        // SAFETY: `ChildSetup::apply` only makes async-signal-safe system calls on data prepared
        // above; it allocates nothing and takes no locks.
        unsafe {
            cmd.pre_exec(move || setup.apply());
        }
        Ok(cmd)
    }
    #[cfg(target_os = "macos")]
    {
        let profile = seatbelt::seatbelt_profile(policy, proxy_port);
        let mut cmd = tokio::process::Command::new(seatbelt::SANDBOX_EXEC);
        cmd.arg("-p").arg(profile).arg("--").arg(program).args(args);
        // SAFETY: setsid(2) is async-signal-safe.
        unsafe {
            cmd.pre_exec(|| {
                if libc::setsid() == -1 && libc::getsid(0) != libc::getpid() {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        Ok(cmd)
    }
    #[cfg(not(any(target_os = "linux", target_os = "macos")))]
    {
        match *backend {}
    }
}

/// The guarantees of `backend` for `policy` on this machine.
fn guarantees(backend: &Backend, policy: &SandboxPolicy) -> SandboxGuarantees {
    let network_off = policy.network == NetworkPolicy::None;
    let allow_list = matches!(policy.network, NetworkPolicy::AllowList { .. });
    match *backend {
        #[cfg(target_os = "linux")]
        Backend::Landlock { abi } => SandboxGuarantees {
            writes_confined: true,
            protected_paths_read_only: false,
            read_deny_enforced: false,
            network_blocked: network_off,
            network_allow_list_enforced: allow_list && abi >= 4,
            unix_sockets_blocked: !policy.allow_unix_sockets,
            signals_confined: abi >= 6,
            process_isolation: false,
        },
        #[cfg(target_os = "linux")]
        Backend::Bwrap { abi, .. } => SandboxGuarantees {
            writes_confined: true,
            protected_paths_read_only: true,
            read_deny_enforced: true,
            network_blocked: network_off,
            network_allow_list_enforced: allow_list && abi >= 4,
            unix_sockets_blocked: !policy.allow_unix_sockets,
            signals_confined: true,
            process_isolation: true,
        },
        #[cfg(target_os = "macos")]
        Backend::Seatbelt => SandboxGuarantees {
            writes_confined: true,
            protected_paths_read_only: true,
            read_deny_enforced: true,
            network_blocked: network_off,
            network_allow_list_enforced: allow_list,
            unix_sockets_blocked: !policy.allow_unix_sockets,
            signals_confined: true,
            process_isolation: false,
        },
    }
}
