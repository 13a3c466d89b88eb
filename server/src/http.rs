//! The HTTP routes (`/v1/…`): thin handlers that check the request, call the hosted session and
//! answer the protocol's JSON; the bearer-token gate, CORS and the body limit around them.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, Path, Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use axum::{Json, Router};
use robota::session::PermissionResponse;
use robota_remote::wire::{
    CommandRequest, CreateSessionRequest, ForkSessionRequest, NameBody, SessionList, SubmitRequest,
    MAX_PROMPT_WAIT_MS,
};
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::error::ServeError;
use crate::hosted::HostedSession;
use crate::permissions::NetworkPermissions;
use crate::state::{OpenRequest, ServerState};

type AppState = Arc<ServerState>;
type Answer<T> = Result<T, ServeError>;

/// The whole application: `/v1` (behind the token), the web monitor and health (open).
pub fn router(state: AppState) -> Router {
    let limit = state.options.max_request_bytes;
    let api = Router::new()
        .route("/openapi.json", get(openapi))
        .route("/sessions", post(create_session).get(list_sessions))
        .route("/saved-sessions", get(saved_sessions))
        .route("/sessions/{id}", get(session_info).delete(close_session))
        .route("/sessions/{id}/fork", post(fork_session))
        .route("/sessions/{id}/prompts", post(submit))
        .route(
            "/sessions/{id}/prompts/{prompt_id}",
            get(prompt_status).delete(cancel_prompt),
        )
        .route("/sessions/{id}/abort", post(abort))
        .route(
            "/sessions/{id}/commands",
            get(list_commands).post(execute_command),
        )
        .route("/sessions/{id}/history", get(history))
        .route("/sessions/{id}/context", get(context))
        .route("/sessions/{id}/name", put(set_name).get(get_name))
        .route("/sessions/{id}/permissions", get(pending_permissions))
        .route(
            "/sessions/{id}/permissions/{request_id}",
            post(answer_permission),
        )
        .route("/sessions/{id}/events", get(crate::sse::events))
        .route("/sessions/{id}/ws", get(crate::ws::upgrade))
        .route_layer(middleware::from_fn_with_state(
            Arc::clone(&state),
            require_token,
        ))
        .route("/health", get(|| async { Json(json!({"ok": true})) }));
    let mut app = Router::new()
        .nest("/v1", api)
        .merge(crate::monitor::routes())
        .fallback(|| async { ServeError::not_found("no such route; see GET /v1/openapi.json") })
        .layer(DefaultBodyLimit::max(limit));
    if let Some(cors) = cors_layer(&state.options.cors_origins) {
        app = app.layer(cors);
    }
    app.with_state(state)
}

/// CORS for the configured origins only; `None` (no CORS headers at all) by default.
fn cors_layer(origins: &[String]) -> Option<tower_http::cors::CorsLayer> {
    if origins.is_empty() {
        return None;
    }
    let origins: Vec<HeaderValue> = origins
        .iter()
        .filter_map(|o| HeaderValue::from_str(o).ok())
        .collect();
    Some(
        tower_http::cors::CorsLayer::new()
            .allow_origin(origins)
            .allow_methods([Method::GET, Method::POST, Method::PUT, Method::DELETE])
            .allow_headers([
                axum::http::header::AUTHORIZATION,
                axum::http::header::CONTENT_TYPE,
                axum::http::HeaderName::from_static("last-event-id"),
            ]),
    )
}

async fn require_token(State(state): State<AppState>, request: Request, next: Next) -> Response {
    if crate::auth::authorized(request.headers(), &state.options.token) {
        next.run(request).await
    } else {
        ServeError::unauthorized().into_response()
    }
}

/// Reads a JSON body: too large is `413`, malformed is `400` naming the field.
pub(crate) fn parse_body<T: DeserializeOwned>(
    body: Result<Bytes, BytesRejection>,
    empty_ok: bool,
) -> Answer<T> {
    let bytes = body.map_err(|rejection| {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ServeError::too_large(
                "the request body is larger than this server accepts (--max-request-bytes)",
            )
        } else {
            ServeError::invalid(format!("cannot read the request body: {rejection}"))
        }
    })?;
    let bytes: &[u8] = if bytes.iter().all(u8::is_ascii_whitespace) && empty_ok {
        b"{}"
    } else {
        &bytes
    };
    parse_json(bytes)
}

/// Parses JSON into a wire type with an error naming the field.
pub(crate) fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Answer<T> {
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    serde_path_to_error::deserialize(&mut deserializer).map_err(|error| {
        let path = error.path().to_string();
        let inner = error.into_inner();
        if path == "." || path.is_empty() {
            ServeError::invalid(format!("the request body is not valid: {inner}"))
        } else {
            ServeError::invalid(format!("`{path}`: {inner}"))
        }
    })
}

