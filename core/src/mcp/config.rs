//! MCP server configuration in Claude Code's format: the `mcpServers` object of a `.mcp.json`
//! file, of a settings layer or of a host's own list, parsed into [`McpServerEntry`]s that keep
//! where they came from, with `${VAR}` / `${VAR:-default}` expansion in every string.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// How robota reaches one server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum McpTransport {
    /// A child process speaking JSON-RPC on its stdin/stdout.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        #[serde(default)]
        args: Vec<String>,
        /// Variables added to the session's environment for the process.
        #[serde(default)]
        env: BTreeMap<String, String>,
        /// Its working directory (the session's cwd when absent).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cwd: Option<PathBuf>,
    },
    /// A remote server over streamable HTTP.
    Http {
        /// The endpoint.
        url: String,
        /// Headers sent with every request (`Authorization`, API keys, …).
        #[serde(default)]
        headers: BTreeMap<String, String>,
    },
    /// A remote server over the legacy HTTP+SSE transport (protocol 2024-11-05).
    Sse {
        /// The event stream's URL (messages are posted to the endpoint the server names).
        url: String,
        /// Headers sent with every request.
        #[serde(default)]
        headers: BTreeMap<String, String>,
    },
    /// A server the host defined in code, run inside the session's process (see
    /// [`InProcessMcpServer`](super::InProcessMcpServer)). Only code creates it: configuration
    /// files cannot name one.
    #[serde(rename = "sdk", skip_deserializing)]
    InProcess {
        /// The server.
        server: super::InProcessMcpServer,
    },
}

/// Where a server's definition came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum McpServerOrigin {
    /// The project's `.mcp.json`. Its servers need the user's approval once, as in Claude Code:
    /// the settings' `enabledMcpjsonServers` / `disabledMcpjsonServers` lists (or
    /// `enableAllProjectMcpServers`) say which run; the framework's assembly applies them and
    /// records an answer in the project's `.claude/settings.local.json`.
    Project {
        /// The file.
        file: PathBuf,
    },
    /// The `mcpServers` of a settings file.
    Settings {
        /// The file (none for settings given in code).
        file: Option<PathBuf>,
    },
    /// A plugin's `.mcp.json`.
    Plugin {
        /// The plugin's name.
        plugin: String,
    },
    /// The host's own list (session options, `--mcp-config`).
    Host,
}

impl McpServerOrigin {
    /// A short description for messages (`.mcp.json at /p/.mcp.json`).
    pub fn describe(&self) -> String {
        match self {
            McpServerOrigin::Project { file } => format!("{}", file.display()),
            McpServerOrigin::Settings { file: Some(file) } => format!("{}", file.display()),
            McpServerOrigin::Settings { file: None } => "settings given in code".into(),
            McpServerOrigin::Plugin { plugin } => format!("plugin `{plugin}`"),
            McpServerOrigin::Host => "the host's server list".into(),
        }
    }
}

/// One configured server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct McpServerEntry {
    /// The server's name (the `<server>` of `mcp__<server>__<tool>`).
    pub name: String,
    /// How to reach it.
    pub transport: McpTransport,
    /// Where it was defined.
    pub origin: McpServerOrigin,
    /// OAuth settings of a remote server (`"oauth": {"clientId": …, "callbackPort": …}`); a
    /// server that asks for OAuth is authorized without them too (dynamic registration).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oauth: Option<super::oauth::McpOAuthConfig>,
}

/// A problem with one server's definition; the server is left out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpConfigWarning {
    /// The server's name.
    pub server: String,
    /// Where it was defined.
    pub origin: String,
    /// What is wrong.
    pub message: String,
}

/// The longest server name: tool names (`mcp__<server>__<tool>`) must stay under the providers'
/// 64-character limit with room for the tool.
const MAX_SERVER_NAME: usize = 40;

