//! Hooks on real processes and servers: Claude Code's stdin JSON for every event, exit-code and
//! JSON-output semantics, decision precedence across parallel hooks, timeouts and cancellation
//! that kill the hook's process group, HTTP, prompt and in-process callback handlers, layer merge
//! and de-duplication, matcher forms, and every config diagnostic.
#![cfg(unix)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use robota::hooks::*;
use robota::provider::scripted::{ScriptedProvider, ScriptedTurn};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

// ---------------------------------------------------------------------------------------------
// Helpers

const SETTINGS: &str = "/home/u/.claude/settings.json";

fn fixture(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/hooks")
        .join(name);
    format!("'{}'", path.display())
}

/// A shell-quoted argument.
fn q(arg: &str) -> String {
    format!("'{}'", arg.replace('\'', r"'\''"))
}

fn script(name: &str, args: &[&str]) -> String {
    let mut command = fixture(name);
    for arg in args {
        command.push(' ');
        command.push_str(&q(arg));
    }
    command
}

fn command_hook(command: String) -> Value {
    json!({"type": "command", "command": command})
}

/// A settings `hooks` value with one group for `event`.
fn one_group(event: &str, matcher: Option<&str>, handlers: Vec<Value>) -> Value {
    let mut group = json!({"hooks": handlers});
    if let Some(m) = matcher {
        group["matcher"] = json!(m);
    }
    json!({ event: [group] })
}

fn parse_ok(file: &str, hooks: &Value) -> HooksConfig {
    let parsed = HooksConfig::parse(file, hooks);
    let errors: Vec<String> = parsed
        .diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .map(ToString::to_string)
        .collect();
    assert!(errors.is_empty(), "unexpected config errors: {errors:#?}");
    parsed.config
}

struct Project {
    dir: tempfile::TempDir,
}

impl Project {
    fn new() -> Self {
        Project {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn path(&self) -> PathBuf {
        std::fs::canonicalize(self.dir.path()).unwrap()
    }

    fn file(&self, name: &str) -> String {
        self.path().join(name).display().to_string()
    }

    fn options(&self) -> HookRunnerOptions {
        let mut options = HookRunnerOptions::new(self.path());
        options.kill_grace = Duration::from_millis(500);
        options
    }

    fn runner(&self, hooks: Value) -> HookRunner {
        HookRunner::new(parse_ok(SETTINGS, &hooks), self.options())
    }

    fn common(&self) -> HookCommon {
        HookCommon::new("sess-1", self.path().display().to_string())
            .with_transcript_path("/tmp/sess-1.jsonl")
            .with_permission_mode("default")
    }
}

fn bash_call(common: HookCommon, command: &str) -> HookInput {
    HookInput::pre_tool_use(
        common,
        "Bash",
        json!({"command": command, "description": "test"}),
        "toolu_1",
    )
}

async fn run(runner: &HookRunner, input: &HookInput) -> HookOutcome {
    tokio::time::timeout(
        Duration::from_secs(120),
        runner.run(input, &CancellationToken::new()),
    )
    .await
    .expect("hook run hung")
}

fn failure(outcome: &HookOutcome) -> &HookFailure {
    assert_eq!(outcome.errors.len(), 1, "errors: {:#?}", outcome.errors);
    &outcome.errors[0].failure
}

/// True while `pid` is a live (non-zombie) process.
fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => false,
        Ok(stat) => {
            let state = stat.rsplit(") ").next().and_then(|s| s.chars().next());
            !matches!(state, Some('Z') | Some('X'))
        }
    }
}

