//! Shared by the spawn test binaries: unique tokens and /proc checks.

#![allow(dead_code)]

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// A `sleep` argument no other process on the machine uses:
/// `300.<pid><n>` seconds.
pub fn unique_sleep() -> String {
    static N: AtomicU32 = AtomicU32::new(1);
    format!(
        "300.{}{:04}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    )
}

/// Live (non-zombie) processes whose command line holds `token`.
pub fn with_token(token: &str) -> Vec<i32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|s| s.rfind(')').map(|i| s[i + 2..].starts_with('Z')))
            .unwrap_or(true);
        if !zombie
            && cmdline
                .split(|b| *b == 0)
                .any(|arg| arg == token.as_bytes())
        {
            found.push(pid);
        }
    }
    found
}

/// Waits (generously) until `done` holds; returns whether it did.
pub fn eventually(mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    done()
}

/// Zombie children of this process (orphans nobody reaped).
pub fn zombie_children() -> Vec<i32> {
    let mut zombies = Vec::new();
    for task in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
        let list = std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
        for pid in list.split_whitespace() {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            if stat
                .rfind(')')
                .is_some_and(|i| stat[i + 2..].starts_with('Z'))
            {
                zombies.push(pid.parse().unwrap());
            }
        }
    }
    zombies
}

/// The orphan attacks: each leaves `sleep TOKEN` running after `sh` exits.
pub fn attacks(token: &str) -> Vec<(&'static str, String)> {
    vec![
        ("background", format!("sleep {token} &")),
        ("setsid", format!("setsid sleep {token} &")),
        ("nohup", format!("nohup sleep {token} >/dev/null 2>&1 &")),
        ("double fork", format!("(sh -c 'sleep {token} &' &)")),
        (
            "setsid shell waiting",
            format!("setsid sh -c 'sleep {token} & wait' &"),
        ),
    ]
}

/// An orphan that also dropped the marker: only the subreaper's exit sweep
/// can find it.
pub fn unmarked_orphan(token: &str) -> String {
    format!("setsid sh -c 'env -u NANOHERMES_SPAWN sleep {token} &' &")
}