fn to_value<T: serde::Serialize>(value: &T) -> Answer<Value> {
    serde_json::to_value(value).map_err(|e| ServeError::internal(format!("cannot serialize: {e}")))
}

async fn openapi() -> Json<Value> {
    Json(crate::openapi::document())
}

/// Opens a session through the factory, names it and hosts it.
pub(crate) async fn open_and_host(
    state: &AppState,
    request: CreateSessionRequest,
) -> Answer<Arc<HostedSession>> {
    state.check_open()?;
    let factory = state.factory.clone().ok_or_else(|| {
        ServeError::forbidden("this server hosts only the sessions its application attached")
    })?;
    let cwd = state.options.roots.resolve(request.cwd.as_deref())?;
    if request.fork && request.resume.is_none() {
        return Err(ServeError::invalid(
            "`fork` needs `resume` (the id of the saved session to copy)",
        ));
    }
    if let Some(id) = &request.resume {
        if id.is_empty()
            || id.len() > 128
            || !id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_'))
        {
            return Err(ServeError::invalid(
                "`resume`: a session id has letters, digits, `-` and `_` only",
            ));
        }
        if !request.fork && state.get(id).is_ok() {
            return Err(ServeError::conflict(
                "session_locked",
                format!("session `{id}` is already hosted here; use it, or fork it"),
            ));
        }
    }
    let permissions = NetworkPermissions::new(
        state.options.permission_timeout,
        state.options.permission_default.clone(),
    );
    let open = OpenRequest {
        cwd: cwd.clone(),
        resume: request.resume.clone(),
        fork: request.fork,
        permission_handler: permissions.clone(),
        host_files: None,
        mcp_servers: Vec::new(),
    };
    // Opening reads settings and files and may wait for a lock: off the async workers.
    let session = tokio::task::spawn_blocking(move || factory.open(open))
        .await
        .map_err(|e| ServeError::internal(format!("opening the session failed: {e}")))??;
    if let Some(name) = request.name {
        session.set_name(Some(name))?;
    }
    match state.host(Arc::clone(&session), cwd, Some(permissions)) {
        Ok(hosted) => Ok(hosted),
        Err(error) => {
            session
                .shutdown(robota::hooks::SessionEndReason::Other)
                .await;
            Err(error)
        }
    }
}

async fn create_session(
    State(state): State<AppState>,
    body: Result<Bytes, BytesRejection>,
) -> Answer<(StatusCode, Json<Value>)> {
    let request: CreateSessionRequest = parse_body(body, true)?;
    let hosted = open_and_host(&state, request).await?;
    Ok((StatusCode::CREATED, Json(to_value(&hosted.info())?)))
}

async fn list_sessions(State(state): State<AppState>) -> Answer<Json<SessionList>> {
    Ok(Json(SessionList {
        sessions: state.list().iter().map(|h| h.info()).collect(),
    }))
}

#[derive(Deserialize)]
struct CwdQuery {
    cwd: Option<String>,
}

async fn saved_sessions(
    State(state): State<AppState>,
    Query(query): Query<CwdQuery>,
) -> Answer<Json<Value>> {
    let cwd = state.options.roots.resolve(query.cwd.as_deref())?;
    let factory = state.factory.clone().ok_or_else(|| {
        ServeError::forbidden("this server hosts only the sessions its application attached")
    })?;
    let listing = tokio::task::spawn_blocking(move || factory.list_saved(&cwd))
        .await
        .map_err(|e| ServeError::internal(format!("listing failed: {e}")))??;
    Ok(Json(to_value(&listing)?))
}

