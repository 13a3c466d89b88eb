//! [`SessionConfig`]: a session's options as data, the one format every binding accepts; the
//! host's own extensions (tools, permission handler, hook callbacks, command modules) are added
//! to the [`SessionOptions`] it produces.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::error::ApiError;
use crate::framework::commands::custom::CommandRegistration;
use crate::framework::skills::SkillRegistration;
use crate::mcp::{parse_mcp_servers, McpServerOrigin};
use crate::permissions::PermissionMode;
use crate::provider::Provider;
use crate::session::store::FileSessionStore;
use crate::session::store_choice::StoreChoice;
use crate::session::structured_output::{OutputFormat, StructuredOutput};
use crate::session::{SessionOptions, SessionPersistence, SessionSettings};
use crate::telemetry::{Telemetry, TelemetryConfig, TraceParent};
use crate::tools::ToolRegistry;

/// Where a session is saved.
#[derive(Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum PersistenceConfig {
    /// Not saved (`"none"`, the default).
    #[default]
    None,
    /// In the project (`"project"`): `<cwd>/.robota/sessions/` and `<cwd>/.robota/logs/`.
    Project,
    /// In explicit directories (`{"store": {"sessions_dir": …, "logs_dir": …}}`).
    Store {
        /// Where snapshots go.
        sessions_dir: PathBuf,
        /// Where logs go.
        logs_dir: PathBuf,
    },
    /// In a SQLite database (`{"sqlite": {"path": …}}`, relative to `cwd`): one file for many
    /// sessions, shared by every process that opens it.
    Sqlite {
        /// The database file.
        path: PathBuf,
    },
    /// In a PostgreSQL database (`{"postgres": {"url": …}}` or `{"postgres": {"url_env":
    /// "DATABASE_URL"}}`): sessions shared by every worker that connects, kept apart by
    /// `project` (default: `cwd`).
    Postgres {
        /// The connection string (`postgres://user:password@host:port/database`).
        #[serde(default)]
        url: Option<String>,
        /// The environment variable holding the connection string, instead of `url`.
        #[serde(default)]
        url_env: Option<String>,
        /// The project key the sessions are kept under (default: `cwd`).
        #[serde(default)]
        project: Option<String>,
    },
}

/// Never prints a connection string (it may hold a password).
impl std::fmt::Debug for PersistenceConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PersistenceConfig::None => f.write_str("None"),
            PersistenceConfig::Project => f.write_str("Project"),
            PersistenceConfig::Store {
                sessions_dir,
                logs_dir,
            } => f
                .debug_struct("Store")
                .field("sessions_dir", sessions_dir)
                .field("logs_dir", logs_dir)
                .finish(),
            PersistenceConfig::Sqlite { path } => {
                f.debug_struct("Sqlite").field("path", path).finish()
            }
            PersistenceConfig::Postgres {
                url,
                url_env,
                project,
            } => f
                .debug_struct("Postgres")
                .field("url", &url.as_ref().map(|_| "<redacted>"))
                .field("url_env", url_env)
                .field("project", project)
                .finish(),
        }
    }
}

