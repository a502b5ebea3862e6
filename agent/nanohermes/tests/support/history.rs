//! The history invariant, checked on every request the mock records and on
//! the agent's own history after a run (DESIGN invariant 1):
//!
//! - the first message is the system prompt, then a user message;
//! - an assistant message has `content` null or a non-empty string, and
//!   `tool_calls` only when non-empty, each with an id unique in the whole
//!   history, `type: function`, a name, and `arguments` that is a string
//!   holding one JSON object (`"{}"` when there were none; never empty,
//!   truncated, invalid, an array, a string or a number: strict servers
//!   answer HTTP 500 to those);
//! - the assistant's calls are answered right after it by exactly one
//!   `{role: tool, tool_call_id, content}` each, in call order;
//! - no other tool message exists.
//!
//! [`assert_wire_requests_valid`] checks recorded requests of any wire: each
//! went to its wire's path, the strict mock refused none, and each history
//! answers every call exactly once, in the wire's own shape.

use std::collections::HashSet;

use serde_json::Value;

use super::mock_model::{Recorded, WireApi};

/// Panics with the offending position when `messages` breaks the invariant.
pub fn assert_history_valid(messages: &[Value]) {
    assert_eq!(
        messages.first().map(|m| &m["role"]),
        Some(&Value::from("system")),
        "first message: {messages:#?}"
    );
    assert_eq!(
        messages.get(1).map(|m| &m["role"]),
        Some(&Value::from("user")),
        "second message: {messages:#?}"
    );
    let mut ids = HashSet::new();
    let mut index = 1;
    while index < messages.len() {
        let message = &messages[index];
        match message["role"].as_str() {
            Some("user") | Some("system") => index += 1,
            Some("assistant") => {
                match &message["content"] {
                    Value::Null => {}
                    Value::String(text) => {
                        assert!(!text.is_empty(), "message {index}: empty string content")
                    }
                    other => panic!("message {index}: content {other}"),
                }
                let Some(calls) = message.get("tool_calls") else {
                    index += 1;
                    continue;
                };
                let calls = calls
                    .as_array()
                    .unwrap_or_else(|| panic!("message {index}: tool_calls not an array"));
                assert!(
                    !calls.is_empty(),
                    "message {index}: empty tool_calls must be absent"
                );
                for (offset, call) in calls.iter().enumerate() {
                    let id = call["id"].as_str().unwrap_or_default();
                    assert!(!id.is_empty(), "message {index}: call {offset} has no id");
                    assert!(
                        ids.insert(id.to_owned()),
                        "message {index}: call id {id} is used twice in the history: {messages:#?}"
                    );
                    assert_eq!(call["type"], "function", "message {index}: call {offset}");
                    assert!(
                        call["function"]["name"]
                            .as_str()
                            .is_some_and(|n| !n.is_empty()),
                        "message {index}: call {offset} has no name"
                    );
                    assert_arguments_are_an_object(&call["function"]["arguments"], index, offset);
                    let answer = messages.get(index + 1 + offset).unwrap_or_else(|| {
                        panic!("message {index}: call {id} is not answered: {messages:#?}")
                    });
                    assert_eq!(
                        answer["role"],
                        "tool",
                        "message {}: expected the answer to {id}",
                        index + 1 + offset
                    );
                    assert_eq!(
                        answer["tool_call_id"],
                        id,
                        "message {}: answers out of order",
                        index + 1 + offset
                    );
                    assert!(
                        answer["content"].is_string(),
                        "message {}: content not a string",
                        index + 1 + offset
                    );
                    assert_eq!(
                        answer.as_object().map(|o| o.len()),
                        Some(3),
                        "tool message has extra fields: {answer}"
                    );
                }
                index += 1 + calls.len();
            }
            Some("tool") => panic!("message {index}: tool message answers no call: {messages:#?}"),
            other => panic!("message {index}: unknown role {other:?}"),
        }
    }
}

/// `arguments` must be a string that parses as one JSON object.
fn assert_arguments_are_an_object(arguments: &Value, index: usize, offset: usize) {
    let Some(text) = arguments.as_str() else {
        panic!("message {index}: call {offset} has arguments {arguments}, not a string");
    };
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(_)) => {}
        Ok(other) => panic!(
            "message {index}: call {offset} has arguments {text:?}, which is {other:?}, not a JSON object"
        ),
        Err(e) => panic!(
            "message {index}: call {offset} has arguments {text:?}, which is not JSON ({e}); an empty or broken one must be recorded as \"{{}}\""
        ),
    }
}

