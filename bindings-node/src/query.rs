//! [`NativeQuery`]: the engine's `create_query` as a JavaScript class; `createQuery` in the
//! facade returns a function over it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use napi::bindgen_prelude::within_runtime_if_available;
use napi::threadsafe_function::ThreadsafeFunctionCallMode;
use napi::{Env, Status};
use napi_derive::napi;
use tokio::sync::Notify;

use robota::api::ApiError;
use robota::framework::query::{create_query, Query, QueryError, QueryOptions};

use crate::host::{HostBridge, JsDispatcher};
use crate::options::build_options;
use crate::session::EventFunction;
use crate::{api_error, to_json};

fn query_error(e: QueryError) -> ApiError {
    ApiError::from(e)
}

/// Answer text on its way to JavaScript: appended by the engine, flushed by a delivery task to
/// the weak, bounded `onTextDelta` function (text waiting while JavaScript is busy is sent as
/// one piece, so the engine never waits).
struct TextPipe {
    pending: Mutex<String>,
    notify: Notify,
    stopped: AtomicBool,
}

impl TextPipe {
    fn push(&self, text: &str) {
        self.pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push_str(text);
        self.notify.notify_one();
    }

    fn is_empty(&self) -> bool {
        self.pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_empty()
    }

    /// Hands the waiting text to `function` under the lock, so it counts as pending until
    /// JavaScript's queue has accepted it.
    fn flush(&self, function: &EventFunction) -> Status {
        let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
        if pending.is_empty() {
            return Status::Ok;
        }
        let status = function.call(pending.clone(), ThreadsafeFunctionCallMode::NonBlocking);
        if status == Status::Ok {
            pending.clear();
        }
        status
    }
}

fn spawn_text_delivery(pipe: Arc<TextPipe>, function: EventFunction) {
    napi::bindgen_prelude::spawn(async move {
        while !pipe.stopped.load(Ordering::Acquire) && !function.aborted() {
            let notified = pipe.notify.notified();
            match pipe.flush(&function) {
                Status::Ok if pipe.is_empty() => {
                    let _ = tokio::time::timeout(Duration::from_secs(1), notified).await;
                }
                Status::Ok => {}
                Status::QueueFull => tokio::time::sleep(Duration::from_micros(200)).await,
                // Closing: the JavaScript environment is gone.
                _ => return,
            }
        }
    });
}

/// A reusable query over one session (the engine's `Query`). Use `createQuery` from
/// `@robota/native`.
#[napi]
pub struct NativeQuery {
    query: Arc<Query>,
    _bridge: Arc<HostBridge>,
    text: Option<Arc<TextPipe>>,
}

#[napi]
impl NativeQuery {
    /// Creates the query's session from the options document (JSON, built by the facade), the
    /// host dispatcher `(requestJson) => Promise<replyJson>` and, optionally, a receiver of the
    /// answer text as it streams (both held weakly).
    #[napi(constructor)]
    pub fn new(
        env: Env,
        options_json: String,
        #[napi(ts_arg_type = "(request: string) => Promise<string>")] host: JsDispatcher,
        #[napi(ts_arg_type = "((text: string) => void) | undefined | null")] on_text_delta: Option<
            EventFunction,
        >,
    ) -> napi::Result<Self> {
        let bridge = HostBridge::new(host);
        let text = on_text_delta.map(|function| {
            let pipe = Arc::new(TextPipe {
                pending: Mutex::new(String::new()),
                notify: Notify::new(),
                stopped: AtomicBool::new(false),
            });
            spawn_text_delivery(Arc::clone(&pipe), function);
            pipe
        });
        let sink = text.clone();
        let query = within_runtime_if_available(|| -> Result<Query, ApiError> {
            let built = build_options(&options_json, &bridge)?;
            if built.host_store {
                return Err(ApiError::invalid_argument(
                    "a query has no `sessionStore`; use an InteractiveSession opened with \
                     `InteractiveSession.open` to save sessions in your own store",
                ));
            }
            let session = built.session;
            let mut options = QueryOptions::new(session.cwd.clone(), Arc::clone(&session.provider));
            options.settings = session.settings.clone();
            options.persistence = session.persistence.clone();
            options.max_turns = session.max_turns;
            options.allowed_tools = built.allowed_tools;
            options.disallowed_tools = built.disallowed_tools;
            if let Some(pipe) = sink {
                options.on_text_delta = Some(Arc::new(move |text: &str| pipe.push(text)));
            }
            options.session = Some(session);
            create_query(options).map_err(query_error)
        })
        .map_err(api_error)?;
        crate::exit::stop_with_env(&env, query.session());
        Ok(NativeQuery {
            query: Arc::new(query),
            _bridge: bridge,
            text,
        })
    }

    /// Runs one full agent turn; resolves to the `QueryResult` as JSON once the streamed text
    /// has been handed to `onTextDelta`. `outputFormatJson` (`{"type": "json_schema", "schema":
    /// {...}}`) shapes this call's final answer.
    #[napi]
    pub async fn query(
        &self,
        prompt: String,
        output_format_json: Option<String>,
    ) -> napi::Result<String> {
        let output_format = crate::output_format_arg(output_format_json)?;
        let query = Arc::clone(&self.query);
        let result = robota::api::run_query(&query, &prompt, output_format).await;
        if let Some(pipe) = &self.text {
            // Bounded: a JavaScript thread that is gone must not hold the query forever.
            for _ in 0..5_000 {
                if pipe.is_empty() || pipe.stopped.load(Ordering::Acquire) {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        }
        let result = result.map_err(api_error)?;
        to_json(&result)
    }

    /// Aborts the running query (it resolves with stop reason `interrupted`).
    #[napi]
    pub fn abort(&self) {
        self.query.session().abort();
    }

    /// The session's chat messages as JSON.
    #[napi]
    pub fn get_messages(&self) -> napi::Result<String> {
        to_json(&self.query.session().messages())
    }

    /// The session id.
    #[napi]
    pub fn get_session_id(&self) -> String {
        self.query.session().session_id().to_string()
    }
}

impl Drop for NativeQuery {
    fn drop(&mut self) {
        if let Some(pipe) = &self.text {
            pipe.stopped.store(true, Ordering::Release);
            pipe.notify.notify_one();
        }
    }
}
