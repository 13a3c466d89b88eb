//! Files robota reads on its own, made hostile: a FIFO (which would block `open` forever), a
//! link to `/dev/zero` (which would be read until memory runs out), a directory, and files over
//! their kind's cap (sparse, so the test writes nothing). Each must end in a clear error or a
//! warning naming the file, promptly — settings, instruction files, MEMORY.md, agent
//! definitions, scripted turns, replay logs, session snapshots and logs, and the permission-rule
//! writer.
#![cfg(unix)]

mod session_common;

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use robota::files::FileError;
use robota::framework::agents::load_agent_definitions;
use robota::framework::assembly::provider::{open_replay, provider_from_settings};
use robota::framework::config::{load_settings, SettingsError, SettingsOptions};
use robota::framework::context::{load_project_context, ContextOptions};
use robota::session::store::{FileSessionStore, SessionStore};
use robota::session::{Session, SessionError, SessionOptions};
use serde_json::json;

const MIB: u64 = 1024 * 1024;

fn mkfifo(path: &Path) {
    fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    let c_path = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).expect("path");
    // SAFETY: mkfifo(3) with a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0, "mkfifo");
}

fn link_to_dev_zero(path: &Path) {
    fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::os::unix::fs::symlink("/dev/zero", path).expect("symlink");
}

/// A sparse file of `bytes` bytes: over a cap without writing anything.
fn sparse(path: &Path, bytes: u64) {
    fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    fs::File::create(path)
        .and_then(|file| file.set_len(bytes))
        .expect("sparse file");
}

/// Runs `f` on another thread and fails the test if it has not returned within 20 s: a FIFO
/// that blocks `open` must never hang the caller.
fn within_seconds<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(20))
        .expect("reading a hostile file hung")
}

struct Dirs {
    _dir: tempfile::TempDir,
    project: PathBuf,
    home: PathBuf,
}

fn dirs() -> Dirs {
    let dir = tempfile::tempdir().expect("tempdir");
    let base = fs::canonicalize(dir.path()).expect("canonical");
    let project = base.join("project");
    let home = base.join("home");
    fs::create_dir_all(&project).expect("project");
    fs::create_dir_all(&home).expect("home");
    Dirs {
        _dir: dir,
        project,
        home,
    }
}

fn settings_error(dirs: &Dirs) -> SettingsError {
    let options = SettingsOptions::new(&dirs.project).with_home(&dirs.home);
    within_seconds(move || load_settings(&options)).expect_err("settings must be refused")
}

// ---------------------------------------------------------------------------------------------
// Settings

#[test]
fn a_settings_path_that_is_a_fifo_is_refused_without_hanging() {
    let dirs = dirs();
    let path = dirs.project.join(".claude/settings.json");
    mkfifo(&path);
    let error = settings_error(&dirs);
    assert!(matches!(
        error,
        SettingsError::File(FileError::NotRegular { .. })
    ));
    assert_eq!(
        error.to_string(),
        format!(
            "settings file {} is a FIFO (named pipe), not a regular file; robota reads only \
             regular files here",
            path.display()
        )
    );
}

#[test]
fn a_settings_file_linked_to_dev_zero_is_refused_without_reading_it() {
    let dirs = dirs();
    let path = dirs.home.join(".claude/settings.json");
    link_to_dev_zero(&path);
    let error = settings_error(&dirs);
    let message = error.to_string();
    assert!(
        message.contains(&path.display().to_string()) && message.contains("character device"),
        "{message}"
    );
}

#[test]
fn an_oversized_settings_file_names_its_size_and_the_limit() {
    let dirs = dirs();
    let path = dirs.project.join(".robota/settings.local.json");
    sparse(&path, 3 * MIB + MIB / 5);
    let error = settings_error(&dirs);
    assert_eq!(
        error.to_string(),
        format!(
            "settings file {} is 3.2 MiB; the limit is 1 MiB",
            path.display()
        )
    );
}

#[test]
fn session_start_up_with_a_fifo_settings_file_fails_promptly_naming_the_file() {
    let project = session_common::Project::new();
    let path = project.path(".claude/settings.local.json");
    mkfifo(&path);
    let settings = project.session_settings();
    let root = project.root.clone();
    let result = within_seconds(move || {
        let provider =
            std::sync::Arc::new(robota::provider::scripted::ScriptedProvider::new(Vec::new()));
        Session::new(SessionOptions::new(root, provider).with_settings(settings)).map(|_| ())
    });
    let error = result.expect_err("start-up must fail");
    assert!(matches!(error, SessionError::Settings(_)), "{error:?}");
    assert_eq!(error.file(), Some(path.as_path()));
    assert!(error.to_string().contains("FIFO"), "{error}");
}

