//! Edit checkpoints and rewind in a temp git repo, with the model played by `mock-llm` over
//! loopback: files created, edited (twice in one turn) and deleted (by a host tool that declares
//! the file it changes) across several prompts; a prompt that changes nothing leaves nothing; `rewind list/inspect/restore/rollback`; restore to
//! the middle; refused while a prompt runs; the checkpoints after a resume; the size cap pruning
//! the oldest turns; paths outside the project are not saved.
#![cfg(unix)]

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use robota::framework::checkpoints::{CheckpointError, EditCheckpointStore};
use robota::framework::interactive::{
    InteractiveError, InteractiveSession, InteractiveSessionOptions, PromptResult,
};
use robota::permissions::PermissionMode;
use robota::provider::{AnthropicConfig, AnthropicProvider, HttpOptions};
use robota::session::{
    FnPermissionHandler, PermissionResponse, SessionOptions, SessionPersistence, SessionSettings,
};
use robota::tools::{Tool, ToolContext, ToolOutput};
use serde_json::{json, Value};

/// A host tool that deletes a file and declares it, so the deletion can be rewound.
struct RemoveFile;

#[async_trait]
impl Tool for RemoveFile {
    fn name(&self) -> &str {
        "RemoveFile"
    }
    fn description(&self) -> &str {
        "Deletes a file."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {"path": {"type": "string"}}})
    }
    fn mutated_paths(&self, input: &Value) -> Vec<String> {
        input["path"]
            .as_str()
            .map(str::to_string)
            .into_iter()
            .collect()
    }
    async fn execute(&self, input: Value, context: ToolContext) -> ToolOutput {
        let path = context.cwd.join(input["path"].as_str().unwrap_or(""));
        match std::fs::remove_file(&path) {
            Ok(()) => ToolOutput::text("removed"),
            Err(e) => ToolOutput::error(e.to_string()),
        }
    }
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path();
    git(p, &["init", "-q"]);
    git(p, &["config", "user.email", "t@example.com"]);
    git(p, &["config", "user.name", "t"]);
    std::fs::write(p.join("a.txt"), "one\n").expect("write");
    std::fs::write(p.join("gone.txt"), "doomed\n").expect("write");
    std::fs::write(p.join(".gitignore"), ".robota/\n").expect("write");
    git(p, &["add", "."]);
    git(p, &["commit", "-qm", "start"]);
    dir
}

fn read(dir: &Path, name: &str) -> Option<String> {
    std::fs::read_to_string(dir.join(name)).ok()
}

fn options(dir: &Path, base_url: String) -> InteractiveSessionOptions {
    let mut config = AnthropicConfig::new("claude-sonnet-4-6");
    config.api_key = Some("sk-test".into());
    config.base_url = Some(base_url);
    config.http = HttpOptions {
        idle_timeout: Duration::from_secs(5),
        connect_timeout: Duration::from_secs(2),
        max_retries: 0,
        ..HttpOptions::default()
    };
    let provider = AnthropicProvider::new(config).expect("provider");
    let mut session = SessionOptions::new(dir, Arc::new(provider))
        .with_settings(SessionSettings::None)
        .with_project_context(false)
        .with_permission_mode(PermissionMode::AcceptEdits)
        .with_persistence(SessionPersistence::Project)
        .with_sandbox(false)
        .with_permission_handler(FnPermissionHandler::new(|_request, _cancel| async move {
            PermissionResponse::AllowOnce
        }));
    session.extra_tools.push(Arc::new(RemoveFile));
    InteractiveSessionOptions::new(session)
}

fn call(id: &str, name: &str, input: Value) -> Value {
    json!({"id": id, "name": name, "input": input})
}

fn path(dir: &Path, name: &str) -> String {
    dir.join(name).to_string_lossy().into_owned()
}

async fn run(session: &InteractiveSession, prompt: &str) {
    let ticket = session.submit_tracked(prompt, None).await.expect("submit");
    let result = ticket.result().await;
    assert!(
        matches!(result, PromptResult::Complete { .. }),
        "{prompt}: {result:?}"
    );
}

