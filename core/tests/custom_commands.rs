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
