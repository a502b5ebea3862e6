//! The MCP client hub: every tool the model can call, from every server, in
//! one list, and one way to call them.
//!
//! [`Hub::start`] starts every enabled [`ServerSpec`] at once, each within
//! its own `startup_timeout`, on its transport: a built-in in-process
//! ([`Builtin`], typed in-memory channels), a built-in as a child process
//! (`nanohermes builtin NAME`, [`nanohermes_builtins::serve_builtin_main`]), an external program
//! over stdio, or a server over Streamable HTTP. It lists their tools
//! (following pagination), keeps those the spec's `enabled_tools` then
//! `disabled_tools` allow, names them and declares them to the model;
//! [`Hub::call`] routes a call by that name to its server and returns the
//! string the model sees; [`Hub::call_raw`] and [`Hub::status`] serve
//! `nanohermes mcp`.
//!
//! Where things are (private modules; the public ones document themselves):
//! - *Connections.* `connection.rs`: a `Connection` is the client side of
//!   one server: its launch recipe, its current `Link` (one live MCP
//!   session), its calls and the restart-once rule; `crash.rs` says why it
//!   died. `connect.rs` opens a link (in-process, stdio child, or HTTP:
//!   `http.rs`, `stream_first.rs`) in the right era ([`era`]).
//!   `handler.rs`: `Notified`, the rmcp `ClientHandler` of every link (who
//!   the agent is, elicitation through [`input`], list-changed flags).
//! - *Catalog.* `catalog.rs`: the tool table (`Catalog`: each server's last
//!   listing) and `Hub::rebuild`, which names ([`names`]), sanitises
//!   ([`schema`]), trims ([`trim`]) and declares (`declarations.rs`) every
//!   tool, defers ([`deferred`]) and adds the meta-tools; and
//!   [`Hub::facts`], what the permission gate knows of a tool.
//!   `refresh.rs`: the step-boundary refresh, [`Hub::refresh`].
//! - *Start.* `start.rs` ([`HubConfig`], [`Hub::start`]), `plan.rs` (from a
//!   [`ServerSpec`] to a launch recipe), `late.rs` (servers still
//!   connecting), `status.rs`; `toolbox.rs` adapts the hub to core's
//!   `ToolBox`.
//!
//! Contract:
//! - **Startup fails only on a `required` server.** A server that cannot
//!   start, or does not finish its handshake and `tools/list` within its
//!   startup timeout, is left out, named once in [`Hub::warnings`] (with the
//!   last line of its stderr) and [`ServerState::Failed`] in [`Hub::status`];
//!   the others work. A `required` one makes [`Hub::start`] fail with that
//!   message, as does a bad configuration (an unusable workspace, an invalid
//!   or duplicate server name). `enabled = false` servers are not started.
//! - **Both protocol eras** ([`era`]): 2026-07-28 (`server/discover`,
//!   `_meta` on every request) with servers that speak it, `initialize`
//!   with the others, after a short probe whose answer is remembered per
//!   server configuration in [`HubConfig::era_cache`].
//! - **Names.** Built-in tools keep their plain names (`read_file`); an
//!   external server's tools are `SERVER__TOOL`. Every name matches
//!   `^[a-zA-Z0-9_-]{1,64}$` and starts with a letter; a longer one is cut and
//!   ends in a 32-bit FNV-1a hash of the raw name ([`names::fnv1a_32`], the
//!   hub's one hash, which also keys the era cache). A collision keeps the first tool's
//!   name and gives the later one `_2`, `_3`, ... with a warning; no tool is
//!   dropped. The order is fixed: built-ins in configuration order, then
//!   external servers in configuration order, each server's tools sorted by
//!   raw name.
//! - **Declarations** are computed at start, and again by [`Hub::refresh`]
//!   when a server's tools changed, from each tool's input
//!   schema, sanitised on its own ([`schema::sanitize`]): no `$schema`, no
//!   `$ref`/`$defs`, an object root with `properties`; then trimmed by
//!   [`trim::trim`] (no `null` alternative on optional properties, no
//!   Rust-type formats nor an integer's zero minimum), since every
//!   request carries every declaration.
//! - **Tool list changes** (`tools/list_changed`) only set a flag; the loop
//!   calls [`Hub::refresh`] at each step boundary, which lists that
//!   server's tools again and rebuilds the declarations (refresh.rs,
//!   catalog.rs). A
//!   failed listing keeps the old tools (one notice); a removed tool
//!   answers `ERROR: tool X is no longer offered by server S`.
//! - **Resources and prompts** reach the model through four read-only
//!   meta-tools ([`resources`]), declared only while a running server
//!   advertises the capability; skills through the read-only `skill`
//!   meta-tool ([`skills`]), declared only when there are skills.
//! - **Subagents** ([`agents`]): a server offering `run_task` is an agent
//!   the model can hand a whole task to (`NAME__run_task`); the read-only
//!   `agent_list` meta-tool names the ones offered and what each is for.
//!   Every external stdio child gets `NANOHERMES_AGENT_DEPTH` = this
//!   process's depth + 1; at `max_agent_depth` no external `run_task` is
//!   offered, with one warning per server.
//! - **Deferred tools** ([`deferred`]): past a budget (16 000 declaration
//!   bytes or 40 tools) the tools of servers nobody pinned are not
//!   declared; the `tool_search` meta-tool finds them (BM25, [`search`])
//!   and a match, or a deferred tool called by name, is declared from the
//!   next step on. Servers not ready within [`HubConfig::connect_wait`]
//!   keep connecting and join at a later step, deferred (`late.rs`).
//! - **Calls never fail.** Every problem is a string starting with `ERROR: `:
//!   an unknown tool (with the list of available ones), a tool error
//!   (`isError`), a JSON-RPC error, a timeout (`timed out after`; the call
//!   is cancelled on the server), or a dead server. Results are rendered by
//!   [`result::render`] and clamped to `max_output`.
//! - **Timeouts.** Each call may go `tool_timeout` (default 60 s) without an
//!   answer or a progress notification; each progress notification restarts
//!   that timer, up to [`progress_cap`] in all (10 times the timeout, at most
//!   1 h). The message names the key to raise
//!   (`mcp_servers.NAME.tool_timeout_sec`, `startup_timeout_sec`). A built-in
//!   whose tools stop themselves ([`nanohermes_builtins::Hosted::max_call_time`]: `run_command`
//!   after at most 600 s, git after 600 s, `web_fetch` after its fetch
//!   timeout) never gets less than [`call_timeout_over`] that maximum, so a
//!   600 s `run_command` reports its own timeout with its output.
//! - **Trust.** A tool is read-only for the policy only when its server
//!   says so (`readOnlyHint`) and [`trusted_annotations`] vouches for the
//!   spec's origin (today every origin: built-ins, the user's config,
//!   `--mcp`, and a trusted project's files, which are only read once the
//!   user trusted the project).
//! - **Offered tools.** [`Hub::offer_only`] narrows the declarations to what
//!   a policy allows; the policy still gates every call.
//! - **Dead servers.** The call during which a server dies returns
//!   `ERROR: server NAME is not running (REASON); it will be restarted on the
//!   next call`, REASON leading with what failed ([`crash`]): `it exited
//!   with code 3 during the call to T` (or `was killed by signal 9
//!   (SIGKILL)`), `its stderr ended with: LINE`, `check its command: `CMD``;
//!   a failed start says the same, with the transport's own error last, as
//!   `(details: ...)`. The next call restarts it (once in the hub's life) and goes
//!   through. After a second death every call returns `ERROR: server NAME is
//!   not running (REASON); it was already restarted once and stays down`.
//!   Other servers are not affected. Each restart opens a new link with a
//!   new generation: a failure that arrives from an old link after the
//!   restart never marks the new one down (its call says the server was
//!   restarted since; connection.rs).
//! - **No call waits for another.** Calls take no lock across an await;
//!   calls to one server are multiplexed on its connection, calls to
//!   different servers run in parallel. Only a restart serialises, and only
//!   the calls to the server being restarted.
//! - **A child's stderr never reaches stdout.** It is piped, logged through
//!   `tracing` (info level, with the server name), and its last line is quoted
//!   when the server fails, with its exit status (recorded when rmcp reaps
//!   the child, through a process-wrap layer: crash.rs).
//! - **Children.** A child server is started through the kit's spawn
//!   policy ([`mcp_tools::spawn`]): it leads its own process group (a
//!   terminal's Ctrl-C reaches only the agent); an external one's
//!   environment is the allow-list plus its `env_vars` and `env` (see
//!   [`Hub::withheld_env`]), a built-in child's is the user's minus secrets;
//!   never the model's key; and its whole tree (`npx` → `npm exec` → `node`, daemons that
//!   called `setsid`) is killed when it is shut down, restarted, or the agent
//!   exits.
//! - [`Hub::shutdown`] closes every connection; children get EOF on stdin,
//!   then SIGTERM, then SIGKILL, then the rest of their tree is killed.

