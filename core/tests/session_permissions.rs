//! Permission enforcement in a real session driven by mock-llm: the host's permission handler
//! (allow once, allow for the session, allow always with the rule saved to a settings file, deny
//! with a message the model sees), no handler, the modes (plan, acceptEdits, bypassPermissions)
//! against rules and sensitive paths, abort while a request is pending, bare-name deny rules
//! hiding tools from the model, symlinks resolved on disk, settings `env`, and bad settings
//! producing errors that name the file, the key and the problem.
#![cfg(unix)]

mod session_common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use robota::message::Role;
use robota::permissions::PermissionMode;
use robota::session::{
    FnPermissionHandler, PermissionResponse, Session, SessionError, SettingsDestination,
};
use serde_json::{json, Value};
use session_common::*;

/// Two identical Bash calls in two rounds, then an answer.
fn twice(command: &str) -> Value {
    json!({"turns": [
        tool_turn("toolu_1", "Bash", json!({"command": command})),
        tool_turn("toolu_2", "Bash", json!({"command": command})),
        text_turn("done"),
    ]})
}

#[tokio::test]
async fn allow_once_asks_every_time() {
    let project = Project::new();
    let mock = Mock::start(twice("touch a.txt")).await;
    let events = Events::default();
    let handler = Handler::default();
    let session = session(
        options(&project, &mock, &events)
            .with_permission_handler(handler.answering(vec![PermissionResponse::AllowOnce])),
    );
    let outcome = session.run("touch it").await.expect("run");
    assert_eq!(outcome.response, "done");
    assert_eq!(handler.count(), 2, "allow once is not remembered");
    assert!(project.path("a.txt").exists());

    let request = handler.requests.lock().unwrap()[0].clone();
    assert_eq!(request.tool_name, "Bash");
    assert_eq!(request.input, json!({"command": "touch a.txt"}));
    assert_eq!(request.tool_use_id, "toolu_1");
    assert_eq!(request.permission_mode, PermissionMode::Default);
    assert!(!request.reason.is_empty());
    assert!(!request.suggested_rules.is_empty(), "{request:?}");
    let targets: Vec<(SettingsDestination, std::path::PathBuf)> = request
        .settings_targets
        .iter()
        .map(|t| (t.destination, t.path.clone()))
        .collect();
    assert_eq!(
        targets,
        vec![
            (
                SettingsDestination::LocalSettings,
                project.path(".claude/settings.local.json")
            ),
            (
                SettingsDestination::ProjectSettings,
                project.path(".claude/settings.json")
            ),
            (
                SettingsDestination::UserSettings,
                project.home.join(".claude/settings.json")
            ),
        ]
    );

    let requested = events.of("permission_request");
    let resolved = events.of("permission_resolved");
    assert_eq!(requested.len(), 2);
    assert_eq!(resolved.len(), 2);
    assert_eq!(requested[0]["request_id"], resolved[0]["request_id"]);
    assert_ne!(requested[0]["request_id"], requested[1]["request_id"]);
    assert_eq!(
        requested[0]["suggested_rules"],
        json!(request.suggested_rules)
    );
    assert_eq!(resolved[0]["resolution"]["decision"], "allowed");
    assert_eq!(resolved[0]["resolution"]["scope"], "once");
    assert_eq!(resolved[0]["resolved_by"], "handler");
    assert!(session.session_allowed_rules().is_empty());
}

#[tokio::test]
async fn allow_for_the_session_remembers_a_rule_anthropic() {
    allow_for_the_session_remembers_a_rule(Wire::Anthropic).await;
}

#[tokio::test]
async fn allow_for_the_session_remembers_a_rule_openai() {
    allow_for_the_session_remembers_a_rule(Wire::OpenAi).await;
}

async fn allow_for_the_session_remembers_a_rule(wire: Wire) {
    let project = Project::new();
    let mock = Mock::start_wire(wire, twice("touch a.txt")).await;
    let events = Events::default();
    let handler = Handler::default();
    let session = session(
        options(&project, &mock, &events)
            .with_permission_handler(handler.answering(vec![PermissionResponse::allow_session()])),
    );
    session.run("touch it").await.expect("run");
    assert_eq!(handler.count(), 1, "the second call was not asked about");
    let suggested = handler.requests.lock().unwrap()[0].suggested_rules.clone();
    assert_eq!(session.session_allowed_rules(), suggested);
    let resolved = events.of("permission_resolved");
    assert_eq!(resolved[0]["resolution"]["scope"], "session");
    assert_eq!(resolved[0]["resolution"]["rules"], json!(suggested));
    // Both calls ran.
    assert!(!mock.result_for("toolu_2").contains("denied"));
    assert!(
        !project.path(".claude/settings.local.json").exists(),
        "nothing was saved"
    );

    // Forgetting the rules brings the prompt back.
    session.clear_session_allowed_rules();
    assert!(session.session_allowed_rules().is_empty());
}

