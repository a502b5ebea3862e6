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
