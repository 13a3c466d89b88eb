//! Hook configuration: the settings.json `hooks` value (event → matcher groups → handlers) parsed
//! into typed config, with diagnostics that name the file, the JSON path and the problem, and the
//! merge of several settings layers.
//!
//! Severity policy (nothing is dropped without a diagnostic):
//! - **Errors** (the handler or group is left out): wrong JSON types, a missing `command`/`url`/
//!   `prompt`, an unknown handler `type`, an invalid matcher regex, a non-positive `timeout`, a
//!   malformed `if` rule, an unknown `shell`.
//! - **Warnings** (config still used): an unknown event name (Claude Code tolerates these, and
//!   newer Claude Code versions have events robota does not fire yet; their groups are counted in
//!   [`HooksConfig::unknown_events`] but never run), unknown keys, a matcher on an event that has no matcher support (it is ignored and the
//!   hooks always run, as in Claude Code), `if` on a non-tool event (ignored), `once` outside skill
//!   frontmatter (ignored).
//!
//! Callers decide what an error means: [`ParsedHooks::into_result`] turns any error into a
//! [`HookConfigError`]; a lenient caller can keep `config` (the valid part) and show diagnostics.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::event::HookEvent;
use super::matcher::Matcher;

/// Where a hook definition came from; decides which fields are honoured (`once` only for skills).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HookOrigin {
    /// A settings.json layer (user, project, local, managed).
    #[default]
    Settings,
    /// A plugin's `hooks/hooks.json`.
    Plugin,
    /// A skill's frontmatter (active until the session ends once the skill is invoked).
    Skill,
    /// A subagent's frontmatter (active while that subagent runs).
    Subagent,
    /// Added by the host in code.
    Host,
}

/// The file and JSON path a definition came from, for diagnostics and "why did this run" UIs.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub struct HookSource {
    /// The settings (or plugin/skill) file.
    pub file: PathBuf,
    /// JSON path inside it, e.g. `hooks.PreToolUse[0].hooks[1]`.
    pub json_path: String,
    /// What kind of file it is.
    pub origin: HookOrigin,
}

impl fmt::Display for HookSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.file.display(), self.json_path)
    }
}

/// Which shell runs a command hook.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HookShell {
    /// A POSIX shell: `$ROBOTA_SHELL`, else `$SHELL` when it is POSIX-family, else bash, else sh.
    Bash,
    /// `pwsh` (or `powershell`) with `-NoProfile -Command`.
    Powershell,
}

/// A `command` handler.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommandHook {
    /// The shell command, or the program when `args` is given.
    pub command: String,
    /// Exec form: run `command` directly with these arguments, no shell. Because no shell
    /// expands them, `$CLAUDE_PROJECT_DIR`/`$ROBOTA_PROJECT_DIR` (and the `${…}` forms) in
    /// `command` and `args` are replaced with the project directory by robota.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<Vec<String>>,
    /// Run in the background: the event does not wait, the result arrives later through
    /// [`super::HookRunner::take_async_results`].
    #[serde(default, rename = "async")]
    pub run_async: bool,
    /// Background, and its exit-2 result asks the session to wake the agent.
    #[serde(default, rename = "asyncRewake")]
    pub async_rewake: bool,
    /// With `asyncRewake`: the text the agent is woken with, before the hook's reason (Claude
    /// Code's `rewakeMessage`). Without it, robota says which hook reported.
    #[serde(
        default,
        rename = "rewakeMessage",
        skip_serializing_if = "Option::is_none"
    )]
    pub rewake_message: Option<String>,
    /// With `asyncRewake`: one line for the user when the hook wakes the agent (Claude Code's
    /// `rewakeSummary`), reported as a hook message.
    #[serde(
        default,
        rename = "rewakeSummary",
        skip_serializing_if = "Option::is_none"
    )]
    pub rewake_summary: Option<String>,
    /// The shell (`bash` when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shell: Option<HookShell>,
    /// The folder of the plugin that defined the hook: its process gets it as
    /// `CLAUDE_PLUGIN_ROOT`. Set by the plugin loader, never read from a file.
    #[serde(skip)]
    pub plugin_root: Option<PathBuf>,
}

/// An `http` handler.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HttpHook {
    /// Where the event JSON is POSTed.
    pub url: String,
    /// Extra request headers; `$VAR`/`${VAR}` in values is replaced with the environment
    /// variable when `VAR` is listed in `allowed_env_vars`, else with nothing.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// Environment variables header values may use.
    #[serde(
        default,
        rename = "allowedEnvVars",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub allowed_env_vars: Vec<String>,
}

