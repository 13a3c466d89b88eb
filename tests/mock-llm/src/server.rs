//! The HTTP side: accepting connections, routing, recording requests, handing out turns, and
//! writing planned SSE streams with the pacing and connection-level faults the plan asks for.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::{Bytes, BytesMut};
use http_body_util::{BodyExt, LengthLimitError, Limited};
use hyper::body::{Body, Frame, Incoming, SizeHint};
use hyper::header::{HeaderName, HeaderValue, CACHE_CONTROL, CONTENT_TYPE, RETRY_AFTER};
use hyper::http::request::Parts;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::sync::mpsc;
use tokio::task::JoinSet;

use crate::aws;
use crate::bedrock::{self, Cloud};
use crate::cache::{CacheSim, InputUsage};
use crate::models;
use crate::plan::{self, to_json, Ctx, Dialect, End, Plan};
use crate::responses;
use crate::script::{Fault, Script};
use crate::sse;

/// Request bodies larger than this get a 413 (real APIs cap requests well below it).
const MAX_REQUEST_BODY: usize = 64 * 1024 * 1024;

/// One request as the server received it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedRequest {
    /// Arrival order, starting at 0 (reset by `POST /_mock/reset`).
    pub seq: u64,
    /// HTTP method, e.g. `POST`.
    pub method: String,
    /// Path without the query string, e.g. `/v1/messages`.
    pub path: String,
    /// The query string, if any (without `?`).
    pub query: Option<String>,
    /// Headers with lowercased names; repeated headers are joined with `, `.
    pub headers: BTreeMap<String, String>,
    /// The body parsed as JSON, or the raw text (lossy UTF-8) when it is not JSON.
    pub body: Value,
    /// Index into `turns` of the turn this request consumed; `null` if it consumed none
    /// (rejected request, exhausted script, unknown path).
    pub turn: Option<usize>,
}

impl RecordedRequest {
    /// The header `name` (lowercase), if it was sent.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(String::as_str)
    }
}

/// State shared by all connections of one server.
pub(crate) struct Shared {
    inner: Mutex<Inner>,
}

struct Inner {
    script: Arc<Script>,
    cursor: usize,
    seq: u64,
    requests: Vec<RecordedRequest>,
    cache: CacheSim,
}

/// What a model request gets.
enum Assignment {
    Turn {
        index: usize,
        script: Arc<Script>,
    },
    Exhausted {
        turns: usize,
    },
    /// The request was recorded but does not consume a turn.
    None,
}

impl Shared {
    pub(crate) fn new(script: Script) -> Self {
        Shared {
            inner: Mutex::new(Inner {
                script: Arc::new(script),
                cursor: 0,
                seq: 0,
                requests: Vec::new(),
                cache: CacheSim::default(),
            }),
        }
    }

    // A panic while holding the lock cannot leave the data half-updated in a way that matters
    // here, so a poisoned lock is simply taken over.
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub(crate) fn requests(&self) -> Vec<RecordedRequest> {
        self.lock().requests.clone()
    }

    pub(crate) fn set_script(&self, script: Script) {
        let mut inner = self.lock();
        inner.script = Arc::new(script);
        inner.cursor = 0;
        inner.cache.clear();
    }

    /// The input usage of a request under the script's prompt-cache simulation, if it has one.
    fn input_usage(&self, dialect: Dialect, body: &Value) -> Option<InputUsage> {
        let mut inner = self.lock();
        let sim = inner.script.prompt_cache?;
        Some(inner.cache.account(dialect, body, &sim))
    }

    pub(crate) fn reset(&self) {
        let mut inner = self.lock();
        inner.cursor = 0;
        inner.seq = 0;
        inner.requests.clear();
        inner.cache.clear();
    }

