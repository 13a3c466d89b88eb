//! Saving "allow always" rules (and enabled plugins) into a settings file: an atomic
//! read-modify-write of `permissions.allow` (or `ask`/`deny`, or `enabledPlugins`) that keeps
//! everything else in the file.
//!
//! What is kept: every other key and value, the order of keys (the file is parsed into an
//! order-preserving tree, not `serde_json::Value`, whose maps sort their keys), the indentation
//! width or tab style, and a trailing newline. What is not: comments (JSON has none), blank
//! lines and the exact spacing inside lines — the file is re-printed pretty. A rule already in the
//! list is not added twice; when nothing is new the file is not touched.
//!
//! Safety: the new text goes to a temporary file in the same directory, is flushed to disk, and
//! replaces the old file with one `rename`, so a crash leaves either the old or the new file,
//! never half of one. A file that is not valid JSON, or whose `permissions` is not an object, is
//! refused rather than overwritten. Missing directories and files are created. Concurrent writers
//! to one file (two sessions answering "allow always" at the same instant) are not serialized:
//! the last rename wins.

use std::fmt;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{SerializeMap, SerializeSeq, Serializer};
use serde::{Deserialize, Serialize};

use crate::permissions::RuleList;

/// Why a rule could not be saved.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SettingsWriteError {
    /// The file exists but could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// The file is not valid JSON; it is left as it is.
    #[error(
        "{}:{line}:{column}: not valid JSON ({message}); fix the file by hand, robota will not \
         overwrite it",
        path.display()
    )]
    Parse {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// The parser's message.
        message: String,
    },
    /// A value on the way to the list has the wrong type; the file is left as it is.
    #[error("{}: `{json_path}` is {found}, expected {expected}; robota will not overwrite it", path.display())]
    WrongType {
        /// The file.
        path: PathBuf,
        /// Where, e.g. `permissions.allow`.
        json_path: String,
        /// What was expected.
        expected: &'static str,
        /// What was found.
        found: &'static str,
    },
    /// Writing the new file failed; the old file is unchanged.
    #[error("cannot write {}: {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: io::Error,
    },
}

/// Adds `rules` to `permissions.<list>` of the settings file at `path`, creating the file (and
/// its directories) when needed. Returns the rules that were new; the file is only rewritten when
/// that is not empty.
pub fn add_permission_rules(
    path: &Path,
    list: RuleList,
    rules: &[String],
) -> Result<Vec<String>, SettingsWriteError> {
    let mut added = Vec::new();
    edit_settings(path, |top, wrong| {
        let permissions = entry(top, "permissions", || Json::Object(Vec::new()));
        let Json::Object(permissions) = permissions else {
            return Err(wrong("permissions", "an object", permissions));
        };
        let key = list.as_str();
        let items = entry(permissions, key, || Json::Array(Vec::new()));
        let Json::Array(items) = items else {
            return Err(wrong(&format!("permissions.{key}"), "an array", items));
        };
        for rule in rules {
            let present = items
                .iter()
                .any(|item| matches!(item, Json::String(s) if s == rule));
            if !present && !added.contains(rule) {
                items.push(Json::String(rule.clone()));
                added.push(rule.clone());
            }
        }
        Ok(!added.is_empty())
    })?;
    Ok(added)
}

/// Sets `<object>.<key>` of the settings file at `path` to the boolean `value` (e.g.
/// `enabledPlugins."formatter@tools": true`), or removes the key when `value` is `None`; the
/// file (and its directories) is created when needed. Returns true when the file changed.
pub fn set_settings_flag(
    path: &Path,
    object: &str,
    key: &str,
    value: Option<bool>,
) -> Result<bool, SettingsWriteError> {
    edit_settings(path, |top, wrong| {
        if value.is_none() && !top.iter().any(|(k, _)| k == object) {
            return Ok(false);
        }
        let map = entry(top, object, || Json::Object(Vec::new()));
        let Json::Object(map) = map else {
            return Err(wrong(object, "an object", map));
        };
        let position = map.iter().position(|(k, _)| k == key);
        match (value, position) {
            (None, None) => Ok(false),
            (None, Some(index)) => {
                map.remove(index);
                Ok(true)
            }
            (Some(value), Some(index)) if map[index].1 == Json::Bool(value) => Ok(false),
            (Some(value), Some(index)) => {
                map[index].1 = Json::Bool(value);
                Ok(true)
            }
            (Some(value), None) => {
                map.push((key.to_string(), Json::Bool(value)));
                Ok(true)
            }
        }
    })
}

