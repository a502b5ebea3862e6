//! `nanohermes-todo`: the todo MCP server over stdio (or `--http`).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use nanohermes_todo::{Store, TodoServer};

/// A todo list for the agent's current task, over MCP.
#[derive(Parser)]
#[command(name = "nanohermes-todo", version)]
struct Cli {
    #[command(flatten)]
    serve: mcp_tools::ServeArgs,
    /// Keep the list in this JSON file: loaded at start, rewritten atomically
    /// on every todo_write. Without it the list lives in memory only.
    #[arg(long, value_name = "PATH")]
    file: Option<PathBuf>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let store = match &cli.file {
        Some(path) => Store::open(path),
        None => Ok(Store::in_memory()),
    };
    let store = match store {
        Ok(store) => store,
        Err(e) => {
            eprintln!("nanohermes-todo: {e}");
            return ExitCode::from(2);
        }
    };
    mcp_tools::serve::run("nanohermes-todo", &cli.serve, TodoServer::new(store))
}
