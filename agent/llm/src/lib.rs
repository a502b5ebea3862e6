//! The model client: three wires behind one [`Client`].
//!
//! [`Client::chat`] sends the whole history and the tool declarations on
//! the provider's wire ([`wire`]: chat completions, Responses or Anthropic
//! Messages) and returns one [`AssistantTurn`]. It
//! streams by default (text deltas go to the caller as they arrive), retries
//! transient failures with backoff, honours `Retry-After`, then tries the
//! fallback model once. The pieces live in small modules:
//!
//! - [`wire`]: each wire's request body and response reader, converting
//!   the one transcript at the edge;
//! - [`reasoning`]: reasoning kept with its turn, replayed only where it was made;
//! - [`body`]: the chat request body and why each field is there;
//! - [`sse`]: server-sent events decoding from raw network reads (LF, CRLF
//!   or CR line ends, a bounded line buffer);
//! - [`turn`]: text and tool-call accumulation into an [`AssistantTurn`];
//! - [`retry`]: which failures are retried and how long to wait;
//! - [`read`]: bounds on what a server can make the agent hold or wait
//!   for (body cap, idle timeout);
//!
//! A stream is complete when its wire's last event arrives (`[DONE]` on
//! chat, `response.completed` or `response.incomplete` on Responses,
//! `message_stop` on Messages) or, for a server that just closes the
//! connection, when the turn already said why it stopped (a chat
//! `finish_reason`, a Messages `stop_reason`). A stream that ends with
//! neither is an incomplete turn ([`LlmError::Incomplete`]),
//! retried like a broken connection: a half-received tool call is never
//! handed to the loop as if it were whole. A stream that sends no event
//! for `stream_idle_timeout_ms` ([`LlmError::IdleTimeout`]) is retried the
//! same way. A tool call whose arguments pass [`turn::MAX_ARGUMENTS`] ends
//! the reading: the turn is taken as received, and that call is refused
//! with an `ERROR:` result instead of being run.
//! - [`error`]: [`LlmError`], one line per failure for the terminal.

pub mod body;
mod echo;
pub mod error;
mod html;
pub mod read;
pub mod reasoning;
pub mod retry;
pub mod sse;
pub mod turn;
pub mod wire;

use std::time::{Duration, SystemTime};

use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue, RETRY_AFTER};
use serde_json::Value;

pub use body::{BodyOptions, JsonList};
pub use error::{Advice, KeySource, LlmError, Target};
pub use reasoning::Reasoning;
pub use retry::RetryPolicy;
pub use turn::{AssistantTurn, ToolCall, Usage};
pub use wire::{Conversation, WireApi};

use echo::Echo;
use sse::{Frame, SseDecoder};
use wire::{Delta, RequestParts, Wire};

/// The server used when `OPENAI_BASE_URL` is not set.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// How many refused fields one request may learn to drop ([`wire::Wire`]'s `adapt`).
const MAX_ADAPTATIONS: u32 = 2;

/// The model used when neither `--model` nor `NANOHERMES_MODEL` is given.
pub const DEFAULT_MODEL: &str = "gpt-4.1-mini";

/// Where to send requests and how.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelSettings {
    /// The API root, such as `https://api.openai.com/v1` or `http://localhost:11434/v1`.
    pub base_url: String,
    /// The bearer token; local servers usually need none.
    pub api_key: Option<String>,
    /// The model to ask.
    pub model: String,
    /// A model to try once when the main one keeps failing with retryable errors.
    pub fallback_model: Option<String>,
    /// Temperature, token budget, streaming, thinking.
    pub body: BodyOptions,
    /// Retries and backoff.
    pub retry: RetryPolicy,
    /// The longest wait for the next event of a stream (or the next read of
    /// any response) before the attempt fails as [`LlmError::IdleTimeout`].
    pub stream_idle_timeout: Duration,
    /// The API the provider speaks.
    pub wire: WireApi,
    /// Added to the request URL's query (Azure's `api-version`, say).
    pub query_params: Vec<(String, String)>,
    /// Sent with every request, after the wire's own headers (so they may
    /// replace them: a different `anthropic-version`, say).
    pub http_headers: Vec<(String, String)>,
    /// The session's prompt cache key, sent as `prompt_cache_key` on the
    /// OpenAI wires; `None` sends none.
    pub prompt_cache_key: Option<String>,
    /// Where the key and the base URL were configured, for the advice an
    /// error gives (the default names `OPENAI_API_KEY` and `OPENAI_BASE_URL`).
    pub advice: Advice,
}

