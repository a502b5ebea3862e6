//! Subagents over MCP: a server offering `run_task` (the fixture with
//! `--agent`, a real child process) mounted from the config and from
//! `--agent`, the `agent_list` meta-tool, and the recursion guard carried
//! in `NANOHERMES_AGENT_DEPTH`, through the real binary and the hub.

use std::path::{Path, PathBuf};
use std::time::Duration;

use nanohermes_config::{Mode, Transport};
use nanohermes_core::policy::Policy;
use nanohermes_hub::{AGENT_DEPTH_VAR, AGENT_LIST, DEFAULT_MAX_AGENT_DEPTH, Hub, HubConfig};
use serde_json::{Map, Value, json};

use crate::support::history::assert_requests_valid;
use crate::support::mock_model::{MockModel, Recorded, call, text, tool_calls};
use crate::support::{fixture, fixture_server, tool_result};

/// A deadlock guard, not a speed claim.
const HANG_GUARD: Duration = Duration::from_secs(60);

struct Output {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// Runs the real binary with `home` as NANOHERMES_HOME, `env` on top of a
/// clean model environment (and no inherited agent depth).
async fn nanohermes(home: &Path, workspace: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_nanohermes"));
    command
        .arg("--workspace")
        .arg(workspace)
        .args(args)
        .env("NANOHERMES_HOME", home)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    for name in [
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "OPENAI_MODEL",
        "NANOHERMES_MODEL",
        "NANOHERMES_MODE",
        "NANOHERMES_LOG",
        AGENT_DEPTH_VAR,
    ] {
        command.env_remove(name);
    }
    command.envs(env.iter().copied());
    let output = tokio::time::timeout(HANG_GUARD, command.output())
        .await
        .expect("nanohermes finished")
        .expect("nanohermes ran");
    Output {
        code: output.status.code(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

fn on_mock(mock: &MockModel) -> Vec<(&'static str, String)> {
    vec![
        ("OPENAI_BASE_URL", mock.base_url()),
        ("OPENAI_API_KEY", "test-key".to_owned()),
        ("NANOHERMES_MODEL", "main-model".to_owned()),
    ]
}

fn declared(request: &Recorded) -> Vec<String> {
    request.body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["function"]["name"].as_str().map(str::to_owned))
        .collect()
}

/// `command = FIXTURE` and `args` as TOML, for a config table.
fn fixture_toml(args: &[&str]) -> String {
    format!(
        "command = {:?}\nargs = {}\n",
        fixture_server().display().to_string(),
        json!(args)
    )
}

/// `--agent`'s value: `NAME=FIXTURE ARGS...`, quoted for its shell-style split.
fn agent_flag(name: &str, args: &[&str]) -> String {
    let mut words = vec![fixture_server().display().to_string()];
    words.extend(args.iter().map(|a| a.to_string()));
    let quoted: Vec<String> = words
        .iter()
        .map(|w| shlex::try_quote(w).unwrap().into_owned())
        .collect();
    format!("{name}={}", quoted.join(" "))
}

fn dirs() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let root = tempfile::tempdir().unwrap();
    let base = root.path().canonicalize().unwrap();
    let (home, workspace) = (base.join("home"), base.join("ws"));
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&workspace).unwrap();
    (root, home, workspace)
}

#[tokio::test]
async fn agent_list_names_each_mounted_agent_with_what_it_is_for_and_its_run_task_runs() {
    let (_root, home, workspace) = dirs();
    // `helper` from the config, with a description (it beats the
    // instructions); `other` from --agent, described by its instructions.
    std::fs::write(
        home.join("config.toml"),
        format!(
            "[mcp_servers.helper]\n{}description = \"Reviews Rust code\\nfor soundness\"\n",
            fixture_toml(&["--agent", "--instructions", "Ignored: the description wins"])
        ),
    )
    .unwrap();
    let other = agent_flag(
        "other",
        &[
            "--agent",
            "--instructions",
            "Writes the docs.\n\nOnly docs.",
        ],
    );
    let plain = agent_flag("plain", &[]);
    let mock = MockModel::start(vec![
        tool_calls(&[
            call("call_list", AGENT_LIST, json!({})),
            call(
                "call_task",
                "helper__run_task",
                json!({"task": "review src/lib.rs"}),
            ),
        ])
        .into(),
        text(&["done"]).into(),
    ])
    .await;
    let env = on_mock(&mock);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let out = nanohermes(
        &home,
        &workspace,
        &[
            "--mode",
            "goal",
            "--agent",
            &other,
            "--agent",
            &plain,
            "run",
            "delegate it",
        ],
        &env,
    )
    .await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);

