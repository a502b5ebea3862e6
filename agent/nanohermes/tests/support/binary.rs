//! The real `nanohermes` binary, run the way a user runs it: a clean model
//! environment, a home inside `target/`, a timeout.

use std::path::Path;
use std::time::Duration;

use super::mock_model::MockModel;

/// What a `nanohermes` process left behind.
#[derive(Debug)]
pub struct Run {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

/// The agent's home (the memory database) for every run: inside `target/`,
/// so no test touches the real `~/.nanohermes`.
pub const TEST_HOME: &str = concat!(env!("CARGO_TARGET_TMPDIR"), "/nanohermes-home");

/// Runs the real binary with a clean model environment plus `env`.
pub async fn nanohermes(args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_nanohermes"));
    command
        .args(args)
        .env("NANOHERMES_HOME", TEST_HOME)
        .kill_on_drop(true);
    for name in [
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "NANOHERMES_MODEL",
        "NANOHERMES_FALLBACK_MODEL",
        "NANOHERMES_LOG",
    ] {
        command.env_remove(name);
    }
    command.envs(env.iter().copied());
    output_of(&mut command).await
}

/// Runs `command` to its end; the generous timeout only catches a hang.
pub async fn output_of(command: &mut tokio::process::Command) -> Run {
    let output = tokio::time::timeout(Duration::from_secs(60), command.output())
        .await
        .expect("nanohermes finished")
        .expect("nanohermes ran");
    Run::from(output)
}

/// Waits for `child`, spawned with piped output, to end (the same timeout).
pub async fn finish(child: tokio::process::Child) -> Run {
    let output = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .expect("nanohermes finished")
        .expect("nanohermes ran");
    Run::from(output)
}

impl From<std::process::Output> for Run {
    fn from(output: std::process::Output) -> Run {
        Run {
            code: output.status.code(),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }
}

/// The environment that points a run at `mock` (at `url`), unattended.
pub fn on_mock<'a>(mock: &'a MockModel, url: &'a str) -> Vec<(&'a str, &'a str)> {
    let _ = mock;
    vec![
        ("OPENAI_BASE_URL", url),
        ("OPENAI_API_KEY", "test-key"),
        ("NANOHERMES_MODEL", "main-model"),
        // Unattended: these runs have no terminal to approve writes and
        // commands on (tests/it/permissions.rs covers the other modes).
        ("NANOHERMES_MODE", "goal"),
    ]
}

/// `dir` as a `--workspace` argument.
pub fn workspace_arg(dir: &Path) -> String {
    dir.display().to_string()
}

/// Runs `git` in `dir`, which must succeed.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let output = std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git runs");
    assert!(output.status.success(), "git {args:?}: {output:?}");
    String::from_utf8_lossy(&output.stdout).into_owned()
}
