//! `nanohermes serve --store postgres://…` replicas: tasks per minute on
//! one, two and three replicas; the time from a SIGKILL of the replica
//! running a task to that task's end on another; the step-boundary
//! latency of a cancel and of an approval sent through another replica.
//!
//! Needs the PostgreSQL that `scripts/replicas-env` starts (it sets
//! `NANOHERMES_TEST_PG_URL`): `scripts/replicas-env scripts/bench replicas`.
//! Without it the section reports itself skipped. Each measurement has a
//! database of its own; the host talks to each replica directly (the
//! tests put nginx in front; here it would be measured too).

use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, ClientCapabilities, ClientConfig,
    ElicitRequestParams, ElicitResult, ElicitationAction, GetTaskParams, Implementation,
    ProtocolVersion, TaskPayload, UpdateTaskParams,
};
use rmcp::service::{
    ClientLifecycleMode, ClientServiceExt as _, RequestContext, RoleClient, RunningService,
};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientHandler, ErrorData as McpError};
use serde_json::{Value, json};
use tokio::io::AsyncBufReadExt as _;

use crate::bins::Bins;
use crate::mock_model::{MockModel, Reply, Step, call, text, tool_calls};
use crate::stats::{Table, show};

/// Tasks per throughput measurement.
const TASKS: usize = 30;

/// A 2026-07-28 host declaring tasks and form elicitation.
#[derive(Clone)]
struct Host;

impl ClientHandler for Host {
    async fn create_elicitation(
        &self,
        _request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, McpError> {
        Ok(ElicitResult::new(ElicitationAction::Decline))
    }

    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::builder().enable_elicitation().build();
        capabilities.extensions = ClientCapabilities::builder()
            .enable_tasks()
            .build()
            .extensions;
        ClientConfig::new(capabilities, Implementation::new("bench-host", "1.0"))
    }
}

type Client = RunningService<RoleClient, Host>;

/// A database of its own, a root with `workspaces` workspaces, the
/// scripted model and `replicas` replicas.
struct Cluster {
    root: tempfile::TempDir,
    mock: MockModel,
    replicas: Vec<(tokio::process::Child, String, tempfile::TempDir)>,
}

impl Cluster {
    async fn start(
        bins: &Bins,
        base: &str,
        replicas: usize,
        workspaces: usize,
        mode: &str,
        script: Vec<Step>,
    ) -> anyhow::Result<Cluster> {
        let name = format!("nh_bench_{}", std::process::id());
        let (client, connection) = tokio_postgres::connect(base, tokio_postgres::NoTls).await?;
        tokio::spawn(connection);
        client
            .batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
            .await?;
        client
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .await?;
        let db = format!(
            "{}/{name}",
            base.rsplit_once('/').map_or(base, |(head, _)| head)
        );
        let root = tempfile::tempdir()?;
        for i in 0..workspaces {
            let dir = root.path().join(format!("w{i}"));
            std::fs::create_dir(&dir)?;
            std::fs::write(dir.join("a.txt"), "alpha\n")?;
        }
        let mock = MockModel::start_keep_alive(script).await;
        let mut started = Vec::new();
        for _ in 0..replicas {
            started.push(replica(bins, &db, root.path(), &mock, mode).await?);
        }
        Ok(Cluster {
            root,
            mock,
            replicas: started,
        })
    }

    async fn client(&self, i: usize) -> anyhow::Result<Client> {
        Ok(Host
            .serve_with_lifecycle(
                StreamableHttpClientTransport::from_uri(self.replicas[i].1.as_str()),
                ClientLifecycleMode::Discover {
                    preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                },
            )
            .await?)
    }
}

