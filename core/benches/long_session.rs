//! Per-prompt cost over a long session (DESIGN performance budget: engine + persistence time per
//! prompt at turn 2,000 within 1.5× of turn 10, persistence on; resume < 50 ms).
//!
//! One [`Session`] with project persistence in a temporary directory (on the file system of the
//! target directory, so `fsync` costs what it costs there) runs `--turns` prompts against an
//! in-process model that answers about 2 KB of text per turn in 20 deltas, with provider usage,
//! no compaction. The session runs on the main thread in a current-thread runtime, so the
//! thread's CPU time is the engine's and the persistence's work (the model costs nothing); wall
//! time adds the `fsync`s. The figures are means over the 10 (and 100) prompts ending at each
//! reported turn: the 100-prompt mean includes the occasional snapshot rewrite of a long
//! session. Then the session is shut down and resumed by a new `Session` (construction time),
//! and listed.
//!
//! Run: `cargo bench -p robota --bench long_session` (add `-- --turns N` to change the count, `--keep` to keep
//! the session's files and print where they are).

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use robota::hooks::SessionEndReason;
use robota::message::{ProviderError, Usage};
use robota::permissions::PermissionMode;
use robota::provider::{
    Provider, ProviderCapabilities, ProviderRequest, ProviderResponse, StopReason, StreamEvent,
    StreamSink,
};
use robota::session::store::{FileSessionStore, SessionStore};
use robota::session::{Session, SessionOptions, SessionPersistence, SessionSettings};
use tokio_util::sync::CancellationToken;

/// Text deltas per answer and their size: 20 × 100 bytes ≈ 2 KB per turn.
const DELTAS: usize = 20;
const DELTA: &str =
    "The engine's own cost per prompt must not grow with the conversation; this is filler text. ";

/// Turns whose 10-prompt window is reported (those not above `--turns` are skipped).
const REPORTED: [usize; 7] = [10, 100, 250, 500, 1000, 1500, 2000];

fn main() {
    let turns = parse_turns().unwrap_or(2000);
    if let Err(error) = bench(turns) {
        eprintln!("benchmark failed: {error}");
        std::process::exit(1);
    }
}

fn parse_turns() -> Option<usize> {
    let args: Vec<String> = std::env::args().collect();
    let at = args.iter().position(|a| a == "--turns")?;
    args.get(at + 1)?.parse().ok()
}

type BoxError = Box<dyn std::error::Error>;

/// A model that answers every call with the same ~2 KB text, instantly, reporting usage that
/// grows with the conversation as a real provider's would.
struct FillerModel {
    calls: AtomicU64,
}

#[async_trait]
impl Provider for FillerModel {
    fn name(&self) -> &str {
        "bench"
    }

    fn model(&self) -> &str {
        "bench-model"
    }

    fn capabilities(&self) -> ProviderCapabilities {
        ProviderCapabilities {
            // Large enough that 2,000 turns never reach the hard guard.
            context_window: 100_000_000,
            ..ProviderCapabilities::default()
        }
    }

    async fn stream(
        &self,
        _request: &ProviderRequest,
        on_event: &StreamSink<'_>,
        _cancel: &CancellationToken,
    ) -> Result<ProviderResponse, ProviderError> {
        let call = self.calls.fetch_add(1, Ordering::Relaxed);
        let mut text = String::with_capacity(DELTA.len() * DELTAS);
        for _ in 0..DELTAS {
            on_event(StreamEvent::TextDelta(DELTA.to_string()));
            text.push_str(DELTA);
        }
        Ok(ProviderResponse {
            text,
            stop_reason: StopReason::EndTurn,
            usage: Usage {
                input_tokens: 600 * (call + 1),
                output_tokens: 500,
                ..Usage::default()
            },
            model: "bench-model".into(),
            ..ProviderResponse::default()
        })
    }
}

fn options(root: &Path, home: &Path) -> SessionOptions {
    let model = Arc::new(FillerModel {
        calls: AtomicU64::new(0),
    });
    SessionOptions::new(root, model)
        .with_settings(SessionSettings::with_home(home))
        .with_permission_mode(PermissionMode::BypassPermissions)
        .with_sandbox(false)
        .with_project_context(false)
        .with_auto_compact(false)
        .with_persistence(SessionPersistence::Project)
}

fn thread_cpu_time() -> Duration {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `now` is a valid, writable timespec; the clock id is a constant the kernel knows.
    let status = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
    if status != 0 {
        return Duration::ZERO;
    }
    Duration::new(now.tv_sec as u64, now.tv_nsec as u32)
}

