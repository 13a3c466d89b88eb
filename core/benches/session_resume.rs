//! Session persistence costs: resuming a 10,000-message session (target < 50 ms) from its JSON
//! snapshot and from its JSONL log alone, listing sessions, and the per-turn persistence
//! overhead (the log lines of a turn plus the atomic snapshot) at several session sizes.
//!
//! The session is built as the session layer writes it: per turn a `pre_run`, a provider
//! request/response pair per round, the engine's `history_mutation` and commit events, tool
//! request/result, coalesced text, `turn_end` — 2,500 turns of 4 messages each (user prompt,
//! assistant tool call, tool result, assistant answer) with a few hundred bytes per message.
//! Files go to a temporary directory on the same file system as the target directory (so `fsync`
//! costs what it costs there; on tmpfs it is nearly free).
//!
//! Run: `cargo bench -p robota --bench session_resume` (add `-- --runs N` to change the count).

use std::path::Path;
use std::time::{Duration, Instant};

use robota::engine::{ExecutionEvent, HistoryMutation};
use robota::message::{ContentBlock, Conversation, Message, MessageState, Usage};
use robota::provider::{ProviderRequest, ProviderResponse, ProviderToolCall, StopReason};
use robota::session::log::{LogOptions, SessionLog, SessionLogEvent};
use robota::session::store::{FileSessionStore, ResumeSource, SessionRecord, SessionStore};
use robota::session::usage::{PriceTable, UsageTotals};
use robota::tools::ToolOutput;
use serde_json::json;

const MESSAGES: usize = 10_000;

