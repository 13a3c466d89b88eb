//! Project context on temp project trees with a fake HOME: AGENTS.md/CLAUDE.md discovery, the
//! byte budget, memory and task files, compact instructions, project detection, the system prompt
//! order, and `@file` references with every failure mode.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use robota::framework::context::{
    build_system_prompt, detect_project, extract_compact_instructions, load_project_context,
    resolve_file_references, ContextFileKind, ContextOptions, FileRefErrorKind, FileRefOptions,
    FileRefReason, ProjectContext, PromptMetadata, PromptSection, TaskStatus, MEMORY_MAX_BYTES,
    MEMORY_MAX_LINES, SYSTEM_PROMPT_SECTIONS,
};
use tempfile::TempDir;

struct Tree {
    _dir: TempDir,
    root: PathBuf,
    home: PathBuf,
}

impl Tree {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        // Canonical paths so assertions compare equal on systems where /tmp is a link.
        let base = fs::canonicalize(dir.path()).expect("canonical");
        let root = base.join("work");
        let home = base.join("home");
        fs::create_dir_all(&root).expect("root");
        fs::create_dir_all(&home).expect("home");
        Tree {
            _dir: dir,
            root,
            home,
        }
    }

    fn write(&self, relative: &str, text: &str) -> PathBuf {
        let path = self.root.join(relative);
        write(&path, text);
        path
    }

    fn write_home(&self, relative: &str, text: &str) -> PathBuf {
        let path = self.home.join(relative);
        write(&path, text);
        path
    }

    fn mkdir(&self, relative: &str) -> PathBuf {
        let path = self.root.join(relative);
        fs::create_dir_all(&path).expect("mkdir");
        path
    }

    fn context(&self, cwd: &Path) -> ProjectContext {
        load_project_context(&ContextOptions::new(cwd, Some(self.home.clone()))).expect("context")
    }
}

fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    fs::write(path, text).expect("write");
}

fn metadata(cwd: &Path) -> PromptMetadata {
    PromptMetadata {
        cwd: cwd.to_owned(),
        platform: "linux (x86_64)".into(),
        date: "2026-01-02".into(),
        model: Some("claude-sonnet-4-5".into()),
        language: Some("ko".into()),
        permission_mode: Some("plan".into()),
        extra_sections: vec![PromptSection {
            title: "Built-in Commands".into(),
            content: "- compact: summarise the conversation".into(),
        }],
    }
}

// ---------------------------------------------------------------------------------------------
// Instruction files
// ---------------------------------------------------------------------------------------------

