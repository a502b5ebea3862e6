//! The trust boundary through the real `nanohermes-shell` binary over
//! stdio, as the agent drives it: commands cannot write what decides what
//! runs later; a call whose `_meta` grants only the read-only sandbox runs
//! in it (and `_meta` never widens); network off stops UDP; and nothing a
//! command started survives a SIGKILL of the server, even with `setsid`,
//! `env -i` and double forks.

mod common;

use std::path::{Path, PathBuf};
use std::process::Stdio;

use common::{eventually, unique_sleep, with_token};
use mcp_tools::CallGrants;
use rmcp::model::{CallToolRequestParams, MetaObject, RequestMetaObject};
use rmcp::service::RunningService;
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Map, Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_nanohermes-shell");

type Client = RunningService<RoleClient, ()>;

/// A workspace under the target directory (the system temp directory is
/// writable in workspace-write) and an outside directory under `$HOME`.
fn dirs() -> (tempfile::TempDir, PathBuf, tempfile::TempDir) {
    let base = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let root = base.path().canonicalize().unwrap().join("ws");
    std::fs::create_dir(&root).unwrap();
    let home = std::env::var_os("HOME").map(PathBuf::from).unwrap();
    let outside = tempfile::Builder::new()
        .prefix("nanohermes-attack-")
        .tempdir_in(home)
        .unwrap();
    (base, root, outside)
}

/// The binary serving `root` with `flags`, and its pid.
async fn start(root: &Path, flags: &[&str]) -> (Client, u32) {
    let transport = TokioChildProcess::new(tokio::process::Command::new(BIN).configure(|c| {
        c.arg("--root").arg(root).args(flags);
    }))
    .unwrap();
    let pid = transport.id().unwrap();
    (().serve(transport).await.unwrap(), pid)
}

/// Calls `tool` with `args` and `meta` as the request's `_meta`.
async fn call(client: &Client, tool: &str, args: Value, meta: Map<String, Value>) -> String {
    let Value::Object(args) = args else { panic!() };
    let mut params = CallToolRequestParams::new(tool.to_string()).with_arguments(args);
    if !meta.is_empty() {
        params.meta = Some(RequestMetaObject(MetaObject(meta)));
    }
    let result = client.call_tool(params).await.unwrap();
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

async fn run(client: &Client, command: &str) -> String {
    call(
        client,
        "run_command",
        json!({"command": command}),
        Map::new(),
    )
    .await
}

fn read_only_meta() -> Map<String, Value> {
    CallGrants {
        read_only_sandbox: true,
        protected_write: false,
    }
    .to_meta()
}

fn git(dir: &Path, args: &[&str]) {
    let status = std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "git {args:?}");
}

