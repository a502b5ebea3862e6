//! Everything one spawn started, and how it is found and killed.
//!
//! A tree is the leader's process group plus every descendant of the leader
//! (by the parent chain) plus every process that carries the spawn's marker
//! variable, wherever it went: `setsid`, `nohup` and double forks leave the
//! group and the parent chain, but keep the environment they inherited.
//!
//! Finding them is cheap when this process is a child subreaper: an orphan
//! of the tree is then re-parented to this process, so it is one of our
//! direct children and a read of /proc/self/task/*/children finds it; one
//! last look per kill reads every /proc entry (an orphan moving between
//! this process's threads can be missing from those lists for a moment),
//! and then only processes started after this one are looked at.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;

use super::{Marker, owner, procfs, reaper, subreaper};

/// What the kit knows about the processes it started.
#[derive(Debug, Default)]
pub(super) struct Registry {
    /// Leaders whose exit status belongs to a tokio `Child` (or rmcp's):
    /// never reaped by the kit's own reaping loop.
    pub leaders: BTreeSet<i32>,
    /// Trees not yet killed: spawn sequence number → leader pid (= pgid).
    pub live: BTreeMap<u64, i32>,
    /// Commands handed out by `into_command` and not yet adopted: their
    /// leader's pid is not known yet.
    pub pending: usize,
}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry {
    leaders: BTreeSet::new(),
    live: BTreeMap::new(),
    pending: 0,
});

pub(super) fn registry() -> MutexGuard<'static, Registry> {
    REGISTRY.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Everything one spawn started: the leader's process group plus every
/// descendant, including ones that called setsid/nohup or double-forked
/// (found by the marker variable and by the parent chain). Killed at the
/// latest when dropped.
#[derive(Debug)]
pub struct ProcessTree {
    pid: i32,
    seq: u64,
    marker: String,
    /// The network proxy of a command run with the domain allowlist:
    /// served as long as the tree lives.
    proxy: Option<crate::net::Proxy>,
}

impl ProcessTree {
    /// Registers `pid`, already spawned as the leader of its own group,
    /// under `seq`; the caller holds the registry lock (so the reaping loop
    /// never sees the leader unregistered).
    pub(super) fn register(reg: &mut Registry, pid: i32, seq: u64, marker: String) -> Self {
        reg.leaders.insert(pid);
        reg.live.insert(seq, pid);
        reaper::track(pid);
        Self {
            pid,
            seq,
            marker,
            proxy: None,
        }
    }

    /// Keeps `proxy` serving for as long as this tree lives.
    pub(super) fn keep_proxy(&mut self, proxy: Option<crate::net::Proxy>) {
        self.proxy = proxy;
    }

    /// The hosts the sandbox's network allowlist refused to this tree's
    /// processes so far (empty without the allowlist), each once, sorted.
    pub fn refused_domains(&self) -> Vec<String> {
        self.proxy
            .as_ref()
            .map_or_else(Vec::new, crate::net::Proxy::refused)
    }

    /// Takes charge of a process someone else spawned from a command made
    /// by [`super::SpawnCommand::into_command`] (rmcp's
    /// `TokioChildProcess` spawns the server itself): `pid` is the child's
    /// pid, `marker` the one that came with the command.
    pub fn adopt(pid: u32, marker: Marker) -> ProcessTree {
        let pid = i32::try_from(pid).unwrap_or(i32::MAX);
        let mut reg = registry();
        let tree = Self::register(&mut reg, pid, marker.seq, marker.value.clone());
        marker.settle(&mut reg);
        tree
    }

    /// The process group id (the leader's pid).
    pub fn pgid(&self) -> i32 {
        self.pid
    }

    /// The marker value (`NANOHERMES_SPAWN=<this>`) every process of the
    /// tree inherited.
    pub fn marker(&self) -> &str {
        &self.marker
    }

    /// Whether the tree has not been killed yet.
    pub fn is_live(&self) -> bool {
        registry().live.contains_key(&self.seq)
    }

    /// Sends `sig` to the leader's process group (e.g. SIGTERM first, so
    /// the command can clean up). Nothing once the tree was killed: the
    /// group id may have been reused.
    pub fn signal_group(&self, sig: Signal) {
        if self.is_live() {
            let _ = killpg(Pid::from_raw(self.pid), sig);
        }
    }

    /// SIGKILL to the group and to every descendant and marked process;
    /// idempotent (only the first call signals).
    pub fn kill(&self) {
        if registry().live.remove(&self.seq).is_none() {
            return;
        }
        let _ = killpg(Pid::from_raw(self.pid), Signal::SIGKILL);
        let wanted = format!("{}={}", super::MARKER_VAR, self.marker);
        sweep(
            &|entry| entry == wanted.as_bytes(),
            Some(self.pid),
            Scope::Tree,
        );
        reaper::forget(self.pid);
    }
}

