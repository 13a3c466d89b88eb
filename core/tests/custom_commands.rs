//! Custom slash commands (`.claude/commands/**/*.md`) with real files in a temporary project and
//! a fake home: discovery from roots with their sources and precedence, namespaces, plugin
//! qualified names, every frontmatter key, and every bad file as a warning naming it.
#![cfg(unix)]

mod session_common;

use robota::framework::commands::custom::{
    default_command_roots, load_custom_commands, CommandRoot, CustomCommandCatalog,
};
use robota::framework::commands::CommandSource;
use serde_json::json;
use session_common::*;

/// Writes a file into the fake home.
fn home_file(project: &Project, rel: &str, text: &str) -> std::path::PathBuf {
    let path = project.home.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, text).unwrap();
    path
}

const FIX_ISSUE: &str = "---
description: Fix a GitHub issue
argument-hint: \"[issue-number] [priority]\"
allowed-tools: Bash(echo *), Read
model: claude-haiku-4-5
disable-model-invocation: false
owner: qa
tags: [a, b]
---
Fix issue #$1 with priority $2 ($ARGUMENTS).
";

/// A project and home with commands in every place, good and bad.
fn populated() -> Project {
    let project = Project::new();
    project.write(".claude/commands/fix-issue.md", FIX_ISSUE);
    project.write(
        ".claude/commands/frontend/component.md",
        "Create a React component named $1.\n",
    );
    project.write(
        ".claude/commands/frontend/deep/nested.md",
        "---\ndescription: nested one\n---\nNESTED\n",
    );
    project.write(
        ".claude/commands/deploy.md",
        "---\ndescription: Deploy\ndisable-model-invocation: true\n---\nDEPLOY $ARGUMENTS\n",
    );
    project.write(
        ".claude/commands/broken.md",
        "---\ndescription: [unclosed\n  - x: y: z\n---\nBROKEN\n",
    );
    project.write(
        ".claude/commands/huge.md",
        &format!("---\ndescription: big\n---\n{}", "x".repeat(300 * 1024)),
    );
    project.write(
        ".claude/commands/empty.md",
        "---\ndescription: nothing\n---\n",
    );
    project.write(".claude/commands/bad name.md", "A name with a space\n");
    project.write(
        ".claude/commands/badflag.md",
        "---\ndisable-model-invocation: [1]\n---\nBADFLAG\n",
    );
    project.write(".claude/commands/notes.txt", "not a command\n");
    let commands = project.path(".claude/commands");
    std::os::unix::fs::symlink(commands.join("loop-b.md"), commands.join("loop-a.md")).unwrap();
    std::os::unix::fs::symlink(commands.join("loop-a.md"), commands.join("loop-b.md")).unwrap();
    std::os::unix::fs::symlink(&commands, commands.join("frontend/up")).unwrap();
    home_file(
        &project,
        ".claude/commands/fix-issue.md",
        "---\ndescription: the user's, shadowed\n---\nHOME-FIX\n",
    );
    home_file(
        &project,
        ".claude/commands/backend/api.md",
        "---\ndescription: Make an API endpoint\n---\nAPI $1\n",
    );
    project
}

fn warnings_of(catalog: &CustomCommandCatalog) -> Vec<String> {
    catalog.warnings.iter().map(|w| w.to_string()).collect()
}

