//! The chat completions request body.
//!
//! Every field answers one question (seed article): `temperature` 0 for
//! reproducible edits, `max_tokens` as a per-response budget, `stream` with
//! `stream_options.include_usage` so the ledger gets usage from streams,
//! `tools` and `tool_choice: "auto"` only when there are tools (some servers
//! reject `tool_choice` without tools), `reasoning_effort` only when thinking
//! is on, `prompt_cache_key` when the session has one (a stable key per
//! session routes every request of it to the same cache; a provider whose
//! server refuses unknown fields switches it off). Nothing else (`top_p`,
//! `seed`, penalties): each extra field is one more way for a compatible
//! server to refuse the request.

use serde::{Serialize, Serializer};
use serde_json::Value;
use serde_json::value::RawValue;

/// A JSON array of a request (its messages, its tools): values to
/// serialise, or items already encoded (the agent's transcript keeps each message so),
/// which cost a copy instead of a serialisation at every request.
#[derive(Debug, Clone, Copy)]
pub enum JsonList<'a> {
    /// Values serialised when the body is built.
    Values(&'a [Value]),
    /// Items encoded earlier, copied as they are.
    Encoded(&'a [Box<RawValue>]),
}

impl JsonList<'_> {
    /// Whether the array is empty.
    pub fn is_empty(&self) -> bool {
        match self {
            JsonList::Values(items) => items.is_empty(),
            JsonList::Encoded(items) => items.is_empty(),
        }
    }
}

impl<'a> From<&'a [Value]> for JsonList<'a> {
    fn from(values: &'a [Value]) -> Self {
        JsonList::Values(values)
    }
}

impl<'a> From<&'a Vec<Value>> for JsonList<'a> {
    fn from(values: &'a Vec<Value>) -> Self {
        JsonList::Values(values)
    }
}

impl Serialize for JsonList<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            JsonList::Values(items) => items.serialize(serializer),
            JsonList::Encoded(items) => items.serialize(serializer),
        }
    }
}

/// The request body, serialized without copying the history.
#[derive(Debug, Serialize)]
pub struct ChatBody<'a> {
    model: &'a str,
    messages: JsonList<'a>,
    temperature: f64,
    max_tokens: u32,
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    tools: Option<JsonList<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_effort: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream_options: Option<StreamOptions>,
    #[serde(skip_serializing_if = "Option::is_none")]
    prompt_cache_key: Option<&'a str>,
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
        messages: JsonList<'a>,
        tools: JsonList<'a>,
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
            prompt_cache_key: None,
        }
    }

    /// Sends `key` as `prompt_cache_key` (none: the field is left out).
    pub fn cache_key(mut self, key: Option<&'a str>) -> Self {
        self.prompt_cache_key = key;
        self
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
        let messages = JsonList::Values(&messages);
        let tools = JsonList::Values(tools);
        serde_json::from_slice(&ChatBody::new(options, "m", messages, tools).to_bytes()).unwrap()
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
    fn encoded_items_make_the_same_body_as_their_values() {
        let messages = [
            json!({"role":"system","content":"s"}),
            json!({"role":"user","content":"é \"quoted\"\n"}),
        ];
        let tools = [json!({"type":"function","function":{"name":"x"}})];
        let messages_encoded: Vec<Box<RawValue>> = messages
            .iter()
            .map(|m| serde_json::value::to_raw_value(m).unwrap())
            .collect();
        let tools_encoded: Vec<Box<RawValue>> = tools
            .iter()
            .map(|t| serde_json::value::to_raw_value(t).unwrap())
            .collect();
        let plain = ChatBody::new(&OPTIONS, "m", (&messages[..]).into(), (&tools[..]).into());
        let encoded = ChatBody::new(
            &OPTIONS,
            "m",
            JsonList::Encoded(&messages_encoded),
            JsonList::Encoded(&tools_encoded),
        );
        assert_eq!(plain.to_bytes(), encoded.to_bytes());
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
