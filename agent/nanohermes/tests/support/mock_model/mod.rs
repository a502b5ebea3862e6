//! A scripted model speaking all three wires: the only test double of the suite.
//!
//! [`MockModel::start`] listens on `127.0.0.1:0` and answers each `POST`
//! with the next [`Step`] of its script. A [`Reply::Turn`] (what [`text`],
//! [`tool_calls`] and [`tool_calls_cut_off`] build) is wire-neutral: it is
//! rendered when its request arrives, in the wire of the request's path —
//! `…/chat/completions` as chat-completions SSE ([`chat`]), `…/responses`
//! as Responses events ([`responses`]), `…/messages` as Anthropic Messages
//! events ([`messages`]) — so one script runs on any wire. Other replies
//! are raw: an SSE stream written in separate pieces (frames split mid-way,
//! even mid UTF-8 character), a status with headers (429 + `Retry-After`),
//! a whole JSON body, or a dropped connection. Every request is recorded
//! (path, headers, body, arrival time) for assertions; the body is parsed
//! as JSON when [`MockModel::requests`] is asked (and before answering only
//! when a rule or the usage needs it), so a benchmark's step does not
//! include the mock's parsing. Once the script is spent it answers HTTP 500
//! `script exhausted`.
//!
//! Strictness ([`strict`]): the Responses and Messages wires always check a
//! request the way OpenAI and Anthropic do; chat checks only what
//! [`Options`] turns on (`strict`: tool-call arguments as vLLM and
//! llama.cpp; `thinking`: DeepSeek's `reasoning_content` replay), and
//! `thinking` also says whether a Responses model reasons. A refused
//! request gets the provider's status and error body, is recorded with
//! [`Recorded::refused`], and uses no script step.
//!
//! Cache accounting ([`cache`]): each recorded request carries the bytes of
//! its prompt and of the part a provider's prompt cache would have served
//! (OpenAI's longest common prefix, Anthropic's `cache_control`
//! breakpoints); with [`Options::accounted_usage`] the usage the mock
//! reports is computed from them too.

pub mod cache;
pub mod chat;
pub mod history;
pub mod messages;
pub mod responses;
pub mod strict;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub use nanohermes_llm::WireApi;
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
    /// A model turn, streamed in the wire of the request's path.
    Turn(Turn),
}

/// A model turn, whatever the wire: what [`Reply::Turn`] renders.
#[derive(Debug, Clone, Default)]
pub struct Turn {
    /// The reasoning before the answer, in pieces (one delta each); empty
    /// for none. Chat sends it as `reasoning_content`, responses as a
    /// `reasoning` item with a summary and `encrypted_content`
    /// (`enc_N_<hash>`), messages as a `thinking` block with a signature
    /// (`sig_N_<hash>`). The mock remembers which calls it went with, and
    /// the strict rules want it back with them.
    pub thought: Vec<String>,
    /// The answer text, in pieces.
    pub text: Vec<String>,
    /// The tool calls, in order.
    pub calls: Vec<ScriptedCall>,
    /// The token budget ran out: the last call (or the text) stops where
    /// its pieces stop (`length`, `max_output_tokens`, `max_tokens`).
    pub cut_off: bool,
    /// The usage to report instead of the mock's own figures.
    pub usage: Option<Figures>,
    /// An unusual stop: Anthropic's `pause_turn`, or a refusal.
    pub stop: Option<Stop>,
    /// Write the whole stream in one piece (a benchmark's instant model),
    /// not frame halves paced apart.
    pub one_piece: bool,
    /// The connection ends before the turn does: the stream stops where
    /// its last piece stops, without what ends a turn on its wire (chat's
    /// finish reason, usage and `[DONE]`; `response.completed`; Anthropic's
    /// `message_delta` and `message_stop`).
    pub cut_short: bool,
}

