//! What robota knows about individual shell commands: the built-in read-only set that needs no
//! approval (and is all plan mode may run), the commands that create, change or delete the files
//! they name (checked against sensitive paths and Edit deny rules), and the file commands
//! `acceptEdits` approves inside the workspace (`mkdir`, `touch`, `mv`, `cp`, as in Claude Code).

use super::shell::ShellWord;

/// Commands that only read and print. Each entry's options are screened by [`is_read_only`] so
/// that a writing or command-running option (`find -delete`, `rg --pre`, `sort -o`, `git diff
/// --output`) takes the command out of the set.
const READ_ONLY: &[&str] = &[
    "ls", "pwd", "cat", "head", "tail", "wc", "grep", "egrep", "fgrep", "rg", "echo", "printf",
    "cd", "true", "false", "which", "whoami", "id", "uname", "date", "basename", "dirname",
    "realpath", "readlink", "file", "stat", "du", "df", "tree", "diff", "cmp", "find", "sort",
    "uniq", "cut", "tr", "nl", "test", "[", "command", "type", "git", ":", "break", "continue",
];

/// Git subcommands that only read the repository.
const GIT_READ_ONLY: &[&str] = &[
    "status",
    "diff",
    "log",
    "show",
    "rev-parse",
    "ls-files",
    "blame",
];

/// Whether the command (wrappers already stripped, name static) is in the built-in read-only set.
pub(crate) fn is_read_only(argv: &[ShellWord]) -> bool {
    let Some(name) = argv
        .first()
        .filter(|w| w.is_static())
        .map(|w| w.text.as_str())
    else {
        return false;
    };
    if !READ_ONLY.contains(&name) {
        return false;
    }
    let args: Vec<&str> = argv[1..].iter().map(|w| w.text.as_str()).collect();
    let has = |opts: &[&str]| {
        args.iter().any(|a| {
            opts.iter()
                .any(|o| a == o || (o.starts_with("--") && a.starts_with(&format!("{o}="))))
        })
    };
    match name {
        "find" => !has(&[
            "-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf",
            "-fls",
        ]),
        "rg" => !args.iter().any(|a| a.starts_with("--pre")),
        "sort" => !has(&["-o", "--output"]) && !args.iter().any(|a| is_short_cluster(a, 'o')),
        // `uniq IN OUT` writes OUT.
        "uniq" => args.iter().filter(|a| !a.starts_with('-')).count() <= 1,
        "tree" => !has(&["-o"]),
        "date" => !has(&["-s", "--set"]) && !args.iter().any(|a| is_short_cluster(a, 's')),
        // `command -v x` / `type x` only look a name up; `command x` runs x (it is a wrapper).
        "command" => matches!(args.first(), Some(&"-v") | Some(&"-V")),
        "git" => {
            let Some(sub) = args.first() else {
                return false;
            };
            let read_sub = GIT_READ_ONLY.contains(sub)
                || (*sub == "branch"
                    && args[1..].iter().all(|a| {
                        matches!(*a, "--show-current" | "-a" | "-r" | "-v" | "-vv" | "--list")
                    }));
            // `--output` writes a file; `--ext-diff` / `-c` run configured programs.
            read_sub && !has(&["--output", "--ext-diff", "--textconv"])
        }
        _ => true,
    }
}

/// `-xo`-style clusters of short options containing `letter`.
fn is_short_cluster(arg: &str, letter: char) -> bool {
    arg.len() > 1
        && arg.starts_with('-')
        && !arg.starts_with("--")
        && arg[1..].chars().all(|c| c.is_ascii_alphabetic())
        && arg[1..].contains(letter)
}

/// Commands that change the files they name.
const MUTATORS: &[&str] = &[
    "rm", "rmdir", "unlink", "shred", "mv", "cp", "ln", "install", "touch", "mkdir", "chmod",
    "chown", "chgrp", "truncate", "tee", "sed", "gsed", "dd", "find",
];

/// The file arguments of a command that changes files, or `None` when the command is not one.
/// Conservative: every non-option argument counts (a mode such as `755` or a sed script resolves
/// to a harmless path), and `--opt=VALUE` values count too.
pub(crate) fn mutated_targets(argv: &[ShellWord]) -> Option<Vec<ShellWord>> {
    let name = argv.first().filter(|w| w.is_static())?.text.as_str();
    let name = name.rsplit('/').next().unwrap_or(name);
    if !MUTATORS.contains(&name) {
        return None;
    }
    let args = &argv[1..];
    match name {
        // `sed` only writes with `-i` / `--in-place`, and its script is not a file.
        "sed" | "gsed" => return sed_targets(args),
        // `dd` writes the `of=` operand.
        "dd" => {
            let targets = args
                .iter()
                .filter_map(|w| {
                    w.text.strip_prefix("of=").map(|t| ShellWord {
                        text: t.to_string(),
                        raw: w.raw.clone(),
                        ..w.clone()
                    })
                })
                .collect();
            return Some(targets);
        }
        // `find` changes files only with `-delete`; the start paths are what it deletes from.
        "find" => {
            if !args.iter().any(|w| w.text == "-delete") {
                return None;
            }
            let starts = args
                .iter()
                .take_while(|w| !w.text.starts_with(['-', '(', '!']))
                .cloned()
                .collect::<Vec<_>>();
            return Some(if starts.is_empty() {
                vec![ShellWord::literal(".")]
            } else {
                starts
            });
        }
        _ => {}
    }
    let mut targets = Vec::new();
    let mut options_done = false;
    for w in args {
        if !options_done && w.is_static() && w.text == "--" {
            options_done = true;
            continue;
        }
        if !options_done && w.text.starts_with('-') && w.text.len() > 1 {
            if let Some((_, value)) = w.text.split_once('=') {
                targets.push(ShellWord {
                    text: value.to_string(),
                    ..w.clone()
                });
            }
            continue;
        }
        targets.push(w.clone());
    }
    Some(targets)
}

