use nanohermes_core::agent::AgentParts;
use nanohermes_core::agent::{AgentConfig, Outcome};
use nanohermes_core::interrupt::Interrupt;
use nanohermes_core::policy::Policy;
use serde_json::json;

use crate::support::history::{assert_history_valid, assert_requests_valid};
use crate::support::mock_model::{
    MockModel, call, call_raw, call_split, sse_raw, status, text, tool_calls,
};
use crate::support::{Capture, agent, agent_with, fixture, hub, settings, tool_result};

#[tokio::test]
async fn streamed_text_reaches_the_ui_in_order_and_ends_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockModel::start(vec![text(&["Hé", "llo → ", "wörld"]).into()]).await;
    let mut agent = agent(settings(&mock), hub(dir.path(), vec![]).await);
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
    assert_requests_valid(&requests);
    assert_eq!(requests[0].header("authorization"), Some("Bearer test-key"));
    assert_eq!(requests[0].body["model"], "main-model");
    let tools = requests[0].body["tools"].as_array().unwrap();
    assert!(tools.iter().any(|t| t["function"]["name"] == "write_file"));
}

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

#[tokio::test]
async fn arguments_split_across_three_frames_are_joined_before_the_call() {
    let dir = tempfile::tempdir().unwrap();
    let arguments = json!({"path": "notes/hello.txt", "content": "héllo wörld\n"});
    let mock = MockModel::start(vec![
        tool_calls(&[call_split("call_w", "write_file", arguments, 3)]).into(),
        text(&["written"]).into(),
    ])
    .await;
    let mut agent = agent(settings(&mock), hub(dir.path(), vec![]).await);
    let mut ui = Capture::default();

    let summary = agent.run("write the file", &mut ui).await.unwrap();

    assert_eq!(summary.outcome, Outcome::Done);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("notes/hello.txt")).unwrap(),
        "héllo wörld\n"
    );
    let requests = mock.requests();
    assert_requests_valid(&requests);
    let assistant = &requests[1].messages()[2];
    assert_eq!(assistant["content"], serde_json::Value::Null);
    assert_eq!(
        assistant["tool_calls"][0]["function"]["arguments"],
        r#"{"content":"héllo wörld\n","path":"notes/hello.txt"}"#
    );
    assert!(!tool_result(requests[1].messages(), "call_w").starts_with("ERROR"));
    assert_eq!(ui.tool_lines.len(), 1);
}

#[tokio::test]
async fn parallel_calls_are_answered_in_call_order_when_the_second_finishes_first() {
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
    let mut agent = agent(settings(&mock), hub(dir.path(), vec![fixture("fx")]).await);
    let mut ui = Capture::default();

    let run = agent.run("wait and touch", &mut ui);
    let summary = tokio::time::timeout(std::time::Duration::from_secs(30), run)
        .await
        .expect("the two calls ran concurrently")
        .unwrap();

    assert_eq!(summary.outcome, Outcome::Done);
    let requests = mock.requests();
    assert_requests_valid(&requests);
    let messages = requests[1].messages();
    assert_eq!(
        messages[3],
        json!({"role":"tool","tool_call_id":"call_wait","content":"seen"})
    );
    assert_eq!(
        messages[4],
        json!({"role":"tool","tool_call_id":"call_touch","content":"touched"})
    );
}

#[tokio::test]
async fn invalid_json_arguments_become_an_error_result_and_the_loop_goes_on() {
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
    let mut agent = agent(settings(&mock), hub(dir.path(), vec![]).await);
    let mut ui = Capture::default();

    let summary = agent.run("read a.txt", &mut ui).await.unwrap();

    assert_eq!(summary.outcome, Outcome::Done);
    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    assert_requests_valid(&requests);
    let bad = tool_result(requests[1].messages(), "call_bad");
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
        tool_result(requests[1].messages(), "call_list"),
        "ERROR: invalid JSON arguments for `list_dir`: expected a JSON object, got an array; the call was not run. You sent (the history keeps {} instead):\n[1, 2]\nResend the call with the arguments as one JSON object"
    );
}

