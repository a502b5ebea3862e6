//! The loop through the library API. Each scenario built from scripted
//! turns runs on chat, responses and messages (`on_every_wire!`), its
//! assertions on the chat-shaped history of what the model was sent
//! (`Recorded::history`); raw chat frames stay on chat.

use nanohermes_core::agent::AgentParts;
use nanohermes_core::agent::{AgentConfig, Outcome};
use nanohermes_core::interrupt::Interrupt;
use nanohermes_core::policy::Policy;
use serde_json::json;

use crate::support::history::{
    assert_history_valid, assert_requests_valid, assert_requests_valid_on,
};
use crate::support::mock_model::{
    MockModel, WireApi, call, call_raw, call_split, sse_raw, status, text, tool_calls,
};
use crate::support::{
    Capture, agent, agent_with, fixture, hub, on_every_wire, settings, settings_on, tool_result,
};

async fn streamed_text_reaches_the_ui_in_order_and_ends_the_run(wire: WireApi) {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockModel::start(vec![text(&["Hé", "llo → ", "wörld"]).into()]).await;
    let mut agent = agent(settings_on(&mock, wire), hub(dir.path(), vec![]).await);
    let mut ui = Capture::default();

    let summary = agent.run("say hello", &mut ui).await.unwrap();

    assert_eq!(ui.text, "Héllo → wörld");
    assert_eq!(summary.outcome, Outcome::Done);
    assert_eq!(summary.final_text, "Héllo → wörld");
    assert_eq!(summary.iterations, 1);
    assert!(!summary.used_tools);
    assert_eq!(
        agent.messages().last().unwrap(),
        &json!({"role":"assistant","content":"Héllo → wörld"})
    );
    let requests = mock.requests();
    assert_requests_valid_on(&requests, wire);
    let (key, value) = match wire {
        WireApi::Messages => ("x-api-key", "test-key"),
        _ => ("authorization", "Bearer test-key"),
    };
    assert_eq!(requests[0].header(key), Some(value));
    assert_eq!(requests[0].body["model"], "main-model");
    let tools = requests[0].body["tools"].as_array().unwrap();
    // Chat nests the declaration under `function`; the others are flat.
    let declared = |t: &serde_json::Value| match wire {
        WireApi::Chat => t["function"]["name"].clone(),
        _ => t["name"].clone(),
    };
    assert!(
        tools.iter().any(|t| declared(t) == "write_file"),
        "{tools:?}"
    );
}
on_every_wire!(streamed_text_reaches_the_ui_in_order_and_ends_the_run);

// Chat only: the stream is raw chat-completions frames (comments, a
// half frame, null usage), quirks of chat servers the other wires lack.
#[tokio::test]
async fn every_frame_kind_of_a_real_stream_is_tolerated() {
    let dir = tempfile::tempdir().unwrap();
    let stream = concat!(
        ": ping - 2026-11-30 12:00:00\n\n",
        "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\"}}]}\n\n",
        "event: message\n",
        "data: {\"choices\":[{\"delta\":{\"content\":null}}]}\n\n",
        "data: {\"choices\":[{\"delta\":{\"content\":\"\"}}]}\n\n",
        "data: {half a frame\n\n",
        "data: {\"choices\":[{\"delta\":{\"content\":\"ok\"}}]}\n\n",
        "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n",
        "data: {\"choices\":[],\"usage\":null}\n\n",
    );
    // No [DONE]: EOF after a finish reason ends the stream. No usage: the
    // ledger says unknown.
    let mock = MockModel::start(vec![sse_raw(stream).into()]).await;
    let mut agent = agent(settings(&mock), hub(dir.path(), vec![]).await);
    let mut ui = Capture::default();

    let summary = agent.run("hi", &mut ui).await.unwrap();

    assert_eq!((summary.outcome, ui.text.as_str()), (Outcome::Done, "ok"));
    assert_eq!(agent.usage().requests, 1);
    assert_eq!(agent.usage().requests_without_usage, 1);
    assert_eq!(agent.usage().prompt_tokens, 0);
    assert_requests_valid(&mock.requests());
}

