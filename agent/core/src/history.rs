//! The shape of the messages the agent keeps and resends every turn.
//!
//! The history is resent whole on every request, so one malformed message
//! turns into an HTTP 400 on every later turn. The rules (seed article):
//!
//! - an assistant message has `content: null` when the model wrote no text
//!   (some servers refuse an empty string next to tool calls);
//! - `tool_calls` is present only when there are calls, and the arguments
//!   recorded are always one JSON object: `"{}"` when the model sent none,
//!   and also when what it sent is not a JSON object (invalid, truncated,
//!   a string, an array, a number). Strict servers (vLLM, llama.cpp)
//!   answer HTTP 500 to every later request otherwise; the raw text goes
//!   only into the `ERROR:` result the model reads;
//! - every tool call id is unique in the session ([`CallIds`]);
//! - a tool result is exactly `{role: "tool", tool_call_id, content}`;
//! - an assistant message keeps what the model reasoned before it under
//!   `reasoning` ([`nanohermes_llm::reasoning`]): inside the message, so
//!   nothing (compaction, `/undo`, a session file) can separate it from
//!   its tool calls; each wire sends it back only where it was made.

use std::collections::HashSet;

use serde_json::{Value, json};

use nanohermes_llm::{AssistantTurn, ToolCall};

/// `{role: "system", content}`.
pub fn system_message(content: &str) -> Value {
    json!({ "role": "system", "content": content })
}

/// `{role: "user", content}`.
pub fn user_message(content: &str) -> Value {
    json!({ "role": "user", "content": content })
}

/// The assistant message that records `turn` in the history.
pub fn assistant_message(turn: &AssistantTurn) -> Value {
    let content = if turn.content.is_empty() {
        Value::Null
    } else {
        Value::String(turn.content.clone())
    };
    let mut message = json!({ "role": "assistant", "content": content });
    if let Some(reasoning) = turn.reasoning.as_ref().filter(|r| !r.is_empty()) {
        message[nanohermes_llm::reasoning::KEY] = reasoning.to_value();
    }
    if turn.tool_calls.is_empty() {
        return message;
    }
    let calls: Vec<Value> = turn
        .tool_calls
        .iter()
        .map(|call| {
            let arguments = recorded_arguments(call);
            json!({
                "id": call.id,
                "type": "function",
                "function": { "name": call.name, "arguments": arguments },
            })
        })
        .collect();
    message["tool_calls"] = Value::Array(calls);
    message
}

/// The argument text the history keeps for `call`: the model's own text
/// when it is one JSON object, `"{}"` otherwise.
pub fn recorded_arguments(call: &ToolCall) -> &str {
    match call.parse_arguments() {
        Ok(_) if !call.arguments.trim().is_empty() => &call.arguments,
        _ => "{}",
    }
}

/// The tool call ids of a session. A call the server sent without an id,
/// or with one already used in this session (some servers number calls
/// per turn: `call_0` again on every turn), gets a fresh `nh_call_N` from a
/// session counter, so every `tool_call_id` names exactly one call.
#[derive(Debug, Default)]
pub struct CallIds {
    used: HashSet<String>,
    next: u64,
}

impl CallIds {
    /// Marks every call id in `messages` as used, so a resumed session
    /// never gives a new call an id an old one has.
    pub fn reserve(&mut self, messages: &[Value]) {
        let ids = messages
            .iter()
            .filter_map(|m| m.get("tool_calls")?.as_array())
            .flatten()
            .filter_map(|call| call.get("id")?.as_str());
        for id in ids {
            if let Some(n) = id
                .strip_prefix("nh_call_")
                .and_then(|n| n.parse::<u64>().ok())
            {
                self.next = self.next.max(n);
            }
            self.used.insert(id.to_owned());
        }
    }

    /// Names the calls of one turn, in place.
    pub fn assign(&mut self, calls: &mut [ToolCall]) {
        for call in calls {
            if call.id.is_empty() || self.used.contains(&call.id) {
                call.id = loop {
                    self.next += 1;
                    let id = format!("nh_call_{}", self.next);
                    if !self.used.contains(&id) {
                        break id;
                    }
                };
            }
            self.used.insert(call.id.clone());
        }
    }
}

/// The tool message answering the call `tool_call_id`.
pub fn tool_message(tool_call_id: &str, content: &str) -> Value {
    json!({ "role": "tool", "tool_call_id": tool_call_id, "content": content })
}

/// How much of the model's invalid argument text its `ERROR:` result quotes.
const QUOTED_ARGUMENTS: usize = 2000;

/// The result for arguments that are not one JSON object. The raw text
/// appears here only (clamped): the history records `{}` for the call.
pub fn invalid_arguments(call: &ToolCall, reason: &str) -> String {
    format!(
        "ERROR: invalid JSON arguments for `{}`: {reason}; the call was not run. You sent (the history keeps {{}} instead):\n{}\nResend the call with the arguments as one JSON object",
        call.name,
        mcp_tools::clamp::clamp(&call.arguments, QUOTED_ARGUMENTS)
    )
}

