//! Anthropic Messages: `POST {base_url}/messages` (Anthropic's base URL is
//! `https://api.anthropic.com/v1`).
//!
//! The request body is built from the transcript at the edge, on every
//! request, and is the same bytes for the same transcript: Anthropic's
//! prompt cache matches a request's prefix exactly, so nothing in it may
//! depend on a clock, a random seed or a map's iteration order. What the
//! conversion does, and why:
//!
//! - the first `system` message is the top-level `system`; a later one
//!   (a mode change, a reminder) becomes a user text block wrapped in
//!   `<system-note>`, since Messages has no system role inside `messages`;
//! - an assistant message is its replayed thinking blocks (only where this
//!   wire at this endpoint wrote them: a signature is valid nowhere else),
//!   its text, then one `tool_use` per call; a tool result is a
//!   `tool_result` block in a user message, all results of one turn in one
//!   message and before any text (the server refuses text before them);
//! - blocks Anthropic refuses are not sent: text that is empty or only
//!   whitespace, thinking in a turn that has nothing else; a message left
//!   with no block is dropped, and consecutive messages of one role are
//!   merged, since the roles must alternate;
//! - tool-call ids are made to match `^[a-zA-Z0-9_-]+$` ([`wire_id`]), the
//!   same way for a `tool_use` and its `tool_result`;
//! - up to four `cache_control` breakpoints: the last tool, the system
//!   block, the latest message, and the message that was latest one step
//!   earlier, so that this request reads exactly what the previous one
//!   wrote and writes what the next one will read.
//!
//! The stream's events are read by [`MessageReader`]; a whole
//! (non-streamed) message is read by the same code, one block at a time.

use std::borrow::Cow;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde::Serialize;
use serde_json::{Value, json};

use super::{Delta, RequestParts, StreamReader, Wire, WireApi, tool_values};
use crate::ModelSettings;
use crate::error::LlmError;
use crate::reasoning::{self, Reasoning};
use crate::turn::{AssistantTurn, MAX_ARGUMENTS, ToolCall, Usage, append_capped, parse_arguments};

/// The `anthropic-version` header sent unless the provider's
/// `http_headers` name another.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// The smallest thinking budget Anthropic accepts.
pub const MIN_THINKING_BUDGET: u32 = 1024;

/// How a later system message is shown to the model: as a note from the
/// system inside a user message, not as words of the user.
const SYSTEM_NOTE: (&str, &str) = ("<system-note>\n", "\n</system-note>");

/// The Anthropic Messages wire.
#[derive(Debug)]
pub struct Messages;

impl Wire for Messages {
    fn body(&self, parts: &RequestParts<'_>) -> Vec<u8> {
        let endpoint = reasoning::endpoint_of(&parts.settings.base_url);
        let (system, messages) = edge_messages(parts.conversation.messages, endpoint);
        let tools = edge_tools(&tool_values(parts.tools));
        let options = &parts.settings.body;
        let budget = options
            .thinking
            .then(|| thinking_budget(options.max_tokens))
            .flatten();
        let body = Body {
            model: parts.model,
            max_tokens: options.max_tokens,
            stream: options.stream,
            tool_choice: (!tools.is_empty()).then(|| json!({"type": "auto"})),
            system: system
                .map(|text| json!([{"type": "text", "text": text, "cache_control": ephemeral()}])),
            messages,
            tools,
            // Anthropic refuses a temperature with thinking on.
            temperature: budget.is_none().then_some(options.temperature),
            thinking: budget.map(|b| json!({"type": "enabled", "budget_tokens": b})),
        };
        // Serialising values and plain fields cannot fail.
        serde_json::to_vec(&body).unwrap_or_default()
    }

    fn auth_headers(&self, api_key: Option<&str>, headers: &mut HeaderMap) {
        if let Some(mut value) = api_key.and_then(|key| HeaderValue::try_from(key).ok()) {
            value.set_sensitive(true);
            headers.insert(HeaderName::from_static("x-api-key"), value);
        }
        headers.insert(
            HeaderName::from_static("anthropic-version"),
            HeaderValue::from_static(ANTHROPIC_VERSION),
        );
    }

    fn stream_reader(&self, settings: &ModelSettings) -> Box<dyn StreamReader> {
        Box::new(MessageReader::at(&settings.base_url))
    }

    fn whole(
        &self,
        settings: &ModelSettings,
        response: &Value,
        model: &str,
    ) -> Result<AssistantTurn, String> {
        read_message(response, &settings.base_url).map(|reader| reader.finish(model))
    }
}

/// The request body; fields in the order Anthropic documents them.
#[derive(Serialize)]
struct Body<'a> {
    model: &'a str,
    max_tokens: u32,
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    system: Option<Value>,
    messages: Vec<Value>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking: Option<Value>,
}

/// The thinking budget for `max_tokens`: half of it, so the answer keeps
/// the other half (the budget counts towards `max_tokens` and must stay
/// below it). Below 2048 tokens half would be under Anthropic's minimum of
/// 1024 and the answer would be squeezed out, so thinking is not asked for
/// at all (`None`) and the request is sent as without thinking.
fn thinking_budget(max_tokens: u32) -> Option<u32> {
    let budget = max_tokens / 2;
    (budget >= MIN_THINKING_BUDGET).then_some(budget)
}

fn ephemeral() -> Value {
    json!({"type": "ephemeral"})
}

/// The chat tool declarations as Anthropic's, the last one a cache
/// breakpoint (the tools are the first part of the prompt).
fn edge_tools(tools: &[Value]) -> Vec<Value> {
    let mut converted: Vec<Value> = tools
        .iter()
        .map(|tool| {
            let function = tool.get("function").unwrap_or(tool);
            let mut out = serde_json::Map::new();
            out.insert(
                "name".into(),
                function.get("name").cloned().unwrap_or_default(),
            );
            if let Some(description) = function.get("description").filter(|d| d.is_string()) {
                out.insert("description".into(), description.clone());
            }
            let schema = function
                .get("parameters")
                .filter(|p| p.is_object())
                .cloned()
                .unwrap_or_else(|| json!({"type": "object", "properties": {}}));
            out.insert("input_schema".into(), schema);
            Value::Object(out)
        })
        .collect();
    if let Some(Value::Object(last)) = converted.last_mut() {
        last.insert("cache_control".into(), ephemeral());
    }
    converted
}

/// One message of the request while it is being built.
struct Turn {
    role: &'static str,
    blocks: Vec<Value>,
}