#[test]
fn discovers_instruction_files_from_git_root_down_to_cwd() {
    let tree = Tree::new();
    // Above the repository: must not be loaded.
    tree.write("AGENTS.md", "OUTSIDE-REPO");
    tree.mkdir("repo/.git");
    tree.write("repo/AGENTS.md", "ROOT-AGENTS");
    tree.write("repo/CLAUDE.md", "ROOT-CLAUDE");
    tree.write("repo/.claude/CLAUDE.md", "ROOT-DOT-CLAUDE");
    tree.write("repo/pkg/AGENTS.md", "PKG-AGENTS");
    tree.write("repo/pkg/sub/AGENTS.local.md", "SUB-AGENTS-LOCAL");
    tree.write("repo/pkg/sub/CLAUDE.local.md", "SUB-CLAUDE-LOCAL");
    tree.write("repo/pkg/sub/AGENTS.md", "SUB-AGENTS");
    // A sibling directory not on the path from root to cwd.
    tree.write("repo/other/AGENTS.md", "SIBLING");
    tree.write_home(".robota/AGENTS.md", "USER-AGENTS");
    tree.write_home(".claude/CLAUDE.md", "USER-CLAUDE");

    let cwd = tree.root.join("repo/pkg/sub");
    let context = tree.context(&cwd);
    assert_eq!(
        context.git_root.as_deref(),
        Some(tree.root.join("repo").as_path())
    );

    let order: Vec<(&str, ContextFileKind)> = context
        .instructions
        .iter()
        .map(|file| (file.content.as_str(), file.kind))
        .collect();
    assert_eq!(
        order,
        vec![
            ("USER-AGENTS", ContextFileKind::UserAgentsMd),
            ("ROOT-AGENTS", ContextFileKind::AgentsMd),
            ("PKG-AGENTS", ContextFileKind::AgentsMd),
            ("SUB-AGENTS", ContextFileKind::AgentsMd),
            ("SUB-AGENTS-LOCAL", ContextFileKind::AgentsLocalMd),
            ("USER-CLAUDE", ContextFileKind::UserClaudeMd),
            ("ROOT-CLAUDE", ContextFileKind::ClaudeMd),
            ("ROOT-DOT-CLAUDE", ContextFileKind::ClaudeMd),
            ("SUB-CLAUDE-LOCAL", ContextFileKind::ClaudeLocalMd),
        ]
    );
    let displays: Vec<&str> = context
        .instructions
        .iter()
        .map(|file| file.display_path.as_str())
        .collect();
    assert_eq!(displays[0], "~/.robota/AGENTS.md");
    assert_eq!(displays[2], "pkg/AGENTS.md");
    assert_eq!(displays[7], ".claude/CLAUDE.md");

    let prompt = build_system_prompt(&context, &metadata(&cwd));
    assert!(!prompt.contains("OUTSIDE-REPO"));
    assert!(!prompt.contains("SIBLING"));
    // Nearest file last within its section; AGENTS section before CLAUDE section.
    let position = |needle: &str| {
        prompt
            .find(needle)
            .unwrap_or_else(|| panic!("{needle} missing"))
    };
    assert!(position("USER-AGENTS") < position("ROOT-AGENTS"));
    assert!(position("ROOT-AGENTS") < position("PKG-AGENTS"));
    assert!(position("PKG-AGENTS") < position("SUB-AGENTS\n"));
    assert!(position("SUB-AGENTS-LOCAL") < position("## Project Notes"));
    assert!(position("## Project Notes") < position("USER-CLAUDE"));
    assert!(prompt.contains("Source: `pkg/AGENTS.md`\n\nPKG-AGENTS"));

    // The loaded-file list reports everything read.
    assert_eq!(context.loaded_files.len(), 9);
    assert!(context.loaded_files.iter().all(|file| !file.truncated));
    assert!(context.warnings.is_empty());
}

#[test]
fn outside_a_repository_every_ancestor_is_read() {
    let tree = Tree::new();
    tree.write("a/AGENTS.md", "A-LEVEL");
    tree.write("a/b/CLAUDE.md", "B-LEVEL");
    let cwd = tree.root.join("a/b");
    let context = tree.context(&cwd);
    assert_eq!(context.git_root, None);
    let contents: Vec<&str> = context
        .instructions
        .iter()
        .map(|file| file.content.as_str())
        .collect();
    assert!(contents.contains(&"A-LEVEL"), "{contents:?}");
    assert!(contents.contains(&"B-LEVEL"), "{contents:?}");
}

#[cfg(unix)]
#[test]
fn a_file_linked_under_two_names_is_loaded_once() {
    let tree = Tree::new();
    tree.mkdir("repo/.git");
    tree.write("repo/AGENTS.md", "SHARED");
    std::os::unix::fs::symlink("AGENTS.md", tree.root.join("repo/CLAUDE.md")).expect("link");
    let context = tree.context(&tree.root.join("repo"));
    assert_eq!(context.instructions.len(), 1);
    assert_eq!(context.instructions[0].kind, ContextFileKind::AgentsMd);
}

#[test]
fn the_budget_keeps_the_nearest_files_and_cuts_at_a_char_boundary() {
    let tree = Tree::new();
    tree.mkdir("repo/.git");
    // 3 bytes per char: a cut at an arbitrary byte would split one.
    let root_text = "가".repeat(100); // 300 bytes
    tree.write("repo/AGENTS.md", &root_text);
    tree.write("repo/sub/AGENTS.md", &"n".repeat(200));
    tree.write_home(".robota/AGENTS.md", "USER-FILE");
    let cwd = tree.root.join("repo/sub");
    let mut options = ContextOptions::new(&cwd, Some(tree.home.clone()));
    options.instructions_budget_bytes = 250;
    let context = load_project_context(&options).expect("context");

    let by_path = |suffix: &str| {
        context
            .instructions
            .iter()
            .find(|file| file.display_path == suffix)
            .unwrap_or_else(|| panic!("{suffix} missing"))
    };
    let nearest = by_path("sub/AGENTS.md");
    assert!(!nearest.truncated);
    assert_eq!(nearest.content.len(), 200);
    let root = by_path("AGENTS.md");
    assert!(root.truncated);
    assert_eq!(root.total_bytes, 300);
    // 50 bytes left; 48 is the last char boundary.
    assert_eq!(root.content.len(), 48);
    assert_eq!(root.content, "가".repeat(16));
    let user = by_path("~/.robota/AGENTS.md");
    assert!(user.truncated);
    assert!(user.content.is_empty());

    let total: usize = context.instructions.iter().map(|f| f.content.len()).sum();
    assert!(total <= 250);

    let prompt = build_system_prompt(&context, &metadata(&cwd));
    assert!(
        prompt.contains("[truncated: the first 48 of 300 bytes are shown"),
        "{prompt}"
    );
    assert!(
        prompt.contains("Source: `~/.robota/AGENTS.md`\n\n[omitted: 9 bytes"),
        "{prompt}"
    );
    let root_record = context
        .loaded_files
        .iter()
        .find(|file| file.path == tree.root.join("repo/AGENTS.md"))
        .expect("record");
    assert_eq!((root_record.bytes, root_record.included_bytes), (300, 48));
    assert!(root_record.truncated);
}

