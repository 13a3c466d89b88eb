//! The Bash part of the evaluator: a command line, analysed into its parts, against the rules,
//! the mode, protected and critical paths, the working directories and the sandbox.
//!
//! Order: deny rules (the command's parts, the files it writes, the files it reads) → plan mode
//! → ask rules → what a deny rule *might* cover (a computed path, a glob, a recursive read) →
//! protected paths → critical paths → parts robota cannot see into → writes to places only known
//! at run time → bypassPermissions → every part approved (allow rules that name the program that
//! really runs, the read-only set reading inside the working directories, acceptEdits file
//! commands inside the workspace) → the sandbox's auto-approval → ask.
//!
//! Fail closed: anything the analysis cannot settle is "ask", in every mode and whatever the
//! allow rules say.

use std::path::{Path, PathBuf};

use super::commands::{self, ReadOnly, Reads};
use super::context::{Decision, DecisionBasis, PermissionDecision};
use super::evaluate::{by_rule, bypass_allows, decide, plan_denies, Evaluator};
use super::mode::PermissionMode;
use super::path::{critical_reason, sensitive_text_reason, CheckedPath};
use super::rule::{PermissionRule, RuleList, Spec};
use super::shell::{self, Analysis, ShellWord, SimpleCommand, WordPaths};
use super::tools;

/// Where a Bash command writes, for the write checks.
struct WriteTarget {
    shown: String,
    paths: WordPaths,
    /// A redirection (needs Edit permission itself) rather than a file argument of a command
    /// (approved together with the command).
    redirect: bool,
    /// The target is a glob.
    glob: bool,
    /// The command's options could not be read exactly, so this list may miss targets.
    incomplete: bool,
}

