//! Subagent costs in one process against `tests/mock-llm` over loopback: the start time and the
//! round trip of one foreground subagent (one model call), the cost of handing a subagent to the
//! background task manager, the memory each running subagent holds, and 50 background subagents
//! running in parallel from one session.
//!
//! Two mock servers run on a thread of their own: a fast one (one short answer per request) for
//! the round trips and a slow one (10 deltas 100 ms apart, ~1 s per answer) so that 50 subagents
//! are alive at the same time while memory is measured.
//!
//! Run: `cargo bench -p robota --bench subagents` (add `-- --runs N` to change the count of
//! foreground round trips, default 50).

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use robota::framework::agents::SubagentRequest;
use robota::framework::interactive::{InteractiveSession, InteractiveSessionOptions};
use robota::provider::{AnthropicConfig, AnthropicProvider, Provider};
use robota::session::{SessionOptions, SessionSettings};
use robota::tools::builtins::TaskStatus;
use serde_json::json;

type BoxError = Box<dyn std::error::Error>;

const PARALLEL: usize = 50;

fn main() {
    let runs = parse_runs().unwrap_or(50);
    if let Err(error) = bench(runs) {
        eprintln!("benchmark failed: {error}");
        std::process::exit(1);
    }
}

fn parse_runs() -> Option<usize> {
    let args: Vec<String> = std::env::args().collect();
    let at = args.iter().position(|a| a == "--runs")?;
    args.get(at + 1)?.parse().ok()
}

/// Starts the fast and the slow mock server on a thread of their own; returns their base URLs
/// and the sender that stops them.
fn servers() -> Result<(String, String, tokio::sync::oneshot::Sender<()>), BoxError> {
    let (address_tx, address_rx) = std::sync::mpsc::channel();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    std::thread::spawn(move || -> Result<(), String> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        runtime.block_on(async move {
            let fast = mock_llm::MockLlm::start_json(json!({
                "repeat": true, "record": false,
                "turns": [{"text": "Found it in src/lib.rs.", "usage": {"input_tokens": 40, "output_tokens": 8}}]
            }))
            .await
            .map_err(|e| e.to_string())?;
            let slow = mock_llm::MockLlm::start_json(json!({
                "repeat": true, "record": false,
                "turns": [{"text": {"repeat": "tok ", "count": 10}, "chunk_delay_ms": 100}]
            }))
            .await
            .map_err(|e| e.to_string())?;
            let _ = address_tx.send((fast.base_url(), slow.base_url()));
            let _ = stop_rx.await;
            fast.shutdown().await;
            slow.shutdown().await;
            Ok(())
        })
    });
    let (fast, slow) = address_rx.recv()?;
    Ok((fast, slow, stop_tx))
}

fn provider(base_url: &str) -> Result<Arc<dyn Provider>, BoxError> {
    let mut config = AnthropicConfig::new("claude-sonnet-4-5");
    config.api_key = Some("bench-key".into());
    config.base_url = Some(base_url.to_string());
    Ok(Arc::new(AnthropicProvider::new(config)?))
}

fn session(cwd: &Path, provider: Arc<dyn Provider>) -> Result<Arc<InteractiveSession>, BoxError> {
    let mut options = SessionOptions::new(cwd, provider)
        .with_settings(SessionSettings::None)
        .with_project_context(false);
    options.builtin_tools.background.max_concurrent = PARALLEL + 4;
    Ok(InteractiveSession::new(InteractiveSessionOptions::new(
        options,
    ))?)
}

fn request(n: usize) -> SubagentRequest {
    SubagentRequest {
        agent_type: Some("Explore".into()),
        prompt: format!("find where request {n} is handled"),
        ..Default::default()
    }
}

fn bench(runs: usize) -> Result<(), BoxError> {
    let (fast_url, slow_url, stop) = servers()?;
    let dir = tempfile::tempdir()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(async {
        foreground(dir.path(), &fast_url, runs).await?;
        parallel(dir.path(), &slow_url).await
    })?;
    let _ = stop.send(());
    Ok(())
}

