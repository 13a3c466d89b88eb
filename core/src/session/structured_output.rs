//! Structured output: the `output_format` option (`{"type": "json_schema", "schema": …}`, the
//! Claude Agent SDK's option), the check of a prompt's final answer against the schema, and the
//! follow-up turns that ask the model to fix an answer that does not match.
//!
//! The mechanism is the final answer itself: the model is told (as model-only context on the
//! prompt) to answer with one JSON value matching the schema, and the answer text is parsed as
//! JSON (a fenced ```` ```json ```` block is accepted) and validated with a real JSON Schema
//! validator. A synthetic "give your answer" tool, as Claude Code uses, was not chosen because
//! the providers' native structured output (OpenAI `response_format`, Anthropic `output_config`)
//! constrains exactly this final text: with one mechanism the native path and the fallback path
//! produce the same history, the same result and the same retries, and a provider without native
//! support (or a local server) still works. Validation always runs here, native or not.
//!
//! An answer that is not valid gets a follow-up user message listing the validation errors
//! (instance path and message); after [`DEFAULT_MAX_STRUCTURED_OUTPUT_RETRIES`] (or the
//! configured number of) follow-ups the prompt ends with stop reason
//! `max_structured_output_retries` and the last errors in
//! [`RunOutcome::structured_output_errors`].

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::error::SessionError;
pub use crate::engine::StructuredOutputError;
use crate::engine::{RunOutcome, RunStopReason};
use crate::message::Message;
use crate::provider::OutputSchema;

/// Follow-ups an invalid answer gets before the prompt fails (the Claude Agent SDK's default).
pub const DEFAULT_MAX_STRUCTURED_OUTPUT_RETRIES: u32 = 5;

/// Metadata key marking the follow-up message that reports validation errors to the model.
pub const STRUCTURED_OUTPUT_FOLLOW_UP_METADATA: &str = "structured_output_follow_up";

/// The name the schema is sent under when the format does not name it.
const DEFAULT_SCHEMA_NAME: &str = "structured_output";

/// Errors listed in one follow-up; the rest are counted, so a huge answer cannot flood the
/// conversation.
const MAX_LISTED_ERRORS: usize = 20;

/// How a prompt's final answer must be shaped. JSON form:
/// `{"type": "json_schema", "schema": {...}}` (optionally with `"name"`, the name the schema is
/// sent under to providers with native structured output).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum OutputFormat {
    /// One JSON value matching a JSON Schema.
    JsonSchema {
        /// The JSON Schema (draft 2020-12 unless its `$schema` names another draft).
        schema: Value,
        /// The schema's name for native structured output (`structured_output` when absent;
        /// letters, digits, `_` and `-`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
    },
}

impl OutputFormat {
    /// A JSON Schema format for `schema`.
    pub fn json_schema(schema: Value) -> Self {
        OutputFormat::JsonSchema { schema, name: None }
    }

    /// Reads a format from JSON (`{"type": "json_schema", "schema": {...}}`), with an error that
    /// says what is wrong.
    pub fn from_json_value(value: Value) -> Result<Self, SessionError> {
        serde_json::from_value(value).map_err(|e| SessionError::InvalidOutputFormat {
            message: format!(
                "{e}; expected {{\"type\": \"json_schema\", \"schema\": {{...}}}} with a JSON \
                 Schema object"
            ),
        })
    }
}

/// An [`OutputFormat`] checked and compiled once, with its retry limit: what a session or a single
/// prompt validates answers with.
#[derive(Clone)]
pub struct StructuredOutput {
    schema: Arc<Value>,
    name: String,
    validator: Arc<jsonschema::Validator>,
    max_retries: u32,
}

impl std::fmt::Debug for StructuredOutput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StructuredOutput")
            .field("name", &self.name)
            .field("schema", &self.schema)
            .field("max_retries", &self.max_retries)
            .finish()
    }
}

