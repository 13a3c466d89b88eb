//! `robota_swift`: the uniffi library under the `Robota` Swift package. It maps `robota::api`
//! (sessions, queries, host extensions, errors) onto uniffi types and nothing more; the typed,
//! idiomatic Swift API is the hand-written layer in `Sources/Robota`.
//!
//! Rich data crosses as JSON text, exactly the JSON contracts of `robota::api` that the C,
//! Python and Node bindings use, so answers mean the same in every language. Every exported
//! function returns `Result`, so a Rust panic reaches Swift as a thrown error, never a crash.

mod error;
mod host;
mod query;
mod runtime;
mod session;

pub use error::{HostError, RobotaError};
pub use host::{HostCallback, ProviderStream};
pub use query::{NativeQuery, NativeQueryOptions};
pub use session::{
    NativeCommand, NativeCommandModule, NativeEvent, NativeEvents, NativeExtensions, NativeHook,
    NativePrompt, NativeProvider, NativeSession, NativeSessionOptions, NativeTool,
};

uniffi::setup_scaffolding!();

/// The library's version (the workspace version), so the Swift package can check it was built
/// against the library it loads.
#[uniffi::export]
pub fn library_version() -> Result<String, RobotaError> {
    Ok(env!("CARGO_PKG_VERSION").to_string())
}