/// One scripted tool call.
#[derive(Debug, Clone)]
pub struct ScriptedCall {
    /// The call id; empty means the server sends none (chat) or the mock
    /// makes one up (the other wires require one).
    pub id: String,
    /// The tool name.
    pub name: String,
    /// The argument text, in deltas.
    pub pieces: Vec<String>,
}

/// How a turn stops besides finishing or running out of tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// Anthropic's `pause_turn` (a long server-side turn paused); `stop`
    /// on the OpenAI wires, which have no such reason.
    PauseTurn,
    /// The model refused: the text is the refusal (chat's `refusal`
    /// delta, a Responses `refusal` part, Anthropic's `refusal` stop).
    Refusal,
}

/// Token figures of one answer, as the wire reports them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Figures {
    /// All input tokens, cached or not.
    pub input: u64,
    /// All output tokens, reasoning included.
    pub output: u64,
    /// Of the input, the tokens read from the cache.
    pub cached: u64,
    /// Of the input, the tokens written to the cache (Anthropic).
    pub cache_write: u64,
    /// Of the output, the tokens spent reasoning.
    pub reasoning: u64,
}

impl Default for Figures {
    /// The fixed figures every test before cache accounting expects: 100
    /// in, 10 out.
    fn default() -> Self {
        Figures {
            input: 100,
            output: 10,
            cached: 0,
            cache_write: 0,
            reasoning: 0,
        }
    }
}

/// What happens while a [`Turn`] is rendered: the reasoning the mock
/// handed out, by call id, for the strict rules to check on replay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Issued {
    /// Chat: the `reasoning_content` text.
    Chat(String),
    /// Responses: the reasoning item's id and `encrypted_content`.
    Responses { id: String, encrypted: String },
    /// Messages: the thinking text and its signature.
    Messages { thinking: String, signature: String },
}

/// What the mock remembers between requests.
#[derive(Debug, Default)]
pub struct State {
    /// The reasoning handed out, by wire and call id.
    pub issued: HashMap<(WireApi, String), Issued>,
    /// The number of turns rendered so far (ids and signatures carry it).
    pub turns: u64,
}

/// What a turn's renderer needs besides the turn.
pub struct RenderContext {
    /// The turn's serial number, from 1.
    pub serial: u64,
    /// The usage to report.
    pub figures: Figures,
}

