//! [`RemoteSession`]: a session hosted by a `robota serve` server, with the surface of the
//! engine's `InteractiveSession` (submit, abort, events, commands, permissions), over HTTP + SSE.
//! Code written against a local session runs against a remote one by changing its constructor.

use std::sync::Arc;
use std::time::Duration;

use reqwest::Method;
use robota::framework::commands::{CommandEntry, CommandResult};
use robota::framework::interactive::PromptResult;
use robota::message::HistoryEntry;
use robota::session::{ContextState, PermissionRequest, PermissionResponse};
use serde::Deserialize;
use serde_json::Value;

use crate::client::{Client, RemoteEndpoint};
use crate::error::RemoteError;
use crate::subscription::RemoteSubscription;
use crate::wire::{
    CommandRequest, CreateSessionRequest, ForkSessionRequest, NameBody, PromptStatus, SessionInfo,
    SubmitRequest, SubmitResponse, SubmitState,
};

/// How long one long-poll for a prompt's end asks the server to wait (under the 30 s many
/// proxies allow an idle request).
const PROMPT_WAIT: Duration = Duration::from_secs(25);

/// How many long-polls in a row may fail on the transport before waiting for a prompt gives up.
const PROMPT_POLL_RETRIES: u32 = 5;

/// A session on a `robota serve` server.
#[derive(Debug, Clone)]
pub struct RemoteSession {
    client: Arc<Client>,
    id: String,
}

#[derive(Deserialize)]
struct Commands {
    commands: Vec<CommandEntry>,
}

#[derive(Deserialize)]
struct History {
    entries: Vec<HistoryEntry>,
}

#[derive(Deserialize)]
struct Pending {
    pending: Vec<PermissionRequest>,
}

#[derive(Deserialize)]
struct Cancelled {
    cancelled: bool,
}

/// The answers whose content is only an acknowledgement (`{"aborted": true}`, …).
#[derive(Deserialize)]
struct Ack {}

impl RemoteSession {
    /// Creates a session on the server (`POST /v1/sessions`): a new one, or a saved one resumed
    /// (`request.resume`).
    pub async fn create(
        endpoint: &RemoteEndpoint,
        request: CreateSessionRequest,
    ) -> Result<Self, RemoteError> {
        let client = Arc::new(Client::new(endpoint)?);
        let info: SessionInfo = client
            .call(
                Method::POST,
                client.url(&["sessions"]),
                Some(&request),
                Duration::ZERO,
            )
            .await?;
        Ok(RemoteSession {
            client,
            id: info.id,
        })
    }

    /// Attaches to a session the server already hosts (checked with `GET /v1/sessions/{id}`).
    pub async fn connect(endpoint: &RemoteEndpoint, session_id: &str) -> Result<Self, RemoteError> {
        let client = Arc::new(Client::new(endpoint)?);
        let session = RemoteSession {
            client,
            id: session_id.to_string(),
        };
        session.info().await?;
        Ok(session)
    }

    /// The session id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The session id (the name `InteractiveSession` uses).
    pub fn get_session_id(&self) -> String {
        self.id.clone()
    }

    fn url(&self, rest: &[&str]) -> reqwest::Url {
        let mut segments = vec!["sessions", self.id.as_str()];
        segments.extend_from_slice(rest);
        self.client.url(&segments)
    }

    async fn get<T: for<'de> Deserialize<'de>>(&self, rest: &[&str]) -> Result<T, RemoteError> {
        self.client
            .call(Method::GET, self.url(rest), None::<&()>, Duration::ZERO)
            .await
    }

    async fn post<T: for<'de> Deserialize<'de>>(
        &self,
        rest: &[&str],
        body: Option<&(impl serde::Serialize + ?Sized)>,
    ) -> Result<T, RemoteError> {
        self.client
            .call(Method::POST, self.url(rest), body, Duration::ZERO)
            .await
    }

    /// The session as the server reports it.
    pub async fn info(&self) -> Result<SessionInfo, RemoteError> {
        self.get(&[]).await
    }

