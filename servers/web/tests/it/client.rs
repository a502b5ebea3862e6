//! The one way these tests call `web_fetch`: a real MCP client connected
//! in-process to a `WebServer`, reading `(isError, text)`.

use std::net::SocketAddr;

use mcp_tools::ToolContext;
use nanohermes_web::{AllowedHost, FetchConfig, WebServer};
use rmcp::model::CallToolRequestParams;
use rmcp::service::{RoleClient, RunningService};

pub type Client = RunningService<RoleClient, ()>;

pub fn context() -> ToolContext {
    ToolContext::new(std::env::temp_dir()).unwrap()
}

pub async fn client_with(config: FetchConfig, max_output: usize) -> Client {
    let mut ctx = context();
    ctx.max_output = max_output;
    let server = WebServer::with_config(ctx, config).unwrap();
    mcp_tools::in_process::connect(server).await.unwrap()
}

/// The default configuration: public addresses only, no exception.
pub async fn client() -> Client {
    client_with(FetchConfig::default(), mcp_tools::DEFAULT_MAX_OUTPUT).await
}

/// The default configuration plus an `--allow-fetch-host` exception for exactly
/// each test server's address and port: the test servers live on loopback,
/// and everything else on loopback stays refused.
pub fn allowing(servers: &[SocketAddr]) -> FetchConfig {
    FetchConfig {
        allowed_hosts: servers.iter().copied().map(AllowedHost::socket).collect(),
        ..FetchConfig::default()
    }
}

/// A client that may reach exactly `server`.
pub async fn client_for(server: SocketAddr) -> Client {
    client_with(allowing(&[server]), mcp_tools::DEFAULT_MAX_OUTPUT).await
}

/// Calls `web_fetch` and returns (isError, text).
pub async fn fetch(client: &Client, args: serde_json::Value) -> (bool, String) {
    let serde_json::Value::Object(args) = args else {
        panic!("arguments must be an object")
    };
    let result = client
        .call_tool(CallToolRequestParams::new("web_fetch").with_arguments(args))
        .await
        .unwrap();
    let text = result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n");
    (result.is_error.unwrap_or(false), text)
}

pub async fn get(client: &Client, url: impl Into<String>) -> (bool, String) {
    fetch(client, serde_json::json!({ "url": url.into() })).await
}
