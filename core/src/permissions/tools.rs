//! What the permission engine knows about tools: which family a tool name belongs to, which input
//! field is its "primary" one (the one a rule specifier matches), and which scalar parameters
//! `Tool(param:value)` rules may name. Input field names are Claude Code's, with the TypeScript
//! Robota camelCase spellings accepted as aliases.

use serde_json::Value;

/// How a tool is treated by the rules and modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Family {
    /// `Bash`: rules match the command, split into its parts.
    Bash,
    /// File-reading tools (`Read`, `Glob`, `Grep`, `LS`, `NotebookRead`): `Read(path)` rules.
    Read,
    /// File-editing tools (`Edit`, `Write`, `MultiEdit`, `NotebookEdit`): `Edit(path)` rules.
    Edit,
    /// `WebFetch`: `domain:` rules.
    WebFetch,
    /// `WebSearch`: rules match the query.
    WebSearch,
    /// `Agent` (formerly `Task`): rules name the subagent type.
    Agent,
    /// `Skill`: rules name the skill (`Skill(name)`, `Skill(plugin:name)`).
    Skill,
    /// Session-internal tools that never need approval (todo list, asking the user, …).
    Internal,
    /// Everything else: MCP tools, host tools, projected commands.
    Other,
}

pub(crate) const READ_TOOLS: &[&str] = &["Read", "Glob", "Grep", "LS", "NotebookRead"];
pub(crate) const EDIT_TOOLS: &[&str] = &["Edit", "Write", "MultiEdit", "NotebookEdit"];
const INTERNAL_TOOLS: &[&str] = &[
    "TodoWrite",
    "TodoRead",
    "AskUserQuestion",
    "ExitPlanMode",
    "BashOutput",
    "TaskOutput",
    "KillShell",
    "KillBash",
];

/// Every tool name the engine knows by behaviour (used to catch `bash(…)`-style case slips).
pub(crate) fn known_tool_names() -> impl Iterator<Item = &'static str> {
    ["Bash", "WebFetch", "WebSearch", "Agent", "Task", "Skill"]
        .into_iter()
        .chain(READ_TOOLS.iter().copied())
        .chain(EDIT_TOOLS.iter().copied())
        .chain(INTERNAL_TOOLS.iter().copied())
}

/// The tool a call is judged as: `BackgroundProcess` with a `command` (it starts that command in
/// the shell) is judged as `Bash`; without one (list, read, stop its own tasks) as the
/// session-internal `BashOutput`; every other call as itself.
pub(crate) fn as_judged<'a>(tool: &'a str, input: &Value) -> &'a str {
    if tool != "BackgroundProcess" {
        return tool;
    }
    let starts = input
        .get("command")
        .and_then(Value::as_str)
        .is_some_and(|c| !c.trim().is_empty());
    if starts {
        "Bash"
    } else {
        "BashOutput"
    }
}

pub(crate) fn family(tool: &str) -> Family {
    match tool {
        "Bash" => Family::Bash,
        "WebFetch" => Family::WebFetch,
        "WebSearch" => Family::WebSearch,
        "Agent" | "Task" => Family::Agent,
        "Skill" => Family::Skill,
        t if READ_TOOLS.contains(&t) => Family::Read,
        t if EDIT_TOOLS.contains(&t) => Family::Edit,
        t if INTERNAL_TOOLS.contains(&t) => Family::Internal,
        _ => Family::Other,
    }
}

/// The input field a rule specifier matches, by canonical name (for error messages).
pub(crate) fn primary_field(tool: &str) -> Option<&'static str> {
    Some(match tool {
        "Bash" => "command",
        "Read" | "Edit" | "Write" | "MultiEdit" => "file_path",
        "NotebookEdit" | "NotebookRead" => "notebook_path",
        "Glob" | "Grep" | "LS" => "path",
        "WebFetch" => "url",
        "WebSearch" => "query",
        "Agent" | "Task" => "subagent_type",
        "Skill" => "skill",
        _ => return None,
    })
}

