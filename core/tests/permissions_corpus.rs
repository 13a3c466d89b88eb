//! Runs the permission corpus (`fixtures/permissions/corpus.json`): rule/input/expected-decision
//! cases covering every example of the Claude Code permission contract, the modes, sensitive
//! paths, and bypass attempts — which must never come out as "allow".
//!
//! Case fields: `name`, `tool`, `input`, `expect` (allow|ask|deny), optional `mode`, `rules`
//! (`{allow, ask, deny}`), `rules_base_dir` (anchor of `/path` rules; default the cwd), `cwd`,
//! `home`, `additional_directories`, `workspace_roots`, `symlinks`, `sensitive_paths`,
//! `tool_classes`, `expect_rule` (the matched rule's text; absent or null = no rule),
//! `expect_basis`, `expect_suggestion` (must be among the suggested rules),
//! `expect_suggestions` (the exact list), `expect_reason` (substring), and
//! `bypass: true` for bypass attempts. Set `PERMISSIONS_CORPUS_VERBOSE=1` to print every
//! decision with its reason.

use std::collections::BTreeMap;
use std::path::PathBuf;

use robota::permissions::{
    evaluate_permission, Decision, PermissionContext, PermissionDecision, PermissionMode, RuleList,
    RuleSet, RuleSource, ToolClass,
};
use serde::Deserialize;
use serde_json::Value;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Corpus {
    defaults: Defaults,
    cases: Vec<Case>,
    hidden_tools: Vec<HiddenCase>,
    rule_errors: Vec<RuleErrorCase>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Defaults {
    cwd: PathBuf,
    home: PathBuf,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct Rules {
    #[serde(default)]
    allow: Vec<String>,
    #[serde(default)]
    ask: Vec<String>,
    #[serde(default)]
    deny: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    name: String,
    tool: String,
    input: Value,
    expect: Decision,
    #[serde(default)]
    mode: Option<String>,
    #[serde(default)]
    rules: Rules,
    #[serde(default)]
    rules_base_dir: Option<PathBuf>,
    #[serde(default)]
    cwd: Option<PathBuf>,
    #[serde(default)]
    home: Option<PathBuf>,
    #[serde(default)]
    additional_directories: Vec<PathBuf>,
    #[serde(default)]
    workspace_roots: Vec<PathBuf>,
    #[serde(default)]
    symlinks: BTreeMap<PathBuf, PathBuf>,
    #[serde(default)]
    sensitive_paths: Vec<PathBuf>,
    #[serde(default)]
    tool_classes: BTreeMap<String, ToolClass>,
    #[serde(default)]
    expect_rule: Option<String>,
    #[serde(default)]
    expect_basis: Option<String>,
    #[serde(default)]
    expect_suggestion: Option<String>,
    #[serde(default)]
    expect_suggestions: Option<Vec<String>>,
    #[serde(default)]
    expect_reason: Option<String>,
    #[serde(default)]
    bypass: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct HiddenCase {
    name: String,
    deny: Vec<String>,
    tools: Vec<String>,
    expect_hidden: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleErrorCase {
    rule: String,
    list: RuleList,
    error_contains: String,
}

fn load() -> Corpus {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/permissions/corpus.json"
    );
    let text = std::fs::read_to_string(path).expect("read corpus.json");
    serde_json::from_str(&text).expect("corpus.json is valid")
}

fn context(defaults: &Defaults, case: &Case) -> Result<PermissionContext, String> {
    let cwd = case.cwd.clone().unwrap_or_else(|| defaults.cwd.clone());
    let base = case.rules_base_dir.clone().unwrap_or_else(|| cwd.clone());
    let source =
        RuleSource::settings_file("projectSettings", base.join(".claude/settings.json"), base);
    let rules = RuleSet::from_lists(
        &case.rules.allow,
        &case.rules.ask,
        &case.rules.deny,
        &source,
    )
    .map_err(|errors| {
        errors
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("; ")
    })?;
    let mode: PermissionMode = match &case.mode {
        Some(m) => m.parse().map_err(|e| format!("{e}"))?,
        None => PermissionMode::Default,
    };
    let mut ctx = PermissionContext::new(cwd)
        .with_mode(mode)
        .with_rules(rules)
        .with_home(case.home.clone().unwrap_or_else(|| defaults.home.clone()))
        .with_case_insensitive_paths(false);
    for d in &case.additional_directories {
        ctx = ctx.with_additional_directory(d);
    }
    for d in &case.workspace_roots {
        ctx = ctx.with_workspace_root(d);
    }
    for (link, target) in &case.symlinks {
        ctx = ctx.with_symlink(link, target);
    }
    for p in &case.sensitive_paths {
        ctx = ctx.with_sensitive_path(p);
    }
    for (tool, class) in &case.tool_classes {
        ctx = ctx.with_tool_class(tool, *class);
    }
    Ok(ctx)
}

fn check(case: &Case, d: &PermissionDecision) -> Vec<String> {
    let mut problems = Vec::new();
    if d.decision != case.expect {
        problems.push(format!(
            "decision {:?}, expected {:?}",
            d.decision, case.expect
        ));
    }
    let got_rule = d.matched_rule.as_ref().map(|m| m.rule.as_str());
    if got_rule != case.expect_rule.as_deref() {
        problems.push(format!(
            "matched rule {got_rule:?}, expected {:?}",
            case.expect_rule
        ));
    }
    if let Some(basis) = &case.expect_basis {
        let got = serde_json::to_value(d.basis).unwrap_or(Value::Null);
        if got.as_str() != Some(basis.as_str()) {
            problems.push(format!("basis {got}, expected {basis}"));
        }
    }
    if let Some(s) = &case.expect_suggestion {
        if !d.suggested_rules.contains(s) {
            problems.push(format!("suggestions {:?} lack {s:?}", d.suggested_rules));
        }
    }
    if let Some(all) = &case.expect_suggestions {
        if &d.suggested_rules != all {
            problems.push(format!(
                "suggestions {:?}, expected {all:?}",
                d.suggested_rules
            ));
        }
    }
    if let Some(r) = &case.expect_reason {
        if !d.reason.contains(r.as_str()) {
            problems.push(format!("reason lacks {r:?}"));
        }
    }
    if case.bypass && case.expect == Decision::Allow {
        problems.push("a bypass attempt is expected to be allowed: fix the case".into());
    }
    if case.bypass && d.decision == Decision::Allow {
        problems.push("BYPASS SUCCEEDED: a bypass attempt was allowed".into());
    }
    // The reason must always say something, and the matched rule must be one of the context's.
    if d.reason.trim().is_empty() {
        problems.push("empty reason".into());
    }
    problems
}

#[test]
fn corpus_decisions() {
    let corpus = load();
    let mut failures = Vec::new();
    let mut bypasses = 0;
    for case in &corpus.cases {
        let ctx = match context(&corpus.defaults, case) {
            Ok(ctx) => ctx,
            Err(e) => {
                failures.push(format!("[{}] bad case setup: {e}", case.name));
                continue;
            }
        };
        let decision = evaluate_permission(&case.tool, &case.input, &ctx);
        if std::env::var_os("PERMISSIONS_CORPUS_VERBOSE").is_some() {
            eprintln!(
                "[{}] {:?} {:?} rule={:?}\n    {}\n    suggest={:?}",
                case.name,
                decision.decision,
                decision.basis,
                decision.matched_rule.as_ref().map(|m| &m.rule),
                decision.reason,
                decision.suggested_rules
            );
        }
        for p in check(case, &decision) {
            failures.push(format!(
                "[{}] {} {}: {p}\n    reason: {}",
                case.name, case.tool, case.input, decision.reason
            ));
        }
        // The context and decision are plain data: a serde round trip must not change the answer
        // (bindings pass both as JSON).
        let json = serde_json::to_string(&ctx).expect("context serializes");
        let back: PermissionContext = serde_json::from_str(&json).expect("context deserializes");
        let again = evaluate_permission(&case.tool, &case.input, &back);
        if again != decision {
            failures.push(format!(
                "[{}] decision changed after a serde round trip",
                case.name
            ));
        }
        let djson = serde_json::to_string(&decision).expect("decision serializes");
        let dback: PermissionDecision =
            serde_json::from_str(&djson).expect("decision deserializes");
        assert_eq!(dback, decision);
        if case.bypass {
            bypasses += 1;
        }
    }
    let total = corpus.cases.len();
    eprintln!("permission corpus: {total} cases ({bypasses} bypass attempts)");
    assert!(
        total >= 150,
        "the corpus must keep at least 150 cases, has {total}"
    );
    assert!(
        bypasses >= 50,
        "the corpus must keep its bypass attempts, has {bypasses}"
    );
    assert!(
        failures.is_empty(),
        "{} corpus failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn corpus_hidden_tools() {
    let corpus = load();
    for case in &corpus.hidden_tools {
        let rules = RuleSet::from_lists(
            Vec::<String>::new(),
            Vec::new(),
            case.deny.clone(),
            &RuleSource::new("test"),
        )
        .unwrap_or_else(|e| panic!("[{}] {e:?}", case.name));
        let hidden: Vec<String> = rules
            .hidden_tools(case.tools.iter().map(String::as_str))
            .into_iter()
            .collect();
        let mut want = case.expect_hidden.clone();
        want.sort();
        assert_eq!(hidden, want, "[{}]", case.name);
    }
}

#[test]
fn corpus_rule_errors() {
    let corpus = load();
    for case in &corpus.rule_errors {
        let mut set = RuleSet::new();
        let errors = set
            .add_list(case.list, [&case.rule], &RuleSource::new("test"))
            .expect_err(&format!(
                "`{}` should be rejected in {}",
                case.rule, case.list
            ));
        let text = errors[0].to_string();
        assert!(
            text.contains(&case.error_contains)
                && text.contains(&format!("`{}`", case.rule.trim())),
            "error for `{}`: {text}",
            case.rule
        );
    }
}
