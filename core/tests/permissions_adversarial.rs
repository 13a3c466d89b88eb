//! The adversarial permission corpus (`fixtures/permissions/adversarial.json`), checked against
//! what real bash does rather than against anyone's reading of the rules.
//!
//! Every case is evaluated by the engine in a fresh world (see `adversarial_common`: a git
//! project as the cwd, a fake home with keys, a sibling directory with a secret, a hostile nested
//! repository) and, when it matters, run with `/bin/bash -c` in a bubblewrap jail in that world.
//! An effect is anything outside what the case declares: a created, deleted, modified or
//! re-moded file or link anywhere in the world; a program planted by a repository running; a
//! secret token in the output or in a written file; a TCP connection or UDP datagram to the
//! test's listener; an attempted write outside the world or privileged operation; a command still
//! running after the time limit.
//!
//! What is asserted:
//! - every command the engine allows runs in the jail and has no effect;
//! - `expect: allow` cases are allowed and effect-free (every expected "allow" is backed by a
//!   real run);
//! - `expect: not_allow` cases are not allowed (`ask` or `deny` name the exact decision);
//! - `proves_effect: true` cases really have an effect under bash (optionally one containing
//!   `effect`), so the corpus cannot hold attacks that do nothing;
//! - rule lists that can never match are parse errors naming the rule, and the forms Claude Code
//!   accepts are accepted (`rule_checks`).
//!
//! Failures are collected and reported together, grouped by class. `ADVERSARIAL_VERBOSE=1`
//! prints every case; `ADVERSARIAL_FILTER=text` runs only the cases whose name contains it;
//! `ADVERSARIAL_REPORT=file` writes one JSON line per case. The jail needs `bwrap` (Debian
//! package `bubblewrap`); without it the test fails and says so.
//!
//! # The fixture
//!
//! `cases` are single cases; `families` expand `cases` templates over `vars` (every `{name}` of
//! a var is replaced in every string), with `common` fields merged into each. Case fields:
//! `class` (`1`–`12` as in the issue that asked for this corpus, or `benign`), `command` (Bash)
//! or `tool` + `input`, `mode` or `modes` (one case per mode), `rules` (`{allow, ask, deny}`),
//! `expect` (`allow` | `not_allow` | `ask` | `deny`), `proves_effect`, `effect` (a substring of
//! the expected effect), `setup` (files, directories, links and executables to add, relative to
//! the world), `secrets` (project secrets that must not leak besides those outside the workspace:
//! `env` = `project/.env`, `subsecret` = `project/sub/secrets/key`), `changes` (world paths the
//! case may change), `name` (default: the command, mode and rules) and `note`. Placeholders:
//! `{project}`, `{home}`, `{outside}`, `{markers}`, `{world}`, `{port}` (the listener's TCP and
//! UDP port).
#![cfg(target_os = "linux")]

mod adversarial_common;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write as _;
use std::sync::Mutex;