/// A `prompt` or `agent` handler.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PromptHook {
    /// The instructions; `$ARGUMENTS` is replaced with the event JSON (appended when absent).
    pub prompt: String,
    /// Model to ask; resolved by [`super::HookRunnerOptions::provider_for_model`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

/// An `mcp_tool` handler: Claude Code's hook that calls a tool of a connected MCP server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct McpToolHook {
    /// The server's name, as configured (`.mcp.json`, settings, the host's list).
    pub server: String,
    /// The tool's name on the server (without the `mcp__<server>__` prefix).
    pub tool: String,
    /// The tool's arguments. In every string, `${path}` is replaced with the field of the
    /// event JSON at that dotted path (`${tool_input.file_path}`, `${session_id}`); a missing
    /// field becomes empty text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<Map<String, Value>>,
}

/// What a handler runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum HandlerKind {
    /// A shell command (or program with `args`) reading the event JSON on stdin.
    Command(CommandHook),
    /// An HTTP endpoint receiving the event JSON as a POST body.
    Http(HttpHook),
    /// One model call judging the event.
    Prompt(PromptHook),
    /// Claude Code's agent hook; here one model call without tools (see [`super::prompt`]).
    Agent(PromptHook),
    /// A tool of a connected MCP server, called with the event's fields.
    McpTool(McpToolHook),
}

impl HandlerKind {
    /// The settings `type` name.
    pub fn type_name(&self) -> &'static str {
        match self {
            HandlerKind::Command(_) => "command",
            HandlerKind::Http(_) => "http",
            HandlerKind::Prompt(_) => "prompt",
            HandlerKind::Agent(_) => "agent",
            HandlerKind::McpTool(_) => "mcp_tool",
        }
    }
}

/// One configured handler with the fields common to every type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HookHandlerConfig {
    /// What it runs.
    #[serde(flatten)]
    pub kind: HandlerKind,
    /// `if`: one permission-rule pattern (`Bash(git *)`) the tool call must match; tool events
    /// only. Evaluated by [`super::HookConditionEvaluator`].
    #[serde(default, rename = "if", skip_serializing_if = "Option::is_none")]
    pub condition: Option<String>,
    /// Timeout in seconds; the event/handler default when absent (see [`super::default_timeout`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<f64>,
    /// Text a UI shows while the hook runs.
    #[serde(
        default,
        rename = "statusMessage",
        skip_serializing_if = "Option::is_none"
    )]
    pub status_message: Option<String>,
    /// Run at most once per runner; honoured for skill hooks only, as in Claude Code.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub once: bool,
}

impl HookHandlerConfig {
    /// A handler with no common fields set.
    pub fn new(kind: HandlerKind) -> Self {
        HookHandlerConfig {
            kind,
            condition: None,
            timeout: None,
            status_message: None,
            once: false,
        }
    }

    /// A shell command handler.
    pub fn command(command: impl Into<String>) -> Self {
        Self::new(HandlerKind::Command(CommandHook {
            command: command.into(),
            args: None,
            run_async: false,
            async_rewake: false,
            rewake_message: None,
            rewake_summary: None,
            shell: None,
            plugin_root: None,
        }))
    }

    /// Sets the timeout in seconds.
    pub fn with_timeout(mut self, seconds: f64) -> Self {
        self.timeout = Some(seconds);
        self
    }

    /// The configured timeout.
    pub fn timeout_duration(&self) -> Option<Duration> {
        self.timeout
            .filter(|t| t.is_finite() && *t > 0.0)
            .map(Duration::from_secs_f64)
    }
}

/// A handler with where it came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConfiguredHook {
    /// The handler.
    pub handler: HookHandlerConfig,
    /// Where it was defined.
    pub source: HookSource,
}

/// A matcher and the handlers that run when it matches.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MatcherGroup {
    /// Which calls or values the group applies to.
    pub matcher: Matcher,
    /// The handlers, in order.
    pub hooks: Vec<ConfiguredHook>,
    /// Where the group was defined.
    pub source: HookSource,
}

/// Typed hooks configuration: per event, matcher groups in layer order.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HooksConfig {
    events: BTreeMap<HookEvent, Vec<MatcherGroup>>,
    /// Groups under event names robota does not know, kept so tools can show them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    unknown_events: BTreeMap<String, usize>,
}