    /// Numbers and records a request; when `consume`, also hands it the next turn. Both happen
    /// under one lock so the recorded order matches the turn order.
    fn admit(&self, mut record: RecordedRequest, consume: bool) -> (u64, Assignment) {
        let mut inner = self.lock();
        let seq = inner.seq;
        inner.seq += 1;
        let turns = inner.script.turns.len();
        let assignment = if !consume {
            Assignment::None
        } else if turns == 0 || (inner.cursor >= turns && !inner.script.repeat) {
            Assignment::Exhausted { turns }
        } else {
            let index = inner.cursor % turns;
            // Wrapping keeps the cursor bounded under `repeat`; without it the cursor stops
            // at `turns` and every later request is reported as exhausted.
            inner.cursor = if inner.script.repeat {
                (index + 1) % turns
            } else {
                index + 1
            };
            Assignment::Turn {
                index,
                script: Arc::clone(&inner.script),
            }
        };
        if inner.script.record {
            record.seq = seq;
            record.turn = match &assignment {
                Assignment::Turn { index, .. } => Some(*index),
                _ => None,
            };
            inner.requests.push(record);
        }
        (seq, assignment)
    }
}

/// Binds a listener with a deep accept backlog, so bursts of a thousand connects are queued
/// rather than refused.
pub(crate) fn bind(addr: SocketAddr) -> io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        TcpSocket::new_v4()?
    } else {
        TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(4096)
}

/// Accepts connections until the task is aborted. Connection tasks live in a `JoinSet` owned by
/// this future, so aborting it aborts every open connection too.
pub(crate) async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    let mut connections = JoinSet::new();
    loop {
        while connections.try_join_next().is_some() {}
        match listener.accept().await {
            Ok((stream, _)) => {
                // Each flushed piece must leave as its own segment (`split_bytes`), not wait
                // for Nagle's algorithm to merge it with the next.
                let _ = stream.set_nodelay(true);
                connections.spawn(serve_connection(stream, Arc::clone(&shared)));
            }
            // Typically EMFILE under load: back off instead of spinning, keep serving.
            Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    }
}

async fn serve_connection(stream: TcpStream, shared: Arc<Shared>) {
    let kill = Arc::new(AtomicBool::new(false));
    let io = TokioIo::new(KillableStream {
        inner: stream,
        kill: Arc::clone(&kill),
    });
    let service = hyper::service::service_fn(move |req| {
        let shared = Arc::clone(&shared);
        let kill = Arc::clone(&kill);
        async move { Ok::<_, Infallible>(route(&shared, kill, req).await) }
    });
    // No header-read timeout: it would need a timer and can only get in a test's way.
    let _ = hyper::server::conn::http1::Builder::new()
        .header_read_timeout(None)
        .serve_connection(io, service)
        .await;
}

/// A TCP stream that, when a `reset` fault marked it, closes with RST instead of FIN.
struct KillableStream {
    inner: TcpStream,
    kill: Arc<AtomicBool>,
}

impl Drop for KillableStream {
    fn drop(&mut self) {
        if self.kill.load(Ordering::SeqCst) {
            // SO_LINGER 0 makes the close below send RST. Data written earlier was already
            // flushed to the socket, so the client still receives it before the reset.
            let _ = self.inner.set_zero_linger();
        }
    }
}

impl AsyncRead for KillableStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for KillableStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// The error a streaming body ends with when a fault drops the connection; hyper reacts by
/// closing the connection without the terminating chunk.
#[derive(Debug, thiserror::Error)]
#[error("mock-llm dropped the connection on purpose (scripted fault)")]
pub(crate) struct Aborted;

type Piece = Result<Bytes, Aborted>;

/// Response bodies: a fixed JSON document or a planned SSE stream.
pub(crate) enum MockBody {
    Full(Option<Bytes>),
    Stream(Box<Streaming>),
}

/// A streaming body whose producer runs inside the connection task (so aborting the connection
/// stops it) and which yields `Pending` once after every piece. hyper flushes its write buffer
/// whenever the body is pending, so every piece reaches the socket as its own write instead of
/// being coalesced with the next one.
pub(crate) struct Streaming {
    producer: Option<Pin<Box<dyn Future<Output = ()> + Send>>>,
    rx: mpsc::Receiver<Piece>,
    flush_first: bool,
}

