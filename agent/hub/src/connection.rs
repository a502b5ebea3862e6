//! The client side of one MCP server: a [`Connection`] holds how the
//! server starts ([`Launch`]), its current [`Link`] (one live MCP session:
//! the rmcp client, its era and, for a child, its process tree; connect.rs),
//! and the restart-once rule. A restart replaces the link; the connection,
//! and the hub's index of it, stay.
//!
//! A call reads the current link under a short read lock, clones the peer
//! handle and releases the lock before sending, so calls never wait on one
//! another; only a restart takes the write lock, for the swap.
//!
//! Death is noticed two ways: a call fails because the transport closed
//! (that call returns `ERROR: server NAME is not running (...)`), or the next
//! call finds the link already closed. The next call after a death restarts
//! the server once ([`MAX_RESTARTS`]) and, if that works, goes through; a
//! server that dies again stays down and every call says so.

use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Duration;

use anyhow::Context as _;
use mcp_tools::CallGrants;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, CancelledNotification,
    CancelledNotificationParam, ClientRequest, JsonObject, MetaObject, RequestId,
    RequestMetaObject, ServerResult, Tool,
};
use rmcp::service::{Peer, PeerRequestOptions, RoleClient, RunningService, ServiceError};

use super::connect::{Launch, Link};
use super::crash;
pub(crate) use super::crash::StderrTail;
use super::era::Era;
use super::handler::{ListChanged, Notified};
use super::input::{self, MAX_INPUT_ROUNDS, SharedElicitor};
use super::{progress_cap, result};

/// A connected MCP client, whatever the transport.
pub(crate) type Client = RunningService<RoleClient, Notified>;

/// How many times a dead server is restarted over the hub's life.
pub const MAX_RESTARTS: u32 = 1;

/// The client side of one server: its launch recipe, its current link
/// and its restarts (see the module docs).
pub(crate) struct Connection {
    name: String,
    launch: Launch,
    startup_timeout: Duration,
    state: RwLock<State>,
    restart_lock: tokio::sync::Mutex<()>,
    stderr: Arc<StderrTail>,
    /// Who answers the server's elicitations (input.rs).
    elicitor: Option<SharedElicitor>,
}

/// What [`Connection::mark_dead`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Death {
    /// The current link is down, for this reason.
    Dead(String),
    /// The failure came from a link that has since been replaced.
    Stale,
}

struct State {
    /// `None` before the first start of a server started on first use,
    /// and once shut down.
    link: Option<Link>,
    /// `None` until the first start.
    peer: Option<Peer<RoleClient>>,
    /// Declared but not started yet: the first call starts it.
    unstarted: bool,
    /// The hub shut it down: nothing starts it again.
    shut_down: bool,
    /// Bumped by every restart, so a late failure of an old link does not
    /// mark the new one dead.
    generation: u64,
    /// Why the server is down, once that is known.
    dead: Option<String>,
    restarts: u32,
    era: Era,
}

impl Connection {
    /// Starts the server and lists its tools (following pagination), all
    /// within `startup_timeout`; `elicitor` answers its elicitations. The
    /// error is one line for the hub's warnings.
    pub(crate) async fn start(
        name: String,
        launch: Launch,
        startup_timeout: Duration,
        elicitor: Option<SharedElicitor>,
    ) -> Result<(Connection, Vec<Tool>), String> {
        let stderr = Arc::new(StderrTail::default());
        let started = tokio::time::timeout(startup_timeout, async {
            let link = launch.connect(&name, &stderr, elicitor.as_ref()).await?;
            let tools = link
                .client
                .list_all_tools()
                .await
                .context("listing its tools failed")?;
            anyhow::Ok((link, tools))
        })
        .await;
        let (link, tools) = match started {
            Ok(Ok(started)) => started,
            Ok(Err(e)) => {
                let check = crash::check(&launch);
                let why = crash::start_failure(&stderr, &format!("{e:#}"), &check).await;
                return Err(format!("server {name} failed to start: {why}"));
            }
            Err(_) => {
                return Err(format!(
                    "server {name} did not start within {} (raise \
                     mcp_servers.{name}.startup_timeout_sec if it needs longer, as a first `npx` \
                     run that downloads may){}",
                    seconds(startup_timeout),
                    stderr.drained_suffix().await
                ));
            }
        };
        let state = State {
            era: link.era,
            peer: Some(link.client.peer().clone()),
            unstarted: false,
            shut_down: false,
            link: Some(link),
            generation: 0,
            dead: None,
            restarts: 0,
        };
        let server = Connection {
            name,
            launch,
            startup_timeout,
            state: RwLock::new(state),
            restart_lock: tokio::sync::Mutex::new(()),
            stderr,
            elicitor,
        };
        Ok((server, tools))
    }

