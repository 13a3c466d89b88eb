//! Hooks in a real session: settings written to a temp project (fake HOME), hook scripts in bash
//! and python (`tests/fixtures/session/`), the model played by mock-llm over loopback. Every
//! event the session fires (SessionStart, UserPromptSubmit, PreToolUse, PostToolUse,
//! PostToolUseFailure, PermissionRequest, Notification, Stop, StopFailure, SessionEnd) with exit
//! 0/2/other and JSON outputs, `updatedInput` reaching the tool, PreToolUse decisions against the
//! permission rules, prompts rejected, Stop forcing continuation and its cap, timeouts, parallel
//! handlers, and hook failures surfacing as `hook_error` events.
#![cfg(unix)]

mod session_common;

use std::sync::Arc;

use robota::engine::RunStopReason;
use robota::hooks::{FnHookCallback, HookCallbackResult, HookEvent, SessionEndReason};
use robota::session::{PermissionResponse, SessionError};
use serde_json::{json, Value};
use session_common::*;

fn hooks_settings(hooks: Value) -> Value {
    json!({"env": {"SESSION_TEST_VAR": "from-settings"}, "hooks": hooks})
}

fn by_event(records: &[Value], event: &str) -> Vec<Value> {
    records
        .iter()
        .filter(|r| r["hook_event_name"] == event)
        .cloned()
        .collect()
}

#[tokio::test]
async fn every_event_reaches_its_hooks_with_claude_code_stdin() {
    let project = Project::new();
    let log = project.scratch("log").join("events.jsonl");
    let log_s = log.to_string_lossy().to_string();
    let sh = |_: ()| command(fixture("record.sh", &[&log_s]));
    let py = |_: ()| command(fixture("record.py", &[&log_s]));
    project.settings(
        ".claude/settings.json",
        hooks_settings(json!({
            "SessionStart": [group(Some("startup"), vec![sh(())])],
            "UserPromptSubmit": [group(None, vec![py(())])],
            "PreToolUse": [group(Some("Bash|Read"), vec![sh(())])],
            "PermissionRequest": [group(Some("Bash"), vec![py(())])],
            "Notification": [group(Some("permission_prompt"), vec![sh(())])],
            "PostToolUse": [group(Some("*"), vec![py(())])],
            "PostToolUseFailure": [group(Some("Read"), vec![sh(())])],
            "Stop": [group(None, vec![py(())])],
            "SessionEnd": [group(None, vec![sh(())])],
        })),
    );
    let mock = Mock::start(json!({"turns": [
        {"tool_calls": [
            {"id": "toolu_bash", "name": "Bash", "input": {"command": "touch made.txt"}},
            {"id": "toolu_read", "name": "Read", "input": {"file_path": "missing.txt"}}
        ]},
        text_turn("done"),
    ]}))
    .await;
    let events = Events::default();
    let handler = Handler::default();
    let session = session(
        options(&project, &mock, &events)
            .with_permission_handler(handler.answering(vec![PermissionResponse::AllowOnce])),
    );
    let outcome = session.run("hello there").await.expect("run");
    assert_eq!(outcome.stop_reason, RunStopReason::Completed);
    assert_eq!(outcome.response, "done");
    assert!(
        project.path("made.txt").exists(),
        "the approved Bash call ran"
    );
    assert_eq!(handler.tools(), vec!["Bash"]);
    session.shutdown(SessionEndReason::Other).await;

    // Notification is fired without waiting for it; give it time to land.
    let mut records = records(&log);
    if by_event(&records, "Notification").is_empty() {
        records = wait_for_records(&log, records.len() + 1).await;
    }
    let id = session.session_id();
    let cwd = project.root.to_string_lossy().to_string();
    for record in &records {
        assert_eq!(record["session_id"], id, "{record}");
        assert_eq!(record["cwd"], cwd.as_str(), "{record}");
        assert_eq!(
            record["env_var"], "from-settings",
            "settings env reaches hooks: {record}"
        );
        assert!(record.get("transcript_path").is_some(), "{record}");
    }
    let one = |event: &str| {
        let found = by_event(&records, event);
        assert_eq!(found.len(), 1, "{event}: {records:#?}");
        found[0].clone()
    };

    let start = one("SessionStart");
    assert_eq!(start["source"], "startup");
    assert_eq!(start["model"], "claude-sonnet-4-5");

    let prompt = one("UserPromptSubmit");
    assert_eq!(prompt["prompt"], "hello there");
    assert_eq!(prompt["permission_mode"], "default");

    let pre = by_event(&records, "PreToolUse");
    assert_eq!(pre.len(), 2, "{pre:#?}");
    let pre_bash = pre.iter().find(|r| r["tool_name"] == "Bash").expect("Bash");
    assert_eq!(pre_bash["tool_input"], json!({"command": "touch made.txt"}));
    assert_eq!(pre_bash["tool_use_id"], "toolu_bash");

    let request = one("PermissionRequest");
    assert_eq!(request["tool_name"], "Bash");
    assert_eq!(request["tool_use_id"], "toolu_bash");
    assert_eq!(request["permission_suggestions"][0]["type"], "addRules");
    assert_eq!(
        request["permission_suggestions"][0]["rules"][0]["toolName"],
        "Bash"
    );

    let notification = one("Notification");
    assert_eq!(notification["notification_type"], "permission_prompt");
    assert!(notification["message"].as_str().unwrap().contains("Bash"));

    let post = one("PostToolUse");
    assert_eq!(post["tool_name"], "Bash");
    assert_eq!(post["tool_input"], json!({"command": "touch made.txt"}));
    assert!(post["tool_response"].is_object(), "{post}");
    assert!(post["duration_ms"].is_u64(), "{post}");

    let failure = one("PostToolUseFailure");
    assert_eq!(failure["tool_name"], "Read");
    assert_eq!(failure["tool_use_id"], "toolu_read");
    assert!(!failure["error"].as_str().unwrap().is_empty());
    assert_eq!(failure["is_interrupt"], false);

    let stop = one("Stop");
    assert_eq!(stop["stop_hook_active"], false);
    assert_eq!(stop["last_assistant_message"], "done");

    let end = one("SessionEnd");
    assert_eq!(end["reason"], "other");
    assert!(by_event(&records, "StopFailure").is_empty());
    assert!(
        events.of("hook_error").is_empty(),
        "{:?}",
        events.of("hook_error")
    );
}