// ---------------------------------------------------------------------------------------------
// System prompt
// ---------------------------------------------------------------------------------------------

#[test]
fn the_system_prompt_has_a_fixed_section_order() {
    let tree = Tree::new();
    tree.mkdir("repo/.git");
    write(
        &tree.root.join("repo/.git/HEAD"),
        "ref: refs/heads/feature/x\n",
    );
    tree.write("repo/AGENTS.md", "agents text");
    tree.write("repo/CLAUDE.md", "claude text");
    tree.write("repo/.robota/memory/MEMORY.md", "- remembered fact\n");
    tree.write(
        "repo/.agents/tasks/one.md",
        "# Ship it\n- **Status**: in-progress\n\n## Objective\nDo the thing.\n\n- [ ] step one\n- [x] done\n",
    );
    tree.write("repo/Cargo.toml", "[package]\nname = \"demo\"\n");
    let cwd = tree.root.join("repo");
    let context = tree.context(&cwd);
    let meta = metadata(&cwd);
    let prompt = build_system_prompt(&context, &meta);

    let mut last = 0;
    for title in SYSTEM_PROMPT_SECTIONS
        .iter()
        .chain(["Built-in Commands"].iter())
    {
        let heading = format!("## {title}\n");
        let at = prompt
            .find(&heading)
            .unwrap_or_else(|| panic!("{heading} missing from\n{prompt}"));
        assert!(at >= last, "{title} out of order");
        last = at;
    }
    assert!(prompt.starts_with("## Agent Instructions\n"));
    assert!(prompt.contains(&format!("- Working directory: `{}`", cwd.display())));
    assert!(prompt.contains("- Git branch: feature/x"));
    assert!(prompt.contains("- Platform: linux (x86_64)"));
    assert!(prompt.contains("- Date: 2026-01-02"));
    assert!(prompt.contains("- Model: claude-sonnet-4-5"));
    assert!(prompt.contains("## Response Language\n\nko"));
    assert!(prompt.contains("- Permission mode: plan"));
    assert!(prompt.contains("- Name: demo"));
    assert!(prompt.contains("- Language: Rust, package manager: cargo (from `Cargo.toml`)"));
    assert!(prompt.contains("- remembered fact"));
    assert!(prompt.contains("### Ship it"));

    // Pure: same input, same output.
    assert_eq!(prompt, build_system_prompt(&context, &meta));
}

#[test]
fn empty_sections_are_left_out() {
    let tree = Tree::new();
    let cwd = tree.mkdir("bare");
    let context = load_project_context(&ContextOptions::new(&cwd, None)).expect("context");
    let meta = PromptMetadata::new(&cwd);
    let prompt = build_system_prompt(&context, &meta);
    assert!(prompt.starts_with("## Environment\n"), "{prompt}");
    for absent in [
        "Agent Instructions",
        "Project Notes",
        "Project Memory",
        "Active Task Context",
        "Current Project",
        "Response Language",
        "Permission Mode",
    ] {
        assert!(!prompt.contains(absent), "{absent} in\n{prompt}");
    }
    // PromptMetadata::new fills neutral facts.
    assert!(meta.date.len() == 10 && meta.date.as_bytes()[4] == b'-');
    assert!(meta.platform.contains(std::env::consts::OS));
}

