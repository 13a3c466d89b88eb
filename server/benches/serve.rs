//! `robota serve` delivery figures: events per second and per-event latency (p50/p99) to one
//! Server-Sent Events client and one WebSocket client, and memory per hosted session.
//!
//! The server runs in this process on loopback with a session whose model is mock-llm (Anthropic
//! Messages SSE); the clients are a plain reqwest SSE reader and a tokio-tungstenite socket.
//! Latency is from the moment an in-process subscriber of the session sees an event to the moment
//! the network client has read it (same clock, same process).
//!
//! Run: `cargo bench -p robota-server --bench serve`

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use mock_llm::MockLlm;
use robota::framework::interactive::{InteractiveSession, InteractiveSessionOptions};
use robota::provider::scripted::{ScriptedProvider, ScriptedTurn};
use robota::provider::{AnthropicConfig, AnthropicProvider};
use robota::session::SessionOptions;
use robota_server::{ProjectRoots, Server, ServerOptions};
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::Message;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

const TOKEN: &str = "bench-token-0123456789abcdef";
const THROUGHPUT_DELTAS: usize = 20_000;
const LATENCY_DELTAS: usize = 1_000;
const SESSIONS: usize = 1_000;

#[derive(Clone, Copy, Debug)]
enum Client {
    Sse,
    WebSocket,
}

/// What a client read: `(seq, type, bytes, when)` per event, until `complete`.
type Reads = Vec<(u64, String, usize, Instant)>;

async fn read_sse(
    base: &str,
    id: &str,
) -> Result<tokio::task::JoinHandle<Result<Reads, String>>, BoxError> {
    let response = reqwest::Client::new()
        .get(format!("{base}/v1/sessions/{id}/events"))
        .bearer_auth(TOKEN)
        .send()
        .await?;
    Ok(tokio::spawn(async move {
        let mut stream = response.bytes_stream();
        let mut buffer = String::new();
        let mut reads = Vec::new();
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| e.to_string())?;
            buffer.push_str(&String::from_utf8_lossy(&chunk));
            let now = Instant::now();
            while let Some(end) = buffer.find("\n\n") {
                let (mut seq, mut kind) = (0u64, String::new());
                for line in buffer[..end].lines() {
                    if let Some(v) = line.strip_prefix("id: ") {
                        seq = v.parse().unwrap_or(0);
                    } else if let Some(v) = line.strip_prefix("event: ") {
                        kind = v.to_string();
                    }
                }
                buffer.drain(..end + 2);
                if kind.is_empty() {
                    continue;
                }
                let done = kind == "complete";
                reads.push((seq, kind, end + 2, now));
                if done {
                    return Ok(reads);
                }
            }
        }
        Err("the stream ended before `complete`".into())
    }))
}

async fn read_ws(
    base: &str,
    id: &str,
) -> Result<tokio::task::JoinHandle<Result<Reads, String>>, BoxError> {
    let url = format!(
        "{}/v1/sessions/{id}/ws?role=observer",
        base.replacen("http", "ws", 1)
    );
    let mut request = url.into_client_request()?;
    request.headers_mut().insert(
        "Sec-WebSocket-Protocol",
        format!("robota.v1, robota.bearer.{TOKEN}").parse()?,
    );
    let (mut socket, _) = tokio_tungstenite::connect_async(request).await?;
    // The hello.
    socket.next().await;
    Ok(tokio::spawn(async move {
        let mut reads = Vec::new();
        while let Some(message) = socket.next().await {
            let Ok(Message::Text(text)) = message else {
                continue;
            };
            let now = Instant::now();
            let value: Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
            if value["kind"] != "event" {
                continue;
            }
            let kind = value["event"]["type"].as_str().unwrap_or("").to_string();
            let seq = value["event"]["seq"].as_u64().unwrap_or(0);
            let done = kind == "complete";
            reads.push((seq, kind, text.len(), now));
            if done {
                return Ok(reads);
            }
        }
        Err("the socket closed before `complete`".into())
    }))
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

fn rss_kb() -> Result<u64, BoxError> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    let line = status
        .lines()
        .find(|line| line.starts_with("VmRSS:"))
        .ok_or("no VmRSS in /proc/self/status")?;
    Ok(line
        .split_whitespace()
        .nth(1)
        .ok_or("malformed VmRSS")?
        .parse()?)
}

async fn run_prompt(
    session: &Arc<InteractiveSession>,
    base: &str,
    client: Client,
) -> Result<Reads, BoxError> {
    let id = session.get_session_id();
    let reader = match client {
        Client::Sse => read_sse(base, &id).await?,
        Client::WebSocket => read_ws(base, &id).await?,
    };
    // Let the client's subscription register before the prompt starts.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let ticket = session.submit_tracked_now("go", None)?;
    ticket.result().await;
    Ok(reader.await??)
}

