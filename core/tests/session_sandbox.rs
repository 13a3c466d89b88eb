//! The OS sandbox end to end through a real session driven by mock-llm: on by default in
//! bypassPermissions (a write outside the workspace does not happen and the tool result says
//! why), off with `sandbox.enabled: false` or the session option, off by default in the other
//! modes and following a switch to bypassPermissions, `failIfUnavailable`, `excludedCommands`,
//! `dangerouslyDisableSandbox`, sandboxed hook commands, and what the permission rules and the
//! model are told.
#![cfg(target_os = "linux")]

mod session_common;

use robota::permissions::PermissionMode;
use robota::session::{PermissionResponse, Session, SessionOptions};
use serde_json::{json, Value};
use session_common::*;

struct Outside {
    _dir: tempfile::TempDir,
    root: std::path::PathBuf,
}

fn outside() -> Outside {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path().canonicalize().expect("canonical");
    Outside { _dir: dir, root }
}

fn bash_turns(commands: &[Value]) -> Value {
    let mut turns: Vec<Value> = commands
        .iter()
        .enumerate()
        .map(|(i, input)| tool_turn(&format!("toolu_{i}"), "Bash", input.clone()))
        .collect();
    turns.push(text_turn("done"));
    json!({ "turns": turns })
}

async fn run_bash(
    project: &Project,
    commands: &[Value],
    configure: impl FnOnce(SessionOptions) -> SessionOptions,
) -> (Session, Mock) {
    let mock = Mock::start(bash_turns(commands)).await;
    let events = Events::default();
    let session = session(configure(options(project, &mock, &events)));
    let outcome = session.run("go").await.expect("run");
    assert_eq!(outcome.response, "done");
    (session, mock)
}

/// The content of every tool result the model got, in order.
fn results(mock: &Mock) -> Vec<String> {
    let last = mock.bodies().len() - 1;
    mock.tool_results(last)
        .into_iter()
        .map(|(_, c)| c)
        .collect()
}

#[tokio::test]
async fn bypass_permissions_sandboxes_bash_by_default() {
    let project = Project::new();
    let out = outside();
    let target = out.root.join("escaped.txt");
    let (session, mock) = run_bash(
        &project,
        &[
            json!({"command": format!("echo x > {}", target.display())}),
            json!({"command": "echo y > inside.txt && echo wrote-inside"}),
        ],
        |o| o.with_permission_mode(PermissionMode::BypassPermissions),
    )
    .await;
    assert!(
        !target.exists(),
        "the sandbox let a write outside the workspace happen"
    );
    assert_eq!(project.read("inside.txt"), "y\n");
    let results = results(&mock);
    assert!(results[0].contains("[sandbox]"), "{}", results[0]);
    assert!(
        results[0].contains("sandbox.filesystem.allowWrite"),
        "{}",
        results[0]
    );
    assert!(results[1].contains("wrote-inside"), "{}", results[1]);

    let status = session.sandbox_status();
    assert!(status.enabled && status.active, "{status:?}");
    assert!(status.writable_roots.contains(&project.root));
    assert!(status.guarantees.writes_confined);
    assert!(session.enforcer().context().sandbox.active);
    // The model is told in the Bash description.
    let tools = mock.bodies()[0]["tools"].clone();
    let bash = tools
        .as_array()
        .into_iter()
        .flatten()
        .find(|t| t["name"] == "Bash")
        .cloned()
        .unwrap_or_default();
    let description = bash["description"].as_str().unwrap_or_default();
    assert!(description.contains("OS sandbox"), "{description}");
    assert!(bash["input_schema"]["properties"]["dangerouslyDisableSandbox"].is_object());
}

