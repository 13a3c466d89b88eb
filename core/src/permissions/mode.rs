//! Permission modes: the five Claude Code modes, their names on the wire, and the aliases robota
//! accepts (`manual`, and the TypeScript Robota trust levels `safe` / `moderate` / `full`).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// How much the engine may do without asking. Serialized with Claude Code's names
/// (`default`, `acceptEdits`, `plan`, `bypassPermissions`, `dontAsk`).
///
/// Parsing also accepts aliases, so settings written for Claude Code or TypeScript Robota load
/// unchanged: `manual` → `default` (Claude Code's UI label); the Robota trust levels follow
/// TypeScript Robota's `TRUST_TO_MODE` (spec 001): `safe` → `plan`, `moderate` → `default`,
/// `full` → `acceptEdits`. No alias maps to `bypassPermissions`: skipping prompts must be asked for
/// by its own name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", try_from = "String")]
#[non_exhaustive]
pub enum PermissionMode {
    /// Prompt for anything that is not read-only and not pre-allowed.
    #[default]
    Default,
    /// Like `default`, but file edits (and `mkdir`/`touch`/`mv`/`cp`, and output redirections)
    /// inside the workspace directories are approved without asking.
    AcceptEdits,
    /// Read-only exploration: anything that may change files or run arbitrary commands is denied.
    Plan,
    /// Approve everything except what a deny or ask rule catches and writes to sensitive paths.
    BypassPermissions,
    /// Never ask: whatever would have been asked is denied (for headless runs).
    DontAsk,
}

impl PermissionMode {
    /// Every mode, in the order they are listed in messages.
    pub const ALL: [PermissionMode; 5] = [
        PermissionMode::Default,
        PermissionMode::AcceptEdits,
        PermissionMode::Plan,
        PermissionMode::BypassPermissions,
        PermissionMode::DontAsk,
    ];

    /// The canonical (Claude Code) name.
    pub fn as_str(self) -> &'static str {
        match self {
            PermissionMode::Default => "default",
            PermissionMode::AcceptEdits => "acceptEdits",
            PermissionMode::Plan => "plan",
            PermissionMode::BypassPermissions => "bypassPermissions",
            PermissionMode::DontAsk => "dontAsk",
        }
    }

    /// How much a mode lets run without the host's say, lowest first: `plan` (read-only),
    /// `dontAsk` (only what is pre-allowed), `default` (the host is asked), `acceptEdits`,
    /// `bypassPermissions`.
    pub fn permissiveness(self) -> u8 {
        match self {
            PermissionMode::Plan => 0,
            PermissionMode::DontAsk => 1,
            PermissionMode::Default => 2,
            PermissionMode::AcceptEdits => 3,
            PermissionMode::BypassPermissions => 4,
        }
    }

    /// The mode a child (a subagent) that asks for `self` runs in under a parent in `parent`:
    /// `self` when it is as or less permissive than `parent`, else `parent` — a child can
    /// narrow what its parent may do, never widen it.
    pub fn capped_by(self, parent: PermissionMode) -> PermissionMode {
        if self.permissiveness() <= parent.permissiveness() {
            self
        } else {
            parent
        }
    }
}

impl fmt::Display for PermissionMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A mode string that is neither a mode nor an accepted alias.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown permission mode `{value}`; valid modes are default, acceptEdits, plan, \
     bypassPermissions, dontAsk (aliases: manual = default, safe = plan, moderate = default, \
     full = acceptEdits){hint}"
)]
pub struct UnknownModeError {
    /// The string that was given.
    pub value: String,
    hint: &'static str,
}

impl FromStr for PermissionMode {
    type Err = UnknownModeError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        // Exact spelling only: a misspelt mode in a settings file should be reported, not guessed.
        Ok(match s {
            "default" | "manual" | "moderate" => PermissionMode::Default,
            "acceptEdits" | "full" => PermissionMode::AcceptEdits,
            "plan" | "safe" => PermissionMode::Plan,
            "bypassPermissions" => PermissionMode::BypassPermissions,
            "dontAsk" => PermissionMode::DontAsk,
            other => {
                let hint = if other == "auto" {
                    "; Claude Code's `auto` mode needs its classifier, which robota does not have"
                } else if PermissionMode::ALL
                    .iter()
                    .any(|m| m.as_str().eq_ignore_ascii_case(other))
                {
                    "; mode names are case-sensitive"
                } else {
                    ""
                };
                return Err(UnknownModeError {
                    value: other.to_string(),
                    hint,
                });
            }
        })
    }
}

impl TryFrom<String> for PermissionMode {
    type Error = UnknownModeError;

    fn try_from(value: String) -> Result<Self, Self::Error> {
        value.parse()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_mode_never_exceeds_its_parents() {
        use PermissionMode::*;
        assert_eq!(BypassPermissions.capped_by(Default), Default);
        assert_eq!(AcceptEdits.capped_by(Plan), Plan);
        assert_eq!(Default.capped_by(DontAsk), DontAsk);
        assert_eq!(Plan.capped_by(BypassPermissions), Plan);
        assert_eq!(AcceptEdits.capped_by(BypassPermissions), AcceptEdits);
        for mode in PermissionMode::ALL {
            assert_eq!(mode.capped_by(mode), mode);
        }
    }

    #[test]
    fn canonical_names_round_trip() {
        for mode in PermissionMode::ALL {
            assert_eq!(mode.as_str().parse::<PermissionMode>(), Ok(mode));
            let json = serde_json::to_string(&mode).unwrap();
            assert_eq!(json, format!("\"{}\"", mode.as_str()));
            assert_eq!(serde_json::from_str::<PermissionMode>(&json).unwrap(), mode);
        }
    }

    #[test]
    fn aliases() {
        assert_eq!("manual".parse(), Ok(PermissionMode::Default));
        assert_eq!("safe".parse(), Ok(PermissionMode::Plan));
        assert_eq!("moderate".parse(), Ok(PermissionMode::Default));
        assert_eq!("full".parse(), Ok(PermissionMode::AcceptEdits));
        assert_eq!(
            serde_json::from_str::<PermissionMode>("\"safe\"").unwrap(),
            PermissionMode::Plan
        );
    }

    #[test]
    fn unknown_mode_names_value_and_lists_valid_ones() {
        let err = "yolo".parse::<PermissionMode>().unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("`yolo`"), "{msg}");
        assert!(
            msg.contains("bypassPermissions") && msg.contains("dontAsk"),
            "{msg}"
        );
        let msg = "AcceptEdits"
            .parse::<PermissionMode>()
            .unwrap_err()
            .to_string();
        assert!(msg.contains("case-sensitive"), "{msg}");
        let err = serde_json::from_str::<PermissionMode>("\"auto\"").unwrap_err();
        assert!(err.to_string().contains("classifier"), "{err}");
    }
}
