//! Glob and Grep on real directory trees: glob semantics (`**`, braces, classes), ignore rules and
//! hidden files, mtime order and caps; Grep output modes, context, counts, filters, multiline,
//! head_limit, binary files, containment and huge outputs.

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use robota::tools::builtins::{BuiltinToolsConfig, Builtins, GlobTool, GrepTool, ReadTool};
use robota::tools::{Tool, ToolContext, ToolOutput};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

struct Env {
    dir: tempfile::TempDir,
    cwd: PathBuf,
    builtins: Builtins,
}

impl Env {
    fn context(&self) -> ToolContext {
        ToolContext {
            tool_use_id: "toolu_search".into(),
            cwd: self.cwd.clone(),
            cancel: CancellationToken::new(),
        }
    }

    async fn glob(&self, input: Value) -> ToolOutput {
        GlobTool::new(&self.builtins)
            .execute(input, self.context())
            .await
    }

    async fn grep(&self, input: Value) -> ToolOutput {
        GrepTool::new(&self.builtins)
            .execute(input, self.context())
            .await
    }

    fn file(&self, rel: &str, content: impl AsRef<[u8]>) {
        let path = self.cwd.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }

    /// Sets a file's mtime `age` seconds into the past.
    fn age(&self, rel: &str, age: u64) {
        let file = std::fs::File::options()
            .write(true)
            .open(self.cwd.join(rel))
            .unwrap();
        file.set_modified(SystemTime::now() - Duration::from_secs(age))
            .unwrap();
    }
}

/// A small git-like project: `.git` makes `.gitignore` apply, as in ripgrep.
fn env() -> Env {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().join("proj");
    std::fs::create_dir_all(cwd.join(".git")).unwrap();
    let builtins = Builtins::new(BuiltinToolsConfig {
        session_dir: Some(dir.path().join("session")),
        ..BuiltinToolsConfig::default()
    });
    let env = Env { dir, cwd, builtins };
    env.file(".gitignore", "target/\n*.log\n");
    env.file("Cargo.toml", "[package]\nname = \"demo\"\n");
    env.file("README.md", "# Demo\nTODO: docs\n");
    env.file(
        "src/main.rs",
        "fn main() {\n    // TODO: start\n    run();\n}\n",
    );
    env.file("src/lib.rs", "pub fn run() {\n    todo!()\n}\n");
    env.file(
        "src/util/strings.rs",
        "pub fn upper(s: &str) -> String {\n    s.to_uppercase()\n}\n",
    );
    env.file("src/util/a.ts", "export const todo = 1;\n");
    env.file("src/util/b.tsx", "export const Todo = () => null;\n");
    env.file(
        "target/debug/build.rs",
        "fn main() { /* TODO generated */ }\n",
    );
    env.file("app.log", "TODO in a log\n");
    env.file(".github/workflows/ci.yml", "name: ci # TODO\n");
    env.file(".env", "SECRET=1\n");
    env
}

fn lines(out: &ToolOutput) -> Vec<&str> {
    out.content.lines().collect()
}

// ---------------------------------------------------------------- Glob

#[tokio::test]
async fn glob_double_star_braces_and_classes() {
    let env = env();
    let out = env.glob(json!({"pattern": "**/*.rs"})).await;
    let mut found = lines(&out);
    found.sort();
    assert_eq!(
        found,
        ["src/lib.rs", "src/main.rs", "src/util/strings.rs"],
        "{}",
        out.content
    );

    let out = env.glob(json!({"pattern": "src/**/*.{ts,tsx}"})).await;
    let mut found = lines(&out);
    found.sort();
    assert_eq!(found, ["src/util/a.ts", "src/util/b.tsx"]);

    // `*` does not cross directories; classes work.
    let out = env.glob(json!({"pattern": "*.{toml,md}"})).await;
    let mut found = lines(&out);
    found.sort();
    assert_eq!(found, ["Cargo.toml", "README.md"]);
    let out = env.glob(json!({"pattern": "src/[lm]*.rs"})).await;
    let mut found = lines(&out);
    found.sort();
    assert_eq!(found, ["src/lib.rs", "src/main.rs"]);

    // `path` narrows the search; an absolute pattern works too.
    let out = env
        .glob(json!({"pattern": "*.rs", "path": "src/util"}))
        .await;
    assert_eq!(lines(&out), ["src/util/strings.rs"]);
    let abs = format!("{}/src/*.rs", env.cwd.display());
    let out = env.glob(json!({"pattern": abs})).await;
    assert_eq!(out.response["num_files"], 2, "{}", out.content);
}

