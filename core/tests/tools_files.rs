//! Read, Write, Edit, MultiEdit and NotebookEdit on real temporary directories: containment
//! (`..`, absolute paths, symbolic links), numbered reading with ranges, binary and CRLF files,
//! atomic writes, the Edit rules (uniqueness, replace_all, empty and identical strings), and
//! MultiEdit's and NotebookEdit's handling of bad input.

use std::path::{Path, PathBuf};

use robota::tools::builtins::{
    BuiltinToolsConfig, Builtins, EditTool, MultiEditTool, NotebookEditTool, ReadTool, WriteTool,
};
use robota::tools::{Tool, ToolContext, ToolOutput};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

struct Env {
    dir: tempfile::TempDir,
    cwd: PathBuf,
    builtins: Builtins,
}

impl Env {
    fn outside(&self) -> PathBuf {
        self.dir.path().join("outside")
    }

    fn context(&self) -> ToolContext {
        ToolContext {
            tool_use_id: "toolu_files".into(),
            cwd: self.cwd.clone(),
            cancel: CancellationToken::new(),
        }
    }

    async fn read(&self, input: Value) -> ToolOutput {
        ReadTool::new(&self.builtins)
            .execute(input, self.context())
            .await
    }

    async fn write(&self, input: Value) -> ToolOutput {
        WriteTool::new(&self.builtins)
            .execute(input, self.context())
            .await
    }

    async fn edit(&self, input: Value) -> ToolOutput {
        EditTool::new(&self.builtins)
            .execute(input, self.context())
            .await
    }

    async fn multi_edit(&self, input: Value) -> ToolOutput {
        MultiEditTool::new(&self.builtins)
            .execute(input, self.context())
            .await
    }

    async fn notebook_edit(&self, input: Value) -> ToolOutput {
        NotebookEditTool::new(&self.builtins)
            .execute(input, self.context())
            .await
    }
}

/// `<tmp>/work` is the session cwd, `<tmp>/extra` an additional root, `<tmp>/outside` is neither.
fn env() -> Env {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().join("work");
    for sub in ["work", "extra", "outside"] {
        std::fs::create_dir(dir.path().join(sub)).unwrap();
    }
    std::fs::write(dir.path().join("outside/secret.txt"), "top secret\n").unwrap();
    std::fs::write(dir.path().join("extra/notes.md"), "extra notes\n").unwrap();
    let builtins = Builtins::new(BuiltinToolsConfig {
        session_dir: Some(dir.path().join("session")),
        additional_roots: vec![dir.path().join("extra")],
        ..BuiltinToolsConfig::default()
    });
    Env { dir, cwd, builtins }
}

fn write_file(path: &Path, content: impl AsRef<[u8]>) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
}

// ---------------------------------------------------------------- containment

