//! Event delivery and session footprint of `InteractiveSession` (DESIGN §9: event delivery to a
//! host callback p99 < 1 ms; idle session < 200 KB; 1,000 concurrent sessions in one process
//! against mock-llm).
//!
//! 1. **Latency/throughput**: a session whose model turn streams 20,000 text deltas from an
//!    in-process provider that stamps each delta (`"<index> "`) with the instant it was handed to
//!    the engine. Subscribers record the instant each `text_delta` arrives; a coalesced delta
//!    carries several indices, and every index in it counts as delivered at that instant. Run
//!    for (a) a callback subscriber and (b) a pull subscriber (`next_event`), each with a provider
//!    that emits all deltas in one burst, one that yields to the scheduler after every 64 deltas
//!    (like a network read carrying many SSE events), one that yields after every delta, and one
//!    paced at one delta per 10 µs (100,000 deltas/s). Each configuration runs three times.
//! 2. **Idle memory**: 1,000 sessions (built-in tools and commands, a callback subscriber, no
//!    settings, no project context, no persistence), each after one short scripted turn; process
//!    RSS before and after.
//! 3. **Concurrency**: 1,000 sessions each running one turn at the same time against mock-llm
//!    (Anthropic Messages over loopback).
//!
//! Run: `cargo bench -p robota --bench events`.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use robota::framework::interactive::{
    InteractiveEvent, InteractiveEventKind, InteractiveSession, InteractiveSessionOptions,
};
use robota::message::ProviderError;
use robota::provider::scripted::{ScriptedProvider, ScriptedTurn};
use robota::provider::{
    AnthropicConfig, AnthropicProvider, Provider, ProviderRequest, ProviderResponse, StreamEvent,
    StreamSink,
};
use robota::session::{SessionOptions, SessionSettings};
use tokio_util::sync::CancellationToken;

const DELTAS: usize = 20_000;
const SESSIONS: usize = 1_000;

/// Runs of each delivery configuration (each printed, so run-to-run spread is visible).
const RUNS: usize = 3;

type Stamps = Arc<Mutex<Vec<Instant>>>;

/// How the provider spaces its deltas.
#[derive(Clone, Copy)]
enum Pace {
    /// All at once, never yielding: far faster than any network stream.
    Burst,
    /// Yielding to the scheduler after every `n` deltas (a network read carrying `n` events).
    YieldEvery(usize),
    /// One delta per interval (busy-waiting with yields in between).
    Interval(Duration),
}

/// Emits `deltas` text deltas `"<index> "`, recording when each was handed to the engine.
struct TimedProvider {
    deltas: usize,
    pace: Pace,
    stamps: Stamps,
}

#[async_trait]
impl Provider for TimedProvider {
    fn name(&self) -> &str {
        "timed"
    }

    fn model(&self) -> &str {
        "timed"
    }

    async fn stream(
        &self,
        _request: &ProviderRequest,
        on_event: &StreamSink<'_>,
        _cancel: &CancellationToken,
    ) -> Result<ProviderResponse, ProviderError> {
        let mut text = String::new();
        let started = Instant::now();
        for index in 0..self.deltas {
            let delta = format!("{index} ");
            text.push_str(&delta);
            self.stamps
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(Instant::now());
            on_event(StreamEvent::TextDelta(delta));
            match self.pace {
                Pace::Burst => {}
                Pace::YieldEvery(n) => {
                    if (index + 1) % n == 0 {
                        tokio::task::yield_now().await;
                    }
                }
                Pace::Interval(interval) => {
                    // Busy-wait, yielding, until the next delta is due: finer than a timer.
                    let due = started + interval * u32::try_from(index + 1).unwrap_or(u32::MAX);
                    while Instant::now() < due {
                        tokio::task::yield_now().await;
                    }
                }
            }
        }
        Ok(ProviderResponse {
            text,
            model: "timed".into(),
            ..ProviderResponse::default()
        })
    }
}

fn main() {
    if let Err(error) = bench() {
        eprintln!("benchmark failed: {error}");
        std::process::exit(1);
    }
}

fn bench() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(async {
        println!("== event delivery: one turn of {DELTAS} text deltas ==");
        println!(
            "{:<40} {:>9} {:>9} {:>9} {:>9} {:>9} {:>13} {:>14}",
            "subscriber / provider", "p50", "p90", "p99", "max", "events", "deltas/s", "events/s"
        );
        // One warm-up run so first-use costs (allocator, thread start) are not measured.
        latency(dir.path(), false, Pace::Burst, true).await?;
        for pace in [
            Pace::Burst,
            Pace::YieldEvery(64),
            Pace::YieldEvery(1),
            Pace::Interval(Duration::from_micros(10)),
        ] {
            for pull in [false, true] {
                for _ in 0..RUNS {
                    latency(dir.path(), pull, pace, false).await?;
                }
            }
        }
        Ok::<_, Box<dyn std::error::Error>>(())
    })?;
    runtime.block_on(idle_memory(dir.path()))?;
    drop(runtime);
    concurrent(dir.path())?;
    Ok(())
}

