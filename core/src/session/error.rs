//! Why a session could not be created, or could not take a prompt.
//!
//! Configuration errors name the settings file, the JSON path of the offending value and the
//! problem, so the user can go straight to the fix ([`SessionError::file`],
//! [`SessionError::json_path`] give them to hosts that want to point at it).

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::lock::{held_message, LockHolder};
use crate::hooks::{HookConfigError, HookEvent, Severity};

/// A permission rule in a settings file that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuleError {
    /// The settings file (`None` for rules passed in code).
    pub file: Option<PathBuf>,
    /// Where the rule is, e.g. `permissions.allow[2]`.
    pub json_path: String,
    /// The rule as written.
    pub rule: String,
    /// What is wrong and how to fix it.
    pub problem: String,
}

impl fmt::Display for RuleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let file = self.file.as_ref().map_or_else(
            || "settings overrides".to_string(),
            |f| f.display().to_string(),
        );
        write!(
            f,
            "{file}: `{}`: invalid permission rule `{}`: {}",
            self.json_path, self.rule, self.problem
        )
    }
}

/// A settings file that could not be read or has an invalid value, as the framework's settings
/// loader reported it: its message, the file and JSON path when known, and the loader's own error
/// (`robota::framework::config::SettingsError`, reachable with [`SettingsProblem::error`] and
/// a downcast).
#[derive(Debug, Clone)]
pub struct SettingsProblem {
    /// The settings file, when known.
    pub file: Option<PathBuf>,
    /// The JSON path of the offending value, when known.
    pub json_path: Option<String>,
    error: Arc<dyn std::error::Error + Send + Sync>,
}

impl SettingsProblem {
    /// A problem with no file or JSON path, from its message.
    pub fn new(message: impl Into<String>) -> Self {
        SettingsProblem::from_error(message.into(), None, None)
    }

    /// A problem reported by `error`, about `file` at `json_path`.
    pub fn from_error(
        error: impl Into<Box<dyn std::error::Error + Send + Sync>>,
        file: Option<PathBuf>,
        json_path: Option<String>,
    ) -> Self {
        SettingsProblem {
            file,
            json_path,
            error: Arc::from(error.into()),
        }
    }

    /// The error as the settings loader reported it (downcast to
    /// `robota::framework::config::SettingsError` for its details).
    pub fn error(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
        &*self.error
    }
}

impl fmt::Display for SettingsProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.error.fmt(f)
    }
}

impl std::error::Error for SettingsProblem {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.error.source()
    }
}

