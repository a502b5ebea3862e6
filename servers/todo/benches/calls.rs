//! Latency of todo_write (in memory, and with `--file`: temp file, fsync,
//! rename, directory fsync) and todo_read, over MCP in-process, with a list
//! of 20 items. Run with `cargo bench -p nanohermes-todo`.

// The table on stdout is what a bench is for.
#![allow(clippy::print_stdout)]

use std::time::{Duration, Instant};

use nanohermes_todo::{Store, TodoServer};
use rmcp::model::CallToolRequestParams;
use serde_json::{Value, json};

const CALLS: usize = 500;

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let dir = tempfile::tempdir().unwrap();
    let todos: Vec<Value> = (0..20)
        .map(|i| {
            let status = if i == 0 { "in_progress" } else { "pending" };
            json!({"content": format!("Step number {i} of the plan"), "status": status})
        })
        .collect();
    let write = json!({"todos": todos});
    println!("{:<28} {:>10} {:>10}", "call (20 items)", "p50", "p99");
    for (label, store, tool, args) in [
        (
            "todo_write, memory",
            Store::in_memory(),
            "todo_write",
            write.clone(),
        ),
        (
            "todo_write, --file",
            Store::open(&dir.path().join("todos.json")).unwrap(),
            "todo_write",
            write.clone(),
        ),
        ("todo_read", Store::in_memory(), "todo_read", json!({})),
    ] {
        let client = mcp_tools::in_process::connect(TodoServer::new(store))
            .await
            .unwrap();
        let Value::Object(args) = args else {
            unreachable!()
        };
        let mut times = Vec::with_capacity(CALLS);
        for _ in 0..CALLS {
            let request = CallToolRequestParams::new(tool).with_arguments(args.clone());
            let start = Instant::now();
            let result = client.call_tool(request).await.unwrap();
            times.push(start.elapsed());
            assert_ne!(result.is_error, Some(true));
        }
        times.sort();
        println!(
            "{:<28} {:>10.2?} {:>10.2?}",
            label,
            percentile(&times, 0.5),
            percentile(&times, 0.99)
        );
    }
}
