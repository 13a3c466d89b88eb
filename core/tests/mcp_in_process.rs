//! In-process MCP servers defined by the host ([`InProcessMcpServer`]): their tools reach the
//! model as `mcp__<server>__<tool>` through the same MCP client path as external servers, so
//! permission rules, `mcp__.*` hook matchers, parallel read-only calls, status and the result
//! mapping apply. Each session is driven by a scripted model through mock-llm, so results are
//! checked where the model receives them.
#![cfg(unix)]

mod session_common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use robota::mcp::{InProcessMcpServer, InProcessMcpTool, McpServerStatus};
use robota::session::{Session, SessionError};
use serde_json::{json, Value};
use session_common::*;

/// A server `calc` with `add` (read-only, counts its calls), `divide` (fails on zero), `crash`
/// (panics), `chart` (answers an MCP result with an image) and `stats` (answers JSON).
fn calc_server(calls: Arc<AtomicUsize>) -> InProcessMcpServer {
    let number_pair = json!({
        "type": "object",
        "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
        "required": ["a", "b"]
    });
    let add = InProcessMcpTool::from_fn("add", "Adds two numbers", number_pair.clone(), {
        move |args: Value| {
            let calls = Arc::clone(&calls);
            async move {
                calls.fetch_add(1, Ordering::SeqCst);
                let sum = args["a"].as_f64().unwrap_or(0.0) + args["b"].as_f64().unwrap_or(0.0);
                Ok(json!(format!("sum = {sum}")))
            }
        }
    })
    .read_only(true);
    let divide =
        InProcessMcpTool::from_fn("divide", "Divides", number_pair, |args: Value| async move {
            let b = args["b"].as_f64().unwrap_or(0.0);
            if b == 0.0 {
                return Err("division by zero".to_string());
            }
            Ok(json!(args["a"].as_f64().unwrap_or(0.0) / b))
        });
    let crash = InProcessMcpTool::from_fn(
        "crash",
        "Panics",
        json!({"type": "object"}),
        |_args: Value| async move {
            if std::env::var_os("ROBOTA_NEVER_SET_VARIABLE").is_none() {
                panic!("handler bug");
            }
            Ok(Value::Null)
        },
    );
    let chart = InProcessMcpTool::from_fn(
        "chart",
        "Draws",
        json!({"type": "object"}),
        |_args: Value| async move {
            Ok(json!({"content": [
                {"type": "text", "text": "the chart:"},
                {"type": "image", "data": "iVBORw0K", "mimeType": "image/png"}
            ]}))
        },
    );
    let stats = InProcessMcpTool::from_fn(
        "stats",
        "Statistics",
        json!({"type": "object"}),
        |_args: Value| async move { Ok(json!({"mean": 2.5, "count": 4})) },
    )
    .with_annotations(json!({"readOnlyHint": true, "title": "Stats"}))
    .expect("annotations");
    InProcessMcpServer::new(
        "calc",
        Some("2.0.0".into()),
        vec![add, divide, crash, chart, stats],
    )
    .expect("server")
}

/// A session in `project` with the `calc` server, driven by a model playing `turns`; returns
/// it with the mock and the counter of `add`'s calls.
async fn calc_session(
    project: &Project,
    turns: Value,
) -> (robota::session::Session, Mock, Arc<AtomicUsize>) {
    let mock = Mock::start(json!({ "turns": turns })).await;
    let calls = Arc::new(AtomicUsize::new(0));
    let mut options = options(project, &mock, &Events::default());
    options
        .mcp_servers
        .push(calc_server(Arc::clone(&calls)).into_entry());
    (session(options), mock, calls)
}

