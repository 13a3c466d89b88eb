//! Subagents at full strength in a real `InteractiveSession` against mock-llm: the `Task` tool
//! (Claude Code's name and input) in the foreground and the background; agent definitions'
//! `model` (aliases through the provider's model table, a caller's override, `inherit` after a
//! live model switch, an alias the provider has no model for as a clear error); a forked
//! skill's `model`; the project's CLAUDE.md/AGENTS.md in the subagent's system prompt; three
//! background subagents in parallel whose reports the parent reads with `BashOutput`; cancel,
//! the concurrency limit and shutdown for background subagents; `Task` never offered to a
//! subagent; agent definitions a host gives in code, above the files'. Requests are checked as
//! mock-llm recorded them.
#![cfg(unix)]

mod session_common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use robota::framework::agents::{
    AgentDefinition, AgentSource, SubagentRequest, FORK_WORKER_PROMPT_SUFFIX,
    SUBAGENT_PROMPT_SUFFIX,
};
use robota::framework::interactive::{
    InteractiveEventKind, InteractiveSession, InteractiveSessionOptions,
};
use robota::hooks::SessionEndReason;
use robota::session::SessionOptions;
use robota::tools::builtins::{LogStream, TaskKind, TaskStatus};
use serde_json::{json, Value};
use session_common::*;

const WAIT: Duration = Duration::from_secs(30);

fn interactive(options: SessionOptions) -> Arc<InteractiveSession> {
    InteractiveSession::new(InteractiveSessionOptions::new(options))
        .unwrap_or_else(|e| panic!("session: {e}"))
}

fn allow(project: &Project, rules: &[&str]) {
    project.settings(
        ".claude/settings.json",
        json!({"permissions": {"allow": rules}}),
    );
}

/// A `Task` call.
fn task_call(id: &str, agent: &str, prompt: &str, extra: Value) -> Value {
    let mut input = json!({"description": "a task", "prompt": prompt, "subagent_type": agent});
    if let (Value::Object(input), Value::Object(extra)) = (&mut input, extra) {
        input.extend(extra);
    }
    tool_turn(id, "Task", input)
}

/// The `model` of each recorded request.
fn models(mock: &Mock) -> Vec<String> {
    mock.bodies()
        .iter()
        .map(|b| b["model"].as_str().unwrap_or("").to_string())
        .collect()
}

const QUICK_AGENT: &str = "---\nname: quick\ndescription: Answers quickly\nmodel: haiku\n---\n\
                           QUICK-AGENT-BODY: answer in one line.\n";

async fn prompt(session: &InteractiveSession, text: &str) {
    session.submit(text, None, None).await.expect("submit");
    session.wait_idle().await;
}

#[tokio::test]
async fn the_agent_model_the_callers_override_and_a_live_switch_choose_the_childs_model() {
    let project = Project::new();
    project.write(".claude/agents/quick.md", QUICK_AGENT);
    project.write("CLAUDE.md", "NOTES-RULE-7: keep answers short.\n");
    project.write("AGENTS.md", "AGENTS-RULE-9: never touch vendor/.\n");
    allow(&project, &["Task"]);
    let mock = Mock::start(json!({"turns": [
        task_call("toolu_one", "quick", "look quickly", json!({})),
        text_turn("CHILD-ONE"),
        task_call("toolu_two", "quick", "look again", json!({"model": "opus"})),
        text_turn("CHILD-TWO"),
        text_turn("Both done."),
        task_call("toolu_three", "general-purpose", "after the switch", json!({})),
        text_turn("CHILD-THREE"),
        text_turn("Done again."),
    ]}))
    .await;
    let events = Events::default();
    let session = interactive(options(&project, &mock, &events));
    let parents = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&parents);
    let _subscription = session.subscribe(move |event| {
        if let InteractiveEventKind::BackgroundTaskEvent { data } = &event.kind {
            if data["event"] == "started" {
                seen.lock()
                    .expect("lock")
                    .push(data["parent_tool_use_id"].clone());
            }
        }
    });
    prompt(&session, "delegate").await;
    // Each subagent's `started` names the `Task` call that started it (a host draws the tree).
    assert_eq!(
        *parents.lock().expect("lock"),
        [json!("toolu_one"), json!("toolu_two")]
    );

    // The definition's alias maps to the provider's haiku; the caller's `opus` beats it; the
    // parent stays on the session's model.
    assert_eq!(
        models(&mock),
        [
            "claude-sonnet-4-5",
            "claude-haiku-4-5",
            "claude-sonnet-4-5",
            "claude-opus-4-6",
            "claude-sonnet-4-5"
        ]
    );
    assert_eq!(
        mock.tool_results(2),
        [("toolu_one".into(), "CHILD-ONE".into())]
    );
    assert_eq!(mock.result_for("toolu_two"), "CHILD-TWO");

    // The parent is offered `Task`; the subagent is not (no recursion).
    assert!(mock.tool_names(0).contains(&"Task".to_string()));
    let child_tools = mock.tool_names(1);
    assert!(
        !child_tools.contains(&"Task".to_string()),
        "{child_tools:?}"
    );
    assert!(!child_tools.is_empty());

    // The child's system prompt: the agent body, then the project's instruction files.
    let child_system = mock.system(1);
    let body = child_system.find("QUICK-AGENT-BODY").expect("agent body");
    let notes = child_system.find("NOTES-RULE-7").expect("CLAUDE.md");
    let agents = child_system.find("AGENTS-RULE-9").expect("AGENTS.md");
    assert!(body < notes && body < agents, "{child_system}");
    // Then the framework's subagent suffix (spec 000 `assembleSubagentPrompt`).
    let suffix = child_system
        .find(SUBAGENT_PROMPT_SUFFIX)
        .expect("subagent suffix");
    assert!(notes < suffix && agents < suffix, "{child_system}");
    assert!(!child_system.contains(FORK_WORKER_PROMPT_SUFFIX));
    assert!(mock.system(0).contains("NOTES-RULE-7"));

    // After a live model switch, a subagent without a model of its own inherits the new one.
    session
        .session()
        .switch_model("claude-opus-4-1")
        .expect("switch");
    prompt(&session, "delegate once more").await;
    assert_eq!(
        &models(&mock)[5..],
        ["claude-opus-4-1", "claude-opus-4-1", "claude-opus-4-1"]
    );
    assert_eq!(mock.result_for("toolu_three"), "CHILD-THREE");
}