    /// A server whose tools are already known (a built-in's, from its
    /// committed listing), declared without starting it: the first call,
    /// or any other request, starts it in [`Connection::restart`]'s place and
    /// without counting as a restart. Why: a run starts faster, keeps less
    /// code in memory and exits sooner by starting only the built-ins its
    /// model calls. Its tool list never changes, so there is nothing to
    /// listen to before it runs; it has no resources or prompts (checked by
    /// `the_committed_listing_is_what_each_builtin_lists`).
    pub(crate) fn unstarted(
        name: String,
        launch: Launch,
        startup_timeout: Duration,
        era: Era,
    ) -> Connection {
        let state = State {
            link: None,
            peer: None,
            unstarted: true,
            shut_down: false,
            generation: 0,
            dead: None,
            restarts: 0,
            era,
        };
        Connection {
            name,
            launch,
            startup_timeout,
            state: RwLock::new(state),
            restart_lock: tokio::sync::Mutex::new(()),
            stderr: Arc::new(StderrTail::default()),
            elicitor: None,
        }
    }

    /// The server's name.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// Whether the link is open and not known to be dead, or the
    /// server waits for its first use.
    pub(crate) fn is_running(&self) -> bool {
        self.read().unstarted || self.live_peer().is_some()
    }

    /// Calls `tool` with `arguments` and renders the answer for the model.
    /// Never fails: every problem is an `ERROR: ...` string.
    #[cfg(test)]
    pub(crate) async fn call(
        &self,
        tool: &str,
        arguments: JsonObject,
        timeout: Duration,
        max_output: usize,
    ) -> String {
        self.call_granted(tool, arguments, CallGrants::none(), timeout, max_output)
            .await
    }

    /// [`Connection::call`] with `grants` in the request's `_meta`.
    pub(crate) async fn call_granted(
        &self,
        tool: &str,
        arguments: JsonObject,
        grants: CallGrants,
        timeout: Duration,
        max_output: usize,
    ) -> String {
        match self
            .call_result_granted(tool, arguments, grants, timeout, max_output)
            .await
        {
            Ok(answer) => result::render(&answer, max_output),
            Err(message) => message,
        }
    }

    /// Calls `tool` and returns the server's answer as given, or the
    /// `ERROR: ...` line [`Connection::call`] would return.
    pub(crate) async fn call_result(
        &self,
        tool: &str,
        arguments: JsonObject,
        timeout: Duration,
        max_output: usize,
    ) -> Result<CallToolResult, String> {
        self.call_result_granted(tool, arguments, CallGrants::none(), timeout, max_output)
            .await
    }

    /// [`Connection::call_result`] with `grants` in the request's `_meta`.
    async fn call_result_granted(
        &self,
        tool: &str,
        arguments: JsonObject,
        grants: CallGrants,
        timeout: Duration,
        max_output: usize,
    ) -> Result<CallToolResult, String> {
        let (peer, generation) = match self.live_peer() {
            Some(live) => live,
            None => self.restart().await?,
        };
        let mut params = CallToolRequestParams::new(tool.to_string()).with_arguments(arguments);
        if !grants.is_empty() {
            params.meta = Some(RequestMetaObject(MetaObject(grants.to_meta())));
        }
        self.call_on(peer, generation, params, timeout, max_output)
            .await
    }

