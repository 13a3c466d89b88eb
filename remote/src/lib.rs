//! `robota-remote`: the wire types of the `robota serve` protocol ([`wire`]), shared by the
//! server and its clients, and [`RemoteSession`], a client with the surface of the engine's
//! `InteractiveSession` over HTTP + SSE.
#![deny(missing_docs)]

mod client;
mod error;
mod session;
pub mod sse;
mod subscription;
pub mod wire;

pub use client::{RemoteEndpoint, DEFAULT_REQUEST_TIMEOUT, MAX_RESPONSE_BYTES};
pub use error::RemoteError;
pub use session::{RemotePrompt, RemoteSession};
pub use subscription::{RemoteEventItem, RemoteSubscription, MAX_RECONNECT_ATTEMPTS};
