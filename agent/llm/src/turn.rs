//! One assistant turn, assembled from stream deltas or read from a whole
//! response.
//!
//! Tool calls are pieced together by `index`: a delta's `id` and
//! `function.name` are set only when non-empty (servers repeat them, or send
//! `null` in later deltas), `function.arguments` pieces are appended, and
//! slots are grown as indexes appear, in any order. Some servers send no
//! `index`: then a delta with an id not seen in this turn starts a new
//! call, and one without an id continues the last call.
//!
//! One call's argument text is kept up to [`MAX_ARGUMENTS`] bytes (and one
//! character more, so that its length says it went over): a server that
//! streams hundreds of megabytes of arguments costs the agent one
//! megabyte. [`parse_arguments`] refuses such a call, so it is never run,
//! the model reads an `ERROR:` result and the history keeps `{}`.
//!
//! Ids are not invented here: a call the server sent without an id keeps
//! an empty one, and the agent, which owns the session, names it (unique
//! in the whole session, not only in this turn).

use serde_json::{Map, Value};

use crate::reasoning::Reasoning;
use crate::wire::WireApi;

/// The most argument text one tool call may send, in bytes: 1 MiB. A
/// file written in one call is rarely a tenth of that, and a model that
/// writes more is better told to split it than kept waiting on.
pub const MAX_ARGUMENTS: usize = 1 << 20;

/// A tool call the model asked for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolCall {
    /// The id the tool result must carry as `tool_call_id`.
    pub id: String,
    /// The tool's name as declared to the model.
    pub name: String,
    /// The raw JSON text of the arguments, as the model wrote it (may be empty or invalid).
    pub arguments: String,
}

impl ToolCall {
    /// The arguments as a JSON object: empty text means no arguments;
    /// anything else must be one JSON object (not a string, an array, a
    /// number, nor truncated or invalid JSON). The error says what is wrong.
    pub fn parse_arguments(&self) -> Result<Map<String, Value>, String> {
        parse_arguments(&self.arguments)
    }
}

/// See [`ToolCall::parse_arguments`]. Text longer than [`MAX_ARGUMENTS`]
/// is refused whatever it holds: it was cut where it passed the limit.
pub fn parse_arguments(text: &str) -> Result<Map<String, Value>, String> {
    if text.len() > MAX_ARGUMENTS {
        return Err(format!(
            "the arguments are longer than {MAX_ARGUMENTS} bytes (1 MiB), the most one call may send, and were not read past that; write large content in several smaller calls"
        ));
    }
    if text.trim().is_empty() {
        return Ok(Map::new());
    }
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(other) => Err(format!("expected a JSON object, got {}", kind(&other))),
        Err(e) if e.is_eof() => Err(format!("the JSON ends too early ({e})")),
        Err(e) => Err(e.to_string()),
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Token counts of one request, as the server reported them, in one
/// shape whatever the wire: `prompt_tokens` counts every input token
/// (Anthropic reports cached and cache-written input apart from
/// `input_tokens`; they are added back here), and the cache and reasoning
/// counts are parts of the two totals.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// Input tokens, cached or not.
    pub prompt_tokens: u64,
    /// Output tokens, reasoning included.
    pub completion_tokens: u64,
    /// Of the input, the tokens read from the provider's prompt cache.
    pub cached_tokens: u64,
    /// Of the input, the tokens written to the provider's prompt cache.
    pub cache_write_tokens: u64,
    /// Of the output, the tokens spent reasoning.
    pub reasoning_tokens: u64,
}

/// What the model answered in one request.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AssistantTurn {
    /// The text the model wrote (empty when it only called tools).
    pub content: String,
    /// The tool calls, in the model's order.
    pub tool_calls: Vec<ToolCall>,
    /// Token usage, `None` when the server did not report it.
    pub usage: Option<Usage>,
    /// The model that answered: the configured one, or the fallback.
    pub model: String,
    /// Why the model stopped, in chat-completions words whatever the wire
    /// (`stop`, `tool_calls`, `length`, plus Anthropic's `pause_turn` and
    /// `refusal`), when the server said. `None` only for a stream that
    /// ended with `[DONE]` but no finish reason.
    pub finish_reason: Option<String>,
    /// What the model reasoned before this turn, to keep with it.
    pub reasoning: Option<Reasoning>,
}

impl AssistantTurn {
    /// Whether the call at `index` was cut off by the token budget: the turn
    /// ended with `finish_reason: "length"` and this is its last call, the
    /// one being written when the budget ran out.
    pub fn is_cut_off(&self, index: usize) -> bool {
        self.finish_reason.as_deref() == Some("length") && index + 1 == self.tool_calls.len()
    }
}

