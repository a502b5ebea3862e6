//! The history checker must fail on what it claims to catch: a checker
//! that cannot fail pins nothing.

use std::panic::{AssertUnwindSafe, catch_unwind};

use serde_json::{Value, json};

use crate::support::history::assert_history_valid;
use crate::support::mock_model::arguments_are_objects;

fn history(arguments: Value) -> Vec<Value> {
    vec![
        json!({"role":"system","content":"s"}),
        json!({"role":"user","content":"u"}),
        json!({"role":"assistant","content":null,"tool_calls":[
            {"id":"a","type":"function","function":{"name":"read_file","arguments":arguments}}]}),
        json!({"role":"tool","tool_call_id":"a","content":"ok"}),
    ]
}

/// The checker's panic message, or `None` when it accepted the history.
fn rejection(messages: &[Value]) -> Option<String> {
    let outcome = catch_unwind(AssertUnwindSafe(|| assert_history_valid(messages)));
    let payload = outcome.err()?;
    Some(
        payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default(),
    )
}

#[test]
fn arguments_must_be_a_string_holding_one_json_object() {
    for good in [json!("{}"), json!(r#"{"path":"a.rs"}"#)] {
        assert_eq!(rejection(&history(good.clone())), None, "{good}");
        assert!(arguments_are_objects(&history(good)));
    }
    for bad in [
        json!(""),
        json!("   "),
        json!(r#"{"path": "a.rs""#),
        json!("{path: a.rs}"),
        json!(r#""{\"path\":\"a.rs\"}""#),
        json!("[1, 2]"),
        json!("42"),
        json!("null"),
        json!(r#"{"a":1} {"b":2}"#),
        json!({"path":"a.rs"}),
        Value::Null,
    ] {
        let message = rejection(&history(bad.clone()))
            .unwrap_or_else(|| panic!("the checker accepted arguments {bad}"));
        assert!(message.contains("call 0 has arguments"), "{message}");
        assert!(!arguments_are_objects(&history(bad)));
    }
}

#[test]
fn ids_must_be_unique_in_the_history_and_answered_in_order() {
    let mut repeated = history(json!("{}"));
    repeated.push(json!({"role":"assistant","content":null,"tool_calls":[
        {"id":"a","type":"function","function":{"name":"read_file","arguments":"{}"}}]}));
    repeated.push(json!({"role":"tool","tool_call_id":"a","content":"ok"}));
    let message = rejection(&repeated).expect("a repeated id is refused");
    assert!(message.contains("call id a is used twice"), "{message}");

    let swapped = vec![
        json!({"role":"system","content":"s"}),
        json!({"role":"user","content":"u"}),
        json!({"role":"assistant","content":null,"tool_calls":[
            {"id":"a","type":"function","function":{"name":"x","arguments":"{}"}},
            {"id":"b","type":"function","function":{"name":"x","arguments":"{}"}}]}),
        json!({"role":"tool","tool_call_id":"b","content":"ok"}),
        json!({"role":"tool","tool_call_id":"a","content":"ok"}),
    ];
    let message = rejection(&swapped).expect("answers out of order are refused");
    assert!(message.contains("answers out of order"), "{message}");

    let mut unanswered = history(json!("{}"));
    unanswered.pop();
    let message = rejection(&unanswered).expect("an unanswered call is refused");
    assert!(message.contains("is not answered"), "{message}");
}
