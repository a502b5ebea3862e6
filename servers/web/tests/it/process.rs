//! The real `nanohermes-web` binary over stdio, against a local server.

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;
use tokio::process::Command;

use super::local;

#[tokio::test]
async fn the_binary_lists_and_serves_web_fetch() {
    let addr = local::serve().await;
    let command = Command::new(env!("CARGO_BIN_EXE_nanohermes-web"));
    let client = ().serve(TokioChildProcess::new(command).unwrap()).await.unwrap();
    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names, ["web_fetch"]);
    let call = |url: String| {
        let args = rmcp::object!({ "url": url });
        client.call_tool(CallToolRequestParams::new("web_fetch").with_arguments(args))
    };
    let ok = call(format!("http://{addr}/page")).await.unwrap();
    assert_ne!(ok.is_error, Some(true));
    let text = ok.content[0].as_text().unwrap().text.clone();
    assert!(text.contains("Hello web"), "{text}");
    let missing = call(format!("http://{addr}/missing")).await.unwrap();
    assert_eq!(missing.is_error, Some(true));
    let bad = call("file:///etc/passwd".to_string()).await.unwrap();
    assert_eq!(bad.is_error, Some(true));
    client.cancel().await.unwrap();
}
