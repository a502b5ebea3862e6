//! The MCP client hub: every tool the model can call, from every server, in
//! one list, and one way to call them.
//!
//! [`Hub::start`] starts the built-in servers in-process
//! ([`Builtin`], typed in-memory channels, no child process) and each
//! [`ExternalServer`] as a stdio child process, all at once, each within the
//! startup timeout. It lists their tools (following pagination), names them
//! and declares them to the model once; [`Hub::call`] routes a call by that
//! name to its server and returns the string the model sees.
//!
//! Contract:
//! - **Startup never fails on a server.** A server that cannot start, or does
//!   not answer `initialize` and `tools/list` within the startup timeout, is
//!   left out and named in [`Hub::warnings`]. Only a bad configuration (an
//!   unusable workspace, an invalid or duplicate server name) is an error.
//! - **Names.** Built-in tools keep their plain names (`read_file`); an
//!   external server's tools are `SERVER__TOOL`. Every name matches
//!   `^[a-zA-Z0-9_-]{1,64}$` and starts with a letter; a longer one is cut and
//!   ends in an FNV-1a hash of the raw name. A collision keeps the first tool's
//!   name and gives the later one `_2`, `_3`, ... with a warning; no tool is
//!   dropped. The order is fixed: built-ins in configuration order, then
//!   external servers in configuration order, each server's tools sorted by
//!   raw name.
//! - **Declarations** are computed once at start from each tool's input
//!   schema, sanitised on its own ([`schema::sanitize`]): no `$schema`, no
//!   `$ref`/`$defs`, an object root with `properties`; then trimmed by
//!   [`compact::compact`] (no `null` alternative on optional properties, no
//!   Rust-type formats), since every request carries every declaration.
//! - **Calls never fail.** Every problem is a string starting with `ERROR: `:
//!   an unknown tool (with the list of available ones), a tool error
//!   (`isError`), a JSON-RPC error, a timeout (`timed out after`; the call
//!   is cancelled on the server), or a dead server. Results are rendered by
//!   [`result::render`] and clamped to `max_output`.
//! - **Timeouts sit above the servers' own.** A built-in whose tools stop
//!   themselves ([`Builtin::max_call_time`]: `run_command` after at most
//!   600 s, git after 600 s, `web_fetch` after its fetch timeout) gets
//!   [`call_timeout_over`] that maximum, so a 600 s `run_command` reports
//!   its own timeout with its output; every other server gets
//!   [`DEFAULT_CALL_TIMEOUT`].
//! - **Trust.** A tool is read-only for the policy only when its server
//!   says so (`readOnlyHint`) and the server is trusted: a built-in, or an
//!   external server the user vouches for
//!   ([`ExternalServer::trusted_annotations`], true for `--mcp`). Any other
//!   server's tools count as not read-only, whatever they claim.
//! - **Offered tools.** [`Hub::offer_only`] narrows the declarations to what
//!   a policy allows; the policy still gates every call.
//! - **Dead servers.** The call during which a server dies returns
//!   `ERROR: server NAME is not running (REASON); it will be restarted on the
//!   next call`. The next call restarts it (once in the hub's life) and goes
//!   through. After a second death every call returns `ERROR: server NAME is
//!   not running (REASON); it was already restarted once and stays down`.
//!   Other servers are not affected. Each connection has a generation: a
//!   failure that arrives from an old connection after the restart never
//!   marks the new one down (its call says the server was restarted since).
//! - **No call waits for another.** Calls take no lock across an await;
//!   calls to one server are multiplexed on its connection, calls to
//!   different servers run in parallel. Only a restart serialises, and only
//!   the calls to the server being restarted.
//! - **A child's stderr never reaches stdout.** It is piped, logged through
//!   `tracing` (info level, with the server name), and its last line is quoted
//!   when the server fails.
//! - **Children.** An external server is started through the kit's spawn
//!   policy ([`mcp_tools::spawn`]): it leads its own process group (a
//!   terminal's Ctrl-C reaches only the agent), its environment is the
//!   allow-list plus the variables configured for it (never the model's
//!   key), and its whole tree (`npx` → `npm exec` → `node`, daemons that
//!   called `setsid`) is killed when it is shut down, restarted, or the agent
//!   exits.
//! - [`Hub::shutdown`] closes every connection; children get EOF on stdin,
//!   then SIGTERM, then SIGKILL, then the rest of their tree is killed.

mod builtin;
pub mod compact;
pub mod names;
pub mod result;
pub mod schema;
mod server;

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context as _, bail};
use futures::future::join_all;
use mcp_tools::{ToolContext, Workspace};
use rmcp::model::{Tool, ToolAnnotations};
use serde_json::{Map, Value, json};

use crate::policy::Policy;
use crate::toolbox::ToolFacts;

pub use builtin::{Builtin, BuiltinOptions};
pub use server::MAX_RESTARTS;

use names::NameTable;
use server::{Launch, Server};

/// How long a tool call to a server without a known maximum (an external
/// server, a built-in without long-running tools) may take before it is
/// cancelled and answered with `ERROR: ... timed out`.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(600);

