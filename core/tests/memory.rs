//! Project memory in a temp project, with the model played by `mock-llm` over loopback: `memory
//! add` with de-duplication, what the model adds waits as a pending candidate that only the user
//! approves or rejects, realistic secrets refused with a reason and never written anywhere,
//! memory events kept in the saved session and after a resume (`memory used`), and the index in
//! the next session's system prompt.
#![cfg(unix)]

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use robota::framework::interactive::{InteractiveSession, InteractiveSessionOptions, PromptResult};
use robota::framework::memory::{check_sensitive, MemoryType, ProjectMemory};
use robota::provider::{AnthropicConfig, AnthropicProvider, HttpOptions};
use robota::session::{
    FnPermissionHandler, PermissionResponse, SessionOptions, SessionPersistence, SessionSettings,
};
use serde_json::{json, Value};

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
    let session = SessionOptions::new(dir, Arc::new(provider))
        .with_settings(SessionSettings::None)
        .with_persistence(SessionPersistence::Project)
        .with_permission_handler(FnPermissionHandler::new(|_request, _cancel| async move {
            PermissionResponse::AllowOnce
        }));
    InteractiveSessionOptions::new(session)
}

/// Every file under `.robota/memory`, concatenated (to prove a secret was written nowhere).
fn all_memory_text(dir: &Path) -> String {
    let mut text = String::new();
    let root = dir.join(".robota/memory");
    for entry in walk(&root) {
        text.push_str(&std::fs::read_to_string(entry).unwrap_or_default());
    }
    text
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                files.extend(walk(&path));
            } else {
                files.push(path);
            }
        }
    }
    files
}

/// Realistic secrets and personal data, each of which must be refused.
const SECRETS: &[(&str, &str)] = &[
    ("api_token", "deploy uses AKIAIOSFODNN7EXAMPLE for S3"),
    (
        "api_token",
        "CI token ghp_1A2b3C4d5E6f7G8h9I0jK1lM2nO3pQ4rS5tU",
    ),
    (
        "api_token",
        "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz0123",
    ),
    (
        "api_token",
        "slack bot: xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOp",
    ),
    (
        "api_token",
        "use sk-ant-api03-AbCdEf0123456789-AbCdEf0123456789xyz for claude",
    ),
    (
        "api_token",
        "openai key sk-proj-Z9y8X7w6V5u4T3s2R1q0PoNmLkJiHg",
    ),
    ("api_token", "stripe live key sk_live_51HqLyjWDarjtT1zdp7dc"),
    (
        "api_token",
        "maps key AIzaSyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvW",
    ),
    (
        "api_token",
        "curl -H 'Authorization: Bearer abcdef0123456789ABCDEF.xyz'",
    ),
    (
        "api_token",
        "publish with npm_abcdefghijklmnopqrstuvwxyz0123456789",
    ),
    ("api_token", "gitlab glpat-xYz123AbC456dEf789gHi0"),
    (
        "private_key",
        "-----BEGIN OPENSSH PRIVATE KEY----- b3BlbnNzaC1rZXktdjEAAAAA",
    ),
    (
        "private_key",
        "-----BEGIN RSA PRIVATE KEY----- MIIEpAIBAAKCAQEA",
    ),
    (
        "jwt",
        "session eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N",
    ),
    (
        "credential_url",
        "db is postgres://admin:s3cretPass@db.internal:5432/app",
    ),
    ("password", "the staging password is Tr0ub4dor&3"),
    ("password", "admin login password: hunter2!"),
    ("password", "export OPENAI_API_KEY=q8Xk2LmN9pQr"),
    ("password", "config has client_secret = \"9f8e7d6c5b4a\""),
    ("password", "set DB_PASSWORD=correcthorse"),
    ("payment_card", "test card 4111 1111 1111 1111 works"),
    ("payment_card", "corporate card 5500-0000-0000-0004"),
    ("national_id", "her SSN is 123-45-6789"),
    ("national_id", "주민등록번호 900101-1234567"),
    ("national_id", "NI number AB 12 34 56 C"),
];