    let requests = mock.requests();
    assert_requests_valid(&requests);
    let names = declared(&requests[0]);
    for wanted in [
        AGENT_LIST,
        "helper__run_task",
        "other__run_task",
        "plain__echo",
    ] {
        assert!(names.iter().any(|n| n == wanted), "{wanted} in {names:?}");
    }
    let messages = requests[1].messages();
    assert_eq!(
        tool_result(messages, "call_list"),
        "Subagents (call one's tool with a whole task in plain words; it works on its own and \
         answers with its result):\n\
         - helper__run_task: Reviews Rust code for soundness\n\
         - other__run_task: Writes the docs. Only docs."
    );
    // The child runs one level below this agent, which runs at depth 0.
    assert_eq!(
        tool_result(messages, "call_task"),
        "fixture agent did: review src/lib.rs (depth 1)"
    );
    // A server mounted with --agent that takes no task is said to be one.
    assert_eq!(
        out.stderr
            .matches("server plain was mounted with --agent but offers no run_task tool")
            .count(),
        1,
        "{}",
        out.stderr
    );
}

#[tokio::test]
async fn agent_list_is_absent_without_a_run_task_server_and_when_the_mode_withholds_every_run_task()
{
    let dir = tempfile::tempdir().unwrap();
    let names = |hub: &Hub| -> Vec<String> {
        hub.declarations()
            .iter()
            .filter_map(|d| d["function"]["name"].as_str().map(str::to_owned))
            .collect()
    };

    let plain = crate::support::hub(dir.path(), vec![fixture("plain")]).await;
    assert!(!names(&plain).contains(&AGENT_LIST.to_owned()));
    let answer = plain.call(AGENT_LIST, Map::new()).await;
    assert!(
        answer.starts_with("ERROR: unknown tool agent_list"),
        "{answer}"
    );
    plain.shutdown().await;

    let mut agent = fixture("helper");
    if let Transport::Stdio(stdio) = &mut agent.transport {
        stdio.args.push("--agent".into());
    }
    let hub = crate::support::hub(dir.path(), vec![agent]).await;
    assert!(names(&hub).contains(&AGENT_LIST.to_owned()));
    // The fixture's run_task says it is destructive: plan mode offers
    // read-only tools only, so no agent is offered and neither is the list.
    let plan = hub.offer_only(Policy::new(Mode::Plan, None, Vec::new(), false));
    let offered = names(&plan);
    assert!(offered.contains(&"helper__echo".to_owned()), "{offered:?}");
    assert!(
        !offered.contains(&"helper__run_task".to_owned()),
        "{offered:?}"
    );
    assert!(!offered.contains(&AGENT_LIST.to_owned()), "{offered:?}");
    plan.shutdown().await;
}