/// How far the hub's timeout sits above a server's own maximum, so the
/// server's own timeout fires first and its answer (which says what was
/// killed, with the output so far) reaches the model, not the hub's.
pub const CALL_TIMEOUT_MARGIN: Duration = Duration::from_secs(60);

/// The hub's call timeout for a server whose tools stop themselves after at
/// most `own_max`: above it by [`CALL_TIMEOUT_MARGIN`], and never below
/// [`DEFAULT_CALL_TIMEOUT`].
pub fn call_timeout_over(own_max: Option<Duration>) -> Duration {
    match own_max {
        Some(max) => (max + CALL_TIMEOUT_MARGIN).max(DEFAULT_CALL_TIMEOUT),
        None => DEFAULT_CALL_TIMEOUT,
    }
}

/// At most this many names are listed in the unknown-tool error.
const LISTED_NAMES: usize = 40;

/// What the hub starts.
#[derive(Debug, Clone)]
pub struct HubConfig {
    /// The root the built-in servers are confined to; external servers are
    /// started in it.
    pub workspace: PathBuf,
    /// Cap on each tool result the model sees, in bytes.
    pub max_output: usize,
    /// The built-in servers to run in-process, in listing order.
    pub builtins: Vec<Builtin>,
    /// The external stdio servers to start, in listing order.
    pub external: Vec<ExternalServer>,
    /// How long each server has to start and list its tools.
    pub startup_timeout: Duration,
    /// `web_fetch` may reach loopback, private and link-local addresses
    /// (`--allow-private-network`; default false).
    pub allow_private_network: bool,
}

/// An external MCP server run as a child process over stdio
/// (`--mcp NAME=COMMAND [ARGS...]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExternalServer {
    /// The server's name: its tools are `NAME__TOOL`. Must match
    /// `[A-Za-z0-9_-]+` without `__`.
    pub name: String,
    /// The program to run (looked up in `PATH`).
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// The variables the user configured for this server. The child gets
    /// these and the allow-list of [`mcp_tools::spawn::EnvPolicy::AllowList`]
    /// (HOME, PATH, LANG, ...), nothing else from the agent's environment.
    pub env: Vec<(String, String)>,
    /// Whether the user vouches for this server, so its `readOnlyHint`
    /// annotations are believed. Servers given with `--mcp` are (the user
    /// typed them); a server from anywhere else (a project's config, once
    /// there is one) is not, and all its tools count as not read-only.
    pub trusted_annotations: bool,
}

impl ExternalServer {
    /// Parses `NAME=COMMAND [ARGS...]`, split on whitespace (no quoting).
    /// The result is not trusted: the caller decides whether the user
    /// vouched for it ([`ExternalServer::trusted_annotations`]).
    pub fn parse(spec: &str) -> anyhow::Result<ExternalServer> {
        let mut words = spec.split_whitespace();
        let first = words.next().unwrap_or_default();
        let Some((name, command)) = first.split_once('=') else {
            bail!("--mcp wants NAME=COMMAND [ARGS...], got {spec:?}");
        };
        if !names::is_valid_server_name(name) {
            bail!("MCP server name {name:?} must be letters, digits, `_` or `-`, without `__`");
        }
        if command.is_empty() {
            bail!("--mcp {name}= has no command");
        }
        Ok(ExternalServer {
            name: name.to_string(),
            command: command.to_string(),
            args: words.map(str::to_string).collect(),
            env: Vec::new(),
            trusted_annotations: false,
        })
    }
}

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
    /// external server with [`ExternalServer::trusted_annotations`]).
    pub read_only: bool,
    /// The server's annotations, as given.
    pub annotations: Option<ToolAnnotations>,
}

impl ToolInfo {
    /// What the permission gate knows about it.
    pub fn facts(&self) -> ToolFacts {
        ToolFacts {
            read_only: self.read_only,
        }
    }
}

/// The running servers and their merged tools. `Send + Sync`: share it as
/// `Arc<Hub>`.
pub struct Hub {
    servers: Vec<Server>,
    /// Per server, in `servers` order.
    call_timeouts: Vec<Duration>,
    tools: Vec<ToolInfo>,
    declarations: Vec<Value>,
    /// Model name → (index in `tools`, index in `servers`).
    by_name: HashMap<String, (usize, usize)>,
    warnings: Vec<String>,
    max_output: usize,
}

/// One server to start, before it has started.
struct Planned {
    name: String,
    /// Its tools are named `NAME__TOOL`.
    prefixed: bool,
    /// Its read-only annotations are believed.
    trusted: bool,
    call_timeout: Duration,
    launch: Launch,
}

