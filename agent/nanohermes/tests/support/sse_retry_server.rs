//! A legacy (2025-11-25) Streamable HTTP server on loopback that polls
//! (SEP-1699) the way the conformance suite's `sse-retry` scenario does:
//! its one tool, `test_reconnection`, answers the POST with an SSE stream
//! that sends a priming event (an id, `retry: 500`, empty data) and closes
//! 50 ms later without the response; the response goes to the next GET,
//! whatever GET that is (the suite's server does not tell the standalone
//! stream from a resumption). It answers a session's standalone GET (no
//! `Last-Event-ID`) only after [`STANDALONE_HOLD`], as if the GET had
//! reached it that late (a busy machine): a client that sends its requests
//! before that stream is open gets its response on the wrong stream and
//! never resumes. Everything it sees is logged for the tests.

use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use futures::channel::mpsc;
use serde_json::{Value, json};

/// The `retry` the tool's stream asks for.
pub const RETRY: Duration = Duration::from_millis(500);
/// How long the standalone GET waits for its answer.
pub const STANDALONE_HOLD: Duration = Duration::from_millis(1000);
const SESSION: &str = "sse-retry-session";
/// The tool's result text.
pub const DONE: &str = "Reconnection test completed successfully";

/// One request as the server saw it.
#[derive(Debug, Clone)]
pub enum Seen {
    /// A POST of `method` (`None`: a response or a notification without one),
    /// and whether the standalone GET had been answered when it came.
    Post {
        /// The JSON-RPC method.
        method: Option<String>,
        /// Whether the standalone stream was open by then.
        standalone_open: bool,
    },
    /// A GET, with its `Last-Event-ID`.
    Get {
        /// The header, if sent.
        last_event_id: Option<String>,
        /// When it came.
        at: Instant,
    },
}

/// Where the tool's response went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Delivered {
    /// On a GET with this `Last-Event-ID`, or `None`: the standalone stream.
    OnGet(Option<String>),
}

#[derive(Default)]
struct Inner {
    seen: Vec<Seen>,
    next_event: u64,
    /// The `tools/call` waiting for a GET to carry its response.
    pending: Option<Value>,
    /// The id of the call stream's priming event, and when it was closed.
    priming_id: Option<String>,
    closed_at: Option<Instant>,
    standalone_open: bool,
    delivered: Option<Delivered>,
    /// GET streams stay open while the server runs.
    open_streams: Vec<mpsc::UnboundedSender<String>>,
}

/// The running server (stopped with the test's runtime).
#[derive(Clone)]
pub struct SseRetryServer {
    /// `http://127.0.0.1:PORT/mcp`.
    pub url: String,
    inner: Arc<Mutex<Inner>>,
}

impl SseRetryServer {
    /// Starts it on a free loopback port.
    pub async fn start() -> SseRetryServer {
        let inner = Arc::new(Mutex::new(Inner::default()));
        let app = Router::new()
            .route("/mcp", post(on_post).get(on_get).delete(on_delete))
            .with_state(inner.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind loopback");
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        SseRetryServer { url, inner }
    }

    /// Every request so far, in order.
    pub fn seen(&self) -> Vec<Seen> {
        self.inner.lock().unwrap().seen.clone()
    }

    /// Where the tool's response went, if anywhere yet.
    pub fn delivered(&self) -> Option<Delivered> {
        self.inner.lock().unwrap().delivered.clone()
    }

    /// The id of the tool stream's priming event and when that stream closed.
    pub fn closed(&self) -> Option<(String, Instant)> {
        let inner = self.inner.lock().unwrap();
        Some((inner.priming_id.clone()?, inner.closed_at?))
    }
}

type Shared = State<Arc<Mutex<Inner>>>;

fn event(inner: &mut Inner, data: &str) -> (String, String) {
    inner.next_event += 1;
    let id = format!("event-{}", inner.next_event);
    let frame = format!("id: {id}\nretry: {}\ndata: {data}\n\n", RETRY.as_millis());
    (id, frame)
}

fn sse(rx: mpsc::UnboundedReceiver<String>) -> Response {
    use futures::StreamExt as _;
    (
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
            (header::HeaderName::from_static("mcp-session-id"), SESSION),
        ],
        Body::from_stream(rx.map(Ok::<_, Infallible>)),
    )
        .into_response()
}

fn json_reply(body: Value) -> Response {
    (
        [(header::HeaderName::from_static("mcp-session-id"), SESSION)],
        axum::Json(body),
    )
        .into_response()
}

async fn on_post(State(inner): Shared, body: String) -> Response {
    let Ok(message) = serde_json::from_str::<Value>(&body) else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    let method = message["method"].as_str().map(str::to_owned);
    let id = message.get("id").cloned();
    let mut state = inner.lock().unwrap();
    let standalone_open = state.standalone_open;
    state.seen.push(Seen::Post {
        method: method.clone(),
        standalone_open,
    });
    let Some(id) = id else {
        return StatusCode::ACCEPTED.into_response();
    };
    match method.as_deref() {
        Some("initialize") => json_reply(json!({"jsonrpc": "2.0", "id": id, "result": {
            "protocolVersion": "2025-11-25",
            "serverInfo": {"name": "sse-retry-test-server", "version": "1.0.0"},
            "capabilities": {"tools": {}},
        }})),
        Some("tools/list") => json_reply(json!({"jsonrpc": "2.0", "id": id, "result": {"tools": [{
            "name": "test_reconnection",
            "description": "Closes its SSE stream before the response",
            "inputSchema": {"type": "object", "properties": {}},
        }]}})),
        Some("tools/call") => {
            let (tx, rx) = mpsc::unbounded();
            let (priming, frame) = event(&mut state, "");
            let _ = tx.unbounded_send(frame);
            state.pending = Some(id);
            state.priming_id = Some(priming);
            let inner = inner.clone();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(50)).await;
                inner.lock().unwrap().closed_at = Some(Instant::now());
                drop(tx);
            });
            sse(rx)
        }
        _ => json_reply(json!({"jsonrpc": "2.0", "id": id, "result": {}})),
    }
}

async fn on_get(State(inner): Shared, headers: HeaderMap) -> Response {
    let last_event_id = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    inner.lock().unwrap().seen.push(Seen::Get {
        last_event_id: last_event_id.clone(),
        at: Instant::now(),
    });
    if last_event_id.is_none() {
        tokio::time::sleep(STANDALONE_HOLD).await;
    }
    let mut state = inner.lock().unwrap();
    if last_event_id.is_none() {
        state.standalone_open = true;
    }
    let (tx, rx) = mpsc::unbounded();
    let (_, frame) = event(&mut state, "");
    let _ = tx.unbounded_send(frame);
    if let Some(id) = state.pending.take() {
        let response = json!({"jsonrpc": "2.0", "id": id, "result": {
            "content": [{"type": "text", "text": DONE}],
        }});
        let (_, frame) = event(&mut state, &response.to_string());
        let _ = tx.unbounded_send(frame);
        state.delivered = Some(Delivered::OnGet(last_event_id));
    }
    state.open_streams.push(tx);
    sse(rx)
}

async fn on_delete() -> StatusCode {
    StatusCode::OK
}
