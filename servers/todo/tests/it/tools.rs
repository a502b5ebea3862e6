//! todo_write and todo_read through MCP, in memory.

use nanohermes_todo::{Store, TodoServer};
use serde_json::json;

use crate::support::{client, err, ok};

#[tokio::test]
async fn a_new_list_is_empty() {
    let client = client(Store::in_memory()).await;
    assert_eq!(
        ok(&client, "todo_read", json!({})).await,
        "Todo list is empty\n"
    );
}

#[tokio::test]
async fn write_then_read_returns_the_rendered_list() {
    let client = client(Store::in_memory()).await;
    let written = ok(
        &client,
        "todo_write",
        json!({"todos": [{"content": "Write tests", "status": "in_progress"}]}),
    )
    .await;
    assert_eq!(
        written,
        "Todos: 0 completed, 1 in progress, 0 pending (1 total)\n[>] Write tests\n"
    );
    assert_eq!(ok(&client, "todo_read", json!({})).await, written);
}

#[tokio::test]
async fn a_write_replaces_the_whole_list() {
    let client = client(Store::in_memory()).await;
    ok(
        &client,
        "todo_write",
        json!({"todos": [
            {"content": "Old one", "status": "pending"},
            {"content": "Old two", "status": "pending"}
        ]}),
    )
    .await;
    ok(
        &client,
        "todo_write",
        json!({"todos": [
            {"content": "Read the code", "status": "completed"},
            {"content": "Fix the bug", "status": "in_progress"},
            {"content": "Run the tests", "status": "pending"}
        ]}),
    )
    .await;
    assert_eq!(
        ok(&client, "todo_read", json!({})).await,
        "Todos: 1 completed, 1 in progress, 1 pending (3 total)\n\
         [x] Read the code\n[>] Fix the bug\n[ ] Run the tests\n"
    );
    ok(&client, "todo_write", json!({"todos": []})).await;
    assert_eq!(
        ok(&client, "todo_read", json!({})).await,
        "Todo list is empty\n"
    );
}

#[tokio::test]
async fn a_refused_list_leaves_the_previous_one_in_place() {
    let client = client(Store::in_memory()).await;
    let before = ok(
        &client,
        "todo_write",
        json!({"todos": [{"content": "Keep me", "status": "pending"}]}),
    )
    .await;
    assert_eq!(
        err(
            &client,
            "todo_write",
            json!({"todos": [
                {"content": "a", "status": "in_progress"},
                {"content": "b", "status": "in_progress"}
            ]}),
        )
        .await,
        "2 todos are in_progress (numbers 1, 2): at most one may be in_progress; mark the others pending or completed"
    );
    assert_eq!(
        err(
            &client,
            "todo_write",
            json!({"todos": [{"content": " ", "status": "pending"}]})
        )
        .await,
        "todo 1 has empty content: give every todo a short description"
    );
    assert_eq!(ok(&client, "todo_read", json!({})).await, before);
}

#[tokio::test]
async fn an_unknown_status_is_refused_by_the_schema() {
    let client = client(Store::in_memory()).await;
    let text = err(
        &client,
        "todo_write",
        json!({"todos": [{"content": "a", "status": "done"}]}),
    )
    .await;
    assert!(text.contains("unknown variant `done`"), "{text}");
}

#[tokio::test]
async fn clones_of_one_server_share_the_list() {
    let server = TodoServer::new(Store::in_memory());
    let first = mcp_tools::in_process::connect(server.clone())
        .await
        .unwrap();
    let second = mcp_tools::in_process::connect(server).await.unwrap();
    ok(
        &first,
        "todo_write",
        json!({"todos": [{"content": "Shared", "status": "pending"}]}),
    )
    .await;
    assert!(
        ok(&second, "todo_read", json!({}))
            .await
            .contains("[ ] Shared")
    );
}

#[tokio::test]
async fn annotations_are_honest() {
    let client = client(Store::in_memory()).await;
    let tools = client.list_all_tools().await.unwrap();
    let read = tools.iter().find(|t| t.name == "todo_read").unwrap();
    let read = read.annotations.as_ref().unwrap();
    assert_eq!(
        (read.read_only_hint, read.destructive_hint),
        (Some(true), Some(false))
    );
    let write = tools.iter().find(|t| t.name == "todo_write").unwrap();
    let write = write.annotations.as_ref().unwrap();
    assert_eq!(
        (
            write.read_only_hint,
            write.destructive_hint,
            write.idempotent_hint
        ),
        (Some(false), Some(true), Some(true))
    );
}
