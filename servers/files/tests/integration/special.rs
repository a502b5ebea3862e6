//! Special files and symlinks: FIFOs, sockets and huge files never hang or
//! fill memory; deleting or renaming a symlink acts on the link.

use std::os::unix::fs::{PermissionsExt, symlink};
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::{Answer, Fixture, snapshot};

/// A call that must answer: a hang (a blocking open of a FIFO) fails the
/// test instead of stalling the suite.
async fn call_bounded(fx: &Fixture, tool: &str, args: Value) -> Answer {
    match tokio::time::timeout(Duration::from_secs(60), fx.call(tool, args)).await {
        Ok(answer) => answer,
        Err(_) => {
            // Free a server thread stuck opening the FIFO (a writer lets its
            // open return), so the runtime can shut down and the test fails
            // instead of hanging.
            use std::os::unix::fs::OpenOptionsExt;
            let _ = std::fs::OpenOptions::new()
                .write(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(fx.root().join("pipe"));
            panic!("{tool} did not answer within 60 s (blocked?)")
        }
    }
}

fn mkfifo(path: &std::path::Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap();
    assert!(status.success());
}

#[tokio::test]
async fn fifos_and_sockets_are_refused_instead_of_blocking() {
    let fx = Fixture::new().await;
    mkfifo(&fx.root().join("pipe"));
    let _socket = std::os::unix::net::UnixListener::bind(fx.root().join("sock")).unwrap();
    let modify = "--- a/pipe\n+++ b/pipe\n@@ -1 +1 @@\n-a\n+b\n";
    let cases = [
        ("read_file", json!({"path": "pipe"}), "named pipe (FIFO)"),
        (
            "read_file",
            json!({"path": "pipe", "offset": 1, "limit": 5}),
            "named pipe (FIFO)",
        ),
        (
            "edit_file",
            json!({"path": "pipe", "old_string": "a", "new_string": "b"}),
            "named pipe (FIFO)",
        ),
        ("apply_patch", json!({"patch": modify}), "named pipe (FIFO)"),
        ("read_file", json!({"path": "sock"}), "is a socket"),
        (
            "edit_file",
            json!({"path": "sock", "old_string": "a", "new_string": "b"}),
            "is a socket",
        ),
    ];
    for (tool, args, what) in cases {
        let err = call_bounded(&fx, tool, args.clone()).await.err();
        assert!(
            err.contains(what) && err.contains("regular files only"),
            "{tool} {args}: {err}"
        );
    }
    // The FIFO is still a FIFO: nothing replaced it.
    use std::os::unix::fs::FileTypeExt;
    let meta = std::fs::symlink_metadata(fx.root().join("pipe")).unwrap();
    assert!(meta.file_type().is_fifo());
}

/// A sparse file of 4 GiB: 10 000 bytes of text (past the binary sniff),
/// then zeros, and no newline anywhere.
fn huge_one_line_file(fx: &Fixture) -> std::path::PathBuf {
    let path = fx.root().join("huge.log");
    std::fs::write(&path, "x".repeat(10_000)).unwrap();
    let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    file.set_len(4 << 30).unwrap();
    path
}

#[tokio::test]
async fn a_windowed_read_of_a_huge_line_is_bounded_and_says_so() {
    let fx = Fixture::new().await;
    huge_one_line_file(&fx);
    let out = call_bounded(
        &fx,
        "read_file",
        json!({"path": "huge.log", "offset": 1, "limit": 1}),
    )
    .await
    .ok();
    assert!(out.starts_with("     1\txxxx"), "{}", &out[..80]);
    assert!(out.contains("[line cut: at least "), "{out:.200}");
    assert!(
        out.ends_with(
            "[stopped: read_file reads only the first 64 MB of a file; use grep to find text further on]\n"
        ),
        "{out:.200}"
    );
    assert!(out.len() < 10_000, "{} bytes", out.len());
    let err = call_bounded(
        &fx,
        "read_file",
        json!({"path": "huge.log", "offset": 2, "limit": 1}),
    )
    .await
    .err();
    assert!(
        err.starts_with("line 2 of huge.log lies beyond the first 64 MB"),
        "{err}"
    );
    // Unwindowed, the 4 MB cap answers before anything is read.
    let err = call_bounded(&fx, "read_file", json!({"path": "huge.log"}))
        .await
        .err();
    assert!(err.contains("over the 4 MB read cap"), "{err}");
}

#[tokio::test]
async fn deleting_a_symlink_removes_the_link_not_its_target() {
    let fx = Fixture::new().await;
    fx.write("target.txt", "keep me\n");
    symlink(fx.root().join("target.txt"), fx.root().join("link")).unwrap();
    // As git writes it: the link's content is its target path.
    let target = fx.root().join("target.txt");
    let patch = format!(
        "diff --git a/link b/link\ndeleted file mode 120000\n--- a/link\n+++ /dev/null\n@@ -1 +0,0 @@\n-{}\n\\ No newline at end of file\n",
        target.display()
    );
    let out = fx.call("apply_patch", json!({"patch": patch})).await.ok();
    assert_eq!(out, "applied patch:\nD link");
    assert!(std::fs::symlink_metadata(fx.root().join("link")).is_err());
    assert_eq!(fx.read("target.txt"), "keep me\n");
}

#[tokio::test]
async fn renaming_a_symlink_moves_the_link_not_its_target() {
    let fx = Fixture::new().await;
    fx.write("target.txt", "keep me\n");
    symlink("target.txt", fx.root().join("link")).unwrap();
    let patch =
        "diff --git a/link b/moved\nsimilarity index 100%\nrename from link\nrename to moved\n";
    let out = fx.call("apply_patch", json!({"patch": patch})).await.ok();
    assert_eq!(out, "applied patch:\nA moved\nD link");
    assert!(std::fs::symlink_metadata(fx.root().join("link")).is_err());
    let moved = std::fs::symlink_metadata(fx.root().join("moved")).unwrap();
    assert!(moved.file_type().is_symlink(), "moved is no longer a link");
    assert_eq!(
        std::fs::read_link(fx.root().join("moved")).unwrap(),
        std::path::Path::new("target.txt")
    );
    assert_eq!(fx.read("target.txt"), "keep me\n");
    assert_eq!(fx.read("moved"), "keep me\n");
}

#[tokio::test]
async fn a_link_to_outside_can_be_deleted_but_not_read_or_written_through() {
    let fx = Fixture::new().await;
    let secret = fx.outside().join("secret.txt");
    symlink(&secret, fx.root().join("out_link")).unwrap();
    let before = snapshot(&fx.outside());
    for (tool, args) in [
        ("read_file", json!({"path": "out_link"})),
        (
            "write_file",
            json!({"path": "out_link", "content": "pwned"}),
        ),
        (
            "apply_patch",
            json!({"patch": "--- a/out_link\n+++ b/out_link\n@@ -1 +1 @@\n-top secret\n+pwned\n"}),
        ),
        (
            "apply_patch",
            json!({"patch": "--- a/out_link\n+++ /dev/null\n@@ -1 +0,0 @@\n-top secret\n"}),
        ),
    ] {
        let err = fx.call(tool, args).await.err();
        assert!(!err.contains("top secret"), "{tool} leaked: {err}");
    }
    // The hunk for the target's content does not match the link's own
    // content, and the error says what would.
    let err = fx
        .call(
            "apply_patch",
            json!({"patch": "--- a/out_link\n+++ /dev/null\n@@ -1 +0,0 @@\n-top secret\n"}),
        )
        .await
        .err();
    assert!(
        err.contains("out_link is a symlink") && err.contains("give no hunks"),
        "{err}"
    );
    let delete = "diff --git a/out_link b/out_link\ndeleted file mode 120000\n";
    let out = fx.call("apply_patch", json!({"patch": delete})).await.ok();
    assert_eq!(out, "applied patch:\nD out_link");
    assert!(std::fs::symlink_metadata(fx.root().join("out_link")).is_err());
    assert_eq!(
        snapshot(&fx.outside()),
        before,
        "the target outside changed"
    );
}

#[tokio::test]
async fn a_new_file_gets_the_usual_mode() {
    let fx = Fixture::new().await;
    fx.call("write_file", json!({"path": "new.txt", "content": "x"}))
        .await
        .ok();
    let mode = std::fs::metadata(fx.root().join("new.txt"))
        .unwrap()
        .permissions()
        .mode();
    // 0644 under the usual umask 022; never the temp file's private 0600.
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let umask = status
        .lines()
        .find_map(|l| l.strip_prefix("Umask:"))
        .map(|m| u32::from_str_radix(m.trim(), 8).unwrap())
        .unwrap();
    assert_eq!(mode & 0o777, 0o644 & !umask);
}