// ---------------------------------------------------------------------------------------------
// Memory
// ---------------------------------------------------------------------------------------------

#[test]
fn memory_is_capped_at_200_lines() {
    let tree = Tree::new();
    let text: String = (1..=300).map(|n| format!("line {n}\n")).collect();
    tree.write("p/.robota/memory/MEMORY.md", &text);
    let context = tree.context(&tree.root.join("p"));
    let memory = context.memory.as_ref().expect("memory");
    assert_eq!(MEMORY_MAX_LINES, 200);
    assert!(memory.truncated);
    assert_eq!(memory.total_lines, 300);
    assert_eq!(memory.content.lines().count(), 200);
    assert!(memory.content.ends_with("line 200\n"));
    let prompt = build_system_prompt(&context, &metadata(&context.cwd));
    assert!(prompt.contains("line 200"));
    assert!(!prompt.contains("line 201"));
    assert!(prompt.contains("[truncated:"));
}

#[test]
fn memory_is_capped_at_25_kib() {
    let tree = Tree::new();
    // 50 lines of 1000 bytes: under the line cap, over the byte cap.
    let text: String = (0..50).map(|_| format!("{}\n", "é".repeat(500))).collect();
    tree.write("p/.robota/memory/MEMORY.md", &text);
    let context = tree.context(&tree.root.join("p"));
    let memory = context.memory.as_ref().expect("memory");
    assert_eq!(MEMORY_MAX_BYTES, 25 * 1024);
    assert!(memory.truncated);
    assert!(memory.content.len() <= MEMORY_MAX_BYTES);
    assert!(memory.content.len() > MEMORY_MAX_BYTES - 4);
    assert_eq!(memory.total_bytes, text.len());

    // Small memory: whole and not truncated; no memory file: none.
    tree.write("q/.robota/memory/MEMORY.md", "short");
    let small = tree.context(&tree.root.join("q"));
    assert_eq!(
        small
            .memory
            .as_ref()
            .map(|m| (m.content.as_str(), m.truncated)),
        Some(("short", false))
    );
    assert!(tree.context(&tree.mkdir("r")).memory.is_none());
}

// ---------------------------------------------------------------------------------------------
// Active task context
// ---------------------------------------------------------------------------------------------

#[test]
fn active_tasks_are_selected_and_rendered_as_neutral_markdown() {
    let tree = Tree::new();
    tree.mkdir("p/.git");
    write(
        &tree.root.join("p/.git/HEAD"),
        "ref: refs/heads/feat-login\n",
    );
    tree.write(
        "p/.agents/tasks/README.md",
        "# Readme\n- **Status**: in-progress\n",
    );
    tree.write(
        "p/.agents/tasks/completed/old.md",
        "# Old\n- **Status**: in-progress\n",
    );
    tree.write(
        "p/.agents/tasks/done.md",
        "# Done task\n- **Status**: completed\n",
    );
    tree.write(
        "p/.agents/tasks/a-todo.md",
        "# Todo task\n- **Status**: todo\n",
    );
    tree.write(
        "p/.agents/tasks/b-progress.md",
        "# Progress task\n- **Status**: in-progress\n",
    );
    tree.write(
        "p/.agents/tasks/c-blocked.md",
        "# Blocked task\n- **Status**: blocked\n",
    );
    tree.write(
        "p/.agents/tasks/z-branch.md",
        "# Login\n- **Status**: todo\n- **Branch**: feat-login\n- **Scope**: core/auth\n\n\
         ## Objective\nUsers can log in.\n\n## Notes\nnot part of the objective\n\n\
         - [ ] write the form\n- [x] design\n- [ ] add tests\n",
    );
    tree.write("p/.agents/tasks/notes.txt", "not markdown");

    let context = tree.context(&tree.root.join("p"));
    assert_eq!(context.git_branch.as_deref(), Some("feat-login"));
    let titles: Vec<&str> = context.tasks.iter().map(|t| t.title.as_str()).collect();
    // Branch match first, then in-progress, then todo; at most three; blocked drops off.
    assert_eq!(titles, vec!["Login", "Progress task", "Todo task"]);
    let login = &context.tasks[0];
    assert_eq!(login.status, TaskStatus::Todo);
    assert_eq!(login.scope.as_deref(), Some("core/auth"));
    assert_eq!(login.objective.as_deref(), Some("Users can log in."));
    assert_eq!(login.open_items, vec!["write the form", "add tests"]);
    assert_eq!(login.relative_path, ".agents/tasks/z-branch.md");

    let text = context.task_context.as_deref().expect("task context");
    assert!(
        text.starts_with("### Login\n- **Path:** `.agents/tasks/z-branch.md`\n- **Status:** todo")
    );
    assert!(text.contains("- **Open items:**\n  - write the form\n  - add tests"));
    assert!(!text.contains("Readme") && !text.contains("Old") && !text.contains("Done task"));
    let prompt = build_system_prompt(&context, &metadata(&context.cwd));
    assert!(
        prompt.find("## Active Task Context").expect("section")
            < prompt.find("## Environment").expect("env")
    );

    // Turned off: nothing loaded.
    let mut options = ContextOptions::new(tree.root.join("p"), None);
    options.load_task_context = false;
    let off = load_project_context(&options).expect("context");
    assert!(off.tasks.is_empty() && off.task_context.is_none());
}

