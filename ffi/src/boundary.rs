//! The one wrapper every entry point runs in: catches panics and reports errors.

/// Runs an entry point's body so that no panic crosses the C boundary.
///
/// `ffi_boundary!(out_err, { ... })`: the body returns `Result<(), FfiError>`; the entry point
/// returns `ROBOTA_STATUS_OK`, or the error's status with a `robota_error` stored in `*out_err`
/// (when `out_err` is not NULL). A panic becomes `ROBOTA_STATUS_PANIC`.
///
/// `ffi_boundary!(value fallback, { ... })`: for entry points without a status; the body returns
/// the value, a panic returns `fallback`.
macro_rules! ffi_boundary {
    (value $fallback:expr, $body:block) => {{
        match ::std::panic::catch_unwind(::std::panic::AssertUnwindSafe(|| $body)) {
            Ok(value) => value,
            Err(_) => $fallback,
        }
    }};
    ($out_err:expr, $body:block) => {{
        let out_err: *mut *mut $crate::error::robota_error = $out_err;
        // SAFETY: the caller passes NULL or a valid `robota_error **`.
        unsafe { $crate::error::clear_out_err(out_err) };
        let result = ::std::panic::catch_unwind(::std::panic::AssertUnwindSafe(
            || -> ::std::result::Result<(), $crate::error::FfiError> { $body },
        ));
        let result = match result {
            Ok(result) => result,
            Err(payload) => Err($crate::error::FfiError::from_panic(payload)),
        };
        match result {
            Ok(()) => $crate::error::ROBOTA_STATUS_OK,
            // SAFETY: as above.
            Err(error) => unsafe { error.report(out_err) },
        }
    }};
}

pub(crate) use ffi_boundary;
