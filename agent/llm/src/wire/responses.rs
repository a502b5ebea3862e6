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
//! its items, which every request asks for (`include`), as Codex does.
//! Models without reasoning refuse that `include` (HTTP 400 "Encrypted
//! content is not supported with this model", gpt-4.1-mini among them)
//! and reasoning models refuse `temperature`: on such a refusal the wire
//! drops the field for the rest of the process and the request is sent
//! again at once ([`Wire::adapt`]), so one refused request is the price of
//! not knowing in advance which kind of model a name is.
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
use std::sync::atomic::{AtomicBool, Ordering};

use reqwest::header::HeaderMap;
use serde::Serialize;
use serde_json::{Value, json};

use super::{Delta, RequestParts, StreamReader, Wire, WireApi, chat, tool_values};
use crate::ModelSettings;
use crate::error::LlmError;
use crate::reasoning::{self, Reasoning};
use crate::turn::{AssistantTurn, MAX_ARGUMENTS, ToolCall, Usage, append_capped};

/// The responses wire, and what it learned the server refuses.
#[derive(Debug)]
pub struct Responses {
    /// Ask for `reasoning.encrypted_content` (until a model refuses it).
    include: AtomicBool,
    /// Send `temperature` when not thinking (until a model refuses it).
    temperature: AtomicBool,
}

impl Default for Responses {
    fn default() -> Self {
        Responses {
            include: AtomicBool::new(true),
            temperature: AtomicBool::new(true),
        }
    }
}

/// Whether `error` is a 400 refusing a field by `words` in its message.
fn refuses(error: &LlmError, words: &[&str]) -> bool {
    let LlmError::Status {
        status: 400,
        message,
        ..
    } = error
    else {
        return false;
    };
    let lower = message.to_lowercase();
    words.iter().all(|word| lower.contains(word))
}

impl Wire for Responses {
    fn body(&self, parts: &RequestParts<'_>) -> Vec<u8> {
        let mut body = request_body(parts);
        if !self.include.load(Ordering::Relaxed) {
            body.include = None;
        }
        if !self.temperature.load(Ordering::Relaxed) {
            body.temperature = None;
        }
        // Serializing `Value`s, strings and numbers cannot fail.
        serde_json::to_vec(&body).unwrap_or_default()
    }

