//! Starting the hub: [`HubConfig`] (what to start, and how) and
//! [`Hub::start`], which starts every enabled server on its own task,
//! admits each one's tools and builds the tool table once.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, bail};
use mcp_tools::{ToolContext, Workspace};

use super::agents::{self, DEFAULT_MAX_AGENT_DEPTH, agent_depth};
use super::deferred::{self, DeferConfig};
use super::status::{self, ServerState, ServerStatus};
use super::{Hub, catalog, declarations, era, input, late, names, plan};
use nanohermes_config::ServerSpec;
use nanohermes_core::policy::Policy;

/// What the hub starts.
#[derive(Debug, Clone)]
pub struct HubConfig {
    /// The root the built-in servers are confined to; stdio servers start
    /// in it unless their spec gives a `cwd`.
    pub workspace: PathBuf,
    /// Cap on each tool result the model sees, in bytes.
    pub max_output: usize,
    /// Every configured server, in listing order, disabled ones included
    /// (they are reported as [`ServerState::Disabled`]).
    pub servers: Vec<ServerSpec>,
    /// `web_fetch` may reach loopback, private and link-local addresses
    /// (`--allow-private-network`; default false).
    pub allow_private_network: bool,
    /// With a list, `web_fetch` reaches only its domains
    /// (`web_allowed_domains`; default none: every public host).
    pub web_allowed_domains: Option<mcp_tools::net::DomainList>,
    /// The `nanohermes` binary that serves `run = "process"` built-ins
    /// (`nanohermes builtin NAME`).
    pub builtin_exe: PathBuf,
    /// The JSON file remembering each external server's protocol era
    /// ([`nanohermes_config::Paths::era_cache`]); `None` keeps it in memory only.
    pub era_cache: Option<PathBuf>,
    /// How many agents deep this process runs ([`agent_depth`]); its
    /// external stdio servers get one more in `NANOHERMES_AGENT_DEPTH`.
    pub agent_depth: usize,
    /// At this depth no external server's `run_task` is offered
    /// (`max_agent_depth`, default [`DEFAULT_MAX_AGENT_DEPTH`]).
    pub max_agent_depth: usize,
    /// When tools are deferred behind `tool_search` ([`deferred`]).
    pub deferral: DeferConfig,
    /// How long [`Hub::start`] waits for servers that are not `required`;
    /// `None` waits for each up to its own startup timeout. The ones
    /// still connecting join later, deferred ([`Hub::refresh`]).
    pub connect_wait: Option<Duration>,
    /// The file OAuth tokens are kept in ([`crate::auth::store::default_path`]);
    /// `None`: HTTP servers get no OAuth (a static token still works).
    pub credentials: Option<PathBuf>,
    /// Who opens an authorization URL when an HTTP server asks for one;
    /// `None` (the agent): the server fails to start with "run `nanohermes
    /// mcp login NAME`". The probe fetches it ([`crate::auth::Browser::Fetch`]).
    pub oauth_browser: Option<crate::auth::Browser>,
    /// Who answers servers' elicitations ([`input`]); `None`: the hub
    /// does not declare the capability and declines.
    pub elicitor: Option<input::SharedElicitor>,
    /// The sandbox of the shell's commands and git's hooks (`sandbox`,
    /// default workspace-write with the network off).
    pub sandbox: mcp_tools::spawn::SandboxPolicy,
    /// In-process built-ins that are not `required` are declared from their
    /// committed listings and started by their first call (default); off,
    /// every server starts in [`Hub::start`] (`nanohermes mcp list`, which
    /// reports what a real start found).
    pub builtins_on_first_use: bool,
    /// The skills the `skill` meta-tool offers from the start (as
    /// [`Hub::with_skills`], without building the tool table twice).
    pub skills: Vec<nanohermes_core::prompt::Skill>,
    /// The policy the declarations are narrowed to from the start (as
    /// [`Hub::offer_only`], without building the tool table twice).
    pub offered: Option<Policy>,
    /// The model settings a NanoHermes subagent (another `nanohermes
    /// serve` started over stdio) inherits ([`super::agents`]); `None`
    /// gives it none.
    pub subagent_model: Option<super::agents::SubagentModel>,
    /// Recognises `nanohermes serve`'s arguments, so a configured server
    /// that is another NanoHermes gets the model settings
    /// ([`super::agents::is_nanohermes_serve`]); none by default.
    pub serve_command: super::agents::ServeCommand,
}

impl HubConfig {
    /// `servers` in `workspace`, with the defaults: the default output cap,
    /// no private network, this executable for built-in children, no era
    /// file, this process's agent depth and the default limit, no elicitor.
    pub fn new(workspace: impl Into<PathBuf>, servers: Vec<ServerSpec>) -> HubConfig {
        HubConfig {
            workspace: workspace.into(),
            max_output: mcp_tools::DEFAULT_MAX_OUTPUT,
            servers,
            allow_private_network: false,
            web_allowed_domains: None,
            builtin_exe: std::env::current_exe().unwrap_or_else(|_| PathBuf::from("nanohermes")),
            era_cache: None,
            agent_depth: agent_depth(),
            max_agent_depth: DEFAULT_MAX_AGENT_DEPTH,
            deferral: DeferConfig::default(),
            connect_wait: None,
            credentials: None,
            oauth_browser: None,
            elicitor: None,
            sandbox: mcp_tools::spawn::SandboxPolicy::default(),
            builtins_on_first_use: true,
            skills: Vec::new(),
            offered: None,
            subagent_model: None,
            serve_command: |_| false,
        }
    }
}

