//! The only code that runs in a sandboxed child between fork and exec,
//! and the one `unsafe` block it needs (`pre_exec`); and the namespace
//! probe, whose child is this same program started again ([`answer_probe`]).

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};

use landlock::{RulesetCreated, RulesetStatus};

use super::contain;
use super::protect::{self, Protect, enter_namespaces, id_maps};

/// What the child does, all of it prepared in the parent.
#[derive(Debug)]
pub(super) struct ChildSteps {
    protect: Option<Protect>,
    ruleset: Option<RulesetCreated>,
}

impl ChildSteps {
    pub(super) fn new(protect: Option<Protect>, ruleset: Option<RulesetCreated>) -> ChildSteps {
        ChildSteps { protect, ruleset }
    }

    /// Namespaces and mounts first (mounting is impossible once Landlock
    /// is on), then the split into waiter and pid 1 (`contain.rs`), then,
    /// in pid 1 only, `no_new_privs` and `landlock_restrict_self`. Errors are raw
    /// errno values: building any other `io::Error` would allocate.
    fn run(&mut self) -> io::Result<()> {
        if let Some(protect) = &self.protect {
            protect.enter()?;
            if protect.contains() {
                contain::split()?;
            }
        }
        if let Some(ruleset) = self.ruleset.take() {
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

/// The first argument that makes a binary that calls [`answer_probe`]
/// the namespace probe's child.
pub const PROBE_ARG: &str = "--nanohermes-namespace-probe";

/// Whether this binary answers [`PROBE_ARG`] (its `main` called
/// [`answer_probe`]).
static ANSWERS_PROBE: AtomicBool = AtomicBool::new(false);

/// The probe child's exit code when it entered the namespaces but could
/// not exec `true` in them.
const EXEC_FAILED: i32 = 255;

/// For a program's `main`, first thing: when this process is the
/// namespace probe's child (its first argument is [`PROBE_ARG`]), it enters
/// a user and mount namespace and execs `true` there, and never returns;
/// otherwise it notes that this binary can be the probe's child, and
/// returns.
///
/// Why: the probe then starts this same binary with `posix_spawn` (a
/// vfork), where it used to fork the whole program to run the same steps
/// between fork and exec. A fork copies the page tables of a process that
/// is starting up and write-protects its pages, on the first request's
/// path (measured before this: with no probe child at all, the agent's
/// first request came about 1 ms sooner).
/// The same binary keeps the test what it was: whatever confines this
/// program (an AppArmor profile, a seccomp filter) confines the probe.
pub fn answer_probe() {
    let mut args = std::env::args_os().skip(1);
    if args.next().as_deref() != Some(std::ffi::OsStr::new(PROBE_ARG)) {
        ANSWERS_PROBE.store(true, Ordering::Relaxed);
        return;
    }
    let (uid_map, gid_map) = id_maps();
    if let Err(e) = enter_namespaces(&uid_map, &gid_map, protect::flags(false)) {
        std::process::exit(e.raw_os_error().unwrap_or(libc_eperm()));
    }
    use std::os::unix::process::CommandExt as _;
    let _ = std::process::Command::new("true").exec();
    std::process::exit(EXEC_FAILED);
}

/// Whether a child can enter every namespace a command enters here (user,
/// mount, PID, network): starts `true` doing just that (once per process, from [`super::Support`]),
/// through this binary's [`answer_probe`] when it has one.
pub(super) fn probe_namespaces() -> Result<(), String> {
    let refused = |e: io::Error| {
        format!(
            "this system does not let a process make user, mount, PID and network namespaces: {e}"
        )
    };
    let self_spawned = ANSWERS_PROBE.load(Ordering::Relaxed);
    let mut command = if self_spawned {
        // No pre_exec: std starts it with posix_spawn.
        let mut command = std::process::Command::new("/proc/self/exe");
        command.arg(PROBE_ARG);
        command
    } else {
        let (uid_map, gid_map) = id_maps();
        let mut command = std::process::Command::new("true");
        probe_install(&mut command, uid_map, gid_map);
        command
    };
    command
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    match command.status() {
        Ok(status) if status.success() => Ok(()),
        Ok(status) => match status.code() {
            Some(EXEC_FAILED) => Err("a test child could not run `true` in the namespaces".into()),
            Some(errno) if self_spawned => Err(refused(io::Error::from_raw_os_error(errno))),
            _ => Err(format!("a test child ended with {status}")),
        },
        Err(e) => Err(refused(e)),
    }
}

#[allow(unsafe_code)]
fn probe_install(command: &mut std::process::Command, uid_map: Vec<u8>, gid_map: Vec<u8>) {
    use std::os::unix::process::CommandExt as _;
    // SAFETY: as in `install`: the maps are made before the fork and the
    // closure only issues system calls on them.
    unsafe {
        command.pre_exec(move || enter_namespaces(&uid_map, &gid_map, protect::flags(false)));
    }
}
