//! The pieces of the attack table (`attacks.rs`): a directory OUTSIDE the
//! temp directory that planted programs try to write (a sandboxed command
//! may write /tmp, so a marker there would prove nothing), the planted
//! programs, and the real `nanohermes-git` binary over MCP in two set-ups:
//! the kernel sandbox on (as shipped), and the sandbox simulated away so
//! that the hardened environment alone is tested.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use rmcp::ServiceExt;
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use serde_json::{Value, json};
use tokio::process::Command;

/// A directory under `$HOME` (outside every temp directory), removed on
/// drop, holding the planted programs and the markers they write.
pub struct Outside {
    dir: PathBuf,
}

impl Outside {
    pub fn new() -> Self {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let home = PathBuf::from(std::env::var("HOME").expect("HOME is set"));
        let dir = home.join(format!(
            ".nanohermes-git-attack-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::SeqCst)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let dir = dir.canonicalize().unwrap();
        assert!(
            !dir.starts_with(std::env::temp_dir()),
            "the outside directory must not be under the temp directory"
        );
        Self { dir }
    }

    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// A program that appends its arguments to the marker `name` (in this
    /// directory), then passes stdin through (a filter or hook still works).
    pub fn program(&self, name: &str) -> String {
        self.write_program(name, "cat\n")
    }

    /// The same, then fails (an ssh command or a long-running filter that
    /// would otherwise wait for a protocol).
    pub fn failing_program(&self, name: &str) -> String {
        self.write_program(name, "exit 1\n")
    }

    fn write_program(&self, name: &str, tail: &str) -> String {
        let path = self.dir.join(format!("{name}.sh"));
        let marker = self.marker(name);
        std::fs::write(
            &path,
            format!(
                "#!/bin/sh\necho \"ran $*\" >> '{}'\n{tail}",
                marker.display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path.display().to_string()
    }

    pub fn marker(&self, name: &str) -> PathBuf {
        self.dir.join(format!("{name}.ran"))
    }

    /// Whether the program `name` ran (and could write here).
    pub fn fired(&self, name: &str) -> bool {
        self.marker(name).exists()
    }

    /// Forgets that `name` ran (after checking that plain git fires it).
    pub fn reset(&self, name: &str) {
        let _ = std::fs::remove_file(self.marker(name));
    }
}

impl Drop for Outside {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// How the binary is started.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Setup {
    /// As shipped: the kernel sandbox and the hardened environment.
    Sandboxed,
    /// The kernel sandbox simulated away (`NANOHERMES_SANDBOX_SIMULATE=
    /// no-landlock`, `--sandbox-unavailable warn`): the hardened
    /// environment alone.
    HardeningAlone,
}

/// Names the git executable the table runs against (default `git` from
/// `PATH`), to check an older git: `NANOHERMES_TEST_GIT=/usr/bin/git`.
pub const TEST_GIT_VAR: &str = "NANOHERMES_TEST_GIT";

/// The real binary over stdio, rooted at `root`, running `git` (or the
/// given executable, else [`TEST_GIT_VAR`]'s).
pub async fn server(
    root: &Path,
    setup: Setup,
    git: Option<&Path>,
) -> RunningService<RoleClient, ()> {
    let chosen = std::env::var_os(TEST_GIT_VAR).map(PathBuf::from);
    let command = Command::new(env!("CARGO_BIN_EXE_nanohermes-git")).configure(|c| {
        c.arg("--root").arg(root);
        if let Some(git) = git.or(chosen.as_deref()) {
            c.arg("--git").arg(git);
        }
        if setup == Setup::HardeningAlone {
            c.args(["--sandbox-unavailable", "warn"]);
            c.env(mcp_tools::spawn::sandbox::SIMULATE_VAR, "no-landlock");
        }
    });
    ().serve(TokioChildProcess::new(command).unwrap())
        .await
        .unwrap()
}

/// Calls `tool`; (is_error, text).
pub async fn call(
    client: &RunningService<RoleClient, ()>,
    tool: &str,
    args: Value,
) -> (bool, String) {
    mcp_tools::testing::call_text(client, tool, args).await
}

/// Every read-only call the model can make, with its answer.
pub async fn every_read_call(
    client: &RunningService<RoleClient, ()>,
) -> Vec<(String, bool, String)> {
    let mut answers = Vec::new();
    for (tool, args) in [
        ("git_status", json!({})),
        ("git_diff", json!({})),
        ("git_diff", json!({"staged": true})),
        ("git_diff", json!({"against": "HEAD"})),
        ("git_log", json!({})),
        ("git_log", json!({"path": "."})),
    ] {
        let (is_error, text) = call(client, tool, args.clone()).await;
        answers.push((format!("{tool} {args}"), is_error, text));
    }
    answers
}

/// Runs plain git (the user's, unconfined) in `dir`; its output, whatever
/// its exit code.
pub fn plain_git(dir: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .current_dir(dir)
        .args(args)
        .env("LC_ALL", "C")
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Runs plain git in `dir`, panicking when it fails.
pub fn git_ok(dir: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .current_dir(dir)
        .args(args)
        .env("LC_ALL", "C")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?} in {}: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}
