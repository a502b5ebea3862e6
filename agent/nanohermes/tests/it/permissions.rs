//! The permission gate over built-in and external tools: modes decided from
//! MCP annotations, `allow` / `deny` in other agents' spellings, the
//! approval question on a real pseudo-terminal and the denial without one.

use std::path::Path;
use std::time::Duration;

use nanohermes_config::{BuiltinName, Mode, ServerSpec};
use nanohermes_core::agent::AgentConfig;
use nanohermes_core::policy::Policy;
use nanohermes_core::policy::approval::{DENIED, UNANSWERED};
use nanohermes_hub::{Hub, HubConfig};
use serde_json::json;

use crate::support::history::assert_requests_valid;
use crate::support::mock_model::{MockModel, Recorded, call, text, tool_calls};
use crate::support::{Capture, agent_with, fixture, hub, settings, tool_result};

fn declared(request: &Recorded) -> Vec<String> {
    request.body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["function"]["name"].as_str().map(str::to_owned))
        .collect()
}

fn config(policy: Policy) -> AgentConfig {
    AgentConfig {
        policy,
        ..AgentConfig::default()
    }
}

#[tokio::test]
async fn plan_mode_over_an_external_server_offers_its_read_only_tools_and_refuses_the_rest_called_from_memory()
 {
    let dir = tempfile::tempdir().unwrap();
    let touched = dir.path().join("touched");
    let mock = MockModel::start(vec![
        tool_calls(&[
            call("c_echo", "fx__echo", json!({"text": "read me"})),
            // Filtered out of the list, called anyway.
            call("c_touch", "fx__touch", json!({"path": touched})),
        ])
        .into(),
        text(&["done"]).into(),
    ])
    .await;
    let hub = hub(dir.path(), vec![fixture("fx")])
        .await
        .offer_only(Policy::read_only());
    let mut agent = agent_with(settings(&mock), hub, config(Policy::read_only()));

    agent.run("look", &mut Capture::default()).await.unwrap();

    let requests = mock.requests();
    assert_requests_valid(&requests);
    let names = declared(&requests[0]);
    for offered in ["read_file", "list_dir", "fx__echo", "fx__pids"] {
        assert!(names.iter().any(|n| n == offered), "{offered}: {names:?}");
    }
    for withheld in ["write_file", "fx__touch", "fx__crash"] {
        assert!(
            !names.iter().any(|n| n == withheld),
            "{withheld}: {names:?}"
        );
    }
    let messages = requests[1].messages();
    assert_eq!(tool_result(messages, "c_echo"), "read me");
    assert_eq!(
        tool_result(messages, "c_touch"),
        "ERROR: `fx__touch` is not available in read-only mode (plan mode: read-only tools only); use read-only tools and describe the change instead"
    );
    assert!(!touched.exists(), "the refused call did not run");
}

#[tokio::test]
async fn deny_beats_allow_and_carried_over_mcp_server_tool_rules_apply() {
    let dir = tempfile::tempdir().unwrap();
    let touched = dir.path().join("touched");
    let mock = MockModel::start(vec![
        tool_calls(&[
            call("c_echo", "fx__echo", json!({"text": "allowed"})),
            call("c_touch", "fx__touch", json!({"path": touched})),
            call(
                "c_write",
                "write_file",
                json!({"path": "w.txt", "content": "x"}),
            ),
        ])
        .into(),
        text(&["done"]).into(),
    ])
    .await;
    // As pasted from a Claude Code settings file.
    let policy = Policy::new(
        Mode::Goal,
        Some(vec!["mcp__fx".into(), "read_file".into()]),
        vec!["mcp__fx__touch".into()],
        false,
    );
    let hub = hub(dir.path(), vec![fixture("fx")])
        .await
        .offer_only(policy.clone());
    let mut agent = agent_with(settings(&mock), hub, config(policy));

    agent.run("go", &mut Capture::default()).await.unwrap();

    let requests = mock.requests();
    assert_requests_valid(&requests);
    let names = declared(&requests[0]);
    for offered in ["read_file", "fx__echo", "fx__pids"] {
        assert!(names.iter().any(|n| n == offered), "{offered}: {names:?}");
    }
    for withheld in ["fx__touch", "write_file", "list_dir"] {
        assert!(
            !names.iter().any(|n| n == withheld),
            "{withheld}: {names:?}"
        );
    }
    let messages = requests[1].messages();
    assert_eq!(tool_result(messages, "c_echo"), "allowed");
    assert_eq!(
        tool_result(messages, "c_touch"),
        "ERROR: `fx__touch` is denied by the rule deny = [\"mcp__fx__touch\"]; use another tool, or ask the user to change the rule"
    );
    assert_eq!(
        tool_result(messages, "c_write"),
        "ERROR: `write_file` is not in the allow list (mcp__fx, read_file); use an allowed tool, or ask the user to change the rule"
    );
    assert!(!touched.exists());
    assert!(!dir.path().join("w.txt").exists());
}

