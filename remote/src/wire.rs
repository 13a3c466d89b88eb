//! The wire types of the `robota serve` protocol (v1): the request and response bodies of its
//! HTTP routes and the messages of its WebSocket, shared by the server (`robota-server`) and the
//! clients (this crate's [`RemoteSession`](crate::RemoteSession), and through it the Python and
//! Node packages), so both ends agree by construction. `server/PROTOCOL.md` describes the routes.
//!
//! The engine's own types (events, prompt results, command results, history entries, permission
//! requests and answers) travel exactly as the engine serializes them; here they are
//! `serde_json::Value` where the OpenAPI document only needs to say "an object".

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The version prefix of every route.
pub const API_PREFIX: &str = "/v1";

/// The WebSocket subprotocol the server selects.
pub const WS_PROTOCOL: &str = "robota.v1";

/// The prefix of the WebSocket subprotocol that carries the bearer token (browsers cannot set an
/// `Authorization` header on a WebSocket): `robota.bearer.<token>`.
pub const WS_BEARER_PREFIX: &str = "robota.bearer.";

/// The longest `wait_ms` a prompt-status request may ask for.
pub const MAX_PROMPT_WAIT_MS: u64 = 60_000;

/// Body of `POST /v1/sessions`: a new session, or a saved one resumed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateSessionRequest {
    /// The project folder; it must be inside one of the server's project roots. Default: the
    /// first root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// Resume the saved session with this id (from `GET /v1/saved-sessions`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resume: Option<String>,
    /// With `resume`: continue in a copy with a new id.
    #[serde(default)]
    pub fork: bool,
    /// A name for the session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// Body of `POST /v1/sessions/{id}/fork`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ForkSessionRequest {
    /// A name for the copy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// One hosted session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SessionInfo {
    /// The session id.
    pub id: String,
    /// Its name, when it has one.
    #[serde(default)]
    pub name: Option<String>,
    /// Its project folder (as resolved by the server).
    pub cwd: String,
    /// True while a prompt runs or is queued.
    pub executing: bool,
    /// The queued prompt, as displayed.
    #[serde(default)]
    pub pending_prompt: Option<String>,
    /// The `seq` of the last event it emitted (0 before the first).
    pub last_seq: u64,
    /// How full the context window is (the engine's `ContextState`).
    #[schemars(with = "Value")]
    pub context: Value,
    /// Permission requests waiting for an answer.
    pub pending_permissions: usize,
    /// True while a WebSocket client holds control.
    pub has_controller: bool,
}

/// Answer of `GET /v1/sessions`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SessionList {
    /// The hosted sessions, oldest first.
    pub sessions: Vec<SessionInfo>,
}

/// A saved session of one project (resumable with `CreateSessionRequest::resume`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SavedSession {
    /// Its id.
    pub id: String,
    /// Its name.
    #[serde(default)]
    pub name: Option<String>,
    /// The store's summary of it (messages, times, …).
    #[schemars(with = "Value")]
    pub summary: Value,
}

/// Answer of `GET /v1/saved-sessions`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SavedSessionList {
    /// The project folder listed.
    pub cwd: String,
    /// Its saved sessions, most recently updated first.
    pub sessions: Vec<SavedSession>,
    /// Saved sessions that could not be read, one line each.
    #[serde(default)]
    pub problems: Vec<String>,
}

/// Body of `POST /v1/sessions/{id}/prompts` (and the WebSocket `submit` op).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SubmitRequest {
    /// The prompt.
    pub text: String,
    /// What the session shows for it (default: `text`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display: Option<String>,
    /// Structured output for this prompt: `{"type":"json_schema","schema":{…}}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<Value>")]
    pub output_format: Option<Value>,
}

/// Whether a submitted prompt started at once or waits behind the running one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SubmitState {
    /// It runs now.
    Started,
    /// It runs when the running prompt ends.
    Queued,
}

/// Answer of a submit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SubmitResponse {
    /// The prompt's id within the session (for its result and for cancelling it).
    pub prompt_id: u64,
    /// Started or queued.
    pub status: SubmitState,
}

