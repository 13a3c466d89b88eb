//! Input schemas of the built-in tools: one declaration per tool yields both the JSON Schema the
//! model sees and the validator that checks (and normalises) what the model sent.
//!
//! Why one declaration: the schema the model is shown and the checks the tool applies can then never
//! drift apart. The validator accepts the TypeScript Robota camelCase names as aliases (`filePath`
//! for `file_path`, …) but the schema only advertises the Claude Code names, so models trained on
//! Claude Code see exactly what they expect. Errors name the field, what was expected and what
//! arrived, so the model can fix its call in one retry.

use serde_json::{Map, Value};

/// The JSON type a field accepts.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Kind {
    /// A string.
    String,
    /// An integer, at least `min`. Numeric strings (`"5"`) are accepted and converted because
    /// models sometimes quote numbers; a fractional number is refused.
    Integer { min: i64 },
    /// A boolean (`"true"`/`"false"` strings are accepted and converted, as for integers).
    Boolean,
    /// One of a fixed set of strings.
    Enum(&'static [&'static str]),
    /// An array of strings.
    StringArray,
    /// A non-empty array of objects, each with these fields (validated like a tool input).
    ObjectArray(&'static [Field]),
}

impl Kind {
    fn describe(self) -> String {
        match self {
            Kind::String => "a string".into(),
            Kind::Integer { min } => format!("an integer >= {min}"),
            Kind::Boolean => "a boolean".into(),
            Kind::Enum(values) => format!("one of {}", quoted_list(values)),
            Kind::StringArray => "an array of strings".into(),
            Kind::ObjectArray(fields) => format!(
                "a non-empty array of objects with {}",
                fields
                    .iter()
                    .map(|f| format!("`{}`", f.name))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }
}

/// One input field.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Field {
    /// The Claude Code name, shown in the schema.
    pub name: &'static str,
    /// Other accepted spellings (TypeScript Robota camelCase names).
    pub aliases: &'static [&'static str],
    /// Accepted type.
    pub kind: Kind,
    /// Whether the call must carry it.
    pub required: bool,
    /// Description for the model.
    pub description: &'static str,
}

/// The input declaration of one tool.
#[derive(Debug, Clone, Copy)]
pub(crate) struct InputSchema {
    /// Tool name, used in error messages.
    pub tool: &'static str,
    /// Accepted fields.
    pub fields: &'static [Field],
}

impl InputSchema {
    /// The JSON Schema advertised to the model (canonical names only, no extra properties).
    pub fn json_schema(&self) -> Value {
        object_schema(self.fields)
    }
}

/// The JSON Schema of an object with `fields`.
fn object_schema(fields: &[Field]) -> Value {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for field in fields {
        let mut prop = Map::new();
        match field.kind {
            Kind::String => {
                prop.insert("type".into(), "string".into());
            }
            Kind::Integer { min } => {
                prop.insert("type".into(), "integer".into());
                prop.insert("minimum".into(), min.into());
            }
            Kind::Boolean => {
                prop.insert("type".into(), "boolean".into());
            }
            Kind::Enum(values) => {
                prop.insert("type".into(), "string".into());
                prop.insert(
                    "enum".into(),
                    Value::Array(values.iter().map(|v| Value::from(*v)).collect()),
                );
            }
            Kind::StringArray => {
                prop.insert("type".into(), "array".into());
                prop.insert("items".into(), serde_json::json!({ "type": "string" }));
            }
            Kind::ObjectArray(items) => {
                prop.insert("type".into(), "array".into());
                prop.insert("minItems".into(), 1.into());
                prop.insert("items".into(), object_schema(items));
            }
        }
        prop.insert("description".into(), field.description.into());
        properties.insert(field.name.into(), Value::Object(prop));
        if field.required {
            required.push(Value::from(field.name));
        }
    }
    serde_json::json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    })
}

impl InputSchema {
    /// Checks `input` and returns it with aliases renamed to canonical names, numeric and boolean
    /// strings converted, and `null` optional fields dropped.
    ///
    /// Every problem is reported at once (not just the first), so one retry can fix them all.
    pub fn validate(&self, input: Value) -> Result<Map<String, Value>, String> {
        if !matches!(input, Value::Object(_) | Value::Null) {
            return Err(format!(
                "Invalid input for {}: expected a JSON object with fields {}, got {}.",
                self.tool,
                self.field_summary(),
                type_name(&input)
            ));
        }
        self.validate_fields(input).map_err(|problems| {
            format!(
                "Invalid input for {}: {}. Accepted fields: {}.",
                self.tool,
                problems.join("; "),
                self.field_summary()
            )
        })
    }

    /// The field checks of [`validate`](Self::validate), returning every problem.
    fn validate_fields(&self, input: Value) -> Result<Map<String, Value>, Vec<String>> {
        let object = match input {
            Value::Object(map) => map,
            Value::Null => Map::new(),
            other => {
                return Err(vec![format!(
                    "expected an object, got {}",
                    type_name(&other)
                )])
            }
        };
        let mut problems = Vec::new();
        let mut out = Map::new();
        for (key, value) in object {
            let Some(field) = self
                .fields
                .iter()
                .find(|f| f.name == key || f.aliases.contains(&key.as_str()))
            else {
                problems.push(format!("unknown field `{key}`"));
                continue;
            };
            if out.contains_key(field.name) {
                problems.push(format!(
                    "`{}` was given twice (as `{}` and an alias); give it once",
                    field.name, key
                ));
                continue;
            }
            if value.is_null() && !field.required {
                continue;
            }
            match check(field, value) {
                Ok(value) => {
                    out.insert(field.name.to_string(), value);
                }
                Err(problem) => problems.push(problem),
            }
        }
        for field in self.fields.iter().filter(|f| f.required) {
            if !out.contains_key(field.name) && !problems.iter().any(|p| p.contains(field.name)) {
                problems.push(format!(
                    "missing required field `{}` ({})",
                    field.name,
                    field.kind.describe()
                ));
            }
        }
        if problems.is_empty() {
            Ok(out)
        } else {
            Err(problems)
        }
    }