#[tokio::test]
async fn debug_mode_runs_the_shell_but_no_writes() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockModel::start(vec![
        tool_calls(&[
            call(
                "c_run",
                "run_command",
                json!({"command": "echo reproduced"}),
            ),
            call(
                "c_write",
                "write_file",
                json!({"path": "w.txt", "content": "x"}),
            ),
        ])
        .into(),
        text(&["done"]).into(),
    ])
    .await;
    let servers = vec![
        ServerSpec::default_builtin(BuiltinName::Files),
        ServerSpec::default_builtin(BuiltinName::Shell),
    ];
    let hub = Hub::start(HubConfig::new(dir.path(), servers))
        .await
        .unwrap();
    // auto_approve: the shell would otherwise ask, and nobody answers here.
    let policy = Policy::new(Mode::Debug, None, Vec::new(), true);
    let hub = hub.offer_only(policy.clone());
    let mut agent = agent_with(settings(&mock), hub, config(policy));

    agent
        .run("reproduce", &mut Capture::default())
        .await
        .unwrap();

    let requests = mock.requests();
    let names = declared(&requests[0]);
    assert!(names.iter().any(|n| n == "run_command"), "{names:?}");
    assert!(names.iter().any(|n| n == "task_start"), "{names:?}");
    assert!(!names.iter().any(|n| n == "write_file"), "{names:?}");
    let messages = requests[1].messages();
    assert!(
        tool_result(messages, "c_run").contains("reproduced"),
        "{}",
        tool_result(messages, "c_run")
    );
    assert!(
        tool_result(messages, "c_write")
            .starts_with("ERROR: `write_file` is not available in debug mode"),
        "{}",
        tool_result(messages, "c_write")
    );
    assert!(!dir.path().join("w.txt").exists());
    agent.into_tools().shutdown().await;
}

/// A fresh home and workspace for the real binary.
struct World {
    _dir: tempfile::TempDir,
    home: std::path::PathBuf,
    workspace: std::path::PathBuf,
}

impl World {
    fn new() -> World {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let workspace = dir.path().join("ws");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(&workspace).unwrap();
        World {
            home,
            workspace: workspace.canonicalize().unwrap(),
            _dir: dir,
        }
    }

    /// `command` with the model environment aimed at `mock` and nothing
    /// inherited that would change the rules.
    fn env(&self, command: &mut tokio::process::Command, mock: &MockModel) {
        command
            .env("NANOHERMES_HOME", &self.home)
            .env("OPENAI_BASE_URL", mock.base_url())
            .env("OPENAI_API_KEY", "test-key")
            .env("NANOHERMES_MODEL", "main-model")
            .env_remove("NANOHERMES_MODE")
            .env_remove("NANOHERMES_FALLBACK_MODEL")
            .env_remove("NANOHERMES_LOG")
            .kill_on_drop(true);
    }
}

#[tokio::test]
async fn without_a_terminal_default_mode_denies_the_shell_and_writes_with_the_shared_text() {
    let w = World::new();
    let mock = MockModel::start(vec![
        tool_calls(&[
            call("c_run", "run_command", json!({"command": "touch ran.txt"})),
            call(
                "c_write",
                "write_file",
                json!({"path": "w.txt", "content": "x"}),
            ),
            call("c_read", "list_dir", json!({})),
        ])
        .into(),
        text(&["done"]).into(),
    ])
    .await;
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_nanohermes"));
    command.args(["--workspace", w.workspace.to_str().unwrap(), "run", "go"]);
    command.stdin(std::process::Stdio::null());
    w.env(&mut command, &mock);
    let output = tokio::time::timeout(Duration::from_secs(60), command.output())
        .await
        .expect("nanohermes finished")
        .unwrap();
    assert!(output.status.success(), "{output:?}");

    let requests = mock.requests();
    assert_requests_valid(&requests);
    let messages = requests[1].messages();
    assert_eq!(tool_result(messages, "c_run"), UNANSWERED);
    assert!(UNANSWERED.starts_with("ERROR: Command denied: it needs the user's approval"));
    assert_eq!(tool_result(messages, "c_write"), UNANSWERED);
    assert!(!tool_result(messages, "c_read").starts_with("ERROR"));
    assert!(!w.workspace.join("ran.txt").exists());
    assert!(!w.workspace.join("w.txt").exists());

    // auto_approve in the user's config covers them.
    std::fs::write(w.home.join("config.toml"), "auto_approve = true\n").unwrap();
    let mock = MockModel::start(vec![
        tool_calls(&[call(
            "c_run",
            "run_command",
            json!({"command": "touch ran.txt"}),
        )])
        .into(),
        text(&["done"]).into(),
    ])
    .await;
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_nanohermes"));
    command.args(["--workspace", w.workspace.to_str().unwrap(), "run", "go"]);
    command.stdin(std::process::Stdio::null());
    w.env(&mut command, &mock);
    let output = tokio::time::timeout(Duration::from_secs(60), command.output())
        .await
        .expect("nanohermes finished")
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    assert!(
        w.workspace.join("ran.txt").exists(),
        "approved by the config"
    );
}