#[tokio::test]
async fn checkpoints_restore_to_the_middle_survive_resume_and_roll_back_everything() {
    let repo = repo();
    let dir = repo.path().canonicalize().expect("canonical");
    let d = dir.as_path();
    let mock = mock_llm::MockLlm::start_json(json!({"turns": [
        {"tool_calls": [
            call("t1", "Write", json!({"file_path": path(d, "new.txt"), "content": "created\n"})),
            call("t2", "Edit", json!({"file_path": path(d, "a.txt"), "old_string": "one", "new_string": "two"})),
        ]},
        {"text": ["first done"]},
        {"tool_calls": [
            call("t3", "Edit", json!({"file_path": path(d, "a.txt"), "old_string": "two", "new_string": "three"})),
            call("t4", "Write", json!({"file_path": path(d, "new.txt"), "content": "created v2\n"})),
            call("t5", "RemoveFile", json!({"path": "gone.txt"})),
        ]},
        {"tool_calls": [
            call("t6", "Edit", json!({"file_path": path(d, "a.txt"), "old_string": "three", "new_string": "four"})),
            call("t7", "Bash", json!({"command": "echo untracked > bash.txt"})),
        ]},
        {"text": ["second done"]},
        {"tool_calls": [
            call("t8", "Write", json!({"file_path": path(d, "sub/c.txt"), "content": "c\n"})),
        ]},
        {"text": ["third done"]},
    ]}))
    .await
    .expect("mock-llm");

    let session = InteractiveSession::new(options(d, mock.base_url())).expect("session");
    let id = session.get_session_id();
    run(&session, "create and edit").await;
    run(&session, "edit again and delete").await;
    run(&session, "add c").await;
    assert_eq!(read(d, "a.txt").as_deref(), Some("four\n"));
    assert_eq!(read(d, "gone.txt"), None);
    assert_eq!(read(d, "sub/c.txt").as_deref(), Some("c\n"));

    // Three turns; the second saved a.txt once although two edits changed it.
    let list = session.list_edit_checkpoints().expect("list");
    let ids: Vec<&str> = list.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["turn-0001", "turn-0002", "turn-0003"]);
    assert!(list.iter().all(|c| c.finished));
    assert_eq!(list[0].prompt, "create and edit");
    let second = session
        .inspect_edit_checkpoint("turn-0002")
        .expect("inspect");
    let files: Vec<(&str, bool, &str)> = second
        .files
        .iter()
        .map(|f| (f.display_path.as_str(), f.existed, f.action.as_str()))
        .collect();
    assert_eq!(
        files,
        [
            ("a.txt", true, "restore_preimage"),
            ("new.txt", true, "restore_preimage"),
            ("gone.txt", true, "restore_preimage"),
        ]
    );
    assert!(second.files.iter().all(|f| f.snapshot_exists));
    assert_eq!(second.restore_range, ["turn-0003"]);
    assert_eq!(second.rollback_range, ["turn-0003", "turn-0002"]);
    let first = session
        .inspect_edit_checkpoint("turn-0001")
        .expect("inspect");
    assert_eq!(first.files[0].display_path, "new.txt");
    assert_eq!(first.files[0].action, "delete_created_file");

    // The manifest is on disk where the spec puts it.
    let manifest = dir.join(format!(".robota/checkpoints/{id}/turn-0002/manifest.json"));
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(manifest).expect("manifest")).expect("json");
    assert_eq!(manifest["sequence"], 2);

    // The rewind command says Bash is not tracked.
    let listed = session
        .execute_command("rewind", "list")
        .await
        .expect("rewind list");
    assert!(listed.success);
    assert!(listed.message.contains("turn-0003"), "{}", listed.message);
    assert!(listed.message.contains("Bash"), "{}", listed.message);
    let bad = session
        .execute_command("rewind", "restore")
        .await
        .expect("rewind");
    assert!(!bad.success && bad.message.contains("needs one checkpoint id"));
    let unknown = session
        .execute_command("rewind", "inspect turn-0099")
        .await
        .expect("rewind");
    assert!(!unknown.success && unknown.message.contains("turn-0099"));

    // Restore to the middle: turn 3 and turn 2 are undone, turn 1's result stays.
    let restored = session
        .execute_command("rewind", "restore turn-0001")
        .await
        .expect("restore");
    assert!(restored.success, "{}", restored.message);
    assert!(restored.message.contains("Bash"));
    assert_eq!(read(d, "a.txt").as_deref(), Some("two\n"));
    assert_eq!(read(d, "new.txt").as_deref(), Some("created\n"));
    assert_eq!(read(d, "gone.txt").as_deref(), Some("doomed\n"));
    assert_eq!(read(d, "sub/c.txt"), None);
    // Bash's file is untouched: it was never tracked.
    assert_eq!(read(d, "bash.txt").as_deref(), Some("untracked\n"));
    let ids: Vec<String> = session
        .list_edit_checkpoints()
        .expect("list")
        .into_iter()
        .map(|c| c.id)
        .collect();
    assert_eq!(ids, ["turn-0001"]);
    let history = serde_json::to_value(session.get_full_history()).expect("json");
    let entry = history
        .as_array()
        .expect("array")
        .iter()
        .find(|e| e["type"] == "edit-checkpoint-restore")
        .expect("a history entry records the restore");
    assert_eq!(
        entry["data"]["rolled_back"],
        json!(["turn-0003", "turn-0002"])
    );
    session
        .shutdown(robota::hooks::SessionEndReason::Other)
        .await;
    drop(session);

    // After a resume the checkpoint is still there; rolling it back restores the repo.
    let resumed_options = {
        let mut o = options(d, mock.base_url());
        o.session = o.session.with_resume(id.clone(), false);
        o
    };
    let resumed = InteractiveSession::new(resumed_options).expect("resume");
    let ids: Vec<String> = resumed
        .list_edit_checkpoints()
        .expect("list")
        .into_iter()
        .map(|c| c.id)
        .collect();
    assert_eq!(ids, ["turn-0001"]);
    let report = resumed
        .rollback_edit_checkpoint("turn-0001")
        .expect("rollback");
    assert_eq!(report.deleted, ["new.txt"]);
    assert_eq!(report.restored, ["a.txt"]);
    std::fs::remove_file(d.join("bash.txt")).expect("remove bash file");
    assert_eq!(
        git(d, &["status", "--porcelain"]),
        "",
        "the repo is as committed"
    );
    assert!(resumed.list_edit_checkpoints().expect("list").is_empty());
    mock.shutdown().await;
}