#[tokio::test]
async fn an_unknown_tool_gets_an_error_naming_the_available_tools() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockModel::start(vec![
        tool_calls(&[call("call_x", "delete_everything", json!({}))]).into(),
        text(&["sorry"]).into(),
    ])
    .await;
    let mut agent = agent(settings(&mock), hub(dir.path(), vec![]).await);

    agent.run("go", &mut Capture::default()).await.unwrap();

    let requests = mock.requests();
    assert_requests_valid(&requests);
    let result = tool_result(requests[1].messages(), "call_x");
    assert!(
        result.starts_with("ERROR: unknown tool `delete_everything`; the available tools are: "),
        "{result}"
    );
    assert!(result.contains("read_file"), "{result}");
}

#[tokio::test]
async fn empty_arguments_are_sent_back_as_braces_and_the_tool_runs() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockModel::start(vec![
        tool_calls(&[call_raw("call_pid", "fx__pid", "")]).into(),
        text(&["done"]).into(),
    ])
    .await;
    let mut agent = agent(settings(&mock), hub(dir.path(), vec![fixture("fx")]).await);

    agent.run("pid?", &mut Capture::default()).await.unwrap();

    let requests = mock.requests();
    assert_requests_valid(&requests);
    assert_eq!(
        requests[1].messages()[2]["tool_calls"][0]["function"]["arguments"],
        "{}"
    );
    let pid = tool_result(requests[1].messages(), "call_pid");
    assert!(pid.parse::<u32>().is_ok(), "{pid}");
}

#[tokio::test]
async fn read_only_policy_refuses_a_writing_tool_at_execution() {
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
    let mut agent = agent_with(settings(&mock), hub(dir.path(), vec![]).await, config);

    agent.run("write", &mut Capture::default()).await.unwrap();

    assert!(!dir.path().join("x.txt").exists());
    let requests = mock.requests();
    assert_requests_valid(&requests);
    assert!(
        tool_result(requests[1].messages(), "call_w")
            .starts_with("ERROR: `write_file` is not available in read-only mode")
    );
}

#[tokio::test]
async fn the_iteration_limit_stops_the_run_with_every_call_answered() {
    let dir = tempfile::tempdir().unwrap();
    let step = || tool_calls(&[call("call_l", "list_dir", json!({}))]).into();
    let mock = MockModel::start(vec![step(), step(), step(), step()]).await;
    let config = AgentConfig {
        max_iterations: 3,
        ..AgentConfig::default()
    };
    let mut agent = agent_with(settings(&mock), hub(dir.path(), vec![]).await, config);
    let mut ui = Capture::default();

    let summary = agent.run("loop forever", &mut ui).await.unwrap();

    assert_eq!(summary.outcome, Outcome::IterationLimit);
    assert_eq!(summary.iterations, 3);
    assert_eq!(mock.requests().len(), 3);
    assert_requests_valid(&mock.requests());
    assert_history_valid(agent.messages());
    assert_eq!(agent.messages().last().unwrap()["role"], "tool");
    assert_eq!(
        ui.notices,
        ["reached the 3 iteration limit without finishing"]
    );
}

#[tokio::test]
async fn an_interrupt_during_a_step_stops_at_the_boundary_with_every_call_answered() {
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
        settings(&mock),
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
    assert_requests_valid(&mock.requests());
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

#[tokio::test]
async fn a_failed_model_request_ends_the_run_with_a_valid_history() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockModel::start(vec![
        tool_calls(&[call("call_a", "list_dir", json!({}))]).into(),
        status(401, "Incorrect API key provided").into(),
    ])
    .await;
    let mut agent = agent(settings(&mock), hub(dir.path(), vec![]).await);

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
    assert_requests_valid(&mock.requests());
    assert_history_valid(agent.messages());
    assert_eq!(agent.messages().last().unwrap()["role"], "tool");
}

#[tokio::test]
async fn a_crashed_external_server_is_an_error_result_then_restarts_while_others_keep_working() {
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
    let mut agent = agent(settings(&mock), hub(dir.path(), vec![fixture("fx")]).await);
    let mut ui = Capture::default();

    let summary = agent.run("crash it", &mut ui).await.unwrap();

    assert_eq!(summary.outcome, Outcome::Done);
    let requests = mock.requests();
    assert_eq!(requests.len(), 3);
    assert_requests_valid(&requests);
    let crashed = tool_result(requests[1].messages(), "call_crash");
    assert!(
        crashed.starts_with("ERROR: server fx is not running"),
        "{crashed}"
    );
    assert!(!tool_result(requests[1].messages(), "call_list").starts_with("ERROR"));
    assert_eq!(
        tool_result(requests[2].messages(), "call_echo"),
        "back again"
    );
}
