//! The git MCP server: the repository around the workspace root, read and
//! recorded through the `git` CLI that users already trust.
//!
//! | tool | does | annotations |
//! |---|---|---|
//! | `git_status` | branch, upstream ahead/behind, staged / unstaged / untracked / conflicted | read-only |
//! | `git_diff` | unstaged, staged (`staged`), or against a revision (`against`), for one `path` or all | read-only |
//! | `git_log` | latest commits: short hash, date, author, subject (`max_count` 1–200, default 20) | read-only |
//! | `git_commit` | stage `paths` or `all` tracked changes, then commit with `message` | adds history: not read-only, not destructive, not idempotent |
//!
//! Invariants:
//! - a commit never passes `--no-verify`, `--amend` or `--allow-empty`, and
//!   nothing pushes; hooks run and their refusal is reported;
//! - an empty commit is refused with a message, before git is asked;
//! - every path is confined to the workspace and passed as a literal
//!   pathspec after `--`; a revision starting with `-` is refused;
//! - git runs with the root as cwd, prompts and pager off, in the C locale,
//!   through the kit's spawn policy: its own process group, no secrets in
//!   its or its hooks' environment, its whole tree killed when it ends;
//! - every git process is sandboxed: a commit and its staging with the
//!   shell's policy (hooks and filters cannot write outside the workspace,
//!   plant a hook or rewrite `.git/config`), everything else in the
//!   read-only sandbox, network off ([`runner`]);
//! - the read-only tools run nothing the repository configures
//!   (`core.fsmonitor`, filter, external-diff and textconv drivers, hooks,
//!   signature checks, lazy fetches, submodules, pager), by environment
//!   overrides git cannot split ([`harden`]);
//! - a repository whose work tree or git directory points out of the root
//!   is refused ([`layout`]); status and diff are limited to the root;
//! - `git_commit` never commits the agent's own `.nanohermes/` files
//!   ([`commit`]);
//!   "git is not installed" and "not a git repository" are errors that say so;
//! - output is clamped to the server's `--max-output`.
//!
//! Every path in and out is relative to the workspace root. When the root is
//! a subdirectory of a repository, status lists only that subdirectory and
//! `all` stages only the tracked changes under it (already staged changes
//! elsewhere are still committed by a commit without `paths`).
//!
//! Example: `git_status {}` in a new repository with `a.txt` staged and
//! `b.txt` untracked answers
//! `On branch main (no commits yet)\nStaged (1):\n  A a.txt\nUntracked (1):\n  b.txt\n`
//! (pinned by the test `status_before_the_first_commit_says_no_commits_yet`).

#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod commit;
pub mod diff;
pub mod harden;
pub mod layout;
pub mod log;
pub mod runner;
pub mod status;

use std::path::PathBuf;
use std::sync::Arc;

use mcp_tools::spawn::{Sandbox, SandboxPolicy};
use mcp_tools::{ToolContext, clamp, clamp_head_tail};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{Implementation, ServerCapabilities, ServerConfig};
use rmcp::{ServerHandler, tool, tool_handler, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::runner::{Git, pathspec};

/// Arguments of `git_diff`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct DiffArgs {
    /// Staged instead of unstaged.
    #[serde(default)]
    pub staged: Option<bool>,
    /// Only this file or directory.
    #[serde(default)]
    pub path: Option<String>,
    /// Revision (hash, branch, tag, HEAD~1).
    #[serde(default)]
    pub against: Option<String>,
}

/// Arguments of `git_log`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct LogArgs {
    /// 1-200. Default 20.
    #[serde(default)]
    pub max_count: Option<u32>,
    /// Only commits touching this path.
    #[serde(default)]
    pub path: Option<String>,
}

/// Arguments of `git_commit`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct CommitArgs {
    /// Summary line, optional blank line and body.
    pub message: String,
    /// Exactly these files or directories (new, changed or deleted); other
    /// staged changes stay staged.
    #[serde(default)]
    pub paths: Option<Vec<String>>,
    /// Every change to tracked files (not untracked). Not with `paths`.
    #[serde(default)]
    pub all: Option<bool>,
}

/// Most paths one commit may name.
pub const MAX_COMMIT_PATHS: usize = 1000;