/// True for a server name robota can use in tool names: letters, digits, `_` and `-`, no `__`.
pub fn is_valid_server_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_SERVER_NAME
        && !name.contains("__")
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// Parses an `mcpServers` object (`{"name": {"command": …}}` or `{"name": {"type": "http", "url":
/// …}}`), expanding `${VAR}` and `${VAR:-default}` from `env` in every string. A file's whole
/// content may be given: an object with an `mcpServers` key is read through it. Each bad entry is
/// a warning and is left out; the others are kept.
pub fn parse_mcp_servers(
    value: &Value,
    origin: &McpServerOrigin,
    env: &dyn Fn(&str) -> Option<String>,
) -> (Vec<McpServerEntry>, Vec<McpConfigWarning>) {
    let mut entries = Vec::new();
    let mut warnings = Vec::new();
    let servers = match value.get("mcpServers") {
        Some(inner) => inner,
        None => value,
    };
    let Some(servers) = servers.as_object() else {
        warnings.push(McpConfigWarning {
            server: String::new(),
            origin: origin.describe(),
            message: "`mcpServers` must be an object mapping server names to definitions".into(),
        });
        return (entries, warnings);
    };
    // By name, whatever order the JSON object keeps (serde_json's `preserve_order`, which a
    // dependency of the same build may turn on, keeps the file's order): the servers start and
    // are listed the same way in every build.
    let mut servers: Vec<(&String, &Value)> = servers.iter().collect();
    servers.sort_by(|a, b| a.0.cmp(b.0));
    for (name, definition) in servers {
        match parse_one(name, definition, env) {
            Ok((transport, oauth)) => entries.push(McpServerEntry {
                name: name.clone(),
                transport,
                origin: origin.clone(),
                oauth,
            }),
            Err(message) => warnings.push(McpConfigWarning {
                server: name.clone(),
                origin: origin.describe(),
                message,
            }),
        }
    }
    (entries, warnings)
}

