//! Engine overhead per turn: a 1,000-delta model turn streamed from mock-llm over loopback, read
//! (a) by a bare reqwest loop that only pulls the bytes, and (b) through the full engine (Anthropic
//! provider: SSE decoding, JSON parsing, event callbacks, history commit). Both run in one process,
//! interleaved, against the same server and the same stream, and the difference is the engine's
//! cost.
//!
//! The server runs on its own thread and runtime; the client (bare loop or engine) runs on the
//! main thread in a current-thread runtime, so the main thread's CPU time is exactly the client's
//! work. Wall time depends on what else the machine is doing; client CPU time does not, so both
//! are reported.
//!
//! Run: `cargo bench -p robota --bench turn_overhead` (add `-- --iterations N` to change the count).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use robota::engine::{Engine, EngineConfig, RunOptions, RunStopReason};
use robota::message::{Conversation, Message};
use robota::provider::{AnthropicConfig, AnthropicProvider};
use robota::tools::ToolRegistry;

const DELTAS: usize = 1_000;
const WARMUP: usize = 30;

fn main() {
    let iterations = parse_iterations().unwrap_or(300);
    if let Err(error) = bench(iterations) {
        eprintln!("benchmark failed: {error}");
        std::process::exit(1);
    }
}

fn bench(iterations: usize) -> Result<(), Box<dyn std::error::Error>> {
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
                    "text": {"repeat": "tok ", "count": DELTAS},
                    "usage": {"input_tokens": 12, "output_tokens": DELTAS}
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
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let result = runtime.block_on(run(iterations, base_url));
    let _ = stop_tx.send(());
    match server_thread.join() {
        Ok(Ok(())) => {}
        Ok(Err(error)) => return Err(error.into()),
        Err(_) => return Err("the server thread panicked".into()),
    }
    result
}

fn parse_iterations() -> Option<usize> {
    let args: Vec<String> = std::env::args().collect();
    let position = args.iter().position(|arg| arg == "--iterations")?;
    args.get(position + 1)?.parse().ok()
}

async fn run(iterations: usize, base_url: String) -> Result<(), Box<dyn std::error::Error>> {
    // Built like the provider's own client, so the comparison is about the engine, not settings.
    let client = reqwest::Client::builder()
        .no_proxy()
        .tcp_nodelay(true)
        .build()?;
    let body = serde_json::json!({
        "model": "claude-sonnet-4-5",
        "max_tokens": 1024,
        "stream": true,
        "messages": [{"role": "user", "content": "go"}]
    });

    let mut config = AnthropicConfig::new("claude-sonnet-4-5");
    config.api_key = Some("bench-key".into());
    config.base_url = Some(base_url.clone());
    let provider = Arc::new(AnthropicProvider::new(config)?);
    let engine = Engine::new(provider, ToolRegistry::new(), EngineConfig::default());

    let mut bare = Vec::with_capacity(iterations);
    let mut through_engine = Vec::with_capacity(iterations);
    let mut bare_cpu = Vec::with_capacity(iterations);
    let mut engine_cpu = Vec::with_capacity(iterations);
    for index in 0..WARMUP + iterations {
        // Interleave the two, alternating which goes first, so drift in machine load and any
        // work left over from the previous turn hit both equally.
        let (bare_sample, engine_sample) = if index % 2 == 0 {
            let bare_sample = measure(bare_turn(&client, &base_url, &body)).await?;
            (bare_sample, measure(engine_turn(&engine)).await?)
        } else {
            let engine_sample = measure(engine_turn(&engine)).await?;
            (
                measure(bare_turn(&client, &base_url, &body)).await?,
                engine_sample,
            )
        };
        if index >= WARMUP {
            bare.push(bare_sample.0);
            bare_cpu.push(bare_sample.1);
            through_engine.push(engine_sample.0);
            engine_cpu.push(engine_sample.1);
        }
    }

    bare.sort();
    through_engine.sort();
    bare_cpu.sort();
    engine_cpu.sort();
    println!("turn of {DELTAS} text deltas over loopback, {iterations} iterations each (after {WARMUP} warm-up)");
    println!("{:<40} {:>10} {:>10} {:>10}", "", "p50", "p90", "p99");
    for (label, samples) in [
        ("wall: bare reqwest loop", &bare),
        ("wall: engine (anthropic provider)", &through_engine),
        ("client CPU: bare reqwest loop", &bare_cpu),
        ("client CPU: engine (anthropic provider)", &engine_cpu),
    ] {
        println!(
            "{:<40} {:>10} {:>10} {:>10}",
            label,
            format_duration(percentile(samples, 50.0)),
            format_duration(percentile(samples, 90.0)),
            format_duration(percentile(samples, 99.0)),
        );
    }
    for (what, bare, engine) in [
        ("wall", &bare, &through_engine),
        ("client CPU", &bare_cpu, &engine_cpu),
    ] {
        let bare_median = percentile(bare, 50.0);
        let engine_median = percentile(engine, 50.0);
        let overhead = engine_median.saturating_sub(bare_median);
        println!(
            "{what}: median overhead per turn {} ({:.2} us per delta); ratio engine/bare = {:.3}",
            format_duration(overhead),
            overhead.as_secs_f64() * 1e6 / DELTAS as f64,
            engine_median.as_secs_f64() / bare_median.as_secs_f64().max(f64::MIN_POSITIVE),
        );
    }
    Ok(())
}

