//! Commands that run another command (`timeout 5 make`, `env X=1 npm test`, `sudo -u root apt`,
//! `xargs grep`, `setsid -f server`): each one's options parsed exactly as the program parses
//! them, so the engine finds the command that really runs.
//!
//! Fail closed: a known wrapper with an option robota cannot read (unknown, abbreviated,
//! computed at run time) is reported [`Wrapper::Opaque`], never guessed past — `xargs -tI grep rm`
//! runs `rm`, not `grep`. Programs that run other programs but are not parsed here (`strace`,
//! `unshare`, `valgrind`, …) are [`RUNNERS`]: an allow rule has to spell out their whole command.

use super::getopt::{self, Arg, OptSpec, Parsed};
use super::shell::ShellWord;

use Arg::{None as F, Optional as O, Required as R};

/// What a wrapper at the start of a command means for the words after it.
#[derive(Debug)]
pub(crate) enum Wrapper {
    /// Not a wrapper.
    None,
    /// A wrapper; the wrapped command starts `skip` words later.
    Stripped(Stripped),
    /// A wrapper used in a way whose payload cannot be known (`env -S '…'`, an unknown option),
    /// with an optional script to analyse anyway so deny rules see it.
    Opaque(String, Option<String>),
}

/// A recognised wrapper.
#[derive(Debug, Default)]
pub(crate) struct Stripped {
    pub skip: usize,
    /// Only deny rules see through it (`sudo`, `doas`): an allow rule must name the wrapper and
    /// the command it runs.
    pub deny_only: bool,
    /// `env` assignments that may change what runs (`PATH=…`, `LD_PRELOAD=…`), as written.
    pub unsafe_assignments: Vec<String>,
    /// The wrapped command runs in another directory (`env -C DIR`, `sudo -D DIR`).
    pub chdir: Option<ShellWord>,
    /// The wrapped command gets more arguments at run time (`xargs`).
    pub extra_arguments: bool,
    /// Files the wrapper itself writes (`time -o FILE`, `flock FILE`).
    pub writes: Vec<ShellWord>,
}

/// Programs that run other programs and are not parsed here. An allow rule must match their
/// whole command line (a prefix rule such as `Bash(strace:*)` approves nothing), and deny rules
/// are matched against every possible start of the wrapped command.
pub(crate) const RUNNERS: &[&str] = &[
    "unshare",
    "nsenter",
    "chroot",
    "runuser",
    "pkexec",
    "sg",
    "newgrp",
    "script",
    "strace",
    "ltrace",
    "valgrind",
    "gdb",
    "lldb",
    "parallel",
    "firejail",
    "bwrap",
    "proot",
    "fakeroot",
    "catchsegv",
    "systemd-run",
    "dbus-launch",
    "dbus-run-session",
    "ssh-agent",
    "unbuffer",
    "caffeinate",
    "torsocks",
    "proxychains",
    "proxychains4",
    "with-contenv",
    "s6-setuidgid",
    "chpst",
    "daemonize",
    "start-stop-daemon",
    "nq",
    "entr",
    "watchexec",
    "inotifywait",
    "expect",
    "rlwrap",
    "numactl",
    "prlimit",
    "setpriv",
    "capsh",
    "cgexec",
    "systemd-inhibit",
    "xvfb-run",
    "dotenv",
    "direnv",
    "op",
    "aws-vault",
    "doppler",
    "env-cmd",
    "cross-env",
];

/// Package runners: the first operand names the package that runs (`npx prettier`), so an allow
/// rule has to name the package too (`Bash(npx prettier:*)`, never `Bash(npx:*)` alone).
pub(crate) const PACKAGE_RUNNERS: &[&str] = &["npx", "bunx", "pnpx", "uvx"];