async fn replica(
    bins: &Bins,
    db: &str,
    root: &std::path::Path,
    mock: &MockModel,
    mode: &str,
) -> anyhow::Result<(tokio::process::Child, String, tempfile::TempDir)> {
    let home = tempfile::tempdir()?;
    let mut child = tokio::process::Command::new(bins.agent())
        .args(["serve", "--http", "127.0.0.1:0", "--store", db, "--root"])
        .arg(root)
        .env("NANOHERMES_HOME", home.path())
        .env("OPENAI_BASE_URL", mock.base_url())
        .env("OPENAI_API_KEY", "bench")
        .env("NANOHERMES_MODE", mode)
        .env_remove("NANOHERMES_LOG")
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    let stderr = child
        .stderr
        .take()
        .ok_or_else(|| anyhow::anyhow!("no stderr"))?;
    let mut lines = tokio::io::BufReader::new(stderr).lines();
    let url = loop {
        let Some(line) = lines.next_line().await? else {
            anyhow::bail!("a replica exited before serving");
        };
        if let Some(url) = line.split("serving MCP at ").nth(1) {
            break url.to_owned();
        }
    };
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    Ok((child, url, home))
}

async fn start_task(client: &Client, arguments: Value) -> anyhow::Result<String> {
    let Value::Object(arguments) = arguments else {
        unreachable!()
    };
    match client
        .call_tool_once(CallToolRequestParams::new("run_task").with_arguments(arguments))
        .await?
    {
        CallToolResponse::Task(created) => Ok(created.task.task_id),
        other => anyhow::bail!("expected a task handle, got {other:?}"),
    }
}