/// What a deny rule has to say about a command's reads or writes.
enum DenyCheck<'a> {
    /// A deny rule covers a file the command certainly touches.
    Denied(&'a PermissionRule, String),
    /// A deny rule may cover something the command touches (a computed path, a glob, a
    /// directory read recursively): ask.
    Possible(&'a PermissionRule, String),
    Clear,
}

/// Collapses runs of shell whitespace, as rule patterns are.
pub(super) fn collapse(s: &str) -> String {
    s.split([' ', '\t', '\n', '\r'])
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

impl Evaluator<'_> {
    pub(super) fn bash(&self) -> PermissionDecision {
        let command = tools::string_field(self.input, &["command"]).unwrap_or("");
        let whole = collapse(command);
        if whole.is_empty() {
            if let Some(rule) = self.generic_rule(RuleList::Deny) {
                return by_rule(rule, "every command");
            }
            return decide(
                Decision::Ask,
                DecisionBasis::NeedsApproval,
                "the command is empty",
            );
        }
        let disable_sandbox = self
            .input
            .get("dangerouslyDisableSandbox")
            .and_then(|v| v.as_bool())
            .unwrap_or(false);
        let sandbox = &self.ctx.sandbox;
        let sandboxed = sandbox.runs_sandboxed(command, disable_sandbox);
        let decision = match shell::analyze(command, &self.ctx.cwd_path(), self.ctx.home_path()) {
            Err(shell::ParseFailure(problem)) => self.bash_unparsed(&whole, &problem),
            Ok(analysis) => self.bash_analyzed(&whole, &analysis, sandboxed),
        };
        // Leaving an active sandbox (`dangerouslyDisableSandbox: true`, honoured with
        // `allowUnsandboxedCommands`) is never approved by the mode alone — not even in
        // bypassPermissions, where the sandbox is the only fence. A rule matching the command,
        // a hook or the user may still approve it.
        let escapes = disable_sandbox && !sandboxed && sandbox.runs_sandboxed(command, false);
        if escapes && decision.decision == Decision::Allow && decision.basis != DecisionBasis::Rule
        {
            return decide(
                Decision::Ask,
                DecisionBasis::NeedsApproval,
                "the call asks to run outside the OS sandbox (`dangerouslyDisableSandbox: \
                 true`), which always needs approval",
            );
        }
        decision
    }

    /// A Bash deny/ask rule matching the whole command text or any part's forms.
    fn bash_rule(
        &self,
        list: RuleList,
        whole: &str,
        analysis: Option<&Analysis>,
    ) -> Option<(&PermissionRule, String)> {
        for rule in self.rules(list, "Bash") {
            match &rule.spec {
                Spec::All | Spec::Unevaluable => return Some((rule, "every command".into())),
                Spec::Param { name, value } if self.param_matches(name, value) => {
                    return Some((rule, format!("commands with `{name}: {value}`")))
                }
                Spec::Command(p) => {
                    if p.matches(whole, true) {
                        return Some((rule, format!("`{whole}`")));
                    }
                    for c in analysis.map(|a| a.commands.as_slice()).unwrap_or_default() {
                        if c.deny_texts.iter().any(|t| p.matches(t, true)) {
                            return Some((
                                rule,
                                format!("`{}` (part of the command)", c.display()),
                            ));
                        }
                    }
                }
                _ => {}
            }
        }
        None
    }

    fn bash_unparsed(&self, whole: &str, problem: &str) -> PermissionDecision {
        if let Some((rule, what)) = self.bash_rule(RuleList::Deny, whole, None) {
            return by_rule(rule, &what);
        }
        if self.ctx.mode == PermissionMode::Plan {
            return plan_denies(
                "the command cannot be analysed, so it cannot be shown to be read-only",
            );
        }
        if let Some((rule, what)) = self.bash_rule(RuleList::Ask, whole, None) {
            return by_rule(rule, &what);
        }
        decide(
            Decision::Ask,
            DecisionBasis::Unanalyzable,
            format!(
                "robota cannot parse this command ({problem}), so it cannot check it against \
                 the rules; commands that cannot be checked are never approved automatically"
            ),
        )
    }

    fn write_targets(&self, analysis: &Analysis) -> Vec<WriteTarget> {
        let home = self.ctx.home_path();
        let mut out = Vec::new();
        for r in analysis.redirects.iter().filter(|r| r.write) {
            out.push(WriteTarget {
                shown: r.target.text.clone(),
                paths: r.target.paths(&r.cwd, home),
                redirect: true,
                glob: r.target.glob,
                incomplete: false,
            });
        }
        for c in &analysis.commands {
            if let Some(targets) = commands::mutated_targets(&c.argv) {
                for w in &targets.words {
                    out.push(WriteTarget {
                        shown: w.text.clone(),
                        paths: w.paths(&c.cwd, home),
                        redirect: false,
                        glob: w.glob,
                        incomplete: targets.unknown,
                    });
                }
                if targets.unknown && targets.words.is_empty() {
                    out.push(WriteTarget {
                        shown: c.display(),
                        paths: WordPaths {
                            paths: Vec::new(),
                            unknown: true,
                            glob_below: false,
                        },
                        redirect: false,
                        glob: false,
                        incomplete: true,
                    });
                }
            }
        }
        out
    }

    /// Checked paths for a write target; a glob target is represented by a `*` entry in its
    /// directory, which `dir/**`-style rules match and single-file rules do not.
    fn target_paths(&self, t: &WriteTarget) -> Vec<CheckedPath> {
        self.word_paths(&t.paths)
    }

    fn word_paths(&self, paths: &WordPaths) -> Vec<CheckedPath> {
        paths
            .paths
            .iter()
            .map(|p| {
                let p = if paths.glob_below {
                    p.join("*")
                } else {
                    p.clone()
                };
                CheckedPath::new(&p, self.resolver)
            })
            .collect()
    }

    /// The path rules of `list` that apply to reading (`Read(…)`) or writing (`Edit(…)`, and
    /// `Read` denies, which block edits too).
    fn path_rules(&self, list: RuleList, write: bool) -> Vec<&PermissionRule> {
        let mut rules: Vec<&PermissionRule> = self
            .rules(list, if write { "Write" } else { "Read" })
            .filter(|r| matches!(r.spec, Spec::Path(_) | Spec::All))
            .collect();
        if write && list == RuleList::Deny {
            rules.extend(
                self.rules(RuleList::Deny, "Read")
                    .filter(|r| r.exact_tool() == Some("Read") && matches!(r.spec, Spec::Path(_))),
            );
        }
        rules
    }

    /// A deny rule's view of one path-like word a command reads or writes.
    fn deny_check_word<'r>(
        &self,
        rules: &[&'r PermissionRule],
        word: &ShellWord,
        cwd: &shell::CwdState,
        recursive: Option<bool>,
        verb: &str,
    ) -> DenyCheck<'r> {
        if rules.is_empty() {
            return DenyCheck::Clear;
        }
        let home = self.ctx.home_path();
        let wp = word.paths(cwd, home);
        if wp.unknown {
            let rule = rules[0];
            return DenyCheck::Possible(
                rule,
                format!(
                    "{verb} `{}`, whose location is only known when it runs, and {} could cover \
                     it",
                    word.raw,
                    describe_rule(rule)
                ),
            );
        }
        for raw in &wp.paths {
            let cp = CheckedPath::new(raw, self.resolver);
            for rule in rules {
                let anchors_cwd = self.ctx.cwd_path();
                let anchors = self.anchors(rule, &anchors_cwd);
                let spec_match = |below: bool| match &rule.spec {
                    Spec::All => true,
                    Spec::Path(p) => cp.any(|x| {
                        if below {
                            p.may_match_below(x, &anchors, self.ci())
                        } else {
                            p.matches(x, &anchors, self.ci(), false)
                        }
                    }),
                    _ => false,
                };
                if wp.glob_below {
                    if spec_match(true) {
                        return DenyCheck::Possible(
                            rule,
                            format!(
                                "{verb} `{}`, a pattern that may match a file {} covers",
                                word.raw,
                                describe_rule(rule)
                            ),
                        );
                    }
                    continue;
                }
                if spec_match(false) {
                    return DenyCheck::Denied(rule, format!("{verb} `{}`", word.text));
                }
                let may_recurse = match recursive {
                    Some(r) => r,
                    // An unknown command may read a directory it is given recursively.
                    None => cp.all(|x| self.resolver.is_dir(x) != Some(false)),
                };
                if may_recurse && spec_match(true) {
                    return DenyCheck::Possible(
                        rule,
                        format!(
                            "{verb} everything below `{}`, where {} protects files",
                            word.text,
                            describe_rule(rule)
                        ),
                    );
                }
            }
        }
        DenyCheck::Clear
    }

    /// Deny rules against everything the command reads: the read-only commands' known reads,
    /// and for every other command each word that could name a file.
    fn read_check(&self, analysis: &Analysis, list: RuleList) -> DenyCheck<'_> {
        let rules = self.path_rules(list, false);
        if rules.is_empty() {
            return DenyCheck::Clear;
        }
        let mut reads: Vec<(ShellWord, &shell::CwdState, Option<bool>)> = Vec::new();
        for r in analysis.redirects.iter().filter(|r| !r.write) {
            reads.push((r.target.clone(), &r.cwd, Some(false)));
        }
        for c in &analysis.commands {
            match commands::read_only(&c.argv) {
                ReadOnly::Yes(found) => {
                    for w in found.paths {
                        reads.push((w, &c.cwd, Some(found.recursive)));
                    }
                    if found.cwd {
                        reads.push((ShellWord::literal("."), &c.cwd, Some(found.recursive)));
                    }
                }
                ReadOnly::No(_) => {
                    for w in candidate_path_words(&c.argv) {
                        reads.push((w, &c.cwd, None));
                    }
                }
            }
        }
        let mut possible = None;
        for (word, cwd, recursive) in &reads {
            match self.deny_check_word(&rules, word, cwd, *recursive, "reading") {
                DenyCheck::Clear => {}
                denied @ DenyCheck::Denied(..) => return denied,
                maybe @ DenyCheck::Possible(..) => {
                    possible.get_or_insert(maybe);
                }
            }
        }
        possible.unwrap_or(DenyCheck::Clear)
    }

    /// Deny (or ask) rules against every file the command writes.
    fn write_check(&self, writes: &[WriteTarget], list: RuleList) -> DenyCheck<'_> {
        let rules = self.path_rules(list, true);
        let mut possible: Option<DenyCheck<'_>> = None;
        for t in writes {
            if t.paths.unknown {
                if let Some(rule) = rules.first() {
                    possible.get_or_insert(DenyCheck::Possible(
                        rule,
                        format!(
                            "writing `{}`, whose location is only known when it runs, and {} \
                             could cover it",
                            t.shown,
                            describe_rule(rule)
                        ),
                    ));
                }
                continue;
            }
            for p in self.target_paths(t) {
                if let Some(rule) = self.write_rule(list, "Write", &p, false) {
                    return DenyCheck::Denied(rule, format!("writing `{}`", t.shown));
                }
            }
            if t.glob || t.paths.glob_below {
                for raw in &t.paths.paths {
                    let cp = CheckedPath::new(raw, self.resolver);
                    for rule in &rules {
                        let cwd = self.ctx.cwd_path();
                        let anchors = self.anchors(rule, &cwd);
                        if let Spec::Path(p) = &rule.spec {
                            if cp.any(|x| p.may_match_below(x, &anchors, self.ci())) {
                                possible.get_or_insert(DenyCheck::Possible(
                                    rule,
                                    format!(
                                        "writing `{}`, a pattern that may match a file {} covers",
                                        t.shown,
                                        describe_rule(rule)
                                    ),
                                ));
                            }
                        }
                    }
                }
            }
        }
        possible.unwrap_or(DenyCheck::Clear)
    }

    fn bash_analyzed(
        &self,
        whole: &str,
        analysis: &Analysis,
        sandboxed: bool,
    ) -> PermissionDecision {
        let mode = self.ctx.mode;
        let writes = self.write_targets(analysis);

        // 1. Deny: any part, any write, any read.
        if let Some((rule, what)) = self.bash_rule(RuleList::Deny, whole, Some(analysis)) {
            return by_rule(rule, &what);
        }
        let write_deny = self.write_check(&writes, RuleList::Deny);
        if let DenyCheck::Denied(rule, what) = &write_deny {
            return by_rule(rule, what);
        }
        let read_deny = self.read_check(analysis, RuleList::Deny);
        if let DenyCheck::Denied(rule, what) = &read_deny {
            return by_rule(rule, what);
        }

        // 2. Plan mode runs only what is provably read-only.
        if mode == PermissionMode::Plan {
            let read_only = analysis.opaque.is_empty()
                && writes.is_empty()
                && analysis.network.is_empty()
                && analysis
                    .commands
                    .iter()
                    .all(|c| c.allow_texts.is_empty() || self.read_only_command(c).is_ok());
            if !read_only {
                return plan_denies(&format!(
                    "`{whole}` may change things or run programs (only read-only commands such \
                     as `ls`, `cat`, `grep` or `git status`, reading inside the working \
                     directories, run in plan mode)"
                ));
            }
        }

        // 3. Ask rules.
        if let Some((rule, what)) = self.bash_rule(RuleList::Ask, whole, Some(analysis)) {
            return by_rule(rule, &what);
        }
        let write_ask = self.write_check(&writes, RuleList::Ask);
        let read_ask = self.read_check(analysis, RuleList::Ask);
        for check in [&write_ask, &read_ask] {
            if let DenyCheck::Denied(rule, what) = check {
                return by_rule(rule, what);
            }
        }

        // 4. What a deny or ask rule may cover.
        for check in [write_deny, read_deny, write_ask, read_ask] {
            if let DenyCheck::Possible(rule, what) = check {
                return decide(
                    Decision::Ask,
                    DecisionBasis::Rule,
                    format!("the command needs approval: it may be {what}"),
                )
                .with_rule(rule);
            }
        }

        // 5. Protected paths, in every mode. Where a target's location is unknown, or a glob
        // may reach dot-files (`shopt -s dotglob`), its text is checked for protected names.
        for t in writes
            .iter()
            .filter(|t| t.paths.unknown || (t.glob && analysis.dotglob_possible))
        {
            if let Some(why) = sensitive_text_reason(&t.shown, analysis.dotglob_possible) {
                return protected(&t.shown, &why);
            }
        }
        for t in &writes {
            for p in self.target_paths(t) {
                if let Some(why) = self.sensitive(&p) {
                    return protected(&t.shown, &why);
                }
            }
        }

        // 6. Critical paths: deleting or rewriting `/`, the home directory, a system
        // directory, or the working directory or its parents always asks.
        if let Some(d) = self.critical(analysis) {
            return d;
        }

        // 7. Parts robota cannot see into: never approved automatically, by any rule or mode.
        if !analysis.opaque.is_empty() {
            return decide(
                Decision::Ask,
                DecisionBasis::Unanalyzable,
                format!(
                    "the command contains {}, which robota cannot see into, so it is never \
                     approved automatically",
                    analysis.opaque.join(", ")
                ),
            );
        }

        // 8. Writes whose target is only known at run time could reach a protected file.
        if let Some(t) = writes.iter().find(|t| t.paths.unknown || t.incomplete) {
            return decide(
                Decision::Ask,
                DecisionBasis::Unanalyzable,
                format!(
                    "the command writes `{}`, whose location is only known when it runs (it \
                     could be a protected or denied file), so it is never approved \
                     automatically",
                    t.shown
                ),
            );
        }
        if mode != PermissionMode::Default {
            // A glob target of a command that follows links (`cp x build/*`, `> dir/*`) may
            // expand to a planted link to a protected file.
            if let Some(t) = writes.iter().find(|t| t.glob && t.redirect) {
                return decide(
                    Decision::Ask,
                    DecisionBasis::Unanalyzable,
                    format!(
                        "the command writes through the pattern `{}`, which may expand to a \
                         link to a protected file, so it is never approved automatically",
                        t.shown
                    ),
                );
            }
        }

        // 9. bypassPermissions.
        if mode == PermissionMode::BypassPermissions {
            return bypass_allows();
        }

        // 10. Every part must be approved.
        let mut used_rule: Option<&PermissionRule> = None;
        let mut notes: Vec<String> = Vec::new();
        let mut missing: Vec<String> = Vec::new();
        let mut suggestions: Vec<String> = Vec::new();
        let mut by_mode = false;
        for c in &analysis.commands {
            if c.allow_texts.is_empty() {
                continue;
            }
            let display = c.display();
            if let Some(rule) = self.allow_rule_for(c) {
                used_rule.get_or_insert(rule);
                notes.push(format!("`{display}` by `{}`", rule.text()));
                continue;
            }
            let read_only = self.read_only_command(c);
            if read_only.is_ok() {
                notes.push(format!("`{display}` is read-only"));
                continue;
            }
            if mode == PermissionMode::AcceptEdits && self.accept_edits_command(c) {
                by_mode = true;
                notes.push(format!(
                    "`{display}` edits inside the workspace (acceptEdits)"
                ));
                continue;
            }
            match read_only {
                Err(Some(why)) => missing.push(format!("`{display}` ({why})")),
                _ => missing.push(format!("`{display}`")),
            }
            if let Some(s) = suggest_command(c) {
                if !suggestions.contains(&s) {
                    suggestions.push(s);
                }
            }
        }
        for t in writes.iter().filter(|t| t.redirect) {
            let paths = self.target_paths(t);
            let known = !t.paths.unknown && !paths.is_empty() && !t.glob;
            if known
                && mode == PermissionMode::AcceptEdits
                && paths.iter().all(|p| self.inside_workspace(p))
            {
                by_mode = true;
                notes.push(format!(
                    "writing `{}` inside the workspace (acceptEdits)",
                    t.shown
                ));
                continue;
            }
            if known {
                let rules: Option<Vec<&PermissionRule>> = paths
                    .iter()
                    .map(|p| self.path_rule(RuleList::Allow, "Write", p, false))
                    .collect();
                if let Some(rule) = rules.and_then(|r| r.into_iter().next()) {
                    used_rule.get_or_insert(rule);
                    notes.push(format!("writing `{}` by `{}`", t.shown, rule.text()));
                    continue;
                }
            }
            missing.push(format!("writing `{}`", t.shown));
            // A rule only helps when the target has one possible location.
            if let (true, [only]) = (known, paths.as_slice()) {
                if let Some(s) = self.suggest_edit(&only.lexical) {
                    if !suggestions.contains(&s) {
                        suggestions.push(s);
                    }
                }
            }
        }
        for r in analysis.redirects.iter().filter(|r| !r.write) {
            let wp = r.target.paths(&r.cwd, self.ctx.home_path());
            let inside = !wp.unknown
                && !wp.paths.is_empty()
                && self
                    .word_paths(&wp)
                    .iter()
                    .all(|p| self.inside_workspace(p));
            if !inside {
                missing.push(format!(
                    "reading `{}` {}",
                    r.target.raw,
                    if wp.unknown {
                        "(its location is only known when it runs)"
                    } else {
                        "outside the working directories"
                    }
                ));
            }
        }
        for target in &analysis.network {
            missing.push(format!("opening a network connection through `{target}`"));
        }
        if missing.is_empty() {
            if analysis.commands.is_empty() {
                return decide(
                    Decision::Allow,
                    DecisionBasis::ReadOnly,
                    "the command runs nothing",
                );
            }
            let basis = if used_rule.is_some() {
                DecisionBasis::Rule
            } else if by_mode {
                DecisionBasis::Mode
            } else {
                DecisionBasis::ReadOnly
            };
            let mut d = decide(
                Decision::Allow,
                basis,
                format!(
                    "every part of the command is approved: {}",
                    notes.join(", ")
                ),
            );
            if let Some(rule) = used_rule {
                d = d.with_rule(rule);
            }
            return d;
        }

        // 11. The sandbox: a command that runs inside it may be approved by it.
        if sandboxed && self.ctx.sandbox.auto_allow {
            return decide(
                Decision::Allow,
                DecisionBasis::Sandbox,
                format!(
                    "the command runs inside the OS sandbox and `autoAllowBashIfSandboxed` \
                     approves what no rule approves ({})",
                    missing.join(", ")
                ),
            );
        }
        decide(
            Decision::Ask,
            DecisionBasis::NeedsApproval,
            format!(
                "nothing approves {}{}",
                missing.join(", "),
                if notes.is_empty() {
                    String::new()
                } else {
                    format!(" (approved: {})", notes.join(", "))
                }
            ),
        )
        .with_suggestions(suggestions)
    }

    /// The first allow rule that approves part `c`: its pattern matches one of the part's texts
    /// and its fixed prefix names the program that really runs.
    fn allow_rule_for(&self, c: &SimpleCommand) -> Option<&PermissionRule> {
        // A rule for `git …` was written for the session's repository; in another one (after
        // `cd`), git runs that repository's configured programs (fsmonitor, diff drivers).
        if self.git_elsewhere(c) {
            return None;
        }
        self.rules(RuleList::Allow, "Bash").find(|r| match &r.spec {
            Spec::All => true,
            Spec::Command(p) => c
                .allow_texts
                .iter()
                .any(|t| p.matches(&t.text, false) && p.fixed_prefix_len() >= t.cover),
            _ => false,
        })
    }

    /// Whether part `c` is in the built-in read-only set and reads only inside the working
    /// directories (and nothing a Read deny rule protects). `Err(Some(why))` says why not.
    fn read_only_command(&self, c: &SimpleCommand) -> Result<(), Option<String>> {
        if c.blocked {
            return Err(None);
        }
        let reads = match commands::read_only(&c.argv) {
            ReadOnly::Yes(reads) => reads,
            ReadOnly::No(why) => {
                return Err((!why.ends_with("is not in the built-in read-only set")).then_some(why))
            }
        };
        if c.argv.iter().any(|w| w.glob) {
            return Err(Some(
                "an unquoted pattern in a command's words can expand to file names that act as \
                 options"
                    .into(),
            ));
        }
        self.reads_inside(c, &reads)
    }

    /// `git` run somewhere other than the session's working directory (after a `cd`).
    fn git_elsewhere(&self, c: &SimpleCommand) -> bool {
        let is_git = c
            .argv
            .first()
            .is_some_and(|w| w.is_static() && w.text.rsplit('/').next() == Some("git"));
        let session_cwd = self.ctx.cwd_path();
        is_git && (c.cwd.unknown || c.cwd.dirs.iter().any(|d| *d != session_cwd))
    }

    fn reads_inside(&self, c: &SimpleCommand, reads: &Reads) -> Result<(), Option<String>> {
        let home = self.ctx.home_path();
        if reads.git && self.git_elsewhere(c) {
            // Repository configuration can run programs (fsmonitor, diff drivers, pagers): only
            // the session's own repository, found from its working directory, is trusted.
            return Err(Some(
                "`git` outside the session's working directory runs that repository's \
                 configured programs"
                    .into(),
            ));
        }
        let check = |w: &ShellWord| -> Result<(), Option<String>> {
            let wp = w.paths(&c.cwd, home);
            if wp.unknown || wp.paths.is_empty() {
                return Err(Some(format!(
                    "it reads `{}`, whose location is only known when it runs",
                    w.raw
                )));
            }
            for p in self.word_paths(&wp) {
                if !self.inside_workspace(&p) {
                    return Err(Some(format!(
                        "it reads `{}` outside the working directories",
                        p.target.as_deref().unwrap_or(&p.lexical).display()
                    )));
                }
            }
            Ok(())
        };
        for w in &reads.paths {
            check(w)?;
        }
        if reads.cwd {
            check(&ShellWord::literal("."))?;
        }
        Ok(())
    }

    /// acceptEdits: a file command (`mkdir touch rm rmdir mv cp sed -i`) whose every target and
    /// source is known and inside the workspace.
    fn accept_edits_command(&self, c: &SimpleCommand) -> bool {
        if c.blocked || !commands::accept_edits_command(&c.argv) {
            return false;
        }
        let home = self.ctx.home_path();
        let inside = |w: &ShellWord| {
            let paths = w.paths(&c.cwd, home);
            !paths.unknown
                && !paths.paths.is_empty()
                && self
                    .word_paths(&paths)
                    .iter()
                    .all(|p| self.inside_workspace(p))
        };
        commands::mutated_targets(&c.argv)
            .is_some_and(|t| !t.unknown && t.words.iter().all(inside) && t.reads.iter().all(inside))
    }

    /// The first part that deletes or rewrites a critical location.
    fn critical(&self, analysis: &Analysis) -> Option<PermissionDecision> {
        let home = self.ctx.home_path();
        let mut anchors: Vec<PathBuf> = self.ctx.workspace_dirs();
        anchors.truncate(1 + self.ctx.workspace_roots.len());
        for c in &analysis.commands {
            let Some(targets) = commands::mutated_targets(&c.argv) else {
                continue;
            };
            for w in &targets.deleted {
                let wp = w.paths(&c.cwd, home);
                if wp.unknown {
                    return Some(critical_decision(
                        &c.display(),
                        &format!(
                            "it deletes `{}`, whose location is only known when it runs (it \
                             could be `/`, the home directory or the working directory)",
                            w.raw
                        ),
                    ));
                }
                for raw in &wp.paths {
                    let cp = CheckedPath::new(raw, self.resolver);
                    for p in cp.both() {
                        // `dir/*` empties `dir`: as critical as deleting it.
                        if let Some(why) = critical_reason(p, home, &anchors, self.ci()) {
                            let what = if wp.glob_below {
                                format!("it deletes everything in `{}`: {why}", p.display())
                            } else {
                                format!("it deletes `{}`: {why}", w.text)
                            };
                            return Some(critical_decision(&c.display(), &what));
                        }
                    }
                }
            }
        }
        None
    }
}