#[cfg(unix)]
#[tokio::test]
async fn escapes_are_refused_by_every_file_tool() {
    let env = env();
    let secret = env.outside().join("secret.txt");
    std::os::unix::fs::symlink(env.outside(), env.cwd.join("link-dir")).unwrap();
    std::os::unix::fs::symlink(&secret, env.cwd.join("link-file")).unwrap();
    std::os::unix::fs::symlink(env.outside().join("nope.txt"), env.cwd.join("dangling")).unwrap();
    let attempts = [
        "../outside/secret.txt".to_string(),
        secret.display().to_string(),
        "sub/../../outside/secret.txt".into(),
        "link-dir/secret.txt".into(),
        "link-file".into(),
        "link-dir/new.txt".into(),
    ];
    for path in &attempts {
        let out = env.read(json!({"file_path": path})).await;
        assert!(out.is_error, "Read {path}");
        assert!(
            out.content.starts_with("Access denied"),
            "Read {path}: {}",
            out.content
        );
        let out = env
            .write(json!({"file_path": path, "content": "pwned"}))
            .await;
        assert!(
            out.content.starts_with("Access denied"),
            "Write {path}: {}",
            out.content
        );
        let out = env
            .edit(json!({"file_path": path, "old_string": "top", "new_string": "pwned"}))
            .await;
        assert!(
            out.content.starts_with("Access denied"),
            "Edit {path}: {}",
            out.content
        );
        let out = env
            .multi_edit(
                json!({"file_path": path, "edits": [{"old_string": "top", "new_string": "pwned"}]}),
            )
            .await;
        assert!(
            out.content.starts_with("Access denied"),
            "MultiEdit {path}: {}",
            out.content
        );
        let out = env
            .notebook_edit(
                json!({"notebook_path": path, "new_source": "pwned", "cell_id": "cell-0"}),
            )
            .await;
        assert!(
            out.content.starts_with("Access denied"),
            "NotebookEdit {path}: {}",
            out.content
        );
    }
    let out = env.read(json!({"file_path": "link-file"})).await;
    assert!(out.content.contains("symbolic link"), "{}", out.content);
    assert!(out.content.contains("workspace roots"), "{}", out.content);
    // A dangling link would create a file wherever it points.
    let out = env
        .write(json!({"file_path": "dangling", "content": "x"}))
        .await;
    assert!(out.is_error);
    assert!(out.content.contains("symbolic link"), "{}", out.content);
    assert!(!env.outside().join("nope.txt").exists());
    assert_eq!(std::fs::read_to_string(&secret).unwrap(), "top secret\n");
}

#[cfg(unix)]
#[tokio::test]
async fn links_and_dotdot_that_stay_inside_are_fine() {
    let env = env();
    write_file(&env.cwd.join("src/lib.rs"), "fn main() {}\n");
    std::os::unix::fs::symlink(env.cwd.join("src"), env.cwd.join("alias")).unwrap();
    let out = env.read(json!({"file_path": "alias/lib.rs"})).await;
    assert!(!out.is_error, "{}", out.content);
    let out = env.read(json!({"file_path": "src/../src/./lib.rs"})).await;
    assert!(!out.is_error, "{}", out.content);
    // The additional root is usable; relative paths resolve against the session cwd.
    let extra = env.dir.path().join("extra/notes.md");
    let out = env.read(json!({"file_path": extra})).await;
    assert!(out.content.contains("extra notes"), "{}", out.content);
    let out = env
        .write(json!({"file_path": "../extra/new.md", "content": "ok"}))
        .await;
    assert!(!out.is_error, "{}", out.content);
}

// ---------------------------------------------------------------- Read

#[tokio::test]
async fn read_numbers_lines_like_cat_n_with_a_range_header() {
    let env = env();
    let text: String = (1..=30).map(|i| format!("line {i}\n")).collect();
    write_file(&env.cwd.join("a.txt"), &text);
    let out = env.read(json!({"file_path": "a.txt"})).await;
    assert!(!out.is_error);
    let shown = env.cwd.join("a.txt").display().to_string();
    assert!(out.content.starts_with(&format!(
        "[{shown}: lines 1-30 of 30]\n     1\tline 1\n     2\tline 2\n"
    )));
    assert!(out.content.ends_with("    30\tline 30"));
    assert_eq!(out.response["total_lines"], 30);

    let out = env
        .read(json!({"filePath": "a.txt", "offset": 10, "limit": 3}))
        .await;
    assert_eq!(
        out.content,
        format!(
            "[{shown}: lines 10-12 of 30]\n    10\tline 10\n    11\tline 11\n    12\tline 12\n\
             [18 more lines not shown. Continue with offset=13.]"
        )
    );
    let out = env.read(json!({"file_path": "a.txt", "offset": 31})).await;
    assert!(out.is_error);
    assert!(
        out.content.contains("offset 31 is past the end"),
        "{}",
        out.content
    );
}

