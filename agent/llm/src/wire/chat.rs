//! OpenAI chat completions: the transcript's own shape, so the conversion
//! is small. The only change at the edge is reasoning: an assistant
//! message's stored reasoning becomes `reasoning_content` when this
//! endpoint wrote it (DeepSeek's thinking mode refuses a tool-calling turn
//! without it) and is dropped otherwise. Messages without reasoning are
//! copied as encoded.

use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderValue};
use serde_json::Value;
use serde_json::value::RawValue;

use super::{Delta, RequestParts, StreamReader, Wire, WireApi};
use crate::body::ChatBody;
use crate::error::LlmError;
use crate::reasoning::{self, KEY};
use crate::turn::{AssistantTurn, TurnBuilder};
use crate::{JsonList, ModelSettings};

/// The chat completions wire.
#[derive(Debug)]
pub struct Chat;

impl Wire for Chat {
    fn body(&self, parts: &RequestParts<'_>) -> Vec<u8> {
        let endpoint = reasoning::endpoint_of(&parts.settings.base_url);
        let conversation = parts.conversation;
        let converted;
        let messages = match conversation.encoded {
            Some(encoded) if !conversation.messages.iter().any(|m| m.get(KEY).is_some()) => {
                JsonList::Encoded(encoded)
            }
            _ => {
                converted = edge_messages(conversation.messages, conversation.encoded, endpoint);
                JsonList::Encoded(&converted)
            }
        };
        ChatBody::new(&parts.settings.body, parts.model, messages, parts.tools)
            .cache_key(parts.settings.prompt_cache_key.as_deref())
            .to_bytes()
    }

    fn auth_headers(&self, api_key: Option<&str>, headers: &mut HeaderMap) {
        bearer(api_key, headers);
    }

    fn stream_reader(&self, settings: &ModelSettings) -> Box<dyn StreamReader> {
        Box::new(TurnBuilder::at(&settings.base_url))
    }

    fn whole(
        &self,
        settings: &ModelSettings,
        response: &Value,
        model: &str,
    ) -> Result<AssistantTurn, String> {
        crate::turn::turn_from_response(response, model, &settings.base_url)
    }
}

/// `Authorization: Bearer KEY` (the OpenAI wires), when there is a key.
pub(crate) fn bearer(api_key: Option<&str>, headers: &mut HeaderMap) {
    if let Some(value) = api_key.and_then(|key| HeaderValue::try_from(format!("Bearer {key}")).ok())
    {
        headers.insert(AUTHORIZATION, value);
    }
}

/// The messages as chat sends them: reasoning made `reasoning_content`
/// where `endpoint` wrote it, dropped elsewhere; the rest as encoded.
fn edge_messages(
    messages: &[Value],
    encoded: Option<&[Box<RawValue>]>,
    endpoint: &str,
) -> Vec<Box<RawValue>> {
    messages
        .iter()
        .enumerate()
        .map(|(index, message)| {
            if message.get(KEY).is_none()
                && let Some(raw) = encoded.and_then(|e| e.get(index))
            {
                return raw.clone();
            }
            let mut plain = message.clone();
            if let Some(object) = plain.as_object_mut() {
                object.remove(KEY);
                let text = reasoning::replayable(message, WireApi::Chat, endpoint)
                    .map(reasoning::text_of)
                    .filter(|text| !text.is_empty());
                if let Some(text) = text {
                    object.insert("reasoning_content".into(), Value::String(text.to_owned()));
                }
            }
            serde_json::value::to_raw_value(&plain).unwrap_or_else(|_| RawValue::NULL.to_owned())
        })
        .collect()
}

impl StreamReader for TurnBuilder {
    fn apply<'f>(&mut self, event: &'f Value) -> Result<Option<Delta<'f>>, LlmError> {
        Ok(self.apply_delta(event))
    }

    fn finished(&self) -> bool {
        // `[DONE]` is a frame of its own; the client ends on it.
        false
    }

    fn whole_at_eof(&self) -> bool {
        // A server that just closes the connection: whole when a chunk
        // said why the turn finished.
        self.finish_reason().is_some()
    }

    fn arguments_over_limit(&self) -> bool {
        TurnBuilder::arguments_over_limit(self)
    }

    fn size(&self) -> usize {
        TurnBuilder::size(self)
    }

    fn finish(self: Box<Self>, model: &str) -> AssistantTurn {
        TurnBuilder::finish(*self, model)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reasoning::Reasoning;
    use serde_json::json;

    fn sent(messages: &[Value], endpoint: &str) -> Vec<Value> {
        edge_messages(messages, None, endpoint)
            .iter()
            .map(|raw| serde_json::from_str(raw.get()).unwrap())
            .collect()
    }

    #[test]
    fn reasoning_goes_back_as_reasoning_content_only_to_its_endpoint() {
        let here = "https://api.deepseek.com/v1";
        let stored = Reasoning {
            wire: WireApi::Chat,
            endpoint: here.into(),
            text: "let me look".into(),
            items: vec![],
        };
        let history = [
            json!({"role":"user","content":"q"}),
            json!({"role":"assistant","content":null,"tool_calls":[],KEY: stored.to_value()}),
        ];
        let same = sent(&history, here);
        assert_eq!(same[1]["reasoning_content"], "let me look");
        assert!(same[1].get(KEY).is_none());
        assert_eq!(same[0], history[0]);
        let elsewhere = sent(&history, "http://localhost:8080/v1");
        assert!(elsewhere[1].get("reasoning_content").is_none());
        assert!(elsewhere[1].get(KEY).is_none());
    }
}