#[tokio::test]
async fn commands_cannot_write_what_decides_what_runs_later() {
    let (_base, root, outside) = dirs();
    git(&root, &["init", "-q"]);
    git(&root, &["config", "core.hooksPath", ".husky"]);
    for dir in [
        ".husky",
        ".git/modules/m",
        "nested",
        "sub/.nanohermes",
        "pkg",
    ] {
        std::fs::create_dir_all(root.join(dir)).unwrap();
    }
    std::fs::write(root.join(".git/modules/m/config"), "[core]\n").unwrap();
    git(&root.join("nested"), &["init", "-q"]);
    std::fs::write(root.join("sub/.nanohermes/config.toml"), "a = 1\n").unwrap();
    std::fs::write(root.join("pkg/hooks.json"), "{}\n").unwrap();
    std::fs::write(root.join(".mcp.json"), "{}\n").unwrap();
    let (client, _) = start(&root, &[]).await;
    for (attack, target) in [
        ("echo /x > .git/commondir", ".git/commondir"),
        ("echo x > .git/config.worktree", ".git/config.worktree"),
        (
            "echo '* filter=x' > .git/info/attributes",
            ".git/info/attributes",
        ),
        ("echo x > .git/modules/m/config", ".git/modules/m/config"),
        ("echo x > .git/objects/x", ".git/objects/x"),
        ("echo x > .husky/pre-commit", ".husky/pre-commit"),
        ("echo x > nested/.git/config", "nested/.git/config"),
        (
            "echo x > sub/.nanohermes/config.toml",
            "sub/.nanohermes/config.toml",
        ),
        ("echo x > pkg/hooks.json", "pkg/hooks.json"),
        ("echo x > .mcp.json", ".mcp.json"),
    ] {
        let text = run(&client, attack).await;
        assert!(
            text.contains("Read-only file system") && !text.starts_with("exit code: 0"),
            "{attack}: {text}"
        );
        let content = std::fs::read_to_string(root.join(target)).unwrap_or_default();
        assert_ne!(content, "x\n", "{attack} wrote {target}");
        assert_ne!(content, "/x\n", "{attack} wrote {target}");
    }
    let text = run(&client, "echo x > .git/HEAD").await;
    assert!(text.contains("use the git_commit tool"), "{text}");
    let text = run(&client, "echo ok > file && cat file").await;
    assert!(
        text.starts_with("exit code: 0") && text.ends_with("ok\n"),
        "{text}"
    );
    let target = outside.path().join("f");
    run(&client, &format!("echo x > '{}'", target.display())).await;
    assert!(!target.exists());
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_read_only_grant_in_meta_narrows_run_command_and_task_start() {
    let (_base, root, _outside) = dirs();
    let (client, _) = start(&root, &[]).await;
    let write = json!({"command": "echo x > granted && echo wrote"});
    let text = call(&client, "run_command", write.clone(), read_only_meta()).await;
    assert!(!text.starts_with("exit code: 0"), "{text}");
    assert!(!root.join("granted").exists());
    let text = call(&client, "run_command", write, Map::new()).await;
    assert!(text.starts_with("exit code: 0"), "{text}");
    assert!(root.join("granted").exists());

    let task = json!({"command": "echo x > from_task"});
    call(&client, "task_start", task.clone(), read_only_meta()).await;
    let text = call(
        &client,
        "task_start",
        json!({"command": "true"}),
        Map::new(),
    )
    .await;
    assert!(text.contains("started task 2"), "{text}");
    let done = |id: u32| {
        let client = &client;
        async move {
            loop {
                let out = call(client, "task_output", json!({"id": id}), Map::new()).await;
                if !out.starts_with("status: running") {
                    return out;
                }
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
        }
    };
    let out = done(1).await;
    assert!(
        out.starts_with("status: exit code: ") && !out.starts_with("status: exit code: 0"),
        "{out}"
    );
    assert!(!root.join("from_task").exists());
    call(&client, "task_start", task, Map::new()).await;
    done(3).await;
    assert!(root.join("from_task").exists());
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn meta_never_widens_the_servers_sandbox() {
    let (_base, root, _outside) = dirs();
    let (client, _) = start(&root, &["--sandbox", "read-only"]).await;
    let mut wide = Map::new();
    wide.insert(
        mcp_tools::grants::SANDBOX_KEY.to_owned(),
        Value::from("danger-full-access"),
    );
    wide.insert(
        mcp_tools::grants::PROTECTED_WRITE_KEY.to_owned(),
        Value::Bool(true),
    );
    let text = call(
        &client,
        "run_command",
        json!({"command": "echo x > widened"}),
        wide,
    )
    .await;
    assert!(!text.starts_with("exit code: 0"), "{text}");
    assert!(!root.join("widened").exists());
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn network_off_stops_a_udp_datagram_to_the_hosts_loopback() {
    let (_base, root, _outside) = dirs();
    let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    socket
        .set_read_timeout(Some(std::time::Duration::from_millis(500)))
        .unwrap();
    let port = socket.local_addr().unwrap().port();
    let send = format!("bash -c 'echo leak > /dev/udp/127.0.0.1/{port}'");
    let mut buf = [0u8; 16];
    let (off, _) = start(&root, &[]).await;
    let text = run(&off, &send).await;
    assert!(
        socket.recv(&mut buf).is_err(),
        "UDP left the sandbox: {text}"
    );
    off.cancel().await.unwrap();
    let (on, _) = start(&root, &["--sandbox-network"]).await;
    let text = run(&on, &send).await;
    assert!(
        socket.recv(&mut buf).is_ok(),
        "network on, UDP must work: {text}"
    );
    on.cancel().await.unwrap();
}

#[tokio::test]
async fn nothing_a_command_started_survives_a_sigkill_of_the_server() {
    let (_base, root, _outside) = dirs();
    let (client, pid) = start(&root, &[]).await;
    let token = unique_sleep();
    // Each escape leaves the group, the parent chain and the marker.
    let escapes = format!(
        "setsid env -i sh -c 'sleep {token} & sleep {token}' &\n\
         (env -i sh -c 'setsid sleep {token} &' &)\n\
         sleep {token}"
    );
    call(
        &client,
        "task_start",
        json!({"command": escapes}),
        Map::new(),
    )
    .await;
    let forever = format!("setsid env -i sh -c 'sleep {token}' & sleep {token}");
    let running = call(
        &client,
        "run_command",
        json!({"command": forever}),
        Map::new(),
    );
    tokio::pin!(running);
    let started = async {
        while with_token(&token).len() < 6 {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    };
    tokio::select! {
        _ = &mut running => panic!("run_command should still be running"),
        _ = started => {}
    }
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    assert!(
        eventually(|| with_token(&token).is_empty()).await,
        "left behind: {:?}",
        with_token(&token)
    );
}