#[tokio::test]
async fn read_handles_edge_files() {
    let env = env();
    write_file(&env.cwd.join("empty.txt"), "");
    let out = env.read(json!({"file_path": "empty.txt"})).await;
    assert!(!out.is_error);
    assert!(out.content.contains("empty file"), "{}", out.content);

    write_file(&env.cwd.join("no-newline.txt"), "a\nb");
    let out = env
        .read(json!({"file_path": "no-newline.txt", "limit": 1}))
        .await;
    assert!(out.content.contains("lines 1-1 of 2"), "{}", out.content);

    let long = "x".repeat(5000);
    write_file(&env.cwd.join("long.txt"), format!("{long}\nshort\n"));
    let out = env.read(json!({"file_path": "long.txt"})).await;
    assert!(out.content.contains(&format!(
        "     1\t{}… [line shortened: 3000 more bytes]",
        "x".repeat(2000)
    )));
    assert!(out
        .content
        .contains("1 line longer than 2000 characters was shortened"));

    write_file(&env.cwd.join("crlf.txt"), "one\r\ntwo\r\n");
    let out = env.read(json!({"file_path": "crlf.txt"})).await;
    assert!(out.content.contains("CRLF line endings"), "{}", out.content);
    assert!(out.content.ends_with("     1\tone\n     2\ttwo"));
    assert!(!out.content.contains('\r'));

    write_file(&env.cwd.join("latin1.txt"), b"caf\xe9 au lait\n");
    let out = env.read(json!({"file_path": "latin1.txt"})).await;
    assert!(!out.is_error);
    assert!(out.content.contains("caf\u{FFFD} au lait"));
    assert!(out.content.contains("not valid UTF-8"));
}

#[tokio::test]
async fn read_shortens_giant_lines_without_loading_them() {
    let env = env();
    // A 3 MB single line (CRLF-terminated) followed by a short one; multi-byte characters so a
    // cut could land inside one.
    let giant = "é".repeat(1_500_000);
    write_file(&env.cwd.join("min.js"), format!("{giant}\r\nnext\r\n"));
    let out = env.read(json!({"file_path": "min.js"})).await;
    assert!(!out.is_error, "{}", out.content);
    let first = out.content.lines().nth(1).unwrap();
    assert!(first.starts_with(&format!("     1\t{}", "é".repeat(2000))));
    assert!(
        first.ends_with(&format!(
            "… [line shortened: {} more bytes]",
            3_000_000 - 4000
        )),
        "{}",
        &first[first.len() - 60..]
    );
    assert!(!out.content.contains('\u{FFFD}'));
    assert!(
        out.content
            .contains("\n     2\tnext\n[1 line longer than 2000 characters was shortened]"),
        "{}",
        out.content.len()
    );
    assert!(out.content.contains("lines 1-2 of 2; CRLF line endings"));
}

#[cfg(unix)]
#[tokio::test]
async fn read_refuses_fifos_instead_of_blocking() {
    let env = env();
    let fifo = env.cwd.join("pipe");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(status.success());
    let out = env.read(json!({"file_path": "pipe"})).await;
    assert!(
        out.content.contains("not a regular file"),
        "{}",
        out.content
    );
}

#[tokio::test]
async fn read_refuses_binary_directories_and_unsupported_kinds_clearly() {
    let env = env();
    write_file(
        &env.cwd.join("prog.bin"),
        b"\x7fELF\x02\x01\x01\0\0\0\0binary",
    );
    let out = env.read(json!({"file_path": "prog.bin"})).await;
    assert!(out.is_error);
    assert!(
        out.content.contains("looks like a binary file"),
        "{}",
        out.content
    );

    std::fs::create_dir(env.cwd.join("dir")).unwrap();
    let out = env.read(json!({"file_path": "dir"})).await;
    assert!(out.content.contains("is a directory"), "{}", out.content);

    write_file(&env.cwd.join("pic.png"), b"\x89PNG\r\n\x1a\n");
    let out = env.read(json!({"file_path": "pic.png"})).await;
    assert!(out.content.contains("not supported yet"), "{}", out.content);
    write_file(&env.cwd.join("doc.pdf"), b"%PDF-1.7");
    let out = env.read(json!({"file_path": "doc.pdf"})).await;
    assert!(
        out.content.contains("PDF documents is not supported yet"),
        "{}",
        out.content
    );

    write_file(&env.cwd.join("Config.toml"), "x = 1\n");
    let out = env.read(json!({"file_path": "config.toml"})).await;
    assert!(
        out.content.starts_with("File does not exist"),
        "{}",
        out.content
    );
    assert!(out.content.contains("Did you mean"), "{}", out.content);
    assert!(out.content.contains("Config.toml"), "{}", out.content);
}

