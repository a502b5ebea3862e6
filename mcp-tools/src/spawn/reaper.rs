//! The reaper: a tiny `sh` loop that outlives nothing. It reads the live
//! group ids from a pipe whose write end only this process holds; when this
//! process ends in any way (even SIGKILL) the pipe closes, and the reaper
//! kills every group still listed and every process whose environment
//! carries this owner's marker prefix (the ones that left their group).

use std::io::Write;
use std::process::{ChildStdin, Stdio};
use std::sync::{Mutex, OnceLock, PoisonError};

use super::{MARKER_VAR, owner};

/// The reaper's script; `$1` is the owner's token. It ignores the signals a
/// terminal or a parent's shutdown would send, so only end of input stops
/// it. `grep -z` reads each /proc/PID/environ as NUL-separated entries in
/// one process; without it, each file goes through `tr`.
const SCRIPT: &str = r#"trap '' HUP INT TERM PIPE
live=' '
while read -r line; do
  case $line in
    +*) live="$live${line#+} " ;;
    -*) id=${line#-}
        case $live in *" $id "*) live="${live%% $id *} ${live#* $id }" ;; esac ;;
  esac
done
for id in $live; do kill -KILL -$id 2>/dev/null; done
pat="^$MARKER=$1\\."
marked() {
  if printf 'x\000' | grep -qz x 2>/dev/null; then
    grep -lsz -e "$pat" /proc/[0-9]*/environ 2>/dev/null
  else
    for f in /proc/[0-9]*/environ; do
      tr '\000' '\n' < "$f" 2>/dev/null | grep -qs -e "$pat" && echo "$f"
    done
  fi
}
round=0
while [ $round -lt 20 ]; do
  found=
  for f in $(marked); do
    p=${f#/proc/}; p=${p%/environ}
    [ "$p" = "$$" ] && continue
    kill -KILL "$p" 2>/dev/null && found=1
  done
  [ -z "$found" ] && break
  round=$((round + 1))
done
"#;

struct Reaper {
    stdin: Mutex<ChildStdin>,
    pid: i32,
}

static REAPER: OnceLock<Option<Reaper>> = OnceLock::new();

fn reaper() -> Option<&'static Reaper> {
    REAPER
        .get_or_init(|| match start() {
            Ok(reaper) => Some(reaper),
            Err(e) => {
                tracing::warn!("cannot start the process reaper: {e}");
                None
            }
        })
        .as_ref()
}

fn start() -> std::io::Result<Reaper> {
    use std::os::unix::process::CommandExt;
    let mut child = std::process::Command::new("/bin/sh")
        .arg("-c")
        .arg(SCRIPT)
        .arg("nanohermes-reaper")
        .arg(&owner().token)
        // No marker of ours (it must not find itself), nothing secret.
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("MARKER", MARKER_VAR)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        // Its own group: a Ctrl-C meant for the owner does not reach it.
        .process_group(0)
        .spawn()?;
    let pid = i32::try_from(child.id()).map_err(std::io::Error::other)?;
    // The child handle is dropped without waiting: the reaper lives as long
    // as this process and exits on its own when the pipe closes.
    let stdin = child
        .stdin
        .take()
        .ok_or_else(|| std::io::Error::other("the reaper has no stdin"))?;
    Ok(Reaper {
        stdin: Mutex::new(stdin),
        pid,
    })
}

/// Starts the reaper now if it is not running yet.
pub(super) fn ensure() {
    let _ = reaper();
}

/// Whether a spawn ever asked for the reaper: none did when this process
/// never started a child through the kit, so there is nothing to kill.
pub(super) fn was_needed() -> bool {
    REAPER.get().is_some()
}

/// The reaper's pid, if it runs (asking never starts it).
pub(super) fn pid() -> Option<i32> {
    REAPER.get()?.as_ref().map(|r| r.pid)
}

/// Lists group `pgid` for killing if this process dies.
pub(super) fn track(pgid: i32) {
    send(&format!("+{pgid}\n"));
}

/// Takes group `pgid` off the list (it was killed).
pub(super) fn forget(pgid: i32) {
    send(&format!("-{pgid}\n"));
}

/// Writes to a running reaper; never starts one (a kill or a forget with
/// no reaper has nothing to tell).
fn send(line: &str) {
    if let Some(Some(reaper)) = REAPER.get() {
        let mut stdin = reaper.stdin.lock().unwrap_or_else(PoisonError::into_inner);
        let _ = stdin.write_all(line.as_bytes());
    }
}
