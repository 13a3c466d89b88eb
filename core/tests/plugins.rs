//! Plugins in real `InteractiveSession`s against mock-llm, with a marketplace in a real git
//! repository (`git init` + commits in a temp folder) and a fake home: `plugin marketplace add`,
//! install, enable, disable, update, uninstall; an enabled plugin's skill activated, its agent
//! listed, its hook firing (a real script writing a file, with `CLAUDE_PLUGIN_ROOT` set), its MCP
//! servers listed as not loaded; precedence and conflicts; every bad file a warning naming it.
#![cfg(unix)]

mod session_common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use robota::framework::interactive::{InteractiveSession, InteractiveSessionOptions};
use robota::framework::plugins::{PluginManager, PluginScope};
use serde_json::{json, Value};
use session_common::*;

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn git(dir: &Path, args: &[&str]) {
    let status = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args([
            "-c",
            "init.defaultBranch=main",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(status.status.success(), "git {args:?}: {status:?}");
}

/// A marketplace `tools` offering `formatter` (every part) in a git repository; `record` is
/// where the plugin's hook writes.
fn marketplace(root: &Path, record: &Path, version: &str) {
    write(
        &root.join(".claude-plugin/marketplace.json"),
        &json!({
            "name": "tools",
            "owner": {"name": "QA"},
            "plugins": [
                {"name": "formatter", "source": "./plugins/formatter", "description": "Formats code"},
                {"name": "escape", "source": "../../outside"},
                {"name": "bad name!", "source": "./x"},
                {"name": "npm-one", "source": {"source": "npm", "package": "x"}}
            ]
        })
        .to_string(),
    );
    let plugin = root.join("plugins/formatter");
    write(
        &plugin.join(".claude-plugin/plugin.json"),
        &json!({
            "name": "formatter",
            "version": version,
            "description": "Formats code",
            "author": {"name": "QA", "email": "qa@example.com"},
            "homepage": "https://example.com/formatter",
            "keywords": ["format"]
        })
        .to_string(),
    );
    write(
        &plugin.join("skills/tidy/SKILL.md"),
        "---\ndescription: Tidy a file's imports. Use when asked to tidy.\n---\nTIDY-BODY for $ARGUMENTS\n",
    );
    write(
        &plugin.join("skills/review/SKILL.md"),
        "---\ndescription: The plugin's review\n---\nPLUGIN-REVIEW\n",
    );
    write(
        &plugin.join("agents/lint-agent.md"),
        "---\nname: linter\ndescription: Lints the code base\ntools: Read, Grep\n---\nYou lint.\n",
    );
    write(
        &plugin.join("commands/fmt.md"),
        "---\ndescription: Format\n---\nFormat $ARGUMENTS\n",
    );
    write(
        &plugin.join("hooks/record.sh"),
        "#!/bin/sh\nprintf '%s %s\\n' \"$1\" \"$CLAUDE_PLUGIN_ROOT\" >> \"$2\"\n",
    );
    write(
        &plugin.join("hooks/hooks.json"),
        &json!({
            "description": "records prompts",
            "hooks": {
                "UserPromptSubmit": [{"hooks": [{
                    "type": "command",
                    "command": format!("sh \"${{CLAUDE_PLUGIN_ROOT}}/hooks/record.sh\" {version} {}", quote(&record.to_string_lossy()))
                }]}]
            }
        })
        .to_string(),
    );
    // A real MCP server (the Python test server of tests/mcp-servers), told its plugin's folder.
    let servers = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/mcp-servers");
    assert!(
        servers.join(".venv/bin/python").is_file(),
        "the MCP test servers are not installed: run tests/mcp-servers/setup.sh"
    );
    write(
        &plugin.join(".mcp.json"),
        &json!({"mcpServers": {"db": {
            "command": servers.join(".venv/bin/python"),
            "args": [servers.join("python_server.py")],
            "env": {"PLUGIN_DIR": "${CLAUDE_PLUGIN_ROOT}"}
        }}})
        .to_string(),
    );
}

fn interactive(project: &Project, mock: &Mock) -> Arc<InteractiveSession> {
    let events = Events::default();
    InteractiveSession::new(InteractiveSessionOptions::new(options(
        project, mock, &events,
    )))
    .unwrap_or_else(|e| panic!("session: {e}"))
}

async fn run(
    session: &InteractiveSession,
    args: &str,
) -> robota::framework::commands::CommandResult {
    session.execute_command("plugin", args).await.unwrap()
}

fn warnings(session: &InteractiveSession) -> Vec<String> {
    session
        .session()
        .warnings()
        .iter()
        .filter(|w| w.kind == "plugin")
        .map(|w| {
            format!(
                "{}: {}",
                w.file
                    .as_ref()
                    .map(|f| f.display().to_string())
                    .unwrap_or_default(),
                w.message
            )
        })
        .collect()
}

fn system_of(mock: &Mock, index: usize) -> String {
    let body = &mock.bodies()[index];
    match &body["system"] {
        Value::String(text) => text.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

#[tokio::test]
async fn a_git_marketplace_plugin_is_installed_used_updated_disabled_and_uninstalled() {
    let project = Project::new();
    let repo = project.scratch("market");
    let record = project.scratch("out").join("hook.log");
    marketplace(&repo, &record, "1.0.0");
    git(&repo, &["init", "-q"]);
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-qm", "v1"]);
    project.write(
        ".claude/skills/review/SKILL.md",
        "---\ndescription: The project's review\n---\nPROJECT-REVIEW\n",
    );

    let mock = Mock::start(json!({"turns": [text_turn("one"), text_turn("two"), text_turn("three"), text_turn("four"), text_turn("five")]})).await;
    let session = interactive(&project, &mock);
    assert!(session.list_plugins().plugins.is_empty());
    let added = run(
        &session,
        &format!("marketplace add file://{}", repo.display()),
    )
    .await;
    assert!(added.success, "{}", added.message);
    assert!(added.message.contains("tools"), "{}", added.message);
    // The bad entries of the catalog are warnings naming the file; the good one is offered.
    assert!(
        added.message.contains("bad name!") && added.message.contains("npm"),
        "{}",
        added.message
    );
    let clone = project.home.join(".robota/plugins/marketplaces/tools");
    assert!(clone.join(".claude-plugin/marketplace.json").is_file());
    // Nothing is written into the project.
    assert!(!project.path(".robota").exists());

    let escape = run(&session, "install escape@tools").await;
    assert!(
        !escape.success
            && escape
                .message
                .contains("not a folder inside the marketplace"),
        "{}",
        escape.message
    );
    let installed = run(&session, "install formatter@tools").await;
    assert!(installed.success, "{}", installed.message);
    let user_settings: Value = serde_json::from_str(
        &std::fs::read_to_string(project.home.join(".robota/settings.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(user_settings["enabledPlugins"]["formatter@tools"], true);
    assert!(!project.path(".claude/settings.json").exists());
    // This session was assembled before the install: the plugin is listed, not loaded.
    let listing = session.list_plugins();
    assert_eq!(listing.plugins.len(), 1);
    assert!(
        listing.plugins[0].enabled && listing.plugins[0].installed && !listing.plugins[0].loaded
    );
    let reload = session.execute_command("reload-plugins", "").await.unwrap();
    assert!(
        reload
            .message
            .contains("Not yet in this session: formatter@tools"),
        "{}",
        reload.message
    );

    // A new session loads it: skills, agents, hooks, and its MCP server runs in the session as
    // `plugin_formatter_db`.
    let session = interactive(&project, &mock);
    assert!(warnings(&session).is_empty(), "{:#?}", warnings(&session));
    // The plugin's server connects in the background.
    assert!(session.wait_for_mcp_servers(None).await);
    let listing = session.list_plugins();
    let plugin = &listing.plugins[0];
    let install_path = project.home.join(".robota/plugins/cache/tools/formatter");
    assert_eq!(plugin.path.as_deref(), Some(install_path.as_path()));
    assert!(plugin.loaded);
    assert_eq!(plugin.version.as_deref(), Some("1.0.0"));
    assert_eq!(plugin.skills, ["formatter:review", "formatter:tidy"]);
    assert_eq!(plugin.agents, ["formatter:linter"]);
    assert_eq!(plugin.commands, ["formatter:fmt"]);
    assert_eq!(plugin.mcp_servers.len(), 1);
    assert_eq!(
        plugin.mcp_servers[0].status,
        "plugin_formatter_db: connected"
    );
    assert_eq!(
        plugin.mcp_servers[0].config["env"]["PLUGIN_DIR"],
        install_path.display().to_string()
    );
    let servers = session.list_mcp_servers();
    let db = servers
        .iter()
        .find(|s| s.name == "plugin_formatter_db")
        .expect("the plugin's MCP server runs in the session");
    assert!(
        db.tools
            .iter()
            .any(|t| t == "mcp__plugin_formatter_db__add"),
        "{:?}",
        db.tools
    );
    assert_eq!(
        serde_json::to_value(&db.origin).unwrap(),
        json!({"kind": "plugin", "plugin": "formatter"})
    );
    let skills = session.list_skills();
    let tidy = skills
        .iter()
        .find(|s| s.name == "formatter:tidy")
        .expect("plugin skill");
    assert_eq!(tidy.source.kind(), "plugin");
    // Precedence: the project's `review` and the plugin's `formatter:review` both exist.
    assert_eq!(
        skills
            .iter()
            .find(|s| s.name == "review")
            .unwrap()
            .source
            .kind(),
        "project"
    );
    assert!(skills.iter().any(|s| s.name == "formatter:review"));
    let agents = session.execute_command("agent", "list").await.unwrap();
    assert!(
        agents.message.contains("formatter:linter"),
        "{}",
        agents.message
    );
    let list_text = run(&session, "list").await.message;
    assert!(
        list_text.contains("formatter@tools 1.0.0 [enabled, loaded]"),
        "{list_text}"
    );
    assert!(
        list_text.contains("plugin_formatter_db: connected"),
        "{list_text}"
    );

    // The user activates the plugin's skill by its qualified name; the hook fires on the prompt.
    let started = session
        .execute_command("formatter:tidy", "src/lib.rs")
        .await
        .unwrap();
    assert!(started.success, "{}", started.message);
    session.wait_idle().await;
    let sent = mock.user_texts(0).join("\n");
    assert!(sent.contains("TIDY-BODY for src/lib.rs"), "{sent}");
    let system = system_of(&mock, 0);
    assert!(
        system.contains("formatter:tidy") && system.contains("formatter:linter"),
        "{system}"
    );
    assert_eq!(
        lines(&record),
        [format!("1.0.0 {}", install_path.display())]
    );
    // The plugin's command runs by its qualified name, like the user's own commands.
    let commands = session.list_custom_commands();
    let fmt = commands
        .iter()
        .find(|c| c.name == "formatter:fmt")
        .expect("plugin command");
    assert_eq!(fmt.source.to_string(), "plugin formatter");
    let ran = session
        .execute_command("formatter:fmt", "lib.rs")
        .await
        .unwrap();
    assert!(ran.success, "{}", ran.message);
    session.wait_idle().await;
    assert!(
        mock.user_texts(1).join("\n").contains("Format lib.rs"),
        "{:?}",
        mock.user_texts(1)
    );

    // Update: a new commit in the marketplace repository.
    marketplace(&repo, &record, "1.1.0");
    write(
        &repo.join("plugins/formatter/skills/extra/SKILL.md"),
        "---\ndescription: New in 1.1\n---\nEXTRA\n",
    );
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-qm", "v1.1"]);
    let updated = run(&session, "update formatter").await;
    assert!(
        updated.success && updated.message.contains("1.1.0"),
        "{}",
        updated.message
    );
    let session = interactive(&project, &mock);
    assert!(session
        .list_skills()
        .iter()
        .any(|s| s.name == "formatter:extra"));
    session.submit("hello", None, None).await.unwrap();
    session.wait_idle().await;
    assert_eq!(
        lines(&record).last().unwrap(),
        &format!("1.1.0 {}", install_path.display())
    );

    // Disable: a new session has none of it and the hook stays quiet.
    let disabled = run(&session, "disable formatter@tools").await;
    assert!(disabled.success, "{}", disabled.message);
    let session = interactive(&project, &mock);
    assert!(!session
        .list_skills()
        .iter()
        .any(|s| s.name.starts_with("formatter:")));
    let before = lines(&record).len();
    session.submit("quiet", None, None).await.unwrap();
    session.wait_idle().await;
    assert_eq!(lines(&record).len(), before);
    let listing = session.list_plugins();
    assert!(!listing.plugins[0].enabled && listing.plugins[0].installed);

    // Enable in the project's settings: a later layer wins over the user's `false`.
    let enabled = run(&session, "enable formatter --scope project").await;
    assert!(enabled.success, "{}", enabled.message);
    let project_settings: Value =
        serde_json::from_str(&project.read(".claude/settings.json")).unwrap();
    assert_eq!(project_settings["enabledPlugins"]["formatter@tools"], true);
    let session = interactive(&project, &mock);
    assert!(session
        .list_skills()
        .iter()
        .any(|s| s.name == "formatter:tidy"));

    // Uninstall removes the copy and the user's entry.
    let removed = run(&session, "uninstall formatter@tools").await;
    assert!(removed.success, "{}", removed.message);
    assert!(!install_path.exists());
    let user_settings: Value = serde_json::from_str(
        &std::fs::read_to_string(project.home.join(".robota/settings.json")).unwrap(),
    )
    .unwrap();
    assert!(user_settings["enabledPlugins"]
        .get("formatter@tools")
        .is_none());
    // Still enabled by the project file, but not installed: a warning, never an error.
    let session = interactive(&project, &mock);
    let found = warnings(&session);
    assert!(
        found.iter().any(|w| w.contains(".claude/settings.json") && w.contains("enabled but not installed")),
        "{found:#?}"
    );
    let removed = run(&session, "marketplace remove tools").await;
    assert!(removed.success && !clone.exists(), "{}", removed.message);
}

/// A folder marketplace whose plugin has every kind of bad file.
fn broken_marketplace(root: &Path) {
    write(
        &root.join(".claude-plugin/marketplace.json"),
        &json!({"name": "local", "plugins": [
            {"name": "broken", "source": "./broken"},
            {"name": "bare", "source": "./bare"},
            "not an object"
        ]})
        .to_string(),
    );
    let plugin = root.join("broken");
    write(
        &plugin.join(".claude-plugin/plugin.json"),
        "{\"name\": \"broken\", \"version\": 3,",
    );
    write(
        &plugin.join("hooks/hooks.json"),
        "{\"hooks\": {\"PreToolUse\": \"not a list\"}}",
    );
    write(&plugin.join(".mcp.json"), "[1, 2]");
    write(
        &plugin.join("skills/bad/SKILL.md"),
        "---\ndescription: [unclosed\n  - x: y: z\n---\nX\n",
    );
    write(&plugin.join("agents/bad.md"), "no frontmatter here\n");
    // A plugin without a manifest is still a plugin, named by the marketplace.
    write(
        &root.join("bare/skills/hello/SKILL.md"),
        "---\ndescription: Say hello\n---\nHELLO\n",
    );
}

#[tokio::test]
async fn bad_plugin_files_and_settings_are_warnings_naming_the_file() {
    let project = Project::new();
    let market = project.scratch("local-market");
    broken_marketplace(&market);
    let manager = PluginManager::new(&project.home, &project.root);
    let source = robota::framework::plugins::MarketplaceSource::from_argument(
        &market.to_string_lossy(),
        &project.root,
    )
    .unwrap();
    let (info, found) = manager.add_marketplace(source).unwrap();
    assert_eq!(info.plugins, ["broken", "bare"]);
    assert!(
        found.iter().any(|w| w.message.contains("plugins[2]")),
        "{found:#?}"
    );
    manager.install("broken@local", PluginScope::User).unwrap();
    manager.install("bare", PluginScope::User).unwrap();
    // Settings: a bad value and a plugin that is not installed, in the project's file.
    project.settings(
        ".claude/settings.json",
        json!({
            "enabledPlugins": {"ghost@local": true, "bare@local": "yes", "noid": true},
            "extraKnownMarketplaces": {"team": {"source": {"source": "svn", "url": "x"}}}
        }),
    );
    let mock = Mock::start(json!({"turns": [text_turn("ok")]})).await;
    let session = interactive(&project, &mock);
    let found = warnings(&session);
    let expect = |file: &str, needle: &str| {
        assert!(
            found.iter().any(|w| w.contains(file) && w.contains(needle)),
            "no warning naming {file} with {needle:?}: {found:#?}"
        );
    };
    expect("broken/.claude-plugin/plugin.json", "not valid JSON");
    expect("broken/hooks/hooks.json", "PreToolUse");
    expect("broken/.mcp.json", "JSON object");
    expect(
        ".claude/settings.json",
        "enabledPlugins.bare@local must be true or false",
    );
    expect(
        ".claude/settings.json",
        "`ghost@local` is enabled but not installed",
    );
    expect(".claude/settings.json", "`noid` is not name@marketplace");
    expect(".claude/settings.json", "extraKnownMarketplaces.team");
    let skill_warnings: Vec<String> = session
        .get_skill_warnings()
        .iter()
        .map(|w| w.to_string())
        .collect();
    assert!(
        skill_warnings
            .iter()
            .any(|w| w.contains("broken/skills/bad/SKILL.md")),
        "{skill_warnings:#?}"
    );
    let agent_warnings: Vec<String> = session
        .session()
        .warnings()
        .iter()
        .filter(|w| w.kind == "agent_definition")
        .map(|w| format!("{:?} {}", w.file, w.message))
        .collect();
    assert!(
        agent_warnings
            .iter()
            .any(|w| w.contains("broken/agents/bad.md")),
        "{agent_warnings:#?}"
    );
    // `bare@local` is "yes" in the project (ignored), so the user's `true` stands.
    let skills = session.list_skills();
    assert!(skills.iter().any(|s| s.name == "bare:hello"), "{skills:#?}");
    let listing = session.list_plugins();
    let broken = listing
        .plugins
        .iter()
        .find(|p| p.id == "broken@local")
        .unwrap();
    assert!(broken.loaded && broken.installed);
    // The session runs.
    session.submit("hi", None, None).await.unwrap();
    session.wait_idle().await;
    assert_eq!(mock.bodies().len(), 1);
}

#[tokio::test]
async fn two_enabled_plugins_with_one_name_load_once_and_bad_commands_are_refused() {
    let project = Project::new();
    let mock = Mock::start(json!({"turns": []})).await;
    for market in ["alpha", "beta"] {
        let root = project.scratch(market);
        write(
            &root.join(".claude-plugin/marketplace.json"),
            &json!({"name": market, "plugins": [{"name": "same", "source": "./same"}]}).to_string(),
        );
        write(
            &root.join("same/skills/s/SKILL.md"),
            &format!("---\ndescription: from {market}\n---\nX\n"),
        );
    }
    let session = interactive(&project, &mock);
    for market in ["alpha", "beta"] {
        let path: PathBuf = project.scratch(market);
        assert!(
            run(&session, &format!("marketplace add {}", path.display()))
                .await
                .success
        );
    }
    let ambiguous = run(&session, "install same").await;
    assert!(
        !ambiguous.success && ambiguous.message.contains("alpha, beta"),
        "{}",
        ambiguous.message
    );
    assert!(run(&session, "install same@alpha").await.success);
    assert!(run(&session, "install same@beta").await.success);
    let session = interactive(&project, &mock);
    let found = warnings(&session);
    assert!(
        found
            .iter()
            .any(|w| w.contains("same@beta") && w.contains("same name")),
        "{found:#?}"
    );
    let skill = session
        .list_skills()
        .into_iter()
        .find(|s| s.name == "same:s")
        .unwrap();
    assert_eq!(skill.description, "from alpha");
    // Bad arguments are refused with usage, never a panic.
    for args in [
        "install",
        "frobnicate",
        "install x@y --scope galaxy",
        "enable nope",
        "marketplace add /no/such/dir/x y",
    ] {
        let result = run(&session, args).await;
        assert!(!result.success, "{args}: {}", result.message);
    }
}

#[tokio::test]
async fn disable_all_hooks_silences_plugin_hooks_too() {
    let project = Project::new();
    let market = project.scratch("folder-market");
    let record = project.scratch("out").join("hook.log");
    marketplace(&market, &record, "2.0.0");
    let manager = PluginManager::new(&project.home, &project.root);
    let source = robota::framework::plugins::MarketplaceSource::from_argument(
        &market.to_string_lossy(),
        &project.root,
    )
    .unwrap();
    manager.add_marketplace(source).unwrap();
    manager
        .install("formatter@tools", PluginScope::User)
        .unwrap();
    let mock = Mock::start(json!({"turns": [text_turn("one"), text_turn("two")]})).await;

    let session = interactive(&project, &mock);
    session.submit("first", None, None).await.unwrap();
    session.wait_idle().await;
    assert_eq!(lines(&record).len(), 1, "the plugin hook runs");

    project.settings(".claude/settings.json", json!({"disableAllHooks": true}));
    let session = interactive(&project, &mock);
    assert!(session
        .list_skills()
        .iter()
        .any(|s| s.name == "formatter:tidy"));
    session.submit("second", None, None).await.unwrap();
    session.wait_idle().await;
    assert_eq!(
        lines(&record).len(),
        1,
        "disableAllHooks turns plugin hooks off"
    );
}
