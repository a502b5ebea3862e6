use nanohermes_core::agent::AgentParts;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use nanohermes_config::{HookEvent, HookGroup};
use nanohermes_core::hooks::Hooks;
use serde_json::{Value, json};

use crate::support::history::assert_requests_valid;
use crate::support::mock_model::{MockModel, call, text, tool_calls};
use crate::support::{Capture, agent_with, fixture, hub, settings, tool_result};

fn hooks(workspace: &Path, config: Value) -> Hooks {
    let groups: BTreeMap<HookEvent, Vec<HookGroup>> = serde_json::from_value(config).unwrap();
    Hooks::new(&groups, workspace, "default").unwrap()
}

fn pre_tool_use(matcher: &str, command: &str, timeout: u64) -> Value {
    json!({"PreToolUse": [{"matcher": matcher, "hooks": [
        {"type": "command", "command": command, "timeout": timeout}
    ]}]})
}

/// Runs one write_file call under `hooks`; returns its result and whether the file was written.
async fn write_under(workspace: &Path, config: Value) -> (String, bool) {
    let mock = MockModel::start(vec![
        tool_calls(&[call(
            "call_w",
            "write_file",
            json!({"path": "a.txt", "content": "x"}),
        )])
        .into(),
        text(&["done"]).into(),
    ])
    .await;
    let mut agent = agent_with(
        settings(&mock),
        hub(workspace, vec![]).await,
        AgentParts {
            hooks: hooks(workspace, config),
            ..Default::default()
        },
    );
    let mut ui = Capture::default();
    let run = agent.run("write a.txt", &mut ui);
    tokio::time::timeout(Duration::from_secs(60), run)
        .await
        .expect("the run does not hang")
        .unwrap();
    assert_requests_valid(&mock.requests());
    let result = tool_result(agent.messages(), "call_w").to_owned();
    (result, workspace.join("a.txt").exists())
}

#[tokio::test]
async fn a_pre_tool_use_hook_exiting_2_vetoes_the_call_and_reads_the_event_on_stdin() {
    let dir = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let event_file = out.path().join("event.json");
    let command = format!(
        "cat > '{}'; echo 'no writes here, ask the user first' >&2; exit 2",
        event_file.display()
    );
    let config = pre_tool_use("write_file|edit_file", &command, 30);

    let (result, written) = write_under(dir.path(), config).await;

    assert_eq!(
        result,
        "ERROR: blocked by a PreToolUse hook: no writes here, ask the user first; the call was not run"
    );
    assert!(!written, "the call was not dispatched");
    let event: Value =
        serde_json::from_str(&std::fs::read_to_string(&event_file).unwrap()).unwrap();
    assert_eq!(event["hook_event_name"], "PreToolUse");
    assert_eq!(event["event"], "PreToolUse", "goose's name for the field");
    assert_eq!(event["tool_name"], "write_file");
    assert_eq!(
        event["tool_input"],
        json!({"path": "a.txt", "content": "x"})
    );
    assert_eq!(event["tool_use_id"], "call_w");
    assert_eq!(event["cwd"], dir.path().display().to_string());
    assert_eq!(event["permission_mode"], "default");
    assert!(event["session_id"].as_str().is_some_and(|s| !s.is_empty()));
}

#[tokio::test]
async fn other_exit_codes_and_json_decisions_veto_too_and_exit_0_lets_the_call_run() {
    let cases = [
        ("echo 'policy says no'; exit 1", Some("policy says no")),
        (
            r#"echo '{"decision":"block","reason":"use the patch tool instead"}'"#,
            Some("use the patch tool instead"),
        ),
        (
            r#"echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"read-only today"}}'"#,
            Some("read-only today"),
        ),
        (r#"cat >/dev/null; echo '{"decision":"approve"}'"#, None),
        ("exit 0", None),
    ];
    for (command, blocked) in cases {
        let dir = tempfile::tempdir().unwrap();
        let (result, written) = write_under(dir.path(), pre_tool_use("*", command, 30)).await;
        match blocked {
            Some(reason) => {
                assert_eq!(
                    result,
                    format!("ERROR: blocked by a PreToolUse hook: {reason}; the call was not run"),
                    "{command}"
                );
                assert!(!written, "{command}");
            }
            None => {
                assert!(!result.starts_with("ERROR"), "{command}: {result}");
                assert!(written, "{command}");
            }
        }
    }
}

fn is_gone(pid: &str) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        // A zombie is dead; only its parent has not collected it yet.
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .is_some_and(|s| s.trim_start().starts_with('Z')),
    }
}