impl Hub {
    /// Starts every enabled server concurrently and merges their tools.
    /// Fails on a bad configuration, or when a `required` server cannot
    /// start (with that server's message); any other server that fails to
    /// start is one warning (with the tail of its stderr) and the rest work.
    pub async fn start(config: HubConfig) -> anyhow::Result<Hub> {
        let workspace = Workspace::new(&config.workspace)
            .with_context(|| format!("cannot open workspace {}", config.workspace.display()))?;
        let ctx = ToolContext {
            workspace,
            max_output: config.max_output,
        };
        let eras = Arc::new(era::EraCache::load(config.era_cache.clone()));
        for (i, spec) in config.servers.iter().enumerate() {
            if !names::is_valid_server_name(&spec.name) {
                bail!(
                    "MCP server name {:?} must be letters, digits, `_` or `-`, without `__`",
                    spec.name
                );
            }
            if config.servers[..i]
                .iter()
                .any(|other| other.name == spec.name)
            {
                bail!(
                    "two MCP servers are named {:?}; give each a unique name",
                    spec.name
                );
            }
        }
        let mut planned = Vec::new();
        for spec in &config.servers {
            planned.push(if spec.enabled {
                Some(plan::plan(spec, &config, &ctx, &eras))
            } else {
                None
            });
        }

        // Each server starts on its own task; the slow ones may be left
        // connecting (late.rs).
        let starts = planned
            .into_iter()
            .zip(&config.servers)
            .map(|(planned, spec)| {
                planned.map(|planned| match planned {
                    Ok(planned) => late::spawn_start(planned),
                    Err(e) => {
                        let warning = format!("server {} cannot start: {e:#}", spec.name);
                        tokio::spawn(async move { Err(warning) })
                    }
                })
            })
            .collect();
        let started = late::wait(starts, &config).await;

        let pinned_servers = config
            .servers
            .iter()
            // A `--agent` server is mounted to be handed tasks.
            .filter(|spec| spec.always_load || spec.origin == nanohermes_config::Origin::AgentFlag)
            .map(|spec| spec.name.clone())
            .collect();
        let mut hub = Hub {
            connections: Vec::new(),
            call_timeouts: Vec::new(),
            filters: Vec::new(),
            tools: Vec::new(),
            declarations: declarations::Declarations::default(),
            by_name: HashMap::new(),
            warnings: Vec::new(),
            max_output: config.max_output,
            statuses: Vec::new(),
            catalog: catalog::Catalog::default(),
            skills: config.skills.clone(),
            agents: agents::Agents::default(),
            deferral: deferred::Deferral::new(config.deferral.clone(), pinned_servers),
            pending: late::Pending::default(),
        };
        for (spec, outcome) in config.servers.iter().zip(started) {
            let mut status = ServerStatus {
                name: spec.name.clone(),
                where_: status::describe_spec(spec, &config),
                state: ServerState::Disabled,
            };
            match outcome {
                None => {}
                Some(Ok(outcome)) => {
                    if let Some(warning) = hub.admit(spec, outcome, &mut status) {
                        if spec.required {
                            hub.shutdown().await;
                            bail!(
                                "{warning}; it is required (mcp_servers.{}.required = true)",
                                spec.name
                            );
                        }
                        hub.warn(warning);
                    }
                }
                Some(Err(handle)) => {
                    status.state = ServerState::Failed {
                        reason: format!("server {} is still connecting", spec.name),
                    };
                    hub.add_pending(spec, handle);
                }
            }
            hub.statuses.push(status);
        }
        if let Some(policy) = &config.offered {
            hub.catalog.offer(policy.clone());
        }
        // Names, declarations, meta-tools (once: skills and the policy are
        // in); list_changed subscriptions.
        hub.rebuild();
        hub.listen_for_changes();
        Ok(hub)
    }

    /// Takes in one server's start: its tools, connection and bookkeeping
    /// on success (and `status` says running); on failure `status` says
    /// failed and the warning is returned for the caller to give.
    pub(super) fn admit(
        &mut self,
        spec: &ServerSpec,
        outcome: late::Outcome,
        status: &mut ServerStatus,
    ) -> Option<String> {
        match outcome {
            Ok(((server, mut tools), (prefixed, trusted, call_timeout, filter, where_))) => {
                if let Some(warning) = agents::withheld(spec, &filter, &tools) {
                    self.warn(warning);
                }
                tools.retain(|tool| filter.allows(&tool.name));
                let listed = tools.len();
                // Named and declared by `rebuild` (catalog.rs).
                self.catalog.listed(prefixed, trusted, tools);
                status.where_ = where_;
                status.state = ServerState::Running {
                    tools: listed,
                    era: server.era(),
                };
                self.connections.push(server);
                self.call_timeouts.push(call_timeout);
                self.filters.push(filter);
                self.agents.descriptions.push(spec.description.clone());
                None
            }
            Err(warning) => {
                status.state = ServerState::Failed {
                    reason: warning.clone(),
                };
                Some(warning)
            }
        }
    }
}
