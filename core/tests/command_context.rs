//! A command answered by the host (as Python, Node and C commands are) acting on its session
//! through the live command context, over mock-llm: it reads the session state, writes a
//! settings file, switches the permission mode, compacts and clears the conversation, and
//! returns typed effects. A context kept past its command is refused with a typed error.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use robota::api::{
    async_trait, ApiErrorKind, HostCall, HostCommand, HostCommandContext, HostFunction,
};
use robota::framework::commands::{default_command_modules, CommandEffect};
use robota::framework::interactive::{InteractiveSession, InteractiveSessionOptions};
use robota::permissions::PermissionMode;
use robota::provider::{AnthropicConfig, AnthropicProvider, HttpOptions};
use robota::session::{SessionOptions, SessionSettings};
use serde_json::{json, Value};

/// `/tidy`: the host side of a command, written as a binding's user would write it.
struct Tidy {
    kept: Mutex<Option<HostCommandContext>>,
}

#[async_trait]
impl HostFunction for Tidy {
    async fn call(&self, call: HostCall) -> Result<Value, String> {
        let ctx = call.context.ok_or("no context")?;
        *self.kept.lock().unwrap() = Some(ctx.clone());
        let op = |value: Value| {
            let ctx = ctx.clone();
            async move { ctx.call_json(value).await.map_err(|e| e.to_string()) }
        };
        let before = op(json!({"op": "state"})).await?;
        let history = op(json!({"op": "history"})).await?;
        let written = op(json!({
            "op": "update_settings",
            "scope": "localSettings",
            "patch": {"language": "ko", "statusLine": {"enabled": false}}
        }))
        .await?;
        let settings = op(json!({"op": "read_settings", "scope": "localSettings"})).await?;
        op(json!({"op": "set_permission_mode", "mode": "plan"})).await?;
        let compacted = op(json!({"op": "compact", "instructions": "keep names"})).await?;
        op(json!({"op": "clear"})).await?;
        let after = op(json!({"op": "state"})).await?;
        let switched = op(json!({"op": "switch_model", "model": "claude-haiku-4-5"})).await?;
        let auto = op(json!({"op": "set_auto_compact", "enabled": true, "threshold": 0.5})).await?;
        Ok(json!({
            "message": "tidied",
            "data": {
                "before": before,
                "history_entries": history.as_array().map_or(0, Vec::len),
                "written": written,
                "settings": settings,
                "compacted": compacted,
                "after": after,
                "switched": switched,
                "auto": auto,
            },
            "effects": [
                {"type": "conversation_history_cleared"},
                {"type": "model_change_requested", "model_id": "claude-haiku-4-5"}
            ]
        }))
    }
}

fn session(dir: &tempfile::TempDir, base_url: String, tidy: Arc<Tidy>) -> Arc<InteractiveSession> {
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
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).expect("home");
    let project = dir.path().join("project");
    std::fs::create_dir_all(&project).expect("project");
    let options = SessionOptions::new(&project, Arc::new(provider))
        .with_settings(SessionSettings::Load {
            home: Some(home),
            env: Default::default(),
            overrides: None,
        })
        .with_project_context(false);
    let command = HostCommand::from_json_value(
        json!({"name": "tidy", "description": "Plan mode, compact, clear", "lifecycle": "blocking"}),
        tidy,
    )
    .expect("descriptor");
    let mut modules = default_command_modules();
    modules.push(HostCommand::module(vec![Arc::new(command)]));
    let mut options = InteractiveSessionOptions::new(options);
    options.command_modules = modules;
    InteractiveSession::new(options).expect("session")
}