impl HooksConfig {
    /// No hooks.
    pub fn new() -> Self {
        Self::default()
    }

    /// Parses the value of a settings file's `hooks` key.
    pub fn parse(file: impl AsRef<Path>, hooks: &Value) -> ParsedHooks {
        Self::parse_with_origin(file, hooks, HookOrigin::Settings)
    }

    /// Parses a whole settings.json value, reading its `hooks` key (no hooks when absent).
    pub fn from_settings(file: impl AsRef<Path>, settings: &Value) -> ParsedHooks {
        match settings.get("hooks") {
            Some(hooks) => Self::parse(file, hooks),
            None => ParsedHooks {
                config: HooksConfig::new(),
                diagnostics: Vec::new(),
            },
        }
    }

    /// Parses a `hooks` value from a file of the given origin (skill and subagent frontmatter
    /// and plugin `hooks.json` use the same shape).
    pub fn parse_with_origin(
        file: impl AsRef<Path>,
        hooks: &Value,
        origin: HookOrigin,
    ) -> ParsedHooks {
        let mut parser = Parser {
            file: file.as_ref().to_path_buf(),
            origin,
            diagnostics: Vec::new(),
        };
        let config = parser.hooks(hooks);
        ParsedHooks {
            config,
            diagnostics: parser.diagnostics,
        }
    }

    /// Appends `other`'s groups after this config's, event by event. Layers merge, they never
    /// replace each other; identical handlers are run once at run time (see
    /// [`super::HookRunner`]).
    pub fn merge(&mut self, other: HooksConfig) {
        for (event, groups) in other.events {
            self.events.entry(event).or_default().extend(groups);
        }
        for (name, count) in other.unknown_events {
            *self.unknown_events.entry(name).or_default() += count;
        }
    }

    /// Marks every command hook as defined by the plugin in `root` (its process then gets
    /// `CLAUDE_PLUGIN_ROOT`).
    pub fn set_plugin_root(&mut self, root: &Path) {
        for groups in self.events.values_mut() {
            for group in groups {
                for hook in &mut group.hooks {
                    if let HandlerKind::Command(command) = &mut hook.handler.kind {
                        command.plugin_root = Some(root.to_path_buf());
                    }
                }
            }
        }
    }

    /// Merges layers in order (lowest precedence first, e.g. user, project, local, managed).
    pub fn merged(layers: impl IntoIterator<Item = HooksConfig>) -> Self {
        let mut merged = HooksConfig::new();
        for layer in layers {
            merged.merge(layer);
        }
        merged
    }

    /// Adds a group for `event` after the existing ones.
    pub fn add_group(&mut self, event: HookEvent, group: MatcherGroup) {
        self.events.entry(event).or_default().push(group);
    }

    /// The groups for `event`, in order.
    pub fn groups(&self, event: HookEvent) -> &[MatcherGroup] {
        self.events.get(&event).map_or(&[], Vec::as_slice)
    }

    /// Events that have at least one handler.
    pub fn events(&self) -> impl Iterator<Item = HookEvent> + '_ {
        self.events
            .iter()
            .filter(|(_, groups)| groups.iter().any(|g| !g.hooks.is_empty()))
            .map(|(event, _)| *event)
    }

    /// True when no event has a handler.
    pub fn is_empty(&self) -> bool {
        self.events().next().is_none()
    }

    /// Event names that were configured but are unknown to robota, with their group counts.
    pub fn unknown_events(&self) -> &BTreeMap<String, usize> {
        &self.unknown_events
    }
}

/// The result of parsing one file's hooks: the valid part and every diagnostic.
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedHooks {
    /// Everything that parsed; definitions with errors are left out.
    pub config: HooksConfig,
    /// Errors and warnings, in document order.
    pub diagnostics: Vec<HookDiagnostic>,
}

impl ParsedHooks {
    /// True when any diagnostic is an error.
    pub fn has_errors(&self) -> bool {
        self.diagnostics
            .iter()
            .any(|d| d.severity == Severity::Error)
    }

    /// The warnings.
    pub fn warnings(&self) -> impl Iterator<Item = &HookDiagnostic> {
        self.diagnostics
            .iter()
            .filter(|d| d.severity == Severity::Warning)
    }

    /// The config and its warnings, or an error listing every error (and warning).
    pub fn into_result(self) -> Result<(HooksConfig, Vec<HookDiagnostic>), HookConfigError> {
        if self.has_errors() {
            Err(HookConfigError {
                diagnostics: self.diagnostics,
            })
        } else {
            Ok((self.config, self.diagnostics))
        }
    }
}