#[test]
fn discovery_follows_precedence_namespaces_and_reports_bad_files() {
    let project = populated();
    let plugin_root = project.scratch("ops-plugin/commands");
    std::fs::create_dir_all(plugin_root.join("ci")).unwrap();
    std::fs::write(
        plugin_root.join("ci/nightly.md"),
        "---\ndescription: Nightly build\n---\nNIGHTLY\n",
    )
    .unwrap();
    std::fs::write(
        plugin_root.join("fix-issue.md"),
        "---\ndescription: the plugin's fix\n---\nPLUGIN-FIX\n",
    )
    .unwrap();
    let mut roots = default_command_roots(&project.root, Some(&project.home));
    roots.push(CommandRoot::required(
        &plugin_root,
        CommandSource::Plugin {
            plugin: "ops".into(),
        },
    ));
    roots.push(CommandRoot::required(
        project.path("no-such-folder"),
        CommandSource::Host,
    ));
    let catalog = load_custom_commands(&roots);
    let names: Vec<&str> = catalog.commands().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "api",
            "badflag",
            "component",
            "deploy",
            "fix-issue",
            "nested",
            "ops:fix-issue",
            "ops:nightly"
        ]
    );

    // Every key of the project's fix-issue, which shadows the user's.
    let fix = catalog.get("/fix-issue").unwrap();
    assert_eq!(fix.source, CommandSource::Project);
    assert_eq!(fix.description, "Fix a GitHub issue");
    assert_eq!(
        fix.argument_hint.as_deref(),
        Some("[issue-number] [priority]")
    );
    assert_eq!(fix.allowed_tools, ["Bash(echo *)", "Read"]);
    assert_eq!(fix.model.as_deref(), Some("claude-haiku-4-5"));
    assert!(fix.model_invocable());
    assert_eq!(fix.extra["owner"], json!("qa"));
    assert_eq!(fix.extra["tags"], json!(["a", "b"]));
    assert_eq!(fix.listed_description(), "Fix a GitHub issue (project)");
    assert_eq!(
        fix.load_body().unwrap(),
        "Fix issue #$1 with priority $2 ($ARGUMENTS)."
    );
    assert!(!catalog.get("deploy").unwrap().model_invocable());

    // Namespaces: shown after the description, not part of the name.
    let component = catalog.get("component").unwrap();
    assert_eq!(component.namespace.as_deref(), Some("frontend"));
    assert_eq!(
        component.listed_description(),
        "Create a React component named $1. (project:frontend)"
    );
    assert_eq!(
        catalog.get("nested").unwrap().origin_label(),
        "project:frontend:deep"
    );
    let api = catalog.get("api").unwrap();
    assert_eq!(api.source, CommandSource::User);
    assert_eq!(api.origin_label(), "user:backend");
    // Plugin roots give qualified names, which never collide with the project's.
    let nightly = catalog.get("ops:nightly").unwrap();
    assert_eq!(nightly.origin_label(), "plugin:ops:ci");
    assert_eq!(
        catalog.get("ops:fix-issue").unwrap().load_body().unwrap(),
        "PLUGIN-FIX"
    );

    // Every bad file is a warning naming it; nothing else stopped.
    let warnings = warnings_of(&catalog);
    let expect = |file: &str, needle: &str| {
        assert!(
            warnings
                .iter()
                .any(|w| w.contains(file) && w.contains(needle)),
            "no warning about {file} saying {needle:?}: {warnings:#?}"
        );
    };
    expect("broken.md", "invalid frontmatter");
    expect("huge.md", "the limit is 256 KiB");
    expect("empty.md", "no prompt");
    expect("bad name.md", "may only hold");
    expect("badflag.md", "must be true or false");
    expect("loop-a.md", "symbolic link loop");
    expect("frontend/up", "link loop");
    expect(".claude/commands/fix-issue.md", "takes precedence");
    expect("no-such-folder", "cannot be read");
    assert!(!warnings.iter().any(|w| w.contains("notes.txt")));
}

#[test]
fn commands_given_as_data_come_first_and_bad_ones_are_warnings() {
    let project = populated();
    let mut catalog = CustomCommandCatalog::default();
    catalog.add_data(
        "fix-issue",
        "---\ndescription: the host's fix\n---\nHOST-FIX $1",
        CommandSource::Host,
    );
    catalog.add_data("no/slash", "x", CommandSource::Host);
    catalog.add_data("bad", "---\nmodel: [a]\n---\nBAD", CommandSource::Host);
    for root in default_command_roots(&project.root, Some(&project.home)) {
        catalog.add_root(&root);
    }
    let fix = catalog.get("fix-issue").unwrap();
    assert_eq!(fix.source, CommandSource::Host);
    assert_eq!(fix.load_body().unwrap(), "HOST-FIX $1");
    assert_eq!(fix.listed_description(), "the host's fix (host)");
    let warnings = warnings_of(&catalog);
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("command `no/slash`") && w.contains("may only hold")),
        "{warnings:#?}"
    );
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("command `bad`") && w.contains("`model` must be a single value")),
        "{warnings:#?}"
    );
    // The bad `model` value was ignored, the command kept.
    assert_eq!(catalog.get("bad").unwrap().model, None);
}

mod session {
    use super::*;
    use robota::framework::commands::custom::CommandRegistration;
    use robota::framework::interactive::{
        InteractiveEventKind, InteractiveSession, InteractiveSessionOptions,
    };
    use robota::framework::skills::{SkillActivationStatus, SkillInvocation};
    use std::sync::Arc;

    const REVIEW: &str = "---
description: Review one file
argument-hint: \"<file> <focus>\"
allowed-tools: Bash(touch *), Bash(ls *)
model: claude-haiku-4-5
---
Review $1 for $2 (all: $ARGUMENTS).
Touch: !`touch touched.txt`
Greeting: !`echo hello $1`
Listing: !`ls /definitely/not/here`
Secret: !`rm -rf will-not-run`
Notes: @notes.md
";

