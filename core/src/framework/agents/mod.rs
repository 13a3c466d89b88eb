//! Subagents: agent definitions (built-in and `.md` files from `.robota/agents/`,
//! `.claude/agents/`, …), worktree isolation, and running one subagent for a session.
//!
//! - [`definition`]: [`AgentDefinition`], [`AgentCatalog`], [`load_agent_definitions`], the
//!   typed [`AgentDefinitionError`] for a malformed file and the [`AgentWarning`] it becomes
//!   when loading a folder (the other files still load).
//! - [`worktree`]: creating and removing the git worktree of an isolated run, with the
//!   WorktreeCreate/WorktreeRemove hooks.
//! - [`runner`]: [`run_subagent`] — definition, worktree, the child run
//!   ([`Session::run_subagent`](crate::session::Session::run_subagent), which fires
//!   SubagentStart/SubagentStop), clean-up, progress.
//!
//! - [`task_tool`]: [`TaskTool`], Claude Code's `Task` tool, in the foreground or as a background
//!   task of the session's task manager.
//!
//! Users and the model reach subagents through the `agent` command
//! ([`AgentCommand`](crate::framework::commands::AgentCommand)), the model also through `Task`; a
//! subagent gets neither (subagents cannot spawn subagents).

pub mod definition;
pub mod runner;
pub mod task_tool;
pub mod worktree;

pub use definition::{
    builtin_agents, load_agent_definitions, load_agent_definitions_with_plugins,
    parse_agent_definition, AgentCatalog, AgentDefinition, AgentDefinitionError, AgentSource,
    AgentWarning, DEFAULT_AGENT_TYPE,
};
pub use runner::{
    new_agent_id, resolve_subagent_model, run_subagent, Isolation, SubagentError, SubagentProgress,
    SubagentProgressCallback, SubagentReport, SubagentRequest, WorktreeReport,
    FORK_WORKER_PROMPT_SUFFIX, SUBAGENT_PROMPT_SUFFIX,
};
pub use task_tool::{TaskTool, TASK_TOOL_NAME};
pub use worktree::{
    create_worktree, finish_worktree, Worktree, WorktreeDisposition, WorktreeError, WORKTREES_DIR,
};
