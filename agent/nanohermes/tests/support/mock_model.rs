//! A scripted OpenAI-compatible model: the only test double of the suite.
//!
//! [`MockModel::start`] listens on `127.0.0.1:0` and answers each
//! `POST …/chat/completions` with the next [`Step`] of its script: an SSE
//! stream written in separate pieces (frames split mid-way, even mid UTF-8
//! character), a status with headers (429 + `Retry-After`), a whole JSON
//! body, or a dropped connection. Every request is recorded (path, headers,
//! body, arrival time) for assertions; the body is parsed as JSON when
//! [`MockModel::requests`] is asked, not before answering, so a
//! benchmark's step does not include the mock's parsing. Once the script
//! is spent it answers HTTP 500 `script exhausted`.
//!
//! [`MockModel::start_strict`] behaves like vLLM and llama.cpp: a request
//! whose history holds tool-call `arguments` that are not one JSON object
//! gets HTTP 500 (recorded, but no script step is used).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// One scripted answer.
#[derive(Debug, Clone)]
pub enum Reply {
    /// HTTP 200 `text/event-stream`; each piece is written and flushed on its own.
    Sse(Vec<Vec<u8>>),
    /// Any status, with extra headers and a body.
    Status {
        code: u16,
        headers: Vec<(String, String)>,
        body: String,
    },
    /// HTTP 200 `application/json` (the non-streaming path).
    Json(Value),
    /// Close the connection without answering.
    Drop,
    /// HTTP 200 `text/event-stream`, each piece written `every` after the
    /// one before (a slow model, or keep-alives while it thinks).
    Paced(Vec<Vec<u8>>, Duration),
    /// Any status and content type (an HTML error page from a proxy).
    Page {
        code: u16,
        content_type: String,
        body: String,
    },
    /// A hostile server: bodies generated while they are written, never
    /// held in the mock's memory.
    Hostile(Hostile),
}

/// What a hostile model server sends. Each writes until it is done or the
/// agent closes the connection.
#[derive(Debug, Clone, Copy)]
pub enum Hostile {
    /// HTTP 200 `application/json` with a `Content-Length` of `bytes`: one
    /// chat completion whose content is that long.
    HugeJson { bytes: u64 },
    /// A stream with one `write_file` call (`path: "hostile.txt"`) whose
    /// `content` argument is `bytes` long, in 64 KiB deltas, then a
    /// finish and `[DONE]`.
    HugeArguments { bytes: u64 },
    /// A stream head, then one byte of a valid frame every `every`, forever.
    Trickle { every: Duration },
    /// HTTP 200 `application/json`, `bytes` long: a valid completion
    /// followed by an array of that many `0,` (the most JSON values per
    /// byte: each costs a parser that builds a tree far more than a byte).
    DenseJson { bytes: u64 },
}

/// A reply plus something to do when its request arrives.
#[derive(Clone)]
pub struct Step {
    pub reply: Reply,
    pub on_request: Option<Arc<dyn Fn() + Send + Sync>>,
}

impl From<Reply> for Step {
    fn from(reply: Reply) -> Step {
        Step {
            reply,
            on_request: None,
        }
    }
}

impl Reply {
    /// Runs `hook` when this reply's request arrives, before answering.
    pub fn when_requested(self, hook: impl Fn() + Send + Sync + 'static) -> Step {
        Step {
            reply: self,
            on_request: Some(Arc::new(hook)),
        }
    }
}

/// A request as the mock received it.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Value,
    /// The size of the body as sent, in bytes.
    pub body_len: usize,
    pub at: Instant,
}

impl Recorded {
    /// A header's value, by case-insensitive name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The `messages` array of the body.
    pub fn messages(&self) -> &[Value] {
        self.body["messages"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
    }
}

/// A request as logged: its body as it came.
#[derive(Debug, Clone)]
struct Logged {
    path: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    at: Instant,
}

impl Logged {
    fn parsed(&self) -> Recorded {
        Recorded {
            path: self.path.clone(),
            headers: self.headers.clone(),
            body: serde_json::from_slice(&self.body).unwrap_or(Value::Null),
            body_len: self.body.len(),
            at: self.at,
        }
    }
}

/// The running mock.
pub struct MockModel {
    port: u16,
    recorded: Arc<Mutex<Vec<Logged>>>,
    task: tokio::task::JoinHandle<()>,
}

impl MockModel {
    /// Starts serving `script`, one step per request, in order.
    pub async fn start(script: Vec<Step>) -> MockModel {
        MockModel::serve_script(script, Mode::default()).await
    }