/// How serious a diagnostic is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// The definition was left out.
    Error,
    /// The definition is used; something in it is ignored or unusual.
    Warning,
}

/// What is wrong, typed so hosts can react to specific problems.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, thiserror::Error)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum HookProblem {
    /// A value has the wrong JSON type.
    #[error("expected {expected}, found {found}")]
    WrongType {
        /// What was expected.
        expected: String,
        /// The JSON type found.
        found: String,
    },
    /// A required field is missing.
    #[error("missing required field `{field}`{hint}")]
    MissingField {
        /// The field.
        field: String,
        /// Extra guidance (may be empty).
        hint: String,
    },
    /// The event name is unknown; its groups never run.
    #[error("unknown hook event `{name}` (its hooks will not run); valid events: {}", valid.join(", "))]
    UnknownEvent {
        /// The name as written.
        name: String,
        /// Every valid event name.
        valid: Vec<String>,
    },
    /// The handler `type` is unknown.
    #[error("unknown hook type `{found}`; valid types: command, http, prompt, agent")]
    UnknownHandlerType {
        /// The type as written.
        found: String,
    },
    /// The handler type exists in Claude Code but robota cannot run it yet.
    #[error("hook type `{found}` is not supported by robota yet ({why}); this hook will not run")]
    UnsupportedHandlerType {
        /// The type as written.
        found: String,
        /// Why.
        why: String,
    },
    /// The matcher is not a valid regular expression.
    #[error("invalid matcher regex `{matcher}`: {message}")]
    InvalidMatcher {
        /// The matcher as written.
        matcher: String,
        /// The regex parser's message.
        message: String,
    },
    /// A value is not allowed.
    #[error("{message}")]
    InvalidValue {
        /// What is wrong and what is allowed.
        message: String,
    },
    /// A key is not part of the schema; it is ignored.
    #[error("unknown key `{key}` is ignored{hint}")]
    UnknownKey {
        /// The key.
        key: String,
        /// Known keys at this level, or other guidance.
        hint: String,
    },
    /// A field is valid but has no effect here.
    #[error("{message}")]
    Ignored {
        /// What is ignored and why.
        message: String,
    },
    /// A feature runs with a documented limitation.
    #[error("{message}")]
    Limited {
        /// The limitation.
        message: String,
    },
}

/// One problem in a hooks definition: the file, the JSON path and what is wrong.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HookDiagnostic {
    /// Error or warning.
    pub severity: Severity,
    /// The file.
    pub file: PathBuf,
    /// JSON path, e.g. `hooks.PreToolUse[0].hooks[1].timeout`.
    pub json_path: String,
    /// The problem.
    pub problem: HookProblem,
}

impl fmt::Display for HookDiagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let level = match self.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        write!(
            f,
            "{level}: {}: {}: {}",
            self.file.display(),
            self.json_path,
            self.problem
        )
    }
}

/// A hooks definition has errors.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("invalid hooks configuration:\n{}", diagnostics.iter().map(|d| format!("  {d}")).collect::<Vec<_>>().join("\n"))]
pub struct HookConfigError {
    /// Every diagnostic (errors and warnings).
    pub diagnostics: Vec<HookDiagnostic>,
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

fn key_path(base: &str, key: &str) -> String {
    let plain = !key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if plain {
        format!("{base}.{key}")
    } else {
        format!("{base}[{}]", Value::String(key.to_string()))
    }
}

const HANDLER_COMMON_KEYS: &[&str] = &["type", "if", "timeout", "statusMessage", "once"];
const COMMAND_KEYS: &[&str] = &[
    "command",
    "args",
    "async",
    "asyncRewake",
    "rewakeMessage",
    "rewakeSummary",
    "shell",
];
const HTTP_KEYS: &[&str] = &["url", "headers", "allowedEnvVars"];
const PROMPT_KEYS: &[&str] = &["prompt", "model"];
const MCP_TOOL_KEYS: &[&str] = &["server", "tool", "input"];

struct Parser {
    file: PathBuf,
    origin: HookOrigin,
    diagnostics: Vec<HookDiagnostic>,
}

impl Parser {
    fn push(&mut self, severity: Severity, path: &str, problem: HookProblem) {
        self.diagnostics.push(HookDiagnostic {
            severity,
            file: self.file.clone(),
            json_path: path.to_string(),
            problem,
        });
    }