#[tokio::test]
async fn stop_failure_fires_when_the_model_call_fails() {
    let project = Project::new();
    let log = project.scratch("log").join("events.jsonl");
    let log_s = log.to_string_lossy().to_string();
    project.settings(
        ".claude/settings.json",
        hooks_settings(json!({
            "StopFailure": [group(Some("server_error"), vec![command(fixture("record.py", &[&log_s]))])],
            "Stop": [group(None, vec![command(fixture("record.sh", &[&log_s]))])],
        })),
    );
    let mock = Mock::start(json!({"turns": [
        {"fault": {"kind": "status", "status": 500, "message": "upstream exploded"}},
        text_turn("recovered"),
    ]}))
    .await;
    let events = Events::default();
    let session = session(options(&project, &mock, &events));
    let outcome = session
        .run("hi")
        .await
        .expect("a model error is an outcome, not an Err");
    assert_eq!(outcome.stop_reason, RunStopReason::Error);
    let recorded = records(&log);
    let failures = by_event(&recorded, "StopFailure");
    assert_eq!(failures.len(), 1, "{recorded:#?}");
    assert_eq!(failures[0]["error"], "server_error");
    assert!(failures[0]["error_details"]
        .as_str()
        .unwrap()
        .contains("upstream exploded"));
    assert!(
        by_event(&recorded, "Stop").is_empty(),
        "Stop does not fire on failure"
    );

    // The session is still usable, and a successful turn fires Stop.
    let outcome = session.run("again").await.expect("run");
    assert_eq!(outcome.response, "recovered");
    assert_eq!(by_event(&records(&log), "Stop").len(), 1);
}

#[tokio::test]
async fn exit_two_blocks_other_codes_are_reported_and_ignored() {
    let project = Project::new();
    project.settings(
        ".claude/settings.json",
        json!({
            "permissions": {"defaultMode": "bypassPermissions"},
            "hooks": {
                "PreToolUse": [
                    group(Some("Write"), vec![command(fixture("respond.sh", &["2", "", "writes are frozen today"]))]),
                    group(Some("Bash"), vec![command(fixture("respond.py", &["1", "", "lint crashed"]))]),
                ]
            }
        }),
    );
    let mock = Mock::start(json!({"turns": [
        {"tool_calls": [
            {"id": "toolu_w", "name": "Write", "input": {"file_path": "frozen.txt", "content": "x"}},
            {"id": "toolu_b", "name": "Bash", "input": {"command": "touch ran.txt"}}
        ]},
        text_turn("ok"),
    ]}))
    .await;
    let events = Events::default();
    let session = session(options(&project, &mock, &events));
    let outcome = session.run("go").await.expect("run");
    assert_eq!(outcome.stop_reason, RunStopReason::Completed);

    assert!(
        !project.path("frozen.txt").exists(),
        "exit 2 blocked the write"
    );
    let write = mock.result_for("toolu_w");
    assert!(write.contains("writes are frozen today"), "{write}");

    assert!(project.path("ran.txt").exists(), "exit 1 does not block");
    let errors = events.of("hook_error");
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert_eq!(errors[0]["event"], "PreToolUse");
    assert_eq!(errors[0]["failure"]["kind"], "exit_code");
    assert_eq!(errors[0]["failure"]["code"], 1);
    assert!(errors[0]["message"]
        .as_str()
        .unwrap()
        .contains("lint crashed"));
}

/// One PreToolUse scenario against a `touch made.txt` call in default mode.
struct Case {
    name: &'static str,
    mode: &'static str,
    rules: Value,
    hooks: Vec<Value>,
    expect_ran: bool,
    expect_prompts: usize,
    expect_hook_ran: bool,
    expect_in_result: Option<&'static str>,
}

fn decision(value: &str, reason: &str) -> String {
    json!({"hookSpecificOutput": {
        "hookEventName": "PreToolUse",
        "permissionDecision": value,
        "permissionDecisionReason": reason,
    }})
    .to_string()
}