#[tokio::test]
async fn glob_respects_gitignore_and_hidden_files_like_ripgrep() {
    let env = env();
    let out = env.glob(json!({"pattern": "**/*"})).await;
    let found = lines(&out);
    assert!(!found.iter().any(|p| p.starts_with("target/")), "{found:?}");
    assert!(!found.contains(&"app.log"));
    assert!(!found
        .iter()
        .any(|p| p.starts_with(".github") || *p == ".env"));
    // Naming a hidden path opts into it.
    let out = env.glob(json!({"pattern": ".github/**/*.yml"})).await;
    assert_eq!(lines(&out), [".github/workflows/ci.yml"]);
    let out = env.glob(json!({"pattern": ".env*"})).await;
    assert_eq!(lines(&out), [".env"]);
}

#[tokio::test]
async fn glob_sorts_newest_first_and_caps_with_a_note() {
    let env = env();
    for i in 0..12 {
        let name = format!("logs/f{i:02}.txt");
        env.file(&name, "x");
        env.age(&name, 1000 - i * 10); // f11 is the newest
    }
    let out = env.glob(json!({"pattern": "logs/*.txt", "limit": 5})).await;
    let found = lines(&out);
    assert_eq!(
        &found[..5],
        [
            "logs/f11.txt",
            "logs/f10.txt",
            "logs/f09.txt",
            "logs/f08.txt",
            "logs/f07.txt"
        ]
    );
    assert!(
        found[5].contains("Showing 5 of 12 matches"),
        "{}",
        out.content
    );
    assert_eq!(out.response["truncated"], true);
    assert_eq!(out.response["num_files"], 12);
}

#[tokio::test]
async fn glob_reports_no_matches_and_refuses_escapes() {
    let env = env();
    let out = env.glob(json!({"pattern": "**/*.java"})).await;
    assert!(!out.is_error);
    assert!(out.content.starts_with("No files found"), "{}", out.content);
    let out = env.glob(json!({"pattern": "*", "path": ".."})).await;
    assert!(out.content.starts_with("Access denied"), "{}", out.content);
    let out = env.glob(json!({"pattern": "../**/*.rs"})).await;
    assert!(out.content.starts_with("Access denied"), "{}", out.content);
    let out = env.glob(json!({"pattern": "/etc/*"})).await;
    assert!(out.content.starts_with("Access denied"), "{}", out.content);
    let out = env.glob(json!({"pattern": "src/[z"})).await;
    assert!(out.is_error);
    assert!(
        out.content.contains("Invalid glob pattern"),
        "{}",
        out.content
    );
}

// ---------------------------------------------------------------- Grep

#[tokio::test]
async fn grep_lists_files_sorted_by_default() {
    let env = env();
    let out = env.grep(json!({"pattern": "TODO"})).await;
    assert_eq!(lines(&out), ["Found 2 files", "README.md", "src/main.rs"]);
    let out = env.grep(json!({"pattern": "todo", "-i": true})).await;
    assert_eq!(
        lines(&out),
        [
            "Found 5 files",
            "README.md",
            "src/lib.rs",
            "src/main.rs",
            "src/util/a.ts",
            "src/util/b.tsx"
        ]
    );
    let out = env.grep(json!({"pattern": "nothing-like-this"})).await;
    assert_eq!(out.content, "No files found");
    assert!(!out.is_error);
}