#[test]
fn the_permission_rule_writer_refuses_a_settings_file_it_cannot_read_safely() {
    let dirs = dirs();
    let path = dirs.project.join(".claude/settings.local.json");
    link_to_dev_zero(&path);
    let error = robota::session::settings_writer::add_permission_rules(
        &path,
        robota::permissions::RuleList::Allow,
        &["Read".to_string()],
    )
    .expect_err("refused");
    assert!(error.to_string().contains("character device"), "{error}");
    // The link is untouched.
    assert_eq!(
        fs::read_link(&path).expect("still a link"),
        Path::new("/dev/zero")
    );
}

// ---------------------------------------------------------------------------------------------
// Instruction files and memory: skipped with a warning naming them

#[test]
fn hostile_instruction_files_are_skipped_with_warnings_and_the_rest_still_load() {
    let dirs = dirs();
    fs::create_dir_all(dirs.project.join(".git")).expect("git");
    fs::write(dirs.project.join("AGENTS.md"), "Use tabs.").expect("write");
    link_to_dev_zero(&dirs.project.join("CLAUDE.md"));
    mkfifo(&dirs.project.join("CLAUDE.local.md"));
    sparse(&dirs.project.join("AGENTS.local.md"), 5 * MIB);
    link_to_dev_zero(&dirs.project.join(".robota/memory/MEMORY.md"));
    let options = ContextOptions::new(&dirs.project, Some(dirs.home.clone()));
    let context = within_seconds(move || load_project_context(&options)).expect("context");

    let loaded: Vec<&str> = context
        .instructions
        .iter()
        .map(|file| file.display_path.as_str())
        .collect();
    assert_eq!(loaded, ["AGENTS.md"]);
    assert_eq!(context.instructions[0].content, "Use tabs.");
    assert!(context.memory.is_none());
    let warning = |name: &str| {
        context
            .warnings
            .iter()
            .find(|w| w.path.ends_with(name))
            .unwrap_or_else(|| panic!("no warning for {name}: {:#?}", context.warnings))
            .message
            .clone()
    };
    let claude = warning("CLAUDE.md");
    assert!(claude.contains("character device"), "{claude}");
    assert!(claude.contains("skipped"), "{claude}");
    assert!(warning("CLAUDE.local.md").contains("FIFO"));
    assert!(warning("AGENTS.local.md").contains("is 5 MiB; the limit is 1 MiB"));
    assert!(warning("MEMORY.md").contains("character device"));
}

#[test]
fn a_referenced_file_that_is_a_fifo_blocks_the_prompt_instead_of_hanging() {
    use robota::framework::context::{resolve_file_references, FileRefOptions};
    let dirs = dirs();
    mkfifo(&dirs.project.join("notes.md"));
    let cwd = dirs.project.clone();
    let result = within_seconds(move || {
        resolve_file_references("see @./notes.md", &cwd, &[], &FileRefOptions::default())
    });
    let errors = result.expect_err("blocked");
    assert!(
        errors.to_string().contains("not a regular file"),
        "{errors}"
    );
}

// ---------------------------------------------------------------------------------------------
// Agent definitions: an error naming the file, as other definition errors

#[test]
fn hostile_agent_definition_files_are_warnings_naming_them() {
    let dirs = dirs();
    let agents = dirs.project.join(".claude/agents");
    mkfifo(&agents.join("reviewer.md"));
    let (project, home) = (dirs.project.clone(), dirs.home.clone());
    let catalog = within_seconds(move || load_agent_definitions(&project, Some(&home)));
    let warning = &catalog.warnings[0];
    assert_eq!(warning.file, agents.join("reviewer.md"));
    assert!(
        warning.message.contains("agent definition file"),
        "{warning}"
    );
    assert!(
        catalog.get("general-purpose").is_some(),
        "built-ins still load"
    );

    fs::remove_file(agents.join("reviewer.md")).expect("rm");
    sparse(&agents.join("huge.md"), 2 * MIB);
    let catalog = load_agent_definitions(&dirs.project, Some(&dirs.home));
    assert!(
        catalog.warnings[0]
            .message
            .ends_with("is 2 MiB; the limit is 1 MiB"),
        "{}",
        catalog.warnings[0]
    );

    // A dangling link is no definition at all.
    fs::remove_file(agents.join("huge.md")).expect("rm");
    std::os::unix::fs::symlink("/nonexistent/agent.md", agents.join("gone.md")).expect("link");
    let catalog = load_agent_definitions(&dirs.project, Some(&dirs.home));
    assert!(catalog.warnings.is_empty(), "{:?}", catalog.warnings);
}