async fn wait_for_file(path: &str) -> String {
    for _ in 0..1000 {
        if let Ok(text) = std::fs::read_to_string(path) {
            if !text.is_empty() {
                return text;
            }
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("{path} never appeared");
}

async fn wait_dead(pid: i32) -> bool {
    for _ in 0..500 {
        if !alive(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    false
}

fn read_env_file(path: &str) -> HashMap<String, String> {
    std::fs::read_to_string(format!("{path}.env"))
        .unwrap()
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

// ---------------------------------------------------------------------------------------------
// stdin JSON of every event

#[tokio::test]
async fn every_event_gets_claude_codes_stdin_json_and_environment() {
    let project = Project::new();
    let cwd = project.path().join("sub");
    std::fs::create_dir(&cwd).unwrap();
    let cwd_s = cwd.display().to_string();
    let common = || {
        HookCommon::new("sess-1", cwd_s.clone())
            .with_transcript_path("/tmp/sess-1.jsonl")
            .with_permission_mode("default")
    };
    let base = |event: &str| {
        json!({
            "session_id": "sess-1",
            "transcript_path": "/tmp/sess-1.jsonl",
            "cwd": cwd_s,
            "permission_mode": "default",
            "hook_event_name": event,
        })
    };
    let with = |event: &str, extra: Value| {
        let mut v = base(event);
        v.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        v
    };

    let mut session_start = HookInput::session_start(common(), SessionStartSource::Startup);
    if let HookEventInput::SessionStart(s) = &mut session_start.event {
        s.model = Some("claude-sonnet-4-6".into());
    }
    let mut post = HookInput::post_tool_use(
        common(),
        "Bash",
        json!({"command": "ls"}),
        "toolu_2",
        json!({"stdout": "a\n", "stderr": "", "interrupted": false, "isImage": false}),
    );
    if let HookEventInput::PostToolUse(p) = &mut post.event {
        p.duration_ms = Some(12);
    }
    let mut worktree = WorktreeCreateInput::new("feat-auth");
    worktree.base_path = Some("/repo/.claude/worktrees".into());
    worktree.source_ref = Some("main".into());

    let cases: Vec<(HookInput, Value)> = vec![
        (
            session_start,
            with(
                "SessionStart",
                json!({"source": "startup", "model": "claude-sonnet-4-6"}),
            ),
        ),
        (
            HookInput::setup(common(), SetupTrigger::Maintenance),
            with("Setup", json!({"trigger": "maintenance"})),
        ),
        (
            HookInput::session_end(common(), SessionEndReason::PromptInputExit),
            with("SessionEnd", json!({"reason": "prompt_input_exit"})),
        ),
        (
            HookInput::user_prompt_submit(common(), "fix the bug"),
            with("UserPromptSubmit", json!({"prompt": "fix the bug"})),
        ),
        (
            HookInput::pre_tool_use(
                common(),
                "Bash",
                json!({"command": "ls -la", "description": "list", "timeout": 5000, "run_in_background": false}),
                "toolu_1",
            ),
            with(
                "PreToolUse",
                json!({"tool_name": "Bash", "tool_input": {"command": "ls -la", "description": "list", "timeout": 5000, "run_in_background": false}, "tool_use_id": "toolu_1"}),
            ),
        ),
        (
            post,
            with(
                "PostToolUse",
                json!({"tool_name": "Bash", "tool_input": {"command": "ls"}, "tool_use_id": "toolu_2",
                       "tool_response": {"stdout": "a\n", "stderr": "", "interrupted": false, "isImage": false},
                       "duration_ms": 12}),
            ),
        ),
        (
            HookInput::new(
                common(),
                HookEventInput::PostToolUseFailure(PostToolUseFailureInput {
                    tool_name: "Write".into(),
                    tool_input: json!({"file_path": "/x/a.txt", "content": "hi"}),
                    tool_use_id: "toolu_3".into(),
                    error: "permission denied".into(),
                    is_interrupt: false,
                    duration_ms: Some(3),
                }),
            ),
            with(
                "PostToolUseFailure",
                json!({"tool_name": "Write", "tool_input": {"file_path": "/x/a.txt", "content": "hi"},
                       "tool_use_id": "toolu_3", "error": "permission denied", "is_interrupt": false, "duration_ms": 3}),
            ),
        ),
        (
            HookInput::new(
                common(),
                HookEventInput::PermissionRequest(PermissionRequestInput {
                    tool_name: "Edit".into(),
                    tool_input: json!({"file_path": "/x/a.rs", "old_string": "a", "new_string": "b"}),
                    tool_use_id: Some("toolu_4".into()),
                    permission_suggestions: vec![
                        json!({"type": "addRules", "rules": [{"toolName": "Edit"}], "behavior": "allow", "destination": "localSettings"}),
                    ],
                }),
            ),
            with(
                "PermissionRequest",
                json!({"tool_name": "Edit", "tool_input": {"file_path": "/x/a.rs", "old_string": "a", "new_string": "b"},
                       "tool_use_id": "toolu_4",
                       "permission_suggestions": [{"type": "addRules", "rules": [{"toolName": "Edit"}], "behavior": "allow", "destination": "localSettings"}]}),
            ),
        ),
        (
            HookInput::new(
                common(),
                HookEventInput::Stop(StopInput {
                    stop_hook_active: false,
                    last_assistant_message: Some("All done.".into()),
                    background_tasks: None,
                }),
            ),
            with(
                "Stop",
                json!({"stop_hook_active": false, "last_assistant_message": "All done."}),
            ),
        ),
        (
            HookInput::new(
                common(),
                HookEventInput::StopFailure(StopFailureInput {
                    error: "rate_limit".into(),
                    error_details: Some("429 Too Many Requests".into()),
                    last_assistant_message: None,
                }),
            ),
            with(
                "StopFailure",
                json!({"error": "rate_limit", "error_details": "429 Too Many Requests"}),
            ),
        ),
        (
            HookInput::subagent_start(common(), "agent-7", "code-reviewer"),
            with(
                "SubagentStart",
                json!({"agent_id": "agent-7", "agent_type": "code-reviewer"}),
            ),
        ),
        (
            HookInput::subagent_stop(
                common(),
                "agent-7",
                "code-reviewer",
                SubagentStopInput {
                    stop_hook_active: true,
                    agent_transcript_path: Some("/tmp/agent-7.jsonl".into()),
                    last_assistant_message: Some("LGTM".into()),
                },
            ),
            with(
                "SubagentStop",
                json!({"agent_id": "agent-7", "agent_type": "code-reviewer", "stop_hook_active": true,
                       "agent_transcript_path": "/tmp/agent-7.jsonl", "last_assistant_message": "LGTM"}),
            ),
        ),
        (
            HookInput::new(
                common(),
                HookEventInput::PreCompact(PreCompactInput {
                    trigger: CompactTrigger::Manual,
                    custom_instructions: "keep the todo list".into(),
                }),
            ),
            with(
                "PreCompact",
                json!({"trigger": "manual", "custom_instructions": "keep the todo list"}),
            ),
        ),
        (
            HookInput::new(
                common(),
                HookEventInput::PostCompact(PostCompactInput {
                    trigger: CompactTrigger::Auto,
                    compact_summary: "We fixed the parser.".into(),
                }),
            ),
            with(
                "PostCompact",
                json!({"trigger": "auto", "compact_summary": "We fixed the parser."}),
            ),
        ),
        (
            HookInput::new(
                common(),
                HookEventInput::Notification(NotificationInput {
                    message: "Claude needs your permission to use Bash".into(),
                    title: Some("Permission needed".into()),
                    notification_type: "permission_prompt".into(),
                }),
            ),
            with(
                "Notification",
                json!({"message": "Claude needs your permission to use Bash", "title": "Permission needed",
                       "notification_type": "permission_prompt"}),
            ),
        ),
        (
            HookInput::new(common(), HookEventInput::WorktreeCreate(worktree)),
            with(
                "WorktreeCreate",
                json!({"name": "feat-auth", "worktree_name": "feat-auth",
                       "base_path": "/repo/.claude/worktrees", "source_ref": "main"}),
            ),
        ),
        (
            HookInput::new(
                common(),
                HookEventInput::WorktreeRemove(WorktreeRemoveInput {
                    worktree_path: "/repo/.claude/worktrees/feat-auth".into(),
                }),
            ),
            with(
                "WorktreeRemove",
                json!({"worktree_path": "/repo/.claude/worktrees/feat-auth"}),
            ),
        ),
    ];
    assert_eq!(cases.len(), HookEvent::ALL.len());

    // One dump hook per event; bash and python alternate.
    let mut hooks = serde_json::Map::new();
    for (index, event) in HookEvent::ALL.iter().enumerate() {
        let dumper = if index % 2 == 0 {
            "dump_stdin.sh"
        } else {
            "dump_stdin.py"
        };
        let out = project.file(&format!("{event}.json"));
        hooks.insert(
            event.to_string(),
            json!([{"hooks": [command_hook(script(dumper, &[&out]))]}]),
        );
    }
    let mut options = project.options();
    options
        .env
        .insert("HOOK_SETTING".into(), "from-settings".into());
    let runner = HookRunner::new(parse_ok(SETTINGS, &Value::Object(hooks)), options);
    // SAFETY: getsid has no preconditions.
    let my_session = unsafe { libc::getsid(0) };

    for (input, expected) in cases {
        let event = input.event();
        let outcome = run(&runner, &input).await;
        assert!(outcome.errors.is_empty(), "{event}: {:#?}", outcome.errors);
        assert_eq!(outcome.handlers.len(), 1, "{event}");
        let out = project.file(&format!("{event}.json"));
        let got: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
        assert_eq!(got, expected, "{event} stdin JSON");
        // The typed input reads back from what the hook saw.
        let back: HookInput = serde_json::from_value(got).unwrap();
        assert_eq!(back, input, "{event} round trip");

        let env = read_env_file(&out);
        let project_dir = project.path().display().to_string();
        assert_eq!(env["CLAUDE_PROJECT_DIR"], project_dir, "{event}");
        assert_eq!(env["ROBOTA_PROJECT_DIR"], project_dir, "{event}");
        assert_eq!(env["HOOK_SETTING"], "from-settings", "{event}");
        assert_eq!(env["PWD"], cwd_s, "{event}: hooks run in the event's cwd");
        assert_eq!(
            env["TTY"], "no",
            "{event}: hooks have no controlling terminal"
        );
        assert_eq!(
            env["SID"], env["PGID"],
            "{event}: own session and process group"
        );
        assert_ne!(
            env["SID"],
            my_session.to_string(),
            "{event}: not the caller's session"
        );
    }
}

#[test]
fn optional_fields_are_omitted_and_transcript_path_is_null_when_unknown() {
    let input = HookInput::user_prompt_submit(HookCommon::new("s", "/w"), "hi");
    assert_eq!(
        input.to_value(),
        json!({"session_id": "s", "transcript_path": null, "cwd": "/w",
               "hook_event_name": "UserPromptSubmit", "prompt": "hi"})
    );
}

// ---------------------------------------------------------------------------------------------
// Exit codes and JSON output

#[tokio::test]
async fn exit_zero_with_json_output_is_honoured() {
    let project = Project::new();
    let output = json!({
        "systemMessage": "linted 3 files",
        "hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "lint: 0 warnings"}
    })
    .to_string();
    let runner = project.runner(one_group(
        "PostToolUse",
        Some("Write|Edit"),
        vec![command_hook(script("respond.py", &["0", &output]))],
    ));
    let input = HookInput::post_tool_use(
        project.common(),
        "Edit",
        json!({"file_path": "/a"}),
        "t",
        json!({}),
    );
    let outcome = run(&runner, &input).await;
    assert!(outcome.errors.is_empty(), "{:#?}", outcome.errors);
    assert_eq!(outcome.system_messages, vec!["linted 3 files"]);
    assert_eq!(outcome.additional_context, vec!["lint: 0 warnings"]);
    assert!(outcome.block.is_none());
    assert_eq!(outcome.handlers[0].status, HandlerStatus::Success);
    assert_eq!(outcome.handlers[0].exit_code, Some(0));
    assert!(outcome.handlers[0].output.is_some());
}

#[tokio::test]
async fn continue_false_stops_with_stop_reason() {
    let project = Project::new();
    let output = r#"{"continue": false, "stopReason": "build is broken, stopping"}"#;
    let runner = project.runner(one_group(
        "PostToolUse",
        None,
        vec![command_hook(script("respond.sh", &["0", output]))],
    ));
    let input = HookInput::post_tool_use(project.common(), "Bash", json!({}), "t", json!({}));
    let outcome = run(&runner, &input).await;
    assert!(outcome.should_stop());
    assert_eq!(
        outcome.stop,
        Some(HookStop {
            reason: Some("build is broken, stopping".into())
        })
    );
}

#[tokio::test]
async fn plain_stdout_is_context_only_for_user_prompt_submit_and_session_start() {
    let project = Project::new();
    let hooks = json!({
        "UserPromptSubmit": [{"hooks": [command_hook(script("respond.sh", &["0", "Current branch: main\n"]))]}],
        "SessionStart": [{"hooks": [command_hook(script("respond.py", &["0", "Open issues: 3"]))]}],
        "PreToolUse": [{"hooks": [command_hook(script("respond.sh", &["0", "just chatter"]))]}],
    });
    let runner = project.runner(hooks);

    let outcome = run(
        &runner,
        &HookInput::user_prompt_submit(project.common(), "hi"),
    )
    .await;
    assert_eq!(outcome.additional_context, vec!["Current branch: main"]);
    assert_eq!(
        outcome.context_text().as_deref(),
        Some("Current branch: main")
    );

    let outcome = run(
        &runner,
        &HookInput::session_start(project.common(), SessionStartSource::Resume),
    )
    .await;
    assert_eq!(outcome.additional_context, vec!["Open issues: 3"]);

    let outcome = run(&runner, &bash_call(project.common(), "ls")).await;
    assert!(outcome.additional_context.is_empty());
    assert_eq!(outcome.handlers[0].stdout, "just chatter");
    assert!(!outcome.handlers[0].notes.is_empty());
    assert_eq!(outcome.permission_decision, None);
}

#[tokio::test]
async fn exit_two_blocks_with_stderr_as_reason_per_event() {
    let project = Project::new();
    let block = || json!([{"hooks": [command_hook(fixture("block.sh"))]}]);
    let hooks = json!({
        "PreToolUse": block(), "UserPromptSubmit": block(), "Stop": block(), "PreCompact": block(),
        "PostToolUse": block(), "SessionStart": block(), "Notification": block(),
    });
    let runner = project.runner(hooks);
    let common = |p: &Project| p.common();

    // PreToolUse: the call is denied and the model sees stderr.
    let outcome = run(&runner, &bash_call(common(&project), "rm -rf /")).await;
    assert_eq!(outcome.permission_decision, Some(PermissionDecision::Deny));
    assert_eq!(
        outcome.block,
        Some(HookBlock {
            effect: BlockEffect::DenyToolCall,
            reason: "blocked Bash by policy".into()
        })
    );
    assert_eq!(outcome.handlers[0].exit_code, Some(2));
    assert!(outcome.errors.is_empty());

    let outcome = run(
        &runner,
        &HookInput::user_prompt_submit(common(&project), "x"),
    )
    .await;
    let block = outcome.block.unwrap();
    assert_eq!(block.effect, BlockEffect::RejectPrompt);
    assert_eq!(block.reason, "blocked UserPromptSubmit by policy");

    let stop = HookInput::new(
        common(&project),
        HookEventInput::Stop(StopInput {
            stop_hook_active: false,
            last_assistant_message: None,
            background_tasks: None,
        }),
    );
    assert_eq!(
        run(&runner, &stop).await.block.unwrap().effect,
        BlockEffect::ContinueAgent
    );

    let compact = HookInput::new(
        common(&project),
        HookEventInput::PreCompact(PreCompactInput {
            trigger: CompactTrigger::Auto,
            custom_instructions: String::new(),
        }),
    );
    assert_eq!(
        run(&runner, &compact).await.block.unwrap().effect,
        BlockEffect::BlockCompaction
    );

    let post = HookInput::post_tool_use(common(&project), "Bash", json!({}), "t", json!({}));
    let outcome = run(&runner, &post).await;
    assert_eq!(outcome.block.unwrap().effect, BlockEffect::FeedbackToModel);

    // SessionStart: cannot block; stderr goes to the user.
    let outcome = run(
        &runner,
        &HookInput::session_start(common(&project), SessionStartSource::Startup),
    )
    .await;
    assert!(outcome.block.is_none());
    assert_eq!(
        outcome.system_messages,
        vec!["blocked SessionStart by policy"]
    );

    // Notification: exit 2 is ignored, with a note in the report.
    let note = HookInput::new(
        common(&project),
        HookEventInput::Notification(NotificationInput {
            message: "m".into(),
            title: None,
            notification_type: "idle_prompt".into(),
        }),
    );
    let outcome = run(&runner, &note).await;
    assert!(outcome.block.is_none() && outcome.system_messages.is_empty());
    assert!(outcome.handlers[0].notes[0].contains("not honoured"));
}

#[tokio::test]
async fn exit_two_wins_over_json_allow_and_uses_json_reason_without_stderr() {
    let project = Project::new();
    let allow = r#"{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}, "reason": "json reason"}"#;
    let runner = project.runner(one_group(
        "PreToolUse",
        None,
        vec![command_hook(script("respond.sh", &["2", allow]))],
    ));
    let outcome = run(&runner, &bash_call(project.common(), "ls")).await;
    assert_eq!(outcome.permission_decision, Some(PermissionDecision::Deny));
    assert_eq!(outcome.block.unwrap().reason, "json reason");
}

#[tokio::test]
async fn other_exit_codes_are_non_blocking_errors() {
    let project = Project::new();
    let runner = project.runner(one_group(
        "PreToolUse",
        None,
        vec![
            command_hook(script(
                "respond.sh",
                &["1", "{\"decision\": \"block\"}", "lint crashed"],
            )),
            command_hook(script("respond.py", &["3", "", "python says no"])),
            command_hook("/definitely/not/a/hook-script".into()),
        ],
    ));
    let outcome = run(&runner, &bash_call(project.common(), "ls")).await;
    assert!(
        outcome.block.is_none(),
        "a non-zero exit other than 2 never blocks"
    );
    assert_eq!(outcome.permission_decision, None);
    let failures: Vec<&HookFailure> = outcome.errors.iter().map(|e| &e.failure).collect();
    assert_eq!(
        failures,
        vec![
            &HookFailure::ExitCode {
                code: 1,
                stderr: "lint crashed".into()
            },
            &HookFailure::ExitCode {
                code: 3,
                stderr: "python says no".into()
            },
            &HookFailure::ExitCode {
                code: 127,
                stderr: outcome.handlers[2].stderr.clone()
            },
        ]
    );
    assert!(
        outcome.handlers[2].stderr.contains("not a/hook-script")
            || outcome.handlers[2].stderr.contains("No such file")
    );
    // Errors name the event and the handler for the session to surface.
    let message = outcome.errors[0].to_string();
    assert!(message.starts_with("PreToolUse command hook"), "{message}");
    assert!(
        message.contains("exited with code 1: lint crashed"),
        "{message}"
    );
}

#[tokio::test]
async fn malformed_json_output_of_a_pre_tool_use_hook_blocks_the_call() {
    let project = Project::new();
    let runner = project.runner(one_group(
        "PreToolUse",
        None,
        vec![
            command_hook(script(
                "respond.py",
                &["0", "{\"decision\": \"block\", oops"],
            )),
            command_hook(script(
                "respond.sh",
                &[
                    "0",
                    r#"{"hookSpecificOutput": {"permissionDecision": "maybe"}}"#,
                ],
            )),
        ],
    ));
    let outcome = run(&runner, &bash_call(project.common(), "ls")).await;
    // The first answer may well have said "block": an answer that cannot be read never lets the
    // call through (hooks fail closed), and the reason says which hook and why.
    assert_eq!(outcome.permission_decision, Some(PermissionDecision::Deny));
    let reason = outcome.block.expect("blocked").reason;
    assert!(reason.contains("respond.py"), "{reason}");
    assert!(reason.contains("not valid hook JSON"), "{reason}");
    assert!(reason.contains("fails closed"), "{reason}");
    // An unknown decision is unreadable too.
    assert!(reason.contains("maybe"), "{reason}");
    // Reported as the failure it is, marked as having blocked the call.
    assert!(
        !outcome.errors.is_empty() && outcome.errors.iter().all(|e| e.blocked),
        "{:#?}",
        outcome.errors
    );
}

#[tokio::test]
async fn a_multi_megabyte_block_decision_blocks_the_call_instead_of_failing_open() {
    let project = Project::new();
    let runner = project.runner(one_group(
        "PreToolUse",
        None,
        vec![command_hook(script("huge_decision.sh", &["3000000"]))],
    ));
    let outcome = run(&runner, &bash_call(project.common(), "ls")).await;
    assert_eq!(outcome.permission_decision, Some(PermissionDecision::Deny));
    let reason = outcome.block.expect("blocked").reason;
    assert!(reason.contains("huge_decision.sh"), "{reason}");
    // 3,000,000 bytes of reason plus the JSON around it.
    assert!(
        reason.contains("printed 2.9 MiB of output, over the 1 MiB hook output limit"),
        "{reason}"
    );
    assert!(reason.contains("the tool call was blocked"), "{reason}");
    assert_eq!(outcome.errors.len(), 1, "{:#?}", outcome.errors);
    assert!(outcome.errors[0].blocked);
    assert!(matches!(
        outcome.errors[0].failure,
        HookFailure::OutputTooLarge { .. }
    ));
    // Only the limit was kept in memory.
    let kept = outcome.handlers[0].stdout.len();
    assert!(kept < 1024 * 1024 + 100, "{kept} bytes kept");

    // The same answer on an event that guards nothing is a non-blocking, named failure.
    let runner = project.runner(one_group(
        "PostToolUse",
        None,
        vec![command_hook(script("huge_decision.sh", &["3000000"]))],
    ));
    let input = HookInput::post_tool_use(
        project.common(),
        "Bash",
        json!({"command": "ls"}),
        "toolu_1",
        json!({"stdout": ""}),
    );
    let outcome = run(&runner, &input).await;
    assert!(outcome.block.is_none());
    match failure(&outcome) {
        HookFailure::OutputTooLarge { bytes, limit } => {
            assert!(bytes.unwrap_or_default() > 3_000_000, "{bytes:?}");
            assert_eq!(*limit, 1024 * 1024);
        }
        other => panic!("unexpected failure {other:?}"),
    }
}

#[tokio::test]
async fn a_smaller_output_limit_applies_to_the_decision_too() {
    let project = Project::new();
    let mut options = project.options();
    options.output_limit = 64;
    let hooks = one_group(
        "PreToolUse",
        None,
        vec![command_hook(script("huge_decision.sh", &["100"]))],
    );
    let runner = HookRunner::new(parse_ok(SETTINGS, &hooks), options);
    let outcome = run(&runner, &bash_call(project.common(), "ls")).await;
    let reason = outcome.block.expect("blocked").reason;
    assert!(
        reason.contains("over the 64 bytes hook output limit"),
        "{reason}"
    );
}

#[tokio::test]
async fn garbage_with_exit_code_2_blocks() {
    let project = Project::new();
    let runner = project.runner(one_group(
        "PreToolUse",
        None,
        vec![command_hook(script(
            "respond.sh",
            &["2", "{\"decision\": \u{1}\u{2} garbage ]]"],
        ))],
    ));
    let outcome = run(&runner, &bash_call(project.common(), "ls")).await;
    assert_eq!(outcome.permission_decision, Some(PermissionDecision::Deny));
    let reason = outcome.block.expect("blocked").reason;
    assert!(reason.contains("exit code 2"), "{reason}");
    // A multi-megabyte block decision with exit code 2 blocks as well.
    let runner = project.runner(one_group(
        "PreToolUse",
        None,
        vec![command_hook(script("huge_decision.sh", &["2000000", "2"]))],
    ));
    let outcome = run(&runner, &bash_call(project.common(), "ls")).await;
    assert_eq!(outcome.permission_decision, Some(PermissionDecision::Deny));
}

// ---------------------------------------------------------------------------------------------
// PreToolUse decisions

#[tokio::test]
async fn updated_input_rewrites_the_tool_call() {
    let project = Project::new();
    let runner = project.runner(one_group(
        "PreToolUse",
        Some("Bash"),
        vec![command_hook(fixture("rewrite_input.py"))],
    ));
    let outcome = run(&runner, &bash_call(project.common(), "rm build.log")).await;
    assert_eq!(outcome.permission_decision, Some(PermissionDecision::Allow));
    assert_eq!(
        outcome.permission_decision_reason.as_deref(),
        Some("rewrote rm to rm -i")
    );
    assert_eq!(
        outcome.updated_input,
        Some(json!({"command": "rm -i build.log", "description": "test"}))
    );
}

#[tokio::test]
async fn permission_decision_precedence_is_deny_then_defer_then_ask_then_allow() {
    let project = Project::new();
    let decide = |d: &str, tag: &str| command_hook(script("decide.py", &[d, tag]));

    // allow + ask + deny, all in parallel: deny wins and no input rewrite survives.
    let runner = project.runner(one_group(
        "PreToolUse",
        None,
        vec![
            decide("allow", "A"),
            decide("deny", "D"),
            decide("ask", "B"),
        ],
    ));
    let outcome = run(&runner, &bash_call(project.common(), "ls")).await;
    assert_eq!(outcome.permission_decision, Some(PermissionDecision::Deny));
    assert_eq!(
        outcome.permission_decision_reason.as_deref(),
        Some("D says deny")
    );
    assert_eq!(outcome.block.as_ref().unwrap().reason, "D says deny");
    assert_eq!(outcome.updated_input, None);

    // ask beats allow; the input comes from the winning hook, not the overridden one.
    let runner = project.runner(one_group(
        "PreToolUse",
        None,
        vec![decide("ask", "B"), decide("allow", "A")],
    ));
    let outcome = run(&runner, &bash_call(project.common(), "ls")).await;
    assert_eq!(outcome.permission_decision, Some(PermissionDecision::Ask));
    assert_eq!(outcome.updated_input.unwrap()["tagged_by"], "B");
    assert!(outcome.block.is_none());

    // defer beats ask.
    let runner = project.runner(one_group(
        "PreToolUse",
        None,
        vec![decide("ask", "B"), decide("defer", "F")],
    ));
    let outcome = run(&runner, &bash_call(project.common(), "ls")).await;
    assert_eq!(outcome.permission_decision, Some(PermissionDecision::Defer));

    // A blocking exit beats a JSON allow from another hook.
    let runner = project.runner(one_group(
        "PreToolUse",
        None,
        vec![decide("allow", "A"), command_hook(fixture("block.sh"))],
    ));
    let outcome = run(&runner, &bash_call(project.common(), "ls")).await;
    assert_eq!(outcome.permission_decision, Some(PermissionDecision::Deny));
    assert_eq!(outcome.block.unwrap().reason, "blocked Bash by policy");

    // The deprecated top-level decision forms: approve = allow, block = deny.
    let runner = project.runner(one_group(
        "PreToolUse",
        None,
        vec![command_hook(script(
            "respond.sh",
            &["0", r#"{"decision": "approve", "reason": "safe"}"#],
        ))],
    ));
    let outcome = run(&runner, &bash_call(project.common(), "ls")).await;
    assert_eq!(outcome.permission_decision, Some(PermissionDecision::Allow));
    let runner = project.runner(one_group(
        "PreToolUse",
        None,
        vec![command_hook(script(
            "respond.sh",
            &["0", r#"{"decision": "block", "reason": "no network"}"#],
        ))],
    ));
    let outcome = run(&runner, &bash_call(project.common(), "curl x")).await;
    assert_eq!(outcome.permission_decision, Some(PermissionDecision::Deny));
    assert_eq!(outcome.block.unwrap().reason, "no network");
}

#[tokio::test]
async fn user_prompt_submit_can_block_with_decision_block() {
    let project = Project::new();
    let output = r#"{"decision": "block", "reason": "prompt contains a secret", "hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": "ignored?"}}"#;
    let runner = project.runner(one_group(
        "UserPromptSubmit",
        None,
        vec![command_hook(script("respond.py", &["0", output]))],
    ));
    let outcome = run(
        &runner,
        &HookInput::user_prompt_submit(project.common(), "my key is sk-123"),
    )
    .await;
    let block = outcome.block.unwrap();
    assert_eq!(block.effect, BlockEffect::RejectPrompt);
    assert_eq!(block.reason, "prompt contains a secret");
}

// ---------------------------------------------------------------------------------------------
// Parallelism, timeouts, cancellation

#[tokio::test]
async fn matching_hooks_run_in_parallel() {
    let project = Project::new();
    let dir = project.path().display().to_string();
    let runner = project.runner(one_group(
        "PreToolUse",
        None,
        vec![
            command_hook(script("barrier.sh", &[&dir, "first", "second"])),
            command_hook(script("barrier.py", &[&dir, "second", "first"])),
        ],
    ));
    let outcome = run(&runner, &bash_call(project.common(), "ls")).await;
    // Each hook waits (while running) until the other has started: only concurrent runs both
    // see their peer; sequential runs would report "ran alone".
    assert_eq!(
        outcome.system_messages,
        vec!["first saw second", "second saw first"]
    );
}

#[tokio::test]
async fn a_timed_out_hook_is_killed_with_its_process_group() {
    let project = Project::new();
    let pid_file = project.file("grandchild.pid");
    let mut hook = command_hook(script("spawn_grandchild.sh", &[&pid_file]));
    hook["timeout"] = json!(1);
    let runner = project.runner(one_group("PreToolUse", None, vec![hook]));
    let outcome = run(&runner, &bash_call(project.common(), "ls")).await;
    assert_eq!(
        failure(&outcome),
        &HookFailure::Timeout { timeout_ms: 1000 }
    );
    // A timed-out command hook renders no decision.
    assert!(outcome.block.is_none());
    assert_eq!(outcome.permission_decision, None);
    let pid: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(
        wait_dead(pid).await,
        "grandchild {pid} survived the timeout"
    );
}

#[tokio::test]
async fn cancellation_kills_running_hooks_and_reports_cancelled() {
    let project = Project::new();
    let pid_file = project.file("grandchild.pid");
    let runner = Arc::new(project.runner(one_group(
        "PreToolUse",
        None,
        vec![command_hook(script("spawn_grandchild.sh", &[&pid_file]))],
    )));
    let cancel = CancellationToken::new();
    let task = {
        let runner = Arc::clone(&runner);
        let cancel = cancel.clone();
        let input = bash_call(project.common(), "ls");
        tokio::spawn(async move { runner.run(&input, &cancel).await })
    };
    let pid: i32 = wait_for_file(&pid_file).await.trim().parse().unwrap();
    assert!(alive(pid));
    cancel.cancel();
    let outcome = tokio::time::timeout(Duration::from_secs(60), task)
        .await
        .expect("cancelled run did not return")
        .unwrap();
    assert!(outcome.cancelled);
    assert_eq!(outcome.handlers[0].status, HandlerStatus::Cancelled);
    assert!(outcome.errors.is_empty());
    assert!(
        wait_dead(pid).await,
        "grandchild {pid} survived cancellation"
    );
}

#[tokio::test]
async fn a_background_child_holding_stdout_is_stopped_with_the_hook() {
    let project = Project::new();
    let pid_file = project.file("bg.pid");
    let command = format!(
        "sleep 300 & echo $! > {}; echo '{{\"systemMessage\": \"started\"}}'",
        q(&pid_file)
    );
    let runner = project.runner(one_group("PreToolUse", None, vec![command_hook(command)]));
    let outcome = run(&runner, &bash_call(project.common(), "ls")).await;
    assert_eq!(outcome.system_messages, vec!["started"]);
    let pid: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // A hook's processes end with it: the child it left in its group is stopped (and so does not
    // hold the output pipes or outlive the session) before the run returns.
    assert!(!alive(pid), "the hook's child {pid} survived it");
    assert!(runner.options().processes.list().is_empty());
}

#[tokio::test]
async fn session_end_hooks_share_a_short_budget() {
    let project = Project::new();
    let mut options = project.options();
    options.session_end_budget = Duration::from_millis(400);
    let runner = HookRunner::new(
        parse_ok(
            SETTINGS,
            &one_group("SessionEnd", None, vec![command_hook("sleep 30".into())]),
        ),
        options.clone(),
    );
    let input = HookInput::session_end(project.common(), SessionEndReason::Other);
    let outcome = run(&runner, &input).await;
    assert_eq!(failure(&outcome), &HookFailure::Timeout { timeout_ms: 400 });

    // A hook with a longer explicit timeout raises the budget for every SessionEnd hook.
    let mut long = command_hook("true".into());
    long["timeout"] = json!(2);
    let runner = HookRunner::new(
        parse_ok(
            SETTINGS,
            &one_group(
                "SessionEnd",
                None,
                vec![command_hook("sleep 30".into()), long],
            ),
        ),
        options,
    );
    let plan = runner.plan(&input);
    assert_eq!(
        plan.iter().map(|h| h.timeout_ms).collect::<Vec<_>>(),
        vec![2000, 2000]
    );
}

#[test]
fn default_timeouts_follow_the_contract() {
    let runner = HookRunner::new(
        parse_ok(
            SETTINGS,
            &json!({
                "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "true"}, {"type": "prompt", "prompt": "p"}]}],
                "PreToolUse": [{"hooks": [{"type": "command", "command": "true"}, {"type": "http", "url": "http://127.0.0.1:9/x"},
                                          {"type": "prompt", "prompt": "p"}, {"type": "agent", "prompt": "a"},
                                          {"type": "command", "command": "true", "timeout": 5}]}],
            }),
        ),
        HookRunnerOptions::new("/"),
    );
    let common = HookCommon::new("s", "/");
    let plan = runner.plan(&HookInput::user_prompt_submit(common.clone(), "x"));
    assert_eq!(
        plan.iter().map(|h| h.timeout_ms).collect::<Vec<_>>(),
        vec![30_000, 30_000]
    );
    let plan = runner.plan(&bash_call(common, "ls"));
    assert_eq!(
        plan.iter().map(|h| h.timeout_ms).collect::<Vec<_>>(),
        vec![600_000, 600_000, 30_000, 60_000, 5_000]
    );
}

#[tokio::test]
async fn async_hooks_run_in_the_background_and_report_later() {
    let project = Project::new();
    let mut hook = command_hook(script("respond.sh", &["2", "", "tests failed"]));
    hook["asyncRewake"] = json!(true);
    let runner = project.runner(one_group("PostToolUse", None, vec![hook]));
    let mut results = runner.take_async_results().unwrap();
    assert!(runner.take_async_results().is_none());
    let input = HookInput::post_tool_use(project.common(), "Bash", json!({}), "t", json!({}));
    let outcome = run(&runner, &input).await;
    assert_eq!(outcome.handlers[0].status, HandlerStatus::Background);
    assert!(outcome.block.is_none());
    let result = tokio::time::timeout(Duration::from_secs(60), results.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(result.event, HookEvent::PostToolUse);
    assert!(result.rewake);
    assert_eq!(
        result.report.status,
        HandlerStatus::Blocked {
            reason: "tests failed".into(),
            failure: None,
        }
    );
}

// ---------------------------------------------------------------------------------------------
// HTTP hooks

#[derive(Debug, Clone)]
struct Recorded {
    path: String,
    headers: HashMap<String, String>,
    body: String,
}

/// A minimal HTTP/1.1 server: answers each path with a fixed status and body, records requests.
async fn http_server(
    routes: HashMap<&'static str, (u16, &'static str)>,
) -> (String, Arc<Mutex<Vec<Recorded>>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let recorded = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&recorded);
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            let routes = routes.clone();
            let log = Arc::clone(&log);
            tokio::spawn(async move {
                let mut data = Vec::new();
                let mut buf = [0u8; 4096];
                let header_end = loop {
                    let n = socket.read(&mut buf).await.unwrap_or(0);
                    if n == 0 {
                        return;
                    }
                    data.extend_from_slice(&buf[..n]);
                    if let Some(i) = data.windows(4).position(|w| w == b"\r\n\r\n") {
                        break i + 4;
                    }
                };
                let head = String::from_utf8_lossy(&data[..header_end]).to_string();
                let mut lines = head.lines();
                let path = lines.next().unwrap().split(' ').nth(1).unwrap().to_string();
                let headers: HashMap<String, String> = lines
                    .filter_map(|l| l.split_once(':'))
                    .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
                    .collect();
                let length: usize = headers
                    .get("content-length")
                    .map_or(0, |v| v.parse().unwrap());
                while data.len() < header_end + length {
                    let n = socket.read(&mut buf).await.unwrap_or(0);
                    if n == 0 {
                        break;
                    }
                    data.extend_from_slice(&buf[..n]);
                }
                let body = String::from_utf8_lossy(&data[header_end..]).to_string();
                log.lock().unwrap().push(Recorded {
                    path: path.clone(),
                    headers,
                    body,
                });
                if path == "/slow" {
                    tokio::time::sleep(Duration::from_secs(30)).await;
                }
                let (status, body) = routes.get(path.as_str()).copied().unwrap_or((404, ""));
                let response = format!(
                    "HTTP/1.1 {status} X\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = socket.write_all(response.as_bytes()).await;
                let _ = socket.shutdown().await;
            });
        }
    });
    (base, recorded)
}

#[tokio::test]
async fn http_hooks_post_the_event_and_map_answers_like_command_hooks() {
    let project = Project::new();
    let routes: HashMap<&str, (u16, &str)> = [
        (
            "/deny",
            (
                200,
                r#"{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "policy server says no"}}"#,
            ),
        ),
        ("/context", (200, "Remember: staging is frozen")),
        ("/empty", (204, "")),
        ("/down", (503, "maintenance")),
        ("/ts-block", (200, r#"{"ok": false, "reason": "ts style"}"#)),
    ]
    .into();
    let (base, recorded) = http_server(routes).await;
    std::env::set_var("ROBOTA_HOOK_TEST_TOKEN", "tok-123");
    std::env::set_var("ROBOTA_HOOK_TEST_SECRET", "do-not-send");
    let hooks = json!({
        "PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "http", "url": format!("{base}/deny"),
             "headers": {"Authorization": "Bearer $ROBOTA_HOOK_TEST_TOKEN", "X-Leak": "${ROBOTA_HOOK_TEST_SECRET}", "X-From-Settings": "$HOOK_SETTING"},
             "allowedEnvVars": ["ROBOTA_HOOK_TEST_TOKEN", "HOOK_SETTING"]},
            {"type": "http", "url": format!("{base}/empty")},
        ]}],
        "UserPromptSubmit": [{"hooks": [{"type": "http", "url": format!("{base}/context")}]}],
        "PostToolUse": [{"hooks": [{"type": "http", "url": format!("{base}/down")}]}],
        "Stop": [{"hooks": [
            {"type": "http", "url": format!("{base}/ts-block")},
            {"type": "http", "url": format!("{base}/slow"), "timeout": 0.5},
        ]}],
    });
    let mut options = project.options();
    options
        .env
        .insert("HOOK_SETTING".into(), "settings-value".into());
    let runner = HookRunner::new(parse_ok(SETTINGS, &hooks), options);

    let input = bash_call(project.common(), "deploy");
    let outcome = run(&runner, &input).await;
    assert!(outcome.errors.is_empty(), "{:#?}", outcome.errors);
    assert_eq!(outcome.permission_decision, Some(PermissionDecision::Deny));
    assert_eq!(outcome.block.unwrap().reason, "policy server says no");
    let requests = recorded.lock().unwrap().clone();
    let deny = requests.iter().find(|r| r.path == "/deny").unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(&deny.body).unwrap(),
        input.to_value()
    );
    assert_eq!(deny.headers["content-type"], "application/json");
    assert_eq!(deny.headers["authorization"], "Bearer tok-123");
    assert_eq!(
        deny.headers["x-leak"], "",
        "unlisted variables are not interpolated"
    );
    assert_eq!(deny.headers["x-from-settings"], "settings-value");

    let outcome = run(
        &runner,
        &HookInput::user_prompt_submit(project.common(), "hi"),
    )
    .await;
    assert_eq!(
        outcome.additional_context,
        vec!["Remember: staging is frozen"]
    );

    let post = HookInput::post_tool_use(project.common(), "Bash", json!({}), "t", json!({}));
    let outcome = run(&runner, &post).await;
    assert!(outcome.block.is_none());
    assert_eq!(
        failure(&outcome),
        &HookFailure::HttpStatus {
            status: 503,
            body: "maintenance".into()
        }
    );

    let stop = HookInput::new(
        project.common(),
        HookEventInput::Stop(StopInput {
            stop_hook_active: false,
            last_assistant_message: None,
            background_tasks: None,
        }),
    );
    let outcome = run(&runner, &stop).await;
    assert_eq!(outcome.block.as_ref().unwrap().reason, "ts style");
    assert_eq!(failure(&outcome), &HookFailure::Timeout { timeout_ms: 500 });
}

#[tokio::test]
async fn an_unreachable_http_hook_is_a_non_blocking_error() {
    let project = Project::new();
    // Bind then drop a listener to get a port nobody listens on.
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let runner = project.runner(one_group(
        "PreToolUse",
        None,
        vec![json!({"type": "http", "url": format!("http://127.0.0.1:{port}/hook")})],
    ));
    let outcome = run(&runner, &bash_call(project.common(), "ls")).await;
    assert!(outcome.block.is_none());
    assert!(matches!(failure(&outcome), HookFailure::Http { .. }));
}

// ---------------------------------------------------------------------------------------------
// Prompt and agent hooks

#[tokio::test]
async fn prompt_hooks_ask_the_provider_for_a_verdict() {
    let project = Project::new();
    let provider = Arc::new(ScriptedProvider::new(vec![
        ScriptedTurn::text("```json\n{\"ok\": false, \"reason\": \"this deletes the repo\"}\n```"),
        ScriptedTurn::text("{\"ok\": true}"),
        ScriptedTurn::text("I think it is fine."),
    ]));
    let mut options = project.options();
    options.provider = Some(provider.clone());
    let hooks = one_group(
        "PreToolUse",
        None,
        vec![json!({"type": "prompt", "prompt": "Is this call safe? Event: $ARGUMENTS. Answer."})],
    );
    let runner = HookRunner::new(parse_ok(SETTINGS, &hooks), options);

    let input = bash_call(project.common(), "rm -rf .git");
    let outcome = run(&runner, &input).await;
    assert_eq!(outcome.permission_decision, Some(PermissionDecision::Deny));
    assert_eq!(outcome.block.unwrap().reason, "this deletes the repo");
    let request = &provider.requests()[0];
    assert_eq!(
        request.messages[0].text(),
        format!("Is this call safe? Event: {}. Answer.", input.to_json())
    );
    assert!(request.system.as_deref().unwrap().contains("\"ok\""));
    assert!(request.tools.is_empty());

    let outcome = run(&runner, &input).await;
    assert!(outcome.block.is_none() && outcome.errors.is_empty());
    assert_eq!(outcome.handlers[0].status, HandlerStatus::Success);

    // A verdict that is not JSON cannot be read, so the guarded call is blocked.
    let outcome = run(&runner, &input).await;
    assert_eq!(outcome.permission_decision, Some(PermissionDecision::Deny));
    let reason = outcome.block.expect("blocked").reason;
    assert!(reason.contains("prompt hook"), "{reason}");
    assert!(reason.contains("the tool call was blocked"), "{reason}");
}

#[tokio::test]
async fn agent_hooks_are_one_model_call_and_prompt_hooks_need_a_provider() {
    let project = Project::new();
    let hooks = json!({
        "Stop": [{"hooks": [{"type": "agent", "prompt": "Did the agent finish every task?"}]}],
    });
    let parsed = HooksConfig::parse(SETTINGS, &hooks);
    assert!(
        parsed.warnings().next().is_none(),
        "agent hooks are supported: {:?}",
        parsed.warnings().collect::<Vec<_>>()
    );
    let stop = HookInput::new(
        project.common(),
        HookEventInput::Stop(StopInput {
            stop_hook_active: false,
            last_assistant_message: Some("done".into()),
            background_tasks: None,
        }),
    );

    let provider = Arc::new(ScriptedProvider::new(vec![ScriptedTurn::text(
        r#"{"ok": false, "reason": "the tests were not run"}"#,
    )]));
    let runner = HookRunner::new(
        parsed.config.clone(),
        project.options().with_provider(provider.clone()),
    );
    let outcome = run(&runner, &stop).await;
    let block = outcome.block.unwrap();
    assert_eq!(block.effect, BlockEffect::ContinueAgent);
    assert_eq!(block.reason, "the tests were not run");
    // Without $ARGUMENTS the event JSON is appended.
    assert_eq!(
        provider.requests()[0].messages[0].text(),
        format!("Did the agent finish every task?\n\n{}", stop.to_json())
    );

    let runner = HookRunner::new(parsed.config, project.options());
    let outcome = run(&runner, &stop).await;
    assert!(outcome.block.is_none());
    assert_eq!(failure(&outcome), &HookFailure::NoProvider { model: None });
}

// ---------------------------------------------------------------------------------------------
// In-process callbacks

#[tokio::test]
async fn host_callbacks_run_alongside_configured_hooks() {
    let project = Project::new();
    let runner = project.runner(one_group(
        "PreToolUse",
        None,
        vec![command_hook(script("decide.py", &["allow", "script"]))],
    ));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    runner
        .register_callback(
            HookEvent::PreToolUse,
            "Bash",
            FnHookCallback::new("guard", move |input: HookInput| {
                let log = Arc::clone(&log);
                async move {
                    log.lock()
                        .unwrap()
                        .push(input.tool_input().unwrap().clone());
                    if input.tool_input().unwrap()["command"]
                        .as_str()
                        .unwrap()
                        .contains("sudo")
                    {
                        HookCallbackResult::block("no sudo from the host")
                    } else {
                        HookCallbackResult::output(HookOutput {
                            system_message: Some("host checked".into()),
                            ..HookOutput::default()
                        })
                    }
                }
            }),
        )
        .unwrap();

    let outcome = run(&runner, &bash_call(project.common(), "sudo ls")).await;
    assert_eq!(outcome.permission_decision, Some(PermissionDecision::Deny));
    assert_eq!(outcome.block.unwrap().reason, "no sudo from the host");
    assert_eq!(outcome.handlers[1].handler.kind, HandlerType::Callback);
    assert_eq!(outcome.handlers[1].handler.label, "guard");

    let outcome = run(&runner, &bash_call(project.common(), "ls")).await;
    assert_eq!(outcome.permission_decision, Some(PermissionDecision::Allow));
    assert_eq!(outcome.system_messages, vec!["host checked"]);
    assert_eq!(seen.lock().unwrap().len(), 2);

    // The matcher applies: an Edit call does not reach the callback.
    let edit = HookInput::pre_tool_use(project.common(), "Edit", json!({}), "t");
    let outcome = run(&runner, &edit).await;
    assert_eq!(outcome.handlers.len(), 1);
    assert_eq!(seen.lock().unwrap().len(), 2);
}

#[tokio::test]
async fn callback_failures_are_contained() {
    let project = Project::new();
    let runner = project.runner(json!({}));
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&calls);
    runner
        .register_callback(
            HookEvent::PostToolUse,
            "",
            FnHookCallback::new("panicky", move |_input| {
                counter.fetch_add(1, Ordering::SeqCst);
                async move { panic!("callback bug") }
            }),
        )
        .unwrap();
    runner
        .register_callback(
            HookEvent::PostToolUse,
            "*",
            FnHookCallback::new("erroring", |_input| async {
                HookCallbackResult::Error {
                    message: "database unavailable".into(),
                }
            }),
        )
        .unwrap();
    let post = HookInput::post_tool_use(project.common(), "Bash", json!({}), "t", json!({}));
    let outcome = run(&runner, &post).await;
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert_eq!(
        outcome
            .errors
            .iter()
            .map(|e| e.failure.clone())
            .collect::<Vec<_>>(),
        vec![
            HookFailure::Panicked {
                message: "callback bug".into()
            },
            HookFailure::Callback {
                message: "database unavailable".into()
            }
        ]
    );
    assert!(outcome.block.is_none());
}

