//! `nanohermes serve`: process start → the host sees the first `run_task`
//! progress notification, and → the task's result.

use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation,
    ProgressNotificationParam,
};
use rmcp::service::{NotificationContext, RoleClient};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, ServiceExt as _};
use serde_json::json;

use crate::agent_runs::four_steps;
use crate::bins::Bins;
use crate::mock_model::MockModel;

/// The host: notes when the first progress notification arrived.
#[derive(Clone, Default)]
struct Host {
    first_progress: Arc<Mutex<Option<Instant>>>,
}

impl ClientHandler for Host {
    async fn on_progress(
        &self,
        _params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.first_progress
            .lock()
            .unwrap()
            .get_or_insert_with(Instant::now);
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("bench-host", "1.0"),
        )
    }
}

/// One serve start: (→ first progress, → result).
pub async fn serve_to_first_progress(bins: &Bins) -> anyhow::Result<(Duration, Duration)> {
    let root = tempfile::tempdir()?;
    let home = tempfile::tempdir()?;
    std::fs::write(root.path().join("README.md"), "# bench\n")?;
    let mock = MockModel::start_keep_alive(four_steps()).await;
    let mut command = tokio::process::Command::new(bins.agent());
    command
        .arg("serve")
        .arg("--root")
        .arg(root.path())
        .env("OPENAI_BASE_URL", mock.base_url())
        .env("OPENAI_API_KEY", "bench")
        .env("NANOHERMES_MODE", "goal")
        .env("NANOHERMES_HOME", home.path())
        .env_remove("NANOHERMES_LOG")
        .stderr(Stdio::null());
    let host = Host::default();
    let start = Instant::now();
    let client = host.clone().serve(TokioChildProcess::new(command)?).await?;
    let serde_json::Value::Object(arguments) = json!({"task": "do the scripted task"}) else {
        unreachable!()
    };
    let result = client
        .call_tool(CallToolRequestParams::new("run_task").with_arguments(arguments))
        .await?;
    let done = start.elapsed();
    anyhow::ensure!(result.is_error != Some(true), "run_task failed: {result:?}");
    let first = host
        .first_progress
        .lock()
        .unwrap()
        .ok_or_else(|| anyhow::anyhow!("no progress notification arrived"))?;
    let _ = client.cancel().await;
    Ok((first.duration_since(start), done))
}
