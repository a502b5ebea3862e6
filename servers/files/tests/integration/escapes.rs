//! The path-escape suite: every attack is refused, and nothing outside the
//! root is read, written or deleted.

use std::os::unix::fs::symlink;

use serde_json::{Value, json};

use crate::support::{Fixture, snapshot};

/// Builds the symlinks the attacks go through:
/// `to_root -> /`, `to_outside -> outside/`, `chain1 -> chain2 -> to_outside`,
/// `secret_link -> outside/secret.txt`, `dangling -> outside/new.txt`,
/// `loop1 <-> loop2`, and a non-UTF-8 name linking outside.
fn plant_links(fx: &Fixture) {
    use std::os::unix::ffi::OsStrExt;
    let root = fx.root();
    let outside = fx.outside();
    symlink("/", root.join("to_root")).unwrap();
    symlink(&outside, root.join("to_outside")).unwrap();
    symlink(root.join("to_outside"), root.join("chain2")).unwrap();
    symlink("chain2", root.join("chain1")).unwrap();
    symlink(outside.join("secret.txt"), root.join("secret_link")).unwrap();
    symlink(outside.join("new.txt"), root.join("dangling")).unwrap();
    symlink("loop2", root.join("loop1")).unwrap();
    symlink("loop1", root.join("loop2")).unwrap();
    let odd = std::ffi::OsStr::from_bytes(b"odd\xff\xfe");
    symlink(&outside, root.join(odd)).unwrap();
    std::fs::create_dir(root.join("sub")).unwrap();
}

/// Paths that must be refused by every tool. `{out}` is the absolute
/// outside directory.
fn attacks(out: &str) -> Vec<String> {
    [
        "../outside/secret.txt",
        "../../etc/passwd",
        "/etc/passwd",
        "{out}/secret.txt",
        "{out}/new.txt",
        "//{out}/secret.txt",
        "to_root/etc/passwd",
        "to_root{out}/secret.txt",
        "to_root{out}/new.txt",
        "to_outside/secret.txt",
        "to_outside/new.txt",
        "chain1/secret.txt",
        "chain1/new.txt",
        "secret_link",
        "dangling",
        "sub/../../outside/secret.txt",
        "nope/../../outside/new.txt",
        "nope/../to_outside/new.txt",
        "a/b/../../chain1/new.txt",
        "./../outside/secret.txt",
        "a/b/../../../outside/new.txt",
        "sub/../sub/../../outside/new.txt",
        "to_outside",
        "..",
        "/",
        "loop1",
        "loop1/x",
        "secret\0.txt",
        "to_outside/../outside/secret.txt",
    ]
    .iter()
    .map(|p| p.replace("{out}", out))
    .chain([
        format!("{}/x", "a".repeat(10_000)),
        "odd\u{fffd}\u{fffd}/../../outside/new.txt".to_string(),
    ])
    .collect()
}

#[tokio::test]
async fn every_escape_is_refused_and_nothing_outside_changes() {
    let fx = Fixture::new().await;
    plant_links(&fx);
    let outside = fx.outside();
    let before = snapshot(&outside);
    let attack_paths = attacks(outside.to_str().unwrap());
    assert!(attack_paths.len() >= 20);
    for path in &attack_paths {
        let calls: [(&str, Value); 4] = [
            ("read_file", json!({"path": path})),
            ("write_file", json!({"path": path, "content": "pwned"})),
            (
                "edit_file",
                json!({"path": path, "old_string": "top secret", "new_string": "pwned"}),
            ),
            ("list_dir", json!({"path": path})),
        ];
        for (tool, args) in calls {
            let answer = fx.call(tool, args).await;
            assert!(
                answer.is_error,
                "{tool}({path:?}) was not refused: {}",
                answer.text
            );
            assert!(
                !answer.text.contains("top secret"),
                "{tool}({path:?}) leaked: {}",
                answer.text
            );
        }
    }
    assert_eq!(
        snapshot(&outside),
        before,
        "something outside the root changed"
    );
    assert!(!outside.join("new.txt").exists());
}

