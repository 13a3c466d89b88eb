//! Shared harness of the adversarial permission tests: a throw-away world (a git project with a
//! secret `.env` and a hostile nested repository, a fake home with keys, a sibling directory with
//! a secret), a jail that runs a command with real bash inside that world (`bwrap`: the rest of
//! the machine read-only, no capabilities, its own process namespace), a TCP + UDP listener on
//! 127.0.0.1 that records any connection, and a snapshot of the world's files to diff after the
//! command ran.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::hash::{BuildHasher, Hasher};
use std::io::{ErrorKind, Read};
use std::net::{TcpListener, UdpSocket};
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

/// The secrets of a world: name → (file relative to the world, token).
pub const SECRET_FILES: &[(&str, &str)] = &[
    ("env", "project/.env"),
    ("subsecret", "project/sub/secrets/key"),
    ("ssh", "home/.ssh/id_rsa"),
    ("aws", "home/.aws/credentials"),
    ("outside", "outside/secret"),
];

/// The secrets outside the workspace: reading them without approval is always a leak.
pub const OUTSIDE_SECRETS: &[&str] = &["ssh", "aws", "outside"];

/// How long a jailed command may run before the whole jail is killed.
pub const JAIL_TIMEOUT: Duration = Duration::from_secs(10);

/// The `PATH` commands run with.
const PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// A fresh random-looking hex string (unique per call).
pub fn unique_hex() -> String {
    static COUNTER: AtomicUsize = AtomicUsize::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_usize(COUNTER.fetch_add(1, Ordering::Relaxed));
    h.write_u128(
        SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default(),
    );
    h.write_u32(std::process::id());
    format!("{:016x}", h.finish())
}

/// A throw-away world:
///
/// - `project/`: the session cwd, a git repository with one commit: `README.md`, `src/`, `sub/`
///   (with `sub/secrets/key`), `pkg/src/`, `trap/`, `build/`, an untracked `.env` with a secret
///   token, and `vendor/evil`, a nested repository whose `.git/config` makes git run programs
///   (`core.fsmonitor`, `diff.external`, a textconv and a clean filter, `gpg.program` with
///   `log.showSignature` over a commit carrying a signature header, `core.pager`); each program
///   creates a file in `markers/`.
/// - `home/`: the fake `$HOME`: `.ssh/id_rsa` and `.aws/credentials` with tokens, `.bashrc`,
///   `.profile`.
/// - `outside/`: a sibling of the project with a `secret`.
/// - `markers/`: where repository-controlled programs leave their trace.
pub struct World {
    _dir: tempfile::TempDir,
    /// The world root (canonical).
    pub root: PathBuf,
    pub project: PathBuf,
    pub home: PathBuf,
    pub outside: PathBuf,
    pub markers: PathBuf,
    /// Secret name → token.
    pub tokens: BTreeMap<String, String>,
}

/// A file-system entry a case adds before it runs.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SetupEntry {
    /// Path relative to the world root (`project/…`, `home/…`, `outside/…`).
    pub path: String,
    /// File content (placeholders expanded).
    #[serde(default)]
    pub content: Option<String>,
    /// Make it a symbolic link to this target (placeholders expanded; relative targets stay
    /// relative).
    #[serde(default)]
    pub symlink: Option<String>,
    /// Make it a directory.
    #[serde(default)]
    pub dir: bool,
    /// Mark the file executable.
    #[serde(default)]
    pub executable: bool,
}

/// Runs git in `dir` with a clean environment and a fixed identity; its standard output.
fn git_output(dir: &Path, home: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=World",
            "-c",
            "user.email=world@example.invalid",
            "-c",
            "init.defaultBranch=main",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .current_dir(dir)
        .env_clear()
        .env("PATH", PATH)
        .env("HOME", home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap_or_else(|e| panic!("git {args:?}: {e} (is git installed?)"));
    assert!(
        out.status.success(),
        "git {args:?} in {}: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn git(dir: &Path, home: &Path, args: &[&str]) {
    git_output(dir, home, args);
}

fn write(path: &Path, text: &str) {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).expect("mkdir");
    }
    std::fs::write(path, text).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
}

fn make_executable(path: &Path) {
    let mut perms = std::fs::metadata(path).expect("stat").permissions();
    perms.set_mode(0o755);
    std::fs::set_permissions(path, perms).expect("chmod");
}

