//! The binding-facing host adapters (`robota::api::host`): a [`HostFunction`] written here in
//! Rust stands in for a binding's callback, and each adapter is checked against its engine
//! port: answers, rejections, malformed answers and cancellation.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use robota::api::{
    async_trait, command_result_from_answer, hook_result_from_answer,
    permission_response_from_answer, tool_output_from_answer, CancellationToken, HostCall,
    HostCommand, HostFunction, HostHookSpec, HostPermissionHandler, HostProvider, HostProviderInfo,
    HostTool, HostToolSpec, ABORTED_TOOL_CONTENT,
};
use robota::framework::commands::SystemCommand;
use robota::hooks::{HookCallbackResult, HookEvent, OnHookFailure};
use robota::message::ProviderErrorKind;
use robota::provider::{Provider, ProviderRequest, StopReason, StreamEvent};
use robota::session::{PermissionHandler, PermissionResponse, SettingsDestination};
use robota::tools::{Tool, ToolContext};
use serde_json::{json, Value};

/// Answers every call with the same result after streaming `events`, recording requests.
struct Canned {
    answer: Result<Value, String>,
    events: Vec<Value>,
    delay: Duration,
    requests: Mutex<Vec<Value>>,
}

impl Canned {
    fn new(answer: Result<Value, String>) -> Arc<Self> {
        Arc::new(Canned {
            answer,
            events: Vec::new(),
            delay: Duration::ZERO,
            requests: Mutex::new(Vec::new()),
        })
    }
}

#[async_trait]
impl HostFunction for Canned {
    async fn call(&self, call: HostCall) -> Result<Value, String> {
        self.requests
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(call.request.clone());
        if let Some(stream) = &call.stream {
            for event in &self.events {
                stream.send(event.clone()).map_err(|e| e.to_string())?;
            }
        }
        if !self.delay.is_zero() {
            tokio::time::sleep(self.delay).await;
        }
        self.answer.clone()
    }
}

fn context(cancel: CancellationToken) -> ToolContext {
    ToolContext {
        tool_use_id: "t1".into(),
        cwd: std::env::temp_dir(),
        cancel,
    }
}

fn spec(read_only: bool) -> HostToolSpec {
    HostToolSpec::from_json_value(json!({
        "name": "lookup", "description": "Looks things up.", "read_only": read_only
    }))
    .expect("valid spec")
}

#[tokio::test]
async fn host_tool_maps_answers_and_requests() {
    let host = Canned::new(Ok(json!({"content": "sunny", "response": {"temp": 21}})));
    let tool = HostTool::new(spec(true), host.clone());
    assert_eq!(tool.name(), "lookup");
    assert!(tool.is_read_only());
    assert_eq!(tool.input_schema(), json!({"type": "object"}));
    let output = tool
        .execute(json!({"city": "Paris"}), context(CancellationToken::new()))
        .await;
    assert_eq!(output.content, "sunny");
    assert!(!output.is_error);
    assert_eq!(output.response, json!({"temp": 21}));
    let request = host.requests.lock().expect("lock")[0].clone();
    assert_eq!(request["tool"], "lookup");
    assert_eq!(request["input"], json!({"city": "Paris"}));
    assert_eq!(request["tool_use_id"], "t1");

    assert_eq!(tool_output_from_answer(Ok(json!("plain"))).content, "plain");
    let failed = tool_output_from_answer(Ok(json!({"content": "bad", "is_error": true})));
    assert!(failed.is_error);
    let rejected = tool_output_from_answer(Err("no network".into()));
    assert!(rejected.is_error);
    assert_eq!(rejected.content, "no network");
    // Other JSON values are data: their JSON text for the model, the value for hosts.
    let data = tool_output_from_answer(Ok(json!({"text": "x"})));
    assert!(!data.is_error);
    assert_eq!(data.content, r#"{"text":"x"}"#);
    assert_eq!(data.response, json!({"text": "x"}));
    assert_eq!(tool_output_from_answer(Ok(json!(5))).content, "5");
}

#[test]
fn tool_error_results_are_errors_in_every_spelling() {
    for answer in [
        json!({"content": "disk full", "is_error": true}),
        json!({"content": "disk full", "isError": true}),
        json!({"content": [{"type": "text", "text": "disk full"}], "isError": true}),
    ] {
        let output = tool_output_from_answer(Ok(answer.clone()));
        assert!(output.is_error, "{answer}");
        assert_eq!(output.content, "disk full", "{answer}");
    }
    let ok = tool_output_from_answer(Ok(json!({"content": "fine", "is_error": false})));
    assert!(!ok.is_error);
    let odd = tool_output_from_answer(Ok(json!({"content": "x", "is_error": "yes"})));
    assert!(odd.is_error);
    assert!(odd.content.contains("`is_error`"), "{}", odd.content);
    assert_eq!(tool_output_from_answer(Ok(Value::Null)).content, "");
}

#[tokio::test]
async fn host_tool_reports_aborted_when_cancelled() {
    let host = Arc::new(Canned {
        answer: Ok(json!("too late")),
        events: Vec::new(),
        delay: Duration::from_secs(30),
        requests: Mutex::new(Vec::new()),
    });
    let tool = HostTool::new(spec(false), host);
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(20)).await;
        trigger.cancel();
    });
    let output = tokio::time::timeout(
        Duration::from_secs(5),
        tool.execute(json!({}), context(cancel)),
    )
    .await
    .expect("cancellation ends the call");
    assert!(output.is_error);
    assert_eq!(output.content, ABORTED_TOOL_CONTENT);
}

