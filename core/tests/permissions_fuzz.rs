//! Hostile command text never panics or hangs the permission engine: thousands of generated
//! commands — shell syntax fragments, option clusters, expansions, quotes, multi-byte and control
//! characters, deep nesting — are evaluated in every mode with deny, ask and allow rules, and
//! every answer must be a decision with a reason. (A deterministic generator, so a failure
//! reproduces from the printed seed and case number.)

use robota::permissions::{
    evaluate_permission, PermissionContext, PermissionMode, RuleSet, RuleSource,
};
use serde_json::json;

/// xorshift64*: small, deterministic, good enough to spread cases.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[(self.next() % items.len() as u64) as usize]
    }
}

const FRAGMENTS: &[&str] = &[
    "ls",
    "cat",
    "grep",
    "rg",
    "find",
    "git",
    "sort",
    "xargs",
    "timeout",
    "env",
    "sudo",
    "sed",
    "rm",
    "cp",
    "mv",
    "echo",
    "printf",
    "test",
    "[",
    "]",
    "[[",
    "]]",
    "((",
    "))",
    "$((",
    "${",
    "}",
    "$(",
    ")",
    "`",
    "'",
    "\"",
    "\\",
    "$'\\x41'",
    "<",
    ">",
    ">>",
    "<<",
    "<<<",
    "<<EOF\n",
    "\nEOF\n",
    "|",
    "||",
    "&&",
    ";",
    "&",
    "\n",
    "#",
    "*",
    "?",
    "[a-z]",
    "{a,b}",
    "~",
    "~root",
    "$HOME",
    "$x",
    "${x:-y}",
    "${a[$i]}",
    "${!x}",
    "${x@P}",
    "-",
    "--",
    "-tI",
    "-n5",
    "-o",
    "--pre=sh",
    "--output=x",
    "-C",
    "-c",
    "/dev/tcp/1.2.3.4/80",
    ".env",
    ".git/config",
    "..",
    "/",
    "é",
    "日本",
    "\u{0}",
    "\u{7f}",
    "\t",
    " ",
    " ",
    "a[",
    "x=1",
    "PATH=/x",
    "let",
    "declare",
    "-i",
    "read",
    "mapfile",
    "-C",
    "compgen",
    "eval",
    "alias",
    "function f",
    "f()",
    "{",
    "if",
    "then",
    "fi",
    "for",
    "in",
    "do",
    "done",
    "case",
    "esac",
    "coproc",
    "time",
    "!",
    "=~",
    "-eq",
];

#[test]
fn generated_commands_never_panic_and_always_explain() {
    let seed = 0x5eed_1234_abcd_0001_u64;
    let mut rng = Rng(seed);
    let rules = RuleSet::from_lists(
        [
            "Bash(git status:*)",
            "Bash(npm test:*)",
            "Bash(timeout:*)",
            "Read(./src/**)",
        ],
        ["Bash(git push:*)", "Read(secrets/**)"],
        ["Bash(rm -rf:*)", "Read(./.env)", "Edit(./.git/**)"],
        &RuleSource::new("fuzz"),
    )
    .expect("rules parse");
    let modes = [
        PermissionMode::Default,
        PermissionMode::AcceptEdits,
        PermissionMode::Plan,
        PermissionMode::BypassPermissions,
        PermissionMode::DontAsk,
    ];
    for case in 0..4000usize {
        let words = 1 + rng.next() % 14;
        let mut command = String::new();
        for _ in 0..words {
            command.push_str(rng.pick(FRAGMENTS));
            if !rng.next().is_multiple_of(3) {
                command.push(' ');
            }
        }
        if case.is_multiple_of(97) {
            // Deep nesting and very long words.
            command = "$(".repeat(40) + &command + &")".repeat(40);
        }
        if case.is_multiple_of(211) {
            command = "x".repeat(70_000);
        }
        let mode = modes[case % modes.len()];
        let context = PermissionContext::new("/w/project")
            .with_home("/home/u")
            .with_rules(rules.clone())
            .with_mode(mode);
        let decision = std::panic::catch_unwind(|| {
            evaluate_permission("Bash", &json!({ "command": command }), &context)
        });
        let decision = decision.unwrap_or_else(|_| {
            panic!("seed {seed:#x} case {case} ({mode}) panicked on {command:?}")
        });
        assert!(
            !decision.reason.is_empty(),
            "seed {seed:#x} case {case}: empty reason for {command:?}"
        );
    }
}