fn args(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

#[tokio::test]
async fn every_external_child_runs_one_level_deeper_and_its_env_cannot_reset_that() {
    let dir = tempfile::tempdir().unwrap();
    let mut agent = fixture("helper");
    if let Transport::Stdio(stdio) = &mut agent.transport {
        stdio.args.push("--agent".into());
        // A config cannot reset the count.
        stdio.env.insert(AGENT_DEPTH_VAR.into(), "0".into());
    }
    let config = HubConfig {
        agent_depth: 1,
        ..HubConfig::new(dir.path(), vec![agent])
    };
    let hub = Hub::start(config).await.expect("hub starts");
    assert_eq!(
        hub.call("helper__env", args(json!({"name": AGENT_DEPTH_VAR})))
            .await,
        "2"
    );
    assert_eq!(
        hub.call("helper__run_task", args(json!({"task": "t"})))
            .await,
        "fixture agent did: t (depth 2)"
    );
    hub.shutdown().await;
}

#[tokio::test]
async fn at_the_depth_limit_no_run_task_is_offered_and_the_warning_says_why_once() {
    let (_root, home, workspace) = dirs();
    let helper = agent_flag("helper", &["--agent"]);
    let mock = MockModel::start(vec![
        // Called from memory: the agent at the limit must not run it.
        tool_calls(&[call("call_task", "helper__run_task", json!({"task": "t"}))]).into(),
        text(&["done"]).into(),
    ])
    .await;
    let env = on_mock(&mock);
    let mut env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let limit = DEFAULT_MAX_AGENT_DEPTH.to_string();
    env.push((AGENT_DEPTH_VAR, &limit));
    let out = nanohermes(
        &home,
        &workspace,
        &["--mode", "goal", "--agent", &helper, "run", "delegate it"],
        &env,
    )
    .await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let warning = format!(
        "subagent helper not mounted: this agent is already {DEFAULT_MAX_AGENT_DEPTH} levels deep \
         (max_agent_depth = {DEFAULT_MAX_AGENT_DEPTH})"
    );
    assert_eq!(out.stderr.matches(&warning).count(), 1, "{}", out.stderr);

    let requests = mock.requests();
    assert_requests_valid(&requests);
    let names = declared(&requests[0]);
    assert!(
        names.contains(&"helper__echo".to_owned()),
        "the rest is mounted: {names:?}"
    );
    assert!(!names.contains(&"helper__run_task".to_owned()), "{names:?}");
    assert!(!names.contains(&AGENT_LIST.to_owned()), "{names:?}");
    let refused = tool_result(requests[1].messages(), "call_task");
    assert!(
        refused.starts_with("ERROR: unknown tool `helper__run_task`"),
        "{refused}"
    );

    // `nanohermes mcp call` is refused with the reason; a raised
    // max_agent_depth mounts it again at the same depth.
    let call = nanohermes(
        &home,
        &workspace,
        &[
            "--agent",
            &helper,
            "mcp",
            "call",
            "helper",
            "run_task",
            r#"{"task":"t"}"#,
        ],
        &[(AGENT_DEPTH_VAR, &limit)],
    )
    .await;
    assert_ne!(call.code, Some(0));
    assert!(call.stderr.contains(&warning), "{}", call.stderr);
    std::fs::write(
        home.join("config.toml"),
        format!("max_agent_depth = {}\n", DEFAULT_MAX_AGENT_DEPTH + 1),
    )
    .unwrap();
    let raised = nanohermes(
        &home,
        &workspace,
        &[
            "--agent",
            &helper,
            "mcp",
            "call",
            "helper",
            "run_task",
            r#"{"task":"t"}"#,
        ],
        &[(AGENT_DEPTH_VAR, &limit)],
    )
    .await;
    assert_eq!(raised.code, Some(0), "{}", raised.stderr);
    assert!(
        raised.stdout.contains(&format!(
            "fixture agent did: t (depth {})",
            DEFAULT_MAX_AGENT_DEPTH + 1
        )),
        "{}",
        raised.stdout
    );
}

/// `--agent 'NAME=NANOHERMES serve --root WS'`, quoted for its split.
fn serve_agent_flag(name: &str, workspace: &Path) -> String {
    let words = [
        env!("CARGO_BIN_EXE_nanohermes").to_owned(),
        "serve".to_owned(),
        "--root".to_owned(),
        workspace.display().to_string(),
    ];
    let quoted: Vec<String> = words
        .iter()
        .map(|w| shlex::try_quote(w).unwrap().into_owned())
        .collect();
    format!("{name}={}", quoted.join(" "))
}

/// agent/README's subagent, as written: another `nanohermes serve` mounted
/// with `--agent` and nothing else. It runs on the parent's model: the
/// same base URL and model, and the key, which reaches it through its
/// environment (the mock sees it as the bearer token).
#[tokio::test]
async fn a_nanohermes_serve_subagent_runs_on_the_parents_model_and_key() {
    let (_root, home, workspace) = dirs();
    let reviewer = serve_agent_flag("reviewer", &workspace);
    let mock = MockModel::start(vec![
        // The parent delegates...
        tool_calls(&[call(
            "call_task",
            "reviewer__run_task",
            json!({"task": "review the change"}),
        )])
        .into(),
        // ...the subagent answers its task...
        text(&["the change looks right"]).into(),
        // ...and the parent finishes.
        text(&["done"]).into(),
    ])
    .await;
    let env = on_mock(&mock);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let out = nanohermes(
        &home,
        &workspace,
        &["--mode", "goal", "--agent", &reviewer, "run", "delegate it"],
        &env,
    )
    .await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);

    let requests = mock.requests();
    assert_eq!(requests.len(), 3, "{requests:#?}");
    let child = &requests[1];
    assert_eq!(child.body["model"], "main-model");
    assert_eq!(child.header("authorization"), Some("Bearer test-key"));
    // The child is an agent of its own: it declares its own tools, and no
    // run_task of its own parent.
    assert!(!declared(child).iter().any(|n| n.ends_with("run_task")));
    let answer = tool_result(requests[2].messages(), "call_task");
    assert!(answer.contains("the change looks right"), "{answer}");
    assert!(!answer.starts_with("ERROR"), "{answer}");
}

