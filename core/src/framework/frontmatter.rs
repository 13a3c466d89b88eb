//! YAML frontmatter of Markdown definition files (subagents today; skills and custom commands use
//! the same format): the `---` block at the top of the file, parsed with a real YAML parser, and
//! the Markdown body after it.
//!
//! ```text
//! ---
//! name: code-reviewer
//! description: |
//!   Use this agent after writing code.
//!   <example>user: "review my diff"</example>
//! tools: [Read, Grep]
//! ---
//! You review code.
//! ```
//!
//! Everything YAML allows works: block scalars (`|`, `>`), multi-line plain and quoted values,
//! lists in block or flow style, comments, anchors. Each top-level key keeps its 1-based line in
//! the file, so a caller's warnings can point at it; a YAML error names its line too.
//!
//! **Claude Code's lenient form.** Claude Code accepts frontmatter that is not strictly YAML: a
//! one-line value containing `: ` or a character YAML reserves (`description: Use this agent
//! when… Context: the user…`, values starting with `[`, `*`, `>`, …). Many real files (Anthropic's
//! own plugin agents among them) are written that way. When strict parsing fails, the block is
//! parsed again with every such unquoted top-level `key: value` line taken as one quoted string,
//! as Claude Code does; only when that fails too is the file an error, reported at the line the
//! strict parser named.
//!
//! A file that does not start with a `---` line has no frontmatter ([`Frontmatter::present`] is
//! false and the whole text is the body); a `---` that is never closed is an error.

use std::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::Value;
use serde_saphyr::Spanned;

/// One top-level key of a frontmatter block.
#[derive(Debug, Clone, PartialEq)]
pub struct FrontmatterField {
    /// The key as written.
    pub key: String,
    /// Its value (YAML scalars become strings, numbers, booleans or null; sequences arrays;
    /// mappings objects).
    pub value: Value,
    /// 1-based line of the key in the file.
    pub line: usize,
}

impl FrontmatterField {
    /// The value as one string: a string as is, a number or boolean written out, null (an empty
    /// value) as `""`. A list or a mapping is an error saying so.
    pub fn text(&self) -> Result<String, String> {
        match &self.value {
            Value::String(text) => Ok(text.clone()),
            Value::Null => Ok(String::new()),
            Value::Bool(_) | Value::Number(_) => Ok(self.value.to_string()),
            Value::Array(_) => Err(format!("`{}` must be a single value, not a list", self.key)),
            Value::Object(_) => Err(format!(
                "`{}` must be a single value, not a mapping",
                self.key
            )),
        }
    }

    /// The value as a flag: a boolean, or the strings `true` / `false` in any case. Null (an
    /// empty value) is `None`; anything else is an error saying so.
    pub fn flag(&self) -> Result<Option<bool>, String> {
        match &self.value {
            Value::Bool(value) => Ok(Some(*value)),
            Value::String(text) if text.eq_ignore_ascii_case("true") => Ok(Some(true)),
            Value::String(text) if text.eq_ignore_ascii_case("false") => Ok(Some(false)),
            Value::Null => Ok(None),
            other => Err(format!("`{}` must be true or false, not {other}", self.key)),
        }
    }

    /// The value as a list of strings: a YAML list of scalars, or one string of comma-separated
    /// items (`Read, Grep, Glob`), empty items dropped. Null is an empty list.
    pub fn list(&self) -> Result<Vec<String>, String> {
        let split = |text: &str| -> Vec<String> {
            text.split(',')
                .map(str::trim)
                .filter(|item| !item.is_empty())
                .map(str::to_string)
                .collect()
        };
        match &self.value {
            Value::Null => Ok(Vec::new()),
            Value::String(text) => Ok(split(text)),
            Value::Bool(_) | Value::Number(_) => Ok(vec![self.value.to_string()]),
            Value::Array(items) => {
                let mut out = Vec::new();
                for item in items {
                    match item {
                        Value::String(text) => out.extend(split(text)),
                        Value::Bool(_) | Value::Number(_) => out.push(item.to_string()),
                        Value::Null => {}
                        Value::Array(_) | Value::Object(_) => {
                            return Err(format!(
                                "`{}` must be a list of names, but an item is {}",
                                self.key,
                                if item.is_array() {
                                    "a list"
                                } else {
                                    "a mapping"
                                }
                            ))
                        }
                    }
                }
                Ok(out)
            }
            Value::Object(_) => Err(format!(
                "`{}` must be a list of names, not a mapping",
                self.key
            )),
        }
    }
}

