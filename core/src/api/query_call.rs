//! [`run_query`]: one call of a [`Query`] as every binding makes it — the prompt, an optional
//! per-call `output_format` as JSON, and failures as [`ApiError`]s with their stable kinds.

use serde_json::Value;

use super::error::ApiError;
use super::session_config::output_format;
use crate::framework::query::{Query, QueryResult};

/// Runs one full agent turn of `query` with `prompt`. `format` (`{"type": "json_schema",
/// "schema": {...}}`; `None` or JSON `null`: the session's own `output_format`) shapes this
/// call's final answer: the result's `structured_output` holds the validated value, and an
/// answer that never matches is an [`ApiErrorKind::StructuredOutput`](super::ApiErrorKind)
/// error. A malformed format or schema is `invalid_argument` and nothing is sent.
pub async fn run_query(
    query: &Query,
    prompt: &str,
    format: Option<Value>,
) -> Result<QueryResult, ApiError> {
    match format.filter(|f| !f.is_null()) {
        None => query.query(prompt).await.map_err(ApiError::from),
        Some(format) => {
            let format = output_format(format)?;
            query
                .query_with_output_format(prompt, &format)
                .await
                .map_err(ApiError::from)
        }
    }
}
