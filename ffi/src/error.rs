//! Status codes and `robota_error`.

use std::ffi::{c_char, CString};

/// A status code: `ROBOTA_STATUS_OK` (0) or one of the `ROBOTA_STATUS_*` errors. The set is
/// append-only: codes are never renumbered or reused; hosts must treat unknown codes as errors.
pub type robota_status = i32;

/// Success.
pub const ROBOTA_STATUS_OK: robota_status = 0;
/// A required pointer argument was NULL.
pub const ROBOTA_STATUS_NULL_ARGUMENT: robota_status = 1;
/// A string argument was not valid UTF-8.
pub const ROBOTA_STATUS_INVALID_UTF8: robota_status = 2;
/// A JSON argument did not parse or did not have the expected shape.
pub const ROBOTA_STATUS_INVALID_JSON: robota_status = 3;
/// An argument was well-formed but not acceptable (unknown provider type, bad option value, ...).
pub const ROBOTA_STATUS_INVALID_ARGUMENT: robota_status = 4;
/// The handle is not in a state that allows the call (e.g. a blocking call from an engine
/// thread, or an unknown subscription id).
pub const ROBOTA_STATUS_INVALID_STATE: robota_status = 5;
/// The provider could not be created.
pub const ROBOTA_STATUS_PROVIDER: robota_status = 6;
/// The session could not be created or refused the request.
pub const ROBOTA_STATUS_SESSION: robota_status = 7;
/// A prompt is already queued (only one may wait while another runs).
pub const ROBOTA_STATUS_QUEUE_FULL: robota_status = 8;
/// The wait ended before the awaited thing happened.
pub const ROBOTA_STATUS_TIMEOUT: robota_status = 9;
/// The runtime could not be created.
pub const ROBOTA_STATUS_RUNTIME: robota_status = 10;
/// A panic inside the library was caught at the boundary (a bug; please report it).
pub const ROBOTA_STATUS_PANIC: robota_status = 11;
/// The work was cancelled: the engine stopped waiting for a completion (abort, timeout,
/// session end), or a pending asynchronous request ended because its session, query or
/// runtime went away.
pub const ROBOTA_STATUS_CANCELLED: robota_status = 12;
/// A slash command is unknown or ambiguous, or is not for users.
pub const ROBOTA_STATUS_COMMAND: robota_status = 13;
/// The saved session is open for writing elsewhere (another process, or another session
/// handle): a session has one writer at a time. The message names the holder (pid, host, since
/// when). Wait until it is closed, or fork it (`"fork_session": true`) to continue in a copy.
pub const ROBOTA_STATUS_SESSION_LOCKED: robota_status = 14;
/// The answer did not match the `output_format` JSON Schema after the allowed follow-ups
/// (`max_structured_output_retries`); the message lists the last validation errors.
pub const ROBOTA_STATUS_STRUCTURED_OUTPUT: robota_status = 15;

/// An error: a status code and a message. Created by the library, owned by the caller, freed
/// with `robota_error_free`.
pub struct robota_error {
    code: robota_status,
    message: CString,
}

/// An error on its way to the caller.
#[derive(Debug)]
pub(crate) struct FfiError {
    pub(crate) code: robota_status,
    pub(crate) message: String,
}

impl From<engine::api::ApiError> for FfiError {
    fn from(e: engine::api::ApiError) -> Self {
        use engine::api::ApiErrorKind;
        let code = match e.kind {
            ApiErrorKind::InvalidArgument => ROBOTA_STATUS_INVALID_ARGUMENT,
            ApiErrorKind::InvalidJson => ROBOTA_STATUS_INVALID_JSON,
            ApiErrorKind::Provider => ROBOTA_STATUS_PROVIDER,
            ApiErrorKind::QueueFull => ROBOTA_STATUS_QUEUE_FULL,
            ApiErrorKind::Busy | ApiErrorKind::ShutDown => ROBOTA_STATUS_INVALID_STATE,
            ApiErrorKind::Command => ROBOTA_STATUS_COMMAND,
            ApiErrorKind::SessionLocked => ROBOTA_STATUS_SESSION_LOCKED,
            ApiErrorKind::StructuredOutput => ROBOTA_STATUS_STRUCTURED_OUTPUT,
            _ => ROBOTA_STATUS_SESSION,
        };
        FfiError::new(code, e.message)
    }
}

impl FfiError {
    pub(crate) fn new(code: robota_status, message: impl Into<String>) -> Self {
        FfiError {
            code,
            message: message.into(),
        }
    }

    pub(crate) fn null(name: &str) -> Self {
        Self::new(
            ROBOTA_STATUS_NULL_ARGUMENT,
            format!("`{name}` must not be NULL"),
        )
    }

    pub(crate) fn from_panic(payload: Box<dyn std::any::Any + Send>) -> Self {
        let detail = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".into());
        Self::new(
            ROBOTA_STATUS_PANIC,
            format!("internal error (panic): {detail}"),
        )
    }

    /// The error as a `robota_error` value (for borrowed errors passed to callbacks).
    pub(crate) fn into_error(self) -> robota_error {
        robota_error {
            code: self.code,
            message: CString::new(self.message.replace('\0', "\\0")).unwrap_or_default(),
        }
    }

    /// Stores the error in `*out_err` (when not NULL) and returns its code.
    ///
    /// # Safety
    /// `out_err` is NULL or valid for writes.
    pub(crate) unsafe fn report(self, out_err: *mut *mut robota_error) -> robota_status {
        let code = self.code;
        if !out_err.is_null() {
            let message = CString::new(self.message.replace('\0', "\\0")).unwrap_or_default();
            *out_err = Box::into_raw(Box::new(robota_error { code, message }));
        }
        code
    }
}

/// Sets `*out_err` to NULL when `out_err` is not NULL.
///
/// # Safety
/// `out_err` is NULL or valid for writes.
pub(crate) unsafe fn clear_out_err(out_err: *mut *mut robota_error) {
    if !out_err.is_null() {
        *out_err = std::ptr::null_mut();
    }
}

/// The error's status code; `ROBOTA_STATUS_NULL_ARGUMENT` when `err` is NULL.
///
/// # Safety
/// `err` is NULL or an error returned by this library and not yet freed.
#[no_mangle]
pub unsafe extern "C" fn robota_error_code(err: *const robota_error) -> robota_status {
    crate::boundary::ffi_boundary!(value ROBOTA_STATUS_PANIC, {
        if err.is_null() {
            ROBOTA_STATUS_NULL_ARGUMENT
        } else {
            (*err).code
        }
    })
}

/// The error's message, NUL-terminated UTF-8; `""` when `err` is NULL.
///
/// Ownership: borrowed from `err`; valid until `robota_error_free(err)`.
///
/// # Safety
/// `err` is NULL or an error returned by this library and not yet freed.
#[no_mangle]
pub unsafe extern "C" fn robota_error_message(err: *const robota_error) -> *const c_char {
    crate::boundary::ffi_boundary!(value c"".as_ptr(), {
        if err.is_null() {
            c"".as_ptr()
        } else {
            (*err).message.as_ptr()
        }
    })
}

/// Frees an error. NULL is ignored.
///
/// # Safety
/// `err` is NULL or an error returned by this library, freed at most once.
#[no_mangle]
pub unsafe extern "C" fn robota_error_free(err: *mut robota_error) {
    crate::boundary::ffi_boundary!(value(), {
        if !err.is_null() {
            drop(Box::from_raw(err));
        }
    })
}
