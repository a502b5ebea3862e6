//! A scripted turn as the OpenAI Responses API streams it: named events,
//! `response.created`; per output item `response.output_item.added`, its
//! deltas (`response.reasoning_summary_text.delta`,
//! `response.output_text.delta` or `response.refusal.delta`,
//! `response.function_call_arguments.delta`) and `response.output_item.done`
//! with the whole item (a reasoning item carries its summary and
//! `encrypted_content`, `enc_N_<hash>`); then `response.completed` with
//! the usage, or `response.incomplete` (`max_output_tokens`) where the
//! budget ran out, the cut item never done.

use serde_json::{Value, json};

use super::{Figures, Issued, RenderContext, Stop, Turn, hash, named_events};

/// The stream's pieces, and the reasoning item handed out with each call.
pub fn render(turn: &Turn, context: &RenderContext) -> (Vec<Vec<u8>>, Vec<(String, Issued)>) {
    let serial = context.serial;
    let response_id = format!("resp_{serial}");
    let mut events: Vec<Value> = vec![json!({"type":"response.created",
        "response":{"id":response_id,"object":"response","status":"in_progress","model":"mock","output":[]}})];
    let mut output: Vec<Value> = Vec::new();
    let mut issued = Vec::new();
    let mut cut = false;

    let thought = turn.thought.concat();
    if !turn.thought.is_empty() {
        let index = output.len();
        let id = format!("rs_{serial}");
        let encrypted = format!("enc_{serial}_{}", hash(&thought));
        events.push(
            json!({"type":"response.output_item.added","output_index":index,
            "item":{"type":"reasoning","id":id,"summary":[]}}),
        );
        events.push(
            json!({"type":"response.reasoning_summary_part.added","item_id":id,
            "output_index":index,"summary_index":0,"part":{"type":"summary_text","text":""}}),
        );
        for piece in &turn.thought {
            events.push(
                json!({"type":"response.reasoning_summary_text.delta","item_id":id,
                "output_index":index,"summary_index":0,"delta":piece}),
            );
        }
        events.push(
            json!({"type":"response.reasoning_summary_text.done","item_id":id,
            "output_index":index,"summary_index":0,"text":thought}),
        );
        events.push(
            json!({"type":"response.reasoning_summary_part.done","item_id":id,
            "output_index":index,"summary_index":0,"part":{"type":"summary_text","text":thought}}),
        );
        let item = json!({"type":"reasoning","id":id,
            "summary":[{"type":"summary_text","text":thought}],"encrypted_content":encrypted});
        events.push(json!({"type":"response.output_item.done","output_index":index,"item":item}));
        output.push(item);
        for (number, call) in turn.calls.iter().enumerate() {
            issued.push((
                call_id(&call.id, serial, number),
                Issued::Responses {
                    id: id.clone(),
                    encrypted: encrypted.clone(),
                },
            ));
        }
        // An answer's reasoning item is valid input later too (Codex sends
        // every earlier item back).
        if turn.calls.is_empty() {
            issued.push((
                format!("turn_{serial}"),
                Issued::Responses {
                    id: id.clone(),
                    encrypted: encrypted.clone(),
                },
            ));
        }
    }

    if !turn.text.is_empty() {
        let index = output.len();
        let id = format!("msg_{serial}");
        let refusal = turn.stop == Some(Stop::Refusal);
        let (part, delta) = if refusal {
            (
                json!({"type":"refusal","refusal":""}),
                "response.refusal.delta",
            )
        } else {
            (
                json!({"type":"output_text","text":"","annotations":[]}),
                "response.output_text.delta",
            )
        };
        events.push(json!({"type":"response.output_item.added","output_index":index,
            "item":{"type":"message","id":id,"status":"in_progress","role":"assistant","content":[]}}));
        events.push(json!({"type":"response.content_part.added","item_id":id,
            "output_index":index,"content_index":0,"part":part}));
        for piece in &turn.text {
            events.push(json!({"type":delta,"item_id":id,"output_index":index,
                "content_index":0,"delta":piece}));
        }
        let text = turn.text.concat();
        let whole_part = if refusal {
            json!({"type":"refusal","refusal":text})
        } else {
            json!({"type":"output_text","text":text,"annotations":[]})
        };
        if turn.cut_off && turn.calls.is_empty() {
            cut = true;
        } else {
            if refusal {
                events.push(json!({"type":"response.refusal.done","item_id":id,
                    "output_index":index,"content_index":0,"refusal":text}));
            } else {
                events.push(json!({"type":"response.output_text.done","item_id":id,
                    "output_index":index,"content_index":0,"text":text}));
            }
            events.push(json!({"type":"response.content_part.done","item_id":id,
                "output_index":index,"content_index":0,"part":whole_part}));
            let item = json!({"type":"message","id":id,"status":"completed","role":"assistant",
                "content":[whole_part]});
            events
                .push(json!({"type":"response.output_item.done","output_index":index,"item":item}));
            output.push(item);
        }
    }

    for (number, call) in turn.calls.iter().enumerate() {
        let index = output.len();
        let id = format!("fc_{serial}_{number}");
        let call_id = call_id(&call.id, serial, number);
        events.push(
            json!({"type":"response.output_item.added","output_index":index,
            "item":{"type":"function_call","id":id,"call_id":call_id,"name":call.name,
                    "arguments":"","status":"in_progress"}}),
        );
        for piece in &call.pieces {
            events.push(
                json!({"type":"response.function_call_arguments.delta","item_id":id,
                "output_index":index,"delta":piece}),
            );
        }
        if turn.cut_off && number + 1 == turn.calls.len() {
            // The budget ran out inside this call: never done.
            cut = true;
            break;
        }
        let arguments = call.pieces.concat();
        events.push(
            json!({"type":"response.function_call_arguments.done","item_id":id,
            "output_index":index,"arguments":arguments}),
        );
        let item = json!({"type":"function_call","id":id,"call_id":call_id,"name":call.name,
            "arguments":arguments,"status":"completed"});
        events.push(json!({"type":"response.output_item.done","output_index":index,"item":item}));
        output.push(item);
    }

    let mut response = json!({"id":response_id,"object":"response","model":"mock",
        "status": if cut { "incomplete" } else { "completed" },
        "output":output,"usage":usage(&context.figures)});
    if turn.cut_short {
        // The connection ended before the response did.
    } else if cut {
        response["incomplete_details"] = json!({"reason":"max_output_tokens"});
        events.push(json!({"type":"response.incomplete","response":response}));
    } else {
        events.push(json!({"type":"response.completed","response":response}));
    }
    for (number, event) in events.iter_mut().enumerate() {
        event["sequence_number"] = number.into();
    }
    (named_events(&events), issued)
}

/// The call's id, or one made up (the Responses API always sends one).
/// The made-up one only depends on the turn and the call's place, so the
/// reasoning handed out with it is found again.
fn call_id(id: &str, serial: u64, number: usize) -> String {
    if id.is_empty() {
        format!("call_{serial}_{number}")
    } else {
        id.to_owned()
    }
}

/// The Responses usage object.
fn usage(figures: &Figures) -> Value {
    json!({"input_tokens":figures.input,
           "input_tokens_details":{"cached_tokens":figures.cached},
           "output_tokens":figures.output,
           "output_tokens_details":{"reasoning_tokens":figures.reasoning},
           "total_tokens":figures.input + figures.output})
}