async fn arguments_split_across_three_frames_are_joined_before_the_call(wire: WireApi) {
    let dir = tempfile::tempdir().unwrap();
    let arguments = json!({"path": "notes/hello.txt", "content": "héllo wörld\n"});
    let mock = MockModel::start(vec![
        tool_calls(&[call_split("call_w", "write_file", arguments, 3)]).into(),
        text(&["written"]).into(),
    ])
    .await;
    let mut agent = agent(settings_on(&mock, wire), hub(dir.path(), vec![]).await);
    let mut ui = Capture::default();

    let summary = agent.run("write the file", &mut ui).await.unwrap();

    assert_eq!(summary.outcome, Outcome::Done);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("notes/hello.txt")).unwrap(),
        "héllo wörld\n"
    );
    let requests = mock.requests();
    assert_requests_valid_on(&requests, wire);
    let history = requests[1].history();
    let assistant = &history[2];
    assert_eq!(assistant["content"], serde_json::Value::Null);
    assert_eq!(
        assistant["tool_calls"][0]["function"]["arguments"],
        r#"{"content":"héllo wörld\n","path":"notes/hello.txt"}"#
    );
    assert!(!tool_result(&history, "call_w").starts_with("ERROR"));
    assert_eq!(ui.tool_lines.len(), 1);
}
on_every_wire!(arguments_split_across_three_frames_are_joined_before_the_call);

async fn parallel_calls_are_answered_in_call_order_when_the_second_finishes_first(wire: WireApi) {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("marker");
    let marker = marker.to_str().unwrap();
    // The first call only returns once the second has run: sequential
    // execution would never finish.
    let mock = MockModel::start(vec![
        tool_calls(&[
            call("call_wait", "fx__wait_for_file", json!({"path": marker})),
            call("call_touch", "fx__touch", json!({"path": marker})),
        ])
        .into(),
        text(&["both done"]).into(),
    ])
    .await;
    let mut agent = agent(
        settings_on(&mock, wire),
        hub(dir.path(), vec![fixture("fx")]).await,
    );
    let mut ui = Capture::default();

    let run = agent.run("wait and touch", &mut ui);
    let summary = tokio::time::timeout(std::time::Duration::from_secs(30), run)
        .await
        .expect("the two calls ran concurrently")
        .unwrap();

    assert_eq!(summary.outcome, Outcome::Done);
    let requests = mock.requests();
    assert_requests_valid_on(&requests, wire);
    let messages = requests[1].history();
    assert_eq!(
        messages[3],
        json!({"role":"tool","tool_call_id":"call_wait","content":"seen"})
    );
    assert_eq!(
        messages[4],
        json!({"role":"tool","tool_call_id":"call_touch","content":"touched"})
    );
}
on_every_wire!(parallel_calls_are_answered_in_call_order_when_the_second_finishes_first);