#[tokio::test]
async fn allow_always_saves_the_rule_and_the_next_session_uses_it() {
    let project = Project::new();
    // An existing local settings file: its other content must survive.
    project.write(
        ".claude/settings.local.json",
        "{\n  \"env\": {\"KEEP\": \"me\"},\n  \"permissions\": {\"deny\": [\"Read(./secret.txt)\"]}\n}\n",
    );
    let mock = Mock::start(twice("touch a.txt")).await;
    let events = Events::default();
    let handler = Handler::default();
    let session = session(options(&project, &mock, &events).with_permission_handler(
        handler.answering(vec![PermissionResponse::allow_always(
            SettingsDestination::LocalSettings,
        )]),
    ));
    session.run("touch it").await.expect("run");
    assert_eq!(handler.count(), 1);
    let suggested = handler.requests.lock().unwrap()[0].suggested_rules.clone();

    let saved: Value =
        serde_json::from_str(&project.read(".claude/settings.local.json")).expect("valid JSON");
    assert_eq!(saved["permissions"]["allow"], json!(suggested));
    assert_eq!(saved["permissions"]["deny"], json!(["Read(./secret.txt)"]));
    assert_eq!(saved["env"]["KEEP"], "me");
    let resolved = events.of("permission_resolved");
    assert_eq!(resolved[0]["resolution"]["scope"], "always");
    assert_eq!(
        resolved[0]["resolution"]["settings_file"],
        json!(project.path(".claude/settings.local.json"))
    );
    session
        .shutdown(robota::hooks::SessionEndReason::Other)
        .await;

    // A new session with no handler at all: the saved rule allows the call.
    std::fs::remove_file(project.path("a.txt")).expect("rm");
    let mock = Mock::start(json!({"turns": [
        tool_turn("toolu_9", "Bash", json!({"command": "touch a.txt"})),
        text_turn("again"),
    ]}))
    .await;
    let events = Events::default();
    let next = session_common::session(options(&project, &mock, &events));
    next.run("touch it again").await.expect("run");
    assert!(project.path("a.txt").exists());
    assert!(events.of("permission_request").is_empty());
}

#[tokio::test]
async fn allow_always_that_cannot_be_saved_is_reported_and_holds_for_the_session() {
    let project = Project::new();
    // A directory where the file should be: the write must fail.
    std::fs::create_dir_all(project.path(".claude/settings.local.json")).expect("mkdir");
    let mock = Mock::start(twice("touch a.txt")).await;
    let events = Events::default();
    let handler = Handler::default();
    let session = session(
        options(&project, &mock, &events)
            .with_settings(robota::session::SessionSettings::None)
            .with_permission_handler(handler.answering(vec![PermissionResponse::allow_always(
                SettingsDestination::LocalSettings,
            )])),
    );
    session.run("touch it").await.expect("run");
    assert!(project.path("a.txt").exists(), "the user said yes");
    assert_eq!(handler.count(), 1, "the rule holds for the session");
    let failures = events.of("settings_write_failed");
    assert_eq!(failures.len(), 1, "{:?}", events.kinds());
    assert_eq!(
        failures[0]["file"],
        json!(project.path(".claude/settings.local.json"))
    );
    let resolved = events.of("permission_resolved");
    assert_eq!(resolved[0]["resolution"]["scope"], "session");
    assert!(resolved[0]["resolution"]["error"].is_string());
}

#[tokio::test]
async fn deny_sends_the_message_to_the_model() {
    let project = Project::new();
    let mock = Mock::start(json!({"turns": [
        tool_turn("toolu_1", "Bash", json!({"command": "touch a.txt"})),
        text_turn("understood"),
    ]}))
    .await;
    let events = Events::default();
    let handler = Handler::default();
    let session = session(options(&project, &mock, &events).with_permission_handler(
        handler.answering(vec![PermissionResponse::deny("use make instead")]),
    ));
    session.run("touch it").await.expect("run");
    assert!(!project.path("a.txt").exists());
    let result = mock.result_for("toolu_1");
    assert!(result.contains("use make instead"), "{result}");
    let resolved = events.of("permission_resolved");
    assert_eq!(resolved[0]["resolution"]["decision"], "denied");
}

