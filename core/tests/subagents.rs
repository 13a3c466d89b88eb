//! Subagents in a real `InteractiveSession`: the model calls `robota_command_agent` and gets the
//! subagent's answer as the tool result; SubagentStart/SubagentStop hooks (real bash and python
//! scripts) see Claude Code's stdin fields; a SubagentStop exit 2 makes the subagent continue;
//! agent definitions load from `.claude/agents` (project and fake home) and a malformed one is an
//! error naming the file; worktree isolation in a real `git init` repository (default creation,
//! a WorktreeCreate hook replacing it, a failing hook, a directory that is not a repository) with
//! WorktreeCreate/WorktreeRemove hooks; an abort during a subagent. The model is mock-llm over
//! loopback (the parent and its subagent share the script, in call order).
#![cfg(unix)]

mod session_common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use robota::framework::agents::load_agent_definitions;
use robota::framework::interactive::{
    InteractiveEvent, InteractiveEventKind, InteractiveSession, InteractiveSessionOptions,
};
use robota::hooks::{FnHookCallback, HookCallbackResult, HookEvent};
use robota::message::ContentBlock;
use robota::permissions::PermissionMode;
use robota::session::{SessionOptions, SessionPersistence};
use serde_json::{json, Value};
use session_common::*;

const WAIT: Duration = Duration::from_secs(30);

/// A script of `tests/fixtures/subagents/`, shell-quoted, with arguments.
fn sub_fixture(name: &str, args: &[&str]) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/subagents")
        .join(name);
    let mut command = quote(&path.to_string_lossy());
    for arg in args {
        command.push(' ');
        command.push_str(&quote(arg));
    }
    command
}

/// The model calling the agent command.
fn agent_call(id: &str, args: &str) -> Value {
    tool_turn(id, "robota_command_agent", json!({ "args": args }))
}

/// Settings allowing the agent command (and `extra` rules), with `hooks`.
fn settings(project: &Project, allow: &[&str], hooks: Value) {
    let mut rules = vec!["robota_command_agent"];
    rules.extend_from_slice(allow);
    project.settings(
        ".claude/settings.json",
        json!({"permissions": {"allow": rules}, "hooks": hooks}),
    );
}

fn interactive(options: SessionOptions) -> Arc<InteractiveSession> {
    InteractiveSession::new(InteractiveSessionOptions::new(options))
        .unwrap_or_else(|e| panic!("session: {e}"))
}

/// The `background_task_event` payloads among `events`.
fn background(events: &[InteractiveEvent]) -> Vec<Value> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            InteractiveEventKind::BackgroundTaskEvent { data } => Some(data.clone()),
            _ => None,
        })
        .collect()
}

fn by_event(records: &[Value], event: &str) -> Vec<Value> {
    records
        .iter()
        .filter(|r| r["hook_event_name"] == event)
        .cloned()
        .collect()
}

/// Every `tool_use` in `session`'s history has exactly one `tool_result`.
fn assert_history_consistent(session: &InteractiveSession) {
    let mut uses = Vec::new();
    let mut results = Vec::new();
    for message in session.get_messages() {
        for block in &message.content {
            match block {
                ContentBlock::ToolUse { id, .. } => uses.push(id.clone()),
                ContentBlock::ToolResult { tool_use_id, .. } => results.push(tool_use_id.clone()),
                _ => {}
            }
        }
    }
    uses.sort();
    results.sort();
    assert_eq!(uses, results, "every tool call has one result");
}

fn git(dir: &Path, args: &[&str]) -> String {
    let output = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .output()
        .expect("git runs");
    assert!(
        output.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).trim().to_string()
}

/// Makes the project a git repository with one commit.
fn git_init(project: &Project) {
    git(&project.root, &["init", "-q"]);
    project.write("README.md", "hello\n");
    git(&project.root, &["add", "README.md"]);
    git(&project.root, &["commit", "-q", "-m", "initial"]);
}

/// The worktree directories under `.robota/worktrees` (the `.gitignore` aside).
fn worktree_dirs(project: &Project) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(project.path(".robota/worktrees"))
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.is_dir())
                .collect()
        })
        .unwrap_or_default();
    dirs.sort();
    dirs
}

