//! `nanohermes serve --store postgres://…` replicas with real parts: a
//! PostgreSQL server (started by `scripts/replicas-env`, which sets the
//! variables read here), two or three real `serve --http` processes, each
//! with its own `NANOHERMES_HOME`, over one workspace root, and nginx
//! round-robin in front; the scripted model behind them all, its history
//! checker run on every request. Each test has a database of its own.
//!
//! Also, without PostgreSQL: `Agent::continue_run`, the entry point a
//! takeover continues a stored history with.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, DetailedTask, GetTaskParams,
    ProtocolVersion, TaskPayload, TaskStatus, UpdateTaskParams,
};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt as _, RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Map, Value, json};
use tokio::io::AsyncBufReadExt as _;

use crate::serve::Host;
use crate::support::history::{assert_history_valid, assert_requests_valid};
use crate::support::mock_model::{MockModel, Step, call, text, tool_calls};
use crate::support::{Capture, agent, hub, settings};

mod tls;

const NEEDS: &str = "needs PostgreSQL and nginx: scripts/replicas-env";
/// A deadlock guard, not a speed claim.
const HANG_GUARD: Duration = Duration::from_secs(90);

fn env(name: &str) -> String {
    std::env::var(name)
        .unwrap_or_else(|_| panic!("{name} is unset: run under scripts/replicas-env"))
}

type Client = RunningService<RoleClient, Host>;

/// One replica: the process, its MCP URL and pid.
struct Replica {
    child: tokio::process::Child,
    url: String,
    /// The line naming the store, its schema version and TLS, and the
    /// replica id.
    start_line: String,
    _home: tempfile::TempDir,
}

/// Tests that stop or restart PostgreSQL run alone: the others share the
/// server, and an outage would shift the lease timings they check.
static OUTAGES: std::sync::LazyLock<std::sync::Arc<tokio::sync::RwLock<()>>> =
    std::sync::LazyLock::new(Default::default);