const fn posix(short: &'static [(char, Arg)], long: &'static [(&'static str, Arg)]) -> OptSpec {
    OptSpec {
        short,
        long,
        permute: false,
        numeric: false,
        single_dash_long: false,
    }
}

#[rustfmt::skip]
const TIMEOUT: OptSpec = posix(
    &[('s', R), ('k', R), ('v', F)],
    &[
        ("signal", R), ("kill-after", R), ("preserve-status", F), ("foreground", F),
        ("verbose", F),
    ],
);
#[rustfmt::skip]
const GNU_TIME: OptSpec = posix(
    &[('a', F), ('f', R), ('o', R), ('p', F), ('q', F), ('v', F)],
    &[
        ("append", F), ("format", R), ("output", R), ("portability", F), ("quiet", F),
        ("verbose", F),
    ],
);
#[rustfmt::skip]
const NICE: OptSpec = OptSpec {
    short: &[('n', R)],
    long: &[("adjustment", R)],
    permute: false,
    numeric: true,
    single_dash_long: false,
};
#[rustfmt::skip]
const STDBUF: OptSpec = posix(
    &[('i', R), ('o', R), ('e', R)],
    &[("input", R), ("output", R), ("error", R)],
);
const COMMAND: OptSpec = posix(&[('p', F)], &[]);
const EXEC: OptSpec = posix(&[('a', R), ('c', F), ('l', F)], &[]);
#[rustfmt::skip]
const ENV: OptSpec = posix(
    &[('i', F), ('0', F), ('u', R), ('C', R), ('S', R), ('v', F)],
    &[
        ("ignore-environment", F), ("null", F), ("unset", R), ("chdir", R), ("split-string", R),
        ("block-signal", O), ("default-signal", O), ("ignore-signal", O),
        ("list-signal-handling", F), ("debug", F),
    ],
);
#[rustfmt::skip]
const XARGS: OptSpec = posix(
    &[
        ('0', F), ('a', R), ('d', R), ('E', R), ('e', O), ('I', R), ('i', O), ('L', R), ('l', O),
        ('n', R), ('o', F), ('p', F), ('P', R), ('r', F), ('s', R), ('t', F), ('x', F),
    ],
    &[
        ("null", F), ("arg-file", R), ("delimiter", R), ("eof", O), ("replace", O),
        ("max-lines", O), ("max-args", R), ("open-tty", F), ("interactive", F), ("max-procs", R),
        ("process-slot-var", R), ("no-run-if-empty", F), ("max-chars", R), ("verbose", F),
        ("exit", F),
    ],
);
#[rustfmt::skip]
const SUDO: OptSpec = posix(
    &[
        ('A', F), ('b', F), ('B', F), ('C', R), ('D', R), ('E', F), ('g', R), ('H', F), ('h', R),
        ('i', F), ('k', F), ('n', F), ('N', F), ('P', F), ('p', R), ('R', R), ('r', R), ('S', F),
        ('s', F), ('T', R), ('t', R), ('U', R), ('u', R),
    ],
    &[
        ("askpass", F), ("background", F), ("bell", F), ("close-from", R), ("chdir", R),
        ("preserve-env", O), ("group", R), ("set-home", F), ("host", R), ("login", F),
        ("reset-timestamp", F), ("non-interactive", F), ("no-update", F), ("preserve-groups", F),
        ("prompt", R), ("chroot", R), ("role", R), ("stdin", F), ("shell", F), ("type", R),
        ("command-timeout", R), ("other-user", R), ("user", R),
    ],
);
const DOAS: OptSpec = posix(&[('n', F), ('s', F), ('u', R), ('C', R)], &[]);
#[rustfmt::skip]
const SETSID: OptSpec = posix(
    &[('c', F), ('f', F), ('w', F)],
    &[("ctty", F), ("fork", F), ("wait", F)],
);
#[rustfmt::skip]
const IONICE: OptSpec = posix(
    &[('c', R), ('n', R), ('t', F)],
    &[("class", R), ("classdata", R), ("ignore", F)],
);
#[rustfmt::skip]
const CHRT: OptSpec = posix(
    &[
        ('a', F), ('b', F), ('d', F), ('e', F), ('f', F), ('i', F), ('o', F), ('r', F), ('R', F),
        ('v', F), ('T', R), ('P', R), ('D', R),
    ],
    &[
        ("all-tasks", F), ("batch", F), ("deadline", F), ("ext", F), ("fifo", F), ("idle", F),
        ("other", F), ("rr", F), ("reset-on-fork", F), ("verbose", F), ("sched-runtime", R),
        ("sched-period", R), ("sched-deadline", R),
    ],
);
const TASKSET: OptSpec = posix(&[('a', F), ('c', F)], &[("all-tasks", F), ("cpu-list", F)]);
#[rustfmt::skip]
const FLOCK: OptSpec = posix(
    &[
        ('s', F), ('x', F), ('e', F), ('u', F), ('n', F), ('w', R), ('E', R), ('o', F), ('F', F),
        ('v', F), ('c', R),
    ],
    &[
        ("shared", F), ("exclusive", F), ("unlock", F), ("nonblock", F), ("nb", F), ("timeout", R),
        ("wait", R), ("conflict-exit-code", R), ("close", F), ("no-fork", F), ("verbose", F),
        ("command", R),
    ],
);

/// Environment variables whose assignment in front of a command cannot change what runs or load
/// code: display, locale, logging and build-mode switches. Anything else (`PATH`, `LD_PRELOAD`,
/// `BASH_ENV`, `NODE_OPTIONS`, `GIT_SSH_COMMAND`, …) keeps the assignment in the text allow rules
/// must match.
pub(crate) const SAFE_ENV: &[&str] = &[
    "CI",
    "DEBUG",
    "NODE_ENV",
    "RUST_LOG",
    "RUST_BACKTRACE",
    "LOG_LEVEL",
    "VERBOSE",
    "LANG",
    "LANGUAGE",
    "TZ",
    "NO_COLOR",
    "FORCE_COLOR",
    "CLICOLOR",
    "CLICOLOR_FORCE",
    "TERM",
    "COLUMNS",
    "LINES",
    "PYTHONUNBUFFERED",
    "PYTHONDONTWRITEBYTECODE",
    "PYTHONIOENCODING",
    "CARGO_TERM_COLOR",
    "GOOS",
    "GOARCH",
    "CGO_ENABLED",
];

/// Whether assigning `name` in front of a command cannot change what runs.
pub(crate) fn is_safe_env_name(name: &str) -> bool {
    SAFE_ENV.contains(&name) || name.starts_with("LC_")
}

/// Recognises a wrapper command at the start of `words`.
pub(crate) fn strip_wrapper(words: &[ShellWord]) -> Wrapper {
    let Some(first) = words.first().filter(|w| w.is_static()) else {
        return Wrapper::None;
    };
    let name = first.text.rsplit('/').next().unwrap_or(&first.text);
    let args = &words[1..];
    let parse = |spec: &OptSpec| getopt::parse(args, spec);
    let unreadable = |e: getopt::OptError| {
        Wrapper::Opaque(
            format!("`{name}` with options robota cannot read ({})", e.0),
            None,
        )
    };
    // The wrapped command starts at operand `n` of `p`.
    let from = |p: &Parsed, n: usize| -> Option<usize> { p.operands.get(n).map(|i| i + 1) };
    let stripped = |skip: Option<usize>, s: Stripped| match skip {
        Some(skip) if skip < words.len() => Wrapper::Stripped(Stripped { skip, ..s }),
        _ => Wrapper::None,
    };
    match name {
        "timeout" => match parse(&TIMEOUT) {
            Ok(p) => match p.operands.first().map(|&i| &args[i]) {
                Some(d) if d.is_static() && is_duration(&d.text) => {
                    stripped(from(&p, 1), Stripped::default())
                }
                Some(_) => {
                    Wrapper::Opaque("`timeout` with a duration robota cannot read".into(), None)
                }
                None => Wrapper::None,
            },
            Err(e) => unreadable(e),
        },
        "time" => match parse(&GNU_TIME) {
            Ok(p) => {
                let writes = p
                    .all("o")
                    .chain(p.all("output"))
                    .filter_map(|o| o.value_word.map(|i| value_word(&args[i], o)))
                    .collect();
                stripped(
                    from(&p, 0),
                    Stripped {
                        writes,
                        ..Stripped::default()
                    },
                )
            }
            Err(e) => unreadable(e),
        },
        "nice" => match parse(&NICE) {
            Ok(p) => stripped(from(&p, 0), Stripped::default()),
            Err(e) => unreadable(e),
        },
        "nohup" | "builtin" | "noglob" | "busybox" => {
            match parse(&OptSpec {
                permute: false,
                ..OptSpec::NONE
            }) {
                Ok(p) => stripped(from(&p, 0), Stripped::default()),
                Err(e) => unreadable(e),
            }
        }
        "stdbuf" => match parse(&STDBUF) {
            Ok(p) => stripped(from(&p, 0), Stripped::default()),
            Err(e) => unreadable(e),
        },
        "command" => {
            // `command -v x` only looks `x` up.
            if matches!(args.first().map(|w| w.text.as_str()), Some("-v" | "-V")) {
                return Wrapper::None;
            }
            match parse(&COMMAND) {
                Ok(p) => stripped(from(&p, 0), Stripped::default()),
                Err(e) => unreadable(e),
            }
        }
        "exec" => match parse(&EXEC) {
            Ok(p) => stripped(from(&p, 0), Stripped::default()),
            Err(e) => unreadable(e),
        },
        "env" => strip_env(args),
        "xargs" => match parse(&XARGS) {
            Ok(p) => {
                let mut s = Stripped {
                    extra_arguments: true,
                    ..Stripped::default()
                };
                match from(&p, 0) {
                    Some(skip) => {
                        s.skip = skip;
                        Wrapper::Stripped(s)
                    }
                    // `xargs` alone runs `echo`.
                    None => Wrapper::None,
                }
            }
            Err(e) => unreadable(e),
        },
        "sudo" => {
            if args.iter().any(|w| {
                w.is_static()
                    && matches!(
                        w.text.as_str(),
                        "-e" | "--edit" | "-l" | "--list" | "-v" | "--validate" | "-K" | "-k"
                    )
            }) && args.len() <= 2
            {
                return Wrapper::None;
            }
            match parse(&SUDO) {
                Ok(p) => stripped(
                    from(&p, 0),
                    Stripped {
                        deny_only: true,
                        chdir: p
                            .all("D")
                            .chain(p.all("chdir"))
                            .find_map(|o| o.value_word.map(|i| value_word(&args[i], o))),
                        ..Stripped::default()
                    },
                ),
                Err(e) => unreadable(e),
            }
        }
        "doas" => match parse(&DOAS) {
            Ok(p) => stripped(
                from(&p, 0),
                Stripped {
                    deny_only: true,
                    ..Stripped::default()
                },
            ),
            Err(e) => unreadable(e),
        },
        "coproc" => stripped(Some(1), Stripped::default()),
        "setsid" => match parse(&SETSID) {
            Ok(p) => stripped(from(&p, 0), Stripped::default()),
            Err(e) => unreadable(e),
        },
        "ionice" => {
            if args.iter().any(|w| {
                w.is_static()
                    && (matches!(
                        w.text.as_str(),
                        "-p" | "-P" | "-u" | "--pid" | "--pgid" | "--uid"
                    ))
            }) {
                return Wrapper::None;
            }
            match parse(&IONICE) {
                Ok(p) => stripped(from(&p, 0), Stripped::default()),
                Err(e) => unreadable(e),
            }
        }
        "chrt" => {
            if args.iter().any(|w| {
                w.is_static() && matches!(w.text.as_str(), "-p" | "--pid" | "-m" | "--max")
            }) {
                return Wrapper::None;
            }
            match parse(&CHRT) {
                // chrt [options] PRIORITY COMMAND
                Ok(p) => stripped(from(&p, 1), Stripped::default()),
                Err(e) => unreadable(e),
            }
        }
        "taskset" => {
            if args
                .iter()
                .any(|w| w.is_static() && matches!(w.text.as_str(), "-p" | "--pid"))
            {
                return Wrapper::None;
            }
            match parse(&TASKSET) {
                // taskset [options] MASK COMMAND
                Ok(p) => stripped(from(&p, 1), Stripped::default()),
                Err(e) => unreadable(e),
            }
        }
        "flock" => match parse(&FLOCK) {
            Ok(p) => {
                let lock = p.operands.first().map(|&i| args[i].clone());
                let writes: Vec<ShellWord> = lock.into_iter().collect();
                if let Some(script) = p.all("c").chain(p.all("command")).next() {
                    return Wrapper::Opaque(
                        "`flock -c`, which runs a shell command".into(),
                        script
                            .value
                            .clone()
                            .filter(|_| script.value_word.is_some_and(|i| args[i].is_static())),
                    );
                }
                // `flock FILE -c CMD` (the option after the file).
                if let Some(&i) = p.operands.get(1) {
                    if args[i].is_static() && matches!(args[i].text.as_str(), "-c" | "--command") {
                        let script = args
                            .get(i + 1)
                            .filter(|w| w.is_static())
                            .map(|w| w.text.clone());
                        return Wrapper::Opaque(
                            "`flock -c`, which runs a shell command".into(),
                            script,
                        );
                    }
                }
                stripped(
                    from(&p, 1),
                    Stripped {
                        writes,
                        ..Stripped::default()
                    },
                )
            }
            Err(e) => unreadable(e),
        },
        _ => Wrapper::None,
    }
}

/// The word holding an option's value.
fn value_word(word: &ShellWord, opt: &getopt::Opt) -> ShellWord {
    match &opt.value {
        Some(v) if *v != word.text => ShellWord {
            text: v.clone(),
            raw: v.clone(),
            ..word.clone()
        },
        _ => word.clone(),
    }
}

fn strip_env(args: &[ShellWord]) -> Wrapper {
    // `env -` is `env -i`.
    let mut start = 0;
    if args.first().is_some_and(|w| w.is_static() && w.text == "-") {
        start = 1;
    }
    let parsed = match getopt::parse(&args[start..], &ENV) {
        Ok(p) => p,
        Err(e) => {
            return Wrapper::Opaque(
                format!("`env` with options robota cannot read ({})", e.0),
                None,
            )
        }
    };
    if parsed.has("S") || parsed.has("split-string") {
        return Wrapper::Opaque(
            "`env -S`, which splits a string into a command".into(),
            None,
        );
    }
    let chdir = parsed
        .all("C")
        .chain(parsed.all("chdir"))
        .find_map(|o| o.value_word.map(|i| value_word(&args[start + i], o)));
    let Some(&first_operand) = parsed.operands.first() else {
        return Wrapper::None;
    };
    let mut i = start + first_operand;
    let assignments_start = i;
    let mut unsafe_found = false;
    while let Some(w) = args.get(i) {
        let Some((name, _)) = w.text.split_once('=') else {
            break;
        };
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            break;
        }
        if !(w.is_static() && is_safe_env_name(name)) {
            unsafe_found = true;
        }
        i += 1;
    }
    if i >= args.len() {
        // Assignments only: `env X=1` prints the environment.
        return Wrapper::None;
    }
    Wrapper::Stripped(Stripped {
        skip: i + 1,
        unsafe_assignments: if unsafe_found {
            args[assignments_start..i]
                .iter()
                .map(|w| w.raw.clone())
                .collect()
        } else {
            Vec::new()
        },
        chdir,
        ..Stripped::default()
    })
}

/// `5`, `2.5`, `10s`, `1m`, `1h`, `1d`.
fn is_duration(s: &str) -> bool {
    let number = s.trim_end_matches(['s', 'm', 'h', 'd']);
    !number.is_empty()
        && number.len() + 1 >= s.len()
        && number.chars().all(|c| c.is_ascii_digit() || c == '.')
        && number.chars().any(|c| c.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<ShellWord> {
        s.split(' ').map(ShellWord::literal).collect()
    }

    fn skip(s: &str) -> Option<usize> {
        match strip_wrapper(&words(s)) {
            Wrapper::Stripped(st) => Some(st.skip),
            _ => None,
        }
    }

    fn opaque(s: &str) -> bool {
        matches!(strip_wrapper(&words(s)), Wrapper::Opaque(..))
    }

    #[test]
    fn finds_the_command_that_really_runs() {
        assert_eq!(skip("xargs -tI grep rm -rf x"), Some(3));
        assert_eq!(skip("xargs -0 -n1 rm"), Some(3));
        assert_eq!(skip("timeout -k1 5 rm x"), Some(3));
        assert_eq!(skip("timeout 5 make"), Some(2));
        assert_eq!(skip("nice -n5 rm x"), Some(2));
        assert_eq!(skip("nice -5 rm x"), Some(2));
        assert_eq!(skip("setsid -fw rm x"), Some(2));
        assert_eq!(skip("stdbuf -oL grep x"), Some(2));
        assert_eq!(skip("ionice -c3 rm x"), Some(2));
        assert_eq!(skip("flock /tmp/l rm x"), Some(2));
        assert_eq!(skip("taskset -c 0 rm x"), Some(3));
        assert_eq!(skip("env -C d X=1 rm x"), Some(4));
        assert_eq!(skip("sudo -Eu root rm x"), Some(3));
        assert_eq!(skip("env -u HOME rm x"), Some(3));
    }

    #[test]
    fn unreadable_options_are_opaque() {
        assert!(opaque("sudo --us root rm x"));
        assert!(opaque("timeout --kill 1 5 rm"));
        assert!(opaque("env -S 'rm x'"));
        assert!(opaque("xargs --max 1 rm"));
        assert!(opaque("setsid -q rm"));
        assert!(opaque("flock -c 'rm x' /tmp/l"));
    }

    #[test]
    fn env_sees_unsafe_assignments_and_chdir() {
        let Wrapper::Stripped(s) = strip_wrapper(&words("env -C /tmp PATH=/x ls")) else {
            panic!()
        };
        assert_eq!(s.unsafe_assignments, ["PATH=/x"]);
        assert_eq!(s.chdir.unwrap().text, "/tmp");
    }
}
