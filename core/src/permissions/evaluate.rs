//! The evaluator: one tool call + a [`PermissionContext`] → a [`PermissionDecision`].
//!
//! Order, for every tool: deny rules → plan mode's ban on changes → ask rules → sensitive paths →
//! bypassPermissions → acceptEdits → allow rules → what needs no approval → ask. `dontAsk` then
//! turns any "ask" into "deny". Deny beats ask beats allow whatever their order or specificity.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::context::{Decision, DecisionBasis, PermissionContext, PermissionDecision, ToolClass};
use super::domain::url_host;
use super::glob::wildcard_match;
use super::mode::PermissionMode;
use super::path::{
    absolutize, is_within, normalize, sensitive_reason_below, AnchorDirs, CheckedPath, PathResolver,
};
use super::rule::{PermissionRule, RuleList, Spec};
use super::tools::{self, Family};

/// Decides whether `tool_name` may run with `input`, resolving symlinks through
/// [`PermissionContext::symlinks`].
pub fn evaluate_permission(
    tool_name: &str,
    input: &Value,
    context: &PermissionContext,
) -> PermissionDecision {
    evaluate_permission_with(tool_name, input, context, &context.symlinks)
}

/// [`evaluate_permission`] with a caller-supplied [`PathResolver`] (e.g. one backed by the file
/// system, implemented in the session layer).
pub fn evaluate_permission_with(
    tool_name: &str,
    input: &Value,
    context: &PermissionContext,
    resolver: &dyn PathResolver,
) -> PermissionDecision {
    // `BackgroundProcess` starting a command runs it through the shell: it is judged exactly
    // as that `Bash` call, so the second tool is no way around the shell's rules.
    let tool_name = tools::as_judged(tool_name, input);
    let ev = Evaluator {
        ctx: context,
        resolver,
        tool: tool_name,
        input,
    };
    let decision = match tools::family(tool_name) {
        Family::Bash => ev.bash(),
        Family::Read => ev.read_tool(),
        Family::Edit => ev.edit_tool(),
        Family::WebFetch => ev.web_fetch(),
        Family::WebSearch => ev.web_search(),
        Family::Agent | Family::Internal => ev.no_approval_tool(),
        Family::Skill => ev.skill(),
        Family::Other => ev.other_tool(),
    };
    if context.mode == PermissionMode::DontAsk && decision.decision == Decision::Ask {
        return PermissionDecision {
            decision: Decision::Deny,
            basis: DecisionBasis::DontAsk,
            reason: format!(
                "dontAsk mode denies anything that is not pre-approved; this call would need \
                 approval because {}",
                decision.reason
            ),
            suggested_rules: Vec::new(),
            matched_rule: decision.matched_rule,
        };
    }
    decision
}

/// The absolute paths an evaluation of this call would look at, with `..` kept. A session can
/// resolve them on the file system and put the links it finds into
/// [`PermissionContext::symlinks`] before evaluating.
pub fn paths_to_resolve(
    tool_name: &str,
    input: &Value,
    context: &PermissionContext,
) -> Vec<PathBuf> {
    let cwd = context.cwd_path();
    let home = context.home_path();
    let mut out = Vec::new();
    match tools::family(tools::as_judged(tool_name, input)) {
        Family::Read => out = read_tool_paths(tool_name, input, &cwd, home),
        Family::Edit => {
            if let Some(p) = tools::file_path(input) {
                out.push(absolutize(p, &cwd, home));
            }
        }
        Family::Bash => {
            let command = tools::string_field(input, &["command"]).unwrap_or("");
            out = super::bash::bash_paths(command, &cwd, home);
        }
        _ => {}
    }
    out.dedup();
    out
}

/// Whether reading `path` is denied by a Read rule, and by which. For tools that walk directory
/// trees (Grep, Glob) to skip denied files.
pub fn read_denied(path: &Path, context: &PermissionContext) -> Option<super::MatchedRule> {
    let ev = Evaluator {
        ctx: context,
        resolver: &context.symlinks,
        tool: "Read",
        input: &Value::Null,
    };
    let cp = CheckedPath::new(
        &absolutize(
            &path.to_string_lossy(),
            &context.cwd_path(),
            context.home_path(),
        ),
        &context.symlinks,
    );
    ev.path_rule(RuleList::Deny, "Read", &cp, false)
        .map(Into::into)
}

