//! A server whose tool list changes mid-run: the loop applies
//! `tools/list_changed` at the next step boundary, so the next request
//! declares the new list; a tool the server took away answers with an error.

use serde_json::{Value, json};

use crate::support::history::{assert_history_valid, assert_requests_valid};
use crate::support::mock_model::{MockModel, call, text, tool_calls};
use crate::support::{Capture, agent, fixture, hub, settings, tool_result};

fn declares(body: &Value, name: &str) -> bool {
    body["tools"]
        .as_array()
        .is_some_and(|tools| tools.iter().any(|t| t["function"]["name"] == name))
}

#[tokio::test]
async fn a_tool_the_server_adds_mid_run_is_declared_in_the_next_request_and_runs() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockModel::start(vec![
        tool_calls(&[call("c1", "fx__toggle_tool", json!({}))]).into(),
        tool_calls(&[call("c2", "fx__extra", json!({}))]).into(),
        text(&["done"]).into(),
    ])
    .await;
    let mut agent = agent(settings(&mock), hub(dir.path(), vec![fixture("fx")]).await);
    let mut ui = Capture::default();

    agent.run("use the extra tool", &mut ui).await.unwrap();

    let requests = mock.requests();
    assert_requests_valid(&requests);
    assert!(!declares(&requests[0].body, "fx__extra"));
    assert!(declares(&requests[1].body, "fx__extra"));
    assert_eq!(tool_result(agent.messages(), "c1"), "extra added");
    assert_eq!(tool_result(agent.messages(), "c2"), "extra ran");
    assert!(
        ui.notices
            .contains(&"server fx changed its tools: added fx__extra".to_owned()),
        "{:?}",
        ui.notices
    );
    assert_history_valid(agent.messages());
    agent.into_tools().shutdown().await;
}

#[tokio::test]
async fn a_tool_the_server_removed_mid_run_answers_that_it_is_no_longer_offered() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockModel::start(vec![
        tool_calls(&[call("c1", "fx__toggle_tool", json!({}))]).into(),
        tool_calls(&[call("c2", "fx__toggle_tool", json!({}))]).into(),
        // From memory of the earlier declarations.
        tool_calls(&[call("c3", "fx__extra", json!({}))]).into(),
        text(&["done"]).into(),
    ])
    .await;
    let mut agent = agent(settings(&mock), hub(dir.path(), vec![fixture("fx")]).await);
    let mut ui = Capture::default();

    agent.run("toggle twice", &mut ui).await.unwrap();

    let requests = mock.requests();
    assert_requests_valid(&requests);
    assert!(declares(&requests[1].body, "fx__extra"));
    assert!(!declares(&requests[2].body, "fx__extra"));
    assert_eq!(tool_result(agent.messages(), "c2"), "extra removed");
    assert_eq!(
        tool_result(agent.messages(), "c3"),
        "ERROR: tool fx__extra is no longer offered by server fx; its tool list changed, \
         use one of the tools declared now"
    );
    assert_history_valid(agent.messages());
    agent.into_tools().shutdown().await;
}
