//! [`submit_prompt`]: an interactive session's tracked submit as every binding makes it — the
//! prompt, what to show and what the user typed, and an optional per-prompt `output_format` as
//! JSON — with failures as [`ApiError`]s.

use serde_json::Value;

use super::error::ApiError;
use super::session_config::output_format;
use crate::framework::interactive::{InteractiveSession, PromptTicket};

/// Submits `input` to `session` and returns its ticket. `format` (`{"type": "json_schema",
/// "schema": {...}}`; `None` or JSON `null`: the session's own `output_format`) shapes this
/// prompt's final answer only; a malformed one is `invalid_argument` and nothing is queued.
/// Must be called within a tokio runtime context.
pub fn submit_prompt(
    session: &InteractiveSession,
    input: &str,
    display_input: Option<&str>,
    raw_input: Option<&str>,
    format: Option<Value>,
) -> Result<PromptTicket, ApiError> {
    match format.filter(|f| !f.is_null()) {
        None => session
            .submit_tracked_as_typed(input, display_input, raw_input)
            .map_err(ApiError::from),
        Some(format) => session
            .submit_tracked_with_output_format(
                input,
                display_input,
                raw_input,
                &output_format(format)?,
            )
            .map_err(ApiError::from),
    }
}