fn session_options(cwd: &Path, provider: Arc<dyn Provider>) -> InteractiveSessionOptions {
    InteractiveSessionOptions::new(
        SessionOptions::new(cwd, provider)
            .with_settings(SessionSettings::None)
            .with_project_context(false),
    )
}

async fn latency(
    cwd: &Path,
    pull: bool,
    pace: Pace,
    warm_up: bool,
) -> Result<(), Box<dyn std::error::Error>> {
    let stamps: Stamps = Arc::new(Mutex::new(Vec::with_capacity(DELTAS)));
    let provider = Arc::new(TimedProvider {
        deltas: DELTAS,
        pace,
        stamps: Arc::clone(&stamps),
    });
    let session = InteractiveSession::new(session_options(cwd, provider))?;
    let received: Arc<Mutex<Vec<(Instant, String)>>> =
        Arc::new(Mutex::new(Vec::with_capacity(DELTAS)));
    let (done_tx, done_rx) = tokio::sync::oneshot::channel::<()>();

    let mut _handle = None;
    let mut puller = None;
    if pull {
        let subscription = session.subscribe_pull();
        let received = Arc::clone(&received);
        puller = Some(tokio::spawn(async move {
            while let Some(event) = subscription.next_event(Duration::from_secs(30)).await {
                let now = Instant::now();
                match event.kind {
                    InteractiveEventKind::TextDelta { text } => received
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .push((now, text)),
                    InteractiveEventKind::Complete { .. }
                    | InteractiveEventKind::Error { .. }
                    | InteractiveEventKind::Interrupted { .. } => break,
                    _ => {}
                }
            }
            let _ = done_tx.send(());
        }));
    } else {
        let received = Arc::clone(&received);
        let done = Mutex::new(Some(done_tx));
        _handle = Some(session.subscribe(move |event: InteractiveEvent| {
            let now = Instant::now();
            match event.kind {
                InteractiveEventKind::TextDelta { text } => received
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push((now, text)),
                InteractiveEventKind::Complete { .. }
                | InteractiveEventKind::Error { .. }
                | InteractiveEventKind::Interrupted { .. } => {
                    if let Some(tx) = done.lock().unwrap_or_else(PoisonError::into_inner).take() {
                        let _ = tx.send(());
                    }
                }
                _ => {}
            }
        }));
    }

    session.submit("go", None, None).await?;
    done_rx.await?;
    if let Some(puller) = puller {
        puller.await?;
    }
    session.wait_idle().await;

    let stamps = stamps
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    let received = received
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    let mut latencies = Vec::with_capacity(DELTAS);
    let mut seen = vec![false; stamps.len()];
    for (at, text) in &received {
        for index in text.split_whitespace() {
            let index: usize = index.parse()?;
            seen[index] = true;
            latencies.push(at.saturating_duration_since(stamps[index]));
        }
    }
    let delivered = seen.iter().filter(|s| **s).count();
    if delivered != stamps.len() {
        return Err(format!("{delivered} of {} deltas delivered", stamps.len()).into());
    }
    latencies.sort();
    let span = received
        .last()
        .map(|(at, _)| at.saturating_duration_since(stamps[0]))
        .unwrap_or_default()
        .as_secs_f64();
    if warm_up {
        return Ok(());
    }
    let label = format!(
        "{} / {}",
        if pull { "pull next_event" } else { "callback" },
        match pace {
            Pace::Burst => "burst".to_string(),
            Pace::YieldEvery(1) => "yield per delta".to_string(),
            Pace::YieldEvery(n) => format!("yield per {n} deltas"),
            Pace::Interval(interval) => format!("one per {} µs", interval.as_micros()),
        }
    );
    println!(
        "{:<40} {:>9} {:>9} {:>9} {:>9} {:>9} {:>13.0} {:>14.0}",
        label,
        format_duration(percentile(&latencies, 50.0)),
        format_duration(percentile(&latencies, 90.0)),
        format_duration(percentile(&latencies, 99.0)),
        format_duration(latencies.last().copied().unwrap_or_default()),
        received.len(),
        DELTAS as f64 / span,
        received.len() as f64 / span,
    );
    Ok(())
}

