//! [`NativeSession`]: the engine's `InteractiveSession` as a JavaScript class, and event
//! delivery through one weak, bounded threadsafe function per session.
//!
//! Delivery: a tokio task reads the session's pull subscription, gathers whatever is queued into
//! one batch (a JSON array) and hands it to the weak threadsafe function without blocking. When
//! JavaScript falls behind and the function's queue (bounded) is full, the task waits and stops
//! reading; the subscription's own bounded queue then coalesces `text_delta`s (nothing else is
//! ever dropped), so the engine never waits for JavaScript.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use napi::bindgen_prelude::{block_on, within_runtime_if_available, Unknown};
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::Status;
use napi_derive::napi;

use robota::api::ApiError;
use robota::framework::interactive::{
    InteractiveSession, InteractiveSessionOptions, SubmitStatus, Subscription,
};
use robota::hooks::SessionEndReason;

use crate::host::{HostBridge, JsDispatcher};
use crate::options::build_options;
use crate::{api_error, to_json};

/// Most event batches waiting for the JavaScript thread per session.
const EVENT_QUEUE: usize = 64;
/// Most events in one batch.
const MAX_BATCH: usize = 1024;

/// The listener: `(batchJson: string) => void`, weak and bounded.
pub(crate) type EventFunction =
    ThreadsafeFunction<String, Unknown<'static>, String, Status, false, true, EVENT_QUEUE>;

/// Starts delivering `subscription`'s events to `function` until `stopped` is set or the
/// subscription is closed.
pub(crate) fn spawn_event_delivery(
    subscription: Arc<Subscription>,
    function: EventFunction,
    stopped: Arc<AtomicBool>,
) {
    napi::bindgen_prelude::spawn(async move {
        // `aborted`: the JavaScript environment (a terminated worker, say) is gone.
        while !stopped.load(Ordering::Acquire) && !function.aborted() {
            let Some(first) = subscription.next_event(Duration::from_secs(1)).await else {
                continue;
            };
            let mut batch = vec![first];
            while batch.len() < MAX_BATCH {
                match subscription.try_next_event() {
                    Some(event) => batch.push(event),
                    None => break,
                }
            }
            let Ok(json) = serde_json::to_string(&batch) else {
                continue;
            };
            loop {
                match function.call(json.clone(), ThreadsafeFunctionCallMode::NonBlocking) {
                    Status::Ok => break,
                    Status::QueueFull if !stopped.load(Ordering::Acquire) => {
                        tokio::time::sleep(Duration::from_micros(200)).await;
                    }
                    // Closing (environment teardown) or stopped: nobody is listening any more.
                    _ => return,
                }
            }
        }
    });
}

/// An interactive session (the engine's `InteractiveSession`). Use the `InteractiveSession`
/// class of `@robota/native`, which wraps this one with typed options, an `EventEmitter` and
/// Promises that settle when a prompt ends.
#[napi]
pub struct NativeSession {
    session: Arc<InteractiveSession>,
    subscription: Arc<Subscription>,
    stopped: Arc<AtomicBool>,
    bridge: Mutex<Option<Arc<HostBridge>>>,
}

#[napi]
impl NativeSession {
    /// Creates a session from the options document (JSON, built by the facade), the host
    /// dispatcher `(requestJson) => Promise<replyJson>` and the event listener
    /// `(batchJson) => void`. Both functions are held weakly: they never keep Node alive.
    #[napi(constructor)]
    pub fn new(
        options_json: String,
        #[napi(ts_arg_type = "(request: string) => Promise<string>")] host: JsDispatcher,
        #[napi(ts_arg_type = "(batch: string) => void")] on_events: EventFunction,
    ) -> napi::Result<Self> {
        let bridge = HostBridge::new(host);
        let session = within_runtime_if_available(|| -> Result<_, ApiError> {
            let built = build_options(&options_json, &bridge)?;
            if !built.allowed_tools.is_empty() || !built.disallowed_tools.is_empty() {
                return Err(ApiError::invalid_argument(
                    "`allowedTools`/`disallowedTools` are query options; give a session \
                     `settings: {permissions: {allow, deny}}` instead",
                ));
            }
            let mut options = InteractiveSessionOptions::new(built.session);
            options.command_modules = built.command_modules;
            if let Some(buffer) = built.event_buffer {
                options.event_buffer = buffer;
            }
            InteractiveSession::new(options).map_err(ApiError::from)
        })
        .map_err(api_error)?;
        let subscription = Arc::new(session.subscribe_pull());
        let stopped = Arc::new(AtomicBool::new(false));
        spawn_event_delivery(Arc::clone(&subscription), on_events, Arc::clone(&stopped));
        Ok(NativeSession {
            session,
            subscription,
            stopped,
            bridge: Mutex::new(Some(bridge)),
        })
    }