#[tokio::test]
async fn escape_messages_tell_the_model_what_is_allowed() {
    let fx = Fixture::new().await;
    plant_links(&fx);
    let err = fx.call("read_file", json!({"path": "../x"})).await.err();
    assert!(
        err.starts_with("path escapes the workspace root: ../x"),
        "{err}"
    );
    let err = fx
        .call("read_file", json!({"path": "secret\0.txt"}))
        .await
        .err();
    assert!(err.contains("NUL byte"), "{err}");
    let err = fx
        .call("read_file", json!({"path": "a".repeat(10_000)}))
        .await
        .err();
    assert!(err.contains("over the limit"), "{err}");
    let err = fx
        .call("write_file", json!({"path": "dangling", "content": "x"}))
        .await
        .err();
    assert!(
        err.contains("dangling symlink") || err.contains("escapes"),
        "{err}"
    );
}

#[tokio::test]
async fn patches_cannot_reach_outside_the_root() {
    let fx = Fixture::new().await;
    plant_links(&fx);
    fx.write("in.txt", "inside\n");
    let outside = fx.outside();
    let before = snapshot(&outside);
    let out = outside.to_str().unwrap();
    let patches = [
        "--- a/../outside/secret.txt\n+++ b/../outside/secret.txt\n@@ -1 +1 @@\n-top secret\n+pwned\n".to_string(),
        "--- /dev/null\n+++ b/../outside/new.txt\n@@ -0,0 +1 @@\n+pwned\n".to_string(),
        "--- a/to_outside/secret.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-top secret\n".to_string(),
        format!("--- /dev/null\n+++ {out}/new.txt\n@@ -0,0 +1 @@\n+pwned\n"),
        "diff --git a/in.txt b/to_outside/moved.txt\nrename from in.txt\nrename to to_outside/moved.txt\n".to_string(),
        "--- a/chain1/secret.txt\n+++ b/chain1/secret.txt\n@@ -1 +1 @@\n-top secret\n+pwned\n".to_string(),
        // A good hunk first: it must not be written either.
        "--- a/in.txt\n+++ b/in.txt\n@@ -1 +1 @@\n-inside\n+changed\n--- /dev/null\n+++ b/dangling\n@@ -0,0 +1 @@\n+pwned\n".to_string(),
    ];
    for patch in &patches {
        let answer = fx.call("apply_patch", json!({"patch": patch})).await;
        assert!(
            answer.is_error,
            "patch was not refused: {patch}\n{}",
            answer.text
        );
    }
    assert_eq!(snapshot(&outside), before);
    assert_eq!(fx.read("in.txt"), "inside\n");
}

#[tokio::test]
async fn odd_names_stay_inside_the_root() {
    let fx = Fixture::new().await;
    plant_links(&fx);
    let outside = fx.outside();
    let before = snapshot(&outside);
    // These are ordinary (if odd) names inside the root, not escapes.
    for path in [
        "..\\outside\\x.txt",
        "%2e%2e/outside/x.txt",
        "~/x.txt",
        "odd\u{fffd}\u{fffd}/x.txt",
    ] {
        fx.call("write_file", json!({"path": path, "content": "fine"}))
            .await
            .ok();
        assert_eq!(fx.read(path), "fine");
    }
    assert_eq!(snapshot(&outside), before);
}

#[tokio::test]
async fn symlinks_inside_the_root_still_work() {
    let fx = Fixture::new().await;
    fx.write("real/file.txt", "hello\n");
    symlink(fx.root().join("real"), fx.root().join("alias")).unwrap();
    let out = fx
        .call("read_file", json!({"path": "alias/file.txt"}))
        .await
        .ok();
    assert_eq!(out, "     1\thello\n");
    fx.call(
        "write_file",
        json!({"path": "alias/new.txt", "content": "x"}),
    )
    .await
    .ok();
    assert_eq!(fx.read("real/new.txt"), "x");
}
