//! Anthropic server tools — tools the API runs itself (web search, web fetch, code execution):
//! their definitions as a profile declares them, the `tools` entries and `anthropic-beta` flags
//! a request needs for them, and how their result blocks are read; and what every provider with
//! hosted web tools shares (the local `WebSearch` tool they replace).
//!
//! The wire formats are documented by Anthropic under "Agents and tools → Tool use": the web
//! search tool (`web_search_20250305`, generally available: `max_uses`, `allowed_domains`,
//! `blocked_domains`, `user_location`), the web fetch tool (`web_fetch_20250910`, behind the beta
//! flag `web-fetch-2025-09-10`: `max_uses`, `allowed_domains`, `blocked_domains`, `citations`,
//! `max_content_tokens`) and the code execution tool (`code_execution_20250825`, behind
//! `code-execution-2025-08-25`, no options). A newer tool version is pinned with `type`.

use serde_json::{json, Map, Value};

/// The server tools robota knows how to declare.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ServerToolKind {
    /// `web_search`: the API searches the web and the answer cites the results.
    WebSearch,
    /// `web_fetch`: the API fetches a page or PDF named in the conversation.
    WebFetch,
    /// `code_execution`: the API runs Bash and edits files in a sandbox container.
    CodeExecution,
}

impl ServerToolKind {
    /// The tool's `name` on the wire (and in a profile).
    pub fn name(self) -> &'static str {
        match self {
            ServerToolKind::WebSearch => "web_search",
            ServerToolKind::WebFetch => "web_fetch",
            ServerToolKind::CodeExecution => "code_execution",
        }
    }

    /// The tool version declared unless a profile pins another `type`.
    pub fn default_type(self) -> &'static str {
        match self {
            ServerToolKind::WebSearch => "web_search_20250305",
            ServerToolKind::WebFetch => "web_fetch_20250910",
            ServerToolKind::CodeExecution => "code_execution_20250825",
        }
    }

    /// The `anthropic-beta` flag the default version needs (web search needs none).
    pub fn beta(self) -> Option<&'static str> {
        match self {
            ServerToolKind::WebSearch => None,
            ServerToolKind::WebFetch => Some("web-fetch-2025-09-10"),
            ServerToolKind::CodeExecution => Some("code-execution-2025-08-25"),
        }
    }

    /// Reads a tool name (`web_search`, …) or a versioned type (`web_search_20250305`).
    fn from_name(name: &str) -> Option<Self> {
        [
            ServerToolKind::WebSearch,
            ServerToolKind::WebFetch,
            ServerToolKind::CodeExecution,
        ]
        .into_iter()
        .find(|kind| {
            name == kind.name()
                || name
                    .strip_prefix(kind.name())
                    .and_then(|rest| rest.strip_prefix('_'))
                    .is_some_and(|date| {
                        !date.is_empty() && date.bytes().all(|b| b.is_ascii_digit())
                    })
        })
    }

    /// The options the tool takes: (profile key, wire key, what the value must be).
    fn options(self) -> &'static [(&'static str, &'static str, OptionShape)] {
        const DOMAINS: [(&str, &str, OptionShape); 3] = [
            ("maxUses", "max_uses", OptionShape::PositiveInteger),
            ("allowedDomains", "allowed_domains", OptionShape::Strings),
            ("blockedDomains", "blocked_domains", OptionShape::Strings),
        ];
        match self {
            ServerToolKind::WebSearch => &[
                DOMAINS[0],
                DOMAINS[1],
                DOMAINS[2],
                ("userLocation", "user_location", OptionShape::UserLocation),
            ],
            ServerToolKind::WebFetch => &[
                DOMAINS[0],
                DOMAINS[1],
                DOMAINS[2],
                ("citations", "citations", OptionShape::Citations),
                (
                    "maxContentTokens",
                    "max_content_tokens",
                    OptionShape::PositiveInteger,
                ),
            ],
            ServerToolKind::CodeExecution => &[],
        }
    }
}

#[derive(Debug, Clone, Copy)]
enum OptionShape {
    PositiveInteger,
    Strings,
    /// `{"type": "approximate", "city"?, "region"?, "country"?, "timezone"?}`.
    UserLocation,
    /// `{"enabled": bool}`.
    Citations,
}

/// One server tool a request declares.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerTool {
    /// Which tool.
    pub kind: ServerToolKind,
    /// The versioned `type` sent (the kind's [`default_type`](ServerToolKind::default_type)
    /// unless pinned).
    pub tool_type: String,
    /// The tool's options in wire form (`max_uses`, `allowed_domains`, …), checked when read.
    pub options: Map<String, Value>,
}

