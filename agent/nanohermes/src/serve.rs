//! `nanohermes serve`: NanoHermes as an MCP server, so any MCP host can
//! hand it whole coding tasks through one tool, `run_task`.
//!
//! | module | owns |
//! |---|---|
//! | `run_task` | the tool's arguments, structured result and declaration |
//! | `handler` | the rmcp handler: blocking calls, tasks, cancellation, input-required approvals |
//! | `workspaces` | `--root` checks; per workspace its config, shared hub and model client |
//! | `tools` | one task's policy-narrowed view of the shared hub |
//! | `progress` | `notifications/progress` per step, the session written per step |
//! | [`nanohermes_session`] | session files under `WORKSPACE/.nanohermes/sessions/` (shared with `run`) |
//! | `tasks` | the tasks extension's handles, persisted under `$NANOHERMES_HOME/tasks/` |
//! | `store` | the one store interface: those files, or PostgreSQL shared by replicas (leases, takeover) |
//! | `approval` | elicitation (2025-11-25) or input-required (2026-07-28) questions |

mod approval;
mod handler;
mod progress;
mod run_task;
pub mod store;
mod tasks;
mod tools;
mod workspaces;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use mcp_tools::serve::HttpArgs;

pub use handler::{AgentServer, tool_result};
pub use run_task::{RUN_TASK, RunStatus, RunTaskArgs, RunTaskOutput, RunUsage};
pub use store::Store;
pub use tasks::TaskStore;
pub use workspaces::Workspaces;

use crate::config::Options;

/// The flags of `nanohermes serve`.
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// A directory tasks may work in (a task's `workspace` must lie inside one); repeatable [default: the current directory].
    #[arg(long = "root", value_name = "DIR")]
    pub roots: Vec<PathBuf>,
    /// Streamable HTTP instead of stdio.
    #[command(flatten)]
    pub http: HttpArgs,
    /// Print the run_task declaration as JSON and exit.
    #[arg(long)]
    pub print_schema: bool,
    /// Where tasks and sessions are kept: `files` (the default) or
    /// `postgres://USER@HOST:PORT/DB`, shared by replicas (the password
    /// from $NANOHERMES_STORE_PASSWORD or $PGPASSWORD, never the URL)
    /// [default: `[serve] store` in your own config, else files].
    #[arg(long, value_name = "URL")]
    pub store: Option<String>,
    /// How long SIGTERM waits for running tasks to reach a step boundary
    /// and give their leases back (PostgreSQL store).
    #[arg(long, value_name = "SECS", default_value_t = 30)]
    pub drain_secs: u64,
}

impl ServeArgs {
    /// Whether SIGTERM drains this server (HTTP over the PostgreSQL
    /// store) rather than ending it at once.
    pub fn drains_on_sigterm(&self) -> bool {
        let store = self
            .store
            .clone()
            .or_else(|| configured_store().ok().flatten());
        self.http.addr.is_some() && store.is_some_and(|s| s != "files")
    }
}

/// The `schemas/run_task.json` document: what `tools/list` answers.
pub async fn schema_document() -> anyhow::Result<serde_json::Value> {
    let workspaces = Workspaces::new(&[std::env::temp_dir()], Options::default())?;
    let server = AgentServer::new(workspaces, Store::Files(TaskStore::open(None)));
    mcp_tools::schema::tools_document("run_task", server).await
}

/// `[serve] store` in the user's own config (a project's config may not
/// set it: the config layer refuses the key there).
fn configured_store() -> Result<Option<String>, String> {
    let Some(home) = nanohermes_config::Paths::of_process().home() else {
        return Ok(None);
    };
    let path = nanohermes_config::files::user_config(home);
    let Ok(text) = std::fs::read_to_string(&path) else {
        return Ok(None);
    };
    let raw = nanohermes_config::raw::parse(
        &path.display().to_string(),
        &text,
        nanohermes_config::raw::FileKind::User,
    )
    .map_err(|e| e.to_string())?;
    Ok(raw.serve.and_then(|serve| serve.store))
}

/// Where task handles are kept: `$NANOHERMES_HOME/tasks`.
pub fn default_task_dir() -> Option<PathBuf> {
    nanohermes_config::Paths::of_process().tasks_dir()
}

/// Runs `nanohermes serve` until the host closes stdio or Ctrl-C ends HTTP.
pub async fn main(options: &Options, args: ServeArgs) -> anyhow::Result<ExitCode> {
    const NAME: &str = "nanohermes serve";
    if args.print_schema {
        let document = schema_document().await?;
        use std::io::Write as _;
        std::io::stdout().write_all(mcp_tools::schema::render(&document).as_bytes())?;
        return Ok(ExitCode::SUCCESS);
    }
    let http = match args.http.policy() {
        Ok(http) => http,
        Err(e) => {
            eprintln!("{NAME}: {e}");
            return Ok(ExitCode::from(crate::cli::EXIT_USAGE));
        }
    };
    let workspaces = Workspaces::new(&args.roots, options.clone())?;
    let store = match args
        .store
        .clone()
        .map_or_else(configured_store, |s| Ok(Some(s)))
    {
        Ok(store) => store,
        Err(e) => {
            eprintln!("{NAME}: {e}");
            return Ok(ExitCode::from(crate::cli::EXIT_USAGE));
        }
    };
    let replicas = match store.as_deref() {
        None | Some("files") => None,
        Some(url) => match store::open_postgres(url).await {
            Ok(replicas) => Some(replicas),
            Err(e) => {
                eprintln!("{NAME}: {e}");
                return Ok(ExitCode::from(crate::cli::EXIT_USAGE));
            }
        },
    };
    let server = match &replicas {
        None => AgentServer::new(
            workspaces,
            Store::Files(TaskStore::open(default_task_dir())),
        ),
        Some(replicas) => {
            let server = AgentServer::new(workspaces, Store::Postgres(replicas.clone()));
            let taker = server.clone();
            replicas.start(move |claimed| taker.take_over(claimed));
            server
        }
    };
    server.prepare_first_root();
    let served = match http {
        Some((addr, policy)) => {
            let listener = match mcp_tools::serve::bind(addr).await {
                Ok(listener) => listener,
                Err(e) => {
                    eprintln!("{NAME}: {e}");
                    return Ok(ExitCode::from(crate::cli::EXIT_USAGE));
                }
            };
            match &replicas {
                None => mcp_tools::serve::serve_http(NAME, listener, policy, server.clone()).await,
                Some(replicas) => {
                    let drain = std::time::Duration::from_secs(args.drain_secs);
                    store::http::serve(NAME, listener, policy, server.clone(), replicas, drain)
                        .await
                }
            }
        }
        None => mcp_tools::serve::serve_stdio(server.clone()).await,
    };
    server.shutdown().await;
    served.map(|()| ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    #[tokio::test]
    async fn schema_file_matches_the_code() {
        let document = super::schema_document().await.unwrap();
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../schemas/run_task.json");
        mcp_tools::schema::check_schema_file(&path, &document).unwrap();
    }
}