#[tokio::test]
async fn allow_with_input_runs_the_call_with_the_handlers_input() {
    let project = Project::new();
    project.settings(
        ".claude/settings.json",
        json!({"permissions": {"deny": ["Bash(rm *)"]}}),
    );
    let mock = Mock::start(json!({"turns": [
        tool_turn("toolu_1", "Bash", json!({"command": "touch asked.txt"})),
        tool_turn("toolu_2", "Bash", json!({"command": "touch asked.txt"})),
        tool_turn("toolu_3", "Bash", json!({"command": "touch again.txt"})),
        text_turn("done"),
    ]}))
    .await;
    let events = Events::default();
    let handler = Handler::default();
    let session = session(options(&project, &mock, &events).with_permission_handler(
        handler.answering(vec![
            PermissionResponse::allow_with_input(json!({"command": "touch changed.txt"})),
            // A changed input is checked against the deny rules.
            PermissionResponse::allow_with_input(json!({"command": "rm -rf ."})),
            // With rules: remembered for the session, like allow for the session.
            PermissionResponse::AllowWithInput {
                input: json!({"command": "touch third.txt"}),
                rules: vec!["Bash(touch *)".into()],
                destination: None,
            },
        ]),
    ));
    session.run("touch it").await.expect("run");
    assert!(project.path("changed.txt").exists());
    assert!(!project.path("asked.txt").exists());
    let refused = mock.result_for("toolu_2");
    assert!(refused.contains("denied"), "{refused}");
    assert!(project.path("third.txt").exists());
    assert!(!project.path("again.txt").exists());
    assert_eq!(session.session_allowed_rules(), ["Bash(touch *)"]);
    let resolved = events.of("permission_resolved");
    assert_eq!(resolved[0]["resolution"]["decision"], "allowed");
    assert_eq!(resolved[1]["resolution"]["decision"], "denied");
    assert_eq!(resolved[2]["resolution"]["scope"], "session");
}

#[tokio::test]
async fn without_a_handler_ask_becomes_deny_with_an_explanation() {
    let project = Project::new();
    let mock = Mock::start(json!({"turns": [
        tool_turn("toolu_1", "Bash", json!({"command": "touch a.txt"})),
        text_turn("ok"),
    ]}))
    .await;
    let events = Events::default();
    let session = session(options(&project, &mock, &events));
    session.run("touch it").await.expect("run");
    assert!(!project.path("a.txt").exists());
    let result = mock.result_for("toolu_1");
    assert!(result.contains("no permission handler"), "{result}");
    assert!(result.contains("permissions.allow"), "{result}");
    assert!(
        result.contains("Bash(touch"),
        "names the rule to add: {result}"
    );
    let requested = events.of("permission_request");
    let resolved = events.of("permission_resolved");
    assert_eq!(requested.len(), 1);
    assert_eq!(resolved.len(), 1);
    assert_eq!(resolved[0]["resolved_by"], "no_handler");
    assert_eq!(resolved[0]["resolution"]["decision"], "denied");
}

#[tokio::test]
async fn plan_mode_blocks_writes_and_allows_reads() {
    let project = Project::new();
    project.write("notes.txt", "read me");
    project.settings(
        ".claude/settings.json",
        json!({"permissions": {"defaultMode": "plan"}}),
    );
    let mock = Mock::start(json!({"turns": [
        {"tool_calls": [
            {"id": "toolu_r", "name": "Read", "input": {"file_path": "notes.txt"}},
            {"id": "toolu_w", "name": "Write", "input": {"file_path": "plan.txt", "content": "x"}}
        ]},
        text_turn("planned"),
    ]}))
    .await;
    let handler = Handler::default();
    let session = session(
        options(&project, &mock, &Events::default())
            .with_permission_handler(handler.answering(vec![PermissionResponse::AllowOnce])),
    );
    assert_eq!(session.permission_mode(), PermissionMode::Plan);
    session.run("plan it").await.expect("run");
    assert!(!project.path("plan.txt").exists());
    assert_eq!(handler.count(), 0, "plan mode denies without asking");
    let write = mock.result_for("toolu_w");
    assert!(write.to_lowercase().contains("plan"), "{write}");
    assert!(mock.result_for("toolu_r").contains("read me"));
}

