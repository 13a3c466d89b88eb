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

/// Major version of the ABI: bumped only for incompatible changes.
pub const ROBOTA_ABI_VERSION_MAJOR: u32 = 0;
/// Minor version of the ABI: bumped for additive changes within a major.
pub const ROBOTA_ABI_VERSION_MINOR: u32 = 2;

/// The ABI version of the loaded library: `(major << 16) | minor`. Compare the major with
/// `ROBOTA_ABI_VERSION_MAJOR` from the header you compiled against.
///
/// Never fails; callable from any thread.
#[no_mangle]
pub extern "C" fn robota_abi_version() -> u32 {
    (ROBOTA_ABI_VERSION_MAJOR << 16) | ROBOTA_ABI_VERSION_MINOR
}

/// The library's version as a NUL-terminated string (e.g. `"0.1.0"`).
///
/// Ownership: borrowed, static; never free it. Callable from any thread.
#[no_mangle]
pub extern "C" fn robota_version() -> *const std::ffi::c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}
