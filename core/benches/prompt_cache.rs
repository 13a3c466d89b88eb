//! Prompt caching on a 20-request agent session: the input tokens billed at full price per
//! request with Anthropic prompt caching on and off, against mock-llm's prompt-cache simulation
//! (input tokens counted from the request at 4 characters per token; prefixes under 1,024
//! tokens not cached, as with the real API). The session is the one `tests/prompt_cache.rs`
//! checks: ten prompts, each answered with a `Read` tool call and then text, with the built-in
//! tools and the default system prompt.
//!
//! Prints, per request: input tokens with caching off (all full price); with caching on the
//! full-price input, cache writes (1.25× the input price) and cache reads (0.1×); and the input
//! cost of both in full-price-token equivalents, with the session's input cost in USD at the
//! model's list price.
//!
//! Run: `cargo bench -p robota --bench prompt_cache`.

#[path = "../tests/prompt_cache_common/mod.rs"]
mod prompt_cache_common;

use prompt_cache_common::{run_session, total_input, Wire};
use robota::provider::CacheTtl;
use robota::session::usage::PriceTable;

fn main() {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("benchmark failed: no tokio runtime: {error}");
            std::process::exit(1);
        }
    };
    let (off, on) = runtime.block_on(async {
        (
            run_session(Wire::Anthropic(None)).await,
            run_session(Wire::Anthropic(Some(CacheTtl::FiveMinutes))).await,
        )
    });
    // Cache writes cost 1.25× and reads 0.1× the input price (5-minute cache).
    let equivalent = |u: &robota::message::Usage| {
        u.input_tokens as f64
            + 1.25 * u.cache_creation_input_tokens as f64
            + 0.1 * u.cache_read_input_tokens as f64
    };
    println!("| request | input sent | off: input (full price) | on: input (full price) | on: cache write | on: cache read | off: input cost | on: input cost |");
    println!("|---|---|---|---|---|---|---|---|");
    let (mut off_total, mut on_total) = (0.0, 0.0);
    let (mut off_full, mut on_full) = (0, 0);
    for (n, (off, on)) in off.iter().zip(&on).enumerate() {
        off_total += equivalent(&off.usage);
        on_total += equivalent(&on.usage);
        off_full += off.usage.input_tokens;
        on_full += on.usage.input_tokens;
        println!(
            "| {} | {} | {} | {} | {} | {} | {:.0} | {:.0} |",
            n + 1,
            total_input(&on.usage),
            off.usage.input_tokens,
            on.usage.input_tokens,
            on.usage.cache_creation_input_tokens,
            on.usage.cache_read_input_tokens,
            equivalent(&off.usage),
            equivalent(&on.usage),
        );
    }
    println!(
        "| total | | {off_full} | {on_full} | | | {off_total:.0} | {on_total:.0} ({:.0}% of off) |",
        100.0 * on_total / off_total.max(1.0)
    );
    let table = PriceTable::builtin();
    let cost = |requests: &[prompt_cache_common::Request]| -> f64 {
        requests
            .iter()
            .map(|r| {
                let mut usage = r.usage;
                usage.output_tokens = 0;
                table.cost("claude-sonnet-4-5", &usage).usd.unwrap_or(0.0)
            })
            .sum()
    };
    println!(
        "\ninput cost of the session at claude-sonnet-4-5 list prices: off ${:.4}, on ${:.4}",
        cost(&off),
        cost(&on)
    );
}
