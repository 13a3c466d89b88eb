//! The HTTP transport shared by the real providers: one `reqwest` client, the retry loop, idle
//! timeouts, cancellation, SSE decoding, and the mapping of HTTP failures to [`ProviderErrorKind`].
//!
//! A provider supplies the URL, headers and body of its request plus a [`StreamAssembler`] that
//! turns decoded SSE events into [`StreamEvent`]s and a [`ProviderResponse`]; this module does the
//! rest.
//!
//! # Retries and deltas already shown to the host
//!
//! Failed attempts (HTTP 429/500/502/503/504/529, an `overloaded_error` event, a refused or reset
//! connection, an idle timeout) are retried with exponential backoff and full jitter, honouring the
//! server's `retry-after` / `retry-after-ms`. Each retry is announced as [`StreamEvent::Retry`].
//!
//! A requested wait longer than the retry budget, [`HttpOptions::max_retry_wait`] (60 s), is not
//! sat out: the error is returned at once, carrying the wait in [`ProviderError::retry_after`] so
//! a host can schedule the retry, and its message says when the limit resets and that robota did
//! not wait because of the budget (naming the option that raises it), instead of the call hanging
//! silently for minutes. When the attempts run out on an error that named a wait, the message
//! says when the limit resets too.
//!
//! A retry is only made while the failed attempt has not passed anything to the host's sink. Once a
//! text, thinking or tool-call delta has been delivered, the host has shown it; replaying the
//! request would deliver a second, different answer on top of the first. So a failure after that
//! point is returned as an error (its message says the output had already streamed), and the
//! caller decides what to do with the partial turn.

use std::error::Error as _;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use rand::Rng;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use tokio_util::sync::CancellationToken;

use super::sse::{SseDecoder, SseError, SseEvent, DEFAULT_MAX_EVENT_BYTES};
use super::{ProviderResponse, StreamEvent, StreamSink};
use crate::message::{ProviderError, ProviderErrorKind};

/// Network settings for a provider: timeouts, retries, size caps and extra headers.
///
/// Construct with `HttpOptions { max_retries: 2, ..HttpOptions::default() }`.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpOptions {
    /// Longest silence allowed while waiting for the response headers or for the next chunk of the
    /// body. A stream that goes quiet longer is dropped as a network error. Default 120 s.
    pub idle_timeout: Duration,
    /// Longest time to establish the TCP (and TLS) connection. Default 30 s.
    pub connect_timeout: Duration,
    /// Retries after the first attempt (so `max_retries + 1` attempts in all). Default 4.
    pub max_retries: u32,
    /// Backoff ceiling for the first retry; it doubles per retry up to `max_backoff`. The actual
    /// delay is drawn uniformly from zero to the ceiling ("full jitter"). Default 500 ms.
    pub initial_backoff: Duration,
    /// The largest backoff ceiling. Default 30 s.
    pub max_backoff: Duration,
    /// The retry budget: the longest server-requested wait (`retry-after`) that is sat out
    /// before retrying. A longer one ends the call at once with the wait in
    /// [`ProviderError::retry_after`]. (`max_backoff` bounds only robota's own backoff.) Default 60 s. Provider config `max_retry_wait_ms`;
    /// settings `providers.<name>.options.maxRetryWaitMs`.
    pub max_retry_wait: Duration,
    /// The largest single server-sent event accepted. Default 16 MiB.
    pub max_event_bytes: usize,
    /// Extra request headers (e.g. for a gateway). They override the provider's own headers of the
    /// same name.
    pub headers: Vec<(String, String)>,
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            idle_timeout: Duration::from_secs(120),
            connect_timeout: Duration::from_secs(30),
            max_retries: 4,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(30),
            max_retry_wait: DEFAULT_MAX_RETRY_WAIT,
            max_event_bytes: DEFAULT_MAX_EVENT_BYTES,
            headers: Vec::new(),
        }
    }
}

/// The default of [`HttpOptions::max_retry_wait`].
pub const DEFAULT_MAX_RETRY_WAIT: Duration = Duration::from_secs(60);

/// How much of an error response body is read (for its message); the rest is dropped.
const MAX_ERROR_BODY_BYTES: usize = 64 * 1024;

/// What an assembler wants after an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Progress {
    /// Keep reading.
    Continue,
    /// The terminal event arrived; the response is complete.
    Done,
}

/// Passes events to the host's sink and remembers whether anything was passed, which decides
/// whether a failed attempt may be retried.
pub(crate) struct Emitter<'s, 'a> {
    sink: &'s StreamSink<'a>,
    emitted: bool,
}

impl<'s, 'a> Emitter<'s, 'a> {
    pub(crate) fn new(sink: &'s StreamSink<'a>) -> Self {
        Emitter {
            sink,
            emitted: false,
        }
    }

    /// Delivers one event to the host.
    pub(crate) fn emit(&mut self, event: StreamEvent) {
        self.emitted = true;
        (self.sink)(event);
    }

    /// Whether anything has been delivered.
    pub(crate) fn emitted(&self) -> bool {
        self.emitted
    }
}

/// Turns one provider's SSE events into stream events and a response. A fresh one per attempt.
pub(crate) trait StreamAssembler: Send {
    /// The terminal event's name, for the "stream ended before …" error.
    const TERMINAL: &'static str;

    /// Handles one decoded event.
    fn on_event(
        &mut self,
        event: SseEvent,
        emitter: &mut Emitter<'_, '_>,
    ) -> Result<Progress, ProviderError>;

    /// Whether a body that ended cleanly without the terminal event still carried a whole
    /// response (e.g. an OpenAI-compatible stream that stopped after its finish reason without
    /// `data: [DONE]`). A body cut by a transport error is an error whatever this says.
    fn complete_without_terminal(&self) -> bool {
        false
    }

    /// The response after the terminal event.
    fn finish(self) -> ProviderResponse;

    /// The partial response after cancellation (stop reason [`super::StopReason::Aborted`]).
    fn abort(self) -> ProviderResponse;
}

