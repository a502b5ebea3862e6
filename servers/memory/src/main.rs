//! `nanohermes-memory`: the memory MCP server over stdio or streamable HTTP,
//! and the user's commands over the same database (`list`, `global`,
//! `local`, `forget`), which no tool offers the model.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use nanohermes_memory::{MemoryStore, default_db_path};

/// MCP server: long-term memory in SQLite with full-text search. The
/// server's project is its `--root` (default: the current directory): its
/// tools see that project's memories and the ones you marked global.
#[derive(Parser)]
#[command(name = "nanohermes-memory", version)]
struct Cli {
    #[command(flatten)]
    serve: mcp_tools::ServeArgs,
    /// Memory database file [default: ~/.nanohermes/memory.db; the agent
    /// uses $NANOHERMES_HOME/memory.db].
    #[arg(long, value_name = "PATH", env = "NANOHERMES_MEMORY_DB", global = true)]
    db: Option<PathBuf>,
    #[command(subcommand)]
    command: Option<Command>,
}

/// Your own commands: the model cannot run them through any tool.
#[derive(Subcommand)]
enum Command {
    /// Every memory of every project, newest first, with its project and
    /// whether it is global.
    List {
        /// At most this many.
        #[arg(long, default_value_t = 100)]
        limit: usize,
    },
    /// Marks memories global: recalled and searchable in every project.
    Global {
        /// Ids from `list`.
        #[arg(required = true)]
        ids: Vec<i64>,
    },
    /// Makes global memories belong to their own project only again.
    Local {
        /// Ids from `list`.
        #[arg(required = true)]
        ids: Vec<i64>,
    },
    /// Deletes memories, whatever their project.
    Forget {
        /// Ids from `list`.
        #[arg(required = true)]
        ids: Vec<i64>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let Some(db) = cli.db.or_else(default_db_path) else {
        eprintln!("nanohermes-memory: no home directory; pass --db PATH");
        return ExitCode::from(2);
    };
    if let Some(command) = cli.command {
        return match user_command(&db, command) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("nanohermes-memory: {e}");
                ExitCode::from(1)
            }
        };
    }
    // The file opens while the handshake is answered; the first tool call
    // waits for it (or reports why it could not be opened).
    match cli.serve.context() {
        Ok(ctx) => {
            let store = if cli.serve.print_schema {
                MemoryStore::open_on_first_use(&db)
            } else {
                MemoryStore::open_in_background(&db, "nanohermes-memory")
            };
            mcp_tools::serve::run(
                "memory",
                &cli.serve,
                nanohermes_memory::MemoryServer::new(ctx, store),
            )
        }
        Err(e) => {
            eprintln!("nanohermes-memory: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// Runs one of the user's commands, printing one line per memory.
#[allow(clippy::print_stdout)] // the command's output is its answer
fn user_command(db: &std::path::Path, command: Command) -> Result<(), String> {
    let store = MemoryStore::open(db).map_err(|e| e.to_string())?;
    match command {
        Command::List { limit } => {
            for owned in store.list_all(limit).map_err(|e| e.to_string())? {
                let scope = match (owned.global, owned.project.as_str()) {
                    (true, "") => "global (saved before projects)".to_string(),
                    (true, p) => format!("global (from {p})"),
                    (false, "") => "no project (saved before projects; never recalled)".to_string(),
                    (false, p) => p.to_string(),
                };
                let m = owned.memory;
                println!("[{}] {}: {} — {scope}", m.id, m.kind, m.text);
            }
        }
        Command::Global { ids } => {
            for id in ids {
                let m = store.set_global(id, true).map_err(|e| e.to_string())?;
                println!("[{}] is now global: {}", m.id, m.text);
            }
        }
        Command::Local { ids } => {
            for id in ids {
                let m = store.set_global(id, false).map_err(|e| e.to_string())?;
                println!("[{}] is now only in its own project: {}", m.id, m.text);
            }
        }
        Command::Forget { ids } => {
            for id in ids {
                let m = store.forget_any(id).map_err(|e| e.to_string())?;
                println!("forgot [{}] {}", m.id, m.text);
            }
        }
    }
    Ok(())
}
