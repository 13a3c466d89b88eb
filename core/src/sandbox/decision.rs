//! Whether one Bash call runs inside the sandbox: the pure decision shared by the Bash tool (which
//! starts the process) and the permission engine (which relaxes approval only for calls that
//! really run sandboxed).
//!
//! A call runs sandboxed when the sandbox is active, the command is not excluded
//! (`excludedCommands`), and it did not ask to run outside (`dangerouslyDisableSandbox: true`
//! while `allowUnsandboxedCommands` is on; with that setting off the request is ignored).
//!
//! Exclusion fails closed: a command is excluded only when every simple command in it (split at
//! `&&`, `||`, `;`, `|`, `&` and newlines outside quotes) matches an `excludedCommands` pattern
//! and it contains no command or process substitution (`$(…)`, backticks, `<(…)`, `>(…)`)
//! anywhere. Anything else stays sandboxed.

/// What [`runs_sandboxed`] needs to know about the session's sandbox.
#[derive(Debug, Clone, Copy, Default)]
pub struct SandboxRules<'a> {
    /// The sandbox is enabled and works on this machine.
    pub active: bool,
    /// `excludedCommands` patterns, in Bash rule syntax (`docker:*`, `git push *`, `make test`).
    pub excluded_commands: &'a [String],
    /// `allowUnsandboxedCommands`: `dangerouslyDisableSandbox: true` is honoured.
    pub allow_unsandboxed: bool,
}

/// Whether `command` runs inside the OS sandbox. `disable_requested` is the call's
/// `dangerouslyDisableSandbox` input.
pub fn runs_sandboxed(command: &str, disable_requested: bool, rules: SandboxRules<'_>) -> bool {
    if !rules.active {
        return false;
    }
    if disable_requested && rules.allow_unsandboxed {
        return false;
    }
    !is_excluded(command, rules.excluded_commands)
}

/// Whether every part of `command` matches one of `patterns` (see the module docs).
pub fn is_excluded(command: &str, patterns: &[String]) -> bool {
    if patterns.is_empty() || has_substitution(command) {
        return false;
    }
    let Some(parts) = split_simple_commands(command) else {
        return false;
    };
    !parts.is_empty()
        && parts.iter().all(|part| {
            patterns
                .iter()
                .any(|pattern| pattern_matches(pattern, part))
        })
}

fn has_substitution(command: &str) -> bool {
    command.contains("$(")
        || command.contains('`')
        || command.contains("<(")
        || command.contains(">(")
}

/// The simple commands of `command`, split at control operators outside quotes. `None` when the
/// quoting is unbalanced.
fn split_simple_commands(command: &str) -> Option<Vec<String>> {
    let mut parts = Vec::new();
    let mut current = String::new();
    let mut chars = command.chars().peekable();
    let mut quote: Option<char> = None;
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some('\''), '\'') => {
                quote = None;
                current.push(c);
            }
            (Some('\''), _) => current.push(c),
            (Some('"'), '"') => {
                quote = None;
                current.push(c);
            }
            (Some(_), '\\') | (None, '\\') => {
                current.push(c);
                if let Some(next) = chars.next() {
                    if next == '\n' {
                        current.pop();
                    } else {
                        current.push(next);
                    }
                }
            }
            (Some(_), _) => current.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                current.push(c);
            }
            (None, ';' | '\n' | '&' | '|') => {
                // `&&`, `||`, `|&` are one operator; `>&`/`<&`/`&>` are redirections.
                if c == '&' && (current.ends_with('>') || current.ends_with('<')) {
                    current.push(c);
                    continue;
                }
                if c == '&' && chars.peek() == Some(&'>') {
                    current.push(c);
                    continue;
                }
                if matches!(chars.peek(), Some('&' | '|')) && c != ';' && c != '\n' {
                    chars.next();
                }
                push_part(&mut parts, &mut current);
            }
            (None, _) => current.push(c),
        }
    }
    if quote.is_some() {
        return None;
    }
    push_part(&mut parts, &mut current);
    Some(parts)
}

fn push_part(parts: &mut Vec<String>, current: &mut String) {
    let part = current.split_whitespace().collect::<Vec<_>>().join(" ");
    if !part.is_empty() {
        parts.push(part);
    }
    current.clear();
}

