//! The inputs of an evaluation besides the tool call ([`PermissionContext`]) and its result
//! ([`PermissionDecision`]): owned, serde-serializable data the bindings map one-to-one.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::mode::PermissionMode;
use super::path::normalize;
use super::rule::{PermissionRule, RuleList, RuleSet, RuleSource};

/// How a tool the engine does not know by name (host tools, MCP tools, projected commands) is
/// treated by the modes. Unclassified tools count as [`ToolClass::Mutating`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ToolClass {
    /// Only reads: needs no approval, allowed in plan mode.
    ReadOnly,
    /// May change things: needs approval in default mode, denied in plan mode.
    Mutating,
}

/// Everything an evaluation needs besides the tool call. Pure data: the evaluator does no I/O,
/// so file-system facts (symlinks) come in here or through a
/// [`PathResolver`](super::PathResolver).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PermissionContext {
    /// The permission mode.
    #[serde(default)]
    pub mode: PermissionMode,
    /// Allow, ask and deny rules from every settings layer.
    #[serde(default)]
    pub rules: RuleSet,
    /// The session's working directory (absolute): `./` rules and relative tool paths resolve
    /// here.
    pub cwd: PathBuf,
    /// The user's home directory, for `~/` rules and `~` in tool paths.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub home: Option<PathBuf>,
    /// `permissions.additionalDirectories`: more directories `acceptEdits` may edit in.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub additional_directories: Vec<PathBuf>,
    /// The workspace roots (e.g. the project root when cwd is below it); `acceptEdits` may edit
    /// in them too.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub workspace_roots: Vec<PathBuf>,
    /// Known symbolic links: absolute link path → target (absolute, or relative to the link's
    /// directory). Used when no [`PathResolver`](super::PathResolver) is passed. A session would
    /// fill this for the paths [`paths_to_resolve`](super::paths_to_resolve) lists.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub symlinks: BTreeMap<PathBuf, PathBuf>,
    /// Files and directories that always need approval to write, on top of the built-in ones
    /// (`.git/`, `.claude/`, `.robota/`, …): the settings files in use and the hook scripts they
    /// reference.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sensitive_paths: Vec<PathBuf>,
    /// Classes of tools the engine does not know by name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tool_classes: BTreeMap<String, ToolClass>,
    /// Compare paths case-insensitively (macOS and Windows file systems usually are). Defaults to
    /// the platform's usual behaviour.
    #[serde(default = "default_case_insensitive")]
    pub case_insensitive_paths: bool,
    /// Isolated checkouts the session runs in (a subagent's git worktree under
    /// `.robota/worktrees/`). For a path inside one, the protected directory names (`.git/`,
    /// `.claude/`, `.robota/`, …) are looked for only below it, so the checkout's own files are
    /// not all "sensitive" because the checkout lives under `.robota/`; its `.git`, `.claude/`
    /// and `.robota/` entries and the `sensitive_paths` stay protected.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub isolated_roots: Vec<PathBuf>,
    /// Whether Bash commands run inside the OS sandbox, and what that lets the rules relax
    /// (Claude Code's `sandbox` settings). Off by default.
    #[serde(default)]
    pub sandbox: BashSandbox,
}

/// What the permission rules need to know about the OS sandbox Bash commands run in.
///
/// `active` is the sandbox's real state (enabled *and* working on this machine), not merely the
/// setting: a sandbox that is configured but unavailable relaxes nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
#[non_exhaustive]
pub struct BashSandbox {
    /// Bash commands run inside a working OS sandbox.
    pub active: bool,
    /// `autoAllowBashIfSandboxed`: a command that runs sandboxed and would only need approval
    /// because nothing approves it is approved. Deny and ask rules, protected and critical paths
    /// and commands robota cannot analyse still decide as without the sandbox.
    pub auto_allow: bool,
    /// `excludedCommands`: command patterns (Bash rule syntax, e.g. `docker:*`) that run outside
    /// the sandbox.
    pub excluded_commands: Vec<String>,
    /// `allowUnsandboxedCommands`: whether a call may ask to run outside the sandbox with
    /// `dangerouslyDisableSandbox: true` (it then needs approval like any unsandboxed command).
    pub allow_unsandboxed: bool,
}

fn default_case_insensitive() -> bool {
    cfg!(any(
        target_os = "macos",
        target_os = "ios",
        target_os = "windows"
    ))
}

impl PermissionContext {
    /// A context for `cwd` in `default` mode with no rules.
    pub fn new(cwd: impl Into<PathBuf>) -> PermissionContext {
        PermissionContext {
            mode: PermissionMode::Default,
            rules: RuleSet::new(),
            cwd: cwd.into(),
            home: None,
            additional_directories: Vec::new(),
            workspace_roots: Vec::new(),
            symlinks: BTreeMap::new(),
            sensitive_paths: Vec::new(),
            tool_classes: BTreeMap::new(),
            case_insensitive_paths: default_case_insensitive(),
            isolated_roots: Vec::new(),
            sandbox: BashSandbox::default(),
        }
    }

    /// Sets the mode.
    pub fn with_mode(mut self, mode: PermissionMode) -> Self {
        self.mode = mode;
        self
    }

    /// Sets the rules.
    pub fn with_rules(mut self, rules: RuleSet) -> Self {
        self.rules = rules;
        self
    }