#[tokio::test]
async fn a_callback_timing_out_on_pre_tool_use_blocks_the_call() {
    let project = Project::new();
    let runner = project.runner(json!({}));
    let slow = || {
        FnHookCallback::new("slow", |_input| async {
            tokio::time::sleep(Duration::from_secs(60)).await;
            HookCallbackResult::Continue
        })
    };
    let id = runner
        .register_callback_with_timeout(
            HookEvent::PreToolUse,
            "",
            slow(),
            Some(Duration::from_millis(100)),
        )
        .unwrap();
    runner
        .register_callback_with_timeout(
            HookEvent::PostToolUse,
            "",
            slow(),
            Some(Duration::from_millis(100)),
        )
        .unwrap();
    let outcome = run(&runner, &bash_call(project.common(), "ls")).await;
    assert_eq!(outcome.permission_decision, Some(PermissionDecision::Deny));
    assert!(outcome.block.unwrap().reason.contains("timed out"));

    let post = HookInput::post_tool_use(project.common(), "Bash", json!({}), "t", json!({}));
    let outcome = run(&runner, &post).await;
    assert!(outcome.block.is_none());
    assert_eq!(failure(&outcome), &HookFailure::Timeout { timeout_ms: 100 });

    assert!(runner.unregister_callback(id));
    assert!(!runner.has_hooks(HookEvent::PreToolUse));
}