    fn field_summary(&self) -> String {
        self.fields
            .iter()
            .map(|f| {
                format!(
                    "`{}` ({}{})",
                    f.name,
                    f.kind.describe(),
                    if f.required { ", required" } else { "" }
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    }
}

fn check(field: &Field, value: Value) -> Result<Value, String> {
    let name = field.name;
    let wrong = |value: &Value| {
        format!(
            "`{name}` must be {}, got {}",
            field.kind.describe(),
            describe_value(value)
        )
    };
    match field.kind {
        Kind::String => match value {
            Value::String(_) => Ok(value),
            other => Err(wrong(&other)),
        },
        Kind::Integer { min } => {
            let number = match &value {
                Value::Number(n) => n
                    .as_i64()
                    .or_else(|| n.as_f64().filter(|f| f.fract() == 0.0).map(|f| f as i64)),
                Value::String(s) => s.trim().parse::<i64>().ok(),
                _ => None,
            };
            match number {
                Some(n) if n >= min => Ok(Value::from(n)),
                Some(n) => Err(format!("`{name}` must be at least {min}, got {n}")),
                None => Err(wrong(&value)),
            }
        }
        Kind::Boolean => match &value {
            Value::Bool(_) => Ok(value),
            Value::String(s) if s.eq_ignore_ascii_case("true") => Ok(Value::Bool(true)),
            Value::String(s) if s.eq_ignore_ascii_case("false") => Ok(Value::Bool(false)),
            _ => Err(wrong(&value)),
        },
        Kind::Enum(values) => match &value {
            Value::String(s) if values.contains(&s.as_str()) => Ok(value),
            _ => Err(wrong(&value)),
        },
        Kind::StringArray => match &value {
            Value::Array(items) if items.iter().all(Value::is_string) => Ok(value),
            _ => Err(wrong(&value)),
        },
        Kind::ObjectArray(fields) => match value {
            Value::Array(items) if !items.is_empty() => {
                let mut out = Vec::with_capacity(items.len());
                let mut problems = Vec::new();
                for (index, item) in items.into_iter().enumerate() {
                    let schema = InputSchema { tool: name, fields };
                    match schema.validate_fields(item) {
                        Ok(map) => out.push(Value::Object(map)),
                        Err(item_problems) => problems.extend(
                            item_problems
                                .into_iter()
                                .map(|p| format!("`{name}[{index}]`: {p}")),
                        ),
                    }
                }
                if problems.is_empty() {
                    Ok(Value::Array(out))
                } else {
                    Err(problems.join("; "))
                }
            }
            other => Err(wrong(&other)),
        },
    }
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn describe_value(value: &Value) -> String {
    let mut shown = value.to_string();
    if shown.len() > 60 {
        let mut cut = 57;
        while !shown.is_char_boundary(cut) {
            cut -= 1;
        }
        shown.truncate(cut);
        shown.push_str("...");
    }
    format!("{} {}", type_name(value), shown)
}

fn quoted_list(values: &[&str]) -> String {
    values
        .iter()
        .map(|v| format!("\"{v}\""))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Typed accessors over a validated input map. Validation already guaranteed the types, so a
/// mismatch here can only mean the field was absent; accessors then return `None`.
pub(crate) struct Input(pub Map<String, Value>);

impl Input {
    pub fn str(&self, name: &str) -> Option<&str> {
        self.0.get(name).and_then(Value::as_str)
    }

    pub fn string(&self, name: &str) -> String {
        self.str(name).unwrap_or_default().to_string()
    }

    pub fn int(&self, name: &str) -> Option<i64> {
        self.0.get(name).and_then(Value::as_i64)
    }

    pub fn bool(&self, name: &str) -> Option<bool> {
        self.0.get(name).and_then(Value::as_bool)
    }

    pub fn strings(&self, name: &str) -> Vec<String> {
        self.0
            .get(name)
            .and_then(Value::as_array)
            .map(|items| {
                items
                    .iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const SCHEMA: InputSchema = InputSchema {
        tool: "Demo",
        fields: &[
            Field {
                name: "file_path",
                aliases: &["filePath"],
                kind: Kind::String,
                required: true,
                description: "path",
            },
            Field {
                name: "limit",
                aliases: &[],
                kind: Kind::Integer { min: 1 },
                required: false,
                description: "n",
            },
        ],
    };

    #[test]
    fn aliases_are_renamed_and_numbers_coerced() {
        let out = SCHEMA
            .validate(json!({"filePath": "a", "limit": "5"}))
            .unwrap();
        assert_eq!(out.get("file_path"), Some(&json!("a")));
        assert_eq!(out.get("limit"), Some(&json!(5)));
    }

    #[test]
    fn every_problem_is_reported() {
        let err = SCHEMA
            .validate(json!({"limit": 0, "bogus": true}))
            .unwrap_err();
        assert!(err.contains("unknown field `bogus`"), "{err}");
        assert!(err.contains("`limit` must be at least 1"), "{err}");
        assert!(err.contains("missing required field `file_path`"), "{err}");
    }

    #[test]
    fn wrong_type_names_what_arrived() {
        let err = SCHEMA.validate(json!({"file_path": 3})).unwrap_err();
        assert!(
            err.contains("`file_path` must be a string, got a number 3"),
            "{err}"
        );
    }
}