#[tokio::test]
async fn grep_content_with_line_numbers_and_context() {
    let env = env();
    env.file(
        "ctx.txt",
        "l1\nl2 match\nl3\nl4\nl5\nl6\nl7 match\nl8\nl9 match\nl10\n",
    );
    let out = env
        .grep(json!({"pattern": "match", "path": "ctx.txt", "output_mode": "content"}))
        .await;
    assert_eq!(
        lines(&out),
        [
            "ctx.txt:2:l2 match",
            "ctx.txt:7:l7 match",
            "ctx.txt:9:l9 match"
        ]
    );
    let out = env
        .grep(json!({"pattern": "match", "path": "ctx.txt", "output_mode": "content", "-C": 1}))
        .await;
    assert_eq!(
        lines(&out),
        [
            "ctx.txt-1-l1",
            "ctx.txt:2:l2 match",
            "ctx.txt-3-l3",
            "--",
            "ctx.txt-6-l6",
            "ctx.txt:7:l7 match",
            "ctx.txt-8-l8",
            "ctx.txt:9:l9 match",
            "ctx.txt-10-l10",
        ]
    );
    let out = env
        .grep(json!({"pattern": "l7", "path": "ctx.txt", "outputMode": "content", "-B": 2, "-A": 0, "-n": false}))
        .await;
    assert_eq!(
        lines(&out),
        ["ctx.txt-l5", "ctx.txt-l6", "ctx.txt:l7 match"]
    );
}

#[tokio::test]
async fn grep_counts_and_head_limit() {
    let env = env();
    env.file("many.txt", "x\nx\nx y x\nz\n");
    env.file("one.txt", "x\n");
    let out = env
        .grep(json!({"pattern": "x", "output_mode": "count", "glob": "*.txt"}))
        .await;
    assert_eq!(
        lines(&out),
        [
            "many.txt:3",
            "one.txt:1",
            "",
            "Found 4 matching lines in 2 files"
        ]
    );
    let out = env
        .grep(json!({"pattern": "x", "output_mode": "content", "glob": "*.txt", "head_limit": 2}))
        .await;
    assert_eq!(
        lines(&out),
        [
            "many.txt:1:x",
            "many.txt:2:x",
            "[head_limit 2 reached: 2 more lines not shown]"
        ]
    );
    let out = env
        .grep(json!({"pattern": "x", "glob": "*.txt", "headLimit": 1}))
        .await;
    assert_eq!(
        lines(&out),
        [
            "Found 2 files",
            "many.txt",
            "[head_limit 1 reached: 1 more files not shown]"
        ]
    );
}

#[tokio::test]
async fn grep_glob_and_type_filters_use_full_glob_semantics() {
    let env = env();
    let out = env
        .grep(json!({"pattern": "todo", "-i": true, "glob": "*.{ts,tsx}"}))
        .await;
    assert_eq!(
        lines(&out),
        ["Found 2 files", "src/util/a.ts", "src/util/b.tsx"]
    );
    let out = env
        .grep(json!({"pattern": "fn", "glob": "src/util/**/*.rs"}))
        .await;
    assert_eq!(lines(&out), ["Found 1 file", "src/util/strings.rs"]);
    let out = env
        .grep(json!({"pattern": "fn", "path": "src", "glob": "src/util/**/*.rs"}))
        .await;
    assert_eq!(lines(&out), ["Found 1 file", "src/util/strings.rs"]);
    let out = env
        .grep(json!({"pattern": "fn", "glob": "*.rs !src/util/**"}))
        .await;
    assert_eq!(lines(&out), ["Found 2 files", "src/lib.rs", "src/main.rs"]);
    let out = env.grep(json!({"pattern": "fn", "type": "rust"})).await;
    assert_eq!(
        lines(&out),
        [
            "Found 3 files",
            "src/lib.rs",
            "src/main.rs",
            "src/util/strings.rs"
        ]
    );
    let out = env.grep(json!({"pattern": "fn", "type": "rusty"})).await;
    assert!(out.is_error);
    assert!(out.content.contains("Unknown file type `rusty`"));
}