#[tokio::test]
async fn enabled_false_or_the_session_option_turns_it_off() {
    for by_option in [false, true] {
        let project = Project::new();
        if !by_option {
            project.settings(
                ".claude/settings.json",
                json!({"sandbox": {"enabled": false}}),
            );
        } else {
            project.settings(
                ".claude/settings.json",
                json!({"sandbox": {"enabled": true}}),
            );
        }
        let out = outside();
        let target = out.root.join("written.txt");
        let (session, _mock) = run_bash(
            &project,
            &[json!({"command": format!("echo x > {}", target.display())})],
            |o| {
                let o = o.with_permission_mode(PermissionMode::BypassPermissions);
                if by_option {
                    o.with_sandbox(false)
                } else {
                    o
                }
            },
        )
        .await;
        assert!(
            target.exists(),
            "sandbox should be off (option: {by_option})"
        );
        let status = session.sandbox_status();
        assert!(!status.enabled && !status.active);
        assert!(status.reason.unwrap_or_default().contains("turned off"));
        assert!(!session.enforcer().context().sandbox.active);
    }
}

#[tokio::test]
async fn other_modes_are_unsandboxed_by_default_and_follow_a_switch_to_bypass() {
    let project = Project::new();
    let mock = Mock::start(json!({"turns": [text_turn("ok")]})).await;
    let events = Events::default();
    let session = session(options(&project, &mock, &events));
    let status = session.sandbox_status();
    assert!(!status.enabled);
    assert!(status
        .reason
        .unwrap_or_default()
        .contains("bypassPermissions"));
    // Asking for the policy while the sandbox is off must not spoil turning it on later.
    assert!(session
        .sandbox()
        .policy()
        .writable_roots
        .contains(&project.root));
    session
        .set_permission_mode(PermissionMode::BypassPermissions)
        .expect("bypass");
    assert!(session.sandbox_status().active);
    assert!(session.enforcer().context().sandbox.active);
    session
        .set_permission_mode(PermissionMode::Default)
        .expect("default");
    assert!(!session.sandbox_status().enabled);
}

#[tokio::test]
async fn fail_if_unavailable_refuses_instead_of_running_unsandboxed() {
    for fail in [true, false] {
        let project = Project::new();
        let hook_file = project.path("hook-ran.txt");
        project.settings(
            ".claude/settings.json",
            json!({
                "sandbox": {
                    "enabled": true,
                    "backend": "bwrap",
                    "bwrapPath": "/nonexistent/bwrap",
                    "failIfUnavailable": fail,
                    "hooks": true,
                },
                "hooks": {"PreToolUse": [group(Some("Bash"), vec![command(format!("touch {}", hook_file.display()))])]},
            }),
        );
        let (session, mock) = run_bash(&project, &[json!({"command": "touch ran.txt"})], |o| {
            o.with_permission_mode(PermissionMode::BypassPermissions)
        })
        .await;
        let status = session.sandbox_status();
        assert!(status.enabled && !status.active);
        assert!(
            status
                .reason
                .clone()
                .unwrap_or_default()
                .contains("/nonexistent/bwrap"),
            "{status:?}"
        );
        assert!(session.warnings().iter().any(|w| w.kind == "sandbox"));
        let result = results(&mock).remove(0);
        if fail {
            assert!(!project.path("ran.txt").exists());
            assert!(result.contains("failIfUnavailable"), "{result}");
            assert!(
                !hook_file.exists(),
                "a sandboxed hook must not run unsandboxed"
            );
        } else {
            assert!(project.path("ran.txt").exists(), "{result}");
            assert!(hook_file.exists());
        }
    }
}