// ---------------------------------------------------------------------------------------------
// Compact instructions
// ---------------------------------------------------------------------------------------------

#[test]
fn compact_instructions_are_extracted_up_to_the_next_heading_of_the_same_level() {
    let text = "# Project\nintro\n\n## Compact Instructions\nKeep the test names.\n\n### Detail\n\
                Keep file paths.\n\n```md\n## not a heading\n```\n\n## Other\nunrelated\n";
    let extracted = extract_compact_instructions(text).expect("section");
    assert!(extracted.starts_with("Keep the test names."));
    assert!(extracted.contains("### Detail\nKeep file paths."));
    assert!(extracted.contains("## not a heading"));
    assert!(!extracted.contains("unrelated"));
    assert_eq!(extract_compact_instructions("# Nothing\nhere"), None);
    assert_eq!(
        extract_compact_instructions("#  compact   INSTRUCTIONS:\nsummarise briefly").as_deref(),
        Some("summarise briefly")
    );

    let tree = Tree::new();
    tree.mkdir("repo/.git");
    tree.write("repo/CLAUDE.md", "## Compact Instructions\nfrom claude\n");
    tree.write(
        "repo/AGENTS.md",
        "# Compact instructions\nfrom agents\n# Next\nx",
    );
    let context = tree.context(&tree.root.join("repo"));
    assert_eq!(
        context.compact_instructions.as_deref(),
        Some("from agents\n\nfrom claude")
    );
}

// ---------------------------------------------------------------------------------------------
// Project detection
// ---------------------------------------------------------------------------------------------

#[test]
fn project_detection_from_marker_files() {
    let tree = Tree::new();
    let detect = |dir: &str| detect_project(&tree.root.join(dir), None);

    tree.write(
        "rust/Cargo.toml",
        "[workspace]\n\n[package]\nname = \"my-crate\"\nversion = \"0.1.0\"\n",
    );
    let rust = detect("rust");
    assert_eq!(rust.name.as_deref(), Some("my-crate"));
    assert_eq!(rust.stacks[0].language, "Rust");
    assert_eq!(rust.stacks[0].package_manager.as_deref(), Some("cargo"));

    tree.write(
        "ts/package.json",
        r#"{"name": "web-app", "devDependencies": {"typescript": "5"}}"#,
    );
    tree.write("ts/pnpm-lock.yaml", "");
    let ts = detect("ts");
    assert_eq!(ts.name.as_deref(), Some("web-app"));
    assert_eq!(
        (
            ts.stacks[0].language.as_str(),
            ts.stacks[0].package_manager.as_deref()
        ),
        ("TypeScript", Some("pnpm"))
    );

    tree.write(
        "js/package.json",
        r#"{"name": "x", "packageManager": "yarn@4.1.0"}"#,
    );
    tree.write("js/package-lock.json", "{}");
    let js = detect("js");
    assert_eq!(
        (
            js.stacks[0].language.as_str(),
            js.stacks[0].package_manager.as_deref()
        ),
        ("JavaScript", Some("yarn"))
    );

    tree.write("py/pyproject.toml", "[project]\nname = 'snake'\n");
    tree.write("py/uv.lock", "");
    let py = detect("py");
    assert_eq!(py.name.as_deref(), Some("snake"));
    assert_eq!(py.stacks[0].package_manager.as_deref(), Some("uv"));

    tree.write("req/requirements.txt", "requests\n");
    assert_eq!(
        detect("req").stacks[0].package_manager.as_deref(),
        Some("pip")
    );

    tree.write("go/go.mod", "module example.com/tool\n\ngo 1.22\n");
    let go = detect("go");
    assert_eq!(go.name.as_deref(), Some("example.com/tool"));
    assert_eq!(go.stacks[0].language, "Go");

    tree.write("swift/Package.swift", "// swift-tools-version:5.9\n");
    assert_eq!(detect("swift").stacks[0].language, "Swift");

    // Polyglot: both stacks are reported.
    tree.write("poly/Cargo.toml", "[package]\nname = \"p\"\n");
    tree.write("poly/package.json", "{}");
    let langs: Vec<String> = detect("poly")
        .stacks
        .into_iter()
        .map(|s| s.language)
        .collect();
    assert_eq!(langs, vec!["Rust", "JavaScript"]);

    // Markers are looked up to the repository root.
    tree.mkdir("mono/.git");
    tree.write("mono/Cargo.toml", "[package]\nname = \"mono\"\n");
    let nested = tree.mkdir("mono/crates/inner/src");
    let info = detect_project(&nested, Some(&tree.root.join("mono")));
    assert_eq!(info.name.as_deref(), Some("mono"));
    assert_eq!(info.root.as_deref(), Some(tree.root.join("mono").as_path()));

    assert!(detect_project(&tree.mkdir("empty"), None).stacks.is_empty());
}

