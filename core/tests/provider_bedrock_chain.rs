//! The Bedrock provider's AWS credential chain against real parts: a `credential_process` script
//! in a temp AWS config file, STS `AssumeRole` / `AssumeRoleWithWebIdentity`, IAM Identity
//! Center (SSO) and the ECS container endpoint served by mock-llm on loopback. The chain
//! (`aws-config`) reads the process environment, so every test here holds [`ENV`] while it sets
//! the variables it needs (this file is its own test process).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use mock_llm::{MockLlm, RecordedRequest};
use robota::message::{Message, ProviderError, ProviderErrorKind};
use robota::provider::{
    BedrockConfig, BedrockProvider, HttpOptions, Provider, ProviderRequest, ProviderResponse,
    StreamEvent,
};
use serde_json::json;
use tokio_util::sync::CancellationToken;

const MODEL: &str = "anthropic.claude-sonnet-4-5-20250929-v1:0";

/// Held by every test while it sets and uses the process environment.
static ENV: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// A clean AWS environment for the process: every `AWS_*` variable removed, `HOME` a temp dir,
/// instance metadata off (so a chain that finds nothing fails at once), then `vars` set.
fn set_process_env(home: &Path, vars: &[(&str, String)]) {
    for (name, _) in std::env::vars() {
        if name.starts_with("AWS_") {
            std::env::remove_var(name);
        }
    }
    std::env::set_var("HOME", home);
    std::env::set_var("AWS_EC2_METADATA_DISABLED", "true");
    for (name, value) in vars {
        std::env::set_var(name, value);
    }
}

/// A config whose variables of its own come from `vars` (the host's snapshot).
fn config(mock: &MockLlm, vars: Vec<(&'static str, String)>) -> BedrockConfig {
    BedrockConfig {
        base_url: Some(mock.base_url()),
        http: HttpOptions {
            max_retries: 0,
            connect_timeout: Duration::from_secs(2),
            idle_timeout: Duration::from_secs(10),
            ..HttpOptions::default()
        },
        ..BedrockConfig::new(MODEL)
    }
    .with_env(move |name| {
        vars.iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.clone())
    })
}

async fn run(provider: &BedrockProvider) -> Result<ProviderResponse, ProviderError> {
    let request = ProviderRequest {
        messages: vec![Arc::new(Message::user("hello"))],
        ..ProviderRequest::default()
    };
    let events = Mutex::new(Vec::new());
    let sink = |event: StreamEvent| events.lock().expect("lock").push(event);
    provider
        .stream(&request, &sink, &CancellationToken::new())
        .await
}

async fn mock(turns: usize) -> MockLlm {
    let turns: Vec<_> = (0..turns)
        .map(|i| json!({"text": format!("ok {i}")}))
        .collect();
    MockLlm::start_json(json!({ "turns": turns }))
        .await
        .expect("mock-llm starts")
}

fn header<'r>(request: &'r RecordedRequest, name: &str) -> &'r str {
    let sent = request.header(name);
    sent.unwrap_or_else(|| panic!("no {name} header in {:?}", request.headers))
}

/// The `Credential=` scope of a SigV4 `Authorization` header: `AKID/date/region/service/aws4_request`.
fn credential_scope(request: &RecordedRequest) -> String {
    header(request, "authorization")
        .split("Credential=")
        .nth(1)
        .and_then(|rest| rest.split(',').next())
        .unwrap_or_else(|| panic!("not SigV4: {:?}", request.headers))
        .to_string()
}

fn model_requests(mock: &MockLlm) -> Vec<RecordedRequest> {
    mock.requests()
        .into_iter()
        .filter(|r| r.path.starts_with("/model/"))
        .collect()
}

fn write(path: &Path, text: &str) -> PathBuf {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).expect("mkdir");
    }
    std::fs::write(path, text).expect("write");
    path.to_path_buf()
}

/// `when` as RFC 3339 (what `credential_process` and ECS print).
fn rfc3339(when: SystemTime) -> String {
    time::OffsetDateTime::from(when)
        .format(&time::format_description::well_known::Rfc3339)
        .expect("format")
}

