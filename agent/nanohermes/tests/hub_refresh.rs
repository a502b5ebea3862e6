//! The hub's tool list changing mid-session (`tools/list_changed`, applied
//! by `Hub::refresh` at a step boundary) and the resource/prompt
//! meta-tools, against the real fixture server (`examples/fixture_server.rs`)
//! as a child process.
//!
//! Run alone with `cargo build -p nanohermes --example fixture_server` first
//! (`cargo test -p nanohermes` builds examples itself).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

#[path = "support/mod.rs"]
mod support;

use nanohermes_config::ServerSpec;
use nanohermes_core::policy::Policy;
use nanohermes_hub::{Era, Hub, HubConfig, ServerState};
use serde_json::{Map, Value, json};
use support::{fixture_server, stdio_spec};

/// Generous: a hang guard, not a speed claim.
const HANG_GUARD: Duration = Duration::from_secs(30);

/// The fixture as server `name`, with `args`; required, with hang-guard
/// timeouts.
fn fixture(name: &str, args: &[&str]) -> ServerSpec {
    ServerSpec {
        required: true,
        startup_timeout: HANG_GUARD,
        tool_timeout: HANG_GUARD,
        ..stdio_spec(name, &fixture_server().display().to_string(), args)
    }
}

async fn start(workspace: &Path, servers: Vec<ServerSpec>) -> Hub {
    Hub::start(HubConfig {
        builtin_exe: PathBuf::from("nanohermes-not-used"),
        agent_depth: 0,
        ..HubConfig::new(workspace, servers)
    })
    .await
    .expect("hub starts")
}

fn args(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        other => panic!("arguments must be an object, got {other}"),
    }
}

fn declared(hub: &Hub) -> Vec<String> {
    hub.declarations()
        .iter()
        .map(|d| d["function"]["name"].as_str().unwrap().to_owned())
        .collect()
}