/// Applies a JSON merge patch (RFC 7396) to the settings file at `path`: objects merge key by
/// key, `null` removes a key, any other value replaces what was there. Keys keep their order in
/// the file; new keys go at the end. The file (and its directories) is created when needed.
/// Returns true when the file changed. A patch that is not an object is refused.
pub fn merge_settings_patch(
    path: &Path,
    patch: &serde_json::Value,
) -> Result<bool, SettingsWriteError> {
    let serde_json::Value::Object(patch) = patch else {
        return Err(SettingsWriteError::WrongType {
            path: path.to_path_buf(),
            json_path: "(the patch)".into(),
            expected: "an object",
            found: Json::from_value(patch).type_name(),
        });
    };
    edit_settings(path, |top, _| Ok(merge_object(top, patch)))
}

/// Reads the settings file at `path` as JSON (an absent or empty file is `{}`), size-capped like
/// every settings file.
pub fn read_settings_file(path: &Path) -> Result<serde_json::Value, SettingsWriteError> {
    let bytes = match crate::files::read_regular(path, &crate::files::SETTINGS_FILE) {
        Ok(bytes) => bytes,
        Err(e) if e.is_not_found() => return Ok(serde_json::Value::Object(Default::default())),
        Err(e) => {
            return Err(SettingsWriteError::Read {
                path: path.to_path_buf(),
                source: e.into_io_error(),
            })
        }
    };
    let text = String::from_utf8_lossy(&bytes);
    let body = text.strip_prefix('\u{feff}').unwrap_or(&text);
    if body.trim().is_empty() {
        return Ok(serde_json::Value::Object(Default::default()));
    }
    serde_json::from_str(body).map_err(|e| SettingsWriteError::Parse {
        path: path.to_path_buf(),
        line: e.line(),
        column: e.column(),
        message: e.to_string(),
    })
}

/// Merges `patch` into `target` (RFC 7396); true when anything changed.
fn merge_object(
    target: &mut Vec<(String, Json)>,
    patch: &serde_json::Map<String, serde_json::Value>,
) -> bool {
    let mut changed = false;
    for (key, value) in patch {
        let position = target.iter().position(|(k, _)| k == key);
        match (value, position) {
            (serde_json::Value::Null, Some(index)) => {
                target.remove(index);
                changed = true;
            }
            (serde_json::Value::Null, None) => {}
            (serde_json::Value::Object(inner), Some(index))
                if matches!(target[index].1, Json::Object(_)) =>
            {
                if let Json::Object(existing) = &mut target[index].1 {
                    changed |= merge_object(existing, inner);
                }
            }
            (serde_json::Value::Object(inner), position) => {
                let mut fresh = Vec::new();
                merge_object(&mut fresh, inner);
                let fresh = Json::Object(fresh);
                match position {
                    Some(index) => target[index].1 = fresh,
                    None => target.push((key.clone(), fresh)),
                }
                changed = true;
            }
            (other, Some(index)) => {
                let fresh = Json::from_value(other);
                if target[index].1 != fresh {
                    target[index].1 = fresh;
                    changed = true;
                }
            }
            (other, None) => {
                target.push((key.clone(), Json::from_value(other)));
                changed = true;
            }
        }
    }
    changed
}

