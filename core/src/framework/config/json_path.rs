//! JSON paths as users write them in error messages: `providers.anthropic.baseURL`,
//! `permissions.allow[2]`, `providers["gpt-4.1"].apiKey`.

use std::fmt;

use serde_json::Value;

/// One step into a JSON document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Segment {
    Key(String),
    Index(usize),
}

/// A path from the top of a settings document to one value.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct JsonPath(Vec<Segment>);

impl JsonPath {
    pub(crate) fn root() -> Self {
        JsonPath(Vec::new())
    }

    pub(crate) fn key(&self, key: &str) -> Self {
        let mut segments = self.0.clone();
        segments.push(Segment::Key(key.to_owned()));
        JsonPath(segments)
    }

    pub(crate) fn index(&self, index: usize) -> Self {
        let mut segments = self.0.clone();
        segments.push(Segment::Index(index));
        JsonPath(segments)
    }

    pub(crate) fn segments(&self) -> &[Segment] {
        &self.0
    }

    /// The value at this path in `value`, if every step exists.
    pub(crate) fn lookup<'v>(&self, value: &'v Value) -> Option<&'v Value> {
        let mut current = value;
        for segment in &self.0 {
            current = match (segment, current) {
                (Segment::Key(key), Value::Object(map)) => map.get(key)?,
                (Segment::Index(index), Value::Array(items)) => items.get(*index)?,
                _ => return None,
            };
        }
        Some(current)
    }

    /// The path with every trailing array index removed. Arrays (outside the concatenated
    /// permission lists) are replaced wholesale by a later layer, so the layer that owns an array
    /// element is the layer that owns the array.
    pub(crate) fn without_trailing_indexes(&self) -> Self {
        let mut segments = self.0.clone();
        while matches!(segments.last(), Some(Segment::Index(_))) {
            segments.pop();
        }
        JsonPath(segments)
    }
}

/// Keys that can be written bare after a dot; anything else is quoted so the path stays
/// unambiguous (`providers["gpt-4.1"]`).
fn is_plain_key(key: &str) -> bool {
    !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '$')
}

impl fmt::Display for JsonPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return f.write_str("(top level)");
        }
        for (position, segment) in self.0.iter().enumerate() {
            match segment {
                Segment::Key(key) if is_plain_key(key) => {
                    if position > 0 {
                        f.write_str(".")?;
                    }
                    f.write_str(key)?;
                }
                Segment::Key(key) => {
                    let quoted = serde_json::to_string(key).map_err(|_| fmt::Error)?;
                    write!(f, "[{quoted}]")?;
                }
                Segment::Index(index) => write!(f, "[{index}]")?,
            }
        }
        Ok(())
    }
}

/// A short description of a JSON value for "expected X, found Y" messages.
pub(crate) fn describe(value: &Value) -> String {
    const MAX_SHOWN: usize = 60;
    match value {
        Value::Null => "null".to_owned(),
        Value::Bool(b) => format!("the boolean {b}"),
        Value::Number(n) => format!("the number {n}"),
        Value::String(s) => {
            let shown: String = s.chars().take(MAX_SHOWN).collect();
            let ellipsis = if shown.len() < s.len() { "…" } else { "" };
            format!("the string \"{shown}{ellipsis}\"")
        }
        Value::Array(items) => format!("an array of {} item(s)", items.len()),
        Value::Object(_) => "an object".to_owned(),
    }
}