/// Accumulates chat-completions stream chunks into an [`AssistantTurn`].
#[derive(Debug, Default)]
pub struct TurnBuilder {
    content: String,
    reasoning: String,
    calls: Vec<ToolCall>,
    usage: Option<Usage>,
    finish_reason: Option<String>,
    /// The endpoint the turn comes from (its reasoning is replayed only there).
    endpoint: String,
}

impl TurnBuilder {
    /// A builder for a turn from `endpoint`.
    pub fn at(endpoint: &str) -> TurnBuilder {
        TurnBuilder {
            endpoint: crate::reasoning::endpoint_of(endpoint).to_owned(),
            ..TurnBuilder::default()
        }
    }

    /// Applies one stream chunk; returns the text it added, if any.
    pub fn apply<'a>(&mut self, chunk: &'a Value) -> Option<&'a str> {
        match self.apply_delta(chunk)? {
            crate::wire::Delta::Text(text) => Some(text),
            crate::wire::Delta::Reasoning(_) => None,
        }
    }

    /// Applies one stream chunk; returns the answer or reasoning text it added.
    pub fn apply_delta<'a>(&mut self, chunk: &'a Value) -> Option<crate::wire::Delta<'a>> {
        if let Some(usage) = usage_of(chunk) {
            self.usage = Some(usage);
        }
        // The usage frame has `choices: []`: never index it unguarded.
        let choice = chunk.get("choices")?.get(0)?;
        if let Some(reason) = finish_reason_of(choice) {
            self.finish_reason = Some(reason);
        }
        let delta = choice.get("delta")?;
        accumulate_tool_calls(delta.get("tool_calls"), &mut self.calls);
        if let Some(thought) = reasoning_of(delta) {
            self.reasoning.push_str(thought);
            return Some(crate::wire::Delta::Reasoning(thought));
        }
        let text = delta.get("content")?.as_str().filter(|t| !t.is_empty())?;
        self.content.push_str(text);
        Some(crate::wire::Delta::Text(text))
    }

    /// The text received so far.
    pub fn content(&self) -> &str {
        &self.content
    }

    /// Whether a call's arguments passed [`MAX_ARGUMENTS`]: reading on
    /// cannot make that call valid.
    pub fn arguments_over_limit(&self) -> bool {
        self.calls.iter().any(|c| c.arguments.len() > MAX_ARGUMENTS)
    }

    /// The bytes of text, reasoning and arguments held so far.
    pub fn size(&self) -> usize {
        self.content.len()
            + self.reasoning.len()
            + self.calls.iter().map(|c| c.arguments.len()).sum::<usize>()
    }

    /// The finish reason, once a chunk carried one.
    pub fn finish_reason(&self) -> Option<&str> {
        self.finish_reason.as_deref()
    }

    /// The finished turn, answered by `model`.
    pub fn finish(self, model: &str) -> AssistantTurn {
        AssistantTurn {
            content: self.content,
            tool_calls: finish_calls(self.calls),
            usage: self.usage,
            model: model.to_owned(),
            finish_reason: self.finish_reason,
            reasoning: chat_reasoning(self.reasoning, &self.endpoint),
        }
    }
}

/// Chat's reasoning is its text (`reasoning_content`), kept when there is some.
fn chat_reasoning(text: String, endpoint: &str) -> Option<Reasoning> {
    (!text.is_empty()).then(|| Reasoning {
        wire: WireApi::Chat,
        endpoint: endpoint.to_owned(),
        text,
        items: Vec::new(),
    })
}

/// A delta's or message's reasoning text: `reasoning_content` (DeepSeek,
/// llama.cpp, vLLM) or `reasoning` (OpenRouter, newer vLLM).
fn reasoning_of(delta: &Value) -> Option<&str> {
    ["reasoning_content", "reasoning"]
        .iter()
        .find_map(|key| delta.get(*key)?.as_str())
        .filter(|t| !t.is_empty())
}

