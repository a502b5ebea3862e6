//! What the kit reads from /proc: a process's state, parent, group and
//! start time, its children, and whether its environment carries a marker.

use std::collections::{BTreeSet, VecDeque};

/// The fields of /proc/PID/stat the kit uses.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Stat {
    /// `R`, `S`, `Z`, ...
    pub state: u8,
    /// Process group id.
    pub pgid: i32,
    /// Start time in clock ticks after boot.
    pub start: u64,
}

impl Stat {
    pub fn is_zombie(&self) -> bool {
        self.state == b'Z' || self.state == b'X'
    }
}

/// Parses /proc/PID/stat; None when the process is gone.
pub(crate) fn stat(pid: i32) -> Option<Stat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parentheses: fields start after
    // the last `)`. Index 0 is field 3 (state) of proc(5).
    let fields: Vec<&str> = text[text.rfind(')')? + 1..].split_whitespace().collect();
    Some(Stat {
        state: *fields.first()?.as_bytes().first()?,
        pgid: fields.get(2)?.parse().ok()?,
        start: fields.get(19)?.parse().ok()?,
    })
}

/// Whether `pid` is a live process (a zombie runs nothing).
pub(crate) fn is_alive(pid: i32) -> bool {
    stat(pid).is_some_and(|s| !s.is_zombie())
}

/// The direct children of every thread of `pid` (a re-parented orphan
/// belongs to whichever thread the kernel picked).
pub(crate) fn children(pid: i32) -> Vec<i32> {
    let mut out = Vec::new();
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return out;
    };
    for task in tasks.flatten() {
        if let Ok(list) = std::fs::read_to_string(task.path().join("children")) {
            out.extend(
                list.split_whitespace()
                    .filter_map(|p| p.parse::<i32>().ok()),
            );
        }
    }
    out
}

/// `roots` and every live descendant of them, by the parent chain.
pub(crate) fn descendants(roots: &[i32]) -> BTreeSet<i32> {
    let mut seen = BTreeSet::new();
    let mut queue: VecDeque<i32> = roots.iter().copied().collect();
    while let Some(pid) = queue.pop_front() {
        if seen.insert(pid) {
            queue.extend(children(pid));
        }
    }
    seen
}

/// Whether one of `pid`'s environment entries satisfies `matches`.
/// /proc/PID/environ is the environment the process was started with; a
/// zombie or a process of another user reads as empty.
pub(crate) fn environ_has(pid: i32, matches: impl Fn(&[u8]) -> bool) -> bool {
    std::fs::read(format!("/proc/{pid}/environ"))
        .is_ok_and(|env| env.split(|b| *b == 0).any(matches))
}

/// Every pid in /proc.
pub(crate) fn all_pids() -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .collect()
}