/// The transcript as the system text and the `messages` array, with the
/// message breakpoints set.
fn edge_messages(transcript: &[Value], endpoint: &str) -> (Option<String>, Vec<Value>) {
    let mut system: Option<String> = None;
    let mut seen_system = false;
    let mut turns: Vec<Turn> = Vec::new();
    for message in transcript {
        let (role, blocks) = match message.get("role").and_then(Value::as_str) {
            Some("system") if !seen_system => {
                seen_system = true;
                let text = text_of(message.get("content"));
                system = (!text.trim().is_empty()).then_some(text);
                continue;
            }
            Some("system") => {
                let text = text_of(message.get("content"));
                let note = format!("{}{text}{}", SYSTEM_NOTE.0, SYSTEM_NOTE.1);
                (
                    "user",
                    text_block(&text)
                        .map(|_| text_value(note))
                        .into_iter()
                        .collect(),
                )
            }
            Some("assistant") => ("assistant", assistant_blocks(message, endpoint)),
            Some("tool") => ("user", vec![tool_result(message)]),
            // `user`, and any role a future transcript might add, is
            // the person's text.
            _ => (
                "user",
                text_block(&text_of(message.get("content")))
                    .into_iter()
                    .collect(),
            ),
        };
        if blocks.is_empty() {
            continue;
        }
        match turns.last_mut() {
            Some(last) if last.role == role => last.blocks.extend(blocks),
            _ => turns.push(Turn { role, blocks }),
        }
    }
    for turn in &mut turns {
        // A tool result must come before any text of its message; a
        // system note or the person's words written between two results
        // would otherwise split them. The sort is stable.
        turn.blocks
            .sort_by_key(|block| block["type"] != "tool_result");
    }
    set_message_breakpoints(&mut turns);
    let messages = turns
        .into_iter()
        .map(|turn| json!({"role": turn.role, "content": turn.blocks}))
        .collect();
    (system, messages)
}

/// Breakpoints on the latest message and on the user message before the
/// last assistant message: the latter was the latest message of the
/// previous request, whose breakpoint wrote the cache this one reads.
fn set_message_breakpoints(turns: &mut [Turn]) {
    let Some(latest) = turns.len().checked_sub(1) else {
        return;
    };
    let earlier = turns
        .iter()
        .rposition(|t| t.role == "assistant")
        .and_then(|assistant| turns[..assistant].iter().rposition(|t| t.role == "user"));
    for index in std::iter::once(latest).chain(earlier) {
        // Never on a thinking block (Anthropic refuses it there); the
        // last block that may carry one.
        let block = turns[index]
            .blocks
            .iter_mut()
            .rev()
            .find(|b| !matches!(b["type"].as_str(), Some("thinking" | "redacted_thinking")));
        if let Some(Value::Object(block)) = block {
            block.insert("cache_control".into(), ephemeral());
        }
    }
}

/// A message's text: a string, or the `text` of its content parts.
fn text_of(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|part| part.get("text").and_then(Value::as_str))
            .collect(),
        _ => String::new(),
    }
}

/// A text block, unless the text is empty or blank (Anthropic refuses
/// text blocks without a visible character).
fn text_block(text: &str) -> Option<Value> {
    (!text.trim().is_empty()).then(|| text_value(text.to_owned()))
}

fn text_value(text: String) -> Value {
    json!({"type": "text", "text": text})
}

/// An assistant message's blocks: replayed thinking, text, tool calls.
fn assistant_blocks(message: &Value, endpoint: &str) -> Vec<Value> {
    let mut rest: Vec<Value> = text_block(&text_of(message.get("content")))
        .into_iter()
        .collect();
    let calls = message
        .get("tool_calls")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    for call in calls {
        let function = call.get("function").unwrap_or(&Value::Null);
        let input = match function.get("arguments") {
            Some(Value::String(text)) => parse_arguments(text).unwrap_or_default(),
            Some(Value::Object(map)) => map.clone(),
            // A call whose arguments were refused (invalid, too long) is
            // kept with none: the model read an `ERROR:` result for it.
            _ => serde_json::Map::new(),
        };
        rest.push(json!({
            "type": "tool_use",
            "id": wire_id(call.get("id").and_then(Value::as_str).unwrap_or_default()),
            "name": function.get("name").and_then(Value::as_str).unwrap_or_default(),
            "input": input,
        }));
    }
    if rest.is_empty() {
        // Thinking alone is no message: its turn said and did nothing, and
        // thinking must be followed by what it led to.
        return rest;
    }
    let mut blocks: Vec<Value> = reasoning::replayable(message, WireApi::Messages, endpoint)
        .map(reasoning::items_of)
        .unwrap_or_default()
        .to_vec();
    blocks.extend(rest);
    blocks
}

/// A tool message as a `tool_result` block; a result starting with
/// `ERROR: ` is marked a failure.
fn tool_result(message: &Value) -> Value {
    let id = message
        .get("tool_call_id")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let content = text_of(message.get("content"));
    let mut block = json!({"type": "tool_result", "tool_use_id": wire_id(id)});
    // An empty result is sent without content, which Anthropic accepts,
    // rather than as an empty text it may refuse.
    if !content.trim().is_empty() {
        block["content"] = Value::String(content.clone());
    }
    if content.starts_with("ERROR: ") {
        block["is_error"] = Value::Bool(true);
    }
    block
}

/// `id` as Anthropic accepts a tool-call id (`^[a-zA-Z0-9_-]+$`): a valid
/// id unchanged; any other with each other character replaced by `_` and
/// a hash of the original appended, so that two ids differing only in the
/// replaced characters stay apart. Ids from other servers (`call.1`,
/// `functions.read:0`) or empty ones are what this is for.
pub fn wire_id(id: &str) -> Cow<'_, str> {
    let allowed = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    if !id.is_empty() && id.chars().all(allowed) {
        return Cow::Borrowed(id);
    }
    let mut mapped: String = id
        .chars()
        .map(|c| if allowed(c) { c } else { '_' })
        .collect();
    // FNV-1a: the same on every machine and every run, which the prompt
    // cache needs (std's hashers promise neither).
    let hash = id.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3)
    });
    mapped.push_str(&format!("_{:012x}", hash & 0xffff_ffff_ffff));
    Cow::Owned(mapped)
}