    /// Like [`MockModel::start`], but the way real model servers answer:
    /// each connection stays open for the next request, and a stream is
    /// sent chunked, every piece at once. The benchmark drives the agent
    /// with it; [`MockModel::start`] closes each connection, so that a
    /// test sees every stream end where its script ends it.
    pub async fn start_keep_alive(script: Vec<Step>) -> MockModel {
        let mode = Mode {
            keep_alive: true,
            ..Mode::default()
        };
        MockModel::serve_script(script, mode).await
    }

    /// Like [`MockModel::start`], but refuses (HTTP 500) any request whose
    /// history has tool-call arguments that are not one JSON object.
    pub async fn start_strict(script: Vec<Step>) -> MockModel {
        let mode = Mode {
            strict: true,
            ..Mode::default()
        };
        MockModel::serve_script(script, mode).await
    }

    async fn serve_script(script: Vec<Step>, mode: Mode) -> MockModel {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the mock model");
        let port = listener.local_addr().expect("mock address").port();
        let recorded = Arc::new(Mutex::new(Vec::new()));
        let script = Arc::new(Mutex::new(script.into_iter()));
        let log = recorded.clone();
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let (log, script) = (log.clone(), script.clone());
                tokio::spawn(async move { serve(stream, &log, &script, mode).await });
            }
        });
        MockModel {
            port,
            recorded,
            task,
        }
    }

    /// The base URL to give the agent (`OPENAI_BASE_URL`).
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    /// Every request received so far, in arrival order.
    pub fn requests(&self) -> Vec<Recorded> {
        let log = self.recorded.lock().expect("mock log").clone();
        log.iter().map(Logged::parsed).collect()
    }
}

