//! Real `.claude/` folders load (issue 17): settings whose rules robota cannot all parse, YAML
//! agent definitions shaped like Anthropic's plugin agents, user-level folders without a
//! settings file, `CLAUDE_ENV_FILE` and Setup hooks with real scripts, and the Claude Code tools
//! models call (TodoWrite, MultiEdit, NotebookEdit) through permissions and hooks.

mod session_common;

use robota::framework::agents::load_agent_definitions;
use robota::framework::config::{load_settings, SettingsOptions};
use robota::hooks::SetupTrigger;
use robota::permissions::{Decision, PermissionMode};
use robota::session::{PermissionResponse, SessionError, SessionSettings};
use serde_json::{json, Value};
use session_common::*;

/// Settings with every rule form Claude Code accepts, comment strings, and rules robota cannot
/// parse: the file loads, each bad entry is a warning with its file and JSON path, and every other
/// rule takes effect.
#[tokio::test]
async fn one_bad_rule_never_stops_the_session() {
    let project = Project::new();
    let file = project.settings(
        ".claude/settings.json",
        json!({"permissions": {
            "allow": [
                "// Build and test",
                "Bash(pnpm knip:prod:*)",
                "Bash(timeout:*)",
                "Bash(npm run test:*)",
                "Bash(git status)",
                "WebFetch(domain:*)",
                "WebFetch(domain:docs.rs)",
                "Skill(commit)",
                "Skill(superpowers:brainstorming)",
                "Read(~/.zshrc)",
                "Edit(/src/**)",
                "mcp__github",
                "Bash*",
                "Bash(git:status)",
                "TodoWrite",
                "NotebookEdit(./notebooks/**)"
            ],
            "ask": ["Bash(git push:*)", "Write(bad"],
            "deny": ["// never", "Read(./.env)", "Bash(rm -rf:*", "webfetch(domain:evil.com)"]
        }}),
    );
    let mock = Mock::start(json!({"turns": []})).await;
    let events = Events::default();
    let session = session(options(&project, &mock, &events));

    let warnings: Vec<String> = session.warnings().iter().map(ToString::to_string).collect();
    let file_text = file.display().to_string();
    let find = |path: &str| {
        warnings
            .iter()
            .find(|w| w.contains(&format!("`{path}`")))
            .cloned()
            .unwrap_or_else(|| panic!("no warning at {path}: {warnings:#?}"))
    };
    // Allow rules that cannot be parsed are skipped, with file and JSON path.
    let w = find("permissions.allow[12]");
    assert!(w.starts_with(&file_text), "{w}");
    assert!(w.contains("invalid permission rule `Bash*`"), "{w}");
    assert!(w.contains("the rule is skipped (it allows nothing)"), "{w}");
    let w = find("permissions.allow[13]");
    assert!(w.contains("`Bash(git:status)`"), "{w}");
    // Deny and ask rules fail closed: every call of their tool needs approval.
    let w = find("permissions.deny[2]");
    assert!(w.contains("invalid permission rule `Bash(rm -rf:*`"), "{w}");
    assert!(w.contains("missing closing `)`"), "{w}");
    assert!(
        w.contains("every call of `Bash` needs approval until it is fixed"),
        "{w}"
    );
    let w = find("permissions.deny[3]");
    assert!(w.contains("every call of `WebFetch` needs approval"), "{w}");
    let w = find("permissions.ask[1]");
    assert!(w.contains("every call of `Write` needs approval"), "{w}");
    // Skill rules load without a complaint: they apply to the `Skill` tool.
    assert!(
        !warnings
            .iter()
            .any(|w| w.contains("Skill(superpowers:brainstorming)")),
        "{warnings:#?}"
    );
    // Every form Claude Code accepts loads without a complaint.
    for rule in [
        "Bash(pnpm knip:prod:*)",
        "Bash(timeout:*)",
        "Bash(npm run test:*)",
        "WebFetch(domain:*)",
        "WebFetch(domain:docs.rs)",
        "Read(~/.zshrc)",
        "Edit(/src/**)",
        "mcp__github",
        "TodoWrite",
        "NotebookEdit(./notebooks/**)",
        "Bash(git push:*)",
        "Read(./.env)",
    ] {
        assert!(
            !warnings
                .iter()
                .any(|w| w.contains(&format!("invalid permission rule `{rule}`"))),
            "{rule}: {warnings:#?}"
        );
    }
    // Comments are skipped with a note.
    assert!(
        warnings.iter().any(|w| w.contains("is a comment")),
        "{warnings:#?}"
    );

    let decide = |tool: &str, input: Value| session.enforcer().evaluate(tool, &input);
    // The remaining rules take effect.
    assert_eq!(
        decide("Read", json!({"file_path": project.path(".env")})).decision,
        Decision::Deny
    );
    assert_eq!(
        decide("Bash", json!({"command": "git push origin main"})).decision,
        Decision::Ask
    );
    assert_eq!(
        decide("Skill", json!({"skill": "superpowers:brainstorming"})).decision,
        Decision::Allow
    );
    assert_eq!(
        decide("Skill", json!({"skill": "other"})).decision,
        Decision::Ask
    );
    assert_eq!(
        decide("WebFetch", json!({"url": "https://docs.rs/x"})).decision,
        Decision::Ask,
        "the invalid WebFetch deny asks for every fetch, even an allowed domain"
    );
    // The unparsable `Bash(rm -rf:*` deny makes every Bash call need approval, even one an
    // allow rule covers, and in bypassPermissions mode.
    let status = decide("Bash", json!({"command": "git status"}));
    assert_eq!(status.decision, Decision::Ask, "{status:?}");
    assert!(status.reason.contains("Bash(rm -rf:*"), "{}", status.reason);
    session
        .set_permission_mode(PermissionMode::BypassPermissions)
        .expect("mode");
    assert_eq!(
        decide("Bash", json!({"command": "pnpm knip:prod --fix"})).decision,
        Decision::Ask
    );
    session
        .set_permission_mode(PermissionMode::DontAsk)
        .expect("mode");
    assert_eq!(
        decide("Bash", json!({"command": "git status"})).decision,
        Decision::Deny,
        "dontAsk turns the fail-closed ask into a denial"
    );
    // Edit-family rules cover the new editing tools.
    session
        .set_permission_mode(PermissionMode::Default)
        .expect("mode");
    assert_eq!(
        decide(
            "NotebookEdit",
            json!({"notebook_path": project.path("notebooks/a.ipynb"), "new_source": "x"})
        )
        .decision,
        Decision::Allow
    );
    assert_eq!(
        decide(
            "MultiEdit",
            json!({"file_path": project.path("src/lib.rs"), "edits": []})
        )
        .decision,
        Decision::Allow
    );
    assert_eq!(
        decide("TodoWrite", json!({"todos": []})).decision,
        Decision::Allow
    );
}

