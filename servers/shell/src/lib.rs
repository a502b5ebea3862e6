//! The shell MCP server: run shell commands inside one workspace root, in
//! the foreground with a timeout or in the background as tasks.
//!
//! Tools:
//! - `run_command {command, timeout_secs?, cwd?}`: `sh -c` in the root (or
//!   in `cwd`, which must be inside it); the exit code, stdout and stderr;
//! - `task_start {command}` → a task id; `task_output {id}` → the output
//!   since the last read and the status; `task_kill {id}`.
//!
//! Invariants (the mechanism is the kit's [`mcp_tools::spawn`]):
//! - every command runs as the leader of its own process group with stdin
//!   from /dev/null, so a terminal's Ctrl-C does not reach it;
//! - its environment has no secrets: no variable whose name contains KEY,
//!   TOKEN, SECRET, PASSWORD or CREDENTIAL, nor one the host withheld;
//! - no process outlives its command: when it exits, times out (default
//!   120 s, at most 600 s), is killed or its MCP request is cancelled, its
//!   whole tree is killed, including what it started with `setsid`, `nohup`
//!   or a double fork (the server is a child subreaper, so orphans come
//!   back to it); a task's tree lives until the task ends or is killed;
//! - no orphans, ever: tasks die with the server however it ends (a reaper
//!   process kills every tree when this process is gone, even after
//!   SIGKILL);
//! - every command runs in the kit's sandbox ([`mcp_tools::spawn::Sandbox`],
//!   default `workspace-write` with the network off): the kernel refuses
//!   writes outside the root, the temp directory and configured paths, and
//!   to what decides what runs later (the git directory, nested `.git`,
//!   `core.hooksPath`, `.nanohermes`, `hooks.json`, `.mcp.json`); with the
//!   network off no protocol reaches anything; a command is pid 1 of a PID
//!   namespace, so all it starts dies with it; a call whose `_meta` grants
//!   only the read-only sandbox ([`mcp_tools::CallGrants`]) runs narrowed
//!   to `read-only`, and `_meta` never widens; a failure that looks like
//!   its refusal ends with a note naming the mode and how the user widens
//!   it; where the kernel cannot enforce it, commands are refused or run
//!   with a warning, as configured, never silently;
//! - a non-zero exit is a normal result; output is clamped to
//!   `--max-output` keeping each stream's head and tail, and buffered in
//!   bounded memory however much a command prints;
//! - calls never block each other: commands are driven by async tokio
//!   processes, and reading stops once the command and its group are gone
//!   even if an escaped process holds a pipe open.

pub mod capture;
pub mod run;
pub mod signals;
pub mod tasks;

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use mcp_tools::spawn::{Sandbox, SandboxMode, SandboxPolicy};
use mcp_tools::{CallGrants, ToolContext};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{Implementation, RequestMetaObject, ServerCapabilities, ServerConfig};
use rmcp::service::RequestContext;
use rmcp::{RoleServer, ServerHandler, tool, tool_handler, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::tasks::Tasks;

/// Timeout of `run_command` when the call does not give one, in seconds.
pub const DEFAULT_TIMEOUT_SECS: u64 = 120;
/// Largest timeout accepted, in seconds.
pub const MAX_TIMEOUT_SECS: u64 = 600;

/// Arguments of `run_command`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct RunCommandArgs {
    /// sh command line; stdin is empty.
    pub command: String,
    /// Kill after this many seconds (1-600). Default 120.
    #[serde(default)]
    pub timeout_secs: Option<u64>,
    /// Default: workspace root.
    #[serde(default)]
    pub cwd: Option<String>,
}

/// Arguments of `task_start`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct TaskStartArgs {
    /// sh command line (dev server, watcher, long build).
    pub command: String,
}

/// Arguments of `task_output` and `task_kill`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct TaskIdArgs {
    /// Id from task_start.
    pub id: u32,
}

