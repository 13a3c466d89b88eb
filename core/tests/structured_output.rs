//! Structured output against mock-llm (issue 24 §4): an answer that matches the schema first time,
//! one that is fixed after the validation follow-up (which carries the errors), one that never
//! matches (a typed failure after exactly 1 + the limit requests), and a schema that is not a
//! JSON Schema (refused when the session is created).
#![cfg(unix)]

mod session_common;

use robota::engine::RunStopReason;
use robota::session::structured_output::OutputFormat;
use robota::session::SessionError;
use robota::tools::ToolRegistry;
use serde_json::{json, Value};
use session_common::*;

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "population": {"type": "integer", "minimum": 0}
        },
        "required": ["city", "population"],
        "additionalProperties": false
    })
}

fn structured(project: &Project, mock: &Mock, events: &Events, retries: u32) -> Session {
    let mut options = options(project, mock, events).with_tools(ToolRegistry::new());
    options.output_format = Some(OutputFormat::json_schema(schema()));
    options.max_structured_output_retries = retries;
    session(options)
}

use robota::session::Session;

#[tokio::test]
async fn a_matching_answer_is_returned_parsed() {
    let project = Project::new();
    let mock = Mock::start(json!({"turns": [
        {"text": "{\"city\": \"Lisbon\", \"population\": 545000}"}
    ]}))
    .await;
    let events = Events::default();
    let session = structured(&project, &mock, &events, 2);
    let outcome = session.run("largest city of Portugal?").await.unwrap();
    assert_eq!(
        outcome.structured_output,
        Some(json!({"city": "Lisbon", "population": 545000}))
    );
    assert_eq!(outcome.stop_reason, RunStopReason::Completed);
    assert_eq!(mock.bodies().len(), 1);
}

#[tokio::test]
async fn an_invalid_answer_is_fixed_after_the_follow_up_names_the_errors() {
    let project = Project::new();
    let mock = Mock::start(json!({"turns": [
        {"text": "{\"city\": \"Lisbon\", \"population\": \"many\"}"},
        {"text": "```json\n{\"city\": \"Lisbon\", \"population\": 545000}\n```"}
    ]}))
    .await;
    let events = Events::default();
    let session = structured(&project, &mock, &events, 2);
    let outcome = session.run("largest city of Portugal?").await.unwrap();
    assert_eq!(
        outcome.structured_output,
        Some(json!({"city": "Lisbon", "population": 545000}))
    );
    assert_eq!(mock.bodies().len(), 2);
    let follow_up = mock.user_texts(1).last().cloned().unwrap_or_default();
    assert!(
        follow_up.contains("/population"),
        "the follow-up names the failing path: {follow_up}"
    );
}

#[tokio::test]
async fn an_answer_that_never_matches_fails_after_the_limit() {
    let project = Project::new();
    let mock = Mock::start(json!({
        "repeat": true,
        "turns": [{"text": "Lisbon, about half a million people."}]
    }))
    .await;
    let events = Events::default();
    let session = structured(&project, &mock, &events, 2);
    let outcome = session.run("largest city of Portugal?").await.unwrap();
    assert_eq!(
        outcome.stop_reason,
        RunStopReason::MaxStructuredOutputRetries
    );
    assert_eq!(outcome.structured_output, None);
    assert!(!outcome.structured_output_errors.is_empty());
    assert_eq!(mock.bodies().len(), 3, "1 request + 2 follow-ups");
}

#[tokio::test]
async fn a_schema_that_is_not_a_json_schema_is_refused_at_creation() {
    let project = Project::new();
    let mock = Mock::start(json!({"turns": []})).await;
    let events = Events::default();
    let mut options = options(&project, &mock, &events);
    options.output_format = Some(OutputFormat::json_schema(json!({"type": "no-such-type"})));
    match robota::session::Session::new(options) {
        Err(SessionError::InvalidOutputFormat { message }) => {
            assert!(!message.is_empty());
        }
        Err(other) => panic!("unexpected error: {other}"),
        Ok(_) => panic!("an invalid schema was accepted"),
    }
}

fn query_over(project: &Project, mock: &Mock, events: &Events, retries: u32) -> Query {
    let mut session = options(project, mock, events).with_tools(ToolRegistry::new());
    session.max_structured_output_retries = retries;
    let mut options = QueryOptions::new(project.path(""), mock.provider());
    options.session = Some(session);
    create_query(options).unwrap()
}

use robota::api::{ApiError, ApiErrorKind};
use robota::framework::query::{create_query, Query, QueryError, QueryOptions};

