//! The rules real providers enforce on a request, each refused with the
//! provider's status and error body ([`Refusal`]). [`check`] runs the
//! rules of the request's wire; the mock refuses before using a script
//! step. The reasoning rules compare with what the mock handed out
//! ([`Issued`], by call id): reasoning must come back verbatim with its
//! calls, and none may be made up.
//!
//! - chat, `strict` (vLLM, llama.cpp): tool-call `arguments` that are not
//!   one JSON object → 500;
//! - chat, `thinking` (DeepSeek): a tool-call turn without the
//!   `reasoning_content` it was given → 400;
//! - responses (OpenAI, `store: false`): `store` other than `false`; with
//!   `thinking` (a reasoning model) no `include:
//!   ["reasoning.encrypted_content"]`; with `plain_model` that `include`
//!   (models without reasoning refuse it); an unknown input item
//!   type, a `function_call_output` before its `function_call`, a
//!   `function_call` without its output, a
//!   `function_call` whose turn had a reasoning item without that item
//!   (same id and `encrypted_content`) before it in the turn, a reasoning
//!   item the mock did not hand out or whose content was altered, a
//!   reasoning item not followed by an output item → 400;
//! - messages (Anthropic): no `x-api-key` → 401; no `anthropic-version`,
//!   no `max_tokens`, roles not alternating from `user`, empty content or
//!   text blocks, a `tool_use` id not matching `^[a-zA-Z0-9_-]+$`, a
//!   `tool_use` not answered by a `tool_result` opening the next message (or a
//!   `tool_result` answering none), a tool turn whose thinking block is
//!   missing, a thinking block whose signature was not handed out for its
//!   text, more than 4 `cache_control` breakpoints → 400.

use std::collections::{HashMap, HashSet};

use serde_json::{Value, json};

use super::{Issued, Options, WireApi, arguments_are_objects, header};

/// The answer to a request a rule refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The HTTP status.
    pub code: u16,
    /// The provider's error body.
    pub body: String,
}

type Issues = HashMap<(WireApi, String), Issued>;

/// Runs `wire`'s rules on a request.
pub fn check(
    wire: WireApi,
    headers: &[(String, String)],
    body: &Value,
    options: Options,
    issued: &Issues,
) -> Result<(), Refusal> {
    match wire {
        WireApi::Chat => check_chat(body, options, issued),
        WireApi::Responses => check_responses(body, options, issued),
        WireApi::Messages => check_messages(headers, body, issued),
    }
}

fn openai(code: u16, message: String, param: Option<&str>) -> Refusal {
    Refusal {
        code,
        body: json!({"error":{"message":message,"type":"invalid_request_error",
                              "param":param,"code":null}})
        .to_string(),
    }
}

fn anthropic(code: u16, kind: &str, message: String) -> Refusal {
    Refusal {
        code,
        body: json!({"type":"error","error":{"type":kind,"message":message}}).to_string(),
    }
}

fn invalid(message: String) -> Refusal {
    anthropic(400, "invalid_request_error", message)
}

fn list(value: &Value) -> &[Value] {
    value.as_array().map(Vec::as_slice).unwrap_or_default()
}

/// Chat: the rules `options` turn on.
pub fn check_chat(body: &Value, options: Options, issued: &Issues) -> Result<(), Refusal> {
    let messages = list(&body["messages"]);
    if options.strict && !arguments_are_objects(messages) {
        // llama.cpp's answer to unparsable arguments in the history.
        return Err(Refusal {
            code: 500,
            body: r#"{"error":{"code":500,"message":"Failed to parse tool call arguments as JSON","type":"server_error"}}"#.into(),
        });
    }
    if options.thinking {
        for message in messages.iter().filter(|m| m["role"] == "assistant") {
            for call in list(&message["tool_calls"]) {
                let id = call["id"].as_str().unwrap_or_default();
                if let Some(Issued::Chat(thought)) = issued.get(&(WireApi::Chat, id.to_owned()))
                    && message["reasoning_content"].as_str() != Some(thought.as_str())
                {
                    return Err(openai(
                        400,
                        "The `reasoning_content` in the thinking mode must be passed back to the API.".into(),
                        None,
                    ));
                }
            }
        }
    }
    Ok(())
}

