//! Process groups: every command runs as the leader of a group of its own,
//! and the whole group is killed when the command is done with, so nothing
//! it started can outlive it.
//!
//! Three layers make "no orphans, ever" hold:
//! 1. the caller kills the group when the command ends, times out or is
//!    killed ([`ProcessGroup::kill`]);
//! 2. dropping a [`ProcessGroup`] kills it (a cancelled call, a server that
//!    shuts down);
//! 3. a reaper process outlives nothing: it is a tiny `sh` loop that reads
//!    the live group ids from a pipe whose write end only this process
//!    holds; when this process ends in any way (even SIGKILL) the pipe
//!    closes and the reaper kills every group still listed.

use std::io::{self, Write};
use std::path::Path;
use std::process::{ChildStdin, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::process::{Child, Command};

/// A process group this server started; killed at the latest when dropped.
#[derive(Debug)]
pub struct ProcessGroup {
    pgid: i32,
    killed: AtomicBool,
}

impl ProcessGroup {
    fn adopt(pgid: i32) -> Self {
        reaper_send(&format!("+{pgid}\n"));
        Self {
            pgid,
            killed: AtomicBool::new(false),
        }
    }

    /// The group id (the pid of the `sh` that leads it).
    pub fn id(&self) -> i32 {
        self.pgid
    }

    /// Sends `signal` to every process in the group.
    pub fn signal(&self, signal: Signal) {
        if !self.killed.load(Ordering::SeqCst) {
            let _ = killpg(Pid::from_raw(self.pgid), signal);
        }
    }

    /// Kills every process in the group (SIGKILL). Only the first call
    /// signals: once the group is dead its id may be reused.
    pub fn kill(&self) {
        if !self.killed.swap(true, Ordering::SeqCst) {
            let _ = killpg(Pid::from_raw(self.pgid), Signal::SIGKILL);
            reaper_send(&format!("-{}\n", self.pgid));
        }
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Spawns `sh -c command` in `cwd` as the leader of a new process group,
/// stdin from /dev/null, stdout and stderr piped.
pub fn spawn_in_group(command: &str, cwd: &Path) -> io::Result<(Child, ProcessGroup)> {
    let child = Command::new("sh")
        .arg("-c")
        .arg(command)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()?;
    // `spawn` returns once `sh` has been exec'd, so it already leads its
    // group and the group id is its pid.
    let pid = child
        .id()
        .ok_or_else(|| io::Error::other("the command exited before it could be tracked"))?;
    let pgid = i32::try_from(pid).map_err(io::Error::other)?;
    Ok((child, ProcessGroup::adopt(pgid)))
}

/// The reaper's script: collect `+ID` / `-ID` lines until end of input,
/// then kill every group still listed. It ignores the signals a terminal
/// or a parent's shutdown would send, so only end of input stops it.
const REAPER_SCRIPT: &str = r#"trap '' HUP INT TERM PIPE
live=' '
while read -r line; do
  case $line in
    +*) live="$live${line#+} " ;;
    -*) id=${line#-}
        case $live in *" $id "*) live="${live%% $id *} ${live#* $id }" ;; esac ;;
  esac
done
for id in $live; do kill -KILL -$id 2>/dev/null; done
"#;

fn reaper() -> Option<&'static Mutex<ChildStdin>> {
    static REAPER: OnceLock<Option<Mutex<ChildStdin>>> = OnceLock::new();
    REAPER
        .get_or_init(|| match spawn_reaper() {
            Ok(stdin) => Some(Mutex::new(stdin)),
            Err(e) => {
                eprintln!("nanohermes-shell: cannot start the process-group reaper: {e}");
                None
            }
        })
        .as_ref()
}

fn spawn_reaper() -> io::Result<ChildStdin> {
    use std::os::unix::process::CommandExt;
    let mut child = std::process::Command::new("sh")
        .arg("-c")
        .arg(REAPER_SCRIPT)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        // Its own group: a Ctrl-C meant for the agent does not reach it.
        .process_group(0)
        .spawn()?;
    // The child handle is dropped without waiting: the reaper lives as long
    // as this process and exits on its own when the pipe closes.
    child
        .stdin
        .take()
        .ok_or_else(|| io::Error::other("reaper has no stdin"))
}

fn reaper_send(line: &str) {
    if let Some(reaper) = reaper() {
        let mut stdin = reaper.lock().unwrap_or_else(|e| e.into_inner());
        let _ = stdin.write_all(line.as_bytes());
    }
}
