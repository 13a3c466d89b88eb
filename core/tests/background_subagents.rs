//! Subagents beside the task manager against mock-llm and in killed child processes (issue 23):
//! an agent definition's `permissionMode` narrows the session's mode but never widens it; a
//! background subagent whose call waits for the host's permission answer is
//! `waiting_permission` until answered; the task transitions are lines of the session's JSONL
//! log, and a resumed session lists a finished agent task with its report and the one that was
//! running when the process died as `lost`; three subagents started as one job group complete
//! with one summary that the parent model reads with its next prompt.
#![cfg(unix)]

mod child_common;
mod process_common;
mod session_common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use child_common::{block_on, say, ChildRun};
use process_common::{alive, read_pid};
use robota::framework::agents::SubagentRequest;
use robota::framework::interactive::{
    InteractiveSession, InteractiveSessionOptions, JobGroupRequest, JobGroupStatus,
    JobGroupWaitPolicy,
};
use robota::permissions::PermissionMode;
use robota::provider::scripted::{ScriptedProvider, ScriptedTurn};
use robota::session::log::TASK_EVENT_LOG_TYPE;
use robota::session::{
    FnPermissionHandler, PermissionResponse, SessionOptions, SessionPersistence, SessionSettings,
};
use robota::tools::builtins::{LogStream, TaskKind, TaskStatus};
use serde_json::{json, Value};
use session_common::*;

const WAIT: Duration = Duration::from_secs(20);

fn interactive(options: SessionOptions) -> Arc<InteractiveSession> {
    InteractiveSession::new(InteractiveSessionOptions::new(options))
        .unwrap_or_else(|e| panic!("session: {e}"))
}

async fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + WAIT;
    while !check() {
        assert!(tokio::time::Instant::now() < deadline, "never: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn agent(name: &str, mode: &str) -> String {
    format!(
        "---\nname: {name}\ndescription: Writes a file\npermissionMode: {mode}\n---\nWrite it.\n"
    )
}

fn request(agent_type: &str, prompt: &str) -> SubagentRequest {
    SubagentRequest {
        agent_type: Some(agent_type.into()),
        prompt: prompt.into(),
        ..Default::default()
    }
}

/// A child turn writing `path`, then its answer.
fn write_then(path: &std::path::Path, answer: &str) -> Vec<Value> {
    vec![
        tool_turn(
            "toolu_write",
            "Write",
            json!({"file_path": path.to_string_lossy(), "content": "written\n"}),
        ),
        text_turn(answer),
    ]
}

#[tokio::test]
async fn an_agents_permission_mode_narrows_the_sessions_but_never_widens_it() {
    let project = Project::new();
    project.write(
        ".claude/agents/bold.md",
        &agent("bold", "bypassPermissions"),
    );
    project.write(".claude/agents/careful.md", &agent("careful", "plan"));
    project.write(".claude/agents/editor.md", &agent("editor", "acceptEdits"));
    let bold_file = project.path("bold.txt");
    let careful_file = project.path("careful.txt");
    let editor_file = project.path("editor.txt");

    // A session in `default` mode: the agent's bypassPermissions is capped to default, so its
    // write goes to the host, which says no.
    let mock = Mock::start(json!({ "turns": write_then(&bold_file, "BOLD-DONE") })).await;
    let events = Events::default();
    let handler = Handler::default();
    let session = interactive(options(&project, &mock, &events).with_permission_handler(
        handler.answering(vec![PermissionResponse::Deny {
            message: "no".into(),
        }]),
    ));
    let report = session
        .run_subagent(request("bold", "write bold.txt"))
        .await
        .expect("runs");
    assert_eq!(handler.tools(), ["Write"], "the host was asked");
    assert!(!bold_file.exists());
    assert!(
        report
            .notes
            .iter()
            .any(|n| n.contains("bypassPermissions") && n.contains("runs in `default`")),
        "{:?}",
        report.notes
    );

    // A session in bypassPermissions: the plan agent cannot write (read-only mode), the
    // acceptEdits agent can, and neither asks anybody.
    let turns = [
        write_then(&careful_file, "CAREFUL-DONE"),
        write_then(&editor_file, "EDITOR-DONE"),
    ]
    .concat();
    let mock = Mock::start(json!({ "turns": turns })).await;
    let handler = Handler::default();
    let session = interactive(
        options(&project, &mock, &events)
            .with_permission_mode(PermissionMode::BypassPermissions)
            .with_permission_handler(handler.answering(vec![PermissionResponse::AllowOnce])),
    );
    let careful = session
        .run_subagent(request("careful", "write careful.txt"))
        .await
        .expect("runs");
    assert!(!careful_file.exists());
    assert!(careful.notes.is_empty(), "{:?}", careful.notes);
    assert_eq!(careful.response, "CAREFUL-DONE");
    let denied = mock.result_for("toolu_write");
    assert!(denied.to_lowercase().contains("plan"), "{denied}");
    let editor = session
        .run_subagent(request("editor", "write editor.txt"))
        .await
        .expect("runs");
    assert_eq!(editor.response, "EDITOR-DONE");
    assert_eq!(std::fs::read_to_string(&editor_file).unwrap(), "written\n");
    assert_eq!(handler.count(), 0, "{:?}", handler.tools());
}

#[tokio::test]
async fn a_background_subagent_waiting_for_permission_shows_it_until_answered() {
    let project = Project::new();
    let target = project.path("asked.txt");
    let mock = Mock::start(json!({ "turns": write_then(&target, "WROTE-IT") })).await;
    let events = Events::default();
    // The host answers only when the test says so.
    let release = Arc::new(tokio::sync::Semaphore::new(0));
    let asked = Arc::new(Mutex::new(Vec::new()));
    let handler = {
        let release = release.clone();
        let asked = asked.clone();
        FnPermissionHandler::new(move |request, _cancel| {
            asked.lock().unwrap().push(request.tool_name.clone());
            let release = release.clone();
            async move {
                let _permit = release.acquire().await;
                PermissionResponse::AllowOnce
            }
        })
    };
    let session = interactive(options(&project, &mock, &events).with_permission_handler(handler));
    let seen: Arc<Mutex<Vec<(String, String)>>> = Arc::default();
    let sink = seen.clone();
    std::mem::forget(session.subscribe(move |event| {
        let value = serde_json::to_value(&event).unwrap();
        let data = &value["data"];
        if value["type"] == "background_task_event" && data["event"] == "state_changed" {
            sink.lock().unwrap().push((
                data["task_id"].as_str().unwrap_or("").to_string(),
                data["status"].as_str().unwrap_or("").to_string(),
            ));
        }
    }));

    let task = session
        .start_background_subagent(request("general-purpose", "write asked.txt"))
        .expect("starts");
    assert_eq!(task.kind, TaskKind::Agent);
    eventually("the task waits for permission", || {
        session.get_background_task(&task.id).map(|t| t.status)
            == Some(TaskStatus::WaitingPermission)
    })
    .await;
    assert_eq!(*asked.lock().unwrap(), ["Write"]);
    assert!(!target.exists());
    release.add_permits(1);
    let done = session
        .wait_background_task(&task.id, WAIT)
        .await
        .expect("ends");
    assert_eq!(done.status, TaskStatus::Completed, "{done:?}");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "written\n");
    eventually("all transitions are seen", || {
        seen.lock().unwrap().len() >= 5
    })
    .await;
    let statuses: Vec<String> = seen
        .lock()
        .unwrap()
        .iter()
        .filter(|(id, _)| *id == task.id)
        .map(|(_, status)| status.clone())
        .collect();
    assert_eq!(
        statuses,
        [
            "queued",
            "running",
            "waiting_permission",
            "running",
            "completed"
        ]
    );
}

const RESUMED: &str = "agent-task-resume";

fn saved(project: &std::path::Path, turns: Vec<ScriptedTurn>) -> SessionOptions {
    let mut options = SessionOptions::new(project, Arc::new(ScriptedProvider::new(turns)))
        .with_settings(SessionSettings::None)
        .with_project_context(false)
        .with_permission_mode(PermissionMode::BypassPermissions)
        .with_persistence(SessionPersistence::Project);
    // Unsandboxed: `$$` inside the sandbox's PID namespace is not the host's pid.
    options.sandbox = Some(false);
    options
}

