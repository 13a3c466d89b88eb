//! `create_query` for Python: a reusable one-call query over one session.

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::PyList;
use robota::api::{ApiError, SessionConfig};
use robota::framework::query::{create_query, Query, QueryError, QueryOptions};

use crate::bridge::LoopSlot;
use crate::convert::{from_py, Json};
use crate::errors::{api_error, internal};
use crate::extensions::{build_extensions, build_provider};

fn runtime() -> &'static tokio::runtime::Runtime {
    pyo3_async_runtimes::tokio::get_runtime()
}

fn query_error(e: QueryError) -> PyErr {
    api_error(ApiError::from(e))
}

/// Aborts the query's run when its awaitable is cancelled.
struct AbortOnDrop(Option<Arc<Query>>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        if let Some(query) = self.0.take() {
            query.session().abort();
        }
    }
}

/// The native half of `robota.create_query` (internal).
#[pyclass(frozen, module = "robota._native")]
pub struct NativeQuery {
    query: Arc<Query>,
    slot: Arc<LoopSlot>,
}

#[pymethods]
impl NativeQuery {
    /// Builds the query's session. `config` holds the plain session options; `allowed_tools` /
    /// `disallowed_tools` are permission rules for the whole session.
    #[new]
    #[pyo3(signature = (config, provider, tools, permission_handler, hooks, allowed_tools, disallowed_tools, on_text_delta))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        config: &Bound<'_, PyAny>,
        provider: &Bound<'_, PyAny>,
        tools: &Bound<'_, PyList>,
        permission_handler: Option<Py<PyAny>>,
        hooks: &Bound<'_, PyList>,
        allowed_tools: Vec<String>,
        disallowed_tools: Vec<String>,
        on_text_delta: Option<Py<PyAny>>,
    ) -> PyResult<Self> {
        let slot = LoopSlot::new();
        slot.capture(py);
        let config = SessionConfig::from_json_value(from_py(config)?).map_err(api_error)?;
        let _guard = runtime().enter();
        let provider = build_provider(provider, &slot)?;
        let mut session = config
            .into_session_options(Arc::clone(&provider))
            .map_err(api_error)?;
        build_extensions(&mut session, tools, permission_handler, hooks, &slot)?;
        let mut options = QueryOptions::new(session.cwd.clone(), provider);
        options.permission_mode = session.permission_mode;
        options.max_turns = session.max_turns;
        options.allowed_tools = allowed_tools;
        options.disallowed_tools = disallowed_tools;
        options.max_budget_usd = session.max_budget_usd;
        options.persistence = session.persistence.clone();
        options.settings = session.settings.clone();
        if let Some(callback) = on_text_delta {
            let callback = Arc::new(callback);
            let slot = Arc::clone(&slot);
            options.on_text_delta = Some(Arc::new(move |text: &str| {
                // Runs on the loop thread, in order (call_soon_threadsafe is FIFO).
                crate::aio::with_python(|py| {
                    if let Some(event_loop) = slot.get(py) {
                        let _ = event_loop.bind(py).call_method1(
                            "call_soon_threadsafe",
                            (callback.bind(py).clone(), text),
                        );
                    }
                });
            }));
        }
        options.session = Some(session);
        let query = py.detach(|| create_query(options)).map_err(query_error)?;
        crate::aio::stop_at_exit(query.session());
        Ok(NativeQuery {
            query: Arc::new(query),
            slot,
        })
    }

    /// Runs one full agent turn; resolves with the `QueryResult` as a dict. `output_format`
    /// (`{"type": "json_schema", "schema": {...}}`) shapes this call's answer.
    #[pyo3(signature = (prompt, output_format=None))]
    fn query<'py>(
        &self,
        py: Python<'py>,
        prompt: String,
        output_format: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.slot.capture(py);
        let output_format = output_format.map(from_py).transpose()?;
        let query = Arc::clone(&self.query);
        crate::aio::awaitable(py, async move {
            let mut guard = AbortOnDrop(Some(Arc::clone(&query)));
            let result = robota::api::run_query(&query, &prompt, output_format).await;
            guard.0 = None;
            let result = result.map_err(api_error)?;
            let value = serde_json::to_value(&result).map_err(|e| internal(e.to_string()))?;
            Ok(Json(value))
        })
    }

    /// Aborts the running query.
    fn abort(&self) {
        self.query.session().abort();
    }

    /// The session id.
    fn get_session_id(&self) -> String {
        self.query.session().session_id().to_string()
    }
}
