//! The real `nanohermes-todo` binary over stdio, and across restarts.

use std::path::Path;

use rmcp::ServiceExt;
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use serde_json::{Value, json};
use tokio::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_nanohermes-todo");

async fn spawn(file: &Path) -> RunningService<RoleClient, ()> {
    let command = Command::new(BIN).configure(|c| {
        c.arg("--file").arg(file);
    });
    ().serve(TokioChildProcess::new(command).unwrap())
        .await
        .unwrap()
}

async fn call(client: &RunningService<RoleClient, ()>, tool: &str, args: Value) -> (bool, String) {
    mcp_tools::testing::call_text(client, tool, args).await
}

#[tokio::test]
async fn the_binary_lists_both_tools_and_keeps_the_list_across_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("todos.json");

    let first = spawn(&file).await;
    let tools = first.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names, ["todo_read", "todo_write"]);
    let (is_error, written) = call(
        &first,
        "todo_write",
        json!({"todos": [
            {"content": "Plan", "status": "completed"},
            {"content": "Build", "status": "in_progress"},
            {"content": "Ship", "status": "pending"}
        ]}),
    )
    .await;
    assert!(!is_error, "{written}");
    let (is_error, text) = call(
        &first,
        "todo_write",
        json!({"todos": [{"content": "", "status": "pending"}]}),
    )
    .await;
    assert!(is_error && text.contains("empty content"), "{text}");
    first.cancel().await.unwrap();

    let second = spawn(&file).await;
    let (is_error, read) = call(&second, "todo_read", json!({})).await;
    assert!(!is_error);
    assert_eq!(read, written);
    second.cancel().await.unwrap();
}

#[test]
fn the_binary_refuses_to_start_on_a_corrupt_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("todos.json");
    std::fs::write(&file, "[1, 2").unwrap();
    let out = std::process::Command::new(BIN)
        .arg("--file")
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with(&format!(
            "nanohermes-todo: the todo file {} is corrupt",
            file.display()
        )),
        "{stderr}"
    );
}