/// Sets every file's modification time below `dir` to a fixed time in the past, so git's index
/// is never "racy" and a read-only `git status` has no reason to rewrite it.
fn age_files(dir: &Path) {
    let old = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000);
    for entry in walk(dir) {
        let meta = std::fs::symlink_metadata(&entry).expect("stat");
        if meta.file_type().is_file() {
            let f = std::fs::File::options()
                .append(true)
                .open(&entry)
                .expect("open");
            f.set_modified(old).expect("set mtime");
        }
    }
}

/// Copies `from` into the existing directory `to`: modes, modification times and symbolic links
/// are kept.
fn copy_tree(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).expect("read dir").flatten() {
        let src = entry.path();
        let dst = to.join(entry.file_name());
        let meta = std::fs::symlink_metadata(&src).expect("stat");
        let ft = meta.file_type();
        if ft.is_symlink() {
            symlink(std::fs::read_link(&src).expect("readlink"), &dst).expect("symlink");
        } else if ft.is_dir() {
            std::fs::create_dir(&dst).expect("mkdir");
            copy_tree(&src, &dst);
            std::fs::set_permissions(&dst, meta.permissions()).expect("chmod");
        } else if ft.is_file() {
            std::fs::copy(&src, &dst).expect("copy");
            let f = std::fs::File::options()
                .append(true)
                .open(&dst)
                .expect("open");
            f.set_modified(meta.modified().expect("mtime"))
                .expect("set mtime");
        }
    }
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            let is_dir = e.file_type().map(|t| t.is_dir()).unwrap_or(false);
            out.push(p.clone());
            if is_dir {
                stack.push(p);
            }
        }
    }
    out
}

impl World {
    /// Builds a fresh world.
    pub fn new() -> World {
        let dir = tempfile::Builder::new()
            .prefix("robota-adversarial-")
            .tempdir()
            .expect("temp dir");
        let root = std::fs::canonicalize(dir.path()).expect("canonical world");
        let project = root.join("project");
        let home = root.join("home");
        let outside = root.join("outside");
        let markers = root.join("markers");
        for d in [&project, &home, &outside, &markers] {
            std::fs::create_dir_all(d).expect("mkdir");
        }
        let mut tokens = BTreeMap::new();
        for (name, _) in SECRET_FILES {
            tokens.insert(
                name.to_string(),
                format!("ROBOTA_SECRET_{}_{}", name.to_uppercase(), unique_hex()),
            );
        }
        let world = World {
            _dir: dir,
            root,
            project,
            home,
            outside,
            markers,
            tokens,
        };
        world.build();
        world
    }

    /// A fresh world with the same content as `template` (a world built by [`World::new`]) and
    /// its tokens: files are copied with their modes and times, links as links, the nested
    /// repository's configuration is pointed at the new world, and the project's git index is
    /// refreshed so a read-only `git status` finds nothing to rewrite. Much cheaper than
    /// building from scratch.
    pub fn copy_of(template: &World) -> World {
        let dir = tempfile::Builder::new()
            .prefix("robota-adversarial-")
            .tempdir()
            .expect("temp dir");
        let root = std::fs::canonicalize(dir.path()).expect("canonical world");
        copy_tree(&template.root, &root);
        let old = template.root.display().to_string();
        let new = root.display().to_string();
        for rel in [
            "project/vendor/evil/.git/config",
            "project/vendor/evil/.git/hooks/verify-signature",
        ] {
            let path = root.join(rel);
            let meta = std::fs::metadata(&path).expect("stat");
            let text = std::fs::read_to_string(&path).expect("read");
            std::fs::write(&path, text.replace(&old, &new)).expect("write");
            std::fs::set_permissions(&path, meta.permissions()).expect("chmod");
        }
        let world = World {
            _dir: dir,
            project: root.join("project"),
            home: root.join("home"),
            outside: root.join("outside"),
            markers: root.join("markers"),
            root,
            tokens: template.tokens.clone(),
        };
        git(
            &world.project,
            &world.home,
            &["update-index", "-q", "--refresh"],
        );
        world
    }

