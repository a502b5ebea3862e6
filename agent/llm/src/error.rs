//! Why a model request failed, worded for the person at the terminal.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::retry::{is_retryable_status, stream_error_is_retryable};
use super::wire::WireApi;

/// Where this connection's key and base URL were configured, so that a
/// failed request tells the user what they set, not what the OpenAI chat
/// wire would have needed. The default is that connection's: the key in
/// `OPENAI_API_KEY`, the base URL in `OPENAI_BASE_URL`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Advice {
    /// Where the API key comes from.
    pub key: KeySource,
    /// Where the base URL is set, written as the user would change it: a
    /// variable (`ANTHROPIC_BASE_URL`), a flag (`--base-url`) or a config
    /// key (`base_url in [model_providers.corp]`).
    pub base_url: String,
}

impl Default for Advice {
    fn default() -> Self {
        Advice {
            key: KeySource::Var("OPENAI_API_KEY".to_owned()),
            base_url: "OPENAI_BASE_URL".to_owned(),
        }
    }
}

/// Where the API key comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeySource {
    /// Read from this environment variable.
    Var(String),
    /// Named, but the variable is unset or empty, so no key was sent.
    Unset(String),
    /// The provider (this is its id) sends no key: it has no `env_key`.
    None {
        /// The provider's id, as in `[model_providers.ID]`.
        provider: String,
    },
}

/// Where a request went: what an error line names and advises. Built once
/// per client and shared by its errors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The base URL as configured.
    pub base_url: String,
    /// The wire the request was on.
    pub wire: WireApi,
    /// Where the key and the base URL were set.
    pub advice: Advice,
}

impl Target {
    /// The target of `wire`'s endpoint under `base_url`.
    pub fn new(base_url: &str, wire: WireApi, advice: Advice) -> Target {
        Target {
            base_url: base_url.to_owned(),
            wire,
            advice,
        }
    }

    /// The URL requested, without its query: a 404 names the path that was
    /// not found (`…/messages`, `…/responses`), and a query may hold a
    /// credential (`?key=`) that has no place on the terminal.
    pub fn url(&self) -> String {
        format!(
            "{}/{}",
            self.base_url.trim_end_matches('/'),
            self.wire.path()
        )
    }
}

/// A failed model request. `Display` is one line that names the cause and
/// what to do about it.
#[derive(Debug, Clone, PartialEq)]
pub enum LlmError {
    /// The server could not be reached (refused, DNS, TLS, timeout).
    Connect {
        /// Where the request was going.
        target: Arc<Target>,
        /// The innermost cause.
        reason: String,
    },
    /// The server answered with a non-success status.
    Status {
        /// The HTTP status.
        status: u16,
        /// The server's error message (or the start of its body).
        message: String,
        /// The server's error code, such as `model_not_found`.
        code: Option<String>,
        /// The `Retry-After` hint, if any.
        retry_after: Option<Duration>,
        /// Where the request went.
        target: Arc<Target>,
        /// The model that was asked for.
        model: String,
    },
    /// The stream carried an error frame after HTTP 200.
    Stream {
        /// The frame's `code` as text (`"server_error"`, `"429"`), when set.
        code: Option<String>,
        /// The frame's `type` (`"invalid_request_error"`), when set.
        kind: Option<String>,
        /// The frame's message.
        message: String,
    },
    /// The connection broke while the response was being read.
    Read(String),
    /// The stream ended with neither `[DONE]` nor a finish reason: the
    /// turn is incomplete and must not be used.
    Incomplete,
    /// The response could not be understood.
    Decode(String),
    /// Nothing arrived for the idle timeout: no event of a stream, no byte
    /// of another response. Retried like a broken stream.
    IdleTimeout {
        /// The configured `stream_idle_timeout_ms`.
        idle: Duration,
    },
    /// The response passed `limit` bytes; the rest was not read.
    TooLarge {
        /// The limit, in bytes.
        limit: usize,
    },
}

impl LlmError {
    /// Whether another attempt may succeed: 429/500/502/503/504, connection
    /// failures, broken or incomplete streams, and error frames whose text
    /// says the failure is transient (see [`stream_error_is_retryable`]).
    pub fn is_retryable(&self) -> bool {
        match self {
            LlmError::Connect { .. }
            | LlmError::Read(_)
            | LlmError::Incomplete
            | LlmError::IdleTimeout { .. } => true,
            LlmError::Status { status, .. } => is_retryable_status(*status),
            LlmError::Stream {
                code,
                kind,
                message,
            } => stream_error_is_retryable(code.as_deref(), kind.as_deref(), message),
            LlmError::Decode(_) | LlmError::TooLarge { .. } => false,
        }
    }