#[test]
fn tool_specs_are_validated() {
    assert!(HostToolSpec::from_json_value(json!({"name": ""})).is_err());
    assert!(HostToolSpec::from_json_value(json!({"name": "x", "input_schema": 1})).is_err());
    assert!(HostToolSpec::from_json_value(json!({"name": "x", "bogus": 1})).is_err());
    assert!(HostToolSpec::from_json_value(json!({"description": "x"})).is_err());
    let message = |spec: Value| {
        HostToolSpec::from_json_value(spec)
            .expect_err("invalid spec")
            .message
    };
    assert!(message(json!({"name": "get weather"})).contains("invalid tool name `get weather`"));
    assert!(message(json!({"name": "x".repeat(65)})).contains("1-64 letters"));
    assert!(
        message(json!({"name": "t", "input_schema": {"type": "string"}}))
            .contains("must describe an object")
    );
    assert!(
        message(json!({"name": "t", "input_schema": {"type": "object", "properties": []}}))
            .contains("`input_schema.properties`")
    );
    assert!(message(json!({"name": "t", "input_schema": {
        "type": "object", "properties": {"a": {"type": "string"}}, "required": ["b"]
    }}))
    .contains("names `b`"));
    // The field is named, in words, not as a Rust type.
    let wrong_type = message(json!({"name": "t", "read_only": "yes"}));
    assert!(wrong_type.contains("`read_only`"), "{wrong_type}");
    assert!(
        wrong_type.contains("expected true or false"),
        "{wrong_type}"
    );
    let spec = HostToolSpec::from_json_value(json!({"name": "Read", "replaces_builtin": true}))
        .expect("a replacement is declared");
    assert!(spec.replaces_builtin);
}

#[tokio::test]
async fn permission_handler_parses_answers() {
    assert_eq!(
        permission_response_from_answer(Ok(json!({"type": "allow_once"}))),
        PermissionResponse::AllowOnce
    );
    assert_eq!(
        permission_response_from_answer(Ok(
            json!({"type": "allow_always", "destination": "projectSettings"})
        )),
        PermissionResponse::allow_always(SettingsDestination::ProjectSettings)
    );
    assert_eq!(
        permission_response_from_answer(Err("away".into())),
        PermissionResponse::deny("away")
    );
    assert!(matches!(
        permission_response_from_answer(Ok(json!({"type": "maybe"}))),
        PermissionResponse::Deny { .. }
    ));

    let host = Canned::new(Ok(json!({"type": "allow_session", "rules": ["lookup"]})));
    let handler = HostPermissionHandler::new(host.clone());
    let request: robota::session::PermissionRequest = serde_json::from_value(json!({
        "request_id": "perm_1", "tool_name": "lookup", "input": {}, "tool_use_id": "t1",
        "reason": "no rule allows it", "basis": "needs_approval", "suggested_rules": ["lookup"],
        "settings_targets": [], "permission_mode": "default"
    }))
    .expect("a request");
    let answer = handler
        .request_permission(request, CancellationToken::new())
        .await;
    assert_eq!(
        answer,
        PermissionResponse::AllowSession {
            rules: vec!["lookup".into()]
        }
    );
    assert_eq!(
        host.requests.lock().expect("lock")[0]["tool_name"],
        "lookup"
    );
}

