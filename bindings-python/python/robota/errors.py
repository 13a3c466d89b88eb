"""The exceptions robota raises. Every one derives from :class:`RobotaError`; each subclass
mirrors one kind of engine error (``ApiErrorKind``)."""

from ._native import (
    BusyError,
    CommandError,
    InvalidArgumentError,
    InvalidJsonError,
    ProviderError,
    QueueFullError,
    RobotaError,
    RobotaInternalError,
    SessionError,
    SessionLockedError,
    ShutDownError,
    StructuredOutputError,
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
]
