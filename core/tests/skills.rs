//! Skills in a real `InteractiveSession` against mock-llm, with `SKILL.md` folders written into
//! a temporary project and a fake home: discovery and precedence, every frontmatter key, bad
//! files as warnings, names and descriptions (never bodies) in the system prompt, activation by
//! the user (`/name args`) and by the model (`Skill`, `robota_command_skills`), `context: fork`,
//! `allowed-tools` pre-approval that ends with the skill, `skill_activation` events and
//! `skill-activation` history entries.
#![cfg(unix)]

mod session_common;

use std::sync::Arc;

use robota::framework::interactive::{InteractiveSession, InteractiveSessionOptions};
use robota::framework::skills::{
    load_skills, skills_prompt_section, SkillActivationStatus, SkillContext, SkillInvocation,
    SkillMode, SkillRegistration,
};
use robota::session::PermissionResponse;
use serde_json::json;
use session_common::*;

/// Writes `<root>/<name>/SKILL.md`.
fn skill(project: &Project, root: &str, name: &str, text: &str) -> std::path::PathBuf {
    project.write(&format!("{root}/{name}/SKILL.md"), text)
}

/// Writes a skill into the fake home.
fn home_skill(project: &Project, root: &str, name: &str, text: &str) -> std::path::PathBuf {
    let path = project.home.join(root).join(name).join("SKILL.md");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, text).unwrap();
    path
}

const REVIEW: &str = "---
name: review
description: Review a file for bugs. Use when asked to review code.
argument-hint: \"<file> [severity]\"
allowed-tools: Bash(touch *), Read
model: claude-opus-4-1
license: MIT
metadata:
  owner: qa
---
REVIEW-BODY: check $0 at severity $1 (all: $ARGUMENTS). Checklist in ${CLAUDE_SKILL_DIR}/checklist.md.
";

/// A project with skills in every place, good and bad.
fn populated() -> Project {
    let project = Project::new();
    skill(&project, ".claude/skills", "review", REVIEW);
    project.write(".claude/skills/review/checklist.md", "1. read it\n");
    skill(
        &project,
        ".claude/skills",
        "shared",
        "---\ndescription: the project's .claude version\n---\nCLAUDE-SHARED\n",
    );
    skill(
        &project,
        ".agents/skills",
        "shared",
        "---\ndescription: the .agents version\n---\nAGENTS-SHARED\n",
    );
    skill(
        &project,
        ".agents/skills",
        "deploy",
        "---\ndescription: Deploy the app\ndisable-model-invocation: true\n---\nDEPLOY-BODY $ARGUMENTS\n",
    );
    skill(
        &project,
        ".claude/skills",
        "background-lore",
        "---\ndescription: Facts about the legacy system\nuser-invocable: false\n---\nLORE-BODY\n",
    );
    skill(
        &project,
        ".claude/skills",
        "summarize",
        "---\ndescription: Summarize the project in a subagent\ncontext: fork\nagent: Explore\nallowed-tools: [Read, Glob]\n---\nFORK-BODY: summarize $ARGUMENTS\n",
    );
    skill(
        &project,
        ".claude/skills",
        "broken",
        "---\ndescription: [unclosed\n  - x: y: z\n---\nBROKEN\n",
    );
    skill(
        &project,
        ".claude/skills",
        "nodesc",
        "---\nargument-hint: x\n---\n# Tidy imports\nSort the imports.\n",
    );
    skill(
        &project,
        ".claude/skills",
        "huge",
        &format!(
            "---\ndescription: big\n---\n{}",
            "x".repeat(1024 * 1024 + 10)
        ),
    );
    let skills = project.path(".claude/skills");
    std::os::unix::fs::symlink(skills.join("loop-b"), skills.join("loop-a")).unwrap();
    std::os::unix::fs::symlink(skills.join("loop-a"), skills.join("loop-b")).unwrap();
    home_skill(
        &project,
        ".claude/skills",
        "home-notes",
        "---\ndescription: Keep notes in the home folder\n---\nHOME-NOTES\n",
    );
    home_skill(
        &project,
        ".robota/skills",
        "robota-only",
        "---\ndescription: From the robota user folder\n---\nROBOTA-ONLY\n",
    );
    home_skill(
        &project,
        ".claude/skills",
        "review",
        "---\ndescription: the home review, shadowed\n---\nHOME-REVIEW\n",
    );
    project
}