async fn idle_memory(cwd: &Path) -> Result<(), Box<dyn std::error::Error>> {
    async fn one(cwd: &Path) -> Result<Arc<InteractiveSession>, Box<dyn std::error::Error>> {
        let provider = Arc::new(ScriptedProvider::new(vec![ScriptedTurn::text(
            "Hello! How can I help you today?",
        )]));
        let session = InteractiveSession::new(session_options(cwd, provider))?;
        session.submit("hi", None, None).await?;
        session.wait_idle().await;
        Ok(session)
    }

    // Warm-up: one session (and its drop) so one-time statics are not counted.
    drop(one(cwd).await?);
    tokio::time::sleep(Duration::from_millis(50)).await;
    let before = rss_kb()?;
    let mut sessions = Vec::with_capacity(SESSIONS);
    let started = Instant::now();
    for _ in 0..SESSIONS {
        let session = one(cwd).await?;
        let handle = session.subscribe(|_event| {});
        sessions.push((session, handle));
    }
    let elapsed = started.elapsed();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let after = rss_kb()?;
    let messages: usize = sessions.iter().map(|(s, _)| s.get_messages().len()).sum();
    println!();
    println!("== idle memory: {SESSIONS} sessions, each after one short turn ==");
    println!(
        "created and ran {SESSIONS} sessions in {} ({} messages held)",
        format_duration(elapsed),
        messages
    );
    println!(
        "RSS before {before} KB, after {after} KB: {:.1} KB per session",
        after.saturating_sub(before) as f64 / SESSIONS as f64
    );
    drop(sessions);
    Ok(())
}

fn concurrent(cwd: &Path) -> Result<(), Box<dyn std::error::Error>> {
    let (address_tx, address_rx) = std::sync::mpsc::channel();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let server_thread = std::thread::spawn(move || -> Result<(), String> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        runtime.block_on(async move {
            let server = mock_llm::MockLlm::start_json(serde_json::json!({
                "repeat": true,
                "record": false,
                "turns": [{
                    "text": {"repeat": "tok ", "count": 50},
                    "usage": {"input_tokens": 12, "output_tokens": 50}
                }]
            }))
            .await
            .map_err(|e| e.to_string())?;
            let _ = address_tx.send(server.base_url());
            let _ = stop_rx.await;
            server.shutdown().await;
            Ok(())
        })
    });
    let base_url = address_rx.recv()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let result = runtime.block_on(async {
        let mut config = AnthropicConfig::new("claude-sonnet-4-5");
        config.api_key = Some("bench-key".into());
        config.base_url = Some(base_url);
        let provider: Arc<dyn Provider> = Arc::new(AnthropicProvider::new(config)?);
        let completed = Arc::new(AtomicUsize::new(0));
        let failed = Arc::new(AtomicUsize::new(0));
        let mut sessions = Vec::with_capacity(SESSIONS);
        for _ in 0..SESSIONS {
            let session = InteractiveSession::new(session_options(cwd, Arc::clone(&provider)))?;
            let (completed, failed) = (Arc::clone(&completed), Arc::clone(&failed));
            let handle = session.subscribe(move |event| match event.kind {
                InteractiveEventKind::Complete { .. } => {
                    completed.fetch_add(1, Ordering::SeqCst);
                }
                InteractiveEventKind::Error { .. } | InteractiveEventKind::Interrupted { .. } => {
                    failed.fetch_add(1, Ordering::SeqCst);
                }
                _ => {}
            });
            sessions.push((session, handle));
        }
        let started = Instant::now();
        for (session, _) in &sessions {
            session.submit("go", None, None).await?;
        }
        for (session, _) in &sessions {
            session.wait_idle().await;
        }
        let elapsed = started.elapsed();
        // Let the delivery tasks catch up with the last `complete` events.
        let deadline = Instant::now() + Duration::from_secs(5);
        while completed.load(Ordering::SeqCst) + failed.load(Ordering::SeqCst) < SESSIONS
            && Instant::now() < deadline
        {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let answered = sessions
            .iter()
            .filter(|(s, _)| s.get_messages().len() >= 2)
            .count();
        println!();
        println!("== {SESSIONS} concurrent sessions, one turn each against mock-llm (50 deltas) ==");
        println!(
            "wall time {} for all; complete events {}, error/interrupted {}, sessions holding user+assistant messages {}",
            format_duration(elapsed),
            completed.load(Ordering::SeqCst),
            failed.load(Ordering::SeqCst),
            answered
        );
        Ok::<_, Box<dyn std::error::Error>>(())
    });
    drop(runtime);
    let _ = stop_tx.send(());
    match server_thread.join() {
        Ok(Ok(())) => {}
        Ok(Err(error)) => return Err(error.into()),
        Err(_) => return Err("the server thread panicked".into()),
    }
    result
}

/// Resident set size of this process in KB (Linux).
fn rss_kb() -> Result<u64, Box<dyn std::error::Error>> {
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

fn format_duration(duration: Duration) -> String {
    let micros = duration.as_secs_f64() * 1e6;
    if micros < 1_000.0 {
        format!("{micros:.1} µs")
    } else if micros < 1_000_000.0 {
        format!("{:.2} ms", micros / 1e3)
    } else {
        format!("{:.2} s", micros / 1e6)
    }
}
