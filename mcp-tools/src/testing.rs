//! Helpers for tests that drive a server through a real MCP client.

use rmcp::model::CallToolRequestParams;
use rmcp::service::{RoleClient, RunningService, Service};
use serde_json::Value;

/// Calls `tool` with `args` (a JSON object) and returns whether the result
/// is an error and its text blocks joined with newlines. Panics on a
/// protocol error or on arguments that are not an object: in a test both
/// are bugs of the test.
pub async fn call_text<C>(
    client: &RunningService<RoleClient, C>,
    tool: &str,
    args: Value,
) -> (bool, String)
where
    C: Service<RoleClient>,
{
    let Value::Object(args) = args else {
        panic!("arguments of {tool} must be a JSON object, got {args}")
    };
    let result = client
        .call_tool(CallToolRequestParams::new(tool.to_string()).with_arguments(args))
        .await
        .unwrap_or_else(|e| panic!("{tool}: protocol error: {e}"));
    let text = result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.as_str()))
        .collect::<Vec<_>>()
        .join("\n");
    (result.is_error.unwrap_or(false), text)
}
