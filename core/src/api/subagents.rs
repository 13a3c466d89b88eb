//! Host-started subagents for the bindings: one reading of a subagent request — C's JSON object,
//! Python's and Node's arguments — so every language accepts and refuses the same input with the
//! same messages.

use serde_json::Value;

use super::ApiError;
use crate::framework::agents::{Isolation, SubagentRequest};

/// The keys a JSON subagent request may have.
const REQUEST_KEYS: &[&str] = &[
    "prompt",
    "agent_type",
    "subagent_type",
    "model",
    "isolation",
];

/// A request to run `prompt` as agent `agent_type` (the default agent when `None`) on `model`
/// (an alias, `inherit` or a model id; `None`: the agent's own), with `isolation` `"none"` (the
/// default) or `"worktree"`. An empty prompt or an unknown isolation is an
/// [`ApiErrorKind::InvalidArgument`](super::ApiErrorKind::InvalidArgument).
pub fn subagent_request(
    prompt: &str,
    agent_type: Option<&str>,
    model: Option<&str>,
    isolation: Option<&str>,
) -> Result<SubagentRequest, ApiError> {
    if prompt.trim().is_empty() {
        return Err(ApiError::invalid_argument(
            "the subagent needs a prompt: say what it should do",
        ));
    }
    let isolation = match isolation {
        None => Isolation::None,
        Some(value) => value.parse().map_err(ApiError::invalid_argument)?,
    };
    let text = |value: Option<&str>| {
        value
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(str::to_string)
    };
    Ok(SubagentRequest {
        agent_type: text(agent_type),
        prompt: prompt.to_string(),
        isolation,
        model: text(model),
        fork_worker: false,
        parent_tool_use_id: None,
    })
}

/// Reads `{"prompt", "agent_type"?, "model"?, "isolation"?: "none" | "worktree"}`
/// (`subagent_type` is accepted for `agent_type`, as the `Task` tool names it). Text that is not
/// JSON is [`ApiErrorKind::InvalidJson`](super::ApiErrorKind::InvalidJson); a missing prompt, a
/// value of the wrong type or an unknown key is
/// [`ApiErrorKind::InvalidArgument`](super::ApiErrorKind::InvalidArgument).
pub fn subagent_request_from_json(json: &str) -> Result<SubagentRequest, ApiError> {
    let value: Value = serde_json::from_str(json)
        .map_err(|e| ApiError::invalid_json(format!("the subagent request is not JSON: {e}")))?;
    let Value::Object(map) = value else {
        return Err(ApiError::invalid_argument(
            "the subagent request must be a JSON object like {\"prompt\": \"…\"}",
        ));
    };
    if let Some(unknown) = map.keys().find(|k| !REQUEST_KEYS.contains(&k.as_str())) {
        return Err(ApiError::invalid_argument(format!(
            "unknown key `{unknown}` in the subagent request (known: {})",
            REQUEST_KEYS.join(", ")
        )));
    }
    let text = |key: &str| -> Result<Option<&str>, ApiError> {
        match map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(text)) => Ok(Some(text.as_str())),
            Some(other) => Err(ApiError::invalid_argument(format!(
                "`{key}` in the subagent request must be a string, got {other}"
            ))),
        }
    };
    let prompt = text("prompt")?.ok_or_else(|| {
        ApiError::invalid_argument("the subagent request needs a `prompt` string")
    })?;
    let agent_type = text("agent_type")?.or(text("subagent_type")?);
    subagent_request(prompt, agent_type, text("model")?, text("isolation")?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::ApiErrorKind;

    #[test]
    fn requests_are_read_and_bad_ones_refused() {
        let request = subagent_request_from_json(
            r#"{"prompt": "find it", "agent_type": "Explore", "model": "haiku", "isolation": "worktree"}"#,
        )
        .expect("valid");
        assert_eq!(request.agent_type.as_deref(), Some("Explore"));
        assert_eq!(request.model.as_deref(), Some("haiku"));
        assert_eq!(request.isolation, Isolation::Worktree);
        let request = subagent_request_from_json(r#"{"prompt": "x", "subagent_type": "Plan"}"#)
            .expect("valid");
        assert_eq!(request.agent_type.as_deref(), Some("Plan"));
        let cases = [
            ("not json", ApiErrorKind::InvalidJson, "not JSON"),
            ("[1]", ApiErrorKind::InvalidArgument, "JSON object"),
            ("{}", ApiErrorKind::InvalidArgument, "needs a `prompt`"),
            (
                r#"{"prompt": " "}"#,
                ApiErrorKind::InvalidArgument,
                "needs a prompt",
            ),
            (
                r#"{"prompt": 3}"#,
                ApiErrorKind::InvalidArgument,
                "must be a string",
            ),
            (
                r#"{"prompt": "x", "isolation": "vm"}"#,
                ApiErrorKind::InvalidArgument,
                "isolation",
            ),
            (
                r#"{"prompt": "x", "agnet_type": "Plan"}"#,
                ApiErrorKind::InvalidArgument,
                "agnet_type",
            ),
        ];
        for (json, kind, words) in cases {
            let error = subagent_request_from_json(json).expect_err(json);
            assert_eq!(error.kind, kind, "{json}: {error}");
            assert!(error.message.contains(words), "{json}: {error}");
        }
    }
}