#[test]
fn hook_results_and_specs() {
    assert_eq!(
        hook_result_from_answer(Ok(json!({"type": "block", "reason": "no"}))),
        HookCallbackResult::block("no")
    );
    assert!(matches!(
        hook_result_from_answer(Ok(json!({"type": "nonsense"}))),
        HookCallbackResult::Error { .. }
    ));
    assert_eq!(
        hook_result_from_answer(Err("failed".into())),
        HookCallbackResult::Error {
            message: "failed".into()
        }
    );
    let spec = HostHookSpec::from_json_value(
        json!({"event": "PreToolUse", "matcher": "Bash", "timeout_ms": 500}),
    )
    .expect("valid hook spec");
    let registration = spec.registration(Canned::new(Ok(json!({"type": "continue"}))));
    assert_eq!(registration.event, HookEvent::PreToolUse);
    assert_eq!(registration.matcher, "Bash");
    assert_eq!(registration.timeout, Some(Duration::from_millis(500)));
    assert_eq!(registration.callback.name(), "host");
    let named = HostHookSpec::from_json_value(json!({"event": "Stop", "name": "audit"}))
        .expect("valid named hook spec")
        .registration(Canned::new(Ok(json!({"type": "continue"}))));
    assert_eq!(named.callback.name(), "audit");
    assert!(HostHookSpec::from_json_value(json!({"event": "Nope"})).is_err());
    let allow = HostHookSpec::from_json_value(
        json!({"event": "PreToolUse", "name": "guard", "on_failure": "allow"}),
    )
    .expect("allow is valid everywhere");
    assert_eq!(allow.on_failure, Some(OnHookFailure::Allow));
    assert_eq!(
        allow.registration(Canned::new(Ok(Value::Null))).on_failure,
        Some(OnHookFailure::Allow)
    );
    let refused = HostHookSpec::from_json_value(
        json!({"event": "PostToolUse", "name": "audit", "on_failure": "block"}),
    )
    .expect_err("nothing to block on PostToolUse");
    assert!(
        refused.message.contains("hook `audit`"),
        "{}",
        refused.message
    );
    assert!(refused
        .message
        .contains("PreToolUse, PermissionRequest and UserPromptSubmit"));
    let typo = HostHookSpec::from_json_value(json!({"event": "PreToolUse", "on_failure": "deny"}))
        .expect_err("unknown policy");
    assert!(typo.message.contains("`on_failure`"), "{}", typo.message);
}

#[test]
fn hooks_answer_claude_code_json_and_unrecognised_answers_are_errors() {
    let block = hook_result_from_answer(Ok(json!({"decision": "block", "reason": "no rm"})));
    let HookCallbackResult::Output { output } = block else {
        panic!("Claude Code JSON is output: {block:?}");
    };
    assert_eq!(output.decision.as_deref(), Some("block"));
    assert!(matches!(
        hook_result_from_answer(Ok(json!({"hookSpecificOutput": {
            "hookEventName": "PreToolUse", "permissionDecision": "deny",
            "permissionDecisionReason": "no"
        }}))),
        HookCallbackResult::Output { .. }
    ));
    assert_eq!(
        hook_result_from_answer(Ok(Value::Null)),
        HookCallbackResult::Continue
    );
    assert_eq!(
        hook_result_from_answer(Ok(json!("context"))),
        HookCallbackResult::Text {
            text: "context".into()
        }
    );
    for (answer, says) in [
        (json!({"decison": "block"}), "unknown field `decison`"),
        (json!({"decision": "deny"}), "`decision: \"deny\"`"),
        (json!(42), "returned a number `42`"),
        (json!(["block"]), "returned a list"),
        (
            json!({"hookSpecificOutput": {"permissionDecison": "deny"}}),
            "unknown hookSpecificOutput field `permissionDecison`",
        ),
        (
            json!({"type": "output", "output": {"decison": "block"}}),
            "unknown field `decison`",
        ),
    ] {
        match hook_result_from_answer(Ok(answer.clone())) {
            HookCallbackResult::Error { message } => {
                assert!(message.contains(says), "{answer}: {message}")
            }
            other => panic!("{answer} should be an error, not {other:?}"),
        }
    }
}

