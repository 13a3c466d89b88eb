//! The Vertex AI provider against mock-llm's `streamRawPredict` route over loopback, with the
//! service-account flow for real: a key file (an RSA key made for the test) whose `token_uri`
//! is mock-llm's token endpoint; the test checks the signed JWT the provider sent there and the
//! bearer token it then used. Application default credentials are tested the same way: gcloud
//! user credentials (named by `GOOGLE_APPLICATION_CREDENTIALS` or at gcloud's well-known path)
//! whose `token_uri` is mock-llm, and mock-llm as the metadata server (`GCE_METADATA_HOST`).

mod provider_common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use aws_lc_rs::encoding::AsDer;
use aws_lc_rs::signature::KeyPair as _;
use base64::Engine as _;
use mock_llm::{MockLlm, RecordedRequest};
use provider_common::run;
use robota::message::{ContentBlock, Message, MessageState, ProviderError, ProviderErrorKind};
use robota::provider::{
    HttpOptions, Provider, ProviderRequest, StopReason, StreamEvent, ThinkingConfig,
    ToolDefinition, VertexConfig, VertexProvider,
};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

const MODEL: &str = "claude-sonnet-4-5@20250929";
const PROJECT: &str = "test-project";
const REGION: &str = "us-east5";
const EMAIL: &str = "robota-test@test-project.iam.gserviceaccount.com";

fn fast_http() -> HttpOptions {
    HttpOptions {
        idle_timeout: Duration::from_secs(10),
        connect_timeout: Duration::from_secs(2),
        max_retries: 4,
        initial_backoff: Duration::from_millis(5),
        max_backoff: Duration::from_millis(20),
        ..HttpOptions::default()
    }
}

/// A service-account key file for a fresh RSA key, whose `token_uri` is `token_uri`; the file
/// lives as long as the returned directory. Also returns the public key (DER RSAPublicKey).
struct KeyFile {
    _dir: tempfile::TempDir,
    path: std::path::PathBuf,
    public_key: Vec<u8>,
}

fn key_file(token_uri: &str) -> KeyFile {
    let key = aws_lc_rs::rsa::KeyPair::generate(aws_lc_rs::rsa::KeySize::Rsa2048).expect("keygen");
    let pkcs8 = key.as_der().expect("pkcs8");
    let encoded = base64::engine::general_purpose::STANDARD.encode(pkcs8.as_ref());
    let mut pem = String::from("-----BEGIN PRIVATE KEY-----\n");
    for line in encoded.as_bytes().chunks(64) {
        pem.push_str(std::str::from_utf8(line).expect("ascii"));
        pem.push('\n');
    }
    pem.push_str("-----END PRIVATE KEY-----\n");
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("service-account.json");
    let file = json!({
        "type": "service_account",
        "project_id": "key-file-project",
        "private_key_id": "test-key-1",
        "private_key": pem,
        "client_email": EMAIL,
        "client_id": "1",
        "auth_uri": "https://accounts.google.com/o/oauth2/auth",
        "token_uri": token_uri,
    });
    std::fs::write(&path, file.to_string()).expect("write key file");
    KeyFile {
        _dir: dir,
        path,
        public_key: key.public_key().as_ref().to_vec(),
    }
}

fn config(mock: &MockLlm, key: &KeyFile, http: HttpOptions) -> VertexConfig {
    VertexConfig {
        project: Some(PROJECT.into()),
        region: Some(REGION.into()),
        credentials_file: Some(key.path.clone()),
        base_url: Some(format!("{}/v1", mock.base_url())),
        http,
        ..VertexConfig::new(MODEL)
    }
    .with_env(|_| None)
}

async fn mock(script: Value) -> MockLlm {
    MockLlm::start_json(script).await.expect("mock-llm starts")
}

/// A provider on `mock` whose tokens come from `mock`'s token endpoint.
fn provider_with(mock: &MockLlm, http: HttpOptions) -> (VertexProvider, KeyFile) {
    let key = key_file(&format!("{}/token", mock.base_url()));
    let provider = VertexProvider::new(config(mock, &key, http)).expect("provider");
    (provider, key)
}

