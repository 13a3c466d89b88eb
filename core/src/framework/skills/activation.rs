//! What activating a skill is made of: the request ([`SkillActivationRequest`]) a command or the
//! `Skill` tool makes through the command host, and the record ([`SkillActivation`]) every
//! activation leaves — the payload of the `skill_activation` event and of the
//! `skill-activation` history entry (spec 000 `ISkillActivationEvent`).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::definition::{SkillContext, SkillDefinition};

/// Who activated a skill.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SkillInvocation {
    /// The user, as `/name args` (or `skills name args`).
    UserSlash,
    /// The model, through the `Skill` tool or `robota_command_skills`.
    ModelTool,
}

/// How an activated skill ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SkillMode {
    /// Its instructions joined the conversation.
    Inject,
    /// It ran in a subagent (`context: fork`).
    Fork,
}

impl From<SkillContext> for SkillMode {
    fn from(context: SkillContext) -> Self {
        match context {
            SkillContext::Inline => SkillMode::Inject,
            SkillContext::Fork => SkillMode::Fork,
        }
    }
}

/// Where an activation is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SkillActivationStatus {
    /// The skill was loaded and runs.
    Started,
    /// The turn (inline) or the subagent (fork) it ran in finished.
    Completed,
    /// It could not run to the end (error, abort, refused tool grant).
    Failed,
}

/// A request to activate a skill.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkillActivationRequest {
    /// The skill's name (a leading `/` is ignored).
    pub name: String,
    /// Everything after the name.
    #[serde(default)]
    pub args: String,
    /// Who asks.
    pub invocation: SkillInvocation,
}

/// One activation, as events and history report it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SkillActivation {
    /// The skill.
    pub skill_name: String,
    /// `project`, `user` or `host`.
    pub source: String,
    /// Its `SKILL.md` (absent for a skill given as data).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<PathBuf>,
    /// Who activated it.
    pub invocation: SkillInvocation,
    /// How it ran.
    pub mode: SkillMode,
    /// Where it is.
    pub status: SkillActivationStatus,
    /// The arguments it was given.
    pub arguments: String,
    /// When this record was made (RFC 3339, UTC).
    pub timestamp: String,
    /// What went wrong, for `failed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Things worth knowing (a model the skill asks for that the session does not switch to, a
    /// tool grant that did not parse, …).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl SkillActivation {
    /// The `started` record of activating `skill`.
    pub fn started(skill: &SkillDefinition, args: &str, invocation: SkillInvocation) -> Self {
        SkillActivation {
            mode: skill.context.into(),
            ..SkillActivation::started_inline(
                &skill.name,
                skill.source.kind(),
                skill.file.clone(),
                args,
                invocation,
            )
        }
    }

    /// The `started` record of something run inline under `name` from `source` (`path`: its
    /// file): a custom command, which reports its runs as skills do.
    pub fn started_inline(
        name: &str,
        source: &str,
        path: Option<PathBuf>,
        args: &str,
        invocation: SkillInvocation,
    ) -> Self {
        SkillActivation {
            skill_name: name.to_string(),
            source: source.to_string(),
            path,
            invocation,
            mode: SkillMode::Inject,
            status: SkillActivationStatus::Started,
            arguments: args.trim().to_string(),
            timestamp: now_rfc3339(),
            error: None,
            notes: Vec::new(),
        }
    }

    /// The same activation, ended: `completed` without an error, else `failed`.
    pub fn ended(&self, error: Option<String>) -> Self {
        SkillActivation {
            status: if error.is_some() {
                SkillActivationStatus::Failed
            } else {
                SkillActivationStatus::Completed
            },
            timestamp: now_rfc3339(),
            error,
            ..self.clone()
        }
    }

    /// One line for history renderers.
    pub fn message(&self) -> String {
        let who = match self.invocation {
            SkillInvocation::UserSlash => "user",
            SkillInvocation::ModelTool => "model",
        };
        let how = match self.mode {
            SkillMode::Inject => "inline",
            SkillMode::Fork => "in a subagent",
        };
        match self.status {
            SkillActivationStatus::Started => {
                format!(
                    "Skill `{}` activated by the {who}, running {how}",
                    self.skill_name
                )
            }
            SkillActivationStatus::Completed => format!("Skill `{}` completed", self.skill_name),
            SkillActivationStatus::Failed => format!(
                "Skill `{}` failed: {}",
                self.skill_name,
                self.error.as_deref().unwrap_or("unknown error")
            ),
        }
    }
}

pub(crate) fn now_rfc3339() -> String {
    time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}