/// Reads a whole (non-streaming) chat completion response from `endpoint`.
pub fn turn_from_response(
    response: &Value,
    model: &str,
    endpoint: &str,
) -> Result<AssistantTurn, String> {
    let choice = response.get("choices").and_then(|c| c.get(0));
    let Some(message) = choice.and_then(|c| c.get("message")) else {
        let mut body = response.to_string();
        body.truncate(mcp_tools::clamp::floor_char_boundary(&body, 300));
        return Err(format!("no choices[0].message in the response: {body}"));
    };
    let content = message
        .get("content")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let mut calls = Vec::new();
    if let Some(list) = message.get("tool_calls").and_then(Value::as_array) {
        for (position, call) in list.iter().enumerate() {
            let mut call = call.clone();
            if call.get("index").is_none() {
                call["index"] = position.into();
            }
            accumulate_tool_calls(Some(&Value::Array(vec![call])), &mut calls);
        }
    }
    Ok(AssistantTurn {
        content,
        tool_calls: finish_calls(calls),
        usage: usage_of(response),
        model: model.to_owned(),
        finish_reason: choice.and_then(finish_reason_of),
        reasoning: chat_reasoning(
            reasoning_of(message).unwrap_or_default().to_owned(),
            crate::reasoning::endpoint_of(endpoint),
        ),
    })
}

fn finish_reason_of(choice: &Value) -> Option<String> {
    choice
        .get("finish_reason")
        .and_then(Value::as_str)
        .filter(|r| !r.is_empty())
        .map(str::to_owned)
}

/// Merges the `tool_calls` array of one delta into `slots`, by `index`.
pub fn accumulate_tool_calls(deltas: Option<&Value>, slots: &mut Vec<ToolCall>) {
    let Some(deltas) = deltas.and_then(Value::as_array) else {
        return;
    };
    for delta in deltas {
        let id = delta
            .get("id")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty());
        let index = match delta.get("index").and_then(Value::as_u64) {
            // An absurd index must not allocate gigabytes.
            Some(index) => usize::try_from(index.min(1024)).unwrap_or(1024),
            None => index_without_index(id, slots),
        };
        if slots.len() <= index {
            slots.resize(index + 1, ToolCall::default());
        }
        let slot = &mut slots[index];
        if let Some(id) = id {
            id.clone_into(&mut slot.id);
        }
        let Some(function) = delta.get("function") else {
            continue;
        };
        if let Some(name) = function
            .get("name")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
        {
            name.clone_into(&mut slot.name);
        }
        match function.get("arguments") {
            Some(Value::String(piece)) => append_capped(&mut slot.arguments, piece),
            // Some servers send the arguments as an object rather than a string.
            Some(object @ Value::Object(_)) => {
                append_capped(&mut slot.arguments, &object.to_string());
            }
            _ => {}
        }
    }
}

/// Appends `piece` while `arguments` is within [`MAX_ARGUMENTS`]; the piece
/// that crosses it is kept up to one character past the limit, and later
/// pieces are dropped.
pub(crate) fn append_capped(arguments: &mut String, piece: &str) {
    let Some(room) = MAX_ARGUMENTS.checked_sub(arguments.len()) else {
        return;
    };
    if piece.len() <= room {
        arguments.push_str(piece);
        return;
    }
    let mut end = room + 1;
    while !piece.is_char_boundary(end) {
        end += 1;
    }
    arguments.push_str(&piece[..end]);
}

/// The slot of a delta that has no `index`: the call with the same id; a
/// new call for an id not seen yet (unless the last call still has none,
/// then the id is that call's); the last call for a delta without an id.
fn index_without_index(id: Option<&str>, slots: &[ToolCall]) -> usize {
    let Some(id) = id else {
        return slots.len().saturating_sub(1);
    };
    if let Some(position) = slots.iter().position(|s| s.id == id) {
        return position;
    }
    match slots.last() {
        Some(last) if last.id.is_empty() => slots.len() - 1,
        _ => slots.len(),
    }
}

/// Drops slots no delta ever filled (skipped indexes). Calls without an id
/// keep an empty one: the session names them.
fn finish_calls(calls: Vec<ToolCall>) -> Vec<ToolCall> {
    calls
        .into_iter()
        .filter(|c| *c != ToolCall::default())
        .collect()
}

