//! The committed schemas/git.json matches what the server lists.

use std::path::Path;

use mcp_tools::ToolContext;
use mcp_tools::schema::{check_schema_file, tools_document};
use nanohermes_git::GitServer;

#[tokio::test]
async fn schema_file_matches_the_code() {
    let dir = tempfile::tempdir().unwrap();
    let doc = tools_document("git", GitServer::new(ToolContext::new(dir.path()).unwrap()))
        .await
        .unwrap();
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../schemas/git.json");
    check_schema_file(&path, &doc).unwrap();
}
