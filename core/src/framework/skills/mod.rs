//! Skills (Claude Code's Agent Skills): `SKILL.md` folders a session discovers, lists to the
//! model by name and description, and activates on demand — by the user as `/name args`, by the
//! model through the `Skill` tool or `robota_command_skills`.
//!
//! - [`definition`]: [`SkillDefinition`], discovery ([`load_skills`]) with its precedence, the
//!   host's [`SkillRegistration`]s, and [`SkillWarning`]s for files that cannot be used.
//! - [`render`]: the system-prompt section (under [`SKILLS_PROMPT_BUDGET`]) and argument
//!   substitution (`$ARGUMENTS`, `$N`, `${CLAUDE_SKILL_DIR}`).
//! - [`activation`]: the request and the [`SkillActivation`] record behind the
//!   `skill_activation` event and the `skill-activation` history entry.
//! - [`command`]: the `skills` command module and the `Skill` tool.
//!
//! Running a skill needs the session (its conversation, permission rules and subagents), so the
//! [`InteractiveSession`](crate::framework::interactive::InteractiveSession) carries it out
//! behind [`CommandHostContext::activate_skill`](crate::framework::commands::CommandHostContext::activate_skill).

pub mod activation;
pub mod command;
pub mod definition;
pub mod render;

pub use activation::{
    SkillActivation, SkillActivationRequest, SkillActivationStatus, SkillInvocation, SkillMode,
};
pub use command::{
    skills_command_module, SkillTool, SkillsCommand, SKILLS_COMMAND, SKILL_TOOL_NAME,
};
pub use definition::{
    load_skills, load_skills_with_plugins, parse_skill, SkillCatalog, SkillContext,
    SkillDefinition, SkillRegistration, SkillSource, SkillWarning, SKILL_FILE, SKILL_FILE_NAME,
};
pub use render::{
    skill_instructions, skills_prompt_section, split_arguments, substitute_arguments,
    SKILLS_PROMPT_BUDGET,
};

/// What a host without skills answers when asked for them.
pub const SKILLS_NOT_ENABLED: &str = "skills are not enabled in this session: compose the skills \
     command module (skills_command_module) to enable them";