fn protected(shown: &str, why: &str) -> PermissionDecision {
    decide(
        Decision::Ask,
        DecisionBasis::SensitivePath,
        format!(
            "the command writes `{shown}`, which is protected ({why}); that always needs \
             approval, in every mode"
        ),
    )
}

fn critical_decision(display: &str, what: &str) -> PermissionDecision {
    decide(
        Decision::Ask,
        DecisionBasis::CriticalPath,
        format!("`{display}` needs approval in every mode, whatever the rules say: {what}"),
    )
}

fn describe_rule(rule: &PermissionRule) -> String {
    format!("`{}` ({})", rule.text(), rule.source())
}

/// The words of a command that could name files: every argument except plain options, with the
/// value of `--opt=VALUE` and the words after `-o`-style options included (they may be paths).
fn candidate_path_words(argv: &[ShellWord]) -> Vec<ShellWord> {
    let mut out = Vec::new();
    for w in argv.iter().skip(1) {
        if w.is_static() && w.text.starts_with('-') && w.text.len() > 1 {
            if let Some((_, value)) = w.text.split_once('=') {
                out.push(ShellWord {
                    text: value.to_string(),
                    raw: value.to_string(),
                    ..w.clone()
                });
            } else if !w.text.starts_with("--") {
                // `-fFILE`: the attached value may be a path.
                let attached: String = w.text.chars().skip(2).collect();
                if !attached.is_empty() {
                    out.push(ShellWord {
                        text: attached.clone(),
                        raw: attached,
                        ..w.clone()
                    });
                }
            }
            continue;
        }
        out.push(w.clone());
    }
    out
}