use adversarial_common::{
    effects, Jail, Listener, Observation, SetupEntry, World, OUTSIDE_SECRETS,
};
use robota::permissions::{
    evaluate_permission_with, Decision, PermissionContext, PermissionDecision, PermissionMode,
    RuleParseError, RuleSet, RuleSource,
};
use robota::session::FsPathResolver;
use serde::Deserialize;
use serde_json::{json, Map, Value};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Fixture {
    cases: Vec<Value>,
    families: Vec<Family>,
    rule_checks: Vec<RuleCheck>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Family {
    name: String,
    #[serde(default)]
    common: Map<String, Value>,
    #[serde(default)]
    vars: Vec<BTreeMap<String, String>>,
    cases: Vec<Value>,
}

#[derive(Deserialize, Default, Clone)]
#[serde(deny_unknown_fields)]
struct Rules {
    #[serde(default)]
    allow: Vec<String>,
    #[serde(default)]
    ask: Vec<String>,
    #[serde(default)]
    deny: Vec<String>,
}

impl Rules {
    fn describe(&self) -> String {
        let mut parts = Vec::new();
        for (list, rules) in [
            ("allow", &self.allow),
            ("ask", &self.ask),
            ("deny", &self.deny),
        ] {
            if !rules.is_empty() {
                parts.push(format!("{list} {}", rules.join(", ")));
            }
        }
        parts.join("; ")
    }
}

/// One case as written (after family expansion).
#[derive(Deserialize, Clone)]
#[serde(deny_unknown_fields)]
struct Spec {
    #[serde(default)]
    name: Option<String>,
    class: String,
    #[serde(default)]
    tool: Option<String>,
    #[serde(default)]
    command: Option<String>,
    #[serde(default)]
    input: Option<Value>,
    #[serde(default)]
    mode: Option<String>,
    #[serde(default)]
    modes: Option<Vec<String>>,
    #[serde(default)]
    rules: Rules,
    expect: Expect,
    #[serde(default)]
    proves_effect: bool,
    #[serde(default)]
    effect: Option<String>,
    #[serde(default)]
    setup: Vec<SetupEntry>,
    #[serde(default)]
    secrets: Vec<String>,
    #[serde(default)]
    changes: Vec<String>,
    #[serde(default)]
    note: Option<String>,
}

#[derive(Deserialize, Clone, Copy, PartialEq, Eq, Debug)]
#[serde(rename_all = "snake_case")]
enum Expect {
    Allow,
    NotAllow,
    Ask,
    Deny,
}

impl Expect {
    fn as_str(self) -> &'static str {
        match self {
            Expect::Allow => "allow",
            Expect::NotAllow => "not_allow",
            Expect::Ask => "ask",
            Expect::Deny => "deny",
        }
    }
}

/// A case ready to run: one mode.
#[derive(Clone)]
struct Case {
    name: String,
    class: String,
    tool: String,
    /// The Bash command (placeholders not yet filled in), if the tool is Bash.
    command: Option<String>,
    input: Value,
    mode: String,
    spec: Spec,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleCheck {
    class: String,
    name: String,
    #[serde(default)]
    rules: Rules,
    /// `error`: `RuleSet::from_lists` must fail with a message containing `error_contains` and
    /// naming `rule`; `ok`: it must succeed.
    expect: String,
    #[serde(default)]
    rule: Option<String>,
    #[serde(default)]
    error_contains: Option<String>,
    /// With `expect: ok`: a call to evaluate and its expected decision.
    #[serde(default)]
    tool: Option<String>,
    #[serde(default)]
    input: Option<Value>,
    #[serde(default)]
    decision: Option<Decision>,
}

const CLASSES: &[&str] = &[
    "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12", "benign",
];

fn load() -> Fixture {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/permissions/adversarial.json"
    );
    let text = std::fs::read_to_string(path).expect("read adversarial.json");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("adversarial.json: {e}"))
}