fn hello() -> ProviderRequest {
    ProviderRequest {
        messages: vec![Arc::new(Message::user("hello"))],
        ..ProviderRequest::default()
    }
}

/// An environment for a provider built in a test.
type Env = Box<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// The metadata server's token path (mock-llm answers it for `GCE_METADATA_HOST`).
const METADATA_TOKEN_PATH: &str = "/computeMetadata/v1/instance/service-accounts/default/token";

fn model_requests(mock: &MockLlm) -> Vec<RecordedRequest> {
    mock.requests()
        .into_iter()
        .filter(|r| r.path != "/token" && r.path != METADATA_TOKEN_PATH)
        .collect()
}

fn token_requests(mock: &MockLlm) -> Vec<RecordedRequest> {
    mock.requests()
        .into_iter()
        .filter(|r| r.path == "/token")
        .collect()
}

fn authorization(request: &RecordedRequest) -> &str {
    request
        .headers
        .get("authorization")
        .map(String::as_str)
        .unwrap_or("")
}

/// Checks a token request: a JWT-bearer grant whose assertion is signed (RS256) by the key
/// file's key, issued by its account for `audience` with the cloud-platform scope.
fn check_assertion(request: &RecordedRequest, key: &KeyFile, audience: &str) {
    assert_eq!(
        request.headers.get("content-type").map(String::as_str),
        Some("application/x-www-form-urlencoded")
    );
    let form = request.body.as_str().expect("form body");
    let field = |name: &str| {
        form.split('&')
            .find_map(|pair| pair.strip_prefix(&format!("{name}=")))
            .unwrap_or_else(|| panic!("no {name} in {form}"))
            .to_string()
    };
    assert_eq!(
        field("grant_type"),
        "urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer"
    );
    // Form encoding escapes the JWT's base64 padding (`=` as `%3D`).
    let assertion = field("assertion").replace("%3D", "=");
    assert!(!assertion.contains('%'), "{assertion}");
    let parts: Vec<&str> = assertion.split('.').collect();
    assert_eq!(parts.len(), 3, "{assertion}");
    let decode = |part: &str| {
        base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(part.trim_end_matches('='))
            .expect("base64url")
    };
    let header: Value = serde_json::from_slice(&decode(parts[0])).expect("header");
    assert_eq!(header["alg"], "RS256");
    let claims: Value = serde_json::from_slice(&decode(parts[1])).expect("claims");
    assert_eq!(claims["iss"], EMAIL);
    assert_eq!(claims["aud"], audience);
    assert_eq!(
        claims["scope"],
        "https://www.googleapis.com/auth/cloud-platform"
    );
    let iat = claims["iat"].as_i64().expect("iat");
    let exp = claims["exp"].as_i64().expect("exp");
    assert!(exp > iat && exp - iat <= 3600, "{claims}");
    let signed = format!("{}.{}", parts[0], parts[1]);
    aws_lc_rs::signature::UnparsedPublicKey::new(
        &aws_lc_rs::signature::RSA_PKCS1_2048_8192_SHA256,
        &key.public_key,
    )
    .verify(signed.as_bytes(), &decode(parts[2]))
    .expect("the assertion is signed by the key file's key");
}