#[tokio::test]
async fn read_stops_at_the_output_budget_and_says_where_to_continue() {
    let dir = tempfile::tempdir().unwrap();
    let builtins = Builtins::new(BuiltinToolsConfig {
        session_dir: Some(dir.path().join("session")),
        output_limit: robota::tools::builtins::OutputLimit {
            max_bytes: 30_000,
            read_max_bytes: 1_000,
        },
        ..BuiltinToolsConfig::default()
    });
    let text: String = (1..=500)
        .map(|i| format!("row {i:03} {}\n", "y".repeat(40)))
        .collect();
    write_file(&dir.path().join("big.txt"), &text);
    let out = ReadTool::new(&builtins)
        .execute(
            json!({"file_path": "big.txt"}),
            ToolContext {
                tool_use_id: "t".into(),
                cwd: dir.path().to_path_buf(),
                cancel: CancellationToken::new(),
            },
        )
        .await;
    assert!(out.content.len() < 1_300, "{}", out.content.len());
    let shown = out.response["num_lines"].as_u64().unwrap();
    assert!(shown > 5 && shown < 30);
    assert!(out
        .content
        .contains(&format!("Continue with offset={}.", shown + 1)));
    assert!(out.content.contains("output budget"));
    assert_eq!(out.response["total_lines"], 500);
}

// ---------------------------------------------------------------- Write

#[tokio::test]
async fn write_creates_parents_atomically_and_reports() {
    let env = env();
    let out = env
        .write(json!({"file_path": "deep/er/new.txt", "content": "a\nb\n"}))
        .await;
    assert!(!out.is_error, "{}", out.content);
    assert!(out.content.starts_with("Created "), "{}", out.content);
    assert_eq!(out.response["type"], "create");
    assert_eq!(
        std::fs::read_to_string(env.cwd.join("deep/er/new.txt")).unwrap(),
        "a\nb\n"
    );
    let out = env
        .write(json!({"filePath": "deep/er/new.txt", "content": "a\nc\n"}))
        .await;
    assert!(out.content.starts_with("Updated "));
    let patch = &out.response["structured_patch"][0];
    assert_eq!(patch["lines"], json!([" a", "-b", "+c"]));
    let names: Vec<String> = std::fs::read_dir(env.cwd.join("deep/er"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["new.txt"], "no temporary files left behind");

    std::fs::create_dir(env.cwd.join("adir")).unwrap();
    let out = env
        .write(json!({"file_path": "adir", "content": "x"}))
        .await;
    assert!(out.content.contains("is a directory"));
}

#[cfg(unix)]
#[tokio::test]
async fn write_and_edit_preserve_the_file_mode() {
    use std::os::unix::fs::PermissionsExt;
    let env = env();
    let path = env.cwd.join("run.sh");
    write_file(&path, "echo one\n");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o750)).unwrap();
    env.write(json!({"file_path": "run.sh", "content": "echo two\n"}))
        .await;
    env.edit(json!({"file_path": "run.sh", "old_string": "two", "new_string": "three"}))
        .await;
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "echo three\n");
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o750);
}

// ---------------------------------------------------------------- Edit

