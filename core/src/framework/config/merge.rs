//! Deep merge of settings layers into one JSON value (Claude Code semantics): objects merge key by
//! key, permission lists, per-event hook arrays and the `sandbox` lists concatenate, everything
//! else is replaced by the later layer.

use serde_json::{Map, Value};

use super::json_path::{JsonPath, Segment};
use super::SettingsLayer;

/// Merges `layers` in order (later wins) into one object.
pub(crate) fn merge_layers(layers: &[SettingsLayer]) -> Value {
    let mut merged = Value::Object(Map::new());
    for layer in layers {
        merge_into(&mut merged, &layer.value, &JsonPath::root());
    }
    merged
}

fn merge_into(target: &mut Value, incoming: &Value, path: &JsonPath) {
    if let (Value::Object(target_map), Value::Object(incoming_map)) = (&mut *target, incoming) {
        for (key, value) in incoming_map {
            let child = path.key(key);
            match target_map.get_mut(key) {
                Some(existing) => merge_into(existing, value, &child),
                None => {
                    target_map.insert(key.clone(), value.clone());
                }
            }
        }
        return;
    }
    if let (Value::Array(target_items), Value::Array(incoming_items)) = (&mut *target, incoming) {
        if concatenates(path) {
            for item in incoming_items {
                if !target_items.contains(item) {
                    target_items.push(item.clone());
                }
            }
            return;
        }
    }
    *target = incoming.clone();
}

/// Arrays that accumulate across layers instead of being replaced: the permission lists (so a
/// deny in any file survives) and each hook event's matcher groups (so no layer's hooks vanish).
fn concatenates(path: &JsonPath) -> bool {
    match path.segments() {
        [Segment::Key(section), Segment::Key(list)] if section == "permissions" => matches!(
            list.as_str(),
            "allow" | "ask" | "deny" | "additionalDirectories"
        ),
        [Segment::Key(section), Segment::Key(_event)] if section == "hooks" => true,
        // The sandbox lists accumulate too, so a deny or an exclusion in any file survives.
        [Segment::Key(section), Segment::Key(list)] if section == "sandbox" => {
            list == "excludedCommands"
        }
        [Segment::Key(section), Segment::Key(group), Segment::Key(list)]
            if section == "sandbox" =>
        {
            matches!(
                (group.as_str(), list.as_str()),
                ("network", "allowedDomains" | "allowUnixSockets")
                    | (
                        "filesystem",
                        "allowWrite" | "denyWrite" | "denyRead" | "allowRead"
                    )
            )
        }
        _ => false,
    }
}