    /// Submits a prompt and waits for its end.
    pub async fn submit(&self, text: &str) -> Result<PromptResult, RemoteError> {
        self.submit_tracked(text).await?.result().await
    }

    /// Submits a prompt with structured output (`{"type":"json_schema","schema":{…}}`) and
    /// waits for its end.
    pub async fn submit_with_output_format(
        &self,
        text: &str,
        output_format: Value,
    ) -> Result<PromptResult, RemoteError> {
        self.submit_request(SubmitRequest {
            text: text.to_string(),
            display: None,
            output_format: Some(output_format),
        })
        .await?
        .result()
        .await
    }

    /// Submits a prompt; the answer says whether it started or is queued, and waits for it.
    pub async fn submit_tracked(&self, text: &str) -> Result<RemotePrompt, RemoteError> {
        self.submit_request(SubmitRequest {
            text: text.to_string(),
            ..SubmitRequest::default()
        })
        .await
    }

    /// Submits a prompt with every option of the protocol.
    pub async fn submit_request(
        &self,
        request: SubmitRequest,
    ) -> Result<RemotePrompt, RemoteError> {
        let answer: SubmitResponse = self.post(&["prompts"], Some(&request)).await?;
        Ok(RemotePrompt {
            session: self.clone(),
            id: answer.prompt_id,
            status: answer.status,
        })
    }

    /// Aborts the running prompt and drops the queued one.
    pub async fn abort(&self) -> Result<(), RemoteError> {
        self.post::<Ack>(&["abort"], None::<&()>).await.map(|_| ())
    }

    /// Cancels one prompt (queued: dropped; running: aborted); false when it had already ended.
    pub async fn cancel_prompt(&self, prompt_id: u64) -> Result<bool, RemoteError> {
        let answer: Cancelled = self
            .client
            .call(
                Method::DELETE,
                self.url(&["prompts", &prompt_id.to_string()]),
                None::<&()>,
                Duration::ZERO,
            )
            .await?;
        Ok(answer.cancelled)
    }

    /// Runs a slash command (`name` without the slash).
    pub async fn execute_command(
        &self,
        name: &str,
        args: &str,
    ) -> Result<CommandResult, RemoteError> {
        let request = CommandRequest {
            name: name.to_string(),
            args: args.to_string(),
        };
        self.post(&["commands"], Some(&request)).await
    }

    /// The session's commands.
    pub async fn list_commands(&self) -> Result<Vec<CommandEntry>, RemoteError> {
        Ok(self.get::<Commands>(&["commands"]).await?.commands)
    }

    /// The full history (messages and event entries).
    pub async fn get_full_history(&self) -> Result<Vec<HistoryEntry>, RemoteError> {
        Ok(self.get::<History>(&["history"]).await?.entries)
    }

    /// How full the context window is.
    pub async fn get_context_state(&self) -> Result<ContextState, RemoteError> {
        self.get(&["context"]).await
    }

    /// The session's name.
    pub async fn get_name(&self) -> Result<Option<String>, RemoteError> {
        Ok(self.info().await?.name)
    }

    /// Names the session (`None` clears the name).
    pub async fn set_name(&self, name: Option<String>) -> Result<(), RemoteError> {
        let _: NameBody = self
            .client
            .call(
                Method::PUT,
                self.url(&["name"]),
                Some(&NameBody { name }),
                Duration::ZERO,
            )
            .await?;
        Ok(())
    }

    /// Answers a permission request (from a `permission_request` event or
    /// [`pending_permissions`](Self::pending_permissions)).
    pub async fn answer_permission(
        &self,
        request_id: &str,
        response: &PermissionResponse,
    ) -> Result<(), RemoteError> {
        self.post::<Ack>(&["permissions", request_id], Some(response))
            .await
            .map(|_| ())
    }

    /// The permission requests waiting for an answer.
    pub async fn pending_permissions(&self) -> Result<Vec<PermissionRequest>, RemoteError> {
        Ok(self.get::<Pending>(&["permissions"]).await?.pending)
    }

