//! The Responses wire end to end: `Client::chat` against a minimal HTTP
//! server that answers one recorded event stream.

use std::time::Duration;

use nanohermes_llm::{
    ChatEvent, Client, Conversation, JsonList, ModelSettings, RetryPolicy, ToolCall, WireApi,
};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::oneshot;

/// What the server received: the request line, the headers (names in
/// lower case) and the body.
struct Request {
    line: String,
    headers: Vec<(String, String)>,
    body: Value,
}

impl Request {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Serves one request with `events` as server-sent events, then holds the
/// connection open until `release` fires: the client must stop at the
/// terminal event, not at the end of the connection.
async fn serve_once(
    events: Vec<Value>,
) -> (
    String,
    tokio::task::JoinHandle<Request>,
    oneshot::Sender<()>,
) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base_url = format!("http://{}/v1", listener.local_addr().unwrap());
    let (release, released) = oneshot::channel::<()>();
    let server = tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut bytes = Vec::new();
        let mut buffer = [0u8; 8192];
        let (head_end, length) = loop {
            let read = socket.read(&mut buffer).await.unwrap();
            assert!(read > 0, "the client closed before sending a request");
            bytes.extend_from_slice(&buffer[..read]);
            if let Some(end) = bytes.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&bytes[..end]).to_lowercase();
                let length = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .map_or(0, |v| v.trim().parse::<usize>().unwrap());
                break (end + 4, length);
            }
        };
        while bytes.len() < head_end + length {
            let read = socket.read(&mut buffer).await.unwrap();
            assert!(read > 0, "the client closed mid-body");
            bytes.extend_from_slice(&buffer[..read]);
        }
        let head = String::from_utf8(bytes[..head_end - 4].to_vec()).unwrap();
        let mut lines = head.split("\r\n");
        let line = lines.next().unwrap().to_owned();
        let headers = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(n, v)| (n.trim().to_lowercase(), v.trim().to_owned()))
            .collect();
        let body = serde_json::from_slice(&bytes[head_end..head_end + length]).unwrap();
        let mut answer = String::from("HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n");
        for event in events {
            // The real server names each event; the reader goes by `type`.
            answer.push_str(&format!(
                "event: {}\ndata: {event}\n\n",
                event["type"].as_str().unwrap()
            ));
        }
        socket.write_all(answer.as_bytes()).await.unwrap();
        socket.flush().await.unwrap();
        let _ = released.await;
        Request {
            line,
            headers,
            body,
        }
    });
    (base_url, server, release)
}

fn events() -> Vec<Value> {
    let call = json!({"id":"fc_1","type":"function_call","status":"completed",
        "arguments":"{\"path\":\"a.rs\"}","call_id":"call_A","name":"read_file"});
    let reasoning = json!({"id":"rs_1","type":"reasoning","encrypted_content":"gAAAA-1",
        "summary":[{"type":"summary_text","text":"Look first."}]});
    vec![
        json!({"type":"response.created","response":{"id":"resp_1","status":"in_progress","output":[]}}),
        json!({"type":"response.output_item.added","output_index":0,"item":{"id":"rs_1","type":"reasoning","summary":[]}}),
        json!({"type":"response.reasoning_summary_part.added","item_id":"rs_1","output_index":0,"summary_index":0,"part":{"type":"summary_text","text":""}}),
        json!({"type":"response.reasoning_summary_text.delta","item_id":"rs_1","output_index":0,"summary_index":0,"delta":"Look "}),
        json!({"type":"response.reasoning_summary_text.delta","item_id":"rs_1","output_index":0,"summary_index":0,"delta":"first."}),
        json!({"type":"response.output_item.done","output_index":0,"item":reasoning}),
        json!({"type":"response.output_item.added","output_index":1,"item":{"id":"msg_1","type":"message","role":"assistant","content":[]}}),
        json!({"type":"response.output_text.delta","item_id":"msg_1","output_index":1,"content_index":0,"delta":"Reading "}),
        json!({"type":"response.output_text.delta","item_id":"msg_1","output_index":1,"content_index":0,"delta":"a.rs."}),
        json!({"type":"response.output_item.done","output_index":1,"item":{"id":"msg_1","type":"message","role":"assistant",
            "content":[{"type":"output_text","annotations":[],"text":"Reading a.rs."}]}}),
        json!({"type":"response.output_item.added","output_index":2,"item":{"id":"fc_1","type":"function_call","arguments":"","call_id":"call_A","name":"read_file"}}),
        json!({"type":"response.function_call_arguments.delta","item_id":"fc_1","output_index":2,"delta":"{\"path\":"}),
        json!({"type":"response.function_call_arguments.delta","item_id":"fc_1","output_index":2,"delta":"\"a.rs\"}"}),
        json!({"type":"response.output_item.done","output_index":2,"item":call}),
        json!({"type":"response.completed","response":{"id":"resp_1","status":"completed","output":[],
            "usage":{"input_tokens":50,"input_tokens_details":{"cached_tokens":0},"output_tokens":20,
                     "output_tokens_details":{"reasoning_tokens":8}}}}),
    ]
}