/// A parsed definition file: its frontmatter keys in file order and its body.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Frontmatter {
    /// Whether the file starts with a frontmatter block.
    pub present: bool,
    /// The top-level keys, in the order written.
    pub fields: Vec<FrontmatterField>,
    /// The text after the closing `---` (the whole text without frontmatter), not trimmed.
    pub body: String,
    /// 1-based line of the body's first line.
    pub body_line: usize,
    /// True when the block was only readable in Claude Code's lenient form (see the module
    /// docs).
    pub lenient: bool,
}

impl Frontmatter {
    /// The field `key`, if present.
    pub fn get(&self, key: &str) -> Option<&FrontmatterField> {
        self.fields.iter().find(|field| field.key == key)
    }

    /// The first present field among `keys` (for keys with several spellings, such as
    /// `disallowedTools` / `disallowed-tools`).
    pub fn first_of(&self, keys: &[&str]) -> Option<&FrontmatterField> {
        keys.iter().find_map(|key| self.get(key))
    }
}

/// Why a frontmatter block could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{problem}", line.map(|l| format!("line {l}: ")).unwrap_or_default())]
pub struct FrontmatterError {
    /// 1-based line in the file, when the problem is on one line.
    pub line: Option<usize>,
    /// What is wrong and how to fix it.
    pub problem: String,
}

/// Parses `text` (a whole file; a UTF-8 byte-order mark is ignored).
pub fn parse(text: &str) -> Result<Frontmatter, FrontmatterError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let Some((yaml, body, body_line)) = split(text)? else {
        return Ok(Frontmatter {
            present: false,
            fields: Vec::new(),
            body: text.to_string(),
            body_line: 1,
            lenient: false,
        });
    };
    // The block starts on line 2 of the file.
    const FIRST_LINE: usize = 2;
    let (fields, lenient) = match parse_block(&yaml) {
        Ok(fields) => (fields, false),
        Err(strict) => match parse_block(&quote_problematic_values(&yaml)) {
            Ok(fields) => (fields, true),
            Err(_) => {
                return Err(FrontmatterError {
                    line: strict.line.map(|l| l + FIRST_LINE - 1),
                    problem: strict.problem,
                })
            }
        },
    };
    Ok(Frontmatter {
        present: true,
        fields: fields
            .into_iter()
            .map(|(key, value, line)| FrontmatterField {
                key,
                value,
                line: line + FIRST_LINE - 1,
            })
            .collect(),
        body,
        body_line,
        lenient,
    })
}

/// Splits off the frontmatter: `Ok(None)` without an opening `---` line, else the YAML text,
/// the body and the body's first line number.
fn split(text: &str) -> Result<Option<(String, String, usize)>, FrontmatterError> {
    let mut lines = text.split_inclusive('\n');
    let Some(first) = lines.next() else {
        return Ok(None);
    };
    if first.trim_end() != "---" {
        return Ok(None);
    }
    let mut yaml = String::new();
    for (index, line) in lines.by_ref().enumerate() {
        if line.trim_end() == "---" {
            // Opening line, `index + 1` block lines, the closing line: the body starts after.
            let body_line = index + 3;
            let body: String = lines.collect();
            return Ok(Some((yaml, body, body_line)));
        }
        yaml.push_str(line);
    }
    Err(FrontmatterError {
        line: Some(1),
        problem: "the frontmatter opened by `---` on line 1 is never closed: add a `---` line \
                  after the last key"
            .into(),
    })
}