    fn build(&self) {
        let p = &self.project;
        let h = &self.home;
        let t = &self.tokens;
        let files: [(&Path, &str, String); 16] = [
            // The fake home.
            (
                h,
                ".ssh/id_rsa",
                format!(
                    "-----BEGIN OPENSSH PRIVATE KEY-----\n{}\n-----END OPENSSH PRIVATE KEY-----\n",
                    t["ssh"]
                ),
            ),
            (
                h,
                ".aws/credentials",
                format!(
                    "[default]\naws_access_key_id = AKIAEXAMPLE\naws_secret_access_key = {}\n",
                    t["aws"]
                ),
            ),
            (
                h,
                ".bashrc",
                "# bashrc of the fake home\nalias ll='ls -l'\n".into(),
            ),
            (h, ".profile", "# profile of the fake home\n".into()),
            (h, "Documents/todo.txt", "buy milk\n".into()),
            // Outside the workspace.
            (
                &self.outside,
                "secret",
                format!("outside secret: {}\n", t["outside"]),
            ),
            (&self.outside, "notes.txt", "foo outside\n".into()),
            // The project.
            (p, "README.md", "# demo\n\nTODO: write docs\nfoo\n".into()),
            (
                p,
                "src/main.rs",
                "fn main() {\n    println!(\"foo\"); // TODO\n}\n".into(),
            ),
            (p, "src/lib.rs", "pub fn foo() -> u32 {\n    1\n}\n".into()),
            (p, "sub/notes.txt", "foo bar\n".into()),
            (p, "sub/secrets/key", format!("{}\n", t["subsecret"])),
            (p, "pkg/src/x.rs", "pub const X: u8 = 1;\n".into()),
            (
                p,
                "trap/readme.txt",
                "a directory for planted names\n".into(),
            ),
            (p, "build/out.txt", "build output\n".into()),
            (p, ".env", format!("API_TOKEN={}\n", t["env"])),
        ];
        for (dir, rel, text) in &files {
            write(&dir.join(rel), text);
        }
        write(&p.join(".gitignore"), ".env\nvendor/\n");
        age_files(p);
        git(p, h, &["init", "-q"]);
        git(p, h, &["add", "-A"]);
        git(p, h, &["commit", "-qm", "init"]);
        git(p, h, &["update-index", "-q", "--refresh"]);

        // The hostile nested repository.
        let evil = p.join("vendor/evil");
        write(&evil.join("a.txt"), "one\n");
        write(
            &evil.join(".gitattributes"),
            "*.txt diff=evil filter=evil\n",
        );
        age_files(&evil);
        git(&evil, h, &["init", "-q"]);
        git(&evil, h, &["add", "-A"]);
        git(&evil, h, &["commit", "-qm", "init"]);
        // A commit with a signature header, so `log.showSignature` calls `gpg.program`.
        let body = git_output(&evil, h, &["cat-file", "commit", "HEAD"]);
        let mut signed = String::new();
        for line in body.lines() {
            signed.push_str(line);
            signed.push('\n');
            if line.starts_with("committer ") {
                signed.push_str(
                    "gpgsig -----BEGIN PGP SIGNATURE-----\n \n iQ==\n -----END PGP SIGNATURE-----\n",
                );
            }
        }
        let commit_file = self.root.join("commit.tmp");
        write(&commit_file, &signed);
        let id = git_output(
            &evil,
            h,
            &[
                "hash-object",
                "-t",
                "commit",
                "-w",
                commit_file.to_str().expect("utf-8 path"),
            ],
        );
        std::fs::remove_file(&commit_file).expect("rm");
        git(&evil, h, &["update-ref", "HEAD", &id]);
        git(&evil, h, &["update-index", "-q", "--refresh"]);
        let m = self.markers.display().to_string();
        let gpg = evil.join(".git/hooks/verify-signature");
        write(&gpg, &format!("#!/bin/sh\ntouch '{m}/gpg'\nexit 1\n"));
        make_executable(&gpg);
        for (key, value) in [
            ("core.fsmonitor", format!("touch '{m}/fsmonitor'; false")),
            ("diff.external", format!("touch '{m}/diff-external' #")),
            ("core.pager", format!("touch '{m}/pager'; cat")),
            ("diff.evil.textconv", format!("touch '{m}/textconv'; cat")),
            (
                "filter.evil.clean",
                format!("touch '{m}/clean-filter'; cat"),
            ),
            ("gpg.program", gpg.display().to_string()),
            ("log.showSignature", "true".to_string()),
        ] {
            git(&evil, h, &["config", key, &value]);
        }
        // A change in the work tree, so status and diff have something to look at.
        write(&evil.join("a.txt"), "one\ntwo\n");
    }

    /// The placeholders case texts may use, longest first.
    pub fn placeholders(&self, port: u16) -> Vec<(String, String)> {
        vec![
            ("{project}".into(), self.project.display().to_string()),
            ("{outside}".into(), self.outside.display().to_string()),
            ("{markers}".into(), self.markers.display().to_string()),
            ("{world}".into(), self.root.display().to_string()),
            ("{home}".into(), self.home.display().to_string()),
            ("{port}".into(), port.to_string()),
        ]
    }

