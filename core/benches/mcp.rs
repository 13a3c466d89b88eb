//! What MCP adds: a session's start-up time with three stdio servers, and one tool call through
//! robota against the same call made directly with `rmcp` (issue 21's benchmark).
//!
//! The server is `tests/mcp-servers/python_server.py` (the `mcp` Python package), run over
//! stdio; `tests/mcp-servers/setup.sh` installs it. Start-up: `Session::new` without servers and
//! with three of them (which connect in parallel in the background, so construction does not
//! wait for them), the time until those three are connected (what a first prompt waits for,
//! [`Session::wait_for_mcp_servers`]), and one server started and handshaken directly with
//! `rmcp` (the floor: the server's own start). Calls: its `add` tool called through the
//! session's `mcp__py__add` tool (argument checks, the call timeout, abort, result mapping)
//! against `rmcp`'s `call_tool` on a directly connected client, one call at a time.
//!
//! Run: `cargo bench -p robota --bench mcp` (`ROBOTA_BENCH_STARTS` sets the start-ups, default
//! 5; `ROBOTA_BENCH_CALLS` the calls, default 300).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::ServiceExt;
use robota::hooks::event::SessionEndReason;
use robota::mcp::{parse_mcp_servers, McpServerOrigin, McpServerStatus};
use robota::provider::scripted::ScriptedProvider;
use robota::session::{Session, SessionOptions, SessionSettings};
use robota::tools::{Tool, ToolContext};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

type BenchResult<T> = Result<T, Box<dyn std::error::Error>>;

