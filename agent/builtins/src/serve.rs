//! `nanohermes builtin NAME [FLAGS]`: the agent binary serving one of its
//! built-ins over stdio (or `--http`), so `run = "process"` needs no
//! separate server binary and the child runs exactly the code the
//! in-process server runs.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

use crate::{Builtin, BuiltinOptions, memory_db_path};

/// The flags of `nanohermes builtin NAME`: every server's usual ones.
#[derive(Debug, Parser)]
#[command(
    name = "nanohermes builtin",
    about = "Serve one built-in MCP server (files, grep, shell, git, memory, todo, web)"
)]
struct BuiltinCli {
    /// The built-in: files, grep, shell, git, memory, todo or web.
    name: String,
    #[command(flatten)]
    serve: mcp_tools::ServeArgs,
    /// web: let web_fetch reach loopback, private and link-local addresses.
    #[arg(long)]
    allow_private_network: bool,
    /// web: fetch only the domains of --allow-fetch-domain.
    #[arg(long)]
    fetch_allowlist: bool,
    /// web: a domain web_fetch may reach with --fetch-allowlist. Repeatable.
    #[arg(long, value_name = "DOMAIN", requires = "fetch_allowlist")]
    allow_fetch_domain: Vec<String>,
    /// memory: the database file [default: $NANOHERMES_HOME/memory.db].
    #[arg(long, value_name = "PATH")]
    db: Option<PathBuf>,
    /// shell, git: the sandbox of commands and hooks.
    #[command(flatten)]
    sandbox: mcp_tools::spawn::SandboxArgs,
}

/// Serves built-in `name` with `args` (the flags after the name, as the
/// server binaries take them: `--root`, `--http`, `--auth-token-env`,
/// `--max-output`, ...). Exit code 2 for a usage or startup error.
pub fn serve_builtin_main(name: &str, args: &[OsString]) -> ExitCode {
    let argv = std::iter::once(OsString::from("nanohermes-builtin"))
        .chain(std::iter::once(OsString::from(name)))
        .chain(args.iter().cloned());
    let cli = match BuiltinCli::try_parse_from(argv) {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(2);
        }
    };
    let Some(builtin) = Builtin::from_name(&cli.name) else {
        eprintln!(
            "nanohermes builtin: no built-in named {:?}; use one of files, grep, shell, git, memory, todo, web",
            cli.name
        );
        return ExitCode::from(2);
    };
    let ctx = match cli.serve.context() {
        Ok(ctx) => ctx,
        Err(e) => {
            eprintln!("nanohermes builtin {name}: {e:#}");
            return ExitCode::from(2);
        }
    };
    let web_allowed_domains = match cli
        .fetch_allowlist
        .then(|| mcp_tools::net::DomainList::parse(&cli.allow_fetch_domain))
        .transpose()
    {
        Ok(list) => list,
        Err(e) => {
            eprintln!("nanohermes builtin {name}: --allow-fetch-domain: {e}");
            return ExitCode::from(2);
        }
    };
    let options = BuiltinOptions {
        allow_private_network: cli.allow_private_network,
        web_allowed_domains,
        sandbox: cli.sandbox.policy(),
    };
    let label = builtin.name();
    let serve = &cli.serve;
    let startup = |e: anyhow::Error| {
        eprintln!("nanohermes builtin {label}: {e:#}");
        ExitCode::from(2)
    };
    match builtin {
        Builtin::Files => {
            mcp_tools::serve::run(label, serve, nanohermes_files::FilesServer::new(ctx))
        }
        Builtin::Grep => mcp_tools::serve::run(label, serve, nanohermes_grep::GrepServer::new(ctx)),
        Builtin::Shell => {
            nanohermes_shell::signals::survive_interrupts_when_piped();
            let server = nanohermes_shell::ShellServer::with_sandbox(ctx, options.sandbox);
            if let Some(warning) = server.sandbox().startup_warning() {
                eprintln!("nanohermes builtin {label}: {warning}");
            }
            let code = mcp_tools::serve::run(label, serve, server);
            // Whatever is still running dies with the server.
            mcp_tools::spawn::kill_all_spawned();
            code
        }
        Builtin::Git => mcp_tools::serve::run(
            label,
            serve,
            nanohermes_git::GitServer::with_options(ctx, PathBuf::from("git"), options.sandbox),
        ),
        Builtin::Memory => {
            let Some(db) = cli.db.or_else(memory_db_path) else {
                return startup(anyhow::anyhow!(
                    "no home directory; pass --db PATH or set NANOHERMES_HOME"
                ));
            };
            // Opened while the handshake is answered (the in-process
            // server opens it before connecting).
            let store = if serve.print_schema {
                nanohermes_memory::MemoryStore::open_on_first_use(&db)
            } else {
                nanohermes_memory::MemoryStore::open_in_background(&db, "nanohermes builtin memory")
            };
            mcp_tools::serve::run(
                label,
                serve,
                nanohermes_memory::MemoryServer::new(ctx, store),
            )
        }
        Builtin::Todo => mcp_tools::serve::run(
            label,
            serve,
            nanohermes_todo::TodoServer::new(nanohermes_todo::Store::in_memory()),
        ),
        Builtin::Web => match nanohermes_web::WebServer::with_config(ctx, options.fetch_config()) {
            Ok(server) => mcp_tools::serve::run(label, serve, server),
            Err(e) => startup(e.into()),
        },
    }
}
