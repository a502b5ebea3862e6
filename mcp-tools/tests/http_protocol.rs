//! What the MCP conformance suite checks of the kit's HTTP serve path, pinned
//! here so an rmcp bump that changes it fails a test before it fails
//! `scripts/conformance`: `initialize` version negotiation (legacy era) and a
//! method the server does not serve (both eras), over real loopback HTTP.

use std::time::Duration;

use rmcp::ServerHandler;
use rmcp::model::{ServerCapabilities, ServerConfig};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[derive(Clone)]
struct ToolsOnly;

impl ServerHandler for ToolsOnly {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

/// Serves [`ToolsOnly`] through `mcp_tools::serve::serve_http` on port 0.
async fn serve() -> std::net::SocketAddr {
    let listener = mcp_tools::serve::bind("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let addr = listener.local_addr().unwrap();
    let policy = mcp_tools::serve::HttpArgs {
        addr: Some(addr),
        ..Default::default()
    }
    .policy()
    .unwrap()
    .unwrap()
    .1;
    tokio::spawn(mcp_tools::serve::serve_http(
        "test", listener, policy, ToolsOnly,
    ));
    addr
}

/// POSTs `body` to /mcp with `headers`; the status and the JSON-RPC
/// message of the answer (a JSON body, or the first SSE `data:` line).
async fn post(addr: std::net::SocketAddr, headers: &[(&str, &str)], body: Value) -> (u16, Value) {
    let body = body.to_string();
    let mut request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nConnection: close\r\n\
         Content-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(&body);
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    // Reads until the message arrives (an SSE stream may stay open).
    let answer = tokio::time::timeout(Duration::from_secs(30), async {
        let mut buf = [0u8; 4096];
        loop {
            let n = stream.read(&mut buf).await.unwrap();
            raw.extend_from_slice(&buf[..n]);
            let text = String::from_utf8_lossy(&raw).into_owned();
            if let Some(message) = message_in(&text) {
                return (text, message);
            }
            assert!(n > 0, "the connection closed before an answer: {text}");
        }
    })
    .await
    .expect("an answer within 30 s");
    let status = answer.0[9..12].parse().unwrap();
    (status, answer.1)
}

fn message_in(response: &str) -> Option<Value> {
    let (_, body) = response.split_once("\r\n\r\n")?;
    body.lines()
        .filter_map(|line| line.strip_prefix("data: ").or(Some(line)))
        .find_map(|line| {
            let start = line.find('{')?;
            serde_json::from_str::<Value>(&line[start..]).ok()
        })
        .filter(|m| m.get("jsonrpc").is_some())
}

fn initialize(version: &str) -> Value {
    json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": { "name": "test", "version": "1" }
        }
    })
}

#[tokio::test]
async fn initialize_agrees_to_a_known_version_and_offers_2025_11_25_otherwise() {
    let addr = serve().await;
    for (asked, agreed) in [
        ("2025-11-25", "2025-11-25"),
        ("2025-06-18", "2025-06-18"),
        ("2024-11-05", "2024-11-05"),
        // A version the server does not know, and the modern one, which has
        // no initialize: the newest version that still has it.
        ("2099-01-01", "2025-11-25"),
        ("2026-07-28", "2025-11-25"),
    ] {
        let (status, answer) = post(addr, &[], initialize(asked)).await;
        assert_eq!(status, 200, "{asked}: {answer}");
        assert_eq!(
            answer["result"]["protocolVersion"], agreed,
            "{asked}: {answer}"
        );
    }
}

#[tokio::test]
async fn a_modern_request_for_a_method_not_served_is_404_and_minus_32601_naming_it() {
    let addr = serve().await;
    for method in ["prompts/list", "no/such-method"] {
        let body = json!({
            "jsonrpc": "2.0", "id": 7, "method": method,
            "params": { "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {}
            } }
        });
        let headers = [
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", method),
        ];
        let (status, answer) = post(addr, &headers, body).await;
        assert_eq!(status, 404, "{method}: {answer}");
        assert_eq!(answer["id"], 7, "{answer}");
        assert_eq!(answer["error"]["code"], -32601, "{answer}");
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(message.contains(method), "{method}: {message}");
    }
}

/// Sends `request` as it is and returns the response head (status line and
/// headers), lower-cased header names.
async fn head_of(addr: std::net::SocketAddr, request: String) -> (u16, Vec<(String, String)>) {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    let head = tokio::time::timeout(Duration::from_secs(30), async {
        let mut buf = [0u8; 4096];
        loop {
            let n = stream.read(&mut buf).await.unwrap();
            raw.extend_from_slice(&buf[..n]);
            let text = String::from_utf8_lossy(&raw).into_owned();
            if let Some((head, _)) = text.split_once("\r\n\r\n") {
                return head.to_owned();
            }
            assert!(n > 0, "the connection closed before a head: {text}");
        }
    })
    .await
    .expect("a head within 30 s");
    let mut lines = head.split("\r\n");
    let status = lines.next().unwrap()[9..12].parse().unwrap();
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    (status, headers)
}

fn delete(addr: std::net::SocketAddr, session: &str) -> String {
    format!(
        "DELETE /mcp HTTP/1.1\r\nHost: {addr}\r\nMcp-Session-Id: {session}\r\n\
         MCP-Protocol-Version: 2025-06-18\r\nConnection: close\r\n\r\n"
    )
}

#[tokio::test]
async fn a_session_delete_is_200_for_a_live_session_and_404_for_an_unknown_or_ended_one() {
    // The Python SDK logs "Session termination failed: 202" for anything
    // but 200 or 204; the spec answers an unknown session with 404.
    let addr = serve().await;
    let body = initialize("2025-06-18").to_string();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nConnection: close\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let (status, headers) = head_of(addr, request).await;
    assert_eq!(status, 200);
    let session = headers
        .iter()
        .find(|(n, _)| n == "mcp-session-id")
        .map(|(_, v)| v.clone())
        .expect("a session id");

    let (status, _) = head_of(addr, delete(addr, &session)).await;
    assert_eq!(status, 200, "a live session ends with 200");
    let (status, _) = head_of(addr, delete(addr, &session)).await;
    assert_eq!(status, 404, "an ended session is not found");
    let (status, _) = head_of(addr, delete(addr, "no-such-session")).await;
    assert_eq!(status, 404, "an unknown session is not found");
    // Without a session id the request is malformed, not a termination.
    let request = format!("DELETE /mcp HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    let (status, _) = head_of(addr, request).await;
    assert_eq!(status, 400);
}
