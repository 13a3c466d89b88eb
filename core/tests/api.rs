//! The binding-facing facade: provider and session configurations as data, and error kinds.

use robota::api::{ApiErrorKind, PersistenceConfig, ProviderConfig, SessionConfig};
use robota::framework::interactive::{InteractiveSession, InteractiveSessionOptions};
use robota::hooks::SessionEndReason;
use serde_json::json;

#[test]
fn provider_config_reads_every_type() {
    let scripted = ProviderConfig::from_json(r#"{"type":"scripted","turns":[{"text":"hi"}]}"#)
        .expect("scripted config");
    assert!(matches!(scripted, ProviderConfig::Scripted { ref turns, .. } if turns.len() == 1));
    let anthropic = ProviderConfig::from_json(
        r#"{"type":"anthropic","model":"m","api_key":"k","base_url":"http://127.0.0.1:9","headers":{"x-a":"1"}}"#,
    )
    .expect("anthropic config");
    let ProviderConfig::Anthropic(http) = &anthropic else {
        panic!("wrong variant: {anthropic:?}")
    };
    assert_eq!(http.model, "m");
    assert_eq!(http.headers.get("x-a").map(String::as_str), Some("1"));
    let openai = ProviderConfig::from_json(r#"{"type":"openai","model":"gpt"}"#).expect("openai");
    assert!(matches!(openai, ProviderConfig::Openai(_)));
    let replay =
        ProviderConfig::from_json(r#"{"type":"replay","log_path":"x.jsonl"}"#).expect("replay");
    assert!(matches!(replay, ProviderConfig::Replay { .. }));
}

#[test]
fn provider_config_errors_name_the_problem() {
    let cases = [
        (r#"{"turns":[]}"#, "type"),
        (r#"{"type":"anthropic"}"#, "model"),
        (
            r#"{"type":"anthropic","model":"m","api_kee":"k"}"#,
            "api_kee",
        ),
        (r#"{"type":"scripted","turns":[{"txt":"x"}]}"#, "txt"),
        (r#"[1,2]"#, "object"),
        (r#"{"type":"#, "provider configuration"),
    ];
    for (text, needle) in cases {
        let err = ProviderConfig::from_json(text).expect_err(text);
        assert_eq!(err.kind, ApiErrorKind::InvalidJson, "{text}");
        assert!(err.message.contains(needle), "{text}: {}", err.message);
    }
}

#[test]
fn an_unknown_provider_type_is_an_invalid_argument() {
    let err = ProviderConfig::from_json(r#"{"type":"nope"}"#).expect_err("unknown type");
    assert_eq!(err.kind, ApiErrorKind::InvalidArgument);
    assert!(
        err.message.contains("`nope`") && err.message.contains("replay"),
        "{}",
        err.message
    );
}

#[test]
fn replay_of_a_missing_log_is_an_invalid_argument() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("missing.jsonl");
    let config = ProviderConfig::Replay {
        log_path: missing.clone(),
    };
    let Err(err) = config.build() else {
        panic!("a missing log must fail")
    };
    assert_eq!(err.kind, ApiErrorKind::InvalidArgument);
    assert!(err.message.contains("missing.jsonl"), "{}", err.message);
}

#[test]
fn session_config_rejects_unknown_fields_and_bad_values() {
    let err = SessionConfig::from_json(r#"{"permision_mode":"plan"}"#).expect_err("typo");
    assert_eq!(err.kind, ApiErrorKind::InvalidJson);
    assert!(err.message.contains("permision_mode"), "{}", err.message);
    let err = SessionConfig::from_json(r#"{"permission_mode":"yolo"}"#).expect_err("mode");
    assert!(err.message.contains("yolo"), "{}", err.message);
    let err = SessionConfig::from_json("[]").expect_err("array");
    assert!(err.message.contains("object"), "{}", err.message);
    assert_eq!(
        SessionConfig::from_json("  ").expect("empty"),
        SessionConfig::default()
    );

    let provider = ProviderConfig::from_json(r#"{"type":"scripted","turns":[]}"#)
        .and_then(|c| c.build())
        .expect("provider");
    let fork_alone = SessionConfig {
        fork_session: Some(true),
        ..SessionConfig::default()
    };
    let Err(err) = fork_alone.into_session_options(provider.clone()) else {
        panic!("fork without resume must fail")
    };
    assert_eq!(err.kind, ApiErrorKind::InvalidArgument);
    let env_and_home = SessionConfig {
        settings_from_environment: Some(true),
        home: Some("h".into()),
        ..SessionConfig::default()
    };
    assert!(env_and_home.into_session_options(provider.clone()).is_err());
    let negative = SessionConfig {
        max_budget_usd: Some(-1.0),
        ..SessionConfig::default()
    };
    assert!(negative.into_session_options(provider).is_err());
}

#[test]
fn persistence_reads_its_three_forms() {
    let none: SessionConfig = SessionConfig::from_json(r#"{"persistence":"none"}"#).expect("none");
    assert_eq!(none.persistence, PersistenceConfig::None);
    let project = SessionConfig::from_json(r#"{"persistence":"project"}"#).expect("project");
    assert_eq!(project.persistence, PersistenceConfig::Project);
    let store = SessionConfig::from_json(
        r#"{"persistence":{"store":{"sessions_dir":"s","logs_dir":"l"}}}"#,
    )
    .expect("store");
    assert!(matches!(store.persistence, PersistenceConfig::Store { .. }));
}

#[tokio::test]
async fn a_session_from_configs_runs_a_turn_and_saves_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let provider = ProviderConfig::from_json_value(json!({
        "type": "scripted",
        "turns": [{"text": ["Hel", "lo"]}]
    }))
    .and_then(|c| c.build())
    .expect("provider");
    let config = SessionConfig::from_json_value(json!({
        "cwd": dir.path(),
        "load_project_context": false,
        "builtin_tools": false,
        "persistence": "project",
        "session_id": "facade-test",
        "permission_mode": "plan"
    }))
    .expect("config");
    let options = config.into_session_options(provider).expect("options");
    assert!(options.tools.as_ref().is_some_and(|t| t.is_empty()));
    let session =
        InteractiveSession::new(InteractiveSessionOptions::new(options)).expect("session");
    session.submit("hi", None, None).await.expect("submit");
    session.wait_idle().await;
    let messages = session.get_messages();
    let last = messages.last().expect("an answer");
    assert_eq!(last.text(), "Hello");
    session.shutdown(SessionEndReason::Other).await;
    assert!(dir
        .path()
        .join(".robota/sessions/facade-test.json")
        .is_file());
}

#[test]
fn interactive_errors_keep_their_kind() {
    use robota::api::ApiError;
    use robota::framework::interactive::InteractiveError;
    assert_eq!(
        ApiError::from(InteractiveError::QueueFull).kind,
        ApiErrorKind::QueueFull
    );
    assert_eq!(
        ApiError::from(InteractiveError::ShutDown).kind,
        ApiErrorKind::ShutDown
    );
    assert_eq!(ApiErrorKind::QueueFull.as_str(), "queue_full");
}

/// The retry budget every binding sets through the provider config: a `retry-after` over it ends
/// the call at once with a rate-limit error that carries the wait and says when to come back.
#[tokio::test]
async fn max_retry_wait_ms_bounds_the_wait_a_provider_sits_out() {
    let mock = mock_llm::MockLlm::start_json(json!({"turns": [
        {"fault": {"kind": "status", "status": 429, "retry_after": "3"}},
        {"text": "late"},
    ]}))
    .await
    .expect("mock-llm");
    let config = ProviderConfig::from_json_value(json!({
        "type": "anthropic", "model": "m", "api_key": "k", "base_url": mock.base_url(),
        "max_retry_wait_ms": 1000
    }))
    .expect("config");
    let provider = config.build().expect("provider");
    let request = robota::provider::ProviderRequest {
        messages: vec![robota::message::Message::user("hi")]
            .into_iter()
            .map(Into::into)
            .collect(),
        ..Default::default()
    };
    let error = provider
        .stream(
            &request,
            &|_| {},
            &tokio_util::sync::CancellationToken::new(),
        )
        .await
        .expect_err("rate limited");
    assert_eq!(error.kind, robota::message::ProviderErrorKind::RateLimit);
    assert_eq!(error.retry_after, Some(std::time::Duration::from_secs(3)));
    assert!(
        error.message.contains("resets in 3 s") && error.message.contains("budget of 1 s"),
        "{}",
        error.message
    );
    assert_eq!(mock.requests().len(), 1, "no retry");
}

#[test]
fn provider_config_prompt_cache_ttl_is_checked_when_built() {
    let bad = ProviderConfig::from_json(
        r#"{"type":"anthropic","model":"m","api_key":"k","prompt_cache_ttl":"2h"}"#,
    )
    .expect("parses");
    let err = bad.build().err().expect("an unknown TTL is refused");
    assert_eq!(err.kind, ApiErrorKind::InvalidArgument);
    assert!(err.message.contains("prompt_cache_ttl"), "{}", err.message);
    for good in [
        r#"{"type":"anthropic","model":"m","api_key":"k","prompt_cache_ttl":"1h"}"#,
        r#"{"type":"anthropic","model":"m","api_key":"k","prompt_caching":false}"#,
    ] {
        let config = ProviderConfig::from_json(good).expect("parses");
        assert!(config.build().is_ok(), "{good}");
    }
}

/// The provider types without a variant of their own are read as settings profiles and built
/// the way a profile is: a Gemini config reaches mock-llm's Gemini endpoint with its key.
#[tokio::test]
async fn profile_types_are_read_as_settings_profiles() {
    let mock =
        mock_llm::MockLlm::start_json(serde_json::json!({"turns": [{"text": "from gemini"}]}))
            .await
            .expect("mock-llm");
    let config = ProviderConfig::from_json_value(serde_json::json!({
        "type": "gemini", "model": "gemini-2.5-flash", "api_key": "g-key",
        "base_url": mock.base_url(), "max_retries": 0
    }))
    .expect("a gemini config");
    assert!(matches!(config, ProviderConfig::Profile(ref p) if p.kind == "gemini"));
    let provider = config.build().expect("built");
    assert_eq!(provider.name(), "gemini");
    assert_eq!(provider.capabilities().context_window, 1_048_576);
    let request = robota::provider::ProviderRequest {
        messages: vec![std::sync::Arc::new(robota::message::Message::user("hi"))],
        ..Default::default()
    };
    let cancel = tokio_util::sync::CancellationToken::new();
    let response = provider
        .stream(&request, &|_| {}, &cancel)
        .await
        .expect("answered");
    assert_eq!(response.text, "from gemini");
    let sent = mock.requests();
    assert_eq!(
        sent[0].headers.get("x-goog-api-key").map(String::as_str),
        Some("g-key")
    );

    let error = ProviderConfig::from_json_value(serde_json::json!({
        "type": "bedrock", "model": "m", "regoin": "us-east-1"
    }))
    .expect_err("unknown field");
    assert!(error.to_string().contains("regoin"), "{error}");
    let error = ProviderConfig::from_json_value(serde_json::json!({"type": "gemma"}))
        .expect("read")
        .build()
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(error.contains("model"), "{error}");
}