// ---------------------------------------------------------------------------------------------
// @file references
// ---------------------------------------------------------------------------------------------

fn refs(
    cwd: &Path,
    prompt: &str,
) -> Result<
    robota::framework::context::ResolvedPrompt,
    robota::framework::context::FileRefDiagnostics,
> {
    resolve_file_references(prompt, cwd, &[], &FileRefOptions::default())
}

fn ref_tree() -> (Tree, PathBuf) {
    let tree = Tree::new();
    let cwd = tree.mkdir("ws");
    tree.write("ws/AGENTS.md", "agent rules");
    tree.write("ws/Makefile", "all:\n\techo hi\n");
    tree.write("ws/docs/spec.md", "the spec </file> end");
    tree.write("ws/notes/meeting notes.md", "spaced");
    tree.write("secret.md", "outside the workspace");
    (tree, cwd)
}

#[test]
fn file_references_expand_into_model_only_context() {
    let (_tree, cwd) = ref_tree();
    let prompt =
        "Compare @AGENTS.md with @./Makefile and @docs/spec.md, also @\"notes/meeting notes.md\".";
    let resolved = refs(&cwd, prompt).expect("resolved");
    assert_eq!(resolved.original, prompt);
    let relative: Vec<&str> = resolved
        .records
        .iter()
        .map(|r| r.relative_path.as_str())
        .collect();
    assert_eq!(
        relative,
        vec![
            "AGENTS.md",
            "Makefile",
            "docs/spec.md",
            "notes/meeting notes.md"
        ]
    );
    let originals: Vec<&str> = resolved
        .records
        .iter()
        .map(|r| r.original_reference.as_str())
        .collect();
    assert_eq!(
        originals,
        vec![
            "@AGENTS.md",
            "@./Makefile",
            "@docs/spec.md",
            "@\"notes/meeting notes.md\""
        ]
    );
    let record = &resolved.records[2];
    assert_eq!(record.source_path, cwd.join("docs/spec.md"));
    assert_eq!(record.byte_length, 20);
    assert_eq!(record.reason, FileRefReason::PromptReference);
    assert_eq!(record.depth, 0);

    assert!(resolved.model_text.starts_with(prompt));
    assert!(resolved.model_text.contains("\n\n<robota_file_references>\n\n<file path=\"AGENTS.md\" bytes=\"11\" reason=\"prompt-reference\">\nagent rules\n</file>"));
    // A closing tag inside a file cannot end the block early.
    assert!(resolved.model_text.contains("the spec <\\/file> end"));
    assert!(resolved.model_text.ends_with("</robota_file_references>"));
    assert_eq!(
        resolved.summary().as_deref(),
        Some("Loaded file references: AGENTS.md (11 B), Makefile (14 B), docs/spec.md (20 B), notes/meeting notes.md (6 B)")
    );
    // Records serialize without contents.
    let json = serde_json::to_string(&resolved.records).expect("json");
    assert!(!json.contains("agent rules"));
    assert!(json.contains("\"source_path\"") && json.contains("\"original_reference\""));
}

