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
//! Bash adds, before `bypassPermissions`: what a deny or ask rule *may* cover, critical paths,
//! parts robota cannot see into, and writes to places only known at run time — all "ask" in
//! every mode (see `bash`).
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
//!   `eval`/`trap`/`watch`/`su -c`/`flock -c` scripts and `find -exec`. Each must be approved (by
//!   an allow rule, the read-only set, or acceptEdits) for the command to be allowed; a deny or ask
//!   rule matching any part — or the whole text — applies, compared case-insensitively.
//! - **Fail closed.** Parts robota cannot see into are never approved — by any mode (bypass
//!   included) or allow rule (a bare `Bash` included): commands that do not parse, `eval`, `trap`,
//!   process substitution, a command name computed at run time, `$'…'` escapes, brace expansion
//!   in the name, `alias`/`enable`/`hash -p`, and **everything bash evaluates as arithmetic with a
//!   variable in it** — `(( x ))`, `$(( x ))`, `for ((…))`, `[[ a -eq b ]]`, `${s:x}`, `${a[x]}`,
//!   `${!x}`, `a[x]=…`, `let`, `declare -i`, `printf -v 'a[…]'`, `test -v`, `read 'a[…]'` —
//!   because an array subscript met during evaluation runs its `$(…)`, even when the text hides in
//!   a variable (`x='a[$(cmd)]'; echo $((x))`). Only `$name`, `${name}`, `${#name}` and the
//!   non-arithmetic operators (`${x:-w}`, `${x#p}`, `${x/a/b}`, …) over plain words are followed.
//! - **Wrappers** (`timeout`, `time`, `nice`, `nohup`, `stdbuf`, `command`, `builtin`, `exec`,
//!   `env`, `xargs`, `setsid`, `ionice`, `chrt`, `taskset`, `flock`, `busybox`, `coproc`, and —
//!   for deny rules only — `sudo` and `doas`) are parsed with their real options, `getopt_long`
//!   style: clusters (`xargs -tI grep rm` runs `rm`), attached values (`nice -n5`, `cp -tDIR`),
//!   `--` and `-NUM`. An option robota does not know, an abbreviated long option or a run-time
//!   word where an option could stand makes the wrapper opaque. An allow rule must name the
//!   program that really runs: its fixed prefix has to reach past the wrappers (`Bash(timeout:*)`
//!   and `Bash(sudo:*)` approve nothing by themselves). Programs that run programs but are not
//!   parsed (`strace`, `unshare`, `valgrind`, `cross-env`, …) are approved only by a rule that
//!   spells out the whole command, package runners (`npx`, `bunx`, `pnpx`, `uvx`) only by one
//!   that names the package, and deny rules are matched against every
//!   possible start of the program they run. `xargs` adds run-time words, so only `Bash(cmd:*)`
//!   style rules cover what it runs. `find -delete` needs what approves `rm -r` on its start
//!   paths; `find -fprint FILE` writes FILE.
//! - **Assignments.** Leading assignments are stripped for allow only for a fixed safe list
//!   (`NODE_ENV`, `RUST_LOG`, `CI`, `DEBUG`, `LANG`/`LC_*`, `TZ`, `NO_COLOR`, …) with static
//!   values; deny rules match past any. A stand-alone assignment to an upper-case variable
//!   (`PATH=…; ls`), or `printf -v PATH …`, is a part that needs approval; lower-case shell
//!   variables do not. An assignment to `CDPATH` makes later `cd name` locations unknown.
//! - **Read-only command set** (auto-approved in default mode, and all plan mode runs), by
//!   allowlist: `ls pwd cat head tail wc grep egrep fgrep rg echo printf cd true false which
//!   type whoami id uname date basename dirname realpath readlink file stat du df tree diff cmp
//!   find sort uniq cut tr nl test [ : break continue`, `command -v`, and `git status|diff|log|
//!   show|rev-parse|ls-files|blame` and listing forms of `git branch` — each with the options known
//!   to only read (`sort --compress-program`, `rg --pre`, `rg -L`, `grep -R`, `file -C`, `git diff
//!   --output`, `git -C/-c/--git-dir`, … are not among them, nor is any abbreviation). A read-only
//!   command is approved only when its words are fixed (no unquoted glob: `find *` can expand to
//!   a planted file named `-delete`; no run-time word where an option could stand), **every file
//!   it reads is inside the working directories** (cwd, workspace roots, additional directories;
//!   after links are resolved), its input redirections too (a computed `< $f` may be
//!   `/dev/tcp/…`), and `git` runs in the session's own working directory (another repository's
//!   configuration runs programs: fsmonitor, diff drivers, signature programs). Allow rules for
//!   `git …` do not reach other repositories either.
//! - **Reads and writes by Bash.** Output redirections (`>`, `>>`, `>|`, `<>`, `&>`, `>&file`,
//!   `N>file`, except `/dev/null`, `/dev/std*`, `/dev/tty`, `/dev/fd/*`) are Edit writes of their
//!   target; `/dev/tcp/…` and `/dev/udp/…` are network connections (never read-only). The file
//!   operands of `rm mv cp ln touch mkdir chmod chown chgrp truncate tee install unlink shred
//!   rmdir`, `sed -i`, `dd of=`, `find -delete`, `git config` (the config file) are writes, parsed
//!   with their real options. Read and Edit **deny and ask rules hold for Bash in every mode**:
//!   every word of every part that could name a file is checked (the read-only commands' known
//!   reads exactly); a computed word, a glob that may match, or a directory read recursively
//!   that may contain a covered file asks. A write whose target is only known at run time (a
//!   variable, a computed `cd`, options robota could not read) asks in every mode; in acceptEdits
//!   and bypassPermissions so does a redirection through a glob (it may expand to a planted link).
//!   `cd`/`pushd` are followed: a relative path may resolve in any directory the command may
//!   have changed to (every candidate must pass).
//! - **Critical paths** (always ask, in every mode, whatever the rules): deleting or rewriting
//!   wholesale (`rm`, `rmdir`, `unlink`, `shred`, `find -delete`, `mv` sources, recursive `chmod`/
//!   `chown`/`chgrp`) `/`, a top-level directory or one directly inside a system directory, the
//!   home directory or its ancestors, the working directory, a workspace root or their ancestors,
//!   everything inside one of those (`rm -rf *` in the cwd, `~/*`), or a target only known at run
//!   time (`rm -rf "$DIR"/*`).
//! - **acceptEdits + Bash** approves `mkdir`, `touch`, `rm`, `rmdir`, `mv`, `cp` and `sed -i` with
//!   a plain substitution script (as Claude Code does) when every word is fixed, the options are
//!   known, and every target and source is inside the workspace.
//! - **The sandbox.** When Bash runs inside the OS sandbox ([`BashSandbox::active`]) and
//!   `autoAllowBashIfSandboxed` is on, a command that would only ask because nothing approves it is
//!   approved ([`DecisionBasis::Sandbox`]); deny and ask rules, protected and critical paths and
//!   unanalysable commands still decide as without it. A call asking to leave the sandbox
//!   (`dangerouslyDisableSandbox: true`, honoured only with `allowUnsandboxedCommands`) is never
//!   approved by a mode, `bypassPermissions` included; [`BashSandbox::runs_sandboxed`] says
//!   whether a call runs inside (the Bash tool asks the same question).
//! - **Paths.** Tool paths are made absolute (cwd, `~`), `..` resolved after symlinks (a map of
//!   links is walked component by component). Rule anchors: `//abs`, `~/home`, `/…` = the rule
//!   source's `base_dir` (the project root for project settings; cwd when absent), `./…` = cwd, a
//!   bare relative pattern with a `/` = cwd for allow rules and **any depth below the cwd for deny
//!   and ask rules** (`Read(secrets/**)` covers `a/secrets/key`, as Claude Code's do), without a
//!   `/` = any depth (`.gitignore` style). A matching directory covers its contents; for allow
//!   rules only when the last segment is a literal name or `**`, so `Edit(./src/*)` does not reach
//!   `src/a/b`. `..` in a rule is an error. Paths compare case-insensitively when
//!   [`PermissionContext::case_insensitive_paths`] (default on macOS/Windows).
//! - **Rule families.** `Edit(...)` covers Edit, Write, MultiEdit, NotebookEdit; `Read(...)` covers
//!   Read, Glob, Grep, LS, NotebookRead, and a Read deny also denies edits. Rules written for one
//!   tool (`Write(...)`, `Grep(...)`) apply to that tool (TypeScript Robota wrote such rules).
//!   A bare `Read` deny also hides the editing tools.
//! - **Rule errors.** A rule that could never match is an error naming its file and position:
//!   spaces around a parameter's `:` (`Bash(timeout : 30)`, `WebFetch(domain: x)`), a parameter a
//!   Bash or file rule's tool does not have (`Bash(run_in_backgruond:true)`), a near-miss of a
//!   parameter name elsewhere (`Agent(modle:opus)`). `// …` strings in a list are comments:
//!   skipped, with a warning. `WebFetch(domain:*)` matches every host.
//! - **Unevaluable specifiers** (`mytool(x)` on a tool whose input robota cannot interpret): deny
//!   and ask apply to every call (fail closed), allow never matches; [`RuleSet::warnings`] reports
//!   them. `Name(*)` matches every call of any tool, argument-less ones included.
//! - **Sensitive paths** (writes always ask, in every mode; dontAsk denies): any path inside a
//!   `.git`, `.claude`, `.robota`, `.ssh`, `.gnupg`, `.vscode`, `.idea`, `.husky`, `.cargo`,
//!   `.devcontainer`, `.aws`, `.kube` or `.docker` directory; files named `.bashrc`,
//!   `.bash_profile`, `.bash_login`, `.bash_logout`, `.profile`, `.zshrc`, `.zprofile`, `.zshenv`,
//!   `.zlogin`, `.zlogout`, `.kshrc`, `.cshrc`, `.tcshrc`, `.inputrc`, `.gitconfig`,
//!   `.git-credentials`, `.gitmodules`, `.lfsconfig`, `.npmrc`, `.yarnrc`, `.yarnrc.yml`,
//!   `.pnpmrc`, `.pypirc`, `.netrc`, `.pre-commit-config.yaml`, `.pre-commit-hooks.yaml`,
//!   `.mcp.json`, `.envrc`; and the caller's [`PermissionContext::sensitive_paths`] (settings and
//!   hook files). Names compare case-insensitively. Allow rules and modes do not override this.
//! - **Suggestions** ("allow always"): `Bash(cmd sub:*)` when the second word looks like a
//!   subcommand, else the exact command; none for programs that run arbitrary code (`sh`,
//!   `python`, `eval`, `sudo`, …). `Edit(/dir/**)` anchored at the first workspace root (else the
//!   cwd), `Edit(//abs/dir/**)` outside it; `WebFetch(domain:host)`; an unknown tool's name. None
//!   for sensitive paths, ask rules or unanalysable commands.

mod bash;
mod commands;
mod context;
mod domain;
mod evaluate;
mod getopt;
mod glob;
mod mode;
mod path;
mod rule;
mod sandbox;
mod shell;
mod tools;
mod wrappers;

pub use context::{
    BashSandbox, Decision, DecisionBasis, MatchedRule, PermissionContext, PermissionDecision,
    ToolClass,
};
pub use evaluate::{evaluate_permission, evaluate_permission_with, paths_to_resolve, read_denied};
pub use mode::{PermissionMode, UnknownModeError};
pub use path::PathResolver;
pub use rule::{
    PermissionRule, RuleEntry, RuleFallback, RuleIssue, RuleList, RuleParseError, RuleSet,
    RuleSource,
};