/// Scalar parameters a `Tool(param:value)` rule may name for a built-in tool. For tools not listed
/// here (MCP, host tools) any identifier is accepted, since their schemas are not known.
pub(crate) fn known_params(tool: &str) -> Option<&'static [&'static str]> {
    Some(match tool {
        "Bash" => &[
            "run_in_background",
            "timeout",
            "description",
            "dangerouslyDisableSandbox",
        ],
        "Read" => &["offset", "limit", "pages"],
        "Write" => &["content"],
        "Edit" => &["old_string", "new_string", "replace_all"],
        "MultiEdit" => &[],
        "NotebookEdit" => &["cell_id", "new_source", "cell_type", "edit_mode"],
        "NotebookRead" => &["cell_id"],
        "Glob" => &["pattern"],
        "Grep" => &[
            "pattern",
            "glob",
            "type",
            "output_mode",
            "-i",
            "-n",
            "-A",
            "-B",
            "-C",
            "head_limit",
            "multiline",
        ],
        "LS" => &["ignore"],
        "WebFetch" => &["prompt"],
        "WebSearch" => &[],
        "Skill" => &["args"],
        "Agent" | "Task" => &[
            "model",
            "description",
            "prompt",
            "run_in_background",
            "name",
        ],
        _ => return None,
    })
}

/// `snake_case` → `camelCase`, for matching TypeScript Robota spellings of input fields.
pub(crate) fn camel(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut upper = false;
    for c in name.chars() {
        if c == '_' {
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

/// The first string value among `names` (each also tried in camelCase).
pub(crate) fn string_field<'a>(input: &'a Value, names: &[&str]) -> Option<&'a str> {
    names.iter().find_map(|n| {
        input
            .get(*n)
            .or_else(|| input.get(camel(n).as_str()))
            .and_then(Value::as_str)
    })
}

/// A scalar input parameter rendered as text (`true`, `42`, `opus`), for `param:value` rules.
/// Objects and arrays are not scalars and never match.
pub(crate) fn scalar_param(input: &Value, name: &str) -> Option<String> {
    let value = input
        .get(name)
        .or_else(|| input.get(camel(name).as_str()))?;
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// The path a file tool works on: `file_path` (Read/Write/Edit), `notebook_path`, or `path`
/// (Glob/Grep/LS, and an alias the built-in Read/Edit accept).
pub(crate) fn file_path(input: &Value) -> Option<&str> {
    string_field(input, &["file_path", "notebook_path", "path"])
}

/// The skill a Skill call runs.
pub(crate) fn skill_name(input: &Value) -> Option<&str> {
    string_field(input, &["skill", "command", "name"])
}

/// The subagent an Agent/Task call starts.
pub(crate) fn agent_name(input: &Value) -> Option<&str> {
    string_field(input, &["subagent_type", "agent_type", "agent"])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn families() {
        assert_eq!(family("Bash"), Family::Bash);
        assert_eq!(family("Grep"), Family::Read);
        assert_eq!(family("NotebookEdit"), Family::Edit);
        assert_eq!(family("Task"), Family::Agent);
        assert_eq!(family("READ"), Family::Other);
        assert_eq!(family("mcp__x__y"), Family::Other);
    }

    #[test]
    fn fields_and_aliases() {
        assert_eq!(file_path(&json!({"filePath": "a"})), Some("a"));
        assert_eq!(
            file_path(&json!({"file_path": "b", "filePath": "a"})),
            Some("b")
        );
        assert_eq!(file_path(&json!({"notebook_path": "n"})), Some("n"));
        assert_eq!(
            agent_name(&json!({"subagentType": "Explore"})),
            Some("Explore")
        );
        assert_eq!(
            scalar_param(&json!({"runInBackground": true}), "run_in_background").as_deref(),
            Some("true")
        );
        assert_eq!(scalar_param(&json!({"x": [1]}), "x"), None);
        assert_eq!(camel("run_in_background"), "runInBackground");
    }
}