#[tokio::test]
async fn edit_replaces_a_unique_string_and_reports_where() {
    let env = env();
    write_file(&env.cwd.join("m.rs"), "fn a() {}\nfn b() {}\nfn c() {}\n");
    let out = env
        .edit(json!({"file_path": "m.rs", "old_string": "fn b() {}", "new_string": "fn bee() {}"}))
        .await;
    assert!(!out.is_error, "{}", out.content);
    assert!(
        out.content
            .contains("replaced 1 occurrence (first change at line 2)"),
        "{}",
        out.content
    );
    assert_eq!(
        std::fs::read_to_string(env.cwd.join("m.rs")).unwrap(),
        "fn a() {}\nfn bee() {}\nfn c() {}\n"
    );
    assert_eq!(out.response["first_changed_line"], 2);
    assert_eq!(
        out.response["structured_patch"],
        json!([{"old_start": 1, "old_lines": 3, "new_start": 1, "new_lines": 3,
                "lines": [" fn a() {}", "-fn b() {}", "+fn bee() {}", " fn c() {}"]}])
    );
}

#[tokio::test]
async fn edit_ambiguity_and_replace_all() {
    let env = env();
    let path = env.cwd.join("dup.txt");
    write_file(&path, "x = 1\ny = 2\nx = 1\nz = 3\nx = 1\n");
    let out = env
        .edit(json!({"file_path": "dup.txt", "old_string": "x = 1", "new_string": "x = 9"}))
        .await;
    assert!(out.is_error);
    assert!(
        out.content.contains("Found 3 matches of old_string")
            && out.content.contains("lines 1, 3, 5"),
        "{}",
        out.content
    );
    assert!(out.content.contains("replace_all"));
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "x = 1\ny = 2\nx = 1\nz = 3\nx = 1\n"
    );

    let out = env
        .edit(json!({"filePath": "dup.txt", "oldString": "x = 1", "newString": "x = 9", "replaceAll": true}))
        .await;
    assert!(
        out.content
            .contains("replaced 3 occurrences (first change at line 1)"),
        "{}",
        out.content
    );
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "x = 9\ny = 2\nx = 9\nz = 3\nx = 9\n"
    );
}

#[tokio::test]
async fn edit_rejects_no_op_and_empty_old_string_on_content() {
    let env = env();
    write_file(&env.cwd.join("f.txt"), "hello\n");
    let out = env
        .edit(json!({"file_path": "f.txt", "old_string": "hello", "new_string": "hello"}))
        .await;
    assert!(out.is_error);
    assert!(out.content.contains("exactly the same"));
    let out = env
        .edit(json!({"file_path": "f.txt", "old_string": "", "new_string": "x"}))
        .await;
    assert!(out.is_error);
    assert!(
        out.content.contains("old_string is empty"),
        "{}",
        out.content
    );
    assert_eq!(
        std::fs::read_to_string(env.cwd.join("f.txt")).unwrap(),
        "hello\n"
    );

    // Empty old_string creates a missing file or fills an empty one.
    let out = env
        .edit(json!({"file_path": "new/created.txt", "old_string": "", "new_string": "fresh\n"}))
        .await;
    assert!(!out.is_error, "{}", out.content);
    assert_eq!(
        std::fs::read_to_string(env.cwd.join("new/created.txt")).unwrap(),
        "fresh\n"
    );
    write_file(&env.cwd.join("empty.txt"), "");
    let out = env
        .edit(json!({"file_path": "empty.txt", "old_string": "", "new_string": "filled"}))
        .await;
    assert!(!out.is_error, "{}", out.content);
    assert_eq!(
        std::fs::read_to_string(env.cwd.join("empty.txt")).unwrap(),
        "filled"
    );

    let out = env
        .edit(json!({"file_path": "missing.txt", "old_string": "a", "new_string": "b"}))
        .await;
    assert!(
        out.content.starts_with("File does not exist"),
        "{}",
        out.content
    );
}