/// The child of [`a_resumed_session_lists_its_agent_tasks_and_the_log_has_their_events`]: one
/// background subagent finishes, a second one runs a long command, the child says so and waits
/// to be killed.
#[test]
#[ignore = "run as a child process by the resume test"]
fn agent_task_resume_child() {
    let project = std::path::PathBuf::from(std::env::var("ROBOTA_AGENT_PROJECT").unwrap());
    block_on(async {
        let turns = vec![
            ScriptedTurn::text("REPORT-OF-THE-FIRST"),
            ScriptedTurn::tool_call(
                "t1",
                "Bash",
                json!({"command": "echo $$ > agent.pid; sleep 300"}),
            ),
        ];
        let session = interactive(saved(&project, turns).with_session_id(RESUMED));
        let first = session
            .start_background_subagent(request("general-purpose", "report"))
            .unwrap();
        let first = session.wait_background_task(&first.id, WAIT).await.unwrap();
        assert_eq!(first.status, TaskStatus::Completed, "{first:?}");
        session
            .start_background_subagent(request("general-purpose", "run for long"))
            .unwrap();
        let pid = project.join("agent.pid");
        while !pid.exists() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        say("ready", "");
        tokio::time::sleep(Duration::from_secs(300)).await;
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resumed_session_lists_its_agent_tasks_and_the_log_has_their_events() {
    let project = tempfile::tempdir().unwrap();
    let root = project.path().canonicalize().unwrap();
    let mut child = ChildRun::spawn(
        "agent_task_resume_child",
        &[("ROBOTA_AGENT_PROJECT", root.to_string_lossy().into_owned())],
    );
    child.wait_for("ready");
    let long = read_pid(&root.join("agent.pid"));
    child.kill();

    // The log recorded every transition of both tasks as it happened.
    let log = std::fs::read_to_string(root.join(format!(".robota/logs/{RESUMED}.jsonl")))
        .expect("session log");
    let logged: Vec<(String, String)> = log
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|line| line["type"] == TASK_EVENT_LOG_TYPE)
        .map(|line| {
            assert_eq!(line["task"]["kind"], "agent", "{line}");
            (
                line["task_id"].as_str().unwrap().to_string(),
                line["status"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let expected = [
        ("agent_1", "queued"),
        ("agent_1", "running"),
        ("agent_1", "completed"),
        ("agent_2", "queued"),
        ("agent_2", "running"),
    ];
    assert_eq!(
        logged,
        expected.map(|(id, status)| (id.to_string(), status.to_string())),
        "{log}"
    );

    let session =
        interactive(saved(&root, vec![ScriptedTurn::text("resumed")]).with_resume(RESUMED, false));
    let tasks = session.list_background_tasks();
    let states: Vec<(&str, TaskKind, TaskStatus)> = tasks
        .iter()
        .map(|t| (t.id.as_str(), t.kind, t.status))
        .collect();
    assert_eq!(
        states,
        [
            ("agent_1", TaskKind::Agent, TaskStatus::Completed),
            ("agent_2", TaskKind::Agent, TaskStatus::Lost)
        ]
    );
    let report = session
        .read_background_task_log("agent_1", LogStream::Stdout, 0, 4096)
        .unwrap();
    assert_eq!(report.text, "REPORT-OF-THE-FIRST");
    let cancel = session.cancel_background_task("agent_2").await.unwrap_err();
    assert!(cancel.to_string().contains("is not running"), "{cancel}");

    // The killed host could not stop its subagent's command (the documented limit).
    assert!(alive(long), "the lost subagent's command is still running");
    // SAFETY: `long` is the lost subagent's shell, still alive (checked above).
    unsafe { libc::kill(-long, libc::SIGKILL) };
}

/// A text turn streamed slowly: `chunks` deltas, `delay_ms` apart.
fn slow_text(text: &str, chunks: usize, delay_ms: u64) -> Value {
    let pieces: Vec<String> = (0..chunks)
        .map(|i| if i == 0 { text.to_string() } else { ".".into() })
        .collect();
    json!({"text": pieces, "chunk_delay_ms": delay_ms})
}

#[tokio::test]
async fn three_subagents_started_as_a_group_complete_with_one_summary_the_model_reads() {
    let project = Project::new();
    let mock = Mock::start(json!({"turns": [
        slow_text("REPORT-1", 4, 200),
        slow_text("REPORT-2", 4, 200),
        slow_text("REPORT-3", 4, 200),
        text_turn("Read the summary."),
    ]}))
    .await;
    let events = Events::default();
    let session = interactive(options(&project, &mock, &events));
    let group_events: Arc<Mutex<Vec<Value>>> = Arc::default();
    let sink = group_events.clone();
    std::mem::forget(session.subscribe(move |event| {
        let value = serde_json::to_value(&event).unwrap();
        if value["type"] == "background_task_event" && value["data"]["event"] == "group_completed" {
            sink.lock().unwrap().push(value["data"].clone());
        }
    }));

    // Bad groups are refused before anything runs.
    let unknown = session
        .create_background_job_group(JobGroupRequest {
            task_ids: vec!["agent_9".into()],
            ..Default::default()
        })
        .expect_err("unknown task");
    assert!(unknown.to_string().contains("agent_9"), "{unknown}");
    let refused = session
        .start_background_subagent_group(
            vec![request("no-such-agent", "x")],
            None,
            JobGroupWaitPolicy::WaitAll,
        )
        .expect_err("unknown agent");
    assert!(refused.to_string().contains("no-such-agent"), "{refused}");
    assert!(session.list_background_tasks().is_empty());

    let group = session
        .start_background_subagent_group(
            vec![
                request("Explore", "explore a"),
                request("Explore", "explore b"),
                request("general-purpose", "explore c"),
            ],
            Some("exploration".into()),
            JobGroupWaitPolicy::WaitAll,
        )
        .expect("starts");
    assert_eq!(group.id, "group_1");
    assert_eq!(group.task_ids, ["agent_1", "agent_2", "agent_3"]);
    assert_eq!(group.status, JobGroupStatus::Running);
    let done = session
        .wait_background_job_group(&group.id, WAIT)
        .await
        .expect("group");
    assert_eq!(done.status, JobGroupStatus::Completed, "{done:?}");
    let summary = done.summary.clone().expect("summary");
    assert_eq!(
        (summary.total, summary.completed, summary.failed),
        (3, 3, 0)
    );
    assert_eq!(summary.lines.len(), 3);
    for report in ["REPORT-1", "REPORT-2", "REPORT-3"] {
        assert!(summary.text.contains(report), "{}", summary.text);
    }
    assert!(
        summary.text.contains("group_1 (exploration)"),
        "{}",
        summary.text
    );
    // They ran side by side: the last started before the first ended.
    let tasks = session.list_background_tasks();
    let first_end = tasks.iter().filter_map(|t| t.ended_at_ms).min().unwrap();
    let last_start = tasks.iter().map(|t| t.created_at_ms).max().unwrap();
    assert!(last_start < first_end, "{tasks:#?}");
    assert_eq!(
        session.summarize_background_job_group("group_1").unwrap(),
        summary
    );
    assert_eq!(
        session.list_background_job_groups(),
        std::slice::from_ref(&done)
    );

    // One completion event, then the parent model reads the summary with its next prompt.
    eventually("the group event", || {
        !group_events.lock().unwrap().is_empty()
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(group_events.lock().unwrap().len(), 1);
    assert_eq!(group_events.lock().unwrap()[0]["group_id"], "group_1");
    session
        .submit("what did they find?", None, None)
        .await
        .expect("submit");
    session.wait_idle().await;
    let bodies = mock.bodies();
    let parent = bodies.last().expect("the parent's request").to_string();
    assert!(parent.contains("Background job group group_1"), "{parent}");
    assert!(parent.contains("REPORT-2"), "{parent}");
}
