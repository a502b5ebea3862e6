//! The only code that runs in a sandboxed child between fork and exec,
//! and the one `unsafe` block it needs (`pre_exec`).

use std::io;

use landlock::{RulesetCreated, RulesetStatus};

use super::protect::{Protect, enter_namespaces};

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

    /// Mount namespace first (mounting is impossible once Landlock is on),
    /// then `no_new_privs` and `landlock_restrict_self`. Errors are raw
    /// errno values: building any other `io::Error` would allocate.
    fn run(&mut self) -> io::Result<()> {
        if let Some(protect) = &self.protect {
            protect.enter()?;
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

/// Whether a child can enter a user and mount namespace here: starts
/// `true` doing just that (once per process, from [`super::Support`]).
pub(super) fn probe_namespaces() -> Result<(), String> {
    let uid = nix::unistd::getuid();
    let gid = nix::unistd::getgid();
    let uid_map = format!("{uid} {uid} 1\n").into_bytes();
    let gid_map = format!("{gid} {gid} 1\n").into_bytes();
    let mut command = std::process::Command::new("true");
    command
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    probe_install(&mut command, uid_map, gid_map);
    match command.status() {
        Ok(status) if status.success() => Ok(()),
        Ok(status) => Err(format!("a test child ended with {status}")),
        Err(e) => Err(format!(
            "this system does not let a process make a user and mount namespace: {e}"
        )),
    }
}

#[allow(unsafe_code)]
fn probe_install(command: &mut std::process::Command, uid_map: Vec<u8>, gid_map: Vec<u8>) {
    use std::os::unix::process::CommandExt as _;
    // SAFETY: as in `install`: the maps are made before the fork and the
    // closure only issues system calls on them.
    unsafe {
        command.pre_exec(move || enter_namespaces(&uid_map, &gid_map));
    }
}