#[tokio::test]
async fn edit_explains_why_old_string_did_not_match() {
    let env = env();
    write_file(&env.cwd.join("py.py"), "def f():\n\treturn 1\n");
    let out = env
        .edit(json!({"file_path": "py.py", "old_string": "def f():\n    return 1", "new_string": "x"}))
        .await;
    assert!(
        out.content.contains("whitespace is ignored"),
        "{}",
        out.content
    );
    let out = env
        .edit(json!({"file_path": "py.py", "old_string": "     1\tdef f():", "new_string": "x"}))
        .await;
    assert!(
        out.content.contains("line-number prefix"),
        "{}",
        out.content
    );
    let out = env
        .edit(json!({"file_path": "py.py", "old_string": "def g():", "new_string": "x"}))
        .await;
    assert!(out.content.contains("Read it again"), "{}", out.content);
}

#[tokio::test]
async fn edit_matches_lf_strings_in_crlf_files_and_keeps_crlf() {
    let env = env();
    let path = env.cwd.join("win.txt");
    write_file(&path, "first\r\nsecond\r\nthird\r\n");
    let out = env
        .edit(json!({"file_path": "win.txt", "old_string": "first\nsecond", "new_string": "first\nmiddle\nsecond"}))
        .await;
    assert!(!out.is_error, "{}", out.content);
    assert_eq!(
        std::fs::read(&path).unwrap(),
        b"first\r\nmiddle\r\nsecond\r\nthird\r\n"
    );
    // Single-line edits too keep CRLF when they add lines.
    env.edit(json!({"file_path": "win.txt", "old_string": "third", "new_string": "3\n4"}))
        .await;
    assert_eq!(
        std::fs::read(&path).unwrap(),
        b"first\r\nmiddle\r\nsecond\r\n3\r\n4\r\n"
    );
}

#[tokio::test]
async fn edit_refuses_binary_files() {
    let env = env();
    write_file(&env.cwd.join("b.dat"), b"abc\0def");
    let out = env
        .edit(json!({"file_path": "b.dat", "old_string": "abc", "new_string": "x"}))
        .await;
    assert!(out.content.contains("binary"), "{}", out.content);
}

#[tokio::test]
async fn schemas_use_claude_code_names_and_reject_unknown_fields() {
    let env = env();
    let schema = EditTool::new(&env.builtins).input_schema();
    assert_eq!(
        schema["required"],
        json!(["file_path", "old_string", "new_string"])
    );
    assert_eq!(schema["additionalProperties"], false);
    let out = env
        .edit(json!({"file_path": "x", "old": "a", "new_string": 5}))
        .await;
    assert!(out.is_error);
    assert!(
        out.content.contains("unknown field `old`"),
        "{}",
        out.content
    );
    assert!(
        out.content
            .contains("`new_string` must be a string, got a number 5"),
        "{}",
        out.content
    );
    assert!(
        out.content.contains("missing required field `old_string`"),
        "{}",
        out.content
    );
    assert!(ReadTool::new(&env.builtins).is_read_only());
    assert!(!WriteTool::new(&env.builtins).is_read_only());
    assert!(!EditTool::new(&env.builtins).is_read_only());
}

// ---------------------------------------------------------------- MultiEdit and NotebookEdit

