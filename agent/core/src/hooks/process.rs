//! Running one hook command: `sh -c COMMAND` through the spawn policy, the
//! event JSON on stdin, its output collected, its whole tree killed when
//! it outlives its timeout.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use mcp_tools::spawn::{self, Confined, EnvPolicy, Sandbox};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

/// How one hook run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finished {
    /// The command exited (`code` is `None` when a signal ended it).
    Exited {
        /// The exit code.
        code: Option<i32>,
        /// Its standard output, lossily decoded.
        stdout: String,
        /// Its standard error, lossily decoded.
        stderr: String,
    },
    /// It was still running at the timeout; its tree was killed.
    TimedOut,
    /// `sh` could not be started.
    NotStarted(String),
}

/// Runs `command` with `sh -c` in `cwd`, `input` on its stdin, confined by
/// `sandbox` as the shell's commands are. The project directory is
/// exported as `NANOHERMES_PROJECT_DIR` and, so hooks written for Claude
/// Code find it too, `CLAUDE_PROJECT_DIR`.
pub async fn run(
    command: &str,
    input: &[u8],
    cwd: &Path,
    timeout: Duration,
    sandbox: &Sandbox,
) -> Finished {
    let mut cmd = spawn::command("sh", &EnvPolicy::ScrubSecrets);
    cmd.arg("-c")
        .arg(command)
        .current_dir(cwd)
        .env("NANOHERMES_PROJECT_DIR", cwd)
        .env("CLAUDE_PROJECT_DIR", cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    match sandbox.confine(&mut cmd) {
        Ok(Confined::Fully) => {}
        Ok(Confined::Partly(warning)) => tracing::warn!("hook `{command}`: {warning}"),
        Err(refusal) => return Finished::NotStarted(refusal),
    }
    let (mut child, tree) = match cmd.spawn() {
        Ok(spawned) => spawned,
        Err(e) => return Finished::NotStarted(e.to_string()),
    };
    if let Some(warning) = cmd.sandbox_warning() {
        tracing::warn!("hook `{command}`: {warning}");
    }
    let stdin = child.stdin.take();
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    let work = async {
        let write = async {
            // A hook that never reads its stdin is fine: the broken pipe
            // is ignored.
            if let Some(mut stdin) = stdin {
                let _ = stdin.write_all(input).await;
            }
        };
        let ((), out, err, status) =
            tokio::join!(write, read_all(stdout), read_all(stderr), child.wait());
        (out, err, status)
    };
    let finished = match tokio::time::timeout(timeout, work).await {
        Ok((stdout, stderr, status)) => Finished::Exited {
            code: status.ok().and_then(|s| s.code()),
            stdout,
            stderr,
        },
        Err(_) => Finished::TimedOut,
    };
    // Whatever the hook left running (a background job holding a pipe, a
    // hung child) goes with it.
    tree.kill();
    finished
}

async fn read_all(pipe: Option<impl AsyncRead + Unpin>) -> String {
    let mut bytes = Vec::new();
    if let Some(mut pipe) = pipe {
        let _ = pipe.read_to_end(&mut bytes).await;
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_tools::spawn::SandboxPolicy;

    #[tokio::test]
    async fn a_hook_is_confined_like_the_shell() {
        let base = tempfile::tempdir().unwrap();
        let root = base.path().canonicalize().unwrap().join("ws");
        std::fs::create_dir(&root).unwrap();
        let outside = base.path().join("outside");
        // A temp directory of its own, not the system one `base` is in.
        let own_temp = tempfile::tempdir().unwrap();
        let policy = SandboxPolicy {
            temp_dir: Some(own_temp.path().to_path_buf()),
            ..SandboxPolicy::default()
        };
        let sandbox = Sandbox::new(policy, &root);
        let script = format!("echo in > inside; echo x > '{}'", outside.display());
        let finished = run(&script, b"{}", &root, Duration::from_secs(30), &sandbox).await;
        let Finished::Exited { code, stderr, .. } = finished else {
            panic!("{finished:?}");
        };
        assert_ne!(code, Some(0));
        assert!(stderr.contains("Permission denied"), "{stderr}");
        assert!(root.join("inside").exists() && !outside.exists());
    }
}