    fn project() -> Project {
        let project = Project::new();
        project.write(".claude/commands/review.md", REVIEW);
        project.write("notes.md", "NOTES-CONTENT\n");
        project.write(
            ".claude/commands/git/deploy.md",
            "---\ndescription: Deploy the app\ndisable-model-invocation: true\n---\nDEPLOY $ARGUMENTS\n",
        );
        project.write(
            ".claude/commands/help.md",
            "a command shadowed by the built-in\n",
        );
        project.write(
            ".claude/skills/tidy/SKILL.md",
            "---\ndescription: Tidy up\n---\nTIDY\n",
        );
        project.write(".claude/commands/tidy.md", "the skill wins\n");
        project.write(
            ".claude/commands/broken.md",
            "---\ndescription: [unclosed\n  - x: y: z\n---\nBROKEN\n",
        );
        home_file(
            &project,
            ".claude/commands/standup.md",
            "---\ndescription: Write my standup\n---\nSTANDUP for $1\n",
        );
        project
    }

    fn interactive(project: &Project, mock: &Mock) -> Arc<InteractiveSession> {
        let events = Events::default();
        let mut options = InteractiveSessionOptions::new(options(project, mock, &events));
        options.commands = vec![CommandRegistration::Data {
            name: "greet".into(),
            content: "---\ndescription: Greet someone\n---\nSay hello to $1.".into(),
        }];
        InteractiveSession::new(options).unwrap_or_else(|e| panic!("session: {e}"))
    }

    #[tokio::test]
    async fn a_user_runs_a_command_with_arguments_snippets_files_and_its_model() {
        let project = project();
        let mock = Mock::start(json!({"turns": [
            text_turn("Reviewed."),
            tool_turn("toolu_touch", "Bash", json!({"command": "touch after-grant.txt"})),
            text_turn("Plain answer."),
        ]}))
        .await;
        let session = interactive(&project, &mock);
        let sub = session.subscribe_pull();
        let result = session
            .execute_command("review", "src/lib.rs \"error handling\"")
            .await
            .unwrap();
        assert!(result.success, "{result:?}");
        let events = until(&sub, "complete").await;
        session.wait_idle().await;
        let bodies = mock.bodies();
        // The run went to the command's model; the next prompt is back on the session's.
        assert_eq!(bodies[0]["model"], "claude-haiku-4-5");
        let prompt = mock.user_texts(0).join("\n");
        assert!(
            prompt.contains(
                "Review src/lib.rs for error handling (all: src/lib.rs \"error handling\")."
            ),
            "{prompt}"
        );
        // Snippets ran: the one `allowed-tools` pre-approves (which would otherwise need
        // approval) and a read-only one, whose output is inlined.
        assert!(project.path("touched.txt").exists(), "{prompt}");
        assert!(prompt.contains("Greeting: hello src/lib.rs"), "{prompt}");
        // An allowed snippet that fails says so, with its output.
        assert!(
            prompt.contains("Listing: [`ls /definitely/not/here` failed:"),
            "{prompt}"
        );
        // A snippet `allowed-tools` does not cover needs approval; with no one to ask it is not
        // run, and the prompt says why.
        assert!(
            prompt.contains("Secret: [`rm -rf will-not-run` was not run:"),
            "{prompt}"
        );
        // `@file` attached the file's contents.
        assert!(prompt.contains("NOTES-CONTENT"), "{prompt}");
        let activations = skill_activations(&events);
        assert_eq!(activations.len(), 2, "{activations:#?}");
        assert_eq!(activations[0].skill_name, "review");
        assert_eq!(activations[0].source, "project");
        assert_eq!(activations[0].invocation, SkillInvocation::UserSlash);
        assert_eq!(activations[1].status, SkillActivationStatus::Completed);
        let history = skill_activation_history(&session);
        assert_eq!(history.len(), 1, "{history:#?}");
        // The history shows what the user typed.
        let user_display = session
            .get_messages()
            .iter()
            .any(|m| m.text().contains("Review src/lib.rs"));
        assert!(user_display);

        session.submit("and now?", None, None).await.unwrap();
        session.wait_idle().await;
        assert_eq!(mock.bodies()[1]["model"], "claude-sonnet-4-5");
        // The grant ended with the command: `touch` needs approval again (and nobody gives it).
        let touch = mock.result_for("toolu_touch");
        assert!(!project.path("after-grant.txt").exists(), "{touch}");
    }