#[tokio::test]
async fn restore_is_refused_while_a_prompt_runs() {
    let repo = repo();
    let d = repo.path().canonicalize().expect("canonical");
    let chunks: Vec<String> = (0..30).map(|i| format!("c{i} ")).collect();
    let mock = mock_llm::MockLlm::start_json(json!({"turns": [
        {"tool_calls": [
            call("w", "Write", json!({"file_path": path(&d, "x.txt"), "content": "x\n"})),
        ]},
        {"text": ["first"]},
        {"text": chunks, "chunk_delay_ms": 50},
    ]}))
    .await
    .expect("mock-llm");
    let session = InteractiveSession::new(options(&d, mock.base_url())).expect("session");
    run(&session, "one").await;
    let ticket = session.submit_tracked("two", None).await.expect("two");
    // The running prompt already has its (unfinished) checkpoint.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let list = session.list_edit_checkpoints().expect("list");
    assert_eq!(list.len(), 2);
    assert!(!list[1].finished);
    match session.restore_edit_checkpoint("turn-0001") {
        Err(InteractiveError::Checkpoint(CheckpointError::Busy)) => {}
        other => panic!("expected busy, got {other:?}"),
    }
    let refused = session
        .execute_command("rewind", "restore turn-0001")
        .await
        .expect("command");
    assert!(!refused.success);
    assert!(
        refused.message.contains("while a prompt runs"),
        "{}",
        refused.message
    );
    let _ = ticket.result().await;
    // The second prompt changed no file: it leaves no checkpoint behind.
    let ids: Vec<String> = session
        .list_edit_checkpoints()
        .expect("list")
        .into_iter()
        .map(|c| c.id)
        .collect();
    assert_eq!(ids, ["turn-0001"]);
    let checkpoints = d.join(".robota/checkpoints").join(session.get_session_id());
    assert_eq!(std::fs::read_dir(checkpoints).expect("dir").count(), 1);
    assert!(session.rollback_edit_checkpoint("turn-0001").is_ok());
    assert!(!d.join("x.txt").exists());
    mock.shutdown().await;
}

