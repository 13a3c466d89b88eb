//! A throw-away PostgreSQL server for the tests of the PostgreSQL session store: `initdb` into a
//! temporary data directory, `postgres` on a free loopback port (its socket in the data
//! directory), a fresh database; stopped (SIGQUIT, then SIGKILL) when dropped, also when the
//! test panics, so no server outlives its test.
//!
//! `initdb` and `postgres` refuse to run as root: when the tests run as root (CI, this project's
//! machines) the server runs as the `postgres` user through `setpriv` (which execs, so the
//! child is the server itself and stopping it leaves nothing behind), in a data directory that
//! user owns. Binaries are found with `pg_config --bindir` or under `/usr/lib/postgresql/*/bin`.
//! Where PostgreSQL is not installed, [`TestPostgres::start`] prints a loud message and returns
//! `None` (the test then skips); CI installs it (`.ci/run`).
#![allow(dead_code)]

use std::io::Read;
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running server with one database, `robota_test`.
pub struct TestPostgres {
    server: Child,
    /// The data directory's parent (removed on drop, after the server stopped).
    dir: Option<tempfile::TempDir>,
    port: u16,
}

/// Where `initdb` and `postgres` are, when PostgreSQL is installed.
fn bindir() -> Option<PathBuf> {
    let from_pg_config = Command::new("pg_config")
        .arg("--bindir")
        .output()
        .ok()
        .filter(|output| output.status.success())
        .map(|output| PathBuf::from(String::from_utf8_lossy(&output.stdout).trim()));
    if let Some(dir) = from_pg_config.filter(|dir| dir.join("initdb").is_file()) {
        return Some(dir);
    }
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|entry| entry.ok().map(|entry| entry.path().join("bin")))
        .filter(|dir| dir.join("initdb").is_file() && dir.join("postgres").is_file())
        .collect();
    found.sort();
    found.pop()
}

fn running_as_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// `program` run as the `postgres` user when we are root (exec'd, no intermediate process).
fn as_server_user(program: &Path) -> Command {
    if running_as_root() {
        let mut command = Command::new("setpriv");
        command
            .args([
                "--reuid=postgres",
                "--regid=postgres",
                "--init-groups",
                "--",
            ])
            .arg(program);
        command
    } else {
        Command::new(program)
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|address| address.port())
        .unwrap_or_else(|e| panic!("find a free port: {e}"))
}

impl TestPostgres {
    /// Starts a server; `None` (after a loud message) when PostgreSQL is not installed.
    pub fn start() -> Option<TestPostgres> {
        let Some(bin) = bindir() else {
            eprintln!(
                "\n!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n\
                 !!! SKIPPED: PostgreSQL is not installed (no initdb from pg_config or under\n\
                 !!! /usr/lib/postgresql/*/bin). Install Debian's `postgresql` package to run\n\
                 !!! the PostgreSQL session store tests; CI installs it.\n\
                 !!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n"
            );
            return None;
        };
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("temp dir: {e}"));
        let data = dir.path().join("data");
        std::fs::create_dir(&data).unwrap_or_else(|e| panic!("data dir: {e}"));
        std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o700))
            .unwrap_or_else(|e| panic!("{e}"));
        if running_as_root() {
            // The server user must reach the data directory and own it.
            std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755))
                .unwrap_or_else(|e| panic!("{e}"));
            let status = Command::new("chown")
                .args(["postgres:postgres"])
                .arg(&data)
                .status()
                .unwrap_or_else(|e| panic!("chown: {e}"));
            assert!(status.success(), "chown the data directory to postgres");
        }
        let initdb = as_server_user(&bin.join("initdb"))
            .arg("-D")
            .arg(&data)
            .args([
                "-U",
                "robota",
                "--auth=trust",
                "--no-sync",
                "--encoding=UTF8",
                "--locale=C",
            ])
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("run initdb: {e}"));
        assert!(
            initdb.status.success(),
            "initdb failed: {}{}",
            String::from_utf8_lossy(&initdb.stdout),
            String::from_utf8_lossy(&initdb.stderr)
        );
        let port = free_port();
        let log = std::fs::File::create(dir.path().join("server.log"))
            .unwrap_or_else(|e| panic!("server log: {e}"));
        let log_err = log.try_clone().unwrap_or_else(|e| panic!("{e}"));
        let server = as_server_user(&bin.join("postgres"))
            .arg("-D")
            .arg(&data)
            .arg("-k")
            .arg(&data)
            .args(["-p", &port.to_string()])
            .args([
                "-c",
                "listen_addresses=127.0.0.1",
                "-c",
                "fsync=off",
                "-c",
                "max_connections=200",
            ])
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log_err)
            .spawn()
            .unwrap_or_else(|e| panic!("start postgres: {e}"));
        let mut test = TestPostgres {
            server,
            dir: Some(dir),
            port,
        };
        test.create_database(&bin);
        Some(test)
    }

    /// Waits until the server accepts connections and creates `robota_test`.
    fn create_database(&mut self, bin: &Path) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let created = Command::new(bin.join("createdb"))
                .args(["-h", "127.0.0.1", "-p", &self.port.to_string()])
                .args(["-U", "robota", "robota_test"])
                .stdin(Stdio::null())
                .stderr(Stdio::piped())
                .output()
                .unwrap_or_else(|e| panic!("run createdb: {e}"));
            if created.status.success() {
                return;
            }
            if let Ok(Some(status)) = self.server.try_wait() {
                panic!("postgres exited ({status}): {}", self.server_log());
            }
            if Instant::now() > deadline {
                panic!(
                    "postgres did not accept connections in 60 s: {}\n{}",
                    String::from_utf8_lossy(&created.stderr),
                    self.server_log()
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// What the server logged.
    pub fn server_log(&self) -> String {
        let mut text = String::new();
        if let Some(dir) = &self.dir {
            if let Ok(mut file) = std::fs::File::open(dir.path().join("server.log")) {
                let _ = file.read_to_string(&mut text);
            }
        }
        text
    }

    /// The connection string of the test database.
    pub fn url(&self) -> String {
        format!("postgres://robota@127.0.0.1:{}/robota_test", self.port)
    }

    /// Runs `sql` with `psql` and returns what it printed (unaligned, tuples only).
    pub fn sql(&self, sql: &str) -> String {
        let bin = bindir().unwrap_or_else(|| panic!("PostgreSQL is not installed"));
        let output = Command::new(bin.join("psql"))
            .args(["-h", "127.0.0.1", "-p", &self.port.to_string()])
            .args([
                "-U",
                "robota",
                "-d",
                "robota_test",
                "-v",
                "ON_ERROR_STOP=1",
                "-Atc",
                sql,
            ])
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("run psql: {e}"));
        assert!(
            output.status.success(),
            "psql {sql:?} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).trim().to_string()
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.server.id()
    }
}

impl Drop for TestPostgres {
    fn drop(&mut self) {
        // SIGQUIT: immediate shutdown (the server ends its backends and exits).
        // SAFETY: kill with a pid of our own child.
        unsafe {
            libc::kill(self.server.id() as libc::pid_t, libc::SIGQUIT);
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.server.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.server.kill();
        let _ = self.server.wait();
    }
}
