//! Strings across the boundary.

use std::ffi::{c_char, CString};

use crate::error::{FfiError, ROBOTA_STATUS_INVALID_JSON, ROBOTA_STATUS_INVALID_UTF8};

/// Reads a `(ptr, len)` string argument. NULL with `len == 0` is the empty string.
///
/// # Safety
/// `ptr` is NULL or valid for `len` bytes for the duration of the call.
pub(crate) unsafe fn str_arg<'a>(
    ptr: *const c_char,
    len: usize,
    name: &str,
) -> Result<&'a str, FfiError> {
    if ptr.is_null() {
        if len == 0 {
            return Ok("");
        }
        return Err(FfiError::null(name));
    }
    let bytes = std::slice::from_raw_parts(ptr.cast::<u8>(), len);
    std::str::from_utf8(bytes).map_err(|e| {
        FfiError::new(
            ROBOTA_STATUS_INVALID_UTF8,
            format!("`{name}` is not valid UTF-8: {e}"),
        )
    })
}

/// Reads a JSON argument; an empty string is `None`.
///
/// # Safety
/// As [`str_arg`].
pub(crate) unsafe fn json_arg(
    ptr: *const c_char,
    len: usize,
    name: &str,
) -> Result<Option<serde_json::Value>, FfiError> {
    let text = str_arg(ptr, len, name)?;
    if text.trim().is_empty() {
        return Ok(None);
    }
    serde_json::from_str(text).map(Some).map_err(|e| {
        FfiError::new(
            ROBOTA_STATUS_INVALID_JSON,
            format!("`{name}` is not valid JSON: {e}"),
        )
    })
}

/// An owned string for the caller (freed with `robota_string_free`).
pub(crate) fn owned_string(text: String) -> *mut c_char {
    // JSON never contains a raw NUL; other text has any NUL escaped.
    let text = if text.contains('\0') {
        text.replace('\0', "\\0")
    } else {
        text
    };
    CString::new(text).unwrap_or_default().into_raw()
}

/// Writes an owned string to a required out-pointer.
///
/// # Safety
/// `out` is valid for writes (checked for NULL by the caller).
pub(crate) unsafe fn write_string(out: *mut *mut c_char, text: String) {
    *out = owned_string(text);
}

/// Frees a string returned by this library. NULL is ignored.
///
/// # Safety
/// `s` is NULL or a string returned by this library, freed at most once.
#[no_mangle]
pub unsafe extern "C" fn robota_string_free(s: *mut c_char) {
    crate::boundary::ffi_boundary!(value(), {
        if !s.is_null() {
            drop(CString::from_raw(s));
        }
    })
}