    /// Whether the server refused the request because the history does not
    /// fit the model's context: an HTTP 400 or 413, or an error frame, whose
    /// code or message says context length, too many tokens or maximum
    /// context (OpenAI, vLLM, llama.cpp, Ollama word it differently). The
    /// loop compacts the history and retries once.
    pub fn is_context_length(&self) -> bool {
        let (code, message) = match self {
            LlmError::Status {
                status: 400 | 413,
                code,
                message,
                ..
            } => (code.as_deref(), message),
            LlmError::Stream { code, message, .. } => (code.as_deref(), message),
            _ => return false,
        };
        let lower = message.to_lowercase();
        code == Some("context_length_exceeded")
            || [
                "context length",
                "context_length",
                "context window",
                "context size",
                "maximum context",
                "too many tokens",
                "prompt is too long",
            ]
            .iter()
            .any(|needle| lower.contains(needle))
    }

    /// The server's `Retry-After` hint.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            LlmError::Status { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    /// Builds a [`LlmError::Status`] from a response status and body of a
    /// request to `target`.
    pub fn from_status(
        status: u16,
        body: &str,
        retry_after: Option<Duration>,
        target: &Arc<Target>,
        model: &str,
    ) -> Self {
        let (message, code) = error_message(body);
        LlmError::Status {
            status,
            message,
            code,
            retry_after,
            target: Arc::clone(target),
            model: model.to_owned(),
        }
    }

    /// Builds a [`LlmError::Stream`] from an error frame. `code` may be a
    /// string, a number or null; whatever it is, it is kept as text.
    pub fn from_frame(frame: &Value) -> Self {
        let error = &frame["error"];
        let text_of = |key: &str| match error.get(key) {
            Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
            Some(Value::Number(n)) => Some(n.to_string()),
            _ => None,
        };
        let message = match error {
            Value::String(text) => text.clone(),
            _ => error
                .get("message")
                .and_then(Value::as_str)
                .map_or_else(|| error.to_string(), str::to_owned),
        };
        let mut message = message;
        message.truncate(mcp_tools::clamp::floor_char_boundary(&message, 500));
        LlmError::Stream {
            code: text_of("code"),
            kind: text_of("type"),
            message,
        }
    }

    fn is_missing_model(&self) -> bool {
        let LlmError::Status {
            status,
            message,
            code,
            ..
        } = self
        else {
            return false;
        };
        let lower = message.to_lowercase();
        // A 404 that does not name a model is a wrong URL (a base URL
        // without `/v1` gets `404 page not found`), not a missing model.
        code.as_deref() == Some("model_not_found")
            || (*status == 404 && lower.contains("model"))
            || (*status == 400
                && lower.contains("model")
                && (lower.contains("not exist") || lower.contains("not found")))
    }
}