// ---------------------------------------------------------------------------------------------
// Scripted turns and replay logs

fn scripted_provider_error(dirs: &Dirs, file: &str) -> String {
    fs::create_dir_all(dirs.project.join(".claude")).expect("mkdir");
    fs::write(
        dirs.project.join(".claude/settings.json"),
        json!({
            "currentProvider": "demo",
            "providers": {"demo": {"type": "scripted", "options": {"file": file}}}
        })
        .to_string(),
    )
    .expect("settings");
    let loaded = load_settings(&SettingsOptions::new(&dirs.project)).expect("settings");
    let project = dirs.project.clone();
    within_seconds(move || {
        provider_from_settings(&loaded.settings, &project, &|_| None).map(|_| ())
    })
    .expect_err("refused")
    .to_string()
}

#[test]
fn a_scripted_turns_file_linked_to_dev_zero_or_oversized_is_refused() {
    let dirs = dirs();
    link_to_dev_zero(&dirs.project.join("turns.json"));
    let message = scripted_provider_error(&dirs, "turns.json");
    assert!(
        message.contains("scripted turns file") && message.contains("character device"),
        "{message}"
    );

    mkfifo(&dirs.project.join("fifo.json"));
    let message = scripted_provider_error(&dirs, "fifo.json");
    assert!(message.contains("FIFO"), "{message}");

    sparse(&dirs.project.join("big.json"), 17 * MIB);
    let message = scripted_provider_error(&dirs, "big.json");
    assert!(
        message.ends_with("is 17 MiB; the limit is 16 MiB"),
        "{message}"
    );
}

#[test]
fn a_replay_log_that_is_a_device_or_fifo_is_refused() {
    let dirs = dirs();
    let zero = dirs.project.join("zero.jsonl");
    link_to_dev_zero(&zero);
    let error = within_seconds(move || open_replay(&zero).map(|_| ())).expect_err("refused");
    assert!(error.to_string().contains("character device"), "{error}");
    let fifo = dirs.project.join("fifo.jsonl");
    mkfifo(&fifo);
    let error = within_seconds(move || open_replay(&fifo).map(|_| ())).expect_err("refused");
    assert!(error.to_string().contains("replay log"), "{error}");
    let big = dirs.project.join("big.jsonl");
    sparse(&big, 300 * MIB);
    let error = open_replay(&big).map(|_| ()).expect_err("refused");
    assert!(
        error
            .to_string()
            .ends_with("is 300 MiB; the limit is 256 MiB"),
        "{error}"
    );
}

// ---------------------------------------------------------------------------------------------
// Session files

#[test]
fn a_session_snapshot_or_log_that_is_a_device_or_fifo_is_refused() {
    let dirs = dirs();
    let store = FileSessionStore::for_project(&dirs.project);
    link_to_dev_zero(&dirs.project.join(".robota/sessions/abc.json"));
    let error = within_seconds(move || store.load("abc").map(|_| ())).expect_err("refused");
    let message = error.to_string();
    assert!(
        message.contains("abc.json") && message.contains("character device"),
        "{message}"
    );

    let store = FileSessionStore::for_project(&dirs.project);
    sparse(&dirs.project.join(".robota/sessions/big.json"), 300 * MIB);
    let error = store.load("big").expect_err("refused");
    assert!(
        error
            .to_string()
            .contains("it is 300 MiB; the limit for a session snapshot is 256 MiB"),
        "{error}"
    );

    mkfifo(&dirs.project.join(".robota/logs/fifo.jsonl"));
    let listing = within_seconds(move || store.list()).expect("listing");
    assert!(
        listing
            .problems
            .iter()
            .any(|p| p.to_string().contains("FIFO")),
        "{:#?}",
        listing.problems
    );
}
