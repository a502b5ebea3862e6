//! Ctrl-C meant for a host must not end a server it drives over stdio.
//!
//! A terminal sends SIGINT to its whole foreground process group. When a
//! host runs this server over a pipe in that group, the host decides what
//! a Ctrl-C means (stop at the next step boundary); the server lives as
//! long as its stdin and its commands finish, each in its own group.

use std::io::IsTerminal;

use nix::sys::signal::{SaFlags, SigAction, SigHandler, SigSet, Signal, sigaction};

extern "C" fn ignore(_: nix::libc::c_int) {}

/// Installs a SIGINT handler that does nothing, unless stdin is a terminal
/// (someone runs the server by hand and Ctrl-C should stop it). A handler,
/// not SIG_IGN: a handler is reset by `exec`, so commands still get the
/// default SIGINT behaviour.
pub fn survive_interrupts_when_piped() {
    if std::io::stdin().is_terminal() {
        return;
    }
    install_noop(Signal::SIGINT);
}

#[allow(unsafe_code)]
fn install_noop(signal: Signal) {
    let action = SigAction::new(
        SigHandler::Handler(ignore),
        SaFlags::SA_RESTART,
        SigSet::empty(),
    );
    // SAFETY: the handler does nothing, so it is async-signal-safe and
    // touches no state; replacing SIGINT's disposition races with no other
    // handler installation in this process (called first thing in main).
    if let Err(e) = unsafe { sigaction(signal, &action) } {
        tracing::warn!("cannot install the SIGINT handler: {e}");
    }
}
