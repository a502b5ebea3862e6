//! The seven built-in tool servers, hosted by the agent: inside its
//! process ([`Hosted::connect`]) or as a `nanohermes builtin NAME` child
//! ([`serve_builtin_main`]), so a child runs exactly the code the
//! in-process server runs.
//!
//! In-process, each built-in is an rmcp handler from its server crate,
//! connected over typed in-memory channels
//! ([`mcp_tools::in_process::serve_in_process`]): a full MCP session with no
//! child process and no JSON encoding. The built-ins are named by the one
//! enum of them, [`Builtin`] (the config's); adding a server is a variant
//! there and one arm in each match here.
//!
//! This crate sits below the MCP client (`nanohermes-hub` connects to what
//! it hosts through the client handler it passes in) and knows nothing of
//! it.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;
use futures::future::BoxFuture;
use mcp_tools::ToolContext;
use mcp_tools::in_process::serve_in_process;
use rmcp::service::{RoleClient, RunningService};

mod protected;
mod serve;

pub use nanohermes_config::BuiltinName as Builtin;
pub use protected::protected_write;
pub use serve::serve_builtin_main;

/// Settings of the built-ins beyond their workspace, from the command line
/// and the config.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BuiltinOptions {
    /// `web_fetch` may reach loopback, private and link-local addresses
    /// (`--allow-private-network`).
    pub allow_private_network: bool,
    /// With a list, `web_fetch` reaches only its domains (`web_allowed_domains`).
    pub web_allowed_domains: Option<mcp_tools::net::DomainList>,
    /// The sandbox of shell commands and git hooks.
    pub sandbox: mcp_tools::spawn::SandboxPolicy,
}

impl BuiltinOptions {
    /// The web server's limits with these options.
    pub fn fetch_config(&self) -> nanohermes_web::FetchConfig {
        nanohermes_web::FetchConfig {
            allow_private_network: self.allow_private_network,
            allowed_domains: self.web_allowed_domains.clone(),
            ..nanohermes_web::FetchConfig::default()
        }
    }
}

/// A client connected in-process to a built-in, with the handler `H` the
/// caller gave.
pub type Connected<H> = RunningService<RoleClient, H>;

/// What the agent does with a built-in: list its tools without starting
/// it, bound its calls, start it in-process.
pub trait Hosted: Copy {
    /// The longest a call to this server's tools can take before the tool
    /// stops itself, or `None` when its tools have no such bound.
    fn max_call_time(self) -> Option<Duration>;
    /// The tools the server lists, from its committed schema document.
    fn listed_tools(self) -> anyhow::Result<Vec<rmcp::model::Tool>>;
    /// Starts the server in-process, confined to `ctx`'s workspace, and
    /// connects `handler` to it.
    fn connect<H>(
        self,
        ctx: ToolContext,
        options: BuiltinOptions,
        handler: H,
    ) -> BoxFuture<'static, anyhow::Result<Connected<H>>>
    where
        H: rmcp::ClientHandler + rmcp::service::Service<RoleClient>;
}

impl Hosted for Builtin {
    /// The longest a call to this server's tools can take before the tool
    /// stops itself (with an answer that says so), or `None` when its tools
    /// have no such bound. The hub's own timeout sits above it
    /// (the hub's `call_timeout_over`).
    fn max_call_time(self) -> Option<Duration> {
        match self {
            // run_command's longest timeout, then the grace it gives the
            // killed group's output to drain.
            Builtin::Shell => Some(
                Duration::from_secs(nanohermes_shell::MAX_TIMEOUT_SECS)
                    + nanohermes_shell::run::DRAIN_GRACE,
            ),
            Builtin::Git => Some(nanohermes_git::runner::COMMAND_TIMEOUT),
            Builtin::Web => Some(BuiltinOptions::default().fetch_config().timeout),
            Builtin::Files | Builtin::Grep | Builtin::Memory | Builtin::Todo => None,
        }
    }

    /// The tools the server lists, read from its committed schema document
    /// (`schemas/NAME.json`) instead of from a running server, so the hub
    /// can declare them without starting it (the hub's connection.rs,
    /// `Connection::unstarted`). Each server's schema test keeps the document equal to what
    /// its code lists, and `the_committed_listing_is_what_each_builtin_lists`
    /// checks it under every option that reaches a built-in.
    fn listed_tools(self) -> anyhow::Result<Vec<rmcp::model::Tool>> {
        let document = match self {
            Builtin::Files => include_str!("../../../schemas/files.json"),
            Builtin::Grep => include_str!("../../../schemas/grep.json"),
            Builtin::Shell => include_str!("../../../schemas/shell.json"),
            Builtin::Git => include_str!("../../../schemas/git.json"),
            Builtin::Memory => include_str!("../../../schemas/memory.json"),
            Builtin::Todo => include_str!("../../../schemas/todo.json"),
            Builtin::Web => include_str!("../../../schemas/web.json"),
        };
        #[derive(serde::Deserialize)]
        struct Document {
            tools: Vec<rmcp::model::Tool>,
        }
        let document: Document = serde_json::from_str(document)
            .with_context(|| format!("the committed tool list of {} is damaged", self.name()))?;
        Ok(document.tools)
    }

