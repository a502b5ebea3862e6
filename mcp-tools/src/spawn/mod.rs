//! The one spawn policy: every child process NanoHermes starts (shell
//! commands, git and its hooks, external MCP servers, later subagents) goes
//! through [`command`].
//!
//! What a child gets:
//! - its own process group (`process_group(0)`), so a terminal's Ctrl-C
//!   (SIGINT to the foreground group) reaches only the owner;
//! - an environment rebuilt from an [`EnvPolicy`]: secrets scrubbed, or an
//!   allow-list;
//! - stdin from /dev/null unless the caller says otherwise, and
//!   `kill_on_drop`;
//! - a marker variable `NANOHERMES_SPAWN=<owner-token>.<seq>`, which every
//!   process it starts inherits, so its [`ProcessTree`] can be found even
//!   after `setsid`, `nohup` or a double fork.
//!
//! A tree dies when its [`ProcessTree`] is killed or dropped; everything an
//! owner started dies with [`kill_all_spawned`] at exit, and a reaper
//! process kills it when the owner dies without running any code (SIGKILL).
//! [`become_subreaper`] makes orphans come back to the owner, which makes
//! finding them cheap and collects their exit statuses.
//!
//! A sandboxed command is also contained by the kernel ([`sandbox`]): it is
//! pid 1 of a PID namespace whose every process dies with it, and it dies
//! with the tree's leader, whatever the processes do to their environment.
//!
//! Known limit, for what is not sandboxed (`danger-full-access`, MCP
//! servers): a process that both clears its environment (`env -i`) and
//! leaves the tree's group is not attributed to its tree; with the
//! subreaper it is killed when the owner exits, without it, not at all.

mod env;
mod procfs;
mod reaper;
pub mod sandbox;
mod subreaper;
mod tree;

use std::ffi::OsStr;
use std::io;
use std::ops::{Deref, DerefMut};
use std::process::Stdio;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::process::{Child, Command};

pub use env::{EnvPolicy, is_allowed_name, is_secret_name, withhold};
pub use nix::sys::signal::Signal;
pub use sandbox::{
    Confined, PROTECTED_DIRS, PROTECTED_FILES, Sandbox, SandboxArgs, SandboxMode, SandboxPolicy,
    WhenUnavailable,
};
pub use subreaper::become_subreaper;
pub use tree::ProcessTree;

/// The variable that marks every process of one spawn.
pub const MARKER_VAR: &str = "NANOHERMES_SPAWN";

/// Who owns the spawns of this process.
#[derive(Debug)]
struct Owner {
    pid: i32,
    /// Start time of this process (clock ticks after boot): processes that
    /// started before it cannot carry its marker.
    start: u64,
    /// `<pid>-<start>`: unique among the processes alive at any one time.
    token: String,
}

fn owner() -> &'static Owner {
    static OWNER: OnceLock<Owner> = OnceLock::new();
    OWNER.get_or_init(|| {
        let pid = i32::try_from(std::process::id()).unwrap_or(i32::MAX);
        let start = procfs::stat(pid).map_or(0, |s| s.start);
        Owner {
            pid,
            start,
            token: format!("{pid}-{start}"),
        }
    })
}

static NEXT_SEQ: AtomicU64 = AtomicU64::new(1);

/// A tokio [`Command`] configured by [`command`]; derefs to it, so callers
/// add args, cwd and stdio, then call [`SpawnCommand::spawn`].
#[derive(Debug)]
pub struct SpawnCommand {
    command: Command,
    seq: u64,
    marker: String,
    /// Set by [`Sandbox::confine`] when this spawn finds out whether
    /// namespaces work.
    first_try: Option<sandbox::FirstTry>,
    /// The warning of a spawn again with Landlock only.
    sandbox_warning: Option<String>,
    /// The network proxy [`Sandbox::confine`] started, handed to the
    /// spawned tree.
    proxy: Option<crate::net::Proxy>,
}

/// The marker of a command handed out by [`SpawnCommand::into_command`],
/// to give back to [`ProcessTree::adopt`] with the child's pid.
#[derive(Debug)]
pub struct Marker {
    seq: u64,
    value: String,
    counted: bool,
}

impl Marker {
    /// The marker value the child's environment carries.
    pub fn value(&self) -> &str {
        &self.value
    }

    /// Ends the wait for adoption (under the registry lock the caller holds).
    fn settle(mut self, reg: &mut tree::Registry) {
        if self.counted {
            reg.pending -= 1;
            self.counted = false;
        }
    }
}

impl Drop for Marker {
    fn drop(&mut self) {
        if self.counted {
            tree::registry().pending -= 1;
        }
    }
}