/// The block's keys with their values and 1-based lines within the block.
fn parse_block(yaml: &str) -> Result<Vec<(String, Value, usize)>, FrontmatterError> {
    if yaml.trim().is_empty() {
        return Ok(Vec::new());
    }
    match serde_saphyr::from_str_with_options::<Option<Entries>>(yaml, parser_options()) {
        Ok(Some(entries)) => Ok(entries.0),
        Ok(None) => Ok(Vec::new()),
        Err(error) => {
            // Valid YAML that is not a mapping (a bare line of text, a list).
            if let Ok(value) = serde_saphyr::from_str_with_options::<Value>(yaml, parser_options())
            {
                if !value.is_object() {
                    return Err(FrontmatterError {
                        line: Some(1),
                        problem: format!(
                            "the frontmatter must be `key: value` lines (a YAML mapping), not {}",
                            if value.is_array() {
                                "a list"
                            } else {
                                "a single value"
                            }
                        ),
                    });
                }
            }
            let error = error.without_snippet();
            let line = error
                .location()
                .map(|l| l.line() as usize)
                .filter(|l| *l > 0);
            Err(FrontmatterError {
                line,
                problem: format!("invalid YAML frontmatter: {}", one_line(&error.to_string())),
            })
        }
    }
}

/// How frontmatter is parsed: YAML 1.2 booleans only (as Claude Code's parser: `model: y` or
/// `color: yes` stay text), and a budget sized for a few dozen keys rather than the parser's
/// defaults (a million events): nested aliases that would expand without end ("billion laughs")
/// are refused after a few milliseconds instead of seconds.
fn parser_options() -> serde_saphyr::Options {
    let mut options = serde_saphyr::Options::default();
    options.strict_booleans = true;
    let mut budget = serde_saphyr::Budget::default();
    budget.max_events = 20_000;
    budget.max_nodes = 10_000;
    budget.max_aliases = 1_000;
    budget.max_anchors = 1_000;
    budget.max_recorded_anchor_events = 20_000;
    budget.max_depth = 32;
    budget.max_documents = 1;
    options.budget = Some(budget);
    options
}

/// serde-saphyr's messages may span lines (or repeat the location); one sentence is enough here.
fn one_line(message: &str) -> String {
    let first = message.lines().next().unwrap_or(message).trim();
    let first = first.strip_prefix("error: ").unwrap_or(first);
    // "… at line 3, column 7" — the caller reports the line itself.
    match first.rfind(" at line ") {
        Some(index) => first[..index].to_string(),
        None => first.to_string(),
    }
}

/// The top-level mapping, keys in order with their lines.
struct Entries(Vec<(String, Value, usize)>);

impl<'de> Deserialize<'de> for Entries {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct EntriesVisitor;

        impl<'de> Visitor<'de> for EntriesVisitor {
            type Value = Entries;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("`key: value` lines (a YAML mapping)")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Entries, A::Error> {
                let mut entries = Vec::new();
                while let Some(key) = map.next_key::<Spanned<String>>()? {
                    let value: Value = map.next_value()?;
                    let line = key.referenced.line() as usize;
                    entries.push((key.value, value, line));
                }
                Ok(Entries(entries))
            }
        }

        deserializer.deserialize_map(EntriesVisitor)
    }
}

/// Claude Code's retry: an unquoted one-line value of a top-level `key: value` line that holds
/// `: ` or a character YAML reserves becomes one double-quoted string. Other lines are kept, so
/// line numbers do not move.
fn quote_problematic_values(yaml: &str) -> String {
    let mut out = String::with_capacity(yaml.len() + 64);
    for line in yaml.split_inclusive('\n') {
        let (content, ending) = match line.strip_suffix('\n') {
            Some(rest) => match rest.strip_suffix('\r') {
                Some(rest) => (rest, "\r\n"),
                None => (rest, "\n"),
            },
            None => (line, ""),
        };
        match quoted_line(content) {
            Some(quoted) => {
                out.push_str(&quoted);
                out.push_str(ending);
            }
            None => out.push_str(line),
        }
    }
    out
}