/// Durable facts that look a little like secrets and must still be accepted.
const BENIGN: &[&str] = &[
    "Run the tests with cargo test -p robota --test memory",
    "The API key is read from $OPENAI_API_KEY, never stored in the repo",
    "max_tokens: 4096 is enough for summaries",
    "commit 3f2a9c1d4e5b6a7c8d9e0f1a2b3c4d5e6f7a8b9c fixed the flaky test",
    "token: ${GITHUB_TOKEN} comes from the CI secret store",
    "Postgres listens on port 5432 in docker compose",
    "Ticket numbers look like PROJ-1234",
];

#[test]
fn the_policy_refuses_realistic_secrets_and_accepts_durable_facts() {
    for (category, text) in SECRETS {
        match check_sensitive(text) {
            Err(refusal) => assert_eq!(&refusal.category, category, "{text}"),
            Ok(()) => panic!("not refused: {text}"),
        }
    }
    for text in BENIGN {
        assert!(check_sensitive(text).is_ok(), "refused: {text}");
    }
}

#[test]
fn the_store_deduplicates_validates_topics_and_never_writes_refused_text() {
    let dir = tempfile::tempdir().expect("tempdir");
    let memory = ProjectMemory::new(dir.path());
    let first = memory
        .append(MemoryType::Project, "build", "Use cargo nextest.")
        .expect("append");
    assert!(!first.deduplicated);
    let again = memory
        .append(MemoryType::Project, "Build", "  use   CARGO nextest ")
        .expect("append");
    assert!(again.deduplicated, "same normalized text in the same topic");
    let topic = memory.topic("build").expect("topic");
    assert_eq!(topic.entries.len(), 1);
    for bad in ["../escape", "a/b", "", "-dash", "UPPER SPACE"] {
        assert!(
            memory.append(MemoryType::User, bad, "x").is_err(),
            "{bad:?}"
        );
    }
    assert!(memory
        .append(MemoryType::Project, "ci", &"x".repeat(2001))
        .is_err());
    for (_, secret) in SECRETS {
        assert!(memory.append(MemoryType::Project, "ci", secret).is_err());
        assert!(memory
            .propose(MemoryType::Project, "ci", secret, "model")
            .is_err());
    }
    let stored = all_memory_text(dir.path());
    assert!(!stored.contains("AKIA") && !stored.contains("hunter2") && !stored.contains("4111"));
    assert!(memory.pending().expect("pending").is_empty());
    // A broken pending list is an error naming the file, not a panic or silent loss.
    std::fs::write(dir.path().join(".robota/memory/pending.json"), "{oops").expect("write");
    let error = memory.pending().expect_err("broken");
    assert!(error.to_string().contains("pending.json"), "{error}");
}

fn memory_events(session: &InteractiveSession) -> Vec<Value> {
    serde_json::to_value(session.get_full_history())
        .expect("json")
        .as_array()
        .expect("array")
        .iter()
        .filter(|e| e["type"] == "memory-event")
        .map(|e| e["data"].clone())
        .collect()
}

