//! Escape tests for the OS sandbox: real commands under each backend this machine has
//! (Landlock; bubblewrap when installed), real files in temp dirs, a real loopback listener.
//! Each test checks what actually happened on disk or on the socket, not what robota says.
#![cfg(target_os = "linux")]

use std::io::{Read, Write};
use std::net::{TcpListener, UdpSocket};
use std::path::{Path, PathBuf};
use std::time::Duration;

use robota::sandbox::{
    BackendChoice, PolicyInputs, Sandbox, SandboxNetworkSettings, SandboxSettings,
};

struct Run {
    stdout: String,
    stderr: String,
}

/// The backends to test: Landlock always; bubblewrap when installed (CI installs it, so there a
/// missing bwrap is a failure, not a skip).
fn backends() -> Vec<BackendChoice> {
    let mut list = vec![BackendChoice::Landlock];
    let installed = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join("bwrap").is_file()))
        .unwrap_or(false);
    if installed {
        list.push(BackendChoice::Bwrap);
    } else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must install bubblewrap so the bwrap backend is tested"
        );
        eprintln!("bubblewrap is not installed: only the Landlock backend is tested");
    }
    list
}

struct Fixture {
    _root: tempfile::TempDir,
    workspace: PathBuf,
    outside: PathBuf,
}

fn fixture() -> Fixture {
    let root = tempfile::tempdir().expect("temp dir");
    let workspace = root.path().join("ws");
    let outside = root.path().join("outside");
    std::fs::create_dir_all(workspace.join(".git/hooks")).expect("mkdir");
    std::fs::create_dir_all(workspace.join(".claude")).expect("mkdir");
    std::fs::write(workspace.join(".claude/settings.json"), "{}").expect("write");
    std::fs::create_dir_all(&outside).expect("mkdir");
    let workspace = workspace.canonicalize().expect("canonical");
    let outside = outside.canonicalize().expect("canonical");
    Fixture {
        _root: root,
        workspace,
        outside,
    }
}

fn sandbox(fx: &Fixture, backend: BackendChoice, network: SandboxNetworkSettings) -> Sandbox {
    let mut settings = SandboxSettings::default();
    settings.enabled = Some(true);
    settings.backend = backend;
    settings.network = network;
    let inputs = PolicyInputs {
        cwd: fx.workspace.clone(),
        ..PolicyInputs::default()
    };
    let sandbox = Sandbox::new(settings, None, false, inputs);
    let status = sandbox.status();
    assert!(status.active, "{backend:?} must work here: {status:?}");
    assert_eq!(status.backend.as_deref(), Some(backend.as_str()));
    sandbox
}

