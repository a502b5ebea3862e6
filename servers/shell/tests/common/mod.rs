//! Helpers shared by the shell tests: calling tools and checking, through
//! /proc, whether processes are still alive.

#![allow(dead_code)]

use std::path::Path;
use std::time::{Duration, Instant};

use rmcp::RoleClient;
use rmcp::service::RunningService;
use serde_json::Value;

/// Calls `tool` and returns its text and whether it is an error result.
pub async fn call(
    client: &RunningService<RoleClient, ()>,
    tool: &str,
    args: Value,
) -> (String, bool) {
    let (is_error, text) = mcp_tools::testing::call_text(client, tool, args).await;
    (text, is_error)
}

/// The fields of /proc/PID/stat after the command name: state, ppid, pgrp...
fn stat_fields(pid: &str) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 1..];
    Some(after.split_whitespace().map(str::to_string).collect())
}

/// Whether `pid` is a live process (zombies count as dead: they run nothing
/// and only wait for a parent to reap them).
pub fn is_alive(pid: i32) -> bool {
    stat_fields(&pid.to_string()).is_some_and(|f| f[0] != "Z")
}

/// Live (non-zombie) processes whose process group is `pgid`.
pub fn group_members(pgid: i32) -> Vec<i32> {
    let mut members = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        if let Some(fields) = stat_fields(&name)
            && fields[0] != "Z"
            && fields[2] == pgid.to_string()
        {
            members.push(name.parse().unwrap());
        }
    }
    members
}

/// Waits (up to a generous limit, so slow machines pass) until `done`
/// holds; returns whether it did.
pub async fn eventually(mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if done() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    done()
}

/// Reads a pid a command wrote to `file` in `dir`.
pub fn read_pid(dir: &Path, file: &str) -> i32 {
    std::fs::read_to_string(dir.join(file))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// The process group id in a `task_start` answer ("... (process group N) ...").
pub fn pgid_of(started: &str) -> i32 {
    let rest = started.split("process group ").nth(1).unwrap();
    rest[..rest.find(')').unwrap()].parse().unwrap()
}

/// A `sleep` argument no other process on the machine uses.
pub fn unique_sleep() -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(1);
    format!(
        "300.{}{:04}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    )
}

/// Live (non-zombie) processes with `token` as one of their arguments.
pub fn with_token(token: &str) -> Vec<i32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Ok(pid) = name.parse::<i32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        if stat_fields(&name).is_some_and(|f| f[0] != "Z")
            && cmdline
                .split(|b| *b == 0)
                .any(|arg| arg == token.as_bytes())
        {
            found.push(pid);
        }
    }
    found
}

/// The orphan attacks: each leaves `sleep TOKEN` running outside the
/// command's process group or parent chain.
pub fn attacks(token: &str) -> Vec<(&'static str, String)> {
    vec![
        ("setsid", format!("setsid sleep {token} &")),
        ("nohup", format!("nohup sleep {token} >/dev/null 2>&1 &")),
        ("double fork", format!("(sh -c 'sleep {token} &' &)")),
        (
            "setsid shell waiting",
            format!("setsid sh -c 'sleep {token} & wait' &"),
        ),
    ]
}