/// A callback that fails the way `how` says.
fn failing(name: &str, how: &'static str) -> Arc<FnHookCallback> {
    FnHookCallback::new(name, move |_input| async move {
        match how {
            "error" => HookCallbackResult::Error {
                message: "ZeroDivisionError: division by zero".into(),
            },
            "panic" => panic!("callback bug"),
            _ => HookCallbackResult::Continue,
        }
    })
}

#[tokio::test]
async fn a_failing_pre_tool_use_callback_blocks_the_call_and_reports_the_failure() {
    for how in ["error", "panic"] {
        let project = Project::new();
        let runner = project.runner(json!({}));
        runner
            .register_callback(HookEvent::PreToolUse, "Bash", failing("guard", how))
            .unwrap();
        let outcome = run(&runner, &bash_call(project.common(), "rm -rf /")).await;
        assert_eq!(
            outcome.permission_decision,
            Some(PermissionDecision::Deny),
            "{how}"
        );
        let reason = outcome.block.expect("blocked").reason;
        assert!(reason.contains("hook callback `guard`"), "{reason}");
        assert!(reason.contains("the tool call was blocked"), "{reason}");
        if how == "error" {
            assert!(
                reason.contains("ZeroDivisionError: division by zero"),
                "{reason}"
            );
        } else {
            assert!(reason.contains("panicked: callback bug"), "{reason}");
        }
        // Reported as the failure it is, marked as having blocked.
        assert_eq!(outcome.errors.len(), 1);
        assert!(outcome.errors[0].blocked);
        assert_eq!(outcome.errors[0].handler.label, "guard");
        assert!(outcome.errors[0]
            .to_string()
            .ends_with("the tool call was blocked"));
    }
}

