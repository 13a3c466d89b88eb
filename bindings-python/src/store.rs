//! A session store written in Python (a `robota.SessionStore` subclass) as the engine's
//! [`HostStoreBackend`], and the store conformance suite run on one. The store's methods are
//! plain (not async) functions: the engine calls them from its own threads, attached to the
//! interpreter for the call.

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};
use robota::session::host_store::{HostStoreBackend, LogChunk};
use serde_json::Value;

use crate::aio::with_python;
use crate::convert::{from_py, ser_to_py, to_py};

/// A Python store object; every call runs attached to the interpreter.
pub struct PyHostStore {
    store: Py<PyAny>,
    name: String,
}

impl PyHostStore {
    /// The store `store` (its methods are looked up at each call).
    pub fn new(py: Python<'_>, store: Py<PyAny>) -> Self {
        let name = store
            .bind(py)
            .get_type()
            .name()
            .map(|name| name.to_string())
            .unwrap_or_else(|_| "SessionStore".into());
        PyHostStore { store, name }
    }

    /// Calls `method(*args)` and converts what it returns with `read`; a Python exception (or a
    /// coroutine: the methods must be plain functions) becomes the error message.
    fn call<R>(
        &self,
        method: &str,
        args: impl FnOnce(Python<'_>) -> PyResult<Bound<'_, PyTuple>>,
        read: impl FnOnce(&Bound<'_, PyAny>) -> PyResult<R>,
    ) -> Result<R, String> {
        with_python(|py| {
            let result = args(py)
                .and_then(|args| self.store.bind(py).call_method1(method, args))
                .and_then(|value| {
                    if value.hasattr("__await__")? {
                        return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                            "{}.{method} returned a coroutine; a session store's methods are plain functions (the engine calls them from its own threads)",
                            self.name
                        )));
                    }
                    read(&value)
                });
            result.map_err(|error| format!("{}.{method} failed: {error}", self.name))
        })
        .unwrap_or_else(|| Err("the Python interpreter is shutting down".into()))
    }
}

fn optional<'py, R>(
    value: &Bound<'py, PyAny>,
    read: impl FnOnce(&Bound<'py, PyAny>) -> PyResult<R>,
) -> PyResult<Option<R>> {
    if value.is_none() {
        Ok(None)
    } else {
        read(value).map(Some)
    }
}

fn json_list(value: &Bound<'_, PyAny>) -> PyResult<Vec<Value>> {
    match from_py(value)? {
        Value::Array(items) => Ok(items),
        _ => Err(pyo3::exceptions::PyTypeError::new_err("expected a list")),
    }
}

impl HostStoreBackend for PyHostStore {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn put_snapshot(&self, id: &str, summary: &Value, snapshot: &[u8]) -> Result<(), String> {
        self.call(
            "put_snapshot",
            |py| (id, to_py(py, summary)?, PyBytes::new(py, snapshot)).into_pyobject(py),
            |_| Ok(()),
        )
    }

    fn get_snapshot(&self, id: &str) -> Result<Option<Vec<u8>>, String> {
        self.call(
            "get_snapshot",
            |py| (id,).into_pyobject(py),
            |value| optional(value, |bytes| bytes.extract::<Vec<u8>>()),
        )
    }

    fn list_snapshots(&self) -> Result<Vec<Value>, String> {
        self.call("list_snapshots", |py| Ok(PyTuple::empty(py)), json_list)
    }

    fn append_log(&self, id: &str, start: u64, lines: &[u8]) -> Result<(), String> {
        self.call(
            "append_log",
            |py| (id, start, PyBytes::new(py, lines)).into_pyobject(py),
            |_| Ok(()),
        )
    }

    fn read_log(&self, id: &str, from: u64) -> Result<Option<Vec<LogChunk>>, String> {
        self.call(
            "read_log",
            |py| (id, from).into_pyobject(py),
            |value| {
                optional(value, |chunks| {
                    chunks
                        .try_iter()?
                        .map(|chunk| {
                            let (start, bytes) = chunk?.extract::<(u64, Vec<u8>)>()?;
                            Ok(LogChunk { start, bytes })
                        })
                        .collect()
                })
            },
        )
    }

    fn log_length(&self, id: &str) -> Result<Option<u64>, String> {
        self.call(
            "log_length",
            |py| (id,).into_pyobject(py),
            |value| optional(value, |length| length.extract::<u64>()),
        )
    }

    fn list_logs(&self) -> Result<Vec<Value>, String> {
        self.call("list_logs", |py| Ok(PyTuple::empty(py)), json_list)
    }

    fn delete_session(&self, id: &str) -> Result<bool, String> {
        self.call(
            "delete_session",
            |py| (id,).into_pyobject(py),
            |value| value.is_truthy(),
        )
    }

    fn acquire_lease(
        &self,
        id: &str,
        lease: &Value,
        replace_token: Option<&str>,
    ) -> Result<Option<Value>, String> {
        self.call(
            "acquire_lease",
            |py| (id, to_py(py, lease)?, replace_token).into_pyobject(py),
            |value| optional(value, from_py),
        )
    }

    fn release_lease(&self, id: &str, token: &str) -> Result<(), String> {
        self.call(
            "release_lease",
            |py| (id, token).into_pyobject(py),
            |_| Ok(()),
        )
    }
}

/// Runs the store conformance suite on stores made by `factory()` (one fresh, empty store per
/// check) and returns `[{"check", "passed", "message"}, …]`.
#[pyfunction]
pub fn run_store_conformance<'py>(
    py: Python<'py>,
    factory: Py<PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let fresh = || -> Result<Arc<dyn HostStoreBackend>, String> {
        with_python(|py| {
            factory
                .call0(py)
                .map(|store| Arc::new(PyHostStore::new(py, store)) as Arc<dyn HostStoreBackend>)
                .map_err(|error| format!("the store factory failed: {error}"))
        })
        .unwrap_or_else(|| Err("the Python interpreter is shutting down".into()))
    };
    let outcomes = py.detach(|| robota::api::run_store_conformance(&fresh));
    ser_to_py(py, &outcomes)
}