/// Without the invalid rule the allowed commands need no approval (the fallback above is what
/// made them ask), and `WebFetch(domain:*)` allows every domain.
#[tokio::test]
async fn legacy_prefix_rules_allow_what_claude_code_allows() {
    let project = Project::new();
    project.settings(
        ".claude/settings.json",
        json!({"permissions": {"allow": [
            "// legacy prefix rules",
            "Bash(pnpm knip:prod:*)",
            "Bash(timeout:*)",
            "WebFetch(domain:*)"
        ]}}),
    );
    let mock = Mock::start(json!({"turns": []})).await;
    let session = session(options(&project, &mock, &Events::default()));
    for command in ["pnpm knip:prod", "pnpm knip:prod --fix", "timeout 5 ls"] {
        let decision = session
            .enforcer()
            .evaluate("Bash", &json!({"command": command}));
        assert_eq!(
            decision.decision,
            Decision::Allow,
            "{command}: {decision:?}"
        );
    }
    let decision = session
        .enforcer()
        .evaluate("Bash", &json!({"command": "pnpm knip"}));
    assert_eq!(decision.decision, Decision::Ask);
    let decision = session
        .enforcer()
        .evaluate("WebFetch", &json!({"url": "https://example.org/page"}));
    assert_eq!(decision.decision, Decision::Allow, "{decision:?}");
}