#[tokio::test]
async fn pre_tool_use_decisions_and_permission_rules() {
    let allow = decision("allow", "hook approves");
    let ask = decision("ask", "hook wants a human");
    let deny = decision("deny", "use the staging database");
    let cases = vec![
        Case {
            name: "hook allow skips the default prompt",
            mode: "default",
            rules: json!({}),
            hooks: vec![command(fixture("record.sh", &["LOG", &allow]))],
            expect_ran: true,
            expect_prompts: 0,
            expect_hook_ran: true,
            expect_in_result: None,
        },
        Case {
            name: "hook allow does not override an ask rule",
            mode: "default",
            rules: json!({"ask": ["Bash(touch *)"]}),
            hooks: vec![command(fixture("record.py", &["LOG", &allow]))],
            expect_ran: true,
            expect_prompts: 1,
            expect_hook_ran: true,
            expect_in_result: None,
        },
        Case {
            name: "a deny rule wins before the hook even runs",
            mode: "default",
            rules: json!({"deny": ["Bash(touch *)"]}),
            hooks: vec![command(fixture("record.sh", &["LOG", &allow]))],
            expect_ran: false,
            expect_prompts: 0,
            expect_hook_ran: false,
            expect_in_result: Some("permissions.deny[0]"),
        },
        Case {
            name: "hook ask forces a prompt despite an allow rule",
            mode: "default",
            rules: json!({"allow": ["Bash(touch *)"]}),
            hooks: vec![command(fixture("record.py", &["LOG", &ask]))],
            expect_ran: true,
            expect_prompts: 1,
            expect_hook_ran: true,
            expect_in_result: None,
        },
        Case {
            name: "hook deny beats an allow rule",
            mode: "default",
            rules: json!({"allow": ["Bash(touch *)"]}),
            hooks: vec![command(fixture("record.sh", &["LOG", &deny]))],
            expect_ran: false,
            expect_prompts: 0,
            expect_hook_ran: true,
            expect_in_result: Some("use the staging database"),
        },
        Case {
            name: "deny beats allow across parallel hooks",
            mode: "default",
            rules: json!({}),
            hooks: vec![
                command(fixture("record.sh", &["LOG", &allow])),
                command(fixture("record.py", &["LOG", &deny])),
            ],
            expect_ran: false,
            expect_prompts: 0,
            expect_hook_ran: true,
            expect_in_result: Some("use the staging database"),
        },
        Case {
            name: "no hook decision: the allow rule decides",
            mode: "default",
            rules: json!({"allow": ["Bash(touch *)"]}),
            hooks: vec![command(fixture("record.sh", &["LOG"]))],
            expect_ran: true,
            expect_prompts: 0,
            expect_hook_ran: true,
            expect_in_result: None,
        },
        Case {
            name: "no hook decision: default mode asks",
            mode: "default",
            rules: json!({}),
            hooks: vec![command(fixture("record.py", &["LOG"]))],
            expect_ran: true,
            expect_prompts: 1,
            expect_hook_ran: true,
            expect_in_result: None,
        },
        Case {
            name: "hook allow skips plan mode's ban",
            mode: "plan",
            rules: json!({}),
            hooks: vec![command(fixture("record.sh", &["LOG", &allow]))],
            expect_ran: true,
            expect_prompts: 0,
            expect_hook_ran: true,
            expect_in_result: None,
        },
        Case {
            name: "dontAsk turns a hook's ask into a denial",
            mode: "dontAsk",
            rules: json!({"allow": ["Bash(touch *)"]}),
            hooks: vec![command(fixture("record.py", &["LOG", &ask]))],
            expect_ran: false,
            expect_prompts: 0,
            expect_hook_ran: true,
            expect_in_result: Some("dontAsk"),
        },
    ];
    for case in cases {
        let project = Project::new();
        let log = project.scratch("log").join("pre.jsonl");
        let log_s = log.to_string_lossy().to_string();
        let hooks: Vec<Value> = case
            .hooks
            .iter()
            .map(|h| {
                let mut h = h.clone();
                h["command"] = json!(h["command"]
                    .as_str()
                    .unwrap()
                    .replace("'LOG'", &quote(&log_s)));
                h
            })
            .collect();
        let mut permissions = case.rules.clone();
        permissions["defaultMode"] = json!(case.mode);
        project.settings(
            ".claude/settings.json",
            json!({"permissions": permissions, "hooks": {"PreToolUse": [group(Some("Bash"), hooks)]}}),
        );
        let mock = Mock::start(json!({"turns": [
            tool_turn("toolu_1", "Bash", json!({"command": "touch made.txt"})),
            text_turn("ok"),
        ]}))
        .await;
        let events = Events::default();
        let handler = Handler::default();
        let session = session(
            options(&project, &mock, &events)
                .with_permission_handler(handler.answering(vec![PermissionResponse::AllowOnce])),
        );
        session.run("go").await.expect("run");
        assert_eq!(
            project.path("made.txt").exists(),
            case.expect_ran,
            "{}",
            case.name
        );
        assert_eq!(handler.count(), case.expect_prompts, "{}", case.name);
        assert_eq!(
            !records(&log).is_empty(),
            case.expect_hook_ran,
            "{}",
            case.name
        );
        if let Some(text) = case.expect_in_result {
            let result = mock.result_for("toolu_1");
            assert!(result.contains(text), "{}: {result}", case.name);
        }
    }
}

/// `updatedInput` reaches the tool (and the PostToolUse hook), over both wire formats.
#[tokio::test]
async fn updated_input_reaches_the_tool_anthropic() {
    updated_input_reaches_the_tool(Wire::Anthropic).await;
}

#[tokio::test]
async fn updated_input_reaches_the_tool_openai() {
    updated_input_reaches_the_tool(Wire::OpenAi).await;
}

async fn updated_input_reaches_the_tool(wire: Wire) {
    let project = Project::new();
    let log = project.scratch("log").join("post.jsonl");
    let log_s = log.to_string_lossy().to_string();
    let target = project.path("out.txt").to_string_lossy().to_string();
    let rewrite = json!({"hookSpecificOutput": {
        "hookEventName": "PreToolUse",
        "updatedInput": {"file_path": target, "content": "from the hook"},
    }})
    .to_string();
    project.settings(
        ".claude/settings.json",
        json!({
            "permissions": {"defaultMode": "acceptEdits"},
            "hooks": {
                "PreToolUse": [group(Some("Write"), vec![command(fixture("respond.py", &["0", &rewrite]))])],
                "PostToolUse": [group(Some("Write"), vec![command(fixture("record.sh", &[&log_s]))])],
            }
        }),
    );
    let mock = Mock::start_wire(
        wire,
        json!({"turns": [
            tool_turn("call_w", "Write", json!({"file_path": "out.txt", "content": "from the model"})),
            text_turn("written"),
        ]}),
    )
    .await;
    let events = Events::default();
    let session = session(options(&project, &mock, &events));
    let outcome = session.run("write it").await.expect("run");
    assert_eq!(outcome.response, "written");
    assert_eq!(project.read("out.txt"), "from the hook");
    let post = records(&log);
    assert_eq!(post.len(), 1);
    assert_eq!(post[0]["tool_input"]["content"], "from the hook");
    let starts = events.of("tool_start");
    assert_eq!(
        starts[0]["input"]["content"], "from the hook",
        "the UI sees the input that ran"
    );
}

#[tokio::test]
async fn updated_input_is_checked_by_the_deny_rules_again() {
    let project = Project::new();
    project.write("victim/keep.txt", "precious");
    let rewrite = json!({"hookSpecificOutput": {
        "hookEventName": "PreToolUse",
        "permissionDecision": "allow",
        "updatedInput": {"command": "rm -rf victim"},
    }})
    .to_string();
    project.settings(
        ".claude/settings.json",
        json!({
            "permissions": {"deny": ["Bash(rm *)"]},
            "hooks": {"PreToolUse": [group(Some("Bash"), vec![command(fixture("respond.sh", &["0", &rewrite]))])]}
        }),
    );
    let mock = Mock::start(json!({"turns": [
        tool_turn("toolu_1", "Bash", json!({"command": "touch fine.txt"})),
        text_turn("ok"),
    ]}))
    .await;
    let events = Events::default();
    let session = session(options(&project, &mock, &events));
    session.run("go").await.expect("run");
    assert_eq!(project.read("victim/keep.txt"), "precious");
    assert!(!project.path("fine.txt").exists());
    let result = mock.result_for("toolu_1");
    assert!(result.contains("Bash(rm *)"), "{result}");
}

