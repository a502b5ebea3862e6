//! Memory of a process and of its whole tree, sampled from `/proc` while
//! it runs (a child's figures are gone once it is reaped).
//!
//! What a user pays is PSS (`/proc/PID/smaps_rollup`): each page divided
//! among the processes that map it, so the agent's text, shared with every
//! `nanohermes builtin` child (the same binary) and with the page cache, is
//! counted once across the tree, not once per process as RSS counts it.
//! Anonymous memory (heap, stacks) is what no other process or the page
//! cache can share or drop. Plain peak RSS (`VmHWM`) is kept beside them,
//! labelled, for comparison with earlier figures.

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
    peaks: Arc<[AtomicU64; 4]>,
    thread: Option<JoinHandle<()>>,
}

/// Peaks seen by a [`Watch`], in KiB.
#[derive(Debug, Clone, Copy, Default)]
pub struct Peaks {
    /// The leader's largest PSS at one sample.
    pub leader_pss_kib: u64,
    /// The leader's largest anonymous resident memory at one sample.
    pub leader_anon_kib: u64,
    /// The leader's RSS high-water mark (`VmHWM`), shared file pages included.
    pub leader_rss_kib: u64,
    /// The largest sum of PSS over the leader and its descendants at one sample.
    pub tree_pss_kib: u64,
}

impl Watch {
    /// Starts sampling the tree led by `pid`.
    pub fn start(pid: u32) -> Watch {
        let stop = Arc::new(AtomicBool::new(false));
        let peaks: Arc<[AtomicU64; 4]> = Arc::new(Default::default());
        let thread = {
            let (stop, peaks) = (stop.clone(), peaks.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    if let Some(hwm) = status_kib(pid, "VmHWM:") {
                        peaks[2].fetch_max(hwm, Ordering::Relaxed);
                    }
                    if let Some(rollup) = Rollup::of(pid) {
                        peaks[0].fetch_max(rollup.pss_kib, Ordering::Relaxed);
                        peaks[1].fetch_max(rollup.anon_kib, Ordering::Relaxed);
                    }
                    let sum: u64 = descendants(pid)
                        .into_iter()
                        .chain([pid])
                        .filter_map(|p| Rollup::of(p).map(|r| r.pss_kib))
                        .sum();
                    peaks[3].fetch_max(sum, Ordering::Relaxed);
                    std::thread::sleep(EVERY);
                }
            })
        };
        Watch {
            stop,
            peaks,
            thread: Some(thread),
        }
    }

    /// Stops sampling and returns the peaks.
    pub fn finish(mut self) -> Peaks {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        let peak = |i: usize| self.peaks[i].load(Ordering::Relaxed);
        Peaks {
            leader_pss_kib: peak(0),
            leader_anon_kib: peak(1),
            leader_rss_kib: peak(2),
            tree_pss_kib: peak(3),
        }
    }
}

/// Two lines of `/proc/PID/smaps_rollup`, in KiB.
#[derive(Debug, Clone, Copy)]
struct Rollup {
    /// `Pss:`.
    pss_kib: u64,
    /// `Anonymous:`.
    anon_kib: u64,
}

impl Rollup {
    fn of(pid: u32) -> Option<Rollup> {
        let text = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).ok()?;
        Some(Rollup {
            pss_kib: kib_line(&text, "Pss:")?,
            anon_kib: kib_line(&text, "Anonymous:")?,
        })
    }
}

/// A `kB` line of `/proc/PID/status`.
fn status_kib(pid: u32, key: &str) -> Option<u64> {
    kib_line(
        &std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?,
        key,
    )
}

/// The value of the `KEY  N kB` line of a `/proc` file.
fn kib_line(text: &str, key: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with(key))?;
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
        assert!(
            peaks.leader_pss_kib > 0 && peaks.leader_anon_kib > 0,
            "{peaks:?}"
        );
        assert!(peaks.leader_rss_kib >= peaks.leader_pss_kib, "{peaks:?}");
        // The shell and its sleep: more than the shell alone.
        assert!(peaks.tree_pss_kib > peaks.leader_pss_kib, "{peaks:?}");
    }
}
