//! A real git repository in a temp dir, and an MCP client on a server for it.

use std::path::{Path, PathBuf};
use std::process::Command;

use mcp_tools::ToolContext;
use nanohermes_git::GitServer;
use rmcp::service::{RoleClient, RunningService};
use serde_json::Value;

/// A temp directory, optionally a git repository with a local identity.
pub struct Repo {
    dir: tempfile::TempDir,
}

impl Repo {
    /// `git init -b main` with user.name/email set in the repository.
    pub fn new() -> Self {
        let repo = Self::plain_dir();
        repo.git(&["init", "-q", "-b", "main"]);
        repo.git(&["config", "user.name", "Test User"]);
        repo.git(&["config", "user.email", "test@example.com"]);
        repo.git(&["config", "commit.gpgsign", "false"]);
        repo
    }

    /// A directory that is not a repository.
    pub fn plain_dir() -> Self {
        Self {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Runs git in the repository and returns stdout; panics on failure.
    pub fn git(&self, args: &[&str]) -> String {
        let out = Command::new("git")
            .current_dir(self.path())
            .args(args)
            .env("LC_ALL", "C")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "git {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    pub fn write(&self, path: &str, content: &str) {
        let full = self.path().join(path);
        std::fs::create_dir_all(full.parent().unwrap()).unwrap();
        std::fs::write(full, content).unwrap();
    }

    /// Writes `path` and commits everything with `message`.
    pub fn commit_file(&self, path: &str, content: &str, message: &str) {
        self.write(path, content);
        self.git(&["add", "-A"]);
        self.git(&["commit", "-q", "-m", message]);
    }

    pub fn head_short(&self) -> String {
        self.git(&["rev-parse", "--short", "HEAD"])
            .trim()
            .to_string()
    }

    pub fn commit_count(&self) -> usize {
        self.git(&["rev-list", "--count", "HEAD"])
            .trim()
            .parse()
            .unwrap()
    }

    /// Installs an executable hook script.
    pub fn hook(&self, name: &str, script: &str) {
        use std::os::unix::fs::PermissionsExt;
        let path = self.path().join(".git/hooks").join(name);
        std::fs::write(&path, script).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}

/// An MCP client connected in-process to a git server rooted at `root`.
pub async fn client(root: &Path) -> RunningService<RoleClient, ()> {
    server_client(GitServer::new(ToolContext::new(root).unwrap())).await
}

/// Same, with commits (and their hooks) sandboxed by `policy`.
pub async fn client_with_policy(
    root: &Path,
    policy: mcp_tools::spawn::SandboxPolicy,
) -> RunningService<RoleClient, ()> {
    server_client(GitServer::with_options(
        ToolContext::new(root).unwrap(),
        PathBuf::from("git"),
        policy,
    ))
    .await
}

/// Same, with an explicit git executable.
pub async fn client_with_git(root: &Path, git: PathBuf) -> RunningService<RoleClient, ()> {
    server_client(GitServer::with_git_binary(
        ToolContext::new(root).unwrap(),
        git,
    ))
    .await
}

async fn server_client(server: GitServer) -> RunningService<RoleClient, ()> {
    mcp_tools::in_process::connect(server).await.unwrap()
}

/// Calls `tool` and returns (is_error, text).
pub async fn call(
    client: &RunningService<RoleClient, ()>,
    tool: &str,
    args: Value,
) -> (bool, String) {
    mcp_tools::testing::call_text(client, tool, args).await
}

/// Calls `tool` and returns its text, failing the test on an error result.
pub async fn ok(client: &RunningService<RoleClient, ()>, tool: &str, args: Value) -> String {
    let (is_error, text) = call(client, tool, args).await;
    assert!(!is_error, "{tool} failed:\n{text}");
    text
}

/// Calls `tool` and returns its error text, failing the test on success.
pub async fn err(client: &RunningService<RoleClient, ()>, tool: &str, args: Value) -> String {
    let (is_error, text) = call(client, tool, args).await;
    assert!(is_error, "{tool} should have failed, answered:\n{text}");
    text
}