/// Claude Code's Bash rule patterns: `prefix:*` (the command or the command followed by
/// arguments), `*` wildcards (a trailing ` *` also matches the bare command), else the exact
/// command. Whitespace runs count as one space.
pub(crate) fn pattern_matches(pattern: &str, command: &str) -> bool {
    let pattern = pattern.split_whitespace().collect::<Vec<_>>().join(" ");
    if pattern.is_empty() {
        return false;
    }
    if let Some(prefix) = pattern.strip_suffix(":*") {
        let prefix = prefix.trim_end();
        return command == prefix
            || command
                .strip_prefix(prefix)
                .is_some_and(|rest| rest.starts_with(' '));
    }
    if !pattern.contains('*') {
        return command == pattern;
    }
    if let Some(bare) = pattern.strip_suffix(" *") {
        if !bare.contains('*') && command == bare {
            return true;
        }
    }
    wildcard_match(&pattern, command)
}

/// `*` matches any run of characters (including none); everything else is literal.
fn wildcard_match(pattern: &str, text: &str) -> bool {
    let pieces: Vec<&str> = pattern.split('*').collect();
    let Some((first, rest)) = pieces.split_first() else {
        return false;
    };
    let Some(mut remaining) = text.strip_prefix(first) else {
        return false;
    };
    let Some((last, middle)) = rest.split_last() else {
        return remaining.is_empty();
    };
    for piece in middle {
        match remaining.find(piece) {
            Some(at) => remaining = &remaining[at + piece.len()..],
            None => return false,
        }
    }
    remaining.len() >= last.len() && remaining.ends_with(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(excluded: &[String]) -> SandboxRules<'_> {
        SandboxRules {
            active: true,
            excluded_commands: excluded,
            allow_unsandboxed: true,
        }
    }

    #[test]
    fn patterns() {
        assert!(pattern_matches("docker:*", "docker"));
        assert!(pattern_matches("docker:*", "docker ps -a"));
        assert!(!pattern_matches("docker:*", "dockerd"));
        assert!(pattern_matches("git push *", "git push origin main"));
        assert!(pattern_matches("git push *", "git push"));
        assert!(!pattern_matches("git push *", "git pull"));
        assert!(pattern_matches("make test", "make test"));
        assert!(!pattern_matches("make test", "make test2"));
        assert!(pattern_matches("npm * --watch", "npm run dev --watch"));
        assert!(!pattern_matches("", "ls"));
    }

    #[test]
    fn exclusion_fails_closed() {
        let excluded = vec!["docker:*".to_string()];
        assert!(!runs_sandboxed("docker ps", false, rules(&excluded)));
        assert!(!runs_sandboxed(
            "docker ps && docker images",
            false,
            rules(&excluded)
        ));
        assert!(runs_sandboxed(
            "docker ps && rm -rf x",
            false,
            rules(&excluded)
        ));
        assert!(runs_sandboxed("docker ps; curl x", false, rules(&excluded)));
        assert!(runs_sandboxed("docker ps | sh", false, rules(&excluded)));
        assert!(runs_sandboxed("docker $(rm x)", false, rules(&excluded)));
        assert!(runs_sandboxed("docker `rm x`", false, rules(&excluded)));
        assert!(runs_sandboxed("docker ps\nrm x", false, rules(&excluded)));
        assert!(runs_sandboxed(
            "docker 'unbalanced",
            false,
            rules(&excluded)
        ));
        // Operators inside quotes do not split.
        assert!(!runs_sandboxed(
            "docker run 'a && b'",
            false,
            rules(&excluded)
        ));
        assert!(!runs_sandboxed("docker ps 2>&1", false, rules(&excluded)));
        assert!(runs_sandboxed("ls", false, rules(&excluded)));
    }

    #[test]
    fn disable_request_needs_the_setting() {
        let mut r = rules(&[]);
        assert!(!runs_sandboxed("ls", true, r));
        r.allow_unsandboxed = false;
        assert!(runs_sandboxed("ls", true, r));
        r.active = false;
        assert!(!runs_sandboxed("ls", false, r));
    }
}