/// A deny rule whose tool name cannot be read stays a settings error (nothing to fall back on).
#[tokio::test]
async fn an_unreadable_deny_rule_is_still_an_error() {
    let project = Project::new();
    let file = project.settings(
        ".claude/settings.json",
        json!({"permissions": {"deny": ["(rm -rf /)"]}}),
    );
    let mock = Mock::start(json!({"turns": []})).await;
    let Err(error) = robota::session::Session::new(options(&project, &mock, &Events::default()))
    else {
        panic!("a deny rule naming no tool must refuse the session");
    };
    assert!(
        matches!(error, SessionError::InvalidPermissionRules { .. }),
        "{error}"
    );
    assert_eq!(error.file(), Some(file.as_path()));
    assert_eq!(error.json_path(), Some("permissions.deny[0]"));
}

const REVIEWER: &str = r#"---
name: code-reviewer
description: Use this agent when a major project step has been completed and needs to be reviewed against the original plan and coding standards. Examples: <example>Context: The user is creating a code-review agent that should be called after a logical chunk of code is written. user: "I've finished implementing the user authentication system" assistant: "Great work! Now let me use the code-reviewer agent to review the implementation" <commentary>Since a major step was completed, use the code-reviewer agent.</commentary></example>\n\n<example>Context: a second one</example>
model: inherit
color: red
---

You are a Senior Code Reviewer.
"#;

const EXPLAINER: &str = r#"---
name: "explainer"
description: |
  Explains code to newcomers.

  <example>
  Context: The user asks what a module does.
  user: "What does src/lib.rs do?"
  assistant: "I'll use the explainer agent: it reads the code and explains it."
  <commentary>
  Questions about what code does go to the explainer.
  </commentary>
  </example>
tools:
  - Read
  - Grep
  - Glob
  - TodoWrite
  - NotebookRead
  - mcp__ide__getDiagnostics
disallowedTools: ['Bash']
maxTurns: 12
permissionMode: plan
---
Explain clearly.
"#;

/// Agent files shaped like Anthropic's plugin agents load from `~/.claude/agents` with no
/// settings file anywhere; a broken one is a warning naming file and line, the others load; a
/// tool robota does not have is a warning naming it.
#[tokio::test]
async fn user_level_agents_and_claude_md_load_without_a_settings_file() {
    let project = Project::new();
    let agents = project.home.join(".claude/agents");
    std::fs::create_dir_all(&agents).expect("mkdir");
    std::fs::write(agents.join("code-reviewer.md"), REVIEWER).expect("write");
    std::fs::write(agents.join("explainer.md"), EXPLAINER).expect("write");
    std::fs::write(
        agents.join("broken.md"),
        "---\nname: broken\ndescription: x\ntools: [Read\n  - Grep\n---\nbody\n",
    )
    .expect("write");
    std::fs::write(
        project.home.join(".claude/CLAUDE.md"),
        "Always answer in haiku.\n",
    )
    .expect("write");

    let catalog = load_agent_definitions(&project.root, Some(&project.home));
    let reviewer = catalog.get("code-reviewer").expect("reviewer loads");
    assert!(reviewer.description.contains("<example>Context: The user"));
    assert!(
        reviewer.description.contains("</example>\n\n<example>"),
        "a one-line description's \\n become line breaks: {}",
        reviewer.description
    );
    let explainer = catalog.get("explainer").expect("explainer loads");
    assert!(explainer.description.contains("<commentary>\nQuestions"));
    assert_eq!(
        explainer.tools.as_deref(),
        Some(
            &[
                "Read",
                "Grep",
                "Glob",
                "TodoWrite",
                "NotebookRead",
                "mcp__ide__getDiagnostics"
            ]
            .map(String::from)[..]
        )
    );
    assert_eq!(explainer.disallowed_tools, ["Bash"]);
    assert_eq!(explainer.max_turns, Some(12));
    let texts: Vec<String> = catalog.warnings.iter().map(ToString::to_string).collect();
    assert!(
        texts.iter().any(|w| w.contains(
            "broken.md:4: agent definition skipped: invalid YAML frontmatter: unclosed bracket"
        )),
        "{texts:#?}"
    );
    // `permissionMode` is honoured (capped by the session's mode when the subagent runs).
    assert_eq!(
        explainer.permission_mode,
        Some(robota::permissions::PermissionMode::Plan)
    );
    assert!(
        !texts.iter().any(|w| w.contains("permissionMode")),
        "{texts:#?}"
    );

    // The CLI's way: settings loaded first (no settings file exists), then the session.
    let loaded = load_settings(&SettingsOptions::new(&project.root).with_home(&project.home))
        .expect("settings");
    assert!(loaded.layers.is_empty());
    let mock = Mock::start(json!({"turns": [text_turn("ok")]})).await;
    let events = Events::default();
    let sink = events.0.clone();
    let options = robota::session::SessionOptions::new(&project.root, mock.provider())
        .with_settings(SessionSettings::Loaded(Box::new(loaded)))
        .with_on_event(move |e| sink.lock().unwrap().push(e));
    let interactive = robota::framework::interactive::InteractiveSession::new(
        robota::framework::interactive::InteractiveSessionOptions::new(options),
    )
    .expect("session");
    assert_eq!(
        interactive.get_warnings(),
        interactive.session().warnings(),
        "hosts read the same warnings"
    );
    let warnings: Vec<String> = interactive
        .get_warnings()
        .iter()
        .map(ToString::to_string)
        .collect();
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("broken.md") && w.contains("line 4: agent definition skipped")),
        "{warnings:#?}"
    );
    assert!(
        warnings.iter().any(|w| w.contains("explainer.md")
            && w.contains("`NotebookRead`")
            && w.contains("does not have")),
        "{warnings:#?}"
    );
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("`mcp__ide__getDiagnostics`")),
        "{warnings:#?}"
    );
    assert!(
        !warnings.iter().any(|w| w.contains("`TodoWrite`")),
        "TodoWrite is a built-in now: {warnings:#?}"
    );
    let ticket = interactive
        .submit_tracked("hello", None)
        .await
        .expect("submit");
    ticket.end().await;
    let system = mock.bodies()[0]["system"].to_string();
    assert!(system.contains("Always answer in haiku."), "{system}");
    assert!(
        system.contains("- code-reviewer: Use this agent"),
        "{system}"
    );
}