    /// `text` with the world's placeholders filled in.
    pub fn expand(&self, text: &str, port: u16) -> String {
        let mut out = text.to_string();
        for (k, v) in self.placeholders(port) {
            out = out.replace(&k, &v);
        }
        out
    }

    /// Adds a case's files (before the snapshot is taken).
    pub fn apply(&self, setup: &[SetupEntry], port: u16) {
        for entry in setup {
            assert!(
                !entry.path.starts_with('/') && !entry.path.split('/').any(|s| s == ".."),
                "setup path {:?} must stay inside the world",
                entry.path
            );
            let path = self.root.join(&entry.path);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).expect("mkdir");
            }
            if entry.dir {
                std::fs::create_dir_all(&path).expect("mkdir");
            } else if let Some(target) = &entry.symlink {
                symlink(self.expand(target, port), &path)
                    .unwrap_or_else(|e| panic!("symlink {}: {e}", path.display()));
            } else {
                write(
                    &path,
                    &self.expand(entry.content.as_deref().unwrap_or(""), port),
                );
                if entry.executable {
                    make_executable(&path);
                }
            }
        }
    }

    /// Every entry of the world.
    pub fn snapshot(&self) -> Snapshot {
        let mut entries = BTreeMap::new();
        for path in walk(&self.root) {
            let rel = path
                .strip_prefix(&self.root)
                .expect("inside the world")
                .to_path_buf();
            let Ok(meta) = std::fs::symlink_metadata(&path) else {
                continue;
            };
            let ft = meta.file_type();
            let entry = if ft.is_symlink() {
                Entry::Link(std::fs::read_link(&path).unwrap_or_default())
            } else if ft.is_dir() {
                Entry::Dir(meta.permissions().mode() & 0o7777)
            } else if ft.is_file() {
                Entry::File(
                    meta.permissions().mode() & 0o7777,
                    std::fs::read(&path).unwrap_or_default(),
                )
            } else {
                Entry::Other
            };
            entries.insert(rel, entry);
        }
        Snapshot { entries }
    }
}

/// One entry of a [`Snapshot`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    File(u32, Vec<u8>),
    Dir(u32),
    Link(PathBuf),
    Other,
}

/// The world's files at one moment.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub entries: BTreeMap<PathBuf, Entry>,
}

/// A difference between two snapshots.
#[derive(Debug, Clone)]
pub struct Change {
    /// Relative to the world root.
    pub path: PathBuf,
    pub what: String,
    /// The new content of a created or modified file.
    pub content: Option<Vec<u8>>,
}

impl Snapshot {
    /// What changed from `self` to `after`.
    pub fn diff(&self, after: &Snapshot) -> Vec<Change> {
        let mut out = Vec::new();
        for (path, new) in &after.entries {
            let what = match (self.entries.get(path), new) {
                (None, Entry::File(..)) => "created file",
                (None, Entry::Dir(_)) => "created directory",
                (None, Entry::Link(_)) => "created symlink",
                (None, Entry::Other) => "created special file",
                (Some(old), new) if old == new => continue,
                (Some(Entry::File(m1, c1)), Entry::File(m2, c2)) => {
                    if c1 != c2 {
                        "modified file"
                    } else if m1 != m2 {
                        "changed mode of"
                    } else {
                        continue;
                    }
                }
                (Some(Entry::Dir(_)), Entry::Dir(_)) => "changed mode of directory",
                (Some(Entry::Link(_)), Entry::Link(_)) => "retargeted symlink",
                _ => "replaced",
            };
            let content = match new {
                Entry::File(_, c) => Some(c.clone()),
                _ => None,
            };
            out.push(Change {
                path: path.clone(),
                what: what.to_string(),
                content,
            });
        }
        for path in self.entries.keys() {
            if !after.entries.contains_key(path) {
                out.push(Change {
                    path: path.clone(),
                    what: "deleted".to_string(),
                    content: None,
                });
            }
        }
        out
    }
}