/// Per-attempt authentication: called right before every attempt (so a retry is signed anew;
/// SigV4 signatures include the time, OAuth tokens expire) with the request as it will be sent,
/// it returns headers to add (`authorization`, `x-amz-date`, …). Providers whose credentials are a
/// fixed header need none.
#[async_trait::async_trait]
pub(crate) trait RequestSigner: Send + Sync + std::fmt::Debug {
    /// The headers that authenticate `request`. An error ends the attempt (retried when the error
    /// says it is retryable, e.g. a token endpoint that did not answer).
    async fn sign(
        &self,
        request: &SignableRequest<'_>,
    ) -> Result<Vec<(HeaderName, HeaderValue)>, ProviderError>;
}

/// What a [`RequestSigner`] sees of a request.
#[derive(Debug)]
pub(crate) struct SignableRequest<'a> {
    /// `POST`.
    pub method: &'a str,
    /// The full URL.
    pub url: &'a str,
    /// The headers that will be sent (the provider's and [`HttpOptions::headers`]).
    pub headers: &'a HeaderMap,
    /// The body.
    pub body: &'a [u8],
}

/// Turns the bytes of a response body into the events an assembler reads, for bodies that are
/// not server-sent events (the SSE decoder is the default). Decoded payloads are handed over as
/// [`SseEvent`]s (`event` = the payload's type, `data` = its JSON), so one assembler serves
/// every framing of the same events.
pub(crate) trait BodyDecoder: Send {
    /// Decodes what `chunk` completes into `out`. An error ends the attempt (a malformed frame,
    /// an error the stream itself reported).
    fn feed(&mut self, chunk: &[u8], out: &mut Vec<SseEvent>) -> Result<(), ProviderError>;
}

/// Makes a fresh [`BodyDecoder`] per attempt; it gets the options in force (for size caps).
pub(crate) type DecoderFactory = Arc<dyn Fn(&HttpOptions) -> Box<dyn BodyDecoder> + Send + Sync>;

/// Provider-specific wording for errors.
#[derive(Debug, Clone)]
pub(crate) struct ErrorContext {
    /// Provider name, e.g. `anthropic`.
    pub provider: String,
    /// Base URL, named in network errors.
    pub base_url: String,
    /// What to do about an auth failure, e.g. "Set ANTHROPIC_API_KEY …".
    pub auth_hint: String,
}

/// One provider's HTTP client and request target.
#[derive(Clone)]
pub(crate) struct HttpTransport {
    client: reqwest::Client,
    url: String,
    headers: HeaderMap,
    options: HttpOptions,
    context: ErrorContext,
    signer: Option<Arc<dyn RequestSigner>>,
    decoder: Option<DecoderFactory>,
}

impl std::fmt::Debug for HttpTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpTransport")
            .field("url", &self.url)
            .field("options", &self.options)
            .field("signer", &self.signer)
            .field("custom_decoder", &self.decoder.is_some())
            .finish_non_exhaustive()
    }
}

/// The response body's decoder for one attempt.
enum Decoder {
    Sse(SseDecoder),
    Custom(Box<dyn BodyDecoder>),
}

enum Attempt {
    Done,
    Cancelled,
    Failed(ProviderError),
}