    /// An attacker controls a command's arguments (a model-suggested command line, a pasted
    /// snippet): the arguments are spliced into `!` snippets unquoted, as Claude Code does, so
    /// the permission check of the whole snippet is what keeps `allowed-tools: Bash(echo *)`
    /// from running anything but `echo`. Each argument below would create its marker file if
    /// real bash ran the snippet; none may exist afterwards (checked on disk, not in the prompt).
    #[tokio::test]
    async fn snippet_arguments_cannot_smuggle_commands_past_allowed_tools() {
        let project = Project::new();
        project.write(
            ".claude/commands/show.md",
            "---\ndescription: Show it\nallowed-tools: Bash(echo *), Bash(git log *)\n---\n\
             Echo: !`echo $ARGUMENTS`\nFirst: !`echo $1`\nLog: !`git log --oneline -n 1 $1`\n",
        );
        let marker = |n: usize| project.path(&format!("pwned-{n}"));
        let attacks: Vec<String> = [
            "x; touch {}",
            "x && touch {}",
            "x || touch {}",
            "x & touch {}",
            "x | tee {}",
            "x > {}",
            "x >> {}",
            "$(touch {})",
            "`touch {}`",
            "x\ntouch {}",
            "x;touch {}",
            "\"$(touch {})\"",
            "x <(touch {})",
            "x >(touch {})",
            "${IFS}x;touch${IFS}{}",
            "x\u{0}; touch {}",
        ]
        .iter()
        .enumerate()
        .map(|(n, attack)| attack.replace("{}", &marker(n).display().to_string()))
        .collect();
        let turns: Vec<serde_json::Value> = attacks.iter().map(|_| text_turn("ok")).collect();
        let mock = Mock::start(json!({ "turns": turns })).await;
        let events = Events::default();
        let session = InteractiveSession::new(InteractiveSessionOptions::new(options(
            &project, &mock, &events,
        )))
        .unwrap_or_else(|e| panic!("session: {e}"));
        for attack in &attacks {
            // A refused command is fine too; what matters is what ran.
            if let Ok(result) = session.execute_command("show", attack).await {
                if result.success {
                    session.wait_idle().await;
                }
            }
        }
        session.wait_idle().await;
        for (n, attack) in attacks.iter().enumerate() {
            assert!(
                !marker(n).exists(),
                "the argument {attack:?} ran a command past `allowed-tools: Bash(echo *)`"
            );
        }
        // The harmless part still works: a plain argument is echoed.
        let mock2 = Mock::start(json!({"turns": [text_turn("ok")]})).await;
        let session = InteractiveSession::new(InteractiveSessionOptions::new(options(
            &project, &mock2, &events,
        )))
        .unwrap_or_else(|e| panic!("session: {e}"));
        let result = session.execute_command("show", "plain").await.unwrap();
        assert!(result.success, "{result:?}");
        session.wait_idle().await;
        let prompt = mock2.user_texts(0).join("\n");
        assert!(prompt.contains("Echo: plain"), "{prompt}");
    }

    #[tokio::test]
    async fn commands_are_listed_with_their_source_and_bad_ones_are_warnings() {
        let project = project();
        let mock = Mock::start(json!({"turns": [text_turn("ok")]})).await;
        let session = interactive(&project, &mock);
        let commands = session.list_commands().unwrap();
        let find = |name: &str| commands.iter().find(|c| c.name == name);
        let review = find("review").expect("review listed");
        assert_eq!(review.source, CommandSource::Project);
        assert_eq!(review.descriptor.description, "Review one file (project)");
        assert_eq!(
            review.descriptor.argument_hint.as_deref(),
            Some("<file> <focus>")
        );
        let deploy = find("deploy").expect("deploy listed");
        assert_eq!(
            deploy.descriptor.description,
            "Deploy the app (project:git)"
        );
        assert_eq!(find("standup").unwrap().source, CommandSource::User);
        assert_eq!(find("greet").unwrap().source, CommandSource::Host);
        // The built-in `help` and the skill `tidy` keep their names.
        assert_eq!(find("help").unwrap().source, CommandSource::Builtin);
        assert!(find("tidy").is_none());
        let warnings = session.get_warnings();
        let about = |file: &str, needle: &str| {
            assert!(
                warnings.iter().any(|w| w.kind == "custom_command"
                    && w.file.as_ref().is_some_and(|f| f.ends_with(file))
                    && w.message.contains(needle)),
                "no warning about {file} saying {needle:?}: {warnings:#?}"
            );
        };
        about("help.md", "built in");
        about("tidy.md", "skill of that name");
        about("broken.md", "invalid frontmatter");
        assert_eq!(session.get_custom_command_warnings().len(), 3);
        assert_eq!(session.list_custom_commands().len(), 4);

        // A host command given as data runs like the others.
        let greeted = session.execute_command("greet", "Ada").await.unwrap();
        assert!(greeted.success, "{greeted:?}");
        session.wait_idle().await;
        assert!(mock
            .user_texts(0)
            .iter()
            .any(|t| t.contains("Say hello to Ada.")));
        // The system prompt lists the commands the model may run, not the others.
        let system = mock.system(0);
        assert!(
            system.contains("- review <file> <focus>: Review one file"),
            "{system}"
        );
        assert!(!system.contains("Deploy the app"), "{system}");
    }

