"""The exceptions robota raises. Every one derives from :class:`RobotaError`; each subclass
mirrors one kind of engine error (``ApiErrorKind``), or (:class:`RemoteError` and its
subclasses) a failed call to a ``robota serve`` server."""

from ._native import (
    BusyError,
    CommandError,
    InvalidArgumentError,
    InvalidJsonError,
    NotFoundError,
    PathOutsideRootsError,
    ProviderError,
    QueueFullError,
    RemoteConnectionError,
    RemoteError,
    RobotaError,
    RobotaInternalError,
    SessionError,
    SessionLockedError,
    ShutDownError,
    StructuredOutputError,
    UnauthorizedError,
)

__all__ = [
    "RobotaError",
    "InvalidArgumentError",
    "InvalidJsonError",
    "ProviderError",
    "SessionError",
    "SessionLockedError",
    "QueueFullError",
    "BusyError",
    "ShutDownError",
    "CommandError",
    "StructuredOutputError",
    "RobotaInternalError",
    "RemoteError",
    "UnauthorizedError",
    "NotFoundError",
    "PathOutsideRootsError",
    "RemoteConnectionError",
]
