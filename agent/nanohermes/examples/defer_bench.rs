//! Measures deferred tools: the request bytes with and without deferral
//! (the built-ins plus the fixture serving 300 generated tools), how many
//! steps a scripted model needs to reach a deferred tool, and the latency
//! of `tool_search` over 1 000 deferred tools.
//!
//! ```text
//! cargo build --release -p nanohermes --example fixture_server
//! cargo run --release -p nanohermes --example defer_bench
//! ```
//!
//! Prints tables; nothing is asserted. The scripted model is a small
//! loopback HTTP server here: its first answer searches, its second calls
//! the first tool the search named (read from the tool message it was
//! sent), its third is text. The memory server is left out (it opens a
//! database under the user's home).

#![allow(clippy::print_stdout)] // A bench prints its table.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nanohermes_config::{BuiltinName, Origin, ServerSpec, StdioSpec, Transport};
use nanohermes_core::agent::{Agent, AgentConfig};
use nanohermes_core::prompt::{self, Guidance};
use nanohermes_hub::{DeferConfig, Hub, HubConfig, TOOL_SEARCH};
use nanohermes_llm::{Client, ModelSettings};
use serde_json::{Map, Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

const SEARCHES: usize = 1000;

fn fixture_server() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let path = exe
        .parent()?
        .join(format!("fixture_server{}", std::env::consts::EXE_SUFFIX));
    path.exists().then_some(path)
}

fn config(workspace: &Path, fixture: &Path, many: usize, deferral: DeferConfig) -> HubConfig {
    let mut servers: Vec<ServerSpec> = BuiltinName::ALL
        .iter()
        .copied()
        .filter(|b| *b != BuiltinName::Memory)
        .map(ServerSpec::default_builtin)
        .collect();
    servers.push(ServerSpec {
        name: "fx".into(),
        origin: Origin::Flag,
        builtin: None,
        transport: Transport::Stdio(StdioSpec {
            command: fixture.display().to_string(),
            args: vec!["--many".into(), many.to_string()],
            ..StdioSpec::default()
        }),
        startup_timeout: Duration::from_secs(30),
        ..ServerSpec::default_builtin(BuiltinName::Files)
    });
    HubConfig {
        deferral,
        ..HubConfig::new(workspace, servers)
    }
}

/// The scripted model: answers each request by how many came before,
/// recording every body's size.
async fn scripted_model(sizes: Arc<Mutex<Vec<usize>>>) -> anyhow::Result<String> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/v1", listener.local_addr()?);
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let mut buf = Vec::new();
            let body = loop {
                let mut chunk = [0u8; 65536];
                let Ok(n) = socket.read(&mut chunk).await else {
                    return;
                };
                if n == 0 {
                    return;
                }
                buf.extend_from_slice(&chunk[..n]);
                let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
                    continue;
                };
                let head = String::from_utf8_lossy(&buf[..end]).to_lowercase();
                let length: usize = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .and_then(|v| v.trim().parse().ok())
                    .unwrap_or(0);
                if buf.len() >= end + 4 + length {
                    break buf[end + 4..end + 4 + length].to_vec();
                }
            };
            sizes.lock().unwrap().push(body.len());
            let request: Value = serde_json::from_slice(&body).unwrap_or_default();
            let answer = answer(&request);
            let text = answer.to_string();
            let reply = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
                text.len()
            );
            let _ = socket.write_all(reply.as_bytes()).await;
        }
    });
    Ok(url)
}

