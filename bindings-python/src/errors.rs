//! The exception classes of `robota._native` (re-exported by `robota.errors`), one per
//! [`ApiErrorKind`], all derived from `RobotaError`.

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use robota::api::{ApiError, ApiErrorKind};

create_exception!(
    _native,
    RobotaError,
    PyException,
    "Base class of every error robota raises."
);
create_exception!(
    _native,
    InvalidArgumentError,
    RobotaError,
    "An argument is out of range, names something unknown, or is missing."
);
create_exception!(
    _native,
    InvalidJsonError,
    RobotaError,
    "A configuration or data value is malformed or has the wrong shape."
);
create_exception!(
    _native,
    ProviderError,
    RobotaError,
    "The provider could not be created or a model call failed."
);
create_exception!(
    _native,
    SessionError,
    RobotaError,
    "The session refused or failed the request."
);
create_exception!(
    _native,
    SessionLockedError,
    SessionError,
    "The saved session is open for writing elsewhere (a session has one writer at a time); the message names the holder. Wait until it is closed, or fork it (fork_session=True)."
);
create_exception!(
    _native,
    QueueFullError,
    RobotaError,
    "A prompt is already queued; only one may wait. Wait for it or call cancel_queue()."
);
create_exception!(
    _native,
    BusyError,
    RobotaError,
    "The request cannot run while a prompt is executing; wait or abort first."
);
create_exception!(
    _native,
    ShutDownError,
    RobotaError,
    "The session was shut down."
);
create_exception!(
    _native,
    CommandError,
    RobotaError,
    "A slash command is unknown, ambiguous or failed."
);
create_exception!(
    _native,
    StructuredOutputError,
    RobotaError,
    "The answer did not match the output_format JSON Schema after the allowed follow-ups; the message lists the last validation errors."
);
create_exception!(
    _native,
    RobotaInternalError,
    RobotaError,
    "A bug in robota (please report it); the session may still be usable."
);

create_exception!(
    _native,
    RemoteError,
    RobotaError,
    "A call to a `robota serve` server failed (its `code` attribute is the protocol's error code)."
);
create_exception!(
    _native,
    UnauthorizedError,
    RemoteError,
    "The server refused the token; pass the one `robota serve` printed at start (or its --token-env variable's)."
);
create_exception!(
    _native,
    NotFoundError,
    RemoteError,
    "The server hosts no such session, prompt or permission request."
);
create_exception!(
    _native,
    PathOutsideRootsError,
    RemoteError,
    "The folder is outside the server's project roots (`robota serve --root`)."
);
create_exception!(
    _native,
    RemoteConnectionError,
    RemoteError,
    "The server could not be reached, the connection broke, or it did not answer in time."
);

/// The Python exception for a failed call to a `robota serve` server: the engine's own class
/// where one fits (queue full, busy, locked, shut down, invalid argument), else a
/// [`RemoteError`] subclass; every one carries the protocol's `code`.
pub fn remote_error(e: robota_remote::RemoteError) -> PyErr {
    use robota_remote::RemoteError as E;
    let code = e.code().to_string();
    let message = e.to_string();
    let err = match e {
        E::Unauthorized { .. } => UnauthorizedError::new_err(message),
        E::NotFound { .. } => NotFoundError::new_err(message),
        E::PathOutsideRoots { .. } => PathOutsideRootsError::new_err(message),
        E::QueueFull { .. } => QueueFullError::new_err(message),
        E::Busy { .. } => BusyError::new_err(message),
        E::SessionLocked { .. } => SessionLockedError::new_err(message),
        E::ShuttingDown { .. } => ShutDownError::new_err(message),
        E::InvalidRequest { .. } | E::PayloadTooLarge { .. } | E::InvalidEndpoint { .. } => {
            InvalidArgumentError::new_err(message)
        }
        E::Connection { .. } | E::Timeout { .. } => RemoteConnectionError::new_err(message),
        _ => RemoteError::new_err(message),
    };
    // Through `with_python`: this runs on tokio threads too (see `aio`). The code is
    // informative; failing to attach it must not hide the error.
    crate::aio::with_python(|py| {
        let _ = err.value(py).setattr("code", code);
    });
    err
}

/// The Python exception for an engine error.
pub fn api_error(e: ApiError) -> PyErr {
    let message = e.message;
    match e.kind {
        ApiErrorKind::InvalidArgument => InvalidArgumentError::new_err(message),
        ApiErrorKind::InvalidJson => InvalidJsonError::new_err(message),
        ApiErrorKind::Provider => ProviderError::new_err(message),
        ApiErrorKind::QueueFull => QueueFullError::new_err(message),
        ApiErrorKind::Busy => BusyError::new_err(message),
        ApiErrorKind::ShutDown => ShutDownError::new_err(message),
        ApiErrorKind::Command => CommandError::new_err(message),
        ApiErrorKind::SessionLocked => SessionLockedError::new_err(message),
        ApiErrorKind::StructuredOutput => StructuredOutputError::new_err(message),
        _ => SessionError::new_err(message),
    }
}

/// An [`InvalidArgumentError`].
pub fn invalid_argument(message: impl Into<String>) -> PyErr {
    InvalidArgumentError::new_err(message.into())
}

/// A [`RobotaInternalError`].
pub fn internal(message: impl Into<String>) -> PyErr {
    RobotaInternalError::new_err(message.into())
}

/// Registers the exception classes on the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("RobotaError", py.get_type::<RobotaError>())?;
    m.add(
        "InvalidArgumentError",
        py.get_type::<InvalidArgumentError>(),
    )?;
    m.add("InvalidJsonError", py.get_type::<InvalidJsonError>())?;
    m.add("ProviderError", py.get_type::<ProviderError>())?;
    m.add("SessionError", py.get_type::<SessionError>())?;
    m.add("SessionLockedError", py.get_type::<SessionLockedError>())?;
    m.add("QueueFullError", py.get_type::<QueueFullError>())?;
    m.add("BusyError", py.get_type::<BusyError>())?;
    m.add("ShutDownError", py.get_type::<ShutDownError>())?;
    m.add("CommandError", py.get_type::<CommandError>())?;
    m.add(
        "StructuredOutputError",
        py.get_type::<StructuredOutputError>(),
    )?;
    m.add("RobotaInternalError", py.get_type::<RobotaInternalError>())?;
    m.add("RemoteError", py.get_type::<RemoteError>())?;
    m.add("UnauthorizedError", py.get_type::<UnauthorizedError>())?;
    m.add("NotFoundError", py.get_type::<NotFoundError>())?;
    m.add(
        "PathOutsideRootsError",
        py.get_type::<PathOutsideRootsError>(),
    )?;
    m.add(
        "RemoteConnectionError",
        py.get_type::<RemoteConnectionError>(),
    )?;
    Ok(())
}