    /// Submits a prompt: `"started"` or `"queued"` once accepted. Synchronous, so prompts are
    /// accepted in call order (acceptance never waits: the prompt runs on a background task).
    #[napi]
    pub fn submit(&self, input: String, display_input: Option<String>) -> napi::Result<String> {
        let session = Arc::clone(&self.session);
        let status =
            block_on(async move { session.submit(&input, display_input.as_deref(), None).await })
                .map_err(|e| api_error(e.into()))?;
        Ok(match status {
            SubmitStatus::Started => "started".into(),
            SubmitStatus::Queued => "queued".into(),
        })
    }

    /// Resolves when no prompt is running or queued. While pending it keeps Node alive, which
    /// is how a running prompt keeps a script from exiting early.
    #[napi]
    pub async fn wait_idle(&self) -> napi::Result<()> {
        self.session.wait_idle().await;
        Ok(())
    }

    /// Aborts the running prompt and drops the queued one.
    #[napi]
    pub fn abort(&self) {
        self.session.abort();
    }

    /// Drops the queued prompt; returns it (as displayed) when there was one.
    #[napi]
    pub fn cancel_queue(&self) -> Option<String> {
        self.session.cancel_queue()
    }

    /// Runs a slash command; resolves to the command result as JSON.
    #[napi]
    pub async fn execute_command(&self, name: String, args: String) -> napi::Result<String> {
        let result = self
            .session
            .execute_command(&name, &args)
            .await
            .map_err(|e| api_error(e.into()))?;
        to_json(&result)
    }

    /// The user-invocable commands as JSON.
    #[napi]
    pub fn list_commands(&self) -> napi::Result<String> {
        to_json(&self.session.list_commands())
    }

    /// Shuts the session down (SessionEnd fires once), stops event delivery and releases the
    /// JavaScript functions. `reason`: `other` (default), `clear`, `logout`,
    /// `prompt_input_exit`.
    #[napi]
    pub async fn shutdown(&self, reason: Option<String>) -> napi::Result<()> {
        let reason = match reason.as_deref() {
            None | Some("other") => SessionEndReason::Other,
            Some(other) => serde_json::from_value(serde_json::Value::String(other.to_string()))
                .map_err(|_| {
                    api_error(ApiError::invalid_argument(format!(
                        "unknown shutdown reason `{other}` (expected other, clear, logout or \
                         prompt_input_exit)"
                    )))
                })?,
        };
        self.session.shutdown(reason).await;
        self.close();
        Ok(())
    }

    /// True while a prompt runs or waits.
    #[napi]
    pub fn is_executing(&self) -> bool {
        self.session.is_executing()
    }

    /// The queued prompt as displayed.
    #[napi]
    pub fn get_pending_prompt(&self) -> Option<String> {
        self.session.get_pending_prompt()
    }

    /// The chat messages as JSON.
    #[napi]
    pub fn get_messages(&self) -> napi::Result<String> {
        to_json(&self.session.get_messages())
    }

    /// The full history (messages and event entries) as JSON.
    #[napi]
    pub fn get_full_history(&self) -> napi::Result<String> {
        to_json(&self.session.get_full_history())
    }

    /// The context window state as JSON.
    #[napi]
    pub fn get_context_state(&self) -> napi::Result<String> {
        to_json(&self.session.get_context_state())
    }

    /// The current prompt's answer so far.
    #[napi]
    pub fn get_streaming_text(&self) -> String {
        self.session.get_streaming_text()
    }

    /// The current prompt's tool calls as JSON.
    #[napi]
    pub fn get_active_tools(&self) -> napi::Result<String> {
        to_json(&self.session.get_active_tools())
    }

    /// The session's name.
    #[napi]
    pub fn get_name(&self) -> Option<String> {
        self.session.get_name()
    }

    /// Names the session (`null` clears the name).
    #[napi]
    pub fn set_name(&self, name: Option<String>) {
        self.session.set_name(name);
    }

    /// The session id.
    #[napi]
    pub fn get_session_id(&self) -> String {
        self.session.get_session_id()
    }

    /// Compacts the conversation now; resolves to the summary as JSON.
    #[napi]
    pub async fn compact(&self, instructions: Option<String>) -> napi::Result<String> {
        let summary = self
            .session
            .compact(instructions)
            .await
            .map_err(|e| api_error(e.into()))?;
        to_json(&summary)
    }

    /// Stops event delivery and drops this object's hold on the JavaScript functions.
    fn close(&self) {
        self.stopped.store(true, Ordering::Release);
        self.subscription.unsubscribe();
        self.bridge
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
    }
}

impl Drop for NativeSession {
    fn drop(&mut self) {
        self.close();
    }
}