impl ModelSettings {
    /// Settings with the article's defaults: temperature 0, 4096 tokens,
    /// streaming, no thinking, two retries from 500 ms, no fallback, a
    /// 300 s idle timeout.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        ModelSettings {
            base_url: base_url.into(),
            api_key: None,
            model: model.into(),
            fallback_model: None,
            body: BodyOptions {
                temperature: 0.0,
                max_tokens: 4096,
                stream: true,
                thinking: false,
            },
            retry: RetryPolicy::default(),
            stream_idle_timeout: read::DEFAULT_STREAM_IDLE_TIMEOUT,
            wire: WireApi::Chat,
            query_params: Vec::new(),
            http_headers: Vec::new(),
            prompt_cache_key: None,
            advice: Advice::default(),
        }
    }
}

/// Something that happened during [`Client::chat`], for the caller to show.
#[derive(Debug)]
pub enum ChatEvent<'a> {
    /// Text to append to the screen (already deduplicated across retries).
    Text(&'a str),
    /// Reasoning text to show dimmed (deduplicated the same way); never
    /// part of the answer.
    Reasoning(&'a str),
    /// An attempt failed and another follows after `delay`.
    Retry {
        /// The retry about to happen (1-based).
        attempt: u32,
        /// The configured number of retries.
        max_retries: u32,
        /// The wait before it.
        delay: Duration,
        /// Why the previous attempt failed.
        error: &'a LlmError,
    },
    /// The retries are spent; the fallback model gets one try.
    Fallback {
        /// The fallback model.
        model: &'a str,
        /// The last error of the main model.
        error: &'a LlmError,
    },
}

/// A model client; cheap to share by reference.
#[derive(Debug, Clone)]
pub struct Client {
    http: reqwest::Client,
    /// `{base_url}/{wire path}?{query_params}`, parsed once: every request
    /// would parse it again from a string.
    url: reqwest::Url,
    /// The wire's authentication and version headers plus the provider's.
    headers: HeaderMap,
    /// Where requests go and what to advise when they fail, shared by
    /// every error instead of copied into each.
    target: std::sync::Arc<Target>,
    wire: std::sync::Arc<dyn Wire>,
    settings: ModelSettings,
}

impl Client {
    /// Builds the HTTP client (rustls). Does no network IO.
    pub fn new(settings: ModelSettings) -> Result<Client, LlmError> {
        let target = std::sync::Arc::new(Target::new(
            &settings.base_url,
            settings.wire,
            settings.advice.clone(),
        ));
        let mut builder = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            // Waiting for the response head; reads of the body have their
            // own timer, restarted per event.
            .read_timeout(settings.stream_idle_timeout);
        if settings.base_url.starts_with("http://") {
            // A local model server: no TLS, so no root store. Loading the
            // system's certificates (rustls-platform-verifier reads every
            // file in /etc/ssl/certs) was the longest step before the first
            // request; an https redirect would now fail verification.
            builder = builder.tls_certs_only([]);
        }
        let http = builder.build().map_err(|e| LlmError::Connect {
            target: target.clone(),
            reason: innermost(&e),
        })?;
        let mut url = reqwest::Url::parse(&target.url()).map_err(|e| LlmError::Connect {
            target: target.clone(),
            reason: format!("not a URL ({e})"),
        })?;
        if !settings.query_params.is_empty() {
            url.query_pairs_mut().extend_pairs(&settings.query_params);
        }
        let wire: std::sync::Arc<dyn Wire> = wire::of(settings.wire).into();
        let headers = request_headers(&*wire, &settings, &target)?;
        Ok(Client {
            http,
            url,
            headers,
            target,
            wire,
            settings,
        })
    }

    /// The same client (one connection pool) asking `model` instead.
    pub fn with_model(&self, model: &str) -> Client {
        let mut client = self.clone();
        client.settings.model = model.to_owned();
        client
    }

    /// The same client (one connection pool) sending `key` as the prompt
    /// cache key (none: no key).
    pub fn with_cache_key(&self, key: Option<String>) -> Client {
        let mut client = self.clone();
        client.settings.prompt_cache_key = key;
        client
    }

    /// The settings this client was built with.
    pub fn settings(&self) -> &ModelSettings {
        &self.settings
    }

    /// Sends `messages` with `tools` and returns the model's turn; retries
    /// and falls back as [`RetryPolicy`] and `fallback_model` say. Text and
    /// retry notices go to `on_event` as they happen.
    pub async fn chat(
        &self,
        messages: Conversation<'_>,
        tools: JsonList<'_>,
        on_event: &mut (dyn FnMut(ChatEvent<'_>) + Send),
    ) -> Result<AssistantTurn, LlmError> {
        let policy = self.settings.retry;
        let mut echo = Echo::new(on_event);
        let mut retries = 0;
        let mut adapted = 0;
        let error = loop {
            echo.start_attempt();
            match self
                .attempt(&self.settings.model, messages, tools, &mut echo)
                .await
            {
                Ok(turn) => return Ok(turn),
                // The server refused a field the wire can do without: asked
                // again without it, at once, not counted as a retry.
                Err(error) if adapted < MAX_ADAPTATIONS && self.wire.adapt(&error) => {
                    adapted += 1;
                }
                Err(error) if error.is_retryable() && retries < policy.max_retries => {
                    retries += 1;
                    let delay = policy.delay(retries, error.retry_after());
                    echo.event(ChatEvent::Retry {
                        attempt: retries,
                        max_retries: policy.max_retries,
                        delay,
                        error: &error,
                    });
                    tokio::time::sleep(delay).await;
                }
                Err(error) => break error,
            }
        };
        match &self.settings.fallback_model {
            Some(fallback) if error.is_retryable() => {
                echo.event(ChatEvent::Fallback {
                    model: fallback,
                    error: &error,
                });
                echo.start_attempt();
                self.attempt(fallback, messages, tools, &mut echo).await
            }
            _ => Err(error),
        }
    }

    /// One request, one response, no retry.
    async fn attempt(
        &self,
        model: &str,
        messages: Conversation<'_>,
        tools: JsonList<'_>,
        echo: &mut Echo<'_>,
    ) -> Result<AssistantTurn, LlmError> {
        let body = self.wire.body(&RequestParts {
            settings: &self.settings,
            model,
            conversation: messages,
            tools,
        });
        let request = self
            .http
            .post(self.url.clone())
            .headers(self.headers.clone())
            .body(body);
        let mut response = request.send().await.map_err(|e| LlmError::Connect {
            target: self.target.clone(),
            reason: innermost(&e),
        })?;
        let idle = self.settings.stream_idle_timeout;
        let status = response.status().as_u16();
        if !response.status().is_success() {
            let retry_after = response
                .headers()
                .get(RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| retry::parse_retry_after(v, SystemTime::now()));
            // Only the start of an error body is shown: a huge one is not read.
            let body = read::body(&mut response, read::MAX_ERROR_BODY, idle)
                .await
                .map(|capped| capped.bytes)
                .unwrap_or_default();
            let text = String::from_utf8_lossy(&body);
            return Err(LlmError::from_status(
                status,
                &text,
                retry_after,
                &self.target,
                model,
            ));
        }
        let is_json = content_type(&response).contains("application/json");
        if !self.settings.body.stream || is_json {
            let body = read::body(&mut response, read::MAX_BODY, idle).await?;
            if body.over {
                return Err(LlmError::TooLarge {
                    limit: read::MAX_BODY,
                });
            }
            if !read::within_values(&body.bytes) {
                return Err(LlmError::Decode(format!(
                    "the body holds more than {} JSON values, far more than an answer has; it was not parsed (check the server)",
                    read::MAX_VALUES
                )));
            }
            return self.read_whole(&body.bytes, model, echo);
        }
        self.read_stream(&mut response, model, echo).await
    }

    /// Reads a streamed response through the wire's reader, to its last
    /// event, or to an EOF after which the turn is whole.
    async fn read_stream(
        &self,
        response: &mut reqwest::Response,
        model: &str,
        echo: &mut Echo<'_>,
    ) -> Result<AssistantTurn, LlmError> {
        let idle = self.settings.stream_idle_timeout;
        let mut decoder = SseDecoder::default();
        let mut builder = self.wire.stream_reader(&self.settings);
        // Restarted by each event, not by each byte: comments, keep-alives
        // and a line trickled a byte at a time do not keep a stream alive.
        let mut deadline = tokio::time::Instant::now() + idle;
        loop {
            let chunk = read::chunk(response, deadline, idle).await?;
            let frames = match &chunk {
                Some(bytes) => decoder
                    .push(bytes)
                    .map_err(|e| LlmError::Decode(e.to_string()))?,
                None => decoder.finish(),
            };
            if !frames.is_empty() {
                deadline = tokio::time::Instant::now() + idle;
            }
            for frame in frames {
                let value = match frame {
                    Frame::Data(value) => value,
                    Frame::Done => return Ok(builder.finish(model)),
                    Frame::Error(value) => return Err(LlmError::from_frame(&value)),
                };
                match builder.apply(&value)? {
                    Some(Delta::Text(text)) => echo.text(text),
                    Some(Delta::Reasoning(text)) => echo.reasoning(text),
                    None => {}
                }
                // Past the arguments' limit, reading on would only burn
                // time on a call that is refused anyway (it gets an
                // `ERROR:` result); the connection is dropped.
                if builder.finished() || builder.arguments_over_limit() {
                    return Ok(builder.finish(model));
                }
                if builder.size() > read::MAX_BODY {
                    return Err(LlmError::TooLarge {
                        limit: read::MAX_BODY,
                    });
                }
            }
            if chunk.is_none() {
                // EOF without the wire's last event ends a stream only
                // when the turn said it was finished.
                return if builder.whole_at_eof() {
                    Ok(builder.finish(model))
                } else {
                    Err(LlmError::Incomplete)
                };
            }
        }
    }

    /// Reads a non-streaming response (or a JSON body where a stream was asked for).
    fn read_whole(
        &self,
        bytes: &[u8],
        model: &str,
        echo: &mut Echo<'_>,
    ) -> Result<AssistantTurn, LlmError> {
        let value: Value = serde_json::from_slice(bytes).map_err(|e| {
            LlmError::Decode(format!(
                "the body is not JSON ({e}): {}",
                String::from_utf8_lossy(&bytes[..bytes.len().min(200)])
            ))
        })?;
        if value.get("error").is_some_and(|e| !e.is_null()) {
            return Err(LlmError::from_frame(&value));
        }
        let turn = self
            .wire
            .whole(&self.settings, &value, model)
            .map_err(LlmError::Decode)?;
        if let Some(reasoning) = turn.reasoning.as_ref().filter(|r| !r.text.is_empty()) {
            echo.reasoning(&reasoning.text);
        }
        if !turn.content.is_empty() {
            echo.text(&turn.content);
        }
        Ok(turn)
    }
}

/// The headers of every request: JSON, the wire's authentication, then the
/// provider's own (which replace a wire header of the same name).
fn request_headers(
    wire: &dyn Wire,
    settings: &ModelSettings,
    target: &std::sync::Arc<Target>,
) -> Result<HeaderMap, LlmError> {
    let mut headers = HeaderMap::new();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    wire.auth_headers(settings.api_key.as_deref(), &mut headers);
    for (name, value) in &settings.http_headers {
        let bad = |reason: String| LlmError::Connect {
            target: target.clone(),
            reason: format!("the header {name:?} cannot be sent: {reason}"),
        };
        let name = HeaderName::try_from(name.as_str()).map_err(|e| bad(e.to_string()))?;
        let value = HeaderValue::try_from(value.as_str()).map_err(|e| bad(e.to_string()))?;
        headers.insert(name, value);
    }
    Ok(headers)
}

/// The response's `Content-Type`, or "" without one.
fn content_type(response: &reqwest::Response) -> &str {
    response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
}

/// The innermost cause of an error chain: "Connection refused (os error 111)"
/// says more than "error sending request".
fn innermost(error: &(dyn std::error::Error + 'static)) -> String {
    let mut current = error;
    while let Some(source) = current.source() {
        current = source;
    }
    let text = current.to_string();
    if text.is_empty() {
        error.to_string()
    } else {
        text
    }
}