    fn error(&mut self, path: &str, problem: HookProblem) {
        self.push(Severity::Error, path, problem);
    }

    fn warn(&mut self, path: &str, problem: HookProblem) {
        self.push(Severity::Warning, path, problem);
    }

    fn wrong_type(&mut self, path: &str, expected: &str, found: &Value) {
        self.error(
            path,
            HookProblem::WrongType {
                expected: expected.to_string(),
                found: type_name(found).to_string(),
            },
        );
    }

    fn source(&self, json_path: String) -> HookSource {
        HookSource {
            file: self.file.clone(),
            json_path,
            origin: self.origin,
        }
    }

    fn hooks(&mut self, hooks: &Value) -> HooksConfig {
        let mut config = HooksConfig::new();
        let Some(events) = hooks.as_object() else {
            self.wrong_type(
                "hooks",
                "an object mapping event names to arrays of matcher groups",
                hooks,
            );
            return config;
        };
        for (name, groups_value) in events {
            let path = key_path("hooks", name);
            let event = HookEvent::from_str(name).ok();
            let Some(groups) = groups_value.as_array() else {
                self.wrong_type(&path, "an array of matcher groups", groups_value);
                continue;
            };
            let Some(event) = event else {
                self.warn(
                    &path,
                    HookProblem::UnknownEvent {
                        name: name.clone(),
                        valid: HookEvent::ALL.iter().map(|e| e.as_str().into()).collect(),
                    },
                );
                *config.unknown_events.entry(name.clone()).or_default() += groups.len();
                continue;
            };
            for (index, group) in groups.iter().enumerate() {
                let group_path = format!("{path}[{index}]");
                if let Some(group) = self.group(event, group, group_path) {
                    config.add_group(event, group);
                }
            }
        }
        config
    }

    fn group(&mut self, event: HookEvent, value: &Value, path: String) -> Option<MatcherGroup> {
        let Some(object) = value.as_object() else {
            self.wrong_type(&path, "a matcher group object `{matcher, hooks}`", value);
            return None;
        };
        for key in object.keys() {
            if key != "matcher" && key != "hooks" {
                self.warn(
                    &key_path(&path, key),
                    HookProblem::UnknownKey {
                        key: key.clone(),
                        hint: "; a matcher group has `matcher` and `hooks`".into(),
                    },
                );
            }
        }
        let matcher = self.matcher(event, object.get("matcher"), &path)?;
        let hooks_path = format!("{path}.hooks");
        let Some(hooks_value) = object.get("hooks") else {
            self.error(
                &path,
                HookProblem::MissingField {
                    field: "hooks".into(),
                    hint: " (an array of handlers such as {\"type\": \"command\", \"command\": \"...\"})".into(),
                },
            );
            return None;
        };
        let Some(handlers) = hooks_value.as_array() else {
            self.wrong_type(&hooks_path, "an array of handlers", hooks_value);
            return None;
        };
        let mut hooks = Vec::new();
        for (index, handler) in handlers.iter().enumerate() {
            let handler_path = format!("{hooks_path}[{index}]");
            if let Some(handler) = self.handler(event, handler, &handler_path) {
                hooks.push(ConfiguredHook {
                    handler,
                    source: self.source(handler_path),
                });
            }
        }
        Some(MatcherGroup {
            matcher,
            hooks,
            source: self.source(path),
        })
    }

    fn matcher(&mut self, event: HookEvent, value: Option<&Value>, path: &str) -> Option<Matcher> {
        let matcher_path = format!("{path}.matcher");
        let text = match value {
            None | Some(Value::Null) => return Some(Matcher::all()),
            Some(Value::String(text)) => text,
            Some(other) => {
                self.wrong_type(&matcher_path, "a string", other);
                return None;
            }
        };
        if event == HookEvent::StopFailure {
            return Some(Matcher::exact_names(text));
        }
        let matcher = match Matcher::parse(text) {
            Ok(matcher) => matcher,
            Err(e) => {
                self.error(
                    &matcher_path,
                    HookProblem::InvalidMatcher {
                        matcher: e.matcher,
                        message: e.message,
                    },
                );
                return None;
            }
        };
        if !event.supports_matcher() && !matcher.is_all() {
            self.warn(
                &matcher_path,
                HookProblem::Ignored {
                    message: format!(
                        "{event} has no matcher support; the matcher `{text}` is ignored and these hooks run for every {event} event"
                    ),
                },
            );
        }
        Some(matcher)
    }