/// What went wrong.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SessionError {
    /// A settings file could not be read, is not valid JSON, or has an invalid value (unknown
    /// permission mode, wrong type, missing environment variable, …).
    #[error(transparent)]
    Settings(SettingsProblem),
    /// Permission rules that do not parse (every one is listed).
    #[error("invalid permission rules:\n{}", errors.iter().map(|e| format!("  {e}")).collect::<Vec<_>>().join("\n"))]
    InvalidPermissionRules {
        /// Each bad rule with its file and position.
        errors: Vec<RuleError>,
    },
    /// Hook definitions with errors (bad matcher regex, unknown handler type, wrong types, …).
    #[error(transparent)]
    InvalidHooks(#[from] HookConfigError),
    /// A host tool cannot be added: its name is taken (by another host tool, or by a built-in
    /// tool it does not say it replaces).
    #[error("tool `{name}`: {message}")]
    InvalidTool {
        /// The tool's name.
        name: String,
        /// What is wrong and how to fix it.
        message: String,
    },
    /// An MCP server the host defined in code (an in-process server) cannot be added: another
    /// server (configured or in-process) has its name.
    #[error("MCP server `{name}`: {message}")]
    InvalidMcpServer {
        /// The server's name.
        name: String,
        /// What is wrong and how to fix it.
        message: String,
    },
    /// A host hook callback was registered with a matcher that does not parse, or an
    /// on-failure policy its event cannot honour.
    #[error("the {event} hook callback (matcher `{matcher}`): {message}")]
    InvalidHookCallback {
        /// The event.
        event: HookEvent,
        /// The matcher as given.
        matcher: String,
        /// What is wrong.
        message: String,
    },
    /// The session id cannot be used (it names files, so it must be a safe file name).
    #[error(
        "invalid session id `{id}`: use 1 to 128 characters, letters, digits, `.`, `_` and `-`, \
         starting with a letter or digit"
    )]
    InvalidSessionId {
        /// The id given.
        id: String,
    },
    /// The structured output format (`output_format`) cannot be used: it is not
    /// `{"type": "json_schema", "schema": …}`, or the schema is not a valid JSON Schema.
    #[error("invalid output_format: {message}")]
    InvalidOutputFormat {
        /// What is wrong and how to fix it.
        message: String,
    },
    /// The working directory cannot be used.
    #[error("the session's working directory {} cannot be used: {message}", cwd.display())]
    InvalidCwd {
        /// The directory.
        cwd: PathBuf,
        /// Why.
        message: String,
    },
    /// `bypassPermissions` was requested but a settings file forbids it.
    #[error(
        "bypassPermissions mode is disabled by `permissions.disableBypassPermissionsMode` in the \
         settings; choose another permission mode"
    )]
    BypassPermissionsDisabled,
    /// A run is already in progress on this session.
    #[error("this session is already running a turn; wait for it to finish or abort it first")]
    Busy,
    /// The session was shut down.
    #[error("this session has been shut down; create a new session")]
    ShutDown,
    /// An automatic-compaction threshold outside (0, 1] (`set_compaction_policy`).
    #[error(
        "the auto-compact threshold must be a fraction of the context window in (0, 1], e.g. 0.8 \
         for 80%; got {threshold}"
    )]
    InvalidCompactionThreshold {
        /// The threshold given.
        threshold: f64,
    },
    /// The provider cannot call another model (`switch_model`).
    #[error(
        "the {provider} provider cannot switch to model `{model}`; create the session with that \
         model instead"
    )]
    ModelSwitch {
        /// The model asked for.
        model: String,
        /// The provider's name.
        provider: String,
    },
    /// The fallback model cannot be used (the provider cannot switch models, or it is the main
    /// model).
    #[error("invalid fallback_model: {message}")]
    InvalidFallbackModel {
        /// What is wrong.
        message: String,
    },
    /// A UserPromptSubmit hook rejected the prompt; nothing was sent to the model.
    #[error("the prompt was rejected by a UserPromptSubmit hook: {reason}")]
    PromptRejected {
        /// The hook's reason.
        reason: String,
    },
    /// The session's spending limit (`max_budget_usd`) is reached; no further model calls are
    /// made. Start a new session or raise the limit.
    #[error(
        "{reason}; no further runs in this session (raise max_budget_usd or start a new session)"
    )]
    BudgetExceeded {
        /// E.g. `budget of $5.00 reached: spent $5.03`.
        reason: String,
    },
    /// `max_budget_usd` is not a usable amount.
    #[error("invalid max_budget_usd: {message}")]
    InvalidBudget {
        /// What is wrong.
        message: String,
    },
    /// The telemetry options cannot be used (a malformed `traceparent`, an unusable exporter
    /// configuration, or a build without OpenTelemetry export).
    #[error("invalid telemetry options: {message}")]
    InvalidTelemetry {
        /// What is wrong and how to fix it.
        message: String,
    },
    /// The saved session to resume or fork could not be loaded.
    #[error("cannot resume session `{id}`: {message}")]
    Resume {
        /// The session id asked for.
        id: String,
        /// What went wrong.
        message: String,
    },
    /// The saved session is open for writing elsewhere (another process, or another session
    /// object in this one): a session has one writer at a time. Wait until it is closed, or fork
    /// it (`fork_session`) to continue in a copy.
    #[error("{}", held_message(id, holder.as_ref(), path))]
    Locked {
        /// The session.
        id: String,
        /// Its lock file.
        path: PathBuf,
        /// Who holds it (pid, host, since when), when its record could be read.
        holder: Option<LockHolder>,
    },
    /// A PreCompact hook blocked compaction; the history is unchanged.
    #[error("compaction was blocked by a PreCompact hook: {reason}")]
    CompactionBlocked {
        /// The hook's reason.
        reason: String,
    },
    /// Compaction did not produce a usable summary; the history is unchanged.
    #[error("compaction failed after {attempts} attempt(s): {message}; the conversation was left unchanged")]
    CompactionFailed {
        /// Summary calls made.
        attempts: u32,
        /// Why the last attempt was not usable.
        message: String,
    },
    /// Compaction was aborted; the history is unchanged.
    #[error("compaction was aborted; the conversation was left unchanged")]
    CompactionAborted,
    /// There is nothing to compact (no messages besides system messages).
    #[error("there is nothing to compact yet")]
    NothingToCompact,
}

impl SessionError {
    /// The settings file the error is about, when there is one (the first, when several).
    pub fn file(&self) -> Option<&Path> {
        match self {
            SessionError::Settings(problem) => problem.file.as_deref(),
            SessionError::InvalidPermissionRules { errors } => {
                errors.first().and_then(|e| e.file.as_deref())
            }
            SessionError::InvalidHooks(error) => first_hook_error(error).map(|d| d.file.as_path()),
            _ => None,
        }
    }

    /// The JSON path of the offending value, when known (the first, when several).
    pub fn json_path(&self) -> Option<&str> {
        match self {
            SessionError::Settings(problem) => problem.json_path.as_deref(),
            SessionError::InvalidPermissionRules { errors } => {
                errors.first().map(|e| e.json_path.as_str())
            }
            SessionError::InvalidHooks(error) => {
                first_hook_error(error).map(|d| d.json_path.as_str())
            }
            _ => None,
        }
    }
}

fn first_hook_error(error: &HookConfigError) -> Option<&crate::hooks::HookDiagnostic> {
    error
        .diagnostics
        .iter()
        .find(|d| d.severity == Severity::Error)
        .or_else(|| error.diagnostics.first())
}