/// The shell server: a `ServerHandler` confined to one workspace.
#[derive(Clone)]
pub struct ShellServer {
    ctx: Arc<ToolContext>,
    sandbox: Sandbox,
    /// The sandbox narrowed to `read-only`, for calls granted only that
    /// (Plan and Debug modes): made on first use, kept for its temp dir.
    read_only: Arc<OnceLock<Sandbox>>,
    tasks: Arc<Tasks>,
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl ShellServer {
    /// A shell server acting inside `ctx`'s workspace, its commands in the
    /// default sandbox (`workspace-write`, network off).
    pub fn new(ctx: ToolContext) -> Self {
        Self::with_sandbox(ctx, SandboxPolicy::default())
    }

    /// A shell server whose commands run under `policy`. When the kernel
    /// cannot enforce all of it, its instructions say so, and so does its
    /// host once at start ([`Sandbox::startup_warning`]).
    pub fn with_sandbox(ctx: ToolContext, policy: SandboxPolicy) -> Self {
        let sandbox = Sandbox::new(policy, ctx.workspace.root());
        // Orphans of commands come back to this process, to be killed with
        // their tree and reaped; without it they are still found by marker.
        if let Err(e) = mcp_tools::spawn::become_subreaper() {
            tracing::warn!("cannot become a child subreaper: {e}");
        }
        let buffer_limit = ctx.max_output.max(32 * 1024) * 4;
        Self {
            ctx: Arc::new(ctx),
            tasks: Arc::new(Tasks::new(buffer_limit, sandbox.clone())),
            sandbox,
            read_only: Arc::new(OnceLock::new()),
            tool_router: Self::tool_router(),
        }
    }

    /// The sandbox every command runs in.
    pub fn sandbox(&self) -> &Sandbox {
        &self.sandbox
    }

    /// Kills every background task's process tree now (also done when the
    /// last clone of the server is dropped).
    pub fn kill_all_tasks(&self) {
        self.tasks.kill_all();
    }

    /// Run `sh -c` and wait: exit code, stdout, stderr. All it started is killed when it ends or times out; use task_start for servers, watchers.
    #[tool(annotations(
        title = "Run a shell command",
        read_only_hint = false,
        destructive_hint = true,
        idempotent_hint = false,
        open_world_hint = true
    ))]
    async fn run_command(
        &self,
        Parameters(args): Parameters<RunCommandArgs>,
        context: RequestContext<RoleServer>,
    ) -> Result<String, String> {
        if args.command.trim().is_empty() {
            return Err("command is empty: give a shell command line".to_string());
        }
        let cwd = self.cwd(args.cwd.as_deref())?;
        let secs = args
            .timeout_secs
            .unwrap_or(DEFAULT_TIMEOUT_SECS)
            .clamp(1, MAX_TIMEOUT_SECS);
        // A cancelled request (or a server shutting down) kills the group.
        let cancelled = context.ct.clone();
        let sandbox = self.sandbox_for(&context.meta);
        run::run_command(
            &args.command,
            &cwd,
            &sandbox,
            Duration::from_secs(secs),
            self.ctx.max_output,
            async move { cancelled.cancelled().await },
        )
        .await
    }

    /// Start a shell command in the background; returns at once its id for task_output, task_kill.
    #[tool(annotations(
        title = "Start a background task",
        read_only_hint = false,
        destructive_hint = true,
        idempotent_hint = false,
        open_world_hint = true
    ))]
    async fn task_start(
        &self,
        Parameters(args): Parameters<TaskStartArgs>,
        meta: RequestMetaObject,
    ) -> Result<String, String> {
        if args.command.trim().is_empty() {
            return Err("command is empty: give a shell command line".to_string());
        }
        let sandbox = self.sandbox_for(&meta);
        let (id, pgid, warning) =
            self.tasks
                .start_in(&args.command, self.ctx.workspace.root(), &sandbox)?;
        let warning = warning.map(|w| format!("{w}\n")).unwrap_or_default();
        Ok(format!(
            "{warning}started task {id} (process group {pgid}): {}\nRead its output with task_output {{\"id\": {id}}}; stop it with task_kill.",
            args.command
        ))
    }

    /// A background task's status (running or how it ended) and new stdout+stderr since the last call.
    #[tool(annotations(
        title = "Read a background task's output",
        read_only_hint = true,
        destructive_hint = false,
        idempotent_hint = false,
        open_world_hint = false
    ))]
    async fn task_output(
        &self,
        Parameters(args): Parameters<TaskIdArgs>,
    ) -> Result<String, String> {
        self.tasks.output(args.id, self.ctx.max_output)
    }

    /// Stop a background task and all it started (SIGTERM, SIGKILL after 2 s); returns final status and unread output.
    #[tool(annotations(
        title = "Stop a background task",
        read_only_hint = false,
        destructive_hint = true,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    async fn task_kill(&self, Parameters(args): Parameters<TaskIdArgs>) -> Result<String, String> {
        self.tasks.kill(args.id, self.ctx.max_output).await
    }
}

impl ShellServer {
    /// The sandbox for a call: the server's, or, when the call's `_meta`
    /// grants only the read-only sandbox ([`CallGrants`]), the server's
    /// narrowed to `read-only`. A grant only narrows: nothing in `_meta`
    /// widens the server's sandbox.
    fn sandbox_for(&self, meta: &RequestMetaObject) -> Sandbox {
        let grants = CallGrants::from_meta(&meta.0.0);
        if !grants.read_only_sandbox || self.sandbox.policy().mode == SandboxMode::ReadOnly {
            return self.sandbox.clone();
        }
        self.read_only
            .get_or_init(|| {
                Sandbox::new(
                    self.sandbox.policy().narrowed_to_read_only(),
                    self.ctx.workspace.root(),
                )
            })
            .clone()
    }

    fn cwd(&self, cwd: Option<&str>) -> Result<PathBuf, String> {
        let Some(cwd) = cwd.map(str::trim).filter(|c| !c.is_empty()) else {
            return Ok(self.ctx.workspace.root().to_path_buf());
        };
        let resolved = self.ctx.workspace.resolve(cwd).map_err(|e| e.to_string())?;
        if !resolved.is_dir() {
            return Err(format!(
                "cwd is not a directory: {cwd} (give a directory relative to the workspace root)"
            ));
        }
        Ok(resolved)
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for ShellServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(
                env!("CARGO_PKG_NAME"),
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions(format!(
                "Run shell commands in the workspace: `run_command` waits for a command (timeout 120 s by default), \
                 `task_start`/`task_output`/`task_kill` manage long-running background commands. \
                 Every command runs in its own process group and nothing it starts outlives it. \
                 Sandbox: {}.",
                self.sandbox.status()
            ))
    }
}
