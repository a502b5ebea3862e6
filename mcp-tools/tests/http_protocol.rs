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