    fn handler(
        &mut self,
        event: HookEvent,
        value: &Value,
        path: &str,
    ) -> Option<HookHandlerConfig> {
        let Some(object) = value.as_object() else {
            self.wrong_type(
                path,
                "a handler object such as {\"type\": \"command\", \"command\": \"...\"}",
                value,
            );
            return None;
        };
        let type_name = match object.get("type") {
            Some(Value::String(t)) => t.as_str(),
            Some(other) => {
                self.wrong_type(&format!("{path}.type"), "a string", other);
                return None;
            }
            None => {
                self.error(
                    path,
                    HookProblem::MissingField {
                        field: "type".into(),
                        hint: " (one of command, http, prompt, agent, mcp_tool)".into(),
                    },
                );
                return None;
            }
        };
        let specific_keys: &[&str] = match type_name {
            "command" => COMMAND_KEYS,
            "http" => HTTP_KEYS,
            "prompt" | "agent" => PROMPT_KEYS,
            "mcp_tool" => MCP_TOOL_KEYS,
            other => {
                self.error(
                    &format!("{path}.type"),
                    HookProblem::UnknownHandlerType {
                        found: other.into(),
                    },
                );
                return None;
            }
        };
        for key in object.keys() {
            if !HANDLER_COMMON_KEYS.contains(&key.as_str())
                && !specific_keys.contains(&key.as_str())
            {
                let known: Vec<&str> = HANDLER_COMMON_KEYS
                    .iter()
                    .chain(specific_keys)
                    .copied()
                    .collect();
                self.warn(
                    &key_path(path, key),
                    HookProblem::UnknownKey {
                        key: key.clone(),
                        hint: format!("; `{type_name}` hooks take: {}", known.join(", ")),
                    },
                );
            }
        }

        // Check every field before giving up, so one run reports all problems of a handler.
        let errors_before = self.error_count();
        let kind = match type_name {
            "command" => self.command(object, path).map(HandlerKind::Command),
            "http" => self.http(object, path).map(HandlerKind::Http),
            "prompt" => self.prompt(object, path).map(HandlerKind::Prompt),
            "mcp_tool" => self.mcp_tool(object, path).map(HandlerKind::McpTool),
            _ => self.prompt(object, path).map(HandlerKind::Agent),
        };
        let condition = self.condition(event, object.get("if"), path);
        let timeout = self.timeout(object.get("timeout"), path);
        let status_message = self.opt_string(
            object.get("statusMessage"),
            &format!("{path}.statusMessage"),
        );
        let once = self
            .opt_bool(object.get("once"), &format!("{path}.once"))
            .unwrap_or(false);
        if once && self.origin != HookOrigin::Skill {
            self.warn(
                &format!("{path}.once"),
                HookProblem::Ignored {
                    message: "`once` is honoured only for hooks in skill frontmatter; this hook runs every time".into(),
                },
            );
        }
        if self.error_count() > errors_before {
            return None;
        }
        Some(HookHandlerConfig {
            kind: kind?,
            condition: condition.flatten(),
            timeout: timeout.flatten(),
            status_message: status_message.flatten(),
            once,
        })
    }

    fn error_count(&self) -> usize {
        self.diagnostics
            .iter()
            .filter(|d| d.severity == Severity::Error)
            .count()
    }

    fn required_string(
        &mut self,
        object: &Map<String, Value>,
        field: &str,
        path: &str,
        hint: &str,
    ) -> Option<String> {
        match object.get(field) {
            Some(Value::String(s)) if !s.trim().is_empty() => Some(s.clone()),
            Some(Value::String(_)) => {
                self.error(
                    &key_path(path, field),
                    HookProblem::InvalidValue {
                        message: format!("`{field}` must not be empty{hint}"),
                    },
                );
                None
            }
            Some(other) => {
                self.wrong_type(&key_path(path, field), "a string", other);
                None
            }
            None => {
                self.error(
                    path,
                    HookProblem::MissingField {
                        field: field.into(),
                        hint: hint.into(),
                    },
                );
                None
            }
        }
    }

    /// `None`: an error was reported; `Some(None)`: absent.
    fn opt_string(&mut self, value: Option<&Value>, path: &str) -> Option<Option<String>> {
        match value {
            None | Some(Value::Null) => Some(None),
            Some(Value::String(s)) => Some(Some(s.clone())),
            Some(other) => {
                self.wrong_type(path, "a string", other);
                None
            }
        }
    }

