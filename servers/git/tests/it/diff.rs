//! git_diff: unstaged, staged, one path, against a revision, big diffs.

use serde_json::json;

use crate::support::{Repo, client, err, ok};

fn repo_with_changes() -> Repo {
    let repo = Repo::new();
    repo.write("a.txt", "a old\n");
    repo.commit_file("b.txt", "b old\n", "start");
    repo.write("a.txt", "a new\n");
    repo.git(&["add", "a.txt"]);
    repo.write("b.txt", "b new\n");
    repo
}

#[tokio::test]
async fn diff_shows_unstaged_changes_by_default() {
    let repo = repo_with_changes();
    let client = client(repo.path()).await;
    let text = ok(&client, "git_diff", json!({})).await;
    assert!(text.contains("--- a/b.txt\n+++ b/b.txt\n"), "{text}");
    assert!(text.contains("-b old\n+b new\n"), "{text}");
    assert!(
        !text.contains("a.txt"),
        "staged a.txt must not appear:\n{text}"
    );
}

#[tokio::test]
async fn diff_with_staged_shows_the_index() {
    let repo = repo_with_changes();
    let client = client(repo.path()).await;
    let text = ok(&client, "git_diff", json!({"staged": true})).await;
    assert!(text.contains("-a old\n+a new\n"), "{text}");
    assert!(
        !text.contains("b.txt"),
        "unstaged b.txt must not appear:\n{text}"
    );
}

#[tokio::test]
async fn diff_can_be_limited_to_one_path() {
    let repo = repo_with_changes();
    repo.commit_file("c.txt", "c\n", "c");
    repo.write("c.txt", "c2\n");
    let client = client(repo.path()).await;
    let text = ok(&client, "git_diff", json!({"path": "c.txt"})).await;
    assert!(text.contains("+c2\n"), "{text}");
    assert!(!text.contains("b.txt"), "{text}");
}

#[tokio::test]
async fn diff_against_a_revision_includes_staged_and_unstaged_changes() {
    let repo = repo_with_changes();
    let client = client(repo.path()).await;
    let text = ok(&client, "git_diff", json!({"against": "HEAD"})).await;
    assert!(
        text.contains("+a new\n") && text.contains("+b new\n"),
        "{text}"
    );
}

#[tokio::test]
async fn diff_with_nothing_to_show_says_so() {
    let repo = Repo::new();
    repo.commit_file("a.txt", "a\n", "start");
    let client = client(repo.path()).await;
    assert_eq!(
        ok(&client, "git_diff", json!({})).await,
        "No unstaged changes to tracked files (untracked files are listed by git_status)"
    );
    assert_eq!(
        ok(&client, "git_diff", json!({"staged": true})).await,
        "No staged changes"
    );
    assert_eq!(
        ok(
            &client,
            "git_diff",
            json!({"staged": true, "path": "a.txt"})
        )
        .await,
        "No staged changes for a.txt"
    );
}

#[tokio::test]
async fn against_starting_with_a_dash_is_refused_before_git_runs() {
    let repo = repo_with_changes();
    let client = client(repo.path()).await;
    let out = repo.path().join("leak.txt");
    let text = err(
        &client,
        "git_diff",
        json!({"against": format!("--output={}", out.display())}),
    )
    .await;
    assert!(
        text.starts_with("`against` must be a revision, not an option"),
        "{text}"
    );
    assert!(!out.exists(), "git must not have written --output");
    let text = err(&client, "git_diff", json!({"against": "-p"})).await;
    assert!(text.contains("starts with `-`"), "{text}");
}

#[tokio::test]
async fn an_unknown_revision_is_a_clear_error() {
    let repo = repo_with_changes();
    let client = client(repo.path()).await;
    assert_eq!(
        err(&client, "git_diff", json!({"against": "no-such-branch"})).await,
        "unknown revision \"no-such-branch\": give a commit hash, branch or tag such as HEAD~1 (see git_log)"
    );
}

#[tokio::test]
async fn a_diff_over_the_cap_is_clamped_after_a_stat() {
    let repo = Repo::new();
    repo.commit_file("big.txt", &"old line\n".repeat(5000), "start");
    repo.write("big.txt", &"new line\n".repeat(5000));
    let client = client(repo.path()).await;
    let text = ok(&client, "git_diff", json!({})).await;
    assert!(text.starts_with("The diff is "), "{}", &text[..200]);
    assert!(text.contains("big.txt | 10000"), "{}", &text[..300]);
    assert!(text.contains("more bytes omitted]"));
    assert!(
        text.len() <= mcp_tools::DEFAULT_MAX_OUTPUT + 100,
        "{}",
        text.len()
    );
}