#[tokio::test]
async fn on_failure_allow_lets_the_call_through_and_still_reports() {
    let project = Project::new();
    let runner = project.runner(json!({}));
    runner
        .register_callback_with(
            HookEvent::PreToolUse,
            "",
            failing("lenient", "error"),
            None,
            Some(OnHookFailure::Allow),
        )
        .unwrap();
    let outcome = run(&runner, &bash_call(project.common(), "ls")).await;
    assert!(outcome.block.is_none());
    assert_eq!(outcome.permission_decision, None);
    assert!(!outcome.errors[0].blocked);
    assert!(matches!(failure(&outcome), HookFailure::Callback { .. }));
}

#[tokio::test]
async fn a_failing_permission_request_callback_denies_and_user_prompt_submit_blocks_on_request() {
    let project = Project::new();
    let runner = project.runner(json!({}));
    runner
        .register_callback(
            HookEvent::PermissionRequest,
            "",
            failing("approver", "error"),
        )
        .unwrap();
    let request = HookInput::new(
        project.common(),
        HookEventInput::PermissionRequest(PermissionRequestInput {
            tool_name: "Bash".into(),
            tool_input: json!({"command": "ls"}),
            tool_use_id: Some("toolu_1".into()),
            permission_suggestions: Vec::new(),
        }),
    );
    let outcome = run(&runner, &request).await;
    let decision = outcome.permission_request.expect("a decision");
    assert_eq!(decision.behavior, PermissionBehavior::Deny);
    assert!(decision
        .message
        .unwrap_or_default()
        .contains("hook callback `approver`"));

    // UserPromptSubmit: a failure is reported and the prompt goes ahead, unless the hook
    // asks to block.
    let prompt = HookInput::new(
        project.common(),
        HookEventInput::UserPromptSubmit(UserPromptSubmitInput {
            prompt: "hi".into(),
        }),
    );
    let lenient = project.runner(json!({}));
    lenient
        .register_callback(HookEvent::UserPromptSubmit, "", failing("ctx", "error"))
        .unwrap();
    let outcome = run(&lenient, &prompt).await;
    assert!(outcome.block.is_none());
    assert_eq!(outcome.errors.len(), 1);
    let strict = project.runner(json!({}));
    strict
        .register_callback_with(
            HookEvent::UserPromptSubmit,
            "",
            failing("ctx", "error"),
            None,
            Some(OnHookFailure::Block),
        )
        .unwrap();
    let outcome = run(&strict, &prompt).await;
    assert_eq!(
        outcome.block.expect("rejected").effect,
        BlockEffect::RejectPrompt
    );
}

