//! OpenAI Responses, `POST {base_url}/responses`.
//!
//! The request is built from the transcript at the edge, every time, and
//! is the same bytes for the same transcript (the provider's prompt cache
//! matches on the prefix). The first `system` message becomes
//! `instructions`; later ones are `developer` messages. An assistant
//! message becomes, in this order, its replayed `reasoning` items (only
//! where this wire at this endpoint wrote them, see
//! [`crate::reasoning::replayable`]), a `message` with its text, and one
//! `function_call` item per call; a tool result becomes a
//! `function_call_output`. `store: false` keeps nothing on the server, so
//! reasoning survives between requests only as the `encrypted_content` of
//! its items, which is asked for (`include`) when thinking is on: models
//! without reasoning refuse that `include` (HTTP 400 "Encrypted content is
//! not supported with this model", gpt-4.1-mini among them).
//!
//! The response is a sequence of typed events (or, not streamed, the same
//! items in one `output` array): text and reasoning deltas go to the
//! screen, a function call's arguments are pieced together from deltas and
//! then replaced by the final text of its `done` events, each reasoning
//! item is kept whole as it came (its `id`, `summary` and
//! `encrypted_content` are what the server needs back), and the turn ends
//! at `response.completed` or `response.incomplete`. `response.failed`
//! and `error` events fail the attempt and are classified like the chat
//! wire's error frames (retryable, context length).

use std::borrow::Cow;
use std::collections::HashSet;

use reqwest::header::HeaderMap;
use serde::Serialize;
use serde_json::{Value, json};

use super::{Delta, RequestParts, StreamReader, Wire, WireApi, chat, tool_values};
use crate::ModelSettings;
use crate::error::LlmError;
use crate::reasoning::{self, Reasoning};
use crate::turn::{AssistantTurn, MAX_ARGUMENTS, ToolCall, Usage, append_capped};

/// The responses wire.
#[derive(Debug)]
pub struct Responses;

impl Wire for Responses {
    fn body(&self, parts: &RequestParts<'_>) -> Vec<u8> {
        // Serializing `Value`s, strings and numbers cannot fail.
        serde_json::to_vec(&request_body(parts)).unwrap_or_default()
    }

    fn auth_headers(&self, api_key: Option<&str>, headers: &mut HeaderMap) {
        chat::bearer(api_key, headers);
    }

    fn stream_reader(&self, settings: &ModelSettings) -> Box<dyn StreamReader> {
        Box::new(Reader::at(&settings.base_url))
    }

    fn whole(
        &self,
        settings: &ModelSettings,
        response: &Value,
        model: &str,
    ) -> Result<AssistantTurn, String> {
        if response.get("status").and_then(Value::as_str) == Some("failed") {
            return Err(format!(
                "the response failed: {}",
                response.get("error").unwrap_or(&Value::Null)
            ));
        }
        if !response.get("output").is_some_and(Value::is_array) {
            let mut body = response.to_string();
            body.truncate(mcp_tools::clamp::floor_char_boundary(&body, 300));
            return Err(format!("the response has no output: {body}"));
        }
        let mut reader = Reader::at(&settings.base_url);
        reader.complete(response);
        Ok(Box::new(reader).finish(model))
    }
}

/// The request body; the field order is the order on the wire.
#[derive(Debug, Serialize)]
struct Body<'a> {
    model: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    instructions: Option<Cow<'a, str>>,
    input: Vec<Item<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    parallel_tool_calls: Option<bool>,
    store: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    include: Option<[&'static str; 1]>,
    stream: bool,
    max_output_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning: Option<ReasoningOptions>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    prompt_cache_key: Option<&'a str>,
}

#[derive(Debug, Serialize)]
struct ReasoningOptions {
    effort: &'static str,
    summary: &'static str,
}

/// One `input` item, borrowing the transcript's text.
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum Item<'a> {
    Message {
        r#type: &'static str,
        role: &'static str,
        content: [Part<'a>; 1],
    },
    FunctionCall {
        r#type: &'static str,
        call_id: &'a str,
        name: &'a str,
        arguments: Cow<'a, str>,
    },
    FunctionCallOutput {
        r#type: &'static str,
        call_id: &'a str,
        output: Cow<'a, str>,
    },
    /// A stored reasoning item, sent back as the server sent it.
    Verbatim(&'a Value),
}

#[derive(Debug, Serialize)]
struct Part<'a> {
    r#type: &'static str,
    text: Cow<'a, str>,
}

