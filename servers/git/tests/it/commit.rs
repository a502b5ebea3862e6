//! git_commit: paths, all, staged, refusals, hooks.

use serde_json::json;

use crate::support::{Repo, client, err, ok};

fn committed_repo() -> Repo {
    let repo = Repo::new();
    repo.write("a.txt", "a\n");
    repo.commit_file("b.txt", "b\n", "start");
    repo
}

fn files_in_head(repo: &Repo) -> String {
    repo.git(&["show", "--name-only", "--format=", "HEAD"])
}

#[tokio::test]
async fn commit_of_paths_commits_only_those_paths_and_shows_the_new_hash() {
    let repo = committed_repo();
    repo.write("a.txt", "a2\n");
    repo.write("b.txt", "b2\n");
    repo.write("new.txt", "n\n");
    let client = client(repo.path()).await;
    let text = ok(
        &client,
        "git_commit",
        json!({"message": "Change a, add new", "paths": ["a.txt", "new.txt"]}),
    )
    .await;
    assert_eq!(repo.commit_count(), 2);
    assert!(
        text.starts_with(&format!("[main {}] Change a, add new\n", repo.head_short())),
        "{text}"
    );
    assert!(text.contains("2 files changed"), "{text}");
    assert_eq!(files_in_head(&repo), "a.txt\nnew.txt\n");
    assert_eq!(repo.git(&["status", "--porcelain"]), " M b.txt\n");
}

#[tokio::test]
async fn commit_of_paths_leaves_other_staged_changes_staged() {
    let repo = committed_repo();
    repo.write("a.txt", "a2\n");
    repo.write("b.txt", "b2\n");
    repo.git(&["add", "b.txt"]);
    let client = client(repo.path()).await;
    ok(
        &client,
        "git_commit",
        json!({"message": "Only a", "paths": ["a.txt"]}),
    )
    .await;
    assert_eq!(files_in_head(&repo), "a.txt\n");
    assert_eq!(repo.git(&["status", "--porcelain"]), "M  b.txt\n");
}

#[tokio::test]
async fn commit_all_stages_tracked_changes_but_not_untracked_files() {
    let repo = committed_repo();
    repo.write("a.txt", "a2\n");
    std::fs::remove_file(repo.path().join("b.txt")).unwrap();
    repo.write("untracked.txt", "u\n");
    let client = client(repo.path()).await;
    ok(
        &client,
        "git_commit",
        json!({"message": "All tracked", "all": true}),
    )
    .await;
    assert_eq!(files_in_head(&repo), "a.txt\nb.txt\n");
    assert_eq!(repo.git(&["status", "--porcelain"]), "?? untracked.txt\n");
}

#[tokio::test]
async fn commit_without_paths_commits_what_is_staged() {
    let repo = committed_repo();
    repo.write("a.txt", "a2\n");
    repo.write("b.txt", "b2\n");
    repo.git(&["add", "b.txt"]);
    let client = client(repo.path()).await;
    ok(&client, "git_commit", json!({"message": "Staged only"})).await;
    assert_eq!(files_in_head(&repo), "b.txt\n");
}

#[tokio::test]
async fn the_first_commit_of_a_repository_works() {
    let repo = Repo::new();
    repo.write("a.txt", "a\n");
    let client = client(repo.path()).await;
    let text = ok(
        &client,
        "git_commit",
        json!({"message": "Initial", "paths": ["a.txt"]}),
    )
    .await;
    assert!(text.starts_with("[main (root-commit) "), "{text}");
    assert_eq!(repo.commit_count(), 1);
}

#[tokio::test]
async fn an_empty_commit_is_refused() {
    let repo = committed_repo();
    let client = client(repo.path()).await;
    assert_eq!(
        err(&client, "git_commit", json!({"message": "Nothing"})).await,
        "nothing to commit: no changes are staged; give `paths` to stage files or `all: true` to stage every tracked change (see git_status)"
    );
    assert_eq!(
        err(
            &client,
            "git_commit",
            json!({"message": "Nothing", "paths": ["a.txt"]})
        )
        .await,
        "nothing to commit: the given paths have no changes (see git_status)"
    );
    assert!(
        err(
            &client,
            "git_commit",
            json!({"message": "Nothing", "all": true})
        )
        .await
        .starts_with("nothing to commit: no tracked file has changes")
    );
    assert_eq!(repo.commit_count(), 1);
}