/// Responses with `store: false`: the rules of the module doc.
pub fn check_responses(body: &Value, options: Options, issued: &Issues) -> Result<(), Refusal> {
    if body.get("store") != Some(&Value::Bool(false)) {
        return Err(openai(
            400,
            format!(
                "`store` must be false on this endpoint (zero data retention), got {}.",
                body.get("store").unwrap_or(&Value::Null)
            ),
            Some("store"),
        ));
    }
    let encrypted = list(&body["include"])
        .iter()
        .any(|i| i == "reasoning.encrypted_content");
    if options.thinking && !encrypted {
        return Err(openai(
            400,
            "With `store: false`, reasoning items can only be sent back with `include: [\"reasoning.encrypted_content\"]`.".into(),
            Some("include"),
        ));
    }
    if options.plain_model && encrypted {
        // What a model without reasoning answers.
        return Err(openai(
            400,
            "Encrypted content is not supported with this model.".into(),
            Some("include"),
        ));
    }
    let known: HashMap<&str, &str> = issued
        .iter()
        .filter_map(|((wire, _), what)| match (wire, what) {
            (WireApi::Responses, Issued::Responses { id, encrypted }) => {
                Some((id.as_str(), encrypted.as_str()))
            }
            _ => None,
        })
        .collect();
    let input = match &body["input"] {
        Value::String(_) => return Ok(()),
        other => list(other),
    };
    let mut calls = HashSet::new();
    let mut answered = HashSet::new();
    let mut order = Vec::new();
    // The reasoning items of the turn in progress (since the last user
    // message or tool output).
    let mut turn: HashSet<(String, String)> = HashSet::new();
    for (index, item) in input.iter().enumerate() {
        let kind = item["type"]
            .as_str()
            .or_else(|| item.get("role").map(|_| "message"))
            .unwrap_or_default();
        match kind {
            "message" => {
                if item["role"] != "assistant" {
                    turn.clear();
                }
            }
            "reasoning" => {
                let id = item["id"].as_str().unwrap_or_default();
                let encrypted = item["encrypted_content"].as_str().unwrap_or_default();
                if known.get(id) != Some(&encrypted) {
                    return Err(openai(
                        400,
                        format!("The encrypted content for item {id} could not be verified."),
                        Some(&format!("input[{index}].encrypted_content")),
                    ));
                }
                let next = input.get(index + 1);
                let followed = next.is_some_and(|n| {
                    n["type"] == "function_call"
                        || (n["type"] == "message" && n["role"] == "assistant")
                        || (n.get("type").is_none() && n["role"] == "assistant")
                        || n["type"] == "reasoning"
                });
                if !followed {
                    return Err(openai(
                        400,
                        format!(
                            "Item '{id}' of type 'reasoning' was provided without its required following item."
                        ),
                        Some("input"),
                    ));
                }
                turn.insert((id.to_owned(), encrypted.to_owned()));
            }
            "function_call" => {
                let call_id = item["call_id"].as_str().unwrap_or_default().to_owned();
                if let Some(Issued::Responses { id, encrypted }) =
                    issued.get(&(WireApi::Responses, call_id.clone()))
                    && !turn.contains(&(id.clone(), encrypted.clone()))
                {
                    let name = item["id"].as_str().unwrap_or(&call_id);
                    return Err(openai(
                        400,
                        format!(
                            "Item '{name}' of type 'function_call' was provided without its required 'reasoning' item: '{id}'."
                        ),
                        Some("input"),
                    ));
                }
                order.push(call_id.clone());
                calls.insert(call_id);
            }
            "function_call_output" => {
                let call_id = item["call_id"].as_str().unwrap_or_default();
                if !calls.contains(call_id) {
                    return Err(openai(
                        400,
                        format!(
                            "No tool call found for function call output with call_id {call_id}."
                        ),
                        Some("input"),
                    ));
                }
                answered.insert(call_id.to_owned());
                turn.clear();
            }
            other => {
                return Err(openai(
                    400,
                    format!(
                        "Invalid value: '{other}'. Supported values are: 'message', 'reasoning', 'function_call' and 'function_call_output'."
                    ),
                    Some(&format!("input[{index}].type")),
                ));
            }
        }
    }
    if let Some(open) = order.iter().find(|id| !answered.contains(*id)) {
        return Err(openai(
            400,
            format!("No tool output found for function call {open}."),
            Some("input"),
        ));
    }
    Ok(())
}