/// A function that names a value of the wrong type at a JSON path of the file being edited.
type WrongType<'a> = &'a dyn Fn(&str, &'static str, &Json) -> SettingsWriteError;

/// Reads the settings file at `path` (an absent or empty one is `{}`), lets `change` edit its
/// top-level object, and writes it back atomically when `change` says it changed something.
fn edit_settings(
    path: &Path,
    change: impl FnOnce(&mut Vec<(String, Json)>, WrongType<'_>) -> Result<bool, SettingsWriteError>,
) -> Result<bool, SettingsWriteError> {
    let original = match crate::files::read_regular(path, &crate::files::SETTINGS_FILE) {
        Ok(bytes) => Some(bytes),
        Err(e) if e.is_not_found() => None,
        Err(e) => {
            return Err(SettingsWriteError::Read {
                path: path.to_path_buf(),
                source: e.into_io_error(),
            })
        }
    };
    let text = original
        .as_deref()
        .map(|bytes| String::from_utf8_lossy(bytes).into_owned())
        .unwrap_or_default();
    let body = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let mut root = if body.trim().is_empty() {
        Json::Object(Vec::new())
    } else {
        serde_json::from_str::<Json>(body).map_err(|e| SettingsWriteError::Parse {
            path: path.to_path_buf(),
            line: e.line(),
            column: e.column(),
            message: e.to_string(),
        })?
    };
    let wrong = |json_path: &str, expected, found: &Json| SettingsWriteError::WrongType {
        path: path.to_path_buf(),
        json_path: json_path.to_string(),
        expected,
        found: found.type_name(),
    };
    let Json::Object(top) = &mut root else {
        return Err(wrong("(the whole file)", "an object", &root));
    };
    if !change(top, &wrong)? {
        return Ok(false);
    }
    let rendered = render(
        &root,
        indent_of(body),
        original.is_none() || text.ends_with('\n'),
    );
    write_atomically(path, rendered.as_bytes()).map_err(|source| SettingsWriteError::Write {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(true)
}

/// The value under `key`, inserted at the end when missing.
fn entry<'a>(
    map: &'a mut Vec<(String, Json)>,
    key: &str,
    make: impl FnOnce() -> Json,
) -> &'a mut Json {
    let index = match map.iter().position(|(k, _)| k == key) {
        Some(index) => index,
        None => {
            map.push((key.to_string(), make()));
            map.len() - 1
        }
    };
    &mut map[index].1
}

/// The indentation unit of the first indented line (two spaces when the file has none).
fn indent_of(text: &str) -> Vec<u8> {
    text.lines()
        .map(|line| {
            line.bytes()
                .take_while(|b| *b == b' ' || *b == b'\t')
                .collect::<Vec<u8>>()
        })
        .find(|indent| !indent.is_empty())
        .unwrap_or_else(|| b"  ".to_vec())
}

fn render(root: &Json, indent: Vec<u8>, trailing_newline: bool) -> String {
    let mut out = Vec::new();
    let formatter = serde_json::ser::PrettyFormatter::with_indent(&indent);
    let mut serializer = serde_json::Serializer::with_formatter(&mut out, formatter);
    // Serializing this tree cannot fail: keys are strings and numbers are already valid JSON.
    let _ = root.serialize(&mut serializer);
    let mut text = String::from_utf8_lossy(&out).into_owned();
    if trailing_newline {
        text.push('\n');
    }
    text
}

/// Writes `bytes` to a temporary file next to `path`, syncs it, and renames it over `path`,
/// keeping the old file's permission bits.
fn write_atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    };
    fs::create_dir_all(&dir)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "settings.json".into());
    let temp = dir.join(format!(
        ".{name}.{}.{}.tmp",
        std::process::id(),
        uuid::Uuid::new_v4().simple()
    ));
    let result = (|| {
        let mut file = fs::File::create(&temp)?;
        file.write_all(bytes)?;
        if let Ok(meta) = fs::metadata(path) {
            file.set_permissions(meta.permissions())?;
        }
        file.sync_all()?;
        drop(file);
        fs::rename(&temp, path)?;
        // The rename is only durable once the directory entry is; not every platform lets a
        // directory be opened for this, so a failure here is not an error.
        if let Ok(dir) = fs::File::open(&dir) {
            let _ = dir.sync_all();
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = fs::remove_file(&temp);
    }
    result
}

/// A JSON tree whose objects keep their keys in file order.
#[derive(Debug, Clone, PartialEq)]
enum Json {
    Null,
    Bool(bool),
    Number(serde_json::Number),
    String(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

impl Json {
    fn from_value(value: &serde_json::Value) -> Json {
        match value {
            serde_json::Value::Null => Json::Null,
            serde_json::Value::Bool(b) => Json::Bool(*b),
            serde_json::Value::Number(n) => Json::Number(n.clone()),
            serde_json::Value::String(s) => Json::String(s.clone()),
            serde_json::Value::Array(items) => {
                Json::Array(items.iter().map(Json::from_value).collect())
            }
            serde_json::Value::Object(map) => Json::Object(
                map.iter()
                    .map(|(k, v)| (k.clone(), Json::from_value(v)))
                    .collect(),
            ),
        }
    }

    fn type_name(&self) -> &'static str {
        match self {
            Json::Null => "null",
            Json::Bool(_) => "a boolean",
            Json::Number(_) => "a number",
            Json::String(_) => "a string",
            Json::Array(_) => "an array",
            Json::Object(_) => "an object",
        }
    }
}

impl Serialize for Json {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Json::Null => serializer.serialize_unit(),
            Json::Bool(b) => serializer.serialize_bool(*b),
            Json::Number(n) => n.serialize(serializer),
            Json::String(s) => serializer.serialize_str(s),
            Json::Array(items) => {
                let mut seq = serializer.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(item)?;
                }
                seq.end()
            }
            Json::Object(entries) => {
                let mut map = serializer.serialize_map(Some(entries.len()))?;
                for (key, value) in entries {
                    map.serialize_entry(key, value)?;
                }
                map.end()
            }
        }
    }
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(JsonVisitor)
    }
}

struct JsonVisitor;