#[tokio::test]
async fn user_prompt_submit_rejects_prompts_and_adds_model_only_context() {
    let project = Project::new();
    project.settings(
        ".claude/settings.json",
        hooks_settings(json!({
            "UserPromptSubmit": [group(None, vec![command(fixture("prompt_guard.py", &[]))])],
        })),
    );
    let mock = Mock::start(json!({"turns": [text_turn("hi!"), text_turn("again!")]})).await;
    let events = Events::default();
    let session = session(options(&project, &mock, &events));

    let err = session.run("what is the admin password?").await;
    match err {
        Err(SessionError::PromptRejected { reason }) => {
            assert!(reason.contains("must not contain passwords"), "{reason}")
        }
        other => panic!("expected a rejection, got {other:?}"),
    }
    let rejected = events.of("prompt_rejected");
    assert_eq!(rejected.len(), 1);
    assert_eq!(rejected[0]["prompt"], "what is the admin password?");
    assert!(mock.bodies().is_empty(), "nothing was sent to the model");
    assert!(session.messages().is_empty(), "the history is unchanged");

    let outcome = session.run("hello").await.expect("run");
    assert_eq!(outcome.response, "hi!");
    let sent = mock.user_texts(0);
    assert_eq!(sent.len(), 1);
    assert!(sent[0].contains("the default branch is main"), "{sent:?}");
    assert!(sent[0].ends_with("hello"), "{sent:?}");
    assert_eq!(
        session.messages()[0].text(),
        "hello",
        "history keeps the prompt as typed"
    );

    session.run("and now?").await.expect("run");
    let sent = mock.user_texts(1);
    assert_eq!(sent.len(), 2);
    assert!(sent[1].ends_with("and now?"));
}

