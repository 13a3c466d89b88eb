//! The project context wired into the session, against mock-llm with a temp project and a fake
//! HOME: the system prompt the model receives is built from AGENTS.md (git root) and CLAUDE.md
//! (cwd) plus the environment section; `context_loaded` lists the files; an explicit
//! `system_prompt` replaces the assembled one, `append_system_prompt` appends, and the skip
//! switch gives a bare prompt; `inject_message` reaches the next request and the snapshot; hooks
//! see the session log as `transcript_path`.
#![cfg(unix)]

mod session_common;

use std::path::PathBuf;

use robota::message::Message;
use robota::session::{SessionError, SessionOptions, SessionPersistence};
use robota::tools::ToolRegistry;
use serde_json::{json, Value};
use session_common::*;

const AGENTS: &str = "AGENTS-MARKER: run the linters before committing.";
const CLAUDE: &str = "CLAUDE-MARKER: the web app lives here.";

/// A repository with AGENTS.md at its root and CLAUDE.md in `app/`, the session's cwd.
fn repo() -> (Project, PathBuf) {
    let project = Project::new();
    std::fs::create_dir_all(project.path(".git")).unwrap();
    project.write(".git/HEAD", "ref: refs/heads/main\n");
    project.write("AGENTS.md", AGENTS);
    project.write("app/CLAUDE.md", CLAUDE);
    let cwd = project.path("app");
    (project, cwd)
}

fn options_in(project: &Project, cwd: &PathBuf, mock: &Mock, events: &Events) -> SessionOptions {
    let sink = events.0.clone();
    SessionOptions::new(cwd, mock.provider())
        .with_settings(project.session_settings())
        .with_tools(ToolRegistry::new())
        .with_on_event(move |event| sink.lock().unwrap().push(event))
}

