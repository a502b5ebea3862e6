//! Latency of each read tool, called over MCP in-process on a repository of
//! 1 000 files with 50 modified and 20 untracked. Run with
//! `cargo bench -p nanohermes-git`; prints p50 and p99 per tool.

// The table on stdout is what a bench is for.
#![allow(clippy::print_stdout)]

use std::process::Command;
use std::time::{Duration, Instant};

use mcp_tools::ToolContext;
use nanohermes_git::GitServer;
use rmcp::model::CallToolRequestParams;
use serde_json::json;

const CALLS: usize = 200;

fn git(root: &std::path::Path, args: &[&str]) {
    let status = Command::new("git")
        .current_dir(root)
        .args(args)
        .status()
        .unwrap();
    assert!(status.success(), "git {args:?}");
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    git(root, &["init", "-q", "-b", "main"]);
    git(root, &["config", "user.name", "Bench"]);
    git(root, &["config", "user.email", "bench@example.com"]);
    for i in 0..1000 {
        let sub = root.join(format!("d{}", i % 20));
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::write(
            sub.join(format!("f{i}.txt")),
            format!("line {i}\n").repeat(20),
        )
        .unwrap();
    }
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "start"]);
    for i in 0..50 {
        let file = root.join(format!("d{}/f{i}.txt", i % 20));
        std::fs::write(file, "changed\n").unwrap();
    }
    for i in 0..20 {
        std::fs::write(root.join(format!("new{i}.txt")), "new\n").unwrap();
    }

    let server = GitServer::new(ToolContext::new(root).unwrap());
    let client = mcp_tools::in_process::connect(server).await.unwrap();
    println!("{:<28} {:>10} {:>10}", "tool (1000 files)", "p50", "p99");
    for (tool, args) in [
        ("git_status", json!({})),
        ("git_diff", json!({})),
        ("git_diff path", json!({"path": "d0/f0.txt"})),
        ("git_log", json!({})),
    ] {
        let name = tool.split(' ').next().unwrap().to_string();
        let serde_json::Value::Object(args) = args else {
            unreachable!()
        };
        let mut times = Vec::with_capacity(CALLS);
        for _ in 0..CALLS {
            let request = CallToolRequestParams::new(name.clone()).with_arguments(args.clone());
            let start = Instant::now();
            let result = client.call_tool(request).await.unwrap();
            times.push(start.elapsed());
            assert_ne!(result.is_error, Some(true));
        }
        times.sort();
        println!(
            "{:<28} {:>10.2?} {:>10.2?}",
            tool,
            percentile(&times, 0.5),
            percentile(&times, 0.99)
        );
    }
}