#[tokio::test]
async fn service_account_token_is_fetched_once_and_sent_as_bearer() {
    let mock = mock(json!({"turns": [
        {"text": ["Hel", "lo"], "usage": {"input_tokens": 9, "output_tokens": 2}},
        {"text": "again"}
    ]}))
    .await;
    let (provider, key) = provider_with(&mock, fast_http());
    let (result, events) = run(&provider, &hello()).await;
    let response = result.expect("success");
    assert_eq!(response.text, "Hello");
    assert_eq!(
        events,
        vec![
            StreamEvent::TextDelta("Hel".into()),
            StreamEvent::TextDelta("lo".into())
        ]
    );
    assert_eq!(response.model, MODEL);
    assert_eq!(response.usage.input_tokens, 9);
    assert_eq!(response.usage.output_tokens, 2);
    let (result, _) = run(&provider, &hello()).await;
    assert_eq!(result.expect("second call").text, "again");

    // One token for both calls (it is valid for an hour), from a correctly signed assertion.
    let tokens = token_requests(&mock);
    assert_eq!(tokens.len(), 1, "the token is cached");
    check_assertion(&tokens[0], &key, &format!("{}/token", mock.base_url()));
    let sent = model_requests(&mock);
    assert_eq!(sent.len(), 2);
    for request in &sent {
        assert_eq!(authorization(request), "Bearer ya29.mock-token-0");
        assert_eq!(
            request.path,
            format!(
                "/v1/projects/{PROJECT}/locations/{REGION}/publishers/anthropic/models/{MODEL}:streamRawPredict"
            )
        );
        assert_eq!(request.body["anthropic_version"], "vertex-2023-10-16");
        assert!(request.body.get("model").is_none(), "{}", request.body);
        assert_eq!(request.body["stream"], true);
        assert_eq!(
            request.headers.get("accept").map(String::as_str),
            Some("text/event-stream")
        );
    }
    assert_eq!(sent[0].body, provider.request_body(&hello()));
}

#[tokio::test]
async fn a_token_about_to_expire_is_replaced_before_the_next_call() {
    let mock = mock(json!({"turns": [{"text": "a"}, {"text": "b"}]})).await;
    // Tokens valid for 10 s: inside the 20 s refresh margin, so every call gets a new one.
    let token_uri = format!("{}/token?expires_in=10", mock.base_url());
    let key = key_file(&token_uri);
    let provider = VertexProvider::new(config(&mock, &key, fast_http())).expect("provider");
    run(&provider, &hello()).await.0.expect("first");
    run(&provider, &hello()).await.0.expect("second");
    let tokens = token_requests(&mock);
    assert_eq!(tokens.len(), 2);
    check_assertion(&tokens[1], &key, &token_uri);
    let sent = model_requests(&mock);
    assert_eq!(authorization(&sent[0]), "Bearer ya29.mock-token-0");
    assert_eq!(authorization(&sent[1]), "Bearer ya29.mock-token-2");
}

#[tokio::test]
async fn tool_round_trip_with_thinking() {
    let mock = mock(json!({"turns": [
        {"thinking": "plan", "thinking_signature": "sig_1", "tool_calls": [
            {"id": "toolu_1", "name": "Read", "input": {"file_path": "a.txt"}}
        ]},
        {"text": "It says hi."}
    ]}))
    .await;
    let (provider, _key) = provider_with(&mock, fast_http());
    let tools = vec![ToolDefinition {
        name: "Read".into(),
        description: "Reads a file".into(),
        input_schema: json!({"type": "object"}),
    }];
    let first = ProviderRequest {
        tools: tools.clone(),
        thinking: Some(ThinkingConfig {
            budget_tokens: 1024,
        }),
        ..hello()
    };
    let (result, _) = run(&provider, &first).await;
    let response = result.expect("first");
    assert_eq!(response.stop_reason, StopReason::ToolUse);
    assert_eq!(response.thinking[0].thinking, "plan");
    assert_eq!(response.thinking[0].signature.as_deref(), Some("sig_1"));
    let call = &response.tool_calls[0];
    assert_eq!((call.id.as_str(), call.name.as_str()), ("toolu_1", "Read"));
    let second = ProviderRequest {
        messages: vec![
            Arc::new(Message::user("hello")),
            Arc::new(Message::assistant(
                vec![
                    ContentBlock::Thinking {
                        thinking: "plan".into(),
                        signature: Some("sig_1".into()),
                    },
                    ContentBlock::ToolUse {
                        id: call.id.clone(),
                        name: call.name.clone(),
                        input: serde_json::from_str(&call.arguments).expect("json"),
                    },
                ],
                MessageState::Complete,
            )),
            Arc::new(Message::tool_result("toolu_1", "hi", false)),
        ],
        tools,
        ..ProviderRequest::default()
    };
    let (result, _) = run(&provider, &second).await;
    assert_eq!(result.expect("second").text, "It says hi.");
    let sent = model_requests(&mock);
    assert_eq!(
        sent[0].body["thinking"],
        json!({"type": "enabled", "budget_tokens": 1024})
    );
    let messages = &sent[1].body["messages"];
    assert_eq!(messages[1]["content"][0]["type"], "thinking");
    assert_eq!(messages[1]["content"][0]["signature"], "sig_1");
    assert_eq!(messages[1]["content"][1]["id"], "toolu_1");
    assert_eq!(messages[2]["content"][0]["type"], "tool_result");
    assert_eq!(messages[2]["content"][0]["tool_use_id"], "toolu_1");
}

