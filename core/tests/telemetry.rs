//! OpenTelemetry export against a real OTLP receiver (tests/otlp-receiver: the official
//! `opentelemetry-proto` services on tonic, and an HTTP/protobuf endpoint), over HTTP and gRPC:
//! a session against mock-llm with a tool call that runs, one that is denied, a command hook and
//! a compaction. Checks the span tree (prompt → chat + execute_tool + hook; the prompt and the
//! compaction under the host's `traceparent`, in its trace), the GenAI attributes, the metrics,
//! and that an unreachable collector does not hold shutdown past the export timeout.
#![cfg(all(unix, feature = "otel"))]

mod session_common;

use std::time::{Duration, Instant};

use otlp_receiver::{OtlpReceiver, ReceivedSpan};
use robota::hooks::SessionEndReason;
use robota::session::SessionError;
use robota::telemetry::{OtlpProtocol, Telemetry, TelemetryConfig, TraceParent};
use serde_json::json;
use session_common::*;

const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const HOST_SPAN_ID: &str = "00f067aa0ba902b7";

fn host_parent() -> TraceParent {
    TraceParent {
        traceparent: format!("00-{TRACE_ID}-{HOST_SPAN_ID}-01"),
        tracestate: Some("vendor=host".into()),
    }
}

fn one<'a>(spans: &'a [ReceivedSpan], name: &str) -> &'a ReceivedSpan {
    let found: Vec<&ReceivedSpan> = spans.iter().filter(|s| s.name == name).collect();
    assert_eq!(found.len(), 1, "one `{name}` span: {spans:#?}");
    found[0]
}

