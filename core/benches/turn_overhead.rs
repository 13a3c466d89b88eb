//! Engine overhead per turn: a 1,000-delta model turn streamed from mock-llm over loopback, read
//! (a) by a bare reqwest loop that only pulls the bytes, and (b) through the full engine (Anthropic
//! provider: SSE decoding, JSON parsing, event callbacks, history commit). Both run in one process,
//! interleaved, against the same server and the same stream, and the difference is the engine's
//! cost.
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
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("cannot start the tokio runtime: {error}");
            std::process::exit(1);
        }
    };
    if let Err(error) = runtime.block_on(run(iterations)) {
        eprintln!("benchmark failed: {error}");
        std::process::exit(1);
    }
}

fn parse_iterations() -> Option<usize> {
    let args: Vec<String> = std::env::args().collect();
    let position = args.iter().position(|arg| arg == "--iterations")?;
    args.get(position + 1)?.parse().ok()
}

async fn run(iterations: usize) -> Result<(), Box<dyn std::error::Error>> {
    let server = mock_llm::MockLlm::start_json(serde_json::json!({
        "repeat": true,
        "record": false,
        "turns": [{
            "text": {"repeat": "tok ", "count": DELTAS},
            "usage": {"input_tokens": 12, "output_tokens": DELTAS}
        }]
    }))
    .await?;
    let base_url = server.base_url();

    let client = reqwest::Client::new();
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
    for index in 0..WARMUP + iterations {
        // Interleave the two so drift in machine load hits both equally.
        let bare_time = bare_turn(&client, &base_url, &body).await?;
        let engine_time = engine_turn(&engine).await?;
        if index >= WARMUP {
            bare.push(bare_time);
            through_engine.push(engine_time);
        }
    }
    server.shutdown().await;

    bare.sort();
    through_engine.sort();
    let bare_median = percentile(&bare, 50.0);
    let engine_median = percentile(&through_engine, 50.0);
    println!("turn of {DELTAS} text deltas over loopback, {iterations} iterations each (after {WARMUP} warm-up)");
    println!(
        "{:<28} {:>10} {:>10} {:>10}",
        "", "p50", "p90", "p99"
    );
    for (label, samples) in [("bare reqwest loop", &bare), ("engine (anthropic provider)", &through_engine)] {
        println!(
            "{:<28} {:>10} {:>10} {:>10}",
            label,
            format_duration(percentile(samples, 50.0)),
            format_duration(percentile(samples, 90.0)),
            format_duration(percentile(samples, 99.0)),
        );
    }
    let overhead = engine_median.saturating_sub(bare_median);
    println!(
        "median overhead per turn: {} ({:.1}% of the bare read); ratio engine/bare = {:.3}",
        format_duration(overhead),
        100.0 * overhead.as_secs_f64() / bare_median.as_secs_f64(),
        engine_median.as_secs_f64() / bare_median.as_secs_f64(),
    );
    println!(
        "median overhead per delta: {:.2} us",
        overhead.as_secs_f64() * 1e6 / DELTAS as f64
    );
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
    while let Some(chunk) = stream.next().await {
        bytes += chunk?.len();
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
        return Err(format!("engine turn ended with {:?}: {:?}", outcome.stop_reason, outcome.error).into());
    }
    let seen = deltas.load(Ordering::Relaxed);
    if seen != DELTAS {
        return Err(format!("expected {DELTAS} deltas, the host saw {seen}").into());
    }
    Ok(elapsed)
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