#[tokio::test(flavor = "multi_thread")]
async fn host_tools_reach_the_model_with_hooks_errors_panics_images_and_json() {
    let project = Project::new();
    let hook_log = project.path("pre.jsonl");
    project.settings(
        ".claude/settings.json",
        json!({
            "permissions": {"allow": ["mcp__calc"]},
            "hooks": {"PreToolUse": [group(Some("mcp__.*"), vec![command(format!(
                "cat >> {}; echo >> {}", quote(&hook_log.display().to_string()),
                quote(&hook_log.display().to_string())))])]}
        }),
    );
    let (session, mock, calls) = calc_session(
        &project,
        json!([
            tool_turn("toolu_1", "mcp__calc__add", json!({"a": 2, "b": 3})),
            tool_turn("toolu_2", "mcp__calc__divide", json!({"a": 1, "b": 0})),
            tool_turn("toolu_3", "mcp__calc__crash", json!({})),
            tool_turn("toolu_4", "mcp__calc__chart", json!({})),
            tool_turn("toolu_5", "mcp__calc__stats", json!({})),
            tool_turn("toolu_6", "mcp__calc__add", json!({"a": 1, "b": 1})),
            text_turn("done"),
        ]),
    )
    .await;

    assert!(session.wait_for_mcp_servers(None).await);
    let servers = session.mcp_servers();
    assert_eq!(servers.len(), 1);
    assert_eq!(servers[0].status, McpServerStatus::Connected, "{servers:?}");
    assert_eq!(servers[0].transport, "sdk");
    assert_eq!(
        servers[0].tools,
        [
            "mcp__calc__add",
            "mcp__calc__divide",
            "mcp__calc__crash",
            "mcp__calc__chart",
            "mcp__calc__stats"
        ]
    );

    let outcome = session.run("compute").await.expect("run");
    assert_eq!(outcome.response, "done");
    // The host's schema reached the model under the mcp__ name.
    let bodies = mock.bodies();
    let add = bodies[0]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .find(|t| t["name"] == "mcp__calc__add")
        .expect("add offered to the model")
        .clone();
    assert_eq!(add["input_schema"]["required"], json!(["a", "b"]));
    assert_eq!(add["description"], "Adds two numbers");
    let result = |index: usize, id: &str| {
        mock.tool_results(index)
            .into_iter()
            .find(|(tool_use_id, _)| tool_use_id == id)
            .map(|(_, content)| content)
            .unwrap_or_else(|| panic!("no result for {id}"))
    };
    assert_eq!(result(1, "toolu_1"), "sum = 5");
    assert!(
        result(2, "toolu_2").contains("division by zero"),
        "{}",
        result(2, "toolu_2")
    );
    let panicked = result(3, "toolu_3");
    assert!(panicked.contains("panicked"), "{panicked}");
    assert!(panicked.contains("handler bug"), "{panicked}");
    let chart = result(4, "toolu_4");
    assert!(chart.contains("the chart:"), "{chart}");
    assert!(chart.contains("image/png"), "{chart}");
    let stats: Value = serde_json::from_str(&result(5, "toolu_5")).expect("JSON text");
    assert_eq!(stats, json!({"mean": 2.5, "count": 4}));
    assert_eq!(result(6, "toolu_6"), "sum = 2");
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    // The tool errors are marked as errors for the model.
    let is_error = |index: usize, id: &str| {
        mock.bodies()[index]["messages"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
            .find(|b| b["tool_use_id"] == id)
            .map(|b| b["is_error"] == true)
            .unwrap_or(false)
    };
    assert!(is_error(2, "toolu_2"));
    assert!(is_error(3, "toolu_3"));
    assert!(!is_error(1, "toolu_1"));

    // `mcp__.*` hook matchers see the host's tools with their input.
    let records = records(&hook_log);
    let seen: Vec<(&str, &Value)> = records
        .iter()
        .map(|r| (r["tool_name"].as_str().unwrap_or(""), &r["tool_input"]))
        .collect();
    assert_eq!(seen.len(), 6, "{records:?}");
    assert_eq!(seen[0], ("mcp__calc__add", &json!({"a": 2, "b": 3})));
    assert_eq!(seen[1].0, "mcp__calc__divide");
    session
        .shutdown(robota::hooks::SessionEndReason::Other)
        .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn deny_rules_and_blocking_hooks_keep_calls_from_the_handler() {
    let project = Project::new();
    project.settings(
        ".claude/settings.json",
        json!({
            "permissions": {"allow": ["mcp__calc"], "deny": ["mcp__calc__add"]},
            "hooks": {"PreToolUse": [group(Some("mcp__.*__divide"), vec![command(
                "echo 'divide is blocked here' >&2; exit 2".to_string())])]}
        }),
    );
    let (session, mock, calls) = calc_session(
        &project,
        json!([
            tool_turn("toolu_1", "mcp__calc__add", json!({"a": 2, "b": 3})),
            tool_turn("toolu_2", "mcp__calc__divide", json!({"a": 4, "b": 2})),
            tool_turn("toolu_3", "mcp__calc__stats", json!({})),
            text_turn("done"),
        ]),
    )
    .await;
    session.run("compute").await.expect("run");
    let offered = mock.tool_names(0);
    assert!(
        !offered.contains(&"mcp__calc__add".to_string()),
        "{offered:?}"
    );
    assert!(
        offered.contains(&"mcp__calc__divide".to_string()),
        "{offered:?}"
    );
    assert_eq!(calls.load(Ordering::SeqCst), 0, "the denied tool never ran");
    let denied = mock.tool_results(1);
    assert!(!denied[0].1.contains("sum"), "{denied:?}");
    let blocked = mock.tool_results(2);
    assert!(
        blocked
            .iter()
            .any(|(id, text)| id == "toolu_2" && text.contains("divide is blocked here")),
        "{blocked:?}"
    );
    assert!(mock.result_for("toolu_3").contains("mean"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_wide_deny_rule_hides_every_tool_of_the_server() {
    let project = Project::new();
    project.settings(
        ".claude/settings.json",
        json!({"permissions": {"deny": ["mcp__calc"]}}),
    );
    let (session, mock, _) = calc_session(&project, json!([text_turn("ok")])).await;
    session.run("hi").await.expect("run");
    let offered = mock.tool_names(0);
    assert!(
        !offered.iter().any(|name| name.starts_with("mcp__calc")),
        "{offered:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn read_only_tools_run_in_parallel() {
    let project = Project::new();
    project.settings(
        ".claude/settings.json",
        json!({"permissions": {"allow": ["mcp__slow"]}}),
    );
    // Each call waits until both are in the handler at once; alone it gives up after 5 s.
    let barrier = Arc::new(tokio::sync::Barrier::new(2));
    let wait = InProcessMcpTool::from_fn("wait", "Waits", json!({"type": "object"}), {
        move |_args: Value| {
            let barrier = Arc::clone(&barrier);
            async move {
                match tokio::time::timeout(Duration::from_secs(5), barrier.wait()).await {
                    Ok(_) => Ok(json!("together")),
                    Err(_) => Ok(json!("alone")),
                }
            }
        }
    })
    .read_only(true);
    let server = InProcessMcpServer::new("slow", None, vec![wait]).expect("server");
    let mock = Mock::start(json!({"turns": [
        {"tool_calls": [
            {"id": "toolu_1", "name": "mcp__slow__wait", "input": {}},
            {"id": "toolu_2", "name": "mcp__slow__wait", "input": {}}
        ]},
        text_turn("done"),
    ]}))
    .await;
    let events = Events::default();
    let mut options = options(&project, &mock, &events);
    options.mcp_servers.push(server.into_entry());
    let session = session(options);
    session.run("wait twice").await.expect("run");
    assert_eq!(mock.result_for("toolu_1"), "together");
    assert_eq!(mock.result_for("toolu_2"), "together");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_name_shared_with_a_configured_server_is_an_error() {
    let project = Project::new();
    project.settings(
        ".claude/settings.json",
        json!({"mcpServers": {"calc": {"command": "true"}}}),
    );
    let mock = Mock::start(json!({"turns": [text_turn("ok")]})).await;
    let events = Events::default();
    let mut options = options(&project, &mock, &events);
    options
        .mcp_servers
        .push(calc_server(Arc::default()).into_entry());
    let Err(error) = Session::new(options) else {
        panic!("a session with two servers named `calc` was created");
    };
    match &error {
        SessionError::InvalidMcpServer { name, message } => {
            assert_eq!(name, "calc");
            assert!(message.contains("settings.json"), "{message}");
        }
        other => panic!("unexpected error: {other}"),
    }
    // Two in-process servers of one name are refused too.
    let mut options = options_for(&project, &mock);
    options
        .mcp_servers
        .push(calc_server(Arc::default()).into_entry());
    let other = InProcessMcpServer::new("calc", None, Vec::new()).expect("server");
    options.mcp_servers.push(other.into_entry());
    assert!(matches!(
        Session::new(options),
        Err(SessionError::InvalidMcpServer { .. })
    ));
}

fn options_for(project: &Project, mock: &Mock) -> robota::session::SessionOptions {
    robota::session::SessionOptions::new(&project.root, mock.provider())
        .with_settings(robota::session::SessionSettings::with_home(&project.home))
}

#[test]
fn bad_servers_are_refused_with_the_reason() {
    let tool = |name: &str| {
        InProcessMcpTool::from_fn(
            name,
            "",
            json!({"type": "object"}),
            |_args: Value| async move { Ok(Value::Null) },
        )
    };
    let bad_name = InProcessMcpServer::new("a__b", None, Vec::new()).expect_err("refused");
    assert!(bad_name.contains("a__b"), "{bad_name}");
    let twice =
        InProcessMcpServer::new("s", None, vec![tool("t"), tool("t")]).expect_err("refused");
    assert!(twice.contains("`t`"), "{twice}");
    let annotations = tool("t")
        .with_annotations(json!({"readOnlyHint": "yes"}))
        .expect_err("refused");
    assert!(annotations.contains("annotations"), "{annotations}");
}
