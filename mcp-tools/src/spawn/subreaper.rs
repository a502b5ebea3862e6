//! This process as a child subreaper: orphans of its children are
//! re-parented here instead of to init, so they can be found and killed,
//! and their exit statuses are collected here.
//!
//! Reaping must not steal a status someone else waits for. tokio (and std)
//! wait for their own children by pid; the kit reaps a zombie child only
//! when it is none of those: not a leader the kit spawned or adopted (tokio
//! or rmcp owns their status), and not in this process's own process group
//! (a child started outside the kit without `process_group` stays in our
//! group; every process of a kit tree is in another group or session). While
//! a command handed out by `into_command` waits for adoption, zombies that
//! lead their own group are left alone too: one may be that leader.

use std::io;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use nix::sys::wait::{WaitPidFlag, waitpid};
use nix::unistd::Pid;

use super::{owner, procfs, tree};

/// How often the reaping thread collects orphans that died on their own.
const REAP_EVERY: Duration = Duration::from_millis(200);

static ACTIVE: AtomicBool = AtomicBool::new(false);
/// A child was spawned while this process was not (yet) a subreaper: its
/// orphans may have gone to init, where only a marker scan finds them.
static SPAWNED_UNWATCHED: AtomicBool = AtomicBool::new(false);

/// Makes this process a child subreaper (PR_SET_CHILD_SUBREAPER) so orphans
/// of its children are re-parented here instead of to init, and reaps them
/// (a thread looks every 200 ms). The shell server calls it at start (in
/// process too: the agent process becomes the subreaper). Idempotent.
///
/// Once called, a child this process starts outside the kit must stay in
/// this process's group (the default), or its status may be collected here.
pub fn become_subreaper() -> io::Result<()> {
    static DONE: OnceLock<Result<(), (io::ErrorKind, String)>> = OnceLock::new();
    DONE.get_or_init(|| {
        nix::sys::prctl::set_child_subreaper(true)
            .map_err(|e| (io::ErrorKind::Other, e.to_string()))?;
        std::thread::Builder::new()
            .name("nanohermes-reap".into())
            .spawn(|| {
                loop {
                    std::thread::sleep(REAP_EVERY);
                    reap_orphans();
                }
            })
            .map_err(|e| (e.kind(), e.to_string()))?;
        ACTIVE.store(true, Ordering::SeqCst);
        Ok(())
    })
    .clone()
    .map_err(|(kind, text)| io::Error::new(kind, text))
}

/// Called for every spawn: remembers one made before the subreaper was on.
pub(crate) fn note_spawn() {
    if !is_active() {
        SPAWNED_UNWATCHED.store(true, Ordering::SeqCst);
    }
}

/// Whether every spawn so far happened with the subreaper on, so every
/// orphan of every tree was re-parented here and our descendants are all
/// there is to find.
pub(crate) fn watched_every_spawn() -> bool {
    is_active() && !SPAWNED_UNWATCHED.load(Ordering::SeqCst)
}

/// Whether [`become_subreaper`] succeeded in this process.
pub(crate) fn is_active() -> bool {
    ACTIVE.load(Ordering::SeqCst)
}

/// Collects every zombie child whose status nobody else waits for.
pub(crate) fn reap_orphans() {
    if !is_active() {
        return;
    }
    let own_group = nix::unistd::getpgrp().as_raw();
    // Held while reaping: a spawn registers its leader under this lock, so
    // a leader is never seen here unregistered.
    let mut reg = tree::registry();
    reg.leaders
        .retain(|pid| std::path::Path::new(&format!("/proc/{pid}")).exists());
    for child in procfs::children(owner().pid) {
        let Some(stat) = procfs::stat(child) else {
            continue;
        };
        let maybe_unadopted = reg.pending > 0 && stat.pgid == child;
        if stat.is_zombie()
            && stat.pgid != own_group
            && !reg.leaders.contains(&child)
            && !maybe_unadopted
        {
            let _ = waitpid(Pid::from_raw(child), Some(WaitPidFlag::WNOHANG));
        }
    }
}