#[test]
fn non_path_at_tokens_never_block_the_prompt() {
    let (tree, cwd) = ref_tree();
    let prompt = "Release @v1.2 for @user, mail a@b.com, install @types/node and @anthropic-ai/sdk, \
                  I like @node.js and @foo.bar, see @https://example.com/x.md, `@literal.md`, @Makefile";
    let resolved = refs(&cwd, prompt).expect("must not block");
    assert!(resolved.records.is_empty());
    assert_eq!(resolved.model_text, prompt);
    let warned: Vec<&str> = resolved
        .warnings
        .iter()
        .map(|w| w.reference.as_str())
        .collect();
    assert_eq!(
        warned,
        vec![
            "@v1.2",
            "@types/node",
            "@anthropic-ai/sdk",
            "@node.js",
            "@foo.bar"
        ]
    );
    assert!(resolved
        .warnings
        .iter()
        .all(|w| w.kind == FileRefErrorKind::NotFound));

    // ...but the same-looking token is attached when the file exists.
    tree.write("ws/foo.bar", "real file");
    let resolved = refs(&cwd, "look at @foo.bar").expect("resolved");
    assert_eq!(resolved.records.len(), 1);
}

fn single_error(cwd: &Path, prompt: &str, options: &FileRefOptions) -> (FileRefErrorKind, String) {
    let err = resolve_file_references(prompt, cwd, &[], options).expect_err("must block");
    assert_eq!(err.diagnostics.len(), 1, "{err}");
    let message = err.to_string();
    assert!(
        message.starts_with("File reference error:\n- @"),
        "{message}"
    );
    (err.diagnostics[0].kind, message)
}