#[tokio::test]
async fn excluded_commands_run_outside_and_disable_requests_need_approval() {
    let project = Project::new();
    project.settings(
        ".claude/settings.json",
        json!({"sandbox": {"excludedCommands": ["touch:*"]}}),
    );
    let out = outside();
    let excluded = out.root.join("excluded.txt");
    let refused = out.root.join("refused.txt");
    let compound = out.root.join("compound.txt");
    let (_session, mock) = run_bash(
        &project,
        &[
            json!({"command": format!("touch {}", excluded.display())}),
            json!({"command": format!("echo x > {}", refused.display()), "dangerouslyDisableSandbox": true}),
            json!({"command": format!("touch x && echo x > {}", compound.display())}),
        ],
        |o| o.with_permission_mode(PermissionMode::BypassPermissions),
    )
    .await;
    assert!(excluded.exists(), "an excluded command runs unsandboxed");
    assert!(
        !refused.exists(),
        "leaving the sandbox is never approved by bypassPermissions alone"
    );
    assert!(
        results(&mock)[1].contains("dangerouslyDisableSandbox"),
        "{}",
        results(&mock)[1]
    );
    assert!(
        !compound.exists(),
        "a compound command with a non-excluded part stays sandboxed"
    );

    // Approved by the user, the request runs outside the sandbox.
    let approved = out.root.join("approved.txt");
    let handler = Handler::default();
    run_bash(
        &project,
        &[json!({"command": format!("echo x > {}", approved.display()), "dangerouslyDisableSandbox": true})],
        |o| {
            o.with_permission_mode(PermissionMode::BypassPermissions)
                .with_permission_handler(handler.answering(vec![PermissionResponse::AllowOnce]))
        },
    )
    .await;
    assert_eq!(handler.count(), 1);
    assert!(approved.exists(), "an approved request runs unsandboxed");

    // With allowUnsandboxedCommands off the request is ignored: it runs sandboxed.
    let project = Project::new();
    project.settings(
        ".claude/settings.json",
        json!({"sandbox": {"allowUnsandboxedCommands": false}}),
    );
    let target = out.root.join("ignored.txt");
    let handler = Handler::default();
    run_bash(
        &project,
        &[json!({"command": format!("echo x > {}", target.display()), "dangerouslyDisableSandbox": true})],
        |o| {
            o.with_permission_mode(PermissionMode::BypassPermissions)
                .with_permission_handler(handler.answering(vec![PermissionResponse::AllowOnce]))
        },
    )
    .await;
    assert_eq!(
        handler.count(),
        0,
        "nothing to approve: the call stays sandboxed"
    );
    assert!(!target.exists());
}

#[tokio::test]
async fn hook_commands_run_sandboxed_with_sandbox_hooks() {
    for sandboxed in [true, false] {
        let project = Project::new();
        let out = outside();
        let target = out.root.join("hook.txt");
        let inside = project.path("hook-inside.txt");
        project.settings(
            ".claude/settings.json",
            json!({
                "sandbox": {"hooks": sandboxed},
                "hooks": {"PreToolUse": [group(Some("Bash"), vec![command(format!(
                    "echo in > {}; echo hook > {}; exit 0",
                    inside.display(),
                    target.display()
                ))])]},
            }),
        );
        run_bash(&project, &[json!({"command": "true"})], |o| {
            o.with_permission_mode(PermissionMode::BypassPermissions)
        })
        .await;
        assert!(inside.exists(), "the hook ran (sandbox.hooks: {sandboxed})");
        assert_eq!(target.exists(), !sandboxed, "sandbox.hooks: {sandboxed}");
    }
}

#[tokio::test]
async fn concrete_read_deny_and_edit_allow_rules_shape_the_sandbox() {
    let project = Project::new();
    let out = outside();
    project.write("secret.env", "TOKEN=1");
    project.settings(
        ".claude/settings.json",
        json!({"permissions": {
            "deny": ["Read(./secret.env)", "Read(**/*.pem)"],
            "allow": [format!("Edit(/{}/**)", out.root.display()), "Edit(src/**)".to_string()],
        }}),
    );
    let mock = Mock::start(json!({"turns": [text_turn("ok")]})).await;
    let events = Events::default();
    let session = session(
        options(&project, &mock, &events).with_permission_mode(PermissionMode::BypassPermissions),
    );
    let status = session.sandbox_status();
    assert_eq!(status.read_denied, vec![project.path("secret.env")]);
    assert!(status.writable_roots.contains(&out.root), "{status:?}");
}