#[tokio::test]
async fn grep_multiline_spans_lines_only_when_asked() {
    let env = env();
    let out = env
        .grep(json!({"pattern": "fn run\\(\\) \\{.*todo", "output_mode": "content"}))
        .await;
    assert_eq!(out.content, "No matches found");
    let out = env
        .grep(json!({"pattern": "fn run\\(\\) \\{.*todo", "output_mode": "content", "multiline": true}))
        .await;
    assert_eq!(
        lines(&out),
        ["src/lib.rs:1:pub fn run() {", "src/lib.rs:2:    todo!()"]
    );
    let out = env.grep(json!({"pattern": "run\\(\\)\\n"})).await;
    assert!(out.is_error);
    assert!(out.content.contains("multiline: true"), "{}", out.content);
}

#[tokio::test]
async fn grep_skips_binary_and_ignored_files_and_refuses_escapes() {
    let env = env();
    let mut blob = b"TODO at the start of a binary\n".to_vec();
    blob.extend_from_slice(&[0, 1, 2, 3]);
    env.file("blob.bin", &blob);
    let out = env
        .grep(json!({"pattern": "TODO", "output_mode": "count"}))
        .await;
    let found = lines(&out);
    assert!(!found.iter().any(|l| l.contains("blob.bin")), "{found:?}");
    assert!(!found
        .iter()
        .any(|l| l.contains("target/") || l.contains("app.log")));
    let out = env.grep(json!({"pattern": "x", "path": "../"})).await;
    assert!(out.content.starts_with("Access denied"), "{}", out.content);
    let outside = env.dir.path().join("outside.txt");
    std::fs::write(&outside, "x").unwrap();
    let out = env.grep(json!({"pattern": "x", "path": outside})).await;
    assert!(out.content.starts_with("Access denied"), "{}", out.content);
    let out = env.grep(json!({"pattern": "x", "path": "nope"})).await;
    assert!(
        out.content.starts_with("Path does not exist"),
        "{}",
        out.content
    );
}

#[tokio::test]
async fn grep_huge_output_is_cut_and_spilled() {
    let env = env();
    let body: String = (0..20_000).map(|i| format!("needle {i}\n")).collect();
    env.file("big/haystack.txt", &body);
    let out = env
        .grep(json!({"pattern": "needle", "output_mode": "content", "path": "big"}))
        .await;
    assert!(out.content.len() < 31_000, "{}", out.content.len());
    assert!(out.content.starts_with("big/haystack.txt:1:needle 0\n"));
    assert!(out.content.ends_with("big/haystack.txt:20000:needle 19999"));
    let spill = out.response["output_file"].as_str().expect("spilled");
    assert!(out.content.contains(spill));
    let read = ReadTool::new(&env.builtins)
        .execute(
            json!({"file_path": spill, "offset": 12345, "limit": 1}),
            env.context(),
        )
        .await;
    assert!(
        read.content
            .contains("12345\tbig/haystack.txt:12345:needle 12344"),
        "{}",
        read.content
    );
}

#[tokio::test]
async fn glob_and_grep_are_read_only_with_claude_code_schemas() {
    let env = env();
    let grep = GrepTool::new(&env.builtins);
    assert!(grep.is_read_only() && GlobTool::new(&env.builtins).is_read_only());
    let schema = grep.input_schema();
    for key in [
        "pattern",
        "path",
        "glob",
        "type",
        "output_mode",
        "-i",
        "-n",
        "-A",
        "-B",
        "-C",
        "head_limit",
        "multiline",
    ] {
        assert!(schema["properties"].get(key).is_some(), "{key}");
    }
    let out = env
        .grep(json!({"pattern": "x", "output_mode": "lines"}))
        .await;
    assert!(
        out.content.contains("`output_mode` must be one of"),
        "{}",
        out.content
    );
}