/// A tokio Command for `program` that follows the policy: its own process
/// group, env cleared and rebuilt by `env`, stdin null by default, the
/// per-spawn marker variable, `kill_on_drop(true)`. The caller adds args,
/// cwd, stdio and spawns it.
pub fn command(program: impl AsRef<OsStr>, env: &EnvPolicy) -> SpawnCommand {
    let seq = NEXT_SEQ.fetch_add(1, Ordering::SeqCst);
    let marker = format!("{}.{seq}", owner().token);
    let mut command = Command::new(program);
    env::apply(&mut command, env, &marker);
    command
        .process_group(0)
        .stdin(Stdio::null())
        .kill_on_drop(true);
    SpawnCommand {
        command,
        seq,
        marker,
        first_try: None,
        sandbox_warning: None,
        proxy: None,
    }
}

impl SpawnCommand {
    /// Spawns the child; returns it with the tree it leads.
    ///
    /// A sandboxed child that cannot enter its namespaces fails before it
    /// execs: the command never started. The first such failure teaches
    /// the process that namespaces are unavailable; then the command is
    /// refused (the error is the sandbox's refusal), or, with
    /// `sandbox_unavailable = "warn"`, spawned again with Landlock only
    /// and [`sandbox_warning`](Self::sandbox_warning) says so. Never is a
    /// command run with less than its policy without a refusal or a warning.
    pub fn spawn(&mut self) -> io::Result<(Child, ProcessTree)> {
        let first_try = self.first_try.take();
        match self.spawn_once() {
            Ok(spawned) => {
                if let Some(first_try) = first_try {
                    first_try.succeeded();
                }
                Ok(spawned)
            }
            Err(e) => match (sandbox::child::namespace_failure(&e), first_try) {
                (Some(why), Some(first_try)) => match first_try.failed(why) {
                    Ok(warning) => {
                        self.sandbox_warning = Some(warning);
                        self.spawn_once()
                    }
                    Err(refusal) => Err(io::Error::new(io::ErrorKind::PermissionDenied, refusal)),
                },
                (Some(why), None) => Err(io::Error::new(
                    io::ErrorKind::PermissionDenied,
                    format!("the command was not run: its sandbox failed: {why}"),
                )),
                (None, _) => Err(e),
            },
        }
    }

    /// The warning for the command's result when [`spawn`](Self::spawn)
    /// found namespaces unavailable and ran it with Landlock only.
    pub fn sandbox_warning(&self) -> Option<&str> {
        self.sandbox_warning.as_deref()
    }

    fn spawn_once(&mut self) -> io::Result<(Child, ProcessTree)> {
        reaper::ensure();
        subreaper::note_spawn();
        // The leader is registered before the reaping loop can look: it
        // must never collect a status tokio waits for.
        let mut reg = tree::registry();
        let child = self.command.spawn()?;
        // `spawn` returns once the child has exec'd, so it already leads its
        // group and the group id is its pid.
        let pid = child
            .id()
            .and_then(|p| i32::try_from(p).ok())
            .ok_or_else(|| io::Error::other("the child exited before it could be tracked"))?;
        let mut tree = ProcessTree::register(&mut reg, pid, self.seq, self.marker.clone());
        tree.keep_proxy(self.proxy.take());
        Ok((child, tree))
    }

    /// The marker value this command's processes carry.
    pub fn marker(&self) -> &str {
        &self.marker
    }

    /// The configured tokio command, for code that spawns it itself (rmcp's
    /// `TokioChildProcess::builder(cmd)`), and its [`Marker`]: hand both the
    /// child's pid and the marker to [`ProcessTree::adopt`] right after.
    pub fn into_command(self) -> (Command, Marker) {
        reaper::ensure();
        subreaper::note_spawn();
        tree::registry().pending += 1;
        let marker = Marker {
            seq: self.seq,
            value: self.marker,
            counted: true,
        };
        (self.command, marker)
    }
}

impl Deref for SpawnCommand {
    type Target = Command;
    fn deref(&self) -> &Command {
        &self.command
    }
}

impl DerefMut for SpawnCommand {
    fn deref_mut(&mut self) -> &mut Command {
        &mut self.command
    }
}

/// Kills every process this owner ever spawned that is still alive (by
/// marker, and with the subreaper every orphan re-parented here). Called on
/// server exit and agent exit (normal and SIGINT/SIGTERM paths).
pub fn kill_all_spawned() {
    // Every spawn starts the reaper first: without one, this process never
    // started a child through the kit, and reading every /proc entry to
    // find its marker would only delay the exit.
    if !reaper::was_needed() {
        return;
    }
    let live: Vec<i32> = std::mem::take(&mut tree::registry().live)
        .into_values()
        .collect();
    for pgid in &live {
        let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(*pgid), Signal::SIGKILL);
    }
    let prefix = format!("{MARKER_VAR}={}.", owner().token);
    tree::sweep(
        &|entry| entry.starts_with(prefix.as_bytes()),
        None,
        tree::Scope::Everything,
    );
    for pgid in live {
        reaper::forget(pgid);
    }
}