async fn traced_session_exports(protocol: OtlpProtocol) {
    let receiver = OtlpReceiver::start().await.expect("receiver");
    let endpoint = match protocol {
        OtlpProtocol::Http => receiver.http_endpoint(),
        OtlpProtocol::Grpc => receiver.grpc_endpoint(),
    };
    let project = Project::new();
    project.write("notes.txt", "hello from the notes\n");
    let hook = project.write("hooks/pass.sh", "#!/bin/sh\ncat > /dev/null\nexit 0\n");
    project.settings(
        ".claude/settings.json",
        json!({"hooks": {"PreToolUse": [group(Some("Read"), vec![command(format!("sh {}", quote(&hook.to_string_lossy())))])]}}),
    );
    let mock = Mock::start(json!({"turns": [
        {"tool_calls": [
            {"id": "toolu_read", "name": "Read", "input": {"file_path": "notes.txt"}},
            {"id": "toolu_bash", "name": "Bash", "input": {"command": "rm -rf build"}}
        ], "usage": {"input_tokens": 120, "output_tokens": 30}},
        {"text": "done", "usage": {"input_tokens": 200, "output_tokens": 12}},
        {"text": "SUMMARY", "usage": {"input_tokens": 90, "output_tokens": 8}}
    ]}))
    .await;
    let telemetry = Telemetry::start(&TelemetryConfig {
        endpoint: Some(endpoint),
        protocol: Some(protocol),
        service_name: Some("robota-telemetry-test".into()),
        ..TelemetryConfig::default()
    })
    .expect("exporters");
    let events = Events::default();
    let mut options = options(&project, &mock, &events);
    options.telemetry = Some(telemetry);
    options.trace_parent = Some(host_parent());
    let session = session(options);

    let outcome = session.run("read the notes").await.expect("run");
    assert_eq!(outcome.response, "done");
    session.compact(None).await.expect("compaction");
    session.shutdown(SessionEndReason::Other).await;

    let spans = receiver
        .wait_for_spans(Duration::from_secs(10), |spans| {
            spans.iter().any(|s| s.name == "compaction")
                && spans.iter().any(|s| s.name == "invoke_agent robota")
        })
        .await;
    for span in &spans {
        assert_eq!(
            span.trace_id, TRACE_ID,
            "every span is in the host's trace: {span:#?}"
        );
        assert_eq!(span.service_name.as_deref(), Some("robota-telemetry-test"));
        assert_eq!(
            span.transport,
            match protocol {
                OtlpProtocol::Http => otlp_receiver::Transport::Http,
                OtlpProtocol::Grpc => otlp_receiver::Transport::Grpc,
            }
        );
    }

    let prompt = one(&spans, "invoke_agent robota");
    assert_eq!(
        prompt.parent_span_id, HOST_SPAN_ID,
        "the host's span is the parent"
    );
    assert_eq!(prompt.trace_state, "vendor=host");
    assert_eq!(prompt.text("gen_ai.operation.name"), Some("invoke_agent"));
    assert_eq!(
        prompt.text("gen_ai.conversation.id"),
        Some(session.session_id())
    );
    assert_eq!(prompt.text("robota.stop_reason"), Some("completed"));
    assert_eq!(prompt.int("gen_ai.usage.input_tokens"), Some(320));
    assert_eq!(prompt.int("gen_ai.usage.output_tokens"), Some(42));
    assert_eq!(prompt.status_code, 0);

    let model = session.model().to_string();
    let chats: Vec<&ReceivedSpan> = spans
        .iter()
        .filter(|s| s.name == format!("chat {model}"))
        .collect();
    assert_eq!(chats.len(), 2, "two model calls in the prompt: {spans:#?}");
    for chat in &chats {
        assert_eq!(chat.parent_span_id, prompt.span_id);
        assert_eq!(chat.kind, 3, "model calls are client spans");
        assert_eq!(chat.text("gen_ai.operation.name"), Some("chat"));
        assert_eq!(chat.text("gen_ai.provider.name"), Some("anthropic"));
        assert_eq!(chat.text("gen_ai.system"), Some("anthropic"));
        assert_eq!(chat.text("gen_ai.request.model"), Some(model.as_str()));
        assert!(chat.text("gen_ai.response.model").is_some(), "{chat:#?}");
    }
    let mut usage: Vec<(i64, i64, serde_json::Value)> = chats
        .iter()
        .map(|c| {
            (
                c.int("gen_ai.usage.input_tokens").unwrap_or(-1),
                c.int("gen_ai.usage.output_tokens").unwrap_or(-1),
                c.attributes["gen_ai.response.finish_reasons"].clone(),
            )
        })
        .collect();
    usage.sort_by_key(|u| u.0);
    assert_eq!(
        usage,
        vec![
            (120, 30, json!(["tool_use"])),
            (200, 12, json!(["end_turn"]))
        ]
    );

    let read = one(&spans, "execute_tool Read");
    assert_eq!(read.parent_span_id, prompt.span_id);
    assert_eq!(read.text("gen_ai.tool.name"), Some("Read"));
    assert_eq!(read.text("gen_ai.tool.call.id"), Some("toolu_read"));
    assert_eq!(read.text("gen_ai.operation.name"), Some("execute_tool"));
    assert_eq!(read.status_code, 0, "the Read call succeeded");
    let bash = one(&spans, "execute_tool Bash");
    assert_eq!(bash.parent_span_id, prompt.span_id);
    assert_eq!(bash.text("gen_ai.tool.call.id"), Some("toolu_bash"));
    assert_eq!(
        bash.status_code, 2,
        "the denied call is an error: {bash:#?}"
    );
    assert!(!bash.status_message.is_empty());

    let hook = one(&spans, "hook PreToolUse");
    assert_eq!(hook.parent_span_id, prompt.span_id);
    assert_eq!(hook.text("robota.hook.event"), Some("PreToolUse"));
    assert_eq!(hook.text("robota.hook.matcher"), Some("Read"));
    assert_eq!(hook.text("robota.hook.type"), Some("command"));
    assert_eq!(hook.text("robota.hook.outcome"), Some("success"));
    assert_eq!(hook.int("robota.hook.exit_code"), Some(0));
    assert!(hook
        .text("robota.hook.command")
        .is_some_and(|c| c.contains("pass.sh")));
    assert!(hook.start_unix_nano <= hook.end_unix_nano);

    let compaction = one(&spans, "compaction");
    assert_eq!(
        compaction.parent_span_id, HOST_SPAN_ID,
        "outside a prompt: under the host's span"
    );
    assert_eq!(compaction.text("robota.compaction.trigger"), Some("manual"));
    assert!(compaction.int("robota.compaction.tokens_after").is_some());

    // Metrics arrive with the flush at shutdown.
    let metrics = receiver.metrics();
    let token_types: Vec<(String, f64)> = metrics
        .iter()
        .filter(|m| m.name == "gen_ai.client.token.usage")
        .map(|m| {
            (
                m.attributes["gen_ai.token.type"]
                    .as_str()
                    .unwrap_or("")
                    .to_string(),
                m.value,
            )
        })
        .collect();
    assert!(
        token_types.contains(&("input".into(), 320.0)),
        "{metrics:#?}"
    );
    assert!(
        token_types.contains(&("output".into(), 42.0)),
        "{metrics:#?}"
    );
    let durations = metrics
        .iter()
        .filter(|m| m.name == "gen_ai.client.operation.duration")
        .map(|m| m.count)
        .sum::<u64>();
    assert_eq!(durations, 2, "{metrics:#?}");
    let tools: Vec<&str> = metrics
        .iter()
        .filter(|m| m.name == "robota.tool.duration")
        .filter_map(|m| m.attributes["gen_ai.tool.name"].as_str())
        .collect();
    assert!(
        tools.contains(&"Read") && tools.contains(&"Bash"),
        "{tools:?}"
    );
    assert!(
        metrics
            .iter()
            .any(|m| m.name == "robota.cost" && m.value > 0.0),
        "the model's price is known: {metrics:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_exports_its_span_tree_over_http() {
    traced_session_exports(OtlpProtocol::Http).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_exports_its_span_tree_over_grpc() {
    traced_session_exports(OtlpProtocol::Grpc).await;
}

#[tokio::test]
async fn an_unreachable_collector_does_not_hold_shutdown_past_the_timeout() {
    // A collector that accepts connections and never answers.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("listener");
    let address = silent.local_addr().expect("address");
    let _hold = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((stream, _)) = silent.accept().await {
            held.push(stream);
        }
    });
    let project = Project::new();
    let mock = Mock::start(json!({"turns": [{"text": "hi"}]})).await;
    let telemetry = Telemetry::start(&TelemetryConfig {
        endpoint: Some(format!("http://{address}")),
        protocol: Some(OtlpProtocol::Http),
        timeout_ms: Some(500),
        ..TelemetryConfig::default()
    })
    .expect("exporters");
    let events = Events::default();
    let mut options = options(&project, &mock, &events);
    options.telemetry = Some(telemetry);
    let session = session(options);
    session.run("hello").await.expect("run");

    let started = Instant::now();
    session.shutdown(SessionEndReason::Other).await;
    let took = started.elapsed();
    // The flush waits the export timeout (0.5 s) and a little more at most; the bound leaves
    // room for a loaded machine.
    assert!(took < Duration::from_secs(4), "shutdown took {took:?}");
}

