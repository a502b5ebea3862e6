//! The exit path of a process that never started a child through the kit:
//! `kill_all_spawned` must not start the reaper (a `sh` child) just to tell
//! it nothing, nor scan every process. Its own test binary, so no other
//! test's spawn starts the reaper first.

use std::path::Path;

/// Our direct children's command names.
fn children_names() -> Vec<String> {
    let mut names = Vec::new();
    for task in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
        let list = std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
        for pid in list.split_whitespace() {
            let cmdline =
                std::fs::read(Path::new("/proc").join(pid).join("cmdline")).unwrap_or_default();
            names.push(String::from_utf8_lossy(&cmdline).replace('\0', " "));
        }
    }
    names
}

#[test]
fn an_owner_that_never_spawned_exits_without_starting_a_reaper() {
    mcp_tools::spawn::kill_all_spawned();
    mcp_tools::spawn::kill_all_spawned();
    let children = children_names();
    assert!(
        !children.iter().any(|c| c.contains("nanohermes-reaper")),
        "kill_all_spawned started a reaper: {children:?}"
    );
}