#[tokio::test]
async fn a_failing_pre_commit_hook_blocks_the_commit_and_is_reported() {
    let repo = committed_repo();
    repo.hook(
        "pre-commit",
        "#!/bin/sh\necho 'lint failed: a.txt is ugly' >&2\nexit 1\n",
    );
    repo.write("a.txt", "a2\n");
    let client = client(repo.path()).await;
    let text = err(
        &client,
        "git_commit",
        json!({"message": "Try", "paths": ["a.txt"]}),
    )
    .await;
    assert!(text.contains("lint failed: a.txt is ugly"), "{text}");
    assert!(text.contains("No commit was made"), "{text}");
    // The hook ran, so --no-verify was not passed; and nothing was recorded.
    assert_eq!(repo.commit_count(), 1);
}

#[tokio::test]
async fn a_failing_commit_msg_hook_blocks_the_commit() {
    let repo = committed_repo();
    repo.hook(
        "commit-msg",
        "#!/bin/sh\necho 'message must mention a ticket' >&2\nexit 1\n",
    );
    repo.write("a.txt", "a2\n");
    let client = client(repo.path()).await;
    let text = err(
        &client,
        "git_commit",
        json!({"message": "Try", "all": true}),
    )
    .await;
    assert!(text.contains("message must mention a ticket"), "{text}");
    assert_eq!(repo.commit_count(), 1);
}

#[tokio::test]
async fn a_message_that_looks_like_an_option_is_only_a_message() {
    let repo = committed_repo();
    repo.write("a.txt", "a2\n");
    let client = client(repo.path()).await;
    ok(
        &client,
        "git_commit",
        json!({"message": "--amend", "all": true}),
    )
    .await;
    assert_eq!(repo.commit_count(), 2, "a new commit, not an amended one");
    assert_eq!(repo.git(&["log", "-1", "--format=%s"]), "--amend\n");
}

#[tokio::test]
async fn paths_are_literal_not_globs() {
    let repo = committed_repo();
    repo.write("a.txt", "a2\n");
    let client = client(repo.path()).await;
    let text = err(
        &client,
        "git_commit",
        json!({"message": "Glob", "paths": ["*.txt"]}),
    )
    .await;
    assert!(text.contains("did not match any files"), "{text}");
    assert_eq!(repo.commit_count(), 1);
}

#[tokio::test]
async fn bad_argument_combinations_are_refused() {
    let repo = committed_repo();
    repo.write("a.txt", "a2\n");
    let client = client(repo.path()).await;
    assert_eq!(
        err(
            &client,
            "git_commit",
            json!({"message": "x", "paths": ["a.txt"], "all": true})
        )
        .await,
        "give either `paths` or `all: true`, not both"
    );
    assert_eq!(
        err(&client, "git_commit", json!({"message": "  ", "all": true})).await,
        "commit message is empty: give a short summary line of what the change does"
    );
    assert!(
        err(&client, "git_commit", json!({"message": "x", "paths": []}))
            .await
            .starts_with("`paths` is empty")
    );
    assert_eq!(repo.commit_count(), 1);
}

#[tokio::test]
async fn a_deleted_file_named_in_paths_is_committed_as_a_deletion() {
    let repo = committed_repo();
    std::fs::remove_file(repo.path().join("a.txt")).unwrap();
    let client = client(repo.path()).await;
    let text = ok(
        &client,
        "git_commit",
        json!({"message": "Drop a", "paths": ["a.txt"]}),
    )
    .await;
    assert!(text.contains("delete mode 100644 a.txt"), "{text}");
    assert_eq!(repo.git(&["ls-files"]), "b.txt\n");
}

