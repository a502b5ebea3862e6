//! Ctrl-C, SIGTERM and SIGHUP.

use std::io::Write;

use super::EXIT_INTERRUPTED;
use crate::interrupt::Interrupt;

/// First Ctrl-C: stop at the next step boundary. Second: quit now.
///
/// The handler is registered before this returns, so a Ctrl-C that comes
/// while the first request is in flight is not lost to the default action.
pub fn watch_ctrl_c(interrupt: Interrupt) {
    #[cfg(unix)]
    let mut signals = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())
    {
        Ok(signals) => signals,
        Err(_) => return,
    };
    tokio::spawn(async move {
        #[cfg(unix)]
        let mut next = async || signals.recv().await.is_some();
        #[cfg(not(unix))]
        let mut next = async || tokio::signal::ctrl_c().await.is_ok();
        if !next().await {
            return;
        }
        interrupt.request();
        let _ = writeln!(
            std::io::stderr(),
            "\nnanohermes: interrupt requested; stopping at the next step boundary (Ctrl-C again to quit now)"
        );
        if next().await {
            mcp_tools::spawn::kill_all_spawned();
            std::process::exit(i32::from(EXIT_INTERRUPTED));
        }
    });
}

/// SIGTERM or SIGHUP: end every process the agent started, then exit with
/// 128 + the signal's number, as a shell reports it.
pub fn watch_terminate() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        for (kind, number) in [(SignalKind::terminate(), 15), (SignalKind::hangup(), 1)] {
            let Ok(mut signals) = signal(kind) else {
                continue;
            };
            tokio::spawn(async move {
                if signals.recv().await.is_some() {
                    mcp_tools::spawn::kill_all_spawned();
                    std::process::exit(128 + number);
                }
            });
        }
    }
}
