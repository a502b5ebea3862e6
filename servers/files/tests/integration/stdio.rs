//! The real `nanohermes-files` binary over stdio: both protocol eras, every
//! tool, and a prompt exit when stdin closes.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use rmcp::model::ProtocolVersion;
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, ServiceExt};
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_nanohermes-files");

fn server_command(root: &std::path::Path) -> tokio::process::Command {
    tokio::process::Command::new(BIN).configure(|c| {
        c.arg("--root").arg(root);
    })
}

async fn call(
    client: &rmcp::service::RunningService<rmcp::RoleClient, ()>,
    tool: &str,
    args: Value,
) -> (bool, String) {
    mcp_tools::testing::call_text(client, tool, args).await
}

#[tokio::test]
async fn the_binary_serves_every_tool_over_stdio_with_the_initialize_handshake() {
    let dir = tempfile::tempdir().unwrap();
    let client =
        ().serve(TokioChildProcess::new(server_command(dir.path())).unwrap())
            .await
            .unwrap();
    let info = client.peer_info().unwrap();
    assert_eq!(info.protocol_version, ProtocolVersion::V_2025_11_25);
    assert_eq!(info.server_info.as_ref().unwrap().name, "nanohermes-files");
    let tools = client.list_all_tools().await.unwrap();
    assert_eq!(tools.len(), 5);

    assert_eq!(
        call(
            &client,
            "write_file",
            json!({"path": "a.txt", "content": "one\ntwo\n"})
        )
        .await,
        (false, "created a.txt (8 bytes)".into())
    );
    assert_eq!(
        call(&client, "read_file", json!({"path": "a.txt"})).await,
        (false, "     1\tone\n     2\ttwo\n".into())
    );
    let (err, _) = call(
        &client,
        "edit_file",
        json!({"path": "a.txt", "old_string": "two", "new_string": "2"}),
    )
    .await;
    assert!(!err);
    let patch = "--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n-one\n+1\n 2\n";
    assert_eq!(
        call(&client, "apply_patch", json!({"patch": patch})).await,
        (false, "applied patch:\nM a.txt".into())
    );
    assert_eq!(
        call(&client, "list_dir", json!({})).await,
        (false, "a.txt\n".into())
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.txt")).unwrap(),
        "1\n2\n"
    );
    let (err, text) = call(&client, "read_file", json!({"path": "../etc/passwd"})).await;
    assert!(
        err && text.starts_with("path escapes the workspace root"),
        "{text}"
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn the_binary_speaks_the_2026_discover_lifecycle() {
    let dir = tempfile::tempdir().unwrap();
    let transport = TokioChildProcess::new(server_command(dir.path())).unwrap();
    let lifecycle = ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    };
    let client = ().serve_with_lifecycle(transport, lifecycle).await.unwrap();
    assert_eq!(
        client.peer_info().unwrap().protocol_version,
        ProtocolVersion::V_2026_07_28
    );
    assert_eq!(client.list_all_tools().await.unwrap().len(), 5);
    std::fs::write(dir.path().join("x.txt"), "hi\n").unwrap();
    assert_eq!(
        call(&client, "read_file", json!({"path": "x.txt"})).await,
        (false, "     1\thi\n".into())
    );
    client.cancel().await.unwrap();
}

/// A raw JSON-RPC exchange, independent of rmcp's client: what a
/// TypeScript or Python host sends.
#[test]
fn a_raw_client_can_initialize_list_call_and_close() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(BIN)
        .arg("--root")
        .arg(dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut send = |v: Value| writeln!(stdin, "{v}").unwrap();
    send(
        json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}),
    );
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    let init: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(init["id"], 1);
    assert_eq!(
        init["result"]["protocolVersion"], "2025-06-18",
        "the server accepts an older client's version"
    );
    assert!(init["result"]["capabilities"]["tools"].is_object());
    send(json!({"jsonrpc":"2.0","method":"notifications/initialized"}));
    send(json!({"jsonrpc":"2.0","id":2,"method":"tools/list"}));
    line.clear();
    stdout.read_line(&mut line).unwrap();
    let list: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(list["result"]["tools"].as_array().unwrap().len(), 5);
    send(
        json!({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"list_dir","arguments":{}}}),
    );
    line.clear();
    stdout.read_line(&mut line).unwrap();
    let called: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(called["result"]["isError"], false);
    send(
        json!({"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"nope","arguments":{}}}),
    );
    line.clear();
    stdout.read_line(&mut line).unwrap();
    let unknown: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(unknown["error"]["code"], -32602);

    // Closing stdin ends the server; the 50 ms goal is measured by the bench.
    drop(stdin);
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(status.success(), "{status}");
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "server did not exit after stdin closed"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
}

#[test]
fn print_schema_writes_the_tools_list_to_stdout() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .arg("--root")
        .arg(dir.path())
        .arg("--print-schema")
        .output()
        .unwrap();
    assert!(out.status.success());
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["server"], "files");
    assert_eq!(doc["tools"].as_array().unwrap().len(), 5);
}

#[test]
fn a_missing_root_is_a_clear_error() {
    let out = Command::new(BIN)
        .args(["--root", "/definitely/not/here"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cannot open workspace root /definitely/not/here"),
        "{err}"
    );
}
