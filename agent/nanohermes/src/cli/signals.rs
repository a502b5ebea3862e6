//! Ctrl-C, SIGTERM and SIGHUP.

use std::io::Write;

use super::EXIT_INTERRUPTED;
use nanohermes_core::interrupt::Interrupt;

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
///
/// Watched on a thread of its own with its own small runtime: were the
/// watcher a task of the main runtime, a worker stuck in a blocking read
/// (a FIFO in a workspace, a hung mount) could keep it from ever running,
/// and the signal would be ignored.
pub fn watch_terminate() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let (ready, registered) = std::sync::mpsc::channel();
        let watcher = std::thread::Builder::new()
            .name("nanohermes-signals".into())
            .spawn(move || {
                let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
                    .enable_io()
                    .build()
                else {
                    let _ = ready.send(());
                    return;
                };
                runtime.block_on(async move {
                    let terminate = signal(SignalKind::terminate());
                    let hangup = signal(SignalKind::hangup());
                    // Registered: the default action no longer applies.
                    let _ = ready.send(());
                    let (Ok(mut terminate), Ok(mut hangup)) = (terminate, hangup) else {
                        return;
                    };
                    let number = tokio::select! {
                        _ = terminate.recv() => 15,
                        _ = hangup.recv() => 1,
                    };
                    mcp_tools::spawn::kill_all_spawned();
                    std::process::exit(128 + number);
                });
            });
        if watcher.is_ok() {
            // A signal that comes right after start-up is not lost to the
            // default action before the handlers are in place.
            let _ = registered.recv();
        }
    }
}
