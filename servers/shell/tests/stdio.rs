//! The real `nanohermes-shell` binary, spawned as a child process: every
//! tool over stdio with an rmcp client, and no process left behind however
//! the server ends.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use common::{call, eventually, group_members, pgid_of, unique_sleep, with_token};
use rmcp::ServiceExt;
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_nanohermes-shell");

#[tokio::test]
async fn the_binary_serves_every_tool_over_stdio() {
    let dir = tempfile::tempdir().unwrap();
    let transport = TokioChildProcess::new(tokio::process::Command::new(BIN).configure(|c| {
        c.arg("--root").arg(dir.path());
    }))
    .unwrap();
    let client = ().serve(transport).await.unwrap();
    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(
        names,
        ["run_command", "task_kill", "task_output", "task_start"]
    );

    let (text, is_error) = call(
        &client,
        "run_command",
        json!({"command": "echo hi; exit 2"}),
    )
    .await;
    assert!(!is_error);
    assert!(text.starts_with("exit code: 2"), "{text}");
    assert!(text.ends_with("--- stdout\nhi\n"), "{text}");

    let (started, _) = call(&client, "task_start", json!({"command": "sleep 1000"})).await;
    let pgid = pgid_of(&started);
    let (text, _) = call(&client, "task_output", json!({"id": 1})).await;
    assert!(text.starts_with("status: running"), "{text}");
    let (text, _) = call(&client, "task_kill", json!({"id": 1})).await;
    assert!(text.starts_with("status: killed by signal 15"), "{text}");
    assert!(eventually(|| group_members(pgid).is_empty()).await);

    let (text, is_error) = call(&client, "run_command", json!({"command": ""})).await;
    assert!(is_error);
    assert_eq!(text, "command is empty: give a shell command line");
    client.cancel().await.unwrap();
}

/// The binary driven with raw JSON-RPC lines, so the test decides exactly
/// when stdin closes.
struct RawServer {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
}

impl RawServer {
    fn start(root: &std::path::Path) -> Self {
        Self::start_with(Command::new(BIN).arg("--root").arg(root))
    }

    fn start_with(command: &mut Command) -> Self {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut server = Self {
            child,
            stdin,
            stdout,
        };
        server.request(
            1,
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "test", "version": "0"}}),
        );
        server.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        server
    }

    fn send(&mut self, message: Value) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    }

    fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let mut line = String::new();
            assert!(
                self.stdout.read_line(&mut line).unwrap() > 0,
                "server closed stdout"
            );
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"] == id {
                return message;
            }
        }
    }

    /// Starts `command` as a task and returns its process group id.
    fn start_task(&mut self, command: &str) -> i32 {
        let answer = self.request(
            2,
            "tools/call",
            json!({"name": "task_start", "arguments": {"command": command}}),
        );
        pgid_of(answer["result"]["content"][0]["text"].as_str().unwrap())
    }
}

#[tokio::test]
async fn no_process_is_left_after_the_server_stdin_closes() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = RawServer::start(dir.path());
    let pgid = server.start_task("sleep 1000 & sleep 1000");
    assert!(eventually(|| group_members(pgid).len() >= 2).await);

    drop(server.stdin.take());
    let status = server.child.wait().unwrap();
    assert!(
        status.success(),
        "the server should exit on its own: {status}"
    );
    assert!(
        eventually(|| group_members(pgid).is_empty()).await,
        "left behind: {:?}",
        group_members(pgid)
    );
}

#[tokio::test]
async fn no_process_is_left_after_the_server_is_killed() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = RawServer::start(dir.path());
    let pgid = server.start_task("sleep 1000 & sleep 1000");
    assert!(eventually(|| group_members(pgid).len() >= 2).await);

    // SIGKILL: the server runs no code at all; the reaper must do the work.
    server.child.kill().unwrap();
    server.child.wait().unwrap();
    assert!(
        eventually(|| group_members(pgid).is_empty()).await,
        "left behind: {:?}",
        group_members(pgid)
    );
}

#[tokio::test]
async fn orphans_of_a_task_die_when_the_server_is_killed() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = RawServer::start(dir.path());
    let token = unique_sleep();
    server.start_task(&format!(
        "setsid sleep {token} &\n(sh -c 'sleep {token} &' &)\nnohup sleep {token} >/dev/null 2>&1 &\nsleep {token}"
    ));
    assert!(eventually(|| with_token(&token).len() == 4).await);

    // SIGKILL: the server runs no code; the reaper finds them by marker.
    server.child.kill().unwrap();
    server.child.wait().unwrap();
    assert!(
        eventually(|| with_token(&token).is_empty()).await,
        "left behind: {:?}",
        with_token(&token)
    );
}

#[tokio::test]
async fn orphans_of_a_task_die_when_the_server_stdin_closes() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = RawServer::start(dir.path());
    let token = unique_sleep();
    server.start_task(&format!("setsid sleep {token} &\nsleep {token}"));
    assert!(eventually(|| with_token(&token).len() == 2).await);

    drop(server.stdin.take());
    assert!(server.child.wait().unwrap().success());
    assert!(
        eventually(|| with_token(&token).is_empty()).await,
        "left behind: {:?}",
        with_token(&token)
    );
}

#[tokio::test]
async fn sigint_to_the_servers_group_does_not_reach_a_running_command() {
    use std::os::unix::process::CommandExt;
    let dir = tempfile::tempdir().unwrap();
    // The server leads a group of its own, as a terminal's foreground job
    // would; the test plays the terminal and sends SIGINT to that group.
    let mut server = RawServer::start_with(
        Command::new(BIN)
            .arg("--root")
            .arg(dir.path())
            .process_group(0),
    );
    let pgid = nix::unistd::Pid::from_raw(i32::try_from(server.child.id()).unwrap());
    let marker = dir.path().join("running");
    let interrupter = std::thread::spawn(move || {
        while !marker.exists() {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        nix::sys::signal::killpg(pgid, nix::sys::signal::Signal::SIGINT).unwrap();
    });
    let answer = server.request(
        3,
        "tools/call",
        json!({"name": "run_command", "arguments": {"command": "touch running; sleep 1; echo finished"}}),
    );
    interrupter.join().unwrap();
    let text = answer["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.starts_with("exit code: 0"), "{text}");
    assert!(text.ends_with("--- stdout\nfinished\n"), "{text}");
    drop(server.stdin.take());
    assert!(server.child.wait().unwrap().success());
}