impl<'a> Item<'a> {
    fn message(role: &'static str, part: &'static str, text: Cow<'a, str>) -> Self {
        Item::Message {
            r#type: "message",
            role,
            content: [Part { r#type: part, text }],
        }
    }
}

fn request_body<'a>(parts: &RequestParts<'a>) -> Body<'a> {
    let settings = parts.settings;
    let options = &settings.body;
    let mut messages = parts.conversation.messages;
    let instructions = match messages.split_first() {
        Some((first, rest)) if role(first) == "system" => {
            messages = rest;
            Some(text_of(first.get("content")))
        }
        _ => None,
    };
    let endpoint = reasoning::endpoint_of(&settings.base_url);
    let mut input = Vec::with_capacity(messages.len());
    for message in messages {
        push_items(message, endpoint, &mut input);
    }
    let tools: Vec<Value> = tool_values(parts.tools).iter().map(flat_tool).collect();
    let has_tools = !tools.is_empty();
    Body {
        model: parts.model,
        instructions,
        input,
        tools,
        tool_choice: has_tools.then_some("auto"),
        parallel_tool_calls: has_tools.then_some(true),
        store: false,
        include: options.thinking.then_some(["reasoning.encrypted_content"]),
        stream: options.stream,
        max_output_tokens: options.max_tokens,
        reasoning: options.thinking.then_some(ReasoningOptions {
            effort: "high",
            summary: "auto",
        }),
        // Reasoning models refuse `temperature`.
        temperature: (!options.thinking).then_some(options.temperature),
        prompt_cache_key: settings.prompt_cache_key.as_deref(),
    }
}

fn role(message: &Value) -> &str {
    message
        .get("role")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// A message's content as text: a string, or the text parts of an array
/// (the chat form of multi-part content) joined.
fn text_of(content: Option<&Value>) -> Cow<'_, str> {
    match content {
        Some(Value::String(text)) => Cow::Borrowed(text),
        Some(Value::Array(parts)) => Cow::Owned(
            parts
                .iter()
                .filter_map(|part| part.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("\n"),
        ),
        Some(Value::Null) | None => Cow::Borrowed(""),
        Some(other) => Cow::Owned(other.to_string()),
    }
}

/// The input items of one transcript message.
fn push_items<'a>(message: &'a Value, endpoint: &str, input: &mut Vec<Item<'a>>) {
    let content = message.get("content");
    match role(message) {
        "system" => input.push(Item::message("developer", "input_text", text_of(content))),
        "assistant" => {
            if let Some(stored) = reasoning::replayable(message, WireApi::Responses, endpoint) {
                input.extend(reasoning::items_of(stored).iter().map(Item::Verbatim));
            }
            let text = text_of(content);
            if !text.is_empty() {
                input.push(Item::message("assistant", "output_text", text));
            }
            let calls = message.get("tool_calls").and_then(Value::as_array);
            for call in calls.into_iter().flatten() {
                let function = call.get("function").unwrap_or(&Value::Null);
                let str_at = |value: &'a Value, key: &str| {
                    value.get(key).and_then(Value::as_str).unwrap_or_default()
                };
                let arguments = match function.get("arguments") {
                    Some(Value::String(text)) => Cow::Borrowed(text.as_str()),
                    Some(Value::Null) | None => Cow::Borrowed("{}"),
                    Some(other) => Cow::Owned(other.to_string()),
                };
                input.push(Item::FunctionCall {
                    r#type: "function_call",
                    call_id: str_at(call, "id"),
                    name: str_at(function, "name"),
                    arguments,
                });
            }
        }
        "tool" => input.push(Item::FunctionCallOutput {
            r#type: "function_call_output",
            call_id: message
                .get("tool_call_id")
                .and_then(Value::as_str)
                .unwrap_or_default(),
            output: text_of(content),
        }),
        // `user`, and any role this wire has no item for, as user text.
        _ => input.push(Item::message("user", "input_text", text_of(content))),
    }
}

