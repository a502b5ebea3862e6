//! Measures the MCP client hub: start-up time with the built-in servers (and
//! optionally the stdio fixture server), and the latency of a call through
//! the hub to an in-process server and to a child process.
//!
//! ```text
//! cargo build --release -p nanohermes --example fixture_server
//! cargo run --release -p nanohermes --example hub_bench
//! ```
//!
//! Prints a table; nothing is asserted. The memory server is left out (it
//! opens a database under the user's home).

#![allow(clippy::print_stdout)] // A bench prints its table.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use nanohermes_config::{BuiltinName, Origin, ServerSpec, StdioSpec, Transport};
use nanohermes_hub::{Hub, HubConfig};
use serde_json::{Map, Value, json};

const STARTS: usize = 20;
const CALLS: usize = 2000;

fn fixture_server() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let path = exe
        .parent()?
        .join(format!("fixture_server{}", std::env::consts::EXE_SUFFIX));
    path.exists().then_some(path)
}

fn config(workspace: PathBuf, external: Vec<ServerSpec>) -> HubConfig {
    let mut servers: Vec<ServerSpec> = BuiltinName::ALL
        .iter()
        .copied()
        .filter(|b| *b != BuiltinName::Memory)
        .map(ServerSpec::default_builtin)
        .collect();
    servers.extend(external);
    HubConfig::new(workspace, servers)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index]
}

fn row(label: &str, mut samples: Vec<Duration>) {
    samples.sort();
    println!(
        "| {label:<44} | {:>9.1?} | {:>9.1?} | {:>9.1?} |",
        percentile(&samples, 0.5),
        percentile(&samples, 0.99),
        samples[samples.len() - 1]
    );
}

async fn time_calls(hub: &Hub, name: &str, arguments: &Value) -> Vec<Duration> {
    let Value::Object(arguments) = arguments else {
        return Vec::new();
    };
    for _ in 0..50 {
        hub.call(name, arguments.clone()).await;
    }
    let mut samples = Vec::with_capacity(CALLS);
    let mut last = String::new();
    for _ in 0..CALLS {
        let started = Instant::now();
        last = hub.call(name, arguments.clone()).await;
        samples.push(started.elapsed());
    }
    if last.starts_with("ERROR") {
        eprintln!("{name}: {}", last.lines().next().unwrap_or_default());
    }
    samples
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    std::fs::write(dir.path().join("a.txt"), "alpha\n")?;
    let fixture = fixture_server();
    let external = |n: usize| -> Vec<ServerSpec> {
        fixture
            .iter()
            .take(n)
            .map(|path| ServerSpec {
                name: "fx".into(),
                origin: Origin::Flag,
                builtin: None,
                transport: Transport::Stdio(StdioSpec {
                    command: path.display().to_string(),
                    ..StdioSpec::default()
                }),
                ..ServerSpec::default_builtin(BuiltinName::Files)
            })
            .collect()
    };

    println!("| measurement (n = {STARTS} starts, {CALLS} calls) | p50 | p99 | max |");
    println!("|---|---|---|---|");
    let mut starts = Vec::new();
    let mut builtin_declarations = (0, 0);
    for _ in 0..STARTS {
        let started = Instant::now();
        let hub = Hub::start(config(dir.path().to_path_buf(), vec![])).await?;
        starts.push(started.elapsed());
        builtin_declarations = (
            hub.tools().len(),
            serde_json::to_string(hub.declarations())?.len(),
        );
        hub.shutdown().await;
    }
    row("start: 6 built-ins in-process", starts);

    if fixture.is_some() {
        let mut starts = Vec::new();
        for _ in 0..STARTS {
            let started = Instant::now();
            let hub = Hub::start(config(dir.path().to_path_buf(), external(1))).await?;
            starts.push(started.elapsed());
            hub.shutdown().await;
        }
        row("start: 6 built-ins + 1 stdio child", starts);
    }

    let hub = Hub::start(config(dir.path().to_path_buf(), external(1))).await?;
    let tools = hub.tools().len();
    let declared = serde_json::to_string(hub.declarations())?.len();
    row(
        "call: read_file (files, in-process)",
        time_calls(&hub, "read_file", &json!({"path": "a.txt"})).await,
    );
    row(
        "call: todo_read (todo, in-process)",
        time_calls(&hub, "todo_read", &json!({})).await,
    );
    if fixture.is_some() {
        row(
            "call: fx__echo (stdio child)",
            time_calls(&hub, "fx__echo", &json!({"text": "ping"})).await,
        );
    }
    row(
        "call: unknown tool (hub only)",
        time_calls(&hub, "nope", &Value::Object(Map::new())).await,
    );
    hub.shutdown().await;
    println!(
        "\nbuilt-ins: {} tools, {} bytes of declarations; with the fixture: {tools} tools, {declared} bytes",
        builtin_declarations.0, builtin_declarations.1
    );
    if fixture.is_none() {
        println!(
            "(build the fixture server for the stdio rows: cargo build --release -p nanohermes --example fixture_server)"
        );
    }
    Ok(())
}
