//! The only code that runs in a sandboxed child between fork and exec,
//! and the `unsafe` blocks it needs (`pre_exec`); and the explicit
//! namespace probe, a forked child doing the same namespace step.

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use landlock::{RulesetCreated, RulesetStatus};

use super::contain;
use super::protect::{self, Protect, enter_namespaces, id_maps};
use super::relay::Relay;

/// What the child does, all of it prepared in the parent.
#[derive(Debug)]
pub(super) struct ChildSteps {
    protect: Option<Protect>,
    ruleset: Option<RulesetCreated>,
    /// The network allowlist's relay, run inside the namespaces.
    relay: Option<Relay>,
    /// The ruleset for a spawn again without the namespaces: with the
    /// allowlist, `ruleset` lets TCP reach the relay's port, which
    /// outside a namespace of its own would be any host's.
    offline: Option<RulesetCreated>,
    /// Set by the parent when the namespaces turned out unavailable: a
    /// spawn again of the same command skips `protect` (`FirstTry`).
    skip_protect: Arc<AtomicBool>,
}

impl ChildSteps {
    pub(super) fn new(
        protect: Option<Protect>,
        ruleset: Option<RulesetCreated>,
        skip_protect: Arc<AtomicBool>,
    ) -> ChildSteps {
        ChildSteps {
            protect,
            ruleset,
            relay: None,
            offline: None,
            skip_protect,
        }
    }

    /// Adds the allowlist's relay, and the ruleset to use instead of the
    /// relay's when a spawn again skips the namespaces.
    pub(super) fn with_relay(
        mut self,
        relay: Relay,
        offline: Option<RulesetCreated>,
    ) -> ChildSteps {
        self.relay = Some(relay);
        self.offline = offline;
        self
    }

    /// Namespaces and mounts first (mounting is impossible once Landlock
    /// is on), then the split into waiter and pid 1 (`contain.rs`), then,
    /// in pid 1 only, `no_new_privs` and `landlock_restrict_self`. Errors are raw
    /// errno values: building any other `io::Error` would allocate; a
    /// failure to enter the namespaces is tagged ([`namespace_failure`]).
    fn run(&mut self) -> io::Result<()> {
        let skip = self.skip_protect.load(Ordering::Relaxed);
        if let Some(protect) = &self.protect
            && !skip
        {
            protect.enter(tag)?;
            // Inside the new network namespace: the relay's socket. A
            // failure fails the spawn: never a command without its leash.
            let relay = match &self.relay {
                Some(relay) => Some((relay, relay.listen()?)),
                None => None,
            };
            if protect.contains() {
                contain::split(relay)?;
            }
        }
        let ruleset = if skip && self.relay.is_some() {
            // Never the relay's ruleset outside the namespace; and with
            // Landlock in use, never no ruleset at all.
            match self.offline.take() {
                Some(offline) => Some(offline),
                None if self.ruleset.is_some() => {
                    return Err(io::Error::from_raw_os_error(libc_eperm()));
                }
                None => None,
            }
        } else {
            self.ruleset.take()
        };
        if let Some(ruleset) = ruleset {
            let status = ruleset
                .restrict_self()
                .map_err(|_| io::Error::from_raw_os_error(libc_eperm()))?;
            if status.ruleset != RulesetStatus::FullyEnforced {
                return Err(io::Error::from_raw_os_error(libc_eperm()));
            }
        }
        Ok(())
    }
}

fn libc_eperm() -> i32 {
    nix::errno::Errno::EPERM as i32
}

/// Runs `steps` in the child of `command` just before it execs.
#[allow(unsafe_code)]
pub(super) fn install(command: &mut tokio::process::Command, mut steps: ChildSteps) {
    // SAFETY: the closure runs in the forked child, where only
    // async-signal-safe work is allowed. It allocates nothing and takes
    // no lock: every path, map and the Landlock ruleset were made before
    // the fork; it only issues system calls (unshare, open/write on
    // /proc/self, mount, chdir, prctl, landlock_restrict_self, close) on
    // that memory, and reports failures as raw errno values.
    unsafe {
        command.pre_exec(move || steps.run());
    }
}

/// Whether a child can enter every namespace a command enters here (user,
/// mount, PID, network): a forked child does just that and execs `true`.
/// Only [`super::Support::probe`] asks, for a report; commands find out
/// by trying ([`namespace_failure`]).
pub(super) fn probe_namespaces() -> Result<(), String> {
    let (uid_map, gid_map) = id_maps();
    let mut command = std::process::Command::new("true");
    probe_install(&mut command, uid_map, gid_map);
    command
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    match command.status() {
        Ok(status) if status.success() => Ok(()),
        Ok(status) => Err(format!("a test child ended with {status}")),
        Err(e) => Err(namespace_failure(&e)
            .unwrap_or_else(|| format!("a test child could not start `true`: {e}"))),
    }
}

/// Why namespaces are unavailable, for the user, from the kernel's error.
fn refused(e: io::Error) -> String {
    format!("this system does not let a process make user, mount, PID and network namespaces: {e}")
}

#[allow(unsafe_code)]
fn probe_install(command: &mut std::process::Command, uid_map: Vec<u8>, gid_map: Vec<u8>) {
    use std::os::unix::process::CommandExt as _;
    // SAFETY: as in `install`: the maps are made before the fork and the
    // closure only issues system calls on them.
    unsafe {
        command.pre_exec(move || {
            enter_namespaces(&uid_map, &gid_map, protect::flags(false)).map_err(tag)
        });
    }
}

/// Added to the errno of a failed namespace step, so the parent tells it
/// from a failed exec (errno values stay below 4096).
const NAMESPACE_STEP: i32 = 1 << 20;

/// The child's namespace step failed with `e`: its errno, tagged.
fn tag(e: io::Error) -> io::Error {
    io::Error::from_raw_os_error(NAMESPACE_STEP | e.raw_os_error().unwrap_or(libc_eperm()))
}

/// The kernel's own error inside a tagged one.
fn untag(code: i32) -> io::Error {
    io::Error::from_raw_os_error(code & !NAMESPACE_STEP)
}

/// When a spawn failed because the child could not enter the namespaces
/// (the command never started): why, for the user.
pub(crate) fn namespace_failure(e: &io::Error) -> Option<String> {
    let code = e.raw_os_error()?;
    (code & NAMESPACE_STEP != 0).then(|| refused(untag(code)))
}