pub mod agents;
pub mod auth;
mod catalog;
mod connect;
mod connection;
mod crash;
mod declarations;
pub mod deferred;
pub mod era;
mod handler;
mod http;
pub mod input;
mod late;
pub mod names;
mod plan;
mod refresh;
pub mod resources;
pub mod result;
pub mod schema;
pub mod search;
pub mod skills;
mod start;
mod status;
mod stream_first;
mod toolbox;
pub mod trim;

use std::collections::HashMap;
use std::time::Duration;

use std::sync::Arc;

use anyhow::bail;
use futures::future::join_all;

use rmcp::model::{CallToolResult, JsonObject, Tool, ToolAnnotations};
use serde_json::{Map, Value, json};

use nanohermes_config::ServerSpec;
use nanohermes_core::policy::Policy;
use nanohermes_core::toolbox::ToolFacts;

pub use agents::{
    AGENT_DEPTH_VAR, AGENT_LIST, DEFAULT_MAX_AGENT_DEPTH, PROMPT_CACHE_KEY_VAR, RUN_TASK,
    ServeCommand, SubagentModel, SubagentTally, agent_depth, depth_refusal, is_nanohermes_serve,
    may_mount_subagents,
};
pub use catalog::no_longer_offered;
pub use connection::MAX_RESTARTS;
pub use deferred::{DeferConfig, DeferredTool, Surfaced, TOOL_SEARCH};
pub use era::Era;
pub use late::DEFAULT_CONNECT_WAIT;
pub use nanohermes_builtins::{Builtin, BuiltinOptions};
pub use plan::oauth_settings;
pub use plan::trusted_annotations;
pub use refresh::REFRESH_TIMEOUT;
pub use start::HubConfig;
pub use status::{ServerState, ServerStatus};