#[tokio::test]
async fn a_query_takes_its_own_output_format_and_returns_the_value() {
    let project = Project::new();
    let mock = Mock::start(json!({"turns": [
        {"text": "Lisbon."},
        {"text": "{\"city\": \"Lisbon\", \"population\": 545000}"}
    ]}))
    .await;
    let events = Events::default();
    let query = query_over(&project, &mock, &events, 2);
    let plain = query.query("hello").await.unwrap();
    assert_eq!(plain.structured_output, None, "no format, no value");
    let result = robota::api::run_query(
        &query,
        "largest city of Portugal?",
        Some(json!({"type": "json_schema", "schema": schema()})),
    )
    .await
    .unwrap();
    assert_eq!(
        serde_json::to_value(&result).unwrap()["structured_output"],
        json!({"city": "Lisbon", "population": 545000})
    );
}

#[tokio::test]
async fn a_query_whose_answer_never_matches_is_a_typed_structured_output_error() {
    let project = Project::new();
    let mock = Mock::start(json!({
        "repeat": true,
        "turns": [{"text": "{\"city\": \"Lisbon\"}"}]
    }))
    .await;
    let events = Events::default();
    let query = query_over(&project, &mock, &events, 1);
    let format = OutputFormat::json_schema(schema());
    let error = query
        .query_with_output_format("largest city of Portugal?", &format)
        .await
        .unwrap_err();
    match &error {
        QueryError::StructuredOutput { errors, response } => {
            assert!(!errors.is_empty());
            assert!(response.contains("Lisbon"), "{response}");
        }
        other => panic!("unexpected error: {other}"),
    }
    let api = ApiError::from(error);
    assert_eq!(api.kind, ApiErrorKind::StructuredOutput);
    assert_eq!(api.kind.as_str(), "structured_output");
    assert!(api.message.contains("population"), "{}", api.message);
    assert_eq!(mock.bodies().len(), 2, "1 request + 1 follow-up");
}

#[tokio::test]
async fn a_malformed_output_format_is_an_invalid_argument() {
    let error = robota::api::output_format(json!({"type": "json", "schema": {}})).unwrap_err();
    assert_eq!(error.kind, ApiErrorKind::InvalidArgument);
    let project = Project::new();
    let mock = Mock::start(json!({"turns": []})).await;
    let events = Events::default();
    let query = query_over(&project, &mock, &events, 1);
    let bad = OutputFormat::json_schema(json!({"type": "no-such-type"}));
    let error = query
        .query_with_output_format("hi", &bad)
        .await
        .unwrap_err();
    assert_eq!(ApiError::from(error).kind, ApiErrorKind::InvalidArgument);
    assert!(mock.bodies().is_empty(), "nothing was sent");
}

/// An interactive prompt with its own format: the session has none, the prompt's answer is
/// validated and fixed; the next prompt (without one) is free text again. A bad schema is
/// refused at submit, before anything is queued.
#[tokio::test]
async fn an_interactive_prompt_takes_its_own_output_format() {
    use robota::framework::interactive::{
        InteractiveSession, InteractiveSessionOptions, PromptResult,
    };
    let project = Project::new();
    let mock = Mock::start(json!({"turns": [
        {"text": "{\"city\": \"Lisbon\", \"population\": -1}"},
        {"text": "{\"city\": \"Lisbon\", \"population\": 545000}"},
        {"text": "Just text."}
    ]}))
    .await;
    let events = Events::default();
    let options = options(&project, &mock, &events).with_tools(ToolRegistry::new());
    let session = InteractiveSession::new(InteractiveSessionOptions::new(options)).unwrap();
    let format = OutputFormat::json_schema(schema());
    let ticket = session
        .submit_tracked_with_output_format("largest city of Portugal?", None, None, &format)
        .unwrap();
    match ticket.result().await {
        PromptResult::Complete { outcome, .. } => assert_eq!(
            outcome.structured_output,
            Some(json!({"city": "Lisbon", "population": 545000}))
        ),
        other => panic!("unexpected end: {other:?}"),
    }
    assert!(mock.user_texts(1).join(" ").contains("/population"));
    let plain = session.submit_tracked("thanks", None).await.unwrap();
    match plain.result().await {
        PromptResult::Complete { outcome, .. } => {
            assert_eq!(outcome.structured_output, None);
            assert_eq!(outcome.response, "Just text.");
        }
        other => panic!("unexpected end: {other:?}"),
    }
    let bad = OutputFormat::json_schema(json!({"type": "no-such-type"}));
    let error = session
        .submit_tracked_with_output_format("again", None, None, &bad)
        .unwrap_err();
    assert_eq!(ApiError::from(error).kind, ApiErrorKind::InvalidArgument);
    assert_eq!(
        mock.bodies().len(),
        3,
        "nothing was sent for the bad schema"
    );
}