#[test]
fn command_results_and_descriptors() {
    let ok = command_result_from_answer(Ok(json!({"message": "done"})));
    assert!(ok.success);
    assert_eq!(ok.message, "done");
    let text = command_result_from_answer(Ok(json!("hi")));
    assert!(text.success);
    let failed = command_result_from_answer(Err("broken".into()));
    assert!(!failed.success);
    assert!(!command_result_from_answer(Ok(json!([1]))).success);
    let host = Canned::new(Ok(json!("x")));
    let command = HostCommand::from_json_value(
        json!({"name": "greet", "description": "Greets.", "aliases": ["hi"]}),
        host.clone(),
    )
    .expect("valid descriptor");
    assert_eq!(command.descriptor().aliases, vec!["hi".to_string()]);
    assert!(
        HostCommand::from_json_value(json!({"name": "/x", "description": "d"}), host.clone())
            .is_err()
    );
    assert!(HostCommand::from_json_value(json!({"name": "x"}), host.clone()).is_err());
    let module = HostCommand::module(vec![Arc::new(command)]);
    assert_eq!(module.name, "host");
    assert_eq!(module.descriptors().len(), 1);
}

#[tokio::test]
async fn host_provider_assembles_streamed_events() {
    let host = Arc::new(Canned {
        answer: Ok(json!({"usage": {"input_tokens": 7, "output_tokens": 3}, "text": "!"})),
        events: vec![
            json!({"type": "text_delta", "text": "Hel"}),
            json!({"type": "text_delta", "text": "lo"}),
            json!({"type": "tool_call", "id": "c1", "name": "lookup", "input": {"q": 1}}),
        ],
        delay: Duration::ZERO,
        requests: Mutex::new(Vec::new()),
    });
    let provider = HostProvider::new(
        HostProviderInfo::from_json_value(json!({"name": "mine", "model": "m-1"}))
            .expect("valid info"),
        host.clone(),
    );
    assert_eq!(provider.name(), "mine");
    assert_eq!(provider.model(), "m-1");
    let seen = Mutex::new(Vec::new());
    let sink = |event: StreamEvent| seen.lock().expect("lock").push(event);
    let response = provider
        .stream(
            &ProviderRequest::default(),
            &sink,
            &CancellationToken::new(),
        )
        .await
        .expect("a response");
    assert_eq!(response.text, "Hello!");
    assert_eq!(response.tool_calls.len(), 1);
    assert_eq!(response.tool_calls[0].arguments, r#"{"q":1}"#);
    assert_eq!(response.stop_reason, StopReason::ToolUse);
    assert_eq!(response.usage.input_tokens, 7);
    assert_eq!(response.model, "m-1");
    let seen = seen.lock().expect("lock");
    assert!(matches!(&seen[0], StreamEvent::TextDelta(t) if t == "Hel"));
    assert!(seen
        .iter()
        .any(|e| matches!(e, StreamEvent::ToolCallStart { name, .. } if name == "lookup")));
}

#[tokio::test]
async fn host_provider_reports_retries() {
    let host = Arc::new(Canned {
        answer: Ok(json!({"text": "ok"})),
        events: vec![
            json!({"type": "text_delta", "text": "lost "}),
            json!({
                "type": "retry", "attempt": 1, "max_attempts": 3, "delay_ms": 250,
                "error": {"kind": "rate_limit", "message": "slow down"}
            }),
        ],
        delay: Duration::ZERO,
        requests: Mutex::new(Vec::new()),
    });
    let provider = HostProvider::new(
        HostProviderInfo::from_json_value(json!({"name": "mine"})).expect("valid info"),
        host,
    );
    let seen = Mutex::new(Vec::new());
    let sink = |event: StreamEvent| seen.lock().expect("lock").push(event);
    let response = provider
        .stream(
            &ProviderRequest::default(),
            &sink,
            &CancellationToken::new(),
        )
        .await
        .expect("a response");
    assert_eq!(response.text, "ok");
    let seen = seen.lock().expect("lock");
    assert!(matches!(
        &seen[1],
        StreamEvent::Retry { attempt: 1, max_attempts: 3, delay, error }
            if *delay == Duration::from_millis(250)
                && error.kind == ProviderErrorKind::RateLimit
                && error.provider == "mine"
                && error.message == "slow down"
    ));
}

#[tokio::test]
async fn host_provider_errors_and_cancellation() {
    let sink = |_event: StreamEvent| {};
    let rejected = HostProvider::new(
        HostProviderInfo::default(),
        Canned::new(Err("offline".into())),
    );
    let error = rejected
        .stream(
            &ProviderRequest::default(),
            &sink,
            &CancellationToken::new(),
        )
        .await
        .expect_err("a rejection is an error");
    assert_eq!(error.message, "offline");
    let limited = HostProvider::new(
        HostProviderInfo::default(),
        Canned::new(Ok(
            json!({"error": {"kind": "rate_limit", "message": "slow down"}}),
        )),
    );
    let error = limited
        .stream(
            &ProviderRequest::default(),
            &sink,
            &CancellationToken::new(),
        )
        .await
        .expect_err("an error answer is an error");
    assert_eq!(error.kind, ProviderErrorKind::RateLimit);
    let invalid = HostProvider::new(HostProviderInfo::default(), Canned::new(Ok(json!(3))));
    assert!(invalid
        .stream(
            &ProviderRequest::default(),
            &sink,
            &CancellationToken::new()
        )
        .await
        .is_err());

    let slow = HostProvider::new(
        HostProviderInfo::default(),
        Arc::new(Canned {
            answer: Ok(Value::Null),
            events: vec![json!({"type": "text_delta", "text": "partial"})],
            delay: Duration::from_secs(30),
            requests: Mutex::new(Vec::new()),
        }),
    );
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(20)).await;
        trigger.cancel();
    });
    let response = tokio::time::timeout(
        Duration::from_secs(5),
        slow.stream(&ProviderRequest::default(), &sink, &cancel),
    )
    .await
    .expect("cancellation ends the call")
    .expect("an aborted response");
    assert_eq!(response.stop_reason, StopReason::Aborted);
    assert_eq!(response.text, "partial");
    assert!(HostProviderInfo::from_json_value(json!({"bogus": 1})).is_err());
}