#[tokio::test]
async fn accept_edits_allows_workspace_edits_but_asks_for_settings_files() {
    let project = Project::new();
    project.write("src/main.rs", "fn main() { old(); }\n");
    project.settings(
        ".claude/settings.json",
        json!({"permissions": {"defaultMode": "acceptEdits"}}),
    );
    let original_settings = project.read(".claude/settings.json");
    let settings_path = project
        .path(".claude/settings.json")
        .to_string_lossy()
        .to_string();
    let mock = Mock::start(json!({"turns": [
        tool_turn("toolu_e", "Edit", json!({"file_path": "src/main.rs", "old_string": "old()", "new_string": "new()"})),
        tool_turn("toolu_s", "Write", json!({"file_path": settings_path, "content": "{}"})),
        text_turn("done"),
    ]}))
    .await;
    let handler = Handler::default();
    let session = session(
        options(&project, &mock, &Events::default())
            .with_permission_handler(handler.answering(vec![PermissionResponse::deny("no")])),
    );
    session.run("edit").await.expect("run");
    assert_eq!(project.read("src/main.rs"), "fn main() { new(); }\n");
    assert_eq!(
        handler.tools(),
        vec!["Write"],
        "only the settings write was asked about"
    );
    let request = handler.requests.lock().unwrap()[0].clone();
    assert_eq!(
        serde_json::to_value(request.basis).unwrap(),
        json!("sensitive_path")
    );
    assert_eq!(project.read(".claude/settings.json"), original_settings);
}

#[tokio::test]
async fn bypass_permissions_still_honours_deny_rules() {
    let project = Project::new();
    project.write("keep/file.txt", "precious");
    project.settings(
        ".claude/settings.json",
        json!({"permissions": {"defaultMode": "bypassPermissions", "deny": ["Bash(rm *)"]}}),
    );
    let mock = Mock::start(json!({"turns": [
        {"tool_calls": [
            {"id": "toolu_rm", "name": "Bash", "input": {"command": "rm -rf keep"}},
            {"id": "toolu_ok", "name": "Bash", "input": {"command": "touch made.txt"}}
        ]},
        text_turn("ok"),
    ]}))
    .await;
    let handler = Handler::default();
    let session = session(
        options(&project, &mock, &Events::default())
            .with_permission_handler(handler.answering(vec![PermissionResponse::AllowOnce])),
    );
    session.run("go").await.expect("run");
    assert_eq!(project.read("keep/file.txt"), "precious");
    assert!(project.path("made.txt").exists());
    assert_eq!(handler.count(), 0);
    assert!(mock.result_for("toolu_rm").contains("Bash(rm *)"));
}

