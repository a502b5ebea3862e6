//! Attacks from a command, over real MCP (in-process client): secrets in
//! the environment, and processes that try to outlive their command with
//! `setsid`, `nohup` or a double fork.

mod common;

use std::path::Path;
use std::time::Duration;

use common::{attacks, call, eventually, unique_sleep, with_token};
use mcp_tools::ToolContext;
use nanohermes_shell::ShellServer;
use rmcp::RoleClient;
use rmcp::service::RunningService;
use serde_json::json;

async fn connect(root: &Path) -> RunningService<RoleClient, ()> {
    mcp_tools::in_process::connect(ShellServer::new(ToolContext::new(root).unwrap()))
        .await
        .unwrap()
}

#[allow(unsafe_code)]
fn set_secret_env() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        for (name, value) in [
            ("OPENAI_API_KEY", "sk-leak"),
            ("GITHUB_TOKEN", "ghp-leak"),
            ("AWS_SECRET_ACCESS_KEY", "aws-leak"),
            ("my_password", "hunter2"),
            ("DB_CREDENTIALS", "db-leak"),
            ("MODEL_AUTH_FOR_TEST", "model-leak"),
            ("ORDINARY_SETTING", "plain"),
        ] {
            // SAFETY: set once under a `Once`, before this test spawns
            // anything; the other tests of this binary only spawn children,
            // which read the environment through `std::env::vars_os`.
            unsafe { std::env::set_var(name, value) };
        }
        mcp_tools::spawn::withhold("MODEL_AUTH_FOR_TEST");
    });
}

#[tokio::test]
async fn a_command_gets_no_secret_from_the_environment() {
    set_secret_env();
    let dir = tempfile::tempdir().unwrap();
    let client = connect(dir.path()).await;
    let (env, _) = call(&client, "run_command", json!({"command": "env"})).await;
    for secret in [
        "OPENAI_API_KEY",
        "GITHUB_TOKEN",
        "AWS_SECRET_ACCESS_KEY",
        "my_password",
        "DB_CREDENTIALS",
        "MODEL_AUTH_FOR_TEST",
    ] {
        assert!(
            !env.contains(&format!("\n{secret}=")),
            "{secret} leaked:\n{env}"
        );
    }
    assert!(!env.contains("-leak") && !env.contains("hunter2"), "{env}");
    for kept in ["PATH=", "HOME=", "ORDINARY_SETTING=plain"] {
        assert!(env.contains(&format!("\n{kept}")), "{kept} missing:\n{env}");
    }
}

fn attack(name: &str, token: &str) -> String {
    attacks(token)
        .into_iter()
        .find(|(n, _)| *n == name)
        .unwrap()
        .1
}

fn names() -> Vec<&'static str> {
    attacks("x").into_iter().map(|(n, _)| n).collect()
}

async fn assert_gone(what: &str, token: &str) {
    assert!(
        eventually(|| with_token(token).is_empty()).await,
        "{what}: left behind {:?}",
        with_token(token)
    );
}

#[tokio::test]
async fn nothing_a_finished_command_started_survives_it() {
    let dir = tempfile::tempdir().unwrap();
    let client = connect(dir.path()).await;
    for name in names() {
        let token = unique_sleep();
        let command = format!("{}\nsleep 0.5\necho started", attack(name, &token));
        let (text, _) = call(&client, "run_command", json!({"command": command})).await;
        assert!(text.starts_with("exit code: 0"), "{name}: {text}");
        assert_gone(name, &token).await;
    }
}

#[tokio::test]
async fn nothing_survives_a_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let client = connect(dir.path()).await;
    for name in names() {
        let token = unique_sleep();
        let command = format!("{}\nsleep {token}", attack(name, &token));
        let (text, _) = call(
            &client,
            "run_command",
            json!({"command": command, "timeout_secs": 1}),
        )
        .await;
        assert!(text.starts_with("timed out after 1 s"), "{name}: {text}");
        assert_gone(name, &token).await;
    }
}

#[tokio::test]
async fn nothing_survives_a_cancelled_call() {
    let dir = tempfile::tempdir().unwrap();
    let client = connect(dir.path()).await;
    for name in names() {
        let token = unique_sleep();
        let command = format!("{}\nsleep {token}", attack(name, &token));
        {
            // Dropping the call future sends notifications/cancelled.
            let running = call(&client, "run_command", json!({"command": command}));
            tokio::pin!(running);
            let started = async {
                while with_token(&token).len() < 2 {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            };
            tokio::select! {
                _ = &mut running => panic!("{name}: the command should still be running"),
                _ = started => {}
            }
        }
        assert_gone(name, &token).await;
    }
}

#[tokio::test]
async fn a_tasks_tree_lives_until_task_kill_and_then_dies_whole() {
    let dir = tempfile::tempdir().unwrap();
    let client = connect(dir.path()).await;
    for (id, name) in names().into_iter().enumerate() {
        let token = unique_sleep();
        let command = format!("{}\nsleep {token}", attack(name, &token));
        let (started, _) = call(&client, "task_start", json!({"command": command})).await;
        assert!(started.starts_with("started task"), "{started}");
        assert!(
            eventually(|| with_token(&token).len() == 2).await,
            "{name}: the task's processes did not start"
        );
        // Still there between calls: a task is meant to keep running.
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(with_token(&token).len(), 2, "{name}");
        let (text, _) = call(&client, "task_kill", json!({"id": id + 1})).await;
        assert!(text.contains("(stopped by task_kill)"), "{name}: {text}");
        assert_gone(name, &token).await;
    }
}

#[tokio::test]
async fn nothing_a_finished_task_started_survives_it() {
    let dir = tempfile::tempdir().unwrap();
    let client = connect(dir.path()).await;
    for (id, name) in names().into_iter().enumerate() {
        let token = unique_sleep();
        let command = format!("{}\nsleep 1", attack(name, &token));
        call(&client, "task_start", json!({"command": command})).await;
        assert!(
            eventually(|| !with_token(&token).is_empty()).await,
            "{name}: the attack did not start"
        );
        let mut ended = false;
        for _ in 0..400 {
            let (text, _) = call(&client, "task_output", json!({"id": id + 1})).await;
            if !text.starts_with("status: running") {
                ended = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(ended, "{name}: the task did not end");
        assert_gone(name, &token).await;
    }
}