/// The paths a reading tool reads: its `path`/`file_path` (the cwd when Glob/Grep/LS have none),
/// and for Glob also the fixed leading directories of its pattern, since an absolute or climbing
/// pattern (`/etc/**`, `../../x/*`) searches outside `path`.
fn read_tool_paths(tool: &str, input: &Value, cwd: &Path, home: Option<&Path>) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let base = tools::file_path(input);
    match base {
        Some(p) => out.push(absolutize(p, cwd, home)),
        None if tool != "Read" && tool != "NotebookRead" => out.push(cwd.to_path_buf()),
        None => {}
    }
    if tool == "Glob" {
        if let Some(pattern) = tools::string_field(input, &["pattern"]) {
            let fixed = pattern
                .split('/')
                .take_while(|s| !s.contains(['*', '?', '[', '{']))
                .collect::<Vec<_>>()
                .join("/");
            if !fixed.is_empty() {
                let search_base = base
                    .map(|b| absolutize(b, cwd, home))
                    .unwrap_or_else(|| cwd.to_path_buf());
                out.push(absolutize(&fixed, &search_base, home));
            }
        }
    }
    out
}

pub(super) struct Evaluator<'a> {
    pub(super) ctx: &'a PermissionContext,
    pub(super) resolver: &'a dyn PathResolver,
    pub(super) tool: &'a str,
    pub(super) input: &'a Value,
}

fn describe(rule: &PermissionRule) -> String {
    format!(
        "`{}` in permissions.{}[{}] ({})",
        rule.text(),
        rule.list(),
        rule.index(),
        rule.source()
    )
}

pub(super) fn decide(
    decision: Decision,
    basis: DecisionBasis,
    reason: impl Into<String>,
) -> PermissionDecision {
    PermissionDecision::new(decision, basis, reason)
}

pub(super) fn by_rule(rule: &PermissionRule, what: &str) -> PermissionDecision {
    let (decision, verb) = match rule.list() {
        RuleList::Deny => (Decision::Deny, "denies"),
        RuleList::Ask => (Decision::Ask, "requires approval for"),
        RuleList::Allow => (Decision::Allow, "allows"),
    };
    decide(
        decision,
        DecisionBasis::Rule,
        format!("{} {verb} {what}", describe(rule)),
    )
    .with_rule(rule)
}