async fn invalid_json_arguments_become_an_error_result_and_the_loop_goes_on(wire: WireApi) {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockModel::start(vec![
        tool_calls(&[
            call_raw("call_bad", "read_file", r#"{"path": "a.txt""#),
            call_raw("call_list", "list_dir", r#"[1, 2]"#),
        ])
        .into(),
        text(&["I will fix my JSON"]).into(),
    ])
    .await;
    let mut agent = agent(settings_on(&mock, wire), hub(dir.path(), vec![]).await);
    let mut ui = Capture::default();

    let summary = agent.run("read a.txt", &mut ui).await.unwrap();

    assert_eq!(summary.outcome, Outcome::Done);
    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    assert_requests_valid_on(&requests, wire);
    let history = requests[1].history();
    let bad = tool_result(&history, "call_bad");
    assert!(
        bad.starts_with(
            "ERROR: invalid JSON arguments for `read_file`: the JSON ends too early (EOF while parsing"
        ),
        "{bad}"
    );
    assert!(
        bad.ends_with("Resend the call with the arguments as one JSON object"),
        "{bad}"
    );
    assert_eq!(
        tool_result(&history, "call_list"),
        "ERROR: invalid JSON arguments for `list_dir`: expected a JSON object, got an array; the call was not run. You sent (the history keeps {} instead):\n[1, 2]\nResend the call with the arguments as one JSON object"
    );
}
on_every_wire!(invalid_json_arguments_become_an_error_result_and_the_loop_goes_on);

async fn an_unknown_tool_gets_an_error_naming_the_available_tools(wire: WireApi) {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockModel::start(vec![
        tool_calls(&[call("call_x", "delete_everything", json!({}))]).into(),
        text(&["sorry"]).into(),
    ])
    .await;
    let mut agent = agent(settings_on(&mock, wire), hub(dir.path(), vec![]).await);

    agent.run("go", &mut Capture::default()).await.unwrap();

    let requests = mock.requests();
    assert_requests_valid_on(&requests, wire);
    let history = requests[1].history();
    let result = tool_result(&history, "call_x");
    assert!(
        result.starts_with("ERROR: unknown tool `delete_everything`; the available tools are: "),
        "{result}"
    );
    assert!(result.contains("read_file"), "{result}");
}
on_every_wire!(an_unknown_tool_gets_an_error_naming_the_available_tools);

async fn empty_arguments_are_sent_back_as_braces_and_the_tool_runs(wire: WireApi) {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockModel::start(vec![
        tool_calls(&[call_raw("call_pid", "fx__pid", "")]).into(),
        text(&["done"]).into(),
    ])
    .await;
    let mut agent = agent(
        settings_on(&mock, wire),
        hub(dir.path(), vec![fixture("fx")]).await,
    );

    agent.run("pid?", &mut Capture::default()).await.unwrap();

    let requests = mock.requests();
    assert_requests_valid_on(&requests, wire);
    let history = requests[1].history();
    assert_eq!(history[2]["tool_calls"][0]["function"]["arguments"], "{}");
    let pid = tool_result(&history, "call_pid");
    assert!(pid.parse::<u32>().is_ok(), "{pid}");
}
on_every_wire!(empty_arguments_are_sent_back_as_braces_and_the_tool_runs);

async fn read_only_policy_refuses_a_writing_tool_at_execution(wire: WireApi) {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockModel::start(vec![
        tool_calls(&[call(
            "call_w",
            "write_file",
            json!({"path":"x.txt","content":"x"}),
        )])
        .into(),
        text(&["ok"]).into(),
    ])
    .await;
    let config = AgentConfig {
        policy: Policy::read_only(),
        ..AgentConfig::default()
    };
    let mut agent = agent_with(
        settings_on(&mock, wire),
        hub(dir.path(), vec![]).await,
        config,
    );

    agent.run("write", &mut Capture::default()).await.unwrap();

    assert!(!dir.path().join("x.txt").exists());
    let requests = mock.requests();
    assert_requests_valid_on(&requests, wire);
    assert!(
        tool_result(&requests[1].history(), "call_w")
            .starts_with("ERROR: `write_file` is not available in read-only mode")
    );
}
on_every_wire!(read_only_policy_refuses_a_writing_tool_at_execution);

async fn the_iteration_limit_stops_the_run_with_every_call_answered(wire: WireApi) {
    let dir = tempfile::tempdir().unwrap();
    let step = || tool_calls(&[call("call_l", "list_dir", json!({}))]).into();
    let mock = MockModel::start(vec![step(), step(), step(), step()]).await;
    let config = AgentConfig {
        max_iterations: 3,
        ..AgentConfig::default()
    };
    let mut agent = agent_with(
        settings_on(&mock, wire),
        hub(dir.path(), vec![]).await,
        config,
    );
    let mut ui = Capture::default();

    let summary = agent.run("loop forever", &mut ui).await.unwrap();

    assert_eq!(summary.outcome, Outcome::IterationLimit);
    assert_eq!(summary.iterations, 3);
    assert_eq!(mock.requests().len(), 3);
    assert_requests_valid_on(&mock.requests(), wire);
    assert_history_valid(agent.messages());
    assert_eq!(agent.messages().last().unwrap()["role"], "tool");
    assert_eq!(
        ui.notices,
        ["reached the 3 iteration limit without finishing"]
    );
}
on_every_wire!(the_iteration_limit_stops_the_run_with_every_call_answered);

async fn an_interrupt_during_a_step_stops_at_the_boundary_with_every_call_answered(wire: WireApi) {
    let dir = tempfile::tempdir().unwrap();
    let interrupt = Interrupt::default();
    let flag = interrupt.clone();
    let mock = MockModel::start(vec![
        tool_calls(&[
            call("call_a", "list_dir", json!({})),
            call(
                "call_b",
                "write_file",
                json!({"path":"b.txt","content":"b"}),
            ),
        ])
        .when_requested(move || flag.request()),
        text(&["never asked"]).into(),
    ])
    .await;
    let mut agent = agent_with(
        settings_on(&mock, wire),
        hub(dir.path(), vec![]).await,
        AgentParts {
            interrupt,
            ..Default::default()
        },
    );
    let mut ui = Capture::default();

    let summary = agent.run("list and write", &mut ui).await.unwrap();

    assert_eq!(summary.outcome, Outcome::Interrupted);
    assert_eq!(mock.requests().len(), 1);
    assert_requests_valid_on(&mock.requests(), wire);
    // The step in flight finished: both calls ran and were answered.
    assert_eq!(
        std::fs::read_to_string(dir.path().join("b.txt")).unwrap(),
        "b"
    );
    assert_history_valid(agent.messages());
    let roles: Vec<_> = agent
        .messages()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["system", "user", "assistant", "tool", "tool"]);
    assert_eq!(
        ui.notices,
        ["interrupted: stopped at a step boundary, the conversation was kept"]
    );
}
on_every_wire!(an_interrupt_during_a_step_stops_at_the_boundary_with_every_call_answered);

async fn a_failed_model_request_ends_the_run_with_a_valid_history(wire: WireApi) {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockModel::start(vec![
        tool_calls(&[call("call_a", "list_dir", json!({}))]).into(),
        status(401, "Incorrect API key provided").into(),
    ])
    .await;
    let mut agent = agent(settings_on(&mock, wire), hub(dir.path(), vec![]).await);

    let error = agent
        .run("list", &mut Capture::default())
        .await
        .unwrap_err();

    assert!(
        error
            .to_string()
            .contains("rejected the API key (HTTP 401)"),
        "{error}"
    );
    assert_eq!(mock.requests().len(), 2, "a 401 is not retried");
    assert_requests_valid_on(&mock.requests(), wire);
    assert_history_valid(agent.messages());
    assert_eq!(agent.messages().last().unwrap()["role"], "tool");
}
on_every_wire!(a_failed_model_request_ends_the_run_with_a_valid_history);

async fn a_crashed_external_server_is_an_error_result_then_restarts_while_others_keep_working(
    wire: WireApi,
) {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockModel::start(vec![
        tool_calls(&[
            call("call_crash", "fx__crash", json!({})),
            call("call_list", "list_dir", json!({})),
        ])
        .into(),
        tool_calls(&[call("call_echo", "fx__echo", json!({"text":"back again"}))]).into(),
        text(&["recovered"]).into(),
    ])
    .await;
    let mut agent = agent(
        settings_on(&mock, wire),
        hub(dir.path(), vec![fixture("fx")]).await,
    );
    let mut ui = Capture::default();

    let summary = agent.run("crash it", &mut ui).await.unwrap();

    assert_eq!(summary.outcome, Outcome::Done);
    let requests = mock.requests();
    assert_eq!(requests.len(), 3);
    assert_requests_valid_on(&requests, wire);
    let history = requests[1].history();
    let crashed = tool_result(&history, "call_crash");
    assert!(
        crashed.starts_with("ERROR: server fx is not running"),
        "{crashed}"
    );
    assert!(!tool_result(&history, "call_list").starts_with("ERROR"));
    assert_eq!(
        tool_result(&requests[2].history(), "call_echo"),
        "back again"
    );
}
on_every_wire!(
    a_crashed_external_server_is_an_error_result_then_restarts_while_others_keep_working
);
