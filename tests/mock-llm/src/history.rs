//! The tool-call pairing rules both APIs enforce on the conversation a client sends back, so a
//! client that would be refused by the real API (a tool call without its result, a result for no
//! call, two calls sharing one id) is refused here too, with the real API's wording.
//!
//! - Anthropic: the `tool_use` ids of one assistant message are unique; the next message is a
//!   user message with a `tool_result` for each of them; every `tool_result` answers a `tool_use`
//!   of the message just before it, once.
//! - OpenAI: the `tool_calls` ids of one assistant message are unique; the messages right after
//!   it are `tool` messages answering each of them, once; a `tool` message answers a call of the
//!   assistant message before it.

use serde_json::Value;

use crate::plan::Dialect;

/// Checks the `messages` of a request.
pub(crate) fn check(dialect: Dialect, messages: &[Value]) -> Result<(), String> {
    match dialect {
        Dialect::Anthropic => check_anthropic(messages),
        Dialect::OpenAi => check_openai(messages),
        Dialect::Gemini => check_gemini(messages),
        // The Responses API's `input` items are checked by `responses::check_input`.
        Dialect::Responses => Ok(()),
    }
}

fn role(message: &Value) -> &str {
    message.get("role").and_then(Value::as_str).unwrap_or("")
}

/// The blocks of an Anthropic message (`content` may also be a plain string: no blocks).
fn blocks(message: &Value) -> &[Value] {
    message
        .get("content")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn text_field<'a>(value: &'a Value, key: &str) -> &'a str {
    value.get(key).and_then(Value::as_str).unwrap_or("")
}

fn check_anthropic(messages: &[Value]) -> Result<(), String> {
    // The tool_use ids of the previous message, when it was an assistant message.
    let mut open: Vec<String> = Vec::new();
    for (i, message) in messages.iter().enumerate() {
        let mut answered: Vec<&str> = Vec::new();
        for (j, block) in blocks(message).iter().enumerate() {
            if block.get("type").and_then(Value::as_str) != Some("tool_result") {
                continue;
            }
            let id = text_field(block, "tool_use_id");
            if role(message) != "user" || !open.iter().any(|o| o == id) {
                return Err(format!(
                    "messages.{i}.content.{j}: unexpected `tool_use_id` found in `tool_result` \
                     blocks: {id}. Each `tool_result` block must have a corresponding `tool_use` \
                     block in the previous message."
                ));
            }
            if answered.contains(&id) {
                return Err(format!(
                    "messages.{i}.content.{j}: more than one `tool_result` block for \
                     `tool_use_id` {id}"
                ));
            }
            answered.push(id);
        }
        let missing: Vec<&str> = open
            .iter()
            .map(String::as_str)
            .filter(|id| !answered.contains(id))
            .collect();
        if !missing.is_empty() {
            return Err(format!(
                "messages.{i}: `tool_use` ids were found without `tool_result` blocks \
                 immediately after: {}. Each `tool_use` block must have a corresponding \
                 `tool_result` block in the next message.",
                missing.join(", ")
            ));
        }
        open.clear();
        if role(message) == "assistant" {
            for (j, block) in blocks(message).iter().enumerate() {
                if block.get("type").and_then(Value::as_str) != Some("tool_use") {
                    continue;
                }
                let id = text_field(block, "id").to_owned();
                if open.contains(&id) {
                    return Err(format!(
                        "messages.{i}.content.{j}: `tool_use` ids must be unique"
                    ));
                }
                open.push(id);
            }
        }
    }
    // A trailing assistant message with tool calls is a prefill the model cannot continue.
    if !open.is_empty() {
        return Err(format!(
            "messages.{}: `tool_use` ids were found without `tool_result` blocks immediately \
             after: {}. Each `tool_use` block must have a corresponding `tool_result` block in \
             the next message.",
            messages.len().saturating_sub(1),
            open.join(", ")
        ));
    }
    Ok(())
}

fn check_openai(messages: &[Value]) -> Result<(), String> {
    // Calls of the last assistant message not answered yet, and those answered.
    let mut open: Vec<String> = Vec::new();
    let mut answered: Vec<String> = Vec::new();
    let unanswered = |open: &[String]| {
        format!(
            "An assistant message with 'tool_calls' must be followed by tool messages responding \
             to each 'tool_call_id'. The following tool_call_ids did not have response messages: \
             {}",
            open.join(", ")
        )
    };
    for (i, message) in messages.iter().enumerate() {
        if role(message) == "tool" {
            let id = text_field(message, "tool_call_id").to_owned();
            if answered.contains(&id) {
                return Err(format!(
                    "messages[{i}]: more than one tool message responds to tool_call_id {id}"
                ));
            }
            let Some(position) = open.iter().position(|o| *o == id) else {
                return Err(format!(
                    "Invalid parameter: messages[{i}]: messages with role 'tool' must be a \
                     response to a preceeding message with 'tool_calls' (no call has id {id})."
                ));
            };
            open.remove(position);
            answered.push(id);
            continue;
        }
        if !open.is_empty() {
            return Err(unanswered(&open));
        }
        answered.clear();
        if role(message) == "assistant" {
            let calls = message
                .get("tool_calls")
                .and_then(Value::as_array)
                .map_or(&[][..], Vec::as_slice);
            for (j, call) in calls.iter().enumerate() {
                let id = text_field(call, "id").to_owned();
                if open.contains(&id) {
                    return Err(format!(
                        "messages[{i}].tool_calls[{j}]: duplicate tool_call id {id}; the ids of \
                         one message's tool calls must be unique"
                    ));
                }
                open.push(id);
            }
        }
    }
    if !open.is_empty() {
        return Err(unanswered(&open));
    }
    Ok(())
}

