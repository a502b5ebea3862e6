//! One assistant turn, assembled from stream deltas or read from a whole
//! response.
//!
//! Tool calls are pieced together by `index`: a delta's `id` and
//! `function.name` are set only when non-empty (servers repeat them, or send
//! `null` in later deltas), `function.arguments` pieces are appended, and
//! slots are grown as indexes appear, in any order.

use serde_json::Value;

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

/// Token counts of one request, as the server reported them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// Input tokens.
    pub prompt_tokens: u64,
    /// Output tokens.
    pub completion_tokens: u64,
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
}

/// Accumulates stream chunks into an [`AssistantTurn`].
#[derive(Debug, Default)]
pub struct TurnBuilder {
    content: String,
    calls: Vec<ToolCall>,
    usage: Option<Usage>,
}

impl TurnBuilder {
    /// Applies one stream chunk; returns the text it added, if any.
    pub fn apply<'a>(&mut self, chunk: &'a Value) -> Option<&'a str> {
        if let Some(usage) = usage_of(chunk) {
            self.usage = Some(usage);
        }
        // The usage frame has `choices: []`: never index it unguarded.
        let delta = chunk.get("choices")?.get(0)?.get("delta")?;
        accumulate_tool_calls(delta.get("tool_calls"), &mut self.calls);
        let text = delta.get("content")?.as_str().filter(|t| !t.is_empty())?;
        self.content.push_str(text);
        Some(text)
    }

    /// The text received so far.
    pub fn content(&self) -> &str {
        &self.content
    }

    /// The finished turn, answered by `model`.
    pub fn finish(self, model: &str) -> AssistantTurn {
        AssistantTurn {
            content: self.content,
            tool_calls: finish_calls(self.calls),
            usage: self.usage,
            model: model.to_owned(),
        }
    }
}

/// Reads a whole (non-streaming) chat completion response.
pub fn turn_from_response(response: &Value, model: &str) -> Result<AssistantTurn, String> {
    let Some(message) = response
        .get("choices")
        .and_then(|c| c.get(0))
        .and_then(|c| c.get("message"))
    else {
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
    })
}

/// Merges the `tool_calls` array of one delta into `slots`, by `index`.
pub fn accumulate_tool_calls(deltas: Option<&Value>, slots: &mut Vec<ToolCall>) {
    let Some(deltas) = deltas.and_then(Value::as_array) else {
        return;
    };
    for delta in deltas {
        let index = delta.get("index").and_then(Value::as_u64).unwrap_or(0);
        // An absurd index must not allocate gigabytes.
        let Ok(index) = usize::try_from(index.min(1024)) else {
            continue;
        };
        if slots.len() <= index {
            slots.resize(index + 1, ToolCall::default());
        }
        let slot = &mut slots[index];
        if let Some(id) = delta
            .get("id")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
        {
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
            Some(Value::String(piece)) => slot.arguments.push_str(piece),
            // Some servers send the arguments as an object rather than a string.
            Some(object @ Value::Object(_)) => slot.arguments.push_str(&object.to_string()),
            _ => {}
        }
    }
}

/// Drops slots no delta ever filled (skipped indexes) and gives an id to a
/// call that came without one, so every call can be answered.
fn finish_calls(calls: Vec<ToolCall>) -> Vec<ToolCall> {
    let mut calls: Vec<ToolCall> = calls
        .into_iter()
        .filter(|c| *c != ToolCall::default())
        .collect();
    for (position, call) in calls.iter_mut().enumerate() {
        if call.id.is_empty() {
            call.id = format!("call_{position}");
        }
    }
    calls
}

fn usage_of(value: &Value) -> Option<Usage> {
    let usage = value.get("usage").filter(|u| u.is_object())?;
    let count = |key: &str| usage.get(key).and_then(Value::as_u64).unwrap_or(0);
    Some(Usage {
        prompt_tokens: count("prompt_tokens"),
        completion_tokens: count("completion_tokens"),
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
    fn skipped_indexes_leave_no_empty_call_and_missing_ids_are_filled() {
        let mut builder = TurnBuilder::default();
        builder.apply(&chunk_with_calls(
            json!([{"index":2,"function":{"name":"x","arguments":"{}"}}]),
        ));
        let calls = builder.finish("m").tool_calls;
        assert_eq!(
            calls,
            vec![ToolCall {
                id: "call_0".into(),
                name: "x".into(),
                arguments: "{}".into()
            }]
        );
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
                completion_tokens: 2
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
        let turn = turn_from_response(&response, "m").unwrap();
        assert_eq!(turn.content, "");
        assert_eq!(turn.tool_calls[1].arguments, r#"{"path":"a"}"#);
        assert_eq!(
            turn.usage,
            Some(Usage {
                prompt_tokens: 10,
                completion_tokens: 5
            })
        );
        assert!(
            turn_from_response(&json!({"object":"error"}), "m")
                .unwrap_err()
                .contains("no choices")
        );
    }
}