#[tokio::test]
async fn errors_and_retries() {
    let mock = mock(json!({"turns": [
        {"fault": {"kind": "status", "status": 429, "retry_after": "0"}},
        {"text": "x", "fault": {"kind": "stream_error", "after_events": 1}},
        {"text": "recovered"},
        {"fault": {"kind": "status", "status": 401}},
        {"fault": {"kind": "status", "status": 400,
                   "message": "prompt is too long: 300000 tokens > 200000 maximum"}}
    ]}))
    .await;
    let (provider, _key) = provider_with(&mock, fast_http());
    let (result, events) = run(&provider, &hello()).await;
    assert_eq!(result.expect("retried").text, "recovered");
    let kinds: Vec<ProviderErrorKind> = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::Retry { error, .. } => Some(error.kind),
            _ => None,
        })
        .collect();
    assert_eq!(
        kinds,
        vec![ProviderErrorKind::RateLimit, ProviderErrorKind::Overloaded]
    );
    let (result, _) = run(&provider, &hello()).await;
    let auth = result.expect_err("401");
    assert_eq!(auth.kind, ProviderErrorKind::Auth);
    assert!(
        auth.message.contains("GOOGLE_APPLICATION_CREDENTIALS"),
        "{}",
        auth.message
    );
    let (result, _) = run(&provider, &hello()).await;
    assert_eq!(
        result.expect_err("400").kind,
        ProviderErrorKind::ContextLength
    );
    assert_eq!(model_requests(&mock).len(), 5);
}

#[tokio::test]
async fn cut_stream_and_cancellation() {
    let mock = mock(json!({"turns": [
        {"text": "partial", "fault": {"kind": "missing_terminal"}},
        {"text": {"repeat": "tok ", "count": 100}, "chunk_delay_ms": 30}
    ]}))
    .await;
    let (provider, _key) = provider_with(
        &mock,
        HttpOptions {
            max_retries: 0,
            ..fast_http()
        },
    );
    let (result, _) = run(&provider, &hello()).await;
    let error = result.expect_err("cut");
    assert!(error.message.contains("message_stop"), "{}", error.message);

    let cancel = CancellationToken::new();
    let sink = {
        let cancel = cancel.clone();
        let seen = Mutex::new(0usize);
        move |event: StreamEvent| {
            if let StreamEvent::TextDelta(_) = event {
                let mut seen = seen.lock().expect("lock");
                *seen += 1;
                if *seen == 2 {
                    cancel.cancel();
                }
            }
        }
    };
    let started = Instant::now();
    let response = provider
        .stream(&hello(), &sink, &cancel)
        .await
        .expect("cancellation is not an error");
    assert_eq!(response.stop_reason, StopReason::Aborted);
    assert_eq!(response.text, "tok tok ");
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[tokio::test]
async fn project_region_and_endpoint_resolution() {
    let mock = mock(json!({"turns": []})).await;
    let key = key_file(&format!("{}/token", mock.base_url()));
    let build = |var: Env| {
        VertexProvider::new(
            VertexConfig {
                credentials_file: Some(key.path.clone()),
                ..VertexConfig::new(MODEL)
            }
            .with_env(var),
        )
    };
    let env = |pairs: &'static [(&'static str, &'static str)]| {
        Box::new(move |name: &str| {
            pairs
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| (*v).to_string())
        })
    };
    // Claude Code's variables, the global endpoint.
    let provider = build(env(&[
        ("CLOUD_ML_REGION", "global"),
        ("ANTHROPIC_VERTEX_PROJECT_ID", "p-anthropic"),
        ("GOOGLE_CLOUD_PROJECT", "p-google"),
    ]))
    .expect("provider");
    assert_eq!(provider.project(), "p-anthropic");
    assert_eq!(provider.region(), "global");
    assert_eq!(provider.base_url(), "https://aiplatform.googleapis.com/v1");
    // GOOGLE_CLOUD_PROJECT, a regional endpoint.
    let provider = build(env(&[
        ("CLOUD_ML_REGION", "europe-west1"),
        ("GOOGLE_CLOUD_PROJECT", "p-google"),
    ]))
    .expect("provider");
    assert_eq!(provider.project(), "p-google");
    assert_eq!(
        provider.base_url(),
        "https://europe-west1-aiplatform.googleapis.com/v1"
    );
    // The key file's project when nothing else names one.
    let provider = build(env(&[("CLOUD_ML_REGION", "us-east5")])).expect("provider");
    assert_eq!(provider.project(), "key-file-project");
    // No region: the error names the variable.
    let error = build(env(&[])).expect_err("no region");
    assert!(
        error.message.contains("CLOUD_ML_REGION"),
        "{}",
        error.message
    );
    // A key file that is not one.
    let bad = tempfile::NamedTempFile::new().expect("temp");
    std::fs::write(bad.path(), "{}").expect("write");
    let error = VertexProvider::new(
        VertexConfig {
            credentials_file: Some(bad.path().to_path_buf()),
            region: Some("us-east5".into()),
            project: Some("p".into()),
            ..VertexConfig::new(MODEL)
        }
        .with_env(|_| None),
    )
    .expect_err("bad key file");
    assert_eq!(error.kind, ProviderErrorKind::Auth);
    assert!(
        error.message.contains("has no \"type\""),
        "{}",
        error.message
    );
}