// ---------------------------------------------------------------------------------------------
// Layers, de-duplication, matchers, conditions

#[tokio::test]
async fn layers_merge_and_identical_handlers_run_once() {
    let project = Project::new();
    let log = project.file("runs.log");
    let logger = |tag: &str| command_hook(script("append_line.sh", &[&log, tag]));
    let user = parse_ok(
        "/home/u/.claude/settings.json",
        &json!({"PreToolUse": [{"matcher": "Bash", "hooks": [logger("shared"), logger("user-only")]}]}),
    );
    let project_layer = parse_ok(
        "/p/.claude/settings.json",
        &json!({"PreToolUse": [
            {"matcher": "Bash", "hooks": [logger("shared")]},
            {"matcher": "*", "hooks": [logger("shared"), logger("project-only")]},
        ]}),
    );
    let mut different_timeout = logger("shared");
    different_timeout["timeout"] = json!(30);
    let local = parse_ok(
        "/p/.claude/settings.local.json",
        &json!({"PreToolUse": [{"hooks": [different_timeout]}]}),
    );
    let runner = HookRunner::new(
        HooksConfig::merged([user, project_layer, local]),
        project.options(),
    );
    let outcome = run(&runner, &bash_call(project.common(), "ls")).await;
    let mut lines: Vec<String> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    lines.sort();
    // `shared` is defined four times: three identical definitions run once, the one with a
    // different timeout is a different handler. The user layer's hooks are not dropped.
    assert_eq!(lines, vec!["project-only", "shared", "shared", "user-only"]);
    let sources: Vec<String> = outcome
        .handlers
        .iter()
        .map(|h| h.handler.source.as_ref().unwrap().to_string())
        .collect();
    assert_eq!(
        sources,
        vec![
            "/home/u/.claude/settings.json: hooks.PreToolUse[0].hooks[0]",
            "/home/u/.claude/settings.json: hooks.PreToolUse[0].hooks[1]",
            "/p/.claude/settings.json: hooks.PreToolUse[1].hooks[1]",
            "/p/.claude/settings.local.json: hooks.PreToolUse[0].hooks[0]",
        ]
    );
}