#[tokio::test]
async fn a_pre_tool_use_hook_past_its_timeout_is_killed_with_its_children_and_blocks() {
    let dir = tempfile::tempdir().unwrap();
    // The hook's own pids (`$!`) are those of its sandbox's PID namespace:
    // its child is found by an argument no other process has.
    let token = format!("300.{}77", std::process::id());
    let command = format!("sleep {token} & wait");

    let (result, written) = write_under(dir.path(), pre_tool_use("write_file", &command, 1)).await;

    assert_eq!(
        result,
        format!(
            "ERROR: blocked by a PreToolUse hook: `{command}` did not finish within its 1 s timeout and was stopped; the call was not run"
        )
    );
    assert!(!written, "a guard that did not answer did not approve");
    // Generous: the kill is sent before the result is returned; this only
    // waits for the kernel to finish the process.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !with_token(&token).is_empty() && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        with_token(&token).is_empty(),
        "the hook's background child was killed"
    );
}

/// Live processes with `token` as one of their arguments.
fn with_token(token: &str) -> Vec<String> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| c.split(|b| *b == 0).any(|arg| arg == token.as_bytes()))
                && !is_gone(pid)
        })
        .collect()
}

#[tokio::test]
async fn post_tool_use_appends_additional_context_and_sees_the_result() {
    let dir = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let event_file = out.path().join("post.json");
    let config = json!({"PostToolUse": [
        {"matcher": "^write_file$", "hooks": [
            {"type": "command", "command": format!("cat > '{}'", event_file.display())},
            {"type": "command", "command": r#"echo '{"hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"run cargo fmt next"}}'"#},
            {"type": "command", "command": "echo 'plain stdout stays out of the result'"}
        ]},
        {"matcher": "^read_file$", "hooks": [{"type": "command", "command": "echo '{\"additionalContext\":\"wrong tool\"}'"}]}
    ]});

    let (result, written) = write_under(dir.path(), config).await;

    assert!(written);
    let (original, note) = result.split_once("\n\n").expect("a note was appended");
    assert!(!original.starts_with("ERROR"), "{original}");
    assert_eq!(note, "Note from a PostToolUse hook: run cargo fmt next");
    let event: Value =
        serde_json::from_str(&std::fs::read_to_string(&event_file).unwrap()).unwrap();
    assert_eq!(event["hook_event_name"], "PostToolUse");
    assert_eq!(event["tool_response"], original);
    assert_eq!(event["tool_use_id"], "call_w");
}

#[tokio::test]
async fn a_matcher_also_sees_the_mcp_server_tool_spelling_and_skips_other_tools() {
    let dir = tempfile::tempdir().unwrap();
    let config = json!({"PreToolUse": [
        {"matcher": "^mcp__fx__echo$", "hooks": [{"type": "command", "command": "echo 'copied rule' >&2; exit 2"}]},
        {"matcher": "^read_file$", "hooks": [{"type": "command", "command": "exit 2"}]}
    ]});
    let mock = MockModel::start(vec![
        tool_calls(&[
            call("call_e", "fx__echo", json!({"text": "hi"})),
            call(
                "call_w",
                "write_file",
                json!({"path": "a.txt", "content": "x"}),
            ),
        ])
        .into(),
        text(&["done"]).into(),
    ])
    .await;
    let mut agent = agent_with(
        settings(&mock),
        hub(dir.path(), vec![fixture("fx")]).await,
        AgentParts {
            hooks: hooks(dir.path(), config),
            ..Default::default()
        },
    );

    agent
        .run("echo and write", &mut Capture::default())
        .await
        .unwrap();

    assert_eq!(
        tool_result(agent.messages(), "call_e"),
        "ERROR: blocked by a PreToolUse hook: copied rule; the call was not run"
    );
    assert!(!tool_result(agent.messages(), "call_w").starts_with("ERROR"));
    assert!(dir.path().join("a.txt").exists());
    assert_requests_valid(&mock.requests());
}

#[tokio::test]
async fn session_start_and_prompt_hooks_add_context_and_stop_hooks_run_after_each_run() {
    let dir = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let stops = out.path().join("stops");
    let config = json!({
        "SessionStart": [{"hooks": [{"type": "command", "command": "echo 'The build is make.'"}]}],
        "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "echo '{\"hookSpecificOutput\":{\"additionalContext\":\"Today is a holiday.\"}}'"}]}],
        "Stop": [{"hooks": [{"type": "command", "command": format!("cat >> '{}'; echo >> '{}'", stops.display(), stops.display())}]}]
    });
    let mock = MockModel::start(vec![text(&["one"]).into(), text(&["two"]).into()]).await;
    let mut agent = agent_with(
        settings(&mock),
        hub(dir.path(), vec![]).await,
        AgentParts {
            hooks: hooks(dir.path(), config),
            ..Default::default()
        },
    );
    let mut ui = Capture::default();

    agent.run("first", &mut ui).await.unwrap();
    agent.run("second", &mut ui).await.unwrap();

    let requests = mock.requests();
    assert_requests_valid(&requests);
    let last_user = |i: usize| {
        requests[i]
            .messages()
            .iter()
            .rev()
            .find(|m| m["role"] == "user")
            .unwrap()["content"]
            .clone()
    };
    assert_eq!(
        last_user(0),
        "first\n\nThe build is make.\n\nToday is a holiday."
    );
    assert_eq!(
        last_user(1),
        "second\n\nToday is a holiday.",
        "SessionStart runs once"
    );
    let stops = std::fs::read_to_string(&stops).unwrap();
    let events: Vec<Value> = stops
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(events.len(), 2, "{stops}");
    assert_eq!(events[0]["hook_event_name"], "Stop");
    assert!(ui.notices.is_empty(), "{:?}", ui.notices);
}

#[tokio::test]
async fn a_user_prompt_submit_hook_exiting_2_blocks_the_prompt_before_the_model_is_asked() {
    let dir = tempfile::tempdir().unwrap();
    let config = json!({"UserPromptSubmit": [{"hooks": [
        {"type": "command", "command": "grep -q password && { echo 'the prompt holds a password' >&2; exit 2; }; exit 0"}
    ]}]});
    let mock = MockModel::start(vec![]).await;
    let mut agent = agent_with(
        settings(&mock),
        hub(dir.path(), vec![]).await,
        AgentParts {
            hooks: hooks(dir.path(), config),
            ..Default::default()
        },
    );
    let mut ui = Capture::default();

    let summary = agent.run("my password is hunter2", &mut ui).await.unwrap();

    assert_eq!(summary.iterations, 0);
    assert!(mock.requests().is_empty(), "the model was not asked");
    assert_eq!(
        ui.notices,
        ["the prompt was blocked by a UserPromptSubmit hook: the prompt holds a password"]
    );
    assert!(
        agent.messages().iter().all(|m| m["role"] != "user"),
        "the blocked prompt is not in the history"
    );
}

fn load(home: &Path, workspace: &Path) -> nanohermes_config::Loaded {
    use nanohermes_config::{self as sources, ConfigSources, Overrides};
    sources::load(&ConfigSources {
        nanohermes_home: Some(home.join(".nanohermes")),
        home: Some(home.to_path_buf()),
        workspace: workspace.to_path_buf(),
        env: BTreeMap::new(),
        flags: Overrides::default(),
    })
    .unwrap()
}

#[test]
fn project_hooks_json_is_read_only_for_a_trusted_project_after_the_config_hooks() {
    let root = tempfile::tempdir().unwrap();
    let base = root.path().canonicalize().unwrap();
    let (home, workspace) = (base.join("home"), base.join("repo"));
    std::fs::create_dir_all(home.join(".nanohermes")).unwrap();
    std::fs::create_dir_all(workspace.join(".nanohermes")).unwrap();
    let user = "[[hooks.PreToolUse]]\nmatcher = \"*\"\nhooks = [{ type = \"command\", command = \"./mine.sh\" }]\n";
    std::fs::write(home.join(".nanohermes/config.toml"), user).unwrap();
    // As Claude Code's hooks documentation writes it.
    let hooks_json = r#"{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
        {"type": "command", "command": "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/check.sh", "timeout": 30}
    ]}]}}"#;
    std::fs::write(workspace.join(".nanohermes/hooks.json"), hooks_json).unwrap();

    let untrusted = load(&home, &workspace);
    let commands = |loaded: &nanohermes_config::Loaded| -> Vec<String> {
        loaded.settings.hooks[&HookEvent::PreToolUse]
            .iter()
            .flat_map(|g| g.hooks.iter().map(|h| h.command.clone()))
            .collect()
    };
    assert_eq!(commands(&untrusted), ["./mine.sh"]);
    assert!(
        untrusted.warnings[0].starts_with(&format!(
            "skipped {}/.nanohermes/hooks.json because",
            workspace.display()
        )),
        "{:?}",
        untrusted.warnings
    );

    let trust = format!(
        "[projects.{:?}]\ntrust_level = \"trusted\"\n\n{user}",
        workspace.display().to_string()
    );
    std::fs::write(home.join(".nanohermes/config.toml"), trust).unwrap();
    // And the file's content, as answering yes or `nanohermes trust` records it.
    let sources = nanohermes_config::ConfigSources {
        nanohermes_home: Some(home.join(".nanohermes")),
        home: Some(home.to_path_buf()),
        workspace: workspace.to_path_buf(),
        env: BTreeMap::new(),
        flags: Default::default(),
    };
    nanohermes_config::trust_check(&sources)
        .unwrap()
        .trust_now()
        .unwrap();
    let trusted = load(&home, &workspace);
    assert_eq!(
        commands(&trusted),
        [
            "./mine.sh",
            "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/check.sh"
        ]
    );
    assert!(
        trusted
            .files
            .contains(&workspace.join(".nanohermes/hooks.json"))
    );
    assert!(trusted.warnings.is_empty(), "{:?}", trusted.warnings);
}
