//! A directory swapped for a symlink while the tools write into it: the
//! real `nanohermes-files` binary over stdio against a thread that keeps
//! exchanging a workspace directory with a symlink to an outside directory
//! (`renameat2(RENAME_EXCHANGE)`, atomic, as fast as the kernel allows).
//! The outside directory is under `$HOME`, not the temp dir, as a sandboxed
//! attacker's target would be.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use rmcp::service::ServiceExt;
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use rustix::fs::{RenameFlags, renameat_with};
use serde_json::json;

const BIN: &str = env!("CARGO_BIN_EXE_nanohermes-files");

/// Writes made while the swapper runs; each one is a chance to land outside.
const ROUNDS: usize = 400;

/// Exchanges `a` and `b` until `stop`; counts the exchanges.
fn swapper(a: &Path, b: &Path, stop: Arc<AtomicBool>, swaps: Arc<AtomicUsize>) {
    let cwd = rustix::fs::CWD;
    while !stop.load(Ordering::Relaxed) {
        renameat_with(cwd, a, cwd, b, RenameFlags::EXCHANGE).unwrap();
        swaps.fetch_add(1, Ordering::Relaxed);
    }
    // Leave the real directory at `a`, an even number of exchanges.
    if swaps.load(Ordering::Relaxed) % 2 == 1 {
        renameat_with(cwd, a, cwd, b, RenameFlags::EXCHANGE).unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_directory_swapped_for_a_symlink_never_sends_a_write_outside() {
    let home = std::env::var_os("HOME").expect("HOME is set");
    let outside = tempfile::Builder::new()
        .prefix(".nanohermes-race-")
        .tempdir_in(&home)
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir_all(root.join("d")).unwrap();
    std::fs::write(root.join("d/keep.txt"), "old\n").unwrap();
    // `swap` is the symlink the thread exchanges with `d`: half the time
    // `d` leads outside.
    std::os::unix::fs::symlink(outside.path(), root.join("swap")).unwrap();

    let command = tokio::process::Command::new(BIN).configure(|c| {
        c.arg("--root").arg(&root);
    });
    let client = ().serve(TokioChildProcess::new(command).unwrap()).await.unwrap();

    let stop = Arc::new(AtomicBool::new(false));
    let swaps = Arc::new(AtomicUsize::new(0));
    let thread = {
        let (a, b) = (root.join("d"), root.join("swap"));
        let (stop, swaps) = (stop.clone(), swaps.clone());
        std::thread::spawn(move || swapper(&a, &b, stop, swaps))
    };
    let started = Instant::now();
    let mut written = 0usize;
    for round in 0..ROUNDS {
        let (tool, args) = match round % 3 {
            0 => (
                "write_file",
                json!({"path": format!("d/w{round}.txt"), "content": "x\n"}),
            ),
            1 => (
                "apply_patch",
                json!({"patch": format!("--- /dev/null\n+++ b/d/sub{round}/p.txt\n@@ -0,0 +1 @@\n+x\n")}),
            ),
            // Toggles the file between two texts; a miss is an error, fine.
            _ => {
                let (old, new) = if round % 2 == 0 {
                    ("old", "new")
                } else {
                    ("new", "old")
                };
                (
                    "edit_file",
                    json!({"path": "d/keep.txt", "old_string": old, "new_string": new}),
                )
            }
        };
        let (is_error, _) = mcp_tools::testing::call_text(&client, tool, args).await;
        written += usize::from(!is_error);
        if started.elapsed() > Duration::from_secs(60) {
            break;
        }
    }
    stop.store(true, Ordering::Relaxed);
    thread.join().unwrap();
    client.cancel().await.unwrap();

    let landed: Vec<_> = std::fs::read_dir(outside.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(
        landed.is_empty(),
        "writes landed outside the root: {landed:?}"
    );
    // The race was real: the directory moved many times, and writes still
    // went through between the moves.
    assert!(swaps.load(Ordering::Relaxed) > 100, "too few swaps");
    assert!(written > 0, "no write succeeded at all");
}