#[tokio::test]
async fn user_prompt_submit_json_block_and_context() {
    let project = Project::new();
    project.settings(
        ".claude/settings.json",
        json!({"hooks": {"UserPromptSubmit": [group(None, vec![
            command(fixture("respond.sh", &["0", r#"{"decision": "block", "reason": "outside office hours"}"#])),
        ])]}}),
    );
    let mock = Mock::start(json!({"turns": [text_turn("never")]})).await;
    let events = Events::default();
    let session = session(options(&project, &mock, &events));
    let err = session.run("deploy").await;
    assert!(
        matches!(&err, Err(SessionError::PromptRejected { reason }) if reason == "outside office hours"),
        "{err:?}"
    );
    assert!(mock.bodies().is_empty());

    let project = Project::new();
    let context = json!({"hookSpecificOutput": {
        "hookEventName": "UserPromptSubmit",
        "additionalContext": "ticket ROB-42 is in progress",
    }})
    .to_string();
    project.settings(
        ".claude/settings.json",
        json!({"hooks": {"UserPromptSubmit": [group(None, vec![command(fixture("respond.py", &["0", &context]))])]}}),
    );
    let mock = Mock::start(json!({"turns": [text_turn("sure")]})).await;
    let second = session_common::session(options(&project, &mock, &Events::default()));
    second.run("status?").await.expect("run");
    let sent = mock.user_texts(0);
    assert!(sent[0].contains("ticket ROB-42 is in progress"), "{sent:?}");
    assert_eq!(second.messages()[0].text(), "status?");
}

#[tokio::test]
async fn stop_hook_block_makes_the_agent_continue() {
    let project = Project::new();
    let state = project.scratch("stop").join("stop.jsonl");
    let state_s = state.to_string_lossy().to_string();
    project.settings(
        ".claude/settings.json",
        json!({"hooks": {"Stop": [group(None, vec![command(fixture("stop_until.py", &[&state_s, "2"]))])]}}),
    );
    let mock = Mock::start(json!({"turns": [
        text_turn("first"), text_turn("second"), text_turn("third"),
    ]}))
    .await;
    let events = Events::default();
    let session = session(options(&project, &mock, &events));
    let outcome = session.run("start").await.expect("run");
    assert_eq!(outcome.response, "third");
    assert_eq!(outcome.rounds, 3, "rounds of the continuations add up");
    assert_eq!(mock.bodies().len(), 3);
    let sent = mock.user_texts(1);
    assert_eq!(
        sent.last().map(String::as_str),
        Some("Keep going: check #1 is not done")
    );

    let calls = records(&state);
    let active: Vec<bool> = calls
        .iter()
        .map(|c| c["stop_hook_active"].as_bool().unwrap())
        .collect();
    assert_eq!(active, vec![false, true, true]);
    assert_eq!(calls[0]["last_assistant_message"], "first");
    assert_eq!(events.of("stop_hook_continued").len(), 2);

    let texts: Vec<String> = session.messages().iter().map(|m| m.text()).collect();
    assert_eq!(
        texts,
        vec![
            "start",
            "first",
            "Keep going: check #1 is not done",
            "second",
            "Keep going: check #2 is not done",
            "third"
        ]
    );
}

#[tokio::test]
async fn consecutive_stop_blocks_are_capped() {
    let project = Project::new();
    let state = project.scratch("stop").join("stop.jsonl");
    let state_s = state.to_string_lossy().to_string();
    project.settings(
        ".claude/settings.json",
        json!({"hooks": {"Stop": [group(None, vec![command(fixture("stop_until.py", &[&state_s, "1000"]))])]}}),
    );
    let mock = Mock::start(json!({"repeat": true, "turns": [text_turn("again")]})).await;
    let events = Events::default();
    let session = session(options(&project, &mock, &events));
    let outcome = session.run("loop").await.expect("run");
    assert_eq!(outcome.stop_reason, RunStopReason::Completed);
    let max = robota::hooks::MAX_CONSECUTIVE_STOP_BLOCKS as usize;
    assert_eq!(events.of("stop_hook_continued").len(), max);
    assert_eq!(events.of("stop_hook_limit_reached").len(), 1);
    assert_eq!(
        records(&state).len(),
        max + 1,
        "Stop ran once more than it was honoured"
    );
    assert_eq!(mock.bodies().len(), max + 1);
}

#[tokio::test]
async fn parallel_handlers_and_timeouts() {
    let project = Project::new();
    let barrier = project.scratch("barrier");
    let b = barrier.to_string_lossy().to_string();
    project.settings(
        ".claude/settings.json",
        json!({
            "permissions": {"defaultMode": "bypassPermissions"},
            "hooks": {"PreToolUse": [
                group(Some("Bash"), vec![
                    command(fixture("barrier.sh", &[&b, "bash-hook", "python-hook"])),
                    command(fixture("barrier.py", &[&b, "python-hook", "bash-hook"])),
                ]),
                group(Some("Bash"), vec![command_with_timeout(fixture("sleep.sh", &["30"]), 1.0)]),
            ]}
        }),
    );
    let mock = Mock::start(json!({"turns": [
        tool_turn("toolu_1", "Bash", json!({"command": "touch made.txt"})),
        text_turn("ok"),
    ]}))
    .await;
    let events = Events::default();
    let session = session(options(&project, &mock, &events));
    session.run("go").await.expect("run");
    let messages: Vec<String> = events
        .of("hook_system_message")
        .iter()
        .map(|m| m["message"].as_str().unwrap().to_string())
        .collect();
    assert!(
        messages.contains(&"bash-hook saw python-hook".to_string()),
        "{messages:?}"
    );
    assert!(
        messages.contains(&"python-hook saw bash-hook".to_string()),
        "{messages:?}"
    );
    let errors = events.of("hook_error");
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert_eq!(errors[0]["failure"]["kind"], "timeout");
    assert_eq!(errors[0]["failure"]["timeout_ms"], 1000);
    assert!(
        project.path("made.txt").exists(),
        "a timed-out hook decides nothing"
    );
}

#[tokio::test]
async fn hook_failures_surface_as_events_and_never_stop_the_session() {
    let project = Project::new();
    project.settings(
        ".claude/settings.json",
        json!({
            "permissions": {"defaultMode": "bypassPermissions"},
            "hooks": {"PostToolUse": [group(None, vec![
                command(fixture("respond.sh", &["1", "", "boom"])),
                command(fixture("respond.py", &["0", "{not json"])),
                command("/nonexistent/robota-hook-script".into()),
                command(fixture("respond.py", &["3", "", "python failed"])),
            ])]}
        }),
    );
    let mock = Mock::start(json!({"turns": [
        tool_turn("toolu_1", "Bash", json!({"command": "touch made.txt"})),
        text_turn("fine"),
    ]}))
    .await;
    let events = Events::default();
    let session = session(options(&project, &mock, &events));
    let outcome = session.run("go").await.expect("run");
    assert_eq!(outcome.response, "fine");
    assert!(project.path("made.txt").exists());
    let errors = events.of("hook_error");
    let kinds: Vec<(String, Option<i64>)> = errors
        .iter()
        .map(|e| {
            (
                e["failure"]["kind"].as_str().unwrap().to_string(),
                e["failure"]["code"].as_i64(),
            )
        })
        .collect();
    assert_eq!(errors.len(), 4, "{errors:#?}");
    assert!(kinds.contains(&("exit_code".into(), Some(1))), "{kinds:?}");
    assert!(
        kinds.contains(&("malformed_output".into(), None)),
        "{kinds:?}"
    );
    assert!(
        kinds.contains(&("exit_code".into(), Some(127))),
        "{kinds:?}"
    );
    assert!(kinds.contains(&("exit_code".into(), Some(3))), "{kinds:?}");
    assert!(errors.iter().all(|e| e["event"] == "PostToolUse"));
}

#[tokio::test]
async fn a_hook_too_long_to_read_blocks_the_tool_call() {
    // A PreToolUse hook that prints a multi-megabyte "block" decision, and one that prints
    // malformed JSON: neither answer can be read, so neither call runs (hooks fail closed), and
    // the model is told why.
    let project = Project::new();
    project.settings(
        ".claude/settings.json",
        json!({
            "permissions": {"defaultMode": "bypassPermissions"},
            "hooks": {"PreToolUse": [
                group(Some("Bash"), vec![command(fixture("huge_decision.sh", &["4000000"]))]),
                group(Some("Write"), vec![command(fixture("respond.sh", &["0", "{\"decision\": \"blo"]))]),
            ]}
        }),
    );
    let mock = Mock::start(json!({"turns": [
        {"tool_calls": [
            {"id": "toolu_bash", "name": "Bash", "input": {"command": "touch made.txt"}},
            {"id": "toolu_write", "name": "Write", "input": {"file_path": "written.txt", "content": "x"}}
        ]},
        text_turn("understood"),
    ]}))
    .await;
    let events = Events::default();
    let session = session(options(&project, &mock, &events));
    let outcome = session.run("go").await.expect("run");
    assert_eq!(outcome.response, "understood");
    assert!(
        !project.path("made.txt").exists(),
        "the blocked Bash call ran"
    );
    assert!(
        !project.path("written.txt").exists(),
        "the blocked Write ran"
    );
    let bash = mock.result_for("toolu_bash");
    assert!(bash.contains("huge_decision.sh"), "{bash}");
    assert!(bash.contains("over the 1 MiB hook output limit"), "{bash}");
    let write = mock.result_for("toolu_write");
    assert!(write.contains("not valid hook JSON"), "{write}");
    // Both are reported, as failures that blocked the call (not as mere non-blocking errors).
    let errors = events.of("hook_error");
    assert_eq!(errors.len(), 2, "{errors:#?}");
    assert!(errors.iter().all(|e| e["blocked"] == true), "{errors:#?}");
}

#[tokio::test]
async fn post_tool_hooks_feed_back_to_the_model() {
    let project = Project::new();
    let feedback = json!({
        "decision": "block",
        "reason": "lint failed: missing semicolon",
        "hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "formatter ran"},
    })
    .to_string();
    let pre_context = json!({"hookSpecificOutput": {
        "hookEventName": "PreToolUse",
        "additionalContext": "style guide v2 applies to a.js",
    }})
    .to_string();
    project.settings(
        ".claude/settings.json",
        json!({
            "permissions": {"defaultMode": "acceptEdits"},
            "hooks": {
                "PreToolUse": [group(Some("Write"), vec![command(fixture("respond.sh", &["0", &pre_context]))])],
                "PostToolUse": [group(Some("Write"), vec![command(fixture("respond.py", &["0", &feedback]))])],
                "PostToolUseFailure": [group(Some("Read"), vec![command(fixture("respond.sh", &["2", "", "retry with an absolute path"]))])],
            }
        }),
    );
    let mock = Mock::start(json!({"turns": [
        {"tool_calls": [
            {"id": "toolu_w", "name": "Write", "input": {"file_path": "a.js", "content": "let a = 1"}},
            {"id": "toolu_r", "name": "Read", "input": {"file_path": "nope.txt"}}
        ]},
        text_turn("ok"),
    ]}))
    .await;
    let session = session(options(&project, &mock, &Events::default()));
    session.run("go").await.expect("run");
    assert_eq!(
        project.read("a.js"),
        "let a = 1",
        "the write itself happened"
    );
    let write = mock.result_for("toolu_w");
    assert!(write.contains("lint failed: missing semicolon"), "{write}");
    assert!(write.contains("formatter ran"), "{write}");
    assert!(write.contains("style guide v2 applies to a.js"), "{write}");
    let read = mock.result_for("toolu_r");
    assert!(read.contains("retry with an absolute path"), "{read}");
}

#[tokio::test]
async fn session_start_context_goes_with_the_first_prompt_and_session_end_fires_once() {
    let project = Project::new();
    let log = project.scratch("log").join("end.jsonl");
    let log_s = log.to_string_lossy().to_string();
    project.settings(
        ".claude/settings.json",
        json!({"hooks": {
            "SessionStart": [group(None, vec![command(fixture("respond.sh", &["0", "This project indents with tabs."]))])],
            "SessionEnd": [group(None, vec![command(fixture("record.py", &[&log_s]))])],
        }}),
    );
    let mock = Mock::start(json!({"turns": [text_turn("one"), text_turn("two")]})).await;
    let session = Arc::new(session(options(&project, &mock, &Events::default())));
    session.start().await;
    session.run("hi").await.expect("run");
    session.run("again").await.expect("run");
    assert!(mock.user_texts(0)[0].contains("indents with tabs"));
    let second = mock.user_texts(1);
    assert_eq!(
        second.last().map(String::as_str),
        Some("again"),
        "only the first prompt"
    );

    let (a, b) = tokio::join!(
        session.shutdown(SessionEndReason::PromptInputExit),
        session.shutdown(SessionEndReason::Other)
    );
    let _ = (a, b);
    session.shutdown(SessionEndReason::Other).await;
    let ends = records(&log);
    assert_eq!(ends.len(), 1, "SessionEnd fires exactly once: {ends:#?}");
    assert!(matches!(
        session.run("late").await,
        Err(SessionError::ShutDown)
    ));
}

#[tokio::test]
async fn permission_request_hooks_answer_before_the_handler() {
    for (answer, expect_ran, expect_text) in [
        (
            json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {"behavior": "allow"}}}),
            true,
            None,
        ),
        (
            json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {"behavior": "deny", "message": "the on-call engineer says no"}}}),
            false,
            Some("the on-call engineer says no"),
        ),
    ] {
        let project = Project::new();
        project.settings(
            ".claude/settings.json",
            json!({"hooks": {"PermissionRequest": [group(Some("Bash"), vec![
                command(fixture("respond.py", &["0", &answer.to_string()])),
            ])]}}),
        );
        let mock = Mock::start(json!({"turns": [
            tool_turn("toolu_1", "Bash", json!({"command": "touch made.txt"})),
            text_turn("ok"),
        ]}))
        .await;
        let events = Events::default();
        let handler = Handler::default();
        let session = session(
            options(&project, &mock, &events)
                .with_permission_handler(handler.answering(vec![PermissionResponse::deny("no")])),
        );
        session.run("go").await.expect("run");
        assert_eq!(handler.count(), 0, "the hook answered");
        assert!(events.of("permission_request").is_empty());
        assert_eq!(project.path("made.txt").exists(), expect_ran);
        if let Some(text) = expect_text {
            assert!(mock.result_for("toolu_1").contains(text));
        }
    }
}

