//! `nanohermes serve` under pressure, from outside: a task's mode only
//! narrows what its commands may do (a debug task under a goal server
//! writes nothing), a workspace whose setup hangs never stalls a task on
//! another root, and SIGTERM ends the server within a bound however stuck
//! its tasks are.

use std::path::Path;
use std::time::{Duration, Instant};

use rmcp::ServiceExt as _;
use rmcp::model::ElicitationAction;
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::TokioChildProcess;
use serde_json::json;

use super::serve::{HANG_GUARD, Host, Setup, ask, output, run_task};
use crate::support::mock_model::{call, text, tool_calls};

/// How long SIGTERM may take to end the server, stuck tasks and all.
const TERM_BOUND: Duration = Duration::from_secs(5);

/// Starts `command` and connects `host` (2025-11-25).
async fn connect(
    command: tokio::process::Command,
    host: Host,
) -> (RunningService<RoleClient, Host>, u32) {
    let transport = TokioChildProcess::new(command).unwrap();
    let pid = transport.id().unwrap();
    (host.serve(transport).await.unwrap(), pid)
}

/// Whether process `pid` has ended (gone, or a zombie nobody reaped yet).
fn ended(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/status")) {
        Err(_) => true,
        Ok(status) => status
            .lines()
            .any(|l| l.starts_with("State:") && l.contains('Z')),
    }
}

fn mkfifo(path: &Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap();
    assert!(status.success(), "mkfifo {}", path.display());
}

#[tokio::test]
async fn a_debug_task_under_a_goal_server_writes_neither_the_workspace_nor_tmp() {
    // Fails until the shell server honours the read-only grant of Plan and
    // Debug calls (`mcp_tools::CallGrants`, sent by `Policy::call_grants`).
    let outside = tempfile::tempdir().unwrap();
    let escaped = outside.path().join("escaped");
    let command = format!("touch x; touch {}; echo tried", escaped.display());
    let setup = Setup::new(vec![
        tool_calls(&[call("c1", "run_command", json!({"command": command}))]).into(),
        text(&["debugged"]).into(),
        tool_calls(&[call("c2", "run_command", json!({"command": "touch y"}))]).into(),
        text(&["wrote"]).into(),
    ])
    .await;
    let mut server = setup.command("default", &[]);
    server.args(["--mode", "goal"]);
    let host = Host {
        answer: ElicitationAction::Accept,
        ..Host::new()
    };
    let (client, _) = connect(server, host).await;

    let result = ask(
        &client,
        run_task(json!({"task": "debug it", "mode": "debug"})),
    )
    .await;
    assert_eq!(output(&result)["final_text"], "debugged");
    let requests = setup.mock.requests();
    let tool_result = requests[1].messages().last().unwrap()["content"].clone();
    assert!(
        !setup.root().join("x").exists(),
        "a debug task wrote the workspace: {tool_result}"
    );
    assert!(
        !escaped.exists(),
        "a debug task wrote /tmp, which the goal server's sandbox allows: {tool_result}"
    );

    // The same server, the same command, the server's own mode: it writes,
    // so the check above can see a write.
    let result = ask(&client, run_task(json!({"task": "write it"}))).await;
    assert_eq!(output(&result)["final_text"], "wrote");
    assert!(setup.root().join("y").exists());
    let _ = client.cancel().await;
}

#[tokio::test]
async fn hung_workspaces_and_sessions_never_stall_another_task_and_sigterm_still_ends_the_server() {
    // Since guidance and sessions are opened non-blocking, the FIFO
    // workspaces and sessions may run (or fail) rather than hang: enough
    // replies for every task, all the same.
    let setup = Setup::new(
        (0..5)
            .map(|_| text(&["good root answered"]).into())
            .collect(),
    )
    .await;
    // Project guidance that is a FIFO nobody writes: reading it blocks
    // (until guidance is opened non-blocking; the isolation must not
    // depend on that).
    let fifo_guidance = tempfile::tempdir().unwrap();
    mkfifo(&fifo_guidance.path().join("AGENTS.md"));
    let second_fifo = tempfile::tempdir().unwrap();
    mkfifo(&second_fifo.path().join("AGENTS.md"));
    // A trusted project with a required server that never answers.
    let hung_server = tempfile::tempdir().unwrap();
    std::fs::create_dir(hung_server.path().join(".nanohermes")).unwrap();
    std::fs::write(
        hung_server.path().join(".nanohermes/config.toml"),
        "[mcp_servers.stuck]\ncommand = \"sleep\"\nargs = [\"1000\"]\nrequired = true\nstartup_timeout_sec = 1000\n",
    )
    .unwrap();
    let canonical = |dir: &tempfile::TempDir| dir.path().canonicalize().unwrap();
    // Trusted as `nanohermes trust` does it: the level and each file's digest.
    let sources = nanohermes_config::ConfigSources {
        nanohermes_home: Some(setup.home.path().to_path_buf()),
        home: None,
        workspace: canonical(&hung_server),
        env: Default::default(),
        flags: Default::default(),
    };
    nanohermes_config::trust_check(&sources)
        .unwrap()
        .trust_now()
        .unwrap();

    // Two workers, as on a two-core machine: two blocked workers would be
    // the whole runtime.
    let mut server = setup.command("goal", &[("TOKIO_WORKER_THREADS", "2")]);
    for dir in [&fifo_guidance, &second_fifo, &hung_server] {
        server.arg("--root").arg(dir.path());
    }
    let (client, pid) = connect(server, Host::new()).await;

    let mut stuck = Vec::new();
    let mut others = Vec::new();
    for dir in [&hung_server, &fifo_guidance, &second_fifo] {
        let peer = client.peer().clone();
        let workspace = canonical(dir).display().to_string();
        let task = tokio::spawn(async move {
            peer.call_tool(run_task(
                json!({"task": "never starts", "workspace": workspace}),
            ))
            .await
        });
        if stuck.is_empty() {
            stuck.push(task);
        } else {
            others.push(task);
        }
    }
    // Session files a repository planted as FIFOs, in the good root itself.
    let sessions = setup.root().join(".nanohermes/sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    for id in ["planted-a", "planted-b"] {
        mkfifo(&sessions.join(format!("{id}.json")));
        let peer = client.peer().clone();
        others.push(tokio::spawn(async move {
            peer.call_tool(run_task(json!({"task": "resume", "session_id": id})))
                .await
        }));
    }
    // Let the bad setups start (and block) first.
    tokio::time::sleep(Duration::from_millis(500)).await;

    let started = Instant::now();
    let result = tokio::time::timeout(
        Duration::from_secs(30),
        client.call_tool(run_task(json!({"task": "answer"}))),
    )
    .await
    .expect("a task on a good root is not stalled by the bad ones")
    .unwrap();
    assert_eq!(output(&result)["final_text"], "good root answered");
    eprintln!(
        "the good root answered in {} ms beside three hung workspaces and two hung sessions",
        started.elapsed().as_millis()
    );
    for task in &stuck {
        assert!(!task.is_finished(), "a hung workspace's task ended early");
    }

    let sent = Instant::now();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    while !ended(pid) {
        assert!(
            sent.elapsed() < TERM_BOUND,
            "SIGTERM did not end the server within {TERM_BOUND:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    eprintln!(
        "SIGTERM ended the server in {} ms",
        sent.elapsed().as_millis()
    );
    for task in stuck.into_iter().chain(others) {
        let _ = tokio::time::timeout(HANG_GUARD, task).await;
    }
}