#[tokio::test]
async fn a_malformed_traceparent_is_refused() {
    let project = Project::new();
    let mock = Mock::start(json!({"turns": [{"text": "hi"}]})).await;
    let telemetry = Telemetry::start(&TelemetryConfig {
        endpoint: Some("http://127.0.0.1:9".into()),
        ..TelemetryConfig::default()
    })
    .expect("exporters");
    let events = Events::default();
    let mut options = options(&project, &mock, &events);
    options.telemetry = Some(telemetry);
    options.trace_parent = Some(TraceParent::new("not-a-traceparent"));
    let error = robota::session::Session::new(options).err();
    assert!(
        matches!(&error, Some(SessionError::InvalidTelemetry { message }) if message.contains("W3C")),
        "{error:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subagent_is_a_child_of_its_task_call() {
    use robota::framework::interactive::{InteractiveSession, InteractiveSessionOptions};
    let receiver = OtlpReceiver::start().await.expect("receiver");
    let project = Project::new();
    project.settings(
        ".claude/settings.json",
        json!({"permissions": {"allow": ["Task"]}}),
    );
    let mock = Mock::start(json!({"turns": [
        tool_turn("toolu_task", "Task", json!({"description": "a task", "prompt": "look around", "subagent_type": "general-purpose"})),
        {"text": "CHILD", "usage": {"input_tokens": 5, "output_tokens": 1}},
        text_turn("parent done"),
    ]}))
    .await;
    let events = Events::default();
    let mut options = options(&project, &mock, &events);
    options.telemetry = Some(
        Telemetry::start(&TelemetryConfig {
            endpoint: Some(receiver.http_endpoint()),
            ..TelemetryConfig::default()
        })
        .expect("exporters"),
    );
    options.trace_parent = Some(host_parent());
    let session = InteractiveSession::new(InteractiveSessionOptions::new(options))
        .unwrap_or_else(|e| panic!("session: {e}"));
    session
        .submit("delegate", None, None)
        .await
        .expect("submit");
    session.wait_idle().await;
    session.shutdown(SessionEndReason::Other).await;

    let spans = receiver
        .wait_for_spans(Duration::from_secs(10), |spans| {
            spans
                .iter()
                .any(|s| s.name == "invoke_agent general-purpose")
        })
        .await;
    let task = one(&spans, "execute_tool Task");
    let child = one(&spans, "invoke_agent general-purpose");
    assert_eq!(
        child.parent_span_id, task.span_id,
        "the subagent hangs under its Task call"
    );
    assert_eq!(child.trace_id, TRACE_ID);
    assert!(child.text("gen_ai.agent.id").is_some());
    let child_chats: Vec<&ReceivedSpan> = spans
        .iter()
        .filter(|s| s.name.starts_with("chat ") && s.parent_span_id == child.span_id)
        .collect();
    assert_eq!(
        child_chats.len(),
        1,
        "the subagent's model call: {spans:#?}"
    );
    assert_eq!(child_chats[0].int("gen_ai.usage.input_tokens"), Some(5));
}