#[test]
fn matcher_forms_follow_claude_code() {
    let m = |s: &str| Matcher::parse(s).unwrap();
    for all in ["", "*", " "] {
        assert!(m(all).matches(Some("Anything")) && m(all).matches(None));
    }
    assert!(m("Bash").matches(Some("Bash")));
    assert!(
        !m("Bash").matches(Some("BashOutput")),
        "plain names are exact"
    );
    assert!(!m("Bash").matches(None));
    assert!(m("Edit|Write").matches(Some("Write")));
    assert!(!m("Edit|Write").matches(Some("NotebookEdit")));
    assert!(m("Edit, Write").matches(Some("Write")));
    assert!(
        m("Edit.*").matches(Some("NotebookEdit")),
        "regexes are unanchored"
    );
    assert!(m("^Notebook").matches(Some("NotebookEdit")));
    assert!(!m("^Bash$").matches(Some("BashOutput")));
    assert!(m("mcp__memory__.*").matches(Some("mcp__memory__create_entities")));
    assert!(!m("mcp__memory").matches(Some("mcp__memory__create_entities")));
    assert!(m("mcp__.*__write.*").matches(Some("mcp__fs__write_file")));
    let error = Matcher::parse("Bash(").unwrap_err();
    assert_eq!(error.matcher, "Bash(");
    assert!(Matcher::exact_names("rate_limit|server_error").matches(Some("server_error")));
    assert!(!Matcher::exact_names("rate.*").matches(Some("rate_limit")));
}

#[tokio::test]
async fn matchers_apply_to_each_events_target() {
    let project = Project::new();
    let log = project.file("runs.log");
    let logger = |tag: &str| command_hook(script("append_line.sh", &[&log, tag]));
    let hooks = json!({
        "SessionStart": [{"matcher": "resume|compact", "hooks": [logger("session-resume")]}],
        "PreCompact": [{"matcher": "auto", "hooks": [logger("precompact-auto")]}],
        "SubagentStart": [{"matcher": "code-.*", "hooks": [logger("subagent-code")]}],
        "UserPromptSubmit": [{"matcher": "ignored", "hooks": [logger("prompt")]}],
        "PreToolUse": [{"matcher": "Edit.*", "hooks": [logger("edit-ish")]}],
    });
    let parsed = HooksConfig::parse(SETTINGS, &hooks);
    let (config, warnings) = parsed.into_result().unwrap();
    assert_eq!(warnings.len(), 1);
    assert_eq!(warnings[0].json_path, "hooks.UserPromptSubmit[0].matcher");
    let runner = HookRunner::new(config, project.options());
    let c = || project.common();
    let compact = |trigger| {
        HookInput::new(
            c(),
            HookEventInput::PreCompact(PreCompactInput {
                trigger,
                custom_instructions: String::new(),
            }),
        )
    };
    for input in [
        HookInput::session_start(c(), SessionStartSource::Startup),
        HookInput::session_start(c(), SessionStartSource::Compact),
        compact(CompactTrigger::Manual),
        compact(CompactTrigger::Auto),
        HookInput::subagent_start(c(), "a1", "explorer"),
        HookInput::subagent_start(c(), "a2", "code-reviewer"),
        HookInput::user_prompt_submit(c(), "x"),
        HookInput::pre_tool_use(c(), "NotebookEdit", json!({}), "t"),
        HookInput::pre_tool_use(c(), "Bash", json!({}), "t"),
    ] {
        run(&runner, &input).await;
    }
    let lines: Vec<String> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    assert_eq!(
        lines,
        vec![
            "session-resume",
            "precompact-auto",
            "subagent-code",
            "prompt",
            "edit-ish"
        ]
    );
}

struct GitOnly;

impl HookConditionEvaluator for GitOnly {
    fn matches(&self, rule: &str, input: &HookInput) -> bool {
        match rule {
            "Bash(git *)" => input.tool_input().unwrap()["command"]
                .as_str()
                .is_some_and(|c| c.starts_with("git ")),
            "Edit" => input.tool_name() == Some("Edit"),
            other => panic!("unexpected rule {other}"),
        }
    }
}

#[tokio::test]
async fn if_conditions_filter_tool_calls() {
    let project = Project::new();
    let log = project.file("runs.log");
    let mut git_hook = command_hook(script("append_line.sh", &[&log, "git"]));
    git_hook["if"] = json!("Bash(git *)");
    let mut edit_hook = command_hook(script("append_line.sh", &[&log, "edit"]));
    edit_hook["if"] = json!("Edit");
    let hooks = one_group("PreToolUse", None, vec![git_hook, edit_hook]);

    let runner = HookRunner::new(
        parse_ok(SETTINGS, &hooks),
        project
            .options()
            .with_condition_evaluator(Arc::new(GitOnly)),
    );
    run(&runner, &bash_call(project.common(), "git status")).await;
    run(&runner, &bash_call(project.common(), "rm x")).await;
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "git\n");

    // Without an evaluator, the tool name is checked and the specifier fails open.
    std::fs::remove_file(&log).unwrap();
    let runner = HookRunner::new(parse_ok(SETTINGS, &hooks), project.options());
    run(&runner, &bash_call(project.common(), "rm x")).await;
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "git\n");
}

#[tokio::test]
async fn worktree_create_reads_the_path_and_fails_on_any_error() {
    let project = Project::new();
    let mut input = WorktreeCreateInput::new("feat");
    input.base_path = Some("/repo/.claude/worktrees".into());
    let input = HookInput::new(project.common(), HookEventInput::WorktreeCreate(input));

    let runner = project.runner(one_group(
        "WorktreeCreate",
        None,
        vec![command_hook(fixture("worktree_create.py"))],
    ));
    let outcome = run(&runner, &input).await;
    assert_eq!(
        outcome.worktree_path.as_deref(),
        Some("/repo/.claude/worktrees/feat")
    );
    assert!(outcome.block.is_none());

    let runner = project.runner(one_group(
        "WorktreeCreate",
        None,
        vec![command_hook(script("respond.sh", &["1", "", "git failed"]))],
    ));
    let outcome = run(&runner, &input).await;
    let block = outcome.block.unwrap();
    assert_eq!(block.effect, BlockEffect::FailOperation);
    assert!(block.reason.contains("git failed"), "{}", block.reason);
}

#[tokio::test]
async fn hook_specific_fields_for_other_events_are_noted_not_applied() {
    let project = Project::new();
    let output = r#"{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "additionalContext": "ctx"}, "extraThing": 1}"#;
    let runner = project.runner(one_group(
        "PostToolUse",
        None,
        vec![command_hook(script("respond.sh", &["0", output]))],
    ));
    let post = HookInput::post_tool_use(project.common(), "Bash", json!({}), "t", json!({}));
    let outcome = run(&runner, &post).await;
    assert!(outcome.block.is_none());
    assert_eq!(outcome.permission_decision, None);
    assert_eq!(outcome.additional_context, vec!["ctx"]);
    let notes = outcome.handlers[0].notes.join("\n");
    assert!(notes.contains("hookEventName is `PreToolUse`"), "{notes}");
    assert!(
        notes.contains("permissionDecision applies to PreToolUse only"),
        "{notes}"
    );
    assert!(
        notes.contains("unknown output field `extraThing`"),
        "{notes}"
    );
}

// ---------------------------------------------------------------------------------------------
// Config diagnostics

fn diagnostic<'a>(parsed: &'a ParsedHooks, path: &str) -> &'a HookDiagnostic {
    parsed
        .diagnostics
        .iter()
        .find(|d| d.json_path == path)
        .unwrap_or_else(|| panic!("no diagnostic at {path}: {:#?}", parsed.diagnostics))
}

