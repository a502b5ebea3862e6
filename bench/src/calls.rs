//! One tool call's round trip through the agent's hub, in-process, as a
//! child over stdio, and over HTTP: `todo_read` (next to no work: the cost
//! of the hub and the transport) and `read_file` (a real file read).

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use nanohermes_config::{BuiltinName, HttpSpec, ServerSpec, Transport};
use nanohermes_hub::{Hub, HubConfig};
use serde_json::{Map, Value, json};

use crate::agent_runs::{Placement, free_port, wait_for_port};

/// Calls timed per placement (after a warm-up of a tenth as many).
const CALLS: usize = 2000;

/// The tool timed.
#[derive(Debug, Clone, Copy)]
pub enum Probe {
    /// `todo_read` on an empty list: the hub and the transport alone.
    TodoRead,
    /// `read_file` of a one-line file: path checks, a read, numbering.
    ReadFile,
}

impl Probe {
    /// The tool's name.
    pub fn name(self) -> &'static str {
        match self {
            Probe::TodoRead => "todo_read",
            Probe::ReadFile => "read_file",
        }
    }

    fn server(self) -> (BuiltinName, &'static str) {
        match self {
            Probe::TodoRead => (BuiltinName::Todo, "todo"),
            Probe::ReadFile => (BuiltinName::Files, "files"),
        }
    }
}

/// `probe`'s round trips through a hub whose only server is the built-in
/// that serves it, placed as `placement`; `agent` is the agent binary.
pub async fn round_trips(
    agent: PathBuf,
    probe: Probe,
    placement: Placement,
) -> anyhow::Result<Vec<Duration>> {
    let workspace = tempfile::tempdir()?;
    std::fs::write(workspace.path().join("a.txt"), "alpha\n")?;
    let (builtin, server_name) = probe.server();
    let mut server = None;
    let transport = match placement {
        Placement::InProcess => Transport::InProcess,
        Placement::Process => Transport::BuiltinProcess,
        Placement::Http => {
            let port = free_port()?;
            server = Some(
                std::process::Command::new(&agent)
                    .args([
                        "builtin",
                        server_name,
                        "--http",
                        &format!("127.0.0.1:{port}"),
                    ])
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
        ..ServerSpec::default_builtin(builtin)
    };
    let mut config = HubConfig::new(workspace.path().to_path_buf(), vec![spec]);
    config.builtin_exe = agent;
    let hub = Hub::start(config).await?;
    let (arguments, expected) = match probe {
        Probe::TodoRead => (json!({}), ""),
        Probe::ReadFile => (json!({"path": "a.txt"}), "alpha"),
    };
    let Value::Object(arguments) = arguments else {
        unreachable!()
    };
    let samples = time_calls(&hub, probe.name(), &arguments, expected).await;
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
    expected: &str,
) -> anyhow::Result<Vec<Duration>> {
    for _ in 0..CALLS / 10 {
        hub.call(name, arguments.clone()).await;
    }
    let mut samples = Vec::with_capacity(CALLS);
    for _ in 0..CALLS {
        let started = Instant::now();
        let answer = hub.call(name, arguments.clone()).await;
        samples.push(started.elapsed());
        anyhow::ensure!(
            answer.contains(expected) && !answer.starts_with("ERROR"),
            "{name} answered {answer}"
        );
    }
    Ok(samples)
}