impl ServerTool {
    /// The tool at its default version, with no options.
    pub fn new(kind: ServerToolKind) -> Self {
        ServerTool {
            kind,
            tool_type: kind.default_type().to_string(),
            options: Map::new(),
        }
    }

    /// Reads one entry of a profile's `options.serverTools`: a name (`"web_search"`) or an
    /// object with `name` (or a versioned `type`) and the tool's options in camelCase or wire
    /// form (`{"name": "web_search", "maxUses": 3, "allowedDomains": ["docs.rs"]}`). The error
    /// says what is wrong with the entry.
    pub fn from_setting(entry: &Value) -> Result<Self, String> {
        let known = "known: web_search, web_fetch, code_execution";
        match entry {
            Value::String(name) => ServerToolKind::from_name(name)
                .map(|kind| ServerTool {
                    tool_type: if name.as_str() == kind.name() {
                        kind.default_type().to_string()
                    } else {
                        name.clone()
                    },
                    ..ServerTool::new(kind)
                })
                .ok_or_else(|| format!("unknown server tool \"{name}\" ({known})")),
            Value::Object(map) => {
                let name = map.get("name").and_then(Value::as_str);
                let tool_type = map.get("type").and_then(Value::as_str);
                let kind = name
                    .or(tool_type)
                    .and_then(ServerToolKind::from_name)
                    .ok_or_else(|| {
                        format!(
                            "server tool {entry} needs a known \"name\" or versioned \"type\" \
                             ({known})"
                        )
                    })?;
                if let Some(tool_type) = tool_type {
                    if ServerToolKind::from_name(tool_type) != Some(kind) {
                        return Err(format!(
                            "server tool \"{}\": \"type\" {tool_type:?} is not a version of it \
                             (e.g. \"{}\")",
                            kind.name(),
                            kind.default_type()
                        ));
                    }
                }
                let mut tool = ServerTool::new(kind);
                if let Some(tool_type) = tool_type.filter(|t| *t != kind.name()) {
                    tool.tool_type = tool_type.to_string();
                }
                for (key, value) in map {
                    if key == "name" || key == "type" {
                        continue;
                    }
                    let Some((_, wire, shape)) = kind
                        .options()
                        .iter()
                        .find(|(camel, wire, _)| key == camel || key == wire)
                    else {
                        let allowed: Vec<&str> = kind.options().iter().map(|o| o.0).collect();
                        return Err(format!(
                            "server tool \"{}\" has no option \"{key}\" (options: {})",
                            kind.name(),
                            if allowed.is_empty() {
                                "none".to_string()
                            } else {
                                allowed.join(", ")
                            }
                        ));
                    };
                    check_option(*shape, value).map_err(|why| {
                        format!("server tool \"{}\": \"{key}\" {why}", kind.name())
                    })?;
                    tool.options.insert((*wire).to_string(), value.clone());
                }
                if tool.options.contains_key("allowed_domains")
                    && tool.options.contains_key("blocked_domains")
                {
                    return Err(format!(
                        "server tool \"{}\": allowedDomains and blockedDomains cannot be used \
                         together (the API rejects the request); keep one",
                        kind.name()
                    ));
                }
                Ok(tool)
            }
            other => Err(format!(
                "server tool entry {other} must be a name (\"web_search\") or an object with \
                 \"name\" and options"
            )),
        }
    }

    /// Reads a profile's whole `options.serverTools` list; a tool named twice is an error.
    pub fn list_from_setting(value: &Value) -> Result<Vec<Self>, String> {
        let entries = value.as_array().ok_or_else(|| {
            "`options.serverTools` must be a list, e.g. [\"web_search\", \"web_fetch\"]".to_string()
        })?;
        let mut tools: Vec<ServerTool> = Vec::with_capacity(entries.len());
        for entry in entries {
            let tool = Self::from_setting(entry)?;
            if tools.iter().any(|t| t.kind == tool.kind) {
                return Err(format!(
                    "server tool \"{}\" is listed twice; keep one entry",
                    tool.kind.name()
                ));
            }
            tools.push(tool);
        }
        Ok(tools)
    }

    /// The `tools` entry of a request: `{"type", "name", …options}`.
    pub fn definition(&self) -> Value {
        let mut map = Map::new();
        map.insert("type".into(), json!(self.tool_type));
        map.insert("name".into(), json!(self.kind.name()));
        map.extend(self.options.clone());
        Value::Object(map)
    }