/// Messages: the rules of the module doc.
pub fn check_messages(
    headers: &[(String, String)],
    body: &Value,
    issued: &Issues,
) -> Result<(), Refusal> {
    if header(headers, "x-api-key").is_none_or(str::is_empty) {
        return Err(anthropic(
            401,
            "authentication_error",
            "x-api-key header is required".into(),
        ));
    }
    if header(headers, "anthropic-version").is_none() {
        return Err(invalid("anthropic-version: header is required".into()));
    }
    if body.get("max_tokens").is_none_or(|m| !m.is_u64()) {
        return Err(invalid("max_tokens: Field required".into()));
    }
    let signatures: HashSet<(&str, &str)> = issued
        .iter()
        .filter_map(|((wire, _), what)| match (wire, what) {
            (
                WireApi::Messages,
                Issued::Messages {
                    thinking,
                    signature,
                },
            ) => Some((thinking.as_str(), signature.as_str())),
            _ => None,
        })
        .collect();
    let mut breakpoints = list(&body["tools"])
        .iter()
        .filter(|t| t.get("cache_control").is_some())
        .count();
    for (index, block) in list(&body["system"]).iter().enumerate() {
        if block.get("cache_control").is_some() {
            breakpoints += 1;
        }
        if block["type"] == "text" && block["text"].as_str().is_none_or(str::is_empty) {
            return Err(invalid(format!(
                "system.{index}: text content blocks must be non-empty"
            )));
        }
    }
    let messages = list(&body["messages"]);
    let mut previous_role = "";
    let mut open_uses: Vec<String> = Vec::new();
    for (index, message) in messages.iter().enumerate() {
        let role = message["role"].as_str().unwrap_or_default();
        if index == 0 && role != "user" {
            return Err(invalid(
                "messages: first message must use the \"user\" role".into(),
            ));
        }
        if role == previous_role {
            return Err(invalid(format!(
                "messages: roles must alternate between \"user\" and \"assistant\", but found multiple \"{role}\" roles in a row"
            )));
        }
        if role != "user" && role != "assistant" {
            return Err(invalid(format!(
                "messages.{index}.role: Input should be 'user' or 'assistant'"
            )));
        }
        previous_role = role;
        let blocks: Vec<Value> = match &message["content"] {
            Value::String(text) if !text.is_empty() => vec![json!({"type":"text","text":text})],
            Value::Array(blocks) if !blocks.is_empty() => blocks.clone(),
            _ => {
                return Err(invalid(format!(
                    "messages.{index}: all messages must have non-empty content except for the optional final assistant message"
                )));
            }
        };
        // The uses the previous assistant message left open must all be
        // answered here.
        if !open_uses.is_empty() {
            // Only the results that open the message count: Anthropic
            // wants them before any other content.
            let answered: HashSet<&str> = blocks
                .iter()
                .take_while(|b| b["type"] == "tool_result")
                .filter_map(|b| b["tool_use_id"].as_str())
                .collect();
            let missing: Vec<&str> = open_uses
                .iter()
                .map(String::as_str)
                .filter(|id| !answered.contains(id))
                .collect();
            if role != "user" || !missing.is_empty() {
                return Err(invalid(format!(
                    "messages.{}: `tool_use` ids were found without `tool_result` blocks immediately after: {}. Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
                    index - 1,
                    missing.join(", ")
                )));
            }
        }
        let mut uses = Vec::new();
        for (number, block) in blocks.iter().enumerate() {
            if block.get("cache_control").is_some() {
                breakpoints += 1;
            }
            match block["type"].as_str().unwrap_or_default() {
                "text" if block["text"].as_str().is_none_or(str::is_empty) => {
                    return Err(invalid(format!(
                        "messages.{index}.content.{number}: text content blocks must be non-empty"
                    )));
                }
                "tool_use" => {
                    let id = block["id"].as_str().unwrap_or_default();
                    let well_formed = !id.is_empty()
                        && id
                            .bytes()
                            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
                    if !well_formed {
                        return Err(invalid(format!(
                            "messages.{index}.content.{number}.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'"
                        )));
                    }
                    uses.push(id.to_owned());
                }
                "tool_result" => {
                    let id = block["tool_use_id"].as_str().unwrap_or_default();
                    if !open_uses.iter().any(|open| open == id) {
                        return Err(invalid(format!(
                            "messages.{index}.content.{number}: unexpected `tool_use_id` found in `tool_result` blocks: {id}. Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
                        )));
                    }
                }
                "thinking" => {
                    let thinking = block["thinking"].as_str().unwrap_or_default();
                    let signature = block["signature"].as_str().unwrap_or_default();
                    if !signatures.contains(&(thinking, signature)) {
                        return Err(invalid(format!(
                            "messages.{index}.content.{number}: Invalid `signature` in `thinking` block"
                        )));
                    }
                }
                _ => {}
            }
        }
        // A tool turn the mock gave a thought must start with it.
        for id in &uses {
            if let Some(Issued::Messages {
                thinking,
                signature,
            }) = issued.get(&(WireApi::Messages, id.clone()))
            {
                let first = &blocks[0];
                let kept = first["type"] == "thinking"
                    && first["thinking"] == thinking.as_str()
                    && first["signature"] == signature.as_str();
                if !kept {
                    return Err(invalid(format!(
                        "messages.{index}.content.0.type: Expected `thinking` or `redacted_thinking`, but found `{}`. When `thinking` is enabled, a final `assistant` message must start with a thinking block (preceding the lastmost set of `tool_use` and `tool_result` blocks).",
                        first["type"].as_str().unwrap_or("?")
                    )));
                }
            }
        }
        open_uses = if role == "assistant" {
            uses
        } else {
            Vec::new()
        };
    }
    if breakpoints > 4 {
        return Err(invalid(format!(
            "A maximum of 4 blocks with cache_control may be provided. Found {breakpoints}."
        )));
    }
    Ok(())
}
