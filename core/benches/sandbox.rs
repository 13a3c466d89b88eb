//! What the OS sandbox adds to one Bash command (DESIGN §9: < 5 ms).
//!
//! Times `/bin/sh -c true` started the way Bash starts commands (tokio process, stdio to
//! `/dev/null`, waited for), unsandboxed and under each backend that works here (Landlock +
//! seccomp; bubblewrap when installed; both with network off and with an allow-list, which adds
//! the proxy's Landlock port rule), and prints medians and p90s of the spawn-to-exit time and the
//! overhead over unsandboxed. Per-command setup (ruleset, BPF program, bwrap argv) is included;
//! the one-time probe and temp dir are not (they happen once per session).
//!
//! Run: `cargo bench -p robota --bench sandbox` (`ROBOTA_BENCH_RUNS` sets the runs, default 200;
//! `ROBOTA_BENCH_PRINT_ARGV=1` also prints the bubblewrap command line).

use std::path::Path;
use std::time::{Duration, Instant};

use robota::sandbox::{BackendChoice, PolicyInputs, Sandbox, SandboxSettings};

fn runs() -> usize {
    std::env::var("ROBOTA_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200)
}

async fn time_one(sandbox: Option<&Sandbox>, cwd: &Path) -> Duration {
    let started = Instant::now();
    let args = ["-c".into(), "true".into()];
    let mut cmd = match sandbox {
        Some(sandbox) => sandbox
            .command(Path::new("/bin/sh"), &args, cwd)
            .expect("sandboxed command"),
        None => {
            let mut cmd = tokio::process::Command::new("/bin/sh");
            cmd.args(&args).current_dir(cwd).process_group(0);
            cmd
        }
    };
    cmd.stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let status = cmd.status().await.expect("run");
    assert!(status.success());
    started.elapsed()
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

async fn measure(
    label: &str,
    sandbox: Option<&Sandbox>,
    cwd: &Path,
    base: Option<Duration>,
) -> Duration {
    for _ in 0..10 {
        time_one(sandbox, cwd).await;
    }
    let mut times = Vec::with_capacity(runs());
    for _ in 0..runs() {
        times.push(time_one(sandbox, cwd).await);
    }
    times.sort();
    let median = percentile(&times, 0.5);
    let p90 = percentile(&times, 0.9);
    let overhead = base
        .map(|b| format!("{:+.2} ms", (median.as_secs_f64() - b.as_secs_f64()) * 1e3))
        .unwrap_or_else(|| "-".into());
    println!(
        "{label:<34} median {:>6.2} ms   p90 {:>6.2} ms   overhead {overhead}",
        median.as_secs_f64() * 1e3,
        p90.as_secs_f64() * 1e3
    );
    median
}

fn sandbox(backend: BackendChoice, cwd: &Path, domains: &[&str]) -> Option<Sandbox> {
    let mut settings = SandboxSettings::default();
    settings.enabled = Some(true);
    settings.backend = backend;
    settings.network.allowed_domains = domains.iter().map(|d| d.to_string()).collect();
    let inputs = PolicyInputs {
        cwd: cwd.to_path_buf(),
        ..PolicyInputs::default()
    };
    let sandbox = Sandbox::new(settings, None, false, inputs);
    let status = sandbox.status();
    if status.active {
        Some(sandbox)
    } else {
        println!(
            "{}: unavailable ({})",
            backend.as_str(),
            status.reason.unwrap_or_default()
        );
        None
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let dir = tempfile::tempdir().expect("temp dir");
    let cwd = dir.path();
    std::fs::create_dir_all(cwd.join(".git/hooks")).expect("mkdir");
    println!("runs per case: {}; command: /bin/sh -c true", runs());
    if std::env::var_os("ROBOTA_BENCH_PRINT_ARGV").is_some() {
        if let Some(sb) = sandbox(BackendChoice::Bwrap, cwd, &[]) {
            let cmd = sb
                .command(Path::new("/bin/sh"), &["-c".into(), "true".into()], cwd)
                .expect("command");
            let std_cmd = cmd.as_std();
            println!(
                "{:?} {:?}",
                std_cmd.get_program(),
                std_cmd.get_args().collect::<Vec<_>>()
            );
        }
    }
    let base = measure("unsandboxed", None, cwd, None).await;
    for backend in [BackendChoice::Landlock, BackendChoice::Bwrap] {
        for (network, domains) in [
            ("network off", &[][..]),
            ("allow-list", &["example.com"][..]),
        ] {
            if let Some(sandbox) = sandbox(backend, cwd, domains) {
                let label = format!("{} ({network})", backend.as_str());
                measure(&label, Some(&sandbox), cwd, Some(base)).await;
                let started = Instant::now();
                let n = 200u32;
                for _ in 0..n {
                    let args = ["-c".into(), "true".into()];
                    let cmd = sandbox.command(Path::new("/bin/sh"), &args, cwd);
                    assert!(cmd.is_ok());
                }
                println!(
                    "{:<34} {:.3} ms per command (ruleset, BPF program, argv; no process)",
                    "  of which setup",
                    started.elapsed().as_secs_f64() * 1e3 / f64::from(n)
                );
            }
        }
    }
}
