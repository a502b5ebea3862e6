//! The chat completions request body.
//!
//! Every field answers one question (seed article): `temperature` 0 for
//! reproducible edits, `max_tokens` as a per-response budget, `stream` with
//! `stream_options.include_usage` so the ledger gets usage from streams,
//! `tools` and `tool_choice: "auto"` only when there are tools (some servers
//! reject `tool_choice` without tools), `reasoning_effort` only when thinking
//! is on. Nothing else (`top_p`, `seed`, penalties): each extra field is one
//! more way for a compatible server to refuse the request.

use serde::Serialize;
use serde_json::Value;

/// The request body, serialized without copying the history.
#[derive(Debug, Serialize)]
pub struct ChatBody<'a> {
    model: &'a str,
    messages: &'a [Value],
    temperature: f64,
    max_tokens: u32,
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    tools: Option<&'a [Value]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_effort: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream_options: Option<StreamOptions>,
}

#[derive(Debug, Serialize)]
struct StreamOptions {
    include_usage: bool,
}

/// The knobs of the body that come from settings rather than from the turn.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BodyOptions {
    /// Sampling temperature (default 0.0).
    pub temperature: f64,
    /// Per-response token budget (default 4096).
    pub max_tokens: u32,
    /// Whether to ask for a stream.
    pub stream: bool,
    /// Whether to send `reasoning_effort: "high"`.
    pub thinking: bool,
}

impl<'a> ChatBody<'a> {
    /// Builds the body for `model` with the whole history and the tool declarations.
    pub fn new(
        options: &BodyOptions,
        model: &'a str,
        messages: &'a [Value],
        tools: &'a [Value],
    ) -> Self {
        let has_tools = !tools.is_empty();
        ChatBody {
            model,
            messages,
            temperature: options.temperature,
            max_tokens: options.max_tokens,
            stream: options.stream,
            tools: has_tools.then_some(tools),
            tool_choice: has_tools.then_some("auto"),
            reasoning_effort: options.thinking.then_some("high"),
            stream_options: options.stream.then_some(StreamOptions {
                include_usage: true,
            }),
        }
    }

    /// The JSON bytes to send.
    pub fn to_bytes(&self) -> Vec<u8> {
        // Serializing `Value`s and plain fields cannot fail.
        serde_json::to_vec(self).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const OPTIONS: BodyOptions = BodyOptions {
        temperature: 0.0,
        max_tokens: 4096,
        stream: true,
        thinking: false,
    };

    fn body(options: &BodyOptions, tools: &[Value]) -> Value {
        let messages = [json!({"role":"user","content":"hi"})];
        serde_json::from_slice(&ChatBody::new(options, "m", &messages, tools).to_bytes()).unwrap()
    }

    #[test]
    fn default_body_has_exactly_the_article_fields() {
        assert_eq!(
            body(&OPTIONS, &[]),
            json!({
                "model": "m",
                "messages": [{"role":"user","content":"hi"}],
                "temperature": 0.0,
                "max_tokens": 4096,
                "stream": true,
                "stream_options": {"include_usage": true}
            })
        );
    }

    #[test]
    fn tools_and_tool_choice_come_together_only_with_tools() {
        let tools =
            [json!({"type":"function","function":{"name":"x","parameters":{"type":"object"}}})];
        let with = body(&OPTIONS, &tools);
        assert_eq!(with["tools"], json!(tools));
        assert_eq!(with["tool_choice"], "auto");
        assert!(body(&OPTIONS, &[]).get("tool_choice").is_none());
    }

    #[test]
    fn reasoning_effort_only_when_thinking_and_stream_options_only_when_streaming() {
        let thinking = body(
            &BodyOptions {
                thinking: true,
                stream: false,
                ..OPTIONS
            },
            &[],
        );
        assert_eq!(thinking["reasoning_effort"], "high");
        assert_eq!(thinking["stream"], false);
        assert!(thinking.get("stream_options").is_none());
    }
}