impl StructuredOutput {
    /// Compiles `format`; a schema that is not a valid JSON Schema (or a bad name) is
    /// [`SessionError::InvalidOutputFormat`] naming the problem.
    pub fn new(format: &OutputFormat, max_retries: u32) -> Result<Self, SessionError> {
        let OutputFormat::JsonSchema { schema, name } = format;
        if !schema.is_object() && !schema.is_boolean() {
            return Err(SessionError::InvalidOutputFormat {
                message: format!(
                    "the schema must be a JSON object (or a boolean schema), not {}",
                    json_kind(schema)
                ),
            });
        }
        let validator =
            jsonschema::validator_for(schema).map_err(|e| SessionError::InvalidOutputFormat {
                message: format!(
                    "the schema is not a valid JSON Schema: {}{}",
                    e,
                    pointer_suffix(&e.schema_path().to_string())
                ),
            })?;
        let name = name.clone().unwrap_or_else(|| DEFAULT_SCHEMA_NAME.into());
        if name.is_empty()
            || name.len() > 64
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            return Err(SessionError::InvalidOutputFormat {
                message: format!(
                    "the schema name {name:?} must be 1-64 letters, digits, `_` or `-`"
                ),
            });
        }
        Ok(StructuredOutput {
            schema: Arc::new(schema.clone()),
            name,
            validator: Arc::new(validator),
            max_retries,
        })
    }

    /// The schema.
    pub fn schema(&self) -> &Value {
        &self.schema
    }

    /// Follow-ups an invalid answer gets before the prompt fails.
    pub fn max_retries(&self) -> u32 {
        self.max_retries
    }

    /// The schema as providers with native structured output receive it.
    pub fn native_schema(&self) -> OutputSchema {
        OutputSchema {
            name: self.name.clone(),
            schema: (*self.schema).clone(),
        }
    }

    /// The instructions sent with the prompt (model-only context): answer with JSON matching
    /// the schema.
    pub fn instructions(&self) -> String {
        format!(
            "When you have finished the task, give your final answer as a single JSON value that \
             matches this JSON Schema, with no other text before or after it:\n{}",
            serde_json::to_string(&*self.schema).unwrap_or_default()
        )
    }

    /// Parses `answer` (raw JSON, or JSON in a fenced code block) and validates it: the value, or
    /// every way it does not match.
    pub fn check(&self, answer: &str) -> Result<Value, Vec<StructuredOutputError>> {
        let value = parse_answer(answer).map_err(|message| {
            vec![StructuredOutputError {
                path: String::new(),
                message,
            }]
        })?;
        let errors: Vec<StructuredOutputError> = self
            .validator
            .iter_errors(&value)
            .map(|error| StructuredOutputError {
                path: error.instance_path().to_string(),
                message: error.to_string(),
            })
            .collect();
        if errors.is_empty() {
            Ok(value)
        } else {
            Err(errors)
        }
    }

    /// The follow-up message that tells the model why its answer was rejected.
    pub fn follow_up(&self, errors: &[StructuredOutputError]) -> Message {
        let mut text = String::from(
            "Your final answer does not match the required JSON Schema. Validation errors:\n",
        );
        for error in errors.iter().take(MAX_LISTED_ERRORS) {
            text.push_str("- ");
            text.push_str(&error.to_string());
            text.push('\n');
        }
        if errors.len() > MAX_LISTED_ERRORS {
            text.push_str(&format!(
                "- … and {} more\n",
                errors.len() - MAX_LISTED_ERRORS
            ));
        }
        text.push_str(
            "Answer again with only the corrected JSON value, matching the schema exactly.",
        );
        let mut message = Message::user(text);
        message
            .metadata
            .insert(STRUCTURED_OUTPUT_FOLLOW_UP_METADATA.into(), true.into());
        message
    }
}

/// The checks of one prompt: counts the follow-ups and records the result on the outcome.
#[derive(Debug)]
pub(crate) struct StructuredOutputCheck {
    output: StructuredOutput,
    retries: u32,
}

impl StructuredOutputCheck {
    /// Checks for one prompt with `output`.
    pub(crate) fn new(output: StructuredOutput) -> Self {
        StructuredOutputCheck { output, retries: 0 }
    }

    /// The schema for the provider request.
    pub(crate) fn native_schema(&self) -> OutputSchema {
        self.output.native_schema()
    }

    /// The instructions sent with the prompt.
    pub(crate) fn instructions(&self) -> String {
        self.output.instructions()
    }

