use std::path::Path;
use std::time::Duration;

use nanohermes_config::{BuiltinName, ServerSpec};
use nanohermes_core::agent::AgentConfig;
use nanohermes_core::policy::{Mode, Policy};
use nanohermes_hub::{DeferConfig, Hub, HubConfig, TOOL_SEARCH};
use serde_json::{Map, Value, json};

use crate::support::history::assert_requests_valid;
use crate::support::mock_model::{MockModel, call, text, tool_calls};
use crate::support::{Capture, agent_with, fixture, settings, tool_result};

/// The fixture with `--many n` as server `name`.
fn many(name: &str, n: usize) -> ServerSpec {
    let mut spec = fixture(name);
    if let nanohermes_config::Transport::Stdio(stdio) = &mut spec.transport {
        stdio.args = vec!["--many".into(), n.to_string()];
    }
    spec
}

async fn start(workspace: &Path, external: Vec<ServerSpec>, deferral: DeferConfig) -> Hub {
    let mut servers = vec![ServerSpec::default_builtin(BuiltinName::Files)];
    servers.extend(external);
    let config = HubConfig {
        deferral,
        ..HubConfig::new(workspace, servers)
    };
    Hub::start(config).await.expect("hub starts")
}

fn budget(max_bytes: usize, max_tools: usize) -> DeferConfig {
    DeferConfig {
        max_bytes,
        max_tools,
        ..DeferConfig::default()
    }
}

fn declared(declarations: &[Value]) -> Vec<String> {
    declarations
        .iter()
        .filter_map(|d| d["function"]["name"].as_str().map(str::to_owned))
        .collect()
}