/// One content block of the answer, as far as it has arrived.
#[derive(Debug, Default)]
enum Block {
    /// A slot no event has filled (an index skipped), or a block type
    /// this reader does not use.
    #[default]
    Other,
    Text(String),
    ToolUse {
        id: String,
        name: String,
        /// The input's JSON text, capped at [`MAX_ARGUMENTS`].
        input: String,
    },
    Thinking {
        thinking: String,
        signature: String,
    },
    /// Kept verbatim: it is replayed as it came.
    Redacted(Value),
}

/// The token counts as Anthropic reports them (input apart from the
/// cached and cache-written input).
#[derive(Debug, Default, Clone, Copy)]
struct RawUsage {
    input: u64,
    cache_read: u64,
    cache_creation: u64,
    output: u64,
}

/// Reads one Messages response, streamed (event by event) or whole
/// (block by block), into an [`AssistantTurn`].
#[derive(Debug, Default)]
pub struct MessageReader {
    blocks: Vec<Block>,
    usage: Option<RawUsage>,
    stop_reason: Option<String>,
    /// `message_stop` arrived.
    stopped: bool,
    /// The endpoint the turn comes from (its thinking is replayed only there).
    endpoint: String,
}

impl MessageReader {
    /// A reader for a turn from `base_url`.
    pub fn at(base_url: &str) -> MessageReader {
        MessageReader {
            endpoint: reasoning::endpoint_of(base_url).to_owned(),
            ..MessageReader::default()
        }
    }

    /// The block at `index`, slots grown as needed (an absurd index is
    /// clamped: it must not allocate gigabytes).
    fn slot(&mut self, index: Option<u64>) -> &mut Block {
        let index = match index {
            Some(index) => usize::try_from(index.min(1024)).unwrap_or(1024),
            None => self.blocks.len().saturating_sub(1),
        };
        if self.blocks.len() <= index {
            self.blocks.resize_with(index + 1, Block::default);
        }
        &mut self.blocks[index]
    }

    /// A block starts (`content_block_start`, or one block of a whole
    /// message, which holds its full content); returns the text it
    /// already holds.
    fn start_block<'f>(&mut self, index: Option<u64>, block: &'f Value) -> Option<Delta<'f>> {
        let text = |key: &str| block.get(key).and_then(Value::as_str).unwrap_or_default();
        let (new, delta) = match text("type") {
            "text" => (
                Block::Text(text("text").to_owned()),
                Some(Delta::Text(text("text"))),
            ),
            "thinking" => (
                Block::Thinking {
                    thinking: text("thinking").to_owned(),
                    signature: text("signature").to_owned(),
                },
                Some(Delta::Reasoning(text("thinking"))),
            ),
            "redacted_thinking" => (Block::Redacted(block.clone()), None),
            "tool_use" => {
                let mut input = String::new();
                // A stream starts with `input: {}` and sends the text in
                // deltas; a whole message holds the input here.
                if let Some(object) = block
                    .get("input")
                    .and_then(Value::as_object)
                    .filter(|o| !o.is_empty())
                {
                    append_capped(&mut input, &Value::Object(object.clone()).to_string());
                }
                let block = Block::ToolUse {
                    id: text("id").to_owned(),
                    name: text("name").to_owned(),
                    input,
                };
                (block, None)
            }
            _ => (Block::Other, None),
        };
        *self.slot(index) = new;
        delta.filter(|d| !matches!(d, Delta::Text("") | Delta::Reasoning("")))
    }

    /// A `content_block_delta`; returns the text it added.
    fn delta<'f>(&mut self, index: Option<u64>, delta: &'f Value) -> Option<Delta<'f>> {
        let text = |key: &str| delta.get(key).and_then(Value::as_str).unwrap_or_default();
        let kind = text("type");
        let slot = self.slot(index);
        if matches!(slot, Block::Other) {
            // A delta without its start: the block is what the delta says.
            *slot = match kind {
                "text_delta" => Block::Text(String::new()),
                "thinking_delta" | "signature_delta" => Block::Thinking {
                    thinking: String::new(),
                    signature: String::new(),
                },
                "input_json_delta" => Block::ToolUse {
                    id: String::new(),
                    name: String::new(),
                    input: String::new(),
                },
                _ => Block::Other,
            };
        }
        match (kind, slot) {
            ("text_delta", Block::Text(content)) => {
                let piece = text("text");
                content.push_str(piece);
                (!piece.is_empty()).then_some(Delta::Text(piece))
            }
            ("thinking_delta", Block::Thinking { thinking, .. }) => {
                let piece = text("thinking");
                thinking.push_str(piece);
                (!piece.is_empty()).then_some(Delta::Reasoning(piece))
            }
            ("signature_delta", Block::Thinking { signature, .. }) => {
                signature.push_str(text("signature"));
                None
            }
            ("input_json_delta", Block::ToolUse { input, .. }) => {
                append_capped(input, text("partial_json"));
                None
            }
            // `citations_delta` and whatever comes next: nothing to keep.
            _ => None,
        }
    }

    /// Takes the counts present in `usage` (`message_start` has them all;
    /// `message_delta` has the cumulative output and may repeat the rest).
    fn read_usage(&mut self, usage: Option<&Value>) {
        let Some(usage) = usage.filter(|u| u.is_object()) else {
            return;
        };
        let raw = self.usage.get_or_insert_with(RawUsage::default);
        let fields = [
            ("input_tokens", &mut raw.input),
            ("cache_read_input_tokens", &mut raw.cache_read),
            ("cache_creation_input_tokens", &mut raw.cache_creation),
            ("output_tokens", &mut raw.output),
        ];
        for (key, field) in fields {
            if let Some(count) = usage.get(key).and_then(Value::as_u64) {
                *field = count;
            }
        }
    }

    fn read_stop_reason(&mut self, holder: &Value) {
        if let Some(reason) = holder
            .get("stop_reason")
            .and_then(Value::as_str)
            .filter(|r| !r.is_empty())
        {
            self.stop_reason = Some(reason.to_owned());
        }
    }

    /// The finished turn, answered by `model`.
    pub fn finish(self, model: &str) -> AssistantTurn {
        let mut content = String::new();
        let mut tool_calls = Vec::new();
        let mut thoughts: Vec<String> = Vec::new();
        let mut items = Vec::new();
        for block in self.blocks {
            match block {
                Block::Other => {}
                Block::Text(text) => content.push_str(&text),
                Block::ToolUse { id, name, input } => tool_calls.push(ToolCall {
                    id,
                    name,
                    // No input text at all is a call without arguments.
                    arguments: if input.trim().is_empty() {
                        "{}".to_owned()
                    } else {
                        input
                    },
                }),
                Block::Thinking {
                    thinking,
                    signature,
                } => {
                    items.push(json!({
                        "type": "thinking",
                        "thinking": thinking,
                        "signature": signature,
                    }));
                    if !thinking.is_empty() {
                        thoughts.push(thinking);
                    }
                }
                Block::Redacted(block) => items.push(block),
            }
        }
        let reasoning = Reasoning {
            wire: WireApi::Messages,
            endpoint: self.endpoint,
            text: thoughts.join("\n\n"),
            items,
        };
        AssistantTurn {
            content,
            tool_calls,
            usage: self.usage.map(|raw| Usage {
                prompt_tokens: raw.input + raw.cache_read + raw.cache_creation,
                completion_tokens: raw.output,
                cached_tokens: raw.cache_read,
                cache_write_tokens: raw.cache_creation,
                reasoning_tokens: 0,
            }),
            model: model.to_owned(),
            finish_reason: self.stop_reason.as_deref().map(finish_reason),
            reasoning: (!reasoning.is_empty()).then_some(reasoning),
        }
    }
}