fn env_count(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn servers_dir() -> BenchResult<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/mcp-servers");
    if !dir.join(".venv/bin/python").is_file() {
        return Err(
            "the MCP test servers are not installed: run tests/mcp-servers/setup.sh".into(),
        );
    }
    Ok(dir)
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn p90(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[((times.len() as f64 - 1.0) * 0.9).round() as usize]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn options(cwd: &Path, servers: &[&str], dir: &Path) -> BenchResult<SessionOptions> {
    let mut options = SessionOptions::new(cwd, Arc::new(ScriptedProvider::new(vec![])))
        .with_settings(SessionSettings::None)
        .with_project_context(false);
    let mut config = serde_json::Map::new();
    for name in servers {
        config.insert(
            (*name).to_string(),
            json!({
                "command": dir.join(".venv/bin/python").display().to_string(),
                "args": [dir.join("python_server.py").display().to_string()],
            }),
        );
    }
    let (entries, warnings) =
        parse_mcp_servers(&Value::Object(config), &McpServerOrigin::Host, &|_| None);
    if !warnings.is_empty() {
        return Err(format!("{warnings:?}").into());
    }
    options.mcp_servers = entries;
    Ok(options)
}

/// `Session::new` with `servers` (how long it took, and how long until every server was
/// connected), then shut down (outside the timing).
fn start_session(
    runtime: &tokio::runtime::Runtime,
    cwd: &Path,
    servers: &[&str],
    dir: &Path,
) -> BenchResult<(Duration, Duration)> {
    let options = options(cwd, servers, dir)?;
    let started = Instant::now();
    let session = Session::new(options)?;
    let constructed = started.elapsed();
    if !runtime.block_on(session.wait_for_mcp_servers(None)) {
        return Err("the servers did not finish starting".into());
    }
    let ready = started.elapsed();
    for info in session.mcp_servers() {
        if info.status != McpServerStatus::Connected {
            return Err(format!("server {} did not connect: {:?}", info.name, info.status).into());
        }
    }
    runtime.block_on(session.shutdown(SessionEndReason::Other));
    Ok((constructed, ready))
}

/// A client connected straight to the server with `rmcp`, as the session does.
async fn direct_client(
    dir: &Path,
) -> BenchResult<rmcp::service::RunningService<rmcp::RoleClient, ()>> {
    let mut cmd = tokio::process::Command::new(dir.join(".venv/bin/python"));
    cmd.arg(dir.join("python_server.py")).kill_on_drop(true);
    let process = rmcp::transport::TokioChildProcess::builder(cmd)
        .stderr(std::process::Stdio::null())
        .spawn()?
        .0;
    Ok(().serve(process).await?)
}

fn add_params() -> rmcp::model::CallToolRequestParams {
    let arguments = json!({"a": 2, "b": 3});
    let Value::Object(arguments) = arguments else {
        unreachable!("a JSON object literal")
    };
    rmcp::model::CallToolRequestParams::new("add").with_arguments(arguments)
}

fn main() -> BenchResult<()> {
    let dir = servers_dir()?;
    let starts = env_count("ROBOTA_BENCH_STARTS", 5).max(1);
    let calls = env_count("ROBOTA_BENCH_CALLS", 300).max(1);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let cwd = tempfile::tempdir()?;

    // Start-up. One warm-up of each, so the page cache holds Python and the package.
    start_session(&runtime, cwd.path(), &[], &dir)?;
    start_session(&runtime, cwd.path(), &["a", "b", "c"], &dir)?;
    let mut bare = Vec::new();
    let mut three = Vec::new();
    let mut three_ready = Vec::new();
    let mut direct = Vec::new();
    for _ in 0..starts {
        bare.push(start_session(&runtime, cwd.path(), &[], &dir)?.0);
        let (constructed, ready) = start_session(&runtime, cwd.path(), &["a", "b", "c"], &dir)?;
        three.push(constructed);
        three_ready.push(ready);
        let started = Instant::now();
        let client = runtime.block_on(direct_client(&dir))?;
        direct.push(started.elapsed());
        runtime.block_on(client.cancel())?;
    }
    let (bare, three, three_ready, direct) = (
        median(bare),
        median(three),
        median(three_ready),
        median(direct),
    );
    println!("start-up ({starts} runs, medians)");
    println!(
        "  Session::new, no MCP servers          {:>8.2} ms",
        ms(bare)
    );
    println!(
        "  Session::new, 3 stdio servers         {:>8.2} ms",
        ms(three)
    );
    println!(
        "  3 servers connected (1st prompt)      {:>8.2} ms",
        ms(three_ready)
    );
    println!(
        "  added by the 3 servers, until ready   {:>8.2} ms",
        ms(three_ready.saturating_sub(bare))
    );
    println!(
        "  1 server started directly with rmcp  {:>8.2} ms",
        ms(direct)
    );

    // Calls through the session's tool and straight through rmcp.
    let session = Session::new(options(cwd.path(), &["py"], &dir)?)?;
    runtime.block_on(session.wait_for_mcp_servers(None));
    let hub = session.mcp_hub().ok_or("the session has no MCP hub")?;
    let mut warnings = Vec::new();
    let tool: Arc<dyn Tool> = hub
        .tools(&mut warnings)
        .into_iter()
        .find(|t| t.name() == "mcp__py__add")
        .ok_or("mcp__py__add is missing")?;
    let client = runtime.block_on(direct_client(&dir))?;
    let (through, straight) = runtime.block_on(async {
        let call_tool = |i: usize| {
            let tool = Arc::clone(&tool);
            let cwd = cwd.path().to_path_buf();
            async move {
                let context = ToolContext {
                    tool_use_id: format!("toolu_{i}"),
                    cwd,
                    cancel: CancellationToken::new(),
                };
                let started = Instant::now();
                let output = tool.execute(json!({"a": 2, "b": 3}), context).await;
                (started.elapsed(), output)
            }
        };
        let mut through = Vec::with_capacity(calls);
        let mut straight = Vec::with_capacity(calls);
        for i in 0..20 {
            call_tool(i).await;
            client.call_tool(add_params()).await?;
        }
        // Interleaved, so load on the machine touches both alike.
        for i in 0..calls {
            let (elapsed, output) = call_tool(i).await;
            if output.is_error {
                return Err(format!("the call failed: {}", output.content).into());
            }
            through.push(elapsed);
            let started = Instant::now();
            client.call_tool(add_params()).await?;
            straight.push(started.elapsed());
        }
        BenchResult::Ok((through, straight))
    })?;
    println!("tool call `add` ({calls} calls each, interleaved)");
    println!(
        "  through robota (mcp__py__add)          median {:>6.3} ms   p90 {:>6.3} ms",
        ms(median(through.clone())),
        ms(p90(through.clone()))
    );
    println!(
        "  directly with rmcp                     median {:>6.3} ms   p90 {:>6.3} ms",
        ms(median(straight.clone())),
        ms(p90(straight.clone()))
    );
    println!(
        "  robota's overhead per call             {:>+7.3} ms (median)",
        ms(median(through)) - ms(median(straight))
    );
    runtime.block_on(client.cancel())?;
    runtime.block_on(session.shutdown(SessionEndReason::Other));
    Ok(())
}