/// A session's options as data. Every field is optional; JSON field names are the snake_case
/// names below, and unknown fields are rejected so a typo is an error, not a silent default.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SessionConfig {
    /// The working directory (default: the process's current directory).
    pub cwd: Option<PathBuf>,
    /// `default`, `acceptEdits`, `plan`, `bypassPermissions`, `dontAsk` (or an alias); when
    /// absent, the settings' `permissions.defaultMode`.
    pub permission_mode: Option<PermissionMode>,
    /// Replaces the system prompt assembled from the project.
    pub system_prompt: Option<String>,
    /// Appended to the system prompt, assembled or explicit.
    pub append_system_prompt: Option<String>,
    /// Most model/tool rounds per prompt; `0` or absent: no cap.
    pub max_turns: Option<u32>,
    /// The session id (a fresh UUID when absent); must be a safe file name.
    pub session_id: Option<String>,
    /// Build the system prompt from AGENTS.md/CLAUDE.md etc. (default true).
    pub load_project_context: Option<bool>,
    /// The home directory for user settings; without it no user layer is read (unless
    /// `settings_from_environment`).
    pub home: Option<PathBuf>,
    /// Settings from code (a settings.json object), above every file.
    pub settings: Option<Value>,
    /// `true`: load settings exactly like the CLI (the real `HOME` and process environment);
    /// `home`, `settings` and `env` must then be absent.
    pub settings_from_environment: Option<bool>,
    /// Variables for `$ENV:NAME` references in settings.
    pub env: BTreeMap<String, String>,
    /// `false`: no built-in file/shell/web tools (only the host's tools and the command tools).
    pub builtin_tools: Option<bool>,
    /// Where the session is saved.
    pub persistence: PersistenceConfig,
    /// Resume this saved session (needs `persistence`).
    pub resume_session_id: Option<String>,
    /// With `resume_session_id`: continue in a copy with a new id.
    pub fork_session: Option<bool>,
    /// Refuse further prompts once the session has spent this many USD.
    pub max_budget_usd: Option<f64>,
    /// A second model of the same provider, used when the main model is overloaded (the Claude
    /// Agent SDK's `fallbackModel`).
    pub fallback_model: Option<String>,
    /// Automatic compaction (default true).
    pub auto_compact: Option<bool>,
    /// The model's context window in tokens, when the provider does not know it.
    pub context_window: Option<u64>,
    /// `true`/`false`: turn the OS sandbox for Bash on or off, above the settings'
    /// `sandbox.enabled`. Absent: the settings decide; without a setting the sandbox is on in
    /// `bypassPermissions` sessions and off in the other modes.
    pub sandbox: Option<bool>,
    /// Skills the host adds, ahead of the project's and the user's: `{"dir": "/path"}` (a skill
    /// folder or a folder of skill folders) or `{"name": "greet", "content": "---\n…"}` (what a
    /// `SKILL.md` would hold). Read by [`SessionConfig::skill_registrations`]; the session
    /// options themselves do not carry them.
    pub skills: Vec<SkillRegistration>,
    /// Custom slash commands the host adds, ahead of the project's and the user's:
    /// `{"dir": "/path"}` (a folder searched like `.claude/commands`) or
    /// `{"name": "greet", "content": "---\n…"}` (what a command file would hold). Read by
    /// [`SessionConfig::command_registrations`].
    pub commands: Vec<CommandRegistration>,
    /// Keep edit checkpoints under `<cwd>/.robota/checkpoints/` (default true): every prompt is
    /// a checkpoint that `restore_edit_checkpoint` can rewind files to. Read by
    /// [`SessionConfig::edit_checkpoints_enabled`].
    pub edit_checkpoints: Option<bool>,
    /// MCP servers the host adds, in Claude Code's `mcpServers` shape:
    /// `{"name": {"command": "npx", "args": [...], "env": {...}}}` or
    /// `{"name": {"type": "http", "url": "https://…", "headers": {...}}}`. `${VAR}` and
    /// `${VAR:-default}` expand from `env`. A server of the same name in `.mcp.json` or settings
    /// is replaced. A bad definition is an error naming the server.
    pub mcp_servers: Option<Value>,
    /// How long an MCP server may take to start, in milliseconds (default 30 000).
    pub mcp_startup_timeout_ms: Option<u64>,
    /// How long one MCP call may take, in milliseconds (default 600 000).
    pub mcp_call_timeout_ms: Option<u64>,
    /// Structured output (the Claude Agent SDK's option): `{"type": "json_schema", "schema":
    /// {...}}`. Every prompt's final answer must be one JSON value matching the schema; results
    /// and `complete` events carry it as `structured_output`. A schema that is not a valid JSON
    /// Schema is an error when the session is created.
    pub output_format: Option<Value>,
    /// Follow-ups an answer that does not match `output_format` gets before the prompt fails
    /// (default 5).
    pub max_structured_output_retries: Option<u32>,
    /// Export the session's traces and metrics over OTLP: `{"endpoint":
    /// "http://collector:4318", "protocol": "http" | "grpc", "headers": {…}, "serviceName": "…",
    /// "timeoutMs": 5000}`; `{}` takes everything from the standard `OTEL_EXPORTER_OTLP_*`
    /// variables. Absent: no telemetry (nothing is built).
    pub telemetry: Option<TelemetryConfig>,
    /// The host's W3C `traceparent`: the session's prompt spans become children of that span,
    /// in the host's trace (with `telemetry`).
    pub traceparent: Option<String>,
    /// The W3C `tracestate` that goes with `traceparent`.
    pub tracestate: Option<String>,
}

impl SessionConfig {
    /// Reads a configuration from a JSON value (`null` = all defaults).
    pub fn from_json_value(value: Value) -> Result<Self, ApiError> {
        if value.is_null() {
            return Ok(SessionConfig::default());
        }
        if !value.is_object() {
            return Err(ApiError::invalid_json(
                "session options must be a JSON object",
            ));
        }
        super::fields::from_value(value, "invalid session options")
    }