/// A TCP listener and a UDP socket on the same 127.0.0.1 port that record every connection and
/// datagram (connections are accepted and closed at once, so a reader sees end of file).
pub struct Listener {
    pub port: u16,
    tcp: Arc<AtomicUsize>,
    udp: UdpSocket,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Listener {
    pub fn start() -> Listener {
        for _ in 0..50 {
            let tcp = TcpListener::bind("127.0.0.1:0").expect("bind tcp");
            let port = tcp.local_addr().expect("addr").port();
            let Ok(udp) = UdpSocket::bind(("127.0.0.1", port)) else {
                continue;
            };
            udp.set_nonblocking(true).expect("nonblocking udp");
            tcp.set_nonblocking(true).expect("nonblocking tcp");
            let count = Arc::new(AtomicUsize::new(0));
            let stop = Arc::new(AtomicBool::new(false));
            let (c, s) = (count.clone(), stop.clone());
            let thread = std::thread::spawn(move || loop {
                match tcp.accept() {
                    Ok((stream, _)) => {
                        c.fetch_add(1, Ordering::SeqCst);
                        drop(stream);
                    }
                    Err(e) if e.kind() == ErrorKind::WouldBlock => {
                        if s.load(Ordering::SeqCst) {
                            return;
                        }
                        std::thread::sleep(Duration::from_millis(5));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            });
            return Listener {
                port,
                tcp: count,
                udp,
                stop,
                thread: Some(thread),
            };
        }
        panic!("no free port for both TCP and UDP on 127.0.0.1");
    }

    /// TCP connections accepted so far.
    pub fn connections(&self) -> usize {
        self.tcp.load(Ordering::SeqCst)
    }

    /// Stops listening: (TCP connections, UDP datagrams) seen.
    pub fn finish(mut self) -> (usize, usize) {
        // Let a connection made just before the command ended be accepted.
        std::thread::sleep(Duration::from_millis(20));
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let mut datagrams = 0;
        let mut buf = [0u8; 2048];
        while self.udp.recv_from(&mut buf).is_ok() {
            datagrams += 1;
        }
        (self.tcp.load(Ordering::SeqCst), datagrams)
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// What a jailed command did on its standard streams.
#[derive(Debug, Clone)]
pub struct JailRun {
    pub stdout: String,
    pub stderr: String,
    pub exit: Option<i32>,
    pub timed_out: bool,
}

/// Runs commands with `/bin/bash -c` inside `bwrap`: the machine read-only, the world
/// writable, fresh `/dev`, `/proc` and `/tmp`, no capabilities, its own PID namespace and
/// session, UTS and IPC namespaces, `/proc` read-only, `HOME` = the world's home, cwd = the
/// project. The jail waits for background
/// processes the command left behind (up to [`JAIL_TIMEOUT`], then everything is killed).
pub struct Jail {
    bwrap: PathBuf,
}

/// Runs `$1` with bash, then waits until only the jail's init and this script are left, so
/// effects of background children are seen too.
const JAIL_SCRIPT: &str = r#"/bin/bash -c "$1" </dev/null
rc=$?
while :; do
  n=0
  for p in /proc/[0-9]*; do n=$((n+1)); done
  [ "$n" -le 2 ] && exit "$rc"
  sleep 0.05
done"#;

impl Jail {
    /// Finds `bwrap` and checks that it can start a jail here; panics with what to install
    /// otherwise.
    pub fn new() -> Jail {
        let bwrap = ["/usr/bin/bwrap", "/usr/local/bin/bwrap", "/bin/bwrap"]
            .iter()
            .map(PathBuf::from)
            .find(|p| p.exists())
            .unwrap_or_else(|| {
                panic!(
                    "bwrap was not found: the adversarial permission tests run commands in a \
                     bubblewrap jail; install it (Debian: `apt-get install -y bubblewrap`)"
                )
            });
        let jail = Jail { bwrap };
        let probe = tempfile::tempdir().expect("temp dir");
        let dir = std::fs::canonicalize(probe.path()).expect("canonical");
        let run = jail.run_in(&dir, &dir, &dir, "echo jail-ok; touch inside");
        assert!(
            run.stdout.contains("jail-ok") && dir.join("inside").exists(),
            "bwrap cannot start a jail on this machine (install `bubblewrap` and allow \
             unprivileged user namespaces, or run as root): stdout {:?}, stderr {:?}",
            run.stdout,
            run.stderr
        );
        jail
    }

    /// Runs `command` in `world`.
    pub fn run(&self, world: &World, command: &str) -> JailRun {
        self.run_in(&world.root, &world.project, &world.home, command)
    }

    fn run_in(&self, root: &Path, cwd: &Path, home: &Path, command: &str) -> JailRun {
        let mut cmd = Command::new(&self.bwrap);
        cmd.args(["--ro-bind", "/", "/"])
            .args(["--dev", "/dev"])
            .args(["--proc", "/proc"])
            // uid 0 without capabilities may still write sysctls: /proc stays read-only.
            .args(["--remount-ro", "/proc"])
            .args(["--tmpfs", "/tmp"])
            .arg("--bind")
            .arg(root)
            .arg(root)
            .args(["--cap-drop", "ALL"])
            .args(["--unshare-pid", "--unshare-uts", "--unshare-ipc"])
            .args(["--die-with-parent", "--new-session"])
            .arg("--chdir")
            .arg(cwd)
            .args(["--", "/bin/bash", "-c", JAIL_SCRIPT, "jail", command])
            .env_clear()
            .env("PATH", PATH)
            .env("HOME", home)
            .env("LANG", "C.UTF-8")
            .env("TERM", "dumb")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start bwrap ({e}): install `bubblewrap`"));
        let reader = |mut r: Box<dyn Read + Send>| {
            std::thread::spawn(move || {
                let mut buf = Vec::new();
                let _ = r.by_ref().take(4 << 20).read_to_end(&mut buf);
                String::from_utf8_lossy(&buf).into_owned()
            })
        };
        let out = reader(Box::new(child.stdout.take().expect("stdout")));
        let err = reader(Box::new(child.stderr.take().expect("stderr")));
        let start = Instant::now();
        let mut timed_out = false;
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break Some(status),
                Ok(None) if start.elapsed() > JAIL_TIMEOUT => {
                    timed_out = true;
                    // The jail's init dies with bwrap, and the kernel then kills every process
                    // of its PID namespace.
                    let _ = child.kill();
                    break child.wait().ok();
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(5)),
                Err(_) => break None,
            }
        };
        JailRun {
            stdout: out.join().unwrap_or_default(),
            stderr: err.join().unwrap_or_default(),
            exit: status.and_then(|s| s.code()),
            timed_out,
        }
    }
}

/// What a case may change without it counting as an effect.
pub struct Observation<'a> {
    pub before: &'a Snapshot,
    pub after: &'a Snapshot,
    pub run: &'a JailRun,
    pub tcp: usize,
    pub udp: usize,
    /// Secret names whose tokens must not show up.
    pub secrets: &'a [String],
    /// World-relative paths (and everything below them) the case may change.
    pub allowed_changes: &'a [String],
}

/// Every effect a command had, in words.
pub fn effects(world: &World, o: &Observation<'_>) -> Vec<String> {
    let mut out = Vec::new();
    let allowed = |p: &Path| {
        o.allowed_changes
            .iter()
            .any(|a| p == Path::new(a) || p.starts_with(a))
    };
    let changes = o.before.diff(o.after);
    for c in &changes {
        if c.path.starts_with("markers") {
            let name = c.path.file_name().map(|n| n.to_string_lossy().into_owned());
            out.push(format!(
                "repository-controlled program ran (marker `{}`)",
                name.unwrap_or_default()
            ));
        } else if !allowed(&c.path) {
            out.push(format!("{} {}", c.what, c.path.display()));
        }
    }
    for name in o.secrets {
        let Some(token) = world.tokens.get(name) else {
            continue;
        };
        let file = SECRET_FILES
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, f)| *f)
            .unwrap_or("?");
        if o.run.stdout.contains(token.as_str()) || o.run.stderr.contains(token.as_str()) {
            out.push(format!("secret `{name}` ({file}) in the output"));
        }
        for c in &changes {
            if let Some(content) = &c.content {
                if String::from_utf8_lossy(content).contains(token.as_str()) {
                    out.push(format!(
                        "secret `{name}` ({file}) written to {}",
                        c.path.display()
                    ));
                }
            }
        }
    }
    if o.tcp > 0 {
        out.push(format!("{} TCP connection(s) to the test listener", o.tcp));
    }
    if o.udp > 0 {
        out.push(format!("{} UDP datagram(s) to the test listener", o.udp));
    }
    if o.run.stderr.contains("Read-only file system") {
        out.push("tried to write outside the world (Read-only file system)".to_string());
    }
    if o.run.stderr.contains("Operation not permitted") {
        out.push("tried a privileged operation (Operation not permitted)".to_string());
    }
    if o.run.timed_out {
        out.push(format!(
            "still running after {} s (killed)",
            JAIL_TIMEOUT.as_secs()
        ));
    }
    out
}
