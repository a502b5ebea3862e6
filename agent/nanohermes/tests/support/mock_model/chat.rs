//! A scripted turn as OpenAI chat completions streams it: a role frame,
//! `reasoning_content` deltas for a thought (DeepSeek, vLLM, llama.cpp),
//! `content` (or `refusal`) deltas, per call a first delta with index, id,
//! type and name then one delta per argument piece, the finish reason
//! (`stop`, `tool_calls`, `length`), a usage frame and `[DONE]`. Each frame
//! is written in two halves ([`super::sse`]).

use serde_json::{Value, json};

use super::{
    Figures, Issued, RenderContext, ScriptedCall, Stop, Turn, chunk, sse, sse_without_done,
    usage_frame,
};

/// The stream's pieces, and the thought handed out with each call.
pub fn render(turn: &Turn, context: &RenderContext) -> (Vec<Vec<u8>>, Vec<(String, Issued)>) {
    let mut frames = vec![chunk(json!({"role":"assistant","content":null}), None)];
    frames.extend(
        turn.thought
            .iter()
            .map(|piece| chunk(json!({"reasoning_content":piece}), None)),
    );
    let key = if turn.stop == Some(Stop::Refusal) {
        "refusal"
    } else {
        "content"
    };
    frames.extend(
        turn.text
            .iter()
            .map(|piece| chunk(json!({key:piece}), None)),
    );
    frames.extend(call_frames(&turn.calls));
    if turn.cut_short {
        let super::Reply::Sse(pieces) = sse_without_done(&frames) else {
            unreachable!()
        };
        return (pieces, issued(turn));
    }
    let finish = if turn.cut_off {
        "length"
    } else if turn.calls.is_empty() {
        "stop"
    } else {
        "tool_calls"
    };
    frames.push(chunk(json!({}), Some(finish)));
    frames.push(usage(&context.figures));
    let super::Reply::Sse(pieces) = sse(&frames) else {
        unreachable!()
    };
    (pieces, issued(turn))
}

/// The thought handed out with each call that has an id.
fn issued(turn: &Turn) -> Vec<(String, Issued)> {
    let thought = turn.thought.concat();
    if thought.is_empty() {
        return vec![];
    }
    turn.calls
        .iter()
        .filter(|call| !call.id.is_empty())
        .map(|call| (call.id.clone(), Issued::Chat(thought.clone())))
        .collect()
}

/// Per call a first delta (index, id unless empty, type, name) and one
/// delta per argument piece.
pub fn call_frames(calls: &[ScriptedCall]) -> Vec<Value> {
    let mut frames = Vec::new();
    for (index, call) in calls.iter().enumerate() {
        let mut first = json!({"index":index,"type":"function",
                               "function":{"name":call.name,"arguments":""}});
        if !call.id.is_empty() {
            first["id"] = call.id.as_str().into();
        }
        frames.push(chunk(json!({"tool_calls":[first]}), None));
        for piece in &call.pieces {
            frames.push(chunk(
                json!({"tool_calls":[{"index":index,"function":{"arguments":piece}}]}),
                None,
            ));
        }
    }
    frames
}

/// The usage frame: the fixed one the older tests expect, or one with
/// OpenAI's cache and reasoning details.
fn usage(figures: &Figures) -> Value {
    if *figures == Figures::default() {
        return usage_frame();
    }
    json!({"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[],
           "usage":{"prompt_tokens":figures.input,"completion_tokens":figures.output,
                    "total_tokens":figures.input + figures.output,
                    "prompt_tokens_details":{"cached_tokens":figures.cached},
                    "completion_tokens_details":{"reasoning_tokens":figures.reasoning}}})
}
