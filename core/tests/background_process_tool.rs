//! The `BackgroundProcess` tool in a real session against mock-llm (issue 23): offered only when
//! configured; it starts a process as a background task of the session's manager, lists it,
//! reads its output and stops it (its process gone, checked by pid); the command is judged as a
//! `Bash` call with that command, so a `Bash(rm:*)` deny rule refuses it and the host is asked
//! only for starting a command, never for list, read or stop.
#![cfg(unix)]

mod process_common;
mod session_common;

use process_common::{alive, read_pid};
use robota::session::PermissionResponse;
use robota::tools::builtins::{TaskKind, TaskStatus, BACKGROUND_PROCESS_TOOL_NAME};
use serde_json::json;
use session_common::*;

const TICKER: &str = "echo $$ > bp.pid; while :; do echo tick; sleep 0.05; done";

#[tokio::test]
async fn background_process_starts_lists_reads_and_stops_and_its_command_is_judged_as_bash() {
    let project = Project::new();
    project.settings(
        ".claude/settings.json",
        json!({"permissions": {"deny": ["Bash(rm:*)"]}}),
    );
    std::fs::create_dir_all(project.path("keep")).unwrap();
    let mock = Mock::start(json!({"turns": [
        tool_turn("toolu_start", BACKGROUND_PROCESS_TOOL_NAME, json!({"command": TICKER, "description": "ticker"})),
        tool_turn("toolu_list", BACKGROUND_PROCESS_TOOL_NAME, json!({"action": "list"})),
        tool_turn("toolu_read", BACKGROUND_PROCESS_TOOL_NAME, json!({"action": "read", "task_id": "bash_1"})),
        tool_turn("toolu_stop", BACKGROUND_PROCESS_TOOL_NAME, json!({"action": "stop", "task_id": "bash_1"})),
        tool_turn("toolu_rm", BACKGROUND_PROCESS_TOOL_NAME, json!({"command": "rm -rf keep"})),
        text_turn("done"),
    ]}))
    .await;
    let events = Events::default();
    let handler = Handler::default();
    let mut opts = options(&project, &mock, &events)
        .with_permission_handler(handler.answering(vec![PermissionResponse::AllowOnce]));
    opts.builtin_tools.background_process_tool = true;
    // Unsandboxed: `$$` inside the sandbox's PID namespace is not the host's pid.
    opts.sandbox = Some(false);
    let session = session(opts);
    assert!(session
        .tool_names()
        .contains(&BACKGROUND_PROCESS_TOOL_NAME.to_string()));
    session.run("run the ticker").await.expect("runs");

    // Started as a process task whose origin is this tool.
    let tasks = session.background_tasks().expect("builtins").list();
    assert_eq!(tasks.len(), 1, "{tasks:?}");
    assert_eq!(tasks[0].kind, TaskKind::Process);
    assert_eq!(
        tasks[0].origin.name.as_deref(),
        Some(BACKGROUND_PROCESS_TOOL_NAME)
    );
    assert!(mock.result_for("toolu_start").contains("bash_1"));
    let listed = mock.result_for("toolu_list");
    assert!(
        listed.contains("bash_1") && listed.contains("running"),
        "{listed}"
    );
    let read = mock.result_for("toolu_read");
    assert!(read.contains("<status>running</status>"), "{read}");
    let stopped = mock.result_for("toolu_stop");
    assert!(stopped.contains("killed"), "{stopped}");
    assert_eq!(tasks_status(&session), TaskStatus::Cancelled);
    let pid = read_pid(&project.path("bp.pid"));
    assert!(!alive(pid), "the stopped process {pid} is gone");

    // The rm command met the Bash deny rule: nothing ran, nobody was asked.
    let denied = mock.result_for("toolu_rm");
    assert!(denied.to_lowercase().contains("denied"), "{denied}");
    assert!(project.path("keep").is_dir());
    assert_eq!(
        handler.tools(),
        [BACKGROUND_PROCESS_TOOL_NAME],
        "only the start was asked"
    );
    assert_eq!(handler.requests.lock().unwrap()[0].input["command"], TICKER);
}

fn tasks_status(session: &robota::session::Session) -> TaskStatus {
    session.background_tasks().expect("builtins").list()[0].status
}

#[tokio::test]
async fn background_process_is_not_offered_unless_configured() {
    let project = Project::new();
    let mock = Mock::start(json!({"turns": [text_turn("hi")]})).await;
    let events = Events::default();
    let session = session(options(&project, &mock, &events));
    assert!(!session
        .tool_names()
        .contains(&BACKGROUND_PROCESS_TOOL_NAME.to_string()));
}