impl Drop for MockModel {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// How the mock answers, beside its script.
#[derive(Debug, Clone, Copy, Default)]
struct Mode {
    /// Refuse histories whose tool-call arguments are not JSON objects.
    strict: bool,
    /// Keep connections open and send streams chunked.
    keep_alive: bool,
}

async fn serve(
    mut stream: TcpStream,
    log: &Mutex<Vec<Logged>>,
    script: &Mutex<std::vec::IntoIter<Step>>,
    mode: Mode,
) {
    let _ = stream.set_nodelay(true);
    while answer_one(&mut stream, log, script, mode).await && mode.keep_alive {}
    let _ = stream.shutdown().await;
}

/// Reads one request and answers it; false when the connection is done.
async fn answer_one(
    stream: &mut TcpStream,
    log: &Mutex<Vec<Logged>>,
    script: &Mutex<std::vec::IntoIter<Step>>,
    mode: Mode,
) -> bool {
    let strict = mode.strict;
    let Some((path, headers, body)) = read_request(stream).await else {
        return false;
    };
    // When the request arrived, before this mock spends time on it.
    let at = Instant::now();
    let refused = strict && {
        let parsed: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        !arguments_are_objects(
            parsed["messages"]
                .as_array()
                .map(Vec::as_slice)
                .unwrap_or_default(),
        )
    };
    // Take the step and record the request together, so the order of the
    // log is the order of the script.
    let step = {
        let mut log = log.lock().expect("mock log");
        let step = if refused {
            None
        } else {
            script.lock().expect("mock script").next()
        };
        log.push(Logged {
            path,
            headers,
            body,
            at,
        });
        step
    };
    let step = step.unwrap_or_else(|| {
        if refused {
            // llama.cpp's answer to unparsable arguments in the history.
            return Reply::Status {
                code: 500,
                headers: vec![],
                body: r#"{"error":{"code":500,"message":"Failed to parse tool call arguments as JSON","type":"server_error"}}"#.into(),
            }
            .into();
        }
        Reply::Status {
            code: 500,
            headers: vec![],
            body: r#"{"error":{"message":"script exhausted"}}"#.into(),
        }
        .into()
    });
    if let Some(hook) = &step.on_request {
        hook();
    }
    let connection = if mode.keep_alive {
        "keep-alive"
    } else {
        "close"
    };
    match step.reply {
        Reply::Sse(pieces) if mode.keep_alive => {
            let mut out = format!("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nConnection: {connection}\r\nTransfer-Encoding: chunked\r\n\r\n").into_bytes();
            for piece in pieces.iter().filter(|p| !p.is_empty()) {
                out.extend_from_slice(format!("{:x}\r\n", piece.len()).as_bytes());
                out.extend_from_slice(piece);
                out.extend_from_slice(b"\r\n");
            }
            out.extend_from_slice(b"0\r\n\r\n");
            stream.write_all(&out).await.is_ok()
        }
        Reply::Sse(pieces) => {
            let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nConnection: close\r\n\r\n";
            if stream.write_all(head.as_bytes()).await.is_err() {
                return false;
            }
            for piece in pieces {
                if stream.write_all(&piece).await.is_err() || stream.flush().await.is_err() {
                    return false;
                }
                // Let the piece leave as its own read on the other side.
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            false
        }
        Reply::Status {
            code,
            headers,
            body,
        } => {
            let mut head = format!(
                "HTTP/1.1 {code} Scripted\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: {connection}\r\n",
                body.len()
            );
            for (name, value) in headers {
                head.push_str(&format!("{name}: {value}\r\n"));
            }
            head.push_str("\r\n");
            head.push_str(&body);
            stream.write_all(head.as_bytes()).await.is_ok()
        }
        Reply::Json(value) => {
            let body = value.to_string();
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: {connection}\r\n\r\n{body}",
                body.len()
            );
            stream.write_all(head.as_bytes()).await.is_ok()
        }
        Reply::Drop => false,
        Reply::Paced(pieces, every) => {
            let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nConnection: close\r\n\r\n";
            if stream.write_all(head.as_bytes()).await.is_err() {
                return false;
            }
            for piece in pieces {
                tokio::time::sleep(every).await;
                if stream.write_all(&piece).await.is_err() || stream.flush().await.is_err() {
                    return false;
                }
            }
            false
        }
        Reply::Page {
            code,
            content_type,
            body,
        } => {
            let head = format!(
                "HTTP/1.1 {code} Scripted\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: {connection}\r\n\r\n{body}",
                body.len()
            );
            stream.write_all(head.as_bytes()).await.is_ok()
        }
        Reply::Hostile(hostile) => {
            let _ = write_hostile(stream, hostile).await;
            false
        }
    }
}

/// Writes `hostile`'s answer; an error once the agent hangs up.
async fn write_hostile(stream: &mut TcpStream, hostile: Hostile) -> std::io::Result<()> {
    const SSE_HEAD: &str = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nConnection: close\r\n\r\n";
    const PIECE: usize = 64 * 1024;
    let filler = vec![b'x'; PIECE];
    match hostile {
        Hostile::HugeJson { bytes } => {
            let start = br#"{"choices":[{"message":{"role":"assistant","content":""#;
            stream
                .write_all(
                    format!("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {bytes}\r\nConnection: close\r\n\r\n")
                        .as_bytes(),
                )
                .await?;
            stream.write_all(start).await?;
            let mut left = bytes.saturating_sub(start.len() as u64);
            while left > 0 {
                let n = left.min(PIECE as u64) as usize;
                stream.write_all(&filler[..n]).await?;
                left -= n as u64;
            }
        }
        Hostile::HugeArguments { bytes } => {
            stream.write_all(SSE_HEAD.as_bytes()).await?;
            let first = chunk(
                json!({"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_huge",
                    "type":"function","function":{"name":"write_file",
                    "arguments":"{\"path\":\"hostile.txt\",\"content\":\""}}]}),
                None,
            );
            stream
                .write_all(format!("data: {first}\n\n").as_bytes())
                .await?;
            let piece = chunk(
                json!({"tool_calls":[{"index":0,"function":{"arguments":"x".repeat(PIECE)}}]}),
                None,
            );
            let frame = format!("data: {piece}\n\n");
            for _ in 0..bytes.div_ceil(PIECE as u64) {
                stream.write_all(frame.as_bytes()).await?;
            }
            let last = chunk(
                json!({"tool_calls":[{"index":0,"function":{"arguments":"\"}"}}]}),
                None,
            );
            let finish = chunk(json!({}), Some("tool_calls"));
            stream
                .write_all(format!("data: {last}\n\ndata: {finish}\n\ndata: [DONE]\n\n").as_bytes())
                .await?;
        }
        Hostile::DenseJson { bytes } => {
            let start =
                br#"{"choices":[{"message":{"role":"assistant","content":"dense"}}],"x":[0"#;
            let end = b"]}";
            stream
                .write_all(
                    format!("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {bytes}\r\nConnection: close\r\n\r\n")
                        .as_bytes(),
                )
                .await?;
            stream.write_all(start).await?;
            let zeros = b",0".repeat(PIECE / 2);
            let mut left = bytes.saturating_sub((start.len() + end.len()) as u64);
            while left > 0 {
                // An even count keeps the `,0` pairs whole.
                let n = (left.min(PIECE as u64) as usize) & !1;
                if n == 0 {
                    stream.write_all(b" ").await?;
                    left -= 1;
                    continue;
                }
                stream.write_all(&zeros[..n]).await?;
                left -= n as u64;
            }
            stream.write_all(end).await?;
        }
        Hostile::Trickle { every } => {
            stream.write_all(SSE_HEAD.as_bytes()).await?;
            let frame = format!("data: {}\n\n", chunk(json!({"content":"x"}), None));
            for byte in frame.bytes().cycle() {
                stream.write_all(&[byte]).await?;
                stream.flush().await?;
                tokio::time::sleep(every).await;
            }
        }
    }
    stream.flush().await
}