impl Evaluator<'_> {
    pub(super) fn rules(
        &self,
        list: RuleList,
        tool: &str,
    ) -> impl Iterator<Item = &PermissionRule> {
        let tool = tool.to_string();
        self.ctx
            .rules
            .list(list)
            .filter(move |r| r.applies_to_tool(&tool))
    }

    pub(super) fn anchors<'b>(&'b self, rule: &'b PermissionRule, cwd: &'b Path) -> AnchorDirs<'b> {
        AnchorDirs {
            cwd,
            home: self.ctx.home_path(),
            source_dir: rule.source().base_dir.as_deref(),
        }
    }

    pub(super) fn ci(&self) -> bool {
        self.ctx.case_insensitive_paths
    }

    pub(super) fn checked(&self, raw: &str) -> CheckedPath {
        CheckedPath::new(
            &absolutize(raw, &self.ctx.cwd_path(), self.ctx.home_path()),
            self.resolver,
        )
    }

    /// `Tool(param:value)` against this call's input.
    pub(super) fn param_matches(&self, name: &str, value: &str) -> bool {
        tools::scalar_param(self.input, name).is_some_and(|actual| wildcard_match(value, &actual))
    }

    /// The first rule of `list` for `tool` whose path pattern matches `path`. Allow needs the
    /// link and its target to match; deny and ask need either.
    pub(super) fn path_rule(
        &self,
        list: RuleList,
        tool: &str,
        path: &CheckedPath,
        with_params: bool,
    ) -> Option<&PermissionRule> {
        let cwd = self.ctx.cwd_path();
        let allow = list == RuleList::Allow;
        self.rules(list, tool).find(|rule| match &rule.spec {
            Spec::All => true,
            Spec::Path(p) => {
                let anchors = self.anchors(rule, &cwd);
                if allow {
                    path.all(|x| p.matches(x, &anchors, self.ci(), true))
                } else {
                    path.any(|x| p.matches(x, &anchors, self.ci(), false))
                }
            }
            Spec::Param { name, value } => with_params && self.param_matches(name, value),
            Spec::Unevaluable => !allow,
            _ => false,
        })
    }

    /// Deny or ask rules for writing `path` as `tool`: the tool's (Edit-family) rules, and Read
    /// rules too, since a Read deny also blocks edits of the same path.
    pub(super) fn write_rule(
        &self,
        list: RuleList,
        tool: &str,
        path: &CheckedPath,
        with_params: bool,
    ) -> Option<&PermissionRule> {
        self.path_rule(list, tool, path, with_params).or_else(|| {
            if list == RuleList::Deny {
                self.path_rule(list, "Read", path, false)
                    .filter(|r| r.exact_tool() == Some("Read"))
            } else {
                None
            }
        })
    }

    pub(super) fn inside_workspace(&self, path: &CheckedPath) -> bool {
        let dirs = self.ctx.workspace_dirs();
        path.all(|p| dirs.iter().any(|d| is_within(p, d, self.ci())))
    }

    pub(super) fn sensitive(&self, path: &CheckedPath) -> Option<String> {
        path.both().find_map(|p| {
            let root = self
                .ctx
                .isolated_roots
                .iter()
                .map(|r| normalize(r))
                .find(|r| is_within(p, r, self.ci()));
            sensitive_reason_below(p, root.as_deref(), &self.ctx.sensitive_paths, self.ci())
        })
    }

    /// A rule of `list` for this tool that matches regardless of input (`All`, matching params,
    /// and — for deny/ask — specifiers that cannot be evaluated).
    pub(super) fn generic_rule(&self, list: RuleList) -> Option<&PermissionRule> {
        self.rules(list, self.tool).find(|rule| match &rule.spec {
            Spec::All => true,
            Spec::Param { name, value } => self.param_matches(name, value),
            Spec::Unevaluable => list != RuleList::Allow,
            _ => false,
        })
    }

    /// An `Edit` rule for the directory of `path`: `/dir/**` (anchored at the project: the first
    /// workspace root, else the cwd — meant for the project's settings files) inside the
    /// project, `//abs/dir/**` outside it.
    pub(super) fn suggest_edit(&self, path: &Path) -> Option<String> {
        // Device and process files are not something to "always allow".
        if path.starts_with("/dev") || path.starts_with("/proc") {
            return None;
        }
        let cwd = self.ctx.cwd_path();
        let root = self
            .ctx
            .workspace_roots
            .first()
            .map(|r| normalize(&cwd.join(r)))
            .unwrap_or(cwd);
        Some(match path.strip_prefix(&root) {
            Ok(rel) => match rel.parent().filter(|p| !p.as_os_str().is_empty()) {
                Some(dir) => format!("Edit(/{}/**)", dir.display()),
                None => format!("Edit(/{})", rel.display()),
            },
            Err(_) => {
                let dir = path.parent().unwrap_or(path);
                format!("Edit(/{}/**)", dir.display())
            }
        })
    }

    // ---- Read family ------------------------------------------------------------------------

    fn read_tool(&self) -> PermissionDecision {
        let paths: Vec<CheckedPath> = read_tool_paths(
            self.tool,
            self.input,
            &self.ctx.cwd_path(),
            self.ctx.home_path(),
        )
        .iter()
        .map(|p| CheckedPath::new(p, self.resolver))
        .collect();
        for list in [RuleList::Deny, RuleList::Ask] {
            if let Some(rule) = self.generic_rule(list) {
                return by_rule(rule, &format!("every `{}` call", self.tool));
            }
            for p in &paths {
                if let Some(rule) = self.path_rule(list, self.tool, p, true) {
                    return by_rule(rule, &format!("reading `{}`", p.lexical.display()));
                }
            }
        }
        if !paths.is_empty() {
            if let Some(rule) = paths
                .iter()
                .map(|p| self.path_rule(RuleList::Allow, self.tool, p, false))
                .collect::<Option<Vec<_>>>()
                .and_then(|rules| rules.into_iter().next())
            {
                return by_rule(rule, &format!("this `{}` call", self.tool));
            }
        }
        decide(
            Decision::Allow,
            DecisionBasis::ReadOnly,
            format!("`{}` only reads, which needs no approval", self.tool),
        )
    }

    // ---- Edit family ------------------------------------------------------------------------

    fn edit_tool(&self) -> PermissionDecision {
        let mode = self.ctx.mode;
        let Some(raw) = tools::file_path(self.input) else {
            // The tool will reject the call; still, nothing path-based can approve it.
            if let Some(rule) = self.generic_rule(RuleList::Deny) {
                return by_rule(rule, &format!("every `{}` call", self.tool));
            }
            if mode == PermissionMode::Plan {
                return plan_denies(&format!("`{}` changes files", self.tool));
            }
            if let Some(rule) = self.generic_rule(RuleList::Ask) {
                return by_rule(rule, &format!("every `{}` call", self.tool));
            }
            if mode == PermissionMode::BypassPermissions {
                return bypass_allows();
            }
            return decide(
                Decision::Ask,
                DecisionBasis::NeedsApproval,
                format!(
                    "the `{}` call names no file, so no rule can approve it",
                    self.tool
                ),
            );
        };
        let path = self.checked(raw);
        // Shown inside backquotes; a link names both ends.
        let shown = match &path.target {
            Some(target) => format!(
                "`{}` (a link to `{}`)",
                path.lexical.display(),
                target.display()
            ),
            None => format!("`{}`", path.lexical.display()),
        };
        if let Some(rule) = self.write_rule(RuleList::Deny, self.tool, &path, true) {
            return by_rule(rule, &format!("writing {shown}"));
        }
        if mode == PermissionMode::Plan {
            return plan_denies(&format!("`{}` would change {shown}", self.tool));
        }
        if let Some(rule) = self.write_rule(RuleList::Ask, self.tool, &path, true) {
            return by_rule(rule, &format!("writing {shown}"));
        }
        if let Some(why) = self.sensitive(&path) {
            return decide(
                Decision::Ask,
                DecisionBasis::SensitivePath,
                format!(
                    "{shown} is protected ({why}); writing it always needs approval, in every mode"
                ),
            );
        }
        if mode == PermissionMode::BypassPermissions {
            return bypass_allows();
        }
        if mode == PermissionMode::AcceptEdits && self.inside_workspace(&path) {
            return decide(
                Decision::Allow,
                DecisionBasis::Mode,
                format!("acceptEdits mode approves edits inside the workspace ({shown})"),
            );
        }
        if let Some(rule) = self.path_rule(RuleList::Allow, self.tool, &path, false) {
            return by_rule(rule, &format!("writing {shown}"));
        }
        let outside = if self.inside_workspace(&path) {
            ""
        } else {
            " (it is outside the workspace)"
        };
        decide(
            Decision::Ask,
            DecisionBasis::NeedsApproval,
            format!(
                "`{}` would change {shown}{outside}, and no rule or mode approves it",
                self.tool
            ),
        )
        .with_suggestions(self.suggest_edit(&path.lexical).into_iter().collect())
    }

    // ---- Web --------------------------------------------------------------------------------

    fn web_fetch(&self) -> PermissionDecision {
        let url = tools::string_field(self.input, &["url"]).unwrap_or("");
        let host = url_host(url);
        let matches = |rule: &PermissionRule| match &rule.spec {
            Spec::All => true,
            Spec::Domain(d) => host.as_deref().is_some_and(|h| d.matches(h)),
            Spec::Param { name, value } => {
                rule.list() != RuleList::Allow && self.param_matches(name, value)
            }
            _ => false,
        };
        let what = match &host {
            Some(h) => format!("fetching from `{h}`"),
            None => "this fetch".to_string(),
        };
        for list in [RuleList::Deny, RuleList::Ask] {
            if let Some(rule) = self.rules(list, self.tool).find(|r| matches(r)) {
                return by_rule(rule, &what);
            }
        }
        if self.ctx.mode == PermissionMode::BypassPermissions {
            return bypass_allows();
        }
        if let Some(rule) = self.rules(RuleList::Allow, self.tool).find(|r| matches(r)) {
            return by_rule(rule, &what);
        }
        let Some(host) = host else {
            return decide(
                Decision::Ask,
                DecisionBasis::NeedsApproval,
                format!("`{url}` is not a URL with a host, so no domain rule can approve it"),
            );
        };
        decide(
            Decision::Ask,
            DecisionBasis::NeedsApproval,
            format!("fetching from `{host}` sends a request to the network and no rule allows that domain"),
        )
        .with_suggestions(vec![format!("WebFetch(domain:{host})")])
    }

    fn web_search(&self) -> PermissionDecision {
        let query = tools::string_field(self.input, &["query"]).unwrap_or("");
        let matches = |rule: &PermissionRule| match &rule.spec {
            Spec::All => true,
            Spec::Text(p) => {
                if rule.list() == RuleList::Allow {
                    wildcard_match(p, query)
                } else {
                    wildcard_match(&p.to_lowercase(), &query.to_lowercase())
                }
            }
            Spec::Param { name, value } => {
                rule.list() != RuleList::Allow && self.param_matches(name, value)
            }
            _ => false,
        };
        for list in [RuleList::Deny, RuleList::Ask] {
            if let Some(rule) = self.rules(list, self.tool).find(|r| matches(r)) {
                return by_rule(rule, "this web search");
            }
        }
        if self.ctx.mode == PermissionMode::BypassPermissions {
            return bypass_allows();
        }
        if let Some(rule) = self.rules(RuleList::Allow, self.tool).find(|r| matches(r)) {
            return by_rule(rule, "this web search");
        }
        decide(
            Decision::Ask,
            DecisionBasis::NeedsApproval,
            "a web search sends the query to a search service and no rule allows `WebSearch`",
        )
        .with_suggestions(vec!["WebSearch".to_string()])
    }

    // ---- Agents, internal tools, everything else ----------------------------------------------

    fn no_approval_tool(&self) -> PermissionDecision {
        let agent = tools::agent_name(self.input);
        let matches = |rule: &PermissionRule| match &rule.spec {
            Spec::All => true,
            Spec::Text(p) => agent.is_some_and(|a| wildcard_match(p, a)),
            Spec::Param { name, value } => self.param_matches(name, value),
            Spec::Unevaluable => true,
            _ => false,
        };
        let what = match agent {
            Some(a) => format!("starting the `{a}` agent"),
            None => format!("this `{}` call", self.tool),
        };
        for list in [RuleList::Deny, RuleList::Ask] {
            if let Some(rule) = self.rules(list, self.tool).find(|r| matches(r)) {
                return by_rule(rule, &what);
            }
        }
        decide(
            Decision::Allow,
            DecisionBasis::NoApprovalNeeded,
            format!("`{}` needs no approval", self.tool),
        )
    }

    /// `Skill`: rules name the skill (`Skill(review)`, `Skill(plugin:review)`, wildcards).
    fn skill(&self) -> PermissionDecision {
        let skill = tools::skill_name(self.input).unwrap_or("");
        let matches = |rule: &PermissionRule| match &rule.spec {
            Spec::All => true,
            Spec::Text(p) => wildcard_match(p, skill),
            Spec::Param { name, value } => {
                rule.list() != RuleList::Allow && self.param_matches(name, value)
            }
            _ => false,
        };
        let what = format!("running the skill `{skill}`");
        for list in [RuleList::Deny, RuleList::Ask] {
            if let Some(rule) = self.rules(list, self.tool).find(|r| matches(r)) {
                return by_rule(rule, &what);
            }
        }
        if self.ctx.mode == PermissionMode::BypassPermissions {
            return bypass_allows();
        }
        if let Some(rule) = self.rules(RuleList::Allow, self.tool).find(|r| matches(r)) {
            return by_rule(rule, &what);
        }
        decide(
            Decision::Ask,
            DecisionBasis::NeedsApproval,
            format!("no rule allows {what}"),
        )
        .with_suggestions(vec![format!("Skill({skill})")])
    }

    fn other_tool(&self) -> PermissionDecision {
        let mode = self.ctx.mode;
        let class = self
            .ctx
            .tool_classes
            .get(self.tool)
            .copied()
            .unwrap_or(ToolClass::Mutating);
        if let Some(rule) = self.generic_rule(RuleList::Deny) {
            return by_rule(rule, &format!("`{}`", self.tool));
        }
        if mode == PermissionMode::Plan && class != ToolClass::ReadOnly {
            return plan_denies(&format!("`{}` is not known to be read-only", self.tool));
        }
        if let Some(rule) = self.generic_rule(RuleList::Ask) {
            return by_rule(rule, &format!("`{}`", self.tool));
        }
        if mode == PermissionMode::BypassPermissions {
            return bypass_allows();
        }
        if let Some(rule) = self.generic_rule(RuleList::Allow) {
            return by_rule(rule, &format!("`{}`", self.tool));
        }
        if class == ToolClass::ReadOnly {
            return decide(
                Decision::Allow,
                DecisionBasis::ReadOnly,
                format!(
                    "`{}` is classified read-only, which needs no approval",
                    self.tool
                ),
            );
        }
        decide(
            Decision::Ask,
            DecisionBasis::NeedsApproval,
            format!("no rule allows `{}`", self.tool),
        )
        .with_suggestions(vec![self.tool.to_string()])
    }
}

