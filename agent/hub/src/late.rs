//! Servers still connecting when the first request goes out.
//!
//! Every server starts on its own tokio task. [`Hub::start`] waits for a
//! `required` server to the end of its startup timeout, and for the others
//! up to [`HubConfig::connect_wait`] in all (`None`: each to its own
//! timeout, what `nanohermes mcp` and `tools` use). A server not ready by
//! then is *pending*: `nanohermes` goes on without it, and
//! [`Hub::refresh`] — the step boundary — admits it once its start
//! finished, with its tools deferred behind `tool_search` unless pinned
//! ([`super::deferred`]), so a late server never reshapes the
//! declarations the model is using. A start that fails late is one notice.
//! Dropping the hub aborts a pending start, and with it the child's
//! process tree.

use std::time::Duration;

use rmcp::model::Tool;
use tokio::task::JoinHandle;

use super::connection::Connection;
use super::plan::{Planned, ToolFilter};
use super::status::{ServerState, ServerStatus};
use super::{Hub, HubConfig};
use nanohermes_config::ServerSpec;

/// How long `run` and the interactive mode wait for servers at start-up
/// before the first request goes out without the slow ones.
pub const DEFAULT_CONNECT_WAIT: Duration = Duration::from_secs(3);

/// What a started server brings besides its connection: prefixed,
/// trusted, call timeout, tool filter, where it runs.
pub(crate) type Meta = (bool, bool, Duration, ToolFilter, String);

/// How one server's start ended: its connection and first listing, or
/// the warning for the user.
pub(crate) type Outcome = Result<((Connection, Vec<Tool>), Meta), String>;

/// A server whose start had not finished when the hub was made.
pub(crate) struct PendingServer {
    pub(crate) spec: ServerSpec,
    handle: JoinHandle<Outcome>,
}

/// The pending starts; dropping it aborts them.
#[derive(Default)]
pub(crate) struct Pending(Vec<PendingServer>);

impl Drop for Pending {
    fn drop(&mut self) {
        self.0.iter().for_each(|p| p.handle.abort());
    }
}

impl Pending {
    /// The names of the servers still connecting.
    pub(crate) fn names(&self) -> Vec<String> {
        self.0.iter().map(|p| p.spec.name.clone()).collect()
    }
}

/// Starts `planned` on its own task.
pub(crate) fn spawn_start(planned: Planned) -> JoinHandle<Outcome> {
    tokio::spawn(async move {
        let where_ = planned.launch.describe();
        let meta = (
            planned.prefixed,
            planned.trusted,
            planned.call_timeout,
            planned.filter,
            where_,
        );
        // A built-in in this process whose tools are known is declared now
        // and started by its first call.
        let known = planned
            .on_first_use
            .then(|| planned.launch.listed_tools())
            .flatten();
        if let Some(tools) = known {
            let server = Connection::unstarted(
                planned.name,
                planned.launch,
                planned.startup_timeout,
                super::era::Era::Legacy,
            );
            return Ok(((server, tools), meta));
        }
        Connection::start(
            planned.name,
            planned.launch,
            planned.startup_timeout,
            planned.elicitor,
        )
        .await
        .map(|started| (started, meta))
    })
}

/// Waits for the starts as [`HubConfig::connect_wait`] says: each entry
/// is `None` (disabled), its outcome, or its handle when it is still
/// connecting.
pub(crate) async fn wait(
    starts: Vec<Option<JoinHandle<Outcome>>>,
    config: &HubConfig,
) -> Vec<Option<Result<Outcome, JoinHandle<Outcome>>>> {
    let deadline = config.connect_wait.map(|d| tokio::time::Instant::now() + d);
    let mut out = Vec::with_capacity(starts.len());
    for (start, spec) in starts.into_iter().zip(&config.servers) {
        let Some(mut handle) = start else {
            out.push(None);
            continue;
        };
        let outcome = match deadline.filter(|_| !spec.required) {
            None => joined(&spec.name, (&mut handle).await),
            Some(deadline) => match tokio::time::timeout_at(deadline, &mut handle).await {
                Ok(result) => joined(&spec.name, result),
                Err(_) => {
                    out.push(Some(Err(handle)));
                    continue;
                }
            },
        };
        out.push(Some(Ok(outcome)));
    }
    out
}

fn joined(name: &str, result: Result<Outcome, tokio::task::JoinError>) -> Outcome {
    result.unwrap_or_else(|e| {
        Err(format!(
            "server {name} cannot start: its start-up task failed ({e})"
        ))
    })
}

impl Hub {
    /// Keeps `spec`'s start running after [`Hub::start`] returns.
    pub(super) fn add_pending(&mut self, spec: &ServerSpec, handle: JoinHandle<Outcome>) {
        self.pending.0.push(PendingServer {
            spec: spec.clone(),
            handle,
        });
    }

    /// The servers still connecting (their tools join, deferred, at a
    /// later step boundary).
    pub fn connecting(&self) -> Vec<String> {
        self.pending.names()
    }

    /// Waits up to `bound` for the servers still connecting, then admits
    /// the ones that finished; returns one notice per server.
    pub async fn wait_for_servers(&mut self, bound: Duration) -> Vec<String> {
        let deadline = tokio::time::Instant::now() + bound;
        for pending in &mut self.pending.0 {
            // A finished start is only polled again when admitted below.
            let _ = tokio::time::timeout_at(deadline, async {
                while !pending.handle.is_finished() {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            })
            .await;
        }
        let notices = self.admit_finished().await;
        if !notices.is_empty() {
            self.rebuild();
        }
        notices
    }

    /// Admits every pending server whose start finished, without waiting
    /// for the others; the caller rebuilds the declarations when this
    /// returns notices.
    pub(super) async fn admit_finished(&mut self) -> Vec<String> {
        let (done, still): (Vec<_>, Vec<_>) = std::mem::take(&mut self.pending.0)
            .into_iter()
            .partition(|p| p.handle.is_finished());
        self.pending.0 = still;
        let mut notices = Vec::new();
        for mut pending in done {
            let name = pending.spec.name.clone();
            let outcome = joined(&name, (&mut pending.handle).await);
            let mut status = ServerStatus {
                name: name.clone(),
                where_: String::new(),
                state: ServerState::Disabled,
            };
            let notice = match self.admit(&pending.spec, outcome, &mut status) {
                Some(failure) => failure,
                None => {
                    self.deferral.late_servers.push(name.clone());
                    if let Some(server) = self.connections.last()
                        && let Some((peer, _, changed)) = server.watch()
                        && let Some(task) = super::handler::listen(&name, &peer, changed)
                    {
                        self.catalog.listeners.push(task);
                    }
                    format!(
                        "server {name} finished connecting after the first request; its tools are \
                         found with {}",
                        super::TOOL_SEARCH
                    )
                }
            };
            if let Some(slot) = self.statuses.iter_mut().find(|s| s.name == name) {
                if status.where_.is_empty() {
                    status.where_ = std::mem::take(&mut slot.where_);
                }
                *slot = status;
            }
            notices.push(notice);
        }
        notices
    }
}
