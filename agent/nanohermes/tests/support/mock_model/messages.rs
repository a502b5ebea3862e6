//! A scripted turn as the Anthropic Messages API streams it: named events,
//! `message_start` with the input usage (`input_tokens` apart from
//! `cache_read_input_tokens` and `cache_creation_input_tokens`), `ping`s in
//! between, per block `content_block_start`, its deltas and
//! `content_block_stop` — a thought as a `thinking` block (`thinking_delta`s
//! then a `signature_delta`, `sig_N_<hash>`), text as `text_delta`s, a call
//! as a `tool_use` block whose `input_json_delta`s split the JSON mid-way —
//! then `message_delta` with the stop reason (`tool_use`, `end_turn`,
//! `max_tokens`, `pause_turn`, `refusal`) and the output tokens, and
//! `message_stop`.

use serde_json::{Value, json};

use super::{Issued, RenderContext, Stop, Turn, hash, named_events};

/// The stream's pieces, and the thinking block handed out with each call.
pub fn render(turn: &Turn, context: &RenderContext) -> (Vec<Vec<u8>>, Vec<(String, Issued)>) {
    let serial = context.serial;
    let figures = &context.figures;
    let uncached = figures
        .input
        .saturating_sub(figures.cached)
        .saturating_sub(figures.cache_write);
    let mut events: Vec<Value> = vec![
        json!({"type":"message_start","message":{"id":format!("msg_{serial}"),"type":"message",
            "role":"assistant","content":[],"model":"mock","stop_reason":null,"stop_sequence":null,
            "usage":{"input_tokens":uncached,"cache_creation_input_tokens":figures.cache_write,
                     "cache_read_input_tokens":figures.cached,"output_tokens":1}}}),
        json!({"type":"ping"}),
    ];
    let mut issued = Vec::new();
    let mut index = 0;

    let thought = turn.thought.concat();
    if !turn.thought.is_empty() {
        let signature = format!("sig_{serial}_{}", hash(&thought));
        events.push(json!({"type":"content_block_start","index":index,
            "content_block":{"type":"thinking","thinking":"","signature":""}}));
        for piece in &turn.thought {
            events.push(json!({"type":"content_block_delta","index":index,
                "delta":{"type":"thinking_delta","thinking":piece}}));
        }
        events.push(json!({"type":"content_block_delta","index":index,
            "delta":{"type":"signature_delta","signature":signature}}));
        events.push(json!({"type":"content_block_stop","index":index}));
        events.push(json!({"type":"ping"}));
        index += 1;
        for (number, call) in turn.calls.iter().enumerate() {
            issued.push((
                tool_use_id(&call.id, serial, number),
                Issued::Messages {
                    thinking: thought.clone(),
                    signature: signature.clone(),
                },
            ));
        }
        // A turn without calls signed its thinking too: Anthropic accepts
        // it back (a resumed session sends its last answer's thinking).
        if turn.calls.is_empty() {
            issued.push((
                format!("turn_{serial}"),
                Issued::Messages {
                    thinking: thought.clone(),
                    signature: signature.clone(),
                },
            ));
        }
    }

    if !turn.text.is_empty() {
        events.push(json!({"type":"content_block_start","index":index,
            "content_block":{"type":"text","text":""}}));
        for piece in &turn.text {
            events.push(json!({"type":"content_block_delta","index":index,
                "delta":{"type":"text_delta","text":piece}}));
        }
        events.push(json!({"type":"content_block_stop","index":index}));
        index += 1;
    }

    for (number, call) in turn.calls.iter().enumerate() {
        events.push(json!({"type":"content_block_start","index":index,
            "content_block":{"type":"tool_use","id":tool_use_id(&call.id, serial, number),
                             "name":call.name,"input":{}}}));
        for piece in mid_json(&call.pieces) {
            events.push(json!({"type":"content_block_delta","index":index,
                "delta":{"type":"input_json_delta","partial_json":piece}}));
        }
        events.push(json!({"type":"content_block_stop","index":index}));
        index += 1;
    }

    let stop_reason = if turn.cut_off {
        "max_tokens"
    } else {
        match turn.stop {
            Some(Stop::PauseTurn) => "pause_turn",
            Some(Stop::Refusal) => "refusal",
            None if !turn.calls.is_empty() => "tool_use",
            None => "end_turn",
        }
    };
    if turn.cut_short {
        // The connection ended before the message did.
        return (named_events(&events), issued);
    }
    events.push(json!({"type":"message_delta",
        "delta":{"stop_reason":stop_reason,"stop_sequence":null},
        "usage":{"output_tokens":figures.output}}));
    events.push(json!({"type":"message_stop"}));
    (named_events(&events), issued)
}

/// The call's id, or one made up (Anthropic always sends one).
fn tool_use_id(id: &str, serial: u64, number: usize) -> String {
    if id.is_empty() {
        format!("toolu_{serial}_{number}")
    } else {
        id.to_owned()
    }
}

/// The argument pieces, a lone one split in two mid-way (Anthropic's
/// `partial_json` is cut anywhere, never at value boundaries).
fn mid_json(pieces: &[String]) -> Vec<String> {
    match pieces {
        [one] if one.chars().count() > 1 => {
            let middle = one
                .char_indices()
                .nth(one.chars().count() / 2)
                .map_or(0, |(at, _)| at);
            vec![one[..middle].to_owned(), one[middle..].to_owned()]
        }
        _ => pieces.to_vec(),
    }
}