#[tokio::test]
async fn multi_edit_creates_refuses_empty_edit_lists_and_is_all_or_nothing() {
    let env = env();
    let out = env
        .multi_edit(json!({"file_path": "new.txt", "edits": []}))
        .await;
    assert!(out.is_error);
    assert!(
        out.content.contains("`edits` must be a non-empty array"),
        "{}",
        out.content
    );
    assert!(
        !env.cwd.join("new.txt").exists(),
        "no empty file is created"
    );
    let out = env
        .multi_edit(json!({"file_path": "new.txt", "edits": [
            {"old_string": "", "new_string": "alpha beta\n"},
            {"old_string": "beta", "new_string": "gamma"}
        ]}))
        .await;
    assert!(!out.is_error, "{}", out.content);
    assert_eq!(
        std::fs::read_to_string(env.cwd.join("new.txt")).unwrap(),
        "alpha gamma\n"
    );
    let out = env
        .multi_edit(json!({"file_path": "missing.txt", "edits": [
            {"old_string": "a", "new_string": "b"}
        ]}))
        .await;
    assert!(
        out.content.contains("file does not exist"),
        "{}",
        out.content
    );
    let out = env
        .multi_edit(json!({"file_path": "new.txt", "edits": [
            {"old_string": "alpha", "new_string": "ALPHA"},
            {"old_string": "", "new_string": "x"}
        ]}))
        .await;
    assert!(
        out.content.contains("Edit 2 of 2 failed"),
        "{}",
        out.content
    );
    assert_eq!(
        std::fs::read_to_string(env.cwd.join("new.txt")).unwrap(),
        "alpha gamma\n"
    );
    let out = env
        .multi_edit(json!({"file_path": "new.txt", "edits": [{"old_string": "alpha"}]}))
        .await;
    assert!(
        out.is_error,
        "a missing new_string is refused: {}",
        out.content
    );
    let out = env
        .multi_edit(json!({"file_path": "new.txt", "edits": "alpha"}))
        .await;
    assert!(out.is_error, "edits must be a list: {}", out.content);
}

#[tokio::test]
async fn notebook_edit_names_the_problem_with_bad_notebooks_and_cells() {
    let env = env();
    write_file(&env.cwd.join("broken.ipynb"), "{not json");
    let out = env
        .notebook_edit(json!({"notebook_path": "broken.ipynb", "new_source": "x", "cell_id": "a"}))
        .await;
    assert!(out.is_error);
    assert!(out.content.contains("broken.ipynb"), "{}", out.content);
    assert_eq!(
        std::fs::read_to_string(env.cwd.join("broken.ipynb")).unwrap(),
        "{not json"
    );
    write_file(
        &env.cwd.join("nb.ipynb"),
        r#"{"cells": [{"cell_type": "code", "id": "a", "metadata": {}, "outputs": [], "execution_count": null, "source": "1"}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}"#,
    );
    let before = std::fs::read_to_string(env.cwd.join("nb.ipynb")).unwrap();
    let out = env
        .notebook_edit(json!({"notebook_path": "nb.ipynb", "new_source": "x", "cell_id": "zzz"}))
        .await;
    assert!(out.is_error);
    assert!(out.content.contains("zzz"), "{}", out.content);
    let out = env
        .notebook_edit(json!({"notebook_path": "nb.ipynb", "new_source": "x", "cell_id": "a", "edit_mode": "explode"}))
        .await;
    assert!(out.is_error);
    assert!(out.content.contains("edit_mode"), "{}", out.content);
    let out = env
        .notebook_edit(json!({"notebook_path": "notes.txt", "new_source": "x"}))
        .await;
    assert!(out.is_error, "{}", out.content);
    assert_eq!(
        std::fs::read_to_string(env.cwd.join("nb.ipynb")).unwrap(),
        before,
        "refused edits leave the notebook as it was"
    );
}

/// A host (an editor) keeping some files itself: an in-memory buffer per path, plus a record
/// of the writes it took.
#[derive(Default)]
struct EditorBuffers {
    buffers: std::sync::Mutex<std::collections::BTreeMap<PathBuf, String>>,
    writes: std::sync::Mutex<Vec<PathBuf>>,
    fail_reads: bool,
}

impl robota::tools::builtins::HostFileAccess for EditorBuffers {
    fn read_text(&self, path: &Path) -> Result<Option<String>, String> {
        if self.fail_reads {
            return Err("the editor is not responding".into());
        }
        Ok(self.buffers.lock().unwrap().get(path).cloned())
    }

    fn write_text(&self, path: &Path, content: &str) -> Result<bool, String> {
        self.writes.lock().unwrap().push(path.to_path_buf());
        self.buffers
            .lock()
            .unwrap()
            .insert(path.to_path_buf(), content.to_string());
        Ok(true)
    }
}