/// Anthropic's stop reason in chat-completions words.
fn finish_reason(stop_reason: &str) -> String {
    match stop_reason {
        "end_turn" | "stop_sequence" => "stop",
        "tool_use" => "tool_calls",
        "max_tokens" => "length",
        other => other, // `pause_turn`, `refusal`, and any new one as it is.
    }
    .to_owned()
}

impl StreamReader for MessageReader {
    fn apply<'f>(&mut self, event: &'f Value) -> Result<Option<Delta<'f>>, LlmError> {
        let index = event.get("index").and_then(Value::as_u64);
        Ok(match event.get("type").and_then(Value::as_str) {
            Some("message_start") => {
                let message = event.get("message").unwrap_or(&Value::Null);
                self.read_usage(message.get("usage"));
                self.read_stop_reason(message);
                None
            }
            Some("content_block_start") => match event.get("content_block") {
                Some(block) => self.start_block(index, block),
                None => None,
            },
            Some("content_block_delta") => match event.get("delta") {
                Some(delta) => self.delta(index, delta),
                None => None,
            },
            Some("message_delta") => {
                if let Some(delta) = event.get("delta") {
                    self.read_stop_reason(delta);
                }
                self.read_usage(event.get("usage"));
                None
            }
            Some("message_stop") => {
                self.stopped = true;
                None
            }
            // The SSE decoder turns an error event into an error frame
            // already; one that reaches here is the same failure.
            Some("error") => return Err(LlmError::from_frame(event)),
            // `ping`, `content_block_stop`, and events added later.
            _ => None,
        })
    }

    fn finished(&self) -> bool {
        self.stopped
    }

    fn whole_at_eof(&self) -> bool {
        // A server that closes the connection without `message_stop` still
        // sent a whole turn when `message_delta` said why it stopped.
        self.stopped || self.stop_reason.is_some()
    }

    fn arguments_over_limit(&self) -> bool {
        self.blocks
            .iter()
            .any(|b| matches!(b, Block::ToolUse { input, .. } if input.len() > MAX_ARGUMENTS))
    }

    fn size(&self) -> usize {
        self.blocks
            .iter()
            .map(|block| match block {
                Block::Other => 0,
                Block::Text(text) => text.len(),
                Block::ToolUse { input, .. } => input.len(),
                Block::Thinking {
                    thinking,
                    signature,
                } => thinking.len() + signature.len(),
                Block::Redacted(value) => value
                    .get("data")
                    .and_then(Value::as_str)
                    .map_or(0, str::len),
            })
            .sum()
    }

    fn finish(self: Box<Self>, model: &str) -> AssistantTurn {
        MessageReader::finish(*self, model)
    }
}

