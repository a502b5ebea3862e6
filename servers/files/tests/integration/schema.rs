//! `schemas/files.json` is what the code generates.

use std::path::Path;

use mcp_tools::ToolContext;
use nanohermes_files::FilesServer;

#[tokio::test]
async fn schema_file_matches_the_code() {
    let dir = tempfile::tempdir().unwrap();
    let server = FilesServer::new(ToolContext::new(dir.path()).unwrap());
    let doc = mcp_tools::schema::tools_document("files", server)
        .await
        .unwrap();
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../schemas/files.json");
    mcp_tools::schema::check_schema_file(&path, &doc).unwrap();
}
