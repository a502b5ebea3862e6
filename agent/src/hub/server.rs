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
use mcp_tools::spawn::{self, EnvPolicy, ProcessTree, Signal};
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation, JsonObject, Tool,
};
use rmcp::service::{Peer, RoleClient, RunningService, ServiceError, ServiceExt};
use rmcp::transport::TokioChildProcess;
use tokio::io::AsyncBufReadExt;
use tokio::process::ChildStderr;
use tokio::task::JoinHandle;

use super::builtin::{Builtin, BuiltinOptions};
use super::{ExternalServer, result};

/// A connected MCP client, whatever the transport.
pub(crate) type Client = RunningService<RoleClient, ClientConfig>;

/// One live connection: the client and, for a child process, the tree it
/// leads, killed when the connection is replaced, shut down or dropped.
struct Connection {
    client: Client,
    tree: Option<ProcessTree>,
}

impl Connection {
    /// Closes the session (a child gets EOF on stdin, then SIGTERM, then
    /// SIGKILL: rmcp's graceful shutdown of the leader), then kills what is
    /// left of its tree (grandchildren, daemons that left the group).
    async fn close(self) {
        let _ = self.client.cancel().await;
        if let Some(tree) = self.tree {
            tree.signal_group(Signal::SIGTERM);
            tree.kill();
        }
    }
}

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
    Builtin(Builtin, ToolContext, BuiltinOptions),
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

/// What [`Server::mark_dead`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Death {
    /// The current connection is down, for this reason.
    Dead(String),
    /// The failure came from a connection that has since been replaced.
    Stale,
}

