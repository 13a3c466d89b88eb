//! Every process a session starts belongs to it (issue 14, "Processes left behind"), checked on
//! real process trees through the Rust API: abort, timeout, shutdown and drop stop a running Bash
//! call's tree; shutdown and drop stop background tasks and background hooks; spilled outputs
//! live under `.robota/sessions/<id>/spill/`, stay readable after a resume and go with the
//! session.
#![cfg(unix)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

mod process_common;

use process_common::{alive, assert_all_dead, read_pid, wait_all_dead};
use robota::engine::RunOutcome;
use robota::hooks::SessionEndReason;
use robota::message::ContentBlock;
use robota::permissions::PermissionMode;
use robota::process::ProcessKind;
use robota::provider::scripted::{ScriptedProvider, ScriptedTurn};
use robota::session::store::{FileSessionStore, SessionStore};
use robota::session::{
    FnPermissionHandler, PermissionResponse, Session, SessionOptions, SessionPersistence,
    SessionSettings,
};
use serde_json::{json, Value};

/// A command whose child and grandchildren keep running: a subshell with two sleepers, one of
/// which ignores SIGTERM, and one process backgrounded with `&` by the shell itself.
const TREE: &str = "( sleep 300 & echo $! > gc1.pid; \
      sh -c 'trap \"\" TERM; echo $$ > gc2.pid; while :; do sleep 1; done' & \
      echo $$ > child.pid; wait ) & \
    sleep 300 & echo $! > amp.pid; \
    wait";
const TREE_PIDS: [&str; 4] = ["child.pid", "gc1.pid", "gc2.pid", "amp.pid"];

struct Project {
    _dir: tempfile::TempDir,
    _home: tempfile::TempDir,
    root: PathBuf,
    home: PathBuf,
}

impl Project {
    fn new() -> Project {
        let dir = tempfile::tempdir().unwrap();
        let home = tempfile::tempdir().unwrap();
        Project {
            root: std::fs::canonicalize(dir.path()).unwrap(),
            home: std::fs::canonicalize(home.path()).unwrap(),
            _dir: dir,
            _home: home,
        }
    }

    fn options(&self, turns: Vec<ScriptedTurn>) -> SessionOptions {
        let mut options = SessionOptions::new(&self.root, Arc::new(ScriptedProvider::new(turns)))
            .with_settings(SessionSettings::with_home(&self.home))
            .with_permission_mode(PermissionMode::BypassPermissions)
            // The test trees use `trap`, which is never approved without asking.
            .with_permission_handler(FnPermissionHandler::new(|_request, _cancel| async {
                PermissionResponse::AllowOnce
            }))
            .with_sandbox(false)
            .with_project_context(false);
        options.builtin_tools.kill_grace = Duration::from_millis(300);
        options
    }

    fn session(&self, turns: Vec<ScriptedTurn>) -> Arc<Session> {
        Arc::new(Session::new(self.options(turns)).unwrap())
    }

    /// The pids written to `files` in the project, waiting until each is there.
    fn pids(&self, files: &[&str]) -> Vec<i32> {
        files.iter().map(|f| read_pid(&self.root.join(f))).collect()
    }
}

/// Runs `prompt` on a task (so the test can act while it runs).
fn start_run(session: &Arc<Session>) -> tokio::task::JoinHandle<RunOutcome> {
    let session = Arc::clone(session);
    tokio::spawn(async move { session.run("go").await.expect("the run starts") })
}

/// A Bash call, then a closing answer.
fn bash_then_done(input: Value) -> Vec<ScriptedTurn> {
    vec![
        ScriptedTurn::tool_call("call_1", "Bash", input),
        ScriptedTurn::text("done"),
    ]
}