async fn run(sandbox: &Sandbox, cwd: &Path, script: &str) -> Run {
    let mut cmd = sandbox
        .command(Path::new("/bin/bash"), &["-c".into(), script.into()], cwd)
        .expect("sandboxed command");
    cmd.stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    let output = tokio::time::timeout(Duration::from_secs(30), cmd.output())
        .await
        .expect("command finished in time")
        .expect("command ran");
    Run {
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

#[tokio::test]
async fn writes_inside_succeed_and_outside_fail() {
    for backend in backends() {
        let fx = fixture();
        let sb = sandbox(&fx, backend, SandboxNetworkSettings::default());
        let inside = fx.workspace.join("inside.txt");
        let outside = fx.outside.join("outside.txt");
        let r = run(
            &sb,
            &fx.workspace,
            &format!(
                "echo in > {}; echo out > {}; mkdir -p sub/deeper && echo ok > sub/deeper/f; \
                 echo tmp > \"$TMPDIR/t\" && cat \"$TMPDIR/t\"",
                inside.display(),
                outside.display()
            ),
        )
        .await;
        assert!(
            inside.exists(),
            "{backend:?}: inside write failed: {}",
            r.stderr
        );
        assert!(fx.workspace.join("sub/deeper/f").exists(), "{backend:?}");
        assert!(
            !outside.exists(),
            "{backend:?}: wrote outside the workspace"
        );
        assert!(
            r.stdout.contains("tmp"),
            "{backend:?}: TMPDIR not writable: {}",
            r.stderr
        );
        assert!(
            r.stderr.contains("Read-only file system") || r.stderr.contains("Permission denied"),
            "{backend:?}: {}",
            r.stderr
        );
        // Writing to /dev/null works; removing or renaming outside files does not.
        std::fs::write(fx.outside.join("keep"), "x").expect("write");
        let r = run(
            &sb,
            &fx.workspace,
            &format!(
                "echo x > /dev/null && echo devnull-ok; rm -f {keep}; mv {keep} ./stolen; \
                 touch {dir}/new",
                keep = fx.outside.join("keep").display(),
                dir = fx.outside.display()
            ),
        )
        .await;
        assert!(r.stdout.contains("devnull-ok"), "{backend:?}: {}", r.stderr);
        assert!(
            fx.outside.join("keep").exists(),
            "{backend:?}: removed an outside file"
        );
        assert!(!fx.outside.join("new").exists(), "{backend:?}");
        // (`mv` may fall back to copying into the workspace — reading is allowed — but the
        // original stays where it was.)
    }
}

#[tokio::test]
async fn symlinks_and_proc_do_not_lead_outside() {
    for backend in backends() {
        let fx = fixture();
        let sb = sandbox(&fx, backend, SandboxNetworkSettings::default());
        std::os::unix::fs::symlink(&fx.outside, fx.workspace.join("link")).expect("symlink");
        let me = std::process::id();
        let escape = format!("escape-{}-{}", backend.as_str(), me);
        let host_cwd = std::env::current_dir().expect("cwd");
        let script = format!(
            "echo a > link/via-link; ln -s {out} l2 && echo b > l2/via-link2; \
             echo c > /proc/self/root{out}/via-proc-self; \
             echo d > /proc/{me}/root{out}/via-proc-parent-root; \
             echo e > /proc/{me}/cwd/{escape}; \
             echo f > /proc/$$/root{out}/via-proc-shell; true",
            out = fx.outside.display(),
        );
        let r = run(&sb, &fx.workspace, &script).await;
        let leaked: Vec<_> = std::fs::read_dir(&fx.outside)
            .expect("read outside")
            .flatten()
            .map(|e| e.file_name())
            .collect();
        let cwd_escape = host_cwd.join(&escape);
        let escaped_to_cwd = cwd_escape.exists();
        let _ = std::fs::remove_file(&cwd_escape);
        assert!(
            leaked.is_empty(),
            "{backend:?}: wrote {leaked:?}; stderr: {}",
            r.stderr
        );
        assert!(
            !escaped_to_cwd,
            "{backend:?}: wrote through /proc/<pid>/cwd"
        );
    }
}

#[tokio::test]
async fn children_grandchildren_and_new_sessions_are_confined() {
    for backend in backends() {
        let fx = fixture();
        let sb = sandbox(&fx, backend, SandboxNetworkSettings::default());
        let out = fx.outside.display();
        let script = format!(
            "sh -c 'echo 1 > {out}/child'; \
             sh -c 'sh -c \"echo 2 > {out}/grandchild\"'; \
             setsid sh -c 'echo 3 > {out}/setsid'; \
             nohup sh -c 'echo 4 > {out}/nohup' >/dev/null 2>&1 & wait; \
             (cd / && exec sh -c 'echo 5 > {out}/subshell'); \
             sh -c 'echo ok > child-inside' && echo done"
        );
        let r = run(&sb, &fx.workspace, &script).await;
        assert!(r.stdout.contains("done"), "{backend:?}: {}", r.stderr);
        assert!(fx.workspace.join("child-inside").exists(), "{backend:?}");
        let leaked: Vec<_> = std::fs::read_dir(&fx.outside)
            .expect("read outside")
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert!(leaked.is_empty(), "{backend:?}: children wrote {leaked:?}");
    }
}

#[tokio::test]
async fn bwrap_keeps_protected_paths_read_only() {
    if !backends().contains(&BackendChoice::Bwrap) {
        return;
    }
    let fx = fixture();
    let sb = sandbox(&fx, BackendChoice::Bwrap, SandboxNetworkSettings::default());
    let status = sb.status();
    assert!(status.guarantees.protected_paths_read_only);
    assert!(status
        .protected_paths
        .contains(&fx.workspace.join(".git/hooks")));
    let r = run(
        &sb,
        &fx.workspace,
        "echo evil > .git/hooks/pre-commit; echo '{\"x\":1}' > .claude/settings.json; \
         rm -rf .claude; mkdir -p .git/objects && echo obj > .git/objects/o && echo objects-ok",
    )
    .await;
    assert!(
        !fx.workspace.join(".git/hooks/pre-commit").exists(),
        "{}",
        r.stderr
    );
    assert_eq!(
        std::fs::read_to_string(fx.workspace.join(".claude/settings.json")).expect("read"),
        "{}"
    );
    // The rest of .git stays writable so commits work.
    assert!(r.stdout.contains("objects-ok"), "{}", r.stderr);
    let note = sb.explain_failure(&r.stderr).unwrap_or_default();
    assert!(note.contains("protected paths"), "{note}");
}

#[tokio::test]
async fn network_off_blocks_tcp_and_udp() {
    for backend in backends() {
        let fx = fixture();
        let sb = sandbox(&fx, backend, SandboxNetworkSettings::default());
        let listener = TcpListener::bind("127.0.0.1:0").expect("listen");
        listener.set_nonblocking(true).expect("nonblocking");
        let port = listener.local_addr().expect("addr").port();
        let udp = UdpSocket::bind("127.0.0.1:0").expect("udp");
        udp.set_nonblocking(true).expect("nonblocking");
        let udp_port = udp.local_addr().expect("addr").port();
        let r = run(
            &sb,
            &fx.workspace,
            &format!(
                "(exec 3<>/dev/tcp/127.0.0.1/{port} && echo tcp-connected); \
                 (echo hi > /dev/udp/127.0.0.1/{udp_port} && echo udp-sent); \
                 curl -s --max-time 5 http://127.0.0.1:{port}/ && echo curl-ok; true"
            ),
        )
        .await;
        assert!(
            !r.stdout.contains("tcp-connected"),
            "{backend:?}: {}",
            r.stdout
        );
        assert!(!r.stdout.contains("curl-ok"), "{backend:?}: {}", r.stdout);
        assert!(
            listener.accept().is_err(),
            "{backend:?}: the listener saw a connection from the sandbox"
        );
        let mut buf = [0u8; 16];
        assert!(
            udp.recv_from(&mut buf).is_err(),
            "{backend:?}: a UDP datagram left the sandbox"
        );
        assert!(!r.stdout.contains("udp-sent"), "{backend:?}: {}", r.stdout);
    }
}

/// A one-request-per-connection HTTP server on 127.0.0.1 answering `hello from test`.
fn http_server() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("listen");
    let port = listener.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(8) {
            let Ok(mut stream) = stream else { continue };
            let mut buf = [0u8; 4096];
            let _ = stream.read(&mut buf);
            let body = "hello from test";
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    port
}

#[tokio::test]
async fn allow_list_goes_through_the_proxy_only() {
    for backend in backends() {
        let fx = fixture();
        let mut network = SandboxNetworkSettings::default();
        network.allowed_domains = vec!["127.0.0.1".into()];
        let sb = sandbox(&fx, backend, network);
        let port = http_server();
        let r = run(
            &sb,
            &fx.workspace,
            &format!(
                "curl -s --max-time 10 http://127.0.0.1:{port}/allowed; echo; \
                 curl -s --max-time 10 http://localhost:{port}/refused; echo; \
                 curl -s --max-time 5 --noproxy '*' http://127.0.0.1:{port}/direct && echo direct-ok; true"
            ),
        )
        .await;
        assert!(
            r.stdout.contains("hello from test"),
            "{backend:?}: {} {}",
            r.stdout,
            r.stderr
        );
        assert!(
            r.stdout.contains("network access to localhost is blocked")
                && r.stdout.contains("sandbox.network.allowedDomains"),
            "{backend:?}: {}",
            r.stdout
        );
        assert!(
            !r.stdout.contains("direct-ok"),
            "{backend:?}: direct connection: {}",
            r.stdout
        );
        let status = sb.status();
        assert!(status.proxy_port.is_some());
        assert!(status.guarantees.network_allow_list_enforced);
    }
}

#[tokio::test]
async fn bwrap_masks_read_denied_paths() {
    if !backends().contains(&BackendChoice::Bwrap) {
        return;
    }
    let fx = fixture();
    std::fs::write(fx.outside.join("secret.txt"), "TOP-SECRET").expect("write");
    std::fs::create_dir_all(fx.outside.join("keys/public")).expect("mkdir");
    std::fs::write(fx.outside.join("keys/id"), "PRIVATE-KEY").expect("write");
    std::fs::write(fx.outside.join("keys/public/id.pub"), "PUBLIC-KEY").expect("write");
    let mut settings = SandboxSettings::default();
    settings.enabled = Some(true);
    settings.backend = BackendChoice::Bwrap;
    settings.filesystem.deny_read = vec![fx.outside.join("secret.txt"), fx.outside.join("keys")];
    settings.filesystem.allow_read = vec![fx.outside.join("keys/public")];
    let inputs = PolicyInputs {
        cwd: fx.workspace.clone(),
        ..PolicyInputs::default()
    };
    let sb = Sandbox::new(settings, None, false, inputs);
    assert!(sb.status().guarantees.read_deny_enforced);
    let r = run(
        &sb,
        &fx.workspace,
        &format!(
            "cat {o}/secret.txt; cat {o}/keys/id; ls {o}/keys; cat {o}/keys/public/id.pub",
            o = fx.outside.display()
        ),
    )
    .await;
    assert!(!r.stdout.contains("TOP-SECRET"), "{}", r.stdout);
    assert!(!r.stdout.contains("PRIVATE-KEY"), "{}", r.stdout);
    assert!(
        r.stdout.contains("PUBLIC-KEY"),
        "allowRead inside denyRead: {} {}",
        r.stdout,
        r.stderr
    );
}

/// Live processes (pid, command line) whose command line contains `marker`.
fn processes_with(marker: &str) -> Vec<(i32, String)> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("proc").flatten() {
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let text = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        let zombie = std::fs::read_to_string(entry.path().join("stat"))
            .map(|s| {
                s.rsplit(')')
                    .next()
                    .unwrap_or("")
                    .trim_start()
                    .starts_with('Z')
            })
            .unwrap_or(true);
        let pid = entry.file_name().to_string_lossy().parse::<i32>().ok();
        if let (Some(pid), true, false) = (pid, text.contains(marker), zombie) {
            found.push((pid, text));
        }
    }
    found
}

#[tokio::test]
async fn a_timed_out_sandboxed_bash_call_leaves_no_process_behind() {
    use robota::tools::builtins::{BashTool, BuiltinToolsConfig, Builtins};
    use robota::tools::{Tool, ToolContext};
    use std::sync::Arc;
    for backend in backends() {
        let fx = fixture();
        let sb = Arc::new(sandbox(&fx, backend, SandboxNetworkSettings::default()));
        let builtins = Builtins::new(BuiltinToolsConfig {
            session_dir: Some(fx.workspace.join("../session")),
            shell: Some("/bin/sh".into()),
            kill_grace: Duration::from_millis(200),
            sandbox: Some(Arc::clone(&sb)),
            ..BuiltinToolsConfig::default()
        });
        // Unique sleep lengths mark this test's processes.
        let marker = format!("sleep 37.{}{}", std::process::id(), backend.as_str().len());
        let command =
            format!("({marker} &) ; setsid {marker} & nohup {marker} >/dev/null 2>&1 & {marker}");
        let output = BashTool::new(&builtins)
            .execute(
                serde_json::json!({"command": command, "timeout": 700}),
                ToolContext {
                    tool_use_id: "toolu_1".into(),
                    cwd: fx.workspace.clone(),
                    cancel: tokio_util::sync::CancellationToken::new(),
                },
            )
            .await;
        assert!(
            output.content.contains("timed out"),
            "{backend:?}: {}",
            output.content
        );
        assert_eq!(output.response["sandboxed"], true);
        // bwrap: the PID namespace ends with the command, so even a `setsid` escapee is gone.
        // Landlock has no PID namespace: a `setsid` child leaves the process group (as without
        // the sandbox), still confined by Landlock.
        let allowed = if backend == BackendChoice::Bwrap {
            0
        } else {
            1
        };
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        let mut left = processes_with(&marker);
        while left.len() > allowed && std::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(50)).await;
            left = processes_with(&marker);
        }
        for (pid, _) in &left {
            // SAFETY: kill(2) on a pid this test started; no memory is involved.
            unsafe { libc::kill(*pid, libc::SIGKILL) };
        }
        assert!(left.len() <= allowed, "{backend:?}: left behind {left:?}");
    }
}
