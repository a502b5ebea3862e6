//! Containment of a sandboxed command's processes: nothing it starts
//! outlives it, whatever it does (`setsid`, `env -i`, double forks) and
//! however its owner dies.
//!
//! How: the child std spawned (A, the leader tokio waits for) has already
//! unshared a PID namespace with the others; [`split`] forks once more.
//! The new process (B) is pid 1 of that namespace: it asks for SIGKILL
//! when A dies (`PR_SET_PDEATHSIG`; A is single-threaded, so the "parent
//! thread" is the whole of A and the signal is reliable) and goes on to
//! Landlock and the exec of the command. A stays outside as a waiter: it
//! closes every descriptor (std's exec-status pipe among them, so the
//! spawn sees B's exec, or B's error, as the command's), waits for B, and
//! ends the way B ended. When B dies, for any reason, the kernel kills
//! every process of the namespace; and B dies whenever A does: a SIGKILL of
//! the group, the reaper's `kill -KILL -<group>` after the owner died, or
//! tokio's `kill_on_drop`. No environment marker is involved.
//!
//! A keeps default dispositions for every signal (the owner's handlers
//! were copied into it by the fork and would keep it alive), so a SIGTERM
//! to the group ends A and so, at once, the whole namespace: pid 1 of a
//! namespace ignores a SIGTERM it has no handler for, and a kill must not
//! depend on the command installing one.
//!
//! Everything here runs between fork and exec: system calls on the stack
//! only, no allocation, no lock, no glibc `fork` (its atfork handlers take
//! locks): the fork is the raw `clone` system call.

use std::io;

/// `fork` as the raw `clone` system call: no atfork handlers, so no lock
/// is taken between fork and exec. Returns 0 in the child, the child's pid
/// in the parent, -1 on failure (with `errno` set).
///
/// # Safety
/// As `fork`: after it the child may use only async-signal-safe calls.
#[allow(unsafe_code)]
pub(super) unsafe fn raw_fork() -> libc::c_long {
    // SAFETY: the caller upholds fork's contract (see above).
    unsafe {
        libc::syscall(
            libc::SYS_clone,
            libc::SIGCHLD as libc::c_ulong,
            0usize,
            0usize,
            0usize,
            0usize,
        )
    }
}

/// Splits the calling child in two (see the module doc). Returns `Ok` in
/// B, pid 1 of the namespace, which goes on to exec the command; in A it
/// never returns. With a `relay` (and its listening socket), A forks it
/// too, once B exists: a process of the namespace beside the command.
#[allow(unsafe_code)]
pub(super) fn split(relay: Option<(&super::relay::Relay, libc::c_int)>) -> io::Result<()> {
    let mut fds = [-1i32; 2];
    // SAFETY: plain system calls on memory of this stack frame; async-signal-safe.
    unsafe {
        // A's end of this pipe closes when A dies: B checks it once its
        // death signal is armed, so an A killed in between is noticed.
        if libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) != 0 {
            return Err(io::Error::last_os_error());
        }
        let pid = raw_fork();
        if pid < 0 {
            let e = io::Error::last_os_error();
            libc::close(fds[0]);
            libc::close(fds[1]);
            return Err(e);
        }
        if pid == 0 {
            libc::close(fds[1]);
            if libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            ) != 0
            {
                return Err(io::Error::last_os_error());
            }
            let mut poll = libc::pollfd {
                fd: fds[0],
                events: libc::POLLIN,
                revents: 0,
            };
            if libc::poll(&mut poll, 1, 0) != 0 {
                // A is gone (or wrote, which it never does): so are we.
                libc::_exit(137);
            }
            libc::close(fds[0]);
            return Ok(());
        }
        if let Some((relay, listener)) = relay {
            relay.spawn(listener);
        }
        wait_as(pid as libc::pid_t, fds[1])
    }
}

/// Every signal to its default action but those in `ignore`, which are
/// ignored, and none blocked: what a process forked from the agent starts
/// with is not its own.
///
/// # Safety
/// Between fork and exec only (async-signal-safe calls on the stack).
#[allow(unsafe_code)]
pub(super) unsafe fn reset_signals(ignore: &[libc::c_int]) {
    // SAFETY: system calls on stack memory only.
    unsafe {
        for sig in 1..libc::SIGRTMAX() {
            if sig == libc::SIGKILL || sig == libc::SIGSTOP {
                continue;
            }
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = if ignore.contains(&sig) {
                libc::SIG_IGN
            } else {
                libc::SIG_DFL
            };
            libc::sigaction(sig, &action, std::ptr::null_mut());
        }
        let mut none: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut none);
        libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
    }
}

/// A: default signal handling, no descriptor but the pipe, no core dump;
/// waits for `b` and ends as it ended.
#[allow(unsafe_code)]
unsafe fn wait_as(b: libc::pid_t, keep: libc::c_int) -> ! {
    // SAFETY: system calls on stack memory only, as in `split`.
    unsafe {
        reset_signals(&[]);
        close_all_but(keep);
        let no_core = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        libc::setrlimit(libc::RLIMIT_CORE, &no_core);
        let mut status = 0;
        loop {
            // Any child: the relay (`relay.rs`) is one too, and B's exit
            // as pid 1 waits until every process of its namespace has
            // been reaped.
            let got = libc::waitpid(-1, &mut status, 0);
            if got == b {
                break;
            }
            if got < 0 && *libc::__errno_location() != libc::EINTR {
                libc::_exit(127);
            }
        }
        if libc::WIFSIGNALED(status) {
            let sig = libc::WTERMSIG(status);
            libc::kill(libc::getpid(), sig);
            libc::_exit(128 + sig);
        }
        libc::_exit(libc::WEXITSTATUS(status))
    }
}

/// Closes every descriptor except `keep`: `close_range` (Linux 5.9), or
/// one by one where it is missing.
#[allow(unsafe_code)]
pub(super) unsafe fn close_all_but(keep: libc::c_int) {
    // SAFETY: closing descriptors is async-signal-safe.
    unsafe {
        let keep = keep as libc::c_uint;
        let mut ranges = [(keep + 1, libc::c_uint::MAX), (0, 0)];
        let count = if keep > 0 {
            ranges[1] = (0, keep - 1);
            2
        } else {
            1
        };
        for &(first, last) in &ranges[..count] {
            if libc::syscall(libc::SYS_close_range, first, last, 0) != 0 {
                for fd in first..=last.min(first.saturating_add(4096)) {
                    libc::close(fd as libc::c_int);
                }
            }
        }
    }
}
