//! The three model wires and what they share.
//!
//! The transcript is the one source of truth: chat-completions-shaped
//! messages (`system`, `user`, `assistant` with `tool_calls`, `tool`), each
//! assistant message carrying its [`crate::reasoning`]. A wire converts it
//! at the edge, on every request, into its own request body
//! ([`Wire::body`]) and reads its own response back into one
//! [`AssistantTurn`] ([`StreamReader`], [`Wire::whole`]). Retries, the
//! fallback model, `Retry-After`, bounds on what a server can make the agent
//! hold, and the idle timeout stay in [`crate::Client`], the same for all.
//!
//! - [`chat`]: OpenAI chat completions, `POST {base_url}/chat/completions`;
//! - [`responses`]: OpenAI Responses, `POST {base_url}/responses`;
//! - [`messages`]: Anthropic Messages, `POST {base_url}/messages`.

pub mod chat;
pub mod messages;
pub mod responses;

use std::fmt;
use std::str::FromStr;

use reqwest::header::HeaderMap;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::error::LlmError;
use crate::turn::AssistantTurn;
use crate::{JsonList, ModelSettings};

/// Which API a provider speaks (Codex's `wire_api`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum WireApi {
    /// OpenAI chat completions (and every compatible server).
    #[default]
    Chat,
    /// The OpenAI Responses API.
    Responses,
    /// The Anthropic Messages API.
    Messages,
}

impl WireApi {
    /// Every wire, in the order they are documented.
    pub const ALL: [WireApi; 3] = [WireApi::Chat, WireApi::Responses, WireApi::Messages];

    /// The name a config file uses: `chat`, `responses` or `messages`.
    pub fn as_str(self) -> &'static str {
        match self {
            WireApi::Chat => "chat",
            WireApi::Responses => "responses",
            WireApi::Messages => "messages",
        }
    }

    /// The path under the base URL that requests go to.
    pub fn path(self) -> &'static str {
        match self {
            WireApi::Chat => "chat/completions",
            WireApi::Responses => "responses",
            WireApi::Messages => "messages",
        }
    }
}

impl fmt::Display for WireApi {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for WireApi {
    type Err = String;

    fn from_str(text: &str) -> Result<WireApi, String> {
        WireApi::ALL
            .into_iter()
            .find(|wire| wire.as_str() == text)
            .ok_or_else(|| {
                format!(
                    "unknown wire_api \"{text}\"; expected \"chat\", \"responses\" or \"messages\""
                )
            })
    }
}

/// The history of one request: the transcript's messages, and (when the
/// caller keeps them) each one's JSON encoding, which the chat wire copies
/// instead of serialising again.
#[derive(Debug, Clone, Copy)]
pub struct Conversation<'a> {
    /// The messages, system message first.
    pub messages: &'a [Value],
    /// The same messages already encoded, one per message.
    pub encoded: Option<&'a [Box<RawValue>]>,
}

impl<'a> From<&'a [Value]> for Conversation<'a> {
    fn from(messages: &'a [Value]) -> Self {
        Conversation {
            messages,
            encoded: None,
        }
    }
}

impl<'a> From<&'a Vec<Value>> for Conversation<'a> {
    fn from(messages: &'a Vec<Value>) -> Self {
        Conversation::from(messages.as_slice())
    }
}

/// What one request needs from its wire, besides the history.
pub(crate) struct RequestParts<'a> {
    /// The settings of the client (body options, cache key, endpoint).
    pub settings: &'a ModelSettings,
    /// The model asked (the configured one or the fallback).
    pub model: &'a str,
    /// The history.
    pub conversation: Conversation<'a>,
    /// The tool declarations, in chat-completions form.
    pub tools: JsonList<'a>,
}

/// Something a stream event added, for the screen.
#[derive(Debug, PartialEq, Eq)]
pub enum Delta<'a> {
    /// Answer text.
    Text(&'a str),
    /// Reasoning text (shown dimmed, never part of the answer).
    Reasoning(&'a str),
}

/// Reads one wire's stream events into an [`AssistantTurn`].
pub(crate) trait StreamReader: Send {
    /// Applies one event's data; returns the text it added, if any. A
    /// wire's own error event is an `Err`.
    fn apply<'f>(&mut self, event: &'f Value) -> Result<Option<Delta<'f>>, LlmError>;
    /// Whether the wire's last event arrived: reading stops here.
    fn finished(&self) -> bool;
    /// Whether a stream that ends now (EOF, no terminal event) still holds a
    /// whole turn.
    fn whole_at_eof(&self) -> bool;
    /// Whether a call's arguments passed [`crate::turn::MAX_ARGUMENTS`].
    fn arguments_over_limit(&self) -> bool;
    /// The bytes of text, reasoning and arguments held so far.
    fn size(&self) -> usize;
    /// The turn read so far, answered by `model`.
    fn finish(self: Box<Self>, model: &str) -> AssistantTurn;
}

/// One wire's conversions.
pub(crate) trait Wire: Send + Sync + fmt::Debug {
    /// The request body.
    fn body(&self, parts: &RequestParts<'_>) -> Vec<u8>;
    /// The authentication and version headers for `api_key`.
    fn auth_headers(&self, api_key: Option<&str>, headers: &mut HeaderMap);
    /// A reader for one streamed response.
    fn stream_reader(&self, settings: &ModelSettings) -> Box<dyn StreamReader>;
    /// Learns from a refusal: when `error` says the server does not take
    /// a field this wire sends (a model without reasoning refusing the
    /// encrypted-reasoning `include`, a reasoning model refusing
    /// `temperature`), the wire stops sending it and returns true, and the
    /// client asks again at once. The default learns nothing.
    fn adapt(&self, _error: &LlmError) -> bool {
        false
    }
    /// Reads a whole (non-streamed) response.
    fn whole(
        &self,
        settings: &ModelSettings,
        response: &Value,
        model: &str,
    ) -> Result<AssistantTurn, String>;
}

/// The wire implementation for `api`.
pub(crate) fn of(api: WireApi) -> Box<dyn Wire> {
    match api {
        WireApi::Chat => Box::new(chat::Chat),
        WireApi::Responses => Box::new(responses::Responses::default()),
        WireApi::Messages => Box::new(messages::Messages),
    }
}

/// The tool declarations as values, whichever form they came in.
pub(crate) fn tool_values(tools: JsonList<'_>) -> Vec<Value> {
    match tools {
        JsonList::Values(values) => values.to_vec(),
        JsonList::Encoded(encoded) => encoded
            .iter()
            .filter_map(|raw| serde_json::from_str(raw.get()).ok())
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_names_round_trip_and_unknown_ones_are_refused() {
        for wire in WireApi::ALL {
            assert_eq!(wire.as_str().parse::<WireApi>(), Ok(wire));
        }
        assert!(
            "anthropic"
                .parse::<WireApi>()
                .unwrap_err()
                .contains("expected")
        );
    }
}
