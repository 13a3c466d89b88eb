//! The settings commands through a real `InteractiveSession`: `reset` asks first and then
//! requests the reset, `language` validates the code and requests the change, `statusline`
//! returns typed patches, and `mode` is the legacy name of `permissions` (it really changes the
//! session's mode).

#![cfg(unix)]

mod session_common;

use std::sync::Arc;

use robota::framework::commands::CommandEffect;
use robota::framework::interactive::{InteractiveSession, InteractiveSessionOptions};
use robota::permissions::PermissionMode;
use robota::provider::scripted::ScriptedProvider;
use robota::session::{SessionOptions, SessionSettings};
use serde_json::json;

fn session(dir: &tempfile::TempDir) -> Arc<InteractiveSession> {
    let options = SessionOptions::new(dir.path(), Arc::new(ScriptedProvider::new(Vec::new())))
        .with_settings(SessionSettings::None)
        .with_project_context(false);
    InteractiveSession::new(InteractiveSessionOptions::new(options)).expect("session")
}

#[tokio::test]
async fn reset_language_statusline_and_mode() {
    let dir = tempfile::tempdir().expect("tempdir");
    let s = session(&dir);

    let ask = s.execute_command("reset", "").await.expect("reset");
    let interaction = ask.interaction.expect("asks first");
    assert!(ask.effects.is_empty());
    assert_eq!(interaction.command, "reset");
    let yes = s
        .execute_command("reset", &interaction.answer_args("yes"))
        .await
        .expect("yes");
    assert_eq!(yes.effects, [CommandEffect::SettingsResetRequested]);
    let no = s.execute_command("reset", "no").await.expect("no");
    assert!(no.success && no.effects.is_empty());
    assert!(
        !s.execute_command("reset", "maybe")
            .await
            .expect("x")
            .success
    );

    let ko = s.execute_command("language", "ko").await.expect("language");
    assert_eq!(
        ko.effects,
        [CommandEffect::LanguageChangeRequested {
            language: "ko".into()
        }]
    );
    let br = s
        .execute_command("language", "pt-BR")
        .await
        .expect("language");
    assert!(br.success);
    for bad in ["k", "english!", "../x", "en-"] {
        let result = s.execute_command("language", bad).await.expect("language");
        assert!(!result.success && result.effects.is_empty(), "{bad}");
    }
    assert!(s
        .execute_command("language", "")
        .await
        .expect("ask")
        .interaction
        .is_some());

    for (args, patch) in [
        ("on", json!({"statusLine": {"enabled": true}})),
        ("off", json!({"statusLine": {"enabled": false}})),
        ("reset", json!({"statusLine": null})),
        ("git on", json!({"statusLine": {"gitBranch": true}})),
        ("GIT OFF", json!({"statusLine": {"gitBranch": false}})),
    ] {
        let result = s
            .execute_command("statusline", args)
            .await
            .expect("statusline");
        assert_eq!(
            result.effects,
            [CommandEffect::StatuslineSettingsPatch { patch }],
            "{args}"
        );
    }
    assert!(
        !s.execute_command("statusline", "blue")
            .await
            .expect("x")
            .success
    );
    assert!(s
        .execute_command("statusline", "")
        .await
        .expect("ask")
        .interaction
        .is_some());

    let mode = s.execute_command("mode", "plan").await.expect("mode");
    assert!(mode.success, "{}", mode.message);
    assert_eq!(s.session().permission_mode(), PermissionMode::Plan);
}

mod saved {
    //! `language` with settings files: saved in the user settings, in the next session's
    //! system prompt.
    use super::session_common::*;
    use robota::framework::interactive::{InteractiveSession, InteractiveSessionOptions};
    use serde_json::{json, Value};

    #[tokio::test]
    async fn language_is_saved_in_user_settings_and_reaches_the_next_sessions_prompt() {
        let project = Project::new();
        let mock =
            Mock::start(json!({"turns": [text_turn("before"), text_turn("안녕하세요")]})).await;
        let events = Events::default();
        let open = || {
            InteractiveSession::new(InteractiveSessionOptions::new(options(
                &project, &mock, &events,
            )))
            .expect("session")
        };
        let first = open();
        let sub = first.subscribe_pull();
        first.submit("hi", None, None).await.unwrap();
        until(&sub, "complete").await;
        assert!(!mock.system(0).contains("Response Language"));

        let set = first.execute_command("language", "ko").await.unwrap();
        assert!(set.success, "{set:?}");
        let saved = std::path::PathBuf::from(
            set.data.as_ref().unwrap()["saved_to"]
                .as_str()
                .expect("saved"),
        );
        assert!(saved.starts_with(&project.home), "{}", saved.display());
        let file: Value = serde_json::from_str(&std::fs::read_to_string(&saved).unwrap()).unwrap();
        assert_eq!(file["language"], "ko");
        first.shutdown(robota::hooks::SessionEndReason::Other).await;

        let second = open();
        let sub = second.subscribe_pull();
        second.submit("hi again", None, None).await.unwrap();
        until(&sub, "complete").await;
        let system = mock.system(1);
        let section = system
            .split("## Response Language")
            .nth(1)
            .unwrap_or_else(|| panic!("no language section: {system}"));
        assert!(section.contains("ko"), "{section}");
    }
}