fn interactive(options: InteractiveSessionOptions) -> Arc<InteractiveSession> {
    InteractiveSession::new(options).unwrap_or_else(|e| panic!("session: {e}"))
}

fn session_for(project: &Project, mock: &Mock) -> Arc<InteractiveSession> {
    let events = Events::default();
    interactive(InteractiveSessionOptions::new(options(
        project, mock, &events,
    )))
}

#[tokio::test]
async fn discovery_follows_precedence_reads_every_key_and_reports_bad_files() {
    let project = populated();
    let hosted_dir = project.scratch("hosted");
    std::fs::create_dir_all(hosted_dir.join("from-host-dir")).unwrap();
    std::fs::write(
        hosted_dir.join("from-host-dir/SKILL.md"),
        "---\ndescription: A host folder skill\n---\nHOST-DIR\n",
    )
    .unwrap();
    let registrations = vec![
        SkillRegistration::Data {
            name: "shared".into(),
            content: "---\ndescription: the host's version\n---\nHOST-SHARED\n".into(),
        },
        SkillRegistration::Dir { dir: hosted_dir },
    ];
    let catalog = load_skills(&project.root, Some(&project.home), &registrations);
    let names: Vec<&str> = catalog.skills().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "background-lore",
            "deploy",
            "from-host-dir",
            "home-notes",
            "nodesc",
            "review",
            "robota-only",
            "shared",
            "summarize"
        ]
    );
    // Precedence: host > project .claude > project .agents > ~/.claude > ~/.robota.
    let shared = catalog.get("shared").unwrap();
    assert_eq!(shared.source.kind(), "host");
    assert_eq!(shared.load_body().unwrap(), "HOST-SHARED");
    let review = catalog.get("review").unwrap();
    assert_eq!(review.source.kind(), "project");
    assert_eq!(catalog.get("home-notes").unwrap().source.kind(), "user");
    assert_eq!(catalog.get("robota-only").unwrap().source.kind(), "user");
    // Every key.
    assert_eq!(
        review.description,
        "Review a file for bugs. Use when asked to review code."
    );
    assert_eq!(review.argument_hint.as_deref(), Some("<file> [severity]"));
    assert_eq!(review.allowed_tools, ["Bash(touch *)", "Read"]);
    assert_eq!(review.model.as_deref(), Some("claude-opus-4-1"));
    assert_eq!(review.extra["license"], "MIT");
    assert_eq!(review.extra["metadata"], json!({"owner": "qa"}));
    assert!(review.user_invocable && review.model_invocable());
    let summarize = catalog.get("summarize").unwrap();
    assert_eq!(summarize.context, SkillContext::Fork);
    assert_eq!(summarize.agent.as_deref(), Some("Explore"));
    assert_eq!(summarize.allowed_tools, ["Read", "Glob"]);
    assert!(catalog.get("deploy").unwrap().disable_model_invocation);
    assert!(!catalog.get("background-lore").unwrap().user_invocable);
    assert_eq!(catalog.get("nodesc").unwrap().description, "Tidy imports");
    // Bad input: each a warning naming its file and its problem.
    let warnings: Vec<String> = catalog.warnings.iter().map(|w| w.to_string()).collect();
    let find = |needle: &str, problem: &str| {
        assert!(
            warnings
                .iter()
                .any(|w| w.contains(needle) && w.contains(problem)),
            "no warning about {needle} saying {problem:?}: {warnings:#?}"
        );
    };
    find("broken/SKILL.md", "invalid frontmatter");
    find("nodesc/SKILL.md", "has no `description`");
    find("huge/SKILL.md", "MiB");
    find("loop-a", "symbolic link loop");
    find("loop-b", "symbolic link loop");
    find(".agents/skills/shared/SKILL.md", "takes precedence");
    find("/.claude/skills/review/SKILL.md", "takes precedence");
}