    /// Reviews the prompt's outcome so far once the model is done: a valid answer is recorded as
    /// `structured_output`; an invalid one returns the follow-up to send, or, once the retries
    /// are spent, ends the prompt with stop reason `max_structured_output_retries` and the
    /// errors. Outcomes that did not complete (interrupted, failed, refused, cut off) are left
    /// alone.
    pub(crate) fn review(&mut self, total: &mut Option<RunOutcome>) -> Option<Message> {
        let outcome = total.as_mut()?;
        if outcome.stop_reason != RunStopReason::Completed || outcome.interrupted {
            return None;
        }
        match self.output.check(&outcome.response) {
            Ok(value) => {
                outcome.structured_output = Some(value);
                outcome.structured_output_errors.clear();
                None
            }
            Err(errors) if self.retries < self.output.max_retries => {
                self.retries += 1;
                Some(self.output.follow_up(&errors))
            }
            Err(errors) => {
                outcome.stop_reason = RunStopReason::MaxStructuredOutputRetries;
                outcome.structured_output_errors = errors;
                None
            }
        }
    }
}

/// The JSON in an answer: the whole text, or the first fenced code block's content.
fn parse_answer(answer: &str) -> Result<Value, String> {
    let trimmed = answer.trim();
    if trimmed.is_empty() {
        return Err("the answer is empty; a JSON value is required".into());
    }
    let direct = serde_json::from_str::<Value>(trimmed);
    if let Ok(value) = direct {
        return Ok(value);
    }
    if let Some(fenced) = fenced_block(trimmed) {
        if let Ok(value) = serde_json::from_str::<Value>(fenced.trim()) {
            return Ok(value);
        }
    }
    let problem = direct.err().map(|e| e.to_string()).unwrap_or_default();
    Err(format!("the answer is not valid JSON ({problem})"))
}

/// The content of the first ```` ``` ```` block (its language tag skipped).
fn fenced_block(text: &str) -> Option<&str> {
    let start = text.find("```")?;
    let after = &text[start + 3..];
    let body_start = after.find('\n')? + 1;
    let body = &after[body_start..];
    let end = body.find("```")?;
    Some(&body[..end])
}

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn pointer_suffix(pointer: &str) -> String {
    if pointer.is_empty() {
        String::new()
    } else {
        format!(" (at schema {pointer})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn person() -> StructuredOutput {
        let format = OutputFormat::json_schema(json!({
            "type": "object",
            "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
            "required": ["name", "age"],
        }));
        StructuredOutput::new(&format, 2).expect("valid schema")
    }

    #[test]
    fn a_valid_answer_parses_raw_or_fenced() {
        let output = person();
        let raw = output
            .check(r#"{"name": "Ada", "age": 36}"#)
            .expect("valid");
        assert_eq!(raw, json!({"name": "Ada", "age": 36}));
        let fenced = output
            .check("Here it is:\n```json\n{\"name\": \"Ada\", \"age\": 36}\n```\n")
            .expect("valid");
        assert_eq!(fenced, raw);
    }

    #[test]
    fn errors_name_the_path_and_the_problem() {
        let errors = person()
            .check(r#"{"name": "Ada", "age": "old"}"#)
            .expect_err("invalid");
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert_eq!(errors[0].path, "/age");
        assert!(errors[0].message.contains("integer"), "{errors:?}");
        let missing = person().check(r#"{"name": "Ada"}"#).expect_err("invalid");
        assert!(missing[0].message.contains("age"), "{missing:?}");
        let prose = person().check("I think Ada is 36.").expect_err("not json");
        assert!(prose[0].message.contains("not valid JSON"), "{prose:?}");
    }

    #[test]
    fn an_invalid_schema_is_a_typed_error() {
        let bad = OutputFormat::json_schema(json!({"type": "bogus"}));
        let error = StructuredOutput::new(&bad, 1).expect_err("invalid schema");
        assert!(
            matches!(error, SessionError::InvalidOutputFormat { .. }),
            "{error:?}"
        );
        assert!(
            error.to_string().contains("not a valid JSON Schema"),
            "{error}"
        );
        let not_object = OutputFormat::json_schema(json!("string"));
        assert!(StructuredOutput::new(&not_object, 1).is_err());
        let wrong_type = OutputFormat::from_json_value(json!({"type": "text"}));
        assert!(wrong_type.is_err());
    }

    #[test]
    fn the_follow_up_lists_errors_and_is_marked() {
        let output = person();
        let errors = output.check(r#"{"age": "x"}"#).expect_err("invalid");
        let message = output.follow_up(&errors);
        let text = message.text();
        assert!(text.contains("/age"), "{text}");
        assert!(text.contains("name"), "{text}");
        assert_eq!(
            message.metadata.get(STRUCTURED_OUTPUT_FOLLOW_UP_METADATA),
            Some(&json!(true))
        );
    }
}
