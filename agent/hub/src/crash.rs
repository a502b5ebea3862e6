//! What a dead server's error says, in the order a user needs it: what
//! failed (it exited with code N, was killed by signal S, or closed its
//! connection) and when (during the call to T, while starting), the last
//! line it wrote to stderr, what to check (its command, its URL), and only
//! then, as details, the transport's own words (rmcp's `Send message error
//! Transport [...] Broken pipe`), which name our internals, not the cause.
//!
//! The exit status: rmcp reaps a child as soon as its connection ends, so
//! every child's command carries [`RecordExit`], which records the status
//! of that wait; a child nobody has waited for yet is a zombie whose
//! `/proc/PID/stat` (field 52, `exit_code`) still holds it. A child gone
//! without either is said to have exited, without a code.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::AsyncBufReadExt;
use tokio::process::ChildStderr;
use tokio::task::JoinHandle;

/// How many lines of an external server's stderr are kept for error
/// messages.
const STDERR_LINES: usize = 20;

/// How long to wait for a dead child's stderr to drain, and for it to
/// become a zombie, before composing the reason it died.
const STDERR_DRAIN: Duration = Duration::from_millis(500);

/// How a child process ended, as far as the kernel still says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Exit {
    /// It called exit with this code.
    Code(i32),
    /// A signal ended it.
    Signal(i32),
    /// It is gone (already reaped): it ended, how is no longer known.
    Gone,
}

impl std::fmt::Display for Exit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Exit::Code(code) => write!(f, "exited with code {code}"),
            Exit::Signal(signal) => match signal_name(*signal) {
                Some(name) => write!(f, "was killed by signal {signal} ({name})"),
                None => write!(f, "was killed by signal {signal}"),
            },
            Exit::Gone => write!(f, "exited"),
        }
    }
}

/// The names of the signals that usually end a server (Linux numbering).
fn signal_name(signal: i32) -> Option<&'static str> {
    Some(match signal {
        1 => "SIGHUP",
        2 => "SIGINT",
        3 => "SIGQUIT",
        4 => "SIGILL",
        6 => "SIGABRT",
        7 => "SIGBUS",
        8 => "SIGFPE",
        9 => "SIGKILL",
        11 => "SIGSEGV",
        13 => "SIGPIPE",
        15 => "SIGTERM",
        _ => return None,
    })
}

/// How process `pid` ended, if it has: `None` while it runs.
fn exit_of(pid: u32) -> Option<Exit> {
    let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return Some(Exit::Gone);
    };
    // The command name may hold spaces and parentheses: fields start after
    // the last `)`. Index 0 is field 3 (state), so field 52 is index 49.
    let fields: Vec<&str> = text[text.rfind(')')? + 1..].split_whitespace().collect();
    if !matches!(fields.first(), Some(&"Z") | Some(&"X")) {
        return None;
    }
    let status: i32 = fields.get(49)?.parse().ok()?;
    Some(match status & 0x7f {
        0 => Exit::Code((status >> 8) & 0xff),
        signal => Exit::Signal(signal),
    })
}

/// The last lines a child wrote to stderr, and its pid. The child's stderr
/// never reaches the terminal directly (it would mix with the agent's
/// output): each line goes to `tracing` at info level with the server's
/// name, and the last one goes into the message when the server fails.
#[derive(Default)]
pub(crate) struct StderrTail {
    lines: Mutex<VecDeque<String>>,
    reader: Mutex<Option<JoinHandle<()>>>,
    /// The current child's pid, for its exit status.
    pid: Mutex<Option<u32>>,
    /// (pid, how it ended), recorded by [`RecordExit`] when reaped.
    ended: Arc<Mutex<Option<(u32, Exit)>>>,
}

impl StderrTail {
    /// The layer that records the exit of the child this tail follows.
    pub(crate) fn recorder(&self) -> RecordExit {
        RecordExit(Arc::clone(&self.ended))
    }