/// Checks the body of every recorded request: the article's fields, tools
/// with `tool_choice` only together, and the history invariant.
pub fn assert_requests_valid(requests: &[Recorded]) {
    assert!(!requests.is_empty(), "the mock received no request");
    for (number, request) in requests.iter().enumerate() {
        let body = &request.body;
        assert!(
            request.path.ends_with("/chat/completions"),
            "request {number}: path {}",
            request.path
        );
        assert_eq!(body["temperature"], 0.0, "request {number}");
        assert_eq!(body["max_tokens"], 4096, "request {number}");
        if body["stream"] == true {
            assert_eq!(
                body["stream_options"],
                serde_json::json!({"include_usage": true}),
                "request {number}"
            );
        }
        match body.get("tools") {
            Some(tools) => {
                assert!(
                    tools.as_array().is_some_and(|t| !t.is_empty()),
                    "request {number}: empty tools"
                );
                assert_eq!(body["tool_choice"], "auto", "request {number}");
            }
            None => assert!(
                body.get("tool_choice").is_none(),
                "request {number}: tool_choice without tools"
            ),
        }
        assert!(
            body.get("reasoning_effort").is_none(),
            "request {number}: reasoning_effort without thinking"
        );
        assert_history_valid(request.messages());
    }
}

/// Checks every recorded request as sent on `wire`: its path, that the
/// strict mock refused none of them (so reasoning came back verbatim where
/// the provider wants it), and the call invariant in the wire's own shape:
/// chat as [`assert_history_valid`]; responses: each `function_call`
/// answered by one `function_call_output` after it, ids unique; messages:
/// each `tool_use` answered by one `tool_result` in the next message, ids
/// unique.
pub fn assert_wire_requests_valid(requests: &[Recorded], wire: WireApi) {
    assert!(!requests.is_empty(), "the mock received no request");
    for (number, request) in requests.iter().enumerate() {
        assert_eq!(
            request.wire,
            Some(wire),
            "request {number}: path {}",
            request.path
        );
        assert!(
            request.refused.is_none(),
            "request {number} was refused: {}\n{:#}",
            request.refused.as_deref().unwrap_or_default(),
            request.body
        );
        match wire {
            WireApi::Chat => assert_history_valid(request.messages()),
            WireApi::Responses => assert_input_valid(request.input(), number),
            WireApi::Messages => assert_anthropic_valid(request.messages(), number),
        }
    }
}

/// Every check a request sent on `wire` must pass: the wire's own
/// ([`assert_wire_requests_valid`]), then the history invariant on what
/// the model was sent, in the transcript's shape ([`Recorded::history`]);
/// on chat also the body's fields ([`assert_requests_valid`]).
pub fn assert_requests_valid_on(requests: &[Recorded], wire: WireApi) {
    assert_wire_requests_valid(requests, wire);
    match wire {
        WireApi::Chat => assert_requests_valid(requests),
        _ => {
            for request in requests {
                assert_history_valid(&request.history());
            }
        }
    }
}

/// Responses input: each call answered once, after it; no stray output.
fn assert_input_valid(input: &[Value], number: usize) {
    let mut calls = HashSet::new();
    let mut answered = HashSet::new();
    for (index, item) in input.iter().enumerate() {
        match item["type"].as_str() {
            Some("function_call") => {
                let id = item["call_id"].as_str().unwrap_or_default();
                assert!(!id.is_empty(), "request {number} item {index}: no call_id");
                assert!(
                    calls.insert(id.to_owned()),
                    "request {number} item {index}: call id {id} used twice"
                );
                let arguments = item["arguments"].as_str().unwrap_or_default();
                assert!(
                    serde_json::from_str::<Value>(arguments).is_ok_and(|v| v.is_object()),
                    "request {number} item {index}: arguments {arguments:?}"
                );
            }
            Some("function_call_output") => {
                let id = item["call_id"].as_str().unwrap_or_default();
                assert!(
                    calls.contains(id),
                    "request {number} item {index}: output before its call {id}"
                );
                assert!(
                    answered.insert(id.to_owned()),
                    "request {number} item {index}: call {id} answered twice"
                );
                assert!(item["output"].is_string(), "request {number} item {index}");
            }
            _ => {}
        }
    }
    assert_eq!(calls, answered, "request {number}: unanswered calls");
}

/// Anthropic messages: each `tool_use` answered in the next message, once.
fn assert_anthropic_valid(messages: &[Value], number: usize) {
    let mut ids = HashSet::new();
    for (index, message) in messages.iter().enumerate() {
        let uses: Vec<&str> = message["content"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|b| b["type"] == "tool_use")
            .filter_map(|b| b["id"].as_str())
            .collect();
        if uses.is_empty() {
            continue;
        }
        assert_eq!(
            message["role"], "assistant",
            "request {number} message {index}"
        );
        let results: Vec<&str> = messages
            .get(index + 1)
            .and_then(|next| next["content"].as_array())
            .into_iter()
            .flatten()
            .filter(|b| b["type"] == "tool_result")
            .filter_map(|b| b["tool_use_id"].as_str())
            .collect();
        assert_eq!(
            results, uses,
            "request {number} message {index}: answers in call order"
        );
        for id in uses {
            assert!(
                ids.insert(id.to_owned()),
                "request {number}: tool_use id {id} used twice"
            );
        }
    }
}
