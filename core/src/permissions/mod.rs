//! Permission rules and their evaluation — pure functions, no I/O.
//!
//! [`evaluate_permission`] answers allow / ask / deny for one tool call, from the permission
//! [mode](PermissionMode), the allow/ask/deny [rules](RuleSet) of every settings layer (Claude
//! Code's `Tool` / `Tool(specifier)` grammar), and the session's directories. The answer names the
//! rule that decided and the settings file it came from, says why in words, and lists what
//! "allow always" would add.
//!
//! Compatibility target: Claude Code's permission rules (`reference/agent-sdks.md` §6), without
//! the TypeScript Robota gate's weaknesses (no compound splitting, `Name(*)` never matching
//! argument-less tools, raw-string path matching). The file system is never touched: symlinks
//! come from [`PermissionContext::symlinks`] or a caller-implemented [`PathResolver`], and
//! [`paths_to_resolve`] lists the paths worth resolving.
//!
//! # Order
//!
//! For every tool: deny rules → plan mode's ban on changes → ask rules → sensitive paths →
//! `bypassPermissions` → `acceptEdits` → allow rules → what needs no approval → ask; `dontAsk`
//! then turns "ask" into "deny". Deny beats ask beats allow whatever their order or specificity.
//!
//! # Decisions where the contract is silent
//!
//! - **Modes.** Trust aliases follow TypeScript Robota's `TRUST_TO_MODE` (spec 001): `safe` →
//!   `plan`, `moderate` → `default`, `full` → `acceptEdits`; `manual` → `default`. Nothing maps to
//!   `bypassPermissions`. `auto` is rejected (no classifier). Plan mode is checked before ask
//!   rules and beats allow rules: it denies edits, non-read-only commands and unclassified tools.
//! - **Tools.** Read/Glob/Grep/LS need no approval; Agent/Task, TodoWrite, AskUserQuestion and
//!   similar session tools neither. WebFetch and WebSearch ask by default (Claude Code's choice;
//!   TypeScript Robota auto-approved them) because they send data off the machine. Unknown tools
//!   (MCP, host tools, `robota_command_*`) ask, and are denied in plan mode, unless the host
//!   classifies them [`ToolClass::ReadOnly`]. Tool names are case-sensitive (`READ` is an unknown
//!   tool); a rule naming a built-in tool in the wrong case is a parse error.
//! - **Bash splitting** uses `brush-parser` (MIT; a bash-compatible parser). Every simple command
//!   is found through `&&`, `||`, `;`, `|`, `|&`, `&`, newlines, subshells, groups, `if`/`for`/
//!   `while`/`case`, function bodies, `$(…)`, backticks, here-strings, `bash|sh|zsh … -c '…'`,
//!   `eval`/`trap`/`watch`/`su -c` scripts and `find -exec`. Each must be allowed (by a rule, the
//!   read-only set, or acceptEdits) for the command to be allowed; a deny or ask rule matching any
//!   part — or the whole text — applies, compared case-insensitively.
//! - **Never auto-approved** (always "ask"): commands that do not parse, and commands with parts
//!   robota cannot see into (`eval`, `trap`, process substitution, a command name computed at run
//!   time, `$'…'` escapes, brace expansion in the name, substitutions inside `${…}`/arithmetic or
//!   an unquoted here-document, `env -S`). This holds in `bypassPermissions` too. Only an explicit
//!   bare `Bash`/`Bash(*)` allow approves them, and only when no narrower Bash deny/ask rule exists.
//! - **Wrappers** stripped for allow and deny: `timeout`, `time`, `nice`, `nohup`, `stdbuf`,
//!   `command` (not `command -v`), `builtin`, `noglob`, `exec`, `env` (with its assignments) and
//!   `xargs` with its options. Deny rules also see through `sudo`, `doas`, `setsid`, `coproc`,
//!   `busybox` and a command path (`/bin/rm` is `rm`); allow rules must name those. Unknown options
//!   make a wrapper unrecognised (it is then matched as written).
//! - **Assignments.** Leading assignments are stripped for allow only for a fixed safe list
//!   (`NODE_ENV`, `RUST_LOG`, `CI`, `DEBUG`, `LANG`/`LC_*`, `TZ`, `NO_COLOR`, …) with static
//!   values; deny rules match past any. A stand-alone assignment to an upper-case variable
//!   (`PATH=…; ls`) is a part that needs approval; lower-case shell variables do not.
//! - **Read-only command set** (auto-approved, and all plan mode runs): `ls pwd cat head tail wc
//!   grep egrep fgrep rg echo printf cd true false which whoami id uname date basename dirname
//!   realpath readlink file stat du df tree diff cmp find sort uniq cut tr nl test [ type`,
//!   `command -v`, and `git status|diff|log|show|rev-parse|ls-files|blame` and listing forms of
//!   `git branch` — each screened for writing or program-running options (`find -exec/-delete`,
//!   `rg --pre`, `sort -o`, `git --output/--ext-diff`, `date -s`, …). A read-only command whose
//!   file arguments a Read deny rule covers is not auto-approved.
//! - **Writes by Bash.** Output redirections (`>`, `>>`, `>|`, `<>`, `&>`, `>&file`, `N>file`,
//!   except `/dev/null`, `/dev/std*`, `/dev/tty`, `/dev/fd/*`) are Edit writes of their target:
//!   Edit/Read deny and Edit ask rules apply, acceptEdits approves them inside the workspace, an
//!   `Edit(...)` allow rule approves them, else they ask — also when `Bash` itself is allowed.
//!   Input redirections are checked against Read deny rules. The file operands of `rm mv cp ln
//!   touch mkdir chmod chown truncate tee install unlink shred rmdir`, `sed -i`, `dd of=` and
//!   `find -delete` are checked against deny/ask rules and sensitive paths. `cd`/`pushd` are
//!   followed: a relative path may resolve in any directory the command may have changed to
//!   (every candidate must pass), and after a computed `cd` its location is unknown (never
//!   approved by path; protected names are still recognised).
//! - **acceptEdits + Bash** approves `mkdir`, `touch`, `mv`, `cp` (as Claude Code) when every
//!   operand is known and inside the workspace (cwd, workspace roots, additional directories).
//! - **Paths.** Tool paths are made absolute (cwd, `~`), `..` resolved after symlinks (a map of
//!   links is walked component by component). Rule anchors: `//abs`, `~/home`, `/…` = the rule
//!   source's `base_dir` (the project root for project settings; cwd when absent), `./…` = cwd, a
//!   bare relative pattern with a `/` = cwd, without one = any depth below cwd (`.gitignore`
//!   style). A matching directory covers its contents; for allow rules only when the last
//!   segment is a literal name or `**`, so `Edit(./src/*)` does not reach `src/a/b`. `..` in a
//!   rule is an error. Paths compare case-insensitively when
//!   [`PermissionContext::case_insensitive_paths`] (default on macOS/Windows).
//! - **Rule families.** `Edit(...)` covers Edit, Write, MultiEdit, NotebookEdit; `Read(...)` covers
//!   Read, Glob, Grep, LS, NotebookRead, and a Read deny also denies edits. Rules written for one
//!   tool (`Write(...)`, `Grep(...)`) apply to that tool (TypeScript Robota wrote such rules).
//!   A bare `Read` deny also hides the editing tools.
//! - **Unevaluable specifiers** (`mytool(x)` on a tool whose input robota cannot interpret): deny
//!   and ask apply to every call (fail closed), allow never matches; [`RuleSet::warnings`] reports
//!   them. `Name(*)` matches every call of any tool, argument-less ones included.
//! - **Sensitive paths** (writes always ask, in every mode; dontAsk denies): any path inside a
//!   `.git`, `.claude`, `.robota` or `.ssh` directory; files named `.bashrc`, `.bash_profile`,
//!   `.bash_login`, `.bash_logout`, `.profile`, `.zshrc`, `.zprofile`, `.zshenv`, `.zlogin`,
//!   `.gitconfig`, `.git-credentials`, `.mcp.json`, `.envrc`; and the caller's
//!   [`PermissionContext::sensitive_paths`] (settings and hook files). Names compare
//!   case-insensitively. Allow rules do not override this.
//! - **Suggestions** ("allow always"): `Bash(cmd sub:*)` when the second word looks like a
//!   subcommand, else the exact command; none for programs that run arbitrary code (`sh`,
//!   `python`, `eval`, `sudo`, …). `Edit(/dir/**)` anchored at the first workspace root (else the
//!   cwd), `Edit(//abs/dir/**)` outside it; `WebFetch(domain:host)`; an unknown tool's name. None
//!   for sensitive paths, ask rules or unanalysable commands.

mod commands;
mod context;
mod domain;
mod evaluate;
mod glob;
mod mode;
mod path;
mod rule;
mod sandbox;
mod shell;
mod tools;

pub use context::{
    BashSandbox, Decision, DecisionBasis, MatchedRule, PermissionContext, PermissionDecision,
    ToolClass,
};
pub use evaluate::{evaluate_permission, evaluate_permission_with, paths_to_resolve, read_denied};
pub use mode::{PermissionMode, UnknownModeError};
pub use path::PathResolver;
pub use rule::{PermissionRule, RuleEntry, RuleList, RuleParseError, RuleSet, RuleSource};
