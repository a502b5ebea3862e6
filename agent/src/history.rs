//! The shape of the messages the agent keeps and resends every turn.
//!
//! The history is resent whole on every request, so one malformed message
//! turns into an HTTP 400 on every later turn. The rules (seed article):
//!
//! - an assistant message has `content: null` when the model wrote no text
//!   (some servers refuse an empty string next to tool calls);
//! - `tool_calls` is present only when there are calls, and empty
//!   arguments are written as `"{}"`;
//! - a tool result is exactly `{role: "tool", tool_call_id, content}`.

use serde_json::{Value, json};

use crate::llm::AssistantTurn;

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
    if turn.tool_calls.is_empty() {
        return json!({ "role": "assistant", "content": content });
    }
    let calls: Vec<Value> = turn
        .tool_calls
        .iter()
        .map(|call| {
            let arguments = if call.arguments.trim().is_empty() {
                "{}"
            } else {
                call.arguments.as_str()
            };
            json!({
                "id": call.id,
                "type": "function",
                "function": { "name": call.name, "arguments": arguments },
            })
        })
        .collect();
    json!({ "role": "assistant", "content": content, "tool_calls": calls })
}

/// The tool message answering the call `tool_call_id`.
pub fn tool_message(tool_call_id: &str, content: &str) -> Value {
    json!({ "role": "tool", "tool_call_id": tool_call_id, "content": content })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::ToolCall;

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
}