impl HttpTransport {
    /// Builds the client once. `headers` are the provider's own; `options.headers` override them.
    pub(crate) fn new(
        url: String,
        mut headers: HeaderMap,
        options: HttpOptions,
        context: ErrorContext,
    ) -> Result<Self, ProviderError> {
        for (name, value) in &options.headers {
            let header_name = HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
                ProviderError::new(
                    ProviderErrorKind::InvalidRequest,
                    &context.provider,
                    format!("invalid header name {name:?} in HttpOptions.headers"),
                )
            })?;
            let header_value = HeaderValue::from_str(value).map_err(|_| {
                ProviderError::new(
                    ProviderErrorKind::InvalidRequest,
                    &context.provider,
                    format!("invalid value for header {name:?} in HttpOptions.headers"),
                )
            })?;
            headers.insert(header_name, header_value);
        }
        let client = direct_client()
            .connect_timeout(options.connect_timeout)
            .tcp_nodelay(true)
            .build()
            .map_err(|e| {
                ProviderError::new(
                    ProviderErrorKind::Provider,
                    &context.provider,
                    format!("could not build the HTTP client: {}", error_chain(&e)),
                )
            })?;
        Ok(HttpTransport {
            client,
            url,
            headers,
            options,
            context,
            signer: None,
            decoder: None,
        })
    }

    /// The same transport, authenticating every attempt with `signer`.
    pub(crate) fn with_signer(mut self, signer: Arc<dyn RequestSigner>) -> Self {
        self.signer = Some(signer);
        self
    }

    /// The same transport, decoding response bodies with decoders from `factory` instead of as
    /// server-sent events.
    pub(crate) fn with_decoder(mut self, factory: DecoderFactory) -> Self {
        self.decoder = Some(factory);
        self
    }

    /// The options in force.
    pub(crate) fn options(&self) -> &HttpOptions {
        &self.options
    }

    /// Sends `body` and streams the answer through a fresh assembler per attempt, retrying as the
    /// module docs describe.
    pub(crate) async fn stream<A: StreamAssembler>(
        &self,
        body: Bytes,
        mut new_assembler: impl FnMut() -> A + Send,
        on_event: &StreamSink<'_>,
        cancel: &CancellationToken,
    ) -> Result<ProviderResponse, ProviderError> {
        let max_attempts = self.options.max_retries.saturating_add(1);
        let mut attempt = 1u32;
        loop {
            let mut assembler = new_assembler();
            let mut emitter = Emitter::new(on_event);
            let outcome = self
                .attempt(&body, &mut assembler, &mut emitter, cancel)
                .await;
            let error = match outcome {
                Attempt::Done => return Ok(assembler.finish()),
                Attempt::Cancelled => return Ok(assembler.abort()),
                Attempt::Failed(error) => error,
            };
            if emitter.emitted() {
                let mut error = error;
                error.message.push_str(
                    " (output had already streamed to the host, so the request was not retried)",
                );
                return Err(error);
            }
            if !error.retryable {
                return Err(error);
            }
            if attempt >= max_attempts {
                return Err(out_of_attempts(error, max_attempts, SystemTime::now()));
            }
            let delay = match retry_delay(attempt, error.retry_after, &self.options) {
                Some(delay) => delay,
                None => return Err(not_waited(error, &self.options, SystemTime::now())),
            };
            on_event(StreamEvent::Retry {
                attempt,
                max_attempts,
                delay,
                error,
            });
            tokio::select! {
                biased;
                _ = cancel.cancelled() => return Ok(new_assembler().abort()),
                _ = tokio::time::sleep(delay) => {}
            }
            attempt += 1;
        }
    }

    async fn attempt<A: StreamAssembler>(
        &self,
        body: &Bytes,
        assembler: &mut A,
        emitter: &mut Emitter<'_, '_>,
        cancel: &CancellationToken,
    ) -> Attempt {
        if cancel.is_cancelled() {
            return Attempt::Cancelled;
        }
        let idle = self.options.idle_timeout;
        let mut headers = self.headers.clone();
        if let Some(signer) = &self.signer {
            let request = SignableRequest {
                method: "POST",
                url: &self.url,
                headers: &headers,
                body,
            };
            let signed = tokio::select! {
                biased;
                _ = cancel.cancelled() => return Attempt::Cancelled,
                signed = tokio::time::timeout(idle, signer.sign(&request)) => match signed {
                    Err(_) => return Attempt::Failed(self.idle_error("credentials")),
                    Ok(Err(error)) => return Attempt::Failed(error),
                    Ok(Ok(signed)) => signed,
                },
            };
            for (name, value) in signed {
                headers.insert(name, value);
            }
        }
        let request = self
            .client
            .post(&self.url)
            .headers(headers)
            .body(body.clone())
            .send();
        let mut response = tokio::select! {
            biased;
            _ = cancel.cancelled() => return Attempt::Cancelled,
            sent = tokio::time::timeout(idle, request) => match sent {
                Err(_) => return Attempt::Failed(self.idle_error("the response headers")),
                Ok(Err(e)) => return Attempt::Failed(self.send_error(&e)),
                Ok(Ok(response)) => response,
            },
        };

        let status = response.status();
        let is_json = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.contains("json"));
        if !status.is_success() || is_json {
            // An error response, or a JSON body where an event stream was expected (some gateways
            // answer errors with 200): read it for the provider's own message.
            let retry_after = parse_retry_after(response.headers(), SystemTime::now());
            let request_id = request_id(response.headers());
            let body = match self.read_error_body(response, cancel).await {
                Ok(body) => body,
                Err(outcome) => return outcome,
            };
            let error = if status.is_success() {
                self.unexpected_json(&body)
            } else {
                classify_http_error(&self.context, status.as_u16(), &body, request_id.as_deref())
            };
            let retry_after = retry_after.or_else(|| retry_info_delay(&body));
            return Attempt::Failed(error.with_retry_after(retry_after));
        }

        let mut decoder = match &self.decoder {
            None => Decoder::Sse(SseDecoder::with_max_event_bytes(
                self.options.max_event_bytes,
            )),
            Some(factory) => Decoder::Custom(factory(&self.options)),
        };
        let mut events = Vec::new();
        // The cancellation future and the idle timer live across the whole stream: creating them
        // per chunk (a waiter registration and a timer-wheel insert for every SSE event) was the
        // largest per-delta cost. The timer is only moved when it fires early, i.e. at most once
        // per idle period, instead of on every chunk.
        let cancelled = cancel.cancelled();
        tokio::pin!(cancelled);
        let mut last_activity = tokio::time::Instant::now();
        let idle_timer = tokio::time::sleep_until(last_activity + idle);
        tokio::pin!(idle_timer);
        loop {
            let chunk = tokio::select! {
                biased;
                _ = &mut cancelled => return Attempt::Cancelled,
                next = response.chunk() => match next {
                    Err(e) => return Attempt::Failed(self.body_error(&e)),
                    Ok(Some(chunk)) => chunk,
                    Ok(None) => break,
                },
                _ = &mut idle_timer => {
                    let deadline = last_activity + idle;
                    if tokio::time::Instant::now() >= deadline {
                        return Attempt::Failed(self.idle_error("the next chunk"));
                    }
                    idle_timer.as_mut().reset(deadline);
                    continue;
                }
            };
            last_activity = tokio::time::Instant::now();
            let fed = match &mut decoder {
                Decoder::Sse(sse) => sse.feed(&chunk, &mut events).map_err(|e| self.sse_error(e)),
                Decoder::Custom(custom) => custom.feed(&chunk, &mut events),
            };
            if let Err(error) = fed {
                return Attempt::Failed(error);
            }
            for event in events.drain(..) {
                match assembler.on_event(event, emitter) {
                    Ok(Progress::Continue) => {}
                    Ok(Progress::Done) => {
                        drain_in_background(response);
                        return Attempt::Done;
                    }
                    Err(error) => return Attempt::Failed(error),
                }
                // The host may cancel from inside its sink; stop before the next delta.
                if cancel.is_cancelled() {
                    return Attempt::Cancelled;
                }
            }
        }
        let last = match &mut decoder {
            Decoder::Sse(sse) => sse.finish(),
            Decoder::Custom(_) => None,
        };
        if let Some(event) = last {
            match assembler.on_event(event, emitter) {
                Ok(Progress::Done) => return Attempt::Done,
                Ok(Progress::Continue) => {}
                Err(error) => return Attempt::Failed(error),
            }
        }
        if assembler.complete_without_terminal() {
            return Attempt::Done;
        }
        Attempt::Failed(ProviderError::new(
            ProviderErrorKind::Provider,
            &self.context.provider,
            format!(
                "stream ended before {} (the connection to {} closed early)",
                A::TERMINAL,
                self.context.base_url
            ),
        ))
    }

    /// Reads up to [`MAX_ERROR_BODY_BYTES`] of an error body, racing idle timeout and cancel.
    async fn read_error_body(
        &self,
        mut response: reqwest::Response,
        cancel: &CancellationToken,
    ) -> Result<String, Attempt> {
        let idle = self.options.idle_timeout;
        let mut body = Vec::new();
        loop {
            let chunk = tokio::select! {
                biased;
                _ = cancel.cancelled() => return Err(Attempt::Cancelled),
                next = tokio::time::timeout(idle, response.chunk()) => match next {
                    // A truncated error body still says something; use what arrived.
                    Err(_) | Ok(Err(_)) | Ok(Ok(None)) => break,
                    Ok(Ok(Some(chunk))) => chunk,
                },
            };
            let room = MAX_ERROR_BODY_BYTES.saturating_sub(body.len());
            body.extend_from_slice(&chunk[..chunk.len().min(room)]);
            if body.len() >= MAX_ERROR_BODY_BYTES {
                break;
            }
        }
        Ok(String::from_utf8_lossy(&body).into_owned())
    }

    fn idle_error(&self, waiting_for: &str) -> ProviderError {
        ProviderError::new(
            ProviderErrorKind::Network,
            &self.context.provider,
            format!(
                "{} sent nothing for {} while waiting for {waiting_for} (idle timeout, \
                 HttpOptions.idle_timeout); the connection was dropped",
                self.context.base_url,
                format_duration(self.options.idle_timeout)
            ),
        )
    }

    fn send_error(&self, error: &reqwest::Error) -> ProviderError {
        let what = if error.is_connect() {
            "could not connect to"
        } else if error.is_timeout() {
            "timed out talking to"
        } else {
            "request failed to"
        };
        ProviderError::new(
            ProviderErrorKind::Network,
            &self.context.provider,
            format!(
                "{what} {}: {}; check the base URL and your network",
                self.context.base_url,
                error_chain(error)
            ),
        )
    }

    fn body_error(&self, error: &reqwest::Error) -> ProviderError {
        ProviderError::new(
            ProviderErrorKind::Network,
            &self.context.provider,
            format!(
                "the connection to {} broke mid-stream: {}",
                self.context.base_url,
                error_chain(error)
            ),
        )
    }

    fn sse_error(&self, error: SseError) -> ProviderError {
        ProviderError::new(
            ProviderErrorKind::Provider,
            &self.context.provider,
            format!("{error} (raise HttpOptions.max_event_bytes if this is expected)"),
        )
    }

    fn unexpected_json(&self, body: &str) -> ProviderError {
        let parsed = parse_error_body(body);
        if parsed.message.is_some() || parsed.error_type.is_some() || parsed.code.is_some() {
            return classify_stream_error(&self.context.provider, &parsed);
        }
        ProviderError::new(
            ProviderErrorKind::Provider,
            &self.context.provider,
            format!(
                "expected an event stream from {} but got JSON: {}",
                self.context.base_url,
                truncate(body, 500)
            ),
        )
    }
}

