//! Driving a spawned command to its end: reading both pipes while it runs,
//! enforcing the timeout, and killing its whole process tree when it is
//! done, so that a grandchild holding a pipe open cannot hang the read and
//! nothing it started outlives it.

use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::time::{Duration, Instant};

use tokio::io::AsyncReadExt;
use tokio::process::Child;

use mcp_tools::spawn::{self, Confined, EnvPolicy, ProcessTree, Sandbox};

use crate::capture::Captured;

/// How long the pipes are still read after the command has exited and its
/// tree was killed: only a process the tree kill could not attribute (one
/// that cleared its environment and left the group) can keep a pipe open
/// past that, and it is not waited for.
pub const DRAIN_GRACE: Duration = Duration::from_secs(2);

/// A started `sh -c`: the child, its tree, and the sandbox's warning when
/// it runs with less than its policy asks (`sandbox_unavailable = "warn"`).
pub type Started = (Child, ProcessTree, Option<String>);

/// Spawns `sh -c command` in `cwd` through the kit: its own process group,
/// secrets scrubbed from the environment, stdin from /dev/null, stdout and
/// stderr piped, confined by `sandbox`. The error is for the model: the
/// sandbox's refusal, or why `sh` did not start.
pub fn spawn_sh(command: &str, cwd: &Path, sandbox: &Sandbox) -> Result<Started, String> {
    let mut sh = spawn::command("sh", &EnvPolicy::ScrubSecrets);
    sh.arg("-c")
        .arg(command)
        .current_dir(cwd)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let warning = match sandbox.confine(&mut sh)? {
        Confined::Fully => None,
        Confined::Partly(warning) => Some(warning),
    };
    let (child, tree) = sh
        .spawn()
        .map_err(|e| format!("cannot start `sh -c`: {e}"))?;
    // The spawn itself may have found the namespaces missing.
    let warning = sh.sandbox_warning().map(str::to_owned).or(warning);
    Ok((child, tree, warning))
}

/// Which pipe output came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    /// The command's standard output.
    Stdout,
    /// The command's standard error.
    Stderr,
}

/// How a driven command ended.
#[derive(Debug)]
pub struct Ended {
    /// The exit status of `sh` (None if waiting for it failed).
    pub status: Option<ExitStatus>,
    /// Whether the timeout fired and the group was killed for it.
    pub timed_out: bool,
    /// Whether `cancel` fired and the group was killed for it.
    pub cancelled: bool,
}

/// Reads the child's stdout and stderr into `on_output` until it exits, or
/// `timeout` passes, or `cancel` completes; then kills the whole tree (a
/// `sleep 1000 &`, `setsid`, `nohup` or double fork the command left behind
/// dies with it) and drains the pipes for at most [`DRAIN_GRACE`].
/// Cancel-safe in the sense that dropping the future drops nothing but
/// borrowed state: the caller's [`ProcessTree`] still kills.
pub async fn drive(
    child: &mut Child,
    tree: &ProcessTree,
    timeout: Option<Duration>,
    cancel: impl Future<Output = ()>,
    mut on_output: impl FnMut(Stream, &[u8]),
) -> Ended {
    let mut cancel = std::pin::pin!(cancel);
    let mut cancelled = false;
    let mut stdout = child.stdout.take();
    let mut stderr = child.stderr.take();
    let mut out_buf = vec![0u8; 16 * 1024];
    let mut err_buf = vec![0u8; 16 * 1024];
    let never = tokio::time::Instant::now() + Duration::from_secs(100 * 365 * 24 * 3600);
    let deadline = timeout.map_or(never, |t| tokio::time::Instant::now() + t);
    let mut drain_until = never;
    let mut status = None;
    let mut exited = false;
    let mut timed_out = false;
    while !(exited && stdout.is_none() && stderr.is_none()) {
        tokio::select! {
            read = read_some(&mut stdout, &mut out_buf), if stdout.is_some() => match read {
                Ok(n) if n > 0 => on_output(Stream::Stdout, &out_buf[..n]),
                _ => stdout = None,
            },
            read = read_some(&mut stderr, &mut err_buf), if stderr.is_some() => match read {
                Ok(n) if n > 0 => on_output(Stream::Stderr, &err_buf[..n]),
                _ => stderr = None,
            },
            waited = child.wait(), if !exited => {
                exited = true;
                status = waited.ok();
                tree.kill();
                drain_until = tokio::time::Instant::now() + DRAIN_GRACE;
            },
            _ = tokio::time::sleep_until(deadline), if !exited && !timed_out && !cancelled => {
                timed_out = true;
                tree.kill();
            },
            _ = &mut cancel, if !exited && !timed_out && !cancelled => {
                cancelled = true;
                tree.kill();
            },
            _ = tokio::time::sleep_until(drain_until), if exited => break,
        }
    }
    Ended {
        status,
        timed_out,
        cancelled,
    }
}

