//! An MCP client on a todo server, and call helpers.

use nanohermes_todo::{Store, TodoServer};
use rmcp::service::{RoleClient, RunningService};
use serde_json::Value;

pub type Client = RunningService<RoleClient, ()>;

/// A client connected in-process to a server over `store`.
pub async fn client(store: Store) -> Client {
    mcp_tools::in_process::connect(TodoServer::new(store))
        .await
        .unwrap()
}

/// Calls `tool` and returns (is_error, text).
pub async fn call(client: &Client, tool: &str, args: Value) -> (bool, String) {
    mcp_tools::testing::call_text(client, tool, args).await
}

pub async fn ok(client: &Client, tool: &str, args: Value) -> String {
    let (is_error, text) = call(client, tool, args).await;
    assert!(!is_error, "{tool} failed:\n{text}");
    text
}

pub async fn err(client: &Client, tool: &str, args: Value) -> String {
    let (is_error, text) = call(client, tool, args).await;
    assert!(is_error, "{tool} should have failed, answered:\n{text}");
    text
}