struct State {
    /// `None` once shut down.
    connection: Option<Connection>,
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
            let connection = launch.connect(&name, &stderr).await?;
            let tools = connection
                .client
                .list_all_tools()
                .await
                .context("listing its tools failed")?;
            anyhow::Ok((connection, tools))
        })
        .await;
        let (connection, tools) = match started {
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
            peer: connection.client.peer().clone(),
            connection: Some(connection),
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
        self.call_on(peer, generation, tool, arguments, timeout, max_output)
            .await
    }

    /// [`Server::call`] on connection `generation`, through `peer`.
    async fn call_on(
        &self,
        peer: Peer<RoleClient>,
        generation: u64,
        tool: &str,
        arguments: JsonObject,
        timeout: Duration,
        max_output: usize,
    ) -> String {
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
                    match self.mark_dead(generation, "the connection closed").await {
                        Death::Dead(reason) => self.not_running(&reason),
                        Death::Stale => format!(
                            "ERROR: the connection to server {} closed during the call to {tool}, \
                             and the server has been restarted since; check whether the call took \
                             effect, then call it again if needed",
                            self.name
                        ),
                    }
                } else {
                    format!("ERROR: call to {tool} on server {} failed: {e}", self.name)
                }
            }
        }
    }

    /// Stops the server; a child process gets EOF on stdin, then SIGTERM,
    /// then SIGKILL (rmcp's graceful shutdown), then the rest of its tree
    /// is killed.
    pub(crate) async fn shutdown(&self) {
        let connection = self.write().connection.take();
        if let Some(connection) = connection {
            connection.close().await;
        }
    }

    /// The current peer, unless the server is known or found to be down.
    fn live_peer(&self) -> Option<(Peer<RoleClient>, u64)> {
        let state = self.read();
        if state.dead.is_some() || state.connection.is_none() || state.peer.is_transport_closed() {
            return None;
        }
        Some((state.peer.clone(), state.generation))
    }

    /// Records that connection `generation` died. A failure from an older
    /// connection than the current one is [`Death::Stale`] and changes
    /// nothing: the server was restarted since and the new connection is
    /// not to be marked down for the old one's death.
    async fn mark_dead(&self, generation: u64, cause: &str) -> Death {
        // Checked before draining too: the stderr tail belongs to the
        // current child, which a stale failure must not wait on or consume.
        if self.read().generation != generation {
            return Death::Stale;
        }
        let reason = format!("{cause}{}", self.stderr.drained_suffix().await);
        let mut state = self.write();
        if state.generation != generation {
            return Death::Stale;
        }
        Death::Dead(state.dead.get_or_insert(reason).clone())
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
            if state.connection.is_none() {
                return Err(format!(
                    "ERROR: server {} is not running (the hub was shut down)",
                    self.name
                ));
            }
            (state.dead.clone(), state.generation)
        };
        let reason = match known {
            (Some(reason), _) => reason,
            (None, generation) => match self.mark_dead(generation, "the connection closed").await {
                Death::Dead(reason) => reason,
                // Only a restart bumps the generation, and this is the one
                // restart running: an old connection died, not this one.
                Death::Stale => "the connection closed".to_string(),
            },
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
            Ok(Ok(connection)) => {
                let peer = connection.client.peer().clone();
                let (old, generation) = {
                    let mut state = self.write();
                    state.generation += 1;
                    state.peer = peer.clone();
                    state.dead = None;
                    (state.connection.replace(connection), state.generation)
                };
                // Dropping the old connection cancels its service and kills
                // what is left of its tree (outside the lock: that reads /proc).
                drop(old);
                tracing::info!(server = %self.name, "restarted after: {reason}");
                return Ok((peer, generation));
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
    async fn connect(&self, name: &str, stderr: &Arc<StderrTail>) -> anyhow::Result<Connection> {
        match self {
            Launch::Builtin(builtin, ctx, options) => Ok(Connection {
                client: builtin.connect(ctx.clone(), *options).await?,
                tree: None,
            }),
            Launch::External(server, cwd) => {
                let (transport, tree) = spawn_external(name, server, cwd, stderr)?;
                // A failed `initialize` drops the tree: nothing is left running.
                let client = client_config().serve(transport).await?;
                Ok(Connection {
                    client,
                    tree: Some(tree),
                })
            }
        }
    }
}

/// Starts an external server through the kit's spawn policy: its own
/// process group, the allow-listed environment plus the variables the user
/// configured for it (never the model's key), stdio piped to rmcp.
fn spawn_external(
    name: &str,
    server: &ExternalServer,
    cwd: &std::path::Path,
    stderr: &Arc<StderrTail>,
) -> anyhow::Result<(TokioChildProcess, ProcessTree)> {
    let mut command = spawn::command(&server.command, &EnvPolicy::AllowList(server.env.clone()));
    command.args(&server.args).current_dir(cwd);
    // rmcp spawns the child itself (its builder sets stdin/stdout to pipes
    // and keeps `process_group(0)`): adopt the pid into a tree right after.
    let (command, marker) = command.into_command();
    let (transport, child_stderr) = TokioChildProcess::builder(command)
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot run {:?}", server.command))?;
    let pid = transport
        .id()
        .context("the server exited before it could be tracked")?;
    let tree = ProcessTree::adopt(pid, marker);
    if let Some(child_stderr) = child_stderr {
        stderr.follow(name.to_string(), child_stderr);
    }
    Ok((transport, tree))
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

#[cfg(test)]
mod tests {
    use super::*;

    /// `examples/fixture_server.rs`, which `cargo test` builds next to the
    /// test executables.
    fn fixture() -> ExternalServer {
        let exe = std::env::current_exe().expect("test executable path");
        let path = exe
            .parent()
            .and_then(std::path::Path::parent)
            .expect("target/<profile>/deps")
            .join("examples")
            .join(format!("fixture_server{}", std::env::consts::EXE_SUFFIX));
        assert!(
            path.exists(),
            "{} is missing: run `cargo test -p nanohermes` (it builds examples) or \
             `cargo build -p nanohermes --example fixture_server` first",
            path.display()
        );
        ExternalServer {
            name: "fx".into(),
            command: path.display().to_string(),
            args: vec![],
            env: vec![],
            trusted_annotations: true,
        }
    }

    const LONG: Duration = Duration::from_secs(30);

    #[tokio::test]
    async fn a_late_failure_of_an_old_connection_leaves_the_restarted_server_up() {
        let dir = tempfile::tempdir().unwrap();
        let launch = Launch::External(fixture(), dir.path().to_path_buf());
        let (server, _) = Server::start("fx".into(), launch, LONG).await.unwrap();
        let (old_peer, old_generation) = server.live_peer().unwrap();

        let crashed = server.call("crash", JsonObject::new(), LONG, 20_000).await;
        assert!(
            crashed.starts_with("ERROR: server fx is not running"),
            "{crashed}"
        );
        // The next call restarts it: a new process, a new generation.
        let pid = server.call("pid", JsonObject::new(), LONG, 20_000).await;
        assert!(pid.parse::<u32>().is_ok(), "{pid}");
        assert_ne!(server.live_peer().unwrap().1, old_generation);

        // A call still holding the old connection fails now, late.
        let late = server
            .call_on(
                old_peer,
                old_generation,
                "pid",
                JsonObject::new(),
                LONG,
                20_000,
            )
            .await;
        assert_eq!(
            late,
            "ERROR: the connection to server fx closed during the call to pid, and the server \
             has been restarted since; check whether the call took effect, then call it again if needed"
        );
        assert_eq!(
            server
                .mark_dead(old_generation, "the connection closed")
                .await,
            Death::Stale
        );
        // The restarted server is not marked down: same process, no second
        // restart (which would be refused: MAX_RESTARTS is 1).
        assert!(server.is_running());
        assert_eq!(
            server.call("pid", JsonObject::new(), LONG, 20_000).await,
            pid
        );
        server.shutdown().await;
    }
}