/// How long a finished response may take to deliver its last bytes in the background.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(5);

/// Reads what is left of a response whose terminal event has arrived (normally just the end of
/// the chunked body), off the caller's path. A body read to its end lets the keep-alive
/// connection go back to the pool, so the next round skips a new TCP and TLS handshake; a body
/// dropped early closes the connection. (Cancelled and failed attempts drop theirs on purpose.)
fn drain_in_background(mut response: reqwest::Response) {
    if let Ok(runtime) = tokio::runtime::Handle::try_current() {
        runtime.spawn(async move {
            let drain = async { while let Ok(Some(_)) = response.chunk().await {} };
            let _ = tokio::time::timeout(DRAIN_TIMEOUT, drain).await;
        });
    }
}

/// The longest server-requested wait that is sat out.
fn retry_budget(options: &HttpOptions) -> Duration {
    options.max_retry_wait
}

/// The delay before retry number `attempt` (1-based: the attempt that failed), or `None` when the
/// server asked for a wait too long to sit out.
pub(crate) fn retry_delay(
    attempt: u32,
    retry_after: Option<Duration>,
    options: &HttpOptions,
) -> Option<Duration> {
    if let Some(wait) = retry_after {
        return (wait <= retry_budget(options)).then_some(wait);
    }
    let ceiling = backoff_ceiling(attempt, options);
    let millis = u64::try_from(ceiling.as_millis()).unwrap_or(u64::MAX);
    Some(Duration::from_millis(rand::rng().random_range(0..=millis)))
}

/// `error` (whose `retry_after` is over the budget) with a message that says when the limit
/// resets, that robota did not wait, and why. `now` is when the error arrived.
fn not_waited(error: ProviderError, options: &HttpOptions, now: SystemTime) -> ProviderError {
    let why = format!(
        "robota did not wait, because that is longer than its retry budget of {} \
         (HttpOptions.max_retry_wait; provider option `max_retry_wait_ms`, or `maxRetryWaitMs` in \
         a settings provider profile)",
        format_duration(retry_budget(options))
    );
    with_retry_time(error, now, &why)
}

/// `error`, the last of `attempts` attempts; when the provider said when to come back, the
/// message says so too.
fn out_of_attempts(error: ProviderError, attempts: u32, now: SystemTime) -> ProviderError {
    let why = format!(
        "robota gave up after {attempts} attempt{} (HttpOptions.max_retries; provider option \
         `max_retries`, or `maxRetries` in a settings provider profile)",
        if attempts == 1 { "" } else { "s" }
    );
    with_retry_time(error, now, &why)
}

