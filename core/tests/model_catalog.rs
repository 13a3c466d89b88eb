//! The model catalog as sessions use it, against mock-llm: cost tracking prices calls from the
//! catalog, context tracking takes the catalog's window, an unknown model gets the defaults and a
//! warning, and `fallback_model` answers when the main model is overloaded.

mod session_common;

use std::sync::Arc;

use robota::provider::catalog::{self, model_info};
use robota::provider::{AnthropicConfig, AnthropicProvider, OpenAiConfig, OpenAiProvider};
use robota::session::{Session, SessionError};
use serde_json::json;
use session_common::*;

fn anthropic(mock: &Mock, model: &str) -> Arc<dyn robota::provider::Provider> {
    Arc::new(
        AnthropicProvider::new(AnthropicConfig {
            api_key: Some("sk-ant-test".into()),
            base_url: Some(mock.mock.base_url()),
            http: fast_http(),
            ..AnthropicConfig::new(model)
        })
        .expect("anthropic provider"),
    )
}

#[tokio::test]
async fn cost_and_context_tracking_read_the_catalog() {
    let project = Project::new();
    let usage = json!({"input_tokens": 2_000_000, "output_tokens": 1_000_000,
                       "cache_read_input_tokens": 1_000_000});
    let mock = Mock::start(json!({"turns": [{"text": "priced", "usage": usage}]})).await;
    let events = Events::default();
    let mut options = options(&project, &mock, &events);
    options.provider = anthropic(&mock, "claude-haiku-4-5-20251001");
    let session = session(options);
    session.run("hello").await.expect("run");

    let info = model_info("claude-haiku-4-5-20251001");
    let price = info.price.expect("the catalog prices haiku 4.5");
    let expected = 2.0 * price.input_per_mtok + price.output_per_mtok + price.cache_read_per_mtok;
    let spent = session.usage().cost_usd.expect("priced from the catalog");
    assert!((spent - expected).abs() < 1e-9, "{spent} != {expected}");
    // 2 × $1 + $5 + $0.10, the catalog's figures for the model.
    assert!((spent - 7.1).abs() < 1e-9, "{spent}");

    assert_eq!(
        session.context_state().max_tokens,
        info.context_window,
        "context tracking uses the catalog's window"
    );
    assert_eq!(info.context_window, 200_000);
    assert!(
        events.of("settings_warning").is_empty(),
        "a known model is not warned about"
    );
    // The default output cap is the catalog's maximum output (capped at 32,000).
    assert_eq!(mock.bodies()[0]["max_tokens"], 32_000);
}

#[tokio::test]
async fn an_unknown_model_gets_the_defaults_and_a_warning() {
    let project = Project::new();
    let mock = Mock::start_wire(
        Wire::OpenAi,
        json!({"turns": [{"text": "hi", "usage": {"input_tokens": 10, "output_tokens": 5}}]}),
    )
    .await;
    let events = Events::default();
    let mut options = options(&project, &mock, &events);
    options.provider = Arc::new(
        OpenAiProvider::new(OpenAiConfig {
            api_key: Some("k".into()),
            base_url: Some(format!("{}/v1", mock.mock.base_url())),
            http: fast_http(),
            ..OpenAiConfig::new("my-local-llama")
        })
        .expect("provider"),
    );
    let session = session(options);
    session.run("hello").await.expect("run");
    let warnings: Vec<String> = session
        .warnings()
        .iter()
        .filter(|w| w.kind == "unknown_model")
        .map(|w| w.message.clone())
        .collect();
    assert_eq!(warnings.len(), 1, "{:?}", session.warnings());
    assert!(
        warnings[0].contains("my-local-llama") && warnings[0].contains("200000-token"),
        "{}",
        warnings[0]
    );
    assert_eq!(
        session.context_state().max_tokens,
        robota::provider::DEFAULT_CONTEXT_WINDOW
    );
    let totals = session.usage();
    assert_eq!(totals.cost_usd, None, "an unknown model's cost is unknown");
    assert!(!catalog::model_info("my-local-llama").known);
}

#[tokio::test]
async fn the_fallback_model_answers_when_the_main_model_is_overloaded() {
    let project = Project::new();
    let mock = Mock::start(json!({"turns": [
        {"fault": {"kind": "status", "status": 529}},
        {"text": "from the fallback"},
        {"text": "still the fallback"}
    ]}))
    .await;
    let events = Events::default();
    let mut options = options(&project, &mock, &events);
    options.provider = anthropic(&mock, "claude-opus-4-6");
    options.fallback_model = Some("claude-haiku-4-5".into());
    let session = session(options);

    let outcome = session.run("hello").await.expect("run");
    assert_eq!(outcome.response, "from the fallback");
    let models: Vec<String> = mock
        .bodies()
        .iter()
        .map(|b| b["model"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(models, ["claude-opus-4-6", "claude-haiku-4-5"]);
    let warnings = events.of("warning");
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert_eq!(warnings[0]["source"], "fallback_model");
    let message = warnings[0]["message"].as_str().unwrap_or("");
    assert!(
        message.contains("claude-opus-4-6") && message.contains("claude-haiku-4-5"),
        "{message}"
    );

    // The next prompt goes straight to the fallback model (no second overloaded wait).
    let outcome = session.run("again").await.expect("run");
    assert_eq!(outcome.response, "still the fallback");
    assert_eq!(mock.bodies()[2]["model"], "claude-haiku-4-5");
    assert_eq!(events.of("warning").len(), 1);
}

#[tokio::test]
async fn other_failures_do_not_switch_and_a_bad_fallback_is_refused() {
    let project = Project::new();
    let mock = Mock::start(json!({"turns": [
        {"fault": {"kind": "status", "status": 401}},
    ]}))
    .await;
    let events = Events::default();
    let mut options = options(&project, &mock, &events);
    options.provider = anthropic(&mock, "claude-opus-4-6");
    options.fallback_model = Some("claude-haiku-4-5".into());
    let session = session(options);
    let outcome = session.run("hello").await.expect("run ends");
    assert!(
        outcome.error.is_some(),
        "an auth failure is reported as it is"
    );
    assert_eq!(mock.bodies().len(), 1, "no fallback call for an auth error");

    // The same model, or a provider that cannot switch models, is an error naming the option.
    let mut same = session_common::options(&project, &mock, &events);
    same.provider = anthropic(&mock, "claude-opus-4-6");
    same.fallback_model = Some("claude-opus-4-6".into());
    match Session::new(same) {
        Err(error @ SessionError::InvalidFallbackModel { .. }) => {
            assert!(error.to_string().contains("fallback_model"), "{error}")
        }
        other => panic!("expected InvalidFallbackModel, got {:?}", other.err()),
    }
    let mut scripted = session_common::options(&project, &mock, &events);
    scripted.provider = Arc::new(robota::provider::scripted::ScriptedProvider::new(vec![]));
    scripted.fallback_model = Some("other".into());
    let error = Session::new(scripted).err().map(|e| e.to_string());
    assert!(
        error
            .as_deref()
            .is_some_and(|e| e.contains("cannot switch models")),
        "{error:?}"
    );
}
