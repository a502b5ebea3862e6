//! The real `nanohermes-web` binary over stdio, against a local server.

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::TokioChildProcess;
use tokio::process::Command;

use super::local;

async fn spawn(args: &[String]) -> RunningService<RoleClient, ()> {
    let mut command = Command::new(env!("CARGO_BIN_EXE_nanohermes-web"));
    command.args(args);
    ().serve(TokioChildProcess::new(command).unwrap())
        .await
        .unwrap()
}

async fn call(client: &RunningService<RoleClient, ()>, url: String) -> (bool, String) {
    let args = rmcp::object!({ "url": url });
    let result = client
        .call_tool(CallToolRequestParams::new("web_fetch").with_arguments(args))
        .await
        .unwrap();
    let text = result.content[0].as_text().unwrap().text.clone();
    (result.is_error == Some(true), text)
}

#[tokio::test]
async fn the_binary_lists_and_serves_web_fetch() {
    let addr = local::serve().await;
    let client = spawn(&["--allow-fetch-host".into(), addr.to_string()]).await;
    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names, ["web_fetch"]);
    let (err, text) = call(&client, format!("http://{addr}/page")).await;
    assert!(!err && text.contains("Hello web"), "{text}");
    let (err, _) = call(&client, format!("http://{addr}/missing")).await;
    assert!(err);
    let (err, _) = call(&client, "file:///etc/passwd".to_string()).await;
    assert!(err);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn the_binary_refuses_loopback_unless_the_user_allows_it() {
    let addr = local::serve().await;
    let by_name = format!("http://localhost:{}/page", addr.port());
    let metadata = "http://169.254.169.254/latest/meta-data/".to_string();

    let closed = spawn(&[]).await;
    let (err, text) = call(&closed, format!("http://{addr}/page")).await;
    assert!(err);
    assert_eq!(
        text,
        format!(
            "refused http://{addr}/page: 127.0.0.1 is a loopback address; web_fetch reaches only \
             public addresses (the user can allow private networks with --allow-private-network)"
        )
    );
    let (err, text) = call(&closed, by_name.clone()).await;
    assert!(err && text.contains("localhost resolves to"), "{text}");
    let (err, text) = call(&closed, metadata).await;
    assert!(err && text.contains("cloud metadata address"), "{text}");
    closed.cancel().await.unwrap();

    let open = spawn(&["--allow-private-network".into()]).await;
    for url in [format!("http://{addr}/page"), by_name] {
        let (err, text) = call(&open, url.clone()).await;
        assert!(!err && text.contains("Hello web"), "{url}: {text}");
    }
    open.cancel().await.unwrap();
}

#[tokio::test]
async fn proxy_variables_are_ignored_so_no_proxy_resolves_past_the_guard() {
    // The local app serves /page for an absolute-form request too, so it
    // stands in for a proxy: were HTTP_PROXY honoured, the fetch of a name
    // that does not resolve would come back as its page.
    let proxy = local::serve().await;
    let mut command = Command::new(env!("CARGO_BIN_EXE_nanohermes-web"));
    for var in ["HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "ALL_PROXY"] {
        command.env(var, format!("http://{proxy}"));
    }
    command.env_remove("NO_PROXY").env_remove("no_proxy");
    let client = ().serve(TokioChildProcess::new(command).unwrap()).await.unwrap();
    let url = "http://nanohermes-proxy-test.invalid/page".to_string();
    let (err, text) = call(&client, url.clone()).await;
    assert!(err, "{text}");
    assert!(!text.contains("Hello web"), "{text}");
    assert!(
        text.starts_with(&format!("could not connect to {url}")),
        "{text}"
    );
    client.cancel().await.unwrap();
}