fn arguments(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

#[tokio::test]
async fn deferral_starts_one_byte_or_one_tool_past_the_budget_and_not_at_it() {
    let dir = tempfile::tempdir().unwrap();
    let off = DeferConfig {
        enabled: false,
        ..DeferConfig::default()
    };
    let all = start(dir.path(), vec![fixture("fx")], off).await;
    let bytes = serde_json::to_string(all.declarations()).unwrap().len();
    let count = all.declarations().len();
    let names = declared(all.declarations());
    assert!(names.contains(&"fx__echo".to_owned()), "{names:?}");
    assert!(all.deferred().is_empty());
    all.shutdown().await;

    for (max_bytes, max_tools, defers) in [
        (bytes, usize::MAX, false),
        (bytes - 1, usize::MAX, true),
        (usize::MAX, count, false),
        (usize::MAX, count - 1, true),
    ] {
        let hub = start(
            dir.path(),
            vec![fixture("fx")],
            budget(max_bytes, max_tools),
        )
        .await;
        let now = declared(hub.declarations());
        let case = format!("bytes {max_bytes}/{bytes}, tools {max_tools}/{count}");
        if defers {
            assert!(now.contains(&TOOL_SEARCH.to_owned()), "{case}: {now:?}");
            assert!(
                !now.iter().any(|n| n.starts_with("fx__")),
                "{case}: {now:?}"
            );
            assert!(
                now.contains(&"read_file".to_owned()),
                "built-ins stay: {now:?}"
            );
            assert_eq!(
                hub.deferred().len(),
                names.iter().filter(|n| n.starts_with("fx__")).count(),
                "{case}"
            );
        } else {
            assert_eq!(now, names, "{case}");
            assert!(hub.deferred().is_empty(), "{case}");
        }
        hub.shutdown().await;
    }
}

#[tokio::test]
async fn tool_search_is_absent_when_nothing_is_deferred() {
    let dir = tempfile::tempdir().unwrap();
    let hub = start(
        dir.path(),
        vec![fixture("fx")],
        budget(usize::MAX, usize::MAX),
    )
    .await;
    assert!(!declared(hub.declarations()).contains(&TOOL_SEARCH.to_owned()));
    assert_eq!(hub.facts(TOOL_SEARCH), None);
    let answer = hub
        .call(TOOL_SEARCH, arguments(json!({"query": "echo"})))
        .await;
    assert!(
        answer.starts_with("ERROR: unknown tool tool_search"),
        "{answer}"
    );
    hub.shutdown().await;
}

#[tokio::test]
async fn a_pinned_server_a_listed_tool_and_an_allowed_name_are_never_deferred() {
    let dir = tempfile::tempdir().unwrap();
    let pinned = ServerSpec {
        always_load: true,
        ..many("pinned", 30)
    };
    let deferral = DeferConfig {
        always_load_tools: vec!["mcp__other__slack_create_issue".into()],
        ..budget(0, 0)
    };
    let policy = Policy::new(
        Mode::Goal,
        Some(vec![
            "pinned__*".into(),
            "other__*".into(),
            "other__jira_create_issue".into(),
            "read_file".into(),
        ]),
        Vec::new(),
        false,
    );
    let hub = start(dir.path(), vec![pinned, many("other", 30)], deferral)
        .await
        .offer_only(policy);
    let now = declared(hub.declarations());
    assert_eq!(
        now.iter().filter(|n| n.starts_with("pinned__")).count(),
        hub.tools().iter().filter(|t| t.server == "pinned").count(),
        "{now:?}"
    );
    for kept in [
        "other__slack_create_issue",
        "other__jira_create_issue",
        "read_file",
        TOOL_SEARCH,
    ] {
        assert!(now.contains(&kept.to_owned()), "{kept}: {now:?}");
    }
    assert!(!now.contains(&"other__github_create_issue".to_owned()));
    assert!(hub.deferred().iter().all(|d| d.server == "other"));
    assert_eq!(
        hub.deferred_counts(),
        [("other".to_owned(), hub.deferred().len())]
    );
    hub.shutdown().await;
}

#[tokio::test]
async fn a_tool_the_policy_refuses_is_never_deferred_searched_or_surfaced() {
    let dir = tempfile::tempdir().unwrap();
    let policy = Policy::new(Mode::Goal, None, vec!["fx__jira_*".into()], false);
    let mut hub = start(dir.path(), vec![many("fx", 100)], budget(0, 0))
        .await
        .offer_only(policy.clone());
    assert!(!hub.deferred().is_empty());
    assert!(
        hub.deferred()
            .iter()
            .all(|d| !d.name.starts_with("fx__jira_"))
    );
    let answer = hub
        .call(
            TOOL_SEARCH,
            arguments(json!({"query": "jira create issue", "limit": 20})),
        )
        .await;
    assert!(!answer.contains("fx__jira_"), "{answer}");
    assert!(answer.contains("fx__github_create_issue"), "{answer}");
    // Nor through a serve task's own rule over a shared hub.
    let plan = Policy::new(Mode::Plan, None, Vec::new(), false);
    let answer = hub.search_tools(&arguments(json!({"query": "create issue"})), |n, f| {
        plan.allows(n, f)
    });
    assert!(answer.starts_with("No deferred tool matches"), "{answer}");
    hub.refresh().await;
    let now = declared(hub.declarations());
    assert!(!now.iter().any(|n| n.starts_with("fx__jira_")), "{now:?}");
    assert!(
        now.contains(&"fx__github_create_issue".to_owned()),
        "{now:?}"
    );
    hub.shutdown().await;
}

#[tokio::test]
async fn the_model_finds_a_deferred_tool_and_calls_it_in_two_steps() {
    let dir = tempfile::tempdir().unwrap();
    let hub = start(dir.path(), vec![many("fx", 300)], DeferConfig::default()).await;
    let mock = MockModel::start_strict(vec![
        tool_calls(&[call(
            "c1",
            TOOL_SEARCH,
            json!({"query": "create a jira issue", "limit": 3}),
        )])
        .into(),
        tool_calls(&[call(
            "c2",
            "fx__jira_create_issue",
            json!({"project": "OPS", "title": "disk full"}),
        )])
        .into(),
        text(&["filed"]).into(),
    ])
    .await;
    let mut agent = agent_with(settings(&mock), hub, AgentConfig::default());
    let summary = agent
        .run("file a jira issue", &mut Capture::default())
        .await
        .unwrap();
    assert_eq!(summary.final_text, "filed");
    let found = tool_result(agent.messages(), "c1");
    assert!(
        found.contains("- fx__jira_create_issue (server fx): Create a new issue in Jira"),
        "{found}"
    );
    let done = tool_result(agent.messages(), "c2");
    assert!(done.starts_with("jira_create_issue done with"), "{done}");

    let requests = mock.requests();
    assert_requests_valid(&requests);
    let first = declared(requests[0].body["tools"].as_array().unwrap());
    assert!(first.contains(&TOOL_SEARCH.to_owned()), "{first:?}");
    assert!(!first.contains(&"fx__jira_create_issue".to_owned()));
    assert!(
        requests[0].body_len < 16_000 + 2_000,
        "{}",
        requests[0].body_len
    );
    for later in &requests[1..] {
        let names = declared(later.body["tools"].as_array().unwrap());
        assert!(
            names.contains(&"fx__jira_create_issue".to_owned()),
            "{names:?}"
        );
    }
    agent.into_tools().shutdown().await;
}

#[tokio::test]
async fn a_deferred_tool_called_by_name_runs_and_is_declared_from_the_next_step() {
    let dir = tempfile::tempdir().unwrap();
    let hub = start(dir.path(), vec![many("fx", 100)], budget(0, 0)).await;
    let mock = MockModel::start_strict(vec![
        tool_calls(&[call("c1", "fx__slack_create_channel", json!({"id": "C1"}))]).into(),
        text(&["ok"]).into(),
    ])
    .await;
    let mut agent = agent_with(settings(&mock), hub, AgentConfig::default());
    agent
        .run("make channel C1", &mut Capture::default())
        .await
        .unwrap();
    let answer = tool_result(agent.messages(), "c1");
    assert_eq!(answer, "slack_create_channel done with {\"id\":\"C1\"}");
    let requests = mock.requests();
    let first = declared(requests[0].body["tools"].as_array().unwrap());
    let second = declared(requests[1].body["tools"].as_array().unwrap());
    assert!(!first.contains(&"fx__slack_create_channel".to_owned()));
    assert!(
        second.contains(&"fx__slack_create_channel".to_owned()),
        "{second:?}"
    );
    assert_eq!(second.len(), first.len() + 1, "only the called tool joined");
    agent.into_tools().shutdown().await;
}

#[tokio::test]
async fn a_server_still_connecting_joins_later_with_its_tools_deferred() {
    let dir = tempfile::tempdir().unwrap();
    let gate = dir.path().join("gate");
    let mut late = fixture("late");
    if let nanohermes_config::Transport::Stdio(stdio) = &mut late.transport {
        stdio.args = vec!["--wait-for-file".into(), gate.display().to_string()];
    }
    let config = HubConfig {
        connect_wait: Some(Duration::from_millis(100)),
        ..HubConfig::new(
            dir.path(),
            vec![ServerSpec::default_builtin(BuiltinName::Files), late],
        )
    };
    let mut hub = Hub::start(config).await.expect("hub starts");
    assert_eq!(hub.connecting(), ["late"]);
    let before = declared(hub.declarations());
    assert!(
        !before.iter().any(|n| n.starts_with("late__")),
        "{before:?}"
    );
    assert!(
        !before.contains(&TOOL_SEARCH.to_owned()),
        "nothing deferred yet"
    );

    std::fs::write(&gate, "").unwrap();
    let notices = hub.wait_for_servers(Duration::from_secs(30)).await;
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert!(
        notices[0].contains("server late finished connecting"),
        "{notices:?}"
    );
    assert!(hub.connecting().is_empty());
    let after = declared(hub.declarations());
    // Under the budget, still deferred: the late tools do not reshape
    // what the model was shown.
    assert_eq!(after.len(), before.len() + 1, "{after:?}");
    assert!(after.contains(&TOOL_SEARCH.to_owned()));
    assert!(hub.deferred().iter().all(|d| d.server == "late"));
    let answer = hub
        .call("late__echo", arguments(json!({"text": "hi"})))
        .await;
    assert_eq!(answer, "hi");
    hub.refresh().await;
    assert!(declared(hub.declarations()).contains(&"late__echo".to_owned()));
    hub.shutdown().await;
}

/// Runs the real binary in `workspace` on the mock at `url`, with its
/// own home, the fixture with 300 tools mounted by `--mcp`.
async fn nanohermes(home: &Path, url: &str, args: &[&str]) -> std::process::Output {
    let mount = format!(
        "fx={} --many 300",
        crate::support::fixture_server().display()
    );
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_nanohermes"));
    command
        .args(args)
        .args(["--mcp", &mount])
        .env("NANOHERMES_HOME", home)
        .env("OPENAI_BASE_URL", url)
        .env("OPENAI_API_KEY", "test-key")
        .env("NANOHERMES_MODEL", "main-model")
        .env("NANOHERMES_MODE", "goal")
        .env_remove("NANOHERMES_FALLBACK_MODEL")
        .env_remove("NANOHERMES_LOG")
        .kill_on_drop(true);
    tokio::time::timeout(Duration::from_secs(60), command.output())
        .await
        .expect("nanohermes finished")
        .expect("nanohermes ran")
}

#[tokio::test]
async fn through_the_binary_the_user_sees_what_is_deferred_and_a_found_tool_survives_resume() {
    let dir = tempfile::tempdir().unwrap();
    let (home, workspace) = (dir.path().join("home"), dir.path().join("ws"));
    std::fs::create_dir_all(&workspace).unwrap();
    let session = dir.path().join("session.json");
    let ws = workspace.display().to_string();
    let session_arg = session.display().to_string();

    let listed = nanohermes(&home, "http://127.0.0.1:9", &["tools", "--workspace", &ws]).await;
    let table = String::from_utf8_lossy(&listed.stdout);
    assert!(
        table.lines().next().unwrap().ends_with("DEFERRED"),
        "{table}"
    );
    let row = |name: &str| {
        table
            .lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .map(|l| l.split_whitespace().last().unwrap().to_owned())
    };
    assert_eq!(row("read_file").as_deref(), Some("no"), "{table}");
    assert_eq!(
        row("fx__jira_create_issue").as_deref(),
        Some("yes"),
        "{table}"
    );

    let first = MockModel::start_strict(vec![
        tool_calls(&[call(
            "c1",
            TOOL_SEARCH,
            json!({"query": "jira create issue"}),
        )])
        .into(),
        text(&["found"]).into(),
    ])
    .await;
    let args = [
        "run",
        "--output-format",
        "stream-json",
        "--workspace",
        &ws,
        "--session",
        &session_arg,
        "find the tool",
    ];
    let out = nanohermes(&home, &first.base_url(), &args).await;
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let init: Value = serde_json::from_str(stdout.lines().next().unwrap()).unwrap();
    assert_eq!(init["subtype"], "init");
    let deferred: Vec<&str> = init["deferred_tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(deferred.contains(&"fx__jira_create_issue"), "{init}");
    assert!(
        init["tools"]
            .as_array()
            .unwrap()
            .contains(&json!(TOOL_SEARCH))
    );
    assert!(
        !init["tools"]
            .as_array()
            .unwrap()
            .contains(&json!("fx__jira_create_issue"))
    );
    let requests = first.requests();
    let prompt = requests[0].messages()[0]["content"].as_str().unwrap();
    assert!(
        prompt.contains("More tools exist than are declared (fx: 3"),
        "{prompt}"
    );
    let saved = nanohermes_session::read(&session).unwrap().unwrap();
    assert!(
        saved.surfaced.contains(&"fx__jira_create_issue".to_owned()),
        "{saved:?}"
    );

    let second = MockModel::start_strict(vec![text(&["still here"]).into()]).await;
    let mut args = args;
    args[7] = "use it";
    let out = nanohermes(&home, &second.base_url(), &args).await;
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let requests = second.requests();
    assert_requests_valid(&requests);
    let names = declared(requests[0].body["tools"].as_array().unwrap());
    assert!(
        names.contains(&"fx__jira_create_issue".to_owned()),
        "{names:?}"
    );
}