#[tokio::test]
async fn with_the_root_in_a_subdirectory_all_stages_only_changes_under_it() {
    let repo = committed_repo();
    repo.commit_file("sub/inner.txt", "i\n", "add sub");
    repo.write("a.txt", "outside change\n");
    repo.write("sub/inner.txt", "inside change\n");
    let client = client(&repo.path().join("sub")).await;
    ok(
        &client,
        "git_commit",
        json!({"message": "Inner only", "all": true}),
    )
    .await;
    assert_eq!(files_in_head(&repo), "sub/inner.txt\n");
    assert_eq!(repo.git(&["status", "--porcelain"]), " M a.txt\n");
    // Paths are relative to the root, not to the repository's top.
    repo.write("sub/inner.txt", "again\n");
    ok(
        &client,
        "git_commit",
        json!({"message": "Inner again", "paths": ["inner.txt"]}),
    )
    .await;
    assert_eq!(files_in_head(&repo), "sub/inner.txt\n");
    let diff = ok(
        &client,
        "git_diff",
        json!({"against": "HEAD~1", "path": "inner.txt"}),
    )
    .await;
    assert!(diff.contains("+again"), "{diff}");
}

#[tokio::test]
async fn a_path_under_the_agents_directory_is_refused() {
    let repo = committed_repo();
    repo.write(".nanohermes/sessions/s.json", "{\"secret\": 1}\n");
    repo.write("pkg/.nanohermes/config.toml", "x = 1\n");
    let client = client(repo.path()).await;
    for path in [
        ".nanohermes/sessions/s.json",
        ".nanohermes",
        "pkg/.nanohermes/config.toml",
    ] {
        let text = err(
            &client,
            "git_commit",
            json!({"message": "leak", "paths": ["a.txt", path]}),
        )
        .await;
        assert!(
            text.starts_with(&format!("refused: {path:?} is under .nanohermes/")),
            "{text}"
        );
    }
    assert_eq!(repo.commit_count(), 1);
    assert_eq!(repo.git(&["diff", "--cached", "--name-only"]), "");
}

#[tokio::test]
async fn committing_everything_never_stages_the_agents_files() {
    let repo = committed_repo();
    // Tracked before (committed by hand), then changed: `all` skips it too.
    repo.write("pkg/.nanohermes/tracked.toml", "one\n");
    repo.git(&["add", "pkg/.nanohermes/tracked.toml"]);
    repo.git(&["commit", "-qm", "tracked by hand"]);
    repo.write("pkg/.nanohermes/tracked.toml", "two\n");
    repo.write(".nanohermes/sessions/s.json", "{\"conversation\": 1}\n");
    repo.write("pkg/.nanohermes/config.toml", "x = 1\n");
    repo.write("a.txt", "a2\n");
    repo.write("pkg/new.txt", "n\n");
    let client = client(repo.path()).await;
    ok(
        &client,
        "git_commit",
        json!({"message": "everything", "paths": ["."]}),
    )
    .await;
    assert_eq!(files_in_head(&repo), "a.txt\npkg/new.txt\n");
    // The only tracked change left is the agent's: nothing to commit.
    let text = err(
        &client,
        "git_commit",
        json!({"message": "all", "all": true}),
    )
    .await;
    assert!(text.starts_with("nothing to commit"), "{text}");
    let status = repo.git(&["status", "--porcelain"]);
    assert_eq!(
        status,
        " M pkg/.nanohermes/tracked.toml\n?? .nanohermes/\n?? pkg/.nanohermes/config.toml\n"
    );
}

#[tokio::test]
async fn committing_what_is_staged_is_refused_while_agent_files_are_staged() {
    let repo = committed_repo();
    repo.write(".nanohermes/sessions/s.json", "{}\n");
    repo.write("a.txt", "a2\n");
    repo.git(&["add", "a.txt", ".nanohermes/sessions/s.json"]);
    let client = client(repo.path()).await;
    let text = err(&client, "git_commit", json!({"message": "staged"})).await;
    assert!(
        text.starts_with("refused: the staged changes include .nanohermes/sessions/s.json"),
        "{text}"
    );
    assert_eq!(repo.commit_count(), 1);
}