impl fmt::Display for LlmError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LlmError::Connect { target, reason } => {
                write!(
                    f,
                    "cannot reach the model server at {}: {reason} (check {})",
                    target.base_url, target.advice.base_url
                )
            }
            LlmError::Status {
                status: status @ (401 | 403),
                message,
                target,
                ..
            } => match &target.advice.key {
                KeySource::Var(var) => write!(
                    f,
                    "the model server at {} rejected the API key (HTTP {status}): {} (check {var})",
                    target.base_url,
                    or_none(message)
                ),
                // "Check MY_KEY" reads as "the key is wrong" when none
                // was sent at all.
                KeySource::Unset(var) => write!(
                    f,
                    "the model server at {} wants an API key (HTTP {status}): {} ({var} is not set)",
                    target.base_url,
                    or_none(message)
                ),
                // "Check OPENAI_API_KEY" would send the user after a
                // variable this provider never reads.
                KeySource::None { provider } => write!(
                    f,
                    "the model server at {} wants an API key (HTTP {status}): {} (provider \"{provider}\" sends none; set env_key in [model_providers.{provider}] to the variable that holds one)",
                    target.base_url,
                    or_none(message)
                ),
            },
            LlmError::Status {
                status,
                message,
                target,
                model,
                ..
            } if self.is_missing_model() => write!(
                f,
                "model `{model}` does not exist at {} (HTTP {status}): {} (choose another with --model or NANOHERMES_MODEL)",
                target.base_url,
                or_none(message)
            ),
            LlmError::Status {
                status: 404,
                message,
                target,
                ..
            } => write!(
                f,
                "the model server answered HTTP 404 (not found) for {}: {} (check {}: {})",
                target.url(),
                or_none(message),
                target.advice.base_url,
                v1_tip(target.wire)
            ),
            LlmError::Status {
                status,
                message,
                target,
                ..
            } => {
                write!(
                    f,
                    "the model server at {} answered HTTP {status}: {}",
                    target.base_url,
                    or_none(message)
                )
            }
            LlmError::Stream {
                code,
                kind,
                message,
            } => {
                write!(f, "the model server failed mid-stream")?;
                match (code, kind) {
                    (Some(code), Some(kind)) => write!(f, " (code {code}, {kind})")?,
                    (Some(code), None) => write!(f, " (code {code})")?,
                    (None, Some(kind)) => write!(f, " ({kind})")?,
                    (None, None) => {}
                }
                write!(f, ": {}", or_none(message))?;
                if !self.is_retryable() {
                    write!(f, " (not retried: the server refused the request as it is)")?;
                }
                Ok(())
            }
            LlmError::Read(reason) => write!(
                f,
                "the connection broke while reading the response: {reason}"
            ),
            LlmError::Incomplete => write!(
                f,
                "the model server's stream ended before the turn was complete (neither a finish_reason nor [DONE] arrived); the connection was probably cut, check the server"
            ),
            LlmError::Decode(reason) => {
                write!(f, "unexpected response from the model server: {reason}")
            }
            LlmError::IdleTimeout { idle } => write!(
                f,
                "the model server sent nothing for {} ms (stream_idle_timeout_ms); it is stuck or overloaded, or the model thinks longer than that (then raise stream_idle_timeout_ms)",
                idle.as_millis()
            ),
            LlmError::TooLarge { limit } => write!(
                f,
                "the model server's response passed {} MiB, far more than an answer within max_tokens; it was not read further (check the server)",
                limit >> 20
            ),
        }
    }
}

impl std::error::Error for LlmError {}

/// What a base URL that 404s usually lacks, with an example of the servers
/// this wire talks to: every one of them puts its API under `/v1`.
fn v1_tip(wire: WireApi) -> &'static str {
    match wire {
        WireApi::Chat => "most servers need it to end in /v1, e.g. http://localhost:11434/v1",
        WireApi::Responses => "most servers need it to end in /v1, e.g. https://api.openai.com/v1",
        WireApi::Messages => "it usually ends in /v1, e.g. https://api.anthropic.com/v1",
    }
}

fn or_none(message: &str) -> &str {
    if message.is_empty() {
        "no message"
    } else {
        message
    }
}

