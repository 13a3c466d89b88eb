//! Assembly: the one place that turns a project folder's settings and context into what a
//! [`Session`] runs with (`DESIGN.md` §12). The session layer receives only resolved, plain
//! inputs; everything that reads settings or project files happens here, so the next sources of
//! session inputs (skills, plugins, MCP servers) plug in here too.
//!
//! - [`Session::new`]: settings ([`SessionSettings`](crate::session::SessionSettings): loaded
//!   here, or already loaded by the host) interpreted into permission rules with their sources,
//!   hooks, environment, workspace directories and compaction policy (`settings`), plus the
//!   system prompt built from the project folder (`context`).
//! - `plugins`: the enabled plugins of a session (from the settings' `enabledPlugins`), whose
//!   skills, agents and hooks join the session's own.
//! - [`provider`]: a [`Provider`](crate::provider::Provider) from the settings' active profile
//!   (or the standard environment variables), for hosts that want the CLI's behaviour.

mod context;
pub(crate) mod plugins;
pub mod provider;
pub(crate) mod settings;

use crate::session::{absolute_cwd, Session, SessionError, SessionOptions};

impl Session {
    /// Creates a session: loads and checks its settings (every bad rule, mode, matcher or JSON
    /// value is an error naming the file, JSON path and problem), builds its tools, permission
    /// enforcer and hooks, and — unless [`SessionOptions::system_prompt`] is given or
    /// [`SessionOptions::load_project_context`] is off — prepares the system prompt from the
    /// project folder. Fires no hook (see [`Session::start`]).
    pub fn new(mut options: SessionOptions) -> Result<Session, SessionError> {
        let cwd = absolute_cwd(&options.cwd)?;
        let (resolved, prompt_settings) = settings::assemble(
            &cwd,
            std::mem::take(&mut options.settings),
            std::mem::take(&mut options.extra_hooks),
        )?;
        let project_prompt = (options.system_prompt.is_none() && options.load_project_context)
            .then(|| context::project_prompt_builder(cwd, resolved.home.clone(), prompt_settings));
        Session::from_resolved(options, resolved, project_prompt)
    }
}
