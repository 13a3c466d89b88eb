//! The store conformance suite (`robota::session::conformance`) against every built-in store:
//! the file store, the SQLite store and the PostgreSQL store (on a throw-away server, see
//! `postgres_common`), including the checks that need a second process (a lease holder that is
//! killed, a session written by another process).

mod postgres_common;

use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::Arc;

use robota::session::conformance::{self, ChildTask};
use robota::session::store::{
    FileSessionStore, PostgresConfig, PostgresSessionStore, SessionStore, SqliteSessionStore,
};

/// The environment variable that gives a child the PostgreSQL server's connection string.
const POSTGRES_URL: &str = "ROBOTA_CONFORMANCE_POSTGRES_URL";

/// Opens the store of kind `kind` (`file`, `sqlite` or `postgres`) at `root` (for PostgreSQL:
/// the project key `root` in the database at `url`).
fn open(kind: &str, root: &Path, url: &str) -> Arc<dyn SessionStore> {
    match kind {
        "postgres" => Arc::new(
            PostgresSessionStore::connect(&PostgresConfig {
                url: url.to_string(),
                project: root.display().to_string(),
            })
            .unwrap_or_else(|e| panic!("connect to the database: {e}")),
        ),
        "file" => Arc::new(FileSessionStore::for_project(root)),
        "sqlite" => Arc::new(
            SqliteSessionStore::open(root.join(".robota/sessions.db"))
                .unwrap_or_else(|e| panic!("open the database: {e}")),
        ),
        other => panic!("unknown store kind {other}"),
    }
}

/// The child process: runs a conformance task on the store the parent names.
#[test]
#[ignore = "helper: run in child processes by the tests of this file"]
fn conformance_child() {
    let Ok(kind) = std::env::var("ROBOTA_CONFORMANCE_STORE") else {
        return;
    };
    let root = std::env::var("ROBOTA_CONFORMANCE_ROOT").unwrap_or_default();
    let task = std::env::var("ROBOTA_CONFORMANCE_TASK").unwrap_or_default();
    let id = std::env::var("ROBOTA_CONFORMANCE_SESSION").unwrap_or_default();
    let url = std::env::var(POSTGRES_URL).unwrap_or_default();
    let task = ChildTask::from_name(&task).unwrap_or_else(|| panic!("unknown task {task}"));
    conformance::child_main(&*open(&kind, Path::new(&root), &url), task, &id);
}

fn child(kind: &str, root: &Path, url: &str, task: ChildTask, id: &str) -> Command {
    let exe = std::env::current_exe().unwrap_or_else(|e| panic!("{e}"));
    let mut command = Command::new(exe);
    command
        .args(["--exact", "conformance_child", "--ignored", "--nocapture"])
        .env("ROBOTA_CONFORMANCE_STORE", kind)
        .env("ROBOTA_CONFORMANCE_ROOT", root)
        .env("ROBOTA_CONFORMANCE_TASK", task.name())
        .env("ROBOTA_CONFORMANCE_SESSION", id)
        .env(POSTGRES_URL, url)
        .stdin(Stdio::null())
        .stderr(Stdio::inherit());
    command
}

/// The suite against `kind`; `url`: the PostgreSQL database (each fresh store is a fresh
/// project key in it: projects do not see each other's sessions).
fn suite(kind: &str, url: &str) {
    let dirs = std::sync::Mutex::new(Vec::new());
    conformance::run_all(&|| {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let store = open(kind, dir.path(), url);
        dirs.lock().unwrap_or_else(|e| e.into_inner()).push(dir);
        store
    });

    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let root = dir.path();
    let store = open(kind, root, url);
    let spawn_holder = |id: &str| -> Child {
        child(kind, root, url, ChildTask::HoldLease, id)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("spawn the holder: {e}"))
    };
    conformance::lease_of_a_killed_process_is_taken_over(&*store, &spawn_holder);
    let run_writer = |id: &str| -> ExitStatus {
        child(kind, root, url, ChildTask::WriteSession, id)
            .stdout(Stdio::null())
            .status()
            .unwrap_or_else(|e| panic!("run the writer: {e}"))
    };
    conformance::a_session_written_by_another_process_resumes(&*store, &run_writer);
}

#[test]
fn the_file_store_conforms() {
    suite("file", "");
}

#[test]
fn the_sqlite_store_conforms() {
    suite("sqlite", "");
}

#[test]
fn the_postgres_store_conforms() {
    let Some(server) = postgres_common::TestPostgres::start() else {
        return;
    };
    suite("postgres", &server.url());
}