#[tokio::test]
async fn the_model_runs_a_subagent_and_gets_its_answer() {
    let project = Project::new();
    let log = project.scratch("log").join("hooks.jsonl");
    let log_s = log.to_string_lossy().to_string();
    let record = || command(fixture("record.py", &[&log_s]));
    let record_sh = || command(fixture("record.sh", &[&log_s]));
    let context = json!({"hookSpecificOutput": {
        "hookEventName": "SubagentStart",
        "additionalContext": "The number is in the basement."
    }})
    .to_string();
    settings(
        &project,
        &["Bash(echo *)"],
        json!({
            "SubagentStart": [group(Some("Explore"), vec![command(fixture("record.py", &[&log_s, &context]))])],
            "SubagentStop": [
                group(Some("Explore"), vec![record_sh()]),
                group(Some("general-purpose"), vec![command(sub_fixture("fail.sh", &["not for Explore"]))]),
            ],
            "PreToolUse": [group(None, vec![record()])],
        }),
    );
    let mock = Mock::start(json!({"turns": [
        agent_call("toolu_agent", "Explore find the magic number"),
        tool_turn("toolu_child", "Bash", json!({"command": "echo 42"})),
        text_turn("The magic number is 42."),
        text_turn("The subagent says 42."),
    ]}))
    .await;
    let events = Events::default();
    let session = interactive(
        options(&project, &mock, &events).with_persistence(SessionPersistence::Project),
    );
    let sub = session.subscribe_pull();
    session
        .submit("find the number", None, None)
        .await
        .expect("submit");
    let seen = until(&sub, "complete").await;
    session.wait_idle().await;

    // The subagent's answer is the tool result the parent model got.
    let bodies = mock.bodies();
    assert_eq!(bodies.len(), 4, "parent, subagent ×2, parent");
    let result = mock.result_for("toolu_agent");
    assert!(result.starts_with("The magic number is 42."), "{result}");

    // The parent's system prompt lists the agents; the subagent's request is its own.
    let parent_system = bodies[0]["system"].to_string();
    assert!(parent_system.contains("# Subagents"), "{parent_system}");
    assert!(parent_system.contains("- Explore:"), "{parent_system}");
    assert!(mock
        .tool_names(0)
        .contains(&"robota_command_agent".to_string()));
    let child_system = bodies[1]["system"].to_string();
    assert!(
        child_system.contains("You explore a codebase"),
        "{child_system}"
    );
    // SubagentStart's additionalContext went to the subagent with its prompt.
    let child_prompt = mock.user_texts(1).join("\n");
    assert!(
        child_prompt.contains("find the magic number"),
        "{child_prompt}"
    );
    assert!(
        child_prompt.contains("The number is in the basement."),
        "{child_prompt}"
    );
    assert!(!bodies[0].to_string().contains("basement"));
    let child_tools = mock.tool_names(1);
    assert!(child_tools.contains(&"Bash".to_string()), "{child_tools:?}");
    for withheld in [
        "Write",
        "Edit",
        "robota_command_agent",
        "robota_command_compact",
    ] {
        assert!(
            !child_tools.contains(&withheld.to_string()),
            "{withheld} in {child_tools:?}"
        );
    }
    let child_results = mock.tool_results(2);
    assert_eq!(child_results.len(), 1);
    assert!(child_results[0].1.contains("42"), "{child_results:?}");

    // Hooks: SubagentStart and SubagentStop with the agent's id and type; the subagent's tool
    // calls carry them too, the parent's do not.
    let records = records(&log);
    let start = by_event(&records, "SubagentStart");
    assert_eq!(start.len(), 1, "{records:#?}");
    let start = &start[0];
    let agent_id = start["agent_id"].as_str().expect("agent_id").to_string();
    assert!(agent_id.starts_with("agent-"), "{start}");
    assert_eq!(start["agent_type"], "Explore");
    assert_eq!(start["session_id"], session.get_session_id());
    assert_eq!(start["cwd"], project.root.to_string_lossy().as_ref());
    assert!(start["transcript_path"].is_string(), "{start}");

    let stop = by_event(&records, "SubagentStop");
    assert_eq!(stop.len(), 1, "{records:#?}");
    let stop = &stop[0];
    assert_eq!(stop["agent_id"], agent_id.as_str());
    assert_eq!(stop["agent_type"], "Explore");
    assert_eq!(stop["stop_hook_active"], false);
    assert_eq!(stop["last_assistant_message"], "The magic number is 42.");
    let transcript = PathBuf::from(stop["agent_transcript_path"].as_str().expect("path"));
    let session_log = PathBuf::from(stop["transcript_path"].as_str().expect("log"));
    assert_eq!(
        transcript,
        session_log
            .parent()
            .expect("logs dir")
            .join(session.get_session_id())
            .join("subagents")
            .join(format!("{agent_id}.jsonl"))
    );
    let transcript_text = std::fs::read_to_string(&transcript).expect("transcript written");
    assert!(transcript_text.contains("echo 42"), "{transcript_text}");
    assert!(transcript_text.contains("The magic number is 42."));

    let pre = by_event(&records, "PreToolUse");
    assert_eq!(pre.len(), 2, "{pre:#?}");
    assert_eq!(pre[0]["tool_name"], "robota_command_agent");
    assert!(pre[0].get("agent_id").is_none(), "{}", pre[0]);
    assert_eq!(pre[1]["tool_name"], "Bash");
    assert_eq!(pre[1]["agent_id"], agent_id.as_str());
    assert_eq!(pre[1]["agent_type"], "Explore");

    // The host saw the subagent start, run its tool and finish.
    let progress = background(&seen);
    let kinds: Vec<&str> = progress
        .iter()
        .map(|p| p["event"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(kinds, ["started", "tool_start", "tool_end", "finished"]);
    assert!(progress.iter().all(|p| p["task_kind"] == "subagent"));
    assert_eq!(progress[0]["agent_id"], agent_id.as_str());
    assert_eq!(progress[3]["report"]["response"], "The magic number is 42.");
    assert_eq!(progress[3]["report"]["tools_executed"], json!(["Bash"]));
    assert_history_consistent(&session);
    // The subagent's model calls count in the session's usage; the SubagentStop hook for
    // another agent type did not run (no hook error).
    assert_eq!(session.session().usage().calls, 4);
    assert!(
        events.of("hook_error").is_empty(),
        "{:#?}",
        events.of("hook_error")
    );
}

#[tokio::test]
async fn subagent_stop_exit_2_makes_the_subagent_continue_once() {
    let project = Project::new();
    let state = project.scratch("stop").join("state.jsonl");
    let state_s = state.to_string_lossy().to_string();
    settings(
        &project,
        &[],
        json!({
            "SubagentStop": [group(None, vec![command(sub_fixture("stop_once.sh", &[&state_s]))])],
        }),
    );
    let mock = Mock::start(json!({"turns": [
        agent_call("toolu_agent", "count to two"),
        text_turn("one"),
        text_turn("one, two"),
        text_turn("done"),
    ]}))
    .await;
    let events = Events::default();
    let session = interactive(options(&project, &mock, &events));
    let sub = session.subscribe_pull();
    session.submit("go", None, None).await.expect("submit");
    until(&sub, "complete").await;
    session.wait_idle().await;

    assert_eq!(mock.bodies().len(), 4);
    // The block's reason reached the subagent as its next instruction.
    let continued = mock.user_texts(2);
    assert_eq!(
        continued,
        [
            "count to two",
            "Not finished: also report the second number"
        ]
    );
    assert!(mock.result_for("toolu_agent").starts_with("one, two"));
    let calls = records(&state);
    assert_eq!(calls.len(), 2, "{calls:#?}");
    assert_eq!(calls[0]["stop_hook_active"], false);
    assert_eq!(calls[0]["last_assistant_message"], "one");
    assert_eq!(calls[1]["stop_hook_active"], true);
    assert_eq!(calls[1]["last_assistant_message"], "one, two");
    assert_eq!(calls[0]["agent_type"], "general-purpose");
    assert_eq!(calls[0]["agent_id"], calls[1]["agent_id"]);
    // No log, so no transcript path.
    assert!(calls[0].get("agent_transcript_path").is_none());
}

#[tokio::test]
async fn agent_definitions_load_from_files_and_a_malformed_one_is_an_error() {
    let project = Project::new();
    project.write(
        ".claude/agents/reviewer.md",
        "---\nname: reviewer\ndescription: Reviews changes for bugs\ntools: Read, Grep\n\
         color: blue\n---\nYou are a careful reviewer. Cite file and line.\n",
    );
    let user_agents = project.home.join(".claude/agents");
    std::fs::create_dir_all(&user_agents).expect("mkdir");
    std::fs::write(
        user_agents.join("helper.md"),
        "---\nname: helper\ndescription: >\n  Helps with\n  chores\n---\nHelp.\n",
    )
    .expect("write");
    settings(&project, &[], json!({}));
    let mock = Mock::start(json!({"turns": [
        agent_call("toolu_agent", "reviewer check src/lib.rs"),
        text_turn("No bugs found."),
        text_turn("ok"),
    ]}))
    .await;
    let events = Events::default();
    let session = interactive(options(&project, &mock, &events));

    let listed = session
        .execute_command("agent", "list")
        .await
        .expect("agent list");
    assert!(listed.success, "{listed:?}");
    for expected in [
        "reviewer — Reviews changes for bugs",
        "helper — Helps with chores",
        "general-purpose",
        "Explore",
        "`color` is not used by robota",
    ] {
        assert!(listed.message.contains(expected), "{}", listed.message);
    }

    let sub = session.subscribe_pull();
    session.submit("review", None, None).await.expect("submit");
    until(&sub, "complete").await;
    session.wait_idle().await;
    let bodies = mock.bodies();
    assert!(bodies[0]["system"]
        .to_string()
        .contains("- reviewer: Reviews changes for bugs"));
    assert!(bodies[1]["system"]
        .to_string()
        .contains("You are a careful reviewer."));
    assert_eq!(mock.user_texts(1), ["check src/lib.rs"]);
    assert_eq!(mock.tool_names(1), ["Grep", "Read"]);
    assert!(mock.result_for("toolu_agent").starts_with("No bugs found."));

    // A malformed definition is a warning naming file, line and problem; the session is
    // created and the other agents still load.
    let bad = project.write(
        ".robota/agents/broken.md",
        "---\nname: broken\ndescription: x\n  tools: Read\n---\nbody\n",
    );
    let catalog = load_agent_definitions(&project.root, Some(&project.home));
    assert!(catalog.get("broken").is_none());
    assert!(catalog.get("reviewer").is_some(), "the other agents load");
    let warning = catalog
        .warnings
        .iter()
        .find(|w| w.file == bad)
        .unwrap_or_else(|| panic!("no warning for broken.md: {:?}", catalog.warnings));
    assert_eq!(warning.line, Some(4), "{warning}");
    assert!(
        warning
            .to_string()
            .contains("broken.md:4: agent definition skipped: invalid YAML"),
        "{warning}"
    );
    let created = InteractiveSession::new(InteractiveSessionOptions::new(options(
        &project, &mock, &events,
    )))
    .expect("a malformed definition does not stop the session");
    let reported: Vec<String> = created
        .session()
        .warnings()
        .iter()
        .map(ToString::to_string)
        .collect();
    assert!(
        reported
            .iter()
            .any(|w| w.contains("broken.md") && w.contains("line 4")),
        "{reported:?}"
    );

    // Missing required keys and a file without frontmatter are warnings too.
    std::fs::write(&bad, "---\nname: broken\n---\nbody\n").expect("write");
    let catalog = load_agent_definitions(&project.root, Some(&project.home));
    assert!(
        catalog
            .warnings
            .iter()
            .any(|w| w.to_string().contains("`description` is missing")),
        "{:?}",
        catalog.warnings
    );
    std::fs::write(&bad, "no frontmatter at all\n").expect("write");
    let catalog = load_agent_definitions(&project.root, None);
    let warning = catalog
        .warnings
        .iter()
        .find(|w| w.file == bad)
        .expect("warning");
    assert!(warning.message.contains("missing frontmatter"), "{warning}");
}

/// Worktree isolation with git's own creation: the subagent runs in a real worktree on a new
/// branch; a clean worktree is removed afterwards (WorktreeRemove fires), one with changes is
/// kept and reported.
#[tokio::test]
async fn worktree_isolation_creates_a_real_worktree_and_cleans_it_up() {
    let project = Project::new();
    git_init(&project);
    let log = project.scratch("log").join("hooks.jsonl");
    let log_s = log.to_string_lossy().to_string();
    settings(
        &project,
        &["Bash(pwd)", "Write"],
        json!({
            "WorktreeRemove": [group(None, vec![command(fixture("record.py", &[&log_s]))])],
            "SubagentStart": [group(None, vec![command(fixture("record.py", &[&log_s]))])],
        }),
    );
    let mock = Mock::start(json!({"turns": [
        // 1: a clean run.
        agent_call("toolu_a", "--isolation worktree where are you?"),
        tool_turn("toolu_pwd", "Bash", json!({"command": "pwd"})),
        text_turn("In a worktree."),
        text_turn("first done"),
        // 2: a run that leaves a file behind.
        agent_call("toolu_b", r#"{"prompt": "write a note", "isolation": "worktree"}"#),
        tool_turn("toolu_write", "Write", json!({"file_path": "note.txt", "content": "from the subagent\n"})),
        text_turn("Wrote note.txt."),
        text_turn("second done"),
    ]}))
    .await;
    let events = Events::default();
    // Host callbacks on WorktreeCreate are told about git's creation (they do not replace it).
    let created: Arc<Mutex<Vec<Value>>> = Arc::default();
    let seen = created.clone();
    let callback = FnHookCallback::new("worktree-create", move |input| {
        let seen = seen.clone();
        async move {
            seen.lock().unwrap().push(input.to_value());
            HookCallbackResult::Continue
        }
    });
    let session = interactive(
        options(&project, &mock, &events)
            .with_permission_mode(PermissionMode::AcceptEdits)
            .with_hook_callback(HookEvent::WorktreeCreate, "", callback),
    );
    let sub = session.subscribe_pull();

    session.submit("first", None, None).await.expect("submit");
    let first = until(&sub, "complete").await;
    session.wait_idle().await;
    let pwd = mock.tool_results(2);
    assert_eq!(pwd.len(), 1);
    let worktrees_dir = project.path(".robota/worktrees");
    assert!(
        pwd[0]
            .1
            .starts_with(&worktrees_dir.to_string_lossy().to_string()),
        "the subagent ran in the worktree: {pwd:?}"
    );
    let first_path = PathBuf::from(pwd[0].1.lines().next().unwrap_or("").trim());
    assert!(!first_path.exists(), "the clean worktree was removed");
    let result = mock.result_for("toolu_a");
    assert!(
        result.contains("[worktree removed: no changes]"),
        "{result}"
    );
    let report = background(&first)
        .into_iter()
        .find(|p| p["event"] == "finished")
        .expect("finished");
    let branch = report["report"]["worktree"]["branch"]
        .as_str()
        .expect("branch")
        .to_string();
    assert!(branch.starts_with("robota-agent-agent-"), "{branch}");
    assert!(
        !git(&project.root, &["branch", "--list"]).contains(&branch),
        "the branch of a removed worktree is deleted"
    );
    assert_eq!(
        git(&project.root, &["worktree", "list"]).lines().count(),
        1,
        "only the main checkout is left"
    );
    // The parent checkout does not list the worktrees as untracked files.
    assert!(
        !git(&project.root, &["status", "--porcelain"]).contains("worktrees"),
        "{}",
        git(&project.root, &["status", "--porcelain"])
    );

    // WorktreeCreate told the callback; WorktreeRemove ran with the removed path.
    let created = created.lock().unwrap().clone();
    assert_eq!(created.len(), 1, "{created:#?}");
    let agent_id = report["report"]["agent_id"].as_str().expect("id");
    assert_eq!(created[0]["hook_event_name"], "WorktreeCreate");
    assert_eq!(created[0]["name"], agent_id);
    assert_eq!(created[0]["worktree_name"], agent_id);
    assert_eq!(created[0]["source_ref"], "HEAD");
    assert_eq!(
        created[0]["base_path"],
        worktrees_dir.to_string_lossy().as_ref()
    );
    assert_eq!(created[0]["agent_id"], agent_id);
    let records = records(&log);
    let removed = by_event(&records, "WorktreeRemove");
    assert_eq!(removed.len(), 1, "{records:#?}");
    assert_eq!(
        removed[0]["worktree_path"],
        worktrees_dir.join(agent_id).to_string_lossy().as_ref()
    );
    // SubagentStart saw the worktree as its cwd.
    let start = by_event(&records, "SubagentStart");
    assert_eq!(
        start[0]["cwd"],
        worktrees_dir.join(agent_id).to_string_lossy().as_ref()
    );

    // Second run: the file the subagent wrote keeps the worktree.
    session.submit("second", None, None).await.expect("submit");
    let second = until(&sub, "complete").await;
    session.wait_idle().await;
    let result = mock.result_for("toolu_b");
    assert!(result.starts_with("Wrote note.txt."), "{result}");
    assert!(
        result.contains("[worktree kept: it has 1 uncommitted change(s)]"),
        "{result}"
    );
    let report = background(&second)
        .into_iter()
        .find(|p| p["event"] == "finished")
        .expect("finished");
    let kept = PathBuf::from(report["report"]["worktree"]["path"].as_str().expect("path"));
    let kept_branch = report["report"]["worktree"]["branch"]
        .as_str()
        .expect("branch");
    assert!(result.contains(kept_branch), "{result}");
    assert_eq!(
        std::fs::read_to_string(kept.join("note.txt")).expect("note in the worktree"),
        "from the subagent\n"
    );
    assert!(
        !project.path("note.txt").exists(),
        "the parent checkout is untouched"
    );
    assert_eq!(worktree_dirs(&project), std::slice::from_ref(&kept));
    assert!(git(&project.root, &["worktree", "list"]).contains(&kept.to_string_lossy().to_string()));
    assert_eq!(
        by_event(&records_after(&log), "WorktreeRemove").len(),
        1,
        "kept: no WorktreeRemove"
    );
}

/// The hook records in `path`, read again (the tests name their first read `records`).
fn records_after(path: &Path) -> Vec<Value> {
    records(path)
}

/// A WorktreeCreate command hook replaces git's creation: its printed path is where the subagent
/// runs. A failing one stops the subagent before it starts.
#[tokio::test]
async fn worktree_create_hooks_replace_creation_or_fail_it() {
    let project = Project::new();
    git_init(&project);
    let log = project.scratch("log").join("hooks.jsonl");
    let log_s = log.to_string_lossy().to_string();
    settings(
        &project,
        &["Bash(pwd)"],
        json!({
            "WorktreeCreate": [group(None, vec![command(sub_fixture("worktree_create.sh", &[&log_s]))])],
            "WorktreeRemove": [group(None, vec![command(fixture("record.py", &[&log_s]))])],
        }),
    );
    let mock = Mock::start(json!({"turns": [
        agent_call("toolu_a", "--isolation worktree where are you?"),
        tool_turn("toolu_pwd", "Bash", json!({"command": "pwd"})),
        text_turn("Somewhere."),
        text_turn("done"),
        agent_call("toolu_b", "--isolation worktree try again"),
        text_turn("gave up"),
    ]}))
    .await;
    let events = Events::default();
    let session = interactive(options(&project, &mock, &events));
    let sub = session.subscribe_pull();
    session.submit("go", None, None).await.expect("submit");
    until(&sub, "complete").await;
    session.wait_idle().await;

    let records = records(&log);
    let create = by_event(&records, "WorktreeCreate");
    assert_eq!(create.len(), 1, "{records:#?}");
    let name = create[0]["name"].as_str().expect("name");
    assert_eq!(create[0]["worktree_name"], name);
    let base = project.path(".robota/worktrees");
    assert_eq!(create[0]["base_path"], base.to_string_lossy().as_ref());
    let hook_path = base.join(format!("{name}-hook"));
    let pwd = mock.tool_results(2);
    assert_eq!(pwd[0].1.trim(), hook_path.to_string_lossy(), "{pwd:?}");
    assert_eq!(
        git(&project.root, &["worktree", "list"]).lines().count(),
        1,
        "git created no worktree"
    );
    // Clean: handed to the WorktreeRemove hooks (which own what their WorktreeCreate made).
    let removed = by_event(&records, "WorktreeRemove");
    assert_eq!(removed.len(), 1, "{records:#?}");
    assert_eq!(
        removed[0]["worktree_path"],
        hook_path.to_string_lossy().as_ref()
    );

    // Now the hook fails: the subagent does not run and the model is told why.
    project.settings(
        ".claude/settings.json",
        json!({"permissions": {"allow": ["robota_command_agent"]}, "hooks": {
            "WorktreeCreate": [group(None, vec![command(sub_fixture("fail.sh", &["no worktrees today"]))])],
            "SubagentStart": [group(None, vec![command(fixture("record.py", &[&log_s]))])],
        }}),
    );
    let session = interactive(options(&project, &mock, &events));
    let sub = session.subscribe_pull();
    session.submit("again", None, None).await.expect("submit");
    until(&sub, "complete").await;
    session.wait_idle().await;
    assert_eq!(mock.bodies().len(), 6, "no subagent model call");
    let result = mock.result_for("toolu_b");
    assert!(
        result.contains("a WorktreeCreate hook failed, so the worktree was not created"),
        "{result}"
    );
    assert!(result.contains("no worktrees today"), "{result}");
    assert!(by_event(&records_after(&log), "SubagentStart").is_empty());
}

#[tokio::test]
async fn worktree_isolation_outside_a_git_repository_is_an_error() {
    let project = Project::new();
    settings(&project, &[], json!({}));
    let mock = Mock::start(json!({"turns": []})).await;
    let events = Events::default();
    let session = interactive(options(&project, &mock, &events));
    let result = session
        .execute_command("agent", "--isolation worktree list the files")
        .await
        .expect("command runs");
    assert!(!result.success, "{result:?}");
    assert!(
        result
            .message
            .contains("worktree isolation needs a git repository"),
        "{}",
        result.message
    );
    assert!(
        result.message.contains("without isolation"),
        "{}",
        result.message
    );
    assert!(mock.bodies().is_empty(), "nothing was sent to the model");
    assert!(!project.path(".robota/worktrees").exists());
}

#[tokio::test]
async fn aborting_during_a_subagent_stops_it_and_keeps_history_consistent() {
    let project = Project::new();
    let log = project.scratch("log").join("hooks.jsonl");
    let log_s = log.to_string_lossy().to_string();
    settings(
        &project,
        &["Bash(sleep *)"],
        json!({
            "SubagentStop": [group(None, vec![command(fixture("record.py", &[&log_s]))])],
        }),
    );
    let mock = Mock::start(json!({"turns": [
        agent_call("toolu_agent", "wait a long time"),
        tool_turn("toolu_sleep", "Bash", json!({"command": "sleep 30"})),
        text_turn("after the abort"),
    ]}))
    .await;
    let events = Events::default();
    let session = interactive(options(&project, &mock, &events));
    let sub = session.subscribe_pull();
    session.submit("go", None, None).await.expect("submit");
    // Wait until the subagent's Bash call is running, then abort.
    loop {
        let event = sub.next_event(WAIT).await.expect("event");
        if let InteractiveEventKind::BackgroundTaskEvent { data } = &event.kind {
            if data["event"] == "tool_start" {
                break;
            }
        }
    }
    let started = std::time::Instant::now();
    session.abort();
    let seen = until(&sub, "interrupted").await;
    session.wait_idle().await;
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "the subagent's tool was stopped"
    );
    let finished = background(&seen)
        .into_iter()
        .find(|p| p["event"] == "finished")
        .expect("finished");
    assert_eq!(finished["report"]["interrupted"], true);
    assert_history_consistent(&session);
    assert!(
        by_event(&records(&log), "SubagentStop").is_empty(),
        "an aborted subagent is not asked to stop"
    );
    assert_eq!(mock.bodies().len(), 2, "the subagent made no further call");

    // The session is usable afterwards.
    session
        .submit("still there?", None, None)
        .await
        .expect("submit");
    let next = until(&sub, "complete").await;
    let complete = next.last().expect("complete");
    let InteractiveEventKind::Complete { outcome, .. } = &complete.kind else {
        panic!("{complete:?}");
    };
    assert_eq!(outcome.response, "after the abort");
    assert_history_consistent(&session);
}