/// Appends "The rate limit resets in N s (at <RFC 3339 time>); <why>" to the message of an error
/// that carries a `retry_after`; other errors are returned as they are.
fn with_retry_time(mut error: ProviderError, now: SystemTime, why: &str) -> ProviderError {
    let Some(wait) = error.retry_after else {
        return error;
    };
    let seconds = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
    let at = time::OffsetDateTime::from(now + Duration::from_secs(seconds))
        .format(&time::format_description::well_known::Rfc3339)
        .map(|at| format!(" (at {at})"))
        .unwrap_or_default();
    let what = if error.kind == ProviderErrorKind::RateLimit {
        "The rate limit resets"
    } else {
        "The provider asked to retry"
    };
    error.message = format!(
        "{}. {what} in {seconds} s{at}; {why}",
        error.message.trim_end_matches('.'),
    );
    error
}

/// `min(max_backoff, initial_backoff * 2^(attempt-1))`.
pub(crate) fn backoff_ceiling(attempt: u32, options: &HttpOptions) -> Duration {
    let exponent = attempt.saturating_sub(1).min(31);
    options
        .initial_backoff
        .checked_mul(1u32 << exponent)
        .unwrap_or(options.max_backoff)
        .min(options.max_backoff)
}

/// Reads `retry-after-ms` (milliseconds, may be fractional) or `retry-after` (seconds, or an
/// HTTP-date relative to `now`).
pub(crate) fn parse_retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    if let Some(ms) = headers
        .get("retry-after-ms")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|ms| ms.is_finite() && *ms >= 0.0)
    {
        return Some(Duration::from_secs_f64(ms / 1000.0));
    }
    let value = headers.get("retry-after")?.to_str().ok()?.trim();
    if let Ok(seconds) = value.parse::<f64>() {
        return (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds));
    }
    let at = parse_http_date(value)?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// The wait a Google API error body asks for (Gemini sends no `retry-after` header): the
/// `retryDelay` (`"39s"`, `"1.5s"`) of a `google.rpc.RetryInfo` entry in `error.details`.
fn retry_info_delay(body: &str) -> Option<Duration> {
    let value: serde_json::Value = serde_json::from_str(body).ok()?;
    let details = value.get("error")?.get("details")?.as_array()?;
    details.iter().find_map(|detail| {
        let kind = detail.get("@type")?.as_str()?;
        if !kind.ends_with("google.rpc.RetryInfo") {
            return None;
        }
        let seconds = detail
            .get("retryDelay")?
            .as_str()?
            .strip_suffix('s')?
            .parse::<f64>()
            .ok()?;
        (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds))
    })
}

/// Parses an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the HTTP-date form servers send.
fn parse_http_date(value: &str) -> Option<SystemTime> {
    let format = time::macros::format_description!(
        "[weekday repr:short], [day] [month repr:short] [year] [hour]:[minute]:[second] GMT"
    );
    let parsed = time::PrimitiveDateTime::parse(value, &format).ok()?;
    Some(parsed.assume_utc().into())
}

fn request_id(headers: &HeaderMap) -> Option<String> {
    ["request-id", "x-request-id", "x-amzn-requestid"]
        .iter()
        .find_map(|name| headers.get(*name)?.to_str().ok())
        .map(str::to_string)
}

/// The fields providers put in error bodies: Anthropic
/// `{"type":"error","error":{"type","message"}}`, OpenAI `{"error":{"message","type","code"}}`.
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct ErrorBody {
    pub error_type: Option<String>,
    pub code: Option<String>,
    pub message: Option<String>,
}

/// Extracts [`ErrorBody`] from a JSON error body (or an in-stream error event); tolerant of shape.
pub(crate) fn parse_error_body(body: &str) -> ErrorBody {
    let Ok(value) = serde_json::from_str::<serde_json::Value>(body) else {
        return ErrorBody::default();
    };
    error_body_from_value(&value)
}

/// Like [`parse_error_body`], from a parsed value.
pub(crate) fn error_body_from_value(value: &serde_json::Value) -> ErrorBody {
    let as_text = |v: &serde_json::Value| match v {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Null => None,
        other => Some(other.to_string()),
    };
    let inner = match value.get("error") {
        Some(serde_json::Value::String(message)) => {
            return ErrorBody {
                message: Some(message.clone()),
                ..ErrorBody::default()
            }
        }
        Some(inner @ serde_json::Value::Object(_)) => inner,
        _ => value,
    };
    ErrorBody {
        // Google APIs name the error in `status` (`RESOURCE_EXHAUSTED`, …) and put the HTTP
        // status in `code`.
        error_type: inner
            .get("type")
            .or_else(|| inner.get("status"))
            .and_then(as_text),
        code: inner.get("code").and_then(as_text),
        message: inner.get("message").and_then(as_text),
    }
}

/// Whether an error says the prompt is too long for the model.
pub(crate) fn is_context_length(body: &ErrorBody) -> bool {
    if body.code.as_deref() == Some("context_length_exceeded") {
        return true;
    }
    let Some(message) = body.message.as_deref() else {
        return false;
    };
    let message = message.to_ascii_lowercase();
    [
        "prompt is too long",
        "context_length_exceeded",
        "maximum context length",
        "context length",
        "context window",
        "exceed context limit",
        "exceeds the context",
        // Gemini: "The input token count (…) exceeds the maximum number of tokens allowed (…)".
        "exceeds the maximum number of tokens",
    ]
    .iter()
    .any(|needle| message.contains(needle))
}

/// Whether a 400 says the API key itself is bad (Gemini: "API key not valid. Please pass a valid
/// API key.", "API key expired. Please renew the API key.").
fn is_rejected_api_key(body: &ErrorBody) -> bool {
    body.message.as_deref().is_some_and(|message| {
        let message = message.to_ascii_lowercase();
        message.contains("api key not valid") || message.contains("api key expired")
    })
}

fn is_overloaded(body: &ErrorBody) -> bool {
    body.error_type.as_deref() == Some("overloaded_error")
        || body.code.as_deref() == Some("overloaded_error")
}