#[tokio::test]
async fn model_proposals_wait_for_the_user_and_memory_reaches_the_next_session() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let mock = mock_llm::MockLlm::start_json(json!({"turns": [
        {"tool_calls": [
            {"id": "m1", "name": "robota_command_memory",
             "input": {"args": "add project testing Integration tests need docker running"}},
            {"id": "m2", "name": "robota_command_memory",
             "input": {"args": "add reference secrets prod key is sk_live_51HqLyjWDarjtT1zdp7dc"}},
            {"id": "m3", "name": "robota_command_memory",
             "input": {"args": "add project style Prefer tabs"}},
            {"id": "m4", "name": "robota_command_memory",
             "input": {"args": "approve mem-00000000"}},
        ]},
        {"text": ["noted"]},
        {"text": ["second session"]},
    ]}))
    .await
    .expect("mock-llm");

    let session = InteractiveSession::new(options(d, mock.base_url())).expect("session");
    let id = session.get_session_id();
    let ticket = session
        .submit_tracked("remember what matters", None)
        .await
        .expect("submit");
    assert!(matches!(
        ticket.result().await,
        PromptResult::Complete { .. }
    ));

    // What the model sent back for each call.
    let requests = mock.requests();
    let results = requests[1].body.to_string();
    assert!(results.contains("Proposed memory"), "{results}");
    assert!(results.contains("refused to store this"), "{results}");
    assert!(results.contains("only the user can approve"), "{results}");
    assert!(!all_memory_text(d).contains("sk_live"));

    // Nothing is saved until the user approves.
    assert!(!d.join(".robota/memory/MEMORY.md").exists());
    let pending = session
        .execute_command("memory", "pending")
        .await
        .expect("pending");
    let candidates = pending.data.as_ref().expect("data")["pending"]
        .as_array()
        .expect("list")
        .clone();
    assert_eq!(candidates.len(), 2, "{}", pending.message);
    let testing = candidates
        .iter()
        .find(|c| c["topic"] == "testing")
        .expect("testing")["id"]
        .as_str()
        .expect("id")
        .to_string();
    let style = candidates
        .iter()
        .find(|c| c["topic"] == "style")
        .expect("style")["id"]
        .as_str()
        .expect("id")
        .to_string();
    let approved = session
        .execute_command("memory", &format!("approve {testing}"))
        .await
        .expect("approve");
    assert!(approved.success, "{}", approved.message);
    let rejected = session
        .execute_command("memory", &format!("reject {style}"))
        .await
        .expect("reject");
    assert!(rejected.success, "{}", rejected.message);
    let missing = session
        .execute_command("memory", &format!("approve {style}"))
        .await
        .expect("approve");
    assert!(!missing.success && missing.message.contains(&style));

    // The user's own add, its duplicate, a secret, and bad arguments.
    let added = session
        .execute_command("memory", "add feedback review Keep PRs under 400 lines")
        .await
        .expect("add");
    assert!(added.success && added.message.contains("Saved"));
    let duplicate = session
        .execute_command("memory", "add feedback review keep PRs under 400 lines.")
        .await
        .expect("add");
    assert!(duplicate.success && duplicate.message.contains("already has"));
    let secret = session
        .execute_command("memory", "add user me my password is Tr0ub4dor&3")
        .await
        .expect("add");
    assert!(!secret.success);
    assert_eq!(secret.data.as_ref().expect("data")["category"], "password");
    for bad in ["add", "add nonsense t x", "add user", "frobnicate"] {
        let result = session.execute_command("memory", bad).await.expect("cmd");
        assert!(!result.success, "{bad}: {}", result.message);
    }
    let shown = session
        .execute_command("memory", "show testing")
        .await
        .expect("show");
    assert!(shown
        .message
        .contains("Integration tests need docker running"));
    let listed = session
        .execute_command("memory", "list")
        .await
        .expect("list");
    assert!(listed.message.contains("testing") && listed.message.contains("review"));

    let actions: Vec<String> = memory_events(&session)
        .iter()
        .map(|e| e["action"].as_str().unwrap_or("").to_string())
        .collect();
    for action in [
        "proposed", "refused", "approved", "rejected", "added", "show",
    ] {
        assert!(actions.iter().any(|a| a == action), "{action}: {actions:?}");
    }
    let history = serde_json::to_string(&session.get_full_history()).expect("json");
    assert!(
        !history.contains("Tr0ub4dor"),
        "a refused text is never recorded"
    );
    session
        .shutdown(robota::hooks::SessionEndReason::Other)
        .await;
    drop(session);

    // A resumed session keeps the memory events: `used` still knows the topic read.
    let mut resumed_options = options(d, mock.base_url());
    resumed_options.session = resumed_options.session.with_resume(id, false);
    let resumed = InteractiveSession::new(resumed_options).expect("resume");
    let used = resumed
        .execute_command("memory", "used")
        .await
        .expect("used");
    assert!(
        used.message.contains("topics/testing.md"),
        "{}",
        used.message
    );
    resumed
        .shutdown(robota::hooks::SessionEndReason::Other)
        .await;

    // A new session gets the index in its system prompt.
    let fresh = InteractiveSession::new(options(d, mock.base_url())).expect("fresh");
    let ticket = fresh.submit_tracked("hello", None).await.expect("submit");
    let _ = ticket.result().await;
    let last = mock.requests().last().expect("request").body.to_string();
    assert!(
        last.contains("Integration tests need docker running"),
        "{last}"
    );
    assert!(last.contains("Keep PRs under 400 lines"), "{last}");
    mock.shutdown().await;
}