#[test]
fn config_errors_name_the_file_the_json_path_and_the_problem() {
    let file = "/p/.claude/settings.json";
    let hooks = json!({
        "PreToolUse": [
            {"matcher": "Bash(", "hooks": [{"type": "command", "command": "a"}]},
            {"matcher": "Bash", "hooks": [
                {"type": "command"},
                {"type": "command", "command": "ok.sh", "timeout": -1},
                {"type": "webhook", "url": "x"},
                {"command": "no-type.sh"},
                {"type": "command", "command": ""},
                {"type": "command", "command": 42},
                {"type": "http"},
                {"type": "http", "url": "ftp://x/y"},
                {"type": "http", "url": "http://h/x", "headers": ["a"]},
                {"type": "prompt"},
                {"type": "command", "command": "x", "shell": "fish"},
                {"type": "command", "command": "x", "if": "not a rule!"},
                {"type": "command", "command": "x", "async": "yes"},
                {"type": "command", "command": "x", "args": ["a", 1]},
                {"type": "command", "command": "x", "timeout": "10"},
                "just a string",
            ]},
            {"matcher": 7, "hooks": []},
            {"matcher": "Edit"},
            {"matcher": "Edit", "hooks": {}},
        ],
        "PostToolUse": {"matcher": "x"},
    });
    let parsed = HooksConfig::parse(file, &hooks);
    let error = |path: &str| {
        let d = diagnostic(&parsed, path);
        assert_eq!(d.severity, Severity::Error, "{d}");
        assert!(
            d.to_string()
                .starts_with(&format!("error: {file}: {path}: ")),
            "{d}"
        );
        d.problem.clone()
    };
    assert_eq!(
        error("hooks.PreToolUse[0].matcher"),
        HookProblem::InvalidMatcher {
            matcher: "Bash(".into(),
            message: match &diagnostic(&parsed, "hooks.PreToolUse[0].matcher").problem {
                HookProblem::InvalidMatcher { message, .. } => message.clone(),
                other => panic!("{other:?}"),
            }
        }
    );
    let h = |i: usize| format!("hooks.PreToolUse[1].hooks[{i}]");
    assert!(matches!(error(&h(0)), HookProblem::MissingField { field, .. } if field == "command"));
    let timeout = error(&format!("{}.timeout", h(1)));
    assert!(
        timeout
            .to_string()
            .contains("positive number of seconds (at most 86400), got -1"),
        "{timeout}"
    );
    assert_eq!(
        error(&format!("{}.type", h(2))),
        HookProblem::UnknownHandlerType {
            found: "webhook".into()
        }
    );
    assert!(matches!(error(&h(3)), HookProblem::MissingField { field, .. } if field == "type"));
    assert!(error(&format!("{}.command", h(4)))
        .to_string()
        .contains("must not be empty"));
    assert!(matches!(
        error(&format!("{}.command", h(5))),
        HookProblem::WrongType { .. }
    ));
    assert!(matches!(error(&h(6)), HookProblem::MissingField { field, .. } if field == "url"));
    assert!(error(&format!("{}.url", h(7)))
        .to_string()
        .contains("scheme `ftp`"));
    assert!(matches!(
        error(&format!("{}.headers", h(8))),
        HookProblem::WrongType { .. }
    ));
    assert!(matches!(error(&h(9)), HookProblem::MissingField { field, .. } if field == "prompt"));
    assert!(error(&format!("{}.shell", h(10)))
        .to_string()
        .contains("unknown shell `fish`"));
    assert!(error(&format!("{}.if", h(11)))
        .to_string()
        .contains("not a permission rule"));
    assert!(matches!(
        error(&format!("{}.async", h(12))),
        HookProblem::WrongType { .. }
    ));
    assert!(matches!(
        error(&format!("{}.args[1]", h(13))),
        HookProblem::WrongType { .. }
    ));
    assert_eq!(
        error(&format!("{}.timeout", h(14))),
        HookProblem::WrongType {
            expected: "a number of seconds".into(),
            found: "a string".into()
        }
    );
    assert!(matches!(error(&h(15)), HookProblem::WrongType { .. }));
    assert!(matches!(
        error("hooks.PreToolUse[2].matcher"),
        HookProblem::WrongType { .. }
    ));
    assert!(
        matches!(error("hooks.PreToolUse[3]"), HookProblem::MissingField { field, .. } if field == "hooks")
    );
    assert!(matches!(
        error("hooks.PreToolUse[4].hooks"),
        HookProblem::WrongType { .. }
    ));
    assert!(matches!(
        error("hooks.PostToolUse"),
        HookProblem::WrongType { .. }
    ));

    // Groups and handlers with errors are left out; the group with a valid matcher stays.
    assert_eq!(parsed.config.groups(HookEvent::PreToolUse).len(), 1);
    let valid: usize = parsed
        .config
        .groups(HookEvent::PreToolUse)
        .iter()
        .map(|g| g.hooks.len())
        .sum();
    assert_eq!(valid, 0);

    let err = parsed.clone().into_result().unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("/p/.claude/settings.json: hooks.PreToolUse[1].hooks[1].timeout"),
        "{text}"
    );

    // hooks itself must be an object.
    let parsed = HooksConfig::parse(file, &json!(["PreToolUse"]));
    assert!(matches!(
        error_at(&parsed, "hooks"),
        HookProblem::WrongType { .. }
    ));
}

fn error_at(parsed: &ParsedHooks, path: &str) -> HookProblem {
    let d = diagnostic(parsed, path);
    assert_eq!(d.severity, Severity::Error);
    d.problem.clone()
}

#[test]
fn config_warnings_keep_the_config_usable() {
    let file = "/p/.claude/settings.json";
    let hooks = json!({
        "PreToolUse": [{"matcher": "Bash", "env": {"A": "1"}, "hooks": [
            {"type": "command", "command": "x", "statusMessage": "Checking…", "retries": 3, "once": true},
            {"type": "mcp_tool", "server": "s", "tool": "t", "args": {}},
        ]}],
        "Stop": [{"hooks": [{"type": "command", "command": "y", "if": "Bash(git *)"}]}],
        "TeammateIdle": [{"hooks": [{"type": "command", "command": "z"}]}],
    });
    let parsed = HooksConfig::parse(file, &hooks);
    assert!(!parsed.has_errors(), "{:#?}", parsed.diagnostics);
    let warning = |path: &str| {
        let d = diagnostic(&parsed, path);
        assert_eq!(d.severity, Severity::Warning, "{d}");
        assert!(
            d.to_string()
                .starts_with(&format!("warning: {file}: {path}: ")),
            "{d}"
        );
        d.problem.clone()
    };
    assert!(
        matches!(warning("hooks.PreToolUse[0].env"), HookProblem::UnknownKey { key, .. } if key == "env")
    );
    let retries = warning("hooks.PreToolUse[0].hooks[0].retries");
    assert!(
        retries
            .to_string()
            .contains("`command` hooks take: type, if, timeout"),
        "{retries}"
    );
    assert!(matches!(
        warning("hooks.PreToolUse[0].hooks[0].once"),
        HookProblem::Ignored { .. }
    ));
    let args = warning("hooks.PreToolUse[0].hooks[1].args");
    assert!(
        args.to_string()
            .contains("`mcp_tool` hooks take: type, if, timeout"),
        "{args}"
    );
    assert!(args.to_string().contains("server, tool, input"), "{args}");
    assert!(warning("hooks.Stop[0].hooks[0].if")
        .to_string()
        .contains("only on tool events"));
    match warning("hooks.TeammateIdle") {
        HookProblem::UnknownEvent { name, valid } => {
            assert_eq!(name, "TeammateIdle");
            assert_eq!(valid.len(), 17);
            assert!(valid.contains(&"PreToolUse".to_string()));
            assert!(valid.contains(&"Setup".to_string()));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(parsed.config.unknown_events()["TeammateIdle"], 1);
    let (config, warnings) = parsed.into_result().unwrap();
    assert_eq!(warnings.len(), 6);
    let handler = &config.groups(HookEvent::PreToolUse)[0].hooks[0].handler;
    assert_eq!(handler.status_message.as_deref(), Some("Checking…"));
    // The `mcp_tool` handler is kept, with its server and tool.
    let hooks = &config.groups(HookEvent::PreToolUse)[0].hooks;
    assert_eq!(hooks.len(), 2);
    assert!(
        matches!(&hooks[1].handler.kind, robota::hooks::HandlerKind::McpTool(m) if m.server == "s" && m.tool == "t"),
        "{:?}",
        hooks[1].handler.kind
    );
    // `if` on a non-tool event is dropped (it would never be evaluated).
    assert_eq!(
        config.groups(HookEvent::Stop)[0].hooks[0].handler.condition,
        None
    );
}

#[test]
fn settings_without_hooks_and_config_round_trip() {
    let parsed = HooksConfig::from_settings(SETTINGS, &json!({"permissions": {"allow": []}}));
    assert!(parsed.config.is_empty() && parsed.diagnostics.is_empty());

    let hooks = json!({"PreToolUse": [{"matcher": "Edit|Write", "hooks": [
        {"type": "command", "command": "fmt.sh", "timeout": 30, "async": true},
        {"type": "http", "url": "https://h/x", "headers": {"A": "b"}, "allowedEnvVars": ["T"]},
    ]}]});
    let config = parse_ok(SETTINGS, &hooks);
    let group = &config.groups(HookEvent::PreToolUse)[0];
    assert_eq!(group.matcher.as_str(), "Edit|Write");
    assert_eq!(
        serde_json::to_value(&group.hooks[0].handler).unwrap(),
        json!({"type": "command", "command": "fmt.sh", "async": true, "asyncRewake": false, "timeout": 30.0})
    );
    assert_eq!(
        serde_json::to_value(&group.hooks[1].handler).unwrap(),
        json!({"type": "http", "url": "https://h/x", "headers": {"A": "b"}, "allowedEnvVars": ["T"]})
    );
}

#[tokio::test]
async fn exec_form_runs_without_a_shell_and_expands_the_project_dir() {
    let project = Project::new();
    let respond = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/hooks/respond.py")
        .display()
        .to_string();
    let hooks = json!({
        "UserPromptSubmit": [{"hooks": [
            {"type": "command", "command": respond, "args": ["0", "dir=${CLAUDE_PROJECT_DIR}"]},
            {"type": "command", "command": respond, "args": ["0", "a; echo injected $(id)"]},
        ]}],
    });
    let runner = project.runner(hooks);
    let outcome = run(
        &runner,
        &HookInput::user_prompt_submit(project.common(), "x"),
    )
    .await;
    assert!(outcome.errors.is_empty(), "{:#?}", outcome.errors);
    assert_eq!(
        outcome.additional_context,
        vec![
            format!("dir={}", project.path().display()),
            "a; echo injected $(id)".to_string()
        ]
    );
}

#[tokio::test]
async fn once_hooks_from_skills_run_once_and_elsewhere_every_time() {
    let project = Project::new();
    let log = project.file("runs.log");
    let mut hook = command_hook(script("append_line.sh", &[&log, "skill"]));
    hook["once"] = json!(true);
    let hooks = one_group("UserPromptSubmit", None, vec![hook.clone()]);
    let skill =
        HooksConfig::parse_with_origin("/p/.claude/skills/x/SKILL.md", &hooks, HookOrigin::Skill);
    assert!(skill.diagnostics.is_empty(), "{:#?}", skill.diagnostics);
    let mut settings_hook = hook;
    settings_hook["command"] = json!(script("append_line.sh", &[&log, "settings"]));
    let settings = HooksConfig::parse(
        SETTINGS,
        &one_group("UserPromptSubmit", None, vec![settings_hook]),
    );
    let runner = HookRunner::new(
        HooksConfig::merged([skill.config, settings.config]),
        project.options(),
    );
    for _ in 0..3 {
        run(
            &runner,
            &HookInput::user_prompt_submit(project.common(), "x"),
        )
        .await;
    }
    let mut lines: Vec<String> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    lines.sort();
    assert_eq!(lines, vec!["settings", "settings", "settings", "skill"]);
}