/// A `credential_process` script that prints keys expiring at `expiration` and counts its runs
/// in `runs`.
fn credential_script(dir: &Path, expiration: SystemTime) -> (PathBuf, PathBuf) {
    let runs = dir.join("runs");
    let script = write(
        &dir.join("creds.sh"),
        &format!(
            "#!/bin/sh\necho run >> '{}'\ncat <<'JSON'\n{{\"Version\": 1, \"AccessKeyId\": \
             \"ASIAPROCESS\", \"SecretAccessKey\": \"process-secret\", \"SessionToken\": \
             \"process-session\", \"Expiration\": \"{}\"}}\nJSON\n",
            runs.display(),
            rfc3339(expiration)
        ),
    );
    (script, runs)
}

fn runs(path: &Path) -> usize {
    std::fs::read_to_string(path)
        .map(|text| text.lines().count())
        .unwrap_or(0)
}

#[tokio::test]
async fn credential_process_keys_sign_the_request_and_are_cached_until_near_expiry() {
    let _env = ENV.lock().await;
    let dir = tempfile::tempdir().expect("tempdir");
    set_process_env(dir.path(), &[]);
    let mock = mock(4).await;

    // Keys valid for an hour: one run of the process serves both requests.
    let (script, runs_file) =
        credential_script(dir.path(), SystemTime::now() + Duration::from_secs(3600));
    let config_file = write(
        &dir.path().join("config"),
        &format!(
            "[profile proc]\nregion = eu-west-1\ncredential_process = sh {}\n",
            script.display()
        ),
    );
    let vars = vec![
        ("AWS_CONFIG_FILE", config_file.display().to_string()),
        ("AWS_PROFILE", "proc".to_string()),
    ];
    let provider = BedrockProvider::new(config(&mock, vars.clone())).expect("provider");
    assert_eq!(
        provider.region(),
        "eu-west-1",
        "the region from the profile"
    );
    assert_eq!(runs(&runs_file), 0, "nothing runs before the first request");
    run(&provider).await.expect("first");
    run(&provider).await.expect("second");
    assert_eq!(runs(&runs_file), 1, "the keys are cached");
    let sent = model_requests(&mock);
    for request in &sent {
        let scope = credential_scope(request);
        assert!(scope.starts_with("ASIAPROCESS/"), "{scope}");
        assert!(
            scope.ends_with("/eu-west-1/bedrock/aws4_request"),
            "{scope}"
        );
        assert_eq!(header(request, "x-amz-security-token"), "process-session");
    }

    // Keys that expire within five minutes are fetched again for every request.
    let (script, runs_file) =
        credential_script(dir.path(), SystemTime::now() + Duration::from_secs(120));
    std::fs::remove_file(&runs_file).ok();
    write(
        &config_file,
        &format!(
            "[profile proc]\nregion = eu-west-1\ncredential_process = sh {}\n",
            script.display()
        ),
    );
    let provider = BedrockProvider::new(config(&mock, vars)).expect("provider");
    run(&provider).await.expect("third");
    run(&provider).await.expect("fourth");
    assert_eq!(runs(&runs_file), 2, "near expiry: fetched again");
}

#[tokio::test]
async fn a_failing_credential_process_is_an_auth_error_with_its_message() {
    let _env = ENV.lock().await;
    let dir = tempfile::tempdir().expect("tempdir");
    set_process_env(dir.path(), &[]);
    let mock = mock(1).await;
    let script = write(
        &dir.path().join("fail.sh"),
        "#!/bin/sh\necho 'corp-login: session expired, run corp-login' >&2\nexit 3\n",
    );
    let config_file = write(
        &dir.path().join("config"),
        &format!(
            "[profile broken]\ncredential_process = sh {}\n",
            script.display()
        ),
    );
    let provider = BedrockProvider::new(BedrockConfig {
        region: Some("us-east-1".into()),
        profile: Some("broken".into()),
        ..config(
            &mock,
            vec![("AWS_CONFIG_FILE", config_file.display().to_string())],
        )
    })
    .expect("the provider is built; the process runs on the first request");
    let error = run(&provider).await.expect_err("the process failed");
    assert_eq!(error.kind, ProviderErrorKind::Auth);
    assert!(!error.retryable);
    for part in [
        "session expired, run corp-login",
        "3",
        "broken",
        "credential_process",
    ] {
        assert!(error.message.contains(part), "{part}: {}", error.message);
    }
    assert!(
        model_requests(&mock).is_empty(),
        "nothing was sent unsigned"
    );
}