#[tokio::test]
async fn host_agent_definitions_run_as_subagents_above_the_files() {
    let project = Project::new();
    // A file defines `quick` too: the host's definition wins.
    project.write(".claude/agents/quick.md", QUICK_AGENT);
    allow(&project, &["Task"]);
    let mock = Mock::start(json!({"turns": [
        task_call("toolu_one", "quick", "look", json!({})),
        text_turn("CHILD"),
        text_turn("Done."),
    ]}))
    .await;
    let events = Events::default();
    let mut options = InteractiveSessionOptions::new(options(&project, &mock, &events));
    options.agents.push(AgentDefinition {
        name: "quick".into(),
        description: "The host's quick agent".into(),
        system_prompt: "HOST-AGENT-PROMPT".into(),
        tools: Some(vec!["Read".into()]),
        disallowed_tools: Vec::new(),
        model: None,
        max_turns: None,
        permission_mode: None,
        source: AgentSource::Host,
    });
    let session = InteractiveSession::new(options).unwrap_or_else(|e| panic!("session: {e}"));
    prompt(&session, "delegate").await;
    let bodies = mock.bodies();
    assert!(
        bodies[0]["system"]
            .to_string()
            .contains("quick: The host's quick agent"),
        "{}",
        bodies[0]["system"]
    );
    let child_system = bodies[1]["system"].to_string();
    assert!(child_system.contains("HOST-AGENT-PROMPT"), "{child_system}");
    assert!(!child_system.contains("QUICK-AGENT-BODY"), "{child_system}");
    let tools: Vec<&str> = bodies[1]["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(tools, ["Read"]);
}

#[tokio::test]
async fn a_model_alias_the_provider_has_no_model_for_is_a_clear_error() {
    let project = Project::new();
    project.write(".claude/agents/quick.md", QUICK_AGENT);
    allow(&project, &["Task"]);
    let mock = Mock::start_wire(
        Wire::OpenAi,
        json!({"turns": [
            task_call("call_task", "quick", "look quickly", json!({})),
            text_turn("Could not delegate."),
        ]}),
    )
    .await;
    let events = Events::default();
    let session = interactive(options(&project, &mock, &events));
    prompt(&session, "delegate").await;
    // No child request was made; the model was told why.
    assert_eq!(models(&mock), ["gpt-4o", "gpt-4o"]);
    let result = mock.result_for("call_task");
    assert!(
        result.contains("`haiku`") && result.contains("openai"),
        "{result}"
    );

    // The host API refuses the same way, before anything runs.
    let error = session
        .run_subagent(SubagentRequest {
            agent_type: Some("general-purpose".into()),
            prompt: "x".into(),
            model: Some("sonnet".into()),
            ..Default::default()
        })
        .await
        .expect_err("no sonnet on openai");
    assert!(error.to_string().contains("`sonnet`"), "{error}");
    assert_eq!(mock.bodies().len(), 2);
}

#[tokio::test]
async fn a_forked_skill_runs_on_its_model_and_the_parent_stays_on_the_session_model() {
    let project = Project::new();
    project.write(
        ".claude/skills/fast-sum/SKILL.md",
        "---\ndescription: Summarize fast\ncontext: fork\nmodel: haiku\n---\nFAST-SUM $ARGUMENTS\n",
    );
    project.write(
        ".claude/skills/pinned/SKILL.md",
        "---\ndescription: Pinned model\ncontext: fork\nmodel: claude-opus-4-1\n---\nPINNED\n",
    );
    allow(&project, &["Skill(fast-sum)", "Skill(pinned)"]);
    let mock = Mock::start(json!({"turns": [
        tool_turn("toolu_fork", "Skill", json!({"skill": "fast-sum", "args": "the docs"})),
        text_turn("FORK-SUMMARY"),
        tool_turn("toolu_pin", "Skill", json!({"skill": "pinned"})),
        text_turn("PINNED-ANSWER"),
        text_turn("Summarized."),
        text_turn("Next answer."),
    ]}))
    .await;
    let events = Events::default();
    let session = interactive(options(&project, &mock, &events));
    prompt(&session, "summarize").await;
    prompt(&session, "and now?").await;
    assert_eq!(
        models(&mock),
        [
            "claude-sonnet-4-5",
            "claude-haiku-4-5",
            "claude-sonnet-4-5",
            "claude-opus-4-1",
            "claude-sonnet-4-5",
            "claude-sonnet-4-5"
        ]
    );
    assert!(mock.user_texts(1).join("\n").contains("FAST-SUM the docs"));
    // A forked skill's subagent is a fork worker (spec 000's suffix), not a plain subagent.
    assert!(mock.system(1).contains(FORK_WORKER_PROMPT_SUFFIX));
    assert!(!mock.system(1).contains(SUBAGENT_PROMPT_SUFFIX));
    assert_eq!(
        mock.tool_results(2),
        [("toolu_fork".into(), "FORK-SUMMARY".into())]
    );
}

/// A text turn streamed slowly: `chunks` deltas, `delay_ms` apart.
fn slow_text(text: &str, chunks: usize, delay_ms: u64) -> Value {
    let pieces: Vec<String> = (0..chunks)
        .map(|i| if i == 0 { text.to_string() } else { ".".into() })
        .collect();
    json!({"text": pieces, "chunk_delay_ms": delay_ms})
}

#[tokio::test]
async fn three_background_subagents_run_in_parallel_and_the_parent_reads_their_reports() {
    let project = Project::new();
    allow(&project, &["Task", "BashOutput"]);
    // Each slow turn takes about 9 × 300 ms; the parent's own follow-up takes one of them too.
    let mock = Mock::start(json!({"turns": [
        {"tool_calls": [
            {"id": "toolu_a", "name": "Task", "input": {"description": "a", "prompt": "explore a", "subagent_type": "Explore", "run_in_background": true}},
            {"id": "toolu_b", "name": "Task", "input": {"description": "b", "prompt": "explore b", "subagent_type": "Explore", "run_in_background": true}},
            {"id": "toolu_c", "name": "Task", "input": {"description": "c", "prompt": "explore c", "subagent_type": "general-purpose", "run_in_background": true}},
        ]},
        slow_text("REPORT-1", 4, 300),
        slow_text("REPORT-2", 4, 300),
        slow_text("REPORT-3", 4, 300),
        slow_text("REPORT-4", 4, 300),
        {"tool_calls": [
            {"id": "toolu_ra", "name": "BashOutput", "input": {"bash_id": "agent_1"}},
            {"id": "toolu_rb", "name": "BashOutput", "input": {"bash_id": "agent_2"}},
            {"id": "toolu_rc", "name": "BashOutput", "input": {"bash_id": "agent_3"}},
        ]},
        text_turn("Gathered all three."),
    ]}))
    .await;
    let events = Events::default();
    let session = interactive(options(&project, &mock, &events));
    let started = Instant::now();
    prompt(&session, "explore in parallel").await;
    // The Task calls returned at once with their task ids.
    let ids: Vec<String> = mock.tool_results(1).into_iter().map(|(_, c)| c).collect();
    assert_eq!(ids.len(), 3);
    for (n, result) in ids.iter().enumerate() {
        assert!(result.contains(&format!("agent_{}", n + 1)), "{result}");
    }
    let mut finished = Vec::new();
    for id in ["agent_1", "agent_2", "agent_3"] {
        let task = session.wait_background_task(id, WAIT).await.expect("task");
        assert_eq!(task.status, TaskStatus::Completed, "{task:?}");
        assert_eq!(task.kind, TaskKind::Agent);
        assert_eq!(task.origin.name.as_deref(), Some("Task"));
        finished.push(task);
    }
    let elapsed = started.elapsed();
    // Concurrent: all three ran within well under three slow turns back to back (~8 s).
    assert!(elapsed < Duration::from_millis(5500), "{elapsed:?}");
    let first_end = finished.iter().filter_map(|t| t.ended_at_ms).min().unwrap();
    let last_start = finished.iter().map(|t| t.created_at_ms).max().unwrap();
    assert!(last_start < first_end, "{finished:#?}");

    // The parent gathers the reports with BashOutput.
    prompt(&session, "collect the reports").await;
    let results: Vec<(String, String)> = mock
        .tool_results(mock.bodies().len() - 1)
        .into_iter()
        .filter(|(id, _)| id.starts_with("toolu_r"))
        .collect();
    assert_eq!(results.len(), 3, "{results:?}");
    let mut seen: Vec<String> = Vec::new();
    for (_, content) in &results {
        let report = (1..=4)
            .map(|n| format!("REPORT-{n}"))
            .find(|r| content.contains(r.as_str()))
            .unwrap_or_else(|| panic!("no report in {content}"));
        seen.push(report);
    }
    seen.sort();
    seen.dedup();
    assert_eq!(seen.len(), 3, "three different reports: {results:?}");
    // The `background` command lists them as completed subagent tasks.
    let listed = session
        .execute_command("background", "list")
        .await
        .expect("background list");
    assert!(listed.message.contains("agent_3"), "{}", listed.message);
    assert_eq!(listed.data.as_ref().unwrap()["tasks"][0]["kind"], "agent");
}

#[tokio::test]
async fn a_background_subagent_is_cancelled_the_limit_refuses_and_shutdown_stops_the_rest() {
    let project = Project::new();
    let mock = Mock::start(json!({"repeat": true, "turns": [slow_text("SLOW", 200, 100)]})).await;
    let events = Events::default();
    let mut opts = options(&project, &mock, &events);
    opts.builtin_tools.background.max_concurrent = 2;
    let session = interactive(opts);
    let request = |prompt: &str| SubagentRequest {
        agent_type: Some("Explore".into()),
        prompt: prompt.into(),
        ..Default::default()
    };
    let first = session
        .start_background_subagent(request("take your time"))
        .expect("first starts");
    assert_eq!(first.status, TaskStatus::Running);
    assert_eq!(first.kind, TaskKind::Agent);
    let second = session
        .start_background_subagent(request("take your time too"))
        .expect("second starts");
    // The limit: a clear refusal naming the running tasks.
    let refused = session
        .start_background_subagent(request("one too many"))
        .expect_err("over the limit");
    let message = refused.to_string();
    assert!(
        message.contains("Too many background tasks") && message.contains(&first.id),
        "{message}"
    );
    // Both children are talking to the model.
    for _ in 0..200 {
        if mock.bodies().len() >= 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(mock.bodies().len(), 2);

    let cancel_started = Instant::now();
    let cancelled = session
        .cancel_background_task(&first.id)
        .await
        .expect("cancel");
    assert!(cancel_started.elapsed() < Duration::from_secs(5));
    assert_eq!(cancelled.status, TaskStatus::Cancelled, "{cancelled:?}");
    let log = session
        .read_background_task_log(&first.id, LogStream::Stdout, 0, 64 * 1024)
        .expect("log");
    assert!(log.text.contains("interrupted"), "{}", log.text);

    // Shutdown stops the one still running and records how it ended.
    session.shutdown(SessionEndReason::Other).await;
    let second = session
        .get_background_task(&second.id)
        .expect("still listed");
    assert_eq!(second.status, TaskStatus::Cancelled, "{second:?}");
}

#[tokio::test]
async fn task_goes_through_the_permission_layer_by_agent_type() {
    let project = Project::new();
    project.settings(
        ".claude/settings.json",
        json!({"permissions": {"deny": ["Task(Explore)"]}}),
    );
    let mock = Mock::start(json!({"turns": [
        task_call("toolu_denied", "Explore", "look around", json!({})),
        task_call("toolu_allowed", "Plan", "plan it", json!({})),
        text_turn("PLAN-CHILD"),
        text_turn("Done."),
    ]}))
    .await;
    let events = Events::default();
    let session = interactive(options(&project, &mock, &events));
    prompt(&session, "delegate").await;
    // The denied call made no child request; the Plan subagent (needing no approval) ran.
    assert_eq!(mock.bodies().len(), 4);
    let denied = mock.tool_results(1);
    assert_eq!(denied.len(), 1);
    assert!(denied[0].1.to_lowercase().contains("denied"), "{denied:?}");
    assert!(mock.user_texts(2).join("\n").contains("plan it"));
    assert_eq!(mock.result_for("toolu_allowed"), "PLAN-CHILD");
}
