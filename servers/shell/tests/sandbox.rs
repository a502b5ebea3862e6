//! run_command and task_start in the kernel sandbox, over real MCP: the
//! same confinement for both, the command's own output and exit code
//! kept, a note when the sandbox refused, and the simulated old kernel.

mod common;

use std::path::{Path, PathBuf};

use common::{call, eventually};
use mcp_tools::ToolContext;
use mcp_tools::spawn::SandboxPolicy;
use nanohermes_shell::ShellServer;
use rmcp::RoleClient;
use rmcp::service::RunningService;
use serde_json::json;

/// A root and a sibling under the target directory (the system temp
/// directory is writable in workspace-write).
/// The temp directory the tests' sandboxes may write: one of their own,
/// since the checkout (and so every test directory) may lie under `/tmp`.
static OWN_TEMP: std::sync::LazyLock<tempfile::TempDir> =
    std::sync::LazyLock::new(|| tempfile::tempdir().unwrap());

/// The default policy, with the tests' own temp directory.
fn test_policy() -> SandboxPolicy {
    SandboxPolicy {
        temp_dir: Some(OWN_TEMP.path().to_path_buf()),
        ..SandboxPolicy::default()
    }
}

fn dirs() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let base = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let path = base.path().canonicalize().unwrap();
    let (root, sibling) = (path.join("ws"), path.join("sibling"));
    std::fs::create_dir(&root).unwrap();
    std::fs::create_dir(&sibling).unwrap();
    (base, root, sibling)
}

async fn connect(root: &Path, policy: SandboxPolicy) -> RunningService<RoleClient, ()> {
    let server = ShellServer::with_sandbox(ToolContext::new(root).unwrap(), policy);
    mcp_tools::in_process::connect(server).await.unwrap()
}

#[tokio::test]
async fn a_refused_write_keeps_its_output_and_exit_code_and_gets_a_note() {
    let (_base, root, sibling) = dirs();
    let client = connect(&root, test_policy()).await;
    let command = format!("echo before; echo x > '{}/f'", sibling.display());
    let (text, is_error) = call(&client, "run_command", json!({"command": command})).await;
    assert!(!is_error);
    assert!(
        text.starts_with("exit code: 2 (") || text.starts_with("exit code: 1 ("),
        "{text}"
    );
    assert!(
        text.contains("--- stdout\nbefore\n") && text.contains("Permission denied"),
        "{text}"
    );
    assert!(
        text.contains("note: this command ran in the sandbox (workspace-write, network off)")
            && text.contains("sandbox_writable"),
        "{text}"
    );
    assert!(!sibling.join("f").exists());
}