    /// Reads a configuration from JSON text (empty text = all defaults).
    pub fn from_json(text: &str) -> Result<Self, ApiError> {
        if text.trim().is_empty() {
            return Ok(SessionConfig::default());
        }
        let value: Value = serde_json::from_str(text)
            .map_err(|e| ApiError::invalid_json(format!("invalid session options: {e}")))?;
        Self::from_json_value(value)
    }

    /// The skills to give [`InteractiveSessionOptions::skills`](crate::framework::interactive::InteractiveSessionOptions::skills).
    pub fn skill_registrations(&self) -> Vec<SkillRegistration> {
        self.skills.clone()
    }

    /// The custom commands to give [`InteractiveSessionOptions::commands`](crate::framework::interactive::InteractiveSessionOptions::commands).
    pub fn command_registrations(&self) -> Vec<CommandRegistration> {
        self.commands.clone()
    }

    /// Whether to keep edit checkpoints ([`InteractiveSessionOptions::edit_checkpoints`](crate::framework::interactive::InteractiveSessionOptions::edit_checkpoints)).
    pub fn edit_checkpoints_enabled(&self) -> bool {
        self.edit_checkpoints.unwrap_or(true)
    }

    /// The engine's [`SessionOptions`] for these options and `provider`. Host extensions
    /// (`extra_tools`, `permission_handler`, `hook_callbacks`, …) are set on the result.
    pub fn into_session_options(
        self,
        provider: Arc<dyn Provider>,
    ) -> Result<SessionOptions, ApiError> {
        let cwd = match self.cwd {
            Some(cwd) => cwd,
            None => std::env::current_dir().map_err(|e| {
                ApiError::invalid_argument(format!(
                    "no `cwd` given and the current directory is unavailable: {e}"
                ))
            })?,
        };
        let mut mcp_servers = Vec::new();
        if let Some(servers) = &self.mcp_servers {
            let env = &self.env;
            let from_process = self.settings_from_environment == Some(true);
            let lookup = |name: &str| {
                env.get(name)
                    .cloned()
                    .or_else(|| from_process.then(|| std::env::var(name).ok()).flatten())
            };
            let (entries, problems) = parse_mcp_servers(servers, &McpServerOrigin::Host, &lookup);
            if let Some(problem) = problems.first() {
                let server = if problem.server.is_empty() {
                    String::new()
                } else {
                    format!(" `{}`", problem.server)
                };
                return Err(ApiError::invalid_argument(format!(
                    "invalid `mcp_servers`{server}: {}",
                    problem.message
                )));
            }
            mcp_servers = entries;
        }
        let home_dir = self.home.clone();
        let mut options = SessionOptions::new(cwd.clone(), provider);
        options.settings = if self.settings_from_environment == Some(true) {
            if self.home.is_some() || self.settings.is_some() || !self.env.is_empty() {
                return Err(ApiError::invalid_argument(
                    "`settings_from_environment` cannot be combined with `home`, `settings` or \
                     `env`; drop one of them",
                ));
            }
            SessionSettings::FromEnvironment
        } else {
            SessionSettings::Load {
                home: self.home,
                env: self.env,
                overrides: self.settings,
            }
        };
        options.permission_mode = self.permission_mode;
        options.system_prompt = self.system_prompt;
        options.append_system_prompt = self.append_system_prompt;
        if let Some(max_turns) = self.max_turns {
            options.max_turns = max_turns;
        }
        options.session_id = self.session_id;
        if let Some(load) = self.load_project_context {
            options.load_project_context = load;
        }
        if self.builtin_tools == Some(false) {
            options.tools = Some(ToolRegistry::new());
        }
        options.persistence = match self.persistence {
            PersistenceConfig::None => SessionPersistence::None,
            PersistenceConfig::Project => SessionPersistence::Project,
            PersistenceConfig::Store {
                sessions_dir,
                logs_dir,
            } => SessionPersistence::Store(Arc::new(FileSessionStore::with_dirs(
                sessions_dir,
                logs_dir,
            ))),
            PersistenceConfig::Sqlite { path } => SessionPersistence::Store(
                StoreChoice::Sqlite { path }
                    .open(&cwd, home_dir.as_deref())
                    .map_err(|error| {
                        ApiError::invalid_argument(format!("`persistence`: {error}"))
                    })?,
            ),
            PersistenceConfig::Postgres {
                url,
                url_env,
                project,
            } => SessionPersistence::Store(
                StoreChoice::Postgres {
                    url,
                    url_env,
                    project,
                }
                .open(&cwd, home_dir.as_deref())
                .map_err(|error| ApiError::invalid_argument(format!("`persistence`: {error}")))?,
            ),
        };
        if self.fork_session == Some(true) && self.resume_session_id.is_none() {
            return Err(ApiError::invalid_argument(
                "`fork_session` needs `resume_session_id` (the session to fork)",
            ));
        }
        options.resume_session_id = self.resume_session_id;
        options.fork_session = self.fork_session == Some(true);
        if let Some(max_usd) = self.max_budget_usd {
            if !max_usd.is_finite() || max_usd < 0.0 {
                return Err(ApiError::invalid_argument(format!(
                    "`max_budget_usd` must be a non-negative number, not {max_usd}"
                )));
            }
            options.max_budget_usd = Some(max_usd);
        }
        options.fallback_model = self.fallback_model;
        if let Some(auto) = self.auto_compact {
            options.auto_compact = auto;
        }
        if let Some(window) = self.context_window {
            options.engine.context_window = Some(window);
        }
        options.sandbox = self.sandbox;
        if let Some(format) = self.output_format {
            let format = output_format(format)?;
            if let Some(retries) = self.max_structured_output_retries {
                options.max_structured_output_retries = retries;
            }
            // Checked here, so a bad schema is an error of the options, not of the first prompt.
            StructuredOutput::new(&format, options.max_structured_output_retries)
                .map_err(|e| ApiError::invalid_argument(e.to_string()))?;
            options.output_format = Some(format);
        } else if let Some(retries) = self.max_structured_output_retries {
            options.max_structured_output_retries = retries;
        }
        options.mcp_servers = mcp_servers;
        if let Some(ms) = self.mcp_startup_timeout_ms.filter(|ms| *ms > 0) {
            options.mcp_options.startup_timeout = std::time::Duration::from_millis(ms);
        }
        if let Some(ms) = self.mcp_call_timeout_ms.filter(|ms| *ms > 0) {
            options.mcp_options.call_timeout = std::time::Duration::from_millis(ms);
        }
        options.trace_parent = trace_parent(self.traceparent, self.tracestate)?;
        if let Some(config) = &self.telemetry {
            options.telemetry = Some(
                Telemetry::start(config)
                    .map_err(|e| ApiError::invalid_argument(format!("`telemetry`: {e}")))?,
            );
        }
        Ok(options)
    }
}