    pub(crate) fn follow(self: &Arc<Self>, name: String, pid: u32, stderr: ChildStderr) {
        *self.pid.lock().unwrap_or_else(|p| p.into_inner()) = Some(pid);
        let tail = Arc::clone(self);
        let reader = tokio::spawn(async move {
            let mut lines = tokio::io::BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                tracing::info!(server = %name, "stderr: {line}");
                let mut kept = tail.lines.lock().unwrap_or_else(|p| p.into_inner());
                if kept.len() == STDERR_LINES {
                    kept.pop_front();
                }
                kept.push_back(mcp_tools::clamp(&line, 300));
            }
        });
        let previous = self
            .reader
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .replace(reader);
        if let Some(previous) = previous {
            previous.abort();
        }
    }

    pub(crate) fn clear(&self) {
        self.lines.lock().unwrap_or_else(|p| p.into_inner()).clear();
        *self.pid.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }

    /// `; its stderr ended with: ...` once the dead child's stderr has
    /// drained, or nothing when it wrote none.
    pub(crate) async fn drained_suffix(&self) -> String {
        let reader = self.reader.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(reader) = reader {
            let _ = tokio::time::timeout(STDERR_DRAIN, reader).await;
        }
        let lines = self.lines.lock().unwrap_or_else(|p| p.into_inner());
        match lines.back() {
            Some(line) => format!("; its stderr ended with: {line}"),
            None => String::new(),
        }
    }

    /// How the current child ended, waiting up to [`STDERR_DRAIN`] for it
    /// to end (its pipe closes a moment before it is a zombie); `None` for
    /// no child (in-process, HTTP) or one still running.
    pub(crate) async fn exit(&self) -> Option<Exit> {
        let pid = (*self.pid.lock().unwrap_or_else(|p| p.into_inner()))?;
        let deadline = tokio::time::Instant::now() + STDERR_DRAIN;
        loop {
            let watched = self.ended.lock().unwrap_or_else(|p| p.into_inner()).clone();
            if let Some((ended, exit)) = watched
                && ended == pid
            {
                return Some(exit);
            }
            if let Some(exit) = exit_of(pid).filter(|exit| *exit != Exit::Gone) {
                return Some(exit);
            }
            // Gone and not recorded yet: rmcp's cleanup may be about to
            // reap it through RecordExit; wait a little, then say what is
            // known.
            if tokio::time::Instant::now() >= deadline {
                return exit_of(pid);
            }
            if tokio::time::Instant::now() >= deadline {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

/// A process-wrap layer that records how the child ended whenever it is
/// waited for: rmcp reaps a server's child as soon as its connection ends
/// (its cleanup kills, then waits), and that wait is the last moment the
/// status exists. Added to every child's command (connect.rs).
#[derive(Debug)]
pub(crate) struct RecordExit(pub(crate) Arc<Mutex<Option<(u32, Exit)>>>);

impl process_wrap::tokio::CommandWrapper for RecordExit {
    fn wrap_child(
        &mut self,
        child: Box<dyn process_wrap::tokio::ChildWrapper>,
        _core: &process_wrap::tokio::CommandWrap,
    ) -> std::io::Result<Box<dyn process_wrap::tokio::ChildWrapper>> {
        Ok(Box::new(Recording {
            pid: child.id(),
            inner: child,
            ended: Arc::clone(&self.0),
        }))
    }
}

/// A child whose waits record its exit status in `ended`.
#[derive(Debug)]
struct Recording {
    inner: Box<dyn process_wrap::tokio::ChildWrapper>,
    pid: Option<u32>,
    ended: Arc<Mutex<Option<(u32, Exit)>>>,
}

impl Recording {
    fn record(&self, status: &std::process::ExitStatus) {
        use std::os::unix::process::ExitStatusExt as _;
        let exit = match (status.code(), status.signal()) {
            (Some(code), _) => Exit::Code(code),
            (None, Some(signal)) => Exit::Signal(signal),
            (None, None) => Exit::Gone,
        };
        if let Some(pid) = self.pid {
            *self.ended.lock().unwrap_or_else(|p| p.into_inner()) = Some((pid, exit));
        }
    }
}

impl process_wrap::tokio::ChildWrapper for Recording {
    fn inner(&self) -> &dyn process_wrap::tokio::ChildWrapper {
        self.inner.as_ref()
    }

    fn inner_mut(&mut self) -> &mut dyn process_wrap::tokio::ChildWrapper {
        self.inner.as_mut()
    }

    fn into_inner(self: Box<Self>) -> Box<dyn process_wrap::tokio::ChildWrapper> {
        self.inner
    }

    fn try_wait(&mut self) -> std::io::Result<Option<std::process::ExitStatus>> {
        let status = self.inner.try_wait()?;
        if let Some(status) = &status {
            self.record(status);
        }
        Ok(status)
    }

    fn wait(
        &mut self,
    ) -> std::pin::Pin<
        Box<
            dyn std::future::Future<Output = std::io::Result<std::process::ExitStatus>> + Send + '_,
        >,
    > {
        Box::pin(async move {
            let status = self.inner.wait().await?;
            self.record(&status);
            Ok(status)
        })
    }
}

/// Why a server failed to start or restart, leading with what happened to
/// its process when it ended: `it exited with code 2; its stderr ended
/// with: ...; check ... (details: FAILURE)`. Without a process that ended
/// (a protocol error, an HTTP server) `FAILURE` comes first.
pub(crate) async fn start_failure(stderr: &StderrTail, failure: &str, check: &str) -> String {
    let said = stderr.drained_suffix().await;
    match stderr.exit().await {
        Some(exit) => format!("it {exit}{said}{check} (details: {failure})"),
        None => format!("{failure}{said}{check}"),
    }
}

/// What to check about a server that died: `; check its command: `CMD
/// ARGS`` for a child process; nothing for the others (an HTTP error
/// already names its URL, a built-in in this process has no command).
pub(crate) fn check(launch: &super::connect::Launch) -> String {
    match launch {
        super::connect::Launch::Child(..) => {
            let described = launch.describe();
            let command = described.strip_prefix("process: ").unwrap_or(&described);
            format!("; check its command: `{command}`")
        }
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_exit_status_of_an_unreaped_child_is_read_from_the_kernel() {
        let mut coded = std::process::Command::new("sh")
            .args(["-c", "exit 7"])
            .spawn()
            .unwrap();
        let mut killed = std::process::Command::new("sh")
            .args(["-c", "kill -9 $$"])
            .spawn()
            .unwrap();
        let mut running = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let wait = |pid: u32| async move {
            let tail = StderrTail::default();
            *tail.pid.lock().unwrap() = Some(pid);
            tail.exit().await
        };
        assert_eq!(wait(coded.id()).await, Some(Exit::Code(7)));
        assert_eq!(wait(killed.id()).await, Some(Exit::Signal(9)));
        assert_eq!(wait(running.id()).await, None);
        assert_eq!(
            Exit::Signal(9).to_string(),
            "was killed by signal 9 (SIGKILL)"
        );
        running.kill().unwrap();
        for child in [&mut coded, &mut killed, &mut running] {
            child.wait().unwrap();
        }
        assert_eq!(wait(coded.id()).await, Some(Exit::Gone), "reaped");
    }
}