use connection::Connection;
use names::NameTable;
use plan::ToolFilter;

/// How long a tool call may go without an answer or a progress
/// notification when the spec does not say (`tool_timeout_sec`).
pub const DEFAULT_CALL_TIMEOUT: Duration = nanohermes_config::servers::DEFAULT_TOOL_TIMEOUT;

/// The absolute cap on one call that keeps reporting progress: 10 times its
/// timeout, at most [`MAX_PROGRESS_CAP`] (and never below the timeout).
pub fn progress_cap(timeout: Duration) -> Duration {
    (timeout * 10).min(MAX_PROGRESS_CAP).max(timeout)
}

/// The longest a call that keeps reporting progress may run, unless its
/// own timeout is longer.
pub const MAX_PROGRESS_CAP: Duration = Duration::from_secs(3600);

/// How far the hub's timeout sits above a server's own maximum, so the
/// server's own timeout fires first and its answer (which says what was
/// killed, with the output so far) reaches the model, not the hub's.
pub const CALL_TIMEOUT_MARGIN: Duration = Duration::from_secs(60);

/// The hub's smallest call timeout for a built-in whose tools stop
/// themselves after at most `own_max`: above it by [`CALL_TIMEOUT_MARGIN`],
/// and never below [`DEFAULT_CALL_TIMEOUT`]. A configured
/// `tool_timeout_sec` can raise it, not lower it.
pub fn call_timeout_over(own_max: Option<Duration>) -> Duration {
    match own_max {
        Some(max) => (max + CALL_TIMEOUT_MARGIN).max(DEFAULT_CALL_TIMEOUT),
        None => DEFAULT_CALL_TIMEOUT,
    }
}

/// At most this many names are listed in the unknown-tool error.
const LISTED_NAMES: usize = 40;

