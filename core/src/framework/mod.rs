//! The framework layer: everything that turns a project folder into a session — settings files,
//! project context (AGENTS.md / CLAUDE.md, memory, tasks), the system prompt and `@file` prompt
//! references — and the client-facing surface on top of a session: [`interactive`]
//! (`InteractiveSession`: prompt queue, abort, ordered event subscriptions, commands) and
//! [`query`] (`create_query`, one full agent turn per call), [`outcome`] (how a prompt ended:
//! the one status vocabulary every binding shares), [`agents`] (subagents: agent definitions,
//! worktree isolation, running a subagent) and [`skills`] (`SKILL.md` discovery, the `skills`
//! command and the `Skill` tool). [`frontmatter`] reads the YAML frontmatter of Markdown
//! definition files (agents and skills). [`assembly`] is the one place that turns settings and
//! project context into a session's resolved inputs (and builds a provider from a settings
//! profile). [`checkpoints`] keeps the files each prompt changed so they can be rewound, and
//! [`memory`] is the project memory under `.robota/memory/`.
//!
//! This is the only layer that reads settings files or walks directories for instruction files
//! (`DESIGN.md` §2); the layers below receive plain values. Every function here takes the home
//! directory and project directory as parameters, so many sessions with different projects can
//! live in one process and tests can use a fake home.

pub mod agents;
pub mod assembly;
pub mod background;
pub mod checkpoints;
pub mod commands;
pub mod config;
pub mod context;
pub mod frontmatter;
pub mod interactive;
pub mod memory;
pub mod outcome;
pub mod plugins;
pub mod query;
pub mod skills;