/// What "allow always" would add for a command: `Bash(npm test:*)` for a command with a
/// subcommand, the exact command otherwise (never a blanket `Bash(rm:*)`).
fn suggest_command(c: &SimpleCommand) -> Option<String> {
    let text = &c.allow_texts.first()?.text;
    if text.contains('\n') || text.len() > 200 {
        return None;
    }
    if c.blocked {
        return Some(format!("Bash({text})"));
    }
    let first = c
        .argv
        .first()
        .filter(|w| w.is_static() && w.requoted() == w.text)?;
    // "Always allow" for a program that runs whatever it is handed (`sh`, `eval`, `python`…)
    // would approve any code; offer nothing rather than a trap.
    const RUNS_ANYTHING: &[&str] = &[
        "sh",
        "bash",
        "zsh",
        "dash",
        "ksh",
        "fish",
        "eval",
        "exec",
        "source",
        ".",
        "sudo",
        "doas",
        "su",
        "python",
        "python3",
        "node",
        "perl",
        "ruby",
        "php",
        "osascript",
        "xargs",
        "env",
    ];
    let name = first.text.rsplit('/').next().unwrap_or(&first.text);
    if RUNS_ANYTHING.contains(&name) || super::wrappers::RUNNERS.contains(&name) {
        return None;
    }
    if c.argv.iter().any(|w| !w.is_static()) {
        return None;
    }
    let subcommand_like = |w: &ShellWord| {
        w.is_static()
            && w.text.len() <= 30
            && w.text.starts_with(|ch: char| ch.is_ascii_lowercase())
            && w.text
                .chars()
                .all(|ch| ch.is_ascii_lowercase() || ch.is_ascii_digit() || ch == '-' || ch == '_')
    };
    Some(match c.argv.get(1) {
        None => format!("Bash({})", first.requoted()),
        Some(second) if subcommand_like(second) => {
            format!("Bash({} {}:*)", first.requoted(), second.text)
        }
        Some(_) => format!("Bash({text})"),
    })
}

