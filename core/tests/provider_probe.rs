//! Provider probes against mock-llm's model-listing endpoints: a working endpoint and key, a
//! rejected key, a wrong base URL, nothing listening, and a model the endpoint does not list —
//! each reported with the step that failed.

use mock_llm::MockLlm;
use robota::provider::definitions::{probe, ProbeRequest, ProbeStage};
use serde_json::json;

async fn mock() -> MockLlm {
    MockLlm::start_json(json!({
        "models": ["claude-sonnet-4-5", "gpt-4o", "gemini-2.5-flash"],
        "api_key": "right-key",
        "turns": []
    }))
    .await
    .expect("mock-llm starts")
}

fn request(kind: &str, base_url: String, key: &str, model: Option<&str>) -> ProbeRequest {
    ProbeRequest {
        kind: kind.into(),
        base_url: Some(base_url),
        api_key: Some(key.into()),
        model: model.map(str::to_owned),
    }
}

#[tokio::test]
async fn a_working_endpoint_and_key_list_the_model_in_each_api_shape() {
    let mock = mock().await;
    let base = mock.base_url();
    for (kind, base_url, model) in [
        ("anthropic", base.clone(), "claude-sonnet-4-5"),
        ("openai", format!("{base}/v1"), "gpt-4o"),
        ("deepseek", format!("{base}/v1"), "gpt-4o"),
        ("gemini", base.clone(), "gemini-2.5-flash"),
    ] {
        let report = probe(&request(kind, base_url, "right-key", Some(model))).await;
        assert!(report.ok, "{kind}: {report:?}");
        assert_eq!(report.status, Some(200), "{kind}");
        assert_eq!(report.models_listed, 3, "{kind}");
        assert_eq!(report.model_found, Some(true), "{kind}");
        assert!(report.message.contains(model), "{kind}: {}", report.message);
    }
    // Each probe sent the key where its API expects it.
    let requests = mock.requests();
    assert_eq!(requests.len(), 4);
    assert_eq!(
        requests[0].headers.get("x-api-key").map(String::as_str),
        Some("right-key")
    );
    assert_eq!(
        requests[1].headers.get("authorization").map(String::as_str),
        Some("Bearer right-key")
    );
    assert_eq!(
        requests[3]
            .headers
            .get("x-goog-api-key")
            .map(String::as_str),
        Some("right-key")
    );
}

#[tokio::test]
async fn each_failure_names_its_step_and_what_to_do() {
    let mock = mock().await;
    let base = mock.base_url();

    let report = probe(&request("anthropic", base.clone(), "wrong-key", None)).await;
    assert_eq!(report.stage, Some(ProbeStage::Auth), "{report:?}");
    assert_eq!(report.status, Some(401));
    assert!(
        report.message.contains("rejected the key") && report.message.contains("ANTHROPIC_API_KEY"),
        "{}",
        report.message
    );

    let report = probe(&request(
        "openai",
        format!("{base}/wrong/v1"),
        "right-key",
        None,
    ))
    .await;
    assert_eq!(report.stage, Some(ProbeStage::NotFound), "{report:?}");
    assert!(report.message.contains("base URL"), "{}", report.message);

    let report = probe(&request(
        "gemini",
        base.clone(),
        "right-key",
        Some("gemini-9"),
    ))
    .await;
    assert_eq!(report.stage, Some(ProbeStage::Model), "{report:?}");
    assert_eq!(report.model_found, Some(false));
    assert!(
        report.message.contains("gemini-9") && report.message.contains("gemini-2.5-flash"),
        "{}",
        report.message
    );

    // Nothing listens on a port that was just closed.
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.local_addr().expect("addr").port()
    };
    let report = probe(&request(
        "openai",
        format!("http://127.0.0.1:{closed}/v1"),
        "k",
        None,
    ))
    .await;
    assert_eq!(report.stage, Some(ProbeStage::Connect), "{report:?}");
    assert!(
        report.message.contains("is the server running"),
        "{}",
        report.message
    );

    let report = probe(&request("bedrock", base, "k", None)).await;
    assert_eq!(report.stage, Some(ProbeStage::Unsupported), "{report:?}");
}