/// Foreground subagents one after another: each one's whole round trip (definition, child
/// engine, SubagentStart/Stop, one model call over loopback, report).
async fn foreground(cwd: &Path, base_url: &str, runs: usize) -> Result<(), BoxError> {
    let session = session(cwd, provider(base_url)?)?;
    // Warm-up: the first run pays for one-time set-up (connection pool, statics).
    session.run_subagent(request(0)).await?;
    let mut round_trips = Vec::with_capacity(runs);
    for n in 0..runs {
        let started = Instant::now();
        let report = session.run_subagent(request(n)).await?;
        round_trips.push(started.elapsed());
        if report.error.is_some() || report.interrupted {
            return Err(format!("subagent {n} failed: {}", report.message()).into());
        }
    }
    round_trips.sort();
    println!("== foreground subagent, one model call each ({runs} runs) ==");
    println!(
        "round trip p50 {} p99 {} max {}",
        format_duration(percentile(&round_trips, 50.0)),
        format_duration(percentile(&round_trips, 99.0)),
        format_duration(round_trips[round_trips.len() - 1]),
    );
    Ok(())
}

/// 50 background subagents from one session at once: the cost of each start, the memory the
/// 50 hold while they all run, and the wall time until all have finished.
async fn parallel(cwd: &Path, base_url: &str) -> Result<(), BoxError> {
    let session = session(cwd, provider(base_url)?)?;
    // Warm-up subagent, so one-time costs are not counted as per-subagent memory.
    let warm = session.start_background_subagent(request(0))?;
    session
        .wait_background_task(&warm.id, Duration::from_secs(30))
        .await?;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let before = rss_kb()?;
    let started = Instant::now();
    let mut starts = Vec::with_capacity(PARALLEL);
    let mut ids = Vec::with_capacity(PARALLEL);
    for n in 0..PARALLEL {
        let at = Instant::now();
        let task = session.start_background_subagent(request(n))?;
        starts.push(at.elapsed());
        ids.push(task.id);
    }
    let all_started = started.elapsed();
    // Mid-answer (the slow answers take ~1 s): all 50 are alive.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let running = session
        .list_background_tasks()
        .iter()
        .filter(|t| t.status == TaskStatus::Running)
        .count();
    let during = rss_kb()?;
    let mut completed = 0;
    for id in &ids {
        let task = session
            .wait_background_task(id, Duration::from_secs(60))
            .await?;
        if task.status == TaskStatus::Completed {
            completed += 1;
        }
    }
    let wall = started.elapsed();
    starts.sort();
    println!();
    println!("== {PARALLEL} background subagents in parallel from one session ==");
    println!(
        "start (hand-off to the task manager) p50 {} p99 {}; all {PARALLEL} started in {}",
        format_duration(percentile(&starts, 50.0)),
        format_duration(percentile(&starts, 99.0)),
        format_duration(all_started),
    );
    println!(
        "{running} running at once; RSS before {before} KB, while running {during} KB: {:.1} KB \
         per running subagent",
        during.saturating_sub(before) as f64 / PARALLEL as f64
    );
    println!(
        "{completed}/{PARALLEL} completed; wall time {} (one answer alone takes ~1 s)",
        format_duration(wall)
    );
    Ok(())
}

/// Resident set size of this process in KB (Linux).
fn rss_kb() -> Result<u64, BoxError> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    let line = status
        .lines()
        .find(|line| line.starts_with("VmRSS:"))
        .ok_or("no VmRSS in /proc/self/status")?;
    Ok(line
        .split_whitespace()
        .nth(1)
        .ok_or("malformed VmRSS line")?
        .parse()?)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

fn format_duration(d: Duration) -> String {
    if d < Duration::from_millis(1) {
        format!("{:.1} µs", d.as_secs_f64() * 1e6)
    } else {
        format!("{:.2} ms", d.as_secs_f64() * 1e3)
    }
}
