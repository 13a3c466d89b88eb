//! The transport contract from an embedding application's side: sessions the application
//! builds are attached to a [`Server`] (through `InteractiveSession::attach_transport` or
//! `Server::host` with the server's permission handler), served over HTTP, and detached when
//! they shut down.

use std::sync::Arc;
use std::time::Duration;

use robota::framework::interactive::{InteractiveSession, InteractiveSessionOptions, Transport};
use robota::hooks::SessionEndReason;
use robota::provider::scripted::{ScriptedProvider, ScriptedTurn};
use robota::session::SessionOptions;
use robota_server::{ProjectRoots, Server, ServerOptions};
use serde_json::{json, Value};

const TOKEN: &str = "transport-test-token-0123456789";

fn session(
    cwd: &std::path::Path,
    turns: Vec<ScriptedTurn>,
    options: impl FnOnce(SessionOptions) -> SessionOptions,
) -> Arc<InteractiveSession> {
    let provider = Arc::new(ScriptedProvider::new(turns));
    let options = options(SessionOptions::new(cwd, provider));
    InteractiveSession::new(InteractiveSessionOptions::new(options)).expect("session")
}

async fn call(
    base: &str,
    method: reqwest::Method,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let mut request = reqwest::Client::new()
        .request(method, format!("{base}{path}"))
        .bearer_auth(TOKEN);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.expect("request");
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attached_sessions_are_served_until_they_shut_down() {
    let root = tempfile::tempdir().expect("root");
    let roots = ProjectRoots::new(&[root.path().to_path_buf()]).expect("roots");
    let server = Server::new(ServerOptions::new(TOKEN.into(), roots), None);
    let addr = server.serve().await.expect("serve");
    let base = format!("http://{addr}");

    // Attached through the transport contract: served, permission requests stay with the app.
    let plain = session(
        root.path(),
        vec![ScriptedTurn::text("attached answer")],
        |o| o,
    );
    plain
        .attach_transport(server.clone() as Arc<dyn Transport>)
        .expect("attach");
    assert_eq!(plain.attached_transports(), vec!["http".to_string()]);
    let id = plain.get_session_id();
    let (status, submitted) = call(
        &base,
        reqwest::Method::POST,
        &format!("/v1/sessions/{id}/prompts"),
        Some(json!({"text": "hi"})),
    )
    .await;
    assert_eq!(status, 202, "{submitted}");
    let prompt = submitted["prompt_id"].as_u64().expect("id");
    let (_, state) = call(
        &base,
        reqwest::Method::GET,
        &format!("/v1/sessions/{id}/prompts/{prompt}?wait_ms=10000"),
        None,
    )
    .await;
    assert_eq!(state["result"]["response"], "attached answer", "{state}");
    let (status, body) = call(
        &base,
        reqwest::Method::GET,
        &format!("/v1/sessions/{id}/permissions"),
        None,
    )
    .await;
    assert_eq!((status, body["pending"].clone()), (200, json!([])));
    // No factory: clients cannot open sessions on this server.
    let (status, _) = call(
        &base,
        reqwest::Method::POST,
        "/v1/sessions",
        Some(json!({})),
    )
    .await;
    assert_eq!(status, 403);

    // Hosted with the server's permission handler: requests are answered over HTTP.
    let handler = server.permission_handler();
    let asking = session(
        root.path(),
        vec![
            ScriptedTurn::text("").with_tool_call(
                "w1",
                "Write",
                json!({"file_path": "a.txt", "content": "A"}),
            ),
            ScriptedTurn::text("wrote it"),
        ],
        |o| o.with_permission_handler(handler.clone()),
    );
    server
        .host(asking.clone(), Some(handler.clone()))
        .expect("host");
    let asking_id = asking.get_session_id();
    let (_, submitted) = call(
        &base,
        reqwest::Method::POST,
        &format!("/v1/sessions/{asking_id}/prompts"),
        Some(json!({"text": "write"})),
    )
    .await;
    let prompt = submitted["prompt_id"].as_u64().expect("id");
    let mut request_id = None;
    for _ in 0..100 {
        let (_, body) = call(
            &base,
            reqwest::Method::GET,
            &format!("/v1/sessions/{asking_id}/permissions"),
            None,
        )
        .await;
        if let Some(id) = body["pending"][0]["request_id"].as_str() {
            request_id = Some(id.to_string());
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let request_id = request_id.expect("a pending permission request");
    let (status, _) = call(
        &base,
        reqwest::Method::POST,
        &format!("/v1/sessions/{asking_id}/permissions/{request_id}"),
        Some(json!({"type": "allow_once"})),
    )
    .await;
    assert_eq!(status, 200);
    let (_, state) = call(
        &base,
        reqwest::Method::GET,
        &format!("/v1/sessions/{asking_id}/prompts/{prompt}?wait_ms=10000"),
        None,
    )
    .await;
    assert_eq!(state["result"]["response"], "wrote it", "{state}");
    assert_eq!(
        std::fs::read_to_string(root.path().join("a.txt")).unwrap_or_default(),
        "A"
    );

    // Shutting a session down detaches it from the transport; the other stays.
    plain.shutdown(SessionEndReason::Other).await;
    assert!(plain.attached_transports().is_empty());
    let (status, _) = call(
        &base,
        reqwest::Method::GET,
        &format!("/v1/sessions/{id}"),
        None,
    )
    .await;
    assert_eq!(status, 404);
    assert_eq!(server.session_ids(), vec![asking_id.clone()]);
    assert!(plain
        .attach_transport(server.clone() as Arc<dyn Transport>)
        .is_err());

    // A session outside the roots is refused.
    let elsewhere = tempfile::tempdir().expect("elsewhere");
    let outside = session(elsewhere.path(), vec![], |o| o);
    let error = outside
        .attach_transport(server.clone() as Arc<dyn Transport>)
        .expect_err("outside the roots");
    assert!(
        error.message.contains("not inside a project root"),
        "{error}"
    );

    server.stop().await.expect("stop");
    assert!(asking.is_shut_down());
    assert!(reqwest::get(format!("{base}/v1/health")).await.is_err());
}