fn tool_results(session: &Session) -> Vec<(String, bool)> {
    session
        .messages()
        .iter()
        .flat_map(|m| m.content.iter())
        .filter_map(|block| match block {
            ContentBlock::ToolResult {
                content, is_error, ..
            } => Some((content.clone(), *is_error)),
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abort_stops_the_running_calls_whole_tree() {
    let project = Project::new();
    let session = project.session(bash_then_done(json!({"command": TREE})));
    let run = start_run(&session);
    let pids = project.pids(&TREE_PIDS);
    // The call's group is registered right after the spawn returns; the child may have written
    // its pids before that.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while session.processes().list().is_empty() && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(session.processes().list().len(), 1);
    assert_eq!(session.processes().list()[0].kind, ProcessKind::ToolCall);
    session.abort();
    let outcome = run.await.unwrap();
    assert!(outcome.interrupted);
    assert_all_dead(&pids, "abort");
    assert!(session.processes().list().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timed_out_call_leaves_nothing_running() {
    let project = Project::new();
    let session = project.session(bash_then_done(json!({"command": TREE, "timeout": 1500})));
    let run = start_run(&session);
    let pids = project.pids(&TREE_PIDS);
    let outcome = run.await.unwrap();
    assert_eq!(outcome.response, "done");
    let (content, is_error) = &tool_results(&session)[0];
    assert!(*is_error && content.contains("timed out"), "{content}");
    assert_all_dead(&pids, "the timeout");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_during_a_call_stops_its_tree() {
    let project = Project::new();
    let session = project.session(bash_then_done(json!({"command": TREE})));
    let run = start_run(&session);
    let pids = project.pids(&TREE_PIDS);
    session.shutdown(SessionEndReason::Other).await;
    assert_all_dead(&pids, "shutdown");
    assert!(run.await.unwrap().interrupted);
    assert!(session.processes().is_closed());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_stops_background_tasks_and_what_they_left_running() {
    let project = Project::new();
    let session = project.session(bash_then_done(
        json!({"command": TREE, "run_in_background": true}),
    ));
    let outcome = session.run("go").await.unwrap();
    assert_eq!(outcome.response, "done");
    let pids = project.pids(&TREE_PIDS);
    // The task outlives the call and the turn: that is what a background task is for.
    for &pid in &pids {
        assert!(alive(pid), "background process {pid} ended early");
    }
    let groups = session.processes().list();
    assert_eq!(groups.len(), 1);
    assert_eq!(groups[0].kind, ProcessKind::BackgroundTask);
    session.shutdown(SessionEndReason::Other).await;
    assert_all_dead(&pids, "shutdown");
    assert!(session.processes().list().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_session_kills_its_background_tasks() {
    let project = Project::new();
    let session = project.session(bash_then_done(
        json!({"command": TREE, "run_in_background": true}),
    ));
    session.run("go").await.unwrap();
    let pids = project.pids(&TREE_PIDS);
    drop(session);
    wait_all_dead(&pids, "dropping the session");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_stops_background_hooks() {
    let project = Project::new();
    let settings = json!({"hooks": {"PreToolUse": [{"hooks": [{
        "type": "command",
        "command": "echo $$ > hook.pid; sleep 300 & echo $! > hook-child.pid; wait",
        "async": true
    }]}]}});
    std::fs::create_dir_all(project.root.join(".claude")).unwrap();
    std::fs::write(
        project.root.join(".claude/settings.json"),
        settings.to_string(),
    )
    .unwrap();
    let session = project.session(bash_then_done(json!({"command": "true"})));
    session.run("go").await.unwrap();
    let pids = project.pids(&["hook.pid", "hook-child.pid"]);
    assert!(pids.iter().all(|&p| alive(p)));
    // The background task registers the hook's group right after spawning it; on a loaded
    // machine its thread may be descheduled in between while the shell already wrote its pids.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while session.processes().list().is_empty() && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    let listed = session.processes().list();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0].kind, ProcessKind::Hook);
    session.shutdown(SessionEndReason::Other).await;
    assert_all_dead(&pids, "shutdown");
}

/// The spill path named in a tool result.
fn spill_path(content: &str) -> PathBuf {
    let start = content.find(" saved to ").expect("spill marker") + " saved to ".len();
    let rest = &content[start..];
    PathBuf::from(&rest[..rest.find(" — ").expect("end of path")])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spilled_output_lives_with_the_saved_session_and_goes_with_it() {
    let project = Project::new();
    let options = project
        .options(bash_then_done(json!({"command": "seq 1 200000"})))
        .with_persistence(SessionPersistence::Project);
    let session = Session::new(options).unwrap();
    let id = session.session_id().to_string();
    session.run("count").await.unwrap();
    let (content, _) = tool_results(&session)[0].clone();
    let spill = spill_path(&content);
    let session_dir = project.root.join(".robota/sessions").join(&id);
    assert!(
        spill.starts_with(session_dir.join("spill")),
        "{}",
        spill.display()
    );
    assert!(spill.is_file());
    // Only the kept spill is left: a call's running output files are gone.
    let running: Vec<_> = std::fs::read_dir(session_dir.join("running"))
        .unwrap()
        .collect();
    assert!(running.is_empty());
    session.shutdown(SessionEndReason::Other).await;
    drop(session);
    assert!(spill.is_file(), "the spill file must outlive the process");

    // After a resume the model reads its own earlier spill file.
    let read = ScriptedTurn::tool_call(
        "call_2",
        "Read",
        json!({"file_path": spill, "offset": 150000, "limit": 1}),
    );
    let options = project
        .options(vec![read, ScriptedTurn::text("read it")])
        .with_persistence(SessionPersistence::Project)
        .with_resume(&id, false);
    let resumed = Session::new(options).unwrap();
    resumed.run("read the rest").await.unwrap();
    let (content, is_error) = tool_results(&resumed).last().unwrap().clone();
    assert!(!is_error, "{content}");
    assert!(content.contains("150000\t150000"), "{content}");
    resumed.shutdown(SessionEndReason::Other).await;
    drop(resumed);

    // Deleting the session deletes its files.
    assert!(FileSessionStore::for_project(&project.root)
        .delete(&id)
        .unwrap());
    assert!(!session_dir.exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unsaved_sessions_spill_directory_is_private_and_removed_with_it() {
    let project = Project::new();
    let session =
        Session::new(project.options(bash_then_done(json!({"command": "seq 1 200000"})))).unwrap();
    session.run("count").await.unwrap();
    let spill = spill_path(&tool_results(&session)[0].0);
    assert!(spill.is_file());
    assert!(!spill.starts_with(&project.root));
    let dir = spill.parent().and_then(Path::parent).unwrap().to_path_buf();
    session.shutdown(SessionEndReason::Other).await;
    drop(session);
    assert!(!dir.exists(), "{} was left behind", dir.display());
}

/// Host pids of the processes whose command line is exactly `words`.
fn pids_running(words: &[&str]) -> Vec<i32> {
    let wanted: Vec<u8> = words
        .iter()
        .flat_map(|w| [w.as_bytes(), b"\0"].concat())
        .collect();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|entry| {
            let pid: i32 = entry.file_name().to_str()?.parse().ok()?;
            let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
            (cmdline == wanted && alive(pid)).then_some(pid)
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg(target_os = "linux")]
async fn under_bubblewrap_even_a_setsid_process_ends_with_the_command() {
    let project = Project::new();
    std::fs::create_dir_all(project.root.join(".claude")).unwrap();
    std::fs::write(
        project.root.join(".claude/settings.json"),
        json!({"sandbox": {"enabled": true, "backend": "bwrap"}}).to_string(),
    )
    .unwrap();
    // A sleep length no other process uses, to find it in /proc.
    let seconds = format!("301.{}", std::process::id());
    let command =
        format!("setsid sleep {seconds} & sleep 0.2; kill -0 $! && echo escaped-and-running");
    let options = project
        .options(bash_then_done(json!({ "command": command })))
        .with_sandbox(true);
    let session = Session::new(options).unwrap();
    let status = session.sandbox_status();
    if !(status.active && status.backend.as_deref() == Some("bwrap")) {
        eprintln!(
            "skipped: bubblewrap is not usable here ({:?})",
            status.reason
        );
        return;
    }
    session.run("go").await.unwrap();
    let (content, is_error) = tool_results(&session)[0].clone();
    assert!(!is_error, "{content}");
    assert!(content.contains("escaped-and-running"), "{content}");
    // The PID namespace ended with the command, taking the process that left its group along.
    assert!(pids_running(&["sleep", &seconds]).is_empty());
}