    fn opt_bool(&mut self, value: Option<&Value>, path: &str) -> Option<bool> {
        match value {
            None | Some(Value::Null) => Some(false),
            Some(Value::Bool(b)) => Some(*b),
            Some(other) => {
                self.wrong_type(path, "true or false", other);
                None
            }
        }
    }

    fn string_list(&mut self, value: Option<&Value>, path: &str) -> Option<Option<Vec<String>>> {
        match value {
            None | Some(Value::Null) => Some(None),
            Some(Value::Array(items)) => {
                let mut out = Vec::with_capacity(items.len());
                let mut ok = true;
                for (i, item) in items.iter().enumerate() {
                    match item {
                        Value::String(s) => out.push(s.clone()),
                        other => {
                            self.wrong_type(&format!("{path}[{i}]"), "a string", other);
                            ok = false;
                        }
                    }
                }
                ok.then_some(Some(out))
            }
            Some(other) => {
                self.wrong_type(path, "an array of strings", other);
                None
            }
        }
    }

    fn command(&mut self, object: &Map<String, Value>, path: &str) -> Option<CommandHook> {
        let command = self.required_string(
            object,
            "command",
            path,
            " (the shell command to run, e.g. \"$CLAUDE_PROJECT_DIR/.claude/hooks/check.sh\")",
        );
        let args = self.string_list(object.get("args"), &format!("{path}.args"));
        let run_async = self.opt_bool(object.get("async"), &format!("{path}.async"));
        let async_rewake = self.opt_bool(object.get("asyncRewake"), &format!("{path}.asyncRewake"));
        let rewake_message = self.opt_string(
            object.get("rewakeMessage"),
            &format!("{path}.rewakeMessage"),
        );
        let rewake_summary = self.opt_string(
            object.get("rewakeSummary"),
            &format!("{path}.rewakeSummary"),
        );
        let shell = match object.get("shell") {
            None | Some(Value::Null) => Some(None),
            Some(Value::String(s)) if s == "bash" => Some(Some(HookShell::Bash)),
            Some(Value::String(s)) if s == "powershell" => Some(Some(HookShell::Powershell)),
            Some(Value::String(s)) => {
                self.error(
                    &format!("{path}.shell"),
                    HookProblem::InvalidValue {
                        message: format!("unknown shell `{s}`; use \"bash\" or \"powershell\""),
                    },
                );
                None
            }
            Some(other) => {
                self.wrong_type(
                    &format!("{path}.shell"),
                    "\"bash\" or \"powershell\"",
                    other,
                );
                None
            }
        };
        Some(CommandHook {
            command: command?,
            args: args?,
            run_async: run_async?,
            async_rewake: async_rewake?,
            rewake_message: rewake_message?,
            rewake_summary: rewake_summary?,
            shell: shell?,
            plugin_root: None,
        })
    }

    fn mcp_tool(&mut self, object: &Map<String, Value>, path: &str) -> Option<McpToolHook> {
        let server = self.required_string(
            object,
            "server",
            path,
            " (the name of a configured MCP server)",
        );
        let tool = self.required_string(
            object,
            "tool",
            path,
            " (the tool's name on the server, without the mcp__ prefix)",
        );
        let input = match object.get("input") {
            None | Some(Value::Null) => Some(None),
            Some(Value::Object(map)) => Some(Some(map.clone())),
            Some(other) => {
                self.wrong_type(
                    &format!("{path}.input"),
                    "an object of tool arguments",
                    other,
                );
                None
            }
        };
        Some(McpToolHook {
            server: server?,
            tool: tool?,
            input: input?,
        })
    }

