//! The real `nanohermes-grep` binary, spawned as a child process and
//! driven over stdio by an rmcp client.

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use tokio::process::Command;

#[tokio::test]
async fn the_binary_serves_both_tools_over_stdio() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.md"), "alpha\nbeta needle\n").unwrap();
    let transport = TokioChildProcess::new(
        Command::new(env!("CARGO_BIN_EXE_nanohermes-grep")).configure(|c| {
            c.arg("--root").arg(dir.path());
        }),
    )
    .unwrap();
    let client = ().serve(transport).await.unwrap();

    let info = client.peer_info().unwrap();
    assert_eq!(info.server_info.as_ref().unwrap().name, "nanohermes-grep");
    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names, ["glob", "grep"]);

    let text = |result: rmcp::model::CallToolResult| {
        assert_eq!(result.is_error, Some(false));
        result.content[0].as_text().unwrap().text.clone()
    };
    let found = client
        .call_tool(
            CallToolRequestParams::new("grep").with_arguments(rmcp::object!({"pattern": "needle"})),
        )
        .await
        .unwrap();
    assert_eq!(text(found), "notes.md:2:beta needle\n");
    let listed = client
        .call_tool(
            CallToolRequestParams::new("glob").with_arguments(rmcp::object!({"pattern": "*.md"})),
        )
        .await
        .unwrap();
    assert_eq!(text(listed), "notes.md\n");

    let bad = client
        .call_tool(
            CallToolRequestParams::new("grep").with_arguments(rmcp::object!({"pattern": "("})),
        )
        .await
        .unwrap();
    assert_eq!(bad.is_error, Some(true));
    client.cancel().await.unwrap();
}