/// Maps an HTTP error response to a typed error that carries the provider's own message.
pub(crate) fn classify_http_error(
    context: &ErrorContext,
    status: u16,
    body: &str,
    request_id: Option<&str>,
) -> ProviderError {
    let parsed = parse_error_body(body);
    let said = match (&parsed.message, body.trim()) {
        (Some(message), _) => message.clone(),
        (None, "") => "(empty response body)".to_string(),
        (None, raw) => truncate(raw, 500),
    };
    let mut detail = said;
    if let Some(kind) = parsed.error_type.as_deref().or(parsed.code.as_deref()) {
        detail = format!("{detail} [{kind}]");
    }
    if let Some(id) = request_id {
        detail = format!("{detail} (request id {id})");
    }
    let provider = &context.provider;
    let (kind, message) = if is_overloaded(&parsed) || status == 529 {
        (
            ProviderErrorKind::Overloaded,
            format!("{provider} is overloaded: {detail}"),
        )
    } else {
        match status {
            // Gemini answers a bad key with 400 INVALID_ARGUMENT ("API key not valid").
            s @ (400 | 401 | 403) if s != 400 || is_rejected_api_key(&parsed) => (
                ProviderErrorKind::Auth,
                format!(
                    "{provider} rejected the credentials: {detail}. {}",
                    context.auth_hint
                ),
            ),
            429 => (
                ProviderErrorKind::RateLimit,
                format!("{provider} rate limit reached: {detail}"),
            ),
            400 | 413 if is_context_length(&parsed) => (
                ProviderErrorKind::ContextLength,
                format!(
                    "the prompt does not fit the model's context window: {detail}; \
                     compact or shorten the conversation"
                ),
            ),
            400 | 404 | 413 | 422 => (
                ProviderErrorKind::InvalidRequest,
                format!("{provider} rejected the request: {detail}"),
            ),
            _ if status >= 500 => (
                ProviderErrorKind::Provider,
                format!("{provider} server error: {detail}"),
            ),
            _ => (
                ProviderErrorKind::Provider,
                format!("{provider} answered HTTP {status}: {detail}"),
            ),
        }
    };
    ProviderError::new(kind, provider, message).with_status(status)
}

/// Maps an error delivered inside the stream (no HTTP status) to a typed error.
pub(crate) fn classify_stream_error(provider: &str, body: &ErrorBody) -> ProviderError {
    let mut detail = body
        .message
        .clone()
        .unwrap_or_else(|| "(no message)".to_string());
    let kind_name = body.error_type.as_deref().or(body.code.as_deref());
    if let Some(kind) = kind_name {
        detail = format!("{detail} [{kind}]");
    }
    let kind = if is_overloaded(body) {
        ProviderErrorKind::Overloaded
    } else if is_context_length(body) {
        ProviderErrorKind::ContextLength
    } else {
        match kind_name.unwrap_or("") {
            "rate_limit_error" | "rate_limit_exceeded" | "insufficient_quota" => {
                ProviderErrorKind::RateLimit
            }
            "authentication_error" | "permission_error" | "invalid_api_key" => {
                ProviderErrorKind::Auth
            }
            "invalid_request_error" | "not_found_error" | "request_too_large" => {
                ProviderErrorKind::InvalidRequest
            }
            _ => ProviderErrorKind::Provider,
        }
    };
    let mut error = ProviderError::new(
        kind,
        provider,
        format!("{provider} reported an error mid-stream: {detail}"),
    );
    if kind_name == Some("api_error") || kind_name == Some("server_error") {
        // The provider's own "internal error" inside the stream: as retryable as a 500.
        error = error.with_retryable(true);
    }
    // insufficient_quota will not clear by waiting.
    if kind_name == Some("insufficient_quota") {
        error = error.with_retryable(false);
    }
    error
}

/// A malformed-event error.
pub(crate) fn malformed_event(
    provider: &str,
    data: &str,
    error: &serde_json::Error,
) -> ProviderError {
    ProviderError::new(
        ProviderErrorKind::Provider,
        provider,
        format!(
            "{provider} sent a malformed stream event ({error}): {}",
            truncate(data, 200)
        ),
    )
}