impl Hub {
    /// Starts every configured server concurrently and merges their tools.
    /// Fails only on a bad configuration; a server that fails to start is a
    /// warning.
    pub async fn start(config: HubConfig) -> anyhow::Result<Hub> {
        let workspace = Workspace::new(&config.workspace)
            .with_context(|| format!("cannot open workspace {}", config.workspace.display()))?;
        let ctx = ToolContext {
            workspace,
            max_output: config.max_output,
        };
        let options = BuiltinOptions {
            allow_private_network: config.allow_private_network,
        };
        let mut launches: Vec<Planned> = Vec::new();
        for builtin in &config.builtins {
            launches.push(Planned {
                name: builtin.name().to_string(),
                prefixed: false,
                trusted: true,
                call_timeout: call_timeout_over(builtin.max_call_time()),
                launch: Launch::Builtin(*builtin, ctx.clone(), options),
            });
        }
        for external in &config.external {
            if !names::is_valid_server_name(&external.name) {
                bail!(
                    "MCP server name {:?} must be letters, digits, `_` or `-`, without `__`",
                    external.name
                );
            }
            launches.push(Planned {
                name: external.name.clone(),
                prefixed: true,
                trusted: external.trusted_annotations,
                call_timeout: DEFAULT_CALL_TIMEOUT,
                launch: Launch::External(external.clone(), config.workspace.clone()),
            });
        }
        for (i, planned) in launches.iter().enumerate() {
            if launches[..i].iter().any(|other| other.name == planned.name) {
                bail!(
                    "two MCP servers are named {:?}; give each a unique name",
                    planned.name
                );
            }
        }

        let started = join_all(launches.into_iter().map(|planned| async move {
            let outcome =
                Server::start(planned.name.clone(), planned.launch, config.startup_timeout).await;
            (
                planned.prefixed,
                planned.trusted,
                planned.call_timeout,
                outcome,
            )
        }))
        .await;

        let mut hub = Hub {
            servers: Vec::new(),
            call_timeouts: Vec::new(),
            tools: Vec::new(),
            declarations: Vec::new(),
            by_name: HashMap::new(),
            warnings: Vec::new(),
            max_output: config.max_output,
        };
        let mut table = NameTable::default();
        for (prefixed, trusted, call_timeout, outcome) in started {
            match outcome {
                Ok((server, mut tools)) => {
                    tools.sort_by(|a, b| a.name.cmp(&b.name));
                    let server_idx = hub.servers.len();
                    let prefix = prefixed.then(|| server.name().to_string());
                    for tool in &tools {
                        hub.add_tool(
                            &mut table,
                            server.name(),
                            prefix.as_deref(),
                            trusted,
                            tool,
                            server_idx,
                        );
                    }
                    hub.servers.push(server);
                    hub.call_timeouts.push(call_timeout);
                }
                Err(warning) => hub.warn(warning),
            }
        }
        Ok(hub)
    }

    /// Declares only the tools `policy` allows: the model is offered what it
    /// may run (listing advertises), and the policy still gates every call
    /// (execution gates), so a call to a withheld tool is refused with the
    /// policy's reason rather than "unknown tool".
    pub fn offer_only(mut self, policy: Policy) -> Hub {
        let offered: Vec<Value> = self
            .tools
            .iter()
            .zip(std::mem::take(&mut self.declarations))
            .filter(|(tool, _)| policy.allows(&tool.facts()))
            .map(|(_, declaration)| declaration)
            .collect();
        self.declarations = offered;
        self
    }

    /// Sets one per-call timeout for every server, instead of
    /// the per-server ones of [`call_timeout_over`] (tests use a short one).
    pub fn with_call_timeout(mut self, timeout: Duration) -> Hub {
        self.call_timeouts.iter_mut().for_each(|t| *t = timeout);
        self
    }

    /// The call timeout of server `name`, if it is running.
    pub fn call_timeout(&self, name: &str) -> Option<Duration> {
        let i = self.servers.iter().position(|s| s.name() == name)?;
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
        self.servers
            .iter()
            .any(|server| server.name() == name && server.is_running())
    }

    /// Calls the tool the model calls `name`. Never panics, never fails:
    /// every problem is an `ERROR: ...` string (see the module docs).
    pub async fn call(&self, name: &str, arguments: Map<String, Value>) -> String {
        let Some((tool, server)) = self.by_name.get(name) else {
            return self.unknown_tool(name);
        };
        let raw_name = &self.tools[*tool].raw_name;
        self.servers[*server]
            .call(
                raw_name,
                arguments,
                self.call_timeouts[*server],
                self.max_output,
            )
            .await
    }

    /// Closes every server; child processes exit.
    pub async fn shutdown(self) {
        join_all(self.servers.iter().map(Server::shutdown)).await;
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
                "parameters": compact::compact(&sanitized.schema),
            }
        }));
        self.by_name
            .insert(name.clone(), (self.tools.len(), server_idx));
        self.tools.push(ToolInfo {
            name,
            server: server.to_string(),
            raw_name,
            description,
            // An annotation is the server's claim; only a server the user
            // vouches for is believed.
            read_only: trusted
                && tool
                    .annotations
                    .as_ref()
                    .and_then(|a| a.read_only_hint)
                    .unwrap_or(false),
            annotations: tool.annotations.clone(),
        });
    }

    /// Records a warning; the caller shows [`Hub::warnings`] to the user,
    /// so the log line is only for debugging.
    fn warn(&mut self, warning: String) {
        tracing::debug!("{warning}");
        self.warnings.push(warning);
    }

    fn unknown_tool(&self, name: &str) -> String {
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