/// The git MCP server. Cloning shares the context.
#[derive(Clone)]
pub struct GitServer {
    ctx: Arc<ToolContext>,
    git: Git,
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl GitServer {
    /// A server running `git` from `PATH` in the workspace root of `ctx`.
    pub fn new(ctx: ToolContext) -> Self {
        Self::with_git_binary(ctx, PathBuf::from("git"))
    }

    /// A server running the given git executable (a name looked up on
    /// `PATH`, or a path), hooks in the default sandbox.
    pub fn with_git_binary(ctx: ToolContext, git_binary: PathBuf) -> Self {
        Self::with_options(ctx, git_binary, SandboxPolicy::default())
    }

    /// A server running `git_binary`, whose commits (and so their hooks)
    /// run under `policy`, the shell's policy.
    pub fn with_options(ctx: ToolContext, git_binary: PathBuf, policy: SandboxPolicy) -> Self {
        // Orphans of hooks come back to this process, to be killed with
        // their tree and reaped; without it they are still found by marker.
        if let Err(e) = mcp_tools::spawn::become_subreaper() {
            tracing::warn!("cannot become a child subreaper: {e}");
        }
        let sandbox = Sandbox::new(policy, ctx.workspace.root());
        let git = Git::new(git_binary, ctx.workspace.root(), sandbox);
        Self {
            ctx: Arc::new(ctx),
            git,
            tool_router: Self::tool_router(),
        }
    }

    /// Branch, ahead/behind upstream, and staged, unstaged, untracked and
    /// conflicted files by git status letter.
    #[tool(annotations(
        title = "Git status",
        read_only_hint = true,
        destructive_hint = false,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    async fn git_status(&self) -> Result<String, String> {
        let text = status::status(&self.git.read_only())
            .await
            .map_err(|e| e.to_string())?;
        Ok(clamp(&text, self.ctx.max_output))
    }

    /// Unified diff of unstaged changes, staged ones with `staged`, or against
    /// a revision; untracked files excluded.
    #[tool(annotations(
        title = "Git diff",
        read_only_hint = true,
        destructive_hint = false,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    async fn git_diff(&self, Parameters(args): Parameters<DiffArgs>) -> Result<String, String> {
        let pathspec = match &args.path {
            Some(path) => Some(pathspec(&self.ctx.workspace, path)?),
            None => None,
        };
        let request = diff::DiffRequest {
            staged: args.staged.unwrap_or(false),
            pathspec,
            against: args.against,
        };
        diff::diff(&self.git.read_only(), &request, self.ctx.max_output)
            .await
            .map_err(|e| clamp(&e, self.ctx.max_output))
    }

    /// Latest commits, newest first, one line each: `hash date author: subject`.
    #[tool(annotations(
        title = "Git log",
        read_only_hint = true,
        destructive_hint = false,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    async fn git_log(&self, Parameters(args): Parameters<LogArgs>) -> Result<String, String> {
        let max_count = log::max_count(args.max_count)?;
        let pathspec = match &args.path {
            Some(path) => Some(pathspec(&self.ctx.workspace, path)?),
            None => None,
        };
        let text = log::log(&self.git.read_only(), max_count, pathspec.as_deref()).await?;
        Ok(clamp(&text, self.ctx.max_output))
    }

    /// Commit `paths`, or with `all` every tracked change, else what is staged.
    /// Hooks run; never amends or pushes; returns the short hash.
    #[tool(annotations(
        title = "Git commit",
        read_only_hint = false,
        destructive_hint = false,
        idempotent_hint = false,
        open_world_hint = false
    ))]
    async fn git_commit(&self, Parameters(args): Parameters<CommitArgs>) -> Result<String, String> {
        let selection = match (args.paths, args.all.unwrap_or(false)) {
            (Some(_), true) => {
                return Err("give either `paths` or `all: true`, not both".to_string());
            }
            (Some(paths), false) if paths.is_empty() => {
                return Err("`paths` is empty: name the files to commit, or leave `paths` out to commit what is staged".to_string());
            }
            (Some(paths), false) if paths.len() > MAX_COMMIT_PATHS => {
                return Err(format!(
                    "{} paths given, over the limit of {MAX_COMMIT_PATHS}: name directories instead of files, or use `all: true`",
                    paths.len()
                ));
            }
            (Some(paths), false) => commit::Selection::Paths(
                paths
                    .iter()
                    .map(|p| commit::commit_pathspec(&self.ctx.workspace, p))
                    .collect::<Result<_, _>>()?,
            ),
            (None, true) => commit::Selection::AllTracked,
            (None, false) => commit::Selection::Staged,
        };
        let text = commit::commit(&self.git, &args.message, &selection)
            .await
            .map_err(|e| clamp_head_tail(&e, self.ctx.max_output))?;
        Ok(clamp(&text, self.ctx.max_output))
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for GitServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(
                env!("CARGO_PKG_NAME"),
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions(
                "Git for the repository around the workspace root. Read with git_status, git_diff \
                 and git_log; record work with git_commit (hooks always run; it never amends or pushes).",
            )
    }
}