    /// Copies the session into a new hosted session (optionally named) and returns the copy.
    pub async fn fork(&self, name: Option<String>) -> Result<RemoteSession, RemoteError> {
        let info: SessionInfo = self
            .client
            .call(
                Method::POST,
                self.url(&["fork"]),
                Some(&ForkSessionRequest { name }),
                Duration::ZERO,
            )
            .await?;
        Ok(RemoteSession {
            client: Arc::clone(&self.client),
            id: info.id,
        })
    }

    /// Closes the session on the server: its work is aborted, it is saved, and it is no longer
    /// hosted (event streams end with `session_closed`).
    pub async fn close(&self) -> Result<(), RemoteError> {
        let _: Ack = self
            .client
            .call(Method::DELETE, self.url(&[]), None::<&()>, Duration::ZERO)
            .await?;
        Ok(())
    }

    /// Subscribes to the events emitted from now on (the server's `last_seq` is read first, so
    /// no event between this call and the stream's connection is missed), and returns once the
    /// server answered the stream's connection. Needs a tokio runtime.
    pub async fn subscribe_pull(&self) -> Result<RemoteSubscription, RemoteError> {
        let after = self.info().await?.last_seq;
        let subscription = self.subscribe_from(after);
        subscription.wait_connected(self.client.timeout).await;
        Ok(subscription)
    }

    /// Subscribes to the events after `after_seq` (`0`: every event the server still buffers);
    /// returns at once ([`RemoteSubscription::wait_connected`] waits for the server's answer).
    /// Needs a tokio runtime.
    pub fn subscribe_from(&self, after_seq: u64) -> RemoteSubscription {
        RemoteSubscription::start(Arc::clone(&self.client), self.id.clone(), after_seq)
    }
}

/// A submitted prompt: its id, whether it started or queued, and its result.
#[derive(Debug, Clone)]
pub struct RemotePrompt {
    session: RemoteSession,
    id: u64,
    status: SubmitState,
}

impl RemotePrompt {
    /// The prompt's id within its session.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Whether it started at once or was queued.
    pub fn status(&self) -> SubmitState {
        self.status
    }

    /// Cancels it (see [`RemoteSession::cancel_prompt`]).
    pub async fn cancel(&self) -> Result<bool, RemoteError> {
        self.session.cancel_prompt(self.id).await
    }

    /// Waits for the prompt's end (long-polls the server; a dropped connection is retried).
    pub async fn result(&self) -> Result<PromptResult, RemoteError> {
        let mut transport_failures = 0;
        loop {
            match self.poll(PROMPT_WAIT).await {
                Ok(Some(result)) => return Ok(result),
                Ok(None) => transport_failures = 0,
                Err(error) if error.is_transient() && transport_failures < PROMPT_POLL_RETRIES => {
                    transport_failures += 1;
                    tokio::time::sleep(Duration::from_millis(200) * transport_failures).await;
                }
                Err(error) => return Err(error),
            }
        }
    }

    /// Asks once, waiting up to `wait` (at most 60 s) on the server: the result if the prompt
    /// ended by then.
    pub async fn poll(&self, wait: Duration) -> Result<Option<PromptResult>, RemoteError> {
        let wait_ms = (wait.as_millis() as u64).min(crate::wire::MAX_PROMPT_WAIT_MS);
        let mut url = self.session.url(&["prompts", &self.id.to_string()]);
        url.query_pairs_mut()
            .append_pair("wait_ms", &wait_ms.to_string());
        let status: PromptStatus = self
            .session
            .client
            .call(
                Method::GET,
                url,
                None::<&()>,
                Duration::from_millis(wait_ms),
            )
            .await?;
        if !status.done {
            return Ok(None);
        }
        let Some(result) = status.result else {
            return Err(RemoteError::Protocol {
                message: format!("prompt {} is done but its status has no result", self.id),
            });
        };
        serde_json::from_value(result)
            .map(Some)
            .map_err(|e| RemoteError::Protocol {
                message: format!(
                    "prompt {}'s result is not an engine PromptResult: {e}",
                    self.id
                ),
            })
    }
}
