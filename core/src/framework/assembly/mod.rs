//! Assembly: the one place that turns a project folder's settings and context into what a
//! [`Session`](crate::session::Session) runs with (`DESIGN.md` §12). The session layer receives
//! only resolved, plain inputs; everything that reads settings or project files happens here.
//!
//! - [`provider`]: a [`Provider`](crate::provider::Provider) from the settings' active profile
//!   (or the standard environment variables), for hosts that want the CLI's behaviour.

pub mod provider;