#[tokio::test]
async fn host_tools_may_not_clash_with_each_other_or_silently_shadow_a_built_in() {
    let dir = tempfile::tempdir().expect("tempdir");
    let open = |specs: Vec<Value>| {
        let provider =
            robota::api::ProviderConfig::from_json_value(json!({"type": "scripted", "turns": []}))
                .expect("provider")
                .build()
                .expect("built");
        let mut options = robota::api::SessionConfig::from_json_value(json!({
            "cwd": dir.path(), "load_project_context": false
        }))
        .expect("config")
        .into_session_options(provider)
        .expect("options");
        for spec in specs {
            let spec = HostToolSpec::from_json_value(spec).expect("spec");
            options
                .extra_tools
                .push(Arc::new(HostTool::new(spec, Canned::new(Ok(json!("x"))))));
        }
        robota::session::Session::new(options).map(|_| ())
    };
    let shadow = open(vec![json!({"name": "Read"})]).expect_err("shadows Read");
    assert!(shadow.to_string().contains("tool `Read`"), "{shadow}");
    assert!(shadow.to_string().contains("built-in"), "{shadow}");
    assert_eq!(
        robota::api::ApiError::from(shadow).kind,
        robota::api::ApiErrorKind::InvalidArgument
    );
    let twice =
        open(vec![json!({"name": "lookup"}), json!({"name": "lookup"})]).expect_err("duplicate");
    assert!(
        twice.to_string().contains("two tools have this name"),
        "{twice}"
    );
    open(vec![json!({"name": "Read", "replaces_builtin": true})]).expect("declared replacement");
    open(vec![json!({"name": "lookup"})]).expect("no clash");
}

#[test]
fn provider_configs_name_the_bad_field() {
    use robota::api::ProviderConfig;
    let message = |config: Value| {
        ProviderConfig::from_json_value(config)
            .expect_err("invalid")
            .message
    };
    for base_url in ["localhost:11434/v1", "api.example.com", "ftp://x.example"] {
        let m = message(json!({"type": "openai", "model": "m", "base_url": base_url}));
        assert!(m.contains("`base_url`"), "{m}");
        assert!(m.contains("http://") || m.contains("https://"), "{m}");
    }
    ProviderConfig::from_json_value(
        json!({"type": "openai", "model": "m", "base_url": "http://localhost:11434/v1"}),
    )
    .expect("a URL with a scheme");
    let m = message(json!({"type": "anthropic", "model": "m", "max_tokens": -5}));
    assert!(m.contains("`max_tokens`"), "{m}");
    assert!(!m.contains("u32"), "{m}");
    let m = message(json!({"type": "scripted", "turns": [{"text": 5}]}));
    assert!(m.contains("`turns[0]"), "{m}");
    let m = message(json!({"type": "anthropic", "model": ""}));
    assert!(m.contains("`model`"), "{m}");
}

#[test]
fn session_configs_name_the_bad_field_in_words() {
    let error = robota::api::SessionConfig::from_json_value(json!({"max_turns": -1}))
        .expect_err("negative");
    assert!(error.message.contains("`max_turns`"), "{}", error.message);
    assert!(!error.message.contains("u32"), "{}", error.message);
}