#[tokio::test]
async fn assume_role_calls_sts_with_the_source_keys_and_signs_with_the_role_keys() {
    let _env = ENV.lock().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let mock = mock(1).await;
    set_process_env(dir.path(), &[("AWS_ENDPOINT_URL_STS", mock.base_url())]);
    let credentials = write(
        &dir.path().join("credentials"),
        "[source]\naws_access_key_id = AKIDSOURCE\naws_secret_access_key = source-secret\n",
    );
    let config_file = write(
        &dir.path().join("config"),
        "[profile role]\nrole_arn = arn:aws:iam::123456789012:role/bedrock-user\n\
         source_profile = source\nrole_session_name = robota-test\nregion = us-west-2\n",
    );
    let provider = BedrockProvider::new(config(
        &mock,
        vec![
            ("AWS_CONFIG_FILE", config_file.display().to_string()),
            (
                "AWS_SHARED_CREDENTIALS_FILE",
                credentials.display().to_string(),
            ),
            ("AWS_PROFILE", "role".to_string()),
        ],
    ))
    .expect("provider");
    run(&provider).await.expect("ok");

    let all = mock.requests();
    let sts: Vec<_> = all.iter().filter(|r| r.path == "/").collect();
    assert_eq!(sts.len(), 1, "one AssumeRole: {all:?}");
    let body = sts[0].body.as_str().expect("a form body");
    assert!(body.contains("Action=AssumeRole"), "{body}");
    assert!(
        body.contains("RoleArn=arn%3Aaws%3Aiam%3A%3A123456789012%3Arole%2Fbedrock-user"),
        "{body}"
    );
    assert!(body.contains("RoleSessionName=robota-test"), "{body}");
    let scope = credential_scope(sts[0]);
    assert!(
        scope.starts_with("AKIDSOURCE/"),
        "STS signed with the source keys: {scope}"
    );
    assert!(scope.ends_with("/us-west-2/sts/aws4_request"), "{scope}");

    let bedrock = model_requests(&mock);
    let scope = credential_scope(&bedrock[0]);
    assert!(
        scope.starts_with(&format!("{}/", mock_llm::ASSUME_ROLE_KEY_ID)),
        "Bedrock signed with the role's keys: {scope}"
    );
    assert!(header(&bedrock[0], "x-amz-security-token").starts_with("mock-session-"));
}

#[tokio::test]
async fn web_identity_from_the_environment() {
    let _env = ENV.lock().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let mock = mock(1).await;
    let token = write(&dir.path().join("token"), "eyJ.web-identity.token");
    set_process_env(
        dir.path(),
        &[
            ("AWS_ENDPOINT_URL_STS", mock.base_url()),
            ("AWS_WEB_IDENTITY_TOKEN_FILE", token.display().to_string()),
            (
                "AWS_ROLE_ARN",
                "arn:aws:iam::123456789012:role/pod".to_string(),
            ),
            ("AWS_ROLE_SESSION_NAME", "pod-session".to_string()),
        ],
    );
    let provider =
        BedrockProvider::new(config(&mock, vec![("AWS_REGION", "us-east-2".to_string())]))
            .expect("provider");
    run(&provider).await.expect("ok");
    let all = mock.requests();
    let sts = all.iter().find(|r| r.path == "/").expect("an STS call");
    let body = sts.body.as_str().expect("a form body");
    assert!(body.contains("Action=AssumeRoleWithWebIdentity"), "{body}");
    assert!(
        body.contains("WebIdentityToken=eyJ.web-identity.token"),
        "{body}"
    );
    let scope = credential_scope(&model_requests(&mock)[0]);
    assert!(
        scope.starts_with(&format!("{}/", mock_llm::WEB_IDENTITY_KEY_ID)),
        "{scope}"
    );
    assert!(
        scope.ends_with("/us-east-2/bedrock/aws4_request"),
        "{scope}"
    );
}

