//! Start-up and loop overhead of the `nanohermes` binary against an instant
//! scripted model (the mock of the test suite).
//!
//! `cargo bench -p nanohermes --bench startup` prints a table:
//! - process start → first model request (the model sees the request);
//! - a 4-step task (list_dir, write_file, read_file, final answer): process
//!   start → exit;
//! - the size of the first request body (system prompt + tool declarations);
//! - the peak resident memory of the agent process.
//!
//! Each figure is the median of `NANOHERMES_BENCH_RUNS` runs (default 15).

// A bench prints its table.
#![allow(clippy::print_stdout)]

#[path = "../tests/support/mock_model/mod.rs"]
#[allow(dead_code)]
mod mock_model;

use std::time::{Duration, Instant};

use mock_model::{MockModel, Step, call, text, tool_calls};
use serde_json::json;

/// The four answers, each written in one piece: the mock's pauses between
/// pieces (which make frames span reads in the tests) would be measured too.
fn four_steps() -> Vec<Step> {
    let write = json!({"path":"notes.txt","content":"bench\n"});
    [
        tool_calls(&[call("c1", "list_dir", json!({}))]),
        tool_calls(&[call("c2", "write_file", write)]),
        tool_calls(&[call("c3", "read_file", json!({"path":"notes.txt"}))]),
        text(&["Done."]),
    ]
    .into_iter()
    .map(|reply| reply.in_one_piece().into())
    .collect()
}

struct Sample {
    first_request: Duration,
    total: Duration,
    first_body: usize,
    requests: usize,
}

async fn one_run() -> Sample {
    let dir = tempfile::tempdir().expect("temp dir");
    let mock = MockModel::start(four_steps()).await;
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_nanohermes"));
    command
        .args(["run", "--workspace"])
        .arg(dir.path())
        .arg("write notes.txt and read it back")
        .env("OPENAI_BASE_URL", mock.base_url())
        .env("OPENAI_API_KEY", "bench")
        // No terminal here: default mode would deny the write and the shell.
        .env("NANOHERMES_MODE", "goal")
        // Keep the memory database out of the real ~/.nanohermes.
        .env(
            "NANOHERMES_HOME",
            concat!(env!("CARGO_TARGET_TMPDIR"), "/nanohermes-home"),
        )
        .env_remove("NANOHERMES_LOG")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let start = Instant::now();
    let status = command.status().await.expect("nanohermes runs");
    let total = start.elapsed();
    assert!(status.success(), "nanohermes failed: {status}");
    let requests = mock.requests();
    Sample {
        first_request: requests[0].at.duration_since(start),
        total,
        first_body: requests[0].body_len,
        requests: requests.len(),
    }
}

fn median(mut values: Vec<Duration>) -> Duration {
    values.sort();
    values[values.len() / 2]
}

fn peak_rss_kib() -> Option<i64> {
    let usage =
        nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_CHILDREN).ok()?;
    Some(usage.max_rss())
}

fn main() {
    let runs: usize = std::env::var("NANOHERMES_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(15);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let samples: Vec<Sample> = runtime.block_on(async {
        let mut samples = Vec::new();
        one_run().await; // warm the page cache
        for _ in 0..runs {
            samples.push(one_run().await);
        }
        samples
    });
    let first = median(samples.iter().map(|s| s.first_request).collect());
    let total = median(samples.iter().map(|s| s.total).collect());
    let best_first = samples
        .iter()
        .map(|s| s.first_request)
        .min()
        .unwrap_or_default();
    let best_total = samples.iter().map(|s| s.total).min().unwrap_or_default();
    println!(
        "nanohermes start-up bench ({runs} runs, {} model requests per run)",
        samples[0].requests
    );
    println!("| measure | median | best |");
    println!("|---|---|---|");
    println!(
        "| process start -> first model request | {:.1} ms | {:.1} ms |",
        ms(first),
        ms(best_first)
    );
    println!(
        "| 4-step task, process start -> exit | {:.1} ms | {:.1} ms |",
        ms(total),
        ms(best_total)
    );
    println!("| first request body | {} bytes | |", samples[0].first_body);
    if let Some(rss) = peak_rss_kib() {
        println!(
            "| peak RSS of the agent process | {:.1} MB | |",
            rss as f64 / 1024.0
        );
    }
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}