/// A chat tool declaration (`{"type":"function","function":{…}}`) in the
/// Responses form, flat; one already flat is read the same way.
fn flat_tool(tool: &Value) -> Value {
    let function = tool.get("function").unwrap_or(tool);
    let mut flat = serde_json::Map::new();
    flat.insert("type".into(), "function".into());
    for key in ["name", "description", "parameters"] {
        if let Some(value) = function.get(key) {
            flat.insert(key.into(), value.clone());
        }
    }
    // Strict mode would require every property in `required` and no
    // additional properties: the agent's tool schemas are not written so.
    flat.insert("strict".into(), false.into());
    Value::Object(flat)
}

/// One tool call being read, with the keys the events name it by.
#[derive(Debug, Default)]
struct Call {
    /// The item's `id` (`fc_…`), which argument deltas name.
    item_id: String,
    /// The item's place in the response's `output`.
    output_index: Option<u64>,
    call: ToolCall,
}

/// Reads Responses events (or a whole response) into an [`AssistantTurn`].
#[derive(Debug, Default)]
struct Reader {
    /// The endpoint the turn comes from (its reasoning is replayed only there).
    endpoint: String,
    content: String,
    reasoning: String,
    /// Reasoning items, whole, as the server sent them.
    items: Vec<Value>,
    /// The bytes of `items`' encrypted content.
    items_size: usize,
    calls: Vec<Call>,
    /// Items whose text arrived as deltas ("" for deltas that name no
    /// item): their `done` item's text is not added again.
    streamed: HashSet<String>,
    /// An `output_item.done` arrived: the final `output` list repeats
    /// what was read and is not read again.
    saw_done: bool,
    /// A message part was a refusal.
    refused: bool,
    usage: Option<Usage>,
    finish_reason: Option<String>,
    /// `response.completed` or `response.incomplete` arrived.
    terminal: bool,
}

impl Reader {
    fn at(base_url: &str) -> Reader {
        Reader {
            endpoint: reasoning::endpoint_of(base_url).to_owned(),
            ..Reader::default()
        }
    }

    /// The call an event names: by item id, else by output index, else a
    /// new one.
    fn call(&mut self, item_id: Option<&str>, output_index: Option<u64>) -> &mut Call {
        let item_id = item_id.filter(|id| !id.is_empty());
        let position = match item_id {
            Some(id) => self.calls.iter().position(|c| c.item_id == id),
            None => None,
        }
        .or_else(|| {
            let index = output_index?;
            self.calls.iter().position(|c| {
                c.output_index == Some(index)
                    && (c.item_id.is_empty() || item_id.is_none_or(|id| id == c.item_id))
            })
        });
        let position = position.unwrap_or_else(|| {
            self.calls.push(Call::default());
            self.calls.len() - 1
        });
        let slot = &mut self.calls[position];
        if let Some(id) = item_id {
            id.clone_into(&mut slot.item_id);
        }
        if output_index.is_some() {
            slot.output_index = output_index;
        }
        slot
    }

    /// Sets the call of `item` (a `function_call` item) from what it holds.
    fn read_call(&mut self, item: &Value, output_index: Option<u64>) {
        let slot = self.call(str_field(item, "id"), output_index);
        if let Some(call_id) = str_field(item, "call_id").filter(|s| !s.is_empty()) {
            call_id.clone_into(&mut slot.call.id);
        }
        if let Some(name) = str_field(item, "name").filter(|s| !s.is_empty()) {
            name.clone_into(&mut slot.call.name);
        }
        match item.get("arguments") {
            Some(Value::String(text)) if !text.is_empty() => {
                set_capped(&mut slot.call.arguments, text);
            }
            // Some servers send the arguments as an object rather than a string.
            Some(object @ Value::Object(_)) => {
                set_capped(&mut slot.call.arguments, &object.to_string());
            }
            _ => {}
        }
    }

