//! git_status: sections, renames, detached HEAD, unborn branch, upstream.

use serde_json::json;

use crate::support::{Repo, client, ok};

#[tokio::test]
async fn status_lists_staged_unstaged_untracked_and_renamed_files() {
    let repo = Repo::new();
    repo.write("a.txt", "a\n");
    repo.write("b.txt", "b\n");
    repo.commit_file("c.txt", "c\n", "start");
    repo.write("a.txt", "a2\n");
    repo.git(&["add", "a.txt"]);
    repo.write("b.txt", "b2\n");
    repo.git(&["mv", "c.txt", "d.txt"]);
    repo.write("u.txt", "new\n");
    let client = client(repo.path()).await;
    assert_eq!(
        ok(&client, "git_status", json!({})).await,
        "On branch main\n\
         Staged (2):\n  M a.txt\n  R c.txt -> d.txt\n\
         Unstaged (1):\n  M b.txt\n\
         Untracked (1):\n  u.txt\n"
    );
}

#[tokio::test]
async fn status_of_a_clean_tree_says_clean() {
    let repo = Repo::new();
    repo.commit_file("a.txt", "a\n", "start");
    let client = client(repo.path()).await;
    assert_eq!(
        ok(&client, "git_status", json!({})).await,
        "On branch main\nWorking tree clean\n"
    );
}

#[tokio::test]
async fn status_before_the_first_commit_says_no_commits_yet() {
    let repo = Repo::new();
    repo.write("a.txt", "a\n");
    repo.write("b.txt", "b\n");
    repo.git(&["add", "a.txt"]);
    let client = client(repo.path()).await;
    assert_eq!(
        ok(&client, "git_status", json!({})).await,
        "On branch main (no commits yet)\nStaged (1):\n  A a.txt\nUntracked (1):\n  b.txt\n"
    );
}

#[tokio::test]
async fn status_on_a_detached_head_names_the_commit() {
    let repo = Repo::new();
    repo.commit_file("a.txt", "a\n", "start");
    repo.git(&["checkout", "-q", "--detach"]);
    let oid = repo.git(&["rev-parse", "HEAD"]);
    let client = client(repo.path()).await;
    assert_eq!(
        ok(&client, "git_status", json!({})).await,
        format!("HEAD detached at {}\nWorking tree clean\n", &oid[..7])
    );
}

#[tokio::test]
async fn status_counts_commits_ahead_of_and_behind_the_upstream() {
    let repo = Repo::new();
    repo.commit_file("a.txt", "a\n", "one");
    repo.git(&["branch", "base"]);
    repo.commit_file("a.txt", "a2\n", "two");
    repo.commit_file("a.txt", "a3\n", "three");
    repo.git(&["branch", "--set-upstream-to=base"]);
    let client = client(repo.path()).await;
    assert_eq!(
        ok(&client, "git_status", json!({})).await,
        "On branch main, tracking base: ahead 2, behind 0\nWorking tree clean\n"
    );
}

#[tokio::test]
async fn status_shows_conflicted_files() {
    let repo = Repo::new();
    repo.commit_file("m.txt", "base\n", "base");
    repo.git(&["checkout", "-q", "-b", "other"]);
    repo.commit_file("m.txt", "other\n", "other side");
    repo.git(&["checkout", "-q", "main"]);
    repo.commit_file("m.txt", "main\n", "main side");
    let merge = std::process::Command::new("git")
        .current_dir(repo.path())
        .args(["merge", "-q", "other"])
        .output()
        .unwrap();
    assert!(!merge.status.success(), "the merge must conflict");
    let client = client(repo.path()).await;
    let text = ok(&client, "git_status", json!({})).await;
    assert!(text.ends_with("Conflicted (1):\n  UU m.txt\n"), "{text}");
}

#[tokio::test]
async fn with_the_root_in_a_subdirectory_status_lists_its_part_relative_to_it() {
    let repo = Repo::new();
    repo.write("top.txt", "t\n");
    repo.commit_file("sub/in.txt", "i\n", "start");
    repo.write("top.txt", "t2\n");
    repo.write("sub/in.txt", "i2\n");
    repo.write("sub/new.txt", "n\n");
    let client = client(&repo.path().join("sub")).await;
    assert_eq!(
        ok(&client, "git_status", json!({})).await,
        "On branch main\nUnstaged (1):\n  M in.txt\nUntracked (1):\n  new.txt\n"
    );
}
