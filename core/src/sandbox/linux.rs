//! Linux process setup: a Landlock ruleset, a seccomp filter, and the code that applies them in
//! the child between `fork` and `exec`.
//!
//! Everything that allocates or can fail in interesting ways (opening the writable roots,
//! compiling the BPF program) happens in the parent, before the fork: the child only makes
//! system calls on data prepared for it ([`ChildSetup::apply`]), which keeps it
//! async-signal-safe.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};

use landlock::{
    path_beneath_rules, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, NetPort, Ruleset,
    RulesetAttr, RulesetCreatedAttr, Scope, ABI,
};
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

use super::policy::{NetworkPolicy, SandboxPolicy};
use super::SandboxError;

/// The newest Landlock ABI whose rights robota has reviewed; newer kernels are used at this
/// level (best effort downgrades to what an older kernel has).
const REVIEWED_ABI: ABI = ABI::V6;

/// Devices every command may write to (and `/dev/pts` for terminals).
const WRITABLE_DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
    "/dev/ptmx",
    "/dev/pts",
];

/// The Landlock ABI version of the running kernel (0 when Landlock is unavailable).
pub(crate) fn landlock_abi() -> u32 {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: with a NULL attribute, size 0 and the VERSION flag the call only reports the ABI.
    let version = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    u32::try_from(version).unwrap_or(0)
}

/// What a Landlock ruleset should restrict.
pub(crate) struct LandlockRequest<'a> {
    pub policy: &'a SandboxPolicy,
    /// Restrict writes to the writable roots (the Landlock backend). Off when bubblewrap does
    /// the file system and Landlock only the network.
    pub filesystem: bool,
    /// Port of robota's proxy, the one TCP destination allowed with an allow-list.
    pub proxy_port: Option<u16>,
    /// Scope signals and abstract Unix sockets to the sandbox (ABI ≥ 6).
    pub scopes: bool,
}

/// Builds the ruleset and returns its file descriptor (close-on-exec), to be applied in the
/// child. `Ok(None)` when nothing needs restricting.
pub(crate) fn landlock_ruleset(
    request: &LandlockRequest<'_>,
) -> Result<Option<OwnedFd>, SandboxError> {
    let abi = landlock_abi();
    let policy = request.policy;
    let err = |what: &str, e: &dyn std::fmt::Display| SandboxError::Setup {
        message: format!("Landlock {what}: {e}"),
    };
    let mut ruleset = Ruleset::default().set_compatibility(CompatLevel::BestEffort);
    let mut anything = false;
    if request.filesystem {
        ruleset = ruleset
            .handle_access(AccessFs::from_write(REVIEWED_ABI))
            .map_err(|e| err("file-system rights", &e))?;
        anything = true;
    }
    let restrict_net = abi >= 4 && policy.network != NetworkPolicy::All;
    if restrict_net {
        let mut access: BitFlags<AccessNet> = AccessNet::ConnectTcp.into();
        if !policy.allow_local_binding {
            access |= AccessNet::BindTcp;
        }
        ruleset = ruleset
            .handle_access(access)
            .map_err(|e| err("network rights", &e))?;
        anything = true;
    }
    if request.scopes && abi >= 6 {
        let mut scopes: BitFlags<Scope> = Scope::Signal.into();
        if !policy.allow_unix_sockets {
            scopes |= Scope::AbstractUnixSocket;
        }
        ruleset = ruleset.scope(scopes).map_err(|e| err("scopes", &e))?;
        anything = true;
    }
    if !anything {
        return Ok(None);
    }
    let mut created = ruleset.create().map_err(|e| err("ruleset", &e))?;
    if request.filesystem {
        let write = AccessFs::from_write(REVIEWED_ABI);
        let roots: Vec<&Path> = policy
            .writable_roots
            .iter()
            .map(PathBuf::as_path)
            .chain(
                WRITABLE_DEVICES
                    .iter()
                    .map(Path::new)
                    .filter(|p| p.exists()),
            )
            .collect();
        created = created
            .add_rules(path_beneath_rules(roots, write))
            .map_err(|e| err("writable roots", &e))?;
    }
    if restrict_net {
        if let Some(port) = request.proxy_port {
            created = created
                .add_rule(NetPort::new(port, AccessNet::ConnectTcp))
                .map_err(|e| err("proxy port", &e))?;
        }
    }
    let fd: Option<OwnedFd> = created.into();
    match fd {
        Some(fd) => Ok(Some(fd)),
        None => Err(SandboxError::Unavailable {
            reason: "the kernel does not support Landlock (Linux 5.13 or later with Landlock \
                     enabled is needed)"
                .into(),
        }),
    }
}

