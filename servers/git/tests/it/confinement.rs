//! Through the real binary: the root's limits (a monorepo package sees
//! only its own files, a linked worktree still works) and the kernel
//! sandbox as a layer of its own (a git that itself tries to write
//! outside, the way a program git starts would).

use std::os::unix::fs::PermissionsExt;

use serde_json::json;

use crate::attack_support::{Outside, Setup, call, server};
use crate::support::Repo;

#[tokio::test]
async fn a_monorepo_package_as_root_shows_only_its_own_files() {
    let repo = Repo::new();
    repo.write("pkg/mine.txt", "mine\n");
    repo.write("other/theirs.txt", "theirs\n");
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-qm", "start"]);
    repo.write("pkg/mine.txt", "mine changed\n");
    repo.write("other/theirs.txt", "theirs changed OTHER-CONTENT\n");
    repo.write("other/new.txt", "new\n");
    repo.write("pkg/new.txt", "new\n");
    repo.git(&["add", "other/theirs.txt"]);
    let client = server(&repo.path().join("pkg"), Setup::Sandboxed, None).await;
    for (tool, args) in [
        ("git_status", json!({})),
        ("git_diff", json!({})),
        ("git_diff", json!({"staged": true})),
        ("git_diff", json!({"against": "HEAD"})),
    ] {
        let (is_error, text) = call(&client, tool, args.clone()).await;
        assert!(!is_error, "{tool} {args}: {text}");
        assert!(
            !text.contains("theirs") && !text.contains("OTHER-CONTENT"),
            "{tool} {args} shows a file outside the root:\n{text}"
        );
    }
    let (_, status) = call(&client, "git_status", json!({})).await;
    assert_eq!(
        status,
        "On branch main\nUnstaged (1):\n  M mine.txt\nUntracked (1):\n  new.txt\n"
    );
    let (_, diff) = call(&client, "git_diff", json!({})).await;
    assert!(diff.contains("+mine changed"), "{diff}");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_linked_worktree_as_root_works() {
    let repo = Repo::new();
    repo.commit_file("a.txt", "a\n", "start");
    let trees = tempfile::tempdir().unwrap();
    let tree = trees.path().join("wt");
    repo.git(&[
        "worktree",
        "add",
        "-q",
        "-b",
        "side",
        tree.to_str().unwrap(),
    ]);
    std::fs::write(tree.join("a.txt"), "changed in the worktree\n").unwrap();
    let client = server(&tree, Setup::Sandboxed, None).await;
    let (is_error, text) = call(&client, "git_status", json!({})).await;
    assert!(!is_error, "{text}");
    assert_eq!(text, "On branch side\nUnstaged (1):\n  M a.txt\n");
    let (is_error, text) = call(
        &client,
        "git_commit",
        json!({"message": "in the worktree", "all": true}),
    )
    .await;
    assert!(!is_error, "{text}");
    client.cancel().await.unwrap();
}

/// A `git` that first tries to write outside, then runs the real git:
/// what a program git starts would try. The kernel sandbox alone stops
/// it, for every tool; with the sandbox simulated away it succeeds (the
/// control: the test can fail).
#[tokio::test]
async fn the_kernel_sandbox_confines_every_git_process() {
    for setup in [Setup::Sandboxed, Setup::HardeningAlone] {
        let outside = Outside::new();
        let marker = outside.marker("git");
        let wrapper = outside.path().join("git");
        let real = String::from_utf8(
            std::process::Command::new("sh")
                .args(["-c", "command -v git"])
                .output()
                .unwrap()
                .stdout,
        )
        .unwrap();
        std::fs::write(
            &wrapper,
            format!(
                "#!/bin/sh\necho \"$*\" >> '{}' 2>/dev/null\nexec '{}' \"$@\"\n",
                marker.display(),
                real.trim()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
        let repo = Repo::new();
        repo.commit_file("a.txt", "a\n", "start");
        repo.write("a.txt", "b\n");
        let client = server(repo.path(), setup, Some(&wrapper)).await;
        for (tool, args) in [
            ("git_status", json!({})),
            ("git_diff", json!({})),
            ("git_log", json!({})),
        ] {
            let (is_error, text) = call(&client, tool, args).await;
            assert!(!is_error, "{setup:?} {tool}: {text}");
        }
        let (is_error, text) = call(
            &client,
            "git_commit",
            json!({"message": "b", "paths": ["a.txt"]}),
        )
        .await;
        client.cancel().await.unwrap();
        match setup {
            Setup::Sandboxed => {
                assert!(!is_error, "{text}");
                assert!(
                    !marker.exists(),
                    "a git process wrote outside the workspace: {}",
                    std::fs::read_to_string(&marker).unwrap_or_default()
                );
            }
            Setup::HardeningAlone => {
                let ran = std::fs::read_to_string(&marker).unwrap_or_default();
                assert!(
                    ran.contains("rev-parse") && ran.contains("status"),
                    "without the sandbox the wrapper should have written: {ran:?}"
                );
            }
        }
    }
}