/// Every place a path check should look at for the Bash command, for
/// [`paths_to_resolve`](super::paths_to_resolve).
pub(super) fn bash_paths(command: &str, cwd: &Path, home: Option<&Path>) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(a) = shell::analyze(command, cwd, home) {
        for r in &a.redirects {
            out.extend(r.target.paths(&r.cwd, home).paths);
        }
        for c in &a.commands {
            if let Some(t) = commands::mutated_targets(&c.argv) {
                for w in t.words.iter().chain(&t.reads) {
                    out.extend(w.paths(&c.cwd, home).paths);
                }
            }
            let words = match commands::read_only(&c.argv) {
                ReadOnly::Yes(reads) => reads.paths,
                ReadOnly::No(_) => Vec::new(),
            };
            for w in &words {
                out.extend(w.paths(&c.cwd, home).paths);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::{evaluate_permission, BashSandbox, PermissionContext, PermissionMode};
    use super::*;
    use crate::permissions::{RuleSet, RuleSource};
    use serde_json::json;

    fn ctx(allow: &[&str]) -> PermissionContext {
        let rules = RuleSet::from_lists(
            allow.iter().copied(),
            std::iter::empty(),
            std::iter::empty(),
            &RuleSource::new("test"),
        )
        .unwrap();
        PermissionContext::new("/w")
            .with_home("/home/u")
            .with_rules(rules)
            .with_case_insensitive_paths(false)
    }

    fn decision(c: &PermissionContext, command: &str) -> Decision {
        evaluate_permission("Bash", &json!({ "command": command }), c).decision
    }

    #[test]
    fn allow_rules_must_name_the_program_that_runs() {
        let c = ctx(&[
            "Bash(timeout:*)",
            "Bash(sudo:*)",
            "Bash(npx:*)",
            "Bash(strace:*)",
        ]);
        for cmd in [
            "timeout 5 rm -rf x",
            "sudo rm -rf x",
            "npx rimraf x",
            "strace -f rm x",
        ] {
            assert_eq!(decision(&c, cmd), Decision::Ask, "{cmd}");
        }
        let c = ctx(&[
            "Bash(timeout 5 make:*)",
            "Bash(npx prettier:*)",
            "Bash(make:*)",
            "Bash(sudo apt update)",
        ]);
        for cmd in [
            "timeout 5 make test",
            "timeout 9 make",
            "npx prettier --write src",
            "sudo apt update",
        ] {
            assert_eq!(decision(&c, cmd), Decision::Allow, "{cmd}");
        }
        // The rule's text has to match: it does not spell `--yes`.
        assert_eq!(decision(&c, "npx --yes prettier x"), Decision::Ask);
        let c = ctx(&["Bash(npx --yes prettier:*)"]);
        assert_eq!(decision(&c, "npx --yes prettier x"), Decision::Allow);
        let c = ctx(&["Bash(npx --yes:*)"]);
        assert_eq!(decision(&c, "npx --yes rimraf x"), Decision::Ask);
        assert_eq!(decision(&c, "npx eslint x"), Decision::Ask);
    }

    #[test]
    fn sandbox_auto_allow_approves_only_what_merely_needs_approval() {
        let sandbox = BashSandbox {
            active: true,
            auto_allow: true,
            excluded_commands: vec!["docker:*".into()],
            allow_unsandboxed: true,
        };
        let c = ctx(&[]).with_sandbox(sandbox.clone());
        let d = evaluate_permission("Bash", &json!({"command": "npm test"}), &c);
        assert_eq!(d.decision, Decision::Allow);
        assert_eq!(d.basis, DecisionBasis::Sandbox);
        // Excluded commands and calls that leave the sandbox are not approved by it.
        assert_eq!(decision(&c, "docker ps"), Decision::Ask);
        let d = evaluate_permission(
            "Bash",
            &json!({"command": "npm test", "dangerouslyDisableSandbox": true}),
            &c,
        );
        assert_eq!(d.decision, Decision::Ask);
        // Protected paths, critical paths and unanalysable commands still ask.
        assert_eq!(decision(&c, "echo x > .git/config"), Decision::Ask);
        assert_eq!(decision(&c, "rm -rf ~"), Decision::Ask);
        assert_eq!(decision(&c, "eval \"$X\""), Decision::Ask);
        // Leaving the sandbox is never approved by the mode, bypassPermissions included.
        let bypass = ctx(&[])
            .with_sandbox(sandbox.clone())
            .with_mode(PermissionMode::BypassPermissions);
        let d = evaluate_permission(
            "Bash",
            &json!({"command": "npm test", "dangerouslyDisableSandbox": true}),
            &bypass,
        );
        assert_eq!(d.decision, Decision::Ask, "{}", d.reason);
        assert!(d.reason.contains("dangerouslyDisableSandbox"));
        // Without allowUnsandboxedCommands the request is ignored: it runs sandboxed.
        let strict = ctx(&[]).with_sandbox(BashSandbox {
            allow_unsandboxed: false,
            ..sandbox
        });
        let d = evaluate_permission(
            "Bash",
            &json!({"command": "npm test", "dangerouslyDisableSandbox": true}),
            &strict,
        );
        assert_eq!(d.decision, Decision::Allow, "{}", d.reason);
        assert_eq!(d.basis, DecisionBasis::Sandbox);
    }

    #[test]
    fn bypass_still_asks_for_critical_and_unknown_targets() {
        let c = ctx(&[]).with_mode(PermissionMode::BypassPermissions);
        for cmd in [
            "rm -rf ~",
            "rm -rf \"$DIR\"/*",
            "rm -rf /usr",
            "rm -rf ..",
            "echo x > \"$F\"",
            "x='a[$(touch p)]'; echo $((x))",
        ] {
            assert_eq!(decision(&c, cmd), Decision::Ask, "{cmd}");
        }
        assert_eq!(decision(&c, "rm -rf build"), Decision::Allow);
    }
}