/// Search when the tool is not declared, call it once it is known, then stop.
fn answer(request: &Value) -> Value {
    let wanted = "fx__jira_create_issue";
    let messages = request["messages"].as_array().cloned().unwrap_or_default();
    let declared = request["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|d| d["function"]["name"] == wanted);
    let last = messages.last().cloned().unwrap_or_default();
    let called = messages.iter().any(|m| {
        m["tool_calls"]
            .as_array()
            .is_some_and(|calls| calls.iter().any(|c| c["function"]["name"] == wanted))
    });
    let found = last["content"]
        .as_str()
        .and_then(|text| text.lines().find_map(|l| l.strip_prefix("- ")))
        .and_then(|line| line.split_whitespace().next())
        .map(str::to_owned);
    let call = |name: &str, arguments: Value| {
        json!({"role": "assistant", "content": null, "tool_calls": [{
            "id": format!("c{}", messages.len()), "type": "function",
            "function": {"name": name, "arguments": arguments.to_string()}}]})
    };
    let message = if called {
        json!({"role": "assistant", "content": "filed"})
    } else if declared || found.as_deref() == Some(wanted) {
        call(wanted, json!({"project": "OPS", "title": "disk full"}))
    } else {
        call(
            TOOL_SEARCH,
            json!({"query": "create a jira issue", "limit": 3}),
        )
    };
    let finish = if message["tool_calls"].is_array() {
        "tool_calls"
    } else {
        "stop"
    };
    json!({"id": "bench", "object": "chat.completion", "model": "bench",
           "choices": [{"index": 0, "message": message, "finish_reason": finish}],
           "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}})
}

async fn scripted_run(workspace: &Path, hub: Hub) -> anyhow::Result<(Vec<usize>, usize)> {
    let sizes = Arc::new(Mutex::new(Vec::new()));
    let url = scripted_model(sizes.clone()).await?;
    let mut settings = ModelSettings::new(url, "bench");
    settings.body.stream = false;
    let mut system = prompt::system_prompt(workspace, &Guidance::default());
    prompt::add_deferred_line(&mut system, &hub.deferred_counts(), &hub.connecting());
    let client = Client::new(settings)?;
    let mut agent = Agent::new(client, hub, &system, AgentConfig::default());
    let mut ui = nanohermes_core::events::TerminalUi::default();
    let summary = agent
        .run("file a jira issue: disk full on OPS", &mut ui)
        .await?;
    agent.into_tools().shutdown().await;
    let sizes = sizes.lock().unwrap().clone();
    Ok((sizes, summary.tool_calls))
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index]
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let Some(fixture) = fixture_server() else {
        println!(
            "build the fixture first: cargo build --release -p nanohermes --example fixture_server"
        );
        return Ok(());
    };
    let dir = tempfile::tempdir()?;
    let off = DeferConfig {
        enabled: false,
        ..DeferConfig::default()
    };

    println!("built-ins (6 servers, memory left out) + fixture with 300 generated tools\n");
    println!(
        "| deferral | declared tools | deferred | request 1 bytes | later requests, bytes | tool calls to reach fx__jira_create_issue |"
    );
    println!("|---|---|---|---|---|---|");
    for (label, deferral) in [
        ("on (default)", DeferConfig::default()),
        ("off", off.clone()),
    ] {
        let hub = Hub::start(config(dir.path(), &fixture, 300, deferral)).await?;
        let (declared, deferred) = (hub.declarations().len(), hub.deferred().len());
        let (sizes, calls) = scripted_run(dir.path(), hub).await?;
        let later: Vec<String> = sizes[1..].iter().map(usize::to_string).collect();
        println!(
            "| {label} | {declared} | {deferred} | {} | {} | {} |",
            sizes[0],
            later.join(", "),
            calls
        );
    }

    let hub = Hub::start(config(dir.path(), &fixture, 1000, DeferConfig::default())).await?;
    let queries = [
        "create a jira issue",
        "list slack channels",
        "delete a file from s3",
        "search sentry reports",
        "update a notion project",
        "fx__stripe_get_webhook",
        "kubernetes branch",
        "calendar comments newest first",
    ];
    let mut samples = Vec::with_capacity(SEARCHES);
    for i in 0..SEARCHES {
        let arguments: Map<String, Value> = match json!({"query": queries[i % queries.len()]}) {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        let started = Instant::now();
        let answer = hub.call(TOOL_SEARCH, arguments).await;
        samples.push(started.elapsed());
        if i == 0 {
            println!(
                "\nfirst answer over {} deferred tools:\n{answer}",
                hub.deferred().len()
            );
        }
    }
    samples.sort();
    println!(
        "\n| tool_search over {} deferred tools (n = {SEARCHES}) | p50 | p99 | max |",
        hub.deferred().len()
    );
    println!("|---|---|---|---|");
    println!(
        "| hub.call(\"tool_search\") | {:.1?} | {:.1?} | {:.1?} |",
        percentile(&samples, 0.5),
        percentile(&samples, 0.99),
        samples[samples.len() - 1]
    );
    hub.shutdown().await;
    Ok(())
}