#[tokio::test]
async fn a_fixed_access_token_is_used_as_it_is() {
    let mock = mock(json!({"turns": [{"text": "ok"}]})).await;
    let provider = VertexProvider::new(
        VertexConfig {
            project: Some(PROJECT.into()),
            region: Some(REGION.into()),
            access_token: Some("ya29.fixed".into()),
            base_url: Some(format!("{}/v1", mock.base_url())),
            http: fast_http(),
            ..VertexConfig::new(MODEL)
        }
        .with_env(|_| None),
    )
    .expect("provider");
    run(&provider, &hello()).await.0.expect("ok");
    assert_eq!(
        authorization(&model_requests(&mock)[0]),
        "Bearer ya29.fixed"
    );
    assert!(token_requests(&mock).is_empty());
}

#[tokio::test]
async fn settings_profile_and_the_claude_code_switch_build_vertex() {
    use robota::framework::assembly::provider::{provider_from_settings, DEFAULT_VERTEX_MODEL};
    use robota::framework::config::{load_settings, SettingsOptions};
    let mock = mock(json!({"turns": [{"text": "from settings"}]})).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let project = dir.path().join("project");
    let home = dir.path().join("home");
    std::fs::create_dir_all(project.join(".claude")).expect("mkdir");
    std::fs::create_dir_all(&home).expect("mkdir");
    std::fs::write(
        project.join(".claude/settings.json"),
        json!({
            "currentProvider": "gcp",
            "providers": {"gcp": {
                "type": "vertex",
                "model": MODEL,
                "apiKey": "ya29.from-settings",
                "baseURL": format!("{}/v1", mock.base_url()),
                "options": {"project": "settings-project", "region": "europe-west4"}
            }}
        })
        .to_string(),
    )
    .expect("settings");
    let loaded = load_settings(&SettingsOptions::new(&project).with_home(&home)).expect("load");
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    let built = provider_from_settings(&loaded.settings, &project, &|_| None).expect("built");
    assert_eq!(built.kind, "vertex");
    assert_eq!(built.provider.name(), "vertex");
    let events = Mutex::new(Vec::new());
    let sink = |event: StreamEvent| events.lock().expect("lock").push(event);
    let response = built
        .provider
        .stream(&hello(), &sink, &CancellationToken::new())
        .await
        .expect("ok");
    assert_eq!(response.text, "from settings");
    let sent = &model_requests(&mock)[0];
    assert_eq!(authorization(sent), "Bearer ya29.from-settings");
    assert!(
        sent.path
            .starts_with("/v1/projects/settings-project/locations/europe-west4/"),
        "{}",
        sent.path
    );

    // No profile: CLAUDE_CODE_USE_VERTEX=1 with Claude Code's variables.
    std::fs::remove_file(project.join(".claude/settings.json")).expect("rm");
    let loaded = load_settings(&SettingsOptions::new(&project).with_home(&home)).expect("load");
    let key = key_file(&format!("{}/token", mock.base_url()));
    let key_path = key.path.display().to_string();
    let env = move |name: &str| match name {
        "CLAUDE_CODE_USE_VERTEX" => Some("1".to_string()),
        "CLOUD_ML_REGION" => Some("global".to_string()),
        "ANTHROPIC_VERTEX_PROJECT_ID" => Some("env-project".to_string()),
        "GOOGLE_APPLICATION_CREDENTIALS" => Some(key_path.clone()),
        _ => None,
    };
    let built = provider_from_settings(&loaded.settings, &project, &env).expect("built");
    assert_eq!(built.kind, "vertex");
    assert_eq!(built.model, DEFAULT_VERTEX_MODEL);
    assert_eq!(
        built.base_url.as_deref(),
        Some("https://aiplatform.googleapis.com/v1")
    );
    let bare = |name: &str| (name == "CLAUDE_CODE_USE_VERTEX").then(|| "true".to_string());
    let error = provider_from_settings(&loaded.settings, &project, &bare)
        .expect_err("no region")
        .to_string();
    assert!(error.contains("CLOUD_ML_REGION"), "{error}");
}

