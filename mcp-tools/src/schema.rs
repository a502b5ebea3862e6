//! The committed `schemas/NAME.json` documents: what a server's `tools/list`
//! answers (name, description, inputSchema, outputSchema, annotations).
//!
//! Each server has a test that calls [`check_schema_file`]; it fails when the
//! committed file differs from what the code generates, and rewrites the file
//! instead when `NANOHERMES_UPDATE_SCHEMAS=1` is set. So one command
//! regenerates every schema: `NANOHERMES_UPDATE_SCHEMAS=1 cargo test schema`.

use std::path::Path;

use rmcp::ServerHandler;
use rmcp::service::{RoleServer, Service};
use serde_json::{Value, json};

/// Environment variable that turns schema checks into schema rewrites.
pub const UPDATE_ENV: &str = "NANOHERMES_UPDATE_SCHEMAS";

/// Builds the schema document of `server` by asking it over MCP, exactly as
/// any client would see it.
pub async fn tools_document<S>(name: &str, server: S) -> anyhow::Result<Value>
where
    S: ServerHandler + Service<RoleServer>,
{
    let client = crate::in_process::connect(server).await?;
    let tools = client.list_all_tools().await?;
    let _ = client.cancel().await;
    Ok(json!({ "server": name, "tools": tools }))
}

/// Renders a document the way it is committed: pretty JSON and a final newline.
pub fn render(document: &Value) -> String {
    let mut text = serde_json::to_string_pretty(document).unwrap_or_default();
    text.push('\n');
    text
}

/// Compares `document` with the committed file at `path`, or rewrites the
/// file when [`UPDATE_ENV`] is set. The error says which command regenerates.
pub fn check_schema_file(path: &Path, document: &Value) -> Result<(), String> {
    let expected = render(document);
    if std::env::var_os(UPDATE_ENV).is_some_and(|v| v == "1") {
        std::fs::write(path, &expected).map_err(|e| format!("{}: {e}", path.display()))?;
        return Ok(());
    }
    let committed = std::fs::read_to_string(path).unwrap_or_default();
    if committed == expected {
        Ok(())
    } else {
        Err(format!(
            "{} is out of date with the code; regenerate with `{UPDATE_ENV}=1 cargo test schema` and commit it",
            path.display()
        ))
    }
}