/// The message and code of an error body: `{"error":{"message","code"}}`,
/// `{"error":"text"}`, `{"message":…}`, the visible text of an HTML page
/// (a proxy's error page), or the first line of plain text.
fn error_message(body: &str) -> (String, Option<String>) {
    if let Some(text) = super::html::visible_text(body) {
        let end = mcp_tools::clamp::floor_char_boundary(&text, 300);
        return (text[..end].to_owned(), None);
    }
    let one_line = |text: &str| {
        let line = text
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .unwrap_or_default();
        let end = mcp_tools::clamp::floor_char_boundary(line, 300);
        line[..end].to_owned()
    };
    let Ok(value) = serde_json::from_str::<Value>(body) else {
        return (one_line(body), None);
    };
    let error = value.get("error").unwrap_or(&value);
    let message = match error {
        Value::String(text) => text.clone(),
        _ => error
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
    };
    let code = error.get("code").and_then(|c| match c {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    });
    (one_line(&message), code)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const URL: &str = "http://127.0.0.1:9/v1";

    /// A chat request to `base_url` with the default (OpenAI) advice.
    fn at(base_url: &str) -> Arc<Target> {
        Arc::new(Target::new(base_url, WireApi::Chat, Advice::default()))
    }

    #[test]
    fn unauthorized_names_the_key() {
        let body = r#"{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}"#;
        let error = LlmError::from_status(401, body, None, &at(URL), "m");
        assert_eq!(
            error.to_string(),
            "the model server at http://127.0.0.1:9/v1 rejected the API key (HTTP 401): Incorrect API key provided (check OPENAI_API_KEY)"
        );
        assert!(!error.is_retryable());
    }

    /// Every wire with every kind of key source: the hint names what was
    /// configured (the key's variable, the provider without one, where the
    /// base URL is set) and the endpoint the wire requested.
    #[test]
    fn each_hint_names_what_this_connection_configured() {
        let openai = Advice::default();
        let anthropic = Advice {
            key: KeySource::Var("ANTHROPIC_API_KEY".into()),
            base_url: "ANTHROPIC_BASE_URL".into(),
        };
        let corp = Advice {
            key: KeySource::Var("CORP_LLM".into()),
            base_url: "base_url in [model_providers.corp]".into(),
        };
        let ollama = Advice {
            key: KeySource::None {
                provider: "ollama".into(),
            },
            base_url: "base_url in [model_providers.ollama]".into(),
        };
        let own_key = Advice {
            key: KeySource::Var("MY_KEY".into()),
            base_url: "--base-url".into(),
        };
        let unset = Advice {
            key: KeySource::Unset("MY_KEY".into()),
            base_url: "OPENAI_BASE_URL".into(),
        };
        let base = "http://h:1/v1";
        let denied = "the model server at http://h:1/v1 rejected the API key";
        let wants = "the model server at http://h:1/v1 wants an API key";
        let none_hint = "(provider \"ollama\" sends none; set env_key in [model_providers.ollama] to the variable that holds one)";
        let not_found = "the model server answered HTTP 404 (not found) for http://h:1/v1";
        let chat_tip = "most servers need it to end in /v1, e.g. http://localhost:11434/v1";
        let responses_tip = "most servers need it to end in /v1, e.g. https://api.openai.com/v1";
        let messages_tip = "it usually ends in /v1, e.g. https://api.anthropic.com/v1";
        let cases: Vec<(WireApi, &Advice, u16, String)> = vec![
            (
                WireApi::Chat,
                &openai,
                401,
                format!("{denied} (HTTP 401): no (check OPENAI_API_KEY)"),
            ),
            (
                WireApi::Messages,
                &anthropic,
                401,
                format!("{denied} (HTTP 401): no (check ANTHROPIC_API_KEY)"),
            ),
            (
                WireApi::Messages,
                &anthropic,
                403,
                format!("{denied} (HTTP 403): no (check ANTHROPIC_API_KEY)"),
            ),
            (
                WireApi::Responses,
                &corp,
                401,
                format!("{denied} (HTTP 401): no (check CORP_LLM)"),
            ),
            (
                WireApi::Chat,
                &own_key,
                403,
                format!("{denied} (HTTP 403): no (check MY_KEY)"),
            ),
            (
                WireApi::Chat,
                &ollama,
                401,
                format!("{wants} (HTTP 401): no {none_hint}"),
            ),
            (
                WireApi::Chat,
                &unset,
                401,
                format!("{wants} (HTTP 401): no (MY_KEY is not set)"),
            ),
            (
                WireApi::Responses,
                &ollama,
                403,
                format!("{wants} (HTTP 403): no {none_hint}"),
            ),
            (
                WireApi::Chat,
                &openai,
                404,
                format!("{not_found}/chat/completions: no (check OPENAI_BASE_URL: {chat_tip})"),
            ),
            (
                WireApi::Chat,
                &own_key,
                404,
                format!("{not_found}/chat/completions: no (check --base-url: {chat_tip})"),
            ),
            (
                WireApi::Chat,
                &ollama,
                404,
                format!(
                    "{not_found}/chat/completions: no (check base_url in [model_providers.ollama]: {chat_tip})"
                ),
            ),
            (
                WireApi::Responses,
                &corp,
                404,
                format!(
                    "{not_found}/responses: no (check base_url in [model_providers.corp]: {responses_tip})"
                ),
            ),
            (
                WireApi::Messages,
                &anthropic,
                404,
                format!("{not_found}/messages: no (check ANTHROPIC_BASE_URL: {messages_tip})"),
            ),
            (
                WireApi::Messages,
                &corp,
                404,
                format!(
                    "{not_found}/messages: no (check base_url in [model_providers.corp]: {messages_tip})"
                ),
            ),
            (
                WireApi::Messages,
                &anthropic,
                500,
                "the model server at http://h:1/v1 answered HTTP 500: no".into(),
            ),
        ];
        for (wire, advice, status, want) in cases {
            let target = Arc::new(Target::new(base, wire, advice.clone()));
            let error = LlmError::from_status(status, "no", None, &target, "m");
            assert_eq!(error.to_string(), want, "{wire} {advice:?} {status}");
            let connect = LlmError::Connect {
                target,
                reason: "refused".into(),
            };
            assert_eq!(
                connect.to_string(),
                format!(
                    "cannot reach the model server at http://h:1/v1: refused (check {})",
                    advice.base_url
                ),
            );
        }
    }

    /// A missing model is the model's fault, whoever configured the key.
    #[test]
    fn a_missing_model_names_the_model_on_every_wire() {
        let advice = Advice {
            key: KeySource::Var("ANTHROPIC_API_KEY".into()),
            base_url: "ANTHROPIC_BASE_URL".into(),
        };
        for wire in WireApi::ALL {
            let target = Arc::new(Target::new(URL, wire, advice.clone()));
            let body = r#"{"type":"error","error":{"type":"not_found_error","message":"model: claude-nope"}}"#;
            let text = LlmError::from_status(404, body, None, &target, "claude-nope").to_string();
            assert_eq!(
                text,
                "model `claude-nope` does not exist at http://127.0.0.1:9/v1 (HTTP 404): model: claude-nope (choose another with --model or NANOHERMES_MODEL)",
                "{wire}"
            );
        }
    }

    /// A base URL written with a trailing `/` still names the endpoint
    /// the client requests, not `…/v1//responses`.
    #[test]
    fn the_requested_url_has_one_slash_before_the_wire_path() {
        let target = Target::new("http://h:1/v1/", WireApi::Responses, Advice::default());
        assert_eq!(target.url(), "http://h:1/v1/responses");
    }

    #[test]
    fn missing_model_is_recognised_from_openai_ollama_and_vllm_bodies() {
        let bodies = [
            (
                404,
                r#"{"error":{"message":"The model `nope` does not exist","code":"model_not_found"}}"#,
            ),
            (404, r#"{"error":"model 'nope' not found"}"#),
            (
                404,
                r#"{"object":"error","message":"The model `nope` does not exist.","code":404}"#,
            ),
            (400, r#"{"error":{"message":"model nope does not exist"}}"#),
        ];
        for (status, body) in bodies {
            let text = LlmError::from_status(status, body, None, &at(URL), "nope").to_string();
            assert!(
                text.starts_with("model `nope` does not exist at http://127.0.0.1:9/v1"),
                "{text}"
            );
        }
    }

    #[test]
    fn stream_error_frames_keep_their_code_whatever_its_type() {
        let error = LlmError::from_frame(&json!({"error":{"code":503,"message":"overloaded"}}));
        assert_eq!(
            error,
            LlmError::Stream {
                code: Some("503".into()),
                kind: None,
                message: "overloaded".into()
            }
        );
        assert!(error.is_retryable());
        let error = LlmError::from_frame(&json!({"error":{
            "code":"rate_limit_exceeded","type":"requests","message":"Rate limit reached"}}));
        assert_eq!(
            error.to_string(),
            "the model server failed mid-stream (code rate_limit_exceeded, requests): Rate limit reached"
        );
        assert!(!LlmError::from_frame(&json!({"error":{"message":"bad"}})).is_retryable());
    }

    #[test]
    fn stream_error_frames_are_retried_by_their_meaning() {
        let retryable = [
            json!({"error":{"code":"server_error","message":"The server had an error while processing your request"}}),
            json!({"error":{"code":"rate_limit_exceeded","message":"Rate limit reached for requests"}}),
            json!({"error":{"code":null,"type":"server_error","message":""}}),
            json!({"error":{"code":null,"message":"Overloaded"}}),
            json!({"error":{"code":429,"message":"slow down"}}),
            json!({"error":{"code":500,"message":""}}),
            json!({"error":{"code":"500","message":"x"}}),
            json!({"error":{"type":"overloaded_error","message":"Overloaded"}}),
            json!({"error":{"code":400,"message":"upstream request timed out"}}),
            json!({"error":"Internal server error"}),
        ];
        for frame in retryable {
            assert!(LlmError::from_frame(&frame).is_retryable(), "{frame}");
        }
        let refused = [
            json!({"error":{"code":400,"message":"context too long"}}),
            json!({"error":{"code":null,"type":"invalid_request_error","message":"Invalid 'messages[2].tool_calls'"}}),
            json!({"error":{"code":"context_length_exceeded","message":"This model's maximum context length is 8192 tokens"}}),
            json!({"error":{"code":500,"message":"the request exceeds the available context size"}}),
            json!({"error":{"code":429,"type":"insufficient_quota","message":"You exceeded your current quota"}}),
            json!({"error":{"message":"bad"}}),
        ];
        for frame in refused {
            let error = LlmError::from_frame(&frame);
            assert!(!error.is_retryable(), "{frame}");
            assert!(
                error
                    .to_string()
                    .ends_with("(not retried: the server refused the request as it is)"),
                "{error}"
            );
        }
        assert!(LlmError::Incomplete.is_retryable());
    }

    #[test]
    fn context_length_errors_are_recognised_from_each_servers_wording() {
        let recognised = [
            (
                400,
                r#"{"error":{"message":"This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.","code":"context_length_exceeded"}}"#,
            ),
            (
                400,
                r#"{"object":"error","message":"This model's maximum context length is 4096 tokens","code":400}"#,
            ),
            (
                400,
                r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error"}}"#,
            ),
            (400, r#"{"error":"too many tokens in the prompt"}"#),
            (
                413,
                r#"{"error":{"message":"Request exceeds the context window"}}"#,
            ),
        ];
        for (status, body) in recognised {
            assert!(
                LlmError::from_status(status, body, None, &at(URL), "m").is_context_length(),
                "{body}"
            );
        }
        let frame = json!({"error":{"code":"context_length_exceeded","message":"too long"}});
        assert!(LlmError::from_frame(&frame).is_context_length());
        let not = [
            (
                400,
                r#"{"error":{"message":"Invalid 'messages[2].tool_calls'"}}"#,
            ),
            (
                500,
                r#"{"error":{"message":"maximum context length exceeded"}}"#,
            ),
            (429, r#"{"error":{"message":"too many tokens per minute"}}"#),
        ];
        for (status, body) in not {
            assert!(
                !LlmError::from_status(status, body, None, &at(URL), "m").is_context_length(),
                "{body}"
            );
        }
    }

    #[test]
    fn plain_text_bodies_give_their_first_line_and_html_its_text() {
        let error = LlmError::from_status(502, "\nBad gateway\nmore", None, &at(URL), "m");
        assert_eq!(
            error.to_string(),
            "the model server at http://127.0.0.1:9/v1 answered HTTP 502: Bad gateway"
        );
        let error =
            LlmError::from_status(502, "\n<html>Bad gateway</html>\nmore", None, &at(URL), "m");
        assert_eq!(
            error.to_string(),
            "the model server at http://127.0.0.1:9/v1 answered HTTP 502: Bad gateway more"
        );
        assert!(error.is_retryable());
    }

    #[test]
    fn a_404_that_names_no_model_points_at_the_base_url() {
        for body in ["404 page not found", "", r#"{"detail":"Not Found"}"#] {
            let error = LlmError::from_status(404, body, None, &at("http://127.0.0.1:9/"), "m");
            let text = error.to_string();
            assert!(
                text.starts_with("the model server answered HTTP 404 (not found) for http://127.0.0.1:9/chat/completions"),
                "{text}"
            );
            assert!(
                text.contains("check OPENAI_BASE_URL: most servers need it to end in /v1"),
                "{text}"
            );
            assert!(!text.contains("does not exist"), "{text}");
        }
    }

    #[test]
    fn idle_timeouts_are_retried_and_oversized_answers_are_not() {
        let idle = LlmError::IdleTimeout {
            idle: Duration::from_millis(1500),
        };
        assert!(idle.is_retryable());
        assert!(
            idle.to_string()
                .starts_with("the model server sent nothing for 1500 ms (stream_idle_timeout_ms)")
        );
        let large = LlmError::TooLarge { limit: 16 << 20 };
        assert!(!large.is_retryable());
        assert!(large.to_string().contains("passed 16 MiB"));
    }
}