/// One tool as the hub knows it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolInfo {
    /// The name the model sees and calls.
    pub name: String,
    /// The server that owns it.
    pub server: String,
    /// The tool's name on its server.
    pub raw_name: String,
    /// The tool's description (empty when the server gave none).
    pub description: String,
    /// Whether the tool counts as read-only: its server annotates it
    /// `readOnlyHint: true` and the server is trusted (a built-in, or an
    /// external server whose origin [`trusted_annotations`] vouches for).
    pub read_only: bool,
    /// Whether the tool counts as destructive: not read-only, and not
    /// annotated `destructiveHint: false` by a trusted server (the MCP
    /// default for a tool that is not read-only is destructive).
    pub destructive: bool,
    /// Its server is a built-in (its tools keep their plain names).
    pub builtin: bool,
    /// The server's annotations, as given.
    pub annotations: Option<ToolAnnotations>,
    /// The input schema exactly as the server listed it (JSON Schema
    /// 2020-12 kept whole, network `$ref`s never fetched); the model sees a
    /// sanitised copy ([`schema::sanitize`]).
    pub input_schema: Arc<JsonObject>,
}

impl ToolInfo {
    /// What the permission gate knows about it.
    pub fn facts(&self) -> ToolFacts {
        ToolFacts {
            read_only: self.read_only,
            destructive: self.destructive,
            builtin: self.builtin,
            server: self.server.clone(),
            raw_name: self.raw_name.clone(),
        }
    }
}

/// The running servers and their merged tools. `Send + Sync`: share it as
/// `Arc<Hub>`.
pub struct Hub {
    /// One per started server: the client side, restarts included
    /// (connection.rs).
    connections: Vec<Connection>,
    /// Per server, in `connections` order.
    call_timeouts: Vec<Duration>,
    /// Per server, in `connections` order: which of its tools may be called.
    filters: Vec<ToolFilter>,
    tools: Vec<ToolInfo>,
    declarations: declarations::Declarations,
    /// Model name → (index in `tools`, index in `connections`).
    by_name: HashMap<String, (usize, usize)>,
    warnings: Vec<String>,
    max_output: usize,
    /// Every configured server in configuration order, for [`Hub::status`].
    statuses: Vec<ServerStatus>,
    /// Listings, meta-tools and removed tools, for rebuilding the table
    /// when a server's tools change (catalog.rs).
    catalog: catalog::Catalog,
    /// The skills the `skill` meta-tool offers ([`skills`]).
    skills: Vec<nanohermes_core::prompt::Skill>,
    /// Subagent descriptions and what `agent_list` lists ([`agents`]).
    agents: agents::Agents,
    /// Which tools are deferred behind `tool_search` ([`deferred`]).
    deferral: deferred::Deferral,
    /// Servers still connecting ([`late`]).
    pending: late::Pending,
}

impl Hub {
    /// Every configured server: where it runs and whether it is running
    /// (with its tool count and era), failed (why) or disabled, in
    /// configuration order. A running server found dead since is reported
    /// as failed.
    pub fn status(&self) -> Vec<ServerStatus> {
        self.statuses
            .iter()
            .map(|status| {
                let mut status = status.clone();
                if let ServerState::Running { tools, .. } = status.state
                    && let Some(server) = self.connections.iter().find(|s| s.name() == status.name)
                {
                    status.state = if server.is_running() {
                        ServerState::Running {
                            tools,
                            era: server.era(),
                        }
                    } else {
                        ServerState::Failed {
                            reason: format!("server {} stopped running", status.name),
                        }
                    };
                }
                status
            })
            .collect()
    }

    /// Calls `tool` (its name on the server, not the model's name) on
    /// `server` and returns the server's answer as given, for `nanohermes
    /// mcp call`. An answer with `isError` is `Ok`; an unknown server, a
    /// tool the spec's `enabled_tools`/`disabled_tools` withhold, a
    /// timeout or a dead server is an error (the hub's `ERROR: ...` text
    /// without the prefix).
    pub async fn call_raw(
        &self,
        server: &str,
        tool: &str,
        arguments: Map<String, Value>,
    ) -> anyhow::Result<CallToolResult> {
        let Some(i) = self.connections.iter().position(|s| s.name() == server) else {
            let running: Vec<&str> = self.connections.iter().map(Connection::name).collect();
            bail!(
                "no running server named {server}; running: {}",
                if running.is_empty() {
                    "(none)".to_owned()
                } else {
                    running.join(", ")
                }
            );
        };
        if let Some(why) = self.filters[i].refusal(server, tool) {
            bail!("{why}");
        }
        self.connections[i]
            .call_result(tool, arguments, self.call_timeouts[i], self.max_output)
            .await
            .map_err(|message| {
                anyhow::anyhow!(
                    "{}",
                    message
                        .strip_prefix("ERROR: ")
                        .unwrap_or(&message)
                        .to_owned()
                )
            })
    }

