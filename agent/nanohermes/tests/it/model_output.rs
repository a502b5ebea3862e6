//! Model output never poisons the history (issue 8 item 4): arguments that
//! are not one JSON object, calls cut off by `max_tokens`, streams cut
//! short, ids the server leaves out or repeats. Each run goes against a
//! strict mock that, like vLLM and llama.cpp, answers HTTP 500 to any
//! history whose tool-call arguments are not one JSON object, and runs on
//! every wire (the Responses and Messages mocks always check their
//! provider's rules).

use std::collections::HashSet;

use nanohermes_core::agent::Outcome;
use serde_json::{Value, json};

use crate::support::history::{assert_history_valid, assert_requests_valid_on};
use crate::support::mock_model::{
    MockModel, WireApi, call, call_raw, text, tool_calls, tool_calls_cut_off,
};
use crate::support::{Capture, agent, hub, on_every_wire, settings_on, tool_result};

/// The `arguments` the history records for the call `id`.
fn recorded<'a>(messages: &'a [Value], id: &str) -> &'a str {
    messages
        .iter()
        .filter_map(|m| m.get("tool_calls")?.as_array())
        .flatten()
        .find(|c| c["id"] == id)
        .and_then(|c| c["function"]["arguments"].as_str())
        .unwrap_or_else(|| panic!("no call {id}"))
}

async fn arguments_that_are_not_one_json_object_are_recorded_as_braces_and_quoted_only_in_the_error(
    wire: WireApi,
) {
    let dir = tempfile::tempdir().unwrap();
    let bad = [
        (
            "c_invalid",
            "read_file",
            "{path: a.txt}",
            "key must be a string",
        ),
        (
            "c_truncated",
            "write_file",
            r#"{"path":"t.txt","content":"hal"#,
            "the JSON ends too early",
        ),
        (
            "c_string",
            "read_file",
            r#""{\"path\":\"a.txt\"}""#,
            "expected a JSON object, got a string",
        ),
        (
            "c_array",
            "list_dir",
            r#"["."]"#,
            "expected a JSON object, got an array",
        ),
        (
            "c_number",
            "list_dir",
            "7",
            "expected a JSON object, got a number",
        ),
    ];
    let mut calls: Vec<_> = bad
        .iter()
        .map(|(id, name, raw, _)| call_raw(id, name, raw))
        .collect();
    calls.push(call(
        "c_good",
        "write_file",
        json!({"path":"good.txt","content":"ok"}),
    ));
    let mock = MockModel::start_strict(vec![
        tool_calls(&calls).into(),
        text(&["I will resend valid JSON"]).into(),
    ])
    .await;
    let mut agent = agent(settings_on(&mock, wire), hub(dir.path(), vec![]).await);

    let summary = agent.run("go", &mut Capture::default()).await.unwrap();

    assert_eq!(summary.outcome, Outcome::Done);
    let requests = mock.requests();
    assert_eq!(
        requests.len(),
        2,
        "the strict server accepted the second request"
    );
    assert_requests_valid_on(&requests, wire);
    assert_history_valid(agent.messages());
    let history = requests[1].history();
    let messages = &history;
    for (id, name, raw, reason) in bad {
        assert_eq!(recorded(messages, id), "{}", "{id}");
        let result = tool_result(messages, id);
        assert!(
            result.starts_with(&format!(
                "ERROR: invalid JSON arguments for `{name}`: {reason}"
            )),
            "{result}"
        );
        assert!(result.contains(&format!("\n{raw}\n")), "{result}");
        assert!(
            result.ends_with("Resend the call with the arguments as one JSON object"),
            "{result}"
        );
    }
    assert_eq!(
        recorded(messages, "c_good"),
        r#"{"content":"ok","path":"good.txt"}"#
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("good.txt")).unwrap(),
        "ok"
    );
    assert!(!dir.path().join("t.txt").exists());
}
on_every_wire!(
    arguments_that_are_not_one_json_object_are_recorded_as_braces_and_quoted_only_in_the_error
);

/// A `write_file` call's argument text where the token budget ran out.
const CUT: &str = r#"{"path":"big.txt","content":"line 1\nline 2"#;

async fn a_call_cut_off_at_max_tokens_is_not_run_and_the_model_is_told_to_write_smaller_parts(
    wire: WireApi,
) {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockModel::start_strict(vec![
        // The budget ran out in the second call's argument text.
        tool_calls_cut_off(&[
            call(
                "c_first",
                "write_file",
                json!({"path":"first.txt","content":"1"}),
            ),
            call_raw("c_cut", "write_file", CUT),
        ])
        .into(),
        // Cut off right after a closing brace: the text parses, but the
        // turn still ended inside the call, so it does not run either.
        tool_calls_cut_off(&[call(
            "c_cut_whole",
            "write_file",
            json!({"path":"cut.txt","content":"part"}),
        )])
        .into(),
        text(&["I will write it in parts"]).into(),
    ])
    .await;
    let mut agent = agent(settings_on(&mock, wire), hub(dir.path(), vec![]).await);

    let summary = agent
        .run("write big.txt", &mut Capture::default())
        .await
        .unwrap();

    assert_eq!(summary.outcome, Outcome::Done);
    let requests = mock.requests();
    assert_eq!(requests.len(), 3);
    assert_requests_valid_on(&requests, wire);
    assert_history_valid(agent.messages());
    assert!(dir.path().join("first.txt").exists(), "a whole call runs");
    assert!(!dir.path().join("big.txt").exists());
    assert!(!dir.path().join("cut.txt").exists());
    let history = requests[2].history();
    let messages = &history;
    assert_eq!(recorded(messages, "c_cut"), "{}");
    let expected = [
        ("c_cut", CUT.len()),
        (
            "c_cut_whole",
            r#"{"content":"part","path":"cut.txt"}"#.len(),
        ),
    ];
    for (id, bytes) in expected {
        assert_eq!(
            tool_result(messages, id),
            format!(
                "ERROR: your call to `write_file` was cut off at the max_tokens limit (4096 tokens) after {bytes} bytes of arguments, so it was not run; write it in smaller parts, one shorter call at a time"
            )
        );
    }
}
on_every_wire!(
    a_call_cut_off_at_max_tokens_is_not_run_and_the_model_is_told_to_write_smaller_parts
);