#[tokio::test]
async fn abort_while_a_permission_request_is_pending() {
    let project = Project::new();
    let mock = Mock::start(json!({"turns": [
        tool_turn("toolu_1", "Bash", json!({"command": "touch a.txt"})),
        text_turn("after the abort"),
    ]}))
    .await;
    let events = Events::default();
    let saw_cancel = Arc::new(AtomicBool::new(false));
    let flag = saw_cancel.clone();
    let handler = FnPermissionHandler::new(move |_request, cancel| {
        let flag = flag.clone();
        async move {
            // A host UI would take its prompt down when the token fires.
            let watcher = cancel.clone();
            tokio::spawn(async move {
                watcher.cancelled().await;
                flag.store(true, Ordering::SeqCst);
            });
            std::future::pending::<()>().await;
            PermissionResponse::AllowOnce
        }
    });
    let session = Arc::new(session(
        options(&project, &mock, &events).with_permission_handler(handler),
    ));
    let running = {
        let session = session.clone();
        tokio::spawn(async move { session.run("touch it").await })
    };
    for _ in 0..200 {
        if !events.of("permission_request").is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        events.of("permission_request").len(),
        1,
        "the request is pending"
    );
    assert!(session.is_running());
    session.abort();
    let outcome = tokio::time::timeout(Duration::from_secs(10), running)
        .await
        .expect("the run ends promptly")
        .expect("join")
        .expect("run");
    assert!(outcome.interrupted);
    assert!(!project.path("a.txt").exists());
    let resolved = events.of("permission_resolved");
    assert_eq!(resolved.len(), 1, "resolved exactly once: {resolved:#?}");
    assert_eq!(resolved[0]["resolution"]["decision"], "cancelled");
    assert_eq!(resolved[0]["resolved_by"], "abort");
    for _ in 0..100 {
        if saw_cancel.load(Ordering::SeqCst) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(
        saw_cancel.load(Ordering::SeqCst),
        "the handler saw the cancellation"
    );

    // The history is consistent (the call has its result) and the session still works.
    let messages = session.messages();
    let calls: usize = messages.iter().map(|m| m.tool_uses().count()).sum();
    let results = messages.iter().filter(|m| m.role == Role::Tool).count();
    assert_eq!(calls, 1);
    assert_eq!(results, 1);
    let outcome = session.run("carry on").await.expect("run");
    assert_eq!(outcome.response, "after the abort");
    assert_eq!(events.of("permission_resolved").len(), 1);
}

#[tokio::test]
async fn a_bare_name_deny_hides_the_tool_from_the_model() {
    let project = Project::new();
    project.settings(
        ".claude/settings.json",
        json!({"permissions": {"deny": ["WebFetch", "Bash(rm *)"]}}),
    );
    let mock = Mock::start(json!({"turns": [text_turn("hello")]})).await;
    let session = session(options(&project, &mock, &Events::default()));
    session.run("hi").await.expect("run");
    let offered = mock.tool_names(0);
    assert!(!offered.contains(&"WebFetch".to_string()), "{offered:?}");
    for tool in ["Bash", "Read", "Write", "Edit", "Glob", "Grep", "WebSearch"] {
        assert!(
            offered.contains(&tool.to_string()),
            "{tool} missing from {offered:?}"
        );
    }
    assert!(!session.tool_names().contains(&"WebFetch".to_string()));
}

#[tokio::test]
async fn symlinks_are_resolved_on_disk() {
    let project = Project::new();
    project.write("secrets/key.txt", "s3cr3t");
    std::fs::create_dir_all(project.path("docs")).expect("mkdir");
    std::os::unix::fs::symlink(project.path("secrets"), project.path("docs/s")).expect("symlink");
    project.settings(
        ".claude/settings.json",
        json!({"permissions": {"deny": ["Read(./secrets/**)"]}}),
    );
    let mock = Mock::start(json!({"turns": [
        tool_turn("toolu_1", "Read", json!({"file_path": "docs/s/key.txt"})),
        text_turn("ok"),
    ]}))
    .await;
    let session = session(options(&project, &mock, &Events::default()));
    session.run("read it").await.expect("run");
    let result = mock.result_for("toolu_1");
    assert!(!result.contains("s3cr3t"), "{result}");
    assert!(result.contains("Read(./secrets/**)"), "{result}");
}

#[tokio::test]
async fn settings_env_reaches_bash() {
    let project = Project::new();
    project.settings(
        ".claude/settings.json",
        json!({
            "env": {"SESSION_TEST_VAR": "from-settings"},
            "permissions": {"allow": ["Bash(printenv *)"]}
        }),
    );
    let mock = Mock::start(json!({"turns": [
        tool_turn("toolu_1", "Bash", json!({"command": "printenv SESSION_TEST_VAR"})),
        text_turn("ok"),
    ]}))
    .await;
    let session = session(options(&project, &mock, &Events::default()));
    session.run("show it").await.expect("run");
    assert!(mock.result_for("toolu_1").contains("from-settings"));
}

#[tokio::test]
async fn the_mode_can_change_between_calls() {
    let project = Project::new();
    let mock = Mock::start(json!({"turns": [
        tool_turn("toolu_1", "Write", json!({"file_path": "a.txt", "content": "x"})),
        text_turn("ok"),
    ]}))
    .await;
    let session = session(options(&project, &mock, &Events::default()));
    session
        .set_permission_mode(PermissionMode::AcceptEdits)
        .expect("mode");
    assert_eq!(session.permission_mode(), PermissionMode::AcceptEdits);
    session.run("write").await.expect("run");
    assert_eq!(project.read("a.txt"), "x", "acceptEdits needs no handler");
}

// ---------------------------------------------------------------------------------------------
// Bad settings

fn new_session(project: &Project) -> Result<Session, SessionError> {
    let provider = Arc::new(robota::provider::scripted::ScriptedProvider::new(Vec::new()));
    Session::new(
        robota::session::SessionOptions::new(&project.root, provider)
            .with_settings(project.session_settings()),
    )
}

#[test]
fn malformed_json_names_the_file_and_position() {
    let project = Project::new();
    let file = project.write(
        ".claude/settings.json",
        "{\n  \"permissions\": {\n    \"allow\": [\"Bash(ls)\",]\n",
    );
    let err = new_session(&project).expect_err("must fail");
    assert_eq!(err.file(), Some(file.as_path()));
    let text = err.to_string();
    assert!(text.contains(&file.display().to_string()), "{text}");
    assert!(text.contains(":3:"), "line number: {text}");
}

#[test]
fn an_unknown_mode_names_the_key() {
    let project = Project::new();
    let file = project.settings(
        ".claude/settings.json",
        json!({"permissions": {"defaultMode": "yolo"}}),
    );
    let err = new_session(&project).expect_err("must fail");
    assert_eq!(err.file(), Some(file.as_path()));
    assert_eq!(err.json_path(), Some("permissions.defaultMode"));
    assert!(err.to_string().contains("\"yolo\""), "{err}");
}

#[test]
fn a_bad_matcher_regex_names_the_key() {
    let project = Project::new();
    let file = project.settings(
        ".claude/settings.local.json",
        json!({"hooks": {"PreToolUse": [{"matcher": "Bash(", "hooks": [{"type": "command", "command": "true"}]}]}}),
    );
    let err = new_session(&project).expect_err("must fail");
    assert!(matches!(err, SessionError::InvalidHooks(_)), "{err:?}");
    assert_eq!(err.file(), Some(file.as_path()));
    assert_eq!(err.json_path(), Some("hooks.PreToolUse[0].matcher"));
    assert!(err.to_string().contains("invalid matcher regex"), "{err}");
}

#[test]
fn bad_rule_syntax_names_the_file_and_index() {
    let project = Project::new();
    let user = project.home.join(".claude/settings.json");
    std::fs::create_dir_all(user.parent().unwrap()).unwrap();
    std::fs::write(
        &user,
        r#"{"permissions": {"deny": ["Bash(ls)", "Two Words(x)"]}}"#,
    )
    .unwrap();
    // A deny rule whose tool cannot be read is the one rule form that stays fatal: robota cannot
    // tell what it was meant to protect.
    let err = new_session(&project).expect_err("must fail");
    match &err {
        SessionError::InvalidPermissionRules { errors } => {
            assert_eq!(errors.len(), 1);
            assert_eq!(errors[0].rule, "Two Words(x)");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(err.file(), Some(user.as_path()));
    assert_eq!(err.json_path(), Some("permissions.deny[1]"));
    assert!(err.to_string().contains("Two Words(x)"), "{err}");
    assert!(err.to_string().contains("cannot tell which tool"), "{err}");
}

#[test]
fn warnings_are_reported_not_swallowed() {
    let project = Project::new();
    let file = project.settings(
        ".claude/settings.json",
        json!({"permisions": {"allow": []}}),
    );
    let events = Events::default();
    let sink = events.0.clone();
    let provider = Arc::new(robota::provider::scripted::ScriptedProvider::new(Vec::new()));
    let session = Session::new(
        robota::session::SessionOptions::new(&project.root, provider)
            .with_settings(project.session_settings())
            .with_on_event(move |e| sink.lock().unwrap().push(e)),
    )
    .expect("warnings do not stop the session");
    assert_eq!(session.warnings().len(), 1, "{:?}", session.warnings());
    assert_eq!(session.warnings()[0].file.as_deref(), Some(file.as_path()));
    assert_eq!(session.warnings()[0].json_path, "permisions");
    let warned = events.of("settings_warning");
    assert_eq!(warned.len(), 1);
    assert_eq!(warned[0]["warning"]["json_path"], "permisions");
}

#[test]
fn bypass_can_be_disabled_by_settings() {
    let project = Project::new();
    project.settings(
        ".claude/settings.json",
        json!({"permissions": {"disableBypassPermissionsMode": "disable"}}),
    );
    let session = new_session(&project).expect("session");
    assert!(matches!(
        session.set_permission_mode(PermissionMode::BypassPermissions),
        Err(SessionError::BypassPermissionsDisabled)
    ));
    assert_eq!(session.permission_mode(), PermissionMode::Default);
}

#[test]
fn a_settings_error_keeps_the_loaders_own_error() {
    let project = Project::new();
    project.settings(
        ".claude/settings.json",
        json!({"permissions": {"defaultMode": "yolo"}}),
    );
    let err = new_session(&project).expect_err("must fail");
    let SessionError::Settings(problem) = &err else {
        panic!("not a settings error: {err:?}");
    };
    let loader_error = problem
        .error()
        .downcast_ref::<robota::framework::config::SettingsError>()
        .expect("the settings loader's error");
    assert_eq!(problem.to_string(), loader_error.to_string());
    assert_eq!(err.to_string(), loader_error.to_string());
}
