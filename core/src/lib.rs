//! robota — an embeddable agent engine.
//!
//! One engine — an LLM tool-use loop with streaming, tools, providers speaking the real wire formats
//! — that applications run in their own process. Layers, from the bottom: [`message`] (pure data),
//! [`provider`] (model calls), [`tools`] (the tool port), [`engine`] (the execution loop).
//! [`process`] owns the process groups a session starts (Bash calls, background tasks, command
//! hooks) and says when they are stopped; it sits at the bottom with [`message`]. Beneath them
//! all, [`files`] reads the files robota reads on its own (settings, instruction files,
//! definitions, scripts, session files): regular files only, each kind under a size cap.
//! [`telemetry`] exports sessions' traces and metrics over OTLP when a host configures it (core's
//! `otel` feature); `session` decides which moments become spans.
#![deny(missing_docs)]

pub mod api;
pub mod engine;
pub mod files;
pub mod framework;
pub mod hooks;
pub mod mcp;
pub mod message;
pub mod permissions;
pub mod process;
pub mod provider;
pub mod sandbox;
pub mod session;
pub mod telemetry;
pub(crate) mod tls;
pub mod tools;