#[tokio::test]
async fn an_ordinary_build_in_the_workspace_still_runs_without_a_note() {
    let (_base, root, _sibling) = dirs();
    let client = connect(&root, test_policy()).await;
    let command = "mkdir build && echo x > build/out && cat build/out";
    let (text, _) = call(&client, "run_command", json!({"command": command})).await;
    assert!(
        text.starts_with("exit code: 0 (") && text.ends_with("--- stdout\nx\n"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_background_task_is_confined_the_same_way() {
    let (_base, root, sibling) = dirs();
    let client = connect(&root, test_policy()).await;
    let command = format!(
        "echo x > inside; echo x > '{}/f'; printf '#!/bin/sh\\n' > .git-hook-test; exit 3",
        sibling.display()
    );
    let (started, _) = call(&client, "task_start", json!({"command": command})).await;
    assert!(started.starts_with("started task 1"), "{started}");
    // task_output returns only what is new since the last read, so the
    // output may arrive in an earlier poll than the exit status.
    let mut report = String::new();
    assert!(
        eventually(|| {
            report.push_str(&futures_lite_block(call(
                &client,
                "task_output",
                json!({"id": 1}),
            )));
            report.contains("status: exit code: 3")
        })
        .await,
        "{report}"
    );
    assert!(root.join("inside").exists() && !sibling.join("f").exists());
    assert!(
        report.contains("Permission denied")
            && report.contains("note: this command ran in the sandbox"),
        "{report}"
    );
}

/// Runs a future to completion from inside the `eventually` closure.
fn futures_lite_block<F: Future<Output = (String, bool)>>(f: F) -> String {
    tokio::task::block_in_place(|| tokio::runtime::Handle::current().block_on(f)).0
}

#[tokio::test]
async fn plan_and_debug_read_only_writes_nothing_in_the_root() {
    let (_base, root, _sibling) = dirs();
    let policy = test_policy().narrowed_to_read_only();
    let client = connect(&root, policy).await;
    let (text, _) = call(
        &client,
        "run_command",
        json!({"command": "echo x > f; echo y > \"$TMPDIR/t\" && cat \"$TMPDIR/t\""}),
    )
    .await;
    assert!(
        text.contains("Permission denied") && text.contains("--- stdout\ny\n"),
        "{text}"
    );
    assert!(!root.join("f").exists());
}

#[tokio::test]
async fn the_sandbox_status_is_in_the_server_instructions() {
    let (_base, root, _sibling) = dirs();
    let client = connect(&root, test_policy()).await;
    let info = client.peer_info().unwrap();
    let instructions = info.instructions.clone().unwrap_or_default();
    assert!(
        instructions.contains("Sandbox: workspace-write, network off: enforced by the kernel"),
        "{instructions}"
    );
}

const BIN: &str = env!("CARGO_BIN_EXE_nanohermes-shell");

/// The real binary on a kernel simulated to have no Landlock, with
/// `extra` flags; returns the client and the server's stderr file.
async fn old_kernel_server(
    root: &Path,
    extra: &[&str],
) -> (RunningService<RoleClient, ()>, tempfile::NamedTempFile) {
    use rmcp::ServiceExt;
    use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
    let stderr = tempfile::NamedTempFile::new().unwrap();
    let log = stderr.reopen().unwrap();
    let (transport, _) =
        TokioChildProcess::builder(tokio::process::Command::new(BIN).configure(|c| {
            c.arg("--root")
                .arg(root)
                .args(extra)
                .env(mcp_tools::spawn::sandbox::SIMULATE_VAR, "no-landlock");
        }))
        .stderr(std::process::Stdio::from(log))
        .spawn()
        .unwrap();
    (().serve(transport).await.unwrap(), stderr)
}

#[tokio::test]
async fn on_a_kernel_without_landlock_refuse_refuses_and_says_so_at_start() {
    let (_base, root, sibling) = dirs();
    let (client, stderr) = old_kernel_server(&root, &[]).await;
    let command = format!("echo x > '{}/f'", sibling.display());
    let (text, is_error) = call(&client, "run_command", json!({"command": command})).await;
    assert!(is_error, "{text}");
    assert!(
        text.contains("the command was not run: the sandbox (workspace-write, network off) cannot be enforced on this system")
            && text.contains("sandbox_unavailable = \"warn\""),
        "{text}"
    );
    let (text, is_error) = call(&client, "task_start", json!({"command": "true"})).await;
    assert!(
        is_error && text.contains("the command was not run"),
        "{text}"
    );
    assert!(!sibling.join("f").exists());
    let instructions = client
        .peer_info()
        .unwrap()
        .instructions
        .clone()
        .unwrap_or_default();
    assert!(
        instructions.contains("NOT enforced") && instructions.contains("commands are refused"),
        "{instructions}"
    );
    client.cancel().await.unwrap();
    let log = std::fs::read_to_string(stderr.path()).unwrap();
    assert_eq!(
        log.matches("sandbox: workspace-write, network off: NOT enforced")
            .count(),
        1,
        "{log}"
    );
}

#[tokio::test]
async fn on_a_kernel_without_landlock_warn_runs_the_command_with_a_warning() {
    let (_base, root, sibling) = dirs();
    let (client, _stderr) = old_kernel_server(&root, &["--sandbox-unavailable", "warn"]).await;
    let command = format!("echo x > '{}/f'", sibling.display());
    let (text, is_error) = call(&client, "run_command", json!({"command": command})).await;
    assert!(!is_error, "{text}");
    assert!(
        text.starts_with("WARNING: the sandbox (workspace-write, network off) is not fully enforced on this system")
            && text.contains("exit code: 0"),
        "{text}"
    );
    assert!(
        sibling.join("f").exists(),
        "unconfined, as the warning says"
    );
    client.cancel().await.unwrap();
}

/// A loopback HTTP server outside the sandbox that answers `reached`.
async fn reached_server() -> std::net::SocketAddr {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let mut buf = [0u8; 4096];
            let _ = stream.read(&mut buf).await;
            let _ = stream
                .write_all(
                    b"HTTP/1.1 200 OK\r\nContent-Length: 8\r\nConnection: close\r\n\r\nreached\n",
                )
                .await;
        }
    });
    address
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_allowlist_a_listed_host_is_reached_and_a_refused_one_is_named_in_the_result() {
    let (_base, root, _sibling) = dirs();
    let server = reached_server().await;
    let policy = SandboxPolicy {
        allowlist: Some(mcp_tools::net::Allowlist {
            domains: mcp_tools::net::DomainList::parse(&["127.0.0.1"]).unwrap(),
            allow_private_network: true,
        }),
        ..test_policy()
    };
    let client = connect(&root, policy).await;
    let info = client.peer_info().unwrap();
    let instructions = info.instructions.clone().unwrap_or_default();
    assert!(
        instructions.contains("network allowlist (1 domain, private addresses allowed)"),
        "{instructions}"
    );
    // `--noproxy ''`: a loopback literal is in NO_PROXY.
    let command = format!("curl -sS --noproxy '' http://{server}/");
    let (text, is_error) = call(&client, "run_command", json!({"command": command})).await;
    assert!(
        !is_error && text.ends_with("--- stdout\nreached\n"),
        "{text}"
    );

    let command = "curl -sS -o /dev/null -w '%{http_code}\\n' http://unlisted.example/ \
                   && curl -sS --proxytunnel https://other.example/ ; true";
    let (text, _) = call(&client, "run_command", json!({"command": command})).await;
    assert!(text.contains("--- stdout\n403\n"), "{text}");
    assert!(
        text.ends_with(
            "note: the sandbox's network allowlist refused this command's connections to: \
             other.example, unlisted.example. Do not retry or work around it: if the task \
             needs them, ask the user to add them to sandbox_allowed_domains in \
             ~/.nanohermes/config.toml\n"
        ),
        "{text}"
    );
}