async fn wait(
    client: &Client,
    id: &str,
    done: impl Fn(&rmcp::model::DetailedTask) -> bool,
) -> anyhow::Result<rmcp::model::DetailedTask> {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let task = client.get_task(GetTaskParams::new(id)).await?.task;
        if done(&task) {
            return Ok(task);
        }
        anyhow::ensure!(Instant::now() < deadline, "task {id} never got there");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn whole(replies: Vec<Reply>) -> Vec<Step> {
    replies
        .into_iter()
        .map(Reply::in_one_piece)
        .map(Step::from)
        .collect()
}

/// `TASKS` two-step tasks (a `read_file`, then the answer) spread over
/// `n` replicas, one workspace each; tasks per minute, start to last end.
async fn throughput(bins: &Bins, base: &str, n: usize) -> anyhow::Result<f64> {
    let mut script: Vec<Reply> = (0..TASKS)
        .map(|i| {
            tool_calls(&[call(
                &format!("c{i}"),
                "read_file",
                json!({"path": "a.txt"}),
            )])
        })
        .collect();
    script.extend((0..TASKS).map(|_| text(&["Done."])));
    let cluster = Cluster::start(bins, base, n, TASKS, "goal", whole(script)).await?;
    let mut clients = Vec::new();
    for i in 0..n {
        clients.push(cluster.client(i).await?);
    }
    let began = Instant::now();
    let mut ids = Vec::new();
    for i in 0..TASKS {
        let client = &clients[i % n];
        let arguments = json!({"task": format!("task {i}"), "workspace": format!("w{i}")});
        ids.push((i % n, start_task(client, arguments).await?));
    }
    for (replica, id) in &ids {
        let task = wait(&clients[*replica], id, |t| t.status().is_terminal()).await?;
        anyhow::ensure!(
            matches!(task.payload, TaskPayload::Completed { .. }),
            "task {id} ended {task:?}"
        );
    }
    let elapsed = began.elapsed();
    drop(cluster);
    Ok(TASKS as f64 / elapsed.as_secs_f64() * 60.0)
}

/// SIGKILL of the replica running a task → the task's end on the other.
async fn takeover(bins: &Bins, base: &str) -> anyhow::Result<Duration> {
    let script = whole(vec![
        tool_calls(&[call(
            "c1",
            "run_command",
            json!({"command": "touch started; sleep 60"}),
        )]),
        text(&["Done."]),
    ]);
    let mut cluster = Cluster::start(bins, base, 2, 1, "goal", script).await?;
    let (a, b) = (cluster.client(0).await?, cluster.client(1).await?);
    let id = start_task(&a, json!({"task": "work", "workspace": "w0"})).await?;
    let marker = cluster.root.path().join("w0/started");
    while !marker.exists() {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    cluster.replicas[0].0.start_kill()?;
    let killed = Instant::now();
    let _ = cluster.replicas[0].0.wait().await;
    wait(&b, &id, |t| t.status().is_terminal()).await?;
    Ok(killed.elapsed())
}

/// An approval answered through one replica → the runner's next model
/// request; a cancel through one replica of a task waiting for approval
/// on another → its end, seen through a third.
async fn signals(bins: &Bins, base: &str) -> anyhow::Result<(Duration, Duration)> {
    let answered = Arc::new(Mutex::new(None::<Instant>));
    let seen = answered.clone();
    let script = vec![
        tool_calls(&[call("c1", "run_command", json!({"command": "true"}))])
            .in_one_piece()
            .into(),
        text(&["Done."])
            .in_one_piece()
            .when_requested(move || *seen.lock().unwrap() = Some(Instant::now())),
        tool_calls(&[call("c2", "run_command", json!({"command": "true"}))])
            .in_one_piece()
            .into(),
    ];
    let cluster = Cluster::start(bins, base, 3, 2, "default", script).await?;
    let (a, b, c) = (
        cluster.client(0).await?,
        cluster.client(1).await?,
        cluster.client(2).await?,
    );
    let asking = |t: &rmcp::model::DetailedTask| {
        matches!(t.payload, TaskPayload::InputRequired { .. }) || t.status().is_terminal()
    };
    let id = start_task(&a, json!({"task": "approve", "workspace": "w0"})).await?;
    wait(&b, &id, asking).await?;
    let answer = [("approval".to_owned(), json!({"action": "accept"}))].into();
    let sent = Instant::now();
    c.update_task(UpdateTaskParams::new(&id, answer)).await?;
    wait(&a, &id, |t| t.status().is_terminal()).await?;
    let approval = answered
        .lock()
        .unwrap()
        .ok_or_else(|| anyhow::anyhow!("the answer never reached the runner"))?
        - sent;
    let id = start_task(&b, json!({"task": "cancel", "workspace": "w1"})).await?;
    wait(&c, &id, asking).await?;
    let sent = Instant::now();
    a.cancel_task(CancelTaskParams::new(&id)).await?;
    wait(&c, &id, |t| t.status().is_terminal()).await?;
    let cancel = sent.elapsed();
    anyhow::ensure!(cluster.mock.requests().len() == 3, "unexpected requests");
    Ok((approval, cancel))
}

/// The section.
pub async fn figures(bins: &Bins, table: &mut Table) -> anyhow::Result<()> {
    let Ok(base) = std::env::var("NANOHERMES_TEST_PG_URL") else {
        table.row(
            "replicas over PostgreSQL",
            "skipped".into(),
            "run under scripts/replicas-env".into(),
            "",
        );
        return Ok(());
    };
    for n in 1..=3 {
        let per_minute = throughput(bins, &base, n).await?;
        table.row(
            &format!("{TASKS} two-step tasks on {n} replica(s), scripted model: tasks per minute"),
            format!("{per_minute:.0}"),
            String::new(),
            "",
        );
    }
    let took = takeover(bins, &base).await?;
    table.row(
        "SIGKILL of a task's replica → the task's end on another (5 s lease)",
        show(took),
        String::new(),
        "",
    );
    let (approval, cancel) = signals(bins, &base).await?;
    table.row(
        "tasks/update through another replica → the runner's next model request",
        show(approval),
        String::new(),
        "",
    );
    table.row(
        "tasks/cancel of a task waiting for approval → its end, seen on a third replica",
        show(cancel),
        String::new(),
        "",
    );
    Ok(())
}