#[tokio::test]
async fn on_a_terminal_the_user_answers_yes_no_and_always() {
    // util-linux `script` gives the agent a real pseudo-terminal.
    if !Path::new("/usr/bin/script").exists() {
        eprintln!("skipped: /usr/bin/script (util-linux) is not installed");
        return;
    }
    let w = World::new();
    let mock = MockModel::start(vec![
        tool_calls(&[call(
            "c_yes",
            "run_command",
            json!({"command": "touch yes.txt"}),
        )])
        .into(),
        tool_calls(&[call(
            "c_no",
            "run_command",
            json!({"command": "touch no.txt"}),
        )])
        .into(),
        tool_calls(&[call(
            "c_a",
            "write_file",
            json!({"path": "a.txt", "content": "1"}),
        )])
        .into(),
        tool_calls(&[call(
            "c_b",
            "write_file",
            json!({"path": "b.txt", "content": "2"}),
        )])
        .into(),
        text(&["done"]).into(),
    ])
    .await;
    let inner = shlex::try_join([
        env!("CARGO_BIN_EXE_nanohermes"),
        "--workspace",
        w.workspace.to_str().unwrap(),
        "run",
        "go",
    ])
    .unwrap();
    let mut command = tokio::process::Command::new("/usr/bin/script");
    command
        .args(["-qec", &inner, "/dev/null"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped());
    w.env(&mut command, &mock);
    let mut child = command.spawn().unwrap();
    // Typed ahead: the terminal keeps each line until a question reads it.
    let mut stdin = child.stdin.take().unwrap();
    tokio::io::AsyncWriteExt::write_all(&mut stdin, b"y\nn\na\n")
        .await
        .unwrap();
    let output = tokio::time::timeout(Duration::from_secs(90), child.wait_with_output())
        .await
        .expect("script finished")
        .unwrap();
    drop(stdin);
    let screen = String::from_utf8_lossy(&output.stdout);

    let requests = mock.requests();
    assert_eq!(requests.len(), 5, "{screen}");
    assert_requests_valid(&requests);
    assert!(
        !tool_result(requests[1].messages(), "c_yes").starts_with("ERROR"),
        "{screen}"
    );
    assert_eq!(
        tool_result(requests[2].messages(), "c_no"),
        DENIED,
        "{screen}"
    );
    assert!(w.workspace.join("yes.txt").exists(), "{screen}");
    assert!(!w.workspace.join("no.txt").exists(), "{screen}");
    assert!(w.workspace.join("a.txt").exists(), "{screen}");
    assert!(w.workspace.join("b.txt").exists(), "always: {screen}");
    assert_eq!(
        screen
            .matches("Allow? [y]es / [n]o / [a]lways for run_command:")
            .count(),
        2,
        "{screen}"
    );
    assert_eq!(
        screen
            .matches("Allow? [y]es / [n]o / [a]lways for write_file:")
            .count(),
        1,
        "always is remembered for the run: {screen}"
    );
}

/// Debug mode runs the shell to reproduce a problem, never to change the
/// workspace: its commands run in a read-only sandbox, whatever the
/// configured sandbox allows. Two layers hold it, the per-call grant
/// (`Policy::call_grants`) and the mode's sandbox the servers and hooks are
/// given (`config::sandbox_for_mode`); with both turned off this fails.
#[tokio::test]
async fn debug_mode_commands_run_in_a_read_only_sandbox() {
    let w = World::new();
    std::fs::write(w.home.join("config.toml"), "auto_approve = true\n").unwrap();
    let mock = MockModel::start(vec![
        tool_calls(&[call(
            "c_run",
            "run_command",
            json!({"command": "echo ran; echo x > made.txt"}),
        )])
        .into(),
        text(&["done"]).into(),
    ])
    .await;
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_nanohermes"));
    command.args(["--workspace", w.workspace.to_str().unwrap(), "run", "go"]);
    command.stdin(std::process::Stdio::null());
    w.env(&mut command, &mock);
    command.env("NANOHERMES_MODE", "debug");
    let output = tokio::time::timeout(Duration::from_secs(60), command.output())
        .await
        .expect("nanohermes finished")
        .unwrap();
    assert!(output.status.success(), "{output:?}");

    let requests = mock.requests();
    assert_requests_valid(&requests);
    let result = tool_result(requests[1].messages(), "c_run");
    assert!(result.contains("ran"), "the command ran: {result}");
    assert!(!w.workspace.join("made.txt").exists(), "{result}");
}