/// `error` and its sources, joined with ": " (reqwest's own message alone is vague).
pub(crate) fn error_chain(error: &reqwest::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

fn format_duration(duration: Duration) -> String {
    if duration.subsec_millis() == 0 {
        format!("{} s", duration.as_secs())
    } else {
        format!("{} ms", duration.as_millis())
    }
}

/// At most `max` characters of `text`, with an ellipsis when cut.
pub(crate) fn truncate(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}

/// A client builder for robota's own HTTP calls (model APIs, token endpoints, probes): system
/// proxies are not consulted, because model APIs are reached directly and a stray `HTTP_PROXY`
/// must not reroute loopback servers (Ollama, LM Studio, mock-llm); robota's user agent.
pub(crate) fn direct_client() -> reqwest::ClientBuilder {
    reqwest::Client::builder()
        .no_proxy()
        .user_agent(concat!("robota/", env!("CARGO_PKG_VERSION")))
}

/// A whole response body of at most `max` bytes; `Ok(None)` when it is larger (reading stops
/// at the chunk that crosses the cap).
pub(crate) async fn read_capped_body(
    mut response: reqwest::Response,
    max: usize,
) -> Result<Option<Vec<u8>>, reqwest::Error> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        if body.len() + chunk.len() > max {
            return Ok(None);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(Some(body))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn context() -> ErrorContext {
        ErrorContext {
            provider: "anthropic".to_string(),
            base_url: "https://api.anthropic.com".to_string(),
            auth_hint: "Set ANTHROPIC_API_KEY.".to_string(),
        }
    }

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(
                HeaderName::from_bytes(name.as_bytes()).expect("name"),
                HeaderValue::from_str(value).expect("value"),
            );
        }
        map
    }

    #[test]
    fn defaults_match_the_documented_values() {
        let options = HttpOptions::default();
        assert_eq!(options.idle_timeout, Duration::from_secs(120));
        assert_eq!(options.max_retries, 4);
        assert_eq!(options.initial_backoff, Duration::from_millis(500));
        assert_eq!(options.max_backoff, Duration::from_secs(30));
        assert_eq!(options.max_event_bytes, 16 * 1024 * 1024);
    }

    #[test]
    fn retry_after_seconds() {
        let now = SystemTime::now();
        assert_eq!(
            parse_retry_after(&headers(&[("retry-after", "3")]), now),
            Some(Duration::from_secs(3))
        );
        assert_eq!(
            parse_retry_after(&headers(&[("retry-after", " 1.5 ")]), now),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(
            parse_retry_after(&headers(&[("retry-after", "0")]), now),
            Some(Duration::ZERO)
        );
    }

    #[test]
    fn retry_after_ms_wins_over_retry_after() {
        let now = SystemTime::now();
        assert_eq!(
            parse_retry_after(
                &headers(&[("retry-after", "10"), ("retry-after-ms", "250")]),
                now
            ),
            Some(Duration::from_millis(250))
        );
    }

    #[test]
    fn retry_after_http_date() {
        // Sun, 06 Nov 1994 08:49:37 GMT = 784111777 seconds after the epoch.
        let date = SystemTime::UNIX_EPOCH + Duration::from_secs(784_111_777);
        let now = date - Duration::from_secs(5);
        assert_eq!(
            parse_retry_after(
                &headers(&[("retry-after", "Sun, 06 Nov 1994 08:49:37 GMT")]),
                now
            ),
            Some(Duration::from_secs(5))
        );
        // A date in the past means "now".
        let later = date + Duration::from_secs(60);
        assert_eq!(
            parse_retry_after(
                &headers(&[("retry-after", "Sun, 06 Nov 1994 08:49:37 GMT")]),
                later
            ),
            Some(Duration::ZERO)
        );
    }

    #[test]
    fn retry_after_garbage_is_ignored() {
        let now = SystemTime::now();
        assert_eq!(
            parse_retry_after(&headers(&[("retry-after", "soon")]), now),
            None
        );
        assert_eq!(
            parse_retry_after(&headers(&[("retry-after", "-1")]), now),
            None
        );
        assert_eq!(
            parse_retry_after(&headers(&[("retry-after-ms", "NaN")]), now),
            None
        );
        assert_eq!(parse_retry_after(&HeaderMap::new(), now), None);
    }

    #[test]
    fn backoff_ceiling_doubles_and_caps() {
        let options = HttpOptions {
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(3),
            ..HttpOptions::default()
        };
        assert_eq!(backoff_ceiling(1, &options), Duration::from_millis(500));
        assert_eq!(backoff_ceiling(2, &options), Duration::from_millis(1000));
        assert_eq!(backoff_ceiling(3, &options), Duration::from_millis(2000));
        assert_eq!(backoff_ceiling(4, &options), Duration::from_secs(3));
        assert_eq!(backoff_ceiling(200, &options), Duration::from_secs(3));
    }

    #[test]
    fn jittered_delay_stays_within_bounds_and_varies() {
        let options = HttpOptions {
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_millis(800),
            ..HttpOptions::default()
        };
        let mut seen = std::collections::HashSet::new();
        for attempt in 1..=6 {
            let ceiling = backoff_ceiling(attempt, &options);
            for _ in 0..200 {
                let delay = retry_delay(attempt, None, &options).expect("delay");
                assert!(delay <= ceiling, "{delay:?} > {ceiling:?}");
                seen.insert(delay);
            }
        }
        assert!(seen.len() > 10, "full jitter should spread delays");
    }

    #[test]
    fn retry_after_is_honoured_exactly_up_to_the_cap() {
        let raised = HttpOptions {
            max_retry_wait: Duration::from_secs(300),
            ..HttpOptions::default()
        };
        // (budget, requested wait, sat out?)
        for (options, secs, waited) in [
            (HttpOptions::default(), 7, true),
            (HttpOptions::default(), 60, true),
            (HttpOptions::default(), 61, false),
            (raised.clone(), 120, true),
            (raised, 301, false),
        ] {
            let wait = Duration::from_secs(secs);
            assert_eq!(
                retry_delay(1, Some(wait), &options),
                waited.then_some(wait),
                "{secs} s with a budget of {:?}",
                options.max_retry_wait
            );
        }
    }

    #[test]
    fn a_wait_over_the_budget_says_when_and_why_robota_did_not_wait() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_767_225_600); // 2026-01-01
        let error = classify_http_error(&context(), 429, "", None)
            .with_retry_after(Some(Duration::from_millis(119_400)));
        let error = not_waited(error, &HttpOptions::default(), now);
        assert_eq!(error.kind, ProviderErrorKind::RateLimit);
        assert_eq!(error.retry_after, Some(Duration::from_millis(119_400)));
        assert!(
            error.message.ends_with(
                "The rate limit resets in 120 s (at 2026-01-01T00:02:00Z); robota did not \
                 wait, because that is longer than its retry budget of 60 s \
                 (HttpOptions.max_retry_wait; provider option `max_retry_wait_ms`, or \
                 `maxRetryWaitMs` in a settings provider profile)"
            ),
            "{}",
            error.message
        );
        assert!(
            error.message.starts_with("anthropic rate limit reached"),
            "{}",
            error.message
        );

        // Out of attempts with a wait the budget allowed: when, and why there was no retry.
        let error = classify_http_error(&context(), 503, "", None)
            .with_retry_after(Some(Duration::from_secs(5)));
        let error = out_of_attempts(error, 3, now);
        assert!(
            error.message.ends_with(
                "The provider asked to retry in 5 s (at 2026-01-01T00:00:05Z); robota gave up \
                 after 3 attempts (HttpOptions.max_retries; provider option `max_retries`, or \
                 `maxRetries` in a settings provider profile)"
            ),
            "{}",
            error.message
        );
        // Without a wait the message is left alone.
        let plain = classify_http_error(&context(), 503, "", None);
        assert_eq!(out_of_attempts(plain.clone(), 3, now), plain);
    }

    #[test]
    fn status_mapping() {
        let ctx = context();
        let kind = |status: u16, body: &str| classify_http_error(&ctx, status, body, None).kind;
        assert_eq!(kind(401, ""), ProviderErrorKind::Auth);
        assert_eq!(kind(403, ""), ProviderErrorKind::Auth);
        assert_eq!(kind(429, ""), ProviderErrorKind::RateLimit);
        assert_eq!(kind(529, ""), ProviderErrorKind::Overloaded);
        assert_eq!(kind(400, "{}"), ProviderErrorKind::InvalidRequest);
        assert_eq!(kind(404, ""), ProviderErrorKind::InvalidRequest);
        assert_eq!(kind(413, ""), ProviderErrorKind::InvalidRequest);
        assert_eq!(kind(422, ""), ProviderErrorKind::InvalidRequest);
        assert_eq!(kind(500, ""), ProviderErrorKind::Provider);
        assert_eq!(kind(418, ""), ProviderErrorKind::Provider);
        assert_eq!(
            kind(
                500,
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#
            ),
            ProviderErrorKind::Overloaded
        );
    }

    #[test]
    fn retryable_follows_status() {
        let ctx = context();
        for status in [429, 500, 502, 503, 504, 529] {
            assert!(
                classify_http_error(&ctx, status, "", None).retryable,
                "{status}"
            );
        }
        for status in [400, 401, 403, 404, 413, 422, 501] {
            assert!(
                !classify_http_error(&ctx, status, "", None).retryable,
                "{status}"
            );
        }
    }

    #[test]
    fn context_length_wording_of_both_providers() {
        let ctx = context();
        let anthropic = r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#;
        let openai = r#"{"error":{"message":"This model's maximum context length is 128000 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#;
        let error = classify_http_error(&ctx, 400, anthropic, None);
        assert_eq!(error.kind, ProviderErrorKind::ContextLength);
        assert!(error.message.contains("prompt is too long"));
        assert!(!error.retryable);
        let error = classify_http_error(&ctx, 400, openai, None);
        assert_eq!(error.kind, ProviderErrorKind::ContextLength);
        assert!(error.message.contains("maximum context length"));
    }

    #[test]
    fn error_message_includes_provider_message_hint_and_request_id() {
        let ctx = context();
        let body = r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#;
        let error = classify_http_error(&ctx, 401, body, Some("req_123"));
        assert!(
            error.message.contains("invalid x-api-key"),
            "{}",
            error.message
        );
        assert!(error.message.contains("ANTHROPIC_API_KEY"));
        assert!(error.message.contains("req_123"));
        assert_eq!(error.status, Some(401));
        // Non-JSON bodies are quoted (shortened).
        let error = classify_http_error(&ctx, 502, "<html>Bad Gateway</html>", None);
        assert!(error.message.contains("Bad Gateway"));
    }

    #[test]
    fn stream_error_mapping() {
        let of = |json: &str| classify_stream_error("p", &parse_error_body(json));
        let overloaded =
            of(r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#);
        assert_eq!(overloaded.kind, ProviderErrorKind::Overloaded);
        assert!(overloaded.retryable);
        assert!(overloaded.message.contains("Overloaded"));
        let api = of(r#"{"type":"error","error":{"type":"api_error","message":"Internal"}}"#);
        assert_eq!(api.kind, ProviderErrorKind::Provider);
        assert!(api.retryable);
        let rate = of(r#"{"error":{"message":"slow down","type":"rate_limit_exceeded"}}"#);
        assert_eq!(rate.kind, ProviderErrorKind::RateLimit);
        let ctx = of(r#"{"error":{"message":"too long","code":"context_length_exceeded"}}"#);
        assert_eq!(ctx.kind, ProviderErrorKind::ContextLength);
        let plain = of(r#"{"error":"something broke"}"#);
        assert_eq!(plain.kind, ProviderErrorKind::Provider);
        assert!(plain.message.contains("something broke"));
        assert!(!plain.retryable);
    }

    #[test]
    fn error_body_with_numeric_code() {
        let body = parse_error_body(r#"{"error":{"message":"m","code":429}}"#);
        assert_eq!(body.code.as_deref(), Some("429"));
        assert_eq!(body.message.as_deref(), Some("m"));
    }

    #[test]
    fn gemini_error_bodies() {
        let ctx = context();
        let bad_key = r#"{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT"}}"#;
        let error = classify_http_error(&ctx, 400, bad_key, None);
        assert_eq!(error.kind, ProviderErrorKind::Auth);
        assert!(
            error.message.contains("[INVALID_ARGUMENT]"),
            "{}",
            error.message
        );
        let too_long = r#"{"error":{"code":400,"message":"The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).","status":"INVALID_ARGUMENT"}}"#;
        assert_eq!(
            classify_http_error(&ctx, 400, too_long, None).kind,
            ProviderErrorKind::ContextLength
        );
        let other = r#"{"error":{"code":400,"message":"Invalid JSON payload","status":"INVALID_ARGUMENT"}}"#;
        assert_eq!(
            classify_http_error(&ctx, 400, other, None).kind,
            ProviderErrorKind::InvalidRequest
        );
        let quota = r#"{"error":{"code":429,"message":"Quota exceeded","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"39s"}]}}"#;
        assert_eq!(retry_info_delay(quota), Some(Duration::from_secs(39)));
        assert_eq!(retry_info_delay(other), None);
        assert_eq!(retry_info_delay("not json"), None);
    }

    #[test]
    fn truncate_respects_char_boundaries() {
        assert_eq!(truncate("héllo", 2), "hé…");
        assert_eq!(truncate("hi", 5), "hi");
    }
}
