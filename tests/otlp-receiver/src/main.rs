//! `otlp-receiver`: runs an [`otlp_receiver::OtlpReceiver`] for tests in other languages. Prints
//! `{"http": "<base url>", "grpc": "<url>"}` as its first line, then one JSON line per span or
//! metric data point as they arrive (`{"type": "span", …}`, `{"type": "metric", …}`). Runs until
//! its stdin closes or it is killed.

use std::io::{Read, Write};

use otlp_receiver::OtlpReceiver;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> std::io::Result<()> {
    let receiver = OtlpReceiver::start().await?;
    let mut arrivals = receiver.subscribe();
    let ready = serde_json::json!({
        "http": receiver.http_endpoint(),
        "grpc": receiver.grpc_endpoint(),
    });
    {
        let mut out = std::io::stdout().lock();
        writeln!(out, "{ready}")?;
        out.flush()?;
    }
    let printer = tokio::spawn(async move {
        while let Ok(arrival) = arrivals.recv().await {
            let Ok(line) = serde_json::to_string(&arrival) else {
                continue;
            };
            let mut out = std::io::stdout().lock();
            if writeln!(out, "{line}").and_then(|()| out.flush()).is_err() {
                break;
            }
        }
    });
    // Stops when the test closes our stdin (or kills us).
    let _ = tokio::task::spawn_blocking(|| {
        let mut buffer = [0u8; 256];
        while matches!(std::io::stdin().read(&mut buffer), Ok(read) if read > 0) {}
    })
    .await;
    printer.abort();
    Ok(())
}