#[test]
fn clearly_path_references_that_fail_block_the_prompt() {
    let (tree, cwd) = ref_tree();
    let defaults = FileRefOptions::default();

    let (kind, message) = single_error(&cwd, "read @./missing.md", &defaults);
    assert_eq!(kind, FileRefErrorKind::NotFound);
    assert!(message.contains("@./missing.md: no file at"), "{message}");

    // A typo under an existing directory.
    let (kind, _) = single_error(&cwd, "read @docs/spce.md", &defaults);
    assert_eq!(kind, FileRefErrorKind::NotFound);

    let (kind, message) = single_error(&cwd, "read @../secret.md", &defaults);
    assert_eq!(kind, FileRefErrorKind::OutsideWorkspace);
    assert!(message.contains("outside the workspace"), "{message}");
    let (kind, _) = single_error(&cwd, "read @../nothing-here.md", &defaults);
    assert_eq!(kind, FileRefErrorKind::OutsideWorkspace);
    let (kind, _) = single_error(
        &cwd,
        &format!("read @{}", tree.root.join("secret.md").display()),
        &defaults,
    );
    assert_eq!(kind, FileRefErrorKind::OutsideWorkspace);

    let (kind, message) = single_error(&cwd, "read @docs/", &defaults);
    assert_eq!(kind, FileRefErrorKind::Directory);
    assert!(message.contains("directory"), "{message}");

    tree.write("ws/big.txt", &"x".repeat(100));
    let small = FileRefOptions {
        max_file_bytes: 50,
        ..FileRefOptions::default()
    };
    let (kind, message) = single_error(&cwd, "read @big.txt", &small);
    assert_eq!(kind, FileRefErrorKind::FileTooLarge);
    assert!(
        message.contains("100 bytes") && message.contains("50-byte"),
        "{message}"
    );

    let total = FileRefOptions {
        max_total_bytes: 20,
        ..FileRefOptions::default()
    };
    let (kind, _) = single_error(&cwd, "read @AGENTS.md @./Makefile", &total);
    assert_eq!(kind, FileRefErrorKind::TotalTooLarge);

    let few = FileRefOptions {
        max_references: 1,
        ..FileRefOptions::default()
    };
    let (kind, _) = single_error(&cwd, "read @AGENTS.md @./Makefile", &few);
    assert_eq!(kind, FileRefErrorKind::TooManyReferences);

    fs::write(cwd.join("image.png"), b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR").expect("png");
    let (kind, message) = single_error(&cwd, "see @image.png", &defaults);
    assert_eq!(kind, FileRefErrorKind::Binary);
    assert!(message.contains("not a text file"), "{message}");

    let (kind, message) = single_error(&cwd, "see @~/notes.md", &defaults);
    assert_eq!(kind, FileRefErrorKind::NotFound);
    assert!(message.contains("no home directory"), "{message}");

    let guarded = FileRefOptions {
        read_guard: Some(Arc::new(|path: &Path| {
            path.ends_with("AGENTS.md")
                .then(|| "denied by Read(./AGENTS.md)".to_owned())
        })),
        ..FileRefOptions::default()
    };
    let (kind, message) = single_error(&cwd, "see @AGENTS.md", &guarded);
    assert_eq!(kind, FileRefErrorKind::Denied);
    assert!(message.contains("denied by Read(./AGENTS.md)"), "{message}");

    // Every failure is reported, not just the first.
    let err = refs(&cwd, "@./a.md @./b.md @AGENTS.md").expect_err("blocks");
    assert_eq!(err.diagnostics.len(), 2);
    assert_eq!(err.to_string().lines().count(), 3);
}

#[test]
fn workspace_roots_and_home_extend_what_references_may_reach() {
    let (tree, cwd) = ref_tree();
    let roots = [tree.root.clone()];
    let resolved = resolve_file_references(
        "read @../secret.md",
        &cwd,
        &roots,
        &FileRefOptions::default(),
    )
    .expect("inside an extra root");
    assert_eq!(resolved.records[0].relative_path, "secret.md");

    tree.write_home("notes.md", "home notes");
    let with_home = FileRefOptions {
        home: Some(tree.home.clone()),
        ..FileRefOptions::default()
    };
    // Home is outside the workspace unless it is a root.
    let err =
        resolve_file_references("see @~/notes.md", &cwd, &[], &with_home).expect_err("outside");
    assert_eq!(err.diagnostics[0].kind, FileRefErrorKind::OutsideWorkspace);
    let ok = resolve_file_references(
        "see @~/notes.md",
        &cwd,
        std::slice::from_ref(&tree.home),
        &with_home,
    )
    .expect("root");
    assert_eq!(ok.records[0].byte_length, 10);
}

#[cfg(unix)]
#[test]
fn a_link_out_of_the_workspace_is_refused() {
    let (tree, cwd) = ref_tree();
    std::os::unix::fs::symlink(tree.root.join("secret.md"), cwd.join("escape.md")).expect("link");
    let err = refs(&cwd, "read @escape.md").expect_err("blocks");
    assert_eq!(err.diagnostics[0].kind, FileRefErrorKind::OutsideWorkspace);
    assert!(err.to_string().contains("is a link to"), "{err}");
    // A link that stays inside is fine and is recorded by its real path.
    std::os::unix::fs::symlink(cwd.join("AGENTS.md"), cwd.join("alias.md")).expect("link");
    let resolved = refs(&cwd, "read @alias.md").expect("inside");
    assert_eq!(resolved.records[0].source_path, cwd.join("AGENTS.md"));
}

#[test]
fn nested_references_follow_files_but_never_block() {
    let (tree, cwd) = ref_tree();
    tree.write(
        "ws/docs/index.md",
        "see @./part.md and @./missing.md and @../AGENTS.md",
    );
    tree.write(
        "ws/docs/part.md",
        "part, back to @./index.md and deeper @./deep.md",
    );
    tree.write("ws/docs/deep.md", "deep @./deeper.md");
    tree.write("ws/docs/deeper.md", "too deep");
    let resolved = refs(&cwd, "start at @docs/index.md").expect("nested failures do not block");
    let attached: Vec<(&str, usize, FileRefReason)> = resolved
        .records
        .iter()
        .map(|r| (r.relative_path.as_str(), r.depth, r.reason))
        .collect();
    assert_eq!(
        attached,
        vec![
            ("docs/index.md", 0, FileRefReason::PromptReference),
            ("docs/part.md", 1, FileRefReason::NestedReference),
            ("AGENTS.md", 1, FileRefReason::NestedReference),
            ("docs/deep.md", 2, FileRefReason::NestedReference),
        ]
    );
    // The cycle back to index.md attached it once; the missing file is a warning.
    assert!(resolved
        .warnings
        .iter()
        .any(|w| w.reference == "@./missing.md"
            && w.kind == FileRefErrorKind::NotFound
            && w.depth == 1));
    assert!(!resolved.model_text.contains("too deep"));
}