/// A test's turn at the shared PostgreSQL (each guard is held only for
/// its drop, at the end of the test).
enum Turn {
    Shared(#[allow(dead_code)] tokio::sync::OwnedRwLockReadGuard<()>),
    Alone(#[allow(dead_code)] tokio::sync::OwnedRwLockWriteGuard<()>),
}

/// A database, a root with workspaces `w0`…, the scripted model, and
/// replicas over them.
struct Cluster {
    _turn: Turn,
    /// The database's URL, as the test's own connections use it.
    db: String,
    /// The URL replicas started from now on are given (`db` unless a
    /// test changes it).
    store: String,
    root: tempfile::TempDir,
    mock: MockModel,
    replicas: Vec<Replica>,
    nginx: Option<(tokio::process::Child, String, tempfile::TempDir)>,
}

impl Cluster {
    async fn start(replicas: usize, workspaces: usize, mode: &str, script: Vec<Step>) -> Cluster {
        let turn = Turn::Shared(OUTAGES.clone().read_owned().await);
        Cluster::start_in(turn, replicas, workspaces, mode, script).await
    }

    /// [`Cluster::start`] for a test that stops or restarts PostgreSQL.
    async fn start_alone(
        replicas: usize,
        workspaces: usize,
        mode: &str,
        script: Vec<Step>,
    ) -> Cluster {
        let turn = Turn::Alone(OUTAGES.clone().write_owned().await);
        Cluster::start_in(turn, replicas, workspaces, mode, script).await
    }

    async fn start_in(
        turn: Turn,
        replicas: usize,
        workspaces: usize,
        mode: &str,
        script: Vec<Step>,
    ) -> Cluster {
        let base = env("NANOHERMES_TEST_PG_URL");
        let name = format!("nh_{}", nanohermes_session::new_id().replace('-', "_"));
        let (client, connection) = tokio_postgres::connect(&base, tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(connection);
        client
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .await
            .unwrap();
        let db = format!("{}/{name}", base.rsplit_once('/').unwrap().0);
        let root = tempfile::tempdir().unwrap();
        for i in 0..workspaces {
            let dir = root.path().join(format!("w{i}"));
            std::fs::create_dir(&dir).unwrap();
            std::fs::write(dir.join("a.txt"), "alpha\n").unwrap();
        }
        let mut cluster = Cluster {
            _turn: turn,
            store: db.clone(),
            db,
            root,
            mock: MockModel::start_strict(script).await,
            replicas: Vec::new(),
            nginx: None,
        };
        // Started together: each creates or migrates the schema at once,
        // under the store's advisory lock.
        let started =
            futures::future::join_all((0..replicas).map(|i| cluster.replica(mode, i % 2 == 1)))
                .await;
        cluster.replicas = started;
        cluster
    }

    /// A replica told of the store by `--store`, or by `[serve] store` in
    /// its user config (`configured`). A configured replica of a test that
    /// kept the plain URL reaches the store over verified TLS, so every
    /// multi-replica test mixes TLS and plain connections on one store.
    async fn replica(&self, mode: &str, configured: bool) -> Replica {
        let home = tempfile::tempdir().unwrap();
        let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_nanohermes"));
        command.args(["serve", "--http", "127.0.0.1:0"]);
        let store = if configured && self.store == self.db {
            let ca = env("NANOHERMES_TEST_PG_CA");
            format!("{}?sslmode=verify-full&sslrootcert={ca}", self.store)
        } else {
            self.store.clone()
        };
        let tls = store.contains("sslmode=") && !store.contains("sslmode=disable");
        if configured {
            let config = format!("[serve]\nstore = {store:?}\n");
            std::fs::write(home.path().join("config.toml"), config).unwrap();
        } else {
            command.args(["--store", &store]);
        }
        command
            .arg("--root")
            .arg(self.root.path())
            .env("NANOHERMES_HOME", home.path())
            .env("OPENAI_BASE_URL", self.mock.base_url())
            .env("NANOHERMES_MODEL", "served-model")
            .env("NANOHERMES_MODE", mode)
            .env_remove("OPENAI_API_KEY")
            .env_remove("NANOHERMES_AGENT_DEPTH")
            .env_remove("NANOHERMES_LOG")
            .stdin(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = command.spawn().unwrap();
        let mut lines = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
        let mut url = None;
        let mut seen = Vec::new();
        while url.is_none() {
            let line = tokio::time::timeout(HANG_GUARD, lines.next_line())
                .await
                .unwrap()
                .unwrap()
                .unwrap_or_else(|| panic!("the replica exited: {seen:?}"));
            url = line.split("serving MCP at ").nth(1).map(str::to_owned);
            seen.push(line);
        }
        assert!(
            seen[0].contains("store postgres://") && seen[0].contains("replica "),
            "{seen:?}"
        );
        assert_eq!(seen[0].contains("TLS, verified"), tls, "{seen:?}");
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Replica {
            child,
            url: url.unwrap(),
            start_line: seen.swap_remove(0),
            _home: home,
        }
    }

    /// nginx round-robin over every replica; returns its MCP URL.
    async fn nginx(&mut self) -> String {
        let dir = tempfile::tempdir().unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let servers: String = self
            .replicas
            .iter()
            .map(|r| {
                let authority = r.url.trim_start_matches("http://").trim_end_matches("/mcp");
                format!("server {authority};\n")
            })
            .collect();
        let d = dir.path().display();
        let conf = format!(
            "daemon off; master_process off; worker_processes 1; pid {d}/nginx.pid;
             error_log {d}/error.log;
             events {{}}
             http {{
               access_log off;
               client_body_temp_path {d}/body; proxy_temp_path {d}/proxy;
               fastcgi_temp_path {d}/fcgi; uwsgi_temp_path {d}/uwsgi; scgi_temp_path {d}/scgi;
               upstream replicas {{ {servers} }}
               server {{
                 listen 127.0.0.1:{port};
                 location / {{
                   proxy_pass http://replicas;
                   proxy_http_version 1.1;
                   proxy_set_header Host $http_host;
                   proxy_set_header Connection \"\";
                   proxy_buffering off;
                   proxy_read_timeout 300s;
                 }}
               }}
             }}"
        );
        std::fs::write(dir.path().join("nginx.conf"), conf).unwrap();
        let child = tokio::process::Command::new(env("NANOHERMES_TEST_NGINX"))
            .arg("-p")
            .arg(dir.path())
            .arg("-c")
            .arg(dir.path().join("nginx.conf"))
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let url = format!("http://127.0.0.1:{port}/mcp");
        until("nginx listening", || {
            std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
        })
        .await;
        self.nginx = Some((child, url.clone(), dir));
        url
    }

    fn workspace(&self, i: usize) -> PathBuf {
        self.root
            .path()
            .canonicalize()
            .unwrap()
            .join(format!("w{i}"))
    }

    async fn sql(&self) -> tokio_postgres::Client {
        let (client, connection) = tokio_postgres::connect(&self.db, tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(connection);
        client
    }

    /// The stored history of session `id`.
    async fn session(&self, id: &str) -> Vec<Value> {
        self.sql()
            .await
            .query(
                "SELECT message FROM nh_messages WHERE session_id = $1 ORDER BY idx",
                &[&id],
            )
            .await
            .unwrap()
            .iter()
            .map(|row| serde_json::from_str(row.get::<_, &str>(0)).unwrap())
            .collect()
    }
}

/// Stops, starts or restarts (fast) the PostgreSQL of
/// `scripts/replicas-env`.
fn postgres(what: &str) {
    let command = env("NANOHERMES_TEST_PG_RESTART").replace(" restart", &format!(" {what}"));
    let status = std::process::Command::new("sh")
        .args(["-c", &command])
        .status()
        .unwrap();
    assert!(status.success(), "PostgreSQL {what}: {status:?}");
}

/// A 2026-07-28 host over HTTP at `url`, presenting `bearer` if given.
async fn connect(url: &str, bearer: Option<&str>) -> Client {
    let mut config = StreamableHttpClientTransportConfig::with_uri(url);
    if let Some(bearer) = bearer {
        config = config.auth_header(bearer);
    }
    let host = Host {
        tasks: true,
        ..Host::new()
    };
    host.serve_with_lifecycle(
        StreamableHttpClientTransport::from_config(config),
        ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        },
    )
    .await
    .unwrap()
}

async fn until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + HANG_GUARD;
    while !done() {
        assert!(Instant::now() < deadline, "never: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// `run_task` as a task; its handle.
async fn start_task(client: &Client, arguments: Value) -> String {
    let Value::Object(arguments) = arguments else {
        unreachable!()
    };
    let params = CallToolRequestParams::new("run_task").with_arguments(arguments);
    match client.call_tool_once(params).await.unwrap() {
        CallToolResponse::Task(created) => created.task.task_id,
        other => panic!("expected a task handle, got {other:?}"),
    }
}

/// Polls `tasks/get` through `client` until `done` holds.
async fn poll_until(
    client: &Client,
    id: &str,
    done: impl Fn(&DetailedTask) -> bool,
) -> DetailedTask {
    let deadline = Instant::now() + HANG_GUARD;
    loop {
        let task = client.get_task(GetTaskParams::new(id)).await.unwrap().task;
        if done(&task) {
            return task;
        }
        assert!(Instant::now() < deadline, "task {id} stuck at {task:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn ended(task: &DetailedTask) -> bool {
    task.status().is_terminal()
}

fn output(task: &DetailedTask) -> Map<String, Value> {
    match &task.payload {
        TaskPayload::Completed { result } => result["structuredContent"]
            .as_object()
            .cloned()
            .unwrap_or_else(|| panic!("no structuredContent in {result:?}")),
        other => panic!("expected a completed task, got {other:?}"),
    }
}

fn assert_session_valid(history: &[Value]) {
    let mut messages = vec![json!({"role": "system", "content": "s"})];
    messages.extend_from_slice(history);
    assert_history_valid(&messages);
}

#[tokio::test]
#[ignore = "needs PostgreSQL and nginx: scripts/replicas-env"]
async fn a_task_created_on_one_replica_is_polled_approved_and_cancelled_through_the_others() {
    let _ = NEEDS;
    let answered = std::sync::Arc::new(std::sync::Mutex::new(None::<Instant>));
    let seen = answered.clone();
    let cluster = Cluster::start(
        3,
        2,
        "default",
        vec![
            tool_calls(&[call(
                "c1",
                "run_command",
                json!({"command": "echo approved-x"}),
            )])
            .into(),
            text(&["finished"]).when_requested(move || {
                *seen.lock().unwrap() = Some(Instant::now());
            }),
            tool_calls(&[call(
                "c2",
                "run_command",
                json!({"command": "echo never-run"}),
            )])
            .into(),
        ],
    )
    .await;
    let [a, b, c] = [0, 1, 2].map(|i| cluster.replicas[i].url.clone());
    let (a, b, c) = (
        connect(&a, Some("alice")).await,
        connect(&b, Some("alice")).await,
        connect(&c, Some("alice")).await,
    );

    // Created on a, asked through b, answered through c, read on a.
    let id = start_task(&a, json!({"task": "run it", "workspace": "w0"})).await;
    let waiting = poll_until(&b, &id, |t| {
        matches!(t.payload, TaskPayload::InputRequired { .. }) || ended(t)
    })
    .await;
    assert_eq!(waiting.status(), TaskStatus::InputRequired, "{waiting:?}");
    let eve = connect(&cluster.replicas[1].url, Some("eve")).await;
    let err = eve.get_task(GetTaskParams::new(&id)).await.unwrap_err();
    assert!(err.to_string().contains("no task"), "{err}");
    let answer = [("approval".to_owned(), json!({"action": "accept"}))].into();
    let err = eve
        .update_task(UpdateTaskParams::new(&id, answer))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("no task"), "{err}");
    let answer = [("approval".to_owned(), json!({"action": "accept"}))].into();
    let sent = Instant::now();
    c.update_task(UpdateTaskParams::new(&id, answer))
        .await
        .unwrap();
    let done = poll_until(&a, &id, ended).await;
    let out = output(&done);
    assert_eq!(out["final_text"], "finished", "{out:?}");
    let approval_latency = answered.lock().unwrap().unwrap() - sent;
    eprintln!("figure: approval answer to the runner's next request: {approval_latency:?}");
    let requests = cluster.mock.requests();
    let result = requests[1].messages().last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(result.contains("approved-x"), "{result}");
    assert_session_valid(&cluster.session(out["session_id"].as_str().unwrap()).await);

    // Created on b, cancelled through a while it waits, seen on c.
    let id = start_task(&b, json!({"task": "try it", "workspace": "w1"})).await;
    poll_until(&c, &id, |t| {
        matches!(t.payload, TaskPayload::InputRequired { .. })
    })
    .await;
    let err = eve
        .cancel_task(CancelTaskParams::new(&id))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("no task"), "{err}");
    let sent = Instant::now();
    a.cancel_task(CancelTaskParams::new(&id)).await.unwrap();
    let cancelled = poll_until(&c, &id, ended).await;
    eprintln!(
        "figure: cancel to the task's end, seen through another replica: {:?}",
        sent.elapsed()
    );
    assert_eq!(cancelled.status(), TaskStatus::Cancelled, "{cancelled:?}");
    let requests = cluster.mock.requests();
    assert_eq!(requests.len(), 3, "the cancelled task asks nothing more");
    assert_requests_valid(&requests);
    let err = b.cancel_task(CancelTaskParams::new(&id)).await.unwrap_err();
    assert!(err.to_string().contains("already ended"), "{err}");
}

#[tokio::test]
#[ignore = "needs PostgreSQL and nginx: scripts/replicas-env"]
async fn a_replica_killed_mid_task_is_taken_over_and_the_host_sees_one_task_finish() {
    let started = std::sync::Arc::new(std::sync::Mutex::new(None::<Instant>));
    let seen = started.clone();
    let mut cluster = Cluster::start(
        2,
        1,
        "goal",
        vec![
            tool_calls(&[call(
                "c1",
                "run_command",
                json!({"command": "echo first > first.txt; sleep 30"}),
            )])
            .when_requested(move || *seen.lock().unwrap() = Some(Instant::now())),
            tool_calls(&[call(
                "c2",
                "run_command",
                json!({"command": "echo after-takeover"}),
            )])
            .into(),
            text(&["done"]).into(),
        ],
    )
    .await;
    let a = connect(&cluster.replicas[0].url, None).await;
    let b = connect(&cluster.replicas[1].url, None).await;
    let id = start_task(&a, json!({"task": "work", "workspace": "w0"})).await;
    let marker = cluster.workspace(0).join("first.txt");
    until("the first step's command", || marker.exists()).await;
    cluster.replicas[0].child.start_kill().unwrap();
    let killed = Instant::now();
    cluster.replicas[0].child.wait().await.unwrap();
    let task = poll_until(&b, &id, ended).await;
    eprintln!(
        "figure: takeover after SIGKILL, kill to the task's end: {:?}",
        killed.elapsed()
    );
    let out = output(&task);
    assert_eq!(out["final_text"], "done", "{out:?}");
    assert_eq!(out["status"], "completed");

    let requests = cluster.mock.requests();
    assert_eq!(requests.len(), 3);
    assert_requests_valid(&requests);
    // The step in flight was lost: the takeover asked again from the task.
    assert_eq!(requests[1].messages().len(), requests[0].messages().len());
    let history = cluster.session(out["session_id"].as_str().unwrap()).await;
    assert_session_valid(&history);
    assert_eq!(history.len(), 4, "{history:?}");
    let rows = cluster
        .sql()
        .await
        .query("SELECT status, takeovers FROM nh_tasks", &[])
        .await
        .unwrap();
    assert_eq!(rows.len(), 1, "one task");
    assert_eq!(rows[0].get::<_, &str>(0), "completed");
    assert_eq!(rows[0].get::<_, i32>(1), 1);
}

#[tokio::test]
#[ignore = "needs PostgreSQL and nginx: scripts/replicas-env"]
async fn a_question_open_when_its_replica_died_is_asked_again_by_the_one_that_took_over() {
    let mut cluster = Cluster::start(
        2,
        1,
        "default",
        vec![
            tool_calls(&[call(
                "c1",
                "run_command",
                json!({"command": "echo first-ask"}),
            )])
            .into(),
            tool_calls(&[call(
                "c2",
                "run_command",
                json!({"command": "echo second-ask"}),
            )])
            .into(),
            text(&["done"]).into(),
        ],
    )
    .await;
    let a = connect(&cluster.replicas[0].url, Some("alice")).await;
    let b = connect(&cluster.replicas[1].url, Some("alice")).await;
    let id = start_task(&a, json!({"task": "work", "workspace": "w0"})).await;
    let asking =
        |t: &DetailedTask| matches!(t.payload, TaskPayload::InputRequired { .. }) || ended(t);
    poll_until(&b, &id, asking).await;
    cluster.replicas[0].child.start_kill().unwrap();
    cluster.replicas[0].child.wait().await.unwrap();
    // The question died with its replica; the takeover asks its own.
    let task = poll_until(&b, &id, |t| cluster.mock.requests().len() == 2 && asking(t)).await;
    let TaskPayload::InputRequired { input_requests } = &task.payload else {
        panic!("{task:?}")
    };
    let question = serde_json::to_string(&input_requests["approval"]).unwrap();
    assert!(question.contains("second-ask"), "{question}");
    let answer = [("approval".to_owned(), json!({"action": "accept"}))].into();
    b.update_task(UpdateTaskParams::new(&id, answer))
        .await
        .unwrap();
    let out = output(&poll_until(&b, &id, ended).await);
    assert_eq!(out["final_text"], "done", "{out:?}");
    let requests = cluster.mock.requests();
    assert_eq!(requests.len(), 3);
    assert_requests_valid(&requests);
    let result = requests[2].messages().last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(result.contains("second-ask"), "{result}");
}

#[tokio::test]
#[ignore = "needs PostgreSQL and nginx: scripts/replicas-env"]
async fn postgres_restarted_mid_task_loses_nothing() {
    let cluster = Cluster::start_alone(
        2,
        1,
        "goal",
        vec![
            tool_calls(&[call(
                "c1",
                "run_command",
                json!({"command": "echo one > one.txt; sleep 3"}),
            )])
            .into(),
            tool_calls(&[call("c2", "run_command", json!({"command": "echo two"}))]).into(),
            text(&["done"]).into(),
        ],
    )
    .await;
    let a = connect(&cluster.replicas[0].url, None).await;
    let b = connect(&cluster.replicas[1].url, None).await;
    let id = start_task(&a, json!({"task": "work", "workspace": "w0"})).await;
    let marker = cluster.workspace(0).join("one.txt");
    until("the first step's command", || marker.exists()).await;
    postgres("restart");
    let task = poll_until(&b, &id, ended).await;
    let out = output(&task);
    assert_eq!(out["final_text"], "done", "{out:?}");
    let requests = cluster.mock.requests();
    assert_eq!(requests.len(), 3, "no step was run twice");
    assert_requests_valid(&requests);
    let history = cluster.session(out["session_id"].as_str().unwrap()).await;
    assert_session_valid(&history);
    assert_eq!(history.len(), 6, "every step kept: {history:?}");
}

#[tokio::test]
#[ignore = "needs PostgreSQL and nginx: scripts/replicas-env"]
async fn while_postgres_is_down_ready_says_so_and_the_run_waits_then_finishes() {
    let cluster = Cluster::start_alone(
        1,
        1,
        "goal",
        vec![
            tool_calls(&[call(
                "c1",
                "run_command",
                json!({"command": "touch one.txt; sleep 1"}),
            )])
            .into(),
            text(&["done"]).into(),
        ],
    )
    .await;
    let base = cluster.replicas[0].url.trim_end_matches("/mcp").to_owned();
    let http = reqwest::Client::new();
    let probe = async |path: &str| {
        http.get(format!("{base}/{path}"))
            .send()
            .await
            .unwrap()
            .status()
            .as_u16()
    };
    assert_eq!(probe("ready").await, 200);
    let a = connect(&cluster.replicas[0].url, None).await;
    let id = start_task(&a, json!({"task": "work", "workspace": "w0"})).await;
    let marker = cluster.workspace(0).join("one.txt");
    until("the first step's command", || marker.exists()).await;
    postgres("stop");
    // The step ends while the store is down: its write waits for it.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(probe("ready").await, 503);
    assert_eq!(probe("health").await, 200);
    postgres("start");
    assert_eq!(probe("ready").await, 200);
    let task = poll_until(&a, &id, ended).await;
    let out = output(&task);
    assert_eq!(out["final_text"], "done", "{out:?}");
    let history = cluster.session(out["session_id"].as_str().unwrap()).await;
    assert_session_valid(&history);
    assert_eq!(history.len(), 4, "every step kept: {history:?}");
    assert_eq!(cluster.mock.requests().len(), 2);
}

#[tokio::test]
#[ignore = "needs PostgreSQL and nginx: scripts/replicas-env"]
async fn twenty_concurrent_tasks_across_three_replicas_behind_nginx_keep_valid_histories() {
    const TASKS: usize = 20;
    let mut script: Vec<Step> = Vec::new();
    for i in 0..TASKS {
        let id = format!("c{i}");
        script.push(
            tool_calls(&[call(
                &id,
                "run_command",
                json!({"command": format!("echo {i}")}),
            )])
            .into(),
        );
    }
    for _ in 0..TASKS {
        script.push(text(&["done"]).into());
    }
    let mut cluster = Cluster::start(3, TASKS, "goal", script).await;
    let url = cluster.nginx().await;
    let client = connect(&url, None).await;
    let began = Instant::now();
    let mut ids = Vec::new();
    for i in 0..TASKS {
        ids.push(
            start_task(
                &client,
                json!({"task": format!("task {i}"), "workspace": format!("w{i}")}),
            )
            .await,
        );
    }
    let mut sessions = Vec::new();
    for id in &ids {
        let task = poll_until(&client, id, ended).await;
        let out = output(&task);
        assert_eq!(out["final_text"], "done", "{out:?}");
        sessions.push(out["session_id"].as_str().unwrap().to_owned());
    }
    eprintln!(
        "figure: {TASKS} tasks on 3 replicas behind nginx: {:?}",
        began.elapsed()
    );
    assert_requests_valid(&cluster.mock.requests());
    for session in &sessions {
        let history = cluster.session(session).await;
        assert_session_valid(&history);
        assert_eq!(history.last().unwrap()["content"], "done");
    }
    let runners = cluster
        .sql()
        .await
        .query(
            "SELECT count(*) FROM nh_tasks WHERE status = 'completed'",
            &[],
        )
        .await
        .unwrap();
    assert_eq!(runners[0].get::<_, i64>(0), TASKS as i64);
}

/// The held-out check in one run: tasks spread by nginx over three
/// replicas, one replica killed and the database restarted while every
/// task is mid-step; every task ends once, completed, with a valid
/// history, and no row is left working.
#[tokio::test]
#[ignore = "needs PostgreSQL and nginx: scripts/replicas-env"]
async fn a_killed_replica_and_a_restarted_database_in_one_run_lose_no_task() {
    const TASKS: usize = 6;
    let mut script: Vec<Step> = (0..TASKS)
        .map(|i| {
            tool_calls(&[call(
                &format!("c{i}"),
                "run_command",
                json!({"command": "echo started > mark; sleep 2"}),
            )])
            .into()
        })
        .collect();
    // Enough answers for every task's last step, and for the steps the
    // takeover runs again.
    script.extend((0..2 * TASKS).map(|_| Step::from(text(&["done"]))));
    let mut cluster = Cluster::start_alone(3, TASKS, "goal", script).await;
    let url = cluster.nginx().await;
    let client = connect(&url, None).await;
    let mut ids = Vec::new();
    for i in 0..TASKS {
        let arguments = json!({"task": format!("task {i}"), "workspace": format!("w{i}")});
        ids.push(start_task(&client, arguments).await);
    }
    let marks: Vec<_> = (0..TASKS)
        .map(|i| cluster.workspace(i).join("mark"))
        .collect();
    until("every task's first step", || {
        marks.iter().all(|m| m.exists())
    })
    .await;
    // The replica running the most tasks dies.
    let busiest = cluster
        .sql()
        .await
        .query_one(
            "SELECT lease_owner, count(*) FROM nh_tasks WHERE status = 'working'
             GROUP BY lease_owner ORDER BY 2 DESC LIMIT 1",
            &[],
        )
        .await
        .unwrap();
    let (owner, orphans): (String, i64) = (busiest.get(0), busiest.get(1));
    let victim = cluster
        .replicas
        .iter_mut()
        .find(|r| r.start_line.ends_with(&format!("replica {owner}")))
        .unwrap_or_else(|| panic!("no replica {owner}"));
    victim.child.start_kill().unwrap();
    victim.child.wait().await.unwrap();
    postgres("restart");

    for id in &ids {
        let out = output(&poll_until(&client, id, ended).await);
        assert_eq!(out["final_text"], "done", "{out:?}");
        let history = cluster.session(out["session_id"].as_str().unwrap()).await;
        assert_session_valid(&history);
        assert_eq!(history.last().unwrap()["content"], "done");
    }
    assert_requests_valid(&cluster.mock.requests());
    let rows = cluster
        .sql()
        .await
        .query("SELECT status, count(*) FROM nh_tasks GROUP BY status", &[])
        .await
        .unwrap();
    let counts: Vec<(String, i64)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
    assert_eq!(counts, [("completed".to_owned(), TASKS as i64)]);
    let taken_over = cluster
        .sql()
        .await
        .query_one("SELECT count(*) FROM nh_tasks WHERE takeovers > 0", &[])
        .await
        .unwrap();
    assert_eq!(
        taken_over.get::<_, i64>(0),
        orphans,
        "the dead replica's tasks"
    );
}

#[tokio::test]
#[ignore = "needs PostgreSQL and nginx: scripts/replicas-env"]
async fn a_second_task_on_a_busy_workspace_is_refused_on_every_replica() {
    let cluster = Cluster::start(
        2,
        2,
        "goal",
        vec![
            tool_calls(&[call(
                "c1",
                "run_command",
                json!({"command": "touch busy.txt; sleep 3"}),
            )])
            .into(),
            // The other workspace's task asks while the first one's
            // command still runs.
            text(&["other done"]).into(),
            text(&["first done"]).into(),
            text(&["again done"]).into(),
        ],
    )
    .await;
    let a = connect(&cluster.replicas[0].url, None).await;
    let b = connect(&cluster.replicas[1].url, None).await;
    let first = start_task(&a, json!({"task": "slow", "workspace": "w0"})).await;
    let marker = cluster.workspace(0).join("busy.txt");
    until("the first task's command", || marker.exists()).await;
    // Through b, the same workspace is refused as the task's result.
    let Value::Object(arguments) = json!({"task": "second", "workspace": "w0"}) else {
        unreachable!()
    };
    let refused = match b
        .call_tool_once(CallToolRequestParams::new("run_task").with_arguments(arguments))
        .await
        .unwrap()
    {
        CallToolResponse::Complete(result) => result,
        other => panic!("expected a refusal, got {other:?}"),
    };
    assert_eq!(refused.is_error, Some(true));
    let text = serde_json::to_string(&refused.content).unwrap();
    assert!(text.contains("has a task running"), "{text}");
    // Another workspace is free.
    let other = start_task(&b, json!({"task": "other", "workspace": "w1"})).await;
    assert_eq!(
        output(&poll_until(&a, &other, ended).await)["final_text"],
        "other done"
    );
    assert_eq!(
        output(&poll_until(&b, &first, ended).await)["final_text"],
        "first done"
    );
    // Free again once the first ended.
    let again = start_task(&b, json!({"task": "again", "workspace": "w0"})).await;
    assert_eq!(
        output(&poll_until(&a, &again, ended).await)["final_text"],
        "again done"
    );
    assert_requests_valid(&cluster.mock.requests());
}

#[tokio::test]
#[ignore = "needs PostgreSQL and nginx: scripts/replicas-env"]
async fn sigterm_lets_the_step_end_gives_the_lease_back_and_another_replica_continues() {
    let mut cluster = Cluster::start(
        2,
        1,
        "goal",
        vec![
            tool_calls(&[call(
                "c1",
                "run_command",
                json!({"command": "touch started.txt; sleep 2; echo step-one-done"}),
            )])
            .into(),
            text(&["done"]).into(),
        ],
    )
    .await;
    let http = reqwest::Client::new();
    for replica in &cluster.replicas {
        let base = replica.url.trim_end_matches("/mcp");
        for probe in ["health", "ready"] {
            let response = http.get(format!("{base}/{probe}")).send().await.unwrap();
            assert_eq!(response.status(), 200, "/{probe}");
        }
    }
    let a = connect(&cluster.replicas[0].url, None).await;
    let b = connect(&cluster.replicas[1].url, None).await;
    let id = start_task(&a, json!({"task": "work", "workspace": "w0"})).await;
    let marker = cluster.workspace(0).join("started.txt");
    until("the first step's command", || marker.exists()).await;
    let pid = cluster.replicas[0].child.id().unwrap();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let status = tokio::time::timeout(HANG_GUARD, cluster.replicas[0].child.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success(), "{status:?}");
    let task = poll_until(&b, &id, ended).await;
    let out = output(&task);
    assert_eq!(out["final_text"], "done", "{out:?}");
    let history = cluster.session(out["session_id"].as_str().unwrap()).await;
    assert_session_valid(&history);
    // The step that was running when SIGTERM came was finished and kept.
    assert_eq!(history.len(), 4, "{history:?}");
    assert!(
        history[2]["content"]
            .as_str()
            .unwrap()
            .contains("step-one-done")
    );
    assert_requests_valid(&cluster.mock.requests());
}

#[tokio::test]
#[ignore = "needs PostgreSQL and nginx: scripts/replicas-env"]
async fn a_stalled_replica_that_lost_its_lease_writes_nothing_after_the_takeover() {
    let mut cluster = Cluster::start(
        2,
        1,
        "goal",
        vec![
            tool_calls(&[call(
                "c1",
                "run_command",
                json!({"command": "touch started.txt; sleep 9; echo stale"}),
            )])
            .into(),
            text(&["done by the other replica"]).into(),
        ],
    )
    .await;
    let a = connect(&cluster.replicas[0].url, None).await;
    let b = connect(&cluster.replicas[1].url, None).await;
    let id = start_task(&a, json!({"task": "work", "workspace": "w0"})).await;
    let marker = cluster.workspace(0).join("started.txt");
    until("the first step's command", || marker.exists()).await;
    let pid = nix::unistd::Pid::from_raw(cluster.replicas[0].child.id().unwrap() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGSTOP).unwrap();
    let task = poll_until(&b, &id, ended).await;
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGCONT).unwrap();
    let out = output(&task);
    assert_eq!(out["final_text"], "done by the other replica");
    let session = out["session_id"].as_str().unwrap().to_owned();
    let before = cluster.session(&session).await;
    // The stalled replica's command ends after the takeover finished; its
    // step boundary finds the lease gone and writes nothing.
    tokio::time::sleep(Duration::from_secs(10)).await;
    assert_eq!(cluster.session(&session).await, before);
    assert_session_valid(&before);
    let again = b.get_task(GetTaskParams::new(&id)).await.unwrap().task;
    assert_eq!(output(&again)["final_text"], "done by the other replica");
    assert_eq!(
        cluster.mock.requests().len(),
        2,
        "the stale run asked nothing more"
    );
    let _ = cluster.replicas[0].child.start_kill();
}

/// The store's password comes from the environment, never the command
/// line: a URL carrying one is refused before anything connects.
#[test]
fn a_store_url_with_a_password_or_of_another_kind_is_refused() {
    let home = tempfile::tempdir().unwrap();
    for (store, says) in [
        (
            "postgres://me:secret@127.0.0.1:1/db",
            "put no password in the URL",
        ),
        ("mysql://me:secret@127.0.0.1/db", "not a PostgreSQL URL"),
    ] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_nanohermes"))
            .args(["serve", "--http", "127.0.0.1:0", "--store", store])
            .env("NANOHERMES_HOME", home.path())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(says), "{stderr}");
        assert!(!stderr.contains("secret"), "{stderr}");
    }
}

/// What a takeover relies on: a stored history continued without a new
/// user message asks the model with exactly that history.
#[tokio::test]
async fn continue_run_asks_the_model_with_the_stored_history_and_adds_no_message() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockModel::start(vec![text(&["picked up"]).into()]).await;
    let history = vec![
        json!({"role": "user", "content": "do it"}),
        json!({"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "list_dir", "arguments": "{}"}}]}),
        json!({"role": "tool", "tool_call_id": "call_1", "content": "a.txt"}),
    ];
    let mut agent = agent(settings(&mock), hub(dir.path(), vec![]).await);
    let system = agent.messages()[0].clone();
    let mut resumed = nanohermes_core::agent::Agent::resume(
        nanohermes_llm::Client::new(settings(&mock)).unwrap(),
        agent.into_tools(),
        system["content"].as_str().unwrap(),
        nanohermes_core::agent::AgentConfig::default(),
        history.clone(),
    );
    let summary = resumed.continue_run(&mut Capture::default()).await.unwrap();
    assert_eq!(summary.final_text, "picked up");
    assert_eq!(summary.iterations, 1);
    let requests = mock.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].messages()[1..], history[..]);
    assert_eq!(resumed.messages().len(), 1 + history.len() + 1);
    agent = resumed;
    // A history that ends in an answer is done: nothing is asked.
    let again = agent.continue_run(&mut Capture::default()).await.unwrap();
    assert_eq!(again.final_text, "picked up");
    assert_eq!(again.iterations, 0);
    assert_eq!(mock.requests().len(), 1);
}
