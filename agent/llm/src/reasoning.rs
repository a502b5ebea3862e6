//! Reasoning a model returned, kept with its assistant turn and replayed
//! verbatim to the provider that wrote it.
//!
//! Reasoning models refuse a history that lost their reasoning: DeepSeek's
//! thinking mode wants each tool-calling turn's `reasoning_content` back,
//! the Responses API (with `store: false`) a `function_call` item's
//! `reasoning` item with its `encrypted_content`, Anthropic a tool turn's
//! `thinking` block with its unaltered `signature`. So an assistant message
//! in the transcript carries what its wire returned under the key
//! [`KEY`]: the wire and endpoint that wrote it, the readable text, and the
//! wire's own items byte for byte. A wire sends the items back only when it
//! is that wire at that endpoint ([`replayable`]); anywhere else they are
//! dropped, never translated or forged (a signature is only valid where it
//! was made).

use serde_json::{Value, json};

use crate::wire::WireApi;

/// The key of an assistant message that holds its [`Reasoning`].
pub const KEY: &str = "reasoning";

/// What one assistant turn reasoned, as its wire returned it.
#[derive(Debug, Clone, PartialEq)]
pub struct Reasoning {
    /// The wire that returned it.
    pub wire: WireApi,
    /// The endpoint (base URL without a trailing `/`) that returned it.
    pub endpoint: String,
    /// The readable reasoning (chat's `reasoning_content`, the Responses
    /// summaries, Anthropic's thinking text); shown dimmed, never part of
    /// the answer. May be empty when the provider only returns it encrypted.
    pub text: String,
    /// The wire's own items, verbatim: `reasoning` items (responses),
    /// `thinking` and `redacted_thinking` blocks (messages); empty on chat,
    /// whose reasoning is the text itself.
    pub items: Vec<Value>,
}

impl Reasoning {
    /// Whether there is nothing to keep.
    pub fn is_empty(&self) -> bool {
        self.text.is_empty() && self.items.is_empty()
    }

    /// The value stored under [`KEY`] in the assistant message.
    pub fn to_value(&self) -> Value {
        json!({
            "wire": self.wire.as_str(),
            "endpoint": self.endpoint,
            "text": self.text,
            "items": self.items,
        })
    }
}

/// The stored reasoning of `message` when it was written by `wire` at
/// `endpoint` (so it may be sent back there), else `None`.
pub fn replayable<'a>(message: &'a Value, wire: WireApi, endpoint: &str) -> Option<&'a Value> {
    let stored = message.get(KEY)?;
    let same_wire = stored.get("wire").and_then(Value::as_str) == Some(wire.as_str());
    let same_endpoint = stored.get("endpoint").and_then(Value::as_str) == Some(endpoint);
    (same_wire && same_endpoint).then_some(stored)
}

/// The readable text of a stored reasoning value.
pub fn text_of(stored: &Value) -> &str {
    stored
        .get("text")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// The wire items of a stored reasoning value.
pub fn items_of(stored: &Value) -> &[Value] {
    stored
        .get("items")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

/// `base_url` as an endpoint identity: without a trailing `/`.
pub fn endpoint_of(base_url: &str) -> &str {
    base_url.trim_end_matches('/')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_same_wire_at_the_same_endpoint_gets_reasoning_back() {
        let reasoning = Reasoning {
            wire: WireApi::Messages,
            endpoint: "https://api.anthropic.com/v1".into(),
            text: "t".into(),
            items: vec![json!({"type":"thinking","thinking":"t","signature":"s"})],
        };
        let message = json!({"role":"assistant","content":"x", KEY: reasoning.to_value()});
        let here = "https://api.anthropic.com/v1";
        assert!(replayable(&message, WireApi::Messages, here).is_some());
        assert!(replayable(&message, WireApi::Chat, here).is_none());
        assert!(replayable(&message, WireApi::Messages, "http://localhost:8080/v1").is_none());
        let stored = replayable(&message, WireApi::Messages, here).unwrap();
        assert_eq!(text_of(stored), "t");
        assert_eq!(items_of(stored)[0]["signature"], "s");
        assert!(replayable(&json!({"role":"assistant"}), WireApi::Chat, here).is_none());
    }
}