pub(super) fn plan_denies(what: &str) -> PermissionDecision {
    decide(
        Decision::Deny,
        DecisionBasis::Mode,
        format!("plan mode forbids changes: {what}. Leave plan mode to make changes"),
    )
}

pub(super) fn bypass_allows() -> PermissionDecision {
    decide(
        Decision::Allow,
        DecisionBasis::Mode,
        "bypassPermissions mode approves calls that no deny or ask rule catches",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::permissions::{RuleSet, RuleSource};
    use serde_json::json;

    fn ctx(allow: &[&str], deny: &[&str]) -> PermissionContext {
        let rules = RuleSet::from_lists(
            allow.iter().copied(),
            std::iter::empty(),
            deny.iter().copied(),
            &RuleSource::new("test"),
        )
        .unwrap();
        PermissionContext::new("/w")
            .with_home("/home/u")
            .with_rules(rules)
            .with_case_insensitive_paths(false)
    }

    struct Links;
    impl PathResolver for Links {
        fn resolve(&self, path: &Path) -> Option<PathBuf> {
            path.strip_prefix("/w/link")
                .ok()
                .map(|rest| Path::new("/etc").join(rest))
        }
    }

    #[test]
    fn a_caller_resolver_is_consulted() {
        let c = ctx(&["Edit(./**)"], &[]);
        let input = json!({"file_path": "link/passwd", "content": ""});
        assert_eq!(
            evaluate_permission("Write", &input, &c).decision,
            Decision::Allow
        );
        let d = evaluate_permission_with("Write", &input, &c, &Links);
        assert_eq!(d.decision, Decision::Ask, "{}", d.reason);
        assert!(d.reason.contains("/etc/passwd"), "{}", d.reason);
    }

    #[test]
    fn paths_to_resolve_lists_what_is_checked() {
        let c = ctx(&[], &[]);
        let paths = paths_to_resolve("Bash", &json!({"command": "echo x > a/../b && rm ~/c"}), &c);
        assert_eq!(
            paths,
            [PathBuf::from("/w/a/../b"), PathBuf::from("/home/u/c")]
        );
        let paths = paths_to_resolve("Grep", &json!({"pattern": "x"}), &c);
        assert_eq!(paths, [PathBuf::from("/w")]);
    }

    #[test]
    fn read_denied_serves_tree_walkers() {
        let c = ctx(&[], &["Read(./secrets/**)"]);
        let hit = read_denied(Path::new("secrets/key"), &c).unwrap();
        assert_eq!(hit.rule, "Read(./secrets/**)");
        assert!(read_denied(Path::new("/w/src/a.rs"), &c).is_none());
    }

    #[test]
    fn dont_ask_turns_ask_into_deny_and_drops_suggestions() {
        let c = ctx(&[], &[]).with_mode(PermissionMode::DontAsk);
        let d = evaluate_permission("Bash", &json!({"command": "npm test"}), &c);
        assert_eq!(d.decision, Decision::Deny);
        assert_eq!(d.basis, DecisionBasis::DontAsk);
        assert!(d.suggested_rules.is_empty());
    }

    #[test]
    fn context_deserializes_with_defaults() {
        let c: PermissionContext = serde_json::from_value(json!({
            "cwd": "/w",
            "mode": "acceptEdits",
            "rules": [{"rule": "Bash(ls *)", "list": "allow"}]
        }))
        .unwrap();
        assert_eq!(c.mode, PermissionMode::AcceptEdits);
        assert_eq!(c.rules.rules().len(), 1);
        let d = evaluate_permission("Bash", &json!({"command": "ls -la"}), &c);
        assert_eq!(d.decision, Decision::Allow);
        assert_eq!(d.matched_rule.unwrap().rule, "Bash(ls *)");
        let bad = serde_json::from_value::<PermissionContext>(json!({"cwd": "/w", "mode": "yolo"}));
        assert!(bad.unwrap_err().to_string().contains("yolo"));
    }

    #[test]
    fn decisions_serialize_with_snake_case_and_lowercase_names() {
        let c = ctx(&[], &["Bash(rm *)"]);
        let d = evaluate_permission("Bash", &json!({"command": "rm -rf x"}), &c);
        let v = serde_json::to_value(&d).unwrap();
        assert_eq!(v["decision"], "deny");
        assert_eq!(v["basis"], "rule");
        assert_eq!(v["matched_rule"]["list"], "deny");
        assert_eq!(v["matched_rule"]["source"]["label"], "test");
    }
}