/// The result for a call the token budget (`max_tokens`) cut off inside
/// its arguments: it was not run, and the model is told to write less at a
/// time.
pub fn cut_off_arguments(call: &ToolCall, max_tokens: u32) -> String {
    format!(
        "ERROR: your call to `{}` was cut off at the max_tokens limit ({max_tokens} tokens) after {} bytes of arguments, so it was not run; write it in smaller parts, one shorter call at a time",
        call.name,
        call.arguments.len()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use nanohermes_llm::ToolCall;

    fn call(id: &str, arguments: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: "read_file".into(),
            arguments: arguments.into(),
        }
    }

    #[test]
    fn tool_only_turn_has_null_content_and_braces_for_empty_arguments() {
        let turn = AssistantTurn {
            tool_calls: vec![call("a", ""), call("b", "{\"path\":\"x\"}")],
            ..Default::default()
        };
        assert_eq!(
            assistant_message(&turn),
            json!({"role":"assistant","content":null,"tool_calls":[
                {"id":"a","type":"function","function":{"name":"read_file","arguments":"{}"}},
                {"id":"b","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"x\"}"}}
            ]})
        );
    }

    #[test]
    fn arguments_that_are_not_one_json_object_are_recorded_as_braces() {
        for bad in [
            r#"{"path": "a.txt""#,
            r#"{"content": "half a fi"#,
            "not json",
            r#""{\"path\":\"x\"}""#,
            "[1, 2]",
            "42",
            "null",
            r#"{"a":1} trailing"#,
        ] {
            let turn = AssistantTurn {
                tool_calls: vec![call("a", bad)],
                ..Default::default()
            };
            assert_eq!(
                assistant_message(&turn)["tool_calls"][0]["function"]["arguments"],
                "{}",
                "{bad}"
            );
        }
        let good = call("a", " {\"path\": \"x\"} ");
        assert_eq!(recorded_arguments(&good), good.arguments);
    }

    #[test]
    fn call_ids_are_unique_over_a_session_of_several_turns() {
        let mut ids = CallIds::default();
        let mut first = vec![call("", "{}"), call("", "{}"), call("call_0", "{}")];
        ids.assign(&mut first);
        // The server numbers per turn, repeats ids within a turn, and sends
        // ids the session counter made or would make.
        let mut second = vec![
            call("call_0", "{}"),
            call("", "{}"),
            call("x", "{}"),
            call("x", "{}"),
            call("nh_call_5", "{}"),
        ];
        ids.assign(&mut second);
        let mut third = vec![call("nh_call_7", "{}"), call("", "{}")];
        ids.assign(&mut third);
        let all: Vec<&str> = first
            .iter()
            .chain(&second)
            .chain(&third)
            .map(|c| c.id.as_str())
            .collect();
        assert_eq!(
            all,
            [
                "nh_call_1",
                "nh_call_2",
                "call_0",
                "nh_call_3",
                "nh_call_4",
                "x",
                "nh_call_5",
                "nh_call_6",
                "nh_call_7",
                "nh_call_8"
            ]
        );
    }

    #[test]
    fn text_only_turn_has_no_tool_calls_member() {
        let turn = AssistantTurn {
            content: "done".into(),
            ..Default::default()
        };
        assert_eq!(
            assistant_message(&turn),
            json!({"role":"assistant","content":"done"})
        );
        let empty = AssistantTurn::default();
        assert_eq!(
            assistant_message(&empty),
            json!({"role":"assistant","content":null})
        );
    }

    #[test]
    fn tool_message_has_exactly_three_fields() {
        assert_eq!(
            tool_message("a", "ok"),
            json!({"role":"tool","tool_call_id":"a","content":"ok"})
        );
    }

    #[test]
    fn the_invalid_arguments_result_quotes_the_raw_text_clamped() {
        let call = ToolCall {
            id: "a".into(),
            name: "write_file".into(),
            arguments: format!("{{\"content\": \"{}", "x".repeat(10_000)),
        };
        let reason = call.parse_arguments().unwrap_err();
        let result = invalid_arguments(&call, &reason);
        assert!(
            result.starts_with(
                "ERROR: invalid JSON arguments for `write_file`: the JSON ends too early"
            ),
            "{result}"
        );
        assert!(result.contains("You sent (the history keeps {} instead):\n{\"content\": \"xxx"));
        assert!(result.contains("more bytes omitted]"), "{result}");
        assert!(result.len() < QUOTED_ARGUMENTS + 500, "{}", result.len());
        assert!(result.ends_with("\nResend the call with the arguments as one JSON object"));
    }
}
