//! `robota._native`: the compiled half of the `robota` Python package (pyo3). Everything here is
//! internal; the public API is the pure-Python package `robota` (see its `.pyi` stubs), which
//! adapts Python functions and classes and calls into these types.
//!
//! Threading rules (reference/bindings.md §4): no method blocks on the tokio runtime while
//! attached to the interpreter (`Python::detach`); Python callbacks run on the session's asyncio
//! loop and are scheduled from blocking-pool threads with `aio::with_python`, so nothing
//! touches the interpreter once it is finalizing.

mod aio;
mod bridge;
mod convert;
mod errors;
mod extensions;
mod host;
mod query;
mod remote;
mod session;
mod store;

use pyo3::prelude::*;
use robota::permissions::{evaluate_permission as evaluate, PermissionContext};
use serde_json::Value;

use crate::convert::{from_py, ser_to_py};

/// Evaluates whether `tool` may run with `input` under `context` (a dict: `cwd` is required;
/// `mode`, `rules` = `{"allow": [...], "ask": [...], "deny": [...]}`, `home`, … are optional).
/// Returns the decision as a dict (`decision`, `reason`, `matched_rule`, `suggested_rules`, …).
#[pyfunction]
#[pyo3(signature = (tool, input, context))]
fn evaluate_permission<'py>(
    py: Python<'py>,
    tool: &str,
    input: &Bound<'py, PyAny>,
    context: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let input = if input.is_none() {
        Value::Object(Default::default())
    } else {
        from_py(input)?
    };
    let context: PermissionContext = serde_json::from_value(from_py(context)?).map_err(|e| {
        errors::InvalidJsonError::new_err(format!(
            "invalid permission context: {e} (it needs at least `cwd`, an absolute path)"
        ))
    })?;
    let decision = py.detach(|| evaluate(tool, &input, &context));
    ser_to_py(py, &decision)
}

/// What robota knows about `model` (the model catalog): a dict of `robota::api::model_info`'s
/// fields; an empty or overlong id raises `InvalidArgumentError`.
#[pyfunction]
fn model_info<'py>(py: Python<'py>, model: &str) -> PyResult<Bound<'py, PyAny>> {
    let info = robota::api::model_info(model).map_err(errors::api_error)?;
    ser_to_py(py, &info)
}

/// What robota knows about every catalogued model, or only `provider`'s: a list of dicts.
#[pyfunction]
#[pyo3(signature = (provider=None))]
fn list_models<'py>(py: Python<'py>, provider: Option<&str>) -> PyResult<Bound<'py, PyAny>> {
    ser_to_py(py, &robota::api::list_models(provider))
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("CONTINUE_PROMPT", robota::engine::CONTINUE_PROMPT)?;
    m.add(
        "CONTINUE_DISPLAY_INPUT",
        robota::framework::interactive::CONTINUE_DISPLAY_INPUT,
    )?;
    m.add_class::<session::NativeSession>()?;
    m.add_class::<session::NativeEvents>()?;
    m.add_class::<query::NativeQuery>()?;
    m.add_class::<remote::NativeRemoteSession>()?;
    m.add_class::<remote::NativeRemoteEvents>()?;
    m.add_class::<host::NativeStream>()?;
    m.add_class::<host::NativeCommandContext>()?;
    m.add_function(wrap_pyfunction!(evaluate_permission, m)?)?;
    m.add_function(wrap_pyfunction!(model_info, m)?)?;
    m.add_function(wrap_pyfunction!(list_models, m)?)?;
    m.add_function(wrap_pyfunction!(aio::at_exit, m)?)?;
    m.add_function(wrap_pyfunction!(store::run_store_conformance, m)?)?;
    errors::register(m)?;
    Ok(())
}