/// Whether every assistant tool call in `messages` has arguments that
/// parse as one JSON object: what strict servers (vLLM, llama.cpp) check
/// before they answer.
pub fn arguments_are_objects(messages: &[Value]) -> bool {
    messages
        .iter()
        .filter(|m| m["role"] == "assistant")
        .filter_map(|m| m.get("tool_calls")?.as_array())
        .flatten()
        .all(|call| {
            call["function"]["arguments"]
                .as_str()
                .and_then(|text| serde_json::from_str::<Value>(text).ok())
                .is_some_and(|value| value.is_object())
        })
}

async fn read_request(stream: &mut TcpStream) -> Option<(String, Vec<(String, String)>, Vec<u8>)> {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        if let Some(at) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break at;
        }
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let path = lines.next()?.split_whitespace().nth(1)?.to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_owned(), v.trim().to_owned()))
        .collect();
    let length = headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse::<usize>().ok())
        .unwrap_or(0);
    let mut body = buffer[head_end + 4..].to_vec();
    while body.len() < length {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    Some((path, headers, body))
}

// ---- Building scripted streams ----

/// `data: …\n\n` frames, each written in two pieces split at its middle
/// byte (so frames, and sometimes UTF-8 characters, span two reads).
pub fn sse(frames: &[Value]) -> Reply {
    let Reply::Sse(mut pieces) = sse_without_done(frames) else {
        unreachable!()
    };
    pieces.push(b"data: [DONE]\n\n".to_vec());
    Reply::Sse(pieces)
}

/// Like [`sse`] but the stream just ends after the last frame: no
/// `[DONE]`. With no `finish_reason` among the frames either, it is a
/// stream cut short.
pub fn sse_without_done(frames: &[Value]) -> Reply {
    let mut pieces = Vec::new();
    for frame in frames {
        let bytes = format!("data: {frame}\n\n").into_bytes();
        let middle = bytes.len() / 2;
        pieces.push(bytes[..middle].to_vec());
        pieces.push(bytes[middle..].to_vec());
    }
    Reply::Sse(pieces)
}