    /// [`Connection::call_result`] on link `generation`, through `peer`.
    /// The timer restarts on each progress notification of this call, up to
    /// [`progress_cap`] in all.
    async fn call_on(
        &self,
        peer: Peer<RoleClient>,
        generation: u64,
        mut params: CallToolRequestParams,
        timeout: Duration,
        max_output: usize,
    ) -> Result<CallToolResult, String> {
        let tool = params.name.to_string();
        let tool = tool.as_str();
        let cap = progress_cap(timeout);
        let mut rounds = 0;
        let answer = loop {
            let answer = self.send_call(&peer, params.clone(), timeout, cap).await;
            // MRTR (2026-07-28): fulfil the server's input requests and send
            // the call again: a new request (so a new JSON-RPC id), the
            // answers, and `requestState` exactly as received, or none.
            let Ok(ServerResult::InputRequiredResult(asked)) = answer else {
                break answer;
            };
            rounds += 1;
            if rounds > MAX_INPUT_ROUNDS {
                return Err(format!(
                    "ERROR: server {} still asked for input after {MAX_INPUT_ROUNDS} rounds of the \
                     call to {tool}; the call was abandoned",
                    self.name
                ));
            }
            let requests = asked.input_requests.unwrap_or_default();
            params.input_responses =
                match input::fulfil(self.elicitor.as_ref(), &self.name, requests).await {
                    Ok(responses) if responses.is_empty() => None,
                    Ok(responses) => Some(responses),
                    Err(e) => {
                        return Err(format!(
                            "ERROR: server {} needs input for the call to {tool} that NanoHermes \
                             cannot give: {e}",
                            self.name
                        ));
                    }
                };
            params.request_state = asked.request_state;
        };
        let key = format!("mcp_servers.{}.tool_timeout_sec", self.name);
        match answer {
            Ok(ServerResult::CallToolResult(answer)) => Ok(answer),
            Ok(other) => Err(format!(
                "ERROR: server {} answered the call to {tool} with something other than a tool \
                 result ({}); the call may need a feature NanoHermes lacks",
                self.name,
                mcp_tools::clamp(&format!("{other:?}"), 200)
            )),
            Err(ServiceError::Timeout { timeout: hit }) if hit == cap && cap != timeout => {
                Err(format!(
                    "ERROR: tool {tool} on server {} was still running after {} (the cap of 10 \
                     times the call timeout, at most 1 h, even while it reports progress); the \
                     call was cancelled; raise {key} if it needs longer",
                    self.name,
                    seconds(cap)
                ))
            }
            Err(ServiceError::Timeout { .. }) => Err(format!(
                "ERROR: tool {tool} on server {} timed out after {} without progress; the call \
                 was cancelled; raise {key} if it needs longer",
                self.name,
                seconds(timeout)
            )),
            Err(ServiceError::McpError(e)) => Err(mcp_tools::clamp(
                &format!(
                    "ERROR: server {} rejected the call to {tool}: {} (JSON-RPC error {}{})",
                    self.name,
                    e.message,
                    e.code.0,
                    e.data.map(|d| format!(", data: {d}")).unwrap_or_default()
                ),
                max_output,
            )),
            Err(e) => {
                let closed = matches!(
                    e,
                    ServiceError::TransportClosed | ServiceError::TransportSend(_)
                );
                if closed || peer.is_transport_closed() {
                    // The transport's own words name rmcp, not the cause:
                    // kept for debugging only (crash.rs says what failed).
                    tracing::debug!(server = %self.name, "call to {tool} failed: {e}");
                    Err(
                        match self
                            .mark_dead(generation, &format!(" during the call to {tool}"))
                            .await
                        {
                            Death::Dead(reason) => self.not_running(&reason),
                            Death::Stale => format!(
                                "ERROR: the connection to server {} closed during the call to {tool}, \
                             and the server has been restarted since; check whether the call took \
                             effect, then call it again if needed",
                                self.name
                            ),
                        },
                    )
                } else {
                    Err(format!(
                        "ERROR: call to {tool} on server {} failed: {e}",
                        self.name
                    ))
                }
            }
        }
    }

    /// Sends one `tools/call` and waits for its answer; the timer restarts
    /// on each progress notification, up to `cap` in all.
    async fn send_call(
        &self,
        peer: &Peer<RoleClient>,
        mut params: CallToolRequestParams,
        timeout: Duration,
        cap: Duration,
    ) -> Result<ServerResult, ServiceError> {
        let mut options = PeerRequestOptions::with_timeout(timeout)
            .reset_timeout_on_progress()
            .with_max_total_timeout(cap);
        // The grants go in the request's own `_meta` (its extensions):
        // a server reads that, and an in-process server, which gets the
        // request unserialised, never sees `params.meta`.
        if let Some(meta) = params.meta.take() {
            options = options.with_meta(meta);
        }
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let handle = peer.send_request_with_option(request, options).await?;
        // A call dropped midway (the user interrupted the step) still
        // tells the server to stop.
        let guard = CancelOnDrop::new(peer, handle.id.clone());
        let answer = handle.await_response().await;
        guard.disarm();
        answer
    }