impl<'de> Visitor<'de> for JsonVisitor {
    type Value = Json;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_unit<E: de::Error>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }

    fn visit_none<E: de::Error>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Json, E> {
        Ok(Json::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Json, E> {
        Ok(Json::Number(v.into()))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Json, E> {
        Ok(Json::Number(v.into()))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Json, E> {
        serde_json::Number::from_f64(v)
            .map(Json::Number)
            .ok_or_else(|| E::custom("a number that JSON cannot represent"))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Json, E> {
        Ok(Json::String(v.to_string()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Json, E> {
        Ok(Json::String(v))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Json::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
        let mut entries: Vec<(String, Json)> = Vec::new();
        while let Some((key, value)) = map.next_entry::<String, Json>()? {
            // A repeated key keeps its first position and its last value, as JSON parsers that
            // read it (serde_json, JavaScript) see it.
            match entries.iter_mut().find(|(k, _)| *k == key) {
                Some(existing) => existing.1 = value,
                None => entries.push((key, value)),
            }
        }
        Ok(Json::Object(entries))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir() -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("robota-settings-writer-{}", uuid::Uuid::new_v4()));
        let _ = fs::create_dir_all(&dir);
        dir
    }

    #[test]
    fn creates_the_file_and_its_directory() {
        let dir = temp_dir();
        let path = dir.join(".claude/settings.local.json");
        let added = add_permission_rules(&path, RuleList::Allow, &["Bash(npm test)".into()]);
        assert_eq!(added.ok(), Some(vec!["Bash(npm test)".to_string()]));
        let text = fs::read_to_string(&path).unwrap_or_default();
        assert_eq!(
            text,
            "{\n  \"permissions\": {\n    \"allow\": [\n      \"Bash(npm test)\"\n    ]\n  }\n}\n"
        );
        let _ = fs::remove_dir_all(dir);
    }

    #[test]
    fn keeps_other_keys_in_order_and_the_indentation() {
        let dir = temp_dir();
        let path = dir.join("settings.json");
        let original = "{\n    \"zeta\": 1,\n    \"permissions\": {\"deny\": [\"Read(.env)\"], \"allow\": [\"Bash(ls)\"]},\n    \"alpha\": {\"x\": [1.5, null, true]}\n}";
        let _ = fs::write(&path, original);
        let added = add_permission_rules(
            &path,
            RuleList::Allow,
            &["Bash(ls)".into(), "Bash(make)".into()],
        );
        assert_eq!(added.ok(), Some(vec!["Bash(make)".to_string()]));
        let text = fs::read_to_string(&path).unwrap_or_default();
        let zeta = text.find("zeta").unwrap_or(usize::MAX);
        let permissions = text.find("permissions").unwrap_or(0);
        let alpha = text.find("alpha").unwrap_or(0);
        assert!(zeta < permissions && permissions < alpha, "{text}");
        assert!(text.starts_with("{\n    \"zeta\""), "{text}");
        assert!(
            !text.ends_with('\n'),
            "no trailing newline was there before"
        );
        let value: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
        assert_eq!(
            value["permissions"]["allow"],
            serde_json::json!(["Bash(ls)", "Bash(make)"])
        );
        assert_eq!(
            value["permissions"]["deny"],
            serde_json::json!(["Read(.env)"])
        );
        assert_eq!(value["alpha"]["x"], serde_json::json!([1.5, null, true]));
        let _ = fs::remove_dir_all(dir);
    }

    #[test]
    fn nothing_new_leaves_the_file_untouched() {
        let dir = temp_dir();
        let path = dir.join("settings.json");
        let original = "{\"permissions\":{\"allow\":[\"Bash(ls)\"]}}";
        let _ = fs::write(&path, original);
        let added = add_permission_rules(&path, RuleList::Allow, &["Bash(ls)".into()]);
        assert_eq!(added.ok(), Some(Vec::new()));
        assert_eq!(fs::read_to_string(&path).unwrap_or_default(), original);
        let _ = fs::remove_dir_all(dir);
    }

    #[test]
    fn refuses_to_overwrite_broken_or_oddly_shaped_files() {
        let dir = temp_dir();
        let path = dir.join("settings.json");
        let _ = fs::write(&path, "{\"permissions\": ");
        let err = add_permission_rules(&path, RuleList::Allow, &["Bash(ls)".into()]);
        assert!(
            matches!(err, Err(SettingsWriteError::Parse { .. })),
            "{err:?}"
        );
        assert_eq!(
            fs::read_to_string(&path).unwrap_or_default(),
            "{\"permissions\": "
        );

        let _ = fs::write(&path, "{\"permissions\": {\"allow\": \"Bash(ls)\"}}");
        let err = add_permission_rules(&path, RuleList::Allow, &["Bash(x)".into()]);
        match err {
            Err(SettingsWriteError::WrongType { json_path, .. }) => {
                assert_eq!(json_path, "permissions.allow")
            }
            other => panic!("{other:?}"),
        }
        let _ = fs::remove_dir_all(dir);
    }
}