/// Raw SSE text, written in one piece.
pub fn sse_raw(text: &str) -> Reply {
    Reply::Sse(vec![text.as_bytes().to_vec()])
}

/// One chat completion chunk with `delta` and `finish_reason`.
pub fn chunk(delta: Value, finish: Option<&str>) -> Value {
    json!({"id":"chatcmpl-1","object":"chat.completion.chunk","model":"mock",
           "choices":[{"index":0,"delta":delta,"finish_reason":finish}]})
}

/// The last frame of a stream asked for usage: `choices: []`.
pub fn usage_frame() -> Value {
    json!({"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[],
           "usage":{"prompt_tokens":100,"completion_tokens":10,"total_tokens":110}})
}

/// A streamed text answer: role frame, one frame per piece, finish, usage.
pub fn text(pieces: &[&str]) -> Reply {
    let mut frames = vec![chunk(json!({"role":"assistant","content":null}), None)];
    frames.extend(pieces.iter().map(|p| chunk(json!({"content":p}), None)));
    frames.push(chunk(json!({}), Some("stop")));
    frames.push(usage_frame());
    sse(&frames)
}

/// A scripted tool call: id, name, and the argument text in pieces.
pub struct Call<'a> {
    pub id: &'a str,
    pub name: &'a str,
    pub pieces: Vec<String>,
}

/// A call whose arguments arrive in one piece.
pub fn call<'a>(id: &'a str, name: &'a str, arguments: Value) -> Call<'a> {
    Call {
        id,
        name,
        pieces: vec![arguments.to_string()],
    }
}

/// A call whose argument text is cut into `n` pieces of about equal size.
pub fn call_split<'a>(id: &'a str, name: &'a str, arguments: Value, n: usize) -> Call<'a> {
    let text = arguments.to_string();
    let chars: Vec<char> = text.chars().collect();
    let size = chars.len().div_ceil(n);
    Call {
        id,
        name,
        pieces: chars.chunks(size).map(|c| c.iter().collect()).collect(),
    }
}

/// A call with raw (possibly invalid) argument text.
pub fn call_raw<'a>(id: &'a str, name: &'a str, arguments: &str) -> Call<'a> {
    Call {
        id,
        name,
        pieces: vec![arguments.to_owned()],
    }
}

/// A streamed tool-call answer, as OpenAI sends it: per call, a first delta
/// with index, id, type and name, then one delta per argument piece.
pub fn tool_calls(calls: &[Call<'_>]) -> Reply {
    let mut frames = tool_call_frames(calls);
    frames.push(chunk(json!({}), Some("tool_calls")));
    frames.push(usage_frame());
    sse(&frames)
}

/// Tool calls whose turn ran out of tokens: `finish_reason: "length"`,
/// so the last call is cut off wherever its argument text stops.
pub fn tool_calls_cut_off(calls: &[Call<'_>]) -> Reply {
    let mut frames = tool_call_frames(calls);
    frames.push(chunk(json!({}), Some("length")));
    frames.push(usage_frame());
    sse(&frames)
}

/// The frames of [`tool_calls`] without the finish and usage frames: the
/// role frame, then per call a first delta and one per argument piece.
/// An empty id is left out of the delta, as some servers do.
pub fn tool_call_frames(calls: &[Call<'_>]) -> Vec<Value> {
    let mut frames = vec![chunk(json!({"role":"assistant","content":null}), None)];
    for (index, call) in calls.iter().enumerate() {
        let mut first = json!({"index":index,"type":"function",
                               "function":{"name":call.name,"arguments":""}});
        if !call.id.is_empty() {
            first["id"] = call.id.into();
        }
        frames.push(chunk(json!({"tool_calls":[first]}), None));
        for piece in &call.pieces {
            frames.push(chunk(
                json!({"tool_calls":[{"index":index,"function":{"arguments":piece}}]}),
                None,
            ));
        }
    }
    frames
}

/// An error status with an OpenAI-style error body.
pub fn status(code: u16, message: &str) -> Reply {
    Reply::Status {
        code,
        headers: vec![],
        body: json!({"error":{"message":message}}).to_string(),
    }
}