fn parse_one(
    name: &str,
    definition: &Value,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<(McpTransport, Option<super::oauth::McpOAuthConfig>), String> {
    let transport = parse_transport(name, definition, env)?;
    let oauth = match definition.get("oauth") {
        None | Some(Value::Null) => None,
        Some(_) if matches!(transport, McpTransport::Stdio { .. }) => {
            return Err("`oauth` applies to `http` and `sse` servers only".into());
        }
        Some(value) => Some(serde_json::from_value(value.clone()).map_err(|e| {
            format!("`oauth` must be {{\"clientId\": string, \"callbackPort\": port}} ({e})")
        })?),
    };
    Ok((transport, oauth))
}

fn parse_transport(
    name: &str,
    definition: &Value,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<McpTransport, String> {
    if !is_valid_server_name(name) {
        return Err(format!(
            "`{name}` cannot be an MCP server name: use up to {MAX_SERVER_NAME} letters, digits, \
             `_` or `-` (no `__`), so its tools can be named `mcp__<server>__<tool>`"
        ));
    }
    let Some(object) = definition.as_object() else {
        return Err("a server definition must be an object".into());
    };
    let string = |key: &str| -> Result<Option<String>, String> {
        match object.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => expand(s, env).map(Some),
            Some(_) => Err(format!("`{key}` must be a string")),
        }
    };
    let map = |key: &str| -> Result<BTreeMap<String, String>, String> {
        match object.get(key) {
            None | Some(Value::Null) => Ok(BTreeMap::new()),
            Some(Value::Object(map)) => map
                .iter()
                .map(|(k, v)| match v {
                    Value::String(s) => Ok((k.clone(), expand(s, env)?)),
                    _ => Err(format!("`{key}.{k}` must be a string")),
                })
                .collect(),
            Some(_) => Err(format!("`{key}` must be an object of strings")),
        }
    };
    let kind = string("type")?;
    match kind.as_deref() {
        None | Some("stdio") => {
            let Some(command) = string("command")? else {
                return Err(
                    "missing `command` (a stdio server), or give `\"type\": \"http\"` and a `url`"
                        .into(),
                );
            };
            let args = match object.get("args") {
                None | Some(Value::Null) => Vec::new(),
                Some(Value::Array(items)) => items
                    .iter()
                    .map(|item| match item {
                        Value::String(s) => expand(s, env),
                        _ => Err("`args` must be a list of strings".to_string()),
                    })
                    .collect::<Result<_, _>>()?,
                Some(_) => return Err("`args` must be a list of strings".into()),
            };
            Ok(McpTransport::Stdio {
                command,
                args,
                env: map("env")?,
                cwd: string("cwd")?.map(PathBuf::from),
            })
        }
        Some("http") | Some("streamable-http") | Some("streamableHttp") => {
            let Some(url) = string("url")? else {
                return Err("missing `url` for an http server".into());
            };
            url::Url::parse(&url).map_err(|e| format!("`url` is not a valid URL ({e})"))?;
            Ok(McpTransport::Http {
                url,
                headers: map("headers")?,
            })
        }
        Some("sse") => {
            let Some(url) = string("url")? else {
                return Err("missing `url` for an sse server".into());
            };
            url::Url::parse(&url).map_err(|e| format!("`url` is not a valid URL ({e})"))?;
            Ok(McpTransport::Sse {
                url,
                headers: map("headers")?,
            })
        }
        Some(other) => Err(format!(
            "unknown `type` `{other}`; use `stdio`, `http` or `sse`"
        )),
    }
}

/// Expands `${VAR}` and `${VAR:-default}` as Claude Code does. An unset variable without a
/// default is an error naming it (the server is left out rather than started with a hole in its
/// command line or headers).
pub fn expand(text: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            return Err(format!("`${{` without a closing `}}` in `{text}`"));
        };
        let inner = &after[..end];
        let (name, default) = match inner.split_once(":-") {
            Some((name, default)) => (name, Some(default)),
            None => (inner, None),
        };
        match (env(name).filter(|v| !v.is_empty()), default) {
            (Some(value), _) => out.push_str(&value),
            (None, Some(default)) => out.push_str(default),
            (None, None) => {
                return Err(format!(
                    "the environment variable `{name}` is not set (referenced as `${{{name}}}`; \
                     set it or write `${{{name}:-default}}`)"
                ))
            }
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn env(name: &str) -> Option<String> {
        (name == "TOKEN").then(|| "s3cret".to_string())
    }

    #[test]
    fn expands_variables_and_defaults() {
        assert_eq!(expand("a ${TOKEN} b", &env).unwrap(), "a s3cret b");
        assert_eq!(expand("${MISSING:-x}", &env).unwrap(), "x");
        assert_eq!(expand("${TOKEN:-x}", &env).unwrap(), "s3cret");
        assert!(expand("${MISSING}", &env).unwrap_err().contains("MISSING"));
        assert!(expand("${OPEN", &env).is_err());
        assert_eq!(expand("no vars $HOME", &env).unwrap(), "no vars $HOME");
    }

    #[test]
    fn parses_stdio_and_http_and_reports_bad_entries() {
        let value = json!({"mcpServers": {
            "fs": {"command": "npx", "args": ["-y", "${TOKEN}"], "env": {"K": "${TOKEN}"}},
            "web": {"type": "http", "url": "https://x.test/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}},
            "old": {"type": "sse", "url": "https://x.test/sse"},
            "bad name": {"command": "x"},
            "nocmd": {"args": []},
            "unset": {"command": "${NOPE}"}
        }});
        let (entries, warnings) = parse_mcp_servers(&value, &McpServerOrigin::Host, &env);
        let names: Vec<&str> = entries.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["fs", "old", "web"]);
        let McpTransport::Stdio {
            args, env: vars, ..
        } = &entries[0].transport
        else {
            panic!("fs is stdio")
        };
        assert_eq!(args, &["-y", "s3cret"]);
        assert_eq!(vars["K"], "s3cret");
        let McpTransport::Sse { url, .. } = &entries[1].transport else {
            panic!("old is sse")
        };
        assert_eq!(url, "https://x.test/sse");
        let McpTransport::Http { headers, .. } = &entries[2].transport else {
            panic!("web is http")
        };
        assert_eq!(headers["Authorization"], "Bearer s3cret");
        let names: Vec<&str> = warnings.iter().map(|w| w.server.as_str()).collect();
        assert_eq!(names, ["bad name", "nocmd", "unset"]);
    }

    #[test]
    fn reads_oauth_settings_of_remote_servers_only() {
        let value = json!({
            "web": {"type": "http", "url": "https://x.test/mcp",
                    "oauth": {"clientId": "robota-app", "callbackPort": 8123}},
            "plain": {"type": "sse", "url": "https://x.test/sse"},
            "local": {"command": "x", "oauth": {"clientId": "a"}},
            "typo": {"type": "http", "url": "https://x.test/mcp", "oauth": {"callbackPort": "x"}}
        });
        let (entries, warnings) = parse_mcp_servers(&value, &McpServerOrigin::Host, &env);
        let names: Vec<&str> = entries.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["plain", "web"]);
        assert_eq!(entries[0].oauth, None);
        let oauth = entries[1].oauth.as_ref().expect("oauth settings");
        assert_eq!(oauth.client_id.as_deref(), Some("robota-app"));
        assert_eq!(oauth.callback_port, Some(8123));
        let problems: Vec<(&str, &str)> = warnings
            .iter()
            .map(|w| (w.server.as_str(), w.message.as_str()))
            .collect();
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(
            problems[0].1.contains("`http` and `sse` servers only"),
            "{problems:?}"
        );
        assert!(problems[1].1.contains("callbackPort"), "{problems:?}");
    }
}