/// Refreshes until a notice arrives: the notification is handled on its
/// own task, which may run just after the call that caused it returns.
async fn refresh_until_notice(hub: &mut Hub) -> Vec<String> {
    let deadline = Instant::now() + HANG_GUARD;
    loop {
        let notices = hub.refresh().await;
        if !notices.is_empty() {
            return notices;
        }
        assert!(Instant::now() < deadline, "no refresh notice");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The era the hub speaks with server `name`.
fn era_of(hub: &Hub, name: &str) -> Era {
    match hub
        .status()
        .into_iter()
        .find(|s| s.name == name)
        .map(|s| s.state)
    {
        Some(ServerState::Running { era, .. }) => era,
        other => panic!("server {name} is not running: {other:?}"),
    }
}

#[tokio::test]
async fn a_tool_added_by_a_modern_server_is_declared_after_the_next_refresh_and_runs() {
    // 2026-07-28: the notification comes on a `subscriptions/listen` stream.
    a_tool_added_by_the_server_is_declared_after_the_next_refresh_and_runs(&[], Era::Modern).await;
}

#[tokio::test]
async fn a_tool_added_by_a_legacy_server_is_declared_after_the_next_refresh_and_runs() {
    // 2025-11-25: the notification arrives unasked.
    a_tool_added_by_the_server_is_declared_after_the_next_refresh_and_runs(
        &["--era", "legacy-error"],
        Era::Legacy,
    )
    .await;
}

async fn a_tool_added_by_the_server_is_declared_after_the_next_refresh_and_runs(
    fixture_args: &[&str],
    era: Era,
) {
    let dir = tempfile::tempdir().unwrap();
    let mut hub = start(dir.path(), vec![fixture("fx", fixture_args)]).await;
    assert_eq!(era_of(&hub, "fx"), era);
    assert!(!declared(&hub).contains(&"fx__extra".to_owned()));

    let toggled = hub.call("fx__toggle_tool", Map::new()).await;
    assert_eq!(toggled, "extra added");
    // Not mid-step: only a refresh changes the declarations.
    assert!(!declared(&hub).contains(&"fx__extra".to_owned()));

    let notices = refresh_until_notice(&mut hub).await;
    assert_eq!(notices, ["server fx changed its tools: added fx__extra"]);
    assert!(declared(&hub).contains(&"fx__extra".to_owned()));
    assert!(hub.tool("fx__extra").is_some());
    assert_eq!(hub.call("fx__extra", Map::new()).await, "extra ran");
    // Consumed: nothing more to do at the next boundary.
    assert!(hub.refresh().await.is_empty());
    hub.shutdown().await;
}

#[tokio::test]
async fn a_tool_removed_by_the_server_answers_that_it_is_no_longer_offered() {
    let dir = tempfile::tempdir().unwrap();
    let mut hub = start(dir.path(), vec![fixture("fx", &[])]).await;
    hub.call("fx__toggle_tool", Map::new()).await;
    refresh_until_notice(&mut hub).await;
    assert_eq!(
        hub.call("fx__toggle_tool", Map::new()).await,
        "extra removed"
    );

    let notices = refresh_until_notice(&mut hub).await;
    assert_eq!(notices, ["server fx changed its tools: removed fx__extra"]);
    assert!(!declared(&hub).contains(&"fx__extra".to_owned()));
    let answer = hub.call("fx__extra", Map::new()).await;
    assert_eq!(
        answer,
        "ERROR: tool fx__extra is no longer offered by server fx; its tool list changed, \
         use one of the tools declared now"
    );
    hub.shutdown().await;
}

#[tokio::test]
async fn a_refresh_keeps_the_read_only_narrowing_of_offer_only() {
    let dir = tempfile::tempdir().unwrap();
    let mut hub = start(dir.path(), vec![fixture("fx", &[])])
        .await
        .offer_only(Policy::read_only());
    let before = declared(&hub);
    assert!(before.contains(&"fx__echo".to_owned()), "{before:?}");
    assert!(!before.contains(&"fx__toggle_tool".to_owned()));

    hub.call("fx__toggle_tool", Map::new()).await;
    refresh_until_notice(&mut hub).await;
    // `extra` is not annotated read-only: known, but not offered.
    assert!(hub.tool("fx__extra").is_some());
    assert_eq!(declared(&hub), before);
    hub.shutdown().await;
}

#[tokio::test]
async fn the_meta_tools_are_absent_when_no_server_offers_resources_or_prompts() {
    let dir = tempfile::tempdir().unwrap();
    let hub = start(dir.path(), vec![fixture("fx", &[])]).await;
    let names = declared(&hub);
    assert!(names.iter().all(|n| !n.starts_with("mcp_")), "{names:?}");
    let answer = hub.call("mcp_list_resources", Map::new()).await;
    assert!(
        answer.starts_with("ERROR: unknown tool mcp_list_resources;"),
        "{answer}"
    );
    hub.shutdown().await;
}

#[tokio::test]
async fn the_meta_tools_are_declared_read_only_when_a_server_offers_resources_and_prompts() {
    let dir = tempfile::tempdir().unwrap();
    let hub = start(
        dir.path(),
        vec![fixture("plain", &[]), fixture("fx", &["--resources"])],
    )
    .await
    .offer_only(Policy::read_only());
    let meta: Vec<&Value> = hub
        .declarations()
        .iter()
        .filter(|d| d["function"]["name"].as_str().unwrap().starts_with("mcp_"))
        .collect();
    let names: Vec<&str> = meta
        .iter()
        .map(|d| d["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "mcp_list_resources",
            "mcp_read_resource",
            "mcp_list_prompts",
            "mcp_get_prompt"
        ]
    );
    // Only the servers that offer them are routed to.
    assert_eq!(
        meta[1]["function"]["parameters"]["properties"]["server"]["enum"],
        json!(["fx"])
    );
    assert_eq!(
        meta[1]["function"]["parameters"]["required"],
        json!(["server", "uri"])
    );
    hub.shutdown().await;
}

#[tokio::test]
async fn resources_are_listed_and_read_through_the_meta_tools() {
    let dir = tempfile::tempdir().unwrap();
    let hub = start(
        dir.path(),
        vec![fixture("plain", &[]), fixture("fx", &["--resources"])],
    )
    .await;

    let listed = hub.call("mcp_list_resources", Map::new()).await;
    assert_eq!(
        listed,
        "server fx:\n- fixture://readme (readme, text/markdown): What the fixture is\n\
         - fixture://logo.png (logo, image/png)"
    );
    let read = hub
        .call(
            "mcp_read_resource",
            args(json!({"server": "fx", "uri": "fixture://readme"})),
        )
        .await;
    assert_eq!(read, "# Fixture\nA test server for the hub.");
    let blob = hub
        .call(
            "mcp_read_resource",
            args(json!({"server": "fx", "uri": "fixture://logo.png"})),
        )
        .await;
    assert_eq!(
        blob,
        "[binary resource: fixture://logo.png, image/png, about 6 bytes; not shown]"
    );

    let missing = hub
        .call(
            "mcp_read_resource",
            args(json!({"server": "fx", "uri": "fixture://nope"})),
        )
        .await;
    assert!(
        missing.starts_with(
            "ERROR: server fx could not read resource fixture://nope: no resource fixture://nope (JSON-RPC error"
        ),
        "{missing}"
    );
    let wrong_server = hub
        .call(
            "mcp_read_resource",
            args(json!({"server": "plain", "uri": "fixture://readme"})),
        )
        .await;
    assert_eq!(
        wrong_server,
        "ERROR: server plain offers no resources; servers with resources: fx"
    );
    let no_uri = hub
        .call("mcp_read_resource", args(json!({"server": "fx"})))
        .await;
    assert_eq!(
        no_uri,
        "ERROR: mcp_read_resource needs `uri`; call mcp_list_resources to see the URIs"
    );
    hub.shutdown().await;
}

#[tokio::test]
async fn a_prompt_is_listed_and_got_with_its_arguments() {
    let dir = tempfile::tempdir().unwrap();
    let hub = start(dir.path(), vec![fixture("fx", &["--resources"])]).await;

    let listed = hub
        .call("mcp_list_prompts", args(json!({"server": "fx"})))
        .await;
    assert_eq!(
        listed,
        "server fx:\n- greet(who* (Whom to greet), style): Greets someone\n(* = required argument)"
    );
    let got = hub
        .call(
            "mcp_get_prompt",
            args(json!({"server": "fx", "name": "greet", "arguments": {"who": "Ada", "style": "warm"}})),
        )
        .await;
    assert_eq!(got, "[user]\nGreet Ada in a warm way");
    let missing = hub
        .call(
            "mcp_get_prompt",
            args(json!({"server": "fx", "name": "greet"})),
        )
        .await;
    assert!(
        missing.starts_with("ERROR: server fx could not get prompt greet: greet needs `who`"),
        "{missing}"
    );
    let bad = hub
        .call(
            "mcp_get_prompt",
            args(json!({"server": "fx", "name": "greet", "arguments": "who=Ada"})),
        )
        .await;
    assert_eq!(
        bad,
        "ERROR: `arguments` of mcp_get_prompt must be an object of strings, such as {\"topic\": \"tests\"}"
    );
    hub.shutdown().await;
}

#[tokio::test]
async fn a_refresh_that_fails_keeps_the_old_tools_and_says_so_once() {
    let dir = tempfile::tempdir().unwrap();
    let mut hub = start(dir.path(), vec![fixture("fx", &[])]).await;
    let before = declared(&hub);
    assert_eq!(
        hub.call("fx__break_listing", Map::new()).await,
        "listing broken"
    );

    let notices = refresh_until_notice(&mut hub).await;
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert!(
        notices[0].starts_with("server fx changed its tools, but listing them failed ("),
        "{}",
        notices[0]
    );
    assert!(
        notices[0].ends_with(&format!("); keeping its previous {} tools", before.len())),
        "{}",
        notices[0]
    );
    assert_eq!(declared(&hub), before);
    assert_eq!(
        hub.call("fx__echo", args(json!({"text": "still here"})))
            .await,
        "still here"
    );
    // Told once: the next boundaries do not ask again.
    assert!(hub.refresh().await.is_empty());
    assert!(hub.refresh().await.is_empty());
    hub.shutdown().await;
}