/// An `output_format` option value (`{"type": "json_schema", "schema": {...}}`) read into an
/// [`OutputFormat`]; the bindings' per-query `output_format` goes through here too, so a
/// malformed one is the same `invalid_argument` error in every language. The schema itself is
/// checked when it is used ([`SessionError::InvalidOutputFormat`](crate::session::SessionError)).
pub fn output_format(value: Value) -> Result<OutputFormat, ApiError> {
    OutputFormat::from_json_value(value).map_err(|e| ApiError::invalid_argument(e.to_string()))
}

/// The host's trace context from `traceparent` / `tracestate` option values (checked; `None`
/// without a `traceparent`). Bindings use it for the per-prompt `traceparent` too.
pub fn trace_parent(
    traceparent: Option<String>,
    tracestate: Option<String>,
) -> Result<Option<TraceParent>, ApiError> {
    let Some(traceparent) = traceparent.filter(|t| !t.trim().is_empty()) else {
        if tracestate.is_some() {
            return Err(ApiError::invalid_argument(
                "`tracestate` needs the `traceparent` it belongs to",
            ));
        }
        return Ok(None);
    };
    let parent = TraceParent {
        traceparent,
        tracestate: tracestate.filter(|t| !t.trim().is_empty()),
    };
    parent
        .validate()
        .map_err(|e| ApiError::invalid_argument(e.to_string()))?;
    Ok(Some(parent))
}

/// Makes `traceparent` (with `tracestate`) the parent of `session`'s next prompt: the
/// per-prompt `traceparent` option of the bindings' submit/query. `None`: nothing changes.
pub fn trace_next_prompt(
    session: &crate::session::Session,
    traceparent: Option<String>,
    tracestate: Option<String>,
) -> Result<(), ApiError> {
    match trace_parent(traceparent, tracestate)? {
        Some(parent) => session
            .set_next_prompt_trace_parent(&parent)
            .map_err(|e| ApiError::invalid_argument(e.to_string())),
        None => Ok(()),
    }
}