    /// The era of the current link.
    pub(crate) fn era(&self) -> Era {
        self.read().era
    }

    /// Stops the server; a child process gets EOF on stdin, then SIGTERM,
    /// then SIGKILL (rmcp's graceful shutdown), then the rest of its tree
    /// is killed.
    pub(crate) async fn shutdown(&self) {
        let link = {
            let mut state = self.write();
            state.unstarted = false;
            state.shut_down = true;
            state.link.take()
        };
        if let Some(link) = link {
            link.close().await;
        }
    }

    /// The current peer, unless the server is known or found to be down.
    fn live_peer(&self) -> Option<(Peer<RoleClient>, u64)> {
        let state = self.read();
        let peer = state.peer.as_ref()?;
        if state.dead.is_some() || state.link.is_none() || peer.is_transport_closed() {
            return None;
        }
        Some((peer.clone(), state.generation))
    }

    /// Records that link `generation` died (`during`: " during the
    /// call to T", or empty), with why: how its process ended, the end of
    /// its stderr, what to check ([`crash`]). A failure from an older
    /// link than the current one is [`Death::Stale`] and changes
    /// nothing: the server was restarted since and the new link is
    /// not to be marked down for the old one's death.
    async fn mark_dead(&self, generation: u64, during: &str) -> Death {
        // Checked before draining too: the stderr tail belongs to the
        // current child, which a stale failure must not wait on or consume.
        if self.read().generation != generation {
            return Death::Stale;
        }
        let said = self.stderr.drained_suffix().await;
        let what = match self.stderr.exit().await {
            Some(exit) => format!("it {exit}{during}"),
            None => format!("the connection closed{during}"),
        };
        let reason = format!("{what}{said}{}", crash::check(&self.launch));
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
        if self.read().unstarted {
            return self.start_first().await;
        }
        let known = {
            let state = self.read();
            if state.shut_down {
                return Err(format!(
                    "ERROR: server {} is not running (the hub was shut down)",
                    self.name
                ));
            }
            (state.dead.clone(), state.generation)
        };
        let reason = match known {
            (Some(reason), _) => reason,
            (None, generation) => match self.mark_dead(generation, "").await {
                Death::Dead(reason) => reason,
                // Only a restart bumps the generation, and this is the one
                // restart running: an old link died, not this one.
                Death::Stale => "the connection closed".to_string(),
            },
        };
        if self.read().restarts >= MAX_RESTARTS {
            return Err(self.not_running(&reason));
        }
        self.write().restarts += 1;
        self.stderr.clear();
        let failure = match self.connect_once().await {
            Ok(link) => {
                let peer = link.client.peer().clone();
                let (old, generation) = {
                    let mut state = self.write();
                    state.generation += 1;
                    state.peer = Some(peer.clone());
                    state.era = link.era;
                    state.dead = None;
                    (state.link.replace(link), state.generation)
                };
                // Dropping the old link cancels its service and kills
                // what is left of its tree (outside the lock: that reads /proc).
                drop(old);
                tracing::info!(server = %self.name, "restarted after: {reason}");
                return Ok((peer, generation));
            }
            Err(failure) => failure,
        };
        let why = crash::start_failure(&self.stderr, &failure, "").await;
        let reason = format!("{reason}; the restart failed: {why}");
        self.write().dead = Some(reason.clone());
        Err(self.not_running(&reason))
    }

    /// One attempt to connect within the startup timeout; the failure as
    /// one phrase.
    async fn connect_once(&self) -> Result<Link, String> {
        let attempt = self
            .launch
            .connect(&self.name, &self.stderr, self.elicitor.as_ref());
        match tokio::time::timeout(self.startup_timeout, attempt).await {
            Ok(Ok(link)) => Ok(link),
            Ok(Err(e)) => Err(format!("{e:#}")),
            Err(_) => Err(format!(
                "no answer within {}",
                seconds(self.startup_timeout)
            )),
        }
    }

