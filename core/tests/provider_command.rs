//! The `provider` command through a real `InteractiveSession` with settings files in a temp
//! home and project: profiles are added, listed, shown (key masked), switched and removed in
//! the settings files, and `probe` makes a real 1-token request to mock-llm and says exactly
//! what failed (a refused key, an unknown endpoint, a refused connection).

use std::sync::Arc;

use robota::framework::commands::CommandEffect;
use robota::framework::interactive::{InteractiveSession, InteractiveSessionOptions};
use robota::provider::scripted::ScriptedProvider;
use robota::session::{SessionOptions, SessionSettings};
use serde_json::{json, Value};

fn session(dir: &tempfile::TempDir) -> Arc<InteractiveSession> {
    let home = dir.path().join("home");
    let project = dir.path().join("project");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&project).unwrap();
    let options = SessionOptions::new(&project, Arc::new(ScriptedProvider::new(Vec::new())))
        .with_settings(SessionSettings::Load {
            home: Some(home),
            env: Default::default(),
            overrides: None,
        })
        .with_project_context(false);
    InteractiveSession::new(InteractiveSessionOptions::new(options)).expect("session")
}

fn user_settings(dir: &tempfile::TempDir) -> Value {
    let text = std::fs::read_to_string(dir.path().join("home/.claude/settings.json"))
        .expect("user settings");
    serde_json::from_str(&text).unwrap()
}

#[tokio::test]
async fn profiles_are_managed_in_settings_and_probed_against_the_endpoint() {
    let mock = mock_llm::MockLlm::start_json(json!({
        "turns": [
            {"text": ["p"]},
            {"fault": {"kind": "status", "status": 401}}
        ]
    }))
    .await
    .expect("mock-llm");
    let dir = tempfile::tempdir().unwrap();
    let s = session(&dir);
    let run = |args: &'static str| {
        let s = Arc::clone(&s);
        async move { s.execute_command("provider", args).await.expect("provider") }
    };

    let empty = run("").await;
    assert!(empty.success && empty.message.contains("No provider profiles"));

    let add = format!(
        "add mock anthropic claude-test {} sk-test-123456789",
        mock.base_url()
    );
    let added = s.execute_command("provider", &add).await.unwrap();
    assert!(added.success, "{}", added.message);
    let settings = user_settings(&dir);
    assert_eq!(settings["providers"]["mock"]["type"], "anthropic");
    assert_eq!(settings["providers"]["mock"]["baseURL"], mock.base_url());
    assert!(
        !s.execute_command("provider", &add).await.unwrap().success,
        "duplicate"
    );
    let bad = run("add other nosuchtype m").await;
    assert!(!bad.success && bad.message.contains("unknown provider type"));
    assert!(
        run("add local openai llama http://127.0.0.1:1/v1")
            .await
            .success
    );

    let listed = run("list").await;
    assert!(
        listed.message.contains("mock — anthropic claude-test"),
        "{}",
        listed.message
    );
    let shown = run("show mock").await;
    assert!(shown.message.contains("…6789"), "{}", shown.message);
    assert!(!shown.message.contains("sk-test-123456789"));
    assert!(!run("show nope").await.success);

    let used = run("use mock").await;
    assert_eq!(
        used.effects,
        [CommandEffect::ProviderChangeRequested {
            profile: "mock".into()
        }]
    );
    assert_eq!(user_settings(&dir)["currentProvider"], "mock");
    assert!(!run("remove mock").await.success, "the current one stays");

    // A real 1-token request, then the same with the key refused.
    let passed = run("probe").await;
    assert!(passed.success, "{}", passed.message);
    let requests = mock.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].body["max_tokens"], 1);
    assert_eq!(
        requests[0].headers.get("x-api-key").map(String::as_str),
        Some("sk-test-123456789")
    );
    let refused = run("probe mock").await;
    assert!(!refused.success);
    assert!(
        refused.message.contains("the key was refused"),
        "{}",
        refused.message
    );
    assert_eq!(refused.data.unwrap()["failure"], "the key was refused");

    let closed = run("probe local").await;
    assert!(
        closed.message.contains("connection refused"),
        "{}",
        closed.message
    );

    let missing = format!(
        "add wrongpath anthropic claude-test {}/nope sk-x",
        mock.base_url()
    );
    assert!(
        s.execute_command("provider", &missing)
            .await
            .unwrap()
            .success
    );
    let not_found = run("probe wrongpath").await;
    assert!(
        not_found.message.contains("not found (404)"),
        "{}",
        not_found.message
    );

    assert!(run("remove local").await.success);
    assert!(user_settings(&dir)["providers"].get("local").is_none());
    assert!(!run("frobnicate").await.success);
    mock.shutdown().await;
}
