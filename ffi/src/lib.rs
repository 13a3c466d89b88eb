//! The C ABI of the robota engine: `librobota.so` / `librobota.a` and `include/robota.h`.
//!
//! Rules (DESIGN §6): opaque handles with an `Arc` inside; fallible functions return a
//! `robota_status` and take an optional `robota_error **out_err`; strings in are
//! `(const char *ptr, size_t len)` UTF-8 and validated; strings out are owned and freed with
//! `robota_string_free`; rich data is JSON; no panic crosses the boundary (every entry point runs
//! inside [`ffi_boundary!`]).
#![allow(non_camel_case_types)]

mod background;
mod boundary;
mod catalog;
mod error;
mod evaluate;
mod host;
mod mcp_server;
mod options;
mod provider;
mod query;
mod runtime;
mod session;
mod store;
mod strings;

pub use background::*;
pub use catalog::*;
pub use error::*;
pub use evaluate::*;
pub use host::*;
pub use mcp_server::*;
pub use options::*;
pub use provider::*;
pub use query::*;
pub use runtime::*;
pub use session::*;
pub use strings::*;

/// Major version of the ABI: bumped only for incompatible changes. Equal to the package's major
/// version (`ROBOTA_VERSION_MAJOR`); the shared library's SONAME is `librobota.so.<this>`.
pub const ROBOTA_ABI_VERSION_MAJOR: u32 = 0;
/// Minor version of the ABI: bumped for additive changes within a major. Equal to the package's
/// minor version (`ROBOTA_VERSION_MINOR`).
pub const ROBOTA_ABI_VERSION_MINOR: u32 = 2;

/// Major version of the robota release this header belongs to (every package of a release has
/// the same version, docs/COMPATIBILITY.md).
pub const ROBOTA_VERSION_MAJOR: u32 = 0;
/// Minor version of the robota release this header belongs to.
pub const ROBOTA_VERSION_MINOR: u32 = 2;
/// Patch version of the robota release this header belongs to.
pub const ROBOTA_VERSION_PATCH: u32 = 0;

// cbindgen copies only literals into the header, so the numbers above are written out (and
// ROBOTA_VERSION_STRING is made from them by ffi/cbindgen.toml); these checks fail the build when
// they drift from the crate's version or from each other.
const _: () = {
    let version = env!("CARGO_PKG_VERSION");
    const STALE: &str = "ROBOTA_VERSION_MAJOR/_MINOR/_PATCH must be the workspace version \
        (Cargo.toml): update them, then run ffi/generate-header.sh";
    assert!(
        version_component(version, 0) == ROBOTA_VERSION_MAJOR,
        "{}",
        STALE
    );
    assert!(
        version_component(version, 1) == ROBOTA_VERSION_MINOR,
        "{}",
        STALE
    );
    assert!(
        version_component(version, 2) == ROBOTA_VERSION_PATCH,
        "{}",
        STALE
    );
    const ABI: &str = "ROBOTA_ABI_VERSION_MAJOR/_MINOR must be the package's major.minor \
        (docs/COMPATIBILITY.md); run ffi/abi/check-abi.py after changing them";
    assert!(ROBOTA_ABI_VERSION_MAJOR == ROBOTA_VERSION_MAJOR, "{}", ABI);
    assert!(ROBOTA_ABI_VERSION_MINOR == ROBOTA_VERSION_MINOR, "{}", ABI);
};

/// The `index`th dot-separated number of a version string (digits up to the next `.`, `-` or
/// `+`), usable in constants.
const fn version_component(version: &str, index: usize) -> u32 {
    let bytes = version.as_bytes();
    let (mut i, mut seen) = (0, 0);
    while seen < index {
        while i < bytes.len() && bytes[i] != b'.' {
            i += 1;
        }
        i += 1;
        seen += 1;
    }
    let mut value = 0;
    while i < bytes.len() && bytes[i].is_ascii_digit() {
        value = value * 10 + (bytes[i] - b'0') as u32;
        i += 1;
    }
    value
}

/// The ABI version of the loaded library: `(major << 16) | minor`. Compare the major with
/// `ROBOTA_ABI_VERSION_MAJOR` from the header you compiled against.
///
/// Never fails; callable from any thread.
#[no_mangle]
pub extern "C" fn robota_abi_version() -> u32 {
    (ROBOTA_ABI_VERSION_MAJOR << 16) | ROBOTA_ABI_VERSION_MINOR
}

/// The library's version as a NUL-terminated string (e.g. `"0.2.0"`), equal to
/// `ROBOTA_VERSION_STRING` of the header it was built with.
///
/// Ownership: borrowed, static; never free it. Callable from any thread.
#[no_mangle]
pub extern "C" fn robota_version() -> *const std::ffi::c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}