    #[tokio::test]
    async fn the_model_runs_commands_through_the_skill_tool_unless_disabled() {
        let project = project();
        project.settings(
            ".claude/settings.json",
            json!({"permissions": {"allow": ["Skill"]}}),
        );
        let mock = Mock::start(json!({"turns": [
            tool_turn("toolu_standup", "Skill", json!({"skill": "standup", "args": "Monday"})),
            tool_turn("toolu_deploy", "Skill", json!({"skill": "deploy", "args": "prod"})),
            tool_turn("toolu_review", "Skill", json!({"skill": "review", "args": "notes.md style"})),
            text_turn("Done."),
        ]}))
        .await;
        let session = interactive(&project, &mock);
        let sub = session.subscribe_pull();
        session
            .submit("write my standup", None, None)
            .await
            .unwrap();
        let events = until(&sub, "complete").await;
        let standup = mock.result_for("toolu_standup");
        assert!(standup.contains("STANDUP for Monday"), "{standup}");
        let deploy = mock.result_for("toolu_deploy");
        assert!(deploy.contains("disable-model-invocation"), "{deploy}");
        assert!(!deploy.contains("DEPLOY"), "{deploy}");
        let started: Vec<(String, SkillInvocation)> = events
            .iter()
            .filter_map(|e| match &e.kind {
                InteractiveEventKind::SkillActivation { data }
                    if data.status == SkillActivationStatus::Started =>
                {
                    Some((data.skill_name.clone(), data.invocation))
                }
                _ => None,
            })
            .collect();
        assert_eq!(
            started,
            [
                ("standup".to_string(), SkillInvocation::ModelTool),
                ("review".to_string(), SkillInvocation::ModelTool)
            ]
        );
        let review = mock.result_for("toolu_review");
        assert!(review.contains("Review notes.md for style"), "{review}");
        // `review` names `model: claude-haiku-4-5`: the rest of the prompt went to it.
        let models: Vec<String> = mock
            .bodies()
            .iter()
            .map(|b| b["model"].as_str().unwrap_or_default().to_string())
            .collect();
        assert_eq!(
            models,
            [
                "claude-sonnet-4-5",
                "claude-sonnet-4-5",
                "claude-sonnet-4-5",
                "claude-haiku-4-5"
            ]
        );
        // The user may still run the command the model may not.
        let deployed = session.execute_command("deploy", "prod").await.unwrap();
        assert!(deployed.success, "{deployed:?}");
    }
}

mod plugin_roots {
    use super::*;
    use robota::framework::interactive::{InteractiveSession, InteractiveSessionOptions};

    #[tokio::test]
    async fn a_plugin_root_gives_qualified_commands_that_run() {
        let project = Project::new();
        let root = project.scratch("ops/commands");
        std::fs::write(
            root.join("nightly.md"),
            "---\ndescription: Nightly build\n---\nNIGHTLY for $1\n",
        )
        .unwrap();
        let mock = Mock::start(json!({"turns": [text_turn("Built.")]})).await;
        let events = Events::default();
        let mut options = InteractiveSessionOptions::new(options(&project, &mock, &events));
        options.command_roots = vec![CommandRoot::required(
            &root,
            CommandSource::Plugin {
                plugin: "ops".into(),
            },
        )];
        let session = InteractiveSession::new(options).unwrap();
        let commands = session.list_commands().unwrap();
        let nightly = commands
            .iter()
            .find(|c| c.name == "ops:nightly")
            .expect("ops:nightly listed");
        assert_eq!(
            nightly.source,
            CommandSource::Plugin {
                plugin: "ops".into()
            }
        );
        assert_eq!(nightly.descriptor.description, "Nightly build (plugin:ops)");
        // The bare name finds it too, as for every plugin command with a unique name.
        let result = session.execute_command("nightly", "main").await.unwrap();
        assert!(result.success, "{result:?}");
        session.wait_idle().await;
        assert!(mock
            .user_texts(0)
            .iter()
            .any(|t| t.contains("NIGHTLY for main")));
    }
}