    fn http(&mut self, object: &Map<String, Value>, path: &str) -> Option<HttpHook> {
        let url = self.required_string(
            object,
            "url",
            path,
            " (the endpoint to POST the event JSON to)",
        );
        let url = url.and_then(|url| match reqwest::Url::parse(&url) {
            Ok(parsed) if matches!(parsed.scheme(), "http" | "https") => Some(url),
            Ok(parsed) => {
                self.error(
                    &format!("{path}.url"),
                    HookProblem::InvalidValue {
                        message: format!(
                            "`{url}` uses scheme `{}`; http hooks need an http:// or https:// URL",
                            parsed.scheme()
                        ),
                    },
                );
                None
            }
            Err(e) => {
                self.error(
                    &format!("{path}.url"),
                    HookProblem::InvalidValue {
                        message: format!("`{url}` is not a valid URL: {e}"),
                    },
                );
                None
            }
        });
        let headers_path = format!("{path}.headers");
        let headers = match object.get("headers") {
            None | Some(Value::Null) => Some(BTreeMap::new()),
            Some(Value::Object(map)) => {
                let mut headers = BTreeMap::new();
                let mut ok = true;
                for (name, value) in map {
                    let header_path = key_path(&headers_path, name);
                    if reqwest::header::HeaderName::from_bytes(name.as_bytes()).is_err() {
                        self.error(
                            &header_path,
                            HookProblem::InvalidValue {
                                message: format!("`{name}` is not a valid HTTP header name"),
                            },
                        );
                        ok = false;
                        continue;
                    }
                    match value {
                        Value::String(v) => {
                            headers.insert(name.clone(), v.clone());
                        }
                        other => {
                            self.wrong_type(&header_path, "a string", other);
                            ok = false;
                        }
                    }
                }
                ok.then_some(headers)
            }
            Some(other) => {
                self.wrong_type(&headers_path, "an object of header names to strings", other);
                None
            }
        };
        let allowed = self.string_list(
            object.get("allowedEnvVars"),
            &format!("{path}.allowedEnvVars"),
        );
        Some(HttpHook {
            url: url?,
            headers: headers?,
            allowed_env_vars: allowed?.unwrap_or_default(),
        })
    }

    fn prompt(&mut self, object: &Map<String, Value>, path: &str) -> Option<PromptHook> {
        let prompt = self.required_string(
            object,
            "prompt",
            path,
            " (instructions for the model; $ARGUMENTS is replaced with the event JSON)",
        );
        let model = self.opt_string(object.get("model"), &format!("{path}.model"));
        Some(PromptHook {
            prompt: prompt?,
            model: model?,
        })
    }

    fn condition(
        &mut self,
        event: HookEvent,
        value: Option<&Value>,
        path: &str,
    ) -> Option<Option<String>> {
        let if_path = format!("{path}.if");
        let rule = self.opt_string(value, &if_path)?;
        let Some(rule) = rule else {
            return Some(None);
        };
        if !is_rule_shaped(&rule) {
            self.error(
                &if_path,
                HookProblem::InvalidValue {
                    message: format!(
                        "`{rule}` is not a permission rule; write `Tool` or `Tool(specifier)`, e.g. `Bash(git *)` or `Edit(*.ts)`"
                    ),
                },
            );
            return None;
        }
        if !event.is_tool_event() {
            self.warn(
                &if_path,
                HookProblem::Ignored {
                    message: format!(
                        "`if` is evaluated only on tool events; on {event} it is ignored and the hook always runs"
                    ),
                },
            );
            return Some(None);
        }
        Some(Some(rule))
    }

    fn timeout(&mut self, value: Option<&Value>, path: &str) -> Option<Option<f64>> {
        let timeout_path = format!("{path}.timeout");
        match value {
            None | Some(Value::Null) => Some(None),
            Some(Value::Number(n)) => match n.as_f64() {
                Some(t) if t.is_finite() && t > 0.0 && t <= 86_400.0 => Some(Some(t)),
                _ => {
                    self.error(
                        &timeout_path,
                        HookProblem::InvalidValue {
                            message: format!(
                                "timeout must be a positive number of seconds (at most 86400), got {n}"
                            ),
                        },
                    );
                    None
                }
            },
            Some(other) => {
                self.wrong_type(&timeout_path, "a number of seconds", other);
                None
            }
        }
    }
}

/// `Tool` or `Tool(specifier)` with a tool name of letters, digits, `_`, `-`, `*`, `.`.
fn is_rule_shaped(rule: &str) -> bool {
    let rule = rule.trim();
    let (name, rest) = match rule.find('(') {
        Some(open) => (&rule[..open], Some(&rule[open..])),
        None => (rule, None),
    };
    let name_ok = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '*' | '.'));
    let rest_ok = rest.is_none_or(|r| r.len() >= 2 && r.ends_with(')'));
    name_ok && rest_ok
}

/// Splits an `if` rule into its tool name and specifier.
pub(crate) fn split_rule(rule: &str) -> (&str, Option<&str>) {
    let rule = rule.trim();
    match rule.find('(') {
        Some(open) if rule.ends_with(')') => (&rule[..open], Some(&rule[open + 1..rule.len() - 1])),
        _ => (rule, None),
    }
}