// --- Application default credentials -------------------------------------------------------

/// gcloud user credentials (`gcloud auth application-default login`'s file) at `path`.
fn write_user_credentials(path: &std::path::Path, token_uri: &str, refresh_token: &str) {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).expect("credentials dir");
    }
    let file = json!({
        "type": "authorized_user",
        "client_id": "test-client.apps.googleusercontent.com",
        "client_secret": "test-client-secret",
        "refresh_token": refresh_token,
        "token_uri": token_uri,
        "quota_project_id": "billing-project",
    });
    std::fs::write(path, file.to_string()).expect("write credentials");
}

/// A provider on `mock` with no key file of its own: credentials come from `env` alone.
fn adc_provider(
    mock: &MockLlm,
    env: Vec<(&'static str, String)>,
) -> Result<VertexProvider, ProviderError> {
    VertexProvider::new(
        VertexConfig {
            project: Some(PROJECT.into()),
            region: Some(REGION.into()),
            base_url: Some(format!("{}/v1", mock.base_url())),
            http: fast_http(),
            ..VertexConfig::new(MODEL)
        }
        .with_env(move |name| env.iter().find(|(k, _)| *k == name).map(|(_, v)| v.clone())),
    )
}

/// The form fields of a recorded token request.
fn form(request: &RecordedRequest) -> std::collections::BTreeMap<String, String> {
    let text = request.body.as_str().expect("a form body");
    url::form_urlencoded::parse(text.as_bytes())
        .into_owned()
        .collect()
}

#[tokio::test]
async fn gcloud_user_credentials_named_by_google_application_credentials() {
    let mock = mock(json!({"turns": [{"text": "one"}, {"text": "two"}]})).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("user.json");
    write_user_credentials(
        &file,
        &format!("{}/token", mock.base_url()),
        "1//refresh-me",
    );
    let provider = adc_provider(
        &mock,
        vec![("GOOGLE_APPLICATION_CREDENTIALS", file.display().to_string())],
    )
    .expect("provider");
    assert_eq!(run(&provider, &hello()).await.0.expect("first").text, "one");
    assert_eq!(
        run(&provider, &hello()).await.0.expect("second").text,
        "two"
    );

    // One refresh-token exchange at the file's token_uri, cached for both calls.
    let tokens = token_requests(&mock);
    assert_eq!(tokens.len(), 1, "the token is cached");
    let fields = form(&tokens[0]);
    assert_eq!(fields["grant_type"], "refresh_token");
    assert_eq!(fields["refresh_token"], "1//refresh-me");
    assert_eq!(
        fields["client_id"],
        "test-client.apps.googleusercontent.com"
    );
    assert_eq!(fields["client_secret"], "test-client-secret");
    let sent = model_requests(&mock);
    assert_eq!(sent.len(), 2);
    for request in &sent {
        assert_eq!(authorization(request), "Bearer ya29.mock-token-0");
        assert_eq!(
            request
                .headers
                .get("x-goog-user-project")
                .map(String::as_str),
            Some("billing-project"),
            "the quota project is billed"
        );
    }
}

#[tokio::test]
async fn gcloud_well_known_file_under_home_or_cloudsdk_config() {
    let mock = mock(json!({"turns": [{"text": "a"}, {"text": "b"}, {"text": "c"}]})).await;
    // Under HOME, with tokens that live 10 s: each call needs a new one (less than the
    // minute's margin is left).
    let home = tempfile::tempdir().expect("home");
    let token_uri = format!("{}/token?expires_in=10", mock.base_url());
    write_user_credentials(
        &home
            .path()
            .join(".config/gcloud/application_default_credentials.json"),
        &token_uri,
        "1//from-home",
    );
    let provider =
        adc_provider(&mock, vec![("HOME", home.path().display().to_string())]).expect("provider");
    assert_eq!(run(&provider, &hello()).await.0.expect("first").text, "a");
    assert_eq!(run(&provider, &hello()).await.0.expect("second").text, "b");
    let tokens = token_requests(&mock);
    assert_eq!(tokens.len(), 2, "a token about to expire is replaced");
    assert!(tokens
        .iter()
        .all(|t| form(t)["refresh_token"] == "1//from-home"));
    let sent = model_requests(&mock);
    assert_eq!(authorization(&sent[0]), "Bearer ya29.mock-token-0");
    assert_eq!(authorization(&sent[1]), "Bearer ya29.mock-token-2");

    // CLOUDSDK_CONFIG moves gcloud's directory (and wins over HOME).
    let config_dir = tempfile::tempdir().expect("gcloud config");
    write_user_credentials(
        &config_dir
            .path()
            .join("application_default_credentials.json"),
        &format!("{}/token", mock.base_url()),
        "1//from-cloudsdk-config",
    );
    let provider = adc_provider(
        &mock,
        vec![
            ("HOME", home.path().display().to_string()),
            ("CLOUDSDK_CONFIG", config_dir.path().display().to_string()),
        ],
    )
    .expect("provider");
    assert_eq!(run(&provider, &hello()).await.0.expect("third").text, "c");
    let tokens = token_requests(&mock);
    assert_eq!(form(&tokens[2])["refresh_token"], "1//from-cloudsdk-config");
}

#[tokio::test]
async fn the_metadata_server_when_no_credentials_file_exists() {
    let mock = mock(json!({"turns": [{"text": "from compute"}, {"text": "again"}]})).await;
    let empty_home = tempfile::tempdir().expect("home");
    let host = mock.base_url().trim_start_matches("http://").to_string();
    let provider = adc_provider(
        &mock,
        vec![
            ("HOME", empty_home.path().display().to_string()),
            ("GCE_METADATA_HOST", host),
        ],
    )
    .expect("provider");
    assert_eq!(
        run(&provider, &hello()).await.0.expect("first").text,
        "from compute"
    );
    assert_eq!(
        run(&provider, &hello()).await.0.expect("second").text,
        "again"
    );
    let asked: Vec<RecordedRequest> = mock
        .requests()
        .into_iter()
        .filter(|r| r.path == METADATA_TOKEN_PATH)
        .collect();
    assert_eq!(asked.len(), 1, "the metadata token is cached");
    assert_eq!(asked[0].method, "GET");
    assert_eq!(
        asked[0].headers.get("metadata-flavor").map(String::as_str),
        Some("Google")
    );
    let query: std::collections::BTreeMap<String, String> =
        url::form_urlencoded::parse(asked[0].query.as_deref().unwrap_or("").as_bytes())
            .into_owned()
            .collect();
    assert_eq!(
        query.get("scopes").map(String::as_str),
        Some("https://www.googleapis.com/auth/cloud-platform")
    );
    for request in model_requests(&mock) {
        assert_eq!(authorization(&request), "Bearer ya29.mock-token-0");
        assert!(!request.headers.contains_key("x-goog-user-project"));
    }
}

#[tokio::test]
async fn a_revoked_refresh_token_says_to_log_in_again() {
    let mock = mock(json!({"turns": [{"text": "never"}]})).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("user.json");
    write_user_credentials(&file, &format!("{}/token", mock.base_url()), "revoked");
    let provider = adc_provider(
        &mock,
        vec![("GOOGLE_APPLICATION_CREDENTIALS", file.display().to_string())],
    )
    .expect("provider");
    let error = run(&provider, &hello()).await.0.expect_err("refused");
    assert_eq!(error.kind, ProviderErrorKind::Auth, "{error:?}");
    for part in [
        "invalid_grant",
        "Token has been expired or revoked",
        "gcloud auth application-default login",
        "user.json",
    ] {
        assert!(
            error.message.contains(part),
            "{part:?} in {}",
            error.message
        );
    }
    assert!(
        model_requests(&mock).is_empty(),
        "no model call without a token"
    );
}

#[tokio::test]
async fn no_credentials_anywhere_says_what_was_looked_for() {
    let mock = mock(json!({"turns": [{"text": "never"}]})).await;
    let empty_home = tempfile::tempdir().expect("home");
    // A port nothing listens on: the metadata server "is not there".
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let closed_port = closed.local_addr().expect("addr").port();
    drop(closed);
    let provider = adc_provider(
        &mock,
        vec![
            ("HOME", empty_home.path().display().to_string()),
            ("GCE_METADATA_HOST", format!("127.0.0.1:{closed_port}")),
        ],
    )
    .expect("provider");
    let started = Instant::now();
    let error = run(&provider, &hello())
        .await
        .0
        .expect_err("no credentials");
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "gives up promptly"
    );
    assert_eq!(error.kind, ProviderErrorKind::Auth, "{error:?}");
    for part in [
        "GOOGLE_APPLICATION_CREDENTIALS is not set",
        "application_default_credentials.json",
        "did not answer",
        "gcloud auth application-default login",
    ] {
        assert!(
            error.message.contains(part),
            "{part:?} in {}",
            error.message
        );
    }
    assert!(model_requests(&mock).is_empty());
}

