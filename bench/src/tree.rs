//! Peak resident memory of a process and of its whole tree, sampled from
//! `/proc` while it runs (the kernel keeps `VmHWM` per process, but not for
//! a tree, and a child's figures are gone once it is reaped).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

/// How often the tree is read: often enough to see short-lived children.
const EVERY: Duration = Duration::from_millis(2);

/// A sampler of one process tree, stopped by [`Watch::finish`].
pub struct Watch {
    stop: Arc<AtomicBool>,
    leader_kib: Arc<AtomicU64>,
    tree_kib: Arc<AtomicU64>,
    thread: Option<JoinHandle<()>>,
}

/// Peaks seen by a [`Watch`], in KiB.
#[derive(Debug, Clone, Copy, Default)]
pub struct Peaks {
    /// The leader's own high-water mark (`VmHWM`).
    pub leader_kib: u64,
    /// The largest sum of `VmRSS` over the leader and its descendants at one sample.
    pub tree_kib: u64,
}

impl Watch {
    /// Starts sampling the tree led by `pid`.
    pub fn start(pid: u32) -> Watch {
        let stop = Arc::new(AtomicBool::new(false));
        let leader_kib = Arc::new(AtomicU64::new(0));
        let tree_kib = Arc::new(AtomicU64::new(0));
        let thread = {
            let (stop, leader_kib, tree_kib) = (stop.clone(), leader_kib.clone(), tree_kib.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    if let Some(hwm) = status_kib(pid, "VmHWM:") {
                        leader_kib.fetch_max(hwm, Ordering::Relaxed);
                    }
                    let sum: u64 = descendants(pid)
                        .into_iter()
                        .chain([pid])
                        .filter_map(|p| status_kib(p, "VmRSS:"))
                        .sum();
                    tree_kib.fetch_max(sum, Ordering::Relaxed);
                    std::thread::sleep(EVERY);
                }
            })
        };
        Watch {
            stop,
            leader_kib,
            tree_kib,
            thread: Some(thread),
        }
    }

    /// Stops sampling and returns the peaks.
    pub fn finish(mut self) -> Peaks {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        Peaks {
            leader_kib: self.leader_kib.load(Ordering::Relaxed),
            tree_kib: self.tree_kib.load(Ordering::Relaxed),
        }
    }
}

/// A `kB` line of `/proc/PID/status`.
fn status_kib(pid: u32, key: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with(key))?;
    line[key.len()..]
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()
}

/// Every live descendant of `root` (children by parent pid, transitively).
fn descendants(root: u32) -> Vec<u32> {
    let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        if let Some(ppid) = parent(pid) {
            children.entry(ppid).or_default().push(pid);
        }
    }
    let mut found = Vec::new();
    let mut queue = vec![root];
    while let Some(pid) = queue.pop() {
        for &child in children.get(&pid).into_iter().flatten() {
            found.push(child);
            queue.push(child);
        }
    }
    found
}

/// The parent pid from `/proc/PID/stat` (after the command name, which may hold spaces).
fn parent(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_shell_and_its_sleep_are_counted_in_the_tree() {
        let mut child = std::process::Command::new("sh")
            .args(["-c", "sleep 0.3; true"])
            .spawn()
            .unwrap();
        let watch = Watch::start(child.id());
        std::thread::sleep(Duration::from_millis(100));
        assert!(descendants(std::process::id()).contains(&child.id()));
        child.wait().unwrap();
        let peaks = watch.finish();
        assert!(peaks.leader_kib > 0, "{peaks:?}");
        assert!(peaks.tree_kib > peaks.leader_kib / 2, "{peaks:?}");
    }
}
