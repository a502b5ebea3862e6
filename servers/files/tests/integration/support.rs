//! A temp workspace with a files server connected over in-process MCP.

use std::path::{Path, PathBuf};

use mcp_tools::ToolContext;
use nanohermes_files::FilesServer;
use rmcp::service::{RoleClient, RunningService};
use serde_json::Value;

/// What a tool call answered: whether it is an error, and its text.
#[derive(Debug)]
pub struct Answer {
    pub is_error: bool,
    pub text: String,
}

impl Answer {
    /// Panics unless the call succeeded; returns its text.
    #[track_caller]
    pub fn ok(self) -> String {
        assert!(!self.is_error, "expected success, got error: {}", self.text);
        self.text
    }

    /// Panics unless the call failed; returns its message.
    #[track_caller]
    pub fn err(self) -> String {
        assert!(self.is_error, "expected an error, got: {}", self.text);
        self.text
    }
}

pub struct Fixture {
    /// Holds `root/` (the workspace) and `outside/` (must never change).
    pub dir: tempfile::TempDir,
    pub client: RunningService<RoleClient, ()>,
}

impl Fixture {
    pub async fn new() -> Self {
        Self::with_max_output(mcp_tools::DEFAULT_MAX_OUTPUT).await
    }

    pub async fn with_max_output(max_output: usize) -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("root")).unwrap();
        std::fs::create_dir(dir.path().join("outside")).unwrap();
        std::fs::write(dir.path().join("outside/secret.txt"), "top secret\n").unwrap();
        let mut ctx = ToolContext::new(dir.path().join("root")).unwrap();
        ctx.max_output = max_output;
        let client = mcp_tools::in_process::connect(FilesServer::new(ctx))
            .await
            .unwrap();
        Self { dir, client }
    }

    /// The canonical workspace root.
    pub fn root(&self) -> PathBuf {
        std::fs::canonicalize(self.dir.path().join("root")).unwrap()
    }

    pub fn outside(&self) -> PathBuf {
        std::fs::canonicalize(self.dir.path().join("outside")).unwrap()
    }

    pub fn write(&self, rel: &str, content: &str) {
        let path = self.root().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }

    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.root().join(rel)).unwrap()
    }

    pub async fn call(&self, tool: &str, args: Value) -> Answer {
        let (is_error, text) = mcp_tools::testing::call_text(&self.client, tool, args).await;
        Answer { is_error, text }
    }
}

/// Every file under `dir` with its bytes, sorted: a snapshot to compare.
pub fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let entry = entry.unwrap();
            let ty = entry.file_type().unwrap();
            if ty.is_dir() {
                stack.push(entry.path());
            } else if ty.is_file() {
                out.push((entry.path(), std::fs::read(entry.path()).unwrap()));
            } else {
                out.push((entry.path(), Vec::new()));
            }
        }
    }
    out.sort();
    out
}