/// Answer of `GET /v1/sessions/{id}/prompts/{prompt_id}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PromptStatus {
    /// The prompt.
    pub prompt_id: u64,
    /// True once it ended.
    pub done: bool,
    /// How it ended (the engine's `PromptResult`: `status` is `complete`, `refused`,
    /// `truncated`, `error`, `interrupted` or `cancelled`), once `done`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<Value>")]
    pub result: Option<Value>,
}

/// Body of `POST /v1/sessions/{id}/commands`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CommandRequest {
    /// The command, without the slash (`rename`, `compact`, `skills`, …).
    pub name: String,
    /// Its arguments as typed.
    #[serde(default)]
    pub args: String,
}

/// Body of `PUT /v1/sessions/{id}/name`, and its answer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NameBody {
    /// The name (`null` clears it).
    pub name: Option<String>,
}

/// The body of every error answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ErrorBody {
    /// The error.
    pub error: ErrorDetail,
}

/// What failed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ErrorDetail {
    /// A stable snake_case code (`unauthorized`, `not_found`, `queue_full`, …).
    pub code: String,
    /// What failed and how to fix it.
    pub message: String,
}

/// The data of the SSE `gap` event and the WebSocket `gap` message: events the client asked
/// for were no longer buffered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Gap {
    /// The `seq` the client resumed after.
    pub missed_after: u64,
    /// The first `seq` sent after the gap.
    pub resumed_at: u64,
}

/// A WebSocket client's role.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum WsRole {
    /// May submit, abort, run commands and answer permission requests (one per session).
    Controller,
    /// Sees the events and reads state.
    Observer,
}

/// A WebSocket message from the server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum WsServerMessage {
    /// The first message: the role granted and the session.
    Hello {
        /// The role granted.
        role: WsRole,
        /// The session.
        session: SessionInfo,
    },
    /// One session event (the engine's `InteractiveEvent`).
    Event {
        /// The event.
        #[schemars(with = "Value")]
        event: Value,
    },
    /// Events the client asked for were no longer buffered.
    Gap {
        /// The `seq` the client resumed after.
        missed_after: u64,
        /// The first `seq` sent after the gap.
        resumed_at: u64,
    },
    /// The answer to a client request.
    Response {
        /// The request's `id`.
        id: u64,
        /// True when it succeeded.
        ok: bool,
        /// The result, when `ok`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[schemars(with = "Option<Value>")]
        result: Option<Value>,
        /// The error, when not `ok`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<ErrorDetail>,
    },
    /// The session was closed; the socket closes next.
    SessionClosed,
}

/// A WebSocket request from a client: `{"id": 1, "op": "submit", "text": "…"}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct WsClientMessage {
    /// Echoed in the response.
    pub id: u64,
    /// The operation and its fields.
    #[serde(flatten)]
    pub op: WsOp,
}

/// The operations a WebSocket client can ask for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
pub enum WsOp {
    /// Submit a prompt (controller).
    Submit {
        /// The prompt.
        text: String,
        /// What the session shows for it.
        #[serde(default)]
        display: Option<String>,
        /// Structured output for this prompt.
        #[serde(default)]
        #[schemars(with = "Option<Value>")]
        output_format: Option<Value>,
    },
    /// Wait for a prompt's end.
    PromptResult {
        /// The prompt.
        prompt_id: u64,
    },
    /// Abort the running prompt and drop the queued one (controller).
    Abort,
    /// Cancel one prompt (controller).
    CancelPrompt {
        /// The prompt.
        prompt_id: u64,
    },
    /// Run a command (controller).
    ExecuteCommand {
        /// The command.
        name: String,
        /// Its arguments.
        #[serde(default)]
        args: String,
    },
    /// The commands.
    ListCommands,
    /// The full history.
    History,
    /// The context state.
    Context,
    /// Rename the session (controller).
    SetName {
        /// The name (`null` clears it).
        name: Option<String>,
    },
    /// Answer a permission request (controller).
    AnswerPermission {
        /// The request.
        request_id: String,
        /// The engine's `PermissionResponse`.
        #[schemars(with = "Value")]
        response: Value,
    },
    /// The session's info.
    Info,
}
