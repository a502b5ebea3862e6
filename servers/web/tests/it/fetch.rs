//! `web_fetch` through a real MCP client connected in-process.

use std::path::Path;
use std::time::Duration;

use mcp_tools::schema::{check_schema_file, tools_document};
use nanohermes_web::{FetchConfig, WebServer};

use super::client::{client, client_for, client_with, context, fetch, get};
use super::local;

#[tokio::test]
async fn html_is_turned_into_readable_text() {
    let addr = local::serve().await;
    let (err, text) = get(&client_for(addr).await, format!("http://{addr}/page")).await;
    assert!(!err, "{text}");
    assert!(text.starts_with(&format!(
        "URL: http://{addr}/page\nStatus: 200 OK\nContent-Type: text/html; charset=utf-8\n\n"
    )));
    assert!(text.contains("Hello web"), "{text}");
    assert!(text.contains("First **bold** paragraph"), "{text}");
    assert!(text.contains("* one"), "{text}");
    assert!(!text.contains("<p>"), "tags were left in: {text}");
    assert!(!text.contains("var hidden"), "script was left in: {text}");
}

#[tokio::test]
async fn plain_text_json_and_xml_are_returned_as_they_are() {
    let addr = local::serve().await;
    let c = client_for(addr).await;
    let (err, text) = get(&c, format!("http://{addr}/plain")).await;
    assert!(
        !err && text.ends_with("\n\njust text\nline two\n"),
        "{text}"
    );
    let (err, text) = get(&c, format!("http://{addr}/data.json")).await;
    assert!(!err && text.ends_with("\n\n{\"answer\": 42}\n"), "{text}");
    let (err, text) = get(&c, format!("http://{addr}/feed.xml")).await;
    assert!(
        !err && text.ends_with("<rss><title>feed</title></rss>\n"),
        "{text}"
    );
    let (err, text) = get(&c, format!("http://{addr}/untyped")).await;
    assert!(
        !err && text.contains("Content-Type: none given") && text.ends_with("no type here\n"),
        "{text}"
    );
}

#[tokio::test]
async fn a_redirect_chain_within_the_limit_is_followed() {
    let addr = local::serve().await;
    let (err, text) = get(&client_for(addr).await, format!("http://{addr}/redirect/5")).await;
    assert!(!err, "{text}");
    assert!(
        text.starts_with(&format!("URL: http://{addr}/redirect/0\n")),
        "{text}"
    );
    assert!(text.ends_with("\n\narrived\n"), "{text}");
}

#[tokio::test]
async fn a_redirect_chain_over_the_limit_is_refused() {
    let addr = local::serve().await;
    let url = format!("http://{addr}/redirect/6");
    let (err, text) = get(&client_for(addr).await, url.clone()).await;
    assert!(err);
    assert_eq!(
        text,
        format!(
            "gave up after 5 redirects fetching {url}; fetch the final address directly if you know it"
        )
    );
}

#[tokio::test]
async fn a_redirect_to_a_file_url_is_refused() {
    let addr = local::serve().await;
    let url = format!("http://{addr}/to-file");
    let (err, text) = get(&client_for(addr).await, url.clone()).await;
    assert!(err);
    assert_eq!(
        text,
        format!("{url} redirected to `file:///etc/passwd`, which is not an http or https URL")
    );
}

#[tokio::test]
async fn the_body_is_cut_at_max_bytes_and_says_so() {
    let addr = local::serve().await;
    let c = client_for(addr).await;
    let (err, text) = fetch(
        &c,
        serde_json::json!({"url": format!("http://{addr}/big"), "max_bytes": 1000}),
    )
    .await;
    assert!(!err, "{text}");
    assert!(
        text.contains("Note: the body was cut at 1000 bytes; pass a larger max_bytes for more\n"),
        "{text}"
    );
    assert!(
        text.ends_with(&format!("\n\n{}\n", "a".repeat(1000))),
        "{text}"
    );
    // Exactly the body size is not a cut.
    let (_, text) = fetch(
        &c,
        serde_json::json!({"url": format!("http://{addr}/big"), "max_bytes": local::BIG}),
    )
    .await;
    assert!(!text.contains("Note: the body was cut"), "{}", &text[..200]);
}

#[tokio::test]
async fn an_endless_body_stops_at_the_default_cap() {
    let addr = local::serve().await;
    let (err, text) = get(&client_for(addr).await, format!("http://{addr}/endless")).await;
    assert!(!err, "{}", &text[..text.len().min(300)]);
    assert!(
        text.contains("Note: the body was cut at 2000000 bytes"),
        "{}",
        &text[..300]
    );
}

#[tokio::test]
async fn long_text_is_clamped_to_the_output_limit() {
    let addr = local::serve().await;
    let c = client_with(super::client::allowing(&[addr]), 500).await;
    let (err, text) = get(&c, format!("http://{addr}/big")).await;
    assert!(!err);
    assert!(text.len() < 600, "{} bytes", text.len());
    assert!(text.ends_with("more bytes omitted]"), "{text}");
}