async fn bare_turn(
    client: &reqwest::Client,
    base_url: &str,
    body: &serde_json::Value,
) -> Result<Duration, Box<dyn std::error::Error>> {
    let started = Instant::now();
    let response = client
        .post(format!("{base_url}/v1/messages"))
        .header("x-api-key", "bench-key")
        .header("anthropic-version", "2023-06-01")
        .json(body)
        .send()
        .await?
        .error_for_status()?;
    let mut stream = response.bytes_stream();
    let mut bytes = 0usize;
    // Stop at the terminal event, as the provider does (it leaves the rest of the body to a
    // background drain), so both sides wait for the same bytes.
    let terminal = memchr::memmem::Finder::new(b"event: message_stop");
    while let Some(chunk) = stream.next().await {
        let chunk = chunk?;
        bytes += chunk.len();
        if terminal.find(&chunk).is_some() {
            break;
        }
    }
    if bytes == 0 {
        return Err("the bare loop read an empty stream".into());
    }
    Ok(started.elapsed())
}

async fn engine_turn(engine: &Engine) -> Result<Duration, Box<dyn std::error::Error>> {
    let deltas = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&deltas);
    let options = RunOptions::new().with_on_event(move |event| {
        if matches!(event, robota::engine::EngineEvent::TextDelta { .. }) {
            counter.fetch_add(1, Ordering::Relaxed);
        }
    });
    let mut conversation = Conversation::new();
    let started = Instant::now();
    let outcome = engine
        .run(&mut conversation, Message::user("go"), options)
        .await;
    let elapsed = started.elapsed();
    if outcome.stop_reason != RunStopReason::Completed {
        return Err(format!(
            "engine turn ended with {:?}: {:?}",
            outcome.stop_reason, outcome.error
        )
        .into());
    }
    let seen = deltas.load(Ordering::Relaxed);
    if seen != DELTAS {
        return Err(format!("expected {DELTAS} deltas, the host saw {seen}").into());
    }
    Ok(elapsed)
}

/// Runs one turn, returning its wall time and the CPU time the calling thread spent on it.
async fn measure(
    turn: impl std::future::Future<Output = Result<Duration, Box<dyn std::error::Error>>>,
) -> Result<(Duration, Duration), Box<dyn std::error::Error>> {
    let cpu_before = thread_cpu_time();
    let wall = turn.await?;
    Ok((wall, thread_cpu_time().saturating_sub(cpu_before)))
}

/// CPU time consumed so far by the calling thread.
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

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

fn format_duration(duration: Duration) -> String {
    format!("{:.3} ms", duration.as_secs_f64() * 1e3)
}
