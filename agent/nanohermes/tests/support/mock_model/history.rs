//! A request's history in the chat shape of the transcript, whatever wire
//! sent it: `{role: system|user, content}`, `{role: assistant, content:
//! null|text, tool_calls?: [{id, type: "function", function: {name,
//! arguments: "<JSON text>"}}]}`, `{role: tool, tool_call_id, content}`.
//! Tests assert on what the model was sent once, in this shape, and the
//! same assertion holds on every wire.
//!
//! The conversion undoes what the wires do at the edge (agent/llm's
//! `wire/responses.rs` and `wire/messages.rs`), and nothing more:
//!
//! - Responses: `instructions` is the system message, a `developer`
//!   message a later system message, `function_call` items join the
//!   assistant message before them (a `reasoning` item starts a new
//!   assistant turn), a `function_call_output` is a tool message;
//!   reasoning items themselves are left out (the chat shape has no place
//!   for them).
//! - Messages: the top-level `system` is the system message; a user
//!   message is split back into its blocks — each `tool_result` a tool
//!   message, each text block a user message, or a system message when it
//!   is a `<system-note>` — since the wire merges consecutive messages of
//!   one role; a `tool_use` is a call whose `input` object is written back
//!   as JSON text (the transcript's arguments are that object's text);
//!   thinking blocks are left out. Tool-call ids stay as the wire sent
//!   them: a valid id (`call_w`) is unchanged, an invalid one is the
//!   wire's mapped form.

use serde_json::{Map, Value, json};

use super::WireApi;

/// The wire's wrapping of a later system message (agent/llm's
/// `wire/messages.rs`, `SYSTEM_NOTE`).
const SYSTEM_NOTE: (&str, &str) = ("<system-note>\n", "\n</system-note>");

/// `body` (a request sent on `wire`) as the chat-shaped history.
pub fn of(wire: WireApi, body: &Value) -> Vec<Value> {
    match wire {
        WireApi::Chat => list(&body["messages"]).to_vec(),
        WireApi::Responses => from_responses(body),
        WireApi::Messages => from_messages(body),
    }
}

fn list(value: &Value) -> &[Value] {
    value.as_array().map(Vec::as_slice).unwrap_or_default()
}

/// A content's text: a string, or the text of its parts or blocks.
fn text_of(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|part| {
                part.get("text")
                    .or_else(|| part.get("refusal"))
                    .and_then(Value::as_str)
            })
            .collect(),
        _ => String::new(),
    }
}

fn assistant(content: Option<String>) -> Value {
    json!({"role": "assistant", "content": content})
}

fn call(id: &Value, name: &Value, arguments: String) -> Value {
    json!({"id": id, "type": "function", "function": {"name": name, "arguments": arguments}})
}

/// Adds `call` to the assistant message `message`.
fn push_call(message: &mut Value, call: Value) {
    if let Value::Object(map) = message {
        map.entry("tool_calls")
            .or_insert_with(|| Value::Array(Vec::new()))
            .as_array_mut()
            .expect("tool_calls is an array")
            .push(call);
    }
}

fn from_responses(body: &Value) -> Vec<Value> {
    let mut history = Vec::new();
    if let Some(instructions) = body.get("instructions").and_then(Value::as_str) {
        history.push(json!({"role": "system", "content": instructions}));
    }
    let input = match &body["input"] {
        Value::String(text) => {
            history.push(json!({"role": "user", "content": text}));
            return history;
        }
        other => list(other),
    };
    // Whether the last message of `history` is the assistant turn the
    // next `function_call` belongs to.
    let mut open = false;
    for item in input {
        let kind = item["type"]
            .as_str()
            .or_else(|| item.get("role").map(|_| "message"))
            .unwrap_or_default();
        match kind {
            "message" => {
                let text = text_of(&item["content"]);
                match item["role"].as_str().unwrap_or_default() {
                    "assistant" => {
                        history.push(assistant((!text.is_empty()).then_some(text)));
                        open = true;
                    }
                    "developer" | "system" => {
                        history.push(json!({"role": "system", "content": text}));
                        open = false;
                    }
                    _ => {
                        history.push(json!({"role": "user", "content": text}));
                        open = false;
                    }
                }
            }
            // Reasoning opens the turn it goes with.
            "reasoning" => open = false,
            "function_call" => {
                if !open {
                    history.push(assistant(None));
                    open = true;
                }
                let arguments = match &item["arguments"] {
                    Value::String(text) => text.clone(),
                    other => other.to_string(),
                };
                let call = call(&item["call_id"], &item["name"], arguments);
                push_call(history.last_mut().expect("an assistant message"), call);
            }
            "function_call_output" => {
                history.push(json!({"role": "tool", "tool_call_id": item["call_id"],
                                    "content": text_of(&item["output"])}));
                open = false;
            }
            _ => open = false,
        }
    }
    history
}

fn from_messages(body: &Value) -> Vec<Value> {
    let mut history = Vec::new();
    match &body["system"] {
        Value::Null => {}
        system => history.push(json!({"role": "system", "content": text_of(system)})),
    }
    for message in list(&body["messages"]) {
        let blocks: Vec<Value> = match &message["content"] {
            Value::String(text) => vec![json!({"type": "text", "text": text})],
            other => list(other).to_vec(),
        };
        if message["role"] == "assistant" {
            let text: String = blocks
                .iter()
                .filter(|b| b["type"] == "text")
                .filter_map(|b| b["text"].as_str())
                .collect();
            let mut turn = assistant((!text.is_empty()).then_some(text));
            for block in blocks.iter().filter(|b| b["type"] == "tool_use") {
                let input = match &block["input"] {
                    Value::Null => Value::Object(Map::new()),
                    other => other.clone(),
                };
                push_call(
                    &mut turn,
                    call(&block["id"], &block["name"], input.to_string()),
                );
            }
            history.push(turn);
            continue;
        }
        for block in blocks {
            match block["type"].as_str().unwrap_or_default() {
                "tool_result" => history.push(json!({"role": "tool",
                    "tool_call_id": block["tool_use_id"],
                    "content": text_of(&block["content"])})),
                "text" => {
                    let text = block["text"].as_str().unwrap_or_default();
                    let note = text
                        .strip_prefix(SYSTEM_NOTE.0)
                        .and_then(|t| t.strip_suffix(SYSTEM_NOTE.1));
                    history.push(match note {
                        Some(note) => json!({"role": "system", "content": note}),
                        None => json!({"role": "user", "content": text}),
                    });
                }
                _ => {}
            }
        }
    }
    history
}