async fn a_stream_that_ends_inside_a_tool_call_is_retried_and_the_partial_call_never_runs(
    wire: WireApi,
) {
    let dir = tempfile::tempdir().unwrap();
    // The partial call's text even parses: only the missing end of the
    // turn (chat's finish reason and [DONE], `response.completed`,
    // Anthropic's `message_stop`) says the turn was cut.
    let partial = tool_calls(&[call(
        "c_partial",
        "write_file",
        json!({"path":"partial.txt","content":"x"}),
    )])
    .cut_short();
    let mock = MockModel::start_strict(vec![
        partial.into(),
        tool_calls(&[call(
            "c_whole",
            "write_file",
            json!({"path":"whole.txt","content":"y"}),
        )])
        .into(),
        text(&["done"]).into(),
    ])
    .await;
    let mut agent = agent(settings_on(&mock, wire), hub(dir.path(), vec![]).await);
    let mut ui = Capture::default();

    let summary = agent.run("write", &mut ui).await.unwrap();

    assert_eq!(summary.outcome, Outcome::Done);
    assert!(!dir.path().join("partial.txt").exists());
    assert_eq!(
        std::fs::read_to_string(dir.path().join("whole.txt")).unwrap(),
        "y"
    );
    let requests = mock.requests();
    assert_eq!(requests.len(), 3);
    assert_requests_valid_on(&requests, wire);
    assert!(
        ui.notices[0].contains("stream ended before the turn was complete"),
        "{:?}",
        ui.notices
    );
    let history = requests[2].history();
    let calls = history[2]["tool_calls"].as_array().unwrap();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0]["id"], "c_whole");
}
on_every_wire!(a_stream_that_ends_inside_a_tool_call_is_retried_and_the_partial_call_never_runs);

async fn a_stream_cut_on_every_attempt_ends_the_run_without_running_the_call(wire: WireApi) {
    let dir = tempfile::tempdir().unwrap();
    let partial = || {
        tool_calls(&[call(
            "c_partial",
            "write_file",
            json!({"path":"partial.txt","content":"x"}),
        )])
        .cut_short()
        .into()
    };
    let mock = MockModel::start_strict(vec![partial(), partial(), partial()]).await;
    let mut agent = agent(settings_on(&mock, wire), hub(dir.path(), vec![]).await);

    let error = agent
        .run("write", &mut Capture::default())
        .await
        .unwrap_err();

    assert!(
        error
            .to_string()
            .starts_with("the model server's stream ended before the turn was complete"),
        "{error}"
    );
    assert!(!dir.path().join("partial.txt").exists());
    assert_eq!(mock.requests().len(), 3);
    assert_requests_valid_on(&mock.requests(), wire);
    assert_history_valid(agent.messages());
    assert_eq!(agent.messages().last().unwrap()["role"], "user");
}
on_every_wire!(a_stream_cut_on_every_attempt_ends_the_run_without_running_the_call);

async fn tool_call_ids_the_agent_makes_are_unique_over_a_whole_session(wire: WireApi) {
    let dir = tempfile::tempdir().unwrap();
    let list = |id| call(id, "list_dir", json!({}));
    let mock = MockModel::start_strict(vec![
        // No ids at all.
        tool_calls(&[list(""), list("")]).into(),
        // Ids numbered per turn, repeated within the turn.
        tool_calls(&[list("call_0"), list("call_0")]).into(),
        tool_calls(&[list("call_0"), list("")]).into(),
        text(&["first task done"]).into(),
        // A second task in the same session.
        tool_calls(&[list(""), list("call_0")]).into(),
        text(&["second task done"]).into(),
    ])
    .await;
    let mut agent = agent(settings_on(&mock, wire), hub(dir.path(), vec![]).await);

    agent.run("first", &mut Capture::default()).await.unwrap();
    agent.run("second", &mut Capture::default()).await.unwrap();

    let requests = mock.requests();
    assert_eq!(requests.len(), 6);
    assert_requests_valid_on(&requests, wire);
    assert_history_valid(agent.messages());
    let ids: Vec<&str> = agent
        .messages()
        .iter()
        .filter_map(|m| m.get("tool_calls")?.as_array())
        .flatten()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 8);
    assert_eq!(ids.iter().collect::<HashSet<_>>().len(), 8, "{ids:?}");
    assert_eq!(ids.iter().filter(|id| **id == "call_0").count(), 1);
    for id in &ids {
        assert!(
            !tool_result(agent.messages(), id).starts_with("ERROR"),
            "{id}"
        );
    }
}
on_every_wire!(tool_call_ids_the_agent_makes_are_unique_over_a_whole_session);
