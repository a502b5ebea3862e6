//! Per-command cost of `run_command`, called over MCP in-process: `true`
//! (spawn, wait, tree kill) and a command that leaves a `setsid` orphan
//! (the tree kill has to find and kill it). Run with
//! `cargo bench -p nanohermes-shell`; prints p50 and p99.

// The table on stdout is what a bench is for.
#![allow(clippy::print_stdout)]

use std::time::{Duration, Instant};

use mcp_tools::ToolContext;
use nanohermes_shell::ShellServer;
use rmcp::model::CallToolRequestParams;
use serde_json::json;

const CALLS: usize = 200;

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let dir = tempfile::tempdir().unwrap();
    let server = ShellServer::new(ToolContext::new(dir.path()).unwrap());
    let client = mcp_tools::in_process::connect(server).await.unwrap();
    println!("{:<34} {:>10} {:>10}", "run_command", "p50", "p99");
    for command in ["true", "setsid sleep 5 & true"] {
        let mut times = Vec::with_capacity(CALLS);
        for _ in 0..CALLS {
            let args = json!({"command": command}).as_object().unwrap().clone();
            let started = Instant::now();
            client
                .call_tool(CallToolRequestParams::new("run_command").with_arguments(args))
                .await
                .unwrap();
            times.push(started.elapsed());
        }
        times.sort();
        println!(
            "{:<34} {:>10.2?} {:>10.2?}",
            command,
            percentile(&times, 0.5),
            percentile(&times, 0.99)
        );
    }
}