impl Body for MockBody {
    type Data = Bytes;
    type Error = Aborted;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Aborted>>> {
        match self.get_mut() {
            MockBody::Full(bytes) => Poll::Ready(bytes.take().map(|b| Ok(Frame::data(b)))),
            MockBody::Stream(s) => s.poll_piece(cx),
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(self, MockBody::Full(None))
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            MockBody::Full(Some(b)) => SizeHint::with_exact(b.len() as u64),
            MockBody::Full(None) => SizeHint::with_exact(0),
            MockBody::Stream(_) => SizeHint::default(),
        }
    }
}

impl Streaming {
    fn poll_piece(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Aborted>>> {
        if self.flush_first {
            self.flush_first = false;
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        if let Some(producer) = self.producer.as_mut() {
            if producer.as_mut().poll(cx).is_ready() {
                self.producer = None;
            }
        }
        match self.rx.poll_recv(cx) {
            Poll::Ready(Some(Ok(bytes))) => {
                self.flush_first = true;
                Poll::Ready(Some(Ok(Frame::data(bytes))))
            }
            Poll::Ready(Some(Err(aborted))) => Poll::Ready(Some(Err(aborted))),
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    }
}

/// Writes a plan into the body channel: events (paced, framed, split), then the ending.
async fn write_plan(plan: Plan, tx: mpsc::Sender<Piece>, kill: Arc<AtomicBool>) {
    let mut carry = BytesMut::new();
    for (i, event) in plan.events.iter().enumerate() {
        if i > 0 && !plan.delay.is_zero() {
            // The client should see everything so far before the pause.
            if !send(&tx, carry.split().freeze()).await || !pause(&tx, plan.delay).await {
                return;
            }
        }
        if plan.eventstream {
            carry.extend_from_slice(&bedrock::encode(event));
        } else {
            carry.extend_from_slice(&sse::encode(event, &plan.sse));
        }
        if plan.split_bytes == 0 {
            if !send(&tx, carry.split().freeze()).await {
                return;
            }
        } else {
            // The byte stream is cut every `split_bytes` regardless of event boundaries, so
            // pieces straddle events; a partial tail waits for the next event's bytes.
            while carry.len() >= plan.split_bytes {
                if !send(&tx, carry.split_to(plan.split_bytes).freeze()).await {
                    return;
                }
            }
        }
    }
    if !send(&tx, carry.split().freeze()).await {
        return;
    }
    if let End::Abort { stall, rst } = plan.end {
        if let Some(silence) = stall {
            if !pause(&tx, silence).await {
                return;
            }
        }
        kill.store(rst, Ordering::SeqCst);
        let _ = tx.send(Err(Aborted)).await;
    }
    // On `End::Clean`, dropping `tx` ends the body and hyper writes the terminating chunk.
}

/// Sends a non-empty piece; false when the client has gone.
async fn send(tx: &mpsc::Sender<Piece>, bytes: Bytes) -> bool {
    bytes.is_empty() || tx.send(Ok(bytes)).await.is_ok()
}

/// Sleeps, returning false early if the client goes away meanwhile.
async fn pause(tx: &mpsc::Sender<Piece>, duration: Duration) -> bool {
    tokio::select! {
        _ = tokio::time::sleep(duration) => true,
        _ = tx.closed() => false,
    }
}

async fn route(
    shared: &Shared,
    kill: Arc<AtomicBool>,
    req: Request<Incoming>,
) -> Response<MockBody> {
    let method = req.method().clone();
    let path = req.uri().path().to_owned();
    if let Some(route) = AwsRoute::of(&method, &path) {
        return aws_credentials(shared, route, req).await;
    }
    if method == Method::POST {
        if path == "/token" {
            return token(shared, req).await;
        }
        if let Some(cloud) = bedrock::route(&path) {
            return model_request(shared, kill, Dialect::Anthropic, Some(cloud), req).await;
        }
    }
    if method == Method::GET && path == METADATA_TOKEN_PATH {
        return metadata_token(shared, req).await;
    }
    match (method, path.as_str()) {
        (Method::GET, "/_mock/health") => json(StatusCode::OK, r#"{"ok":true}"#.to_owned()),
        (Method::GET, "/_mock/requests") => json(StatusCode::OK, to_json(&shared.requests())),
        (Method::POST, "/_mock/script") => replace_script(shared, req).await,
        (Method::POST, "/_mock/reset") => {
            shared.reset();
            json(StatusCode::OK, r#"{"ok":true}"#.to_owned())
        }
        (_, "/_mock/health" | "/_mock/requests" | "/_mock/script" | "/_mock/reset") => {
            generic_error(
                StatusCode::METHOD_NOT_ALLOWED,
                &format!("wrong method for {path}"),
            )
        }
        (Method::GET, _) if models::Listing::of(&path, req.headers()).is_some() => {
            list_models(shared, req).await
        }
        (Method::POST, "/v1/messages") => {
            model_request(shared, kill, Dialect::Anthropic, None, req).await
        }
        (Method::POST, "/v1/chat/completions" | "/chat/completions") => {
            model_request(shared, kill, Dialect::OpenAi, None, req).await
        }
        (Method::POST, p) if gemini_model(p).is_some() => {
            model_request(shared, kill, Dialect::Gemini, None, req).await
        }
        (Method::POST, "/v1/responses" | "/responses" | responses::DASHSCOPE_PATH) => {
            model_request(shared, kill, Dialect::Responses, None, req).await
        }
        (method, _) => {
            let known = matches!(
                path.as_str(),
                "/v1/messages"
                    | "/v1/chat/completions"
                    | "/chat/completions"
                    | "/v1/responses"
                    | "/responses"
                    | responses::DASHSCOPE_PATH
            ) || gemini_model(&path).is_some();
            let (parts, body) = req.into_parts();
            let bytes = read_body(body).await.unwrap_or_default();
            shared.admit(record(&parts, body_value(&bytes)), false);
            if known {
                generic_error(
                    StatusCode::METHOD_NOT_ALLOWED,
                    &format!("use POST for {path}"),
                )
            } else {
                generic_error(
                    StatusCode::NOT_FOUND,
                    &format!("mock-llm has no route {method} {path}"),
                )
            }
        }
    }
}

/// A model-listing request (see [`models`]): recorded, no turn consumed.
async fn list_models(shared: &Shared, req: Request<Incoming>) -> Response<MockBody> {
    let (parts, body) = req.into_parts();
    let bytes = read_body(body).await.unwrap_or_default();
    shared.admit(record(&parts, body_value(&bytes)), false);
    let Some(listing) = models::Listing::of(parts.uri.path(), &parts.headers) else {
        return generic_error(StatusCode::NOT_FOUND, "not a model listing");
    };
    let script = Arc::clone(&shared.lock().script);
    let (status, body) = models::answer(listing, &script, &parts.headers);
    json(status, body)
}

async fn replace_script(shared: &Shared, req: Request<Incoming>) -> Response<MockBody> {
    let bytes = match read_body(req.into_body()).await {
        Ok(b) => b,
        Err(status) => return generic_error(status, "could not read the script body"),
    };
    let parsed = std::str::from_utf8(&bytes)
        .map_err(|e| crate::MockError::Script(format!("script is not UTF-8: {e}")))
        .and_then(Script::from_json_str);
    match parsed {
        Ok(script) => {
            let turns = script.turns.len();
            shared.set_script(script);
            json(StatusCode::OK, format!(r#"{{"ok":true,"turns":{turns}}}"#))
        }
        Err(e) => generic_error(StatusCode::BAD_REQUEST, &e.to_string()),
    }
}

/// What the server needs from a valid model request.
struct RequestInfo {
    model: String,
    include_usage: bool,
}

/// Rejects requests the real API would reject for shape, so client bugs show up here too.
fn check_request(
    dialect: Dialect,
    body: &Value,
    cloud: Option<&Cloud>,
) -> Result<RequestInfo, String> {
    let obj = body
        .as_object()
        .ok_or("request body must be a JSON object")?;
    if let Some(cloud) = cloud {
        cloud.check(body)?;
    }
    let model = match cloud {
        Some(cloud) => cloud.model(),
        None => obj
            .get("model")
            .and_then(Value::as_str)
            .ok_or("`model` is required and must be a string")?,
    };
    if dialect == Dialect::Responses {
        // `input` is a string (one user message) or a list of items.
        match obj.get("input") {
            Some(Value::String(_)) => {}
            Some(Value::Array(items)) => {
                let store = obj.get("store").and_then(Value::as_bool).unwrap_or(true);
                responses::check_input(items, store)?;
            }
            _ => return Err("`input` is required and must be a string or an array".into()),
        }
    } else {
        let Some(messages) = obj.get("messages").and_then(Value::as_array) else {
            return Err("`messages` is required and must be an array".into());
        };
        crate::history::check(dialect, messages)?;
    }
    if dialect == Dialect::Anthropic && !obj.get("max_tokens").is_some_and(Value::is_u64) {
        return Err("`max_tokens` is required and must be a non-negative integer".into());
    }
    // Bedrock streams by endpoint, not by a body field.
    let streams_by_path = cloud.is_some_and(Cloud::eventstream);
    if !streams_by_path && obj.get("stream") != Some(&Value::Bool(true)) {
        return Err("mock-llm only serves streaming requests: set \"stream\": true".into());
    }
    let include_usage = obj
        .get("stream_options")
        .and_then(|o| o.get("include_usage"))
        .and_then(Value::as_bool)
        .unwrap_or(false);
    Ok(RequestInfo {
        model: model.to_owned(),
        include_usage,
    })
}

/// The model and method of a Gemini path `/v1beta/models/{model}:{method}`.
fn gemini_model(path: &str) -> Option<(&str, &str)> {
    let rest = path.strip_prefix("/v1beta/models/")?;
    let (model, method) = rest.rsplit_once(':')?;
    let known = matches!(method, "generateContent" | "streamGenerateContent");
    (known && !model.is_empty() && !model.contains('/')).then_some((model, method))
}

/// Checks a Gemini request: the streaming method with `alt=sse`, and `contents`.
fn check_gemini_request(parts: &Parts, body: &Value) -> Result<RequestInfo, String> {
    let (model, method) = gemini_model(parts.uri.path()).ok_or("unknown Gemini path")?;
    if method != "streamGenerateContent" {
        return Err(format!(
            "mock-llm only serves streaming requests: use :streamGenerateContent, not :{method}"
        ));
    }
    let sse = parts
        .uri
        .query()
        .is_some_and(|q| q.split('&').any(|pair| pair == "alt=sse"));
    if !sse {
        return Err(
            "mock-llm serves Gemini streams as server-sent events only: add ?alt=sse".into(),
        );
    }
    let obj = body
        .as_object()
        .ok_or("request body must be a JSON object")?;
    let Some(contents) = obj.get("contents").and_then(Value::as_array) else {
        return Err("* GenerateContentRequest.contents: contents is not specified".into());
    };
    crate::history::check(Dialect::Gemini, contents)?;
    Ok(RequestInfo {
        model: model.to_owned(),
        include_usage: false,
    })
}

async fn model_request(
    shared: &Shared,
    kill: Arc<AtomicBool>,
    dialect: Dialect,
    cloud: Option<Cloud>,
    req: Request<Incoming>,
) -> Response<MockBody> {
    let cloud = cloud.as_ref();
    let (parts, body) = req.into_parts();
    let dashscope = dialect == Dialect::Responses && parts.uri.path() == responses::DASHSCOPE_PATH;
    let bytes = match read_body(body).await {
        Ok(b) => b,
        Err(status) => {
            shared.admit(record(&parts, Value::Null), false);
            let msg = format!("request body unreadable or over {MAX_REQUEST_BODY} bytes");
            return dialect_error(dialect, cloud, status, &msg, 0);
        }
    };
    let parsed = serde_json::from_slice::<Value>(&bytes)
        .map_err(|e| format!("request body is not valid JSON: {e}"));
    let checked = parsed
        .as_ref()
        .map_err(Clone::clone)
        .and_then(|v| match dialect {
            Dialect::Gemini => check_gemini_request(&parts, v),
            _ => check_request(dialect, v, cloud).and_then(|info| {
                if dashscope {
                    responses::check_dashscope(v)?;
                }
                Ok(info)
            }),
        });
    let info = match checked {
        Ok(info) => info,
        Err(msg) => {
            let (seq, _) = shared.admit(record(&parts, body_value(&bytes)), false);
            return dialect_error(dialect, cloud, StatusCode::BAD_REQUEST, &msg, seq);
        }
    };
    let (seq, assignment) = shared.admit(record(&parts, body_value(&bytes)), true);
    let (index, script) = match assignment {
        Assignment::Turn { index, script } => (index, script),
        Assignment::Exhausted { turns } => {
            let msg = format!(
                "mock-llm script exhausted: all {turns} turns were already used \
                 (this was request #{seq}); add turns or set \"repeat\": true"
            );
            return dialect_error(dialect, cloud, StatusCode::INTERNAL_SERVER_ERROR, &msg, seq);
        }
        // `admit` always assigns when asked to consume; answer sanely all the same.
        Assignment::None => {
            let msg = "mock-llm assigned no turn";
            return dialect_error(dialect, cloud, StatusCode::INTERNAL_SERVER_ERROR, msg, seq);
        }
    };
    // `index` came from this script's own length, so it is in range.
    let Some(turn) = script.turns.get(index) else {
        return dialect_error(
            dialect,
            cloud,
            StatusCode::INTERNAL_SERVER_ERROR,
            "turn out of range",
            seq,
        );
    };

    if let Some(Fault::Status {
        status,
        retry_after,
        error_type,
        message,
        code,
        headers,
    }) = &turn.fault
    {
        let status = StatusCode::from_u16(*status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let mut resp = match cloud {
            Some(Cloud::Bedrock { .. }) => {
                bedrock_error(status, error_type.as_deref(), message.as_deref())
            }
            _ => json(
                status,
                plan::error_body(
                    dialect,
                    status.as_u16(),
                    error_type.as_deref(),
                    message.as_deref(),
                    code.as_deref(),
                ),
            ),
        };
        add_request_id(&mut resp, dialect, cloud, seq);
        let h = resp.headers_mut();
        if let Some(Ok(v)) = retry_after.as_deref().map(HeaderValue::from_str) {
            h.insert(RETRY_AFTER, v);
        }
        for (name, value) in headers {
            if let (Ok(n), Ok(v)) = (
                HeaderName::from_bytes(name.as_bytes()),
                HeaderValue::from_str(value),
            ) {
                h.append(n, v);
            }
        }
        return resp;
    }

    let hosted_tools = match (&parsed, dialect) {
        (Ok(body), Dialect::Responses) => responses::hosted_tools(body),
        _ => Vec::new(),
    };
    let input_usage = parsed
        .ok()
        .and_then(|body| shared.input_usage(dialect, &body));
    let ctx = Ctx {
        model: &info.model,
        seq,
        turn_index: index,
        input_usage,
        include_usage: dialect == Dialect::OpenAi && info.include_usage,
        created: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0),
        hosted_tools,
        dashscope,
    };
    let mut plan = plan::plan(dialect, turn, &ctx);
    plan.eventstream = cloud.is_some_and(Cloud::eventstream);
    let content_type = if plan.eventstream {
        "application/vnd.amazon.eventstream"
    } else {
        "text/event-stream; charset=utf-8"
    };
    let (tx, rx) = mpsc::channel(8);
    let body = MockBody::Stream(Box::new(Streaming {
        producer: Some(Box::pin(write_plan(plan, tx, kill))),
        rx,
        flush_first: false,
    }));
    let mut resp = Response::new(body);
    let h = resp.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    h.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    add_request_id(&mut resp, dialect, cloud, seq);
    resp
}

/// Reads a whole request body; the error is the status to answer with.
async fn read_body(body: Incoming) -> Result<Bytes, StatusCode> {
    match Limited::new(body, MAX_REQUEST_BODY).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(e) if e.downcast_ref::<LengthLimitError>().is_some() => {
            Err(StatusCode::PAYLOAD_TOO_LARGE)
        }
        Err(_) => Err(StatusCode::BAD_REQUEST),
    }
}

fn body_value(bytes: &[u8]) -> Value {
    if bytes.is_empty() {
        return Value::Null;
    }
    serde_json::from_slice(bytes)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(bytes).into_owned()))
}

fn record(parts: &Parts, body: Value) -> RecordedRequest {
    let mut headers: BTreeMap<String, String> = BTreeMap::new();
    for (name, value) in &parts.headers {
        let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
        headers
            .entry(name.as_str().to_owned())
            .and_modify(|v| {
                v.push_str(", ");
                v.push_str(&value);
            })
            .or_insert(value);
    }
    RecordedRequest {
        seq: 0,
        method: parts.method.as_str().to_owned(),
        path: parts.uri.path().to_owned(),
        query: parts.uri.query().map(str::to_owned),
        headers,
        body,
        turn: None,
    }
}

fn json(status: StatusCode, body: String) -> Response<MockBody> {
    let mut resp = Response::new(MockBody::Full(Some(Bytes::from(body))));
    *resp.status_mut() = status;
    resp.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    resp
}

/// An error in the endpoint's own shape, for problems detected by mock-llm itself.
fn dialect_error(
    dialect: Dialect,
    cloud: Option<&Cloud>,
    status: StatusCode,
    message: &str,
    seq: u64,
) -> Response<MockBody> {
    let mut resp = match cloud {
        Some(Cloud::Bedrock { .. }) => bedrock_error(status, None, Some(message)),
        _ => json(
            status,
            plan::error_body(dialect, status.as_u16(), None, Some(message), None),
        ),
    };
    add_request_id(&mut resp, dialect, cloud, seq);
    resp
}

/// A Bedrock error response: `{"message": …}` with the exception named in `x-amzn-ErrorType`.
fn bedrock_error(
    status: StatusCode,
    error_type: Option<&str>,
    message: Option<&str>,
) -> Response<MockBody> {
    let (body, error_type) = bedrock::error_response(status.as_u16(), error_type, message);
    let mut resp = json(status, body);
    if let Ok(v) = HeaderValue::from_str(&error_type) {
        resp.headers_mut().insert("x-amzn-errortype", v);
    }
    resp
}

/// `POST /token`: an OAuth token endpoint for service-account key files and gcloud user
/// credentials whose `token_uri` points here. The request (form-encoded: a signed JWT
/// `assertion`, or a `refresh_token`) is recorded; every call returns a fresh token, except that
/// the refresh token `revoked` is refused the way Google refuses one (400 `invalid_grant`).
async fn token(shared: &Shared, req: Request<Incoming>) -> Response<MockBody> {
    let (parts, body) = req.into_parts();
    let bytes = read_body(body).await.unwrap_or_default();
    let revoked = String::from_utf8_lossy(&bytes)
        .split('&')
        .any(|pair| pair == "refresh_token=revoked");
    let (seq, _) = shared.admit(record(&parts, body_value(&bytes)), false);
    if revoked {
        return json(
            StatusCode::BAD_REQUEST,
            r#"{"error":"invalid_grant","error_description":"Token has been expired or revoked."}"#
                .to_owned(),
        );
    }
    json(
        StatusCode::OK,
        bedrock::token_response(seq, parts.uri.query()),
    )
}

/// The path of the Google Cloud metadata server's token for the attached service account.
const METADATA_TOKEN_PATH: &str = "/computeMetadata/v1/instance/service-accounts/default/token";

/// `GET /computeMetadata/v1/instance/service-accounts/default/token`: the metadata server's
/// token (for clients pointed here by `GCE_METADATA_HOST`). Like the real one it answers 403
/// without `Metadata-Flavor: Google`. Recorded; `?expires_in=N` shortens the token's life.
async fn metadata_token(shared: &Shared, req: Request<Incoming>) -> Response<MockBody> {
    let (parts, body) = req.into_parts();
    let _ = read_body(body).await;
    let (seq, _) = shared.admit(record(&parts, Value::Null), false);
    let flavored = parts
        .headers
        .get("metadata-flavor")
        .is_some_and(|v| v.as_bytes() == b"Google");
    if !flavored {
        let mut resp = json(
            StatusCode::FORBIDDEN,
            "Missing Metadata-Flavor:Google header.".to_owned(),
        );
        resp.headers_mut()
            .insert("content-type", HeaderValue::from_static("text/html"));
        return resp;
    }
    let mut resp = json(
        StatusCode::OK,
        bedrock::token_response(seq, parts.uri.query()),
    );
    resp.headers_mut()
        .insert("metadata-flavor", HeaderValue::from_static("Google"));
    resp
}

/// The AWS credential endpoints (see [`aws`]).
#[derive(Clone, Copy)]
enum AwsRoute {
    Sts,
    Sso,
    Ecs,
}

impl AwsRoute {
    fn of(method: &Method, path: &str) -> Option<Self> {
        match (method, path) {
            (&Method::POST, "/") => Some(AwsRoute::Sts),
            (&Method::GET, "/federation/credentials") => Some(AwsRoute::Sso),
            (&Method::GET, p) if p.starts_with("/v2/credentials/") => Some(AwsRoute::Ecs),
            _ => None,
        }
    }
}

/// STS, SSO `GetRoleCredentials` or the ECS credential endpoint: the request is recorded (STS's
/// form body as text) and answered with temporary keys; no turn is consumed.
async fn aws_credentials(
    shared: &Shared,
    route: AwsRoute,
    req: Request<Incoming>,
) -> Response<MockBody> {
    let (parts, body) = req.into_parts();
    let bytes = read_body(body).await.unwrap_or_default();
    let (seq, _) = shared.admit(record(&parts, body_value(&bytes)), false);
    let header = |name: &str| parts.headers.get(name).and_then(|v| v.to_str().ok());
    let answer = match route {
        AwsRoute::Sts => aws::sts(&bytes, header("authorization"), seq),
        AwsRoute::Sso => {
            aws::sso_role_credentials(parts.uri.query(), header("x-amz-sso_bearer_token"), seq)
        }
        AwsRoute::Ecs => aws::ecs_credentials(seq),
    };
    let mut resp = Response::new(MockBody::Full(Some(Bytes::from(answer.body))));
    *resp.status_mut() = StatusCode::from_u16(answer.status).unwrap_or(StatusCode::OK);
    let content_type = if answer.xml {
        "text/xml"
    } else {
        "application/json"
    };
    resp.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    if let Ok(v) = HeaderValue::from_str(&format!("mock-aws-{seq}")) {
        resp.headers_mut().insert("x-amzn-requestid", v);
    }
    resp
}

/// Errors outside the model endpoints use Anthropic's error shape.
fn generic_error(status: StatusCode, message: &str) -> Response<MockBody> {
    json(
        status,
        plan::error_body(
            Dialect::Anthropic,
            status.as_u16(),
            None,
            Some(message),
            None,
        ),
    )
}

fn add_request_id(
    resp: &mut Response<MockBody>,
    dialect: Dialect,
    cloud: Option<&Cloud>,
    seq: u64,
) {
    let name = match (dialect, cloud) {
        (_, Some(Cloud::Bedrock { .. })) => "x-amzn-requestid",
        (Dialect::Anthropic, _) => "request-id",
        (Dialect::OpenAi | Dialect::Responses, _) => "x-request-id",
        // The Gemini API sends no request id header.
        (Dialect::Gemini, _) => return,
    };
    if let Ok(v) = HeaderValue::from_str(&format!("req_mock_{seq}")) {
        resp.headers_mut().insert(name, v);
    }
}
