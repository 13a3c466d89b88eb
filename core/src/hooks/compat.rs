//! The `tool_response` hooks see: the tool's structured result plus the field names Claude Code's
//! hooks read (`filePath`, `structuredPatch`, `oldStart`, Read's nested `file`, …), so a hook
//! script written for Claude Code finds its fields unchanged.
//!
//! robota's tools describe their results in snake_case (`file_path`, `structured_patch`); those
//! keys stay, and every snake_case key also appears under its camelCase name. Tool-specific
//! shapes Claude Code adds are filled in from the tool input where the result does not carry
//! them.

use serde_json::{Map, Value};

/// The `tool_response` for a PostToolUse hook of `tool_name` called with `tool_input`.
pub fn hook_tool_response(tool_name: &str, tool_input: &Value, response: &Value) -> Value {
    let mut out = with_camel_case_twins(response);
    let Value::Object(fields) = &mut out else {
        return out;
    };
    let input = |snake: &str, camel: &str| {
        tool_input
            .get(snake)
            .or_else(|| tool_input.get(camel))
            .cloned()
    };
    match tool_name {
        // Claude Code: {type: "text", file: {filePath, content, numLines, startLine, totalLines}}.
        "Read" => {
            let mut file = Map::new();
            for (from, to) in [
                ("file_path", "filePath"),
                ("content", "content"),
                ("num_lines", "numLines"),
                ("start_line", "startLine"),
                ("total_lines", "totalLines"),
            ] {
                if let Some(value) = fields.get(from) {
                    file.insert(to.to_string(), value.clone());
                }
            }
            fields.entry("file").or_insert_with(|| Value::Object(file));
        }
        // Claude Code: {type, filePath, content, structuredPatch}.
        "Write" => {
            if let Some(content) = input("content", "content") {
                fields.entry("content").or_insert(content);
            }
        }
        // Claude Code: {filePath, oldString, newString, replaceAll, structuredPatch}.
        "Edit" => {
            if let Some(old) = input("old_string", "oldString") {
                fields.entry("oldString").or_insert(old);
            }
            if let Some(new) = input("new_string", "newString") {
                fields.entry("newString").or_insert(new);
            }
        }
        _ => {}
    }
    out
}

/// `value` with every snake_case object key (at any depth) also present under its camelCase name
/// (an existing key of that name wins).
fn with_camel_case_twins(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut out = Map::new();
            for (key, item) in map {
                out.insert(key.clone(), with_camel_case_twins(item));
            }
            for (key, item) in map {
                let camel = camel_case(key);
                if camel != *key && !map.contains_key(&camel) {
                    out.insert(camel, with_camel_case_twins(item));
                }
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(with_camel_case_twins).collect()),
        other => other.clone(),
    }
}

/// `structured_patch` → `structuredPatch`; keys without `_` are unchanged.
fn camel_case(key: &str) -> String {
    let mut out = String::with_capacity(key.len());
    let mut upper = false;
    for (i, c) in key.chars().enumerate() {
        if c == '_' && i > 0 {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn snake_case_keys_gain_camel_case_twins_at_every_depth() {
        let response = json!({
            "file_path": "a.txt",
            "structured_patch": [{"old_start": 1, "old_lines": 2, "lines": ["-a", "+b"]}],
            "type": "update",
        });
        let out = hook_tool_response(
            "Write",
            &json!({"file_path": "a.txt", "content": "b"}),
            &response,
        );
        assert_eq!(out["file_path"], "a.txt");
        assert_eq!(out["filePath"], "a.txt");
        assert_eq!(out["structuredPatch"][0]["oldStart"], 1);
        assert_eq!(out["structured_patch"][0]["old_lines"], 2);
        assert_eq!(out["content"], "b");
        assert_eq!(out["type"], "update");
    }

    #[test]
    fn read_gets_claude_codes_nested_file_object() {
        let response = json!({"type": "text", "file_path": "a.txt", "content": "x\n", "start_line": 1,
            "num_lines": 1, "total_lines": 1, "truncated": false});
        let out = hook_tool_response("Read", &json!({"file_path": "a.txt"}), &response);
        assert_eq!(
            out["file"],
            json!({"filePath": "a.txt", "content": "x\n", "numLines": 1, "startLine": 1, "totalLines": 1})
        );
    }

    #[test]
    fn edit_echoes_its_strings_from_either_input_spelling() {
        let out = hook_tool_response(
            "Edit",
            &json!({"filePath": "a", "oldString": "x", "new_string": "y"}),
            &json!({"file_path": "a", "replace_all": false}),
        );
        assert_eq!(
            (out["oldString"].as_str(), out["newString"].as_str()),
            (Some("x"), Some("y"))
        );
        assert_eq!(out["replaceAll"], false);
    }

    #[test]
    fn an_existing_camel_case_key_wins_and_non_objects_pass_through() {
        let out = hook_tool_response("Custom", &json!({}), &json!({"a_b": 1, "aB": 2}));
        assert_eq!(out["aB"], 2);
        assert_eq!(
            hook_tool_response("Custom", &json!({}), &json!("text")),
            json!("text")
        );
        assert_eq!(camel_case("_private"), "_private");
        assert_eq!(camel_case("num_files"), "numFiles");
    }
}