    /// Reads one finished output item; returns its text for the screen
    /// when it was not streamed and is one piece.
    fn done_item<'f>(&mut self, item: &'f Value, output_index: Option<u64>) -> Option<Delta<'f>> {
        let id = str_field(item, "id").unwrap_or_default();
        let streamed = self.streamed.contains(id) || self.streamed.contains("");
        match str_field(item, "type")? {
            "message" => {
                if streamed {
                    return None;
                }
                let parts = item.get("content").and_then(Value::as_array)?;
                let mut pieces = Vec::new();
                for part in parts {
                    let text = match str_field(part, "type") {
                        Some("output_text") => str_field(part, "text"),
                        Some("refusal") => {
                            self.refused = true;
                            str_field(part, "refusal")
                        }
                        _ => None,
                    };
                    if let Some(text) = text.filter(|t| !t.is_empty()) {
                        self.content.push_str(text);
                        pieces.push(text);
                    }
                }
                single(pieces).map(Delta::Text)
            }
            "reasoning" => {
                // Under `store: false` an item is only found again through
                // its encrypted content: one without it cannot be replayed.
                if let Some(encrypted) = str_field(item, "encrypted_content") {
                    self.items_size += encrypted.len();
                    self.items.push(item.clone());
                }
                if streamed {
                    return None;
                }
                let pieces: Vec<&str> = ["summary", "content"]
                    .iter()
                    .filter_map(|key| item.get(*key)?.as_array())
                    .flatten()
                    .filter_map(|part| str_field(part, "text"))
                    .filter(|text| !text.is_empty())
                    .collect();
                for piece in &pieces {
                    if !self.reasoning.is_empty() {
                        self.reasoning.push_str(PARAGRAPH);
                    }
                    self.reasoning.push_str(piece);
                }
                single(pieces).map(Delta::Reasoning)
            }
            "function_call" => {
                self.read_call(item, output_index);
                None
            }
            _ => None,
        }
    }

    /// Reads a whole response object: its items (unless their `done`
    /// events were read), usage and status.
    fn complete(&mut self, response: &Value) {
        if !self.saw_done {
            let output = response.get("output").and_then(Value::as_array);
            for (index, item) in output.into_iter().flatten().enumerate() {
                self.done_item(item, Some(index as u64));
            }
        }
        if let Some(usage) = response.get("usage").filter(|u| u.is_object()) {
            self.usage = Some(usage_of(usage));
        }
        self.finish_reason = Some(self.finish_reason_of(response));
    }

    fn finish_reason_of(&self, response: &Value) -> String {
        if str_field(response, "status") == Some("incomplete") {
            let reason = response
                .get("incomplete_details")
                .and_then(|d| str_field(d, "reason"))
                .unwrap_or_default();
            return match reason {
                // The loop reads `length` as "the last call was cut off".
                "max_output_tokens" | "" => "length".into(),
                other => other.to_owned(),
            };
        }
        if self.calls.iter().any(|c| c.call != ToolCall::default()) {
            "tool_calls".into()
        } else if self.refused {
            "refusal".into()
        } else {
            "stop".into()
        }
    }
}

/// Between two reasoning summaries, as the screen and the stored text show them.
const PARAGRAPH: &str = "\n\n";

fn str_field<'v>(value: &'v Value, key: &str) -> Option<&'v str> {
    value.get(key).and_then(Value::as_str)
}

/// The one piece, when there is exactly one.
fn single(pieces: Vec<&str>) -> Option<&str> {
    match pieces.as_slice() {
        [one] => Some(one),
        _ => None,
    }
}

/// Replaces `arguments` with `text`, kept within [`MAX_ARGUMENTS`] the way
/// deltas are.
fn set_capped(arguments: &mut String, text: &str) {
    arguments.clear();
    append_capped(arguments, text);
}

/// Responses usage: `input_tokens` (cached included), `output_tokens`
/// (reasoning included), and their details.
fn usage_of(usage: &Value) -> Usage {
    let count = |path: &[&str]| {
        path.iter()
            .try_fold(usage, |at, key| at.get(*key))
            .and_then(Value::as_u64)
            .unwrap_or(0)
    };
    Usage {
        prompt_tokens: count(&["input_tokens"]),
        completion_tokens: count(&["output_tokens"]),
        cached_tokens: count(&["input_tokens_details", "cached_tokens"]),
        cache_write_tokens: 0,
        reasoning_tokens: count(&["output_tokens_details", "reasoning_tokens"]),
    }
}

/// The error of a `response.failed` or `error` event, classified like the
/// chat wire's error frames.
fn event_error(error: &Value) -> LlmError {
    let error = match error {
        Value::Object(_) | Value::String(_) => error.clone(),
        _ => json!({"message": "the response failed without saying why"}),
    };
    LlmError::from_frame(&json!({ "error": error }))
}