    /// Names of the agent's environment variables that `spec`'s server
    /// would not receive (for `nanohermes mcp get`), sorted: for a stdio
    /// server everything outside the allow-list (HOME, PATH, LANG, LC_*,
    /// ...) that its `env_vars`/`env` do not name; for a built-in child
    /// the secrets; none for in-process and HTTP servers.
    pub fn withheld_env(spec: &ServerSpec) -> Vec<String> {
        plan::withheld_env(spec)
    }

    /// Declares only the tools `policy` allows: the model is offered what it
    /// may run (listing advertises), and the policy still gates every call
    /// (execution gates), so a call to a withheld tool is refused with the
    /// policy's reason rather than "unknown tool".
    pub fn offer_only(mut self, policy: Policy) -> Hub {
        self.offer(policy);
        self
    }

    /// [`Hub::offer_only`] in place (the interactive `/mode`).
    pub fn offer(&mut self, policy: Policy) {
        // Kept, so every refresh narrows the new declarations the same way.
        self.catalog.offer(policy);
        self.rebuild();
    }

    /// Sets one per-call timeout for every server, instead of
    /// the per-server ones of [`call_timeout_over`] (tests use a short one).
    pub fn with_call_timeout(mut self, timeout: Duration) -> Hub {
        self.call_timeouts.iter_mut().for_each(|t| *t = timeout);
        self
    }

    /// The call timeout of server `name`, if it is running.
    pub fn call_timeout(&self, name: &str) -> Option<Duration> {
        let i = self.connections.iter().position(|s| s.name() == name)?;
        Some(self.call_timeouts[i])
    }

    /// Every tool, in the fixed order described in the module docs.
    pub fn tools(&self) -> &[ToolInfo] {
        &self.tools
    }

    /// The OpenAI `tools` array entries, one per offered tool, in
    /// [`tools`](Self::tools) order:
    /// `{"type":"function","function":{name,description,parameters}}`.
    /// Every tool unless [`offer_only`](Self::offer_only) narrowed them.
    pub fn declarations(&self) -> &[Value] {
        &self.declarations
    }

    /// [`declarations`](Self::declarations), each as the JSON a request
    /// sends (kept until the declarations change).
    pub fn encoded_declarations(&self) -> &[Box<serde_json::value::RawValue>] {
        self.declarations.encoded()
    }

    /// The tool the model calls `name`.
    pub fn tool(&self, name: &str) -> Option<&ToolInfo> {
        self.by_name.get(name).map(|(tool, _)| &self.tools[*tool])
    }

    /// Servers that did not start, renamed tools, schema problems: one line
    /// each, for the user.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// Whether server `name` started and its connection is open now. A
    /// server found dead is restarted by its next call (see the module docs).
    pub fn is_running(&self, name: &str) -> bool {
        self.connections
            .iter()
            .any(|server| server.name() == name && server.is_running())
    }

    /// Calls the tool the model calls `name`. Never panics, never fails:
    /// every problem is an `ERROR: ...` string (see the module docs).
    pub async fn call(&self, name: &str, arguments: Map<String, Value>) -> String {
        self.call_with(name, arguments, mcp_tools::CallGrants::none())
            .await
    }

    /// [`Hub::call`] with the policy's grants for this call, sent in the
    /// request's `_meta` to built-in servers only: an external server
    /// never learns what the user approved.
    pub async fn call_with(
        &self,
        name: &str,
        arguments: Map<String, Value>,
        grants: mcp_tools::CallGrants,
    ) -> String {
        if let Some(answer) = self.call_skill(name, &arguments) {
            return answer;
        }
        if let Some(answer) = self.call_meta(name, &arguments).await {
            return answer;
        }
        if let Some(answer) = self.call_agent_list(name) {
            return answer;
        }
        if let Some(answer) = self.call_tool_search(name, &arguments) {
            return answer;
        }
        let Some((tool, server)) = self.by_name.get(name) else {
            return self.unknown_tool(name);
        };
        // Called by name while deferred: declared from the next step on.
        self.deferral.note_called(name);
        let raw_name = &self.tools[*tool].raw_name;
        let builtin = self.tools[*tool].builtin;
        let grants = if builtin {
            grants
        } else {
            mcp_tools::CallGrants::none()
        };
        let answer = self.connections[*server]
            .call_granted(
                raw_name,
                arguments,
                grants,
                self.call_timeouts[*server],
                self.max_output,
            )
            .await;
        if !builtin && raw_name == RUN_TASK {
            return self.agents.note(self.connections[*server].name(), answer);
        }
        answer
    }

