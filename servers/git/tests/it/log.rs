//! git_log: one line per commit, bounded count, path filter.

use serde_json::json;

use crate::support::{Repo, client, err, ok};

fn three_commits() -> Repo {
    let repo = Repo::new();
    repo.commit_file("a.txt", "1\n", "First commit");
    repo.commit_file("b.txt", "2\n", "Second commit");
    repo.commit_file("a.txt", "3\n", "Third commit");
    repo
}

#[tokio::test]
async fn log_lists_short_hash_date_author_and_subject_newest_first() {
    let repo = three_commits();
    let client = client(repo.path()).await;
    let text = ok(&client, "git_log", json!({})).await;
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    let head = format!("{} ", repo.head_short());
    assert!(lines[0].starts_with(&head), "{text}");
    assert!(lines[0].ends_with(" Test User: Third commit"), "{text}");
    assert!(lines[2].ends_with(" Test User: First commit"), "{text}");
    // hash, then a `YYYY-MM-DD HH:MM` date.
    let date = lines[0].split(' ').nth(1).unwrap();
    assert_eq!(date.len(), 10, "{text}");
    assert_eq!(date.as_bytes()[4], b'-');
}

#[tokio::test]
async fn log_shows_max_count_commits_and_says_more_exist() {
    let repo = three_commits();
    let client = client(repo.path()).await;
    let text = ok(&client, "git_log", json!({"max_count": 2})).await;
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    assert!(lines[1].ends_with("Second commit"));
    assert_eq!(
        lines[2],
        "(showing the latest 2; older commits exist: raise max_count up to 200)"
    );
}

#[tokio::test]
async fn log_of_a_path_lists_only_commits_touching_it() {
    let repo = three_commits();
    let client = client(repo.path()).await;
    let text = ok(&client, "git_log", json!({"path": "a.txt"})).await;
    assert_eq!(text.lines().count(), 2, "{text}");
    assert!(!text.contains("Second commit"));
    assert_eq!(
        ok(&client, "git_log", json!({"path": "nothing-here"})).await,
        "No commits touch nothing-here"
    );
}

#[tokio::test]
async fn log_before_the_first_commit_says_no_commits_yet() {
    let repo = Repo::new();
    let client = client(repo.path()).await;
    assert_eq!(ok(&client, "git_log", json!({})).await, "No commits yet");
}

#[tokio::test]
async fn log_refuses_a_max_count_out_of_bounds() {
    let repo = three_commits();
    let client = client(repo.path()).await;
    let text = err(&client, "git_log", json!({"max_count": 500})).await;
    assert!(
        text.starts_with("max_count must be between 1 and 200, got 500"),
        "{text}"
    );
    err(&client, "git_log", json!({"max_count": 0})).await;
}
