//! Grep and Glob against ripgrep on the same large generated tree, in one run.
//!
//! Creates a git-like tree of generated source files (default 30 000; `ROBOTA_BENCH_FILES`
//! overrides) in a temp dir, warms the page cache, then times each case through the tools'
//! `Tool::execute` (in-process, tokio multi-thread runtime) and through the `rg` binary (a process
//! per run, output captured through a pipe), and prints the medians and ratios. The target in
//! DESIGN §9 is tool/rg ≤ 1.5.
//!
//! Run: `cargo bench -p robota --bench search` (needs `rg` on PATH for the comparison).

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use robota::tools::builtins::{BuiltinToolsConfig, Builtins, GlobTool, GrepTool};
use robota::tools::{Tool, ToolContext};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

const RUNS: usize = 7;

fn main() {
    let files: usize = std::env::var("ROBOTA_BENCH_FILES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(30_000);
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path().join("tree");
    let started = Instant::now();
    let bytes = generate(&root, files);
    println!(
        "tree: {files} files, {:.1} MB, generated in {:.1} s at {}",
        bytes as f64 / 1e6,
        started.elapsed().as_secs_f64(),
        root.display()
    );
    let rg = Command::new("rg").arg("--version").output().ok();
    match &rg {
        Some(out) => println!(
            "rg: {}",
            String::from_utf8_lossy(&out.stdout)
                .lines()
                .next()
                .unwrap_or("?")
        ),
        None => println!("rg: not found on PATH; only the tools are timed"),
    }
    println!(
        "threads: {}",
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let builtins = Builtins::new(BuiltinToolsConfig {
        session_dir: Some(dir.path().join("session")),
        ..BuiltinToolsConfig::default()
    });
    let grep = GrepTool::new(&builtins);
    let glob = GlobTool::new(&builtins);

    // (name, tool, input, rg arguments, how to count rg's answer)
    let cases: Vec<(&str, &dyn Tool, Value, Vec<&str>)> = vec![
        (
            "grep files_with_matches, rare literal",
            &grep,
            json!({"pattern": "NEEDLE_42"}),
            vec!["-l", "NEEDLE_42"],
        ),
        (
            "grep files_with_matches, common regex",
            &grep,
            json!({"pattern": "fn \\w+_helper\\("}),
            vec!["-l", "fn \\w+_helper\\("],
        ),
        (
            "grep content -n, regex (~1% of lines)",
            &grep,
            json!({"pattern": "TODO\\(\\w+\\)", "output_mode": "content"}),
            vec!["-n", "TODO\\(\\w+\\)"],
        ),
        (
            "grep count -i",
            &grep,
            json!({"pattern": "result", "output_mode": "count", "-i": true}),
            vec!["-c", "-i", "result"],
        ),
        (
            "grep --type rust, literal",
            &grep,
            json!({"pattern": "struct Record", "type": "rust"}),
            vec!["-l", "-t", "rust", "struct Record"],
        ),
        (
            "grep --glob '*.{ts,py}'",
            &grep,
            json!({"pattern": "value", "glob": "*.{ts,py}"}),
            vec!["-l", "-g", "*.{ts,py}", "value"],
        ),
        (
            "glob **/*.rs (vs rg --files -g)",
            &glob,
            json!({"pattern": "**/*.rs"}),
            vec!["--files", "-g", "**/*.rs"],
        ),
        (
            "glob pkg_1*/**/*.ts (vs rg --files -g)",
            &glob,
            json!({"pattern": "pkg_1*/**/*.ts"}),
            vec!["--files", "-g", "pkg_1*/**/*.ts"],
        ),
    ];

    let context = || ToolContext {
        tool_use_id: "bench".into(),
        cwd: root.clone(),
        cancel: CancellationToken::new(),
    };
    println!();
    println!(
        "{:<42} {:>10} {:>10} {:>7}   results tool / rg",
        "case (median of 7)", "tool ms", "rg ms", "ratio"
    );
    let mut ratios = Vec::new();
    for (name, tool, input, rg_args) in &cases {
        // Warm-up run (also fills the page cache the first time).
        let warm = runtime.block_on(tool.execute(input.clone(), context()));
        assert!(!warm.is_error, "{name}: {}", warm.content);
        let tool_count = count_tool(&warm.response);
        let tool_time = median(|| {
            let started = Instant::now();
            let out = runtime.block_on(tool.execute(input.clone(), context()));
            assert!(!out.is_error);
            started.elapsed()
        });
        let (rg_time, rg_count) = if rg.is_some() {
            let count = run_rg(&root, rg_args).1;
            (Some(median(|| run_rg(&root, rg_args).0)), Some(count))
        } else {
            (None, None)
        };
        let ratio = rg_time.map(|rg| tool_time.as_secs_f64() / rg.as_secs_f64());
        if let Some(r) = ratio {
            ratios.push(r);
        }
        println!(
            "{:<42} {:>10.1} {:>10} {:>7}   {} / {}",
            name,
            ms(tool_time),
            rg_time.map_or("-".into(), |t| format!("{:.1}", ms(t))),
            ratio.map_or("-".into(), |r| format!("{r:.2}x")),
            tool_count,
            rg_count.map_or("-".into(), |c| c.to_string()),
        );
    }
    if !ratios.is_empty() {
        let worst = ratios.iter().cloned().fold(0.0, f64::max);
        let geo = (ratios.iter().map(|r| r.ln()).sum::<f64>() / ratios.len() as f64).exp();
        println!("\nratio geometric mean {geo:.2}x, worst {worst:.2}x (target <= 1.5x)");
        let spawn = median(|| {
            let started = Instant::now();
            let _ = Command::new("rg").arg("--version").output();
            started.elapsed()
        });
        println!(
            "rg process start (rg --version) costs {:.1} ms of every rg time above",
            ms(spawn)
        );
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn median(mut run: impl FnMut() -> Duration) -> Duration {
    let mut times: Vec<Duration> = (0..RUNS).map(|_| run()).collect();
    times.sort();
    times[RUNS / 2]
}

fn run_rg(root: &Path, args: &[&str]) -> (Duration, usize) {
    let started = Instant::now();
    let out = Command::new("rg")
        .args(args)
        .current_dir(root)
        .output()
        .expect("rg runs");
    let elapsed = started.elapsed();
    let stdout = String::from_utf8_lossy(&out.stdout);
    (elapsed, stdout.lines().count())
}

/// Comparable result count from a tool response: files for -l/--files, lines for content,
/// entries for count.
fn count_tool(response: &Value) -> String {
    match response["mode"].as_str() {
        Some("content") => response["num_matches"].to_string(),
        Some(_) => response["num_files"].to_string(),
        None => response["num_files"].to_string(),
    }
}

/// Writes `files` generated source files under `root` (plus a `.git` dir so `.gitignore`
/// applies, and an ignored `target/` both tools must skip). Returns the bytes written.
fn generate(root: &Path, files: usize) -> u64 {
    std::fs::create_dir_all(root.join(".git")).expect("mkdir");
    std::fs::write(root.join(".gitignore"), "target/\n").expect("write");
    let exts = ["rs", "ts", "py", "md", "go"];
    let words = [
        "alpha", "value", "result", "record", "buffer", "index", "config", "handler", "stream",
        "token", "engine", "session", "cursor", "window", "parser", "client",
    ];
    let mut seed: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut total = 0u64;
    for i in 0..files {
        let dir = root.join(format!("pkg_{}/mod_{}", i % 40, (i / 40) % 25));
        std::fs::create_dir_all(&dir).expect("mkdir");
        let ext = exts[i % exts.len()];
        let mut text = String::with_capacity(2048);
        text.push_str(&format!(
            "// generated file {i}\nstruct Record{i} {{ id: u64 }}\n"
        ));
        let lines = 30 + (next() % 30) as usize;
        for l in 0..lines {
            let a = words[(next() % words.len() as u64) as usize];
            let b = words[(next() % words.len() as u64) as usize];
            match next() % 100 {
                0 => text.push_str(&format!("    // TODO({a}): revisit {b} handling\n")),
                1..=4 => {
                    text.push_str(&format!("fn {a}_{b}_helper(x: u64) -> u64 {{ x + {l} }}\n"))
                }
                _ => text.push_str(&format!(
                    "    let {a}_{l} = {b}.process({a}, {l}); // {b} {a} result\n"
                )),
            }
        }
        if i % 97 == 0 {
            text.push_str(&format!("const MARK: &str = \"NEEDLE_{}\";\n", i % 100));
        }
        total += text.len() as u64;
        std::fs::write(dir.join(format!("file_{i}.{ext}")), text).expect("write");
    }
    // Ignored build output: both tools must skip it.
    let target = root.join("target/debug");
    std::fs::create_dir_all(&target).expect("mkdir");
    for i in 0..200 {
        std::fs::write(
            target.join(format!("gen_{i}.rs")),
            "NEEDLE_42 TODO(x) fn a_b_helper(\n",
        )
        .expect("write");
    }
    total
}