    /// How the subagent calls (an external server's `run_task`) went so
    /// far, for the end of a run.
    pub fn subagent_tally(&self) -> SubagentTally {
        self.agents.tally()
    }

    /// Closes every server; child processes exit.
    pub async fn shutdown(self) {
        join_all(self.connections.iter().map(Connection::shutdown)).await;
    }

    fn add_tool(
        &mut self,
        table: &mut NameTable,
        server: &str,
        prefix: Option<&str>,
        trusted: bool,
        tool: &Tool,
        server_idx: usize,
    ) {
        let raw_name = tool.name.to_string();
        let wanted = names::model_name(prefix, &raw_name);
        let name = table.claim(&wanted);
        if name != wanted {
            self.warn(format!(
                "tool {raw_name} of server {server} would be named {wanted}, which is taken; it is named {name}"
            ));
        }
        let sanitized = schema::sanitize(&tool.input_schema);
        for problem in &sanitized.problems {
            self.warn(format!("tool {name} (server {server}): {problem}"));
        }
        let description = tool
            .description
            .as_deref()
            .or(tool.title.as_deref())
            .unwrap_or_default()
            .to_string();
        self.declarations.push(json!({
            "type": "function",
            "function": {
                "name": name,
                "description": description,
                "parameters": trim::trim(&sanitized.schema),
            }
        }));
        self.by_name
            .insert(name.clone(), (self.tools.len(), server_idx));
        // An annotation is the server's claim; only a server the user
        // vouches for is believed.
        let believed = tool.annotations.as_ref().filter(|_| trusted);
        let read_only = believed.and_then(|a| a.read_only_hint).unwrap_or(false);
        self.tools.push(ToolInfo {
            name,
            server: server.to_string(),
            raw_name,
            description,
            read_only,
            destructive: !read_only && believed.and_then(|a| a.destructive_hint).unwrap_or(true),
            builtin: prefix.is_none(),
            annotations: tool.annotations.clone(),
            input_schema: Arc::clone(&tool.input_schema),
        });
    }

    /// Records a warning; the caller shows [`Hub::warnings`] to the user,
    /// so the log line is only for debugging.
    fn warn(&mut self, warning: String) {
        tracing::debug!("{warning}");
        self.warnings.push(warning);
    }

    fn unknown_tool(&self, name: &str) -> String {
        if let Some(server) = self.catalog.removed(name) {
            return catalog::no_longer_offered(name, server);
        }
        let mut listed: Vec<&str> = self
            .tools
            .iter()
            .take(LISTED_NAMES)
            .map(|t| t.name.as_str())
            .collect();
        let more = self.tools.len().saturating_sub(LISTED_NAMES);
        let more = if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        };
        if listed.is_empty() {
            listed.push("(none)");
        }
        format!(
            "ERROR: unknown tool {name}; available tools: {}{more}",
            listed.join(", ")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nanohermes_builtins::Hosted as _;

    #[test]
    fn the_hub_timeout_of_every_builtin_sits_above_its_own_maximum() {
        for builtin in Builtin::ALL {
            if let Some(own) = builtin.max_call_time() {
                assert!(call_timeout_over(Some(own)) > own, "{}", builtin.name());
            }
        }
        // A 600 s run_command must report its own timeout, not the hub's.
        let shell = Builtin::Shell.max_call_time().unwrap();
        assert!(shell >= Duration::from_secs(600), "{shell:?}");
        assert!(call_timeout_over(Some(shell)) >= shell + CALL_TIMEOUT_MARGIN);
        assert_eq!(call_timeout_over(None), DEFAULT_CALL_TIMEOUT);
    }
}