#[tokio::test]
async fn binary_content_is_refused_with_its_type() {
    let addr = local::serve().await;
    let c = client_for(addr).await;
    let url = format!("http://{addr}/image.png");
    let (err, text) = get(&c, url.clone()).await;
    assert!(err);
    assert_eq!(
        text,
        format!(
            "refused: {url} is `image/png`, not text; web_fetch returns HTML, text, JSON and XML only"
        )
    );
    let (err, text) = get(&c, format!("http://{addr}/untyped-binary")).await;
    assert!(err);
    assert!(
        text.contains("is `binary data without a Content-Type`, not text"),
        "{text}"
    );
}

#[tokio::test]
async fn a_404_is_an_error_naming_the_status_and_quoting_the_page() {
    let addr = local::serve().await;
    let url = format!("http://{addr}/missing");
    let (err, text) = get(&client_for(addr).await, url.clone()).await;
    assert!(err);
    assert!(
        text.starts_with(&format!("HTTP 404 Not Found from {url}; the page says:\n")),
        "{text}"
    );
    assert!(text.contains("try /page"), "{text}");
}

#[tokio::test]
async fn a_500_is_an_error_naming_the_status() {
    let addr = local::serve().await;
    let url = format!("http://{addr}/broken");
    let (err, text) = get(&client_for(addr).await, url.clone()).await;
    assert!(err);
    assert_eq!(
        text,
        format!("HTTP 500 Internal Server Error from {url}; the page says:\ndatabase down")
    );
}

#[tokio::test]
async fn a_server_that_never_answers_times_out() {
    let addr = local::silent().await;
    let config = FetchConfig {
        timeout: Duration::from_millis(300),
        ..super::client::allowing(&[addr])
    };
    let url = format!("http://{addr}/");
    let (err, text) = get(&client_with(config, 20_000).await, url.clone()).await;
    assert!(err);
    assert_eq!(
        text,
        format!("timed out after 0.3 s fetching {url}; the server is slow or not answering")
    );
}

#[tokio::test]
async fn a_closed_port_is_a_connect_error() {
    let addr = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap()
    };
    let url = format!("http://{addr}/");
    let (err, text) = get(&client_for(addr).await, url.clone()).await;
    assert!(err);
    assert!(
        text.starts_with(&format!("could not connect to {url}: ")),
        "{text}"
    );
}

#[tokio::test]
async fn non_http_schemes_are_refused() {
    let c = client().await;
    for (url, scheme) in [
        ("file:///etc/passwd", "file"),
        ("ftp://127.0.0.1/x", "ftp"),
        ("data:text/plain,hi", "data"),
    ] {
        let (err, text) = get(&c, url.to_string()).await;
        assert!(err);
        assert_eq!(
            text,
            format!("only http and https URLs can be fetched, not `{scheme}:` URLs")
        );
    }
    let (err, text) = get(&c, "not a url".to_string()).await;
    assert!(err);
    assert!(text.starts_with("`not a url` is not a valid URL"), "{text}");
    let (err, text) = fetch(
        &c,
        serde_json::json!({"url": "http://127.0.0.1/", "max_bytes": 0}),
    )
    .await;
    assert!(err);
    assert_eq!(text, "max_bytes must be at least 1");
}

#[tokio::test]
async fn web_fetch_is_annotated_read_only_and_open_world() {
    let tools = client().await.list_all_tools().await.unwrap();
    assert_eq!(tools.len(), 1);
    let a = tools[0].annotations.clone().unwrap();
    assert_eq!(a.read_only_hint, Some(true));
    assert_eq!(a.open_world_hint, Some(true));
}

#[tokio::test]
async fn schema_file_matches_the_code() {
    let server = WebServer::new(context()).unwrap();
    let doc = tools_document("web", server).await.unwrap();
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../schemas/web.json");
    check_schema_file(&path, &doc).unwrap();
}

#[tokio::test]
async fn the_http_client_is_built_by_the_first_fetch_not_at_start() {
    let addr = local::serve().await;
    let fetcher = nanohermes_web::Fetcher::new(super::client::allowing(&[addr])).unwrap();
    // Building it loads every system root certificate: not a start-up cost.
    assert!(!fetcher.client_is_built());
    let copy = fetcher.clone();
    let page = fetcher
        .fetch(&format!("http://{addr}/plain"), None)
        .await
        .unwrap();
    assert!(page.text.contains("just text"), "{}", page.text);
    assert!(fetcher.client_is_built());
    assert!(copy.client_is_built(), "clones share the one client");
}

#[tokio::test]
async fn a_client_that_cannot_be_built_fails_the_fetch_with_a_clear_error() {
    let addr = local::serve().await;
    let config = FetchConfig {
        extra_root_certificates: vec![b"not a certificate".to_vec()],
        ..super::client::allowing(&[addr])
    };
    let (err, text) = get(
        &client_with(config, 10_000).await,
        format!("http://{addr}/plain"),
    )
    .await;
    assert!(err, "{text}");
    assert!(text.starts_with("cannot start the HTTP client: "), "{text}");
}
