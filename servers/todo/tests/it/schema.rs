//! The committed schemas/todo.json matches what the server lists.

use std::path::Path;

use mcp_tools::schema::{check_schema_file, tools_document};
use nanohermes_todo::{Store, TodoServer};

#[tokio::test]
async fn schema_file_matches_the_code() {
    let doc = tools_document("todo", TodoServer::new(Store::in_memory()))
        .await
        .unwrap();
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../schemas/todo.json");
    check_schema_file(&path, &doc).unwrap();
}