/// What the seccomp filter blocks.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SeccompRequest {
    /// Block UDP, raw and other non-TCP internet sockets, and every family but Unix and
    /// internet (netlink, packet, …).
    pub block_non_tcp: bool,
    /// Block internet sockets entirely (no Landlock TCP control and no network namespace).
    pub block_inet: bool,
    /// Block `socket(AF_UNIX, …)`.
    pub block_unix: bool,
}

fn target_arch() -> Option<TargetArch> {
    if cfg!(target_arch = "x86_64") {
        Some(TargetArch::x86_64)
    } else if cfg!(target_arch = "aarch64") {
        Some(TargetArch::aarch64)
    } else if cfg!(target_arch = "riscv64") {
        Some(TargetArch::riscv64)
    } else {
        None
    }
}

/// Whether seccomp filters can be built for this architecture.
pub(crate) fn seccomp_supported() -> bool {
    target_arch().is_some()
}

/// Compiles the filter. `io_uring_setup` is always refused: io_uring creates sockets without the
/// `socket` system call the filter inspects.
pub(crate) fn seccomp_program(request: SeccompRequest) -> Result<BpfProgram, SandboxError> {
    let arch = target_arch().ok_or_else(|| SandboxError::Unavailable {
        reason: "seccomp filters are not built for this CPU architecture".into(),
    })?;
    let cond = |arg: u8, op: SeccompCmpOp, value: u64| {
        SeccompCondition::new(arg, SeccompCmpArgLen::Dword, op, value).map_err(|e| {
            SandboxError::Setup {
                message: format!("seccomp condition: {e}"),
            }
        })
    };
    let rule = |conditions: Vec<SeccompCondition>| {
        SeccompRule::new(conditions).map_err(|e| SandboxError::Setup {
            message: format!("seccomp rule: {e}"),
        })
    };
    let (unix, inet, inet6) = (
        libc::AF_UNIX as u64,
        libc::AF_INET as u64,
        libc::AF_INET6 as u64,
    );
    let mut socket_rules = Vec::new();
    if request.block_non_tcp || request.block_inet {
        socket_rules.push(rule(vec![
            cond(0, SeccompCmpOp::Ne, unix)?,
            cond(0, SeccompCmpOp::Ne, inet)?,
            cond(0, SeccompCmpOp::Ne, inet6)?,
        ])?);
    }
    for family in [inet, inet6] {
        if request.block_inet {
            socket_rules.push(rule(vec![cond(0, SeccompCmpOp::Eq, family)?])?);
        } else if request.block_non_tcp {
            for kind in 2..=15u64 {
                socket_rules.push(rule(vec![
                    cond(0, SeccompCmpOp::Eq, family)?,
                    cond(1, SeccompCmpOp::MaskedEq(0xf), kind)?,
                ])?);
            }
            // A stream socket of another protocol (SCTP, MPTCP) is not TCP to Landlock.
            socket_rules.push(rule(vec![
                cond(0, SeccompCmpOp::Eq, family)?,
                cond(2, SeccompCmpOp::Ne, 0)?,
                cond(2, SeccompCmpOp::Ne, libc::IPPROTO_TCP as u64)?,
            ])?);
        }
    }
    if request.block_unix {
        socket_rules.push(rule(vec![cond(0, SeccompCmpOp::Eq, unix)?])?);
    }
    let mut rules = std::collections::BTreeMap::new();
    if !socket_rules.is_empty() {
        rules.insert(libc::SYS_socket, socket_rules);
    }
    rules.insert(libc::SYS_io_uring_setup, Vec::new());
    if cfg!(target_arch = "x86_64") {
        // The x32 ABI reaches the same calls with this bit set; refuse it outright.
        const X32: i64 = 0x4000_0000;
        rules.insert(X32 | libc::SYS_socket, Vec::new());
        rules.insert(X32 | libc::SYS_io_uring_setup, Vec::new());
    }
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(|e| SandboxError::Setup {
        message: format!("seccomp filter: {e}"),
    })?;
    filter
        .try_into()
        .map_err(|e: seccompiler::BackendError| SandboxError::Setup {
            message: format!("seccomp program: {e}"),
        })
}

