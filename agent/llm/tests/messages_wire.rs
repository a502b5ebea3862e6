//! The Anthropic Messages wire end to end: `Client::chat` against a small
//! HTTP server in this file that answers as Anthropic does.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use nanohermes_llm::{
    ChatEvent, Client, JsonList, ModelSettings, RetryPolicy, ToolCall, Usage, WireApi,
};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// One request as the server received it.
#[derive(Debug, Clone)]
struct Received {
    /// `POST /v1/messages HTTP/1.1`.
    request_line: String,
    /// Header names lower-cased, with their values.
    headers: Vec<(String, String)>,
    body: Value,
}

impl Received {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Reads one HTTP/1.1 request (head, then `Content-Length` bytes of body).
async fn read_request(socket: &mut TcpStream) -> Received {
    let mut buffer = Vec::new();
    let mut piece = [0u8; 4096];
    let head_end = loop {
        let n = socket.read(&mut piece).await.unwrap();
        assert!(n > 0, "the client closed before sending a whole head");
        buffer.extend_from_slice(&piece[..n]);
        if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break end + 4;
        }
    };
    let head = String::from_utf8(buffer[..head_end].to_vec()).unwrap();
    let mut lines = head.split("\r\n");
    let request_line = lines.next().unwrap().to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(n, v)| (n.trim().to_lowercase(), v.trim().to_owned()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .map(|(_, v)| v.parse().unwrap())
        .expect("a body with Content-Length");
    while buffer.len() < head_end + length {
        let n = socket.read(&mut piece).await.unwrap();
        assert!(n > 0, "the client closed before sending the whole body");
        buffer.extend_from_slice(&piece[..n]);
    }
    let body = serde_json::from_slice(&buffer[head_end..head_end + length]).unwrap();
    Received {
        request_line,
        headers,
        body,
    }
}

/// Serves one connection per answer, in order; records every request.
async fn serve(answers: Vec<String>) -> (String, Arc<Mutex<Vec<Received>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base_url = format!("http://{}/v1", listener.local_addr().unwrap());
    let received = Arc::new(Mutex::new(Vec::new()));
    let log = received.clone();
    tokio::spawn(async move {
        for answer in answers {
            let (mut socket, _) = listener.accept().await.unwrap();
            let request = read_request(&mut socket).await;
            log.lock().unwrap().push(request);
            socket.write_all(answer.as_bytes()).await.unwrap();
            socket.shutdown().await.unwrap();
        }
    });
    (base_url, received)
}

fn sse_answer(events: &[Value]) -> String {
    let mut answer = String::from(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n",
    );
    for event in events {
        answer.push_str(&format!(
            "event: {}\ndata: {event}\n\n",
            event["type"].as_str().unwrap()
        ));
    }
    answer
}

fn overloaded_answer() -> String {
    let body = r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
    format!(
        "HTTP/1.1 529 Site Overloaded\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
}

fn stream_events() -> Vec<Value> {
    vec![
        json!({"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],
            "model":"claude-x","stop_reason":null,
            "usage":{"input_tokens":20,"cache_creation_input_tokens":0,"cache_read_input_tokens":100,"output_tokens":1}}}),
        json!({"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}),
        json!({"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Check the file."}}),
        json!({"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"c2lnbmF0dXJl"}}),
        json!({"type":"content_block_stop","index":0}),
        json!({"type":"ping"}),
        json!({"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}),
        json!({"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Reading "}}),
        json!({"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"it."}}),
        json!({"type":"content_block_stop","index":1}),
        json!({"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_1","name":"read_file","input":{}}}),
        json!({"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"path\":"}}),
        json!({"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":" \"a.rs\"}"}}),
        json!({"type":"content_block_stop","index":2}),
        json!({"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":30}}),
        json!({"type":"message_stop"}),
    ]
}

fn settings(base_url: &str) -> ModelSettings {
    let mut settings = ModelSettings::new(base_url, "claude-x");
    settings.wire = WireApi::Messages;
    settings.api_key = Some("sk-ant-test".into());
    settings.retry = RetryPolicy {
        max_retries: 2,
        base_delay: Duration::from_millis(1),
    };
    settings
}

#[tokio::test]
async fn a_streamed_turn_arrives_through_chat_after_a_529_is_retried() {
    let (base_url, received) = serve(vec![overloaded_answer(), sse_answer(&stream_events())]).await;
    let client = Client::new(settings(&base_url)).unwrap();
    let history = vec![
        json!({"role":"system","content":"You are NanoHermes."}),
        json!({"role":"user","content":"Read a.rs"}),
    ];
    let tools = vec![json!({"type":"function","function":{"name":"read_file",
        "description":"Read a file","parameters":{"type":"object","properties":{"path":{"type":"string"}}}}})];
    let mut text = String::new();
    let mut reasoning = String::new();
    let mut retries = Vec::new();
    let turn = client
        .chat(
            (&history).into(),
            JsonList::Values(&tools),
            &mut |event| match event {
                ChatEvent::Text(t) => text.push_str(t),
                ChatEvent::Reasoning(t) => reasoning.push_str(t),
                ChatEvent::Retry { attempt, error, .. } => {
                    retries.push((attempt, error.to_string()))
                }
                ChatEvent::Fallback { .. } => panic!("no fallback is configured"),
            },
        )
        .await
        .unwrap();

    assert_eq!(text, "Reading it.");
    assert_eq!(reasoning, "Check the file.");
    assert_eq!(retries.len(), 1, "{retries:?}");
    assert!(retries[0].1.contains("HTTP 529: Overloaded"), "{retries:?}");
    assert_eq!(turn.content, "Reading it.");
    assert_eq!(
        turn.tool_calls,
        [ToolCall {
            id: "toolu_1".into(),
            name: "read_file".into(),
            arguments: "{\"path\": \"a.rs\"}".into(),
        }]
    );
    assert_eq!(turn.finish_reason.as_deref(), Some("tool_calls"));
    assert_eq!(
        turn.usage,
        Some(Usage {
            prompt_tokens: 120,
            completion_tokens: 30,
            cached_tokens: 100,
            cache_write_tokens: 0,
            reasoning_tokens: 0,
        })
    );
    let stored = turn.reasoning.unwrap();
    assert_eq!(stored.wire, WireApi::Messages);
    assert_eq!(stored.endpoint, base_url);
    assert_eq!(
        stored.items,
        [json!({"type":"thinking","thinking":"Check the file.","signature":"c2lnbmF0dXJl"})]
    );

    let received = received.lock().unwrap().clone();
    assert_eq!(received.len(), 2);
    for request in &received {
        assert_eq!(request.request_line, "POST /v1/messages HTTP/1.1");
        assert_eq!(request.header("x-api-key"), Some("sk-ant-test"));
        assert_eq!(request.header("anthropic-version"), Some("2023-06-01"));
        assert_eq!(request.header("authorization"), None);
        assert_eq!(request.header("content-type"), Some("application/json"));
    }
    // The retry sent the same body.
    assert_eq!(received[0].body, received[1].body);
    let body = &received[1].body;
    assert_eq!(body["model"], "claude-x");
    assert_eq!(body["max_tokens"], 4096);
    assert_eq!(body["stream"], true);
    assert_eq!(body["system"][0]["text"], "You are NanoHermes.");
    assert_eq!(body["messages"][0]["content"][0]["text"], "Read a.rs");
    assert_eq!(body["tools"][0]["name"], "read_file");
    assert_eq!(body["tool_choice"], json!({"type":"auto"}));
}

#[tokio::test]
async fn the_providers_headers_replace_the_wires_version() {
    let (base_url, received) = serve(vec![sse_answer(&stream_events())]).await;
    let mut settings = settings(&base_url);
    settings.api_key = None;
    settings.http_headers = vec![("anthropic-version".into(), "2099-01-01".into())];
    let client = Client::new(settings).unwrap();
    let history = vec![json!({"role":"user","content":"hi"})];
    client
        .chat((&history).into(), JsonList::Values(&[]), &mut |_| {})
        .await
        .unwrap();
    let received = received.lock().unwrap().clone();
    assert_eq!(received[0].header("anthropic-version"), Some("2099-01-01"));
    assert_eq!(received[0].header("x-api-key"), None);
}