/// A SessionStart hook that writes `CLAUDE_ENV_FILE` (Claude Code's format: `export` lines and
/// `declare -x` from `export -p`) gives later Bash calls its variables; a Setup hook runs with
/// its trigger, and its output is context for the next prompt.
#[tokio::test]
async fn claude_env_file_reaches_later_bash_calls() {
    let project = Project::new();
    let script = project.write(
        ".claude/hooks/env.sh",
        "#!/bin/sh\nset -e\ntest -n \"$CLAUDE_ENV_FILE\"\n\
         echo 'export ROBOTA_GREETING=\"hello from the hook\"' >> \"$CLAUDE_ENV_FILE\"\n\
         echo 'declare -x ROBOTA_PATHISH=\"/opt/tool/bin\"' >> \"$CLAUDE_ENV_FILE\"\n",
    );
    let setup = project.write(
        ".claude/hooks/setup.sh",
        "#!/bin/sh\ntrigger=$(sed -n 's/.*\"trigger\":\"\\([a-z]*\\)\".*/\\1/p')\n\
         echo \"export ROBOTA_SETUP=$trigger\" >> \"$CLAUDE_ENV_FILE\"\n\
         echo \"setup ran for $trigger\"\n",
    );
    for path in [&script, &setup] {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    project.settings(
        ".claude/settings.json",
        json!({
            "permissions": {"allow": ["Bash"]},
            "hooks": {
                "SessionStart": [group(None, vec![command("\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/env.sh".into())])],
                "Setup": [group(Some("init"), vec![command("\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/setup.sh".into())])]
            }
        }),
    );
    let mock = Mock::start(json!({"turns": [
        tool_turn("toolu_env", "Bash", json!({"command": "echo \"$ROBOTA_GREETING|$ROBOTA_PATHISH|$ROBOTA_SETUP\""})),
        text_turn("done")
    ]}))
    .await;
    let events = Events::default();
    let session = session(options(&project, &mock, &events));
    let setup_outcome = session.run_setup(SetupTrigger::Init).await.expect("setup");
    assert!(setup_outcome.errors.is_empty(), "{setup_outcome:?}");
    session.run("show the env").await.expect("run");
    assert_eq!(
        mock.result_for("toolu_env").trim(),
        "hello from the hook|/opt/tool/bin|init"
    );
    // The Setup hook's stdout went to the model with the first prompt.
    let first = mock.bodies()[0]["messages"].to_string();
    assert!(first.contains("setup ran for init"), "{first}");
}

/// TodoWrite, MultiEdit and NotebookEdit through a real model call: the todo list arrives as a
/// `todo_update` event, MultiEdit is all or nothing, and PreToolUse hooks see Claude Code's tool
/// names and fields.
#[tokio::test]
async fn claude_code_tools_run_through_permissions_and_hooks() {
    let project = Project::new();
    project.write("src/lib.rs", "fn a() {}\nfn b() {}\n");
    project.write(
        "nb.ipynb",
        r##"{"cells": [{"cell_type": "code", "id": "c1", "metadata": {}, "execution_count": 1, "outputs": [], "source": ["print(1)"]}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}"##,
    );
    let log = project.path("pre.jsonl");
    project.settings(
        ".claude/settings.json",
        json!({"hooks": {"PreToolUse": [group(Some("TodoWrite|MultiEdit|NotebookEdit"),
            vec![command(fixture("record.sh", &[&log.to_string_lossy()]))])]}}),
    );
    let mock = Mock::start(json!({"turns": [
        tool_turn("toolu_todo", "TodoWrite", json!({"todos": [
            {"content": "Rename a", "status": "in_progress", "activeForm": "Renaming a"},
            {"content": "Rename b", "status": "pending", "activeForm": "Renaming b"}
        ]})),
        tool_turn("toolu_bad", "MultiEdit", json!({"file_path": project.path("src/lib.rs"), "edits": [
            {"old_string": "fn a()", "new_string": "fn first()"},
            {"old_string": "fn missing()", "new_string": "x"}
        ]})),
        tool_turn("toolu_multi", "MultiEdit", json!({"file_path": project.path("src/lib.rs"), "edits": [
            {"old_string": "fn a()", "new_string": "fn first()"},
            {"old_string": "fn b()", "new_string": "fn second()"}
        ]})),
        tool_turn("toolu_nb", "NotebookEdit", json!({"notebook_path": project.path("nb.ipynb"),
            "cell_id": "c1", "new_source": "print(2)"})),
        text_turn("done")
    ]}))
    .await;
    let events = Events::default();
    let handler = Handler::default();
    let session = session(
        options(&project, &mock, &events)
            .with_permission_handler(handler.answering(vec![PermissionResponse::AllowOnce])),
    );
    session.run("rename").await.expect("run");

    let todos = events.of("todo_update");
    assert_eq!(todos.len(), 1, "{:?}", events.kinds());
    assert_eq!(
        todos[0]["todos"],
        json!([
            {"content": "Rename a", "status": "in_progress", "active_form": "Renaming a"},
            {"content": "Rename b", "status": "pending", "active_form": "Renaming b"}
        ])
    );
    assert!(mock
        .result_for("toolu_todo")
        .contains("Todos have been modified successfully"));
    let bad = mock.result_for("toolu_bad");
    assert!(bad.contains("Edit 2 of 2 failed"), "{bad}");
    assert!(bad.contains("unchanged"), "{bad}");
    assert_eq!(
        project.read("src/lib.rs"),
        "fn first() {}\nfn second() {}\n"
    );
    let notebook: Value = serde_json::from_str(&project.read("nb.ipynb")).expect("json");
    assert_eq!(notebook["cells"][0]["source"], json!(["print(2)"]));
    assert_eq!(notebook["cells"][0]["execution_count"], Value::Null);
    // Edits needed approval (default mode); TodoWrite did not.
    assert_eq!(handler.tools(), ["MultiEdit", "MultiEdit", "NotebookEdit"]);
    let seen: Vec<String> = records(&log)
        .iter()
        .map(|r| r["tool_name"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(
        seen,
        ["TodoWrite", "MultiEdit", "MultiEdit", "NotebookEdit"]
    );
    let first = &records(&log)[0];
    assert_eq!(first["tool_input"]["todos"][0]["activeForm"], "Renaming a");
}