#[tokio::test]
async fn continue_false_stops_the_agent() {
    let project = Project::new();
    let log = project.scratch("log").join("stop.jsonl");
    let log_s = log.to_string_lossy().to_string();
    project.settings(
        ".claude/settings.json",
        json!({
            "permissions": {"defaultMode": "bypassPermissions"},
            "hooks": {
                "PreToolUse": [group(Some("Bash"), vec![command(fixture("respond.sh", &["0", r#"{"continue": false, "stopReason": "budget exhausted"}"#]))])],
                "Stop": [group(None, vec![command(fixture("record.sh", &[&log_s]))])],
            }
        }),
    );
    let mock = Mock::start(json!({"turns": [
        tool_turn("toolu_1", "Bash", json!({"command": "touch made.txt"})),
        text_turn("should not be asked for"),
    ]}))
    .await;
    let events = Events::default();
    let session = session(options(&project, &mock, &events));
    let outcome = session.run("go").await.expect("run");
    assert!(outcome.interrupted);
    assert!(!project.path("made.txt").exists());
    let stopped = events.of("agent_stopped");
    assert_eq!(stopped.len(), 1);
    assert_eq!(stopped[0]["reason"], "budget exhausted");
    assert!(
        records(&log).is_empty(),
        "Stop hooks do not run for a stopped agent"
    );
    assert_eq!(mock.bodies().len(), 1);
    // The history is consistent: the call has its result.
    let conversation = session.conversation();
    let results = conversation
        .messages()
        .filter(|m| m.role == robota::message::Role::Tool)
        .count();
    assert_eq!(results, 1);
}

#[tokio::test]
async fn in_process_callbacks_run_like_settings_hooks() {
    let project = Project::new();
    let mock = Mock::start(json!({"turns": [
        tool_turn("toolu_1", "Bash", json!({"command": "touch made.txt"})),
        text_turn("ok"),
    ]}))
    .await;
    let callback = FnHookCallback::new("guard", |input| async move {
        assert_eq!(input.tool_name(), Some("Bash"));
        HookCallbackResult::block("the host's guard refuses Bash")
    });
    let session = session(
        options(&project, &mock, &Events::default())
            .with_permission_mode(robota::permissions::PermissionMode::BypassPermissions)
            .with_hook_callback(HookEvent::PreToolUse, "Bash", callback),
    );
    session.run("go").await.expect("run");
    assert!(!project.path("made.txt").exists());
    assert!(mock
        .result_for("toolu_1")
        .contains("the host's guard refuses Bash"));
}

#[tokio::test]
async fn a_throwing_pre_tool_use_callback_blocks_the_call_in_a_real_session() {
    let project = Project::new();
    let mock = Mock::start(json!({"turns": [
        tool_turn("toolu_1", "Bash", json!({"command": "touch made.txt"})),
        text_turn("ok"),
    ]}))
    .await;
    let events = Events::default();
    let broken = FnHookCallback::new("guard", |_input| async move {
        HookCallbackResult::Error {
            message: "TypeError: guard() takes 0 positional arguments but 1 was given".into(),
        }
    });
    let session = session(
        options(&project, &mock, &events)
            .with_permission_mode(robota::permissions::PermissionMode::BypassPermissions)
            .with_hook_callback(HookEvent::PreToolUse, "Bash", broken),
    );
    session.run("go").await.expect("run");
    assert!(!project.path("made.txt").exists(), "fails closed");
    let result = mock.result_for("toolu_1");
    assert!(result.contains("hook callback `guard`"), "{result}");
    assert!(result.contains("takes 0 positional arguments"), "{result}");
    let reported: Vec<_> = events
        .all()
        .into_iter()
        .filter_map(|e| match &e {
            robota::session::SessionEvent::HookError { blocked, .. } => {
                Some((*blocked, e.developer_warning().unwrap_or_default()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(reported.len(), 1, "{reported:?}");
    assert!(reported[0].0);
    assert!(reported[0].1.contains("guard"), "{}", reported[0].1);
    assert!(reported[0].1.contains("the tool call was blocked"));
}

#[tokio::test]
async fn an_on_failure_policy_an_event_cannot_honour_is_refused() {
    let project = Project::new();
    let mock = Mock::start(json!({"turns": []})).await;
    let mut registration = robota::session::HookCallbackRegistration::new(
        HookEvent::PostToolUse,
        "",
        FnHookCallback::new("audit", |_input| async { HookCallbackResult::Continue }),
    );
    registration.on_failure = Some(robota::hooks::OnHookFailure::Block);
    let mut options = options(&project, &mock, &Events::default());
    options.hook_callbacks.push(registration);
    let error = robota::session::Session::new(options).expect_err("refused");
    assert!(matches!(error, SessionError::InvalidHookCallback { .. }));
    assert!(error.to_string().contains("PostToolUse"), "{error}");
}

/// PostToolUse hooks written for Claude Code read `tool_response.filePath`,
/// `structuredPatch[].oldStart`, Edit's `oldString` and Read's nested `file`; robota's own
/// snake_case fields stay beside them.
#[tokio::test]
async fn post_tool_use_tool_response_has_claude_code_field_names() {
    let project = Project::new();
    project.write("notes.txt", "alpha\nbeta\n");
    let log = project.scratch("log").join("post.jsonl");
    let log_s = log.to_string_lossy().to_string();
    project.settings(
        ".claude/settings.json",
        json!({
            "permissions": {"defaultMode": "acceptEdits"},
            "hooks": {
                "PostToolUse": [group(Some("Write|Edit|Read"), vec![command(fixture("record.py", &[&log_s]))])],
            }
        }),
    );
    let mock = Mock::start(json!({"turns": [
        tool_turn("call_w", "Write", json!({"file_path": "new.txt", "content": "one\n"})),
        tool_turn("call_e", "Edit", json!({"file_path": "notes.txt", "old_string": "beta", "new_string": "gamma"})),
        tool_turn("call_r", "Read", json!({"file_path": "notes.txt"})),
        text_turn("done"),
    ]}))
    .await;
    let events = Events::default();
    let session = session(options(&project, &mock, &events));
    let outcome = session.run("edit things").await.expect("run");
    assert_eq!(outcome.response, "done");
    let records = records(&log);
    let of = |tool: &str| {
        records
            .iter()
            .find(|r| r["tool_name"] == tool)
            .unwrap_or_else(|| panic!("no PostToolUse for {tool}: {records:#?}"))["tool_response"]
            .clone()
    };
    let write = of("Write");
    assert_eq!(write["type"], "create");
    assert_eq!(write["filePath"], write["file_path"]);
    assert_eq!(write["content"], "one\n");
    let edit = of("Edit");
    assert!(
        edit["filePath"]
            .as_str()
            .is_some_and(|p| p.ends_with("notes.txt")),
        "{edit}"
    );
    assert_eq!(
        (edit["oldString"].as_str(), edit["newString"].as_str()),
        (Some("beta"), Some("gamma"))
    );
    let hunk = &edit["structuredPatch"][0];
    assert!(
        hunk["oldStart"].is_u64() && hunk["newLines"].is_u64(),
        "{edit}"
    );
    assert!(
        hunk["lines"]
            .as_array()
            .is_some_and(|l| l.iter().any(|x| x == "+gamma")),
        "{edit}"
    );
    assert!(
        edit["structured_patch"].is_array(),
        "snake_case kept: {edit}"
    );
    let read = of("Read");
    assert_eq!(read["file"]["content"], "alpha\ngamma\n");
    assert_eq!(read["file"]["totalLines"], 2);
    assert!(read["file"]["filePath"]
        .as_str()
        .is_some_and(|p| p.ends_with("notes.txt")));
}

/// Background hooks (`async`, `asyncRewake`) do not hold the turn up; what they report arrives
/// with the next prompt, as in Claude Code.
#[tokio::test]
async fn background_hook_results_reach_the_model_with_the_next_prompt() {
    let project = Project::new();
    project.write("a.txt", "hello\n");
    let context_done = project.scratch("marks").join("context.done");
    let rewake_done = project.scratch("marks").join("rewake.done");
    let context_hook = format!(
        "cat > /dev/null; sleep 0.3; printf '%s' '{}'; touch {}",
        json!({"hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "background lint passed"}}),
        quote(&context_done.to_string_lossy())
    );
    let rewake_hook = format!(
        "cat > /dev/null; sleep 0.3; echo 'tests failed in a.txt' >&2; touch {}; exit 2",
        quote(&rewake_done.to_string_lossy())
    );
    project.settings(
        ".claude/settings.json",
        json!({"hooks": {"PostToolUse": [group(Some("Read"), vec![
            json!({"type": "command", "command": context_hook, "async": true}),
            json!({"type": "command", "command": rewake_hook, "asyncRewake": true}),
        ])]}}),
    );
    let mock = Mock::start(json!({"turns": [
        tool_turn("toolu_r", "Read", json!({"file_path": "a.txt"})),
        text_turn("read it"),
        text_turn("noted"),
    ]}))
    .await;
    let session = session(options(&project, &mock, &Events::default()));
    let first = session.run("read a.txt").await.expect("first run");
    assert_eq!(first.response, "read it");
    let result = mock.result_for("toolu_r");
    assert!(
        !result.contains("background lint passed"),
        "a background hook does not hold the tool result: {result}"
    );
    // Wait for both hooks to finish (their marks), plus time for the results to be sent.
    for _ in 0..200 {
        if context_done.exists() && rewake_done.exists() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(context_done.exists() && rewake_done.exists(), "hooks ran");
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    let second = session.run("anything new?").await.expect("second run");
    assert_eq!(second.response, "noted");
    let texts = mock.user_texts(2).join("\n");
    assert!(texts.contains("background lint passed"), "{texts}");
    assert!(
        texts.contains("A background PostToolUse hook reported: tests failed in a.txt"),
        "{texts}"
    );
}

/// SessionStart's `sessionTitle` names the session; a Stop hook's `additionalContext` (without a
/// block) reaches the model with the next prompt.
#[tokio::test]
async fn session_title_and_stop_context() {
    let project = Project::new();
    let title = json!({"hookSpecificOutput": {"hookEventName": "SessionStart", "sessionTitle": "Fix the login bug"}})
        .to_string();
    let stop = json!({"hookSpecificOutput": {"hookEventName": "Stop", "additionalContext": "remember to run the tests"}})
        .to_string();
    project.settings(
        ".claude/settings.json",
        hooks_settings(json!({
            "SessionStart": [group(None, vec![command(fixture("respond.sh", &["0", &title]))])],
            "Stop": [group(None, vec![command(fixture("respond.sh", &["0", &stop]))])],
        })),
    );
    let mock = Mock::start(json!({"turns": [text_turn("first"), text_turn("second")]})).await;
    let session = session(options(&project, &mock, &Events::default()));
    assert_eq!(session.run("one").await.expect("run").response, "first");
    assert_eq!(session.get_name().as_deref(), Some("Fix the login bug"));
    let first = mock.user_texts(0).join("\n");
    assert!(!first.contains("remember to run the tests"), "{first}");
    assert_eq!(session.run("two").await.expect("run").response, "second");
    let second = mock.user_texts(1).join("\n");
    assert!(second.contains("remember to run the tests"), "{second}");
}

/// An `agent` hook investigates with read-only tools before its verdict (Claude Code's agent
/// hooks); its reads obey the session's deny rules.
#[tokio::test]
async fn agent_hooks_read_files_before_their_verdict_under_the_deny_rules() {
    let project = Project::new();
    project.write("POLICY.md", "Never write out.txt.\n");
    project.write("secret.txt", "the launch codes\n");
    project.settings(
        ".claude/settings.json",
        json!({
            "permissions": {"defaultMode": "acceptEdits", "deny": ["Read(./secret.txt)"]},
            "hooks": {"PreToolUse": [group(Some("Write"), vec![json!({
                "type": "agent",
                "prompt": "Check this write against POLICY.md: $ARGUMENTS"
            })])]}
        }),
    );
    let mock = Mock::start(json!({"turns": [
        tool_turn("call_w", "Write", json!({"file_path": "out.txt", "content": "x"})),
        {"tool_calls": [
            {"id": "hook_r1", "name": "Read", "input": {"file_path": "POLICY.md"}},
            {"id": "hook_r2", "name": "Read", "input": {"file_path": "secret.txt"}}
        ]},
        text_turn(r#"{"ok": false, "reason": "POLICY.md forbids writing out.txt"}"#),
        text_turn("understood"),
    ]}))
    .await;
    let session = session(options(&project, &mock, &Events::default()));
    let outcome = session.run("write out.txt").await.expect("run");
    assert_eq!(outcome.response, "understood");
    assert!(
        !project.path("out.txt").exists(),
        "the hook blocked the write"
    );

    let bodies = mock.bodies();
    assert_eq!(bodies.len(), 4, "main call, two hook rounds, main call");
    let mut hook_tools = mock.tool_names(1);
    hook_tools.sort();
    assert_eq!(
        hook_tools,
        vec!["Glob", "Grep", "Read"],
        "read-only tools only"
    );
    let system = bodies[1]["system"].to_string();
    assert!(system.contains("read-only tools"), "{system}");
    assert!(mock
        .user_texts(1)
        .join("")
        .contains("\"tool_name\":\"Write\""));
    let hook_results = mock.tool_results(2);
    let policy = &hook_results
        .iter()
        .find(|(id, _)| id == "hook_r1")
        .expect("r1")
        .1;
    assert!(policy.contains("Never write out.txt."), "{policy}");
    let secret = &hook_results
        .iter()
        .find(|(id, _)| id == "hook_r2")
        .expect("r2")
        .1;
    assert!(!secret.contains("launch codes"), "{secret}");
    assert!(secret.contains("agent hook may only read"), "{secret}");
    let blocked = mock.result_for("call_w");
    assert!(
        blocked.contains("POLICY.md forbids writing out.txt"),
        "{blocked}"
    );
}