    /// Sets the home directory.
    pub fn with_home(mut self, home: impl Into<PathBuf>) -> Self {
        self.home = Some(home.into());
        self
    }

    /// Adds a directory `acceptEdits` may edit in.
    pub fn with_additional_directory(mut self, dir: impl Into<PathBuf>) -> Self {
        self.additional_directories.push(dir.into());
        self
    }

    /// Adds a workspace root.
    pub fn with_workspace_root(mut self, dir: impl Into<PathBuf>) -> Self {
        self.workspace_roots.push(dir.into());
        self
    }

    /// Records a symbolic link.
    pub fn with_symlink(mut self, link: impl Into<PathBuf>, target: impl Into<PathBuf>) -> Self {
        self.symlinks.insert(link.into(), target.into());
        self
    }

    /// Adds a protected path.
    pub fn with_sensitive_path(mut self, path: impl Into<PathBuf>) -> Self {
        self.sensitive_paths.push(path.into());
        self
    }

    /// Classifies a tool the engine does not know by name.
    pub fn with_tool_class(mut self, tool: impl Into<String>, class: ToolClass) -> Self {
        self.tool_classes.insert(tool.into(), class);
        self
    }

    /// Adds an isolated checkout root (see [`PermissionContext::isolated_roots`]).
    pub fn with_isolated_root(mut self, dir: impl Into<PathBuf>) -> Self {
        self.isolated_roots.push(dir.into());
        self
    }

    /// Sets the Bash sandbox state.
    pub fn with_sandbox(mut self, sandbox: BashSandbox) -> Self {
        self.sandbox = sandbox;
        self
    }

    /// Sets case-insensitive path comparison.
    pub fn with_case_insensitive_paths(mut self, yes: bool) -> Self {
        self.case_insensitive_paths = yes;
        self
    }

    /// The directories `acceptEdits` may edit in: cwd, workspace roots and additional
    /// directories, absolute and normalised.
    pub(crate) fn workspace_dirs(&self) -> Vec<PathBuf> {
        let cwd = normalize(&self.cwd);
        let mut dirs = vec![cwd.clone()];
        for d in self
            .workspace_roots
            .iter()
            .chain(&self.additional_directories)
        {
            let d = normalize(&cwd.join(d));
            if !dirs.contains(&d) {
                dirs.push(d);
            }
        }
        dirs
    }

    pub(crate) fn cwd_path(&self) -> PathBuf {
        normalize(&self.cwd)
    }

    pub(crate) fn home_path(&self) -> Option<&Path> {
        self.home.as_deref()
    }
}

/// The outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    /// Run without asking.
    Allow,
    /// Ask the user (or the host's permission handler).
    Ask,
    /// Do not run; the reason is shown to the model.
    Deny,
}

/// What the decision rests on, for UIs and logs that want more than the prose reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum DecisionBasis {
    /// A rule matched (see `matched_rule`).
    Rule,
    /// The permission mode decided (plan forbids, acceptEdits or bypassPermissions approves).
    Mode,
    /// The tool or command only reads.
    ReadOnly,
    /// The tool never needs approval (subagents, the todo list, asking the user…).
    NoApprovalNeeded,
    /// The call writes a protected path (`.git/`, `.claude/`, settings, hooks…).
    SensitivePath,
    /// The command could not be analysed completely, so it is never approved automatically.
    Unanalyzable,
    /// `dontAsk` mode turned an "ask" into a denial.
    DontAsk,
    /// The command deletes or rewrites a critical location (`/`, the home directory, a system
    /// directory, the working directory or one of its parents): always asked, in every mode.
    CriticalPath,
    /// The command runs inside the OS sandbox and `autoAllowBashIfSandboxed` approves it.
    Sandbox,
    /// Nothing approves the call, so it needs approval.
    NeedsApproval,
}

/// Which rule matched and where it came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct MatchedRule {
    /// The rule as written.
    pub rule: String,
    /// Its list.
    pub list: RuleList,
    /// Its index in that list (in its settings file).
    pub index: usize,
    /// Where it came from.
    pub source: RuleSource,
}

impl From<&PermissionRule> for MatchedRule {
    fn from(rule: &PermissionRule) -> Self {
        MatchedRule {
            rule: rule.text().to_string(),
            list: rule.list(),
            index: rule.index(),
            source: rule.source().clone(),
        }
    }
}

/// The answer for one tool call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PermissionDecision {
    /// Allow, ask or deny.
    pub decision: Decision,
    /// What the decision rests on.
    pub basis: DecisionBasis,
    /// The rule that decided, if one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matched_rule: Option<MatchedRule>,
    /// Why, in words a user (and the model, for a denial) can act on.
    pub reason: String,
    /// Rules that "allow always" would add to approve calls like this one (empty when such a
    /// rule would not help, e.g. for sensitive paths or ask rules).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub suggested_rules: Vec<String>,
}

impl PermissionDecision {
    pub(crate) fn new(decision: Decision, basis: DecisionBasis, reason: impl Into<String>) -> Self {
        PermissionDecision {
            decision,
            basis,
            matched_rule: None,
            reason: reason.into(),
            suggested_rules: Vec::new(),
        }
    }

    pub(crate) fn with_rule(mut self, rule: &PermissionRule) -> Self {
        self.matched_rule = Some(rule.into());
        self
    }

    pub(crate) fn with_suggestions(mut self, rules: Vec<String>) -> Self {
        self.suggested_rules = rules;
        self
    }
}