/// Chat usage: OpenAI's `prompt_tokens_details.cached_tokens` (and
/// `cache_write_tokens`), `completion_tokens_details.reasoning_tokens`, or
/// DeepSeek's `prompt_cache_hit_tokens`.
fn usage_of(value: &Value) -> Option<Usage> {
    let usage = value.get("usage").filter(|u| u.is_object())?;
    let count = |path: &[&str]| {
        path.iter()
            .try_fold(usage, |at, key| at.get(*key))
            .and_then(Value::as_u64)
            .unwrap_or(0)
    };
    Some(Usage {
        prompt_tokens: count(&["prompt_tokens"]),
        completion_tokens: count(&["completion_tokens"]),
        cached_tokens: count(&["prompt_tokens_details", "cached_tokens"])
            .max(count(&["prompt_cache_hit_tokens"])),
        cache_write_tokens: count(&["prompt_tokens_details", "cache_write_tokens"]),
        reasoning_tokens: count(&["completion_tokens_details", "reasoning_tokens"]),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn chunk_with_calls(calls: Value) -> Value {
        json!({"choices":[{"index":0,"delta":{"tool_calls":calls}}]})
    }

    #[test]
    fn arguments_are_appended_and_id_and_name_kept_across_null_repeats() {
        let mut builder = TurnBuilder::default();
        builder.apply(&chunk_with_calls(json!([{"index":0,"id":"call_a","type":"function","function":{"name":"read_file","arguments":""}}])));
        builder.apply(&chunk_with_calls(
            json!([{"index":0,"id":null,"function":{"name":null,"arguments":"{\"path\":"}}]),
        ));
        builder.apply(&chunk_with_calls(
            json!([{"index":0,"id":"","function":{"name":"","arguments":"\"a.rs\"}"}}]),
        ));
        let turn = builder.finish("m");
        assert_eq!(
            turn.tool_calls,
            vec![ToolCall {
                id: "call_a".into(),
                name: "read_file".into(),
                arguments: r#"{"path":"a.rs"}"#.into()
            }]
        );
    }

    #[test]
    fn slots_grow_for_indexes_out_of_order() {
        let mut builder = TurnBuilder::default();
        builder.apply(&chunk_with_calls(
            json!([{"index":1,"id":"b","function":{"name":"y","arguments":"{}"}}]),
        ));
        builder.apply(&chunk_with_calls(
            json!([{"index":0,"id":"a","function":{"name":"x","arguments":"{}"}}]),
        ));
        let names: Vec<_> = builder
            .finish("m")
            .tool_calls
            .into_iter()
            .map(|c| c.name)
            .collect();
        assert_eq!(names, ["x", "y"]);
    }

    #[test]
    fn skipped_indexes_leave_no_empty_call_and_missing_ids_stay_empty() {
        let mut builder = TurnBuilder::default();
        builder.apply(&chunk_with_calls(
            json!([{"index":2,"function":{"name":"x","arguments":"{}"}}]),
        ));
        let calls = builder.finish("m").tool_calls;
        assert_eq!(
            calls,
            vec![ToolCall {
                id: String::new(),
                name: "x".into(),
                arguments: "{}".into()
            }]
        );
    }

    #[test]
    fn deltas_without_index_start_a_call_on_a_new_id_and_continue_it_without_one() {
        let mut builder = TurnBuilder::default();
        for delta in [
            json!([{"id":"a","type":"function","function":{"name":"read_file","arguments":""}}]),
            json!([{"function":{"arguments":"{\"path\":"}}]),
            json!([{"function":{"arguments":"\"a.rs\"}"}}]),
            json!([{"id":"b","type":"function","function":{"name":"list_dir","arguments":"{"}}]),
            // A server that repeats the id in every delta: still call b.
            json!([{"id":"b","function":{"name":"list_dir","arguments":"}"}}]),
            json!([{"function":{"arguments":""}}]),
        ] {
            builder.apply(&chunk_with_calls(delta));
        }
        let calls: Vec<_> = builder
            .finish("m")
            .tool_calls
            .into_iter()
            .map(|c| (c.id, c.name, c.arguments))
            .collect();
        assert_eq!(
            calls,
            [
                ("a".into(), "read_file".into(), r#"{"path":"a.rs"}"#.into()),
                ("b".into(), "list_dir".into(), "{}".into()),
            ]
        );
    }

    #[test]
    fn an_id_arriving_after_the_name_of_an_index_less_call_names_that_call() {
        let mut builder = TurnBuilder::default();
        builder.apply(&chunk_with_calls(
            json!([{"function":{"name":"x","arguments":"{}"}}]),
        ));
        builder.apply(&chunk_with_calls(json!([{"id":"late"}])));
        let calls = builder.finish("m").tool_calls;
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].id, "late");
    }

    #[test]
    fn the_finish_reason_is_kept_and_length_cuts_off_the_last_call_only() {
        let mut builder = TurnBuilder::default();
        builder.apply(&chunk_with_calls(
            json!([{"index":0,"id":"a","function":{"name":"x","arguments":"{}"}},
                   {"index":1,"id":"b","function":{"name":"write_file","arguments":"{\"content\":\"lo"}}]),
        ));
        assert_eq!(builder.finish_reason(), None);
        builder.apply(&json!({"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}));
        // A later usage frame does not erase it.
        builder.apply(&json!({"choices":[],"usage":{"prompt_tokens":1}}));
        let turn = builder.finish("m");
        assert_eq!(turn.finish_reason.as_deref(), Some("length"));
        assert!(!turn.is_cut_off(0));
        assert!(turn.is_cut_off(1));
        let stopped = AssistantTurn {
            finish_reason: Some("tool_calls".into()),
            ..turn
        };
        assert!(!stopped.is_cut_off(1));
    }

    #[test]
    fn arguments_must_be_one_object_and_empty_means_none() {
        assert!(parse_arguments("  ").unwrap().is_empty());
        assert_eq!(parse_arguments(r#"{"a":1}"#).unwrap()["a"], 1);
        for (text, error) in [
            ("[1]", "expected a JSON object, got an array"),
            (r#""{\"a\":1}""#, "expected a JSON object, got a string"),
            ("42", "expected a JSON object, got a number"),
            ("null", "expected a JSON object, got null"),
        ] {
            assert_eq!(parse_arguments(text).unwrap_err(), error, "{text}");
        }
        assert!(
            parse_arguments(r#"{"a":"#)
                .unwrap_err()
                .starts_with("the JSON ends too early (EOF while parsing")
        );
        assert!(
            parse_arguments("{a: 1}")
                .unwrap_err()
                .contains("key must be a string")
        );
        assert!(
            parse_arguments(r#"{"a":1} {"b":2}"#)
                .unwrap_err()
                .contains("trailing")
        );
    }

    #[test]
    fn arguments_past_the_limit_are_kept_one_character_over_and_refused() {
        let mut builder = TurnBuilder::default();
        builder.apply(&chunk_with_calls(
            json!([{"index":0,"id":"a","function":{"name":"write_file","arguments":"{\"content\":\""}}]),
        ));
        let piece = "é".repeat(40_000);
        for _ in 0..20 {
            builder.apply(&chunk_with_calls(
                json!([{"index":0,"function":{"arguments":piece}}]),
            ));
        }
        assert!(builder.arguments_over_limit());
        let call = &builder.finish("m").tool_calls[0];
        assert!(call.arguments.len() > MAX_ARGUMENTS);
        assert!(call.arguments.len() <= MAX_ARGUMENTS + 4);
        assert!(
            call.parse_arguments()
                .unwrap_err()
                .starts_with("the arguments are longer than 1048576 bytes (1 MiB)")
        );
        // Exactly at the limit is still read.
        let text = format!("{{\"a\":\"{}\"}}", "x".repeat(MAX_ARGUMENTS - 8));
        assert_eq!(text.len(), MAX_ARGUMENTS);
        assert!(parse_arguments(&text).is_ok());
    }

    #[test]
    fn usage_frame_with_empty_choices_records_usage_only() {
        let mut builder = TurnBuilder::default();
        assert_eq!(
            builder.apply(&json!({"choices":[{"delta":{"role":"assistant","content":null}}]})),
            None
        );
        assert_eq!(
            builder.apply(&json!({"choices":[{"delta":{"content":"hi"}}]})),
            Some("hi")
        );
        assert_eq!(
            builder.apply(&json!({"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":2}})),
            None
        );
        let turn = builder.finish("m");
        assert_eq!(turn.content, "hi");
        assert_eq!(
            turn.usage,
            Some(Usage {
                prompt_tokens: 7,
                completion_tokens: 2,
                ..Usage::default()
            })
        );
    }

    #[test]
    fn a_stream_without_usage_reports_none_not_zero() {
        let mut builder = TurnBuilder::default();
        builder.apply(&json!({"choices":[{"delta":{"content":"hi"}}]}));
        assert_eq!(builder.finish("m").usage, None);
    }

    #[test]
    fn whole_response_is_read_like_a_stream() {
        let response = json!({
            "choices":[{"message":{"role":"assistant","content":null,"tool_calls":[
                {"id":"c1","type":"function","function":{"name":"list_dir","arguments":"{}"}},
                {"id":"c2","type":"function","function":{"name":"read_file","arguments":{"path":"a"}}}
            ]}}],
            "usage":{"prompt_tokens":10,"completion_tokens":5}
        });
        let turn = turn_from_response(&response, "m", "http://x/v1").unwrap();
        assert_eq!(turn.content, "");
        assert_eq!(turn.tool_calls[1].arguments, r#"{"path":"a"}"#);
        assert_eq!(turn.finish_reason, None);
        assert_eq!(
            turn.usage,
            Some(Usage {
                prompt_tokens: 10,
                completion_tokens: 5,
                ..Usage::default()
            })
        );
        assert!(
            turn_from_response(&json!({"object":"error"}), "m", "http://x/v1")
                .unwrap_err()
                .contains("no choices")
        );
    }
}