#[tokio::test]
async fn a_responses_stream_is_read_end_to_end() {
    let (base_url, server, release) = serve_once(events()).await;
    let mut settings = ModelSettings::new(base_url.clone(), "gpt-5");
    settings.wire = WireApi::Responses;
    settings.api_key = Some("sk-test".into());
    settings.body.thinking = true;
    settings.retry = RetryPolicy {
        max_retries: 0,
        base_delay: Duration::from_millis(1),
    };
    settings.stream_idle_timeout = Duration::from_secs(10);
    let client = Client::new(settings).unwrap();
    let history = vec![
        json!({"role":"system","content":"Be brief."}),
        json!({"role":"user","content":"read a.rs"}),
    ];
    let tools = vec![json!({"type":"function","function":{"name":"read_file",
        "parameters":{"type":"object","properties":{"path":{"type":"string"}}}}})];
    let mut shown = Vec::new();
    let turn = client
        .chat(
            Conversation::from(&history),
            JsonList::from(&tools),
            &mut |event| match event {
                ChatEvent::Text(text) => shown.push(format!("text:{text}")),
                ChatEvent::Reasoning(text) => shown.push(format!("reasoning:{text}")),
                other => panic!("unexpected event {other:?}"),
            },
        )
        .await
        .unwrap();
    release.send(()).unwrap();
    let request = server.await.unwrap();

    assert_eq!(request.line, "POST /v1/responses HTTP/1.1");
    assert_eq!(request.header("authorization"), Some("Bearer sk-test"));
    assert_eq!(request.body["instructions"], "Be brief.");
    assert_eq!(request.body["input"][0]["content"][0]["text"], "read a.rs");
    assert_eq!(request.body["tools"][0]["name"], "read_file");
    assert_eq!(request.body["stream"], true);

    assert_eq!(
        shown,
        [
            "reasoning:Look ",
            "reasoning:first.",
            "text:Reading ",
            "text:a.rs."
        ]
    );
    assert_eq!(turn.content, "Reading a.rs.");
    assert_eq!(
        turn.tool_calls,
        [ToolCall {
            id: "call_A".into(),
            name: "read_file".into(),
            arguments: r#"{"path":"a.rs"}"#.into(),
        }]
    );
    assert_eq!(turn.finish_reason.as_deref(), Some("tool_calls"));
    let usage = turn.usage.unwrap();
    assert_eq!(
        (
            usage.prompt_tokens,
            usage.completion_tokens,
            usage.reasoning_tokens
        ),
        (50, 20, 8)
    );
    let reasoning = turn.reasoning.unwrap();
    assert_eq!(reasoning.wire, WireApi::Responses);
    assert_eq!(reasoning.endpoint, base_url);
    assert_eq!(reasoning.text, "Look first.");
    assert_eq!(reasoning.items[0]["encrypted_content"], "gAAAA-1");
}