fn script(deltas: usize, chunk_delay_ms: u64) -> Result<mock_llm::Script, BoxError> {
    Ok(mock_llm::Script::from_value(json!({
        "repeat": true, "record": false,
        "turns": [{"text": {"repeat": "tok ", "count": deltas}, "chunk_delay_ms": chunk_delay_ms}]
    }))?)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), BoxError> {
    let root = tempfile::tempdir()?;
    let roots = ProjectRoots::new(&[root.path().to_path_buf()])?;
    let mut options = ServerOptions::new(TOKEN.into(), roots);
    // Throughput is measured without coalescing: every delta reaches the client as an event.
    options.client_buffer = 1 << 20;
    options.event_buffer = 64;
    options.max_sessions = SESSIONS + 10;
    let server = Server::new(options, None);
    let addr = server.serve().await?;
    let base = format!("http://{addr}");

    let mock = MockLlm::start(script(200, 0)?).await?;
    let mut config = AnthropicConfig::new("claude-sonnet-4-5");
    config.api_key = Some("bench-key".into());
    config.base_url = Some(mock.base_url());
    let provider = Arc::new(AnthropicProvider::new(config)?);
    let mut interactive =
        InteractiveSessionOptions::new(SessionOptions::new(root.path(), provider));
    interactive.event_buffer = 1 << 20;
    let session = InteractiveSession::new(interactive)?;
    server.host(Arc::clone(&session), None)?;
    let emitted: Arc<Mutex<HashMap<u64, Instant>>> = Arc::new(Mutex::new(HashMap::new()));
    let record = Arc::clone(&emitted);
    let _subscription = session.subscribe(move |event| {
        if let Ok(mut map) = record.lock() {
            map.insert(event.seq, Instant::now());
        }
    });

    println!("robota serve delivery (one session, mock-llm over loopback)");
    println!();
    println!(
        "| client | deltas read | events/s | MB/s on the wire | p50 latency | p99 latency | max |"
    );
    println!("|---|---|---|---|---|---|---|");
    for client in [Client::Sse, Client::WebSocket] {
        mock.set_script(script(200, 0)?)?;
        run_prompt(&session, &base, client).await?;

        mock.set_script(script(THROUGHPUT_DELTAS, 0)?)?;
        let reads = run_prompt(&session, &base, client).await?;
        let deltas: Vec<_> = reads.iter().filter(|r| r.1 == "text_delta").collect();
        let (first, last) = match (deltas.first(), deltas.last()) {
            (Some(f), Some(l)) => (f.3, l.3),
            _ => return Err("no text_delta read".into()),
        };
        let seconds = last.duration_since(first).as_secs_f64().max(1e-9);
        let rate = deltas.len() as f64 / seconds;
        let bytes: usize = deltas.iter().map(|r| r.2).sum();

        mock.set_script(script(LATENCY_DELTAS, 1)?)?;
        let reads = run_prompt(&session, &base, client).await?;
        let mut latencies: Vec<Duration> = {
            let map = emitted.lock().map_err(|_| "poisoned")?;
            reads
                .iter()
                .filter(|r| r.1 == "text_delta")
                .filter_map(|(seq, _, _, at)| {
                    map.get(seq).map(|sent| at.saturating_duration_since(*sent))
                })
                .collect()
        };
        latencies.sort();
        println!(
            "| {:?} | {} | {:.0} | {:.1} | {:.3} ms | {:.3} ms | {:.3} ms |",
            client,
            deltas.len(),
            rate,
            bytes as f64 / seconds / 1e6,
            percentile(&latencies, 0.5).as_secs_f64() * 1e3,
            percentile(&latencies, 0.99).as_secs_f64() * 1e3,
            latencies.last().copied().unwrap_or_default().as_secs_f64() * 1e3,
        );
    }

    // Memory per hosted session: idle, then after one 50-delta prompt each (the event log keeps
    // the last events for resume).
    let before = rss_kb()?;
    let mut sessions = Vec::with_capacity(SESSIONS);
    for _ in 0..SESSIONS {
        let turn = ScriptedTurn::chunks(vec!["tok "; 50]);
        let provider = Arc::new(ScriptedProvider::new(vec![turn]));
        let session = InteractiveSession::new(InteractiveSessionOptions::new(
            SessionOptions::new(root.path(), provider),
        ))?;
        server.host(Arc::clone(&session), None)?;
        sessions.push(session);
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let idle = rss_kb()?;
    let tickets: Vec<_> = sessions
        .iter()
        .map(|s| s.submit_tracked_now("go", None))
        .collect::<Result<_, _>>()?;
    for ticket in tickets {
        ticket.result().await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let used = rss_kb()?;
    println!();
    println!(
        "| hosted sessions | RSS before | idle: KB per session | after one 50-delta prompt each: KB per session |"
    );
    println!("|---|---|---|---|");
    println!(
        "| {SESSIONS} | {:.1} MB | {:.1} | {:.1} |",
        before as f64 / 1024.0,
        idle.saturating_sub(before) as f64 / SESSIONS as f64,
        used.saturating_sub(before) as f64 / SESSIONS as f64,
    );
    server.shutdown().await;
    Ok(())
}