#[test]
fn the_oldest_turns_are_pruned_past_the_cap_and_outside_paths_are_not_saved() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let outside = tempfile::tempdir().expect("outside");
    std::fs::write(outside.path().join("x.txt"), "x").expect("write");
    let store = EditCheckpointStore::new(d, "s1").with_max_bytes(25);
    for n in 0..3 {
        let name = format!("f{n}.txt");
        std::fs::write(d.join(&name), "0123456789").expect("write");
        store.begin_turn(&format!("turn {n}")).expect("begin");
        store.capture("Write", &d.join(&name)).expect("capture");
        store
            .capture("Write", &outside.path().join("x.txt"))
            .expect("outside is skipped");
        store
            .capture("Write", &d.join(".robota/checkpoints/s1/evil"))
            .expect("own folder is skipped");
        let report = store.finish_turn().expect("finish");
        if n < 2 {
            assert!(report.pruned.is_empty());
        } else {
            assert_eq!(report.pruned, ["turn-0001"]);
            assert_eq!(report.freed_bytes, 10);
        }
    }
    let list = store.list().expect("list");
    assert_eq!(list.len(), 2);
    assert!(list.iter().all(|c| c.file_count == 1), "{list:?}");
    assert!(matches!(
        store.restore("turn-0001"),
        Err(CheckpointError::NotFound { .. })
    ));
}

#[test]
fn a_file_over_the_checkpoint_cap_is_refused_not_changed_unsaved() {
    let dir = tempfile::tempdir().expect("tempdir");
    let big = dir.path().join("big.bin");
    let file = std::fs::File::create(&big).expect("create");
    file.set_len(robota::framework::checkpoints::CHECKPOINT_FILE.max_bytes + 1)
        .expect("sparse file");
    let store = EditCheckpointStore::new(dir.path(), "s2");
    store.begin_turn("big").expect("begin");
    let error = store.capture("Write", &big).expect_err("too large");
    assert!(error.to_string().contains("not changed"), "{error}");
}

#[test]
fn restore_never_writes_through_a_folder_that_now_leads_outside_the_project() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path().canonicalize().expect("canonical");
    let outside = tempfile::tempdir().expect("outside");
    std::fs::create_dir_all(d.join("sub")).expect("mkdir");
    std::fs::write(d.join("sub/c.txt"), "saved").expect("write");
    let store = EditCheckpointStore::new(&d, "s3");
    store.begin_turn("first").expect("begin");
    store
        .capture("Write", &d.join("sub/c.txt"))
        .expect("capture");
    store.finish_turn().expect("finish");
    // Since then `sub` became a link to a folder outside the project.
    std::fs::remove_dir_all(d.join("sub")).expect("rm");
    std::os::unix::fs::symlink(outside.path(), d.join("sub")).expect("symlink");
    let report = store.rollback("turn-0001").expect("rollback");
    assert_eq!(report.problems.len(), 1, "{report:?}");
    assert!(report.problems[0].contains("outside the project"));
    assert!(
        !outside.path().join("c.txt").exists(),
        "nothing written outside"
    );
}