#[tokio::test]
async fn ecs_container_credentials_over_loopback() {
    let _env = ENV.lock().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let mock = mock(1).await;
    set_process_env(
        dir.path(),
        &[
            (
                "AWS_CONTAINER_CREDENTIALS_FULL_URI",
                format!("{}/v2/credentials/task-1", mock.base_url()),
            ),
            (
                "AWS_CONTAINER_AUTHORIZATION_TOKEN",
                "container-auth".to_string(),
            ),
        ],
    );
    let provider =
        BedrockProvider::new(config(&mock, vec![("AWS_REGION", "us-east-1".to_string())]))
            .expect("provider");
    run(&provider).await.expect("ok");
    let all = mock.requests();
    let ecs = all
        .iter()
        .find(|r| r.path == "/v2/credentials/task-1")
        .expect("the container endpoint was asked");
    assert_eq!(header(ecs, "authorization"), "container-auth");
    let bedrock = model_requests(&mock);
    let scope = credential_scope(&bedrock[0]);
    assert!(
        scope.starts_with(&format!("{}/", mock_llm::ECS_KEY_ID)),
        "{scope}"
    );
    assert!(header(&bedrock[0], "x-amz-security-token").starts_with("mock-session-"));
}

fn sha1_hex(text: &str) -> String {
    aws_lc_rs::digest::digest(
        &aws_lc_rs::digest::SHA1_FOR_LEGACY_USE_ONLY,
        text.as_bytes(),
    )
    .as_ref()
    .iter()
    .map(|b| format!("{b:02x}"))
    .collect()
}

#[tokio::test]
async fn sso_profile_uses_the_cached_token_and_says_to_log_in_without_one() {
    let _env = ENV.lock().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let mock = mock(1).await;
    set_process_env(dir.path(), &[("AWS_ENDPOINT_URL_SSO", mock.base_url())]);
    let config_file = write(
        &dir.path().join("config"),
        "[profile sso]\nsso_session = corp\nsso_account_id = 123456789012\n\
         sso_role_name = BedrockUser\nregion = us-west-2\n\n[sso-session corp]\n\
         sso_region = us-east-1\nsso_start_url = https://corp.awsapps.com/start\n",
    );
    let build = || {
        BedrockProvider::new(BedrockConfig {
            profile: Some("sso".into()),
            ..config(
                &mock,
                vec![("AWS_CONFIG_FILE", config_file.display().to_string())],
            )
        })
        .expect("provider")
    };

    // Never logged in: no cached token.
    let error = run(&build()).await.expect_err("no SSO token");
    assert_eq!(error.kind, ProviderErrorKind::Auth);
    assert!(
        error.message.contains("aws sso login --profile sso"),
        "{}",
        error.message
    );

    // `aws sso login` caches the token under ~/.aws/sso/cache, named by the session's hash.
    write(
        &dir.path()
            .join(format!(".aws/sso/cache/{}.json", sha1_hex("corp"))),
        &json!({
            "accessToken": "sso-access-token",
            "expiresAt": rfc3339(SystemTime::now() + Duration::from_secs(3600)),
            "region": "us-east-1",
            "startUrl": "https://corp.awsapps.com/start",
        })
        .to_string(),
    );
    run(&build()).await.expect("ok");
    let all = mock.requests();
    let sso = all
        .iter()
        .find(|r| r.path == "/federation/credentials")
        .expect("GetRoleCredentials");
    assert_eq!(header(sso, "x-amz-sso_bearer_token"), "sso-access-token");
    let query = sso.query.as_deref().unwrap_or_default();
    assert!(query.contains("role_name=BedrockUser"), "{query}");
    assert!(query.contains("account_id=123456789012"), "{query}");
    let scope = credential_scope(&model_requests(&mock)[0]);
    assert!(
        scope.starts_with(&format!("{}/", mock_llm::SSO_KEY_ID)),
        "{scope}"
    );
    assert!(
        scope.ends_with("/us-west-2/bedrock/aws4_request"),
        "{scope}"
    );
}

#[tokio::test]
async fn nothing_found_is_an_auth_error_naming_what_to_set() {
    let _env = ENV.lock().await;
    let dir = tempfile::tempdir().expect("tempdir");
    set_process_env(dir.path(), &[]);
    let mock = mock(1).await;
    let provider = BedrockProvider::new(config(
        &mock,
        vec![
            ("AWS_REGION", "us-east-1".to_string()),
            ("HOME", dir.path().display().to_string()),
        ],
    ))
    .expect("provider");
    let error = run(&provider).await.expect_err("no credentials anywhere");
    assert_eq!(error.kind, ProviderErrorKind::Auth);
    for part in [
        "AWS_ACCESS_KEY_ID",
        "AWS_PROFILE",
        "AWS_BEARER_TOKEN_BEDROCK",
        "credential chain",
    ] {
        assert!(error.message.contains(part), "{part}: {}", error.message);
    }
    assert!(model_requests(&mock).is_empty());
}