#[tokio::test]
async fn the_system_prompt_lists_names_and_descriptions_but_no_bodies() {
    let project = populated();
    let mock = Mock::start(json!({"turns": [text_turn("ok")]})).await;
    let session = session_for(&project, &mock);
    // The warnings reached the session (kind `skill`) and the listing.
    let warnings = session.session().warnings().to_vec();
    assert!(
        warnings
            .iter()
            .any(|w| w.kind == "skill" && w.message.contains("invalid frontmatter")),
        "{warnings:#?}"
    );
    assert_eq!(
        session.get_skill_warnings().len(),
        warnings.iter().filter(|w| w.kind == "skill").count()
    );
    let listed = session.list_skills();
    assert!(listed
        .iter()
        .any(|s| s.name == "review" && s.source.kind() == "project"));
    session.submit("hello", None, None).await.unwrap();
    session.wait_idle().await;
    let system = mock.system(0);
    assert!(system.contains("# Skills"), "{system}");
    assert!(
        system.contains("- review <file> [severity]: Review a file for bugs."),
        "{system}"
    );
    assert!(
        system.contains("- background-lore: Facts about the legacy system"),
        "{system}"
    );
    assert!(!system.contains("REVIEW-BODY"), "bodies stay out: {system}");
    assert!(
        !system.contains("- deploy"),
        "disable-model-invocation hides it: {system}"
    );
    let tools = mock.tool_names(0);
    assert!(tools.contains(&"Skill".to_string()), "{tools:?}");
    assert!(
        tools.contains(&"robota_command_skills".to_string()),
        "{tools:?}"
    );

    // Over the budget, the list says what it left out.
    let catalog = load_skills(&project.root, Some(&project.home), &[]);
    let section = skills_prompt_section(&catalog, 120).unwrap();
    assert!(
        section.contains("left out of this list for space"),
        "{section}"
    );
    assert!(section.contains("summarize"), "{section}");
}

