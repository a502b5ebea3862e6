//! The built-in tool servers, served inside the agent's process.
//!
//! Each built-in is an rmcp handler from its server crate, connected over
//! typed in-memory channels ([`mcp_tools::in_process::serve_in_process`]): a
//! full MCP session with no child process and no JSON encoding. Adding a
//! server is a variant, its place in [`Builtin::ALL`] and one arm in
//! `Builtin::spec`.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;
use futures::future::BoxFuture;
use mcp_tools::ToolContext;
use mcp_tools::in_process::serve_in_process;

use super::server::{Client, client_config};

/// A built-in tool server the agent can run in-process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Builtin {
    /// `nanohermes-files`: read, write, edit, patch and list files.
    Files,
    /// `nanohermes-grep`: search file contents and find files by glob.
    Grep,
    /// `nanohermes-shell`: run commands and background tasks.
    Shell,
    /// `nanohermes-git`: status, diff, log and commit.
    Git,
    /// `nanohermes-memory`: notes kept across sessions, in
    /// `$NANOHERMES_HOME/memory.db` (default `~/.nanohermes/memory.db`).
    Memory,
    /// `nanohermes-todo`: the session's todo list, kept in memory.
    Todo,
    /// `nanohermes-web`: fetch a URL as text.
    Web,
}

/// Settings of the built-ins beyond their workspace, from the command line
/// and the config.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BuiltinOptions {
    /// `web_fetch` may reach loopback, private and link-local addresses
    /// (`--allow-private-network`).
    pub allow_private_network: bool,
    /// The sandbox of shell commands and git hooks.
    pub sandbox: mcp_tools::spawn::SandboxPolicy,
}

impl BuiltinOptions {
    /// The web server's limits with these options.
    pub(crate) fn fetch_config(&self) -> nanohermes_web::FetchConfig {
        nanohermes_web::FetchConfig {
            allow_private_network: self.allow_private_network,
            ..nanohermes_web::FetchConfig::default()
        }
    }
}

/// Starts one built-in server in-process and returns the connected client.
type Connect = fn(ToolContext, BuiltinOptions) -> BoxFuture<'static, anyhow::Result<Client>>;

impl Builtin {
    /// Every built-in server, in the order their tools are listed.
    pub const ALL: &'static [Builtin] = &[
        Builtin::Files,
        Builtin::Grep,
        Builtin::Shell,
        Builtin::Git,
        Builtin::Memory,
        Builtin::Todo,
        Builtin::Web,
    ];

    /// The server's name, as shown in `nanohermes tools` and in errors.
    pub fn name(self) -> &'static str {
        self.spec().0
    }

    /// The longest a call to this server's tools can take before the tool
    /// stops itself (with an answer that says so), or `None` when its tools
    /// have no such bound. The hub's own timeout sits above it
    /// ([`super::call_timeout_over`]).
    pub fn max_call_time(self) -> Option<Duration> {
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
    /// can declare them without starting it (server.rs, "Started on first
    /// use"). Each server's schema test keeps the document equal to what
    /// its code lists, and `the_committed_listing_is_what_each_builtin_lists`
    /// checks it under every option that reaches a built-in.
    pub(crate) fn listed_tools(self) -> anyhow::Result<Vec<rmcp::model::Tool>> {
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

    /// Looks a built-in up by [`name`](Self::name).
    pub fn from_name(name: &str) -> Option<Builtin> {
        Self::ALL.iter().copied().find(|b| b.name() == name)
    }

    /// Name and in-process constructor: the one place a new server is added.
    fn spec(self) -> (&'static str, Connect) {
        match self {
            Builtin::Files => ("files", |ctx, _| {
                Box::pin(connect(nanohermes_files::FilesServer::new(ctx)))
            }),
            Builtin::Grep => ("grep", |ctx, _| {
                Box::pin(connect(nanohermes_grep::GrepServer::new(ctx)))
            }),
            Builtin::Shell => ("shell", |ctx, options| {
                Box::pin(connect(nanohermes_shell::ShellServer::with_sandbox(
                    ctx,
                    options.sandbox,
                )))
            }),
            Builtin::Git => ("git", |ctx, options| {
                Box::pin(connect(nanohermes_git::GitServer::with_options(
                    ctx,
                    PathBuf::from("git"),
                    options.sandbox,
                )))
            }),
            Builtin::Memory => ("memory", |ctx, _| Box::pin(connect_memory(ctx))),
            Builtin::Todo => ("todo", |_, _| {
                let store = nanohermes_todo::Store::in_memory();
                Box::pin(connect(nanohermes_todo::TodoServer::new(store)))
            }),
            Builtin::Web => ("web", |ctx, options| {
                Box::pin(async move {
                    // Cheap: the HTTP client (and its root certificates) is
                    // built by the first web_fetch.
                    let server =
                        nanohermes_web::WebServer::with_config(ctx, options.fetch_config())?;
                    connect(server).await
                })
            }),
        }
    }

    /// Starts the server in-process, confined to `ctx`'s workspace.
    pub(crate) fn connect(
        self,
        ctx: ToolContext,
        options: BuiltinOptions,
    ) -> BoxFuture<'static, anyhow::Result<Client>> {
        (self.spec().1)(ctx, options)
    }
}

/// Opens the memory database off the async threads, then serves it.
async fn connect_memory(ctx: ToolContext) -> anyhow::Result<Client> {
    let path = memory_db_path()
        .context("no home directory for the memory database; set NANOHERMES_HOME")?;
    let store = tokio::task::spawn_blocking(move || {
        nanohermes_memory::MemoryStore::open(&path)
            .with_context(|| format!("cannot open the memory database {}", path.display()))
    })
    .await??;
    connect(nanohermes_memory::MemoryServer::new(ctx, store)).await
}

/// `$NANOHERMES_HOME/memory.db`, else the memory server's default.
pub(crate) fn memory_db_path() -> Option<PathBuf> {
    match std::env::var_os("NANOHERMES_HOME") {
        Some(home) if !home.is_empty() => Some(PathBuf::from(home).join("memory.db")),
        _ => nanohermes_memory::default_db_path(),
    }
}

async fn connect<S>(server: S) -> anyhow::Result<Client>
where
    S: rmcp::ServerHandler + rmcp::service::Service<rmcp::RoleServer>,
{
    Ok(serve_in_process(server, client_config(None)).await?)
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
                });
            }
        }
        sets
    }

    /// The server started for real, in-process, the way the hub starts it
    /// (the memory server on a database of its own, not the user's).
    async fn started(builtin: Builtin, ctx: ToolContext, options: BuiltinOptions) -> Client {
        match builtin {
            Builtin::Memory => {
                let path = ctx.workspace.root().join("memory.db");
                let store = nanohermes_memory::MemoryStore::open(&path).unwrap();
                let server = nanohermes_memory::MemoryServer::new(ctx, store);
                serve_in_process(server, client_config(None)).await.unwrap()
            }
            _ => builtin.connect(ctx, options).await.unwrap(),
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
                assert_eq!(
                    super::super::connect::era_of(&client),
                    super::super::era::Era::Legacy,
                    "the era an unstarted {} reports",
                    builtin.name()
                );
                let _ = client.cancel().await;
            }
        }
    }
}
