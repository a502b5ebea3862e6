//! What the sandbox costs per command: `run_command {"command": "true"}`
//! over MCP in-process, without the sandbox and in both confining modes,
//! the calls interleaved so a busy machine slows all three alike; and the
//! parent's share alone (building the rules and the mount plan). Run with
//! `cargo bench -p nanohermes-shell --bench sandbox`; prints medians.

// The table on stdout is what a bench is for.
#![allow(clippy::print_stdout)]

use std::time::{Duration, Instant};

use mcp_tools::ToolContext;
use mcp_tools::spawn::{self, EnvPolicy, Sandbox, SandboxMode, SandboxPolicy};
use nanohermes_shell::ShellServer;
use rmcp::model::CallToolRequestParams;
use serde_json::json;

const CALLS: usize = 300;

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn policy(mode: SandboxMode) -> SandboxPolicy {
    SandboxPolicy {
        mode,
        ..SandboxPolicy::default()
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let dir = tempfile::tempdir().unwrap();
    std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(dir.path())
        .status()
        .unwrap();
    let rows = [
        (
            "danger-full-access (no sandbox)",
            SandboxPolicy::full_access(),
        ),
        ("read-only, network off", policy(SandboxMode::ReadOnly)),
        (
            "workspace-write, network off",
            policy(SandboxMode::WorkspaceWrite),
        ),
    ];
    let mut clients = Vec::new();
    for (_, policy) in &rows {
        let server =
            ShellServer::with_sandbox(ToolContext::new(dir.path()).unwrap(), policy.clone());
        clients.push(mcp_tools::in_process::connect(server).await.unwrap());
    }
    let args = json!({"command": "true"}).as_object().unwrap().clone();
    let mut times = vec![Vec::new(); rows.len()];
    for i in 0..CALLS + 20 {
        for (client, row_times) in clients.iter().zip(&mut times) {
            let started = Instant::now();
            client
                .call_tool(CallToolRequestParams::new("run_command").with_arguments(args.clone()))
                .await
                .unwrap();
            if i >= 20 {
                row_times.push(started.elapsed());
            }
        }
    }
    let medians: Vec<Duration> = times.into_iter().map(median).collect();
    println!(
        "{:<40} {:>10} {:>10}",
        "run_command `true` (interleaved)", "median", "added"
    );
    for ((label, _), m) in rows.iter().zip(&medians) {
        let added = (m.as_secs_f64() - medians[0].as_secs_f64()) * 1000.0;
        println!("{label:<40} {m:>10.2?} {added:>7.3} ms");
    }
    println!();
    println!(
        "{:<40} {:>10}",
        "parent's share: Sandbox::confine", "median"
    );
    for (label, policy) in &rows[1..] {
        let sandbox = Sandbox::new(policy.clone(), dir.path());
        let mut confine = Vec::new();
        for _ in 0..CALLS {
            let mut command = spawn::command("true", &EnvPolicy::ScrubSecrets);
            command.current_dir(dir.path());
            let started = Instant::now();
            sandbox.confine(&mut command).unwrap();
            confine.push(started.elapsed());
        }
        println!("{label:<40} {:>10.2?}", median(confine));
    }
}