/// The entry's own `env` beats what the parent passes down; a subagent
/// that fails is an `ERROR:` result the model reads, and a run whose every
/// subagent call failed says so and exits 1 (its answer still printed).
#[tokio::test]
async fn a_failing_subagent_is_an_error_result_and_a_run_whose_every_delegation_failed_exits_1() {
    let (_root, home, workspace) = dirs();
    // Nothing listens on port 9 of loopback: the child's model is down.
    std::fs::write(
        home.join("config.toml"),
        format!(
            "max_retries = 0\n[mcp_servers.reviewer]\ncommand = {:?}\nargs = [\"serve\", \"--root\", {:?}]\n\
             env = {{ OPENAI_BASE_URL = \"http://127.0.0.1:9/v1\" }}\n",
            env!("CARGO_BIN_EXE_nanohermes"),
            workspace.display().to_string()
        ),
    )
    .unwrap();
    let mock = MockModel::start(vec![
        tool_calls(&[call(
            "call_task",
            "reviewer__run_task",
            json!({"task": "review the change"}),
        )])
        .into(),
        text(&["the reviewer could not run"]).into(),
    ])
    .await;
    let env = on_mock(&mock);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let out = nanohermes(
        &home,
        &workspace,
        &["--mode", "goal", "run", "delegate it"],
        &env,
    )
    .await;
    let requests = mock.requests();
    assert_eq!(
        requests.len(),
        2,
        "the child never reached this model: {requests:#?}"
    );
    let answer = tool_result(requests[1].messages(), "call_task");
    assert!(
        answer.starts_with("ERROR: subagent reviewer failed: "),
        "{answer}"
    );
    assert!(answer.contains("127.0.0.1:9"), "{answer}");

    assert_eq!(out.code, Some(1), "{}", out.stderr);
    assert!(
        out.stdout.contains("the reviewer could not run"),
        "{}",
        out.stdout
    );
    assert!(
        out.stderr
            .contains("every subagent call failed (1 of 1), so the task was not delegated"),
        "{}",
        out.stderr
    );

    // The JSON result says it too: an error, whatever the model's answer.
    let mock = MockModel::start(vec![
        tool_calls(&[call(
            "call_task",
            "reviewer__run_task",
            json!({"task": "review the change"}),
        )])
        .into(),
        text(&["the reviewer could not run"]).into(),
    ])
    .await;
    let env = on_mock(&mock);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let out = nanohermes(
        &home,
        &workspace,
        &[
            "--mode",
            "goal",
            "run",
            "--output-format",
            "json",
            "delegate it",
        ],
        &env,
    )
    .await;
    assert_eq!(out.code, Some(1), "{}", out.stderr);
    let result: serde_json::Value = serde_json::from_str(out.stdout.trim()).unwrap();
    assert_eq!(result["is_error"], true, "{result}");
    assert_eq!(result["status"], "error", "{result}");
    assert_eq!(result["result"], "the reviewer could not run", "{result}");
    assert!(
        result["error"]
            .as_str()
            .is_some_and(|e| e.contains("every subagent call failed")),
        "{result}"
    );
}

/// Another server gets the allow-list only: not the key, not the model.
#[tokio::test]
async fn any_other_server_gets_neither_the_key_nor_the_model_settings() {
    let (_root, home, workspace) = dirs();
    let helper = agent_flag("helper", &["--agent"]);
    let mock = MockModel::start(vec![
        tool_calls(&[
            call("k", "helper__env", json!({"name": "OPENAI_API_KEY"})),
            call("u", "helper__env", json!({"name": "OPENAI_BASE_URL"})),
        ])
        .into(),
        text(&["done"]).into(),
    ])
    .await;
    let env = on_mock(&mock);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let out = nanohermes(
        &home,
        &workspace,
        &["--mode", "goal", "--agent", &helper, "run", "look"],
        &env,
    )
    .await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let requests = mock.requests();
    for id in ["k", "u"] {
        assert_eq!(tool_result(requests[1].messages(), id), "(unset)", "{id}");
    }
}