fn main() {
    let runs = parse_runs().unwrap_or(15);
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

type BoxError = Box<dyn std::error::Error>;

/// Logs one turn the way a session does and appends its messages to `conversation`.
/// `count` is the conversation's message count, tracked by the caller (`message_count` walks the
/// whole history, which would dominate the figures).
fn log_turn(
    log: &SessionLog,
    conversation: &mut Conversation,
    count: &mut usize,
    prices: &PriceTable,
    n: usize,
) -> Result<UsageTotals, BoxError> {
    let execution_id = format!("exec-{n}");
    let filler = "The quick brown fox jumps over the lazy dog. ".repeat(4);
    log.append(&SessionLogEvent::PreRun {
        execution_id: Some(execution_id.clone()),
        input: format!("turn {n}: {filler}"),
        provider: Some("anthropic".into()),
        model: Some("claude-sonnet-4-6".into()),
        history_length: *count,
    })?;
    let mut usage_totals = UsageTotals::new();
    let mut commit = |message: Message, round: u32| -> Result<(), BoxError> {
        let index = *count;
        *count += 1;
        let stored = conversation.push(message).clone();
        log.append_execution(&ExecutionEvent::HistoryMutation {
            execution_id: execution_id.clone(),
            round,
            mutation: HistoryMutation::AppendMessage,
            index,
            message: stored,
        })?;
        Ok(())
    };
    commit(Message::user(format!("turn {n}: {filler}")), 0)?;
    for round in 1..=2u32 {
        log.append_execution(&ExecutionEvent::ProviderRequest {
            execution_id: execution_id.clone(),
            round,
            provider: "anthropic".into(),
            model: "claude-sonnet-4-6".into(),
            request: ProviderRequest::default().into(),
        })?;
        let usage = Usage {
            input_tokens: 2_000,
            output_tokens: 150,
            cache_read_input_tokens: 8_000,
            cache_creation_input_tokens: 0,
        };
        let (text, tool_calls) = if round == 1 {
            (
                String::new(),
                vec![ProviderToolCall {
                    id: format!("call_{n}"),
                    name: "Read".into(),
                    arguments: json!({"file_path": format!("/src/file_{n}.rs")}).to_string(),
                }],
            )
        } else {
            (format!("answer {n}: {filler}"), Vec::new())
        };
        for chunk in text.as_bytes().chunks(16) {
            log.text_delta(&String::from_utf8_lossy(chunk))?;
        }
        log.append_execution(&ExecutionEvent::ProviderResponse {
            execution_id: execution_id.clone(),
            round,
            provider: "anthropic".into(),
            tool_calls_count: tool_calls.len(),
            response: ProviderResponse {
                text: text.clone(),
                thinking: Vec::new(),
                tool_calls: tool_calls.clone(),
                stop_reason: if round == 1 {
                    StopReason::ToolUse
                } else {
                    StopReason::EndTurn
                },
                usage,
                model: "claude-sonnet-4-6".into(),
                ..ProviderResponse::default()
            },
        })?;
        usage_totals.record_call(prices, "claude-sonnet-4-6", &usage);
        if round == 1 {
            let input = json!({"file_path": format!("/src/file_{n}.rs")});
            let message = Message::assistant(
                vec![ContentBlock::ToolUse {
                    id: format!("call_{n}"),
                    name: "Read".into(),
                    input: input.clone(),
                }],
                MessageState::Complete,
            );
            commit(message, round)?;
            log.append_execution(&ExecutionEvent::ToolExecutionRequest {
                execution_id: execution_id.clone(),
                round,
                batch_id: format!("b{n}"),
                index: 0,
                tool_name: "Read".into(),
                tool_call_id: format!("call_{n}"),
                parameters: input,
            })?;
            let output = format!("fn main() {{}}\n// {filler}");
            log.append_execution(&ExecutionEvent::ToolExecutionResult {
                execution_id: execution_id.clone(),
                round,
                batch_id: format!("b{n}"),
                index: 0,
                tool_name: "Read".into(),
                tool_call_id: format!("call_{n}"),
                success: true,
                output: ToolOutput::text(output.clone()),
                metadata: Default::default(),
            })?;
            commit(
                Message::tool_result(format!("call_{n}"), output, false),
                round,
            )?;
        } else {
            commit(
                Message::assistant(vec![ContentBlock::text(text)], MessageState::Complete),
                round,
            )?;
        }
    }
    log.append(&SessionLogEvent::TurnEnd {
        execution_id: Some(execution_id),
        stop_reason: "completed".into(),
        rounds: 2,
        message_count: *count,
        usage: usage_totals.clone(),
    })?;
    Ok(usage_totals)
}

struct Built {
    record: SessionRecord,
    log: SessionLog,
    conversation: Conversation,
    count: usize,
}

fn build(store: &FileSessionStore, id: &str, messages: usize) -> Result<Built, BoxError> {
    let log = store.open_log(id, LogOptions::default())?;
    let mut record = SessionRecord::new(id, "/project");
    record.model = Some("claude-sonnet-4-6".into());
    log.append(&SessionLogEvent::SessionInit {
        session_id: id.into(),
        cwd: "/project".into(),
        provider: Some("anthropic".into()),
        model: record.model.clone(),
        permission_mode: Some("default".into()),
        name: None,
        parent_id: None,
        resumed: false,
        system_prompt: Some("You are a coding agent.".repeat(50)),
        tool_schemas: vec![json!({"name": "Read"})],
    })?;
    let prices = PriceTable::builtin();
    let mut conversation = Conversation::new();
    let mut count = 0;
    for n in 0..messages / 4 {
        let turn = log_turn(&log, &mut conversation, &mut count, &prices, n)?;
        record.usage.add_turn(&turn);
    }
    log.flush()?;
    record.set_conversation(&conversation);
    record.log_position = Some(log.position());
    store.save(&record)?;
    Ok(Built {
        record,
        log,
        conversation,
        count,
    })
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn time<T>(
    runs: usize,
    mut f: impl FnMut() -> Result<T, BoxError>,
) -> Result<(Duration, Duration), BoxError> {
    f()?; // warm the page cache and allocator
    let mut samples = Vec::with_capacity(runs);
    for _ in 0..runs {
        let started = Instant::now();
        f()?;
        samples.push(started.elapsed());
    }
    let min = samples.iter().min().copied().unwrap_or_default();
    Ok((median(samples), min))
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}

fn size(path: &Path) -> String {
    let bytes = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    format!("{:.1} MB", bytes as f64 / 1e6)
}

fn bench(runs: usize) -> Result<(), BoxError> {
    // Next to the build output, so the file system is a real disk, not tmpfs.
    let base = std::env::var_os("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"));
    std::fs::create_dir_all(&base)?;
    let dir = tempfile::tempdir_in(&base)?;
    let store = FileSessionStore::for_project(dir.path());

    let started = Instant::now();
    let built = build(&store, "big", MESSAGES)?;
    println!(
        "built a {MESSAGES}-message session in {}: snapshot {}, log {} ({} lines)",
        ms(started.elapsed()),
        size(&store.snapshot_path("big")?),
        size(&store.log_path("big")?),
        built.log.position().seq
    );

    let (median_snapshot, min_snapshot) = time(runs, || {
        let resumed = store.resume("big")?;
        assert_eq!(resumed.source, ResumeSource::Snapshot);
        assert_eq!(resumed.record.message_count(), MESSAGES);
        Ok(())
    })?;
    println!(
        "resume from snapshot ({MESSAGES} messages):   median {}  min {}   (target < 50 ms)",
        ms(median_snapshot),
        ms(min_snapshot)
    );
    let (median_log, min_log) = time(runs, || {
        let rebuilt = store.rebuild_from_log("big")?;
        assert_eq!(rebuilt.record.message_count(), MESSAGES);
        Ok(())
    })?;
    println!(
        "resume from log replay ({MESSAGES} messages): median {}  min {}   (target < 50 ms)",
        ms(median_log),
        ms(min_log)
    );
    // The crash case: the log has 10 turns the snapshot missed.
    let Built {
        log: behind_log,
        conversation: mut behind_conversation,
        count: mut behind_count,
        ..
    } = build(&store, "behind", MESSAGES - 40)?;
    let prices = PriceTable::builtin();
    for n in 0..10 {
        log_turn(
            &behind_log,
            &mut behind_conversation,
            &mut behind_count,
            &prices,
            (MESSAGES - 40) / 4 + n,
        )?;
    }
    behind_log.flush()?;
    let (median_tail, min_tail) = time(runs, || {
        let resumed = store.resume("behind")?;
        assert_eq!(
            resumed.source,
            ResumeSource::SnapshotAndLog { turns_replayed: 10 }
        );
        assert_eq!(resumed.record.message_count(), MESSAGES);
        Ok(())
    })?;
    println!(
        "resume from snapshot + 10 logged turns:      median {}  min {}",
        ms(median_tail),
        ms(min_tail)
    );

    // Listing: 200 small sessions plus the big one; only headers are read.
    for i in 0..200 {
        let mut record = SessionRecord::new(format!("small-{i}"), "/project");
        record.history = built.record.history[..8].to_vec();
        store.save(&record)?;
    }
    let before = store.io_stats().bytes_read;
    let (median_list, _) = time(runs, || Ok(store.list()?.sessions.len()))?;
    let per_list = (store.io_stats().bytes_read - before) / (runs as u64 + 1);
    println!(
        "list 201 sessions (one of {MESSAGES} messages): median {}, {per_list} bytes read per listing",
        ms(median_list)
    );

    // Per-turn persistence overhead: the turn's log lines + the atomic snapshot, by size.
    println!("per-turn persistence overhead (log lines of one turn + snapshot with fsync):");
    for messages in [100, 1_000, MESSAGES] {
        let id = format!("turns-{messages}");
        let Built {
            mut record,
            log,
            mut conversation,
            mut count,
        } = build(&store, &id, messages)?;
        let mut log_times = Vec::new();
        let mut save_times = Vec::new();
        let mut lines = 0;
        for n in 0..runs {
            let seq = log.position().seq;
            let started = Instant::now();
            let turn = log_turn(
                &log,
                &mut conversation,
                &mut count,
                &prices,
                messages / 4 + n,
            )?;
            log.flush()?;
            log_times.push(started.elapsed());
            lines = log.position().seq - seq;
            let started = Instant::now();
            record.usage.add_turn(&turn);
            record.set_conversation(&conversation);
            record.log_position = Some(log.position());
            record.touch();
            store.save(&record)?;
            save_times.push(started.elapsed());
        }
        let log_median = median(log_times);
        println!(
            "  {messages:>6} messages: log {} ({lines} lines, {:.1} µs/line), snapshot {} ({}), total {}",
            ms(log_median),
            log_median.as_secs_f64() * 1e6 / lines.max(1) as f64,
            ms(median(save_times.clone())),
            size(&store.snapshot_path(&id)?),
            ms(log_median + median(save_times))
        );
    }

    // The hot path alone: one small line, the file kept open.
    let log = store.open_log("hot", LogOptions::default())?;
    let count = 100_000;
    let started = Instant::now();
    for i in 0..count {
        log.append(&SessionLogEvent::Error {
            message: format!("e{i}"),
            kind: None,
            execution_id: None,
        })?;
    }
    let per_line = started.elapsed() / count;
    println!(
        "log append, one small event per line: {:.2} µs/line",
        per_line.as_secs_f64() * 1e6
    );
    let started = Instant::now();
    for _ in 0..count {
        log.text_delta("tok ")?;
    }
    log.flush()?;
    println!(
        "text_delta (coalesced): {:.3} µs/delta",
        (started.elapsed() / count).as_secs_f64() * 1e6
    );
    Ok(())
}
