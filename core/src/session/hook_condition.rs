//! Hook `if` conditions decided by the permission engine, so `"if": "Bash(git *)"` on a hook
//! means exactly what `Bash(git *)` means in `permissions`.
//!
//! The rule is matched the way a deny rule is: it applies when any part of a compound command
//! matches (`cd repo && git push` runs a `Bash(git *)` hook), and a path rule when the path or
//! its symlink target matches. Claude Code fails open — runs the hook — when the command cannot
//! be analysed or the rule does not parse; so does this.

use std::path::PathBuf;

use crate::hooks::{HookConditionEvaluator, HookInput};
use crate::permissions::{
    evaluate_permission_with, Decision, DecisionBasis, PermissionContext, RuleList, RuleSet,
    RuleSource,
};

use super::fs_resolver::FsPathResolver;

/// A [`HookConditionEvaluator`] backed by the permission rule matcher.
#[derive(Debug, Clone)]
pub struct PermissionRuleCondition {
    cwd: PathBuf,
    home: Option<PathBuf>,
}

impl PermissionRuleCondition {
    /// Conditions evaluated for a session in `cwd` (relative paths and `./` rules resolve there)
    /// with `home` for `~/` rules.
    pub fn new(cwd: impl Into<PathBuf>, home: Option<PathBuf>) -> Self {
        PermissionRuleCondition {
            cwd: cwd.into(),
            home,
        }
    }
}

impl HookConditionEvaluator for PermissionRuleCondition {
    fn matches(&self, rule: &str, input: &HookInput) -> bool {
        let (Some(tool), Some(tool_input)) = (input.tool_name(), input.tool_input()) else {
            return true;
        };
        let mut rules = RuleSet::new();
        if rules
            .add_list(RuleList::Deny, [rule], &RuleSource::new("hook condition"))
            .is_err()
        {
            return true;
        }
        let mut context = PermissionContext::new(&self.cwd).with_rules(rules);
        context.home = self.home.clone();
        let decision = evaluate_permission_with(tool, tool_input, &context, &FsPathResolver);
        match decision.decision {
            Decision::Deny => decision.basis == DecisionBasis::Rule,
            _ => decision.basis == DecisionBasis::Unanalyzable,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hooks::HookCommon;
    use serde_json::json;

    fn pre(tool: &str, input: serde_json::Value) -> HookInput {
        HookInput::pre_tool_use(HookCommon::new("s", "/p"), tool, input, "t")
    }

    #[test]
    fn bash_conditions_match_any_part_of_a_compound_command() {
        let c = PermissionRuleCondition::new("/p", None);
        assert!(c.matches(
            "Bash(git *)",
            &pre("Bash", json!({"command": "cd x && git push"}))
        ));
        assert!(!c.matches("Bash(git *)", &pre("Bash", json!({"command": "ls -la"}))));
        assert!(!c.matches("Bash(git *)", &pre("Read", json!({"file_path": "/p/a"}))));
        assert!(c.matches(
            "Edit(*.ts)",
            &pre("Write", json!({"file_path": "/p/src/a.ts", "content": ""}))
        ));
        assert!(!c.matches(
            "Edit(*.ts)",
            &pre("Write", json!({"file_path": "/p/src/a.rs", "content": ""}))
        ));
        // Fails open on a rule that does not parse.
        assert!(c.matches("Bash(", &pre("Bash", json!({"command": "ls"}))));
    }
}