/// The files `sed` edits in place: its operands, minus the script (the first operand unless
/// `-e`/`-f` gave it). `None` without `-i`.
fn sed_targets(args: &[ShellWord]) -> Option<Vec<ShellWord>> {
    // `-i`, `-i.bak`, `-Ei`, `--in-place=…`; over-detecting (e.g. `-es/i/x/`) only costs a check.
    let in_place = args.iter().any(|w| {
        w.text.starts_with("--in-place")
            || (w.text.starts_with('-') && !w.text.starts_with("--") && w.text.contains('i'))
    });
    if !in_place {
        return None;
    }
    let mut targets = Vec::new();
    let mut script_given = false;
    let mut script_skipped = false;
    let mut i = 0;
    while let Some(w) = args.get(i) {
        let t = w.text.as_str();
        i += 1;
        match t {
            "-e" | "--expression" | "-f" | "--file" => {
                script_given = true;
                i += 1;
            }
            "-l" | "--line-length" => i += 1,
            _ if t.starts_with("--expression=") || t.starts_with("--file=") => script_given = true,
            _ if (t.starts_with("-e") || t.starts_with("-f")) && t.len() > 2 => script_given = true,
            _ if t.starts_with('-') && t.len() > 1 => {}
            _ if !script_given && !script_skipped => script_skipped = true,
            _ => targets.push(w.clone()),
        }
    }
    Some(targets)
}

/// The file commands `acceptEdits` approves when every target is inside the workspace.
pub(crate) fn is_accept_edits_command(argv: &[ShellWord]) -> bool {
    argv.first()
        .filter(|w| w.is_static())
        .is_some_and(|w| matches!(w.text.as_str(), "mkdir" | "touch" | "mv" | "cp"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(s: &str) -> Vec<ShellWord> {
        s.split(' ').map(ShellWord::literal).collect()
    }

    #[test]
    fn read_only_set() {
        assert!(is_read_only(&argv("ls -la")));
        assert!(is_read_only(&argv("git status")));
        assert!(is_read_only(&argv("git log --oneline")));
        assert!(!is_read_only(&argv("git push")));
        assert!(!is_read_only(&argv("git diff --output=x")));
        assert!(!is_read_only(&argv("find . -delete")));
        assert!(!is_read_only(&argv("find . -exec rm {} ;")));
        assert!(!is_read_only(&argv("rg --pre cat x")));
        assert!(!is_read_only(&argv("sort -o out in")));
        assert!(!is_read_only(&argv("uniq a b")));
        assert!(!is_read_only(&argv("LS")));
        assert!(!is_read_only(&argv("lsof")));
        assert!(is_read_only(&argv("command -v rm")));
        assert!(!is_read_only(&argv("git")));
    }

    #[test]
    fn mutators() {
        let t = |s: &str| {
            mutated_targets(&argv(s)).map(|v| v.into_iter().map(|w| w.text).collect::<Vec<_>>())
        };
        assert_eq!(t("rm -rf .git"), Some(vec![".git".to_string()]));
        assert_eq!(
            t("cp -t dst a"),
            Some(vec!["dst".to_string(), "a".to_string()])
        );
        assert_eq!(
            t("cp --target-directory=d a"),
            Some(vec!["d".to_string(), "a".to_string()])
        );
        assert_eq!(t("sed s/a/b/ f"), None);
        assert_eq!(t("sed -i s/.git/x/ f"), Some(vec!["f".to_string()]));
        assert_eq!(
            t("sed -i -e s/a/b/ f g"),
            Some(vec!["f".to_string(), "g".to_string()])
        );
        assert_eq!(t("dd if=a of=b"), Some(vec!["b".to_string()]));
        assert_eq!(t("find .git -delete"), Some(vec![".git".to_string()]));
        assert_eq!(t("find . -name x"), None);
        assert_eq!(t("ls"), None);
        assert_eq!(t("/bin/rm x"), Some(vec!["x".to_string()]));
    }
}