    /// The `anthropic-beta` flag this tool needs: the default version's, or for a pinned
    /// version of a beta tool, the flag named after its date (`web_fetch_20250910` →
    /// `web-fetch-2025-09-10`), as Anthropic names them.
    pub fn beta(&self) -> Option<String> {
        let default = self.kind.beta()?;
        if self.tool_type == self.kind.default_type() {
            return Some(default.to_string());
        }
        let date = self.tool_type.rsplit('_').next().filter(|d| d.len() == 8)?;
        Some(format!(
            "{}-{}-{}-{}",
            self.kind.name().replace('_', "-"),
            &date[..4],
            &date[4..6],
            &date[6..]
        ))
    }
}

fn check_option(shape: OptionShape, value: &Value) -> Result<(), &'static str> {
    let ok = match shape {
        OptionShape::PositiveInteger => value.as_u64().is_some_and(|n| n > 0),
        OptionShape::Strings => value
            .as_array()
            .is_some_and(|items| items.iter().all(|item| item.as_str().is_some())),
        OptionShape::UserLocation => value.as_object().is_some_and(|location| {
            location.get("type").and_then(Value::as_str) == Some("approximate")
                && location.iter().all(|(key, value)| {
                    matches!(
                        key.as_str(),
                        "type" | "city" | "region" | "country" | "timezone"
                    ) && value.is_string()
                })
        }),
        OptionShape::Citations => value
            .as_object()
            .is_some_and(|c| c.len() == 1 && c.get("enabled").is_some_and(Value::is_boolean)),
    };
    if ok {
        return Ok(());
    }
    Err(match shape {
        OptionShape::PositiveInteger => "must be a positive integer",
        OptionShape::Strings => "must be a list of domain names",
        OptionShape::UserLocation => {
            "must be {\"type\": \"approximate\", \"city\"?, \"region\"?, \"country\"?, \
             \"timezone\"?} with string values"
        }
        OptionShape::Citations => "must be {\"enabled\": true} or {\"enabled\": false}",
    })
}

/// Whether a server tool's result block reports an error: its `content` is an error object
/// (`web_search_tool_result_error`, `web_fetch_tool_error`, `…_code_execution_tool_result_error`,
/// each with an `error_code`) rather than results.
pub(crate) fn result_is_error(block: &Value) -> bool {
    block
        .get("content")
        .and_then(|content| content.get("type"))
        .and_then(Value::as_str)
        .is_some_and(|kind| kind.ends_with("_error"))
}

/// The local search tool a hosted web search replaces.
const LOCAL_WEB_SEARCH: &str = "WebSearch";

/// Removes the local `WebSearch` function tool from a request's `tools` (entries named by a
/// top-level `name`, as Anthropic and the Responses API write them) when the provider's own web
/// search is declared: two search tools would only make the model pick at random. It stays when
/// the conversation already holds a `WebSearch` call, whose history must keep its tool.
pub(crate) fn drop_local_web_search(tools: &mut Vec<Value>, request: &super::ProviderRequest) {
    let local_search_used = request.messages.iter().any(|message| {
        message
            .tool_uses()
            .any(|(_, name, _)| name == LOCAL_WEB_SEARCH)
    });
    if !local_search_used {
        tools.retain(|tool| tool.get("name").and_then(Value::as_str) != Some(LOCAL_WEB_SEARCH));
    }
}

/// Whether a stored server block is a Responses API hosted-tool item (`web_search_call`,
/// `web_extractor_call`, …) rather than an Anthropic content block: a history that moves from
/// one provider to the other must not send it to Anthropic, which would reject the type.
pub(crate) fn is_foreign_server_block(block: &Value) -> bool {
    block
        .get("type")
        .and_then(Value::as_str)
        .is_some_and(|kind| kind.ends_with("_call"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_versions_are_read() {
        let tool = ServerTool::from_setting(&json!("web_search")).expect("name");
        assert_eq!(
            tool.definition(),
            json!({"type": "web_search_20250305", "name": "web_search"})
        );
        assert_eq!(tool.beta(), None);
        let pinned = ServerTool::from_setting(&json!("web_fetch_20260101")).expect("type");
        assert_eq!(pinned.tool_type, "web_fetch_20260101");
        assert_eq!(pinned.beta().as_deref(), Some("web-fetch-2026-01-01"));
        assert!(ServerTool::from_setting(&json!("web_searchy")).is_err());
    }

    #[test]
    fn result_errors_are_recognised() {
        assert!(result_is_error(&json!({"type": "web_search_tool_result",
            "content": {"type": "web_search_tool_result_error", "error_code": "max_uses_exceeded"}})));
        assert!(!result_is_error(
            &json!({"type": "web_search_tool_result", "content": []})
        ));
    }
}
