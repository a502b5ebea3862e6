//! The failures every tool shares: no repository, no git, paths outside.

use serde_json::json;

use crate::support::{Repo, client, client_with_git, err, ok};

#[tokio::test]
async fn every_tool_says_not_a_git_repository_outside_one() {
    let dir = Repo::plain_dir();
    let client = client(dir.path()).await;
    let expected = format!(
        "not a git repository: {} (and none of its parents is one); run `git init` there first",
        std::fs::canonicalize(dir.path()).unwrap().display()
    );
    assert_eq!(err(&client, "git_status", json!({})).await, expected);
    assert_eq!(err(&client, "git_diff", json!({})).await, expected);
    assert_eq!(err(&client, "git_log", json!({})).await, expected);
    assert_eq!(
        err(&client, "git_commit", json!({"message": "x", "all": true})).await,
        expected
    );
}

#[tokio::test]
async fn a_missing_git_executable_is_reported_as_not_installed() {
    let repo = Repo::new();
    let client = client_with_git(repo.path(), "/nonexistent/bin/git".into()).await;
    assert_eq!(
        err(&client, "git_status", json!({})).await,
        "git is not installed (cannot run `/nonexistent/bin/git`: not found); install git or start the server with --git PATH"
    );
}

#[tokio::test]
async fn paths_outside_the_workspace_are_refused() {
    let repo = Repo::new();
    repo.commit_file("a.txt", "a\n", "start");
    let client = client(repo.path()).await;
    for tool_args in [
        ("git_diff", json!({"path": "../outside"})),
        ("git_log", json!({"path": "/etc/passwd"})),
        (
            "git_commit",
            json!({"message": "x", "paths": ["a.txt", "../../etc/passwd"]}),
        ),
    ] {
        let text = err(&client, tool_args.0, tool_args.1).await;
        assert!(
            text.starts_with("path escapes the workspace root"),
            "{}: {text}",
            tool_args.0
        );
    }
    assert_eq!(repo.commit_count(), 1);
}

#[tokio::test]
async fn paths_that_look_like_options_are_only_paths() {
    let repo = Repo::new();
    repo.commit_file("a.txt", "a\n", "start");
    repo.write("a.txt", "a2\n");
    let client = client(repo.path()).await;
    assert_eq!(
        ok(&client, "git_diff", json!({"path": "--output=leak"})).await,
        "No unstaged changes to tracked files (untracked files are listed by git_status) for --output=leak"
    );
    assert!(!repo.path().join("leak").exists());
    let text = err(
        &client,
        "git_commit",
        json!({"message": "x", "paths": ["--amend"]}),
    )
    .await;
    assert!(text.contains("did not match any files"), "{text}");
    assert_eq!(repo.commit_count(), 1);
}