/// The parts of a Gemini content holding `key` (`functionCall` / `functionResponse`).
fn gemini_parts<'a>(content: &'a Value, key: &str) -> Vec<&'a Value> {
    content
        .get("parts")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|part| part.get(key))
        .collect()
}

/// Gemini: roles are `user` and `model`, every content has parts, and a model turn with function
/// calls is followed by a user turn with one function response per call (names and any ids
/// matching); a function response answers only the turn just before it.
fn check_gemini(contents: &[Value]) -> Result<(), String> {
    let mut open: Vec<&Value> = Vec::new();
    for (i, content) in contents.iter().enumerate() {
        let role = content
            .get("role")
            .and_then(Value::as_str)
            .unwrap_or("user");
        if role != "user" && role != "model" {
            return Err(format!(
                "contents[{i}]: Please use a valid role: user, model (got {role:?})."
            ));
        }
        if content
            .get("parts")
            .and_then(Value::as_array)
            .is_none_or(Vec::is_empty)
        {
            return Err(format!("contents[{i}].parts must not be empty."));
        }
        let responses = gemini_parts(content, "functionResponse");
        if open.is_empty() != responses.is_empty() || (role == "model" && !responses.is_empty()) {
            return Err(format!(
                "contents[{i}]: Please ensure that function response turn comes immediately \
                 after a function call turn."
            ));
        }
        if responses.len() != open.len() {
            return Err(format!(
                "contents[{i}]: Please ensure that the number of function response parts is \
                 equal to the number of function call parts of the function call turn."
            ));
        }
        for response in responses {
            let name = text_field(response, "name");
            let id = response.get("id").and_then(Value::as_str);
            let Some(position) = open.iter().position(|call| {
                text_field(call, "name") == name
                    && id.is_none_or(|id| call.get("id").and_then(Value::as_str) == Some(id))
            }) else {
                return Err(format!(
                    "contents[{i}]: function response {name:?} (id {id:?}) answers no function \
                     call of the turn before it"
                ));
            };
            open.remove(position);
        }
        if role == "model" {
            open = gemini_parts(content, "functionCall");
        }
    }
    if !open.is_empty() {
        return Err(format!(
            "contents[{}]: Please ensure that function call turn comes immediately after a \
             user turn or after a function response turn, and that it is answered.",
            contents.len().saturating_sub(1)
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn anthropic(messages: Value) -> Result<(), String> {
        check(Dialect::Anthropic, messages.as_array().expect("array"))
    }

    fn openai(messages: Value) -> Result<(), String> {
        check(Dialect::OpenAi, messages.as_array().expect("array"))
    }

    fn tool_use(id: &str) -> Value {
        json!({"type": "tool_use", "id": id, "name": "Read", "input": {}})
    }

    fn tool_result(id: &str) -> Value {
        json!({"type": "tool_result", "tool_use_id": id, "content": "ok"})
    }

    #[test]
    fn anthropic_pairs_every_call_with_one_result_in_the_next_message() {
        let ok = json!([
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [tool_use("a"), tool_use("b")]},
            {"role": "user", "content": [tool_result("b"), tool_result("a")]},
            {"role": "assistant", "content": [{"type": "text", "text": "done"}]},
        ]);
        assert_eq!(anthropic(ok), Ok(()));

        let duplicate = json!([
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [tool_use("a"), tool_use("a")]},
            {"role": "user", "content": [tool_result("a"), tool_result("a")]},
        ]);
        let error = anthropic(duplicate).expect_err("duplicate ids");
        assert!(error.contains("ids must be unique"), "{error}");

        let missing = json!([
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [tool_use("a"), tool_use("b")]},
            {"role": "user", "content": [tool_result("a")]},
        ]);
        let error = anthropic(missing).expect_err("missing result");
        assert!(
            error.starts_with("messages.2:") && error.contains(": b."),
            "{error}"
        );

        let stray = json!([
            {"role": "user", "content": [tool_result("x")]},
        ]);
        assert!(anthropic(stray).is_err());

        let trailing = json!([
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [tool_use("a")]},
        ]);
        assert!(anthropic(trailing).is_err());
    }

    #[test]
    fn openai_pairs_every_call_with_one_tool_message_right_after() {
        let call = |id: &str| json!({"id": id, "type": "function", "function": {"name": "Read", "arguments": "{}"}});
        let tool = |id: &str| json!({"role": "tool", "tool_call_id": id, "content": "ok"});
        let ok = json!([
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": null, "tool_calls": [call("a"), call("b")]},
            tool("a"), tool("b"),
            {"role": "user", "content": "next"},
        ]);
        assert_eq!(openai(ok), Ok(()));

        let duplicate = json!([
            {"role": "assistant", "content": null, "tool_calls": [call("a"), call("a")]},
            tool("a"), tool("a"),
        ]);
        assert!(openai(duplicate)
            .expect_err("dup")
            .contains("duplicate tool_call id a"));

        let missing = json!([
            {"role": "assistant", "content": null, "tool_calls": [call("a"), call("b")]},
            tool("a"),
            {"role": "user", "content": "next"},
        ]);
        assert!(openai(missing).expect_err("missing").ends_with(": b"));

        let stray = json!([{"role": "user", "content": "hi"}, tool("z")]);
        assert!(openai(stray).expect_err("stray").contains("role 'tool'"));
    }
}