/// The Anthropic `system` field of request `index`, as text (string or text blocks).
fn system_of(mock: &Mock, index: usize) -> String {
    let bodies = mock.bodies();
    match &bodies[index]["system"] {
        Value::String(text) => text.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

#[tokio::test]
async fn the_system_prompt_is_built_from_the_project() {
    let (project, cwd) = repo();
    let mock = Mock::start(json!({"turns": [text_turn("ok"), text_turn("again")]})).await;
    let events = Events::default();
    let session = session(options_in(&project, &cwd, &mock, &events));
    assert!(
        events.of("context_loaded").is_empty(),
        "sent at start, not at construction"
    );
    session.run("hello").await.unwrap();

    let system = system_of(&mock, 0);
    let agents = system.find(AGENTS).expect("AGENTS.md in the prompt");
    let claude = system.find(CLAUDE).expect("CLAUDE.md in the prompt");
    assert!(agents < claude, "AGENTS.md comes first: {system}");
    let environment = system.find("## Environment").expect("environment section");
    assert!(claude < environment);
    assert!(system.contains(&cwd.to_string_lossy().to_string()));
    assert!(system.contains("claude-sonnet-4-5"), "model: {system}");

    let loaded = events.of("context_loaded");
    assert_eq!(loaded.len(), 1);
    let files: Vec<String> = loaded[0]["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        files,
        vec![
            project.path("AGENTS.md").to_string_lossy().to_string(),
            project.path("app/CLAUDE.md").to_string_lossy().to_string(),
        ]
    );
    assert_eq!(loaded[0]["warnings"], json!([]));

    // Only once, also across runs.
    session.run("again").await.unwrap();
    assert_eq!(events.of("context_loaded").len(), 1);
}

#[tokio::test]
async fn an_explicit_prompt_replaces_and_append_appends() {
    let (project, cwd) = repo();
    let mock = Mock::start(json!({"turns": [text_turn("a"), text_turn("b")]})).await;
    let events = Events::default();
    let explicit = session(
        options_in(&project, &cwd, &mock, &events)
            .with_system_prompt("EXPLICIT PROMPT")
            .with_append_system_prompt("APPENDED TEXT"),
    );
    explicit.run("one").await.unwrap();
    assert_eq!(system_of(&mock, 0), "EXPLICIT PROMPT\n\nAPPENDED TEXT");
    assert!(events.of("context_loaded").is_empty());

    let events = Events::default();
    let appended = session(
        options_in(&project, &cwd, &mock, &events).with_append_system_prompt("APPENDED TEXT"),
    );
    appended.run("two").await.unwrap();
    let system = system_of(&mock, 1);
    assert!(system.contains(AGENTS));
    assert!(system.ends_with("\n\nAPPENDED TEXT"), "{system}");
    assert_eq!(events.of("context_loaded").len(), 1);
}

#[tokio::test]
async fn the_skip_switch_gives_a_bare_prompt() {
    let (project, cwd) = repo();
    let mock = Mock::start(json!({"turns": [text_turn("a"), text_turn("b")]})).await;
    let events = Events::default();
    let bare = session(options_in(&project, &cwd, &mock, &events).with_project_context(false));
    bare.run("one").await.unwrap();
    assert!(!system_of(&mock, 0).contains(AGENTS));
    assert!(!system_of(&mock, 0).contains("## Environment"));
    assert!(events.of("context_loaded").is_empty());

    let only_appended = session(
        options_in(&project, &cwd, &mock, &events)
            .with_project_context(false)
            .with_append_system_prompt("HOST ONLY"),
    );
    only_appended.run("two").await.unwrap();
    assert_eq!(system_of(&mock, 1), "HOST ONLY");
}

#[tokio::test]
async fn an_injected_message_is_sent_next_and_saved() {
    let (project, cwd) = repo();
    let mock = Mock::start(json!({"turns": [text_turn("a"), text_turn("b")]})).await;
    let events = Events::default();
    let session = session(
        options_in(&project, &cwd, &mock, &events).with_persistence(SessionPersistence::Project),
    );
    session.run("first").await.unwrap();
    session
        .inject_message(Message::user("HOST NOTICE: branch switched"))
        .unwrap();
    let id = session.session_id().to_string();
    let snapshot =
        std::fs::read_to_string(cwd.join(format!(".robota/sessions/{id}.json"))).expect("snapshot");
    assert!(snapshot.contains("HOST NOTICE: branch switched"));
    let log = std::fs::read_to_string(cwd.join(format!(".robota/logs/{id}.jsonl"))).unwrap();
    assert!(log
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .any(|v| v["type"] == "history_append"));

    session.run("second").await.unwrap();
    let texts = mock.user_texts(1).join("\n");
    assert!(texts.contains("HOST NOTICE: branch switched"), "{texts}");
    assert!(events.of("persistence_error").is_empty());
}

#[tokio::test]
async fn hooks_see_the_session_log_as_transcript_path() {
    let (project, cwd) = repo();
    let out = project.scratch("transcript").join("records.jsonl");
    let out_s = out.to_string_lossy().to_string();
    std::fs::create_dir_all(cwd.join(".claude")).unwrap();
    std::fs::write(
        cwd.join(".claude/settings.json"),
        serde_json::to_string(&json!({"hooks": {
            "UserPromptSubmit": [group(None, vec![command(fixture("record.sh", &[&out_s]))])],
        }}))
        .unwrap(),
    )
    .unwrap();
    let mock = Mock::start(json!({"turns": [text_turn("ok")]})).await;
    let events = Events::default();
    let session = session(
        options_in(&project, &cwd, &mock, &events).with_persistence(SessionPersistence::Project),
    );
    session.run("hello").await.unwrap();
    let recorded = records(&out);
    assert_eq!(recorded.len(), 1);
    let transcript = recorded[0]["transcript_path"]
        .as_str()
        .expect("transcript_path is set");
    assert!(
        std::path::Path::new(transcript).exists(),
        "{transcript} exists"
    );
    assert!(transcript.ends_with(&format!("{}.jsonl", session.session_id())));
}

#[tokio::test]
async fn inject_message_is_refused_during_a_run() {
    let (project, cwd) = repo();
    std::fs::create_dir_all(cwd.join(".claude")).unwrap();
    std::fs::write(
        cwd.join(".claude/settings.json"),
        serde_json::to_string(&json!({"hooks": {
            "UserPromptSubmit": [group(None, vec![command(fixture("sleep.sh", &["1"]))])],
        }}))
        .unwrap(),
    )
    .unwrap();
    let mock = Mock::start(json!({"turns": [text_turn("ok")]})).await;
    let events = Events::default();
    let session = session(options_in(&project, &cwd, &mock, &events));
    let (outcome, injected) = tokio::join!(session.run("slow"), async {
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        session.inject_message(Message::user("too early"))
    });
    outcome.unwrap();
    assert!(matches!(injected, Err(SessionError::Busy)), "{injected:?}");
    assert!(!session.messages().iter().any(|m| m.text() == "too early"));
}

#[tokio::test]
async fn compaction_uses_the_projects_compact_instructions() {
    let (project, cwd) = repo();
    project.write(
        "app/CLAUDE.md",
        "Notes.\n\n## Compact Instructions\n\nKEEP-THE-TEST-NAMES\n",
    );
    let mock = Mock::start(json!({"turns": [
        {"text": "worked on tests", "usage": {"input_tokens": 100, "output_tokens": 10}},
        {"text": "SUMMARY"}
    ]}))
    .await;
    let events = Events::default();
    let session = session(options_in(&project, &cwd, &mock, &events));
    session.run("fix the tests").await.unwrap();
    session.compact(None).await.expect("compaction");
    let bodies = mock.bodies();
    let summary_request = serde_json::to_string(&bodies[1]["messages"]).unwrap();
    assert!(
        summary_request.contains("KEEP-THE-TEST-NAMES"),
        "{summary_request}"
    );
}
