//! The real `nanohermes-git` binary over stdio: list the tools, call each.

use std::path::Path;

use rmcp::ServiceExt;
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use serde_json::{Value, json};
use tokio::process::Command;

use crate::support::Repo;

async fn spawn(root: &Path, path_env: Option<&Path>) -> RunningService<RoleClient, ()> {
    let command = Command::new(env!("CARGO_BIN_EXE_nanohermes-git")).configure(|c| {
        c.arg("--root").arg(root);
        if let Some(path) = path_env {
            c.env("PATH", path);
        }
    });
    ().serve(TokioChildProcess::new(command).unwrap())
        .await
        .unwrap()
}

async fn call(client: &RunningService<RoleClient, ()>, tool: &str, args: Value) -> (bool, String) {
    mcp_tools::testing::call_text(client, tool, args).await
}

#[tokio::test]
async fn the_binary_lists_four_annotated_tools_and_answers_each() {
    let repo = Repo::new();
    repo.commit_file("a.txt", "a\n", "start");
    repo.write("a.txt", "a2\n");
    let client = spawn(repo.path(), None).await;

    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names, ["git_commit", "git_diff", "git_log", "git_status"]);
    for tool in &tools {
        let read_only = tool.annotations.as_ref().and_then(|a| a.read_only_hint);
        assert_eq!(read_only, Some(tool.name != "git_commit"), "{}", tool.name);
    }
    let commit = tools.iter().find(|t| t.name == "git_commit").unwrap();
    let annotations = commit.annotations.as_ref().unwrap();
    assert_eq!(annotations.destructive_hint, Some(false));
    assert_eq!(annotations.idempotent_hint, Some(false));

    let (is_error, text) = call(&client, "git_status", json!({})).await;
    assert!(!is_error);
    assert_eq!(text, "On branch main\nUnstaged (1):\n  M a.txt\n");
    let (is_error, text) = call(&client, "git_diff", json!({"path": "a.txt"})).await;
    assert!(!is_error && text.contains("-a\n+a2\n"), "{text}");
    let (is_error, text) = call(
        &client,
        "git_commit",
        json!({"message": "Update a", "all": true}),
    )
    .await;
    assert!(!is_error && text.contains("Update a"), "{text}");
    let (is_error, text) = call(&client, "git_log", json!({"max_count": 1})).await;
    assert!(!is_error && text.contains("Test User: Update a"), "{text}");
    let (is_error, text) = call(&client, "git_diff", json!({"against": "--no-index"})).await;
    assert!(is_error && text.contains("not an option"), "{text}");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn the_binary_with_an_empty_path_says_git_is_not_installed() {
    let repo = Repo::new();
    let empty_bin = tempfile::tempdir().unwrap();
    let client = spawn(repo.path(), Some(empty_bin.path())).await;
    let (is_error, text) = call(&client, "git_status", json!({})).await;
    assert!(is_error);
    assert_eq!(
        text,
        "git is not installed (cannot run `git`: not found); install git or start the server with --git PATH"
    );
    client.cancel().await.unwrap();
}