    fn adapt(&self, error: &LlmError) -> bool {
        if refuses(error, &["encrypted content", "not supported"]) {
            return self.include.swap(false, Ordering::Relaxed);
        }
        if refuses(error, &["temperature"])
            && (refuses(error, &["unsupported"]) || refuses(error, &["not supported"]))
        {
            return self.temperature.swap(false, Ordering::Relaxed);
        }
        false
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
        include: Some(["reasoning.encrypted_content"]),
        stream: options.stream,
        max_output_tokens: options.max_tokens,
        // The summaries are the only readable reasoning these models
        // return. (OpenAI refuses them, HTTP 400, to an organization it has
        // not verified.)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reasoning::KEY;
    use crate::{BodyOptions, Conversation, JsonList};
    use serde_json::value::RawValue;

    const BASE: &str = "https://api.openai.com/v1";

    fn settings(thinking: bool) -> ModelSettings {
        let mut settings = ModelSettings::new(format!("{BASE}/"), "gpt-5");
        settings.body = BodyOptions {
            temperature: 0.0,
            max_tokens: 8192,
            stream: true,
            thinking,
        };
        settings
    }

    fn body_bytes(settings: &ModelSettings, messages: &[Value], tools: JsonList<'_>) -> Vec<u8> {
        Responses::default().body(&RequestParts {
            settings,
            model: &settings.model,
            conversation: Conversation::from(messages),
            tools,
        })
    }

    fn body(settings: &ModelSettings, messages: &[Value], tools: &[Value]) -> Value {
        serde_json::from_slice(&body_bytes(settings, messages, JsonList::Values(tools))).unwrap()
    }

    /// A reasoning item as the server sends it (keys in sorted order, the
    /// order `Value` keeps them in).
    fn reasoning_item(id: &str, summaries: &[&str]) -> Value {
        let summary: Vec<Value> = summaries
            .iter()
            .map(|text| json!({"text": text, "type": "summary_text"}))
            .collect();
        json!({"encrypted_content": format!("gAAAA-{id}"), "id": id, "summary": summary, "type": "reasoning"})
    }

    fn stored(wire: WireApi, endpoint: &str, items: Vec<Value>) -> Value {
        Reasoning {
            wire,
            endpoint: endpoint.into(),
            text: "thought".into(),
            items,
        }
        .to_value()
    }

    fn history() -> Vec<Value> {
        vec![
            json!({"role":"system","content":"You are NanoHermes."}),
            json!({"role":"user","content":"list the files"}),
            json!({"role":"assistant","content":"Looking."}),
            json!({"role":"user","content":"read both"}),
            json!({"role":"assistant","content":null,"tool_calls":[
                {"id":"call_A","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"a.rs\"}"}},
                {"id":"call_B","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"b.rs\"}"}}
            ], KEY: stored(WireApi::Responses, BASE, vec![reasoning_item("rs_1", &["Plan"])])}),
            json!({"role":"tool","tool_call_id":"call_A","content":"fn a() {}"}),
            json!({"role":"tool","tool_call_id":"call_B","content":"ERROR: no such file"}),
            json!({"role":"system","content":"The sandbox is read-only."}),
        ]
    }

    fn tools() -> Vec<Value> {
        vec![json!({"type":"function","function":{
            "name":"read_file","description":"Read a file.",
            "parameters":{"properties":{"path":{"type":"string"}},"required":["path"],"type":"object"}}})]
    }

    #[test]
    fn the_body_of_a_whole_history_is_exactly_this() {
        let mut settings = settings(true);
        settings.prompt_cache_key = Some("session-1".into());
        let bytes = body_bytes(&settings, &history(), JsonList::Values(&tools()));
        let golden = concat!(
            r#"{"model":"gpt-5","instructions":"You are NanoHermes.","input":["#,
            r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"list the files"}]},"#,
            r#"{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Looking."}]},"#,
            r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"read both"}]},"#,
            r#"{"encrypted_content":"gAAAA-rs_1","id":"rs_1","summary":[{"text":"Plan","type":"summary_text"}],"type":"reasoning"},"#,
            r#"{"type":"function_call","call_id":"call_A","name":"read_file","arguments":"{\"path\":\"a.rs\"}"},"#,
            r#"{"type":"function_call","call_id":"call_B","name":"read_file","arguments":"{\"path\":\"b.rs\"}"},"#,
            r#"{"type":"function_call_output","call_id":"call_A","output":"fn a() {}"},"#,
            r#"{"type":"function_call_output","call_id":"call_B","output":"ERROR: no such file"},"#,
            r#"{"type":"message","role":"developer","content":[{"type":"input_text","text":"The sandbox is read-only."}]}"#,
            r#"],"tools":[{"description":"Read a file.","name":"read_file","#,
            r#""parameters":{"properties":{"path":{"type":"string"}},"required":["path"],"type":"object"},"strict":false,"type":"function"}],"#,
            r#""tool_choice":"auto","parallel_tool_calls":true,"store":false,"include":["reasoning.encrypted_content"],"#,
            r#""stream":true,"max_output_tokens":8192,"reasoning":{"effort":"high","summary":"auto"},"#,
            r#""prompt_cache_key":"session-1"}"#,
        );
        assert_eq!(String::from_utf8(bytes).unwrap(), golden);
    }

    #[test]
    fn two_builds_of_one_history_are_the_same_bytes_whatever_form_the_tools_come_in() {
        let settings = settings(true);
        let tools = tools();
        let encoded: Vec<Box<RawValue>> = tools
            .iter()
            .map(|t| serde_json::value::to_raw_value(t).unwrap())
            .collect();
        let first = body_bytes(&settings, &history(), JsonList::Values(&tools));
        let second = body_bytes(&settings, &history(), JsonList::Values(&tools));
        let from_encoded = body_bytes(&settings, &history(), JsonList::Encoded(&encoded));
        assert_eq!(first, second);
        assert_eq!(first, from_encoded);
    }

    #[test]
    fn reasoning_from_another_wire_or_endpoint_is_dropped() {
        let item = reasoning_item("rs_x", &["x"]);
        let history = [
            json!({"role":"user","content":"q"}),
            json!({"role":"assistant","content":"a",
                   KEY: stored(WireApi::Chat, BASE, vec![item.clone()])}),
            json!({"role":"assistant","content":"b",
                   KEY: stored(WireApi::Responses, "https://other.example/v1", vec![item.clone()])}),
            json!({"role":"assistant","content":"c",
                   KEY: stored(WireApi::Responses, BASE, vec![item.clone()])}),
        ];
        let input = body(&settings(true), &history, &[])["input"].clone();
        let types: Vec<&str> = input
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["type"].as_str().unwrap())
            .collect();
        // No system message: no instructions, the user's text comes first.
        assert_eq!(
            types,
            ["message", "message", "message", "reasoning", "message"]
        );
        assert_eq!(input[3], item);
        assert_eq!(input[4]["content"][0]["text"], "c");
        assert!(
            body(&settings(true), &history, &[])
                .get("instructions")
                .is_none()
        );
    }

    #[test]
    fn without_thinking_temperature_is_sent_and_encrypted_reasoning_still_asked_for() {
        let sent = body(
            &settings(false),
            &[json!({"role":"user","content":"hi"})],
            &[],
        );
        assert_eq!(
            sent,
            json!({
                "model":"gpt-5",
                "input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}],
                "store":false,
                "include":["reasoning.encrypted_content"],
                "stream":true,
                "max_output_tokens":8192,
                "temperature":0.0
            })
        );
    }

    /// A model without reasoning refuses the `include`, a reasoning model
    /// `temperature`: each refusal drops its field once, and nothing else.
    #[test]
    fn a_refused_include_or_temperature_is_dropped_once_and_only_then() {
        let refusal = |message: &str| LlmError::Status {
            status: 400,
            message: message.into(),
            code: None,
            retry_after: None,
            target: std::sync::Arc::new(crate::Target::new(
                "u",
                WireApi::Responses,
                crate::Advice::default(),
            )),
            model: "m".into(),
        };
        let wire = Responses::default();
        let history = [json!({"role":"user","content":"hi"})];
        let tools: Vec<Value> = Vec::new();
        let settings = settings(false);
        let sent = |wire: &Responses| -> Value {
            let parts = RequestParts {
                settings: &settings,
                model: "gpt-5",
                conversation: crate::Conversation::from(&history[..]),
                tools: crate::JsonList::Values(&tools),
            };
            serde_json::from_slice(&wire.body(&parts)).unwrap()
        };
        assert!(!wire.adapt(&refusal("Invalid value for 'input'")));
        assert!(wire.adapt(&refusal(
            "Encrypted content is not supported with this model."
        )));
        assert!(sent(&wire).get("include").is_none());
        assert!(sent(&wire).get("temperature").is_some());
        assert!(
            !wire.adapt(&refusal(
                "Encrypted content is not supported with this model."
            )),
            "learned once: a second refusal is a real failure"
        );
        assert!(wire.adapt(&refusal(
            "Unsupported parameter: 'temperature' is not supported with this model."
        )));
        assert!(sent(&wire).get("temperature").is_none());
    }

    /// A recorded stream: a reasoning item in two summaries, text, and two
    /// parallel calls whose argument deltas interleave.
    fn recorded_events() -> Vec<Value> {
        let reasoning = reasoning_item("rs_1", &["**Planning** the reads", "Two files."]);
        let message = json!({"id":"msg_1","type":"message","status":"completed","role":"assistant",
            "content":[{"type":"output_text","annotations":[],"text":"Reading both."}]});
        let call = |id: &str, call_id: &str, index: u64, arguments: &str| {
            json!({"type":"response.output_item.done","output_index":index,"item":{
                "id":id,"type":"function_call","status":"completed","arguments":arguments,
                "call_id":call_id,"name":"read_file"}})
        };
        let added = |id: &str, call_id: &str, index: u64| {
            json!({"type":"response.output_item.added","output_index":index,"item":{
                "id":id,"type":"function_call","status":"in_progress","arguments":"",
                "call_id":call_id,"name":"read_file"}})
        };
        let args = |id: &str, index: u64, delta: &str| json!({"type":"response.function_call_arguments.delta","item_id":id,"output_index":index,"delta":delta});
        let summary = |index: u64, delta: &str| {
            json!({"type":"response.reasoning_summary_text.delta","item_id":"rs_1","output_index":0,
                   "summary_index":index,"delta":delta})
        };
        let part_added = |index: u64| {
            json!({"type":"response.reasoning_summary_part.added","item_id":"rs_1","output_index":0,
                   "summary_index":index,"part":{"type":"summary_text","text":""}})
        };
        let text = |delta: &str| {
            json!({"type":"response.output_text.delta","item_id":"msg_1","output_index":1,
                   "content_index":0,"delta":delta})
        };
        let a = r#"{"path":"a.rs"}"#;
        let b = r#"{"path":"b.rs"}"#;
        vec![
            json!({"type":"response.created","sequence_number":0,"response":{"id":"resp_1","status":"in_progress","output":[],"usage":null}}),
            json!({"type":"response.in_progress","sequence_number":1,"response":{"id":"resp_1","status":"in_progress"}}),
            json!({"type":"response.output_item.added","output_index":0,"item":{"id":"rs_1","type":"reasoning","summary":[]}}),
            part_added(0),
            summary(0, "**Planning**"),
            summary(0, " the reads"),
            json!({"type":"response.reasoning_summary_text.done","item_id":"rs_1","output_index":0,"summary_index":0,"text":"**Planning** the reads"}),
            part_added(1),
            summary(1, "Two files."),
            json!({"type":"response.output_item.done","output_index":0,"item":reasoning}),
            json!({"type":"response.output_item.added","output_index":1,"item":{"id":"msg_1","type":"message","status":"in_progress","role":"assistant","content":[]}}),
            json!({"type":"response.content_part.added","item_id":"msg_1","output_index":1,"content_index":0,"part":{"type":"output_text","annotations":[],"text":""}}),
            text("Reading "),
            text("both."),
            json!({"type":"response.output_text.done","item_id":"msg_1","output_index":1,"content_index":0,"text":"Reading both."}),
            json!({"type":"response.output_item.done","output_index":1,"item":message}),
            added("fc_1", "call_A", 2),
            args("fc_1", 2, r#"{"path":"#),
            added("fc_2", "call_B", 3),
            args("fc_2", 3, r#"{"pa"#),
            args("fc_1", 2, r#""a.rs"}"#),
            args("fc_2", 3, r#"th":"b.rs"}"#),
            json!({"type":"response.function_call_arguments.done","item_id":"fc_1","output_index":2,"arguments":a}),
            call("fc_1", "call_A", 2, a),
            json!({"type":"response.function_call_arguments.done","item_id":"fc_2","output_index":3,"arguments":b}),
            call("fc_2", "call_B", 3, b),
            json!({"type":"response.completed","response":{"id":"resp_1","status":"completed",
                "output":[reasoning, message, call("fc_1","call_A",2,a)["item"], call("fc_2","call_B",3,b)["item"]],
                "usage":{"input_tokens":1200,"input_tokens_details":{"cached_tokens":1024},
                         "output_tokens":300,"output_tokens_details":{"reasoning_tokens":192},"total_tokens":1500}}}),
        ]
    }

    fn expected_turn() -> AssistantTurn {
        let call = |id: &str, path: &str| ToolCall {
            id: id.into(),
            name: "read_file".into(),
            arguments: format!(r#"{{"path":"{path}"}}"#),
        };
        AssistantTurn {
            content: "Reading both.".into(),
            tool_calls: vec![call("call_A", "a.rs"), call("call_B", "b.rs")],
            usage: Some(Usage {
                prompt_tokens: 1200,
                completion_tokens: 300,
                cached_tokens: 1024,
                cache_write_tokens: 0,
                reasoning_tokens: 192,
            }),
            model: "gpt-5".into(),
            finish_reason: Some("tool_calls".into()),
            reasoning: Some(Reasoning {
                wire: WireApi::Responses,
                endpoint: BASE.into(),
                text: "**Planning** the reads\n\nTwo files.".into(),
                items: vec![reasoning_item(
                    "rs_1",
                    &["**Planning** the reads", "Two files."],
                )],
            }),
        }
    }

    /// Applies `events` to a fresh reader; returns it and what went to the screen.
    fn read(events: &[Value]) -> (Box<dyn StreamReader>, Vec<Delta<'_>>) {
        let mut reader = Responses::default().stream_reader(&settings(true));
        let mut shown = Vec::new();
        for event in events {
            assert!(!reader.finished(), "read on after the end: {event}");
            shown.extend(reader.apply(event).unwrap());
        }
        (reader, shown)
    }

    #[test]
    fn a_recorded_stream_is_read_into_the_exact_turn() {
        let events = recorded_events();
        let (reader, shown) = read(&events);
        assert_eq!(
            shown,
            [
                Delta::Reasoning("**Planning**"),
                Delta::Reasoning(" the reads"),
                Delta::Reasoning("\n\n"),
                Delta::Reasoning("Two files."),
                Delta::Text("Reading "),
                Delta::Text("both."),
            ]
        );
        assert!(reader.finished() && reader.whole_at_eof());
        assert_eq!(reader.finish("gpt-5"), expected_turn());
    }

    #[test]
    fn the_end_is_only_the_terminal_event() {
        let events = recorded_events();
        let (reader, _) = read(&events[..events.len() - 1]);
        assert!(!reader.finished());
        assert!(!reader.whole_at_eof());
    }

    #[test]
    fn argument_deltas_alone_make_the_calls_by_item_id_or_output_index() {
        let events = [
            json!({"type":"response.output_item.added","output_index":0,"item":{"id":"fc_1","type":"function_call","call_id":"call_A","name":"x","arguments":""}}),
            json!({"type":"response.output_item.added","output_index":1,"item":{"id":"fc_2","type":"function_call","call_id":"call_B","name":"y","arguments":""}}),
            json!({"type":"response.function_call_arguments.delta","item_id":"fc_2","output_index":1,"delta":"{\"b\":"}),
            json!({"type":"response.function_call_arguments.delta","item_id":"fc_1","output_index":0,"delta":"{\"a\":1}"}),
            // A server that names the item by its place only.
            json!({"type":"response.function_call_arguments.delta","output_index":1,"delta":"2}"}),
            json!({"type":"response.completed","response":{"status":"completed","output":[]}}),
        ];
        let (reader, _) = read(&events);
        let turn = reader.finish("m");
        let calls: Vec<_> = turn
            .tool_calls
            .iter()
            .map(|c| (c.id.as_str(), c.name.as_str(), c.arguments.as_str()))
            .collect();
        assert_eq!(
            calls,
            [("call_A", "x", r#"{"a":1}"#), ("call_B", "y", r#"{"b":2}"#)]
        );
        assert_eq!(turn.finish_reason.as_deref(), Some("tool_calls"));
        assert_eq!(turn.usage, None);
        assert_eq!(turn.reasoning, None);
    }

    #[test]
    fn the_reasoning_of_a_turn_goes_back_verbatim_to_its_endpoint_only() {
        let events = recorded_events();
        let turn = read(&events).0.finish("gpt-5");
        let reasoning = turn.reasoning.clone().unwrap();
        let message = json!({"role":"assistant","content":turn.content,
            "tool_calls":[{"id":"call_A","type":"function","function":{"name":"read_file","arguments":"{}"}}],
            KEY: reasoning.to_value()});
        let history = [json!({"role":"user","content":"q"}), message];
        let here = body(&settings(true), &history, &[]);
        assert_eq!(here["input"][1], reasoning.items[0]);
        assert_eq!(here["input"][2]["type"], "message");
        assert_eq!(here["input"][3]["call_id"], "call_A");
        let mut elsewhere = settings(true);
        elsewhere.base_url = "http://localhost:8080/v1".into();
        let there = body(&elsewhere, &history, &[]);
        assert_eq!(there["input"][1]["type"], "message");
        assert_eq!(there["input"].as_array().unwrap().len(), 3);
    }

    #[test]
    fn a_reasoning_item_without_encrypted_content_keeps_its_text_only() {
        let events = [
            json!({"type":"response.output_item.done","output_index":0,"item":{"id":"rs_1","type":"reasoning","summary":[{"type":"summary_text","text":"thinking"}]}}),
            json!({"type":"response.completed","response":{"status":"completed","output":[]}}),
        ];
        let (reader, shown) = read(&events);
        assert_eq!(shown, [Delta::Reasoning("thinking")]);
        let reasoning = reader.finish("m").reasoning.unwrap();
        assert_eq!(reasoning.text, "thinking");
        assert!(reasoning.items.is_empty());
    }

    #[test]
    fn running_out_of_output_tokens_is_length_and_cuts_off_the_last_call() {
        let events = [
            json!({"type":"response.output_item.added","output_index":0,"item":{"id":"fc_1","type":"function_call","call_id":"call_A","name":"write_file","arguments":""}}),
            json!({"type":"response.function_call_arguments.delta","item_id":"fc_1","output_index":0,"delta":"{\"content\":\"lo"}),
            json!({"type":"response.incomplete","response":{"status":"incomplete",
                "incomplete_details":{"reason":"max_output_tokens"},"output":[],
                "usage":{"input_tokens":10,"output_tokens":4096}}}),
        ];
        let (reader, _) = read(&events);
        assert!(reader.finished() && reader.whole_at_eof());
        let turn = reader.finish("m");
        assert_eq!(turn.finish_reason.as_deref(), Some("length"));
        assert!(turn.is_cut_off(0));
        assert_eq!(turn.tool_calls[0].arguments, "{\"content\":\"lo");
        assert_eq!(turn.usage.unwrap().completion_tokens, 4096);
    }

    fn error_of(event: Value) -> LlmError {
        let mut reader = Responses::default().stream_reader(&settings(false));
        reader.apply(&event).unwrap_err()
    }

    #[test]
    fn failed_and_error_events_fail_the_attempt_and_are_classified() {
        let failed = |code: &str, message: &str| {
            error_of(
                json!({"type":"response.failed","response":{"status":"failed",
                "error":{"code":code,"message":message}}}),
            )
        };
        let server = failed(
            "server_error",
            "The server had an error while processing your request.",
        );
        assert_eq!(
            server,
            LlmError::Stream {
                code: Some("server_error".into()),
                kind: None,
                message: "The server had an error while processing your request.".into()
            }
        );
        assert!(server.is_retryable());
        assert!(failed("rate_limit_exceeded", "Rate limit reached").is_retryable());
        let too_long = failed(
            "context_length_exceeded",
            "Your input exceeds the context window of this model.",
        );
        assert!(too_long.is_context_length() && !too_long.is_retryable());
        let error = error_of(json!({"type":"error","code":"context_length_exceeded",
            "message":"Your input exceeds the context window of this model.","param":"input","sequence_number":2}));
        assert!(error.is_context_length() && !error.is_retryable());
        let error =
            error_of(json!({"type":"error","code":"server_error","message":"","param":null}));
        assert!(error.is_retryable());
        let silent =
            error_of(json!({"type":"response.failed","response":{"status":"failed","error":null}}));
        assert!(!silent.is_retryable());
        assert!(silent.to_string().contains("failed without saying why"));
    }

    #[test]
    fn arguments_past_the_limit_end_the_reading_and_the_call_is_refused() {
        let mut reader = Responses::default().stream_reader(&settings(false));
        let added = json!({"type":"response.output_item.added","output_index":0,"item":{"id":"fc_1","type":"function_call","call_id":"call_A","name":"write_file","arguments":""}});
        reader.apply(&added).unwrap();
        let piece = json!({"type":"response.function_call_arguments.delta","item_id":"fc_1","delta":"é".repeat(40_000)});
        for _ in 0..13 {
            reader.apply(&piece).unwrap();
            assert!(!reader.arguments_over_limit());
        }
        for _ in 0..20 {
            reader.apply(&piece).unwrap();
        }
        assert!(reader.arguments_over_limit());
        // The final text of a `done` event is capped the same way.
        let done = json!({"type":"response.function_call_arguments.done","item_id":"fc_1","arguments":"x".repeat(3 << 20)});
        reader.apply(&done).unwrap();
        assert!(reader.size() <= MAX_ARGUMENTS + 4);
        let call = &reader.finish("m").tool_calls[0];
        assert_eq!(call.arguments.len(), MAX_ARGUMENTS + 1);
        assert!(
            call.parse_arguments()
                .unwrap_err()
                .starts_with("the arguments are longer than")
        );
    }

    #[test]
    fn a_whole_response_is_read_like_its_stream() {
        let events = recorded_events();
        let response = events.last().unwrap()["response"].clone();
        let turn = Responses::default()
            .whole(&settings(true), &response, "gpt-5")
            .unwrap();
        assert_eq!(turn, expected_turn());
        let incomplete = json!({"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},
            "output":[{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"output_text","text":"Par"}]}]});
        let turn = Responses::default()
            .whole(&settings(true), &incomplete, "m")
            .unwrap();
        assert_eq!(
            (turn.content.as_str(), turn.finish_reason.as_deref()),
            ("Par", Some("length"))
        );
        let refused = json!({"status":"completed","output":[{"type":"message","role":"assistant",
            "content":[{"type":"refusal","refusal":"I can't help with that."}]}]});
        let turn = Responses::default()
            .whole(&settings(true), &refused, "m")
            .unwrap();
        assert_eq!(turn.content, "I can't help with that.");
        assert_eq!(turn.finish_reason.as_deref(), Some("refusal"));
        let failed =
            json!({"status":"failed","error":{"code":"server_error","message":"boom"},"output":[]});
        assert!(
            Responses::default()
                .whole(&settings(true), &failed, "m")
                .unwrap_err()
                .contains("boom")
        );
        assert!(
            Responses::default()
                .whole(&settings(true), &json!({"object":"error"}), "m")
                .unwrap_err()
                .contains("no output")
        );
    }
}
