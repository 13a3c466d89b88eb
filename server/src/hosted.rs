//! One session hosted by the server: the [`InteractiveSession`], its event log (fed by a
//! subscription), its network permission handler, the prompts submitted over the network with
//! their results, and the WebSocket controller slot. The routes call these; the session logic
//! stays in the engine.

use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use robota::framework::interactive::{
    InteractiveSession, PromptResult, SubmitStatus, SubscriptionHandle,
};
use robota::session::structured_output::OutputFormat;
use robota_remote::wire::{PromptStatus, SessionInfo, SubmitRequest, SubmitResponse, SubmitState};
use tokio::sync::watch;

use crate::error::ServeError;
use crate::event_log::EventLog;
use crate::permissions::NetworkPermissions;

/// Finished prompt results kept per session for clients that ask late.
const KEPT_RESULTS: usize = 256;

/// The largest prompt text accepted, in bytes.
pub const MAX_PROMPT_BYTES: usize = 512 * 1024;

struct Prompts {
    /// Each prompt's end, once known (`None` while it runs or waits).
    slots: BTreeMap<u64, watch::Receiver<Option<Arc<serde_json::Value>>>>,
    finished: VecDeque<u64>,
}

/// A hosted session.
pub struct HostedSession {
    /// The session.
    pub session: Arc<InteractiveSession>,
    /// Its project folder, resolved.
    pub cwd: PathBuf,
    /// Its events.
    pub log: Arc<EventLog>,
    /// Its permission requests, when the server built the session (`None` for a session a host
    /// attached with its own handler).
    pub permissions: Option<Arc<NetworkPermissions>>,
    prompts: Mutex<Prompts>,
    controller: AtomicBool,
    /// Keeps the log fed.
    _subscription: SubscriptionHandle,
    /// Its place in the listing.
    pub order: u64,
}

impl std::fmt::Debug for HostedSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostedSession")
            .field("session", &self.session)
            .field("cwd", &self.cwd)
            .finish_non_exhaustive()
    }
}

impl HostedSession {
    /// Hosts `session`: subscribes its event log.
    pub fn new(
        session: Arc<InteractiveSession>,
        cwd: PathBuf,
        permissions: Option<Arc<NetworkPermissions>>,
        log_capacity: usize,
        client_capacity: usize,
        order: u64,
    ) -> Arc<Self> {
        let log = EventLog::new(log_capacity, client_capacity);
        let feed = Arc::clone(&log);
        let subscription = session.subscribe(move |event| feed.record(event));
        Arc::new(HostedSession {
            session,
            cwd,
            log,
            permissions,
            prompts: Mutex::new(Prompts {
                slots: BTreeMap::new(),
                finished: VecDeque::new(),
            }),
            controller: AtomicBool::new(false),
            _subscription: subscription,
            order,
        })
    }

    /// The session's id.
    pub fn id(&self) -> String {
        self.session.get_session_id()
    }

    /// What `GET /v1/sessions/{id}` answers.
    pub fn info(&self) -> SessionInfo {
        SessionInfo {
            id: self.id(),
            name: self.session.get_name(),
            cwd: self.cwd.display().to_string(),
            executing: self.session.is_executing(),
            pending_prompt: self.session.get_pending_prompt(),
            last_seq: self.session.last_event_seq(),
            context: serde_json::to_value(self.session.get_context_state())
                .unwrap_or(serde_json::Value::Null),
            pending_permissions: self.permissions.as_ref().map_or(0, |p| p.pending_count()),
            has_controller: self.controller.load(Ordering::SeqCst),
        }
    }

    fn prompts(&self) -> MutexGuard<'_, Prompts> {
        self.prompts.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Submits a prompt; its result is kept for [`prompt_status`](Self::prompt_status).
    pub fn submit(&self, request: SubmitRequest) -> Result<SubmitResponse, ServeError> {
        if request.text.len() > MAX_PROMPT_BYTES {
            return Err(ServeError::too_large(format!(
                "the prompt has {} bytes; at most {MAX_PROMPT_BYTES} are accepted",
                request.text.len()
            )));
        }
        let format = match request.output_format {
            Some(value) => Some(
                OutputFormat::from_json_value(value)
                    .map_err(|e| ServeError::invalid(format!("`output_format`: {e}")))?,
            ),
            None => None,
        };
        let display = request.display.as_deref();
        let ticket = match &format {
            Some(format) => {
                self.session
                    .submit_tracked_with_output_format(&request.text, display, None, format)
            }
            None => self
                .session
                .submit_tracked_as_typed(&request.text, display, None),
        }?;
        let prompt_id = ticket.id();
        let status = match ticket.status() {
            SubmitStatus::Started => SubmitState::Started,
            SubmitStatus::Queued => SubmitState::Queued,
        };
        let (tx, rx) = watch::channel(None);
        self.prompts().slots.insert(prompt_id, rx);
        tokio::spawn(async move {
            let result: PromptResult = ticket.result().await;
            let value = serde_json::to_value(&result).unwrap_or_else(
                |e| serde_json::json!({"status": "error", "message": format!("unserializable result: {e}")}),
            );
            let _ = tx.send(Some(Arc::new(value)));
        });
        self.forget_old_results();
        Ok(SubmitResponse { prompt_id, status })
    }

    /// Drops the oldest finished results beyond [`KEPT_RESULTS`].
    fn forget_old_results(&self) {
        let mut prompts = self.prompts();
        let done: Vec<u64> = prompts
            .slots
            .iter()
            .filter(|(id, rx)| rx.borrow().is_some() && !prompts.finished.contains(id))
            .map(|(id, _)| *id)
            .collect();
        prompts.finished.extend(done);
        while prompts.finished.len() > KEPT_RESULTS {
            if let Some(old) = prompts.finished.pop_front() {
                prompts.slots.remove(&old);
            }
        }
    }

    /// A prompt's state, waiting up to `wait` for it to end.
    pub async fn prompt_status(
        &self,
        prompt_id: u64,
        wait: Duration,
    ) -> Result<PromptStatus, ServeError> {
        let mut rx = self
            .prompts()
            .slots
            .get(&prompt_id)
            .cloned()
            .ok_or_else(|| {
                ServeError::not_found(format!(
                    "no prompt {prompt_id} in this session (ids come from submit; results of old \
                 prompts are kept for the last {KEPT_RESULTS})"
                ))
            })?;
        // A timeout or a closed channel both mean "not known yet"; read what is there.
        let _ = tokio::time::timeout(wait, rx.wait_for(|v| v.is_some())).await;
        let result = rx.borrow().clone().map(|v| (*v).clone());
        Ok(PromptStatus {
            prompt_id,
            done: result.is_some(),
            result,
        })
    }

    /// Takes the controller slot; false when another client holds it.
    pub fn claim_control(&self) -> bool {
        self.controller
            .compare_exchange(false, true, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
    }

    /// Frees the controller slot.
    pub fn release_control(&self) {
        self.controller.store(false, Ordering::SeqCst);
    }

    /// The network permission handler, or a clear error for a session that has none.
    pub fn network_permissions(&self) -> Result<&Arc<NetworkPermissions>, ServeError> {
        self.permissions.as_ref().ok_or_else(|| {
            ServeError::not_found(
                "this session's permission requests are answered by the application that \
                 attached it, not over the network",
            )
        })
    }
}
