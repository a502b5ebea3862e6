//! One MCP server the hub talks to: how it starts, the live connection, and
//! the restart-once rule.
//!
//! A call reads the current connection under a short read lock, clones the
//! peer handle and releases the lock before sending, so calls never wait on
//! one another; only a restart takes the write lock, for the swap.
//!
//! Death is noticed two ways: a call fails because the transport closed
//! (that call returns `ERROR: server NAME is not running (...)`), or the next
//! call finds the connection already closed. The next call after a death
//! restarts the server once ([`MAX_RESTARTS`]) and, if that works, goes
//! through; a server that dies again stays down and every call says so.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Duration;

use anyhow::Context as _;
use mcp_tools::ToolContext;
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation, JsonObject, Tool,
};
use rmcp::service::{Peer, RoleClient, RunningService, ServiceError, ServiceExt};
use rmcp::transport::TokioChildProcess;
use tokio::io::AsyncBufReadExt;
use tokio::process::ChildStderr;
use tokio::task::JoinHandle;

use super::builtin::Builtin;
use super::{ExternalServer, result};

/// A connected MCP client, whatever the transport.
pub(crate) type Client = RunningService<RoleClient, ClientConfig>;

/// How many times a dead server is restarted over the hub's life.
pub const MAX_RESTARTS: u32 = 1;

/// How many lines of an external server's stderr are kept for error
/// messages.
const STDERR_LINES: usize = 20;

/// How long to wait for a dead child's stderr to drain before composing the
/// reason it died.
const STDERR_DRAIN: Duration = Duration::from_millis(500);

/// What the agent says about itself in `initialize`.
pub(crate) fn client_config() -> ClientConfig {
    ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("nanohermes", env!("CARGO_PKG_VERSION")),
    )
}

/// How to (re)start a server.
pub(crate) enum Launch {
    /// In-process, confined to the context's workspace.
    Builtin(Builtin, ToolContext),
    /// A child process over stdio, started in `cwd`.
    External(ExternalServer, PathBuf),
}

/// One server: its launch recipe and its current connection.
pub(crate) struct Server {
    name: String,
    launch: Launch,
    startup_timeout: Duration,
    state: RwLock<State>,
    restart_lock: tokio::sync::Mutex<()>,
    stderr: Arc<StderrTail>,
}

struct State {
    /// `None` once shut down.
    client: Option<Client>,
    peer: Peer<RoleClient>,
    /// Bumped by every restart, so a late failure of an old connection does
    /// not mark the new one dead.
    generation: u64,
    /// Why the server is down, once that is known.
    dead: Option<String>,
    restarts: u32,
}

impl Server {
    /// Starts the server and lists its tools (following pagination), all
    /// within `startup_timeout`. The error is one line for the hub's
    /// warnings.
    pub(crate) async fn start(
        name: String,
        launch: Launch,
        startup_timeout: Duration,
    ) -> Result<(Server, Vec<Tool>), String> {
        let stderr = Arc::new(StderrTail::default());
        let started = tokio::time::timeout(startup_timeout, async {
            let client = launch.connect(&name, &stderr).await?;
            let tools = client
                .list_all_tools()
                .await
                .context("listing its tools failed")?;
            anyhow::Ok((client, tools))
        })
        .await;
        let (client, tools) = match started {
            Ok(Ok(started)) => started,
            Ok(Err(e)) => {
                return Err(format!(
                    "server {name} failed to start: {e:#}{}",
                    stderr.drained_suffix().await
                ));
            }
            Err(_) => {
                return Err(format!(
                    "server {name} did not start within {}{}",
                    seconds(startup_timeout),
                    stderr.drained_suffix().await
                ));
            }
        };
        let state = State {
            peer: client.peer().clone(),
            client: Some(client),
            generation: 0,
            dead: None,
            restarts: 0,
        };
        let server = Server {
            name,
            launch,
            startup_timeout,
            state: RwLock::new(state),
            restart_lock: tokio::sync::Mutex::new(()),
            stderr,
        };
        Ok((server, tools))
    }

    /// The server's name.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// Whether the connection is open and not known to be dead.
    pub(crate) fn is_running(&self) -> bool {
        self.live_peer().is_some()
    }

    /// Calls `tool` with `arguments` and renders the answer for the model.
    /// Never fails: every problem is an `ERROR: ...` string.
    pub(crate) async fn call(
        &self,
        tool: &str,
        arguments: JsonObject,
        timeout: Duration,
        max_output: usize,
    ) -> String {
        let (peer, generation) = match self.live_peer() {
            Some(live) => live,
            None => match self.restart().await {
                Ok(live) => live,
                Err(message) => return message,
            },
        };
        let params = CallToolRequestParams::new(tool.to_string()).with_arguments(arguments);
        // Dropping the call on timeout sends `notifications/cancelled`.
        match tokio::time::timeout(timeout, peer.call_tool(params)).await {
            Ok(Ok(answer)) => result::render(&answer, max_output),
            Err(_) => format!(
                "ERROR: tool {tool} on server {} timed out after {}; the call was cancelled",
                self.name,
                seconds(timeout)
            ),
            Ok(Err(ServiceError::McpError(e))) => mcp_tools::clamp(
                &format!(
                    "ERROR: server {} rejected the call to {tool}: {} (JSON-RPC error {}{})",
                    self.name,
                    e.message,
                    e.code.0,
                    e.data.map(|d| format!(", data: {d}")).unwrap_or_default()
                ),
                max_output,
            ),
            Ok(Err(e)) => {
                let closed = matches!(
                    e,
                    ServiceError::TransportClosed | ServiceError::TransportSend(_)
                );
                if closed || peer.is_transport_closed() {
                    let reason = self.mark_dead(generation, "the connection closed").await;
                    self.not_running(&reason)
                } else {
                    format!("ERROR: call to {tool} on server {} failed: {e}", self.name)
                }
            }
        }
    }