async fn read_some<R: AsyncReadExt + Unpin>(
    reader: &mut Option<R>,
    buf: &mut [u8],
) -> std::io::Result<usize> {
    match reader {
        Some(reader) => reader.read(buf).await,
        None => std::future::pending().await,
    }
}

/// Runs `command` with `sh -c` in `cwd` and renders the result for the
/// model: the exit code (or the timeout), then stdout and stderr, clamped
/// together to `max_output` bytes keeping each stream's head and tail.
/// When `cancel` completes first (the MCP request was cancelled), the tree
/// is killed at once. A sandbox warning heads the result; a failure that
/// looks like the sandbox's refusal ends with its note, and so do the
/// hosts the network allowlist refused.
pub async fn run_command(
    command: &str,
    cwd: &Path,
    sandbox: &Sandbox,
    timeout: Duration,
    max_output: usize,
    cancel: impl Future<Output = ()>,
) -> Result<String, String> {
    let started = Instant::now();
    let (mut child, tree, warning) = spawn_sh(command, cwd, sandbox)?;
    let limit = max_output.max(4096) * 2;
    let mut stdout = Captured::new(limit);
    let mut stderr = Captured::new(limit);
    let ended = drive(
        &mut child,
        &tree,
        Some(timeout),
        cancel,
        |stream, bytes| match stream {
            Stream::Stdout => stdout.push(bytes),
            Stream::Stderr => stderr.push(bytes),
        },
    )
    .await;
    let refused = Sandbox::refused_note(&tree.refused_domains());
    drop(tree);
    let mut out = String::new();
    if let Some(warning) = warning {
        out.push_str(&warning);
        out.push('\n');
    }
    if ended.cancelled {
        out.push_str("cancelled: the command and every process it started were killed\n");
    } else if ended.timed_out {
        out.push_str(&format!(
            "timed out after {} s: the command and every process it started were killed\n",
            timeout.as_secs()
        ));
    } else {
        out.push_str(&describe_status(ended.status));
        out.push_str(&format!(" ({:.1} s)\n", started.elapsed().as_secs_f64()));
    }
    let streams = render_streams(&stdout, &stderr, max_output);
    let succeeded = ended.status.is_some_and(|s| s.success());
    let note = sandbox.explain_failure(succeeded, &streams);
    out.push_str(&streams);
    for note in [note, refused].into_iter().flatten() {
        out.push_str(&note);
        out.push('\n');
    }
    Ok(out)
}

/// "exit code: N", or the signal that ended the process.
pub fn describe_status(status: Option<ExitStatus>) -> String {
    use std::os::unix::process::ExitStatusExt;
    match status {
        Some(status) => match (status.code(), status.signal()) {
            (Some(code), _) => format!("exit code: {code}"),
            (None, Some(signal)) => format!("killed by signal {signal}"),
            (None, None) => "ended".to_string(),
        },
        None => "ended (its exit status could not be read)".to_string(),
    }
}

/// Both streams under `--- stdout` / `--- stderr` headings, sharing
/// `max_output` bytes: a stream that needs less leaves the rest to the
/// other.
pub fn render_streams(stdout: &Captured, stderr: &Captured, max_output: usize) -> String {
    let out_want = usize::try_from(stdout.total())
        .unwrap_or(usize::MAX)
        .min(max_output);
    let err_want = usize::try_from(stderr.total())
        .unwrap_or(usize::MAX)
        .min(max_output);
    let err_budget = if out_want + err_want <= max_output || err_want <= max_output / 2 {
        err_want
    } else {
        (max_output - out_want).max(max_output / 2).min(err_want)
    };
    let out_budget = max_output - err_budget;
    let mut text = String::new();
    if !stdout.is_empty() {
        text.push_str("--- stdout\n");
        text.push_str(&stdout.render(out_budget));
        if !text.ends_with('\n') {
            text.push('\n');
        }
    }
    if !stderr.is_empty() {
        text.push_str("--- stderr\n");
        text.push_str(&stderr.render(err_budget));
        if !text.ends_with('\n') {
            text.push('\n');
        }
    }
    if text.is_empty() {
        text.push_str("(no output)\n");
    }
    text
}