impl Reader {
    /// Reads one event that is not an error.
    fn read_event<'f>(&mut self, event: &'f Value) -> Option<Delta<'f>> {
        let item_id = str_field(event, "item_id");
        let output_index = event.get("output_index").and_then(Value::as_u64);
        let delta = || str_field(event, "delta").filter(|d| !d.is_empty());
        match str_field(event, "type").unwrap_or_default() {
            "response.output_item.added" => {
                let item = event.get("item").unwrap_or(&Value::Null);
                if str_field(item, "type") == Some("function_call") {
                    self.read_call(item, output_index);
                }
                None
            }
            kind @ ("response.output_text.delta" | "response.refusal.delta") => {
                let text = delta()?;
                self.refused |= kind == "response.refusal.delta";
                self.streamed.insert(item_id.unwrap_or_default().to_owned());
                self.content.push_str(text);
                Some(Delta::Text(text))
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                let text = delta()?;
                self.streamed.insert(item_id.unwrap_or_default().to_owned());
                self.reasoning.push_str(text);
                Some(Delta::Reasoning(text))
            }
            // A new summary or reasoning part: a paragraph apart from the last.
            "response.reasoning_summary_part.added" | "response.content_part.added"
                if !self.reasoning.is_empty()
                    && event
                        .get("part")
                        .and_then(|p| str_field(p, "type"))
                        .is_some_and(|t| t == "summary_text" || t == "reasoning_text") =>
            {
                self.reasoning.push_str(PARAGRAPH);
                Some(Delta::Reasoning(PARAGRAPH))
            }
            "response.function_call_arguments.delta" => {
                let piece = delta()?;
                let slot = self.call(item_id, output_index);
                append_capped(&mut slot.call.arguments, piece);
                None
            }
            "response.function_call_arguments.done" => {
                if let Some(text) = str_field(event, "arguments") {
                    let slot = self.call(item_id, output_index);
                    set_capped(&mut slot.call.arguments, text);
                }
                None
            }
            "response.output_item.done" => {
                self.saw_done = true;
                let item = event.get("item").unwrap_or(&Value::Null);
                self.done_item(item, output_index)
            }
            "response.completed" | "response.incomplete" => {
                self.complete(event.get("response").unwrap_or(&Value::Null));
                self.terminal = true;
                None
            }
            // `response.created`, `response.in_progress`, part and `done`
            // events that repeat what the deltas said, and tools this
            // agent does not declare.
            _ => None,
        }
    }
}

impl StreamReader for Reader {
    fn apply<'f>(&mut self, event: &'f Value) -> Result<Option<Delta<'f>>, LlmError> {
        match str_field(event, "type").unwrap_or_default() {
            "response.failed" => {
                let response = event.get("response").unwrap_or(&Value::Null);
                Err(event_error(response.get("error").unwrap_or(&Value::Null)))
            }
            "error" => {
                let mut error = serde_json::Map::new();
                for key in ["code", "message", "param"] {
                    if let Some(value) = event.get(key) {
                        error.insert(key.into(), value.clone());
                    }
                }
                Err(event_error(&Value::Object(error)))
            }
            _ => Ok(self.read_event(event)),
        }
    }

    fn finished(&self) -> bool {
        self.terminal
    }

    fn whole_at_eof(&self) -> bool {
        self.terminal
    }

    fn arguments_over_limit(&self) -> bool {
        self.calls
            .iter()
            .any(|c| c.call.arguments.len() > MAX_ARGUMENTS)
    }

    fn size(&self) -> usize {
        self.content.len()
            + self.reasoning.len()
            + self.items_size
            + self
                .calls
                .iter()
                .map(|c| c.call.arguments.len())
                .sum::<usize>()
    }

    fn finish(self: Box<Self>, model: &str) -> AssistantTurn {
        let reader = *self;
        let reasoning = Reasoning {
            wire: WireApi::Responses,
            endpoint: reader.endpoint,
            text: reader.reasoning,
            items: reader.items,
        };
        AssistantTurn {
            content: reader.content,
            tool_calls: reader
                .calls
                .into_iter()
                .map(|c| c.call)
                .filter(|c| *c != ToolCall::default())
                .collect(),
            usage: reader.usage,
            model: model.to_owned(),
            finish_reason: reader.finish_reason,
            reasoning: (!reasoning.is_empty()).then_some(reasoning),
        }
    }
}
