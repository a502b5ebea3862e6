//! One tool call's round trip through the agent's hub, to the files server
//! in-process, as a child over stdio, and over HTTP.

use std::process::Stdio;
use std::time::{Duration, Instant};

use nanohermes::config::sources::{BuiltinName, HttpSpec, ServerSpec, Transport};
use nanohermes::hub::{Hub, HubConfig};
use serde_json::{Map, Value, json};

use crate::agent_runs::{Placement, free_port, wait_for_port};
use crate::bins::Bins;

/// Calls timed per placement (after a warm-up of a tenth as many).
const CALLS: usize = 2000;

/// `read_file` round trips through a hub whose only server is the files
/// built-in placed as `placement`.
pub async fn read_file_round_trips(
    bins: &Bins,
    placement: Placement,
) -> anyhow::Result<Vec<Duration>> {
    let workspace = tempfile::tempdir()?;
    std::fs::write(workspace.path().join("a.txt"), "alpha\n")?;
    let mut server = None;
    let transport = match placement {
        Placement::InProcess => Transport::InProcess,
        Placement::Process => Transport::BuiltinProcess,
        Placement::Http => {
            let port = free_port()?;
            server = Some(
                std::process::Command::new(bins.agent())
                    .args(["builtin", "files", "--http", &format!("127.0.0.1:{port}")])
                    .arg("--root")
                    .arg(workspace.path())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()?,
            );
            wait_for_port(port)?;
            Transport::Http(HttpSpec {
                url: format!("http://127.0.0.1:{port}/mcp"),
                ..HttpSpec::default()
            })
        }
    };
    let spec = ServerSpec {
        transport,
        ..ServerSpec::default_builtin(BuiltinName::Files)
    };
    let mut config = HubConfig::new(workspace.path().to_path_buf(), vec![spec]);
    config.builtin_exe = bins.agent();
    let hub = Hub::start(config).await?;
    let Value::Object(arguments) = json!({"path": "a.txt"}) else {
        unreachable!()
    };
    let samples = time_calls(&hub, "read_file", &arguments).await;
    hub.shutdown().await;
    if let Some(mut server) = server {
        let _ = server.kill();
        let _ = server.wait();
    }
    samples
}

async fn time_calls(
    hub: &Hub,
    name: &str,
    arguments: &Map<String, Value>,
) -> anyhow::Result<Vec<Duration>> {
    for _ in 0..CALLS / 10 {
        hub.call(name, arguments.clone()).await;
    }
    let mut samples = Vec::with_capacity(CALLS);
    for _ in 0..CALLS {
        let started = Instant::now();
        let answer = hub.call(name, arguments.clone()).await;
        samples.push(started.elapsed());
        anyhow::ensure!(answer.contains("alpha"), "{name} answered {answer}");
    }
    Ok(samples)
}