#[tokio::test]
async fn a_user_runs_a_skill_with_arguments_and_its_tools_are_pre_approved_while_it_runs() {
    let project = populated();
    let mock = Mock::start(json!({"turns": [
        tool_turn("toolu_touch", "Bash", json!({"command": "touch reviewed.txt"})),
        text_turn("Reviewed."),
        tool_turn("toolu_touch2", "Bash", json!({"command": "touch later.txt"})),
        text_turn("Done."),
    ]}))
    .await;
    let handler = Handler::default();
    let events = Events::default();
    let options =
        options(&project, &mock, &events).with_permission_handler(handler.answering(vec![
            PermissionResponse::Deny {
                message: "no".into(),
            },
        ]));
    let session = interactive(InteractiveSessionOptions::new(options));
    let sub = session.subscribe_pull();
    let result = session
        .execute_command("review", "\"src/main.rs\" high")
        .await
        .unwrap();
    assert!(result.success, "{result:?}");
    let events = until(&sub, "complete").await;
    session.wait_idle().await;
    // The prompt the model got: the body with the arguments and the skill folder filled in.
    let texts = mock.user_texts(0);
    let prompt = texts.last().unwrap();
    let dir = project.path(".claude/skills/review");
    assert!(
        prompt.contains(&format!(
            "REVIEW-BODY: check src/main.rs at severity high (all: \"src/main.rs\" high). \
             Checklist in {}/checklist.md.",
            dir.display()
        )),
        "{prompt}"
    );
    assert!(prompt.contains(&format!("Base directory for this skill: {}", dir.display())));
    // `Bash(touch *)` was pre-approved while the skill ran: no permission request.
    assert_eq!(handler.count(), 0, "{:?}", handler.tools());
    assert!(project.path("reviewed.txt").exists());
    let activations = skill_activations(&events);
    assert_eq!(activations.len(), 2, "{activations:#?}");
    assert_eq!(activations[0].status, SkillActivationStatus::Started);
    assert_eq!(activations[0].invocation, SkillInvocation::UserSlash);
    assert_eq!(activations[0].mode, SkillMode::Inject);
    assert_eq!(activations[0].arguments, "\"src/main.rs\" high");
    assert_eq!(activations[0].source, "project");
    // The skill's `model` took the run; the session's model is back for the next prompt.
    assert!(
        activations[0].notes.is_empty(),
        "{:?}",
        activations[0].notes
    );
    assert_eq!(mock.bodies()[0]["model"], "claude-opus-4-1");
    assert_eq!(activations[1].status, SkillActivationStatus::Completed);
    let history = skill_activation_history(&session);
    assert_eq!(history.len(), 1, "{history:#?}");
    assert_eq!(history[0]["skill_name"], "review");
    assert_eq!(history[0]["status"], "started");
    // The grant ended with the skill: the same command now needs approval (and is denied).
    session.submit("again", None, None).await.unwrap();
    session.wait_idle().await;
    assert_eq!(handler.tools(), ["Bash"]);
    assert!(!project.path("later.txt").exists());
    assert_eq!(mock.bodies()[2]["model"], "claude-sonnet-4-5");
    // A model-only skill cannot be run by the user; an unknown name is still an unknown command.
    let refused = session
        .execute_command("background-lore", "")
        .await
        .unwrap();
    assert!(!refused.success);
    assert!(
        refused.message.contains("user-invocable: false"),
        "{}",
        refused.message
    );
    assert!(session.execute_command("no-such-thing", "").await.is_err());
    // `skills list` shows source and description.
    let listing = session.execute_command("skills", "list").await.unwrap();
    assert!(
        listing
            .message
            .contains("review <file> [severity] [project ("),
        "{}",
        listing.message
    );
    assert!(listing.message.contains("warning:"), "{}", listing.message);
    let shown = session
        .execute_command("skills", "show review")
        .await
        .unwrap();
    assert!(shown.message.contains("REVIEW-BODY"), "{}", shown.message);
}

