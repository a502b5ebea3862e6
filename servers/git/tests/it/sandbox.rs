//! A commit's hooks run in the shell's sandbox: they cannot write outside
//! the workspace, plant another hook or rewrite .git/config, while the
//! commit itself still records.

use serde_json::json;

use crate::support::{Repo, client_with_policy, ok};

#[tokio::test]
async fn a_pre_commit_hook_is_confined_and_the_commit_still_records() {
    let repo = Repo::new();
    repo.write("a.txt", "a\n");
    // Outside the workspace and outside the sandbox's temp directory.
    let outside = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let target = outside.path().join("escaped");
    repo.hook(
        "pre-commit",
        &format!(
            "#!/bin/sh\necho x > '{}' 2>/dev/null\necho evil > .git/hooks/post-commit 2>/dev/null\n\
             echo '[core]' >> .git/config 2>/dev/null\necho inside > hook-was-here\nexit 0\n",
            target.display()
        ),
    );
    let config_before = std::fs::read_to_string(repo.path().join(".git/config")).unwrap();
    // A temp directory of its own: the checkout may lie under /tmp.
    let own_temp = tempfile::tempdir().unwrap();
    let policy = mcp_tools::spawn::SandboxPolicy {
        temp_dir: Some(own_temp.path().to_path_buf()),
        ..mcp_tools::spawn::SandboxPolicy::default()
    };
    let client = client_with_policy(repo.path(), policy).await;
    ok(
        &client,
        "git_commit",
        json!({"message": "first", "paths": ["a.txt"]}),
    )
    .await;
    assert_eq!(repo.commit_count(), 1);
    assert!(repo.path().join("hook-was-here").exists(), "the hook ran");
    assert!(!target.exists(), "the hook wrote outside the workspace");
    assert!(!repo.path().join(".git/hooks/post-commit").exists());
    assert_eq!(
        std::fs::read_to_string(repo.path().join(".git/config")).unwrap(),
        config_before
    );
}