async fn session_info(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Answer<Json<Value>> {
    Ok(Json(to_value(&state.get(&id)?.info())?))
}

async fn close_session(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Answer<Json<Value>> {
    state.close(&id).await?;
    Ok(Json(json!({"closed": true})))
}

async fn fork_session(
    State(state): State<AppState>,
    Path(id): Path<String>,
    body: Result<Bytes, BytesRejection>,
) -> Answer<(StatusCode, Json<Value>)> {
    let request: ForkSessionRequest = parse_body(body, true)?;
    let source = state.get(&id)?;
    let hosted = open_and_host(
        &state,
        CreateSessionRequest {
            cwd: Some(source.cwd.display().to_string()),
            resume: Some(id),
            fork: true,
            name: request.name,
        },
    )
    .await?;
    Ok((StatusCode::CREATED, Json(to_value(&hosted.info())?)))
}

async fn submit(
    State(state): State<AppState>,
    Path(id): Path<String>,
    body: Result<Bytes, BytesRejection>,
) -> Answer<(StatusCode, Json<Value>)> {
    state.check_open()?;
    let request: SubmitRequest = parse_body(body, false)?;
    let answer = state.get(&id)?.submit(request)?;
    Ok((StatusCode::ACCEPTED, Json(to_value(&answer)?)))
}

#[derive(Deserialize)]
struct WaitQuery {
    wait_ms: Option<u64>,
}

async fn prompt_status(
    State(state): State<AppState>,
    Path((id, prompt_id)): Path<(String, u64)>,
    Query(query): Query<WaitQuery>,
) -> Answer<Json<Value>> {
    let hosted = state.get(&id)?;
    let wait = Duration::from_millis(query.wait_ms.unwrap_or(0).min(MAX_PROMPT_WAIT_MS));
    let status = tokio::select! {
        status = hosted.prompt_status(prompt_id, wait) => status?,
        _ = state.shutdown.cancelled() => hosted.prompt_status(prompt_id, Duration::ZERO).await?,
    };
    Ok(Json(to_value(&status)?))
}

async fn cancel_prompt(
    State(state): State<AppState>,
    Path((id, prompt_id)): Path<(String, u64)>,
) -> Answer<Json<Value>> {
    let cancelled = state.get(&id)?.session.cancel_prompt(prompt_id);
    Ok(Json(json!({"cancelled": cancelled})))
}

async fn abort(State(state): State<AppState>, Path(id): Path<String>) -> Answer<Json<Value>> {
    state.get(&id)?.session.abort();
    Ok(Json(json!({"aborted": true})))
}

async fn list_commands(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Answer<Json<Value>> {
    let commands = state.get(&id)?.session.list_commands()?;
    Ok(Json(json!({"commands": to_value(&commands)?})))
}

async fn execute_command(
    State(state): State<AppState>,
    Path(id): Path<String>,
    body: Result<Bytes, BytesRejection>,
) -> Answer<Json<Value>> {
    state.check_open()?;
    let request: CommandRequest = parse_body(body, false)?;
    let hosted = state.get(&id)?;
    let result = hosted
        .session
        .execute_command(&request.name, &request.args)
        .await?;
    Ok(Json(to_value(&result)?))
}

async fn history(State(state): State<AppState>, Path(id): Path<String>) -> Answer<Json<Value>> {
    let entries = state.get(&id)?.session.get_full_history();
    Ok(Json(json!({"entries": to_value(&entries)?})))
}

async fn context(State(state): State<AppState>, Path(id): Path<String>) -> Answer<Json<Value>> {
    Ok(Json(to_value(
        &state.get(&id)?.session.get_context_state(),
    )?))
}

async fn get_name(State(state): State<AppState>, Path(id): Path<String>) -> Answer<Json<NameBody>> {
    Ok(Json(NameBody {
        name: state.get(&id)?.session.get_name(),
    }))
}

async fn set_name(
    State(state): State<AppState>,
    Path(id): Path<String>,
    body: Result<Bytes, BytesRejection>,
) -> Answer<Json<NameBody>> {
    let request: NameBody = parse_body(body, false)?;
    let hosted = state.get(&id)?;
    hosted.session.set_name(request.name)?;
    Ok(Json(NameBody {
        name: hosted.session.get_name(),
    }))
}

async fn pending_permissions(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Answer<Json<Value>> {
    let hosted = state.get(&id)?;
    let pending = hosted
        .permissions
        .as_ref()
        .map(|p| p.pending())
        .unwrap_or_default();
    Ok(Json(json!({"pending": to_value(&pending)?})))
}

async fn answer_permission(
    State(state): State<AppState>,
    Path((id, request_id)): Path<(String, String)>,
    body: Result<Bytes, BytesRejection>,
) -> Answer<Json<Value>> {
    let response: PermissionResponse = parse_body(body, false)?;
    state
        .get(&id)?
        .network_permissions()?
        .answer(&request_id, response)?;
    Ok(Json(json!({"resolved": true})))
}

/// The `after` a stream resumes from: `Last-Event-ID` first, then `?after=`.
pub(crate) fn resume_point(headers: &HeaderMap, after: Option<u64>) -> Answer<Option<u64>> {
    match headers.get("last-event-id") {
        Some(value) => value
            .to_str()
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(Some)
            .ok_or_else(|| {
                ServeError::invalid("`Last-Event-ID` must be an event `seq` (a number)")
            }),
        None => Ok(after),
    }
}