#[tokio::test]
async fn a_host_command_clears_compacts_switches_mode_and_writes_settings() {
    let mock = mock_llm::MockLlm::start_json(json!({
        "turns": [
            {"text": ["first answer"]},
            {"text": ["second answer"]},
            {"text": ["SUMMARY: two questions were answered"]}
        ]
    }))
    .await
    .expect("mock-llm");
    let dir = tempfile::tempdir().expect("tempdir");
    let tidy = Arc::new(Tidy {
        kept: Mutex::new(None),
    });
    let s = session(&dir, mock.base_url(), Arc::clone(&tidy));
    for prompt in ["one", "two"] {
        s.submit_tracked(prompt, None)
            .await
            .expect("submit")
            .result()
            .await;
    }
    assert_eq!(s.get_messages().len(), 4);

    let result = s.execute_command("tidy", "").await.expect("tidy");
    assert!(result.success, "{result:?}");
    assert_eq!(
        result.effects,
        [
            CommandEffect::ConversationHistoryCleared,
            CommandEffect::ModelChangeRequested {
                model_id: "claude-haiku-4-5".into()
            }
        ]
    );
    let data = result.data.expect("data");
    assert_eq!(data["before"]["permission_mode"], "default");
    assert_eq!(data["before"]["model"], "claude-sonnet-4-6");
    assert_eq!(data["before"]["context_state"]["message_count"], 4);
    assert!(data["history_entries"].as_u64().unwrap() >= 4, "{data}");
    assert_eq!(data["compacted"]["messages_before"], 4, "{data}");
    assert_eq!(data["after"]["permission_mode"], "plan");
    assert_eq!(data["after"]["context_state"]["message_count"], 0);
    assert_eq!(
        data["settings"],
        json!({"language": "ko", "statusLine": {"enabled": false}})
    );

    assert_eq!(data["switched"]["model"], "claude-haiku-4-5", "{data}");
    assert!(
        data["switched"]["context_window"].as_u64().unwrap() > 0,
        "{data}"
    );
    assert_eq!(data["auto"], json!({"enabled": true, "threshold": 0.5}));

    // What the session really did.
    assert_eq!(s.session().permission_mode(), PermissionMode::Plan);
    assert_eq!(s.session().current_model(), "claude-haiku-4-5");
    assert_eq!(s.session().auto_compact_threshold(), Some(0.5));
    assert!(s.get_messages().is_empty());
    let local = dir.path().join("project/.claude/settings.local.json");
    assert_eq!(
        data["written"]["path"].as_str(),
        Some(local.to_str().unwrap())
    );
    let on_disk: Value =
        serde_json::from_str(&std::fs::read_to_string(&local).expect("settings file")).unwrap();
    assert_eq!(on_disk["language"], "ko");
    let requests = mock.requests();
    assert_eq!(requests.len(), 3, "two prompts and the compaction summary");
    assert!(requests[2].body.to_string().contains("keep names"));

    // The context is valid only while the command runs.
    let kept = tidy.kept.lock().unwrap().clone().expect("kept");
    assert!(!kept.is_valid());
    let late = kept.call_json(json!({"op": "clear"})).await.unwrap_err();
    assert_eq!(late.kind, ApiErrorKind::Command);
    assert!(late.message.contains("no longer valid"), "{}", late.message);
    mock.shutdown().await;
}

/// Answers with whatever the operations it was given return, so bad operations can be checked.
struct Probe(Vec<Value>);

#[async_trait]
impl HostFunction for Probe {
    async fn call(&self, call: HostCall) -> Result<Value, String> {
        let ctx = call.context.ok_or("no context")?;
        let mut answers = Vec::new();
        for op in &self.0 {
            answers.push(match ctx.call_json(op.clone()).await {
                Ok(value) => json!({"ok": value}),
                Err(e) => json!({"kind": e.kind.as_str(), "error": e.message}),
            });
        }
        Ok(json!({"message": "probed", "data": answers}))
    }
}

#[tokio::test]
async fn bad_operations_are_typed_errors_and_the_session_is_unchanged() {
    let mock = mock_llm::MockLlm::start_json(json!({"turns": []}))
        .await
        .expect("mock-llm");
    let dir = tempfile::tempdir().expect("tempdir");
    let probe = Probe(vec![
        json!({"op": "explode"}),
        json!({"op": "set_permission_mode", "mode": "yolo"}),
        json!({"op": "update_settings", "scope": "localSettings", "patch": [1]}),
        json!({"op": "update_settings", "scope": "nowhere", "patch": {}}),
        json!({"op": "set_auto_compact", "enabled": true, "threshold": 2.0}),
        json!({"op": "switch_model", "model": "  "}),
    ]);
    let command = HostCommand::from_json_value(
        json!({"name": "probe", "description": "d"}),
        Arc::new(probe),
    )
    .expect("descriptor");
    let mut config = AnthropicConfig::new("claude-sonnet-4-6");
    config.api_key = Some("sk-test".into());
    config.base_url = Some(mock.base_url());
    let options = SessionOptions::new(
        dir.path(),
        Arc::new(AnthropicProvider::new(config).unwrap()),
    )
    .with_settings(SessionSettings::None)
    .with_project_context(false);
    let mut options = InteractiveSessionOptions::new(options);
    options
        .command_modules
        .push(HostCommand::module(vec![Arc::new(command)]));
    let s = InteractiveSession::new(options).expect("session");
    let result = s.execute_command("probe", "").await.expect("probe");
    let answers = result.data.expect("data");
    assert_eq!(answers[0]["kind"], "invalid_json", "{answers}");
    assert_eq!(answers[1]["kind"], "invalid_argument", "{answers}");
    assert!(answers[1]["error"].as_str().unwrap().contains("yolo"));
    assert_eq!(answers[2]["kind"], "invalid_argument", "{answers}");
    assert_eq!(answers[3]["kind"], "invalid_json", "{answers}");
    assert_eq!(answers[4]["kind"], "invalid_argument", "{answers}");
    assert!(answers[4]["error"].as_str().unwrap().contains("(0, 1]"));
    assert_eq!(answers[5]["kind"], "invalid_argument", "{answers}");
    assert!(s.session().auto_compact_threshold().is_some());
    assert_eq!(s.session().permission_mode(), PermissionMode::Default);
    assert!(!dir.path().join(".claude").exists(), "no settings written");
    mock.shutdown().await;
}