/// Reads a whole message (`content` blocks, `stop_reason`, `usage`) with
/// the stream's code: each block is a block start that holds everything.
fn read_message(response: &Value, base_url: &str) -> Result<MessageReader, String> {
    let Some(blocks) = response.get("content").and_then(Value::as_array) else {
        let mut body = response.to_string();
        body.truncate(mcp_tools::clamp::floor_char_boundary(&body, 300));
        return Err(format!("no content in the message: {body}"));
    };
    let mut reader = MessageReader::at(base_url);
    for (index, block) in (0u64..).zip(blocks) {
        reader.start_block(Some(index), block);
    }
    reader.read_usage(response.get("usage"));
    reader.read_stop_reason(response);
    reader.stopped = true;
    Ok(reader)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::JsonList;
    use crate::reasoning::KEY;
    use crate::sse::{Frame, SseDecoder};

    const HERE: &str = "https://api.anthropic.com/v1";

    fn settings() -> ModelSettings {
        let mut settings = ModelSettings::new(HERE, "claude-x");
        settings.wire = WireApi::Messages;
        settings
    }

    fn bytes(settings: &ModelSettings, messages: &[Value], tools: &[Value]) -> Vec<u8> {
        Messages.body(&RequestParts {
            settings,
            model: "claude-x",
            conversation: messages.into(),
            tools: JsonList::Values(tools),
        })
    }

    fn body(settings: &ModelSettings, messages: &[Value], tools: &[Value]) -> Value {
        serde_json::from_slice(&bytes(settings, messages, tools)).unwrap()
    }

    fn thinking_item(text: &str, signature: &str) -> Value {
        json!({"type":"thinking","thinking":text,"signature":signature})
    }

    fn stored(wire: WireApi, endpoint: &str, items: Vec<Value>) -> Value {
        Reasoning {
            wire,
            endpoint: endpoint.into(),
            text: "I should read both".into(),
            items,
        }
        .to_value()
    }

    fn call(id: &str, name: &str, arguments: &str) -> Value {
        json!({"id":id,"type":"function","function":{"name":name,"arguments":arguments}})
    }

    fn read_tool() -> Value {
        json!({"type":"function","function":{"name":"read_file","description":"Read a file",
            "parameters":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}}})
    }

    /// A whole session step: system, user, an assistant turn with thinking
    /// and two calls (one id invalid for Anthropic), their results (one
    /// failed), a later system message, the person's next words.
    fn session() -> Vec<Value> {
        vec![
            json!({"role":"system","content":"You are NanoHermes."}),
            json!({"role":"user","content":"Read a.rs and b.rs."}),
            json!({"role":"assistant","content":"Reading both.","tool_calls":[
                call("toolu_01", "read_file", r#"{"path":"a.rs"}"#),
                call("call.2/x", "read_file", r#"{"path":"b.rs"}"#),
            ], KEY: stored(WireApi::Messages, HERE, vec![
                thinking_item("I should read both", "sig-1"),
                json!({"type":"redacted_thinking","data":"EmwKAhgB"}),
            ])}),
            json!({"role":"tool","tool_call_id":"toolu_01","content":"fn a() {}"}),
            json!({"role":"tool","tool_call_id":"call.2/x","content":"ERROR: no such file: b.rs"}),
            json!({"role":"system","content":"The mode is now plan."}),
            json!({"role":"user","content":"Then make b.rs."}),
        ]
    }

    #[test]
    fn a_session_becomes_the_golden_body() {
        let mapped = wire_id("call.2/x").into_owned();
        assert_eq!(mapped, "call_2_x_".to_owned() + &mapped[9..]);
        let expected = json!({
            "model": "claude-x",
            "max_tokens": 4096,
            "stream": true,
            "system": [{"type":"text","text":"You are NanoHermes.","cache_control":{"type":"ephemeral"}}],
            "messages": [
                {"role":"user","content":[
                    {"type":"text","text":"Read a.rs and b.rs.","cache_control":{"type":"ephemeral"}}
                ]},
                {"role":"assistant","content":[
                    {"type":"thinking","thinking":"I should read both","signature":"sig-1"},
                    {"type":"redacted_thinking","data":"EmwKAhgB"},
                    {"type":"text","text":"Reading both."},
                    {"type":"tool_use","id":"toolu_01","name":"read_file","input":{"path":"a.rs"}},
                    {"type":"tool_use","id":mapped,"name":"read_file","input":{"path":"b.rs"}}
                ]},
                {"role":"user","content":[
                    {"type":"tool_result","tool_use_id":"toolu_01","content":"fn a() {}"},
                    {"type":"tool_result","tool_use_id":mapped,"content":"ERROR: no such file: b.rs","is_error":true},
                    {"type":"text","text":"<system-note>\nThe mode is now plan.\n</system-note>"},
                    {"type":"text","text":"Then make b.rs.","cache_control":{"type":"ephemeral"}}
                ]}
            ],
            "tools": [{"name":"read_file","description":"Read a file",
                "input_schema":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]},
                "cache_control":{"type":"ephemeral"}}],
            "tool_choice": {"type":"auto"},
            "temperature": 0.0
        });
        assert_eq!(body(&settings(), &session(), &[read_tool()]), expected);
    }

    #[test]
    fn the_same_transcript_gives_the_same_bytes() {
        let first = bytes(&settings(), &session(), &[read_tool()]);
        let second = bytes(&settings(), &session(), &[read_tool()]);
        assert_eq!(first, second);
        // Encoded tools make the same body as their values.
        let encoded = [serde_json::value::to_raw_value(&read_tool()).unwrap()];
        let from_encoded = Messages.body(&RequestParts {
            settings: &settings(),
            model: "claude-x",
            conversation: session().as_slice().into(),
            tools: JsonList::Encoded(&encoded),
        });
        assert_eq!(first, from_encoded);
    }

    #[test]
    fn invalid_ids_are_mapped_the_same_way_everywhere_and_valid_ones_kept() {
        assert_eq!(wire_id("toolu_01A-b"), "toolu_01A-b");
        let a = wire_id("call.1");
        let b = wire_id("call/1");
        assert_ne!(a, b, "ids differing only in replaced characters stay apart");
        for id in [
            &a,
            &b,
            &wire_id(""),
            &wire_id("functions.read:0"),
            &wire_id("é"),
        ] {
            assert!(
                !id.is_empty()
                    && id
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'),
                "{id}"
            );
        }
        assert_eq!(wire_id("call.1"), a, "deterministic");
        let sent = body(&settings(), &session(), &[]);
        let used = &sent["messages"][1]["content"][4]["id"];
        assert_eq!(sent["messages"][2]["content"][1]["tool_use_id"], *used);
        assert_ne!(*used, "call.2/x");
    }

    #[test]
    fn thinking_from_another_endpoint_or_wire_is_dropped() {
        for (wire, endpoint) in [
            (WireApi::Messages, "https://proxy.example/v1"),
            (WireApi::Chat, HERE),
            (WireApi::Responses, HERE),
        ] {
            let mut history = session();
            history[2][KEY] = stored(wire, endpoint, vec![thinking_item("t", "sig")]);
            let sent = body(&settings(), &history, &[]);
            let assistant = &sent["messages"][1]["content"];
            assert_eq!(assistant[0]["type"], "text", "{wire} {endpoint}");
            assert!(!sent.to_string().contains("thinking"), "{wire} {endpoint}");
        }
        // A trailing `/` on the base URL is the same endpoint.
        let mut slash = settings();
        slash.base_url = format!("{HERE}/");
        let sent = body(&slash, &session(), &[]);
        assert_eq!(sent["messages"][1]["content"][0]["type"], "thinking");
    }

    #[test]
    fn consecutive_users_merge_and_messages_without_blocks_are_dropped() {
        let history = [
            json!({"role":"system","content":"  "}),
            json!({"role":"user","content":"one"}),
            json!({"role":"user","content":[{"type":"text","text":"two"}]}),
            // Nothing Anthropic would accept: empty text, only thinking.
            json!({"role":"assistant","content":"","tool_calls":[],
                KEY: stored(WireApi::Messages, HERE, vec![thinking_item("hm", "s")])}),
            json!({"role":"assistant","content":null}),
            json!({"role":"user","content":" \n"}),
            json!({"role":"user","content":"three"}),
            json!({"role":"assistant","content":"done"}),
            json!({"role":"assistant","content":"and more"}),
        ];
        let sent = body(&settings(), &history, &[]);
        assert!(
            sent.get("system").is_none(),
            "a blank system text is refused"
        );
        assert!(sent.get("tools").is_none() && sent.get("tool_choice").is_none());
        let texts = |message: &Value| -> Vec<String> {
            message["content"]
                .as_array()
                .unwrap()
                .iter()
                .map(|b| b["text"].as_str().unwrap().to_owned())
                .collect()
        };
        let messages = sent["messages"].as_array().unwrap();
        assert_eq!(messages.len(), 2);
        assert_eq!(messages[0]["role"], "user");
        assert_eq!(texts(&messages[0]), ["one", "two", "three"]);
        assert_eq!(messages[1]["role"], "assistant");
        assert_eq!(texts(&messages[1]), ["done", "and more"]);
    }

    #[test]
    fn tool_results_come_first_and_an_empty_result_has_no_content() {
        let history = [
            json!({"role":"system","content":"s"}),
            json!({"role":"user","content":"go"}),
            json!({"role":"assistant","content":null,"tool_calls":[
                call("a", "x", ""), call("b", "x", "not json")]}),
            json!({"role":"tool","tool_call_id":"a","content":""}),
            json!({"role":"system","content":"note"}),
            json!({"role":"tool","tool_call_id":"b","content":"ok"}),
        ];
        let sent = body(&settings(), &history, &[]);
        let assistant = &sent["messages"][1]["content"];
        assert_eq!(assistant[0]["input"], json!({}));
        assert_eq!(
            assistant[1]["input"],
            json!({}),
            "refused arguments are sent as none"
        );
        let results = sent["messages"][2]["content"].as_array().unwrap();
        let kinds: Vec<&str> = results
            .iter()
            .map(|b| b["type"].as_str().unwrap())
            .collect();
        assert_eq!(kinds, ["tool_result", "tool_result", "text"]);
        assert_eq!(results[0], json!({"type":"tool_result","tool_use_id":"a"}));
        assert_eq!(results[1]["tool_use_id"], "b");
        assert!(results[1].get("is_error").is_none());
    }

    fn breakpoints(sent: &Value) -> Vec<String> {
        let mut found = Vec::new();
        if let Some(tools) = sent["tools"].as_array() {
            for tool in tools.iter().filter(|t| t.get("cache_control").is_some()) {
                found.push(format!("tool {}", tool["name"]));
            }
        }
        if let Some(system) = sent["system"].as_array() {
            found.extend(
                system
                    .iter()
                    .filter(|b| b.get("cache_control").is_some())
                    .map(|_| "system".to_owned()),
            );
        }
        for (m, message) in sent["messages"].as_array().unwrap().iter().enumerate() {
            for (b, block) in message["content"].as_array().unwrap().iter().enumerate() {
                if let Some(control) = block.get("cache_control") {
                    assert_eq!(*control, json!({"type":"ephemeral"}));
                    found.push(format!("message {m} block {b} {}", block["type"]));
                }
            }
        }
        found
    }

    #[test]
    fn four_breakpoints_where_the_cache_is_read_and_written_fewer_on_short_histories() {
        let tools = [
            read_tool(),
            json!({"type":"function","function":{"name":"shell"}}),
        ];
        let mut history = session();
        history.push(
            json!({"role":"assistant","content":null,"tool_calls":[call("c", "shell", "{}")],
            KEY: stored(WireApi::Messages, HERE, vec![thinking_item("t", "s")])}),
        );
        history.push(json!({"role":"tool","tool_call_id":"c","content":"done"}));
        let sent = body(&settings(), &history, &tools);
        assert_eq!(
            breakpoints(&sent),
            [
                "tool \"shell\"",
                "system",
                // Latest one step earlier: the previous request's last message.
                "message 2 block 3 \"text\"",
                "message 4 block 0 \"tool_result\"",
            ]
        );
        // The previous request put its latest breakpoint on the block this
        // one reads at: the same message, the same block.
        let previous = body(&settings(), &history[..7], &tools);
        assert_eq!(previous["messages"][2], sent["messages"][2]);

        let short = [
            json!({"role":"system","content":"s"}),
            json!({"role":"user","content":"hi"}),
        ];
        assert_eq!(
            breakpoints(&body(&settings(), &short, &[])),
            ["system", "message 0 block 0 \"text\""]
        );
        assert_eq!(
            breakpoints(&body(&settings(), &short[1..], &[])),
            ["message 0 block 0 \"text\""]
        );
        assert_eq!(
            breakpoints(&body(&settings(), &[], &[])),
            Vec::<String>::new()
        );
    }

    #[test]
    fn never_a_breakpoint_on_thinking() {
        // A prefilled assistant message is the latest one; its thinking
        // comes first, so the breakpoint goes on its last other block.
        let history = [
            json!({"role":"user","content":"go"}),
            json!({"role":"assistant","content":"ok",
                KEY: stored(WireApi::Messages, HERE, vec![thinking_item("t", "s")])}),
        ];
        let sent = body(&settings(), &history, &[]);
        assert_eq!(
            breakpoints(&sent),
            ["message 0 block 0 \"text\"", "message 1 block 1 \"text\""]
        );
        let mut turns = vec![Turn {
            role: "assistant",
            blocks: vec![
                thinking_item("t", "s"),
                json!({"type":"redacted_thinking","data":"d"}),
            ],
        }];
        set_message_breakpoints(&mut turns);
        assert!(
            turns[0]
                .blocks
                .iter()
                .all(|b| b.get("cache_control").is_none())
        );
    }

    #[test]
    fn thinking_replaces_temperature_with_a_budget_below_max_tokens() {
        let mut settings = settings();
        settings.body.thinking = true;
        let sent = body(&settings, &session()[..2], &[]);
        assert_eq!(
            sent["thinking"],
            json!({"type":"enabled","budget_tokens":2048})
        );
        assert!(sent.get("temperature").is_none());
        assert_eq!(sent["max_tokens"], 4096);
        // Too small a budget for thinking: sent without it.
        settings.body.max_tokens = 2047;
        let sent = body(&settings, &session()[..2], &[]);
        assert!(sent.get("thinking").is_none());
        assert_eq!(sent["temperature"], 0.0);
        assert_eq!(thinking_budget(2048), Some(1024));
        for max in [2048, 4096, 64_000] {
            let budget = thinking_budget(max).unwrap();
            assert!((MIN_THINKING_BUDGET..max).contains(&budget), "{max}");
        }
    }

    #[test]
    fn headers_carry_the_key_and_the_version_and_no_bearer() {
        let mut headers = HeaderMap::new();
        Messages.auth_headers(Some("sk-ant-1"), &mut headers);
        assert_eq!(headers["x-api-key"], "sk-ant-1");
        assert_eq!(headers["anthropic-version"], ANTHROPIC_VERSION);
        assert!(headers.get("authorization").is_none());
        let mut headers = HeaderMap::new();
        Messages.auth_headers(None, &mut headers);
        assert!(headers.get("x-api-key").is_none());
        assert_eq!(headers.len(), 1);
    }

    /// Feeds an SSE body through the decoder and the reader, in pieces of
    /// `piece` bytes; returns the reader and what it showed.
    fn read_stream(body: &str, piece: usize) -> (MessageReader, Vec<String>, bool) {
        let mut decoder = SseDecoder::default();
        let mut reader = MessageReader::at(HERE);
        let mut shown = Vec::new();
        let mut finished = false;
        let mut frames = Vec::new();
        for chunk in body.as_bytes().chunks(piece) {
            frames.extend(decoder.push(chunk).unwrap());
        }
        frames.extend(decoder.finish());
        for frame in frames {
            let Frame::Data(value) = frame else {
                panic!("unexpected frame {frame:?}");
            };
            assert!(!finished, "an event after message_stop");
            match reader.apply(&value).unwrap() {
                Some(Delta::Text(text)) => shown.push(format!("text:{text}")),
                Some(Delta::Reasoning(text)) => shown.push(format!("thinking:{text}")),
                None => {}
            }
            finished = reader.finished();
        }
        (reader, shown, finished)
    }

    fn sse(events: &[Value]) -> String {
        events
            .iter()
            .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap()))
            .collect()
    }

    fn recorded_stream() -> String {
        sse(&[
            json!({"type":"message_start","message":{"id":"msg_01","type":"message","role":"assistant",
                "model":"claude-sonnet-4-5","content":[],"stop_reason":null,"stop_sequence":null,
                "usage":{"input_tokens":12,"cache_creation_input_tokens":340,"cache_read_input_tokens":5120,"output_tokens":2}}}),
            json!({"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}),
            json!({"type":"ping"}),
            json!({"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"The user wants "}}),
            json!({"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"both files."}}),
            json!({"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQBCkgIBRABGAIiQL+sig=="}}),
            json!({"type":"content_block_stop","index":0}),
            json!({"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}),
            json!({"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"I'll read "}}),
            json!({"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"both."}}),
            json!({"type":"content_block_stop","index":1}),
            json!({"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_01A","name":"read_file","input":{}}}),
            json!({"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":""}}),
            json!({"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"path\": \"src/"}}),
            json!({"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"main.rs\"}"}}),
            json!({"type":"content_block_stop","index":2}),
            json!({"type":"content_block_start","index":3,"content_block":{"type":"tool_use","id":"toolu_01B","name":"list_dir","input":{}}}),
            json!({"type":"content_block_stop","index":3}),
            json!({"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":91}}),
            json!({"type":"message_stop"}),
        ])
    }

    #[test]
    fn a_recorded_stream_becomes_the_exact_turn() {
        let body = recorded_stream();
        for piece in [1, 7, body.len()] {
            let (reader, shown, finished) = read_stream(&body, piece);
            assert!(finished);
            assert!(reader.whole_at_eof());
            assert_eq!(
                shown,
                [
                    "thinking:The user wants ",
                    "thinking:both files.",
                    "text:I'll read ",
                    "text:both."
                ]
            );
            let turn = Box::new(reader).finish("claude-sonnet-4-5");
            assert_eq!(
                turn,
                AssistantTurn {
                    content: "I'll read both.".into(),
                    tool_calls: vec![
                        ToolCall {
                            id: "toolu_01A".into(),
                            name: "read_file".into(),
                            arguments: "{\"path\": \"src/main.rs\"}".into(),
                        },
                        ToolCall {
                            id: "toolu_01B".into(),
                            name: "list_dir".into(),
                            arguments: "{}".into(),
                        },
                    ],
                    usage: Some(Usage {
                        prompt_tokens: 12 + 5120 + 340,
                        completion_tokens: 91,
                        cached_tokens: 5120,
                        cache_write_tokens: 340,
                        reasoning_tokens: 0,
                    }),
                    model: "claude-sonnet-4-5".into(),
                    finish_reason: Some("tool_calls".into()),
                    reasoning: Some(Reasoning {
                        wire: WireApi::Messages,
                        endpoint: HERE.into(),
                        text: "The user wants both files.".into(),
                        items: vec![thinking_item(
                            "The user wants both files.",
                            "EqQBCkgIBRABGAIiQL+sig=="
                        )],
                    }),
                },
                "piece {piece}"
            );
        }
    }

    #[test]
    fn a_streamed_turn_is_replayed_with_its_signature_verbatim() {
        let (reader, _, _) = read_stream(&recorded_stream(), 4096);
        let turn = reader.finish("m");
        let calls: Vec<Value> = turn
            .tool_calls
            .iter()
            .map(|c| call(&c.id, &c.name, &c.arguments))
            .collect();
        let history = [
            json!({"role":"user","content":"go"}),
            json!({"role":"assistant","content":turn.content,"tool_calls":calls,
                KEY: turn.reasoning.as_ref().unwrap().to_value()}),
            json!({"role":"tool","tool_call_id":"toolu_01A","content":"fn main() {}"}),
            json!({"role":"tool","tool_call_id":"toolu_01B","content":"src/"}),
        ];
        let sent = body(&settings(), &history, &[]);
        assert_eq!(
            sent["messages"][1]["content"],
            json!([
                thinking_item("The user wants both files.", "EqQBCkgIBRABGAIiQL+sig=="),
                {"type":"text","text":"I'll read both."},
                {"type":"tool_use","id":"toolu_01A","name":"read_file","input":{"path":"src/main.rs"}},
                {"type":"tool_use","id":"toolu_01B","name":"list_dir","input":{}}
            ])
        );
    }

    fn short_stream(stop_reason: &str, with_stop: bool) -> MessageReader {
        let mut events = vec![
            json!({"type":"message_start","message":{"usage":{"input_tokens":5,"output_tokens":1}}}),
            json!({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}),
            json!({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Partial"}}),
            json!({"type":"content_block_stop","index":0}),
            json!({"type":"message_delta","delta":{"stop_reason":stop_reason},"usage":{"output_tokens":7}}),
        ];
        if with_stop {
            events.push(json!({"type":"message_stop"}));
        }
        read_stream(&sse(&events), 64).0
    }

    #[test]
    fn stop_reasons_are_told_in_chat_words() {
        for (stop, expected) in [
            ("end_turn", "stop"),
            ("stop_sequence", "stop"),
            ("max_tokens", "length"),
            ("pause_turn", "pause_turn"),
            ("refusal", "refusal"),
            ("tool_use", "tool_calls"),
        ] {
            let turn = short_stream(stop, true).finish("m");
            assert_eq!(turn.finish_reason.as_deref(), Some(expected), "{stop}");
            assert_eq!(turn.content, "Partial");
            assert_eq!(
                turn.usage.unwrap().completion_tokens,
                7,
                "output is cumulative"
            );
            assert_eq!(turn.usage.unwrap().prompt_tokens, 5);
            assert_eq!(turn.reasoning, None);
        }
        let turn = short_stream("max_tokens", true).finish("m");
        assert!(!turn.is_cut_off(0), "no call was being written");
    }

    #[test]
    fn a_stream_is_whole_at_eof_only_after_a_stop_reason_or_message_stop() {
        let cut = sse(&[
            json!({"type":"message_start","message":{"usage":{"input_tokens":5}}}),
            json!({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}),
            json!({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Half"}}),
        ]);
        let (reader, _, finished) = read_stream(&cut, 64);
        assert!(!finished && !reader.whole_at_eof());
        let reader = short_stream("end_turn", false);
        assert!(!reader.finished() && reader.whole_at_eof());
    }

    #[test]
    fn a_redacted_thinking_block_is_kept_verbatim_in_order() {
        let redacted = json!({"type":"redacted_thinking","data":"EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP"});
        let stream = sse(&[
            json!({"type":"message_start","message":{"usage":{"input_tokens":1,"output_tokens":1}}}),
            json!({"type":"content_block_start","index":0,"content_block":redacted}),
            json!({"type":"content_block_stop","index":0}),
            json!({"type":"content_block_start","index":1,"content_block":{"type":"thinking","thinking":""}}),
            json!({"type":"content_block_delta","index":1,"delta":{"type":"thinking_delta","thinking":"ok"}}),
            json!({"type":"content_block_delta","index":1,"delta":{"type":"signature_delta","signature":"sig"}}),
            json!({"type":"content_block_start","index":2,"content_block":{"type":"text","text":""}}),
            json!({"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":"Hi"}}),
            json!({"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":3}}),
            json!({"type":"message_stop"}),
        ]);
        let turn = read_stream(&stream, 9).0.finish("m");
        let reasoning = turn.reasoning.unwrap();
        assert_eq!(reasoning.items, [redacted, thinking_item("ok", "sig")]);
        assert_eq!(reasoning.text, "ok");
        assert_eq!(turn.content, "Hi");
    }

    #[test]
    fn tool_input_past_the_limit_stops_the_reading() {
        let mut reader = MessageReader::at(HERE);
        reader
            .apply(&json!({"type":"content_block_start","index":0,
                "content_block":{"type":"tool_use","id":"t","name":"write_file","input":{}}}))
            .unwrap();
        let piece = json!({"type":"content_block_delta","index":0,
            "delta":{"type":"input_json_delta","partial_json":"x".repeat(300_000)}});
        for _ in 0..3 {
            reader.apply(&piece).unwrap();
            assert!(!reader.arguments_over_limit());
        }
        reader.apply(&piece).unwrap();
        assert!(reader.arguments_over_limit());
        assert!(reader.size() <= MAX_ARGUMENTS + 1);
        let turn = reader.finish("m");
        assert!(turn.tool_calls[0].parse_arguments().is_err());
    }

    #[test]
    fn an_error_event_is_an_error_and_overloaded_is_retried() {
        let event =
            json!({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}});
        let frames = SseDecoder::default()
            .push(format!("event: error\ndata: {event}\n\n").as_bytes())
            .unwrap();
        assert_eq!(frames, [Frame::Error(event.clone())]);
        let error = MessageReader::at(HERE).apply(&event).unwrap_err();
        assert!(error.is_retryable(), "{error}");
        assert!(crate::retry::is_retryable_status(529));
    }

    #[test]
    fn anthropic_error_bodies_give_their_message_and_too_long_prompts_are_context_errors() {
        let body = r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210443 tokens > 200000 maximum"}}"#;
        let target = std::sync::Arc::new(crate::Target::new(
            HERE,
            WireApi::Messages,
            crate::Advice::default(),
        ));
        let error = LlmError::from_status(400, body, None, &target, "claude-x");
        assert!(error.is_context_length());
        assert!(!error.is_retryable());
        assert!(
            error
                .to_string()
                .ends_with("HTTP 400: prompt is too long: 210443 tokens > 200000 maximum"),
            "{error}"
        );
        let overloaded =
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
        let error = LlmError::from_status(529, overloaded, None, &target, "claude-x");
        assert!(error.is_retryable());
        assert!(
            error.to_string().ends_with("HTTP 529: Overloaded"),
            "{error}"
        );
    }

    #[test]
    fn a_whole_message_is_read_like_a_stream() {
        let response = json!({
            "id":"msg_02","type":"message","role":"assistant","model":"claude-x",
            "content":[
                {"type":"thinking","thinking":"Look first.","signature":"sig-w"},
                {"type":"text","text":"Looking."},
                {"type":"tool_use","id":"toolu_9","name":"read_file","input":{"path":"a"}},
                {"type":"tool_use","id":"toolu_10","name":"list_dir","input":{}}
            ],
            "stop_reason":"tool_use","stop_sequence":null,
            "usage":{"input_tokens":3,"cache_read_input_tokens":10,"cache_creation_input_tokens":0,"output_tokens":20}
        });
        let turn = Messages.whole(&settings(), &response, "claude-x").unwrap();
        assert_eq!(turn.content, "Looking.");
        assert_eq!(
            turn.tool_calls,
            [
                ToolCall {
                    id: "toolu_9".into(),
                    name: "read_file".into(),
                    arguments: r#"{"path":"a"}"#.into()
                },
                ToolCall {
                    id: "toolu_10".into(),
                    name: "list_dir".into(),
                    arguments: "{}".into()
                }
            ]
        );
        assert_eq!(turn.finish_reason.as_deref(), Some("tool_calls"));
        assert_eq!(
            turn.usage,
            Some(Usage {
                prompt_tokens: 13,
                completion_tokens: 20,
                cached_tokens: 10,
                cache_write_tokens: 0,
                reasoning_tokens: 0
            })
        );
        let reasoning = turn.reasoning.unwrap();
        assert_eq!(reasoning.items, [thinking_item("Look first.", "sig-w")]);
        assert_eq!(reasoning.text, "Look first.");
        let error = Messages
            .whole(&settings(), &json!({"type":"message"}), "m")
            .unwrap_err();
        assert!(error.starts_with("no content in the message"), "{error}");
    }
}
