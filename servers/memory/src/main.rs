//! `nanohermes-memory`: the memory MCP server over stdio or streamable HTTP.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use nanohermes_memory::{MemoryServer, MemoryStore, default_db_path};

/// MCP server: long-term memory in SQLite with full-text search.
#[derive(Parser)]
#[command(name = "nanohermes-memory", version)]
struct Cli {
    #[command(flatten)]
    serve: mcp_tools::ServeArgs,
    /// Memory database file [default: ~/.nanohermes/memory.db].
    #[arg(long, value_name = "PATH", env = "NANOHERMES_MEMORY_DB")]
    db: Option<PathBuf>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let Some(db) = cli.db.or_else(default_db_path) else {
        eprintln!("nanohermes-memory: no home directory; pass --db PATH");
        return ExitCode::from(2);
    };
    // The file opens while the handshake is answered; the first tool call
    // waits for it (or reports why it could not be opened).
    match cli.serve.context() {
        Ok(ctx) => {
            let store = if cli.serve.print_schema {
                MemoryStore::open_on_first_use(&db)
            } else {
                MemoryStore::open_in_background(&db, "nanohermes-memory")
            };
            mcp_tools::serve::run("memory", &cli.serve, MemoryServer::new(ctx, store))
        }
        Err(e) => {
            eprintln!("nanohermes-memory: {e:#}");
            ExitCode::from(2)
        }
    }
}
