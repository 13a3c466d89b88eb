//! The session layer: one conversation with its settings, permission enforcement, hooks,
//! persistence and usage accounting, on top of the execution engine.
//!
//! - [`Session`] (`run`): a session built from resolved inputs (`inputs`: permission rules with
//!   their sources, hooks, environment, compaction policy, the project's system prompt — the
//!   framework's assembly resolves them from settings and the project folder; this layer never
//!   reads either) that runs prompts with the lifecycle hooks around them.
//! - [`PermissionEnforcer`] (`enforcer`): the engine's tool-call gate — deny rules, PreToolUse
//!   hooks, rules and mode, PermissionRequest/Notification hooks, the host's
//!   [`PermissionHandler`]; PostToolUse/PostToolUseFailure after each call.
//! - [`PermissionHandler`] (`permission_handler`): the host port that answers permission prompts.
//! - [`SessionEvent`] (`events`): everything a session reports.
//! - `settings_writer`: saving "allow always" rules to a settings file.
//! - [`FsPathResolver`] (`fs_resolver`): symbolic links from the real file system for the pure
//!   permission engine; [`PermissionRuleCondition`] (`hook_condition`): hook `if` rules.
//! - `store`, `log`, `usage`: persistence (the [`SessionStore`] trait with the JSON snapshot,
//!   the JSONL log, resume and fork built once over it; `file_store`: the file store, the
//!   default; `sqlite_store` with the `sqlite` feature) and usage/cost accounting, wired into
//!   the session through [`SessionPersistence`] and `max_budget_usd`.
//! - `lock`: one writer per saved session (an OS lock on `.robota/sessions/{id}.lock`);
//!   `recovery`: what opening a saved session found damaged, repaired or unfinished
//!   ([`RecoveryReport`], sent as a `session_recovered` event).
//! - [`Session::run_subagent`] (`subagent`): one subagent run inside the session — a child
//!   engine over the session's provider and a subset of its tools, gated by the session's
//!   permissions and hooks, between SubagentStart and SubagentStop.
//! - [`structured_output`]: the `output_format` option, the check of a prompt's final answer
//!   against its JSON Schema and the follow-ups that ask the model to fix it.
//! - [`ContextState`] (`context`): how full the context window is; `compaction`: the summary
//!   prompt, its completeness check and the compacted history.

#[cfg(feature = "store-conformance")]
pub mod conformance;
mod file_store;
pub mod host_store;
pub mod lock;
pub mod log;
#[cfg(feature = "postgres")]
pub mod postgres_store;
pub mod recovery;
#[cfg(feature = "sqlite")]
pub mod sqlite_store;
pub mod store;
pub mod store_choice;
pub mod usage;

mod agent_hook;
pub mod compaction;
pub mod compaction_policy;
pub mod context;
pub mod enforcer;
pub mod error;
pub mod events;
pub mod fs_resolver;
pub mod hook_condition;
pub(crate) mod inputs;
pub mod loaded_context;
pub mod options;
pub mod permission_handler;
mod persist;
mod run;
pub mod settings_writer;
pub mod structured_output;
mod subagent;
mod telemetry;

pub use context::ContextState;
pub use enforcer::{EnforcerOptions, PermissionEnforcer, PermissionWaitCallback};
pub use error::{RuleError, SessionError, SettingsProblem};
pub use events::{SessionEvent, SessionEventCallback, SessionWarning};
pub use fs_resolver::FsPathResolver;
pub use hook_condition::PermissionRuleCondition;
pub use lock::LockHolder;
pub use options::{
    HookCallbackRegistration, PreloadedSettings, SessionOptions, SessionPersistence,
    SessionSettings,
};
pub use permission_handler::{
    AllowScope, FnPermissionHandler, PermissionHandler, PermissionRequest, PermissionResolution,
    PermissionResponse, ResolvedBy, SettingsDestination, SettingsTarget,
};
pub use recovery::{RecoveryReport, UnfinishedTurn};
pub(crate) use run::absolute_cwd;
pub use run::{Session, STOP_HOOK_MESSAGE_METADATA};
pub use settings_writer::{
    add_permission_rules, merge_settings_patch, read_settings_file, set_settings_flag,
    SettingsWriteError,
};
pub use store::{FileSessionStore, SessionLease, SessionStore};
pub use subagent::{is_withheld_from_subagents, SubagentOutcome, SubagentRun, COMMAND_TOOL_PREFIX};