    /// The first start of an [`unstarted`](Connection::unstarted) server
    /// (under the restart lock). It keeps generation 0, so the hub does not
    /// list tools it already has; a failure leaves the server down, with
    /// the one restart still to come.
    async fn start_first(&self) -> Result<(Peer<RoleClient>, u64), String> {
        let failure = match self.connect_once().await {
            Ok(link) => {
                let peer = link.client.peer().clone();
                let refused = {
                    let mut state = self.write();
                    if state.shut_down {
                        Some(link)
                    } else {
                        state.unstarted = false;
                        state.peer = Some(peer.clone());
                        state.era = link.era;
                        state.link = Some(link);
                        None
                    }
                };
                // Shut down while it started: close what just started.
                if let Some(link) = refused {
                    link.close().await;
                    return Err(format!(
                        "ERROR: server {} is not running (the hub was shut down)",
                        self.name
                    ));
                }
                return Ok((peer, 0));
            }
            Err(failure) => failure,
        };
        let check = crash::check(&self.launch);
        let why = crash::start_failure(&self.stderr, &failure, &check).await;
        let reason = format!("it failed to start: {why}");
        {
            let mut state = self.write();
            state.unstarted = false;
            state.dead = Some(reason.clone());
        }
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

// For refresh.rs and resources.rs (H11): tool list changes and meta-tools.
impl Connection {
    /// The live link's peer, its generation and the list-changed
    /// flags its handler sets; `None` while the server is down.
    pub(crate) fn watch(&self) -> Option<(Peer<RoleClient>, u64, Arc<ListChanged>)> {
        let (peer, generation) = self.live_peer()?;
        let state = self.read();
        let changed = state.link.as_ref()?.client.service().changed();
        (state.generation == generation).then_some((peer, generation, changed))
    }

    /// The live peer for a request other than a tool call, restarting a
    /// dead server the way [`Connection::call`] does.
    pub(crate) async fn peer(&self) -> Result<Peer<RoleClient>, String> {
        match self.live_peer() {
            Some((peer, _)) => Ok(peer),
            None => self.restart().await.map(|(peer, _)| peer),
        }
    }
}

/// Sends `notifications/cancelled` for a request whose caller stopped
/// waiting, unless [`disarm`](CancelOnDrop::disarm)ed first.
struct CancelOnDrop {
    peer: Option<Peer<RoleClient>>,
    id: RequestId,
}

impl CancelOnDrop {
    fn new(peer: &Peer<RoleClient>, id: RequestId) -> CancelOnDrop {
        CancelOnDrop {
            peer: Some(peer.clone()),
            id,
        }
    }

    fn disarm(mut self) {
        self.peer = None;
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let Some(peer) = self.peer.take() else {
            return;
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let notification = CancelledNotification::new(CancelledNotificationParam::new(
            Some(self.id.clone()),
            Some("the caller stopped waiting".to_owned()),
        ));
        runtime.spawn(async move {
            let _ = peer.send_notification(notification.into()).await;
        });
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
    fn fixture() -> Launch {
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
        let child = super::super::connect::ChildSpec {
            program: path,
            args: vec![],
            env: mcp_tools::spawn::EnvPolicy::AllowList(vec![]),
            cwd: std::env::temp_dir(),
        };
        Launch::Child(child, super::super::connect::EraHint::Modern)
    }

    const LONG: Duration = Duration::from_secs(30);

    #[tokio::test]
    async fn a_late_failure_of_an_old_connection_leaves_the_restarted_server_up() {
        let launch = fixture();
        let (server, _) = Connection::start("fx".into(), launch, LONG, None)
            .await
            .unwrap();
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

        // A call still holding the old link fails now, late.
        let late = server
            .call_on(
                old_peer,
                old_generation,
                CallToolRequestParams::new("pid").with_arguments(JsonObject::new()),
                LONG,
                20_000,
            )
            .await
            .unwrap_err();
        assert_eq!(
            late,
            "ERROR: the connection to server fx closed during the call to pid, and the server \
             has been restarted since; check whether the call took effect, then call it again if needed"
        );
        assert_eq!(server.mark_dead(old_generation, "").await, Death::Stale);
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