    fn connect<H>(
        self,
        ctx: ToolContext,
        options: BuiltinOptions,
        handler: H,
    ) -> BoxFuture<'static, anyhow::Result<Connected<H>>>
    where
        H: rmcp::ClientHandler + rmcp::service::Service<RoleClient>,
    {
        match self {
            Builtin::Files => Box::pin(connect(nanohermes_files::FilesServer::new(ctx), handler)),
            Builtin::Grep => Box::pin(connect(nanohermes_grep::GrepServer::new(ctx), handler)),
            Builtin::Shell => Box::pin(connect(
                nanohermes_shell::ShellServer::with_sandbox(ctx, options.sandbox),
                handler,
            )),
            Builtin::Git => Box::pin(connect(
                nanohermes_git::GitServer::with_options(ctx, PathBuf::from("git"), options.sandbox),
                handler,
            )),
            Builtin::Memory => Box::pin(connect_memory(ctx, handler)),
            Builtin::Todo => {
                let store = nanohermes_todo::Store::in_memory();
                Box::pin(connect(nanohermes_todo::TodoServer::new(store), handler))
            }
            Builtin::Web => Box::pin(async move {
                // Cheap: the HTTP client (and its root certificates) is
                // built by the first web_fetch.
                let server = nanohermes_web::WebServer::with_config(ctx, options.fetch_config())?;
                connect(server, handler).await
            }),
        }
    }
}

/// Opens the memory database off the async threads, then serves it.
async fn connect_memory<H>(ctx: ToolContext, handler: H) -> anyhow::Result<Connected<H>>
where
    H: rmcp::ClientHandler + rmcp::service::Service<RoleClient>,
{
    let path = memory_db_path()
        .context("no home directory for the memory database; set NANOHERMES_HOME")?;
    let store = tokio::task::spawn_blocking(move || {
        nanohermes_memory::MemoryStore::open(&path)
            .with_context(|| format!("cannot open the memory database {}", path.display()))
    })
    .await??;
    connect(nanohermes_memory::MemoryServer::new(ctx, store), handler).await
}

/// `memory.db` in the user's NanoHermes directory.
fn memory_db_path() -> Option<PathBuf> {
    nanohermes_config::Paths::of_process().memory_db()
}

async fn connect<S, H>(server: S, handler: H) -> anyhow::Result<Connected<H>>
where
    S: rmcp::ServerHandler + rmcp::service::Service<rmcp::RoleServer>,
    H: rmcp::ClientHandler + rmcp::service::Service<RoleClient>,
{
    Ok(serve_in_process(server, handler).await?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_tools::Workspace;
    use mcp_tools::spawn::{SandboxMode, SandboxPolicy};

    /// Every option a built-in is constructed with that could change what
    /// it lists.
    fn option_sets() -> Vec<BuiltinOptions> {
        let mut sets = vec![BuiltinOptions::default()];
        sets.push(BuiltinOptions {
            allow_private_network: true,
            ..BuiltinOptions::default()
        });
        for mode in [
            SandboxMode::WorkspaceWrite,
            SandboxMode::ReadOnly,
            SandboxMode::DangerFullAccess,
        ] {
            for network in [false, true] {
                sets.push(BuiltinOptions {
                    allow_private_network: false,
                    sandbox: SandboxPolicy {
                        mode,
                        network,
                        ..SandboxPolicy::default()
                    },
                    ..BuiltinOptions::default()
                });
            }
        }
        sets
    }

    /// The server started for real, in-process, the way the hub starts it
    /// (the memory server on a database of its own, not the user's).
    async fn started(builtin: Builtin, ctx: ToolContext, options: BuiltinOptions) -> Connected<()> {
        match builtin {
            Builtin::Memory => {
                let path = ctx.workspace.root().join("memory.db");
                let store = nanohermes_memory::MemoryStore::open(&path).unwrap();
                let server = nanohermes_memory::MemoryServer::new(ctx, store);
                serve_in_process(server, ()).await.unwrap()
            }
            _ => builtin.connect(ctx, options, ()).await.unwrap(),
        }
    }

    #[tokio::test]
    async fn the_committed_listing_is_what_each_builtin_lists() {
        let dir = tempfile::tempdir().unwrap();
        for builtin in Builtin::ALL.iter().copied() {
            let listed = serde_json::to_value(builtin.listed_tools().unwrap()).unwrap();
            for options in option_sets() {
                let ctx = ToolContext {
                    workspace: Workspace::new(dir.path()).unwrap(),
                    max_output: 30_000,
                };
                let client = started(builtin, ctx, options.clone()).await;
                let live = serde_json::to_value(client.list_all_tools().await.unwrap()).unwrap();
                assert_eq!(live, listed, "{} with {options:?}", builtin.name());
                // What a server declared but not started cannot offer.
                let info = client.peer().peer_info().unwrap();
                assert!(
                    info.capabilities.resources.is_none() && info.capabilities.prompts.is_none(),
                    "{} offers resources or prompts",
                    builtin.name()
                );
                assert!(
                    info.protocol_version.has_initialize(),
                    "the era an unstarted {} reports",
                    builtin.name()
                );
                let _ = client.cancel().await;
            }
        }
    }
}
