//! Reading the bindings' JSON documents with errors a caller can act on: the failing field is
//! named (`max_turns`, `turns[0].text`) and the expected type is said in words ("a whole number
//! ≥ 0", not "u32"). Field names are the documents' own snake_case keys; the Node facade maps
//! the ones it renames back to its camelCase options.

use serde::de::DeserializeOwned;
use serde_json::Value;

use super::error::ApiError;

/// Deserializes `value`; a failure names `what` (e.g. `session options`, `tool \`add\``) and
/// the field that failed.
pub(crate) fn from_value<T: DeserializeOwned>(value: Value, what: &str) -> Result<T, ApiError> {
    serde_path_to_error::deserialize(value).map_err(|error| {
        let path = error.path().to_string();
        let message = readable(&error.into_inner().to_string());
        if path.is_empty() || path == "." {
            ApiError::invalid_json(format!("{what}: {message}"))
        } else {
            ApiError::invalid_json(format!("{what}: `{path}`: {message}"))
        }
    })
}

/// A serde message in the words of someone who writes JSON, Python or JavaScript: Rust type
/// names become what they accept.
pub(crate) fn readable(message: &str) -> String {
    const WORDS: [(&str, &str); 16] = [
        ("expected u8", "expected a whole number from 0 to 255"),
        ("expected u16", "expected a whole number from 0 to 65535"),
        (
            "expected u32",
            "expected a whole number from 0 to 4294967295",
        ),
        ("expected u64", "expected a whole number ≥ 0"),
        ("expected usize", "expected a whole number ≥ 0"),
        ("expected i32", "expected a whole number"),
        ("expected i64", "expected a whole number"),
        ("expected f32", "expected a number"),
        ("expected f64", "expected a number"),
        ("expected a sequence", "expected a list"),
        ("expected a map", "expected an object"),
        ("expected a borrowed string", "expected a string"),
        ("expected a string", "expected a string"),
        ("expected a boolean", "expected true or false"),
        ("expected path string", "expected a path (a string)"),
        ("expected unit", "expected null"),
    ];
    let mut text = message.to_string();
    for (from, to) in WORDS {
        if let Some(at) = text.find(from) {
            // Only whole words: `expected u32` but not `expected u32x`.
            let end = at + from.len();
            let next = text[end..].chars().next();
            if next.is_none_or(|c| !c.is_alphanumeric() && c != '_') {
                text.replace_range(at..end, to);
            }
        }
    }
    // `expected struct HostToolSpec` / `expected internally tagged enum X`: say "an object".
    for marker in [
        "expected struct ",
        "expected internally tagged enum ",
        "expected enum ",
    ] {
        if let Some(at) = text.find(marker) {
            let rest = &text[at + marker.len()..];
            let name_len = rest
                .find(|c: char| !c.is_alphanumeric() && c != '_')
                .unwrap_or(rest.len());
            text.replace_range(at..at + marker.len() + name_len, "expected an object");
        }
    }
    text
}

/// `value` in a few words for a message: its kind and, when short, itself.
pub(crate) fn shorten(value: &Value) -> String {
    let kind = match value {
        Value::Null => return "null".into(),
        Value::Bool(b) => return format!("`{b}`"),
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    };
    let text = value.to_string();
    if text.chars().count() <= 80 {
        format!("{kind} `{text}`")
    } else {
        let cut: String = text.chars().take(77).collect();
        format!("{kind} `{cut}...`")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::json;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Doc {
        #[serde(default)]
        max_turns: Option<u32>,
        #[serde(default)]
        turns: Vec<Turn>,
    }

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Turn {
        text: String,
    }

    #[test]
    fn errors_name_the_field_and_say_the_type_in_words() {
        let err = from_value::<Doc>(json!({"max_turns": -1}), "session options").unwrap_err();
        assert_eq!(
            err.message,
            "session options: `max_turns`: invalid value: integer `-1`, expected a whole number \
             from 0 to 4294967295"
        );
        let err = from_value::<Doc>(json!({"turns": [{"text": 3}]}), "provider").unwrap_err();
        assert!(
            err.message.starts_with(
                "provider: `turns[0].text`: invalid type: integer `3`, expected a string"
            ),
            "{}",
            err.message
        );
        let err = from_value::<Doc>(json!({"max_turn": 1}), "session options").unwrap_err();
        assert!(
            err.message.contains("unknown field `max_turn`"),
            "{}",
            err.message
        );
    }

    #[test]
    fn type_names_become_words() {
        assert_eq!(
            readable("invalid type: map, expected struct HostToolSpec"),
            "invalid type: map, expected an object"
        );
        assert_eq!(readable("expected u32x"), "expected u32x");
    }
}