fn env_with_host(host: std::sync::Arc<EditorBuffers>) -> Env {
    let plain = env();
    let builtins = Builtins::new(BuiltinToolsConfig {
        session_dir: Some(plain.dir.path().join("session")),
        host_files: Some(host),
        ..BuiltinToolsConfig::default()
    });
    Env { builtins, ..plain }
}

#[tokio::test]
async fn a_host_keeping_files_is_read_and_written_through_and_paths_are_still_checked() {
    let host = std::sync::Arc::new(EditorBuffers::default());
    let env = env_with_host(host.clone());
    let on_disk = env.cwd.join("open.rs");
    write_file(&on_disk, "fn saved() {}\n");
    // The editor's buffer has unsaved changes: Read shows them, not the disk.
    host.buffers
        .lock()
        .unwrap()
        .insert(on_disk.clone(), "fn unsaved() {}\nfn second() {}\n".into());
    let read = env.read(json!({"file_path": "open.rs"})).await;
    assert!(!read.is_error, "{}", read.content);
    assert!(
        read.content.contains("1\tfn unsaved() {}"),
        "{}",
        read.content
    );
    assert!(
        read.content.contains("2\tfn second() {}"),
        "{}",
        read.content
    );
    assert!(!read.content.contains("fn saved()"), "{}", read.content);

    // Edit changes the buffer through the host; the disk is left to the editor.
    let edited = env
        .edit(json!({"file_path": "open.rs", "old_string": "second", "new_string": "third"}))
        .await;
    assert!(!edited.is_error, "{}", edited.content);
    assert_eq!(
        host.buffers.lock().unwrap().get(&on_disk).cloned(),
        Some("fn unsaved() {}\nfn third() {}\n".to_string())
    );
    assert_eq!(
        std::fs::read_to_string(&on_disk).unwrap(),
        "fn saved() {}\n"
    );

    // Write and MultiEdit go through the host as well.
    let written = env
        .write(json!({"file_path": "new.txt", "content": "from the model\n"}))
        .await;
    assert!(!written.is_error, "{}", written.content);
    assert!(!env.cwd.join("new.txt").exists());
    let multi = env
        .multi_edit(json!({"file_path": "new.txt", "edits": [
            {"old_string": "model", "new_string": "agent"}
        ]}))
        .await;
    assert!(!multi.is_error, "{}", multi.content);
    assert_eq!(
        host.buffers
            .lock()
            .unwrap()
            .get(&env.cwd.join("new.txt"))
            .cloned(),
        Some("from the agent\n".to_string())
    );
    assert_eq!(host.writes.lock().unwrap().len(), 3);

    // A file the host does not keep is read from the disk.
    write_file(&env.cwd.join("plain.txt"), "disk text\n");
    let plain = env.read(json!({"file_path": "plain.txt"})).await;
    assert!(plain.content.contains("1\tdisk text"), "{}", plain.content);

    // The workspace checks come first: the host is never asked for a path outside it.
    let outside = env.outside().join("secret.txt");
    let refused = env
        .write(json!({"file_path": outside.to_string_lossy(), "content": "x"}))
        .await;
    assert!(refused.is_error, "{}", refused.content);
    assert_eq!(host.writes.lock().unwrap().len(), 3);
}

#[tokio::test]
async fn a_failing_host_is_the_calls_error() {
    let host = std::sync::Arc::new(EditorBuffers {
        fail_reads: true,
        ..EditorBuffers::default()
    });
    let env = env_with_host(host);
    write_file(&env.cwd.join("a.txt"), "text\n");
    let read = env.read(json!({"file_path": "a.txt"})).await;
    assert!(read.is_error);
    assert!(
        read.content.contains("the editor is not responding"),
        "{}",
        read.content
    );
    let edit = env
        .edit(json!({"file_path": "a.txt", "old_string": "text", "new_string": "t"}))
        .await;
    assert!(edit.is_error);
    assert_eq!(
        std::fs::read_to_string(env.cwd.join("a.txt")).unwrap(),
        "text\n"
    );
}
