"""The OS sandbox Bash commands run in: :meth:`robota.InteractiveSession.sandbox_status`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, List, Literal, Mapping, Optional

NetworkMode = Literal["none", "allow_list", "all"]


@dataclass(frozen=True)
class SandboxGuarantees:
    """Which protections hold for sandboxed commands with the active backend on this machine."""

    writes_confined: bool = False
    """Writes outside the writable roots fail (symlinks, ``/proc``, child processes included)."""
    protected_paths_read_only: bool = False
    """``.git/hooks``, ``.claude``, settings and hook files inside the roots stay read-only."""
    read_deny_enforced: bool = False
    """``sandbox.filesystem.denyRead`` paths cannot be read."""
    network_blocked: bool = False
    """With network off, no TCP, UDP or raw connection leaves the sandbox."""
    network_allow_list_enforced: bool = False
    """With ``allowedDomains``, only the proxy (so only those domains) is reachable."""
    unix_sockets_blocked: bool = False
    """Unix sockets cannot be created (unless the settings allow them)."""
    signals_confined: bool = False
    """Processes outside the sandbox cannot be signalled."""
    process_isolation: bool = False
    """The command sees only its own processes (a PID namespace)."""

    @classmethod
    def _from_dict(cls, data: Mapping[str, Any]) -> "SandboxGuarantees":
        return cls(**{k: bool(data.get(k, False)) for k in cls.__dataclass_fields__})


@dataclass(frozen=True)
class SandboxNetwork:
    """Network access of sandboxed commands."""

    mode: NetworkMode = "none"
    """``"none"`` (no network), ``"allow_list"`` (only ``domains``, through robota's proxy) or
    ``"all"``."""
    domains: List[str] = field(default_factory=list)
    """The allowed domains when ``mode`` is ``"allow_list"``."""


@dataclass(frozen=True)
class SandboxStatus:
    """Whether the OS sandbox is on and working, with which backend, and what it confines."""

    enabled: bool
    """Switched on (settings, session option, or the bypassPermissions default)."""
    active: bool
    """Enabled *and* working here: Bash commands run inside it."""
    backend: Optional[str]
    """``"landlock"``, ``"bwrap"`` or ``"seatbelt"`` when one works."""
    requested_backend: str
    """``"auto"``, ``"landlock"`` or ``"bwrap"``."""
    reason: Optional[str]
    """Why the sandbox is off or unavailable."""
    platform: str
    """The operating system (``"linux"``, ``"macos"``, …)."""
    writable_roots: List[str]
    """Where sandboxed commands may write."""
    protected_paths: List[str]
    """Paths kept read-only inside the writable roots."""
    read_denied: List[str]
    """Paths sandboxed commands may not read (``sandbox.filesystem.denyRead``)."""
    network: SandboxNetwork
    """What network sandboxed commands reach."""
    guarantees: SandboxGuarantees
    """Which protections actually hold with this backend on this machine."""
    temp_dir: Optional[str] = None
    """``TMPDIR`` of sandboxed commands."""
    proxy_port: Optional[int] = None
    """The port of robota's allow-list proxy on 127.0.0.1, once started."""
    landlock_abi: Optional[int] = None
    """The kernel's Landlock ABI (Linux; 0 when unsupported)."""
    allow_local_binding: bool = False
    """Sandboxed commands may listen on local ports."""
    allow_unix_sockets: bool = False
    """Sandboxed commands may create Unix sockets."""
    fail_if_unavailable: bool = False
    """``failIfUnavailable``: when the sandbox is enabled but cannot work here, Bash refuses to
    run commands instead of running them unsandboxed."""
    auto_allow_bash: bool = True
    """``autoAllowBashIfSandboxed``: a sandboxed command that no rule decides runs without a
    prompt."""
    allow_unsandboxed_commands: bool = True
    """``allowUnsandboxedCommands``: a call may ask to run outside the sandbox
    (``dangerouslyDisableSandbox``), which then always needs approval."""
    excluded_commands: List[str] = field(default_factory=list)
    """``excludedCommands``: commands that always run outside the sandbox."""
    hooks: bool = False
    """Command hooks run sandboxed too."""

    @classmethod
    def _from_dict(cls, data: Mapping[str, Any]) -> "SandboxStatus":
        network = data.get("network") or {}
        return cls(
            enabled=bool(data.get("enabled", False)),
            active=bool(data.get("active", False)),
            backend=data.get("backend"),
            requested_backend=str(data.get("requested_backend", "auto")),
            reason=data.get("reason"),
            platform=str(data.get("platform", "")),
            writable_roots=list(data.get("writable_roots", [])),
            protected_paths=list(data.get("protected_paths", [])),
            read_denied=list(data.get("read_denied", [])),
            network=SandboxNetwork(
                mode=network.get("mode", "none"), domains=list(network.get("domains", []))
            ),
            guarantees=SandboxGuarantees._from_dict(data.get("guarantees") or {}),
            temp_dir=data.get("temp_dir"),
            proxy_port=data.get("proxy_port"),
            landlock_abi=data.get("landlock_abi"),
            allow_local_binding=bool(data.get("allow_local_binding", False)),
            allow_unix_sockets=bool(data.get("allow_unix_sockets", False)),
            fail_if_unavailable=bool(data.get("fail_if_unavailable", False)),
            auto_allow_bash=bool(data.get("auto_allow_bash", True)),
            allow_unsandboxed_commands=bool(data.get("allow_unsandboxed_commands", True)),
            excluded_commands=list(data.get("excluded_commands", [])),
            hooks=bool(data.get("hooks", False)),
        )