impl Drop for ProcessTree {
    fn drop(&mut self) {
        self.kill();
    }
}

/// How far [`sweep`] looks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Scope {
    /// One tree: descendants of the leader and marked processes.
    Tree,
    /// Everything this owner started: every /proc entry is read, and every
    /// direct child outside this process's own group goes too (an orphan
    /// that cleared its environment is still our child).
    Everything,
}

/// How long a kill waits for a leader it just killed to finish exiting.
const LEADER_EXIT_WAIT: Duration = Duration::from_secs(1);
/// Empty looks in a row, a few ms apart, before a sweep that had something
/// in flux believes nothing is left.
const SETTLE_LOOKS: u32 = 2;

/// Stops every process found (a stopped process cannot fork), looks again
/// until nothing new turns up, then kills them all.
///
/// Why the waits: a process killed a moment ago re-parents its children
/// only as it exits. Between our read of the leader's children and of our
/// own, an orphan can move from one list to the other and be seen in
/// neither. So a sweep first waits for a leader that was still running to
/// finish exiting, and when anything was in flux (a live leader, or
/// processes stopped by this sweep) it looks again a few ms later before
/// it stops looking. A command that already ended leaves nothing in flux,
/// so the common path pays nothing.
pub(super) fn sweep(marked: &dyn Fn(&[u8]) -> bool, leader: Option<i32>, scope: Scope) {
    // Still leading its own group: ours (the group was sent SIGKILL just
    // before), not a process that reused the pid of a reaped leader.
    let leader_was_running = leader
        .is_some_and(|pid| procfs::stat(pid).is_some_and(|s| !s.is_zombie() && s.pgid == pid));
    if let Some(pid) = leader.filter(|_| leader_was_running) {
        let deadline = Instant::now() + LEADER_EXIT_WAIT;
        while procfs::is_alive(pid) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    let mut stopped = BTreeSet::new();
    let mut empty_looks = 0;
    // The last look reads every /proc entry once: a list of our children
    // can miss an orphan while it moves between this process's threads
    // (the kernel re-parents to any live thread, again when that one
    // exits), and a missed orphan would outlive its tree.
    let mut full = false;
    for _ in 0..64 {
        let new: Vec<i32> = find(marked, leader, scope, full)
            .into_iter()
            .filter(|p| !stopped.contains(p))
            .collect();
        if new.is_empty() {
            let in_flux = leader_was_running || !stopped.is_empty();
            if in_flux && empty_looks < SETTLE_LOOKS {
                empty_looks += 1;
                std::thread::sleep(Duration::from_millis(3));
                continue;
            }
            if !full && scope == Scope::Tree && subreaper::is_active() {
                full = true;
                continue;
            }
            break;
        }
        empty_looks = 0;
        for pid in new {
            let _ = kill(Pid::from_raw(pid), Signal::SIGSTOP);
            stopped.insert(pid);
        }
    }
    for pid in &stopped {
        let _ = kill(Pid::from_raw(*pid), Signal::SIGKILL);
    }
    subreaper::reap_orphans();
}

/// The processes `marked` or descended from `leader`; `full` reads every
/// /proc entry even when the subreaper would make our children enough.
fn find(
    marked: &dyn Fn(&[u8]) -> bool,
    leader: Option<i32>,
    scope: Scope,
    full: bool,
) -> BTreeSet<i32> {
    let me = owner().pid;
    let mut roots: Vec<i32> = leader.into_iter().collect();
    if subreaper::is_active() {
        let own_group = nix::unistd::getpgrp().as_raw();
        let reaper = reaper::pid();
        for child in procfs::children(me) {
            if Some(child) == leader || Some(child) == reaper {
                continue;
            }
            let foreign = scope == Scope::Everything
                && procfs::stat(child).is_some_and(|s| s.pgid != own_group);
            if foreign || procfs::environ_has(child, marked) {
                roots.push(child);
            }
        }
    }
    // With the subreaper on since the first spawn, every orphan came back
    // to us: the walk above found everything, and reading every /proc
    // entry (milliseconds, at exit) would find nothing more. The reaper
    // still makes that full pass once this process is gone.
    if full
        || !subreaper::is_active()
        || (scope == Scope::Everything && !subreaper::watched_every_spawn())
    {
        let since = owner().start;
        for pid in procfs::all_pids() {
            if pid != me
                && procfs::stat(pid).is_some_and(|s| s.start >= since && !s.is_zombie())
                && procfs::environ_has(pid, marked)
            {
                roots.push(pid);
            }
        }
    }
    let reaper = reaper::pid();
    procfs::descendants(&roots)
        .into_iter()
        .filter(|p| *p != me && Some(*p) != reaper && procfs::is_alive(*p))
        .collect()
}