fn millis(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

fn mean(samples: &[Duration]) -> Duration {
    if samples.is_empty() {
        return Duration::ZERO;
    }
    samples.iter().sum::<Duration>() / samples.len() as u32
}

fn bench(turns: usize) -> Result<(), BoxError> {
    // Next to the target directory, not in /tmp (often tmpfs, where fsync is free).
    let base = std::env::var_os("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"));
    std::fs::create_dir_all(&base)?;
    let dir = tempfile::tempdir_in(&base)?;
    let root = dir.path().join("project");
    let home = dir.path().join("home");
    std::fs::create_dir_all(&root)?;
    std::fs::create_dir_all(&home)?;

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let filler =
        "Please continue with the next part of the work, keeping the notes short. ".repeat(3);

    let (wall, cpu, id) = runtime.block_on(async {
        let session = Session::new(options(&root, &home))?;
        let id = session.session_id().to_string();
        let mut wall = Vec::with_capacity(turns);
        let mut cpu = Vec::with_capacity(turns);
        for turn in 1..=turns {
            let prompt = format!("turn {turn}: {filler}");
            let cpu_before = thread_cpu_time();
            let started = Instant::now();
            session.run(prompt).await?;
            wall.push(started.elapsed());
            cpu.push(thread_cpu_time().saturating_sub(cpu_before));
        }
        session.shutdown(SessionEndReason::Other).await;
        Ok::<_, BoxError>((wall, cpu, id))
    })?;

    println!("long session: {turns} prompts, ~2 KB answer per prompt, project persistence on, no compaction");
    println!(
        "{:>6}  {:>22}  {:>22}  {:>24}  {:>10}",
        "turn", "wall ms/prompt (10)", "CPU ms/prompt (10)", "wall ms/prompt (100)", "CPU vs t10"
    );
    let window = |end: usize, size: usize, samples: &[Duration]| {
        mean(&samples[end.saturating_sub(size)..end])
    };
    let base_cpu = window(10.min(turns), 10, &cpu);
    for end in REPORTED.into_iter().filter(|end| *end <= turns) {
        let cpu_at = window(end, 10, &cpu);
        let wide = if end >= 100 {
            format!("{:.3}", millis(window(end, 100, &wall)))
        } else {
            "-".to_string()
        };
        println!(
            "{end:>6}  {:>22.3}  {:>22.3}  {wide:>24}  {:>9.2}×",
            millis(window(end, 10, &wall)),
            millis(cpu_at),
            cpu_at.as_secs_f64() / base_cpu.as_secs_f64().max(f64::EPSILON)
        );
    }
    let slowest = wall
        .iter()
        .enumerate()
        .max_by_key(|(_, time)| **time)
        .map_or((0, Duration::ZERO), |(at, time)| (at + 1, *time));
    println!(
        "slowest prompt: turn {} at {:.3} ms wall (a snapshot rewrite)",
        slowest.0,
        millis(slowest.1)
    );
    println!(
        "total: wall {:.2} s, CPU {:.2} s",
        wall.iter().sum::<Duration>().as_secs_f64(),
        cpu.iter().sum::<Duration>().as_secs_f64()
    );

    let store = FileSessionStore::for_project(&root);
    let snapshot = store.snapshot_path(&id)?;
    let log = store.log_path(&id)?;
    println!(
        "files: snapshot {:.1} MB, log {:.1} MB",
        std::fs::metadata(&snapshot).map_or(0, |m| m.len()) as f64 / 1e6,
        std::fs::metadata(&log).map_or(0, |m| m.len()) as f64 / 1e6
    );

    let mut resume_times = Vec::new();
    for _ in 0..5 {
        let started = Instant::now();
        let resumed = runtime.block_on(async {
            let session = Session::new(options(&root, &home).with_resume(&id, false))?;
            let elapsed = started.elapsed();
            let count = session.conversation().message_count();
            session.shutdown(SessionEndReason::Other).await;
            Ok::<_, BoxError>((elapsed, count))
        })?;
        if resumed.1 != turns * 2 {
            return Err(format!(
                "resume restored {} messages, expected {}",
                resumed.1,
                turns * 2
            )
            .into());
        }
        resume_times.push(resumed.0);
    }
    resume_times.sort();
    println!(
        "resume (Session::new with resume, {} messages): median {:.2} ms, max {:.2} ms",
        turns * 2,
        millis(resume_times[resume_times.len() / 2]),
        millis(resume_times[resume_times.len() - 1])
    );
    let started = Instant::now();
    let listing = store.list()?;
    println!(
        "list: {} session(s) in {:.2} ms",
        listing.sessions.len(),
        millis(started.elapsed())
    );
    if std::env::args().any(|a| a == "--keep") {
        println!("kept: {}", dir.keep().display());
    }
    Ok(())
}