/// The program as bytes in a memory file, for `bwrap --seccomp FD`. Close-on-exec until the
/// child clears it.
pub(crate) fn seccomp_memfd(program: &BpfProgram) -> Result<OwnedFd, SandboxError> {
    let setup = |what: &str| SandboxError::Setup {
        message: format!("{what}: {}", std::io::Error::last_os_error()),
    };
    // The system call, not glibc's `memfd_create` wrapper: the wrapper is glibc 2.27's, and the
    // released libraries are linked for glibc 2.17, where a call to it would end the process
    // with "symbol lookup error". The call itself is Linux 3.17's; an older kernel answers ENOSYS.
    // SAFETY: the name is a NUL-terminated literal; the flags are valid.
    let raw = unsafe {
        libc::syscall(
            libc::SYS_memfd_create,
            c"robota-seccomp".as_ptr(),
            libc::MFD_CLOEXEC,
        )
    };
    if raw < 0 {
        return Err(setup("memfd_create"));
    }
    let Ok(raw) = std::os::fd::RawFd::try_from(raw) else {
        return Err(SandboxError::Setup {
            message: format!("memfd_create returned {raw}, not a file descriptor"),
        });
    };
    // SAFETY: `raw` is a new descriptor this function owns.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    let bytes_len = std::mem::size_of_val(program.as_slice());
    // SAFETY: the program is a contiguous slice of plain `sock_filter` structs.
    let bytes = unsafe { std::slice::from_raw_parts(program.as_ptr().cast::<u8>(), bytes_len) };
    let mut file = std::fs::File::from(fd);
    std::io::Write::write_all(&mut file, bytes).map_err(|e| SandboxError::Setup {
        message: format!("writing the seccomp program: {e}"),
    })?;
    std::io::Seek::seek(&mut file, std::io::SeekFrom::Start(0)).map_err(|e| {
        SandboxError::Setup {
            message: format!("rewinding the seccomp program: {e}"),
        }
    })?;
    Ok(OwnedFd::from(file))
}

/// Everything the child applies to itself after `fork`, prepared before it.
#[derive(Default)]
pub(crate) struct ChildSetup {
    /// A Landlock ruleset to restrict the child with.
    pub landlock: Option<OwnedFd>,
    /// A seccomp program to install in the child.
    pub seccomp: Option<BpfProgram>,
    /// A descriptor the executed program must inherit (bubblewrap's `--seccomp`).
    pub inherit: Option<OwnedFd>,
}

impl ChildSetup {
    /// Runs in the child between `fork` and `exec`: a new session (no controlling terminal, its
    /// own process group), `no_new_privs`, then Landlock and seccomp. Only system calls on
    /// prepared data — async-signal-safe.
    pub(crate) fn apply(&self) -> std::io::Result<()> {
        let fail = || Err(std::io::Error::last_os_error());
        // SAFETY: each call is an async-signal-safe system call on memory this struct owns and
        // that stays alive (and unmodified) until exec.
        unsafe {
            if libc::setsid() == -1 && libc::getsid(0) != libc::getpid() {
                return fail();
            }
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
                return fail();
            }
            if let Some(fd) = &self.inherit {
                if libc::fcntl(fd.as_raw_fd(), libc::F_SETFD, 0) == -1 {
                    return fail();
                }
            }
            if let Some(fd) = &self.landlock {
                if libc::syscall(libc::SYS_landlock_restrict_self, fd.as_raw_fd(), 0u32) != 0 {
                    return fail();
                }
            }
            if let Some(program) = &self.seccomp {
                let Ok(len) = u16::try_from(program.len()) else {
                    return Err(std::io::Error::from_raw_os_error(libc::E2BIG));
                };
                let fprog = libc::sock_fprog {
                    len,
                    filter: program.as_ptr().cast_mut().cast::<libc::sock_filter>(),
                };
                const SECCOMP_SET_MODE_FILTER: libc::c_ulong = 1;
                if libc::syscall(
                    libc::SYS_seccomp,
                    SECCOMP_SET_MODE_FILTER,
                    0 as libc::c_ulong,
                    &fprog as *const libc::sock_fprog,
                ) != 0
                {
                    return fail();
                }
            }
        }
        Ok(())
    }
}
