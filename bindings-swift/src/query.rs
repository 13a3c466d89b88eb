//! `NativeQuery`: `create_query` for Swift, a reusable one-call query over one session.

use std::sync::Arc;

use robota::api::{ApiError, SessionConfig};
use robota::framework::query::{create_query, Query, QueryError, QueryOptions, QueryResult};

use crate::error::RobotaError;
use crate::runtime::{on_runtime, runtime};
use crate::session::{add_extensions, build_provider, NativeExtensions, NativeProvider};

fn query_error(e: QueryError) -> RobotaError {
    ApiError::from(e).into()
}

fn encode_result(result: &QueryResult) -> Result<String, RobotaError> {
    serde_json::to_string(result)
        .map_err(|e| RobotaError::internal(format!("cannot encode the result: {e}")))
}

/// Everything a query is made of.
#[derive(uniffi::Record)]
pub struct NativeQueryOptions {
    /// The plain options: a `robota::api::SessionConfig` as JSON (`""`: all defaults).
    pub config_json: String,
    /// The model provider.
    pub provider: NativeProvider,
    /// The host's tools, permission handler and hooks.
    pub extensions: NativeExtensions,
    /// Permission rules allowing tools for the whole query (`Read`, `Bash(git *)`, …).
    pub allowed_tools: Vec<String>,
    /// Permission rules denying tools.
    pub disallowed_tools: Vec<String>,
}

/// A query (internal; the Swift API is `Robota.createQuery`).
#[derive(uniffi::Object)]
pub struct NativeQuery {
    query: Arc<Query>,
}

#[uniffi::export]
impl NativeQuery {
    /// Builds the query's session.
    #[uniffi::constructor]
    pub fn new(options: NativeQueryOptions) -> Result<Arc<Self>, RobotaError> {
        let config = SessionConfig::from_json(&options.config_json)?;
        let _runtime = runtime().enter();
        let provider = build_provider(options.provider)?;
        let mut session = config.into_session_options(Arc::clone(&provider))?;
        add_extensions(&mut session, options.extensions)?;
        let mut query = QueryOptions::new(session.cwd.clone(), provider);
        query.permission_mode = session.permission_mode;
        query.max_turns = session.max_turns;
        query.allowed_tools = options.allowed_tools;
        query.disallowed_tools = options.disallowed_tools;
        query.max_budget_usd = session.max_budget_usd;
        query.persistence = session.persistence.clone();
        query.settings = session.settings.clone();
        query.session = Some(session);
        let query = create_query(query).map_err(query_error)?;
        Ok(Arc::new(NativeQuery {
            query: Arc::new(query),
        }))
    }

    /// Runs one full agent turn; returns the `QueryResult` as JSON.
    pub async fn query(&self, prompt: String) -> Result<String, RobotaError> {
        let query = Arc::clone(&self.query);
        on_runtime(async move {
            let result = query.query(&prompt).await.map_err(query_error)?;
            encode_result(&result)
        })
        .await
    }

    /// Runs one full agent turn whose final answer must match `output_format_json`
    /// (`{"type": "json_schema", "schema": {...}}`); returns the `QueryResult` as JSON, with the
    /// validated value as `structured_output`. An answer that never matches throws
    /// `RobotaError.StructuredOutput`.
    pub async fn query_with_output_format(
        &self,
        prompt: String,
        output_format_json: String,
    ) -> Result<String, RobotaError> {
        let format: serde_json::Value =
            serde_json::from_str(&output_format_json).map_err(|e| RobotaError::InvalidJson {
                message: format!("`outputFormat` is not JSON: {e}"),
            })?;
        let query = Arc::clone(&self.query);
        on_runtime(async move {
            let result = robota::api::run_query(&query, &prompt, Some(format)).await?;
            encode_result(&result)
        })
        .await
    }

    /// Asks the model to go on with an answer cut off at the output token limit (a result with
    /// status `truncated`); returns the next `QueryResult` as JSON.
    pub async fn continue_answer(&self) -> Result<String, RobotaError> {
        let query = Arc::clone(&self.query);
        on_runtime(async move {
            let result = query.continue_answer().await.map_err(query_error)?;
            encode_result(&result)
        })
        .await
    }

    /// Aborts the running query.
    pub fn abort(&self) -> Result<(), RobotaError> {
        self.query.session().abort();
        Ok(())
    }

    /// The session id.
    pub fn get_session_id(&self) -> Result<String, RobotaError> {
        Ok(self.query.session().session_id().to_string())
    }
}