/// `key: value` with `value` double-quoted, when the line needs it.
fn quoted_line(line: &str) -> Option<String> {
    let (key, rest) = line.split_once(':')?;
    let key_ok = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if !key_ok || !rest.starts_with([' ', '\t']) {
        return None;
    }
    let value = rest.trim();
    if value.is_empty() {
        return None;
    }
    let quoted = (value.starts_with('"') && value.ends_with('"') && value.len() > 1)
        || (value.starts_with('\'') && value.ends_with('\'') && value.len() > 1);
    if quoted {
        return None;
    }
    let special = value.contains(": ")
        || value.contains(" #")
        || value.chars().any(|c| {
            matches!(
                c,
                '{' | '}' | '[' | ']' | '*' | '&' | '!' | '|' | '>' | '%' | '@' | '`'
            )
        });
    if !special {
        return None;
    }
    let escaped = value.replace('\\', "\\\\").replace('"', "\\\"");
    Some(format!("{key}: \"{escaped}\""))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_scalars_lists_and_lines() {
        let parsed = parse(
            "---\nname: rev\ndescription: |\n  Reviews.\n  <example>user: \"x\"</example>\n\
             tools:\n  - Read\n  - Grep\nmodel: inherit\n---\nBody\n",
        )
        .expect("parses");
        assert!(parsed.present && !parsed.lenient);
        let keys: Vec<(&str, usize)> = parsed
            .fields
            .iter()
            .map(|f| (f.key.as_str(), f.line))
            .collect();
        assert_eq!(
            keys,
            [("name", 2), ("description", 3), ("tools", 6), ("model", 9)]
        );
        assert_eq!(
            parsed
                .get("description")
                .and_then(|f| f.text().ok())
                .as_deref(),
            Some("Reviews.\n<example>user: \"x\"</example>\n")
        );
        assert_eq!(
            parsed.get("tools").and_then(|f| f.list().ok()),
            Some(vec!["Read".to_string(), "Grep".to_string()])
        );
        assert_eq!(parsed.body, "Body\n");
        assert_eq!(parsed.body_line, 11);
    }

    #[test]
    fn claude_codes_lenient_one_line_values() {
        let parsed = parse(
            "---\nname: x\ndescription: Use this agent when asked. Examples: <example>Context: \
             a \"quote\" \\n here</example>\ncolor: yes\n---\nb",
        )
        .expect("lenient form parses");
        assert!(parsed.lenient);
        assert_eq!(
            parsed.get("description").and_then(|f| f.text().ok()).as_deref(),
            Some("Use this agent when asked. Examples: <example>Context: a \"quote\" \\n here</example>")
        );
        assert_eq!(
            parsed.get("color").map(|f| f.value.clone()),
            Some(Value::from("yes"))
        );
    }

    #[test]
    fn errors_name_the_file_line() {
        let error = parse("---\nname: x\ndescription: y\n  tools: z\n---\nb").unwrap_err();
        assert_eq!(error.line, Some(4), "{error:?}");
        assert!(error.problem.contains("invalid YAML"), "{error}");
        let error = parse("---\nname: x\n").unwrap_err();
        assert!(error.problem.contains("never closed"), "{error}");
        let none = parse("# Title\nbody").expect("no frontmatter");
        assert!(!none.present);
        assert_eq!(none.body, "# Title\nbody");
        let scalar = parse("---\njust text\n---\nb").unwrap_err();
        assert!(scalar.problem.contains("key: value"), "{scalar}");
    }
}

#[cfg(test)]
mod hostile_tests {
    use super::*;

    /// Nested aliases that would expand to gigabytes ("billion laughs") are never expanded: the
    /// parser's budget refuses the strict parse, and the lenient retry reads the lines as text.
    #[test]
    fn alias_bombs_are_refused_quickly() {
        let mut yaml = String::from("---\nname: bomb\n");
        yaml.push_str(&format!("a0: &a0 [{}]\n", ["\"lol\""; 9].join(",")));
        for level in 1..10 {
            let prev = level - 1;
            let items = vec![format!("*a{prev}"); 9].join(",");
            yaml.push_str(&format!("a{level}: &a{level} [{items}]\n"));
        }
        yaml.push_str("description: x\n---\nbody\n");
        let started = std::time::Instant::now();
        let result = parse(&yaml);
        assert!(
            started.elapsed() < std::time::Duration::from_secs(1),
            "took {:?}",
            started.elapsed()
        );
        if let Ok(parsed) = result {
            for field in &parsed.fields {
                assert!(
                    field.value.to_string().len() < yaml.len(),
                    "`{}` was expanded",
                    field.key
                );
            }
        }
    }
}