#[tokio::test]
async fn unusable_credentials_files_are_refused_when_the_provider_is_built() {
    let mock = mock(json!({"turns": []})).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let cases: [(&str, String, &str); 4] = [
        (
            "external.json",
            json!({"type": "external_account", "audience": "x"}).to_string(),
            "\"external_account\" are not supported",
        ),
        ("notjson.json", "not json".to_string(), "it is not JSON"),
        (
            "untyped.json",
            json!({"client_id": "x"}).to_string(),
            "it has no \"type\"",
        ),
        (
            "partial.json",
            json!({"type": "authorized_user", "client_id": "x"}).to_string(),
            "incomplete",
        ),
    ];
    for (name, text, expected) in cases {
        let file = dir.path().join(name);
        std::fs::write(&file, text).expect("write");
        let error = adc_provider(
            &mock,
            vec![("GOOGLE_APPLICATION_CREDENTIALS", file.display().to_string())],
        )
        .expect_err(name);
        assert_eq!(error.kind, ProviderErrorKind::Auth, "{name}: {error:?}");
        assert!(
            error.message.contains(expected) && error.message.contains(name),
            "{name}: {}",
            error.message
        );
    }
    let missing = dir.path().join("missing.json");
    let error = adc_provider(
        &mock,
        vec![(
            "GOOGLE_APPLICATION_CREDENTIALS",
            missing.display().to_string(),
        )],
    )
    .expect_err("missing file");
    assert!(
        error.message.contains("cannot be read"),
        "{}",
        error.message
    );
}