#[tokio::test]
async fn the_model_activates_skills_through_the_skill_tool_and_the_skills_command() {
    let project = populated();
    project.settings(
        ".claude/settings.json",
        json!({"permissions": {"allow": ["Skill(review)", "Skill(deploy)", "robota_command_skills"]}}),
    );
    let mock = Mock::start(json!({"turns": [
        tool_turn("toolu_skill", "Skill", json!({"skill": "review", "args": "lib.rs"})),
        tool_turn("toolu_deploy", "Skill", json!({"skill": "deploy"})),
        tool_turn("toolu_cmd", "robota_command_skills", json!({"args": "background-lore"})),
        text_turn("Followed the skills."),
        text_turn("Next prompt."),
    ]}))
    .await;
    let session = session_for(&project, &mock);
    let sub = session.subscribe_pull();
    session
        .submit("review lib.rs please", None, None)
        .await
        .unwrap();
    let events = until(&sub, "complete").await;
    let result = mock.result_for("toolu_skill");
    assert!(result.contains("REVIEW-BODY: check lib.rs"), "{result}");
    let refused = mock.result_for("toolu_deploy");
    assert!(refused.contains("disable-model-invocation"), "{refused}");
    let lore = mock.result_for("toolu_cmd");
    assert!(lore.contains("LORE-BODY"), "{lore}");
    let activations = skill_activations(&events);
    let started: Vec<&str> = activations
        .iter()
        .filter(|a| a.status == SkillActivationStatus::Started)
        .map(|a| a.skill_name.as_str())
        .collect();
    assert_eq!(started, ["review", "background-lore"]);
    assert!(activations
        .iter()
        .all(|a| a.invocation == SkillInvocation::ModelTool));
    let completed = activations
        .iter()
        .filter(|a| a.status == SkillActivationStatus::Completed)
        .count();
    assert_eq!(completed, 2, "{activations:#?}");
    session.wait_idle().await;
    let history = skill_activation_history(&session);
    assert_eq!(history.len(), 2, "{history:#?}");
    // `review` names `model: claude-opus-4-1`: once the model activated it, the rest of the
    // prompt went to that model; the next prompt is back on the session's model.
    let models: Vec<String> = mock
        .bodies()
        .iter()
        .map(|body| body["model"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(
        models,
        [
            "claude-sonnet-4-5",
            "claude-opus-4-1",
            "claude-opus-4-1",
            "claude-opus-4-1"
        ]
    );
    session.submit("and now?", None, None).await.unwrap();
    until(&sub, "complete").await;
    assert_eq!(mock.bodies()[4]["model"], "claude-sonnet-4-5");
}

#[tokio::test]
async fn a_forked_skill_runs_in_a_subagent_and_returns_only_its_answer() {
    let project = populated();
    project.settings(
        ".claude/settings.json",
        json!({"permissions": {"allow": ["Skill(summarize)"]}}),
    );
    let mock = Mock::start(json!({"turns": [
        tool_turn("toolu_fork", "Skill", json!({"skill": "summarize", "args": "the docs"})),
        text_turn("SUBAGENT-SUMMARY"),
        text_turn("Here is the summary."),
    ]}))
    .await;
    let session = session_for(&project, &mock);
    let sub = session.subscribe_pull();
    session.submit("summarize", None, None).await.unwrap();
    let events = until(&sub, "complete").await;
    // The subagent got the instructions as its task and only the skill's tools.
    let child_prompt = mock.user_texts(1).join("\n");
    assert!(
        child_prompt.contains("FORK-BODY: summarize the docs"),
        "{child_prompt}"
    );
    let mut child_tools = mock.tool_names(1);
    child_tools.sort();
    assert_eq!(child_tools, ["Glob", "Read"]);
    // The parent sees only the answer.
    assert_eq!(mock.result_for("toolu_fork"), "SUBAGENT-SUMMARY");
    let activations = skill_activations(&events);
    assert_eq!(activations.len(), 2, "{activations:#?}");
    assert_eq!(activations[0].mode, SkillMode::Fork);
    assert_eq!(activations[1].status, SkillActivationStatus::Completed);
}

#[tokio::test]
async fn the_model_may_read_the_files_of_a_skill_outside_the_project() {
    let project = populated();
    let extra = project.home.join(".claude/skills/home-notes/format.md");
    std::fs::write(&extra, "NOTES-FORMAT").unwrap();
    let elsewhere = project.home.join("secret.md");
    std::fs::write(&elsewhere, "SECRET").unwrap();
    let mock = Mock::start(json!({"turns": [
        tool_turn("toolu_read", "Read", json!({"file_path": extra})),
        tool_turn("toolu_other", "Read", json!({"file_path": elsewhere})),
        text_turn("Read it."),
    ]}))
    .await;
    let session = session_for(&project, &mock);
    session
        .submit("use the notes format", None, None)
        .await
        .unwrap();
    session.wait_idle().await;
    let bodies = mock.bodies();
    assert_eq!(bodies.len(), 3);
    let read = mock.tool_results(2);
    assert!(
        read.iter()
            .any(|(id, c)| id == "toolu_read" && c.contains("NOTES-FORMAT")),
        "{read:?}"
    );
    // Only skill folders are opened up: another file outside the project still needs approval
    // (and this session has no one to ask).
    let other = mock.result_for("toolu_other");
    assert!(other.contains("outside the workspace"), "{other}");
    assert!(!other.contains("SECRET"), "{other}");
}