    /// Stops the server; a child process gets EOF on stdin, then SIGTERM,
    /// then SIGKILL (rmcp's graceful shutdown).
    pub(crate) async fn shutdown(&self) {
        let client = self.write().client.take();
        if let Some(client) = client {
            let _ = client.cancel().await;
        }
    }

    /// The current peer, unless the server is known or found to be down.
    fn live_peer(&self) -> Option<(Peer<RoleClient>, u64)> {
        let state = self.read();
        if state.dead.is_some() || state.client.is_none() || state.peer.is_transport_closed() {
            return None;
        }
        Some((state.peer.clone(), state.generation))
    }

    /// Records that connection `generation` died and returns why.
    async fn mark_dead(&self, generation: u64, cause: &str) -> String {
        let reason = format!("{cause}{}", self.stderr.drained_suffix().await);
        let mut state = self.write();
        if state.generation != generation {
            // Already restarted by another call: report this call's cause.
            return reason;
        }
        state.dead.get_or_insert(reason).clone()
    }

    /// What a call to a dead server returns.
    fn not_running(&self, reason: &str) -> String {
        let next = if self.read().restarts < MAX_RESTARTS {
            "it will be restarted on the next call"
        } else {
            "it was already restarted once and stays down"
        };
        format!(
            "ERROR: server {} is not running ({reason}); {next}",
            self.name
        )
    }

    /// Restarts a dead server, at most [`MAX_RESTARTS`] times; concurrent
    /// callers wait for one restart.
    async fn restart(&self) -> Result<(Peer<RoleClient>, u64), String> {
        let _one_at_a_time = self.restart_lock.lock().await;
        if let Some(live) = self.live_peer() {
            return Ok(live);
        }
        let known = {
            let state = self.read();
            if state.client.is_none() {
                return Err(format!(
                    "ERROR: server {} is not running (the hub was shut down)",
                    self.name
                ));
            }
            (state.dead.clone(), state.generation)
        };
        let reason = match known {
            (Some(reason), _) => reason,
            (None, generation) => self.mark_dead(generation, "the connection closed").await,
        };
        if self.read().restarts >= MAX_RESTARTS {
            return Err(self.not_running(&reason));
        }
        self.write().restarts += 1;
        self.stderr.clear();
        let started = tokio::time::timeout(
            self.startup_timeout,
            self.launch.connect(&self.name, &self.stderr),
        )
        .await;
        let failure = match started {
            Ok(Ok(client)) => {
                let peer = client.peer().clone();
                let mut state = self.write();
                state.generation += 1;
                state.peer = peer.clone();
                state.dead = None;
                // Dropping the old client cancels its service.
                drop(state.client.replace(client));
                tracing::info!(server = %self.name, "restarted after: {reason}");
                return Ok((peer, state.generation));
            }
            Ok(Err(e)) => format!("{e:#}"),
            Err(_) => format!("no answer within {}", seconds(self.startup_timeout)),
        };
        let reason = format!(
            "{reason}; the restart failed: {failure}{}",
            self.stderr.drained_suffix().await
        );
        self.write().dead = Some(reason.clone());
        Err(self.not_running(&reason))
    }

    fn read(&self) -> RwLockReadGuard<'_, State> {
        self.state
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, State> {
        self.state
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Launch {
    /// Starts the server and completes `initialize`.
    async fn connect(&self, name: &str, stderr: &Arc<StderrTail>) -> anyhow::Result<Client> {
        match self {
            Launch::Builtin(builtin, ctx) => builtin.connect(ctx.clone()).await,
            Launch::External(server, cwd) => {
                let mut command = tokio::process::Command::new(&server.command);
                command
                    .args(&server.args)
                    .envs(server.env.iter().map(|(k, v)| (k, v)))
                    .current_dir(cwd);
                let (transport, child_stderr) = TokioChildProcess::builder(command)
                    .stderr(Stdio::piped())
                    .spawn()
                    .with_context(|| format!("cannot run {:?}", server.command))?;
                if let Some(child_stderr) = child_stderr {
                    stderr.follow(name.to_string(), child_stderr);
                }
                Ok(client_config().serve(transport).await?)
            }
        }
    }
}

/// The last lines a child wrote to stderr. The child's stderr never reaches
/// the terminal directly (it would mix with the agent's output): each line
/// goes to `tracing` at info level with the server's name, and the last one
/// goes into the message when the server fails.
#[derive(Default)]
struct StderrTail {
    lines: Mutex<VecDeque<String>>,
    reader: Mutex<Option<JoinHandle<()>>>,
}

impl StderrTail {
    fn follow(self: &Arc<Self>, name: String, stderr: ChildStderr) {
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

    fn clear(&self) {
        self.lines.lock().unwrap_or_else(|p| p.into_inner()).clear();
    }

    /// `; last stderr line: ...` once the dead child's stderr has drained,
    /// or nothing when it wrote none.
    async fn drained_suffix(&self) -> String {
        let reader = self.reader.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(reader) = reader {
            let _ = tokio::time::timeout(STDERR_DRAIN, reader).await;
        }
        let lines = self.lines.lock().unwrap_or_else(|p| p.into_inner());
        match lines.back() {
            Some(line) => format!("; last stderr line: {line}"),
            None => String::new(),
        }
    }
}

fn seconds(duration: Duration) -> String {
    format!("{} s", duration.as_secs_f64())
}
