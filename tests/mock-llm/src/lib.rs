//! mock-llm owns the fake model provider used by every test: a loopback HTTP/1.1 server that
//! speaks the real Anthropic Messages (also as Bedrock and Vertex AI relay it), OpenAI Chat
//! Completions, OpenAI Responses and Gemini `streamGenerateContent` streaming wire formats, driven
//! by a JSON [`Script`], with injectable faults and a record of every request it received.
//!
//! Start it in-process with [`MockLlm::start`], or run the `mock-llm` binary from any language
//! (see `README.md` in this crate for the binary protocol, script format and wire output).

#![warn(missing_docs)]

mod anthropic;
mod aws;
mod bedrock;
mod cache;
mod gemini;
mod history;
mod models;
mod openai;
mod plan;
mod responses;
mod script;
mod server;
mod sse;

use std::net::SocketAddr;
use std::sync::Arc;

use tokio::task::JoinHandle;

pub use aws::{ASSUME_ROLE_KEY_ID, ECS_KEY_ID, SSO_KEY_ID, WEB_IDENTITY_KEY_ID};
pub use script::{
    Chunks, CloseMode, Fault, MockError, PromptCacheSim, Script, SseOptions, ToolCall, Turn, Usage,
};
pub use server::RecordedRequest;

/// A running mock provider. Dropping it (or calling [`MockLlm::shutdown`]) stops accepting
/// connections and aborts the open ones.
pub struct MockLlm {
    addr: SocketAddr,
    shared: Arc<server::Shared>,
    accept_task: Option<JoinHandle<()>>,
}

impl MockLlm {
    /// Starts a server on `127.0.0.1` with an OS-chosen port. Fails with `InvalidInput` if the
    /// script does not validate. Must be called inside a Tokio runtime.
    pub async fn start(script: Script) -> std::io::Result<MockLlm> {
        MockLlm::start_on(SocketAddr::from(([127, 0, 0, 1], 0)), script).await
    }

    /// Starts a server on `addr` (port 0 = OS-chosen).
    pub async fn start_on(addr: SocketAddr, script: Script) -> std::io::Result<MockLlm> {
        script
            .validate()
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e.to_string()))?;
        let listener = server::bind(addr)?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(server::Shared::new(script));
        let accept_task = tokio::spawn(server::accept_loop(listener, Arc::clone(&shared)));
        Ok(MockLlm {
            addr,
            shared,
            accept_task: Some(accept_task),
        })
    }

    /// Parses and validates `script` (a JSON script value), then starts like [`MockLlm::start`].
    pub async fn start_json(script: serde_json::Value) -> Result<MockLlm, MockError> {
        let script = Script::from_value(script)?;
        Ok(MockLlm::start(script).await?)
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT`; clients append `/v1/messages` or `/v1/chat/completions`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every request received so far (model endpoints and unknown paths, not `/_mock/*`), in
    /// arrival order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.requests()
    }

    /// Replaces the script and rewinds to its first turn. Recordings are kept.
    pub fn set_script(&self, script: Script) -> Result<(), MockError> {
        script.validate()?;
        self.shared.set_script(script);
        Ok(())
    }

    /// Clears the recorded requests and rewinds to the first turn.
    pub fn reset(&self) {
        self.shared.reset();
    }

    /// Stops the server and waits until its accept loop and connections are gone.
    pub async fn shutdown(mut self) {
        if let Some(task) = self.accept_task.take() {
            task.abort();
            let _ = task.await;
        }
    }
}

impl std::fmt::Debug for MockLlm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MockLlm")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl Drop for MockLlm {
    fn drop(&mut self) {
        if let Some(task) = self.accept_task.take() {
            // The connection tasks are owned by the accept task's JoinSet, so they go with it.
            task.abort();
        }
    }
}