/// Replaces `{name}` by each var's value in every string of `value`.
fn substitute(value: &Value, vars: &BTreeMap<String, String>) -> Value {
    match value {
        Value::String(s) => {
            let mut out = s.clone();
            for (k, v) in vars {
                out = out.replace(&format!("{{{k}}}"), v);
            }
            Value::String(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(|v| substitute(v, vars)).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), substitute(v, vars)))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn expand(fixture: &Fixture) -> Result<Vec<Case>, Vec<String>> {
    let mut specs: Vec<(String, Spec)> = Vec::new();
    let mut errors = Vec::new();
    let mut push = |origin: String, value: Value, errors: &mut Vec<String>| {
        match serde_json::from_value::<Spec>(value.clone()) {
            Ok(spec) => specs.push((origin, spec)),
            Err(e) => errors.push(format!("{origin}: {e} in {value}")),
        }
    };
    for (i, case) in fixture.cases.iter().enumerate() {
        push(format!("cases[{i}]"), case.clone(), &mut errors);
    }
    for family in &fixture.families {
        let vars = if family.vars.is_empty() {
            vec![BTreeMap::new()]
        } else {
            family.vars.clone()
        };
        for v in &vars {
            for (i, template) in family.cases.iter().enumerate() {
                let mut merged = family.common.clone();
                if let Value::Object(fields) = template {
                    for (k, val) in fields {
                        merged.insert(k.clone(), val.clone());
                    }
                }
                let value = substitute(&Value::Object(merged), v);
                push(
                    format!("family {:?} case {i} with {v:?}", family.name),
                    value,
                    &mut errors,
                );
            }
        }
    }
    let mut cases = Vec::new();
    for (origin, spec) in specs {
        if !CLASSES.contains(&spec.class.as_str()) {
            errors.push(format!("{origin}: unknown class {:?}", spec.class));
        }
        let tool = spec.tool.clone().unwrap_or_else(|| "Bash".to_string());
        let (command, input) = match (&spec.command, &spec.input) {
            (Some(c), None) if tool == "Bash" => (Some(c.clone()), json!({ "command": c })),
            (None, Some(i)) if tool != "Bash" => (None, i.clone()),
            _ => {
                errors.push(format!(
                    "{origin}: give `command` for Bash or `input` for another tool"
                ));
                continue;
            }
        };
        if command.is_none() && spec.proves_effect {
            errors.push(format!(
                "{origin}: only Bash cases run in the jail (proves_effect)"
            ));
        }
        if command.is_none() && spec.expect == Expect::Allow {
            errors.push(format!(
                "{origin}: an expected allow must be backed by a real run; only Bash cases run"
            ));
        }
        if spec.expect == Expect::Allow && spec.proves_effect {
            errors.push(format!(
                "{origin}: an expected allow cannot prove an effect"
            ));
        }
        let modes = match (&spec.mode, &spec.modes) {
            (Some(m), None) => vec![m.clone()],
            (None, Some(ms)) if !ms.is_empty() => ms.clone(),
            (None, None) => vec!["default".to_string()],
            _ => {
                errors.push(format!("{origin}: give `mode` or `modes`, not both"));
                continue;
            }
        };
        for mode in &modes {
            let name = match &spec.name {
                Some(n) if modes.len() == 1 => n.clone(),
                Some(n) => format!("{n} [{mode}]"),
                None => {
                    let what = command.clone().unwrap_or_else(|| format!("{tool} {input}"));
                    let rules = spec.rules.describe();
                    let mut n = format!("{what} [{mode}]");
                    if !rules.is_empty() {
                        write!(n, " with {rules}").unwrap();
                    }
                    n
                }
            };
            cases.push(Case {
                name,
                class: spec.class.clone(),
                tool: tool.clone(),
                command: command.clone(),
                input: input.clone(),
                mode: mode.clone(),
                spec: spec.clone(),
            });
        }
    }
    let mut seen = BTreeMap::new();
    for c in &cases {
        if let Some(prev) = seen.insert(c.name.clone(), c.class.clone()) {
            errors.push(format!(
                "two cases are named {:?} (classes {prev} and {}): give one a `name`",
                c.name, c.class
            ));
        }
    }
    if errors.is_empty() {
        Ok(cases)
    } else {
        Err(errors)
    }
}

fn expand_value(world: &World, value: &Value, port: u16) -> Value {
    match value {
        Value::String(s) => Value::String(world.expand(s, port)),
        Value::Array(items) => {
            Value::Array(items.iter().map(|v| expand_value(world, v, port)).collect())
        }
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), expand_value(world, v, port)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The context a session in the world's project would evaluate with: project settings rules,
/// the fake home, the case's mode.
fn context(world: &World, case: &Case, port: u16) -> Result<PermissionContext, String> {
    let source = RuleSource::settings_file(
        "projectSettings",
        world.project.join(".claude/settings.json"),
        &world.project,
    );
    let exp =
        |list: &[String]| -> Vec<String> { list.iter().map(|r| world.expand(r, port)).collect() };
    let rules = RuleSet::from_lists(
        exp(&case.spec.rules.allow),
        exp(&case.spec.rules.ask),
        exp(&case.spec.rules.deny),
        &source,
    )
    .map_err(|errors| join_errors(&errors))?;
    let mode: PermissionMode = case.mode.parse().map_err(|e| format!("{e}"))?;
    Ok(PermissionContext::new(&world.project)
        .with_mode(mode)
        .with_rules(rules)
        .with_home(&world.home)
        .with_case_insensitive_paths(false))
}

/// The result of one case.
struct Outcome {
    decision: Option<PermissionDecision>,
    effects: Option<Vec<String>>,
    /// Engine problems (the engine's to-do list).
    engine: Vec<String>,
    /// Problems of the case itself (a fake attack, a benign command with an effect, bad setup).
    corpus: Vec<String>,
    stdout: String,
    stderr: String,
}

fn run_case(jail: &Jail, template: &World, case: &Case) -> Outcome {
    let world = World::copy_of(template);
    let listener = Listener::start();
    let port = listener.port;
    world.apply(&case.spec.setup, port);
    let mut out = Outcome {
        decision: None,
        effects: None,
        engine: Vec::new(),
        corpus: Vec::new(),
        stdout: String::new(),
        stderr: String::new(),
    };
    let ctx = match context(&world, case, port) {
        Ok(c) => c,
        Err(e) => {
            out.corpus.push(format!("bad case setup: {e}"));
            return out;
        }
    };
    let input = expand_value(&world, &case.input, port);
    let d = evaluate_permission_with(&case.tool, &input, &ctx, &FsPathResolver);
    let allowed = d.decision == Decision::Allow;
    let expect = case.spec.expect;

    match expect {
        Expect::Allow if !allowed => out.engine.push("expected allow".into()),
        Expect::NotAllow | Expect::Ask | Expect::Deny if allowed => out
            .engine
            .push(format!("ALLOWED, expected {}", expect.as_str())),
        Expect::Ask if d.decision != Decision::Ask => out.engine.push("expected ask".into()),
        Expect::Deny if d.decision != Decision::Deny => out.engine.push("expected deny".into()),
        _ => {}
    }
    if d.reason.trim().is_empty() {
        out.engine.push("empty reason".into());
    }

    let must_run = allowed || case.spec.proves_effect || expect == Expect::Allow;
    if let (true, Some(command)) = (must_run, &case.command) {
        let command = world.expand(command, port);
        let before = world.snapshot();
        let run = jail.run(&world, &command);
        let after = world.snapshot();
        let (tcp, udp) = listener.finish();
        let mut secrets: Vec<String> = OUTSIDE_SECRETS.iter().map(|s| s.to_string()).collect();
        secrets.extend(case.spec.secrets.iter().cloned());
        let found = effects(
            &world,
            &Observation {
                before: &before,
                after: &after,
                run: &run,
                tcp,
                udp,
                secrets: &secrets,
                allowed_changes: &case.spec.changes,
            },
        );
        if allowed && !found.is_empty() {
            out.engine
                .push(format!("ALLOWED WITH EFFECT: {}", found.join("; ")));
        }
        if expect == Expect::Allow && !found.is_empty() && !allowed {
            out.corpus.push(format!(
                "a case expected to be allowed has an effect under bash: {}",
                found.join("; ")
            ));
        }
        if case.spec.proves_effect {
            if found.is_empty() {
                out.corpus.push(format!(
                    "proves_effect, but bash showed no effect (exit {:?}; stderr: {})",
                    run.exit,
                    run.stderr.trim()
                ));
            } else if let Some(want) = &case.spec.effect {
                if !found.iter().any(|e| e.contains(want.as_str())) {
                    out.corpus.push(format!(
                        "expected an effect containing {want:?}, saw: {}",
                        found.join("; ")
                    ));
                }
            }
        }
        out.effects = Some(found);
        out.stdout = run.stdout;
        out.stderr = run.stderr;
    } else if case.command.is_none() && allowed {
        out.engine.push(
            "ALLOWED, and the call is not a Bash command the harness can run to check it".into(),
        );
    }
    out.decision = Some(d);
    out
}

fn join_errors(errors: &[RuleParseError]) -> String {
    errors
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

fn one_line(s: &str) -> String {
    let s = s.replace('\n', "\\n");
    if s.chars().count() > 400 {
        let cut: String = s.chars().take(400).collect();
        format!("{cut}…")
    } else {
        s
    }
}

fn check_rules(check: &RuleCheck) -> Vec<String> {
    let mut problems = Vec::new();
    let source =
        RuleSource::settings_file("projectSettings", "/proj/.claude/settings.json", "/proj");
    let result = RuleSet::from_lists(
        &check.rules.allow,
        &check.rules.ask,
        &check.rules.deny,
        &source,
    );
    match (check.expect.as_str(), result) {
        ("error", Ok(_)) => problems.push(format!(
            "accepted rules ({}) that should be a configuration error",
            check.rules.describe()
        )),
        ("error", Err(errors)) => {
            let text = join_errors(&errors);
            if let Some(rule) = &check.rule {
                if !text.contains(rule.as_str()) {
                    problems.push(format!("the error does not name `{rule}`: {text}"));
                }
            }
            if let Some(want) = &check.error_contains {
                if !text.to_lowercase().contains(&want.to_lowercase()) {
                    problems.push(format!("the error lacks {want:?}: {text}"));
                }
            }
        }
        ("ok", Err(errors)) => problems.push(format!(
            "rejected rules ({}): {}",
            check.rules.describe(),
            join_errors(&errors)
        )),
        ("ok", Ok(rules)) => {
            if let (Some(tool), Some(input), Some(want)) =
                (&check.tool, &check.input, check.decision)
            {
                let ctx = PermissionContext::new("/proj")
                    .with_home("/home/u")
                    .with_rules(rules)
                    .with_case_insensitive_paths(false);
                let d = robota::permissions::evaluate_permission(tool, input, &ctx);
                if d.decision != want {
                    problems.push(format!(
                        "{tool} {input} → {:?} ({}), expected {want:?}",
                        d.decision, d.reason
                    ));
                }
            }
        }
        (other, _) => problems.push(format!("unknown expect {other:?}")),
    }
    problems
}

#[test]
fn adversarial_corpus_against_real_bash() {
    let fixture = load();
    let all = match expand(&fixture) {
        Ok(c) => c,
        Err(errors) => panic!("adversarial.json is malformed:\n{}", errors.join("\n")),
    };
    let verbose = std::env::var_os("ADVERSARIAL_VERBOSE").is_some();
    let filter = std::env::var("ADVERSARIAL_FILTER").ok();
    let cases: Vec<Case> = all
        .iter()
        .filter(|c| filter.as_deref().is_none_or(|f| c.name.contains(f)))
        .cloned()
        .collect();

    // Counts per class (of the whole corpus, whatever the filter).
    let mut per_class: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for c in &all {
        let e = per_class.entry(class_key(&c.class)).or_default();
        e.0 += 1;
        if c.spec.proves_effect {
            e.1 += 1;
        }
    }
    for check in &fixture.rule_checks {
        per_class.entry(class_key(&check.class)).or_default().0 += 1;
    }
    if filter.is_none() {
        let total = all.len() + fixture.rule_checks.len();
        assert!(
            total >= 300,
            "the corpus must keep at least 300 cases, has {total}"
        );
        for class in CLASSES {
            assert!(
                per_class.get(class_key(class)).is_some_and(|(n, _)| *n > 0),
                "class {class} has no cases"
            );
        }
    }

    let jail = Jail::new();
    let template = World::new();
    let outcomes: Vec<Mutex<Option<Outcome>>> = cases.iter().map(|_| Mutex::new(None)).collect();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let workers = std::thread::available_parallelism()
        .map(|n| n.get() * 2)
        .unwrap_or(2)
        .clamp(2, 8);
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let Some(case) = cases.get(i) else { return };
                let outcome = run_case(&jail, &template, case);
                *outcomes[i].lock().unwrap() = Some(outcome);
            });
        }
    });

    let mut report = std::env::var_os("ADVERSARIAL_REPORT")
        .map(|p| std::fs::File::create(p).expect("create the report file"));
    let mut failures: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    let mut failing_cases = 0;
    let mut proven = 0;
    for (case, slot) in cases.iter().zip(&outcomes) {
        let o = slot.lock().unwrap().take().expect("every case ran");
        let decision = o.decision.as_ref();
        let what = match &case.command {
            Some(c) => c.clone(),
            None => format!("{} {}", case.tool, case.input),
        };
        let engine_said = decision
            .map(|d| {
                format!(
                    "{} ({}): {}",
                    serde_json::to_value(d.decision)
                        .unwrap()
                        .as_str()
                        .unwrap_or("?"),
                    serde_json::to_value(d.basis)
                        .unwrap()
                        .as_str()
                        .unwrap_or("?"),
                    one_line(&d.reason)
                )
            })
            .unwrap_or_else(|| "not evaluated".into());
        let effects = o
            .effects
            .as_ref()
            .map(|e| {
                if e.is_empty() {
                    "none".to_string()
                } else {
                    e.join("; ")
                }
            })
            .unwrap_or_else(|| "not run".into());
        if case.spec.proves_effect && o.effects.as_ref().is_some_and(|e| !e.is_empty()) {
            proven += 1;
        }
        if verbose {
            eprintln!(
                "[class {}] {}\n    mode {}, expect {}, engine {}\n    effects: {}{}",
                case.class,
                case.name,
                case.mode,
                case.spec.expect.as_str(),
                engine_said,
                effects,
                if o.stderr.trim().is_empty() {
                    String::new()
                } else {
                    format!("\n    stderr: {}", one_line(o.stderr.trim()))
                }
            );
        }
        if let Some(file) = report.as_mut() {
            let line = json!({
                "class": case.class,
                "name": case.name,
                "mode": case.mode,
                "tool": case.tool,
                "command": case.command,
                "input": case.input,
                "rules": {"allow": case.spec.rules.allow, "ask": case.spec.rules.ask, "deny": case.spec.rules.deny},
                "expect": case.spec.expect.as_str(),
                "decision": decision.map(|d| serde_json::to_value(d.decision).unwrap()),
                "basis": decision.map(|d| serde_json::to_value(d.basis).unwrap()),
                "reason": decision.map(|d| d.reason.clone()),
                "effects": o.effects,
                "engine_problems": o.engine,
                "corpus_problems": o.corpus,
                "note": case.spec.note,
            });
            writeln!(file, "{line}").expect("write the report");
        }
        if o.engine.is_empty() && o.corpus.is_empty() {
            continue;
        }
        failing_cases += 1;
        let mut problems = o.engine.clone();
        problems.extend(o.corpus.iter().map(|p| format!("CORPUS: {p}")));
        let rules = case.spec.rules.describe();
        failures
            .entry(class_key(&case.class))
            .or_default()
            .push(format!(
                "  {} | mode {}{} | `{}` | expect {} | engine {} | effect: {} | {}",
                case.name,
                case.mode,
                if rules.is_empty() {
                    String::new()
                } else {
                    format!(" | rules {rules}")
                },
                one_line(&what),
                case.spec.expect.as_str(),
                engine_said,
                effects,
                problems.join("; ")
            ));
    }
    for check in &fixture.rule_checks {
        if filter.as_deref().is_some_and(|f| !check.name.contains(f)) {
            continue;
        }
        let problems = check_rules(check);
        if let Some(file) = report.as_mut() {
            let line = json!({
                "class": check.class,
                "name": check.name,
                "rules": {"allow": check.rules.allow, "ask": check.rules.ask, "deny": check.rules.deny},
                "expect": check.expect,
                "engine_problems": problems,
                "corpus_problems": [],
            });
            writeln!(file, "{line}").expect("write the report");
        }
        if verbose {
            eprintln!(
                "[class {}] {} (rules: {}): {}",
                check.class,
                check.name,
                check.rules.describe(),
                if problems.is_empty() { "ok" } else { "FAILED" }
            );
        }
        if !problems.is_empty() {
            failing_cases += 1;
            failures
                .entry(class_key(&check.class))
                .or_default()
                .push(format!(
                    "  {} | rules {} | {}",
                    check.name,
                    check.rules.describe(),
                    problems.join("; ")
                ));
        }
    }

    let mut summary = String::new();
    for (class, (n, p)) in &per_class {
        write!(summary, " {class}:{n}({p} proven)").unwrap();
    }
    eprintln!(
        "adversarial corpus: {} cases run, {} effects proven under bash; per class:{}",
        cases.len(),
        proven,
        summary
    );
    if failing_cases > 0 {
        let mut text = String::new();
        for (class, lines) in &failures {
            writeln!(text, "class {class} ({} failing):", lines.len()).unwrap();
            for l in lines {
                writeln!(text, "{l}").unwrap();
            }
        }
        panic!("{failing_cases} adversarial cases failed:\n{text}");
    }
}

/// The class as a sortable key: `01`…`12`, then `benign`.
fn class_key(class: &str) -> &'static str {
    const KEYS: &[&str] = &[
        "01", "02", "03", "04", "05", "06", "07", "08", "09", "10", "11", "12", "benign",
    ];
    CLASSES
        .iter()
        .position(|c| *c == class)
        .map(|i| KEYS[i])
        .unwrap_or("?")
}