/// A stable short hash (FNV-1a): signatures and encrypted content name
/// the text they go with, so an altered one is seen.
pub fn hash(text: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in text.bytes() {
        h ^= u64::from(byte);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// The wire a request's path names, if any.
pub fn wire_of(path: &str) -> Option<WireApi> {
    let path = path.split('?').next().unwrap_or_default();
    if path.ends_with("/chat/completions") {
        Some(WireApi::Chat)
    } else if path.ends_with("/responses") {
        Some(WireApi::Responses)
    } else if path.ends_with("/messages") {
        Some(WireApi::Messages)
    } else {
        None
    }
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

    /// The same reply written in one piece: no pauses between frame
    /// halves (what a benchmark wants to measure the agent, not the mock).
    pub fn in_one_piece(self) -> Reply {
        match self {
            Reply::Sse(pieces) => Reply::Sse(vec![pieces.concat()]),
            Reply::Turn(turn) => Reply::Turn(Turn {
                one_piece: true,
                ..turn
            }),
            other => other,
        }
    }

    /// A turn with `thought` (in pieces) before its answer.
    pub fn with_thought(self, thought: &[&str]) -> Reply {
        self.map_turn(|turn| turn.thought = thought.iter().map(|p| p.to_string()).collect())
    }

    /// A turn reporting `figures` as its usage.
    pub fn with_usage(self, figures: Figures) -> Reply {
        self.map_turn(|turn| turn.usage = Some(figures))
    }

    /// The same turn, its stream cut before the turn's end ([`Turn::cut_short`]).
    pub fn cut_short(self) -> Reply {
        self.map_turn(|turn| turn.cut_short = true)
    }

    /// A turn stopping with `stop`.
    pub fn with_stop(self, stop: Stop) -> Reply {
        self.map_turn(|turn| turn.stop = Some(stop))
    }

    fn map_turn(self, change: impl FnOnce(&mut Turn)) -> Reply {
        match self {
            Reply::Turn(mut turn) => {
                change(&mut turn);
                Reply::Turn(turn)
            }
            other => panic!("only a scripted turn can be changed so, not {other:?}"),
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
    /// The wire its path names (`None`: an unknown path, answered as chat).
    pub wire: Option<WireApi>,
    /// The error body the mock answered instead of a script step, when a
    /// strict rule refused the request.
    pub refused: Option<String>,
    /// The prompt in the provider's canonical render order (tools, then
    /// instructions or system, then the history), in bytes: what the cache
    /// figures are shares of.
    pub prompt_bytes: usize,
    /// Of the prompt, the bytes the provider's prompt cache would have
    /// served ([`cache`]): OpenAI's rounded common prefix, Anthropic's read
    /// breakpoint prefix.
    pub cached_bytes: usize,
    /// Of the prompt, the bytes written to the cache (Anthropic only).
    pub cache_write_bytes: usize,
}

impl Recorded {
    /// A header's value, by case-insensitive name.
    pub fn header(&self, name: &str) -> Option<&str> {
        header(&self.headers, name)
    }

    /// The `messages` array of the body (chat and messages; the Responses
    /// history is [`Recorded::input`]).
    pub fn messages(&self) -> &[Value] {
        self.body["messages"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
    }

    /// The `input` array of a Responses body.
    pub fn input(&self) -> &[Value] {
        self.body["input"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
    }

    /// What the model was sent, whatever the wire, in the chat shape of
    /// the transcript ([`history::of`]): a chat request's `messages` as
    /// they are; a Responses or Messages request converted back, so that
    /// one assertion on the history holds on every wire.
    pub fn history(&self) -> Vec<Value> {
        history::of(self.wire.unwrap_or(WireApi::Chat), &self.body)
    }
}

/// A header's value in `headers`, by case-insensitive name.
pub fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// A request as logged: its body as it came.
#[derive(Debug, Clone)]
struct Logged {
    path: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    at: Instant,
    refused: Option<String>,
}

impl Logged {
    fn parsed(&self) -> Recorded {
        Recorded {
            path: self.path.clone(),
            headers: self.headers.clone(),
            body: serde_json::from_slice(&self.body).unwrap_or(Value::Null),
            body_len: self.body.len(),
            at: self.at,
            wire: wire_of(&self.path),
            refused: self.refused.clone(),
            prompt_bytes: 0,
            cached_bytes: 0,
            cache_write_bytes: 0,
        }
    }
}

/// The cache figures of each of `requests`, in order, each against the
/// ones before it that were not refused.
fn account_all(requests: &mut [Recorded]) {
    let mut seen: Vec<cache::Rendered> = Vec::new();
    for request in requests.iter_mut() {
        let Some(wire) = request.wire else { continue };
        let rendered = cache::render(wire, &request.body);
        let figures = cache::account(&seen, &rendered);
        request.prompt_bytes = figures.prompt_bytes;
        request.cached_bytes = figures.cached_bytes;
        request.cache_write_bytes = figures.write_bytes;
        if request.refused.is_none() {
            seen.push(rendered);
        }
    }
}

/// How the mock answers, beside its script.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// Keep connections open and send streams chunked, every piece at once
    /// (the way real model servers answer; the benchmark's mode).
    pub keep_alive: bool,
    /// Chat: refuse (HTTP 500, as llama.cpp) histories whose tool-call
    /// arguments are not one JSON object.
    pub strict: bool,
    /// The model reasons. Chat: DeepSeek's thinking mode, refusing (HTTP
    /// 400) an assistant tool-call turn whose scripted thought is not sent
    /// back as its `reasoning_content`. Responses: a reasoning model,
    /// refusing a request without `include:
    /// ["reasoning.encrypted_content"]` (and, when off, one with it, as
    /// models without reasoning do).
    pub thinking: bool,
    /// Report usage computed from the request (input = prompt bytes / 4,
    /// cached and cache-written tokens from [`cache`]) instead of the fixed
    /// 100 in, 10 out.
    pub accounted_usage: bool,
    /// Answer every request sent without tools (a compaction's summary, a
    /// memory distillation) with this reply, using no script step: where
    /// they fall in a long run is not worth scripting (the benchmark).
    pub toolless: Option<fn() -> Reply>,
    /// Responses: a model without reasoning, refusing (HTTP 400) the
    /// encrypted-reasoning `include` that a reasoning model needs.
    pub plain_model: bool,
}

/// The running mock.
pub struct MockModel {
    port: u16,
    recorded: Arc<Mutex<Vec<Logged>>>,
    state: Arc<Mutex<State>>,
    task: tokio::task::JoinHandle<()>,
}

impl MockModel {
    /// Starts serving `script`, one step per request, in order.
    pub async fn start(script: Vec<Step>) -> MockModel {
        MockModel::with_options(Options::default(), script).await
    }

    /// Like [`MockModel::start`], but the way real model servers answer:
    /// each connection stays open for the next request, and a stream is
    /// sent chunked, every piece at once. The benchmark drives the agent
    /// with it; [`MockModel::start`] closes each connection, so that a
    /// test sees every stream end where its script ends it.
    pub async fn start_keep_alive(script: Vec<Step>) -> MockModel {
        let options = Options {
            keep_alive: true,
            ..Options::default()
        };
        MockModel::with_options(options, script).await
    }

    /// Like [`MockModel::start`], but refuses (HTTP 500) any chat request
    /// whose history has tool-call arguments that are not one JSON object.
    pub async fn start_strict(script: Vec<Step>) -> MockModel {
        let options = Options {
            strict: true,
            ..Options::default()
        };
        MockModel::with_options(options, script).await
    }

    /// Starts serving `script` the way `options` say.
    pub async fn with_options(options: Options, script: Vec<Step>) -> MockModel {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the mock model");
        let port = listener.local_addr().expect("mock address").port();
        let recorded = Arc::new(Mutex::new(Vec::new()));
        let state = Arc::new(Mutex::new(State::default()));
        let script = Arc::new(Mutex::new(script.into_iter()));
        let shared = Shared {
            log: recorded.clone(),
            state: state.clone(),
            script,
            options,
        };
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let shared = shared.clone();
                tokio::spawn(async move { serve(stream, &shared).await });
            }
        });
        MockModel {
            port,
            recorded,
            state,
            task,
        }
    }

    /// The base URL to give the agent (`OPENAI_BASE_URL`).
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    /// Every request received so far, in arrival order, with its cache figures.
    pub fn requests(&self) -> Vec<Recorded> {
        let log = self.recorded.lock().expect("mock log").clone();
        let mut requests: Vec<Recorded> = log.iter().map(Logged::parsed).collect();
        account_all(&mut requests);
        requests
    }

    /// The reasoning the mock handed out, by wire and call id.
    pub fn issued(&self) -> HashMap<(WireApi, String), Issued> {
        self.state.lock().expect("mock state").issued.clone()
    }
}

impl Drop for MockModel {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// What every connection of one mock shares.
#[derive(Clone)]
struct Shared {
    log: Arc<Mutex<Vec<Logged>>>,
    state: Arc<Mutex<State>>,
    script: Arc<Mutex<std::vec::IntoIter<Step>>>,
    options: Options,
}

async fn serve(mut stream: TcpStream, shared: &Shared) {
    let _ = stream.set_nodelay(true);
    while answer_one(&mut stream, shared).await && shared.options.keep_alive {}
    let _ = stream.shutdown().await;
}

/// Reads one request and answers it; false when the connection is done.
async fn answer_one(stream: &mut TcpStream, shared: &Shared) -> bool {
    let options = shared.options;
    let Some((path, headers, body)) = read_request(stream).await else {
        return false;
    };
    // When the request arrived, before this mock spends time on it.
    let at = Instant::now();
    let wire = wire_of(&path);
    // Parsed only when a rule or the usage needs it: chat without rules
    // answers without parsing, as before.
    let needs_body = matches!(wire, Some(WireApi::Responses | WireApi::Messages))
        || options.strict
        || options.thinking
        || options.accounted_usage
        || options.toolless.is_some();
    let parsed: Value = if needs_body {
        serde_json::from_slice(&body).unwrap_or(Value::Null)
    } else {
        Value::Null
    };
    let refusal = match wire {
        Some(wire) if needs_body => {
            let state = shared.state.lock().expect("mock state");
            strict::check(wire, &headers, &parsed, options, &state.issued).err()
        }
        _ => None,
    };
    // Take the step and record the request together, so the order of the
    // log is the order of the script.
    let (step, figures) = {
        let mut log = shared.log.lock().expect("mock log");
        let toolless = options.toolless.filter(|_| parsed.get("tools").is_none());
        let step = if refusal.is_some() {
            None
        } else if let Some(reply) = toolless {
            Some(reply().into())
        } else {
            shared.script.lock().expect("mock script").next()
        };
        let figures = match (&step, wire) {
            (
                Some(Step {
                    reply: Reply::Turn(_),
                    ..
                }),
                Some(wire),
            ) if options.accounted_usage => Some(accounted(wire, &log, &parsed)),
            _ => None,
        };
        log.push(Logged {
            path,
            headers,
            body,
            at,
            refused: refusal.as_ref().map(|r| r.body.clone()),
        });
        (step, figures)
    };
    let step = step.unwrap_or_else(|| match &refusal {
        Some(refusal) => Reply::Status {
            code: refusal.code,
            headers: vec![],
            body: refusal.body.clone(),
        }
        .into(),
        None => Reply::Status {
            code: 500,
            headers: vec![],
            body: r#"{"error":{"message":"script exhausted"}}"#.into(),
        }
        .into(),
    });
    if let Some(hook) = &step.on_request {
        hook();
    }
    let reply = match step.reply {
        Reply::Turn(turn) => {
            let wire = wire.unwrap_or(WireApi::Chat);
            let pieces = {
                let mut state = shared.state.lock().expect("mock state");
                state.turns += 1;
                let context = RenderContext {
                    serial: state.turns,
                    figures: turn.usage.or(figures).unwrap_or_default(),
                };
                let (pieces, issued) = match wire {
                    WireApi::Chat => chat::render(&turn, &context),
                    WireApi::Responses => responses::render(&turn, &context),
                    WireApi::Messages => messages::render(&turn, &context),
                };
                for (id, what) in issued {
                    state.issued.insert((wire, id), what);
                }
                pieces
            };
            if turn.one_piece {
                Reply::Sse(vec![pieces.concat()])
            } else {
                Reply::Sse(pieces)
            }
        }
        other => other,
    };
    write_reply(stream, reply, wire, options.keep_alive).await
}

/// The usage of a turn answering `body`, from the cache accounting
/// against the requests logged before it.
fn accounted(wire: WireApi, log: &[Logged], body: &Value) -> Figures {
    let seen: Vec<cache::Rendered> = log
        .iter()
        .filter(|l| l.refused.is_none())
        .filter_map(|l| {
            let wire = wire_of(&l.path)?;
            let body: Value = serde_json::from_slice(&l.body).ok()?;
            Some(cache::render(wire, &body))
        })
        .collect();
    let this = cache::render(wire, body);
    let figures = cache::account(&seen, &this);
    Figures {
        input: (figures.prompt_bytes / 4) as u64,
        output: 10,
        cached: (figures.cached_bytes / 4) as u64,
        cache_write: (figures.write_bytes / 4) as u64,
        reasoning: 0,
    }
}

/// Writes `reply`; false when the connection is done.
async fn write_reply(
    stream: &mut TcpStream,
    reply: Reply,
    wire: Option<WireApi>,
    keep_alive: bool,
) -> bool {
    let connection = if keep_alive { "keep-alive" } else { "close" };
    match reply {
        Reply::Sse(pieces) if keep_alive => {
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
            let _ = write_hostile(stream, hostile, wire).await;
            false
        }
        // Rendered into `Sse` before it gets here.
        Reply::Turn(_) => false,
    }
}

/// What a hostile model server sends. Each writes until it is done or the
/// agent closes the connection.
#[derive(Debug, Clone, Copy)]
pub enum Hostile {
    /// HTTP 200 `application/json` with a `Content-Length` of `bytes`: one
    /// chat completion whose content is that long.
    HugeJson { bytes: u64 },
    /// A stream with one `write_file` call (`path: "hostile.txt"`) whose
    /// `content` argument is `bytes` long, in 64 KiB deltas, then the end
    /// of the turn, in the wire of the request's path: chat frames then a
    /// finish and `[DONE]`; Responses argument deltas then
    /// `response.completed`; Anthropic `input_json_delta`s then
    /// `message_stop` (the whole arguments are never repeated in a `done`
    /// event: the mock does not hold them).
    HugeArguments { bytes: u64 },
    /// A stream head, then one byte of a valid frame every `every`, forever.
    Trickle { every: Duration },
    /// HTTP 200 `application/json`, `bytes` long: a valid completion
    /// followed by an array of that many `0,` (the most JSON values per
    /// byte: each costs a parser that builds a tree far more than a byte).
    DenseJson { bytes: u64 },
}

/// Writes `hostile`'s answer; an error once the agent hangs up.
async fn write_hostile(
    stream: &mut TcpStream,
    hostile: Hostile,
    wire: Option<WireApi>,
) -> std::io::Result<()> {
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
        Hostile::HugeArguments { bytes } if wire.is_some_and(|w| w != WireApi::Chat) => {
            stream.write_all(SSE_HEAD.as_bytes()).await?;
            let wire = wire.unwrap_or(WireApi::Chat);
            let event = |value: Value| {
                let name = value["type"].as_str().unwrap_or_default().to_owned();
                format!("event: {name}\ndata: {value}\n\n")
            };
            let delta = |text: &str| match wire {
                WireApi::Responses => {
                    event(json!({"type":"response.function_call_arguments.delta",
                    "item_id":"fc_huge","output_index":0,"delta":text}))
                }
                _ => event(json!({"type":"content_block_delta","index":0,
                    "delta":{"type":"input_json_delta","partial_json":text}})),
            };
            let (start, end) = match wire {
                WireApi::Responses => (
                    event(
                        json!({"type":"response.created","response":{"id":"resp_huge",
                        "object":"response","status":"in_progress","model":"mock","output":[]}}),
                    ) + &event(json!({"type":"response.output_item.added","output_index":0,
                            "item":{"type":"function_call","id":"fc_huge","call_id":"call_huge",
                                    "name":"write_file","arguments":"","status":"in_progress"}})),
                    event(
                        json!({"type":"response.completed","response":{"id":"resp_huge",
                        "object":"response","status":"completed","model":"mock","output":[],
                        "usage":{"input_tokens":100,"output_tokens":10,"total_tokens":110}}}),
                    ),
                ),
                _ => (
                    event(json!({"type":"message_start","message":{"id":"msg_huge",
                        "type":"message","role":"assistant","content":[],"model":"mock",
                        "stop_reason":null,"usage":{"input_tokens":100,"output_tokens":1}}}))
                        + &event(json!({"type":"content_block_start","index":0,
                            "content_block":{"type":"tool_use","id":"call_huge",
                                             "name":"write_file","input":{}}})),
                    event(json!({"type":"content_block_stop","index":0}))
                        + &event(json!({"type":"message_delta",
                            "delta":{"stop_reason":"tool_use","stop_sequence":null},
                            "usage":{"output_tokens":10}}))
                        + &event(json!({"type":"message_stop"})),
                ),
            };
            stream.write_all(start.as_bytes()).await?;
            stream
                .write_all(delta("{\"path\":\"hostile.txt\",\"content\":\"").as_bytes())
                .await?;
            let piece = delta(&"x".repeat(PIECE));
            for _ in 0..bytes.div_ceil(PIECE as u64) {
                stream.write_all(piece.as_bytes()).await?;
            }
            stream.write_all(delta("\"}").as_bytes()).await?;
            stream.write_all(end.as_bytes()).await?;
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
        halves(format!("data: {frame}\n\n").into_bytes(), &mut pieces);
    }
    Reply::Sse(pieces)
}

/// Named events (`event: TYPE` then `data: …`), each split at its middle
/// byte like [`sse`]'s frames: the Responses and Messages streams.
pub fn named_events(events: &[Value]) -> Vec<Vec<u8>> {
    let mut pieces = Vec::new();
    for event in events {
        let name = event["type"].as_str().unwrap_or("message");
        halves(
            format!("event: {name}\ndata: {event}\n\n").into_bytes(),
            &mut pieces,
        );
    }
    pieces
}

/// `bytes` as two pieces split at the middle byte.
fn halves(bytes: Vec<u8>, pieces: &mut Vec<Vec<u8>>) {
    let middle = bytes.len() / 2;
    pieces.push(bytes[..middle].to_vec());
    pieces.push(bytes[middle..].to_vec());
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

/// A streamed text answer on any wire (chat: role frame, one frame per
/// piece, finish, usage).
pub fn text(pieces: &[&str]) -> Reply {
    Reply::Turn(Turn {
        text: pieces.iter().map(|p| p.to_string()).collect(),
        ..Turn::default()
    })
}

/// A scripted tool call: id, name, and the argument text in pieces.
pub struct Call<'a> {
    pub id: &'a str,
    pub name: &'a str,
    pub pieces: Vec<String>,
}

impl Call<'_> {
    fn owned(&self) -> ScriptedCall {
        ScriptedCall {
            id: self.id.to_owned(),
            name: self.name.to_owned(),
            pieces: self.pieces.clone(),
        }
    }
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

/// A streamed tool-call answer on any wire (chat: as OpenAI sends it, per
/// call a first delta with index, id, type and name, then one delta per
/// argument piece).
pub fn tool_calls(calls: &[Call<'_>]) -> Reply {
    Reply::Turn(Turn {
        calls: calls.iter().map(Call::owned).collect(),
        ..Turn::default()
    })
}

/// Tool calls whose turn ran out of tokens (`length`, `max_output_tokens`,
/// `max_tokens`), so the last call is cut off wherever its argument text
/// stops.
pub fn tool_calls_cut_off(calls: &[Call<'_>]) -> Reply {
    Reply::Turn(Turn {
        calls: calls.iter().map(Call::owned).collect(),
        cut_off: true,
        ..Turn::default()
    })
}

/// The chat frames of [`tool_calls`] without the finish and usage frames:
/// the role frame, then per call a first delta and one per argument piece.
/// An empty id is left out of the delta, as some servers do.
pub fn tool_call_frames(calls: &[Call<'_>]) -> Vec<Value> {
    let calls: Vec<ScriptedCall> = calls.iter().map(Call::owned).collect();
    let mut frames = vec![chunk(json!({"role":"assistant","content":null}), None)];
    frames.extend(chat::call_frames(&calls));
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
